/* net/sni.c — TLS ClientHello SNI and HTTP/1.x Host parsers (see net/sni.h).
 * Stub: every input is refused until the parsers land. */
#include <string.h>
#include "net/sni.h"

bool an_net_host_name_valid(const char *s, size_t len) { (void) s; (void) len; return false; }

int an_tls_sni_parse(const uint8_t *buf, size_t len, char *name, size_t cap) {
  (void) buf; (void) len;
  if (cap) name[0] = '\0';
  return AN_SNI_BAD;
}

int an_http_host_parse(const uint8_t *buf, size_t len, char *name, size_t cap, uint16_t *port) {
  (void) buf; (void) len;
  if (cap) name[0] = '\0';
  if (port) *port = 0;
  return AN_SNI_BAD;
}
