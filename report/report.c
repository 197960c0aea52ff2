// SPDX-License-Identifier: MIT
/*
 * The fleet report's inputs: the report object, its problem list, walking files and directories, telling stores from
 * JSON profiles, reading a JSON profile v1 document (in one pass by librtune's own reader, rt_profile_scan, exactly as
 * applications read it, without a jansson tree; the optional "hardware" object, per-entry "calibration" and the node's
 * raw fields read with the same lexer's cursor), and merging a node met in several inputs.
 */
#include "report_internal.h"
#include "rt_store.h" /* rt_store_node_key_of: one node identity */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rtune/profile.h>

/* librtune's validating converter from a parsed document (store/lib, shared by the store's import) */
#include "lib/profile_internal.h"
#include "lib/profile_scan.h"

#define RP_MAX_FILE_BYTES (16u << 20)
#define RP_MAX_DEPTH 32

char *rp_strdup(const char *s)
{
	return strdup(s ? s : "");
}

uint64_t rp_fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	h ^= 0xff;
	h *= 0x100000001b3ULL;
	return h;
}

const char *rp_metric_name(enum rp_metric m)
{
	static const char *const names[] = { "inline_threshold", "signal_interval", "latency_ns", "mops" };

	return (unsigned)m < RP_M__COUNT ? names[m] : "unknown";
}

int rt_report_create(const struct rt_report_opts *opts, struct rt_report **out)
{
	struct rt_report *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return ENOMEM;
	if (opts)
		r->opts = *opts;
	r->generated_at = (int64_t)time(NULL);
	if (!r->opts.now)
		r->opts.now = r->generated_at;
	if (r->opts.outlier_z <= 0)
		r->opts.outlier_z = 3.5;
	if (r->opts.stale_days <= 0)
		r->opts.stale_days = 90;
	if (r->opts.min_group <= 0)
		r->opts.min_group = 4;
	*out = r;
	return 0;
}

void rp_node_release(struct rp_node *n)
{
	free(n->hostname);
	free(n->node_key);
	free(n->source);
	free(n->cpu_model);
	free(n->devs);
	for (int i = 0; i < n->n_entries; i++)
		free(n->entries[i].curve);
	free(n->entries);
	memset(n, 0, sizeof(*n));
}

void rt_report_free(struct rt_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_nodes; i++)
		rp_node_release(&r->nodes[i]);
	free(r->nodes);
	for (size_t i = 0; i < r->n_problems; i++)
		free(r->problems[i]);
	free(r->problems);
	free(r->key_tab);
	for (size_t i = 0; i < r->n_groups; i++) {
		free(r->groups[i].label);
		free(r->groups[i].nodes);
		free(r->groups[i].slots);
	}
	free(r->groups);
	free(r->outliers);
	for (size_t i = 0; i < r->n_drifts; i++) {
		free(r->drifts[i].hostname);
		free(r->drifts[i].device);
		free(r->drifts[i].source);
	}
	free(r->drifts);
	free(r->stale);
	free(r->by_node);
	free(r->onodes);
	free(r);
}

void rp_problem(struct rt_report *r, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (r->n_problems == r->cap_problems) {
		size_t cap = r->cap_problems ? r->cap_problems * 2 : 16;
		char **np = realloc(r->problems, cap * sizeof(*np));

		if (!np)
			return;
		r->problems = np;
		r->cap_problems = cap;
	}
	r->problems[r->n_problems] = strdup(buf);
	if (r->problems[r->n_problems])
		r->n_problems++;
}

size_t rt_report_problem_count(const struct rt_report *r)
{
	return r->n_problems;
}

const char *rt_report_problem_at(const struct rt_report *r, size_t i)
{
	return i < r->n_problems ? r->problems[i] : NULL;
}

size_t rt_report_node_count(const struct rt_report *r)
{
	return r->n_nodes;
}

/* ---- node table keyed by node_key ------------------------------------------------------------------------------ */

/* A node is its rt_store_node_key(): machine-id and hostname (the hostname alone without a machine-id), so cloned
 * machine-ids (VM images, guests sharing a root) with different hostnames stay different nodes, in a store as in
 * files. */
static uint64_t node_hash(const struct rp_node *n)
{
	return rp_fnv1a(rp_fnv1a(0xcbf29ce484222325ULL, n->node_key), n->hostname);
}

