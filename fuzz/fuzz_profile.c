// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for librtune's JSON profile loader: rt_profile_parse() on arbitrary bytes (profiles come from other
 * nodes and are not trusted). A document that loads is walked completely (every entry, every getter, selection by
 * name and GUID, the inline decision at its boundaries) so that what validation lets through is also exercised.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <rtune/profile.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rt_profile *p = NULL;
	struct rt_error err;
	volatile uint64_t sink = 0;

	if (rt_profile_parse((const char *)data, size, &p, &err)) {
		/* the error text must be a terminated line */
		sink += strlen(err.text);
		return 0;
	}
	sink += strlen(rt_profile_hostname(p)) + strlen(rt_profile_hw_signature(p)) +
		strlen(rt_profile_rtune_version(p)) + (uint64_t)rt_profile_schema_minor(p);
	for (size_t i = 0; i < rt_profile_entry_count(p); i++) {
		const struct rt_profile_entry *e = rt_profile_entry_at(p, i);
		const struct rt_profile_entry *s;

		sink += rt_profile_inline_threshold(e) + rt_profile_max_inline_data(e) + rt_profile_signal_interval(e) +
			rt_profile_sq_depth(e) + rt_profile_cq_depth(e) + strlen(rt_profile_opcode_name(e->opcode)) +
			strlen(rt_profile_qp_type_name(e->qp_type)) +
			strlen(rt_profile_confidence_name(rt_profile_confidence(e))) +
			strnlen(e->device, sizeof(e->device)) + strnlen(e->cpus, sizeof(e->cpus)) + e->n_reasons;
		for (unsigned r = 0; r < e->n_reasons && r < RT_PROFILE_MAX_REASONS; r++)
			sink += strnlen(e->reasons[r].text, sizeof(e->reasons[r].text));
		sink += rt_should_inline(e, 0) + rt_should_inline(e, e->inline_threshold) +
			rt_should_inline(e, e->inline_threshold + 1u) + rt_should_inline(e, UINT32_MAX);
		s = rt_profile_select(p, e->device, e->port, e->opcode, e->qp_type);
		sink += s != NULL;
		if (e->guid[0])
			sink += rt_profile_select(p, e->guid, e->port, e->opcode, e->qp_type) != NULL;
	}
	sink += rt_profile_entry_at(p, rt_profile_entry_count(p)) == NULL;
	rt_profile_free(p);
	(void)sink;
	return 0;
}
