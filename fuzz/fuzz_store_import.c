// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the store's import path: rt_store_import_text() of arbitrary bytes into a scratch SQLite store
 * in a private temporary directory, in batch mode (a savepoint per document, flushed every FLUSH_EVERY inputs: many
 * documents in one transaction, as `rtune import` writes them). Every RESET_EVERY inputs the store is checked with
 * PRAGMA integrity_check (a failure aborts: the fuzzer records it as a crash), closed, deleted and created anew so it
 * stays small. A document the store imports must also load through librtune's rt_profile_parse() (else abort).
 * Nothing is written outside the temporary directory, which is removed at exit.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_store.h"

#define FLUSH_EVERY 64
#define RESET_EVERY 2048

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[4096], db[4200];
static struct rt_store *st;
static unsigned n_inputs;

static void remove_store(void)
{
	char p[4300];

	unlink(db);
	snprintf(p, sizeof(p), "%s-wal", db);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", db);
	unlink(p);
}

static void open_store(void)
{
	struct rt_error err;

	remove_store();
	if (rt_store_open(db, &st, &err) || rt_store_batch(st, true, &err)) {
		fprintf(stderr, "fuzz_store_import: %s\n", err.text);
		abort();
	}
}

static void close_store(void)
{
	struct rt_error err;

	if (!st)
		return;
	if (rt_store_batch(st, false, &err) || rt_store_check(st, &err)) {
		fprintf(stderr, "fuzz_store_import: store damaged: %s\n", err.text);
		abort();
	}
	rt_store_close(st);
	st = NULL;
}

static void cleanup(void)
{
	close_store();
	remove_store();
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/rtune-fuzz-import.XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		abort();
	}
	snprintf(db, sizeof(db), "%s/fuzz.db", dir);
	open_store();
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rt_error err;
	size_t added = 0, skipped = 0;
	int rc;

	rc = rt_store_import_text(st, "fuzz-input", (const char *)data, size, &added, &skipped, &err);
	if (rc == 0) {
		/* what the store accepts, applications must be able to load: import validates as librtune does */
		struct rt_profile *p = NULL;

		if (rt_profile_parse((const char *)data, size, &p, &err)) {
			fprintf(stderr, "fuzz_store_import: imported a document librtune refuses: %s\n", err.text);
			abort();
		}
		rt_profile_free(p);
	}
	if (++n_inputs % FLUSH_EVERY == 0 && rt_store_batch_flush(st, &err)) {
		fprintf(stderr, "fuzz_store_import: flush: %s\n", err.text);
		abort();
	}
	if (n_inputs % RESET_EVERY == 0) {
		close_store();
		open_store();
	}
	return 0;
}
