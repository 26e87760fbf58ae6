/* engine/exec_spawn.h — one more process in a live container (internal).
 * The one implementation of joining a container, used by the runc-style
 * exec (engine/exec.c, an_container_exec) and by the sandbox layer's exec
 * (sandbox/exec_spawn.c, which adds a per-exec child cgroup and pipes).
 * A joiner (engine/exec_join.h) lands in `cg`, joins every namespace of
 * the container's init through its pidfd (setns(2) with a pidfd: the set is
 * taken atomically from the right process) and only then forks the process,
 * which is born inside all of them (never visible in the container with
 * host state) and runs the exec-only init path (engine/init.h): identity,
 * capabilities, no_new_privs, the container's seccomp filter, no runtime
 * fds, cwd confined to the root.  Sync points are the engine's
 * (engine/sync.h): [1] and [7] with the joiner, then [1], [4], [5], [6]. */
#ifndef AN_ENGINE_EXEC_SPAWN_H
#define AN_ENGINE_EXEC_SPAWN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/cgroup.h"
#include "agentnest/error.h"
#include "agentnest/spec.h"
#include "engine/seccomp.h"

struct an_exec_target {
  const char *what;                         /* "container ID" / "sandbox ID", for messages */
  const struct an_spec *spec;               /* the container's spec (linux.ns_flags) */
  const struct an_spec_process *process;    /* what to run (args[0] looked up in PATH) */
  const char *rootfs;                       /* host path of the root, for messages */
  int init_pidfd;                           /* pidfd of the container's pid 1 (borrowed) */
  int state_dirfd;                          /* locked state dir the child must not keep, or -1 */
  struct an_cgroup *cg;                     /* cgroup to land in, or NULL (borrowed) */
  const struct an_seccomp_program *seccomp; /* filter to load, or NULL (borrowed) */
  int stdio[3];                             /* fds for 0, 1, 2; -1 keeps the caller's */
  uint64_t timeout_ms;                      /* bound on reaching execve (ms), 0: none */
  bool has_cancel_fd;                       /* cancel_fd is watched until execve: */
  int cancel_fd;                            /* readable: the caller gave up; the start ends
                                               with -ECANCELED (borrowed; never read) */
  bool cg_exclusive;                        /* cg holds this exec's processes alone (a
                                               sandbox's exec-N); false: a container's
                                               own, with its init and other execs */
};

/* A process cloned into the container: stopped at sync point [4] (its
 * identity, capabilities and PATH lookup done; not yet exec'd), or, when
 * `prepared` (no terminal: it inherited that setup from the joiner,
 * engine/init.h an_init_exec_inherits_setup), already on its way to
 * execve without a stop. */
struct an_exec_child {
  char what[128];        /* the target's name, for messages of an_exec_go */
  uint64_t deadline_ms;  /* CLOCK_MONOTONIC ms by which execve must be reached, 0: none */
  pid_t pid;
  int pidfd;    /* owned: O_CLOEXEC */
  int sync_fd;  /* owned: the parent's end of the sync socket */
  int master;   /* owned: the terminal's master when process.terminal, else -1 */
  bool prepared; /* no [4]/[5]: an_exec_go only waits for [6] */
  /* set by a failed an_exec_clone or an_exec_go: the failure is the
   * command's own (args[0] not found or not executable, its execve failed:
   * sync.h AN_SYNC_COMMAND_ERROR), not a step of its setup */
  bool command_failed;
  const struct an_cgroup *cg;   /* borrowed: the target's cgroup (or NULL), for an_exec_abort */
  int cancel_fd;                /* borrowed: the target's cancel fd, or -1 */
};

/* Clone t->process into the container and run it to sync point [4] (a
 * prepared process: let it run on towards execve).  On
 * success *c holds the child (its fds owned by the caller: pass it to
 * an_exec_go or an_exec_abort).  On failure nothing is left: a child that
 * was made is killed and reaped.  Errors: -ENOMEM copying the process,
 * -errno of socketpair, clone3, the
 * cgroup write, the joiner's report (setns into the namespaces, its clone3),
 * or the child's own report
 * (e.g. -ENOENT args[0] not found, -EACCES not executable), each naming
 * t->what; -ETIMEDOUT when t->timeout_ms passed first (the child can be
 * signalled by the container's processes once it has their uid, e.g.
 * stopped with SIGSTOP: the wait must not be endless). */
int an_exec_clone(const struct an_exec_target *t, struct an_exec_child *c, an_error_t *err);

/* The calling thread's children (/proc/thread-self/children, however
 * many), in *pids (heap, caller frees; *n of them, the newest last).
 * Returns false (nothing stored) when the list cannot be read or there is
 * no memory.  Thread-safety: the calling thread's children only. */
bool an_exec_thread_children(pid_t **pids, size_t *n);

/* Kill and reap every child of the calling thread (an_exec_thread_children)
 * that is in cgroup `cg` (NULL: nothing), but for the nspare pids of
 * `spare`: a process the joiner cloned whose pidfd never came, because a
 * cgroup kill ended the joiner between its clone and [7].  Left
 * unreaped, it would stay the caller's zombie and keep the container's
 * pid 1 (which does not exit while a process of its pid namespace is
 * unreaped) alive: a destroy would wait until the caller exits (a server:
 * forever).  an_exec_clone calls it on failure, sparing for a cgroup that
 * is not t->cg_exclusive the children the thread had before the joiner's
 * clone (the container's init, earlier detached execs).  Each reap is
 * bounded (an_cgroup_reap_killed, 5.1 s).  Best effort: no errors (a
 * process already gone is skipped).  Thread-safety: acts on the calling
 * thread's children only. */
void an_exec_reap_unreported(const struct an_cgroup *cg, const pid_t *spare, size_t nspare);

/* Sync points [5] go (not for a prepared child) and [6]: wait until the
 * child has called execve.  On
 * success c->sync_fd is closed and c->pidfd, c->pid stay the caller's.
 * Errors: the child's report of a failed execve (its errno), -EPIPE when it
 * died first, -ETIMEDOUT past the target's timeout_ms.  On failure the
 * caller still owns c (an_exec_abort). */
int an_exec_go(struct an_exec_child *c, an_error_t *err);

/* Kill (SIGKILL) and reap a child of an_exec_clone that will not be run, and
 * close its fds.  Safe on a child whose fds are -1.  A child frozen by a v1
 * freezer is let out of it (an_cgroup_thaw_out; the target's cgroup must
 * still be open); one that still does not die within 5 s is left unreaped
 * (it goes when its cgroup is thawed): the wait is bounded. */
void an_exec_abort(struct an_exec_child *c);

/* Close the child's fds (sync socket, terminal master, pidfd) and leave the
 * process alone: for a detached exec. */
void an_exec_child_close(struct an_exec_child *c);

#endif
