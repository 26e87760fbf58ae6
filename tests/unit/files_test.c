/* Tests for agentnest/files.h: path-safe put/get (cases BL-21, BL-23).
 * The "sandbox side" is played by this process creating symlinks, FIFOs,
 * sockets and device nodes in the workspace; host-side evidence is the
 * CANARY tree, `pwned` files and the host's /etc/shadow hash. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/artifacts.h"
#include "agentnest/files.h"
#include "agentnest/snapshot.h"
#include "ws_fixture.h"

static struct ws_fixture fx;
/* The BL-21 race swapper: killed before the workspace is removed, also
 * when an assertion ended the test early. */
static pid_t swapper_pid;

static void setup(void) { ws_fixture_setup(&fx); }
static void teardown(void) {
  if (swapper_pid > 0) {
    kill(swapper_pid, SIGKILL);
    waitpid(swapper_pid, NULL, 0);
    swapper_pid = 0;
  }
  ws_fixture_teardown(&fx);
}
TestSuite(files, .init = setup, .fini = teardown);

static void wsln(const char *target, const char *name) {
  char p[PATH_MAX];
  ws_path(p, "%s/%s", fx.ws, name);
  cr_assert_eq(symlink(target, p), 0, "symlink %s", p);
}

static void assert_put_refused(const char *path, int expect) {
  an_error_t err = NULL;
  int r = an_file_put(fx.wsfd, path, "x", 1, NULL, &err);
  cr_assert_eq(r, expect, "put %s returned %d (%s)", path, r, err ? err->msg : "ok");
  if (expect == -EXDEV) cr_assert(strstr(err->msg, "path escapes workspace"), "%s", err->msg);
  an_error_free(&err);
}

static void assert_get_refused(const char *path, int expect, const char *msg_part) {
  an_error_t err = NULL;
  void *data = NULL;
  size_t len = 0;
  int r = an_file_get(fx.wsfd, path, NULL, &data, &len, &err);
  cr_assert_eq(r, expect, "get %s returned %d (%s)", path, r, err ? err->msg : "ok");
  cr_assert_null(data);
  cr_assert(strstr(err->msg, msg_part), "get %s: %s", path, err->msg);
  an_error_free(&err);
}

static void assert_no_host_escape(void) {
  char p[PATH_MAX];
  cr_assert(ws_canary_unchanged(&fx), "CANARY changed");
  cr_assert_eq(ws_count_named(fx.root, "pwned", fx.ws), 0, "pwned outside workspace");
  cr_assert_neq(access("/pwned", F_OK), 0);
  cr_assert_neq(access("/tmp/pwned", F_OK), 0);
  ws_path(p, "%s/pwned", fx.canary);
  cr_assert_neq(access(p, F_OK), 0);
}

Test(files, bl_21_put_get_through_sandbox_symlinks_escape_is_refused) {
  char cnry[PATH_MAX];
  ws_path(cnry, "%s", fx.canary);
  wsln("/", "up");
  wsln("/etc", "etc2");
  wsln("../../..", "rel");
  wsln(cnry, "cnry");  /* absolute link to host content we can observe */
  assert_put_refused("up/tmp/pwned", -EXDEV);
  assert_put_refused("rel/pwned", -EXDEV);
  assert_put_refused("cnry/pwned", -EXDEV);
  assert_put_refused("cnry/secret.txt", -EXDEV);
  assert_get_refused("etc2/passwd", -EXDEV, "path escapes workspace");
  assert_get_refused("up/etc/shadow", -EXDEV, "path escapes workspace");
  assert_get_refused("cnry/secret.txt", -EXDEV, "path escapes workspace");
  /* also with mkdir -p requested: the walk refuses the symlink component */
  an_error_t err = NULL;
  struct an_file_opts o = {.mkdir_parents = true};
  cr_assert_eq(an_file_put(fx.wsfd, "cnry/new/pwned", "x", 1, &o, &err), -EXDEV);
  an_error_free(&err);
  assert_no_host_escape();
}

Test(files, bl_21_absolute_and_dotdot_paths_are_refused) {
  assert_put_refused("/tmp/pwned", -EXDEV);
  assert_put_refused("../pwned", -EXDEV);
  assert_put_refused("a/../../pwned", -EXDEV);
  assert_put_refused("./..//pwned", -EXDEV);
  assert_get_refused("/etc/shadow", -EXDEV, "absolute path");
  assert_get_refused("../CANARY/secret.txt", -EXDEV, "'..'");
  assert_put_refused("", -EINVAL);
  assert_no_host_escape();
}

