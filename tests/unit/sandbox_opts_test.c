/* Unit tests for the sandbox options setters: absurd values are refused with
 * a message naming the option and the value, and good ones are stored. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#include "agentnest/sandbox_opts.h"
#include "util.h"
#include "ctx_fixture.h"

static struct an_sandbox_opts *o;

static void setup(void) {
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
}

static void teardown(void) { an_sandbox_opts_free(o); }

TestSuite(opts, .init = setup, .fini = teardown);

#define REFUSED(call, want_ret_, want_msg_)                                   \
  do {                                                                        \
    an_error_t e_ = NULL;                                                     \
    int r_ = (call);                                                          \
    cr_assert_eq(r_, (want_ret_), #call " = %d", r_);                         \
    cr_assert_not_null(e_);                                                   \
    cr_assert_str_eq(e_->msg, (want_msg_));                                   \
    an_error_free(&e_);                                                       \
  } while (0)
#define E (&e_)

Test(opts, memory_below_4mib_or_above_host_ram_is_refused) {
  REFUSED(an_sandbox_opts_set_memory(o, 0, E), -EINVAL, "memory 0B: below the minimum of 4MiB: EINVAL");
  REFUSED(an_sandbox_opts_set_memory(o, (4ull << 20) - 1, E), -EINVAL,
          "memory 4194303B: below the minimum of 4MiB: EINVAL");
  struct sysinfo si;
  cr_assert_eq(sysinfo(&si), 0);
  uint64_t ram = (uint64_t) si.totalram * si.mem_unit;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_memory(o, ram + 1, &err), -EINVAL);
  cr_assert(strstr(err->msg, "more than the host's RAM"), "%s", err->msg);
  an_error_free(&err);
  cr_assert_eq(an_sandbox_opts_memory(o), 512ull << 20, "refused value was stored");
  cr_assert_eq(an_sandbox_opts_set_memory(o, 4ull << 20, &err), 0);
  cr_assert_eq(an_sandbox_opts_memory(o), 4ull << 20);
}

Test(opts, cpus_pids_and_durations_bounds) {
  REFUSED(an_sandbox_opts_set_cpus(o, 0, E), -EINVAL, "cpus 0.000: must be between 0.01 and 1024: EINVAL");
  REFUSED(an_sandbox_opts_set_cpus(o, 9, E), -EINVAL, "cpus 0.009: must be between 0.01 and 1024: EINVAL");
  REFUSED(an_sandbox_opts_set_cpus(o, 1024001, E), -EINVAL,
          "cpus 1024.001: must be between 0.01 and 1024: EINVAL");
  REFUSED(an_sandbox_opts_set_pids(o, 0, E), -EINVAL, "pids 0: must be between 1 and 4194304: EINVAL");
  REFUSED(an_sandbox_opts_set_pids(o, 4194305, E), -EINVAL,
          "pids 4194305: must be between 1 and 4194304: EINVAL");
  REFUSED(an_sandbox_opts_set_lifetime(o, 0, E), -EINVAL, "timeout 0ms: must be positive: EINVAL");
  REFUSED(an_sandbox_opts_set_exec_timeout(o, 0, E), -EINVAL, "exec_timeout 0ms: must be positive: EINVAL");
  REFUSED(an_sandbox_opts_set_lifetime(o, 366ull * 86400000 + 1, E), -EINVAL,
          "timeout 31622400001ms: longer than 366 days: EINVAL");
  REFUSED(an_sandbox_opts_set_tmp_size(o, 0, E), -EINVAL, "tmp_size 0B: below the minimum of 1MiB: EINVAL");
  REFUSED(an_sandbox_opts_set_max_output(o, 0, E), -EINVAL, "max_output 0B: must be positive: EINVAL");
  REFUSED(an_sandbox_opts_set_max_output(o, (1ull << 30) + 1, E), -EINVAL,
          "max_output 1073741825B: more than the maximum of 1GiB: EINVAL");
  REFUSED(an_sandbox_opts_set_max_read(o, 0, E), -EINVAL, "max_read 0B: must be positive: EINVAL");
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_cpus(o, 10, &err), 0);
  /* the top is the host's pid_max (at most 4194304, PID_MAX_LIMIT) */
  char *pm = an_test_read_file("/proc/sys/kernel/pid_max", NULL);
  cr_assert_not_null(pm);
  uint64_t pid_max = strtoull(pm, NULL, 10);
  free(pm);
  cr_assert_eq(an_sandbox_opts_set_pids(o, pid_max, &err), 0);
  cr_assert_eq(an_sandbox_opts_set_lifetime(o, 1, &err), 0);
  cr_assert_eq(an_sandbox_opts_set_exec_timeout(o, 500, &err), 0);
  cr_assert_eq(an_sandbox_opts_cpus(o), 10);
  cr_assert_eq(an_sandbox_opts_pids(o), pid_max);
  cr_assert_eq(an_sandbox_opts_lifetime(o), 1);
  cr_assert_eq(an_sandbox_opts_exec_timeout(o), 500);
}

