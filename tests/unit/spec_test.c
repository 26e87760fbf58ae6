/* Unit tests for agentnest/spec.h: parsing runc/crun/rich configs, the
 * round trip through an_spec_to_json, the default config, and one test per
 * class of error with its exact message. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/spec.h"
#include "util/cleanup.h"

static const char *src_dir(void) {
  const char *s = getenv("AN_TEST_SRC");
  return s && *s ? s : ".";
}

static struct an_spec *parse_ok(const char *json) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  int r = an_spec_parse(json, strlen(json), &spec, &err);
  cr_assert_eq(r, 0, "parse failed: %s", err ? err->msg : "(no message)");
  cr_assert_null(err);
  cr_assert_not_null(spec);
  return spec;
}

static struct an_spec *load_ok(const char *path) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  int r = an_spec_load_file(path, &spec, &err);
  cr_assert_eq(r, 0, "load %s failed: %s", path, err ? err->msg : "(no message)");
  return spec;
}

static char *to_json_ok(const struct an_spec *spec) {
  char *json = NULL;
  an_error_t err = NULL;
  int r = an_spec_to_json(spec, &json, &err);
  cr_assert_eq(r, 0, "to_json failed: %s", err ? err->msg : "(no message)");
  return json;
}

/* Parse must fail with -errnum and exactly `msg`. */
static void expect_error_n(const char *json, size_t len, int errnum, const char *msg) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  int r = an_spec_parse(json, len, &spec, &err);
  cr_assert_eq(r, -errnum, "want -%d, got %d for %s", errnum, r, json);
  cr_assert_null(spec);
  cr_assert_not_null(err);
  cr_assert_eq(err->errnum, errnum);
  if (msg) cr_assert_str_eq(err->msg, msg);
  an_error_free(&err);
}
static void expect_error(const char *json, const char *msg) {
  expect_error_n(json, strlen(json), EINVAL, msg);
}

/* A minimal valid document with `extra` members added at the top level. */
#define DOC(extra) "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"}" extra "}"
#define PROC(members) \
  DOC(",\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"" members "}")
#define LINUX(members) DOC(",\"linux\":{" members "}")
#define SECCOMP(members) LINUX("\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\"" members "}")

/* Run `tool spec` (runc or crun) in a fresh directory and load its config. */
static struct an_spec *tool_spec(const char *tool) {
  char dir[] = "/tmp/an-spec-test-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char cmd[PATH_MAX + 64], path[PATH_MAX];
  snprintf(cmd, sizeof cmd, "cd %s && %s spec", dir, tool);
  snprintf(path, sizeof path, "%s/config.json", dir);
  int st = system(cmd);
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  int r = st == 0 ? an_spec_load_file(path, &spec, &err) : -1;
  unlink(path);
  rmdir(dir);
  cr_assert_eq(st, 0, "%s spec failed", tool);
  cr_assert_eq(r, 0, "%s spec output: %s", tool, err ? err->msg : "?");
  return spec;
}

static void check_runc_like(struct an_spec *s, const char *hostname) {
  cr_assert_str_eq(s->root.path, "rootfs");
  cr_assert(s->root.readonly);
  cr_assert_str_eq(s->hostname, hostname);
  cr_assert_not_null(s->process);
  cr_assert(s->process->terminal);
  cr_assert_str_eq(s->process->args[0], "sh");
  cr_assert_null(s->process->args[1]);
  cr_assert_str_eq(s->process->cwd, "/");
  cr_assert_str_eq(s->process->capabilities->bounding[0], "CAP_AUDIT_WRITE");
  cr_assert_eq(s->process->n_rlimits, 1);
  cr_assert_eq(s->process->rlimits[0].type, RLIMIT_NOFILE);
  cr_assert_eq(s->process->rlimits[0].hard, 1024);
  cr_assert(s->process->no_new_privileges);
  cr_assert_eq(s->n_mounts, 7);
  cr_assert_str_eq(s->mounts[2].destination, "/dev/pts");
  cr_assert_str_eq(s->mounts[2].options[5], "gid=5");
  cr_assert_eq(s->linux.n_namespaces, 5);
  cr_assert_eq(s->linux.ns_flags,
               CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS);
  cr_assert_eq(s->linux.resources->n_devices, 1);
  cr_assert_not(s->linux.resources->devices[0].allow);
  cr_assert_eq(s->linux.resources->devices[0].type, 'a');
  cr_assert_eq(s->linux.resources->devices[0].major, -1);
  cr_assert_str_eq(s->linux.resources->devices[0].access, "rwm");
  cr_assert_str_eq(s->linux.masked_paths[0], "/proc/acpi");
  cr_assert_str_eq(s->linux.readonly_paths[4], "/proc/sysrq-trigger");
  cr_assert_null(s->linux.seccomp);
}

