/* cli/oci/cmd_exec.c — `exec`: run a new process in a running container.
 * As runc does, the process is either read from `--process FILE` (a
 * runtime-spec "process" object) or is the bundle's config.json process with
 * the command line's args and changes (env appended, cwd, user, tty, caps). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/container.h"
#include "cli/oci/oci.h"
#include "util/cleanup.h"

enum { OPT_CWD = 256, OPT_PIDFILE, OPT_CONSOLE, OPT_NNP, OPT_PRESERVE, OPT_APPARMOR, OPT_LABEL,
       OPT_IGNORED_ARG };

/* Append a copy of `s` to the NULL-terminated heap array *v. */
static int strv_append(char ***v, const char *s) {
  size_t n = 0;
  while (*v && (*v)[n]) n++;
  char **grown = realloc(*v, (n + 2) * sizeof *grown);
  if (!grown) return -ENOMEM;
  *v = grown;
  if (!(grown[n] = strdup(s))) { grown[n] = NULL; return -ENOMEM; }
  grown[n + 1] = NULL;
  return 0;
}

/* Parse a process.json: wrapped as the "process" of a minimal config so the
 * one runtime-spec parser (spec.h) handles it. */
static int load_process_file(const char *path, struct an_spec **holder, an_error_t *err) {
  cleanup_fclose FILE *f = fopen(path, "re");
  if (!f) return an_error_set(err, errno, "open process file %s", path);
  cleanup_free char *doc = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&doc, &len);
  if (!mem) return an_error_set(err, errno, "open_memstream");
  fputs("{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},\"process\":", mem);
  char buf[8192];
  size_t n, total = 0;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    total += n;
    if (total > (16u << 20)) { fclose(mem); return an_error_set(err, EFBIG, "process file %s", path); }
    fwrite(buf, 1, n, mem);
  }
  fputs("\n}", mem);
  if (fclose(mem) != 0) return an_error_set(err, ENOMEM, "read process file %s", path);
  int r = an_spec_parse(doc, len, holder, err);
  if (r < 0) return an_error_prefix(err, "process file %s", path);
  if (!(*holder)->process) return an_error_set(err, EINVAL, "process file %s: no process", path);
  return 0;
}

struct exec_flags {
  const char *process_file, *cwd, *user, *pid_file, *console_socket;
  char **env, **caps, **gids;
  bool tty, detach, no_new_privs;
};

static int apply_flags(struct an_spec_process *p, const struct exec_flags *fl, int argc,
                       char **argv, an_error_t *err) {
  if (argc > 0) {
    char **args = calloc(argc + 1, sizeof *args);
    if (!args) return an_error_set(err, ENOMEM, "args");
    for (int i = 0; i < argc; i++)
      if (!(args[i] = strdup(argv[i]))) { an_strv_free(args); return an_error_set(err, ENOMEM, "args"); }
    an_strv_free(p->args);
    p->args = args;
  }
  for (char **e = fl->env; e && *e; e++)
    if (strv_append(&p->env, *e) < 0) return an_error_set(err, ENOMEM, "env");
  if (fl->cwd) {
    char *cwd = strdup(fl->cwd);
    if (!cwd) return an_error_set(err, ENOMEM, "cwd");
    free(p->cwd);
    p->cwd = cwd;
  }
  if (fl->tty) p->terminal = true;
  if (fl->no_new_privs) p->no_new_privileges = true;
  if (fl->user) {
    char *end;
    errno = 0;
    unsigned long uid = strtoul(fl->user, &end, 10), gid = p->user.gid;
    if (end == fl->user || (*end && *end != ':') || errno || uid > UINT32_MAX - 1)
      return an_error_set(err, EINVAL, "--user \"%s\": expected <uid>[:<gid>]", fl->user);
    if (*end == ':') {
      const char *g = end + 1;
      gid = strtoul(g, &end, 10);
      if (end == g || *end || errno || gid > UINT32_MAX - 1)
        return an_error_set(err, EINVAL, "--user \"%s\": expected <uid>[:<gid>]", fl->user);
    }
    p->user.uid = (uid_t) uid;
    p->user.gid = (gid_t) gid;
  }
  for (char **g = fl->gids; g && *g; g++) {
    int v = oci_parse_uint(*g);
    if (v < 0) return an_error_set(err, EINVAL, "--additional-gids \"%s\": not a gid", *g);
    gid_t *grown = realloc(p->user.additional_gids, (p->user.n_additional_gids + 1) * sizeof *grown);
    if (!grown) return an_error_set(err, ENOMEM, "additional gids");
    p->user.additional_gids = grown;
    grown[p->user.n_additional_gids++] = (gid_t) v;
  }
  if (fl->caps) {
    if (!p->capabilities && !(p->capabilities = calloc(1, sizeof *p->capabilities)))
      return an_error_set(err, ENOMEM, "capabilities");
    /* runc exec --cap: bounding, effective and permitted (inheritable and
     * ambient stay as configured: BL-04). */
    for (char **c = fl->caps; *c; c++)
      if (strv_append(&p->capabilities->bounding, *c) < 0 ||
          strv_append(&p->capabilities->effective, *c) < 0 ||
          strv_append(&p->capabilities->permitted, *c) < 0)
        return an_error_set(err, ENOMEM, "capabilities");
  }
  return 0;
}

