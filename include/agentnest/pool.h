/* agentnest/pool.h — warm pools: sandboxes created ahead with one set of
 * options, each handed out once and never reused.  agentnest-pool(1).
 *
 * STATE.  A pool NAME of store ROOT lives in ROOT/pools/NAME/ (0700, root
 * only; host-side state that no sandbox can see: a sandbox's mount
 * namespace holds its image and workspace, never the store):
 *   pool.json     {"name","size","keeper_pid","keeper_start","created_ms"}
 *   options.json  the pool's sandbox options (an_sandbox_opts_to_json)
 *   status.json   {"created","failures","last_error"}, written by the keeper
 *   ready/ID      one empty file per ready sandbox ID
 *   taken/ID      one empty file per sandbox handed out
 *
 * KEEPER.  an_pool_start double-forks a keeper process (its own session,
 * stdio on /dev/null, no inherited fds; the monitor's pattern) that keeps
 * `size` sandboxes ready: it creates them with the pool's options through
 * the same path as an_sandbox_create (so a pooled sandbox gets exactly the
 * spec a fresh one gets: seccomp, capabilities, network, limits, id range,
 * fresh empty workspace), and refills as soon as one is taken (inotify on
 * ready/) or found dead (checked every second).  A failed create is
 * counted (status.json) and retried with a backoff from 100 ms to 30 s.
 * A ready sandbox is OWNED by the keeper: its monitor tears it down when
 * the keeper exits, however (SIGKILL too), so a killed keeper leaves no
 * running ready sandbox; an_sandbox_prune removes the rest (the pool
 * directory; ready sandboxes whose monitor died too).
 *
 * LIFETIME.  A ready sandbox has no deadline.  Its lifetime (the pool's
 * --timeout, as for a fresh sandbox) counts from the moment it is handed
 * out: an_pool_claim writes the deadline now + lifetime and its new owner
 * into the record and signals the monitor (SIGUSR1), which re-arms its
 * timer and watches the new owner.
 *
 * HAND-OUT.  Atomic: a claim renames ready/ID to taken/ID (rename(2)), so
 * of any number of concurrent takers exactly one gets a given sandbox; it
 * is never put back (a used sandbox is destroyed, not returned).  The
 * claim path reads pool.json (a dead keeper's pool hands out nothing:
 * -ESRCH), one directory entry, renames it, opens the sandbox (its
 * record and options.json) and rewrites its record: no scan of the store,
 * no profile parsed.
 *
 * Every function here must be called from a single-threaded process
 * (agentnest/sandbox.h "PROCESSES AND THREADS"): an_pool_start forks.
 */
#ifndef AGENTNEST_POOL_H
#define AGENTNEST_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/sandbox.h"
#include "agentnest/sandbox_opts.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AN_POOL_NAME_MAX 64
#define AN_POOL_SIZE_MAX 256

/* Start pool `name` (1-64 of [A-Za-z0-9._-], not starting with '.') of
 * store `store_root` (NULL: the default store) holding `size` (a count, 1..256)
 * ready sandboxes made with `opts` (copied; a name or secrets are refused:
 * a name can be held by one sandbox only, and secret values would wait in
 * every ready sandbox).  Returns once the keeper has filled the pool (every
 * sandbox ready), with *keeper_pid (may be NULL) its pid.
 * Errors: -EINVAL bad name, size or options (named); -EEXIST a pool of that
 * name runs (its keeper is alive; a stale one is removed and replaced);
 * -EPERM not root; the error of the first create (the image missing, a
 * control this host cannot enforce...), after which nothing is left (no
 * keeper, no sandbox, no pool directory); fork/pipe errno. */
int an_pool_start(const char *store_root, const char *name, unsigned size,
                  const struct an_sandbox_opts *opts, pid_t *keeper_pid, an_error_t *err);

/* Stop pool `name`: end its keeper (SIGTERM, then SIGKILL after 10 s),
 * destroy its ready sandboxes and remove its directory.  Sandboxes handed
 * out are left alone (they are their takers').  *destroyed (may be NULL):
 * how many ready sandboxes were destroyed here, beyond those the keeper
 * destroyed itself on SIGTERM.
 * Errors: -EINVAL bad name; -ENOENT no such pool; teardown errors (the
 * first, named; the pool directory then stays for `prune`). */
