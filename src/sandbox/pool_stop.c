/* sandbox/pool_stop.c — the end of a pool: an_pool_stop (the keeper ended,
 * the ready sandboxes destroyed, the directory removed), and what
 * an_sandbox_prune does with pools whose keeper died.  Sandboxes handed
 * out are never touched here: their entries in taken/ are only names. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "engine/process.h"
#include "sandbox/pool_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/safe_path.h"

/* A pool directory without pool.json younger than this is being started. */
#define POOL_START_GRACE_MS 60000

void an_pool_end_keeper(const struct an_pool_meta *m, uint64_t grace_ms) {
  int fd = -1;
  an_error_t e = NULL;
  if (m->keeper_pid <= 0 || an_process_pidfd_checked(m->keeper_pid, m->keeper_start, &fd, &e) < 0) {
    an_error_free(&e);
    return;
  }
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (an_process_signal(fd, SIGTERM, &e) == 0) {
    while (poll(&p, 1, (int) grace_ms) < 0 && errno == EINTR) {}
  }
  an_error_free(&e);
  if (!(p.revents & POLLIN)) {
    an_process_signal(fd, SIGKILL, &e);
    an_error_free(&e);
    while (poll(&p, 1, 5000) < 0 && errno == EINTR) {}
  }
  close(fd);
}

int an_pool_remove(const char *root, const char *name, unsigned *destroyed, an_error_t *err) {
  root = an_sb_root_or_default(root);
  char dir[PATH_MAX], path[PATH_MAX * 2];
  int r = an_pool_path(root, name, dir, sizeof dir, err);
  if (r < 0) return r;
  unsigned count = 0;
  int first = 0;
  snprintf(path, sizeof path, "%s/%s", dir, AN_POOL_READY);
  cleanup_close int rfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  int dfd = rfd >= 0 ? fcntl(rfd, F_DUPFD_CLOEXEC, 3) : -1;
  cleanup_closedir DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d && dfd >= 0) close(dfd);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name)) continue;
    /* unlink first: a concurrent claim renames the entry or we remove it */
    if (unlinkat(rfd, de->d_name, 0) < 0) continue;
    an_error_t e = NULL;
    if (an_sb_teardown(root, de->d_name, "pool stopped", false, 0, false, NULL, &e) < 0 && !first)
      first = an_error_set(err, e->errnum, "pool %s: %s", name, e->msg);
    else count++;
    an_error_free(&e);
  }
  if (destroyed) *destroyed = count;
  if (first < 0) return first;
  snprintf(path, sizeof path, "%s/%s", root, AN_POOL_DIR);
  cleanup_close int pfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (pfd < 0) return errno == ENOENT ? 0 : an_error_set(err, errno, "open %s", path);
  an_error_t e = NULL;
  if (an_remove_tree_beneath(pfd, name, &e) < 0) {
    r = an_error_set(err, e->errnum, "pool %s: %s", name, e->msg);
    an_error_free(&e);
    return r;
  }
  return 0;
}

int an_pool_stop(const char *store_root, const char *name, unsigned *destroyed, an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root);
  char dir[PATH_MAX];
  int r = an_pool_path(root, name, dir, sizeof dir, err);
  if (r < 0) return r;
  struct stat st;
  if (stat(dir, &st) < 0) return an_error_set(err, ENOENT, "no pool %s (agentnest pool ls)", name);
  struct an_pool_meta m = {0};
  an_error_t e = NULL;
  if (an_pool_meta_read(dir, &m, &e) < 0) an_error_free(&e);
  /* the keeper destroys its ready sandboxes on SIGTERM; what is left after
   * a SIGKILL goes below */
  an_pool_end_keeper(&m, 10000);
  return an_pool_remove(root, name, destroyed, err);
}

void an_pool_prune(const char *root, bool all, struct an_jgen *g,
                   void (*note)(void *ctx, an_error_t *e), void *ctx) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", an_sb_root_or_default(root), AN_POOL_DIR);
  cleanup_closedir DIR *d = opendir(path);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!an_pool_valid_name(de->d_name)) continue;
    char dir[PATH_MAX + 300];
    snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
    struct an_pool_meta m = {0};
    an_error_t e = NULL;
    if (an_pool_meta_read(dir, &m, &e) < 0) {
      an_error_free(&e);
      struct stat st;
      if (stat(dir, &st) == 0 && an_sb_now_ms() - (uint64_t) st.st_mtime * 1000 < POOL_START_GRACE_MS) continue;
    } else if (an_pool_keeper_alive(&m)) {
      if (!all) continue;
      an_pool_end_keeper(&m, 10000);
    }
    if (an_pool_remove(root, de->d_name, NULL, &e) == 0) an_jgen_str(g, de->d_name);
    else note(ctx, &e);
  }
}
