/* net/netns.h — a sandbox's own network namespace (internal): made by the
 * runtime as host root, so it is OWNED BY THE INITIAL USER NAMESPACE (no
 * process of the sandbox, root of its own user namespace included, has
 * CAP_NET_ADMIN over it: it cannot change its links, routes or nftables
 * ruleset), kept alive by a bind mount of its nsfs file, and joined by the
 * engine through linux.namespaces {"type":"network","path":...}.
 *
 * Inside it: lo up; a veth pair made with libnl-route-3 whose BOTH ends stay
 * in the netns (the sandbox's `eth0` with AN_NETNS_ADDR4/AN_NETNS_ADDR6 and
 * the default routes through it; `an-up`, the other end, up with the peer
 * addresses, which nothing uses: the egress process listens on 127.0.0.1 and
 * ::1, see sandbox/egress_run.c).  Nothing is routed out
 * of the netns: egress leaves only through the egress process's userspace uplink
 * (the DNS filter and the transparent proxy), so the host's routes, firewall
 * and sysctls are never changed and the addresses cannot collide with the
 * host's (they exist in this netns only).
 *
 * Where the bind mount lives is the caller's choice: the sandbox layer puts
 * it in the sandbox's state directory (<store>/sandboxes/<id>/netns), so that
 * `prune` finds it with the rest of a dead sandbox.
 *
 * Thread-safety: every call may run concurrently on different paths; the
 * namespace work happens in a short-lived thread of its own (setns(2) and
 * unshare(CLONE_NEWNET) change only the calling thread), the caller's thread
 * never changes namespace. */
#ifndef AN_NET_NETNS_H
#define AN_NET_NETNS_H

#include <stdbool.h>
#include "agentnest/error.h"

#define AN_NETNS_IF "eth0"                 /* the sandbox's interface */
#define AN_NETNS_PEER_IF "an-up"           /* the other end, in the same netns */
/* 100.64.0.0/10 and fd00::/8 are in the deny set: the sandbox cannot reach
 * these addresses through the policy even where a service listens on them. */
#define AN_NETNS_ADDR4 "100.64.0.2"
#define AN_NETNS_PEER4 "100.64.0.1"
#define AN_NETNS_PREFIX4 30
#define AN_NETNS_ADDR6 "fd61:6e65:7374::2"
#define AN_NETNS_PEER6 "fd61:6e65:7374::1"
#define AN_NETNS_PREFIX6 64

/* Make a new network namespace bind-mounted on `path` (a new file, created
 * O_EXCL mode 0444; its directory must exist) with lo, the veth pair, the
 * addresses (IPv6 too when the kernel has it, with IFA_F_NODAD so they work
 * at once) and the default routes.  On any failure nothing is left (mount
 * and file removed) and the error names the step, e.g.
 * "netns <path>: add veth eth0/an-up: Operation not supported".
 * Errors: -EEXIST path exists; errno of unshare/mount; -EIO with libnl's
 * message for a netlink step. */
int an_netns_create(const char *path, an_error_t *err);

/* an_netns_create's work in the CALLING thread, which is left inside the
 * new netns (`path` must exist already, e.g. an empty file made O_EXCL):
 * for a thread made for the egress setup, which goes on to load the
 * ruleset and bind sockets there and then ends.  On failure the thread may
 * be in the half-made netns and `path` may be mounted: the caller ends the
 * thread and calls an_netns_remove.  Errors: as an_netns_create. */
int an_netns_enter_new(const char *path, an_error_t *err);

/* Unmount (MNT_DETACH) and unlink `path`; a path that is not there (or not
 * mounted) is fine.  The namespace itself goes when its last user (a process
 * or an open fd) does.  Errors: errno of umount2/unlink other than
 * ENOENT/EINVAL, naming the path. */
int an_netns_remove(const char *path, an_error_t *err);

/* True when `path` is a network namespace file (NS_GET_NSTYPE). */
bool an_netns_is_netns(const char *path);

/* Run fn(ctx, err) in a new thread that has joined the network namespace at
 * `path` (so sockets it creates, libnftables and libnl calls it makes, belong
 * to that netns); waits for it.  Returns fn's result.  Errors: errno of
 * open/setns naming the path; -EAGAIN thread creation. */
int an_netns_run_in(const char *path, int (*fn)(void *ctx, an_error_t *err), void *ctx,
                    an_error_t *err);

#endif
