/* agentnest/proc.h — background (detached) processes of a persistent
 * sandbox: `exec --detach`, `proc ls|logs|kill|wait`.
 *
 * The sandbox's monitor starts the process through the exec path (the
 * sandbox's uid, no capabilities, no_new_privs, its seccomp filter and
 * rlimits, as an_sandbox_exec) in a child cgroup of its own,
 * agentnest/sb-<id>/proc-<handle>, with stdin /dev/null, and reads its
 * stdout and stderr into a ring per stream of ring_bytes each (the last
 * ring_bytes are kept; older bytes are dropped and counted), redacting the
 * sandbox's secrets as exec output is redacted (agentnest/output.h).  The
 * process outlives the call that started it and every CLI, and dies with
 * the sandbox.  When it exits, what it left in its cgroup is killed (exec's
 * documented policy) and the cgroup removed; its status and rings are kept
 * for logs and wait (at most 32 processes per sandbox, running or ended;
 * the longest-ended is forgotten first).  Handles are "p1", "p2", ... in
 * the order of starts.  Control channel: sandbox/control.h.
 * Thread-safety as agentnest/sandbox.h.  Nothing here prints or exits. */
#ifndef AGENTNEST_PROC_H
#define AGENTNEST_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/sandbox.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AN_PROC_DEFAULT_RING_BYTES ((size_t) 256 << 10)   /* per stream */
#define AN_PROC_MAX_RING_BYTES ((size_t) 1 << 20)

/* Start argv (PATH lookup inside) detached; env ("K=V", NULL-terminated,
 * may be NULL) after the sandbox env; workdir absolute or NULL;
 * ring_bytes per stream, 0: AN_PROC_DEFAULT_RING_BYTES.  *handle (heap,
 * caller frees) and *pid (host pid; may be NULL).  Event "proc_started".
 * Errors: -EINVAL empty argv, relative workdir, ring_bytes over
 * AN_PROC_MAX_RING_BYTES; -ENOENT / -EACCES argv[0] not found / not
 * executable (named); -ENOSPC 32 processes running; -ESRCH no monitor. */
int an_proc_start(struct an_sandbox *sb, char *const argv[], char *const *env, const char *workdir,
                  size_t ring_bytes, char **handle, pid_t *pid, an_error_t *err);

struct an_proc_info {
  char *handle, *command;   /* command: argv joined by spaces */
  pid_t pid;
  bool running;
  int status;               /* when !running: DESIGN's exit status (128+N for signal N) */
  uint64_t started_ms;      /* CLOCK_REALTIME */
};
/* The processes of sb (*list heap, *n entries, an_proc_info_list_free).
 * Errors: -ESRCH no monitor; errors of the monitor's answer. */
int an_proc_list(struct an_sandbox *sb, struct an_proc_info **list, size_t *n, an_error_t *err);
void an_proc_info_list_free(struct an_proc_info *list, size_t n);

struct an_proc_logs {
  char *data[2];            /* stdout, stderr from the offsets asked (heap, NUL-terminated;
                               invalid UTF-8 shown as U+FFFD) */
  uint64_t next[2];         /* offsets to ask next time */
  uint64_t dropped[2];      /* bytes between the offsets asked and the ring's oldest */
  bool running;             /* still running or its output not all read */
  int status;               /* when !running */
};
/* Output of `handle` from byte offsets from[0] (stdout) and from[1]
 * (stderr) of everything it wrote (0, 0: all the ring holds; at most 1 MiB
 * per stream per call).  With `wait`, block until there is something new
 * or it ended (for --follow).  *out: an_proc_logs_release.  Errors:
 * -ENOENT no such handle; -ESRCH no monitor. */
int an_proc_logs(struct an_sandbox *sb, const char *handle, const uint64_t from[2], bool wait,
                 struct an_proc_logs *out, an_error_t *err);
void an_proc_logs_release(struct an_proc_logs *l);

/* Send `sig` to the process (SIGKILL: to its whole cgroup).  Errors:
 * -ENOENT no such handle; -ESRCH it has exited; -EINVAL bad signal. */
int an_proc_kill(struct an_sandbox *sb, const char *handle, int sig, an_error_t *err);

/* Wait until the process has exited and its output is read; *status as
 * an_proc_info.status.  Errors: -ENOENT no such handle; -ESRCH no monitor
 * (also when the sandbox ends meanwhile: -EPIPE). */
int an_proc_wait(struct an_sandbox *sb, const char *handle, int *status, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
