/* Integration tests for an_image_import() and `agentnest image`: every
 * source kind (OCI layout, oci-archive, docker-archive, rootfs tar, umoci
 * layouts), idempotence, verification failures (digest, size, missing blob,
 * NAME@sha256 mismatch, corrupt and truncated gzip), hostile layers through
 * the whole import (cases/image-unpack.md BL-28/29/30/32), and the store's
 * atomicity: after a failure no image and no temp dir remain, and the CANARY
 * tree outside the store is untouched. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/image.h"
#include "image_fixture.h"

static char canary[128], store[256], work[256];
static char *before;
static char *snap_outside(void);

static void setup(void) {
  snprintf(canary, sizeof canary, "/tmp/an-icanary-%d", (int) getpid());
  an_test_rm_tree(canary);
  cr_assert_eq(an_test_sh("mkdir -p %s/store %s/work %s/sub && echo precious > %s/canary", canary, canary,
                     canary, canary), 0);
  snprintf(store, sizeof store, "%s/store", canary);
  snprintf(work, sizeof work, "%s/work", canary);
  before = snap_outside();
}

static void teardown(void) {
  an_test_rm_tree(canary);
  free(before);
}

static char *snap_outside(void) {
  /* snapshot of the canary dir without store/ and work/ */
  char sub[300];
  snprintf(sub, sizeof sub, "%s/sub", canary);
  char *a = tb_snapshot(sub, NULL);
  char f[300];
  snprintf(f, sizeof f, "%s/canary", canary);
  char *b = tb_snapshot(f, NULL);
  char *r;
  cr_assert(asprintf(&r, "%s%s", a, b) > 0);
  free(a);
  free(b);
  return r;
}

static void snap_begin(void) { free(before); before = snap_outside(); }
static void assert_canary_untouched(void);
static int count_store(int *images, int *temps);

/* end of every test: CANARY (outside store/ and work/) untouched, no temp dir in the store */
static void assert_clean_end(void) {
  assert_canary_untouched();
  int images, temps;
  count_store(&images, &temps);
  cr_assert_eq(temps, 0, "a temp dir was left in the store");
}
static void assert_canary_untouched(void) {
  char *now = snap_outside();
  cr_assert_str_eq(now, before, "CANARY changed:\n%s\n---\n%s", before, now);
  free(now);
}

/* names in <store>/images that are images (hex) or temp dirs */
static int count_store(int *images, int *temps) {
  *images = *temps = 0;
  char p[300];
  snprintf(p, sizeof p, "%s/images", store);
  DIR *d = opendir(p);
  if (!d) return -1;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strlen(de->d_name) == 64) (*images)++;
    if (!strncmp(de->d_name, ".tmp-", 5)) (*temps)++;
  }
  closedir(d);
  return 0;
}

static void assert_store_empty_of_images(void) {
  int images, temps;
  count_store(&images, &temps);
  cr_assert_eq(images, 0, "an image was left in the store");
  cr_assert_eq(temps, 0, "a temp dir was left in the store");
}

static int import(const char *src, const char *name, struct an_image_info **info, an_error_t *err) {
  struct an_image_import_opts o = {.no_sync = 1};
  return an_image_import(store, src, name, &o, info, err);
}

static void import_fails(const char *src, const char *name, const char *why) {
  snap_begin();
  an_error_t err = NULL;
  struct an_image_info *info = NULL;
  cr_assert_lt(import(src, name, &info, &err), 0, "import of %s succeeded", src);
  cr_assert_null(info);
  cr_assert(strstr(err->msg, why), "error lacks '%s': %s", why, err->msg);
  cr_assert(strstr(err->msg, "image import "), "error lacks context: %s", err->msg);
  an_error_free(&err);
  assert_store_empty_of_images();
  assert_canary_untouched();
}

static struct an_image_info *import_ok(const char *src, const char *name) {
  an_error_t err = NULL;
  struct an_image_info *info = NULL;
  int r = import(src, name, &info, &err);
  cr_assert_eq(r, 0, "import %s: %s", src, err ? err->msg : "?");
  cr_assert_not_null(info);
  int images, temps;
  count_store(&images, &temps);
  cr_assert_eq(temps, 0, "a temp dir was left in the store");
  return info;
}

