/* Integration tests for rootfs-tools/: the OCI image layouts that the image
 * builders write (busybox, python, python-tests, debian) are readable by
 * skopeo and umoci, content-addressed correctly, reproducible byte for byte,
 * cached, and the python root really runs Python with its standard library.
 *
 * Images come from the cache `make images` fills (AN_IMAGE_CACHE, default
 * /var/cache/agentnest/images). A test about an image that is not built skips
 * and says so; the reproducibility tests build busybox themselves into
 * private temporary caches. Run as root (builders and chroot need it). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <archive.h>
#include <archive_entry.h>
#include <yajl/yajl_tree.h>

#define SOURCE_DATE_EPOCH 1700000000L /* rootfs-tools/lib.sh default */

static const char *const image_names[] = {"busybox", "python", "python-tests", "debian"};

static const char *image_cache(void) {
  const char *c = getenv("AN_IMAGE_CACHE");
  return c && *c ? c : "/var/cache/agentnest/images";
}

static const char *source_dir(void) {
  const char *s = getenv("AN_TEST_SRC");
  return s && *s ? s : ".";
}

static char *xasprintf(const char *fmt, ...) {
  va_list ap;
  char *s = NULL;
  va_start(ap, fmt);
  int r = vasprintf(&s, fmt, ap);
  va_end(ap);
  cr_assert_geq(r, 0, "vasprintf");
  return s;
}

/* Runs `sh -c CMD`; returns its exit status (-1 if it did not exit) and, if
 * out is not NULL, its stdout (caller frees). stderr goes to the test log. */
static int run_sh(char **out, const char *fmt, ...) {
  va_list ap;
  char *cmd = NULL;
  va_start(ap, fmt);
  int r = vasprintf(&cmd, fmt, ap);
  va_end(ap);
  cr_assert_geq(r, 0);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "popen %s", cmd);
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, p)) > 0) fwrite(chunk, 1, n, mem);
  fclose(mem);
  int st = pclose(p);
  free(cmd);
  if (out) *out = buf; else free(buf);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *read_text(const char *path) {
  FILE *f = fopen(path, "re");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, n, mem);
  fclose(mem);
  fclose(f);
  return buf;
}

static yajl_val read_json(const char *path) {
  char *text = read_text(path);
  cr_assert_not_null(text, "read %s: %s", path, strerror(errno));
  char errbuf[256];
  yajl_val v = yajl_tree_parse(text, errbuf, sizeof errbuf);
  cr_assert_not_null(v, "parse %s: %s", path, errbuf);
  free(text);
  return v;
}

static const char *json_str(yajl_val v, const char **path) {
  yajl_val s = yajl_tree_get(v, path, yajl_t_string);
  return s ? YAJL_GET_STRING(s) : NULL;
}

/* Skips the test (saying why) unless image NAME is in the cache; returns the
 * image's directory (caller frees). */
static char *image_dir_or_skip(const char *name) {
  char *dir = xasprintf("%s/%s", image_cache(), name);
  char *index = xasprintf("%s/layout/index.json", dir);
  if (access(index, R_OK) != 0) {
    free(index);
    cr_skip("image %s is not built in %s (run `make images`)", name, image_cache());
  }
  free(index);
  return dir;
}

/* sha256 of a file as lowercase hex (libcrypto EVP). */
static void sha256_file_hex(const char *path, char hex[65]) {
  FILE *f = fopen(path, "re");
  cr_assert_not_null(f, "open %s", path);
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  cr_assert(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL));
  unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) EVP_DigestUpdate(ctx, buf, n);
  cr_assert(!ferror(f), "read %s", path);
  unsigned int mdlen = 0;
  EVP_DigestFinal_ex(ctx, md, &mdlen);
  EVP_MD_CTX_free(ctx);
  fclose(f);
  for (unsigned int i = 0; i < mdlen; i++) sprintf(hex + 2 * i, "%02x", md[i]);
  hex[64] = '\0';
}

/* Path of the blob a "sha256:HEX" digest names inside layout dir LAYOUT. */
static char *blob_path(const char *layout, const char *digest) {
  cr_assert(digest && strncmp(digest, "sha256:", 7) == 0, "digest '%s' is not sha256:", digest);
  return xasprintf("%s/blobs/sha256/%s", layout, digest + 7);
}

