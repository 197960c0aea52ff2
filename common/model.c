// SPDX-License-Identifier: MIT
/*
 * Names of the data model's enums, as they appear in every public format, and the run release helper.
 */
#include "rt_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[RT_OP__COUNT] = { "send", "write" };
static const char *const qpt_names[RT_QPT__COUNT] = { "rc", "ud", "srd" };
static const char *const kind_names[RT_LAT__COUNT] = { "pingpong", "post_cqe" };
static const char *const status_names[] = { "running", "complete", "interrupted", "failed" };

static const char *name_of(const char *const *names, unsigned n, unsigned v)
{
	return v < n ? names[v] : "unknown";
}

static int parse_in(const char *const *names, unsigned n, const char *s, unsigned *out)
{
	for (unsigned i = 0; s && i < n; i++) {
		if (strcmp(names[i], s) == 0) {
			*out = i;
			return 0;
		}
	}
	return EINVAL;
}

#define N_OF(a) (unsigned)(sizeof(a) / sizeof((a)[0]))

const char *rt_opcode_name(enum rt_opcode op)
{
	return name_of(op_names, N_OF(op_names), (unsigned)op);
}
const char *rt_qp_type_name(enum rt_qp_type qpt)
{
	return name_of(qpt_names, N_OF(qpt_names), (unsigned)qpt);
}
const char *rt_lat_kind_name(enum rt_lat_kind kind)
{
	return name_of(kind_names, N_OF(kind_names), (unsigned)kind);
}
const char *rt_run_status_name(enum rt_run_status st)
{
	return name_of(status_names, N_OF(status_names), (unsigned)st);
}

const char *rt_rate_band_name(enum rt_rate_band b)
{
	static const char *const band_names[] = { "small", "large", "post_list", "concurrency" };

	return name_of(band_names, N_OF(band_names), (unsigned)b);
}

int rt_opcode_parse(const char *s, enum rt_opcode *out)
{
	unsigned v;
	int rc = parse_in(op_names, N_OF(op_names), s, &v);

	if (!rc)
		*out = (enum rt_opcode)v;
	return rc;
}

int rt_qp_type_parse(const char *s, enum rt_qp_type *out)
{
	unsigned v;
	int rc = parse_in(qpt_names, N_OF(qpt_names), s, &v);

	if (!rc)
		*out = (enum rt_qp_type)v;
	return rc;
}

int rt_lat_kind_parse(const char *s, enum rt_lat_kind *out)
{
	unsigned v;
	int rc = parse_in(kind_names, N_OF(kind_names), s, &v);

	if (!rc)
		*out = (enum rt_lat_kind)v;
	return rc;
}

int rt_run_status_parse(const char *s, enum rt_run_status *out)
{
	unsigned v;
	int rc = parse_in(status_names, N_OF(status_names), s, &v);

	if (!rc)
		*out = (enum rt_run_status)v;
	return rc;
}

void rt_run_release(struct rt_run *run)
{
	if (!run)
		return;
	for (size_t i = 0; i < run->n_lat; i++)
		free(run->lat[i].samples_ns);
	free(run->lat);
	free(run->rate);
	free(run->band_rate);
	run->lat = NULL;
	run->rate = NULL;
	run->band_rate = NULL;
	run->n_lat = 0;
	run->n_rate = 0;
	run->n_band_rate = 0;
}
