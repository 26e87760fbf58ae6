/* Unit tests of the honest refusals of issue 10 item 11 at the library
 * level: the seccomp widening check (compiled filters evaluated on probe
 * calls), --landlock modes as the spec's annotation, pids above the host's
 * pid_max, and U+0000 inside a profile's JSON strings. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/sandbox_opts.h"
#include "agentnest/seccomp_profile.h"
#include "agentnest/spec.h"
#include "engine/seccomp.h"
#include "sandbox/seccomp_check.h"
#include "sandbox/spec_build_internal.h"
#include "util.h"
#include "rm_tree.h"
#include "ctx_fixture.h"

static char profiles_dir[4096];
static char default_profile[4200];
static char tmpdir[256];

static void setup(void) {
  const char *src = getenv("AN_TEST_SRC");
  char rel[4096];
  snprintf(rel, sizeof rel, "%s/profiles", src && *src ? src : ".");
  cr_assert_not_null(realpath(rel, profiles_dir), "no profiles dir at %s", rel);
  setenv("AGENTNEST_PROFILES", profiles_dir, 1);
  snprintf(default_profile, sizeof default_profile, "%s/seccomp/default.json", profiles_dir);
  snprintf(tmpdir, sizeof tmpdir, "/tmp/an-policy-unit-%d", (int) getpid());
  cr_assert_eq(mkdir(tmpdir, 0700), 0, "mkdir %s", tmpdir);
}

static void teardown(void) { an_test_rm_tree(tmpdir); }

TestSuite(policy, .init = setup, .fini = teardown);

static struct an_spec_seccomp *load(const char *path) {
  struct an_spec_seccomp *s = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_seccomp_profile_load(path, &s, &err), 0, "load %s: %s", path,
               err ? err->msg : "");
  return s;
}

/* The default profile plus one more syscalls[] entry (JSON text). */
static const char *widened_profile(const char *name, const char *extra_rule) {
  static char path[512];
  size_t len = 0;
  char *text = an_test_read_file(default_profile, &len);
  cr_assert_not_null(text);
  char *open = strstr(text, "\"syscalls\"");
  cr_assert_not_null(open);
  open = strchr(open, '[');
  cr_assert_not_null(open);
  snprintf(path, sizeof path, "%s/%s.json", tmpdir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f, "%.*s%s,%s", (int) (open + 1 - text), text, extra_rule, open + 1);
  fclose(f);
  free(text);
  return path;
}

static char **widening(const char *path) {
  struct an_spec_seccomp *p = load(path), *ref = load(default_profile);
  char **labels = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sb_seccomp_widening(p, ref, &labels, &err), 0, "%s", err ? err->msg : "");
  an_spec_seccomp_free(p);
  an_spec_seccomp_free(ref);
  return labels;
}

Test(policy, bpf_evaluator_answers_as_the_default_filter_does) {
  struct an_spec_seccomp *s = load(default_profile);
  struct an_seccomp_program *p = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_seccomp_prepare(s, NULL, &p, &err), 0);
  struct seccomp_data d = {.nr = 39 /* getpid */, .arch = 0xc000003e /* AUDIT_ARCH_X86_64 */};
  uint32_t ret = 0;
  cr_assert_eq(an_sb_bpf_run(p->filter, p->prog.len, &d, &ret), 0);
  cr_expect_eq(ret & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ALLOW, "getpid: %#x", ret);
  d.nr = 165;   /* mount */
  cr_assert_eq(an_sb_bpf_run(p->filter, p->prog.len, &d, &ret), 0);
  cr_expect_eq(ret, SECCOMP_RET_ERRNO | EPERM, "mount: %#x", ret);
  d.nr = 435;   /* clone3 answers ENOSYS */
  cr_assert_eq(an_sb_bpf_run(p->filter, p->prog.len, &d, &ret), 0);
  cr_expect_eq(ret, SECCOMP_RET_ERRNO | ENOSYS, "clone3: %#x", ret);
  d.nr = 56;    /* clone: plain fork allowed, CLONE_NEWUSER denied */
  cr_assert_eq(an_sb_bpf_run(p->filter, p->prog.len, &d, &ret), 0);
  cr_expect_eq(ret & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ALLOW);
  d.args[0] = 0x10000000;   /* CLONE_NEWUSER */
  cr_assert_eq(an_sb_bpf_run(p->filter, p->prog.len, &d, &ret), 0);
  cr_expect_eq(ret, SECCOMP_RET_ERRNO | EPERM, "clone(CLONE_NEWUSER): %#x", ret);
  d.arch = 0x40000003;      /* AUDIT_ARCH_I386: another ABI is killed */
  cr_assert_eq(an_sb_bpf_run(p->filter, p->prog.len, &d, &ret), 0);
  cr_expect_eq(ret & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_KILL_PROCESS, "i386: %#x", ret);
  /* a program that falls off its end is refused */
  struct sock_filter bad[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)};
  cr_expect_eq(an_sb_bpf_run(bad, 1, &d, &ret), -EINVAL);
  an_seccomp_program_free(p);
  an_spec_seccomp_free(s);
}