Test(spec, parses_runc_spec_output) {
  struct an_spec *s = tool_spec("runc");
  check_runc_like(s, "runc");
  an_spec_free(s);
}

Test(spec, parses_crun_spec_output) {
  struct an_spec *s = tool_spec("crun");
  check_runc_like(s, "crun");
  /* crun writes an empty inheritable set: present, empty */
  cr_assert_not_null(s->process->capabilities->inheritable);
  cr_assert_null(s->process->capabilities->inheritable[0]);
  an_spec_free(s);
}

static char *rich_path(void) {
  char *p = NULL;
  cr_assert_geq(asprintf(&p, "%s/tests/data/spec/rich.json", src_dir()), 0);
  return p;
}

static void check_rich(struct an_spec *s) {
  cr_assert_str_eq(s->oci_version, "1.2.0");
  cr_assert_str_eq(s->root.path, ".");
  cr_assert_str_eq(s->domainname, "example.test");
  /* mounts, idmapped */
  cr_assert_eq(s->n_mounts, 3);
  cr_assert_str_eq(s->mounts[1].source, "/srv/data");
  cr_assert_eq(s->mounts[1].n_uid_mappings, 1);
  cr_assert_eq(s->mounts[1].uid_mappings[0].host_id, 200000);
  cr_assert_eq(s->mounts[1].gid_mappings[0].host_id, 300000);
  cr_assert_null(s->mounts[2].source);
  cr_assert_null(s->mounts[2].options);   /* null is absent */
  /* process */
  struct an_spec_process *p = s->process;
  cr_assert(p->terminal && p->has_console_size);
  cr_assert_eq(p->console_height, 40);
  cr_assert_eq(p->console_width, 120);
  cr_assert_eq(p->user.uid, 1000);
  cr_assert_eq(p->user.gid, 1001);
  cr_assert(p->user.has_umask);
  cr_assert_eq(p->user.umask, 022);
  cr_assert_eq(p->user.n_additional_gids, 2);
  cr_assert_eq(p->user.additional_gids[1], 4294967295u);
  cr_assert_str_eq(p->user.username, "agent");
  cr_assert_str_eq(p->args[2], "print('hi')");
  cr_assert_str_eq(p->env[1], "EMPTY=");
  cr_assert_str_eq(p->cwd, "/workspace");
  cr_assert_str_eq(p->capabilities->effective[0], "CAP_KILL");
  cr_assert_null(p->capabilities->inheritable[0]);
  cr_assert_eq(p->n_rlimits, 3);
  cr_assert_eq(p->rlimits[1].type, RLIMIT_CORE);
  cr_assert_eq(p->rlimits[1].hard, UINT64_MAX);
  cr_assert_eq(p->rlimits[2].type, RLIMIT_NPROC);
  cr_assert(p->no_new_privileges);
  cr_assert(p->has_oom_score_adj);
  cr_assert_eq(p->oom_score_adj, -500);
  cr_assert_str_eq(p->apparmor_profile, "agentnest-default");
  cr_assert_str_eq(p->selinux_label, "system_u:system_r:container_t:s0");
  /* hooks */
  cr_assert_eq(s->hooks.n_prestart, 1);
  cr_assert(s->hooks.prestart[0].has_timeout);
  cr_assert_eq(s->hooks.prestart[0].timeout, 5);
  cr_assert_str_eq(s->hooks.prestart[0].env[0], "A=1");
  cr_assert_eq(s->hooks.n_create_runtime, 1);
  cr_assert_eq(s->hooks.n_create_container, 1);
  cr_assert_eq(s->hooks.n_start_container, 1);
  cr_assert_eq(s->hooks.n_poststart, 2);
  cr_assert_eq(s->hooks.n_poststop, 1);
  cr_assert_eq(s->hooks.poststop[0].timeout, 30);
  cr_assert_eq(s->n_annotations, 2);
  cr_assert_str_eq(s->annotations[0].key, "org.example.key");
  cr_assert_str_eq(s->annotations[1].value, "");
  /* linux */
  struct an_spec_linux *l = &s->linux;
  cr_assert_eq(l->n_namespaces, 8);
  cr_assert_eq(l->namespaces[7].clone_flag, CLONE_NEWTIME);
  cr_assert_str_eq(l->namespaces[1].path, "/var/run/netns/rich");
  cr_assert_eq(l->ns_flags, CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC |
                            CLONE_NEWUTS | CLONE_NEWUSER | CLONE_NEWCGROUP | CLONE_NEWTIME);
  cr_assert_eq(l->n_gid_mappings, 2);
  cr_assert_eq(l->gid_mappings[1].host_id, 4294901760u);
  cr_assert_eq(l->n_sysctl, 2);
  cr_assert_str_eq(l->sysctl[1].key, "kernel.shm_rmid_forced");
  struct an_spec_resources *r = l->resources;
  cr_assert_eq(r->n_devices, 3);
  cr_assert_eq(r->devices[1].type, 'c');
  cr_assert_eq(r->devices[1].minor, 3);
  cr_assert_eq(r->devices[2].minor, -1);
  cr_assert_eq(r->memory_limit, 536870912);
  cr_assert(r->has_memory_kernel);
  cr_assert_eq(r->memory_kernel, -1);
  cr_assert(r->has_memory_swappiness);
  cr_assert_eq(r->memory_swappiness, 0);
  cr_assert(r->has_disable_oom_killer);
  cr_assert_eq(r->cpu_shares, 1024);
  cr_assert_eq(r->cpu_quota, 100000);
  cr_assert_eq(r->cpu_realtime_runtime, 950000);
  cr_assert_str_eq(r->cpu_cpus, "0-1");
  cr_assert(r->has_cpu_idle);
  cr_assert_eq(r->pids_limit, 256);
  cr_assert_eq(r->blkio_weight, 500);
  cr_assert_eq(r->blkio_leaf_weight, 300);
  cr_assert_eq(r->n_blkio_weight_device, 2);
  cr_assert_not(r->blkio_weight_device[1].has_weight);
  cr_assert_eq(r->blkio_throttle_write_iops[0].rate, 500);
  cr_assert_str_eq(r->hugepage_limits[0].page_size, "2MB");
  cr_assert_str_eq(r->unified[1].value, "default 100");
  cr_assert_str_eq(l->cgroups_path, "/agentnest/rich");
  struct an_spec_seccomp *sc = l->seccomp;
  cr_assert_eq(sc->default_action, SCMP_ACT_ERRNO(38));
  cr_assert(sc->has_default_errno_ret);
  cr_assert_eq(sc->n_architectures, 3);
  cr_assert_eq(sc->architectures[0], SCMP_ARCH_X86_64);
  cr_assert_eq(sc->architectures[2], SCMP_ARCH_X32);
  cr_assert_str_eq(sc->flags[1], "SECCOMP_FILTER_FLAG_SPEC_ALLOW");
  cr_assert_str_eq(sc->listener_path, "/run/seccomp-agent.sock");
  cr_assert_str_eq(sc->listener_metadata, "rich");
  cr_assert_eq(sc->n_syscalls, 13);
  cr_assert_eq(sc->syscalls[0].action, SCMP_ACT_ALLOW);
  cr_assert_eq(sc->syscalls[1].args[0].op, SCMP_CMP_MASKED_EQ);
  cr_assert_eq(sc->syscalls[1].args[0].value, 2114060288u);
  cr_assert_eq(sc->syscalls[2].args[0].value, 4294967295u);
  cr_assert_eq(sc->syscalls[3].action, SCMP_ACT_ERRNO(EPERM));   /* errnoRet defaults to EPERM */
  cr_assert_eq(sc->syscalls[4].action, SCMP_ACT_ERRNO(1));
  cr_assert(sc->syscalls[4].has_errno_ret);
  cr_assert_eq(sc->syscalls[5].action, SCMP_ACT_KILL_PROCESS);
  cr_assert_eq(sc->syscalls[6].action, SCMP_ACT_KILL_THREAD);
  cr_assert_eq(sc->syscalls[7].action, SCMP_ACT_KILL);
  cr_assert_eq(sc->syscalls[8].action, SCMP_ACT_TRAP);
  cr_assert_eq(sc->syscalls[9].action, SCMP_ACT_LOG);
  cr_assert_eq(sc->syscalls[10].action, SCMP_ACT_NOTIFY);
  cr_assert_eq(sc->syscalls[11].action, SCMP_ACT_TRACE(7));
  cr_assert_eq(sc->syscalls[12].n_args, 5);
  cr_assert_eq(sc->syscalls[12].args[0].op, SCMP_CMP_NE);
  cr_assert_eq(sc->syscalls[12].args[4].index, 5);
  cr_assert_eq(sc->syscalls[12].args[4].op, SCMP_CMP_GT);
  cr_assert_str_eq(l->masked_paths[1], "/proc/keys");
  cr_assert_str_eq(l->readonly_paths[0], "/proc/sys");
  cr_assert_str_eq(l->rootfs_propagation, "rslave");
  cr_assert_str_eq(l->mount_label, "system_u:object_r:container_file_t:s0");
  cr_assert_eq(l->n_devices, 3);
  cr_assert_eq(l->devices[0].type, 'c');
  cr_assert_eq(l->devices[0].major, 10);
  cr_assert(l->devices[0].has_file_mode);
  cr_assert_eq(l->devices[0].file_mode, 0666);
  cr_assert(l->devices[0].has_uid && l->devices[0].has_gid);
  cr_assert_eq(l->devices[2].type, 'p');
  cr_assert_not(l->devices[1].has_file_mode);
}

