// SPDX-License-Identifier: MIT
/*
 * Unit tests of the shared helpers: the message-size bucket scheme (every size lands in the bucket whose bounds contain
 * it, buckets tile the range without gaps, 8 sub-buckets per power of two), enum names round-trip, rt_error formatting,
 * the ordered parallel map (every item produced and consumed once, in order, never more than a window ahead), and the
 * output writer's API (an aborted or failed output leaves the old file and no temporary; a commit replaces it whole;
 * a FIFO gets the bytes in place; the file types it refuses; the command-level cases are tests/unit/cli/test_output.sh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include <rtune/error.h>
#include "rt_hist.h"
#include "rt_model.h"
#include "rt_buf.h"
#include "rt_out.h"
#include "rt_pool.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void test_hist_bounds_contain(void **state)
{
	(void)state;
	/* every size up to 1 MiB, then a stride up to 2^32-1 */
	for (uint64_t v = 0; v <= UINT32_MAX; v = v < (1u << 20) ? v + 1 : v * 3 / 2 + 7) {
		unsigned b = rt_hist_bucket((uint32_t)v);
		assert_true(b < RT_HIST_BUCKETS);
		assert_true(rt_hist_bucket_lo(b) <= v);
		assert_true(rt_hist_bucket_hi(b) >= v);
	}
	assert_int_equal(rt_hist_bucket(UINT32_MAX), RT_HIST_BUCKETS - 1);
	assert_int_equal(rt_hist_bucket_hi(RT_HIST_BUCKETS - 1), UINT32_MAX);
}

static void test_hist_tiles(void **state)
{
	(void)state;
	assert_int_equal(rt_hist_bucket_lo(0), 0);
	for (unsigned b = 1; b < RT_HIST_BUCKETS; b++)
		assert_int_equal(rt_hist_bucket_lo(b), rt_hist_bucket_hi(b - 1) + 1);
	/* 8 buckets between 64 and 127, the first at 64 and each 8 wide */
	assert_int_equal(rt_hist_bucket(127) - rt_hist_bucket(64), 7);
	assert_int_equal(rt_hist_bucket_hi(rt_hist_bucket(64)), 71);
	assert_int_equal(rt_hist_bucket(7), 7);
	assert_int_equal(rt_hist_bucket(8), 8);
}

static void test_names(void **state)
{
	enum rt_opcode op;
	enum rt_qp_type qpt;
	enum rt_lat_kind kind;
	enum rt_run_status st;

	(void)state;
	assert_int_equal(rt_opcode_parse(rt_opcode_name(RT_OP_WRITE), &op), 0);
	assert_int_equal(op, RT_OP_WRITE);
	assert_int_equal(rt_qp_type_parse("ud", &qpt), 0);
	assert_int_equal(qpt, RT_QPT_UD);
	assert_int_equal(rt_lat_kind_parse("post_cqe", &kind), 0);
	assert_int_equal(kind, RT_LAT_POST_CQE);
	assert_int_equal(rt_run_status_parse("interrupted", &st), 0);
	assert_int_equal(st, RT_RUN_INTERRUPTED);
	assert_int_equal(rt_opcode_parse("read", &op), EINVAL);
	assert_int_equal(rt_opcode_parse(NULL, &op), EINVAL);
	assert_string_equal(rt_opcode_name((enum rt_opcode)7), "unknown");
}

static void test_error(void **state)
{
	struct rt_error err;
	char big[600];

	(void)state;
	assert_int_equal(rt_error_set(&err, ENOENT, "cannot open '%s'", "/x"), ENOENT);
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(err.text, "cannot open '/x'");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	rt_error_set(&err, EINVAL, "%s", big);
	assert_int_equal(strlen(err.text), RT_ERROR_TEXT_LEN - 1);
	rt_error_clear(&err);
	assert_int_equal(err.code, 0);
	assert_string_equal(err.text, "");
	assert_int_equal(rt_error_set(NULL, EIO, "x"), EIO);
}

struct pool_check {
	size_t n, window;
	int *produced;			 /* times each item was produced */
	size_t next_consume;		 /* next index consume() expects */
	size_t in_flight, max_in_flight; /* produced and not yet consumed */
	pthread_mutex_t mu;
	int out_of_order;
	int scratch_misuse;	  /* a scratch seen on a thread other than its own */
	size_t scratch_items;	  /* items counted by the scratches released */
	unsigned scratches_freed; /* scratches released */
	pthread_t caller;	  /* the thread that called rt_pool_ordered() */
	size_t caller_items;	  /* items produced on it */
	bool slow_workers;	  /* items produced off the calling thread take 200 us */
};