Test(opts, bl_02_workdir_must_be_absolute_and_never_under_proc_sys_dev) {
  REFUSED(an_sandbox_opts_set_workdir(o, "/proc/self/fd/3", E), -EINVAL,
          "workdir \"/proc/self/fd/3\": must not be under /proc: EINVAL");
  REFUSED(an_sandbox_opts_set_workdir(o, "/proc/1/cwd", E), -EINVAL,
          "workdir \"/proc/1/cwd\": must not be under /proc: EINVAL");
  REFUSED(an_sandbox_opts_set_workdir(o, "//proc/self/cwd", E), -EINVAL,
          "workdir \"//proc/self/cwd\": must not be under /proc: EINVAL");
  REFUSED(an_sandbox_opts_set_workdir(o, "/sys", E), -EINVAL, "workdir \"/sys\": must not be under /sys: EINVAL");
  REFUSED(an_sandbox_opts_set_workdir(o, "/dev/fd", E), -EINVAL,
          "workdir \"/dev/fd\": must not be under /dev: EINVAL");
  REFUSED(an_sandbox_opts_set_workdir(o, "/workspace/../proc/self/fd/3", E), -EINVAL,
          "workdir \"/workspace/../proc/self/fd/3\": \".\" and \"..\" components are refused: EINVAL");
  REFUSED(an_sandbox_opts_set_workdir(o, "workspace", E), -EINVAL,
          "workdir \"workspace\": must be absolute: EINVAL");
  REFUSED(an_sandbox_opts_set_workdir(o, "", E), -EINVAL, "workdir: empty: EINVAL");
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_workdir(o, "/processing", &err), 0, "prefix match too greedy");
  cr_assert_str_eq(an_sandbox_opts_workdir(o), "/processing");
}

