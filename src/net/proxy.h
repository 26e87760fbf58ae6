/* net/proxy.h — the sandbox's transparent TCP proxy: every allowed TCP
 * connection of the sandbox is `redirect`ed by the sandbox's nft ruleset to
 * this proxy, which checks its original destination (and, on ports 80/443,
 * the TLS SNI / HTTP Host it asks for: net/sni.h) and then splices it to that
 * destination (internal).
 *
 * It runs in the sandbox's monitor (host netns) on the monitor's poll loop:
 * ONE epoll fd (an_proxy_fd()) and an_proxy_dispatch().  Its LISTENING
 * sockets are given by the caller, who creates them inside the sandbox's
 * netns on 127.0.0.1 and ::1 (the nat output hook's `redirect` target); its
 * OUTBOUND sockets are created by the proxy in the netns of the thread that
 * calls dispatch (the monitor's, i.e. the host's).
 *
 * Per accepted connection:
 *  1. the original destination: getsockopt(SOL_IP, SO_ORIGINAL_DST) or
 *     (SOL_IPV6, IP6T_SO_ORIGINAL_DST) (netfilter conntrack).  No NAT entry,
 *     or an original destination that is the proxy's own socket or any
 *     loopback address (a direct connection to the proxy port): refused;
 *  2. on a name-checked port (limits.name_ports): up to sniff_max_bytes are
 *     read within sniff_timeout_ms and parsed (first byte 22: TLS ClientHello
 *     SNI, else HTTP/1.x Host).  Malformed, neither, over the cap, or the
 *     timeout: refused without asking the policy.  A plain HTTP request gets
 *     a "Connection: close" field appended to its header block, so that the
 *     server answers this one request only and a second request on the
 *     connection cannot name another site;
 *  3. hooks.dest_allowed(family, addr, port, name or NULL): 0 -> refused;
 *  4. a non-blocking connect() to the original destination (connect_timeout_ms),
 *     the sniffed bytes are written first, then both directions are spliced
 *     (splice(2) through one pipe per direction, no copy to user space),
 *     with half-close (EOF one way is shutdown(SHUT_WR) the other way) and an
 *     idle timeout; per-connection byte cap in each direction.
 * A refused connection is closed with RST (SO_LINGER 0).  Each decision is an
 * AN_NET_EV_CONNECT event (ALLOW / DENY / ERROR with a reason); each
 * allowed connection's end is an AN_NET_EV_CLOSE event with byte counts.
 * More than max_conns connections at once: the newest is refused (ERROR,
 * "connection limit").
 *
 * Thread-safety: one proxy is used by one thread at a time; distinct proxies
 * are independent; no global state; hooks are called only from dispatch.
 * SIGPIPE: a splice(2) to a socket whose peer is gone raises SIGPIPE (splice
 * has no MSG_NOSIGNAL); an_proxy_dispatch blocks SIGPIPE for the calling
 * thread while it runs, discards those its splices raised, and restores the
 * thread's mask, so the caller need not ignore SIGPIPE (dispositions are
 * never changed); a caller that ignores SIGPIPE process-wide says so
 * (config.sigpipe_ignored) and saves those three system calls a dispatch.
 *
 * Throughput: each direction's pipe is grown to AN_PROXY_PIPE_BYTES
 * (F_SETPIPE_SZ; the default 64 KiB where /proc/sys/fs/pipe-max-size is
 * lower), so one wakeup moves up to that much without a copy to user space,
 * and the idle timer is re-armed only when the earliest deadline comes
 * sooner than the armed one (not on every dispatch).
 */
#ifndef AN_NET_PROXY_H
#define AN_NET_PROXY_H

#include <stdbool.h>
#include <stdint.h>
#include "agentnest/error.h"
#include "net/net_hooks.h"

struct an_proxy;

struct an_proxy_limits {
  unsigned max_conns;          /* connections at once (default 256) */
  unsigned sniff_max_bytes;    /* bytes read to find SNI/Host (default 16384) */
  unsigned sniff_timeout_ms;   /* time allowed for them (default 5000) */
  unsigned connect_timeout_ms; /* outbound connect (default 10000) */
  unsigned idle_timeout_ms;    /* no byte either way this long: closed (default 600000) */
  uint64_t max_bytes_per_conn; /* each direction; 0 = unlimited (default) */
  uint16_t name_ports[8];      /* ports checked by name; all zero = {443, 80} */
};

struct an_proxy_config {
  int listen_fd4;              /* listening TCP socket on 127.0.0.1 in the sandbox netns, or -1 */
  int listen_fd6;              /* the same on ::1, or -1 */
                               /* at least one; the proxy takes OWNERSHIP of both
                                  (closed in free, and on a failed new) */
  struct an_proxy_limits limits;
  bool sigpipe_ignored;        /* SIGPIPE is SIG_IGN in this process: dispatch need not block it */
};

#define AN_PROXY_PIPE_BYTES (1u << 20)   /* each direction's pipe, when the host allows it */

/* Make a proxy.  cfg and hooks are copied (hooks->ctx is borrowed).
 * Errors: -EINVAL (no listening fd; a fd that is not a listening TCP
 * socket), -errno of epoll/timerfd creation; message names the object.
 * *out is owned by the caller: an_proxy_free(). */
int an_proxy_new(const struct an_proxy_config *cfg, const struct an_net_hooks *hooks,
                 struct an_proxy **out, an_error_t *err);

/* The epoll fd to poll for POLLIN (owned by the proxy; do not close). */
int an_proxy_fd(const struct an_proxy *p);

/* Do all work that is ready (never blocks): accept, sniff, decide, connect,
 * splice, expire timeouts.  Returns 0, or a negative errno with *err set only
 * for a failure of the proxy itself; per-connection failures are events. */
int an_proxy_dispatch(struct an_proxy *p, an_error_t *err);

/* Ask dest_allowed again for every connection past its decision
 * (connecting or spliced), as it was first asked (address, port, name):
 * those it now refuses are reset (a DENY event, "policy changed").  For a
 * live policy change: what the new policy refuses does not go on over a
 * connection the old one allowed.  Returns how many were cut.  Not
 * thread-safe against an_proxy_dispatch on another thread. */
unsigned an_proxy_recheck(struct an_proxy *p);

/* Counters since creation (for `inspect`). */
struct an_proxy_stats {
  uint64_t accepted, allowed, denied, errors, bytes_out, bytes_in;
  unsigned active;
  /* accept(2) failures for want of a file descriptor or memory (EMFILE,
   * ENFILE, ENOBUFS, ENOMEM): each pauses that listener (not polled) until
   * a connection is freed or AN_PROXY_ACCEPT_PAUSE_MS pass, so that a full
   * fd table never turns the level-triggered listener into a busy loop */
  uint64_t accept_failed;
};
#define AN_PROXY_ACCEPT_PAUSE_MS 200
void an_proxy_stats(const struct an_proxy *p, struct an_proxy_stats *out);

/* Close every socket and pipe (connections are cut) and free.  NULL allowed. */
void an_proxy_free(struct an_proxy *p);

#endif
