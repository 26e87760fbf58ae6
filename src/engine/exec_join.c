/* engine/exec_join.c — the joiner of an exec (see exec_join.h): hide the
 * runtime's argv and environment, join every namespace of the container's
 * init, and only then clone the process the container will see. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "agentnest/cgroup.h"
#include "engine/exec_join.h"
#include "engine/namespaces.h"
#include "engine/process.h"
#include "engine/sync.h"
#include "util/cleanup.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* What /proc/PID/cmdline and /proc/PID/comm of the process show until its
 * execve. */
static const char exec_title[] = "agentnest-exec";

/* The argument and environment areas of this mm: /proc/self/stat fields
 * 48 to 51 (arg_start, arg_end, env_start, env_end; proc(5), Linux 3.5). */
static int mm_areas(unsigned long v[4], an_error_t *err) {
  char buf[2048];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "open /proc/self/stat");
  ssize_t n = read(fd, buf, sizeof buf - 1);
  int e = errno;
  close(fd);
  if (n <= 0) return an_error_set(err, n < 0 ? e : EIO, "read /proc/self/stat");
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  /* field 3 follows ") "; field 48 is 45 fields later */
  for (int i = 0; p && i < 46; i++) p = strchr(p + 1, ' ');
  if (!p || sscanf(p + 1, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4 || v[1] < v[0] ||
      v[3] < v[2])
    return an_error_set(err, EINVAL, "/proc/self/stat: no arg_start..env_end");
  return 0;
}

/* Overwrite this mm's copy of the runtime's argument and environment
 * strings (a private copy since the fork: the runtime's own are untouched)
 * with NULs and exec_title: /proc/PID/cmdline needs no ptrace right to read
 * (proc(5)); /proc/PID/environ does, and non-dumpability closes it, but
 * nothing of the runtime's is left there either.  The NUL at the end of
 * the argument area keeps the kernel from reading on into the environment.
 * The process's own strings were copied off these areas beforehand
 * (an_exec_process_copy); libc's environ then holds empty strings, which
 * the process setup never reads.  No capability needed (prctl PR_SET_MM
 * would need CAP_SYS_RESOURCE). */
static int hide_runtime_args(an_error_t *err) {
  unsigned long v[4];
  int r = mm_areas(v, err);
  if (r < 0) return r;
  /* through /proc/self/mem: an area that is unmapped or read-only (an
   * embedding program's setproctitle) is an error, not a crash */
  cleanup_close int mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
  if (mem < 0) return an_error_set(err, errno, "open /proc/self/mem");
  static const char zeros[512];
  for (int a = 0; a < 2; a++) {
    unsigned long start = v[2 * a], end = v[2 * a + 1];
    for (unsigned long at = start; at < end;) {
      size_t n = end - at < sizeof zeros ? end - at : sizeof zeros;
      const char *src = zeros;
      if (a == 0 && at == start && end - start > sizeof exec_title) {
        src = exec_title;            /* with its NUL; the rest of the area stays NUL */
        n = sizeof exec_title;
      }
      ssize_t w = pwrite(mem, src, n, (off_t) at);
      if (w <= 0)
        return an_error_set(err, w < 0 ? errno : EIO, "hide the runtime's %s from the container "
                            "(write /proc/self/mem at 0x%lx)", a ? "environment" : "argv", at);
      at += (unsigned long) w;
    }
  }
  if (prctl(PR_SET_NAME, exec_title, 0, 0, 0) < 0)
    return an_error_set(err, errno, "set the process name (prctl PR_SET_NAME)");
  return 0;
}

static char **strv_dup(char *const *v, bool *ok) {
  if (!v) return NULL;
  size_t n = 0;
  while (v[n]) n++;
  char **d = calloc(n + 1, sizeof *d);
  if (!d) { *ok = false; return NULL; }
  for (size_t i = 0; i < n; i++)
    if (!(d[i] = strdup(v[i]))) *ok = false;
  return d;
}

static void strv_free(char **v) {
  for (size_t i = 0; v && v[i]; i++) free(v[i]);
  free(v);
}

static char *str_dup(const char *s, bool *ok) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) *ok = false;
  return d;
}

int an_exec_process_copy(struct an_exec_process_copy *c, const struct an_spec_process *p,
                         an_error_t *err) {
  bool ok = true;
  *c = (struct an_exec_process_copy){.proc = *p};
  c->proc.cwd = str_dup(p->cwd, &ok);
  c->proc.env = strv_dup(p->env, &ok);
  c->proc.args = strv_dup(p->args, &ok);
  c->proc.user.username = str_dup(p->user.username, &ok);
  c->proc.apparmor_profile = str_dup(p->apparmor_profile, &ok);
  c->proc.selinux_label = str_dup(p->selinux_label, &ok);
  if (p->capabilities) {
    const struct an_spec_capabilities *k = p->capabilities;
    c->caps = (struct an_spec_capabilities){
      .bounding = strv_dup(k->bounding, &ok), .effective = strv_dup(k->effective, &ok),
      .inheritable = strv_dup(k->inheritable, &ok), .permitted = strv_dup(k->permitted, &ok),
      .ambient = strv_dup(k->ambient, &ok)};
    c->proc.capabilities = &c->caps;
  }
  if (!ok) {
    an_exec_process_copy_free(c);
    return an_error_set(err, ENOMEM, "copy the process");
  }
  return 0;
}

