/* agentnest/session.h — sessions: long-lived interpreters (Python or sh)
 * inside a persistent sandbox that keep their state between calls
 * (DESIGN.md "Vocabulary": session).
 *
 * WHO HOLDS WHAT.  The sandbox's monitor starts a session's helper through
 * the exec path (sandbox/exec_spawn.c: the sandbox's uid, no capabilities,
 * no_new_privs, its seccomp filter, rlimits; nothing an exec does not get)
 * in a child cgroup of its own, `session-<name>`, and keeps the host ends of
 * its fds: a unix socket pair for requests and results, and two pipes for
 * the code's stdout and stderr.  A call (an_session_run) borrows those fds
 * from the monitor over its control socket (sandbox/control.h) for the
 * time of the call, so a session outlives the CLI that started it and any
 * caller; it ends with the sandbox (destroy, expiry), with
 * an_session_stop, or when its helper exits.
 *
 * HELPERS.  python: the program src/sandbox/session_helper.py (compiled
 * into the library, run as `python3 -u -c PROGRAM` with the socket on fd 0
 * moved off to a private fd and /dev/null put there).  Globals persist; a
 * call returns stdout, stderr, the value of a final expression (repr, and a
 * JSON text when json.dumps accepts it) and a structured error {type,
 * message, traceback} for an exception.  shell: `sh` itself, reading its
 * commands from the socket: each call runs `command eval 'CODE' </dev/null`
 * in that one shell (cwd, exported env and shell variables persist; a
 * syntax error does not end it), then the shell writes the call's exit
 * status back as a frame.
 * Wire format: netstrings of JSON documents (control.h FRAMING), requests
 * {"id":N,"code":"..."} (python), results {"id":N,"status":S,...}.
 *
 * TIMEOUT.  At the call's timeout every process of the session's cgroup
 * gets SIGINT (the terminal's Ctrl-C: Python raises KeyboardInterrupt, the
 * shell's foreground command dies, the shell itself traps it); the call
 * returns timed_out (status 124) and the session lives on.  For sh the
 * SIGINT is repeated every 100 ms of the grace (one that came before the
 * foreground command was forked reached only the shell's trap).  If no result
 * comes within the grace period, the session's cgroup is killed (SIGKILL)
 * and the call returns session_lost; the session is gone.  A pure-shell
 * loop (`while :; do :; done`) is not interruptible by SIGINT in a
 * non-interactive shell and ends that way too.
 *
 * OUTPUT.  As exec (agentnest/output.h): stdout+stderr capped (the
 * sandbox's max_output unless the call says less), secrets of the sandbox
 * redacted, also in the value and in the error strings; each string capped
 * at the output cap.  What a session's background jobs write between calls
 * stays in its pipes (64 KiB each; a writer then blocks) and is read as
 * output of the next call.
 *
 * CONCURRENCY.  One call at a time per session: a second caller gets
 * -EBUSY.  A call whose caller died leaves the session "dirty": the next
 * call interrupts what is left of it first (SIGINT, then the grace, then
 * session_lost).  Several sessions per sandbox (at most 32).  Thread-safety
 * as agentnest/sandbox.h (single-threaded callers; distinct handles in
 * distinct processes).  Nothing here prints or exits. */
#ifndef AGENTNEST_SESSION_H
#define AGENTNEST_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <yajl/yajl_gen.h>
#include "agentnest/error.h"
#include "agentnest/output.h"
#include "agentnest/sandbox.h"

