/* Unit tests for an_sandbox_build_spec: the OCI spec of a sandbox carries
 * every secure default of DESIGN.md, and the spec-level half of the cases in
 * ../shared/cases/isolation.md and resources.md (the escape suite checks the
 * same controls from inside a running sandbox). */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/sandbox_opts.h"
#include "agentnest/spec.h"
#include "sandbox/spec_build_internal.h"
#include "ctx_fixture.h"

static char *image_env[] = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "FROM_IMAGE=1", NULL};
static const struct an_sandbox_image image = {"/var/lib/agentnest/images/x/rootfs", image_env, "/"};
static const struct an_sandbox_ids ids = {0x10020000u, 65536};
static char *argv_true[] = {"python3", "-c", "print(1)", NULL};

static struct an_sandbox_opts *new_opts(void) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  return o;
}

static struct an_spec *build(struct an_sandbox_opts *o) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  int r = an_sandbox_build_spec_without_seccomp(o, &image, &ids, "abc123", "/srv/ws/abc123",
                                                argv_true, &spec, &err);
  cr_assert_eq(r, 0, "build: %s", err ? err->msg : "");
  cr_assert_not_null(spec);
  return spec;
}

static struct an_spec *build_default(void) {
  struct an_sandbox_opts *o = new_opts();
  struct an_spec *s = build(o);
  an_sandbox_opts_free(o);
  return s;
}

static const struct an_spec_mount *find_mount(const struct an_spec *s, const char *dest) {
  for (size_t i = 0; i < s->n_mounts; i++)
    if (strcmp(s->mounts[i].destination, dest) == 0) return &s->mounts[i];
  return NULL;
}

static bool strv_has(char **v, const char *item) {
  for (; v && *v; v++)
    if (strcmp(*v, item) == 0) return true;
  return false;
}

static size_t strv_len(char **v) {
  size_t n = 0;
  while (v && v[n]) n++;
  return n;
}

/* The mount at dest exists with this type and exactly these options. */
static void assert_mount(const struct an_spec *s, const char *dest, const char *type,
                         const char *const *options) {
  const struct an_spec_mount *m = find_mount(s, dest);
  cr_assert_not_null(m, "no mount at %s", dest);
  cr_assert_str_eq(m->type, type, "%s type", dest);
  size_t n = 0;
  for (; options[n]; n++)
    cr_assert(strv_has(m->options, options[n]), "%s lacks option %s", dest, options[n]);
  cr_assert_eq(strv_len(m->options), n, "%s has %zu options, want %zu", dest, strv_len(m->options), n);
}

Test(spec_build, namespaces_are_user_mount_pid_net_ipc_uts_cgroup_time) {
  struct an_spec *s = build_default();
  int want = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
             CLONE_NEWUTS | CLONE_NEWCGROUP;
  /* and a time namespace (its own uptime) where the kernel has them */
  if (an_sandbox_has_timens()) want |= 0x80 /* CLONE_NEWTIME */;
  cr_assert_eq(s->linux.n_namespaces, an_sandbox_has_timens() ? 8 : 7);
  int got = 0;
  for (size_t i = 0; i < s->linux.n_namespaces; i++) {
    cr_assert_null(s->linux.namespaces[i].path, "a namespace is joined, not new");
    got |= s->linux.namespaces[i].clone_flag;
  }
  cr_assert_eq(got, want);
  cr_assert_eq(s->linux.ns_flags, want);
  an_spec_free(s);
}

Test(spec_build, id_maps_put_container_ids_on_the_sandbox_host_range) {
  struct an_spec *s = build_default();
  cr_assert_eq(s->linux.n_uid_mappings, 1);
  cr_assert_eq(s->linux.n_gid_mappings, 1);
  struct an_spec_id_mapping *u = &s->linux.uid_mappings[0], *g = &s->linux.gid_mappings[0];
  cr_assert_eq(u->container_id, 0); cr_assert_eq(u->host_id, 0x10020000u); cr_assert_eq(u->size, 65536);
  cr_assert_eq(g->container_id, 0); cr_assert_eq(g->host_id, 0x10020000u); cr_assert_eq(g->size, 65536);
  an_spec_free(s);
}

