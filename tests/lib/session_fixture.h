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

#endif
