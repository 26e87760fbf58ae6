/* Unit tests for sandbox profiles (an_sandbox_opts_load_profile) and the
 * options setters they go through. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "agentnest/sandbox_opts.h"
#include "ctx_fixture.h"

static char profiles_dir[4096];
static char tmpdir[256];

static void setup(void) {
  const char *src = getenv("AN_TEST_SRC");
  snprintf(profiles_dir, sizeof profiles_dir, "%s/profiles", src ? src : ".");
  snprintf(tmpdir, sizeof tmpdir, "/tmp/an-profile-test-%d", (int) getpid());
  cr_assert_eq(mkdir(tmpdir, 0700), 0, "mkdir %s", tmpdir);
}

static void teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  (void) !system(cmd);
}

TestSuite(profile, .init = setup, .fini = teardown);

/* Write a profile file in tmpdir, return its path (static buffer). */
static const char *write_profile(const char *name, const char *json) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s.json", tmpdir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(json, f);
  fclose(f);
  return path;
}

/* Load and expect failure `want` with a message equal to `msg`. */
static void load_fails(const char *json, int want, const char *msg) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  const char *path = write_profile("p", json);
  int r = an_sandbox_opts_load_profile(o, path, NULL, &err);
  cr_assert_eq(r, want, "load %s: got %d (%s), want %d", json, r, err ? err->msg : "", want);
  char full[1024];
  snprintf(full, sizeof full, "profile \"%s\": %s", path, msg);
  cr_assert_str_eq(err->msg, full);
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(profile, every_shipped_runnable_profile_loads) {
  const char *names[] = {"default", "python", "shell", "git"};
  for (size_t i = 0; i < 4; i++) {
    struct an_sandbox_opts *o = NULL;
    an_error_t err = NULL;
    cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
    int r = an_sandbox_opts_load_profile(o, names[i], profiles_dir, &err);
    cr_assert_eq(r, 0, "profile %s: %s", names[i], err ? err->msg : "");
    cr_assert_not_null(an_sandbox_opts_image(o), "profile %s sets no image", names[i]);
    cr_assert_str_eq(an_sandbox_opts_profile(o), names[i]);
    cr_assert_str_eq(an_sandbox_opts_network(o), "none");
    an_sandbox_opts_free(o);
  }
}

Test(profile, default_profile_equals_builtin_defaults) {
  struct an_sandbox_opts *d = NULL, *p = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &d, &err), 0);
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &p, &err), 0);
  cr_assert_eq(an_sandbox_opts_load_profile(p, "default", profiles_dir, &err), 0);
  cr_assert_eq(an_sandbox_opts_memory(p), an_sandbox_opts_memory(d));
  cr_assert_eq(an_sandbox_opts_memory(d), 512ull << 20);
  cr_assert_eq(an_sandbox_opts_cpus(p), 1000);
  cr_assert_eq(an_sandbox_opts_cpus(d), 1000);
  cr_assert_eq(an_sandbox_opts_pids(p), 256);
  cr_assert_eq(an_sandbox_opts_pids(d), 256);
  cr_assert_eq(an_sandbox_opts_tmp_size(p), 64ull << 20);
  cr_assert_eq(an_sandbox_opts_tmp_size(d), 64ull << 20);
  cr_assert_eq(an_sandbox_opts_lifetime(p), 300000);
  cr_assert_eq(an_sandbox_opts_lifetime(d), 300000);
  cr_assert_eq(an_sandbox_opts_exec_timeout(d), 0);
  cr_assert_eq(an_sandbox_opts_max_output(p), 10ull << 20);
  cr_assert_eq(an_sandbox_opts_max_output(d), 10ull << 20);
  cr_assert_eq(an_sandbox_opts_max_read(p), 64ull << 20);
  cr_assert_eq(an_sandbox_opts_max_read(d), 64ull << 20);
  cr_assert_str_eq(an_sandbox_opts_workdir(d), "/workspace");
  cr_assert_str_eq(an_sandbox_opts_network(d), "none");
  cr_assert_eq(an_sandbox_opts_uid(d), 65532);
  cr_assert_eq(an_sandbox_opts_gid(d), 65532);
  cr_assert_null(an_sandbox_opts_image(d));
  cr_assert_str_eq(an_sandbox_opts_image(p), "python");
  an_sandbox_opts_free(d);
  an_sandbox_opts_free(p);
}

