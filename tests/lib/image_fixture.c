/* tests/lib/image_fixture.c — see image_fixture.h. */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "image_fixture.h"
#include "rm_tree.h"
#include "util.h"

void tb_free(struct tb_buf *b) { free(b->data); b->data = NULL; b->len = 0; }

void tb_digest(const void *buf, size_t len, char out[72]) {
  unsigned char md[32];
  unsigned int l = 0;
  EVP_Digest(buf, len, md, &l, EVP_sha256(), NULL);
  strcpy(out, "sha256:");
  for (int i = 0; i < 32; i++) sprintf(out + 7 + 2 * i, "%02x", md[i]);
}

struct mem { char *data; size_t len, cap; };
static int mem_open(struct archive *a, void *d) { (void) a; (void) d; return ARCHIVE_OK; }
static la_ssize_t mem_write(struct archive *a, void *d, const void *buf, size_t len) {
  (void) a;
  struct mem *m = d;
  if (m->len + len > m->cap) {
    m->cap = (m->len + len) * 2 + 4096;
    m->data = realloc(m->data, m->cap);
    cr_assert_not_null(m->data);
  }
  memcpy(m->data + m->len, buf, len);
  m->len += len;
  return (la_ssize_t) len;
}

struct tb_buf tb_tar(const struct tb_entry *e, size_t n, int compression) {
  struct mem m = {0};
  struct archive *a = archive_write_new();
  int pax = 0;
  for (size_t i = 0; i < n; i++) pax |= e[i].xattrs;
  if (pax) archive_write_set_format_pax(a);
  else archive_write_set_format_ustar(a);
  if (compression == 'g') archive_write_add_filter_gzip(a);
  if (compression == 'z') archive_write_add_filter_zstd(a);
  archive_write_set_bytes_in_last_block(a, 1);
  cr_assert_eq(archive_write_open(a, &m, mem_open, mem_write, NULL), ARCHIVE_OK);
  for (size_t i = 0; i < n; i++) {
    struct archive_entry *ae = archive_entry_new();
    archive_entry_set_pathname(ae, e[i].name);
    archive_entry_set_uid(ae, e[i].uid);
    archive_entry_set_gid(ae, e[i].gid);
    archive_entry_set_uname(ae, "root");      /* a lookup by name would give 0 */
    archive_entry_set_gname(ae, "root");
    if (e[i].xattrs) {
      archive_entry_xattr_add_entry(ae, "user.test", "1", 1);
      archive_entry_xattr_add_entry(ae, "security.capability", "\x01\x00\x00\x02", 4);
    }
    archive_entry_set_mtime(ae, 1700000000, 0);
    size_t dlen = 0;
    switch (e[i].type) {
    case 'f':
      dlen = e[i].data ? strlen(e[i].data) : 0;
      archive_entry_set_filetype(ae, AE_IFREG);
      archive_entry_set_perm(ae, e[i].mode ? e[i].mode : 0644);
      archive_entry_set_size(ae, (la_int64_t) dlen);
      break;
    case 'd':
      archive_entry_set_filetype(ae, AE_IFDIR);
      archive_entry_set_perm(ae, e[i].mode ? e[i].mode : 0755);
      break;
    case 'l':
      archive_entry_set_filetype(ae, AE_IFLNK);
      archive_entry_set_perm(ae, 0777);
      archive_entry_set_symlink(ae, e[i].data);
      break;
    case 'h':
      archive_entry_set_filetype(ae, AE_IFREG);
      archive_entry_set_perm(ae, 0644);
      archive_entry_set_hardlink(ae, e[i].data);
      archive_entry_set_size(ae, 0);
      break;
    case 'c': case 'b':
      archive_entry_set_filetype(ae, e[i].type == 'c' ? AE_IFCHR : AE_IFBLK);
      archive_entry_set_perm(ae, 0666);
      archive_entry_set_rdev(ae, makedev(1, 3));
      break;
    case 'p':
      archive_entry_set_filetype(ae, AE_IFIFO);
      archive_entry_set_perm(ae, 0644);
      break;
    }
    int r = archive_write_header(a, ae);
    cr_assert(r >= ARCHIVE_WARN, "write header %s: %s", e[i].name, archive_error_string(a));
    if (dlen) cr_assert_eq(archive_write_data(a, e[i].data, dlen), (la_ssize_t) dlen);
    archive_entry_free(ae);
  }
  archive_write_close(a);
  archive_write_free(a);
  return (struct tb_buf){m.data, m.len};
}

