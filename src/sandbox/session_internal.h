/* sandbox/session_internal.h — what the session client (session.c) and the
 * monitor's session ops (monitor_session.c) share (internal). */
#ifndef AN_SANDBOX_SESSION_INTERNAL_H
#define AN_SANDBOX_SESSION_INTERNAL_H

#include <stdbool.h>
#include "agentnest/session.h"

#define AN_SESSION_CGROUP_PREFIX "session-"

/* The Python helper's source (src/sandbox/session_helper.py), NUL
 * terminated; embedded by session_helper_src.c. */
extern const char an_session_python_helper[];

/* 1..AN_SESSION_NAME_MAX of [A-Za-z0-9_.-], not starting with '.' or '-'. */
bool an_session_valid_name(const char *name);

/* argv (static strings) that starts the helper of `kind` in the sandbox. */
void an_session_helper_argv(enum an_session_kind kind, const char *argv[5]);

struct an_sandbox;
/* Attach session `name` on a new control connection: *conn (owned), fds[3]
 * (socket, stdout, stderr; owned), its *kind, and *dirty (an earlier call
 * was left unfinished).  Errors: those of the monitor's op (-ENOENT,
 * -EBUSY), -ESRCH no monitor. */
int an_session_attach(struct an_sandbox *sb, const char *name, int *conn, int fds[3],
                      enum an_session_kind *kind, bool *dirty, an_error_t *err);
/* "session.done" on the attaching connection: the call finished (best
 * effort). */
void an_session_done(int conn, const char *name);

#endif
