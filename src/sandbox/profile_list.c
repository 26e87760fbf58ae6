/* sandbox/profile_list.c — the profiles of a directory with their
 * description and the options each gives (`agentnest profiles`). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "agentnest/sandbox_opts.h"
#include "sandbox/opts_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"
#include "util/json_tree.h"

static int cmp_info(const void *a, const void *b) {
  return strcmp(((const struct an_sandbox_profile_info *) a)->name,
                ((const struct an_sandbox_profile_info *) b)->name);
}

/* The "description" string of the profile file, or NULL (unreadable files
 * and wrong types are reported by the load itself). */
static char *read_description(const char *path) {
  cleanup_free char *text = NULL;
  size_t len = 0;
  an_error_t err = NULL;
  yajl_val root = NULL;
  char *out = NULL;
  if (an_json_read_file(path, &text, &len, &err) == 0 && an_json_parse(text, len, path, &root, &err) == 0) {
    const char *d = an_json_member_str(root, "description");
    if (d) out = strdup(d);
  }
  yajl_tree_free(root);
  an_error_free(&err);
  return out;
}

static int fill(struct an_sandbox_profile_info *info, const char *dir, an_error_t *err) {
  cleanup_free char *path = NULL;
  if (asprintf(&path, "%s/%s.json", dir, info->name) < 0) return an_error_set(err, ENOMEM, "profiles");
  info->description = read_description(path);
  int r = an_sb_opts_new_dir(NULL, dir, &info->opts, err);
  if (r < 0) return r;
  an_error_t why = NULL;
  if (an_sandbox_opts_load_profile(info->opts, path, NULL, &why) < 0) {
    info->error = strdup(why && why->msg ? why->msg : "cannot be loaded");
    an_error_free(&why);
    an_sandbox_opts_free(info->opts);
    info->opts = NULL;
    if ((r = an_sb_opts_new_dir(NULL, dir, &info->opts, err)) < 0) return r;
    if (!info->error) return an_error_set(err, ENOMEM, "profiles");
  }
  return 0;
}

int an_sandbox_profiles_list(const char *profiles_dir, struct an_sandbox_profile_info **out,
                             size_t *n, an_error_t *err) {
  const char *dir = profiles_dir ? profiles_dir : an_sandbox_profiles_dir();
  DIR *d = opendir(dir);
  if (!d) return an_error_set(err, errno, "profiles directory %s", dir);
  struct an_sandbox_profile_info *v = NULL;
  size_t k = 0;
  int r = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0 || e->d_name[0] == '.') continue;
    struct an_sandbox_profile_info *grown = realloc(v, (k + 1) * sizeof *v);
    if (!grown) {
      r = an_error_set(err, ENOMEM, "profiles directory %s", dir);
      break;
    }
    v = grown;
    v[k] = (struct an_sandbox_profile_info){0};
    if (!(v[k++].name = strndup(e->d_name, len - 5))) {
      r = an_error_set(err, ENOMEM, "profiles directory %s", dir);
      break;
    }
  }
  closedir(d);
  if (r == 0 && k) qsort(v, k, sizeof *v, cmp_info);
  for (size_t i = 0; r == 0 && i < k; i++) r = fill(&v[i], dir, err);
  if (r < 0) {
    an_sandbox_profiles_free(v, k);
    return r;
  }
  *out = v;
  *n = k;
  return 0;
}

void an_sandbox_profiles_free(struct an_sandbox_profile_info *list, size_t n) {
  for (size_t i = 0; list && i < n; i++) {
    free(list[i].name);
    free(list[i].description);
    free(list[i].error);
    an_sandbox_opts_free(list[i].opts);
  }
  free(list);
}

int an_sandbox_profiles_to_json(const struct an_sandbox_profile_info *list, size_t n, char **json,
                                an_error_t *err) {
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return an_error_set(err, ENOMEM, "profiles to JSON");
  an_jgen_validate_utf8(&j);
  an_jgen_map_open(&j);
  an_jgen_key(&j, "profiles");
  an_jgen_array_open(&j);
  for (size_t i = 0; i < n; i++) {
    an_jgen_map_open(&j);
    an_jgen_kv_str(&j, "name", list[i].name);
    if (list[i].description) an_jgen_kv_str(&j, "description", list[i].description);
    an_jgen_kv_bool(&j, "runnable", !list[i].error);
    if (list[i].error) an_jgen_kv_str(&j, "error", list[i].error);
    if (list[i].opts && !list[i].error) {
      an_jgen_key(&j, "options");
      an_sandbox_opts_gen(&j, list[i].opts);
    }
    an_jgen_map_close(&j);
  }
  an_jgen_array_close(&j);
  an_jgen_map_close(&j);
  int r = an_jgen_finish(&j, json, NULL);
  if (r < 0) return an_error_set(err, -r, "profiles to JSON");
  return 0;
}