static int key_resize(struct rt_report *r, size_t cap)
{
	size_t *t = malloc(cap * sizeof(*t));

	if (!t)
		return ENOMEM;
	for (size_t i = 0; i < cap; i++)
		t[i] = SIZE_MAX;
	for (size_t i = 0; i < r->n_nodes; i++) {
		size_t h = (size_t)r->nodes[i].key_hash & (cap - 1);

		while (t[h] != SIZE_MAX)
			h = (h + 1) & (cap - 1);
		t[h] = i;
	}
	free(r->key_tab);
	r->key_tab = t;
	r->key_cap = cap;
	return 0;
}

static int key_grow(struct rt_report *r)
{
	return key_resize(r, r->key_cap ? r->key_cap * 2 : 1024);
}

/* Makes room for extra more nodes at once (the node array and the key table), so that merging a big directory does
 * not grow them step by step. Best effort: on failure rp_add_node grows them as it goes. */
static void reserve_nodes(struct rt_report *r, size_t extra)
{
	size_t want = r->n_nodes + extra, kcap = r->key_cap ? r->key_cap : 1024;

	if (want > r->cap_nodes) {
		struct rp_node *nv = realloc(r->nodes, want * sizeof(*nv));

		if (!nv)
			return;
		r->nodes = nv;
		r->cap_nodes = want;
	}
	while ((want + 1) * 2 > kcap)
		kcap *= 2;
	if (kcap > r->key_cap)
		key_resize(r, kcap);
}

long rp_add_node(struct rt_report *r, struct rp_node *node)
{
	size_t h;

	if ((r->n_nodes + 1) * 2 > r->key_cap && key_grow(r)) {
		rp_node_release(node);
		return -ENOMEM;
	}
	node->key_hash = node_hash(node);
	h = (size_t)node->key_hash & (r->key_cap - 1);
	while (r->key_tab[h] != SIZE_MAX) {
		struct rp_node *old = &r->nodes[r->key_tab[h]];

		if (old->key_hash == node->key_hash && strcmp(old->node_key, node->node_key) == 0 &&
		    strcmp(old->hostname, node->hostname) == 0) {
			/* the same node from another input: the newer profile wins; hardware facts are kept if only one
			 * input had them */
			bool take = node->newest > old->newest ||
				    (node->newest == old->newest && node->has_hw && !old->has_hw);

			if (take) {
				if (!node->has_hw && old->has_hw) {
					node->has_hw = true;
					node->n_devs = old->n_devs;
					node->devs = old->devs;
					old->devs = NULL;
					if (node->numa_nodes < 0)
						node->numa_nodes = old->numa_nodes;
				}
				rp_node_release(old);
				*old = *node;
			} else {
				if (!old->has_hw && node->has_hw) {
					old->has_hw = true;
					old->n_devs = node->n_devs;
					old->devs = node->devs;
					node->devs = NULL;
				}
				rp_node_release(node);
			}
			return (long)r->key_tab[h];
		}
		h = (h + 1) & (r->key_cap - 1);
	}
	if (r->n_nodes == r->cap_nodes) {
		size_t cap = r->cap_nodes ? r->cap_nodes * 2 : 64;
		struct rp_node *nv = realloc(r->nodes, cap * sizeof(*nv));

		if (!nv) {
			rp_node_release(node);
			return -ENOMEM;
		}
		r->nodes = nv;
		r->cap_nodes = cap;
	}
	r->nodes[r->n_nodes] = *node;
	r->key_tab[h] = r->n_nodes;
	return (long)r->n_nodes++;
}

/* ---- JSON profile documents -------------------------------------------------------------------------------------- */

/* Copies s into dst[len], truncated and NUL-terminated: snprintf("%s") without the formatting (100,000 documents). */
static void copy_str(char *dst, size_t len, const char *s)
{
	size_t n = s ? strnlen(s, len - 1) : 0;

	memcpy(dst, s ? s : "", n);
	dst[n] = '\0';
}

/* A string value of a document (v: RT_JV_STR, else "") into dst[len], truncated as copy_str does. */
static void copy_jv_str(char *dst, size_t len, const struct rt_jv *v)
{
	size_t n = v->t == RT_JV_STR ? v->n : 0;

	if (n > len - 1)
		n = len - 1;
	memcpy(dst, n ? v->s : "", n);
	dst[n] = '\0';
}

