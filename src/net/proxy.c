/* net/proxy.c — the transparent TCP proxy (see net/proxy.h): accept a
 * redirected connection, learn its original destination from conntrack,
 * read the name it asks for on name-checked ports (net/sni.h), ask the
 * policy, connect from the dispatching thread's netns, then splice(2) both
 * ways.  One epoll set holds the listeners, a timerfd and every
 * connection's two sockets; events are taken one at a time (maxevents 1)
 * so that freeing a connection can never leave a stale pointer behind.
 * What does not live here: policy (the dest_allowed hook), the nft
 * `redirect` rule that brings connections here (the ruleset code). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "net/proxy.h"
#include "net/sni.h"

/* <linux/netfilter_ipv4.h> SO_ORIGINAL_DST and <linux/netfilter_ipv6/ip6_tables.h>
 * IP6T_SO_ORIGINAL_DST, both 80; defined here to keep the kernel headers,
 * which clash with glibc's <netinet/in.h>, out. */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

#define PIPE_BYTES   65536u          /* what one pipe holds by default (16 pages) */
#define DISPATCH_MAX 512

enum ep_kind { EP_LISTEN, EP_TIMER, EP_CLIENT, EP_SERVER };
struct ep { enum ep_kind kind; void *obj; };

enum conn_state { ST_NEW, ST_SNIFF, ST_CONNECTING, ST_SPLICE };

/* One direction of a spliced connection. */
struct dir {
  int pipe[2];
  size_t cap;                        /* what the pipe holds (F_GETPIPE_SZ) */
  size_t in_pipe;                    /* bytes read from src not yet written to dst */
  bool eof, shut;                    /* src gave EOF / dst was shut down for writing */
  uint64_t bytes;
};

struct conn {
  struct ep ep_c, ep_s;
  struct conn *prev, *next;
  int cfd, sfd;
  enum conn_state st;
  int family;
  struct sockaddr_storage dst;
  uint16_t port;
  uint8_t *sniff;                    /* first bytes read from the client */
  size_t sniff_len, sniff_sent;
  char name[AN_NET_NAME_BUF];
  bool has_name;
  const char *rule;                  /* NULL or rule_buf */
  char rule_buf[320];                /* the policy's rule text, copied: a live policy change
                                        (egress_run.c's reload) frees what the hook named */
  struct dir up, down;               /* client -> server, server -> client */
  uint64_t deadline;
};

struct an_proxy {
  int epfd, timerfd, lfd[2];
  struct ep ep_l[2], ep_timer;
  struct an_net_hooks hooks;
  struct an_proxy_limits lim;
  struct conn *conns;
  struct an_proxy_stats stats;
  uint64_t armed;                    /* the timer's expiry (ms, CLOCK_MONOTONIC), 0: none */
  bool sigpipe_ignored;
  bool paused[2];                    /* listener i is out of the epoll set's interest (accept failed) */
  uint64_t resume_at;                /* when paused listeners are polled again at the latest */
};

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static const void *dst_addr(const struct conn *c) {
  if (c->family == AF_INET) return &((const struct sockaddr_in *) &c->dst)->sin_addr;
  if (c->family == AF_INET6) return &((const struct sockaddr_in6 *) &c->dst)->sin6_addr;
  return NULL;
}

static void emit(struct an_proxy *p, const struct conn *c, enum an_net_event_kind kind,
                 enum an_net_verdict v, const char *reason) {
  if (v == AN_NET_DENY) p->stats.denied++;
  else if (v == AN_NET_ERROR && kind == AN_NET_EV_CONNECT) p->stats.errors++;
  else if (v == AN_NET_ALLOW && kind == AN_NET_EV_CONNECT) p->stats.allowed++;
  if (!p->hooks.event) return;
  struct an_net_event ev = {
    .kind = kind, .verdict = v, .name = c->has_name ? c->name : NULL, .rcode = -1,
    .family = c->family, .addr = dst_addr(c), .port = c->port, .rule = c->rule,
    .reason = reason, .bytes_out = c->up.bytes, .bytes_in = c->down.bytes,
  };
  p->hooks.event(p->hooks.ctx, &ev);
}

