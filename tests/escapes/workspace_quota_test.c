/* tests/escapes/workspace_quota_test.c — issue 10 item 4: /workspace is
 * bounded by the kernel (--disk, --inodes).  Writing past the disk quota
 * fails inside with ENOSPC/EDQUOT and the host file system holds no more
 * than the quota; creating past the inode quota fails; absurd values are
 * refused and leave nothing; destroy, and SIGKILL of the monitor + prune,
 * leave no mount, loop device or image; a project quota is used where the
 * store's file system enforces one (an ext4 image mounted prjquota made by
 * the test).  The mechanisms are also driven directly (workspace_quota.c's
 * an_sb_ws_make/remove and a writer with the workspace's uid), so that a
 * kernel that has project quotas (e.g. the cgroup v2 VM's) checks that one
 * even where a sandbox does not start.  Uses the busybox image of the image cache (`make images`).
 * Run as root from the worktree root. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agentnest.h"
#include "agentnest/doctor.h"
#include "agentnest/sandbox.h"
#include "sandbox/sandbox_internal.h"
#include "store_fixture.h"
#include "util.h"
#include "ctx_fixture.h"

#define CACHE "/var/cache/agentnest/images"
static char g_root[PATH_MAX / 2];

#define msleep an_test_msleep
static void import_busybox(const char *root) { an_test_store_image(root, "busybox", false); }

/* One store per test (a fresh directory), its own id ranges. */
static void setup(void) {
  an_test_lib_env(NULL, 0);
  snprintf(g_root, sizeof g_root, "/tmp/an-quotatest-%d", (int) getpid());
  an_test_store_make(g_root);
  import_busybox(g_root);
}

static void teardown_store(void) {
  if (!g_root[0]) return;
  char *report = NULL;
  an_error_t err = NULL;
  an_sandbox_prune_ctx(an_test_ctx(), g_root, true, &report, &err);
  free(report);
  an_error_free(&err);
  umount2(g_root, MNT_DETACH);   /* the project quota test's file system */
  an_test_store_remove(g_root);
  rmdir(g_root);
}

TestSuite(quota, .init = setup, .fini = teardown_store, .timeout = 300);

/* criterion runs no .fini after a skip: clean up first */
#define skip_clean(...) do { teardown_store(); cr_skip_test(__VA_ARGS__); } while (0)

static struct an_sandbox_opts *opts_quota(const char *disk, const char *inodes) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err) == 0, "%s", err ? err->msg : "");
  cr_assert(an_sandbox_opts_set_image(o, "busybox", &err) == 0);
  if (disk) cr_assert(an_sandbox_opts_set_option(o, "disk", disk, &err) == 0, "%s", err ? err->msg : "");
  if (inodes) cr_assert(an_sandbox_opts_set_option(o, "inodes", inodes, &err) == 0, "%s", err ? err->msg : "");
  return o;
}

static struct an_exec_result sh(struct an_sandbox *sb, const char *script) {
  char *argv[] = {"sh", "-c", (char *) script, NULL};
  struct an_exec_opts eo = {.timeout_ms = 120000};
  struct an_exec_result res;
  an_error_t err = NULL;
  cr_assert(an_sandbox_exec(sb, argv, &eo, &res, &err) == 0, "exec %s: %s", script, err ? err->msg : "");
  return res;
}

static const char *out_of(const struct an_exec_result *r) {
  return r->output.stdout_buf ? r->output.stdout_buf : "";
}

static const char *err_of(const struct an_exec_result *r) {
  return r->output.stderr_buf ? r->output.stderr_buf : "";
}

/* Whether any mount's mount point or source lies under `path`. */
static bool mounted_under(const char *path) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  cr_assert(f);
  char line[4096];
  bool found = false;
  while (fgets(line, sizeof line, f))
    if (strstr(line, path)) found = true;
  fclose(f);
  return found;
}