/* A malloc'd copy of a string value ("" when v is no string); NULL when out of memory. */
static char *jv_strdup(const struct rt_jv *v)
{
	size_t n = v->t == RT_JV_STR ? v->n : 0;
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, n ? v->s : "", n);
		s[n] = '\0';
	}
	return s;
}

static int jv_int_or(const struct rt_jv *v, int dflt)
{
	return v->t == RT_JV_INT ? (int)v->i : dflt;
}

/* The optional "hardware" object (docs/report.md), read with the cursor l over its document; a malformed one is
 * ignored with has_hw false. */
static void read_hardware(struct rt_jlex *l, const struct rt_jv *hw, struct rp_node *n)
{
	static const char *const hw_keys[] = { "cpu_model", "numa_nodes", "devices" };
	static const char *const dev_keys[] = { "name",		  "guid",      "vendor_id",
						"vendor_part_id", "fw_ver",    "link_layer",
						"active_mtu",	  "numa_node", "pcie" };
	static const char *const pcie_keys[] = { "speed", "width", "max_payload_bytes", "max_read_request_bytes" };
	struct rt_jv h[3], devs[RP_MAX_DEVS];
	size_t cnt;

	if (hw->t != RT_JV_OBJ || rt_jlex_members(l, hw, hw_keys, 3, h))
		return;
	if (h[0].t == RT_JV_STR) {
		free(n->cpu_model);
		n->cpu_model = jv_strdup(&h[0]);
	}
	n->numa_nodes = jv_int_or(&h[1], n->numa_nodes);
	cnt = rt_jlex_elements(l, &h[2], devs, RP_MAX_DEVS);
	n->devs = cnt ? calloc(cnt, sizeof(*n->devs)) : NULL;
	if (cnt && !n->devs)
		return;
	for (size_t i = 0; i < cnt; i++) {
		struct rt_jv d[9], pc[4];
		struct rp_dev *o = &n->devs[n->n_devs];

		if (devs[i].t != RT_JV_OBJ || rt_jlex_members(l, &devs[i], dev_keys, 9, d))
			continue;
		copy_jv_str(o->name, sizeof(o->name), &d[0]);
		copy_jv_str(o->guid, sizeof(o->guid), &d[1]);
		o->vendor_id = jv_int_or(&d[2], -1);
		o->vendor_part_id = jv_int_or(&d[3], -1);
		copy_jv_str(o->fw_ver, sizeof(o->fw_ver), &d[4]);
		copy_jv_str(o->link_layer, sizeof(o->link_layer), &d[5]);
		o->active_mtu = jv_int_or(&d[6], -1);
		o->numa_node = jv_int_or(&d[7], -1);
		o->mps = o->mrrs = o->pcie_width = -1;
		if (d[8].t == RT_JV_OBJ && !rt_jlex_members(l, &d[8], pcie_keys, 4, pc)) {
			o->has_pcie = true;
			copy_jv_str(o->pcie_speed, sizeof(o->pcie_speed), &pc[0]);
			o->pcie_width = jv_int_or(&pc[1], -1);
			o->mps = jv_int_or(&pc[2], -1);
			o->mrrs = jv_int_or(&pc[3], -1);
		}
		n->n_devs++;
	}
	n->has_hw = true;
}

static void entry_from_profile(const struct rt_profile_entry *e, struct rp_entry *o)
{
	memset(o, 0, sizeof(*o));
	copy_str(o->device, sizeof(o->device), e->device);
	o->port = (uint8_t)e->port;
	o->opcode = (uint8_t)e->opcode;
	o->qp_type = (uint8_t)e->qp_type;
	o->confidence = (uint8_t)e->confidence;
	o->inline_threshold = e->inline_threshold;
	o->max_inline_data = e->max_inline_data;
	o->signal_interval = e->signal_interval;
	o->sq_depth = e->sq_depth;
	o->cq_depth = e->cq_depth;
	o->numa_node = (int16_t)e->numa_node;
	o->cal_cpu_numa = -1;
	o->cal_local = -1;
	o->measured_at = e->measured_at;
	copy_str(o->run_id, sizeof(o->run_id), e->run_id);
	o->lat_ns = NAN;
	o->mops = NAN;
	rp_entry_evidence(o, e);
}

