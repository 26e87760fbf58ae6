/* engine/spec_parse_seccomp.c — linux.seccomp of config.json into
 * struct an_spec_seccomp: defaultAction/defaultErrnoRet, architectures,
 * flags, listenerPath/listenerMetadata, syscalls[] (names, action, errnoRet,
 * args).  The top-level fields, a rule's names/action/errnoRet/args and
 * the architecture reader are shared with the Docker profile loader
 * (seccomp_profile.c).
 * Standard: runtime-spec config-linux.md "Seccomp"; seccomp_rule_add(3).
 * Syscall names are kept as written: resolving them (and skipping names
 * this libseccomp does not know) is the engine's job at load time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <seccomp.h>
#include "agentnest/spec.h"
#include "engine/spec_internal.h"
#include "engine/spec_names.h"

#define AN_MAX_ERRNO 4095   /* the kernel clamps SECCOMP_RET_ERRNO data to MAX_ERRNO */

/* `action` (a SCMP_ACT_* name) and optional `errno_ret` (may be NULL) into
 * a folded libseccomp action; errnoRet defaults to EPERM as in runc. */
static int parse_action(yajl_val action, const char *action_path, yajl_val errno_ret,
                        const char *errno_path, uint32_t *out, bool *has_errno_ret,
                        unsigned *errno_out, an_error_t *err) {
  if (!action) return an_json_error(err, action_path, "is required");
  if (!YAJL_IS_STRING(action)) return an_json_error(err, action_path, "must be a string");
  uint32_t a;
  if (an_seccomp_action_from_name(action->u.string, &a) < 0)
    return an_json_error(err, action_path, "unknown action \"%s\"", action->u.string);
  unsigned e = EPERM;   /* runc's default for SCMP_ACT_ERRNO and SCMP_ACT_TRACE */
  *has_errno_ret = false;
  if (errno_ret) {
    uint64_t n;
    int r = an_json_get_u64(errno_ret, errno_path, AN_MAX_ERRNO, &n, err);
    if (r < 0) return r;
    if (!an_seccomp_action_takes_errno(a))
      return an_json_error(err, errno_path, "only valid with SCMP_ACT_ERRNO or SCMP_ACT_TRACE, "
                           "not %s", action->u.string);
    e = (unsigned) n;
    *has_errno_ret = true;
  }
  if (an_seccomp_action_takes_errno(a)) {
    a |= e;
    *errno_out = e;
  } else {
    *errno_out = 0;
  }
  *out = a;
  return 0;
}

int an_spec_parse_seccomp_arches(yajl_val v, const char *path, uint32_t **out, size_t *n,
                                 an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(*out, *n, v->u.array.len, path, err)) < 0) return r;
  for (size_t i = 0; i < v->u.array.len; i++) {
    yajl_val x = v->u.array.values[i];
    an_json_path_index(sub, path, i);
    if (!YAJL_IS_STRING(x)) return an_json_error(err, sub, "must be a string");
    if (an_seccomp_arch_from_name(x->u.string, &(*out)[i]) < 0)
      return an_json_error(err, sub, "unknown architecture \"%s\"", x->u.string);
  }
  return 0;
}

static int parse_args(yajl_val v, const char *path, struct an_spec_seccomp_syscall *sc,
                      an_error_t *err) {
  char item[AN_JSON_PATH_MAX], sub[AN_JSON_PATH_MAX];
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  if ((r = AN_SPEC_ALLOC_ARRAY(sc->args, sc->n_args, v->u.array.len, path, err)) < 0) return r;
  for (size_t i = 0; i < v->u.array.len; i++) {
    yajl_val a = v->u.array.values[i];
    struct an_spec_seccomp_arg *arg = &sc->args[i];
    an_json_path_index(item, path, i);
    if ((r = an_json_want_object(a, item, err)) < 0) return r;
    uint64_t n;
    if ((r = an_spec_req_u64(a, item, "index", 5, &n, err)) < 0) return r;   /* six arguments */
    arg->index = (unsigned) n;
    if ((r = an_spec_req_u64(a, item, "value", UINT64_MAX, &arg->value, err)) < 0) return r;
    yajl_val x;
    if ((x = an_json_member(a, "valueTwo")) &&
        (r = an_json_get_u64(x, an_json_path_key(sub, item, "valueTwo"), UINT64_MAX,
                             &arg->value_two, err)) < 0)
      return r;
    const char *op;
    if ((r = an_spec_req_string(a, item, "op", sub, &op, err)) < 0) return r;
    if (an_seccomp_op_from_name(op, &arg->op) < 0)
      return an_json_error(err, sub, "unknown operator \"%s\"", op);
  }
  return 0;
}

