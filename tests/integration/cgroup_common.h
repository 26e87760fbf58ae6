/* tests/integration/cgroup_common.h — what the cgroup tests share
 * (cgroup_test.c, cgroup_limits_test.c, cgroup_devices_test.c): the test's
 * own cgroup "agentnest/test-cg-<pid>" (criterion forks one process per
 * test), removed in .fini with every child process even when an assertion
 * failed; reading control files in either hierarchy, the host's layout and
 * controllers, and child processes that enter the cgroup on cue.  Included
 * by one test file per binary; the helpers assert (criterion).  Run as root
 * on the real kernel: this hybrid host and, through tests/run-cgroupv2.sh,
 * a pure cgroup v2 kernel. */
#ifndef AN_TESTS_CGROUP_COMMON_H
#define AN_TESTS_CGROUP_COMMON_H

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

static inline void setup(void) {
  /* Reap orphaned grandchildren here (as the sandbox monitor does), so that
   * their pids are released and pids.current can return to baseline. */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  snprintf(g_path, sizeof g_path, "agentnest/test-cg-%d", (int) getpid());
}

static inline void teardown(void) {
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

static inline bool host_is_unified(void) {
  struct statfs s;
  return statfs("/sys/fs/cgroup", &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC;
}

/* Directory of the test cgroup in the hierarchy enforcing v1 controller
 * `v1name` (v2 name `v2name`). */
static inline void ctrl_dir(char *buf, size_t len, const char *v1name) {
  if (host_is_unified()) { snprintf(buf, len, "/sys/fs/cgroup/%s", g_path); return; }
  char m[256];
  snprintf(m, sizeof m, "/sys/fs/cgroup/%s", v1name);
  struct statfs s;
  if (statfs(m, &s) == 0 && s.f_type == CGROUP_SUPER_MAGIC) snprintf(buf, len, "%s/%s", m, g_path);
  else snprintf(buf, len, "/sys/fs/cgroup/unified/%s", g_path);
}

static inline char *read_ctl(const char *v1name, const char *file) {
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
static inline size_t cgroup_mounts(char mounts[][256], size_t max) {
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

static inline void assert_gone_everywhere(const char *path) {
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

static inline void create_ok(const struct an_spec_resources *res) {
  an_error_t err = NULL;
  int r = an_cgroup_create(g_path, res, &g_cg, &err);
  cr_assert_eq(r, 0, "create %s: %s", g_path, err ? err->msg : "?");
}

/* Fork a child that waits for a byte on a pipe (sent after it has been
 * moved into the cgroup), then runs fn(result_fd) and exits 0. */
struct kid { pid_t pid; int go; int res; };

static inline struct kid spawn(void (*fn)(int out)) {
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

static inline void enter_and_go(struct kid *k) {
  an_error_t err = NULL;
  int r = an_cgroup_enter(g_cg, k->pid, &err);
  cr_assert_eq(r, 0, "enter: %s", err ? err->msg : "?");
  cr_assert_eq(write(k->go, "g", 1), 1);
}

static inline void read_full(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = read(fd, (char *) buf + got, len - got);
    cr_assert_gt(r, 0, "child result pipe closed early");
    got += (size_t) r;
  }
}

static inline int wait_kid(struct kid *k) {
  int st = 0;
  cr_assert_eq(waitpid(k->pid, &st, 0), k->pid);
  for (size_t i = 0; i < g_nkids; i++)
    if (g_kids[i] == k->pid) g_kids[i] = 0;
  return st;
}

static inline size_t count_pids(struct an_cgroup *cg) {
  pid_t *pids = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_pids(cg, &pids, &n, &err), 0, "pids: %s", err ? err->msg : "?");
  free(pids);
  return n;
}

static inline void sleep_forever(int out) { (void) out; for (;;) pause(); }

static inline bool controller_absent(const char *name);

static inline bool v2_controller_absent(const char *name) {
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

static inline bool controller_absent(const char *name) {
  char p[256];
  struct statfs s;
  if (!host_is_unified()) {
    snprintf(p, sizeof p, "/sys/fs/cgroup/%s", name);
    if (statfs(p, &s) == 0 && s.f_type == CGROUP_SUPER_MAGIC) return false;
  }
  return v2_controller_absent(name);
}

static inline void expect_eopnotsupp(struct an_spec_resources *res, const char *what) {
  struct an_cgroup *cg = NULL;
  an_error_t err = NULL;
  int r = an_cgroup_create(g_path, res, &cg, &err);
  cr_assert_eq(r, -EOPNOTSUPP, "%s: got %d (%s)", what, r, err ? err->msg : "");
  cr_assert(err && strstr(err->msg, what), "message names %s: %s", what, err ? err->msg : "");
  an_error_free(&err);
  assert_gone_everywhere(g_path);
}

#endif
