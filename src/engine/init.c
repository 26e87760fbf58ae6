/* engine/init.c — the child side between clone3 and execve (see init.h and
 * the numbered points in sync.h).  Order matters and follows runc/crun:
 * namespaces, mounts, pivot_root, sysctl, hostname, read-only and masked
 * paths, rlimits, terminal, cwd, then the identity (groups, gid, uid),
 * capabilities, no_new_privs, and seccomp last, right before execve. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "agentnest/cgroup.h"
#include "engine/caps.h"
#include "engine/devices.h"
#include "engine/hooks.h"
#include "engine/init.h"
#include "engine/mount.h"
#include "engine/procview.h"
#include "engine/rlimits.h"
#include "engine/rootfs.h"
#include "engine/landlock.h"
#include "engine/seccomp.h"
#include "engine/sync.h"
#include "engine/sysctl.h"
#include "engine/loopback.h"
#include "engine/terminal.h"
#include "engine/user.h"
#include "util/cleanup.h"
#include "util/quote.h"

#define AN_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const char *env_get(char *const *env, const char *key) {
  size_t k = strlen(key);
  for (size_t i = 0; env && env[i]; i++)
    if (strncmp(env[i], key, k) == 0 && env[i][k] == '=') return env[i] + k + 1;
  return NULL;
}

static bool is_exec_file(const char *path, int *why) {
  struct stat st;
  if (stat(path, &st) < 0) { *why = errno; return false; }
  if (!S_ISREG(st.st_mode)) { *why = EACCES; return false; }
  if (faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) < 0) { *why = errno; return false; }
  return true;
}

/* Why `path` (refused by is_exec_file with EACCES) cannot be executed by
 * this process, in words, as the user needs it to fix it: "is a
 * directory", "no execute permission (mode 0644, owner 0:0; running as uid
 * 65532)", "on a noexec mount", ...  Runs with the process's own
 * credentials, before seccomp. */
static void explain_eacces(const char *path, char *buf, size_t len) {
  struct stat st;
  struct statvfs vfs;
  uid_t uid = geteuid();
  if (stat(path, &st) < 0)
    snprintf(buf, len, "a directory on the path is not searchable by uid %u", (unsigned) uid);
  else if (S_ISDIR(st.st_mode)) snprintf(buf, len, "is a directory");
  else if (!S_ISREG(st.st_mode)) snprintf(buf, len, "not a regular file (a device, FIFO or socket)");
  else if (statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC))
    snprintf(buf, len, "its file system is mounted noexec");
  else if (!(st.st_mode & 0111))
    snprintf(buf, len, "no execute permission (mode %04o)", (unsigned) (st.st_mode & 07777));
  else
    snprintf(buf, len, "no execute permission for uid %u (mode %04o, owner %u:%u)", (unsigned) uid,
             (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid, (unsigned) st.st_gid);
}

static int not_executable(an_error_t *err, const char *arg0, const char *path) {
  char why[160];
  explain_eacces(path, why, sizeof why);
  if (!strcmp(arg0, path))
    return an_error_set(err, EACCES, "exec \"%s\": permission denied: %s", AN_QUOTED(arg0), why);
  return an_error_set(err, EACCES, "exec \"%s\": permission denied: %s: %s", AN_QUOTED(arg0),
                      AN_QUOTED(path), why);
}

/* PATH lookup of args[0] inside the container, as execvp(3) and runc do,
 * with the container process's own PATH and credentials. */
static int lookup_executable(const char *arg0, char *const *env, char *out, size_t outsz,
                             an_error_t *err) {
  int why = ENOENT;
  if (!arg0 || !*arg0) return an_error_set(err, EINVAL, "process.args[0] is empty");
  if (strchr(arg0, '/')) {
    if (!is_exec_file(arg0, &why)) {
      if (why == EACCES) return not_executable(err, arg0, arg0);
      if (why == ENOENT) return an_error_set(err, why, "exec \"%s\": no such file", AN_QUOTED(arg0));
      if (why == ENOTDIR)
        return an_error_set(err, why, "exec \"%s\": a component of its path is not a directory", AN_QUOTED(arg0));
      return an_error_set(err, why, "exec \"%s\"", AN_QUOTED(arg0));
    }
    snprintf(out, outsz, "%s", arg0);
    return 0;
  }
  const char *path = env_get(env, "PATH");
  if (!path) path = AN_DEFAULT_PATH;
  char denied[4096] = "";   /* the first candidate found but refused, as execvp reports EACCES */
  for (const char *p = path;;) {
    const char *colon = strchr(p, ':');
    size_t len = colon ? (size_t) (colon - p) : strlen(p);
    int n = len ? snprintf(out, outsz, "%.*s/%s", (int) len, p, arg0)
                : snprintf(out, outsz, "./%s", arg0);
    if (n > 0 && (size_t) n < outsz) {
      if (is_exec_file(out, &why)) return 0;
      if (why == EACCES && !denied[0]) snprintf(denied, sizeof denied, "%s", out);
    }
    if (!colon) break;
    p = colon + 1;
  }
  if (denied[0]) return not_executable(err, arg0, denied);
  return an_error_set(err, ENOENT, "exec \"%s\": executable file not found in $PATH", AN_QUOTED(arg0));
}

