// SPDX-License-Identifier: MIT
/*
 * Keeps docs/profile-schema.md's example true: the first JSON block after "## Example" must load with librtune, carry
 * the schema version rtune writes (RT_PROFILE_SCHEMA_MAJOR.MINOR) and use only reason codes of the tuner's vocabulary
 * (rt_reason_code_name()).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <rtune/profile.h>

#include "rt_tuner.h"

/* The text of the first ```json block after "## Example" in path (malloc'd), or NULL. */
static char *example_json(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *doc = calloc(1, 1 << 20), *sec, *start, *end, *out = NULL;

	if (!f || !doc) {
		if (f)
			fclose(f);
		free(doc);
		return NULL;
	}
	(void)!fread(doc, 1, (1 << 20) - 1, f);
	fclose(f);
	sec = strstr(doc, "\n## Example\n");
	start = sec ? strstr(sec, "```json\n") : NULL;
	end = start ? strstr(start + 8, "\n```") : NULL;
	if (end) {
		start += 8;
		*len = (size_t)(end - start) + 1;
		out = strndup(start, *len);
	}
	free(doc);
	return out;
}

static void test_example_loads_with_the_current_version_and_known_codes(void **state)
{
	struct rt_profile *p = NULL;
	struct rt_error err = { 0 };
	char want[64];
	size_t len = 0, n_reasons = 0;
	char *text = example_json(DOCS_DIR "/profile-schema.md", &len);

	(void)state;
	assert_non_null(text);
	if (rt_profile_parse(text, len, &p, &err))
		fail_msg("docs/profile-schema.md's example does not load: %s", err.text);
	snprintf(want, sizeof(want), "\"version\": \"%d.%d\"", RT_PROFILE_SCHEMA_MAJOR, RT_PROFILE_SCHEMA_MINOR);
	if (!strstr(text, want))
		fail_msg("docs/profile-schema.md's example is not schema %d.%d, the version rtune writes",
			 RT_PROFILE_SCHEMA_MAJOR, RT_PROFILE_SCHEMA_MINOR);
	assert_int_equal(rt_profile_schema_minor(p), RT_PROFILE_SCHEMA_MINOR);
	assert_true(rt_profile_entry_count(p) > 0);
	for (size_t i = 0; i < rt_profile_entry_count(p); i++) {
		const struct rt_profile_entry *e = rt_profile_entry_at(p, i);

		for (size_t r = 0; r < e->n_reasons; r++, n_reasons++) {
			bool known = false;

			for (int c = 0; c < RT_R__COUNT && !known; c++)
				known = !strcmp(e->reasons[r].code, rt_reason_code_name((enum rt_reason_code)c));
			if (!known)
				fail_msg(
					"docs/profile-schema.md's example uses reason code '%s', not in the vocabulary",
					e->reasons[r].code);
		}
	}
	assert_true(n_reasons > 0);
	rt_profile_free(p);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_loads_with_the_current_version_and_known_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
