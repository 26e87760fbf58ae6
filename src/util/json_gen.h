/* util/json_gen.h — the one JSON writer: yajl_gen with a sticky status
 * (internal).
 *
 * Every document the library and the CLIs write (config.json, state.json,
 * the image store's files, sandbox records, reports, --json output) goes
 * through this, never through hand-written JSON.  The first failing yajl
 * call is remembered in j->st and every later write is skipped, so emitters
 * need no per-call checks: the one check is the result of an_jgen_finish().
 *
 *   cleanup_jgen struct an_jgen j;
 *   if (an_jgen_init(&j, true) < 0) return an_error_set(err, ENOMEM, "meta.json: JSON");
 *   an_jgen_map_open(&j);
 *   an_jgen_kv_str(&j, "digest", digest);
 *   an_jgen_map_close(&j);
 *   r = an_jgen_finish(&j, &doc, &len);
 *   if (r < 0) return an_error_set(err, -r, "meta.json: JSON");
 *
 * Numbers are written in decimal (yajl_gen_integer's "%lld" for signed
 * ones).  Beautified documents end with a newline (yajl's own). */
#ifndef AN_UTIL_JSON_GEN_H
#define AN_UTIL_JSON_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_gen.h>
#include "agentnest/error.h"

/* A generator and the status of its first failed call (yajl_gen_status_ok
 * while none failed).  After a successful an_jgen_init, g may be used
 * directly for yajl calls the writer has no function for
 * (an_json_escape_output, yajl_gen_number of a parsed number's text); pass
 * their status to an_jgen_check(). */
struct an_jgen {
  yajl_gen g;
  yajl_gen_status st;
};

/* Allocate the generator: compact, or with `beautify` indented by yajl's
 * four spaces with a newline at the end.  Returns 0, or -ENOMEM (j->g is
 * then NULL, every write is skipped and an_jgen_finish returns -ENOMEM, so
 * j is always safe to free; a caller may leave the report to its finish). */
int an_jgen_init(struct an_jgen *j, bool beautify);

/* Beautify with `indent` instead (call before the first write): "\t" as
 * `runc spec`, "  " as Go's json.MarshalIndent.  `indent` is kept by
 * reference (a string literal) and must be whitespace only; anything else
 * makes an_jgen_finish return -EINVAL. */
void an_jgen_indent(struct an_jgen *j, const char *indent);

/* Make a string that is not valid UTF-8 a failure (an_jgen_finish returns
 * -EINVAL) instead of writing it as it is. */
void an_jgen_validate_utf8(struct an_jgen *j);

/* Record the status of a yajl call made on j->g directly: the first
 * non-ok status sticks. */
void an_jgen_check(struct an_jgen *j, yajl_gen_status s);

/* The writers below return nothing and allocate nothing the caller sees: a
 * failure (an invalid string with an_jgen_validate_utf8, nesting deeper than
 * yajl allows, a value where a key must be) sticks in j->st, later writes
 * are skipped, and an_jgen_finish reports it. */

/* A string value; NULL writes null. */
void an_jgen_str(struct an_jgen *j, const char *s);
/* null. */
void an_jgen_null(struct an_jgen *j);
/* true or false. */
void an_jgen_bool(struct an_jgen *j, bool v);
/* A signed integer, in decimal. */
void an_jgen_i64(struct an_jgen *j, int64_t v);
/* An unsigned integer, in decimal (values >= 2^63 stay positive). */
void an_jgen_u64(struct an_jgen *j, uint64_t v);
/* "{" and "}". */
void an_jgen_map_open(struct an_jgen *j);
void an_jgen_map_close(struct an_jgen *j);
/* "[" and "]". */
void an_jgen_array_open(struct an_jgen *j);
void an_jgen_array_close(struct an_jgen *j);
/* A member name inside an open map (written as an_jgen_str; k non-NULL). */
void an_jgen_key(struct an_jgen *j, const char *k);

/* Member `k` and its value in one call: a string (NULL writes null), a
 * boolean, an integer, or an array of the strings of the NULL-terminated
 * `v` (NULL writes null). */
void an_jgen_kv_str(struct an_jgen *j, const char *k, const char *v);
void an_jgen_kv_bool(struct an_jgen *j, const char *k, bool v);
void an_jgen_kv_i64(struct an_jgen *j, const char *k, int64_t v);
void an_jgen_kv_u64(struct an_jgen *j, const char *k, uint64_t v);
void an_jgen_kv_strv(struct an_jgen *j, const char *k, const char *const *v);

/* Finish: *out is the document as a NUL-terminated malloc'd string (caller
 * frees), its length without the NUL in *len (len may be NULL).  Always
 * frees the generator (j->g becomes NULL; j->st keeps the status, for a
 * message).  Returns 0, or
 *   -ENOMEM  the generator or the copy could not be allocated,
 *   -EINVAL  a yajl call failed, yajl_gen_get_buf included (j->st says
 *            which).  Whether every map and array was closed is the
 *            caller's business: yajl does not tell.
 * *out is left untouched on failure. */
int an_jgen_finish(struct an_jgen *j, char **out, size_t *len);

/* an_jgen_finish, then replace the file `name` in `dirfd` with the document
 * (an_write_file_atomic_at of util/fdcopy.h, `durable` as there).  Returns
 * 0, or -ENOMEM / -EINVAL with "<name>: JSON" (as an_jgen_finish), or the
 * errors of an_write_file_atomic_at. */
int an_jgen_write_file_at(struct an_jgen *j, int dirfd, const char *name, bool durable,
                          an_error_t *err);

/* Free the generator without finishing (NULL g allowed; idempotent). */
void an_jgen_free(struct an_jgen *j);

/* A local struct an_jgen freed at the end of its scope (after
 * an_jgen_finish this does nothing).  Initialise it at the declaration
 * (`= {0}`) or call an_jgen_init before any return. */
#define cleanup_jgen __attribute__((cleanup(an_jgen_free)))

#endif
