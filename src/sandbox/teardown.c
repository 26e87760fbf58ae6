/* sandbox/teardown.c — remove everything a sandbox consists of: its
 * monitor, its processes (SIGTERM with grace, then SIGKILL via the cgroup),
 * the engine container, cgroups in every hierarchy, workspace (its mount,
 * image and quota: workspace_quota.c), name, id
 * range and state.  Shared by destroy, the monitor (expiry) and prune;
 * serialised by the sandbox's lock file and idempotent, so a teardown
 * interrupted by SIGKILL at any point is finished by the next one.  What
 * does NOT live here: finding what to tear down (prune.c), the detached
 * teardown that runs this after the caller's result (teardown_detach.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/container.h"
#include "engine/process.h"
#include "sandbox/audit_internal.h"
#include "sandbox/egress_run.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/safe_path.h"

bool an_sb_rmdir_cgroup_dirs(const char *id, bool *found) {
  cleanup_closedir DIR *top = opendir("/sys/fs/cgroup");
  if (!top) return true;
  bool gone = true;
  struct dirent *h;
  char dir[PATH_MAX];
  /* cgroup2-only hosts: /sys/fs/cgroup/agentnest/sb-<id>; v1 and hybrid:
   * /sys/fs/cgroup/<hierarchy>/agentnest/sb-<id> */
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 0) snprintf(dir, sizeof dir, "/sys/fs/cgroup/agentnest/sb-%s", id);
    while (pass == 1 && (h = readdir(top))) {
      if (h->d_name[0] == '.') continue;
      snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s/agentnest/sb-%s", h->d_name, id);
      break;
    }
    if (pass == 1 && !h) break;
    DIR *d = opendir(dir);
    if (d) {
      if (found) *found = true;
      struct dirent *c;
      while ((c = readdir(d))) {
        if (c->d_type != DT_DIR || c->d_name[0] == '.') continue;
        char sub[PATH_MAX + 300];
        snprintf(sub, sizeof sub, "%s/%s", dir, c->d_name);
        rmdir(sub);
      }
      closedir(d);
      if (rmdir(dir) < 0 && errno != ENOENT) gone = false;
    }
    if (pass == 1) pass = 0;   /* next hierarchy */
  }
  return gone;
}

static void kill_checked(pid_t pid, uint64_t start, int sig) {
  int fd = -1;
  an_error_t e = NULL;
  if (pid > 0 && an_process_pidfd_checked(pid, start, &fd, &e) == 0) {
    an_process_signal(fd, sig, &e);
    close(fd);
  }
  an_error_free(&e);
}

/* The monitor: SIGTERM first, so that it kills and reaps the sessions it
 * keeps (children of it: orphaned, they would stay zombies on a host whose
 * pid 1 does not reap), up to 1 s; then SIGKILL. */
void an_sb_stop_monitor(pid_t pid, uint64_t start) {
  int fd = -1;
  an_error_t e = NULL;
  if (pid > 0 && an_process_pidfd_checked(pid, start, &fd, &e) == 0) {
    if (an_process_signal(fd, SIGTERM, &e) == 0) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      while (poll(&p, 1, 1000) < 0 && errno == EINTR) {}
    }
    an_error_free(&e);
    an_process_signal(fd, SIGKILL, &e);
    close(fd);
  }
  an_error_free(&e);
}

/* an_empty_dir_beneath's keep: the sandbox's lock file (an_sb_lock) */
static bool keep_lock_file(const char *name, void *data) {
  (void) data;
  return !strcmp(name, AN_SB_LOCK_FILE);
}

/* SIGTERM to pid 1 (agentnest-init forwards it to every process) and wait
 * up to grace_ms for it to exit. */
void an_sb_stop_with_grace(const struct an_sb_record *rec, uint64_t grace_ms) {
  int fd = -1;
  an_error_t e = NULL;
  if (an_process_pidfd_checked(rec->init_pid, rec->init_start, &fd, &e) == 0) {
    if (an_process_signal(fd, SIGTERM, &e) == 0) {
      struct pollfd p = {.fd = fd, .events = POLLIN};
      while (poll(&p, 1, (int) (grace_ms > INT32_MAX ? INT32_MAX : grace_ms)) < 0 && errno == EINTR) {}
    }
    close(fd);
  }
  an_error_free(&e);
}

void an_sb_release_name(const char *root, const char *name, const char *id) {
  if (!name) return;
  char path[PATH_MAX], target[64];
  snprintf(path, sizeof path, "%s/%s/%s", root, AN_SB_NAMES_DIR, name);
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n <= 0) return;
  target[n] = '\0';
  if (!strcmp(target, id)) unlink(path);   /* a new sandbox of that name keeps its own */
}

