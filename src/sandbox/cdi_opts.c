/* sandbox/cdi_opts.c — the sandbox options for CDI devices (--gpu,
 * --cdi-spec-dir, --cdi-allow-hooks; the profile keys gpu, devices,
 * cdi_spec_dirs, cdi_allow_hooks) and their application to the built spec
 * through agentnest/cdi.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest/cdi.h"
#include "agentnest/sandbox_opts.h"
#include "sandbox/opts_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"
#include "util/safe_path.h"

static int strv_add(char ***list, const char *s, an_error_t *err) {
  size_t n = 0;
  while (*list && (*list)[n]) n++;
  for (size_t i = 0; i < n; i++)
    if (strcmp((*list)[i], s) == 0) return 0;
  char **grown = realloc(*list, (n + 2) * sizeof *grown);
  if (!grown) return an_error_set(err, ENOMEM, "CDI option");
  *list = grown;
  if (!(grown[n] = strdup(s))) return an_error_set(err, ENOMEM, "CDI option");
  grown[n + 1] = NULL;
  return 0;
}

static bool valid_qualified(const char *s) {
  const char *eq = strchr(s, '='), *slash = strchr(s, '/');
  return eq && slash && slash > s && slash < eq - 1 && eq[1] && !strchr(eq + 1, '=') &&
         !strchr(slash + 1, '/') && !strpbrk(s, " \t\n,");
}

int an_sandbox_opts_add_gpu(struct an_sandbox_opts *o, const char *spec, an_error_t *err) {
  if (!spec || !*spec) return an_error_set(err, EINVAL, "gpu: empty");
  if (strchr(spec, '=')) {
    if (!valid_qualified(spec))
      return an_error_set(err, EINVAL, "gpu \"%s\": expected all, INDEX[,INDEX] or vendor/class=name",
                          spec);
    return strv_add(&o->cdi_devices, spec, err);
  }
  if (strcmp(spec, "all") == 0) return strv_add(&o->cdi_devices, AN_CDI_GPU_KIND "=all", err);
  for (const char *p = spec;;) {
    size_t n = strspn(p, "0123456789");
    if (n == 0 || n > 6 || (p[n] != ',' && p[n] != '\0'))
      return an_error_set(err, EINVAL, "gpu \"%s\": expected all, INDEX[,INDEX] or vendor/class=name",
                          spec);
    char name[64];
    snprintf(name, sizeof name, AN_CDI_GPU_KIND "=%.*s", (int) n, p);
    int r = strv_add(&o->cdi_devices, name, err);
    if (r < 0) return r;
    if (!p[n]) break;
    p += n + 1;
  }
  return 0;
}

int an_sandbox_opts_add_cdi_spec_dir(struct an_sandbox_opts *o, const char *dir, an_error_t *err) {
  if (!dir || dir[0] != '/')
    return an_error_set(err, EINVAL, "cdi_spec_dir \"%s\": must be an absolute path", dir ? dir : "");
  return strv_add(&o->cdi_spec_dirs, dir, err);
}

void an_sandbox_opts_set_cdi_allow_hooks(struct an_sandbox_opts *o, bool allow) {
  o->cdi_allow_hooks = allow;
}

char *const *an_sandbox_opts_cdi_devices(const struct an_sandbox_opts *o) {
  static char *const none[] = {NULL};
  return o->cdi_devices ? o->cdi_devices : none;
}

const char *const *an_sandbox_opts_cdi_spec_dirs(const struct an_sandbox_opts *o) {
  return o->cdi_spec_dirs ? (const char *const *) o->cdi_spec_dirs : an_cdi_default_dirs;
}

bool an_sandbox_opts_cdi_allow_hooks(const struct an_sandbox_opts *o) { return o->cdi_allow_hooks; }

bool an_sb_cdi_set_option(struct an_sandbox_opts *o, const char *option, const char *text, int *r,
                          an_error_t *err) {
  if (strcmp(option, "gpu") == 0) {
    *r = an_sandbox_opts_add_gpu(o, text, err);
  } else if (strcmp(option, "cdi_spec_dir") == 0) {
    *r = an_sandbox_opts_add_cdi_spec_dir(o, text, err);
  } else if (strcmp(option, "cdi_allow_hooks") == 0) {
    if (text && (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)) {
      o->cdi_allow_hooks = strcmp(text, "true") == 0;
      *r = 0;
    } else {
      *r = an_error_set(err, EINVAL, "cdi_allow_hooks \"%s\": expected true or false", text ? text : "");
    }
  } else {
    return false;
  }
  return true;
}

static int profile_strings(struct an_sandbox_opts *o, const char *key, yajl_val v,
                           int (*add)(struct an_sandbox_opts *, const char *, an_error_t *),
                           an_error_t *err) {
  if (!YAJL_IS_ARRAY(v))
    return an_error_set(err, EINVAL, "key \"%s\": expected an array of strings", key);
  for (size_t i = 0; i < v->u.array.len; i++) {
    yajl_val s = v->u.array.values[i];
    if (!YAJL_IS_STRING(s))
      return an_error_set(err, EINVAL, "key \"%s\": item %zu: expected a string", key, i);
    int r = add(o, YAJL_GET_STRING(s), err);
    if (r < 0) return an_error_prefix(err, "key \"%s\"", key);
  }
  return 0;
}

bool an_sb_cdi_profile_key(struct an_sandbox_opts *o, const char *key, yajl_val v, int *r,
                           an_error_t *err) {
  if (strcmp(key, "gpu") == 0) {
    if (!YAJL_IS_STRING(v)) *r = an_error_set(err, EINVAL, "key \"gpu\": expected a string");
    else if ((*r = an_sandbox_opts_add_gpu(o, YAJL_GET_STRING(v), err)) < 0)
      an_error_prefix(err, "key \"gpu\"");
  } else if (strcmp(key, "devices") == 0) {
    *r = profile_strings(o, key, v, an_sandbox_opts_add_gpu, err);
  } else if (strcmp(key, "cdi_spec_dirs") == 0) {
    *r = profile_strings(o, key, v, an_sandbox_opts_add_cdi_spec_dir, err);
  } else if (strcmp(key, "cdi_allow_hooks") == 0) {
    if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
      *r = an_error_set(err, EINVAL, "key \"cdi_allow_hooks\": expected true or false");
    else {
      o->cdi_allow_hooks = YAJL_IS_TRUE(v);
      *r = 0;
    }
  } else {
    return false;
  }
  return true;
}

void an_sb_cdi_opts_gen(struct an_jgen *j, const struct an_sandbox_opts *o) {
  if (o->cdi_devices) {
    an_jgen_key(j, "devices");
    an_jgen_array_open(j);
    for (char **d = o->cdi_devices; *d; d++) an_jgen_str(j, *d);
    an_jgen_array_close(j);
  }
  if (o->cdi_spec_dirs) {
    an_jgen_key(j, "cdi_spec_dirs");
    an_jgen_array_open(j);
    for (char **d = o->cdi_spec_dirs; *d; d++) an_jgen_str(j, *d);
    an_jgen_array_close(j);
  }
  if (o->cdi_allow_hooks) an_jgen_kv_bool(j, "cdi_allow_hooks", true);
}

void an_sb_cdi_opts_free(struct an_sandbox_opts *o) {
  an_strv_free(o->cdi_devices);
  an_strv_free(o->cdi_spec_dirs);
}

/* The image root is never written, so a CDI mount point must already be in
 * the image (resolved inside it, its symlinks followed within the root).
 * Refused here with the path named rather than by the engine's mkdir.  An
 * image root that cannot be opened (policy explain's placeholder) is left
 * to the engine. */
