/* util/fdcopy.c — capped, hashing fd copy (see util/fdcopy.h). */
#include <errno.h>
#include <openssl/evp.h>
#include <unistd.h>
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/safe_path.h"

static void md_ctx_freep(EVP_MD_CTX **c) { if (*c) EVP_MD_CTX_free(*c); }

int an_write_all(int fd, const void *buf, size_t len, const char *what, an_error_t *err) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "write %s", what);
    }
    p += n;
    len -= (size_t) n;
  }
  return 0;
}

int an_copy_fd_capped(int in_fd, int out_fd, uint64_t max_bytes, const char *what,
                      uint64_t *copied, char *sha256_hex, an_error_t *err) {
  __attribute__((cleanup(md_ctx_freep))) EVP_MD_CTX *md = NULL;
  if (sha256_hex) {
    md = EVP_MD_CTX_new();
    if (!md || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
      return an_error_set(err, ENOMEM, "sha256 init for %s", what);
  }
  cleanup_free char *buf = malloc(1 << 16);
  if (!buf) return an_error_set(err, ENOMEM, "copy %s", what);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(in_fd, buf, 1 << 16);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "read %s", what);
    }
    if (n == 0) break;
    if (total + (uint64_t) n > max_bytes)
      return an_error_set(err, EFBIG, "%s: file too large (more than %llu bytes)", what,
                          (unsigned long long) max_bytes);
    total += (uint64_t) n;
    if (md && EVP_DigestUpdate(md, buf, (size_t) n) != 1)
      return an_error_set(err, EIO, "sha256 of %s", what);
    if (out_fd >= 0) {
      int r = an_write_all(out_fd, buf, (size_t) n, what, err);
      if (r < 0) return r;
    }
  }
  if (md) {
    unsigned char dig[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (EVP_DigestFinal_ex(md, dig, &dlen) != 1) return an_error_set(err, EIO, "sha256 of %s", what);
    an_hex_encode(dig, dlen, sha256_hex);
  }
  if (copied) *copied = total;
  return 0;
}

int an_sha256_hex(const void *data, size_t len, char *out, an_error_t *err) {
  unsigned char dig[EVP_MAX_MD_SIZE];
  unsigned int dlen = 0;
  if (EVP_Digest(data, len, dig, &dlen, EVP_sha256(), NULL) != 1)
    return an_error_set(err, EIO, "sha256");
  an_hex_encode(dig, dlen, out);
  return 0;
}