int an_sb_teardown(const char *root, const char *id, const char *reason, bool tombstone,
                   uint64_t grace_ms, bool skip_monitor, struct an_sb_teardown_report *rep,
                   an_error_t *err) {
  return an_sb_teardown_in(root, AN_SB_DIR, id, reason, "destroy", tombstone, grace_ms, skip_monitor,
                           rep, err);
}

int an_sb_teardown_in(const char *root, const char *area, const char *id, const char *reason,
                      const char *audit_op, bool tombstone, uint64_t grace_ms, bool skip_monitor,
                      struct an_sb_teardown_report *rep, an_error_t *err) {
  struct an_sb_teardown_report dummy;
  if (!rep) rep = &dummy;
  memset(rep, 0, sizeof *rep);
  root = an_sb_root_or_default(root);
  if (!an_sb_valid_id(id)) return an_error_set(err, EINVAL, "sandbox id \"%s\" is not valid", id);
  char dir[PATH_MAX], path[PATH_MAX + 64];
  snprintf(dir, sizeof dir, "%s/%s/%s", root, area, id);
  struct stat st;
  if (stat(dir, &st) < 0) return 0;   /* already gone */
  an_error_t lerr = NULL;
  cleanup_close int lock = an_sb_lock(dir, &lerr);
  if (lock < 0) {
    int e = -lock;
    an_error_free(&lerr);
    if (e == ENOENT) return 0;
    return an_error_set(err, e, "lock sandbox %s", id);
  }
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_LOCK_FILE);
  if (stat(dir, &st) < 0 || access(path, F_OK) < 0) return 0;   /* removed while we waited */
  an_sb_mark_destroying(dir);

  struct an_sb_record rec = {0};
  an_error_t e = NULL;
  bool have_rec = an_sb_record_read(dir, &rec, &e) == 0;
  an_error_free(&e);
  int first = 0;

  /* 1. the monitor (it never holds the lock while we do) */
  if (have_rec && !skip_monitor && rec.monitor_pid) an_sb_stop_monitor(rec.monitor_pid, rec.monitor_start);
  /* 2. processes: SIGTERM with grace, then the engine's forced delete */
  if (have_rec && grace_ms) an_sb_stop_with_grace(&rec, grace_ms);
  an_sb_egress_kill(dir);   /* 2b. egress ends meanwhile; 4b waits for it */
  char containers[PATH_MAX];
  snprintf(containers, sizeof containers, "%s/%s", root, AN_SB_CONTAINERS_DIR);
  snprintf(path, sizeof path, "%s/%s", containers, id);
  bool had_container = access(path, F_OK) == 0;
  bool engine_left_state = false;
  if (had_container && an_container_delete(containers, id, true, &e) < 0) {
    /* A create killed before the engine wrote state.json leaves a state
     * dir the engine cannot load: its processes are in our cgroup (removed
     * below) and the directory goes after that. */
    if (e && e->errnum == ENOENT) engine_left_state = true;
    else if (!first) first = an_error_set(err, e->errnum, "%s", e->msg);
  }
  an_error_free(&e);
  rep->container = had_container;
  /* 3. cgroups the engine did not remove (or a create that died early) */
  char cgpath[64];
  snprintf(cgpath, sizeof cgpath, "%s%s", AN_SB_CGROUP_PREFIX, id);
  struct an_cgroup *cg = NULL;
  if (an_cgroup_open(cgpath, &cg, &e) == 0) {
    rep->cgroup = true;
    if (an_cgroup_destroy(cg, &e) < 0 && !first) first = an_error_set(err, e->errnum, "%s", e->msg);
    an_cgroup_free(cg);
  } else if (had_container) {
    rep->cgroup = true;
  }
  an_error_free(&e);
  /* A cgroup made in only some hierarchies (create killed mid-way) cannot
   * be opened as a whole: remove its directories one by one. */
  bool cgroup_gone = an_sb_rmdir_cgroup_dirs(id, &rep->cgroup);
  if (!cgroup_gone && !first) first = an_error_set(err, EBUSY, "cgroup %s: still has processes", cgpath);
  if (engine_left_state) {
    cleanup_close int cfd = open(containers, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (cfd >= 0 && an_remove_tree_beneath(cfd, id, &e) < 0 && !first)
      first = an_error_set(err, e->errnum, "%s", e->msg);
    an_error_free(&e);
  }
  /* 4. the host side of the init process is gone; make sure of it */
  if (have_rec && rec.init_pid) kill_checked(rec.init_pid, rec.init_start, SIGKILL);
  /* 4b. egress: its process and the netns mount (which would keep the
   * directory from being removed) */
  bool egress_gone = an_sb_egress_stop(dir, &e) == 0;
  if (!egress_gone && !first) first = an_error_set(err, e->errnum, "%s", e->msg);
  an_error_free(&e);

  /* 5. secret values, workspace, name, id range */
  an_sb_secrets_remove(id);
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  bool had_ws = false, ws_gone = true;
  if (dfd >= 0) {
    had_ws = faccessat(dfd, "workspace", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
    if (an_sb_ws_remove(dfd, &e) < 0) {
      ws_gone = false;   /* a mount left: the state below it stays for the next prune */
      if (!first) first = an_error_set(err, e->errnum, "%s", e->msg);
    }
    an_error_free(&e);
  }
  rep->workspace = had_ws;
  if (have_rec) an_sb_release_name(root, rec.name, id);
  /* The id range only once nothing runs or is left under its ids (a
   * process stuck in the kernel past the cgroup kill, the egress process, a
   * workspace mount): released, it could go to the next sandbox, whose
   * processes would share host uids with these.  The state then stays with
   * the record, and the next prune releases the range.  Only the
   * sandbox's own reservation goes: one released by an earlier teardown of
   * it (killed before its state went) may be another sandbox's by now. */
  if (have_rec && rec.ids.size && cgroup_gone && egress_gone && ws_gone) {
    int r = an_sb_idrange_free_owned(rec.idrange_root, &rec.ids, id, &e);
    rep->idrange = r == 0 ? (int64_t) rec.ids.host_uid_base : -1;
    an_error_free(&e);
  }
  /* 6. tombstone and event, then the state itself */
  if (tombstone) {
    snprintf(path, sizeof path, "%s/%s", root, AN_SB_EXPIRED_DIR);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/%s/%s", root, AN_SB_EXPIRED_DIR, id);
    int tfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (tfd >= 0) {
      if (have_rec && rec.name && write(tfd, rec.name, strlen(rec.name)) < 0) {}
      close(tfd);
    }
  }
  an_sb_event(dir, "destroyed", ",\"reason\":\"%s\"", reason);
  bool state_removed = false;
  snprintf(path, sizeof path, "%s/%s", root, area);
  cleanup_close int pfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  /* The state directory is emptied first, the audit record written next and
   * the (empty) directory removed last: its disappearance is what waiters
   * take for "over" (an_sandbox_reap_wait, prune, a caller that removes the
   * store next), so nothing may be written into the store after it.  The
   * lock file, whose lock we hold, goes last but one: a second teardown
   * (a reap_wait or prune that came while we work) that created a new one
   * would not wait for ours and would write its own record. */
  cleanup_close int sfd = -1;
  if (pfd >= 0 && cgroup_gone && ws_gone && egress_gone) {   /* else the next prune retries */
    sfd = openat(pfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int r = sfd < 0 ? (errno == ENOENT ? 0 : an_error_set(&e, errno, "open %s/%s/%s", root, area, id))
                    : an_empty_dir_beneath(sfd, keep_lock_file, NULL, &e);
    if (r < 0 && !first) first = an_error_set(err, e->errnum, "%s", e->msg);
    state_removed = r == 0;
    an_error_free(&e);
  }
  {
    struct an_audit_field af[] = {AN_AUDIT_STR("reason", reason), AN_AUDIT_STR("name", have_rec ? rec.name : NULL),
                                  AN_AUDIT_BOOL("state_removed", state_removed)};
    int ar = first;
    an_sb_audit(NULL, root, id, audit_op, ar, err, af, sizeof af / sizeof *af);
  }
  /* The directory is renamed away before its lock file goes: a locker
   * that comes after the unlink would otherwise make a new lock file in it
   * (an_sb_lock creates one) and our rmdir would fail, leaving a directory
   * with no record; after the rename its open fails with ENOENT, and a
   * waiter on our lock finds the directory gone. */
  char gone[AN_SANDBOX_ID_LEN + 16];
  snprintf(gone, sizeof gone, "%s%s", AN_SB_GONE_PREFIX, id);
  if (state_removed && sfd >= 0 && renameat(pfd, id, pfd, gone) < 0) {
    state_removed = false;
    if (!first) first = an_error_set(err, errno, "rename %s/%s/%s", root, area, id);
  }
  if (state_removed && sfd >= 0 && unlinkat(sfd, AN_SB_LOCK_FILE, 0) < 0 && errno != ENOENT) {
    state_removed = false;
    if (!first) first = an_error_set(err, errno, "unlink %s/%s/%s/%s", root, area, gone, AN_SB_LOCK_FILE);
  }
  if (state_removed && unlinkat(pfd, sfd >= 0 ? gone : id, AT_REMOVEDIR) < 0 && errno != ENOENT) {
    state_removed = false;
    if (!first) first = an_error_set(err, errno, "rmdir %s/%s/%s", root, area, sfd >= 0 ? gone : id);
  }
  rep->state = state_removed;
  an_sb_record_clear(&rec);
  return first < 0 ? an_error_prefix(err, "destroy sandbox %s", id) : 0;
}
