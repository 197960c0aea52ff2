// SPDX-License-Identifier: MIT
/*
 * libFuzzer target comparing librtune's two profile readers (the single-pass rt_profile_scan used by rt_profile_parse
 * and the report, and its jansson reference): on any input both accept or both refuse, name the same field in the
 * same words when the input is valid JSON, and fill the same profile; else abort (a crash libFuzzer keeps).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[512];

	if (rt_profile_diff((const char *)data, size, why, sizeof(why)) == RT_PDIFF_DISAGREE) {
		fprintf(stderr, "fuzz_profile_scan: the readers disagree: %s\n", why);
		abort();
	}
	return 0;
}
