/* engine/exec.c — an_container_exec: one more process in a running (or
 * created) container, like `runc exec`.  A short-lived joiner (exec_join.h)
 * lands in the container's cgroup, joins every namespace of the container's
 * init through its pidfd (setns(2) with a pidfd, so the set is taken
 * atomically from the right process) and only then clones the process, which
 * is thus never visible in the container while it holds host state.  The
 * process gets the same security setup as init (init.c, exec_only):
 * identity, capabilities, no_new_privs, the container's seccomp filter, no
 * runtime fds, cwd confined to the root.  What does NOT live here: per-exec
 * child cgroups and timeouts (sandbox layer). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/cgroup.h"
#include "engine/container_internal.h"
#include "engine/exec_join.h"
#include "engine/exec_spawn.h"
#include "engine/init.h"
#include "engine/process.h"
#include "engine/seccomp.h"
#include "engine/state.h"
#include "engine/sync.h"
#include "engine/terminal.h"
#include "engine/userns.h"
#include "util/cleanup.h"
#include "util/clock.h"

struct exec_ctx {
  int dirfd, init_pidfd;
  struct an_exec_child child;
  struct an_container_state *st;
  struct an_spec *spec;
  struct an_cgroup *cg;
  struct an_seccomp_program *seccomp;
};

static void exec_release(struct exec_ctx *x) {
  if (x->dirfd >= 0) close(x->dirfd);
  if (x->init_pidfd >= 0) close(x->init_pidfd);
  an_exec_child_close(&x->child);
  an_container_state_free(x->st);
  an_spec_free(x->spec);
  an_cgroup_free(x->cg);
  an_seccomp_program_free(x->seccomp);
}

/* Wait until the sync socket has something to read (a message or EOF), or
 * the child's deadline passes: -ETIMEDOUT, or its cancel fd turns
 * readable: -ECANCELED. */
static int wait_sync(const struct an_exec_child *c, an_error_t *err) {
  const char *what = c->what;
  if (!c->deadline_ms && c->cancel_fd < 0) return 0;
  for (;;) {
    uint64_t now = an_mono_ms();
    if (c->deadline_ms && now >= c->deadline_ms)
      return an_error_set(err, ETIMEDOUT, "exec in %s: the process did not reach execve in time "
                          "(stalled or stopped before it started)", what);
    struct pollfd p[2] = {{.fd = c->sync_fd, .events = POLLIN}, {.fd = c->cancel_fd, .events = POLLIN}};
    uint64_t left = c->deadline_ms ? c->deadline_ms - now : UINT64_MAX;
    int n = poll(p, c->cancel_fd >= 0 ? 2 : 1, left > INT32_MAX ? -1 : (int) left);
    if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) return 0;
    if (n > 0 && p[1].revents)
      return an_error_set(err, ECANCELED, "exec in %s: cancelled before the process started", what);
    if (n < 0 && errno != EINTR) return an_error_set(err, errno, "exec in %s: poll", what);
  }
}

/* Kill and reap a child of a failed exec (the joiner, or the process before
 * it ran).  In a cgroup a v1 freezer froze (the sandbox paused, or frozen
 * by a snapshot), SIGKILL waits for the thaw: the child is let out of the
 * freezer, and a child that still does not die within 5 s is left unreaped
 * rather than holding the caller (its exec's deadline is past already). */
static void child_abort(int *pidfd, pid_t pid, const struct an_cgroup *cg) {
  if (*pidfd < 0) return;
  an_error_t e = NULL;
  an_process_signal(*pidfd, SIGKILL, &e);
  an_error_free(&e);
  an_cgroup_reap_killed(cg, *pidfd, pid, 5100, NULL);
  close(*pidfd);
  *pidfd = -1;
}

/* Up to len-1 bytes of a /proc file into buf, NUL-terminated; returns the
 * byte count (0: unreadable or empty). */
static size_t read_proc(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n = 0;
  ssize_t k;
  while (n + 1 < len && ((k = read(fd, buf + n, len - 1 - n)) > 0 || (k < 0 && errno == EINTR)))
    if (k > 0) n += (size_t) k;
  close(fd);
  buf[n] = '\0';
  return n;
}