Test(profile, git_profile_has_debian_and_more_memory_and_pids) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_load_profile(o, "git", profiles_dir, &err), 0);
  cr_assert_str_eq(an_sandbox_opts_image(o), "debian");
  cr_assert_gt(an_sandbox_opts_memory(o), 512ull << 20);
  cr_assert_gt(an_sandbox_opts_pids(o), 256);
  an_sandbox_opts_free(o);
}

/* A profile marked "unsupported" refuses to load with its reason and
 * applies none of its keys (the browser profile was one until issue 16). */
Test(profile, unsupported_profile_refuses_with_reason) {
  write_profile("later", "{\"image\": \"busybox\", \"unsupported\": \"needs what is not built yet\"}");
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_load_profile(o, "later", tmpdir, &err), -EOPNOTSUPP);
  cr_assert_str_eq(err->msg, "profile \"later\": not supported yet: needs what is not built yet: EOPNOTSUPP");
  cr_assert_null(an_sandbox_opts_image(o), "an unsupported profile applied its keys");
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

/* issue 16 item 3: the browser profile runs Chromium's image with limits
 * that fit it (a 2 GiB cgroup, 1024 pids, 512 MiB /dev/shm and /tmp). */
Test(profile, browser_profile_loads_with_limits_that_fit_chromium) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_load_profile(o, "browser", profiles_dir, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(an_sandbox_opts_image(o), "browser");
  cr_assert_geq(an_sandbox_opts_memory(o), 2ull << 30);
  cr_assert_geq(an_sandbox_opts_pids(o), 1024);
  cr_assert_geq(an_sandbox_opts_tmp_size(o), 512ull << 20);
  cr_assert_geq(an_sandbox_opts_shm_size(o), 512ull << 20);
  cr_assert_str_eq(an_sandbox_opts_network(o), "none");
  an_sandbox_opts_free(o);
}

/* issue 16 item 4: the gpu profile runs, asking for every nvidia.com/gpu CDI device. */
Test(profile, gpu_profile_asks_for_every_nvidia_gpu_through_cdi) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_load_profile(o, "gpu", profiles_dir, &err), 0, "%s", err ? err->msg : "");
  char *const *dev = an_sandbox_opts_cdi_devices(o);
  cr_assert_str_eq(dev[0], "nvidia.com/gpu=all");
  cr_assert_null(dev[1]);
  cr_assert_gt(an_sandbox_opts_memory(o), 512ull << 20);
  an_sandbox_opts_free(o);
}

Test(profile, unknown_key_is_an_error_naming_profile_and_key) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  write_profile("python", "{\"image\": \"python\", \"memroy\": \"1g\"}");
  cr_assert_eq(an_sandbox_opts_load_profile(o, "python", tmpdir, &err), -EINVAL);
  cr_assert_str_eq(err->msg, "profile \"python\": key \"memroy\": unknown key: EINVAL");
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(profile, bad_values_are_errors_naming_the_key) {
  load_fails("{\"memory\": \"0\"}", -EINVAL,
             "key \"memory\": memory 0B: below the minimum of 4MiB: EINVAL");
  load_fails("{\"memory\": \"12x\"}", -EINVAL,
             "key \"memory\": size \"12x\": unknown unit \"x\" (use b, k, m, g or t): EINVAL");
  load_fails("{\"memory\": \"99999999t\"}", -ERANGE,
             "key \"memory\": size \"99999999t\": too large: ERANGE");
  load_fails("{\"memory\": true}", -EINVAL,
             "key \"memory\": expected a size (\"512m\" or bytes): EINVAL");
  load_fails("{\"memory\": -5}", -EINVAL,
             "key \"memory\": size \"-5\": must start with a digit (no sign, no spaces): EINVAL");
  load_fails("{\"pids\": 0}", -EINVAL, "key \"pids\": pids 0: must be between 1 and 4194304: EINVAL");
  load_fails("{\"pids\": 1.5}", -EINVAL, "key \"pids\": expected a positive integer: EINVAL");
  load_fails("{\"pids\": \"256\"}", -EINVAL, "key \"pids\": expected a positive integer: EINVAL");
  load_fails("{\"cpus\": 0}", -EINVAL, "key \"cpus\": cpus 0.000: must be between 0.01 and 1024: EINVAL");
  load_fails("{\"cpus\": 2000}", -EINVAL, "key \"cpus\": cpus 2000.000: must be between 0.01 and 1024: EINVAL");
  load_fails("{\"timeout\": -1}", -EINVAL,
             "key \"timeout\": duration \"-1\": must start with a digit (no sign, no spaces): EINVAL");
  load_fails("{\"timeout\": 0}", -EINVAL, "key \"timeout\": timeout 0ms: must be positive: EINVAL");
  load_fails("{\"exec_timeout\": \"5d\"}", -EINVAL,
             "key \"exec_timeout\": duration \"5d\": unknown unit \"d\" (use ms, s, m or h): EINVAL");
  load_fails("{\"tmp_size\": 0}", -EINVAL, "key \"tmp_size\": tmp_size 0B: below the minimum of 1MiB: EINVAL");
  load_fails("{\"max_output\": \"0\"}", -EINVAL, "key \"max_output\": max_output 0B: must be positive: EINVAL");
  load_fails("{\"network\": \"host\"}", -EINVAL,
             "key \"network\": network \"host\": unknown mode (none, allowlist, full): EINVAL");
  load_fails("{\"allow\": \"pkg.example\"}", -EINVAL, "key \"allow\": expected an array of strings: EINVAL");
  load_fails("{\"allow\": [\"*.com\"]}", -EINVAL,
             "key \"allow\": --allow \"*.com\": a single-label name (give the full name, e.g. host.example.com): EINVAL");
  load_fails("{\"dns_upstream\": [7]}", -EINVAL, "key \"dns_upstream\": item 0: expected a string: EINVAL");
  load_fails("{\"image\": 3}", -EINVAL, "key \"image\": expected a string: EINVAL");
  load_fails("{\"workdir\": \"/proc/self/fd/3\"}", -EINVAL,
             "key \"workdir\": workdir \"/proc/self/fd/3\": must not be under /proc: EINVAL");
  load_fails("{\"env\": [\"NOEQUALS\"]}", -EINVAL,
             "key \"env\": env \"NOEQUALS\": expected KEY=value: EINVAL");
  load_fails("{\"env\": {\"A\": 1}}", -EINVAL, "key \"env\": \"A\": expected a string value: EINVAL");
  load_fails("{\"env\": \"A=1\"}", -EINVAL,
             "key \"env\": expected an object or an array of \"K=V\": EINVAL");
  load_fails("{\"memory\": \"1g\", \"memory\": \"2g\"}", -EINVAL, "duplicate key \"memory\"");
}

