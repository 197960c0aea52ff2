// SPDX-License-Identifier: MIT
/*
 * Unit tests of librtune as applications link it (the shared library): the malformed and hostile JSON corpus under
 * corpus/ (each file's expected errno and error text in corpus/MANIFEST), selection by device name and GUID,
 * rt_should_inline at its boundaries, $RTUNE_PROFILE, and the safe-send bookkeeping against a model of a send queue
 * with selective signaling (random completion timing: never more WRs posted than the queue holds, never a wait on a
 * queue with no signaled WR outstanding).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rtune/profile.h>

#ifndef CORPUS_DIR
#error CORPUS_DIR must be defined
#endif

static int errno_of(const char *name)
{
	if (!strcmp(name, "0"))
		return 0;
	if (!strcmp(name, "EINVAL"))
		return EINVAL;
	if (!strcmp(name, "ENOTSUP"))
		return ENOTSUP;
	if (!strcmp(name, "EFBIG"))
		return EFBIG;
	fail_msg("unknown errno name %s in MANIFEST", name);
	return -1;
}

static void test_corpus(void **state)
{
	char line[1024], path[2048];
	FILE *m = fopen(CORPUS_DIR "/MANIFEST", "r");
	int checked = 0, refused = 0;

	(void)state;
	assert_non_null(m);
	while (fgets(line, sizeof(line), m)) {
		char *file, *code, *sub;
		struct rt_profile *p = (struct rt_profile *)0x1;
		struct rt_error err = { 0, "" };
		int rc, want;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = '\0';
		file = strtok(line, "\t");
		code = strtok(NULL, "\t");
		sub = strtok(NULL, "\t");
		assert_non_null(file);
		assert_non_null(code);
		want = errno_of(code);
		snprintf(path, sizeof(path), "%s/%s", CORPUS_DIR, file);
		rc = rt_profile_load(path, &p, &err);
		if (rc != want)
			fail_msg("%s: got %d (%s), want %s", file, rc, err.text, code);
		if (want) {
			assert_null(p);
			assert_int_equal(err.code, want);
			assert_non_null(sub);
			if (!strstr(err.text, sub))
				fail_msg("%s: error '%s' lacks '%s'", file, err.text, sub);
			/* the message names the file, is one line, and has no trailing newline */
			assert_non_null(strstr(err.text, file));
			assert_null(strchr(err.text, '\n'));
			refused++;
		} else {
			assert_non_null(p);
			assert_true(rt_profile_entry_count(p) >= 2);
			rt_profile_free(p);
		}
		checked++;
	}
	fclose(m);
	assert_true(checked >= 30);
	assert_true(refused >= 27);
}