/* One producing thread's scratch: whose it is and how many items it served. */
struct pc_scratch {
	struct pool_check *c;
	pthread_t owner;
	size_t items;
};

static void pc_scratch_free(void *scratch)
{
	struct pc_scratch *s = scratch;

	if (!s)
		return;
	pthread_mutex_lock(&s->c->mu);
	s->c->scratch_items += s->items;
	s->c->scratches_freed++;
	pthread_mutex_unlock(&s->c->mu);
	free(s);
}

static void *pc_produce(void *ctx, void **scratch, size_t i)
{
	struct pool_check *c = ctx;
	struct pc_scratch *s = *scratch;
	size_t *r = malloc(sizeof(*r));

	if (!s && (s = calloc(1, sizeof(*s)))) {
		s->c = c;
		s->owner = pthread_self();
		*scratch = s;
	}
	if (s) {
		if (!pthread_equal(s->owner, pthread_self())) {
			pthread_mutex_lock(&c->mu);
			c->scratch_misuse++;
			pthread_mutex_unlock(&c->mu);
		}
		s->items++;
	}

	if (i % 7 == 0 || (c->slow_workers && !pthread_equal(c->caller, pthread_self()))) {
		/* uneven work, so later items often finish first */
		struct timespec ts = { 0, c->slow_workers ? 200000 : 20000 };

		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&c->mu);
	if (pthread_equal(c->caller, pthread_self()))
		c->caller_items++;
	c->produced[i]++;
	if (++c->in_flight > c->max_in_flight)
		c->max_in_flight = c->in_flight;
	pthread_mutex_unlock(&c->mu);
	if (r)
		*r = i * 3 + 1;
	return r;
}

static void pc_consume(void *ctx, size_t i, void *result)
{
	struct pool_check *c = ctx;
	size_t *r = result;

	pthread_mutex_lock(&c->mu);
	c->in_flight--;
	pthread_mutex_unlock(&c->mu);
	if (i != c->next_consume || !r || *r != i * 3 + 1)
		c->out_of_order++;
	c->next_consume = i + 1;
	free(r);
}

/* Runs the pool and checks its contract; returns how many items the calling thread produced itself. */
static size_t run_pool_as(size_t n, unsigned workers, size_t window, bool slow_workers)
{
	struct pool_check c = { .n = n, .window = window, .slow_workers = slow_workers, .caller = pthread_self() };

	c.produced = calloc(n ? n : 1, sizeof(*c.produced));
	assert_non_null(c.produced);
	pthread_mutex_init(&c.mu, NULL);
	assert_int_equal(rt_pool_ordered(n, workers, window, pc_produce, pc_consume, pc_scratch_free, &c), 0);
	assert_int_equal(c.out_of_order, 0);
	/* every thread's scratch stayed its own and was released once: together they served every item */
	assert_int_equal(c.scratch_misuse, 0);
	assert_int_equal(c.scratch_items, n);
	assert_true(c.scratches_freed <= workers + 1);
	assert_true(n == 0 || c.scratches_freed >= 1);
	assert_int_equal(c.next_consume, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(c.produced[i], 1);
	assert_int_equal(c.in_flight, 0);
	if (workers && n > 1)
		/* workers claim an item only while the consumer is less than a window behind (+1: the item being
		 * consumed has freed its slot before consume() runs) */
		assert_true(c.max_in_flight <= (window ? window : 64u * workers) + 1);
	else
		assert_true(c.max_in_flight <= 1);
	pthread_mutex_destroy(&c.mu);
	free(c.produced);
	return c.caller_items;
}

static void run_pool(size_t n, unsigned workers, size_t window)
{
	run_pool_as(n, workers, window, false);
}

static void test_pool_ordered(void **state)
{
	(void)state;
	run_pool(0, 4, 0);
	run_pool(1, 4, 0);
	run_pool(1000, 0, 0); /* on the calling thread */
	run_pool(1000, 1, 1); /* one worker, lock-step */
	run_pool(5000, 3, 4); /* a window much smaller than the work: workers wait for room */
	run_pool(5000, 8, 0);
	/* a worker far slower than the consumer: the calling thread produces rather than waits. It sleeps only when
	 * every item within its window is claimed, so with one worker holding one item at a time it makes most of
	 * them (a pool whose consumer only waits makes none: this fails). */
	assert_true(run_pool_as(200, 1, 8, true) >= 100);
	/* the calling thread is one of the CPUs: one worker fewer than CPUs (none on one CPU), at most max */
	{
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		assert_true(rt_pool_workers(8) <= 8);
		assert_int_equal(rt_pool_workers(1000), cpus > 1 ? (unsigned)(cpus - 1) : 0);
		assert_true(rt_pool_workers(0) == 0);
	}
}

static void test_array_reserve(void **state)
{
	int *v = NULL, *nv;
	size_t n = 0, cap = 0;

	(void)state;
	for (int i = 0; i < 1000; i++) {
		nv = rt_array_reserve(v, n, &cap, sizeof(*v));
		assert_non_null(nv);
		v = nv;
		assert_true(cap > n);
		v[n++] = i;
	}
	for (int i = 0; i < 1000; i++)
		assert_int_equal(v[i], i); /* growth kept every element */
	assert_int_equal(cap, 1024);
	/* a size that would overflow is refused, the array and cap left as they were */
	{
		size_t big = SIZE_MAX / 2 + 1, was = big;

		assert_null(rt_array_reserve(v, big, &big, 4));
		assert_int_equal(big, was);
	}
	free(v);
}

/* Files in dir whose name starts with '.' (the writer's temporaries), "." and ".." aside. */
static int hidden_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] == '.' && strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}

