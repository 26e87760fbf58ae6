/* sandbox/prune.c — an_sandbox_prune: find what dead sandboxes left and
 * remove it.  A sandbox is pruned when its deadline passed, when its pid 1
 * or its keeper (monitor; for a one-shot, the creating process) is gone, or
 * always with `all`.  Then leftovers no sandbox owns: empty sandbox cgroups
 * agentnest/sb-<id> in any hierarchy (non-empty ones may belong to another
 * store root's live sandbox and are left alone), engine containers under
 * <root>/containers, id range locks (machine-wide) whose allocating process
 * and owning sandbox directory are gone, and expiry tombstones (plain prune
 * too: they are what an expired sandbox leaves), and the remains of
 * destroyed sandboxes whose detached reaper did not finish
 * (<root>/sandbox-reaping).  Teardown itself is teardown.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/container.h"
#include "sandbox/pool_internal.h"
#include "sandbox/audit_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"
#include "util/json_tree.h"
#include "util/safe_path.h"

/* Why the sandbox of rec is dead and may be torn down ("creator dead",
 * "monitor dead", "init dead"), or NULL: alive, or a create in progress. */
static const char *dead_reason(const struct an_sb_record *rec) {
  if (strcmp(an_sb_status(rec), "dead")) return NULL;   /* "creating" included */
  return rec->owner_pid && !an_sb_pid_alive(rec->owner_pid, rec->owner_start) ? "creator dead"
         : rec->monitor_pid                                                  ? "monitor dead"
                                                                             : "init dead";
}

int an_sandbox_destroy_dead_ctx(const struct an_ctx *ctx, const char *store_root, const char *id_or_name,
                                char id[AN_SANDBOX_ID_LEN + 1], an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root ? store_root : an_ctx_store_root(ctx));
  int r = an_sb_resolve(root, id_or_name, id, err);
  if (r < 0) return r;
  if (r == 1) return an_error_set(err, ETIME, "sandbox %s expired", id);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s/%s", root, AN_SB_DIR, id);
  struct an_sb_record rec;
  if ((r = an_sb_record_read(dir, &rec, err)) < 0) {
    if (r != -ENOENT) return r;
    an_error_free(err);
    return an_error_set(err, ENOENT, "sandbox %s: no such sandbox", id_or_name);
  }
  const char *why = dead_reason(&rec);
  bool creating = !strcmp(an_sb_status(&rec), "creating");
  an_sb_record_clear(&rec);
  if (!why)
    return creating ? an_error_set(err, EBUSY, "sandbox %s is being created", id)
                    : an_error_set(err, EBUSY, "sandbox %s is not dead", id);
  return an_sb_teardown(root, id, why, false, 0, false, NULL, err);
}

struct live_set {
  char **ids;
  size_t n;
};

static void live_add(struct live_set *l, const char *id) {
  char **v = realloc(l->ids, (l->n + 1) * sizeof *v);
  if (v) {
    l->ids = v;
    if ((v[l->n] = strdup(id))) l->n++;
  }
}

static bool live_has(const struct live_set *l, const char *id) {
  for (size_t i = 0; i < l->n; i++)
    if (!strcmp(l->ids[i], id)) return true;
  return false;
}

static void live_free(struct live_set *l) {
  for (size_t i = 0; i < l->n; i++) free(l->ids[i]);
  free(l->ids);
}

struct note_ctx {
  char ***errs;
  size_t *n;
};

static void note_error(char ***errs, size_t *n, an_error_t *e);
static void note_cb(void *ctx, an_error_t *e) {
  struct note_ctx *c = ctx;
  note_error(c->errs, c->n, e);
}

static void gen_teardown(struct an_jgen *g, const char *id, const char *reason,
                         const struct an_sb_teardown_report *t) {
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "id", id);
  an_jgen_kv_str(g, "reason", reason);
  an_jgen_kv_bool(g, "container", t->container);
  an_jgen_kv_bool(g, "cgroup", t->cgroup);
  an_jgen_kv_bool(g, "workspace", t->workspace);
  an_jgen_kv_bool(g, "state", t->state);
  an_jgen_kv_i64(g, "idrange", t->idrange);
  an_jgen_map_close(g);
}

