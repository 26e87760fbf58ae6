/* sandbox/state.c — the on-disk record of a sandbox (<root>/sandboxes/<id>/
 * sandbox.json), ids, name and tombstone lookup, the per-sandbox lock, and
 * the handle built from a record.  What does NOT live here: creating or
 * tearing down the sandbox (sandbox.c, teardown.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest/image.h"
#include "engine/process.h"
#include "engine/seccomp.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/json_gen.h"
#include "util/json_tree.h"
#include "util/safe_path.h"

const char *an_sb_root_or_default(const char *root) {
  return root && *root ? root : AN_IMAGE_DEFAULT_STORE;
}

uint64_t an_sb_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

int an_sb_new_id(char id[AN_SANDBOX_ID_LEN + 1], an_error_t *err) {
  unsigned char b[AN_SANDBOX_ID_LEN / 2];
  if (getrandom(b, sizeof b, 0) != (ssize_t) sizeof b)
    return an_error_set(err, errno ? errno : EIO, "getrandom for a sandbox id");
  an_hex_encode(b, sizeof b, id);
  id[AN_SANDBOX_ID_LEN] = '\0';
  return 0;
}

bool an_sb_valid_id(const char *s) {
  if (!s || strlen(s) != AN_SANDBOX_ID_LEN) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
  return true;
}

/* Alive = /proc/PID/stat exists, the state is not zombie/dead (a killed
 * monitor may wait unreaped under a subreaper), and field 22 (starttime,
 * proc(5)) equals `start` (PID reuse guard; 0 skips the check). */
bool an_sb_pid_alive(pid_t pid, uint64_t start) {
  if (pid <= 0) return false;
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ') return false;
  char state = p[2];
  if (state == 'Z' || state == 'X' || state == 'x') return false;
  if (!start) return true;
  /* fields after ")": 3 state ... 22 starttime */
  char *save = NULL, *tok = strtok_r(p + 2, " ", &save);
  for (int field = 3; tok && field < 22; field++) tok = strtok_r(NULL, " ", &save);
  return tok && strtoull(tok, NULL, 10) == start;
}

void an_sb_record_clear(struct an_sb_record *rec) {
  free(rec->name);
  free(rec->image);
  free(rec->idrange_root);
  for (size_t i = 0; i < rec->nsecrets; i++) {
    free((char *) rec->secrets[i].name);
    if (rec->secrets[i].value) {
      explicit_bzero((char *) rec->secrets[i].value, strlen(rec->secrets[i].value));
      free((char *) rec->secrets[i].value);
    }
  }
  free(rec->secrets);
  memset(rec, 0, sizeof *rec);
}

int an_sb_record_write(const char *dir, const struct an_sb_record *rec, an_error_t *err) {
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0)
    return an_error_set(err, ENOMEM, "%s of sandbox %s: JSON", AN_SB_STATE_FILE, rec->id);
  struct an_jgen *g = &j;
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "id", rec->id);
  if (rec->name) an_jgen_kv_str(g, "name", rec->name);
  if (rec->image) an_jgen_kv_str(g, "image", rec->image);
  an_jgen_kv_u64(g, "created_ms", rec->created_ms);
  an_jgen_kv_u64(g, "deadline_ms", rec->deadline_ms);
  an_jgen_kv_u64(g, "host_uid_base", rec->ids.host_uid_base);
  an_jgen_kv_u64(g, "idrange_size", rec->ids.size);
  if (rec->idrange_root) an_jgen_kv_str(g, "idrange_root", rec->idrange_root);
  an_jgen_kv_i64(g, "init_pid", rec->init_pid);
  an_jgen_kv_u64(g, "init_start", rec->init_start);
  an_jgen_kv_i64(g, "monitor_pid", rec->monitor_pid);
  an_jgen_kv_u64(g, "monitor_start", rec->monitor_start);
  an_jgen_kv_i64(g, "owner_pid", rec->owner_pid);
  an_jgen_kv_u64(g, "owner_start", rec->owner_start);
  an_jgen_key(g, "secrets");
  an_jgen_array_open(g);
  for (size_t i = 0; i < rec->nsecrets; i++) {
    an_jgen_map_open(g);
    /* names only: values live in the secrets file (secrets_file.c) */
    an_jgen_kv_str(g, "name", rec->secrets[i].name);
    an_jgen_map_close(g);
  }
  an_jgen_array_close(g);
  an_jgen_map_close(g);
  char *buf = NULL;
  size_t len = 0;
  int r = an_jgen_finish(&j, &buf, &len);
  if (r < 0) return an_error_set(err, -r, "%s of sandbox %s: JSON", AN_SB_STATE_FILE, rec->id);
  char tmp[PATH_MAX], path[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, AN_SB_STATE_FILE);
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_STATE_FILE);
  cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) r = an_error_set(err, errno, "open %s", tmp);
  else if ((r = an_write_all(fd, buf, len, tmp, err)) >= 0 && rename(tmp, path) < 0)
    r = an_error_set(err, errno, "rename %s", path);
  if (r < 0) unlink(tmp);
  free(buf);
  return r;
}

