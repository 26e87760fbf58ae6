/* api/ops_network.c — the egress, lifetime and audit operations of the
 * table: network (policy + counters), network_change, extend, audit
 * (agentnest/sandbox.h an_sandbox_network_json / an_sandbox_network_change
 * / an_sandbox_extend, agentnest/audit.h an_audit_read).  audit gives only
 * the records of sandboxes this client may use (ctx->may_use). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "agentnest/audit.h"
#include "api_internal.h"
#include "util/json_tree.h"
#include "util/units.h"

/* Emit the JSON text `json` (an object made by the library) to out. */
static int gen_json_text(yajl_gen out, char *json, const char *what, an_error_t *err) {
  yajl_val v = NULL;
  int r = an_json_parse(json, strlen(json), what, &v, err);
  free(json);
  if (r < 0) return r;
  an_api_gen_value(out, v);
  yajl_tree_free(v);
  return 0;
}

int an_api_op_network(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  struct an_sandbox *sb = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r < 0) return r;
  char *json = NULL;
  r = an_sandbox_network_json(sb, &json, err);
  an_sandbox_close(sb);
  if (r < 0) return r;
  return gen_json_text(out, json, "network", err);
}

/* The strings of array member `key` (validated: strings), a NULL-terminated
 * heap vector of borrowed pointers; *n its length. */
static const char **strings_of(yajl_val in, const char *key, size_t *n) {
  yajl_val a = an_api_in_array(in, key);
  size_t len = a ? a->u.array.len : 0;
  const char **v = calloc(len + 1, sizeof *v);
  if (!v) return NULL;
  *n = 0;
  for (size_t i = 0; i < len; i++)
    if (YAJL_IS_STRING(a->u.array.values[i])) v[(*n)++] = a->u.array.values[i]->u.string;
  return v;
}

int an_api_op_network_change(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  const char *mode = an_api_in_str(in, "mode");
  size_t nallow = 0, ndeny = 0;
  const char **allow = strings_of(in, "allow", &nallow), **deny = strings_of(in, "deny", &ndeny);
  int r;
  if (!allow || !deny) {
    r = an_error_set(err, ENOMEM, "network_change");
    goto out;
  }
  if (!mode && !nallow && !ndeny) {
    r = an_error_set(err, EINVAL, "network_change: give \"mode\", \"allow\" or \"deny\"");
    goto out;
  }
  struct an_sandbox *sb = NULL;
  if ((r = an_api_open_sandbox(c, in, &sb, err)) < 0) goto out;
  char *json = NULL;
  r = an_sandbox_network_change(sb, mode, allow, nallow, deny, ndeny, err);
  if (r == 0) r = an_sandbox_network_json(sb, &json, err);
  an_sandbox_close(sb);
  if (r == 0) r = gen_json_text(out, json, "network", err);
out:
  free(allow);
  free(deny);
  return r;
}

int an_api_op_extend(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  const char *by = an_api_in_str(in, "by");
  uint64_t ms = 0;
  int r;
  if (!by) return an_error_set(err, EINVAL, "extend: \"by\" is required");
  if ((r = an_parse_duration_ms(by, &ms, err)) < 0 || !ms) {
    if (!r) r = an_error_set(err, EINVAL, "must be more than 0");
    an_error_prefix(err, "extend: \"by\" %s", by);
    return r;
  }
  struct an_sandbox *sb = NULL;
  if ((r = an_api_open_sandbox(c, in, &sb, err)) < 0) return r;
  uint64_t deadline = 0;
  r = an_sandbox_extend(sb, ms, &deadline, err);
  if (r == 0) {
    yajl_gen_map_open(out);
    an_api_gen_kv_str(out, "id", an_sandbox_id(sb));
    an_api_gen_kv_int(out, "deadline_ms", (int64_t) deadline);
    yajl_gen_map_close(out);
  }
  an_sandbox_close(sb);
  return r;
}

struct audit_out {
  struct an_api_call *call;
  yajl_gen g;
  int64_t limit, n;
};

/* Whether record v concerns a sandbox of this client ("sandbox", "child"
 * or "parent" one of its ids); records of no sandbox are the operator's. */
static bool audit_mine(struct an_api_call *c, yajl_val v) {
  bool (*may)(void *, const char *) = c->ctx->may_audit ? c->ctx->may_audit : c->ctx->may_use;
  void *data = c->ctx->may_audit ? c->ctx->may_audit_data : c->ctx->may_use_data;
  if (!may) return true;
  static const char *const keys[] = {"sandbox", "child", "parent"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const char *path[] = {keys[i], NULL};
    yajl_val s = yajl_tree_get(v, path, yajl_t_string);
    if (s && may(data, s->u.string)) return true;
  }
  return false;
}

static int on_audit(void *data, const char *json) {
  struct audit_out *a = data;
  yajl_val v = NULL;
  an_error_t e = NULL;
  if (an_json_parse(json, strlen(json), "audit record", &v, &e) < 0) {
    an_error_free(&e);
    return 0;
  }
  if (audit_mine(a->call, v)) {
    an_api_gen_value(a->g, v);
    a->n++;
  }
  yajl_tree_free(v);
  return a->limit && a->n >= a->limit;
}

int an_api_op_audit(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  struct an_audit_filter f = {.op = an_api_in_str(in, "op")};
  const char *since = an_api_in_str(in, "since");
  char id[AN_SANDBOX_ID_LEN + 1] = "";
  int r;
  if (since) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t now_ms = (uint64_t) now.tv_sec * 1000 + (uint64_t) now.tv_nsec / 1000000;
    if ((r = an_audit_parse_since(since, now_ms, &f.since_ms, err)) < 0) {
      an_error_prefix(err, "audit: \"since\"");
      return r;
    }
  }
  const char *want = an_api_in_str(in, "sandbox");
  if (want && c->ctx->may_audit && c->ctx->may_audit(c->ctx->may_audit_data, want)) {
    f.sandbox = want;   /* an id it created, maybe destroyed since */
  } else if (want) {
    struct an_sandbox *sb = NULL;
    if ((r = an_api_open_sandbox(c, in, &sb, err)) < 0) return r;
    snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
    an_sandbox_close(sb);
    f.sandbox = id;
  }
  struct audit_out a = {c, out, an_api_in_int(in, "limit", 0), 0};
  yajl_gen_map_open(out);
  an_api_gen_key(out, "records");
  yajl_gen_array_open(out);
  r = an_audit_read(c->ctx->store_root, &f, on_audit, &a, err);
  if (r < 0) return r;
  yajl_gen_array_close(out);
  yajl_gen_map_close(out);
  return 0;
}
