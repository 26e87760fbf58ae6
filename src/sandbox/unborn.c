/* sandbox/unborn.c — what a create killed in its first steps leaves: the
 * directory <root>/sandboxes/.new-<id>.<pid>.<start time> with at most its
 * record (sandbox.c writes the record there and renames the directory to
 * <id> before anything else is made).  Its name says who made it, so it is
 * removed, by prune and by a batch that reaps its job processes, as soon as
 * that process is dead: no age guess, no window. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/safe_path.h"

/* Parse "<id>.<pid>.<start>" (after the prefix); false when it is not one. */
static bool parse_unborn(const char *s, char id[AN_SANDBOX_ID_LEN + 1], pid_t *pid, uint64_t *start) {
  if (strlen(s) < AN_SANDBOX_ID_LEN + 4 || s[AN_SANDBOX_ID_LEN] != '.') return false;
  memcpy(id, s, AN_SANDBOX_ID_LEN);
  id[AN_SANDBOX_ID_LEN] = '\0';
  if (!an_sb_valid_id(id)) return false;
  const char *p = s + AN_SANDBOX_ID_LEN + 1;
  char *end = NULL;
  errno = 0;
  long v = strtol(p, &end, 10);
  if (errno || end == p || *end != '.' || v <= 0 || v > INT32_MAX) return false;
  *pid = (pid_t) v;
  p = end + 1;
  unsigned long long t = strtoull(p, &end, 10);
  if (errno || end == p || *end || *p == '-') return false;
  *start = t;
  return true;
}

void an_sb_remove_unborn(const char *root, pid_t owner, bool all, void (*removed)(const char *id, void *cb_arg),
                         void *cb_arg) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, AN_SB_DIR);
  cleanup_close int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dfd < 0) return;
  int lfd = dup(dfd);
  DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
  if (!d) {
    if (lfd >= 0) close(lfd);
    return;
  }
  const size_t plen = strlen(AN_SB_UNBORN_PREFIX);
  struct dirent *de;
  while ((de = readdir(d))) {
    char id[AN_SANDBOX_ID_LEN + 1];
    pid_t pid;
    uint64_t start;
    if (strncmp(de->d_name, AN_SB_UNBORN_PREFIX, plen) || !parse_unborn(de->d_name + plen, id, &pid, &start))
      continue;
    if (!all && ((owner > 0 && pid != owner) || an_sb_pid_alive(pid, start))) continue;
    an_error_t e = NULL;
    if (an_remove_tree_beneath(dfd, de->d_name, &e) == 0 && removed) removed(id, cb_arg);
    an_error_free(&e);
  }
  closedir(d);
}
