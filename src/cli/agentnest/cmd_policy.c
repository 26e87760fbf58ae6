/* cli/agentnest/cmd_policy.c — `agentnest policy explain`: what each
 * profile enforces and what is NOT enforced on this host, from
 * an_policy_explain (agentnest/policy.h): the JSON document with --json,
 * else a summary per profile read back from that same document. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "agentnest/policy.h"
#include "cli.h"
#include "util/cleanup.h"

static const char policy_usage[] =
    "Usage: agentnest policy explain [--profile NAME|FILE] [--json]\n"
    "\n"
    "For every profile (or the one given), print what a sandbox made from it enforces --\n"
    "namespaces, user and id mapping, capabilities, seccomp (default action, architectures,\n"
    "which dangerous calls the compiled filter denies), Landlock, mounts, cgroup limits,\n"
    "network -- and what is NOT enforced on this host (Landlock missing, cgroup controllers\n"
    "absent, host values visible in /proc, ...).  A profile that cannot run here is listed\n"
    "with the reason.  The description is made from the same OCI spec the engine would\n"
    "apply (for a placeholder image).  For a live sandbox see 'agentnest inspect --policy ID'.\n"
    "  --profile NAME|FILE  explain this profile only\n"
    "  --json               one JSON document (see agentnest(1), OTHER COMMANDS)\n"
    "  -h, --help           this help\n"
    "Exit status: 0; 125 a named profile cannot be read or another error.\n";

struct policy_args {
  const char *profile;
  bool json;
};

static int on_opt(void *ctx, int code, char *arg) {
  struct policy_args *a = ctx;
  if (code == CLI_OPT_PROFILE) a->profile = arg;
  else if (code == CLI_OPT_JSON) a->json = true;
  return -1;
}

static yajl_val get(yajl_val v, yajl_type t, const char *a, const char *b) {
  const char *path[] = {a, b, NULL};
  return yajl_tree_get(v, path, t);
}

static const char *str(yajl_val v, const char *a, const char *b) {
  yajl_val s = get(v, yajl_t_string, a, b);
  return s ? YAJL_GET_STRING(s) : "";
}

/* The strings of an array, joined by `sep`, on one line. */
static void print_list(yajl_val arr, const char *sep) {
  for (size_t i = 0; arr && YAJL_IS_ARRAY(arr) && i < arr->u.array.len; i++) {
    yajl_val s = arr->u.array.values[i];
    printf("%s%s", i ? sep : "", YAJL_IS_STRING(s) ? YAJL_GET_STRING(s) : "?");
  }
}

static size_t len(yajl_val arr) { return arr && YAJL_IS_ARRAY(arr) ? arr->u.array.len : 0; }

static void print_policy(yajl_val p) {
  printf("  namespaces    ");
  yajl_val ns = get(p, yajl_t_array, "namespaces", NULL);
  for (size_t i = 0; i < len(ns); i++) printf("%s%s", i ? " " : "", str(ns->u.array.values[i], "type", NULL));
  printf(" (new)\n");
  yajl_val uid = get(p, yajl_t_number, "user", "uid"), gid = get(p, yajl_t_number, "user", "gid");
  printf("  user          %s:%s inside a user namespace whose ids map onto a host range of its own\n",
         uid ? YAJL_GET_NUMBER(uid) : "?", gid ? YAJL_GET_NUMBER(gid) : "?");
  static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted", "ambient"};
  size_t ncaps = 0;
  for (size_t i = 0; i < 5; i++) ncaps += len(get(p, yajl_t_array, "capabilities", sets[i]));
  yajl_val nnp = get(p, yajl_t_any, "no_new_privileges", NULL);
  printf("  capabilities  %s; no_new_privs %s\n", ncaps ? "some (see --json)" : "none in all five sets",
         nnp && YAJL_IS_TRUE(nnp) ? "on" : "OFF");
  yajl_val sc = get(p, yajl_t_object, "seccomp", NULL);
  if (sc) {
    yajl_val rules = get(sc, yajl_t_number, "rules", NULL);
    printf("  seccomp       %s: default %s, ", str(sc, "profile", NULL), str(sc, "default_action", NULL));
    print_list(get(sc, yajl_t_array, "architectures", NULL), ",");
    printf(", %s rules, digest %s\n", rules ? YAJL_GET_NUMBER(rules) : "?", str(sc, "digest", NULL));
    printf("                denies: ");
    print_list(get(sc, yajl_t_array, "denies", NULL), ", ");
    printf("\n");
    if (len(get(sc, yajl_t_array, "allows", NULL))) {
      printf("                allows, of the calls probed: ");
      print_list(get(sc, yajl_t_array, "allows", NULL), ", ");
      printf("\n");
    }
    if (len(get(sc, yajl_t_array, "widens_default", NULL))) {
      printf("                ALLOWS what the default denies: ");
      print_list(get(sc, yajl_t_array, "widens_default", NULL), ", ");
      printf("\n");
    }
  } else {
    printf("  seccomp       NONE\n");
  }
  yajl_val abi = get(p, yajl_t_number, "landlock", "kernel_abi");
  yajl_val enf = get(p, yajl_t_any, "landlock", "enforced");
  printf("  landlock      %s: %s (kernel ABI %s); writes only beneath: ", str(p, "landlock", "mode"),
         enf && YAJL_IS_TRUE(enf) ? "enforced" : "NOT enforced", abi ? YAJL_GET_NUMBER(abi) : "?");
  print_list(get(p, yajl_t_array, "landlock", "writable_paths"), " ");
  printf("\n");
  yajl_val ro = get(p, yajl_t_any, "root", "readonly");
  printf("  mounts        / %s;", ro && YAJL_IS_TRUE(ro) ? "read-only" : "WRITABLE");
  yajl_val m = get(p, yajl_t_array, "mounts", NULL);
  for (size_t i = 0; i < len(m); i++) {
    printf(" %s %s(", str(m->u.array.values[i], "destination", NULL), str(m->u.array.values[i], "type", NULL));
    print_list(get(m->u.array.values[i], yajl_t_array, "options", NULL), ",");
    printf(")%s", i + 1 < len(m) ? ";" : "");
  }
  printf("\n");
  yajl_val mem = get(p, yajl_t_number, "cgroup", "memory_limit");
  yajl_val pids = get(p, yajl_t_number, "cgroup", "pids_limit");
  printf("  cgroup        memory %s bytes (swap off), cpus %s, pids %s, devices deny-all but %zu\n",
         mem ? YAJL_GET_NUMBER(mem) : "-", str(p, "cgroup", "cpus"), pids ? YAJL_GET_NUMBER(pids) : "-",
         len(get(p, yajl_t_array, "cgroup", "devices")) ? len(get(p, yajl_t_array, "cgroup", "devices")) - 1 : 0);
  printf("  network       %s: %s\n", str(p, "network", "mode"), str(p, "network", "namespace"));
  yajl_val ne = get(p, yajl_t_array, "not_enforced", NULL);
  printf("  NOT enforced on this host:\n");
  for (size_t i = 0; i < len(ne); i++)
    printf("    - %s\n", YAJL_IS_STRING(ne->u.array.values[i]) ? YAJL_GET_STRING(ne->u.array.values[i]) : "?");
}

