/* engine/seccomp_profile.c — Docker/podman seccomp profile JSON ->
 * struct an_spec_seccomp (see agentnest/seccomp_profile.h).
 *
 * Reuses the runtime-spec seccomp readers (top-level fields, a rule's
 * names/action/errnoRet/args, architectures) so that both formats fold
 * errnos and name errors the same way.  Here:
 * archMap selection, the legacy "name" field and includes/excludes
 * filtering, evaluated for x86_64 without capabilities on the running
 * kernel — as moby's profiles/seccomp setupSeccomp() does.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include "agentnest/seccomp_profile.h"
#include "engine/spec_internal.h"
#include "engine/spec_names.h"
#include "util/cleanup.h"

struct kernel_version { unsigned major, minor; };

/* What a profile is evaluated for. */
struct profile_target {
  uint32_t arch;                    /* SCMP_ARCH_X86_64 */
  struct kernel_version kernel;
};

static bool names_our_arch(const char *name) {
  /* Docker writes Go's GOARCH ("amd64"); accept the kernel's and the
   * libseccomp spelling too. */
  return strcmp(name, "amd64") == 0 || strcmp(name, "x86_64") == 0 ||
         strcmp(name, "SCMP_ARCH_X86_64") == 0;
}

/* "4.8" or "5.10": a major.minor kernel version. */
static int parse_kernel_version(yajl_val v, const char *path, struct kernel_version *kv,
                                an_error_t *err) {
  if (!YAJL_IS_STRING(v)) return an_json_error(err, path, "must be a string");
  char tail;
  if (sscanf(v->u.string, "%u.%u%c", &kv->major, &kv->minor, &tail) != 2)
    return an_json_error(err, path, "\"%s\" is not a major.minor kernel version", v->u.string);
  return 0;
}

static bool kernel_at_least(const struct kernel_version *have, const struct kernel_version *want) {
  return have->major > want->major || (have->major == want->major && have->minor >= want->minor);
}

/* Does rule `v` apply to the target?  *applies is set; errors for malformed
 * filters. */
static int rule_applies(yajl_val v, const char *path, const struct profile_target *t,
                        bool *applies, an_error_t *err) {
  char fpath[AN_JSON_PATH_MAX], sub[AN_JSON_PATH_MAX], item[AN_JSON_PATH_MAX];
  const char *kinds[] = { "excludes", "includes" };
  *applies = true;
  for (int k = 0; k < 2; k++) {
    bool include = k == 1;
    yajl_val f = an_json_member(v, kinds[k]);
    if (!f) continue;
    an_json_path_key(fpath, path, kinds[k]);
    int r = an_json_want_object(f, fpath, err);
    if (r < 0) return r;
    yajl_val x;
    if ((x = an_json_member(f, "arches"))) {
      an_json_path_key(sub, fpath, "arches");
      if ((r = an_json_want_array(x, sub, err)) < 0) return r;
      bool listed = false;
      for (size_t i = 0; i < x->u.array.len; i++) {
        yajl_val a = x->u.array.values[i];
        if (!YAJL_IS_STRING(a))
          return an_json_error(err, an_json_path_index(item, sub, i), "must be a string");
        listed |= names_our_arch(a->u.string);
      }
      if (include ? (x->u.array.len > 0 && !listed) : listed) *applies = false;
    }
    if ((x = an_json_member(f, "caps"))) {
      an_json_path_key(sub, fpath, "caps");
      if ((r = an_json_want_array(x, sub, err)) < 0) return r;
      for (size_t i = 0; i < x->u.array.len; i++)
        if (!YAJL_IS_STRING(x->u.array.values[i]))
          return an_json_error(err, an_json_path_index(item, sub, i), "must be a string");
      /* We hold no capability: a rule that needs one never applies; a rule
       * excluded for holders of one always does. */
      if (include && x->u.array.len > 0) *applies = false;
    }
    if ((x = an_json_member(f, "minKernel"))) {
      struct kernel_version want;
      if ((r = parse_kernel_version(x, an_json_path_key(sub, fpath, "minKernel"), &want, err)) < 0)
        return r;
      bool new_enough = kernel_at_least(&t->kernel, &want);
      if (include ? !new_enough : new_enough) *applies = false;
    }
  }
  return 0;
}

/* Fill sc from rule v (names or name, action, errnoRet, args). */
static int parse_rule(yajl_val v, const char *path, struct an_spec_seccomp_syscall *sc,
                      an_error_t *err) {
  char sub[AN_JSON_PATH_MAX];
  yajl_val names = an_json_member(v, "names"), name = an_json_member(v, "name");
  int r;
  if (names && name)
    return an_json_error(err, path, "has both \"name\" and \"names\"");
  if (name) {
    an_json_path_key(sub, path, "name");
    if (!YAJL_IS_STRING(name)) return an_json_error(err, sub, "must be a string");
    if (!name->u.string[0]) return an_json_error(err, sub, "must not be empty");
    if (!(sc->names = calloc(2, sizeof *sc->names)) || !(sc->names[0] = strdup(name->u.string)))
      return an_error_set(err, ENOMEM, "%s", path);
  } else if ((r = an_spec_parse_seccomp_names(names, an_json_path_key(sub, path, "names"),
                                              &sc->names, err)) < 0) {
    return r;
  }
  return an_spec_parse_seccomp_rule(v, path, sc, err);
}

