/* SPDX-License-Identifier: MIT */
/*
 * The signaling interval per load band of a calibration run (large messages, post lists, concurrency: run->band_rate),
 * decided by the tuner once per band on that band's points alone, so the small-message decision never sees them.
 */
#ifndef RT_CALIBRATE_BANDS_H
#define RT_CALIBRATE_BANDS_H

#include <stdio.h>

#include <rtune/error.h>
#include "rt_model.h"
#include "rt_store.h"

/*
 * Runs the tuner once per band present in run->band_rate and returns one record per (band, opcode, QP type) whose
 * signaling was measured in *out (malloc'd, free(); *n 0 when the run has no band points). Returns 0, or ENOMEM /
 * the tuner's error with err.
 */
int rt_cli_tune_bands(const struct rt_run *run, struct rt_store_signal_band **out, size_t *n, struct rt_error *err);

/* Prints one line per band record ("signaling, large messages 4096-65536 B: write/rc N = 16 (knee, high)",
 * "signaling, concurrency 4 qps x 2 threads (64 B): ..."). */
void rt_cli_print_bands(FILE *f, const struct rt_store_signal_band *b, size_t n);

/* The post-list batch of an application's median post call from its histogram, 0 when not recorded (cmd_tune.c: the
 * batch `tune --app` raises N to; `calibrate --app` sizes its post-list band with it). */
uint32_t rt_cli_median_batch(const struct rt_store_histogram *h);

#endif
