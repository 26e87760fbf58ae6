/* net/policy.c — the egress policy: entries, the deny set and the matching
 * the DNS filter, the proxy and the ruleset rely on (see policy.h).  Text
 * parsing lives in policy_parse.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "net/policy.h"
#include "util/cleanup.h"

struct deny_range {
  int family;
  uint8_t addr[16];
  unsigned prefix;
  const char *what;
};

/* IANA special-purpose registries (RFC 6890 and successors), less the
 * documentation ranges (see policy.h). */
static const struct deny_range deny_ranges[] = {
  {AF_INET, {0, 0, 0, 0}, 8, "deny 0.0.0.0/8 (this network)"},
  {AF_INET, {10, 0, 0, 0}, 8, "deny 10.0.0.0/8 (private, RFC 1918)"},
  {AF_INET, {100, 64, 0, 0}, 10, "deny 100.64.0.0/10 (shared address space, RFC 6598)"},
  {AF_INET, {127, 0, 0, 0}, 8, "deny 127.0.0.0/8 (loopback)"},
  {AF_INET, {169, 254, 0, 0}, 16, "deny 169.254.0.0/16 (link-local, cloud metadata)"},
  {AF_INET, {172, 16, 0, 0}, 12, "deny 172.16.0.0/12 (private, RFC 1918)"},
  {AF_INET, {192, 0, 0, 0}, 24, "deny 192.0.0.0/24 (IETF protocol assignments)"},
  {AF_INET, {192, 88, 99, 0}, 24, "deny 192.88.99.0/24 (6to4 relay anycast)"},
  {AF_INET, {192, 168, 0, 0}, 16, "deny 192.168.0.0/16 (private, RFC 1918)"},
  {AF_INET, {198, 18, 0, 0}, 15, "deny 198.18.0.0/15 (benchmarking)"},
  {AF_INET, {224, 0, 0, 0}, 4, "deny 224.0.0.0/4 (multicast)"},
  {AF_INET, {240, 0, 0, 0}, 4, "deny 240.0.0.0/4 (reserved, broadcast)"},
  {AF_INET6, {0}, 128, "deny ::/128 (unspecified)"},
  {AF_INET6, {[15] = 1}, 128, "deny ::1/128 (loopback)"},
  {AF_INET6, {[10] = 0xff, [11] = 0xff}, 96, "deny ::ffff:0:0/96 (IPv4-mapped)"},
  {AF_INET6, {0x00, 0x64, 0xff, 0x9b}, 96, "deny 64:ff9b::/96 (NAT64)"},
  {AF_INET6, {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "deny 64:ff9b:1::/48 (local NAT64)"},
  {AF_INET6, {0x01, 0x00}, 64, "deny 100::/64 (discard)"},
  {AF_INET6, {0x20, 0x01, 0x00, 0x00}, 23, "deny 2001::/23 (IETF protocol assignments, Teredo)"},
  {AF_INET6, {0x20, 0x02}, 16, "deny 2002::/16 (6to4)"},
  {AF_INET6, {0xfc}, 7, "deny fc00::/7 (unique local)"},
  {AF_INET6, {0xfe, 0x80}, 10, "deny fe80::/10 (link-local)"},
  {AF_INET6, {0xfe, 0xc0}, 10, "deny fec0::/10 (site-local)"},
  {AF_INET6, {0xff}, 8, "deny ff00::/8 (multicast)"},
};

bool an_egress_deny_range(size_t i, int *family, const uint8_t **addr, unsigned *prefix,
                          const char **what) {
  if (i >= sizeof deny_ranges / sizeof deny_ranges[0]) return false;
  *family = deny_ranges[i].family;
  *addr = deny_ranges[i].addr;
  *prefix = deny_ranges[i].prefix;
  *what = deny_ranges[i].what;
  return true;
}

static bool prefix_match(const uint8_t *net, unsigned prefix, const uint8_t *a) {
  unsigned full = prefix / 8, rest = prefix % 8;
  if (memcmp(net, a, full) != 0) return false;
  if (!rest) return true;
  uint8_t mask = (uint8_t) (0xff << (8 - rest));
  return (net[full] & mask) == (a[full] & mask);
}

/* an IPv4-mapped IPv6 address is judged as IPv4 (the kernel sends it as such) */
static void normalise(int *family, const void *addr, uint8_t out[16]) {
  static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
  memset(out, 0, 16);
  if (*family == AF_INET6 && memcmp(addr, mapped, 12) == 0) {
    memcpy(out, (const uint8_t *) addr + 12, 4);
    *family = AF_INET;
  } else
    memcpy(out, addr, *family == AF_INET ? 4 : 16);
}

int an_egress_policy_new(enum an_egress_mode mode, struct an_egress_policy **out, an_error_t *err) {
  struct an_egress_policy *p = calloc(1, sizeof *p);
  if (!p) return an_error_set(err, ENOMEM, "egress policy");
  p->mode = mode;
  *out = p;
  return 0;
}

void an_egress_policy_free(struct an_egress_policy *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n_entries; i++) an_egress_entry_clear(&p->entries[i]);
  for (size_t i = 0; i < p->n_upstreams; i++) free(p->upstreams[i].text);
  free(p->entries);
  free(p->upstreams);
  free(p->host_addrs);
  free(p);
}

