/* engine/loopback.c — an_net_loopback_up(): set the loopback interface of a
 * new network namespace up (see loopback.h). */
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include "engine/loopback.h"
#include "util/cleanup.h"

int an_net_loopback_up(an_error_t *err) {
  cleanup_close int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return an_error_set(err, errno, "socket for setting lo up");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  strcpy(ifr.ifr_name, "lo");
  if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) return an_error_set(err, errno, "SIOCGIFFLAGS lo");
  if (ifr.ifr_flags & IFF_UP) return 0;
  ifr.ifr_flags |= IFF_UP;
  if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) return an_error_set(err, errno, "set lo up (SIOCSIFFLAGS)");
  return 0;
}
