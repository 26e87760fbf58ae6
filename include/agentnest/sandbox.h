/* agentnest/sandbox.h — sandboxes: create one from options, exec commands in
 * it with limits, timeouts, output capture and redaction, move files in and
 * out, snapshot/restore/fork its workspace, and destroy it; list, inspect,
 * events, prune.  DESIGN.md "Vocabulary", "Behaviour users rely on".
 *
 * A sandbox is one engine container (agentnest/container.h) made from
 * an_sandbox_build_spec (agentnest/sandbox_opts.h) whose pid 1 is
 * `agentnest-init` (reaps every orphan, forwards SIGTERM to the whole pid
 * namespace, escalates to SIGKILL; BL-44), plus a workspace directory, a
 * host id range, and a per-sandbox monitor process.
 *
 * STATE LAYOUT (store_root as for images, default /var/lib/agentnest):
 *   <root>/sandboxes/<id>/sandbox.json  what open/list/prune need (id, name,
 *                                       image, created/deadline, ids, pids,
 *                                       secrets; mode 0600, root only)
 *   <root>/sandboxes/<id>/options.json  the options (an_sandbox_opts_to_json)
 *   <root>/sandboxes/<id>/workspace/    the workspace, bind-mounted rw at
 *                                       /workspace, owned by the sandbox's
 *                                       mapped uid/gid (host_uid_base+65532),
 *                                       bounded by opts disk/inodes: a
 *                                       directory with a project quota where
 *                                       the store's file system enforces
 *                                       them, else the mount of:
 *   <root>/sandboxes/<id>/workspace.img sparse ext4 image on a loop device
 *                                       (autoclear), root 0600, a copy of
 *   <root>/workspace-templates/         one empty image per (disk, inodes),
 *                                       made by mke2fs on first use (root
 *                                       0700; prune --all removes them)
 *   <root>/sandboxes/<id>/events.jsonl  one JSON object per line (see events)
 *   <root>/sandboxes/<id>/lock          flock(2): serialises destroy/expiry/prune
 *   <root>/sandboxes/<id>/exec-slots/   flock files of the exec cgroups in use
 *   <root>/sandboxes/<id>/control/      the monitor's control socket control.sock
 *                                       (0700 dir, 0600 socket; sandbox/control.h):
 *                                       sessions (session.h), detached processes
 *                                       (proc.h), extend
 *   <root>/sandbox-names/<name>         symlink -> <id> (name uniqueness)
 *   <root>/sandbox-expired/<id>         tombstone of an expired sandbox (holds
 *                                       its name), so later calls say
 *                                       "expired"; prune removes them
 *   <root>/containers/<id>/             the engine's state of its container
 *   (root)                              the image's own read-only rootfs in
 *                                       the store, shared by every sandbox of
 *                                       that image; the engine clones it with
 *                                       open_tree(2), so no host mount is made
 *   /run/agentnest/idranges/<base>.lock the host id range (an_idrange_alloc;
 *                                       machine-wide, not per store root)
 *   cgroup agentnest/sb-<id>            the sandbox cgroup (limits); execs run
 *                                       in its children agentnest/sb-<id>/exec-<n>
 *                                       (one per concurrently open handle,
 *                                       reused: no mkdir/rmdir per exec)
 *
 * EXEC.  an_sandbox_exec runs straight from the caller: it clones a process
 * that joins the sandbox's namespaces (setns through init's pidfd), enters a
 * fresh child cgroup of the sandbox cgroup, gets the sandbox's identity,
 * capabilities (none), no_new_privs, seccomp filter and rlimits (the engine's
 * exec path), and execs argv (PATH search inside the sandbox).  No daemon is
 * involved.  When the exec ends, times out or is killed, everything left in
 * its child cgroup is killed (cgroup.kill) and waited for: a
 * command that exits normally but leaves a detached/daemonised child has that
 * child killed too (documented policy for BL-42).  The exec also ends with
 * its caller: a small host process forked per exec watches the caller
 * through a pidfd and kills the child cgroup when the caller dies (SIGKILL
 * included); the caller's signals can end it through eo->cancel_fd.
 * stdin is /dev/null unless eo->has_stdin: then another small host process
 * per exec (the pump) copies eo->stdin_fd into the command's pipe, or into
 * its pty with eo->tty; the caller's fd never enters the sandbox.
 *
 * EXIT STATUS (an_exec_result.status; DESIGN.md "Exit statuses"):
 *   the command's own exit code; 126 not executable; 127 not found;
 *   128+N killed by signal N; 124 timed out (timed_out set); an OOM kill is
 *   reported with oom_killed set and status 137, never as a timeout.
 *
 * PROCESSES AND THREADS.  The engine starts processes with a raw clone3(2)
 * (agentnest/container.h), so create, exec, run_once and fork must be called
 * from a single-threaded process (the CLIs are); use processes, not
 * threads, for concurrency.  Different handles (also of the same sandbox)
 * may be used from different processes at once; each open handle that
 * execs holds one exec slot.  create forks the monitor (a double fork; the
 * caller reaps the intermediate child itself).  The sandbox's pid 1 is a
 * child of the process that created it (as with runc create): a
 * long-lived caller reaps it (waitpid(2), or a SIGCHLD handler) once it has
 * ended, or it stays a zombie until the caller exits.  No other process of
 * a sandbox stays a child of the caller after a call returns.  Nothing here prints, exits,
 * or changes signal dispositions of the caller; calls are EINTR-safe.  The
 * caller must not have SIGCHLD set to SIG_IGN (exec reaps its child).
 */
