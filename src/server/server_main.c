/* server/server_main.c — `agentnest serve`'s daemon (server.h): the
 * listening socket (ADDR:PORT, [V6]:PORT or unix:PATH; the default
 * 127.0.0.1 only), libmicrohttpd in thread-per-connection mode with its
 * connection cap and idle timeout, TLS from PEM files (--tls-cert,
 * --tls-key: libmicrohttpd's GnuTLS), and the shutdown on SIGTERM/SIGINT
 * that destroys every sandbox the server made. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "server_internal.h"
#include "util/lazylib.h"
#include "util/sha256.h"

static int an_serve_run(const struct an_serve_opts *o, bool tls, const char *cert, const char *key,
                        an_error_t *err);

static int listen_socket(const char *spec, an_error_t *err) {
  int fd;
  if (!strncmp(spec, "unix:", 5)) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    const char *path = spec + 5;
    if (!*path || strlen(path) >= sizeof sa.sun_path)
      return an_error_set(err, EINVAL, "--listen %s: a unix socket path of 1..%zu bytes", spec, sizeof sa.sun_path - 1);
    strcpy(sa.sun_path, path);
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) return an_error_set(err, errno, "socket");
    struct stat st;
    /* a stale socket of ours is replaced; anything else is left alone */
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(path);
    mode_t old = umask(0177);   /* 0600: only root connects (the tokens still apply) */
    int r = bind(fd, (struct sockaddr *) &sa, sizeof sa);
    umask(old);
    if (r < 0) { int e = errno; close(fd); return an_error_set(err, e, "--listen %s: bind", spec); }
  } else {
    char host[256];
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || !colon[1] || (size_t) (colon - spec) >= sizeof host)
      return an_error_set(err, EINVAL, "--listen %s: expected ADDR:PORT, [V6ADDR]:PORT or unix:PATH", spec);
    memcpy(host, spec, (size_t) (colon - spec));
    host[colon - spec] = 0;
    char *h = host;
    if (h[0] == '[' && h[strlen(h) - 1] == ']') h[strlen(h) - 1] = 0, h++;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV}, *ai = NULL;
    int g = getaddrinfo(h, colon + 1, &hints, &ai);
    if (g) return an_error_set(err, EINVAL, "--listen %s: %s (a numeric address and port)", spec, gai_strerror(g));
    if ((fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
      freeaddrinfo(ai);
      return an_error_set(err, errno, "socket");
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int r = bind(fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (r < 0) { int e = errno; close(fd); return an_error_set(err, e, "--listen %s: bind", spec); }
  }
  if (listen(fd, 128) < 0) { int e = errno; close(fd); return an_error_set(err, e, "--listen %s: listen", spec); }
  return fd;
}

/* Read a PEM file (at most 1 MiB) into a heap string; a key must not be
 * readable or writable by group or others. */
static int read_pem(const char *flag, const char *path, bool secret, char **out, an_error_t *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return an_error_set(err, errno, "%s %s", flag, path);
  struct stat st;
  int r = 0;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > (1 << 20))
    r = an_error_set(err, EINVAL, "%s %s: not a regular file of 1 byte to 1 MiB", flag, path);
  else if (secret && (st.st_mode & 077))
    r = an_error_set(err, EACCES, "%s %s: mode %04o lets others read or change the key (chmod 600)", flag, path,
                     (unsigned) (st.st_mode & 07777));
  char *buf = r < 0 ? NULL : calloc(1, (size_t) st.st_size + 1);
  if (r >= 0 && !buf) r = an_error_set(err, ENOMEM, "%s %s", flag, path);
  size_t got = 0;
  while (r >= 0 && got < (size_t) st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t) st.st_size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) r = an_error_set(err, n < 0 ? errno : EIO, "%s %s: read", flag, path);
    else got += (size_t) n;
  }
  close(fd);
  if (r < 0) {
    free(buf);
    return r;
  }
  *out = buf;
  return 0;
}

int an_serve(const struct an_serve_opts *o, an_error_t *err) {
  bool tls = o->tls_cert_file || o->tls_key_file;
  if (tls && !(o->tls_cert_file && o->tls_key_file))
    return an_error_set(err, EINVAL, "serve: --tls-cert and --tls-key go together");
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
    return an_error_set(err, ENOTSUP, "serve: this libmicrohttpd was built without TLS (GnuTLS): "
                        "--tls-cert/--tls-key cannot be honoured");
  char *cert = NULL, *key = NULL;
  int r = 0;
  if (tls && ((r = read_pem("--tls-cert", o->tls_cert_file, false, &cert, err)) < 0 ||
              (r = read_pem("--tls-key", o->tls_key_file, true, &key, err)) < 0)) {
    free(cert);
    return r;
  }
  int rr = an_serve_run(o, tls, cert, key, err);
  free(cert);
  if (key) explicit_bzero(key, strlen(key));
  free(key);
  return rr;
}

