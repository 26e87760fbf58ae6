/* cli/agentnest/term.h — the caller's terminal while `exec -t` is
 * attached: raw mode (termios(3) cfmakeraw: no echo, no line editing, no
 * signals from keys, so Ctrl-C, Ctrl-Z and Ctrl-\ travel as bytes to the
 * sandbox's own pty, whose line discipline turns them into signals for the
 * sandboxed foreground process) and its restoration. */
#ifndef AN_CLI_TERM_H
#define AN_CLI_TERM_H

#include <stdbool.h>
#include <termios.h>

/* The saved state of one terminal. */
struct cli_term {
  int fd;            /* -1: nothing saved (not a terminal, or not made raw) */
  struct termios saved;
};

/* If `fd` is a terminal, save its modes in *t and make it raw
 * (tcsetattr TCSADRAIN); else t->fd = -1.  Returns true when it was made
 * raw.  Call cli_term_restore on every path after it. */
bool cli_term_raw(int fd, struct cli_term *t);

/* Put the saved modes back (TCSADRAIN); nothing when none were saved.
 * Idempotent. */
void cli_term_restore(struct cli_term *t);

#endif
