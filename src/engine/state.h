/* engine/state.h — the state directory of one container:
 * `<state_root>/<id>/` (mode 0700) holding state.json (runtime-spec
 * runtime.md "State" plus the engine's own keys), config.json (the spec the
 * container was made from, for exec) and start.sock (the create->start
 * handshake).  Every operation holds an exclusive flock(2) on the directory;
 * state.json is replaced atomically (write a temp file, rename).  What does
 * NOT live here: deciding the status (container.c). */
#ifndef AN_ENGINE_STATE_H
#define AN_ENGINE_STATE_H

#include <stdbool.h>
#include "agentnest/container.h"
#include "agentnest/error.h"

#define AN_STATE_ROOT_DEFAULT "/run/agentnest-oci"
#define AN_STATE_FILE "state.json"
#define AN_STATE_CONFIG "config.json"
#define AN_STATE_START_SOCK "start.sock"
#define AN_STATE_SECCOMP "seccomp.bpf"   /* the compiled linux.seccomp filter, written at create */

/* Errors: -EINVAL the id is not [A-Za-z0-9][A-Za-z0-9_.+-]{0,127}. */
int an_state_validate_id(const char *id, an_error_t *err);

/* Make `<root>/<id>` (and root, 0711, if missing), open and lock it.
 * *dirfd owned by the caller (closing it releases the lock).
 * Errors: -EEXIST "container <id> already exists", errno of mkdir/open. */
int an_state_dir_create(const char *root, const char *id, int *dirfd, an_error_t *err);

/* Open and lock an existing state directory.  Errors: -ENOENT "container
 * <id> does not exist", errno of open/flock. */
int an_state_dir_open(const char *root, const char *id, int *dirfd, an_error_t *err);

/* Remove the directory's files and the directory.  Errors: errno of
 * unlink/rmdir. */
int an_state_dir_remove(const char *root, const char *id, int dirfd, an_error_t *err);

/* Write / read state.json.  *out owned by the caller
 * (an_container_state_free).  Errors: -EINVAL malformed file (naming the
 * key), errno of the I/O. */
int an_state_write(int dirfd, const struct an_container_state *st, an_error_t *err);
int an_state_read(int dirfd, struct an_container_state **out, an_error_t *err);

/* Write a whole file below dirfd atomically (temp + rename), mode 0600. */
int an_state_write_file(int dirfd, const char *name, const char *data, size_t len,
                        an_error_t *err);

/* The JSON of a state; with `internal` also the engine's keys (start time,
 * cgroup path).  *json heap-allocated, owned by the caller. */
int an_state_to_json(const struct an_container_state *st, bool internal, char **json,
                     an_error_t *err);

/* RFC 3339 UTC time with nanoseconds, now.  Heap string. */
char *an_state_now_rfc3339(void);

#endif
