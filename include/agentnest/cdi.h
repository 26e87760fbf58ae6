/* agentnest/cdi.h — Container Device Interface (CDI, CNCF
 * github.com/cncf-tags/container-device-interface, SPEC.md, cdiVersion
 * 0.3.0–0.8.0): read the vendors' device specs and apply a device's
 * containerEdits to an OCI runtime spec.
 *
 * Both front ends use it at the runtime-spec level: the sandbox spec builder
 * (`agentnest --gpu`, `--profile gpu`) and `agentnest-oci create|run` (CDI
 * device annotations in config.json).  Specs are JSON (yajl) or YAML
 * (libyaml, converted to the same JSON tree and parsed by the same code).
 *
 * Qualified device names are "vendor/class=name" ("nvidia.com/gpu=0").  The
 * name "all" selects the spec's device named "all" when one exists (as
 * nvidia-ctk generates), else every device of that kind.
 *
 * What is applied (fail closed: an edit that cannot be applied as written is
 * an error naming the spec file and the edit):
 *   env          set in process.env (a later KEY replaces an earlier one);
 *   deviceNodes  linux.devices[] (type/major/minor/fileMode taken from the
 *                host node hostPath, else path, when not given) plus a device
 *                cgroup allow rule with `permissions` (default "rwm");
 *   mounts       bind mounts only, always read-only, nosuid, nodev ("rw",
 *                "suid", "dev" in the spec's options are dropped);
 *   hooks        refused naming the hook path unless AN_CDI_ALLOW_HOOKS;
 *                with it, appended to the spec's hooks of that hookName;
 *   additionalGIDs, intelRdt, netDevices: refused (not implemented).
 * Thread-safety: no shared state; a registry may be read from several threads.
 */
#ifndef AGENTNEST_CDI_H
#define AGENTNEST_CDI_H

#include <stdbool.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The spec directories searched by default, lowest priority first (a device
 * in /var/run/cdi hides one of the same name in /etc/cdi), NULL-terminated. */
extern const char *const an_cdi_default_dirs[];

/* The kind `--gpu` selects from. */
#define AN_CDI_GPU_KIND "nvidia.com/gpu"

/* Annotation keys whose values list qualified device names (comma-separated)
 * start with this prefix (CDI SPEC.md, "CDI devices in annotations"). */
#define AN_CDI_ANNOTATION_PREFIX "cdi.k8s.io/"

/* an_cdi_apply flags */
#define AN_CDI_ALLOW_HOOKS 1u

struct an_cdi_registry;

/* Read every *.json, *.yaml and *.yml file directly in each of `dirs`
 * (NULL-terminated, lowest priority first; NULL: an_cdi_default_dirs).  A
 * directory that does not exist is skipped.  *out is owned by the caller
 * (an_cdi_registry_free).  Errors (message names the file):
 *   -EINVAL  malformed JSON/YAML, YAML aliases, an unknown cdiVersion, a bad
 *            kind or device name, a wrong type, two devices of one name in
 *            one directory, a relative path;
 *   -EPERM   a spec file writable by group or others, or owned by a user
 *            other than root and the caller (anyone could add devices);
 *   the open/read errno (-EACCES, ...); -ENOMEM. */
int an_cdi_registry_load(const char *const *dirs, struct an_cdi_registry **out, an_error_t *err);

/* Free a registry; NULL allowed. */
void an_cdi_registry_free(struct an_cdi_registry *reg);

/* Apply the containerEdits of every device in `names` (qualified names,
 * NULL-terminated) and the top-level edits of each spec they come from (once)
 * to `spec`.  Nodes and mounts already present with the same content are not
 * added twice.  Errors (spec partly edited: free it):
 *   -EINVAL  a name that is not "vendor/class=name"; a conflicting node or
 *            mount; bad permissions; a non-bind mount;
 *   -ENOENT  no spec defines the kind or the device (the message names the
 *            name and the directories searched; for nvidia.com kinds it says
 *            to run `nvidia-ctk cdi generate`) or a host node is missing;
 *   -EPERM   a hook without AN_CDI_ALLOW_HOOKS (names the hook path);
 *   -EOPNOTSUPP additionalGIDs, intelRdt, netDevices;
 *   -ENOMEM. */
int an_cdi_apply(const struct an_cdi_registry *reg, struct an_spec *spec,
                 const char *const *names, unsigned flags, an_error_t *err);

/* The qualified device names listed by spec->annotations whose keys start
 * with AN_CDI_ANNOTATION_PREFIX, in order, as a new NULL-terminated heap
 * vector (*names; NULL when there are none).  Errors: -EINVAL an empty entry
 * (names the key); -ENOMEM. */
int an_cdi_annotation_devices(const struct an_spec *spec, char ***names, an_error_t *err);

/* Convenience for front ends: load `dirs` (NULL: the defaults), apply
 * `names` (NULL or empty: nothing is read, 0).  Errors: as the two calls. */
int an_cdi_apply_from_dirs(const char *const *dirs, struct an_spec *spec,
                           const char *const *names, unsigned flags, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
