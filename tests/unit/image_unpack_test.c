/* Unit tests for layer application (src/image/unpack.c, whiteout.c,
 * entry_path.c, layer.c): every case of cases/image-unpack.md (BL-28,
 * BL-29, BL-30, BL-32) plus the extras of issue 2 item 6.  The hostile
 * layers are generated here with libarchive's write API.  Every test checks
 * that the CANARY tree around the rootfs is untouched. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "agentnest/image.h"
#include "image/image_internal.h"
#include "image_fixture.h"

static char canary[128], rootfs[256], snap_path_excl[256];
static char *before;
static char warnings[8192];

static void setup(void) {
  snprintf(canary, sizeof canary, "/tmp/an-canary-%d", (int) getpid());
  an_test_rm_tree(canary);
  cr_assert_eq(an_test_sh("mkdir -p %s/a/b/rootfs %s/sub && echo precious > %s/canary && echo x > %s/sub/file",
                     canary, canary, canary, canary), 0);
  snprintf(rootfs, sizeof rootfs, "%s/a/b/rootfs", canary);
  snprintf(snap_path_excl, sizeof snap_path_excl, "%s", rootfs);
  before = tb_snapshot(canary, snap_path_excl);
  warnings[0] = '\0';
}

static void teardown(void) {
  an_test_rm_tree(canary);
  free(before);
}

static void assert_canary_untouched(void) {
  char *now = tb_snapshot(canary, snap_path_excl);
  cr_assert_str_eq(now, before, "CANARY changed:\nbefore:\n%s\nafter:\n%s", before, now);
  free(now);
}

static void on_progress(const struct an_image_progress *p, void *data) {
  (void) data;
  if (p->event == AN_IMAGE_EVENT_WARNING) {
    strncat(warnings, p->message, sizeof warnings - strlen(warnings) - 2);
    strcat(warnings, "\n");
  }
}

/* Apply one layer blob (verified against its own digest unless forced). */
static int apply_blob(struct tb_buf layer, const char *force_digest, int64_t force_size,
                      uint64_t cap, an_error_t *err) {
  int rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  cr_assert_geq(rootfd, 0);
  int fd = memfd_create("layer", MFD_CLOEXEC);
  cr_assert_eq(write(fd, layer.data, layer.len), (ssize_t) layer.len);
  lseek(fd, 0, SEEK_SET);
  struct an_layer_desc d = {.size = force_size >= 0 ? force_size : (int64_t) layer.len};
  if (force_digest) snprintf(d.digest, sizeof d.digest, "%s", force_digest);
  else tb_digest(layer.data, layer.len, d.digest);
  uint64_t left = cap ? cap : AN_IMAGE_DEFAULT_MAX_UNPACK;
  struct an_unpack_opts o = {.budget_left = &left, .budget_total = left, .whiteouts = true,
                             .owners = true, .progress = on_progress};
  int r = an_layer_apply(rootfd, fd, &d, 0, 1, &o, err);
  close(fd);
  close(rootfd);
  return r;
}

static int apply(const struct tb_entry *e, size_t n, an_error_t *err) {
  struct tb_buf t = tb_tar(e, n, 0);
  int r = apply_blob(t, NULL, -1, 0, err);
  tb_free(&t);
  return r;
}

static void apply_ok(const struct tb_entry *e, size_t n) {
  an_error_t err = NULL;
  int r = apply(e, n, &err);
  cr_assert_eq(r, 0, "apply failed: %s", err ? err->msg : "?");
}

/* Applying must fail, with an error naming `entry` and containing `why`. */
static void apply_fails(const struct tb_entry *e, size_t n, const char *entry, const char *why) {
  an_error_t err = NULL;
  int r = apply(e, n, &err);
  cr_assert_lt(r, 0, "applying a layer with entry %s succeeded", entry);
  cr_assert_not_null(err);
  char quoted[300];
  snprintf(quoted, sizeof quoted, "\"%s\"", entry);
  cr_assert(strstr(err->msg, quoted), "error does not name entry %s: %s", quoted, err->msg);
  cr_assert(strstr(err->msg, why), "error lacks '%s': %s", why, err->msg);
  cr_assert(strstr(err->msg, "layer sha256:"), "error does not name the layer: %s", err->msg);
  an_error_free(&err);
}

