/* tests/lib/serve_fixture.h — `agentnest serve` on a unix socket of a test's
 * batch-fixture store (batch_fixture.h: bf_work, bf_root, bf_an_bin), with
 * three tokens, and curl as its client.  Used by serve_isolation_test and
 * admission_test.  Not thread-safe (one test per process). */
#ifndef AN_TEST_SERVE_FIXTURE_H
#define AN_TEST_SERVE_FIXTURE_H

#include <sys/types.h>

#define SV_TOK_A "alice-token-0123456789abcdef"
#define SV_TOK_B "bob-token-0123456789abcdef01"
#define SV_TOK_C "carol-token-0123456789abcdef"   /* max-sandboxes=1 */

/* Write BF_WORK/tokens (alice, bob, carol with max-sandboxes=1), start
 * `agentnest --root BF_ROOT serve --quiet --tokens ... --listen unix:SOCK`
 * with SOCK = BF_WORK/serve.sock (copied into sock, 400 bytes) and wait
 * until the socket exists (asserts).  Returns the server's pid. */
pid_t sv_start(char sock[400]);

/* sv_start with one more option of serve and its value (e.g.
 * "--max-concurrent", "4"); NULL opt: none. */
pid_t sv_start_opt(char sock[400], const char *opt, const char *val);

/* SIGTERM the server *pid and reap it; *pid = 0.  Nothing when *pid <= 0. */
void sv_stop(pid_t *pid);

/* curl METHOD PATH (e.g. "/v1/sandboxes" or "/mcp") over SOCK with TOKEN
 * and a JSON body (NULL: none): the HTTP status (-1: no status); the
 * response body in *out (heap, "" when none). */
int sv_call(const char *sock, const char *token, const char *method, const char *path, const char *body,
            char **out);

/* The string member KEY of the JSON object JSON (heap; asserts that it is
 * there). */
char *sv_member(const char *json, const char *key);

#endif
