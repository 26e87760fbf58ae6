/* engine/process.c — clone3, pidfds, start times, exit statuses (see
 * process.h; clone(2), pidfd_open(2), proc(5)). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/process.h"
#include "util/cleanup.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

pid_t an_process_clone(uint64_t flags, int cgroup_fd, int *pidfd, an_error_t *err) {
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = (uint64_t) (uintptr_t) pidfd;
  /* CLONE_PARENT: the child is the caller's sibling and gets the caller's
   * exit signal; clone3 then requires exit_signal 0 (clone(2)) */
  args.exit_signal = flags & CLONE_PARENT ? 0 : SIGCHLD;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = (uint64_t) cgroup_fd;
  }
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) return an_error_set(err, errno, "clone3 (flags 0x%llx)", (unsigned long long) args.flags);
  /* The pidfd from CLONE_PIDFD has close-on-exec set (clone(2)). */
  return (pid_t) pid;
}

int an_process_stat(pid_t pid, uint64_t *ticks, char *state, an_error_t *err) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno == ENOENT ? ESRCH : errno, "open %s", path);
  ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n < 0) return an_error_set(err, errno == ENOENT ? ESRCH : errno, "read %s", path);
  buf[n] = '\0';
  /* comm may hold spaces and ')', so scan from the last ')'. Field 3 (the
   * state) follows it. */
  char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ' || !p[2]) return an_error_set(err, EINVAL, "%s: unparsable", path);
  if (state) *state = p[2];
  p++;
  /* skip fields 3..21 (19 fields) */
  for (int i = 0; i < 20 && p; i++) {
    p = strchr(p, ' ');
    if (p) p++;
  }
  if (!p) return an_error_set(err, EINVAL, "%s: unparsable", path);
  char *end;
  errno = 0;
  unsigned long long v = strtoull(p, &end, 10);
  if (errno || end == p) return an_error_set(err, EINVAL, "%s: unparsable start time", path);
  if (ticks) *ticks = v;
  return 0;
}

int an_process_start_time(pid_t pid, uint64_t *ticks, an_error_t *err) {
  return an_process_stat(pid, ticks, NULL, err);
}

int an_process_pidfd_checked_state(pid_t pid, uint64_t start_time, int *pidfd, char *state,
                                   an_error_t *err) {
  if (pid <= 0) return an_error_set(err, ESRCH, "process %d", pid);
  int fd = (int) syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return an_error_set(err, errno, "pidfd_open %d", pid);
  if (start_time || state) {
    uint64_t t;
    an_error_t e = NULL;
    if (an_process_stat(pid, &t, state, &e) < 0 || (start_time && t != start_time)) {
      an_error_free(&e);
      close(fd);
      return an_error_set(err, ESRCH, "process %d: gone (pid reused)", pid);
    }
  }
  *pidfd = fd;
  return 0;
}

int an_process_pidfd_checked(pid_t pid, uint64_t start_time, int *pidfd, an_error_t *err) {
  return an_process_pidfd_checked_state(pid, start_time, pidfd, NULL, err);
}

int an_process_pidfd_pid(int pidfd, pid_t *pid, an_error_t *err) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "open %s", path);
  ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n < 0) return an_error_set(err, errno, "read %s", path);
  buf[n] = '\0';
  const char *p = strstr(buf, "\nPid:");
  int v;
  if (!p || sscanf(p + 5, "%d", &v) != 1) return an_error_set(err, EINVAL, "%s: no Pid field", path);
  if (v <= 0) return an_error_set(err, ESRCH, "pidfd %d: the process is gone or outside this pid "
                                  "namespace (Pid %d)", pidfd, v);
  *pid = (pid_t) v;
  return 0;
}

int an_process_wait(int pidfd, an_error_t *err) {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  while (waitid(P_PIDFD, pidfd, &info, WEXITED) < 0) {
    if (errno != EINTR) return an_error_set(err, errno, "wait for process (waitid on pidfd %d)", pidfd);
  }
  if (info.si_code == CLD_EXITED) return info.si_status & 0xff;
  return 128 + info.si_status;
}

int an_process_signal(int pidfd, int sig, an_error_t *err) {
  if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0)
    return an_error_set(err, errno, "send signal %d (pidfd_send_signal on pidfd %d)", sig, pidfd);
  return 0;
}

int an_pid_file_write(const char *path, pid_t pid, an_error_t *err) {
  char tmp[PATH_MAX];
  if ((size_t) snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
    return an_error_set(err, ENAMETOOLONG, "pid file %s", path);
  /* O_EXCL|O_NOFOLLOW: a file or symlink planted at the temporary name (in a
   * world-writable directory) is never written through */
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return an_error_set(err, errno, errno == EEXIST ? "write pid file %s: something is already there "
                        "(left by an earlier run, or planted); not written through, remove it"
                        : "write pid file %s", tmp);
  char buf[24];
  int n = snprintf(buf, sizeof buf, "%d", (int) pid);
  ssize_t w = write(fd, buf, (size_t) n);
  int e = w < 0 ? errno : w != n ? EIO : 0;
  if (close(fd) != 0 && !e) e = errno;
  if (!e && rename(tmp, path) < 0) e = errno;
  if (e) {
    unlink(tmp);
    return an_error_set(err, e, "write pid file %s", path);
  }
  return 0;
}
