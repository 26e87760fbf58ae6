/* tests/unit/landlock_test.c — engine/landlock.c on the real kernel: a
 * process confined with an_landlock_confine_writes writes only beneath the
 * given paths (host evidence: the other directory's tree digest is
 * unchanged), reads are untouched, bad input applies nothing, and the
 * writable mount points of a spec.  Each confined attempt runs in a forked
 * child (a Landlock domain cannot be left); each has a negative control
 * (the same attempts unconfined succeed). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/spec.h"
#include "engine/landlock.h"
#include "ws_fixture.h"

static char root[64], dir_a[96], dir_b[96], file_b[128];

static void setup(void) {
  snprintf(root, sizeof root, "/tmp/an-landlock-%d-XXXXXX", getpid());
  cr_assert(mkdtemp(root));
  snprintf(dir_a, sizeof dir_a, "%s/a", root);
  snprintf(dir_b, sizeof dir_b, "%s/b", root);
  snprintf(file_b, sizeof file_b, "%s/b/f", root);
  cr_assert(mkdir(dir_a, 0755) == 0 && mkdir(dir_b, 0755) == 0);
  ws_write(file_b, "host content\n");
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void) st;
  (void) ftw;
  return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void teardown(void) {
  if (root[0]) nftw(root, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(landlock, .init = setup, .fini = teardown, .timeout = 30);

static void require_landlock(void) {
  if (an_landlock_abi_version() == -EOPNOTSUPP) cr_skip_test("kernel without Landlock");
}

/* Results of the write attempts, as errno values (0 = succeeded). */
struct attempts {
  int confine;                 /* an_landlock_confine_writes result */
  int create_a, create_b, mkdir_b, unlink_b, write_b, truncate_b, rename_ab, symlink_b, read_b;
  char msg[256];
};

static int try(int r) { return r < 0 ? errno : 0; }

static void attempt_all(struct attempts *a) {
  char p[256], q[256];
  snprintf(p, sizeof p, "%s/new", dir_a);
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
  a->create_a = try(fd);
  if (fd >= 0) close(fd);
  snprintf(p, sizeof p, "%s/new", dir_b);
  fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
  a->create_b = try(fd);
  if (fd >= 0) close(fd);
  snprintf(p, sizeof p, "%s/d", dir_b);
  a->mkdir_b = try(mkdir(p, 0755));
  fd = open(file_b, O_WRONLY | O_APPEND);
  a->write_b = try(fd);
  if (fd >= 0) close(fd);
  a->truncate_b = try(truncate(file_b, 1));
  snprintf(p, sizeof p, "%s/new", dir_a);
  snprintf(q, sizeof q, "%s/moved", dir_b);
  a->rename_ab = try(rename(p, q));
  snprintf(p, sizeof p, "%s/link", dir_b);
  a->symlink_b = try(symlink("/", p));
  fd = open(file_b, O_RDONLY);
  a->read_b = try(fd);
  if (fd >= 0) close(fd);
  a->unlink_b = try(unlink(file_b));
}

/* Run in a child: optionally no_new_privs + confine to `paths`, then the
 * attempts; results come back through a shared pipe. */
static struct attempts run_child(const char **paths, size_t n, bool confine, bool nnp, uid_t uid) {
  int p[2];
  cr_assert(pipe(p) == 0);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    struct attempts a;
    memset(&a, 0, sizeof a);
    if (uid && (setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)) _exit(90);
    if (nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) _exit(91);
    if (confine) {
      an_error_t err = NULL;
      a.confine = an_landlock_confine_writes(paths, n, &err);
      if (err) snprintf(a.msg, sizeof a.msg, "%s", err->msg);
      an_error_free(&err);
    }
    attempt_all(&a);
    _exit(write(p[1], &a, sizeof a) == (ssize_t) sizeof a ? 0 : 92);
  }
  close(p[1]);
  struct attempts a;
  cr_assert_eq(read(p[0], &a, sizeof a), (ssize_t) sizeof a, "child failed");
  close(p[0]);
  int st;
  waitpid(pid, &st, 0);
  return a;
}

Test(landlock, abi_version_and_write_accesses) {
  int abi = an_landlock_abi_version();
  cr_assert(abi >= 1 || abi == -EOPNOTSUPP, "abi %d", abi);
  cr_assert_eq(an_landlock_write_accesses(0), 0);
  cr_assert(an_landlock_write_accesses(3) > an_landlock_write_accesses(2));
  cr_assert(an_landlock_write_accesses(2) > an_landlock_write_accesses(1));
}

