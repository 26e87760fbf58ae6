/* Unit tests for net/sni.h: the TLS ClientHello SNI and HTTP/1.x Host
 * parsers the transparent proxy uses to check ports 443/80 by name.
 * tests/data/sni/ holds real ClientHellos captured from
 * `openssl s_client -servername` and curl (see tests/fuzz/sni_fuzz.c). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/sni.h"
#include "util.h"

static uint8_t *load(const char *file, size_t *len) {
  const char *src = getenv("AN_TEST_SRC");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/sni/%s", src && *src ? src : ".", file);
  uint8_t *b = (uint8_t *) an_test_read_file(path, len);
  cr_assert_not_null(b, "read %s", path);
  return b;
}

static int sni(const uint8_t *b, size_t n, char *name) {
  return an_tls_sni_parse(b, n, name, AN_NET_NAME_BUF);
}

/* ---- a ClientHello builder for the malformed cases ---- */
struct msg { uint8_t b[70000]; size_t n; };
static void p8(struct msg *m, unsigned v) { m->b[m->n++] = (uint8_t) v; }
static void p16(struct msg *m, unsigned v) { p8(m, v >> 8); p8(m, v & 0xff); }
static void pn(struct msg *m, const void *d, size_t n) { memcpy(m->b + m->n, d, n); m->n += n; }

/* An extension carrying server_name with the given host names. */
static void ext_sni(struct msg *e, const char *const *hosts, size_t n) {
  size_t list = 0;
  for (size_t i = 0; i < n; i++) list += 3 + strlen(hosts[i]);
  p16(e, 0); p16(e, (unsigned) list + 2); p16(e, (unsigned) list);
  for (size_t i = 0; i < n; i++) { p8(e, 0); p16(e, (unsigned) strlen(hosts[i])); pn(e, hosts[i], strlen(hosts[i])); }
}
static void ext_raw(struct msg *e, unsigned type, size_t len) {
  p16(e, type); p16(e, (unsigned) len);
  for (size_t i = 0; i < len; i++) p8(e, 0x42);
}

/* Wrap extensions into a ClientHello handshake message, then into TLS
 * records of at most `frag` bytes each. */
static void hello(struct msg *out, const struct msg *ext, size_t frag) {
  static struct msg hs;
  hs.n = 0;
  p8(&hs, 1); p8(&hs, 0); p16(&hs, 0);           /* type, length (patched) */
  p16(&hs, 0x0303);
  for (int i = 0; i < 32; i++) p8(&hs, (unsigned) i);
  p8(&hs, 0);                                    /* session id */
  p16(&hs, 4); p16(&hs, 0x1301); p16(&hs, 0x0a0a); /* cipher suites incl. GREASE */
  p8(&hs, 1); p8(&hs, 0);                        /* compression */
  if (ext) { p16(&hs, (unsigned) ext->n); pn(&hs, ext->b, ext->n); }
  size_t body = hs.n - 4;
  hs.b[1] = (uint8_t) (body >> 16); hs.b[2] = (uint8_t) (body >> 8); hs.b[3] = (uint8_t) body;
  out->n = 0;
  for (size_t off = 0; off < hs.n; off += frag) {
    size_t k = hs.n - off < frag ? hs.n - off : frag;
    p8(out, 22); p16(out, 0x0301); p16(out, (unsigned) k); pn(out, hs.b + off, k);
  }
}

static int hello_with(const char *const *hosts, size_t n, char *name) {
  static struct msg e, m;
  e.n = 0;
  ext_raw(&e, 0x1a1a, 0);                        /* GREASE, empty */
  ext_sni(&e, hosts, n);
  ext_raw(&e, 0x002b, 3);                        /* supported_versions */
  hello(&m, &e, 16384);
  return sni(m.b, m.n, name);
}

Test(sni, real_openssl_client_hello_gives_its_servername) {
  size_t n; char name[AN_NET_NAME_BUF];
  uint8_t *b = load("openssl-s_client-tls13.bin", &n);
  cr_assert_eq(sni(b, n, name), AN_SNI_FOUND);
  cr_assert_str_eq(name, "allowed.example");
  free(b);
  b = load("openssl-s_client-tls12.bin", &n);
  cr_assert_eq(sni(b, n, name), AN_SNI_FOUND);
  cr_assert_str_eq(name, "www.allowed.example", "lower-cased: %s", name);
  free(b);
  b = load("curl-https.bin", &n);
  cr_assert_eq(sni(b, n, name), AN_SNI_FOUND);
  cr_assert_str_eq(name, "pkg.example");
  free(b);
}