int an_egress_policy_add(struct an_egress_policy *p, const char *text, an_error_t *err) {
  if (p->mode == AN_EGRESS_NONE)
    return an_error_set(err, EINVAL, "--allow \"%s\": needs --network allowlist or full", text ? text : "");
  struct an_egress_entry e;
  int r = an_egress_entry_parse(text, &e, err);
  if (r < 0) return r;
  if (p->mode == AN_EGRESS_FULL && e.kind != AN_EGRESS_CIDR) {
    an_egress_entry_clear(&e);
    return an_error_set(err, EINVAL, "--allow \"%s\": with --network full only CIDR entries mean something "
                        "(they open deny ranges); every public name is allowed already", text);
  }
  for (size_t i = 0; i < p->n_entries; i++)
    if (strcmp(p->entries[i].text, e.text) == 0) {
      an_egress_entry_clear(&e);
      return 0;
    }
  if (p->n_entries == AN_EGRESS_MAX_ENTRIES) {
    an_egress_entry_clear(&e);
    return an_error_set(err, E2BIG, "--allow \"%s\": more than %d entries", text, AN_EGRESS_MAX_ENTRIES);
  }
  struct an_egress_entry *v = realloc(p->entries, (p->n_entries + 1) * sizeof *v);
  if (!v) {
    an_egress_entry_clear(&e);
    return an_error_set(err, ENOMEM, "--allow \"%s\"", text);
  }
  p->entries = v;
  v[p->n_entries++] = e;
  return 0;
}

int an_egress_policy_remove(struct an_egress_policy *p, const char *text, an_error_t *err) {
  for (size_t i = 0; i < p->n_entries; i++)
    if (strcmp(p->entries[i].text, text) == 0) {
      an_egress_entry_clear(&p->entries[i]);
      memmove(&p->entries[i], &p->entries[i + 1], (p->n_entries - i - 1) * sizeof p->entries[0]);
      p->n_entries--;
      return 0;
    }
  return an_error_set(err, ENOENT, "--deny \"%s\": not an entry of the allowlist", text);
}

int an_egress_policy_load_host_addrs(struct an_egress_policy *p, an_error_t *err) {
  struct ifaddrs *ifa = NULL;
  if (getifaddrs(&ifa) < 0) return an_error_set(err, errno, "getifaddrs (the host's own addresses)");
  size_t n = 0;
  for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
    if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6)) n++;
  void *v = calloc(n ? n : 1, sizeof p->host_addrs[0]);
  if (!v) {
    freeifaddrs(ifa);
    return an_error_set(err, ENOMEM, "host addresses");
  }
  free(p->host_addrs);
  p->host_addrs = v;
  p->n_host_addrs = 0;
  for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    int f = i->ifa_addr->sa_family;
    if (f != AF_INET && f != AF_INET6) continue;
    const void *a = f == AF_INET ? (const void *) &((struct sockaddr_in *) i->ifa_addr)->sin_addr
                                 : (const void *) &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr;
    uint8_t norm[16];
    normalise(&f, a, norm);
    p->host_addrs[p->n_host_addrs].family = f;
    memcpy(p->host_addrs[p->n_host_addrs++].addr, norm, 16);
  }
  freeifaddrs(ifa);
  return 0;
}

bool an_egress_entry_has_port(const struct an_egress_entry *e, uint16_t port) {
  if (port == 0) return true;
  for (size_t i = 0; i < e->n_ports; i++)
    if (port >= e->ports[i].lo && port <= e->ports[i].hi) return true;
  return false;
}

/* name lower-cased without a trailing dot into buf; false if it cannot be a name */
static bool canon_name(const char *name, char *buf, size_t cap) {
  size_t n = name ? strlen(name) : 0;
  if (n && name[n - 1] == '.') n--;
  if (n == 0 || n >= cap) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (c >= 'A' && c <= 'Z') c = (char) (c - 'A' + 'a');
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.')) return false;
    buf[i] = c;
  }
  buf[n] = 0;
  return true;
}