static int get_u64_opt(yajl_val root, const char *key, uint64_t *out, an_error_t *err) {
  yajl_val v = an_json_member(root, key);
  if (!v) { *out = 0; return 0; }
  return an_json_get_u64(v, key, UINT64_MAX, out, err);
}

int an_sb_record_read(const char *dir, struct an_sb_record *rec, an_error_t *err) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_STATE_FILE);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  int r = an_json_read_file(path, &buf, &len, err);
  if (r < 0) return r;
  yajl_val root = NULL;
  if ((r = an_json_parse(buf, len, path, &root, err)) < 0) return r;
  memset(rec, 0, sizeof *rec);
  cleanup_free char *id = NULL;
  uint64_t v[11];
  static const char *const keys[] = {"created_ms", "deadline_ms", "host_uid_base", "idrange_size",
                                     "init_pid", "init_start", "monitor_pid", "monitor_start",
                                     "owner_pid", "owner_start", NULL};
  if ((r = an_json_want_object(root, "", err)) < 0) goto out;
  if ((r = an_json_get_string(an_json_member(root, "id"), "id", &id, err)) < 0) goto out;
  if (!an_sb_valid_id(id)) { r = an_error_set(err, EINVAL, "%s: bad id", path); goto out; }
  memcpy(rec->id, id, AN_SANDBOX_ID_LEN + 1);
  if (an_json_member(root, "name") &&
      (r = an_json_get_string(an_json_member(root, "name"), "name", &rec->name, err)) < 0) goto out;
  if (an_json_member(root, "idrange_root") &&
      (r = an_json_get_string(an_json_member(root, "idrange_root"), "idrange_root", &rec->idrange_root,
                              err)) < 0) goto out;
  if (an_json_member(root, "image") &&
      (r = an_json_get_string(an_json_member(root, "image"), "image", &rec->image, err)) < 0) goto out;
  for (size_t i = 0; keys[i]; i++)
    if ((r = get_u64_opt(root, keys[i], &v[i], err)) < 0) goto out;
  rec->created_ms = v[0]; rec->deadline_ms = v[1];
  rec->ids.host_uid_base = (uint32_t) v[2]; rec->ids.size = (uint32_t) v[3];
  rec->init_pid = (pid_t) v[4]; rec->init_start = v[5];
  rec->monitor_pid = (pid_t) v[6]; rec->monitor_start = v[7];
  rec->owner_pid = (pid_t) v[8]; rec->owner_start = v[9];
  yajl_val s = an_json_member(root, "secrets");
  if (s && YAJL_IS_ARRAY(s) && s->u.array.len) {
    rec->secrets = calloc(s->u.array.len, sizeof *rec->secrets);
    if (!rec->secrets) { r = an_error_set(err, ENOMEM, "%s", path); goto out; }
    for (size_t i = 0; i < s->u.array.len; i++) {
      char *n = NULL;
      yajl_val e = s->u.array.values[i];
      if ((r = an_json_get_string(an_json_member(e, "name"), "secrets.name", &n, err)) < 0) goto out;
      rec->secrets[rec->nsecrets].name = n;      /* value: an_sb_secrets_read */
      rec->secrets[rec->nsecrets++].value = NULL;
    }
  }
  r = 0;
