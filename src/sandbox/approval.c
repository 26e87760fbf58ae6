/* sandbox/approval.c — asking an approval hook (agentnest/approval.h): the
 * request document, running the hook program (clean environment, its own
 * process group, one socketpair as stdin and stdout, no other fd) or
 * talking to a unix socket, the deadline, the answer's parse, and the
 * audit record of the decision.  Every failure is a denial (fail closed).
 * What does NOT live here: the options (approval_opts.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest/approval.h"
#include "sandbox/audit_internal.h"
#include "sandbox/opts_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"
#include "util/json_tree.h"

#define HOOK_PATH_ENV "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static int left_ms(uint64_t deadline) {
  uint64_t now = mono_ms();
  return now >= deadline ? 0 : (int) (deadline - now);
}

/* Send the request (then SHUT_WR) and read the answer until EOF, by the
 * deadline.  0, or -ETIMEDOUT / -EFBIG / -errno with `why` filled. */
static int exchange(int fd, const char *req, size_t len, uint64_t deadline, char **ans, size_t *alen,
                    char *why, size_t wlen) {
  size_t sent = 0, got = 0;
  cleanup_free char *buf = malloc(AN_APPROVAL_ANSWER_MAX + 1);
  if (!buf) return -ENOMEM;
  bool wr_open = true;
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN | (wr_open && sent < len ? POLLOUT : 0)};
    int ms = left_ms(deadline);
    if (ms == 0) {
      snprintf(why, wlen, "no answer within the timeout");
      return -ETIMEDOUT;
    }
    int n = poll(&p, 1, ms);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      snprintf(why, wlen, "poll: %s", an_errno_name(errno));
      return -errno;
    }
    if (n == 0) continue;
    if (wr_open && sent < len && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = send(fd, req + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) sent += (size_t) w;
      else if (w < 0 && errno != EAGAIN && errno != EINTR) wr_open = false;   /* the hook stopped reading */
      if (wr_open && sent == len) {
        shutdown(fd, SHUT_WR);
        wr_open = false;
      }
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = recv(fd, buf + got, AN_APPROVAL_ANSWER_MAX + 1 - got, MSG_DONTWAIT);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (r < 0) {
        snprintf(why, wlen, "read the answer: %s", an_errno_name(errno));
        return -errno;
      }
      if (r == 0) break;
      got += (size_t) r;
      if (got > AN_APPROVAL_ANSWER_MAX) {
        snprintf(why, wlen, "answer longer than %u bytes", AN_APPROVAL_ANSWER_MAX);
        return -EFBIG;
      }
    }
  }
  buf[got] = '\0';
  *ans = an_steal(&buf);
  *alen = got;
  return 0;
}

/* Run the program; its answer in *ans.  0 or -errno with `why`. */
static int ask_program(const char *path, const char *req, size_t len, uint64_t deadline, char **ans,
                       size_t *alen, char *why, size_t wlen) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
    snprintf(why, wlen, "socketpair: %s", an_errno_name(errno));
    return -errno;
  }
  /* built before fork: the child only calls async-signal-safe functions */
  char *const argv[] = {(char *) path, NULL};
  char *const envp[] = {HOOK_PATH_ENV, NULL};
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    snprintf(why, wlen, "fork: %s", an_errno_name(e));
    return -e;
  }
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0 || dup2(sv[1], 0) < 0 || dup2(sv[1], 1) < 0 || dup2(null, 2) < 0) _exit(126);
    syscall(SYS_close_range, 3, ~0U, 0);
    if (chdir("/") < 0) _exit(126);
    execve(path, argv, envp);
    _exit(127);
  }
  close(sv[1]);
  setpgid(pid, pid);   /* also here: no race with the kill below */
  int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
  int r = exchange(sv[0], req, len, deadline, ans, alen, why, wlen);
  close(sv[0]);
  bool exited = false;
  if (pidfd >= 0) {
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int ms = r == 0 ? left_ms(deadline) : 0;
    while (poll(&p, 1, ms) < 0 && errno == EINTR) {}
    exited = p.revents != 0;
  }
  /* the leader is a zombie at worst (not yet reaped): its pgid is still ours */
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (pidfd >= 0) close(pidfd);
  if (r < 0) return r;
  if (!exited) {
    snprintf(why, wlen, "the hook did not exit within the timeout");
    return -ETIMEDOUT;
  }
  if (WIFSIGNALED(status)) {
    snprintf(why, wlen, "the hook was killed by signal %d", WTERMSIG(status));
    return -ECHILD;
  }
  if (WEXITSTATUS(status) == 127) {
    snprintf(why, wlen, "the hook %s could not be run", path);
    return -ENOEXEC;
  }
  if (WEXITSTATUS(status) != 0) {
    snprintf(why, wlen, "the hook exited with status %d", WEXITSTATUS(status));
    return -ECHILD;
  }
  return 0;
}

