/* tests/lib/session_fixture.h — what the tests of sessions and detached
 * processes share (session_test, session_escape_test, proc_test): a store
 * per test run at /tmp/an-<tag>-<runner pid> with busybox (and, when asked,
 * python) imported, the built CLI's path, and one-line helpers that create
 * and destroy a sandbox and start and call a session.  Every helper
 * asserts; not thread-safe (criterion runs one test per process). */
#ifndef AN_TEST_SESSION_FIXTURE_H
#define AN_TEST_SESSION_FIXTURE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include "agentnest/sandbox.h"
#include "agentnest/session.h"

extern char g_root[PATH_MAX];  /* the run's store */
extern char g_cli[PATH_MAX];   /* realpath of the built agentnest */

/* .init: environment, store /tmp/an-<tag>-<ppid>, busybox; with
 * need_python the python image too (else the test is skipped). */
void sf_setup(const char *tag, bool need_python);
/* From a ReportHook(POST_ALL): remove the run's store. */
void sf_remove_store(const char *tag);
/* A sandbox of `image`, with secret API_TOKEN=secret when not NULL. */
struct an_sandbox *sf_make_sb(const char *image, const char *secret);
/* Destroy (no grace) and close. */
void sf_destroy(struct an_sandbox *sb);
/* Start session `name` of `kind`. */
void sf_start(struct an_sandbox *sb, enum an_session_kind kind, const char *name);
/* Run code in session `name` (timeout_ms, grace 1 s); the result (release it). */
struct an_session_result sf_call(struct an_sandbox *sb, const char *name, const char *code, uint64_t timeout_ms);

/* In a test file (criterion.h included): the suite's .init (sf_setup(tag,
 * need_python)), the removal of the run's store after the last test
 * (ReportHook POST_ALL) and TestSuite(suite) with 120 s per test. */
#define SF_TEST_SUITE(suite, tag, need_python)                                          \
  static void sf_suite_setup(void) { sf_setup(tag, need_python); }                     \
  ReportHook(POST_ALL)(struct criterion_global_stats *stats) {                          \
    (void) stats;                                                                       \
    sf_remove_store(tag);                                                               \
  }                                                                                     \
  TestSuite(suite, .init = sf_suite_setup, .timeout = 120)

/* The helpers under the short names the tests were written with: define
 * AN_SF_SHORT_NAMES before including this header to get them. */
#ifdef AN_SF_SHORT_NAMES
#define make_sb sf_make_sb
#define destroy sf_destroy
#define start sf_start
#define call sf_call
#endif

#endif