out:
  yajl_tree_free(root);
  if (r < 0) {
    an_error_prefix(err, "sandbox state %s", path);
    an_sb_record_clear(rec);
  }
  return r;
}

int an_sb_lock(const char *dir, an_error_t *err) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_LOCK_FILE);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return an_error_set(err, errno, "open %s", path);
  while (flock(fd, LOCK_EX) < 0) {
    if (errno == EINTR) continue;
    int e = errno;
    close(fd);
    return an_error_set(err, e, "lock %s", path);
  }
  return fd;
}

void an_sb_mark_destroying(const char *dir) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_DESTROYING_MARK);
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) close(fd);
}

bool an_sb_destroying(const char *dir) {
  char path[PATH_MAX + 16];
  struct stat st;
  if (stat(dir, &st) < 0) return errno == ENOENT;
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_DESTROYING_MARK);
  if (lstat(path, &st) < 0) return false;
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_LOCK_FILE);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno == ENOENT && stat(dir, &st) < 0;
  bool held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

int an_sb_resolve(const char *root, const char *id_or_name, char id[AN_SANDBOX_ID_LEN + 1],
                  an_error_t *err) {
  root = an_sb_root_or_default(root);
  if (!id_or_name || !*id_or_name || strchr(id_or_name, '/') || id_or_name[0] == '.')
    return an_error_set(err, EINVAL, "sandbox \"%s\": not an id or name",
                        id_or_name ? id_or_name : "");
  char path[PATH_MAX];
  struct stat st;
  if (an_sb_valid_id(id_or_name)) {
    snprintf(path, sizeof path, "%s/%s/%s", root, AN_SB_DIR, id_or_name);
    if (stat(path, &st) == 0) {
      memcpy(id, id_or_name, AN_SANDBOX_ID_LEN + 1);
      return 0;
    }
    snprintf(path, sizeof path, "%s/%s/%s", root, AN_SB_EXPIRED_DIR, id_or_name);
    if (stat(path, &st) == 0) {
      memcpy(id, id_or_name, AN_SANDBOX_ID_LEN + 1);
      return 1;
    }
  }
  snprintf(path, sizeof path, "%s/%s/%s", root, AN_SB_NAMES_DIR, id_or_name);
  char target[64];
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n > 0) {
    target[n] = '\0';
    if (an_sb_valid_id(target)) {
      memcpy(id, target, AN_SANDBOX_ID_LEN + 1);
      snprintf(path, sizeof path, "%s/%s/%s", root, AN_SB_DIR, target);
      if (stat(path, &st) == 0) return 0;
      snprintf(path, sizeof path, "%s/%s/%s", root, AN_SB_EXPIRED_DIR, target);
      if (stat(path, &st) == 0) return 1;
    }
  }
  /* Expired sandboxes keep their name in the tombstone. */
  if (!an_sb_valid_id(id_or_name)) {
    snprintf(path, sizeof path, "%s/%s", root, AN_SB_EXPIRED_DIR);
    cleanup_closedir DIR *d = opendir(path);
    struct dirent *de;
    while (d && (de = readdir(d))) {
      if (!an_sb_valid_id(de->d_name)) continue;
      char tp[PATH_MAX + 300], nm[256];
      snprintf(tp, sizeof tp, "%s/%s", path, de->d_name);
      cleanup_close int fd = open(tp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      ssize_t k = fd >= 0 ? read(fd, nm, sizeof nm - 1) : -1;
      if (k > 0) {
        nm[k] = '\0';
        if (!strcmp(nm, id_or_name)) {
          memcpy(id, de->d_name, AN_SANDBOX_ID_LEN + 1);
          return 1;
        }
      }
    }
  }
  return an_error_set(err, ENOENT, "sandbox %s: no such sandbox", id_or_name);
}

