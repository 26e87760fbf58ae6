/* tests/integration/cgroup_test.c — agentnest/cgroup.h's layout and
 * processes on the real kernel: detecting the host layout, entering,
 * listing, freezing (v2 and the v1 freezer fallback), killing and
 * destroying in every hierarchy, path forms, a legacy layout without
 * cgroup2.  Limits are cgroup_limits_test.c, devices cgroup_devices_test.c.
 *
 * Every test uses its own cgroup "agentnest/test-cg-<pid>" and removes it
 * in fini even when an assertion failed (cgroup_common.h).  Run as root on
 * this hybrid host (v1 controllers + controller-less cgroup2) and, through
 * tests/run-cgroupv2.sh, on a pure cgroup v2 kernel. */
#include "cgroup_common.h"

TestSuite(cgroup, .init = setup, .fini = teardown);

static bool has_pid(struct an_cgroup *cg, pid_t want) {
  pid_t *pids = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_pids(cg, &pids, &n, &err), 0, "pids: %s", err ? err->msg : "?");
  bool found = false;
  for (size_t i = 0; i < n; i++) found |= pids[i] == want;
  free(pids);
  return found;
}

Test(cgroup, detect_reports_the_host_layout) {
  enum an_cgroup_layout l;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_detect(&l, &err), 0);
  struct statfs s;
  if (host_is_unified()) cr_assert_eq(l, AN_CGROUP_UNIFIED);
  else if (statfs("/sys/fs/cgroup/unified", &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC)
    cr_assert_eq(l, AN_CGROUP_HYBRID);
  else cr_assert_eq(l, AN_CGROUP_LEGACY);
  if (getenv("RUN_IN_VM")) cr_assert_eq(l, AN_CGROUP_UNIFIED, "the VM boots with cgroup_no_v1=all");
}

Test(cgroup, enter_moves_a_child_and_pids_lists_it) {
  create_ok(NULL);
  struct kid k = spawn(sleep_forever);
  cr_assert_not(has_pid(g_cg, k.pid));
  enter_and_go(&k);
  cr_assert(has_pid(g_cg, k.pid));
  char p[64], line[4096];
  snprintf(p, sizeof p, "/proc/%d/cgroup", (int) k.pid);
  FILE *f = fopen(p, "re");
  cr_assert_not_null(f);
  bool seen = false;
  while (fgets(line, sizeof line, f)) seen |= strstr(line, g_path) != NULL;
  fclose(f);
  cr_assert(seen, "/proc/%d/cgroup names %s", (int) k.pid, g_path);
}

/* A child in the test cgroup that counts, without end, in a page it shares
 * with the test; returns the counter (the child is killed in .fini). */
static volatile unsigned long *counting_child(void) {
  volatile unsigned long *ctr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq((void *) ctr, MAP_FAILED);
  pid_t p = fork();
  cr_assert_geq(p, 0);
  if (p == 0) { for (;;) (*ctr)++; }
  g_kids[g_nkids++] = p;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_enter(g_cg, p, &err), 0, "enter: %s", err ? err->msg : "?");
  return ctr;
}

Test(cgroup, freeze_stops_every_process_and_thaw_resumes) {
  create_ok(NULL);
  volatile unsigned long *ctr = counting_child();
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_freeze(g_cg, true, &err), 0, "freeze: %s", err ? err->msg : "?");
  /* where a v1 freezer hierarchy exists (hybrid hosts), that is the one
   * frozen, as runc does: engines read freezer.state back */
  bool v1_freezer = !host_is_unified() && !controller_absent("freezer");
  if (v1_freezer) cr_assert_str_eq(read_ctl("freezer", "freezer.state"), "FROZEN");
  unsigned long a = *ctr;
  usleep(100000);
  cr_assert_eq(*ctr, a, "a frozen process does not run");
  cr_assert_eq(an_cgroup_freeze(g_cg, false, &err), 0, "thaw: %s", err ? err->msg : "?");
  if (v1_freezer) cr_assert_str_eq(read_ctl("freezer", "freezer.state"), "THAWED");
  for (int i = 0; i < 1000 && *ctr == a; i++) usleep(1000);
  cr_assert_neq(*ctr, a, "a thawed process runs again");
}

