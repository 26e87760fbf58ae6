/* engine/rlimits.c — rlimits and oom_score_adj (see rlimits.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "engine/rlimits.h"
#include "util/cleanup.h"

int an_rlimits_apply(const struct an_spec_process *p, an_error_t *err) {
  for (size_t i = 0; i < p->n_rlimits; i++) {
    const struct an_spec_rlimit *r = &p->rlimits[i];
    if (r->soft > r->hard)
      return an_error_set(err, EINVAL, "process.rlimits[%zu]: soft %llu above hard %llu", i,
                          (unsigned long long) r->soft, (unsigned long long) r->hard);
    struct rlimit rl = {.rlim_cur = r->soft, .rlim_max = r->hard};
    if (setrlimit(r->type, &rl) < 0)
      return an_error_set(err, errno, "process.rlimits[%zu]: setrlimit %d", i, r->type);
  }
  return 0;
}

int an_oom_score_adj_write(pid_t pid, int value, an_error_t *err) {
  char path[64], buf[16];
  snprintf(path, sizeof path, "/proc/%d/oom_score_adj", pid);
  int n = snprintf(buf, sizeof buf, "%d", value);
  cleanup_close int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "process.oomScoreAdj: open %s", path);
  if (write(fd, buf, n) < 0) return an_error_set(err, errno, "process.oomScoreAdj: write %s", path);
  return 0;
}
