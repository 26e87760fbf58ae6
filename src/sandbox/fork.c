/* sandbox/fork.c — an_sandbox_fork: a new sandbox with the same options (no
 * name) and a point-in-time copy of the workspace.  The source is frozen
 * (cgroup freezer) while its workspace is archived into an unnamed
 * temporary file on the store's disk (O_TMPFILE; capped by the free space)
 * (snapshot.h: no symlink followed, hostile entries impossible by
 * construction) and thawed at once; the copy is extracted into the new
 * workspace with the new sandbox's owner ids (tar_extract.c's rules).
 * What does NOT live here: create (sandbox.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "agentnest/approval.h"
#include "sandbox/audit_internal.h"
#include "sandbox/opts_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

int an_sandbox_fork(struct an_sandbox *sb, struct an_sandbox **out, an_error_t *err) {
  /* Options as stored (never a name), plus the secrets. */
  struct an_sandbox_opts *opts = NULL;
  cleanup_close int mfd = -1;
  char op[PATH_MAX + 64];
  snprintf(op, sizeof op, "%s/%s", sb->dir, AN_SB_OPTIONS_FILE);
  struct an_audit_field none[1];
  int r = an_approval_checkv(sb, "fork", none, 0, err);
  if (r < 0) return r;
  r = an_sb_secret_values_ok(sb, err);
  if (r < 0) return r;
  if ((r = an_sandbox_opts_new_ctx(sb->opts ? sb->opts->ctx : NULL, &opts, err)) < 0) return r;
  if ((r = an_sandbox_opts_load_profile(opts, op, NULL, err)) < 0) goto out;
  for (size_t i = 0; i < sb->rec.nsecrets; i++)
    if ((r = an_sandbox_opts_add_secret(opts, sb->rec.secrets[i].name, sb->rec.secrets[i].value, err)) < 0)
      goto out;
  /* The copy is an unnamed file on the store's disk, not in memory (a
   * memfd charged the host's RAM, outside every sandbox limit), capped so
   * that it and the new workspace fit in the space free there. */
  mfd = open(sb->root, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (mfd < 0) { r = an_error_set(err, errno, "workspace copy: temporary file in %s", sb->root); goto out; }
  if ((r = an_sb_freeze(sb, true, err)) < 0) goto out;
  struct an_snapshot_opts cap = {.max_bytes = an_sb_copy_cap(mfd, 2)};
  r = an_workspace_snapshot_fd(sb->ws_fd, mfd, &cap, NULL, err);
  if (r == -EFBIG)
    an_error_prefix(err, "workspace copy (cap: half the space free in %s, for the copy and the new workspace)",
                    sb->root);
  an_error_t e = NULL;
  int t = an_sb_freeze(sb, false, &e);
  if (r >= 0 && t < 0) { *err = e; e = NULL; r = t; }
  an_error_free(&e);
  if (r < 0) goto out;
  struct an_sandbox *nsb = NULL;
  if ((r = an_sandbox_create(sb->root, opts, &nsb, err)) < 0) goto out;
  struct an_file_opts fo;
  an_sandbox_file_opts(nsb, &fo);
  /* holes stay holes (the copy has pax sparse entries); the logical size
   * is capped by the space free for the new workspace */
  struct an_snapshot_opts so = {.set_owner = true, .uid = fo.uid, .gid = fo.gid,
                                .max_bytes = an_sb_copy_cap(nsb->ws_fd, 1)};
  if (lseek(mfd, 0, SEEK_SET) < 0) r = an_error_set(err, errno, "rewind the workspace copy");
  else r = an_tar_extract_safe(mfd, nsb->ws_fd, &so, err);
  if (r < 0) {
    an_error_t e2 = NULL;
    an_sandbox_destroy(nsb, 0, &e2);
    an_error_free(&e2);
    an_sandbox_close(nsb);
    goto out;
  }
  an_sb_event(sb->dir, "forked", ",\"child\":\"%s\"", nsb->rec.id);
  an_sb_event(nsb->dir, "forked_from", ",\"parent\":\"%s\"", sb->rec.id);
  *out = nsb;
out:
  an_sandbox_opts_free(opts);
  if (r < 0) an_error_prefix(err, "fork sandbox %s", sb->rec.id);
  struct an_audit_field af[] = {AN_AUDIT_STR("child", r >= 0 ? (*out)->rec.id : NULL)};
  an_sb_audit(sb, NULL, NULL, "fork", r, err, af, 1);
  return r < 0 ? r : 0;
}
