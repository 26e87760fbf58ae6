/* Tests of the entry and byte caps of host-side walks (issue 10 item 6):
 * every directory copy, artifacts call, snapshot and restore stops at an
 * explicit cap with a clear error instead of growing with what a sandbox
 * left in its workspace.  Small caps stand for the defaults
 * (AN_TREE_DEFAULT_MAX_ENTRIES, AN_TREE_DEFAULT_MAX_BYTES). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/artifacts.h"
#include "agentnest/files.h"
#include "agentnest/snapshot.h"
#include "ws_fixture.h"

static struct ws_fixture fx;
static void setup(void) { ws_fixture_setup(&fx); }
static void teardown(void) { ws_fixture_teardown(&fx); }
TestSuite(host_caps, .init = setup, .fini = teardown, .timeout = 60);

/* 50 empty files and one of 1 MiB. */
static void make_many(void) {
  char p[PATH_MAX];
  for (int i = 0; i < 50; i++) {
    ws_path(p, "%s/f%02d", fx.ws, i);
    ws_write(p, "");
  }
  ws_path(p, "%s/mb", fx.ws);
  int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  cr_assert_eq(ftruncate(fd, 1 << 20), 0); /* logical bytes count, holes too */
  close(fd);
}

/* `call` sets err: a macro, so that err is read after the call. */
#define assert_err(call, expect, err, part)                                         \
  do {                                                                              \
    int r_ = (call);                                                                \
    cr_assert_eq(r_, (expect), "r=%d %s", r_, (err) ? (err)->msg : "");             \
    cr_assert(strstr((err)->msg, (part)), "%s", (err)->msg);                        \
  } while (0)

Test(host_caps, dir_get_stops_at_the_entry_cap) {
  make_many();
  char out[PATH_MAX];
  ws_path(out, "%s/out", fx.root);
  struct an_file_opts o = {.max_entries = 20};
  an_error_t err = NULL;
  assert_err(an_dir_get(fx.wsfd, ".", out, &o, &err), -E2BIG, err, "more than 20 entries");
  an_error_free(&err);
}

Test(host_caps, dir_get_stops_at_the_byte_cap_counting_holes) {
  make_many();
  char out[PATH_MAX];
  ws_path(out, "%s/out", fx.root);
  struct an_file_opts o = {.max_total_bytes = 512 << 10};
  an_error_t err = NULL;
  assert_err(an_dir_get(fx.wsfd, ".", out, &o, &err), -EFBIG, err, "bytes in all");
  an_error_free(&err);
}

Test(host_caps, artifacts_stop_at_the_entry_and_byte_caps) {
  make_many();
  struct an_artifact_list l;
  an_error_t err = NULL;
  struct an_artifact_opts ao = {.max_entries = 20};
  assert_err(an_artifacts_collect(fx.wsfd, NULL, 0, &ao, &l, &err), -E2BIG, err, "more than 20 entries");
  an_error_free(&err);
  struct an_artifact_opts bo = {.max_total_bytes = 512 << 10};
  assert_err(an_artifacts_collect(fx.wsfd, NULL, 0, &bo, &l, &err), -EFBIG, err, "bytes in all");
  an_error_free(&err);
}

Test(host_caps, snapshot_and_restore_stop_at_the_entry_cap) {
  make_many();
  char tar[PATH_MAX];
  ws_path(tar, "%s/s.tar", fx.root);
  struct an_snapshot_opts so = {.max_entries = 20};
  an_error_t err = NULL;
  assert_err(an_workspace_snapshot(fx.wsfd, tar, &so, NULL, &err), -E2BIG, err, "more than 20 entries");
  an_error_free(&err);
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, NULL, NULL, &err), 0, "%s", err ? err->msg : "");
  char r[PATH_MAX];
  ws_path(r, "%s/r", fx.root);
  cr_assert_eq(mkdir(r, 0755), 0);
  int pfd = open(fx.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  assert_err(an_workspace_restore_ex(pfd, "r", tar, NULL, &so, &err), -E2BIG, err, "more than 20 entries");
  close(pfd);
  an_error_free(&err);
}

/* With the default caps (no option set): a workspace of more than 100000
 * empty files (the red team made 1 M; the host CLI then took 626 MB) is
 * refused with -E2BIG by the walks that collect names (artifacts,
 * snapshot: the directory's listing stops at the cap) instead of being
 * collected. */
Test(host_caps, default_entry_cap_stops_a_huge_directory, .timeout = 300) {
  char p[PATH_MAX];
  ws_path(p, "%s/many", fx.ws);
  cr_assert_eq(mkdir(p, 0755), 0);
  int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (int i = 0; i < 100050; i++) {
    char name[32];
    snprintf(name, sizeof name, "%d", i);
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    close(fd);
  }
  close(dfd);
  an_error_t err = NULL;
  struct an_artifact_list l;
  assert_err(an_artifacts_collect(fx.wsfd, NULL, 0, NULL, &l, &err), -E2BIG, err, "more than 100000 entries");
  an_error_free(&err);
  /* (an_dir_get streams: it would copy 100000 files before its cap; its
   * cap is checked above with a small one) */
  char tar[PATH_MAX];
  ws_path(tar, "%s/s.tar", fx.root);
  assert_err(an_workspace_snapshot(fx.wsfd, tar, NULL, NULL, &err), -E2BIG, err, "more than 100000 entries");
  an_error_free(&err);
}