Test(spec, parses_every_field_of_a_rich_config) {
  cleanup_free char *path = rich_path();
  struct an_spec *s = load_ok(path);
  check_rich(s);
  an_spec_free(s);
}

Test(spec, round_trip_through_to_json_is_lossless) {
  cleanup_free char *path = rich_path();
  struct an_spec *s1 = load_ok(path);
  char *j1 = to_json_ok(s1);
  struct an_spec *s2 = parse_ok(j1);
  check_rich(s2);
  char *j2 = to_json_ok(s2);
  cr_assert_str_eq(j1, j2);
  free(j1);
  free(j2);
  an_spec_free(s1);
  an_spec_free(s2);
}

Test(spec, round_trip_of_runc_spec_output) {
  struct an_spec *s1 = tool_spec("runc");
  char *j1 = to_json_ok(s1);
  struct an_spec *s2 = parse_ok(j1);
  check_runc_like(s2, "runc");
  char *j2 = to_json_ok(s2);
  cr_assert_str_eq(j1, j2);
  free(j1);
  free(j2);
  an_spec_free(s1);
  an_spec_free(s2);
}

Test(spec, default_config_has_secure_defaults_and_parses_back) {
  struct an_spec *d = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_spec_new_default(&d, &err), 0);
  char *json = to_json_ok(d);
  struct an_spec *s = parse_ok(json);
  char *json2 = to_json_ok(s);
  cr_assert_str_eq(json, json2);
  cr_assert_str_eq(s->root.path, "rootfs");
  cr_assert(s->root.readonly);
  cr_assert_not(s->process->terminal);
  cr_assert_str_eq(s->process->args[0], "sh");
  cr_assert_eq(s->process->user.uid, 0);
  cr_assert(s->process->no_new_privileges);
  char **sets[] = { s->process->capabilities->bounding, s->process->capabilities->effective,
                    s->process->capabilities->inheritable, s->process->capabilities->permitted,
                    s->process->capabilities->ambient };
  for (int i = 0; i < 5; i++) {
    cr_assert_not_null(sets[i], "capability set %d must be present", i);
    cr_assert_null(sets[i][0], "capability set %d must be empty", i);
  }
  cr_assert_eq(s->linux.ns_flags, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                                  CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP);
  cr_assert_eq(s->linux.ns_flags, d->linux.ns_flags);
  cr_assert_eq(s->linux.n_uid_mappings, 1);
  cr_assert_eq(s->linux.uid_mappings[0].container_id, 0);
  cr_assert_eq(s->linux.uid_mappings[0].host_id, 100000);
  cr_assert_eq(s->linux.uid_mappings[0].size, 65536);
  cr_assert_eq(s->linux.gid_mappings[0].host_id, 100000);
  cr_assert_eq(s->linux.resources->memory_limit, 512 << 20);
  cr_assert_eq(s->linux.resources->memory_swap, 512 << 20);
  cr_assert_eq(s->linux.resources->pids_limit, 256);
  bool kcore = false, sysrq = false;
  for (char **m = s->linux.masked_paths; *m; m++) kcore |= strcmp(*m, "/proc/kcore") == 0;
  for (char **m = s->linux.readonly_paths; *m; m++) sysrq |= strcmp(*m, "/proc/sysrq-trigger") == 0;
  cr_assert(kcore && sysrq);
  free(json);
  free(json2);
  an_spec_free(s);
  an_spec_free(d);
}

