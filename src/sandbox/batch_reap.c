/* sandbox/batch_reap.c — what a batch's killed job processes leave: the
 * sandboxes a job process owned (no monitor: the job process is their
 * keeper) are torn down by the batch when that process dies without a
 * record, and by the next --resume for a batch that was itself killed
 * (the job processes its journal names).  prune would remove them too; this
 * does it at once and only for this batch's processes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sandbox/batch_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/json_tree.h"

/* Tear down the sandboxes job process `pid` owned (it died without
 * destroying them).  Called while pid is a zombie, so it is ours. */
void an_batch_reap_owned(const char *root, pid_t pid) {
  struct an_sandbox_info *l = NULL;
  size_t n = 0;
  an_error_t e = NULL;
  if (an_sandbox_list(root, &l, &n, &e) < 0) {
    an_error_free(&e);
    return;
  }
  for (size_t i = 0; i < n; i++)
    if (l[i].owner_pid == pid) {
      an_sb_teardown(root, l[i].id, "batch job ended", false, 0, false, NULL, &e);
      an_error_free(&e);
    }
  an_sandbox_info_list_free(l, n);
  /* a create the kill cut short before its directory got its name */
  an_sb_remove_unborn(root, pid, false, NULL, NULL);
}

/* Mark the sandboxes of `l` whose owner pid the journal names. */
static void journal_owned(const char *journal, const struct an_sandbox_info *l, size_t n, bool *mine) {
  FILE *f = fopen(journal, "re");
  char *buf = NULL;
  size_t cap = 0, len;
  bool too_long, eol;
  an_error_t e = NULL;
  while (f && an_batch_read_line(f, &buf, &cap, &len, 4096, &too_long, &eol) > 0) {
    yajl_val t = NULL;
    if (too_long || an_json_parse(buf, len, "", &t, &e) < 0) {
      an_error_free(&e);
      continue;
    }
    yajl_val pid = an_json_member_type(t, "pid", yajl_t_number);
    for (size_t i = 0; pid && YAJL_IS_INTEGER(pid) && i < n; i++)
      if (l[i].owner_pid == (pid_t) YAJL_GET_INTEGER(pid)) mine[i] = true;
    yajl_tree_free(t);
  }
  if (f) fclose(f);
  free(buf);
}

/* Resume: tear down the sandboxes an earlier, killed run's job processes
 * left (owned by a pid its journal names, no monitor), as prune would,
 * before anything starts.  Such a process dies with its batch
 * (PR_SET_PDEATHSIG) but may still be dying: wait for it, up to 2 s.  A pid
 * reused since belongs to a process whose start time differs, which the
 * status ("running" needs pid and start time) does not count as alive. */
static void reap_previous_named(const char *root, const char *journal) {
  for (int tries = 0; tries < 40; tries++) {
    struct an_sandbox_info *l = NULL;
    size_t n = 0;
    an_error_t e = NULL;
    if (an_sandbox_list(root, &l, &n, &e) < 0) {
      an_error_free(&e);
      return;
    }
    bool *mine = calloc(n ? n : 1, sizeof *mine);
    size_t cand = 0, alive = 0;
    for (size_t i = 0; i < n; i++) cand += l[i].owner_pid > 0 && !l[i].monitor_pid;
    if (mine && cand) journal_owned(journal, l, n, mine);
    for (size_t i = 0; mine && i < n; i++) {
      if (!mine[i] || l[i].monitor_pid) continue;
      if (!strcmp(l[i].status, "running")) {
        alive++;
        continue;
      }
      an_sb_teardown(root, l[i].id, "batch job ended", false, 0, false, NULL, &e);
      an_error_free(&e);
    }
    free(mine);
    an_sandbox_info_list_free(l, n);
    if (!alive) return;
    usleep(50000);
  }
}

void an_batch_reap_previous(const char *root, const char *journal) {
  reap_previous_named(root, journal);
  /* creates killed before their directory got its name, by any dead owner
   * (prune would remove them too; nothing of theirs exists but the record) */
  an_sb_remove_unborn(root, 0, false, NULL, NULL);
}