static void test_select_and_getters(void **state)
{
	struct rt_profile *p = NULL;
	struct rt_error err;
	const struct rt_profile_entry *e, *w;

	(void)state;
	assert_int_equal(rt_profile_load(CORPUS_DIR "/valid.json", &p, &err), 0);
	assert_string_equal(rt_profile_hostname(p), "node-a");
	assert_string_equal(rt_profile_hw_signature(p), "fnv1a64:0123456789abcdef");
	assert_int_equal(rt_profile_schema_minor(p), 0);
	e = rt_profile_select(p, "mlx5_0", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC);
	assert_non_null(e);
	assert_int_equal(rt_profile_inline_threshold(e), 188);
	assert_int_equal(rt_profile_max_inline_data(e), 220);
	assert_int_equal(rt_profile_signal_interval(e), 16);
	assert_int_equal(rt_profile_sq_depth(e), 256);
	assert_int_equal(rt_profile_cq_depth(e), 512);
	assert_int_equal(rt_profile_confidence(e), RT_PROFILE_CONF_HIGH);
	assert_true(e->cq_moderation);
	assert_int_equal(e->cq_mod_count, 16);
	assert_int_equal(e->cq_mod_period_us, 8);
	assert_string_equal(e->reasons[0].code, "crossover");
	assert_int_equal(e->measured_at, 1795957200); /* 2026-11-29T13:00:00Z */
	/* by GUID, case-insensitively */
	assert_ptr_equal(rt_profile_select(p, "0011:2233:4455:6677", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC), e);
	assert_ptr_equal(rt_profile_select(p, "0011:2233:4455:6677", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC), e);
	w = rt_profile_select(p, "mlx5_0", 1, RT_PROFILE_OP_WRITE, RT_PROFILE_QPT_RC);
	assert_non_null(w);
	assert_false(w->cq_moderation);
	assert_string_equal(w->app, "kvstore");
	assert_string_equal(w->rtune_version, "0.1.0"); /* inherited from the document */
	/* no entry: wrong port, qp type, device */
	errno = 0;
	assert_null(rt_profile_select(p, "mlx5_0", 2, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC));
	assert_int_equal(errno, ENOENT);
	assert_null(rt_profile_select(p, "mlx5_0", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_UD));
	assert_null(rt_profile_select(p, "mlx5_1", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC));
	assert_null(rt_profile_select(p, NULL, 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_RC));

	/* the fast-path decision at its boundaries; threshold 0 never inlines, not even 0-byte messages */
	assert_true(rt_should_inline(e, 0));
	assert_true(rt_should_inline(e, 1));
	assert_true(rt_should_inline(e, 188));
	assert_false(rt_should_inline(e, 189));
	assert_false(rt_should_inline(e, UINT32_MAX));
	assert_false(rt_should_inline(w, 0));
	assert_false(rt_should_inline(w, 1));
	assert_null(rt_profile_entry_at(p, 2));
	rt_profile_free(p);
	rt_profile_free(NULL);
}

/* EFA's SRD QP type: an entry of qp_type "srd" loads and is found by RT_PROFILE_QPT_SRD (not by UD), its name
 * round-trips, and a type librtune does not know is refused naming the field. */
static void test_select_srd(void **state)
{
	static const char fmt[] =
		"{\"schema\": {\"name\": \"rtune-profile\", \"version\": \"1.4\"}, \"rtune_version\": \"0.1.0\","
		" \"node\": {\"hostname\": \"n\"}, \"entries\": [{\"device\": \"efa0\", \"port\": 1,"
		" \"opcode\": \"send\", \"qp_type\": \"%s\", \"inline_threshold\": 32, \"max_inline_data\": 32,"
		" \"signal_interval\": 16, \"sq_depth\": 128, \"cq_depth\": 128, \"confidence\": \"medium\","
		" \"measured_at\": \"2026-11-29T13:00:00Z\", \"run_id\": \"6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab\"}]}";
	char doc[1024];
	struct rt_profile *p = NULL;
	const struct rt_profile_entry *e;
	struct rt_error err;

	(void)state;
	snprintf(doc, sizeof(doc), fmt, "srd");
	assert_int_equal(rt_profile_parse(doc, strlen(doc), &p, &err), 0);
	e = rt_profile_select(p, "efa0", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_SRD);
	assert_non_null(e);
	assert_int_equal(e->qp_type, RT_PROFILE_QPT_SRD);
	assert_int_equal(rt_profile_inline_threshold(e), 32);
	assert_int_equal(rt_profile_signal_interval(e), 16);
	assert_string_equal(rt_profile_qp_type_name(e->qp_type), "srd");
	assert_null(rt_profile_select(p, "efa0", 1, RT_PROFILE_OP_SEND, RT_PROFILE_QPT_UD));
	rt_profile_free(p);
	p = NULL;
	snprintf(doc, sizeof(doc), fmt, "xrc");
	assert_int_equal(rt_profile_parse(doc, strlen(doc), &p, &err), EINVAL);
	assert_non_null(strstr(err.text, "qp_type"));
	assert_non_null(strstr(err.text, "rc, ud or srd"));
	assert_null(p);
}

