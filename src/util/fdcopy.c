/* util/fdcopy.c — capped, hashing fd copy (see util/fdcopy.h). */
#include <errno.h>
#include <unistd.h>
#include "util/cleanup.h"
#include "util/fdcopy.h"

static void sha256_freep(struct an_sha256 **h) { an_sha256_free(*h); }

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
  __attribute__((cleanup(sha256_freep))) struct an_sha256 *md = NULL;
  if (sha256_hex && !(md = an_sha256_new()))
    return an_error_set(err, ENOMEM, "sha256 init for %s", what);
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
    if (md && an_sha256_update(md, buf, (size_t) n) < 0)
      return an_error_set(err, EIO, "sha256 of %s", what);
    if (out_fd >= 0) {
      int r = an_write_all(out_fd, buf, (size_t) n, what, err);
      if (r < 0) return r;
    }
  }
  if (md && an_sha256_finish_hex(an_steal(&md), sha256_hex) < 0)
    return an_error_set(err, EIO, "sha256 of %s", what);
  if (copied) *copied = total;
  return 0;
}
