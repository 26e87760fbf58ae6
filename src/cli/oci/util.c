/* cli/oci/util.c — small helpers shared by the commands: argument count
 * checks with runc's wording, container id checks, signal and number
 * parsing, loading a bundle's config.json. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "cli/oci/oci.h"

/* The engine's id rule (container.h): [A-Za-z0-9][A-Za-z0-9_.+-]{0,127}. */
static bool valid_id(const char *id) {
  size_t n = strlen(id);
  if (n == 0 || n > 128 || !isalnum((unsigned char) id[0])) return false;
  for (const char *p = id; *p; p++)
    if (!isalnum((unsigned char) *p) && !strchr("_.+-", *p)) return false;
  return true;
}

int oci_require_container(struct oci_ctx *ctx, const char *id) {
  if (!valid_id(id)) return oci_fail(ctx, "invalid container id \"%s\"", id);
  char path[PATH_MAX];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", ctx->root, id);
  if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
    return oci_fail(ctx, "container \"%s\" does not exist", id);
  return 0;
}

int oci_check_args(struct oci_ctx *ctx, const struct oci_command *cmd, int nargs, int min, int max) {
  if (min == max && nargs != min)
    return oci_usage_error(ctx, cmd, "\"%s\" requires exactly %d argument(s)",
                           cmd->name, min);
  if (nargs < min)
    return oci_usage_error(ctx, cmd, "\"%s\" requires a minimum of %d argument(s)",
                           cmd->name, min);
  if (max >= 0 && nargs > max)
    return oci_usage_error(ctx, cmd, "\"%s\" requires a maximum of %d argument(s)",
                           cmd->name, max);
  return 0;
}

int oci_parse_uint(const char *s) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end || errno || v < 0 || v > INT_MAX || !isdigit((unsigned char) s[0])) return -1;
  return (int) v;
}

int oci_parse_signal(const char *s) {
  int n = oci_parse_uint(s);
  if (n >= 0) return n > 0 && n < NSIG ? n : -1;
  const char *name = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
  if (!*name) return -1;
  for (int sig = 1; sig < SIGRTMIN; sig++) {
    const char *abbrev = sigabbrev_np(sig);
    if (abbrev && strcasecmp(abbrev, name) == 0) return sig;
  }
  /* RTMIN, RTMIN+n, RTMAX-n */
  if (strncasecmp(name, "RTMIN", 5) == 0) {
    int off = name[5] == '+' ? oci_parse_uint(name + 6) : name[5] ? -1 : 0;
    if (off >= 0 && SIGRTMIN + off <= SIGRTMAX) return SIGRTMIN + off;
  } else if (strncasecmp(name, "RTMAX", 5) == 0) {
    int off = name[5] == '-' ? oci_parse_uint(name + 6) : name[5] ? -1 : 0;
    if (off >= 0 && SIGRTMAX - off >= SIGRTMIN) return SIGRTMAX - off;
  }
  return -1;
}

int oci_load_bundle_spec(const char *bundle, struct an_spec **spec, an_error_t *err) {
  char path[PATH_MAX];
  if ((size_t) snprintf(path, sizeof path, "%s/config.json", bundle) >= sizeof path)
    return an_error_set(err, ENAMETOOLONG, "bundle path %s", bundle);
  return an_spec_load_file(path, spec, err);
}
