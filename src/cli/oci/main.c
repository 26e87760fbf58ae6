/* cli/oci/main.c — `agentnest-oci`: runc's global flags, the two command
 * tables (OCI runtime-spec operations, runc extras), --help and --version.
 * Each command lives in its own cmd_*.c file. */
#include <errno.h>
#include <getopt.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/oci/oci.h"

/* runtime-spec runtime.md "Operations": state, create, start, kill, delete. */
const struct oci_command oci_standard_commands[] = {
  {"create", oci_cmd_create, "[command options] <container-id>", "create a container",
   "The create command creates an instance of a container for a bundle. The bundle\n"
   "is a directory with a specification file named \"config.json\" and a root\n"
   "filesystem. The container is left in the \"created\" state, its process waiting\n"
   "for \"start\".\n\n"
   "OPTIONS:\n"
   "   --bundle value, -b value  path to the root of the bundle directory, defaults to the current directory\n"
   "   --console-socket value    path to an AF_UNIX socket which will receive a file descriptor referencing the master end of the console's pseudoterminal\n"
   "   --pid-file value          specify the file to write the process id to\n"
   "   --no-pivot                do not use pivot root to jail process inside rootfs\n"
   "   --no-new-keyring          do not create a new session keyring for the container\n"
   "   --preserve-fds value      Pass N additional file descriptors to the container (stdio + N in total) (default: 0)\n"},
  {"start", oci_cmd_start, "<container-id>", "executes the user defined process in a created container",
   "The start command executes the user defined process in a created container.\n"},
  {"state", oci_cmd_state, "<container-id>", "output the state of a container",
   "The state command outputs current state information for the instance of a\n"
   "container, as runtime-spec \"State\" JSON.\n"},
  {"kill", oci_cmd_kill, "[command options] <container-id> [signal]",
   "kill sends the specified signal (default: SIGTERM) to the container's init process",
   "The signal is a number or a name with or without the SIG prefix, e.g.\n\n"
   "       # " OCI_PROG " kill ubuntu01 KILL\n\n"
   "OPTIONS:\n"
   "   --all, -a  send the specified signal to all processes inside the container\n"},
  {"delete", oci_cmd_delete, "[command options] <container-id> [container-id...]",
   "delete any resources held by the container often used with detached container",
   "OPTIONS:\n"
   "   --force, -f  Forcibly deletes the container if it is still running (uses SIGKILL)\n"},
  {NULL, NULL, NULL, NULL, NULL},
};

