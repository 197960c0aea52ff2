// SPDX-License-Identifier: MIT
/*
 * The profile's load bands and skipped measurements (schema 1.4: each entry's "bands", the document's "skipped") in
 * the outputs that are not the profile itself: one human line per band and per skip (`rtune show`, comments of
 * `rtune export --format env`), the RTUNE_* variables per band of the env output, and the Prometheus families of both
 * `rtune export --format prometheus` and the agent's textfile (agent/publish_prom.c), so the two files carry the same
 * series. Everything reads the JSON objects the profile document holds, and names a band by its "kind" string, so a
 * band kind this file does not know (a newer calibrate's) is still shown, exported and counted.
 */
#include "rt_store_json.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The integer member key of o, or 0 when absent or not an integer. */
static json_int_t int_of(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* The string member key of o, or "" when absent, null or not a string. */
static const char *str_of(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

void rt_store_band_line(const json_t *band, char *buf, size_t len)
{
	const char *kind = str_of(band, "kind"), *verdict = str_of(band, "verdict"), *conf = str_of(band, "confidence");
	json_int_t lo = int_of(band, "msg_bytes_lo"), hi = int_of(band, "msg_bytes_hi"), k = int_of(band, "post_list");
	char sizes[48], what[96], tail[80] = "";
	size_t n;

	if (lo == hi)
		snprintf(sizes, sizeof(sizes), "%" JSON_INTEGER_FORMAT " B", lo);
	else
		snprintf(sizes, sizeof(sizes), "%" JSON_INTEGER_FORMAT "-%" JSON_INTEGER_FORMAT " B", lo, hi);
	if (!strcmp(kind, "large"))
		snprintf(what, sizeof(what), "large messages %s", sizes);
	else if (!strcmp(kind, "post_list"))
		snprintf(what, sizeof(what), "post lists of %" JSON_INTEGER_FORMAT " WRs (%s)", k, sizes);
	else if (!strcmp(kind, "concurrency"))
		snprintf(what, sizeof(what),
			 "concurrency %" JSON_INTEGER_FORMAT " QPs x %" JSON_INTEGER_FORMAT " threads (%s)",
			 int_of(band, "qps"), int_of(band, "threads"), sizes);
	else if (k > 1)
		snprintf(what, sizeof(what), "%s %s, post lists of %" JSON_INTEGER_FORMAT, kind[0] ? kind : "band",
			 sizes, k);
	else
		snprintf(what, sizeof(what), "%s %s", kind[0] ? kind : "band", sizes);
	for (n = 0; what[n]; n++) /* "some_kind" reads as words */
		if (what[n] == '_')
			what[n] = ' ';
	if (verdict[0] || conf[0])
		snprintf(tail, sizeof(tail), " (%s%s%s)", verdict, verdict[0] && conf[0] ? ", " : "", conf);
	snprintf(buf, len, "%s: N = %" JSON_INTEGER_FORMAT "%s", what, int_of(band, "signal_interval"), tail);
}

void rt_store_skip_line(const json_t *skip, char *buf, size_t len)
{
	snprintf(buf, len, "%s port %" JSON_INTEGER_FORMAT ": %s: %s", str_of(skip, "device"), int_of(skip, "port"),
		 str_of(skip, "what"), str_of(skip, "reason"));
}

/* Upper-case letters, digits and '_' for every other character: part of a shell variable name. */
static void env_word(const char *s, char *out, size_t len)
{
	size_t i = 0;

	for (; s[i] && i + 1 < len; i++)
		out[i] = isalnum((unsigned char)s[i]) ? (char)toupper((unsigned char)s[i]) : '_';
	out[i] = '\0';
}

void rt_store_env_bands(struct rt_buf *b, const json_t *bands, const char *sfx)
{
	for (size_t i = 0; i < json_array_size(bands); i++) {
		const json_t *o = json_array_get(bands, i);
		json_int_t k = int_of(o, "post_list");
		char line[256], kind[40], list[24] = "";

		rt_store_band_line(o, line, sizeof(line));
		env_word(str_of(o, "kind"), kind, sizeof(kind));
		if (!kind[0])
			continue;
		/* a post-list band is named by its list length (one device may have bands of 8 and of 64 WRs), a
		 * concurrency band by its QPs and threads */
		if (k > 1)
			snprintf(list, sizeof(list), "%" JSON_INTEGER_FORMAT "_", k);
		else if (int_of(o, "qps") > 0)
			snprintf(list, sizeof(list), "%" JSON_INTEGER_FORMAT "X%" JSON_INTEGER_FORMAT "_",
				 int_of(o, "qps"), int_of(o, "threads"));
		rt_buf_printf(b, "# %s\n", line);
		rt_buf_printf(b, "export RTUNE_SIGNAL_INTERVAL_%s_%s%s=%" JSON_INTEGER_FORMAT "\n", kind, list, sfx,
			      int_of(o, "signal_interval"));
		rt_buf_printf(b, "export RTUNE_MSG_BYTES_%s_%s%s=%" JSON_INTEGER_FORMAT "-%" JSON_INTEGER_FORMAT "\n",
			      kind, list, sfx, int_of(o, "msg_bytes_lo"), int_of(o, "msg_bytes_hi"));
	}
}

/* ---- Prometheus ---------------------------------------------------------------------------------------------------- */

void rt_store_prom_label(struct rt_buf *b, const char *name, const char *v, bool first)
{
	rt_buf_printf(b, "%s%s=\"", first ? "" : ",", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			rt_buf_printf(b, "\\%c", *v);
		else if (*v == '\n')
			rt_buf_puts(b, "\\n");
		else
			rt_buf_printf(b, "%c", *v);
	}
	rt_buf_puts(b, "\"");
}

static void label_int(struct rt_buf *b, const char *name, json_int_t v)
{
	rt_buf_printf(b, ",%s=\"%" JSON_INTEGER_FORMAT "\"", name, v);
}

/* [node,]device,port,opcode,qp_type,app of entry e, then band,post_list,qps,threads of band o (1 where the kind has
 * none) */
static void band_labels(struct rt_buf *b, const char *node, const json_t *e, const json_t *o)
{
	if (node)
		rt_store_prom_label(b, "node", node, true);
	rt_store_prom_label(b, "device", str_of(e, "device"), !node);
	label_int(b, "port", int_of(e, "port"));
	rt_store_prom_label(b, "opcode", str_of(e, "opcode"), false);
	rt_store_prom_label(b, "qp_type", str_of(e, "qp_type"), false);
	rt_store_prom_label(b, "app", str_of(e, "app"), false);
	rt_store_prom_label(b, "band", str_of(o, "kind"), false);
	label_int(b, "post_list", int_of(o, "post_list") > 0 ? int_of(o, "post_list") : 1);
	label_int(b, "qps", int_of(o, "qps") > 0 ? int_of(o, "qps") : 1);
	label_int(b, "threads", int_of(o, "threads") > 0 ? int_of(o, "threads") : 1);
}

enum band_family { F_SIGNAL, F_CONF, F_INFO, F__COUNT };

static const struct {
	const char *name, *help;
} band_families[F__COUNT] = {
	[F_SIGNAL] = { "rtune_band_signal_interval",
		       "One IBV_SEND_SIGNALED work request every this many for the load band (large messages, post "
		       "lists, ...) of the entry; rtune_signal_interval holds for small single-WR sends." },
	[F_CONF] = { "rtune_band_confidence", "Confidence of the band's signal interval: 0 low, 1 medium, 2 high." },
	[F_INFO] = { "rtune_band_info",
		     "A load band of the entry (value 1): the message sizes it was measured at and the tuner's verdict." },
};

static void band_series(struct rt_buf *b, const char *node, const json_t *e, const json_t *o, enum band_family f)
{
	const char *conf = str_of(o, "confidence");
	int c = !strcmp(conf, "low") ? 0 : !strcmp(conf, "medium") ? 1 : !strcmp(conf, "high") ? 2 : -1;

	if (f == F_CONF && c < 0) /* no confidence in the document: no sample rather than a made-up one */
		return;
	rt_buf_printf(b, "%s{", band_families[f].name);
	band_labels(b, node, e, o);
	if (f == F_INFO) {
		label_int(b, "msg_bytes_lo", int_of(o, "msg_bytes_lo"));
		label_int(b, "msg_bytes_hi", int_of(o, "msg_bytes_hi"));
		rt_store_prom_label(b, "verdict", str_of(o, "verdict"), false);
	}
	rt_buf_printf(b, "} %" JSON_INTEGER_FORMAT "\n",
		      f == F_SIGNAL ? int_of(o, "signal_interval")
		      : f == F_CONF ? (json_int_t)c
				    : 1);
}

void rt_store_prom_bands(struct rt_buf *b, const json_t *doc, const char *node)
{
	const json_t *entries = json_object_get(doc, "entries"), *skipped = json_object_get(doc, "skipped");

	for (int f = 0; f < F__COUNT; f++) {
		rt_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", band_families[f].name, band_families[f].help,
			      band_families[f].name);
		for (size_t i = 0; i < json_array_size(entries); i++) {
			const json_t *e = json_array_get(entries, i), *bands = json_object_get(e, "bands");

			for (size_t k = 0; k < json_array_size(bands); k++)
				band_series(b, node, e, json_array_get(bands, k), (enum band_family)f);
		}
	}
	rt_buf_puts(b,
		    "# HELP rtune_skipped_measurement_info A measurement calibrate skipped on the device port because "
		    "the device refused it (value 1; the labels say what and why).\n"
		    "# TYPE rtune_skipped_measurement_info gauge\n");
	for (size_t i = 0; i < json_array_size(skipped); i++) {
		const json_t *o = json_array_get(skipped, i);

		rt_buf_puts(b, "rtune_skipped_measurement_info{");
		if (node)
			rt_store_prom_label(b, "node", node, true);
		rt_store_prom_label(b, "device", str_of(o, "device"), !node);
		label_int(b, "port", int_of(o, "port"));
		rt_store_prom_label(b, "what", str_of(o, "what"), false);
		rt_store_prom_label(b, "kind", str_of(o, "kind"), false);
		rt_store_prom_label(b, "opcode", str_of(o, "opcode"), false);
		rt_store_prom_label(b, "qp_type", str_of(o, "qp_type"), false);
		rt_store_prom_label(b, "reason", str_of(o, "reason"), false);
		rt_store_prom_label(b, "run_id", str_of(o, "run_id"), false);
		rt_buf_puts(b, "} 1\n");
	}
}
