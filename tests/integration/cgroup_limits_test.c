/* tests/integration/cgroup_limits_test.c — agentnest/cgroup.h's resource
 * limits on the real kernel: memory, pids, cpu, cpuset, block I/O,
 * hugetlb written and updated live; BL-34 (fork bomb contained by
 * pids.max, in the cgroup and an exec child) and BL-35 (OOM kill of a
 * grandchild counted by an_cgroup_oom_kills); bad paths, absurd values and
 * controllers this host lacks refused, failing closed and leaving nothing.
 *
 * Every test uses its own cgroup "agentnest/test-cg-<pid>" and removes it
 * in fini even when an assertion failed (cgroup_common.h).  Run as root on
 * this hybrid host (v1 controllers + controller-less cgroup2) and, through
 * tests/run-cgroupv2.sh, on a pure cgroup v2 kernel. */
#include "cgroup_common.h"

TestSuite(cgroup, .init = setup, .fini = teardown);

Test(cgroup, create_writes_memory_pids_cpu_limits) {
  struct an_spec_resources res = {0};
  res.has_memory_limit = true; res.memory_limit = 64 << 20;
  res.has_memory_swap = true; res.memory_swap = 64 << 20;      /* no swap */
  res.has_pids_limit = true; res.pids_limit = 32;
  res.has_cpu_quota = true; res.cpu_quota = 50000;
  res.has_cpu_period = true; res.cpu_period = 100000;
  res.has_cpu_shares = true; res.cpu_shares = 512;
  create_ok(&res);
  cr_assert_str_eq(read_ctl("pids", "pids.max"), "32");
  if (host_is_unified()) {
    cr_assert_str_eq(read_ctl("memory", "memory.max"), "67108864");
    cr_assert_str_eq(read_ctl("memory", "memory.swap.max"), "0");
    cr_assert_str_eq(read_ctl("cpu", "cpu.max"), "50000 100000");
    /* runc: 1 + (512 - 2) * 9999 / 262142 = 20 */
    cr_assert_str_eq(read_ctl("cpu", "cpu.weight"), "20");
  } else {
    cr_assert_str_eq(read_ctl("memory", "memory.limit_in_bytes"), "67108864");
    cr_assert_str_eq(read_ctl("memory", "memory.memsw.limit_in_bytes"), "67108864");
    cr_assert_str_eq(read_ctl("cpu", "cpu.cfs_quota_us"), "50000");
    cr_assert_str_eq(read_ctl("cpu", "cpu.cfs_period_us"), "100000");
    cr_assert_str_eq(read_ctl("cpu", "cpu.shares"), "512");
  }
}

Test(cgroup, apply_updates_limits_of_a_live_cgroup) {
  struct an_spec_resources res = {0};
  res.has_pids_limit = true; res.pids_limit = 32;
  create_ok(&res);
  struct kid k = spawn(sleep_forever);
  enter_and_go(&k);
  res.pids_limit = 64;
  res.has_memory_limit = true; res.memory_limit = 128 << 20;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_apply(g_cg, &res, &err), 0, "apply: %s", err ? err->msg : "?");
  cr_assert_str_eq(read_ctl("pids", "pids.max"), "64");
  cr_assert_str_eq(read_ctl("memory", host_is_unified() ? "memory.max" : "memory.limit_in_bytes"),
                   "134217728");
  res.pids_limit = -1;
  cr_assert_eq(an_cgroup_apply(g_cg, &res, &err), 0, "apply: %s", err ? err->msg : "?");
  cr_assert_str_eq(read_ctl("pids", "pids.max"), "max");
}

Test(cgroup, cpuset_limits_cpus_and_mems) {
  struct an_spec_resources res = {0};
  res.cpu_cpus = (char *) "0";
  res.cpu_mems = (char *) "0";
  create_ok(&res);
  cr_assert_str_eq(read_ctl("cpuset", "cpuset.cpus"), "0");
  cr_assert_str_eq(read_ctl("cpuset", "cpuset.mems"), "0");
  struct kid k = spawn(sleep_forever);
  enter_and_go(&k);
  cpu_set_t set;
  cr_assert_eq(sched_getaffinity(k.pid, sizeof set, &set), 0);
  cr_assert_eq(CPU_COUNT(&set), 1, "a process in the cgroup may use one cpu");
  cr_assert(CPU_ISSET(0, &set));
}

