/* engine/cgroup_v1_devices.c — linux.resources.devices on the v1 devices
 * controller (cgroup-v1/devices.rst).
 *
 * The rules (the spec's, then the default allow list of
 * cgroup_devices_default.c) mean "last matching rule wins", as the v2 eBPF
 * program implements them.  v1 instead keeps a default behaviour (allow or
 * deny all) plus a list of exceptions, and a devices.deny write only removes
 * exceptions it names exactly.  So the rules are first replayed here on a
 * model of that state (like runc's devices emulator): a rule of the
 * default's polarity takes its access bits away from the exceptions it
 * covers, a rule of the other polarity adds an exception.  A rule that
 * would have to carve a hole into a broader exception (deny c 1:3 after
 * allow c 1:*, under deny-by-default) cannot be expressed on v1 and fails
 * closed.  The result is written as "a" to devices.deny or devices.allow
 * (which drops every old exception), then one exception per line to the
 * other file.  Changing the default needs a cgroup without children, so
 * this runs at create (and on update only when the update lists devices). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/cgroup_internal.h"
#include "util/cleanup.h"

enum { ACC_R = 1, ACC_W = 2, ACC_M = 4, ACC_ALL = 7 };

struct exception { char type; int64_t major, minor; unsigned access; };

struct model {
  bool allow_all;                 /* default behaviour */
  struct exception *ex;
  size_t n, cap;
};

static unsigned access_bits(const char *a) {
  unsigned m = 0;
  for (a = a ? a : "rwm"; *a; a++) m |= *a == 'r' ? ACC_R : *a == 'w' ? ACC_W : ACC_M;
  return m;
}

/* Does a (type, major, minor) pattern `outer` cover `inner` entirely? */
static bool covers(char ot, int64_t omaj, int64_t omin, const struct exception *in) {
  return (ot == 'a' || ot == in->type) && (omaj < 0 || omaj == in->major) &&
         (omin < 0 || omin == in->minor);
}

static int model_add(struct model *m, const struct exception *e) {
  for (size_t i = 0; i < m->n; i++)
    if (m->ex[i].type == e->type && m->ex[i].major == e->major && m->ex[i].minor == e->minor) {
      m->ex[i].access |= e->access;
      return 0;
    }
  if (m->n == m->cap) {
    size_t nc = m->cap ? m->cap * 2 : 16;
    struct exception *nx = realloc(m->ex, nc * sizeof *nx);
    if (!nx) return -ENOMEM;
    m->ex = nx;
    m->cap = nc;
  }
  m->ex[m->n++] = *e;
  return 0;
}

/* `label`: "linux.resources.devices[3]" or "default device rule 2" */
static int model_apply(struct model *m, const struct an_spec_device_cgroup *d, const char *label,
                       an_error_t *err) {
  char type = d->type ? d->type : 'a';
  unsigned acc = access_bits(d->access);
  if (type == 'a' && d->major < 0 && d->minor < 0) {
    if (acc != ACC_ALL)
      return an_error_set(err, EOPNOTSUPP, "%s: type \"a\" with access \"%s\" cannot be "
                          "expressed by the v1 devices controller", label, d->access);
    m->allow_all = d->allow;      /* reset: the new default, no exceptions */
    m->n = 0;
    return 0;
  }
  struct exception e = {type, d->major, d->minor, acc};
  if (d->allow == m->allow_all) {
    /* same polarity as the default: take these bits from covered exceptions */
    for (size_t i = 0; i < m->n;) {
      struct exception *x = &m->ex[i];
      if (covers(type, d->major, d->minor, x)) {
        x->access &= ~acc;
      } else if ((x->access & acc) && covers(x->type, x->major, x->minor, &e)) {
        return an_error_set(err, EOPNOTSUPP, "%s: %s of %c %" PRId64 ":%" PRId64 " inside a broader "
                            "earlier rule cannot be expressed by the v1 devices controller", label,
                            d->allow ? "allow" : "deny", type,
                            d->major, d->minor);
      }
      if (!x->access) m->ex[i] = m->ex[--m->n];
      else i++;
    }
    return 0;
  }
  if (type == 'a') e.type = 'a';
  if (model_add(m, &e) < 0) return an_error_set(err, ENOMEM, "device rules");
  return 0;
}

static int write_exception(const char *dir, const char *file, const struct exception *x,
                           an_error_t *err) {
  char maj[24] = "*", min[24] = "*", acc[4];
  size_t n = 0;
  if (x->major >= 0) snprintf(maj, sizeof maj, "%" PRId64, x->major);
  if (x->minor >= 0) snprintf(min, sizeof min, "%" PRId64, x->minor);
  if (x->access & ACC_R) acc[n++] = 'r';
  if (x->access & ACC_W) acc[n++] = 'w';
  if (x->access & ACC_M) acc[n++] = 'm';
  acc[n] = '\0';
  /* type "a" with numbers: both c and b */
  if (x->type == 'a') {
    int r = an_cg_writef(err, dir, file, "c %s:%s %s", maj, min, acc);
    return r < 0 ? r : an_cg_writef(err, dir, file, "b %s:%s %s", maj, min, acc);
  }
  return an_cg_writef(err, dir, file, "%c %s:%s %s", x->type, maj, min, acc);
}

int an_cg_v1_devices_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  struct model m = {false, NULL, 0, 0};
  cleanup_free struct exception *owned = NULL;
  int ret = 0;
  char label[64];
  for (size_t i = 0; ret >= 0 && r && i < r->n_devices; i++) {
    snprintf(label, sizeof label, "linux.resources.devices[%zu]", i);
    ret = model_apply(&m, &r->devices[i], label, err);
  }
  for (size_t i = 0; ret >= 0 && i < an_cg_n_default_device_rules; i++) {
    snprintf(label, sizeof label, "default device rule %zu", i);
    ret = model_apply(&m, &an_cg_default_device_rules[i], label, err);
  }
  owned = m.ex;
  if (ret < 0) return ret;
  if ((ret = an_cg_write(dir, m.allow_all ? "devices.allow" : "devices.deny", "a", err)) < 0) return ret;
  const char *file = m.allow_all ? "devices.deny" : "devices.allow";
  for (size_t i = 0; i < m.n; i++)
    if ((ret = write_exception(dir, file, &m.ex[i], err)) < 0) return ret;
  return 0;
}
