/* api/ops_sandbox.c — the lifecycle operations of the table: create,
 * destroy, ls, inspect, fork, events (agentnest/sandbox.h calls). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api_internal.h"
#include "util/json_tree.h"

int an_api_open_sandbox(struct an_api_call *call, yajl_val in, struct an_sandbox **out,
                        an_error_t *err) {
  const char *name = an_api_in_str(in, "sandbox");
  if (!name) return an_error_set(err, EINVAL, "input: \"sandbox\" is required");
  struct an_sandbox *sb = NULL;
  const struct an_api_ctx *c = call->ctx;
  /* Another client's sandbox gets the answer of an unknown one, in status
   * and text (redteam: 403 "not created by this client" against 404 told a
   * token which ids exist): an id the client does not own is refused before
   * anything is opened (its state, expiry or death stay unseen), and a name
   * or prefix resolving to one the client does not own, or not resolving,
   * reads as unknown too. */
  bool full_id = strlen(name) == AN_SANDBOX_ID_LEN && strspn(name, "0123456789abcdef") == AN_SANDBOX_ID_LEN;
  if (c->may_use && full_id && !c->may_use(c->may_use_data, name))
    return an_error_set(err, ENOENT, "sandbox %s: no such sandbox", name);
  int r = an_sandbox_open_ctx(c->lib, c->store_root, name, &sb, err);
  if (r < 0 && c->may_use && !full_id && r != -ENOMEM) {
    an_error_free(err);
    return an_error_set(err, ENOENT, "sandbox %s: no such sandbox", name);
  }
  if (r < 0) return r;
  if (c->may_use && !c->may_use(c->may_use_data, an_sandbox_id(sb))) {
    an_sandbox_close(sb);
    return an_error_set(err, ENOENT, "sandbox %s: no such sandbox", name);
  }
  *out = sb;
  return 0;
}

/* The create input's options, as `agentnest create` flags would set them. */
static int create_opts(struct an_api_call *call, yajl_val in, struct an_sandbox_opts **out,
                       an_error_t *err) {
  const struct an_api_ctx *ctx = call->ctx;
  struct an_sandbox_opts *o = NULL;
  int r = an_sandbox_opts_new_ctx(ctx->lib, &o, err);
  if (r < 0) return r;
  const char *profile = an_api_in_str(in, "profile");
  if (ctx->profile && (profile || an_api_in_str(in, "image"))) {
    r = an_error_set(err, EPERM, "create: this server runs every sandbox with profile \"%s\"; "
                     "\"profile\" and \"image\" may not be given", ctx->profile);
    goto fail;
  }
  /* a client names a shipped profile, never a file: a path would let it load a profile it
   * wrote itself (in a workspace) with seccomp_unsafe or network full */
  bool named = profile && *profile && strlen(profile) <= 64;
  for (const char *p = profile; named && *p; p++)
    named = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || ((*p == '_' || *p == '-') && p != profile);
  if (profile && !named) {
    r = an_error_set(err, EINVAL, "create: \"profile\": a profile name [a-z0-9][a-z0-9_-]* (not a path)");
    goto fail;
  }
  if (ctx->profile) profile = ctx->profile;
  if (profile && (r = an_sandbox_opts_load_profile(o, profile, NULL, err)) < 0) goto fail;
  static const char *const text_keys[] = {"image", "name", "memory", "cpus", "timeout",
                                          "exec_timeout", "workdir", "max_output", "disk"};
  for (size_t i = 0; i < sizeof text_keys / sizeof text_keys[0]; i++) {
    const char *v = an_api_in_str(in, text_keys[i]);
    if (v && (r = an_sandbox_opts_set_option(o, text_keys[i], v, err)) < 0) {
      an_error_prefix(err, "create: \"%s\"", text_keys[i]);
      goto fail;
    }
  }
  int64_t pids = an_api_in_int(in, "pids", 0);
  if (pids > 0 && (r = an_sandbox_opts_set_pids(o, (uint64_t) pids, err)) < 0) goto fail;
  yajl_val env = an_api_in_object(in, "env");
  for (size_t i = 0; env && i < env->u.object.len; i++) {
    yajl_val v = env->u.object.values[i];
    char *kv = NULL;
    if (asprintf(&kv, "%s=%s", env->u.object.keys[i], YAJL_IS_STRING(v) ? v->u.string : "") < 0) {
      r = an_error_set(err, ENOMEM, "create: env");
      goto fail;
    }
    r = an_sandbox_opts_add_env(o, kv, err);
    free(kv);
    if (r < 0) { an_error_prefix(err, "create: \"env\""); goto fail; }
  }
  yajl_val secrets = an_api_in_object(in, "secrets");
  for (size_t i = 0; secrets && i < secrets->u.object.len; i++) {
    yajl_val v = secrets->u.object.values[i];
    if ((r = an_sandbox_opts_add_secret(o, secrets->u.object.keys[i], YAJL_IS_STRING(v) ? v->u.string : "",
                                        err)) < 0) {
      an_error_prefix(err, "create: \"secrets\"");
      goto fail;
    }
  }
  /* egress: a pinned profile decides it (a client may not widen what the operator chose) */
  const char *network = an_api_in_str(in, "network");
  yajl_val allow = an_api_in_array(in, "allow");
  if (ctx->profile && (network || allow)) {
    r = an_error_set(err, EPERM, "create: this server runs every sandbox with profile \"%s\"; "
                     "\"network\" and \"allow\" may not be given", ctx->profile);
    goto fail;
  }
  if (network && (r = an_sandbox_opts_set_network(o, network, err)) < 0) {
    an_error_prefix(err, "create: \"network\"");
    goto fail;
  }
  for (size_t i = 0; allow && i < allow->u.array.len; i++) {
    yajl_val v = allow->u.array.values[i];
    if ((r = an_sandbox_opts_add_allow(o, YAJL_IS_STRING(v) ? v->u.string : "", err)) < 0) {
      an_error_prefix(err, "create: \"allow\"[%zu]", i);
      goto fail;
    }
  }
  if (!an_sandbox_opts_image(o) && (r = an_sandbox_opts_set_image(o, "python", err)) < 0) goto fail;
  if (ctx->max_lifetime_ms && an_sandbox_opts_lifetime(o) > ctx->max_lifetime_ms &&
      (r = an_sandbox_opts_set_lifetime(o, ctx->max_lifetime_ms, err)) < 0)
    goto fail;
  /* extend is bounded by max_lifetime: the server's cap bounds it too */
  if (ctx->max_lifetime_ms && an_sandbox_opts_max_lifetime(o) > ctx->max_lifetime_ms &&
      (r = an_sandbox_opts_set_max_lifetime(o, ctx->max_lifetime_ms, err)) < 0)
    goto fail;
  *out = o;
  return 0;
fail:
  an_sandbox_opts_free(o);
  return r;
}