Test(policy, the_default_profile_widens_nothing) {
  char **labels = widening(default_profile);
  cr_expect_null(labels[0], "default widens itself: %s", labels[0]);
  an_sb_labels_free(labels);
}

Test(policy, a_profile_allowing_mount_and_new_user_namespaces_is_named) {
  char **labels = widening(widened_profile(
      "w", "{\"names\":[\"mount\",\"unshare\",\"keyctl\"],\"action\":\"SCMP_ACT_ALLOW\"}"));
  cr_assert_not_null(labels[0]);
  bool mount = false, userns = false, keyctl = false;
  for (char **l = labels; *l; l++) {
    mount |= strcmp(*l, "mount") == 0;
    userns |= strcmp(*l, "unshare(CLONE_NEWUSER)") == 0;
    keyctl |= strcmp(*l, "keyctl") == 0;
  }
  cr_expect(mount && userns && keyctl, "labels: %s ...", labels[0]);
  an_sb_labels_free(labels);
  /* a narrower profile (one more denial) widens nothing */
  labels = widening(widened_profile("n", "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ERRNO\"}"));
  cr_expect_null(labels[0], "%s", labels[0]);
  an_sb_labels_free(labels);
}

Test(policy, a_wider_default_action_is_caught_through_the_compiled_filter) {
  /* defaultAction ALLOW with a few denials: every probe the default denies
   * and this profile does not list is allowed. */
  char p[512];
  snprintf(p, sizeof p, "%s/allow-all.json", tmpdir);
  const char *doc = "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":"
                    "[\"mount\"],\"action\":\"SCMP_ACT_ERRNO\"}]}";
  an_test_write_file(p, doc, strlen(doc), 0644);
  char **labels = widening(p);
  cr_assert_not_null(labels[0]);
  cr_expect_str_eq(labels[0], "unshare(CLONE_NEWUSER)");
  for (char **l = labels; *l; l++) cr_expect_str_neq(*l, "mount");
  an_sb_labels_free(labels);
}

Test(policy, build_spec_refuses_a_widening_profile_unless_seccomp_unsafe) {
  static char *image_env[] = {NULL};
  const struct an_sandbox_image image = {"/var/lib/agentnest/images/x/rootfs", image_env, "/"};
  const struct an_sandbox_ids ids = {0x10020000u, 65536};
  char *argv[] = {"true", NULL};
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  const char *wide = widened_profile("bpf", "{\"names\":[\"bpf\"],\"action\":\"SCMP_ACT_ALLOW\"}");
  cr_assert_eq(an_sandbox_opts_set_seccomp_profile(o, wide, &err), 0);
  struct an_spec *spec = NULL;
  int r = an_sandbox_build_spec(o, &image, &ids, "abc", "/srv/ws", argv, &spec, &err);
  cr_assert_eq(r, -EPERM, "got %d %s", r, err ? err->msg : "");
  cr_expect(strstr(err->msg, "allows bpf, which the default profile denies") &&
            strstr(err->msg, "--seccomp-unsafe") && strstr(err->msg, wide), "%s", err->msg);
  cr_expect_null(spec);
  an_error_free(&err);
  cr_assert_eq(an_sandbox_opts_set_option(o, "seccomp_unsafe", "true", &err), 0);
  cr_assert_eq(an_sandbox_build_spec(o, &image, &ids, "abc", "/srv/ws", argv, &spec, &err), 0,
               "%s", err ? err->msg : "");
  an_spec_free(spec);
  /* the flag survives the options document (fork, open) */
  char *json = NULL;
  cr_assert_eq(an_sandbox_opts_to_json(o, &json, &err), 0);
  cr_expect(strstr(json, "\"seccomp_unsafe\": true"), "%s", json);
  free(json);
  an_sandbox_opts_free(o);
}

