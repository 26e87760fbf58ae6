/* util/fdcopy.h — capped, hashing fd-to-fd copy and full writes (internal).
 * Used by the sandbox file, artifact and snapshot code; sha256 comes from
 * util/sha256.h. */
#ifndef AN_UTIL_FDCOPY_H
#define AN_UTIL_FDCOPY_H

#include <stddef.h>
#include <stdint.h>
#include "agentnest/error.h"
#include "util/sha256.h"   /* AN_SHA256_HEX_LEN */

/* write(2) all `len` bytes of `buf` to `fd`, retrying on EINTR and short
 * writes.  Returns 0 or -errno (err names `what`). */
int an_write_all(int fd, const void *buf, size_t len, const char *what, an_error_t *err);

/* Read `in_fd` to EOF, writing every byte to `out_fd` (skip writing when
 * out_fd < 0) and hashing it into `sha256_hex` (lowercase hex, skipped when
 * NULL).  Reads at most max_bytes: if the source has more, fails with
 * -EFBIG "<what>: file too large (more than N bytes)".  *copied (may be NULL)
 * receives the number of bytes copied.  Returns 0 or a negative errno. */
int an_copy_fd_capped(int in_fd, int out_fd, uint64_t max_bytes, const char *what,
                      uint64_t *copied, char *sha256_hex, an_error_t *err);

#endif
