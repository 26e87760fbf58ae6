/* sandbox/exec_stdin.h — the stdin pump of an exec (internal): the caller's
 * stdin (a host fd: a terminal, a file, a pipe) is never given to the
 * sandboxed command itself.  A small host process forked by the library
 * copies it into a pipe (`exec -i`, `--stdin FILE`) or into the master of
 * the command's pty (`exec -t`); the command only ever holds the pipe's
 * read end or its own pty's slave.  So a sandbox can neither TIOCSTI into
 * the caller's terminal, nor reopen the caller's file through
 * /proc/self/fd, nor change the flags or mode of the caller's terminal. */
#ifndef AN_SANDBOX_EXEC_STDIN_H
#define AN_SANDBOX_EXEC_STDIN_H

#include <stdbool.h>
#include <sys/types.h>
#include "agentnest/error.h"

/* Fork the pump: it copies src_fd to dst_fd (both borrowed: the pump has
 * its own copies and nothing else of the caller's, close_range(2)) until
 * EOF on src_fd or a write error (EPIPE: the command closed its stdin),
 * then exits, closing its copy of dst_fd, so that a pipe's reader sees EOF
 * once the caller closes its own copy too; when dst_fd is a pty master in
 * canonical mode and `resize` is off (src_fd is no terminal), the EOF is
 * passed on as the pty's VEOF character (Ctrl-D).  With `resize` (dst_fd is a pty
 * master and src_fd a terminal) it also copies src_fd's window size to
 * dst_fd at start and on every SIGWINCH (TIOCGWINSZ/TIOCSWINSZ, ioctl_tty(2)):
 * the pump stays in the caller's process group, the terminal's foreground
 * group, which the kernel signals on a resize.  It ignores SIGINT, SIGQUIT,
 * SIGTERM and SIGHUP (the caller handles those), and dies with the caller
 * (PR_SET_PDEATHSIG).  Returns its pid (stop it with an_sb_pump_stop), or
 * -errno of fork ("exec: fork the stdin pump"). */
pid_t an_sb_pump_start(int src_fd, int dst_fd, bool resize, an_error_t *err);

/* SIGKILL and reap the pump (pid <= 0: nothing). */
void an_sb_pump_stop(pid_t pump);

#endif