static void close_rst(int fd) {
  if (fd < 0) return;
  struct linger l = {1, 0};          /* RST: the client learns at once */
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

static int ep_set(struct an_proxy *p, int op, int fd, struct ep *ep, uint32_t events);

/* Poll the listeners that accept_one paused again. */
static void listeners_resume(struct an_proxy *p) {
  for (int i = 0; i < 2; i++)
    if (p->paused[i] && ep_set(p, EPOLL_CTL_MOD, p->lfd[i], &p->ep_l[i], EPOLLIN) == 0) p->paused[i] = false;
  if (!p->paused[0] && !p->paused[1]) p->resume_at = 0;
}

static void conn_free(struct an_proxy *p, struct conn *c, bool rst) {
  if (c->cfd >= 0) epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->cfd, NULL);
  if (c->sfd >= 0) epoll_ctl(p->epfd, EPOLL_CTL_DEL, c->sfd, NULL);
  if (rst) { close_rst(c->cfd); close_rst(c->sfd); }
  else { if (c->cfd >= 0) close(c->cfd); if (c->sfd >= 0) close(c->sfd); }
  struct dir *ds[2] = {&c->up, &c->down};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      if (ds[i]->pipe[j] >= 0) close(ds[i]->pipe[j]);
  if (c->prev) c->prev->next = c->next; else p->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  p->stats.active--;
  p->stats.bytes_out += c->up.bytes;
  p->stats.bytes_in += c->down.bytes;
  free(c->sniff);
  free(c);
  if (p->resume_at) listeners_resume(p);   /* an fd is free again */
}

/* Refuse (policy) or fail (error) a connection that was never spliced. */
static void conn_refuse(struct an_proxy *p, struct conn *c, enum an_net_verdict v, const char *reason) {
  emit(p, c, AN_NET_EV_CONNECT, v, reason);
  conn_free(p, c, true);
}

static void conn_end(struct an_proxy *p, struct conn *c, bool rst, const char *reason) {
  emit(p, c, AN_NET_EV_CLOSE, AN_NET_ALLOW, reason);
  conn_free(p, c, rst);
}

static int ep_set(struct an_proxy *p, int op, int fd, struct ep *ep, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = ep};
  return epoll_ctl(p->epfd, op, fd, &ev);
}

/* ---- splicing ---- */

/* Move what is ready from src through d's pipe to dst.  Returns 0, or -1
 * on a socket error, -2 when the byte cap is reached. */
