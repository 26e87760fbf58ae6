/* server/server_internal.h — state shared by the HTTP server's files
 * (internal): tokens (server_auth.c), the sandboxes each token owns, and
 * the request handler (server_routes.c); daemon and listen (server_main.c). */
#ifndef AN_SERVER_INTERNAL_H
#define AN_SERVER_INTERNAL_H

#include <pthread.h>
#include <microhttpd.h>
#include "server.h"

struct srv_token {
  char *name;
  unsigned char sha256[32];
  bool revoked;
  size_t max_sandboxes;          /* 0: none */
  size_t creating;               /* creates in flight (under srv.mu): they count against the cap */
  unsigned max_rate;             /* requests per second (max-rate=N/s), 0: none; a token
                                    bucket of N requests refilled at N/s (guarded by mu) */
  double bucket;
  uint64_t bucket_ms;            /* CLOCK_MONOTONIC ms of the last refill */
  unsigned inflight;             /* its calls in flight (under srv.mu; srv_admit) */
  unsigned conns;                /* connections attributed to it (under srv.mu; srv_conn_claim) */
};

struct srv_owned {
  char id[16];
  size_t token;                  /* index into tokens */
  pid_t keeper;
};

struct srv {
  const struct an_serve_opts *o;
  struct an_api_ctx ctx;         /* lifeline set */
  struct srv_token *tokens;
  size_t ntokens;
  pthread_mutex_t mu;            /* guards own/nown, gone/ngone, inflight and tokens[].creating/inflight */
  struct srv_owned *own;
  size_t nown, capown;
  struct srv_owned *gone;        /* destroyed ones (id, token): audit may still read them */
  size_t ngone, capgone;
  unsigned inflight;              /* calls in flight, all tokens (under mu) */
  char *openapi;
  size_t openapi_len;
  uint64_t max_body;
  unsigned max_concurrent;
  unsigned max_connections;      /* --max-connections (MHD's limit) */
  unsigned conns;                /* connections open, all clients (under mu; srv_conn_notify) */
  unsigned idle_timeout_s;       /* --idle-timeout; also the deadline of a connection's first
                                    authenticated request (server_conns.c) */
  struct srv_conn *conn_list;    /* open connections (under mu) */
  pthread_t watch;               /* srv_conn_watch_start's thread */
  pthread_cond_t watch_cv;       /* with mu: wakes it to stop */
  bool watching, watch_stop;
};

/* --max-connections shared among tokens (server_conns.c).  srv_conn_notify
 * is MHD's MHD_OPTION_NOTIFY_CONNECTION callback (cls: the srv): it counts
 * the open connections and keeps each one's token.  srv_conn_claim
 * attributes connection c to token t for the request whose headers just
 * came: false when t already holds its share (answer 503 and close).  Both
 * take s->mu. */
void srv_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode code);
bool srv_conn_claim(struct srv *s, struct MHD_Connection *c, long t);
/* Start the thread that shuts down every connection open idle_timeout_s
 * without an authenticated request (headers trickled, or none); stop it
 * (joined).  Start: 0 or a negative errno (pthread_create). */
int srv_conn_watch_start(struct srv *s);
void srv_conn_watch_stop(struct srv *s);

/* Take one request from token t's rate bucket: 0, or the whole seconds to
 * wait (>= 1) when it is empty.  Takes s->mu. */
unsigned srv_rate_take(struct srv *s, long t);

/* Load and check the tokens file.  Errors named. */
int srv_tokens_load(struct srv *s, const char *path, an_error_t *err);
void srv_tokens_free(struct srv *s);
/* Authorization header value -> token index; -1 missing/malformed/unknown. */
long srv_token_find(const struct srv *s, const char *authorization);

/* the MHD access handler and completion callback */
enum MHD_Result srv_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **con_cls);
/* Answer a streaming call (AN_API_OP_STREAMS with "stream": true in `in`)
 * as JSON Lines (server_stream.c).  0 with *ret (the response is queued;
 * the call runs until its last line or the client hangs up), or a negative
 * errno with *err when the call could not start (nothing queued). */
/* hold_token >= 0: the call holds a slot of that token's max-sandboxes
 * (srv_hold), given back (srv_unhold) when the stream ends; on an error
 * return the caller keeps it. */
/* The call's --max-concurrent admission (srv_admit of token `token`) is
 * the stream's on success (srv_release when it ends), the caller's on an
 * error return. */
int srv_stream_respond(struct srv *s, struct MHD_Connection *c, const struct an_api_ctx *ctx,
                       const struct an_api_op *op, const char *in, size_t inlen, long token, long hold_token,
                       enum MHD_Result *ret, an_error_t *err);

/* --max-concurrent admission of a call of token t (server_routes.c).
 * Each token that is not revoked is promised one slot (when there are at
 * least as many slots as such tokens): a call is admitted while the token
 * has none in flight and a slot is free, or beyond that only while a slot
 * is free that no other token's promise is owed, so one token's flood
 * leaves every other token a call in flight.  true: admitted (give it
 * back with srv_release); false: answer 503.  Takes s->mu. */
bool srv_admit(struct srv *s, long t);
void srv_release(struct srv *s, long t);
/* max-sandboxes admission of token t (server_routes.c): reserve a slot
 * (false: the cap is reached) / give it back. */
bool srv_hold(struct srv *s, long t);
void srv_unhold(struct srv *s, long t);
void srv_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t);

/* Destroy every sandbox the server made (shutdown). */
void srv_destroy_all(struct srv *s);

#endif
