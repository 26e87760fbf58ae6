/* engine/lifecycle.c — operations on an existing container (runtime.md
 * "Operations"): start, state, kill, delete, pause, resume, pids, list, and
 * the state JSON.  What does NOT live here: create/run (container.c), exec
 * (exec.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "agentnest/cgroup.h"
#include "engine/container_internal.h"
#include "engine/hooks.h"
#include "engine/process.h"
#include "engine/state.h"
#include "engine/sync.h"
#include "util/cleanup.h"

int an_container_load(const char *state_root, const char *id, int *dirfd_out,
                      struct an_container_state **st_out, int *pidfd_out, an_error_t *err) {
  const char *root = an_state_root_or_default(state_root);
  cleanup_close int dirfd = -1;
  int r = an_state_dir_open(root, id, &dirfd, err);
  if (r < 0) return r;
  struct an_container_state *st = NULL;
  r = an_state_read(dirfd, &st, err);
  if (r < 0) return an_error_prefix(err, "container %s", id);
  int pidfd = -1;
  if (st->status != AN_STATUS_STOPPED && st->pid > 0) {
    an_error_t e = NULL;
    char proc_state = 0;
    if (an_process_pidfd_checked_state(st->pid, st->start_time, &pidfd, &proc_state, &e) < 0) {
      st->status = AN_STATUS_STOPPED;
      st->pid = 0;
    } else if (proc_state == 'Z' || proc_state == 'X') {
      /* A zombie init (reparented, not yet reaped) is stopped too. */
      st->status = AN_STATUS_STOPPED;
      close(pidfd);
      pidfd = -1;
    }
    an_error_free(&e);
  } else {
    st->status = AN_STATUS_STOPPED;
  }
  if (pidfd_out) *pidfd_out = pidfd;
  else if (pidfd >= 0) close(pidfd);
  *dirfd_out = an_steal_fd(&dirfd);
  *st_out = st;
  return 0;
}

static int load_spec(int dirfd, struct an_spec **spec, an_error_t *err) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dirfd, AN_STATE_CONFIG);
  return an_spec_load_file(path, spec, err);
}

static void run_hooks_quietly(int dirfd, const struct an_container_state *st, int stage) {
  struct an_spec *spec = NULL;
  an_error_t e = NULL;
  if (load_spec(dirfd, &spec, &e) == 0) {
    const struct an_spec_hook *h = stage ? spec->hooks.poststop : spec->hooks.poststart;
    size_t n = stage ? spec->hooks.n_poststop : spec->hooks.n_poststart;
    cleanup_free char *json = NULL;
    if (n && an_state_to_json(st, false, &json, &e) == 0)
      an_hooks_run(h, n, stage ? "poststop" : "poststart", json, &e);
  }
  an_error_free(&e);
  an_spec_free(spec);
}

int an_container_start(const char *state_root, const char *id, an_error_t *err) {
  cleanup_close int dirfd = -1, pidfd = -1, s = -1;
  struct an_container_state *st = NULL;
  int r = an_container_load(state_root, id, &dirfd, &st, &pidfd, err);
  if (r < 0) return r;
  if (st->status != AN_STATUS_CREATED) {
    r = an_error_set(err, EINVAL, "container %s is %s, not created", id,
                     an_container_status_name(st->status));
    goto out;
  }
  s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) { r = an_error_set(err, errno, "start: socket"); goto out; }
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/%s", (int) dirfd, AN_STATE_START_SOCK);
  if (connect(s, (struct sockaddr *) &sa, sizeof sa) < 0) {
    r = an_error_set(err, errno, "start container %s: connect to init", id);
    goto out;
  }
  if (write(s, "s", 1) != 1) { r = an_error_set(err, errno, "start container %s", id); goto out; }
  unlinkat(dirfd, AN_STATE_START_SOCK, 0);
  /* EOF: init reached execve; a message: it failed (then it has exited). */
  r = an_sync_wait_exec(s, NULL, err);
  if (r < 0) {
    an_error_prefix(err, "start container %s", id);
    st->status = AN_STATUS_STOPPED;
    an_error_t e = NULL;
    an_state_write(dirfd, st, &e);
    an_error_free(&e);
    goto out;
  }
  st->status = AN_STATUS_RUNNING;
  r = an_state_write(dirfd, st, err);
  if (r < 0) goto out;
  run_hooks_quietly(dirfd, st, 0);
