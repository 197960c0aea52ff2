// SPDX-License-Identifier: MIT
/*
 * The application side of a changing profile (store/lib/profile_live.c): 8 reader threads acquire, select and read
 * entries while the main thread republishes the file 300 times (rename over it, as rtune export does) and reloads;
 * every reader sees whole documents only (the threshold and N it reads belong to the same version), a reference keeps
 * its entries valid across reloads, a republished file that does not load leaves the current one, an unchanged file
 * is not swapped. Also rt_profile_is_for_this_host against this node's machine-id and hostname, and the version.
 * Run under TSan by scripts/hardening (step tsan).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rtune/profile.h>

#define READERS 8
#define RELOADS 300

static char g_dir[64];
static char *g_text; /* corpus/valid.json: entry 0 has "inline_threshold": 188 and "signal_interval": 16 */
static atomic_int g_stop;
static atomic_ulong g_reads, g_torn;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	b[n] = '\0';
	fclose(f);
	return b;
}

/* Replaces the first occurrence of from with to in the text (into a new string). */
static char *subst(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
	char *out = malloc(n);

	assert_non_null(at);
	assert_non_null(out);
	snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

/* Publishes version v of the document at path: threshold 100 + v % 100, N 1 + that % 8 (readers check the pair),
 * by rename. */
static void publish(const char *path, unsigned v, const char *host, const char *mid)
{
	char thr[64], sig[64], tmp[96], hs[300], ms[100];
	char *a, *b, *c, *d;
	FILE *f;

	snprintf(thr, sizeof(thr), "\"inline_threshold\": %u", 100 + v % 100);
	snprintf(sig, sizeof(sig), "\"signal_interval\": %u", 1 + v % 100 % 8);
	snprintf(hs, sizeof(hs), "\"hostname\": \"%s\"", host);
	snprintf(ms, sizeof(ms), "\"machine_id\": \"%s\"", mid);
	a = subst(g_text, "\"inline_threshold\": 188", thr);
	b = subst(a, "\"signal_interval\": 16", sig);
	c = subst(b, "\"hostname\": \"node-a\"", hs);
	d = subst(c, "\"machine_id\": \"0123456789abcdef0123456789abcdef\"", ms);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(d, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
	free(a);
	free(b);
	free(c);
	free(d);
}

static void *reader(void *arg)
{
	rt_profile_live *h = arg;

	while (!atomic_load(&g_stop)) {
		const struct rt_profile *p = rt_profile_live_acquire(h);
		const struct rt_profile_entry *e =
			rt_profile_select(p, "mlx5_0", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC);

		/* one document: N belongs to the threshold read from the same entry, also a while later */
		if (!e || e->signal_interval != 1 + (e->inline_threshold - 100) % 8)
			atomic_fetch_add(&g_torn, 1);
		sched_yield();
		if (!e || e->signal_interval != 1 + (e->inline_threshold - 100) % 8)
			atomic_fetch_add(&g_torn, 1);
		rt_profile_live_release(h, p);
		atomic_fetch_add(&g_reads, 1);
	}
	return NULL;
}

static void test_reload_under_readers(void **state)
{
	char path[128];
	pthread_t t[READERS];
	rt_profile_live *h = NULL;
	struct rt_error err;
	const struct rt_profile *held;
	const struct rt_profile_entry *he;
	bool changed;

	(void)state;
	snprintf(path, sizeof(path), "%s/profile.json", g_dir);
	publish(path, 0, "node-a", "0123456789abcdef0123456789abcdef");
	assert_int_equal(rt_profile_live_open(path, &h, &err), 0);
	assert_int_equal(rt_profile_live_generation(h), 0);
	/* a reference held across every reload: its entries stay what they were */
	held = rt_profile_live_acquire(h);
	he = rt_profile_select(held, "mlx5_0", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC);
	assert_non_null(he);
	assert_int_equal(he->inline_threshold, 100);
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, h), 0);
	for (unsigned v = 1; v <= RELOADS; v++) {
		publish(path, v, "node-a", "0123456789abcdef0123456789abcdef");
		assert_int_equal(rt_profile_reload(h, &changed, &err), 0);
		assert_true(changed);
	}
	atomic_store(&g_stop, 1);
	for (int i = 0; i < READERS; i++)
		pthread_join(t[i], NULL);
	printf("%lu reads by %d threads during %d reloads, %lu torn\n", atomic_load(&g_reads), READERS, RELOADS,
	       atomic_load(&g_torn));
	assert_int_equal(atomic_load(&g_torn), 0);
	assert_true(atomic_load(&g_reads) > 0);
	assert_int_equal(rt_profile_live_generation(h), RELOADS);
	assert_int_equal(he->inline_threshold, 100);
	rt_profile_live_release(h, held);
	/* unchanged: no swap */
	assert_int_equal(rt_profile_reload(h, &changed, &err), 0);
	assert_false(changed);
	/* a republished file that does not load: the error, and the current document stays */
	{
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs("{ not json", f);
		fclose(f);
	}
	assert_int_equal(rt_profile_reload(h, &changed, &err), EINVAL);
	assert_false(changed);
	{
		const struct rt_profile *p = rt_profile_live_acquire(h);
		const struct rt_profile_entry *e =
			rt_profile_select(p, "mlx5_0", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC);

		assert_non_null(e);
		assert_int_equal(e->inline_threshold, 100 + RELOADS % 100);
		rt_profile_live_release(h, p);
	}
	rt_profile_live_close(h);
	unlink(path);
	/* bad arguments */
	assert_int_equal(rt_profile_live_open("/nonexistent/p.json", &h, &err), ENOENT);
	assert_null(h);
	unsetenv("RTUNE_PROFILE");
	assert_int_equal(rt_profile_live_open(NULL, &h, &err), ENOENT);
	assert_int_equal(rt_profile_live_open("x", NULL, &err), EINVAL);
	rt_profile_live_close(NULL);
}

