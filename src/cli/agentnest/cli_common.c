/* cli/agentnest/cli_common.c — helpers shared by the sandbox subcommands:
 * messages, the sandbox option flags, output streaming and the --json
 * result document (see cli.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/output.h"
#include "agentnest/sandbox_opts.h"
#include "cli.h"
#include "stream.h"
#include "util/cleanup.h"

int cli_fail(const char *cmd, an_error_t *err) {
  const char *msg = err && *err ? (*err)->msg : "unknown error";
  size_t n = strlen(cmd);
  /* a message that starts with the command ("image import SRC: ...") says it once */
  if (!strncmp(msg, cmd, n) && (msg[n] == ' ' || msg[n] == ':')) fprintf(stderr, "agentnest %s\n", msg);
  else fprintf(stderr, "agentnest %s: %s\n", cmd, msg);
  /* --json/--stream: the error document too (stream.h) */
  cli_error_json_print(err && *err && (*err)->errnum ? an_errno_name((*err)->errnum) : "EIO",
                       err && *err ? (*err)->msg : NULL);
  an_error_free(err);
  return AN_EXIT_RUNTIME;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cleanup_free char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
  va_end(ap);
  fprintf(stderr, "agentnest %s: %s\nTry 'agentnest %s --help'.\n", cmd, msg ? msg : fmt, cmd);
  cli_error_json_print("usage", msg ? msg : fmt);   /* --json/--stream (stream.h) */
  return AN_EXIT_RUNTIME;
}

int cli_getopt_error(const char *cmd, int c, int argc, char **argv) {
  const char *arg = optind - 1 < argc && optind >= 1 ? argv[optind - 1] : "?";
  if (c == ':') return cli_usage_error(cmd, "option '%s' needs a value", arg);
  if (optopt && optopt < 256) return cli_usage_error(cmd, "unknown option '-%c'", optopt);
  return cli_usage_error(cmd, "unknown option '%s'", arg);
}

int cli_parse_opts(const char *cmd, int argc, char **argv, const char *shortopts,
                   const struct option *longopts, const char *usage, cli_opt_fn on_opt,
                   void *ctx) {
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
    if (c == 'h') {
      fputs(usage, stdout);
      return 0;
    }
    if (c == CLI_OPT_JSON_ALREADY) continue;
    if (c == '?' || c == ':' || !on_opt) return cli_getopt_error(cmd, c, argc, argv);
    int r = on_opt(ctx, c, optarg);
    if (r >= 0) return r;
  }
  return -1;
}

int cli_opt_flag(void *ctx, int code, char *arg) {
  (void) code;
  (void) arg;
  *(bool *) ctx = true;
  return -1;
}

