/* net/policy_parse.c — the text forms of the egress policy: modes, `--allow`
 * entries (names, zones, CIDRs, port lists) and DNS upstreams (see policy.h).
 * Matching lives in policy.c. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include "net/policy.h"
#include "util/cleanup.h"

int an_egress_mode_parse(const char *text, enum an_egress_mode *mode, an_error_t *err) {
  static const char *const names[] = {"none", "allowlist", "full"};
  for (size_t i = 0; i < 3; i++)
    if (text && strcmp(text, names[i]) == 0) {
      *mode = (enum an_egress_mode) i;
      return 0;
    }
  return an_error_set(err, EINVAL, "network \"%s\": unknown mode (none, allowlist, full)",
                      text ? text : "");
}

const char *an_egress_mode_name(enum an_egress_mode mode) {
  switch (mode) {
  case AN_EGRESS_ALLOWLIST: return "allowlist";
  case AN_EGRESS_FULL: return "full";
  default: return "none";
  }
}

/* "80", "80,443", "1-1024", "80,8000-8100" */
static int parse_ports(const char *entry, const char *s, struct an_egress_entry *e, an_error_t *err) {
  e->n_ports = 0;
  e->ports_given = true;
  if (!*s) return an_error_set(err, EINVAL, "--allow \"%s\": empty port list after ':'", entry);
  while (*s) {
    unsigned long v[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
      if (!isdigit((unsigned char) *s))
        return an_error_set(err, EINVAL, "--allow \"%s\": bad port list (want N, N-M or N,M,...)", entry);
      char *end;
      errno = 0;
      v[k] = strtoul(s, &end, 10);
      if (errno || v[k] < 1 || v[k] > 65535)
        return an_error_set(err, EINVAL, "--allow \"%s\": port out of range 1-65535", entry);
      s = end;
      if (k == 0 && *s == '-') s++;
      else {
        if (k == 0) v[1] = v[0];
        break;
      }
    }
    if (v[0] > v[1]) return an_error_set(err, EINVAL, "--allow \"%s\": port range %lu-%lu is backwards", entry, v[0], v[1]);
    if (e->n_ports == AN_EGRESS_MAX_PORT_RANGES)
      return an_error_set(err, EINVAL, "--allow \"%s\": more than %d port ranges", entry, AN_EGRESS_MAX_PORT_RANGES);
    e->ports[e->n_ports++] = (struct an_port_range){(uint16_t) v[0], (uint16_t) v[1]};
    if (*s == ',') {
      s++;
      if (!*s) return an_error_set(err, EINVAL, "--allow \"%s\": port list ends with ','", entry);
    } else if (*s)
      return an_error_set(err, EINVAL, "--allow \"%s\": bad port list (want N, N-M or N,M,...)", entry);
  }
  return 0;
}

/* A host name (RFC 1123 labels; '_' accepted for service names): lower-cased
 * into out (no trailing dot).  Needs two labels or more, and a top label that
 * is not all digits (that would be an address someone mistyped). */
static int parse_name(const char *entry, const char *s, size_t len, char **out, an_error_t *err) {
  if (len && s[len - 1] == '.') len--;
  if (len == 0) return an_error_set(err, EINVAL, "--allow \"%s\": empty name", entry);
  if (len > 253) return an_error_set(err, EINVAL, "--allow \"%s\": name longer than 253 characters", entry);
  cleanup_free char *n = strndup(s, len);
  if (!n) return an_error_set(err, ENOMEM, "--allow \"%s\"", entry);
  size_t labels = 0, start = 0;
  bool top_digits = true;
  for (size_t i = 0; i <= len; i++) {
    char c = i < len ? (char) tolower((unsigned char) n[i]) : '.';
    if (i < len) n[i] = c;
    if (c == '.') {
      size_t l = i - start;
      if (l == 0) return an_error_set(err, EINVAL, "--allow \"%s\": empty label in name", entry);
      if (l > 63) return an_error_set(err, EINVAL, "--allow \"%s\": label longer than 63 characters", entry);
      if (n[start] == '-' || n[i - 1] == '-')
        return an_error_set(err, EINVAL, "--allow \"%s\": a label starts or ends with '-'", entry);
      labels++;
      if (i < len) top_digits = true;
      start = i + 1;
      continue;
    }
    if (!(isalnum((unsigned char) c) || c == '-' || c == '_'))
      return an_error_set(err, EINVAL, "--allow \"%s\": character '%c' not allowed in a name", entry, c);
    if (!isdigit((unsigned char) c)) top_digits = false;
  }
  if (labels < 2)
    return an_error_set(err, EINVAL, "--allow \"%s\": a single-label name (give the full name, e.g. host.example.com)", entry);
  if (top_digits)
    return an_error_set(err, EINVAL, "--allow \"%s\": not a name (all-numeric top label) nor an address", entry);
  *out = an_steal(&n);
  return 0;
}