static int an_serve_run(const struct an_serve_opts *o, bool tls, const char *cert, const char *key,
                        an_error_t *err) {
  struct srv s = {.o = o, .ctx = o->api, .max_body = o->max_body ? o->max_body : 16u << 20,
                  .max_concurrent = o->max_concurrent ? o->max_concurrent : 16,
                  .max_connections = o->max_connections ? o->max_connections : 256,
                  .idle_timeout_s = o->idle_timeout_s ? o->idle_timeout_s : 30};
  pthread_mutex_init(&s.mu, NULL);
  int r = srv_tokens_load(&s, o->tokens_file, err);
  if (r < 0) return r;
  if ((r = an_api_openapi(&s.openapi, &s.openapi_len, err)) < 0) goto out_tokens;
  int lifeline[2];
  if (pipe2(lifeline, O_CLOEXEC) < 0) { r = an_error_set(err, errno, "serve: lifeline pipe"); goto out_doc; }
  s.ctx.lifeline_fd = lifeline[0];
  int lfd = listen_socket(o->listen ? o->listen : "127.0.0.1:8741", err);
  if (lfd < 0) { r = lfd; goto out_pipe; }
  /* every library now, before MHD's threads: workers forked from them
   * must never dlopen (util/lazylib.h) */
  an_lazylib_load_all();
  /* and OpenSSL initialised (a pthread_once of its own): a worker forked
   * while a connection thread ran the first EVP call would inherit it half
   * done (the fork hazard of util/utc.h) */
  (void) an_sha256_md();
  /* MHD's threads inherit this mask: the signals come to sigwait below */
  sigset_t sigs, old;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &sigs, &old);
  struct MHD_OptionItem tls_opts[] = {{MHD_OPTION_HTTPS_MEM_CERT, 0, (void *) cert},
                                      {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *) key},
                                      {MHD_OPTION_END, 0, NULL}};
  if (!tls) tls_opts[0].option = MHD_OPTION_END;
  struct MHD_Daemon *d = MHD_start_daemon(
      MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG |
          (tls ? MHD_USE_TLS : 0), 0,
      NULL, NULL, srv_handle, &s,
      MHD_OPTION_LISTEN_SOCKET, lfd,
      MHD_OPTION_CONNECTION_LIMIT, s.max_connections,
      MHD_OPTION_NOTIFY_CONNECTION, srv_conn_notify, &s,
      MHD_OPTION_CONNECTION_TIMEOUT, s.idle_timeout_s,
      MHD_OPTION_NOTIFY_COMPLETED, srv_completed, &s,
      MHD_OPTION_ARRAY, tls_opts,
      MHD_OPTION_END);
  if (!d) {
    r = an_error_set(err, EIO, "serve: libmicrohttpd did not start on %s%s", o->listen ? o->listen : "127.0.0.1:8741",
                     tls ? " (with TLS: are --tls-cert and --tls-key a PEM certificate and its key?)" : "");
    close(lfd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    goto out_pipe;
  }
  int we = srv_conn_watch_start(&s);
  if (we < 0) {
    r = an_error_set(err, -we, "serve: the thread that closes connections without a token in time");
    MHD_stop_daemon(d);
    close(lfd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    goto out_pipe;
  }
  if (o->log_fd >= 0) {
    char line[512];
    int n = snprintf(line, sizeof line, "serve: listening on %s%s (%zu token(s))\n",
                     o->listen ? o->listen : "127.0.0.1:8741", tls ? " with TLS" : "", s.ntokens);
    if (write(o->log_fd, line, (size_t) n) < 0) {}
  }
  sigdelset(&sigs, SIGPIPE);
  int sig = 0;
  sigwait(&sigs, &sig);
  srv_conn_watch_stop(&s);
  MHD_stop_daemon(d);   /* joins the connection threads: no call is running after this */
  close(lfd);
  if (o->listen && !strncmp(o->listen, "unix:", 5)) unlink(o->listen + 5);
  srv_destroy_all(&s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (o->log_fd >= 0) {
    char line[128];
    int n = snprintf(line, sizeof line, "serve: %s: stopped, sandboxes destroyed\n", strsignal(sig));
    if (write(o->log_fd, line, (size_t) n) < 0) {}
  }
  r = 0;
out_pipe:
  close(lifeline[0]);
  close(lifeline[1]);
out_doc:
  free(s.openapi);
out_tokens:
  srv_tokens_free(&s);
  free(s.own);
  free(s.gone);
  pthread_mutex_destroy(&s.mu);
  return r;
}
