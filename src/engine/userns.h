/* engine/userns.h — uid_map / gid_map of the container's user namespace
 * (user_namespaces(7), config-linux.md "User namespace mappings").  Written by
 * the parent, which is privileged in the parent namespace, so setgroups stays
 * "allow" and the child can set exactly process.user.additionalGids (BL-18);
 * "deny" is written only when a gid map is written without privilege (never
 * by this runtime as root).  What does NOT live here: idmapped mounts'
 * namespaces (mount.c asks an_userns_for_idmap()). */
#ifndef AN_ENGINE_USERNS_H
#define AN_ENGINE_USERNS_H

#include <stdbool.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

/* Write /proc/PID/gid_map and uid_map from the mappings.  Errors: -EINVAL no
 * mappings given (the spec asks for a new user namespace); errno of the write
 * naming the file (the kernel refuses overlapping or out-of-range maps). */
int an_userns_write_maps(pid_t pid, const struct an_spec_id_mapping *uids, size_t n_uids,
                         const struct an_spec_id_mapping *gids, size_t n_gids, an_error_t *err);

/* True when container id 0 is mapped by both maps (init can become root of
 * its namespace before setting up mounts). */
bool an_userns_maps_root(const struct an_spec_linux *l);

/* The host id that container id `id` maps to, or (uid_t)-1. */
uid_t an_userns_host_id(const struct an_spec_id_mapping *m, size_t n, uid_t id);

/* Owner of a new user namespace.  The kernel charges what it counts per user
 * inside a user namespace (inotify instances and watches, pending signals,
 * message queues, user namespaces: ucounts, user_namespaces(7)) also to the
 * namespace's owner in the parent, up to the parent's limits; the owner is
 * the euid/egid of the process that makes the namespace.  Made by host
 * root, every container would share host root's budgets with the host and
 * every other container.  an_userns_owner_enter switches the CALLING
 * THREAD's effective ids (raw setresuid/setresgid, per thread; saved ids
 * stay 0; SECBIT_NO_SETUID_FIXUP keeps its capabilities) to the host ids
 * container root maps to, so that a clone(CLONE_NEWUSER) right after makes
 * a namespace owned by them; an_userns_owner_leave switches back.  Nothing
 * is switched (and 0 returned) unless the caller is euid 0 and both maps
 * map id 0 to a host id other than 0.  The new namespace's own creds start
 * with default securebits (set_cred_user_ns), so the child inherits none.
 * Errors: errno of prctl/setresgid/setresuid (nothing left switched). */
struct an_userns_owner { bool switched; int securebits; };
int an_userns_owner_enter(const struct an_spec_linux *l, struct an_userns_owner *o,
                          an_error_t *err);
void an_userns_owner_leave(struct an_userns_owner *o);

/* A user namespace fd carrying the given maps, for MOUNT_ATTR_IDMAP
 * (mount_setattr(2)).  Made by a short-lived child that unshares a user
 * namespace; the child is reaped before return.  *fd owned by the caller.
 * Errors: as an_userns_write_maps, errno of clone/open. */
int an_userns_for_idmap(const struct an_spec_id_mapping *uids, size_t n_uids,
                        const struct an_spec_id_mapping *gids, size_t n_gids, int *fd,
                        an_error_t *err);

#endif
