/* SPDX-License-Identifier: MIT */
/*
 * rtune error reporting: every rtune library reports failure as an errno-style return value plus, when the caller passes
 * one, a struct rt_error that lives on the caller's stack (the pattern of jansson's json_error_t). Nothing in the
 * libraries prints; the caller decides what to show.
 */
#ifndef RTUNE_ERROR_H
#define RTUNE_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#define RT_ERROR_TEXT_LEN 256

/* What went wrong: code is an errno value (0 = no error), text one lowercase line without a trailing newline. */
struct rt_error {
	int code;
	char text[RT_ERROR_TEXT_LEN];
};

/*
 * Records code and a printf-style message in err (which may be NULL) and returns code, so a failure path can read
 * `return rt_error_set(err, EINVAL, "bad '%s'", x);`. The message is truncated to fit, never overflows.
 */
int rt_error_set(struct rt_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Clears err (code 0, empty text); err may be NULL. */
void rt_error_clear(struct rt_error *err);

#ifdef __cplusplus
}
#endif
#endif
