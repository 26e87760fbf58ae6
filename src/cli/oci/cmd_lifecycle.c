/* cli/oci/cmd_lifecycle.c — `create`, `run`, `start` and `delete`: the
 * runtime-spec lifecycle (runtime.md "Lifecycle") with runc's flags. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "agentnest/cdi.h"
#include "agentnest/container.h"
#include "cli/oci/oci.h"
#include "engine/caps.h"
#include "util/cleanup.h"

enum { OPT_CONSOLE = 256, OPT_PIDFILE, OPT_NOPIVOT, OPT_NOKEYRING, OPT_PRESERVE, OPT_KEEP,
       OPT_NOSUBREAPER };

/* Parse create's (and, with `is_run`, run's) flags into *opts and return the
 * index of the first positional argument, or -1 after reporting an error. */
static int parse_create_flags(struct oci_ctx *ctx, const struct oci_command *cmd, bool is_run,
                              int argc, char **argv, struct an_container_opts *opts,
                              const char **bundle) {
  static const struct option long_opts[] = {
    {"bundle", required_argument, NULL, 'b'},
    {"console-socket", required_argument, NULL, OPT_CONSOLE},
    {"pid-file", required_argument, NULL, OPT_PIDFILE},
    {"no-pivot", no_argument, NULL, OPT_NOPIVOT},
    {"no-new-keyring", no_argument, NULL, OPT_NOKEYRING},
    {"preserve-fds", required_argument, NULL, OPT_PRESERVE},
    {"detach", no_argument, NULL, 'd'},
    {"keep", no_argument, NULL, OPT_KEEP},
    {"no-subreaper", no_argument, NULL, OPT_NOSUBREAPER},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, is_run ? "+b:dh" : "+b:h", long_opts, NULL)) != -1) {
    switch (c) {
    case 'b': *bundle = optarg; break;
    case OPT_CONSOLE: opts->console_socket = optarg; break;
    case OPT_PIDFILE: opts->pid_file = optarg; break;
    case OPT_NOPIVOT: opts->no_pivot = true; break;
    case OPT_NOKEYRING: opts->no_new_keyring = true; break;
    case OPT_PRESERVE:
      if ((opts->preserve_fds = oci_parse_uint(optarg)) < 0) {
        oci_usage_error(ctx, cmd, "invalid value \"%s\" for flag --preserve-fds", optarg);
        return -1;
      }
      break;
    case 'd': case OPT_KEEP: case OPT_NOSUBREAPER:
      if (!is_run) goto bad;
      if (c == 'd') opts->detach = true;
      if (c == OPT_KEEP) opts->keep = true;
      break;
    case 'h': oci_print_command_help(cmd, stdout); return -2;
    default:
    bad:
      oci_usage_error(ctx, cmd, "flag provided but not defined: %s", argv[optind - 1]);
      return -1;
    }
  }
  return optind;
}

/* Load the bundle's config and warn (like runc) about capabilities the
 * kernel does not have; they are skipped. */
static int load_bundle(struct oci_ctx *ctx, const char *bundle, char *abs_bundle,
                       struct an_spec **spec) {
  cleanup_error an_error_t err = NULL;
  struct stat st;
  if (stat(bundle, &st) < 0 || !S_ISDIR(st.st_mode) || !realpath(bundle, abs_bundle))
    return oci_fail(ctx, "bundle \"%s\": %s", bundle, errno ? strerror(errno) : "not a directory");
  if (oci_load_bundle_spec(abs_bundle, spec, &err) < 0) return oci_fail_error(ctx, &err);
  if ((*spec)->process && (*spec)->process->capabilities) {
    cleanup_strv char **unavailable = NULL;
    if (an_caps_check((*spec)->process->capabilities, &unavailable, &err) < 0) {
      an_spec_free(*spec);
      *spec = NULL;
      return oci_fail_error(ctx, &err);
    }
    for (char **u = unavailable; u && *u; u++)
      oci_log(ctx, "warning", "ignoring capability %s: not known to this kernel", *u);
  }
  /* CDI devices named by annotations under cdi.k8s.io/: their containerEdits
   * go into the spec before create (agentnest/cdi.h). */
  cleanup_strv char **cdi = NULL;
  if (an_cdi_annotation_devices(*spec, &cdi, &err) < 0 ||
      an_cdi_apply_from_dirs(ctx->cdi_spec_dirs[0] ? ctx->cdi_spec_dirs : NULL, *spec,
                             (const char *const *) cdi,
                             ctx->cdi_allow_hooks ? AN_CDI_ALLOW_HOOKS : 0, &err) < 0) {
    an_spec_free(*spec);
    *spec = NULL;
    return oci_fail_error(ctx, &err);
  }
  for (char **d = cdi; d && *d; d++) oci_log(ctx, "debug", "CDI device %s applied", *d);
  oci_log(ctx, "debug", "bundle %s: config.json loaded", abs_bundle);
  return 0;
}