void rp_entry_evidence(struct rp_entry *o, const struct rt_profile_entry *e)
{
	o->lat_inl_ns = o->lat_noinl_ns = o->mops_n1 = o->noise_pct = NAN;
	o->lat_bytes = 0;
	o->lat_kind = 0;
	if (!e->has_measured)
		return;
	o->lat_inl_ns = (float)e->lat_inline_ns;
	o->lat_noinl_ns = (float)e->lat_noinline_ns;
	o->mops_n1 = (float)e->mops_at_n1;
	o->noise_pct = (float)e->noise_pct;
	o->lat_bytes = e->lat_bytes;
	o->lat_kind = !strcmp(e->lat_kind, "pingpong") ? 1 : !strcmp(e->lat_kind, "post_cqe") ? 2 : 0;
	/* latency at the chosen settings: inline at the threshold when the node inlines, else not inline */
	o->lat_ns = o->inline_threshold ? o->lat_inl_ns : o->lat_noinl_ns;
	o->mops = (float)e->mops_at_n;
}

/* Per-entry "calibration": {"cpu_numa_node": int|null, "numa_local": bool}, read with the cursor l. */
static void read_calibration(struct rt_jlex *l, const struct rt_jv *cal, struct rp_entry *o)
{
	static const char *const keys[] = { "cpu_numa_node", "numa_local" };
	struct rt_jv v[2];

	if (cal->t != RT_JV_OBJ || rt_jlex_members(l, cal, keys, 2, v))
		return;
	if (v[0].t == RT_JV_INT)
		o->cal_cpu_numa = (int16_t)v[0].i;
	if (v[1].t == RT_JV_TRUE || v[1].t == RT_JV_FALSE)
		o->cal_local = v[1].t == RT_JV_TRUE ? 1 : 0;
	else if (o->cal_cpu_numa >= 0 && o->numa_node >= 0)
		o->cal_local = o->cal_cpu_numa == o->numa_node;
}

/*
 * Parses one JSON profile document into *n. Returns 1 (a node), 0 (not usable: why in problem), or -ENOMEM. Touches
 * nothing shared, so several workers may parse at once. A fleet is 100,000 documents: each is read in one pass by
 * librtune's own single-pass reader (rt_profile_scan: no tree, what the report accepts is exactly what applications
 * accept), which also says where the report's extra fields are ("hardware", per-entry "calibration", the node's
 * untruncated cpu_model and raw numa_nodes); those are read with the lexer's cursor over the same text.
 */
