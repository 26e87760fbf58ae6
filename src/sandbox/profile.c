/* sandbox/profile.c — JSON profiles: find one by name or path, parse it with
 * yajl_tree, and apply each key through the options setters, so a profile
 * can never set what a flag could not (agentnest/sandbox_opts.h has the key
 * list).  Nothing here touches the system beyond reading the file. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yajl/yajl_tree.h>
#include "agentnest/ctx.h"
#include "agentnest/sandbox_opts.h"
#include "sandbox/approval_internal.h"
#include "sandbox/opts_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/json_tree.h"
#include "util/units.h"

#define PROFILE_MAX_BYTES (1u << 20)

const char *an_sandbox_profiles_dir(void) {
  return an_ctx_profiles_dir(NULL);
}

static bool is_path(const char *s) {
  size_t n = strlen(s);
  return strchr(s, '/') || (n >= 5 && strcmp(s + n - 5, ".json") == 0);
}

static bool valid_profile_name(const char *s) {
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9'))) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
      return false;
  return true;
}

/* Read a whole file of at most PROFILE_MAX_BYTES, NUL-terminated. */
static int read_small_file(const char *path, char **out, an_error_t *err) {
  /* a FIFO given as --profile must not hang the CLI (BL-23) */
  cleanup_close int fd = an_open_input(AT_FDCWD, path, 0, false, NULL, err);
  if (fd < 0) return fd;
  cleanup_free char *buf = malloc(PROFILE_MAX_BYTES + 1);
  if (!buf) return an_error_set(err, ENOMEM, "read %s", path);
  size_t len = 0;
  for (;;) {
    ssize_t k = read(fd, buf + len, PROFILE_MAX_BYTES + 1 - len);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return an_error_set(err, errno, "read %s", path);
    if (k == 0) break;
    len += (size_t) k;
    if (len > PROFILE_MAX_BYTES)
      return an_error_set(err, EFBIG, "%s: larger than %u bytes", path, PROFILE_MAX_BYTES);
  }
  buf[len] = '\0';
  if (strlen(buf) != len) return an_error_set(err, EINVAL, "%s: contains a NUL byte", path);
  *out = an_steal(&buf);
  return 0;
}

/* The text of a JSON string, or of a JSON number as written (so that "1.5"
 * and 1.5 take the same parser); NULL for other types. */
static const char *scalar_text(yajl_val v) {
  if (YAJL_IS_STRING(v)) return YAJL_GET_STRING(v);
  if (YAJL_IS_NUMBER(v)) return YAJL_GET_NUMBER(v);
  return NULL;
}

static int want_string(const char *key, yajl_val v, const char **out, an_error_t *err) {
  if (!YAJL_IS_STRING(v)) return an_error_set(err, EINVAL, "key \"%s\": expected a string", key);
  *out = YAJL_GET_STRING(v);
  return 0;
}

/* A size, duration or CPU count: a JSON string in the units grammar or a
 * JSON number (taken as written, so 1.5 and "1.5" parse alike). */
static int apply_quantity(struct an_sandbox_opts *o, const char *key, yajl_val v, const char *kind,
                          an_error_t *err) {
  const char *text = scalar_text(v);
  if (!text) return an_error_set(err, EINVAL, "key \"%s\": expected %s", key, kind);
  int r = an_sandbox_opts_set_option(o, key, text, err);
  return r < 0 ? an_error_prefix(err, "key \"%s\"", key) : 0;
}

static int apply_env(struct an_sandbox_opts *o, yajl_val v, an_error_t *err) {
  if (YAJL_IS_OBJECT(v)) {
    for (size_t i = 0; i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      yajl_val val = v->u.object.values[i];
      if (!YAJL_IS_STRING(val))
        return an_error_set(err, EINVAL, "key \"env\": \"%s\": expected a string value", k);
      if (strchr(k, '=') || !*k)
        return an_error_set(err, EINVAL, "key \"env\": \"%s\": invalid variable name", k);
      cleanup_free char *kv = NULL;
      if (asprintf(&kv, "%s=%s", k, YAJL_GET_STRING(val)) < 0)
        return an_error_set(err, ENOMEM, "key \"env\"");
      int r = an_sandbox_opts_add_env(o, kv, err);
      if (r < 0) return an_error_prefix(err, "key \"env\"");
    }
    return 0;
  }
  if (YAJL_IS_ARRAY(v)) {
    for (size_t i = 0; i < v->u.array.len; i++) {
      yajl_val item = v->u.array.values[i];
      if (!YAJL_IS_STRING(item))
        return an_error_set(err, EINVAL, "key \"env\": item %zu: expected a \"K=V\" string", i);
      int r = an_sandbox_opts_add_env(o, YAJL_GET_STRING(item), err);
      if (r < 0) return an_error_prefix(err, "key \"env\"");
    }
    return 0;
  }
  return an_error_set(err, EINVAL, "key \"env\": expected an object or an array of \"K=V\"");
}

static int apply_seccomp_profile(struct an_sandbox_opts *o, const char *profile_path, yajl_val v,
                                 an_error_t *err) {
  const char *path = NULL;
  int r = want_string("seccomp_profile", v, &path, err);
  if (r < 0) return r;
  cleanup_free char *resolved = NULL;
  if (path[0] != '/' && path[0] != '\0') {   /* relative to the profile's directory */
    cleanup_free char *copy = strdup(profile_path);
    if (!copy || asprintf(&resolved, "%s/%s", dirname(copy), path) < 0)
      return an_error_set(err, ENOMEM, "key \"seccomp_profile\"");
    path = resolved;
  }
  r = an_sandbox_opts_set_seccomp_profile(o, path, err);
  return r < 0 ? an_error_prefix(err, "key \"seccomp_profile\"") : 0;
}

