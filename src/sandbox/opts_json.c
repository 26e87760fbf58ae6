/* sandbox/opts_json.c — write sandbox options back out as a profile
 * document (util/json_gen) and copy an options object.  The sandbox state store
 * keeps the document so that `inspect` can show and `fork` can reuse the
 * options of a live sandbox; an_sandbox_opts_load_profile reads it back.
 * Secrets are never written. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/sandbox_opts.h"
#include "sandbox/approval_internal.h"
#include "sandbox/opts_internal.h"
#include "util/json_gen.h"

static void kv_ms(struct an_jgen *j, const char *k, uint64_t ms) {
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRIu64 "ms", ms);
  an_jgen_kv_str(j, k, buf);
}

void an_sandbox_opts_gen(struct an_jgen *j, const struct an_sandbox_opts *o) {
  an_jgen_map_open(j);
  if (o->image) an_jgen_kv_str(j, "image", o->image);
  an_jgen_kv_u64(j, "memory", o->memory);
  char cpus[32];
  snprintf(cpus, sizeof cpus, "%" PRIu64 ".%03" PRIu64, o->millicpus / 1000, o->millicpus % 1000);
  an_jgen_kv_str(j, "cpus", cpus);
  an_jgen_kv_u64(j, "pids", o->pids);
  an_jgen_kv_u64(j, "tmp_size", o->tmp_size);
  if (o->tmp_noexec) an_jgen_kv_bool(j, "tmp_noexec", true);
  if (o->shm_size != AN_SANDBOX_SHM_SIZE_DEFAULT) an_jgen_kv_u64(j, "shm_size", o->shm_size);
  kv_ms(j, "timeout", o->lifetime_ms);
  if (o->exec_timeout_ms) kv_ms(j, "exec_timeout", o->exec_timeout_ms);
  if (o->max_lifetime_ms) kv_ms(j, "max_lifetime", o->max_lifetime_ms);
  an_jgen_kv_u64(j, "max_output", o->max_output);
  an_jgen_kv_u64(j, "max_read", o->max_read);
  an_jgen_kv_u64(j, "disk", o->disk);
  an_jgen_kv_u64(j, "inodes", o->inodes);
  an_jgen_kv_str(j, "network", o->network);
  an_jgen_kv_str(j, "workdir", o->workdir);
  an_jgen_kv_str(j, "seccomp_profile", o->seccomp_profile);
  if (o->seccomp_unsafe) an_jgen_kv_bool(j, "seccomp_unsafe", true);
  an_jgen_kv_str(j, "landlock", an_sandbox_landlock_name(o->landlock));
  an_jgen_key(j, "env");
  an_jgen_array_open(j);
  for (char **e = o->env; e && *e; e++) an_jgen_str(j, *e);
  an_jgen_array_close(j);
  an_sb_cdi_opts_gen(j, o);
  an_sb_approval_opts_gen(j, o);
  an_sb_egress_opts_gen(j, o);
  an_jgen_map_close(j);
}

int an_sandbox_opts_to_json(const struct an_sandbox_opts *o, char **json, an_error_t *err) {
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return an_error_set(err, ENOMEM, "sandbox options to JSON");
  an_jgen_validate_utf8(&j);
  an_sandbox_opts_gen(&j, o);
  int r = an_jgen_finish(&j, json, NULL);
  if (r == -EINVAL)   /* only invalid UTF-8 in a string can fail here */
    return an_error_set(err, EINVAL, "sandbox options to JSON: yajl_gen status %d "
                        "(a string is not valid UTF-8)", (int) j.st);
  if (r < 0) return an_error_set(err, -r, "sandbox options to JSON");
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
    .tmp_noexec = o->tmp_noexec, .shm_size = o->shm_size,
    .lifetime_ms = o->lifetime_ms, .exec_timeout_ms = o->exec_timeout_ms,
    .max_lifetime_ms = o->max_lifetime_ms,
    .max_output = o->max_output, .max_read = o->max_read, .disk = o->disk, .inodes = o->inodes,
    .uid = o->uid, .gid = o->gid, .seccomp_unsafe = o->seccomp_unsafe, .landlock = o->landlock,
    .cdi_allow_hooks = o->cdi_allow_hooks, .ctx = o->ctx,
  };
  if (dup_opt_str(&c->image, o->image) < 0 || dup_opt_str(&c->name, o->name) < 0 ||
      dup_opt_str(&c->profile, o->profile) < 0 || dup_opt_str(&c->workdir, o->workdir) < 0 ||
      dup_opt_str(&c->network, o->network) < 0 ||
      dup_opt_str(&c->seccomp_profile, o->seccomp_profile) < 0 ||
      dup_opt_str(&c->seccomp_default, o->seccomp_default) < 0 || dup_strv(&c->env, o->env) < 0 ||
      dup_strv(&c->secret_names, o->secret_names) < 0 ||
      dup_strv(&c->secret_values, o->secret_values) < 0 ||
      dup_strv(&c->cdi_devices, o->cdi_devices) < 0 ||
      dup_strv(&c->cdi_spec_dirs, o->cdi_spec_dirs) < 0 || an_sb_approval_opts_dup(o, c) < 0 ||
      dup_strv(&c->egress_allow, o->egress_allow) < 0 || dup_strv(&c->dns_upstream, o->dns_upstream) < 0) {
    an_sandbox_opts_free(c);
    return an_error_set(err, ENOMEM, "copy sandbox options");
  }
  *out = c;
  return 0;
}