static void test_load_env_and_bad_paths(void **state)
{
	struct rt_profile *p = NULL;
	struct rt_error err;

	(void)state;
	unsetenv("RTUNE_PROFILE");
	assert_int_equal(rt_profile_load_env(&p, &err), ENOENT);
	if (access(RT_PROFILE_DEFAULT_PATH, F_OK) != 0) /* no agent-published profile on this machine */
		assert_string_equal(
			err.text, "RTUNE_PROFILE is not set and there is no profile at '" RT_PROFILE_DEFAULT_PATH "'");
	setenv("RTUNE_PROFILE", CORPUS_DIR "/valid.json", 1);
	assert_int_equal(rt_profile_load_env(&p, &err), 0);
	assert_int_equal(rt_profile_entry_count(p), 2);
	rt_profile_free(p);
	setenv("RTUNE_PROFILE", CORPUS_DIR "/does-not-exist.json", 1);
	assert_int_equal(rt_profile_load_env(&p, &err), ENOENT);
	assert_non_null(strstr(err.text, "cannot open profile '"));
	assert_null(p);
	assert_int_equal(rt_profile_load(CORPUS_DIR, &p, &err), EINVAL); /* a directory */
	assert_non_null(strstr(err.text, "not a regular file"));
	assert_int_equal(rt_profile_load("/dev/zero", &p, &err), EINVAL);
	{
		char fifo[] = "/tmp/rtune-fifo-XXXXXX";
		int fd = mkstemp(fifo);

		assert_true(fd >= 0);
		close(fd);
		unlink(fifo);
		assert_int_equal(mkfifo(fifo, 0600), 0);
		assert_int_equal(rt_profile_load(fifo, &p, &err), EINVAL); /* refused, not blocked on */
		unlink(fifo);
	}
	assert_int_equal(rt_profile_load(CORPUS_DIR "/valid.json", &p, NULL), 0); /* err may be NULL */
	rt_profile_free(p);
	assert_int_equal(rt_profile_parse("{", 1, &p, NULL), EINVAL);
	unsetenv("RTUNE_PROFILE");
}

/* A memory buffer of hostile shapes built in the test (not in the corpus: too large to commit). */
static void test_hostile_in_memory(void **state)
{
	struct rt_profile *p = NULL;
	struct rt_error err;
	size_t n = 20u << 20;
	char *big = malloc(n);

	(void)state;
	assert_non_null(big);
	memset(big, ' ', n);
	assert_int_equal(rt_profile_parse(big, n, &p, &err), EFBIG);
	/* deep nesting alternating objects and arrays, and a long string full of quotes and escapes */
	memset(big, 0, n);
	for (size_t i = 0; i < 50000; i++) {
		static const char level[6] = { '{', '"', 'a', '"', ':', '[' }; /* bytes, no terminator */

		memcpy(big + i * 6, level, sizeof(level));
	}
	assert_int_equal(rt_profile_parse(big, 300000, &p, &err), EINVAL);
	assert_non_null(strstr(err.text, "maximum parsing depth reached"));
	snprintf(big, n, "{\"schema\":{\"name\":\"rtune-profile\",\"version\":\"1.0\"},\"x\":\"%s\"", "\\\"[[[[[{{{{");
	assert_int_equal(rt_profile_parse(big, strlen(big), &p, &err), EINVAL);
	assert_non_null(strstr(err.text, "line 1"));
	free(big);
}

/* ---- the safe-send helper ---------------------------------------------------------------------------------------- */

