/* sandbox/egress_run.h — egress of one sandbox at create and teardown
 * (internal; see egress_run.c for the design). */
#ifndef AN_SANDBOX_EGRESS_RUN_H
#define AN_SANDBOX_EGRESS_RUN_H

#include "agentnest/error.h"
#include "agentnest/sandbox_opts.h"
#include "agentnest/spec.h"

/* the transparent proxy's port on 127.0.0.1 and ::1 in the sandbox netns
 * (below 1024: the sandbox cannot bind it first) */
#define AN_SB_EGRESS_PROXY_PORT 1000

struct an_sandbox;

/* Start what can be made before the spec (for a mode other than none): in
 * a thread of its own, <dir>/netns with its veth pair and the ruleset of the
 * policy, and the DNS filter's and proxy's listeners in it.  *out is the
 * handle for an_sb_egress_start (NULL for mode none: nothing to do).
 * Returns once the thread has its own fd table: fds the caller opens after
 * this are never held by the thread (nor by the egress process).
 * Errors (prefixed "network MODE: "): the policy's (-EINVAL); thread
 * creation's.  The thread's own errors come from an_sb_egress_start. */
struct an_sb_egress_prep;
int an_sb_egress_prepare(const char *dir, const struct an_sandbox_opts *opts, struct an_sb_egress_prep **out,
                         an_error_t *err);

/* Cancel the thread's fork if it has not happened, wait for the thread and
 * free the handle; a netns that an_sb_egress_start did not hand to the
 * sandbox is removed.  NULL is fine. */
void an_sb_egress_prep_free(struct an_sb_egress_prep *ep);

/* With the handle of an_sb_egress_prepare (NULL: mode none, nothing): wait
 * for its thread, which made the DNS filter and the proxy on its listeners
 * and forks the egress process only now (while this call waits: no fork
 * while the creating thread runs), then make resolv.conf/hosts (bound into `spec` where the image
 * at `rootfs` has them) and point the spec's network namespace at the netns.
 * Traffic can flow only after this: the ruleset is in before the spec names
 * the netns.  Errors (prefixed "network MODE: "): netns/ruleset/listener/
 * filter/proxy creation's (the component's errno and message), -ECHILD the
 * process did not start.  On error the caller tears the sandbox down
 * (an_sb_egress_stop) and frees the handle. */
int an_sb_egress_start(struct an_sandbox *sb, struct an_sb_egress_prep *ep, const char *rootfs,
                       struct an_spec *spec, an_error_t *err);

/* Kill the egress process of the sandbox at `dir` (SIGKILL, checked against
 * its start time) and remove its netns; what is not there is fine.
 * Errors: an_netns_remove's. */
int an_sb_egress_stop(const char *dir, an_error_t *err);

/* SIGKILL the egress process of the sandbox at `dir` (checked against its
 * start time) without waiting: teardown sends it early, so that the
 * process's exit overlaps the container's removal, and an_sb_egress_stop
 * waits for it later.  Nothing running is fine. */
void an_sb_egress_kill(const char *dir);

/* Tell the egress process of the sandbox at `dir` to reload its policy
 * from the options record (SIGUSR1; best effort: none running is fine). */
void an_sb_egress_reload(const char *dir);

/* Write the value of the sandbox's egress counters (its netns ruleset's
 * named counters: redirected_packets, dropped_packets, dropped_bytes,
 * dns_packets) to `g`: a map, or null for mode none or when they cannot be
 * read (the sandbox is gone).  For `network ID` and `inspect`. */
struct an_jgen;
void an_sb_egress_counters_gen(struct an_sandbox *sb, struct an_jgen *g);

#endif