/* ADDR or ADDR/LEN (no ports) into e. */
static int parse_cidr(const char *entry, const char *s, size_t len, struct an_egress_entry *e, an_error_t *err) {
  char buf[INET6_ADDRSTRLEN + 8];
  if (len >= sizeof buf) return an_error_set(err, EINVAL, "--allow \"%s\": not an address", entry);
  memcpy(buf, s, len);
  buf[len] = 0;
  char *slash = strchr(buf, '/');
  if (slash) *slash = 0;
  if (inet_pton(AF_INET, buf, e->addr) == 1) e->family = AF_INET;
  else if (inet_pton(AF_INET6, buf, e->addr) == 1) e->family = AF_INET6;
  else return an_error_set(err, EINVAL, "--allow \"%s\": \"%s\" is not an IPv4 or IPv6 address", entry, buf);
  unsigned bits = e->family == AF_INET ? 32 : 128;
  e->prefix = bits;
  if (slash) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(slash + 1, &end, 10);
    if (!isdigit((unsigned char) slash[1]) || *end || errno || v > bits)
      return an_error_set(err, EINVAL, "--allow \"%s\": prefix length must be 0-%u", entry, bits);
    e->prefix = (unsigned) v;
  }
  unsigned min = e->family == AF_INET ? 8 : 16;
  if (e->prefix < min)
    return an_error_set(err, EINVAL, "--allow \"%s\": /%u is too wide for an allowlist (shortest /%u; "
                        "use --network full for any public destination)", entry, e->prefix, min);
  for (unsigned b = e->prefix; b < bits; b++)
    if (e->addr[b / 8] & (0x80 >> (b % 8)))
      return an_error_set(err, EINVAL, "--allow \"%s\": host bits set after /%u", entry, e->prefix);
  e->kind = AN_EGRESS_CIDR;
  return 0;
}

void an_egress_entry_clear(struct an_egress_entry *e) {
  free(e->text);
  free(e->name);
  *e = (struct an_egress_entry){0};
}

int an_egress_entry_parse(const char *text, struct an_egress_entry *e, an_error_t *err) {
  *e = (struct an_egress_entry){0};
  if (!text || !*text) return an_error_set(err, EINVAL, "--allow: empty entry");
  const char *s = text, *body = text, *ports = NULL;
  size_t body_len;
  int r;
  if (*s == '[') {                       /* [ADDR6] or [ADDR6/LEN], then :PORTS */
    const char *close = strchr(s, ']');
    if (!close) return an_error_set(err, EINVAL, "--allow \"%s\": '[' without ']'", text);
    body = s + 1;
    body_len = (size_t) (close - body);
    if (close[1] == ':') ports = close + 2;
    else if (close[1]) return an_error_set(err, EINVAL, "--allow \"%s\": want [ADDRESS]:PORTS", text);
  } else if (strchr(s, '/')) {           /* ADDR/LEN[:PORTS] */
    const char *slash = strchr(s, '/');
    const char *colon = strchr(slash, ':');
    body_len = colon ? (size_t) (colon - s) : strlen(s);
    if (colon) ports = colon + 1;
  } else if (strchr(s, ':') && strchr(s, ':') != strrchr(s, ':')) {
    body_len = strlen(s);                /* a bare IPv6 address: no ports */
  } else {
    const char *colon = strchr(s, ':');
    body_len = colon ? (size_t) (colon - s) : strlen(s);
    if (colon) ports = colon + 1;
  }
  if (body_len == 0) return an_error_set(err, EINVAL, "--allow \"%s\": nothing before the ports", text);

  char first = *body;
  bool looks_addr = *text == '[' || memchr(body, '/', body_len) || memchr(body, ':', body_len);
  if (!looks_addr) {
    char tmp[64];
    size_t n = body_len < sizeof tmp - 1 ? body_len : sizeof tmp - 1;
    memcpy(tmp, body, n);
    tmp[n] = 0;
    struct in_addr a4;
    looks_addr = n == body_len && inet_pton(AF_INET, tmp, &a4) == 1;
  }
  if (looks_addr) r = parse_cidr(text, body, body_len, e, err);
  else if (first == '*') {
    if (body_len < 3 || body[1] != '.')
      return an_error_set(err, EINVAL, "--allow \"%s\": a wildcard is only \"*.\" before a zone (*.example.com)", text);
    r = parse_name(text, body + 2, body_len - 2, &e->name, err);
    if (r < 0) {
      an_egress_entry_clear(e);
      return r;
    }
    e->kind = AN_EGRESS_SUFFIX;
  } else {
    r = parse_name(text, body, body_len, &e->name, err);
    e->kind = AN_EGRESS_NAME;
  }
  if (r >= 0 && e->name && strchr(e->name, '*')) r = an_error_set(err, EINVAL, "--allow \"%s\": '*' only as the first label", text);
  if (r >= 0 && ports) r = parse_ports(text, ports, e, err);
  if (r >= 0 && !ports) {
    e->n_ports = 2;
    e->ports[0] = (struct an_port_range){80, 80};
    e->ports[1] = (struct an_port_range){443, 443};
  }
  if (r >= 0 && !(e->text = strdup(text))) r = an_error_set(err, ENOMEM, "--allow \"%s\"", text);
  if (r < 0) an_egress_entry_clear(e);
  return r;
}

