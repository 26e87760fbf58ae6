/* agentnest/container.h — the engine: an OCI runtime-spec config -> a running
 * container, with the runtime-spec lifecycle (runtime.md: creating, created,
 * running, stopped) and runc-compatible operations.
 *
 * State lives in `<state_root>/<id>/` (default /run/agentnest-oci): state.json
 * (the runtime-spec state plus what the engine needs to find the container
 * again: init pid and its start time, cgroup path, bundle, created time),
 * config.json (the spec, for exec) and start.sock, the create->start
 * handshake: after create, init blocks in accept(2) on that listening socket
 * (the role of runc's exec.fifo); `start` connects, sends one byte and reads
 * EOF once init has reached execve, or init's error message.  Every
 * operation takes the directory's lock.
 *
 * The container's first process is made with a raw clone3(2) (no fork
 * handlers run), so create/run/exec must be called from a single-threaded
 * process, or at least while no other thread can hold the malloc lock; the
 * CLIs and the per-sandbox monitor are single-threaded.
 */
#ifndef AGENTNEST_CONTAINER_H
#define AGENTNEST_CONTAINER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

enum an_container_status {
  AN_STATUS_CREATING, AN_STATUS_CREATED, AN_STATUS_RUNNING, AN_STATUS_STOPPED,
  AN_STATUS_PAUSED,
};

/* "creating", "created", "running", "stopped", "paused" (static string). */
const char *an_container_status_name(enum an_container_status s);

struct an_container_opts {
  const char *state_root;       /* NULL: /run/agentnest-oci */
  const char *id;               /* required: [A-Za-z0-9][A-Za-z0-9_.+-]{0,127} */
  const char *bundle;           /* directory holding config.json; root.path is relative to it */
  const char *console_socket;   /* AF_UNIX path to send the pty master to (process.terminal) */
  const char *pid_file;         /* write the init pid here (atomically) */
  int preserve_fds;             /* extra fds 3..3+n-1 passed to the container */
  bool no_pivot;                /* MS_MOVE + chroot instead of pivot_root */
  bool no_new_keyring;          /* keep the caller's session keyring */
  bool detach;                  /* run: do not wait */
  bool keep;                    /* run: keep state after exit */
  int stdio[3];                 /* fds for the container's stdin/out/err; -1 = inherit 0/1/2 */
  char *const *config_env;      /* non-NULL: the process.env recorded in the state's
                                   config.json instead of spec->process->env (e.g. with
                                   secret values left out); the process still gets
                                   spec->process->env.  NULL-terminated, borrowed */
  const char *seccomp_cache;    /* directory caching compiled seccomp programs by profile hash
                                   (made 0700 if missing); NULL: none, nothing is written
                                   outside the container's state directory */
  bool cgroup_used_only;        /* make the cgroup only in the hierarchies its limits use
                                   (an_cgroup_create_used; a later update may then refuse a
                                   limit of another controller); false: in every one (runc) */
};

/* The runtime-spec state (runtime.md "State") as kept by the engine. */
struct an_container_state {
  char *oci_version;
  char *id;
  enum an_container_status status;
  pid_t pid;                    /* 0 when stopped */
  char *bundle;
  char *rootfs;                 /* absolute host path of the root */
  char *cgroup_path;            /* relative cgroup path */
  char *created;                /* RFC 3339 UTC */
  char *owner;
  uint64_t start_time;          /* init's start time (clock ticks since boot, /proc/PID/stat field 22) */
  struct an_spec_key_value *annotations; size_t n_annotations;
};

/* Free a state and every string it owns; NULL allowed. */
void an_container_state_free(struct an_container_state *st);

/* Create: set up namespaces, cgroup, mounts, pivot_root, and leave the init
 * process blocked before exec of process.args (state "created").  Runs the
 * createRuntime/createContainer hooks.  On any failure everything made so far
 * (cgroup, state dir, processes, mounts) is removed.  Errors: -EINVAL bad
 * config (message names the field), -EEXIST id in use, -ENOENT missing rootfs
 * or executable, -EOPNOTSUPP a requested control this host cannot enforce,
 * or the errno of the failing step with its object named. */
