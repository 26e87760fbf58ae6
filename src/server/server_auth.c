/* server/server_auth.c — bearer tokens of `agentnest serve`: the tokens
 * file and the constant-time lookup (server.h).  A token is kept only as
 * its SHA-256; the lookup hashes the presented token and compares it with
 * every entry by CRYPTO_memcmp, so neither its content nor its length
 * changes the time taken before the match is chosen. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include "server_internal.h"
#include "util/sha256.h"

static int sha256(const char *s, size_t n, unsigned char out[32]) {
  unsigned int len = 0;
  return EVP_Digest(s, n, out, &len, an_sha256_md(), NULL) == 1 && len == 32 ? 0 : -EIO;
}

int srv_tokens_load(struct srv *s, const char *path, an_error_t *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return an_error_set(err, errno, "--tokens %s", path);
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return an_error_set(err, EINVAL, "--tokens %s: not a regular file", path);
  }
  if (st.st_mode & 077) {
    close(fd);
    return an_error_set(err, EACCES, "--tokens %s: mode %04o lets others read or change it (chmod 600)",
                        path, (unsigned) (st.st_mode & 07777));
  }
  FILE *f = fdopen(fd, "r");
  if (!f) { close(fd); return an_error_set(err, errno, "--tokens %s", path); }
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  unsigned lineno = 0;
  int r = 0;
  while (r >= 0 && (n = getline(&line, &cap, f)) >= 0) {
    lineno++;
    char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
    if (!tok || tok[0] == '#') continue;
    char *name = strtok_r(NULL, " \t\r\n", &save);
    if (strlen(tok) < 16 || !name) {
      /* never echo the line: it holds a token */
      r = an_error_set(err, EINVAL, "--tokens %s:%u: expected \"TOKEN NAME [revoked] [max-sandboxes=N] [max-rate=N/s]\" "
                       "with a TOKEN of at least 16 characters", path, lineno);
      break;
    }
    struct srv_token t = {0};
    for (char *w; (w = strtok_r(NULL, " \t\r\n", &save));) {
      if (!strcmp(w, "revoked")) t.revoked = true;
      else if (!strncmp(w, "max-sandboxes=", 14)) t.max_sandboxes = strtoul(w + 14, NULL, 10);
      else if (!strncmp(w, "max-rate=", 9)) {
        char *end = NULL;
        unsigned long v = strtoul(w + 9, &end, 10);
        if (end == w + 9 || strcmp(end, "/s") || !v || v > 1000000) {
          r = an_error_set(err, EINVAL, "--tokens %s:%u: \"%.64s\": expected max-rate=N/s with N from 1 to 1000000",
                           path, lineno, w);
          break;
        }
        t.max_rate = (unsigned) v;
        t.bucket = (double) v;
      }
      else { r = an_error_set(err, EINVAL, "--tokens %s:%u: unknown word \"%.64s\"", path, lineno, w); break; }
    }
    if (r < 0) break;
    /* a name is an identity (its snapshot directory, the log): two tokens that are not
     * revoked under one name would share snapshots while owning their own sandboxes */
    if (sha256(tok, strlen(tok), t.sha256) < 0) { r = an_error_set(err, EIO, "--tokens %s:%u: SHA-256", path, lineno); break; }
    for (size_t i = 0; r >= 0 && i < s->ntokens; i++) {
      if (!CRYPTO_memcmp(t.sha256, s->tokens[i].sha256, 32))
        r = an_error_set(err, EINVAL, "--tokens %s:%u: the same TOKEN as an earlier line's", path, lineno);
      else if (!t.revoked && !s->tokens[i].revoked && !strcmp(name, s->tokens[i].name))
        r = an_error_set(err, EINVAL, "--tokens %s:%u: name \"%.64s\" is an earlier token's that is not revoked "
                         "(a name is one client: its snapshots, its log lines)", path, lineno, name);
    }
    if (r < 0) break;
    struct srv_token *nt = realloc(s->tokens, (s->ntokens + 1) * sizeof *nt);
    if (!nt || !(t.name = strdup(name))) {
      free(nt ? NULL : t.name);
      if (nt) s->tokens = nt;
      r = an_error_set(err, ENOMEM, "--tokens %s", path);
      break;
    }
    s->tokens = nt;
    s->tokens[s->ntokens++] = t;
    OPENSSL_cleanse(line, (size_t) n);
  }
  if (line) OPENSSL_cleanse(line, cap);
  free(line);
  fclose(f);
  if (r >= 0 && !s->ntokens) r = an_error_set(err, EINVAL, "--tokens %s: no token", path);
  return r;
}

unsigned srv_rate_take(struct srv *s, long t) {
  struct srv_token *k = &s->tokens[t];
  if (!k->max_rate) return 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t now = (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
  unsigned wait = 0;
  pthread_mutex_lock(&s->mu);
  if (k->bucket_ms) k->bucket += (double) (now - k->bucket_ms) * k->max_rate / 1000.0;
  if (k->bucket > k->max_rate) k->bucket = k->max_rate;
  k->bucket_ms = now;
  if (k->bucket >= 1.0) k->bucket -= 1.0;
  else wait = (unsigned) ((1.0 - k->bucket) / k->max_rate) + 1;
  pthread_mutex_unlock(&s->mu);
  return wait;
}

void srv_tokens_free(struct srv *s) {
  for (size_t i = 0; i < s->ntokens; i++) free(s->tokens[i].name);
  free(s->tokens);
  s->tokens = NULL;
  s->ntokens = 0;
}

long srv_token_find(const struct srv *s, const char *authorization) {
  if (!authorization || strncasecmp(authorization, "Bearer ", 7)) return -1;
  const char *tok = authorization + 7;
  while (*tok == ' ') tok++;
  unsigned char h[32];
  if (!*tok || sha256(tok, strlen(tok), h) < 0) return -1;
  long found = -1;
  for (size_t i = 0; i < s->ntokens; i++) {
    /* every entry compared; the branch depends only on the comparison's result */
    int diff = CRYPTO_memcmp(h, s->tokens[i].sha256, 32);
    found = diff == 0 ? (long) i : found;
  }
  OPENSSL_cleanse(h, sizeof h);
  return found;
}
