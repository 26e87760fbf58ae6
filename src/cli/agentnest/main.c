/* cli/agentnest/main.c — `agentnest` entry point: global options and the
 * subcommand table.  All logic lives in libagentnest. */
#include <getopt.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
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
    {"run", cmd_run, "run a command (argv) in a new sandbox, then destroy it"},
    {"shell", cmd_shell, "run a shell script (sh -c) in a new sandbox"},
    {"python", cmd_python, "run Python code or a FILE.py in a new sandbox"},
    {"batch", cmd_batch, "run many jobs from a JSON Lines file in parallel sandboxes"},
    {"create", cmd_create, "create a persistent sandbox, print its id"},
    {"exec", cmd_exec, "run a command in a live sandbox"},
    {"cp", cmd_cp, "copy files into or out of a sandbox's workspace"},
    {"ls", cmd_ls, "list sandboxes"},
    {"inspect", cmd_inspect, "print a sandbox as JSON"},
    {"destroy", cmd_destroy, "destroy sandboxes"},
    {"events", cmd_events, "print a sandbox's events"},
    {"prune", cmd_prune, "remove what dead or expired sandboxes left"},
    {"snapshot", cmd_snapshot, "write a sandbox's workspace to a tar"},
    {"restore", cmd_restore, "replace a sandbox's workspace from a tar"},
    {"artifacts", cmd_artifacts, "list (and copy out) workspace files matching globs"},
    {"fork", cmd_fork, "copy a sandbox (options and workspace) into a new one"},
    {"image", cmd_image, "import, list, inspect and remove images"},
    {"doctor", cmd_doctor, "report what this host offers sandboxes (JSON)"},
    {"policy", cmd_policy, "explain what each profile enforces, and what not, on this host"},
    {"profiles", cmd_profiles, "list the shipped profiles: purpose and key limits"},
    {"demo", cmd_demo, "a narrated tour on the default image"},
    {"pool", cmd_pool, "warm pools of ready sandboxes: start, ls, stop"},
    {"git", cmd_git, "git diff: a patch of a workspace repository, made inside the sandbox"},
    {"audit", cmd_audit, "print the store's audit log (every operation, kept after destroy)"},
    {"session", cmd_session, "stateful Python and shell sessions in a live sandbox"},
    {"proc", cmd_proc, "list, follow, signal and wait for detached processes (exec --detach)"},
    {"extend", cmd_extend, "extend a live sandbox's lifetime (bounded by its max_lifetime)"},
    {"mcp", cmd_mcp, "serve the Model Context Protocol on stdio (agent tools)"},
    {"serve", cmd_serve, "serve the authenticated HTTP API (OpenAPI 3.1)"},
    {"network", cmd_network, "print or change a live sandbox's egress policy"},
};

static void usage(FILE *f) {
  fprintf(f,
          "Usage: agentnest [--root DIR] COMMAND [ARG...]\n"
          "\n"
          "AgentNest runs untrusted code in disposable, policy-controlled Linux sandboxes.\n"
          "\n"
          "Global options:\n"
          "  --root DIR   image store and state (default $AGENTNEST_ROOT or /var/lib/agentnest)\n"
          "  --json       JSON output where a command offers it\n"
          "  --version    print the version and exit\n"
          "  -h, --help   this help\n"
          "\nCommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\nRun 'agentnest COMMAND --help' for a command's options. See agentnest(1).\n");
}

/* Run from a build tree (a fresh clone, before `make install`): when the
 * installed profiles are absent and <dir of this binary>/../profiles exists,
 * use it ($AGENTNEST_PROFILES; an_sandbox_profiles_dir). */
static void find_profiles(void) {
  const char *env = getenv("AGENTNEST_PROFILES");
  struct stat st;
  if ((env && *env) || stat(AN_DATADIR "/profiles/seccomp/default.json", &st) == 0) return;
  char exe[PATH_MAX], cand[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return;
  *slash = 0;
  snprintf(cand, sizeof cand, "%s/../profiles", exe);
  char real[PATH_MAX];
  if (realpath(cand, real) && stat(real, &st) == 0 && S_ISDIR(st.st_mode))
    setenv("AGENTNEST_PROFILES", real, 1);
}

int main(int argc, char **argv) {
  find_profiles();
  if (cli_ctx_init() < 0) return AN_EXIT_RUNTIME;
  struct an_global_opts g = {.root = getenv("AGENTNEST_ROOT")};
  if (!g.root || !*g.root) g.root = "/var/lib/agentnest";
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "--root") && i + 1 < argc) g.root = argv[++i];
    else if (!strcmp(argv[i], "--root") || !strcmp(argv[i], "--root=")) {
      fprintf(stderr, "agentnest: option '--root' needs an argument (--root DIR)\n");
      usage(stderr);
      return AN_EXIT_RUNTIME;
    }
    else if (!strncmp(argv[i], "--root=", 7)) g.root = argv[i] + 7;
    else if (!strcmp(argv[i], "--json")) g.json = 1;
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
