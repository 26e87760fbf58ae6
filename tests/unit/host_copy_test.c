/* Tests of host-side amplification and walk limits (issue 10 items 6, 7,
 * 11): what a sandbox leaves in its workspace must cost the host no more
 * than it costs the workspace, whatever the path out (an_dir_get and
 * an_file_get_fd for `cp`/`--get`, artifacts --to, snapshot, restore):
 *  - sparse files keep their holes (checked with st_blocks and the tar's
 *    size: no test writes gigabytes);
 *  - the names of a hard-linked file stay links of one copy;
 *  - a directory deeper than 256 levels is skipped with a message naming it
 *    while the rest is copied;
 *  - names chosen by the sandbox are quoted in messages. */
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

/* Remove a chain dir/d/d/... of any depth (the test helper an_test_rm_tree
 * stops at 128 levels): go down keeping each level's fd, unlinking what is
 * not a directory, then rmdir upward. */
static void rm_chain(const char *dir) {
  int fds[400], n = 0;
  fds[0] = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fds[0] < 0) return;
  for (n = 1; n < 400; n++) {
    unlinkat(fds[n - 1], "mid.txt", 0);
    fds[n] = openat(fds[n - 1], "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fds[n] < 0) break;
  }
  for (int i = n - 1; i >= 0; i--) {
    if (i + 1 < n || fds[i + 1] >= 0) unlinkat(fds[i], "d", AT_REMOVEDIR);
    close(fds[i]);
  }
  rmdir(dir);
}

static void teardown(void) {
  char p[PATH_MAX];
  ws_path(p, "%s/deep", fx.ws);
  rm_chain(p);
  ws_path(p, "%s/out/deep", fx.root);
  rm_chain(p);
  ws_fixture_teardown(&fx);
}
TestSuite(host_copy, .init = setup, .fini = teardown, .timeout = 120);

#define DATA "0123456789abcdef"

/* A file of `size` bytes in the workspace holding DATA at offset `at`,
 * everything else a hole. */