Test(profile, not_json_or_not_object_is_einval_naming_the_file) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  const char *path = write_profile("broken", "{\"image\": ");
  cr_assert_eq(an_sandbox_opts_load_profile(o, path, NULL, &err), -EINVAL);
  cr_assert(strstr(err->msg, "invalid JSON"), "%s", err->msg);
  cr_assert(strstr(err->msg, path), "%s", err->msg);
  an_error_free(&err);
  path = write_profile("array", "[\"image\"]");
  cr_assert_eq(an_sandbox_opts_load_profile(o, path, NULL, &err), -EINVAL);
  cr_assert(strstr(err->msg, "expected a JSON object"), "%s", err->msg);
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(profile, missing_profile_and_bad_names_are_refused) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_load_profile(o, "nosuch", tmpdir, &err), -ENOENT);
  char want[600];
  snprintf(want, sizeof want, "profile \"nosuch\": open %s/nosuch.json: ENOENT", tmpdir);
  cr_assert_str_eq(err->msg, want);
  an_error_free(&err);
  cr_assert_eq(an_sandbox_opts_load_profile(o, "Bad Name", tmpdir, &err), -EINVAL);
  cr_assert_str_eq(err->msg, "profile \"Bad Name\": a name must match [a-z0-9][a-z0-9_-]*: EINVAL");
  an_error_free(&err);
  cr_assert_eq(an_sandbox_opts_load_profile(o, "..", tmpdir, &err), -EINVAL);
  an_error_free(&err);
  cr_assert_eq(an_sandbox_opts_load_profile(o, "", tmpdir, &err), -EINVAL);
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(profile, flags_given_after_the_profile_override_it) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_load_profile(o, "git", profiles_dir, &err), 0);
  cr_assert_eq(an_sandbox_opts_memory(o), 2ull << 30);
  cr_assert_eq(an_sandbox_opts_set_memory(o, 256ull << 20, &err), 0);
  cr_assert_eq(an_sandbox_opts_set_image(o, "busybox", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_env(o, "LANG=C", &err), 0);
  cr_assert_eq(an_sandbox_opts_memory(o), 256ull << 20);
  cr_assert_str_eq(an_sandbox_opts_image(o), "busybox");
  cr_assert_eq(an_sandbox_opts_pids(o), 1024, "untouched profile value lost");
  int lang = 0;
  for (char *const *e = an_sandbox_opts_env(o); *e; e++)
    if (strncmp(*e, "LANG=", 5) == 0) {
      lang++;
      cr_assert_str_eq(*e, "LANG=C");
    }
  cr_assert_eq(lang, 1, "LANG appears %d times", lang);
  an_sandbox_opts_free(o);
}

