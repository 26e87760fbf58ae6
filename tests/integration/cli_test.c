/* tests/integration/cli_test.c — black-box tests of the `agentnest` sandbox
 * commands through the built binary ($AN_TEST_BUILD/agentnest, else
 * ./build/agentnest): exit statuses (0, 3, 124, 125, 126, 127, 128+9),
 * --json and non-UTF-8 escaping, --put/--get, cp both ways and its
 * refusals, create/exec/ls/inspect/destroy, snapshot/restore, artifacts,
 * fork, prune, doctor, absurd values, and Ctrl-C destroying a one-shot.
 *
 * All tests share one state root per test run, /tmp/an-cli-<runner pid>,
 * with the busybox and python images imported from the `make images` cache
 * (skipped when the cache is missing); the root is pruned and removed when
 * the run ends.  Per-test files live in /tmp/an-cli-<runner>-<test pid>. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "image_fixture.h"
#define AN_CLI_SHORT_NAMES   /* an(), out_text, root, ... (tests/lib/cli_fixture.h) */
#include "cli_fixture.h"

#define CACHE "/var/cache/agentnest/images"

/* A file's content ("" when unreadable; heap). */
static char *slurp(const char *path) {
  char *t = an_test_read_file(path, NULL);
  return t ? t : strdup("");
}

static void setup(void) {
  an_cli_setup("cli", 0700);
  an_cli_import("busybox");
  an_cli_import("python");
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  an_cli_remove_root("cli");
}

TestSuite(cli, .init = setup, .fini = an_cli_teardown, .timeout = 120);

/* ---- help, options, absurd values -------------------------------------------------------- */

Test(cli, every_command_has_help_and_exits_0) {
  const char *cmds[] = {"run", "shell", "python", "create", "exec", "cp", "ls", "inspect",
                        "destroy", "events", "prune", "snapshot", "restore", "artifacts",
                        "fork", "doctor", "demo", NULL};
  for (int i = 0; cmds[i]; i++) {
    cr_expect_eq(an("%s --help", cmds[i]), 0, "%s --help", cmds[i]);
    cr_expect(strstr(out_text, "Usage: agentnest") != NULL, "%s --help: %s", cmds[i], out_text);
  }
  cr_expect_eq(an("--help"), 0);
  cr_expect(strstr(out_text, "snapshot") && strstr(out_text, "doctor"));
}

Test(cli, unknown_option_exits_125_and_names_the_flag) {
  cr_assert_eq(an("run --bogus -- true"), 125);
  cr_expect(strstr(err_text, "--bogus") != NULL, "%s", err_text);
  cr_assert_eq(an("run --memory"), 125);
  cr_expect(strstr(err_text, "--memory") != NULL, "%s", err_text);
  cr_assert_eq(an("frobnicate"), 125);
  /* network's output is always JSON: --json is refused, named, like any unknown option */
  cr_assert_eq(an("network no-such-sandbox --json"), 125);
  cr_expect(strstr(err_text, "agentnest network: unknown option '--json'") &&
                strstr(err_text, "Try 'agentnest network --help'"), "%s", err_text);
}

