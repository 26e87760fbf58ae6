/* net/dnsfilter.c — the DNS filter's sockets and event loop (see
 * net/dnsfilter.h): the caller's UDP and TCP listeners, one connected UDP
 * socket per pending upstream query (random ID, random source port: only
 * the upstream's address can answer it), TCP clients, and one timerfd for
 * every deadline, all in one epoll set.  Message policy is net/dns_msg.c's.
 *
 * Events are taken from epoll one at a time (maxevents 1), so freeing an
 * object while handling one event can never leave a stale pointer in a
 * batch still to be handled. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "net/dnsfilter.h"
#include "net/dns_msg.h"
#include "util/cleanup.h"

#define MAX_UPSTREAMS 8
#define TCP_OUT_MAX   (256u * 1024)   /* queued answers to one TCP client */
#define DISPATCH_MAX  512             /* events handled per dispatch call */

enum ep_kind { EP_UDP, EP_TCP_LISTEN, EP_TIMER, EP_UPSTREAM, EP_TCP_CLIENT };
struct ep { enum ep_kind kind; void *obj; };

struct tcp_client;

/* Where a query came from, to answer it. */
struct peer {
  struct sockaddr_storage addr;      /* UDP */
  socklen_t addrlen;
  struct tcp_client *tcp;            /* TCP, or NULL */
};

struct query {
  struct ep ep;
  struct query *prev, *next;
  int fd;                            /* connected UDP socket to the upstream */
  uint16_t up_id;
  unsigned tries, upstream;
  uint64_t deadline;                 /* CLOCK_MONOTONIC ms */
  struct peer peer;
  struct an_dns_q q;
  bool via_tcp;                      /* retried over TCP after a truncated UDP answer */
  uint8_t *tcp_buf;                  /* TCP: the query to write, then the answer read */
  size_t tcp_len, tcp_off;
  bool tcp_sent;
};

struct tcp_client {
  struct ep ep;
  struct tcp_client *prev, *next;
  int fd;
  uint8_t *in;                       /* 2 + 65535 bytes */
  size_t in_len;
  uint8_t *out;
  size_t out_len, out_off;
  struct query *pending;             /* one query at a time per connection */
  uint64_t deadline;
  bool reading;                      /* EPOLLIN registered */
  bool processing;                   /* inside tcp_process (no re-entry) */
};

struct an_dnsfilter {
  int epfd, timerfd, udp_fd, tcp_fd;
  struct ep ep_udp, ep_tcp, ep_timer;
  struct an_net_hooks hooks;
  struct an_dnsfilter_limits lim;
  struct sockaddr_storage up[MAX_UPSTREAMS];
  size_t n_up;
  struct query *queries;
  unsigned n_queries;
  struct tcp_client *clients;
  unsigned n_clients;
  struct an_dnsfilter_stats stats;
  uint8_t buf[65535];
};

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void emit(struct an_dnsfilter *f, const struct an_dns_q *q, enum an_net_verdict v, int rcode,
                 unsigned naddrs, const char *reason) {
  if (!f->hooks.event) return;
  struct an_net_event ev = {.kind = AN_NET_EV_DNS, .verdict = v, .name = q && q->pkt ? q->name : NULL,
                            .qtype = q ? q->qtype : 0, .rcode = rcode, .naddrs = naddrs, .reason = reason};
  f->hooks.event(f->hooks.ctx, &ev);
}

/* ---- sending answers ---- */

static void tcp_client_close(struct an_dnsfilter *f, struct tcp_client *c);

