/* image/image_config.c — the part of an image config a sandbox needs
 * (OCI image-spec config.md: architecture, os, created, and config.Env,
 * Entrypoint, Cmd, WorkingDir, User; the Docker v1 image JSON uses the same
 * keys). */
#include <errno.h>
#include <string.h>
#include "image/image_internal.h"

void an_image_config_clear(struct an_image_config *c) {
  if (!c) return;
  an_strv_free(c->env);
  an_strv_free(c->entrypoint);
  an_strv_free(c->cmd);
  free(c->working_dir);
  free(c->user);
  free(c->architecture);
  free(c->os);
  memset(c, 0, sizeof *c);
}

static int dup_str(yajl_val obj, const char *key, char **out) {
  const char *s = an_json_member_str(obj, key);
  if (s && !*s) s = NULL;
  return s && !(*out = strdup(s)) ? -ENOMEM : 0;
}

int an_image_config_parse(const char *buf, struct an_image_config *c, char **created,
                          an_error_t *err) {
  yajl_val v = NULL;
  an_json_parse(buf, strlen(buf), "image config", &v, err);
  if (!v) return -EINVAL;
  int r = 0;
  if (!YAJL_IS_OBJECT(v)) { r = an_error_set(err, EINVAL, "image config: not a JSON object"); goto out; }
  yajl_val cfg = an_json_member_type(v, "config", yajl_t_object);
  static const char *keys[] = {"config.Env", "config.Entrypoint", "config.Cmd"};
  char ***dst[] = {&c->env, &c->entrypoint, &c->cmd};
  for (size_t i = 0; i < 3; i++) {
    yajl_val a = an_json_member(cfg, keys[i] + strlen("config."));   /* null: absent */
    if (a && (r = an_json_get_strv(a, keys[i], dst[i], err)) < 0) {
      an_error_prefix(err, "image config");   /* "config.Env[1]: must be a string" */
      goto out;
    }
  }
  if (dup_str(cfg, "WorkingDir", &c->working_dir) < 0 || dup_str(cfg, "User", &c->user) < 0 ||
      dup_str(v, "architecture", &c->architecture) < 0 || dup_str(v, "os", &c->os) < 0 ||
      (created && dup_str(v, "created", created) < 0))
    r = an_error_set(err, ENOMEM, "image config");
out:
  yajl_tree_free(v);
  if (r < 0) an_image_config_clear(c);
  return r;
}
