/* api/ops_files.c — the workspace operations of the table: write_file,
 * read_file, list_files, artifacts, snapshot, restore.  Paths are relative
 * to /workspace and go through the library's path-safe calls (files.h:
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, regular files only, size caps).
 * Snapshots are kept by the server (never a client-chosen host path):
 * <snapshots_dir>[/<snapshot_owner>]/<sha256>.tar, named by the tar's digest
 * (one directory per owner: a digest is not a capability across tokens). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>
#include "api_internal.h"
#include "agentnest/image.h"

/* A leading "/workspace/" is accepted (what a tool caller sees inside). */
static const char *ws_rel(const char *p) {
  if (!strncmp(p, "/workspace/", 11)) return p + 11;
  if (!strcmp(p, "/workspace")) return ".";
  return p;
}

int an_api_op_write_file(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  const char *path = ws_rel(an_api_in_str(in, "path"));
  const char *content = an_api_in_str(in, "content");
  const char *enc = an_api_in_str(in, "encoding");
  bool b64 = enc && !strcmp(enc, "base64");
  size_t clen = strlen(content), len = clen;
  unsigned char *data = (unsigned char *) content, *dec = NULL;
  if (b64) {
    if (clen % 4) return an_error_set(err, EINVAL, "write_file \"content\": not base64 (length %zu)", clen);
    if (!(dec = malloc(clen / 4 * 3 + 1))) return an_error_set(err, ENOMEM, "write_file");
    int n = EVP_DecodeBlock(dec, (const unsigned char *) content, (int) clen);
    if (n < 0) { free(dec); return an_error_set(err, EINVAL, "write_file \"content\": not base64"); }
    len = (size_t) n;
    if (clen && content[clen - 1] == '=') len--;
    if (clen > 1 && content[clen - 2] == '=') len--;
    data = dec;
  }
  if (c->ctx->max_read_bytes && len > c->ctx->max_read_bytes) {
    free(dec);
    return an_error_set(err, EFBIG, "write_file %s: %zu bytes, over the server's cap of %llu",
                        path, len, (unsigned long long) c->ctx->max_read_bytes);
  }
  struct an_sandbox *sb = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r >= 0) {
    r = an_sandbox_put_data(sb, path, data, len, (mode_t) an_api_in_int(in, "mode", 0644), err);
    if (r >= 0) {
      yajl_gen_map_open(out);
      an_api_gen_kv_str(out, "path", path);
      an_api_gen_kv_int(out, "size", (int64_t) len);
      yajl_gen_map_close(out);
    }
    an_sandbox_close(sb);
  }
  free(dec);
  return r;
}

int an_api_op_read_file(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  const char *path = ws_rel(an_api_in_str(in, "path"));
  const char *enc = an_api_in_str(in, "encoding");
  struct an_sandbox *sb = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r < 0) return r;
  void *data = NULL;
  size_t len = 0;
  r = an_sandbox_get_data(sb, path, &data, &len, err);
  an_sandbox_close(sb);
  if (r < 0) return r;
  if (c->ctx->max_read_bytes && len > c->ctx->max_read_bytes) {
    free(data);
    return an_error_set(err, EFBIG, "read_file %s: %zu bytes, over the server's cap of %llu", path, len,
                        (unsigned long long) c->ctx->max_read_bytes);
  }
  /* text unless asked for base64 or not UTF-8 (yajl's own check decides) */
  bool b64 = enc && !strcmp(enc, "base64");
  if (!b64) {
    yajl_gen probe = yajl_gen_alloc(NULL);
    if (!probe) { free(data); return an_error_set(err, ENOMEM, "read_file"); }
    yajl_gen_config(probe, yajl_gen_validate_utf8, 1);
    b64 = yajl_gen_string(probe, data, len) != yajl_gen_status_ok || memchr(data, 0, len);
    yajl_gen_free(probe);
  }
  yajl_gen_map_open(out);
  an_api_gen_kv_str(out, "path", path);
  an_api_gen_kv_int(out, "size", (int64_t) len);
  an_api_gen_kv_str(out, "encoding", b64 ? "base64" : "utf-8");
  an_api_gen_key(out, "content");
  if (b64) {
    char *e = malloc((len + 2) / 3 * 4 + 1);
    if (!e) { free(data); return an_error_set(err, ENOMEM, "read_file"); }
    int n = EVP_EncodeBlock((unsigned char *) e, data, (int) len);
    yajl_gen_string(out, (const unsigned char *) e, (size_t) n);
    free(e);
  } else {
    yajl_gen_string(out, data, len);
  }
  yajl_gen_map_close(out);
  free(data);
  return 0;
}

static int collect(struct an_api_call *c, yajl_val in, const char *const *globs, size_t n,
                   struct an_artifact_list *l, an_error_t *err) {
  struct an_sandbox *sb = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r < 0) return r;
  struct an_artifact_opts ao = {.warn = c->ctx->warn, .warn_data = c->ctx->warn_data};
  r = an_sandbox_artifacts(sb, globs, n, &ao, l, err);
  an_sandbox_close(sb);
  return r;
}