bool an_exec_thread_children(pid_t **pids, size_t *n) {
  *pids = NULL;
  *n = 0;
  /* all of them, however many (a server's thread can have thousands; the
   * newest is listed last) */
  cleanup_free char *kids = NULL;
  size_t len = 4096, got = 0;
  for (;;) {
    free(kids);
    if (!(kids = malloc(len))) return false;
    got = read_proc("/proc/thread-self/children", kids, len);
    if (got + 1 < len) break;
    len *= 4;
  }
  pid_t *out = malloc((got / 2 + 1) * sizeof *out);   /* each pid takes 2 bytes at least */
  if (!out) return false;
  for (char *save = NULL, *w = strtok_r(kids, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
    if (atoi(w) > 0) out[(*n)++] = (pid_t) atoi(w);
  *pids = out;
  return true;
}

/* (exec_spawn.h) A process the joiner cloned (CLONE_PARENT: a child of
 * this thread) whose pidfd never came would stay this thread's zombie,
 * unknown to anyone; and a pid namespace's init does not exit while a
 * process of the namespace is unreaped (its parent outside).  It is found
 * among this thread's children by its cgroup, which a zombie's
 * /proc/PID/cgroup still names, less those the caller spares (in a
 * container's own cgroup: its init and earlier detached execs, children
 * of this thread too).  SIGKILL, bounded reap. */
void an_exec_reap_unreported(const struct an_cgroup *cg, const pid_t *spare, size_t nspare) {
  if (!cg) return;
  char want[PATH_MAX + 4];
  const char *cp = an_cgroup_path(cg);
  snprintf(want, sizeof want, ":/%s\n", cp[0] == '/' ? cp + 1 : cp);
  cleanup_free pid_t *kids = NULL;
  size_t n = 0;
  if (!an_exec_thread_children(&kids, &n)) return;
  for (size_t i = 0; i < n; i++) {
    pid_t pid = kids[i];
    bool spared = false;
    for (size_t k = 0; k < nspare && !spared; k++) spared = spare[k] == pid;
    char path[64], cgs[4096];
    snprintf(path, sizeof path, "/proc/%d/cgroup", (int) pid);
    if (spared || !read_proc(path, cgs, sizeof cgs) || !strstr(cgs, want)) continue;
    int fd = (int) syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) continue;
    child_abort(&fd, pid, cg);
  }
}

int an_exec_clone(const struct an_exec_target *t, struct an_exec_child *c, an_error_t *err) {
  *c = (struct an_exec_child){.pid = -1, .pidfd = -1, .sync_fd = -1, .master = -1,
                              .deadline_ms = t->timeout_ms ? an_mono_ms() + t->timeout_ms : 0,
                              .cg = t->cg, .cancel_fd = t->has_cancel_fd ? t->cancel_fd : -1};
  snprintf(c->what, sizeof c->what, "%s", t->what);
  /* The joiner (exec_join.h) enters every namespace of the container's init
   * before the process exists: the process has nothing left to join. */
  int flags = t->spec->linux.ns_flags;
  struct an_ns_plan plan = {.userns_fd = -1, .pidns_fd = -1, .timens_fd = -1, .netns_fd = -1,
                           .all_flags = flags};

  /* the joiner wipes the runtime's argv and environment areas: the
   * process's strings must not live there */
  struct an_exec_process_copy proc;
  int r = an_exec_process_copy(&proc, t->process, err);
  if (r < 0) return an_error_prefix(err, "exec in %s", t->what);
  int sp[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
    int e = errno;
    an_exec_process_copy_free(&proc);
    return an_error_set(err, e, "exec in %s: sync socketpair", t->what);
  }
  c->sync_fd = sp[0];
  /* In a cgroup shared with others (a container's own: its init, earlier
   * detached execs, children of this thread too) only a child that is new
   * since now can be the process a killed joiner left unreported. */
  cleanup_free pid_t *spare = NULL;
  size_t nspare = 0;
  bool spare_ok = !t->cg_exclusive && t->cg && an_exec_thread_children(&spare, &nspare);
  /* the joiner steps into the exec's v1 cgroups itself (cgroup.h: no
   * grace period); opened here, as host root.  Else it is moved below. */
  struct an_cgroup_birth birth;
  bool born = an_cgroup_birth_try(t->cg, &birth);
  struct an_init_config cfg = {
    .birth = born ? &birth : NULL,
    .spec = t->spec, .process = &proc.proc, .rootfs = t->rootfs, .parent_pid = getpid(),
    .sync_fd = sp[1], .parent_sync_fd = sp[0], .start_fd = -1, .state_dirfd = t->state_dirfd,
    .ns = &plan, .in_userns = flags & CLONE_NEWUSER, .seccomp = t->seccomp,
    .stdio = {t->stdio[0], t->stdio[1], t->stdio[2]}, .exec_only = true,
    /* process.terminal in a user namespace: the pty must be made by the
     * namespace's root (a mapped owner), or its chown to the process user
     * is EPERM (devpts gives a new pty the opener's fsuid, and the joined
     * runtime's host uid is unmapped there) */
    .become_root_early = t->process->terminal && (flags & CLONE_NEWUSER) &&
                         an_userns_maps_root(&t->spec->linux),
  };
  struct an_exec_joiner j = {.init_pidfd = t->init_pidfd, .ns_flags = flags, .cfg = &cfg};
  int cgfd = born ? birth.clone_fd : -1;
  int jpidfd = -1;
  pid_t jpid = an_process_clone(0, cgfd, &jpidfd, err);
  if (jpid == 0) an_exec_joiner_main(&j);
  if (born) an_cgroup_birth_end(&birth);
  close(sp[1]);
  /* read before the copy is freed (cfg.process points into it; the free
   * zeroes it, and a terminal exec then looked prepared and deadlocked) */
  bool prepared = an_init_exec_inherits_setup(&cfg);
  an_exec_process_copy_free(&proc);  /* the joiner has its own copy */
  if (jpid < 0) {
    an_exec_child_close(c);
    return an_error_prefix(err, "exec in %s", t->what);
  }
  /* the joiner's cgroup is the process's: it is born there.  A joiner that
   * does not step in itself is moved now: on v1 the write waits for an RCU
   * grace period (the first cgroup.procs write of a burst takes the
   * kernel's cgroup_threadgroup_rwsem for write) while the joiner joins the
   * namespaces and runs the process's setup (exec_join.h). */
  if (t->cg && !born && (r = an_cgroup_enter(t->cg, jpid, err)) < 0) goto fail;
  /* [1] to the joiner: cgroup entered; [7] spawned: the process's pidfd */
  if ((r = an_sync_send(c->sync_fd, AN_SYNC_IDMAPPED, -1, err)) < 0) goto fail;
  if ((r = wait_sync(c, err)) < 0 ||
      (r = an_sync_wait_command(c->sync_fd, AN_SYNC_SPAWNED, &c->pidfd, &c->command_failed, err)) < 0)
    goto fail;
  siginfo_t si = {0};
  while (waitid(P_PIDFD, (id_t) jpidfd, &si, WEXITED) < 0 && errno == EINTR) {}
  close(jpidfd);
  jpidfd = -1;
  if ((r = an_process_pidfd_pid(c->pidfd, &c->pid, err)) < 0) goto fail;
  /* A process that inherited its setup from the joiner is on its way to
   * execve already: an_exec_go only waits for [6]. */
  if ((c->prepared = prepared)) return 0;
  /* [1] ids mapped (nothing to map: joined), cgroup entered */
  if ((r = an_sync_send(c->sync_fd, AN_SYNC_IDMAPPED, -1, err)) < 0) goto fail;
  /* [4] ready: identity, capabilities, PATH lookup done */
  if ((r = wait_sync(c, err)) < 0 ||
      (r = an_sync_wait_command(c->sync_fd, AN_SYNC_READY, &c->master, &c->command_failed, err)) < 0)
    goto fail;
  return 0;
fail:
  child_abort(&jpidfd, jpid, t->cg);
  if (c->pidfd < 0 && (t->cg_exclusive || spare_ok)) an_exec_reap_unreported(t->cg, spare, nspare);
  an_exec_abort(c);
  return r;
}

int an_exec_go(struct an_exec_child *c, an_error_t *err) {
  /* [5] go (not for a prepared process, which did not stop), [6] execve */
  int r = c->prepared ? 0 : an_sync_send(c->sync_fd, AN_SYNC_GO, -1, err);
  if (r == 0) r = wait_sync(c, err);
  if (r == 0) r = an_sync_wait_exec(c->sync_fd, &c->command_failed, err);
  if (r < 0) return r;
  close(c->sync_fd);
  c->sync_fd = -1;
  return 0;
}

void an_exec_child_close(struct an_exec_child *c) {
  if (c->sync_fd >= 0) close(c->sync_fd);
  if (c->master >= 0) close(c->master);
  if (c->pidfd >= 0) close(c->pidfd);
  c->sync_fd = c->master = c->pidfd = -1;
}

void an_exec_abort(struct an_exec_child *c) {
  child_abort(&c->pidfd, c->pid, c->cg);
  an_exec_child_close(c);
}

static int exec_start(struct exec_ctx *x, const char *state_root, const char *id,
                      const struct an_spec_process *proc, const int stdio[3],
                      const char *console_socket, an_error_t *err) {
  int r = an_container_load(state_root, id, &x->dirfd, &x->st, &x->init_pidfd, err);
  if (r < 0) return r;
  if (x->st->status != AN_STATUS_RUNNING && x->st->status != AN_STATUS_CREATED)
    return an_error_set(err, EINVAL, "container %s is %s", id,
                        an_container_status_name(x->st->status));
  if (!proc || !proc->args || !proc->args[0])
    return an_error_set(err, EINVAL, "exec: process.args: at least one argument is required");
  if (proc->terminal && !console_socket)
    return an_error_set(err, EINVAL, "exec: process.terminal needs a console socket");
  if (an_process_lsm_check(proc, err) < 0) return an_error_prefix(err, "exec");
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d/%s", x->dirfd, AN_STATE_CONFIG);
  if ((r = an_spec_load_file(path, &x->spec, err)) < 0) return r;
  if (x->spec->linux.seccomp) {
    /* The filter create compiled and kept; compiled again (through the
     * cache) only for a container whose state has none. */
    an_error_t e = NULL;
    r = an_seccomp_program_load(x->dirfd, AN_STATE_SECCOMP, x->spec->linux.seccomp, &x->seccomp, &e);
    an_error_free(&e);
    if (r < 0) {
      char cache[PATH_MAX];
      snprintf(cache, sizeof cache, "%s/.seccomp-cache", an_state_root_or_default(state_root));
      if ((r = an_seccomp_prepare(x->spec->linux.seccomp, cache, &x->seccomp, err)) < 0) return r;
    }
  }
  if (x->st->cgroup_path && (r = an_cgroup_open(x->st->cgroup_path, &x->cg, err)) < 0) return r;

  char what[128];
  snprintf(what, sizeof what, "container %s", id);
  struct an_exec_target t = {
    .what = what, .spec = x->spec, .process = proc, .rootfs = x->st->rootfs,
    .init_pidfd = x->init_pidfd, .state_dirfd = x->dirfd, .cg = x->cg, .seccomp = x->seccomp,
    .stdio = {stdio ? stdio[0] : -1, stdio ? stdio[1] : -1, stdio ? stdio[2] : -1},
  };
  if ((r = an_exec_clone(&t, &x->child, err)) < 0) return r;
  if (x->child.master >= 0 &&
      (r = an_terminal_send_master(console_socket, x->child.master, err)) < 0)
    return r;
  /* Unlock the state while the process runs. */
  close(x->dirfd);
  x->dirfd = -1;
  return an_exec_go(&x->child, err);
}

int an_container_exec(const char *state_root, const char *id, const struct an_spec_process *proc,
                      bool detach, const char *console_socket, const char *pid_file,
                      pid_t *pid_out, an_error_t *err) {
  return an_container_exec_stdio(state_root, id, proc, NULL, detach, console_socket, pid_file,
                                 pid_out, err);
}

int an_container_exec_stdio(const char *state_root, const char *id,
                            const struct an_spec_process *proc, const int stdio[3], bool detach,
                            const char *console_socket, const char *pid_file, pid_t *pid_out,
                            an_error_t *err) {
  struct exec_ctx x = {.dirfd = -1, .init_pidfd = -1,
                       .child = {.pidfd = -1, .sync_fd = -1, .master = -1}};
  int r = exec_start(&x, state_root, id, proc, stdio, console_socket, err);
  if (r < 0) {
    an_error_prefix(err, "exec in container %s", id);
    an_exec_abort(&x.child);
    exec_release(&x);
    return r;
  }
  if (pid_out) *pid_out = x.child.pid;
  if (pid_file && *pid_file && (r = an_pid_file_write(pid_file, x.child.pid, err)) < 0) {
    /* like create: a process whose pid could not be recorded is not left running */
    an_error_prefix(err, "exec in container %s", id);
    an_exec_abort(&x.child);
    exec_release(&x);
    return r;
  }
  if (!detach) r = an_process_wait(x.child.pidfd, err);
  exec_release(&x);
  return r;
}