/* runc's commands beyond the runtime-spec operations. */
const struct oci_command oci_extra_commands[] = {
  {"run", oci_cmd_run, "[command options] <container-id>", "create and run a container",
   "The run command creates an instance of a container for a bundle, starts it\n"
   "and, unless detached, waits for it, then deletes it. The exit status is the\n"
   "container process's.\n\n"
   "OPTIONS:\n"
   "   --bundle value, -b value  path to the root of the bundle directory, defaults to the current directory\n"
   "   --console-socket value    path to an AF_UNIX socket which will receive a file descriptor referencing the master end of the console's pseudoterminal\n"
   "   --detach, -d              detach from the container's process\n"
   "   --keep                    do not delete the container after it exits\n"
   "   --pid-file value          specify the file to write the process id to\n"
   "   --no-pivot                do not use pivot root to jail process inside rootfs\n"
   "   --no-new-keyring          do not create a new session keyring for the container\n"
   "   --preserve-fds value      Pass N additional file descriptors to the container (stdio + N in total) (default: 0)\n"},
  {"exec", oci_cmd_exec, "[command options] <container-id> <command> [command options]  || -p process.json <container-id>",
   "execute new process inside the container",
   "The exec command runs a new process inside a running container. Without\n"
   "--process, the process is the bundle's config.json process with the given\n"
   "command and changes.\n\n"
   "OPTIONS:\n"
   "   --console-socket value   path to an AF_UNIX socket which will receive a file descriptor referencing the master end of the console's pseudoterminal\n"
   "   --cwd value              current working directory in the container\n"
   "   --env value, -e value    set environment variables\n"
   "   --tty, -t                allocate a pseudo-TTY\n"
   "   --user value, -u value   UID (format: <uid>[:<gid>])\n"
   "   --additional-gids value, -g value  additional gids\n"
   "   --process value, -p value  path to the process.json\n"
   "   --detach, -d             detach from the container's process\n"
   "   --pid-file value         specify the file to write the process id to\n"
   "   --cap value, -c value    add a capability to the bounding, effective and permitted sets of the process\n"
   "   --no-new-privs           set the no new privileges value for the process\n"},
  {"list", oci_cmd_list, "[command options]", "lists containers started by " OCI_PROG " with the given root",
   "OPTIONS:\n"
   "   --format value, -f value  select one of: table or json (default: \"table\")\n"
   "   --quiet, -q               display only container IDs\n"},
  {"ps", oci_cmd_ps, "[command options] <container-id> [ps options]", "ps displays the processes running inside a container",
   "OPTIONS:\n"
   "   --format value, -f value  select one of: table or json (default: \"table\")\n"},
  {"pause", oci_cmd_pause, "<container-id>", "pause suspends all processes inside the container",
   "The pause command suspends all processes in the instance of the container\n"
   "(cgroup freezer).\n"},
  {"resume", oci_cmd_resume, "<container-id>", "resumes all processes that have been previously paused",
   "The resume command resumes all processes in the instance of the container.\n"},
  {"update", oci_cmd_update, "[command options] <container-id>", "update container resource constraints",
   "The update command changes the resource limits of a created, running or paused\n"
   "container, in its cgroup and in its stored config.  With --resources the limits\n"
   "are read as runtime-spec LinuxResources JSON from a file or, with '-', from the\n"
   "standard input, e.g. {\"memory\": {\"limit\": 104857600}, \"pids\": {\"limit\": 64}};\n"
   "all other options are then ignored.\n\n"
   "OPTIONS:\n"
   "   --resources value, -r value  path to the file containing the resources to update or '-' to read from the standard input\n"
   "   --blkio-weight value        Specifies per cgroup weight, range is from 10 to 1000 (default: 0)\n"
   "   --cpu-period value          CPU CFS period to be used for hardcapping (in usecs). 0 to use system default\n"
   "   --cpu-quota value           CPU CFS hardcap limit (in usecs). Allowed cpu time in a given period\n"
   "   --cpu-share value           CPU shares (relative weight vs. other containers)\n"
   "   --cpu-rt-period value       CPU realtime period to be used for hardcapping (in usecs). 0 to use system default\n"
   "   --cpu-rt-runtime value      CPU realtime hardcap limit (in usecs). Allowed cpu time in a given period\n"
   "   --cpuset-cpus value         CPU(s) to use\n"
   "   --cpuset-mems value         Memory node(s) to use\n"
   "   --memory value              Memory limit (in bytes, or with a unit: 512m)\n"
   "   --memory-reservation value  Memory reservation or soft_limit (in bytes)\n"
   "   --memory-swap value         Total memory usage (memory + swap); set '-1' to enable unlimited swap\n"
   "   --pids-limit value          Maximum number of pids allowed in the container (default: 0)\n"
   "   --l3-cache-schema value     Intel RDT: refused (not supported)\n"
   "   --mem-bw-schema value       Intel RDT: refused (not supported)\n"},
  {"spec", oci_cmd_spec, "[command options]", "create a new specification file",
   "The spec command creates the new specification file named \"config.json\" for\n"
   "the bundle, with AgentNest's secure defaults (user namespace, no capabilities,\n"
   "noNewPrivileges, read-only root \"rootfs\").\n\n"
   "OPTIONS:\n"
   "   --bundle value, -b value  path to the root of the bundle directory\n"
   "   --rootless                generate a configuration for a rootless container\n"},
  {"features", oci_cmd_features, "", "show the enabled features",
   "Show the enabled features, as runtime-spec features.md JSON.\n"},
  {NULL, NULL, NULL, NULL, NULL},
};