static void make_sparse(const char *name, off_t size, off_t at) {
  char p[PATH_MAX];
  ws_path(p, "%s/%s", fx.ws, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  cr_assert_geq(fd, 0, "create %s", p);
  cr_assert_eq(pwrite(fd, DATA, sizeof DATA - 1, at), (ssize_t) sizeof DATA - 1);
  cr_assert_eq(ftruncate(fd, size), 0);
  close(fd);
}

/* The host copy at `path` has the logical size, DATA at `at`, and takes
 * at most 1 MiB of disk. */
static void assert_sparse_copy(const char *path, off_t size, off_t at) {
  struct stat st;
  cr_assert_eq(stat(path, &st), 0, "stat %s", path);
  cr_assert_eq(st.st_size, size, "%s: size %lld", path, (long long) st.st_size);
  cr_assert_leq((long long) st.st_blocks * 512, 1 << 20, "%s: %lld bytes on disk: holes were filled", path,
                (long long) st.st_blocks * 512);
  char buf[sizeof DATA] = {0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  cr_assert_eq(pread(fd, buf, sizeof DATA - 1, at), (ssize_t) sizeof DATA - 1);
  close(fd);
  cr_assert_str_eq(buf, DATA);
}

static void out_path(char *buf, size_t n, const char *name) {
  cr_assert_lt(snprintf(buf, n, "%s/%s", fx.root, name), (int) n);
}

Test(host_copy, sparse_files_keep_their_holes_through_dir_get_and_get_fd) {
  const off_t size = 60 << 20; /* under the 64 MiB read cap */
  cr_assert_eq(mkdir(strcat(strcpy((char[PATH_MAX]){0}, fx.ws), "/d"), 0755), 0);
  make_sparse("d/s1", size, 12345);
  make_sparse("d/s2", size, size - 100);
  char out[PATH_MAX], p[PATH_MAX + 16];
  out_path(out, sizeof out, "out");
  an_error_t err = NULL;
  cr_assert_eq(an_dir_get(fx.wsfd, "d", out, NULL, &err), 0, "%s", err ? err->msg : "");
  ws_path(p, "%s/s1", out);
  assert_sparse_copy(p, size, 12345);
  ws_path(p, "%s/s2", out);
  assert_sparse_copy(p, size, size - 100);
  /* one file, streamed to a host file (`cp`, `--get`) */
  ws_path(p, "%s/one", fx.root);
  int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  uint64_t copied = 0;
  cr_assert_eq(an_file_get_fd(fx.wsfd, "d/s1", fd, NULL, &copied, &err), 0, "%s", err ? err->msg : "");
  close(fd);
  cr_assert_eq(copied, (uint64_t) size);
  assert_sparse_copy(p, size, 12345);
}

Test(host_copy, sparse_files_keep_their_holes_through_artifacts_to) {
  const off_t size = 60 << 20;
  make_sparse("a.bin", size, 4096 * 7);
  char out[PATH_MAX], p[PATH_MAX + 16];
  out_path(out, sizeof out, "art");
  struct an_artifact_opts ao = {.to_dir = out};
  struct an_artifact_list l;
  an_error_t err = NULL;
  const char *globs[] = {"*.bin"};
  cr_assert_eq(an_artifacts_collect(fx.wsfd, globs, 1, &ao, &l, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(l.n, 1);
  cr_assert_eq(l.items[0].size, (uint64_t) size);
  an_artifact_list_free(&l);
  ws_path(p, "%s/a.bin", out);
  assert_sparse_copy(p, size, 4096 * 7);
}

/* 8 MiB of data and 31 more names: the host gets one copy with 32 names,
 * not 256 MiB. */
static void make_linked(void) {
  char p[PATH_MAX], q[PATH_MAX];
  ws_path(p, "%s/big", fx.ws);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char *buf = malloc(1 << 20);
  memset(buf, 'x', 1 << 20);
  for (int i = 0; i < 8; i++) cr_assert_eq(write(fd, buf, 1 << 20), 1 << 20);
  free(buf);
  close(fd);
  for (int i = 0; i < 31; i++) {
    ws_path(q, "%s/link%02d", fx.ws, i);
    cr_assert_eq(link(p, q), 0);
  }
}

static void assert_one_copy(const char *dir) {
  char p[PATH_MAX + 16];
  ws_path(p, "%s/big", dir);
  struct stat first;
  cr_assert_eq(stat(p, &first), 0, "stat %s", p);
  cr_assert_eq(first.st_nlink, 32, "%s: %lu links: copied %lu times", p, (unsigned long) first.st_nlink,
               (unsigned long) (33 - first.st_nlink));
  for (int i = 0; i < 31; i++) {
    struct stat st;
    ws_path(p, "%s/link%02d", dir, i);
    cr_assert_eq(stat(p, &st), 0, "stat %s", p);
    cr_assert_eq(st.st_ino, first.st_ino, "%s is a separate copy", p);
    cr_assert_eq(st.st_size, 8 << 20);
  }
}

Test(host_copy, hard_links_stay_links_through_dir_get) {
  make_linked();
  char out[PATH_MAX];
  out_path(out, sizeof out, "out");
  an_error_t err = NULL;
  cr_assert_eq(an_dir_get(fx.wsfd, ".", out, NULL, &err), 0, "%s", err ? err->msg : "");
  assert_one_copy(out);
}

Test(host_copy, hard_links_stay_links_through_artifacts_to) {
  make_linked();
  char out[PATH_MAX];
  out_path(out, sizeof out, "art");
  struct an_artifact_opts ao = {.to_dir = out};
  struct an_artifact_list l;
  an_error_t err = NULL;
  cr_assert_eq(an_artifacts_collect(fx.wsfd, NULL, 0, &ao, &l, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(l.n, 32);
  for (size_t i = 1; i < l.n; i++) cr_assert_str_eq(l.items[i].sha256, l.items[0].sha256);
  an_artifact_list_free(&l);
  assert_one_copy(out);
}

/* A 1 GiB sparse file: the tar holds its 16 bytes of data, not 1 GiB, and
 * a restore of it keeps the holes. */
Test(host_copy, snapshot_of_a_sparse_file_is_small_and_restores_sparse) {
  const off_t size = 1ll << 30;
  make_sparse("huge", size, 1 << 20);
  char tar[PATH_MAX], p[PATH_MAX + 16];
  out_path(tar, sizeof tar, "snap.tar");
  struct an_snapshot_info info;
  an_error_t err = NULL;
  struct an_snapshot_opts cap = {.max_bytes = 64 << 20};
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, &cap, &info, &err), 0, "%s", err ? err->msg : "");
  cr_assert_lt(info.size, 1 << 20, "tar of %llu bytes for 16 bytes of data", (unsigned long long) info.size);
  char rdir[PATH_MAX];
  out_path(rdir, sizeof rdir, "r");
  cr_assert_eq(mkdir(rdir, 0755), 0);
  int pfd = open(fx.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct an_snapshot_opts so = {.max_bytes = 2ull << 30};
  cr_assert_eq(an_workspace_restore_ex(pfd, "r", tar, info.sha256, &so, &err), 0, "%s", err ? err->msg : "");
  close(pfd);
  ws_path(p, "%s/huge", rdir);
  assert_sparse_copy(p, size, 1 << 20);
}

/* The logical size counts on restore: a tar of a few KiB declaring a
 * 1 TiB (sparse) file is refused by a cap of 1 GiB. */
Test(host_copy, restore_refuses_a_sparse_entry_over_the_cap) {
  make_sparse("tera", 1ll << 40, 4096);
  char tar[PATH_MAX];
  out_path(tar, sizeof tar, "tera.tar");
  struct an_snapshot_info info;
  an_error_t err = NULL;
  /* the cap keeps a snapshot that fills holes from writing 1 TiB */
  struct an_snapshot_opts cap = {.max_bytes = 64 << 20};
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, &cap, &info, &err), 0, "%s", err ? err->msg : "");
  cr_assert_lt(info.size, 1 << 20);
  char rdir[PATH_MAX];
  out_path(rdir, sizeof rdir, "r");
  cr_assert_eq(mkdir(rdir, 0755), 0);
  int pfd = open(fx.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct an_snapshot_opts so = {.max_bytes = 1ull << 30};
  int r = an_workspace_restore_ex(pfd, "r", tar, NULL, &so, &err);
  close(pfd);
  cr_assert_eq(r, -EFBIG, "%d %s", r, err ? err->msg : "");
  cr_assert(strstr(err->msg, "archive too large"), "%s", err->msg);
  an_error_free(&err);
}

/* ---- depth (item 7) --------------------------------------------------- */

struct warns {
  int n;
  bool deep;      /* a warning named the skipped directory's depth */
};

static void on_warn(void *data, const char *msg) {
  struct warns *w = data;
  w->n++;
  if (strstr(msg, "nested deeper than 256")) w->deep = true;
}

/* ws/deep/d/d/.../d (300 levels), a file at level 10, and ws/top.txt. */
static void make_deep(void) {
  int fd = dup(fx.wsfd);
  cr_assert_eq(mkdirat(fd, "deep", 0755), 0);
  int cur = openat(fd, "deep", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  close(fd);
  for (int i = 0; i < 300; i++) {
    if (i == 10) {
      int f = openat(cur, "mid.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      cr_assert_eq(write(f, "mid", 3), 3);
      close(f);
    }
    cr_assert_eq(mkdirat(cur, "d", 0755), 0);
    int next = openat(cur, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(next, 0);
    close(cur);
    cur = next;
  }
  close(cur);
  char p[PATH_MAX];
  ws_path(p, "%s/top.txt", fx.ws);
  ws_write(p, "top");
}

static void mid_path(char *buf, size_t n, const char *root) {
  int w = snprintf(buf, n, "%s/deep", root);
  for (int i = 0; i < 10; i++) w += snprintf(buf + w, n - (size_t) w, "/d");
  snprintf(buf + w, n - (size_t) w, "/mid.txt");
}

Test(host_copy, deep_directories_are_skipped_by_dir_get_the_rest_is_copied) {
  make_deep();
  char out[PATH_MAX], p[PATH_MAX];
  out_path(out, sizeof out, "out");
  struct warns w = {0};
  struct an_file_opts o = {.warn = on_warn, .warn_data = &w};
  an_error_t err = NULL;
  cr_assert_eq(an_dir_get(fx.wsfd, ".", out, &o, &err), 0, "%s", err ? err->msg : "");
  cr_assert(w.deep, "no warning named the skipped directory");
  ws_path(p, "%s/top.txt", out);
  cr_assert_eq(access(p, F_OK), 0);
  mid_path(p, sizeof p, out);
  cr_assert_eq(access(p, F_OK), 0, "%s not copied", p);
}

Test(host_copy, deep_directories_are_skipped_by_snapshot_the_rest_is_archived) {
  make_deep();
  char tar[PATH_MAX];
  out_path(tar, sizeof tar, "deep.tar");
  struct warns w = {0};
  struct an_snapshot_opts so = {.warn = on_warn, .warn_data = &w};
  struct an_snapshot_info info;
  an_error_t err = NULL;
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, &so, &info, &err), 0, "%s", err ? err->msg : "");
  cr_assert(w.deep, "no warning named the skipped directory");
  cr_assert_geq(info.entries, 250);
}

Test(host_copy, deep_directories_are_skipped_by_artifacts_the_rest_is_listed) {
  make_deep();
  struct warns w = {0};
  struct an_artifact_opts ao = {.warn = on_warn, .warn_data = &w};
  struct an_artifact_list l;
  an_error_t err = NULL;
  const char *globs[] = {"**/*.txt"};
  cr_assert_eq(an_artifacts_collect(fx.wsfd, globs, 1, &ao, &l, &err), 0, "%s", err ? err->msg : "");
  cr_assert(w.deep, "no warning named the skipped directory");
  cr_assert_eq(l.n, 2, "%zu artifacts", l.n);
  an_artifact_list_free(&l);
}

/* ---- quoting (item 11) ------------------------------------------------ */

#define HOSTILE "evil\n\x1b[2J"

Test(host_copy, names_from_the_sandbox_are_quoted_in_dir_get_errors) {
  char p[PATH_MAX];
  ws_path(p, "%s/" HOSTILE, fx.ws);
  ws_write(p, "more than ten bytes");
  char out[PATH_MAX];
  out_path(out, sizeof out, "out");
  struct an_file_opts o = {.max_bytes = 10};
  an_error_t err = NULL;
  cr_assert_eq(an_dir_get(fx.wsfd, ".", out, &o, &err), -EFBIG);
  cr_assert_null(strchr(err->msg, '\x1b'), "raw escape in: %s", err->msg);
  cr_assert_null(strchr(err->msg, '\n'), "raw newline in: %s", err->msg);
  cr_assert(strstr(err->msg, "evil\\x0a\\x1b[2J"), "%s", err->msg);
  an_error_free(&err);
}

/* --to already has a symlink where the sandbox's directory goes: the
 * refusal names the sandbox's path quoted. */
Test(host_copy, names_from_the_sandbox_are_quoted_in_artifacts_errors) {
  char p[PATH_MAX], out[PATH_MAX], q[PATH_MAX + 64];
  ws_path(p, "%s/" HOSTILE, fx.ws);
  cr_assert_eq(mkdir(p, 0755), 0);
  ws_path(p, "%s/" HOSTILE "/f", fx.ws);
  ws_write(p, "x");
  out_path(out, sizeof out, "art");
  cr_assert_eq(mkdir(out, 0755), 0);
  ws_path(q, "%s/" HOSTILE, out);
  cr_assert_eq(symlink("/", q), 0);
  struct an_artifact_opts ao = {.to_dir = out};
  struct an_artifact_list l;
  an_error_t err = NULL;
  int r = an_artifacts_collect(fx.wsfd, NULL, 0, &ao, &l, &err);
  cr_assert_lt(r, 0);
  cr_assert_null(strchr(err->msg, '\x1b'), "raw escape in: %s", err->msg);
  cr_assert_null(strchr(err->msg, '\n'), "raw newline in: %s", err->msg);
  an_error_free(&err);
}
