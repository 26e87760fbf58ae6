/* sandbox/sandbox_internal.h — the sandbox handle and helpers shared by the
 * files of src/sandbox/ that implement agentnest/sandbox.h (internal). */
#ifndef AN_SANDBOX_INTERNAL_H
#define AN_SANDBOX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "util/clock.h"
#include "agentnest/cgroup.h"
#include "agentnest/sandbox.h"
#include "agentnest/spec.h"
#include "agentnest/ctx.h"

#define AN_SB_DIR "sandboxes"
#define AN_SB_NAMES_DIR "sandbox-names"
#define AN_SB_EXPIRED_DIR "sandbox-expired"
/* Destroyed sandboxes whose remains a detached reaper is removing
 * (teardown_detach.c): <root>/sandbox-reaping/<id>, the state directory
 * renamed out of AN_SB_DIR so that no lookup finds it. */
#define AN_SB_REAPING_DIR "sandbox-reaping"
/* A create's first directory: <root>/sandboxes/.new-<id>.<pid>.<start
 * time> (the creating process: its pid and /proc start time), renamed to
 * <id> once it holds the record, so that no <root>/sandboxes/<id> is ever
 * seen without a record and a killed create is known by its name (unborn.c). */
#define AN_SB_UNBORN_PREFIX ".new-"
/* A sandbox directory without a complete record younger than this (ms) is
 * a create in progress (prune, unborn.c). */
#define AN_SB_CREATE_GRACE_MS 60000
#define AN_SB_CONTAINERS_DIR "containers"
#define AN_SB_STATE_FILE "sandbox.json"
#define AN_SB_OPTIONS_FILE "options.json"
/* Values of secrets (sandbox/secrets_file.c): on tmpfs, outside the state. */
#define AN_SB_SECRETS_DIR "/run/agentnest/secrets"
#define AN_SB_EVENTS_FILE "events.jsonl"
#define AN_SB_LOCK_FILE "lock"
/* A state directory renamed away at the end of its teardown (teardown.c),
 * with at most its lock file left; prune removes one a crash left. */
#define AN_SB_GONE_PREFIX ".gone-"
#define AN_SB_CGROUP_PREFIX "agentnest/sb-"
#define AN_SB_INIT_DEST "/run/.agentnest-init"

struct an_seccomp_program;

/* What sandbox.json holds. */
struct an_sb_record {
  char id[AN_SANDBOX_ID_LEN + 1];
  char *name, *image;
  uint64_t created_ms, deadline_ms;
  struct an_sandbox_ids ids;
  char *idrange_root;         /* where ids is reserved; NULL: AN_IDRANGE_ROOT_DEFAULT */
  pid_t init_pid; uint64_t init_start;
  pid_t monitor_pid; uint64_t monitor_start;
  pid_t owner_pid; uint64_t owner_start;   /* run_once, create_owned: the creating process; else 0 */
  struct an_secret *secrets; size_t nsecrets;  /* name/value heap strings */
};

struct an_sandbox {
  char *root;                 /* store root */
  char *dir;                  /* <root>/sandboxes/<id> */
  char *workspace;            /* <dir>/workspace */
  char *containers;           /* <root>/containers: the engine's state root */
  char *cgroup_path;          /* agentnest/sb-<id> */
  struct an_sb_record rec;
  struct an_sandbox_opts *opts;
  int ws_fd;
  int init_pidfd;             /* lazily opened, checked against init_start */
  struct an_cgroup *cg;       /* lazily opened */
  /* exec slot (exec.c): a reusable child cgroup exec-<n> of the sandbox
   * cgroup, held through the flock of <dir>/exec-slots/<n>.lock */
  struct an_cgroup *exec_cg;
  int exec_slot_fd;
  uint64_t exec_oom_base;
  bool exec_oom_ok;
  /* exec cache (exec_spawn.c) */
  struct an_spec *spec;
  struct an_seccomp_program *seccomp;
};


