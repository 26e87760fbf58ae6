/* util/lazylib.c — load a shared library on the first call into it.
 *
 * Why: every agentnest command used to map ~40 objects at exec (libarchive
 * with libxml2, icu, zstd...; libmicrohttpd with gnutls, p11-kit...; ldns,
 * libcrypto, libnftables, libnl) and pay ~5.5 ms of dynamic loading and
 * library constructors before main(), although `exec`, `ls` or `--version`
 * use none of them.  Now the build links only libc, libseccomp, libcap and
 * yajl; every function the code imports from the other libraries is listed in
 * src/util/lazylib/<lib>.syms, and scripts/lazylib-gen.sh turns each list into
 * an x86_64 assembly file with, per function, a hidden-visibility stub of the
 * same name doing `jmp *slot(%rip)`.  Each slot starts at a per-symbol entry
 * that saves the argument registers (rdi rsi rdx rcx r8 r9, rax for varargs,
 * r10, xmm0-7), calls an_lazylib_resolve() below, restores them and jumps to
 * the real function, which therefore sees exactly the call its caller made.
 * Later calls cost one indirect jump, like a PLT entry.  The code calling
 * archive_read_new() etc. is unchanged.  The build checks the lists
 * (scripts/lazylib-check.sh): an imported function that is not listed, or an
 * imported data symbol (which a stub cannot stand for), fails the build with
 * a message naming the object and the list.  Other architectures, or
 * `make LAZYLIB=0`, link every library normally and compile none of this in
 * use.  The stubs are hidden, so libagentnest.so exports none of them and
 * cannot interpose on a host program's own libarchive (with which it then
 * shares the one loaded copy: dlopen of a loaded soname returns it).
 *
 * Failure: a library or function present at build time and missing at run
 * time is a broken install.  The stub stands for a function of any signature,
 * so there is no value it could return and no error it could set: it writes
 * "agentnest: cannot load <soname> (for <symbol>): <dlerror>" to stderr and
 * calls abort(3) — it fails closed, before the call is made.  Code about
 * to enforce a control with such a library (the egress policy of a create:
 * sandbox/egress_opts.c) calls an_lazylib_require first, which loads it
 * without aborting, so that a broken install refuses the request with an
 * error before anything is made.
 *
 * Root guard: dlopen resolves the soname through /etc/ld.so.cache and the
 * library directories of the process's current root.  A process that has
 * entered a sandbox (pivot_root, chroot or setns into its mount namespace)
 * would load code from files the sandbox controls, so the resolver records
 * the root directory's device and inode at start (a constructor, one stat)
 * and refuses to load, the same fail-closed way, once "/" is another inode.
 *
 * Thread safety: the HTTP server is threaded.  Each library is loaded and all
 * its slots filled under one process-wide mutex; the library's state flag is
 * set with release ordering after the slots, read with acquire ordering
 * first.  A thread that reads a slot not yet filled takes the slow path and
 * waits on the mutex; slot stores are single aligned 8-byte atomic stores, so
 * a concurrent `jmp *slot` sees either the entry or the real function.
 * The HTTP server forks a worker per call from its threads: it calls
 * an_lazylib_load_all() before it starts any, so that no forked child ever
 * loads a library (each generated file puts its descriptor's address in the
 * an_lazylib section; the linker's __start_/__stop_ symbols bound the list).
 * The mutex and the recorded root are the only mutable globals of the
 * library, as unavoidable as the dynamic loader's own GOT.
 *
 * Known limit: unlike the GOT under full RELRO (-z now), the slots stay
 * writable for the life of the process (they live in .data; making them
 * read-only would need them alone on their own page, which the linker's
 * placement of the stub objects does not guarantee).  An attacker who
 * already has an arbitrary write in an agentnest process gains one more
 * function pointer table to aim at. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "util/lazylib.h"

static pthread_mutex_t lazylib_lock = PTHREAD_MUTEX_INITIALIZER;
static dev_t start_root_dev;
static ino_t start_root_ino;
static int start_root_known;

__attribute__((constructor)) static void lazylib_record_root(void) {
  struct stat st;
  if (stat("/", &st) == 0) {
    start_root_dev = st.st_dev;
    start_root_ino = st.st_ino;
    start_root_known = 1;
  }
}

__attribute__((noreturn)) static void lazylib_fail(const struct an_lazylib *lib,
                                                   const char *sym, const char *why) {
  fprintf(stderr,
          "agentnest: cannot load %s (for %s): %s; the install is broken: this build needs the "
          "library it was linked against\n",
          lib->soname, sym, why ? why : "unknown error");
  fflush(stderr);
  abort();
}

static const char root_refusal[] =
    "refused: the process's root directory is not the one it started with "
    "(inside a sandbox's mount namespace the loader would read the sandbox's files)";

static bool lazylib_root_ok(void) {
  struct stat st;
  return start_root_known && stat("/", &st) == 0 && st.st_dev == start_root_dev && st.st_ino == start_root_ino;
}

/* Load lib and fill its slots; the caller holds lazylib_lock.  NULL when
 * done, else why not (dlerror's text copied into msg, or root_refusal) with
 * *sym the symbol concerned.  A failure leaves the library unloaded (state
 * 0, the handle closed) and its slots untouched: every name is looked up
 * before any slot changes, since the slots hold the resolver entries. */