Test(cli, absurd_values_are_refused_with_the_flag_named) {
  const char *bad[][2] = {{"--memory 0", "--memory 0"}, {"--timeout -1", "--timeout -1"},
                          {"--pids 0", "--pids 0"},     {"--memory 12q", "--memory 12q"},
                          {"--cpus 0", "--cpus 0"},     {"--network host", "--network"},
                          {"--workdir ../x", "--workdir"}, {"--env =x", "--env"},
                          {"--profile nosuchprofile", "nosuchprofile"},
                          {"--secret AN_CLI_TEST_UNSET_VAR", "--secret"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cr_expect_eq(an("run --image busybox %s -- true", bad[i][0]), 125, "%s", bad[i][0]);
    cr_expect(strstr(err_text, bad[i][1]) != NULL, "%s: %s", bad[i][0], err_text);
  }
  /* nothing was left behind */
  cr_assert_eq(an("ls --json"), 0);
  yajl_val v = parse_json(out_text);
  cr_expect(YAJL_IS_ARRAY(v));
  yajl_tree_free(v);
}

Test(cli, missing_image_exits_125) {
  cr_assert_eq(an("run --image no-such-image-xyz -- true"), 125);
  cr_expect(strstr(err_text, "no-such-image-xyz") != NULL, "%s", err_text);
  /* and what to do about it */
  cr_expect(strstr(err_text, "image import SRC --name no-such-image-xyz") != NULL, "%s", err_text);
}

/* ---- one-shot exit statuses -------------------------------------------------------------- */

Test(cli, run_passes_the_commands_own_status) {
  cr_expect_eq(an("run --image busybox -- true"), 0, "%s", err_text);
  cr_expect_eq(an("run --image busybox -- sh -c 'exit 3'"), 3, "%s", err_text);
  cr_expect_eq(an("shell --image busybox 'exit 3'"), 3, "%s", err_text);
}

Test(cli, stdout_and_stderr_stay_apart) {
  cr_assert_eq(an("shell --image busybox 'echo out; echo err >&2'"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "out\n");
  cr_expect_str_eq(err_text, "err\n");
}

Test(cli, exec_timeout_exits_124) {
  cr_expect_eq(an("run --image busybox --exec-timeout 1 -- sleep 60"), 124, "%s", err_text);
}

/* and the reason is on stderr, streamed as without --json (it was only in
 * the --json document's "stderr") */
Test(cli, not_executable_exits_126_and_not_found_127) {
  cr_expect_eq(an("run --image busybox -- /etc/passwd"), 126, "%s", err_text);
  cr_expect(strstr(err_text, "exec \"/etc/passwd\"") && strstr(err_text, "EACCES"), "stderr: %s", err_text);
  cr_expect_eq(an("run --image busybox -- /no/such/program"), 127, "%s", err_text);
  cr_expect(strstr(err_text, "/no/such/program") && strstr(err_text, "ENOENT"), "stderr: %s", err_text);
  cr_expect_eq(an("run --image busybox -- no-such-program-in-path"), 127, "%s", err_text);
  cr_expect(strstr(err_text, "executable file not found in $PATH"), "stderr: %s", err_text);
  cr_expect_str_eq(out_text, "");
}

Test(cli, killed_by_signal_9_exits_137) {
  cr_expect_eq(an("shell --image busybox 'kill -9 $$'"), 137, "%s", err_text);
}

Test(cli, run_json_has_every_field_and_escapes_non_utf8) {
  cr_assert_eq(an("run --image busybox --json -- sh -c 'printf \"\\377ab\\001\"; echo e >&2; exit 3'"), 3,
               "%s", err_text);
  yajl_val v = parse_json(out_text);
  const char *keys[] = {"id", "exit_code", "signal", "timed_out", "oom_killed", "duration_ms",
                        "stdout", "stderr", "stdout_truncated", "stderr_truncated", "artifacts",
                        NULL};
  for (int i = 0; keys[i]; i++) {
    const char *path[] = {keys[i], NULL};
    cr_expect_not_null(yajl_tree_get(v, path, yajl_t_any), "missing %s: %s", keys[i], out_text);
  }
  yajl_val so = jget(v, "stdout", yajl_t_string);
  cr_assert_not_null(so);
  /* U+FFFD for the invalid byte, the control byte kept (escaped by JSON) */
  cr_expect_str_eq(jstr(so), "\xef\xbf\xbd" "ab\x01");
  cr_expect_str_eq(jstr(jget(v, "stderr", yajl_t_string)), "e\n");
  cr_expect_eq(YAJL_GET_INTEGER(jget(v, "exit_code", yajl_t_number)), 3);
  cr_expect(YAJL_IS_FALSE(jget(v, "timed_out", yajl_t_any)));
  cr_expect(YAJL_IS_FALSE(jget(v, "stdout_truncated", yajl_t_any)));
  yajl_tree_free(v);
}

Test(cli, json_reports_timeout_and_truncation) {
  cr_assert_eq(an("run --image busybox --json --max-output 1k --exec-timeout 1 -- "
                  "sh -c 'head -c 100000 /dev/zero | tr \"\\0\" x; sleep 60'"),
               124, "%s", err_text);
  yajl_val v = parse_json(out_text);
  cr_expect(YAJL_IS_TRUE(jget(v, "timed_out", yajl_t_any)), "%s", out_text);
  cr_expect(YAJL_IS_TRUE(jget(v, "stdout_truncated", yajl_t_any)), "%s", out_text);
  yajl_val so = jget(v, "stdout", yajl_t_string);
  cr_assert_not_null(so);
  cr_expect_leq(strlen(jstr(so)), 1024);
  yajl_tree_free(v);
}

/* Without --json no *_truncated member shows the cut: stderr says so (exit status unchanged) */
Test(cli, plain_output_names_the_max_output_cut_on_stderr) {
  cr_assert_eq(an("run --image busybox --max-output 10 -- sh -c 'seq 1 100; exit 3'"), 3, "%s", err_text);
  cr_expect_str_eq(out_text, "1\n2\n3\n4\n5\n");
  cr_expect(strstr(err_text, "agentnest run: output over --max-output") != NULL, "stderr: %s", err_text);
  cr_expect(strstr(err_text, "stdout 10 of 292 bytes") != NULL, "stderr: %s", err_text);
  cr_assert_eq(an("run --image busybox --max-output 1k -- sh -c 'seq 1 100'"), 0, "%s", err_text);
  cr_expect_str_eq(err_text, "", "nothing dropped, nothing said");
}

Test(cli, put_and_get_move_files_in_and_out) {
  an_test_sh("mkdir -p '%s/src/sub' && echo hello > '%s/src/sub/a.txt' && echo top > '%s/in.txt'", work,
        work, work);
  cr_assert_eq(an("shell --image busybox --put in.txt --put src:tree --get 'out/*.txt:got' "
                  "'cat in.txt tree/sub/a.txt; mkdir out; echo result > out/r.txt; echo no > out/r.bin'"),
               0, "%s", err_text);
  cr_expect_str_eq(out_text, "top\nhello\n");
  char p[400];
  snprintf(p, sizeof p, "%s/got/out/r.txt", work);
  char *got = slurp(p);
  cr_expect_str_eq(got, "result\n");
  free(got);
  snprintf(p, sizeof p, "%s/got/out/r.bin", work);
  struct stat st;
  cr_expect_neq(stat(p, &st), 0, "a file not matching the glob was copied");
}

/* trial: a --get that matched nothing exited 0 without a word */
Test(cli, get_that_matches_nothing_says_so) {
  cr_expect_eq(an("run --image busybox --get 'nothing/**:got' -- true"), 0, "%s", err_text);
  cr_expect(strstr(err_text, "warning: --get nothing/**:got: no file in the workspace matched nothing/**"),
            "no warning for a --get that matched nothing: %s", err_text);
}

Test(cli, get_with_dotdot_glob_is_refused) {
  cr_expect_eq(an("run --image busybox --get '../*' -- true"), 125);
  cr_expect(strstr(err_text, "--get") != NULL, "%s", err_text);
}

Test(cli, python_runs_code_and_files) {
  cr_expect_eq(an("python 'print(6*7)'"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "42\n");
  an_test_sh("printf 'import sys\\nprint(\"file\", sys.argv[1])\\n' > '%s/prog.py'", work);
  cr_expect_eq(an("python prog.py arg1"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "file arg1\n");
  cr_expect_eq(an("python missing.py"), 125);
  /* CODE - is read from stdin (it ran "-" as code: a SyntaxError), as SCRIPT - is */
  an_test_sh("printf 'import sys\\nprint(7*6, sys.argv[1:])\\n' > '%s/code.txt'", work);
  cr_expect_eq(an("python - a1 < code.txt"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "42 ['a1']\n");
  an_test_sh("printf 'echo \"from-stdin $1\"\\n' > '%s/script.txt'", work);
  cr_expect_eq(an("shell --image busybox - x1 < script.txt"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "from-stdin x1\n");
  cr_expect_eq(an("python -i - < code.txt"), 125, "-i with CODE -: %s", err_text);
  cr_expect(strstr(err_text, "CODE - reads the code from stdin"), "%s", err_text);
}

Test(cli, secret_is_redacted_from_output) {
  cr_expect_eq(an("run --image busybox --secret AN_CLI_SECRET -- sh -c 'echo \"s=$AN_CLI_SECRET\"'"),
               125, "unset secret must be refused");
  setenv("AN_CLI_SECRET", "hunter2-cli-test", 1);
  cr_assert_eq(an("run --image busybox --secret AN_CLI_SECRET -- sh -c 'echo \"s=$AN_CLI_SECRET\"'"), 0,
               "%s", err_text);
  cr_expect(strstr(out_text, "hunter2") == NULL, "%s", out_text);
  cr_expect(strstr(out_text, "[REDACTED:AN_CLI_SECRET]") != NULL, "%s", out_text);
}

Test(cli, sigint_destroys_the_one_shot_sandbox, .timeout = 120) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "cd '%s' && exec '%s' --root '%s' run --image busybox --name sigint-%d -- sleep 60",
           work, an_bin, root, (int) getpid());
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *) NULL);
    _exit(127);
  }
  /* wait until the sandbox shows up in `ls`, then Ctrl-C */
  char name[64];
  snprintf(name, sizeof name, "sigint-%d", (int) getpid());
  for (int i = 0; i < 600; i++) {
    an("ls");
    if (strstr(out_text, name)) break;
    usleep(50000);
  }
  cr_assert(strstr(out_text, name) != NULL, "the one-shot sandbox never appeared: %s", out_text);
  kill(pid, SIGINT);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGINT, "status %#x", st);
  an("ls");
  cr_expect(strstr(out_text, name) == NULL, "sandbox left after SIGINT: %s", out_text);
}