const struct oci_command *oci_find_command(const char *name) {
  for (const struct oci_command *c = oci_standard_commands; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  for (const struct oci_command *c = oci_extra_commands; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

void oci_print_command_help(const struct oci_command *cmd, FILE *out) {
  fprintf(out, "NAME:\n   %s %s - %s\n\nUSAGE:\n   %s %s %s\n\nDESCRIPTION:\n%s", OCI_PROG,
          cmd->name, cmd->summary, OCI_PROG, cmd->name, cmd->usage, cmd->help);
}

static void print_version(void) {
  const struct scmp_version *v = seccomp_version();
  printf("%s version %s\nspec: %s\nlibseccomp: %u.%u.%u\n"
         "+SECCOMP +CAP +CGROUPV1 +CGROUPV2 +IDMAP -SYSTEMD -SELINUX -APPARMOR -CRIU\n",
         OCI_PROG, AN_VERSION, OCI_SPEC_VERSION, v->major, v->minor, v->micro);
}

static void print_help(FILE *out) {
  fprintf(out,
          "NAME:\n   %s - Open Container Initiative runtime (AgentNest engine)\n\n"
          "USAGE:\n   %s [global options] command [command options] [arguments...]\n\n"
          "VERSION:\n   %s\nspec: %s\n\nCOMMANDS (runtime-spec operations):\n",
          OCI_PROG, OCI_PROG, AN_VERSION, OCI_SPEC_VERSION);
  for (const struct oci_command *c = oci_standard_commands; c->name; c++)
    fprintf(out, "   %-9s %s\n", c->name, c->summary);
  fprintf(out, "\nCOMMANDS (runc extras):\n");
  for (const struct oci_command *c = oci_extra_commands; c->name; c++)
    fprintf(out, "   %-9s %s\n", c->name, c->summary);
  fprintf(out,
          "   help, h   Shows a list of commands or help for one command\n\n"
          "GLOBAL OPTIONS:\n"
          "   --debug                  enable debug logging\n"
          "   --log value              set the log file to write " OCI_PROG " logs to (default is '/dev/stderr')\n"
          "   --log-format value       set the log format ('text' (default), or 'json') (default: \"text\")\n"
          "   --root value             root directory for storage of container state (default: \"" OCI_DEFAULT_ROOT "\")\n"
          "   --systemd-cgroup         enable systemd cgroup support (refused: not supported)\n"
          "   --cgroup-manager value   cgroupfs (the only manager supported; systemd is refused)\n"
          "   --rootless value         ignore cgroup permission errors ('true', 'false', or 'auto') (default: \"auto\")\n"
          "   --help, -h               show help\n"
          "   --version, -v            print the version\n");
}

enum { OPT_ROOT = 256, OPT_LOG, OPT_LOG_FORMAT, OPT_DEBUG, OPT_SYSTEMD, OPT_CGMGR, OPT_ROOTLESS, OPT_CRIU };

int main(int argc, char **argv) {
  static const struct option opts[] = {
    {"root", required_argument, NULL, OPT_ROOT},
    {"log", required_argument, NULL, OPT_LOG},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"debug", no_argument, NULL, OPT_DEBUG},
    {"systemd-cgroup", no_argument, NULL, OPT_SYSTEMD},
    {"cgroup-manager", required_argument, NULL, OPT_CGMGR},
    {"rootless", required_argument, NULL, OPT_ROOTLESS},
    {"criu", required_argument, NULL, OPT_CRIU},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
  };
  struct oci_ctx ctx = { .root = OCI_DEFAULT_ROOT, .log_format = OCI_LOG_TEXT };
  const char *log_format = "text", *systemd_refusal = NULL;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+hv", opts, NULL)) != -1) {
    switch (c) {
    case OPT_ROOT: ctx.root = optarg; break;
    case OPT_LOG: ctx.log_path = optarg; break;
    case OPT_LOG_FORMAT: log_format = optarg; break;
    case OPT_DEBUG: ctx.debug = true; break;
    case OPT_SYSTEMD: systemd_refusal = "--systemd-cgroup"; break;
    case OPT_CGMGR:
      if (strcmp(optarg, "systemd") == 0) systemd_refusal = "--cgroup-manager systemd";
      else if (strcmp(optarg, "cgroupfs") != 0) {
        return oci_fail(&ctx, "invalid --cgroup-manager value \"%s\": use cgroupfs", optarg);
      }
      break;
    case OPT_ROOTLESS:
      if (strcmp(optarg, "true") && strcmp(optarg, "false") && strcmp(optarg, "auto"))
        return oci_fail(&ctx, "invalid --rootless value \"%s\": use true, false or auto", optarg);
      break;
    case OPT_CRIU: break;   /* accepted for compatibility; checkpoint/restore is not offered */
    case 'h': print_help(stdout); return 0;
    case 'v': print_version(); return 0;
    default:
      return oci_fail(&ctx, "flag provided but not defined: %s", argv[optind - 1]);
    }
  }
  if (strcmp(log_format, "json") == 0) ctx.log_format = OCI_LOG_JSON;
  else if (strcmp(log_format, "text") != 0) return oci_fail(&ctx, "invalid log-format: %s", log_format);
  if (ctx.log_path) {
    ctx.log = fopen(ctx.log_path, "ae");
    if (!ctx.log) {
      const char *path = ctx.log_path;
      int e = errno;
      ctx.log_path = NULL;
      return oci_fail(&ctx, "open log file %s: %s", path, strerror(e));
    }
    setvbuf(ctx.log, NULL, _IOLBF, 0);
  }
  int ret;
  if (optind >= argc) {
    print_help(stdout);
    ret = 0;
  } else if (systemd_refusal) {
    ret = oci_fail(&ctx, "%s: the systemd cgroup manager is not supported by %s%s; use the "
                   "cgroupfs manager (the default)", systemd_refusal, OCI_PROG,
                   access("/run/systemd/system", F_OK) == 0 ? "" : " (and systemd is not running on this host)");
  } else {
    const char *name = argv[optind];
    const struct oci_command *cmd = oci_find_command(name);
    if (strcmp(name, "help") == 0 || strcmp(name, "h") == 0) {
      const struct oci_command *topic = optind + 1 < argc ? oci_find_command(argv[optind + 1]) : NULL;
      if (optind + 1 < argc && !topic) {
        oci_fail(&ctx, "No help topic for '%s'", argv[optind + 1]);
        ret = 3;
      } else {
        if (topic) oci_print_command_help(topic, stdout);
        else print_help(stdout);
        ret = 0;
      }
    } else if (!cmd) {
      oci_fail(&ctx, "No help topic for '%s'", name);
      ret = 3;   /* runc (urfave/cli) exits 3 for an unknown command */
    } else {
      oci_log(&ctx, "debug", "%s %s: root %s", OCI_PROG, name, ctx.root);
      ret = cmd->run(&ctx, argc - optind, argv + optind);
    }
  }
  if (ctx.log) fclose(ctx.log);
  return ret;
}