/* This node's identity, as the store reads it. */
static void local(char *mid, size_t mid_len, char *host, size_t host_len)
{
	FILE *f = fopen("/etc/machine-id", "re");

	mid[0] = '\0';
	if (f) {
		if (fgets(mid, (int)mid_len, f))
			mid[strcspn(mid, "\r\n")] = '\0';
		fclose(f);
	}
	assert_int_equal(gethostname(host, host_len), 0);
}

static void test_is_for_this_host(void **state)
{
	char path[128], mid[64], host[256];
	struct rt_profile *p;
	struct rt_error err;

	(void)state;
	local(mid, sizeof(mid), host, sizeof(host));
	snprintf(path, sizeof(path), "%s/host.json", g_dir);
	publish(path, 0, host, mid[0] ? mid : "");
	assert_int_equal(rt_profile_load(path, &p, &err), 0);
	assert_true(rt_profile_is_for_this_host(p));
	assert_string_equal(rt_profile_machine_id(p), mid);
	rt_profile_free(p);
	/* another hostname with this machine-id (a clone of one image): not this node */
	publish(path, 0, "some-other-node", mid[0] ? mid : "");
	assert_int_equal(rt_profile_load(path, &p, &err), 0);
	assert_false(rt_profile_is_for_this_host(p));
	rt_profile_free(p);
	/* this hostname, another machine-id */
	publish(path, 0, host, "ffffffffffffffffffffffffffffffff");
	assert_int_equal(rt_profile_load(path, &p, &err), 0);
	assert_false(rt_profile_is_for_this_host(p));
	rt_profile_free(p);
	assert_false(rt_profile_is_for_this_host(NULL));
	unlink(path);
}

static void test_version(void **state)
{
	char want[32];

	(void)state;
	assert_string_equal(rt_version(), RTUNE_VERSION); /* the project's version (CMake) */
	assert_string_equal(rt_version(), RTUNE_VERSION_STRING);
	snprintf(want, sizeof(want), "%d.%d.%d", RTUNE_VERSION_MAJOR, RTUNE_VERSION_MINOR, RTUNE_VERSION_PATCH);
	assert_string_equal(rt_version(), want);
	assert_int_equal(rt_version_number(), RTUNE_VERSION_NUMBER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reload_under_readers),
		cmocka_unit_test(test_is_for_this_host),
		cmocka_unit_test(test_version),
	};
	int rc;

	snprintf(g_dir, sizeof(g_dir), "/tmp/rt-live-XXXXXX");
	if (!mkdtemp(g_dir))
		return 1;
	g_text = slurp(CORPUS_DIR "/valid.json");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(g_text);
	rmdir(g_dir);
	return rc;
}