static void fork_until_refused(int out) {
  int res[2] = {0, 0};
  for (;;) {
    pid_t p = fork();
    if (p == 0) { for (;;) pause(); }
    if (p < 0) { res[1] = errno; break; }
    if (++res[0] > 100000) break;
  }
  if (write(out, res, sizeof res) != sizeof res) _exit(98);
  for (;;) pause();
}

Test(cgroup, bl_34_pids_limit_stops_a_fork_bomb_with_eagain) {
  struct an_spec_resources res = {0};
  res.has_pids_limit = true; res.pids_limit = 64;
  create_ok(&res);
  struct kid k = spawn(fork_until_refused);
  enter_and_go(&k);
  int r[2];
  read_full(k.res, r, sizeof r);
  cr_assert_eq(r[1], EAGAIN, "fork failed with %s", strerror(r[1]));
  /* the forker itself is one of the 64 */
  cr_assert(r[0] >= 60 && r[0] <= 63, "%d forks before EAGAIN with pids.max 64", r[0]);
  cr_assert_eq(count_pids(g_cg), (size_t) r[0] + 1);
  uint64_t refused = 0;
  an_error_t perr = NULL;
  cr_assert_eq(an_cgroup_pids_max_events(g_cg, &refused, &perr), 0, "%s", perr ? perr->msg : "?");
  cr_assert_geq(refused, 1, "pids.events max counts the refused fork");
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_kill(g_cg, SIGKILL, &err), 0, "kill: %s", err ? err->msg : "?");
  int st = wait_kid(&k);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  /* after the kill the cgroup returns to baseline (empty) */
  for (int i = 0; i < 500 && count_pids(g_cg) > 0; i++) usleep(10000);
  cr_assert_eq(count_pids(g_cg), 0);
  for (int i = 0; i < 500 && strcmp(read_ctl("pids", "pids.current"), "0"); i++) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    usleep(10000);
  }
  cr_assert_str_eq(read_ctl("pids", "pids.current"), "0");
}

static void allocate_1g(int out) {
  (void) out;
  size_t sz = (size_t) 1 << 30;
  /* MAP_NORESERVE: a 1 GiB reservation may exceed a small VM's overcommit
   * heuristic; the cgroup limit, not the mmap, must stop the allocator. */
  char *p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) _exit(97);
  for (size_t i = 0; i < sz; i += 4096) p[i] = 1;
  _exit(0);                     /* not reached under a 32 MiB limit */
}

/* A small "shell" whose grandchild allocates: reports how the grandchild ended. */
static void shell_with_allocating_grandchild(int out) {
  pid_t g = fork();
  if (g < 0) _exit(96);
  if (g == 0) allocate_1g(out);
  int st = 0;
  waitpid(g, &st, 0);
  int sig = WIFSIGNALED(st) ? WTERMSIG(st) : -WEXITSTATUS(st);
  if (write(out, &sig, sizeof sig) != sizeof sig) _exit(98);
  _exit(0);
}

static void exit_zero(int out) { (void) out; }

Test(cgroup, bl_35_oom_kill_of_a_grandchild_is_counted) {
  struct an_spec_resources res = {0};
  res.has_memory_limit = true; res.memory_limit = 32 << 20;
  res.has_memory_swap = true; res.memory_swap = 32 << 20;
  create_ok(&res);
  uint64_t before = 99;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_oom_kills(g_cg, &before, &err), 0, "oom_kills: %s", err ? err->msg : "?");
  cr_assert_eq(before, 0);

  struct kid k = spawn(shell_with_allocating_grandchild);
  enter_and_go(&k);
  int sig = 0;
  read_full(k.res, &sig, sizeof sig);
  cr_assert_eq(sig, SIGKILL, "grandchild ended with %d, want SIGKILL", sig);
  int st = wait_kid(&k);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the small shell survives");
  uint64_t after = 0;
  cr_assert_eq(an_cgroup_oom_kills(g_cg, &after, &err), 0, "oom_kills: %s", err ? err->msg : "?");
  cr_assert_geq(after, before + 1, "oom_kill %llu -> %llu", (unsigned long long) before,
                (unsigned long long) after);

  /* the next command in the same cgroup runs normally */
  struct kid k2 = spawn(exit_zero);
  enter_and_go(&k2);
  st = wait_kid(&k2);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

