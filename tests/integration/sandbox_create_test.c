/* Integration tests of what a sandbox's create makes on the host (issue 15,
 * "create only the cgroup hierarchies a sandbox uses"): on a v1 or hybrid
 * host the sandbox's cgroup exists in the hierarchies its limits and the
 * runtime use (memory, pids, cpu, freezer, devices, cgroup2), not in those
 * it asks nothing of (cpuset, blkio, cpuacct), and its limits still hold.
 * Run as root on the real kernel; skipped on a cgroup2-only host, where
 * there is one hierarchy. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "agentnest/cgroup.h"
#include "agentnest/sandbox.h"
#include "agentnest/sandbox_opts.h"
#include "store_fixture.h"
#include "util.h"
#include "ctx_fixture.h"

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

static char g_root[PATH_MAX];

static void setup(void) {
  an_test_lib_env(NULL, 0);
  snprintf(g_root, sizeof g_root, "/tmp/an-sbcreate-%d", (int) getppid());
  an_test_store_make(g_root);
  an_test_store_image(g_root, "busybox", false);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  char root[PATH_MAX];
  snprintf(root, sizeof root, "/tmp/an-sbcreate-%d", (int) getpid());
  an_test_store_remove(root);
}

TestSuite(sandbox_create, .init = setup, .timeout = 120);

/* Whether /sys/fs/cgroup/<name> is a mounted v1 hierarchy. */
static bool v1_hierarchy(const char *name) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "/sys/fs/cgroup/%s", name);
  struct statfs sf;
  return statfs(p, &sf) == 0 && sf.f_type == CGROUP_SUPER_MAGIC;
}

static bool sb_cgroup_exists(const char *hier, const char *id) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "/sys/fs/cgroup/%s/agentnest/sb-%s", hier, id);
  return access(p, F_OK) == 0;
}

static char *read_cg(const char *hier, const char *id, const char *file) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "/sys/fs/cgroup/%s/agentnest/sb-%s/%s", hier, id, file);
  FILE *f = fopen(p, "re");
  cr_assert_not_null(f, "open %s: %s", p, strerror(errno));
  static char buf[4096];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static struct an_exec_result run(struct an_sandbox *sb, const char *script) {
  char *argv[] = {"sh", "-c", (char *) script, NULL};
  struct an_exec_opts eo = {.timeout_ms = 60000};
  struct an_exec_result res;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_exec(sb, argv, &eo, &res, &err), 0, "exec %s: %s", script,
               err ? err->msg : "");
  return res;
}

Test(sandbox_create, cgroup_only_in_the_hierarchies_its_limits_use) {
  enum an_cgroup_layout layout;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_detect(&layout, &err), 0, "%s", err ? err->msg : "");
  if (layout == AN_CGROUP_UNIFIED) cr_skip("cgroup2-only host: one hierarchy, nothing to leave out");
  static const char *const unused[] = {"cpuset", "blkio", "cpuacct", "net_cls", "perf_event",
                                       "hugetlb", "rdma", "misc"};
  static const char *const used[] = {"memory", "pids", "cpu", "freezer", "devices"};
  bool any_unused = false;
  for (size_t i = 0; i < sizeof unused / sizeof unused[0]; i++) any_unused |= v1_hierarchy(unused[i]);
  if (!any_unused) cr_skip("no v1 cpuset/blkio/cpuacct/... hierarchy mounted of its own here");

  struct an_sandbox_opts *o = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_set_image(o, "busybox", &err), 0);
  struct an_sandbox *sb = NULL;
  cr_assert_eq(an_sandbox_create(g_root, o, &sb, &err), 0, "create: %s", err ? err->msg : "");
  char id[AN_SANDBOX_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));

  /* no cgroup where it asks nothing */
  for (size_t i = 0; i < sizeof unused / sizeof unused[0]; i++)
    if (v1_hierarchy(unused[i]))
      cr_expect(!sb_cgroup_exists(unused[i], id), "sandbox %s has a cgroup in the %s hierarchy, "
                "though it has no %s limit", id, unused[i], unused[i]);
  /* a cgroup where its limits and the runtime's controls live */
  for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
    if (v1_hierarchy(used[i]))
      cr_expect(sb_cgroup_exists(used[i], id), "sandbox %s has no cgroup in the %s hierarchy", id,
                used[i]);
  if (layout == AN_CGROUP_HYBRID) cr_expect(sb_cgroup_exists("unified", id), "no cgroup2 cgroup");

  /* its limits hold (DESIGN.md defaults: memory 512 MiB no swap, pids 256,
   * cpus 1.0, deny-by-default devices) */
  if (v1_hierarchy("memory"))
    cr_expect_str_eq(read_cg("memory", id, "memory.limit_in_bytes"), "536870912\n");
  if (v1_hierarchy("pids")) cr_expect_str_eq(read_cg("pids", id, "pids.max"), "256\n");
  if (v1_hierarchy("cpu")) cr_expect_str_eq(read_cg("cpu", id, "cpu.cfs_quota_us"), "100000\n");
  if (v1_hierarchy("devices"))
    cr_expect(!strstr(read_cg("devices", id, "devices.list"), "a *:* rwm"), "devices allow all: %s",
              read_cg("devices", id, "devices.list"));
  /* an exec works and is counted in the sandbox's pids cgroup; a device
   * outside the allow list stays closed */
  struct an_exec_result res = run(sb, "cat /proc/self/cgroup >/dev/null && echo ok; "
                                      "mknod /tmp/sda b 8 0 2>/dev/null; "
                                      "head -c1 /tmp/sda 2>/dev/null && echo OPENED; true");
  cr_expect_eq(res.status, 0);
  cr_expect_str_eq(res.output.stdout_buf, "ok\n", "%s", res.output.stdout_buf);
  an_exec_result_release(&res);
  res = run(sb, "sleep 0.2 & sleep 0.2 & wait");
  cr_expect_eq(res.status, 0);
  an_exec_result_release(&res);
  if (v1_hierarchy("pids")) {
    uint64_t events = strtoull(strstr(read_cg("pids", id, "pids.events"), "max ") + 4, NULL, 10);
    cr_expect_eq(events, 0, "pids.events max %llu", (unsigned long long) events);
  }
  /* an exec runs in its own child cgroup of the sandbox's in every
   * hierarchy the sandbox has (its cgroup namespace root is the sandbox's) */
  res = run(sb, "cat /proc/self/cgroup");
  for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
    if (v1_hierarchy(used[i])) {
      char want[64];
      snprintf(want, sizeof want, ":%s:/exec-", used[i]);
      cr_expect(strstr(res.output.stdout_buf, want), "exec not in the sandbox's %s cgroup: %s", used[i],
                res.output.stdout_buf);
    }
  an_exec_result_release(&res);

  cr_expect_eq(an_sandbox_destroy(sb, 0, &err), 0, "destroy: %s", err ? err->msg : "");
  an_error_free(&err);
  an_sandbox_close(sb);
  static const char *const all[] = {"memory", "pids", "cpu", "freezer", "devices", "cpuset",
                                    "blkio", "cpuacct", "unified"};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cr_expect(!sb_cgroup_exists(all[i], id), "cgroup of %s left in %s", id, all[i]);
  an_sandbox_opts_free(o);
}

