/* sandbox/pool.c — the warm pool's directory (agentnest/pool.h "STATE"),
 * its listing, an_pool_check (is the keeper alive), and the hand-out:
 * an_pool_claim (rename ready/ID to
 * taken/ID, then give the sandbox its deadline and owner and tell its
 * monitor) and an_sandbox_destroy_background (teardown_detach.c's
 * detached teardown).  The keeper that fills the
 * pool is pool_keeper.c; stop and prune are pool_stop.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/audit.h"
#include "engine/process.h"
#include "sandbox/pool_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/json_tree.h"

bool an_pool_valid_name(const char *name) {
  if (!name || !*name || name[0] == '.' || strlen(name) > AN_POOL_NAME_MAX) return false;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '.' || *p == '_' || *p == '-'))
      return false;
  return true;
}

int an_pool_path(const char *root, const char *name, char *buf, size_t len, an_error_t *err) {
  if (!an_pool_valid_name(name))
    return an_error_set(err, EINVAL, "pool name \"%s\": expected 1-%d of [A-Za-z0-9._-], not starting with '.'",
                        name ? name : "", AN_POOL_NAME_MAX);
  snprintf(buf, len, "%s/%s/%s", an_sb_root_or_default(root), AN_POOL_DIR, name);
  return 0;
}

int an_pool_write_file(const char *dir, const char *file, const char *text, an_error_t *err) {
  char tmp[PATH_MAX * 2], path[PATH_MAX * 2];
  snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, file);
  snprintf(path, sizeof path, "%s/%s", dir, file);
  cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return an_error_set(err, errno, "open %s", tmp);
  int r = an_write_all(fd, text, strlen(text), tmp, err);
  if (r >= 0 && rename(tmp, path) < 0) r = an_error_set(err, errno, "rename %s", path);
  if (r < 0) unlink(tmp);
  return r;
}

int an_pool_meta_write(const char *dir, const char *name, const struct an_pool_meta *m,
                       an_error_t *err) {
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) return an_error_set(err, ENOMEM, "pool %s: JSON", name);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "name", name);
  an_jgen_kv_u64(&j, "size", m->size);
  an_jgen_kv_i64(&j, "keeper_pid", m->keeper_pid);
  an_jgen_kv_u64(&j, "keeper_start", m->keeper_start);
  an_jgen_kv_u64(&j, "created_ms", m->created_ms);
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  int r = an_jgen_finish(&j, &doc, NULL);
  if (r < 0) return an_error_set(err, -r, "pool %s: JSON", name);
  return an_pool_write_file(dir, AN_POOL_META, doc, err);
}

int an_pool_meta_read(const char *dir, struct an_pool_meta *m, an_error_t *err) {
  char path[PATH_MAX * 2];
  snprintf(path, sizeof path, "%s/%s", dir, AN_POOL_META);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  int r = an_json_read_file(path, &buf, &len, err);
  if (r < 0) return r;
  yajl_val root = NULL;
  if ((r = an_json_parse(buf, len, path, &root, err)) < 0) return r;
  uint64_t v[4] = {0};
  static const char *const keys[] = {"size", "keeper_pid", "keeper_start", "created_ms"};
  for (size_t i = 0; i < 4 && r >= 0; i++) {
    yajl_val x = an_json_member(root, keys[i]);
    if (x) r = an_json_get_u64(x, keys[i], UINT64_MAX, &v[i], err);
  }
  yajl_tree_free(root);
  if (r < 0) return an_error_prefix(err, "%s", path);
  m->size = (unsigned) v[0];
  m->keeper_pid = (pid_t) v[1];
  m->keeper_start = v[2];
  m->created_ms = v[3];
  return 0;
}

unsigned an_pool_count(const char *dir, const char *sub) {
  char path[PATH_MAX * 2];
  snprintf(path, sizeof path, "%s/%s", dir, sub);
  cleanup_closedir DIR *d = opendir(path);
  unsigned n = 0;
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (an_sb_valid_id(de->d_name)) n++;
  return n;
}

bool an_pool_keeper_alive(const struct an_pool_meta *m) {
  return m->keeper_pid > 0 && an_sb_pid_alive(m->keeper_pid, m->keeper_start);
}

/* status.json members into info (best effort: a keeper writes it later). */
static void read_status(const char *dir, struct an_pool_info *pi) {
  char path[PATH_MAX * 2];
  snprintf(path, sizeof path, "%s/%s", dir, AN_POOL_STATUS);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  an_error_t e = NULL;
  yajl_val root = NULL;
  if (an_json_read_file(path, &buf, &len, &e) < 0 || an_json_parse(buf, len, path, &root, &e) < 0) {
    an_error_free(&e);
    return;
  }
  yajl_val v;
  if ((v = an_json_member(root, "created")) && an_json_get_u64(v, "created", UINT64_MAX, &pi->created, &e) < 0) an_error_free(&e);
  if ((v = an_json_member(root, "failures")) && an_json_get_u64(v, "failures", UINT64_MAX, &pi->failures, &e) < 0) an_error_free(&e);
  const char *le = an_json_member_str(root, "last_error");
  if (le) pi->last_error = strdup(le);
  yajl_tree_free(root);
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(((const struct an_pool_info *) a)->name, ((const struct an_pool_info *) b)->name);
}

