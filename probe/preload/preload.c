// SPDX-License-Identifier: MIT
/*
 * librtune_probe.so's LD_PRELOAD glue, in the manner of rdma-core's librdmacm/preload.c: defines the exported verbs
 * that hand out contexts and QPs (with the symbol versions libibverbs uses, see probe.map, so applications bind here),
 * resolves the real ones once with dlvsym(RTLD_NEXT, name, version), and forwards to the wrapping logic in
 * probe_*.c (probe_int.h lists the parts). The final JSON is written from the library destructor, which runs at exit()
 * after the application's own atexit handlers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>

#include "probe_core.h"

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

static void *real_sym(const char *name, const char *version)
{
	void *p = dlvsym(RTLD_NEXT, name, version);

	return p ? p : dlsym(RTLD_NEXT, name);
}

static void resolve(void)
{
	int err = errno;

	rt_probe_real.open_device = real_sym("ibv_open_device", "IBVERBS_1.1");
	rt_probe_real.close_device = real_sym("ibv_close_device", "IBVERBS_1.1");
	rt_probe_real.import_device = real_sym("ibv_import_device", "IBVERBS_1.10");
	rt_probe_real.create_qp = real_sym("ibv_create_qp", "IBVERBS_1.1");
	rt_probe_real.destroy_qp = real_sym("ibv_destroy_qp", "IBVERBS_1.1");
	rt_probe_real.create_cq = real_sym("ibv_create_cq", "IBVERBS_1.1");
	rt_probe_real.destroy_cq = real_sym("ibv_destroy_cq", "IBVERBS_1.1");
	rt_probe_real.modify_qp = real_sym("ibv_modify_qp", "IBVERBS_1.1");
	rt_probe_real.query_qp = real_sym("ibv_query_qp", "IBVERBS_1.1");
	rt_probe_real.qp_to_qp_ex = real_sym("ibv_qp_to_qp_ex", "IBVERBS_1.6");
	rt_probe_init();
	errno = err;
}

static inline void init(void)
{
	pthread_once(&resolve_once, resolve);
}

__attribute__((constructor)) static void probe_ctor(void)
{
	init();
}

__attribute__((destructor)) static void probe_dtor(void)
{
	rt_probe_fini();
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	init();
	return rt_probe_open_device(device);
}

int ibv_close_device(struct ibv_context *context)
{
	init();
	return rt_probe_close_device(context);
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	init();
	return rt_probe_import_device(cmd_fd);
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	init();
	return rt_probe_create_qp(pd, qp_init_attr);
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	init();
	return rt_probe_destroy_qp(qp);
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	init();
	return rt_probe_create_cq(context, cqe, cq_context, channel, comp_vector);
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	init();
	return rt_probe_destroy_cq(cq);
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	init();
	return rt_probe_modify_qp(qp, attr, attr_mask);
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	init();
	return rt_probe_query_qp(qp, attr, attr_mask, init_attr);
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	init();
	return rt_probe_qp_to_qp_ex(qp);
}
