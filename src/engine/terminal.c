/* engine/terminal.c — pty inside the container and the console socket (see
 * terminal.h; pty(7), ioctl_tty(2)). */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>
#include "engine/terminal.h"
#include "util/cleanup.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

int an_terminal_setup(const struct an_spec_process *p, int *master_out, an_error_t *err) {
  cleanup_close int master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
  if (master < 0) return an_error_set(err, errno, "terminal: open /dev/pts/ptmx");
  struct statfs sf;
  if (fstatfs(master, &sf) < 0) return an_error_set(err, errno, "terminal: statfs");
  if (sf.f_type != DEVPTS_SUPER_MAGIC)
    return an_error_set(err, EXDEV, "terminal: /dev/pts/ptmx is not on devpts");
  int unlock = 0;
  if (ioctl(master, TIOCSPTLCK, &unlock) < 0) return an_error_set(err, errno, "terminal: unlockpt");
  cleanup_close int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) return an_error_set(err, errno, "terminal: open pty peer");
  if (fchown(slave, p->user.uid, p->user.gid) < 0)
    return an_error_set(err, errno, "terminal: chown pty to %u:%u", (unsigned) p->user.uid,
                        (unsigned) p->user.gid);
  if (p->has_console_size) {
    struct winsize ws = {.ws_row = (unsigned short) p->console_height,
                         .ws_col = (unsigned short) p->console_width};
    if (ioctl(master, TIOCSWINSZ, &ws) < 0) return an_error_set(err, errno, "terminal: set size");
  }
  if (ioctl(slave, TIOCSCTTY, 0) < 0) return an_error_set(err, errno, "terminal: TIOCSCTTY");
  for (int i = 0; i < 3; i++)
    if (dup2(slave, i) < 0) return an_error_set(err, errno, "terminal: dup2 to fd %d", i);
  *master_out = an_steal_fd(&master);
  return 0;
}

int an_terminal_send_master(const char *path, int master, an_error_t *err) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    return an_error_set(err, ENAMETOOLONG, "console socket %s", path);
  strcpy(sa.sun_path, path);
  cleanup_close int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return an_error_set(err, errno, "console socket: socket");
  if (connect(s, (struct sockaddr *) &sa, sizeof sa) < 0)
    return an_error_set(err, errno, "connect console socket %s", path);
  char name[] = "/dev/ptmx";
  struct iovec iov = {.iov_base = name, .iov_len = sizeof name - 1};
  union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
  memset(&u, 0, sizeof u);
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                      .msg_controllen = sizeof u.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &master, sizeof master);
  if (sendmsg(s, &mh, MSG_NOSIGNAL) < 0)
    return an_error_set(err, errno, "send pty master to console socket %s", path);
  return 0;
}
