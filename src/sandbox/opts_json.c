/* sandbox/opts_json.c — write sandbox options back out as a profile
 * document (yajl_gen) and copy an options object.  The sandbox state store
 * keeps the document so that `inspect` can show and `fork` can reuse the
 * options of a live sandbox; an_sandbox_opts_load_profile reads it back.
 * Secrets are never written. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include "agentnest/sandbox_opts.h"
#include "sandbox/opts_internal.h"
#include "util/cleanup.h"

struct gen {
  yajl_gen g;
  yajl_gen_status st;
};

static void chk(struct gen *g, yajl_gen_status s) { if (g->st == yajl_gen_status_ok) g->st = s; }
static void str(struct gen *g, const char *s) {
  chk(g, yajl_gen_string(g->g, (const unsigned char *) s, strlen(s)));
}
static void kv_str(struct gen *g, const char *k, const char *v) { str(g, k); str(g, v); }
static void kv_u64(struct gen *g, const char *k, uint64_t v) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%" PRIu64, v);
  str(g, k);
  chk(g, yajl_gen_number(g->g, buf, (size_t) n));
}
static void kv_ms(struct gen *g, const char *k, uint64_t ms) {
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRIu64 "ms", ms);
  kv_str(g, k, buf);
}

int an_sandbox_opts_to_json(const struct an_sandbox_opts *o, char **json, an_error_t *err) {
  struct gen g = {yajl_gen_alloc(NULL), yajl_gen_status_ok};
  if (!g.g) return an_error_set(err, ENOMEM, "sandbox options to JSON");
  yajl_gen_config(g.g, yajl_gen_beautify, 1);
  yajl_gen_config(g.g, yajl_gen_validate_utf8, 1);
  chk(&g, yajl_gen_map_open(g.g));
  if (o->image) kv_str(&g, "image", o->image);
  kv_u64(&g, "memory", o->memory);
  char cpus[32];
  snprintf(cpus, sizeof cpus, "%" PRIu64 ".%03" PRIu64, o->millicpus / 1000, o->millicpus % 1000);
  kv_str(&g, "cpus", cpus);
  kv_u64(&g, "pids", o->pids);
  kv_u64(&g, "tmp_size", o->tmp_size);
  kv_ms(&g, "timeout", o->lifetime_ms);
  if (o->exec_timeout_ms) kv_ms(&g, "exec_timeout", o->exec_timeout_ms);
  kv_u64(&g, "max_output", o->max_output);
  kv_u64(&g, "max_read", o->max_read);
  kv_str(&g, "network", o->network);
  kv_str(&g, "workdir", o->workdir);
  kv_str(&g, "seccomp_profile", o->seccomp_profile);
  str(&g, "env");
  chk(&g, yajl_gen_array_open(g.g));
  for (char **e = o->env; e && *e; e++) str(&g, *e);
  chk(&g, yajl_gen_array_close(g.g));
  chk(&g, yajl_gen_map_close(g.g));
  const unsigned char *buf = NULL;
  size_t len = 0;
  if (g.st == yajl_gen_status_ok) chk(&g, yajl_gen_get_buf(g.g, &buf, &len));
  char *out = g.st == yajl_gen_status_ok ? strndup((const char *) buf, len) : NULL;
  int st = g.st;
  yajl_gen_free(g.g);
  if (st != yajl_gen_status_ok)   /* only invalid UTF-8 in a string can fail here */
    return an_error_set(err, EINVAL, "sandbox options to JSON: yajl_gen status %d "
                        "(a string is not valid UTF-8)", st);
  if (!out) return an_error_set(err, ENOMEM, "sandbox options to JSON");
  *json = out;
  return 0;
}

static int dup_strv(char ***dst, char **src) {
  if (!src) return 0;
  size_t n = 0;
  while (src[n]) n++;
  char **v = calloc(n + 1, sizeof *v);
  if (!v) return -ENOMEM;
  *dst = v;
  for (size_t i = 0; i < n; i++)
    if (!(v[i] = strdup(src[i]))) return -ENOMEM;
  return 0;
}

static int dup_opt_str(char **dst, const char *src) {
  if (!src) return 0;
  *dst = strdup(src);
  return *dst ? 0 : -ENOMEM;
}

int an_sandbox_opts_dup(const struct an_sandbox_opts *o, struct an_sandbox_opts **out, an_error_t *err) {
  struct an_sandbox_opts *c = calloc(1, sizeof *c);
  if (!c) return an_error_set(err, ENOMEM, "copy sandbox options");
  *c = (struct an_sandbox_opts){
    .memory = o->memory, .millicpus = o->millicpus, .pids = o->pids, .tmp_size = o->tmp_size,
    .lifetime_ms = o->lifetime_ms, .exec_timeout_ms = o->exec_timeout_ms,
    .max_output = o->max_output, .max_read = o->max_read, .uid = o->uid, .gid = o->gid,
  };
  if (dup_opt_str(&c->image, o->image) < 0 || dup_opt_str(&c->name, o->name) < 0 ||
      dup_opt_str(&c->profile, o->profile) < 0 || dup_opt_str(&c->workdir, o->workdir) < 0 ||
      dup_opt_str(&c->network, o->network) < 0 ||
      dup_opt_str(&c->seccomp_profile, o->seccomp_profile) < 0 || dup_strv(&c->env, o->env) < 0 ||
      dup_strv(&c->secret_names, o->secret_names) < 0 ||
      dup_strv(&c->secret_values, o->secret_values) < 0) {
    an_sandbox_opts_free(c);
    return an_error_set(err, ENOMEM, "copy sandbox options");
  }
  *out = c;
  return 0;
}