static int pump_dir(struct an_proxy *p, struct conn *c, struct dir *d, int src, int dst) {
  for (;;) {
    bool progress = false;
    if (d->in_pipe > 0) {
      ssize_t n = splice(d->pipe[0], NULL, dst, NULL, d->in_pipe, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
      if (n > 0) { d->in_pipe -= (size_t) n; progress = true; }
      else if (n < 0 && errno != EAGAIN && errno != EINTR) return -1;
    }
    if (!d->eof && d->in_pipe < d->cap) {
      size_t want = d->cap - d->in_pipe;
      if (p->lim.max_bytes_per_conn) {
        if (d->bytes >= p->lim.max_bytes_per_conn) return -2;
        uint64_t left = p->lim.max_bytes_per_conn - d->bytes;
        if (left < want) want = (size_t) left;
      }
      ssize_t n = splice(src, NULL, d->pipe[1], NULL, want, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
      if (n > 0) { d->in_pipe += (size_t) n; d->bytes += (uint64_t) n; progress = true; }
      else if (n == 0) { d->eof = true; progress = true; }
      else if (errno != EAGAIN && errno != EINTR) return -1;
    }
    if (d->eof && d->in_pipe == 0 && !d->shut) {
      shutdown(dst, SHUT_WR);        /* half-close: the EOF travels on */
      d->shut = true;
    }
    if (!progress) return 0;
    c->deadline = now_ms() + p->lim.idle_timeout_ms;
  }
}

/* Move what is ready in the directions asked for: up (client -> server,
 * the sniffed bytes first) and down.  An edge-triggered event names which
 * can have moved: readable client or writable server for up, readable
 * server or writable client for down (each direction otherwise waits on
 * EAGAIN of one of those), so the other direction's splices, which would
 * only answer EAGAIN, are left out. */
static void pump_dirs(struct an_proxy *p, struct conn *c, bool up, bool down) {
  while (up && c->sniff_sent < c->sniff_len) {
    ssize_t n = send(c->sfd, c->sniff + c->sniff_sent, c->sniff_len - c->sniff_sent,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n < 0) { conn_end(p, c, true, "write to destination failed"); return; }
    c->sniff_sent += (size_t) n;
    c->up.bytes += (uint64_t) n;
  }
  int r = 0;
  if (up && c->sniff_sent == c->sniff_len) r = pump_dir(p, c, &c->up, c->cfd, c->sfd);
  if (r == 0 && down) r = pump_dir(p, c, &c->down, c->sfd, c->cfd);
  if (r == -1) { conn_end(p, c, true, "connection reset"); return; }
  if (r == -2) { conn_end(p, c, true, "byte cap reached"); return; }
  if (c->up.shut && c->down.shut) conn_end(p, c, false, "closed");
}

static void pump(struct an_proxy *p, struct conn *c) { pump_dirs(p, c, true, true); }

static void pump_event(struct an_proxy *p, struct conn *c, bool server, uint32_t events) {
  bool in = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
  bool out = events & (EPOLLOUT | EPOLLHUP | EPOLLERR);
  pump_dirs(p, c, server ? out : in, server ? in : out);
}

/* ---- the steps of a connection ---- */

static void connect_done(struct an_proxy *p, struct conn *c) {
  int e = 0;
  socklen_t l = sizeof e;
  if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &e, &l) < 0) e = errno;
  if (e) { conn_refuse(p, c, AN_NET_ERROR, e == ECONNREFUSED ? "connect: ECONNREFUSED" :
                                          e == ETIMEDOUT ? "connect: ETIMEDOUT" : "connect failed"); return; }
  for (int i = 0; i < 2; i++) {
    struct dir *d = i ? &c->down : &c->up;
    if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) < 0) { conn_refuse(p, c, AN_NET_ERROR, "pipe2 failed"); return; }
    /* a big pipe: fewer wakeups and splices per byte (a lower
     * pipe-max-size or the user's pipe quota keeps the default) */
    int sz = fcntl(d->pipe[1], F_SETPIPE_SZ, (int) AN_PROXY_PIPE_BYTES);
    if (sz < 0) sz = fcntl(d->pipe[1], F_GETPIPE_SZ);
    d->cap = sz > 0 ? (size_t) sz : PIPE_BYTES;
  }
  uint32_t et = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  if (ep_set(p, EPOLL_CTL_MOD, c->cfd, &c->ep_c, et) < 0 || ep_set(p, EPOLL_CTL_MOD, c->sfd, &c->ep_s, et) < 0) {
    conn_refuse(p, c, AN_NET_ERROR, "epoll_ctl failed");
    return;
  }
  c->st = ST_SPLICE;
  c->deadline = now_ms() + p->lim.idle_timeout_ms;
  emit(p, c, AN_NET_EV_CONNECT, AN_NET_ALLOW, "spliced");
  pump(p, c);
}

