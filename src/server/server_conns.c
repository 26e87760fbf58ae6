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
 * Not covered (agentnest-serve(1) says so): a connection that never
 * completes its headers has no token yet; it is bounded only by
 * --idle-timeout, which a trickle of bytes defeats. */
#include <stdlib.h>
#include "server_internal.h"

struct srv_conn {
  long token;   /* index into srv.tokens; -1: none yet */
};

void srv_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode code) {
  (void) c;
  struct srv *s = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    struct srv_conn *k = malloc(sizeof *k);
    if (k) k->token = -1;
    *socket_context = k;
    pthread_mutex_lock(&s->mu);
    s->conns++;
    pthread_mutex_unlock(&s->mu);
    return;
  }
  struct srv_conn *k = *socket_context;
  pthread_mutex_lock(&s->mu);
  if (s->conns) s->conns--;
  if (k && k->token >= 0 && s->tokens[k->token].conns) s->tokens[k->token].conns--;
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
