/* net/netns.c — make, join and remove a sandbox's network namespace (see
 * netns.h; network_namespaces(7), setns(2), rtnetlink(7) through
 * libnl-route-3).  The ruleset loaded into it lives in ruleset.c. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>
#include "net/netns.h"
#include "util/cleanup.h"

/* lo is always ifindex 1 (LOOPBACK_IFINDEX); the others' depend on the
 * fallback tunnel devices this kernel puts in every netns */
#define LO_IFINDEX 1

struct job {
  const char *path;
  bool create;                       /* unshare + bind mount, then configure */
  int (*fn)(void *ctx, an_error_t *err);
  void *ctx;
  int ret;
  an_error_t err;
};

static int nl_fail(an_error_t *err, const char *path, int nlerr, const char *fmt, const char *what) {
  return an_error_set(err, EIO, "netns %s: %s %s: %s", path, fmt, what, nl_geterror(nlerr));
}

static int link_index(struct nl_sock *sk, const char *path, const char *name, int *ifindex, an_error_t *err) {
  struct rtnl_link *link = NULL;
  int e = rtnl_link_get_kernel(sk, 0, name, &link);
  if (e < 0) return nl_fail(err, path, e, "find link", name);
  *ifindex = rtnl_link_get_ifindex(link);
  rtnl_link_put(link);
  return 0;
}

static int link_up(struct nl_sock *sk, const char *path, const char *name, int *ifindex, an_error_t *err) {
  struct rtnl_link *link = NULL, *change = NULL;
  int e = rtnl_link_get_kernel(sk, 0, name, &link);
  if (e < 0) return nl_fail(err, path, e, "find link", name);
  *ifindex = rtnl_link_get_ifindex(link);
  change = rtnl_link_alloc();
  if (!change) {
    rtnl_link_put(link);
    return an_error_set(err, ENOMEM, "netns %s: link %s", path, name);
  }
  rtnl_link_set_flags(change, IFF_UP);
  e = rtnl_link_change(sk, link, change, 0);
  rtnl_link_put(change);
  rtnl_link_put(link);
  return e < 0 ? nl_fail(err, path, e, "set up link", name) : 0;
}

/* lo up: RTM_NEWLINK on ifindex 1 (lo is always 1 in a new netns), no
 * lookup round trip */
static int lo_up(struct nl_sock *sk, const char *path, an_error_t *err) {
  struct rtnl_link *lo = rtnl_link_alloc(), *change = rtnl_link_alloc();
  int e = -NLE_NOMEM;
  if (lo && change) {
    rtnl_link_set_ifindex(lo, LO_IFINDEX);
    rtnl_link_set_flags(change, IFF_UP);
    e = rtnl_link_change(sk, lo, change, 0);
  }
  if (lo) rtnl_link_put(lo);
  if (change) rtnl_link_put(change);
  return e < 0 ? nl_fail(err, path, e, "set up link", "lo") : 0;
}

static int add_addr(struct nl_sock *sk, const char *path, int ifindex, int family, const char *text,
                    int prefix, an_error_t *err) {
  char buf[64];
  snprintf(buf, sizeof buf, "%s/%d", text, prefix);
  struct nl_addr *local = NULL;
  int e = nl_addr_parse(buf, family, &local);
  if (e < 0) return nl_fail(err, path, e, "parse address", buf);
  struct rtnl_addr *a = rtnl_addr_alloc();
  if (!a) {
    nl_addr_put(local);
    return an_error_set(err, ENOMEM, "netns %s: address %s", path, buf);
  }
  rtnl_addr_set_ifindex(a, ifindex);
  e = rtnl_addr_set_local(a, local);
  /* no duplicate address detection: nothing else is on this link, and the
   * address must be usable at once */
  if (family == AF_INET6) rtnl_addr_set_flags(a, IFA_F_NODAD);
  if (e >= 0) e = rtnl_addr_add(sk, a, 0);
  rtnl_addr_put(a);
  nl_addr_put(local);
  return e < 0 ? nl_fail(err, path, e, "add address", buf) : 0;
}

/* default dev eth0 (scope link: no gateway, nothing answers on the wire;
 * connections are redirected to the proxy by the ruleset before routing) */
static int add_default_route(struct nl_sock *sk, const char *path, int ifindex, int family, an_error_t *err) {
  struct nl_addr *dst = NULL;
  int e = nl_addr_parse("default", family, &dst);
  if (e < 0) return nl_fail(err, path, e, "parse route", "default");
  struct rtnl_route *rt = rtnl_route_alloc();
  struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
  if (!rt || !nh) {
    if (rt) rtnl_route_put(rt);
    if (nh) rtnl_route_nh_free(nh);
    nl_addr_put(dst);
    return an_error_set(err, ENOMEM, "netns %s: default route", path);
  }
  rtnl_route_set_family(rt, (uint8_t) family);
  rtnl_route_set_table(rt, RT_TABLE_MAIN);
  rtnl_route_set_scope(rt, family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE);
  rtnl_route_set_dst(rt, dst);
  rtnl_route_nh_set_ifindex(nh, ifindex);
  rtnl_route_add_nexthop(rt, nh);   /* the route owns nh now */
  e = rtnl_route_add(sk, rt, NLM_F_CREATE | NLM_F_EXCL);
  rtnl_route_put(rt);
  nl_addr_put(dst);
  return e < 0 ? nl_fail(err, path, e, family == AF_INET ? "add IPv4 route" : "add IPv6 route", "default") : 0;
}

