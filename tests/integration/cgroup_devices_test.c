/* tests/integration/cgroup_devices_test.c — agentnest/cgroup.h's device
 * policy on the real kernel: denied by default, allowed by rule, replaced
 * by apply, a deny inside a broader allow (v2; fails closed on v1), a list
 * that starts with deny-all.
 *
 * Every test uses its own cgroup "agentnest/test-cg-<pid>" and removes it
 * in fini even when an assertion failed (cgroup_common.h).  Run as root on
 * this hybrid host (v1 controllers + controller-less cgroup2) and, through
 * tests/run-cgroupv2.sh, on a pure cgroup v2 kernel. */
#include "cgroup_common.h"

TestSuite(cgroup, .init = setup, .fini = teardown);

static void open_null_and_kmsg(int out) {
  int res[2];
  int fd = open("/dev/null", O_RDWR);
  res[0] = fd >= 0 ? 0 : errno;
  fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
  res[1] = fd >= 0 ? 0 : errno;
  if (write(out, res, sizeof res) != sizeof res) _exit(98);
}

Test(cgroup, devices_are_denied_by_default_and_allowed_by_rule) {
  struct stat st;
  if (stat("/dev/kmsg", &st) < 0) cr_skip_test("no /dev/kmsg to probe");
  create_ok(NULL);
  struct kid k = spawn(open_null_and_kmsg);
  enter_and_go(&k);
  int r[2];
  read_full(k.res, r, sizeof r);
  cr_assert_eq(r[0], 0, "/dev/null is in the default allow list: %s", strerror(r[0]));
  cr_assert_eq(r[1], EPERM, "/dev/kmsg is denied: %s", strerror(r[1]));
  wait_kid(&k);
  teardown();
  setup();

  struct an_spec_device_cgroup rule = {true, 'c', 1, 11, (char *) "r"};
  struct an_spec_resources res = {0};
  res.devices = &rule; res.n_devices = 1;
  create_ok(&res);
  struct kid k2 = spawn(open_null_and_kmsg);
  enter_and_go(&k2);
  read_full(k2.res, r, sizeof r);
  cr_assert_eq(r[0], 0);
  cr_assert_eq(r[1], 0, "/dev/kmsg allowed by rule c 1:11 r: %s", strerror(r[1]));
}

Test(cgroup, apply_with_devices_replaces_the_device_policy) {
  struct stat st;
  if (stat("/dev/kmsg", &st) < 0) cr_skip_test("no /dev/kmsg to probe");
  create_ok(NULL);
  struct an_spec_device_cgroup rule = {true, 'c', 1, 11, (char *) "r"};
  struct an_spec_resources res = {0};
  res.devices = &rule; res.n_devices = 1;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_apply(g_cg, &res, &err), 0, "apply: %s", err ? err->msg : "?");
  struct kid k = spawn(open_null_and_kmsg);
  enter_and_go(&k);
  int r[2];
  read_full(k.res, r, sizeof r);
  cr_assert_eq(r[0], 0);
  cr_assert_eq(r[1], 0, "/dev/kmsg allowed after update: %s", strerror(r[1]));
  wait_kid(&k);
  /* and a later deny rule (last match wins) takes it away again */
  struct an_spec_device_cgroup rules[2] = {{true, 'c', 1, 11, (char *) "r"}, {false, 'c', 1, -1, (char *) "rwm"}};
  res.devices = rules; res.n_devices = 2;
  cr_assert_eq(an_cgroup_apply(g_cg, &res, &err), 0, "apply: %s", err ? err->msg : "?");
  struct kid k2 = spawn(open_null_and_kmsg);
  enter_and_go(&k2);
  read_full(k2.res, r, sizeof r);
  cr_assert_eq(r[1], EPERM, "/dev/kmsg denied by c 1:* after: %s", strerror(r[1]));
}

Test(cgroup, deny_inside_a_broader_allow_works_on_v2_and_fails_closed_on_v1) {
  struct stat st;
  if (stat("/dev/kmsg", &st) < 0) cr_skip_test("no /dev/kmsg to probe");
  struct an_spec_device_cgroup rules[2] = {{true, 'c', 1, -1, (char *) "rwm"},
                                           {false, 'c', 1, 11, (char *) "rwm"}};
  struct an_spec_resources res = {0};
  res.devices = rules; res.n_devices = 2;
  bool v1_devices = !host_is_unified() && !controller_absent("devices");
  if (v1_devices) {
    expect_eopnotsupp(&res, "devices[1]");
    return;
  }
  create_ok(&res);
  struct kid k = spawn(open_null_and_kmsg);
  enter_and_go(&k);
  int r[2];
  read_full(k.res, r, sizeof r);
  cr_assert_eq(r[0], 0, "/dev/null (c 1:3) allowed by c 1:*: %s", strerror(r[0]));
  cr_assert_eq(r[1], EPERM, "/dev/kmsg (c 1:11) denied by the later rule: %s", strerror(r[1]));
}

/* Every OCI config's device list starts with a rule that matches everything
 * ({"allow": false, "access": "rwm"}).  On cgroup v2 the program checks the
 * rules last to first, so nothing after such a rule can run: the verifier
 * refused the program for its unreachable final "deny" (EINVAL), and no
 * container could start on a pure cgroup v2 host (make check-cgroupv2). */
Test(cgroup, device_list_starting_with_deny_all_loads_and_applies) {
  struct stat st;
  if (stat("/dev/kmsg", &st) < 0) cr_skip_test("no /dev/kmsg to probe");
  struct an_spec_device_cgroup rules[2] = {{false, 'a', -1, -1, (char *) "rwm"},
                                           {true, 'c', 1, 11, (char *) "r"}};
  struct an_spec_resources res = {0};
  res.devices = rules; res.n_devices = 2;
  create_ok(&res);
  struct kid k = spawn(open_null_and_kmsg);
  enter_and_go(&k);
  int r[2];
  read_full(k.res, r, sizeof r);
  cr_assert_eq(r[0], 0, "/dev/null is in the default allow list: %s", strerror(r[0]));
  cr_assert_eq(r[1], 0, "/dev/kmsg allowed by the rule after deny-all: %s", strerror(r[1]));
  wait_kid(&k);
}