void an_exec_process_copy_free(struct an_exec_process_copy *c) {
  free(c->proc.cwd);
  strv_free(c->proc.env);
  strv_free(c->proc.args);
  free(c->proc.user.username);
  free(c->proc.apparmor_profile);
  free(c->proc.selinux_label);
  strv_free(c->caps.bounding);
  strv_free(c->caps.effective);
  strv_free(c->caps.inheritable);
  strv_free(c->caps.permitted);
  strv_free(c->caps.ambient);
  memset(c, 0, sizeof *c);
}

static void ns_names(int flags, char *buf, size_t len) {
  static const int all[] = {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC,
                            CLONE_NEWUTS, CLONE_NEWCGROUP, CLONE_NEWTIME};
  size_t n = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof all / sizeof *all && n < len; i++)
    if (flags & all[i])
      n += (size_t) snprintf(buf + n, len - n, "%s%s", n ? "|" : "", an_ns_name(all[i]));
}

/* Join every namespace and run the part of the process's setup that needs
 * no identity change (an_init_prepare_exec: rlimits, keyring, cwd,
 * Landlock; inherited by the process): all of this overlaps the runtime's
 * cgroup write
 * (on v1 the first cgroup.procs write waits for an RCU grace period, the
 * largest single cost of an exec).  Nothing of the container sees this
 * process meanwhile: it is not in the container's pid namespace, and its
 * cgroup does not matter until it clones the process. */
static int joiner_prepare(const struct an_exec_joiner *j, struct an_init_config *child,
                          an_error_t *err) {
  const struct an_init_config *c = j->cfg;
  /* One setns with the pidfd: the whole set is taken from init at once; pid
   * (and time) apply to the child below (setns(2)). */
  if (j->ns_flags && setns(j->init_pidfd, j->ns_flags) < 0) {
    int e = errno;
    char names[96];
    ns_names(j->ns_flags, names, sizeof names);
    return an_error_set(err, e, "join the namespaces of the container's init (setns %s)", names);
  }
  if (!an_init_exec_inherits_setup(c)) return 0;  /* a terminal: the process does it all */
  int r = an_init_prepare_exec(c, err);
  if (r < 0) return r;
  child->inherited_setup = true;
  return 0;
}

static int joiner_run(const struct an_exec_joiner *j, an_error_t *err) {
  const struct an_init_config *c = j->cfg;
  struct an_init_config child = *c;
  child.parent_sync_fd = child.state_dirfd = -1;  /* closed by the joiner already */
  int r = joiner_prepare(j, &child, err);
  /* [1]: the runtime has put this process in the exec's cgroup.  Awaited
   * after a failed setup too, so that the runtime, still writing this pid
   * into the cgroup, reads the cause (e.g. ENOENT: status 127), not ESRCH. */
  an_error_t e1 = NULL;
  int r1 = an_sync_wait(c->sync_fd, AN_SYNC_IDMAPPED, NULL, r < 0 ? &e1 : err);
  an_error_free(&e1);
  if (r < 0) return r;
  if (r1 < 0) return r1;
  int pidfd = -1;
  pid_t pid = an_process_clone(CLONE_PARENT, -1, &pidfd, err);
  if (pid == 0) an_init_main(&child);
  if (pid < 0) return pid;
  r = an_sync_send(c->sync_fd, AN_SYNC_SPAWNED, pidfd, err);
  close(pidfd);
  return r;
}

_Noreturn void an_exec_joiner_main(const struct an_exec_joiner *j) {
  an_error_t err = NULL;
  const struct an_init_config *c = j->cfg;
  int r = 0;
  /* never outlive the runtime; the runtime's strings wiped while
   * /proc/self/mem is still this uid's (a rootless runtime could not open it
   * once not dumpable); then not dumpable, so the process (whose mm is a
   * copy of this one) is born not dumpable.  Nothing of the container sees
   * this process: it is not in the container's pid namespace. */
  /* into the exec's v1 cgroups first (cgroup.h); the process it forks inherits them */
  if (c->birth) r = an_cgroup_birth_enter(c->birth, &err);
  if (r == 0 && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
    r = an_error_set(&err, errno, "set the joiner's parent-death signal (prctl)");
  if (r == 0) r = hide_runtime_args(&err);
  if (r == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    r = an_error_set(&err, errno, "make the exec's joiner not dumpable (prctl)");
  if (c->parent_sync_fd >= 0) close(c->parent_sync_fd);
  if (c->state_dirfd >= 0) close(c->state_dirfd);
  if (r == 0) r = joiner_run(j, &err);
  if (r < 0) {
    an_sync_send_error(c->sync_fd, err);
    _exit(1);
  }
  _exit(0);
}
