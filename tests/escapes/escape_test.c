/* tests/escapes/escape_test.c — the basics of a sandbox seen from inside,
 * with host-side evidence (issue 4 item 8; DESIGN.md "Secure defaults of a
 * sandbox"): identity and its host uid, capabilities, no_new_privs, seccomp,
 * read-only root, exec /tmp but noexec /dev/shm, no network, masked /proc, read-only /sys,
 * minimal /dev, sysctls, hostname, host processes invisible and
 * unsignalable.  Each probe family has a negative control run on the host
 * (as root) so that a broken probe cannot pass silently.
 *
 * The sandbox is the sandbox layer's spec (an_sandbox_build_spec) run by the
 * engine on the busybox image; see tests/lib/escape_fixture.h. */
#include <criterion/criterion.h>
#include <errno.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "escape_fixture.h"

static struct esc_sandbox S, S2;
static struct esc_host_evidence E;

static void setup(void) {
  esc_sandbox_init(&S, "busybox");
  esc_evidence_record(&E);
}
static void teardown(void) {
  esc_sandbox_fini(&S);
  esc_sandbox_fini(&S2);
  esc_evidence_fini(&E);
}

TestSuite(escape, .init = setup, .fini = teardown, .timeout = 120);

/* Host uid of a live process (the real uid field of /proc/PID/status). */
static uid_t host_uid_of(pid_t pid) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  cr_assert(esc_read_file(path, buf, sizeof buf), "read %s", path);
  char *u = strstr(buf, "\nUid:");
  cr_assert(u);
  return (uid_t) strtoul(u + 5, NULL, 10);
}

static bool in_passwd(uid_t uid) {
  FILE *f = fopen("/etc/passwd", "r");
  cr_assert(f);
  char line[1024];
  bool found = false;
  while (fgets(line, sizeof line, f)) {
    char *c = strchr(line, ':');
    if (c) c = strchr(c + 1, ':');
    if (c && (uid_t) strtoul(c + 1, NULL, 10) == uid) found = true;
  }
  fclose(f);
  return found;
}

static void ns_of(pid_t pid, const char *ns, char *buf, size_t len) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/%s", pid, ns);
  ssize_t n = readlink(path, buf, len - 1);
  cr_assert(n > 0, "readlink %s", path);
  buf[n] = '\0';
}

Test(escape, runs_as_uid_65532_mapped_to_a_host_uid_no_one_else_uses) {
  struct esc_result r = {0};
  esc_sh(&S, &r, "id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map");
  char want[256];
  unsigned base = S.ids.host_uid_base;
  snprintf(want, sizeof want, "65532\n65532\n%10u %10u %10u\n%10u %10u %10u\n", 0, base, 65536u, 0,
           base, 65536u);
  cr_assert_str_eq(r.out, want, "identity inside:\n%s", r.out);
  esc_result_free(&r);

  /* From outside: two live sandboxes, each with its own host uid. */
  esc_start(&S, "touch /workspace/ready; exec sleep 120", "ready");
  esc_sandbox_init(&S2, "busybox");
  esc_start(&S2, "touch /workspace/ready; exec sleep 120", "ready");
  uid_t a = host_uid_of(S.init_pid), b = host_uid_of(S2.init_pid);
  cr_assert_eq(a, S.ids.host_uid_base + 65532);
  cr_assert_eq(b, S2.ids.host_uid_base + 65532);
  cr_assert_neq(a, 0);
  cr_assert_neq(a, b, "two live sandboxes share host uid %u", a);
  cr_assert(!in_passwd(a) && !in_passwd(b), "sandbox host uid is a host account");
  cr_assert_null(getpwuid(a));

  /* No other host process runs with that uid. */
  char ns_a[64];
  ns_of(S.init_pid, "pid", ns_a, sizeof ns_a);
  int same_uid = 0;
  DIR *d = opendir("/proc");
  cr_assert(d);
  struct dirent *de;
  while ((de = readdir(d))) {
    pid_t pid = (pid_t) atoi(de->d_name);
    if (pid <= 0) continue;
    char path[64], buf[4096], ns[64];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    if (!esc_read_file(path, buf, sizeof buf)) continue;
    char *u = strstr(buf, "\nUid:");
    if (!u || (uid_t) strtoul(u + 5, NULL, 10) != a) continue;
    same_uid++;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", pid);
    ssize_t n = readlink(path, ns, sizeof ns - 1);
    if (n <= 0) continue; /* exited meanwhile */
    ns[n] = '\0';
    cr_assert_str_eq(ns, ns_a, "host pid %d outside the sandbox runs as its uid %u", pid, a);
  }
  closedir(d);
  cr_assert_geq(same_uid, 1, "the sandbox's init was not found by its uid");
  esc_evidence_assert_unchanged(&E);
}