static void tcp_flush(struct an_dnsfilter *f, struct tcp_client *c) {
  while (c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) { tcp_client_close(f, c); return; }
    c->out_off += (size_t) n;
  }
  if (c->out_off == c->out_len) c->out_off = c->out_len = 0;
  struct epoll_event ev = {.events = (c->reading ? EPOLLIN : 0) | (c->out_len ? EPOLLOUT : 0),
                           .data.ptr = &c->ep};
  epoll_ctl(f->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void send_answer(struct an_dnsfilter *f, const struct peer *p, const uint8_t *w, size_t n) {
  if (!p->tcp) {
    if (!p->addrlen) return;          /* its TCP client went away meanwhile */
    /* A lost UDP answer is the client's to retry. */
    (void) sendto(f->udp_fd, w, n, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *) &p->addr,
                  p->addrlen);
    return;
  }
  struct tcp_client *c = p->tcp;
  if (c->out_len + 2 + n > TCP_OUT_MAX) { tcp_client_close(f, c); return; }   /* a client that never reads */
  uint8_t *o = realloc(c->out, c->out_len + 2 + n);
  if (!o) { tcp_client_close(f, c); return; }
  c->out = o;
  o[c->out_len] = (uint8_t) (n >> 8);
  o[c->out_len + 1] = (uint8_t) n;
  memcpy(o + c->out_len + 2, w, n);
  c->out_len += 2 + n;
  tcp_flush(f, c);
}

static void answer_local(struct an_dnsfilter *f, const struct peer *p, const struct an_dns_q *q,
                         uint8_t rcode) {
  cleanup_free uint8_t *w = NULL;
  size_t n = 0;
  if (an_dns_local_reply(q, rcode, &w, &n) == 0) send_answer(f, p, w, n);
}

/* ---- timer ---- */

static void arm_timer(struct an_dnsfilter *f) {
  uint64_t next = 0;
  for (struct query *q = f->queries; q; q = q->next)
    if (!next || q->deadline < next) next = q->deadline;
  for (struct tcp_client *c = f->clients; c; c = c->next)
    if (!c->pending && (!next || c->deadline < next)) next = c->deadline;
  struct itimerspec its = {0};
  if (next) {
    its.it_value.tv_sec = (time_t) (next / 1000);
    its.it_value.tv_nsec = (long) (next % 1000) * 1000000;
  }
  timerfd_settime(f->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* ---- queries ---- */

static void tcp_resume(struct an_dnsfilter *f, struct tcp_client *c);

static void query_free(struct an_dnsfilter *f, struct query *q) {
  if (q->fd >= 0) { epoll_ctl(f->epfd, EPOLL_CTL_DEL, q->fd, NULL); close(q->fd); }
  if (q->prev) q->prev->next = q->next; else f->queries = q->next;
  if (q->next) q->next->prev = q->prev;
  f->n_queries--;
  struct tcp_client *c = q->peer.tcp;
  an_dns_q_clear(&q->q);
  free(q->tcp_buf);
  free(q);
  if (c) {
    c->pending = NULL;
    if (!c->processing) tcp_resume(f, c);   /* else tcp_process's loop goes on */
  }
}

/* (Re)send q to upstream number q->upstream with a fresh socket and ID. */
static int query_send(struct an_dnsfilter *f, struct query *q) {
  if (q->fd >= 0) { epoll_ctl(f->epfd, EPOLL_CTL_DEL, q->fd, NULL); close(q->fd); q->fd = -1; }
  const struct sockaddr_storage *up = &f->up[q->upstream % f->n_up];
  socklen_t alen = up->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  if (getrandom(&q->up_id, sizeof q->up_id, 0) != sizeof q->up_id) return -EIO;
  cleanup_free uint8_t *w = NULL;
  size_t n = 0;
  if (an_dns_upstream_query(&q->q, q->up_id, &w, &n) < 0) return -ENOMEM;
  q->fd = socket(up->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (q->fd < 0) return -errno;
  if (connect(q->fd, (const struct sockaddr *) up, alen) < 0) return -errno;
  if (send(q->fd, w, n, MSG_NOSIGNAL) != (ssize_t) n) return -EIO;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &q->ep};
  if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, q->fd, &ev) < 0) return -errno;
  q->tries++;
  q->deadline = now_ms() + f->lim.timeout_ms;
  return 0;
}

static void query_fail(struct an_dnsfilter *f, struct query *q, const char *reason) {
  answer_local(f, &q->peer, &q->q, LDNS_RCODE_SERVFAIL);
  f->stats.servfail++;
  emit(f, &q->q, AN_NET_ERROR, LDNS_RCODE_SERVFAIL, 0, reason);
  query_free(f, q);
}