int an_sb_handle_new(const char *root, struct an_sb_record *rec, struct an_sandbox **out,
                     an_error_t *err) {
  root = an_sb_root_or_default(root);
  struct an_sandbox *sb = calloc(1, sizeof *sb);
  if (!sb) return an_error_set(err, ENOMEM, "sandbox handle");
  sb->ws_fd = -1;
  sb->init_pidfd = -1;
  sb->exec_slot_fd = -1;
  sb->rec = *rec;
  memset(rec, 0, sizeof *rec);
  if (!(sb->root = strdup(root)) ||
      asprintf(&sb->dir, "%s/%s/%s", root, AN_SB_DIR, sb->rec.id) < 0 ||
      asprintf(&sb->workspace, "%s/workspace", sb->dir) < 0 ||
      asprintf(&sb->containers, "%s/%s", root, AN_SB_CONTAINERS_DIR) < 0 ||
      asprintf(&sb->cgroup_path, "%s%s", AN_SB_CGROUP_PREFIX, sb->rec.id) < 0) {
    an_sandbox_close(sb);
    return an_error_set(err, ENOMEM, "sandbox handle");
  }
  *out = sb;
  return 0;
}

int an_sb_ensure_cgroup(struct an_sandbox *sb, an_error_t *err) {
  if (sb->cg) return 0;
  return an_cgroup_open(sb->cgroup_path, &sb->cg, err);
}

int an_sb_ensure_init_pidfd(struct an_sandbox *sb, an_error_t *err) {
  if (sb->init_pidfd >= 0) return 0;
  int r = an_process_pidfd_checked(sb->rec.init_pid, sb->rec.init_start, &sb->init_pidfd, err);
  if (r < 0) return an_error_prefix(err, "sandbox %s: init", sb->rec.id);
  return 0;
}

void an_sandbox_close(struct an_sandbox *sb) {
  if (!sb) return;
  free(sb->root);
  free(sb->dir);
  free(sb->workspace);
  free(sb->containers);
  free(sb->cgroup_path);
  an_sb_record_clear(&sb->rec);
  an_sandbox_opts_free(sb->opts);
  if (sb->ws_fd >= 0) close(sb->ws_fd);
  if (sb->init_pidfd >= 0) close(sb->init_pidfd);
  an_cgroup_free(sb->cg);
  an_cgroup_free(sb->exec_cg);
  if (sb->exec_slot_fd >= 0) close(sb->exec_slot_fd);
  an_spec_free(sb->spec);
  an_seccomp_program_free(sb->seccomp);
  free(sb);
}

const char *an_sandbox_id(const struct an_sandbox *sb) { return sb->rec.id; }
const char *an_sandbox_name(const struct an_sandbox *sb) { return sb->rec.name; }
const char *an_sandbox_workspace_path(const struct an_sandbox *sb) { return sb->workspace; }
const char *an_sandbox_cgroup_path(const struct an_sandbox *sb) { return sb->cgroup_path; }
pid_t an_sandbox_init_pid(const struct an_sandbox *sb) { return sb->rec.init_pid; }
pid_t an_sandbox_monitor_pid(const struct an_sandbox *sb) { return sb->rec.monitor_pid; }
uint64_t an_sandbox_deadline_ms(const struct an_sandbox *sb) { return sb->rec.deadline_ms; }
const struct an_sandbox_opts *an_sandbox_get_opts(const struct an_sandbox *sb) { return sb->opts; }
int an_sandbox_workspace_fd(const struct an_sandbox *sb) { return sb->ws_fd; }

void an_sandbox_file_opts(const struct an_sandbox *sb, struct an_file_opts *fo) {
  memset(fo, 0, sizeof *fo);
  fo->max_bytes = sb->opts ? an_sandbox_opts_max_read(sb->opts) : 0;
  fo->mkdir_parents = true;
  fo->set_owner = true;
  fo->uid = sb->rec.ids.host_uid_base + an_sandbox_opts_uid(sb->opts);
  fo->gid = sb->rec.ids.host_uid_base + an_sandbox_opts_gid(sb->opts);
}