struct unborn_ctx {
  struct an_jgen *g;
};

/* A create killed before its directory got its name: only its record went. */
static void unborn_removed(const char *id, void *cb_arg) {
  struct an_sb_teardown_report t = {.state = true};
  gen_teardown(((struct unborn_ctx *) cb_arg)->g, id, "create killed", &t);
}

static void note_error(char ***errs, size_t *n, an_error_t *e) {
  if (*e) {
    char **v = realloc(*errs, (*n + 1) * sizeof *v);
    if (v) {
      *errs = v;
      if ((v[*n] = strdup((*e)->msg))) (*n)++;
    }
  }
  an_error_free(e);
}

/* Sandbox cgroups whose sandbox is gone: sb-<id> under agentnest/ in every
 * mounted hierarchy we know of (a cgroup left in only one of them, e.g. a
 * create that failed between two mkdirs, is found too). */
static void prune_cgroups(struct an_jgen *g, const struct live_set *live, char ***errs, size_t *nerr) {
  static const char *const bases[] = {"/sys/fs/cgroup/agentnest", "/sys/fs/cgroup/unified/agentnest",
                                      "/sys/fs/cgroup/memory/agentnest", "/sys/fs/cgroup/pids/agentnest",
                                      "/sys/fs/cgroup/cpu/agentnest", "/sys/fs/cgroup/freezer/agentnest",
                                      /* v1 hierarchies a sandbox has a cgroup in only when one
                                       * of its limits needs it (an_cgroup_create_used) */
                                      "/sys/fs/cgroup/devices/agentnest", "/sys/fs/cgroup/cpuset/agentnest",
                                      "/sys/fs/cgroup/blkio/agentnest", "/sys/fs/cgroup/hugetlb/agentnest",
                                      "/sys/fs/cgroup/cpuacct/agentnest", NULL};
  /* ids looked at already (in an earlier hierarchy).  Not a fixed array:
   * with 64 slots, the first 64 old cgroups of other stores' live
   * sandboxes (cgroups are host-wide; they are kept) used them up and no
   * orphan after them was ever removed. */
  struct live_set done = {0};
  for (size_t b = 0; bases[b]; b++) {
    cleanup_closedir DIR *d = opendir(bases[b]);
    struct dirent *de;
    while (d && (de = readdir(d))) {
      const char *pfx = "sb-";
      if (strncmp(de->d_name, pfx, 3) || !an_sb_valid_id(de->d_name + 3)) continue;
      const char *id = de->d_name + 3;
      if (live_has(live, id)) continue;
      /* a cgroup made moments ago may be a create in progress elsewhere:
       * its mtime, which create sets (engine/cgroup.c mkdir_path), not its
       * ctime, which is the time of the cached inode, not of the cgroup */
      char full[PATH_MAX + 300];
      struct stat cst;
      snprintf(full, sizeof full, "%s/%s", bases[b], de->d_name);
      if (stat(full, &cst) == 0 && an_sb_now_ms() - (uint64_t) cst.st_mtime * 1000 < AN_SB_CREATE_GRACE_MS)
        continue;
      if (live_has(&done, id)) continue;
      live_add(&done, id);
      char cgp[64];
      snprintf(cgp, sizeof cgp, "%s%s", AN_SB_CGROUP_PREFIX, id);
      struct an_cgroup *cg = NULL;
      an_error_t e = NULL;
      /* Cgroups are host-wide, stores are not: a sandbox of another store
       * root has the same kind of name.  Only an empty one is removed. */
      pid_t *pids = NULL;
      size_t npids = 1;
      if (an_cgroup_open(cgp, &cg, &e) == 0) {
        if (an_cgroup_pids(cg, &pids, &npids, &e) == 0 && npids == 0 && an_cgroup_destroy(cg, &e) == 0)
          an_jgen_str(g, cgp);
        free(pids);
        an_cgroup_free(cg);
      } else if (e && e->errnum == ENOENT) {
        /* in some hierarchies only: rmdir fails where processes remain */
        an_error_free(&e);
        if (an_sb_rmdir_cgroup_dirs(id, NULL)) an_jgen_str(g, cgp);
      }
      note_error(errs, nerr, &e);
    }
  }
  live_free(&done);
}

