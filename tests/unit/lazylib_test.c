/* tests/unit/lazylib_test.c — the lazy binding of libraries on first call
 * (src/util/lazylib.c, scripts/lazylib-gen.sh, scripts/lazylib-check.sh):
 * the resolver loads by soname and fills every slot, once, from concurrent
 * threads; a missing library or symbol, or a changed root directory, aborts
 * naming the library and the symbol; generated stubs pass integer, floating,
 * stack and variadic arguments unchanged on the first (resolving) call and
 * later ones; the generator refuses a data symbol and the checker an
 * imported function that is not listed.  The script tests need cc, readelf
 * and nm (the build's own tools) and $AN_TEST_SRC (else .). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "util.h"
#include "util/lazylib.h"

static const char *src_dir(void) {
  const char *s = getenv("AN_TEST_SRC");
  return s && *s ? s : ".";
}

/* Runs fn in a child with stderr captured; returns its wait status, and its
 * stderr in *err (heap). */
static int in_child(void (*fn)(void), char **err) {
  char path[] = "/tmp/an-lazylib-err-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(fd, 2);
    fn();
    _exit(0);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  close(fd);
  *err = an_test_read_file(path, NULL);
  unlink(path);
  cr_assert_not_null(*err);
  return st;
}

/* libc's own `name` (not an interceptor of the sanitizers, as
 * dlsym(RTLD_DEFAULT) may give) */
static void *libc_sym(const char *name) {
  void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(h, "%s", dlerror());
  void *fn = dlsym(h, name);
  dlclose(h);
  return fn;
}

/* a descriptor as scripts/lazylib-gen.sh lays it out, for a library of this
 * host's (libc is always there, and dlopen of it returns the loaded one) */
#define DESC(var, so, ...)                                        \
  static const char *const var##_names[] = {__VA_ARGS__};         \
  static void *var##_slots[sizeof var##_names / sizeof(char *)]; \
  static struct an_lazylib var = {so, var##_names, var##_slots, sizeof var##_names / sizeof(char *), 0, 0}

DESC(libc_ok, "libc.so.6", "getpid", "strlen");

Test(lazylib, resolves_every_slot_of_the_library_on_first_call) {
  void *fn = an_lazylib_resolve(&libc_ok, 1);
  cr_assert_eq(fn, libc_sym("strlen"));
  cr_assert_eq(libc_ok.state, 1);
  cr_assert_eq(libc_ok_slots[0], libc_sym("getpid"), "the other slot is filled too");
  cr_assert_eq(an_lazylib_resolve(&libc_ok, 0), libc_ok_slots[0]);
}

DESC(libc_threads, "libc.so.6", "getpid", "strlen", "memcpy");

static void *resolve_thread(void *arg) {
  unsigned long i = (unsigned long) arg % 3;
  return an_lazylib_resolve(&libc_threads, i);
}

Test(lazylib, concurrent_first_calls_resolve_once_and_agree) {
  pthread_t t[16];
  for (unsigned long i = 0; i < 16; i++) cr_assert_eq(pthread_create(&t[i], NULL, resolve_thread, (void *) i), 0);
  const char *want[] = {"getpid", "strlen", "memcpy"};
  for (unsigned long i = 0; i < 16; i++) {
    void *r;
    pthread_join(t[i], &r);
    cr_expect_eq(r, libc_sym(want[i % 3]), "thread %lu got %p", i, r);
  }
}

DESC(missing_lib, "libagentnest-no-such-library.so.7", "an_fn_of_missing_lib");
static void call_missing_lib(void) { an_lazylib_resolve(&missing_lib, 0); }

Test(lazylib, missing_library_aborts_naming_library_and_symbol) {
  char *err;
  int st = in_child(call_missing_lib, &err);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x, stderr: %s", st, err);
  cr_expect(strstr(err, "libagentnest-no-such-library.so.7") && strstr(err, "an_fn_of_missing_lib") &&
                strstr(err, "broken"),
            "%s", err);
  free(err);
}

DESC(missing_sym, "libc.so.6", "getpid", "an_no_such_function_in_libc");
static void call_missing_sym(void) { an_lazylib_resolve(&missing_sym, 0); }

Test(lazylib, missing_symbol_aborts_naming_it) {
  char *err;
  int st = in_child(call_missing_sym, &err);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x, stderr: %s", st, err);
  cr_expect(strstr(err, "libc.so.6") && strstr(err, "an_no_such_function_in_libc"), "%s", err);
  free(err);
}

DESC(after_chroot, "libc.so.6", "getpid");
static char chroot_dir[] = "/tmp/an-lazylib-root-XXXXXX";
static void call_after_chroot(void) {
  if (chroot(chroot_dir) != 0 || chdir("/") != 0) _exit(3);
  an_lazylib_resolve(&after_chroot, 0);
}

Test(lazylib, refuses_to_load_once_the_root_changed) {
  cr_assert_not_null(mkdtemp(chroot_dir));
  char *err;
  int st = in_child(call_after_chroot, &err);
  rmdir(chroot_dir);
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "status %#x, stderr: %s", st, err);
  cr_expect(strstr(err, "refused") && strstr(err, "root directory") && strstr(err, "getpid"), "%s", err);
  free(err);
}

/* --- the generated stubs and the build's checks, on real libraries --- */

static char tmp[] = "/tmp/an-lazylib-gen-XXXXXX";