#ifdef __cplusplus
extern "C" {
#endif

enum an_session_kind { AN_SESSION_PYTHON = 1, AN_SESSION_SHELL = 2 };

#define AN_SESSION_NAME_MAX 32          /* bytes of a session name */
#define AN_SESSION_DEFAULT_GRACE_MS 2000

/* "python" / "shell" (static strings); NULL for another value. */
const char *an_session_kind_name(enum an_session_kind kind);
/* Parse "python" / "shell" into *kind.  Errors: -EINVAL naming the value. */
int an_session_kind_parse(const char *s, enum an_session_kind *kind, an_error_t *err);

/* Start a session of `kind` in the live sandbox sb, named `name` (1 to 32
 * of [A-Za-z0-9_.-], not starting with '.' or '-'; NULL: the monitor picks
 * "s1", "s2", ...), and wait until its helper is ready (at most
 * timeout_ms milliseconds, 0: 30 s).  *name_out (may be NULL): the name (heap, caller
 * frees).  Event "session_started" is recorded.
 * Errors: -EINVAL bad name; -EEXIST a session of that name exists;
 * -ENOSPC 32 sessions already; -ENOENT / -EACCES the interpreter (python3,
 * sh) is not in the image or not executable (named); -ETIMEDOUT not ready
 * in time (the helper is killed); -ESRCH the sandbox is not running or its
 * monitor does not answer (a one-shot sandbox has none); errors of the
 * spawn. */
int an_session_start(struct an_sandbox *sb, enum an_session_kind kind, const char *name,
                     uint64_t timeout_ms, char **name_out, an_error_t *err);

struct an_session_run_opts {
  uint64_t timeout_ms;   /* 0: the sandbox's exec timeout, capped by its remaining lifetime */
  uint64_t grace_ms;     /* after the interrupt, before session_lost; 0: AN_SESSION_DEFAULT_GRACE_MS */
  size_t max_output;     /* stdout+stderr kept; 0: the sandbox's max_output */
  an_output_data_fn on_data;  /* streamed output as it arrives (redacted, within caps) */
  void *on_data_arg;
  bool has_cancel_fd;    /* interrupt the call when cancel_fd is readable (the caller's */
  int cancel_fd;         /* SIGINT...): as a timeout, with res->cancelled; never read */
};

struct an_session_result {
  int status;            /* shell: the code's exit status; python: 0, or 1 when it raised;
                            124 interrupted at the timeout; 130 cancelled; 125 session_lost */
  bool timed_out;        /* interrupted at the timeout; the session lives on unless lost */
  bool cancelled;        /* interrupted through cancel_fd */
  bool session_lost;     /* the helper exited or was killed: the session is gone */
  char *lost_reason;     /* why, when session_lost (heap) */
  struct an_output output;  /* stdout/stderr as exec (output.h) */
  char *value_repr;      /* python: repr() of the final expression's value; NULL none/None */
  char *value_json;      /* its JSON text when JSON-serialisable, else NULL */
  char *error_type;      /* python: the exception's class name ("ZeroDivisionError"), else NULL */
  char *error_message;   /* str(exception) */
  char *error_traceback; /* the formatted traceback (frames of the session's code only) */
  uint64_t duration_ms;
};

/* Run `code` (len bytes, NUL not allowed) in session `name` of sb and wait
 * for its result (see TIMEOUT, OUTPUT above).  ro may be NULL.  *res is
 * filled on success (an_session_result_release); a raised exception, a
 * non-zero status, a timeout and a lost session are successes with res
 * fields set.  Event "session_call" is recorded (session, status,
 * timed_out, session_lost, duration_ms; never the code).
 * Errors: -ENOENT no such session; -EBUSY the session is in another call;
 * -EINVAL code holds NUL or is over 16 MiB; -ESRCH / -ETIME the sandbox is
 * not running / expired; read/write errors of the channel. */
int an_session_run(struct an_sandbox *sb, const char *name, const char *code, size_t len,
                   const struct an_session_run_opts *ro, struct an_session_result *res,
                   an_error_t *err);

/* Free the strings and buffers of *res and zero it. */
void an_session_result_release(struct an_session_result *res);

/* The members of a result inside an open yajl map (`session run --json`
 * and the last line of --stream): "status", "timed_out", "session_lost",
 * ["lost_reason"], "duration_ms", "stdout", "stderr", "stdout_truncated",
 * "stderr_truncated", "value" (null or {"repr": string, "json": the value
 * as JSON, or null when not serialisable}), "error" (null or {"type",
 * "message", "traceback"}; a lost session: {"type":"session_lost",...}).
 * Returns the first non-ok yajl status. */
yajl_gen_status an_session_result_json_fields(yajl_gen g, const struct an_session_result *res);

struct an_session_info {
  char *name;
  enum an_session_kind kind;
  pid_t pid;             /* the helper's host pid */
  bool busy;             /* in a call */
  uint64_t started_ms;   /* CLOCK_REALTIME ms */
};

/* The sessions of sb (any order by name).  *list heap array of *n
 * (an_session_info_list_free).  Errors: -ESRCH as an_session_start. */
int an_session_list(struct an_sandbox *sb, struct an_session_info **list, size_t *n,
                    an_error_t *err);
void an_session_info_list_free(struct an_session_info *list, size_t n);

/* Stop session `name`: every process of its cgroup is killed (SIGKILL),
 * the cgroup removed.  Event "session_stopped".  Errors: -ENOENT no such
 * session; -ESRCH as an_session_start. */
int an_session_stop(struct an_sandbox *sb, const char *name, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
