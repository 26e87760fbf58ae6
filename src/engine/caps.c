/* engine/caps.c — apply process.capabilities (bounding, effective, permitted,
 * inheritable, ambient) with libcap; see engine/caps.h for the contract. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "engine/caps.h"
#include "util/cleanup.h"

static void cap_t_release(cap_t *c) { if (*c) cap_free(*c); }
#define cleanup_cap __attribute__((cleanup(cap_t_release)))

/* The five sets as bit masks; capability numbers are < 64 (cap_last_cap is 40
 * on 6.x kernels; CAP_LAST_CAP in linux/capability.h). */
struct cap_masks { uint64_t bounding, effective, permitted, inheritable, ambient; };

int an_caps_last_cap(int *last, an_error_t *err) {
  static const char path[] = "/proc/sys/kernel/cap_last_cap";
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "open %s", path);
  char buf[16];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n < 0) return an_error_set(err, errno, "read %s", path);
  buf[n] = '\0';
  char *end;
  long v = strtol(buf, &end, 10);
  if (end == buf || v < 0 || v > 63) return an_error_set(err, EINVAL, "%s: unexpected \"%s\"", path, buf);
  *last = (int) v;
  return 0;
}

/* "CAP_CHOWN" -> its number.  -EINVAL for anything else (runc accepts only
 * the upper-case CAP_ names; libcap alone would also take "chown" or "0"). */
static int cap_number(const char *set, const char *name, cap_value_t *v, an_error_t *err) {
  if (strncmp(name, "CAP_", 4) != 0 || !name[4] || cap_from_name(name, v) != 0 || *v < 0 || *v > 63)
    return an_error_set(err, EINVAL, "process.capabilities.%s: unknown capability \"%s\"", set, name);
  for (const char *p = name; *p; p++)
    if (islower((unsigned char) *p))
      return an_error_set(err, EINVAL, "process.capabilities.%s: unknown capability \"%s\"", set, name);
  return 0;
}

/* Fill `mask` from `names`; names above `last` are skipped and, if
 * `unavailable` is given, appended to it. */
static int parse_set(const char *set, char **names, int last, uint64_t *mask,
                     char ***unavailable, size_t *n_unavailable, an_error_t *err) {
  *mask = 0;
  for (size_t i = 0; names && names[i]; i++) {
    cap_value_t v;
    int r = cap_number(set, names[i], &v, err);
    if (r < 0) return r;
    if (v > last) {
      if (unavailable) {
        char **grown = realloc(*unavailable, (*n_unavailable + 2) * sizeof *grown);
        if (!grown) return an_error_set(err, ENOMEM, "capability list");
        *unavailable = grown;
        if (!(grown[*n_unavailable] = strdup(names[i]))) return an_error_set(err, ENOMEM, "capability list");
        grown[++*n_unavailable] = NULL;
      }
      continue;
    }
    *mask |= UINT64_C(1) << v;
  }
  return 0;
}

static int parse_all(const struct an_spec_capabilities *caps, int last, struct cap_masks *m,
                     char ***unavailable, size_t *n_unavailable, an_error_t *err) {
  int r;
  memset(m, 0, sizeof *m);
  if (!caps) return 0;
  if ((r = parse_set("bounding", caps->bounding, last, &m->bounding, unavailable, n_unavailable, err)) < 0 ||
      (r = parse_set("effective", caps->effective, last, &m->effective, unavailable, n_unavailable, err)) < 0 ||
      (r = parse_set("permitted", caps->permitted, last, &m->permitted, unavailable, n_unavailable, err)) < 0 ||
      (r = parse_set("inheritable", caps->inheritable, last, &m->inheritable, unavailable, n_unavailable, err)) < 0 ||
      (r = parse_set("ambient", caps->ambient, last, &m->ambient, unavailable, n_unavailable, err)) < 0)
    return r;
  return 0;
}

int an_caps_check(const struct an_spec_capabilities *caps, char ***unavailable, an_error_t *err) {
  int last, r;
  struct cap_masks m;
  cleanup_strv char **list = NULL;
  size_t n = 0;
  if ((r = an_caps_last_cap(&last, err)) < 0) return r;
  if ((r = parse_all(caps, last, &m, &list, &n, err)) < 0) return r;
  if (unavailable) *unavailable = an_steal(&list);
  return 0;
}

/* Upper-case name of capability `v` for messages ("CAP_SYS_ADMIN"). */
static void cap_label(cap_value_t v, char *buf, size_t len) {
  char *n = cap_to_name(v);
  snprintf(buf, len, "%s", n ? n : "?");
  if (n) cap_free(n);
  for (char *p = buf; *p; p++) *p = (char) toupper((unsigned char) *p);
}