/* A client message: policy, then a local answer or an upstream query. */
static void handle_message(struct an_dnsfilter *f, const uint8_t *w, size_t n, const struct peer *p) {
  f->stats.queries++;
  struct query *q = calloc(1, sizeof *q);
  if (!q) return;
  q->ep = (struct ep) {EP_UPSTREAM, q};
  q->fd = -1;
  q->peer = *p;
  int r = an_dns_q_parse(w, n, &q->q);
  if (p->tcp) q->q.udp_max = 65535;       /* no UDP size limit over TCP (RFC 7766) */
  const char *reason = NULL;
  int rcode = -1;
  enum an_net_verdict v = AN_NET_ERROR;
  if (r < 0) {
    f->stats.malformed++;
    reason = "not a DNS query";
  } else if (r > 0) {
    f->stats.malformed++;
    rcode = r;
    reason = r == LDNS_RCODE_REFUSED ? "class not IN" : "malformed query";
    if (r == LDNS_RCODE_REFUSED) { v = AN_NET_DENY; f->stats.refused++; }
  } else if (!q->q.name[0] || !f->hooks.name_allowed ||
             !f->hooks.name_allowed(f->hooks.ctx, q->q.name, 0)) {
    /* BL-37: answered here; nothing about this name leaves the host. */
    f->stats.refused++;
    v = AN_NET_DENY, rcode = LDNS_RCODE_REFUSED, reason = "name not allowed";
  } else {
    enum an_dns_type_action a = an_dns_type_action(q->q.qtype);
    if (a == AN_DNS_REFUSE) {
      f->stats.refused++;
      v = AN_NET_DENY, rcode = LDNS_RCODE_REFUSED, reason = "query type not forwarded";
    } else if (a == AN_DNS_NODATA) {
      f->stats.allowed++;
      v = AN_NET_ALLOW, rcode = LDNS_RCODE_NOERROR, reason = "HTTPS/SVCB answered empty";
    } else if (f->n_queries >= f->lim.max_pending) {
      f->stats.servfail++;
      rcode = LDNS_RCODE_SERVFAIL, reason = "pending query limit";
    } else {
      q->next = f->queries;
      if (q->next) q->next->prev = q;
      f->queries = q;
      f->n_queries++;
      if (p->tcp) p->tcp->pending = q;
      int e = query_send(f, q);
      if (e < 0) query_fail(f, q, "upstream send failed");
      return;
    }
  }
  if (rcode >= 0) answer_local(f, p, &q->q, (uint8_t) rcode);
  emit(f, &q->q, v, rcode, 0, reason);
  an_dns_q_clear(&q->q);
  free(q);
}

static int add_addr_hook(void *ctx, const char *name, int family, const void *addr, uint32_t ttl) {
  struct an_dnsfilter *f = ctx;
  if (!f->hooks.add_addr) return -ENOSYS;
  return f->hooks.add_addr(f->hooks.ctx, name, family, addr, ttl);
}

/* An upstream message for q: 0 answered (q freed), 1 not ours. */
static int deliver(struct an_dnsfilter *f, struct query *q, const uint8_t *m, size_t n) {
  cleanup_free uint8_t *w = NULL;
  size_t len = 0;
  unsigned naddrs = 0;
  int r = an_dns_answer(&q->q, m, n, q->up_id, f->lim.ttl_cap_s, f->lim.ttl_floor_s,
                        add_addr_hook, f, &w, &len, &naddrs);
  if (r == 1) return 1;
  if (r < 0) { query_fail(f, q, r == -EIO ? "add_addr failed" : "out of memory"); return 0; }
  f->stats.allowed++;
  f->stats.addrs_added += naddrs;
  send_answer(f, &q->peer, w, len);
  emit(f, &q->q, AN_NET_ALLOW, len > 3 ? (w[3] & 0x0f) : 0, naddrs, "resolved upstream");
  query_free(f, q);
  return 0;
}