/* Paths and ids (state.c). */
const char *an_sb_root_or_default(const char *root);
int an_sb_new_id(char id[AN_SANDBOX_ID_LEN + 1], an_error_t *err);
bool an_sb_valid_id(const char *s);
uint64_t an_sb_now_ms(void);
int an_sb_record_write(const char *dir, const struct an_sb_record *rec, an_error_t *err);
int an_sb_record_read(const char *dir, struct an_sb_record *rec, an_error_t *err);
void an_sb_record_clear(struct an_sb_record *rec);
/* Whether pid is alive with the recorded start time (0 pid: false). */
bool an_sb_pid_alive(pid_t pid, uint64_t start);
/* Resolve id or name to an id (names dir, or a live dir, or a tombstone).
 * Returns 0 live dir exists, 1 tombstone (expired), -ENOENT. */
int an_sb_resolve(const char *root, const char *id_or_name, char id[AN_SANDBOX_ID_LEN + 1],
                  an_error_t *err);
/* flock the sandbox's lock file (LOCK_EX); returns the fd or -errno. */
int an_sb_lock(const char *dir, an_error_t *err);
/* A teardown at work (teardown.c, teardown_detach.c) marks the state it
 * holds the lock of with the file AN_SB_DESTROYING_MARK before it stops
 * anything (an_sb_mark_destroying; best effort; the state's removal takes
 * it).  an_sb_destroying: the state `dir` is gone, or it has the mark and
 * its lock is held (a mark with the lock free is a teardown that died:
 * the sandbox is dead, for destroy or prune to finish).  state.c. */
#define AN_SB_DESTROYING_MARK "destroying"
void an_sb_mark_destroying(const char *dir);
bool an_sb_destroying(const char *dir);
/* The sandbox of state `dir` has ended or is ending: a teardown is at work
 * (an_sb_destroying), its record is gone, or its status (an_sb_status) is
 * no longer "running".  For telling a request that broke off because of
 * that (a file a destroy removed, a monitor connection it reset) from
 * one that failed on its own.  list.c. */
bool an_sb_ended(const char *dir);
/* Handle from a record (used by create and open).  Takes ownership of rec's
 * strings (rec is zeroed). */
int an_sb_handle_new(const char *root, struct an_sb_record *rec, struct an_sandbox **out,
                     an_error_t *err);
int an_sb_ensure_cgroup(struct an_sandbox *sb, an_error_t *err);
int an_sb_ensure_init_pidfd(struct an_sandbox *sb, an_error_t *err);

/* Remove the directories of creates killed before their sandbox directory
 * got its name (AN_SB_UNBORN_PREFIX; unborn.c): those whose creating
 * process (named by the directory) is dead, and is `owner` when owner > 0;
 * every one when `all`.  Best effort: nothing else exists for them yet (no
 * id range, cgroup, mount or process).  Calls `removed(id, cb_arg)` for
 * each one removed (may be NULL).  Thread-safe (no shared state); a create
 * in progress is removed only by `all`. */
void an_sb_remove_unborn(const char *root, pid_t owner, bool all, void (*removed)(const char *id, void *cb_arg),
                         void *cb_arg);

/* Store access (store_access.c): -EACCES naming the directory and the mode
 * it needs when a directory above the store root does not let others
 * search it (the sandboxes' host ids could not reach their workspaces);
 * the errno of resolving or stat-ing a parent otherwise. */
int an_sb_check_store_parents(const char *root, an_error_t *err);

/* Events (events.c): append one event object; `fields` is a JSON fragment
 * of extra members (",\"k\":v..." without braces) or NULL.  Best effort. */
void an_sb_event(const char *dir, const char *type, const char *fields_fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* an_idrange_free of a sandbox's range, only while its reservation is the
 * sandbox's own: its owner path ends in "/<owner_name>" (the sandbox id;
 * idrange.c).  A range released earlier (a teardown killed before its
 * state went) may be another sandbox's by now, of any store: unlinking its
 * reservation would hand the same host uids to a third one.
 * Errors: -EBUSY reserved by another owner (left as it is); -ENOENT not
 * reserved; -EINVAL ids not a range an_idrange_alloc hands out; the
 * open/read/unlink errno.  Thread-safe (no shared state). */
int an_sb_idrange_free_owned(const char *state_root, const struct an_sandbox_ids *ids, const char *owner_name,
                             an_error_t *err);

/* Teardown (teardown.c): remove everything of sandbox `id` (processes,
 * container, cgroups, workspace, name, id range, state).  `reason` goes into
 * the "destroyed" event; `tombstone` leaves an expiry tombstone; grace_ms as
 * destroy.  `skip_monitor` when called by the monitor itself.  `rep` (may
 * be NULL) receives what was found and removed.  Idempotent. */