Test(spec, unknown_keys_and_null_values_are_ignored) {
  struct an_spec *s = parse_ok(DOC(",\"hostname\":null,\"x-vendor\":{\"a\":[1,{}]},"
                                   "\"linux\":{\"personality\":{\"domain\":\"LINUX\"},"
                                   "\"maskedPaths\":null}"));
  cr_assert_null(s->hostname);
  cr_assert_null(s->linux.masked_paths);
  cr_assert_null(s->process);
  an_spec_free(s);
}

/* ---- errors, one class per test ------------------------------------------ */

Test(spec_errors, unknown_rlimit_names_index_and_value) {
  expect_error(PROC(",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1,\"soft\":1},"
                    "{\"type\":\"RLIMIT_CORE\",\"hard\":1,\"soft\":1},"
                    "{\"type\":\"RLIMIT_FOO\",\"hard\":1,\"soft\":1}]"),
               "process.rlimits[2].type: unknown rlimit \"RLIMIT_FOO\"");
}

Test(spec_errors, duplicate_rlimit) {
  expect_error(PROC(",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1,\"soft\":1},"
                    "{\"type\":\"RLIMIT_NOFILE\",\"hard\":2,\"soft\":2}]"),
               "process.rlimits[1].type: duplicate rlimit \"RLIMIT_NOFILE\"");
}

