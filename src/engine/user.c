/* engine/user.c — setgroups, setresgid, setresuid, umask (see user.h;
 * credentials(7), setgroups(2)).
 *
 * The raw system calls, not glibc's wrappers: this runs in a child made by
 * clone3 (or a joiner's fork) of a process that may have other threads, and
 * glibc's wrappers broadcast the change to every thread they know of
 * (nptl "setxid") and wait for each to answer.  The threads of the parent
 * do not exist in the child, so the wrapper spun for ever (seen as a hung
 * exec under a threaded caller).  The child has one thread: the raw call is
 * the whole process's change. */
#include <errno.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine/user.h"

int an_user_apply(const struct an_spec_user *u, an_error_t *err) {
  if (syscall(SYS_setgroups, u->n_additional_gids, u->additional_gids) < 0)
    return an_error_set(err, errno, "process.user.additionalGids: setgroups (%zu groups)",
                        u->n_additional_gids);
  if (syscall(SYS_setresgid, u->gid, u->gid, u->gid) < 0)
    return an_error_set(err, errno, "process.user.gid: setresgid %u", (unsigned) u->gid);
  /* Keep the permitted set across the uid change; caps.c then sets every set
   * exactly (capabilities(7), "Effect of user ID changes on capabilities"). */
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
    return an_error_set(err, errno, "prctl PR_SET_KEEPCAPS");
  if (syscall(SYS_setresuid, u->uid, u->uid, u->uid) < 0)
    return an_error_set(err, errno, "process.user.uid: setresuid %u", (unsigned) u->uid);
  umask(u->has_umask ? u->umask : 022);
  return 0;
}