bool an_egress_name_allowed(const struct an_egress_policy *p, const char *name, uint16_t port,
                            const char **rule) {
  const char *dummy;
  if (!rule) rule = &dummy;
  char n[256];
  if (p->mode == AN_EGRESS_NONE) {
    *rule = "mode none";
    return false;
  }
  if (!canon_name(name, n, sizeof n)) {
    *rule = "not a host name";
    return false;
  }
  if (p->mode == AN_EGRESS_FULL) {
    *rule = "mode full";
    return true;
  }
  size_t nl = strlen(n);
  for (size_t i = 0; i < p->n_entries; i++) {
    const struct an_egress_entry *e = &p->entries[i];
    bool hit = false;
    if (e->kind == AN_EGRESS_NAME) hit = strcmp(e->name, n) == 0;
    else if (e->kind == AN_EGRESS_SUFFIX) {
      size_t zl = strlen(e->name);
      hit = nl > zl + 1 && n[nl - zl - 1] == '.' && strcmp(n + nl - zl, e->name) == 0;
    }
    if (hit && an_egress_entry_has_port(e, port)) {
      *rule = e->text;
      return true;
    }
  }
  *rule = "not in the allowlist";
  return false;
}

/* A CIDR entry containing a (normalised) with the port, at least `min_prefix` long. */
static const struct an_egress_entry *cidr_entry(const struct an_egress_policy *p, int family,
                                                const uint8_t *a, uint16_t port, unsigned min_prefix,
                                                bool need_port_listed) {
  for (size_t i = 0; i < p->n_entries; i++) {
    const struct an_egress_entry *e = &p->entries[i];
    if (e->kind != AN_EGRESS_CIDR || e->family != family || e->prefix < min_prefix) continue;
    if (!prefix_match(e->addr, e->prefix, a) || !an_egress_entry_has_port(e, port)) continue;
    if (need_port_listed && !e->ports_given) continue;
    return e;
  }
  return NULL;
}

/* the deny range (or host address) holding a; its prefix in *prefix */
static const char *deny_match(const struct an_egress_policy *p, int family, const uint8_t *a,
                              unsigned *prefix) {
  for (size_t i = 0; i < sizeof deny_ranges / sizeof deny_ranges[0]; i++)
    if (deny_ranges[i].family == family && prefix_match(deny_ranges[i].addr, deny_ranges[i].prefix, a)) {
      *prefix = deny_ranges[i].prefix;
      return deny_ranges[i].what;
    }
  for (size_t i = 0; i < p->n_host_addrs; i++)
    if (p->host_addrs[i].family == family && memcmp(p->host_addrs[i].addr, a, family == AF_INET ? 4 : 16) == 0) {
      *prefix = family == AF_INET ? 32 : 128;
      return "deny the host's own address";
    }
  return NULL;
}

bool an_egress_addr_denied(const struct an_egress_policy *p, int family, const void *addr,
                           uint16_t port, const char **rule) {
  const char *dummy;
  if (!rule) rule = &dummy;
  uint8_t a[16];
  normalise(&family, addr, a);
  unsigned prefix = 0;
  const char *what = deny_match(p, family, a, &prefix);
  if (what && !cidr_entry(p, family, a, port, prefix, false)) {
    *rule = what;
    return true;
  }
  if (port == 25 && !cidr_entry(p, family, a, 25, 0, true)) {
    *rule = "deny tcp port 25 (mail submission from sandboxes)";
    return true;
  }
  return false;
}

int an_egress_dest_allowed(const struct an_egress_policy *p, int family, const void *addr,
                           uint16_t port, const char *name_or_null, const char **rule) {
  const char *dummy;
  if (!rule) rule = &dummy;
  if (family != AF_INET && family != AF_INET6) {
    *rule = "not an IP address";
    return 0;
  }
  if (p->mode == AN_EGRESS_NONE) {
    *rule = "mode none";
    return 0;
  }
  if (an_egress_addr_denied(p, family, addr, port, rule)) return 0;
  if (p->mode == AN_EGRESS_FULL) {
    *rule = "mode full";
    return 1;
  }
  uint8_t a[16];
  normalise(&family, addr, a);
  const struct an_egress_entry *e = cidr_entry(p, family, a, port, 0, false);
  if (e) {
    *rule = e->text;
    return 1;
  }
  if (name_or_null && an_egress_name_allowed(p, name_or_null, port, rule)) return 1;
  *rule = "not in the allowlist";
  return 0;
}