/* Ask the policy; on allow, start the outbound connect. */
static void decide(struct an_proxy *p, struct conn *c) {
  const char *rule = NULL;
  int allowed = p->hooks.dest_allowed &&
                p->hooks.dest_allowed(p->hooks.ctx, c->family, dst_addr(c), c->port,
                                      c->has_name ? c->name : NULL, &rule) == 1;
  c->rule = NULL;
  if (rule) {
    snprintf(c->rule_buf, sizeof c->rule_buf, "%s", rule);
    c->rule = c->rule_buf;
  }
  if (!allowed) {
    conn_refuse(p, c, AN_NET_DENY, c->has_name ? "name or destination not allowed"
                                               : "destination not allowed");
    return;
  }
  c->sfd = socket(c->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->sfd < 0) { conn_refuse(p, c, AN_NET_ERROR, "socket failed"); return; }
  socklen_t len = c->family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
  if (connect(c->sfd, (struct sockaddr *) &c->dst, len) < 0 && errno != EINPROGRESS) {
    conn_refuse(p, c, AN_NET_ERROR, errno == ENETUNREACH ? "connect: ENETUNREACH" : "connect failed");
    return;
  }
  c->deadline = now_ms() + p->lim.connect_timeout_ms;
  /* The client waits (no EPOLLIN; HUP/ERR still come and end it). */
  bool sniffed = c->st == ST_SNIFF;   /* the client fd is in the set already */
  c->st = ST_CONNECTING;
  if (ep_set(p, sniffed ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->cfd, &c->ep_c, 0) < 0 ||
      ep_set(p, EPOLL_CTL_ADD, c->sfd, &c->ep_s, EPOLLOUT) < 0)
    conn_refuse(p, c, AN_NET_ERROR, "epoll_ctl failed");
}

/* One request per plain-HTTP connection: only the first request's Host is
 * checked, so a second request on a kept-alive connection could name
 * another site on the same address.  A "Connection: close" field added at
 * the end of the first request's header block makes the server close after
 * answering it (RFC 9112 9.6: it MUST NOT process further requests; the
 * "close" option wins over keep-alive, RFC 9110 7.6.1). */
static int http_force_close(struct conn *c) {
  static const char field[] = "Connection: close\r\n";
  const size_t flen = sizeof field - 1;
  size_t end = 0;                      /* offset of the block's final CRLF */
  for (size_t i = 0; i + 4 <= c->sniff_len; i++)
    if (!memcmp(c->sniff + i, "\r\n\r\n", 4)) { end = i + 2; break; }
  if (!end) return -1;
  uint8_t *b = malloc(c->sniff_len + flen);
  if (!b) return -1;
  memcpy(b, c->sniff, end);
  memcpy(b + end, field, flen);
  memcpy(b + end + flen, c->sniff + end, c->sniff_len - end);
  free(c->sniff);
  c->sniff = b;
  c->sniff_len += flen;
  return 0;
}

static void sniff_readable(struct an_proxy *p, struct conn *c) {
  size_t cap = p->lim.sniff_max_bytes;
  if (!c->sniff && !(c->sniff = malloc(cap))) { conn_refuse(p, c, AN_NET_ERROR, "out of memory"); return; }
  ssize_t n = recv(c->cfd, c->sniff + c->sniff_len, cap - c->sniff_len, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) { conn_refuse(p, c, AN_NET_DENY, "closed before sending a name"); return; }
  c->sniff_len += (size_t) n;
  int r = c->sniff[0] == 22 ? an_tls_sni_parse(c->sniff, c->sniff_len, c->name, sizeof c->name)
                            : an_http_host_parse(c->sniff, c->sniff_len, c->name, sizeof c->name, NULL);
  if (r == AN_SNI_MORE) {
    if (c->sniff_len >= cap) conn_refuse(p, c, AN_NET_DENY, "no TLS SNI or HTTP Host within the byte cap");
    return;
  }
  if (r == AN_SNI_BAD) {
    conn_refuse(p, c, AN_NET_DENY, c->sniff[0] == 22 ? "malformed TLS ClientHello"
                                                     : "not TLS or a well-formed HTTP/1.x request");
    return;
  }
  c->has_name = r == AN_SNI_FOUND;
  if (c->sniff[0] != 22 && http_force_close(c) < 0) {
    conn_refuse(p, c, AN_NET_ERROR, "out of memory");
    return;
  }
  decide(p, c);
}

static bool is_loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *) ss)->sin_addr.s_addr) >> 24) == 127;
  const struct in6_addr *a = &((const struct sockaddr_in6 *) ss)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

static bool same_endpoint(const struct sockaddr_storage *a, const struct sockaddr_storage *b) {
  if (a->ss_family != b->ss_family) return false;
  if (a->ss_family == AF_INET) {
    const struct sockaddr_in *x = (const void *) a, *y = (const void *) b;
    return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
  }
  const struct sockaddr_in6 *x = (const void *) a, *y = (const void *) b;
  return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr);
}