/* ---- persistent sandboxes ---------------------------------------------------------------- */

static char *create_sandbox(const char *opts) {
  cr_assert_eq(an("create --image busybox %s", opts), 0, "%s", err_text);
  char *id = strdup(out_text);
  chomp(id);
  cr_assert_gt(strlen(id), 0);
  return id;
}

Test(cli, create_exec_ls_inspect_destroy) {
  char name[64];
  snprintf(name, sizeof name, "cli-%d", (int) getpid());
  char opts[100];
  snprintf(opts, sizeof opts, "--name %s", name);
  char *id = create_sandbox(opts);
  cr_expect_eq(an("exec %s -- sh -c 'echo hi; exit 3'", id), 3, "%s", err_text);
  cr_expect_str_eq(out_text, "hi\n");
  cr_expect_eq(an("exec %s --env A=b -- sh -c 'echo $A'", name), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "b\n");
  cr_expect_eq(an("exec %s --workdir /tmp -- pwd", id), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "/tmp\n");
  cr_expect_eq(an("exec %s --json -- echo j", id), 0, "%s", err_text);
  yajl_val v = parse_json(out_text);
  cr_expect_str_eq(jstr(jget(v, "stdout", yajl_t_string)), "j\n");
  yajl_tree_free(v);

  cr_assert_eq(an("ls"), 0);
  cr_expect(strstr(out_text, id) && strstr(out_text, name), "%s", out_text);
  cr_assert_eq(an("ls --json"), 0);
  v = parse_json(out_text);
  cr_expect(YAJL_IS_ARRAY(v));
  cr_expect(strstr(out_text, id) != NULL);
  yajl_tree_free(v);

  cr_assert_eq(an("inspect %s", name), 0, "%s", err_text);
  v = parse_json(out_text);
  cr_expect_str_eq(jstr(jget(v, "id", yajl_t_string)), id);
  yajl_tree_free(v);
  /* one indented document (the options were once spliced in, indented, into one compact line) */
  cr_expect(!strncmp(out_text, "{\n    \"id\": ", 12) && strstr(out_text, "\n    \"options\": {\n        \"image\""),
            "%s", out_text);

  cr_assert_eq(an("events %s", id), 0, "%s", err_text);
  cr_expect(strstr(out_text, "\"created\"") != NULL, "%s", out_text);

  cr_assert_eq(an("destroy %s", id), 0, "%s", err_text);
  cr_expect_eq(an("exec %s -- true", id), 125);
  cr_expect(strstr(err_text, id) != NULL, "%s", err_text);
  cr_expect_eq(an("destroy %s", id), 125, "destroying a gone sandbox is an error naming it");
  free(id);
}

/* New-user trial: 126 said only `exec "/etc/passwd": EACCES`.  Now what
 * failed and why, as runc's "exec /path: permission denied", for each cause. */
