/* sandbox/control.h — the monitor's control channel (internal): how the CLI
 * (and any other front end, the pool, h13-io's stdin/PTY relays) reaches
 * the long-lived things a persistent sandbox's monitor holds: sessions,
 * detached processes, the lifetime timer.
 *
 * WHERE.  The monitor listens on the unix stream socket
 *   <root>/sandboxes/<id>/control/control.sock
 * in a directory of its own, mode 0700 root (the socket 0600), never
 * mounted into the sandbox (only <id>/workspace is).  A sandbox's processes
 * run in their own mount namespace on a pivoted root, as a uid of their own
 * host id range: they can neither name the path nor search the directory.
 * The monitor also checks the peer's credentials (SO_PEERCRED): only the
 * monitor's own euid (root) is answered.
 *
 * FRAMING.  Both directions carry netstrings (D. J. Bernstein,
 * "Netstrings", 1997: "<decimal length>:<bytes>,", no leading zeros) whose
 * bytes are one JSON document (RFC 8259, written with yajl, parsed with
 * util/json_tree.h).  At most AN_CTL_MAX_FRAME bytes of payload.  A reply
 * may carry file descriptors (SCM_RIGHTS, unix(7)) on the first byte of its
 * frame; the documented ops below say which.  The same framing is used on
 * a session helper's socket (session.c), so one reader serves both.
 *
 * REQUEST  {"op":"<name>", ...members of the op}
 * REPLY    {"ok":true, ...members}  or
 *          {"ok":false,"errno":N,"error":"<message naming object and cause>"}
 * One request, one reply, in order; a connection may send several requests.
 * Ops (monitor_ctl.c holds the table; add a row to add an op):
 *   "ping"                         -> {"ok":true,"pid":monitor pid}
 *   "extend"  {"deadline_ms":N}    -> re-arm the lifetime timer (CLOCK_REALTIME ms)
 *   "session.start" {"name","kind"}-> spawn a session helper (session.h)
 *   "session.attach" {"name"}      -> {"kind","dirty"} + fds [socket, stdout, stderr];
 *                                     the session is busy until this connection
 *                                     sends "session.done" or closes
 *   "session.done" {"name"}        -> the call finished cleanly (not dirty)
 *   "session.ls"                   -> {"sessions":[{"name","kind","pid","busy","started_ms"}]}
 *   "session.stop" {"name"}        -> kill the session's cgroup, forget it
 *
 * THREADS.  Every function here is thread-safe on distinct fds. */
#ifndef AN_SANDBOX_CONTROL_H
#define AN_SANDBOX_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <yajl/yajl_tree.h>
#include "agentnest/error.h"

#define AN_CTL_DIR "control"                 /* under the sandbox dir, 0700 */
#define AN_CTL_SOCKET "control.sock"         /* in AN_CTL_DIR, 0600 */
#define AN_CTL_MAX_FRAME ((size_t) 16 << 20) /* payload bytes of one netstring */
#define AN_CTL_MAX_FDS 4                     /* fds one frame may carry */

/* A buffered netstring reader over one fd (blocking or not). */
struct an_ctl_reader {
  int fd;
  char *buf;          /* heap: bytes read and not yet consumed */
  size_t len, cap;
  int fds[AN_CTL_MAX_FDS];  /* fds received with the data (SCM_RIGHTS), -1 none */
  size_t nfds;
  bool eof;
};

void an_ctl_reader_init(struct an_ctl_reader *r, int fd);
/* Free the buffer and close received fds not taken. */
void an_ctl_reader_release(struct an_ctl_reader *r);

/* Read what the fd has (one read(2)/recvmsg(2); may block if the fd
 * does).  Returns the bytes read (0 at EOF, r->eof set), -EAGAIN for a
 * non-blocking fd with nothing, or -errno named in err. */
int an_ctl_reader_fill(struct an_ctl_reader *r, an_error_t *err);

/* Take one complete frame out of the buffer: 1 and *payload (heap, NUL
 * terminated, caller frees) / *len; 0 when no complete frame is buffered
 * yet; -EPROTO for a malformed netstring or one over AN_CTL_MAX_FRAME
 * (named: `what` is the peer, "the monitor of sandbox X"). */
int an_ctl_reader_next(struct an_ctl_reader *r, const char *what, char **payload, size_t *len,
                       an_error_t *err);

/* Read (blocking) until one frame is complete and parse it as JSON.
 * timeout_ms 0: no limit.  Returns 0 and *doc (yajl_tree_free), -ETIMEDOUT,
 * -EPIPE on EOF before a frame, -EPROTO malformed, or a read errno. */
int an_ctl_read_doc(struct an_ctl_reader *r, const char *what, int timeout_ms, yajl_val *doc,
                    an_error_t *err);

/* Write one frame with `len` bytes of payload, passing nfds fds (may be 0)
 * along with it.  Blocks until all is written (EINTR retried).  Errors:
 * -EMSGSIZE over AN_CTL_MAX_FRAME, the errno of sendmsg/write, named. */
int an_ctl_send(int fd, const char *payload, size_t len, const int *fds, size_t nfds,
                an_error_t *err);

/* write(2) all of buf (EINTR retried; MSG_NOSIGNAL semantics: SIGPIPE is
 * not raised for a socket).  Errors: the errno, named. */
int an_ctl_write_all(int fd, const char *buf, size_t len, an_error_t *err);

/* Connect to the control socket of the sandbox whose state dir is `dir`
 * (SOCK_CLOEXEC).  Returns the fd, or -errno: -ENOENT / -ECONNREFUSED
 * "sandbox ID: its monitor does not answer (control socket PATH: ...)". */
int an_ctl_connect(const char *dir, const char *id, an_error_t *err);

/* One round trip on a connected fd: send `request` (a JSON document), read
 * the reply, and turn {"ok":false} into an error (its errno, its message).
 * On success *reply (yajl_tree_free; may be NULL if not wanted) and the fds
 * that came with it in fds_out[0..*nfds_out) (owned by the caller; both
 * may be NULL, then any fds are closed). */
int an_ctl_call(int fd, const char *what, const char *request, yajl_val *reply, int *fds_out,
                size_t *nfds_out, an_error_t *err);

/* Connect, call once, close: an_ctl_connect + an_ctl_call. */
int an_ctl_call_once(const char *dir, const char *id, const char *request, yajl_val *reply,
                     an_error_t *err);

#endif
