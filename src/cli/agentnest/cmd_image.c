/* placeholder; replaced by the image store work */
#include <stdio.h>
#include "commands.h"
int cmd_image(struct an_global_opts *g, int argc, char **argv) {
  (void) g; (void) argc; (void) argv;
  fprintf(stderr, "agentnest image: not built yet\n");
  return AN_EXIT_RUNTIME;
}
