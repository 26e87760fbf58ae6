/* engine/sync.h — the numbered synchronisation points between the runtime
 * (parent) and the container's first process (child, "init"), carried over a
 * SOCK_SEQPACKET socketpair.  Each message is one record: the point number,
 * an errno and, for AN_SYNC_ERROR, the child's error message, so that a
 * failure inside the container reaches the user as text such as
 * "mount proc on <rootfs>/proc: EPERM".  An optional fd rides along with
 * SCM_RIGHTS (the pty master).  What does NOT live here: what either side
 * does at each point (init.c, container.c).
 *
 * The protocol, readable from either end (after crun's sync points):
 *
 *   parent (runtime)                          child (init, after clone3)
 *   ----------------------------------------  ----------------------------------------
 *   clone3(namespaces, CLONE_PIDFD, maybe
 *          CLONE_INTO_CGROUP)                 PR_SET_PDEATHSIG, not dumpable
 *   enter cgroup (hybrid/v1), uid/gid maps,
 *   oom_score_adj
 *   [1] send AN_SYNC_IDMAPPED  --------------> [1] wait: ids mapped, cgroup entered
 *                                              setresuid(0) in userns, setns joins,
 *                                              unshare(cgroupns), mounts, devices
 *   [2] wait  <------------------------------- [2] send AN_SYNC_MOUNTED
 *   prestart + createRuntime hooks
 *   [3] send AN_SYNC_HOOKS_DONE -------------> [3] wait
 *                                              createContainer hooks, pivot_root,
 *                                              sysctl, hostname, ro root, readonly
 *                                              and masked paths, rlimits, pty, user,
 *                                              caps, no_new_privs, PATH lookup
 *   [4] wait (+ pty master fd) <-------------- [4] send AN_SYNC_READY
 *   record state "created"
 *   [5] send AN_SYNC_GO (run) or  -----------> [5] wait; clear PDEATHSIG
 *       AN_SYNC_DETACH (create)                GO: startContainer hooks, seccomp, execve
 *   create: [8] wait  <----------------------- DETACH: [8] send AN_SYNC_DETACHED, close
 *   then exit (init no longer dies with us)    the socket, block on the start socket
 *                                              until `start` connects
 *   [6] run: EOF on the socket = execve done;  (CLOEXEC closes the socket at execve)
 *       AN_SYNC_COMMAND_ERROR = execve failed
 *
 * [8] exists because the parent-death signal armed at clone is cleared only
 * by init itself (or by a change of uid, which a uid-0 container without a
 * user namespace never makes): had create exited right after [5], its exit
 * could kill init before init disarmed the signal.
 *
 * An exec (exec.c) first runs [1] and [7] AN_SYNC_SPAWNED (with the new
 * process's pidfd) with a joiner that enters the namespaces and forks the
 * process (exec_join.h), then [1], [4], [5], [6] with the process.
 *
 * At any point the child may send AN_SYNC_ERROR and exit instead; the parent
 * then tears everything down.  The command's own failure (its PATH lookup
 * before [4], its execve after [5]) is AN_SYNC_COMMAND_ERROR instead, so
 * that the parent can tell "command not found" (a shell's 127, 126) from a
 * setup step's ENOENT or EACCES (a mount source, a cgroup that went away).
 */
#ifndef AN_ENGINE_SYNC_H
#define AN_ENGINE_SYNC_H

#include <stdbool.h>
#include <stdint.h>
#include "agentnest/error.h"

enum an_sync_point {
  AN_SYNC_IDMAPPED = 1,
  AN_SYNC_MOUNTED = 2,
  AN_SYNC_HOOKS_DONE = 3,
  AN_SYNC_READY = 4,
  AN_SYNC_GO = 5,
  AN_SYNC_DETACH = 6,
  AN_SYNC_SPAWNED = 7,  /* exec only: the joiner made the process (its pidfd rides along),
                           see exec_join.h */
  AN_SYNC_DETACHED = 8, /* create only: init disarmed its parent-death signal */
  AN_SYNC_COMMAND_ERROR = 98, /* as AN_SYNC_ERROR, for the command's own failure: PATH
                                 lookup of args[0] or its execve */
  AN_SYNC_ERROR = 99,
};

/* Human name of a point, for error messages ("ready"). Static string. */
const char *an_sync_point_name(int point);

/* Send point `p` (with `fd_to_pass` over SCM_RIGHTS unless -1).
 * Errors: errno of sendmsg (-EPIPE when the other side is gone). */
int an_sync_send(int sock, enum an_sync_point p, int fd_to_pass, an_error_t *err);

/* Send the error `e` (its errno and message) as AN_SYNC_ERROR; best effort,
 * never fails.  Used by the child before it exits. */
void an_sync_send_error(int sock, const struct an_error *e);

/* As an_sync_send_error, as AN_SYNC_COMMAND_ERROR: the failure is the
 * command's own (args[0] not found, not executable, its execve failed). */
void an_sync_send_command_error(int sock, const struct an_error *e);

/* Wait for point `expected`.  A received fd is stored in *fd_received (owned
 * by the caller) when it is non-NULL, else closed.  Errors: the child's own
 * errno and message when it sent AN_SYNC_ERROR; -EPIPE "container init exited
 * before <point>" on EOF; -EPROTO an unexpected point; errno of recvmsg.
 * An AN_SYNC_COMMAND_ERROR is returned as an AN_SYNC_ERROR. */
int an_sync_wait(int sock, enum an_sync_point expected, int *fd_received, an_error_t *err);

/* As an_sync_wait; *command_failed (non-NULL) is set true when the error is
 * the child's AN_SYNC_COMMAND_ERROR, false otherwise. */
int an_sync_wait_command(int sock, enum an_sync_point expected, int *fd_received,
                         bool *command_failed, an_error_t *err);

/* Send point `p` carrying a text payload (NUL-terminated, at most
 * AN_SYNC_PAYLOAD_MAX-1 bytes; longer text is an error).  Errors: -E2BIG,
 * errno of sendmsg. */
#define AN_SYNC_PAYLOAD_MAX 16384
int an_sync_send_payload(int sock, enum an_sync_point p, const char *text, an_error_t *err);

/* Wait for point `expected` and return its payload in *text (heap, owned by
 * the caller; "" when none).  Errors as an_sync_wait. */
int an_sync_wait_payload(int sock, enum an_sync_point expected, char **text, an_error_t *err);

/* Wait for one of two points; *got receives which.  Errors as an_sync_wait. */
int an_sync_wait_either(int sock, enum an_sync_point a, enum an_sync_point b,
                        enum an_sync_point *got, an_error_t *err);

/* Wait for EOF (the peer's execve closed its end) or an AN_SYNC_ERROR or
 * AN_SYNC_COMMAND_ERROR.  Returns 0 on EOF.  Errors: the child's error as
 * above; *command_failed (non-NULL) as an_sync_wait_command. */
int an_sync_wait_exec(int sock, bool *command_failed, an_error_t *err);

#endif