int an_spec_parse_seccomp_names(yajl_val v, const char *path, char ***out, an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  if (!v) return an_json_error(err, path, "is required");
  int r = an_json_get_strv(v, path, out, err);
  if (r < 0) return r;
  if (!(*out)[0]) return an_json_error(err, path, "must not be empty");
  for (size_t i = 0; (*out)[i]; i++)
    if (!(*out)[i][0])
      return an_json_error(err, an_json_path_index(sub, path, i), "must not be empty");
  return 0;
}

int an_spec_parse_seccomp_rule(yajl_val v, const char *path, struct an_spec_seccomp_syscall *sc,
                               an_error_t *err) {
  char sub[AN_JSON_PATH_MAX], sub2[AN_JSON_PATH_MAX];
  int r = parse_action(an_json_member(v, "action"), an_json_path_key(sub, path, "action"),
                       an_json_member(v, "errnoRet"), an_json_path_key(sub2, path, "errnoRet"),
                       &sc->action, &sc->has_errno_ret, &sc->errno_ret, err);
  if (r < 0) return r;
  yajl_val x = an_json_member(v, "args");
  if (x && (r = parse_args(x, an_json_path_key(sub, path, "args"), sc, err)) < 0) return r;
  return 0;
}

int an_spec_parse_seccomp_top(yajl_val v, const char *path, struct an_spec_seccomp *s,
                              an_error_t *err) {
  char sub[AN_JSON_PATH_MAX], sub2[AN_JSON_PATH_MAX];
  int r = parse_action(an_json_member(v, "defaultAction"),
                       an_json_path_key(sub, path, "defaultAction"),
                       an_json_member(v, "defaultErrnoRet"),
                       an_json_path_key(sub2, path, "defaultErrnoRet"), &s->default_action,
                       &s->has_default_errno_ret, &s->default_errno_ret, err);
  if (r < 0) return r;
  yajl_val x;
  if ((x = an_json_member(v, "flags"))) {
    an_json_path_key(sub, path, "flags");
    if ((r = an_json_get_strv(x, sub, &s->flags, err)) < 0) return r;
    for (size_t i = 0; s->flags[i]; i++)
      if (!an_seccomp_flag_known(s->flags[i]))
        return an_json_error(err, an_json_path_index(sub2, sub, i), "unknown flag \"%s\"",
                             s->flags[i]);
  }
  if ((x = an_json_member(v, "listenerPath")) &&
      (r = an_spec_get_abs_path(x, an_json_path_key(sub, path, "listenerPath"), &s->listener_path,
                                err)) < 0)
    return r;
  if ((x = an_json_member(v, "listenerMetadata")) &&
      (r = an_json_get_string(x, an_json_path_key(sub, path, "listenerMetadata"),
                              &s->listener_metadata, err)) < 0)
    return r;
  return 0;
}

static int parse_syscall(yajl_val v, const char *path, struct an_spec_seccomp_syscall *sc,
                         an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  if ((r = an_spec_parse_seccomp_names(an_json_member(v, "names"),
                                       an_json_path_key(sub, path, "names"), &sc->names, err)) < 0)
    return r;
  return an_spec_parse_seccomp_rule(v, path, sc, err);
}

int an_spec_parse_seccomp(yajl_val v, const char *path, struct an_spec_seccomp *s,
                          an_error_t *err) {
  char sub[AN_JSON_PATH_MAX], sub2[AN_JSON_PATH_MAX];
  int r = an_json_want_object(v, path, err);
  if (r < 0) return r;
  if ((r = an_spec_parse_seccomp_top(v, path, s, err)) < 0) return r;
  yajl_val x;
  if ((x = an_json_member(v, "architectures")) &&
      (r = an_spec_parse_seccomp_arches(x, an_json_path_key(sub, path, "architectures"),
                                        &s->architectures, &s->n_architectures, err)) < 0)
    return r;
  if ((x = an_json_member(v, "syscalls"))) {
    an_json_path_key(sub, path, "syscalls");
    if ((r = an_json_want_array(x, sub, err)) < 0) return r;
    if ((r = AN_SPEC_ALLOC_ARRAY(s->syscalls, s->n_syscalls, x->u.array.len, sub, err)) < 0)
      return r;
    for (size_t i = 0; i < x->u.array.len; i++)
      if ((r = parse_syscall(x->u.array.values[i], an_json_path_index(sub2, sub, i),
                             &s->syscalls[i], err)) < 0)
        return r;
  }
  return 0;
}
