/* engine/cgroup_v1_devices.c — linux.resources.devices on the v1 devices
 * controller (cgroup-v1/devices.rst).  Deny by default: "a" to
 * devices.deny first (this drops every exception), then the spec's rules
 * in order, then the default allow list (cgroup_devices_default.c), each to
 * devices.allow or devices.deny as "TYPE MAJOR:MINOR ACCESS".  Changing the
 * default behaviour needs a cgroup without children, so this runs at
 * create (and on update only when the update lists devices). */
#include <inttypes.h>
#include <stdio.h>
#include "engine/cgroup_internal.h"

static int write_rule(const char *dir, const struct an_spec_device_cgroup *d, an_error_t *err) {
  char maj[24] = "*", min[24] = "*";
  if (d->major >= 0) snprintf(maj, sizeof maj, "%" PRId64, d->major);
  if (d->minor >= 0) snprintf(min, sizeof min, "%" PRId64, d->minor);
  char type = d->type ? d->type : 'a';
  const char *file = d->allow ? "devices.allow" : "devices.deny";
  if (type == 'a') return an_cg_writef(err, dir, file, "a *:* %s", d->access ? d->access : "rwm");
  return an_cg_writef(err, dir, file, "%c %s:%s %s", type, maj, min, d->access ? d->access : "rwm");
}

int an_cg_v1_devices_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  int ret = an_cg_write(dir, "devices.deny", "a", err);
  if (ret < 0) return ret;
  for (size_t i = 0; r && i < r->n_devices; i++) {
    const struct an_spec_device_cgroup *d = &r->devices[i];
    /* {"allow": false, "access": "rwm"} (deny all) is the state we are in. */
    if (!d->allow && (d->type == 'a' || !d->type)) {
      if ((ret = an_cg_write(dir, "devices.deny", "a", err)) < 0) return ret;
      continue;
    }
    if ((ret = write_rule(dir, d, err)) < 0) return ret;
  }
  for (size_t i = 0; i < an_cg_n_default_device_rules; i++)
    if ((ret = write_rule(dir, &an_cg_default_device_rules[i], err)) < 0) return ret;
  return 0;
}
