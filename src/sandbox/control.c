/* sandbox/control.c — netstring framing of JSON documents with fd passing,
 * and the client side of the monitor's control socket (see control.h).
 * What does NOT live here: the monitor's side (monitor_ctl.c). */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "sandbox/control.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/json_tree.h"

void an_ctl_reader_init(struct an_ctl_reader *r, int fd) {
  memset(r, 0, sizeof *r);
  r->fd = fd;
  for (size_t i = 0; i < AN_CTL_MAX_FDS; i++) r->fds[i] = -1;
}

void an_ctl_reader_release(struct an_ctl_reader *r) {
  free(r->buf);
  r->buf = NULL;
  r->len = r->cap = 0;
  for (size_t i = 0; i < AN_CTL_MAX_FDS; i++)
    if (r->fds[i] >= 0) close(r->fds[i]), r->fds[i] = -1;
  r->nfds = 0;
}

int an_ctl_reader_fill(struct an_ctl_reader *r, an_error_t *err) {
  if (r->cap - r->len < 65536) {
    size_t cap = r->cap ? r->cap * 2 : 65536;
    while (cap - r->len < 65536) cap *= 2;
    char *b = realloc(r->buf, cap + 1);
    if (!b) return an_error_set(err, ENOMEM, "control channel: read buffer");
    r->buf = b;
    r->cap = cap;
  }
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(int) * AN_CTL_MAX_FDS)];
  } ctl;
  struct iovec iov = {.iov_base = r->buf + r->len, .iov_len = r->cap - r->len};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
                     .msg_controllen = sizeof ctl.b};
  ssize_t n;
  for (;;) {
    n = recvmsg(r->fd, &m, MSG_CMSG_CLOEXEC);
    if (n >= 0) break;
    if (errno == ENOTSOCK) {  /* a pipe: plain read */
      n = read(r->fd, r->buf + r->len, r->cap - r->len);
      m.msg_controllen = 0;
      if (n >= 0) break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return -EAGAIN;
    return an_error_set(err, errno, "control channel: read");
  }
  for (struct cmsghdr *c = m.msg_controllen ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    int *fds = (int *) CMSG_DATA(c);
    for (size_t i = 0; i < k; i++) {
      if (r->nfds < AN_CTL_MAX_FDS) r->fds[r->nfds++] = fds[i];
      else close(fds[i]);
    }
  }
  if (n == 0) r->eof = true;
  r->len += (size_t) n;
  return (int) n;
}

int an_ctl_reader_next(struct an_ctl_reader *r, const char *what, char **payload, size_t *len,
                       an_error_t *err) {
  size_t i = 0, n = 0;
  for (; i < r->len && r->buf[i] != ':'; i++) {
    char ch = r->buf[i];
    if (ch < '0' || ch > '9' || i >= 9 || (i == 1 && r->buf[0] == '0'))
      return an_error_set(err, EPROTO, "%s: malformed frame (a netstring's length expected)", what);
    n = n * 10 + (size_t) (ch - '0');
  }
  if (i == r->len) return 0;
  if (i == 0) return an_error_set(err, EPROTO, "%s: malformed frame (empty length)", what);
  if (n > AN_CTL_MAX_FRAME)
    return an_error_set(err, EPROTO, "%s: frame of %zu bytes, more than the %zu allowed", what, n,
                        AN_CTL_MAX_FRAME);
  if (r->len < i + 1 + n + 1) return 0;
  if (r->buf[i + 1 + n] != ',')
    return an_error_set(err, EPROTO, "%s: malformed frame (no ',' after %zu bytes)", what, n);
  char *p = malloc(n + 1);
  if (!p) return an_error_set(err, ENOMEM, "%s: frame", what);
  memcpy(p, r->buf + i + 1, n);
  p[n] = '\0';
  size_t used = i + 1 + n + 1;
  memmove(r->buf, r->buf + used, r->len - used);
  r->len -= used;
  *payload = p;
  *len = n;
  return 1;
}

int an_ctl_read_doc(struct an_ctl_reader *rd, const char *what, int timeout_ms, yajl_val *doc,
                    an_error_t *err) {
  uint64_t deadline = timeout_ms > 0 ? an_mono_ms() + (uint64_t) timeout_ms : 0;
  for (;;) {
    cleanup_free char *p = NULL;
    size_t n = 0;
    int r = an_ctl_reader_next(rd, what, &p, &n, err);
    if (r < 0) return r;
    if (r > 0) {
      if (an_json_parse(p, n, "", doc, err) < 0) {
        an_error_prefix(err, "%s: frame", what);
        return -EPROTO;
      }
      return 0;
    }
    if (rd->eof) return an_error_set(err, EPIPE, "%s: closed the connection", what);
    int wait = -1;
    if (deadline) {
      uint64_t now = an_mono_ms();
      if (now >= deadline) return an_error_set(err, ETIMEDOUT, "%s: no answer in %d ms", what, timeout_ms);
      wait = (int) (deadline - now);
    }
    struct pollfd p1 = {.fd = rd->fd, .events = POLLIN};
    int k = poll(&p1, 1, wait);
    if (k < 0 && errno != EINTR) return an_error_set(err, errno, "%s: poll", what);
    if (k <= 0) continue;
    r = an_ctl_reader_fill(rd, err);
    if (r < 0 && r != -EAGAIN) return an_error_prefix(err, "%s", what);
  }
}

