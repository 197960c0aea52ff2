/* SPDX-License-Identifier: MIT */
/*
 * The probe's wrapping logic, kept apart from the LD_PRELOAD glue (preload.c) so it can be linked into unit tests and
 * the benchmark as a plain static library: every interposed verb has an rt_probe_<verb>() entry point here that calls
 * the "real" function through rt_probe_real, which preload.c fills with dlvsym(RTLD_NEXT, ...) and tests fill with
 * fakes. Private to the probe; nothing here is exported from librtune_probe.so.
 */
#ifndef RT_PROBE_CORE_H
#define RT_PROBE_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* The real verbs the probe forwards to (libibverbs' versioned definitions, or test fakes). */
struct rt_probe_real {
	struct ibv_context *(*open_device)(struct ibv_device *dev);
	int (*close_device)(struct ibv_context *ctx);
	struct ibv_context *(*import_device)(int cmd_fd);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	int (*destroy_qp)(struct ibv_qp *qp);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *ch,
				    int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_qp_init_attr *init_attr);
	struct ibv_qp_ex *(*qp_to_qp_ex)(struct ibv_qp *qp);
};
extern struct rt_probe_real rt_probe_real;

/* Settings read from the environment at init (tests may set them with rt_probe_configure before any verb). */
struct rt_probe_config {
	uint32_t sample_every;	   /* RTUNE_PROBE_SAMPLE: 1 in K signaled WRs timed; 0 = no latency sampling */
	uint32_t apply_threshold;  /* inline WRs of <= this many bytes (0 = apply mode off) */
	uint32_t apply_max_inline; /* max_inline_data to request at QP creation (0 = leave) */
	bool apply_adaptive;	/* RTUNE_APPLY_ADAPTIVE=1: apply mode's threshold learns per QP (docs/controller.md) */
	char apply_source[256]; /* "RTUNE_INLINE_THRESHOLD" or the profile path */
	char out_pattern[4096]; /* RTUNE_PROBE_OUT ("" = ./rtune-probe.<pid>.json); "%p" is replaced by the pid */
};

/*
 * Reads the environment (RTUNE_PROBE_SAMPLE, RTUNE_PROBE_OUT, RTUNE_INLINE_THRESHOLD, RTUNE_PROFILE) into the
 * configuration and registers the fork and thread-exit handlers. Idempotent (pthread_once). Never fails: a bad
 * setting is reported once on stderr and ignored.
 */
void rt_probe_init(void);
/* Replaces the configuration (tests and the benchmark, before any device is opened). */
void rt_probe_configure(const struct rt_probe_config *cfg);
/*
 * Reads the apply-mode entries of the profile at path (replacing any earlier setting; NULL = apply mode off).
 * Returns 0, an errno when the file cannot be read, or ENOENT when it holds no entries.
 */
int rt_probe_load_profile(const char *path);
/* Writes the final JSON file when there was verbs activity; reports an unwritable file once on stderr. */
void rt_probe_fini(void);

/* Interposed verbs: same contract as the libibverbs function of the same name (return value and errno). */
struct ibv_context *rt_probe_open_device(struct ibv_device *dev);
int rt_probe_close_device(struct ibv_context *ctx);
struct ibv_context *rt_probe_import_device(int cmd_fd);
struct ibv_qp *rt_probe_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int rt_probe_destroy_qp(struct ibv_qp *qp);
struct ibv_cq *rt_probe_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *ch,
				  int comp_vector);
int rt_probe_destroy_cq(struct ibv_cq *cq);
int rt_probe_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
/*
 * ibv_query_qp: the provider's answer, except that on a QP whose max_inline_data apply mode raised at creation the
 * caps report the max_inline_data the application asked for (docs/probe.md): the provider's return value and errno.
 */
int rt_probe_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_qp_init_attr *init_attr);
struct ibv_qp_ex *rt_probe_qp_to_qp_ex(struct ibv_qp *qp);

/*
 * Hooks a context that was opened without the probe seeing it (tests, or a context the app got elsewhere): swaps its
 * ops.post_send/ops.poll_cq and the verbs_context create_qp_ex/create_cq_ex. Returns 0, or ENOSPC when the context
 * table is full (the context then runs unobserved).
 */
int rt_probe_hook_context(struct ibv_context *ctx);

/*
 * Writes the JSON snapshot now (final = the process is exiting). Returns 0, or an errno when the file could not be
 * written (remembered and reported once at exit). The path written is copied into path_out (may be NULL).
 */
int rt_probe_write_now(bool final, char *path_out, size_t path_len);

/* Builds the JSON document into a malloc'd NUL-terminated string (*out, free()); 0 or ENOMEM. */
int rt_probe_render_json(bool final, char **out, size_t *len);

/* Test hook: clears every record as a forked child does (counters, QPs, output state). */
void rt_probe_reset_for_child(void);

#endif
