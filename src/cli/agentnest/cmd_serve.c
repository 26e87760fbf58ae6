/* cli/agentnest/cmd_serve.c — `agentnest serve [OPTIONS]`: the
 * authenticated HTTP API (src/server/server.h) and `agentnest serve
 * --openapi`, which prints the OpenAPI 3.1 document (what `make install`
 * installs).  Parses the options, fills the context, runs the server. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/common/ctx_env.h"
#include "agentnest/api.h"
#include "cli.h"
#include "server/server.h"
#include "util/units.h"

static const char serve_usage[] =
    "Usage: agentnest serve --tokens FILE [OPTIONS]\n"
    "       agentnest serve --openapi\n"
    "\n"
    "Serve the HTTP API under /v1 (OpenAPI 3.1 document at /v1/openapi.json; MCP Streamable\n"
    "HTTP at POST /mcp with the same tokens and the tools of agentnest mcp): sandboxes\n"
    "(POST/GET /v1/sandboxes, GET/DELETE /v1/sandboxes/ID), exec, run, files (JSON, and raw\n"
    "PUT/GET /v1/sandboxes/ID/files/PATH), snapshot, restore, artifacts, fork, events,\n"
    "sessions, network (GET/POST /v1/sandboxes/ID/network), extend, audit (POST /v1/audit).\n"
    "exec and run stream JSON Lines with \"Accept: application/x-ndjson\" (or \"stream\": true):\n"
    "output chunks as they come, then one {\"type\":\"result\",...} line (the --stream format).\n"
    "Every request but /v1/openapi.json needs \"Authorization: Bearer TOKEN\"; a token sees only\n"
    "the sandboxes it created.  SIGTERM or SIGINT stop the server and destroy its sandboxes;\n"
    "after a SIGKILL their monitors destroy them and `agentnest prune` removes the rest.\n"
    "\n"
    "  --tokens FILE          bearer tokens, one a line: TOKEN NAME [revoked] [max-sandboxes=N]\n"
    "                         [max-rate=N/s] (over it: 429 with Retry-After); max-sandboxes\n"
    "                         counts creates, forks and one-shot runs while they run (403)\n"
    "                         (mode 0600; TOKEN at least 16 characters; one NAME per\n"
    "                         token that is not revoked, each TOKEN once)\n"
    "  --listen ADDR:PORT     where to listen (default 127.0.0.1:8741); [V6]:PORT; unix:PATH\n"
    "  --profile NAME         every sandbox uses this profile\n"
    "  --max-body SIZE        request body cap (default 16m): 413 beyond\n"
    "  --max-concurrent N     calls in flight (default 16): 503 beyond; each token is\n"
    "                         promised one (no token's flood takes them all)\n"
    "  --max-connections N    open connections (default 256); each token is promised one\n"
    "  --idle-timeout DUR     close a connection idle this long (default 30s), or one with no\n"
    "                         authenticated request this long after its accept\n"
    "  --max-lifetime DUR     cap on each sandbox's lifetime (default 1h)\n"
    "  --tls-cert FILE        serve HTTPS with this PEM certificate (chain) ...\n"
    "  --tls-key FILE         ... and its PEM private key (mode 0600); both or neither\n"
    "  --openapi              print the OpenAPI document and exit\n"
    "  --quiet                no request log on stderr (tokens are never logged)\n"
    "  -h, --help             this help\n"
    "\n"
    "Example:\n"
    "  curl -H \"Authorization: Bearer $TOKEN\" -d '{\"code\":\"print(6*7)\"}' http://127.0.0.1:8741/v1/run\n"
    "See agentnest-serve(1).\n";

enum { OPT_TOKENS = 2100, OPT_LISTEN, OPT_PROFILE, OPT_MAX_BODY, OPT_MAX_CONC, OPT_MAX_CONN, OPT_IDLE,
       OPT_MAX_LIFE, OPT_OPENAPI, OPT_QUIET, OPT_TLS_CERT, OPT_TLS_KEY };

struct serve_cli {
  const char *cmd;
  struct an_serve_opts o;
  bool openapi, quiet;
};

static int parse_count(const char *cmd, const char *flag, const char *arg, unsigned *out) {
  char *end = NULL;
  unsigned long v = strtoul(arg, &end, 10);
  if (!*arg || *end || v < 1 || v > 100000) return cli_usage_error(cmd, "%s %s: expected 1..100000", flag, arg);
  *out = (unsigned) v;
  return -1;
}

static int serve_opt(void *ctx, int code, char *arg) {
  struct serve_cli *m = ctx;
  an_error_t err = NULL;
  uint64_t v = 0;
  switch (code) {
  case OPT_TOKENS: m->o.tokens_file = arg; return -1;
  case OPT_LISTEN: m->o.listen = arg; return -1;
  case OPT_PROFILE: m->o.api.profile = arg; return -1;
  case OPT_OPENAPI: m->openapi = true; return -1;
  case OPT_QUIET: m->quiet = true; return -1;
  case OPT_TLS_CERT: m->o.tls_cert_file = arg; return -1;
  case OPT_TLS_KEY: m->o.tls_key_file = arg; return -1;
  case OPT_MAX_CONC: return parse_count(m->cmd, "--max-concurrent", arg, &m->o.max_concurrent);
  case OPT_MAX_CONN: return parse_count(m->cmd, "--max-connections", arg, &m->o.max_connections);
  case OPT_MAX_BODY:
    if (an_parse_size(arg, &m->o.max_body, &err) < 0 || !m->o.max_body) break;
    return -1;
  case OPT_IDLE:
    if (an_parse_duration_ms(arg, &v, &err) < 0 || v < 1000) break;
    m->o.idle_timeout_s = (unsigned) (v / 1000);
    return -1;
  case OPT_MAX_LIFE:
    if (an_parse_duration_ms(arg, &m->o.api.max_lifetime_ms, &err) < 0 || !m->o.api.max_lifetime_ms) break;
    return -1;
  default: return AN_EXIT_RUNTIME;
  }
  if (!err) an_error_set(&err, 0, "out of range");
  an_error_prefix(&err, "%s", arg);
  return cli_fail(m->cmd, &err);
}

int cmd_serve(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"tokens", required_argument, NULL, OPT_TOKENS},
      {"listen", required_argument, NULL, OPT_LISTEN},
      {"profile", required_argument, NULL, OPT_PROFILE},
      {"max-body", required_argument, NULL, OPT_MAX_BODY},
      {"max-concurrent", required_argument, NULL, OPT_MAX_CONC},
      {"max-connections", required_argument, NULL, OPT_MAX_CONN},
      {"idle-timeout", required_argument, NULL, OPT_IDLE},
      {"max-lifetime", required_argument, NULL, OPT_MAX_LIFE},
      {"openapi", no_argument, NULL, OPT_OPENAPI},
      {"quiet", no_argument, NULL, OPT_QUIET},
      {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
      {"tls-key", required_argument, NULL, OPT_TLS_KEY},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  struct serve_cli m = {.cmd = argv[0]};
  /* the servers' context reads no secret from this process's environment */
  __attribute__((cleanup(an_ctx_freep))) struct an_ctx *lib = NULL;
  {
    an_error_t cerr = NULL;
    if (an_cli_ctx_from_env(NULL, false, &lib, &cerr) < 0) return cli_fail(argv[0], &cerr);
  }
  m.o.api = (struct an_api_ctx){.store_root = g->root, .lib = lib, .max_lifetime_ms = 3600 * 1000,
                                .lifeline_fd = -1};
  int r = cli_parse_opts(argv[0], argc, argv, ":h", longopts, serve_usage, serve_opt, &m);
  if (r >= 0) return r;
  if (optind < argc) return cli_usage_error(argv[0], "unexpected argument '%s'", argv[optind]);
  an_error_t err = NULL;
  if (m.openapi) {
    char *doc = NULL;
    size_t len = 0;
    if (an_api_openapi(&doc, &len, &err) < 0) return cli_fail(argv[0], &err);
    fwrite(doc, 1, len, stdout);
    free(doc);
    return fflush(stdout) == 0 ? 0 : AN_EXIT_RUNTIME;
  }
  if (!m.o.tls_cert_file != !m.o.tls_key_file)
    return cli_usage_error(argv[0], "--tls-cert and --tls-key go together");
  if (!m.o.tokens_file) return cli_usage_error(argv[0], "--tokens FILE is required (bearer tokens; see --help)");
  if (m.o.api.profile) {
    struct an_sandbox_opts *o = NULL;
    if (an_sandbox_opts_new_ctx(lib, &o, &err) < 0 || an_sandbox_opts_load_profile(o, m.o.api.profile, NULL, &err) < 0) {
      an_sandbox_opts_free(o);
      an_error_prefix(&err, "--profile %s", m.o.api.profile);
      return cli_fail(argv[0], &err);
    }
    an_sandbox_opts_free(o);
  }
  m.o.log_fd = m.quiet ? -1 : 2;
  if (an_serve(&m.o, &err) < 0) return cli_fail(argv[0], &err);
  return 0;
}