const char cli_sandbox_opts_help[] =
    "Sandbox options (a profile first, then these flags, which override it):\n"
    "  --image NAME            image from the store (default: python)\n"
    "  --profile NAME|FILE     JSON profile (profiles/NAME.json or a file): default, python,\n"
    "                          shell, git, browser, gpu (agentnest profiles lists them)\n"
    "  --memory SIZE           memory limit, no swap (default 512m)\n"
    "  --cpus N                CPU bandwidth, e.g. 1.5 (default 1.0)\n"
    "  --pids N                task limit (default 256)\n"
    "  --tmp-size SIZE         /tmp tmpfs size (default 64m; one inode per 4 KiB)\n"
    "  --tmp-noexec            mount /tmp noexec (default: exec, nosuid, nodev)\n"
    "  --shm-size SIZE         /dev/shm tmpfs size (default 64m; browsers want more)\n"
    "  --disk SIZE             /workspace quota, enforced by the kernel (default 1g)\n"
    "  --inodes N              /workspace inode quota (default 100000)\n"
    "  --timeout DURATION      sandbox lifetime, e.g. 300, 5m, 1.5s (default 300s)\n"
    "  --exec-timeout DURATION per-command timeout (default: the remaining lifetime)\n"
    "  --max-output SIZE       stdout+stderr kept per command (default 10m)\n"
    "  --max-read SIZE         cap of one file copied out (default 64m)\n"
    "  --env K=V               environment variable (repeatable)\n"
    "  --secret NAME           secret from the caller's environment variable NAME\n"
    "  --secret NAME=@FILE     secret read from FILE; never shown in output (repeatable)\n"
    "  --workdir DIR           working directory inside (default /workspace)\n"
    "  --network MODE          egress: none (default: loopback only), allowlist (only\n"
    "                          --allow entries) or full (any public address); the deny\n"
    "                          set (loopback, host, link-local/metadata, private ranges,\n"
    "                          multicast, TCP 25) applies in every mode (agentnest(1) NETWORK)\n"
    "  --seccomp-profile FILE  seccomp policy in the Docker/OCI profile format; one that\n"
    "                          allows what the default denies (mount, bpf, ptrace, keyctl,\n"
    "                          new namespaces, vsock, ...) is refused, naming the call\n"
    "  --seccomp-unsafe        accept such a profile (recorded as a seccomp_unsafe event)\n"
    "  --landlock MODE         required (refuse where the kernel lacks Landlock),\n"
    "                          best-effort (default: where available) or off\n"
    "  --name NAME             a name for the sandbox\n"
    "  --gpu all|INDEX[,INDEX]|VENDOR/CLASS=NAME\n"
    "                          CDI devices (nvidia.com/gpu=INDEX; repeatable): device\n"
    "                          nodes, read-only driver mounts and env from the specs\n"
    "  --cdi-spec-dir DIR      CDI spec directory (repeatable; default /etc/cdi and\n"
    "                          /var/run/cdi)\n"
    "  --cdi-allow-hooks       apply CDI hooks (host programs run as root); refused otherwise\n"
    "  --approve-with PROGRAM|unix:PATH\n"
    "                          approval hook asked (JSON on stdin, answer on stdout) before\n"
    "                          every exec, cp, snapshot, restore, fork; fixed for the\n"
    "                          sandbox's life; no answer = deny (see APPROVALS in agentnest(1))\n"
    "  --approval-timeout DURATION  time the hook may take (default 5s)\n"
    "  --allow ENTRY           egress allowlist entry (repeatable): NAME[:PORTS] (that name),\n"
    "                          *.ZONE[:PORTS] (its subdomains), CIDR[:PORTS]; PORTS like\n"
    "                          443, 80,443 or 1-1024 (default 80,443)\n"
    "  --dns-upstream ADDR[:PORT]  resolver the DNS filter asks (default: the host's)\n";

static const struct {
  int code;
  const char *flag, *option;
} flag_names[] = {
    {CLI_OPT_IMAGE, "--image", "image"},           {CLI_OPT_MEMORY, "--memory", "memory"},
    {CLI_OPT_CPUS, "--cpus", "cpus"},              {CLI_OPT_PIDS, "--pids", "pids"},
    {CLI_OPT_TMP_SIZE, "--tmp-size", "tmp_size"},  {CLI_OPT_TIMEOUT, "--timeout", "timeout"},
    {CLI_OPT_EXEC_TIMEOUT, "--exec-timeout", "exec_timeout"},
    {CLI_OPT_MAX_OUTPUT, "--max-output", "max_output"},
    {CLI_OPT_MAX_READ, "--max-read", "max_read"},  {CLI_OPT_ENV, "--env", "env"},
    {CLI_OPT_SECRET, "--secret", "secret"},        {CLI_OPT_WORKDIR, "--workdir", "workdir"},
    {CLI_OPT_NETWORK, "--network", "network"},
    {CLI_OPT_SECCOMP_PROFILE, "--seccomp-profile", "seccomp_profile"},
    {CLI_OPT_NAME, "--name", "name"},              {CLI_OPT_LANDLOCK, "--landlock", "landlock"},
    {CLI_OPT_SECCOMP_UNSAFE, "--seccomp-unsafe", "seccomp_unsafe"},
    {CLI_OPT_TMP_NOEXEC, "--tmp-noexec", "tmp_noexec"},
    {CLI_OPT_DISK, "--disk", "disk"},              {CLI_OPT_INODES, "--inodes", "inodes"},
    {CLI_OPT_GPU, "--gpu", "gpu"},                 {CLI_OPT_CDI_SPEC_DIR, "--cdi-spec-dir", "cdi_spec_dir"},
    {CLI_OPT_CDI_ALLOW_HOOKS, "--cdi-allow-hooks", "cdi_allow_hooks"},
    {CLI_OPT_SHM_SIZE, "--shm-size", "shm_size"},
    {CLI_OPT_APPROVE_WITH, "--approve-with", "approve_with"},
    {CLI_OPT_APPROVAL_TIMEOUT, "--approval-timeout", "approval_timeout"},
    {CLI_OPT_ALLOW, "--allow", "allow"},           {CLI_OPT_DNS_UPSTREAM, "--dns-upstream", "dns_upstream"},
};

