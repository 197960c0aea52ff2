// SPDX-License-Identifier: MIT
/*
 * Unit tests of the calibration threads' CPU placement (rt_cpuplace_pick, issue 16 item 11) on fake sysfs trees built
 * in a temporary directory: SMT siblings are avoided where two cores exist (POWER-style numbering, where the previous
 * rule -- the last two local CPUs -- put both threads on one core), reported with a warning where they cannot be (a
 * 2-CPU pod of one core), isolated CPUs are preferred, the remote mode measures off the device's node with a local
 * responder, a governor other than "performance" and a shared single CPU are warned about, and a CPU that is not
 * allowed is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_cpuplace.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", text);
	fclose(f);
}

/* A tree of n CPUs: cores of smt threads numbered as "power" (0-3 one core) or "intel" (cpu i and i + n/smt), on
 * `nodes` NUMA nodes of consecutive CPUs, every CPU with governor gov ("" = no cpufreq). */
static void tree(int n, int smt, bool power, int nodes, const char *gov)
{
	char rel[128], sib[64];

	snprintf(root, sizeof(root), "/tmp/rtune-cpuplace-XXXXXX");
	assert_non_null(mkdtemp(root));
	for (int c = 0; c < n; c++) {
		int core = power ? c / smt : c % (n / smt);

		sib[0] = '\0';
		for (int t = 0; t < smt; t++)
			snprintf(sib + strlen(sib), sizeof(sib) - strlen(sib), "%s%d", t ? "," : "",
				 power ? core * smt + t : core + t * (n / smt));
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		put(rel, sib);
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/node%d/cpulist", c, c / (n / nodes));
		put(rel, "");
		if (gov[0]) {
			snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cpufreq/scaling_governor", c);
			put(rel, gov);
		}
	}
}

static void cleanup(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static int pick(const int *allowed, size_t n, struct rt_cpuplace *pl, bool remote, int dev_node, int want)
{
	struct rt_cpuplace_req r = { .sys_root = root,
				     .allowed = allowed,
				     .n_allowed = n,
				     .dev_node = dev_node,
				     .want_cpu = want,
				     .remote = remote,
				     .need_two = true };
	struct rt_error err;

	return rt_cpuplace_pick(&r, pl, &err);
}

static void test_power_numbering_two_cores(void **state)
{
	static const int all[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct rt_cpuplace pl;

	(void)state;
	tree(8, 4, true, 1, "performance"); /* SMT4: cpus 0-3 and 4-7 are one core each */
	assert_int_equal(pick(all, 8, &pl, false, -1, -1), 0);
	/* the previous rule took the last two local cpus, 7 and 6: two threads of one core */
	assert_false(pl.cpu / 4 == pl.resp_cpu / 4);
	assert_false(pl.smt_siblings);
	assert_false(pl.shared);
	assert_true(pl.siblings_known);
	assert_string_equal(pl.governor, "performance");
	assert_string_equal(pl.warning, "");
	cleanup();
}

static void test_one_core_pod_warns(void **state)
{
	static const int pod[] = { 5, 13 }; /* a 2-CPU pod from the static CPU manager: both threads of core 5 */
	struct rt_cpuplace pl;

	(void)state;
	tree(16, 2, false, 1, "");
	assert_int_equal(pick(pod, 2, &pl, false, -1, -1), 0);
	assert_true(pl.smt_siblings);
	assert_non_null(strstr(pl.warning, "SMT siblings"));
	assert_string_equal(pl.governor, "");
	cleanup();
}

static void test_isolated_preferred(void **state)
{
	static const int all[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct rt_cpuplace pl;

	(void)state;
	tree(8, 1, false, 1, "performance");
	put("devices/system/cpu/isolated", "2,5");
	assert_int_equal(pick(all, 8, &pl, false, -1, -1), 0);
	assert_true(pl.cpu_isolated);
	assert_true(pl.resp_isolated);
	assert_true((pl.cpu == 5 && pl.resp_cpu == 2) || (pl.cpu == 2 && pl.resp_cpu == 5));
	/* isolated cpus exist but none is allowed: said so */
	{
		static const int some[] = { 0, 1, 3 };

		assert_int_equal(pick(some, 3, &pl, false, -1, -1), 0);
		assert_false(pl.cpu_isolated);
		assert_non_null(strstr(pl.warning, "not isolated"));
	}
	cleanup();
}

static void test_remote_and_governor(void **state)
{
	static const int all[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	static const int local[] = { 0, 1, 2, 3 };
	struct rt_cpuplace_req r = { .allowed = all,
				     .n_allowed = 8,
				     .local = local,
				     .n_local = 4,
				     .dev_node = 0,
				     .want_cpu = -1,
				     .remote = true,
				     .need_two = true };
	struct rt_cpuplace pl;
	struct rt_error err;

	(void)state;
	tree(8, 1, false, 2, "powersave");
	r.sys_root = root;
	assert_int_equal(rt_cpuplace_pick(&r, &pl, &err), 0);
	assert_true(pl.cpu >= 4);
	assert_int_equal(pl.cpu_node, 1);
	assert_true(pl.resp_cpu < 4); /* the responder stays by the device */
	assert_string_equal(pl.governor, "powersave");
	assert_non_null(strstr(pl.warning, "'powersave' frequency governor"));
	/* no cpu off the device's node */
	r.n_allowed = 4;
	assert_int_equal(rt_cpuplace_pick(&r, &pl, &err), EINVAL);
	assert_non_null(strstr(err.text, "outside the device's NUMA node 0"));
	cleanup();
}

static void test_single_cpu_and_refused(void **state)
{
	static const int one[] = { 3 };
	struct rt_cpuplace pl;

	(void)state;
	tree(4, 1, false, 1, "performance");
	assert_int_equal(pick(one, 1, &pl, false, -1, -1), 0);
	assert_true(pl.shared);
	assert_int_equal(pl.cpu, 3);
	assert_int_equal(pl.resp_cpu, 3);
	assert_non_null(strstr(pl.warning, "share it"));
	assert_int_equal(pick(one, 1, &pl, false, -1, 2), EINVAL);
	assert_int_equal(pick(one, 1, &pl, false, -1, 3), 0);
	assert_int_equal(pl.cpu, 3);
	cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_power_numbering_two_cores), cmocka_unit_test(test_one_core_pod_warns),
		cmocka_unit_test(test_isolated_preferred),	  cmocka_unit_test(test_remote_and_governor),
		cmocka_unit_test(test_single_cpu_and_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