/* A truncated UDP answer: ask the same upstream again over TCP (RFC 7766),
 * once; a failure or timeout there is SERVFAIL. */
static int query_send_tcp(struct an_dnsfilter *f, struct query *q) {
  epoll_ctl(f->epfd, EPOLL_CTL_DEL, q->fd, NULL);
  close(q->fd);
  const struct sockaddr_storage *up = &f->up[q->upstream % f->n_up];
  socklen_t alen = up->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  cleanup_free uint8_t *w = NULL;
  size_t n = 0;
  if (an_dns_upstream_query(&q->q, q->up_id, &w, &n) < 0) return -ENOMEM;
  q->tcp_buf = malloc(2 + 65535);
  if (!q->tcp_buf) return -ENOMEM;
  q->tcp_buf[0] = (uint8_t) (n >> 8);
  q->tcp_buf[1] = (uint8_t) n;
  memcpy(q->tcp_buf + 2, w, n);
  q->tcp_len = 2 + n;
  q->tcp_off = 0;
  q->via_tcp = true;
  q->tries = 2;                                    /* no further retry */
  q->fd = socket(up->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (q->fd < 0) return -errno;
  if (connect(q->fd, (const struct sockaddr *) up, alen) < 0 && errno != EINPROGRESS) return -errno;
  struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.ptr = &q->ep};
  if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, q->fd, &ev) < 0) return -errno;
  q->deadline = now_ms() + f->lim.timeout_ms;
  return 0;
}

static void upstream_tcp_event(struct an_dnsfilter *f, struct query *q, uint32_t events) {
  if (!q->tcp_sent) {
    while (q->tcp_off < q->tcp_len) {
      ssize_t n = send(q->fd, q->tcp_buf + q->tcp_off, q->tcp_len - q->tcp_off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EINPROGRESS)) return;
      if (n < 0) { query_fail(f, q, "upstream TCP failed"); return; }
      q->tcp_off += (size_t) n;
    }
    q->tcp_sent = true;
    q->tcp_len = 0;                                /* the buffer now collects the answer */
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &q->ep};
    epoll_ctl(f->epfd, EPOLL_CTL_MOD, q->fd, &ev);
  }
  for (;;) {
    size_t want = q->tcp_len < 2 ? 2 - q->tcp_len
                                 : 2 + ((size_t) q->tcp_buf[0] << 8 | q->tcp_buf[1]) - q->tcp_len;
    if (q->tcp_len >= 2 && want == 0) break;
    ssize_t n = recv(q->fd, q->tcp_buf + q->tcp_len, want, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) { query_fail(f, q, "upstream TCP failed"); return; }
    q->tcp_len += (size_t) n;
  }
  if (deliver(f, q, q->tcp_buf + 2, q->tcp_len - 2) == 1) query_fail(f, q, "upstream TCP answer not ours");
}

static void upstream_readable(struct an_dnsfilter *f, struct query *q, uint32_t events) {
  if (q->via_tcp) { upstream_tcp_event(f, q, events); return; }
  for (;;) {
    ssize_t n = recv(q->fd, f->buf, sizeof f->buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      /* ECONNREFUSED (ICMP port unreachable) and the like: try the next. */
      q->upstream++;
      if (q->tries >= 2 || query_send(f, q) < 0) query_fail(f, q, "upstream unreachable");
      return;
    }
    if (n >= LDNS_HEADER_SIZE && LDNS_ID_WIRE(f->buf) == q->up_id && LDNS_QR_WIRE(f->buf) &&
        LDNS_TC_WIRE(f->buf)) {
      if (query_send_tcp(f, q) < 0) query_fail(f, q, "upstream TCP failed");
      return;
    }
    if (deliver(f, q, f->buf, (size_t) n) == 1) continue;   /* not ours: keep waiting */
    return;
  }
}

/* ---- listeners and TCP clients ---- */

