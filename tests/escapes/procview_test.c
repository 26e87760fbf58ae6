/* tests/escapes/procview_test.c — issue 10 item 3: what a sandbox learns
 * of the host's identity through /proc.  Its uptime starts near 0 (a time
 * namespace with offsets, engine/procview.h), its boot_id is its own and
 * stable, the host kernel's command line is masked; the same for its init
 * and for a process the host execs into it (which joins the time
 * namespace).  Before the fix all three were the host's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "escape_fixture.h"
#include "util.h"

static struct esc_sandbox S;

static void setup(void) { esc_sandbox_init(&S, "busybox"); }
static void teardown(void) { esc_sandbox_fini(&S); }

TestSuite(procview, .init = setup, .fini = teardown, .timeout = 180);

static double host_uptime(void) {
  char buf[128];
  cr_assert(esc_read_file("/proc/uptime", buf, sizeof buf));
  return atof(buf);
}

/* "UPTIME IDLE\nBOOT_ID\nCMDLINE..." as `cat /proc/uptime boot_id cmdline` prints */
static void check_view(const char *who, const char *out, double elapsed, const char *host_boot_id,
                       const char *host_cmdline, char *boot_id, size_t len) {
  cr_log_info("%s sees:\n%s", who, out);
  double up = atof(out);
  const char *nl = strchr(out, '\n');
  cr_assert(nl, "%s: no boot_id line in \"%s\"", who, out);
  snprintf(boot_id, len, "%.36s", nl + 1);
  const char *rest = strchr(nl + 1, '\n');
  rest = rest ? rest + 1 : "";
  /* at most the host time that passed since just before it was made (+1 s
   * for the whole-second offsets); the host's own uptime before the fix */
  cr_assert(up <= elapsed + 1.5, "%s: uptime %.2f s, but only %.2f s passed since the sandbox "
            "was made (host uptime leaks)", who, up, elapsed);
  cr_assert_eq(strlen(boot_id), 36, "%s: boot_id \"%s\" is not a UUID", who, boot_id);
  cr_assert(strcmp(boot_id, host_boot_id), "%s: boot_id is the host's (%s)", who, boot_id);
  cr_assert(!strstr(rest, host_cmdline), "%s: /proc/cmdline is the host's: %s", who, rest);
  cr_assert_eq(rest[0], '\0', "%s: /proc/cmdline not empty: \"%s\"", who, rest);
}

Test(procview, uptime_boot_id_and_cmdline_are_not_the_hosts) {
  char host_boot_id[64], host_cmdline[4096];
  cr_assert(esc_read_file("/proc/sys/kernel/random/boot_id", host_boot_id, sizeof host_boot_id));
  cr_assert(esc_read_file("/proc/cmdline", host_cmdline, sizeof host_cmdline));
  cr_assert(host_cmdline[0], "the host's /proc/cmdline is empty: nothing to compare");
  double before = host_uptime();
  esc_start(&S, "cat /proc/uptime /proc/sys/kernel/random/boot_id /proc/cmdline > /workspace/v1; "
                "mv /workspace/v1 /workspace/view; exec sleep 600", "view");
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/view", S.ws);
  char *init_view = an_test_read_file(path, NULL);
  cr_assert(init_view);
  char init_id[64], exec_id[64], again_id[64];
  check_view("init", init_view, host_uptime() - before, host_boot_id, host_cmdline, init_id,
             sizeof init_id);

  char *argv[] = {"/bin/cat", "/proc/uptime", "/proc/sys/kernel/random/boot_id", "/proc/cmdline", NULL};
  struct esc_result r = {0};
  cr_assert_eq(esc_exec(&S, argv, &r), 0, "exec: %s", r.err);
  check_view("exec'd process", r.out, host_uptime() - before, host_boot_id, host_cmdline, exec_id,
             sizeof exec_id);
  esc_result_free(&r);
  /* one boot_id per sandbox: the same for every process and every read */
  cr_assert_str_eq(exec_id, init_id);
  cr_assert_eq(esc_exec(&S, argv, &r), 0, "exec: %s", r.err);
  check_view("second exec", r.out, host_uptime() - before, host_boot_id, host_cmdline, again_id,
             sizeof again_id);
  esc_result_free(&r);
  cr_assert_str_eq(again_id, init_id);
  free(init_view);

  /* the boot_id file comes from a tmpfs of its own: its mountinfo "root"
   * field is no host path */
  char *mi[] = {"/bin/cat", "/proc/self/mountinfo", NULL};
  cr_assert_eq(esc_exec(&S, mi, &r), 0, "exec: %s", r.err);
  cr_log_info("mountinfo:\n%s", r.out);
  const char *line = strstr(r.out, " /proc/sys/kernel/random/boot_id ");
  cr_assert(line, "boot_id is not a mount point");
  const char *bol = line;
  while (bol > r.out && bol[-1] != '\n') bol--;
  char root[256];
  cr_assert(sscanf(bol, "%*s %*s %*s %255s", root) == 1);
  cr_assert_str_eq(root, "/boot_id");
  esc_result_free(&r);
}

Test(procview, each_sandbox_has_its_own_boot_id) {
  char *argv[] = {"/bin/cat", "/proc/sys/kernel/random/boot_id", NULL};
  struct esc_result a = {0}, b = {0};
  cr_assert_eq(esc_runv(&S, argv, &a), 0);
  cr_assert_eq(esc_runv(&S, argv, &b), 0);
  cr_log_info("boot_ids: %s / %s", a.out, b.out);
  cr_assert_eq(strlen(a.out), 37);
  cr_assert(strcmp(a.out, b.out), "two sandboxes share a boot_id: %s", a.out);
  esc_result_free(&a);
  esc_result_free(&b);
}
