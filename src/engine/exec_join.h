/* engine/exec_join.h — the joiner: the short-lived host process through
 * which an exec'd process enters a live container (issue 10 item 2, "the
 * exec-join window"; runc's nsexec does the same double fork).
 *
 * A process cloned straight into the container's pid namespace is visible
 * there (/proc/PID) from its first instruction, while it still holds the
 * host's mount, network, ipc and uts namespaces and the runtime's argv and
 * environment: /proc/PID/{mountinfo,net/tcp,net/unix,cmdline} are readable by any
 * process of that pid namespace without ptrace rights (proc(5)), and an
 * open fd keeps showing that namespace.  So the runtime never does that:
 *
 *   runtime (host)          joiner (host pid ns)                    process
 *   clone3 --------------->  (v2: lands in the exec's cgroup)
 *                           argv+env areas, comm -> "agentnest-exec"
 *   enter cgroup (v1:       not dumpable
 *    one RCU grace period,  setns(init pidfd, EVERY namespace)
 *    4-14 ms here)          rlimits, keyring, cwd, Landlock
 *                           (an_init_prepare_exec; not with a tty;
 *                           the joiner keeps the runtime's uid)
 *   [1] idmapped --------->
 *                           clone3(CLONE_PARENT) -----------------> born in the container's
 *   [7] spawned (pidfd) <--                                        pid ns, already inside all
 *   reap the joiner          _exit(0)                              of its other namespaces,
 *   [1] idmapped (tty only) -------------------------------------> not dumpable: exec-only
 *   ... [4] [5] (tty only) [6] as sync.h                           init (init.h)
 *
 * setns(CLONE_NEWPID) only sets the pid namespace of later children
 * (setns(2)): the joiner itself is never in the container's pid namespace,
 * and its child is the first process the container can see.  The child is
 * the runtime's own child (CLONE_PARENT), so waitid on its pidfd works as
 * before.  It is not dumpable from birth (dumpability is copied with the mm)
 * until execve, so /proc/PID/{environ,mem,fd,exe,root} of it are closed to
 * the container (ptrace_may_access against the host-created mm), and the
 * joiner overwrites its copy of the runtime's argument and environment
 * strings, so /proc/PID/cmdline (readable without ptrace rights) shows
 * "agentnest-exec", never the runtime's command line, and nothing of the
 * runtime's environment is left; the process's own strings were copied off
 * those areas first (an_exec_process_copy).
 *
 * What does NOT live here: the runtime's side (exec.c), the process's own
 * setup (init.c). */
#ifndef AN_ENGINE_EXEC_JOIN_H
#define AN_ENGINE_EXEC_JOIN_H

#include "engine/init.h"

struct an_exec_joiner {
  int init_pidfd;                    /* the container's pid 1: whose namespaces to join */
  int ns_flags;                      /* CLONE_NEW* of the container (all joined) */
  const struct an_init_config *cfg;  /* for the process: cfg->sync_fd is shared with it */
};

/* A deep copy of a process whose strings may point into the runtime's
 * argv or environment (the sandbox layer's args, --env and --workdir do):
 * the joiner wipes those areas.  Numeric arrays (rlimits, additional gids) are shared, not
 * copied. */
struct an_exec_process_copy {
  struct an_spec_process proc;        /* every string owned by the copy */
  struct an_spec_capabilities caps;   /* proc.capabilities points here when given */
};

/* Copy *p into *c (heap; free with an_exec_process_copy_free).  Errors:
 * -ENOMEM (nothing is left allocated). */
int an_exec_process_copy(struct an_exec_process_copy *c, const struct an_spec_process *p,
                         an_error_t *err);
void an_exec_process_copy_free(struct an_exec_process_copy *c);

/* Joiner entry after clone3: never returns.  Hides the runtime's argv and
 * environment, becomes not dumpable, joins every namespace, runs the part
 * of the process's setup that needs no identity change
 * (an_init_prepare_exec, unless process.terminal) while the runtime moves
 * it into the exec's cgroup,
 * waits for [1] (the move is done), clones the process
 * (an_init_main(j->cfg)) as the runtime's child and sends AN_SYNC_SPAWNED
 * with the process's pidfd, then exits 0.  On any error it sends
 * AN_SYNC_ERROR (e.g. "join the namespaces of the container's init (setns
 * mnt|net|...): EPERM") and exits 1. */
_Noreturn void an_exec_joiner_main(const struct an_exec_joiner *j);

#endif