Test(files, bl_21_final_symlink_is_replaced_never_written_through) {
  char target[PATH_MAX];
  ws_path(target, "%s/secret.txt", fx.canary);
  wsln(target, "link");
  assert_get_refused("link", -EXDEV, "path escapes workspace");
  an_error_t err = NULL;
  cr_assert_eq(an_file_put(fx.wsfd, "link", "new", 3, NULL, &err), 0, "%s", err ? err->msg : "");
  struct stat st;
  char p[PATH_MAX];
  ws_path(p, "%s/link", fx.ws);
  cr_assert_eq(lstat(p, &st), 0);
  cr_assert(S_ISREG(st.st_mode), "the symlink itself is replaced by a regular file");
  assert_no_host_escape();
}

static void race_swapper(const char *ws, pid_t parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent) _exit(1);
  int wfd = open(ws, O_RDONLY | O_DIRECTORY);
  for (;;) {
    /* d: dir -> link to / -> link to CANARY -> dir ...; the short pauses
     * let the host see every state, the swaps themselves hit its walks. */
    renameat2(wfd, "d", wfd, "x1", RENAME_EXCHANGE);
    usleep(20);
    renameat2(wfd, "d", wfd, "x2", RENAME_EXCHANGE);
    usleep(20);
  }
}

Test(files, bl_21_race_swapping_dir_and_symlink_to_root_never_escapes) {
  char p[PATH_MAX], shadow[65] = "", canary_hash[65];
  bool have_shadow = ws_file_sha256("/etc/shadow", shadow);
  ws_buf_sha256(WS_CANARY_SECRET, strlen(WS_CANARY_SECRET), canary_hash);
  ws_path(p, "%s/d", fx.ws);
  cr_assert_eq(mkdir(p, 0755), 0);
  ws_path(p, "%s/d/f", fx.ws);
  ws_write(p, "inside\n");
  wsln("/", "x1");
  wsln(fx.canary, "x2"); /* host dir whose "f" holds the canary secret */
  pid_t parent = getpid();
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) race_swapper(fx.ws, parent);
  swapper_pid = child;
  int ok_get = 0, refused = 0, ok_put = 0, escapes_refused = 0;
  for (int i = 0; i < 1000; i++) {
    an_error_t err = NULL;
    if (an_file_put(fx.wsfd, "d/f", "inside\n", 7, NULL, &err) == 0) ok_put++;
    an_error_free(&err);
    if (an_file_put(fx.wsfd, "d/pwned", "x", 1, NULL, &err) == 0) ok_put++;
    an_error_free(&err);
    const char *gets[] = {"d/f", "d/etc/shadow", "d/secret.txt"};
    for (size_t g = 0; g < 3; g++) {
      void *data = NULL;
      size_t len = 0;
      if (an_file_get(fx.wsfd, gets[g], NULL, &data, &len, &err) == 0) {
        char h[65];
        ws_buf_sha256(data, len, h);
        cr_assert_neq(strcmp(h, canary_hash), 0, "host canary content returned by get %s", gets[g]);
        if (have_shadow) cr_assert_neq(strcmp(h, shadow), 0, "host /etc/shadow returned");
        cr_assert(len == 7 && memcmp(data, "inside\n", 7) == 0, "unexpected content from %s", gets[g]);
        free(data);
        ok_get++;
      } else {
        refused++;
        if (err->errnum == EXDEV) escapes_refused++;
        cr_assert(err->errnum == EXDEV || err->errnum == ENOENT || err->errnum == ENOTDIR,
                  "unexpected error %s", err->msg);
      }
      an_error_free(&err);
    }
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  swapper_pid = 0;
  cr_log_info("race: %d puts ok, %d gets ok, %d refused (%d as escapes)", ok_put, ok_get, refused,
              escapes_refused);
  assert_no_host_escape();
  cr_assert_gt(escapes_refused, 0, "the swapper never won a race: the test did not exercise it");
}

Test(files, bl_23_get_fifo_is_refused_promptly) {
  char p[PATH_MAX];
  ws_path(p, "%s/p", fx.ws);
  cr_assert_eq(mkfifo(p, 0644), 0);
  alarm(5); /* hang guard: a blocking open would kill the test */
  assert_get_refused("p", -EINVAL, "not a regular file");
  an_error_t err = NULL;
  int devnull = open("/dev/null", O_WRONLY);
  cr_assert_eq(an_file_get_fd(fx.wsfd, "p", devnull, NULL, NULL, &err), -EINVAL);
  close(devnull);
  an_error_free(&err);
  alarm(0);
}