Test(cli, not_executable_says_why) {
  cr_expect_eq(an("run --image busybox -- /etc/passwd"), 126, "%s", err_text);
  cr_expect(strstr(err_text, "exec \"/etc/passwd\": permission denied: no execute permission (mode 0644): EACCES"),
            "stderr: %s", err_text);
  cr_expect_eq(an("run --image busybox -- /etc"), 126, "%s", err_text);
  cr_expect(strstr(err_text, "exec \"/etc\": permission denied: is a directory"), "stderr: %s", err_text);
  cr_expect_eq(an("run --image busybox -- /dev/null"), 126, "%s", err_text);
  cr_expect(strstr(err_text, "not a regular file"), "stderr: %s", err_text);
  char *id = create_sandbox("");
  cr_assert_eq(an("exec %s -- sh -c 'printf \"\\177ELFjunk\" > junk; printf \"#!/no/such/sh\\n\" > s;"
                  " mkdir bin; : > bin/tool; chmod +x junk s'", id), 0, "%s", err_text);
  cr_expect_eq(an("exec %s -- ./junk", id), 126, "%s", err_text);
  cr_expect(strstr(err_text, "exec \"./junk\": exec format error") && strstr(err_text, "ENOEXEC"), "stderr: %s", err_text);
  cr_expect_eq(an("exec %s -- ./s", id), 127, "%s", err_text);
  cr_expect(strstr(err_text, "exec \"./s\": its #! interpreter or its ELF loader was not found"), "stderr: %s", err_text);
  /* found in $PATH but not executable: the file it found is named */
  cr_expect_eq(an("exec --env PATH=/workspace/bin:/bin %s -- tool", id), 126, "%s", err_text);
  cr_expect(strstr(err_text, "exec \"tool\": permission denied: /workspace/bin/tool: no execute permission"),
            "stderr: %s", err_text);
  an("destroy %s", id);
  free(id);
}

Test(cli, exec_timeout_leaves_the_sandbox_and_its_files) {
  char *id = create_sandbox("");
  cr_expect_eq(an("exec %s -- sh -c 'echo kept > f'", id), 0, "%s", err_text);
  cr_expect_eq(an("exec %s --timeout 1 -- sh -c 'sleep 60 & sleep 60'", id), 124, "%s", err_text);
  cr_expect_eq(an("exec %s -- cat f", id), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "kept\n");
  an("destroy %s", id);
  free(id);
}

Test(cli, cp_both_ways_and_refusals) {
  char *id = create_sandbox("");
  an_test_sh("echo payload > '%s/h.txt'", work);
  cr_expect_eq(an("cp h.txt %s:h.txt", id), 0, "%s", err_text);
  cr_expect_eq(an("exec %s -- cat h.txt", id), 0);
  cr_expect_str_eq(out_text, "payload\n");
  cr_expect_eq(an("exec %s -- sh -c 'echo back > b.txt; ln -s /etc/passwd link; mkdir d; ln -s /etc d/up'",
                  id), 0);
  cr_expect_eq(an("cp %s:b.txt out.txt", id), 0, "%s", err_text);
  char p[400];
  snprintf(p, sizeof p, "%s/out.txt", work);
  char *t = slurp(p);
  cr_expect_str_eq(t, "back\n");
  free(t);
  /* refusals: .., a symlink as the last component, a symlink in the middle */
  cr_expect_eq(an("cp %s:../../etc/passwd x1", id), 125);
  cr_expect(strstr(err_text, "escapes") != NULL, "%s", err_text);
  cr_expect_eq(an("cp %s:link x2", id), 125);
  cr_expect(strstr(err_text, "link") != NULL, "%s", err_text);
  cr_expect_eq(an("cp %s:d/up/passwd x3", id), 125);
  cr_expect_eq(an("cp h.txt %s:../h.txt", id), 125);
  struct stat st;
  snprintf(p, sizeof p, "%s/x2", work);
  cr_expect_neq(stat(p, &st), 0, "nothing written for a refused copy");
  cr_expect_eq(an("cp a b"), 125);
  /* `-` is not docker cp's tar on stdin/stdout: refused, no file named "-" written or read */
  cr_expect_eq(an("cp %s:b.txt -", id), 125);
  cr_expect(strstr(err_text, "'-'") != NULL, "%s", err_text);
  snprintf(p, sizeof p, "%s/-", work);
  cr_expect_neq(stat(p, &st), 0, "no file named - was written");
  an_test_sh("echo local > '%s/-'", work);
  cr_expect_eq(an("cp - %s:dash.txt </dev/null", id), 125);
  cr_expect_eq(an("exec %s -- test -e dash.txt", id), 1, "nothing copied in");
  cr_expect_eq(an("cp ./- %s:dash.txt", id), 0, "a file named - is ./-: %s", err_text);
  an("destroy %s", id);
  free(id);
}

/* A caller-given command name and workspace path are echoed in the error
 * with control bytes escaped: `exec ID -- $'\e[31mcmd'` and
 * `cp ID:$'out/\e[1mnope' dir` printed the raw ESC before. */
Test(cli, names_in_errors_reach_stderr_without_raw_escapes) {
  char *id = create_sandbox("");
  cr_expect_eq(an("exec %s -- \"$(printf '\\033[31mcmd')\"", id), 127);
  cr_expect(strstr(err_text, "cmd") != NULL, "%s", err_text);
  cr_expect(strchr(err_text, 0x1b) == NULL, "raw ESC in: %s", err_text);
  cr_expect(strstr(err_text, "\\x1b[31mcmd") != NULL, "%s", err_text);
  cr_expect_eq(an("cp \"%s:$(printf 'out/\\033[1mnope')\" .", id), 125);
  cr_expect(strstr(err_text, "nope") != NULL, "%s", err_text);
  cr_expect(strchr(err_text, 0x1b) == NULL, "raw ESC in: %s", err_text);
  an("destroy %s", id);
  free(id);
}

/* Issue 10 item 7: a tree deeper than 256 levels made cp, snapshot and
 * artifacts fail outright.  Now each copies the rest and names what it
 * skipped on stderr. */