Test(spec_build, bl_18_process_runs_as_65532_without_supplementary_groups) {
  struct an_spec *s = build_default();
  cr_assert_eq(s->process->user.uid, 65532);
  cr_assert_eq(s->process->user.gid, 65532);
  cr_assert_eq(s->process->user.n_additional_gids, 0);
  cr_assert_null(s->process->user.additional_gids);
  an_spec_free(s);
}

Test(spec_build, bl_04_no_capabilities_in_any_set_and_no_new_privileges) {
  struct an_spec *s = build_default();
  struct an_spec_capabilities *c = s->process->capabilities;
  cr_assert_not_null(c, "capabilities absent: an engine default could fill them in");
  char **sets[] = {c->bounding, c->effective, c->inheritable, c->permitted, c->ambient};
  for (size_t i = 0; i < 5; i++) {
    cr_assert_not_null(sets[i], "capability set %zu absent", i);
    cr_assert_null(sets[i][0], "capability set %zu not empty: %s", i, sets[i][0]);
  }
  cr_assert(s->process->no_new_privileges);
  an_spec_free(s);
}

Test(spec_build, process_args_cwd_terminal_rlimits) {
  struct an_spec *s = build_default();
  cr_assert_eq(strv_len(s->process->args), 3);
  cr_assert_str_eq(s->process->args[0], "python3");
  cr_assert_str_eq(s->process->args[2], "print(1)");
  cr_assert_str_eq(s->process->cwd, "/workspace");
  cr_assert_not(s->process->terminal);
  cr_assert_eq(s->process->n_rlimits, 3);
  bool nofile = false, core = false, sigpending = false;
  for (size_t i = 0; i < s->process->n_rlimits; i++) {
    struct an_spec_rlimit *r = &s->process->rlimits[i];
    if (r->type == RLIMIT_NOFILE) { nofile = true; cr_assert_eq(r->soft, 1024); cr_assert_eq(r->hard, 4096); }
    if (r->type == RLIMIT_CORE) { core = true; cr_assert_eq(r->soft, 0); cr_assert_eq(r->hard, 0); }
    if (r->type == RLIMIT_SIGPENDING) {
      sigpending = true;
      cr_assert_eq(r->soft, 1024);
      cr_assert_eq(r->hard, 1024);
    }
  }
  cr_assert(nofile && core && sigpending);
  an_spec_free(s);
}

/* issue 10 item 5: per-user-namespace limits in the sandbox's userns */
Test(spec_build, user_namespace_limits_are_sysctls_of_the_sandbox) {
  struct an_spec *s = build_default();
  const char *want[][2] = {{"user.max_user_namespaces", "0"}, {"user.max_net_namespaces", "0"},
                           {"user.max_inotify_instances", "128"},
                           {"user.max_inotify_watches", "65536"}};
  for (size_t w = 0; w < sizeof want / sizeof *want; w++) {
    bool found = false;
    for (size_t i = 0; i < s->linux.n_sysctl; i++)
      if (strcmp(s->linux.sysctl[i].key, want[w][0]) == 0) {
        found = true;
        cr_assert_str_eq(s->linux.sysctl[i].value, want[w][1], "%s", want[w][0]);
      }
    cr_assert(found, "no sysctl %s", want[w][0]);
  }
  an_spec_free(s);
}

Test(spec_build, tmp_noexec_and_the_tmp_inode_cap_follow_the_options) {
  struct an_sandbox_opts *o = new_opts();
  cr_assert_eq(an_sandbox_opts_set_tmp_noexec(o, true, NULL), 0);
  cr_assert_eq(an_sandbox_opts_set_tmp_size(o, 512ull << 20, NULL), 0);
  struct an_spec *s = build(o);
  assert_mount(s, "/tmp", "tmpfs",
               (const char *[]){"nosuid", "nodev", "noexec", "mode=1777", "nr_inodes=131072",
                                "size=536870912", NULL});
  an_spec_free(s);
  /* small /tmp: at least 1024 inodes */
  cr_assert_eq(an_sandbox_opts_set_tmp_size(o, 1ull << 20, NULL), 0);
  s = build(o);
  cr_assert(strv_has(find_mount(s, "/tmp")->options, "nr_inodes=1024"));
  an_spec_free(s);
  an_sandbox_opts_free(o);
}