static bool name_port(const struct an_proxy *p, uint16_t port) {
  for (size_t i = 0; i < sizeof p->lim.name_ports / sizeof *p->lim.name_ports; i++)
    if (p->lim.name_ports[i] && p->lim.name_ports[i] == port) return true;
  return false;
}

static void accept_one(struct an_proxy *p, int lfd, int family) {
  int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    /* The connection stays in the backlog and the listener readable: left
     * in the set it would be reported again at once, forever. */
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      int i = lfd == p->lfd[0] ? 0 : 1;
      p->stats.accept_failed++;
      if (ep_set(p, EPOLL_CTL_MOD, lfd, &p->ep_l[i], 0) == 0) {
        p->paused[i] = true;
        p->resume_at = now_ms() + AN_PROXY_ACCEPT_PAUSE_MS;
      }
    }
    return;
  }
  p->stats.accepted++;
  struct conn *c = calloc(1, sizeof *c);
  if (!c) { close_rst(fd); return; }
  c->ep_c = (struct ep) {EP_CLIENT, c};
  c->ep_s = (struct ep) {EP_SERVER, c};
  c->cfd = fd;
  c->sfd = -1;
  c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
  c->next = p->conns;
  if (c->next) c->next->prev = c;
  p->conns = c;
  p->stats.active++;
  if (p->stats.active > p->lim.max_conns) { conn_refuse(p, c, AN_NET_ERROR, "connection limit"); return; }
  /* The original destination, from the NAT (conntrack) entry. */
  struct sockaddr_storage local;
  socklen_t llen = sizeof local, olen = sizeof c->dst;
  int r = family == AF_INET ? getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &c->dst, &olen)
                            : getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &c->dst, &olen);
  if (r < 0 || getsockname(fd, (struct sockaddr *) &local, &llen) < 0 ||
      (c->dst.ss_family != AF_INET && c->dst.ss_family != AF_INET6)) {
    memset(&c->dst, 0, sizeof c->dst);
    conn_refuse(p, c, AN_NET_DENY, "no original destination (not redirected)");
    return;
  }
  c->family = c->dst.ss_family;
  c->port = ntohs(c->family == AF_INET ? ((struct sockaddr_in *) &c->dst)->sin_port
                                       : ((struct sockaddr_in6 *) &c->dst)->sin6_port);
  if (same_endpoint(&c->dst, &local) || is_loopback(&c->dst)) {
    conn_refuse(p, c, AN_NET_DENY, same_endpoint(&c->dst, &local)
                                       ? "no original destination (direct connection to the proxy)"
                                       : "original destination is loopback");
    return;
  }
  if (!name_port(p, c->port)) { decide(p, c); return; }
  c->st = ST_SNIFF;
  c->deadline = now_ms() + p->lim.sniff_timeout_ms;
  if (ep_set(p, EPOLL_CTL_ADD, fd, &c->ep_c, EPOLLIN) < 0) conn_refuse(p, c, AN_NET_ERROR, "epoll_ctl failed");
}

static void conn_event(struct an_proxy *p, struct conn *c, bool server, uint32_t events) {
  switch (c->st) {
  case ST_NEW:
    return;
  case ST_SNIFF:
    sniff_readable(p, c);
    return;
  case ST_CONNECTING:
    if (!server) { conn_refuse(p, c, AN_NET_DENY, "client closed while connecting"); return; }
    connect_done(p, c);
    return;
  case ST_SPLICE:
    pump_event(p, c, server, events);
    return;
  }
}

static void timer_expired(struct an_proxy *p) {
  uint64_t exp;
  (void) !read(p->timerfd, &exp, sizeof exp);
  p->armed = 0;                      /* a one-shot timer: nothing armed now */
  uint64_t now = now_ms();
  if (p->resume_at && p->resume_at <= now) listeners_resume(p);
  for (struct conn *c = p->conns, *next; c; c = next) {
    next = c->next;
    if (c->deadline > now) continue;
    if (c->st == ST_SNIFF) conn_refuse(p, c, AN_NET_DENY, "timeout before a TLS SNI or HTTP Host");
    else if (c->st == ST_CONNECTING) conn_refuse(p, c, AN_NET_ERROR, "connect: timeout");
    else conn_end(p, c, true, "idle timeout");
  }
}

