/* Tests for util/safe_path.h: removal of hostile trees (any depth, symlinks
 * never followed, bounded fds) and the beneath-only open helpers. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/safe_path.h"
#include "ws_fixture.h"

static struct ws_fixture fx;
static void setup(void) { ws_fixture_setup(&fx); }
static void teardown(void) { ws_fixture_teardown(&fx); }
TestSuite(safe_path, .init = setup, .fini = teardown);

Test(safe_path, remove_tree_handles_any_depth_with_few_fds_and_never_follows_links) {
  /* 1000 levels, a symlink to the CANARY at several depths */
  int fd = dup(fx.wsfd);
  for (int i = 0; i < 1000; i++) {
    cr_assert_eq(mkdirat(fd, "d", 0755), 0);
    if (i % 100 == 0) cr_assert_eq(symlinkat(fx.canary, fd, "canary"), 0);
    int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
    cr_assert_geq(next, 0);
    close(fd);
    fd = next;
  }
  close(fd);
  struct rlimit rl = {64, 64};
  cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  an_error_t err = NULL;
  cr_assert_eq(an_remove_tree_beneath(fx.wsfd, "d", &err), 0, "%s", err ? err->msg : "");
  char p[PATH_MAX];
  ws_path(p, "%s/d", fx.ws);
  cr_assert_neq(access(p, F_OK), 0);
  cr_assert(ws_canary_unchanged(&fx), "a symlink was followed during removal");
  cr_assert_eq(an_remove_tree_beneath(fx.wsfd, "d", &err), 0, "missing is not an error");
}

Test(safe_path, mkdir_p_refuses_symlink_components) {
  cr_assert_eq(symlinkat(fx.canary, fx.wsfd, "esc"), 0);
  an_error_t err = NULL;
  cr_assert_eq(an_mkdir_p_beneath(fx.wsfd, "esc/a/b", 0755, &err), -EXDEV);
  cr_assert(strstr(err->msg, "path escapes workspace"), "%s", err->msg);
  an_error_free(&err);
  int fd = an_mkdir_p_beneath(fx.wsfd, "x/./y//z", 0700, &err);
  cr_assert_geq(fd, 0, "%s", err ? err->msg : "");
  struct stat st;
  cr_assert_eq(fstat(fd, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0700);
  close(fd);
  cr_assert(ws_canary_unchanged(&fx));
}

Test(safe_path, relative_path_checks) {
  an_error_t err = NULL;
  cr_assert_eq(an_path_check_relative("a/b/c", &err), 0);
  cr_assert_eq(an_path_check_relative("a/..b/c..", &err), 0, "names containing dots are fine");
  cr_assert_eq(an_path_check_relative("a/../b", &err), -EXDEV);
  an_error_free(&err);
  cr_assert_eq(an_path_check_relative("..", &err), -EXDEV);
  an_error_free(&err);
  cr_assert_eq(an_path_check_relative("/a", &err), -EXDEV);
  an_error_free(&err);
  cr_assert_eq(an_path_check_relative("", &err), -EINVAL);
  an_error_free(&err);
}