static bool have_ipv6(void) { return access("/proc/sys/net/ipv6", F_OK) == 0; }

/* In the new netns: lo, the veth pair, addresses, routes. */
static int configure(const char *path, an_error_t *err) {
  struct nl_sock *sk = nl_socket_alloc();
  if (!sk) return an_error_set(err, ENOMEM, "netns %s: netlink socket", path);
  int r = 0, eth = 0, up = 0;
  int e = nl_connect(sk, NETLINK_ROUTE);
  if (e < 0) {
    r = nl_fail(err, path, e, "connect", "rtnetlink");
    goto out;
  }
  if ((r = lo_up(sk, path, err)) < 0) goto out;
  /* eth0 is made up by the RTM_NEWLINK that makes the pair (the peer's
   * flags cannot be given there: it is set up by a change of its own) */
  struct rtnl_link *veth = rtnl_link_veth_alloc();
  if (!veth) {
    r = an_error_set(err, ENOMEM, "netns %s: veth", path);
    goto out;
  }
  rtnl_link_set_name(veth, AN_NETNS_IF);
  rtnl_link_set_flags(veth, IFF_UP);
  struct rtnl_link *peer = rtnl_link_veth_get_peer(veth);   /* a reference of ours */
  rtnl_link_set_name(peer, AN_NETNS_PEER_IF);
  rtnl_link_put(peer);
  e = rtnl_link_add(sk, veth, NLM_F_CREATE | NLM_F_EXCL);
  rtnl_link_veth_release(veth);
  if (e < 0) {
    r = nl_fail(err, path, e, "add veth", AN_NETNS_IF "/" AN_NETNS_PEER_IF);
    goto out;
  }
  if ((r = link_index(sk, path, AN_NETNS_IF, &eth, err)) < 0 ||
      (r = link_up(sk, path, AN_NETNS_PEER_IF, &up, err)) < 0 ||
      (r = add_addr(sk, path, eth, AF_INET, AN_NETNS_ADDR4, AN_NETNS_PREFIX4, err)) < 0 ||
      (r = add_addr(sk, path, up, AF_INET, AN_NETNS_PEER4, AN_NETNS_PREFIX4, err)) < 0 ||
      (r = add_default_route(sk, path, eth, AF_INET, err)) < 0)
    goto out;
  if (have_ipv6() &&
      ((r = add_addr(sk, path, eth, AF_INET6, AN_NETNS_ADDR6, AN_NETNS_PREFIX6, err)) < 0 ||
       (r = add_addr(sk, path, up, AF_INET6, AN_NETNS_PEER6, AN_NETNS_PREFIX6, err)) < 0 ||
       (r = add_default_route(sk, path, eth, AF_INET6, err)) < 0))
    goto out;
out:
  nl_socket_free(sk);
  return r;
}

int an_netns_enter_new(const char *path, an_error_t *err) {
  /* only this thread moves: CLONE_NEWNET is per task */
  if (unshare(CLONE_NEWNET) < 0) return an_error_set(err, errno, "netns %s: unshare(CLONE_NEWNET)", path);
  if (mount("/proc/thread-self/ns/net", path, NULL, MS_BIND, NULL) < 0)
    return an_error_set(err, errno, "netns %s: bind mount the namespace", path);
  return configure(path, err);
}

static void *job_main(void *arg) {
  struct job *j = arg;
  if (j->create) {
    j->ret = an_netns_enter_new(j->path, &j->err);
    return NULL;
  }
  cleanup_close int fd = open(j->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    j->ret = an_error_set(&j->err, errno, "netns %s: open", j->path);
    return NULL;
  }
  if (setns(fd, CLONE_NEWNET) < 0) {
    j->ret = an_error_set(&j->err, errno, "netns %s: setns", j->path);
    return NULL;
  }
  j->ret = j->fn(j->ctx, &j->err);
  return NULL;
}

static int run_job(struct job *j, an_error_t *err) {
  pthread_t t;
  int e = pthread_create(&t, NULL, job_main, j);
  if (e) return an_error_set(err, e, "netns %s: start a thread", j->path);
  pthread_join(t, NULL);
  if (j->ret < 0) {
    if (err && !*err) *err = j->err;
    else an_error_free(&j->err);
  }
  return j->ret;
}

int an_netns_create(const char *path, an_error_t *err) {
  int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (fd < 0) return an_error_set(err, errno, "netns %s: create the mount point", path);
  close(fd);
  struct job j = {.path = path, .create = true};
  int r = run_job(&j, err);
  if (r < 0) {
    an_error_t ignored = NULL;
    an_netns_remove(path, &ignored);
    an_error_free(&ignored);
  }
  return r;
}

int an_netns_remove(const char *path, an_error_t *err) {
  if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
    return an_error_set(err, errno, "netns %s: unmount", path);
  if (unlink(path) < 0 && errno != ENOENT) return an_error_set(err, errno, "netns %s: unlink", path);
  return 0;
}

bool an_netns_is_netns(const char *path) {
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  return fd >= 0 && ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET;
}

int an_netns_run_in(const char *path, int (*fn)(void *ctx, an_error_t *err), void *ctx,
                    an_error_t *err) {
  struct job j = {.path = path, .fn = fn, .ctx = ctx};
  return run_job(&j, err);
}