Test(sni, real_client_hello_without_servername_is_none) {
  size_t n; char name[AN_NET_NAME_BUF];
  uint8_t *b = load("openssl-nosni.bin", &n);
  cr_assert_eq(sni(b, n, name), AN_SNI_NONE);
  cr_assert_str_eq(name, "");
  free(b);
}

Test(sni, every_prefix_of_a_hello_asks_for_more) {
  size_t n; char name[AN_NET_NAME_BUF];
  uint8_t *b = load("openssl-s_client-tls13.bin", &n);
  for (size_t k = 0; k < n; k++)
    cr_assert_eq(sni(b, k, name), AN_SNI_MORE, "prefix of %zu bytes", k);
  free(b);
}

Test(sni, hello_fragmented_over_many_records_is_reassembled) {
  static struct msg e, m;
  const char *h[] = {"split.example"};
  e.n = 0; ext_sni(&e, h, 1); ext_raw(&e, 0x0033, 300);
  char name[AN_NET_NAME_BUF];
  for (size_t frag = 1; frag < 40; frag += 3) {
    hello(&m, &e, frag);
    cr_assert_eq(sni(m.b, m.n, name), AN_SNI_FOUND, "fragments of %zu bytes", frag);
    cr_assert_str_eq(name, "split.example");
    cr_assert_eq(sni(m.b, m.n - 1, name), AN_SNI_MORE);
  }
}

Test(sni, grease_and_unknown_extensions_are_skipped) {
  const char *h[] = {"a-b.c_d.example"};
  char name[AN_NET_NAME_BUF];
  cr_assert_eq(hello_with(h, 1, name), AN_SNI_FOUND);
  cr_assert_str_eq(name, "a-b.c_d.example");
}

Test(sni, hello_without_extensions_is_none) {
  static struct msg m;
  char name[AN_NET_NAME_BUF];
  hello(&m, NULL, 16384);
  cr_assert_eq(sni(m.b, m.n, name), AN_SNI_NONE);
}

Test(sni, two_host_names_are_refused) {
  const char *h[] = {"allowed.example", "other.example"};
  char name[AN_NET_NAME_BUF];
  cr_assert_eq(hello_with(h, 2, name), AN_SNI_BAD);
}

Test(sni, duplicate_extension_is_refused) {
  static struct msg e, m;
  const char *a[] = {"allowed.example"}, *b[] = {"other.example"};
  e.n = 0; ext_sni(&e, a, 1); ext_sni(&e, b, 1);
  hello(&m, &e, 16384);
  char name[AN_NET_NAME_BUF];
  cr_assert_eq(sni(m.b, m.n, name), AN_SNI_BAD);
  e.n = 0; ext_raw(&e, 0x0a0a, 1); ext_sni(&e, a, 1); ext_raw(&e, 0x0a0a, 2);
  hello(&m, &e, 16384);
  cr_assert_eq(sni(m.b, m.n, name), AN_SNI_BAD, "GREASE twice");
}

