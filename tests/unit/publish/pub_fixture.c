// SPDX-License-Identifier: MIT
/* The publication fixture of pub_fixture.h. */
#include "pub_fixture.h"

#include <stdio.h>
#include <string.h>

static struct rt_agent_decision *add(struct pub_fixture *f, const char *dev, int port, enum rt_profile_opcode op,
				     uint32_t thr, uint32_t n)
{
	struct rt_agent_decision *d = &f->d[f->pub.n_decisions++];

	memset(d, 0, sizeof(*d));
	snprintf(d->device, sizeof(d->device), "%s", dev);
	snprintf(d->guid, sizeof(d->guid), "0011:2233:4455:6677");
	d->port = port;
	d->opcode = op;
	d->qp_type = RT_PROFILE_QPT_RC;
	d->inline_threshold = thr;
	d->max_inline_data = thr > 64 ? thr : 64;
	d->signal_interval = n;
	d->sq_depth = 128;
	d->cq_depth = 256;
	d->confidence = d->inline_confidence = d->signal_confidence = RT_PROFILE_CONF_HIGH;
	snprintf(d->inline_verdict, sizeof(d->inline_verdict), "threshold");
	snprintf(d->signal_verdict, sizeof(d->signal_verdict), "knee");
	snprintf(d->run_id, sizeof(d->run_id), "6f1c1b52-7a7e-4c5e-9a59-0c3f6ef0a001");
	d->measured_at = 1764590400 - 3600;
	d->age_s = 3600;
	snprintf(d->hw_class, sizeof(d->hw_class), "mellanox:mt4123:20.31.1014");
	d->numa_node = 0;
	d->last_cal_result = RT_AGENT_CAL_OK;
	d->last_cal_duration_s = 18.25;
	d->last_cal_at = 1764590400 - 3500;
	snprintf(d->change, sizeof(d->change), "first");
	snprintf(d->change_reason, sizeof(d->change_reason), "first sight of the port");
	return d;
}

/* What the Prometheus target reads of the published document: the load bands of mlx5_0's send entry and a skip (the
 * rest of a profile document is irrelevant to it). */
static const char fixture_doc[] =
	"{\"entries\": [{\"device\": \"mlx5_0\", \"port\": 1, \"opcode\": \"send\", \"qp_type\": \"rc\", \"app\": null,"
	" \"bands\": [{\"kind\": \"large\", \"post_list\": 1, \"msg_bytes_lo\": 4096, \"msg_bytes_hi\": 65536,"
	" \"signal_interval\": 64, \"verdict\": \"indifferent\", \"confidence\": \"high\"},"
	" {\"kind\": \"post_list\", \"post_list\": 8, \"msg_bytes_lo\": 64, \"msg_bytes_hi\": 64,"
	" \"signal_interval\": 32, \"verdict\": null, \"confidence\": null}]}],"
	" \"skipped\": [{\"device\": \"mlx5_0\", \"port\": 1, \"what\": \"cq moderation\", \"kind\": \"cq_moderation\","
	" \"opcode\": null, \"qp_type\": null, \"reason\": \"ibv_modify_cq refused it\", \"run_id\": null}]}";

void pub_fixture_init(struct pub_fixture *f)
{
	struct rt_agent_decision *d;

	memset(f, 0, sizeof(*f));
	snprintf(f->pub.hostname, sizeof(f->pub.hostname), "node-07");
	snprintf(f->pub.machine_id, sizeof(f->pub.machine_id), "0123456789abcdef0123456789abcdef");
	snprintf(f->pub.node_key, sizeof(f->pub.node_key), "0123456789abcdef0123456789abcdef/node-07");
	snprintf(f->pub.hw_signature, sizeof(f->pub.hw_signature), "fnv1a64:9f86d081884c7d65");
	snprintf(f->pub.cpu_model, sizeof(f->pub.cpu_model), "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
	snprintf(f->pub.rtune_version, sizeof(f->pub.rtune_version), "0.1.0");
	f->pub.generated_at = 1764590400;
	f->pub.profile_json = fixture_doc;
	f->pub.profile_json_len = strlen(fixture_doc);
	f->pub.decisions = f->d;
	/* mlx5_0: send 256 B / N 16, write 128 B with a pinned N of 8 */
	add(f, "mlx5_0", 1, RT_PROFILE_OP_SEND, 256, 16);
	d = add(f, "mlx5_0", 1, RT_PROFILE_OP_WRITE, 128, 8);
	d->pinned_signal = true;
	snprintf(d->signal_verdict, sizeof(d->signal_verdict), "pinned");
	/* an application's own entry: not a label, not a stack setting */
	d = add(f, "mlx5_0", 1, RT_PROFILE_OP_SEND, 512, 32);
	snprintf(d->app, sizeof(d->app), "redis-rdma");
	snprintf(d->change, sizeof(d->change), "app_histogram");
	/* a second device: the signal interval does not matter there, the inline threshold is low confidence, its
	 * last calibration failed; its name needs escaping in Prometheus */
	d = add(f, "rxe\"0\\x", 1, RT_PROFILE_OP_SEND, 0, 1);
	snprintf(d->signal_verdict, sizeof(d->signal_verdict), "indifferent");
	snprintf(d->inline_verdict, sizeof(d->inline_verdict), "never");
	d->inline_confidence = d->confidence = RT_PROFILE_CONF_LOW;
	d->last_cal_result = RT_AGENT_CAL_FAILED;
	snprintf(d->hw_class, sizeof(d->hw_class), "rxe:soft-roce:0");
	d->numa_node = -1;
}
