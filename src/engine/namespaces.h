/* engine/namespaces.h — linux.namespaces (config-linux.md "Namespaces"):
 * which namespaces the container's init creates with clone3 and which it
 * joins by path with setns(2).  What does NOT live here: uid/gid maps
 * (userns.c), the clone itself (process.c). */
#ifndef AN_ENGINE_NAMESPACES_H
#define AN_ENGINE_NAMESPACES_H

#include <stdbool.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

#define AN_NS_MAX 8

struct an_ns_plan {
  int clone_flags;           /* CLONE_NEW* created at clone3 (never CLONE_NEWCGROUP, see below) */
  bool unshare_cgroupns;     /* the child unshares its cgroup namespace only after it has been
                                moved into the container's cgroup, so that the namespace's
                                root is that cgroup (crun does the same) */
  int userns_fd;             /* user namespace to join first (path given), or -1 */
  int pidns_fd;              /* pid namespace to join: the parent enters it for the clone */
  int timens_fd;             /* time namespace to join: likewise */
  int netns_fd;              /* network namespace to join: the PARENT enters it around clone3
                                and the child inherits it.  A netns made by the runtime is
                                owned by the initial user namespace; from inside the
                                container's new user namespace setns(2) on it fails with
                                EPERM (no CAP_SYS_ADMIN over its owner), so the child can
                                never join it itself (net/netns.h). */
  int join_fd[AN_NS_MAX];    /* the other namespaces to join in the child, in order */
  int join_flag[AN_NS_MAX];
  int n_join;
  int all_flags;             /* every namespace type the container has (created or joined) */
};

/* The /proc/PID/ns file name of a CLONE_NEW* flag ("mnt", "user", ...). */
const char *an_ns_name(int clone_flag);

/* Build the plan from the spec: open every namespace path (O_RDONLY|O_CLOEXEC)
 * and check it is a namespace of the declared type (NS_GET_NSTYPE).
 * Errors: -EINVAL a namespace type given twice or a path of the wrong type
 * (message names linux.namespaces[i]); errno of open. */
int an_ns_plan_make(const struct an_spec_linux *l, struct an_ns_plan *p, an_error_t *err);

/* Close every fd of the plan. */
void an_ns_plan_close(struct an_ns_plan *p);

/* Child side: join the user namespace (if any), then the others.
 * Errors: errno of setns naming the namespace type. */
int an_ns_join_user(const struct an_ns_plan *p, an_error_t *err);
int an_ns_join_others(const struct an_ns_plan *p, an_error_t *err);

#endif