Test(files, bl_23_get_unix_socket_is_refused_promptly) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  int n = snprintf(sa.sun_path, sizeof sa.sun_path, "%s/s", fx.ws);
  cr_assert_lt(n, (int) sizeof sa.sun_path);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  cr_assert_eq(bind(s, (struct sockaddr *) &sa, sizeof sa), 0);
  cr_assert_eq(listen(s, 1), 0);
  alarm(5);
  assert_get_refused("s", -EINVAL, "not a regular file");
  alarm(0);
  close(s);
}

Test(files, bl_23_get_device_node_is_refused_without_opening) {
  char p[PATH_MAX];
  ws_path(p, "%s/c", fx.ws);
  cr_assert_eq(mknod(p, S_IFCHR | 0666, makedev(1, 5)), 0, "mknod as root");
  ws_path(p, "%s/tty", fx.ws);
  cr_assert_eq(mknod(p, S_IFCHR | 0666, makedev(5, 0)), 0);
  alarm(5);
  assert_get_refused("c", -EINVAL, "character device");
  assert_get_refused("tty", -EINVAL, "not a regular file");
  alarm(0);
}

Test(files, bl_23_symlink_to_dev_zero_is_refused) {
  wsln("/dev/zero", "z");
  alarm(5);
  assert_get_refused("z", -EXDEV, "path escapes workspace");
  alarm(0);
}

Test(files, bl_23_sparse_100g_file_stops_at_cap_with_clear_error) {
  char p[PATH_MAX];
  ws_path(p, "%s/sparse", fx.ws);
  int fd = open(p, O_CREAT | O_WRONLY, 0644);
  cr_assert_eq(ftruncate(fd, 100LL << 30), 0);
  close(fd);
  alarm(10);
  assert_get_refused("sparse", -EFBIG, "file too large");
  an_error_t err = NULL;
  int devnull = open("/dev/null", O_WRONLY);
  uint64_t copied = 123;
  cr_assert_eq(an_file_get_fd(fx.wsfd, "sparse", devnull, NULL, &copied, &err), -EFBIG);
  cr_assert(strstr(err->msg, "file too large"), "%s", err->msg);
  close(devnull);
  an_error_free(&err);
  alarm(0);
}

Test(files, get_cap_is_exact) {
  an_error_t err = NULL;
  cr_assert_eq(an_file_put(fx.wsfd, "ten", "0123456789", 10, NULL, &err), 0);
  void *data = NULL;
  size_t len;
  struct an_file_opts o = {.max_bytes = 10};
  cr_assert_eq(an_file_get(fx.wsfd, "ten", &o, &data, &len, &err), 0);
  cr_assert_eq(len, 10);
  cr_assert_eq(memcmp(data, "0123456789", 10), 0);
  free(data);
  data = NULL;
  o.max_bytes = 9;
  cr_assert_eq(an_file_get(fx.wsfd, "ten", &o, &data, &len, &err), -EFBIG);
  an_error_free(&err);
}

Test(files, get_directory_is_not_a_regular_file) {
  char p[PATH_MAX];
  ws_path(p, "%s/dir", fx.ws);
  cr_assert_eq(mkdir(p, 0755), 0);
  assert_get_refused("dir", -EINVAL, "not a regular file");
}

Test(files, put_is_atomic_sanitises_mode_and_leaves_no_temp_files) {
  an_error_t err = NULL;
  struct an_file_opts o = {.mode = 06755};
  cr_assert_eq(an_file_put(fx.wsfd, "f", "one", 3, NULL, &err), 0);
  cr_assert_eq(an_file_put(fx.wsfd, "f", "second", 6, &o, &err), 0);
  char p[PATH_MAX];
  ws_path(p, "%s/f", fx.ws);
  struct stat st;
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0755, "setuid/setgid stripped, got %o", st.st_mode & 07777);
  cr_assert_eq(st.st_size, 6);
  cr_assert_eq(an_file_put(fx.wsfd, "plain", "x", 1, NULL, &err), 0);
  ws_path(p, "%s/plain", fx.ws);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0644);
  /* a failing put (a directory is in the way) leaves nothing behind */
  ws_path(p, "%s/adir", fx.ws);
  cr_assert_eq(mkdir(p, 0755), 0);
  cr_assert_lt(an_file_put(fx.wsfd, "adir", "x", 1, NULL, &err), 0);
  an_error_free(&err);
  cr_assert_eq(ws_count_named(fx.ws, "f", NULL), 1);
  char cmd[PATH_MAX + 64];
  ws_path(cmd, "test -z \"$(ls -A %s | grep an-put)\"", fx.ws);
  cr_assert_eq(system(cmd), 0, "temporary files left behind");
}