/* The manifest of the only image in LAYOUT, parsed (caller frees). */
static yajl_val read_manifest(const char *layout, char **manifest_digest) {
  char *ip = xasprintf("%s/index.json", layout);
  yajl_val index = read_json(ip);
  free(ip);
  yajl_val ms = yajl_tree_get(index, (const char *[]){"manifests", NULL}, yajl_t_array);
  cr_assert(ms && YAJL_GET_ARRAY(ms)->len == 1, "%s/index.json must list one manifest", layout);
  yajl_val m0 = YAJL_GET_ARRAY(ms)->values[0];
  const char *digest = json_str(m0, (const char *[]){"digest", NULL});
  cr_assert_not_null(digest);
  char *mp = blob_path(layout, digest);
  yajl_val manifest = read_json(mp);
  free(mp);
  if (manifest_digest) *manifest_digest = strdup(digest);
  yajl_tree_free(index);
  return manifest;
}

static void check_skopeo_and_umoci(const char *name) {
  char *dir = image_dir_or_skip(name);
  char *out = NULL;
  int st = run_sh(&out, "skopeo inspect oci:%s/layout:%s", dir, name);
  cr_assert_eq(st, 0, "skopeo inspect oci:%s/layout:%s exited %d", dir, name, st);
  cr_assert(strstr(out, "\"Digest\": \"sha256:"), "skopeo inspect output lacks a digest: %s", out);
  free(out);
  st = run_sh(&out, "umoci stat --json --image %s/layout:%s", dir, name);
  cr_assert_eq(st, 0, "umoci stat --image %s/layout:%s exited %d", dir, name, st);
  cr_assert(strstr(out, "history"), "umoci stat output lacks history: %s", out);
  free(out);
  char *dst = xasprintf("/tmp/an-images-test-%d-copy-%s", getpid(), name);
  st = run_sh(NULL, "skopeo copy -q oci:%s/layout:%s oci:%s:%s", dir, name, dst, name);
  int cleanup = run_sh(NULL, "rm -rf '%s'", dst);
  cr_assert_eq(st, 0, "skopeo copy oci:%s/layout:%s oci:%s exited %d", dir, name, dst, st);
  cr_assert_eq(cleanup, 0);
  free(dst);
  free(dir);
}

Test(images, busybox_layout_is_read_by_skopeo_and_umoci, .timeout = 120) { check_skopeo_and_umoci("busybox"); }
Test(images, python_layout_is_read_by_skopeo_and_umoci, .timeout = 120) { check_skopeo_and_umoci("python"); }
Test(images, python_tests_layout_is_read_by_skopeo_and_umoci, .timeout = 120) { check_skopeo_and_umoci("python-tests"); }
Test(images, debian_layout_is_read_by_skopeo_and_umoci, .timeout = 120) { check_skopeo_and_umoci("debian"); }

/* Every blob's file name is the sha256 of its content, and every descriptor
 * reachable from index.json names a blob that exists with the stated size. */
Test(images, every_blob_is_named_by_its_sha256_and_descriptors_resolve, .timeout = 300) {
  int checked = 0;
  for (size_t i = 0; i < sizeof image_names / sizeof *image_names; i++) {
    char *layout = xasprintf("%s/%s/layout", image_cache(), image_names[i]);
    char *blobs = xasprintf("%s/blobs/sha256", layout);
    DIR *d = opendir(blobs);
    if (!d) {
      cr_log_warn("image %s is not built in %s; not checked", image_names[i], image_cache());
      free(layout), free(blobs);
      continue;
    }
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      char *p = xasprintf("%s/%s", blobs, e->d_name);
      char hex[65];
      sha256_file_hex(p, hex);
      cr_expect_str_eq(hex, e->d_name, "blob %s has sha256 %s", p, hex);
      free(p);
      n++;
    }
    closedir(d);
    cr_assert_geq(n, 3, "%s holds %d blobs; a layout needs config, manifest, layer", blobs, n);
    yajl_val manifest = read_manifest(layout, NULL);
    cr_assert_str_eq(json_str(manifest, (const char *[]){"mediaType", NULL}),
                     "application/vnd.oci.image.manifest.v1+json");
    yajl_val layers = yajl_tree_get(manifest, (const char *[]){"layers", NULL}, yajl_t_array);
    yajl_val config = yajl_tree_get(manifest, (const char *[]){"config", NULL}, yajl_t_object);
    cr_assert(layers && config);
    size_t nl = YAJL_GET_ARRAY(layers)->len;
    for (size_t j = 0; j <= nl; j++) {
      yajl_val desc = j < nl ? YAJL_GET_ARRAY(layers)->values[j] : config;
      char *p = blob_path(layout, json_str(desc, (const char *[]){"digest", NULL}));
      yajl_val size = yajl_tree_get(desc, (const char *[]){"size", NULL}, yajl_t_number);
      struct stat st;
      cr_assert_eq(stat(p, &st), 0, "descriptor names missing blob %s", p);
      cr_assert(size && YAJL_IS_INTEGER(size) && YAJL_GET_INTEGER(size) == st.st_size,
                "descriptor size of %s differs from its %lld bytes", p, (long long)st.st_size);
      free(p);
    }
    yajl_tree_free(manifest);
    free(layout), free(blobs);
    checked++;
  }
  if (checked == 0) cr_skip("no image is built in %s (run `make images`)", image_cache());
}

