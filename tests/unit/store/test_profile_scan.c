// SPDX-License-Identifier: MIT
/*
 * librtune's single-pass profile reader against its jansson reference (issue 19): both readers over the committed
 * corpora (tests/unit/store/corpus, fuzz/corpus/profile) and over 200,000 deterministic mutations of them (bytes
 * flipped, spans deleted and copied, numbers, strings and keys replaced with edge cases) must agree on acceptance, on
 * the error text of every document that is valid JSON, and on every field of what they accept; plus the cases the
 * single-pass design makes delicate (the document's rtune_version after its entries, the first error in the
 * reference's order, reasons past the kept eight, the report's extras).
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "profile_diff.h"
#include "profile_scan.h"

struct doc {
	char *p;
	size_t len;
};

static struct doc seeds[256];
static size_t n_seeds;

static void load_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)) && n_seeds < sizeof(seeds) / sizeof(seeds[0])) {
		char path[4096];
		FILE *f;
		long n;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "MANIFEST"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		assert_non_null(f);
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		fseek(f, 0, SEEK_SET);
		seeds[n_seeds].p = malloc((size_t)n + 1);
		assert_non_null(seeds[n_seeds].p);
		seeds[n_seeds].len = fread(seeds[n_seeds].p, 1, (size_t)n, f);
		fclose(f);
		n_seeds++;
	}
	closedir(d);
}

static int setup(void **state)
{
	(void)state;
	load_dir(STORE_CORPUS);
	load_dir(FUZZ_CORPUS);
	return n_seeds >= 100 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < n_seeds; i++)
		free(seeds[i].p);
	return 0;
}

static void expect_agree(const char *doc, size_t len, enum rt_pdiff_outcome *out)
{
	char why[512];
	enum rt_pdiff_outcome o = rt_profile_diff(doc, len, why, sizeof(why));

	if (o == RT_PDIFF_DISAGREE) {
		/* kept for a look (and for fuzz/corpus/profile once the cause is fixed) */
		FILE *f = fopen("test_profile_scan.disagree.json", "wb");

		if (f) {
			fwrite(doc, 1, len, f);
			fclose(f);
		}
		fail_msg("readers disagree on '%.*s': %s", (int)(len > 600 ? 600 : len), doc, why);
	}
	if (out)
		*out = o;
}