/* State directories a teardown renamed away and was killed before it
 * removed (AN_SB_GONE_PREFIX: empty but for a lock file), in both areas. */
static void prune_gone(const char *root, char ***errs, size_t *nerr) {
  static const char *const areas[] = {AN_SB_DIR, AN_SB_REAPING_DIR};
  for (size_t a = 0; a < 2; a++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", root, areas[a]);
    cleanup_closedir DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
      if (strncmp(de->d_name, AN_SB_GONE_PREFIX, strlen(AN_SB_GONE_PREFIX))) continue;
      an_error_t e = NULL;
      an_remove_tree_beneath(dirfd(d), de->d_name, &e);
      note_error(errs, nerr, &e);
    }
  }
}

/* Destroyed sandboxes whose reaper did not finish (killed, or still at
 * work: the sandbox's lock serialises both, so the work is done once):
 * every entry of <root>/sandbox-reaping is torn down (teardown_detach.c). */
static void prune_reaping(struct an_jgen *g, const char *root, char ***errs, size_t *nerr) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, AN_SB_REAPING_DIR);
  cleanup_closedir DIR *d = opendir(path);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name)) continue;
    char dir[PATH_MAX + 300];
    snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
    struct an_sb_record rec;
    an_error_t e = NULL;
    if (an_sb_record_read(dir, &rec, &e) == 0) {
      an_sb_stop_monitor(rec.monitor_pid, rec.monitor_start);
      an_sb_record_clear(&rec);
    }
    an_error_free(&e);
    struct an_sb_teardown_report t;
    if (an_sb_teardown_in(root, AN_SB_REAPING_DIR, de->d_name, "reaper unfinished", "reap", false, 0, true,
                          &t, &e) < 0)
      note_error(errs, nerr, &e);
    if (t.state) gen_teardown(g, de->d_name, "reaper unfinished", &t);
  }
}

static void prune_tombstones(struct an_jgen *g, const char *root, char ***errs, size_t *nerr) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, AN_SB_EXPIRED_DIR);
  cleanup_close int tfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (tfd < 0) return;
  int dfd = fcntl(tfd, F_DUPFD_CLOEXEC, 3);
  cleanup_closedir DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d && dfd >= 0) close(dfd);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name)) continue;
    if (unlinkat(tfd, de->d_name, 0) == 0) an_jgen_str(g, de->d_name);
    else {
      an_error_t e = NULL;
      an_error_set(&e, errno, "remove tombstone %s/%s", path, de->d_name);
      note_error(errs, nerr, &e);
    }
  }
}

int an_sandbox_prune(const char *store_root, bool all, char **report, an_error_t *err) {
  return an_sandbox_prune_ctx(NULL, store_root, all, report, err);
}

/* The length of the report's array member `key` (0: none). */
static size_t report_count(yajl_val v, const char *key) {
  yajl_val a = an_json_member_type(v, key, yajl_t_array);
  return a ? YAJL_GET_ARRAY(a)->len : 0;
}

/* The array member `key` of the report as strings: each element's "id"
 * (objects) or the element itself (strings); NULL-terminated, heap (the
 * strings borrowed from v), NULL when there is no memory. */
static const char **report_list(yajl_val v, const char *key) {
  yajl_val a = an_json_member_type(v, key, yajl_t_array);
  size_t n = report_count(v, key);
  const char **out = calloc(n + 1, sizeof *out);
  if (!out) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    yajl_val e = YAJL_GET_ARRAY(a)->values[i];
    yajl_val s = YAJL_IS_OBJECT(e) ? an_json_member_type(e, "id", yajl_t_string) : e;
    if (YAJL_IS_STRING(s)) out[k++] = YAJL_GET_STRING(s);
  }
  return out;
}