static int parse_json_doc(const char *name, const char *text, size_t len, struct rp_node *n, char *problem, size_t plen)
{
	static const char *const node_keys[] = { "cpu_model", "numa_nodes" };
	struct rt_profile_scan_extra x;
	struct rt_profile *p = NULL;
	struct rt_error err;
	struct rt_jlex l;
	struct rt_jv nv[2];
	size_t cnt;
	int rc;

	memset(n, 0, sizeof(*n));
	if (rt_profile_scan(text, len, NULL, &p, &x, &err)) {
		/* librtune's messages start with "profile: " when no name is given */
		const char *why = strncmp(err.text, "profile: ", 9) == 0 ? err.text + 9 : err.text;

		if (err.code == ENOMEM)
			return -ENOMEM;
		snprintf(problem, plen, "%s: %s", name, why);
		return 0;
	}
	if (rt_profile_group_nodes(p)) {
		/* written by --group-profiles: the recommendation of a class, not a node of the fleet */
		snprintf(problem, plen, "%s: a group profile (of %u nodes), not a node's profile", name,
			 rt_profile_group_nodes(p));
		rt_profile_scan_extra_free(&x);
		rt_profile_free(p);
		return 0;
	}
	rt_jlex_init(&l, text, len);
	n->hostname = rp_strdup(rt_profile_hostname(p));
	{
		/* the store's identity of the node (rt_store_node_key), from the fields as the store would keep them (a
		 * machine_id the reader accepted is a string of at most 63 bytes, or null: "") */
		char mid_cut[RT_NAME_LEN], host_cut[RT_TEXT_LEN], key[RT_STORE_NODE_KEY_LEN];

		snprintf(mid_cut, sizeof(mid_cut), "%s", p->machine_id);
		snprintf(host_cut, sizeof(host_cut), "%s", rt_profile_hostname(p));
		rt_store_node_key_of(mid_cut, host_cut, key, sizeof(key));
		n->node_key = rp_strdup(key);
	}
	n->source = rp_strdup(name);
	rc = rt_jlex_members(&l, &x.node, node_keys, 2, nv);
	n->cpu_model = rc ? NULL : jv_strdup(&nv[0]);
	copy_str(n->hw_sig, sizeof(n->hw_sig), rt_profile_hw_signature(p));
	n->numa_nodes = jv_int_or(&nv[1], -1);
	n->group = -1;
	read_hardware(&l, &x.hardware, n);
	cnt = rt_profile_entry_count(p);
	n->entries = cnt ? calloc(cnt, sizeof(*n->entries)) : NULL;
	if (!n->hostname || !n->node_key || !n->source || !n->cpu_model || (cnt && !n->entries)) {
		rt_jlex_fini(&l);
		rt_profile_scan_extra_free(&x);
		rt_profile_free(p);
		rp_node_release(n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cnt; i++) {
		struct rp_entry *o = &n->entries[n->n_entries++];

		entry_from_profile(rt_profile_entry_at(p, i), o);
		if (i < x.n_calibration)
			read_calibration(&l, &x.calibration[i], o);
		if (o->measured_at > n->newest)
			n->newest = o->measured_at;
	}
	rt_jlex_fini(&l);
	rt_profile_scan_extra_free(&x);
	rt_profile_free(p);
	if (n->n_entries == 0) {
		snprintf(problem, plen, "%s: profile of '%s' has no entries", name, n->hostname);
		rp_node_release(n);
		return 0;
	}
	return 1;
}

/* Hands a parse result to the report: the node merged, or the problem recorded. */
static long take_result(struct rt_report *r, int rc, struct rp_node *n, const char *problem)
{
	long idx;

	if (rc < 0)
		return rc;
	if (rc == 0) {
		rp_problem(r, "%s", problem);
		return 0;
	}
	r->n_inputs_ok++;
	idx = rp_add_node(r, n);
	return idx < 0 ? idx : 1;
}

long rt_report_add_json_text(struct rt_report *r, const char *name, const char *text, size_t len)
{
	char problem[1024];
	struct rp_node n;
	int rc;

	rc = parse_json_doc(name, text, len, &n, problem, sizeof(problem));
	return take_result(r, rc, &n, problem);
}

/* ---- files and directories ----------------------------------------------------------------------------------------- */

/* One file to read: classified and (for JSON) parsed by a worker; stores are read afterwards, in order. */
struct job {
	const char *path;
	int dirfd; /* the walked directory holding it (path + name_off is its name there), or -1 */
	unsigned name_off;
	bool regular; /* the walk saw a regular file (directory entry or stat) */
	enum { J_PENDING, J_STORE, J_PROBLEM, J_NODE, J_NOMEM } state;
	struct rp_node node;
	char *problem; /* J_PROBLEM: malloc'd "<path>: <why>" (NULL when that allocation failed) */
};

/* A worker's read buffer, reused from file to file (a fleet is 100,000 small files: one allocation per worker, not
 * one per file). */
struct rbuf {
	char *p;
	size_t cap;
};

/* Bytes read first: enough for a whole profile document, and the head tells stores from JSON. */
#define RP_FIRST_READ (64u << 10)

/* Makes room for n bytes, keeping the content. 0 or ENOMEM. */
static int rbuf_reserve(struct rbuf *b, size_t n)
{
	char *p;

	if (n <= b->cap)
		return 0;
	p = realloc(b->p, n);
	if (!p)
		return ENOMEM;
	b->p = p;
	b->cap = n;
	return 0;
}

/* Reads until len bytes or end of file; the count, or -1 with errno. */
static ssize_t read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

__attribute__((format(printf, 2, 3))) static void job_problem(struct job *j, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	j->problem = strdup(buf);
	j->state = J_PROBLEM;
}

/*
 * Opens path and classifies it; JSON documents are parsed right away. Thread-safe (touches only j and the worker's
 * buffer b). System calls are what a small file costs most (in a VM above all): a file the walk found to
 * be regular (its directory entry says so) is opened relative to its directory and read with one read() into a 64 KiB
 * buffer - a read that does not fill it has met the end of the regular file - then closed: three calls. Files named
 * on the command line, and files that fill the buffer, are fstat'ed first (type, size limit, the rest of the file).
 */
static void run_job(struct job *j, struct rbuf *b)
{
	char problem[1024];
	struct stat sb;
	size_t size = 0, hn, i = 0;
	ssize_t got = 0;
	bool whole = false;
	int fd, rc;

	/* a FIFO named on the command line must not block */
	if (j->dirfd >= 0)
		fd = openat(j->dirfd, j->path + j->name_off, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	else
		fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		job_problem(j, "%s: cannot open: %s", j->path, strerror(errno));
		return;
	}
	if (rbuf_reserve(b, RP_FIRST_READ + 1)) {
		j->state = J_NOMEM;
		goto out;
	}
	if (j->regular) {
		do
			got = read(fd, b->p, RP_FIRST_READ);
		while (got < 0 && errno == EINTR);
		if (got < 0) {
			job_problem(j, "%s: cannot read: %s", j->path, strerror(errno));
			goto out;
		}
		size = (size_t)got;
		whole = size < RP_FIRST_READ;
	}
	if (!whole) {
		if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
			job_problem(j, "%s: not a regular file", j->path);
			goto out;
		}
		size = (size_t)sb.st_size > (size_t)got ? (size_t)sb.st_size : (size_t)got;
		if (!j->regular && size) {
			got = read_full(fd, b->p, size < RP_FIRST_READ ? size : RP_FIRST_READ);
			if (got < 0) {
				job_problem(j, "%s: cannot read: %s", j->path, strerror(errno));
				goto out;
			}
		}
	}
	if (size == 0) {
		job_problem(j, "%s: empty file", j->path);
		goto out;
	}
	/* the first 16 bytes tell a JSON document (an object) from anything else */
	hn = (size_t)got < 16 ? (size_t)got : 16;
	while (i < hn && (b->p[i] == ' ' || b->p[i] == '\t' || b->p[i] == '\n' || b->p[i] == '\r'))
		i++;
	if (i >= hn || b->p[i] != '{') {
		/* an SQLite header, or neither JSON nor SQLite: the store names it ("not a database") */
		j->state = J_STORE;
		goto out;
	}
	if (size > RP_MAX_FILE_BYTES) {
		job_problem(j, "%s: larger than %u bytes", j->path, RP_MAX_FILE_BYTES);
		goto out;
	}
	if (!whole && (size_t)got == RP_FIRST_READ && size > RP_FIRST_READ) {
		ssize_t more;

		if (rbuf_reserve(b, size + 1)) {
			j->state = J_NOMEM;
			goto out;
		}
		more = read_full(fd, b->p + got, size - (size_t)got);
		if (more < 0) {
			job_problem(j, "%s: cannot read: %s", j->path, strerror(errno));
			goto out;
		}
		got += more;
	}
	rc = parse_json_doc(j->path, b->p, (size_t)got, &j->node, problem, sizeof(problem));
	if (rc == 0)
		j->problem = strdup(problem);
	j->state = rc < 0 ? J_NOMEM : rc ? J_NODE : J_PROBLEM;
out:
	close(fd);
}

