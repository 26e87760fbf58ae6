/* cli/oci/cmd_update.c — `update` (runc's extra command): new resource
 * limits for a container, from runc's flags or, with --resources FILE|-, a
 * LinuxResources JSON document (then the other flags are ignored, as in
 * runc).  The engine writes the cgroup and the stored config
 * (an_container_update). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/container.h"
#include "cli/oci/oci.h"
#include "util/cleanup.h"
#include "util/units.h"

enum {
  OPT_BLKIO_WEIGHT = 256, OPT_CPU_PERIOD, OPT_CPU_QUOTA, OPT_CPU_SHARE, OPT_CPU_RT_PERIOD,
  OPT_CPU_RT_RUNTIME, OPT_CPUSET_CPUS, OPT_CPUSET_MEMS, OPT_MEMORY, OPT_MEMORY_RESERVATION,
  OPT_MEMORY_SWAP, OPT_PIDS_LIMIT, OPT_L3_CACHE, OPT_MEM_BW,
};

static const struct option update_opts[] = {
  {"resources", required_argument, NULL, 'r'},
  {"blkio-weight", required_argument, NULL, OPT_BLKIO_WEIGHT},
  {"cpu-period", required_argument, NULL, OPT_CPU_PERIOD},
  {"cpu-quota", required_argument, NULL, OPT_CPU_QUOTA},
  {"cpu-share", required_argument, NULL, OPT_CPU_SHARE},
  {"cpu-shares", required_argument, NULL, OPT_CPU_SHARE},
  {"cpu-rt-period", required_argument, NULL, OPT_CPU_RT_PERIOD},
  {"cpu-rt-runtime", required_argument, NULL, OPT_CPU_RT_RUNTIME},
  {"cpuset-cpus", required_argument, NULL, OPT_CPUSET_CPUS},
  {"cpuset-mems", required_argument, NULL, OPT_CPUSET_MEMS},
  {"memory", required_argument, NULL, OPT_MEMORY},
  {"memory-reservation", required_argument, NULL, OPT_MEMORY_RESERVATION},
  {"memory-swap", required_argument, NULL, OPT_MEMORY_SWAP},
  {"pids-limit", required_argument, NULL, OPT_PIDS_LIMIT},
  {"l3-cache-schema", required_argument, NULL, OPT_L3_CACHE},
  {"mem-bw-schema", required_argument, NULL, OPT_MEM_BW},
  {"help", no_argument, NULL, 'h'},
  {NULL, 0, NULL, 0},
};

static const char *opt_name(int c) {
  for (const struct option *o = update_opts; o->name; o++)
    if (o->val == c) return o->name;
  return "?";
}

/* A decimal integer in [min, max]. */
static int parse_int(const char *s, int64_t min, int64_t max, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < min || v > max) return -EINVAL;
  *out = v;
  return 0;
}

/* Bytes as runc reads them ("1048576", "512m"), or -1 for unlimited. */
static int parse_bytes(const char *s, int64_t *out, an_error_t *err) {
  if (strcmp(s, "-1") == 0) { *out = -1; return 0; }
  uint64_t b = 0;
  int r = an_parse_size(s, &b, err);
  if (r < 0) return r;
  if (b > INT64_MAX) return an_error_set(err, ERANGE, "\"%s\": too large", s);
  *out = (int64_t) b;
  return 0;
}

static int read_resources(const char *file, struct an_spec_resources **res, an_error_t *err) {
  FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
  if (!f) return an_error_set(err, errno, "open %s", file);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  if (!mem) {
    if (f != stdin) fclose(f);
    return an_error_set(err, ENOMEM, "read %s", file);
  }
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, n, mem);
  bool bad = ferror(f);
  if (f != stdin) fclose(f);
  fclose(mem);
  if (bad) return an_error_set(err, EIO, "read %s", file);
  int r = an_spec_resources_parse(buf, len, res, err);
  return r < 0 ? an_error_prefix(err, "%s", strcmp(file, "-") == 0 ? "stdin" : file) : 0;
}

