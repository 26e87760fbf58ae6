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

/* For a mode other than none: make <dir>/netns with its ruleset, the DNS
 * filter and proxy listeners, the egress process, resolv.conf/hosts (bound
 * into `spec` where the image at `rootfs` has them) and point the spec's
 * network namespace at the netns.  Mode none: nothing.  Errors (prefixed
 * "network MODE: "): the policy's (-EINVAL), netns/ruleset/listener/filter/
 * proxy creation's (the component's errno and message), -ECHILD the process
 * did not start.  On error the caller tears the sandbox down (an_sb_egress_stop). */
int an_sb_egress_start(struct an_sandbox *sb, const struct an_sandbox_opts *opts, const char *rootfs,
                       struct an_spec *spec, an_error_t *err);

/* Kill the egress process of the sandbox at `dir` (SIGKILL, checked against
 * its start time) and remove its netns; what is not there is fine.
 * Errors: an_netns_remove's. */
int an_sb_egress_stop(const char *dir, an_error_t *err);

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
