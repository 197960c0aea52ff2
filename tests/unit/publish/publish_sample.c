// SPDX-License-Identifier: MIT
/*
 * publish_sample DIR: writes every publishing target of the fixture publication into DIR (rtune.prom, rtune (NFD),
 * ucx.conf, libfabric.env, nccl.conf) through the real rt_agent_publish_* entry points, for the shell tests that
 * hand them to promtool and friends. Exit 0, or 1 with the error on stderr.
 */
#include "pub_fixture.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	struct rt_agent_publish_targets t = { 0 };
	struct rt_error err = { 0 };
	struct pub_fixture f;

	if (argc != 2) {
		fprintf(stderr, "usage: publish_sample DIR\n");
		return 2;
	}
	pub_fixture_init(&f);
	snprintf(t.prom_textfile, sizeof(t.prom_textfile), "%s/rtune.prom", argv[1]);
	snprintf(t.nfd_features, sizeof(t.nfd_features), "%s/rtune", argv[1]);
	snprintf(t.ucx_conf, sizeof(t.ucx_conf), "%s/ucx.conf", argv[1]);
	snprintf(t.libfabric_env, sizeof(t.libfabric_env), "%s/libfabric.env", argv[1]);
	snprintf(t.nccl_env, sizeof(t.nccl_env), "%s/nccl.conf", argv[1]);
	if (rt_agent_publish_prom(&f.pub, &t, &err) || rt_agent_publish_nfd(&f.pub, &t, &err) ||
	    rt_agent_publish_stacks(&f.pub, &t, &err)) {
		fprintf(stderr, "publish_sample: %s\n", err.text);
		return 1;
	}
	return 0;
}