/* Every committed document: same outcome (and the corpus has both accepted and refused ones). */
static void test_corpora_agree(void **state)
{
	size_t n[4] = { 0 };

	(void)state;
	for (size_t i = 0; i < n_seeds; i++) {
		enum rt_pdiff_outcome o;

		expect_agree(seeds[i].p, seeds[i].len, &o);
		n[o]++;
	}
	print_message("corpora: %zu documents, %zu accepted, %zu refused as JSON, %zu refused for a field\n", n_seeds,
		      n[RT_PDIFF_BOTH_ACCEPT], n[RT_PDIFF_BOTH_REFUSE_JSON], n[RT_PDIFF_BOTH_REFUSE_FIELD]);
	assert_true(n[RT_PDIFF_BOTH_ACCEPT] >= 5);
	assert_true(n[RT_PDIFF_BOTH_REFUSE_JSON] >= 5);
	assert_true(n[RT_PDIFF_BOTH_REFUSE_FIELD] >= 20);
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t pick(size_t n)
{
	return n ? (size_t)(next_rand() % n) : 0;
}

static const char *const numbers[] = { "0",
				       "-0",
				       "1",
				       "-1",
				       "16.0",
				       "16.5",
				       "1e2",
				       "1E400",
				       "-1e400",
				       "1e-400",
				       "65536",
				       "65537",
				       "255",
				       "256",
				       "4294967295",
				       "4294967296",
				       "9223372036854775807",
				       "9223372036854775808",
				       "-9223372036854775808",
				       "-9223372036854775809",
				       "9e15",
				       "9.5e15",
				       "1.0e0",
				       "01",
				       "1.",
				       ".5",
				       "-",
				       "2.0",
				       "1048576",
				       "1048577",
				       "4095",
				       "4096" };
static const char *const strings[] = { "\"\"",
				       "\"x\"",
				       "\"\\u0000\"",
				       "\"\\ud800\"",
				       "\"\\udc00\"",
				       "\"\\ud83d\\ude00\"",
				       "\"\\u00e9\\n\\t\\/\\\\\\\"\"",
				       "\"\xc3\xa9\"",
				       "\"\xff\"",
				       "\"\xed\xa0\x80\"",
				       "\"\xf4\x90\x80\x80\"",
				       "\"\xc0\xaf\"",
				       "\"send\"",
				       "\"write\"",
				       "\"ud\"",
				       "\"high\"",
				       "\"medium\"",
				       "\"large\"",
				       "\"post_list\"",
				       "\"pingpong\"",
				       "\"2026-01-02T03:04:05Z\"",
				       "\"12345678-1234-1234-1234-123456789abc\"",
				       "\"1.9\"",
				       "\"2.0\"",
				       "\"rtune-profile\"",
				       "null",
				       "true",
				       "false",
				       "{}",
				       "[]",
				       "[{}]",
				       "{\"a\":1,\"a\":2}",
				       "[[[[[[[[[[]]]]]]]]]]" };
static const char *const keys[] = {
	"device",     "port",	       "opcode",       "qp_type",    "signal_interval",	  "sq_depth",
	"cq_depth",   "reasons",       "bands",	       "skipped",    "evidence",	  "measured",
	"inline",     "since_run",     "runs",	       "run_id",     "entries",		  "group",
	"node_count", "rtune_version", "schema",       "version",    "cq_moderation",	  "numa_node",
	"hostname",   "kind",	       "msg_bytes_lo", "confidence", "inline_confidence", "cpus"
};

/* Replaces [at, at + n) of d (len bytes, cap room) with the m bytes of r; the new length (unchanged when no room). */
static size_t splice(char *d, size_t len, size_t cap, size_t at, size_t n, const char *r, size_t m)
{
	if (at > len || n > len - at || len - n + m > cap)
		return len;
	memmove(d + at + m, d + at + n, len - at - n);
	memcpy(d + at, r, m);
	return len - n + m;
}

/* The extent of the token at i (a string with its quotes, a number, a word), or 1 byte. */
static size_t token_len(const char *d, size_t len, size_t i)
{
	size_t j = i;

	if (d[i] == '"') {
		for (j = i + 1; j < len && d[j] != '"'; j++)
			if (d[j] == '\\')
				j++;
		return j < len ? j - i + 1 : 1;
	}
	while (j < len && (strchr("-+.eE", d[j]) || (d[j] >= '0' && d[j] <= '9') || (d[j] >= 'a' && d[j] <= 'z')))
		j++;
	return j > i ? j - i : 1;
}

/* One mutation of d in place; the new length. */
static size_t mutate(char *d, size_t len, size_t cap)
{
	size_t at = pick(len), n;
	char buf[256];

	switch (pick(9)) {
	case 0: /* a byte flipped */
		if (len)
			d[at] = (char)(d[at] ^ (1u << pick(8)));
		return len;
	case 1: { /* a structural byte */
		static const char s[] = "{}[],:\"\\ 0-.eEu";

		if (len)
			d[at] = s[pick(sizeof(s) - 1)];
		return len;
	}
	case 2: /* a span deleted */ return splice(d, len, cap, at, pick(len - at < 40 ? len - at + 1 : 40), "", 0);
	case 3: /* a span copied elsewhere (duplicate keys, members, elements) */
		n = pick(len - at < 120 ? len - at + 1 : 120);
		if (n > sizeof(buf))
			n = sizeof(buf);
		memcpy(buf, d + at, n);
		return splice(d, len, cap, pick(len), 0, buf, n);
	case 4: /* a number replaced */
	case 5:
		for (size_t k = 0; k < len; k++, at = (at + 1) % len)
			if ((d[at] >= '0' && d[at] <= '9') && (!at || !strchr("0123456789.-eE", d[at - 1]))) {
				const char *r = numbers[pick(sizeof(numbers) / sizeof(numbers[0]))];

				return splice(d, len, cap, at, token_len(d, len, at), r, strlen(r));
			}
		return len;
	case 6: /* a value replaced: after a ':' */
		for (size_t k = 0; k < len; k++, at = (at + 1) % len)
			if (d[at] == ':') {
				const char *r = strings[pick(sizeof(strings) / sizeof(strings[0]))];
				size_t v = at + 1;

				while (v < len && d[v] == ' ')
					v++;
				if (v < len && (d[v] == '{' || d[v] == '['))
					return len;
				return splice(d, len, cap, v, v < len ? token_len(d, len, v) : 0, r, strlen(r));
			}
		return len;
	case 7: /* a key renamed to another the profile defines */
		for (size_t k = 0; k < len; k++, at = (at + 1) % len)
			if (d[at] == '"' && at + 1 < len) {
				size_t tl = token_len(d, len, at);

				if (at + tl < len && d[at + tl] == ':') {
					snprintf(buf, sizeof(buf), "\"%s\"",
						 keys[pick(sizeof(keys) / sizeof(keys[0]))]);
					return splice(d, len, cap, at, tl, buf, strlen(buf));
				}
			}
		return len;
	default: /* a member inserted after a '{' */
		for (size_t k = 0; k < len; k++, at = (at + 1) % len)
			if (d[at] == '{') {
				snprintf(buf, sizeof(buf), "\"%s\":%s,", keys[pick(sizeof(keys) / sizeof(keys[0]))],
					 pick(2) ? numbers[pick(sizeof(numbers) / sizeof(numbers[0]))]
						 : strings[pick(sizeof(strings) / sizeof(strings[0]))]);
				return splice(d, len, cap, at + 1, 0, buf, strlen(buf));
			}
		return len;
	}
}

/* 200,000 mutated documents (1-3 mutations each, from every seed): no disagreement, and every outcome occurs. */
static void test_mutations_agree(void **state)
{
	size_t n[4] = { 0 }, cap = 1 << 20;
	char *d = malloc(cap);

	(void)state;
	assert_non_null(d);
	for (int round = 0; round < 200000; round++) {
		const struct doc *s = &seeds[(size_t)round % n_seeds];
		size_t len = s->len < cap ? s->len : cap;
		int muts = 1 + (int)pick(3);
		enum rt_pdiff_outcome o;

		memcpy(d, s->p, len);
		for (int k = 0; k < muts; k++)
			len = mutate(d, len, cap);
		expect_agree(d, len, &o);
		n[o]++;
	}
	print_message("mutations: %zu accepted, %zu refused as JSON, %zu refused for a field\n",
		      n[RT_PDIFF_BOTH_ACCEPT], n[RT_PDIFF_BOTH_REFUSE_JSON], n[RT_PDIFF_BOTH_REFUSE_FIELD]);
	assert_true(n[RT_PDIFF_BOTH_ACCEPT] >= 2000);
	assert_true(n[RT_PDIFF_BOTH_REFUSE_JSON] >= 20000);
	assert_true(n[RT_PDIFF_BOTH_REFUSE_FIELD] >= 20000);
	free(d);
}

#define ENTRY(extra)                                                                                                \
	"{\"device\":\"mlx5_0\",\"port\":1,\"opcode\":\"send\",\"qp_type\":\"rc\",\"inline_threshold\":64,"         \
	"\"max_inline_data\":220,\"signal_interval\":16,\"sq_depth\":256,\"cq_depth\":256,\"confidence\":\"high\"," \
	"\"measured_at\":\"2026-01-02T03:04:05Z\",\"run_id\":\"12345678-1234-1234-1234-123456789abc\"" extra "}"
#define DOC(head, entries, tail)                                                                               \
	"{" head "\"schema\":{\"name\":\"rtune-profile\",\"version\":\"1.4\"},\"node\":{\"hostname\":\"n1\"}," \
	"\"entries\":[" entries "]" tail "}"

/* The document's rtune_version written after the entries still reaches an entry without its own. */
static void test_rtune_version_after_entries(void **state)
{
	static const char doc[] =
		DOC("", ENTRY("") "," ENTRY(",\"rtune_version\":\"0.9\""), ",\"rtune_version\":\"1.2.3\"");
	struct rt_profile *p;
	struct rt_error err;

	(void)state;
	expect_agree(doc, sizeof(doc) - 1, NULL);
	assert_int_equal(rt_profile_scan(doc, sizeof(doc) - 1, NULL, &p, NULL, &err), 0);
	assert_string_equal(rt_profile_entry_at(p, 0)->rtune_version, "1.2.3");
	assert_string_equal(rt_profile_entry_at(p, 1)->rtune_version, "0.9");
	rt_profile_free(p);
}

/* Two errors: the one the reference checks first is named, wherever it stands in the text; a syntax error after a
 * field error is reported as the syntax error (jansson parses before it validates). */
static void test_first_error_in_reference_order(void **state)
{
	/* an invalid entry before a missing document rtune_version: the rtune_version is named */
	static const char a[] = DOC("", ENTRY(",\"numa_node\":5000"), "");
	/* entry 0's bands come after its own fields: a bad band is named only when the entry is valid */
	static const char b[] =
		DOC("\"rtune_version\":\"1\",", ENTRY(",\"bands\":[{\"kind\":\"huge\"}],\"numa_node\":5000"), "");
	static const char c[] = DOC("\"rtune_version\":\"1\",", ENTRY(",\"numa_node\":5000"), ",\"x\":[1,]");
	struct rt_profile *p;
	struct rt_error err;

	(void)state;
	expect_agree(a, sizeof(a) - 1, NULL);
	assert_int_equal(rt_profile_scan(a, sizeof(a) - 1, NULL, &p, NULL, &err), EINVAL);
	assert_string_equal(err.text, "profile: document.rtune_version: missing");
	expect_agree(b, sizeof(b) - 1, NULL);
	assert_int_equal(rt_profile_scan(b, sizeof(b) - 1, NULL, &p, NULL, &err), EINVAL);
	assert_string_equal(err.text, "profile: entries[0].numa_node: 5000 is out of range -1..4095");
	expect_agree(c, sizeof(c) - 1, NULL);
	assert_int_equal(rt_profile_scan(c, sizeof(c) - 1, NULL, &p, NULL, &err), EINVAL);
	assert_non_null(strstr(err.text, "line 1 column"));
}

/* Reasons: eight kept; the ninth must be an object, the tenth and later are not looked at (as the reference). */
static void test_reasons_past_the_kept(void **state)
{
#define R "{\"code\":\"c\",\"text\":\"t\"}"
	static const char ok[] =
		DOC("\"rtune_version\":\"1\",",
		    ENTRY(",\"reasons\":[" R "," R "," R "," R "," R "," R "," R "," R "," R ",5]"), "");
	static const char bad[] = DOC("\"rtune_version\":\"1\",",
				      ENTRY(",\"reasons\":[" R "," R "," R "," R "," R "," R "," R "," R ",5]"), "");
#undef R
	struct rt_profile *p;
	struct rt_error err;

	(void)state;
	expect_agree(ok, sizeof(ok) - 1, NULL);
	assert_int_equal(rt_profile_scan(ok, sizeof(ok) - 1, NULL, &p, NULL, &err), 0);
	assert_int_equal(rt_profile_entry_at(p, 0)->n_reasons, RT_PROFILE_MAX_REASONS);
	rt_profile_free(p);
	expect_agree(bad, sizeof(bad) - 1, NULL);
	assert_int_equal(rt_profile_scan(bad, sizeof(bad) - 1, NULL, &p, NULL, &err), EINVAL);
	assert_string_equal(err.text, "profile: entries[0].reasons[8]: expected an object, got an integer");
}

/* The extras the report reads: the node and hardware objects and each entry's calibration, found by the cursor. */
static void test_extras(void **state)
{
	static const char doc[] =
		DOC("\"rtune_version\":\"1\",\"hardware\":{\"cpu_model\":\"caf\\u00e9\",\"devices\":[{\"name\":\"a\"},"
		    "{\"name\":\"b\",\"pcie\":{\"width\":16}}]},",
		    ENTRY(",\"calibration\":{\"cpu_numa_node\":1,\"numa_local\":true}") "," ENTRY(""), "");
	struct rt_profile_scan_extra x;
	struct rt_profile *p;
	struct rt_error err;
	struct rt_jlex l;
	struct rt_jv v, dev, pcie;

	(void)state;
	assert_int_equal(rt_profile_scan(doc, sizeof(doc) - 1, NULL, &p, &x, &err), 0);
	assert_int_equal(x.n_calibration, 2);
	assert_int_equal(x.node.t, RT_JV_OBJ);
	assert_int_equal(x.calibration[1].t, RT_JV_ABSENT);
	rt_jlex_init(&l, doc, sizeof(doc) - 1);
	assert_int_equal(rt_jlex_member(&l, &x.calibration[0], "cpu_numa_node", &v), 0);
	assert_int_equal(v.t, RT_JV_INT);
	assert_int_equal(v.i, 1);
	assert_int_equal(rt_jlex_member(&l, &x.calibration[0], "numa_local", &v), 0);
	assert_int_equal(v.t, RT_JV_TRUE);
	assert_int_equal(rt_jlex_member(&l, &x.hardware, "cpu_model", &v), 0);
	assert_int_equal(v.t, RT_JV_STR);
	assert_int_equal(v.n, 5);
	assert_memory_equal(v.s, "caf\xc3\xa9", 5);
	assert_int_equal(rt_jlex_member(&l, &x.hardware, "devices", &v), 0);
	assert_int_equal(v.t, RT_JV_ARR);
	assert_int_equal(rt_jlex_element(&l, &v, 1, &dev), 0);
	assert_int_equal(rt_jlex_member(&l, &dev, "pcie", &pcie), 0);
	assert_int_equal(rt_jlex_member(&l, &pcie, "width", &v), 0);
	assert_int_equal(v.i, 16);
	assert_int_equal(rt_jlex_element(&l, &x.hardware, 0, &v), 0); /* not an array */
	assert_int_equal(v.t, RT_JV_ABSENT);
	assert_int_equal(rt_jlex_member(&l, &x.hardware, "nothing", &v), 0);
	assert_int_equal(v.t, RT_JV_ABSENT);
	rt_jlex_fini(&l);
	rt_profile_scan_extra_free(&x);
	rt_profile_free(p);
}

/* Not NUL-terminated, and bytes after the document: the length is what counts. */
static void test_length_bounds(void **state)
{
	static const char doc[] = DOC("\"rtune_version\":\"1\",", ENTRY(""), "") "   {";
	struct rt_profile *p;
	struct rt_error err;

	(void)state;
	expect_agree(doc, sizeof(doc) - 1, NULL);
	assert_int_equal(rt_profile_scan(doc, sizeof(doc) - 1, NULL, &p, NULL, &err), EINVAL);
	assert_non_null(strstr(err.text, "end of file expected"));
	expect_agree(doc, sizeof(doc) - 5, NULL);
	assert_int_equal(rt_profile_scan(doc, sizeof(doc) - 5, NULL, &p, NULL, &err), 0);
	rt_profile_free(p);
}

/* Reals as the documents write them and in every other form (1-21 digits, a point anywhere, exponents -30..30):
 * the single-pass reader's exact fast path and its strtod fallback give the bits jansson's strtod gives. */
static void test_reals_bit_exact(void **state)
{
	char doc[2048], num[64];
	size_t n[4] = { 0 };

	(void)state;
	for (int round = 0; round < 20000; round++) {
		int digits = 1 + (int)pick(21), point = (int)pick((size_t)digits + 1), o = 0, len;
		enum rt_pdiff_outcome out;

		for (int i = 0; i < digits; i++) {
			if (i == point && i > 0)
				num[o++] = '.';
			num[o++] = (char)((i == 0 && digits > 1 ? '1' + pick(9) : '0' + pick(10)));
		}
		if (pick(3) == 0)
			o += snprintf(num + o, sizeof(num) - (size_t)o, "e%d", (int)pick(61) - 30);
		else if (point == 0 && pick(2))
			o += snprintf(num + o, sizeof(num) - (size_t)o, ".%d", (int)pick(1000));
		num[o] = '\0';
		len = snprintf(doc, sizeof(doc),
			       DOC("\"rtune_version\":\"1\",", ENTRY(",\"measured\":{\"latency_inline_ns\":%s}"), ""),
			       num);
		expect_agree(doc, (size_t)len, &out);
		n[out]++;
	}
	print_message("reals: %zu accepted, %zu refused as JSON, %zu refused for a field\n", n[RT_PDIFF_BOTH_ACCEPT],
		      n[RT_PDIFF_BOTH_REFUSE_JSON], n[RT_PDIFF_BOTH_REFUSE_FIELD]);
	assert_true(n[RT_PDIFF_BOTH_ACCEPT] >= 5000);
}

/* Strings and whitespace runs the lexer takes 8 bytes at a time: every kind of byte that ends a plain run (a control
 * character, NUL, '"', an escape, DEL, UTF-8 valid and not) at every position of a string 1-24 bytes long, and runs of
 * spaces 0-20 long broken by every whitespace byte and by bytes that are not whitespace, at every document offset mod
 * 8: the same outcome, error text and fields as jansson's. */
static void test_word_at_a_time(void **state)
{
	static const char *const specials[] = { "\x01", "\x1f", " ",	   "\x7f", "\x80", "\xc3\xa9",	      "\xc3",
						"\"",	"\\n",	"\\u00e9", "\\",   "\t",   "\xf4\x8f\xbf\xbf" };
	static const char *const breaks[] = { "\n", "\t", "\r", " ", "x", "\v", "\x00" };
	char doc[1024], str[64];
	size_t n[4] = { 0 };

	(void)state;
	for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++)
		for (int len = 1; len <= 24; len++)
			for (int at = 0; at < len; at++)
				for (int shift = 0; shift < 8; shift += 3) {
					enum rt_pdiff_outcome out;
					int o = 0, dl;

					for (int i = 0; i < len; i++)
						o += snprintf(str + o, sizeof(str) - (size_t)o, "%s",
							      i == at ? specials[k] : (i % 2 ? "b" : "a"));
					dl = snprintf(doc, sizeof(doc),
						      DOC("%*s\"rtune_version\":\"%s\",", ENTRY(""), ""), shift, "",
						      str);
					expect_agree(doc, (size_t)dl, &out);
					n[out]++;
				}
	for (size_t k = 0; k < sizeof(breaks) / sizeof(breaks[0]); k++)
		for (int before = 0; before <= 20; before++)
			for (int after = 0; after <= 20; after += 4) {
				enum rt_pdiff_outcome out;
				int dl;

				/* the run sits between '{' and the first key; the break byte written by hand (it may be NUL) */
				dl = snprintf(doc, sizeof(doc), "{%*s#%*s", before, "", after, "");
				doc[1 + before] = breaks[k][0];
				dl += snprintf(doc + dl, sizeof(doc) - (size_t)dl, "%s", DOC("", ENTRY(""), "") + 1);
				expect_agree(doc, (size_t)dl, &out);
				n[out]++;
			}
	print_message("word at a time: %zu accepted, %zu refused as JSON, %zu refused for a field\n",
		      n[RT_PDIFF_BOTH_ACCEPT], n[RT_PDIFF_BOTH_REFUSE_JSON], n[RT_PDIFF_BOTH_REFUSE_FIELD]);
	assert_true(n[RT_PDIFF_BOTH_ACCEPT] >= 1000);
	assert_true(n[RT_PDIFF_BOTH_REFUSE_JSON] >= 1000);
}

