/* cli/agentnest/cmd_profiles.c — `agentnest profiles [--json]`: every
 * profile of the profiles directory with its purpose and key limits. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/sandbox_opts.h"
#include "cli.h"

static const char profiles_usage[] =
    "Usage: agentnest profiles [--json]\n"
    "\n"
    "List every profile of the profiles directory ($AGENTNEST_PROFILES, else the installed\n"
    "profiles/) with its image, memory, CPUs, pids, lifetime, network, CDI devices and\n"
    "the one-line purpose from its \"description\".  A profile that does not load on this\n"
    "build is listed as refused, with the reason (whether one can run on this host, its\n"
    "image imported and its CDI devices present: agentnest policy explain NAME).\n"
    "  --json       the list as JSON ({\"profiles\": [{name, description, runnable, error,\n"
    "               options}]})\n"
    "  -h, --help   this help\n";

static void human_size(uint64_t b, char *buf, size_t len) {
  if (b && b % (1ull << 30) == 0) snprintf(buf, len, "%" PRIu64 "g", b >> 30);
  else if (b && b % (1ull << 20) == 0) snprintf(buf, len, "%" PRIu64 "m", b >> 20);
  else snprintf(buf, len, "%" PRIu64, b);
}

int cmd_profiles(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, CLI_OPT_JSON}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  bool json = g->json;
  int r = cli_parse_opts(cmd, argc, argv, ":h", longopts, profiles_usage, cli_opt_flag, &json);
  if (r >= 0) return r;
  if (optind < argc) return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
  an_error_t err = NULL;
  struct an_sandbox_profile_info *list = NULL;
  size_t n = 0;
  if (an_sandbox_profiles_list(an_ctx_profiles_dir(cli_ctx()), &list, &n, &err) < 0) return cli_fail(cmd, &err);
  if (json) {
    char *doc = NULL;
    if (an_sandbox_profiles_to_json(list, n, &doc, &err) < 0) {
      an_sandbox_profiles_free(list, n);
      return cli_fail(cmd, &err);
    }
    fputs(doc, stdout);
    free(doc);
  } else {
    printf("%-10s %-8s %-7s %-5s %-5s %-8s %-8s %-8s %s\n", "PROFILE", "IMAGE", "MEMORY", "CPUS",
           "PIDS", "TIMEOUT", "NETWORK", "DEVICES", "PURPOSE");
    for (size_t i = 0; i < n; i++) {
      const struct an_sandbox_opts *o = list[i].opts;
      char mem[32], cpus[48], timeout[32];
      human_size(an_sandbox_opts_memory(o), mem, sizeof mem);
      uint64_t mc = an_sandbox_opts_cpus(o);
      snprintf(cpus, sizeof cpus, "%" PRIu64 ".%" PRIu64, mc / 1000, mc % 1000 / 100);
      snprintf(timeout, sizeof timeout, "%" PRIu64 "s", an_sandbox_opts_lifetime(o) / 1000);
      char *const *dev = an_sandbox_opts_cdi_devices(o);
      const char *image = an_sandbox_opts_image(o);
      const char *why = list[i].error;
      const char *cut = why && strncmp(why, "profile \"", 9) == 0 ? strstr(why, "\": ") : NULL;
      if (cut) why = cut + 3;
      printf("%-10s %-8s %-7s %-5s %-5" PRIu64 " %-8s %-8s %-8s %s%s%s\n", list[i].name,
             image ? image : "python", mem, cpus, an_sandbox_opts_pids(o), timeout,
             an_sandbox_opts_network(o), dev[0] ? (strstr(dev[0], "=all") ? "gpu:all" : "gpu") : "-",
             why ? "refused: " : "", why ? why : "", "");
      if (list[i].description) printf("%*s%s\n", 11, "", list[i].description);
    }
  }
  an_sandbox_profiles_free(list, n);
  return 0;
}