static char *file_in(const char *rootfs, const char *rel) {
  static char buf[256];
  char p[600];
  snprintf(p, sizeof p, "%s/%s", rootfs, rel);
  FILE *f = fopen(p, "r");
  if (!f) return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void two_layer_layout(const char *dir, char *digest) {
  struct tb_entry l1[] = {{'d', "./", NULL, 0755}, {'f', "etc/os-release", "ID=test\n", 0},
                          {'f', "etc/gone", "g", 0}, {'f', "bin/sh", "#!sh", 0755}};
  struct tb_entry l2[] = {{'f', "etc/.wh.gone", "", 0}, {'f', "work/hello", "hi", 0}};
  struct tb_buf layers[2] = {tb_tar(l1, 4, 'g'), tb_tar(l2, 2, 0)};
  tb_oci_layout(dir, layers, 2, "example.com/test:1.0", digest, NULL);
  tb_free(&layers[0]);
  tb_free(&layers[1]);
}

TestSuite(image_import, .init = setup, .fini = teardown);

Test(image_import, oci_layout_is_unpacked_with_config_and_names) {
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  struct an_image_info *info = import_ok(dir, NULL);
  cr_assert_str_eq(info->digest, digest);
  cr_assert_str_eq(file_in(info->rootfs, "etc/os-release"), "ID=test\n");
  cr_assert_str_eq(file_in(info->rootfs, "work/hello"), "hi");
  cr_assert_null(file_in(info->rootfs, "etc/gone"));
  cr_assert_str_eq(info->config.env[1], "LANG=C.UTF-8");
  cr_assert_str_eq(info->config.cmd[0], "/bin/sh");
  cr_assert_str_eq(info->config.working_dir, "/work");
  cr_assert_str_eq(info->config.user, "65532:65532");
  cr_assert_str_eq(info->names[0], "example.com/test:1.0");
  cr_assert_eq(info->source, AN_IMAGE_SOURCE_OCI_LAYOUT);
  cr_assert_eq(info->already_present, 0);
  an_image_info_free(info);

  struct an_image_info *r = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_image_resolve(store, "example.com/test:1.0", &r, &err), 0);
  cr_assert_str_eq(r->digest, digest);
  an_image_info_free(r);
  cr_assert_eq(an_image_resolve(store, digest + 7, &r, &err), 0);   /* full hex */
  an_image_info_free(r);
  char prefix[20];
  snprintf(prefix, sizeof prefix, "%.12s", digest + 7);
  cr_assert_eq(an_image_resolve(store, prefix, &r, &err), 0);
  an_image_info_free(r);
  cr_assert_eq(an_image_resolve(store, "nope", &r, &err), -ENOENT);
  cr_assert(strstr(err->msg, "image nope: not found"), "%s", err->msg);
  an_error_free(&err);
  assert_clean_end();
}

Test(image_import, import_twice_gives_one_store_entry_with_the_same_digest) {
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  struct an_image_info *a = import_ok(dir, "first");
  struct an_image_info *b = import_ok(dir, "second:v2");
  cr_assert_str_eq(a->digest, b->digest);
  cr_assert_eq(b->already_present, 1);
  cr_assert_str_eq(b->names[0], "first:latest");
  cr_assert_str_eq(b->names[1], "second:v2");
  an_image_info_free(a);
  an_image_info_free(b);
  int images, temps;
  count_store(&images, &temps);
  cr_assert_eq(images, 1);
  struct an_image_info **list = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  cr_assert_eq(an_image_list(store, &list, &n, &err), 0);
  cr_assert_eq(n, 1);
  cr_assert_str_eq(list[0]->digest, digest);
  an_image_list_free(list, n);
  assert_clean_end();
}

/* The store marks images/ as the top of directory hierarchies (chattr +T) so
 * ext4 places each import's tree afresh rather than among inodes the store
 * just freed (see an_store_open).  Only ext2/3/4 keep the flag. */
