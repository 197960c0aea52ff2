/* SPDX-License-Identifier: MIT */
/*
 * The probe spool: a directory where applications run with the probe leave one "rtune-probe.<pid>.json" each
 * (RTUNE_PROBE_OUT=<spool>/rtune-probe.%p.json, docs/agent.md). The agent imports a file once its process is gone
 * (the probe rewrites its file in place until exit), stores its histograms as the application's, removes it, and
 * re-tunes that application. A file that cannot be parsed once its writer is gone is renamed "*.bad" and logged.
 */
#ifndef RT_AGENT_SPOOL_H
#define RT_AGENT_SPOOL_H

#include "rt_probe_reader.h"
#include "rt_store.h"

#include <stddef.h>

#define RT_AGENT_MAX_APPS 32

/* What one pass over the spool did. */
struct rt_agent_spool_result {
	char apps[RT_AGENT_MAX_APPS][64]; /* applications whose histograms were imported (distinct) */
	size_t n_apps;
	size_t imported, pending, bad; /* files imported, left for later (writer alive or too new), renamed .bad */
};

/*
 * Stores every (opcode, QP type) class of sum as a histogram of app on node (what `rtune probe` stores), then the
 * adaptive inline controller of each QP that had one (apply mode; rt_store_put_inline_ctl, all in one transaction),
 * stamped with the histograms' time. *stored (may be NULL) receives the number of histograms. 0 or an errno + err
 * (the classes before stay stored).
 */
int rt_agent_store_probe_summary(struct rt_store *st, const struct rt_node_info *node, const char *app,
				 const struct rt_probe_summary *sum, int *stored, struct rt_error *err);

/* The application name of a probe file: the basename of its exe, cut to 63 bytes ("unknown" when empty). */
void rt_agent_app_name(const struct rt_probe_summary *sum, char out[64]);

/*
 * Imports the finished files of dir into st (see above). now_s: the time, for the "too new" test (a file modified in
 * the last 2 s is left). Returns 0 (res filled) or an errno + err when dir cannot be read; a bad file is not an error.
 */
int rt_agent_spool_import(struct rt_store *st, const char *dir, int64_t now_s, struct rt_agent_spool_result *res,
			  struct rt_error *err);

#endif
