/* net/ruleset.c — build the sandbox's nft script from its egress policy and
 * load it, update it, add DNS answers and read counters with libnftables in
 * the sandbox's netns (see ruleset.h; nft(8)). */
#include <arpa/inet.h>
#include <errno.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "net/netns.h"
#include "net/ruleset.h"
#include "util/cleanup.h"
#include "util/json_tree.h"

#define T "inet " AN_RULESET_TABLE

static void put_addr(FILE *f, int family, const uint8_t *a, unsigned prefix) {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(family, a, buf, sizeof buf);
  if (prefix == (family == AF_INET ? 32u : 128u)) fprintf(f, "%s", buf);
  else fprintf(f, "%s/%u", buf, prefix);
}

/* ports as one nft set literal, overlapping ranges merged: "{ 80, 443, 8000-8100 }" */
static void put_ports(FILE *f, const struct an_port_range *const *ranges, const size_t *counts, size_t n) {
  uint64_t bits[65536 / 64] = {0};
  for (size_t k = 0; k < n; k++)
    for (size_t i = 0; i < counts[k]; i++)
      for (unsigned p = ranges[k][i].lo; p <= ranges[k][i].hi; p++) bits[p / 64] |= 1ull << (p % 64);
  fputs("{ ", f);
  bool first = true;
  for (unsigned p = 1; p < 65536;) {
    if (!(bits[p / 64] & (1ull << (p % 64)))) {
      p++;
      continue;
    }
    unsigned q = p;
    while (q + 1 < 65536 && (bits[(q + 1) / 64] & (1ull << ((q + 1) % 64)))) q++;
    fprintf(f, "%s%u", first ? "" : ", ", p);
    if (q > p) fprintf(f, "-%u", q);
    first = false;
    p = q + 1;
  }
  fputs(" }", f);
}

static bool prefix_in(const uint8_t *net, unsigned prefix, const uint8_t *a) {
  unsigned full = prefix / 8, rest = prefix % 8;
  if (memcmp(net, a, full) != 0) return false;
  return !rest || ((net[full] ^ a[full]) & (uint8_t) (0xff << (8 - rest))) == 0;
}

/* does the CIDR entry lie inside a deny range or name a host address? */
static bool entry_inside_deny(const struct an_egress_policy *p, const struct an_egress_entry *e) {
  int fam;
  const uint8_t *a;
  unsigned pre;
  const char *what;
  for (size_t i = 0; an_egress_deny_range(i, &fam, &a, &pre, &what); i++)
    if (fam == e->family && pre <= e->prefix && prefix_in(a, pre, e->addr)) return true;
  for (size_t i = 0; i < p->n_host_addrs; i++)
    if (p->host_addrs[i].family == e->family && e->prefix == (e->family == AF_INET ? 32u : 128u) &&
        memcmp(p->host_addrs[i].addr, e->addr, e->family == AF_INET ? 4 : 16) == 0)
      return true;
  return false;
}

static void put_deny_elements(FILE *f, const struct an_egress_policy *p, int family) {
  int fam;
  const uint8_t *a;
  unsigned pre;
  const char *what;
  bool first = true;
  for (size_t i = 0; an_egress_deny_range(i, &fam, &a, &pre, &what); i++) {
    if (fam != family) continue;
    fputs(first ? "" : ", ", f);
    put_addr(f, fam, a, pre);
    first = false;
  }
  for (size_t i = 0; i < p->n_host_addrs; i++) {
    if (p->host_addrs[i].family != family) continue;
    fputs(", ", f);
    put_addr(f, family, p->host_addrs[i].addr, family == AF_INET ? 32 : 128);
  }
}

static void put_cidr_rule(FILE *f, const struct an_egress_policy *p, const struct an_egress_entry *e,
                          uint16_t port) {
  const char *ip = e->family == AF_INET ? "ip" : "ip6";
  fprintf(f, "add rule " T " nat_out %s daddr ", ip);
  put_addr(f, e->family, e->addr, e->prefix);
  if (!entry_inside_deny(p, e)) fprintf(f, " %s daddr != @deny%c", ip, e->family == AF_INET ? '4' : '6');
  fputs(" tcp dport ", f);
  const struct an_port_range *r = e->ports;
  size_t n = e->n_ports;
  put_ports(f, &r, &n, 1);
  fprintf(f, " counter name redirected redirect to :%u\n", port);
}

