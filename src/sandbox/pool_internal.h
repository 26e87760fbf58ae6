/* sandbox/pool_internal.h — what the files of the warm pool share
 * (agentnest/pool.h): the pool directory's layout and metadata (pool.c),
 * the keeper (pool_keeper.c), stop and prune (pool_stop.c). */
#ifndef AN_SANDBOX_POOL_INTERNAL_H
#define AN_SANDBOX_POOL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/pool.h"
#include "util/json_gen.h"

#define AN_POOL_DIR "pools"
#define AN_POOL_META "pool.json"
#define AN_POOL_OPTIONS "options.json"
#define AN_POOL_STATUS "status.json"
#define AN_POOL_READY "ready"
#define AN_POOL_TAKEN "taken"

struct an_pool_meta {
  unsigned size;
  pid_t keeper_pid;
  uint64_t keeper_start;
  uint64_t created_ms;
};

/* 1-64 of [A-Za-z0-9._-], not starting with '.'. */
bool an_pool_valid_name(const char *name);
/* <root>/pools/<name> into buf (PATH_MAX); -EINVAL (named) for a bad name. */
int an_pool_path(const char *root, const char *name, char *buf, size_t len, an_error_t *err);
/* Read / write (atomically: temporary file + rename) pool.json of `dir`. */
int an_pool_meta_read(const char *dir, struct an_pool_meta *m, an_error_t *err);
int an_pool_meta_write(const char *dir, const char *name, const struct an_pool_meta *m,
                       an_error_t *err);
/* Write `text` to dir/file atomically (0600). */
int an_pool_write_file(const char *dir, const char *file, const char *text, an_error_t *err);
/* Entries of dir/sub that are sandbox ids. */
unsigned an_pool_count(const char *dir, const char *sub);
/* Whether the keeper recorded in `m` runs. */
bool an_pool_keeper_alive(const struct an_pool_meta *m);

/* End the keeper of `m` (SIGTERM; SIGKILL after grace_ms) and wait for it. */
void an_pool_end_keeper(const struct an_pool_meta *m, uint64_t grace_ms);
/* Destroy every sandbox still listed in dir/ready (each entry unlinked
 * first: a concurrent claim gets it or we do), remove the pool directory
 * `name` under <root>/pools.  *destroyed counts the sandboxes.  First error
 * returned; the directory stays then. */
int an_pool_remove(const char *root, const char *name, unsigned *destroyed, an_error_t *err);

/* For an_sandbox_prune: pools whose keeper is dead (every pool with
 * `all`: their keepers are ended first) are removed with their ready
 * sandboxes; their names go to `g` (an array is open). Errors noted with
 * note(ctx, err). */
void an_pool_prune(const char *root, bool all, struct an_jgen *g,
                   void (*note)(void *ctx, an_error_t *e), void *ctx);

/* The keeper's main loop (pool_keeper.c). */
#endif
