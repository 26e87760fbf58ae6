/* engine/spec_parse_process.c — the "process" object of config.json: args,
 * env, cwd, user, capabilities, rlimits, noNewPrivileges, oomScoreAdj,
 * terminal, consoleSize, apparmorProfile, selinuxLabel.
 * Standard: runtime-spec config.md "Process" and "Linux Process";
 * getrlimit(2); capabilities(7) names as libcap knows them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include "agentnest/spec.h"
#include "engine/spec_internal.h"
#include "engine/spec_names.h"

int an_spec_parse_process(yajl_val v, const char *path, struct an_spec_process *out,
                          an_error_t *err);

static int parse_console_size(yajl_val v, const char *path, struct an_spec_process *p,
                              an_error_t *err) {
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  uint64_t h, w;
  if ((r = an_spec_req_u64(v, path, "height", UINT32_MAX, &h, err)) < 0 ||
      (r = an_spec_req_u64(v, path, "width", UINT32_MAX, &w, err)) < 0)
    return r;
  p->has_console_size = true;
  p->console_height = (unsigned) h;
  p->console_width = (unsigned) w;
  return 0;
}

static int parse_user(yajl_val v, const char *path, struct an_spec_user *u, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  uint64_t n;
  if ((r = an_spec_req_u64(v, path, "uid", UINT32_MAX, &n, err)) < 0) return r;
  u->uid = (uid_t) n;
  if ((r = an_spec_req_u64(v, path, "gid", UINT32_MAX, &n, err)) < 0) return r;
  u->gid = (gid_t) n;
  yajl_val x;
  if ((x = an_json_member(v, "umask"))) {
    if ((r = an_json_get_u64(x, an_json_path_key(sub, path, "umask"), 0777, &n, err)) < 0)
      return r;
    u->has_umask = true;
    u->umask = (mode_t) n;
  }
  if ((x = an_json_member(v, "additionalGids"))) {
    an_json_path_key(sub, path, "additionalGids");
    if ((r = an_json_want_array(x, sub, err)) < 0) return r;
    if ((r = AN_SPEC_ALLOC_ARRAY(u->additional_gids, u->n_additional_gids, x->u.array.len, sub,
                                 err)) < 0)
      return r;
    char item[AN_JSON_PATH_MAX];
    for (size_t i = 0; i < x->u.array.len; i++) {
      if ((r = an_json_get_u64(x->u.array.values[i], an_json_path_index(item, sub, i),
                               UINT32_MAX, &n, err)) < 0)
        return r;
      u->additional_gids[i] = (gid_t) n;
    }
  }
  if ((x = an_json_member(v, "username")) &&
      (r = an_json_get_string(x, an_json_path_key(sub, path, "username"), &u->username, err)) < 0)
    return r;
  return 0;
}

static int parse_cap_set(yajl_val v, const char *path, char ***out, an_error_t *err) {
  int r = an_json_get_strv(v, path, out, err);
  if (r < 0) return r;
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; (*out)[i]; i++) {
    cap_value_t cap;
    /* libcap also takes bare numbers; the spec only knows "CAP_*" names. */
    if (strncmp((*out)[i], "CAP_", 4) != 0 || cap_from_name((*out)[i], &cap) < 0)
      return an_json_error(err, an_json_path_index(sub, path, i), "unknown capability \"%s\"",
                           (*out)[i]);
  }
  return 0;
}

static int parse_capabilities(yajl_val v, const char *path, struct an_spec_capabilities *c,
                              an_error_t *err) {
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  const struct { const char *key; char ***set; } sets[] = {
    { "bounding", &c->bounding }, { "effective", &c->effective },
    { "inheritable", &c->inheritable }, { "permitted", &c->permitted },
    { "ambient", &c->ambient },
  };
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    yajl_val x = an_json_member(v, sets[i].key);
    if (x && (r = parse_cap_set(x, an_json_path_key(sub, path, sets[i].key), sets[i].set,
                                err)) < 0)
      return r;
  }
  return 0;
}

static int parse_rlimit(yajl_val v, const char *path, struct an_spec_rlimit *rl,
                        an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  const char *type;
  if ((r = an_spec_req_string(v, path, "type", sub, &type, err)) < 0) return r;
  if (an_rlimit_from_name(type, &rl->type) < 0)
    return an_json_error(err, sub, "unknown rlimit \"%s\"", type);
  if ((r = an_spec_req_u64(v, path, "hard", UINT64_MAX, &rl->hard, err)) < 0 ||
      (r = an_spec_req_u64(v, path, "soft", UINT64_MAX, &rl->soft, err)) < 0)
    return r;
  /* setrlimit(2) would fail with EINVAL later; say why now. */
  if (rl->soft > rl->hard)
    return an_json_error(err, path, "soft limit %llu exceeds hard limit %llu",
                         (unsigned long long) rl->soft, (unsigned long long) rl->hard);
  return 0;
}

