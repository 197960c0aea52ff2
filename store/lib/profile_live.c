// SPDX-License-Identifier: MIT
/*
 * The application side of a changing profile: a live handle (rt_profile_live) that a running application reloads
 * when `rtune agent` or an operator republishes the profile file, while other threads keep reading entries. The
 * current document is a pointer swapped under a short writer-preferring lock; each reader holds a reference count on
 * the document it acquired, so the entries it reads stay valid until it releases them, and the replaced document is
 * freed by whoever drops its last reference. Also: whether a profile was made on this node (`<machine-id>/<hostname>`,
 * the store's node key), and the library's version.
 */
#include "profile_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One loaded document and its references (the handle's own one, while current, plus one per acquire). */
struct live_doc {
	struct rt_profile *p;
	atomic_uint refs;
};

struct rt_profile_live {
	pthread_rwlock_t lock;	  /* readers: acquire; writer: the swap */
	pthread_mutex_t reload;	  /* one reload at a time */
	struct live_doc *cur;	  /* under lock */
	atomic_uint_fast64_t gen; /* swaps so far */
	char *path;
	struct stat id; /* the file as last read: dev, ino, size, mtime */
};

/* A document's reference dropped; frees it with the last one. */
static void doc_put(struct live_doc *d)
{
	if (atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) == 1) {
		rt_profile_free(d->p);
		free(d);
	}
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Loads h->path into a new document (ref 1) and its identity; an errno + err on failure. */
static int load_doc(const char *path, struct live_doc **out, struct stat *id, struct rt_error *err)
{
	struct live_doc *d;
	int rc;

	*out = NULL;
	if (stat(path, id) < 0)
		return rt_error_set(err, errno, "profile '%s': %s", path, strerror(errno));
	d = calloc(1, sizeof(*d));
	if (!d)
		return rt_error_set(err, ENOMEM, "profile '%s': out of memory", path);
	if ((rc = rt_profile_load(path, &d->p, err))) {
		free(d);
		return rc;
	}
	atomic_init(&d->refs, 1);
	d->p->live_doc = d;
	*out = d;
	return 0;
}

int rt_profile_live_open(const char *path, rt_profile_live **out, struct rt_error *err)
{
	struct rt_profile_live *h;
	pthread_rwlockattr_t a;
	int rc;

	if (!out)
		return rt_error_set(err, EINVAL, "profile: no output pointer");
	*out = NULL;
	if (!path) {
		path = secure_getenv("RTUNE_PROFILE");
		if (!path || !*path)
			return rt_error_set(err, ENOENT, "profile: RTUNE_PROFILE is not set");
	}
	if (!*path)
		return rt_error_set(err, EINVAL, "profile: no path");
	h = calloc(1, sizeof(*h));
	if (!h || !(h->path = strdup(path))) {
		free(h);
		return rt_error_set(err, ENOMEM, "profile '%s': out of memory", path);
	}
	if ((rc = load_doc(path, &h->cur, &h->id, err))) {
		free(h->path);
		free(h);
		return rc;
	}
	pthread_rwlockattr_init(&a);
	/* a writer must get its turn among readers that acquire in a loop */
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&h->lock, &a);
	pthread_rwlockattr_destroy(&a);
	pthread_mutex_init(&h->reload, NULL);
	*out = h;
	return 0;
}

const struct rt_profile *rt_profile_live_acquire(rt_profile_live *h)
{
	struct live_doc *d;

	pthread_rwlock_rdlock(&h->lock);
	d = h->cur;
	atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
	pthread_rwlock_unlock(&h->lock);
	return d->p;
}

void rt_profile_live_release(rt_profile_live *h, const struct rt_profile *p)
{
	(void)h;
	if (p && p->live_doc)
		doc_put(p->live_doc);
}

int rt_profile_reload(rt_profile_live *h, bool *changed, struct rt_error *err)
{
	struct live_doc *d, *old;
	struct stat id;
	int rc;

	if (changed)
		*changed = false;
	pthread_mutex_lock(&h->reload);
	if (stat(h->path, &id) == 0 && same_file(&id, &h->id)) {
		pthread_mutex_unlock(&h->reload);
		return 0;
	}
	if ((rc = load_doc(h->path, &d, &id, err))) {
		/* the document in use stays: a bad republish loses nothing */
		pthread_mutex_unlock(&h->reload);
		return rc;
	}
	pthread_rwlock_wrlock(&h->lock);
	old = h->cur;
	h->cur = d;
	pthread_rwlock_unlock(&h->lock);
	h->id = id;
	atomic_fetch_add_explicit(&h->gen, 1, memory_order_release);
	pthread_mutex_unlock(&h->reload);
	doc_put(old);
	if (changed)
		*changed = true;
	return 0;
}

uint64_t rt_profile_live_generation(const rt_profile_live *h)
{
	return atomic_load_explicit(&((struct rt_profile_live *)h)->gen, memory_order_acquire);
}

void rt_profile_live_close(rt_profile_live *h)
{
	if (!h)
		return;
	doc_put(h->cur);
	pthread_rwlock_destroy(&h->lock);
	pthread_mutex_destroy(&h->reload);
	free(h->path);
	free(h);
}

const char *rt_profile_machine_id(const struct rt_profile *p)
{
	return p->machine_id;
}

/* This node's identity as the store keys it: /etc/machine-id (may be absent) and the hostname. */
static void local_node(char *mid, size_t mid_len, char *host, size_t host_len)
{
	FILE *f = fopen("/etc/machine-id", "re");

	mid[0] = '\0';
	if (f) {
		if (fgets(mid, (int)mid_len, f))
			mid[strcspn(mid, "\r\n")] = '\0';
		fclose(f);
	}
	if (gethostname(host, host_len - 1) < 0)
		host[0] = '\0';
	host[host_len - 1] = '\0';
}

bool rt_profile_is_for_this_host(const struct rt_profile *p)
{
	char mid[64], host[256];

	if (!p)
		return false;
	local_node(mid, sizeof(mid), host, sizeof(host));
	/* clones of one image share a machine-id but are different nodes: the hostname must match as well */
	if (strcmp(p->hostname, host) != 0)
		return false;
	return !p->machine_id[0] || strcmp(p->machine_id, mid) == 0;
}

const char *rt_version(void)
{
	return RTUNE_VERSION_STRING;
}

unsigned rt_version_number(void)
{
	return RTUNE_VERSION_NUMBER;
}