Test(spec_errors, rlimit_soft_above_hard) {
  expect_error(PROC(",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1,\"soft\":2}]"),
               "process.rlimits[0]: soft limit 2 exceeds hard limit 1");
}

Test(spec_errors, unknown_namespace) {
  expect_error(LINUX("\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"foo\"}]"),
               "linux.namespaces[1].type: unknown namespace \"foo\"");
}

Test(spec_errors, duplicate_namespace) {
  expect_error(LINUX("\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"user\"},{\"type\":\"pid\"}]"),
               "linux.namespaces[2].type: duplicate namespace \"pid\"");
}

Test(spec_errors, relative_mount_destination) {
  expect_error(DOC(",\"mounts\":[{\"destination\":\"proc\",\"type\":\"proc\"}]"),
               "mounts[0].destination: must be an absolute path");
}

Test(spec_errors, wrong_json_types_are_named) {
  expect_error(PROC(",\"terminal\":\"yes\""), "process.terminal: must be a boolean");
  expect_error(DOC(",\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":\"sh\",\"cwd\":\"/\"}"),
               "process.args: must be an array");
  expect_error(DOC(",\"hostname\":7"), "hostname: must be a string");
  expect_error("{\"ociVersion\":\"1.0.0\",\"root\":[]}", "root: must be an object");
  expect_error(PROC(",\"env\":[\"A=1\",2]"), "process.env[1]: must be a string");
  expect_error(LINUX("\"resources\":{\"pids\":{\"limit\":\"10\"}}"),
               "linux.resources.pids.limit: must be a number");
  expect_error("[1,2]", "config must be a JSON object");
}

