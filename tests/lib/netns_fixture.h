/* tests/lib/netns_fixture.h — network namespaces a test makes for itself,
 * for the egress components' tests (DNS filter, transparent proxy): the
 * test process moves into a fresh "host" netns of its own (so the real
 * host's links, routes and firewall are never touched), makes "sandbox"
 * netns beside it, runs commands and creates sockets inside either.
 * Helpers assert on failure; they run only inside a test (criterion runs
 * each test in a process of its own, so the netns dies with it). */
#ifndef AN_TEST_NETNS_FIXTURE_H
#define AN_TEST_NETNS_FIXTURE_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

/* unshare(CLONE_NEWNET) for the calling test process and bring lo up;
 * returns an fd of the new netns.  Skips the test (cr_skip) when the host
 * cannot make a netns or lacks `ip`. */
int nf_host_enter(void);

/* A new netns (lo up) without leaving the current one; returns its fd. */
int nf_netns_new(void);

/* Switch the calling thread to the netns `fd` (asserts). */
void nf_enter(int fd);

/* sh -c the printf-formatted command inside netns `ns` (the caller's netns
 * is restored after); returns its exit status. */
int nf_sh(int ns, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same, in the background: returns the child's pid (its stdout and
 * stderr go to `log`, appended). */
pid_t nf_spawn(int ns, const char *log, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* SIGTERM, then SIGKILL after a second, and reap (pid <= 0: nothing). */
void nf_stop(pid_t pid);

/* A socket made inside netns `ns`, bound to addr:port (a numeric IPv4 or
 * IPv6 address), non-blocking; SOCK_STREAM ones listen.  Asserts. */
int nf_socket(int ns, int type, const char *addr, unsigned port);

/* Fill *ss (and *len) from a numeric address and port.  Asserts. */
void nf_sockaddr(const char *addr, unsigned port, struct sockaddr_storage *ss, socklen_t *len);

/* A "sandbox" netns as the egress contract makes it: lo up, a veth pair
 * with both ends inside (eth0 10.200.0.2/24 and 2001:db8:ff::2/64, default
 * routes via it).  Returns its fd. */
int nf_sandbox_netns(void);

/* Wait until `cond(arg)` is true, polling every 20 ms for at most
 * `tries` times.  Returns whether it became true. */
bool nf_wait(bool (*cond)(void *arg), void *arg, int tries);

#endif
