// SPDX-License-Identifier: MIT
/*
 * The probe in hostile conditions, through the hand-built verbs context of the probe's host tests (fake_verbs.h):
 * one mode per process because the probe reads its environment once. Driven by test_hardening_probe.sh.
 *   faults   every verb the probe wraps fails in the "provider" (open_device, create_qp, create_cq, destroy_qp,
 *            destroy_cq, close_device, post_send with ENOMEM/EINVAL): the probe returns exactly what the real call
 *            returned, errno preserved, records nothing it should not, and an unwritable output file only makes
 *            rt_probe_write_now() return the error (the application is not affected).
 *   secure   run set-user-ID (AT_SECURE): the probe must ignore its environment (no apply mode, no output file
 *            named by the caller) and stay out of the way: argv[2] is a directory that must stay empty; and
 *            librtune's rt_profile_load_env() must not open the file $RTUNE_PROFILE names (a privileged program
 *            would read any file for the caller and could echo parts of it in the parse error).
 *   longenv  RTUNE_PROBE_OUT longer than the probe's path buffer: it must not write to a truncated path
 *            (argv[2] is the directory the truncated name would land in).
 *   bigenv   120 KiB values in every RTUNE_* variable: ignored without crashing (the script bounds stderr).
 * Exit 0 when every check holds, 1 with "FAIL ..." lines otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <rtune/profile.h>

#include "fake_verbs.h"

static int fails;

#define CHECK(cond, ...)                                            \
	do {                                                        \
		if (!(cond)) {                                      \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                        \
			putchar('\n');                              \
			fails++;                                    \
		}                                                   \
	} while (0)

/* ---- failing provider ---------------------------------------------------------------------------------------- */

static int fail_errno;

static struct ibv_context *failing_open(struct ibv_device *dev)
{
	(void)dev;
	errno = ENODEV;
	return NULL;
}

static struct ibv_qp *failing_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	(void)pd;
	(void)attr;
	errno = fail_errno;
	return NULL;
}

static struct ibv_cq *failing_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *ch,
					int vec)
{
	(void)ctx;
	(void)cqe;
	(void)cq_context;
	(void)ch;
	(void)vec;
	errno = ENOMEM;
	return NULL;
}

static int busy_destroy_qp(struct ibv_qp *qp)
{
	(void)qp;
	errno = EBUSY;
	return EBUSY;
}

static int busy_destroy_cq(struct ibv_cq *cq)
{
	(void)cq;
	return EBUSY;
}

static int eio_close(struct ibv_context *ctx)
{
	(void)ctx;
	errno = EIO;
	return EIO;
}

static struct ibv_qp *failing_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	(void)ctx;
	(void)attr;
	errno = EINVAL;
	return NULL;
}

static char *render(void)
{
	char *doc = NULL;
	size_t len = 0;

	if (rt_probe_render_json(false, &doc, &len))
		return NULL;
	return doc;
}

static int post_one(struct ibv_qp *qp, uint32_t bytes, struct ibv_send_wr **bad)
{
	static char buf[4096];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = bytes, .lkey = 1 };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED
	};

	*bad = NULL;
	return ibv_post_send(qp, &wr, bad);
}