Test(cgroup, bl_35_oom_kill_in_an_exec_child_cgroup_is_counted) {
  struct an_spec_resources res = {0};
  res.has_memory_limit = true; res.memory_limit = 32 << 20;
  res.has_memory_swap = true; res.memory_swap = 32 << 20;
  create_ok(&res);
  struct an_cgroup *exec = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_create_child(g_cg, "exec-1", &exec, &err), 0, "child: %s",
               err ? err->msg : "?");
  struct kid k = spawn(allocate_1g);
  cr_assert_eq(an_cgroup_enter(exec, k.pid, &err), 0, "enter: %s", err ? err->msg : "?");
  cr_assert_eq(write(k.go, "g", 1), 1);
  int st = wait_kid(&k);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "allocator OOM-killed");
  uint64_t n_exec = 0, n_sandbox = 0;
  cr_assert_eq(an_cgroup_oom_kills(exec, &n_exec, &err), 0, "oom_kills: %s", err ? err->msg : "?");
  cr_assert_eq(an_cgroup_oom_kills(g_cg, &n_sandbox, &err), 0, "oom_kills: %s", err ? err->msg : "?");
  cr_assert_geq(n_exec, 1);
  cr_assert_geq(n_sandbox, 1);
  an_cgroup_free(exec);
}

Test(cgroup, bad_paths_are_refused) {
  const char *bad[] = {"../x", "a//b", "", "/", "a/./b", "agentnest/../../etc", "agentnest/x/", "a\nb"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct an_cgroup *cg = NULL;
    an_error_t err = NULL;
    int r = an_cgroup_create(bad[i], NULL, &cg, &err);
    cr_assert_eq(r, -EINVAL, "\"%s\" gave %d", bad[i], r);
    cr_assert_not_null(err);
    cr_assert(strstr(err->msg, "cgroup path"), "message: %s", err->msg);
    an_error_free(&err);
    cr_assert_null(cg);
  }
  create_ok(NULL);
  struct an_cgroup *child = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_create_child(g_cg, "..", &child, &err), -EINVAL);
  an_error_free(&err);
  cr_assert_eq(an_cgroup_create_child(g_cg, "a/b", &child, &err), -EINVAL);
  an_error_free(&err);
}

Test(cgroup, existing_cgroup_is_refused) {
  create_ok(NULL);
  struct an_cgroup *again = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_create(g_path, NULL, &again, &err), -EEXIST);
  cr_assert_not_null(err);
  an_error_free(&err);
  cr_assert_null(again);
}

static void expect_einval(struct an_spec_resources *res, const char *field) {
  struct an_cgroup *cg = NULL;
  an_error_t err = NULL;
  int r = an_cgroup_create(g_path, res, &cg, &err);
  cr_assert_eq(r, -EINVAL, "%s: got %d", field, r);
  cr_assert(err && strstr(err->msg, field), "message names %s: %s", field, err ? err->msg : "");
  an_error_free(&err);
  assert_gone_everywhere(g_path);
}

Test(cgroup, absurd_values_are_refused_naming_the_field) {
  struct an_spec_resources res = {0};
  res.has_memory_limit = true; res.memory_limit = 1000;
  expect_einval(&res, "memory.limit");
  res = (struct an_spec_resources){0};
  res.has_cpu_period = true; res.cpu_period = 10;
  expect_einval(&res, "cpu.period");
  res = (struct an_spec_resources){0};
  res.has_cpu_quota = true; res.cpu_quota = -5;
  expect_einval(&res, "cpu.quota");
  res = (struct an_spec_resources){0};
  res.has_pids_limit = true; res.pids_limit = -7;
  expect_einval(&res, "pids.limit");
  res = (struct an_spec_resources){0};
  res.has_memory_limit = true; res.memory_limit = 64 << 20;
  res.has_memory_swap = true; res.memory_swap = 32 << 20;
  expect_einval(&res, "memory.swap");
  struct an_spec_key_value kv = {(char *) "../memory.max", (char *) "1"};
  res = (struct an_spec_resources){0};
  res.unified = &kv; res.n_unified = 1;
  expect_einval(&res, "unified");
  kv.key = (char *) "cgroup.procs";
  expect_einval(&res, "unified");
}