Test(spec_errors, negative_value_where_unsigned_required) {
  expect_error(DOC(",\"process\":{\"user\":{\"uid\":-1,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"/\"}"),
               "process.user.uid: must not be negative (-1)");
  expect_error(LINUX("\"uidMappings\":[{\"containerID\":0,\"hostID\":-5,\"size\":1}]"),
               "linux.uidMappings[0].hostID: must not be negative (-5)");
}

Test(spec_errors, integer_overflow) {
  expect_error(DOC(",\"process\":{\"user\":{\"uid\":4294967296,\"gid\":0},\"args\":[\"sh\"],"
                   "\"cwd\":\"/\"}"),
               "process.user.uid: 4294967296 is out of range (0..4294967295)");
  expect_error(PROC(",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":18446744073709551616,"
                    "\"soft\":1}]"),
               "process.rlimits[0].hard: 18446744073709551616 is out of range "
               "(0..18446744073709551615)");
  expect_error(LINUX("\"resources\":{\"memory\":{\"limit\":9223372036854775808}}"),
               "linux.resources.memory.limit: 9223372036854775808 is out of range "
               "(-1..9223372036854775807)");
  expect_error(LINUX("\"uidMappings\":[{\"containerID\":4294967295,\"hostID\":0,\"size\":2}]"),
               "linux.uidMappings[0]: containerID 4294967295 + size 2 overflows 32 bits");
  expect_error(PROC(",\"oomScoreAdj\":1001"),
               "process.oomScoreAdj: 1001 is out of range (-1000..1000)");
}

Test(spec_errors, fractional_number_where_integer_required) {
  expect_error(DOC(",\"process\":{\"user\":{\"uid\":0,\"gid\":1.5},\"args\":[\"sh\"],\"cwd\":\"/\"}"),
               "process.user.gid: must be an integer, not 1.5");
}

Test(spec_errors, process_needs_args_and_absolute_cwd) {
  expect_error(DOC(",\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[],\"cwd\":\"/\"}"),
               "process.args: must not be empty");
  expect_error(DOC(",\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"cwd\":\"tmp\"}"),
               "process.cwd: must be an absolute path");
  expect_error(DOC(",\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"]}"),
               "process.cwd: is required");
  expect_error(DOC(",\"process\":{\"args\":[\"sh\"],\"cwd\":\"/\"}"), "process.user: is required");
  expect_error(PROC(",\"env\":[\"NOEQUALS\"]"), "process.env[0]: must be KEY=value, not \"NOEQUALS\"");
}

Test(spec_errors, oci_version_present_and_1x) {
  expect_error("{\"root\":{\"path\":\"rootfs\"}}", "ociVersion: is required");
  expect_error("{\"ociVersion\":\"2.0.0\",\"root\":{\"path\":\"rootfs\"}}",
               "ociVersion: unsupported version \"2.0.0\" (want 1.x)");
  expect_error("{\"ociVersion\":\"1.0.0\"}", "root: is required");
}

