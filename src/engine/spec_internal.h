/* engine/spec_internal.h — pieces of the runtime-spec parser shared between
 * its files and with the seccomp profile loader (internal).
 *
 * Every parse function reads one JSON value `v` found at JSON path `path`,
 * writes into an already-zeroed struct that the caller has linked into the
 * spec tree (so an_spec_free releases partial results on error), and
 * returns 0 or a negative errno with err naming the path and the cause.
 */
#ifndef AN_ENGINE_SPEC_INTERNAL_H
#define AN_ENGINE_SPEC_INTERNAL_H

#include "agentnest/spec.h"
#include "util/cleanup.h"
#include "util/json_tree.h"

/* Sections (spec_parse_linux.c, spec_parse_resources.c, spec_parse_seccomp.c). */
int an_spec_parse_linux(yajl_val v, const char *path, struct an_spec_linux *out,
                        an_error_t *err);
int an_spec_parse_resources(yajl_val v, const char *path, struct an_spec_resources *out,
                            an_error_t *err);
int an_spec_parse_seccomp(yajl_val v, const char *path, struct an_spec_seccomp *out,
                          an_error_t *err);
/* uidMappings / gidMappings arrays (linux.* and mounts[].*). */
int an_spec_parse_id_mappings(yajl_val v, const char *path, struct an_spec_id_mapping **out,
                              size_t *n, an_error_t *err);

/* Seccomp building blocks, also used for the Docker profile format.
 * _top: defaultAction/defaultErrnoRet (errnoRet defaults to EPERM as in
 * runc), flags, listenerPath, listenerMetadata of object `v`.
 * _names: a syscalls[] rule's non-empty array of non-empty names.
 * _rule: a rule's action, errnoRet and args (not its names).
 * _arches: an array of SCMP_ARCH_* names (*out may be left partly filled
 * on error, for the caller to free). */
int an_spec_parse_seccomp_top(yajl_val v, const char *path, struct an_spec_seccomp *s,
                              an_error_t *err);
int an_spec_parse_seccomp_names(yajl_val v, const char *path, char ***out, an_error_t *err);
int an_spec_parse_seccomp_rule(yajl_val v, const char *path, struct an_spec_seccomp_syscall *sc,
                               an_error_t *err);
int an_spec_parse_seccomp_arches(yajl_val v, const char *path, uint32_t **out, size_t *n,
                                 an_error_t *err);

/* Required members of object `obj` at `path`: -EINVAL "<path>.<key>: is
 * required" when absent.  `sub` (AN_JSON_PATH_MAX) receives the member's
 * path for the caller's own messages.  _string: must be a string, *out
 * points into the tree.  _u64: an integer 0..max. */
int an_spec_req_member(yajl_val obj, const char *path, const char *key, char *sub, yajl_val *out,
                       an_error_t *err);
int an_spec_req_string(yajl_val obj, const char *path, const char *key, char *sub,
                       const char **out, an_error_t *err);
int an_spec_req_u64(yajl_val obj, const char *path, const char *key, uint64_t max, uint64_t *out,
                    an_error_t *err);

/* Helpers: an absolute path string ("must be an absolute path"); a string
 * array whose entries are all absolute paths. */
int an_spec_get_abs_path(yajl_val v, const char *path, char **out, an_error_t *err);
int an_spec_get_abs_path_strv(yajl_val v, const char *path, char ***out, an_error_t *err);

/* A JSON object of string values into key/value pairs. */
int an_spec_parse_string_map(yajl_val v, const char *path, struct an_spec_key_value **out,
                             size_t *n, an_error_t *err);

/* Allocate a zeroed array of n elements for a `T *p; size_t n_p;` pair
 * (NULL, 0 for n == 0).  Sets the count at once so that an_spec_free sees
 * every element. */
#define AN_SPEC_ALLOC_ARRAY(ptr, count, n, path, err)                            \
  ({ int an__r = 0; (ptr) = NULL; (count) = 0;                                   \
     if ((n) > 0) {                                                              \
       (ptr) = calloc((n), sizeof *(ptr));                                       \
       if (!(ptr)) an__r = an_error_set((err), ENOMEM, "%s", (path));            \
       else (count) = (n);                                                       \
     }                                                                           \
     an__r; })

#endif
