/* engine/rlimits.h — process.rlimits (config.md "POSIX process"; setrlimit(2))
 * and process.oomScoreAdj (proc(5) /proc/PID/oom_score_adj).  What does NOT
 * live here: cgroup limits (cgroup.h). */
#ifndef AN_ENGINE_RLIMITS_H
#define AN_ENGINE_RLIMITS_H

#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/spec.h"

/* Child side: setrlimit for every entry.  Errors: -EINVAL soft > hard,
 * errno of setrlimit (-EPERM raising a hard limit without
 * CAP_SYS_RESOURCE), naming process.rlimits[i]. */
int an_rlimits_apply(const struct an_spec_process *p, an_error_t *err);

/* Parent side: write process.oomScoreAdj for `pid`.  Errors: errno of the
 * write naming the file. */
int an_oom_score_adj_write(pid_t pid, int value, an_error_t *err);

#endif
