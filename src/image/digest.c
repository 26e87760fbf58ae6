/* image/digest.c — digest strings of blobs (OCI image-spec descriptor.md
 * "Digests"): "sha256:<hex>" over util/sha256.h, and their validation.
 * Only sha256 is supported; other algorithms are refused (fail closed). */
#include <errno.h>
#include <string.h>
#include "image/image_internal.h"

/* "sha256:" + hex; the hashing itself is util/sha256.c. */
int an_digest_finish(struct an_sha256 *h, char out[AN_DIGEST_SIZE]) {
  memcpy(out, "sha256:", 7);
  return an_sha256_finish_hex(h, out + 7);
}

int an_digest_buffer(const void *buf, size_t len, const char *what, char out[AN_DIGEST_SIZE],
                     an_error_t *err) {
  memcpy(out, "sha256:", 7);
  return an_sha256_hex(buf, len, what, out + 7, err);
}

int an_digest_check(const char *digest, char *hex, an_error_t *err) {
  if (!digest) return an_error_set(err, EINVAL, "missing digest");
  const char *colon = strchr(digest, ':');
  if (!colon) return an_error_set(err, EINVAL, "digest \"%s\": not ALGORITHM:HEX", digest);
  if ((size_t) (colon - digest) != 6 || strncmp(digest, "sha256", 6))
    return an_error_set(err, ENOTSUP, "digest \"%s\": only sha256 is supported", digest);
  const char *h = colon + 1;
  size_t n = strlen(h);
  if (n != 64 || strspn(h, "0123456789abcdef") != 64)
    return an_error_set(err, EINVAL, "digest \"%s\": not 64 lowercase hex digits", digest);
  if (hex) memcpy(hex, h, 65);
  return 0;
}
