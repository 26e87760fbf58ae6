/* cli/agentnest/cli_ctx.c — the library context of one agentnest(1) run,
 * made once in main from the environment (cli/common/ctx_env.c) and freed at
 * exit.  The CLI is single-threaded; the context is immutable after main
 * made it. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include "agentnest/ctx.h"
#include "cli/common/ctx_env.h"

static struct an_ctx *the_ctx;

const struct an_ctx *cli_ctx(void) { return the_ctx; }

static void free_ctx(void) { an_ctx_free(the_ctx); }

int cli_ctx_init(void) {
  an_error_t err = NULL;
  if (an_cli_ctx_from_env(NULL, true, &the_ctx, &err) < 0) {
    /* before the command line is read: the global options' error form */
    fprintf(stderr, "agentnest: %s\n", err ? err->msg : "the library context could not be made");
    an_error_free(&err);
    return -1;
  }
  atexit(free_ctx);
  return 0;
}