static int apply_key(struct an_sandbox_opts *o, const char *profile_path, const char *key,
                     yajl_val v, an_error_t *err) {
  static const char *const sizes[] = {"memory", "tmp_size", "max_output", "max_read", "disk",
                                      "shm_size"};
  static const char *const strings[] = {"image", "network", "workdir", "landlock"};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    if (strcmp(key, sizes[i]) == 0) return apply_quantity(o, key, v, "a size (\"512m\" or bytes)", err);
  if (strcmp(key, "timeout") == 0 || strcmp(key, "exec_timeout") == 0 || strcmp(key, "max_lifetime") == 0)
    return apply_quantity(o, key, v, "a duration (\"300s\" or seconds)", err);
  if (strcmp(key, "cpus") == 0) return apply_quantity(o, key, v, "a number like 1.5", err);
  if (strcmp(key, "env") == 0) return apply_env(o, v, err);
  if (strcmp(key, "seccomp_profile") == 0) return apply_seccomp_profile(o, profile_path, v, err);
  if (strcmp(key, "pids") == 0 || strcmp(key, "inodes") == 0) {
    if (!YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) < 0)
      return an_error_set(err, EINVAL, "key \"%s\": expected a positive integer", key);
    int r = an_sandbox_opts_set_option(o, key, YAJL_GET_NUMBER(v), err);
    return r < 0 ? an_error_prefix(err, "key \"%s\"", key) : 0;
  }
  if (strcmp(key, "seccomp_unsafe") == 0) {
    if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
      return an_error_set(err, EINVAL, "key \"seccomp_unsafe\": expected true or false");
    an_sandbox_opts_set_seccomp_unsafe(o, YAJL_IS_TRUE(v));
    return 0;
  }
  if (strcmp(key, "tmp_noexec") == 0) {
    if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
      return an_error_set(err, EINVAL, "key \"tmp_noexec\": expected true or false");
    return an_sandbox_opts_set_tmp_noexec(o, YAJL_IS_TRUE(v), err);
  }
  int cdi_r = 0;
  if (an_sb_cdi_profile_key(o, key, v, &cdi_r, err)) return cdi_r;
  if (an_sb_approval_profile_key(o, profile_path, key, v, &cdi_r, err)) return cdi_r;
  if (an_sb_egress_profile_key(o, key, v, &cdi_r, err)) return cdi_r;
  if (strcmp(key, "description") == 0) {
    const char *s = NULL;
    return want_string(key, v, &s, err);
  }
  for (size_t i = 0; i < sizeof strings / sizeof *strings; i++)
    if (strcmp(key, strings[i]) == 0) {
      const char *s = NULL;
      int r = want_string(key, v, &s, err);
      if (r < 0) return r;
      r = an_sandbox_opts_set_option(o, key, s, err);
      return r < 0 ? an_error_prefix(err, "key \"%s\"", key) : 0;
    }
  return an_error_set(err, EINVAL, "key \"%s\": unknown key", key);
}

static int apply_profile(struct an_sandbox_opts *o, const char *path, an_error_t *err) {
  cleanup_free char *text = NULL;
  int r = read_small_file(path, &text, err);
  if (r < 0) return r;
  /* util/json_tree: bounded, and a string or key holding U+0000 ("\u0000")
   * is an error, not a value cut short at the NUL ("/workspace\u0000/.."). */
  yajl_val root = NULL;
  r = an_json_parse(text, strlen(text), path, &root, err);
  if (r < 0) return r;
  if (!YAJL_IS_OBJECT(root)) {
    yajl_tree_free(root);
    return an_error_set(err, EINVAL, "%s: expected a JSON object", path);
  }
  size_t n = root->u.object.len;
  const char **keys = root->u.object.keys;
  /* Refuse duplicates and honour "unsupported" before applying anything. */
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < i; j++)
      if (strcmp(keys[i], keys[j]) == 0) {
        r = an_error_set(err, EINVAL, "key \"%s\": duplicate key", keys[i]);
        goto out;
      }
    if (strcmp(keys[i], "unsupported") == 0) {
      yajl_val v = root->u.object.values[i];
      r = an_error_set(err, EOPNOTSUPP, "not supported yet: %s",
                       YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : "(no reason given)");
      goto out;
    }
  }
  for (size_t i = 0; i < n; i++) {
    r = apply_key(o, path, keys[i], root->u.object.values[i], err);
    if (r < 0) goto out;
  }
  r = 0;
out:
  yajl_tree_free(root);
  return r;
}

int an_sandbox_opts_load_profile(struct an_sandbox_opts *o, const char *name_or_path,
                                 const char *profiles_dir, an_error_t *err) {
  if (!name_or_path || !*name_or_path) return an_error_set(err, EINVAL, "profile: empty name");
  cleanup_free char *path = NULL;
  if (is_path(name_or_path)) {
    path = strdup(name_or_path);
  } else {
    if (!valid_profile_name(name_or_path))
      return an_error_set(err, EINVAL, "profile \"%s\": a name must match [a-z0-9][a-z0-9_-]*",
                          name_or_path);
    if (asprintf(&path, "%s/%s.json", profiles_dir ? profiles_dir : an_ctx_profiles_dir(o->ctx),
                 name_or_path) < 0)
      path = NULL;
  }
  if (!path) return an_error_set(err, ENOMEM, "profile \"%s\"", name_or_path);
  int r = apply_profile(o, path, err);
  if (r == 0) r = an_sandbox_opts_set_profile_name(o, name_or_path, err);
  return r < 0 ? an_error_prefix(err, "profile \"%s\"", name_or_path) : 0;
}