int oci_cmd_exec(struct oci_ctx *ctx, int argc, char **argv) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  static const struct option long_opts[] = {
    {"process", required_argument, NULL, 'p'},
    {"tty", no_argument, NULL, 't'},
    {"env", required_argument, NULL, 'e'},
    {"cwd", required_argument, NULL, OPT_CWD},
    {"user", required_argument, NULL, 'u'},
    {"additional-gids", required_argument, NULL, 'g'},
    {"detach", no_argument, NULL, 'd'},
    {"pid-file", required_argument, NULL, OPT_PIDFILE},
    {"console-socket", required_argument, NULL, OPT_CONSOLE},
    {"cap", required_argument, NULL, 'c'},
    {"no-new-privs", no_argument, NULL, OPT_NNP},
    {"preserve-fds", required_argument, NULL, OPT_PRESERVE},
    {"apparmor", required_argument, NULL, OPT_APPARMOR},
    {"process-label", required_argument, NULL, OPT_LABEL},
    {"cgroup", required_argument, NULL, OPT_IGNORED_ARG},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
  };
  struct exec_flags fl = {0};
  cleanup_strv char **env = NULL, **caps = NULL, **gids = NULL;
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+p:te:u:g:dc:h", long_opts, NULL)) != -1) {
    switch (c) {
    case 'p': fl.process_file = optarg; break;
    case 't': fl.tty = true; break;
    case 'e': if (strv_append(&env, optarg) < 0) return oci_fail(ctx, "out of memory"); break;
    case OPT_CWD: fl.cwd = optarg; break;
    case 'u': fl.user = optarg; break;
    case 'g': {
      /* runc takes a comma-separated list or repeated flags */
      cleanup_free char *copy = strdup(optarg);
      for (char *save = NULL, *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
        if (strv_append(&gids, t) < 0) return oci_fail(ctx, "out of memory");
      break;
    }
    case 'd': fl.detach = true; break;
    case OPT_PIDFILE: fl.pid_file = optarg; break;
    case OPT_CONSOLE: fl.console_socket = optarg; break;
    case 'c': if (strv_append(&caps, optarg) < 0) return oci_fail(ctx, "out of memory"); break;
    case OPT_NNP: fl.no_new_privs = true; break;
    case OPT_PRESERVE:
      if (oci_parse_uint(optarg) != 0)
        return oci_fail(ctx, "--preserve-fds %s: exec does not pass extra fds", optarg);
      break;
    case OPT_APPARMOR: case OPT_LABEL:
      return oci_fail(ctx, "%s: LSM labels are not supported by %s", argv[optind - 1], OCI_PROG);
    case OPT_IGNORED_ARG:
      return oci_fail(ctx, "--cgroup: exec into a sub-cgroup is not supported");
    case 'h': oci_print_command_help(cmd, stdout); return 0;
    default: return oci_usage_error(ctx, cmd, "flag provided but not defined: %s", argv[optind - 1]);
    }
  }
  fl.env = env;
  fl.caps = caps;
  fl.gids = gids;
  if (oci_check_args(ctx, cmd, argc - optind, 1, -1)) return 1;
  const char *id = argv[optind];
  int nargs = argc - optind - 1;
  if (!fl.process_file && nargs == 0)
    return oci_usage_error(ctx, cmd, "exec args cannot be empty");
  if (oci_require_container(ctx, id)) return 1;

  cleanup_error an_error_t err = NULL;
  struct an_spec *holder = NULL;
  if (fl.process_file) {
    if (load_process_file(fl.process_file, &holder, &err) < 0) return oci_fail_error(ctx, &err);
  } else {
    struct an_container_state *st = NULL;
    if (an_container_state(ctx->root, id, &st, &err) < 0) return oci_fail_error(ctx, &err);
    int r = st->bundle ? oci_load_bundle_spec(st->bundle, &holder, &err)
                       : an_error_set(&err, ENOENT, "container %s: no bundle recorded", id);
    an_container_state_free(st);
    if (r < 0) return oci_fail_error(ctx, &err);
    if (!holder->process && !(holder->process = calloc(1, sizeof *holder->process))) {
      an_spec_free(holder);
      return oci_fail(ctx, "out of memory");
    }
    /* a terminal belongs to the exec only when asked for (runc: -t) */
    holder->process->terminal = false;
  }
  int r = apply_flags(holder->process, &fl, fl.process_file ? 0 : nargs, argv + optind + 1, &err);
  if (r == 0 && (!holder->process->cwd || !holder->process->cwd[0]) &&
      !(holder->process->cwd = strdup("/")))
    r = an_error_set(&err, ENOMEM, "cwd");
  if (r < 0) { an_spec_free(holder); return oci_fail_error(ctx, &err); }
  oci_log(ctx, "debug", "exec %s: %s", id, holder->process->args ? holder->process->args[0] : "?");
  pid_t pid = 0;
  r = an_container_exec(ctx->root, id, holder->process, fl.detach, fl.console_socket,
                        fl.pid_file, &pid, &err);
  an_spec_free(holder);
  if (r < 0) return oci_fail_error(ctx, &err);
  return fl.detach ? 0 : r;
}
