/* engine/sync.c — numbered sync points over a SOCK_SEQPACKET socketpair
 * (protocol described in sync.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "engine/sync.h"

struct an_sync_msg {
  uint32_t point;
  int32_t errnum;
  char text[AN_SYNC_PAYLOAD_MAX];
};

const char *an_sync_point_name(int point) {
  switch (point) {
  case AN_SYNC_IDMAPPED: return "idmapped";
  case AN_SYNC_MOUNTED: return "mounted";
  case AN_SYNC_HOOKS_DONE: return "hooks-done";
  case AN_SYNC_READY: return "ready";
  case AN_SYNC_GO: return "go";
  case AN_SYNC_DETACH: return "detach";
  case AN_SYNC_SPAWNED: return "spawned";
  case AN_SYNC_DETACHED: return "detached";
  case AN_SYNC_COMMAND_ERROR: return "command-error";
  case AN_SYNC_ERROR: return "error";
  default: return "unknown";
  }
}

static ssize_t sync_sendmsg(int sock, const struct an_sync_msg *m, size_t len, int fd) {
  struct iovec iov = {.iov_base = (void *) m, .iov_len = len};
  union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fd >= 0) {
    memset(&u, 0, sizeof u);
    mh.msg_control = u.buf;
    mh.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t n;
  do n = sendmsg(sock, &mh, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n;
}

int an_sync_send(int sock, enum an_sync_point p, int fd_to_pass, an_error_t *err) {
  struct an_sync_msg m = {.point = p};
  if (sync_sendmsg(sock, &m, offsetof(struct an_sync_msg, text), fd_to_pass) < 0)
    return an_error_set(err, errno, "sync point %d (%s): send", p, an_sync_point_name(p));
  return 0;
}

static void send_error_at(int sock, enum an_sync_point p, const struct an_error *e) {
  struct { uint32_t point; int32_t errnum; char text[1024]; } m = {
      .point = p, .errnum = e && e->errnum ? e->errnum : EIO};
  const char *text = e && e->msg ? e->msg : "container init failed";
  size_t len = strnlen(text, sizeof m.text - 1);
  memcpy(m.text, text, len);
  m.text[len] = '\0';
  /* same layout as struct an_sync_msg, shorter text: no allocation here */
  sync_sendmsg(sock, (const struct an_sync_msg *) &m, offsetof(struct an_sync_msg, text) + len + 1, -1);
}

void an_sync_send_error(int sock, const struct an_error *e) {
  send_error_at(sock, AN_SYNC_ERROR, e);
}

void an_sync_send_command_error(int sock, const struct an_error *e) {
  send_error_at(sock, AN_SYNC_COMMAND_ERROR, e);
}

static bool is_error_point(uint32_t point) {
  return point == AN_SYNC_ERROR || point == AN_SYNC_COMMAND_ERROR;
}

/* Receive one record.  Returns bytes read (0 on EOF) or -errno. */
static ssize_t sync_recv(int sock, struct an_sync_msg *m, int *fd_received) {
  struct iovec iov = {.iov_base = m, .iov_len = sizeof *m - 1};
  union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                      .msg_controllen = sizeof u.buf};
  memset(m, 0, sizeof *m);
  ssize_t n;
  do n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd;
      memcpy(&fd, CMSG_DATA(c), sizeof fd);
      if (fd_received && *fd_received < 0) *fd_received = fd;
      else close(fd);
    }
  }
  return n;
}

static int sync_error_from_msg(const struct an_sync_msg *m, an_error_t *err) {
  int e = m->errnum > 0 ? m->errnum : EIO;
  /* The child's message already ends in ": EPERM" (an_error_set); keep it as is. */
  an_error_set(err, 0, "%s", m->text);
  if (err && *err) (*err)->errnum = e;
  return -e;
}