Test(escape, capabilities_empty_in_all_five_sets_no_new_privs_seccomp_filter) {
  struct esc_result r = {0};
  esc_sh(&S, &r, "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status");
  cr_assert_str_eq(r.out,
                   "CapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n"
                   "CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"
                   "CapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n",
                   "status:\n%s", r.out);
  esc_result_free(&r);
  /* Negative control: the same grep on the host shows a full bounding set. */
  char buf[4096];
  cr_assert(esc_read_file("/proc/self/status", buf, sizeof buf));
  cr_assert_null(strstr(buf, "CapBnd:\t0000000000000000"), "host control: CapBnd empty on host?");
}

Test(escape, root_filesystem_is_read_only) {
  char *out = esc_probe(&S, "create:/x create:/usr/x mkdir:/usr/lib/x create:/etc/passwd "
                            "create:/workspace/ok");
  esc_assert_probe(out, "create", "EROFS"); /* first create: /x */
  cr_assert_eq(esc_count_lines(out, "EROFS"), 4, "writes to the root:\n%s", out);
  cr_assert(strstr(out, "create OK"), "control: the workspace is writable:\n%s", out);
  free(out);
  struct esc_result r = {0};
  esc_sh(&S, &r, "grep -E '^[^ ]+ / ' /proc/mounts");
  cr_assert(strstr(r.out, " ro,") || strstr(r.out, " ro "), "root mount not ro: %s", r.out);
  esc_result_free(&r);
  /* the image on the host is unchanged */
  char p[PATH_MAX + 16];
  struct stat st;
  snprintf(p, sizeof p, "%s/x", S.rootfs);
  cr_assert(lstat(p, &st) < 0 && errno == ENOENT, "%s appeared on the host", p);
}

/* /tmp is exec since issue 10 (item 12; hardening_test.c checks
 * tmp_noexec); /dev/shm stays noexec. */
Test(escape, shm_is_noexec_and_workspace_exec_works) {
  char *out = esc_probe(&S, "exec:/workspace/probes/probe");
  esc_assert_probe(out, "exec", "EXECED"); /* positive control */
  free(out);
  struct esc_result r = {0};
  int st = esc_sh(&S, &r, "cp /workspace/probes/probe /dev/shm/p && chmod 755 /dev/shm/p && "
                          ESC_PROBE " exec:/dev/shm/p; /dev/shm/p; echo rc=$?");
  cr_assert_eq(st, 0);
  esc_assert_probe(r.out, "exec", "EACCES");
  cr_assert(strstr(r.out, "rc=126"), "shell ran /dev/shm/p: %s", r.out);
  esc_result_free(&r);
}

