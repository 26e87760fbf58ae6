/* util/sha256.c — sha256 via libcrypto EVP, streaming and one-shot (see
 * util/sha256.h). */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include "util/safe_path.h"
#include "util/sha256.h"

const EVP_MD *an_sha256_md(void) {
  /* the first initialisation in the process decides; later calls only return */
  OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ADD_ALL_CIPHERS |
                      OPENSSL_INIT_NO_ADD_ALL_DIGESTS, NULL);
  return EVP_sha256();
}

struct an_sha256 {
  EVP_MD_CTX *ctx;
};

struct an_sha256 *an_sha256_new(void) {
  struct an_sha256 *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->ctx = EVP_MD_CTX_new();
  if (!h->ctx || EVP_DigestInit_ex(h->ctx, an_sha256_md(), NULL) != 1) {
    an_sha256_free(h);
    return NULL;
  }
  return h;
}

int an_sha256_update(struct an_sha256 *h, const void *buf, size_t len) {
  if (len && EVP_DigestUpdate(h->ctx, buf, len) != 1) return -EIO;
  return 0;
}

int an_sha256_finish_hex(struct an_sha256 *h, char out[AN_SHA256_HEX_LEN]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  int r = EVP_DigestFinal_ex(h->ctx, md, &mdlen) == 1 && mdlen == 32 ? 0 : -EIO;
  if (r == 0)
    an_hex_encode(md, mdlen, out);
  else
    out[0] = '\0';
  an_sha256_free(h);
  return r;
}

void an_sha256_free(struct an_sha256 *h) {
  if (!h) return;
  EVP_MD_CTX_free(h->ctx);
  free(h);
}

int an_sha256_hex(const void *data, size_t len, const char *what, char out[AN_SHA256_HEX_LEN],
                  an_error_t *err) {
  struct an_sha256 *h = an_sha256_new();
  if (!h) return an_error_set(err, ENOMEM, "sha256 of %s", what);
  if (an_sha256_update(h, data, len) < 0) {
    an_sha256_free(h);
    return an_error_set(err, EIO, "sha256 of %s", what);
  }
  if (an_sha256_finish_hex(h, out) < 0) return an_error_set(err, EIO, "sha256 of %s", what);
  return 0;
}