Test(cgroup, missing_hugepage_size_fails_closed_and_leaves_nothing) {
  /* a hugepage size no x86 kernel offers */
  struct an_spec_hugepage_limit hp = {(char *) "3MB", 1 << 22};
  struct an_spec_resources res = {0};
  res.hugepage_limits = &hp; res.n_hugepage_limits = 1;
  if (controller_absent("hugetlb")) expect_eopnotsupp(&res, "hugetlb");
  else expect_eopnotsupp(&res, "3MB");
}

Test(cgroup, missing_controller_in_unified_keys_fails_closed_and_leaves_nothing) {
  /* a controller the host lacks, asked for through linux.resources.unified */
  struct an_spec_resources res = {0};
  const char *cands[] = {"rdma", "misc", "hugetlb", "memory", "dmem"};   /* dmem: Linux 6.14+ */
  const char *missing = NULL;
  for (size_t i = 0; i < sizeof cands / sizeof cands[0] && !missing; i++)
    if (v2_controller_absent(cands[i])) missing = cands[i];
  if (!missing) cr_skip_test("every candidate controller is present in the cgroup2 hierarchy");
  char key[64];
  snprintf(key, sizeof key, "%s.max", missing);
  struct an_spec_key_value kv = {key, (char *) "max"};
  res = (struct an_spec_resources){0};
  res.unified = &kv; res.n_unified = 1;
  expect_eopnotsupp(&res, key);
}

Test(cgroup, v2_only_knobs_fail_closed_or_apply) {
  struct an_spec_resources res = {0};
  res.has_cpu_realtime_runtime = true; res.cpu_realtime_runtime = 1000;
  res.has_cpu_realtime_period = true; res.cpu_realtime_period = 1000000;
  if (host_is_unified()) {
    expect_eopnotsupp(&res, "realtime");
    struct an_spec_key_value kv = {(char *) "memory.high", (char *) "50331648"};
    res = (struct an_spec_resources){0};
    res.unified = &kv; res.n_unified = 1;
    create_ok(&res);
    cr_assert_str_eq(read_ctl("memory", "memory.high"), "50331648");
  } else {
    struct an_spec_key_value kv = {(char *) "memory.high", (char *) "50331648"};
    res = (struct an_spec_resources){0};
    res.unified = &kv; res.n_unified = 1;
    expect_eopnotsupp(&res, "memory.high");
  }
}

Test(cgroup, block_io_throttle_is_written) {
  /* any block device the kernel has: its maj:min from /sys/dev/block */
  DIR *d = opendir("/sys/dev/block");
  if (!d) cr_skip_test("no /sys/dev/block");
  struct dirent *de;
  unsigned maj = 0, min = 0;
  bool found = false;
  while (!found && (de = readdir(d))) found = sscanf(de->d_name, "%u:%u", &maj, &min) == 2;
  closedir(d);
  if (!found) cr_skip_test("no block device");
  struct an_spec_throttle_device t = {maj, min, 1048576};
  struct an_spec_resources res = {0};
  res.blkio_throttle_read_bps = &t; res.n_blkio_throttle_read_bps = 1;
  create_ok(&res);
  char want[64];
  if (host_is_unified()) {
    snprintf(want, sizeof want, "%u:%u rbps=1048576", maj, min);
    const char *got = read_ctl("blkio", "io.max");
    cr_assert(strstr(got, want), "io.max: \"%s\", want \"%s\"", got, want);
  } else {
    snprintf(want, sizeof want, "%u:%u 1048576", maj, min);
    cr_assert_str_eq(read_ctl("blkio", "blkio.throttle.read_bps_device"), want);
  }
}

Test(cgroup, hugetlb_limit_is_written) {
  struct stat st;
  if (stat("/sys/kernel/mm/hugepages/hugepages-2048kB", &st) < 0) cr_skip_test("no 2MB huge pages");
  if (!getenv("RUN_IN_VM") && !host_is_unified() && controller_absent("hugetlb"))
    cr_skip_test("no hugetlb controller");
  if (!getenv("RUN_IN_VM") && !host_is_unified())
    cr_skip_test("hugetlb lives in the host's cgroup2 root here: not enabled by tests");
  struct an_spec_hugepage_limit hp = {(char *) "2MB", 4 << 21};
  struct an_spec_resources res = {0};
  res.hugepage_limits = &hp; res.n_hugepage_limits = 1;
  create_ok(&res);
  cr_assert_str_eq(read_ctl("hugetlb", "hugetlb.2MB.max"), "8388608");
}

