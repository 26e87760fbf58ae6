/* cli/oci/cmd_spec.c — `spec`: write a starter config.json with
 * AgentNest's secure defaults (an_spec_new_default), optionally rootless. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/oci/oci.h"
#include "util/cleanup.h"

/* Rootless (runc spec --rootless): the only ids the caller can map are its
 * own, so container root is the caller's uid/gid and the process runs as 0
 * inside the user namespace. */
static int make_rootless(struct an_spec *spec, an_error_t *err) {
  struct an_spec_id_mapping *u = calloc(1, sizeof *u), *g = calloc(1, sizeof *g);
  if (!u || !g) { free(u); free(g); return an_error_set(err, ENOMEM, "id mappings"); }
  *u = (struct an_spec_id_mapping){ .container_id = 0, .host_id = geteuid(), .size = 1 };
  *g = (struct an_spec_id_mapping){ .container_id = 0, .host_id = getegid(), .size = 1 };
  free(spec->linux.uid_mappings);
  free(spec->linux.gid_mappings);
  spec->linux.uid_mappings = u;
  spec->linux.n_uid_mappings = 1;
  spec->linux.gid_mappings = g;
  spec->linux.n_gid_mappings = 1;
  if (spec->process) {
    spec->process->user.uid = 0;
    spec->process->user.gid = 0;
    free(spec->process->user.additional_gids);
    spec->process->user.additional_gids = NULL;
    spec->process->user.n_additional_gids = 0;
  }
  return 0;
}

int oci_cmd_spec(struct oci_ctx *ctx, int argc, char **argv) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  static const struct option long_opts[] = {
    {"bundle", required_argument, NULL, 'b'}, {"rootless", no_argument, NULL, 'r'},
    {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  const char *bundle = ".";
  bool rootless = false;
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+b:h", long_opts, NULL)) != -1) {
    if (c == 'b') bundle = optarg;
    else if (c == 'r') rootless = true;
    else if (c == 'h') { oci_print_command_help(cmd, stdout); return 0; }
    else return oci_usage_error(ctx, cmd, "flag provided but not defined: %s", argv[optind - 1]);
  }
  if (oci_check_args(ctx, cmd, argc - optind, 0, 0)) return 1;

  cleanup_error an_error_t err = NULL;
  struct an_spec *spec = NULL;
  cleanup_free char *json = NULL;
  int r = an_spec_new_default(&spec, &err);
  if (r == 0 && rootless) r = make_rootless(spec, &err);
  if (r == 0) r = an_spec_to_json(spec, &json, &err);
  an_spec_free(spec);
  if (r < 0) return oci_fail_error(ctx, &err);

  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/config.json", bundle);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 && errno == EEXIST) return oci_fail(ctx, "File %s exists. Remove it first", path);
  if (fd < 0) return oci_fail(ctx, "open %s: %s", path, strerror(errno));
  FILE *out = fdopen(fd, "w");
  if (!out) { close(fd); unlink(path); return oci_fail(ctx, "fdopen %s", path); }
  r = oci_json_reprint(json, out, &err);
  if (fclose(out) != 0 && r == 0) r = an_error_set(&err, errno, "write %s", path);
  if (r < 0) { unlink(path); return oci_fail_error(ctx, &err); }
  return 0;
}