static int ask_socket(const char *path, const char *req, size_t len, uint64_t deadline, char **ans,
                      size_t *alen, char *why, size_t wlen) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path) {
    snprintf(why, wlen, "socket path too long");
    return -ENAMETOOLONG;
  }
  strcpy(sa.sun_path, path);
  cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof sa) < 0) {
    int e = errno;
    snprintf(why, wlen, "connect to unix:%s: %s", path, an_errno_name(e));
    return -e;
  }
  return exchange(fd, req, len, deadline, ans, alen, why, wlen);
}

/* Copy at most AN_APPROVAL_REASON_MAX bytes, control characters as '?'. */
static void clean_reason(const char *in, char *out, size_t outlen) {
  size_t i = 0;
  for (; in && in[i] && i + 1 < outlen && i < AN_APPROVAL_REASON_MAX; i++) {
    unsigned char c = (unsigned char) in[i];
    out[i] = c < 0x20 || c == 0x7f ? '?' : (char) c;
  }
  out[i] = '\0';
}

/* The answer: true for allow; *reason filled either way. */
static bool parse_answer(const char *ans, size_t len, char *reason, size_t rlen) {
  yajl_val v = NULL;
  an_error_t e = NULL;
  if (an_json_parse(ans, len, "", &v, &e) < 0 || !YAJL_IS_OBJECT(v)) {
    an_error_free(&e);
    yajl_tree_free(v);
    snprintf(reason, rlen, "invalid answer from the hook (expected {\"decision\":\"allow\"|\"deny\"})");
    return false;
  }
  const char *d = an_json_member_str(v, "decision");
  yajl_val rv = an_json_member(v, "reason");
  bool allow = false;
  if (d && !strcmp(d, "allow")) {
    allow = true;
    clean_reason(YAJL_IS_STRING(rv) ? YAJL_GET_STRING(rv) : "", reason, rlen);
  } else if (d && !strcmp(d, "deny")) {
    clean_reason(YAJL_IS_STRING(rv) && *YAJL_GET_STRING(rv) ? YAJL_GET_STRING(rv) : "no reason given",
                 reason, rlen);
  } else {
    snprintf(reason, rlen, "invalid answer from the hook (decision must be \"allow\" or \"deny\")");
  }
  yajl_tree_free(v);
  return allow;
}

static int build_request(const char *op, const char *id, const char *name,
                         const struct an_audit_field *f, size_t n, char **doc, size_t *len,
                         an_error_t *err) {
  cleanup_jgen struct an_jgen j = {0};
  if (an_jgen_init(&j, false) < 0) return an_error_set(err, ENOMEM, "approval request");
  char t[32];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  an_audit_time((uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000, t);
  an_jgen_map_open(&j);
  an_jgen_kv_i64(&j, "version", 1);
  an_jgen_kv_str(&j, "operation", op);
  an_jgen_key(&j, "sandbox");
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "id", id);
  an_jgen_kv_str(&j, "name", name);
  an_jgen_map_close(&j);
  an_jgen_key(&j, "arguments");
  an_jgen_map_open(&j);
  int r = an_audit_fields_gen(&j, f, n, err);
  if (r < 0) return r;
  an_jgen_map_close(&j);
  an_jgen_key(&j, "caller");
  an_jgen_map_open(&j);
  an_jgen_kv_u64(&j, "uid", (uint64_t) getuid());
  an_jgen_kv_i64(&j, "pid", (int64_t) getpid());
  an_jgen_map_close(&j);
  an_jgen_kv_str(&j, "time", t);
  an_jgen_map_close(&j);
  char *d = NULL;
  size_t dl = 0;
  if ((r = an_jgen_finish(&j, &d, &dl)) < 0) return an_error_set(err, -r, "approval request: JSON");
  char *nl = realloc(d, dl + 2);
  if (!nl) { free(d); return an_error_set(err, ENOMEM, "approval request"); }
  nl[dl] = '\n';
  nl[dl + 1] = '\0';
  *doc = nl;
  *len = dl + 1;
  return 0;
}

static bool valid_op(const char *op) {
  size_t n = op ? strlen(op) : 0;
  if (n == 0 || n > 32) return false;
  for (; *op; op++)
    if (!((*op >= 'a' && *op <= 'z') || *op == '_')) return false;
  return true;
}

