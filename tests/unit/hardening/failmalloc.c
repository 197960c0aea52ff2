// SPDX-License-Identifier: MIT
/*
 * Allocation-failure injector, LD_PRELOADed into a short rtune command by test_hardening_oom.sh: counts calls to
 * malloc, calloc, realloc, reallocarray, posix_memalign, aligned_alloc and memalign made after the program's
 * constructors began, and makes the RT_FAIL_AT-th one (1-based) fail with ENOMEM; RT_FAIL_AT=0 (or unset) fails
 * nothing. RT_FAIL_PERSIST=1 makes every call from the RT_FAIL_AT-th on fail. At exit the number of calls seen is
 * written to the file named by RT_FAIL_REPORT (so a sweep knows how many calls there are to fail). Forwards to glibc's
 * __libc_* allocator, so it needs no dlsym (which itself allocates). Not for sanitizer builds (they own malloc).
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

static atomic_ulong calls;
static unsigned long fail_at;
static int persist, armed;

__attribute__((constructor)) static void failmalloc_init(void)
{
	const char *v = getenv("RT_FAIL_AT");

	fail_at = v ? strtoul(v, NULL, 10) : 0;
	v = getenv("RT_FAIL_PERSIST");
	persist = v && *v == '1';
	armed = 1;
}

__attribute__((destructor)) static void failmalloc_fini(void)
{
	const char *path = getenv("RT_FAIL_REPORT");
	char buf[32];
	int fd, n;

	if (!path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	n = snprintf(buf, sizeof(buf), "%lu\n", (unsigned long)atomic_load(&calls));
	if (n > 0 && write(fd, buf, (size_t)n) != n)
		unlink(path); /* a short report is worse than none */
	close(fd);
}

/* True when this call must fail. */
static int should_fail(void)
{
	unsigned long k;

	if (!armed)
		return 0;
	k = atomic_fetch_add(&calls, 1) + 1;
	return fail_at && (k == fail_at || (persist && k > fail_at));
}

void *malloc(size_t size)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_realloc(p, size);
}

void *reallocarray(void *p, size_t n, size_t size)
{
	if (size && n > (size_t)-1 / size) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, n && size ? n * size : 1);
}

void *memalign(size_t align, size_t size)
{
	if (should_fail()) {
		errno = ENOMEM;
		return NULL;
	}
	return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	return memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p = memalign(align, size);

	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
