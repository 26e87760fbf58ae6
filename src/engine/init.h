/* engine/init.h — what the container's first process (and each exec'd
 * process) does between clone3 and execve, child side of the protocol in
 * sync.h.  The parent prepares everything that needs allocation or host
 * files (struct an_init_config); the child only applies it.
 *
 * /proc/PID/exe (BL-01, runc CVE-2019-5736): the child makes itself
 * non-dumpable right after clone3, before it joins or becomes visible in any
 * container namespace.  Its mm was created by the host runtime, so
 * ptrace_may_access() — which guards /proc/PID/exe, /proc/PID/fd, /proc/PID/mem
 * — fails for every container process (they hold no capability in the host
 * user namespace).  The container's pid 1 is a fresh pid namespace: nothing
 * else lives there before execve; an exec'd process is visible only while
 * non-dumpable.  execve resets dumpability for the new, container-owned image.
 * Not covered by this: a container binary whose interpreter line names
 * /proc/self/exe makes the kernel run the runtime again as a container
 * process; with a user namespace (the default) that process is an
 * unprivileged host uid that cannot write the root-owned runtime binary.
 *
 * What does NOT live here: the parent side (container.c, exec.c). */
#ifndef AN_ENGINE_INIT_H
#define AN_ENGINE_INIT_H

#include <stdbool.h>
#include <sys/types.h>
#include "agentnest/spec.h"
#include "engine/namespaces.h"

struct an_seccomp_program;
struct an_cgroup;

struct an_init_config {
  const struct an_spec *spec;
  const struct an_spec_process *process;  /* spec->process, or the exec'd process */
  const char *rootfs;                      /* absolute host path of the root (messages) */
  int root_mnt_fd;                         /* create/run: a detached recursive clone of the
                                              root made by the parent (open_tree), which init
                                              attaches; unused when exec_only */
  const char *bundle;                      /* for relative bind sources; may be NULL */
  pid_t parent_pid;                        /* the runtime, for PR_SET_PDEATHSIG */
  int sync_fd;                             /* child's end of the sync socketpair */
  int parent_sync_fd;                      /* parent's end: the child closes it first */
  int start_fd;                            /* listening start socket (create), or -1 */
  int state_dirfd;                         /* the parent's locked state dir: closed first, so
                                              the lock is not held by init (flock(2) locks
                                              belong to the open file description) */
  const struct an_ns_plan *ns;
  const struct an_cgroup *cgroup;          /* the container's cgroup (create/run), for the
                                              cgroup mount's view; NULL when exec_only */
  struct an_cgroup_birth *birth;           /* v1 `tasks` files the child writes itself into
                                              first (agentnest/cgroup.h), or NULL: the
                                              runtime moves it (an_cgroup_enter) */
  bool in_userns;                          /* runs in a (new or joined) user namespace */
  bool become_root_early;                  /* setresuid(0) after the maps are written */
  const int *idmap_fds;                    /* per mounts[i]: idmapped detached mount made by
                                              the parent, or -1; or NULL */
  const struct an_seccomp_program *seccomp;/* NULL: none */
  bool no_pivot, no_new_keyring;
  int preserve_fds;
  int stdio[3];                            /* -1: keep */
  bool exec_only;                          /* an exec into a running container */
  bool needs_hook_state;                   /* createContainer/startContainer hooks: the
                                              parent sends the state JSON at [3] */
  bool inherited_setup;                    /* exec_only: the joiner ran an_init_prepare_exec
                                              (inherited); skip it and [1], [4], [5] */
};

/* The part of an exec's process setup that needs no identity change and
 * that a child inherits: rlimits, a new session keyring, cwd confined to the
 * root, Landlock.  The joiner (exec_join.h) runs it after its setns, while
 * the runtime still moves it into the exec's cgroup, so that this work
 * overlaps the cgroup write instead of following it; the process then sets
 * inherited_setup and does only identity, capabilities, no_new_privs and
 * the PATH lookup.  The joiner keeps the runtime's identity (host root,
 * unmapped in the sandbox): no host process outside the sandbox's pid
 * namespace ever runs with the sandbox's uid.  Only for c->exec_only
 * without process->terminal or become_root_early.  Errors: -errno of
 * setrlimit, keyctl, the cwd (-ENOENT, -ENOTDIR, -ELOOP), Landlock, message
 * set.  Not thread-safe (it changes the calling process). */
int an_init_prepare_exec(const struct an_init_config *c, an_error_t *err);

/* Whether an exec's process inherits the first part of its setup from the
 * joiner (an_init_prepare_exec).  Such a process has nothing for the
 * runtime to see or pass before it runs: it skips sync points [1], [4] and
 * [5], does its identity, capabilities, no_new_privs and PATH lookup, and
 * goes on to the fd seal, seccomp and execve ([6], or an error). */
static inline bool an_init_exec_inherits_setup(const struct an_init_config *c) {
  return c->exec_only && !c->process->terminal && !c->become_root_early;
}

/* Child entry after clone3: never returns (execve or _exit).  Errors are sent
 * to the parent as AN_SYNC_ERROR messages, the command's own (PATH lookup,
 * execve) as AN_SYNC_COMMAND_ERROR (sync.h); the exit status is then 127
 * when the executable was not found, 126 when it could not be executed, 1
 * for any setup step's failure. */
_Noreturn void an_init_main(const struct an_init_config *c);

#endif