/* The error of a failed execve(2) of `exe` (found and executable by the
 * lookup): what the errno means for an executable, in words.  After
 * seccomp: makes no system call beyond the allocation. */
static int exec_failed(an_error_t *err, int e, const char *exe) {
  const char *why = e == ENOEXEC ? ": exec format error (not a program for this machine, and no #! line)"
                  : e == ENOENT  ? ": its #! interpreter or its ELF loader was not found"
                  : e == EACCES  ? ": permission denied (to its #! interpreter, its ELF loader or by a security module)"
                  : "";
  return an_error_set(err, e, "exec \"%s\"%s", AN_QUOTED(exe), why);
}

/* runc and crun: a process whose env has no HOME gets the home directory of
 * its uid in the container's /etc/passwd, or "/" when there is none.
 * Returns a new environment (heap, freed by execve) or NULL to keep `env`. */
static char **env_with_home(char *const *env, uid_t uid) {
  if (env_get(env, "HOME")) return NULL;
  const char *home = "/";
  char *found = NULL;
  /* The image's file: only a regular one is read (a FIFO, device or pipe
   * planted there must not block or feed init), and at most the first 1 MiB. */
  FILE *f = NULL;
  int fd = open("/etc/passwd", O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (1 << 20))
    f = fdopen(fd, "re");
  if (!f && fd >= 0) close(fd);
  for (struct passwd *pw; f && (pw = fgetpwent(f));)
    if (pw->pw_uid == uid && pw->pw_dir && pw->pw_dir[0]) {
      found = strdup(pw->pw_dir);
      break;
    }
  if (f) fclose(f);
  if (found) home = found;
  size_t n = 0;
  while (env && env[n]) n++;
  char **out = calloc(n + 2, sizeof *out);
  if (!out || asprintf(&out[n], "HOME=%s", home) < 0) {
    free(out);
    free(found);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) out[i] = env[i];
  free(found);
  return out;
}

/* cwd inside the root: resolved by openat2 confined to the root and without
 * magic links, so /proc/self/fd/N or /proc/1/cwd can never lead outside
 * (BL-02, runc CVE-2024-21626); then verified with getcwd. */
static int enter_cwd(const char *cwd, an_error_t *err) {
  if (!cwd || cwd[0] != '/')
    return an_error_set(err, EINVAL, "process.cwd \"%s\": must be an absolute path",
                        cwd ? cwd : "");
  struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                         .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
  cleanup_close int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return an_error_set(err, errno, "open /");
  cleanup_close int fd = -1;
  do fd = (int) syscall(SYS_openat2, root, cwd, &how, sizeof how);
  while (fd < 0 && errno == EAGAIN);
  if (fd < 0) return an_error_set(err, errno, "process.cwd %s", cwd);
  if (fchdir(fd) < 0) return an_error_set(err, errno, "process.cwd %s: chdir", cwd);
  char buf[4096];
  if (!getcwd(buf, sizeof buf) || buf[0] != '/')
    return an_error_set(err, EXDEV, "process.cwd %s: outside the container root", cwd);
  return 0;
}

/* A process.cwd that does not exist is made (0755, as the container's
 * root, before the root is made read-only), as runc and crun do; its
 * parents are resolved inside the root and the last component is never a
 * symlink that is followed for the creation (an_mount_resolve).  An existing
 * cwd is left to enter_cwd. */
