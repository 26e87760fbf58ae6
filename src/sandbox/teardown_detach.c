/* sandbox/teardown_detach.c — teardown after the result: the caller's part
 * of a destroy (grace, SIGKILL of pid 1 and the wait for it, the state
 * directory moved to <root>/sandbox-reaping/<id> so that no lookup finds
 * it, the name released) and who removes the remains there: the
 * sandbox's own monitor where one lives (monitor.c calls an_sb_reap_moved
 * once it sees pid 1 exit), else the store's detached reaper process (one
 * at a time per store: later destroys hand their entries to a running
 * one); an_sandbox_destroy_detached and an_sandbox_reap_wait.
 * Who waits for whom: tests/bench/README.md "Teardown after the result".
 * The removal steps themselves are teardown.c's; prune.c finishes what a
 * killed reaper left. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine/process.h"
#include "sandbox/audit_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

/* How long the caller waits for pid 1 (and with it its pid namespace) to
 * be gone after SIGKILL; a process stuck in the kernel past this is left
 * to the reaper's cgroup kill. */
#define AN_SB_KILL_WAIT_MS 10000

/* SIGKILL pid 1 and wait until it has exited.  The kernel kills every
 * other process of the pid namespace and waits for them before pid 1's
 * exit is reported (pid_namespaces(7)), so a readable pidfd means that no
 * process of the sandbox runs any more. */
static void kill_init_and_wait(const struct an_sb_record *rec) {
  int fd = -1;
  an_error_t e = NULL;
  if (rec->init_pid > 0 && an_process_pidfd_checked(rec->init_pid, rec->init_start, &fd, &e) == 0) {
    if (an_process_signal(fd, SIGKILL, &e) == 0) {
      /* A sandbox frozen by a snapshot, restore or fork in progress
       * (workspace_ops.c, fork.c: they do not hold the lock) acts on no
       * SIGKILL until thawed (a v1 freezer task stays in the refrigerator;
       * cgroup.kill does not thaw it either): without this, pid 1 outlived
       * the wait below and destroy returned, name released, with the
       * sandbox's processes alive.  Every process gets SIGKILL first, then
       * the cgroup is thawed, so none runs user code again. */
      char cgpath[64];
      snprintf(cgpath, sizeof cgpath, "%s%s", AN_SB_CGROUP_PREFIX, rec->id);
      struct an_cgroup *cg = NULL;
      if (an_cgroup_open(cgpath, &cg, &e) == 0) {
        an_cgroup_kill(cg, SIGKILL, &e);
        an_error_free(&e);
        an_cgroup_freeze(cg, false, &e);
        an_cgroup_free(cg);
      }
      an_error_free(&e);
      struct pollfd p = {.fd = fd, .events = POLLIN};
      while (poll(&p, 1, AN_SB_KILL_WAIT_MS) < 0 && errno == EINTR) {}
    }
    close(fd);
  }
  an_error_free(&e);
}

/* In a moved state directory: the caller already wrote the "destroy"
 * audit record (the reaper's is then "reap"). */
#define AN_SB_AUDITED_MARK "destroy-audited"
/* <root>/sandbox-reaping/.reaper.lock: held by the store's one running
 * reaper while it drains the area. */
#define AN_SB_REAPER_LOCK ".reaper.lock"

/* Every removal step of teardown.c on a moved entry (the monitor's own
 * reaping, monitor.c; and the end of reap below). */
int an_sb_reap_moved(const char *root, const char *id, an_error_t *err) {
  char dir[PATH_MAX], mark[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/%s/%s", root, AN_SB_REAPING_DIR, id);
  snprintf(mark, sizeof mark, "%s/%s", dir, AN_SB_AUDITED_MARK);
  struct stat st;
  if (stat(dir, &st) < 0) return 0;
  const char *op = access(mark, F_OK) == 0 ? "reap" : "destroy";
  return an_sb_teardown_in(root, AN_SB_REAPING_DIR, id, "destroy", op, false, 0, true, NULL, err);
}

/* The reaper's work on one entry (also an_sandbox_reap_wait's): the
 * monitor first, outside the lock (a monitor that saw pid 1 exit waits
 * for the lock to tear down a directory that is no longer where it
 * looks, and then exits), then an_sb_reap_moved. */
static int reap(const char *root, const char *id, an_error_t *err) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s/%s", root, AN_SB_REAPING_DIR, id);
  struct an_sb_record rec;
  an_error_t e = NULL;
  if (an_sb_record_read(dir, &rec, &e) == 0) {
    an_sb_stop_monitor(rec.monitor_pid, rec.monitor_start);
    an_sb_record_clear(&rec);
  }
  an_error_free(&e);
  return an_sb_reap_moved(root, id, err);
}

/* Reap every entry of the reaping area; true when one was removed (an
 * entry whose teardown fails stays for prune and does not count, so the
 * reaper cannot spin on it). */
static bool drain(const char *root) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, AN_SB_REAPING_DIR);
  cleanup_closedir DIR *d = opendir(path);
  struct dirent *de;
  bool removed = false;
  while (d && (de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name)) continue;
    an_error_t e = NULL;
    char dir[PATH_MAX + 300];
    struct stat st;
    snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
    if (reap(root, de->d_name, &e) == 0 && stat(dir, &st) < 0) removed = true;
    an_error_free(&e);
  }
  return removed;
}

/* The flock of the store's reaper lock without waiting: its fd, or -1
 * when another reaper holds it (or it cannot be opened). */