Test(files, put_mkdir_parents_creates_dirs_and_sets_owner) {
  an_error_t err = NULL;
  struct an_file_opts o = {.mkdir_parents = true, .set_owner = true, .uid = 4242, .gid = 4343};
  cr_assert_eq(an_file_put(fx.wsfd, "a/b/c/f.txt", "hi", 2, &o, &err), 0, "%s", err ? err->msg : "");
  char p[PATH_MAX];
  struct stat st;
  ws_path(p, "%s/a/b/c/f.txt", fx.ws);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_uid, 4242);
  cr_assert_eq(st.st_gid, 4343);
  ws_path(p, "%s/a/b", fx.ws);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_uid, 4242);
  cr_assert_eq(st.st_mode & 07777, 0755);
  /* without mkdir_parents a missing parent is ENOENT */
  cr_assert_eq(an_file_put(fx.wsfd, "nope/f", "x", 1, NULL, &err), -ENOENT);
  an_error_free(&err);
}

static int warnings;
static void count_warn(void *data, const char *msg) {
  (void) data;
  (void) msg;
  warnings++;
}

Test(files, dir_get_copies_files_and_skips_symlinks_and_fifos) {
  char p[PATH_MAX], out[PATH_MAX];
  ws_path(p, "%s/tree", fx.ws);
  cr_assert_eq(mkdir(p, 0755), 0);
  ws_path(p, "%s/tree/sub", fx.ws);
  cr_assert_eq(mkdir(p, 0755), 0);
  ws_path(p, "%s/tree/a.txt", fx.ws);
  ws_write(p, "A\n");
  ws_path(p, "%s/tree/sub/b.txt", fx.ws);
  ws_write(p, "B\n");
  wsln(fx.canary, "tree/sub/canary");
  wsln("/etc/shadow", "tree/shadow");
  ws_path(p, "%s/tree/fifo", fx.ws);
  cr_assert_eq(mkfifo(p, 0600), 0);
  ws_path(out, "%s/out", fx.root);
  an_error_t err = NULL;
  warnings = 0;
  struct an_file_opts o = {.warn = count_warn};
  alarm(10);
  cr_assert_eq(an_dir_get(fx.wsfd, "tree", out, &o, &err), 0, "%s", err ? err->msg : "");
  alarm(0);
  cr_assert_eq(warnings, 3);
  ws_path(p, "%s/sub/b.txt", out);
  char h[65], want[65];
  cr_assert(ws_file_sha256(p, h));
  ws_buf_sha256("B\n", 2, want);
  cr_assert_str_eq(h, want);
  ws_path(p, "%s/sub/canary", out);
  struct stat st;
  cr_assert_neq(lstat(p, &st), 0, "symlink must not be exported");
  ws_path(p, "%s/shadow", out);
  cr_assert_neq(lstat(p, &st), 0);
  assert_no_host_escape();
}

/* What a sandbox chmods is not what the host keeps: a 0777 file and
 * directory and a set-uid file come out without write for group and others
 * and without set-id bits. */
Test(files, dir_get_sanitises_modes_the_sandbox_set) {
  char p[PATH_MAX], out[PATH_MAX];
  ws_path(p, "%s/m", fx.ws);
  cr_assert_eq(mkdir(p, 0777), 0);
  cr_assert_eq(chmod(p, 0777), 0);
  ws_path(p, "%s/m/open", fx.ws);
  ws_write(p, "x\n");
  cr_assert_eq(chmod(p, 0777), 0);
  ws_path(p, "%s/m/suid", fx.ws);
  ws_write(p, "y\n");
  cr_assert_eq(chmod(p, 04777), 0);
  ws_path(out, "%s/mout", fx.root);
  an_error_t err = NULL;
  struct an_file_opts o = {0};
  cr_assert_eq(an_dir_get(fx.wsfd, "m", out, &o, &err), 0, "%s", err ? err->msg : "");
  struct stat st;
  ws_path(p, "%s/open", out);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0755, "file mode %o", st.st_mode & 07777);
  ws_path(p, "%s/suid", out);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0755, "set-uid file mode %o", st.st_mode & 07777);
}