/* The engine API behind it: an_cgroup_create_used makes a cgroup only where
 * its resources (and memory, pids, freezer, devices) are enforced;
 * an_cgroup_open finds the same set; a later limit for a hierarchy left out
 * is refused, not written nowhere; destroy leaves nothing. */
Test(sandbox_create, cgroup_create_used_then_open_apply_destroy) {
  enum an_cgroup_layout layout;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_detect(&layout, &err), 0, "%s", err ? err->msg : "");
  if (layout == AN_CGROUP_UNIFIED || !v1_hierarchy("blkio"))
    cr_skip("needs a v1 blkio hierarchy (v1 or hybrid host)");
  char path[64];
  snprintf(path, sizeof path, "agentnest/test-used-%d", (int) getpid());
  struct an_spec_resources res = {.has_memory_limit = true, .memory_limit = 64 << 20};
  struct an_cgroup *cg = NULL;
  cr_assert_eq(an_cgroup_create_used(path, &res, &cg, &err), 0, "%s", err ? err->msg : "");
  char p[PATH_MAX];
  snprintf(p, sizeof p, "/sys/fs/cgroup/blkio/%s", path);
  cr_expect_neq(access(p, F_OK), 0, "%s made without a blkio limit", p);
  snprintf(p, sizeof p, "/sys/fs/cgroup/memory/%s/memory.limit_in_bytes", path);
  cr_expect_eq(access(p, F_OK), 0, "%s missing", p);
  struct an_cgroup *again = NULL;
  cr_assert_eq(an_cgroup_open(path, &again, &err), 0, "%s", err ? err->msg : "");
  struct an_spec_resources blk = {.has_blkio_weight = true, .blkio_weight = 500};
  cr_expect_eq(an_cgroup_apply(again, &blk, &err), -EOPNOTSUPP, "a blkio limit was accepted");
  cr_expect(err && strstr(err->msg, "blkio"), "%s", err ? err->msg : "(no error)");
  an_error_free(&err);
  pid_t *pids = NULL;
  size_t n = 9;
  cr_expect_eq(an_cgroup_pids(again, &pids, &n, &err), 0);
  cr_expect_eq(n, 0);
  free(pids);
  an_cgroup_free(again);
  cr_expect_eq(an_cgroup_destroy(cg, &err), 0, "%s", err ? err->msg : "");
  an_cgroup_free(cg);
  static const char *const all[] = {"memory", "pids", "cpu", "freezer", "devices", "unified"};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    snprintf(p, sizeof p, "/sys/fs/cgroup/%s/%s", all[i], path);
    cr_expect_neq(access(p, F_OK), 0, "%s left", p);
  }
}