static int check_mount_points(const char *rootfs, const struct an_spec *spec, size_t first,
                              an_error_t *err) {
  cleanup_close int root = rootfs ? open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
  if (root < 0) return 0;
  for (size_t i = first; i < spec->n_mounts; i++) {
    const char *dest = spec->mounts[i].destination;
    int fd = an_openat2(root, dest, O_PATH, 0, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    if (fd >= 0) {
      close(fd);
      continue;
    }
    return an_error_set(err, -fd, "CDI mount %s (from %s): not in the image, whose root is never "
                        "written: use an image that has this path", dest,
                        spec->mounts[i].source ? spec->mounts[i].source : "?");
  }
  return 0;
}

int an_sb_cdi_apply(const struct an_sandbox_opts *o, const char *rootfs, struct an_spec *spec,
                    an_error_t *err) {
  if (!o->cdi_devices || !o->cdi_devices[0]) return 0;
  size_t first = spec->n_mounts;
  int r = an_cdi_apply_from_dirs(an_sandbox_opts_cdi_spec_dirs(o), spec,
                                 (const char *const *) o->cdi_devices,
                                 o->cdi_allow_hooks ? AN_CDI_ALLOW_HOOKS : 0, err);
  if (r == 0) r = check_mount_points(rootfs, spec, first, err);
  return r < 0 ? an_error_prefix(err, "sandbox spec") : 0;
}