int an_egress_policy_add_upstream(struct an_egress_policy *p, const char *text, an_error_t *err) {
  if (!text || !*text) return an_error_set(err, EINVAL, "--dns-upstream: empty address");
  if (p->n_upstreams == AN_EGRESS_MAX_UPSTREAMS)
    return an_error_set(err, E2BIG, "--dns-upstream \"%s\": more than %d upstreams", text, AN_EGRESS_MAX_UPSTREAMS);
  char host[INET6_ADDRSTRLEN + 2];
  const char *port = NULL;
  size_t hl;
  if (*text == '[') {
    const char *close = strchr(text, ']');
    if (!close || (close[1] && close[1] != ':'))
      return an_error_set(err, EINVAL, "--dns-upstream \"%s\": want [ADDRESS]:PORT", text);
    hl = (size_t) (close - text - 1);
    if (hl >= sizeof host) return an_error_set(err, EINVAL, "--dns-upstream \"%s\": not an address", text);
    memcpy(host, text + 1, hl);
    if (close[1] == ':') port = close + 2;
  } else {
    const char *c = strchr(text, ':');
    if (c && c == strrchr(text, ':')) port = c + 1;  /* one ':' -> IPv4:PORT */
    hl = port ? (size_t) (c - text) : strlen(text);
    if (hl >= sizeof host) return an_error_set(err, EINVAL, "--dns-upstream \"%s\": not an address", text);
    memcpy(host, text, hl);
  }
  host[hl] = 0;
  unsigned long pv = 53;
  if (port) {
    char *end;
    errno = 0;
    pv = strtoul(port, &end, 10);
    if (!isdigit((unsigned char) *port) || *end || errno || pv < 1 || pv > 65535)
      return an_error_set(err, EINVAL, "--dns-upstream \"%s\": port must be 1-65535", text);
  }
  struct an_egress_upstream u = {0};
  struct sockaddr_in *s4 = (struct sockaddr_in *) &u.sa;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *) &u.sa;
  if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t) pv);
    u.sa_len = sizeof *s4;
  } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t) pv);
    u.sa_len = sizeof *s6;
  } else
    return an_error_set(err, EINVAL, "--dns-upstream \"%s\": \"%s\" is not an IPv4 or IPv6 address", text, host);
  struct an_egress_upstream *v = realloc(p->upstreams, (p->n_upstreams + 1) * sizeof *v);
  if (!v || !(u.text = strdup(text))) {
    if (v) p->upstreams = v;
    return an_error_set(err, ENOMEM, "--dns-upstream \"%s\"", text);
  }
  p->upstreams = v;
  v[p->n_upstreams++] = u;
  return 0;
}