/* Whether a loop device is backed by a file under `path`. */
static bool loop_backed_under(const char *path) {
  DIR *d = opendir("/sys/block");
  if (!d) return false;
  struct dirent *de;
  bool found = false;
  while ((de = readdir(d))) {
    if (strncmp(de->d_name, "loop", 4)) continue;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "/sys/block/%s/loop/backing_file", de->d_name);
    char *b = an_test_read_file(p, NULL);
    if (b && strstr(b, path)) found = true;
    free(b);
  }
  closedir(d);
  return found;
}

/* Nothing of sandbox dir `sdir` is left: no mount, loop device, image.  The
 * loop device goes with the last reference to the file system, which a
 * lazy unmount may drop a moment later: wait for it a while. */
static void assert_no_workspace_left(const char *sdir) {
  bool loop = true;
  for (int i = 0; i < 500 && (loop = loop_backed_under(sdir)); i++) msleep(10);
  cr_expect(!loop, "a loop device is still backed by a file under %s", sdir);
  cr_expect(!mounted_under(sdir), "a mount under %s remains", sdir);
  char img[PATH_MAX + 32];
  snprintf(img, sizeof img, "%s/workspace.img", sdir);
  cr_expect(access(img, F_OK) != 0, "%s remains", img);
  cr_expect(access(sdir, F_OK) != 0, "%s remains", sdir);
}

static void sandbox_dir(struct an_sandbox *sb, char *out, size_t len) {
  snprintf(out, len, "%s/sandboxes/%s", g_root, an_sandbox_id(sb));
}

Test(quota, writing_past_disk_fails_inside_and_the_host_holds_no_more) {
  struct an_sandbox_opts *o = opts_quota("16m", NULL);
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  char sdir[PATH_MAX];
  sandbox_dir(sb, sdir, sizeof sdir);
  struct an_exec_result r = sh(sb, "dd if=/dev/zero of=/workspace/big bs=1M count=64; echo rc=$?; "
                                    "ls -l /workspace/big; dd if=/dev/zero of=/workspace/more bs=64k count=32; echo rc2=$?");
  cr_expect(strstr(out_of(&r), "rc=1"), "dd past --disk 16m did not fail: %s / %s", out_of(&r), err_of(&r));
  cr_expect(strstr(err_of(&r), "No space left on device") || strstr(err_of(&r), "quota exceeded"),
            "no ENOSPC/EDQUOT: %s", err_of(&r));
  cr_expect(strstr(out_of(&r), "rc2=1"), "a write on a full workspace succeeded: %s", out_of(&r));
  /* what the host holds for this workspace: the image's allocated blocks
   * (sparse: only what was written, metadata included) */
  char img[PATH_MAX + 32];
  snprintf(img, sizeof img, "%s/workspace.img", sdir);
  struct stat ist;
  if (stat(img, &ist) == 0)   /* else a project quota bounds the directory itself */
    cr_expect((uint64_t) ist.st_blocks * 512 <= (17u << 20), "the host holds %llu bytes for a 16 MiB workspace",
              (unsigned long long) ist.st_blocks * 512);
  struct stat st;
  char big[PATH_MAX + 64];
  snprintf(big, sizeof big, "%s/workspace/big", sdir);
  cr_assert(stat(big, &st) == 0, "stat %s", big);
  cr_expect(st.st_size <= (16 << 20), "a %lld-byte file in a 16 MiB workspace", (long long) st.st_size);
  an_exec_result_release(&r);
  /* deleting gives the space back inside */
  r = sh(sb, "rm /workspace/big && dd if=/dev/zero of=/workspace/b2 bs=1M count=8 2>/dev/null; echo rc=$?");
  cr_expect(strstr(out_of(&r), "rc=0"), "no space after rm: %s", out_of(&r));
  an_exec_result_release(&r);
  cr_assert(an_sandbox_destroy(sb, 0, &err) == 0, "destroy: %s", err ? err->msg : "");
  an_sandbox_close(sb);
  assert_no_workspace_left(sdir);
  an_sandbox_opts_free(o);
}