/* The "prune" audit record: the ids of the sandboxes removed and the
 * errors as lists, how many of each other kind it removed as numbers (the
 * report, one JSON string in the record, was cut unreadable past the
 * record's string limit).  Each sandbox removed also has its own "destroy"
 * record (teardown.c).  Best effort, as every audit record. */
static void audit_prune(const char *root, bool all, const char *doc) {
  yajl_val v = NULL;
  an_error_t e = NULL;
  if (an_json_parse(doc, strlen(doc), "prune report", &v, &e) < 0) {
    an_error_free(&e);
    struct an_audit_field af[] = {AN_AUDIT_BOOL("all", all)};
    an_sb_audit(NULL, root, NULL, "prune", 0, NULL, af, 1);
    return;
  }
  cleanup_free const char **removed = report_list(v, "removed");
  cleanup_free const char **errors = report_list(v, "errors");
  struct an_audit_field af[] = {
    AN_AUDIT_BOOL("all", all), AN_AUDIT_STRV("removed", (char *const *) removed),
    AN_AUDIT_INT("pools", report_count(v, "pools")), AN_AUDIT_INT("containers", report_count(v, "containers")),
    AN_AUDIT_INT("orphan_cgroups", report_count(v, "orphan_cgroups")),
    AN_AUDIT_INT("idranges", report_count(v, "idranges")), AN_AUDIT_INT("tombstones", report_count(v, "tombstones")),
    AN_AUDIT_STRV("errors", (char *const *) errors),
  };
  an_sb_audit(NULL, root, NULL, "prune", 0, NULL, af, sizeof af / sizeof *af);
  yajl_tree_free(v);
}

