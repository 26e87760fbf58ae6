/* cli/agentnest/cmd_demo.c — `agentnest demo`: a narrated tour on the
 * default image through the library API: a Python file that writes a file,
 * a timeout that leaves the sandbox alive, the network that is not there
 * (only `lo`; a connect fails at once with ENETUNREACH — nothing is sent on
 * any wire), a redacted secret, a snapshot and an artifact list.  Exits 0
 * when every step behaved as promised, 1 otherwise, 125 when the sandbox
 * could not be made. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/sandbox.h"
#include "cli.h"
#include "util/cleanup.h"

static const char demo_usage[] =
    "Usage: agentnest demo [--image NAME]\n"
    "\n"
    "A narrated tour on the default image (python; import it first with\n"
    "`agentnest image import .../python/layout --name python`): run a Python file that\n"
    "writes a file, time out a command and show the sandbox and its file survive, show\n"
    "that the network is only `lo`, show a secret redacted from output, snapshot the\n"
    "workspace and list its artifacts.  Nothing leaves the machine.\n"
    "Exit status: 0 every step behaved as promised; 1 one did not; 125 runtime failure.\n"
    "  --image NAME   image to use (default python)\n"
    "  -h, --help     this help\n";

static const char hello_py[] =
    "import platform, sys\n"
    "with open('result.txt', 'w') as f:\n"
    "    f.write('written inside the sandbox\\n')\n"
    "print('hello from Python', platform.python_version(), 'on', platform.system())\n"
    "print('uid inside:', __import__('os').getuid())\n";

static const char net_py[] =
    "import errno, os, socket\n"
    "print('interfaces:', sorted(os.listdir('/sys/class/net')))\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "try:\n"
    "    s.connect(('10.255.255.1', 9))\n"
    "    print('connect: succeeded (unexpected)')\n"
    "except OSError as e:\n"
    "    print('connect to 10.255.255.1:', errno.errorcode.get(e.errno, e.errno))\n";

static const char secret_py[] =
    "import os\n"
    "print('the token is', os.environ['DEMO_TOKEN'])\n";

static int failures;

static void step(int n, const char *what) {
  printf("\n== %d. %s\n", n, what);
  fflush(stdout);
}

static void check(bool ok, const char *promise) {
  printf("   %s %s\n", ok ? "[ok]" : "[FAILED]", promise);
  fflush(stdout);
  if (!ok) failures++;
}

/* Run argv, print "$ cmd" and the output (streamed), return the result. */
static int demo_exec(struct an_sandbox *sb, char *const argv[], const char *shown,
                     uint64_t timeout_ms, struct an_exec_result *res) {
  struct an_exec_opts eo = {.timeout_ms = timeout_ms, .on_data = cli_stream_output};
  an_error_t err = NULL;
  printf("   $ %s\n", shown);
  fflush(stdout);
  if (an_sandbox_exec(sb, argv, &eo, res, &err) < 0) {
    cli_fail("demo", &err);
    failures++;
    return -1;
  }
  printf("   -> status %d%s%s, %llu ms\n", res->status, res->timed_out ? ", timed out" : "",
         res->oom_killed ? ", OOM-killed" : "", (unsigned long long) res->duration_ms);
  fflush(stdout);
  return 0;
}

static int demo_opt(void *ctx, int code, char *arg) {
  *(const char **) ctx = arg; /* --image */
  return -1;
}