Test(sni, invalid_host_names_are_refused) {
  const char *bad[] = {"192.0.2.1", "allowed.example.", "-a.example", "a-.example", "a..example",
                       "a b.example", "a%2e.example", "", "x.123",
                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.example"};
  char name[AN_NET_NAME_BUF];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(hello_with(&bad[i], 1, name), AN_SNI_BAD, "host name \"%s\"", bad[i]);
  char longname[300];
  memset(longname, 'a', sizeof longname);
  for (int i = 50; i < 300; i += 50) longname[i] = '.';
  longname[254] = '\0';                                   /* 254 characters */
  const char *l = longname;
  cr_assert_eq(hello_with(&l, 1, name), AN_SNI_BAD, "254 characters");
  longname[253] = '\0';
  cr_assert_eq(hello_with(&l, 1, name), AN_SNI_FOUND, "253 characters");
  cr_assert_eq(an_tls_sni_parse((const uint8_t *) "", 0, name, 0), AN_SNI_MORE);
}

Test(sni, name_longer_than_the_callers_buffer_is_refused) {
  const char *h[] = {"allowed.example"};
  static struct msg e, m;
  e.n = 0; ext_sni(&e, h, 1); hello(&m, &e, 16384);
  char name[16];
  cr_assert_eq(an_tls_sni_parse(m.b, m.n, name, 15), AN_SNI_BAD);
  cr_assert_eq(an_tls_sni_parse(m.b, m.n, name, 16), AN_SNI_FOUND);
}

Test(sni, every_length_overrun_is_refused) {
  /* Grow each length field of a valid hello by one byte: the result must
   * never be FOUND with a name (lengths beyond their enclosure are caught). */
  static struct msg e, m;
  const char *h[] = {"allowed.example"};
  e.n = 0; ext_sni(&e, h, 1); hello(&m, &e, 16384);
  char name[AN_NET_NAME_BUF];
  cr_assert_eq(sni(m.b, m.n, name), AN_SNI_FOUND);
  /* offsets in the record: 3 record len, 6..8 hs len, 43 session id len,
   * 44 cs len, 50 comp len, 52 ext block len, 56 ext len, 58 list len, 61 host len */
  size_t offs[] = {44, 50, 52, 56, 58, 61};
  for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
    static struct msg c;
    size_t low = offs[i] == 50 ? 50 : offs[i] + 1;       /* comp len is one byte */
    memcpy(&c, &m, sizeof m);
    c.b[low]++;
    cr_assert_eq(sni(c.b, c.n, name), AN_SNI_BAD, "length at offset %zu grown", offs[i]);
    memcpy(&c, &m, sizeof m);
    c.b[low]--;
    cr_assert_eq(sni(c.b, c.n, name), AN_SNI_BAD, "length at offset %zu shrunk", offs[i]);
  }
  static struct msg c;
  memcpy(&c, &m, sizeof m); c.b[43] = 33;
  cr_assert_neq(sni(c.b, c.n, name), AN_SNI_FOUND, "session id of 33 bytes");
  memcpy(&c, &m, sizeof m); c.b[8]--;                     /* handshake shorter than its record */
  cr_assert_eq(sni(c.b, c.n, name), AN_SNI_BAD, "trailing handshake bytes");
}

Test(sni, not_a_client_hello_is_refused_at_once) {
  char name[AN_NET_NAME_BUF];
  cr_assert_eq(sni((const uint8_t *) "G", 1, name), AN_SNI_BAD, "HTTP");
  cr_assert_eq(sni((const uint8_t *) "\x17\x03\x03\x00\x10", 5, name), AN_SNI_BAD, "application data");
  cr_assert_eq(sni((const uint8_t *) "\x16\x02", 2, name), AN_SNI_BAD, "SSL 2");
  cr_assert_eq(sni((const uint8_t *) "\x16\x03\x01\x00\x00", 5, name), AN_SNI_BAD, "empty record");
  cr_assert_eq(sni((const uint8_t *) "\x16\x03\x01\x40\x01", 5, name), AN_SNI_BAD, "record over 2^14");
  cr_assert_eq(sni((const uint8_t *) "\x16\x03\x01\x00\x40\x02", 6, name), AN_SNI_BAD, "ServerHello");
  cr_assert_eq(sni((const uint8_t *) "\x16\x03\x01\x00\x40\x01", 6, name), AN_SNI_MORE);
}

/* ---- HTTP ---- */

static int host(const char *req, char *name, uint16_t *port) {
  return an_http_host_parse((const uint8_t *) req, strlen(req), name, AN_NET_NAME_BUF, port);
}

Test(http_host, host_field_gives_the_name_without_port) {
  char name[AN_NET_NAME_BUF]; uint16_t port = 1;
  cr_assert_eq(host("GET / HTTP/1.1\r\nUser-Agent: x\r\nHost: Allowed.EXAMPLE:8080\r\n\r\n", name, &port), AN_SNI_FOUND);
  cr_assert_str_eq(name, "allowed.example");
  cr_assert_eq(port, 8080);
  cr_assert_eq(host("GET /x?y HTTP/1.0\r\nhOsT:\t allowed.example. \r\n\r\nbody", name, &port), AN_SNI_FOUND);
  cr_assert_str_eq(name, "allowed.example");
  cr_assert_eq(port, 0);
  cr_assert_eq(host("OPTIONS * HTTP/1.1\r\nHost: a.example\r\n\r\n", name, NULL), AN_SNI_FOUND);
}

