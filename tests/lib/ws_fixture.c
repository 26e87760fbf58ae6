/* tests/lib/ws_fixture.c — see ws_fixture.h. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ws_fixture.h"
#include "rm_tree.h"
#include "util.h"

static void hex(const unsigned char *d, unsigned n, char *out) {
  for (unsigned i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
  out[2 * n] = 0;
}

void ws_buf_sha256(const void *buf, size_t len, char out[65]) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(buf, len, d, &n, EVP_sha256(), NULL);
  hex(d, n, out);
}

bool ws_file_sha256(const char *path, char out[65]) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  EVP_DigestInit_ex(c, EVP_sha256(), NULL);
  char buf[65536];
  ssize_t r;
  while ((r = read(fd, buf, sizeof buf)) > 0) EVP_DigestUpdate(c, buf, (size_t) r);
  close(fd);
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(c, d, &n);
  EVP_MD_CTX_free(c);
  hex(d, n, out);
  return r == 0;
}

void ws_write(const char *path, const char *content) {
  an_test_write_file(path, content, strlen(content), 0644);
}

/* Recursive digest; entries sorted for a stable result. */
static void digest_dir(EVP_MD_CTX *c, int dfd, const char *rel) {
  struct dirent **names = NULL;
  int dup_fd = dup(dfd);
  DIR *d = fdopendir(dup_fd);
  if (!d) return;
  int n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (n == cap) names = realloc(names, sizeof *names * (size_t) (cap = cap ? 2 * cap : 16));
    names[n] = malloc(sizeof *de);
    memcpy(names[n++], de, sizeof *de);
  }
  closedir(d);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (strcmp(names[i]->d_name, names[j]->d_name) > 0) {
        struct dirent *t = names[i]; names[i] = names[j]; names[j] = t;
      }
  for (int i = 0; i < n; i++) {
    const char *nm = names[i]->d_name;
    struct stat st;
    if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
    char line[PATH_MAX + 64];
    int w = snprintf(line, sizeof line, "%s/%s %o %lld\n", rel, nm, st.st_mode, (long long) st.st_size);
    EVP_DigestUpdate(c, line, (size_t) w);
    if (S_ISLNK(st.st_mode)) {
      char t[PATH_MAX];
      ssize_t k = readlinkat(dfd, nm, t, sizeof t);
      if (k > 0) EVP_DigestUpdate(c, t, (size_t) k);
    } else if (S_ISREG(st.st_mode)) {
      int fd = openat(dfd, nm, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      char buf[8192];
      ssize_t r;
      while (fd >= 0 && (r = read(fd, buf, sizeof buf)) > 0) EVP_DigestUpdate(c, buf, (size_t) r);
      if (fd >= 0) close(fd);
    } else if (S_ISDIR(st.st_mode)) {
      int sub = openat(dfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      char r2[PATH_MAX];
      snprintf(r2, sizeof r2, "%s/%s", rel, nm);
      if (sub >= 0) { digest_dir(c, sub, r2); close(sub); }
    }
    free(names[i]);
  }
  free(names);
}

void ws_tree_digest(const char *dir, char out[65]) {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  EVP_DigestInit_ex(c, EVP_sha256(), NULL);
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) { digest_dir(c, fd, "."); close(fd); }
  else EVP_DigestUpdate(c, "missing", 7);
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(c, d, &n);
  EVP_MD_CTX_free(c);
  hex(d, n, out);
}

bool ws_canary_unchanged(const struct ws_fixture *f) {
  char now[65];
  ws_tree_digest(f->canary, now);
  return strcmp(now, f->canary_digest) == 0;
}

static int count_in(int dfd, const char *name, const char *path, const char *exclude, int depth) {
  if (depth > 64) return 0;
  int dup_fd = dup(dfd);
  DIR *d = fdopendir(dup_fd);
  if (!d) return 0;
  int count = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", path, de->d_name);
    if (exclude && !strcmp(p, exclude)) continue;
    if (!strcmp(de->d_name, name)) count++;
    struct stat st;
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
      int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) { count += count_in(sub, name, p, exclude, depth + 1); close(sub); }
    }
  }
  closedir(d);
  return count;
}

int ws_count_named(const char *dir, const char *name, const char *exclude) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  int n = count_in(fd, name, dir, exclude, 0);
  close(fd);
  return n;
}

void ws_fixture_setup(struct ws_fixture *f) {
  memset(f, 0, sizeof *f);
  snprintf(f->root, sizeof f->root, "/tmp/an-wsfs-%d-XXXXXX", (int) getpid());
  cr_assert_not_null(mkdtemp(f->root), "mkdtemp");
  ws_path(f->ws, "%s/ws", f->root);
  ws_path(f->canary, "%s/CANARY", f->root);
  cr_assert_eq(mkdir(f->ws, 0755), 0);
  cr_assert_eq(mkdir(f->canary, 0755), 0);
  char p[PATH_MAX];
  ws_path(p, "%s/secret.txt", f->canary);
  ws_write(p, WS_CANARY_SECRET);
  ws_path(p, "%s/f", f->canary);
  ws_write(p, WS_CANARY_SECRET);
  ws_tree_digest(f->canary, f->canary_digest);
  f->wsfd = open(f->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  cr_assert_geq(f->wsfd, 0);
}

void ws_fixture_teardown(struct ws_fixture *f) {
  if (f->wsfd > 0) close(f->wsfd);
  f->wsfd = -1;
  if (f->root[0]) an_test_rm_tree(f->root);
}