struct tb_buf tb_gzip(struct tb_buf in) {
  struct mem m = {0};
  struct archive *a = archive_write_new();
  archive_write_set_format_raw(a);
  archive_write_add_filter_gzip(a);
  archive_write_set_bytes_in_last_block(a, 1);
  cr_assert_eq(archive_write_open(a, &m, mem_open, mem_write, NULL), ARCHIVE_OK);
  struct archive_entry *ae = archive_entry_new();
  archive_entry_set_filetype(ae, AE_IFREG);
  archive_entry_set_pathname(ae, "raw");
  cr_assert(archive_write_header(a, ae) >= ARCHIVE_WARN);
  cr_assert_eq(archive_write_data(a, in.data, in.len), (la_ssize_t) in.len);
  archive_entry_free(ae);
  archive_write_close(a);
  archive_write_free(a);
  return (struct tb_buf){m.data, m.len};
}

static void fix_checksum(unsigned char *h) {
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += h[i];
  snprintf((char *) h + 148, 8, "%06o", sum);
  h[155] = ' ';
}

static unsigned char *find_header(struct tb_buf *t, const char *name) {
  for (size_t off = 0; off + 512 <= t->len; off += 512) {
    unsigned char *h = (unsigned char *) t->data + off;
    if (!memcmp(h + 257, "ustar", 5) && !strncmp((char *) h, name, 100) && !h[345]) return h;
  }
  cr_assert_fail("no tar header named %s", name);
  return NULL;
}

void tb_patch_name(struct tb_buf *t, const char *old, const char *new_name, size_t new_len) {
  unsigned char *h = find_header(t, old);
  cr_assert(new_len <= 100);
  memset(h, 0, 100);
  memcpy(h, new_name, new_len);
  fix_checksum(h);
}

void tb_patch_size(struct tb_buf *t, const char *name, uint64_t size) {
  unsigned char *h = find_header(t, name);
  memset(h + 124, 0, 12);
  h[124] = 0x80;                         /* base-256 */
  for (int i = 0; i < 8; i++) h[135 - i] = (unsigned char) (size >> (8 * i));
  fix_checksum(h);
}

static void write_blob(const char *dir, const void *buf, size_t len, char out[72]) {
  tb_digest(buf, len, out);
  char path[4096];
  snprintf(path, sizeof path, "%s/blobs/sha256/%s", dir, out + 7);
  an_test_write_file(path, buf, len, 0644);
}

/* diff_id: digest of the uncompressed tar (config.md rootfs.diff_ids) */
static void diff_id(const struct tb_buf *l, char out[72]) {
  struct archive *a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_raw(a);
  struct archive_entry *e;
  struct mem m = {0};
  if (archive_read_open_memory(a, l->data, l->len) == ARCHIVE_OK &&
      archive_read_next_header(a, &e) == ARCHIVE_OK) {
    char buf[65536];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0) mem_write(a, &m, buf, (size_t) n);
  }
  archive_read_free(a);
  tb_digest(m.data ? m.data : "", m.len, out);
  free(m.data);
}

static const char *layer_mt(const struct tb_buf *l) {
  const unsigned char *p = (const unsigned char *) l->data;
  if (l->len >= 2 && p[0] == 0x1f && p[1] == 0x8b) return "application/vnd.oci.image.layer.v1.tar+gzip";
  if (l->len >= 4 && p[0] == 0x28 && p[1] == 0xb5) return "application/vnd.oci.image.layer.v1.tar+zstd";
  return "application/vnd.oci.image.layer.v1.tar";
}

