/* tests/escapes/resources_test.c — resource bombs from inside a sandbox are
 * contained (cases BL-34 and BL-35 of ../shared/cases/resources.md, and the
 * /tmp size): a fork bomb stops at the pids limit while the host and another
 * sandbox keep working; a memory bomb is OOM-killed inside its cgroup (the
 * kill is counted there) and the sandbox keeps working; filling /tmp stops
 * at its size with ENOSPC.  Limits are read back from the host side. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "escape_fixture.h"

static struct esc_sandbox S, S2;

static void setup(void) { esc_sandbox_init(&S, "busybox"); }
static void teardown(void) {
  esc_sandbox_fini(&S);
  esc_sandbox_fini(&S2);
}

TestSuite(resources, .init = setup, .fini = teardown, .timeout = 180);

static long result_number(const char *text, const char *prefix) {
  const char *p = strstr(text, prefix);
  cr_assert(p, "no \"%s\" in: %s", prefix, text);
  return strtol(p + strlen(prefix), NULL, 10);
}

Test(resources, bl_34_fork_bomb_stops_at_the_pids_limit) {
  /* The bomb's children stay alive (pause) until the sandbox is destroyed;
   * the ready file is written by a shell builtin (no fork needed). */
  esc_start(&S, ESC_PROBE " forkbomb_hold > /workspace/result; echo > /workspace/ready; exec sleep 120",
            "ready");
  char buf[256], path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/result", S.ws);
  cr_assert(esc_read_file(path, buf, sizeof buf));
  /* forks failed with EAGAIN near the limit of 256 tasks */
  cr_assert(strncmp(buf, "forkbomb_hold EAGAIN:", 21) == 0, "bomb result: %s", buf);
  long forks = result_number(buf, "EAGAIN:");
  cr_assert(forks > 200 && forks < 256, "forks before EAGAIN: %ld", forks);
  char max[32], cur[32];
  cr_assert(esc_cgroup_read(&S, "pids", "pids.max", max, sizeof max), "no pids cgroup for %s", S.id);
  cr_assert_str_eq(max, "256");
  cr_assert(esc_cgroup_read(&S, "pids", "pids.current", cur, sizeof cur));
  cr_assert(atol(cur) > 200 && atol(cur) <= 256, "pids.current %s", cur);

  /* another sandbox and the host are unaffected */
  esc_sandbox_init(&S2, "busybox");
  struct esc_result r = {0};
  cr_assert_eq(esc_sh(&S2, &r, "echo ok; nproc"), 0, "second sandbox: %s", r.err);
  cr_assert(strncmp(r.out, "ok\n", 3) == 0, "second sandbox: %s", r.out);
  /* nproc inside reports the host's CPUs: the limit is a CFS quota (cpus
   * 1.0), not a cpuset (documented discrepancy, BL-34) */
  cr_assert_eq(atol(r.out + 3), sysconf(_SC_NPROCESSORS_ONLN), "nproc inside: %s", r.out + 3);
  esc_result_free(&r);

  /* destroying the sandbox removes every process and its cgroup */
  esc_stop(&S);
  cr_assert(!esc_cgroup_exists(&S, "pids"), "pids cgroup left behind");
}

Test(resources, bl_34_shell_fork_bomb_is_contained) {
  cr_assert(an_sandbox_opts_set_pids(S.opts, 64, NULL) == 0);
  esc_start(&S, "(b() { b | b & }; b) 2>/dev/null; echo > /workspace/ready; exec sleep 120", "ready");
  char cur[32], max[32];
  cr_assert(esc_cgroup_read(&S, "pids", "pids.max", max, sizeof max));
  cr_assert_str_eq(max, "64");
  /* the bomb keeps forking in the background: wait (bounded) until the
   * limit has refused forks */
  char events[128] = "";
  for (int i = 0; i < 1000; i++) {
    cr_assert(esc_cgroup_read(&S, "pids", "pids.events", events, sizeof events));
    if (result_number(events, "max ") > 0) break;
    usleep(10000);
  }
  cr_assert(esc_cgroup_read(&S, "pids", "pids.current", cur, sizeof cur));
  cr_assert(atol(cur) <= 64, "pids.current %s above the limit", cur);
  cr_assert(result_number(events, "max ") > 0, "no fork was refused: %s (pids.current %s)", events, cur);
  esc_sandbox_init(&S2, "busybox");
  struct esc_result r = {0};
  cr_assert_eq(esc_sh(&S2, &r, "echo ok"), 0);
  cr_assert_str_eq(r.out, "ok\n");
  esc_result_free(&r);
  esc_stop(&S);
  cr_assert(!esc_cgroup_exists(&S, "pids"));
}