Test(quota, creating_past_inodes_fails_inside) {
  struct an_sandbox_opts *o = opts_quota("16m", "200");
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  struct an_exec_result r = sh(sb, "i=0; while [ $i -lt 1000 ] && touch /workspace/f$i; do i=$((i+1)); done; "
                                    "echo made=$i");
  int made = -1;
  const char *m = strstr(out_of(&r), "made=");
  if (m) made = atoi(m + 5);
  cr_expect(made >= 190 && made <= 232, "--inodes 200: %d files made (%s / %s)", made, out_of(&r), err_of(&r));
  cr_expect(strstr(err_of(&r), "No space left on device") || strstr(err_of(&r), "quota exceeded"),
            "no ENOSPC/EDQUOT: %s", err_of(&r));
  an_exec_result_release(&r);
  cr_assert(an_sandbox_destroy(sb, 0, &err) == 0, "destroy: %s", err ? err->msg : "");
  an_sandbox_close(sb);
  an_sandbox_opts_free(o);
}

static int count_entries(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 0;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

Test(quota, absurd_values_are_refused_and_leave_nothing) {
  struct an_sandbox_opts *o = opts_quota(NULL, NULL);
  an_error_t err = NULL;
  static const char *const bad[][2] = {{"disk", "0"}, {"disk", "1k"}, {"disk", "1000t"},
                                       {"disk", "99999999999999999999"}, {"inodes", "0"},
                                       {"inodes", "10"}, {"inodes", "99999999999"}, {"inodes", "-1"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_expect(an_sandbox_opts_set_option(o, bad[i][0], bad[i][1], &err) < 0, "%s %s accepted", bad[i][0],
              bad[i][1]);
    cr_expect(err && (strstr(err->msg, bad[i][0]) || strstr(err->msg, bad[i][1])),
              "message names neither the option nor the value: %s", err ? err->msg : "");
    an_error_free(&err);
  }
  cr_expect_eq(an_sandbox_opts_disk(o), 1ull << 30, "default disk");
  cr_expect_eq(an_sandbox_opts_inodes(o), 100000, "default inodes");
  struct an_sandbox *sb = NULL;
  /* a disk larger than the store's free space cannot be held: refused */
  cr_assert(an_sandbox_opts_set_option(o, "disk", "16t", &err) == 0);
  cr_assert(an_sandbox_opts_set_option(o, "inodes", "1000", &err) == 0);
  cr_expect(an_sandbox_create(g_root, o, &sb, &err) < 0, "a 16 TiB workspace was created");
  an_error_free(&err);
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/sandboxes", g_root);
  cr_expect_eq(count_entries(p), 0, "a refused create left a sandbox directory under %s", p);
  cr_expect(!mounted_under(g_root), "a refused create left a mount");
  cr_expect(!loop_backed_under(g_root), "a refused create left a loop device");
  an_sandbox_opts_free(o);
}

/* doctor names the mechanism this host's store gets. */
Test(quota, doctor_says_which_mechanism_enforces_the_quota) {
  char *json = NULL;
  bool ok = false;
  an_error_t err = NULL;
  cr_assert(an_doctor_probe(g_root, &json, &ok, &err) == 0, "%s", err ? err->msg : "");
  cr_expect(strstr(json, "\"workspace_quota\""), "%s", json);
  cr_expect(strstr(json, "\"mechanism\": \"image\"") || strstr(json, "\"mechanism\": \"project_quota\""),
            "no enforcing mechanism on a host whose sandboxes start: %s", json);
  free(json);
}

/* The profile keys and their defaults. */
Test(quota, profile_keys_disk_and_inodes) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/p.json", g_root);
  static const char doc[] = "{\"disk\": \"32m\", \"inodes\": 5000}";
  an_test_write_file(path, doc, sizeof doc - 1, 0644);
  struct an_sandbox_opts *o = opts_quota(NULL, NULL);
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_load_profile(o, path, NULL, &err) == 0, "%s", err ? err->msg : "");
  cr_expect_eq(an_sandbox_opts_disk(o), 32ull << 20);
  cr_expect_eq(an_sandbox_opts_inodes(o), 5000);
  static const char bad[] = "{\"inodes\": \"many\"}";
  an_test_write_file(path, bad, sizeof bad - 1, 0644);
  cr_expect(an_sandbox_opts_load_profile(o, path, NULL, &err) < 0, "inodes \"many\" accepted");
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(quota, monitor_sigkill_then_prune_leaves_no_mount_loop_or_image) {
  struct an_sandbox_opts *o = opts_quota("16m", "1000");
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  char sdir[PATH_MAX], id[AN_SANDBOX_ID_LEN + 1];
  sandbox_dir(sb, sdir, sizeof sdir);
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  struct an_exec_result r = sh(sb, "echo data > /workspace/f");
  an_exec_result_release(&r);
  cr_assert(mounted_under(sdir), "the workspace of %s is not a mount", id);
  pid_t mon = an_sandbox_monitor_pid(sb);
  cr_assert_gt(mon, 0);
  cr_assert(kill(mon, SIGKILL) == 0);
  for (int i = 0; i < 100 && kill(mon, 0) == 0; i++) msleep(10);
  an_sandbox_close(sb);
  char *report = NULL;
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, false, &report, &err) == 0, "%s", err ? err->msg : "");
  cr_expect(strstr(report, id), "prune report: %s", report);
  free(report);
  assert_no_workspace_left(sdir);
  an_sandbox_opts_free(o);
}

