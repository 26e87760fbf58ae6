/* server/server.h — `agentnest serve`: the HTTP/1.1 API on libmicrohttpd
 * (Debian's libmicrohttpd12: a small, long-maintained C server with
 * thread-per-connection mode, connection limits and timeouts built in).
 * Routes are generated from the operations table (agentnest/api.h) under
 * /v1, plus raw file transfer and /v1/openapi.json (an_api_openapi), and
 * POST /mcp: MCP's Streamable HTTP transport (src/mcp/mcp_http.c).
 *
 * Authentication: "Authorization: Bearer TOKEN" against the tokens file,
 * compared in constant time (SHA-256 of both, CRYPTO_memcmp, every entry
 * compared); missing or unknown: 401 with WWW-Authenticate; revoked: 403.
 * A token sees only the sandboxes it created (others: 403), and at most its
 * max-sandboxes.  Tokens are never logged (their names are).
 *
 * Caps: request body --max-body (413, also from Content-Length before the
 * body is read), --max-concurrent calls in flight (503 + Retry-After),
 * --max-connections, a per-connection idle timeout (slowloris).
 *
 * Each call runs in a worker process (api.h); a client that closes its
 * connection mid-call cancels it.  Sandboxes are tied to the server
 * (api.h lifeline): SIGTERM/SIGINT destroy them all before exit; after a
 * SIGKILL their monitors tear them down and `agentnest prune` removes the
 * rest. */
#ifndef AN_SERVER_SERVER_H
#define AN_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "agentnest/api.h"

struct an_serve_opts {
  struct an_api_ctx api;        /* store, init, profiles, profile, lifetime cap */
  const char *listen;           /* "ADDR:PORT", "[V6]:PORT" or "unix:PATH" */
  const char *tokens_file;      /* required */
  uint64_t max_body;            /* bytes; 0: 16 MiB */
  unsigned max_concurrent;      /* calls in flight; 0: 16 */
  unsigned max_connections;     /* 0: 256 */
  unsigned idle_timeout_s;      /* 0: 30 */
  int log_fd;                   /* -1: quiet */
  const char *tls_cert_file;    /* PEM certificate (chain); with tls_key_file: HTTPS (both or
                                   neither; libmicrohttpd's GnuTLS) */
  const char *tls_key_file;     /* PEM private key: a regular file of mode 0600 or stricter */
};

/* Tokens file: one token a line, "TOKEN NAME [revoked] [max-sandboxes=N] [max-rate=N/s]";
 * '#' starts a comment line; TOKEN at least 16 characters.  The file must
 * be a regular file not readable or writable by group or others.
 * Serve until SIGTERM or SIGINT.  Returns 0, or a negative errno with
 * *err (bad listen address, tokens file, bind; TLS: -EINVAL only one of
 * the two files, -ENOTSUP this libmicrohttpd has no TLS, the files' open or
 * read errno, -EACCES a key others may read, -EIO GnuTLS refused them). */
int an_serve(const struct an_serve_opts *opts, an_error_t *err);

#endif