#ifndef AGENTNEST_SANDBOX_H
#define AGENTNEST_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/output.h"
#include "agentnest/sandbox_opts.h"
#include "agentnest/snapshot.h"
#include "agentnest/artifacts.h"

#ifdef __cplusplus
extern "C" {
#endif

struct an_sandbox;                       /* opaque handle: an_sandbox_close() */

#define AN_SANDBOX_ID_LEN 12             /* hex characters of a sandbox id */
#define AN_EXEC_STATUS_TIMED_OUT 124
#define AN_EXEC_STATUS_NOT_EXECUTABLE 126
#define AN_EXEC_STATUS_NOT_FOUND 127

/* Path of the agentnest-init binary bind-mounted read-only into every
 * sandbox as its pid 1 when no context says otherwise: an_ctx_init_path(NULL)
 * ("agentnest-init" next to /proc/self/exe if that exists, else
 * AN_LIBEXECDIR "/agentnest-init"; the front ends put $AGENTNEST_INIT in
 * their context, agentnest/ctx.h).
 * *path is heap-allocated, owned by the caller.  Errors: -ENOENT none found
 * (message lists where it looked). */
int an_sandbox_init_path(char **path, an_error_t *err);

/* ---- lifecycle ----------------------------------------------------------------------------- */

/* Create and start a sandbox.
 *   store_root  NULL: AN_IMAGE_DEFAULT_STORE.  Holds images and sandbox state.
 *   opts        options (an_sandbox_opts_*); opts' image is resolved in the
 *               image store by name (required).  opts is copied.
 *   *out        handle of the running sandbox (an_sandbox_close; closing does
 *               not destroy it).
 * Steps: resolve image; allocate id (12 random hex digits) and host id range;
 * create the workspace (chown to the mapped 65532) with its disk and inode
 * quota (project quota, or an ext4 image on a loop device); build the spec with
 * process.args = agentnest-init; engine create+start; start the monitor
 * (double-forked, outside the sandbox cgroup) that holds the lifetime
 * deadline (opts lifetime, from now).  Event "created" is recorded.
 * Errors: -EINVAL no image in opts, bad options (message names them);
 *   -ENOENT image not in the store ("image NAME: not found"), agentnest-init
 *   missing; -EEXIST the name is taken by a live sandbox; -ENOSPC no free id
 *   range (or an image workspace larger than the store's free space);
 *   -EOPNOTSUPP a control this host cannot enforce (the workspace quota
 *   where the store has no project quota and there is no loop device,
 *   mke2fs or ext4); the errno of the
 *   failing step, named.  On any error nothing is left behind. */
int an_sandbox_create(const char *store_root, const struct an_sandbox_opts *opts,
                      struct an_sandbox **out, an_error_t *err);

/* As an_sandbox_create, but the sandbox lives only as long as the calling
 * process (a one-shot front end: `agentnest run`): its monitor watches the
 * caller through a pidfd and tears the sandbox down when the caller exits,
 * however it dies (SIGKILL included); `prune` removes it when both are
 * gone.  Errors as an_sandbox_create. */
int an_sandbox_create_owned(const char *store_root, const struct an_sandbox_opts *opts,
                            struct an_sandbox **out, an_error_t *err);

/* Open a live sandbox by id or name.  Errors: -ENOENT "sandbox X: no such
 * sandbox"; -ETIME "sandbox <id> expired" (its lifetime ran out and it was
 * destroyed, or its keeper is at it); -ESRCH "sandbox <id> is dead (monitor
 * or init gone); destroy it" (an_sandbox_list's status "dead": pid 1, the
 * monitor or an owned sandbox's owner gone, or past the deadline with no
 * keeper left; an_sandbox_destroy_dead_ctx removes it); -ESRCH "sandbox
 * <id> is being destroyed" (dead, and a destroy or its keeper's teardown
 * is at work on it); -ESRCH "sandbox <id> ended while it was being opened" (a destroy, or pid 1's end, removed
 * its workspace or options between the record and them); -EBUSY "sandbox
 * <id> is being created" (its create has not started pid 1 yet); read
 * errors of its state, named.  an_sandbox_open_ctx: the handle uses context
 * `ctx` (agentnest/ctx.h; borrowed, must outlive the handle; store_root NULL:
 * the context's) for what it makes later (fork's sandbox); an_sandbox_open
 * is it with ctx NULL.  Thread-safety: distinct handles (of one sandbox too)
 * may be used from different threads at once; one handle by one thread at a
 * time. */
struct an_ctx;
int an_sandbox_open_ctx(const struct an_ctx *ctx, const char *store_root, const char *id_or_name,
                        struct an_sandbox **out, an_error_t *err);
int an_sandbox_open(const char *store_root, const char *id_or_name, struct an_sandbox **out,
                    an_error_t *err);

/* Release the handle (the sandbox keeps running).  NULL allowed. */
void an_sandbox_close(struct an_sandbox *sb);

/* Accessors; strings owned by the handle (valid until an_sandbox_close).
 * The deadline is CLOCK_REALTIME milliseconds since the epoch (0: none). */
const char *an_sandbox_id(const struct an_sandbox *sb);
const char *an_sandbox_name(const struct an_sandbox *sb);              /* NULL: none */
const char *an_sandbox_workspace_path(const struct an_sandbox *sb);    /* host path */
const char *an_sandbox_cgroup_path(const struct an_sandbox *sb);       /* relative cgroup path */
pid_t an_sandbox_init_pid(const struct an_sandbox *sb);                /* host pid of pid 1 */
pid_t an_sandbox_monitor_pid(const struct an_sandbox *sb);             /* 0: none (run_once) */
uint64_t an_sandbox_deadline_ms(const struct an_sandbox *sb);          /* CLOCK_REALTIME ms */
const struct an_sandbox_opts *an_sandbox_get_opts(const struct an_sandbox *sb);
/* O_DIRECTORY fd of the workspace (owned by the handle) for files.h calls;
 * -1 (not an error code) when the handle could not open the workspace. */
int an_sandbox_workspace_fd(const struct an_sandbox *sb);
/* an_file_opts for writing into this workspace: owner = the sandbox user's
 * host ids, max_bytes = opts' max_read, mkdir_parents. */
void an_sandbox_file_opts(const struct an_sandbox *sb, struct an_file_opts *fo);

/* Destroy: stop every process (SIGTERM to pid 1, which forwards it to all;
 * SIGKILL via cgroup.kill after grace_ms milliseconds, 0 = at once), stop the monitor,
 * delete the container, cgroups, workspace, state, name and id range.
 * Event "destroyed" is written before the state goes.  The handle is still
 * to be closed.  Idempotent: a sandbox already gone is not an error.
 * Everything is removed before it returns (an_sandbox_destroy_detached
 * leaves the removal to a background reaper).
 * Errors: -EBUSY processes could not be killed; the errno of a removal step,
 * named (what could be removed is removed; prune retries the rest). */
int an_sandbox_destroy(struct an_sandbox *sb, uint64_t grace_ms, an_error_t *err);

/* Destroy a DEAD sandbox, which an_sandbox_open refuses (-ESRCH "... is
 * dead"): one whose monitor, pid 1 or (one-shot) creating process is gone,
 * e.g. after a SIGKILL of its creator mid-create or a crash.  Its remains
 * are removed as prune removes them (processes left killed, container,
 * cgroups, workspace, state, name, id range; audit "destroy" with the
 * reason).  id_or_name is an id or a name; store_root NULL: the context's
 * (ctx NULL: the default store).  The id is copied into id (13 bytes).
 * As `runc delete` of a stopped container: what `agentnest destroy` does
 * for a sandbox that is dead.  Errors: -ENOENT no such sandbox; -ETIME it
 * expired (its monitor is tearing it down); -EBUSY it is not dead, or its
 * create is still running; the errno of a removal step (named; prune
 * retries).  May run concurrently with any call (the store's locks). */
struct an_ctx;
int an_sandbox_destroy_dead_ctx(const struct an_ctx *ctx, const char *store_root, const char *id_or_name,
                                char id[AN_SANDBOX_ID_LEN + 1], an_error_t *err);

/* Extend the lifetime of the live sandbox sb by by_ms: its deadline becomes
 * the current deadline + by_ms; the monitor re-arms its timer (control
 * channel, sandbox/control.h) and sandbox.json records it.  Bounded by the
 * options' max_lifetime counted from creation (an_sandbox_opts_max_lifetime).
 * *deadline_out (may be NULL): the new deadline, CLOCK_REALTIME ms.  Event
 * "extended".  Errors: -EINVAL zero duration or over the maximum (message
 * gives both); -ETIME already expired; -ESRCH no monitor (a one-shot) or
 * it does not answer; errors reading or writing the record.  Thread-safety
 * as exec. */
int an_sandbox_extend(struct an_sandbox *sb, uint64_t by_ms, uint64_t *deadline_out, an_error_t *err);

/* ---- exec ---------------------------------------------------------------------------------- */

struct an_exec_opts {
  uint64_t timeout_ms;        /* 0: opts exec_timeout, capped by the remaining lifetime */
  char *const *env;           /* extra "K=V" (NULL-terminated), after the sandbox env */
  const char *workdir;        /* absolute path inside; NULL: opts workdir */
  bool has_stdin;             /* feed stdin from stdin_fd (else /dev/null) */
  int stdin_fd;               /* host fd, borrowed (not closed), read until EOF by a host
                                 process of the library that copies it into a pipe (or the
                                 pty master with tty): the command never holds stdin_fd
                                 itself (no TIOCSTI into a caller's terminal, no reopening
                                 of a caller's file); EOF reaches the command as EOF */
  size_t max_output;          /* stdout+stderr kept; 0: opts max_output */
  size_t max_stdout, max_stderr; /* per stream, 0: none */
  const struct an_secret *secrets; /* redacted in addition to the sandbox's secrets */
  size_t nsecrets;
  an_output_data_fn on_data;  /* streamed output (kept, redacted bytes) */
  void *on_data_arg;
  uint64_t kill_grace_ms;     /* on timeout: SIGTERM to the exec's cgroup, SIGKILL after
                                 this; 0: SIGKILL at once */
  bool has_cancel_fd;         /* end the command when cancel_fd becomes readable: */
  int cancel_fd;              /* host fd (e.g. a signalfd or pipe of the caller's SIGINT/
                                 SIGTERM/SIGHUP); when readable, every process of the exec's
                                 cgroup is killed as on a timeout (kill_grace_ms applies) and
                                 res->cancelled is set (also while the command is being
                                 started: it is then never run, status 137); never read or
                                 closed */
  bool tty;                   /* exec only (run_once: -EINVAL): a pty from the sandbox's own
                                 devpts is the command's controlling terminal and stdin,
                                 stdout and stderr; its output (one stream) is captured and
                                 streamed as stdout; with has_stdin, stdin_fd is copied to
                                 its master and, when stdin_fd is a terminal, the pty takes
                                 its window size at start and on every SIGWINCH the caller's
                                 process group receives; the caller's terminal modes are the
                                 caller's business (a front end sets it raw) */
  unsigned short tty_rows, tty_cols; /* with tty: the pty's window size in character cells
                                 when it is not taken from stdin_fd (no has_stdin, or
                                 stdin_fd not a terminal); 0: none (the pty is 0x0) */
};

struct an_exec_result {
  int status;                 /* CLI status as in EXIT STATUS above */
  int exit_code;              /* the command's exit code; -1 when killed by a signal */
  int signal;                 /* killing signal or 0 */
  bool timed_out;
  bool oom_killed;            /* memory.events / memory.oom_control oom_kill delta > 0 */
  bool cancelled;             /* ended through eo->cancel_fd (status 128+signal as killed) */
  uint64_t duration_ms;
  struct an_output output;    /* stdout/stderr, lengths, truncated flags (output.h) */
};

/* Free the buffers of *res and zero it. */
void an_exec_result_release(struct an_exec_result *res);

/* The members of an exec result inside an open yajl map (sandbox/result_json.c),
 * the one writer `run --json` and `batch` records share:
 *   "exit_code" (null when killed), "signal" (null: none), "status", "timed_out",
 *   "oom_killed", "duration_ms", "stdout", "stderr", "stdout_truncated",
 *   "stderr_truncated" (an_output_json_fields), "artifacts": [an_artifact_json...].
 * arts may be NULL (empty list).  Returns the first non-ok yajl status.
 * Thread-safe on distinct generators. */
yajl_gen_status an_exec_result_json_fields(yajl_gen g, const struct an_exec_result *res,
                                           const struct an_artifact_list *arts);

/* One artifact as a JSON object {"path","type","size","sha256",["target",]"copied"}:
 * paths as an_json_escape_output (non-UTF-8 bytes become U+FFFD), "sha256"
 * null for a symlink, "target" only with `with_target` (`artifacts --json`).
 * Returns the first non-ok yajl status. */
yajl_gen_status an_artifact_json(yajl_gen g, const struct an_artifact *a, bool with_target);

/* Run argv (NULL-terminated, argv[0] a name looked up in the sandbox's PATH
 * or an absolute path) in the sandbox and wait for it (see EXEC above).  eo
 * may be NULL (defaults).  *res is filled on success (release it).  A
 * non-zero exit, a timeout, an OOM kill are successes with res fields set.
 * Event "exec" is recorded (pid, status, timed_out, oom_killed, duration_ms).
 * Errors: -EINVAL empty argv or bad eo field (named); -ETIME the sandbox
 * expired; -ESRCH it is not running, or it ended (destroyed, pid 1 exited)
 * while the command was being started ("... ended while the command was
 * being started"; a command the destroy killed after its start is a
 * success, status 137); -ESTALE its image was removed from the store
 * (image rm --force); the errno of the failing setup step, e.g. -ENOENT
 * "process.cwd /dir: ENOENT" for an eo->workdir that does not exist (only
 * the command's own failure, its lookup or execve, is a success with
 * status 127 or 126). */
int an_sandbox_exec(struct an_sandbox *sb, char *const argv[], const struct an_exec_opts *eo,
                    struct an_exec_result *res, an_error_t *err);

/* One-shot: create a sandbox from opts, run argv in it, destroy it.
 * Optimised: no monitor and no separate exec: pid 1 is `agentnest-init --
 * argv...`, which runs the command as its only child with the caller's
 * pipes, and the sandbox cgroup is the command's (timeout kill, OOM count).
 * eo as for exec, except: eo->workdir is refused (-EINVAL; set the sandbox's
 * workdir), eo->env is added to the sandbox env.  A command status above
 * 128 is reported as signal status-128 (pid 1 reports a shell's status).
 * If the caller is SIGKILLed meanwhile, prune (owner gone) removes what is
 * left.  On return every process of the sandbox has exited and the
 * sandbox is unreachable; its remains are removed by a detached reaper
 * (an_sandbox_destroy_detached; an_sandbox_reap_wait waits).  *id_out (may be NULL) receives the id (heap, caller frees).
 * Errors as create and exec. */
int an_sandbox_run_once(const char *store_root, const struct an_sandbox_opts *opts,
                        char *const argv[], const struct an_exec_opts *eo,
                        struct an_exec_result *res, char **id_out, an_error_t *err);

/* ---- files (wrappers of files.h on the workspace fd; paths relative to /workspace) -------- */

/* Copy host file or directory host_path to dest (relative; NULL = its
 * basename) in the workspace; owned by the sandbox user.  Errors: files.h. */
int an_sandbox_put(struct an_sandbox *sb, const char *host_path, const char *dest,
                   an_error_t *err);
/* Write a buffer of len bytes as the workspace file dest (mode & 0777,
 * 0 = 0644).  Errors: files.h (an_file_write_data). */
int an_sandbox_put_data(struct an_sandbox *sb, const char *dest, const void *data, size_t len,
                        mode_t mode, an_error_t *err);
/* Copy workspace file or directory src out to host path host_dest (a file is
 * written atomically; capped by opts max_read).  Errors: files.h. */
int an_sandbox_get(struct an_sandbox *sb, const char *src, const char *host_dest,
                   an_error_t *err);
/* As an_sandbox_get, calling warn(warn_data, msg) (may be NULL) for each
 * entry a directory copy skips: symlinks, special files, directories nested
 * deeper than AN_TREE_MAX_DEPTH_SKIP (names quoted; see an_dir_get).
 * Errors: as an_sandbox_get. */
int an_sandbox_get_warn(struct an_sandbox *sb, const char *src, const char *host_dest, an_warn_fn warn,
                        void *warn_data, an_error_t *err);
/* Read workspace file src into *data (heap, caller frees; *len its length
 * in bytes; capped by opts max_read, -EFBIG beyond).  Errors: files.h. */
int an_sandbox_get_data(struct an_sandbox *sb, const char *src, void **data, size_t *len,
                        an_error_t *err);

/* ---- snapshot, restore, artifacts, fork ----------------------------------------------------- */

/* Snapshot the workspace to tar_path (snapshot.h; the sandbox is frozen
 * while it is read, so the tar is one point in time).  info may be NULL.
 * Errors: snapshot.h's (an_snapshot_create). */
int an_sandbox_snapshot(struct an_sandbox *sb, const char *tar_path, struct an_snapshot_info *info,
                        an_error_t *err);
/* As an_sandbox_snapshot, calling warn(warn_data, msg) (may be NULL) for
 * each entry left out: special files, directories nested deeper than
 * AN_TREE_MAX_DEPTH_SKIP, paths over PATH_MAX (names quoted).  Errors: as
 * an_sandbox_snapshot. */
int an_sandbox_snapshot_warn(struct an_sandbox *sb, const char *tar_path, struct an_snapshot_info *info,
                             an_warn_fn warn, void *warn_data, an_error_t *err);

/* Replace the workspace content with tar_path (verified against
 * expected_sha256 when non-NULL; hostile entries refused as in snapshot.h).
 * The tar is extracted into a private sibling first; then, with the sandbox
 * frozen, the old content is removed and the new moved in, so processes see
 * the old or the new workspace, never a mix.  On error the workspace is
 * unchanged.  Entries are owned by the sandbox user. */
int an_sandbox_restore(struct an_sandbox *sb, const char *tar_path, const char *expected_sha256,
                       an_error_t *err);

/* an_artifacts_collect on the workspace (max_bytes defaults to opts
 * max_read).  *out: an_artifact_list_free.  Errors: an_artifacts_collect's
 * (artifacts.h). */
int an_sandbox_artifacts(struct an_sandbox *sb, const char *const *globs, size_t nglobs,
                         const struct an_artifact_opts *ao, struct an_artifact_list *out,
                         an_error_t *err);

/* New sandbox with the same options (a fresh id, no name) and a
 * point-in-time copy of the workspace: the source is frozen (cgroup freezer)
 * during the copy and thawed after, also on error.  *out as create. */
int an_sandbox_fork(struct an_sandbox *sb, struct an_sandbox **out, an_error_t *err);

/* ---- list, inspect, events, prune ----------------------------------------------------------- */

struct an_sandbox_info {
  char *id;
  char *name;                 /* NULL: none */
  char *image;
  char *status;               /* "running", "creating" (its create is at work: no pid 1 yet),
                                 "dead" (monitor, owner or init gone), "expired" (deadline
                                 passed, its keeper at work) */
  uint64_t created_ms;        /* CLOCK_REALTIME ms */
  uint64_t deadline_ms;
  pid_t init_pid, monitor_pid;
  pid_t owner_pid;            /* one-shot (run_once): the creating process; else 0 */
};

/* All sandboxes under store_root, sorted by created time.  *list heap array
 * of *n (an_sandbox_info_list_free).  A missing directory is an empty list.
 * Errors: opendir/read errno, named. */
int an_sandbox_list(const char *store_root, struct an_sandbox_info **list, size_t *n,
                    an_error_t *err);
void an_sandbox_info_list_free(struct an_sandbox_info *list, size_t n);

/* 0 when every directory above store_root (NULL: the default) lets others
 * search it (x for others), as sandboxes reach their workspace as their own
 * host ids; create refuses a store without it, and `image import` checks
 * it first.  Errors: -EACCES naming the directory, its mode and the mode it
 * needs; the errno of resolving or stat-ing a parent (named); -ENOMEM.
 * Thread-safe. */
int an_sandbox_check_store_root(const char *store_root, an_error_t *err);

/* Ids of the sandboxes under store_root whose root filesystem is rootfs
 * (an absolute path: an_image_info.rootfs), read from each sandbox's engine
 * spec (root.path).  *ids: NULL-terminated heap array (NULL when none), free
 * with an_sandbox_image_users_free().  Returns the count (>= 0) or a
 * negative errno: the sandboxes directory unreadable (named), -ENOMEM.  A
 * sandbox whose spec cannot be read (a create in progress) is not counted.
 * Thread-safe (reads only); a sandbox created concurrently may be missed. */
int an_sandbox_image_users(const char *store_root, const char *rootfs, char ***ids,
                           an_error_t *err);
void an_sandbox_image_users_free(char **ids);

/* JSON array of the list (objects with the fields above; times RFC 3339).
 * *json heap, caller frees.  Errors: those of an_sandbox_list; -ENOMEM. */
int an_sandbox_list_json(const char *store_root, char **json, an_error_t *err);

/* JSON object describing a sandbox: id, name, image, status, created,
 * deadline, init_pid, monitor_pid, cgroup, workspace, host_uid_base,
 * options (an_sandbox_opts_to_json: never secrets), pids_current.
 * *json heap, caller frees.  Errors: -ENOMEM; the errno of reading the
 * sandbox's state (named). */
int an_sandbox_inspect(struct an_sandbox *sb, char **json, an_error_t *err);

/* Receives one event: a JSON object (one line, no newline) such as
 *   {"time":"2026-..Z","type":"created","id":"..."}
 *   {"time":..,"type":"exec","argv0":"sh","status":0,"timed_out":false,
 *    "oom_killed":false,"duration_ms":3}
 *   {"time":..,"type":"expired"} {"time":..,"type":"destroyed","reason":"destroy"}
 *   {"time":..,"type":"init_exited"} (pid 1 ended: it ignores signals from
 *   inside the sandbox, so a crash or a kill from the host; "destroyed" follows)
 * Return 0 to continue, non-zero to stop (returned by an_sandbox_events). */
typedef int (*an_sandbox_event_fn)(void *data, const char *json);

/* Replay the events of the sandbox id_or_name; with follow, keep waiting for
 * new ones until the sandbox is destroyed (the "destroyed" event is the last)
 * or fn returns non-zero.  Errors: -ENOENT no such sandbox; read errors. */
int an_sandbox_events(const char *store_root, const char *id_or_name, bool follow,
                      an_sandbox_event_fn fn, void *data, an_error_t *err);

/* Remove what dead sandboxes left: a sandbox whose monitor (or, for a
 * one-shot, its owner process) is gone, or whose deadline has passed, is torn
 * down (processes killed, container state, cgroups in every hierarchy,
 * workspace, state dir, name, id range); also orphan cgroups
 * agentnest/sb-* and id range locks with no sandbox, and expiry tombstones.
 * With `all`, live sandboxes are destroyed too.  An owned sandbox
 * (an_sandbox_create_owned) whose owner is gone is removed even while its
 * monitor lives.
 * *report (heap JSON, caller frees):
 *   {"removed":[{"id":..,"reason":R,"container":bool,"cgroup":bool,
 *                "workspace":bool,"state":bool,"idrange":N}],
 *    "containers":[ids],"orphan_cgroups":[paths],"idranges":[bases],
 *    "tombstones":[ids],"errors":[messages]}
 *   R: "expired", "monitor dead", "creator dead" (a create or one-shot whose
 *   process died), "init dead", "incomplete" (no record), "all".
 * Errors: only when the state directory cannot be read; per-sandbox
 * problems are listed in "errors". */
int an_sandbox_prune(const char *store_root, bool all, char **report, an_error_t *err);
/* an_sandbox_prune for context `ctx` (agentnest/ctx.h): store_root NULL is
 * the context's, and the id-range reservations pruned are those under the
 * context's idrange_root.  an_sandbox_prune is this with ctx NULL: *report
 * (heap, caller frees) and errors are an_sandbox_prune's.  May run
 * concurrently with any other call (the store's locks order them). */
struct an_ctx;
int an_sandbox_prune_ctx(const struct an_ctx *ctx, const char *store_root, bool all, char **report,
                         an_error_t *err);

/* Change a live sandbox's egress policy (`agentnest network ID`): `mode`
 * ("allowlist" or "full", NULL: unchanged), entries to add (`allow`, the
 * an_sandbox_opts_add_allow grammar) and to remove (`deny`, the exact text
 * of an entry).  The new policy is checked whole, then the sandbox's
 * nftables ruleset is replaced in ONE transaction (no packet sees a mix;
 * addresses admitted for names are forgotten and resolved again), the
 * options record is rewritten (fork and restore keep the new policy) and
 * the egress process reloads it.  Errors (prefixed "network ID: "):
 * -EINVAL a sandbox made with --network none (it has no egress), --mode
 * none, a bad entry (named); -ENOENT a --deny entry that is not there; -EIO
 * the nft transaction failed (the old rules stay). */
int an_sandbox_network_change(struct an_sandbox *sb, const char *mode, const char *const *allow,
                              size_t nallow, const char *const *deny, size_t ndeny, an_error_t *err);

/* The sandbox's egress policy and counters as JSON:
 *   {"id","mode","allow":[..],"dns_upstream":[..],
 *    "counters":{"redirected_packets","dropped_packets","dropped_bytes","dns_packets"}|null}
 * (null for mode none or when the ruleset cannot be read).  *json heap,
 * caller frees.  Errors: -ENOMEM; the errno of reading the sandbox's
 * options record (named). */
int an_sandbox_network_json(struct an_sandbox *sb, char **json, an_error_t *err);

/* ---- teardown after the result (sandbox/teardown_detach.c) ---- */

/* Destroy sb with only the caller's part on the caller's clock: SIGTERM
 * and grace_ms (milliseconds) as an_sandbox_destroy, then SIGKILL of pid 1 and a wait
 * (up to 10 s) until it has exited: every process of the sandbox dies with
 * its pid namespace, so none runs when this returns.  The sandbox is then
 * unreachable (open, list, inspect, exec: "no such sandbox"; its name free
 * for a new sandbox) and a detached reaper process removes its remains
 * (monitor, container, cgroups, workspace, egress, id range, state) in the
 * background; an_sandbox_reap_wait waits for that, and prune finishes what
 * a killed reaper left.  The handle is still to be closed.  Idempotent: a
 * sandbox already gone is not an error.  Not thread-safe (it forks).
 * Errors: lock errors (named); the errno of a step of an_sandbox_destroy
 * when the sandbox has to be torn down in the caller (no record, or its
 * state directory cannot be moved). */
int an_sandbox_destroy_detached(struct an_sandbox *sb, uint64_t grace_ms, an_error_t *err);

/* Wait until nothing is left of destroyed sandbox `id` (an id, not a
 * name) of store `store_root` (NULL: the default store): if its reaper has
 * not finished, finish the teardown in the caller (serialised with the
 * reaper by the sandbox's lock, so the work is done once).  0 at once for a
 * sandbox that left nothing or was never destroyed detached.
 * Errors: -EINVAL not an id; an_sandbox_destroy's removal errors. */
int an_sandbox_reap_wait(const char *store_root, const char *id, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