void tb_oci_layout(const char *dir, const struct tb_buf *layers, size_t n, const char *ref_name,
                   char *manifest_digest, char (*layer_digests)[72]) {
  char path[4096];
  snprintf(path, sizeof path, "%s/blobs/sha256", dir);
  an_test_mkdirs(path);
  snprintf(path, sizeof path, "%s/oci-layout", dir);
  const char *ol = "{\"imageLayoutVersion\":\"1.0.0\"}";
  an_test_write_file(path, ol, strlen(ol), 0644);
  char *cfg = NULL, *man = NULL, *idx = NULL, *ids = strdup(""), *lay = strdup("");
  char (*dg)[72] = calloc(n + 1, 72);
  for (size_t i = 0; i < n; i++) {
    write_blob(dir, layers[i].data, layers[i].len, dg[i]);
    if (layer_digests) memcpy(layer_digests[i], dg[i], 72);
    char *t;
    char did[72];
    diff_id(&layers[i], did);
    cr_assert(asprintf(&t, "%s%s\"%s\"", ids, i ? "," : "", did) > 0);
    free(ids); ids = t;
    cr_assert(asprintf(&t, "%s%s{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%zu}", lay, i ? "," : "",
                       layer_mt(&layers[i]), dg[i], layers[i].len) > 0);
    free(lay); lay = t;
  }
  cr_assert(asprintf(&cfg, "{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":\"2024-01-01T00:00:00Z\","
                           "\"config\":{\"Env\":[\"PATH=/usr/bin:/bin\",\"LANG=C.UTF-8\"],\"Cmd\":[\"/bin/sh\"],"
                           "\"WorkingDir\":\"/work\",\"User\":\"65532:65532\"},"
                           "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[%s]}}", ids) > 0);
  char cdg[72], mdg[72];
  write_blob(dir, cfg, strlen(cfg), cdg);
  cr_assert(asprintf(&man, "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                           "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"%s\",\"size\":%zu},"
                           "\"layers\":[%s]}", cdg, strlen(cfg), lay) > 0);
  write_blob(dir, man, strlen(man), mdg);
  if (manifest_digest) memcpy(manifest_digest, mdg, 72);
  char ann[600] = "";
  if (ref_name) snprintf(ann, sizeof ann, ",\"annotations\":{\"org.opencontainers.image.ref.name\":\"%s\"}", ref_name);
  cr_assert(asprintf(&idx, "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                           "\"digest\":\"%s\",\"size\":%zu%s}]}", mdg, strlen(man), ann) > 0);
  snprintf(path, sizeof path, "%s/index.json", dir);
  an_test_write_file(path, idx, strlen(idx), 0644);
  free(cfg); free(man); free(idx); free(ids); free(lay); free(dg);
}

void tb_tar_dir(const char *dir, const char *out) {
  /* libarchive: walk dir (names relative to it, symlinks not followed) */
  char cwd[4096];
  cr_assert_not_null(getcwd(cwd, sizeof cwd));
  cr_assert_eq(chdir(dir), 0);
  struct archive *disk = archive_read_disk_new();
  archive_read_disk_set_standard_lookup(disk);
  archive_read_disk_set_symlink_physical(disk);
  struct archive *w = archive_write_new();
  archive_write_set_format_pax_restricted(w);
  char abs_out[4200];
  snprintf(abs_out, sizeof abs_out, "%s%s%s", out[0] == '/' ? "" : cwd, out[0] == '/' ? "" : "/", out);
  cr_assert_eq(archive_write_open_filename(w, abs_out), ARCHIVE_OK);
  cr_assert_eq(archive_read_disk_open(disk, "."), ARCHIVE_OK);
  for (;;) {
    struct archive_entry *e = archive_entry_new();
    int r = archive_read_next_header2(disk, e);
    if (r == ARCHIVE_EOF) { archive_entry_free(e); break; }
    cr_assert(r >= ARCHIVE_WARN, "read disk: %s", archive_error_string(disk));
    archive_read_disk_descend(disk);
    cr_assert(archive_write_header(w, e) >= ARCHIVE_WARN, "%s", archive_error_string(w));
    if (archive_entry_filetype(e) == AE_IFREG && archive_entry_size(e) > 0) {
      int fd = open(archive_entry_sourcepath(e), O_RDONLY);
      cr_assert_geq(fd, 0);
      char buf[65536];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0) archive_write_data(w, buf, (size_t) n);
      close(fd);
    }
    archive_entry_free(e);
  }
  archive_read_free(disk);
  archive_write_close(w);
  archive_write_free(w);
  cr_assert_eq(chdir(cwd), 0);
}

