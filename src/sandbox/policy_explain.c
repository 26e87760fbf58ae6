/* sandbox/policy_explain.c — an_policy_explain (agentnest/policy.h): for
 * each profile, build the very spec a sandbox of it would run with
 * (an_sandbox_build_spec, for a placeholder image and id range) and describe
 * it with the policy emitter of policy.c, saying which profiles cannot run
 * on this host and why. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/image.h"
#include "agentnest/policy.h"
#include "engine/cgroup_internal.h"
#include "engine/landlock.h"
#include "sandbox/opts_internal.h"
#include "sandbox/policy_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

#define PLACEHOLDER_ROOTFS    "/var/lib/agentnest/images/<image>/rootfs"
#define PLACEHOLDER_WORKSPACE "/var/lib/agentnest/sandboxes/<id>/workspace"

static void opts_release(struct an_sandbox_opts **o) { an_sandbox_opts_free(*o); }
static void spec_release(struct an_spec **s) { an_spec_free(*s); }

/* One profile as {"name","runnable","reason"?,"image","policy"}.  Errors
 * only for ENOMEM and for a profile the caller named that cannot be read
 * (`strict`); other failures are the reason it cannot run. */
static int explain_one(struct an_jgen *j, const char *name, const char *dir, bool strict,
                       const struct an_sb_host_facts *h, const char *store_root, an_error_t *err) {
  __attribute__((cleanup(opts_release))) struct an_sandbox_opts *o = NULL;
  __attribute__((cleanup(spec_release))) struct an_spec *spec = NULL;
  cleanup_error an_error_t why = NULL;
  int r = an_sb_opts_new_dir(NULL, dir, &o, err);
  if (r < 0) return r;
  r = an_sandbox_opts_load_profile(o, name, dir, &why);
  if (r < 0 && strict && r != -EOPNOTSUPP) {
    *err = why;
    why = NULL;
    return r;
  }
  if (r == 0) {
    static char *const argv[] = {"sh", NULL};
    struct an_sandbox_image img = {.rootfs = PLACEHOLDER_ROOTFS};
    struct an_sandbox_ids ids = {.host_uid_base = AN_IDRANGE_BASE, .size = AN_IDRANGE_SIZE};
    r = an_sandbox_build_spec(o, &img, &ids, NULL, PLACEHOLDER_WORKSPACE, (char **) argv, &spec, &why);
    if (r == 0) r = an_landlock_check(spec, &why);
    /* the image must be in the store, or run fails with "not found" */
    struct an_image_info *info = NULL;
    if (r == 0 && store_root && (r = an_image_resolve(store_root, o->image ? o->image : "python", &info, &why)) == 0)
      an_image_info_free(info);
  }
  an_jgen_map_open(j);
  an_jgen_kv_str(j, "name", name);
  an_jgen_kv_bool(j, "runnable", r == 0);
  if (r < 0) an_jgen_kv_str(j, "reason", why ? why->msg : "unknown");
  if (spec) {
    an_jgen_kv_str(j, "image", o->image ? o->image : "python");
    an_jgen_key(j, "policy");
    an_jgen_map_open(j);
    int g = an_sb_policy_members(j, spec, o, h, err);
    an_jgen_map_close(j);
    if (g < 0) return g;
  }
  an_jgen_map_close(j);
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *) a, *(char *const *) b);
}

static void names_free(char **v, size_t n) {
  for (size_t i = 0; i < n; i++) free(v[i]);
  free(v);
}

/* The profile names in dir: every "<name>.json" (sorted). */
static int list_profiles(const char *dir, char ***out, size_t *n, an_error_t *err) {
  DIR *d = opendir(dir);
  if (!d) return an_error_set(err, errno, "profiles directory %s", dir);
  char **v = NULL;
  size_t k = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0 || e->d_name[0] == '.') continue;
    char **grown = realloc(v, (k + 1) * sizeof *v);
    char *nm = grown ? strndup(e->d_name, len - 5) : NULL;
    if (grown) v = grown;
    if (!nm) {
      closedir(d);
      names_free(v, k);
      return an_error_set(err, ENOMEM, "profiles directory %s", dir);
    }
    v[k++] = nm;
  }
  closedir(d);
  qsort(v, k, sizeof *v, cmp_names);
  *out = v;
  *n = k;
  return 0;
}

static void gen_host(struct an_jgen *j, const struct an_sb_host_facts *h) {
  an_jgen_key(j, "host");
  an_jgen_map_open(j);
  an_jgen_kv_i64(j, "landlock_abi", h->landlock_abi);
  an_jgen_kv_str(j, "cgroup_layout", h->cgroup_layout);
  an_jgen_key(j, "controllers");
  an_jgen_array_open(j);
  for (int c = 0; c < AN_CG__COUNT; c++)
    if (h->controllers & AN_CG_BIT(c)) {
      const char *nm = an_cg_ctrl_v1_name((enum an_cg_ctrl) c);
      an_jgen_str(j, nm ? nm : an_cg_ctrl_v2_name((enum an_cg_ctrl) c));
    }
  an_jgen_array_close(j);
  an_jgen_kv_u64(j, "online_cpus", h->online_cpus);
  an_jgen_map_close(j);
}

int an_policy_explain(const char *profile, const char *profiles_dir, char **json,
                      an_error_t *err) {
  return an_policy_explain_store(NULL, profile, profiles_dir, json, err);
}

int an_policy_explain_store(const char *store_root, const char *profile, const char *profiles_dir,
                            char **json, an_error_t *err) {
  const char *dir = profiles_dir ? profiles_dir : an_sandbox_profiles_dir();
  struct an_sb_host_facts h;
  an_sb_host_facts(&h);
  char **names = NULL;
  size_t n = 0;
  int r = 0;
  if (!profile && (r = list_profiles(dir, &names, &n, err)) < 0) return r;
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) {
    names_free(names, n);
    return an_error_set(err, ENOMEM, "policy explain: JSON");
  }
  an_jgen_validate_utf8(&j);
  an_jgen_map_open(&j);
  gen_host(&j, &h);
  an_jgen_kv_str(&j, "profiles_dir", dir);
  an_jgen_key(&j, "profiles");
  an_jgen_array_open(&j);
  if (profile) r = explain_one(&j, profile, dir, true, &h, store_root, err);
  for (size_t i = 0; r == 0 && i < n; i++) r = explain_one(&j, names[i], dir, false, &h, store_root, err);
  an_jgen_array_close(&j);
  an_jgen_map_close(&j);
  names_free(names, n);
  if (r < 0) return r;
  if ((r = an_jgen_finish(&j, json, NULL)) < 0) return an_error_set(err, -r, "policy explain: JSON");
  return 0;
}
