/* Integration tests of agentnest/cgroup.h on the real kernel, as root: on
 * this hybrid host (v1 controllers + controller-less cgroup2) and, through
 * tests/run-cgroupv2.sh, on a pure cgroup v2 kernel.  Every test uses its
 * own cgroup "agentnest/test-cg-<pid>" (criterion forks one process per
 * test) and removes it in fini even when an assertion failed.
 * Cases: BL-34 (fork bomb contained by pids.max), BL-35 (OOM kill of a
 * grandchild reported through an_cgroup_oom_kills). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include "agentnest/cgroup.h"
#include "engine/cgroup_internal.h"

static struct an_cgroup *g_cg;
static pid_t g_kids[8];
static size_t g_nkids;
static char g_path[128];

static void setup(void) {
  /* Reap orphaned grandchildren here (as the sandbox monitor does), so that
   * their pids are released and pids.current can return to baseline. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  snprintf(g_path, sizeof g_path, "agentnest/test-cg-%d", (int) getpid());
}

static void teardown(void) {
  for (size_t i = 0; i < g_nkids; i++)
    if (g_kids[i] > 0) { kill(g_kids[i], SIGKILL); waitpid(g_kids[i], NULL, 0); }
  g_nkids = 0;
  if (!g_cg) {
    an_error_t err = NULL;
    if (an_cgroup_open(g_path, &g_cg, &err) < 0) g_cg = NULL;
    an_error_free(&err);
  }
  if (g_cg) {
    an_error_t err = NULL;
    an_cgroup_destroy(g_cg, &err);
    an_error_free(&err);
    an_cgroup_free(g_cg);
    g_cg = NULL;
  }
}

TestSuite(cgroup, .init = setup, .fini = teardown);

/* ---- helpers ------------------------------------------------------------ */

static bool host_is_unified(void) {
  struct statfs s;
  return statfs("/sys/fs/cgroup", &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC;
}

/* Directory of the test cgroup in the hierarchy enforcing v1 controller
 * `v1name` (v2 name `v2name`). */
static void ctrl_dir(char *buf, size_t len, const char *v1name) {
  if (host_is_unified()) { snprintf(buf, len, "/sys/fs/cgroup/%s", g_path); return; }
  char m[256];
  snprintf(m, sizeof m, "/sys/fs/cgroup/%s", v1name);
  struct statfs s;
  if (statfs(m, &s) == 0 && s.f_type == CGROUP_SUPER_MAGIC) snprintf(buf, len, "%s/%s", m, g_path);
  else snprintf(buf, len, "/sys/fs/cgroup/unified/%s", g_path);
}

static char *read_ctl(const char *v1name, const char *file) {
  char d[512], p[700];
  ctrl_dir(d, sizeof d, v1name);
  snprintf(p, sizeof p, "%s/%s", d, file);
  static char buf[4096];
  FILE *f = fopen(p, "re");
  cr_assert_not_null(f, "open %s: %s", p, strerror(errno));
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  while (n && buf[n - 1] == '\n') buf[--n] = '\0';
  return buf;
}

/* Every cgroup hierarchy mount point, from /proc/self/mountinfo. */
static size_t cgroup_mounts(char mounts[][256], size_t max) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  cr_assert_not_null(f);
  char line[1024];
  size_t n = 0;
  while (n < max && fgets(line, sizeof line, f)) {
    char *sep = strstr(line, " - ");
    if (!sep) continue;
    if (strncmp(sep + 3, "cgroup ", 7) && strncmp(sep + 3, "cgroup2 ", 8)) continue;
    char mnt[256];
    if (sscanf(line, "%*s %*s %*s %*s %255s", mnt) == 1) snprintf(mounts[n++], 256, "%s", mnt);
  }
  fclose(f);
  return n;
}

static void assert_gone_everywhere(const char *path) {
  char mounts[32][256];
  size_t n = cgroup_mounts(mounts, 32);
  cr_assert_gt(n, 0);
  for (size_t i = 0; i < n; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", mounts[i], path);
    struct stat st;
    cr_assert_neq(stat(p, &st), 0, "%s still exists", p);
  }
}

static void create_ok(const struct an_spec_resources *res) {
  an_error_t err = NULL;
  int r = an_cgroup_create(g_path, res, &g_cg, &err);
  cr_assert_eq(r, 0, "create %s: %s", g_path, err ? err->msg : "?");
}

/* Fork a child that waits for a byte on a pipe (sent after it has been
 * moved into the cgroup), then runs fn(result_fd) and exits 0. */