Test(http_host, absolute_form_target_gives_its_host) {
  char name[AN_NET_NAME_BUF]; uint16_t port = 0;
  cr_assert_eq(host("GET http://pkg.example:81/simple/ HTTP/1.1\r\n\r\n", name, &port), AN_SNI_FOUND);
  cr_assert_str_eq(name, "pkg.example");
  cr_assert_eq(port, 81);
  cr_assert_eq(host("GET HTTP://PKG.example/ HTTP/1.1\r\nHost: pkg.example\r\n\r\n", name, &port), AN_SNI_FOUND);
  cr_assert_str_eq(name, "pkg.example");
  cr_assert_eq(host("GET http://pkg.example?q HTTP/1.1\r\nHost: pkg.example\r\n\r\n", name, &port), AN_SNI_FOUND);
}

Test(http_host, ambiguous_requests_are_refused) {
  char name[AN_NET_NAME_BUF];
  const char *bad[] = {
    "GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",        /* two Host */
    "GET / HTTP/1.1\r\nHost: a.example\r\nhost: a.example\r\n\r\n",
    "GET http://a.example/ HTTP/1.1\r\nHost: b.example\r\n\r\n",           /* URI vs Host */
    "GET http://a.example:81/ HTTP/1.1\r\nHost: a.example\r\n\r\n",
    "GET / HTTP/1.1\nHost: a.example\r\n\r\n",                              /* bare LF */
    "GET / HTTP/1.1\r\nX: a\rb\r\nHost: a.example\r\n\r\n",                 /* bare CR */
    "GET / HTTP/1.1\r\nX: a\r\n b\r\nHost: a.example\r\n\r\n",              /* obs-fold */
    "GET / HTTP/1.1\r\nHost : a.example\r\n\r\n",                           /* space before colon */
    "GET / HTTP/1.1\r\nHost: user@a.example\r\n\r\n",                       /* userinfo */
    "GET http://user@a.example/ HTTP/1.1\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: \r\n\r\n",                                     /* empty Host */
    "GET / HTTP/1.1\r\nHost: a..example\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: %61.example\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a.example:99999\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a.example:8x\r\n\r\n",
    "GET / HTTP/1.1\r\n\r\n",                                               /* 1.1 without host */
    "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\n\r\n",
    "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "GET  / HTTP/1.1\r\nHost: a.example\r\n\r\n",
    "GET / HTTP/1.1 \r\nHost: a.example\r\n\r\n",
    "GET ftp://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: a.example\x01\r\n\r\n",
    "SSH-2.0-OpenSSH_9.2\r\n",
    "\x16\x03\x01\x02\x00\x01",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(host(bad[i], name, NULL), AN_SNI_BAD, "request %zu: %s", i, bad[i]);
}

Test(http_host, no_name_or_ip_literal_is_none) {
  char name[AN_NET_NAME_BUF]; uint16_t port = 0;
  cr_assert_eq(host("GET / HTTP/1.0\r\nAccept: */*\r\n\r\n", name, &port), AN_SNI_NONE);
  cr_assert_eq(host("GET / HTTP/1.1\r\nHost: 192.0.2.1\r\n\r\n", name, &port), AN_SNI_NONE);
  cr_assert_eq(host("GET / HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n\r\n", name, &port), AN_SNI_NONE);
  cr_assert_eq(port, 8080);
  cr_assert_str_eq(name, "");
}

Test(http_host, incomplete_header_block_asks_for_more) {
  const char *req = "GET /index.html HTTP/1.1\r\nHost: allowed.example\r\nAccept: */*\r\n\r\n";
  char name[AN_NET_NAME_BUF];
  for (size_t k = 0; k < strlen(req); k++)
    cr_assert_eq(an_http_host_parse((const uint8_t *) req, k, name, sizeof name, NULL), AN_SNI_MORE,
                 "prefix of %zu bytes", k);
  cr_assert_eq(host(req, name, NULL), AN_SNI_FOUND);
}

Test(http_host, oversized_header_block_is_refused) {
  size_t n = 70000;
  char *req = malloc(n + 1);
  memcpy(req, "GET / HTTP/1.1\r\nX: ", 19);
  memset(req + 19, 'a', n - 19);
  req[n] = '\0';
  char name[AN_NET_NAME_BUF];
  cr_assert_eq(an_http_host_parse((const uint8_t *) req, n, name, sizeof name, NULL), AN_SNI_BAD);
  cr_assert_eq(an_http_host_parse((const uint8_t *) req, 60000, name, sizeof name, NULL), AN_SNI_MORE);
  free(req);
}
