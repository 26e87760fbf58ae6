/* Unit tests for engine/caps.{h,c}: a forked child applies capability sets
 * and the parent reads them back from the child's /proc/self/status. */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/caps.h"

struct caps_seen { int rc; char msg[256]; uint64_t inh, prm, eff, bnd, amb; };

static uint64_t status_field(const char *text, const char *key) {
  const char *l = strstr(text, key);
  return l ? strtoull(l + strlen(key), NULL, 16) : UINT64_MAX;
}

static void read_status(struct caps_seen *s) {
  char buf[8192];
  FILE *f = fopen("/proc/self/status", "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = 0;
  s->inh = status_field(buf, "CapInh:");
  s->prm = status_field(buf, "CapPrm:");
  s->eff = status_field(buf, "CapEff:");
  s->bnd = status_field(buf, "CapBnd:");
  s->amb = status_field(buf, "CapAmb:");
}

/* Fork; the child optionally changes uid (keeping caps), applies `caps`, and
 * records the result and its capability sets. */
static struct caps_seen apply_in_child(const struct an_spec_capabilities *caps, uid_t uid) {
  struct caps_seen *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(s, MAP_FAILED);
  memset(s, 0, sizeof *s);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    an_error_t err = NULL;
    if (uid) {
      if (an_caps_keep_for_setuid(&err) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
        _exit(100);
    }
    s->rc = an_caps_apply(caps, &err);
    if (err) snprintf(s->msg, sizeof s->msg, "%s", err->msg);
    read_status(s);
    _exit(0);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
  struct caps_seen out = *s;
  munmap(s, sizeof *s);
  return out;
}

#define BIT(c) (UINT64_C(1) << (c))

/* BL-04: with no capabilities configured, all five sets are empty. */
Test(caps, bl_04_null_capabilities_empty_all_five_sets) {
  struct caps_seen s = apply_in_child(NULL, 0);
  cr_assert_eq(s.rc, 0, "%s", s.msg);
  cr_assert_eq(s.inh, 0);
  cr_assert_eq(s.prm, 0);
  cr_assert_eq(s.eff, 0);
  cr_assert_eq(s.bnd, 0);
  cr_assert_eq(s.amb, 0);
}

Test(caps, sets_are_exactly_the_configured_lists) {
  char *bnd[] = {"CAP_CHOWN", "CAP_KILL", "CAP_NET_BIND_SERVICE", NULL};
  char *eff[] = {"CAP_CHOWN", "CAP_KILL", NULL};
  char *none[] = {NULL};
  struct an_spec_capabilities c = { .bounding = bnd, .effective = eff, .permitted = eff,
                                    .inheritable = none, .ambient = none };
  struct caps_seen s = apply_in_child(&c, 0);
  cr_assert_eq(s.rc, 0, "%s", s.msg);
  cr_assert_eq(s.bnd, BIT(CAP_CHOWN) | BIT(CAP_KILL) | BIT(CAP_NET_BIND_SERVICE), "CapBnd %" PRIx64, s.bnd);
  cr_assert_eq(s.prm, BIT(CAP_CHOWN) | BIT(CAP_KILL));
  cr_assert_eq(s.eff, BIT(CAP_CHOWN) | BIT(CAP_KILL));
  cr_assert_eq(s.inh, 0);
  cr_assert_eq(s.amb, 0);
}

Test(caps, ambient_and_inheritable_are_raised_when_asked) {
  char *one[] = {"CAP_NET_BIND_SERVICE", NULL};
  struct an_spec_capabilities c = { .bounding = one, .effective = one, .permitted = one,
                                    .inheritable = one, .ambient = one };
  struct caps_seen s = apply_in_child(&c, 0);
  cr_assert_eq(s.rc, 0, "%s", s.msg);
  cr_assert_eq(s.amb, BIT(CAP_NET_BIND_SERVICE));
  cr_assert_eq(s.inh, BIT(CAP_NET_BIND_SERVICE));
  cr_assert_eq(s.bnd, BIT(CAP_NET_BIND_SERVICE));
}

/* After setresuid away from 0 with keepcaps, the configured sets still apply
 * (the effective set, cleared by the uid change, is raised again). */
Test(caps, applies_after_setresuid_to_non_root) {
  char *bnd[] = {"CAP_CHOWN", "CAP_SETPCAP", NULL};
  char *eff[] = {"CAP_CHOWN", NULL};
  char *none[] = {NULL};
  struct an_spec_capabilities c = { .bounding = bnd, .effective = eff, .permitted = eff,
                                    .inheritable = none, .ambient = none };
  struct caps_seen s = apply_in_child(&c, 1000);
  cr_assert_eq(s.rc, 0, "%s", s.msg);
  cr_assert_eq(s.eff, BIT(CAP_CHOWN));
  cr_assert_eq(s.prm, BIT(CAP_CHOWN));
  cr_assert_eq(s.bnd, BIT(CAP_CHOWN) | BIT(CAP_SETPCAP));
}

Test(caps, unknown_capability_name_is_refused_naming_it) {
  char *bad[] = {"CAP_CHOWN", "CAP_FLY", NULL};
  struct an_spec_capabilities c = { .bounding = bad };
  an_error_t err = NULL;
  cr_assert_eq(an_caps_check(&c, NULL, &err), -EINVAL);
  cr_assert(strstr(err->msg, "\"CAP_FLY\"") && strstr(err->msg, "bounding"), "%s", err->msg);
  an_error_free(&err);
  char *lower[] = {"cap_chown", NULL};
  struct an_spec_capabilities c2 = { .effective = lower };
  cr_assert_eq(an_caps_check(&c2, NULL, &err), -EINVAL);
  an_error_free(&err);
  /* and apply refuses it too, before changing anything */
  struct caps_seen s = apply_in_child(&c, 0);
  cr_assert_eq(s.rc, -EINVAL);
  cr_assert_neq(s.bnd, 0, "nothing dropped on a refused config");
}

Test(caps, check_accepts_every_name_the_kernel_has) {
  char *all[] = {"CAP_CHOWN", "CAP_SYS_ADMIN", "CAP_BPF", "CAP_CHECKPOINT_RESTORE", NULL};
  struct an_spec_capabilities c = { .bounding = all, .effective = all };
  an_error_t err = NULL;
  char **unavailable = NULL;
  cr_assert_eq(an_caps_check(&c, &unavailable, &err), 0, "%s", err ? err->msg : "");
  cr_assert_null(unavailable);
}

Test(caps, effective_outside_permitted_is_an_error) {
  char *bnd[] = {"CAP_CHOWN", "CAP_KILL", NULL};
  char *eff[] = {"CAP_KILL", NULL};
  char *prm[] = {"CAP_CHOWN", NULL};
  struct an_spec_capabilities c = { .bounding = bnd, .effective = eff, .permitted = prm };
  struct caps_seen s = apply_in_child(&c, 0);
  cr_assert_eq(s.rc, -EPERM, "rc %d %s", s.rc, s.msg);
  cr_assert(strstr(s.msg, "set capabilities"), "%s", s.msg);
}
