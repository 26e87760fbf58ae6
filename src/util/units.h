/* util/units.h — parsers for the human-written quantities of sandbox options
 * and profiles: sizes ("512m"), durations ("1.5s") and CPU counts ("0.5").
 * Pure functions, no side effects.  Used by the CLI (`--memory 512m`) and by
 * profiles (src/sandbox/profile.c) so that both accept exactly one grammar.
 *
 * Size grammar (case-insensitive suffix, binary multiples as in docker/runc
 * `--memory`, so "k" = 1024):
 *     size   := number [unit]
 *     number := DIGITS [ "." DIGITS ]
 *     unit   := "b" | ("k"|"m"|"g"|"t") [ "b" | "ib" ]
 *   "4096" = "4096b" = 4096 bytes; "64m" = "64M" = "64MB" = "64MiB" = 64 * 2^20;
 *   "1.5g" = 1.5 * 2^30.  A fraction is truncated to whole bytes; a fraction
 *   with no unit (or unit "b") is refused.  No sign, no spaces, no exponent.
 *
 * Duration grammar:
 *     duration := number [ "ms" | "s" | "m" | "h" ]     (no unit = seconds)
 *   "300" = "300s" = 300000 ms; "1.5s" = 1500 ms; "500ms"; "5m" = 300000 ms;
 *   "1h".  A fraction of a millisecond is truncated.
 *
 * CPU grammar: number with at most 3 decimals ("1", "1.0", "0.5", "2.25")
 *   -> millicpus (1000 = one CPU).
 */
#ifndef AN_UTIL_UNITS_H
#define AN_UTIL_UNITS_H

#include <stdint.h>
#include "agentnest/error.h"

/* Parse a size (grammar above) into bytes.  Errors: -EINVAL the text does not
 * match the grammar (message quotes it and says why); -ERANGE the value does
 * not fit in 64 bits.  The message does not name the option: callers prefix
 * it ("memory: ..."). */
int an_parse_size(const char *text, uint64_t *bytes, an_error_t *err);

/* Parse a duration (grammar above) into milliseconds.  Errors as
 * an_parse_size. */
int an_parse_duration_ms(const char *text, uint64_t *ms, an_error_t *err);

/* Parse a CPU count (grammar above) into millicpus.  Errors as an_parse_size
 * (-EINVAL also for more than 3 decimals). */
int an_parse_millicpus(const char *text, uint64_t *millicpus, an_error_t *err);

/* Format a byte count for messages: the largest binary unit that divides it
 * exactly ("512MiB", "1536KiB", "123B").  Writes at most `len` bytes
 * (NUL-terminated) into buf and returns buf. */
char *an_format_size(uint64_t bytes, char *buf, unsigned len);

#endif