struct an_sb_teardown_report {
  bool container;   /* an engine container was there */
  bool cgroup;      /* the sandbox cgroup was there */
  bool workspace;   /* a workspace was there */
  bool state;       /* the state directory was removed */
  int64_t idrange;  /* host uid base of the released range; 0 none; -1 release failed */
};
int an_sb_teardown(const char *root, const char *id, const char *reason, bool tombstone,
                   uint64_t grace_ms, bool skip_monitor, struct an_sb_teardown_report *rep,
                   an_error_t *err);
/* an_sb_teardown of the state directory <root>/<area>/<id> (area:
 * AN_SB_DIR, or AN_SB_REAPING_DIR for a destroyed sandbox's remains); the
 * audit record's operation is audit_op ("destroy"; "reap" where the caller
 * already recorded the destroy). */
int an_sb_teardown_in(const char *root, const char *area, const char *id, const char *reason,
                      const char *audit_op, bool tombstone, uint64_t grace_ms, bool skip_monitor,
                      struct an_sb_teardown_report *rep, an_error_t *err);
/* SIGTERM the monitor, wait up to 1 s for it to exit, then SIGKILL (pid
 * checked against its start time; 0 pid: nothing). */
void an_sb_stop_monitor(pid_t pid, uint64_t start);
/* Remove <root>/names/<name> if it still names sandbox `id` (a new sandbox
 * may hold the name already); name NULL: nothing. */
void an_sb_release_name(const char *root, const char *name, const char *id);
/* SIGTERM to pid 1 and wait up to grace_ms for it to exit. */
void an_sb_stop_with_grace(const struct an_sb_record *rec, uint64_t grace_ms);
/* The caller's part of a destroy (teardown_detach.c): under the lock, the
 * grace period, SIGKILL of pid 1 and the wait for it to exit (every
 * process of the sandbox dies with its pid namespace), the state directory
 * renamed to <root>/AN_SB_REAPING_DIR/<id> (no lookup finds it from then
 * on), its name released; then, with `spawn_reaper`, the rest is removed
 * in the background (an_sb_teardown_in of the reaping area) by the
 * sandbox's live monitor, else by the store's detached reaper.  Without
 * (tests: a reaper killed before it began), prune finds the remains.  A
 * sandbox without a record, or one whose directory cannot be renamed, is
 * torn down in the caller.  `audit_now`: the "destroy" audit record is
 * written by the caller (the reaper's is then "reap"); else by the reaper.
 * 0 also when the sandbox is already gone. */
int an_sb_teardown_detached(const char *root, const char *id, const char *reason, uint64_t grace_ms,
                            bool audit_now, bool spawn_reaper, an_error_t *err);
/* The monitor's part when a detached destroy moved its sandbox's state to
 * <root>/AN_SB_REAPING_DIR/<id> (teardown_detach.c): every removal step
 * there, without stopping the monitor (the caller is it).  0 when nothing
 * was moved. */
int an_sb_reap_moved(const char *root, const char *id, an_error_t *err);
/* rmdir the sandbox cgroup's directories (children first) in every
 * hierarchy, also where it exists in only some; *found set when one
 * existed.  True when none is left (teardown.c). */
bool an_sb_rmdir_cgroup_dirs(const char *id, bool *found);
/* "running", "expired", "creating" or "dead" (list.c). */
#define AN_SB_CREATE_GRACE_MS 60000
const char *an_sb_status(const struct an_sb_record *rec);
/* Freeze or thaw the sandbox cgroup (workspace_ops.c). */
int an_sb_freeze(struct an_sandbox *sb, bool frozen, an_error_t *err);
/* Bytes a workspace copy may hold when written to the file system of `fd`
 * (a snapshot's tar, a fork's temporary copy): the space free there for
 * unprivileged users divided by `copies` (how many times it will be written
 * there), so a sandbox's sparse or huge files cannot fill the host's disk.
 * 1 when it cannot be told (fstatvfs failed), which refuses any content. */
uint64_t an_sb_copy_cap(int fd, unsigned copies);

