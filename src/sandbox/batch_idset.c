/* sandbox/batch_idset.c — the set of job ids a batch has seen (uniqueness,
 * resume): open addressing over the first 16 bytes of each id's sha256, so
 * memory is 21 bytes a slot whatever the ids' length (agentnest/batch.h
 * "MEMORY"); a false match needs a 128-bit collision. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include "sandbox/batch_internal.h"
#include "util/sha256.h"

static void key_of(const char *id, unsigned char k[16]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int l = 0;
  if (EVP_Digest(id, strlen(id), md, &l, an_sha256_md(), NULL) != 1 || l < 16) {
    /* EVP cannot fail for sha256 in practice; fall back to the bytes */
    memset(md, 0, 16);
    strncpy((char *) md, id, 16);
  }
  memcpy(k, md, 16);
}

static size_t slot_of(const struct an_batch_idset *s, const unsigned char k[16]) {
  uint64_t h;
  memcpy(&h, k, sizeof h);
  size_t i = (size_t) (h & (s->cap - 1));
  while (s->used[i] && memcmp(s->keys[i], k, 16)) i = (i + 1) & (s->cap - 1);
  return i;
}

bool an_batch_idset_get(const struct an_batch_idset *s, const char *id, uint32_t *val) {
  if (!s->cap) return false;
  unsigned char k[16];
  key_of(id, k);
  size_t i = slot_of(s, k);
  if (!s->used[i]) return false;
  if (val) *val = s->vals[i];
  return true;
}

static int grow(struct an_batch_idset *s) {
  struct an_batch_idset t = {.cap = s->cap ? s->cap * 2 : 1024};
  t.keys = calloc(t.cap, sizeof *t.keys);
  t.vals = calloc(t.cap, sizeof *t.vals);
  t.used = calloc(t.cap, sizeof *t.used);
  if (!t.keys || !t.vals || !t.used) {
    an_batch_idset_free(&t);
    return -ENOMEM;
  }
  for (size_t i = 0; i < s->cap; i++)
    if (s->used[i]) {
      size_t j = slot_of(&t, s->keys[i]);
      memcpy(t.keys[j], s->keys[i], 16);
      t.vals[j] = s->vals[i];
      t.used[j] = true;
      t.n++;
    }
  an_batch_idset_free(s);
  *s = t;
  return 0;
}

int an_batch_idset_put(struct an_batch_idset *s, const char *id, uint32_t val) {
  if ((s->n + 1) * 2 > s->cap && grow(s) < 0) return -ENOMEM;
  unsigned char k[16];
  key_of(id, k);
  size_t i = slot_of(s, k);
  if (!s->used[i]) {
    memcpy(s->keys[i], k, 16);
    s->used[i] = true;
    s->n++;
  }
  s->vals[i] = val;
  return 0;
}

void an_batch_idset_free(struct an_batch_idset *s) {
  free(s->keys);
  free(s->vals);
  free(s->used);
  memset(s, 0, sizeof *s);
}