static void gen_created(yajl_gen out, struct an_sandbox *sb) {
  yajl_gen_map_open(out);
  an_api_gen_kv_str(out, "id", an_sandbox_id(sb));
  an_api_gen_kv_str(out, "name", an_sandbox_name(sb));
  an_api_gen_kv_str(out, "image", an_sandbox_opts_image(an_sandbox_get_opts(sb)));
  an_api_gen_kv_int(out, "deadline_ms", (int64_t) an_sandbox_deadline_ms(sb));
  yajl_gen_map_close(out);
}

int an_api_op_create(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  struct an_sandbox_opts *o = NULL;
  int r = create_opts(c, in, &o, err);
  if (r < 0) return r;
  struct an_sandbox *sb = NULL;
  /* with a lifeline this worker stays as the sandbox's owner (api.h) */
  if (c->ctx->lifeline_fd >= 0) r = an_sandbox_create_owned(c->ctx->store_root, o, &sb, err);
  else r = an_sandbox_create(c->ctx->store_root, o, &sb, err);
  an_sandbox_opts_free(o);
  if (r < 0) return r;
  c->keep_alive = c->ctx->lifeline_fd >= 0;
  gen_created(out, sb);
  an_sandbox_close(sb);
  return 0;
}

/* The id of the dead sandbox named name that ctx->may_use allows, into id; false: none. */
static bool dead_by_name(const struct an_api_ctx *ctx, const char *name, char id[AN_SANDBOX_ID_LEN + 1]) {
  struct an_sandbox_info *l = NULL;
  size_t n = 0;
  an_error_t e = NULL;
  bool found = false;
  if (name && an_sandbox_list(ctx->store_root, &l, &n, &e) >= 0)
    for (size_t i = 0; i < n && !found; i++)
      if (l[i].name && !strcmp(l[i].name, name) && l[i].status && !strcmp(l[i].status, "dead") &&
          ctx->may_use(ctx->may_use_data, l[i].id)) {
        snprintf(id, AN_SANDBOX_ID_LEN + 1, "%s", l[i].id);
        found = true;
      }
  an_sandbox_info_list_free(l, n);
  an_error_free(&e);
  return found;
}