bool cli_sandbox_flag(struct cli_sandbox_flags *f, int code, const char *arg) {
  if (code == CLI_OPT_PROFILE) {
    f->profile = arg;
    return true;
  }
  if (code < CLI_OPT_IMAGE || code >= CLI_OPT__LAST_SANDBOX) return false;
  if (f->n < CLI_MAX_FLAGS) {
    f->item[f->n].code = code;
    /* Flags without an argument set their boolean option. */
    f->item[f->n].value =
        code == CLI_OPT_TMP_NOEXEC || code == CLI_OPT_SECCOMP_UNSAFE || code == CLI_OPT_CDI_ALLOW_HOOKS
            ? "true"
            : arg;
    f->n++;
  }
  return true;
}

int cli_sandbox_opts(const char *cmd, const struct cli_sandbox_flags *f,
                     struct an_sandbox_opts **out) {
  an_error_t err = NULL;
  struct an_sandbox_opts *o = NULL;
  if (f->n >= CLI_MAX_FLAGS) {
    fprintf(stderr, "agentnest %s: more than %d sandbox flags\n", cmd, CLI_MAX_FLAGS - 1);
    return AN_EXIT_RUNTIME;
  }
  if (an_sandbox_opts_new_ctx(cli_ctx(), &o, &err) < 0) return cli_fail(cmd, &err);
  if (f->profile && an_sandbox_opts_load_profile(o, f->profile, NULL, &err) < 0) {
    an_sandbox_opts_free(o);
    an_error_prefix(&err, "--profile %s", f->profile);
    return cli_fail(cmd, &err);
  }
  for (size_t i = 0; i < f->n; i++) {
    const char *flag = "?", *option = NULL;
    for (size_t k = 0; k < sizeof flag_names / sizeof flag_names[0]; k++)
      if (flag_names[k].code == f->item[i].code) {
        flag = flag_names[k].flag;
        option = flag_names[k].option;
      }
    const char *value = f->item[i].value;
    if (!option || an_sandbox_opts_set_option(o, option, value, &err) < 0) {
      an_sandbox_opts_free(o);
      /* Never echo a --secret argument's value: it names a variable or a file only, but
       * the setters' message already names what is wrong. */
      if (f->item[i].code == CLI_OPT_SECRET) an_error_prefix(&err, "%s", flag);
      else an_error_prefix(&err, "%s %s", flag, value);
      return cli_fail(cmd, &err);
    }
  }
  if (!an_sandbox_opts_image(o) && an_sandbox_opts_set_image(o, "python", &err) < 0) {
    an_sandbox_opts_free(o);
    return cli_fail(cmd, &err);
  }
  *out = o;
  return 0;
}

static void write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, buf, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return; /* a closed pipe: drop the rest, the capture goes on */
    }
    buf += w;
    len -= (size_t) w;
  }
}

void cli_stream_output(void *data, enum an_stream stream, const char *buf, size_t len) {
  (void) data;
  write_all(stream == AN_STREAM_STDERR ? 2 : 1, buf, len);
}