/* A profile widening many calls is refused with the first few named in
 * full and a count of the rest (a fixed buffer once cut the message
 * mid-name: "... finit_m); set seccomp_unsafe ..."). */
Test(policy, widening_refusal_lists_a_few_calls_and_counts_the_rest) {
  static char *image_env[] = {NULL};
  const struct an_sandbox_image image = {"/var/lib/agentnest/images/x/rootfs", image_env, "/"};
  const struct an_sandbox_ids ids = {0x10020000u, 65536};
  char *argv[] = {"true", NULL};
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  const char *wide = widened_profile(
      "many", "{\"names\":[\"mount\",\"umount2\",\"pivot_root\",\"chroot\",\"fsopen\",\"fsconfig\","
              "\"fsmount\",\"fspick\",\"move_mount\",\"open_tree\",\"mount_setattr\",\"bpf\","
              "\"perf_event_open\",\"userfaultfd\",\"keyctl\",\"add_key\",\"request_key\",\"ptrace\","
              "\"process_vm_readv\",\"process_vm_writev\",\"pidfd_getfd\",\"kcmp\",\"kexec_load\","
              "\"kexec_file_load\",\"init_module\",\"finit_module\",\"delete_module\"],"
              "\"action\":\"SCMP_ACT_ALLOW\"}");
  cr_assert_eq(an_sandbox_opts_set_seccomp_profile(o, wide, &err), 0);
  struct an_spec *spec = NULL;
  int r = an_sandbox_build_spec(o, &image, &ids, "abc", "/srv/ws", argv, &spec, &err);
  cr_assert_eq(r, -EPERM, "got %d %s", r, err ? err->msg : "");
  const char *m = err->msg;
  cr_expect(strstr(m, " more); set seccomp_unsafe (--seccomp-unsafe) to accept it"), "%s", m);
  const char *and = strstr(m, " and ");
  cr_assert_not_null(and, "%s", m);
  size_t more = 0;
  cr_expect(sscanf(and, " and %zu more", &more) == 1 && more > 0, "%s", m);
  /* shown = 1 + the names between "(also " and " and N more" */
  const char *also = strstr(m, "(also ");
  cr_assert_not_null(also);
  size_t shown = 2;
  for (const char *c = also; c < and; c++) shown += *c == ',';
  cr_expect_geq(shown + more, 27, "%zu shown + %zu more: %s", shown, more, m);
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

static const char *annotation(const char *mode) {
  static char value[32];
  static char *image_env[] = {NULL};
  const struct an_sandbox_image image = {"/r", image_env, "/"};
  const struct an_sandbox_ids ids = {0x10020000u, 65536};
  char *argv[] = {"true", NULL};
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  if (mode) cr_assert_eq(an_sandbox_opts_set_option(o, "landlock", mode, &err), 0, "%s", mode);
  struct an_spec *spec = NULL;
  cr_assert_eq(an_sandbox_build_spec_without_seccomp(o, &image, &ids, "a", "/w", argv, &spec, &err), 0);
  value[0] = 0;
  for (size_t i = 0; i < spec->n_annotations; i++)
    if (!strcmp(spec->annotations[i].key, "org.agentnest.landlock"))
      snprintf(value, sizeof value, "%s", spec->annotations[i].value);
  an_spec_free(spec);
  an_sandbox_opts_free(o);
  return value;
}

Test(policy, landlock_modes_become_the_engine_annotation) {
  cr_expect_str_eq(annotation(NULL), "if-available");
  cr_expect_str_eq(annotation("best-effort"), "if-available");
  cr_expect_str_eq(annotation("required"), "required");
  cr_expect_str_eq(annotation("off"), "off");
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_expect_eq(an_sandbox_opts_set_option(o, "landlock", "maybe", &err), -EINVAL);
  cr_expect(err && strstr(err->msg, "landlock \"maybe\": unknown mode"), "%s", err ? err->msg : "");
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(policy, pids_above_the_hosts_pid_max_are_refused_naming_the_bound) {
  char *text = an_test_read_file("/proc/sys/kernel/pid_max", NULL);
  cr_assert_not_null(text);
  unsigned long long pid_max = strtoull(text, NULL, 10);
  free(text);
  if (pid_max >= 4194304) cr_skip_test("pid_max is PID_MAX_LIMIT: the fixed bound applies");
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_set_pids(o, pid_max, &err), 0, "pid_max itself is fine");
  cr_assert_eq(an_sandbox_opts_set_pids(o, pid_max + 1, &err), -EINVAL);
  char want[160];
  snprintf(want, sizeof want, "pids %llu: more than the host's pid_max (%llu, "
           "/proc/sys/kernel/pid_max): EINVAL", pid_max + 1, pid_max);
  cr_expect_str_eq(err->msg, want);
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(policy, a_nul_inside_a_profile_string_is_an_error_not_a_cut) {
  const char *docs[] = {
    "{\"workdir\": \"/workspace\\u0000/../etc\"}",
    "{\"image\": \"busybox\\u0000evil\"}",
    "{\"env\": {\"A\": \"x\\u0000y\"}}",
    "{\"work\\u0000dir\": \"/w\"}",
  };
  for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
    char p[512];
    snprintf(p, sizeof p, "%s/nul%zu.json", tmpdir, i);
    an_test_write_file(p, docs[i], strlen(docs[i]), 0644);
    struct an_sandbox_opts *o = NULL;
    an_error_t err = NULL;
    cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
    int r = an_sandbox_opts_load_profile(o, p, NULL, &err);
    cr_expect_eq(r, -EINVAL, "%s: %d", docs[i], r);
    cr_expect(err && strstr(err->msg, "U+0000"), "%s: %s", docs[i], err ? err->msg : "(none)");
    cr_expect_str_eq(an_sandbox_opts_workdir(o), "/workspace", "%s changed workdir", docs[i]);
    an_error_free(&err);
    an_sandbox_opts_free(o);
  }
}

Test(policy, a_nul_inside_a_seccomp_profile_or_config_json_string_is_an_error) {
  struct an_spec_seccomp *s = NULL;
  an_error_t err = NULL;
  const char *prof = "{\"defaultAction\":\"SCMP_ACT_ERRNO\",\"syscalls\":[{\"names\":"
                     "[\"read\\u0000mount\"],\"action\":\"SCMP_ACT_ALLOW\"}]}";
  cr_expect_eq(an_seccomp_profile_parse(prof, strlen(prof), &s, &err), -EINVAL);
  cr_expect(err && strstr(err->msg, "U+0000"), "%s", err ? err->msg : "(none)");
  cr_expect_null(s);
  an_error_free(&err);
  struct an_spec *spec = NULL;
  const char *cfg = "{\"ociVersion\":\"1.2.0\",\"root\":{\"path\":\"rootfs\\u0000/..\"}}";
  cr_expect_eq(an_spec_parse(cfg, strlen(cfg), &spec, &err), -EINVAL);
  cr_expect(err && strstr(err->msg, "U+0000"), "%s", err ? err->msg : "(none)");
  an_error_free(&err);
  an_spec_free(spec);
}

Test(policy, a_profile_that_cannot_be_compared_with_the_default_is_refused) {
  static char *image_env[] = {NULL};
  const struct an_sandbox_image image = {"/r", image_env, "/"};
  const struct an_sandbox_ids ids = {0x10020000u, 65536};
  char *argv[] = {"true", NULL};
  setenv("AGENTNEST_PROFILES", tmpdir, 1);   /* no seccomp/default.json there */
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  setenv("AGENTNEST_PROFILES", profiles_dir, 1);
  const char *narrow = widened_profile("narrow", "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ERRNO\"}");
  cr_assert_eq(an_sandbox_opts_set_seccomp_profile(o, narrow, &err), 0);
  struct an_spec *spec = NULL;
  cr_expect_eq(an_sandbox_build_spec(o, &image, &ids, "a", "/w", argv, &spec, &err), -ENOENT);
  cr_expect(err && strstr(err->msg, "against the default"), "%s", err ? err->msg : "(none)");
  cr_expect_null(spec);
  an_error_free(&err);
  an_sandbox_opts_set_seccomp_unsafe(o, true);   /* the caller's explicit yes skips the check */
  cr_expect_eq(an_sandbox_build_spec(o, &image, &ids, "a", "/w", argv, &spec, &err), 0, "%s",
               err ? err->msg : "");
  an_spec_free(spec);
  an_sandbox_opts_free(o);
}

/* Whether labels (a widening's result) hold `want`. */
static bool has_label(char **labels, const char *want) {
  for (char **l = labels; *l; l++)
    if (strcmp(*l, want) == 0) return true;
  return false;
}

/* A rule that allows the dangerous call only under an argument condition
 * the one-point probe (dangerous bit alone, every other argument 0) does not
 * meet: a flag combination as an exact value, a condition on another
 * argument, high bits the kernel ignores.  Each was accepted without
 * seccomp_unsafe, and socket(AF_VSOCK, SOCK_STREAM) then opened a vsock
 * socket inside the sandbox. */
Test(policy, a_widening_behind_an_argument_condition_is_found) {
  static const struct {
    const char *rule, *label;
  } cases[] = {
      {"{\"names\":[\"unshare\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
       "\"value\":268566528,\"op\":\"SCMP_CMP_EQ\"}]}", "unshare(CLONE_NEWUSER)"},
      {"{\"names\":[\"clone\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":0,"
       "\"value\":268435473,\"op\":\"SCMP_CMP_EQ\"}]}", "clone(CLONE_NEWUSER)"},
      {"{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":1,"
       "\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}", "socket(AF_VSOCK)"},
      {"{\"names\":[\"ioctl\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":1,"
       "\"value\":4294988818,\"op\":\"SCMP_CMP_EQ\"}]}", "ioctl(TIOCSTI)"},
      {"{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":3,"
       "\"value\":4096,\"op\":\"SCMP_CMP_EQ\"}]}", "mount"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char name[16];
    snprintf(name, sizeof name, "arg%zu", i);
    char **labels = widening(widened_profile(name, cases[i].rule));
    cr_expect(has_label(labels, cases[i].label), "%s: %s not found (first label: %s)",
              cases[i].rule, cases[i].label, labels[0] ? labels[0] : "none");
    an_sb_labels_free(labels);
  }
}

/* inspect --policy's "allows"/"denies" come from the same search: the
 * profile above that lets socket(AF_VSOCK, SOCK_STREAM) through was listed
 * as denying socket(AF_VSOCK). */
Test(policy, inspect_probes_list_a_call_allowed_behind_an_argument_condition) {
  struct an_spec_seccomp *p = load(widened_profile(
      "vsock", "{\"names\":[\"socket\"],\"action\":\"SCMP_ACT_ALLOW\",\"args\":[{\"index\":1,"
               "\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}"));
  char **allowed = NULL, **denied = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sb_seccomp_probe(p, &allowed, &denied, &err), 0, "%s", err ? err->msg : "");
  cr_expect(has_label(allowed, "socket(AF_VSOCK)"), "allowed[0]: %s", allowed[0] ? allowed[0] : "none");
  cr_expect(!has_label(denied, "socket(AF_VSOCK)"));
  cr_expect(has_label(denied, "mount"));
  an_sb_labels_free(allowed);
  an_sb_labels_free(denied);
  an_spec_seccomp_free(p);
}
