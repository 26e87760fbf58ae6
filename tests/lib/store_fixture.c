/* tests/lib/store_fixture.c — see store_fixture.h. */
#include "store_fixture.h"
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "agentnest/image.h"

void an_test_lib_env(char *cli, size_t cli_len) {
  if (access(AN_TEST_IMAGE_CACHE "/busybox/layout", F_OK) != 0)
    cr_skip_test("image cache %s absent: run `make images`", AN_TEST_IMAGE_CACHE "/busybox/layout");
  const char *bdir = getenv("AN_TEST_BUILD"), *sdir = getenv("AN_TEST_SRC");
  char p[PATH_MAX], q[PATH_MAX + 32];
  snprintf(q, sizeof q, "%s/agentnest-init", bdir && *bdir ? bdir : "build");
  if (!realpath(q, p)) cr_skip_test("%s missing: run `make`", q);
  setenv("AGENTNEST_INIT", p, 1);
  if (cli) {
    snprintf(q, sizeof q, "%s/agentnest", bdir && *bdir ? bdir : "build");
    char r[PATH_MAX];
    if (!realpath(q, r)) cr_skip_test("%s missing: run `make`", q);
    snprintf(cli, cli_len, "%s", r);
  }
  snprintf(q, sizeof q, "%s/profiles", sdir && *sdir ? sdir : ".");
  if (realpath(q, p)) setenv("AGENTNEST_PROFILES", p, 1);
}

void an_test_store_make(const char *root) {
  mkdir(root, 0711);
  setenv("AGENTNEST_IDRANGE_ROOT", root, 1);
}

bool an_test_store_image(const char *root, const char *name, bool optional) {
  char lay[PATH_MAX];
  snprintf(lay, sizeof lay, AN_TEST_IMAGE_CACHE "/%s/layout", name);
  if (optional && access(lay, F_OK) != 0) return false;
  char lock[PATH_MAX + 16];
  snprintf(lock, sizeof lock, "%s.lock", root);
  int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  cr_assert(fd >= 0, "open %s", lock);
  flock(fd, LOCK_EX);
  an_error_t err = NULL;
  struct an_image_info *info = NULL;
  bool ok = an_image_resolve(root, name, &info, &err) == 0;
  an_image_info_free(info);
  an_error_free(&err);
  if (!ok) {
    ok = an_image_import(root, lay, name, NULL, NULL, &err) == 0;
    if (!ok && !optional) {
      flock(fd, LOCK_UN);
      close(fd);
      cr_assert_fail("import %s: %s", name, err ? err->msg : "");
    }
    an_error_free(&err);
  }
  flock(fd, LOCK_UN);
  close(fd);
  return ok;
}

void an_test_msleep(int ms) {
  struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}