/* Deadlines only move later while bytes flow, so the timer is set again
 * only when the earliest one is sooner than what is armed (or nothing is):
 * one that fires early finds nothing due and arms the next. */
static void arm_timer(struct an_proxy *p) {
  uint64_t next = p->resume_at;
  for (struct conn *c = p->conns; c; c = c->next)
    if (!next || c->deadline < next) next = c->deadline;
  if (!next || (p->armed && p->armed <= next)) return;
  struct itimerspec its = {0};
  its.it_value.tv_sec = (time_t) (next / 1000);
  its.it_value.tv_nsec = (long) (next % 1000) * 1000000;
  if (timerfd_settime(p->timerfd, TFD_TIMER_ABSTIME, &its, NULL) == 0) p->armed = next;
}

/* ---- public ---- */

static void apply_defaults(struct an_proxy_limits *l) {
  if (!l->max_conns) l->max_conns = 256;
  if (!l->sniff_max_bytes) l->sniff_max_bytes = 16384;
  if (!l->sniff_timeout_ms) l->sniff_timeout_ms = 5000;
  if (!l->connect_timeout_ms) l->connect_timeout_ms = 10000;
  if (!l->idle_timeout_ms) l->idle_timeout_ms = 600000;
  bool any = false;
  for (size_t i = 0; i < sizeof l->name_ports / sizeof *l->name_ports; i++) any |= l->name_ports[i] != 0;
  if (!any) { l->name_ports[0] = 443; l->name_ports[1] = 80; }
}

static int check_listener(int fd, const char *what, an_error_t *err) {
  int type = 0, acc = 0;
  socklen_t l1 = sizeof type, l2 = sizeof acc;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l1) < 0 ||
      getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l2) < 0)
    return an_error_set(err, errno == ENOTSOCK ? EINVAL : errno, "transparent proxy: %s fd %d", what, fd);
  if (type != SOCK_STREAM || !acc)
    return an_error_set(err, EINVAL, "transparent proxy: %s fd %d is not a listening TCP socket", what, fd);
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0 && !(fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  return 0;
}

int an_proxy_new(const struct an_proxy_config *cfg, const struct an_net_hooks *hooks,
                 struct an_proxy **out, an_error_t *err) {
  *out = NULL;
  struct an_proxy *p = calloc(1, sizeof *p);
  if (!p) {
    if (cfg->listen_fd4 >= 0) close(cfg->listen_fd4);
    if (cfg->listen_fd6 >= 0) close(cfg->listen_fd6);
    return an_error_set(err, ENOMEM, "transparent proxy: allocate");
  }
  p->lfd[0] = cfg->listen_fd4;
  p->lfd[1] = cfg->listen_fd6;
  p->epfd = p->timerfd = -1;
  p->hooks = *hooks;
  p->lim = cfg->limits;
  p->sigpipe_ignored = cfg->sigpipe_ignored;
  apply_defaults(&p->lim);
  p->ep_l[0] = (struct ep) {EP_LISTEN, (void *) (intptr_t) AF_INET};
  p->ep_l[1] = (struct ep) {EP_LISTEN, (void *) (intptr_t) AF_INET6};
  p->ep_timer = (struct ep) {EP_TIMER, p};
  int r;
  if (p->lfd[0] < 0 && p->lfd[1] < 0) {
    r = an_error_set(err, EINVAL, "transparent proxy: no listening socket given");
    goto fail;
  }
  for (int i = 0; i < 2; i++)
    if (p->lfd[i] >= 0 && (r = check_listener(p->lfd[i], i ? "IPv6 listener" : "IPv4 listener", err)) < 0)
      goto fail;
  p->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (p->epfd < 0) { r = an_error_set(err, errno, "transparent proxy: epoll_create1"); goto fail; }
  p->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (p->timerfd < 0) { r = an_error_set(err, errno, "transparent proxy: timerfd_create"); goto fail; }
  if (ep_set(p, EPOLL_CTL_ADD, p->timerfd, &p->ep_timer, EPOLLIN) < 0) {
    r = an_error_set(err, errno, "transparent proxy: epoll_ctl add timerfd");
    goto fail;
  }
  for (int i = 0; i < 2; i++)
    if (p->lfd[i] >= 0 && ep_set(p, EPOLL_CTL_ADD, p->lfd[i], &p->ep_l[i], EPOLLIN) < 0) {
      r = an_error_set(err, errno, "transparent proxy: epoll_ctl add listener fd %d", p->lfd[i]);
      goto fail;
    }
  *out = p;
  return 0;
fail:
  an_proxy_free(p);
  return r;
}

