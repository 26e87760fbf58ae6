/* tests/integration/batch_slurm_test.c — agentnest-batch(1)'s Slurm job-array example, run for
 * real: tests/batch/slurm-array.sh makes a one-node Slurm cluster of its own (private munged,
 * slurm.conf, ports and spool), submits the documented batch.sh as a 3-task array over 12 jobs
 * and checks that the merged shard results hold every job exactly once; it removes everything.
 * Skipped where slurm-wlm or munge is not installed (rootfs-tools/install-deps.sh installs them). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util.h"

Test(batch_slurm, documented_job_array_runs_every_job_once, .timeout = 400) {
  const char *b = getenv("AN_TEST_BUILD"), *s = getenv("AN_TEST_SRC");
  char out[256];
  snprintf(out, sizeof out, "/tmp/an-slurm-out-%d", (int) getpid());
  int rc = an_test_sh("'%s/tests/batch/slurm-array.sh' '%s' > '%s' 2>&1", s && *s ? s : ".", b && *b ? b : "build", out);
  char *text = an_test_read_file(out, NULL);
  remove(out);
  if (rc == 77) cr_skip_test("%s", text ? text : "slurm not installed");
  cr_expect_eq(rc, 0, "%s", text ? text : "");
  cr_expect(text && strstr(text, "slurm-array: ok"), "%s", text ? text : "");
  free(text);
}
