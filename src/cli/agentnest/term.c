/* cli/agentnest/term.c — raw mode of the caller's terminal for `exec -t`
 * and its restoration (see term.h). */
#include <unistd.h>
#include "term.h"

bool cli_term_raw(int fd, struct cli_term *t) {
  t->fd = -1;
  if (!isatty(fd) || tcgetattr(fd, &t->saved) < 0) return false;
  struct termios raw = t->saved;
  cfmakeraw(&raw);
  if (tcsetattr(fd, TCSADRAIN, &raw) < 0) return false;
  t->fd = fd;
  return true;
}

void cli_term_restore(struct cli_term *t) {
  if (t->fd < 0) return;
  tcsetattr(t->fd, TCSADRAIN, &t->saved);
  t->fd = -1;
}