Test(spec_errors, unknown_capability) {
  expect_error(PROC(",\"capabilities\":{\"bounding\":[\"CAP_KILL\",\"CAP_FOO\"]}"),
               "process.capabilities.bounding[1]: unknown capability \"CAP_FOO\"");
  expect_error(PROC(",\"capabilities\":{\"ambient\":[\"1\"]}"),
               "process.capabilities.ambient[0]: unknown capability \"1\"");
}

Test(spec_errors, hook_timeout_must_be_positive) {
  expect_error(DOC(",\"hooks\":{\"poststop\":[{\"path\":\"/bin/true\",\"timeout\":0}]}"),
               "hooks.poststop[0].timeout: must be greater than zero");
  expect_error(DOC(",\"hooks\":{\"createRuntime\":[{\"path\":\"true\"}]}"),
               "hooks.createRuntime[0].path: must be an absolute path");
}

Test(spec_errors, seccomp_names_are_checked) {
  expect_error(LINUX("\"seccomp\":{\"defaultAction\":\"SCMP_ACT_FOO\"}"),
               "linux.seccomp.defaultAction: unknown action \"SCMP_ACT_FOO\"");
  expect_error(SECCOMP(",\"architectures\":[\"SCMP_ARCH_X86_64\",\"SCMP_ARCH_VAX\"]"),
               "linux.seccomp.architectures[1]: unknown architecture \"SCMP_ARCH_VAX\"");
  expect_error(SECCOMP(",\"flags\":[\"SECCOMP_FILTER_FLAG_NOPE\"]"),
               "linux.seccomp.flags[0]: unknown flag \"SECCOMP_FILTER_FLAG_NOPE\"");
  expect_error(SECCOMP(",\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\","
                       "\"args\":[{\"index\":0,\"value\":1,\"op\":\"SCMP_CMP_ABOUT\"}]}]"),
               "linux.seccomp.syscalls[0].args[0].op: unknown operator \"SCMP_CMP_ABOUT\"");
  expect_error(SECCOMP(",\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ERRNO\","
                       "\"args\":[{\"index\":6,\"value\":1,\"op\":\"SCMP_CMP_EQ\"}]}]"),
               "linux.seccomp.syscalls[0].args[0].index: 6 is out of range (0..5)");
  expect_error(SECCOMP(",\"syscalls\":[{\"names\":[\"read\"],\"action\":\"SCMP_ACT_ALLOW\","
                       "\"errnoRet\":1}]"),
               "linux.seccomp.syscalls[0].errnoRet: only valid with SCMP_ACT_ERRNO or "
               "SCMP_ACT_TRACE, not SCMP_ACT_ALLOW");
  expect_error(SECCOMP(",\"syscalls\":[{\"names\":[],\"action\":\"SCMP_ACT_ERRNO\"}]"),
               "linux.seccomp.syscalls[0].names: must not be empty");
}

Test(spec_errors, id_mapping_and_device_checks) {
  expect_error(LINUX("\"gidMappings\":[{\"containerID\":0,\"hostID\":1,\"size\":0}]"),
               "linux.gidMappings[0].size: must not be 0");
  expect_error(LINUX("\"devices\":[{\"type\":\"x\",\"path\":\"/dev/x\"}]"),
               "linux.devices[0].type: unknown device type \"x\" (want c, b, u or p)");
  expect_error(LINUX("\"devices\":[{\"type\":\"c\",\"path\":\"/dev/x\",\"minor\":1}]"),
               "linux.devices[0].major: is required");
  expect_error(LINUX("\"rootfsPropagation\":\"sideways\""),
               "linux.rootfsPropagation: unknown propagation \"sideways\"");
  expect_error(LINUX("\"resources\":{\"devices\":[{\"allow\":true,\"access\":\"rwx\"}]}"),
               "linux.resources.devices[0].access: \"rwx\" is not a combination of r, w and m");
  expect_error(LINUX("\"maskedPaths\":[\"/proc/kcore\",\"proc/keys\"]"),
               "linux.maskedPaths[1]: must be an absolute path");
}