static int parse_syscalls(yajl_val v, const char *path, const struct profile_target *t,
                          struct an_spec_seccomp *s, an_error_t *err) {
  char item[AN_JSON_PATH_MAX];
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  /* Allocate for every rule; those filtered out are not counted. */
  if (v->u.array.len && !(s->syscalls = calloc(v->u.array.len, sizeof *s->syscalls)))
    return an_error_set(err, ENOMEM, "%s", path);
  for (size_t i = 0; i < v->u.array.len; i++) {
    yajl_val rule = v->u.array.values[i];
    an_json_path_index(item, path, i);
    if ((r = an_json_want_object(rule, item, err)) < 0) return r;
    bool applies;
    if ((r = rule_applies(rule, item, t, &applies, err)) < 0) return r;
    /* Parse even a rule that does not apply, so that a typo is an error
     * on every host, not only on those it applies to. */
    struct an_spec_seccomp_syscall *sc = &s->syscalls[s->n_syscalls++];
    if ((r = parse_rule(rule, item, sc, err)) < 0) return r;
    if (!applies) {
      an_strv_free(sc->names);
      free(sc->args);
      memset(sc, 0, sizeof *sc);
      s->n_syscalls--;
    }
  }
  return 0;
}

static int parse_arch_map(yajl_val v, const char *path, const struct profile_target *t,
                          struct an_spec_seccomp *s, an_error_t *err) {
  char item[AN_JSON_PATH_MAX], sub[AN_JSON_PATH_MAX];
  int r = an_json_want_array(v, path, err);
  if (r < 0) return r;
  for (size_t i = 0; i < v->u.array.len; i++) {
    yajl_val e = v->u.array.values[i];
    an_json_path_index(item, path, i);
    if ((r = an_json_want_object(e, item, err)) < 0) return r;
    const char *name;
    if ((r = an_spec_req_string(e, item, "architecture", sub, &name, err)) < 0) return r;
    uint32_t arch;
    if (an_seccomp_arch_from_name(name, &arch) < 0)
      return an_json_error(err, sub, "unknown architecture \"%s\"", name);
    uint32_t *subs = NULL;
    size_t n_subs = 0;
    yajl_val x = an_json_member(e, "subArchitectures");
    if (x && (r = an_spec_parse_seccomp_arches(x, an_json_path_key(sub, item, "subArchitectures"),
                                               &subs, &n_subs, err)) < 0) {
      free(subs);   /* the reader leaves a partial array for its caller to free */
      return r;
    }
    if (arch != t->arch || s->architectures) {   /* first matching entry wins */
      free(subs);
      continue;
    }
    uint32_t *all = calloc(n_subs + 1, sizeof *all);
    if (!all) { free(subs); return an_error_set(err, ENOMEM, "%s", path); }
    all[0] = arch;
    if (n_subs) memcpy(all + 1, subs, n_subs * sizeof *subs);
    free(subs);
    s->architectures = all;
    s->n_architectures = n_subs + 1;
  }
  return 0;
}

static int parse_profile(yajl_val doc, const struct profile_target *t, struct an_spec_seccomp *s,
                         an_error_t *err) {
  int r;
  if (!YAJL_IS_OBJECT(doc)) return an_json_error(err, "", "profile must be a JSON object");
  if ((r = an_spec_parse_seccomp_top(doc, "", s, err)) < 0) return r;
  yajl_val arches = an_json_member(doc, "architectures"), arch_map = an_json_member(doc, "archMap");
  if (arches && arch_map)
    return an_json_error(err, "", "profile gives both \"architectures\" and \"archMap\"");
  if (arches && (r = an_spec_parse_seccomp_arches(arches, "architectures", &s->architectures,
                                                  &s->n_architectures, err)) < 0)
    return r;
  if (arch_map && (r = parse_arch_map(arch_map, "archMap", t, s, err)) < 0) return r;
  yajl_val x;
  if ((x = an_json_member(doc, "syscalls")) && (r = parse_syscalls(x, "syscalls", t, s, err)) < 0)
    return r;
  return 0;
}

static int running_kernel(struct kernel_version *kv, an_error_t *err) {
  struct utsname u;
  if (uname(&u) < 0) return an_error_set(err, errno, "uname: the running kernel's version");
  if (sscanf(u.release, "%u.%u", &kv->major, &kv->minor) != 2)
    return an_error_set(err, EINVAL, "kernel release \"%s\" is not major.minor", u.release);
  return 0;
}

int an_seccomp_profile_parse(const char *json, size_t len, struct an_spec_seccomp **out,
                             an_error_t *err) {
  struct profile_target t = { SCMP_ARCH_X86_64, { 0, 0 } };
  int r = running_kernel(&t.kernel, err);
  if (r < 0) return r;
  yajl_val doc = NULL;
  if ((r = an_json_parse(json, len, "", &doc, err)) < 0) return r;
  struct an_spec_seccomp *s = calloc(1, sizeof *s);
  if (!s) {
    yajl_tree_free(doc);
    return an_error_set(err, ENOMEM, "seccomp profile");
  }
  r = parse_profile(doc, &t, s, err);
  yajl_tree_free(doc);
  if (r < 0) {
    an_spec_seccomp_free(s);
    return r;
  }
  *out = s;
  return 0;
}

int an_seccomp_profile_load(const char *path, struct an_spec_seccomp **out, an_error_t *err) {
  cleanup_free char *buf = NULL;
  size_t len = 0;
  int r = an_json_read_file(path, &buf, &len, err);
  if (r < 0) return r;
  r = an_seccomp_profile_parse(buf, len, out, err);
  if (r < 0) an_error_prefix(err, "%s", path);
  return r;
}