Test(resources, bl_35_memory_bomb_is_oom_killed_and_counted) {
  cr_assert(an_sandbox_opts_set_memory(S.opts, 64ull << 20, NULL) == 0);
  /* the allocating process is a grandchild of the shell, which stays small */
  esc_start(&S, "sh -c '" ESC_PROBE " alloc:1024' > /workspace/result 2>&1; echo > /workspace/ready; "
                "exec sleep 120", "ready");
  char buf[256], path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/result", S.ws);
  cr_assert(esc_read_file(path, buf, sizeof buf));
  cr_assert_str_eq(buf, "alloc SIGKILL", "memory bomb: %s", buf);
  char oom[512], limit[64];
  if (esc_cgroup_read(&S, "memory", "memory.oom_control", oom, sizeof oom)) {
    cr_assert(result_number(oom, "oom_kill ") >= 1, "oom_kill not counted: %s", oom);
    cr_assert(esc_cgroup_read(&S, "memory", "memory.limit_in_bytes", limit, sizeof limit));
    cr_assert_eq(atoll(limit), 64ll << 20);
  } else {
    char events[512];
    cr_assert(esc_cgroup_read(&S, "unified", "memory.events", events, sizeof events),
              "no memory cgroup for %s", S.id);
    cr_assert(result_number(events, "oom_kill ") >= 1, "oom_kill not counted: %s", events);
  }
  /* the sandbox still runs commands */
  char *argv[] = {"/bin/echo", "alive", NULL};
  struct esc_result r = {0};
  int st = esc_exec(&S, argv, &r);
  cr_assert_eq(st, 0, "exec after OOM: %d %s", st, r.err);
  cr_assert_str_eq(r.out, "alive\n");
  esc_result_free(&r);
}

Test(resources, tmp_and_shm_fills_stop_at_their_size) {
  char *out = esc_probe(&S, "fill:/tmp/fill fill:/dev/shm/fill");
  char buf[64];
  esc_probe_result(out, "fill", buf, sizeof buf);
  cr_assert_eq(esc_count_lines(out, "fill ENOSPC:"), 2, "fills:\n%s", out);
  long mib[2], i = 0;
  for (const char *p = out; (p = strstr(p, "ENOSPC:")) && i < 2; p += 7) mib[i++] = strtol(p + 7, NULL, 10);
  cr_assert(mib[0] >= 60 && mib[0] <= 64, "/tmp took %ld MiB (64 MiB tmpfs)", mib[0]);
  cr_assert(mib[1] >= 60 && mib[1] <= 64, "/dev/shm took %ld MiB (64 MiB)", mib[1]);
  free(out);
  /* the limit is the option: 8 MiB */
  cr_assert(an_sandbox_opts_set_tmp_size(S.opts, 8ull << 20, NULL) == 0);
  out = esc_probe(&S, "fill:/tmp/fill");
  esc_probe_result(out, "fill", buf, sizeof buf);
  cr_assert(strcmp(buf, "ENOSPC:8") == 0 || strcmp(buf, "ENOSPC:7") == 0, "8 MiB /tmp: %s", buf);
  free(out);
}

/* The Python forms of BL-34 and BL-35 on the python image, one-shot. */
Test(resources, bl_34_bl_35_python_fork_storm_and_memory_bomb) {
  esc_sandbox_fini(&S);
  esc_sandbox_init(&S, "python");
  cr_assert(an_sandbox_opts_set_pids(S.opts, 64, NULL) == 0);
  cr_assert(an_sandbox_opts_set_memory(S.opts, 256ull << 20, NULL) == 0);
  struct esc_result r = {0};
  /* every process forks until fork fails (EAGAIN), then dies: the storm ends */
  int st = esc_sh(&S, &r, "python3 -c \"import os; [os.fork() for _ in iter(int, 1)]\" 2>&1 | "
                          "grep -c 'Resource temporarily unavailable'");
  cr_assert(atoi(r.out) > 0, "no fork was refused (status %d): %s %s", st, r.out, r.err);
  esc_result_free(&r);
  st = esc_sh(&S, &r, "python3 -c 'b=bytearray(1<<30); print(len(b))'");
  cr_assert_eq(st, 128 + 9, "the 1 GiB allocation was not OOM-killed: status %d %s", st, r.out);
  cr_assert_str_eq(r.out, "");
  esc_result_free(&r);
  /* the host and a next sandbox are fine */
  cr_assert_eq(esc_sh(&S, &r, "python3 -c 'print(6*7)'"), 0);
  cr_assert_str_eq(r.out, "42\n");
  esc_result_free(&r);
}