out:
  an_container_state_free(st);
  return r;
}

int an_container_state(const char *state_root, const char *id, struct an_container_state **out,
                       an_error_t *err) {
  cleanup_close int dirfd = -1;
  return an_container_load(state_root, id, &dirfd, out, NULL, err);
}

int an_container_state_json(const struct an_container_state *st, char **json, an_error_t *err) {
  return an_state_to_json(st, false, json, err);
}

int an_container_list(const char *state_root, char ***ids_out, an_error_t *err) {
  const char *root = an_state_root_or_default(state_root);
  size_t n = 0, cap = 8;
  char **ids = calloc(cap, sizeof *ids);
  if (!ids) return an_error_set(err, ENOMEM, "list");
  DIR *d = opendir(root);
  if (!d && errno != ENOENT) {
    free(ids);
    return an_error_set(err, errno, "open state root %s", root);
  }
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    if (an_state_validate_id(de->d_name, NULL) < 0) continue;
    if (n + 2 > cap) {
      char **t = realloc(ids, (cap *= 2) * sizeof *ids);
      if (!t) break;
      ids = t;
    }
    ids[n] = strdup(de->d_name);
    if (ids[n]) ids[++n] = NULL;
  }
  if (d) closedir(d);
  *ids_out = ids;
  return 0;
}

static int open_cgroup(const struct an_container_state *st, struct an_cgroup **cg, an_error_t *err) {
  if (!st->cgroup_path) return an_error_set(err, ENOENT, "container %s: no cgroup recorded", st->id);
  return an_cgroup_open(st->cgroup_path, cg, err);
}

int an_container_kill(const char *state_root, const char *id, int sig, bool all, an_error_t *err) {
  cleanup_close int dirfd = -1, pidfd = -1;
  struct an_container_state *st = NULL;
  int r = an_container_load(state_root, id, &dirfd, &st, &pidfd, err);
  if (r < 0) return r;
  if (st->status == AN_STATUS_STOPPED && all) {
    /* runc: --all signals whatever is left in the cgroup and succeeds when
     * nothing is (engines kill --all exited containers when they stop them) */
    struct an_cgroup *cg = NULL;
    an_error_t e = NULL;
    if (open_cgroup(st, &cg, &e) == 0) an_cgroup_kill(cg, sig, &e);
    an_error_free(&e);
    an_cgroup_free(cg);
    r = 0;
  } else if (st->status == AN_STATUS_STOPPED) {
    /* runc's wording, which containerd matches ("container not running") */
    r = an_error_set(err, ESRCH, "container not running");
  } else if (all) {
    struct an_cgroup *cg = NULL;
    r = open_cgroup(st, &cg, err);
    if (r == 0) r = an_cgroup_kill(cg, sig, err);
    an_cgroup_free(cg);
  } else {
    r = an_process_signal(pidfd, sig, err);
    if (r == -ESRCH) {
      /* init exited after the state was read: runc's wording again */
      an_error_free(err);
      r = an_error_set(err, ESRCH, "container not running");
    }
  }
  an_container_state_free(st);
  return r < 0 ? an_error_prefix(err, "kill container %s", id) : 0;
}

/* A create killed between making its state directory and writing the first
 * state.json leaves only the directory (the cgroup is made after that write).
 * Remove it; returns 1 if that was the case, 0 if state.json exists. */
