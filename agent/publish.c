// SPDX-License-Identifier: MIT
/*
 * The publication dispatcher: calls every enabled target (a non-empty path in the configuration) in a fixed order,
 * logs each failure as one line and goes on with the others. The Prometheus, NFD and stacks targets are built from
 * publish_prom.c, publish_nfd.c and publish_stacks.c (library rtune_publish, agent/publish/).
 */
#include "agent_log.h"
#include "config.h"
#include "publish.h"

#include <string.h>

const char *rt_agent_cal_result_name(enum rt_agent_cal_result r)
{
	static const char *const names[] = { "none", "ok", "failed", "interrupted", "busy" };

	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "unknown";
}

int rt_agent_publish_all(const struct rt_agent_publication *pub, const struct rt_agent_config *cfg,
			 struct rt_error *err)
{
	const struct rt_agent_publish_targets *t = &cfg->publish;
	struct {
		const char *name;
		bool on;
		int (*fn)(const struct rt_agent_publication *, const struct rt_agent_publish_targets *,
			  struct rt_error *);
	} targets[] = {
		{ "profile", t->profile[0] != '\0', rt_agent_publish_profile },
		{ "prometheus", t->prom_textfile[0] != '\0', rt_agent_publish_prom },
		{ "nfd", t->nfd_features[0] != '\0', rt_agent_publish_nfd },
		{ "stacks", t->ucx_conf[0] || t->libfabric_env[0] || t->nccl_env[0], rt_agent_publish_stacks },
	};
	int first = 0;

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		struct rt_error e = { 0 };
		int rc;

		if (!targets[i].on)
			continue;
		if ((rc = targets[i].fn(pub, t, &e))) {
			rt_agent_log(RT_LOG_ERR, "publish %s: %s", targets[i].name, e.text);
			if (!first) {
				first = rc;
				rt_error_set(err, rc, "%s", e.text);
			}
		}
	}
	return first;
}