static void udp_readable(struct an_dnsfilter *f) {
  for (int i = 0; i < 64; i++) {
    struct peer p = {.addrlen = sizeof p.addr};
    ssize_t n = recvfrom(f->udp_fd, f->buf, sizeof f->buf, MSG_DONTWAIT, (struct sockaddr *) &p.addr,
                         &p.addrlen);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;
    handle_message(f, f->buf, (size_t) n, &p);
  }
}

static void tcp_client_close(struct an_dnsfilter *f, struct tcp_client *c) {
  if (c->pending) { c->pending->peer.tcp = NULL; c->pending = NULL; }
  /* A query still pending for it is left to finish or time out; its answer
   * is then dropped (send_answer: no TCP client, no UDP address). */
  epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  if (c->prev) c->prev->next = c->next; else f->clients = c->next;
  if (c->next) c->next->prev = c->prev;
  f->n_clients--;
  free(c->in);
  free(c->out);
  free(c);
}

/* Handle the complete messages buffered, one at a time. */
static void tcp_process(struct an_dnsfilter *f, struct tcp_client *c) {
  while (!c->pending && c->in_len >= 2) {
    size_t mlen = (size_t) c->in[0] << 8 | c->in[1];
    if (mlen == 0) { tcp_client_close(f, c); return; }
    if (c->in_len < 2 + mlen) break;
    struct peer p = {.tcp = c};
    /* The message is copied: handling may close c (and its buffer). */
    uint8_t *m = malloc(mlen);
    if (!m) { tcp_client_close(f, c); return; }
    memcpy(m, c->in + 2, mlen);
    memmove(c->in, c->in + 2 + mlen, c->in_len - 2 - mlen);
    c->in_len -= 2 + mlen;
    unsigned before = f->n_clients;
    c->processing = true;
    handle_message(f, m, mlen, &p);
    free(m);
    /* handle_message may have closed the client (a full output queue). */
    if (f->n_clients != before) return;
    c->processing = false;
  }
}