int an_container_create(const struct an_spec *spec, const struct an_container_opts *opts,
                        an_error_t *err);

/* Start a created container (exec the user process; startContainer and
 * poststart hooks).  Errors: -ENOENT no such container, -EINVAL wrong state. */
int an_container_start(const char *state_root, const char *id, an_error_t *err);

/* create + start and, unless opts->detach, wait for it, forward signals, run
 * poststop hooks and delete it (unless opts->keep).  Returns the container's
 * exit status as a shell would report it (0-255, 128+N for signal N) or a
 * negative errno. */
int an_container_run(const struct an_spec *spec, const struct an_container_opts *opts,
                     an_error_t *err);

/* Run an additional process inside a running container (runc exec).
 * Returns its exit status (as run) unless `detach`, then 0 and *pid.  Errors
 * as create, -EINVAL container not running. */
int an_container_exec(const char *state_root, const char *id, const struct an_spec_process *proc,
                      bool detach, const char *console_socket, const char *pid_file,
                      pid_t *pid, an_error_t *err);

/* an_container_exec with the new process's stdin/stdout/stderr given as
 * fds (-1 = the caller's own 0/1/2): the sandbox layer captures an exec's
 * output through pipes without touching its own fds.  The fds are dup'ed
 * into the child; the caller keeps ownership.  Errors as an_container_exec. */
int an_container_exec_stdio(const char *state_root, const char *id,
                            const struct an_spec_process *proc, const int stdio[3], bool detach,
                            const char *console_socket, const char *pid_file, pid_t *pid,
                            an_error_t *err);

/* Read the state, refreshing status (a recorded pid whose start time differs
 * is treated as gone: PID reuse guard).  *out owned by the caller
 * (an_container_state_free).  Errors: -ENOENT no such container; errors of
 * reading the state file (named). */
int an_container_state(const char *state_root, const char *id,
                       struct an_container_state **out, an_error_t *err);

/* Ids of all containers under state_root (NULL-terminated, caller frees with
 * free() of each and of the array; a missing state_root is an empty list).
 * Errors: -ENOMEM; the errno of opening state_root. */
int an_container_list(const char *state_root, char ***ids, an_error_t *err);

/* Send `sig` to init, or to every process of the container with `all`.
 * A stopped container: with `all` whatever is left in its cgroup is
 * signalled and the call succeeds (runc); without, -ESRCH "container not
 * running" (runc's wording).  Errors: -ESRCH, -ENOENT no such container,
 * errno of pidfd_send_signal / the cgroup kill. */
int an_container_kill(const char *state_root, const char *id, int sig, bool all, an_error_t *err);

/* runc's `update`: write the limits `res` sets (the has_* members, strings
 * and arrays present; everything else is left as it is) to the cgroup of a
 * created, running or paused container, and merge them into the config in
 * its state directory.  Errors: -ESRCH "container not running" (stopped),
 * -ENOENT no such container, the cgroup's errors (an_cgroup_apply: -EINVAL
 * a value out of range, -EOPNOTSUPP a controller this host lacks). */
int an_container_update(const char *state_root, const char *id,
                        const struct an_spec_resources *res, an_error_t *err);

/* Delete a stopped container (or any, with `force`: SIGKILL first): run
 * poststop hooks, remove cgroup and state.  Errors: -EBUSY still running. */
int an_container_delete(const char *state_root, const char *id, bool force, an_error_t *err);

/* Freeze / thaw all processes.  Errors: -EINVAL not running. */
int an_container_pause(const char *state_root, const char *id, an_error_t *err);
int an_container_resume(const char *state_root, const char *id, an_error_t *err);

/* Pids of the container's processes (host pid namespace): *pids heap (the
 * caller's, free()), *n entries.  Errors: as an_container_state; -ENOENT no
 * cgroup recorded; those of an_cgroup_pids. */
int an_container_pids(const char *state_root, const char *id, pid_t **pids, size_t *n,
                      an_error_t *err);

/* The runtime-spec state as JSON (runc's `state` output; also handed to hooks
 * on stdin).  *json owned by caller (free()).  Errors: -ENOMEM. */
int an_container_state_json(const struct an_container_state *st, char **json, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
