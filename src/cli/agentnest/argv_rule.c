/* cli/agentnest/argv_rule.c — what may follow a command's operands (see
 * argv_rule.h). */
#include <stdbool.h>
#include <string.h>
#include "argv_rule.h"
#include "cli.h"

static bool is_our_long_option(const char *arg, const struct option *longopts) {
  if (strncmp(arg, "--", 2) != 0 || !arg[2]) return false;
  const char *name = arg + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t) (eq - name) : strlen(name);
  for (const struct option *o = longopts; o->name; o++)
    if (strlen(o->name) == len && !strncmp(o->name, name, len)) return true;
  return false;
}

int cli_check_after_command(const char *cmd, int argc, char **argv, int optind_,
                            const struct option *longopts, const char *usage) {
  if (optind_ > 1 && optind_ <= argc && !strcmp(argv[optind_ - 1], "--")) return 0;
  for (int i = optind_; i < argc; i++)
    if (is_our_long_option(argv[i], longopts))
      return cli_usage_error(cmd,
                             "option '%s' after the command is not passed to it: put it before the "
                             "command, or put '--' before the command to pass it on (%s)",
                             argv[i], usage);
  return 0;
}

int cli_command_option_error(const char *cmd, int c, int argc, char **argv, const char *usage) {
  if (c == ':') return cli_getopt_error(cmd, c, argc, argv);
  const char *arg = optind - 1 < argc && optind >= 1 ? argv[optind - 1] : "?";
  if (optopt && optopt < 256)
    return cli_usage_error(cmd, "unknown option '-%c' (a command that starts with '-' must follow '--': %s)",
                           optopt, usage);
  return cli_usage_error(cmd, "unknown option '%s' (a command that starts with '-' must follow '--': %s)",
                         arg, usage);
}
