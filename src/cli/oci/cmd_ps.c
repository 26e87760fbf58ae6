/* cli/oci/cmd_ps.c — `ps`: the container's processes.  `--format json`
 * prints the pid array; the table is the host's ps(1) output (default
 * `ps -ef`, or the given ps options) filtered to the container's pids, as
 * runc does. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/container.h"
#include "cli/oci/oci.h"
#include "util/cleanup.h"

extern char **environ;

static bool has_pid(const pid_t *pids, size_t n, long pid) {
  for (size_t i = 0; i < n; i++)
    if (pids[i] == pid) return true;
  return false;
}

/* The index of the PID column in ps's header line, or -1. */
static int pid_column(char *header) {
  int col = 0;
  cleanup_free char *copy = strdup(header);
  for (char *save = NULL, *t = copy ? strtok_r(copy, " \t\n", &save) : NULL; t;
       t = strtok_r(NULL, " \t\n", &save), col++)
    if (strcmp(t, "PID") == 0) return col;
  return -1;
}

static long field_as_pid(const char *line, int col) {
  cleanup_free char *copy = strdup(line);
  char *save = NULL, *t = copy ? strtok_r(copy, " \t\n", &save) : NULL;
  for (int i = 0; t && i < col; i++) t = strtok_r(NULL, " \t\n", &save);
  if (!t) return -1;
  char *end;
  long v = strtol(t, &end, 10);
  return *end ? -1 : v;
}

static int ps_table(struct oci_ctx *ctx, const pid_t *pids, size_t n, int argc, char **argv) {
  char *def[] = {"ps", "-ef", NULL};
  cleanup_free char **args = calloc(argc + 2, sizeof *args);
  if (!args) return oci_fail(ctx, "out of memory");
  args[0] = "ps";
  for (int i = 0; i < argc; i++) args[i + 1] = argv[i];
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return oci_fail(ctx, "pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  pid_t child;
  int r = posix_spawnp(&child, "ps", &fa, NULL, argc ? args : def, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (r != 0) { close(fds[0]); return oci_fail(ctx, "exec ps: %s", strerror(r)); }
  FILE *in = fdopen(fds[0], "r");
  char *line = NULL;
  size_t cap = 0;
  int col = -1, ret = 0;
  bool first = true;
  while (in && getline(&line, &cap, in) > 0) {
    if (first) {
      first = false;
      col = pid_column(line);
      fputs(line, stdout);
      if (col < 0) { ret = oci_fail(ctx, "couldn't find PID field in ps output"); break; }
      continue;
    }
    if (has_pid(pids, n, field_as_pid(line, col))) fputs(line, stdout);
  }
  free(line);
  if (in) fclose(in); else close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!ret && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
    ret = oci_fail(ctx, "ps exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  return ret;
}

int oci_cmd_ps(struct oci_ctx *ctx, int argc, char **argv) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  static const struct option long_opts[] = {
    {"format", required_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  const char *format = "table";
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+f:h", long_opts, NULL)) != -1) {
    if (c == 'f') format = optarg;
    else if (c == 'h') { oci_print_command_help(cmd, stdout); return 0; }
    else return oci_usage_error(ctx, cmd, "flag provided but not defined: %s", argv[optind - 1]);
  }
  if (oci_check_args(ctx, cmd, argc - optind, 1, -1)) return 1;
  bool json = strcmp(format, "json") == 0;
  if (!json && strcmp(format, "table") != 0) return oci_fail(ctx, "invalid format option");
  const char *id = argv[optind];
  if (oci_require_container(ctx, id)) return 1;
  cleanup_error an_error_t err = NULL;
  cleanup_free pid_t *pids = NULL;
  size_t n = 0;
  if (an_container_pids(ctx->root, id, &pids, &n, &err) < 0) return oci_fail_error(ctx, &err);
  if (json) {
    cleanup_jgen struct an_jgen j;
    oci_json_init(&j, false);   /* a failure is reported by oci_json_print */
    an_jgen_array_open(&j);
    for (size_t i = 0; i < n; i++) an_jgen_i64(&j, pids[i]);
    an_jgen_array_close(&j);
    int r = oci_json_print(&j);
    return r < 0 ? oci_fail(ctx, "ps: JSON: %s", an_errno_name(-r)) : 0;
  }
  fflush(stdout);
  return ps_table(ctx, pids, n, argc - optind - 1, argv + optind + 1);
}