static void fork_one_and_sleep(int out) {
  pid_t g = fork();
  if (g == 0) for (;;) pause();
  int v = (int) g;
  if (write(out, &v, sizeof v) != sizeof v) _exit(98);
  for (;;) pause();
}

Test(cgroup, kill_reaches_children_and_grandchildren) {
  create_ok(NULL);
  struct kid k = spawn(fork_one_and_sleep);
  enter_and_go(&k);
  int g = 0;
  read_full(k.res, &g, sizeof g);
  cr_assert(has_pid(g_cg, g));
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_kill(g_cg, SIGKILL, &err), 0, "kill: %s", err ? err->msg : "?");
  int st = wait_kid(&k);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  for (int i = 0; i < 500 && count_pids(g_cg) > 0; i++) usleep(10000);
  cr_assert_eq(count_pids(g_cg), 0, "the grandchild is gone too");
}

Test(cgroup, kill_with_sigterm_signals_every_process) {
  create_ok(NULL);
  struct kid k = spawn(sleep_forever);
  enter_and_go(&k);
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_kill(g_cg, SIGTERM, &err), 0, "kill: %s", err ? err->msg : "?");
  int st = wait_kid(&k);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

Test(cgroup, destroy_kills_and_removes_the_cgroup_and_children_in_every_hierarchy) {
  struct an_spec_resources res = {0};
  res.has_pids_limit = true; res.pids_limit = 16;
  create_ok(&res);
  struct an_cgroup *exec = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_create_child(g_cg, "exec-1", &exec, &err), 0, "child: %s", err ? err->msg : "?");
  struct kid k = spawn(fork_one_and_sleep);
  cr_assert_eq(an_cgroup_enter(exec, k.pid, &err), 0, "enter: %s", err ? err->msg : "?");
  cr_assert_eq(write(k.go, "g", 1), 1);
  int g = 0;
  read_full(k.res, &g, sizeof g);
  cr_assert(has_pid(g_cg, g), "pids of a cgroup include its children's");
  an_cgroup_free(exec);
  cr_assert_eq(an_cgroup_destroy(g_cg, &err), 0, "destroy: %s", err ? err->msg : "?");
  an_cgroup_free(g_cg);
  g_cg = NULL;
  int st = wait_kid(&k);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  assert_gone_everywhere(g_path);
}

/* The runtime's "agentnest" parent never outlives its last child: after a
 * destroy it is gone, or still holds another (concurrent) cgroup. */
Test(cgroup, destroy_of_the_last_child_removes_the_agentnest_parent) {
  create_ok(NULL);
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_destroy(g_cg, &err), 0, "destroy: %s", err ? err->msg : "?");
  an_cgroup_free(g_cg);
  g_cg = NULL;
  char mounts[32][256];
  size_t n = cgroup_mounts(mounts, 32);
  for (size_t i = 0; i < n; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/agentnest", mounts[i]);
    DIR *d = opendir(p);
    if (!d) { cr_assert_eq(errno, ENOENT, "%s: %s", p, strerror(errno)); continue; }
    size_t children = 0;
    for (struct dirent *de; (de = readdir(d));)
      if (de->d_type == DT_DIR && de->d_name[0] != '.') children++;
    closedir(d);
    cr_assert_gt(children, 0, "%s is left behind empty", p);
  }
}

