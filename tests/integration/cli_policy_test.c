/* tests/integration/cli_policy_test.c — black-box tests of policy as data
 * and honest refusals (issue 10 item 11) through the built `agentnest`
 * ($AN_TEST_BUILD/agentnest): `inspect --policy`, `policy explain`,
 * --landlock required failing closed on a kernel whose Landlock is hidden
 * (a seccomp filter of the test's own answers landlock_create_ruleset with
 * ENOSYS, as a kernel without Landlock does), --seccomp-profile widening
 * the default refused unless --seccomp-unsafe (then an event), --pids above
 * pid_max, U+0000 in a profile, doctor as non-root, a store under a 0700
 * directory.
 *
 * The tests share one state root per run, /tmp/an-clipol-<runner pid>, with
 * the busybox image imported from the `make images` cache (skipped when it
 * is missing); it is pruned and removed when the run ends. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <grp.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "cli_fixture.h"
#include "util.h"

#define CACHE "/var/cache/agentnest/images"

/* the shared driver (tests/lib/cli_fixture.h), under this file's old names */
#define out_text (an_cli.out)
#define err_text (an_cli.err)
#define root (an_cli.root)
#define work (an_cli.work)

enum run_as { AS_ROOT, AS_NOBODY, AS_ROOT_WITHOUT_LANDLOCK };

static int become_nobody(void) {
  return setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0;
}

/* Hide Landlock from everything the child runs (landlock_create_ruleset -> ENOSYS). */
static int hide_landlock(void) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  return !ctx || seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0 ||
         seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(landlock_create_ruleset), 0) < 0 ||
         seccomp_load(ctx) < 0;
}

static int an_v(enum run_as as, const char *store, const char *fmt, va_list ap) {
  char *args = NULL;
  cr_assert_geq(vasprintf(&args, fmt, ap), 0);
  int r = an_cli_run_with(as == AS_NOBODY ? become_nobody : as == AS_ROOT_WITHOUT_LANDLOCK ? hide_landlock : NULL,
                          store, "%s", args);
  free(args);
  return r;
}

