/* tests/fuzz/seccomp_profile_fuzz.c — libFuzzer harness for
 * an_seccomp_profile_parse (Docker-format seccomp profiles).  Properties:
 * no crash, leak or sanitizer report; failures carry a message; accepted
 * profiles hold only known actions and argument indexes 0..5.  Built and run
 * by tests/fuzz/run-fuzz.sh. */
#include <stdint.h>
#include <stdlib.h>
#include "agentnest/seccomp_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct an_spec_seccomp *s = NULL;
  an_error_t err = NULL;
  int r = an_seccomp_profile_parse((const char *) data, size, &s, &err);
  if (r < 0) {
    if (!err || !err->msg || s) abort();
    an_error_free(&err);
    return 0;
  }
  for (size_t i = 0; i < s->n_syscalls; i++) {
    if (!s->syscalls[i].names || !s->syscalls[i].names[0]) abort();
    for (size_t j = 0; j < s->syscalls[i].n_args; j++)
      if (s->syscalls[i].args[j].index > 5) abort();
  }
  an_spec_seccomp_free(s);
  return 0;
}
