#include <criterion/criterion.h>
#include <stdio.h>
#include "escape_fixture.h"
static struct esc_sandbox S;
static void setup(void) { esc_sandbox_init(&S, "busybox"); }
static void teardown(void) { esc_sandbox_fini(&S); }
TestSuite(escape, .init = setup, .fini = teardown, .timeout = 60);
Test(escape, smoke) {
  struct esc_result r = {0};
  int st = esc_sh(&S, &r, "id; cat /proc/self/uid_map; grep -E 'Cap|NoNew|Seccomp' /proc/self/status; ls -la /workspace /workspace/probes; " ESC_PROBE " unshare_user clone3 i386_unshare_user x32_unshare_user tiocsti:0");
  printf("status %d\n%s\n--\n%s\n", st, r.out, r.err);
}