void an_pool_info_list_free(struct an_pool_info *list, size_t n) {
  for (size_t i = 0; list && i < n; i++) {
    free(list[i].name);
    free(list[i].last_error);
  }
  free(list);
}

int an_pool_list(const char *store_root, struct an_pool_info **list, size_t *n, an_error_t *err) {
  *list = NULL;
  *n = 0;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", an_sb_root_or_default(store_root), AN_POOL_DIR);
  cleanup_closedir DIR *d = opendir(path);
  if (!d) return errno == ENOENT ? 0 : an_error_set(err, errno, "pools: open %s", path);
  struct an_pool_info *v = NULL;
  size_t k = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!an_pool_valid_name(de->d_name)) continue;
    char dir[PATH_MAX + 300];
    snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
    struct an_pool_meta m = {0};
    an_error_t e = NULL;
    bool starting = an_pool_meta_read(dir, &m, &e) < 0;   /* no pool.json yet: size 0 */
    an_error_free(&e);
    struct an_pool_info *nv = realloc(v, (k + 1) * sizeof *nv);
    if (!nv) {
      an_pool_info_list_free(v, k);
      return an_error_set(err, ENOMEM, "pools");
    }
    v = nv;
    struct an_pool_info *pi = &v[k++];
    *pi = (struct an_pool_info){.name = strdup(de->d_name), .size = m.size,
                                .keeper_pid = m.keeper_pid, .created_ms = m.created_ms,
                                .keeper_alive = an_pool_keeper_alive(&m),
                                .ready = an_pool_count(dir, AN_POOL_READY),
                                .handed_out = an_pool_count(dir, AN_POOL_TAKEN)};
    /* a dead keeper's ready sandboxes are torn down by their monitors (the
     * keeper owned them): none of them is ready, the entries are stale */
    pi->state = pi->keeper_alive ? "running" : starting ? "starting" : "dead";
    if (!pi->keeper_alive && !starting) {
      pi->stale = pi->ready;
      pi->ready = 0;
    }
    read_status(dir, pi);
    if (!pi->name) {
      an_pool_info_list_free(v, k);
      return an_error_set(err, ENOMEM, "pools");
    }
  }
  if (k) qsort(v, k, sizeof *v, cmp_name);
  *list = v;
  *n = k;
  return 0;
}

int an_pool_options(const char *store_root, const char *name, struct an_sandbox_opts **out,
                    char **json, an_error_t *err) {
  char dir[PATH_MAX], path[PATH_MAX * 2];
  int r = an_pool_path(store_root, name, dir, sizeof dir, err);
  if (r < 0) return r;
  snprintf(path, sizeof path, "%s/%s", dir, AN_POOL_OPTIONS);
  if (access(path, F_OK) < 0) return an_error_set(err, ENOENT, "no pool %s (agentnest pool ls)", name);
  struct an_sandbox_opts *o = NULL;
  if ((r = an_sandbox_opts_new(&o, err)) < 0) return r;
  if ((r = an_sandbox_opts_load_profile(o, path, NULL, err)) < 0) {
    an_sandbox_opts_free(o);
    return an_error_prefix(err, "pool %s", name);
  }
  if (json) {
    size_t len = 0;
    if ((r = an_json_read_file(path, json, &len, err)) < 0) {
      an_sandbox_opts_free(o);
      return r;
    }
  }
  *out = o;
  return 0;
}

/* Signal process pid (checked against its start time); -ESRCH when gone. */
static int signal_checked(pid_t pid, uint64_t start, int sig) {
  int fd = -1;
  an_error_t e = NULL;
  int r = an_process_pidfd_checked(pid, start, &fd, &e);
  if (r == 0) {
    r = an_process_signal(fd, sig, &e);
    close(fd);
  }
  an_error_free(&e);
  return r;
}

/* Hand sandbox `id` (already renamed to taken/) to the caller.  1: it was
 * dead or is no pooled sandbox any more (skip it), 0: *out. */