int an_api_op_list_files(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  const char *dir = an_api_in_str(in, "path");
  char glob[4096];
  if (dir && strcmp(ws_rel(dir), ".") && *ws_rel(dir)) snprintf(glob, sizeof glob, "%s/**", ws_rel(dir));
  else snprintf(glob, sizeof glob, "**");
  const char *globs[] = {glob};
  struct an_artifact_list l = {0};
  int r = collect(c, in, globs, 1, &l, err);
  if (r < 0) return r;
  yajl_gen_map_open(out);
  an_api_gen_key(out, "files");
  yajl_gen_array_open(out);
  for (size_t i = 0; i < l.n; i++) {
    yajl_gen_map_open(out);
    an_api_gen_kv_str(out, "path", l.items[i].path);
    an_api_gen_kv_str(out, "type", l.items[i].kind == AN_ARTIFACT_SYMLINK ? "symlink" : "file");
    an_api_gen_kv_int(out, "size", (int64_t) l.items[i].size);
    yajl_gen_map_close(out);
  }
  yajl_gen_array_close(out);
  yajl_gen_map_close(out);
  an_artifact_list_free(&l);
  return 0;
}

int an_api_op_artifacts(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  yajl_val g = an_api_in_array(in, "globs");
  size_t n = g ? g->u.array.len : 0;
  const char **globs = calloc(n + 1, sizeof *globs);
  if (!globs) return an_error_set(err, ENOMEM, "artifacts");
  for (size_t i = 0; i < n; i++) globs[i] = g->u.array.values[i]->u.string;
  struct an_artifact_list l = {0};
  int r = collect(c, in, globs, n, &l, err);
  free(globs);
  if (r < 0) return r;
  yajl_gen_map_open(out);
  an_api_gen_key(out, "artifacts");
  yajl_gen_array_open(out);
  for (size_t i = 0; i < l.n; i++) an_artifact_json(out, &l.items[i], true);
  yajl_gen_array_close(out);
  yajl_gen_map_close(out);
  an_artifact_list_free(&l);
  return 0;
}

static int snapshots_dir(const struct an_api_ctx *ctx, char *buf, size_t size, an_error_t *err) {
  if (ctx->snapshots_dir) snprintf(buf, size, "%s", ctx->snapshots_dir);
  else snprintf(buf, size, "%s/api-snapshots", ctx->store_root ? ctx->store_root : AN_IMAGE_DEFAULT_STORE);
  if (mkdir(buf, 0700) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", buf);
  const char *own = ctx->snapshot_owner;
  if (!own) return 0;
  bool ok = *own && strlen(own) <= 64;
  for (const char *p = own; ok && *p; p++) ok = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f');
  if (!ok) return an_error_set(err, EINVAL, "snapshot owner \"%.64s\": not 1 to 64 hex digits", own);
  size_t n = strlen(buf);
  if (n + 1 + strlen(own) >= size) return an_error_set(err, ENAMETOOLONG, "snapshots directory %s", buf);
  snprintf(buf + n, size - n, "/%s", own);
  if (mkdir(buf, 0700) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", buf);
  return 0;
}

int an_api_op_snapshot(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  char dir[4096], tmp[4200], final[4200];
  int r = snapshots_dir(c->ctx, dir, sizeof dir, err);
  if (r < 0) return r;
  struct an_sandbox *sb = NULL;
  if ((r = an_api_open_sandbox(c, in, &sb, err)) < 0) return r;
  snprintf(tmp, sizeof tmp, "%s/.%s-%d.tar", dir, an_sandbox_id(sb), (int) getpid());
  struct an_snapshot_info info = {0};
  r = an_sandbox_snapshot_warn(sb, tmp, &info, c->ctx->warn, c->ctx->warn_data, err);
  an_sandbox_close(sb);
  if (r < 0) return r;
  snprintf(final, sizeof final, "%s/%s.tar", dir, info.sha256);
  if (rename(tmp, final) < 0) {
    int e = errno;
    unlink(tmp);
    return an_error_set(err, e, "rename %s to %s", tmp, final);
  }
  yajl_gen_map_open(out);
  an_api_gen_kv_str(out, "snapshot", info.sha256);
  an_api_gen_kv_int(out, "size", (int64_t) info.size);
  an_api_gen_kv_int(out, "entries", (int64_t) info.entries);
  yajl_gen_map_close(out);
  return 0;
}

int an_api_op_restore(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  const char *snap = an_api_in_str(in, "snapshot");
  bool hex = strlen(snap) == 64;
  for (const char *p = snap; hex && *p; p++) hex = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f');
  if (!hex) return an_error_set(err, EINVAL, "restore: \"snapshot\" must be the 64 hex digits snapshot returned");
  char dir[4096], path[4200];
  int r = snapshots_dir(c->ctx, dir, sizeof dir, err);
  if (r < 0) return r;
  snprintf(path, sizeof path, "%s/%s.tar", dir, snap);
  struct an_sandbox *sb = NULL;
  if ((r = an_api_open_sandbox(c, in, &sb, err)) < 0) return r;
  r = an_sandbox_restore(sb, path, snap, err);
  char id[AN_SANDBOX_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  an_sandbox_close(sb);
  if (r < 0) return r;
  yajl_gen_map_open(out);
  an_api_gen_kv_str(out, "id", id);
  an_api_gen_kv_str(out, "snapshot", snap);
  an_api_gen_kv_bool(out, "restored", true);
  yajl_gen_map_close(out);
  return 0;
}