Test(cli, deep_tree_is_copied_with_a_warning_naming_what_is_skipped) {
  char *id = create_sandbox("");
  cr_assert_eq(an("exec %s -- sh -c 'd=deep; i=0; while [ $i -lt 300 ]; do d=$d/d; i=$((i+1)); done; "
                  "mkdir -p $d && echo top > top.txt'", id), 0, "%s", err_text);
  cr_expect_eq(an("cp %s:. outdeep", id), 0, "cp: %s", err_text);
  cr_expect(strstr(err_text, "nested deeper than 256 directories"), "cp stderr: %s", err_text);
  char p[400];
  snprintf(p, sizeof p, "%s/outdeep/top.txt", work);
  char *t = slurp(p);
  cr_expect_str_eq(t ? t : "", "top\n");
  free(t);
  cr_expect_eq(an("snapshot %s deep.tar", id), 0, "snapshot: %s", err_text);
  cr_expect(strstr(err_text, "nested deeper than 256 directories"), "snapshot stderr: %s", err_text);
  cr_expect_eq(an("artifacts %s", id), 0, "artifacts: %s", err_text);
  cr_expect(strstr(out_text, "top.txt"), "%s", out_text);
  cr_expect(strstr(err_text, "nested deeper than 256 directories"), "artifacts stderr: %s", err_text);
  an_test_sh("rm -rf '%s/outdeep' '%s/deep.tar'", work, work);
  an("destroy %s", id);
  free(id);
}

Test(cli, snapshot_and_restore) {
  char *id = create_sandbox("");
  cr_assert_eq(an("exec %s -- sh -c 'mkdir -p d; echo one > d/f'", id), 0);
  cr_assert_eq(an("snapshot %s snap.tar", id), 0, "%s", err_text);
  unsigned long long size = 0;
  char sha[80] = "";
  cr_assert_eq(sscanf(out_text, "%llu sha256:%64s", &size, sha), 2, "%s", out_text);
  cr_expect_gt(size, 0);
  cr_expect_eq(strlen(sha), 64);
  cr_assert_eq(an("exec %s -- sh -c 'echo two > d/f; echo new > g'", id), 0);
  cr_expect_eq(an("restore %s snap.tar --sha256 %064d", id, 0), 125, "wrong digest accepted");
  /* said once, naming the sandbox and the file */
  cr_expect(strstr(err_text, "agentnest restore: sandbox ") && strstr(err_text, ": restore: snap.tar: sha256 mismatch") &&
                !strstr(err_text, "restore snap.tar"), "%s", err_text);
  cr_expect(strstr(err_text, "sha256") != NULL, "%s", err_text);
  cr_expect_eq(an("restore %s snap.tar --sha256 %s", id, sha), 0, "%s", err_text);
  cr_expect_eq(an("exec %s -- sh -c 'cat d/f; ls g 2>/dev/null || echo no-g'", id), 0);
  cr_expect_str_eq(out_text, "one\nno-g\n");
  /* `-` is not a tar on stdout/stdin (docker export/import): refused, no file named "-" */
  cr_expect_eq(an("snapshot %s -", id), 125);
  cr_expect(strstr(err_text, "'-'") != NULL, "%s", err_text);
  char p[400];
  struct stat st;
  snprintf(p, sizeof p, "%s/-", work);
  cr_expect_neq(stat(p, &st), 0, "no file named - was written");
  cr_expect_eq(an("restore %s - </dev/null", id), 125);
  cr_expect(strstr(err_text, "'-'") != NULL, "%s", err_text);
  an("destroy %s", id);
  free(id);
}

/* New-user trial: a refused restore named an internal staging directory
 * (".agentnest-restore.<random>") the user never gave; now the sandbox,
 * its workspace and the tar file as given. */
Test(cli, restore_errors_name_the_sandbox_and_the_tar_not_the_staging_directory) {
  char *id = create_sandbox("");
  cr_assert_eq(an("exec %s -- sh -c 'echo keep > f'", id), 0, "%s", err_text);
  char p[400];
  snprintf(p, sizeof p, "%s/junk.tar", work);
  an_test_write_file(p, "this is not a tar\n", 18, 0644);
  cr_expect_eq(an("restore %s junk.tar", id), 125, "%s", err_text);
  cr_expect(strstr(err_text, "agentnest restore: sandbox ") && strstr(err_text, id) &&
                strstr(err_text, ": restore workspace from junk.tar: "), "%s", err_text);
  cr_expect(!strstr(err_text, ".agentnest-restore") && !strstr(err_text, ".restore."),
            "names the staging directory: %s", err_text);
  cr_expect_eq(an("exec %s -- cat f", id), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "keep\n");
  an("destroy %s", id);
  free(id);
}

/* New-user trial: the tar recorded the host's ids (100000+65532), `tar tvf`
 * showed strangers; restored directories got the restore's time; and
 * `snapshot ID .` said EBUSY.  Now: the sandbox's own ids, the tar's
 * directory mtimes, and a clear refusal of a directory target. */
Test(cli, snapshot_records_sandbox_ids_and_restore_keeps_directory_mtimes) {
  char *id = create_sandbox("");
  cr_assert_eq(an("exec %s -- sh -c 'mkdir -p d/e; echo x > d/e/f; touch -d @1000000000 d/e d'", id), 0, "%s",
               err_text);
  cr_assert_eq(an("snapshot %s snap.tar", id), 0, "%s", err_text);
  cr_assert_eq(an_test_sh("cd '%s' && tar --numeric-owner -tvf snap.tar | awk '{print $2}' | sort -u > list",
                          work), 0);
  char p[400];
  snprintf(p, sizeof p, "%s/list", work);
  char *list = an_test_read_file(p, NULL);
  cr_assert_not_null(list);
  cr_expect_str_eq(list, "65532/65532\n");
  free(list);
  cr_assert_eq(an("exec %s -- sh -c 'rm -r d'", id), 0);
  cr_assert_eq(an("restore %s snap.tar", id), 0, "%s", err_text);
  cr_assert_eq(an("exec %s -- stat -c '%%n %%Y' d d/e", id), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "d 1000000000\nd/e 1000000000\n");
  cr_expect_eq(an("snapshot %s .", id), 125);
  cr_expect(strstr(err_text, "is a directory"), "%s", err_text);
  an("destroy %s", id);
  free(id);
}