static void test_sendq_basics(void **state)
{
	struct rt_sendq q;

	(void)state;
	assert_int_equal(rt_sendq_init(&q, 0, 1), EINVAL);
	assert_int_equal(rt_sendq_init(&q, 8, 0), EINVAL);
	assert_int_equal(rt_sendq_init(&q, 8, 9), 0); /* adapted to the queue: N = 4 */
	assert_int_equal(rt_sendq_interval(&q), 4);
	rt_sendq_fini(&q);
	assert_int_equal(rt_sendq_init(&q, 8, 4), 0);
	/* WRs 1-3 unsignaled, the 4th signaled, and so on */
	for (int i = 1; i <= 8; i++) {
		assert_false(rt_sendq_must_poll(&q));
		assert_int_equal(rt_sendq_should_signal(&q), i % 4 == 0);
		if (i % 4 == 0)
			assert_int_equal(rt_sendq_posted(&q, false),
					 EINVAL); /* skipping a required signal is refused */
		assert_int_equal(rt_sendq_posted(&q, i % 4 == 0), 0);
	}
	assert_true(rt_sendq_must_poll(&q));
	assert_int_equal(rt_sendq_posted(&q, true), ENOSPC);
	assert_int_equal(rt_sendq_outstanding(&q), 8);
	assert_int_equal(rt_sendq_signaled_pending(&q), 2);
	assert_int_equal(rt_sendq_completed(&q, 3), EINVAL);
	assert_int_equal(rt_sendq_completed(&q, 1), 0);
	assert_false(rt_sendq_must_poll(&q));
	assert_int_equal(rt_sendq_outstanding(&q), 4);
	/* an extra voluntary signal (e.g. last WR of a burst) retires just its own short batch */
	assert_int_equal(rt_sendq_posted(&q, true), 0);
	assert_int_equal(rt_sendq_completed(&q, 2), 0);
	assert_int_equal(rt_sendq_outstanding(&q), 0);
	assert_int_equal(rt_sendq_signaled_pending(&q), 0);
	rt_sendq_fini(&q);
	rt_sendq_fini(&q);
	rt_sendq_fini(NULL);
}

/* Random posting and completion timing against an exact model of the hardware queue. */
static void test_sendq_model(void **state)
{
	static const uint32_t shapes[][2] = { { 1, 1 },	 { 2, 1 },    { 7, 3 },	  { 16, 16 },
					      { 64, 8 }, { 100, 33 }, { 256, 64 } };
	unsigned seed = 12345;

	(void)state;
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
		uint32_t depth = shapes[s][0], interval = shapes[s][1];
		/* the model: a FIFO of posted WRs, 1 = signaled; the "NIC" completes a prefix of it at random */
		unsigned char *fifo = calloc(depth + 1, 1);
		uint32_t head = 0, len = 0, cqes = 0, posted = 0, max_len = 0;
		struct rt_sendq q;

		assert_non_null(fifo);
		assert_int_equal(rt_sendq_init(&q, depth, interval), 0);
		for (int step = 0; step < 200000; step++) {
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 16) % 3 == 0 && len) {
				/* the device finishes the oldest WR; a signaled one produces a CQE */
				if (fifo[head])
					cqes++;
				head = (head + 1) % (depth + 1);
				len--;
			}
			if ((seed >> 20) % 4 == 0 && cqes) {
				/* the app polls some of the CQEs available */
				uint32_t n = 1 + (seed >> 8) % cqes;

				assert_int_equal(rt_sendq_completed(&q, n), 0);
				cqes -= n;
			}
			if (rt_sendq_must_poll(&q)) {
				/* the app must now wait for a CQE: there must be a signaled WR in flight or already done */
				assert_true(rt_sendq_signaled_pending(&q) > 0);
				continue;
			}
			{
				bool sig = rt_sendq_should_signal(&q) || (seed >> 24) % 17 == 0;

				assert_int_equal(rt_sendq_posted(&q, sig), 0);
				assert_true(len < depth); /* the real queue had room: ibv_post_send would not ENOMEM */
				fifo[(head + len) % (depth + 1)] = sig;
				len++;
				posted++;
				if (len > max_len)
					max_len = len;
			}
			/* the helper is conservative: what it counts outstanding covers everything in the device */
			assert_true(rt_sendq_outstanding(&q) >= len);
		}
		assert_true(posted > 10000);
		assert_int_equal(max_len, depth); /* the queue is really used to its depth */
		rt_sendq_fini(&q);
		free(fifo);
	}
}

/* Schema 1.2: each decision's confidence and evidence are read; a 1.1 document without them still loads, both
 * confidences then being its one confidence; a bad value in a new field is refused naming it. */