struct pool {
	struct job *jobs;
	size_t n;
	size_t next; /* atomically incremented */
};

static void *worker(void *arg)
{
	struct pool *p = arg;
	struct rbuf b = { 0 };
	size_t i;

	while ((i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED)) < p->n)
		run_job(&p->jobs[i], &b);
	free(b.p);
	return NULL;
}

/* Runs the jobs on up to one thread per online CPU (at most 8), then merges the results in order. */
static long run_jobs(struct rt_report *r, struct job *jobs, size_t n)
{
	struct pool p = { jobs, n, 0 };
	pthread_t tid[8];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN), total = 0;
	int nt = 0;

	if (n >= 64 && cpus > 1) {
		for (nt = 0; nt < (cpus < 8 ? (int)cpus : 8) - 1; nt++)
			if (pthread_create(&tid[nt], NULL, worker, &p))
				break;
	}
	worker(&p);
	for (int t = 0; t < nt; t++)
		pthread_join(tid[t], NULL);
	{
		size_t nodes = 0;

		for (size_t i = 0; i < n; i++)
			nodes += jobs[i].state == J_NODE;
		reserve_nodes(r, nodes);
	}
	for (size_t i = 0; i < n; i++) {
		struct job *j = &jobs[i];
		long rc = 0;

		switch (j->state) {
		case J_STORE: rc = rp_read_store(r, j->path); break;
		case J_PROBLEM:
			if (j->problem)
				rp_problem(r, "%s", j->problem);
			break;
		case J_NODE: rc = take_result(r, 1, &j->node, NULL); break;
		default: rc = -ENOMEM; break;
		}
		free(j->problem);
		j->problem = NULL;
		if (rc < 0) {
			/* release what the remaining jobs parsed */
			for (size_t k = i + 1; k < n; k++) {
				if (jobs[k].state == J_NODE)
					rp_node_release(&jobs[k].node);
				free(jobs[k].problem);
			}
			return rc;
		}
		total += rc;
	}
	return total;
}

