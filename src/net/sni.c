/* net/sni.c — the TLS ClientHello server_name (SNI) and HTTP/1.x Host
 * parsers (see net/sni.h).  Pure functions over the bytes received so far:
 * every length is checked against the bytes that enclose it before it is
 * used, nothing is allocated, and the only large local is the reassembly
 * buffer for a ClientHello split over several TLS records.
 * What does not live here: reading sockets, timeouts, the byte cap (the
 * proxy's), policy matching (net/policy.c). */
#include <string.h>
#include <strings.h>
#include "net/sni.h"

/* The largest ClientHello accepted (a post-quantum hybrid key share makes
 * real ones ~2 KiB; padding extensions reach 512 bytes) and HTTP header
 * block. */
#define TLS_HELLO_MAX  32768u
#define TLS_RECORD_MAX 16384u      /* RFC 8446 5.1: TLSPlaintext.length <= 2^14 */
#define HTTP_HEAD_MAX  65536u

enum { TLS_HANDSHAKE = 22, TLS_CLIENT_HELLO = 1, EXT_SERVER_NAME = 0, SNI_HOST_NAME = 0 };

/* ---- host names ------------------------------------------------------- */

static bool is_ldh(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_';
}

bool an_net_host_name_valid(const char *s, size_t len) {
  if (len == 0 || len > AN_NET_NAME_MAX) return false;
  size_t label = 0;           /* length of the current label */
  bool numeric = true;        /* the current label is all digits */
  for (size_t i = 0; i <= len; i++) {
    if (i == len || s[i] == '.') {
      if (label == 0 || label > 63) return false;       /* empty label, trailing dot, too long */
      if (s[i - 1] == '-' || s[i - label] == '-') return false;
      if (i == len) return !numeric;                    /* numeric last label: an IP literal */
      label = 0;
      numeric = true;
      continue;
    }
    unsigned char c = (unsigned char) s[i];
    if (!is_ldh(c)) return false;
    if (c < '0' || c > '9') numeric = false;
    label++;
  }
  return false;
}

/* Copy a valid name, lower-cased, into name[cap]. */
static int put_name(const char *s, size_t len, char *name, size_t cap) {
  if (!an_net_host_name_valid(s, len) || len + 1 > cap) return AN_SNI_BAD;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    name[i] = (c >= 'A' && c <= 'Z') ? (char) (c - 'A' + 'a') : c;
  }
  name[len] = '\0';
  return AN_SNI_FOUND;
}

/* ---- TLS ---------------------------------------------------------------- */

/* A bounds-checked reader: every get fails (returns false) rather than read
 * past the end; once failed it stays failed. */
struct rd { const uint8_t *p; size_t n; bool bad; };

static bool rd_skip(struct rd *r, size_t k) {
  if (r->bad || r->n < k) return !(r->bad = true);
  r->p += k; r->n -= k;
  return true;
}
static unsigned rd_u8(struct rd *r) {
  if (r->bad || r->n < 1) { r->bad = true; return 0; }
  unsigned v = r->p[0];
  r->p++; r->n--;
  return v;
}
static unsigned rd_u16(struct rd *r) {
  if (r->bad || r->n < 2) { r->bad = true; return 0; }
  unsigned v = (unsigned) r->p[0] << 8 | r->p[1];
  r->p += 2; r->n -= 2;
  return v;
}
/* A sub-reader over the next k bytes (a vector's body). */
static struct rd rd_sub(struct rd *r, size_t k) {
  struct rd s = {r->p, k, false};
  if (!rd_skip(r, k)) s = (struct rd) {NULL, 0, true};
  return s;
}

/* RFC 6066 3: struct { NameType name_type; select (name_type) { case
 * host_name: HostName; } } ServerName; ServerName server_name_list<1..2^16-1>;
 * HostName opaque<1..2^16-1>.  "The ServerNameList MUST NOT contain more
 * than one name of the same name_type." */
static int parse_server_name(struct rd ext, char *name, size_t cap) {
  unsigned list_len = rd_u16(&ext);
  if (ext.bad || list_len == 0 || list_len != ext.n) return AN_SNI_BAD;
  bool found = false;
  int r = AN_SNI_NONE;
  while (ext.n > 0) {
    unsigned type = rd_u8(&ext);
    unsigned hlen = rd_u16(&ext);
    struct rd host = rd_sub(&ext, hlen);
    if (ext.bad || hlen == 0) return AN_SNI_BAD;
    if (type != SNI_HOST_NAME) continue;
    if (found) return AN_SNI_BAD;
    found = true;
    r = put_name((const char *) host.p, hlen, name, cap);
    if (r != AN_SNI_FOUND) return AN_SNI_BAD;
  }
  return r;
}