Test(spec_build, env_is_image_then_options_then_secrets_plus_home) {
  struct an_sandbox_opts *o = new_opts();
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_add_env(o, "LANG=C", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_env(o, "TOKEN=visible", &err), 0);
  cr_assert_eq(an_sandbox_opts_add_secret(o, "TOKEN", "s3cret", &err), 0);
  struct an_spec *s = build(o);
  char **env = s->process->env;
  cr_assert(strv_has(env, "PATH=/usr/bin:/bin"), "image PATH replaced");
  cr_assert(strv_has(env, "FROM_IMAGE=1"));
  cr_assert(strv_has(env, "LANG=C"), "option did not override image env");
  cr_assert_not(strv_has(env, "LANG=C.UTF-8"));
  cr_assert(strv_has(env, "TOKEN=s3cret"), "secret did not win over env");
  cr_assert_not(strv_has(env, "TOKEN=visible"));
  cr_assert(strv_has(env, "HOME=/workspace"));
  cr_assert_eq(strv_len(env), 5);
  an_spec_free(s);
  an_sandbox_opts_free(o);
}

Test(spec_build, env_gets_a_default_path_when_the_image_has_none) {
  struct an_sandbox_opts *o = new_opts();
  struct an_spec *s = NULL;
  an_error_t err = NULL;
  const struct an_sandbox_image bare = {"/r", NULL, NULL};
  cr_assert_eq(an_sandbox_build_spec_without_seccomp(o, &bare, &ids, NULL, "/w", argv_true, &s, &err), 0);
  cr_assert(strv_has(s->process->env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
  cr_assert_str_eq(s->hostname, "agentnest");
  an_spec_free(s);
  an_sandbox_opts_free(o);
}

Test(spec_build, root_is_the_image_rootfs_read_only_and_hostname_names_the_sandbox) {
  struct an_spec *s = build_default();
  cr_assert_str_eq(s->root.path, "/var/lib/agentnest/images/x/rootfs");
  cr_assert(s->root.readonly);
  cr_assert_str_eq(s->hostname, "agentnest-abc123");
  cr_assert_str_eq(s->oci_version, "1.2.0");
  an_spec_free(s);
}

Test(spec_build, mounts_have_the_designed_types_and_flags) {
  struct an_spec *s = build_default();
  assert_mount(s, "/proc", "proc", (const char *[]){"nosuid", "noexec", "nodev", NULL});
  assert_mount(s, "/dev", "tmpfs", (const char *[]){"nosuid", "strictatime", "mode=755", "size=64k", NULL});
  assert_mount(s, "/dev/pts", "devpts",
               (const char *[]){"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5",
                                "max=64", NULL});
  assert_mount(s, "/dev/shm", "tmpfs",
               (const char *[]){"nosuid", "noexec", "nodev", "mode=1777", "size=67108864",
                                "nr_inodes=16384", NULL});
  assert_mount(s, "/dev/mqueue", "mqueue", (const char *[]){"nosuid", "noexec", "nodev", NULL});
  assert_mount(s, "/sys", "sysfs", (const char *[]){"nosuid", "noexec", "nodev", "ro", NULL});
  assert_mount(s, "/tmp", "tmpfs",
               (const char *[]){"nosuid", "nodev", "exec", "mode=1777", "nr_inodes=16384",
                                "size=67108864", NULL});
  assert_mount(s, "/run", "tmpfs",
               (const char *[]){"nosuid", "nodev", "mode=755", "size=16777216", "nr_inodes=4096", NULL});
  assert_mount(s, "/workspace", "bind", (const char *[]){"bind", "rw", "nosuid", "nodev", NULL});
  cr_assert_str_eq(find_mount(s, "/workspace")->source, "/srv/ws/abc123");
  cr_assert_eq(s->n_mounts, 9);
  /* parents before children: /dev before /dev/pts, /dev/shm, /dev/mqueue */
  cr_assert_str_eq(s->mounts[1].destination, "/dev");
  an_spec_free(s);
}

/* issue 16: shm_size (the browser profile's 512 MiB) sizes /dev/shm, one inode per 4 KiB. */
Test(spec_build, shm_size_sizes_dev_shm_with_an_inode_per_4k) {
  struct an_sandbox_opts *o = new_opts();
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_option(o, "shm_size", "512m", &err), 0);
  struct an_spec *s = build(o);
  assert_mount(s, "/dev/shm", "tmpfs",
               (const char *[]){"nosuid", "noexec", "nodev", "mode=1777", "size=536870912",
                                "nr_inodes=131072", NULL});
  cr_assert_eq(an_sandbox_opts_set_option(o, "shm_size", "0", &err), -EINVAL);
  cr_assert_str_eq(err->msg, "shm_size 0B: below the minimum of 1MiB: EINVAL");
  an_error_free(&err);
  an_spec_free(s);
  an_sandbox_opts_free(o);
}

Test(spec_build, bl_05_no_cgroupfs_mounted_and_sys_read_only) {
  struct an_spec *s = build_default();
  for (size_t i = 0; i < s->n_mounts; i++) {
    cr_assert_str_neq(s->mounts[i].type, "cgroup");
    cr_assert_str_neq(s->mounts[i].type, "cgroup2");
    cr_assert(strncmp(s->mounts[i].destination, "/sys/", 5) != 0, "mount under /sys: %s",
              s->mounts[i].destination);
  }
  cr_assert(strv_has(find_mount(s, "/sys")->options, "ro"));
  an_spec_free(s);
}

Test(spec_build, tmp_size_follows_the_option) {
  struct an_sandbox_opts *o = new_opts();
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_tmp_size(o, 3ull << 20, &err), 0);
  struct an_spec *s = build(o);
  cr_assert(strv_has(find_mount(s, "/tmp")->options, "size=3145728"));
  an_spec_free(s);
  an_sandbox_opts_free(o);
}