void tb_docker_archive(const char *out, const struct tb_buf *layers, size_t n, const char *repotag) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s.d", out);
  cr_assert_eq(an_test_sh("rm -rf '%s' && mkdir -p '%s'", dir, dir), 0);
  char *ids = strdup(""), *lay = strdup(""), *t;
  for (size_t i = 0; i < n; i++) {
    char dg[72], path[4200];
    tb_digest(layers[i].data, layers[i].len, dg);
    snprintf(path, sizeof path, "%s/%s", dir, dg + 7);
    cr_assert_eq(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/%s/layer.tar", dir, dg + 7);
    an_test_write_file(path, layers[i].data, layers[i].len, 0644);
    cr_assert(asprintf(&t, "%s%s\"%s\"", ids, i ? "," : "", dg) > 0);
    free(ids); ids = t;
    cr_assert(asprintf(&t, "%s%s\"%s/layer.tar\"", lay, i ? "," : "", dg + 7) > 0);
    free(lay); lay = t;
  }
  char *cfg, *man, cdg[72], path[4200];
  cr_assert(asprintf(&cfg, "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"A=b\"],\"Cmd\":[\"sh\"]},"
                           "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[%s]}}", ids) > 0);
  tb_digest(cfg, strlen(cfg), cdg);
  snprintf(path, sizeof path, "%s/%s.json", dir, cdg + 7);
  an_test_write_file(path, cfg, strlen(cfg), 0644);
  cr_assert(asprintf(&man, "[{\"Config\":\"%s.json\",\"RepoTags\":[\"%s\"],\"Layers\":[%s]}]", cdg + 7, repotag, lay) > 0);
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  an_test_write_file(path, man, strlen(man), 0644);
  snprintf(path, sizeof path, "%s/repositories", dir);
  an_test_write_file(path, "{}", 2, 0644);
  tb_tar_dir(dir, out);
  an_test_rm_tree(dir);
  free(ids); free(lay); free(cfg); free(man);
}

/* ---- snapshot ---- */
static char *snap_buf;
static size_t snap_len;
static const char *snap_exclude;

static int snap_cb(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void) flag; (void) f;
  if (snap_exclude && !strncmp(path, snap_exclude, strlen(snap_exclude)) &&
      (path[strlen(snap_exclude)] == '/' || !path[strlen(snap_exclude)]))
    return 0;
  char line[4400];
  unsigned long h = 0;
  if (S_ISREG(st->st_mode)) {
    FILE *fp = fopen(path, "r");
    int c;
    while (fp && (c = fgetc(fp)) != EOF) h = h * 31 + (unsigned) c;
    if (fp) fclose(fp);
  }
  int n = snprintf(line, sizeof line, "%s %o %lld %lld.%09ld %lu\n", path, st->st_mode,
                   (long long) st->st_size, (long long) st->st_mtim.tv_sec, st->st_mtim.tv_nsec, h);
  snap_buf = realloc(snap_buf, snap_len + (size_t) n + 1);
  memcpy(snap_buf + snap_len, line, (size_t) n + 1);
  snap_len += (size_t) n;
  return 0;
}

char *tb_snapshot(const char *dir, const char *exclude) {
  snap_buf = strdup("");
  snap_len = 0;
  snap_exclude = exclude;
  nftw(dir, snap_cb, 32, FTW_PHYS);
  /* the host root's well-known escape targets must not exist either */
  static const char *host[] = {"/evil", "/abs_evil", "/escaped", "/tmp/escaped", "/usr/lib/libc.so.6.evil", NULL};
  for (const char **p = host; *p; p++) {
    struct stat st;
    if (lstat(*p, &st) == 0) snap_cb(*p, &st, 0, NULL);
  }
  char *r = snap_buf;
  snap_buf = NULL;
  return r;
}