void cli_json_kv_path(struct an_jgen *j, const char *k, const char *path) {
  an_jgen_key(j, k);
  if (!path) an_jgen_null(j);
  else if (j->g) an_jgen_check(j, an_json_escape_output(j->g, path, strlen(path)));
}

void cli_json_artifact(struct an_jgen *j, const struct an_artifact *a, bool with_target) {
  if (j->g && j->st == yajl_gen_status_ok) an_jgen_check(j, an_artifact_json(j->g, a, with_target));
}

int cli_print_json(const char *cmd, struct an_jgen *j, const char *what) {
  cleanup_free char *doc = NULL;
  size_t len = 0;
  int r = an_jgen_finish(j, &doc, &len);
  if (r < 0) {
    fflush(stdout);
    fprintf(stderr, "agentnest %s: %s: JSON: %s\n", cmd, what, an_errno_name(-r));
    return AN_EXIT_RUNTIME;
  }
  fwrite(doc, 1, len, stdout);
  if (len && doc[len - 1] != '\n') fputc('\n', stdout);
  fflush(stdout);
  return 0;
}

int cli_print_result_json(const char *cmd, const char *id, const struct an_exec_result *res,
                          const struct an_artifact_list *arts) {
  char what[128];
  snprintf(what, sizeof what, "exec result of sandbox %s", id ? id : "(none)");
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return cli_print_json(cmd, &j, what);   /* reports ENOMEM */
  struct an_jgen *g = &j;
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "id", id);
  /* the members shared with batch records (an_exec_result_json_fields) */
  if (g->g && g->st == yajl_gen_status_ok) an_jgen_check(g, an_exec_result_json_fields(g->g, res, arts));
  an_jgen_map_close(g);
  return cli_print_json(cmd, g, what);
}

int cli_env_add(const char *cmd, char ***env, size_t *n, const char *kv) {
  const char *eq = strchr(kv, '=');
  bool ok = eq && eq != kv && !(kv[0] >= '0' && kv[0] <= '9');
  for (const char *p = kv; ok && p < eq; p++)
    ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
         *p == '_';
  if (!ok) return cli_usage_error(cmd, "--env %s: expected KEY=VALUE with KEY [A-Za-z_][A-Za-z0-9_]*", kv);
  char **e = realloc(*env, (*n + 2) * sizeof *e);
  if (!e) {
    fprintf(stderr, "agentnest %s: out of memory\n", cmd);
    return AN_EXIT_RUNTIME;
  }
  e[(*n)++] = (char *) kv;
  e[*n] = NULL;
  *env = e;
  return 0;
}

bool cli_split_sandbox_path(const char *s, char **id, const char **path) {
  const char *colon = strchr(s, ':');
  if (!colon || colon == s) return false;
  /* An id or name has no '/': "./a:b" or "/x:y" are host paths. */
  for (const char *p = s; p < colon; p++)
    if (*p == '/') return false;
  *id = strndup(s, (size_t) (colon - s));
  if (!*id) return false;
  const char *p = colon + 1;
  if (!strncmp(p, "/workspace/", 11)) p += 11;
  else if (!strcmp(p, "/workspace")) p = ".";
  *path = p;
  return true;
}

int cli_read_all(int fd, char **out, size_t *len) {
  size_t cap = 65536, n = 0;
  char *b = malloc(cap + 1);
  if (!b) return -ENOMEM;
  for (;;) {
    if (n == cap) {
      char *nb = cap < ((size_t) 8 << 20) ? realloc(b, cap * 2 + 1) : NULL;
      if (!nb) { free(b); return -EFBIG; }
      b = nb;
      cap *= 2;
    }
    ssize_t k = read(fd, b + n, cap - n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) { int e = errno; free(b); return -e; }
    if (k == 0) break;
    n += (size_t) k;
  }
  b[n] = '\0';
  *out = b;
  *len = n;
  return 0;
}