int an_proxy_fd(const struct an_proxy *p) { return p->epfd; }

/* splice(2) into a socket whose peer is gone raises SIGPIPE (it has no
 * MSG_NOSIGNAL).  The signal is sent to the calling thread, so dispatch
 * blocks it for its own thread, takes away any that its splices raised, and
 * restores the mask: the process's signal dispositions are left alone. */
static void sigpipe_block(sigset_t *old) {
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, old);
}

static void sigpipe_restore(const sigset_t *old) {
  if (!sigismember(old, SIGPIPE)) {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE) {}
  }
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

int an_proxy_dispatch(struct an_proxy *p, an_error_t *err) {
  sigset_t old;
  if (!p->sigpipe_ignored) sigpipe_block(&old);
  int r = 0;
  for (int i = 0; i < DISPATCH_MAX; i++) {
    struct epoll_event ev;
    int n = epoll_wait(p->epfd, &ev, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) { r = an_error_set(err, errno, "transparent proxy: epoll_wait"); break; }
    if (n == 0) break;
    struct ep *ep = ev.data.ptr;
    switch (ep->kind) {
    case EP_LISTEN:
      accept_one(p, ep == &p->ep_l[0] ? p->lfd[0] : p->lfd[1], ep == &p->ep_l[0] ? AF_INET : AF_INET6);
      break;
    case EP_TIMER: timer_expired(p); break;
    case EP_CLIENT: conn_event(p, ep->obj, false, ev.events); break;
    case EP_SERVER: conn_event(p, ep->obj, true, ev.events); break;
    }
  }
  arm_timer(p);
  if (!p->sigpipe_ignored) sigpipe_restore(&old);
  return r;
}

unsigned an_proxy_recheck(struct an_proxy *p) {
  unsigned cut = 0;
  for (struct conn *c = p->conns, *next; c; c = next) {
    next = c->next;
    if (c->st != ST_CONNECTING && c->st != ST_SPLICE) continue;
    const char *rule = NULL;
    if (p->hooks.dest_allowed &&
        p->hooks.dest_allowed(p->hooks.ctx, c->family, dst_addr(c), c->port, c->has_name ? c->name : NULL,
                              &rule) == 1)
      continue;
    c->rule = NULL;
    if (rule) {
      snprintf(c->rule_buf, sizeof c->rule_buf, "%s", rule);
      c->rule = c->rule_buf;
    }
    emit(p, c, AN_NET_EV_CLOSE, AN_NET_DENY, "policy changed");
    conn_free(p, c, true);
    cut++;
  }
  return cut;
}

void an_proxy_stats(const struct an_proxy *p, struct an_proxy_stats *out) {
  *out = p->stats;
  for (const struct conn *c = p->conns; c; c = c->next) {
    out->bytes_out += c->up.bytes;
    out->bytes_in += c->down.bytes;
  }
}

void an_proxy_free(struct an_proxy *p) {
  if (!p) return;
  while (p->conns) conn_free(p, p->conns, true);
  for (int i = 0; i < 2; i++) if (p->lfd[i] >= 0) close(p->lfd[i]);
  if (p->timerfd >= 0) close(p->timerfd);
  if (p->epfd >= 0) close(p->epfd);
  free(p);
}
