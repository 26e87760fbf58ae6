/* sandbox/image_users.c — which sandboxes use an image's root filesystem
 * (`image rm` refuses to delete an image under a sandbox), read from each
 * sandbox's engine spec (root.path), the path every exec enters.  What does
 * NOT live here: removing images (image/store.c). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/sandbox.h"
#include "agentnest/spec.h"
#include "engine/state.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

void an_sandbox_image_users_free(char **ids) {
  for (size_t i = 0; ids && ids[i]; i++) free(ids[i]);
  free(ids);
}

int an_sandbox_image_users(const char *store_root, const char *rootfs, char ***ids,
                           an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root);
  *ids = NULL;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, AN_SB_DIR);
  cleanup_closedir DIR *d = opendir(path);
  if (!d) return errno == ENOENT ? 0 : an_error_set(err, errno, "open %s", path);
  char **v = NULL;
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name)) continue;
    char cfg[PATH_MAX + 300];
    snprintf(cfg, sizeof cfg, "%s/%s/%s/%s", root, AN_SB_CONTAINERS_DIR, de->d_name, AN_STATE_CONFIG);
    struct an_spec *spec = NULL;
    an_error_t e = NULL;
    if (an_spec_load_file(cfg, &spec, &e) < 0) {   /* a create in progress or a torn-down one */
      an_error_free(&e);
      continue;
    }
    bool uses = spec->root.path && !strcmp(spec->root.path, rootfs);
    an_spec_free(spec);
    if (!uses) continue;
    char **nv = realloc(v, (n + 2) * sizeof *v);
    if (!nv || !(nv[n] = strdup(de->d_name))) {
      if (nv) v = nv, v[n] = NULL;
      an_sandbox_image_users_free(v);
      return an_error_set(err, ENOMEM, "image users");
    }
    v = nv;
    v[++n] = NULL;
  }
  *ids = v;
  return (int) n;
}