Test(landlock, writes_confined_beneath_the_given_paths) {
  require_landlock();
  char before[65], after[65];
  ws_tree_digest(dir_b, before);
  const char *paths[] = {dir_a};
  struct attempts a = run_child(paths, 1, true, true, 0);
  cr_assert_eq(a.confine, 0, "confine: %s", a.msg);
  cr_assert_eq(a.create_a, 0, "create beneath the writable path: %s", strerror(a.create_a));
  cr_assert_eq(a.create_b, EACCES);
  cr_assert_eq(a.mkdir_b, EACCES);
  cr_assert_eq(a.write_b, EACCES);
  if (an_landlock_abi_version() >= 3) cr_assert_eq(a.truncate_b, EACCES);
  cr_assert(a.rename_ab == EACCES || a.rename_ab == EXDEV, "rename out: %s", strerror(a.rename_ab));
  cr_assert_eq(a.symlink_b, EACCES);
  cr_assert_eq(a.unlink_b, EACCES);
  cr_assert_eq(a.read_b, 0, "reads are not restricted");
  ws_tree_digest(dir_b, after);
  cr_assert_str_eq(before, after, "the non-writable directory changed");
}

Test(landlock, negative_control_unconfined_writes_succeed) {
  struct attempts a = run_child(NULL, 0, false, true, 0);
  cr_assert_eq(a.create_b, 0);
  cr_assert_eq(a.mkdir_b, 0);
  cr_assert_eq(a.write_b, 0);
  cr_assert_eq(a.truncate_b, 0);
  cr_assert_eq(a.rename_ab, 0);
  cr_assert_eq(a.symlink_b, 0);
  cr_assert_eq(a.unlink_b, 0);
}

Test(landlock, file_rule_allows_writing_that_file_only) {
  require_landlock();
  const char *paths[] = {file_b};
  struct attempts a = run_child(paths, 1, true, true, 0);
  cr_assert_eq(a.confine, 0, "confine: %s", a.msg);
  cr_assert_eq(a.write_b, 0);
  cr_assert_eq(a.create_b, EACCES);
  cr_assert_eq(a.create_a, EACCES);
  cr_assert_eq(a.unlink_b, EACCES, "removing needs a right on the directory");
}

Test(landlock, missing_path_fails_naming_it_and_applies_nothing) {
  require_landlock();
  const char *paths[] = {dir_a, "/nonexistent-an-landlock"};
  struct attempts a = run_child(paths, 2, true, true, 0);
  cr_assert_eq(a.confine, -ENOENT);
  cr_assert(strstr(a.msg, "/nonexistent-an-landlock"), "message: %s", a.msg);
  cr_assert_eq(a.create_b, 0, "a domain was applied despite the error");
}

Test(landlock, relative_or_no_paths_refused) {
  require_landlock();
  const char *rel[] = {"tmp"};
  struct attempts a = run_child(rel, 1, true, true, 0);
  cr_assert_eq(a.confine, -EINVAL);
  cr_assert_eq(a.create_b, 0);
  an_error_t err = NULL;
  cr_assert_eq(an_landlock_confine_writes(NULL, 0, &err), -EINVAL);
  an_error_free(&err);
}

Test(landlock, without_no_new_privs_an_unprivileged_process_is_refused) {
  require_landlock();
  cr_assert(chmod(root, 0777) == 0 && chmod(dir_b, 0777) == 0 && chmod(file_b, 0666) == 0);
  const char *paths[] = {dir_a};
  struct attempts a = run_child(paths, 1, true, false, 65534);
  cr_assert_eq(a.confine, -EPERM, "confine: %d %s", a.confine, a.msg);
  cr_assert_eq(a.create_b, 0, "nothing applied");
}

Test(landlock, writable_paths_of_a_spec) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_spec_new_default(&spec, &err), 0);
  const char **paths = NULL;
  size_t n = 0;
  cr_assert_eq(an_landlock_writable_paths(spec, &paths, &n, &err), 0);
  bool tmp = false, proc = false, sys = false, slash = false, devpts = false;
  for (size_t i = 0; i < n; i++) {
    tmp |= strcmp(paths[i], "/tmp") == 0;
    proc |= strcmp(paths[i], "/proc") == 0;
    sys |= strcmp(paths[i], "/sys") == 0;
    slash |= strcmp(paths[i], "/") == 0;
    devpts |= strcmp(paths[i], "/dev/pts") == 0;
  }
  cr_assert(tmp && devpts, "writable mounts missing");
  cr_assert(!proc && !sys, "procfs/sysfs listed");
  cr_assert(!slash, "read-only root listed");
  free(paths);
  spec->root.readonly = false;
  cr_assert_eq(an_landlock_writable_paths(spec, &paths, &n, &err), 0);
  cr_assert_str_eq(paths[0], "/");
  free(paths);
  an_spec_free(spec);
}