static int reaper_trylock(const char *root) {
  char lk[PATH_MAX];
  snprintf(lk, sizeof lk, "%s/%s/%s", root, AN_SB_REAPING_DIR, AN_SB_REAPER_LOCK);
  int fd = open(lk, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return -1;
  if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The store's one reaper: under its lock, drain the area until a pass
 * finds it empty; after the unlock look once more, because a destroy that
 * found the lock held left its entry to us.  Two reapers never work at
 * once, so a thousand destroys make one reaper process, not a thousand. */
static void reaper_main(const char *root) {
  for (;;) {
    int fd = reaper_trylock(root);
    if (fd < 0) return;   /* another reaper took over */
    while (drain(root)) {}
    close(fd);
    if (!drain(root)) return;
  }
}

/* Make sure a reaper will see the entries of the reaping area: one is
 * running (it looks again after its unlock), or a new one is started:
 * double-forked (daemon.c), its own session, stdio /dev/null and no other
 * descriptor of the caller (a caller's pipe held open would keep
 * `$(agentnest run ...)` waiting for it).  False when none could be
 * started (the caller reaps then). */
static bool ensure_reaper(const char *root) {
  int held = reaper_trylock(root);
  if (held < 0) {
    char lk[PATH_MAX];
    snprintf(lk, sizeof lk, "%s/%s/%s", root, AN_SB_REAPING_DIR, AN_SB_REAPER_LOCK);
    return access(lk, F_OK) == 0;   /* held by a running reaper */
  }
  close(held);
  int pfd = -1;
  an_error_t e = NULL;
  int f = an_sb_fork_detached("reaper", &pfd, &e);
  if (f < 0) {
    an_error_free(&e);
    return false;
  }
  if (f == 0) {
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
      dup2(nul, 0);
      dup2(nul, 1);
      dup2(nul, 2);
    }
    syscall(SYS_close_range, 3, ~0U, 0);
    prctl(PR_SET_NAME, "agentnest-reap", 0, 0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    reaper_main(root);
    _exit(0);
  }
  close(pfd);
  return true;
}

int an_sb_teardown_detached(const char *root, const char *id, const char *reason, uint64_t grace_ms,
                            bool audit_now, bool spawn, an_error_t *err) {
  root = an_sb_root_or_default(root);
  if (!an_sb_valid_id(id)) return an_error_set(err, EINVAL, "sandbox id \"%s\" is not valid", id);
  char dir[PATH_MAX], to[PATH_MAX], path[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/%s/%s", root, AN_SB_DIR, id);
  struct stat st;
  if (stat(dir, &st) < 0) return 0;   /* already gone */
  an_error_t e = NULL;
  int lock = an_sb_lock(dir, &e);
  if (lock < 0) {
    int en = -lock;
    if (en == ENOENT) {
      an_error_free(&e);
      return 0;
    }
    *err = e;
    return an_error_prefix(err, "destroy sandbox %s", id);
  }
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_LOCK_FILE);
  if (stat(dir, &st) < 0 || access(path, F_OK) < 0) {   /* removed while we waited */
    close(lock);
    return 0;
  }
  an_sb_mark_destroying(dir);
  struct an_sb_record rec;
  if (an_sb_record_read(dir, &rec, &e) < 0) {
    /* a create that died early: nothing runs, tear it down here */
    an_error_free(&e);
    close(lock);
    return an_sb_teardown(root, id, reason, false, grace_ms, false, NULL, err);
  }
  if (grace_ms) an_sb_stop_with_grace(&rec, grace_ms);
  kill_init_and_wait(&rec);
  /* the mark moves with the directory: whoever reaps it (a monitor may
   * look before we unlock) knows the "destroy" record is the caller's */
  if (audit_now) {
    snprintf(path, sizeof path, "%s/%s", dir, AN_SB_AUDITED_MARK);
    int mfd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (mfd >= 0) close(mfd);
  }
  snprintf(to, sizeof to, "%s/%s", root, AN_SB_REAPING_DIR);
  if ((mkdir(to, 0700) < 0 && errno != EEXIST) ||
      (snprintf(to, sizeof to, "%s/%s/%s", root, AN_SB_REAPING_DIR, id), rename(dir, to) < 0)) {
    an_sb_record_clear(&rec);
    close(lock);
    return an_sb_teardown(root, id, reason, false, 0, false, NULL, err);
  }
  /* unreachable from here on: release the name for a new sandbox */
  an_sb_release_name(root, rec.name, id);
  an_sb_event(to, "destroying", ",\"reason\":\"%s\"", reason);
  if (audit_now) {
    struct an_audit_field af[] = {AN_AUDIT_STR("reason", reason), AN_AUDIT_STR("name", rec.name),
                                  AN_AUDIT_BOOL("detached", true)};
    an_sb_audit(NULL, root, id, "destroy", 0, NULL, af, sizeof af / sizeof *af);
  }
  /* A live monitor saw pid 1 exit and, once we unlock, finds its state
   * moved and reaps it itself (monitor.c): no process to start. */
  bool monitor_reaps = rec.monitor_pid && an_sb_pid_alive(rec.monitor_pid, rec.monitor_start);
  an_sb_record_clear(&rec);
  close(lock);
  if (spawn && !monitor_reaps && !ensure_reaper(root)) return reap(root, id, err);
  return 0;
}

int an_sandbox_destroy_detached(struct an_sandbox *sb, uint64_t grace_ms, an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "destroy: no sandbox");
  return an_sb_teardown_detached(sb->root, sb->rec.id, "destroy", grace_ms, true, true, err);
}

int an_sandbox_reap_wait(const char *store_root, const char *id, an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root);
  if (!an_sb_valid_id(id)) return an_error_set(err, EINVAL, "sandbox id \"%s\" is not valid", id ? id : "");
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s/%s", root, AN_SB_REAPING_DIR, id);
  struct stat st;
  if (stat(dir, &st) < 0) return 0;
  return reap(root, id, err);
}