int an_api_op_destroy(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  struct an_sandbox *sb = NULL;
  char id[AN_SANDBOX_ID_LEN + 1];
  int r = an_api_open_sandbox(c, in, &sb, err);
  const char *target = an_api_in_str(in, "sandbox");
  char dead_id[AN_SANDBOX_ID_LEN + 1];
  if (r == -ENOENT && c->ctx->may_use && dead_by_name(c->ctx, target, dead_id)) {
    /* a name of a dead sandbox the client may use: an_api_open_sandbox tells every failure by
     * name as unknown (serve, mcp), so a token could destroy its dead sandbox by id only */
    r = -ESRCH;
    target = dead_id;
  }
  if (r == -ESRCH) {   /* dead (the caller may use it: an_api_open_sandbox checked, or dead_by_name) */
    an_error_free(err);
    r = an_sandbox_destroy_dead_ctx(c->ctx->lib, c->ctx->store_root, target, id, err);
  } else if (r >= 0) {
    snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
    r = an_sandbox_destroy(sb, (uint64_t) an_api_in_int(in, "grace_ms", 1000), err);
    an_sandbox_close(sb);
  }
  if (r < 0) return r;
  yajl_gen_map_open(out);
  an_api_gen_kv_str(out, "id", id);
  an_api_gen_kv_bool(out, "destroyed", true);
  yajl_gen_map_close(out);
  return 0;
}

int an_api_op_ls(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  struct an_sandbox_info *l = NULL;
  size_t n = 0;
  int r = an_sandbox_list(c->ctx->store_root, &l, &n, err);
  if (r < 0) return r;
  yajl_gen_map_open(out);
  an_api_gen_key(out, "sandboxes");
  yajl_gen_array_open(out);
  for (size_t i = 0; i < n; i++) {
    if (c->ctx->may_use && !c->ctx->may_use(c->ctx->may_use_data, l[i].id)) continue;
    yajl_gen_map_open(out);
    an_api_gen_kv_str(out, "id", l[i].id);
    an_api_gen_kv_str(out, "name", l[i].name);
    an_api_gen_kv_str(out, "image", l[i].image);
    an_api_gen_kv_str(out, "status", l[i].status);
    an_api_gen_kv_int(out, "created_ms", (int64_t) l[i].created_ms);
    an_api_gen_kv_int(out, "deadline_ms", (int64_t) l[i].deadline_ms);
    yajl_gen_map_close(out);
  }
  yajl_gen_array_close(out);
  yajl_gen_map_close(out);
  an_sandbox_info_list_free(l, n);
  return 0;
}

int an_api_op_inspect(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  struct an_sandbox *sb = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r < 0) return r;
  char *json = NULL;
  r = an_sandbox_inspect(sb, &json, err);
  an_sandbox_close(sb);
  if (r < 0) return r;
  yajl_val v = NULL;
  r = an_json_parse(json, strlen(json), "inspect", &v, err);
  free(json);
  if (r < 0) return r;
  an_api_gen_value(out, v);
  yajl_tree_free(v);
  return 0;
}

int an_api_op_fork(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  struct an_sandbox *sb = NULL, *copy = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r < 0) return r;
  r = an_sandbox_fork(sb, &copy, err);
  an_sandbox_close(sb);
  if (r < 0) return r;
  gen_created(out, copy);
  an_sandbox_close(copy);
  return 0;
}

struct events_out { yajl_gen g; };

static int on_event(void *data, const char *json) {
  struct events_out *e = data;
  yajl_val v = NULL;
  an_error_t err = NULL;
  if (an_json_parse(json, strlen(json), "event", &v, &err) < 0) {
    an_error_free(&err);
    return 0;   /* a torn last line: skipped */
  }
  an_api_gen_value(e->g, v);
  yajl_tree_free(v);
  return 0;
}

int an_api_op_events(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  struct an_sandbox *sb = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r < 0) return r;
  char id[AN_SANDBOX_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  an_sandbox_close(sb);
  struct events_out e = {out};
  yajl_gen_map_open(out);
  an_api_gen_key(out, "events");
  yajl_gen_array_open(out);
  r = an_sandbox_events(c->ctx->store_root, id, false, on_event, &e, err);
  if (r < 0) return r;
  yajl_gen_array_close(out);
  yajl_gen_map_close(out);
  return 0;
}
