// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the probe-output reader (rtune_probe_reader): rt_probe_parse() on arbitrary bytes — probe files
 * are written by whatever process ran under the probe, so `rtune probe` and the store's import must survive anything.
 * A document that parses is merged into a second summary and folded into the store's (opcode, QP type) classes.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rt_probe_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rt_probe_summary *s = NULL, *t = NULL;
	struct rt_probe_op_summary cls;
	struct rt_error err;
	volatile uint64_t sink = 0;
	uint64_t sq_full = 0;

	if (rt_probe_parse((const char *)data, size, &s, &err)) {
		sink += strlen(err.text);
		return 0;
	}
	for (size_t i = 0; i < s->n_qps; i++)
		sink += strnlen(s->qps[i].device, sizeof(s->qps[i].device)) + s->qps[i].op[RT_PROBE_OP_SEND].wrs +
			s->qps[i].ctl.threshold_bytes +
			(s->qps[i].ctl.n_moves ? s->qps[i].ctl.moves[s->qps[i].ctl.n_moves - 1].to_bytes : 0);
	sink += rt_probe_summary_class(s, RT_OP_SEND, RT_QPT_RC, &cls, &sq_full);
	sink += rt_probe_summary_class(s, RT_OP_WRITE, RT_QPT_UD, &cls, NULL);
	/* merge: a second parse of the same bytes (what `rtune probe` does for an app's several processes) */
	if (rt_probe_parse((const char *)data, size, &t, &err) == 0) {
		if (rt_probe_summary_merge(s, t) == 0)
			sink += rt_probe_summary_class(s, RT_OP_SEND, RT_QPT_RC, &cls, &sq_full);
		rt_probe_summary_free(t);
	}
	rt_probe_summary_free(s);
	(void)sink;
	return 0;
}