static int make_cwd(const char *cwd, an_error_t *err) {
  if (!cwd || cwd[0] != '/') return 0;   /* enter_cwd reports it */
  cleanup_close int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return an_error_set(err, errno, "open /");
  struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                         .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
  cleanup_close int fd = -1;
  do fd = (int) syscall(SYS_openat2, root, cwd, &how, sizeof how);
  while (fd < 0 && errno == EAGAIN);
  if (fd >= 0 || errno != ENOENT) return 0;
  int r = an_mount_resolve(root, cwd, true, false, &fd, err);
  return r < 0 ? an_error_prefix(err, "process.cwd %s", cwd) : 0;
}

static void reset_signals(void) {
  struct sigaction sa;
  for (int s = 1; s < NSIG; s++) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN) {
      sa.sa_handler = SIG_DFL;
      sigaction(s, &sa, NULL);
    }
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Mount namespace work, before pivot_root (between [1] and [2]). */
static int setup_mounts(const struct an_init_config *c, int *root_fd, an_error_t *err) {
  const struct an_spec *s = c->spec;
  int r = an_rootfs_prepare(c->rootfs, s->linux.rootfs_propagation, c->root_mnt_fd, root_fd, err);
  if (r < 0) return r;
  for (size_t i = 0; i < s->n_mounts; i++) {
    r = an_mount_entry(*root_fd, c->rootfs, c->bundle, &s->mounts[i],
                       c->idmap_fds ? c->idmap_fds[i] : -1, c->cgroup,
                       (c->ns->all_flags & CLONE_NEWCGROUP) != 0, err);
    if (r < 0) return r;
  }
  return an_devices_setup(*root_fd, &s->linux, c->in_userns, err);
}

/* The first part of the process-level setup: what needs no identity change
 * (an exec's joiner does it before it forks the process: init.h). */
static int setup_before_identity(const struct an_init_config *c, int *pty_master,
                                 an_error_t *err) {
  const struct an_spec_process *p = c->process;
  int r = an_rlimits_apply(p, err);
  if (r < 0) return r;
  if (!c->no_new_keyring && syscall(SYS_keyctl, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, NULL) < 0 &&
      errno != ENOSYS && errno != EPERM)
    return an_error_set(err, errno, "join a new session keyring");
  if (p->terminal) {
    r = an_terminal_setup(p, pty_master, err);
    if (r < 0) return r;
  }
  r = enter_cwd(p->cwd, err);
  if (r < 0) return r;
  /* Landlock while CAP_SYS_ADMIN in the user namespace still allows it
   * without no_new_privs, and before a seccomp filter could deny its calls */
  return an_landlock_apply(c->spec, err);
}