static bool exists_in_root(const char *rel) {
  char p[512];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", rootfs, rel);
  return lstat(p, &st) == 0;
}

static char *read_in_root(const char *rel) {
  static char buf[256];
  char p[512];
  snprintf(p, sizeof p, "%s/%s", rootfs, rel);
  FILE *f = fopen(p, "r");
  if (!f) return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

TestSuite(image_unpack, .init = setup, .fini = teardown);

/* ---- BL-28 ---- */
Test(image_unpack, bl_28_dot_slash_root_entry_and_children_extract) {
  struct tb_entry e[] = {{'d', "./", NULL, 0755}, {'d', "./etc", NULL, 0}, {'f', "./etc/ok", "ok\n", 0}};
  apply_ok(e, 3);
  cr_assert_str_eq(read_in_root("etc/ok"), "ok\n");
  assert_canary_untouched();
}

Test(image_unpack, bl_28_dotdot_entry_names_refused_naming_the_entry) {
  const char *evil[] = {"../../evil", "a/../../evil", "a/b/../../../evil"};
  for (size_t i = 0; i < 3; i++) {
    struct tb_entry e[] = {{'d', "./", NULL, 0}, {'f', "./etc/ok", "ok", 0}, {'f', evil[i], "pwned", 0}};
    apply_fails(e, 3, evil[i], "path escapes the root");
  }
  cr_assert(!exists_in_root("evil"));
  assert_canary_untouched();
}

Test(image_unpack, bl_28_dotdot_that_stays_inside_is_refused_too) {
  struct tb_entry e[] = {{'f', "a/../b", "x", 0}};
  apply_fails(e, 1, "a/../b", "'..' component refused");
  assert_canary_untouched();
}

Test(image_unpack, bl_28_absolute_names_are_rebased_under_rootfs) {
  struct tb_entry e[] = {{'f', "/abs_evil", "abs", 0}};
  apply_ok(e, 1);
  cr_assert_str_eq(read_in_root("abs_evil"), "abs");
  struct stat st;
  cr_assert_neq(lstat("/abs_evil", &st), 0, "absolute entry written to the host root");
  assert_canary_untouched();
}

Test(image_unpack, bl_28_empty_entry_name_refused) {
  struct tb_entry e[] = {{'f', "placeholder", "x", 0}};
  struct tb_buf t = tb_tar(e, 1, 0);
  tb_patch_name(&t, "placeholder", "", 0);
  an_error_t err = NULL;
  cr_assert_lt(apply_blob(t, NULL, -1, 0, &err), 0);
  cr_assert(strstr(err->msg, "empty") || strstr(err->msg, "entry"), "%s", err->msg);
  an_error_free(&err);
  tb_free(&t);
  assert_canary_untouched();
}

Test(image_unpack, bl_28_invalid_utf8_name_refused) {
  struct tb_entry e[] = {{'f', "placeholder", "x", 0}};
  struct tb_buf t = tb_tar(e, 1, 0);
  tb_patch_name(&t, "placeholder", "bad\xff\xfename", 9);
  an_error_t err = NULL;
  cr_assert_lt(apply_blob(t, NULL, -1, 0, &err), 0);
  cr_assert(strstr(err->msg, "entry \"bad\\xff\\xfename\": name is not valid UTF-8"), "%s", err->msg);
  an_error_free(&err);
  tb_free(&t);
  cr_assert(!exists_in_root("bad\xff\xfename"));
  assert_canary_untouched();
}

/* ---- BL-29 ---- */
Test(image_unpack, bl_29_symlink_then_write_through_it_stays_in_rootfs) {
  struct tb_entry l1[] = {{'l', "up", "../../../../..", 0}, {'l', "root", "/", 0}};
  apply_ok(l1, 2);
  char through[256];
  snprintf(through, sizeof through, "up%s/escaped", canary);   /* up/tmp/an-canary-PID/escaped */
  struct stat host_libc;
  int had_libc = lstat("/usr/lib/libc.so.6", &host_libc);
  struct tb_entry l2[] = {{'f', through, "through-up", 0},
                          {'f', "root/tmp/escaped", "through-root", 0},
                          {'l', "usr/lib/x", "/usr/lib", 0},
                          {'f', "usr/lib/x/libc.so.6", "fake libc", 0}};
  apply_ok(l2, 4);
  char inside[256];
  snprintf(inside, sizeof inside, "%s/escaped", canary + 1);
  cr_assert_str_eq(read_in_root(inside), "through-up");
  cr_assert_str_eq(read_in_root("tmp/escaped"), "through-root");
  cr_assert_str_eq(read_in_root("usr/lib/libc.so.6"), "fake libc");
  struct stat st;
  cr_assert_eq(lstat("/usr/lib/libc.so.6", &st), had_libc, "host /usr/lib/libc.so.6 appeared");
  if (had_libc == 0) cr_assert_eq(st.st_ino, host_libc.st_ino);
  assert_canary_untouched();
}

/* ---- BL-30 ---- */
Test(image_unpack, bl_30_hardlink_escaping_the_root_is_refused) {
  struct tb_entry e[] = {{'f', "etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0},
                         {'h', "x", "../../../../etc/passwd", 0}};
  apply_fails(e, 2, "x", "path escapes the root");
  cr_assert(!exists_in_root("x"), "x exists: bytes were copied or linked");
  assert_canary_untouched();
}

Test(image_unpack, bl_30_absolute_hardlink_links_the_rootfs_own_file) {
  struct tb_entry e[] = {{'f', "etc/passwd", "image passwd\n", 0}, {'h', "y", "/etc/passwd", 0}};
  apply_ok(e, 2);
  char a[512], b[512];
  struct stat sa, sb, host;
  snprintf(a, sizeof a, "%s/etc/passwd", rootfs);
  snprintf(b, sizeof b, "%s/y", rootfs);
  cr_assert_eq(stat(a, &sa), 0);
  cr_assert_eq(stat(b, &sb), 0);
  cr_assert_eq(stat("/etc/passwd", &host), 0);
  cr_assert_eq(sa.st_ino, sb.st_ino, "y is not the same inode as ROOTFS/etc/passwd");
  cr_assert_neq(sb.st_ino, host.st_ino, "y is the host's /etc/passwd");
  cr_assert_str_eq(read_in_root("y"), "image passwd\n");
  assert_canary_untouched();
}

Test(image_unpack, bl_30_hardlink_to_missing_target_fails_cleanly) {
  struct tb_entry e[] = {{'h', "z", "missing", 0}};
  apply_fails(e, 1, "z", "not found in the rootfs");
  cr_assert(!exists_in_root("z"));
  assert_canary_untouched();
}

Test(image_unpack, hostile_names_in_warnings_and_link_targets_are_quoted) {
  /* an unknown .wh..wh. entry is skipped with a warning, a hard link to a
   * missing target fails: neither message may carry the raw escape bytes */
  struct tb_entry w[] = {{'f', "a/.wh..wh.\x1b[31mFAKE\nline", "", 0}};
  apply_ok(w, 1);
  cr_assert(strstr(warnings, "entry \"a/.wh..wh.\\x1b[31mFAKE\\x0aline\": unknown .wh..wh. entry skipped"),
            "warnings: %s", warnings);
  cr_assert(!strchr(warnings, '\x1b'), "raw ESC in warnings: %s", warnings);
  struct tb_entry h[] = {{'h', "z", "gone\x1b[2J", 0}};
  an_error_t err = NULL;
  cr_assert_lt(apply(h, 1, &err), 0);
  cr_assert(strstr(err->msg, "hardlink target \"gone\\x1b[2J\" not found"), "%s", err->msg);
  cr_assert(!strchr(err->msg, '\x1b'), "raw ESC in error: %s", err->msg);
  an_error_free(&err);
  assert_canary_untouched();
}

Test(image_unpack, bl_30_hardlink_to_directory_fails_cleanly) {
  struct tb_entry e[] = {{'d', "etc", NULL, 0}, {'h', "w", "etc", 0}};
  apply_fails(e, 2, "w", "is a directory");
  cr_assert(!exists_in_root("w"));
  assert_canary_untouched();
}

Test(image_unpack, bl_30_hardlink_through_symlink_to_host_file_stays_inside) {
  /* target resolved with chroot semantics: "hostetc" -> /etc means ROOTFS/etc */
  struct tb_entry e[] = {{'l', "hostetc", "/etc", 0}, {'h', "v", "hostetc/passwd", 0}};
  apply_fails(e, 2, "v", "not found in the rootfs");
  cr_assert(!exists_in_root("v"));
  assert_canary_untouched();
}

/* ---- BL-32 ---- */
Test(image_unpack, bl_32_whiteouts_and_opaque_whiteouts_hide_lower_entries) {
  struct tb_entry lower[] = {{'f', "etc/passwd", "p", 0}, {'f', "etc/keep", "k", 0},
                             {'f', "a/b/foo", "f", 0}, {'f', "secret/token", "t", 0}};
  apply_ok(lower, 4);
  struct tb_entry upper[] = {{'f', "etc/.wh.passwd", "", 0}, {'f', "a/.wh..wh..opq", "", 0},
                             {'f', "a/new", "n", 0}, {'f', "secret/.wh.token", "", 0}};
  apply_ok(upper, 4);
  cr_assert(!exists_in_root("etc/passwd"));
  cr_assert(exists_in_root("etc/keep"));
  cr_assert(exists_in_root("a/new"));
  cr_assert(!exists_in_root("a/b"));
  cr_assert(!exists_in_root("secret/token"));
  cr_assert_eq(an_test_sh("test -z \"$(find %s -name '.wh.*')\"", rootfs), 0, "a .wh.* name remains");
  assert_canary_untouched();
}

Test(image_unpack, bl_32_opaque_whiteout_keeps_same_layer_entries_in_any_order) {
  struct tb_entry lower[] = {{'f', "a/old", "o", 0}};
  apply_ok(lower, 1);
  struct tb_entry upper[] = {{'f', "a/sub/new", "n", 0}, {'f', "a/.wh..wh..opq", "", 0}};
  apply_ok(upper, 2);
  cr_assert(!exists_in_root("a/old"));
  cr_assert_str_eq(read_in_root("a/sub/new"), "n");
  assert_canary_untouched();
}

Test(image_unpack, bl_32_bare_whiteout_is_an_error_not_a_parent_deletion) {
  struct tb_entry lower[] = {{'f', "etc/passwd", "p", 0}};
  apply_ok(lower, 1);
  struct tb_entry bare[] = {{'f', "etc/.wh.", "", 0}};
  apply_fails(bare, 1, "etc/.wh.", "bare whiteout");
  struct tb_entry at_root[] = {{'f', ".wh.", "", 0}};
  apply_fails(at_root, 1, ".wh.", "bare whiteout");
  cr_assert(exists_in_root("etc/passwd"), "bare whiteout deleted its parent");
  assert_canary_untouched();
}

Test(image_unpack, bl_32_whiteout_of_dot_and_dotdot_refused) {
  struct tb_entry lower[] = {{'f', "x/keep", "k", 0}};
  apply_ok(lower, 1);
  struct tb_entry dot[] = {{'f', "x/.wh..", "", 0}};
  apply_fails(dot, 1, "x/.wh..", "whiteout of");
  struct tb_entry dotdot[] = {{'f', "x/.wh...", "", 0}};
  apply_fails(dotdot, 1, "x/.wh...", "whiteout of");
  cr_assert(exists_in_root("x/keep"));
  assert_canary_untouched();
}

Test(image_unpack, bl_32_whiteout_under_symlinked_dir_never_follows) {
  char target[256];
  snprintf(target, sizeof target, "%s", canary);          /* absolute host path of the CANARY */
  struct tb_entry lower[] = {{'l', "out", target, 0}, {'l', "up", "../../..", 0}};
  apply_ok(lower, 2);
  struct tb_entry wh[] = {{'f', "out/.wh.canary", "", 0}};
  apply_fails(wh, 1, "out/.wh.canary", "symlinked directory");
  struct tb_entry op[] = {{'f', "up/.wh..wh..opq", "", 0}};
  apply_fails(op, 1, "up/.wh..wh..opq", "symlinked directory");
  assert_canary_untouched();
}

/* ---- extras (issue 2 item 6) ---- */
Test(image_unpack, entries_dot_and_slash_are_the_root_directory) {
  struct tb_entry e[] = {{'d', ".", NULL, 0750}, {'d', "/", NULL, 0755}, {'f', "f", "x", 0}};
  apply_ok(e, 3);
  struct stat st;
  cr_assert_eq(stat(rootfs, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0755);
  assert_canary_untouched();
}

Test(image_unpack, root_entry_of_another_type_is_refused) {
  struct tb_entry f[] = {{'f', ".", "x", 0}};
  apply_fails(f, 1, ".", "names the root but is not a directory");
  struct tb_entry l[] = {{'l', "/", "/etc", 0}};
  apply_fails(l, 1, "/", "names the root but is not a directory");
  assert_canary_untouched();
}

Test(image_unpack, dev_proc_tmp_symlinks_do_not_redirect_later_writes) {
  struct tb_entry l1[] = {{'d', "var/tmp", NULL, 01777}, {'l', "tmp", "/var/tmp", 0},
                          {'l', "proc", "/proc", 0}, {'l', "dev", "/dev", 0}};
  apply_ok(l1, 4);
  struct tb_entry l2[] = {{'f', "tmp/escaped", "in var/tmp", 0}};
  apply_ok(l2, 1);
  cr_assert_str_eq(read_in_root("var/tmp/escaped"), "in var/tmp");
  struct tb_entry l3[] = {{'f', "proc/sys/kernel/evil", "x", 0}};
  an_error_t err = NULL;
  int r = apply(l3, 1, &err);     /* creates ROOTFS/proc/... or fails; never the host's /proc */
  if (r == 0) cr_assert_str_eq(read_in_root("proc/sys/kernel/evil"), "x");
  else cr_assert(strstr(err->msg, "proc/sys/kernel/evil"), "%s", err->msg);
  an_error_free(&err);
  struct tb_entry l4[] = {{'f', "dev/evil", "x", 0}};
  r = apply(l4, 1, &err);
  if (r == 0) cr_assert_str_eq(read_in_root("dev/evil"), "x");
  else cr_assert(strstr(err->msg, "dev/evil"), "%s", err->msg);
  an_error_free(&err);
  struct stat st;
  cr_assert_neq(lstat("/tmp/escaped", &st), 0);
  cr_assert_neq(lstat("/dev/evil", &st), 0);
  assert_canary_untouched();
}

Test(image_unpack, device_nodes_are_skipped_with_a_warning) {
  struct tb_entry e[] = {{'c', "dev/null", NULL, 0}, {'b', "dev/sda", NULL, 0}, {'p', "run/fifo", NULL, 0}};
  apply_ok(e, 3);
  cr_assert(!exists_in_root("dev/null"));
  cr_assert(!exists_in_root("dev/sda"));
  cr_assert(strstr(warnings, "entry \"dev/null\": device node skipped"), "warnings: %s", warnings);
  cr_assert(strstr(warnings, "entry \"dev/sda\": device node skipped"), "warnings: %s", warnings);
  char p[512];
  struct stat st;
  snprintf(p, sizeof p, "%s/run/fifo", rootfs);
  cr_assert_eq(lstat(p, &st), 0);
  cr_assert(S_ISFIFO(st.st_mode));
  assert_canary_untouched();
}

Test(image_unpack, absurd_entry_size_is_refused_before_writing) {
  struct tb_entry e[] = {{'f', "big", "tiny", 0}};
  struct tb_buf t = tb_tar(e, 1, 0);
  tb_patch_size(&t, "big", 1ULL << 50);      /* 1 PiB declared */
  an_error_t err = NULL;
  cr_assert_lt(apply_blob(t, NULL, -1, 0, &err), 0);
  cr_assert(strstr(err->msg, "entry \"big\": size 1125899906842624 exceeds the unpack limit"), "%s", err->msg);
  cr_assert_eq(err->errnum, EFBIG);
  an_error_free(&err);
  tb_free(&t);
  cr_assert(!exists_in_root("big"));
  assert_canary_untouched();
}

Test(image_unpack, total_unpack_cap_is_enforced_across_entries) {
  struct tb_entry e[] = {{'f', "one", "0123456789", 0}, {'f', "two", "0123456789", 0}};
  struct tb_buf t = tb_tar(e, 2, 0);
  an_error_t err = NULL;
  cr_assert_lt(apply_blob(t, NULL, -1, 15, &err), 0);
  cr_assert(strstr(err->msg, "entry \"two\": size 10 exceeds the unpack limit of 15 bytes"), "%s", err->msg);
  an_error_free(&err);
  tb_free(&t);
  assert_canary_untouched();
}

Test(image_unpack, corrupt_gzip_layer_fails_with_a_read_error) {
  struct tb_entry e[] = {{'f', "a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0},
                         {'f', "b", "some more data to make a longer deflate stream 1234567890", 0}};
  struct tb_buf t = tb_tar(e, 2, 'g');
  for (size_t i = 20; i < t.len - 10; i += 7) t.data[i] ^= 0x5a;
  an_error_t err = NULL;
  cr_assert_lt(apply_blob(t, NULL, -1, 0, &err), 0);     /* digest matches the corrupt bytes */
  cr_assert(strstr(err->msg, "layer sha256:"), "%s", err->msg);
  cr_assert_null(strstr(err->msg, "digest mismatch"), "%s", err->msg);
  cr_log_info("corrupt gzip: %s", err->msg);
  an_error_free(&err);
  tb_free(&t);
  assert_canary_untouched();
}

Test(image_unpack, truncated_gzip_layer_fails) {
  char big[8192];
  for (size_t i = 0; i < sizeof big - 1; i++) big[i] = (char) ('a' + (i * 7919) % 26);
  big[sizeof big - 1] = '\0';
  struct tb_entry e[] = {{'f', "big", big, 0}, {'f', "after", "x", 0}};
  struct tb_buf t = tb_tar(e, 2, 'g');
  t.len /= 2;
  an_error_t err = NULL;
  cr_assert_lt(apply_blob(t, NULL, -1, 0, &err), 0);
  cr_assert(strstr(err->msg, "layer sha256:"), "%s", err->msg);
  cr_log_info("truncated gzip: %s", err->msg);
  an_error_free(&err);
  tb_free(&t);
  assert_canary_untouched();
}

Test(image_unpack, blob_digest_mismatch_is_reported_with_both_digests) {
  struct tb_entry e[] = {{'f', "a", "a", 0}};
  struct tb_buf t = tb_tar(e, 1, 'g');
  const char *wrong = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
  an_error_t err = NULL;
  cr_assert_lt(apply_blob(t, wrong, -1, 0, &err), 0);
  char got[72];
  tb_digest(t.data, t.len, got);
  cr_assert(strstr(err->msg, "digest mismatch"), "%s", err->msg);
  cr_assert(strstr(err->msg, wrong) && strstr(err->msg, got), "%s", err->msg);
  an_error_free(&err);
  tb_free(&t);
  assert_canary_untouched();
}

Test(image_unpack, blob_size_mismatch_is_reported) {
  struct tb_entry e[] = {{'f', "a", "a", 0}};
  struct tb_buf t = tb_tar(e, 1, 'g');
  an_error_t err = NULL;
  cr_assert_lt(apply_blob(t, NULL, (int64_t) t.len - 1, 0, &err), 0);
  cr_assert(strstr(err->msg, "size mismatch"), "%s", err->msg);
  an_error_free(&err);
  tb_free(&t);
  assert_canary_untouched();
}

Test(image_unpack, zstd_layers_are_applied) {
  struct tb_entry e[] = {{'f', "z/file", "zstd content", 0}};
  struct tb_buf t = tb_tar(e, 1, 'z');
  an_error_t err = NULL;
  cr_assert_eq(apply_blob(t, NULL, -1, 0, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(read_in_root("z/file"), "zstd content");
  tb_free(&t);
  assert_canary_untouched();
}

Test(image_unpack, replacing_a_directory_with_a_symlink_does_not_follow_it) {
  struct tb_entry l1[] = {{'f', "d/inner", "x", 0}};
  apply_ok(l1, 1);
  char target[256];
  snprintf(target, sizeof target, "%s/sub", canary);
  struct tb_entry l2[] = {{'l', "d", target, 0}};
  apply_ok(l2, 1);
  char p[512], link[512];
  snprintf(p, sizeof p, "%s/d", rootfs);
  ssize_t n = readlink(p, link, sizeof link - 1);
  cr_assert_gt(n, 0, "d is not a symlink");
  cr_assert(!exists_in_root("d/inner"));
  /* d/file resolves with chroot semantics (ROOTFS/tmp/an-canary-PID/sub,
   * which does not exist: a dangling parent fails the entry) */
  struct tb_entry l3[] = {{'f', "d/file", "written through d", 0}};
  apply_fails(l3, 1, "d/file", "ENOENT");
  assert_canary_untouched();
}

Test(image_unpack, file_modes_including_setuid_are_kept) {
  struct tb_entry e[] = {{'f', "bin/su", "elf", 04755}, {'d', "tmpdir", NULL, 01777}};
  apply_ok(e, 2);
  struct stat st;
  char p[512];
  snprintf(p, sizeof p, "%s/bin/su", rootfs);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 04755);
  snprintf(p, sizeof p, "%s/tmpdir", rootfs);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 01777);
  cr_assert_eq(st.st_mtime, 1700000000);
  assert_canary_untouched();
}

Test(image_unpack, owners_are_numeric_ids_never_looked_up_by_name) {
  /* BL-24: uname "root" with uid 1234 must give uid 1234, not 0 */
  struct tb_entry e[] = {{'f', "owned", "x", 0, 1234, 5678, 0}, {'l', "owned-link", "owned", 0, 4321, 8765, 0}};
  apply_ok(e, 2);
  struct stat st;
  char p[512];
  snprintf(p, sizeof p, "%s/owned", rootfs);
  cr_assert_eq(lstat(p, &st), 0);
  cr_assert_eq(st.st_uid, 1234);
  cr_assert_eq(st.st_gid, 5678);
  snprintf(p, sizeof p, "%s/owned-link", rootfs);
  cr_assert_eq(lstat(p, &st), 0);
  cr_assert_eq(st.st_uid, 4321, "symlink owner set through the link");
  assert_canary_untouched();
}

Test(image_unpack, only_user_xattrs_are_kept_and_others_warned_about) {
  struct tb_entry e[] = {{'f', "bin/ping", "elf", 0755, 0, 0, 1}};
  apply_ok(e, 1);
  char p[512], v[16];
  snprintf(p, sizeof p, "%s/bin/ping", rootfs);
  ssize_t n = getxattr(p, "user.test", v, sizeof v);
  if (n < 0 && errno == ENOTSUP) cr_skip_test("no user xattrs on this file system");
  cr_assert_eq(n, 1);
  cr_assert_lt(getxattr(p, "security.capability", v, sizeof v), 0, "file capability applied");
  cr_assert(strstr(warnings, "entry \"bin/ping\": xattr security.capability dropped"), "%s", warnings);
  assert_canary_untouched();
}

Test(image_unpack, entry_path_rules) {
  char *out = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_entry_path_normalize("./a//b/./c/", &out, &err), 0);
  cr_assert_str_eq(out, "a/b/c");
  free(out);
  cr_assert_eq(an_entry_path_normalize("/", &out, &err), 0);
  cr_assert_str_eq(out, "");
  free(out);
  cr_assert_eq(an_entry_path_normalize("///abs/x", &out, &err), 0);
  cr_assert_str_eq(out, "abs/x");
  free(out);
  cr_assert_lt(an_entry_path_normalize("..", &out, &err), 0);
  an_error_free(&err);
  cr_assert_lt(an_entry_path_normalize("\xc0\xaf", &out, &err), 0);   /* overlong '/' */
  an_error_free(&err);
  assert_canary_untouched();
}
