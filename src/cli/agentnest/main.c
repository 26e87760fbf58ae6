/* cli/agentnest/main.c — `agentnest` entry point: global options and the
 * subcommand table.  All logic lives in libagentnest. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commands.h"

struct an_command {
  const char *name;
  int (*fn)(struct an_global_opts *, int, char **);
  const char *summary;
};

static const struct an_command commands[] = {
    {"image", cmd_image, "import, list, inspect and remove images"},
};

static void usage(FILE *f) {
  fprintf(f,
          "Usage: agentnest [--root DIR] COMMAND [ARG...]\n"
          "\n"
          "AgentNest runs untrusted code in disposable, policy-controlled Linux sandboxes.\n"
          "\n"
          "Global options:\n"
          "  --root DIR   image store and state (default $AGENTNEST_ROOT or /var/lib/agentnest)\n"
          "  --version    print the version and exit\n"
          "  -h, --help   this help\n"
          "\nCommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\nRun 'agentnest COMMAND --help' for a command's options. See agentnest(1).\n");
}

int main(int argc, char **argv) {
  struct an_global_opts g = {.root = getenv("AGENTNEST_ROOT")};
  if (!g.root || !*g.root) g.root = "/var/lib/agentnest";
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "--root") && i + 1 < argc) g.root = argv[++i];
    else if (!strncmp(argv[i], "--root=", 7)) g.root = argv[i] + 7;
    else if (!strcmp(argv[i], "--version")) { printf("agentnest version %s\n", AN_VERSION); return 0; }
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
    else { fprintf(stderr, "agentnest: unknown global option '%s'\n", argv[i]); usage(stderr); return AN_EXIT_RUNTIME; }
  }
  if (i >= argc) { usage(stderr); return AN_EXIT_RUNTIME; }
  for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
    if (!strcmp(argv[i], commands[c].name)) return commands[c].fn(&g, argc - i, argv + i);
  fprintf(stderr, "agentnest: unknown command '%s' (see agentnest --help)\n", argv[i]);
  return AN_EXIT_RUNTIME;
}
