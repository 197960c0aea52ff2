// SPDX-License-Identifier: MIT
/*
 * Human-readable rendering of the tuner's decisions: a few aligned lines per (opcode, QP type) and its reasons, for
 * `rtune tune` and the demo.
 */
#include "tuner_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static void one(FILE *f, const struct rt_tuner_decision *d)
{
	fprintf(f, "%s/%s: confidence %s\n", rt_opcode_name(d->op), rt_qp_type_name(d->qpt),
		rt_confidence_name(d->confidence));
	if (d->inline_threshold)
		fprintf(f, "  inline_threshold  %u B (max_inline_data %u; crossover %u B; confidence %s)\n",
			d->inline_threshold, d->max_inline_data, d->crossover_bytes,
			rt_confidence_name(d->inline_confidence));
	else
		fprintf(f, "  inline_threshold  0 (never inline; max_inline_data 0; confidence %s)\n",
			rt_confidence_name(d->inline_confidence));
	if (d->signal_verdict == RT_SIGNAL_INDIFFERENT)
		fprintf(f,
			"  signal_interval   %u (N does not matter here: the stated default; t_cqe %.1f ns; confidence %s)\n",
			d->signal_interval, d->t_cqe_ns, rt_confidence_name(d->signal_confidence));
	else if (d->signal_verdict == RT_SIGNAL_KNEE)
		fprintf(f,
			"  signal_interval   %u (signal 1 WR in %u; t_cqe %.1f ns vs t_post %.1f ns; confidence %s)\n",
			d->signal_interval, d->signal_interval, d->t_cqe_ns, d->t_post_ns,
			rt_confidence_name(d->signal_confidence));
	else
		fprintf(f, "  signal_interval   %u (not measured: signal every WR; confidence %s)\n",
			d->signal_interval, rt_confidence_name(d->signal_confidence));
	fprintf(f, "  sq_depth          %u, send cq_depth %u\n", d->sq_depth, d->cq_depth);
	if (d->cq_mod == RT_CQMOD_ON)
		fprintf(f, "  cq_moderation     count %u, period %u us\n", d->cq_mod_count, d->cq_mod_period_us);
	else
		fprintf(f, "  cq_moderation     %s\n",
			d->cq_mod == RT_CQMOD_OFF ? "off (no gain)" : rt_cq_mod_advice_name(d->cq_mod));
	if (d->inline_threshold)
		fprintf(f, "  expected_gain     %.1f ns/message (%.2f %%)%s\n", d->gain_ns_per_msg, d->gain_pct,
			d->gain_from_histogram ? " for the app's histogram" : " for messages up to the threshold");
	if (d->budget_needed_s > 0)
		fprintf(f, "  more data needed  ~%.1f s of measuring\n", d->budget_needed_s);
	fprintf(f, "  reasons:\n");
	for (size_t i = 0; i < d->n_reasons; i++)
		fprintf(f, "    %s [%s] %s\n", d->reasons[i].severity == RT_SEV_WARN ? "!" : "-",
			rt_reason_code_name(d->reasons[i].code), d->reasons[i].text);
}

int rt_tuner_format_text(const struct rt_tuner_result *res, char **text, struct rt_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!res || !text)
		return rt_error_set(err, EINVAL, "format: NULL argument");
	*text = NULL;
	f = open_memstream(&buf, &len);
	if (!f)
		return rt_error_set(err, ENOMEM, "format: out of memory");
	for (size_t i = 0; i < res->n; i++) {
		if (i)
			fputc('\n', f);
		one(f, &res->d[i]);
	}
	if (fclose(f) || !buf) {
		free(buf);
		return rt_error_set(err, ENOMEM, "format: out of memory");
	}
	*text = buf;
	return 0;
}
