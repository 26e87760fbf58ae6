/* placeholder */
#include "cli.h"
int cmd_demo(struct an_global_opts *g, int argc, char **argv) { (void) g; (void) argc; (void) argv; return 125; }
