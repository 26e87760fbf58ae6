/* util/lazylib.h — the descriptor and resolver behind the lazy-binding
 * stubs that scripts/lazylib-gen.sh generates from the committed lists
 * src/util/lazylib/NAME.syms (internal; see util/lazylib.c for the design,
 * the failure mode and the thread-safety argument).  Nothing in the library calls these directly: the
 * generated assembly does. */
#ifndef AN_UTIL_LAZYLIB_H
#define AN_UTIL_LAZYLIB_H

/* One lazily loaded shared library.  The layout is emitted by
 * scripts/lazylib-gen.sh as raw .quad/.long data: keep both in step. */
struct an_lazylib {
  const char *soname;       /* exact DT_SONAME of the library built against */
  const char *const *names; /* names[n]: the functions imported from it */
  void **slots;             /* slots[n]: each stub jumps through its slot */
  unsigned long n;
  int state;                /* 0 not loaded, 1 every slot resolved (atomic) */
  int pad;
};

/* Loads lib (once per process, whichever thread comes first; the others
 * wait), resolves every one of its names into its slot and returns
 * slots[idx], the address of the real function names[idx].  Never returns on
 * failure: a library or symbol that was there at build time and is missing
 * now is a broken install, reported on stderr naming the library and the
 * symbol, then abort(3) (the stub's caller has no error channel).  Also
 * refuses, the same way, to load anything once the process's root directory
 * is no longer the one it started with (after pivot_root or setns into a
 * sandbox's mount namespace the loader would read the sandbox's files). */
void *an_lazylib_resolve(struct an_lazylib *lib, unsigned long idx)
    __attribute__((visibility("hidden")));

/* Loads every lazily bound library this program contains and resolves all
 * their functions now, failing the way an_lazylib_resolve does.  For a
 * process about to start threads that fork (the HTTP server): afterwards no
 * stub ever takes the loader or the resolver's lock, so a child forked while
 * another thread was inside dlopen cannot deadlock on them.  A no-op when
 * the build links every library normally (LAZYLIB=0).  Thread-safe; may be
 * called any number of times. */
void an_lazylib_load_all(void) __attribute__((visibility("hidden")));

/* Loads now, without aborting, every lazily bound library whose soname
 * starts with soname_prefix (e.g. "libnftables.so"), resolving all its
 * functions as an_lazylib_resolve would.  For a control about to be
 * enforced: a library missing at run time then refuses the request with a
 * clear error (fail closed) before anything is made, instead of aborting the
 * process half-way.  Returns 0 (also when nothing matches, or in a LAZYLIB=0
 * build), or -1 with the reason in why (NUL-terminated, at most whylen
 * bytes: the soname, the symbol if one was missing, dlerror's text, or the
 * refusal after a change of root directory).  Thread-safe. */
int an_lazylib_require(const char *soname_prefix, char *why, size_t whylen)
    __attribute__((visibility("hidden")));

#endif