Test(escape, network_is_loopback_only_and_outside_is_unreachable) {
  struct esc_result r = {0};
  esc_sh(&S, &r, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
  cr_assert_str_eq(r.out, "lo\n", "interfaces inside: %s", r.out);
  esc_result_free(&r);
  /* 10.255.255.1: no route in an empty netns, so no packet is ever sent. */
  char *out = esc_probe(&S, "connect:10.255.255.1,80");
  esc_assert_probe(out, "connect", "ENETUNREACH");
  free(out);
  /* negative control on the host: the probe connects over loopback */
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  cr_assert(bind(ls, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(ls, 4) == 0);
  socklen_t sl = sizeof sa;
  cr_assert(getsockname(ls, (struct sockaddr *) &sa, &sl) == 0);
  char act[64];
  snprintf(act, sizeof act, "connect:127.0.0.1,%u", ntohs(sa.sin_port));
  out = esc_host_probe(NULL, act);
  esc_assert_probe(out, "connect", "OK");
  free(out);
  close(ls);
}

/* DESIGN.md: network "none" is an empty netns with loopback only: local
 * servers (test_socket, test_httpservers, a dev server) need `lo` up. */
Test(escape, loopback_is_up_in_the_empty_netns) {
  char *out = esc_probe(&S, "connect:127.0.0.1,9");
  esc_assert_probe(out, "connect", "ECONNREFUSED"); /* nothing listens on port 9 */
  free(out);
}

Test(escape, host_processes_invisible_and_unsignalable) {
  pid_t victim = fork();
  cr_assert(victim >= 0);
  if (victim == 0) {
    for (;;) pause();
  }
  struct esc_result r = {0};
  esc_sh(&S, &r, "ls /proc | grep -E '^[0-9]+$' | sort -n | tr '\\n' ' '; echo; "
                 ESC_PROBE " kill9:%d kill0:%d kill9:1", (int) victim, (int) getpid());
  /* only the sandbox's own few pids */
  for (char *p = r.out; *p && *p != '\n';) {
    long pid = strtol(p, &p, 10);
    cr_assert(pid > 0 && pid < 50, "host-looking pid %ld visible inside: %s", pid, r.out);
    while (*p == ' ') p++;
  }
  char buf[32];
  cr_assert_str_eq(esc_probe_result(r.out, "kill9", buf, sizeof buf), "ESRCH");
  esc_assert_probe(r.out, "kill0", "ESRCH");
  esc_result_free(&r);
  /* the host process is alive */
  cr_assert_eq(kill(victim, 0), 0);
  int st;
  cr_assert_eq(waitpid(victim, &st, WNOHANG), 0, "host process died");
  /* negative control: from the host the same probe reaches it */
  char act[64];
  snprintf(act, sizeof act, "kill0:%d", (int) victim);
  char *out = esc_host_probe(NULL, act);
  esc_assert_probe(out, "kill0", "OK");
  free(out);
  kill(victim, SIGKILL);
  waitpid(victim, &st, 0);
}

Test(escape, proc_masked_paths_unreadable_or_empty) {
  char *out = esc_probe(&S, "read:/proc/kcore read:/proc/keys read:/proc/timer_list "
                            "read:/proc/sched_debug read:/proc/latency_stats read:/proc/timer_stats "
                            "read:/proc/acpi read:/proc/scsi read:/sys/firmware");
  cr_assert_eq(esc_count_lines(out, "read "), 9);
  cr_assert_eq(esc_count_lines(out, "read OK"), 0, "a masked path is readable:\n%s", out);
  free(out);
  struct esc_result r = {0};
  esc_sh(&S, &r, "(ls -A /proc/acpi; ls -A /sys/firmware) 2>/dev/null | wc -l");
  cr_assert_str_eq(r.out, "0\n", "masked directories list entries: %s", r.out);
  esc_result_free(&r);
  /* negative control: the host can read timer_list */
  out = esc_host_probe(NULL, "read:/proc/timer_list");
  esc_assert_probe(out, "read", "OK");
  free(out);
}

Test(escape, sys_read_only_and_dev_minimal) {
  char *out = esc_probe(&S, "create:/sys/kernel/x write:/sys/kernel/uevent_helper,/x "
                            "open_dev_userfaultfd");
  esc_assert_probe(out, "create", "EROFS EACCES ENOENT");
  esc_assert_probe(out, "write", "EROFS EACCES ENOENT");
  esc_assert_probe(out, "open_dev_userfaultfd", "ENOENT");
  free(out);
  struct esc_result r = {0};
  esc_sh(&S, &r, "ls /dev | tr '\\n' ' '; echo; find /dev -type b | wc -l; "
                 "ls /dev/mem /dev/kmsg /dev/userfaultfd /dev/port /dev/vda /dev/sda 2>&1 | grep -vc 'No such'");
  static const char *allowed[] = {"null", "zero", "full", "random", "urandom", "tty", "ptmx",
                                  "pts", "shm", "mqueue", "fd", "stdin", "stdout", "stderr",
                                  "core", "console", NULL};
  char *line = strdup(r.out), *save = NULL;
  char *first = strtok_r(line, "\n", &save);
  for (char *t = strtok(first, " "); t; t = strtok(NULL, " ")) {
    bool ok = false;
    for (int i = 0; allowed[i]; i++) ok |= strcmp(t, allowed[i]) == 0;
    cr_assert(ok, "unexpected /dev/%s in the sandbox (%s)", t, r.out);
  }
  free(line);
  cr_assert(strstr(r.out, "\n0\n0\n"), "block devices or host devices present:\n%s", r.out);
  esc_result_free(&r);
  /* negative control: the host has /dev/userfaultfd */
  struct stat st;
  if (stat("/dev/userfaultfd", &st) == 0) {
    out = esc_host_probe(NULL, "open_dev_userfaultfd");
    esc_assert_probe(out, "open_dev_userfaultfd", "OK");
    free(out);
  }
}

/* BL-09 (the brief called it bl_10; the case id is BL-09) */
Test(escape, bl_09_proc_sys_and_sysrq_read_only) {
  char *out = esc_probe(&S, "write:/proc/sys/kernel/sysrq,1 \'write:/proc/sys/kernel/core_pattern,|/tmp/x\' "
                            "write:/proc/sys/vm/drop_caches,3 write:/proc/sysrq-trigger,h "
                            "write:/proc/sys/kernel/hostname,pwned");
  cr_assert_eq(esc_count_lines(out, "write "), 5);
  /* kernel.sysrq and sysrq-trigger exist only with CONFIG_MAGIC_SYSRQ */
  struct stat st;
  int absent = (stat("/proc/sys/kernel/sysrq", &st) < 0) + (stat("/proc/sysrq-trigger", &st) < 0);
  cr_assert_eq(esc_count_lines(out, "write EROFS") + esc_count_lines(out, "write EACCES"), 5 - absent,
               "a sysctl write was not refused:\n%s", out);
  cr_assert_eq(esc_count_lines(out, "write ENOENT"), absent, "%s", out);
  free(out);
  /* control: the same write action works on a writable file inside */
  out = esc_probe(&S, "create:/workspace/w write:/workspace/w,x");
  esc_assert_probe(out, "write", "OK");
  free(out);
  struct esc_result r = {0};
  esc_sh(&S, &r, "grep -E ' /proc/(sys|sysrq-trigger|irq|bus|fs) ' /proc/mounts | grep -vc ' ro,'");
  cr_assert_str_eq(r.out, "0\n", "a /proc read-only path is mounted rw");
  esc_result_free(&r);
  esc_evidence_assert_unchanged(&E);
}

Test(escape, hostname_change_inside_does_not_change_the_host) {
  struct esc_result r = {0};
  esc_sh(&S, &r, "hostname; hostname pwned-host; " ESC_PROBE " sethostname:pwned; hostname");
  char want[128];
  snprintf(want, sizeof want, "agentnest-e%d", getpid());
  cr_assert(strncmp(r.out, want, strlen(want)) == 0, "hostname inside: %s", r.out);
  esc_assert_probe(r.out, "sethostname", "EPERM");
  cr_assert_eq(esc_count_lines(r.out, "pwned"), 0, "hostname changed inside: %s", r.out);
  esc_result_free(&r);
  esc_evidence_assert_unchanged(&E);
}
