/* SPDX-License-Identifier: MIT */
/*
 * What the publishing targets (publish_prom.c, publish_nfd.c, publish_stacks.c) share beyond agent/publish.h: writing
 * one rendered file the way every target must (atomically through common/rt_out.h, nothing written on a dry run),
 * choosing the entry a process-wide setting is taken from, and the host facts the ucx.conf section is filtered by.
 * A separate header so agent/publish.h stays the agent's contract, unchanged.
 */
#ifndef RT_AGENT_PUBLISH_UTIL_H
#define RT_AGENT_PUBLISH_UTIL_H

#include "publish.h"

#include <rt_buf.h>

/*
 * Writes the rendered buffer b to path atomically (mode 0644), or, with dry_run, checks only that b was rendered. A
 * buffer that ran out of memory is refused (ENOMEM, nothing written). Returns 0 or an errno with err naming path; on
 * failure the file at path is as it was.
 */
int rt_publish_write(const char *path, const struct rt_buf *b, bool dry_run, struct rt_error *err);

/*
 * The generic (app "") RC entry of the given opcode a process-wide stack setting is taken from: the first in document
 * order. Returns NULL when the publication has none.
 */
const struct rt_agent_decision *rt_publish_pick_rc(const struct rt_agent_publication *pub, enum rt_profile_opcode op);

/* True when d's value is one a stack should be configured with: pinned, or measured with at least medium confidence
 * and a verdict that is an answer (not "indifferent", not "not_measured"). why gets one line when it is not. */
bool rt_publish_inline_usable(const struct rt_agent_decision *d, char *why, size_t why_len);
bool rt_publish_signal_usable(const struct rt_agent_decision *d, char *why, size_t why_len);

/* Renders the Prometheus textfile of pub into b (publish_prom.c); an allocation failure sets b->oom. */
void rt_publish_prom_render(const struct rt_agent_publication *pub, struct rt_buf *b);

/*
 * Renders the NFD feature file of pub into b (publish_nfd.c) with labels under prefix (NULL: RT_PUBLISH_NFD_PREFIX)
 * expiring expiry_s after pub->generated_at (0: RT_PUBLISH_NFD_EXPIRY_S). Returns 0, or EFBIG when the file would
 * pass NFD's 64 KiB limit (NFD would ignore all of it), EINVAL for a prefix Kubernetes would refuse; err says which.
 */
#define RT_PUBLISH_NFD_PREFIX "rtune.feature.node.kubernetes.io"
#define RT_PUBLISH_NFD_EXPIRY_S 86400u
#define RT_PUBLISH_NFD_MAX_BYTES 65536u /* MaxFeatureFileSize in NFD's source/local/local.go */
int rt_publish_nfd_render(const struct rt_agent_publication *pub, const char *prefix, uint32_t expiry_s,
			  struct rt_buf *b, struct rt_error *err);

/* The host facts UCX filters ucx.conf sections by that the publication does not carry. */
struct rt_publish_host {
	/* /sys/devices/virtual/dmi/id/product_name, trimmed ("" unknown): UCX's "Product name" filter value
	 * (ucs_sys_dmi_product_name() in UCX src/ucs/sys/sys.c reads the same file) */
	char dmi_product_name[128];
};

/*
 * Reads the host facts under root ("" or NULL = "/": tests pass a fake tree). A missing file leaves its field "".
 * Never fails.
 */
void rt_publish_host_read(const char *root, struct rt_publish_host *h);

/* The markers around what rtune writes into a file that may hold an operator's lines too (ucx.conf, nccl.conf). */
#define RT_PUBLISH_BEGIN \
	"# >>> rtune agent: generated, rewritten on every publication; edits between the markers are lost"
#define RT_PUBLISH_END "# <<< rtune agent"

/*
 * Appends to out the lines of the existing file text (len bytes, may be NULL) outside rtune's marked block, then
 * block (which must start with RT_PUBLISH_BEGIN and end with RT_PUBLISH_END and a newline): rtune's block is always
 * the file's last. Returns 0, or EINVAL when text has a begin marker without an end marker after it (an edited
 * file: nothing is guessed, the caller writes nothing).
 */
int rt_publish_splice(const char *text, size_t len, const char *block, struct rt_buf *out);

/* Renders the ucx.conf, libfabric and NCCL files (publish_stacks.c). existing: the file's current text or NULL. */
int rt_publish_ucx_render(const struct rt_agent_publication *pub, const struct rt_publish_host *h, const char *existing,
			  size_t existing_len, struct rt_buf *out);
void rt_publish_libfabric_render(const struct rt_agent_publication *pub, struct rt_buf *out);
int rt_publish_nccl_render(const struct rt_agent_publication *pub, const char *existing, size_t existing_len,
			   struct rt_buf *out);

#endif
