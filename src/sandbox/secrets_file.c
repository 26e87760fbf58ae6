/* sandbox/secrets_file.c — where the values of a sandbox's secrets live
 * between CLI calls (issue 10 item 8).  The state files (sandbox.json,
 * containers/ID/config.json) hold secret NAMES only; the values are in
 * AN_SB_SECRETS_DIR/<id>.json, mode 0600 in 0700 directories owned by root,
 * on /run: a tmpfs, so the values never reach the store's disk (nor its
 * backups or images of it) and vanish at reboot, when every sandbox is dead
 * anyway.  A later `exec` (another process, also after a monitor restart)
 * reads them back to give the command its environment and to redact its
 * output; teardown removes the file with the sandbox.  The monitor does not
 * need them (it runs no command). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/json_gen.h"
#include "util/json_tree.h"

#define SECRETS_MAX_BYTES (4u << 20)

static void path_of(const char *id, char out[PATH_MAX]) {
  snprintf(out, PATH_MAX, "%s/%s.json", AN_SB_SECRETS_DIR, id);
}

/* mkdir -p of AN_SB_SECRETS_DIR, 0700; an existing one must be a directory
 * owned by us and not writable by others (no symlink followed). */
static int make_dir(an_error_t *err) {
  char buf[PATH_MAX];
  snprintf(buf, sizeof buf, "%s", AN_SB_SECRETS_DIR);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p) continue;
    char c = *p;
    *p = '\0';
    if (mkdir(buf, 0700) < 0 && errno != EEXIST) return an_error_set(err, errno, "secrets: mkdir %s", buf);
    *p = c;
    if (!c) break;
  }
  struct stat st;
  if (lstat(AN_SB_SECRETS_DIR, &st) < 0) return an_error_set(err, errno, "secrets: stat %s", AN_SB_SECRETS_DIR);
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
    return an_error_set(err, EPERM, "secrets: %s must be a directory of uid %d with mode 0700",
                        AN_SB_SECRETS_DIR, (int) geteuid());
  return 0;
}

int an_sb_secrets_write(const char *id, const struct an_secret *s, size_t n, an_error_t *err) {
  if (n == 0) return 0;
  int r = make_dir(err);
  if (r < 0) return r;
  struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) return an_error_set(err, ENOMEM, "secrets of sandbox %s", id);
  an_jgen_array_open(&j);
  for (size_t i = 0; i < n; i++) {
    an_jgen_map_open(&j);
    an_jgen_kv_str(&j, "name", s[i].name);
    an_jgen_kv_str(&j, "value", s[i].value);
    an_jgen_map_close(&j);
  }
  an_jgen_array_close(&j);
  char *buf = NULL;
  size_t len = 0;
  if ((r = an_jgen_finish(&j, &buf, &len)) < 0) return an_error_set(err, -r, "secrets of sandbox %s", id);
  char path[PATH_MAX];
  path_of(id, path);
  /* O_EXCL: a fresh file of ours, never one planted there */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) r = an_error_set(err, errno, "secrets: create %s", path);
  else {
    r = an_write_all(fd, buf, len, path, err);
    if (close(fd) < 0 && r == 0) r = an_error_set(err, errno, "secrets: write %s", path);
    if (r < 0) unlink(path);
  }
  explicit_bzero(buf, len);
  free(buf);
  return r;
}

int an_sb_secrets_read(struct an_sb_record *rec, an_error_t *err) {
  if (rec->nsecrets == 0) return 0;
  char path[PATH_MAX];
  path_of(rec->id, path);
  char *buf = NULL;
  size_t len = 0;
  int r = an_read_file_at(AT_FDCWD, path, RESOLVE_NO_SYMLINKS, SECRETS_MAX_BYTES, &buf, &len, err);
  if (r == -ENOENT)
    return an_error_set(err, ENOENT, "sandbox %s: the values of its secrets are gone (%s; removed, or the host "
                        "rebooted)", rec->id, path);
  if (r < 0) return r;
  yajl_val root = NULL;
  r = an_json_parse(buf, len, path, &root, err);
  explicit_bzero(buf, len);
  free(buf);
  if (r < 0) return r;
  if (!YAJL_IS_ARRAY(root)) r = an_error_set(err, EINVAL, "%s: not an array", path);
  for (size_t i = 0; r == 0 && i < root->u.array.len; i++) {
    yajl_val e = root->u.array.values[i];
    char *n = NULL, *v = NULL;
    if ((r = an_json_get_string(an_json_member(e, "name"), "name", &n, err)) < 0) break;
    if ((r = an_json_get_string(an_json_member(e, "value"), "value", &v, err)) < 0) {
      free(n);
      break;
    }
    for (size_t k = 0; k < rec->nsecrets; k++)
      if (!rec->secrets[k].value && !strcmp(rec->secrets[k].name, n)) {
        rec->secrets[k].value = v;
        v = NULL;
        break;
      }
    free(n);
    if (v) explicit_bzero(v, strlen(v));
    free(v);
  }
  yajl_tree_free(root);
  for (size_t k = 0; r == 0 && k < rec->nsecrets; k++)
    if (!rec->secrets[k].value)
      r = an_error_set(err, ENOENT, "sandbox %s: no value for secret %s in %s", rec->id, rec->secrets[k].name, path);
  return r;
}

int an_sb_secret_values_ok(const struct an_sandbox *sb, an_error_t *err) {
  for (size_t k = 0; k < sb->rec.nsecrets; k++)
    if (!sb->rec.secrets[k].value) {
      char path[PATH_MAX];
      path_of(sb->rec.id, path);
      return an_error_set(err, ENOENT, "sandbox %s: the value of secret %s is gone (%s removed, or the host "
                          "rebooted); destroy and recreate it", sb->rec.id, sb->rec.secrets[k].name, path);
    }
  return 0;
}

void an_sb_secrets_remove(const char *id) {
  char path[PATH_MAX];
  path_of(id, path);
  unlink(path);
}
