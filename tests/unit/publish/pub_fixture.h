/* SPDX-License-Identifier: MIT */
/*
 * A publication as the agent would hand it to the targets: two devices (one port each), generic send/write RC
 * entries, one application entry, one pinned value, one flat-curve verdict, one low-confidence entry, a device name
 * that needs escaping. Shared by the unit tests and the publish_sample tool the shell tests run.
 */
#ifndef RT_PUB_FIXTURE_H
#define RT_PUB_FIXTURE_H

#include "publish.h"

#define PUB_FIXTURE_MAX 8

struct pub_fixture {
	struct rt_agent_publication pub;
	struct rt_agent_decision d[PUB_FIXTURE_MAX];
};

/* Fills f with the fixture (generated_at 1764590400 = 2025-12-01T12:00:00Z). */
void pub_fixture_init(struct pub_fixture *f);

#endif
