/* sandbox/list.c — list and inspect sandboxes from their records: status
 * is derived, never stored ("running": pid 1 and its keeper — monitor, or
 * the creating process of a one-shot — alive and the deadline ahead;
 * "expired": deadline passed, its keeper alive; "creating": no pid 1 in the
 * record yet and its creating process alive; "dead": otherwise).  What does NOT live here:
 * removing anything (prune.c, teardown.c). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/utc.h"
#include "sandbox/egress_run.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "sandbox/opts_internal.h"
#include "util/json_gen.h"

const char *an_sb_status(const struct an_sb_record *rec) {
  /* the record is in place but names no pid 1 yet: a create at work while
   * its creating process lives (no owner recorded: for the grace) */
  if (!rec->init_pid && (rec->owner_pid ? an_sb_pid_alive(rec->owner_pid, rec->owner_start)
                                        : an_sb_now_ms() - rec->created_ms < AN_SB_CREATE_GRACE_MS))
    return "creating";
  /* an owned sandbox (create_owned) needs both its monitor and its owner */
  bool keeper = (!rec->monitor_pid || an_sb_pid_alive(rec->monitor_pid, rec->monitor_start)) &&
                (!rec->owner_pid || an_sb_pid_alive(rec->owner_pid, rec->owner_start)) &&
                (rec->monitor_pid || rec->owner_pid);
  /* past the deadline, the keeper tears it down; with no keeper left
   * nothing will: dead (destroy and prune remove it) */
  if (rec->deadline_ms && an_sb_now_ms() >= rec->deadline_ms) return keeper ? "expired" : "dead";
  if (an_sb_pid_alive(rec->init_pid, rec->init_start) && keeper) return "running";
  return "dead";
}

bool an_sb_ended(const char *dir) {
  if (an_sb_destroying(dir)) return true;
  struct an_sb_record rec;
  an_error_t e = NULL;
  int r = an_sb_record_read(dir, &rec, &e);
  an_error_free(&e);
  if (r < 0) return r == -ENOENT;
  bool ended = strcmp(an_sb_status(&rec), "running") != 0;
  an_sb_record_clear(&rec);
  return ended;
}

static int cmp_created(const void *a, const void *b) {
  const struct an_sandbox_info *x = a, *y = b;
  return x->created_ms < y->created_ms ? -1 : x->created_ms > y->created_ms;
}

void an_sandbox_info_list_free(struct an_sandbox_info *list, size_t n) {
  for (size_t i = 0; list && i < n; i++) {
    free(list[i].id);
    free(list[i].name);
    free(list[i].image);
    free(list[i].status);
  }
  free(list);
}

int an_sandbox_list(const char *store_root, struct an_sandbox_info **list, size_t *n,
                    an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, AN_SB_DIR);
  *list = NULL;
  *n = 0;
  cleanup_closedir DIR *d = opendir(path);
  if (!d) return errno == ENOENT ? 0 : an_error_set(err, errno, "open %s", path);
  struct an_sandbox_info *v = NULL;
  size_t k = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name)) continue;
    char dir[PATH_MAX + 300];
    snprintf(dir, sizeof dir, "%s/%s", path, de->d_name);
    struct an_sb_record rec;
    an_error_t e = NULL;
    if (an_sb_record_read(dir, &rec, &e) < 0) {   /* being created or torn down */
      an_error_free(&e);
      continue;
    }
    struct an_sandbox_info *nv = realloc(v, (k + 1) * sizeof *v);
    if (!nv) {
      an_sb_record_clear(&rec);
      an_sandbox_info_list_free(v, k);
      return an_error_set(err, ENOMEM, "list sandboxes under %s", root);
    }
    v = nv;
    struct an_sandbox_info *s = &v[k++];
    memset(s, 0, sizeof *s);
    s->id = strdup(rec.id);
    s->name = rec.name ? strdup(rec.name) : NULL;
    s->image = strdup(rec.image ? rec.image : "");
    s->status = strdup(an_sb_status(&rec));
    s->created_ms = rec.created_ms;
    s->deadline_ms = rec.deadline_ms;
    s->init_pid = rec.init_pid;
    s->monitor_pid = rec.monitor_pid;
    s->owner_pid = rec.owner_pid;
    an_sb_record_clear(&rec);
    if (!s->id || !s->image || !s->status || (rec.name && !s->name)) {
      an_sandbox_info_list_free(v, k);
      return an_error_set(err, ENOMEM, "list sandboxes under %s", root);
    }
  }
  if (k) qsort(v, k, sizeof *v, cmp_created);
  *list = v;
  *n = k;
  return 0;
}

