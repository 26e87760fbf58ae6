/* engine/process.h — process primitives the engine builds on: clone3 into new
 * namespaces and a cgroup, pidfds, start times for the PID reuse guard, and
 * exit statuses as a shell reports them.  What does NOT live here: what the
 * child does (init.c), the protocol (sync.h). */
#ifndef AN_ENGINE_PROCESS_H
#define AN_ENGINE_PROCESS_H

#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"

/* clone3(2) with `flags` (CLONE_NEW*, CLONE_PARENT), CLONE_PIDFD, and
 * CLONE_INTO_CGROUP when cgroup_fd >= 0; exit signal SIGCHLD, or with
 * CLONE_PARENT the caller's own (the child is its parent's child).  Like
 * fork: returns 0 in the child, the child's pid in the parent (and *pidfd, O_CLOEXEC, owned by the
 * caller).  Errors: errno of clone3. */
pid_t an_process_clone(uint64_t flags, int cgroup_fd, int *pidfd, an_error_t *err);

/* The pid (in this process's /proc, i.e. its pid namespace) of the process
 * a pidfd refers to, from the "Pid:" line of /proc/self/fdinfo/FD
 * (pidfd_open(2)).  Errors: -ESRCH the process has been reaped or is not
 * visible here (Pid -1 or 0), errno of reading, -EINVAL unparsable. */
int an_process_pidfd_pid(int pidfd, pid_t *pid, an_error_t *err);

/* Start time of `pid` in clock ticks since boot (/proc/PID/stat field 22,
 * proc(5)).  Errors: -ESRCH no such process, errno of reading, -EINVAL
 * unparsable. */
int an_process_start_time(pid_t pid, uint64_t *ticks, an_error_t *err);

/* Start time (field 22, as above) and state letter (field 3: 'R', 'S', 'Z',
 * ...; proc(5)) of `pid` from one read of /proc/PID/stat; either out pointer
 * may be NULL.  Errors as an_process_start_time. */
int an_process_stat(pid_t pid, uint64_t *ticks, char *state, an_error_t *err);

/* A pidfd for `pid` that is known to be the same process as recorded: the
 * start time read after pidfd_open must equal `start_time` (0 = skip check).
 * Errors: -ESRCH gone or reused. */
int an_process_pidfd_checked(pid_t pid, uint64_t start_time, int *pidfd, an_error_t *err);

/* The same, also giving the process's state letter (an_process_stat) from
 * the same read of /proc/PID/stat, when `state` is not NULL. */
int an_process_pidfd_checked_state(pid_t pid, uint64_t start_time, int *pidfd, char *state,
                                   an_error_t *err);

/* Wait for the child behind `pidfd` to exit and return its status as a shell
 * would: the exit code, or 128+N when killed by signal N.  Errors: errno of
 * waitid. */
int an_process_wait(int pidfd, an_error_t *err);

/* Send `sig` through a pidfd.  Errors: errno of pidfd_send_signal. */
int an_process_signal(int pidfd, int sig, an_error_t *err);

/* Write `pid` in decimal to `path` (runc's --pid-file): to "<path>.tmp"
 * first (created with O_EXCL|O_NOFOLLOW: never through a planted file or
 * symlink), then renamed over `path`, so a reader never sees a partial
 * number; the temporary file is removed on failure.  Errors: errno of open
 * (-EEXIST: something is at "<path>.tmp"), write, close or rename, naming
 * the file. */
int an_pid_file_write(const char *path, pid_t pid, an_error_t *err);

#endif
