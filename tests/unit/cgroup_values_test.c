/* Unit tests of the cgroup value conversions and checks
 * (src/engine/cgroup_validate.c, cgroup_v2_cpu.c, cgroup_v2_io.c): runc's
 * formulas and the refusal of absurd values, without touching cgroups. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include "engine/cgroup_internal.h"

Test(cgroup_values, shares_convert_to_weight_like_runc) {
  cr_assert_eq(an_cg_shares_to_weight(0), 0, "0 means unset");
  cr_assert_eq(an_cg_shares_to_weight(2), 1);
  cr_assert_eq(an_cg_shares_to_weight(1024), 39);
  cr_assert_eq(an_cg_shares_to_weight(262144), 10000);
}

Test(cgroup_values, blkio_weight_converts_to_io_weight_like_runc) {
  cr_assert_eq(an_cg_blkio_weight_to_io_weight(10), 1);
  cr_assert_eq(an_cg_blkio_weight_to_io_weight(500), 4950);
  cr_assert_eq(an_cg_blkio_weight_to_io_weight(1000), 10000);
}

static void refused(const struct an_spec_resources *r, const char *field) {
  an_error_t err = NULL;
  cr_assert_eq(an_cg_validate_resources(r, &err), -EINVAL, "%s accepted", field);
  cr_assert(strstr(err->msg, field), "message \"%s\" names %s", err->msg, field);
  an_error_free(&err);
}

Test(cgroup_values, absurd_values_are_refused) {
  struct an_spec_resources r = {0};
  r.has_memory_limit = true; r.memory_limit = (1 << 20) - 1;
  refused(&r, "memory.limit");
  r = (struct an_spec_resources){0};
  r.has_memory_limit = true; r.memory_limit = -2;
  refused(&r, "memory.limit");
  r = (struct an_spec_resources){0};
  r.has_memory_swap = true; r.memory_swap = 1 << 30;
  refused(&r, "memory.swap");              /* swap without a memory limit */
  r = (struct an_spec_resources){0};
  r.has_cpu_shares = true; r.cpu_shares = 1;
  refused(&r, "cpu.shares");
  r = (struct an_spec_resources){0};
  r.has_cpu_period = true; r.cpu_period = 2000000;
  refused(&r, "cpu.period");
  r = (struct an_spec_resources){0};
  r.cpu_cpus = (char *) "0-1;rm";
  refused(&r, "cpu.cpus");
  r = (struct an_spec_resources){0};
  r.has_blkio_weight = true; r.blkio_weight = 5;
  refused(&r, "blockIO.weight");
  struct an_spec_hugepage_limit hp = {(char *) "2MB/../x", 1};
  r = (struct an_spec_resources){0};
  r.hugepage_limits = &hp; r.n_hugepage_limits = 1;
  refused(&r, "hugepageLimits[0].pageSize");
  struct an_spec_device_cgroup d = {true, 'x', 1, 3, NULL};
  r = (struct an_spec_resources){0};
  r.devices = &d; r.n_devices = 1;
  refused(&r, "devices[0].type");
  d.type = 'c'; d.access = (char *) "rwx";
  refused(&r, "devices[0].access");
  const char *bad_keys[] = {"memory.max/../x", "..", "nodot", "cgroup.procs", "cgroup.subtree_control", ""};
  for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
    struct an_spec_key_value kv = {(char *) bad_keys[i], (char *) "1"};
    r = (struct an_spec_resources){0};
    r.unified = &kv; r.n_unified = 1;
    refused(&r, "unified[0]");
  }
}

Test(cgroup_values, sensible_values_pass) {
  struct an_spec_resources r = {0};
  r.has_memory_limit = true; r.memory_limit = 512 << 20;
  r.has_memory_swap = true; r.memory_swap = 512 << 20;
  r.has_cpu_quota = true; r.cpu_quota = -1;
  r.has_cpu_period = true; r.cpu_period = 100000;
  r.has_pids_limit = true; r.pids_limit = -1;
  struct an_spec_key_value kv = {(char *) "memory.high", (char *) "max"};
  r.unified = &kv; r.n_unified = 1;
  an_error_t err = NULL;
  cr_assert_eq(an_cg_validate_resources(&r, &err), 0, "%s", err ? err->msg : "");
  uint32_t w = an_cg_wanted_ctrls(&r, false);
  cr_assert(w & AN_CG_BIT(AN_CG_MEMORY));
  cr_assert(w & AN_CG_BIT(AN_CG_CPU));
  cr_assert(w & AN_CG_BIT(AN_CG_PIDS));
  cr_assert_not(w & AN_CG_BIT(AN_CG_DEVICES));
  cr_assert(an_cg_wanted_ctrls(NULL, true) & AN_CG_BIT(AN_CG_DEVICES));
}
