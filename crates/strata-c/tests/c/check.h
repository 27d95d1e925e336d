/*
 * check.h - tiny shared test helpers for the Strata C API tests.
 *
 * CHECK(cond)        fail with file:line and the condition text
 * FAIL(fmt, ...)     fail with file:line and a formatted message
 * CHECK_NOERR(err)   fail if a LevelDB errptr holds a message (prints it)
 * CHECK_ERR(err)     fail if a LevelDB errptr holds no message
 * say(fmt, ...)      print one transcript line to stdout
 * db_path(name)      NAME under the program's directory (check_dir), in one of
 *                    four rotating static buffers
 *
 * On failure the transcript written so far is flushed, a message goes to
 * stderr and the program exits with status 1.  Transcript lines must only
 * contain things that every correct implementation prints identically.
 */
#ifndef STRATA_C_TESTS_CHECK_H
#define STRATA_C_TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#define CHECK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CHECK_PRINTF(a, b)
#endif

static const char *check_program = "test";

static void check_fail(const char *file, int line, const char *fmt, ...)
    CHECK_PRINTF(3, 4);
static void check_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fflush(stdout);
  fprintf(stderr, "%s: %s:%d: CHECK FAILED: ", check_program, file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void say(const char *fmt, ...) CHECK_PRINTF(1, 2);
static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

#define FAIL(...) check_fail(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond)                  \
  do {                               \
    if (!(cond)) FAIL("%s", #cond);  \
  } while (0)
#define CHECK_NOERR(err)                                             \
  do {                                                               \
    if ((err) != NULL) FAIL("unexpected error: %s", (char *)(err));  \
  } while (0)
#define CHECK_ERR(err)                                      \
  do {                                                      \
    if ((err) == NULL) FAIL("expected an error, got none"); \
  } while (0)

/* The program's working directory (its DIR argument). */
static const char *check_dir = ".";

static inline const char *db_path(const char *name) {
  static char bufs[4][4096];
  static int next;
  char *b = bufs[next++ % 4];
  int n = snprintf(b, sizeof bufs[0], "%s/%s", check_dir, name);
  CHECK(n > 0 && (size_t)n < sizeof bufs[0]);
  return b;
}

/* Compare a (pointer, length) result with a NUL-terminated expectation. */
#define CHECK_BYTES(p, n, s) \
  CHECK((p) != NULL && (n) == strlen(s) && memcmp((p), (s), (n)) == 0)

#endif
