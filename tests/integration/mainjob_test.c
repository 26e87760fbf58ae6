/* tests/integration/mainjob_test.c — the main job on real input as part of
 * `make check`: tests/mainjob/cpython-regrtest.sh runs CPython's regression
 * test modules on the host and in a sandbox and must find no unexplained
 * difference.  LONG (tens of minutes): set AN_SKIP_LONG=1 to skip it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

Test(mainjob, cpython_regrtest_passes_in_the_sandbox_as_on_the_host, .timeout = 7200) {
  const char *skip = getenv("AN_SKIP_LONG");
  if (skip && *skip && *skip != '0') cr_skip_test("AN_SKIP_LONG set");
  const char *src = getenv("AN_TEST_SRC");
  const char *build = getenv("AN_TEST_BUILD");
  char cmd[8192];
  /* BUILD is relative to the source dir in the script; pass an absolute one. */
  snprintf(cmd, sizeof cmd, "BUILD='%s' '%s/tests/mainjob/cpython-regrtest.sh'",
           build && *build ? build : "build", src && *src ? src : ".");
  int st = system(cmd);
  cr_assert(WIFEXITED(st), "script killed: %#x", st);
  if (WEXITSTATUS(st) == 2) cr_skip_test("set-up missing (python3.11 test suite or image); see output");
  cr_assert_eq(WEXITSTATUS(st), 0, "unexplained differences between host and sandbox (table above)");
}