Test(cgroup, absolute_and_relative_paths_name_the_same_cgroup) {
  create_ok(NULL);
  char abs[160];
  snprintf(abs, sizeof abs, "/%s", g_path);
  struct an_cgroup *cg = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_open(abs, &cg, &err), 0, "open %s: %s", abs, err ? err->msg : "?");
  cr_assert_str_eq(an_cgroup_path(cg), g_path);
  struct kid k = spawn(sleep_forever);
  cr_assert_eq(an_cgroup_enter(cg, k.pid, &err), 0);
  cr_assert(has_pid(g_cg, k.pid));
  an_cgroup_free(cg);
  cr_assert_eq(an_cgroup_open("agentnest/no-such-cgroup-here", &cg, &err), -ENOENT);
  an_error_free(&err);
}

/* The v1 freezer writer itself (engine/cgroup_internal.h); where a v1
 * freezer is mounted an_cgroup_freeze uses it, else cgroup.freeze. */
Test(cgroup, v1_freezer_fallback_freezes_and_thaws) {
  if (host_is_unified() || controller_absent("freezer")) cr_skip_test("no v1 freezer");
  create_ok(NULL);
  volatile unsigned long *ctr = counting_child();
  an_error_t err = NULL;
  char dir[512];
  ctrl_dir(dir, sizeof dir, "freezer");
  cr_assert_eq(an_cg_v1_freezer_set(dir, true, &err), 0, "freeze: %s", err ? err->msg : "?");
  cr_assert_str_eq(read_ctl("freezer", "freezer.state"), "FROZEN");
  unsigned long a = *ctr;
  usleep(100000);
  cr_assert_eq(*ctr, a, "a frozen process does not run");
  cr_assert_eq(an_cg_v1_freezer_set(dir, false, &err), 0, "thaw: %s", err ? err->msg : "?");
  for (int i = 0; i < 1000 && *ctr == a; i++) usleep(1000);
  cr_assert_neq(*ctr, a, "a thawed process runs again");
}

/* A v1-only (legacy) host, made from this hybrid one: in a private mount
 * namespace of this test process, a tmpfs hides the cgroup2 mount (the
 * trick crun needs here).  Then tracking, killing and freezing must go
 * through the v1 hierarchies (no cgroup.kill, no cgroup.freeze). */
Test(cgroup, legacy_layout_without_cgroup2_tracks_kills_and_freezes_with_v1) {
  struct statfs s;
  if (host_is_unified() || statfs("/sys/fs/cgroup/unified", &s) < 0 || s.f_type != CGROUP2_SUPER_MAGIC)
    cr_skip_test("needs a hybrid host");
  cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %s", strerror(errno));
  cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
  cr_assert_eq(mount("tmpfs", "/sys/fs/cgroup/unified", "tmpfs", 0, "size=4k"), 0);
  enum an_cgroup_layout l;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_detect(&l, &err), 0);
  cr_assert_eq(l, AN_CGROUP_LEGACY);

  struct an_spec_resources res = {0};
  res.has_pids_limit = true; res.pids_limit = 16;
  create_ok(&res);
  cr_assert_eq(an_cgroup_clone_fd(g_cg), -1);
  struct kid k = spawn(fork_one_and_sleep);
  enter_and_go(&k);
  int g = 0;
  read_full(k.res, &g, sizeof g);
  cr_assert(has_pid(g_cg, k.pid));
  cr_assert(has_pid(g_cg, g));
  cr_assert_eq(an_cgroup_freeze(g_cg, true, &err), 0, "freeze: %s", err ? err->msg : "?");
  cr_assert_str_eq(read_ctl("freezer", "freezer.state"), "FROZEN");
  cr_assert_eq(an_cgroup_freeze(g_cg, false, &err), 0, "thaw: %s", err ? err->msg : "?");
  cr_assert_str_eq(read_ctl("freezer", "freezer.state"), "THAWED");
  cr_assert_eq(an_cgroup_kill(g_cg, SIGKILL, &err), 0, "kill: %s", err ? err->msg : "?");
  int st = wait_kid(&k);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  cr_assert_eq(an_cgroup_destroy(g_cg, &err), 0, "destroy: %s", err ? err->msg : "?");
  an_cgroup_free(g_cg);
  g_cg = NULL;
  assert_gone_everywhere(g_path);
}
