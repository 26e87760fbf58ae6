/* engine/cgroup_birth.c — a child that steps into its cgroup itself on v1
 * and hybrid hosts (agentnest/cgroup.h, an_cgroup_birth_begin).
 *
 * Moving a process into a v1 cgroup from outside (cgroup.procs) takes the
 * kernel's cgroup_threadgroup_rwsem for write, which waits for an RCU grace
 * period: 7-8 ms on this project's 2-core hybrid host for the first write
 * of a burst, paid twice by a one-shot run (pid 1, then the exec's joiner).
 * The kernel skips that lock when a thread moves only itself ("0" written
 * to `tasks`: kernel/cgroup/cgroup.c, cgroup_procs_write_start), and checks
 * a v1 move with the credentials of the file's opener (Linux 5.16), so the
 * runtime opens the cgroup's `tasks` files as host root and the child,
 * even one already in a new user namespace, writes "0" to them as its
 * first act: 0.05 ms instead of 7.  The cgroup2 hierarchy (where a thread
 * cannot move alone) is entered by clone3 CLONE_INTO_CGROUP.  The runtime's
 * own threads never enter the container's cgroups. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "engine/cgroup_internal.h"

/* Linux 6.18 (seen on this host) kills at birth a child cloned with
 * CLONE_INTO_CGROUP into a cgroup that cgroup.kill reached before, itself or
 * through an ancestor (its kill_seq no longer matches the forking task's
 * cgroup's): a reused exec slot after a timeout.  A new cgroup is not
 * affected.  an_cgroup_kill marks what it killed with this xattr, and such a
 * cgroup is entered the old way (an_cgroup_enter). */
#define KILLED_XATTR "trusted.agentnest.killed"

static int mark_one(const char *dir, void *arg, an_error_t *err) {
  (void) arg, (void) err;
  setxattr(dir, KILLED_XATTR, "1", 1, 0);   /* best effort: a cgroup2 without xattrs is older */
  return 0;
}

/* The kernel compares the target's kill_seq with that of the forking task's
 * own cgroup2 cgroup, so a runtime that lives in a cgroup cgroup.kill
 * reached before (a CI job's or a service's cgroup killed, then entered
 * again) has every child it clones into any other cgroup killed at birth,
 * fresh ones too: every run and exec failed (sync point 2: ECONNRESET) where
 * the cgroup.procs writes had worked.  No mark can say that, and kill_seq
 * cannot be read: each begin clones into the target a child that only
 * exits and looks at how it ended.  Not cached: the library keeps no
 * process-wide state, and a caller may change cgroups.  Not a vfork: a
 * child born into a frozen cgroup2 cgroup (cgroup.freeze, the sandbox
 * paused) stops before its _exit and would hold a vfork parent until the
 * thaw.  Returns 1 killed at birth, 0 lived, -EBUSY the target is frozen
 * (the child is killed: a frozen task dies of SIGKILL on cgroup2). */
static bool frozen_now(int cgfd) {
  char buf[512];
  int fd = openat(cgfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return strstr(buf, "frozen 1") != NULL;
}

static int child_dies_at_birth(int cgfd) {
  int pidfd = -1;
  /* exit_signal 0 and a pidfd: no SIGCHLD, not reaped by a waitpid(-1) of the caller's */
  struct clone_args a = {.flags = CLONE_INTO_CGROUP | CLONE_PIDFD,
                         .pidfd = (uint64_t) (uintptr_t) &pidfd, .cgroup = (uint64_t) cgfd};
  long pid = syscall(SYS_clone3, &a, sizeof a);
  if (pid == 0) _exit(0);
  if (pid < 0) return 0;   /* cannot tell: the real clone will say */
  int r = 0;
  for (;;) {
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int n = poll(&p, 1, 20);
    if (n > 0) break;
    if (n < 0 && errno == EINTR) continue;
    if (frozen_now(cgfd)) {
      syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
      r = -EBUSY;
      break;
    }
  }
  siginfo_t si = {0};
  int w;
  while ((w = waitid(P_PIDFD, (id_t) pidfd, &si, WEXITED | __WALL)) < 0 && errno == EINTR) {}
  close(pidfd);
  if (r < 0) return r;
  return w == 0 && si.si_code == CLD_KILLED && si.si_status == SIGKILL;
}

void an_cg_mark_killed(const char *dir) {
  an_error_t e = NULL;
  an_cg_walk(dir, mark_one, NULL, NULL, true, &e);
  an_error_free(&e);
}

int an_cgroup_birth_begin(struct an_cgroup *cg, struct an_cgroup_birth *b, an_error_t *err) {
  memset(b, 0, sizeof *b);
  b->clone_fd = -1;
  b->path = cg->path;
  int u = cg->l.unified;
  if (u >= 0 && an_cg_has(cg, (size_t) u)) {
    if (cg->unified_fd < 0) return an_error_set(err, EOPNOTSUPP, "cgroup %s: no handle for clone3", cg->path);
    char v;
    if (fgetxattr(cg->unified_fd, KILLED_XATTR, &v, 1) >= 0)
      return an_error_set(err, ESTALE, "cgroup %s was killed before: a child cloned into it would be killed "
                          "too (Linux kill_seq)", cg->path);
    int d = child_dies_at_birth(cg->unified_fd);
    if (d < 0)
      return an_error_set(err, EBUSY, "cgroup %s is frozen: a child is entered the old way", cg->path);
    if (d)
      return an_error_set(err, ESTALE, "cgroup %s: a child cloned into it from here is killed at birth "
                          "(this process's cgroup was killed before: Linux kill_seq)", cg->path);
    b->clone_fd = cg->unified_fd;
  }
  if (cg->l.layout == AN_CGROUP_UNIFIED) return 0;
  if (cg->l.n > AN_CGROUP_BIRTH_MAX)
    return an_error_set(err, EOPNOTSUPP, "cgroup %s: more than %d hierarchies", cg->path, AN_CGROUP_BIRTH_MAX);
  for (size_t i = 0; i < cg->l.n; i++) {
    if ((int) i == u || !an_cg_has(cg, i)) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/tasks", cg->dir[i]);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      an_cgroup_birth_end(b);
      return an_error_set(err, e, "open %s", path);
    }
    b->tasks[b->n] = fd;
    b->where[b->n++] = cg->l.h[i].mount;
  }
  return 0;
}

bool an_cgroup_birth_try(struct an_cgroup *cg, struct an_cgroup_birth *b) {
  if (!cg) return false;
  an_error_t e = NULL;
  int r = an_cgroup_birth_begin(cg, b, &e);
  an_error_free(&e);
  return r == 0;
}

int an_cgroup_birth_enter(struct an_cgroup_birth *b, an_error_t *err) {
  int r = 0;
  for (size_t k = 0; k < b->n; k++) {
    if (r == 0 && write(b->tasks[k], "0", 1) != 1)
      r = an_error_set(err, errno, "step into cgroup %s in %s", b->path, b->where[k]);
    close(b->tasks[k]);
  }
  b->n = 0;
  return r;
}

void an_cgroup_birth_end(struct an_cgroup_birth *b) {
  for (size_t k = 0; k < b->n; k++) close(b->tasks[k]);
  b->n = 0;
}