static int create_or_run(struct oci_ctx *ctx, int argc, char **argv, bool is_run) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  struct an_container_opts opts = { .state_root = ctx->root, .stdio = {-1, -1, -1} };
  const char *bundle = ".";
  int first = parse_create_flags(ctx, cmd, is_run, argc, argv, &opts, &bundle);
  if (first == -2) return 0;
  if (first < 0) return 1;
  if (oci_check_args(ctx, cmd, argc - first, 1, 1)) return 1;
  opts.id = argv[first];
  char abs_bundle[PATH_MAX];
  struct an_spec *spec = NULL;
  if (load_bundle(ctx, bundle, abs_bundle, &spec)) return 1;
  opts.bundle = abs_bundle;
  cleanup_error an_error_t err = NULL;
  int r = is_run ? an_container_run(spec, &opts, &err) : an_container_create(spec, &opts, &err);
  an_spec_free(spec);
  if (r < 0) return oci_fail_error(ctx, &err);
  oci_log(ctx, "debug", "%s %s: status %d", argv[0], opts.id, r);
  return is_run ? r : 0;
}

int oci_cmd_create(struct oci_ctx *ctx, int argc, char **argv) {
  return create_or_run(ctx, argc, argv, false);
}

int oci_cmd_run(struct oci_ctx *ctx, int argc, char **argv) {
  return create_or_run(ctx, argc, argv, true);
}

/* Commands that take exactly one container id and only --help (oci.h). */
int oci_id_only_args(struct oci_ctx *ctx, int argc, char **argv, const char **id) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  static const struct option long_opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+h", long_opts, NULL)) != -1) {
    if (c == 'h') { oci_print_command_help(cmd, stdout); return -2; }
    oci_usage_error(ctx, cmd, "flag provided but not defined: %s", argv[optind - 1]);
    return -1;
  }
  if (oci_check_args(ctx, cmd, argc - optind, 1, 1)) return -1;
  *id = argv[optind];
  if (oci_require_container(ctx, *id)) return -1;
  return 0;
}

int oci_cmd_start(struct oci_ctx *ctx, int argc, char **argv) {
  const char *id;
  int r = oci_id_only_args(ctx, argc, argv, &id);
  if (r) return r == -2 ? 0 : 1;
  cleanup_error an_error_t err = NULL;
  if (an_container_start(ctx->root, id, &err) < 0) return oci_fail_error(ctx, &err);
  return 0;
}

int oci_cmd_delete(struct oci_ctx *ctx, int argc, char **argv) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  static const struct option long_opts[] = {
    {"force", no_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  bool force = false;
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+fh", long_opts, NULL)) != -1) {
    if (c == 'f') force = true;
    else if (c == 'h') { oci_print_command_help(cmd, stdout); return 0; }
    else return oci_usage_error(ctx, cmd, "flag provided but not defined: %s", argv[optind - 1]);
  }
  if (oci_check_args(ctx, cmd, argc - optind, 1, -1)) return 1;
  int ret = 0;
  for (int i = optind; i < argc; i++) {
    const char *id = argv[i];
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", ctx->root, id);
    /* runc: deleting a container that does not exist succeeds with --force. */
    if (force && strchr(id, '/') == NULL && strcmp(id, "..") && strcmp(id, ".") &&
        stat(path, &st) < 0 && errno == ENOENT)
      continue;
    if (oci_require_container(ctx, id)) { ret = 1; continue; }
    cleanup_error an_error_t err = NULL;
    if (an_container_delete(ctx->root, id, force, &err) < 0) ret = oci_fail_error(ctx, &err);
  }
  return ret;
}