static void tcp_set_reading(struct an_dnsfilter *f, struct tcp_client *c, bool on) {
  if (c->reading == on) return;
  c->reading = on;
  struct epoll_event ev = {.events = (on ? EPOLLIN : 0) | (c->out_len ? EPOLLOUT : 0), .data.ptr = &c->ep};
  epoll_ctl(f->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void tcp_resume(struct an_dnsfilter *f, struct tcp_client *c) {
  c->deadline = now_ms() + f->lim.tcp_idle_ms;
  unsigned before = f->n_clients;
  tcp_process(f, c);
  if (f->n_clients != before) return;
  tcp_set_reading(f, c, !c->pending && c->in_len < 2 + 65535);
}

static void tcp_client_event(struct an_dnsfilter *f, struct tcp_client *c, uint32_t events) {
  if (events & EPOLLOUT) {
    unsigned before = f->n_clients;
    tcp_flush(f, c);
    if (f->n_clients != before) return;
  }
  if (!c->reading) {
    /* Hung up while its query is pending: EPOLLHUP/ERR are reported even
     * unasked, so close now rather than spin. */
    if (events & (EPOLLHUP | EPOLLERR)) tcp_client_close(f, c);
    return;
  }
  if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
  size_t room = 2 + 65535 - c->in_len;
  ssize_t n = recv(c->fd, c->in + c->in_len, room, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) { tcp_client_close(f, c); return; }
  c->in_len += (size_t) n;
  tcp_resume(f, c);
}

static void tcp_accept(struct an_dnsfilter *f) {
  for (int i = 0; i < 16; i++) {
    int fd = accept4(f->tcp_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (f->n_clients >= f->lim.max_tcp_clients) {
      close(fd);
      emit(f, NULL, AN_NET_ERROR, -1, 0, "TCP client limit");
      continue;
    }
    struct tcp_client *c = calloc(1, sizeof *c);
    uint8_t *in = malloc(2 + 65535);
    if (!c || !in) { free(c); free(in); close(fd); continue; }
    c->ep = (struct ep) {EP_TCP_CLIENT, c};
    c->fd = fd;
    c->in = in;
    c->reading = true;
    c->deadline = now_ms() + f->lim.tcp_idle_ms;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &c->ep};
    if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) { free(in); free(c); close(fd); continue; }
    c->next = f->clients;
    if (c->next) c->next->prev = c;
    f->clients = c;
    f->n_clients++;
  }
}

static void timer_expired(struct an_dnsfilter *f) {
  uint64_t exp;
  (void) !read(f->timerfd, &exp, sizeof exp);
  uint64_t now = now_ms();
  for (struct query *q = f->queries, *next; q; q = next) {
    next = q->next;
    if (q->deadline > now) continue;
    q->upstream++;
    if (q->tries >= 2 || query_send(f, q) < 0) {
      query_fail(f, q, "upstream timeout");
      next = f->queries;                  /* the list may have changed: rescan */
    }
  }
  for (struct tcp_client *c = f->clients, *next; c; c = next) {
    next = c->next;
    if (c->deadline <= now && !c->pending) tcp_client_close(f, c);
  }
}

/* ---- public ---- */

static void apply_defaults(struct an_dnsfilter_limits *l) {
  if (!l->max_pending) l->max_pending = 256;
  if (!l->max_tcp_clients) l->max_tcp_clients = 32;
  if (!l->timeout_ms) l->timeout_ms = 2000;
  if (!l->tcp_idle_ms) l->tcp_idle_ms = 10000;
  if (!l->ttl_cap_s) l->ttl_cap_s = 300;
  if (!l->ttl_floor_s) l->ttl_floor_s = 30;
  if (l->ttl_floor_s > l->ttl_cap_s) l->ttl_floor_s = l->ttl_cap_s;
}

static int load_resolv_conf(struct an_dnsfilter *f, const char *path, an_error_t *err) {
  ldns_resolver *res = NULL;
  ldns_status st = ldns_resolver_new_frm_file(&res, path);
  if (st != LDNS_STATUS_OK || !res)
    return an_error_set(err, ENOENT, "DNS filter: read nameservers from %s: %s", path,
                        ldns_get_errorstr_by_id(st));
  ldns_rdf **ns = ldns_resolver_nameservers(res);
  for (size_t i = 0; i < ldns_resolver_nameserver_count(res) && f->n_up < MAX_UPSTREAMS; i++) {
    size_t sz = 0;
    struct sockaddr_storage *sa = ldns_rdf2native_sockaddr_storage(ns[i], 53, &sz);
    if (!sa) continue;
    f->up[f->n_up++] = *sa;
    free(sa);
  }
  ldns_resolver_deep_free(res);
  if (!f->n_up) return an_error_set(err, ENOENT, "DNS filter: no nameserver in %s", path);
  return 0;
}

static int check_socket(int fd, int type, const char *what, an_error_t *err) {
  int t = 0;
  socklen_t l = sizeof t;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &l) < 0)
    return an_error_set(err, errno == ENOTSOCK ? EINVAL : errno, "DNS filter: %s fd %d", what, fd);
  if (t != type) return an_error_set(err, EINVAL, "DNS filter: %s fd %d is not a %s socket", what, fd,
                                     type == SOCK_DGRAM ? "UDP" : "TCP");
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  return 0;
}

static int ep_add(struct an_dnsfilter *f, int fd, struct ep *ep, an_error_t *err) {
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ep};
  if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
    return an_error_set(err, errno, "DNS filter: epoll_ctl add fd %d", fd);
  return 0;
}

