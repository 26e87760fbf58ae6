/* server/server_conns.c — --max-connections shared among the tokens.
 *
 * A call needs a connection before --max-concurrent (srv_admit) can give it
 * a slot, and the connections are one pool for every client: one token's
 * requests whose bodies never complete (a byte now and then defeats the
 * idle timeout), or its idle keep-alive connections, could hold all of
 * them.  So each connection is attributed to the token of its latest
 * authenticated request (from the moment its headers are in until it
 * closes), and, as srv_admit does for calls, each live token is promised
 * one: a token that holds a connection already gets another only while
 * the free ones outnumber the live tokens that hold none.  A refused
 * request is answered 503 and its connection closed.
 *
 * A connection that never completes its headers has no token yet, and a
 * trickle of bytes defeats --idle-timeout: such a connection is shut down
 * (shutdown(2); MHD then closes it) once it has been open --idle-timeout
 * without an authenticated request, by a watchdog thread that looks every
 * second (srv_conn_watch_start).  Its fd stays valid while the watchdog
 * holds s->mu: MHD reports a connection CLOSED (srv_conn_notify, which
 * takes s->mu to unlink it) before it closes the socket. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include "server_internal.h"

struct srv_conn {
  long token;                    /* index into srv.tokens; -1: none yet */
  int fd;                        /* the socket (MHD's; never closed here) */
  uint64_t start_ms;             /* CLOCK_MONOTONIC ms of the accept */
  bool shut;                     /* the watchdog shut it down */
  struct srv_conn *prev, *next;  /* srv.conn_list, under srv.mu */
};

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

void srv_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode code) {
  struct srv *s = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    struct srv_conn *k = calloc(1, sizeof *k);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (k) *k = (struct srv_conn){.token = -1, .fd = ci ? ci->connect_fd : -1, .start_ms = mono_ms()};
    *socket_context = k;
    pthread_mutex_lock(&s->mu);
    s->conns++;
    if (k) {
      k->next = s->conn_list;
      if (k->next) k->next->prev = k;
      s->conn_list = k;
    }
    pthread_mutex_unlock(&s->mu);
    return;
  }
  struct srv_conn *k = *socket_context;
  pthread_mutex_lock(&s->mu);
  if (s->conns) s->conns--;
  if (k && k->token >= 0 && s->tokens[k->token].conns) s->tokens[k->token].conns--;
  if (k) {
    if (k->prev) k->prev->next = k->next;
    else s->conn_list = k->next;
    if (k->next) k->next->prev = k->prev;
  }
  pthread_mutex_unlock(&s->mu);
  free(k);
  *socket_context = NULL;
}

bool srv_conn_claim(struct srv *s, struct MHD_Connection *c, long t) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  struct srv_conn *k = ci ? ci->socket_context : NULL;
  if (!k) return true;   /* its record could not be made at accept: not counted */
  pthread_mutex_lock(&s->mu);
  bool ok = true;
  if (k->token != t) {
    if (k->token >= 0 && s->tokens[k->token].conns) s->tokens[k->token].conns--;
    k->token = -1;
    unsigned live = 0, owed = 0;
    for (size_t u = 0; u < s->ntokens; u++) live += !s->tokens[u].revoked;
    if (live && s->max_connections >= live && s->tokens[t].conns > 0) {
      unsigned free_conns = s->max_connections > s->conns ? s->max_connections - s->conns : 0;
      for (size_t u = 0; u < s->ntokens; u++) owed += (long) u != t && !s->tokens[u].revoked && !s->tokens[u].conns;
      ok = free_conns >= owed;
    }
    if (ok) {
      k->token = t;
      s->tokens[t].conns++;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return ok;
}

/* ---- the watchdog of connections without a token ----------------------------------------- */

static void *watch_main(void *arg) {
  struct srv *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->watch_stop) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&s->watch_cv, &s->mu, &until);
    uint64_t now = mono_ms(), limit = (uint64_t) s->idle_timeout_s * 1000;
    for (struct srv_conn *k = s->conn_list; k; k = k->next)
      if (k->token < 0 && !k->shut && k->fd >= 0 && now - k->start_ms >= limit) {
        shutdown(k->fd, SHUT_RDWR);
        k->shut = true;
      }
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int srv_conn_watch_start(struct srv *s) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  int e = pthread_cond_init(&s->watch_cv, &a);
  pthread_condattr_destroy(&a);
  if (e) return -e;
  if ((e = pthread_create(&s->watch, NULL, watch_main, s))) {
    pthread_cond_destroy(&s->watch_cv);
    return -e;
  }
  s->watching = true;
  return 0;
}

void srv_conn_watch_stop(struct srv *s) {
  if (!s->watching) return;
  pthread_mutex_lock(&s->mu);
  s->watch_stop = true;
  pthread_cond_signal(&s->watch_cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->watch, NULL);
  pthread_cond_destroy(&s->watch_cv);
  s->watching = false;
}
