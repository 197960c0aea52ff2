// SPDX-License-Identifier: MIT
/*
 * The JSON profile target: writes the publication's profile document, as is, to the configured path (by default
 * RT_PROFILE_DEFAULT_PATH, where librtune's rt_profile_load_env() looks), atomically through rt_out (dot file, fsync,
 * rename), mode 0644 so every application can read it. The document is validated with librtune's own parser first:
 * a document librtune would refuse is never published.
 */
#include "agent_log.h"
#include "publish.h"
#include "rt_out.h"

#include <errno.h>

int rt_agent_publish_profile(const struct rt_agent_publication *pub, const struct rt_agent_publish_targets *t,
			     struct rt_error *err)
{
	struct rt_profile *p = NULL;
	int rc;

	if (!t->profile[0])
		return 0;
	if ((rc = rt_profile_parse(pub->profile_json, pub->profile_json_len, &p, err)))
		return rc;
	rt_profile_free(p);
	if (t->dry_run) {
		rt_agent_log(RT_LOG_INFO, "dry run: would write profile '%s' (%zu entries, %zu bytes)", t->profile,
			     pub->n_decisions, pub->profile_json_len);
		return 0;
	}
	return rt_out_write_file(t->profile, pub->profile_json, pub->profile_json_len, 0644, err);
}