Test(spec_errors, malformed_json) {
  expect_error_n("{\"ociVersion\": ", 15, EINVAL, NULL);
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_spec_parse("{\"a\" 1}", 7, &spec, &err), -EINVAL);
  cr_assert(strncmp(err->msg, "invalid JSON near byte ", 23) == 0, "got: %s", err->msg);
  an_error_free(&err);
}

Test(spec_errors, duplicate_keys_are_refused) {
  expect_error(DOC(",\"process\":{\"user\":{\"uid\":0,\"gid\":0},\"args\":[\"sh\"],\"args\":[\"id\"],"
                   "\"cwd\":\"/\"}"),
               "process: duplicate key \"args\"");
}

Test(spec_errors, nesting_is_capped) {
  char buf[400];
  memset(buf, '[', 200);
  memset(buf + 200, ']', 200);
  expect_error_n(buf, sizeof buf, EINVAL, "nesting deeper than 64 levels");
}

Test(spec_errors, nul_inside_strings_is_refused) {
  expect_error(DOC(",\"hostname\":\"a\\u0000b\""), "string contains U+0000");
  static const char raw[] = "{\"ociVersion\":\"1.0.0\",\"root\":{\"path\":\"r\0\"}}";
  expect_error_n(raw, sizeof raw - 1, EINVAL, NULL);
}

Test(spec_errors, input_larger_than_16_mib_is_refused) {
  size_t len = (16u << 20) + 1;
  char *big = malloc(len);
  cr_assert_not_null(big);
  memset(big, ' ', len);
  big[0] = '{';
  big[len - 1] = '}';
  expect_error_n(big, len, EFBIG, "document larger than 16 MiB (16777217 bytes)");
  free(big);
}

Test(spec_errors, load_file_names_the_file) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_spec_load_file("/nonexistent/agentnest/config.json", &spec, &err), -ENOENT);
  cr_assert_str_eq(err->msg, "open /nonexistent/agentnest/config.json: ENOENT");
  an_error_free(&err);

  char path[] = "/tmp/an-spec-bad-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  const char bad[] = DOC(",\"mounts\":[{\"destination\":\"x\"}]");
  cr_assert_eq(write(fd, bad, sizeof bad - 1), (ssize_t) sizeof bad - 1);
  close(fd);
  int r = an_spec_load_file(path, &spec, &err);
  unlink(path);
  cr_assert_eq(r, -EINVAL);
  char want[128];
  snprintf(want, sizeof want, "%s: mounts[0].destination: must be an absolute path", path);
  cr_assert_str_eq(err->msg, want);
  an_error_free(&err);
}

Test(spec_errors, required_members_name_their_path) {
  expect_error(PROC(",\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"soft\":1}]"),
               "process.rlimits[0].hard: is required");
  expect_error(PROC(",\"rlimits\":[{\"type\":7,\"hard\":1,\"soft\":1}]"),
               "process.rlimits[0].type: must be a string");
  expect_error(PROC(",\"consoleSize\":{\"height\":1}"), "process.consoleSize.width: is required");
  expect_error(LINUX("\"namespaces\":[{\"path\":\"/x\"}]"), "linux.namespaces[0].type: is required");
  expect_error(LINUX("\"devices\":[{\"type\":\"c\",\"major\":1,\"minor\":3}]"),
               "linux.devices[0].path: is required");
  expect_error(LINUX("\"resources\":{\"hugepageLimits\":[{\"pageSize\":\"2MB\"}]}"),
               "linux.resources.hugepageLimits[0].limit: is required");
  expect_error(LINUX("\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[{\"names\":"
                     "[\"read\"],\"action\":\"SCMP_ACT_ERRNO\",\"args\":[{\"index\":0,\"value\":1}]}]}"),
               "linux.seccomp.syscalls[0].args[0].op: is required");
}