/* A store on a file system with project quotas enforced (an ext4 image with
 * the project feature, mounted prjquota): the workspace is a plain
 * directory there, bounded by its project's limits. */
Test(quota, project_quota_where_the_store_has_one) {
  if (an_test_sh("command -v mkfs.ext4 >/dev/null") != 0) skip_clean("mkfs.ext4 absent");
  char img[PATH_MAX + 16], store[PATH_MAX];
  snprintf(img, sizeof img, "%s.img", g_root);
  snprintf(store, sizeof store, "%s", g_root);
  cr_assert(an_test_sh("truncate -s 256M %s && mkfs.ext4 -q -F -O quota,project -E quotatype=prjquota %s",
                       img, img) == 0, "mkfs.ext4 with project quota");
  /* the store root becomes that file system (the busybox image again) */
  an_test_store_remove(store);
  mkdir(store, 0711);
  int rc = an_test_sh("mount -o loop,prjquota %s %s", img, store);
  unlink(img);   /* the loop device keeps it; gone at umount */
  if (rc != 0) skip_clean("this kernel cannot mount ext4 with prjquota (CONFIG_QFMT_V2?)");
  chmod(store, 0711);
  import_busybox(store);
  struct an_sandbox_opts *o = opts_quota("16m", "300");
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_create(store, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  char sdir[PATH_MAX];
  sandbox_dir(sb, sdir, sizeof sdir);
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/workspace.img", sdir);
  cr_expect(access(p, F_OK) != 0, "an image was made although the store has project quotas");
  struct an_exec_result r = sh(sb, "dd if=/dev/zero of=/workspace/big bs=1M count=64; echo rc=$?; "
                                    "i=0; while [ $i -lt 1000 ] && touch /workspace/f$i; do i=$((i+1)); done; "
                                    "echo made=$i");
  cr_expect(strstr(out_of(&r), "rc=1"), "dd past the project quota did not fail: %s", out_of(&r));
  cr_expect(strstr(err_of(&r), "quota exceeded") || strstr(err_of(&r), "No space left"), "%s", err_of(&r));
  const char *m = strstr(out_of(&r), "made=");
  int made = m ? atoi(m + 5) : -1;
  cr_expect(made >= 0 && made < 300, "--inodes 300: %d files made", made);
  an_exec_result_release(&r);
  /* the sandbox cannot move its files out of the project (init userns only) */
  r = sh(sb, "chattr -p 0 /workspace/f1 2>&1; echo rc=$?");
  an_exec_result_release(&r);
  cr_assert(an_sandbox_destroy(sb, 0, &err) == 0, "destroy: %s", err ? err->msg : "");
  an_sandbox_close(sb);
  cr_expect(access(sdir, F_OK) != 0, "%s remains", sdir);
  an_sandbox_opts_free(o);
}

/* ---- the mechanisms directly ------------------------------------------------------------- */

#define WS_UID 3000123
/* As uid WS_UID, write 1 MiB blocks to DIR/big until failure, then create
 * empty files until failure; "<bytes> <files> <errno of each>" to `out`. */
static void fill_as_owner(const char *ws, char *out, size_t len) {
  int p[2];
  cr_assert(pipe(p) == 0);
  pid_t c = fork();
  cr_assert_geq(c, 0);
  if (c == 0) {
    close(p[0]);
    if (setgid(WS_UID) < 0 || setuid(WS_UID) < 0) _exit(1);
    char path[PATH_MAX + 32];
    static char block[1 << 20];
    snprintf(path, sizeof path, "%s/big", ws);
    int fd = open(path, O_WRONLY | O_CREAT, 0600);
    long long bytes = 0;
    int e1 = 0, e2 = 0;
    for (;;) {
      ssize_t w = fd < 0 ? -1 : write(fd, block, sizeof block);
      if (w <= 0) { e1 = fd < 0 ? errno : w < 0 ? errno : ENOSPC; break; }
      bytes += w;
      if (bytes > (64ll << 20)) break;
    }
    if (fd >= 0 && fsync(fd) < 0 && !e1) e1 = errno;
    if (fd >= 0) close(fd);
    unlink(path);   /* room for the inodes */
    int files = 0;
    for (; files < 100000; files++) {
      snprintf(path, sizeof path, "%s/f%d", ws, files);
      int f = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
      if (f < 0) { e2 = errno; break; }
      close(f);
    }
    dprintf(p[1], "%lld %d %d %d", bytes, files, e1, e2);
    _exit(0);
  }
  close(p[1]);
  ssize_t n = read(p[0], out, len - 1);
  out[n > 0 ? n : 0] = '\0';
  close(p[0]);
  waitpid(c, NULL, 0);
}

/* Make a workspace under a fresh directory of `parent` with the mechanism
 * this host gives it, fill it as its owner, remove it; returns the kind. */
static enum an_sb_ws_kind make_fill_remove(const char *parent, char *res, size_t len) {
  char dir[PATH_MAX], ws[PATH_MAX + 16], why[200];
  snprintf(dir, sizeof dir, "%s/sb", parent);
  cr_assert(mkdir(dir, 0711) == 0 || errno == EEXIST, "mkdir %s", dir);
  snprintf(ws, sizeof ws, "%s/workspace", dir);
  enum an_sb_ws_kind k = an_sb_ws_mechanism(dir, why, sizeof why);
  an_error_t err = NULL;
  cr_assert(an_sb_ws_make(parent, dir, ws, WS_UID, 16 << 20, 300, WS_UID, WS_UID, &err) == 0, "%s (%s)",
            err ? err->msg : "", why);
  fill_as_owner(ws, res, len);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  cr_assert(dfd >= 0);
  cr_assert(an_sb_ws_remove(dfd, &err) == 0, "%s", err ? err->msg : "");
  cr_expect(an_sb_ws_remove(dfd, &err) == 0, "second remove: %s", err ? err->msg : "");
  close(dfd);
  char img[PATH_MAX + 32];
  snprintf(img, sizeof img, "%s/workspace.img", dir);
  cr_expect(access(ws, F_OK) != 0 && access(img, F_OK) != 0, "workspace or image left in %s", dir);
  assert_no_workspace_left(ws);
  rmdir(dir);
  return k;
}

static void expect_bounded(const char *res, const char *what) {
  long long bytes = -1;
  int files = -1, e1 = -1, e2 = -1;
  cr_assert_eq(sscanf(res, "%lld %d %d %d", &bytes, &files, &e1, &e2), 4, "%s: writer said \"%s\"", what, res);
  cr_expect(bytes <= (16ll << 20), "%s: %lld bytes written into a 16 MiB workspace", what, bytes);
  cr_expect(e1 == ENOSPC || e1 == EDQUOT, "%s: the write failed with %s", what, strerror(e1));
  cr_expect(files >= 250 && files <= 332, "%s: %d files in a 300-inode workspace", what, files);
  cr_expect(e2 == ENOSPC || e2 == EDQUOT, "%s: the create failed with %s", what, strerror(e2));
}

Test(quota, the_mechanism_of_this_host_bounds_the_owner_directly) {
  char res[128];
  enum an_sb_ws_kind k = make_fill_remove(g_root, res, sizeof res);
  cr_expect(k != AN_SB_WS_NONE);
  expect_bounded(res, k == AN_SB_WS_IMAGE ? "image" : "project quota");
}

Test(quota, project_quota_bounds_the_owner_directly) {
  if (an_test_sh("command -v mkfs.ext4 >/dev/null") != 0) skip_clean("mkfs.ext4 absent");
  char img[PATH_MAX + 16], mnt[PATH_MAX];
  snprintf(img, sizeof img, "%s/prj.img", g_root);
  snprintf(mnt, sizeof mnt, "%s/prj", g_root);
  mkdir(mnt, 0711);
  cr_assert(an_test_sh("truncate -s 128M %s && mkfs.ext4 -q -F -O quota,project -E quotatype=prjquota %s",
                       img, img) == 0, "mkfs.ext4 with project quota");
  int rc = an_test_sh("mount -o loop,prjquota %s %s", img, mnt);
  unlink(img);
  if (rc != 0) skip_clean("this kernel cannot mount ext4 with prjquota (CONFIG_QFMT_V2?)");
  char res[128];
  enum an_sb_ws_kind k = make_fill_remove(mnt, res, sizeof res);
  umount2(mnt, MNT_DETACH);
  cr_expect_eq(k, AN_SB_WS_PROJECT_QUOTA, "a prjquota store did not get a project quota");
  expect_bounded(res, "project quota");
}

/* The empty images kept for the next creates are root's 0600 files of the
 * right size: anything else is made again, never mounted; prune --all
 * removes them. */
Test(quota, a_workspace_template_not_root_0600_is_made_again) {
  char dir[PATH_MAX], ws[PATH_MAX + 16], why[200];
  snprintf(dir, sizeof dir, "%s/sb", g_root);
  cr_assert(mkdir(dir, 0711) == 0);
  snprintf(ws, sizeof ws, "%s/workspace", dir);
  if (an_sb_ws_mechanism(dir, why, sizeof why) != AN_SB_WS_IMAGE) skip_clean("no image workspaces here: %s", why);
  an_error_t err = NULL;
  cr_assert(an_sb_ws_make(g_root, dir, ws, WS_UID, 16 << 20, 300, WS_UID, WS_UID, &err) == 0, "%s",
            err ? err->msg : "");
  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  cr_assert(an_sb_ws_remove(dfd, &err) == 0, "%s", err ? err->msg : "");
  char tpl[PATH_MAX + 96];
  snprintf(tpl, sizeof tpl, "%s/workspace-templates/ext4-%llu-%d.img", g_root, 16ull << 20, 300);
  struct stat st1, st2;
  cr_assert(stat(tpl, &st1) == 0, "no template %s", tpl);
  cr_expect_eq(st1.st_mode & 07777, 0600);
  cr_assert(chmod(tpl, 0644) == 0);
  cr_assert(an_sb_ws_make(g_root, dir, ws, WS_UID, 16 << 20, 300, WS_UID, WS_UID, &err) == 0, "%s",
            err ? err->msg : "");
  cr_assert(an_sb_ws_remove(dfd, &err) == 0, "%s", err ? err->msg : "");
  close(dfd);
  cr_assert(stat(tpl, &st2) == 0);
  cr_expect(st2.st_ino != st1.st_ino && (st2.st_mode & 07777) == 0600, "a 0644 template was used");
  rmdir(dir);
  char *report = NULL;
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, true, &report, &err) == 0, "%s", err ? err->msg : "");
  free(report);
  cr_expect(access(tpl, F_OK) != 0, "prune --all left %s", tpl);
}