static void gen_setup(void) { cr_assert_not_null(mkdtemp(tmp)); }
static void gen_teardown(void) { an_test_sh("rm -rf %s", tmp); }

/* The real path of libm (libm.so is a linker script: take the soname's file). */
#define LIBM "\"$(readlink -f \"$(cc -print-file-name=libm.so.6)\")\""

/* A driver whose snprintf, fma and ldexp are generated stubs (libc, libm):
 * 6 integer registers plus one stack argument, two doubles in xmm with %al
 * set for varargs, three doubles, a double and an int; each called twice
 * (resolving call, then the bound slot). */
/* a build with sanitizers: the library's objects need their runtime */
#ifdef __SANITIZE_ADDRESS__
#define DRIVER_SAN "-fsanitize=address,undefined"
#else
#define DRIVER_SAN ""
#endif

static const char driver[] =
    "#include <math.h>\n#include <stdio.h>\n#include <string.h>\n"
    "int main(void) {\n"
    "  for (int k = 0; k < 2; k++) {\n"
    "    char b[128];\n"
    "    int n = snprintf(b, sizeof b, \"%d %d %d %.2f %.3f %s\", 1, 2, 3, 1.5, 2.25, \"stack\");\n"
    "    if (n != (int) strlen(b) || strcmp(b, \"1 2 3 1.50 2.250 stack\")) { printf(\"snprintf: %s\\n\", b); return 1; }\n"
    "    if (fma(1.5, 2.0, 0.25) != 3.25) { printf(\"fma\\n\"); return 2; }\n"
    "    if (ldexp(3.0, 4) != 48.0) { printf(\"ldexp\\n\"); return 3; }\n"
    "  }\n"
    "  printf(\"ok\\n\");\n"
    "  return 0;\n"
    "}\n";

Test(lazylib, stubs_pass_integer_float_stack_and_variadic_arguments, .init = gen_setup, .fini = gen_teardown) {
  char p[512];
  snprintf(p, sizeof p, "%s/d.c", tmp);
  an_test_write_file(p, driver, sizeof driver - 1, 0644);
  snprintf(p, sizeof p, "%s/c.syms", tmp);
  an_test_write_file(p, "# test\nsnprintf\n", 16, 0644);
  snprintf(p, sizeof p, "%s/m.syms", tmp);
  an_test_write_file(p, "fma\nldexp\n", 10, 0644);
  const char *b = getenv("AN_TEST_BUILD");
  cr_assert_eq(an_test_sh("cd %s && sh %s/scripts/lazylib-gen.sh c \"$(readlink -f \"$(cc -print-file-name=libc.so.6)\")\" c.syms > c.S && "
                          "sh %s/scripts/lazylib-gen.sh m " LIBM " m.syms > m.S && "
                          "cc -O1 -fno-builtin " DRIVER_SAN " -o d d.c c.S m.S %s/libagentnest.a > cc.log 2>&1 && "
                          "! nm -D d | grep -w 'fma\\|ldexp' && ./d > out && grep -qx ok out",
                          tmp, src_dir(), src_dir(), b && *b ? b : "build"),
               0, "see %s/cc.log and %s/out", tmp, tmp);
}

Test(lazylib, generator_refuses_a_data_symbol, .init = gen_setup, .fini = gen_teardown) {
  char p[512];
  snprintf(p, sizeof p, "%s/m.syms", tmp);
  an_test_write_file(p, "fma\nsigngam\n", 12, 0644);
  cr_assert_neq(an_test_sh("cd %s && sh %s/scripts/lazylib-gen.sh m " LIBM " m.syms > m.S 2> err", tmp, src_dir()),
                0);
  snprintf(p, sizeof p, "%s/err", tmp);
  char *err = an_test_read_file(p, NULL);
  cr_assert_not_null(err);
  cr_expect(strstr(err, "signgam") && strstr(err, "data symbol"), "%s", err);
  free(err);
}

Test(lazylib, check_refuses_an_unlisted_import, .init = gen_setup, .fini = gen_teardown) {
  char p[512];
  snprintf(p, sizeof p, "%s/u.c", tmp);
  const char c[] = "double fma(double, double, double); double ldexp(double, int);\n"
                   "double f(double x) { return fma(x, x, x) + ldexp(x, 2); }\n";
  an_test_write_file(p, c, sizeof c - 1, 0644);
  snprintf(p, sizeof p, "%s/m.syms", tmp);
  an_test_write_file(p, "fma\n", 4, 0644);
  cr_assert_eq(an_test_sh("cd %s && cc -fno-builtin -c u.c -o u.o", tmp), 0);
  cr_assert_neq(an_test_sh("cd %s && sh %s/scripts/lazylib-check.sh %s m=" LIBM " -- u.o 2> err", tmp, src_dir(),
                           tmp),
                0);
  snprintf(p, sizeof p, "%s/err", tmp);
  char *err = an_test_read_file(p, NULL);
  cr_assert_not_null(err);
  cr_expect(strstr(err, "u.o") && strstr(err, "ldexp") && strstr(err, "m.syms") && !strstr(err, "fma"), "%s", err);
  free(err);
  /* listed: passes */
  an_test_write_file(p, "", 0, 0644);
  snprintf(p, sizeof p, "%s/m.syms", tmp);
  an_test_write_file(p, "fma\nldexp\n", 10, 0644);
  cr_expect_eq(an_test_sh("cd %s && sh %s/scripts/lazylib-check.sh %s m=" LIBM " -- u.o", tmp, src_dir(), tmp), 0);
}