/* RFC 8446 4.1.2 ClientHello (the TLS 1.0-1.2 layout is the same). */
static int parse_client_hello(const uint8_t *p, size_t n, char *name, size_t cap) {
  struct rd r = {p, n, false};
  unsigned version = rd_u16(&r);            /* legacy_version */
  if (r.bad || (version >> 8) != 3) return AN_SNI_BAD;
  rd_skip(&r, 32);                          /* random */
  unsigned sid = rd_u8(&r);                 /* legacy_session_id<0..32> */
  if (sid > 32) return AN_SNI_BAD;
  rd_skip(&r, sid);
  unsigned cs = rd_u16(&r);                 /* cipher_suites<2..2^16-2> */
  if (r.bad || cs < 2 || cs % 2) return AN_SNI_BAD;
  rd_skip(&r, cs);
  unsigned comp = rd_u8(&r);                /* legacy_compression_methods<1..2^8-1> */
  if (r.bad || comp < 1) return AN_SNI_BAD;
  rd_skip(&r, comp);
  if (r.bad) return AN_SNI_BAD;
  if (r.n == 0) return AN_SNI_NONE;         /* no extensions (allowed before TLS 1.3) */
  unsigned ext_len = rd_u16(&r);            /* extensions<0..2^16-1> */
  if (r.bad || ext_len != r.n) return AN_SNI_BAD;
  /* RFC 8446 4.2: "There MUST NOT be more than one extension of the same type." */
  uint8_t seen[65536 / 8];
  memset(seen, 0, sizeof seen);
  int result = AN_SNI_NONE;
  while (r.n > 0) {
    unsigned type = rd_u16(&r);
    unsigned elen = rd_u16(&r);
    struct rd ext = rd_sub(&r, elen);
    if (r.bad) return AN_SNI_BAD;
    if (seen[type / 8] & (1u << (type % 8))) return AN_SNI_BAD;
    seen[type / 8] |= (uint8_t) (1u << (type % 8));
    if (type != EXT_SERVER_NAME) continue;  /* GREASE (RFC 8701) and the rest: skipped */
    result = parse_server_name(ext, name, cap);
    if (result == AN_SNI_BAD) return AN_SNI_BAD;
  }
  return result;
}

int an_tls_sni_parse(const uint8_t *buf, size_t len, char *name, size_t cap) {
  if (cap) name[0] = '\0';
  /* Reassemble the handshake message from consecutive handshake records
   * (RFC 8446 5.1). */
  uint8_t hs[TLS_HELLO_MAX + 4];
  size_t have = 0, off = 0;
  for (;;) {
    size_t left = len - off;
    if (left >= 1 && buf[off] != TLS_HANDSHAKE) return AN_SNI_BAD;
    if (left >= 2 && buf[off + 1] != 3) return AN_SNI_BAD;
    if (left >= 3 && buf[off + 2] > 4) return AN_SNI_BAD;
    if (left < 5) return AN_SNI_MORE;
    size_t rlen = (size_t) buf[off + 3] << 8 | buf[off + 4];
    /* "Implementations MUST NOT send zero-length fragments of Handshake types" */
    if (rlen == 0 || rlen > TLS_RECORD_MAX) return AN_SNI_BAD;
    if (have + rlen > sizeof hs) return AN_SNI_BAD;
    if (left - 5 < rlen) {
      /* Check the handshake header early when this partial record holds it,
       * so that a non-ClientHello is refused without waiting for more. */
      size_t part = left - 5;
      if (have == 0 && part >= 1 && buf[off + 5] != TLS_CLIENT_HELLO) return AN_SNI_BAD;
      return AN_SNI_MORE;
    }
    memcpy(hs + have, buf + off + 5, rlen);
    have += rlen;
    off += 5 + rlen;
    if (hs[0] != TLS_CLIENT_HELLO) return AN_SNI_BAD;
    if (have < 4) continue;
    size_t mlen = (size_t) hs[1] << 16 | (size_t) hs[2] << 8 | hs[3];
    if (mlen > TLS_HELLO_MAX) return AN_SNI_BAD;
    if (have < 4 + mlen) continue;
    /* The client sends nothing after its ClientHello until the server
     * answers: trailing handshake bytes are malformed. */
    if (have > 4 + mlen) return AN_SNI_BAD;
    int r = parse_client_hello(hs + 4, mlen, name, cap);
    if (r != AN_SNI_FOUND && cap) name[0] = '\0';
    return r;
  }
}