static int print_text(const char *cmd, const char *doc) {
  char e[256] = "";
  yajl_val v = yajl_tree_parse(doc, e, sizeof e);
  if (!v) {
    fprintf(stderr, "agentnest %s: read back the report: %s\n", cmd, e);
    return AN_EXIT_RUNTIME;
  }
  yajl_val abi = get(v, yajl_t_number, "host", "landlock_abi");
  yajl_val cpus = get(v, yajl_t_number, "host", "online_cpus");
  printf("host: Landlock ABI %s, cgroup %s (", abi ? YAJL_GET_NUMBER(abi) : "?", str(v, "host", "cgroup_layout"));
  print_list(get(v, yajl_t_array, "host", "controllers"), " ");
  printf("), %s online CPUs; profiles from %s\n", cpus ? YAJL_GET_NUMBER(cpus) : "?", str(v, "profiles_dir", NULL));
  yajl_val ps = get(v, yajl_t_array, "profiles", NULL);
  for (size_t i = 0; i < len(ps); i++) {
    yajl_val p = ps->u.array.values[i];
    yajl_val run = get(p, yajl_t_any, "runnable", NULL);
    printf("\nprofile %s: ", str(p, "name", NULL));
    if (!run || !YAJL_IS_TRUE(run)) {
      printf("NOT runnable on this host: %s\n", str(p, "reason", NULL));
      continue;
    }
    printf("runnable, image %s\n", str(p, "image", NULL));
    yajl_val pol = get(p, yajl_t_object, "policy", NULL);
    if (pol) print_policy(pol);
  }
  yajl_tree_free(v);
  return 0;
}

int cmd_policy(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {{"profile", required_argument, NULL, CLI_OPT_PROFILE},
                                           {"json", no_argument, NULL, CLI_OPT_JSON},
                                           {"help", no_argument, NULL, 'h'},
                                           {0}};
  const char *cmd = argv[0];
  if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    fputs(policy_usage, stdout);
    return 0;
  }
  if (argc < 2) return cli_usage_error(cmd, "expected a subcommand (explain)");
  if (strcmp(argv[1], "explain") != 0)
    return cli_usage_error(cmd, "unknown subcommand '%s' (explain)", argv[1]);
  struct policy_args a = {.json = g->json != 0};
  int r = cli_parse_opts("policy explain", argc - 1, argv + 1, ":h", longopts, policy_usage, on_opt, &a);
  if (r >= 0) return r;
  if (optind < argc - 1) return cli_usage_error("policy explain", "unexpected argument '%s'", argv[optind + 1]);
  cleanup_free char *doc = NULL;
  an_error_t err = NULL;
  if (an_policy_explain_store(g->root, a.profile, an_ctx_profiles_dir(cli_ctx()), &doc, &err) < 0) return cli_fail("policy explain", &err);
  if (a.json) {
    fputs(doc, stdout);
    return 0;
  }
  return print_text("policy explain", doc);
}
