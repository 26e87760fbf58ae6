/* cli/agentnest/argv_rule.h — the rule for what follows a command's
 * operands (run, shell, python, exec; agentnest(1) "THE -- RULE"): an
 * option of ours after the command (CMD, SCRIPT or CODE) is never silently
 * taken as an argument of the program, and a command that starts with '-'
 * must follow "--".  Both refusals are usage errors (125). */
#ifndef AN_CLI_ARGV_RULE_H
#define AN_CLI_ARGV_RULE_H

#include <getopt.h>

/* argv[optind..argc) are the command and its arguments, as left by
 * getopt_long in "+" mode.  Unless they were introduced by "--"
 * (argv[optind-1] is "--"), refuse one that is "--NAME" or "--NAME=..."
 * with NAME a long option of `longopts`: "option '--json' after the
 * command is not passed to it: put it before the command, or put '--'
 * before the command to pass it on (USAGE)".  `usage` is the short form of
 * the command line for the message.  Returns 0, or 125 after printing the
 * message (cli_usage_error). */
int cli_check_after_command(const char *cmd, int argc, char **argv, int optind_,
                            const struct option *longopts, const char *usage);

/* getopt_long's error `c` for these commands (as cli_getopt_error), with
 * the hint that a command starting with '-' must follow "--" when the
 * option is unknown.  Returns 125. */
int cli_command_option_error(const char *cmd, int c, int argc, char **argv, const char *usage);

#endif
