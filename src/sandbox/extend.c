/* sandbox/extend.c — an_sandbox_extend: a longer lifetime for a live
 * sandbox, bounded by its options' max_lifetime (counted from creation).
 * The monitor re-arms its timer first (control op "extend"), then the
 * record is rewritten under the sandbox lock, so a later open, exec or ls
 * sees the new deadline.  The lock is not held while the monitor is asked:
 * a monitor that is expiring the sandbox takes it (teardown) and would
 * never answer. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/approval.h"
#include "agentnest/audit.h"
#include "sandbox/audit_internal.h"
#include "sandbox/control.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

static int extend_impl(struct an_sandbox *sb, uint64_t by_ms, uint64_t *deadline_out, an_error_t *err) {
  if (!sb || !by_ms) return an_error_set(err, EINVAL, "extend: no sandbox or a zero duration");
  if (!sb->rec.monitor_pid)
    return an_error_set(err, ESRCH, "sandbox %s has no monitor (a one-shot sandbox cannot be extended)",
                        sb->rec.id);
  struct an_sb_record rec = {0};
  int r = an_sb_record_read(sb->dir, &rec, err);
  if (r < 0) return r;
  uint64_t now = an_sb_now_ms(), base = rec.deadline_ms > now ? rec.deadline_ms : 0;
  if (!base) {
    an_sb_record_clear(&rec);
    return an_error_set(err, ETIME, "sandbox %s expired", sb->rec.id);
  }
  uint64_t max = an_sandbox_opts_max_lifetime(sb->opts);
  uint64_t d = base + by_ms;
  if (by_ms > AN_SANDBOX_DURATION_MAX_MS || d - rec.created_ms > max) {
    r = an_error_set(err, EINVAL, "sandbox %s: extend by %llu ms would make its lifetime %llu s, more "
                     "than its maximum %llu s (profile key max_lifetime)", sb->rec.id,
                     (unsigned long long) by_ms, (unsigned long long) ((d - rec.created_ms) / 1000),
                     (unsigned long long) (max / 1000));
    an_sb_record_clear(&rec);
    return r;
  }
  an_sb_record_clear(&rec);
  cleanup_jgen struct an_jgen j;
  an_jgen_init(&j, false);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "op", "extend");
  an_jgen_kv_u64(&j, "deadline_ms", d);
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  if (an_jgen_finish(&j, &doc, NULL) < 0) return an_error_set(err, ENOMEM, "extend: request");
  if ((r = an_ctl_call_once(sb->dir, sb->rec.id, doc, NULL, err)) < 0) return r;
  cleanup_close int lock = an_sb_lock(sb->dir, err);
  if (lock < 0) return lock;
  if ((r = an_sb_record_read(sb->dir, &rec, err)) < 0) return r;
  rec.deadline_ms = d;
  r = an_sb_record_write(sb->dir, &rec, err);
  an_sb_record_clear(&rec);
  if (r < 0) return r;
  sb->rec.deadline_ms = d;
  an_sb_event(sb->dir, "extended", ",\"deadline_ms\":%llu", (unsigned long long) d);
  if (deadline_out) *deadline_out = d;
  return 0;
}

/* The public call: asked of the approval hook, recorded in the audit log. */
int an_sandbox_extend(struct an_sandbox *sb, uint64_t by_ms, uint64_t *deadline_out, an_error_t *err) {
  if (!sb || !by_ms) return an_error_set(err, EINVAL, "extend: no sandbox or a zero duration");
  struct an_audit_field af[] = {AN_AUDIT_INT("duration_ms", by_ms)};
  int r = an_approval_checkv(sb, "extend", af, 1, err);
  if (r < 0) return r;
  uint64_t d = 0;
  r = extend_impl(sb, by_ms, &d, err);
  struct an_audit_field rf[] = {af[0], AN_AUDIT_INT("deadline_ms", d)};
  an_sb_audit(sb, NULL, NULL, "extend", r, err, rf, 2);
  if (r >= 0 && deadline_out) *deadline_out = d;
  return r;
}