static int parse_rlimits(yajl_val v, const char *path, struct an_spec_process *p,
                         an_error_t *err) {
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(p->rlimits, p->n_rlimits, v->u.array.len, path, err)) < 0)
    return r;
  char sub[AN_JSON_PATH_MAX], sub2[AN_JSON_PATH_MAX];
  for (size_t i = 0; i < v->u.array.len; i++) {
    an_json_path_index(sub, path, i);
    if ((r = parse_rlimit(v->u.array.values[i], sub, &p->rlimits[i], err)) < 0) return r;
    /* config.md: the same type must not be given twice. */
    for (size_t j = 0; j < i; j++)
      if (p->rlimits[j].type == p->rlimits[i].type)
        return an_json_error(err, an_json_path_key(sub2, sub, "type"), "duplicate rlimit \"%s\"",
                             an_rlimit_name(p->rlimits[i].type));
  }
  return 0;
}

static int check_env(char **env, const char *path, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  for (size_t i = 0; env[i]; i++) {
    const char *eq = strchr(env[i], '=');
    if (!eq || eq == env[i])
      return an_json_error(err, an_json_path_index(sub, path, i), "must be KEY=value, not \"%s\"",
                           env[i]);
  }
  return 0;
}

int an_spec_parse_process(yajl_val v, const char *path, struct an_spec_process *p,
                          an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  yajl_val x;
  if ((x = an_json_member(v, "terminal")) &&
      (r = an_json_get_bool(x, an_json_path_key(sub, path, "terminal"), &p->terminal, err)) < 0)
    return r;
  if ((x = an_json_member(v, "consoleSize")) &&
      (r = parse_console_size(x, an_json_path_key(sub, path, "consoleSize"), p, err)) < 0)
    return r;
  if ((r = an_spec_req_member(v, path, "user", sub, &x, err)) < 0 ||
      (r = parse_user(x, sub, &p->user, err)) < 0 ||
      (r = an_spec_req_member(v, path, "args", sub, &x, err)) < 0 ||
      (r = an_json_get_strv(x, sub, &p->args, err)) < 0)
    return r;
  if (!p->args[0]) return an_json_error(err, sub, "must not be empty");
  if ((x = an_json_member(v, "env"))) {
    an_json_path_key(sub, path, "env");
    if ((r = an_json_get_strv(x, sub, &p->env, err)) < 0 || (r = check_env(p->env, sub, err)) < 0)
      return r;
  }
  if ((r = an_spec_req_member(v, path, "cwd", sub, &x, err)) < 0 ||
      (r = an_spec_get_abs_path(x, sub, &p->cwd, err)) < 0)
    return r;
  if ((x = an_json_member(v, "capabilities"))) {
    if (!(p->capabilities = calloc(1, sizeof *p->capabilities)))
      return an_error_set(err, ENOMEM, "%s", path);
    if ((r = parse_capabilities(x, an_json_path_key(sub, path, "capabilities"), p->capabilities,
                                err)) < 0)
      return r;
  }
  if ((x = an_json_member(v, "rlimits")) &&
      (r = parse_rlimits(x, an_json_path_key(sub, path, "rlimits"), p, err)) < 0)
    return r;
  if ((x = an_json_member(v, "noNewPrivileges")) &&
      (r = an_json_get_bool(x, an_json_path_key(sub, path, "noNewPrivileges"),
                            &p->no_new_privileges, err)) < 0)
    return r;
  if ((x = an_json_member(v, "oomScoreAdj"))) {
    int64_t n;
    /* proc(5): /proc/pid/oom_score_adj takes -1000..1000 */
    if ((r = an_json_get_i64(x, an_json_path_key(sub, path, "oomScoreAdj"), -1000, 1000, &n,
                             err)) < 0)
      return r;
    p->has_oom_score_adj = true;
    p->oom_score_adj = (int) n;
  }
  if ((x = an_json_member(v, "apparmorProfile")) &&
      (r = an_json_get_string(x, an_json_path_key(sub, path, "apparmorProfile"),
                              &p->apparmor_profile, err)) < 0)
    return r;
  if ((x = an_json_member(v, "selinuxLabel")) &&
      (r = an_json_get_string(x, an_json_path_key(sub, path, "selinuxLabel"), &p->selinux_label,
                              err)) < 0)
    return r;
  return 0;
}