Test(files, dir_put_recreates_symlinks_without_following) {
  char src[PATH_MAX], p[PATH_MAX];
  ws_path(src, "%s/src", fx.root);
  cr_assert_eq(mkdir(src, 0755), 0);
  ws_path(p, "%s/sub", src);
  cr_assert_eq(mkdir(p, 0700), 0);
  ws_path(p, "%s/sub/x.py", src);
  ws_write(p, "print(1)\n");
  cr_assert_eq(chmod(p, 0755), 0);
  ws_path(p, "%s/hostlink", src);
  cr_assert_eq(symlink(fx.canary, p), 0);
  an_error_t err = NULL;
  struct an_file_opts o = {.mkdir_parents = true};
  cr_assert_eq(an_dir_put(fx.wsfd, "in/put", src, &o, &err), 0, "%s", err ? err->msg : "");
  struct stat st;
  ws_path(p, "%s/in/put/sub/x.py", fx.ws);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0755);
  ws_path(p, "%s/in/put/hostlink", fx.ws);
  cr_assert_eq(lstat(p, &st), 0);
  cr_assert(S_ISLNK(st.st_mode), "symlink kept as a symlink");
  assert_no_host_escape();
  /* putting into a path that crosses a workspace symlink is refused */
  wsln(fx.canary, "esc");
  cr_assert_eq(an_dir_put(fx.wsfd, "esc/sub", src, &o, &err), -EXDEV);
  an_error_free(&err);
  assert_no_host_escape();
}

/* Does any regular file under `dir` hold the canary secret? */
static bool tree_has_canary(const char *dir) {
  char cmd[PATH_MAX + 128];
  ws_path(cmd, "grep -rqs --no-messages -F 'HOST-CANARY-SECRET' %s", dir);
  return system(cmd) == 0;
}

Test(files, bl_21_race_tree_copies_snapshots_and_artifacts_never_escape) {
  char p[PATH_MAX], out[PATH_MAX], canary_hash[65];
  ws_buf_sha256(WS_CANARY_SECRET, strlen(WS_CANARY_SECRET), canary_hash);
  cr_assert(tree_has_canary(fx.canary), "the evidence check itself works");
  ws_path(p, "%s/d", fx.ws);
  cr_assert_eq(mkdir(p, 0755), 0);
  ws_path(p, "%s/d/f", fx.ws);
  ws_write(p, "inside\n");
  wsln("/", "x1");
  wsln(fx.canary, "x2");
  pid_t parent = getpid();
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) race_swapper(fx.ws, parent);
  swapper_pid = child;
  int ok = 0;
  for (int i = 0; i < 100; i++) {
    an_error_t err = NULL;
    ws_path(out, "%s/out%d", fx.root, i % 4);
    if (an_dir_get(fx.wsfd, ".", out, NULL, &err) == 0) ok++;
    an_error_free(&err);
    if (an_dir_get(fx.wsfd, "d", out, NULL, &err) == 0) ok++;
    an_error_free(&err);
    char tar[PATH_MAX];
    ws_path(tar, "%s/snap%d.tar", fx.root, i % 2);
    if (an_workspace_snapshot(fx.wsfd, tar, NULL, NULL, &err) == 0) ok++;
    an_error_free(&err);
    struct an_artifact_list l;
    const char *all[] = {"**"};
    if (an_artifacts_collect(fx.wsfd, all, 1, NULL, &l, &err) == 0) {
      ok++;
      for (size_t k = 0; k < l.n; k++) {
        cr_assert_str_neq(l.items[k].sha256, canary_hash, "artifact %s hashed host content", l.items[k].path);
        cr_assert_null(strstr(l.items[k].path, "etc/"), "artifact walk left the workspace: %s", l.items[k].path);
      }
      an_artifact_list_free(&l);
    }
    an_error_free(&err);
  }
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  swapper_pid = 0;
  cr_log_info("tree race: %d copies completed", ok);
  for (int i = 0; i < 4; i++) {
    ws_path(out, "%s/out%d", fx.root, i);
    cr_assert_not(tree_has_canary(out), "host content copied out into %s", out);
    cr_assert_eq(ws_count_named(out, "shadow", NULL), 0, "host /etc copied out");
  }
  ws_path(out, "%s/snap0.tar", fx.root);
  cr_assert_not(tree_has_canary(out), "host content in a snapshot");
  ws_path(out, "%s/snap1.tar", fx.root);
  cr_assert_not(tree_has_canary(out), "host content in a snapshot");
  assert_no_host_escape();
}