int an_ctl_send(int fd, const char *payload, size_t len, const int *fds, size_t nfds,
                an_error_t *err) {
  if (len > AN_CTL_MAX_FRAME)
    return an_error_set(err, EMSGSIZE, "control channel: frame of %zu bytes, more than the %zu allowed",
                        len, AN_CTL_MAX_FRAME);
  if (nfds > AN_CTL_MAX_FDS) return an_error_set(err, EINVAL, "control channel: %zu fds", nfds);
  char head[24];
  int hl = snprintf(head, sizeof head, "%zu:", len);
  struct iovec iov[3] = {{head, (size_t) hl}, {(void *) payload, len}, {(void *) ",", 1}};
  size_t niov = 3, at = 0;
  union {
    struct cmsghdr h;
    char b[CMSG_SPACE(sizeof(int) * AN_CTL_MAX_FDS)];
  } ctl;
  bool first = true;
  while (at < niov) {
    struct msghdr m = {.msg_iov = iov + at, .msg_iovlen = niov - at};
    if (first && nfds) {
      memset(&ctl, 0, sizeof ctl);
      m.msg_control = ctl.b;
      m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
      struct cmsghdr *c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
      memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK && !nfds) {
      n = writev(fd, iov + at, (int) (niov - at));
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "control channel: send");
    }
    first = false;
    size_t left = (size_t) n;
    while (at < niov && left >= iov[at].iov_len) left -= iov[at++].iov_len;
    if (at < niov) {
      iov[at].iov_base = (char *) iov[at].iov_base + left;
      iov[at].iov_len -= left;
    }
  }
  return 0;
}

int an_ctl_write_all(int fd, const char *buf, size_t len, an_error_t *err) {
  while (len) {
    ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "control channel: write");
    }
    buf += n;
    len -= (size_t) n;
  }
  return 0;
}

int an_ctl_connect(const char *dir, const char *id, an_error_t *err) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  int n = snprintf(a.sun_path, sizeof a.sun_path, "%s/" AN_CTL_DIR "/" AN_CTL_SOCKET, dir);
  if (n < 0 || (size_t) n >= sizeof a.sun_path)
    return an_error_set(err, ENAMETOOLONG, "sandbox %s: control socket path %s/%s/%s is longer than %zu bytes",
                        id, dir, AN_CTL_DIR, AN_CTL_SOCKET, sizeof a.sun_path - 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return an_error_set(err, errno, "sandbox %s: control socket", id);
  while (connect(fd, (struct sockaddr *) &a, sizeof a) < 0) {
    if (errno == EINTR) continue;
    int e = errno;
    close(fd);
    return an_error_set(err, e, "sandbox %s: its monitor does not answer (control socket %s)", id,
                        a.sun_path);
  }
  return fd;
}

int an_ctl_call(int fd, const char *what, const char *request, yajl_val *reply, int *fds_out,
                size_t *nfds_out, an_error_t *err) {
  if (reply) *reply = NULL;
  if (nfds_out) *nfds_out = 0;
  int r = an_ctl_send(fd, request, strlen(request), NULL, 0, err);
  if (r < 0) return an_error_prefix(err, "%s", what);
  struct an_ctl_reader rd;
  an_ctl_reader_init(&rd, fd);
  yajl_val doc = NULL;
  r = an_ctl_read_doc(&rd, what, 0, &doc, err);
  if (r < 0) {
    an_ctl_reader_release(&rd);
    return r;
  }
  yajl_val ok = an_json_member(doc, "ok");
  if (!YAJL_IS_TRUE(ok)) {
    yajl_val en = an_json_member_type(doc, "errno", yajl_t_number);
    const char *msg = an_json_member_str(doc, "error");
    int e = en && YAJL_IS_INTEGER(en) && YAJL_GET_INTEGER(en) > 0 ? (int) YAJL_GET_INTEGER(en) : EPROTO;
    /* the monitor's message already ends with ": ENAME" (an_error_set): not twice */
    size_t ml = msg ? strlen(msg) : 0, nl = strlen(an_errno_name(e));
    if (ml > nl + 2 && !strcmp(msg + ml - nl, an_errno_name(e)) && !strncmp(msg + ml - nl - 2, ": ", 2))
      ml -= nl + 2;
    r = msg ? an_error_set(err, e, "%.*s", (int) ml, msg) : an_error_set(err, e, "the monitor refused the request");
    yajl_tree_free(doc);
    an_ctl_reader_release(&rd);
    return r;
  }
  if (fds_out && nfds_out) {
    for (size_t i = 0; i < rd.nfds; i++) fds_out[i] = rd.fds[i], rd.fds[i] = -1;
    *nfds_out = rd.nfds;
    rd.nfds = 0;
  }
  an_ctl_reader_release(&rd);
  if (reply) *reply = doc;
  else yajl_tree_free(doc);
  return 0;
}

int an_ctl_call_once(const char *dir, const char *id, const char *request, yajl_val *reply,
                     an_error_t *err) {
  cleanup_close int fd = an_ctl_connect(dir, id, err);
  if (fd < 0) return fd;
  char what[64];
  snprintf(what, sizeof what, "the monitor of sandbox %s", id);
  return an_ctl_call(fd, what, request, reply, NULL, NULL, err);
}