Test(profile, env_object_and_array_forms) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  const char *p1 = write_profile("e1", "{\"env\": {\"A\": \"1\", \"B\": \"x=y\"}}");
  cr_assert_eq(an_sandbox_opts_load_profile(o, p1, NULL, &err), 0, "%s", err ? err->msg : "");
  const char *p2 = write_profile("e2", "{\"env\": [\"C=3\", \"A=2\"]}");
  cr_assert_eq(an_sandbox_opts_load_profile(o, p2, NULL, &err), 0, "%s", err ? err->msg : "");
  char *const *e = an_sandbox_opts_env(o);
  cr_assert_str_eq(e[0], "A=2");
  cr_assert_str_eq(e[1], "B=x=y");
  cr_assert_str_eq(e[2], "C=3");
  cr_assert_null(e[3]);
  an_sandbox_opts_free(o);
}

Test(profile, sizes_and_durations_accept_strings_and_numbers) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  const char *p = write_profile("n", "{\"memory\": 134217728, \"tmp_size\": \"1.5g\", "
                                "\"timeout\": 90, \"exec_timeout\": \"1.5s\", \"cpus\": \"0.5\", "
                                "\"max_read\": \"10MiB\", \"description\": \"d\"}");
  cr_assert_eq(an_sandbox_opts_load_profile(o, p, NULL, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(an_sandbox_opts_memory(o), 128ull << 20);
  cr_assert_eq(an_sandbox_opts_tmp_size(o), 3ull << 29);
  cr_assert_eq(an_sandbox_opts_lifetime(o), 90000);
  cr_assert_eq(an_sandbox_opts_exec_timeout(o), 1500);
  cr_assert_eq(an_sandbox_opts_cpus(o), 500);
  cr_assert_eq(an_sandbox_opts_max_read(o), 10ull << 20);
  an_sandbox_opts_free(o);
}

Test(profile, relative_seccomp_profile_is_resolved_from_the_profile_directory) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  const char *sc = write_profile("myseccomp", "{\"defaultAction\": \"SCMP_ACT_ERRNO\"}");
  char want[512];
  snprintf(want, sizeof want, "%s", sc);
  const char *p = write_profile("s", "{\"seccomp_profile\": \"myseccomp.json\"}");
  cr_assert_eq(an_sandbox_opts_load_profile(o, p, NULL, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(an_sandbox_opts_seccomp_profile(o), want);
  p = write_profile("s2", "{\"seccomp_profile\": \"missing.json\"}");
  cr_assert_eq(an_sandbox_opts_load_profile(o, p, NULL, &err), -ENOENT);
  snprintf(want, sizeof want, "profile \"%s\": key \"seccomp_profile\": seccomp_profile %s/missing.json: ENOENT",
           p, tmpdir);
  cr_assert_str_eq(err->msg, want);
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

/* The library reads no AGENTNEST_PROFILES: the context's profiles_dir
 * decides, and with no context the built-in default holds whatever the
 * environment says. */
Test(profile, profiles_dir_comes_from_the_context_not_the_environment) {
  setenv("AGENTNEST_PROFILES", "/nonexistent/bogus-profiles", 1);
  cr_assert_str_eq(an_sandbox_profiles_dir(), AN_DATADIR "/profiles");
  struct an_ctx *ctx = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.profiles_dir = tmpdir}, &ctx, &err), 0);
  struct an_sandbox_opts *o = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(ctx, &o, &err), 0);
  char want[512];
  snprintf(want, sizeof want, "%s/seccomp/default.json", tmpdir);
  cr_assert_str_eq(an_sandbox_opts_seccomp_profile(o), want);
  write_profile("mine", "{\"pids\": 77}");
  cr_assert_eq(an_sandbox_opts_load_profile(o, "mine", NULL, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(an_sandbox_opts_pids(o), 77);
  an_sandbox_opts_free(o);
  /* no context: the default, not the environment's directory */
  cr_assert_eq(an_sandbox_opts_new(&o, &err), 0);
  cr_assert_str_eq(an_sandbox_opts_seccomp_profile(o), AN_DATADIR "/profiles/seccomp/default.json");
  an_sandbox_opts_free(o);
  an_ctx_free(ctx);
  unsetenv("AGENTNEST_PROFILES");
}