static int take(const char *root, const char *pool, const char *id, bool owned,
                struct an_sandbox **out, an_error_t *err) {
  struct an_sandbox *sb = NULL;
  an_error_t e = NULL;
  if (an_sandbox_open(root, id, &sb, &e) < 0) {
    an_error_free(&e);
    return 1;
  }
  cleanup_close int lock = an_sb_lock(sb->dir, &e);
  struct an_sb_record rec;
  if (lock < 0 || an_sb_record_read(sb->dir, &rec, &e) < 0) {
    an_error_free(&e);
    an_sandbox_close(sb);
    return 1;
  }
  /* A ready sandbox has no deadline and is owned by its keeper, alive. */
  bool ready = rec.deadline_ms == 0 && rec.owner_pid && an_sb_pid_alive(rec.owner_pid, rec.owner_start) &&
               rec.monitor_pid && an_sb_pid_alive(rec.monitor_pid, rec.monitor_start);
  an_sb_record_clear(&rec);
  if (!ready) {
    an_sandbox_close(sb);
    return 1;
  }
  sb->rec.deadline_ms = an_sb_now_ms() + an_sandbox_opts_lifetime(sb->opts);
  sb->rec.owner_pid = 0;
  sb->rec.owner_start = 0;
  if (owned) {
    sb->rec.owner_pid = getpid();
  }
  int r = owned ? an_process_start_time(sb->rec.owner_pid, &sb->rec.owner_start, err) : 0;
  if (r >= 0) r = an_sb_record_write(sb->dir, &sb->rec, err);
  if (r < 0) {
    /* taken from ready/ but not handed out: nobody may get it now */
    close(lock);
    lock = -1;
    an_sb_teardown(root, id, "claim failed", false, 0, false, NULL, &e);
    an_error_free(&e);
    an_sandbox_close(sb);
    return an_error_prefix(err, "pool %s: claim sandbox %s", pool, id);
  }
  /* the monitor re-reads the record: timer and owner */
  if (signal_checked(sb->rec.monitor_pid, sb->rec.monitor_start, SIGUSR1) < 0) {
    an_sandbox_close(sb);
    return 1;   /* it is tearing the sandbox down */
  }
  an_sb_event(sb->dir, "claimed", ",\"pool\":\"%s\"", pool);
  *out = sb;
  return 0;
}

int an_pool_check(const char *store_root, const char *name, an_error_t *err) {
  char dir[PATH_MAX], path[PATH_MAX * 2];
  int r = an_pool_path(store_root, name, dir, sizeof dir, err);
  if (r < 0) return r;
  struct an_pool_meta m = {0};
  an_error_t e = NULL;
  if ((r = an_pool_meta_read(dir, &m, &e)) < 0) {
    snprintf(path, sizeof path, "%s/%s", dir, AN_POOL_READY);
    if (r == -ENOENT && access(path, F_OK) == 0) r = 0;   /* being started: the keeper writes it */
    else if (r == -ENOENT) r = an_error_set(err, ENOENT, "no pool %s (agentnest pool ls)", name);
    else {
      r = an_error_set(err, e->errnum, "pool %s: %s", name, e->msg);
    }
    an_error_free(&e);
    return r;
  }
  if (an_pool_keeper_alive(&m)) return 0;
  return an_error_set(err, ESRCH, "pool %s: its keeper (pid %d) is dead; `agentnest pool stop %s` or "
                      "`agentnest prune` removes it", name, (int) m.keeper_pid, name);
}

int an_pool_claim(const char *store_root, const char *name, bool owned, struct an_sandbox **out,
                  an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root);
  char dir[PATH_MAX], path[PATH_MAX * 2];
  int r = an_pool_path(root, name, dir, sizeof dir, err);
  if (r < 0) return r;
  /* a dead keeper's ready sandboxes die with it (their owner): take none,
   * and say why rather than "empty" */
  if ((r = an_pool_check(root, name, err)) < 0) return r;
  snprintf(path, sizeof path, "%s/%s", dir, AN_POOL_READY);
  cleanup_close int rfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (rfd < 0) {
    if (errno == ENOENT) return an_error_set(err, ENOENT, "no pool %s (agentnest pool ls)", name);
    return an_error_set(err, errno, "pool %s: open %s", name, path);
  }
  snprintf(path, sizeof path, "%s/%s", dir, AN_POOL_TAKEN);
  cleanup_close int tfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (tfd < 0) return an_error_set(err, errno, "pool %s: open %s", name, path);
  int dfd = fcntl(rfd, F_DUPFD_CLOEXEC, 3);
  cleanup_closedir DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d) {
    if (dfd >= 0) close(dfd);
    return an_error_set(err, errno ? errno : ENOMEM, "pool %s: read ready/", name);
  }
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name)) continue;
    /* the one atomic step: of concurrent takers, one rename succeeds */
    if (renameat(rfd, de->d_name, tfd, de->d_name) < 0) continue;
    r = take(root, name, de->d_name, owned, out, err);
    if (r == 0) an_audit_sandbox(*out, "pool_acquire", 0, NULL, AN_AUDIT_STR("pool", name), AN_AUDIT_END);
    if (r <= 0) return r;
  }
  return an_error_set(err, EAGAIN, "pool %s is empty", name);
}

int an_sandbox_destroy_background(struct an_sandbox *sb, an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "destroy: no sandbox");
  return an_sb_teardown_detached(sb->root, sb->rec.id, "destroy", 0, false, true, err);
}