/* Objects past the key filter (more than 64 keys): a duplicate is still refused, wherever it is. */
static void test_many_keys(void **state)
{
	char doc[8192];
	int o;

	(void)state;
	for (int dup = 0; dup < 3; dup++) {
		/* the unknown object "x" with 101 keys, the last one repeating key dup * 40 */
		o = snprintf(doc, sizeof(doc), "{\"x\":{");
		for (int k = 0; k < 100; k++)
			o += snprintf(doc + o, sizeof(doc) - (size_t)o, "\"k%d\":%d,", k, k);
		o += snprintf(doc + o, sizeof(doc) - (size_t)o, "\"k%d\":0},%s", dup * 40,
			      DOC("\"rtune_version\":\"1\",", ENTRY(""), "") + 1);
		expect_agree(doc, (size_t)o, NULL);
		{
			struct rt_profile *p;
			struct rt_error err;

			assert_int_equal(rt_profile_scan(doc, (size_t)o, NULL, &p, NULL, &err), EINVAL);
			assert_non_null(strstr(err.text, "duplicate object key"));
		}
	}
	/* and without the duplicate it loads */
	o = snprintf(doc, sizeof(doc), "{\"x\":{");
	for (int k = 0; k < 100; k++)
		o += snprintf(doc + o, sizeof(doc) - (size_t)o, "\"k%d\":%d,", k, k);
	o += snprintf(doc + o, sizeof(doc) - (size_t)o, "\"last\":0},%s",
		      DOC("\"rtune_version\":\"1\",", ENTRY(""), "") + 1);
	expect_agree(doc, (size_t)o, NULL);
	{
		struct rt_profile *p;
		struct rt_error err;

		assert_int_equal(rt_profile_scan(doc, (size_t)o, NULL, &p, NULL, &err), 0);
		rt_profile_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpora_agree),
		cmocka_unit_test(test_mutations_agree),
		cmocka_unit_test(test_rtune_version_after_entries),
		cmocka_unit_test(test_first_error_in_reference_order),
		cmocka_unit_test(test_reasons_past_the_kept),
		cmocka_unit_test(test_extras),
		cmocka_unit_test(test_length_bounds),
		cmocka_unit_test(test_reals_bit_exact),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_word_at_a_time),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