Test(cli, artifacts_list_size_and_host_sha256) {
  char *id = create_sandbox("");
  cr_assert_eq(an("exec %s -- sh -c 'mkdir -p a/b; printf abc > a/b/x.txt; echo z > y.bin; ln -s /etc/passwd a/l.txt'",
                  id), 0);
  cr_assert_eq(an("artifacts %s '**/*.txt' --json", id), 0, "%s", err_text);
  yajl_val v = parse_json(out_text);
  cr_assert(YAJL_IS_ARRAY(v));
  bool seen = false;
  for (size_t i = 0; i < YAJL_GET_ARRAY(v)->len; i++) {
    yajl_val it = YAJL_GET_ARRAY(v)->values[i];
    const char *path = jstr(jget(it, "path", yajl_t_string));
    cr_expect(strcmp(path, "y.bin") != 0);
    if (!strcmp(path, "a/b/x.txt")) {
      seen = true;
      cr_expect_str_eq(jstr(jget(it, "sha256", yajl_t_string)),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
      cr_expect_eq(YAJL_GET_INTEGER(jget(it, "size", yajl_t_number)), 3);
    }
    if (!strcmp(path, "a/l.txt")) cr_expect_str_eq(jstr(jget(it, "type", yajl_t_string)), "symlink");
  }
  cr_expect(seen, "%s", out_text);
  yajl_tree_free(v);
  /* the plain listing quotes what the sandbox chose: no escape sequence or
   * forged line reaches the terminal */
  cr_assert_eq(an("exec %s -- sh -c 'ln -s \"$(printf \"x\\n\\033[2Jforged\")\" a/e.txt'", id), 0, "%s",
               err_text);
  cr_assert_eq(an("artifacts %s '**/*.txt'", id), 0, "%s", err_text);
  cr_expect(!strchr(out_text, '\033'), "raw ESC in listing: %s", out_text);
  cr_expect(strstr(out_text, "a/e.txt -> x\\x0a\\x1b[2Jforged\n"), "%s", out_text);
  cr_expect_eq(an("artifacts %s 'a/**' --to outdir", id), 0, "%s", err_text);
  char p[400];
  snprintf(p, sizeof p, "%s/outdir/a/b/x.txt", work);
  char *t = slurp(p);
  cr_expect_str_eq(t, "abc");
  free(t);
  cr_expect_eq(an("artifacts %s '../**'", id), 125);
  an("destroy %s", id);
  free(id);
}

Test(cli, fork_copies_the_workspace_into_a_new_sandbox) {
  char *id = create_sandbox("");
  cr_assert_eq(an("exec %s -- sh -c 'echo original > f'", id), 0);
  cr_assert_eq(an("fork %s", id), 0, "%s", err_text);
  char *copy = strdup(out_text);
  chomp(copy);
  cr_expect_str_neq(copy, id);
  cr_expect_eq(an("exec %s -- cat f", copy), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "original\n");
  cr_expect_eq(an("exec %s -- sh -c 'echo changed > f'", copy), 0);
  cr_expect_eq(an("exec %s -- cat f", id), 0);
  cr_expect_str_eq(out_text, "original\n");
  an("destroy %s %s", id, copy);
  free(copy);
  free(id);
}

Test(cli, prune_prints_json) {
  cr_assert_eq(an("prune"), 0, "%s", err_text);
  yajl_val v = parse_json(out_text);
  cr_expect_not_null(jget(v, "removed", yajl_t_array), "%s", out_text);
  yajl_tree_free(v);
}

Test(cli, doctor_prints_json_with_a_verdict) {
  int rc = an("doctor");
  yajl_val v = parse_json(out_text);
  yajl_val ok = jget(v, "ok", yajl_t_any);
  cr_assert(ok && (YAJL_IS_TRUE(ok) || YAJL_IS_FALSE(ok)), "%s", out_text);
  cr_expect_eq(rc, YAJL_IS_TRUE(ok) ? 0 : 1);
  cr_expect_not_null(jget(v, "kernel", yajl_t_object));
  cr_expect_not_null(jget(v, "cgroup", yajl_t_object));
  const char *lp[] = {"landlock", "abi", NULL};
  cr_expect_not_null(yajl_tree_get(v, lp, yajl_t_number));
  const char *ip[] = {"image_store", "images", NULL};
  cr_expect_geq(YAJL_GET_INTEGER(yajl_tree_get(v, ip, yajl_t_number)), 2);
  yajl_tree_free(v);
}

Test(cli, demo_runs_every_step, .timeout = 300) {
  cr_expect_eq(an("demo"), 0, "%s\n%s", out_text, err_text);
  cr_expect(strstr(out_text, "ENETUNREACH") != NULL, "%s", out_text);
  cr_expect(strstr(out_text, "[REDACTED:DEMO_TOKEN]") != NULL, "%s", out_text);
}

Test(cli, loopback_is_up_and_everything_else_unreachable) {
  cr_assert_eq(an("python \"import socket\n"
                  "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
                  "c = socket.create_connection(s.getsockname()); print('lo ok')\n"
                  "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                  "try:\n    u.connect(('10.255.255.1', 9)); print('reachable')\n"
                  "except OSError as e:\n    print('errno', e.errno)\n\""),
               0, "%s", err_text);
  cr_expect_str_eq(out_text, "lo ok\nerrno 101\n");  /* ENETUNREACH: nothing is sent */
}

/* image rm of an image a sandbox uses is refused, naming the sandbox; with
 * --force it goes, and exec then fails with 125 naming the image (it used
 * to delete it and exec failed inside: "process.cwd /workspace: ENOENT",
 * status 127).  Uses a store of its own: the shared one's images stay. */
Test(cli, image_rm_refuses_an_image_in_use) {
  char saved[sizeof root];
  snprintf(saved, sizeof saved, "%s", root);
  snprintf(root, sizeof root, "/tmp/an-cli-rm-%d", (int) getpid());
  cr_assert(mkdir(root, 0711) == 0 || errno == EEXIST);
  import_image("busybox");
  char *id = create_sandbox("");
  cr_expect_eq(an("image rm busybox"), 125, "in-use image removed: %s", err_text);
  cr_expect(strstr(err_text, id) && strstr(err_text, "in use"), "%s", err_text);
  /* prefixed as every command, naming the image and what to do (new-user trial) */
  cr_expect(!strncmp(err_text, "agentnest image rm: image busybox: in use by sandbox ", 53) &&
                strstr(err_text, "destroy it first, or remove it anyway with --force"), "%s", err_text);
  cr_expect_eq(an("exec %s -- true", id), 0, "%s", err_text);
  cr_expect_eq(an("image rm --force busybox"), 0, "%s", err_text);
  cr_expect_eq(an("exec %s -- true", id), 125, "%s", err_text);
  cr_expect(strstr(err_text, "image busybox") && strstr(err_text, "removed"), "%s", err_text);
  cr_expect_eq(an("destroy %s", id), 0, "%s", err_text);
  free(id);
  an_test_store_remove(root);   /* waits for the reaper destroy left working */
  snprintf(root, sizeof root, "%s", saved);
}

/* New-user trial: `image` errors said "agentnest: ..." (import: getopt's own
 * "import: unrecognized option", and the whole usage text), where every
 * other command says "agentnest CMD: ..." and "Try 'agentnest CMD --help'.";
 * rm and inspect of an unknown image told the user to import it. */
Test(cli, image_errors_are_prefixed_as_every_other_command) {
  const char *cases[][2] = {
      {"image rm no-such-image", "agentnest image rm: image no-such-image: no such image in the image store "},
      {"image inspect no-such-image", "agentnest image inspect: image no-such-image: no such image in the image store "},
      {"image rm --force no-such-image", "agentnest image rm: image no-such-image: no such image"},
      {"image import /no/such/src", "agentnest image import /no/such/src: open /no/such/src: ENOENT"},
      {"image import --bogus", "agentnest image import: unknown option '--bogus'\nTry 'agentnest image import --help'.\n"},
      {"image ls --bogus", "agentnest image ls: unknown option '--bogus'\nTry 'agentnest image ls --help'.\n"},
      {"image rm", "agentnest image rm: expected exactly one NAME\nTry 'agentnest image rm --help'.\n"},
      {"image frob", "agentnest image: unknown command 'frob'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    cr_expect_eq(an("%s", cases[i][0]), 125, "%s", cases[i][0]);
    cr_expect(!strncmp(err_text, cases[i][1], strlen(cases[i][1])), "%s:\n%s\nwant: %s", cases[i][0], err_text,
              cases[i][1]);
    cr_expect(!strstr(err_text, "import it first") && !strstr(err_text, "Usage:"), "%s: %s", cases[i][0], err_text);
  }
}

/* A variable the CLI takes a path from that names nothing usable is refused
 * naming the variable (since the library context it said only
 * "agentnest-init /nonexistent/...: ENOENT", and for profiles the file it
 * failed to open inside the directory). */
Test(cli, a_bad_path_in_the_environment_is_refused_naming_the_variable) {
  static const char *const vars[][2] = {{"AGENTNEST_INIT", "/nonexistent/agentnest-init"},
                                         {"AGENTNEST_PROFILES", "/nonexistent/profiles"}};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *old = getenv(vars[i][0]);
    char *saved = old ? strdup(old) : NULL;
    setenv(vars[i][0], vars[i][1], 1);
    int st = an("run --image busybox -- true");
    if (saved) setenv(vars[i][0], saved, 1);
    else unsetenv(vars[i][0]);
    free(saved);
    char want[128];
    snprintf(want, sizeof want, "$%s=%s", vars[i][0], vars[i][1]);
    cr_expect_eq(st, 125, "%s", err_text);
    cr_expect(strstr(err_text, want) != NULL, "the error does not name %s: %s", vars[i][0], err_text);
  }
}

/* As non-root, create, run and image commands say that host root is needed
 * (as doctor does) instead of a wrong cause ("image python: not found in the
 * image store": the 0700 store reads as empty to other users). */
Test(cli, non_root_is_told_it_needs_root) {
  const char *cmds[] = {"run -- true", "create --image busybox", "image ls", "image rm busybox"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char *cmd = NULL;
    cr_assert_geq(asprintf(&cmd, "cd / && setpriv --reuid 65534 --regid 65534 --clear-groups '%s' --root '%s' %s"
                                 " >/dev/null 2>'%s'", an_bin, root, cmds[i], err_path), 0);
    int st = system(cmd);
    free(cmd);
    free(err_text);
    err_text = slurp(err_path);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 125, "%s: status %#x", cmds[i], st);
    cr_expect(strstr(err_text, "run agentnest as root") && !strstr(err_text, "not found"), "%s: %s",
              cmds[i], err_text);
  }
}