/* Builds busybox into a private cache; returns the manifest digest. */
static char *build_busybox_into(const char *cache) {
  char *shared_debs = xasprintf("%s/.debs", image_cache());
  char *debs_env = access(shared_debs, R_OK) == 0 ? xasprintf("AN_DEB_CACHE='%s'", shared_debs) : strdup("");
  char *out = NULL;
  int st = run_sh(&out, "AN_IMAGE_CACHE='%s' %s '%s/rootfs-tools/build-all.sh' busybox",
                  cache, debs_env, source_dir());
  cr_assert_eq(st, 0, "build-all.sh busybox into %s exited %d: %s", cache, st, out);
  free(out), free(debs_env), free(shared_debs);
  char *dp = xasprintf("%s/busybox/digest", cache);
  char *digest = read_text(dp);
  cr_assert_not_null(digest, "no %s after build", dp);
  free(dp);
  digest[strcspn(digest, "\n")] = '\0';
  return digest;
}

static char *repro_cache[2];
static void repro_fini(void) {
  for (int i = 0; i < 2; i++)
    if (repro_cache[i]) run_sh(NULL, "rm -rf '%s'", repro_cache[i]), free(repro_cache[i]);
}

Test(images, busybox_builds_twice_to_the_same_manifest_digest, .timeout = 300, .fini = repro_fini) {
  for (int i = 0; i < 2; i++) repro_cache[i] = xasprintf("/tmp/an-images-test-%d-cache%d", getpid(), i);
  char *a = build_busybox_into(repro_cache[0]);
  char *b = build_busybox_into(repro_cache[1]);
  cr_assert(strncmp(a, "sha256:", 7) == 0 && strlen(a) == 71, "bad digest '%s'", a);
  cr_assert_str_eq(a, b, "two builds of busybox differ: %s vs %s", a, b);
  /* Byte for byte: the whole index.json too, not just the digest. */
  char *ia = xasprintf("%s/busybox/layout/index.json", repro_cache[0]);
  char *ib = xasprintf("%s/busybox/layout/index.json", repro_cache[1]);
  char *ta = read_text(ia), *tb = read_text(ib);
  cr_assert(ta && tb);
  cr_assert_str_eq(ta, tb);
  free(ta), free(tb), free(ia), free(ib), free(a), free(b);
}

Test(images, build_all_reuses_a_cached_image_whose_inputs_are_unchanged, .timeout = 300, .fini = repro_fini) {
  repro_cache[0] = xasprintf("/tmp/an-images-test-%d-reuse", getpid());
  char *a = build_busybox_into(repro_cache[0]);
  char *link = xasprintf("%s/busybox", repro_cache[0]);
  char before[4096] = "", after[4096] = "";
  cr_assert_gt(readlink(link, before, sizeof before - 1), 0, "%s is not a symlink", link);
  char *out = NULL;
  int st = run_sh(&out, "AN_IMAGE_CACHE='%s' '%s/rootfs-tools/build-all.sh' busybox 2>&1",
                  repro_cache[0], source_dir());
  cr_assert_eq(st, 0);
  cr_assert(strstr(out, "busybox: reusing cached image"), "second run did not reuse: %s", out);
  cr_assert_gt(readlink(link, after, sizeof after - 1), 0);
  cr_assert_str_eq(before, after, "the cached image directory was replaced");
  free(out), free(link), free(a);
}