int cmd_demo(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {
      {"image", required_argument, NULL, CLI_OPT_IMAGE}, {"help", no_argument, NULL, 'h'}, {0}};
  const char *image = "python";
  int r = cli_parse_opts("demo", argc, argv, ":h", longopts, demo_usage, demo_opt, &image);
  if (r >= 0) return r;
  if (optind < argc) return cli_usage_error("demo", "unexpected argument '%s'", argv[optind]);

  an_error_t err = NULL;
  struct an_sandbox_opts *opts = NULL;
  char token[64];
  snprintf(token, sizeof token, "demo-token-%d-%lx", (int) getpid(), (long) random());
  if (an_sandbox_opts_new_ctx(cli_ctx(), &opts, &err) < 0 || an_sandbox_opts_set_image(opts, image, &err) < 0 ||
      an_sandbox_opts_add_secret(opts, "DEMO_TOKEN", token, &err) < 0 ||
      an_sandbox_opts_add_env(opts, "PYTHONUNBUFFERED=1", &err) < 0) {
    an_sandbox_opts_free(opts);
    return cli_fail("demo", &err);
  }
  step(0, "create a sandbox from the default image");
  printf("   image %s: 512 MiB, 1 CPU, 256 pids, no network, uid 65532, seccomp + no capabilities\n",
         image);
  struct an_sandbox *sb = NULL;
  r = an_sandbox_create(g->root, opts, &sb, &err);
  an_sandbox_opts_free(opts);
  if (r < 0) return cli_fail("demo", &err);
  printf("   sandbox %s\n", an_sandbox_id(sb));

  struct an_exec_result res = {0};
  step(1, "run a Python file that writes a file");
  if (an_sandbox_put_data(sb, "hello.py", hello_py, sizeof hello_py - 1, 0644, &err) < 0) {
    cli_fail("demo", &err);
    failures++;
  }
  char *a1[] = {"python3", "hello.py", NULL};
  if (demo_exec(sb, a1, "python3 hello.py", 0, &res) == 0)
    check(res.status == 0, "the file ran and exited 0");
  an_exec_result_release(&res);

  step(2, "a command that runs too long is killed; the sandbox lives on");
  char *a2[] = {"python3", "-c", "import time; print('sleeping 60 s', flush=True); time.sleep(60)", NULL};
  if (demo_exec(sb, a2, "python3 -c 'time.sleep(60)'   (timeout 1 s)", 1000, &res) == 0)
    check(res.timed_out && res.status == AN_EXEC_STATUS_TIMED_OUT, "timed out: status 124");
  an_exec_result_release(&res);
  char *a3[] = {"cat", "result.txt", NULL};
  if (demo_exec(sb, a3, "cat result.txt", 0, &res) == 0)
    check(res.status == 0 && strstr(res.output.stdout_buf, "written inside"),
          "the next exec works and the file is still there");
  an_exec_result_release(&res);

  step(3, "no network: an empty network namespace (nothing is sent anywhere)");
  char *a4[] = {"python3", "-c", (char *) net_py, NULL};
  if (demo_exec(sb, a4, "python3 -c '<list interfaces; connect to 10.255.255.1>'", 0, &res) == 0)
    check(res.status == 0 && strstr(res.output.stdout_buf, "['lo']") &&
              strstr(res.output.stdout_buf, "ENETUNREACH"),
          "only lo exists and a connect fails at once with ENETUNREACH");
  an_exec_result_release(&res);

  step(4, "a secret is usable inside but never appears in captured output");
  char *a5[] = {"python3", "-c", (char *) secret_py, NULL};
  if (demo_exec(sb, a5, "python3 -c \"print('the token is', os.environ['DEMO_TOKEN'])\"", 0,
                &res) == 0)
    check(res.status == 0 && !strstr(res.output.stdout_buf, token) &&
              strstr(res.output.stdout_buf, "[REDACTED:DEMO_TOKEN]"),
          "the value was replaced by [REDACTED:DEMO_TOKEN]");
  an_exec_result_release(&res);

  step(5, "snapshot the workspace");
  char dir[] = "/tmp/agentnest-demo-XXXXXX";
  if (mkdtemp(dir)) {
    cleanup_free char *tar = NULL;
    if (asprintf(&tar, "%s/workspace.tar", dir) < 0) tar = NULL;
    struct an_snapshot_info info = {0};
    if (tar && an_sandbox_snapshot(sb, tar, &info, &err) == 0) {
      printf("   %s: %llu bytes, %llu entries, sha256:%s\n", tar, (unsigned long long) info.size,
             (unsigned long long) info.entries, info.sha256);
      check(info.entries >= 2, "a point-in-time pax tar with its sha256");
      unlink(tar);
    } else {
      cli_fail("demo", &err);
      failures++;
    }
    rmdir(dir);
  }

  step(6, "list the artifacts (size and sha256 computed on the host)");
  struct an_artifact_list l = {0};
  if (an_sandbox_artifacts(sb, NULL, 0, NULL, &l, &err) == 0) {
    bool found = false;
    for (size_t i = 0; i < l.n; i++) {
      printf("   %s %6llu %s\n", l.items[i].kind == AN_ARTIFACT_FILE ? l.items[i].sha256 : "(symlink)",
             (unsigned long long) l.items[i].size, l.items[i].path);
      found |= !strcmp(l.items[i].path, "result.txt");
    }
    check(found, "result.txt is listed");
    an_artifact_list_free(&l);
  } else {
    cli_fail("demo", &err);
    failures++;
  }

  step(7, "destroy the sandbox");
  if (an_sandbox_destroy(sb, 0, &err) < 0) {
    cli_fail("demo", &err);
    failures++;
  } else {
    check(true, "processes, cgroups, workspace and state removed");
  }
  an_sandbox_close(sb);
  printf("\n%s\n", failures ? "demo: some steps did not behave as promised" : "demo: all steps behaved as promised");
  return failures ? 1 : 0;
}