int an_dnsfilter_new(const struct an_dnsfilter_config *cfg, const struct an_net_hooks *hooks,
                     struct an_dnsfilter **out, an_error_t *err) {
  *out = NULL;
  struct an_dnsfilter *f = calloc(1, sizeof *f);
  if (!f) {
    if (cfg->udp_fd >= 0) close(cfg->udp_fd);
    if (cfg->tcp_fd >= 0) close(cfg->tcp_fd);
    return an_error_set(err, ENOMEM, "DNS filter: allocate");
  }
  f->udp_fd = cfg->udp_fd;
  f->tcp_fd = cfg->tcp_fd;
  f->epfd = f->timerfd = -1;
  f->hooks = *hooks;
  f->lim = cfg->limits;
  apply_defaults(&f->lim);
  f->ep_udp = (struct ep) {EP_UDP, f};
  f->ep_tcp = (struct ep) {EP_TCP_LISTEN, f};
  f->ep_timer = (struct ep) {EP_TIMER, f};
  int r = 0;
  if (f->udp_fd < 0 && f->tcp_fd < 0) {
    r = an_error_set(err, EINVAL, "DNS filter: neither a UDP nor a TCP listening socket given");
    goto fail;
  }
  if ((f->udp_fd >= 0 && (r = check_socket(f->udp_fd, SOCK_DGRAM, "UDP listener", err)) < 0) ||
      (f->tcp_fd >= 0 && (r = check_socket(f->tcp_fd, SOCK_STREAM, "TCP listener", err)) < 0))
    goto fail;
  if (cfg->upstreams) {
    for (size_t i = 0; i < cfg->n_upstreams && f->n_up < MAX_UPSTREAMS; i++) {
      int fam = cfg->upstreams[i].ss_family;
      if (fam != AF_INET && fam != AF_INET6) {
        r = an_error_set(err, EINVAL, "DNS filter: upstream %zu: address family %d is not IPv4 or IPv6", i, fam);
        goto fail;
      }
      f->up[f->n_up++] = cfg->upstreams[i];
    }
    if (!f->n_up) { r = an_error_set(err, EINVAL, "DNS filter: empty upstream list"); goto fail; }
  } else if ((r = load_resolv_conf(f, cfg->resolv_conf ? cfg->resolv_conf : "/etc/resolv.conf", err)) < 0) {
    goto fail;
  }
  f->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (f->epfd < 0) { r = an_error_set(err, errno, "DNS filter: epoll_create1"); goto fail; }
  f->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (f->timerfd < 0) { r = an_error_set(err, errno, "DNS filter: timerfd_create"); goto fail; }
  if ((r = ep_add(f, f->timerfd, &f->ep_timer, err)) < 0 ||
      (f->udp_fd >= 0 && (r = ep_add(f, f->udp_fd, &f->ep_udp, err)) < 0) ||
      (f->tcp_fd >= 0 && (r = ep_add(f, f->tcp_fd, &f->ep_tcp, err)) < 0))
    goto fail;
  *out = f;
  return 0;
fail:
  an_dnsfilter_free(f);
  return r;
}

int an_dnsfilter_fd(const struct an_dnsfilter *f) { return f->epfd; }

int an_dnsfilter_dispatch(struct an_dnsfilter *f, an_error_t *err) {
  for (int i = 0; i < DISPATCH_MAX; i++) {
    struct epoll_event ev;
    int n = epoll_wait(f->epfd, &ev, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return an_error_set(err, errno, "DNS filter: epoll_wait");
    if (n == 0) break;
    struct ep *ep = ev.data.ptr;
    switch (ep->kind) {
    case EP_UDP: udp_readable(f); break;
    case EP_TCP_LISTEN: tcp_accept(f); break;
    case EP_TIMER: timer_expired(f); break;
    case EP_UPSTREAM: upstream_readable(f, ep->obj, ev.events); break;
    case EP_TCP_CLIENT: tcp_client_event(f, ep->obj, ev.events); break;
    }
  }
  arm_timer(f);
  return 0;
}

void an_dnsfilter_stats(const struct an_dnsfilter *f, struct an_dnsfilter_stats *out) { *out = f->stats; }

void an_dnsfilter_free(struct an_dnsfilter *f) {
  if (!f) return;
  while (f->queries) { f->queries->peer.tcp = NULL; query_free(f, f->queries); }
  while (f->clients) tcp_client_close(f, f->clients);
  if (f->udp_fd >= 0) close(f->udp_fd);
  if (f->tcp_fd >= 0) close(f->tcp_fd);
  if (f->timerfd >= 0) close(f->timerfd);
  if (f->epfd >= 0) close(f->epfd);
  free(f);
}
