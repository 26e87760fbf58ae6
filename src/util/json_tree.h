/* util/json_tree.h — bounded JSON parsing into a yajl tree, and typed
 * accessors whose errors name the JSON path (internal).
 *
 * Used by the runtime-spec parser, the seccomp profile loader and the image
 * layer (OCI index/manifest/config, docker manifest.json, the store's files).  Every
 * accessor takes the JSON path of the value it reads ("process.rlimits[2].type")
 * and, on a wrong type or range, fills err with "<path>: <cause>" and returns
 * -EINVAL.  Such errors carry errno EINVAL but no ": EINVAL" suffix: the
 * message already names the cause.  JSON null counts as absent (as Go's
 * encoding/json, which runc uses, treats it).
 */
#ifndef AN_UTIL_JSON_TREE_H
#define AN_UTIL_JSON_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>
#include "agentnest/error.h"

#define AN_JSON_MAX_BYTES  (16u << 20)   /* 16 MiB */
#define AN_JSON_MAX_DEPTH  64u           /* nested arrays/objects */
#define AN_JSON_MAX_VALUES 1000000u      /* values of any kind, bounds tree memory */
#define AN_JSON_PATH_MAX   512

/* Parse `len` bytes (need not be NUL-terminated) into a yajl tree.
 * Rejects: more than AN_JSON_MAX_BYTES (-EFBIG), malformed JSON, nesting
 * deeper than AN_JSON_MAX_DEPTH, more than AN_JSON_MAX_VALUES values,
 * strings or keys holding U+0000, duplicate keys in one object (-EINVAL).
 * `what` names the document in messages (a file name), or is "" when the
 * caller adds that context itself.
 * *out is freed with yajl_tree_free(). */
int an_json_parse(const char *json, size_t len, const char *what, yajl_val *out,
                  an_error_t *err);

/* Read a whole regular file of at most AN_JSON_MAX_BYTES into a new heap
 * buffer (*buf, *len; *buf is NUL-terminated for convenience): an_read_file_at()
 * of util/fdcopy.h on a host path.  Errors: the open/read errno with
 * "open <path>" / "read <path>", -EINVAL "<path>: not a regular file",
 * -EFBIG "<path>: N bytes, more than the 16777216 allowed". */
int an_json_read_file(const char *path, char **buf, size_t *len, an_error_t *err);

/* Set err to "<path>: <message>" (or "<message>" for the document root,
 * path ""), errno EINVAL, and return -EINVAL. */
int an_json_error(an_error_t *err, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Child paths: "<parent>.<key>" (just "<key>" at the root) and
 * "<parent>[<i>]".  Write into buf (AN_JSON_PATH_MAX bytes, truncated) and
 * return it. */
const char *an_json_path_key(char *buf, const char *parent, const char *key);
const char *an_json_path_index(char *buf, const char *parent, size_t i);

/* The member `key` of object v, or NULL when v is not an object, the key is
 * absent or its value is null. */
yajl_val an_json_member(yajl_val v, const char *key);

/* The member `key` of object v when it has JSON type `type` (yajl_t_any:
 * any type), else NULL (also for a null value, an absent key or a v that is
 * not an object). */
yajl_val an_json_member_type(yajl_val v, const char *key, yajl_type type);

/* The string member `key` of object v (borrowed from the tree), or NULL when
 * it is absent or not a string. */
const char *an_json_member_str(yajl_val v, const char *key);

/* Type checks: 0 or -EINVAL "<path>: must be an object|an array". */
int an_json_want_object(yajl_val v, const char *path, an_error_t *err);
int an_json_want_array(yajl_val v, const char *path, an_error_t *err);

/* Scalars.  *out is only written on success. */
int an_json_get_bool(yajl_val v, const char *path, bool *out, an_error_t *err);
/* A new heap copy of a string value. */
int an_json_get_string(yajl_val v, const char *path, char **out, an_error_t *err);
/* Integers: the number must be written as an integer (no fraction or
 * exponent).  Negative values for unsigned reads, and values outside
 * [min, max], are errors naming the range. */
int an_json_get_u64(yajl_val v, const char *path, uint64_t max, uint64_t *out,
                    an_error_t *err);
int an_json_get_i64(yajl_val v, const char *path, int64_t min, int64_t max,
                    int64_t *out, an_error_t *err);

/* An array of strings as a new NULL-terminated vector (an empty array gives
 * a vector holding only NULL). */
int an_json_get_strv(yajl_val v, const char *path, char ***out, an_error_t *err);

#endif