/* The second part: identity, capabilities, no_new_privs. */
static int setup_identity(const struct an_init_config *c, an_error_t *err) {
  const struct an_spec_process *p = c->process;
  int r = an_user_apply(&p->user, err);
  if (r < 0) return r;
  /* A change of credentials clears the parent-death signal (prctl(2)).  An
   * exec'd process arms it again until [5]: it joins a container whose
   * processes can stop it now, and must not outlive a runtime that died
   * meanwhile.  (Not create's init, which keeps the signal armed at clone
   * only where no uid change cleared it; nothing else runs in its container
   * yet.  Init disarms it itself at [5], confirmed by [8].) */
  if (c->exec_only && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
    return an_error_set(err, errno, "set the parent-death signal (prctl PR_SET_PDEATHSIG)");
  /* Without no_new_privs, installing the seccomp filter needs CAP_SYS_ADMIN:
   * init keeps it (not the program: caps.h) so that the filter is still the
   * last thing before execve, with only execve after it. */
  uint64_t keep = c->seccomp && !p->no_new_privileges ? UINT64_C(1) << CAP_SYS_ADMIN : 0;
  r = an_caps_apply_keeping(p->capabilities, keep, err);
  if (r < 0) return an_error_prefix(err, "process.capabilities");
  if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return an_error_set(err, errno, "prctl PR_SET_NO_NEW_PRIVS");
  return 0;
}

/* The process-level setup shared by init and exec, after the root is in
 * place: rlimits, keyring, terminal, cwd, Landlock, identity, capabilities
 * (the part before the identity already done when c->inherited_setup). */
static int setup_process(const struct an_init_config *c, int *pty_master, an_error_t *err) {
  int r = c->inherited_setup ? 0 : setup_before_identity(c, pty_master, err);
  return r < 0 ? r : setup_identity(c, err);
}

/* Keep fds 0-2 and the preserved 3..3+n-1; everything else the runtime holds
 * is closed by execve (BL-02). */
static int seal_fds(const struct an_init_config *c, int *report_fd, an_error_t *err) {
  int first = 3 + (c->preserve_fds > 0 ? c->preserve_fds : 0);
  if (*report_fd < first) {
    int fd = fcntl(*report_fd, F_DUPFD_CLOEXEC, first);
    if (fd < 0) return an_error_set(err, errno, "move sync fd");
    *report_fd = fd;
  }
  for (int fd = 3; fd < first; fd++)
    if (fcntl(fd, F_SETFD, 0) < 0) return an_error_set(err, errno, "preserve fd %d", fd);
  if (syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
    return an_error_set(err, errno, "mark fds from %d close-on-exec (close_range)", first);
  return 0;
}

static int wait_for_start(int start_fd, int *conn, an_error_t *err) {
  int fd;
  do fd = accept4(start_fd, NULL, NULL, SOCK_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return an_error_set(err, errno, "wait for start");
  char b;
  ssize_t n;
  do n = read(fd, &b, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1) {
    close(fd);
    return an_error_set(err, n < 0 ? errno : EPIPE, "start: read");
  }
  *conn = fd;
  return 0;
}

/* *command_failed: set when the error is the PATH lookup of args[0] (the
 * command's own failure, reported as AN_SYNC_COMMAND_ERROR). */
static int init_run(const struct an_init_config *c, int *report_fd, char *exe, size_t exesz,
                    char ***env, bool *command_failed, an_error_t *err) {
  const struct an_spec *s = c->spec;
  int r;
  cleanup_free char *hook_state = NULL;

  /* [1] ids mapped, cgroup entered (an exec with inherited setup was born there) */
  if (!c->inherited_setup && (r = an_sync_wait(c->sync_fd, AN_SYNC_IDMAPPED, NULL, err)) < 0)
    return r;
  r = an_ns_join_user(c->ns, err);
  if (r < 0) return r;
  /* a time namespace of its own, before any other process is in it */
  if (!c->exec_only && (r = an_procview_timens_init(s, err)) < 0) return r;
  if (c->become_root_early) {
    /* Become root of the new user namespace: from here on file access is
     * checked as the mapped host id, never as host root. */
    if (syscall(SYS_setresgid, 0, 0, 0) < 0) return an_error_set(err, errno, "setresgid 0 in user namespace");
    if (syscall(SYS_setresuid, 0, 0, 0) < 0) return an_error_set(err, errno, "setresuid 0 in user namespace");
  }
  r = an_ns_join_others(c->ns, err);
  if (r < 0) return r;
  if (c->ns->unshare_cgroupns && !c->exec_only && unshare(CLONE_NEWCGROUP) < 0)
    return an_error_set(err, errno, "unshare cgroup namespace");
  if (setsid() < 0) return an_error_set(err, errno, "start a new session (setsid)");
  for (int i = 0; i < 3; i++)
    if (c->stdio[i] >= 0 && c->stdio[i] != i && dup2(c->stdio[i], i) < 0)
      return an_error_set(err, errno, "dup2 stdio fd %d", i);

  if (!c->exec_only) {
    cleanup_close int root_fd = -1;
    /* A new network namespace starts with lo down; runc and crun bring it
     * up, and "loopback only" (DESIGN.md) means 127.0.0.1 works. */
    if (c->ns->clone_flags & CLONE_NEWNET) {
      r = an_net_loopback_up(err);
      if (r < 0) return r;
    }
    r = setup_mounts(c, &root_fd, err);
    if (r < 0) return r;
    /* [2] mounted: the parent runs prestart and createRuntime hooks */
    r = an_sync_send(c->sync_fd, AN_SYNC_MOUNTED, -1, err);
    if (r < 0) return r;
    /* [3] */
    if (c->needs_hook_state) r = an_sync_wait_payload(c->sync_fd, AN_SYNC_HOOKS_DONE, &hook_state, err);
    else r = an_sync_wait(c->sync_fd, AN_SYNC_HOOKS_DONE, NULL, err);
    if (r < 0) return r;
    r = an_hooks_run(s->hooks.create_container, s->hooks.n_create_container, "createContainer",
                     hook_state, err);
    if (r < 0) return r;
    r = an_rootfs_pivot(root_fd, c->no_pivot, err);
    if (r < 0) return r;
    r = make_cwd(c->process->cwd, err);
    if (r < 0) return r;
    r = an_sysctl_apply(&s->linux, err);
    if (r < 0) return r;
    if (s->hostname && sethostname(s->hostname, strlen(s->hostname)) < 0)
      return an_error_set(err, errno, "sethostname \"%s\"", s->hostname);
    if (s->domainname && setdomainname(s->domainname, strlen(s->domainname)) < 0)
      return an_error_set(err, errno, "setdomainname \"%s\"", s->domainname);
    r = an_rootfs_finalize(s, err);
    if (r < 0) return r;
    r = an_procview_apply(s, err);
    if (r < 0) return r;
  }

  cleanup_close int pty_master = -1;
  r = setup_process(c, &pty_master, err);
  if (r < 0) return r;
  char **with_home = env_with_home(c->process->env, c->process->user.uid);
  if (with_home) *env = with_home;
  r = lookup_executable(c->process->args[0], c->process->env, exe, exesz, err);
  if (r < 0) {
    *command_failed = true;
    return r;
  }

  /* [4] ready (with the pty master); [5] go, or detach and wait for
   * `start`.  An exec with inherited setup has nothing to hand over. */
  enum an_sync_point got = AN_SYNC_GO;
  if (!c->inherited_setup) {
    r = an_sync_send(c->sync_fd, AN_SYNC_READY, pty_master, err);
    if (r < 0) return r;
    if (pty_master >= 0) { close(pty_master); pty_master = -1; }
    r = an_sync_wait_either(c->sync_fd, AN_SYNC_GO, AN_SYNC_DETACH, &got, err);
    if (r < 0) return r;
  }
  /* Started (or detached by create): the process no longer dies with the
   * runtime (run -d, exec -d: the runtime exits now). */
  if (prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) < 0)
    return an_error_set(err, errno, "clear the parent-death signal (prctl PR_SET_PDEATHSIG)");
  if (got == AN_SYNC_DETACH) {
    if (c->start_fd < 0) return an_error_set(err, EPROTO, "detach without a start socket");
    /* [8] create: the parent-death signal is disarmed; only now may the
     * runtime exit (sync.h).  We are on our own from here. */
    r = an_sync_send(c->sync_fd, AN_SYNC_DETACHED, -1, err);
    if (r < 0) return r;
    close(c->sync_fd);
    *report_fd = -1;
    int conn = -1;
    r = wait_for_start(c->start_fd, &conn, err);
    if (r < 0) return r;
    close(c->start_fd);
    *report_fd = conn;
  }
  if (!c->exec_only) {
    r = an_hooks_run(s->hooks.start_container, s->hooks.n_start_container, "startContainer",
                     hook_state, err);
    if (r < 0) return r;
  }
  r = seal_fds(c, report_fd, err);
  if (r < 0) return r;
  reset_signals();
  /* Last, as runc and crun: after the filter only execve of the path
   * resolved before [4] (a tight allowlist needs nothing else). */
  if (c->seccomp) {
    r = an_seccomp_install(c->seccomp, err);
    if (r < 0) return an_error_prefix(err, "linux.seccomp");
  }
  return 0;
}

int an_init_prepare_exec(const struct an_init_config *c, an_error_t *err) {
  if (!an_init_exec_inherits_setup(c))
    return an_error_set(err, EINVAL, "prepare an exec: only for an exec without a terminal");
  int none = -1;
  return setup_before_identity(c, &none, err);
}

_Noreturn void an_init_main(const struct an_init_config *c) {
  an_error_t err = NULL;
  int report_fd = c->sync_fd;
  char exe[4096];
  int r;

  /* If the runtime died before this, [1] below reads EOF and we exit
   * (getppid() is 0 in a new pid namespace, so it cannot be compared). */
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (c->parent_sync_fd >= 0) close(c->parent_sync_fd);
  if (c->state_dirfd >= 0) close(c->state_dirfd);

  char **env = c->process->env;
  bool command_failed = false;
  /* into the container's v1 cgroups before anything else (cgroup.h) */
  r = c->birth ? an_cgroup_birth_enter(c->birth, &err) : 0;
  if (r == 0) r = init_run(c, &report_fd, exe, sizeof exe, &env, &command_failed, &err);
  if (r == 0) {
    execve(exe, c->process->args, env ? env : (char *[]){NULL});
    r = exec_failed(&err, errno, exe);
    command_failed = true;
  }
  if (report_fd >= 0 && command_failed) an_sync_send_command_error(report_fd, err);
  else if (report_fd >= 0) an_sync_send_error(report_fd, err);
  /* a shell's statuses for the command's own failure; 1 for a setup step */
  _exit(!command_failed ? 1 : r == -ENOENT || r == -ENOTDIR ? 127 : 126);
}
