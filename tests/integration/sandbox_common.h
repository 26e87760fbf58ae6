/* tests/integration/sandbox_common.h — what the sandbox layer tests share
 * (sandbox_test.c, sandbox_lifetime_test.c, sandbox_secrets_test.c,
 * sandbox_files_test.c): one store per test run (/tmp/an-sbtest-<runner
 * pid>, removed after the run) with the busybox and python images, making,
 * running in and destroying a sandbox, and the check that nothing of a
 * sandbox is left on the host (state, cgroups, mounts).  Included by one
 * test file per binary; the helpers assert (criterion). */
#ifndef AN_TESTS_SANDBOX_COMMON_H
#define AN_TESTS_SANDBOX_COMMON_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agentnest.h"
#include "agentnest/sandbox.h"
#include "image_fixture.h"
#include "store_fixture.h"
#include "util.h"
#include "ctx_fixture.h"

#define CACHE "/var/cache/agentnest/images"
static char g_root[PATH_MAX];
static bool g_have_python;

#define msleep an_test_msleep

/* One store per test run (criterion forks each test from the runner:
 * getppid() names the run); images imported once, under a lock.  The id
 * ranges are the store's own, so that the prune test can check it left no
 * reservation behind. */
static inline void setup(void) {
  an_test_lib_env(NULL, 0);
  snprintf(g_root, sizeof g_root, "/tmp/an-sbtest-%d", (int) getppid());
  an_test_store_make(g_root);
  an_test_store_image(g_root, "busybox", false);
  g_have_python = an_test_store_image(g_root, "python", true);
}

static inline struct an_sandbox_opts *opts_for(const char *image) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err) == 0, "%s", err ? err->msg : "");
  cr_assert(an_sandbox_opts_set_image(o, image, &err) == 0);
  return o;
}

static inline struct an_sandbox *make_sb(struct an_sandbox_opts *o) {
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  int r = an_sandbox_create(g_root, o, &sb, &err);
  cr_assert(r == 0, "create: %s", err ? err->msg : "");
  return sb;
}

static inline struct an_exec_result run(struct an_sandbox *sb, const char *script, uint64_t timeout_ms) {
  char *argv[] = {"sh", "-c", (char *) script, NULL};
  struct an_exec_opts eo = {.timeout_ms = timeout_ms};
  struct an_exec_result res;
  an_error_t err = NULL;
  int r = an_sandbox_exec(sb, argv, &eo, &res, &err);
  cr_assert(r == 0, "exec %s: %s", script, err ? err->msg : "");
  return res;
}

/* Nothing of sandbox `id` remains on the host. */
static inline void assert_gone(const char *id) {
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/sandboxes/%s", g_root, id);
  cr_expect(access(p, F_OK) != 0, "state dir %s remains", p);
  snprintf(p, sizeof p, "%s/sandbox-reaping/%s", g_root, id);
  cr_expect(access(p, F_OK) != 0, "remains %s of a destroyed sandbox", p);
  snprintf(p, sizeof p, "%s/containers/%s", g_root, id);
  cr_expect(access(p, F_OK) != 0, "container state %s remains", p);
  static const char *const hier[] = {"unified", "memory", "pids", "cpu", "freezer", "devices",
                                     "cpuset", "blkio", "systemd", NULL};
  for (size_t i = 0; hier[i]; i++) {
    snprintf(p, sizeof p, "/sys/fs/cgroup/%s/agentnest/sb-%s", hier[i], id);
    cr_expect(access(p, F_OK) != 0, "cgroup %s remains", p);
  }
  snprintf(p, sizeof p, "/sys/fs/cgroup/agentnest/sb-%s", id);
  cr_expect(access(p, F_OK) != 0, "cgroup %s remains", p);
  FILE *f = fopen("/proc/self/mountinfo", "re");
  cr_assert(f);
  char line[4096];
  while (fgets(line, sizeof line, f)) cr_expect(!strstr(line, id), "mount remains: %s", line);
  fclose(f);
}

static inline void destroy(struct an_sandbox *sb) {
  char id[AN_SANDBOX_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  an_error_t err = NULL;
  cr_expect(an_sandbox_destroy(sb, 0, &err) == 0, "destroy: %s", err ? err->msg : "");
  an_error_free(&err);
  an_sandbox_close(sb);
  assert_gone(id);
}

/* After the run (in the runner process): remove the run's store. */
ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  char root[PATH_MAX];
  snprintf(root, sizeof root, "/tmp/an-sbtest-%d", (int) getpid());
  an_test_store_remove(root);
}

#endif