static void test_decision_confidence(void **state)
{
	static const char head[] =
		"{\"schema\": {\"name\": \"rtune-profile\", \"version\": \"%s\"}, \"rtune_version\": \"0.1.0\","
		" \"node\": {\"hostname\": \"n\"}, \"entries\": [{\"device\": \"mlx5_0\", \"port\": 1,"
		" \"opcode\": \"send\", \"qp_type\": \"ud\", \"inline_threshold\": 64, \"max_inline_data\": 64,"
		" \"signal_interval\": 1, \"sq_depth\": 128, \"cq_depth\": 128, \"confidence\": \"low\", %s"
		" \"measured_at\": \"2026-11-29T13:00:00Z\", \"run_id\": \"6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab\"}]}";
	char doc[2048];
	struct rt_profile *p = NULL;
	const struct rt_profile_entry *e;
	struct rt_error err;

	(void)state;
	snprintf(doc, sizeof(doc), head, "1.2",
		 "\"inline_confidence\": \"high\", \"signal_confidence\": \"low\", \"evidence\": {\"inline\":"
		 " {\"runs\": 3, \"since_run\": \"00000000-1111-2222-3333-444444444444\"}, \"signal\": null},");
	assert_int_equal(rt_profile_parse(doc, strlen(doc), &p, &err), 0);
	assert_int_equal(rt_profile_schema_minor(p), 2);
	e = rt_profile_entry_at(p, 0);
	assert_int_equal(rt_profile_confidence(e), RT_PROFILE_CONF_LOW);
	assert_int_equal(rt_profile_inline_confidence(e), RT_PROFILE_CONF_HIGH);
	assert_int_equal(rt_profile_signal_confidence(e), RT_PROFILE_CONF_LOW);
	assert_int_equal(e->inline_runs, 3);
	assert_string_equal(e->inline_since, "00000000-1111-2222-3333-444444444444");
	assert_int_equal(e->signal_runs, 1);
	assert_string_equal(e->signal_since, "");
	rt_profile_free(p);

	/* an older document: both confidences are its confidence, one run each */
	snprintf(doc, sizeof(doc), head, "1.1", "");
	assert_int_equal(rt_profile_parse(doc, strlen(doc), &p, &err), 0);
	e = rt_profile_entry_at(p, 0);
	assert_int_equal(rt_profile_inline_confidence(e), RT_PROFILE_CONF_LOW);
	assert_int_equal(rt_profile_signal_confidence(e), RT_PROFILE_CONF_LOW);
	assert_int_equal(e->inline_runs, 1);
	rt_profile_free(p);

	snprintf(doc, sizeof(doc), head, "1.2", "\"signal_confidence\": \"sure\",");
	assert_int_equal(rt_profile_parse(doc, strlen(doc), &p, &err), EINVAL);
	assert_non_null(strstr(err.text, "entries[0].signal_confidence: 'sure' is not low, medium or high"));
	snprintf(doc, sizeof(doc), head, "1.2", "\"evidence\": {\"inline\": {\"runs\": 0}},");
	assert_int_equal(rt_profile_parse(doc, strlen(doc), &p, &err), EINVAL);
	assert_non_null(strstr(err.text, "entries[0].evidence.inline.runs"));
	snprintf(doc, sizeof(doc), head, "1.2", "\"evidence\": {\"signal\": {\"since_run\": \"yesterday\"}},");
	assert_int_equal(rt_profile_parse(doc, strlen(doc), &p, &err), EINVAL);
	assert_non_null(strstr(err.text, "since_run 'yesterday' is not a uuid"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_select_and_getters),
		cmocka_unit_test(test_select_srd),
		cmocka_unit_test(test_decision_confidence),
		cmocka_unit_test(test_load_env_and_bad_paths),
		cmocka_unit_test(test_hostile_in_memory),
		cmocka_unit_test(test_sendq_basics),
		cmocka_unit_test(test_sendq_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
