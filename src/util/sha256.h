/* util/sha256.h — sha256 over libcrypto's EVP interface (EVP_DigestInit_ex(3)),
 * streaming and one-shot, with lowercase hex output (internal).
 * The one place the library computes sha256: the image layer (blob digests,
 * OCI image-spec descriptor.md "Digests"), file copies and artifacts
 * (util/fdcopy.c) use it.  Digest *strings* ("sha256:<hex>") and their
 * validation live with their users (image/digest.c). */
#ifndef AN_UTIL_SHA256_H
#define AN_UTIL_SHA256_H

#include <stddef.h>
#include "agentnest/error.h"
#include "util/sha256.h"

/* Hex length of a sha256 digest plus NUL. */
#define AN_SHA256_HEX_LEN 65

struct an_sha256;
struct evp_md_st;

/* an_sha256_md() after OPENSSL_init_crypto(3) without the configuration file
 * and without registering every cipher and digest: OpenSSL's default
 * initialisation (parsing openssl.cnf, adding all algorithms) cost 0.6 ms
 * of each sandbox create that hashed one seccomp profile.  Every sha256 of
 * the library takes its EVP_MD from here.  OpenSSL's own state; thread-safe. */
const struct evp_md_st *an_sha256_md(void);

/* A new streaming context (caller owns it: an_sha256_finish_hex or
 * an_sha256_free).  NULL on allocation or EVP initialisation failure. */
struct an_sha256 *an_sha256_new(void);

/* Hash `len` more bytes.  Returns 0, or -EIO when EVP_DigestUpdate fails. */
int an_sha256_update(struct an_sha256 *h, const void *buf, size_t len);

/* Finish into out[AN_SHA256_HEX_LEN] (64 lowercase hex digits + NUL) and
 * free h.  Returns 0, or -EIO when EVP_DigestFinal_ex fails (out is then
 * the empty string). */
int an_sha256_finish_hex(struct an_sha256 *h, char out[AN_SHA256_HEX_LEN]);

/* Free an unfinished context; NULL is allowed. */
void an_sha256_free(struct an_sha256 *h);

/* sha256 of `len` bytes of `data` as lowercase hex into out[AN_SHA256_HEX_LEN].
 * Returns 0, or -ENOMEM / -EIO (err: "sha256 of <what>"). */
int an_sha256_hex(const void *data, size_t len, const char *what, char out[AN_SHA256_HEX_LEN],
                  an_error_t *err);

#endif