/* Every key of the prune report (top level and of a removed entry) is the
 * one prune --help and agentnest(1) name (they said "cgroups" and left out
 * "containers"/"tombstones").  A store of its own: prune --all there. */
Test(cli, prune_json_keys_are_the_documented_ones) {
  char saved[sizeof root];
  snprintf(saved, sizeof saved, "%s", root);
  snprintf(root, sizeof root, "/tmp/an-cli-prune-%d", (int) getpid());
  cr_assert(mkdir(root, 0711) == 0 || errno == EEXIST);
  import_image("busybox");
  free(create_sandbox(""));
  cr_assert_eq(an("prune --all"), 0, "%s", err_text);
  yajl_val v = parse_json(out_text);
  cr_assert_eq(an("prune --help"), 0);
  char *help = strdup(out_text);
  const char *src = getenv("AN_TEST_SRC");
  char man[4096];
  snprintf(man, sizeof man, "%s/man/agentnest.1", src && *src ? src : ".");
  char *mantext = an_test_read_file(man, NULL);
  cr_assert_not_null(mantext);
  const char *prune_at = strstr(mantext, ".B prune");
  cr_assert_not_null(prune_at);
  yajl_val removed = jget(v, "removed", yajl_t_array);
  cr_assert(removed && removed->u.array.len == 1, "%s", out_text);
  yajl_val objs[2] = {v, removed->u.array.values[0]};
  for (int o = 0; o < 2; o++)
    for (size_t i = 0; i < objs[o]->u.object.len; i++) {
      char q[64];
      snprintf(q, sizeof q, "\"%s\"", objs[o]->u.object.keys[i]);
      cr_expect(strstr(help, q), "prune --help does not name %s: %s", q, help);
      cr_expect(strstr(prune_at, q), "agentnest(1) prune does not name %s", q);
    }
  cr_expect(!strstr(help, "\"cgroups\""), "%s", help);
  yajl_tree_free(v);
  free(help);
  free(mantext);
  an_test_rm_tree(root);
  snprintf(root, sizeof root, "%s", saved);
}