/* ---- HTTP/1.x ------------------------------------------------------------ */

/* RFC 9110 5.6.2 tchar */
static bool is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A host[:port] (the Host field value, or an absolute URI's authority
 * without userinfo).  Sets *is_ip for an IPv4 or [IPv6] literal.  The
 * host (lower-cased, one trailing dot dropped) goes to out[cap]. */
static int parse_authority(const char *s, size_t n, char *out, size_t cap, uint16_t *port,
                           bool *is_ip) {
  size_t hlen;
  *is_ip = false;
  *port = 0;
  if (n == 0) return AN_SNI_BAD;
  if (memchr(s, '@', n)) return AN_SNI_BAD;                /* userinfo */
  if (s[0] == '[') {                                       /* IP-literal (RFC 3986 3.2.2) */
    const char *close = memchr(s, ']', n);
    if (!close || close - s < 3) return AN_SNI_BAD;
    for (const char *c = s + 1; c < close; c++)
      if (!strchr("0123456789abcdefABCDEF:.", *c)) return AN_SNI_BAD;
    hlen = (size_t) (close - s) + 1;
    *is_ip = true;
  } else {
    const char *colon = memchr(s, ':', n);
    hlen = colon ? (size_t) (colon - s) : n;
  }
  if (hlen < n) {                                          /* ":" port */
    if (s[hlen] != ':') return AN_SNI_BAD;
    size_t plen = n - hlen - 1;
    if (plen > 5) return AN_SNI_BAD;
    unsigned v = 0;
    for (size_t i = hlen + 1; i < n; i++) {
      if (s[i] < '0' || s[i] > '9') return AN_SNI_BAD;
      v = v * 10 + (unsigned) (s[i] - '0');
    }
    if (v > 65535) return AN_SNI_BAD;
    *port = (uint16_t) v;
  }
  if (*is_ip) return AN_SNI_NONE;
  if (hlen == 0) return AN_SNI_BAD;
  if (s[hlen - 1] == '.') hlen--;                          /* FQDN form: same name */
  /* An IPv4 literal (digits and dots) names no site. */
  bool dotted = hlen > 0;
  for (size_t i = 0; i < hlen; i++)
    if (!(s[i] == '.' || (s[i] >= '0' && s[i] <= '9'))) dotted = false;
  if (dotted) { *is_ip = true; return AN_SNI_NONE; }
  return put_name(s, hlen, out, cap);
}

/* Whether the first bytes can still be the start of a request line, so that
 * a non-HTTP stream is refused at once rather than after the timeout. */
static bool request_line_prefix_ok(const uint8_t *b, size_t len) {
  size_t i = 0;
  while (i < len && is_tchar(b[i])) i++;
  if (i == len) return i <= 32;
  return i > 0 && i <= 32 && b[i] == ' ';
}