Test(image_import, store_marks_images_dir_as_top_of_hierarchies_on_ext4) {
  struct statfs sf;
  cr_assert_eq(statfs(store, &sf), 0);
  if (sf.f_type != EXT4_SUPER_MAGIC) cr_skip("store %s is not on ext2/3/4", store);
  char dir[300], digest[72], images[300];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  an_image_info_free(import_ok(dir, "top"));
  snprintf(images, sizeof images, "%s/images", store);
  int fd = open(images, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cr_assert_geq(fd, 0);
  int flags = 0;
  cr_assert_eq(ioctl(fd, FS_IOC_GETFLAGS, &flags), 0);
  close(fd);
  cr_assert(flags & FS_TOPDIR_FL, "%s lacks FS_TOPDIR_FL (flags %#x)", images, flags);
  assert_clean_end();
}

Test(image_import, oci_archive_is_detected_and_imported) {
  char dir[300], tar[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  snprintf(tar, sizeof tar, "%s/image.oci.tar", work);
  two_layer_layout(dir, digest);
  tb_tar_dir(dir, tar);
  struct an_image_info *info = import_ok(tar, "arch");
  cr_assert_str_eq(info->digest, digest);
  cr_assert_eq(info->source, AN_IMAGE_SOURCE_OCI_ARCHIVE);
  cr_assert_str_eq(file_in(info->rootfs, "work/hello"), "hi");
  an_image_info_free(info);
  assert_clean_end();
}

Test(image_import, docker_archive_is_detected_and_verified_by_diff_ids) {
  char tar[300];
  snprintf(tar, sizeof tar, "%s/image.docker.tar", work);
  struct tb_entry l1[] = {{'f', "etc/hostname", "docker", 0}, {'f', "etc/rm", "x", 0}};
  struct tb_entry l2[] = {{'f', "etc/.wh.rm", "", 0}};
  struct tb_buf layers[2] = {tb_tar(l1, 2, 0), tb_tar(l2, 1, 0)};
  tb_docker_archive(tar, layers, 2, "docker.io/library/thing:7");
  struct an_image_info *info = import_ok(tar, NULL);
  cr_assert_eq(info->source, AN_IMAGE_SOURCE_DOCKER_ARCHIVE);
  cr_assert_str_eq(file_in(info->rootfs, "etc/hostname"), "docker");
  cr_assert_null(file_in(info->rootfs, "etc/rm"));
  cr_assert_str_eq(info->names[0], "docker.io/library/thing:7");
  cr_assert_str_eq(info->config.env[0], "A=b");
  char first[72];
  snprintf(first, sizeof first, "%s", info->digest);
  an_image_info_free(info);
  info = import_ok(tar, NULL);                 /* synthesised manifest is deterministic */
  cr_assert_str_eq(info->digest, first);
  cr_assert_eq(info->already_present, 1);
  an_image_info_free(info);
  tb_free(&layers[0]);
  tb_free(&layers[1]);
  assert_clean_end();
}

Test(image_import, docker_archive_layer_not_matching_diff_id_is_refused) {
  char tar[300], dir[300];
  snprintf(tar, sizeof tar, "%s/bad.docker.tar", work);
  snprintf(dir, sizeof dir, "%s/unpacked", work);
  struct tb_entry l1[] = {{'f', "etc/hostname", "docker", 0}};
  struct tb_buf layers[1] = {tb_tar(l1, 1, 0)};
  tb_docker_archive(tar, layers, 1, "thing:1");
  /* swap the layer bytes for another tar, keep manifest and config */
  struct tb_entry other[] = {{'f', "etc/hostname", "tampered", 0}};
  struct tb_buf o = tb_tar(other, 1, 0);
  char dg[72], p[600];
  tb_digest(layers[0].data, layers[0].len, dg);
  cr_assert_eq(an_test_sh("mkdir -p %s && tar -C %s -xf %s", dir, dir, tar), 0);
  snprintf(p, sizeof p, "%s/%s/layer.tar", dir, dg + 7);
  an_test_write_file(p, o.data, o.len, 0644);
  cr_assert_eq(unlink(tar), 0);
  tb_tar_dir(dir, tar);
  import_fails(tar, NULL, "digest mismatch");
  tb_free(&layers[0]);
  tb_free(&o);
  assert_clean_end();
}

Test(image_import, rootfs_tar_plain_gzip_and_zstd_are_imported) {
  struct tb_entry e[] = {{'d', "./", NULL, 0755}, {'f', "./etc/issue", "plain rootfs", 0},
                         {'l', "./bin", "usr/bin", 0}};
  const int comp[] = {0, 'g', 'z'};
  for (int i = 0; i < 3; i++) {
    char tar[300];
    snprintf(tar, sizeof tar, "%s/rootfs-%d.tar", work, i);
    struct tb_buf t = tb_tar(e, 3, comp[i]);
    an_test_write_file(tar, t.data, t.len, 0644);
    tb_free(&t);
    struct an_image_info *info = import_ok(tar, "rootfs");
    cr_assert_eq(info->source, AN_IMAGE_SOURCE_ROOTFS_TAR);
    cr_assert_str_eq(file_in(info->rootfs, "etc/issue"), "plain rootfs");
    cr_assert_str_eq(info->config.os, "linux");
    cr_assert(info->config.env && !strncmp(info->config.env[0], "PATH=", 5));
    an_image_info_free(info);
  }
  int images, temps;
  count_store(&images, &temps);
  cr_assert_eq(images, 3);
  assert_clean_end();
}

Test(image_import, layer_blob_digest_mismatch_leaves_nothing) {
  char dir[300], digest[72], dg[2][72], p[600];
  snprintf(dir, sizeof dir, "%s/layout", work);
  struct tb_entry l1[] = {{'f', "a", "aaaa", 0}};
  struct tb_buf layers[1] = {tb_tar(l1, 1, 0)};
  tb_oci_layout(dir, layers, 1, NULL, digest, dg);
  layers[0].data[600] ^= 1;                  /* same size, other bytes */
  snprintf(p, sizeof p, "%s/blobs/sha256/%s", dir, dg[0] + 7);
  an_test_write_file(p, layers[0].data, layers[0].len, 0644);
  import_fails(dir, "x", "digest mismatch");
  tb_free(&layers[0]);
  assert_clean_end();
}

Test(image_import, manifest_naming_a_missing_blob_fails) {
  char dir[300], digest[72], dg[2][72], p[600];
  snprintf(dir, sizeof dir, "%s/layout", work);
  struct tb_entry l1[] = {{'f', "a", "aaaa", 0}};
  struct tb_entry l2[] = {{'f', "b", "bbbb", 0}};
  struct tb_buf layers[2] = {tb_tar(l1, 1, 0), tb_tar(l2, 1, 0)};
  tb_oci_layout(dir, layers, 2, NULL, digest, dg);
  snprintf(p, sizeof p, "%s/blobs/sha256/%s", dir, dg[1] + 7);
  cr_assert_eq(unlink(p), 0);
  char why[120];
  snprintf(why, sizeof why, "blob blobs/sha256/%s: not found", dg[1] + 7);
  import_fails(dir, "x", why);
  tb_free(&layers[0]);
  tb_free(&layers[1]);
  assert_clean_end();
}

Test(image_import, corrupt_config_blob_is_refused) {
  char dir[300], digest[72], p[600];
  snprintf(dir, sizeof dir, "%s/layout", work);
  struct tb_entry l1[] = {{'f', "a", "aaaa", 0}};
  struct tb_buf layers[1] = {tb_tar(l1, 1, 0)};
  tb_oci_layout(dir, layers, 1, NULL, digest, NULL);
  /* overwrite the manifest blob: its digest no longer matches index.json */
  snprintf(p, sizeof p, "%s/blobs/sha256/%s", dir, digest + 7);
  an_test_write_file(p, "{}", 2, 0644);
  import_fails(dir, "x", "size mismatch");
  tb_free(&layers[0]);
  assert_clean_end();
}

Test(image_import, name_with_mismatching_digest_is_refused) {
  char dir[300], digest[72], name[200];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  import_fails(dir, "pinned@sha256:1111111111111111111111111111111111111111111111111111111111111111",
               "does not match");
  snprintf(name, sizeof name, "pinned@%s", digest);
  struct an_image_info *info = import_ok(dir, name);
  cr_assert_str_eq(info->digest, digest);
  cr_assert_str_eq(info->names[0], "pinned:latest");
  an_image_info_free(info);
  assert_clean_end();
}

Test(image_import, corrupt_and_truncated_gzip_layers_leave_nothing) {
  char big[6000];
  for (size_t i = 0; i < sizeof big - 1; i++) big[i] = (char) ('a' + (i * 7919) % 26);
  big[sizeof big - 1] = '\0';
  struct tb_entry e[] = {{'f', "big", big, 0}, {'f', "small", "s", 0}};
  for (int mode = 0; mode < 2; mode++) {
    char dir[300], digest[72];
    snprintf(dir, sizeof dir, "%s/layout-%d", work, mode);
    struct tb_buf t = tb_tar(e, 2, 'g');
    if (mode == 0)
      for (size_t i = 30; i < t.len - 10; i += 11) t.data[i] ^= 0x33;
    else
      t.len = t.len * 2 / 3;
    tb_oci_layout(dir, &t, 1, NULL, digest, NULL);   /* digests describe the damaged blob */
    import_fails(dir, "gz", "layer sha256:");
    tb_free(&t);
  }
  assert_clean_end();
}

Test(image_import, bl_28_escaping_entry_fails_the_import_naming_layer_and_entry) {
  char dir[300], digest[72], dg[1][72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  struct tb_entry e[] = {{'d', "./", NULL, 0}, {'f', "./etc/ok", "ok", 0}, {'f', "../../evil", "x", 0}};
  struct tb_buf t = tb_tar(e, 3, 'g');
  tb_oci_layout(dir, &t, 1, NULL, digest, dg);
  char why[200];
  snprintf(why, sizeof why, "layer %.19s: entry \"../../evil\": path escapes the root", dg[0]);
  import_fails(dir, "evil", why);
  struct stat st;
  char p[300];
  snprintf(p, sizeof p, "%s/evil", canary);
  cr_assert_neq(lstat(p, &st), 0);
  tb_free(&t);
  assert_clean_end();
}

Test(image_import, bl_29_symlink_then_write_is_contained_in_the_stored_rootfs) {
  char dir[300], digest[72], through[300];
  snprintf(dir, sizeof dir, "%s/layout", work);
  snprintf(through, sizeof through, "up%s/sub/escaped", canary);
  struct tb_entry l1[] = {{'l', "up", "../../../../../../..", 0}, {'l', "root", "/", 0}};
  struct tb_entry l2[] = {{'f', through, "x", 0}, {'f', "root/tmp/escaped", "y", 0}};
  struct tb_buf layers[2] = {tb_tar(l1, 2, 0), tb_tar(l2, 2, 'g')};
  tb_oci_layout(dir, layers, 2, NULL, digest, NULL);
  snap_begin();
  struct an_image_info *info = import_ok(dir, "bl29");
  char inside[300];
  snprintf(inside, sizeof inside, "%s/sub/escaped", canary + 1);
  cr_assert_str_eq(file_in(info->rootfs, inside), "x");
  cr_assert_str_eq(file_in(info->rootfs, "tmp/escaped"), "y");
  struct stat st;
  cr_assert_neq(lstat("/tmp/escaped", &st), 0);
  assert_canary_untouched();
  an_image_info_free(info);
  tb_free(&layers[0]);
  tb_free(&layers[1]);
  assert_clean_end();
}

Test(image_import, bl_30_outside_hardlink_fails_the_import) {
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  struct tb_entry e[] = {{'f', "etc/passwd", "p", 0}, {'h', "x", "../../../../etc/passwd", 0}};
  struct tb_buf t = tb_tar(e, 2, 0);
  tb_oci_layout(dir, &t, 1, NULL, digest, NULL);
  import_fails(dir, "bl30", "entry \"x\": hardlink target: entry \"../../../../etc/passwd\": path escapes the root");
  tb_free(&t);
  assert_clean_end();
}

Test(image_import, bl_32_bare_whiteout_fails_the_import) {
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  struct tb_entry l1[] = {{'f', "etc/passwd", "p", 0}};
  struct tb_entry l2[] = {{'f', "etc/.wh.", "", 0}};
  struct tb_buf layers[2] = {tb_tar(l1, 1, 0), tb_tar(l2, 1, 0)};
  tb_oci_layout(dir, layers, 2, NULL, digest, NULL);
  import_fails(dir, "bl32", "entry \"etc/.wh.\": bare whiteout");
  tb_free(&layers[0]);
  tb_free(&layers[1]);
  assert_clean_end();
}

Test(image_import, absurd_size_fails_the_import_with_efbig) {
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  struct tb_entry e[] = {{'f', "huge", "tiny", 0}};
  struct tb_buf t = tb_tar(e, 1, 0);
  tb_patch_size(&t, "huge", 1ULL << 60);
  tb_oci_layout(dir, &t, 1, NULL, digest, NULL);
  import_fails(dir, "big", "entry \"huge\": size 1152921504606846976 exceeds the unpack limit");
  tb_free(&t);
  assert_clean_end();
}

Test(image_import, hostile_outer_archive_cannot_escape_either) {
  /* an oci-archive tar whose own entries climb out: refused like a layer */
  char tar[300];
  snprintf(tar, sizeof tar, "%s/evil.oci.tar", work);
  struct tb_entry e[] = {{'f', "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}", 0},
                         {'f', "index.json", "{}", 0},
                         {'l', "blobs", "/", 0},
                         {'f', "../../evil-outer", "x", 0}};
  struct tb_buf t = tb_tar(e, 4, 0);
  an_test_write_file(tar, t.data, t.len, 0644);
  /* "../../evil-outer" is not an archive member name: detected as a rootfs tar, and refused */
  import_fails(tar, "outer", "path escapes the root");
  tb_free(&t);
  assert_clean_end();
}

Test(image_import, stale_temp_dirs_are_swept_by_the_next_import) {
  char p[400];
  snprintf(p, sizeof p, "%s/images/.tmp-999999-deadbeef/image/rootfs/etc", store);
  cr_assert_eq(an_test_sh("mkdir -p %s && echo x > %s/f", p, p), 0);
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  struct an_image_info *info = import_ok(dir, "sweep");
  an_image_info_free(info);
  snprintf(p, sizeof p, "%s/images/.tmp-999999-deadbeef", store);
  struct stat st;
  cr_assert_neq(lstat(p, &st), 0, "stale temp dir survived");
  assert_clean_end();
}

Test(image_import, remove_untags_then_deletes) {
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  an_image_info_free(import_ok(dir, "one"));
  an_image_info_free(import_ok(dir, "two"));
  an_error_t err = NULL;
  cr_assert_eq(an_image_remove(store, "one", &err), 0);
  int images, temps;
  count_store(&images, &temps);
  cr_assert_eq(images, 1, "image deleted while still tagged");
  cr_assert_eq(an_image_remove(store, "two:latest", &err), 0);
  count_store(&images, &temps);
  cr_assert_eq(images, 0);
  cr_assert_eq(temps, 0);
  cr_assert_eq(an_image_remove(store, "two", &err), -ENOENT);
  an_error_free(&err);
  an_image_info_free(import_ok(dir, "three"));
  cr_assert_eq(an_image_remove(store, digest, &err), 0, "%s", err ? err->msg : "");
  count_store(&images, &temps);
  cr_assert_eq(images, 0);
  assert_clean_end();
}

Test(image_import, inspect_prints_json_with_config_and_layers) {
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  an_image_info_free(import_ok(dir, "insp"));
  char *json = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_image_inspect(store, "insp", &json, &err), 0);
  cr_assert(strstr(json, digest));
  cr_assert(strstr(json, "\"WorkingDir\": \"/work\""), "%s", json);
  cr_assert(strstr(json, "\"insp:latest\""), "%s", json);
  free(json);
  assert_clean_end();
}

Test(image_import, umoci_built_layout_imports) {
  if (access("/usr/bin/umoci", X_OK) != 0) cr_skip_test("umoci not installed");
  char dir[300];
  snprintf(dir, sizeof dir, "%s/umoci", work);
  cr_assert_eq(an_test_sh("mkdir -p %s && cd %s && mkdir -p tree/etc && echo from-umoci > tree/etc/msg && ln -s etc/msg tree/link && "
                     "umoci init --layout lay && umoci new --image lay:latest && "
                     "umoci unpack --image lay:latest b >/dev/null && cp -a tree/. b/rootfs/ && "
                     "umoci repack --image lay:latest b >/dev/null && "
                     "umoci insert --image lay:latest tree/etc/msg /etc/msg2 >/dev/null && "
                     "umoci config --image lay:latest --config.env X=1 --config.workingdir /etc >/dev/null",
                     dir, dir), 0);
  char lay[400];
  snprintf(lay, sizeof lay, "%s/lay:latest", dir);
  struct an_image_info *info = import_ok(lay, "umoci-test");
  cr_assert_str_eq(file_in(info->rootfs, "etc/msg"), "from-umoci\n");
  cr_assert_str_eq(file_in(info->rootfs, "etc/msg2"), "from-umoci\n");
  cr_assert_str_eq(file_in(info->rootfs, "link"), "from-umoci\n");
  cr_assert_str_eq(info->config.working_dir, "/etc");
  an_image_info_free(info);
  assert_clean_end();
}

Test(image_import, skopeo_copied_layout_imports) {
  if (access("/usr/bin/skopeo", X_OK) != 0) cr_skip_test("skopeo not installed");
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  cr_assert_eq(an_test_sh("skopeo --insecure-policy copy -q oci:%s oci:%s/skopeo:copied >/dev/null 2>&1 || "
                     "skopeo --insecure-policy copy oci:%s:example.com/test:1.0 oci:%s/skopeo:copied",
                     dir, work, dir, work), 0);
  char src[400];
  snprintf(src, sizeof src, "%s/skopeo:copied", work);
  struct an_image_info *info = import_ok(src, "sk");
  cr_assert_str_eq(file_in(info->rootfs, "work/hello"), "hi");
  an_image_info_free(info);
  assert_clean_end();
}

/* ---- the CLI ---- */
static const char *cli(void) {
  static char p[600];
  const char *b = getenv("AN_TEST_BUILD");
  snprintf(p, sizeof p, "%s/agentnest", b ? b : "build");
  return p;
}

Test(image_import, cli_import_ls_inspect_rm_and_exit_125_on_error) {
  char dir[300], digest[72], out[400];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  snprintf(out, sizeof out, "%s/out", work);
  cr_assert_eq(an_test_sh("%s --root %s image import %s --name cli:1 > %s", cli(), store, dir, out), 0);
  FILE *f = fopen(out, "r");
  char line[200] = "";
  cr_assert(fgets(line, sizeof line, f));
  fclose(f);
  cr_assert(!strncmp(line, digest, 71), "stdout: %s", line);
  cr_assert_eq(an_test_sh("%s --root %s image ls | grep -q '^cli:1 '", cli(), store), 0);
  cr_assert_eq(an_test_sh("%s --root %s image ls --json | grep -q '\"cli:1\"'", cli(), store), 0);
  cr_assert_eq(an_test_sh("%s --root %s image inspect cli:1 | grep -q '\"Id\": \"%s\"'", cli(), store, digest), 0);
  cr_assert_eq(an_test_sh("%s image import --help | grep -q Usage", cli()), 0);
  cr_assert_eq(an_test_sh("%s --root %s image rm cli:1", cli(), store), 0);
  cr_assert_eq(an_test_sh("%s --root %s image inspect cli:1 2>/dev/null", cli(), store), 125);

  /* a hostile layer: status 125 and the message names the layer and the entry */
  char evil[300], dg[1][72], d2[72];
  snprintf(evil, sizeof evil, "%s/evil", work);
  struct tb_entry e[] = {{'f', "../../evil", "x", 0}};
  struct tb_buf t = tb_tar(e, 1, 0);
  tb_oci_layout(evil, &t, 1, NULL, d2, dg);
  tb_free(&t);
  cr_assert_eq(an_test_sh("%s --root %s image import %s 2> %s", cli(), store, evil, out), 125);
  f = fopen(out, "r");
  char msg[1000] = "";
  cr_assert(fgets(msg, sizeof msg, f));
  fclose(f);
  char want[700];
  /* "agentnest image import SRC: ...", the command said once (it was "agentnest: image import") */
  snprintf(want, sizeof want, "agentnest image import %s: layer %.19s: entry \"../../evil\": path escapes the root",
           evil, dg[0]);
  cr_assert(strstr(msg, want), "stderr: %s\nwant: %s", msg, want);
  assert_store_empty_of_images();
  assert_clean_end();
}

Test(image_import, skopeo_written_docker_archive_and_oci_archive_import) {
  if (access("/usr/bin/skopeo", X_OK) != 0) cr_skip_test("skopeo not installed");
  char dir[300], digest[72], dtar[300], otar[300];
  snprintf(dir, sizeof dir, "%s/layout", work);
  snprintf(dtar, sizeof dtar, "%s/sk-docker.tar", work);
  snprintf(otar, sizeof otar, "%s/sk-oci.tar", work);
  two_layer_layout(dir, digest);
  cr_assert_eq(an_test_sh("skopeo --insecure-policy copy -q oci:%s:example.com/test:1.0 docker-archive:%s:sk/docker:1 && "
                     "skopeo --insecure-policy copy -q oci:%s:example.com/test:1.0 oci-archive:%s:sk-oci",
                     dir, dtar, dir, otar), 0);
  struct an_image_info *d = import_ok(dtar, NULL);
  cr_assert_eq(d->source, AN_IMAGE_SOURCE_DOCKER_ARCHIVE);
  cr_assert_str_eq(file_in(d->rootfs, "work/hello"), "hi");
  cr_assert_null(file_in(d->rootfs, "etc/gone"));
  cr_assert_str_eq(d->names[0], "docker.io/sk/docker:1");
  struct an_image_info *o = import_ok(otar, NULL);
  cr_assert_eq(o->source, AN_IMAGE_SOURCE_OCI_ARCHIVE);
  cr_assert_str_eq(file_in(o->rootfs, "work/hello"), "hi");
  an_image_info_free(d);
  an_image_info_free(o);
  assert_clean_end();
}

Test(image_import, cached_image_tool_layouts_import_twice_to_one_entry) {
  static const char *imgs[] = {"busybox", "python"};
  int done = 0;
  for (size_t i = 0; i < 2; i++) {
    char lay[300];
    snprintf(lay, sizeof lay, "/var/cache/agentnest/images/%s/layout", imgs[i]);
    if (access(lay, R_OK) != 0) continue;
    struct an_image_info *a = import_ok(lay, imgs[i]);
    struct an_image_info *b = import_ok(lay, imgs[i]);
    cr_assert_str_eq(a->digest, b->digest);
    cr_assert_eq(b->already_present, 1);
    char sh[400];
    snprintf(sh, sizeof sh, "%s/bin/sh", a->rootfs);
    struct stat st;
    cr_assert_eq(lstat(sh, &st), 0, "%s has no /bin/sh", imgs[i]);
    an_image_info_free(a);
    an_image_info_free(b);
    done++;
  }
  if (!done) cr_skip_test("no image built under /var/cache/agentnest/images (make images)");
  int images, temps;
  count_store(&images, &temps);
  cr_assert_eq(images, done);
  assert_clean_end();
}

Test(image_import, concurrent_imports_of_one_image_leave_one_entry) {
  char dir[300], digest[72];
  snprintf(dir, sizeof dir, "%s/layout", work);
  two_layer_layout(dir, digest);
  pid_t kids[4];
  for (int i = 0; i < 4; i++) {
    kids[i] = fork();
    cr_assert_geq(kids[i], 0);
    if (kids[i] == 0) {
      an_error_t err = NULL;
      struct an_image_import_opts o = {.no_sync = 1};
      char name[32];
      snprintf(name, sizeof name, "race:%d", i);
      _exit(an_image_import(store, dir, name, &o, NULL, &err) == 0 ? 0 : 1);
    }
  }
  for (int i = 0; i < 4; i++) {
    int st;
    cr_assert_eq(waitpid(kids[i], &st, 0), kids[i]);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "import %d failed", i);
  }
  int images, temps;
  count_store(&images, &temps);
  cr_assert_eq(images, 1);
  struct an_image_info *info = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_image_resolve(store, "race:3", &info, &err), 0);
  size_t n = 0;
  while (info->names[n]) n++;
  cr_assert_eq(n, 4, "tags lost in concurrent names.json updates");
  an_image_info_free(info);
  assert_clean_end();
}
