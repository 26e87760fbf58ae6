/* tests/fuzz/spec_fuzz.c — libFuzzer harness for an_spec_parse.
 *
 * Properties checked on every input: parsing never crashes, leaks or
 * trips a sanitizer; a failure always carries an error message; and an
 * accepted config survives parse -> an_spec_to_json -> parse unchanged
 * (the second serialization equals the first).  Built and run by
 * tests/fuzz/run-fuzz.sh (`make fuzz`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  int r = an_spec_parse((const char *) data, size, &spec, &err);
  if (r < 0) {
    if (!err || !err->msg || !*err->msg || spec) abort();
    an_error_free(&err);
    return 0;
  }
  if (err || !spec) abort();
  char *j1 = NULL, *j2 = NULL;
  if (an_spec_to_json(spec, &j1, &err) < 0) abort();
  struct an_spec *again = NULL;
  if (an_spec_parse(j1, strlen(j1), &again, &err) < 0) {
    fprintf(stderr, "re-parse of own output failed: %s\n%s\n", err->msg, j1);
    abort();
  }
  if (an_spec_to_json(again, &j2, &err) < 0) abort();
  if (strcmp(j1, j2) != 0) {
    fprintf(stderr, "round trip changed the config:\n%s\n---\n%s\n", j1, j2);
    abort();
  }
  free(j1);
  free(j2);
  an_spec_free(again);
  an_spec_free(spec);
  return 0;
}