static bool has_suffix(const char *s, const char *sfx)
{
	size_t a = strlen(s), b = strlen(sfx);

	return a >= b && strcmp(s + a - b, sfx) == 0;
}

static bool wanted_in_dir(const char *name)
{
	if (name[0] == '.')
		return false; /* hidden files, the store's temporary files */
	return has_suffix(name, ".json") || has_suffix(name, ".db") || has_suffix(name, ".sqlite") ||
	       has_suffix(name, ".sqlite3") || has_suffix(name, ".rtune");
}

/* Directories kept open while their files are read (openat); files of further directories are opened by path. */
#define RP_MAX_DIR_FDS 64

/* Strings that live as long as one rt_report_add_path() call, copied into 64 KiB chunks (a walk of 100,000 files
 * makes 200,000 names and paths: not one malloc each). */
struct spool_chunk {
	struct spool_chunk *next;
	size_t used, cap;
	char data[];
};

struct spool {
	struct spool_chunk *head;
};

static char *spool_dup(struct spool *p, const char *s, size_t len)
{
	struct spool_chunk *c = p->head;
	char *out;

	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > (64u << 10) ? len + 1 : (64u << 10);

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = p->head;
		c->used = 0;
		c->cap = cap;
		p->head = c;
	}
	out = c->data + c->used;
	memcpy(out, s, len);
	out[len] = '\0';
	c->used += len + 1;
	return out;
}

static void spool_free(struct spool *p)
{
	while (p->head) {
		struct spool_chunk *n = p->head->next;

		free(p->head);
		p->head = n;
	}
}

/* The files to read, in order. */
struct file_ref {
	const char *path; /* in the pool */
	int dirfd;	  /* see struct job */
	unsigned name_off;
	bool regular;
};

struct file_list {
	struct file_ref *files;
	size_t n, cap;
	struct spool pool; /* paths and, during the walk, directory entry names */
	int dirfds[RP_MAX_DIR_FDS];
	int n_dirfds;
};

/* Appends path (copied); dirfd >= 0 is the open directory that holds it, its name starting at path + name_off;
 * regular when the walk saw a regular file. */
static int list_add(struct file_list *l, const char *path, size_t len, int dirfd, size_t name_off, bool regular)
{
	struct file_ref *f;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct file_ref *nf = realloc(l->files, cap * sizeof(*nf));

		if (!nf)
			return ENOMEM;
		l->files = nf;
		l->cap = cap;
	}
	f = &l->files[l->n];
	if (!(f->path = spool_dup(&l->pool, path, len)))
		return ENOMEM;
	f->dirfd = dirfd;
	f->name_off = (unsigned)name_off;
	f->regular = regular;
	l->n++;
	return 0;
}

struct dir_ent {
	const char *name;   /* in the list's pool */
	unsigned char type; /* d_type: DT_UNKNOWN when the file system does not say */
};

static int cmp_dir_ent(const void *a, const void *b)
{
	return strcmp(((const struct dir_ent *)a)->name, ((const struct dir_ent *)b)->name);
}

/* Collects wanted files under dir into l (sorted per directory, depth-bounded); symlinked directories are not
 * followed. The directory entry's type spares a stat per file; symlinks and file systems that do not fill d_type are
 * stat'ed. Problems are recorded; returns 0 or ENOMEM. */