static int an(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int an(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = an_v(AS_ROOT, root, fmt, ap);
  va_end(ap);
  return r;
}

static int an_as(enum run_as as, const char *store, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int an_as(enum run_as as, const char *store, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = an_v(as, store, fmt, ap);
  va_end(ap);
  return r;
}

static yajl_val parse_json(const char *text) {
  char e[256] = "";
  yajl_val v = yajl_tree_parse(text, e, sizeof e);
  cr_assert_not_null(v, "not JSON (%s): %s", e, text);
  return v;
}

static yajl_val jpath(yajl_val v, yajl_type t, const char *a, const char *b, const char *c) {
  const char *path[] = {a, b, c, NULL};
  return yajl_tree_get(v, path, t);
}

/* The string of a JSON value, "" when it is not a string. */
static const char *js(yajl_val v) {
  const char *s = v && YAJL_IS_STRING(v) ? v->u.string : NULL;
  return s ? s : "";
}

static void chomp(char *s) {
  size_t n = strlen(s);
  while (n && s[n - 1] == '\n') s[--n] = 0;
}

static void import_busybox(void) { an_cli_import("busybox"); }

static void setup(void) { an_cli_setup("clipol", 0755); }

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  an_cli_remove_root("clipol");
}

TestSuite(cli_policy, .init = setup, .fini = an_cli_teardown, .timeout = 120);

/* The default profile with one more syscalls[] rule, written to work/NAME. */
static const char *widened_profile(const char *name, const char *rule) {
  static char path[600];
  char def[4200];
  snprintf(def, sizeof def, "%s/seccomp/default.json", getenv("AGENTNEST_PROFILES"));
  char *text = an_test_read_file(def, NULL);
  cr_assert_not_null(text);
  char *open = strchr(strstr(text, "\"syscalls\""), '[');
  snprintf(path, sizeof path, "%s/%s", work, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f, "%.*s%s,%s", (int) (open + 1 - text), text, rule, open + 1);
  fclose(f);
  free(text);
  return path;
}

static size_t count_sandboxes(void) {
  cr_assert_eq(an("ls --json"), 0, "%s", err_text);
  yajl_val v = parse_json(out_text);
  size_t n = YAJL_IS_ARRAY(v) ? v->u.array.len : 0;
  yajl_tree_free(v);
  return n;
}

/* ---- seccomp profiles that allow what the default denies ------------------------------- */

Test(cli_policy, seccomp_profile_widening_the_default_is_refused_naming_the_call) {
  import_busybox();
  size_t before = count_sandboxes();
  const char *p = widened_profile("mount.json", "{\"names\":[\"mount\"],\"action\":\"SCMP_ACT_ALLOW\"}");
  cr_assert_eq(an("run --image busybox --seccomp-profile '%s' -- true", p), 125, "%s", err_text);
  cr_expect(strstr(err_text, "allows mount, which the default profile denies") &&
            strstr(err_text, "--seccomp-unsafe"), "%s", err_text);
  p = widened_profile("userns.json", "{\"names\":[\"unshare\"],\"action\":\"SCMP_ACT_ALLOW\"}");
  cr_assert_eq(an("run --image busybox --seccomp-profile '%s' -- true", p), 125);
  cr_expect(strstr(err_text, "allows unshare(CLONE_NEWUSER)"), "%s", err_text);
  p = widened_profile("ptrace.json", "{\"names\":[\"ptrace\",\"bpf\"],\"action\":\"SCMP_ACT_ALLOW\"}");
  cr_assert_eq(an("create --image busybox --seccomp-profile '%s'", p), 125);
  cr_expect(strstr(err_text, "allows bpf") || strstr(err_text, "allows ptrace"), "%s", err_text);
  cr_expect_eq(count_sandboxes(), before, "a refused create left a sandbox");
  /* a narrower profile is fine */
  p = widened_profile("narrow.json", "{\"names\":[\"getpid\"],\"action\":\"SCMP_ACT_ERRNO\"}");
  cr_expect_eq(an("run --image busybox --seccomp-profile '%s' -- true", p), 0, "%s", err_text);
}

Test(cli_policy, accepted_unsafe_profile_runs_and_is_an_event) {
  import_busybox();
  const char *p = widened_profile("keyctl.json",
                                  "{\"names\":[\"keyctl\",\"add_key\"],\"action\":\"SCMP_ACT_ALLOW\"}");
  cr_assert_eq(an("create --image busybox --seccomp-profile '%s' --seccomp-unsafe", p), 0, "%s", err_text);
  char *id = strdup(out_text);
  chomp(id);
  cr_assert_eq(an("events %s", id), 0, "%s", err_text);
  cr_expect(strstr(out_text, "\"type\":\"seccomp_unsafe\"") && strstr(out_text, "\"keyctl\"") &&
            strstr(out_text, p), "%s", out_text);
  cr_expect_eq(an("destroy %s", id), 0);
  free(id);
}

/* ---- Landlock ------------------------------------------------------------------------- */

Test(cli_policy, landlock_required_fails_closed_without_landlock) {
  import_busybox();
  size_t before = count_sandboxes();
  cr_assert_eq(an_as(AS_ROOT_WITHOUT_LANDLOCK, root, "run --image busybox --landlock required -- true"),
               125, "out %s err %s", out_text, err_text);
  cr_expect(strstr(err_text, "Landlock is required but this kernel does not offer it"), "%s", err_text);
  cr_expect_eq(count_sandboxes(), before, "a refused create left a sandbox");
  /* best-effort (the default) runs there, without Landlock */
  cr_expect_eq(an_as(AS_ROOT_WITHOUT_LANDLOCK, root, "run --image busybox --landlock best-effort -- true"),
               0, "%s", err_text);
  cr_expect_eq(an_as(AS_ROOT_WITHOUT_LANDLOCK, root, "run --image busybox -- true"), 0, "%s", err_text);
  /* and required runs where the kernel has it */
  if (an_as(AS_ROOT, root, "doctor") >= 0 && strstr(out_text, "\"abi\": 0"))
    cr_skip_test("this kernel has no Landlock");
  cr_expect_eq(an("run --image busybox --landlock required -- true"), 0, "%s", err_text);
  cr_expect_eq(an("run --image busybox --landlock sometimes -- true"), 125);
  cr_expect(strstr(err_text, "--landlock sometimes") && strstr(err_text, "required, best-effort, off"),
            "%s", err_text);
}

/* ---- absurd values -------------------------------------------------------------------- */

Test(cli_policy, pids_above_pid_max_is_refused_with_the_bound_named) {
  char *pm = an_test_read_file("/proc/sys/kernel/pid_max", NULL);
  cr_assert_not_null(pm);
  unsigned long long pid_max = strtoull(pm, NULL, 10);
  free(pm);
  if (pid_max >= 4194304) cr_skip_test("pid_max is PID_MAX_LIMIT");
  cr_assert_eq(an("run --image busybox --pids %llu -- true", pid_max + 1), 125);
  char want[128];
  snprintf(want, sizeof want, "more than the host's pid_max (%llu", pid_max);
  cr_expect(strstr(err_text, want) && strstr(err_text, "--pids"), "%s", err_text);
}

Test(cli_policy, a_nul_in_a_profile_string_is_refused) {
  char p[400];
  snprintf(p, sizeof p, "%s/nul.json", work);
  const char *doc = "{\"image\": \"busybox\", \"workdir\": \"/workspace\\u0000/../../etc\"}";
  an_test_write_file(p, doc, strlen(doc), 0644);
  cr_assert_eq(an("run --profile '%s' -- true", p), 125);
  cr_expect(strstr(err_text, "U+0000"), "%s", err_text);
}

/* ---- doctor and privilege --------------------------------------------------------------- */

Test(cli_policy, doctor_as_non_root_reports_the_missing_privilege_and_exits_1) {
  /* a store root nobody can write, so that only the privilege is missing */
  char store[400];
  snprintf(store, sizeof store, "%s/nobody-store", work);
  cr_assert_eq(mkdir(store, 0777), 0);
  cr_assert_eq(chmod(store, 01777), 0);
  cr_assert_eq(chmod(work, 0755), 0);
  int st = an_as(AS_NOBODY, store, "doctor");
  cr_assert_eq(st, 1, "doctor as nobody: %d\n%s\n%s", st, out_text, err_text);
  yajl_val v = parse_json(out_text);
  yajl_val ok = jpath(v, yajl_t_any, "privilege", "ok", NULL);
  cr_expect(ok && YAJL_IS_FALSE(ok), "%s", out_text);
  cr_expect(strstr(out_text, "run agentnest as root"), "%s", out_text);
  yajl_tree_free(v);
  /* as root it is fine */
  an_as(AS_ROOT, store, "doctor");
  v = parse_json(out_text);
  ok = jpath(v, yajl_t_any, "privilege", "ok", NULL);
  cr_expect(ok && YAJL_IS_TRUE(ok), "%s", out_text);
  yajl_tree_free(v);
}

/* ---- a store below a directory the sandboxes cannot search -------------------------------- */

Test(cli_policy, store_below_a_0700_directory_is_refused_naming_it) {
  struct stat st;
  if (stat(CACHE "/busybox/layout", &st) != 0) cr_skip_test("no busybox image in " CACHE);
  char parent[400], store[450];
  snprintf(parent, sizeof parent, "%s/private", work);
  snprintf(store, sizeof store, "%s/store", parent);
  cr_assert_eq(mkdir(parent, 0700), 0);
  /* image import is refused with the same message as create */
  char want[600];
  snprintf(want, sizeof want, "directory %s is mode 0700", parent);
  cr_expect_eq(an_as(AS_ROOT, store, "image import '" CACHE "/busybox/layout' --name busybox"), 125);
  cr_expect(strstr(err_text, want) && strstr(err_text, "chmod o+x"), "%s", err_text);
  cr_assert_eq(chmod(parent, 0701), 0);
  cr_assert_eq(an_as(AS_ROOT, store, "image import '" CACHE "/busybox/layout' --name busybox"), 0,
               "%s", err_text);
  cr_assert_eq(chmod(parent, 0700), 0);
  cr_assert_eq(an_as(AS_ROOT, store, "run --image busybox -- true"), 125);
  cr_expect(strstr(err_text, want) && strstr(err_text, "chmod o+x"), "%s", err_text);
  cr_expect(strstr(err_text, "open_tree") == NULL, "the engine's error, not the refusal: %s", err_text);
  /* doctor says so too */
  cr_expect_eq(an_as(AS_ROOT, store, "doctor"), 1);
  cr_expect(strstr(out_text, "\"reachable_by_sandboxes\": false"), "%s", out_text);
  snprintf(want, sizeof want, "%s/sandboxes", store);
  cr_expect(stat(want, &st) != 0 || st.st_nlink == 2, "a refused create left state in %s", want);
  /* with the mode it names, it works */
  cr_assert_eq(chmod(parent, 0701), 0);
  cr_expect_eq(an_as(AS_ROOT, store, "run --image busybox -- true"), 0, "%s", err_text);
  an_as(AS_ROOT, store, "prune --all");
}

/* ---- policy as data --------------------------------------------------------------------- */

static bool has_str(yajl_val arr, const char *s) {
  for (size_t i = 0; arr && YAJL_IS_ARRAY(arr) && i < arr->u.array.len; i++)
    if (YAJL_IS_STRING(arr->u.array.values[i]) && !strcmp(js(arr->u.array.values[i]), s))
      return true;
  return false;
}

static long long jnum(yajl_val v, const char *a, const char *b) {
  yajl_val n = jpath(v, yajl_t_number, a, b, NULL);
  cr_assert_not_null(n, "%s.%s: not a number", a, b ? b : "");
  return YAJL_GET_INTEGER(n);
}

Test(cli_policy, inspect_policy_prints_every_control_from_the_applied_spec) {
  import_busybox();
  cr_assert_eq(an("create --image busybox --memory 64m --pids 100 --landlock required"), 0, "%s", err_text);
  char *id = strdup(out_text);
  chomp(id);
  cr_assert_eq(an("inspect --policy %s", id), 0, "%s", err_text);
  yajl_val p = parse_json(out_text);
  /* namespaces, user, capabilities in all five sets, no_new_privs, rlimits */
  yajl_val ns = jpath(p, yajl_t_array, "namespaces", NULL, NULL);
  cr_assert_not_null(ns);
  bool userns = false;
  for (size_t i = 0; i < ns->u.array.len; i++) {
    yajl_val t = jpath(ns->u.array.values[i], yajl_t_string, "type", NULL, NULL);
    userns |= t && !strcmp(js(t), "user");
  }
  cr_expect(userns, "no user namespace listed");
  cr_expect_eq(jnum(p, "user", "uid"), 65532);
  const char *sets[] = {"bounding", "effective", "inheritable", "permitted", "ambient"};
  for (size_t i = 0; i < 5; i++) {
    yajl_val set = jpath(p, yajl_t_array, "capabilities", sets[i], NULL);
    cr_expect(set && set->u.array.len == 0, "capabilities.%s not an empty list", sets[i]);
  }
  yajl_val nnp = jpath(p, yajl_t_any, "no_new_privileges", NULL, NULL);
  cr_expect(nnp && YAJL_IS_TRUE(nnp));
  yajl_val rl = jpath(p, yajl_t_array, "rlimits", NULL, NULL);
  cr_expect(rl && rl->u.array.len >= 1 && strstr(out_text, "\"RLIMIT_NOFILE\""), "%s", out_text);
  /* cgroup limits as given */
  cr_expect_eq(jnum(p, "cgroup", "memory_limit"), 64ll << 20);
  cr_expect_eq(jnum(p, "cgroup", "pids_limit"), 100);
  /* seccomp: default action, architectures, digest, the dangerous calls denied */
  yajl_val da = jpath(p, yajl_t_string, "seccomp", "default_action", NULL);
  cr_expect(da && !strcmp(js(da), "SCMP_ACT_ERRNO"), "%s", out_text);
  cr_expect(has_str(jpath(p, yajl_t_array, "seccomp", "architectures", NULL), "SCMP_ARCH_X86_64"));
  yajl_val dg = jpath(p, yajl_t_string, "seccomp", "digest", NULL);
  cr_expect(dg && !strncmp(js(dg), "sha256:", 7) && strlen(js(dg)) == 71);
  yajl_val denies = jpath(p, yajl_t_array, "seccomp", "denies", NULL);
  cr_expect(has_str(denies, "mount") && has_str(denies, "unshare(CLONE_NEWUSER)") &&
            has_str(denies, "bpf") && has_str(denies, "ptrace"), "%s", out_text);
  /* Landlock and network */
  yajl_val lm = jpath(p, yajl_t_string, "landlock", "mode", NULL);
  cr_expect(lm && !strcmp(js(lm), "required"));
  cr_expect(has_str(jpath(p, yajl_t_array, "landlock", "writable_paths", NULL), "/workspace"));
  yajl_val nm = jpath(p, yajl_t_string, "network", "mode", NULL);
  cr_expect(nm && !strcmp(js(nm), "none"));
  cr_expect_not_null(jpath(p, yajl_t_array, "not_enforced", NULL, NULL));
  /* Every mount of the spec the engine stored, none more, none fewer, with its options. */
  yajl_val spec_path = jpath(p, yajl_t_string, "spec", NULL, NULL);
  cr_assert_not_null(spec_path);
  char *cfg = an_test_read_file(js(spec_path), NULL);
  cr_assert_not_null(cfg, "%s", js(spec_path));
  yajl_val c = parse_json(cfg);
  yajl_val cm = jpath(c, yajl_t_array, "mounts", NULL, NULL), pm = jpath(p, yajl_t_array, "mounts", NULL, NULL);
  cr_assert(cm && pm);
  cr_expect_eq(cm->u.array.len, pm->u.array.len, "mounts: %zu in the spec, %zu in the policy",
               cm->u.array.len, pm->u.array.len);
  for (size_t i = 0; i < cm->u.array.len && i < pm->u.array.len; i++) {
    yajl_val a = jpath(cm->u.array.values[i], yajl_t_string, "destination", NULL, NULL);
    yajl_val b = jpath(pm->u.array.values[i], yajl_t_string, "destination", NULL, NULL);
    cr_expect(a && b && !strcmp(js(a), js(b)));
    yajl_val ao = jpath(cm->u.array.values[i], yajl_t_array, "options", NULL, NULL);
    yajl_val bo = jpath(pm->u.array.values[i], yajl_t_array, "options", NULL, NULL);
    cr_expect_eq(ao ? ao->u.array.len : 0, bo ? bo->u.array.len : 0, "options of mount %zu", i);
  }
  yajl_tree_free(c);
  free(cfg);
  yajl_tree_free(p);
  cr_expect_eq(an("destroy %s", id), 0);
  free(id);
}

/* A profile whose image is not in the store is not runnable here, and says
 * so (explain once said "runnable, image debian" and run then failed with
 * "image debian: not found"). */
Test(cli_policy, policy_explain_reports_a_missing_image) {
  char store[300];
  snprintf(store, sizeof store, "%s/no-images", root);
  cr_assert(mkdir(store, 0711) == 0 || errno == EEXIST);
  cr_assert_eq(an_as(AS_ROOT, store, "policy explain --profile git"), 0, "%s", err_text);
  cr_expect(strstr(out_text, "profile git: NOT runnable") && strstr(out_text, "image debian: not found"),
            "%s", out_text);
}

Test(cli_policy, policy_explain_lists_profiles_and_what_is_not_enforced_here) {
  struct stat pst;
  if (stat(CACHE "/python/layout", &pst) != 0) cr_skip_test("no python image in " CACHE);
  an("image import '" CACHE "/python/layout' --name python");   /* the default profile's image */
  cr_assert_eq(an("policy explain --json"), 0, "%s", err_text);
  yajl_val v = parse_json(out_text);
  yajl_val ps = jpath(v, yajl_t_array, "profiles", NULL, NULL);
  cr_assert(ps && ps->u.array.len >= 2, "%s", out_text);
  bool def = false, gpu = false;
  for (size_t i = 0; i < ps->u.array.len; i++) {
    yajl_val p = ps->u.array.values[i];
    yajl_val name = jpath(p, yajl_t_string, "name", NULL, NULL);
    yajl_val run = jpath(p, yajl_t_any, "runnable", NULL, NULL);
    cr_assert(name && run);
    if (!strcmp(js(name), "default")) {
      def = YAJL_IS_TRUE(run) && jpath(p, yajl_t_array, "policy", "not_enforced", NULL) &&
            jpath(p, yajl_t_object, "policy", "seccomp", NULL);
    }
    if (!strcmp(js(name), "gpu"))
      gpu = YAJL_IS_FALSE(run) && jpath(p, yajl_t_string, "reason", NULL, NULL);
  }
  cr_expect(def, "default profile not explained as runnable: %s", out_text);
  cr_expect(gpu, "gpu profile not listed as not runnable with a reason");
  yajl_tree_free(v);
  /* human text, and what a kernel without Landlock does not enforce */
  cr_assert_eq(an_as(AS_ROOT_WITHOUT_LANDLOCK, root, "policy explain --profile default"), 0, "%s", err_text);
  cr_expect(strstr(out_text, "profile default: runnable") && strstr(out_text, "NOT enforced on this host") &&
            strstr(out_text, "this kernel has no Landlock"), "%s", out_text);
  cr_expect_eq(an("policy explain --profile nosuchprofile"), 125);
  cr_expect(strstr(err_text, "nosuchprofile"), "%s", err_text);
  cr_expect_eq(an("policy frobnicate"), 125);
  cr_expect_eq(an("policy --help"), 0);
  cr_expect(strstr(out_text, "Usage: agentnest policy explain"), "%s", out_text);
  cr_expect_eq(an("policy explain --help"), 0);
  cr_expect(strstr(out_text, "--profile NAME|FILE"), "%s", out_text);
  cr_expect_eq(an("inspect --help"), 0);
  cr_expect(strstr(out_text, "--policy"), "%s", out_text);
}

/* policy --help points at a section agentnest(1) has (it named "POLICY",
 * which does not exist). */
Test(cli_policy, policy_help_names_an_existing_man_section) {
  cr_assert_eq(an("policy explain --help"), 0, "%s", err_text);
  const char *at = strstr(out_text, "agentnest(1), ");
  cr_assert_not_null(at, "%s", out_text);
  at += strlen("agentnest(1), ");
  size_t n = strcspn(at, ")\n:");
  const char *src = getenv("AN_TEST_SRC");
  char man[4096];
  snprintf(man, sizeof man, "%s/man/agentnest.1", src && *src ? src : ".");
  size_t len = 0;
  char *text = an_test_read_file(man, &len);
  cr_assert_not_null(text, "%s", man);
  char want[128];
  snprintf(want, sizeof want, "\n.SH %.*s\n", (int) n, at);
  cr_expect(strstr(text, want), "agentnest(1) has no section %.*s", (int) n, at);
  free(text);
}