static const uint8_t *find_crlfcrlf(const uint8_t *b, size_t len) {
  for (size_t i = 0; i + 4 <= len; i++)
    if (b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' && b[i + 3] == '\n') return b + i;
  return NULL;
}

int an_http_host_parse(const uint8_t *buf, size_t len, char *name, size_t cap, uint16_t *port) {
  uint16_t port_dummy;
  if (!port) port = &port_dummy;
  *port = 0;
  if (cap) name[0] = '\0';
  if (!request_line_prefix_ok(buf, len)) return AN_SNI_BAD;
  size_t scan = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;
  const uint8_t *end = find_crlfcrlf(buf, scan);
  if (!end) return len >= HTTP_HEAD_MAX ? AN_SNI_BAD : AN_SNI_MORE;
  size_t blen = (size_t) (end - buf) + 2;   /* the block, through its last field's CRLF */
  /* RFC 9112 2.2: bare CR is invalid; a bare LF is a line ending some
   * parsers accept and others do not — refused, as ambiguous. */
  for (size_t i = 0; i < blen; i++) {
    if (buf[i] == '\r' && buf[i + 1] != '\n') return AN_SNI_BAD;
    if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')) return AN_SNI_BAD;
  }
  const char *s = (const char *) buf;
  /* Request line: method SP request-target SP HTTP-version CRLF (RFC 9112 3). */
  const char *eol = memchr(s, '\r', blen);
  const char *sp1 = memchr(s, ' ', (size_t) (eol - s));
  if (!sp1 || sp1 == s) return AN_SNI_BAD;
  const char *target = sp1 + 1;
  const char *sp2 = memchr(target, ' ', (size_t) (eol - target));
  if (!sp2 || sp2 == target) return AN_SNI_BAD;
  const char *ver = sp2 + 1;
  if (eol - ver != 8 || memcmp(ver, "HTTP/1.", 7) || (ver[7] != '0' && ver[7] != '1'))
    return AN_SNI_BAD;
  bool http11 = ver[7] == '1';
  size_t mlen = (size_t) (sp1 - s);
  if (mlen == 7 && !memcmp(s, "CONNECT", 7)) return AN_SNI_BAD;
  for (const char *c = target; c < sp2; c++)
    if ((unsigned char) *c <= 0x20 || (unsigned char) *c >= 0x7f) return AN_SNI_BAD;

  char uri_host[AN_NET_NAME_BUF] = "", field_host[AN_NET_NAME_BUF] = "";
  uint16_t uri_port = 0, field_port = 0;
  int uri_r = -3, field_r = -3;     /* -3: absent */
  bool uri_ip = false, field_ip = false;
  if (target[0] != '/' && !(sp2 - target == 1 && target[0] == '*')) {
    /* absolute-form: scheme "://" authority [path-abempty ["?" query]] */
    const char *colon = memchr(target, ':', (size_t) (sp2 - target));
    if (!colon) return AN_SNI_BAD;
    size_t slen = (size_t) (colon - target);
    if (!((slen == 4 && !strncasecmp(target, "http", 4)) ||
          (slen == 5 && !strncasecmp(target, "https", 5))))
      return AN_SNI_BAD;
    if (sp2 - colon < 3 || colon[1] != '/' || colon[2] != '/') return AN_SNI_BAD;
    const char *auth = colon + 3, *aend = auth;
    while (aend < sp2 && *aend != '/' && *aend != '?' && *aend != '#') aend++;
    uri_r = parse_authority(auth, (size_t) (aend - auth), uri_host, sizeof uri_host, &uri_port, &uri_ip);
    if (uri_r == AN_SNI_BAD) return AN_SNI_BAD;
  }

  /* Header fields (RFC 9112 5). */
  const char *line = eol + 2;
  while (line < s + blen) {
    const char *lend = memchr(line, '\r', (size_t) (s + blen - line));
    if (*line == ' ' || *line == '\t') return AN_SNI_BAD;      /* obs-fold */
    const char *c = line;
    while (c < lend && is_tchar((unsigned char) *c)) c++;
    if (c == line || c == lend || *c != ':') return AN_SNI_BAD; /* incl. space before ':' */
    size_t nlen = (size_t) (c - line);
    const char *v = c + 1, *vend = lend;
    for (const char *x = v; x < vend; x++)
      if (((unsigned char) *x < 0x20 && *x != '\t') || *x == 0x7f) return AN_SNI_BAD;
    while (v < vend && (*v == ' ' || *v == '\t')) v++;
    while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t')) vend--;
    if (nlen == 4 && !strncasecmp(line, "host", 4)) {
      if (field_r != -3) return AN_SNI_BAD;                  /* two Host fields */
      field_r = parse_authority(v, (size_t) (vend - v), field_host, sizeof field_host,
                                &field_port, &field_ip);
      if (field_r == AN_SNI_BAD) return AN_SNI_BAD;
    }
    line = lend + 2;
  }

  if (uri_r != -3 && field_r != -3) {
    /* RFC 9112 3.2.2 has the server ignore Host for an absolute-form target;
     * a proxy in front must not see another name than the server does. */
    if (uri_r != field_r || uri_ip != field_ip || uri_port != field_port ||
        strcmp(uri_host, field_host))
      return AN_SNI_BAD;
  }
  int r = uri_r != -3 ? uri_r : field_r;
  const char *host = uri_r != -3 ? uri_host : field_host;
  *port = uri_r != -3 ? uri_port : field_port;
  if (r == -3) return http11 ? AN_SNI_BAD : AN_SNI_NONE;   /* RFC 9112 3.2: 1.1 needs Host */
  if (r != AN_SNI_FOUND) { *port = r == AN_SNI_NONE ? *port : 0; return r; }
  size_t hl = strlen(host);
  if (hl + 1 > cap) return AN_SNI_BAD;
  memcpy(name, host, hl + 1);
  return AN_SNI_FOUND;
}