Test(images, build_all_refuses_an_unknown_image_name) {
  char *out = NULL;
  char *cache = xasprintf("/tmp/an-images-test-%d-unknown", getpid());
  int st = run_sh(&out, "AN_IMAGE_CACHE='%s' '%s/rootfs-tools/build-all.sh' no-such-image 2>&1",
                  cache, source_dir());
  cr_assert_neq(st, 0);
  cr_assert(strstr(out, "unknown image 'no-such-image'"), "unclear error: %s", out);
  cr_assert_neq(access(cache, F_OK), 0, "a refused build left %s behind", cache);
  free(out), free(cache);
}

Test(images, layout_writer_refuses_bad_cmd_and_leaves_nothing) {
  char *dst = xasprintf("/tmp/an-images-test-%d-badcmd", getpid());
  char *out = NULL;
  int st = run_sh(&out, "'%s/rootfs-tools/oci-layout.sh' --out '%s' --tag x --layer /var/empty"
                  " --cmd 'not json' 2>&1", source_dir(), dst);
  cr_assert_neq(st, 0);
  cr_assert(strstr(out, "not a JSON array"), "unclear error: %s", out);
  cr_assert_neq(access(dst, F_OK), 0, "refused layout left %s behind", dst);
  free(out), free(dst);
}

/* The gzip header (RFC 1952 section 2.3) of every layer: no file name, MTIME 0. */
Test(images, layers_are_gzip_without_name_or_timestamp) {
  char *dir = image_dir_or_skip("busybox");
  char *layout = xasprintf("%s/layout", dir);
  yajl_val manifest = read_manifest(layout, NULL);
  yajl_val layers = yajl_tree_get(manifest, (const char *[]){"layers", NULL}, yajl_t_array);
  cr_assert(layers && YAJL_GET_ARRAY(layers)->len >= 1);
  char *p = blob_path(layout, json_str(YAJL_GET_ARRAY(layers)->values[0], (const char *[]){"digest", NULL}));
  unsigned char h[10];
  FILE *f = fopen(p, "re");
  cr_assert_not_null(f);
  cr_assert_eq(fread(h, 1, sizeof h, f), sizeof h);
  fclose(f);
  cr_assert(h[0] == 0x1f && h[1] == 0x8b, "%s is not gzip", p);
  cr_assert_eq(h[3] & 0x08, 0, "gzip header of %s carries a file name", p);
  cr_assert(h[4] == 0 && h[5] == 0 && h[6] == 0 && h[7] == 0, "gzip header of %s carries a time", p);
  yajl_tree_free(manifest);
  free(p), free(layout), free(dir);
}

/* Layer entries: relative names without "." or "..", fixed mtime, owner root
 * except the agent's own directories, no device nodes. */