static void put_rules(FILE *f, const struct an_egress_policy *p, uint16_t port) {
  fputs("add rule " T " nat_out oifname \"lo\" return\n", f);
  fputs("add rule " T " nat_out meta l4proto != tcp return\n", f);
  for (size_t i = 0; i < p->n_entries; i++)
    if (p->entries[i].kind == AN_EGRESS_CIDR) put_cidr_rule(f, p, &p->entries[i], port);
  fputs("add rule " T " nat_out tcp dport 25 return\n", f);
  if (p->mode == AN_EGRESS_FULL) {
    fprintf(f, "add rule " T " nat_out ip daddr != @deny4 meta l4proto tcp counter name redirected redirect to :%u\n", port);
    fprintf(f, "add rule " T " nat_out ip6 daddr != @deny6 meta l4proto tcp counter name redirected redirect to :%u\n", port);
  } else {
    const struct an_port_range *ranges[AN_EGRESS_MAX_ENTRIES];
    size_t counts[AN_EGRESS_MAX_ENTRIES], n = 0;
    for (size_t i = 0; i < p->n_entries; i++)
      if (p->entries[i].kind != AN_EGRESS_CIDR) {
        ranges[n] = p->entries[i].ports;
        counts[n++] = p->entries[i].n_ports;
      }
    if (n) {
      for (int v = 4; v <= 6; v += 2) {
        fprintf(f, "add rule " T " nat_out %s daddr @dyn%d %s daddr != @deny%d tcp dport ",
                v == 4 ? "ip" : "ip6", v, v == 4 ? "ip" : "ip6", v);
        put_ports(f, ranges, counts, n);
        fprintf(f, " counter name redirected redirect to :%u\n", port);
      }
    }
  }
  fputs("add rule " T " filter_out udp dport 53 oifname \"lo\" counter name dns accept\n", f);
  fputs("add rule " T " filter_out tcp dport 53 oifname \"lo\" counter name dns accept\n", f);
  fputs("add rule " T " filter_out oifname \"lo\" accept\n", f);
  /* redirected by nat_out (the only NAT in this netns): the output hook's
   * oif is still the pre-NAT route's (eth0) here, so match the conntrack */
  fputs("add rule " T " filter_out ct status dnat accept\n", f);
  fputs("add rule " T " filter_out limit rate 10/second burst 20 packets log prefix \"agentnest-drop \"\n", f);
  /* TCP gets a reset (connect fails at once with ECONNREFUSED instead of
   * retrying a dropped SYN for minutes); the rest is dropped (sendto: EPERM) */
  fputs("add rule " T " filter_out meta l4proto tcp counter name dropped reject with tcp reset\n", f);
  fputs("add rule " T " filter_out counter name dropped drop\n", f);
}

int an_ruleset_text(const struct an_egress_policy *p, uint16_t proxy_port, bool create, char **out,
                    an_error_t *err) {
  if (p->mode == AN_EGRESS_NONE) return an_error_set(err, EINVAL, "ruleset: mode none has no egress ruleset");
  if (proxy_port == 0) return an_error_set(err, EINVAL, "ruleset: proxy port 0");
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return an_error_set(err, ENOMEM, "ruleset text");
  if (create) {
    fputs("add table " T "\n", f);
    for (int v = 4; v <= 6; v += 2) {
      fprintf(f, "add set " T " deny%d { type ipv%d_addr; flags interval; auto-merge; elements = { ", v, v);
      put_deny_elements(f, p, v == 4 ? AF_INET : AF_INET6);
      fputs(" }; }\n", f);
      fprintf(f, "add set " T " dyn%d { type ipv%d_addr; flags timeout; }\n", v, v);
    }
    fputs("add counter " T " redirected\nadd counter " T " dropped\nadd counter " T " dns\n", f);
    fputs("add chain " T " nat_out { type nat hook output priority -100; policy accept; }\n", f);
    fputs("add chain " T " filter_out { type filter hook output priority 0; policy drop; }\n", f);
  } else {
    fputs("flush chain " T " nat_out\nflush chain " T " filter_out\n", f);
    fputs("flush set " T " dyn4\nflush set " T " dyn6\n", f);
  }
  put_rules(f, p, proxy_port);
  if (fclose(f) != 0 || !buf) {
    free(buf);
    return an_error_set(err, ENOMEM, "ruleset text");
  }
  *out = buf;
  return 0;
}

struct nft_job {
  const char *script;
  bool json_output;
  char *output;     /* heap copy of the output buffer */
  const char *what; /* for messages */
  bool exists;      /* the command failed with "File exists" */
};

static int nft_run(void *ctx, an_error_t *err) {
  struct nft_job *j = ctx;
  struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);
  if (!nft) return an_error_set(err, ENOMEM, "nftables: %s: context", j->what);
  nft_ctx_buffer_error(nft);
  nft_ctx_buffer_output(nft);
  if (j->json_output) nft_ctx_output_set_flags(nft, NFT_CTX_OUTPUT_JSON);
  int r = 0;
  if (nft_run_cmd_from_buffer(nft, j->script) != 0) {
    const char *msg = nft_ctx_get_error_buffer(nft);
    j->exists = msg && strstr(msg, "File exists");
    r = an_error_set(err, EIO, "nftables: %s: %s", j->what, msg && *msg ? msg : "failed");
  } else if (j->json_output) {
    const char *o = nft_ctx_get_output_buffer(nft);
    if (!(j->output = strdup(o ? o : ""))) r = an_error_set(err, ENOMEM, "nftables: %s", j->what);
  }
  nft_ctx_free(nft);
  return r;
}