static void slurp_eq(const char *path, const char *want)
{
	char buf[256] = "";
	int fd = open(path, O_RDONLY | O_NONBLOCK);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void test_out(void **state)
{
	char dir[] = "/tmp/rt_out_test.XXXXXX", path[128], fifo[128];
	struct rt_error err;
	struct rt_out o;
	struct stat sb;
	int rfd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/file", dir);
	assert_int_equal(rt_out_write_file(path, "old", 3, 0640, &err), 0);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
	/* written, then abandoned: the old file, no temporary */
	assert_int_equal(rt_out_open(path, 0644, &o, &err), 0);
	assert_true(o.atomic);
	assert_int_equal(rt_out_write(&o, "new", 3, &err), 0);
	assert_int_equal(hidden_in(dir), 1);
	rt_out_abort(&o);
	slurp_eq(path, "old");
	assert_int_equal(hidden_in(dir), 0);
	/* a write that failed makes the commit fail: the old file, no temporary */
	assert_int_equal(rt_out_open(path, 0644, &o, &err), 0);
	o.failed = true;
	o.write_errno = ENOSPC;
	assert_int_equal(rt_out_commit(&o, &err), ENOSPC);
	assert_non_null(strstr(err.text, "cannot write '"));
	slurp_eq(path, "old");
	assert_int_equal(hidden_in(dir), 0);
	/* committed: replaced whole, its mode kept */
	assert_int_equal(rt_out_open(path, 0600, &o, &err), 0);
	assert_int_equal(rt_out_write(&o, "ne", 2, &err), 0);
	assert_int_equal(rt_out_write(&o, "w!", 2, &err), 0);
	assert_int_equal(rt_out_commit(&o, &err), 0);
	slurp_eq(path, "new!");
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0640);
	/* a FIFO with a reader: written in place, still a FIFO */
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	rfd = open(fifo, O_RDONLY | O_NONBLOCK);
	assert_true(rfd >= 0);
	assert_int_equal(rt_out_write_file(fifo, "piped", 5, 0644, &err), 0);
	{
		char buf[16] = "";

		assert_int_equal(read(rfd, buf, sizeof(buf)), 5);
		assert_memory_equal(buf, "piped", 5);
	}
	close(rfd);
	assert_int_equal(lstat(fifo, &sb), 0);
	assert_true(S_ISFIFO(sb.st_mode));
	/* refused: a directory, an empty name, a path in a missing directory (nothing created) */
	assert_int_equal(rt_out_write_file(dir, "x", 1, 0644, &err), EISDIR);
	assert_non_null(strstr(err.text, "is a directory"));
	assert_int_equal(rt_out_write_file("", "x", 1, 0644, &err), EINVAL);
	snprintf(path, sizeof(path), "%s/no/such", dir);
	assert_int_equal(rt_out_write_file(path, "x", 1, 0644, &err), ENOENT);
	assert_int_equal(hidden_in(dir), 0);
	snprintf(path, sizeof(path), "%s/file", dir);
	unlink(path);
	unlink(fifo);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hist_bounds_contain),
		cmocka_unit_test(test_hist_tiles),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_error),
		cmocka_unit_test(test_pool_ordered),
		cmocka_unit_test(test_array_reserve),
		cmocka_unit_test(test_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