Test(opts, env_entries_are_validated_and_later_keys_replace_earlier) {
  REFUSED(an_sandbox_opts_add_env(o, "NOEQ", E), -EINVAL, "env \"NOEQ\": expected KEY=value: EINVAL");
  REFUSED(an_sandbox_opts_add_env(o, "=v", E), -EINVAL,
          "env \"=v\": variable name must match [A-Za-z_][A-Za-z0-9_]*: EINVAL");
  REFUSED(an_sandbox_opts_add_env(o, "1A=v", E), -EINVAL,
          "env \"1A=v\": variable name must match [A-Za-z_][A-Za-z0-9_]*: EINVAL");
  REFUSED(an_sandbox_opts_add_env(o, "A B=v", E), -EINVAL,
          "env \"A B=v\": variable name must match [A-Za-z_][A-Za-z0-9_]*: EINVAL");
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_add_env(o, "A=1", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_env(o, "AB=2", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_env(o, "A=3", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_env(o, "EMPTY=", &err), 0);
  char *const *e = an_sandbox_opts_env(o);
  cr_assert_str_eq(e[0], "A=3");
  cr_assert_str_eq(e[1], "AB=2");
  cr_assert_str_eq(e[2], "EMPTY=");
  cr_assert_null(e[3]);
}

Test(opts, secrets_are_named_without_their_values_and_listed_for_redaction) {
  REFUSED(an_sandbox_opts_add_secret(o, "BAD-NAME", "v", E), -EINVAL,
          "secret \"BAD-NAME\": name must match [A-Za-z_][A-Za-z0-9_]*: EINVAL");
  REFUSED(an_sandbox_opts_add_secret(o, "TOKEN", "", E), -EINVAL, "secret TOKEN: empty value: EINVAL");
  an_error_t err = NULL;
  cr_assert_null(an_sandbox_opts_secret_values(o)[0]);
  cr_assert_eq(an_sandbox_opts_add_secret(o, "TOKEN", "one", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_secret(o, "KEY2", "two", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_secret(o, "TOKEN", "three", &err), 0);
  char *const *v = an_sandbox_opts_secret_values(o);
  cr_assert_str_eq(v[0], "three");
  cr_assert_str_eq(v[1], "two");
  cr_assert_null(v[2]);
  cr_assert_null(an_sandbox_opts_env(o)[0], "secrets leaked into the plain env list");
}

Test(opts, secret_arg_reads_the_environment_or_a_file_never_a_literal) {
  char dir[128], path[200];
  snprintf(dir, sizeof dir, "/tmp/an-opts-test-%d", (int) getpid());
  snprintf(path, sizeof path, "%s/tok", dir);
  cr_assert_eq(mkdir(dir, 0700), 0);
  FILE *f = fopen(path, "w");
  fputs("filevalue\n", f);
  fclose(f);
  setenv("AN_TEST_SECRET_ENV", "envvalue", 1);
  an_error_t err = NULL;
  int r1 = an_sandbox_opts_add_secret_arg(o, "AN_TEST_SECRET_ENV", &err);
  char arg[256];
  snprintf(arg, sizeof arg, "FROMFILE=@%s", path);
  int r2 = an_sandbox_opts_add_secret_arg(o, arg, &err);
  int r3 = an_sandbox_opts_add_secret_arg(o, "LITERAL=hunter2", &err);
  char *msg3 = err ? strdup(err->msg) : NULL;
  an_error_free(&err);
  unsetenv("AN_TEST_SECRET_ENV");
  int r4 = an_sandbox_opts_add_secret_arg(o, "AN_TEST_SECRET_ENV", &err);
  char *msg4 = err ? strdup(err->msg) : NULL;
  an_error_free(&err);
  snprintf(arg, sizeof arg, "MISSING=@%s/nope", dir);
  int r5 = an_sandbox_opts_add_secret_arg(o, arg, &err);
  an_error_free(&err);
  unlink(path);
  rmdir(dir);
  cr_assert_eq(r1, 0);
  cr_assert_eq(r2, 0);
  char *const *v = an_sandbox_opts_secret_values(o);
  cr_assert_str_eq(v[0], "envvalue");
  cr_assert_str_eq(v[1], "filevalue", "trailing newline kept");
  cr_assert_eq(r3, -EINVAL);
  cr_assert_not_null(msg3);
  cr_assert_null(strstr(msg3, "hunter2"), "message leaks the value: %s", msg3);
  cr_assert_eq(r4, -ENOENT);
  cr_assert_str_eq(msg4, "secret AN_TEST_SECRET_ENV: not set in the environment: ENOENT");
  cr_assert_eq(r5, -ENOENT);
  free(msg3);
  free(msg4);
}

Test(opts, network_modes_and_allow_entries_are_validated) {
  REFUSED(an_sandbox_opts_set_network(o, "host", E), -EINVAL,
          "network \"host\": unknown mode (none, allowlist, full): EINVAL");
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_network(o, "allowlist", &err), 0);
  cr_assert_str_eq(an_sandbox_opts_network(o), "allowlist");
  cr_assert_eq(an_sandbox_opts_set_network(o, "full", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_network(o, "none", &err), 0);
  REFUSED(an_sandbox_opts_add_allow(o, "0.0.0.0/0", E), -EINVAL,
          "--allow \"0.0.0.0/0\": /0 is too wide for an allowlist (shortest /8; use --network full "
          "for any public destination): EINVAL");
  REFUSED(an_sandbox_opts_set_option(o, "allow", "pkg.example:99999", E), -EINVAL,
          "--allow \"pkg.example:99999\": port out of range 1-65535: EINVAL");
  REFUSED(an_sandbox_opts_add_dns_upstream(o, "dns.example", E), -EINVAL,
          "--dns-upstream \"dns.example\": \"dns.example\" is not an IPv4 or IPv6 address: EINVAL");
  cr_assert_eq(an_sandbox_opts_set_option(o, "allow", "pkg.example", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_allow(o, "pkg.example", &err), 0);
  cr_assert_str_eq(an_sandbox_opts_allow(o)[0], "pkg.example");
  cr_assert_null(an_sandbox_opts_allow(o)[1], "a duplicate is kept once");
}

/* fork and restore re-read the sandbox's options record: the policy must
 * come back exactly (mode, every entry, upstreams) */
Test(opts, egress_policy_round_trips_through_the_json_record) {
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_network(o, "allowlist", &err), 0);
  static const char *const allow[] = {"pkg.example", "*.cdn.example:443", "198.51.100.0/24:22",
                                      "[2001:db8::5]:8443"};
  for (size_t i = 0; i < 4; i++) cr_assert_eq(an_sandbox_opts_add_allow(o, allow[i], &err), 0);
  cr_assert_eq(an_sandbox_opts_add_dns_upstream(o, "192.0.2.53:5353", &err), 0);
  char seccomp[PATH_MAX];
  snprintf(seccomp, sizeof seccomp, "%s/profiles/seccomp/default.json",
           getenv("AN_TEST_SRC") ? getenv("AN_TEST_SRC") : ".");
  cr_assert_eq(an_sandbox_opts_set_seccomp_profile(o, seccomp, &err), 0, "%s", err ? err->msg : "");
  char *json = NULL;
  cr_assert_eq(an_sandbox_opts_to_json(o, &json, &err), 0);
  char path[128];
  snprintf(path, sizeof path, "/tmp/an-opts-egress-%d.json", (int) getpid());
  FILE *f = fopen(path, "w");
  fputs(json, f);
  fclose(f);
  struct an_sandbox_opts *back = NULL, *copy = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &back, &err), 0);
  int r = an_sandbox_opts_load_profile(back, path, NULL, &err);
  unlink(path);
  cr_assert_eq(r, 0, "%s\n%s", err ? err->msg : "", json);
  cr_assert_eq(an_sandbox_opts_dup(o, &copy, &err), 0);
  const struct an_sandbox_opts *both[] = {back, copy};
  for (int k = 0; k < 2; k++) {
    cr_assert_str_eq(an_sandbox_opts_network(both[k]), "allowlist");
    for (size_t i = 0; i < 4; i++) cr_assert_str_eq(an_sandbox_opts_allow(both[k])[i], allow[i]);
    cr_assert_null(an_sandbox_opts_allow(both[k])[4]);
    cr_assert_str_eq(an_sandbox_opts_dns_upstreams(both[k])[0], "192.0.2.53:5353");
  }
  free(json);
  an_sandbox_opts_free(back);
  an_sandbox_opts_free(copy);
}

Test(opts, image_name_and_seccomp_profile_validation) {
  REFUSED(an_sandbox_opts_set_image(o, "", E), -EINVAL, "image: empty: EINVAL");
  REFUSED(an_sandbox_opts_set_image(o, "py thon", E), -EINVAL,
          "image \"py thon\": contains a space or control character: EINVAL");
  REFUSED(an_sandbox_opts_set_name(o, "-x", E), -EINVAL,
          "name \"-x\": must match [A-Za-z0-9][A-Za-z0-9_.-]{0,62}: EINVAL");
  REFUSED(an_sandbox_opts_set_name(o, "a/b", E), -EINVAL,
          "name \"a/b\": must match [A-Za-z0-9][A-Za-z0-9_.-]{0,62}: EINVAL");
  REFUSED(an_sandbox_opts_set_seccomp_profile(o, "/nonexistent/x.json", E), -ENOENT,
          "seccomp_profile /nonexistent/x.json: ENOENT");
  REFUSED(an_sandbox_opts_set_seccomp_profile(o, "/tmp", E), -EINVAL,
          "seccomp_profile /tmp: not a regular file: EINVAL");
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_image(o, "debian:12", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_name(o, "my-box.1", &err), 0);
  cr_assert_str_eq(an_sandbox_opts_image(o), "debian:12");
  cr_assert_str_eq(an_sandbox_opts_name(o), "my-box.1");
}

Test(opts, set_option_parses_flag_text_with_the_units_grammar) {
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_option(o, "memory", "1.5g", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "cpus", "0.5", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "pids", "100", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "tmp_size", "10MiB", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "timeout", "5m", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "exec_timeout", "500ms", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "max_output", "1m", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "max_read", "2m", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "env", "A=b", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "image", "busybox", &err), 0);
  cr_assert_eq(an_sandbox_opts_memory(o), 3ull << 29);
  cr_assert_eq(an_sandbox_opts_cpus(o), 500);
  cr_assert_eq(an_sandbox_opts_pids(o), 100);
  cr_assert_eq(an_sandbox_opts_tmp_size(o), 10ull << 20);
  cr_assert_eq(an_sandbox_opts_lifetime(o), 300000);
  cr_assert_eq(an_sandbox_opts_exec_timeout(o), 500);
  cr_assert_eq(an_sandbox_opts_max_output(o), 1ull << 20);
  cr_assert_eq(an_sandbox_opts_max_read(o), 2ull << 20);
  cr_assert_str_eq(an_sandbox_opts_env(o)[0], "A=b");
  cr_assert_str_eq(an_sandbox_opts_image(o), "busybox");
  REFUSED(an_sandbox_opts_set_option(o, "memroy", "1g", E), -EINVAL, "unknown option \"memroy\": EINVAL");
  REFUSED(an_sandbox_opts_set_option(o, "memory", "0", E), -EINVAL, "memory 0B: below the minimum of 4MiB: EINVAL");
  REFUSED(an_sandbox_opts_set_option(o, "memory", "12q", E), -EINVAL,
          "size \"12q\": unknown unit \"q\" (use b, k, m, g or t): EINVAL");
  REFUSED(an_sandbox_opts_set_option(o, "timeout", "-5", E), -EINVAL,
          "duration \"-5\": must start with a digit (no sign, no spaces): EINVAL");
  REFUSED(an_sandbox_opts_set_option(o, "pids", "0", E), -EINVAL, "pids 0: must be between 1 and 4194304: EINVAL");
  REFUSED(an_sandbox_opts_set_option(o, "pids", "12k", E), -EINVAL, "pids \"12k\": expected a decimal integer: EINVAL");
  REFUSED(an_sandbox_opts_set_option(o, "pids", "99999999999999999999", E), -ERANGE,
          "pids \"99999999999999999999\": too large: ERANGE");
  cr_assert_eq(an_sandbox_opts_pids(o), 100, "refused value stored");
}

Test(opts, to_json_round_trips_through_load_profile_without_secrets) {
  an_error_t err = NULL;
  char dir[128], path[200];
  snprintf(dir, sizeof dir, "/tmp/an-opts-json-test-%d", (int) getpid());
  cr_assert_eq(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/seccomp.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{}", f);
  fclose(f);
  cr_assert_eq(an_sandbox_opts_set_option(o, "image", "debian", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "memory", "1.5g", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "cpus", "2.25", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "pids", "99", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "timeout", "1.5s", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "exec_timeout", "700ms", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "tmp_size", "3m", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "max_output", "5k", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "max_read", "7k", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "workdir", "/workspace/x", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "seccomp_profile", path, &err), 0);
  cr_assert_eq(an_sandbox_opts_add_env(o, "A=1", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_secret(o, "TOKEN", "do-not-write-me", &err), 0);
  char *json = NULL;
  cr_assert_eq(an_sandbox_opts_to_json(o, &json, &err), 0);
  cr_assert_null(strstr(json, "do-not-write-me"), "secret written: %s", json);
  cr_assert_null(strstr(json, "TOKEN"), "secret name written: %s", json);
  char ppath[200];
  snprintf(ppath, sizeof ppath, "%s/saved.json", dir);
  f = fopen(ppath, "w");
  fputs(json, f);
  fclose(f);
  struct an_sandbox_opts *back = NULL, *copy = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &back, &err), 0);
  int r = an_sandbox_opts_load_profile(back, ppath, NULL, &err);
  cr_assert_eq(an_sandbox_opts_dup(o, &copy, &err), 0);
  unlink(ppath);
  unlink(path);
  rmdir(dir);
  cr_assert_eq(r, 0, "%s\n%s", err ? err->msg : "", json);
  const struct an_sandbox_opts *both[] = {back, copy};
  for (int i = 0; i < 2; i++) {
    const struct an_sandbox_opts *x = both[i];
    cr_assert_str_eq(an_sandbox_opts_image(x), "debian");
    cr_assert_eq(an_sandbox_opts_memory(x), 3ull << 29);
    cr_assert_eq(an_sandbox_opts_cpus(x), 2250);
    cr_assert_eq(an_sandbox_opts_pids(x), 99);
    cr_assert_eq(an_sandbox_opts_lifetime(x), 1500);
    cr_assert_eq(an_sandbox_opts_exec_timeout(x), 700);
    cr_assert_eq(an_sandbox_opts_tmp_size(x), 3ull << 20);
    cr_assert_eq(an_sandbox_opts_max_output(x), 5120);
    cr_assert_eq(an_sandbox_opts_max_read(x), 7168);
    cr_assert_str_eq(an_sandbox_opts_workdir(x), "/workspace/x");
    cr_assert_str_eq(an_sandbox_opts_seccomp_profile(x), path);
    cr_assert_str_eq(an_sandbox_opts_env(x)[0], "A=1");
  }
  cr_assert_null(an_sandbox_opts_secret_values(back)[0]);
  cr_assert_str_eq(an_sandbox_opts_secret_values(copy)[0], "do-not-write-me");
  free(json);
  an_sandbox_opts_free(back);
  an_sandbox_opts_free(copy);
}

Test(opts, seccomp_profile_is_stored_as_an_absolute_path) {
  char dir[128];
  snprintf(dir, sizeof dir, "/tmp/an-opts-rel-test-%d", (int) getpid());
  cr_assert_eq(mkdir(dir, 0700), 0);
  char path[200];
  snprintf(path, sizeof path, "%s/p.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{}", f);
  fclose(f);
  char old[4096];
  cr_assert_not_null(getcwd(old, sizeof old));
  an_error_t err = NULL;
  int r = chdir(dir) == 0 ? an_sandbox_opts_set_seccomp_profile(o, "./p.json", &err) : -1;
  cr_assert_eq(chdir(old), 0);
  unlink(path);
  rmdir(dir);
  cr_assert_eq(r, 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(an_sandbox_opts_seccomp_profile(o), path);
}

/* issue 10 item 12: /tmp is exec unless tmp_noexec (flag text, profile
 * boolean, JSON round trip). */
Test(opts, tmp_noexec_from_text_profile_and_json) {
  an_error_t err = NULL;
  cr_assert_not(an_sandbox_opts_tmp_noexec(o), "default must be exec");
  cr_assert_eq(an_sandbox_opts_set_option(o, "tmp_noexec", "true", &err), 0);
  cr_assert(an_sandbox_opts_tmp_noexec(o));
  REFUSED(an_sandbox_opts_set_option(o, "tmp_noexec", "yes", E), -EINVAL,
          "tmp_noexec \"yes\": expected true or false: EINVAL");
  char *json = NULL;
  cr_assert_eq(an_sandbox_opts_to_json(o, &json, &err), 0);
  cr_assert(strstr(json, "\"tmp_noexec\": true"), "%s", json);
  char path[128];
  snprintf(path, sizeof path, "/tmp/an-opts-noexec-%d.json", (int) getpid());
  FILE *f = fopen(path, "w");
  fputs("{\"tmp_noexec\": true}", f);
  fclose(f);
  struct an_sandbox_opts *back = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &back, &err), 0);
  int r = an_sandbox_opts_load_profile(back, path, NULL, &err);
  cr_assert_eq(r, 0, "%s", err ? err->msg : "");
  cr_assert(an_sandbox_opts_tmp_noexec(back));
  f = fopen(path, "w");
  fputs("{\"tmp_noexec\": \"true\"}", f);
  fclose(f);
  cr_assert_lt(an_sandbox_opts_load_profile(back, path, NULL, &err), 0);
  cr_assert(strstr(err->msg, "key \"tmp_noexec\": expected true or false"), "%s", err->msg);
  an_error_free(&err);
  unlink(path);
  an_sandbox_opts_free(back);
  free(json);
}
