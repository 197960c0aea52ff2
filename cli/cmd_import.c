// SPDX-License-Identifier: MIT
/*
 * `rtune import FILE|DIR|-...`: adds JSON profiles written by `rtune export` on other nodes to the store, as those
 * nodes' profiles: files, every *.json of a directory (sorted by name), or the documents on standard input (one or
 * more, one after another: `ssh node rtune export | rtune import -`). Idempotent: entries already present (same node
 * and run id) are skipped. A bad file or document is reported and the others are still imported.
 */
#include "cli.h"
#include "rt_pool.h"
#include "rt_store.h"
#include "rt_json_arena.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IMPORT_BATCH 500

static const char usage[] =
	"usage: rtune import [--db PATH] [-q] FILE|DIR|-...\n"
	"\n"
	"Import JSON profiles (schema rtune-profile 1.x, from 'rtune export') of other nodes into the store.\n"
	"Importing the same profile again changes nothing (entries are keyed by node and run id).\n"
	"\n"
	"  FILE            a profile document\n"
	"  DIR             every *.json directly in DIR, in name order (not its subdirectories)\n"
	"  -               standard input: one or more documents one after another, each imported on its own\n"
	"                  (ssh node rtune export | rtune import -)\n"
	"  --db PATH       store to write (default: $RTUNE_DB, else /var/lib/rtune/rtune.db as root,\n"
	"                  else $XDG_STATE_HOME/rtune/rtune.db, i.e. ~/.local/state/rtune/rtune.db)\n"
	"  -q, --quiet     print errors only\n"
	"  -h, --help      this text\n"
	"\n"
	"exit codes: 0 everything imported, 1 a file, document or the store failed, 2 usage\n";

struct import_out {
	bool quiet;
	int rc;
};

/* Prints the fate of files: "imported ..." for each committed file (unless quiet), one error line for a failed file,
 * one line for a batch whose commit failed (naming how many files it held and the first). */
static void told(void *ctx, const struct rt_import_result *res, size_t n)
{
	struct import_out *o = ctx;

	if (res[0].rc) {
		o->rc = RT_EXIT_FAIL;
		if (n == 1)
			rt_cli_error("%s", res[0].err.text);
		else
			rt_cli_error("%s; not stored: %zu files from '%s' on", res[0].err.text, n, res[0].path);
		return;
	}
	for (size_t i = 0; i < n && !o->quiet; i++)
		printf("imported '%s': %zu entr%s added, %zu already present\n", res[i].path, res[i].added,
		       res[i].added == 1 ? "y" : "ies", res[i].skipped);
}

struct path_list {
	char **v;
	size_t n, cap;
};

/* Appends p (malloc'd, now owned by the list; freed here when it cannot be added); returns 0 or ENOMEM. */
static int push_path(struct path_list *l, char *p)
{
	if (!p)
		return ENOMEM;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			free(p);
			return ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = p;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds every regular *.json file directly in dir, sorted by name. Returns 0, or 1 after printing why (none, or the
 * directory cannot be read), or ENOMEM. */
static int add_dir(struct path_list *l, const char *dir)
{
	size_t first = l->n;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d) {
		rt_cli_error("cannot read directory '%s': %s", dir, strerror(errno));
		return 1;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct stat st;
		char *p;

		if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		if (asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", de->d_name) < 0) {
			closedir(d);
			return ENOMEM;
		}
		if (stat(p, &st) || !S_ISREG(st.st_mode)) {
			free(p);
			continue;
		}
		if (push_path(l, p)) {
			closedir(d);
			return ENOMEM;
		}
	}
	closedir(d);
	if (l->n == first) {
		rt_cli_error("no *.json profile in directory '%s'", dir);
		return 1;
	}
	qsort(l->v + first, l->n - first, sizeof(*l->v), cmp_str);
	return 0;
}