/* Workspace storage and its quota (workspace_quota.c). */
enum an_sb_ws_kind { AN_SB_WS_PROJECT_QUOTA, AN_SB_WS_IMAGE, AN_SB_WS_NONE };
/* Which mechanism a workspace made under directory `dir` gets on this host;
 * `why` (len bytes) receives a one-line description (doctor prints it). */
enum an_sb_ws_kind an_sb_ws_mechanism(const char *dir, char *why, size_t len);
/* Make <dir>/workspace (`ws` is that path, for messages and the mount) of
 * the sandbox directory `dir` of store `root` (its workspace-templates/),
 * owned uid:gid, mode 0700, bounded to `disk` bytes and `inodes` inodes by
 * the kernel; `projid` is its project id where a project quota is used.
 * inodes is lowered to disk / 2048 where larger (ext4's inode tables must
 * fit; one rule for both mechanisms).
 * Errors: -EOPNOTSUPP no mechanism on this host (fail closed); -ENOSPC an image larger than the space free;
 * -EBUSY project id in use; mke2fs/loop/mount errors.  Nothing is left
 * on failure. */
int an_sb_ws_make(const char *root, const char *dir, const char *ws, uint32_t projid, uint64_t disk,
                  uint64_t inodes, uid_t uid, gid_t gid, an_error_t *err);
/* Remove the workspace under the sandbox directory fd `dfd`: unmount an
 * image (lazily), remove the tree, clear a project quota's limits, delete
 * the image.  Idempotent (nothing there: 0). */
int an_sb_ws_remove(int dfd, an_error_t *err);

/* Monitor (monitor.c): double-fork the monitor of sandbox `sb`; fills
 * sb->rec.monitor_pid/start.  With sb->rec.owner_pid set, the monitor also
 * tears the sandbox down when that process exits. */
int an_sb_monitor_start(struct an_sandbox *sb, an_error_t *err);

/* Spawn (exec_spawn.c): clone a process into the sandbox running `argv`
 * with stdio fds, in cgroup `cg`.  *pidfd and *pid owned by the caller.
 * On failure *command_failed (when non-NULL) says whether it was the
 * command's own (not found, not executable: a shell's 127/126), not a
 * step of the start. */
struct an_sb_spawn {
  char *const *argv;
  char *const *env_extra;
  const char *workdir;
  int stdio[3];
  struct an_cgroup *cg;
  uint64_t timeout_ms;   /* bound on the start (until execve), 0: none */
  bool has_cancel_fd;    /* cancel_fd readable before execve: -ECANCELED */
  int cancel_fd;
  /* process.terminal: a pty from the sandbox's own devpts (engine/terminal.h)
   * replaces stdio; its master is returned in *master (owned by the caller);
   * rows/cols (0: the kernel's default) its size at start */
  bool terminal;
  unsigned short rows, cols;
  int *master;
  bool *command_failed;
};
int an_sb_spawn(struct an_sandbox *sb, const struct an_sb_spawn *sp, pid_t *pid, int *pidfd,
                an_error_t *err);

/* Who keeps a sandbox alive: the creating process alone (run_once, no
 * monitor), a monitor (create), or a monitor that also ends the sandbox
 * when the creating process exits (create_owned).  AN_SB_KEEP_POOL: as
 * MONITOR_AND_OWNER (the owner is the pool keeper) with no deadline: the
 * lifetime starts when an_pool_claim hands the sandbox out (pool.c). */
enum an_sb_keeper { AN_SB_KEEP_CALLER, AN_SB_KEEP_MONITOR, AN_SB_KEEP_MONITOR_AND_OWNER,
                    AN_SB_KEEP_POOL };
/* Create.  oneshot_argv: pid 1 runs `agentnest-init -- argv...`; stdio: fds
 * for pid 1 (NULL: /dev/null). */
int an_sb_create(const char *store_root, const struct an_sandbox_opts *opts,
                 enum an_sb_keeper keeper, char *const *oneshot_argv, const int stdio[3],
                 struct an_sandbox **out, an_error_t *err);

/* Wait for the process behind pidfd while capturing out_fd/err_fd per oo;
 * at timeout_ms, or when cancel_fd (-1: none) is readable, kill cg (or the
 * process): SIGTERM, kill_grace_ms, SIGKILL.
 * Fills res->output, exit_code, signal, timed_out, cancelled (exec.c). */