static const char *lazylib_load_locked(struct an_lazylib *lib, const char **sym, char *msg, size_t msglen) {
  if (__atomic_load_n(&lib->state, __ATOMIC_ACQUIRE)) return NULL;
  if (!lazylib_root_ok()) return root_refusal;
  void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(msg, msglen, "%s", e ? e : "dlopen failed");
    return msg;
  }
  for (int fill = 0; fill < 2; fill++)
    for (unsigned long i = 0; i < lib->n; i++) {
      dlerror();
      void *fn = dlsym(h, lib->names[i]);
      if (!fn) {
        const char *e = dlerror();
        snprintf(msg, msglen, "%s", e ? e : "symbol not found");
        *sym = lib->names[i];
        dlclose(h);
        return msg;
      }
      if (fill) __atomic_store_n(&lib->slots[i], fn, __ATOMIC_RELAXED);
    }
  __atomic_store_n(&lib->state, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* weak: a LAZYLIB=0 build, or a static link that pulled in no stub file,
 * has no an_lazylib section and so no such symbols */
extern struct an_lazylib *const __start_an_lazylib[] __attribute__((weak, visibility("hidden")));
extern struct an_lazylib *const __stop_an_lazylib[] __attribute__((weak, visibility("hidden")));

void an_lazylib_load_all(void) {
  if (!__start_an_lazylib) return;
  for (struct an_lazylib *const *l = __start_an_lazylib; l < __stop_an_lazylib; l++)
    if ((*l)->n) an_lazylib_resolve(*l, 0);
}

void *an_lazylib_resolve(struct an_lazylib *lib, unsigned long idx) {
  if (__atomic_load_n(&lib->state, __ATOMIC_ACQUIRE))
    return __atomic_load_n(&lib->slots[idx], __ATOMIC_RELAXED);
  pthread_mutex_lock(&lazylib_lock);
  const char *sym = lib->names[idx];
  char msg[512];
  const char *why = lazylib_load_locked(lib, &sym, msg, sizeof msg);
  if (why) lazylib_fail(lib, sym, why);
  pthread_mutex_unlock(&lazylib_lock);
  return __atomic_load_n(&lib->slots[idx], __ATOMIC_RELAXED);
}

int an_lazylib_require(const char *soname_prefix, char *why, size_t whylen) {
  if (!__start_an_lazylib) return 0;
  size_t plen = strlen(soname_prefix);
  int r = 0;
  pthread_mutex_lock(&lazylib_lock);
  for (struct an_lazylib *const *l = __start_an_lazylib; l < __stop_an_lazylib && r == 0; l++) {
    if (!(*l)->n || strncmp((*l)->soname, soname_prefix, plen)) continue;
    const char *sym = NULL;
    char msg[512];
    const char *e = lazylib_load_locked(*l, &sym, msg, sizeof msg);
    if (e) {
      snprintf(why, whylen, "cannot load %s%s%s%s: %s", (*l)->soname, sym ? " (for " : "", sym ? sym : "",
               sym ? ")" : "", e);
      r = -1;
    }
  }
  pthread_mutex_unlock(&lazylib_lock);
  return r;
}