/* Imports the documents on standard input, one after another (whitespace between them). A document that does not
 * parse ends the stream (what follows it cannot be delimited): it is reported, the ones before it stay imported. */
static void import_stdin(struct rt_store *st, struct import_out *out)
{
	char *buf = NULL, name[64];
	size_t len = 0, cap = 0, off = 0;
	int docs = 0;

	for (;;) {
		size_t n;

		if (cap - len < 65536) {
			char *nb = realloc(buf, cap ? 2 * cap : 1 << 20);

			if (!nb) {
				rt_cli_error("cannot read standard input: out of memory");
				out->rc = RT_EXIT_FAIL;
				free(buf);
				return;
			}
			buf = nb;
			cap = cap ? 2 * cap : 1 << 20;
		}
		n = fread(buf + len, 1, cap - len, stdin);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(stdin)) {
		rt_cli_error("cannot read standard input: %s", strerror(errno));
		out->rc = RT_EXIT_FAIL;
		free(buf);
		return;
	}
	for (;;) {
		struct rt_import_result res = { .path = name };
		json_error_t je;
		json_t *doc;
		size_t doc_len;

		while (off < len && strchr(" \t\r\n", buf[off]))
			off++;
		if (off == len)
			break;
		docs++;
		snprintf(name, sizeof(name), docs == 1 ? "standard input" : "standard input, document %d", docs);
		doc = rt_json_loadb(buf + off, len - off, JSON_DISABLE_EOF_CHECK, &je);
		doc_len = doc ? (size_t)je.position : len - off;
		json_decref(doc);
		res.rc = rt_store_import_text(st, name, buf + off, doc_len, &res.added, &res.skipped, &res.err);
		told(out, &res, 1);
		if (!doc)
			break;
		off += doc_len;
	}
	if (!docs) {
		rt_cli_error("standard input holds no profile");
		out->rc = RT_EXIT_FAIL;
	}
	free(buf);
}

int cmd_import(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *db = NULL;
	struct rt_store *st = NULL;
	struct rt_error err;
	struct import_out out = { false, RT_EXIT_OK };
	struct path_list files = { 0 };
	bool from_stdin = false;
	int c;

	while ((c = rt_cli_getopt("import", argc, argv, "qh", opts)) != -1) {
		switch (c) {
		case 'D': db = optarg; break;
		case 'q': out.quiet = true; break;
		case 'h': fputs(usage, stdout); return RT_EXIT_OK;
		default: return RT_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return rt_cli_usage_error("import", "no profile file given");
	for (int i = optind; i < argc; i++) {
		struct stat sb;
		int rc;

		if (strcmp(argv[i], "-") == 0) {
			if (from_stdin) {
				out.rc = rt_cli_usage_error("import", "'-' (standard input) given twice");
				goto done;
			}
			from_stdin = true;
			continue;
		}
		rc = stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode) ? add_dir(&files, argv[i])
								    : push_path(&files, strdup(argv[i]));
		if (rc == ENOMEM) {
			rt_cli_error("out of memory");
			out.rc = RT_EXIT_FAIL;
			goto done;
		}
		if (rc)
			out.rc = RT_EXIT_FAIL;
	}
	if (rt_store_open(db, &st, &err)) {
		rt_cli_error("%s", err.text);
		out.rc = RT_EXIT_FAIL;
		goto done;
	}
	/* files are read and parsed on worker threads while this one writes them in order, one transaction per
	 * IMPORT_BATCH files (each file still all-or-nothing); a file is reported as imported only once its batch is
	 * committed, and a failure commits the batch at once so that what it held is told exactly */
	if (files.n)
		rt_store_import_files(st, (const char *const *)files.v, files.n, rt_pool_workers(8), IMPORT_BATCH, told,
				      &out);
	if (from_stdin)
		import_stdin(st, &out);
	rt_store_close(st);
done:
	for (size_t i = 0; i < files.n; i++)
		free(files.v[i]);
	free(files.v);
	return out.rc;
}