struct kid { pid_t pid; int go; int res; };

static struct kid spawn(void (*fn)(int out)) {
  int go[2], res[2];
  cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
  cr_assert_eq(pipe2(res, O_CLOEXEC), 0);
  pid_t p = fork();
  cr_assert_geq(p, 0);
  if (p == 0) {
    char c;
    close(go[1]);
    close(res[0]);
    if (read(go[0], &c, 1) != 1) _exit(99);
    fn(res[1]);
    _exit(0);
  }
  close(go[0]);
  close(res[1]);
  g_kids[g_nkids++] = p;
  return (struct kid){p, go[1], res[0]};
}

static void enter_and_go(struct kid *k) {
  an_error_t err = NULL;
  int r = an_cgroup_enter(g_cg, k->pid, &err);
  cr_assert_eq(r, 0, "enter: %s", err ? err->msg : "?");
  cr_assert_eq(write(k->go, "g", 1), 1);
}

static void read_full(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = read(fd, (char *) buf + got, len - got);
    cr_assert_gt(r, 0, "child result pipe closed early");
    got += (size_t) r;
  }
}

static int wait_kid(struct kid *k) {
  int st = 0;
  cr_assert_eq(waitpid(k->pid, &st, 0), k->pid);
  for (size_t i = 0; i < g_nkids; i++)
    if (g_kids[i] == k->pid) g_kids[i] = 0;
  return st;
}

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

static size_t count_pids(struct an_cgroup *cg) {
  pid_t *pids = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_pids(cg, &pids, &n, &err), 0, "pids: %s", err ? err->msg : "?");
  free(pids);
  return n;
}

static void sleep_forever(int out) { (void) out; for (;;) pause(); }

/* ---- layout ------------------------------------------------------------- */

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

/* ---- limits ------------------------------------------------------------- */

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

/* ---- processes ---------------------------------------------------------- */

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

static bool controller_absent(const char *name);

Test(cgroup, freeze_stops_every_process_and_thaw_resumes) {
  create_ok(NULL);
  volatile unsigned long *ctr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq((void *) ctr, MAP_FAILED);
  pid_t p = fork();
  cr_assert_geq(p, 0);
  if (p == 0) { for (;;) (*ctr)++; }
  g_kids[g_nkids++] = p;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_enter(g_cg, p, &err), 0, "enter: %s", err ? err->msg : "?");
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

/* ---- refusals ----------------------------------------------------------- */

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

static bool v2_controller_absent(const char *name) {
  char p[256];
  const char *root = host_is_unified() ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
  snprintf(p, sizeof p, "%s/cgroup.controllers", root);
  FILE *f = fopen(p, "re");
  char buf[512] = "";
  if (f) { if (!fgets(buf, sizeof buf, f)) buf[0] = '\0'; fclose(f); }
  for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n"))
    if (!strcmp(t, name)) return false;
  return true;
}

static bool controller_absent(const char *name) {
  char p[256];
  struct statfs s;
  if (!host_is_unified()) {
    snprintf(p, sizeof p, "/sys/fs/cgroup/%s", name);
    if (statfs(p, &s) == 0 && s.f_type == CGROUP_SUPER_MAGIC) return false;
  }
  return v2_controller_absent(name);
}

static void expect_eopnotsupp(struct an_spec_resources *res, const char *what) {
  struct an_cgroup *cg = NULL;
  an_error_t err = NULL;
  int r = an_cgroup_create(g_path, res, &cg, &err);
  cr_assert_eq(r, -EOPNOTSUPP, "%s: got %d (%s)", what, r, err ? err->msg : "");
  cr_assert(err && strstr(err->msg, what), "message names %s: %s", what, err ? err->msg : "");
  an_error_free(&err);
  assert_gone_everywhere(g_path);
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

/* ---- devices ------------------------------------------------------------ */

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

/* The v1 freezer writer itself (engine/cgroup_internal.h); where a v1
 * freezer is mounted an_cgroup_freeze uses it, else cgroup.freeze. */
Test(cgroup, v1_freezer_fallback_freezes_and_thaws) {
  if (host_is_unified() || controller_absent("freezer")) cr_skip_test("no v1 freezer");
  create_ok(NULL);
  volatile unsigned long *ctr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq((void *) ctr, MAP_FAILED);
  pid_t p = fork();
  cr_assert_geq(p, 0);
  if (p == 0) { for (;;) (*ctr)++; }
  g_kids[g_nkids++] = p;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_enter(g_cg, p, &err), 0, "enter: %s", err ? err->msg : "?");
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
