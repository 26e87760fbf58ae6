/* image/digest.c — sha256 digests of blobs (OCI image-spec descriptor.md
 * "Digests"), streaming, via libcrypto's EVP interface.  Only sha256 is
 * supported; other algorithms are refused (fail closed). */
#include <errno.h>
#include <string.h>
#include <openssl/evp.h>
#include "image/image_internal.h"

struct an_sha256 {
  EVP_MD_CTX *ctx;
};

struct an_sha256 *an_sha256_new(void) {
  struct an_sha256 *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->ctx = EVP_MD_CTX_new();
  if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
    an_sha256_free(h);
    return NULL;
  }
  return h;
}

void an_sha256_update(struct an_sha256 *h, const void *buf, size_t len) {
  if (len) EVP_DigestUpdate(h->ctx, buf, len);
}

void an_sha256_finish(struct an_sha256 *h, char out[AN_DIGEST_SIZE]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  static const char hexd[] = "0123456789abcdef";
  EVP_DigestFinal_ex(h->ctx, md, &mdlen);
  memcpy(out, "sha256:", 7);
  for (unsigned i = 0; i < 32; i++) {
    out[7 + 2 * i] = hexd[md[i] >> 4];
    out[8 + 2 * i] = hexd[md[i] & 15];
  }
  out[71] = '\0';
  an_sha256_free(h);
}

void an_sha256_free(struct an_sha256 *h) {
  if (!h) return;
  EVP_MD_CTX_free(h->ctx);
  free(h);
}

int an_sha256_buffer(const void *buf, size_t len, char out[AN_DIGEST_SIZE]) {
  struct an_sha256 *h = an_sha256_new();
  if (!h) return -ENOMEM;
  an_sha256_update(h, buf, len);
  an_sha256_finish(h, out);
  return 0;
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
