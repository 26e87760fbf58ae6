/* engine/cgroup_devices_default.c — the device rules every container gets
 * after the ones its spec lists (runc libcontainer/specconv AllowedDevices),
 * shared by the v1 devices controller and the v2 eBPF program. */
#include "engine/cgroup_internal.h"

const struct an_spec_device_cgroup an_cg_default_device_rules[] = {
  {true, 'c', -1, -1, (char *) "m"},     /* mknod of any char device (opening still denied) */
  {true, 'b', -1, -1, (char *) "m"},     /* mknod of any block device */
  {true, 'c', 1, 3, (char *) "rwm"},     /* /dev/null */
  {true, 'c', 1, 8, (char *) "rwm"},     /* /dev/random */
  {true, 'c', 1, 7, (char *) "rwm"},     /* /dev/full */
  {true, 'c', 5, 0, (char *) "rwm"},     /* /dev/tty */
  {true, 'c', 1, 5, (char *) "rwm"},     /* /dev/zero */
  {true, 'c', 1, 9, (char *) "rwm"},     /* /dev/urandom */
  {true, 'c', 5, 1, (char *) "rwm"},     /* /dev/console */
  {true, 'c', 136, -1, (char *) "rwm"},  /* /dev/pts/N */
  {true, 'c', 5, 2, (char *) "rwm"},     /* /dev/ptmx */
};
const size_t an_cg_n_default_device_rules =
    sizeof an_cg_default_device_rules / sizeof an_cg_default_device_rules[0];