static void gen_time(struct an_jgen *g, const char *key, uint64_t ms) {
  char t[24], buf[40];
  an_utc_format((int64_t) (ms / 1000), t, sizeof t);
  snprintf(buf, sizeof buf, "%.19s.%03uZ", t, (unsigned) (ms % 1000));
  an_jgen_kv_str(g, key, buf);
}

static void gen_info(struct an_jgen *g, const struct an_sandbox_info *s) {
  an_jgen_kv_str(g, "id", s->id);
  an_jgen_kv_str(g, "name", s->name);
  an_jgen_kv_str(g, "image", s->image);
  an_jgen_kv_str(g, "status", s->status);
  gen_time(g, "created", s->created_ms);
  if (s->deadline_ms) gen_time(g, "deadline", s->deadline_ms);
  else an_jgen_kv_str(g, "deadline", NULL);   /* a warm pool's ready sandbox (pool.h) */
  an_jgen_kv_i64(g, "init_pid", s->init_pid);
  an_jgen_kv_i64(g, "monitor_pid", s->monitor_pid);
}

int an_sandbox_list_json(const char *store_root, char **json, an_error_t *err) {
  struct an_sandbox_info *l = NULL;
  size_t n = 0;
  int r = an_sandbox_list(store_root, &l, &n, err);
  if (r < 0) return r;
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) {
    an_sandbox_info_list_free(l, n);
    return an_error_set(err, ENOMEM, "sandbox list: JSON");
  }
  struct an_jgen *g = &j;
  an_jgen_array_open(g);
  for (size_t i = 0; i < n; i++) {
    an_jgen_map_open(g);
    gen_info(g, &l[i]);
    an_jgen_map_close(g);
  }
  an_jgen_array_close(g);
  an_sandbox_info_list_free(l, n);
  r = an_jgen_finish(&j, json, NULL);
  return r < 0 ? an_error_set(err, -r, "sandbox list: JSON") : 0;
}

int an_sandbox_inspect(struct an_sandbox *sb, char **json, an_error_t *err) {
  struct an_sandbox_info s = {.id = sb->rec.id, .name = sb->rec.name,
                              .image = sb->rec.image ? sb->rec.image : (char *) "",
                              .status = (char *) an_sb_status(&sb->rec),
                              .created_ms = sb->rec.created_ms, .deadline_ms = sb->rec.deadline_ms,
                              .init_pid = sb->rec.init_pid, .monitor_pid = sb->rec.monitor_pid};
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return an_error_set(err, ENOMEM, "inspect sandbox %s: JSON", s.id);
  an_jgen_validate_utf8(&j);
  struct an_jgen *g = &j;
  an_jgen_map_open(g);
  gen_info(g, &s);
  an_jgen_kv_str(g, "cgroup", sb->cgroup_path);
  an_jgen_kv_str(g, "workspace", sb->workspace);
  an_jgen_kv_i64(g, "host_uid_base", sb->rec.ids.host_uid_base);
  an_jgen_key(g, "pids_current");
  pid_t *pids = NULL;
  size_t n = 0;
  an_error_t e = NULL;
  if (an_sb_ensure_cgroup(sb, &e) == 0 && an_cgroup_pids(sb->cg, &pids, &n, &e) == 0)
    an_jgen_i64(g, (int64_t) n);
  else
    an_jgen_null(g);
  an_error_free(&e);
  free(pids);
  an_jgen_key(g, "options");
  if (sb->opts) an_sandbox_opts_gen(g, sb->opts);
  else an_jgen_null(g);
  an_jgen_key(g, "egress_counters");
  an_sb_egress_counters_gen(sb, g);
  an_jgen_map_close(g);
  int r = an_jgen_finish(&j, json, NULL);
  if (r == -EINVAL)
    return an_error_set(err, EINVAL, "inspect sandbox %s: JSON: a string is not valid UTF-8", s.id);
  if (r < 0) return an_error_set(err, -r, "inspect sandbox %s: JSON", s.id);
  return 0;
}
