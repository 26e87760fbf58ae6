/* sandbox/approval_opts.c — the sandbox options of approval hooks
 * (agentnest/approval.h): approve_with and approval_timeout as setters,
 * generic options, profile keys, members of options.json, and the check
 * at create that the hook exists.  What does NOT live here: asking the hook
 * (approval.c). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest/approval.h"
#include "sandbox/approval_internal.h"
#include "sandbox/opts_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"
#include "util/units.h"

int an_sandbox_opts_set_approve_with(struct an_sandbox_opts *o, const char *hook, an_error_t *err) {
  if (!hook || !*hook) return an_error_set(err, EINVAL, "approve_with: empty");
  if (strlen(hook) >= PATH_MAX) return an_error_set(err, EINVAL, "approve_with: longer than PATH_MAX");
  char *v = NULL;
  if (!strncmp(hook, "unix:", 5)) {
    if (hook[5] != '/')
      return an_error_set(err, EINVAL, "approve_with \"%s\": unix:PATH needs an absolute PATH", hook);
    v = strdup(hook);
  } else if (hook[0] == '/') {
    v = strdup(hook);
  } else {
    v = realpath(hook, NULL);
    if (!v) return an_error_set(err, errno, "approve_with %s", hook);
  }
  if (!v) return an_error_set(err, ENOMEM, "approve_with");
  free(o->approve_with);
  o->approve_with = v;
  return 0;
}

int an_sandbox_opts_set_approval_timeout(struct an_sandbox_opts *o, uint64_t ms, an_error_t *err) {
  if (ms == 0 || ms > AN_APPROVAL_TIMEOUT_MAX_MS)
    return an_error_set(err, EINVAL, "approval_timeout %llums: must be 1ms .. %us",
                        (unsigned long long) ms, AN_APPROVAL_TIMEOUT_MAX_MS / 1000);
  o->approval_timeout_ms = ms;
  return 0;
}

const char *an_sandbox_opts_approve_with(const struct an_sandbox_opts *o) { return o->approve_with; }

uint64_t an_sandbox_opts_approval_timeout(const struct an_sandbox_opts *o) {
  return o->approval_timeout_ms ? o->approval_timeout_ms : AN_APPROVAL_DEFAULT_TIMEOUT_MS;
}

bool an_sb_approval_set_option(struct an_sandbox_opts *o, const char *option, const char *text, int *r,
                               an_error_t *err) {
  if (!strcmp(option, "approve_with")) {
    *r = an_sandbox_opts_set_approve_with(o, text, err);
    return true;
  }
  if (!strcmp(option, "approval_timeout")) {
    uint64_t ms = 0;
    *r = an_parse_duration_ms(text ? text : "", &ms, err);
    if (*r >= 0) *r = an_sandbox_opts_set_approval_timeout(o, ms, err);
    return true;
  }
  return false;
}

bool an_sb_approval_profile_key(struct an_sandbox_opts *o, const char *profile_path, const char *key,
                                struct yajl_val_s *v, int *r, an_error_t *err) {
  if (!strcmp(key, "approve_with")) {
    if (!YAJL_IS_STRING(v)) {
      *r = an_error_set(err, EINVAL, "key \"approve_with\": expected a string");
      return true;
    }
    const char *s = YAJL_GET_STRING(v);
    cleanup_free char *joined = NULL;
    if (*s && s[0] != '/' && strncmp(s, "unix:", 5)) {   /* relative to the profile's directory */
      cleanup_free char *copy = strdup(profile_path);
      if (!copy || asprintf(&joined, "%s/%s", dirname(copy), s) < 0) {
        joined = NULL;
        *r = an_error_set(err, ENOMEM, "key \"approve_with\"");
        return true;
      }
      s = joined;
    }
    *r = an_sandbox_opts_set_approve_with(o, s, err);
    if (*r < 0) an_error_prefix(err, "key \"approve_with\"");
    return true;
  }
  if (!strcmp(key, "approval_timeout")) {
    const char *text = YAJL_IS_STRING(v) ? YAJL_GET_STRING(v) : YAJL_IS_NUMBER(v) ? YAJL_GET_NUMBER(v) : NULL;
    if (!text) {
      *r = an_error_set(err, EINVAL, "key \"approval_timeout\": expected a duration (\"5s\" or seconds)");
      return true;
    }
    an_sb_approval_set_option(o, "approval_timeout", text, r, err);
    if (*r < 0) an_error_prefix(err, "key \"approval_timeout\"");
    return true;
  }
  return false;
}

void an_sb_approval_opts_gen(struct an_jgen *j, const struct an_sandbox_opts *o) {
  if (!o->approve_with) return;
  an_jgen_kv_str(j, "approve_with", o->approve_with);
  char buf[32];
  snprintf(buf, sizeof buf, "%llums", (unsigned long long) an_sandbox_opts_approval_timeout(o));
  an_jgen_kv_str(j, "approval_timeout", buf);
}

int an_sb_approval_opts_dup(const struct an_sandbox_opts *o, struct an_sandbox_opts *c) {
  c->approval_timeout_ms = o->approval_timeout_ms;
  if (o->approve_with && !(c->approve_with = strdup(o->approve_with))) return -ENOMEM;
  return 0;
}

void an_sb_approval_opts_free(struct an_sandbox_opts *o) {
  free(o->approve_with);
  o->approve_with = NULL;
}

int an_sb_approval_validate(const struct an_sandbox_opts *o, an_error_t *err) {
  const char *h = o->approve_with;
  if (!h) return 0;
  struct stat st;
  if (!strncmp(h, "unix:", 5)) {
    if (stat(h + 5, &st) < 0) return an_error_set(err, errno, "approval hook %s", h);
    if (!S_ISSOCK(st.st_mode)) return an_error_set(err, ENOTSOCK, "approval hook %s: not a socket", h);
    return 0;
  }
  if (stat(h, &st) < 0) return an_error_set(err, errno, "approval hook %s", h);
  if (!S_ISREG(st.st_mode)) return an_error_set(err, EACCES, "approval hook %s: not a regular file", h);
  if (access(h, X_OK) < 0) return an_error_set(err, errno, "approval hook %s: not executable", h);
  return 0;
}