static int sync_wait_msg(int sock, enum an_sync_point expected, int *fd_received,
                         struct an_sync_msg *m, an_error_t *err) {
  ssize_t n = sync_recv(sock, m, fd_received);
  if (n < 0)
    return an_error_set(err, (int) -n, "sync point %d (%s): receive", expected,
                        an_sync_point_name(expected));
  if (n == 0)
    return an_error_set(err, EPIPE, "container init exited before sync point %d (%s)",
                        expected, an_sync_point_name(expected));
  if (is_error_point(m->point)) return sync_error_from_msg(m, err);
  if (m->point != (uint32_t) expected)
    return an_error_set(err, EPROTO, "sync: expected point %d (%s), got %u", expected,
                        an_sync_point_name(expected), m->point);
  return 0;
}

int an_sync_wait(int sock, enum an_sync_point expected, int *fd_received, an_error_t *err) {
  return an_sync_wait_command(sock, expected, fd_received, NULL, err);
}

int an_sync_wait_command(int sock, enum an_sync_point expected, int *fd_received,
                         bool *command_failed, an_error_t *err) {
  if (command_failed) *command_failed = false;
  struct an_sync_msg *m = malloc(sizeof *m);
  if (!m) return an_error_set(err, ENOMEM, "sync");
  int r = sync_wait_msg(sock, expected, fd_received, m, err);
  if (r < 0 && command_failed) *command_failed = m->point == AN_SYNC_COMMAND_ERROR;
  free(m);
  return r;
}

int an_sync_wait_either(int sock, enum an_sync_point a, enum an_sync_point b,
                        enum an_sync_point *got, an_error_t *err) {
  struct an_sync_msg *m = malloc(sizeof *m);
  if (!m) return an_error_set(err, ENOMEM, "sync");
  int r = sync_wait_msg(sock, a, NULL, m, err);
  if (r == -EPROTO && m->point == (uint32_t) b) {
    an_error_free(err);
    r = 0;
  }
  if (r == 0) *got = (enum an_sync_point) m->point;
  free(m);
  return r;
}

int an_sync_send_payload(int sock, enum an_sync_point p, const char *text, an_error_t *err) {
  size_t len = strlen(text);
  if (len >= AN_SYNC_PAYLOAD_MAX)
    return an_error_set(err, E2BIG, "sync point %d (%s): payload of %zu bytes", p,
                        an_sync_point_name(p), len);
  struct an_sync_msg *m = malloc(sizeof *m);
  if (!m) return an_error_set(err, ENOMEM, "sync");
  m->point = p;
  m->errnum = 0;
  memcpy(m->text, text, len + 1);
  ssize_t n = sync_sendmsg(sock, m, offsetof(struct an_sync_msg, text) + len + 1, -1);
  int e = errno;
  free(m);
  if (n < 0) return an_error_set(err, e, "sync point %d (%s): send", p, an_sync_point_name(p));
  return 0;
}

int an_sync_wait_payload(int sock, enum an_sync_point expected, char **text, an_error_t *err) {
  struct an_sync_msg *m = malloc(sizeof *m);
  if (!m) return an_error_set(err, ENOMEM, "sync");
  int r = sync_wait_msg(sock, expected, NULL, m, err);
  if (r == 0) {
    *text = strdup(m->text);
    if (!*text) r = an_error_set(err, ENOMEM, "sync");
  }
  free(m);
  return r;
}

int an_sync_wait_exec(int sock, bool *command_failed, an_error_t *err) {
  if (command_failed) *command_failed = false;
  struct an_sync_msg *m = malloc(sizeof *m);
  if (!m) return an_error_set(err, ENOMEM, "sync");
  ssize_t n = sync_recv(sock, m, NULL);
  int r;
  if (n == 0) r = 0;
  else if (n < 0) r = an_error_set(err, (int) -n, "sync: wait for execve");
  else if (is_error_point(m->point)) r = sync_error_from_msg(m, err);
  else r = an_error_set(err, EPROTO, "sync: expected EOF at execve, got point %u", m->point);
  if (command_failed && n > 0) *command_failed = m->point == AN_SYNC_COMMAND_ERROR;
  free(m);
  return r;
}