/* Set E, P and I from the masks in one capset(2). */
static int set_proc(uint64_t eff, uint64_t prm, uint64_t inh, int last, an_error_t *err) {
  cleanup_cap cap_t c = cap_init();
  if (!c) return an_error_set(err, errno, "cap_init");
  for (cap_value_t v = 0; v <= last; v++) {
    cap_value_t one[1] = {v};
    if ((eff >> v) & 1) cap_set_flag(c, CAP_EFFECTIVE, 1, one, CAP_SET);
    if ((prm >> v) & 1) cap_set_flag(c, CAP_PERMITTED, 1, one, CAP_SET);
    if ((inh >> v) & 1) cap_set_flag(c, CAP_INHERITABLE, 1, one, CAP_SET);
  }
  if (cap_set_proc(c) < 0) {
    int e = errno;
    char *text = cap_to_text(c, NULL);   /* libcap memory: cap_free, not free */
    an_error_set(err, e, "set capabilities \"%s\"", text ? text : "?");
    if (text) cap_free(text);
    return -e;
  }
  return 0;
}

int an_caps_apply(const struct an_spec_capabilities *caps, an_error_t *err) {
  return an_caps_apply_keeping(caps, 0, err);
}

int an_caps_apply_keeping(const struct an_spec_capabilities *caps, uint64_t keep, an_error_t *err) {
  int last, r;
  struct cap_masks m;
  if ((r = an_caps_last_cap(&last, err)) < 0) return r;
  if ((r = parse_all(caps, last, &m, NULL, NULL, err)) < 0) return r;

  /* After setresuid away from 0 (with keepcaps) the effective set is empty;
   * raise it to the permitted set so CAP_SETPCAP is usable for the drops. */
  {
    cleanup_cap cap_t cur = cap_get_proc();
    if (!cur) return an_error_set(err, errno, "cap_get_proc");
    uint64_t prm = 0, inh = 0;
    for (cap_value_t v = 0; v <= last; v++) {
      cap_flag_value_t fv;
      if (cap_get_flag(cur, v, CAP_PERMITTED, &fv) == 0 && fv == CAP_SET) prm |= UINT64_C(1) << v;
      if (cap_get_flag(cur, v, CAP_INHERITABLE, &fv) == 0 && fv == CAP_SET) inh |= UINT64_C(1) << v;
    }
    if ((r = set_proc(prm, prm, inh, last, err)) < 0) return an_error_prefix(err, "raise effective");
  }

  /* Bounding set: drop everything not listed (prctl(2) PR_CAPBSET_DROP).
   * Dropping a capability that is already gone succeeds, so the set is not
   * read first (one prctl per capability on this hot path, not two); only
   * when a drop fails is it asked whether the capability was there at all. */
  for (cap_value_t v = 0; v <= last; v++) {
    if ((m.bounding >> v) & 1) continue;
    if (cap_drop_bound(v) == 0) continue;
    int e = errno;
    if (cap_get_bound(v) == 0) continue;   /* already gone (no CAP_SETPCAP to drop it again) */
    char label[64];
    cap_label(v, label, sizeof label);
    return an_error_set(err, e, "drop %s from the bounding set", label);
  }

  /* `keep` stays usable until execve, which computes the new sets from
   * bounding, inheritable and ambient only (capabilities(7), "Transformation
   * of capabilities during execve()"), so the program never gets it. */
  if ((r = set_proc(m.effective | keep, m.permitted | keep, m.inheritable, last, err)) < 0) return r;

  /* The kernel raises an ambient capability only if it is permitted and
   * inheritable; runc skips the others (with a warning) and `runc spec`
   * writes ambient without inheritable, so do the same: fewer capabilities,
   * never more. */
  m.ambient &= m.permitted & m.inheritable;
  /* Ambient: clear, then raise each (each must be in permitted and
   * inheritable).  One PR_CAP_AMBIENT_CLEAR_ALL: libcap's cap_reset_ambient()
   * first asks PR_CAP_AMBIENT_IS_SET of every capability.  EINVAL: a kernel
   * without ambient capabilities (before 4.3), nothing to clear. */
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return an_error_set(err, errno, "clear the ambient capability set");
  for (cap_value_t v = 0; v <= last; v++) {
    if (!((m.ambient >> v) & 1)) continue;
    if (cap_set_ambient(v, CAP_SET) < 0) {
      char label[64];
      int e = errno;
      cap_label(v, label, sizeof label);
      return an_error_set(err, e, "raise ambient %s (it must also be permitted and inheritable)",
                          label);
    }
  }
  return 0;
}

int an_caps_keep_for_setuid(an_error_t *err) {
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) return an_error_set(err, errno, "prctl(PR_SET_KEEPCAPS)");
  return 0;
}