static int remove_bare_state_dir(const char *state_root, const char *id, an_error_t *err) {
  const char *root = an_state_root_or_default(state_root);
  cleanup_close int dirfd = -1;
  int r = an_state_dir_open(root, id, &dirfd, err);
  if (r < 0) return r;
  if (faccessat(dirfd, AN_STATE_FILE, F_OK, AT_SYMLINK_NOFOLLOW) == 0) return 0;
  if (errno != ENOENT) return an_error_set(err, errno, "%s/%s/%s", root, id, AN_STATE_FILE);
  r = an_state_dir_remove(root, id, dirfd, err);
  return r < 0 ? r : 1;
}

int an_container_delete(const char *state_root, const char *id, bool force, an_error_t *err) {
  cleanup_close int dirfd = -1, pidfd = -1;
  struct an_container_state *st = NULL;
  int r = remove_bare_state_dir(state_root, id, err);
  if (r != 0) return r < 0 ? an_error_prefix(err, "delete container %s", id) : 0;
  r = an_container_load(state_root, id, &dirfd, &st, &pidfd, err);
  if (r < 0) return r;
  /* runtime.md: delete of a created container is allowed (it never ran the
   * user program); a running one needs force. */
  if ((st->status == AN_STATUS_RUNNING || st->status == AN_STATUS_PAUSED) && !force) {
    r = an_error_set(err, EBUSY, "container %s is %s: stop it first or use force", id,
                     an_container_status_name(st->status));
    goto out;
  }
  if (pidfd >= 0) {
    an_error_t e = NULL;
    an_process_signal(pidfd, SIGKILL, &e);
    an_error_free(&e);
  }
  struct an_cgroup *cg = NULL;
  an_error_t e = NULL;
  if (open_cgroup(st, &cg, &e) == 0) {
    if (st->status == AN_STATUS_PAUSED) an_cgroup_freeze(cg, false, &e);
    an_error_free(&e);
    r = an_cgroup_destroy(cg, err);
    an_cgroup_free(cg);
    if (r < 0) goto out;
  }
  an_error_free(&e);
  bool ran = st->status != AN_STATUS_CREATED;
  st->status = AN_STATUS_STOPPED;
  if (ran) run_hooks_quietly(dirfd, st, 1);
  r = an_state_dir_remove(an_state_root_or_default(state_root), id, dirfd, err);
out:
  an_container_state_free(st);
  return r < 0 ? an_error_prefix(err, "delete container %s", id) : 0;
}

static int freeze(const char *state_root, const char *id, bool frozen, an_error_t *err) {
  cleanup_close int dirfd = -1;
  struct an_container_state *st = NULL;
  int r = an_container_load(state_root, id, &dirfd, &st, NULL, err);
  if (r < 0) return r;
  enum an_container_status want = frozen ? AN_STATUS_RUNNING : AN_STATUS_PAUSED;
  if (st->status != want) {
    r = an_error_set(err, EINVAL, "container %s is %s, not %s", id,
                     an_container_status_name(st->status), an_container_status_name(want));
    goto out;
  }
  struct an_cgroup *cg = NULL;
  r = open_cgroup(st, &cg, err);
  if (r == 0) r = an_cgroup_freeze(cg, frozen, err);
  an_cgroup_free(cg);
  if (r < 0) goto out;
  st->status = frozen ? AN_STATUS_PAUSED : AN_STATUS_RUNNING;
  r = an_state_write(dirfd, st, err);
out:
  an_container_state_free(st);
  return r;
}

int an_container_pause(const char *state_root, const char *id, an_error_t *err) {
  return freeze(state_root, id, true, err);
}

int an_container_resume(const char *state_root, const char *id, an_error_t *err) {
  return freeze(state_root, id, false, err);
}

int an_container_pids(const char *state_root, const char *id, pid_t **pids, size_t *n,
                      an_error_t *err) {
  cleanup_close int dirfd = -1;
  struct an_container_state *st = NULL;
  int r = an_container_load(state_root, id, &dirfd, &st, NULL, err);
  if (r < 0) return r;
  struct an_cgroup *cg = NULL;
  r = open_cgroup(st, &cg, err);
  if (r == 0) r = an_cgroup_pids(cg, pids, n, err);
  an_cgroup_free(cg);
  an_container_state_free(st);
  return r;
}
