/* tests/fuzz/sni_fuzz.c — libFuzzer harness for the hand-written TLS
 * ClientHello SNI and HTTP/1.x Host parsers (net/sni.h), which read bytes a
 * sandbox sends.
 *
 * Properties checked on every input, for both parsers: no crash, overread
 * or sanitizer report; the result is one of the four documented values; a
 * FOUND name is a valid, lower-case host name that fits the buffer, and
 * the name buffer is "" otherwise; a decision other than MORE is final —
 * the same input with bytes appended gives the same result and name (a
 * proxy that reads more can never flip a refusal into a name); a smaller
 * buffer never yields a longer name.  Built and run by
 * tests/fuzz/run-fuzz.sh (`make fuzz`); seeds in tests/fuzz/corpus/sni/
 * include real ClientHellos from `openssl s_client -servername` and curl.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/sni.h"

typedef int (*parse_fn)(const uint8_t *, size_t, char *, size_t);

static int http_parse(const uint8_t *b, size_t n, char *name, size_t cap) {
  uint16_t port = 0;
  return an_http_host_parse(b, n, name, cap, &port);
}

static void check(parse_fn parse, const uint8_t *data, size_t size, const char *what) {
  char name[AN_NET_NAME_BUF];
  memset(name, 'X', sizeof name);
  int r = parse(data, size, name, sizeof name);
  if (r < AN_SNI_NONE || r > AN_SNI_FOUND) { fprintf(stderr, "%s: result %d\n", what, r); abort(); }
  if (r == AN_SNI_FOUND) {
    size_t len = strnlen(name, sizeof name);
    if (len == sizeof name || !an_net_host_name_valid(name, len)) {
      fprintf(stderr, "%s: invalid name returned\n", what); abort();
    }
    for (size_t i = 0; i < len; i++)
      if (name[i] >= 'A' && name[i] <= 'Z') { fprintf(stderr, "%s: upper case in %s\n", what, name); abort(); }
  } else if (name[0] != '\0') {
    fprintf(stderr, "%s: name written on result %d\n", what, r); abort();
  }
  /* Finality: append bytes, expect the same verdict. */
  if (r != AN_SNI_MORE) {
    uint8_t *more = malloc(size + 7);
    if (!more) abort();
    memcpy(more, data, size);
    memcpy(more + size, "\r\n\r\n\x16\x03\x01", 7);
    char again[AN_NET_NAME_BUF];
    int r2 = parse(more, size + 7, again, sizeof again);
    free(more);
    if (r2 != r || (r == AN_SNI_FOUND && strcmp(name, again))) {
      fprintf(stderr, "%s: %d then %d after appending bytes\n", what, r, r2); abort();
    }
  }
  /* A small buffer: never more than fits. */
  char small[9];
  int rs = parse(data, size, small, sizeof small);
  if (rs == AN_SNI_FOUND && (strlen(small) >= sizeof small || r != AN_SNI_FOUND || strcmp(small, name))) {
    fprintf(stderr, "%s: small buffer gave %s\n", what, small); abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check(an_tls_sni_parse, data, size, "tls");
  check(http_parse, data, size, "http");
  return 0;
}
