/* engine/terminal.h — process.terminal (config.md "Process"): a pty is
 * allocated inside the container from its own devpts, the slave becomes the
 * process's controlling terminal and stdio, and the master is handed to the
 * caller over --console-socket with SCM_RIGHTS, as runc does.  What does NOT
 * live here: proxying a terminal for a foreground `run` (front ends). */
#ifndef AN_ENGINE_TERMINAL_H
#define AN_ENGINE_TERMINAL_H

#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

/* Child side, after pivot_root and setsid(): open /dev/pts/ptmx (checked to
 * be devpts), unlock it, open the peer with TIOCGPTPEER, chown it to the
 * process user, set the console size, make it the controlling terminal and
 * stdin/stdout/stderr.  *master owned by the caller.  Errors: errno of the
 * failing call naming it; -EXDEV /dev/pts is not devpts. */
int an_terminal_setup(const struct an_spec_process *p, int *master, an_error_t *err);

/* Parent side: connect to the AF_UNIX socket at `path` and send `master`
 * (SCM_RIGHTS, with the name "/dev/ptmx" as data, like runc).  Errors: errno
 * of socket/connect/sendmsg naming the path. */
int an_terminal_send_master(const char *path, int master, an_error_t *err);

#endif