static int run_script(const char *netns_path, const char *script, const char *what, an_error_t *err) {
  struct nft_job j = {.script = script, .what = what};
  return an_netns_run_in(netns_path, nft_run, &j, err);
}

int an_ruleset_load(const char *netns_path, const struct an_egress_policy *p, uint16_t proxy_port,
                    an_error_t *err) {
  cleanup_free char *script = NULL;
  int r = an_ruleset_text(p, proxy_port, true, &script, err);
  return r < 0 ? r : run_script(netns_path, script, "load the sandbox ruleset", err);
}

int an_ruleset_load_here(const struct an_egress_policy *p, uint16_t proxy_port, an_error_t *err) {
  cleanup_free char *script = NULL;
  int r = an_ruleset_text(p, proxy_port, true, &script, err);
  struct nft_job j = {.script = script, .what = "load the sandbox ruleset"};
  return r < 0 ? r : nft_run(&j, err);
}

int an_ruleset_update(const char *netns_path, const struct an_egress_policy *p, uint16_t proxy_port,
                      an_error_t *err) {
  cleanup_free char *script = NULL;
  int r = an_ruleset_text(p, proxy_port, false, &script, err);
  return r < 0 ? r : run_script(netns_path, script, "change the sandbox ruleset", err);
}

int an_ruleset_add_addr(const char *netns_path, int family, const void *addr, uint32_t ttl_s,
                        an_error_t *err) {
  if ((family != AF_INET && family != AF_INET6) || ttl_s == 0)
    return an_error_set(err, EINVAL, "ruleset: add address: bad family or ttl 0");
  if (ttl_s > AN_RULESET_TTL_CAP_S) ttl_s = AN_RULESET_TTL_CAP_S;
  char a[INET6_ADDRSTRLEN], script[256];
  inet_ntop(family, addr, a, sizeof a);
  int v = family == AF_INET ? 4 : 6;
  snprintf(script, sizeof script, "create element " T " dyn%d { %s timeout %us }\n", v, a, ttl_s);
  struct nft_job j = {.script = script, .what = "admit a DNS answer"};
  an_error_t first = NULL;
  int r = an_netns_run_in(netns_path, nft_run, &j, &first);
  if (r >= 0 || !j.exists) {
    if (r < 0) *err = first;
    return r;
  }
  an_error_free(&first);
  /* there already: a new timeout, atomically (the element is never absent) */
  snprintf(script, sizeof script, "delete element " T " dyn%d { %s }\nadd element " T " dyn%d { %s timeout %us }\n",
           v, a, v, a, ttl_s);
  return run_script(netns_path, script, "refresh a DNS answer", err);
}

int an_ruleset_counters(const char *netns_path, struct an_ruleset_counters *out, an_error_t *err) {
  *out = (struct an_ruleset_counters){0};
  struct nft_job j = {.script = "list counters table " T "\n", .json_output = true, .what = "read counters"};
  int r = an_netns_run_in(netns_path, nft_run, &j, err);
  if (r < 0) return r;
  yajl_val root = NULL;
  r = an_json_parse(j.output, strlen(j.output), "nft counters", &root, err);
  free(j.output);
  if (r < 0) return r;
  yajl_val list = an_json_member_type(root, "nftables", yajl_t_array);
  for (size_t i = 0; list && i < list->u.array.len; i++) {
    yajl_val c = an_json_member_type(list->u.array.values[i], "counter", yajl_t_object);
    const char *name = c ? an_json_member_str(c, "name") : NULL;
    yajl_val pk = c ? an_json_member(c, "packets") : NULL, by = c ? an_json_member(c, "bytes") : NULL;
    if (!name || !pk || !by || !YAJL_IS_INTEGER(pk) || !YAJL_IS_INTEGER(by)) continue;
    uint64_t packets = (uint64_t) YAJL_GET_INTEGER(pk), bytes = (uint64_t) YAJL_GET_INTEGER(by);
    if (strcmp(name, "redirected") == 0) out->redirected_packets = packets, out->redirected_bytes = bytes;
    else if (strcmp(name, "dropped") == 0) out->dropped_packets = packets, out->dropped_bytes = bytes;
    else if (strcmp(name, "dns") == 0) out->dns_packets = packets, out->dns_bytes = bytes;
  }
  yajl_tree_free(root);
  return 0;
}
