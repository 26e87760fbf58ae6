/* util/clock.h — the monotonic clock in milliseconds (internal), for
 * durations and deadlines (exec start, exec results, run_once).  Not wall
 * time: sandbox records use CLOCK_REALTIME (an_sb_now_ms). */
#ifndef AN_UTIL_CLOCK_H
#define AN_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ms (clock_gettime(2)); never fails on Linux. */
static inline uint64_t an_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

#endif