static int walk_dir(struct rt_report *r, const char *dir, int depth, struct file_list *l)
{
	struct dir_ent *ents = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int rc = 0, dfd = -2; /* -2: not opened yet, -1: none (limit reached or dup failed) */
	size_t dl = strlen(dir);
	DIR *d;

	if (depth > RP_MAX_DEPTH) {
		rp_problem(r, "%s: directories nested deeper than %d, not read", dir, RP_MAX_DEPTH);
		return 0;
	}
	d = opendir(dir);
	if (!d) {
		rp_problem(r, "%s: cannot read directory: %s", dir, strerror(errno));
		return 0;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			struct dir_ent *ne = realloc(ents, (cap = cap ? cap * 2 : 64) * sizeof(*ne));

			if (!ne) {
				rc = ENOMEM;
				goto out;
			}
			ents = ne;
		}
		if (!(ents[n].name = spool_dup(&l->pool, de->d_name, strlen(de->d_name)))) {
			rc = ENOMEM;
			goto out;
		}
		ents[n].type = de->d_type;
		n++;
	}
	if (n)
		qsort(ents, n, sizeof(*ents), cmp_dir_ent);
	for (size_t i = 0; i < n && !rc; i++) {
		char path[4096];
		unsigned char type = ents[i].type;
		size_t nl = strlen(ents[i].name);
		struct stat sb;

		if (type != DT_DIR && !wanted_in_dir(ents[i].name))
			continue;
		if (dl + 1 + nl >= sizeof(path))
			continue;
		memcpy(path, dir, dl);
		path[dl] = '/';
		memcpy(path + dl + 1, ents[i].name, nl + 1);
		if (type == DT_UNKNOWN) {
			if (lstat(path, &sb) < 0)
				continue;
			type = S_ISDIR(sb.st_mode)   ? DT_DIR
			       : S_ISREG(sb.st_mode) ? DT_REG
			       : S_ISLNK(sb.st_mode) ? DT_LNK
						     : 0;
			if (type != DT_DIR && !wanted_in_dir(ents[i].name))
				continue;
		}
		if (type == DT_DIR)
			rc = walk_dir(r, path, depth + 1, l);
		else if (type == DT_REG || (type == DT_LNK && stat(path, &sb) == 0 && S_ISREG(sb.st_mode))) {
			if (dfd == -2 && l->n_dirfds < RP_MAX_DIR_FDS &&
			    (dfd = fcntl(dirfd(d), F_DUPFD_CLOEXEC, 0)) >= 0)
				l->dirfds[l->n_dirfds++] = dfd;
			rc = list_add(l, path, dl + 1 + nl, dfd >= 0 ? dfd : -1, dl + 1, true);
		}
	}
out:
	free(ents);
	closedir(d);
	return rc;
}

long rt_report_add_path(struct rt_report *r, const char *path)
{
	struct file_list l = { 0 };
	struct job *jobs = NULL;
	struct stat sb;
	long rc;

	if (stat(path, &sb) < 0) {
		rp_problem(r, "%s: %s", path, strerror(errno));
		return 0;
	}
	if (!S_ISDIR(sb.st_mode)) {
		rc = list_add(&l, path, strlen(path), -1, 0, false) ? -ENOMEM : 0;
	} else {
		rc = walk_dir(r, path, 0, &l) ? -ENOMEM : 0;
		if (!rc && l.n == 0)
			rp_problem(
				r,
				"%s: directory holds no profiles or stores (*.json, *.db, *.sqlite, *.sqlite3, *.rtune)",
				path);
	}
	if (!rc && l.n) {
		jobs = calloc(l.n, sizeof(*jobs));
		if (!jobs) {
			rc = -ENOMEM;
		} else {
			for (size_t i = 0; i < l.n; i++) {
				jobs[i].path = l.files[i].path;
				jobs[i].dirfd = l.files[i].dirfd;
				jobs[i].name_off = l.files[i].name_off;
				jobs[i].regular = l.files[i].regular;
			}
			rc = run_jobs(r, jobs, l.n);
		}
	}
	free(jobs);
	for (int i = 0; i < l.n_dirfds; i++)
		close(l.dirfds[i]);
	free(l.files);
	spool_free(&l.pool);
	return rc;
}