int an_sandbox_prune_ctx(const struct an_ctx *ctx, const char *store_root, bool all, char **report,
                         an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root ? store_root : an_ctx_store_root(ctx));
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, AN_SB_DIR);
  DIR *d = opendir(path);
  if (!d && errno != ENOENT) return an_error_set(err, errno, "prune: open %s", path);
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) {
    if (d) closedir(d);
    return an_error_set(err, ENOMEM, "prune report: JSON");
  }
  struct an_jgen *g = &j;
  struct live_set live = {0};
  char **errs = NULL;
  size_t nerr = 0;
  an_jgen_map_open(g);
  /* pools first: a dead keeper's ready sandboxes go with its pool */
  an_jgen_key(g, "pools");
  an_jgen_array_open(g);
  struct note_ctx nc = {&errs, &nerr};
  an_pool_prune(root, all, g, note_cb, &nc);
  an_jgen_array_close(g);
  an_jgen_key(g, "removed");
  an_jgen_array_open(g);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name)) continue;
    char dir[PATH_MAX + 300];
    snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
    struct an_sb_record rec;
    an_error_t e = NULL;
    const char *reason = NULL;
    bool tomb = false;
    if (an_sb_record_read(dir, &rec, &e) < 0) {
      an_error_free(&e);
      struct stat st;
      uint64_t age = stat(dir, &st) == 0 ? an_sb_now_ms() - (uint64_t) st.st_mtime * 1000 : UINT64_MAX;
      if (all || age > AN_SB_CREATE_GRACE_MS) reason = "incomplete";
    } else {
      if (all) reason = "all";
      else if (!strcmp(an_sb_status(&rec), "expired")) { reason = "expired"; tomb = true; }
      else reason = dead_reason(&rec);
      an_sb_record_clear(&rec);
    }
    if (!reason) {
      live_add(&live, de->d_name);
      continue;
    }
    struct an_sb_teardown_report t;
    if (an_sb_teardown(root, de->d_name, reason, tomb, 0, false, &t, &e) < 0) note_error(&errs, &nerr, &e);
    gen_teardown(g, de->d_name, reason, &t);
  }
  if (d) closedir(d);
  struct unborn_ctx uc = {g};
  an_sb_remove_unborn(root, 0, all, unborn_removed, &uc);
  prune_reaping(g, root, &errs, &nerr);
  prune_gone(root, &errs, &nerr);
  an_jgen_array_close(g);

  /* Engine containers without a sandbox. */
  an_jgen_key(g, "containers");
  an_jgen_array_open(g);
  char cpath[PATH_MAX];
  snprintf(cpath, sizeof cpath, "%s/%s", root, AN_SB_CONTAINERS_DIR);
  char **cids = NULL;
  an_error_t e = NULL;
  if (an_container_list(cpath, &cids, &e) == 0) {
    for (char **c = cids; c && *c; c++) {
      if (an_sb_valid_id(*c) && !live_has(&live, *c)) {
        /* the sandbox's teardown handles a half-made container (no
         * state.json) together with its cgroup */
        if (an_container_delete(cpath, *c, true, &e) == 0) an_jgen_str(g, *c);
        else if (e && e->errnum == ENOENT) {
          an_error_free(&e);
          char cgp[64];
          snprintf(cgp, sizeof cgp, "%s%s", AN_SB_CGROUP_PREFIX, *c);
          struct an_cgroup *cg = NULL;
          if (an_cgroup_open(cgp, &cg, &e) == 0) {
            an_cgroup_destroy(cg, &e);
            an_cgroup_free(cg);
          }
          an_error_free(&e);
          cleanup_close int cfd = open(cpath, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
          if (cfd >= 0 && an_remove_tree_beneath(cfd, *c, &e) == 0) an_jgen_str(g, *c);
        }
        note_error(&errs, &nerr, &e);
      }
      free(*c);
    }
    free(cids);
  }
  an_error_free(&e);
  an_jgen_array_close(g);

  an_jgen_key(g, "orphan_cgroups");
  an_jgen_array_open(g);
  prune_cgroups(g, &live, &errs, &nerr);
  an_jgen_array_close(g);

  /* Id range locks (machine-wide) whose allocator and owner are gone: a
   * live sandbox of any store keeps its state directory, the owner. */
  an_jgen_key(g, "idranges");
  an_jgen_array_open(g);
  struct an_idrange_reservation *res = NULL;
  size_t nres = 0;
  if (an_idrange_list(an_ctx_idrange_root(ctx), &res, &nres, &e) == 0) {
    for (size_t i = 0; i < nres; i++) {
      if (!an_idrange_stale(&res[i])) continue;
      if (an_idrange_free(an_ctx_idrange_root(ctx), &res[i].ids, &e) == 0) an_jgen_i64(g, res[i].ids.host_uid_base);
      note_error(&errs, &nerr, &e);
    }
    an_idrange_list_free(res, nres);
  }
  note_error(&errs, &nerr, &e);
  an_jgen_array_close(g);

  /* Expiry tombstones: each says "expired" to later calls until a prune
   * (plain or --all) removes it, so they do not pile up. */
  an_jgen_key(g, "tombstones");
  an_jgen_array_open(g);
  prune_tombstones(g, root, &errs, &nerr);
  an_jgen_array_close(g);
  /* --all: also the empty workspace images kept for the next creates */
  if (all) {
    cleanup_close int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rfd >= 0 && an_remove_tree_beneath(rfd, "workspace-templates", &e) < 0) note_error(&errs, &nerr, &e);
    an_error_free(&e);
  }
  an_jgen_key(g, "errors");
  an_jgen_array_open(g);
  for (size_t i = 0; i < nerr; i++) {
    an_jgen_str(g, errs[i]);
    free(errs[i]);
  }
  free(errs);
  an_jgen_array_close(g);
  an_jgen_map_close(g);
  live_free(&live);
  cleanup_free char *doc = NULL;
  int r = an_jgen_finish(&j, &doc, NULL);
  if (r < 0) return an_error_set(err, -r, "prune report: JSON");
  audit_prune(root, all, doc);
  if (report) *report = an_steal(&doc);
  return 0;
}