/* inspect takes its option after the ID as other commands do (it said
 * "expected one sandbox ID"); --root without DIR says it needs one (it said
 * "unknown global option '--root'"). */
Test(cli, inspect_option_after_id_and_root_without_dir) {
  char *id = create_sandbox("");
  cr_expect_eq(an("inspect %s --policy", id), 0, "%s", err_text);
  yajl_val v = parse_json(out_text);
  cr_expect_not_null(jget(v, "seccomp", yajl_t_object), "not the policy: %s", out_text);
  yajl_tree_free(v);
  cr_expect_eq(an("destroy %s", id), 0, "%s", err_text);
  free(id);
  char *cmd = NULL;
  cr_assert_geq(asprintf(&cmd, "'%s' --root >/dev/null 2>'%s'", an_bin, err_path), 0);
  int st = system(cmd);
  free(cmd);
  free(err_text);
  err_text = slurp(err_path);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 125, "status %#x", st);
  cr_expect(strstr(err_text, "'--root' needs an argument") && !strstr(err_text, "unknown"), "%s", err_text);
}

/* image import into a store under a directory others cannot search is
 * refused with create's message (it imported, and every create then
 * failed). */
Test(cli, image_import_refuses_a_store_sandboxes_cannot_reach) {
  char dir[200], lay[300];
  snprintf(lay, sizeof lay, CACHE "/busybox/layout");
  struct stat st;
  if (stat(lay, &st) != 0) cr_skip_test("no busybox image in " CACHE);
  snprintf(dir, sizeof dir, "/tmp/an-cli-0700-%d", (int) getpid());
  cr_assert(mkdir(dir, 0700) == 0, "%s", strerror(errno));
  chmod(dir, 0700);
  char saved[sizeof root];
  snprintf(saved, sizeof saved, "%s", root);
  snprintf(root, sizeof root, "%s/store", dir);
  int rc = an("image import '%s' --name busybox", lay);
  snprintf(root, sizeof root, "%s", saved);
  cr_expect_eq(rc, 125, "imported into an unreachable store: %s", err_text);
  cr_expect(strstr(err_text, "must be able to search it") && strstr(err_text, dir), "%s", err_text);
  an_test_rm_tree(dir);
}

/* ls and its docs agree on expiry: an expired sandbox is removed by its
 * monitor and no longer listed (ls --help once implied it stays listed as
 * "expired"), while exec on its id says "expired". */
Test(cli, expired_sandbox_leaves_ls_as_documented) {
  char *id = create_sandbox("--timeout 1s");
  bool gone = false;
  for (int i = 0; i < 300 && !gone; i++) {
    cr_assert_eq(an("ls"), 0, "%s", err_text);
    gone = strstr(out_text, id) == NULL;
    if (!gone) usleep(100 * 1000);
  }
  cr_expect(gone, "expired sandbox still listed: %s", out_text);
  cr_expect_eq(an("exec %s -- true", id), 125);
  cr_expect(strstr(err_text, "expired"), "%s", err_text);
  cr_assert_eq(an("ls --help"), 0);
  cr_expect(strstr(out_text, "no longer listed"), "ls --help does not say expired sandboxes leave the list: %s",
            out_text);
  free(id);
}

/* New-user trial: `create --json` was refused (only the global `--json create` worked), unlike
 * every other command that prints JSON. */
Test(cli, create_takes_json_after_the_command) {
  cr_assert_eq(an("create --json --image busybox"), 0, "%s", err_text);
  yajl_val v = parse_json(out_text);
  const char *id = jstr(jget(v, "id", yajl_t_string));
  cr_expect_eq(strlen(id), 12, "%s", out_text);
  cr_expect(YAJL_IS_FALSE(jget(v, "pooled", yajl_t_any)), "%s", out_text);
  char copy[32];
  snprintf(copy, sizeof copy, "%s", id);
  yajl_tree_free(v);
  cr_expect_eq(an("destroy %s", copy), 0, "%s", err_text);
}
