// SPDX-License-Identifier: MIT
/*
 * EFA's direct verbs without linking libefa (rt_efa.h). The functions are looked up first in the process itself
 * (RTLD_DEFAULT: a program linked with libefa, or a preloaded stand-in such as the unit tests' fake device), then in
 * libefa.so.1 loaded once with dlopen. Nothing is cached when the lookup fails, so a later call looks again.
 */
#include "rt_efa.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <infiniband/efadv.h>

typedef int (*query_fn)(struct ibv_context *, struct efadv_device_attr *, uint32_t);
typedef struct ibv_qp *(*create_fn)(struct ibv_context *, struct ibv_qp_init_attr_ex *, struct efadv_qp_init_attr *,
				    uint32_t);

static pthread_mutex_t efa_lock = PTHREAD_MUTEX_INITIALIZER;
static query_fn efa_query;
static create_fn efa_create;
static void *efa_lib; /* libefa.so.1 when dlopen loaded it: kept for the process's life, its functions stay in use */

/* Finds both functions; 0 or ENOENT. */
static int efa_load(void)
{
	int rc = 0;

	pthread_mutex_lock(&efa_lock);
	if (!efa_query || !efa_create) {
		*(void **)&efa_query = dlsym(RTLD_DEFAULT, "efadv_query_device");
		*(void **)&efa_create = dlsym(RTLD_DEFAULT, "efadv_create_qp_ex");
		if ((!efa_query || !efa_create) &&
		    (efa_lib || (efa_lib = dlopen("libefa.so.1", RTLD_NOW | RTLD_LOCAL)))) {
			*(void **)&efa_query = dlsym(efa_lib, "efadv_query_device");
			*(void **)&efa_create = dlsym(efa_lib, "efadv_create_qp_ex");
		}
		if (!efa_query || !efa_create) {
			efa_query = NULL;
			efa_create = NULL;
			rc = ENOENT;
		}
	}
	pthread_mutex_unlock(&efa_lock);
	return rc;
}

int rt_efa_query(struct ibv_context *ctx, uint32_t vendor_id, struct rt_efa_caps *out)
{
	struct efadv_device_attr a;
	int rc;

	memset(out, 0, sizeof(*out));
	if (vendor_id != RT_EFA_VENDOR_ID)
		return EOPNOTSUPP;
	if ((rc = efa_load()))
		return rc;
	memset(&a, 0, sizeof(a));
	/* inlen: the struct this rtune was built with; an older libefa fills what it knows and refuses nothing */
	rc = efa_query(ctx, &a, sizeof(a));
	if (rc)
		return rc < 0 ? -rc : rc;
	out->efa = true;
	out->max_sq_wr = a.max_sq_wr;
	out->max_rq_wr = a.max_rq_wr;
	out->max_sq_sge = a.max_sq_sge;
	out->max_rq_sge = a.max_rq_sge;
	out->inline_buf_size = a.inline_buf_size;
	out->max_rdma_size = a.max_rdma_size;
	out->device_caps = a.device_caps;
	out->rdma_read = a.device_caps & EFADV_DEVICE_ATTR_CAPS_RDMA_READ;
	out->rnr_retry = a.device_caps & EFADV_DEVICE_ATTR_CAPS_RNR_RETRY;
	/* EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE is 1 << 3 in rdma-core 45+ (not in this header's rdma-core 44) */
	out->rdma_write = a.device_caps & (1u << 3);
	return 0;
}

struct ibv_qp *rt_efa_create_srd_qp(struct ibv_pd *pd, const struct ibv_qp_init_attr *a)
{
	struct ibv_qp_init_attr_ex ax;
	struct efadv_qp_init_attr ea;
	struct ibv_qp *qp;

	if (efa_load()) {
		errno = ENOENT;
		return NULL;
	}
	memset(&ax, 0, sizeof(ax));
	ax.qp_context = a->qp_context;
	ax.send_cq = a->send_cq;
	ax.recv_cq = a->recv_cq;
	ax.cap = a->cap;
	ax.qp_type = IBV_QPT_DRIVER;
	ax.sq_sig_all = a->sq_sig_all;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	memset(&ea, 0, sizeof(ea));
	ea.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD;
	errno = 0;
	qp = efa_create(pd->context, &ax, &ea, sizeof(ea));
	if (!qp && !errno)
		errno = EINVAL;
	return qp;
}
