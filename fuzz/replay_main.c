// SPDX-License-Identifier: MIT
/*
 * A main() for the fuzz targets when they are built without libFuzzer (gcc, the normal and sanitizer builds): runs
 * LLVMFuzzerTestOneInput once on every file named on the command line, or on every file of a named directory, in
 * name order. This replays the committed corpora and the crash reproducers as ordinary unit tests, so a fix stays
 * fixed in every build. Exit 0 when every input ran, 1 when a file could not be read.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f) {
		perror(path);
		return 1;
	}
	do {
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap ? cap * 2 : 4096);

			if (!nb) {
				fclose(f);
				free(buf);
				fprintf(stderr, "%s: out of memory\n", path);
				return 1;
			}
			buf = nb;
			cap = cap ? cap * 2 : 4096;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	/* an exact-size copy, so that reading past the input is caught by ASan as it would be under libFuzzer */
	{
		uint8_t *exact = malloc(len ? len : 1);

		if (!exact) {
			free(buf);
			return 1;
		}
		memcpy(exact, buf, len);
		free(buf);
		LLVMFuzzerTestOneInput(exact, len);
		free(exact);
	}
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path, unsigned *count)
{
	struct stat sb;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	int rc = 0;
	DIR *d;

	if (stat(path, &sb)) {
		perror(path);
		return 1;
	}
	if (!S_ISDIR(sb.st_mode)) {
		(*count)++;
		return run_file(path);
	}
	d = opendir(path);
	if (!d) {
		perror(path);
		return 1;
	}
	while ((de = readdir(d))) {
		char **nn;

		if (de->d_name[0] == '.')
			continue;
		nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn)
			break;
		names = nn;
		if (asprintf(&names[n], "%s/%s", path, de->d_name) < 0)
			break;
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		(*count)++;
		rc |= run_file(names[i]);
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int rc = 0;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		rc |= run_path(argv[i], &count);
	fprintf(stderr, "%s: %u inputs replayed%s\n", argv[0], count, rc ? ", some unreadable" : "");
	return rc;
}
