/* engine/loopback.h — bring up the loopback interface of a container's new
 * network namespace, as runc and crun do: DESIGN.md's "an empty netns
 * (loopback only)" means 127.0.0.1 and ::1 work inside while nothing else
 * exists.  What does NOT live here: veth pairs, routes, nftables (net.c). */
#ifndef AN_ENGINE_LOOPBACK_H
#define AN_ENGINE_LOOPBACK_H

#include "agentnest/error.h"

/* Child side, inside the new network namespace with CAP_NET_ADMIN over it:
 * set IFF_UP on "lo" (netdevice(7) SIOCGIFFLAGS/SIOCSIFFLAGS).  The kernel
 * gives lo its 127.0.0.1/8 and ::1 addresses when it comes up.
 * Errors: errno of socket(2)/ioctl(2), naming the interface. */
int an_net_loopback_up(an_error_t *err);

#endif