int an_pool_stop(const char *store_root, const char *name, unsigned *destroyed, an_error_t *err);

struct an_pool_info {
  char *name;
  unsigned size;          /* sandboxes kept ready */
  unsigned ready;         /* ready now: entries of ready/ while the keeper runs; 0 once it
                             is dead (its ready sandboxes die with it, see KEEPER) */
  uint64_t handed_out;    /* sandboxes taken since the pool started */
  uint64_t created;       /* sandboxes the keeper created */
  uint64_t failures;      /* creates that failed */
  char *last_error;       /* NULL: none */
  pid_t keeper_pid;
  bool keeper_alive;
  uint64_t created_ms;    /* the pool's start, ms since the Unix epoch */
  const char *state;      /* static: "starting" (no pool.json yet), "running" (keeper
                             alive) or "dead" (keeper gone: `pool stop` or prune removes it) */
  unsigned stale;         /* entries left in ready/ by a dead keeper (0 while it runs) */
};

/* The pools of the store, sorted by name: *list (an_pool_info_list_free),
 * *n entries.  A store without pools: 0 entries.
 * Errors: errno of reading ROOT/pools (named); -ENOMEM. */
int an_pool_list(const char *store_root, struct an_pool_info **list, size_t *n, an_error_t *err);
void an_pool_info_list_free(struct an_pool_info *list, size_t n);

/* The options pool `name` makes its sandboxes with: *out
 * (an_sandbox_opts_free), and *json (may be NULL; heap, free()) the
 * pool's options.json text, which equals an_sandbox_opts_to_json of
 * options that make identical sandboxes.  Errors: -EINVAL bad name;
 * -ENOENT no such pool; parse errors (named). */
int an_pool_options(const char *store_root, const char *name, struct an_sandbox_opts **out,
                    char **json, an_error_t *err);

/* Whether pool `name` can hand out sandboxes: 0 its keeper runs (or the
 * pool is being started: no pool.json yet).  Reads ROOT/pools/NAME/pool.json
 * and checks the keeper's pid against its start time (a reused pid is no
 * keeper).  Errors: -ESRCH the keeper is dead ("pool NAME: its keeper (pid
 * N) is dead; `agentnest pool stop NAME` or `agentnest prune` removes
 * it"); -ENOENT no such pool; -EINVAL bad name; pool.json unreadable
 * (named). */
int an_pool_check(const char *store_root, const char *name, an_error_t *err);

/* Take one ready sandbox of pool `name`: *out is an open handle
 * (an_sandbox_close) of a sandbox nobody else got or will get, whose
 * lifetime starts now.  `owned`: the calling process becomes its owner
 * (its monitor tears it down when this process exits, as
 * an_sandbox_create_owned); else it is persistent (as an_sandbox_create).
 * Errors: -EAGAIN no ready sandbox ("pool NAME is empty"): the caller may
 * create a fresh one; -ESRCH the pool's keeper is dead (an_pool_check's
 * message; nothing is taken: its ready sandboxes die with it); -ENOENT no
 * such pool; -EINVAL bad name.  Ready
 * sandboxes found dead on the way are skipped (the keeper replaces them).
 * Event "claimed" {"pool"} in the sandbox's events. */
int an_pool_claim(const char *store_root, const char *name, bool owned, struct an_sandbox **out,
                  an_error_t *err);

/* End sandbox `sb` at once and leave the removal of its remains to a
 * detached reaper: an_sandbox_destroy_detached (agentnest/sandbox.h), its
 * "destroy" audit record written by the reaper.  On return no process of
 * the sandbox runs and no call finds it any more ("no such sandbox"); if
 * the reaper is killed, an_sandbox_prune finishes.  For the one-shot paths,
 * where the caller's result is ready and the teardown need not be on its
 * clock.  The handle stays open.  Errors: an_sandbox_destroy_detached's. */
int an_sandbox_destroy_background(struct an_sandbox *sb, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