Test(cgroup, raising_memory_and_swap_together_works) {
  /* v1: memory.limit_in_bytes must stay <= memory.memsw.limit_in_bytes, so
   * raising both needs memsw first and lowering needs the limit first. */
  struct an_spec_resources res = {0};
  res.has_memory_limit = true; res.memory_limit = 64 << 20;
  res.has_memory_swap = true; res.memory_swap = 64 << 20;
  create_ok(&res);
  an_error_t err = NULL;
  res.memory_limit = res.memory_swap = 256 << 20;
  cr_assert_eq(an_cgroup_apply(g_cg, &res, &err), 0, "raise: %s", err ? err->msg : "?");
  cr_assert_str_eq(read_ctl("memory", host_is_unified() ? "memory.max" : "memory.limit_in_bytes"),
                   "268435456");
  res.memory_limit = res.memory_swap = 32 << 20;
  cr_assert_eq(an_cgroup_apply(g_cg, &res, &err), 0, "lower: %s", err ? err->msg : "?");
  cr_assert_str_eq(read_ctl("memory", host_is_unified() ? "memory.max" : "memory.limit_in_bytes"),
                   "33554432");
  if (!host_is_unified())
    cr_assert_str_eq(read_ctl("memory", "memory.memsw.limit_in_bytes"), "33554432");
}

/* A fork loop in the exec child cgroup `exec` (freed here) is stopped by the
 * parent's pids.max, and the refusal is counted in pids.events "max". */
static void assert_fork_bomb_counted(struct an_cgroup *exec) {
  an_error_t err = NULL;
  uint64_t before = 99, after = 0;
  cr_assert_eq(an_cgroup_pids_max_events(exec, &before, &err), 0, "%s", err ? err->msg : "?");
  struct kid k = spawn(fork_until_refused);
  cr_assert_eq(an_cgroup_enter(exec, k.pid, &err), 0, "enter: %s", err ? err->msg : "?");
  cr_assert_eq(write(k.go, "g", 1), 1);
  int r[2];
  read_full(k.res, r, sizeof r);
  cr_assert_eq(r[1], EAGAIN, "the parent's pids.max stops the exec's forks: %s", strerror(r[1]));
  cr_assert_eq(an_cgroup_pids_max_events(exec, &after, &err), 0, "%s", err ? err->msg : "?");
  cr_assert_gt(after, before, "pids.events max %llu -> %llu", (unsigned long long) before,
               (unsigned long long) after);
  cr_assert_eq(an_cgroup_kill(exec, SIGKILL, &err), 0);
  wait_kid(&k);
  an_cgroup_free(exec);
}

Test(cgroup, bl_34_fork_bomb_in_an_exec_child_is_counted_as_pids_limit) {
  struct an_spec_resources res = {0};
  res.has_pids_limit = true; res.pids_limit = 32;
  create_ok(&res);
  struct an_cgroup *exec = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_create_child(g_cg, "exec-1", &exec, &err), 0, "child: %s", err ? err->msg : "?");
  assert_fork_bomb_counted(exec);
}

/* The sandbox reuses exec slots: a child cgroup opened again (not made
 * again) still counts a fork refused by the parent's pids.max. */
Test(cgroup, reopened_exec_child_counts_pids_limit_like_a_new_one) {
  struct an_spec_resources res = {0};
  res.has_pids_limit = true; res.pids_limit = 32;
  create_ok(&res);
  struct an_cgroup *made = NULL, *exec = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_open_child(g_cg, "exec-1", &exec, &err), -ENOENT, "missing child opened");
  an_error_free(&err);
  cr_assert_eq(an_cgroup_create_child(g_cg, "exec-1", &made, &err), 0, "child: %s", err ? err->msg : "?");
  an_cgroup_free(made);
  cr_assert_eq(an_cgroup_open_child(g_cg, "exec-1", &exec, &err), 0, "reopen: %s", err ? err->msg : "?");
  assert_fork_bomb_counted(exec);
}