/* Reap a command (the child behind pidfd) that exited or was SIGKILLed,
 * in bounded time (an_cgroup_reap_killed, 5.1 s: a frozen cgroup, a tracer
 * in the sandbox that holds its zombie).  *si gets its end; one that could
 * not be reaped is SIGKILLed again, left for its parent's exit, and
 * reported as killed by SIGKILL: returns 1.  0 reaped; -errno of waitid.
 * (exec.c; the exec path and the monitor's processes use it.) */
int an_sb_reap_command(const struct an_cgroup *cg, int pidfd, siginfo_t *si);
/* What the command's stderr gets when an_sb_reap_command returned 1. */
#define AN_SB_UNREAPED_NOTE \
  "agentnest: the command did not end within 5 s of its SIGKILL (a tracer holds it, " \
  "or it is stuck in the kernel): reported as killed, it is left to end with the sandbox\n"

/* The error of an exec (or process start) the sandbox's end cut short
 * (ESRCH; exec_spawn.c, exec.c); the argument: the sandbox id. */
#define AN_SB_ENDED_MEANWHILE \
  "sandbox %s ended while the command was being started (destroyed, or its pid 1 exited)"

struct an_output_opts;
struct an_secret;
int an_sb_wait_capture(struct an_cgroup *cg, int pidfd, int out_fd, int err_fd,
                       uint64_t timeout_ms, uint64_t kill_grace_ms, int cancel_fd,
                       const struct an_output_opts *oo, struct an_exec_result *res,
                       an_error_t *err);

/* The secrets to redact from one command's output: the sandbox's, then the
 * call's (eo->secrets).  *list borrows the sandbox's array when the call
 * has none; else it is *owned, which the caller frees (exec.c).  Errors:
 * -ENOMEM (the caller must then not capture: redaction fails closed). */
int an_sb_exec_secrets(const struct an_sandbox *sb, const struct an_exec_opts *eo,
                       const struct an_secret **list, size_t *n, struct an_secret **owned,
                       an_error_t *err);

/* res->status from exit_code/signal/timed_out/oom_killed as DESIGN's exit
 * statuses: 137 OOM kill, 124 timeout, 128+N signal N, else the code. */
void an_sb_finish_status(struct an_exec_result *res);

/* ---- secret values (sandbox/secrets_file.c) ---- */

/* Write the values of a new sandbox's secrets to AN_SB_SECRETS_DIR/<id>.json
 * (0600, created O_EXCL; directories 0700, checked to be ours).  Nothing
 * when n == 0.  Errors: mkdir/open/write errno, -EPERM for a secrets
 * directory that is not ours or is open to others. */
int an_sb_secrets_write(const char *id, const struct an_secret *s, size_t n, an_error_t *err);

/* Fill the values of rec->secrets (names from sandbox.json) from the
 * secrets file.  -ENOENT when the file or a value is missing (message says
 * so), parse errors -EINVAL. */
int an_sb_secrets_read(struct an_sb_record *rec, an_error_t *err);

/* 0 when every secret of the handle has its value; else -ENOENT naming the
 * secret and the missing file (exec and fork refuse then: fail closed). */
int an_sb_secret_values_ok(const struct an_sandbox *sb, an_error_t *err);

/* Remove the secrets file of sandbox `id` (no error if missing). */
void an_sb_secrets_remove(const char *id);

/* Fork a detached grandchild (a session of its own, reparented: the caller
 * never reaps it) for a long-lived host process (daemon.c).  Returns 0 in
 * the grandchild, *pipe_fd the write end of a CLOEXEC pipe on which it
 * reports that it is ready; 1 in the caller, *pipe_fd the read end (the
 * intermediate child already reaped); or -errno "WHAT: pipe|fork". */
int an_sb_fork_detached(const char *what, int *pipe_fd, an_error_t *err);

/* an_sb_fork_detached without the wait for the grandchild: the
 * intermediate child reports the grandchild's pid (fork's return) before it
 * exits, so the caller goes on while the grandchild is still being
 * scheduled.  Returns 0 in the grandchild, 1 in the caller with *pid set.
 * Errors: -errno of pipe/fork; -ECHILD the second fork failed. */
int an_sb_fork_detached_pid(const char *what, pid_t *pid, an_error_t *err);

#endif