int an_approval_check_opts(const char *store_root, const struct an_sandbox_opts *opts,
                           const char *sandbox_id, const char *sandbox_name, const char *operation,
                           const struct an_audit_field *args, size_t n,
                           const struct an_secret *secrets, size_t nsecrets, an_error_t *err) {
  const char *hook = opts ? an_sandbox_opts_approve_with(opts) : NULL;
  if (!hook) return 0;
  if (!valid_op(operation))
    return an_error_set(err, EINVAL, "approval: operation \"%s\" must match [a-z_]{1,32}",
                        operation ? operation : "");
  /* the arguments with the secrets to redact, for the request and the record */
  cleanup_free struct an_audit_field *f = calloc(n + 1, sizeof *f);
  if (!f) return an_error_set(err, ENOMEM, "approval request");
  memcpy(f, args, n * sizeof *f);
  f[n] = AN_AUDIT_SECRETS(secrets, nsecrets);
  cleanup_free char *req = NULL, *ans = NULL;
  size_t len = 0, alen = 0;
  int r = build_request(operation, sandbox_id, sandbox_name, f, n + 1, &req, &len, err);
  if (r < 0) return r;
  char why[256] = "", reason[AN_APPROVAL_REASON_MAX + 1] = "";
  uint64_t deadline = mono_ms() + an_sandbox_opts_approval_timeout(opts);
  if (!strncmp(hook, "unix:", 5)) r = ask_socket(hook + 5, req, len, deadline, &ans, &alen, why, sizeof why);
  else r = ask_program(hook, req, len, deadline, &ans, &alen, why, sizeof why);
  bool allow = false;
  if (r < 0) snprintf(reason, sizeof reason, "%s", why);
  else allow = parse_answer(ans, alen, reason, sizeof reason);
  /* the decision is on disk before the operation runs: its members, then
   * the arguments' (the same as the operation's own record) */
  cleanup_free struct an_audit_field *rec = calloc(n + 5, sizeof *rec);
  if (rec) {
    rec[0] = AN_AUDIT_STR("operation", operation);
    rec[1] = AN_AUDIT_STR("decision", allow ? "allow" : "deny");
    rec[2] = AN_AUDIT_STR("reason", reason);
    rec[3] = AN_AUDIT_STR("hook", hook);
    memcpy(rec + 4, args, n * sizeof *rec);
    rec[n + 4] = AN_AUDIT_SECRETS(secrets, nsecrets);
    an_error_t e = NULL;
    an_audit_recordv(store_root, "approval", sandbox_id, rec, n + 5, &e);
    an_error_free(&e);
  }
  if (!allow) {
    /* the message is exactly "denied by approval hook: REASON" (no errno
     * suffix); the errno is still EACCES (as util/json_tree's errors) */
    bool fresh = err && !*err;
    an_error_set(err, 0, "denied by approval hook: %s", reason);
    if (fresh && *err && (*err)->errnum == 0) (*err)->errnum = AN_APPROVAL_DENIED;
    return -AN_APPROVAL_DENIED;
  }
  return 0;
}

/* The sandbox's secrets that have their values (a value whose /run file
 * is gone cannot be redacted, nor leaked: nobody here has it).  *out heap. */
int an_sb_known_secrets(const struct an_sandbox *sb, struct an_secret **out, size_t *n) {
  *n = 0;
  *out = calloc(sb->rec.nsecrets + 1, sizeof **out);
  if (!*out) return -ENOMEM;
  for (size_t i = 0; i < sb->rec.nsecrets; i++)
    if (sb->rec.secrets[i].value && *sb->rec.secrets[i].value && sb->rec.secrets[i].name &&
        *sb->rec.secrets[i].name)
      (*out)[(*n)++] = sb->rec.secrets[i];
  return 0;
}

int an_approval_checkv(struct an_sandbox *sb, const char *operation, const struct an_audit_field *args,
                       size_t n, an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "approval: no sandbox");
  cleanup_free struct an_secret *s = NULL;
  size_t ns = 0;
  if (an_sb_known_secrets(sb, &s, &ns) < 0) return an_error_set(err, ENOMEM, "approval request");
  return an_approval_check_opts(sb->root, sb->opts, sb->rec.id, sb->rec.name, operation, args, n, s, ns,
                                err);
}

int an_approval_check(struct an_sandbox *sb, const char *operation, an_error_t *err, ...) {
  struct an_audit_field f[AN_AUDIT_MAX_FIELDS];
  size_t n = 0;
  va_list ap;
  va_start(ap, err);
  bool over = an_sb_audit_fields_va(ap, f, &n);
  va_end(ap);
  if (over)
    return an_error_set(err, EINVAL, "approval %s: more than %d fields", operation ? operation : "",
                        AN_AUDIT_MAX_FIELDS);
  return an_approval_checkv(sb, operation, f, n, err);
}