Test(spec_build, bl_07_masked_paths_cover_proc_and_sys_secrets) {
  struct an_spec *s = build_default();
  const char *want[] = {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
                        "/proc/acpi", "/proc/scsi", "/proc/latency_stats", "/proc/interrupts",
                        "/proc/timer_stats", "/proc/asound", "/sys/firmware",
                        "/sys/devices/virtual/powercap", "/proc/cmdline"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_assert(strv_has(s->linux.masked_paths, want[i]), "%s not masked", want[i]);
  an_spec_free(s);
}

static const char *annotation(const struct an_spec *s, const char *key) {
  for (size_t i = 0; i < s->n_annotations; i++)
    if (!strcmp(s->annotations[i].key, key)) return s->annotations[i].value;
  return NULL;
}

/* issue 10 item 3: its own boot_id, and zero time offsets with its time
 * namespace (engine/procview.h) */
Test(spec_build, own_boot_id_and_uptime_are_asked_for) {
  struct an_spec *s = build_default();
  const char *b = annotation(s, "org.agentnest.boot-id");
  cr_assert(b && !strcmp(b, "private"), "boot-id annotation: %s", b ? b : "(none)");
  const char *t = annotation(s, "org.agentnest.timens-offsets");
  if (an_sandbox_has_timens()) cr_assert(t && !strcmp(t, "zero"), "timens-offsets: %s", t ? t : "(none)");
  else cr_assert_null(t);
  an_spec_free(s);
}

Test(spec_build, bl_09_proc_sys_sysrq_trigger_irq_bus_fs_read_only) {
  struct an_spec *s = build_default();
  const char *want[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"};
  for (size_t i = 0; i < 5; i++)
    cr_assert(strv_has(s->linux.readonly_paths, want[i]), "%s not read-only", want[i]);
  an_spec_free(s);
}

Test(spec_build, bl_34_bl_35_resources_memory_without_swap_cpu_quota_pids) {
  struct an_sandbox_opts *o = new_opts();
  struct an_spec *s = build(o);
  struct an_spec_resources *r = s->linux.resources;
  cr_assert_not_null(r);
  cr_assert(r->has_memory_limit); cr_assert_eq(r->memory_limit, 512ll << 20);
  cr_assert(r->has_memory_swap); cr_assert_eq(r->memory_swap, r->memory_limit, "swap allowed");
  cr_assert(r->has_cpu_period); cr_assert_eq(r->cpu_period, 100000);
  cr_assert(r->has_cpu_quota); cr_assert_eq(r->cpu_quota, 100000);
  cr_assert(r->has_pids_limit); cr_assert_eq(r->pids_limit, 256);
  an_spec_free(s);
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_cpus(o, 1500, &err), 0);
  cr_assert_eq(an_sandbox_opts_set_memory(o, 256ull << 20, &err), 0);
  cr_assert_eq(an_sandbox_opts_set_pids(o, 64, &err), 0);
  s = build(o);
  r = s->linux.resources;
  cr_assert_eq(r->cpu_quota, 150000);
  cr_assert_eq(r->memory_limit, 256ll << 20);
  cr_assert_eq(r->memory_swap, 256ll << 20);
  cr_assert_eq(r->pids_limit, 64);
  an_spec_free(s);
  an_sandbox_opts_free(o);
}

Test(spec_build, devices_are_the_minimal_set_and_the_device_cgroup_denies_the_rest) {
  struct an_spec *s = build_default();
  const char *want[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"};
  cr_assert_eq(s->linux.n_devices, 6);
  for (size_t i = 0; i < 6; i++) {
    cr_assert_str_eq(s->linux.devices[i].path, want[i]);
    cr_assert_eq(s->linux.devices[i].type, 'c');
  }
  cr_assert_eq(s->linux.devices[0].major, 1);
  cr_assert_eq(s->linux.devices[0].minor, 3);
  struct an_spec_resources *r = s->linux.resources;
  cr_assert_gt(r->n_devices, 1);
  cr_assert_not(r->devices[0].allow, "first device rule must deny all");
  cr_assert_eq(r->devices[0].type, 'a');
  for (size_t i = 1; i < r->n_devices; i++) {
    cr_assert(r->devices[i].allow);
    cr_assert_eq(r->devices[i].type, 'c');
    cr_assert(r->devices[i].major == 1 || r->devices[i].major == 5 || r->devices[i].major == 136,
              "unexpected device %lld:%lld allowed", (long long) r->devices[i].major,
              (long long) r->devices[i].minor);
  }
  an_spec_free(s);
}

Test(spec_build, workdir_option_sets_cwd) {
  struct an_sandbox_opts *o = new_opts();
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_set_workdir(o, "/workspace/src", &err), 0);
  struct an_spec *s = build(o);
  cr_assert_str_eq(s->process->cwd, "/workspace/src");
  an_spec_free(s);
  an_sandbox_opts_free(o);
}

static void build_fails(const struct an_sandbox_image *img, const struct an_sandbox_ids *id,
                        const char *sid, const char *ws, char **argv, const char *msg) {
  struct an_sandbox_opts *o = new_opts();
  struct an_spec *s = (struct an_spec *) 0x1;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_build_spec_without_seccomp(o, img, id, sid, ws, argv, &s, &err), -EINVAL);
  cr_assert_str_eq(err->msg, msg);
  cr_assert_eq(s, (struct an_spec *) 0x1, "output written on error");
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(spec_build, bad_arguments_are_refused_naming_them) {
  const struct an_sandbox_ids root0 = {0, 65536}, small = {0x10000000u, 1000}, wrap = {0xffff0000u, 65536};
  const struct an_sandbox_image rel = {"rootfs", NULL, NULL};
  char *bad_env[] = {"NOEQUALS", NULL};
  const struct an_sandbox_image badenv = {"/r", bad_env, NULL};
  char *empty_argv[] = {NULL}, *blank_argv[] = {"", NULL};
  build_fails(&image, &root0, NULL, "/w", argv_true,
              "sandbox spec: id range 0+65536: must not include host id 0 or 4294967295: EINVAL");
  build_fails(&image, &wrap, NULL, "/w", argv_true,
              "sandbox spec: id range 4294901760+65536: must not include host id 0 or 4294967295: EINVAL");
  build_fails(&image, &small, NULL, "/w", argv_true,
              "sandbox spec: id range of 1000 ids: need at least 65536: EINVAL");
  build_fails(&rel, &ids, NULL, "/w", argv_true,
              "sandbox spec: image rootfs \"rootfs\": must be an absolute path: EINVAL");
  build_fails(&badenv, &ids, NULL, "/w", argv_true,
              "sandbox spec: image env entry \"NOEQUALS\": expected KEY=value: EINVAL");
  build_fails(&image, &ids, NULL, "ws", argv_true,
              "sandbox spec: workspace \"ws\": must be an absolute host path: EINVAL");
  build_fails(&image, &ids, NULL, "/w", empty_argv, "sandbox spec: empty command: EINVAL");
  build_fails(&image, &ids, NULL, "/w", blank_argv, "sandbox spec: empty command: EINVAL");
  build_fails(&image, &ids, "a/b", "/w", argv_true,
              "sandbox spec: sandbox id \"a/b\": must match [A-Za-z0-9]{1,52}: EINVAL");
}

/* Options whose default seccomp profile is the source tree's
 * profiles/seccomp/default.json. */
static struct an_sandbox_opts *new_opts_with_source_profiles(void) {
  const char *src = getenv("AN_TEST_SRC");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/profiles", src ? src : ".");
  setenv("AGENTNEST_PROFILES", dir, 1);
  struct an_sandbox_opts *o = new_opts();
  unsetenv("AGENTNEST_PROFILES");
  return o;
}

Test(spec_build, build_spec_attaches_the_default_seccomp_profile) {
  struct an_sandbox_opts *o = new_opts_with_source_profiles();
  struct an_spec *s = NULL;
  an_error_t err = NULL;
  int r = an_sandbox_build_spec(o, &image, &ids, "abc", "/w", argv_true, &s, &err);
  cr_assert_eq(r, 0, "%s", err ? err->msg : "");
  cr_assert_not_null(s->linux.seccomp);
  cr_assert_gt(s->linux.seccomp->n_syscalls, 0);
  an_spec_free(s);
  an_sandbox_opts_free(o);
}

Test(spec_build, unreadable_or_bad_seccomp_profile_fails_closed_with_no_spec) {
  char dir[128], path[200];
  snprintf(dir, sizeof dir, "/tmp/an-spec-build-test-%d", (int) getpid());
  cr_assert_eq(mkdir(dir, 0700), 0);
  snprintf(path, sizeof path, "%s/bad.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{\"defaultAction\": \"SCMP_ACT_NOPE\"}", f);
  fclose(f);
  setenv("AGENTNEST_PROFILES", dir, 1);       /* no seccomp/default.json there */
  struct an_sandbox_opts *o = new_opts();
  unsetenv("AGENTNEST_PROFILES");
  struct an_spec *s = NULL;
  an_error_t err = NULL;
  int r1 = an_sandbox_build_spec(o, &image, &ids, "abc", "/w", argv_true, &s, &err);
  char *msg1 = err ? strdup(err->msg) : NULL;
  an_error_free(&err);
  int r2 = an_sandbox_opts_set_seccomp_profile(o, path, &err);
  int r3 = an_sandbox_build_spec(o, &image, &ids, "abc", "/w", argv_true, &s, &err);
  unlink(path);
  rmdir(dir);
  cr_assert_eq(r1, -ENOENT, "missing default profile: %d (%s)", r1, msg1);
  cr_assert(msg1 && strstr(msg1, "seccomp/default.json"), "%s", msg1);
  cr_assert_eq(r2, 0);
  cr_assert_eq(r3, -EINVAL, "bad profile: %d", r3);
  cr_assert(strstr(err->msg, "bad.json"), "%s", err->msg);
  cr_assert_null(s, "a spec came back without its seccomp filter");
  free(msg1);
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(spec_build, built_spec_round_trips_through_json) {
  struct an_sandbox_opts *o = new_opts_with_source_profiles();
  struct an_spec *s = NULL, *back = NULL;
  char *json = NULL, *json2 = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_build_spec(o, &image, &ids, "abc", "/w", argv_true, &s, &err), 0,
               "%s", err ? err->msg : "");
  an_sandbox_opts_free(o);
  cr_assert_eq(an_spec_to_json(s, &json, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(an_spec_parse(json, strlen(json), &back, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(an_spec_to_json(back, &json2, &err), 0);
  cr_assert_str_eq(json, json2);
  cr_assert_eq(back->linux.ns_flags, s->linux.ns_flags);
  cr_assert_eq(back->linux.uid_mappings[0].host_id, 0x10020000u);
  cr_assert_not_null(back->process->capabilities);
  cr_assert_null(back->process->capabilities->bounding[0]);
  cr_assert_not_null(back->linux.seccomp);
  cr_assert_eq(back->linux.seccomp->n_syscalls, s->linux.seccomp->n_syscalls);
  free(json);
  free(json2);
  an_spec_free(s);
  an_spec_free(back);
}
