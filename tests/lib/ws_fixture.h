/* tests/lib/ws_fixture.h — a throw-away workspace for host-side file tests:
 * ROOT=/tmp/an-wsfs-<pid>-XXXXXX holding ROOT/ws (the workspace) and
 * ROOT/CANARY (host content that must never change or be returned), plus the
 * evidence checks of the filesystem cases (BL-21, BL-23, BL-24, BL-26, BL-27). */
#ifndef AN_TEST_WS_FIXTURE_H
#define AN_TEST_WS_FIXTURE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define WS_CANARY_SECRET "HOST-CANARY-SECRET\n"

struct ws_fixture {
  char root[PATH_MAX];
  char ws[PATH_MAX];
  char canary[PATH_MAX];  /* directory with secret.txt = WS_CANARY_SECRET */
  int wsfd;
  char canary_digest[65]; /* digest of the canary tree at setup */
};

/* Create the tree and open ws (aborts the test on failure). */
void ws_fixture_setup(struct ws_fixture *f);
/* Close and remove everything (no symlink followed). */
void ws_fixture_teardown(struct ws_fixture *f);
/* sha256 over names, types, modes, link targets and contents of a tree
 * (walked without following symlinks), lowercase hex into out[65]. */
void ws_tree_digest(const char *dir, char out[65]);
/* Whether the canary tree is byte-for-byte unchanged since setup. */
bool ws_canary_unchanged(const struct ws_fixture *f);
/* Number of entries named `name` under `dir` (not following symlinks),
 * skipping the subtree `exclude` (may be NULL). */
int ws_count_named(const char *dir, const char *name, const char *exclude);
/* sha256 hex of a host file's content; false if unreadable. */
bool ws_file_sha256(const char *path, char out[65]);
/* sha256 hex of a buffer. */
void ws_buf_sha256(const void *buf, size_t len, char out[65]);
/* Write a host file: content as a string, mode 0644 (an_test_write_file). */
void ws_write(const char *path, const char *content);
/* snprintf into a char array; fails the test on truncation. */
#define ws_path(buf, ...)                                                    \
  do {                                                                       \
    if (snprintf((buf), sizeof(buf), __VA_ARGS__) >= (int) sizeof(buf))      \
      cr_assert_fail("path too long");                                       \
  } while (0)

#endif