Test(images, busybox_layer_entries_are_normalised) {
  char *dir = image_dir_or_skip("busybox");
  char *layout = xasprintf("%s/layout", dir);
  yajl_val manifest = read_manifest(layout, NULL);
  yajl_val layers = yajl_tree_get(manifest, (const char *[]){"layers", NULL}, yajl_t_array);
  char *p = blob_path(layout, json_str(YAJL_GET_ARRAY(layers)->values[0], (const char *[]){"digest", NULL}));
  struct archive *a = archive_read_new();
  archive_read_support_filter_gzip(a);
  archive_read_support_format_tar(a);
  cr_assert_eq(archive_read_open_filename(a, p, 65536), ARCHIVE_OK, "%s", archive_error_string(a));
  struct archive_entry *e;
  int n = 0, saw_sh = 0;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    const char *name = archive_entry_pathname(e);
    n++;
    cr_expect(name[0] != '/' && strncmp(name, "./", 2) != 0 && strcmp(name, ".") != 0 &&
                  strstr(name, "..") == NULL, "entry name '%s' is not a plain relative path", name);
    cr_expect_eq(archive_entry_mtime(e), SOURCE_DATE_EPOCH, "entry %s mtime %ld", name,
                 (long)archive_entry_mtime(e));
    cr_expect(!archive_entry_atime_is_set(e) && !archive_entry_ctime_is_set(e),
              "entry %s records atime/ctime", name);
    int agent_owned = strcmp(name, "workspace/") == 0 || strcmp(name, "home/agent/") == 0;
    cr_expect_eq(archive_entry_uid(e), agent_owned ? 65532 : 0, "entry %s uid %ld", name,
                 (long)archive_entry_uid(e));
    mode_t t = archive_entry_filetype(e);
    cr_expect(t == AE_IFREG || t == AE_IFDIR || t == AE_IFLNK, "entry %s has type %o", name, t);
    if (strcmp(name, "usr/bin/sh") == 0)
      saw_sh = strcmp(archive_entry_symlink(e) ? archive_entry_symlink(e) : "", "busybox") == 0;
  }
  archive_read_free(a);
  cr_assert_gt(n, 100, "only %d entries", n);
  cr_assert(saw_sh, "usr/bin/sh -> busybox (relative applet link) missing from the busybox layer");
  yajl_tree_free(manifest);
  free(p), free(layout), free(dir);
}

/* The image config carries the sandbox defaults: user 65532, /workspace. */
Test(images, python_config_has_default_user_cwd_env_and_cmd) {
  char *dir = image_dir_or_skip("python");
  char *layout = xasprintf("%s/layout", dir);
  yajl_val manifest = read_manifest(layout, NULL);
  char *cp = blob_path(layout, json_str(manifest, (const char *[]){"config", "digest", NULL}));
  yajl_val cfg = read_json(cp);
  cr_assert_str_eq(json_str(cfg, (const char *[]){"architecture", NULL}), "amd64");
  cr_assert_str_eq(json_str(cfg, (const char *[]){"os", NULL}), "linux");
  cr_assert_str_eq(json_str(cfg, (const char *[]){"config", "User", NULL}), "65532:65532");
  cr_assert_str_eq(json_str(cfg, (const char *[]){"config", "WorkingDir", NULL}), "/workspace");
  yajl_val cmd = yajl_tree_get(cfg, (const char *[]){"config", "Cmd", NULL}, yajl_t_array);
  cr_assert(cmd && YAJL_GET_ARRAY(cmd)->len == 1);
  cr_assert_str_eq(YAJL_GET_STRING(YAJL_GET_ARRAY(cmd)->values[0]), "python3");
  yajl_val env = yajl_tree_get(cfg, (const char *[]){"config", "Env", NULL}, yajl_t_array);
  cr_assert(env);
  int path = 0, lang = 0;
  for (size_t i = 0; i < YAJL_GET_ARRAY(env)->len; i++) {
    const char *kv = YAJL_GET_STRING(YAJL_GET_ARRAY(env)->values[i]);
    path |= strncmp(kv, "PATH=", 5) == 0;
    lang |= strcmp(kv, "LANG=C.UTF-8") == 0;
  }
  cr_assert(path && lang, "Env lacks PATH or LANG=C.UTF-8");
  yajl_val diff_ids = yajl_tree_get(cfg, (const char *[]){"rootfs", "diff_ids", NULL}, yajl_t_array);
  yajl_val layers = yajl_tree_get(manifest, (const char *[]){"layers", NULL}, yajl_t_array);
  cr_assert(diff_ids && layers && YAJL_GET_ARRAY(diff_ids)->len == YAJL_GET_ARRAY(layers)->len);
  yajl_tree_free(cfg), yajl_tree_free(manifest);
  free(cp), free(layout), free(dir);
}

/* Runs /usr/bin/python3 -c CODE chrooted into ROOT with an empty environment
 * (stderr discarded if quiet); returns its exit status. */