/* One flag into res.  Errors: -EINVAL a bad value (message names the flag). */
static int apply_flag(int c, const char *v, struct an_spec_resources *res, an_error_t *err) {
  int64_t n = 0;
  int r = 0;
  switch (c) {
  case OPT_BLKIO_WEIGHT:
    if ((r = parse_int(v, 0, 1000, &n)) == 0) { res->has_blkio_weight = true; res->blkio_weight = (uint16_t) n; }
    break;
  case OPT_CPU_PERIOD:
    if ((r = parse_int(v, 0, INT64_MAX, &n)) == 0) { res->has_cpu_period = true; res->cpu_period = (uint64_t) n; }
    break;
  case OPT_CPU_QUOTA:
    if ((r = parse_int(v, -1, INT64_MAX, &n)) == 0) { res->has_cpu_quota = true; res->cpu_quota = n; }
    break;
  case OPT_CPU_SHARE:
    if ((r = parse_int(v, 0, INT64_MAX, &n)) == 0) { res->has_cpu_shares = true; res->cpu_shares = (uint64_t) n; }
    break;
  case OPT_CPU_RT_PERIOD:
    if ((r = parse_int(v, 0, INT64_MAX, &n)) == 0) {
      res->has_cpu_realtime_period = true;
      res->cpu_realtime_period = (uint64_t) n;
    }
    break;
  case OPT_CPU_RT_RUNTIME:
    if ((r = parse_int(v, -1, INT64_MAX, &n)) == 0) {
      res->has_cpu_realtime_runtime = true;
      res->cpu_realtime_runtime = n;
    }
    break;
  case OPT_CPUSET_CPUS:
    free(res->cpu_cpus);
    if (!(res->cpu_cpus = strdup(v))) return an_error_set(err, ENOMEM, "--%s", opt_name(c));
    break;
  case OPT_CPUSET_MEMS:
    free(res->cpu_mems);
    if (!(res->cpu_mems = strdup(v))) return an_error_set(err, ENOMEM, "--%s", opt_name(c));
    break;
  case OPT_MEMORY:
    if ((r = parse_bytes(v, &res->memory_limit, err)) == 0) res->has_memory_limit = true;
    break;
  case OPT_MEMORY_RESERVATION:
    if ((r = parse_bytes(v, &res->memory_reservation, err)) == 0) res->has_memory_reservation = true;
    break;
  case OPT_MEMORY_SWAP:
    if ((r = parse_bytes(v, &res->memory_swap, err)) == 0) res->has_memory_swap = true;
    break;
  case OPT_PIDS_LIMIT:
    if ((r = parse_int(v, -1, INT64_MAX, &n)) == 0) { res->has_pids_limit = true; res->pids_limit = n; }
    break;
  case OPT_L3_CACHE:
  case OPT_MEM_BW:
    return an_error_set(err, EOPNOTSUPP, "--%s: Intel RDT is not supported by " OCI_PROG,
                        opt_name(c));
  }
  if (r < 0) {
    if (err && *err) return an_error_prefix(err, "invalid value for --%s", opt_name(c));
    return an_error_set(err, EINVAL, "invalid value \"%s\" for --%s", v, opt_name(c));
  }
  return 0;
}

int oci_cmd_update(struct oci_ctx *ctx, int argc, char **argv) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  cleanup_error an_error_t err = NULL;
  struct an_spec_resources *res = calloc(1, sizeof *res);
  if (!res) return oci_fail(ctx, "out of memory");
  const char *file = NULL;
  int c, rc = 1;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+r:h", update_opts, NULL)) != -1) {
    if (c == 'h') {
      oci_print_command_help(cmd, stdout);
      rc = 0;
      goto out;
    }
    if (c == '?' || c == ':') {
      rc = oci_usage_error(ctx, cmd, "flag provided but not defined: %s", argv[optind - 1]);
      goto out;
    }
    if (c == 'r') file = optarg;
    else if (apply_flag(c, optarg, res, &err) < 0) {
      rc = oci_fail_error(ctx, &err);
      goto out;
    }
  }
  if (oci_check_args(ctx, cmd, argc - optind, 1, 1)) goto out;
  const char *id = argv[optind];
  if (oci_require_container(ctx, id)) goto out;
  if (file) {
    /* runc: with --resources, the other flags are ignored */
    an_spec_resources_free(res);
    res = NULL;
    if (read_resources(file, &res, &err) < 0) {
      rc = oci_fail_error(ctx, &err);
      goto out;
    }
  }
  if (an_container_update(ctx->root, id, res, &err) < 0) {
    rc = oci_fail_error(ctx, &err);
    goto out;
  }
  rc = 0;
out:
  an_spec_resources_free(res);
  return rc;
}