static void mode_faults(const char *outdir)
{
	struct rt_probe_config cfg = { .sample_every = 1 };
	struct ibv_context *ctx;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_send_wr *bad;
	char path[4096], *doc;
	int ret;

	/* an output file that cannot be created: a directory that does not exist */
	snprintf(cfg.out_pattern, sizeof(cfg.out_pattern), "%s/missing-dir/probe.%%p.json", outdir);
	rt_probe_configure(&cfg);

	/* open_device fails: NULL and the provider's errno */
	rt_probe_real = (struct rt_probe_real){ .open_device = failing_open };
	errno = 0;
	CHECK(rt_probe_open_device(&fk.dev) == NULL, "open_device failure not passed through");
	CHECK(errno == ENODEV, "open_device errno %d, want ENODEV", errno);

	/* a working device whose creations fail */
	ctx = fake_setup();
	CHECK(ctx != NULL, "fake device did not open");
	if (!ctx)
		return;
	rt_probe_real.create_qp = failing_create_qp;
	rt_probe_real.create_cq = failing_create_cq;
	fail_errno = ENOMEM;
	errno = 0;
	CHECK(fake_rc_qp(64, 0) == NULL && errno == ENOMEM, "create_qp ENOMEM: errno %d", errno);
	fail_errno = EINVAL;
	errno = 0;
	CHECK(fake_rc_qp(64, 0) == NULL && errno == EINVAL, "create_qp EINVAL: errno %d", errno);
	errno = 0;
	CHECK(rt_probe_create_cq(ctx, 16, NULL, NULL, 0) == NULL && errno == ENOMEM, "create_cq: errno %d", errno);
	/* the extended creation path (librdmacm's) fails too */
	fk.vctx.create_qp_ex = failing_create_qp_ex;
	{
		/* with send_ops_flags the inline goes through verbs_context.create_qp_ex, as librdmacm's does */
		struct ibv_qp_init_attr_ex ax = {
			.qp_type = IBV_QPT_RC,
			.pd = &fk.pd,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.send_ops_flags = IBV_QP_EX_WITH_SEND,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 }
		};

		errno = 0;
		CHECK(ibv_create_qp_ex(ctx, &ax) == NULL && errno == EINVAL, "create_qp_ex: errno %d", errno);
	}
	doc = render();
	CHECK(doc && !strstr(doc, "\"qp_num\""), "a QP that was never created is recorded");
	free(doc);

	/* working creation, failing destruction: the app gets the provider's answer and the QP stays known */
	rt_probe_real.create_qp = fake_create_qp;
	rt_probe_real.create_cq = fake_create_cq;
	fk.vctx.create_qp_ex = fake_create_qp_ex;
	qp = fake_rc_qp(64, 0);
	cq = rt_probe_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(qp && cq, "creation after failures");
	if (!qp || !cq)
		return;
	rt_probe_real.destroy_qp = busy_destroy_qp;
	rt_probe_real.destroy_cq = busy_destroy_cq;
	CHECK(rt_probe_destroy_qp(qp) == EBUSY, "destroy_qp EBUSY not returned");
	CHECK(rt_probe_destroy_cq(cq) == EBUSY, "destroy_cq EBUSY not returned");

	/* post_send failing with ENOMEM in the middle of a chain is returned exactly, bad_wr as the provider set it */
	fk.fail_at = 0;
	fk.fail_ret = ENOMEM;
	ret = post_one(qp, 32, &bad);
	CHECK(ret == ENOMEM && bad != NULL && errno == FAKE_ERRNO_MARK, "post_send ENOMEM: ret %d errno %d", ret,
	      errno);
	fk.fail_ret = EINVAL;
	ret = post_one(qp, 32, &bad);
	CHECK(ret == EINVAL && bad != NULL, "post_send EINVAL: ret %d", ret);
	fk.fail_at = -1;
	ret = post_one(qp, 32, &bad);
	CHECK(ret == 0 && errno == FAKE_ERRNO_MARK, "post_send after failures: ret %d", ret);

	/* the output cannot be written: an error for the caller, never for the application */
	errno = 4711;
	ret = rt_probe_write_now(false, path, sizeof(path));
	CHECK(ret == ENOENT, "write to a missing directory returned %d, want ENOENT", ret);
	CHECK(errno == 4711, "rt_probe_write_now changed errno to %d", errno);

	/* close_device failing: returned as is */
	rt_probe_real.destroy_qp = fake_destroy_qp;
	rt_probe_real.destroy_cq = fake_destroy_cq;
	CHECK(rt_probe_destroy_qp(qp) == 0, "destroy_qp");
	CHECK(rt_probe_destroy_cq(cq) == 0, "destroy_cq");
	rt_probe_real.close_device = eio_close;
	CHECK(rt_probe_close_device(ctx) == EIO, "close_device EIO not returned");
}

static unsigned dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	unsigned n = 0;

	if (!d)
		return 9999;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/* A process with verbs activity: one QP, one 32-byte send (apply mode with threshold 64 would inline it). */
static void activity(void)
{
	struct ibv_send_wr *bad;
	struct ibv_qp *qp;

	if (!fake_setup() || !(qp = fake_rc_qp(64, 0))) {
		CHECK(0, "fake device");
		return;
	}
	fk.n_log = 0;
	CHECK(post_one(qp, 32, &bad) == 0, "post_send");
	CHECK(fk.n_log == 1, "the send did not reach the provider");
	if (fk.n_log == 1)
		CHECK(!(fk.log_flags[0] & IBV_SEND_INLINE) || !getauxval(AT_SECURE),
		      "set-user-ID process: the probe applied RTUNE_INLINE_THRESHOLD from the caller's environment");
}

static void mode_secure(const char *dir)
{
	struct rt_profile *p = NULL;
	struct rt_error err;
	int rc;

	CHECK(getauxval(AT_SECURE) != 0, "not running with AT_SECURE (run this mode set-user-ID as another user)");
	CHECK(getenv("RTUNE_PROFILE") != NULL, "test set-up: RTUNE_PROFILE unset");
	rc = rt_profile_load_env(&p, &err);
	CHECK(rc == ENOENT, "set-user-ID process: librtune loaded $RTUNE_PROFILE (rc %d: %s)", rc,
	      rc ? err.text : "ok");
	rt_profile_free(p);
	activity();
	rt_probe_fini();
	CHECK(dir_entries(dir) == 0, "set-user-ID process: the probe wrote a file named by RTUNE_PROBE_OUT into %s",
	      dir);
}

static void mode_longenv(const char *dir)
{
	char victim[4200];

	activity();
	CHECK(rt_probe_write_now(true, NULL, 0) != 0, "an over-long RTUNE_PROBE_OUT was written somewhere");
	rt_probe_fini();
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	CHECK(access(victim, F_OK) != 0, "RTUNE_PROBE_OUT was truncated and '%s' was written instead", victim);
}

static void mode_bigenv(void)
{
	activity();
	CHECK(fk.n_log != 1 || !(fk.log_flags[0] & IBV_SEND_INLINE), "a garbage RTUNE_INLINE_THRESHOLD was applied");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s faults|secure|longenv|bigenv [DIR]\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "faults") && argc == 3)
		mode_faults(argv[2]);
	else if (!strcmp(argv[1], "secure") && argc == 3)
		mode_secure(argv[2]);
	else if (!strcmp(argv[1], "longenv") && argc == 3)
		mode_longenv(argv[2]);
	else if (!strcmp(argv[1], "bigenv"))
		mode_bigenv();
	else
		return 2;
	printf("%s: %s\n", argv[1], fails ? "FAILED" : "ok");
	return fails ? 1 : 0;
}
