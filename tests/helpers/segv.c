/* tests/helpers/segv.c — dies of SIGSEGV by reading address 0.  A fault is
 * delivered even to a pid namespace's init (it is forced), so the runtime's
 * "128 + signal" status can be checked for a container's pid 1. */
#include <stdint.h>
int main(int argc, char **argv) {
  (void) argv;
  volatile int *p = (volatile int *) (uintptr_t) (argc - 1);  /* 0 with no arguments */
  return *p;
}
