/* agentnest/doctor.h — what this host offers a sandbox (`agentnest doctor`).
 *
 * One call probes the kernel and the host (nothing is left behind: the
 * probes that need an object, such as a Landlock ruleset or an nftables
 * context, close it at once) and describes the result as one JSON document:
 *
 *   {
 *    "kernel": {"release", "version", "machine"},
 *    "namespaces": {"available": ["cgroup","ipc","mnt","net","pid","user","uts",...],
 *                   "user_max": N, "unprivileged_userns_clone": 0|1|null,
 *                   "apparmor_restrict_unprivileged_userns": 0|1|null},
 *    "cgroup": {"layout": "unified"|"hybrid"|"legacy"|null,
 *               "hierarchies": [{"version": 1|2, "mount": PATH, "controllers": [...]}]},
 *    "seccomp": {"available": bool, "filter": bool, "actions": [...]},
 *    "landlock": {"abi": N (0: not available), "error": "..."?},
 *    "nftables": {"available": bool},
 *    "idmapped_mounts": {"available": bool, "mount_setattr": bool},
 *    "openat2": {"available": bool},
 *    "pidfd": {"available": bool},
 *    "clone3": {"available": bool},
 *    "image_store": {"path": ROOT, "images": N, "error": "..."?},
 *    "state_dir": {"path": ROOT, "writable": bool, "error": "..."?},
 *    "workspace_quota": {"mechanism": "project_quota"|"image"|"none", "detail": "..."},
 *    "egress": {"netns": bool, "veth": bool, "nftables": bool, "available": bool,
 *               "error": "..."?}   (what --network allowlist|full needs, tried
 *               in a scratch netns under ROOT that is removed again),
 *    "missing": ["<what is required and absent>", ...], "ok": bool}
 *
 * Required (listed in "missing" when absent; "ok" is false then): the user,
 * mount, pid, net, ipc, uts and cgroup namespaces (DESIGN.md "Secure
 * defaults"), a cgroup hierarchy enforcing memory and pids, seccomp filter
 * mode, openat2(2) (path-safe file operations), a writable state
 * directory, and a way to enforce the workspace quota (a project quota on
 * the store's file system, or loop devices, mke2fs and ext4 for an image).  Landlock, nftables, idmapped mounts, egress and the image count
 * are reported but not required.
 */
#ifndef AGENTNEST_DOCTOR_H
#define AGENTNEST_DOCTOR_H

#include <stdbool.h>
#include "agentnest/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Probe the host and describe it (format above).
 *   root   image store and state root (the CLI's --root); it is created
 *          (0755) if missing to test that it is writable, and a temporary
 *          file is made in it (O_TMPFILE) and discarded.
 *   json   receives a heap NUL-terminated document (yajl_gen, beautified),
 *          owned by the caller (free()).
 *   ok     receives true when nothing required is missing.
 * A probe that fails is reported inside the document, not as an error.
 * Errors: -EINVAL root NULL or empty; -ENOMEM.  Thread-safe: no global
 * state; the probes read /proc and /sys or make syscalls that create
 * nothing (clone3 with no arguments, ...) but the temporary file. */
int an_doctor_probe(const char *root, char **json, bool *ok, an_error_t *err);

/* 0 when the caller can make sandboxes and use the image store: host root
 * (euid 0 with CAP_SYS_ADMIN effective in the initial user namespace), as
 * doctor's "privilege" check.  Else -EPERM with doctor's message ("running
 * as uid N...: sandboxes are made by host root ...; run agentnest as root").
 * Thread-safe. */
int an_doctor_check_privilege(an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