static int chroot_python(const char *root, const char *code, int quiet) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    char *argv[] = {"python3", "-c", (char *)code, NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", NULL};
    if (quiet) {
      int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (null < 0 || dup2(null, STDERR_FILENO) < 0) _exit(119);
    }
    if (chroot(root) != 0 || chdir("/") != 0) _exit(120);
    execve("/usr/bin/python3", argv, envp);
    _exit(121);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(images, python_rootfs_imports_sqlite3_and_ssl_with_ca_certificates, .timeout = 60) {
  char *dir = image_dir_or_skip("python");
  char *root = xasprintf("%s/rootfs", dir);
  int st = chroot_python(root,
      "import json, sqlite3, ssl, venv, asyncio, ctypes, decimal, lzma, bz2, zlib, uuid\n"
      "sqlite3.connect(':memory:').execute('select 1')\n"
      "assert ssl.create_default_context().cert_store_stats()['x509_ca'] > 100\n", 0);
  cr_assert_eq(st, 0, "python3 in %s could not import the standard library (status %d)", root, st);
  /* The check above can fail: a missing module is reported as failure. */
  cr_assert_neq(chroot_python(root, "import an_images_test_no_such_module", 1), 0);
  free(root), free(dir);
}

/* python-tests = the python image's layer, unchanged, plus one layer. */
Test(images, python_tests_reuses_the_python_layer_blob) {
  char *py = image_dir_or_skip("python");
  char *pt = image_dir_or_skip("python-tests");
  char *pl = xasprintf("%s/layout", py), *tl = xasprintf("%s/layout", pt);
  yajl_val pm = read_manifest(pl, NULL), tm = read_manifest(tl, NULL);
  yajl_val player = yajl_tree_get(pm, (const char *[]){"layers", NULL}, yajl_t_array);
  yajl_val tlayer = yajl_tree_get(tm, (const char *[]){"layers", NULL}, yajl_t_array);
  cr_assert(player && tlayer);
  cr_assert_eq(YAJL_GET_ARRAY(player)->len, 1);
  cr_assert_eq(YAJL_GET_ARRAY(tlayer)->len, 2);
  const char *dp = json_str(YAJL_GET_ARRAY(player)->values[0], (const char *[]){"digest", NULL});
  const char *dt = json_str(YAJL_GET_ARRAY(tlayer)->values[0], (const char *[]){"digest", NULL});
  cr_assert_str_eq(dp, dt, "python-tests layer 0 %s is not the python layer %s "
                   "(rebuild both with `make images`)", dt, dp);
  char *suite = xasprintf("%s/rootfs/usr/lib/python3.11/test/test_json/__init__.py", pt);
  cr_assert_eq(access(suite, R_OK), 0, "%s missing", suite);
  yajl_tree_free(pm), yajl_tree_free(tm);
  free(suite), free(pl), free(tl), free(py), free(pt);
}

/* Two build-all.sh runs racing on an empty cache: both succeed, one builds,
 * the other waits on the lock and reuses; one image directory remains. */
Test(images, racing_build_all_runs_build_once_and_both_succeed, .timeout = 300, .fini = repro_fini) {
  repro_cache[0] = xasprintf("/tmp/an-images-test-%d-race", getpid());
  char *shared_debs = xasprintf("%s/.debs", image_cache());
  char *debs_env = access(shared_debs, R_OK) == 0 ? xasprintf("AN_DEB_CACHE='%s'", shared_debs) : strdup("");
  char *out = NULL;
  int st = run_sh(&out,
      "b() { AN_IMAGE_CACHE='%s' %s '%s/rootfs-tools/build-all.sh' busybox 2>/dev/null; }; "
      "b > '%s.1' & b > '%s.2'; s2=$?; wait $!; s1=$?; cat '%s.1' '%s.2'; rm -f '%s.1' '%s.2'; "
      "[ $s1 = 0 ] && [ $s2 = 0 ]",
      repro_cache[0], debs_env, source_dir(), repro_cache[0], repro_cache[0], repro_cache[0],
      repro_cache[0], repro_cache[0], repro_cache[0]);
  cr_assert_eq(st, 0, "a racing build failed: %s", out);
  cr_assert(strstr(out, "busybox: built sha256:"), "no run built: %s", out);
  cr_assert(strstr(out, "busybox: reusing cached image"), "the other run did not reuse: %s", out);
  char *count = NULL;
  cr_assert_eq(run_sh(&count, "ls -d '%s'/.busybox.* | wc -l", repro_cache[0]), 0);
  cr_assert_eq(atoi(count), 1, "%s holds %s image directories", repro_cache[0], count);
  free(count), free(out), free(debs_env), free(shared_debs);
}
