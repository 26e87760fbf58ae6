/* tests/integration/presets_test.c — the presets' workflows end to end
 * (issue 16 items 1-3), black-box through the built agentnest binary with
 * the images `make images` builds (AN_IMAGE_CACHE; a test skips, saying
 * so, when its image is missing):
 *   pip      the python image: `pip install` of a wheel the test makes
 *            inside (zipfile) lands in /workspace/.local; `python3 -m venv
 *            /workspace/venv` works and its pip installs into the venv.
 *   git      the git profile (debian): a clone over file:// of a bare repo
 *            the host made, changed inside; `agentnest git diff` returns a
 *            patch that `git apply --index` on the host turns into the same
 *            tree; the token reaches git only through the askpass helper
 *            from --secret, redacted, never the host's ~/.gitconfig; a
 *            hostile repository's fsmonitor, pager, external diff,
 *            textconv and hooks run neither on the host nor for the diff.
 *   browser  the browser profile: Playwright opens a page served inside,
 *            fills a form, clicks, screenshots to /workspace (with the
 *            profile's 512 MiB /dev/shm, no --disable-dev-shm-usage); the PNG,
 *            fetched as an artifact, is decoded on the host (python3's zlib
 *            as uid 65534) and a pixel has the marker colour.
 * The workflows that need the egress allowlist (pip from a package index,
 * git clone over HTTPS) are in net_internet_test.c, which builds the fake
 * internet they need (pip_install_from_an_allowlisted_index,
 * git_clone_over_https_through_the_allowlist).
 * State root per runner /tmp/an-presets-<runner pid>. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "rm_tree.h"
#include "util.h"

static char an_bin[4096];
static char root[256];   /* shared state root of this run */
static char work[256];   /* this test's scratch dir */
static char out_path[300], err_path[300];
static char *out_text, *err_text;

static char *slurp(const char *path) {
  size_t len = 0;
  struct stat st;
  if (stat(path, &st) != 0) return strdup("");
  char *s = an_test_read_file(path, &len);
  return s ? s : strdup("");
}

/* Run `ENV agentnest --root ROOT ARGS` in the work dir; stdout and stderr
 * into out_text/err_text; returns the exit status. */
static int an_env(const char *env, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int an_env(const char *env, const char *fmt, ...) {
  char *args = NULL, *cmd = NULL;
  va_list ap;
  va_start(ap, fmt);
  cr_assert_geq(vasprintf(&args, fmt, ap), 0);
  va_end(ap);
  cr_assert_geq(asprintf(&cmd, "cd '%s' && %s '%s' --root '%s' %s >'%s' 2>'%s'", work, env ? env : "",
                         an_bin, root, args, out_path, err_path), 0);
  int st = system(cmd);
  free(args);
  free(cmd);
  free(out_text);
  free(err_text);
  out_text = slurp(out_path);
  err_text = slurp(err_path);
  cr_assert(WIFEXITED(st), "sh did not exit");
  return WEXITSTATUS(st);
}
#define an(...) an_env(NULL, __VA_ARGS__)

/* Import NAME from the image cache once per run (skips the test without it). */
static void import_image(const char *name) {
  const char *cache = getenv("AN_IMAGE_CACHE");
  char lay[512], stamp[400];
  snprintf(lay, sizeof lay, "%s/%s/layout", cache && *cache ? cache : "/var/cache/agentnest/images", name);
  struct stat st;
  if (stat(lay, &st) != 0) cr_skip_test("no %s image at %s (make images)", name, lay);
  snprintf(stamp, sizeof stamp, "%s/.imported-%s", root, name);
  if (stat(stamp, &st) == 0) return;
  cr_assert_eq(an("image import '%s' --name %s", lay, name), 0, "import %s: %s", name, err_text);
  an_test_write_file(stamp, "", 0, 0644);
}

/* Write work/NAME (mode 0644, readable by the sandbox copy and by uid 65532). */
static void write_work_file(const char *name, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", work, name);
  an_test_write_file(p, text, strlen(text), 0644);
}

/* `agentnest create ARGS`: the new sandbox's id (static buffer). */
static const char *create(const char *args) {
  static char id[64];
  cr_assert_eq(an("create %s", args), 0, "create %s: %s", args, err_text);
  snprintf(id, sizeof id, "%.*s", (int) strcspn(out_text, "\n"), out_text);
  cr_assert(id[0], "create printed no id");
  return id;
}

static void setup(void) {
  const char *b = getenv("AN_TEST_BUILD");
  char rel[4096];
  snprintf(rel, sizeof rel, "%s/agentnest", b && *b ? b : "./build");
  cr_assert_not_null(realpath(rel, an_bin), "agentnest not built at %s", rel);
  const char *src = getenv("AN_TEST_SRC");
  char prof[4096], real[4096];
  snprintf(prof, sizeof prof, "%s/profiles", src && *src ? src : ".");
  if (realpath(prof, real)) setenv("AGENTNEST_PROFILES", real, 1);
  snprintf(root, sizeof root, "/tmp/an-presets-%d", (int) getppid());
  mkdir(root, 0755);
  snprintf(work, sizeof work, "/tmp/an-presets-%d-%d", (int) getppid(), (int) getpid());
  cr_assert(mkdir(work, 0755) == 0 || errno == EEXIST);
  cr_assert_eq(chmod(work, 0755), 0);
  snprintf(out_path, sizeof out_path, "%s/.out", work);
  snprintf(err_path, sizeof err_path, "%s/.err", work);
}

static void teardown(void) {
  free(out_text);
  free(err_text);
  out_text = err_text = NULL;
  an_test_rm_tree(work);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  char r[256];
  snprintf(r, sizeof r, "/tmp/an-presets-%d", (int) getpid());
  struct stat st;
  if (stat(r, &st) != 0) return;
  const char *b = getenv("AN_TEST_BUILD");
  char rel[4096], bin[4096];
  snprintf(rel, sizeof rel, "%s/agentnest", b && *b ? b : "./build");
  if (realpath(rel, bin)) an_test_sh("'%s' --root '%s' prune --all >/dev/null 2>&1", bin, r);
  an_test_rm_tree(r);
}

/* ---- pip ------------------------------------------------------------------------------------ */

TestSuite(presets_pip, .init = setup, .fini = teardown, .timeout = 300);

/* A pure-Python wheel made with zipfile (PEP 427: METADATA, WHEEL, RECORD
 * with urlsafe-base64 sha256 digests), in /workspace/wheels. */
static const char MAKE_WHEEL_PY[] =
    "import base64, hashlib, os, zipfile\n"
    "os.makedirs('/workspace/wheels', exist_ok=True)\n"
    "files = {\n"
    "    'anpkg/__init__.py': b'MARK = \"an-pip-ok\"\\n',\n"
    "    'anpkg-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\\nName: anpkg\\nVersion: 1.0\\n',\n"
    "    'anpkg-1.0.dist-info/WHEEL': b'Wheel-Version: 1.0\\nGenerator: agentnest-test\\n'\n"
    "                                 b'Root-Is-Purelib: true\\nTag: py3-none-any\\n',\n"
    "}\n"
    "def digest(b):\n"
    "    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()\n"
    "record = ''.join('%s,%s,%d\\n' % (n, digest(b), len(b)) for n, b in files.items())\n"
    "record += 'anpkg-1.0.dist-info/RECORD,,\\n'\n"
    "with zipfile.ZipFile('/workspace/wheels/anpkg-1.0-py3-none-any.whl', 'w') as z:\n"
    "    for n, b in files.items():\n"
    "        z.writestr(n, b)\n"
    "    z.writestr('anpkg-1.0.dist-info/RECORD', record)\n";

Test(presets_pip, pip_install_of_a_local_wheel_goes_to_the_workspace) {
  import_image("python");
  write_work_file("make_wheel.py", MAKE_WHEEL_PY);
  int rc = an("run --profile python --put make_wheel.py -- sh -c '"
              "python3 make_wheel.py && pip install --no-index --find-links /workspace/wheels anpkg && "
              "python3 -c \"import anpkg; print(anpkg.MARK, anpkg.__file__)\" && "
              "if ls -d /usr/lib/python3*/*-packages/anpkg* /usr/local/lib/python3*/*-packages/anpkg* 2>/dev/null; "
              "then echo IN-ROOT; fi'");
  cr_assert_eq(rc, 0, "rc %d: %s%s", rc, out_text, err_text);
  cr_expect(strstr(out_text, "an-pip-ok /workspace/.local/lib/python3.11/site-packages/anpkg/__init__.py"),
            "not installed into PYTHONUSERBASE=/workspace/.local: %s%s", out_text, err_text);
  cr_expect(!strstr(out_text, "IN-ROOT"), "pip wrote into the root: %s", out_text);
}

Test(presets_pip, venv_in_the_workspace_installs_a_local_wheel) {
  import_image("python");
  write_work_file("make_wheel.py", MAKE_WHEEL_PY);
  int rc = an("run --profile python --put make_wheel.py -- sh -c '"
              "python3 make_wheel.py && python3 -m venv /workspace/venv && "
              "/workspace/venv/bin/pip install --no-index --find-links /workspace/wheels anpkg && "
              "/workspace/venv/bin/python -c \"import anpkg, sys; print(anpkg.MARK, anpkg.__file__, sys.prefix)\"'");
  cr_assert_eq(rc, 0, "rc %d: %s%s", rc, out_text, err_text);
  cr_expect(strstr(out_text, "an-pip-ok /workspace/venv/lib/python3.11/site-packages/anpkg/__init__.py "
                             "/workspace/venv\n"),
            "not installed into the venv: %s%s", out_text, err_text);
}

/* ---- git ------------------------------------------------------------------------------------ */

TestSuite(presets_git, .init = setup, .fini = teardown, .timeout = 300);

/* git on the host, on host-made repositories only, without the caller's config. */
#define HOST_GIT "env -u GIT_DIR HOME='%s' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null " \
                 "git -c user.name=host -c user.email=host@test.invalid"

/* work/base: a repository with a commit; work/origin.git: its bare clone. */
static void make_host_repo(void) {
  int rc = an_test_sh(
      "cd '%s' && " HOST_GIT " init -q base && cd base && printf 'line1\\n' > a.txt && "
      "printf 'keep\\n' > gone.txt && mkdir d && printf 'x\\n' > d/x.txt && " HOST_GIT " add -A && "
      HOST_GIT " commit -qm base && cd .. && " HOST_GIT " clone -q --bare base origin.git",
      work, work, work, work, work);
  cr_assert_eq(rc, 0, "host repository setup failed");
}

Test(presets_git, git_diff_patch_applies_on_the_host_and_recreates_the_change) {
  import_image("debian");
  make_host_repo();
  const char *id = create("--profile git");
  cr_assert_eq(an("cp '%s/origin.git' %s:origin.git", work, id), 0, "cp: %s", err_text);
  write_work_file("change.sh",
                  "set -e\n"
                  "git clone -q file:///workspace/origin.git repo\n"
                  "cd repo\n"
                  "printf 'line2\\n' >> a.txt\n"          /* modified */
                  "git rm -q gone.txt\n"                   /* deleted, staged */
                  "printf 'new\\n' > d/new.txt\n"
                  "git add d/new.txt\n"                    /* new, staged */
                  "printf 'untracked\\n' > u.txt\n"        /* new, not staged */
                  "printf '\\000\\001\\002\\377' > bin.dat\n" /* binary */
                  "chmod +x d/x.txt\n"                     /* mode change */
                  "printf '*.log\\n' > .gitignore\n"
                  "printf 'ignored\\n' > junk.log\n");     /* ignored: not in the patch */
  cr_assert_eq(an("cp change.sh %s:change.sh", id), 0, "%s", err_text);
  cr_assert_eq(an("exec %s -- sh change.sh", id), 0, "change: %s%s", out_text, err_text);
  cr_assert_eq(an("git diff %s --path repo --to '%s/p.patch'", id, work), 0, "git diff: %s", err_text);
  char pp[400];
  snprintf(pp, sizeof pp, "%s/p.patch", work);
  char *patch = slurp(pp);
  cr_expect(strstr(patch, "diff --git a/a.txt b/a.txt") && strstr(patch, "+line2") &&
                strstr(patch, "GIT binary patch") && strstr(patch, "deleted file mode") &&
                strstr(patch, "b/u.txt") && !strstr(patch, "junk.log"),
            "patch: %s", patch);
  free(patch);
  /* the tree git makes inside from the work tree (the repo's own index is
   * still the clone's: the diff used a temporary one) ... */
  cr_assert_eq(an("exec %s --workdir /workspace/repo -- sh -c 'git status --porcelain; git add -A && git write-tree'", id),
               0, "%s", err_text);
  cr_expect(strstr(out_text, " M a.txt\n") && strstr(out_text, "?? u.txt\n"),
            "the diff changed the repository's index: %s", out_text);
  size_t olen = strlen(out_text);
  cr_assert_geq(olen, 41, "no tree id: %s", out_text);
  char inside[64];
  snprintf(inside, sizeof inside, "%.40s", out_text + olen - 41);   /* the last line: 40 hex + \n */
  /* ... equals the host's after `git apply --index` of the patch */
  cr_assert_eq(an_test_sh("cd '%s/base' && " HOST_GIT " apply --index ../p.patch && " HOST_GIT
                          " add -A && " HOST_GIT " write-tree > ../host.tree",
                          work, work, work, work),
               0, "git apply on the host failed");
  char tp[400];
  snprintf(tp, sizeof tp, "%s/host.tree", work);
  char *host_tree = slurp(tp);
  cr_expect(strncmp(host_tree, inside, 40) == 0, "tree on the host %s != inside %s", host_tree, inside);
  free(host_tree);
  cr_expect_eq(an_test_sh("test -x '%s/base/d/x.txt' && test ! -e '%s/base/gone.txt' && "
                          "test ! -e '%s/base/junk.log' && printf '\\000\\001\\002\\377' | cmp -s - '%s/base/bin.dat'",
                          work, work, work, work),
               0, "the applied change differs");
  an("destroy %s", id);
}

Test(presets_git, token_reaches_git_only_through_askpass_and_is_redacted) {
  import_image("debian");
  /* a host ~/.gitconfig with a credential helper: the sandbox must not use it */
  char home[400];
  snprintf(home, sizeof home, "%s/home", work);
  an_test_mkdirs(home);
  write_work_file("home/.gitconfig", "[credential]\n\thelper = \"!f() { echo password=HOSTLEAK; }; f\"\n");
  write_work_file("fill.sh",
                  "printf 'protocol=https\\nhost=example.invalid\\n\\n' | git credential fill\n"
                  "echo status=$?\n"
                  "echo env=$GIT_TOKEN\n"
                  "ls -A /home/agent; echo home-listed\n");
  const char *token = "tok-an-presets-0123456789";
  char env[600];
  snprintf(env, sizeof env, "HOME='%s' GIT_TOKEN='%s'", home, token);
  int rc = an_env(env, "run --profile git --secret GIT_TOKEN --put fill.sh -- sh fill.sh");
  cr_assert_eq(rc, 0, "rc %d: %s%s", rc, out_text, err_text);
  cr_expect(strstr(out_text, "username=x-access-token\n") && strstr(out_text, "password=[REDACTED:GIT_TOKEN]\n") &&
                strstr(out_text, "status=0\n") && strstr(out_text, "env=[REDACTED:GIT_TOKEN]\n"),
            "askpass answer: %s%s", out_text, err_text);
  cr_expect(!strstr(out_text, token) && !strstr(err_text, token), "token in clear: %s%s", out_text, err_text);
  cr_expect(!strstr(out_text, "HOSTLEAK"), "the host's ~/.gitconfig reached the sandbox: %s", out_text);
  cr_expect(strstr(out_text, "\nhome-listed\n") || strncmp(out_text, "home-listed", 11) == 0 ||
                strstr(out_text, "]\nhome-listed\n"),
            "the sandbox's home is not empty: %s", out_text);
  /* without the secret, the helper refuses (git gets no password) */
  rc = an_env(env, "run --profile git --put fill.sh -- sh fill.sh");
  cr_expect(strstr(err_text, "no GIT_TOKEN in the sandbox") && !strstr(out_text, "status=0\n"),
            "without --secret: %s%s", out_text, err_text);
}

/* Each value touches a marker in /workspace (inside) and in the host's work
 * dir (which exists only on the host): neither may appear. */
#define PWN(name) "touch /workspace/PWNED-" name " %s/PWNED-" name " 2>/dev/null; "

Test(presets_git, hostile_repo_config_and_hooks_run_neither_on_the_host_nor_for_the_diff) {
  import_image("debian");
  const char *id = create("--profile git");
  char script[4096];
  snprintf(script, sizeof script,
           "set -e\n"
           "git init -q repo && cd repo\n"
           "printf 'a\\n' > a.txt && printf 't\\n' > t.txt && git add -A && git commit -qm init\n"
           "git config core.fsmonitor '" PWN("fsmonitor") "true'\n"
           "git config core.pager '" PWN("pager") "cat'\n"
           "git config diff.external '" PWN("external") "echo EXTERNAL-DIFF'\n"
           "git config diff.evil.textconv '" PWN("textconv") "echo TEXTCONV'\n"
           "git config core.sshCommand '" PWN("ssh") "true'\n"
           "printf '*.txt diff=evil\\n' > .gitattributes\n"
           "for h in post-index-change pre-commit post-checkout reference-transaction; do\n"
           "  printf '#!/bin/sh\\n" PWN("hook") "\\n' > .git/hooks/$h; chmod +x .git/hooks/$h\n"
           "done\n"
           "printf 'hostile change\\n' >> a.txt\n",
           work, work, work, work, work, work);
  write_work_file("hostile.sh", script);
  cr_assert_eq(an("cp hostile.sh %s:hostile.sh", id), 0, "%s", err_text);
  cr_assert_eq(an("exec %s -- sh hostile.sh", id), 0, "%s%s", out_text, err_text);
  cr_assert_eq(an("git diff %s --path repo", id), 0, "git diff: %s", err_text);
  cr_expect(strstr(out_text, "diff --git a/a.txt b/a.txt") && strstr(out_text, "+hostile change") &&
                !strstr(out_text, "EXTERNAL-DIFF") && !strstr(out_text, "TEXTCONV"),
            "not a plain git patch: %s", out_text);
  cr_expect_eq(an_test_sh("ls '%s'/PWNED-* >/dev/null 2>&1", work), 2, "a repository command ran on the host");
  cr_assert_eq(an("exec %s -- sh -c 'ls /workspace | grep PWNED; true'", id), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "", "the diff ran the repository's programs: %s", out_text);
  /* the trap is armed: plain git in the sandbox does run them */
  an("exec %s --workdir /workspace/repo -- sh -c 'git status >/dev/null; git diff >/dev/null; ls /workspace | grep PWNED'", id);
  cr_expect(strstr(out_text, "PWNED-fsmonitor") && strstr(out_text, "PWNED-external"),
            "control: plain git did not run them either, so the check proves nothing: %s", out_text);
  cr_expect_eq(an_test_sh("ls '%s'/PWNED-* >/dev/null 2>&1", work), 2, "a repository command ran on the host");
  an("destroy %s", id);
}

Test(presets_git, git_diff_errors_name_the_cause) {
  import_image("debian");
  import_image("python");
  const char *id = create("--profile git");
  char idc[64];
  snprintf(idc, sizeof idc, "%s", id);
  cr_assert_eq(an("exec %s -- mkdir plain", idc), 0, "%s", err_text);
  cr_expect_eq(an("git diff %s --path plain", idc), 125);
  cr_expect(strstr(err_text, "not in a git work tree: /workspace/plain"), "%s", err_text);
  cr_expect_eq(an("git diff %s --path nope", idc), 125);
  cr_expect(strstr(err_text, "no such directory: /workspace/nope"), "%s", err_text);
  cr_expect_eq(an("git diff %s --path ../etc", idc), 125);
  cr_expect(strstr(err_text, "must be relative to /workspace"), "%s", err_text);
  cr_expect_eq(an("git diff --help"), 0);
  cr_expect(strstr(out_text, "Usage: agentnest git diff ID"), "%s", out_text);
  cr_expect_eq(an("git --help"), 0);
  cr_expect_eq(an("--help"), 0);
  cr_expect(strstr(out_text, "  git "), "agentnest --help does not list git: %s", out_text);
  cr_expect_eq(an("git diff"), 125);
  cr_expect(strstr(err_text, "no sandbox ID given"), "%s", err_text);
  cr_expect_eq(an("git diff no-such-sandbox"), 125);
  cr_expect_eq(an("git log %s", idc), 125);
  cr_expect(strstr(err_text, "unknown git command 'log'"), "%s", err_text);
  an("destroy %s", idc);
  const char *py = create("--image python");
  snprintf(idc, sizeof idc, "%s", py);
  cr_expect_eq(an("git diff %s", idc), 125);
  cr_expect(strstr(err_text, "its image has no git"), "%s", err_text);
  an("destroy %s", idc);
}

Test(presets_git, openssh_client_and_helpers_are_in_the_git_image) {
  import_image("debian");
  int rc = an("run --profile git -- sh -c 'ssh -V 2>&1; command -v agentnest-git-askpass; command -v agentnest-git-ssh; "
              "echo GIT_ASKPASS=$GIT_ASKPASS GIT_SSH_COMMAND=$GIT_SSH_COMMAND'");
  cr_assert_eq(rc, 0, "rc %d: %s%s", rc, out_text, err_text);
  cr_expect(strstr(out_text, "OpenSSH_"), "no ssh: %s", out_text);
  cr_expect(strstr(out_text, "\n/usr/local/bin/agentnest-git-askpass\n/usr/local/bin/agentnest-git-ssh\n"),
            "helpers missing: %s", out_text);
  cr_expect(strstr(out_text, "GIT_ASKPASS=/usr/local/bin/agentnest-git-askpass "
                             "GIT_SSH_COMMAND=/usr/local/bin/agentnest-git-ssh\n"),
            "helpers: %s", out_text);
  /* the ssh helper: the key from the secret into a private file for the one
   * run (ssh -G resolves the configuration and connects to nothing), removed after */
  write_work_file("ssh.sh",
                  "agentnest-git-ssh -G git.example.invalid | grep -E '^(identityfile|stricthostkeychecking|"
                  "userknownhostsfile|batchmode) '\n"
                  "ls -d /tmp/agentnest-git-ssh.* 2>/dev/null || echo no-leftover\n");
  rc = an_env("GIT_SSH_KEY='-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key'",
              "run --profile git --secret GIT_SSH_KEY --put ssh.sh -- sh ssh.sh");
  cr_assert_eq(rc, 0, "rc %d: %s%s", rc, out_text, err_text);
  cr_expect(strstr(out_text, "identityfile /tmp/agentnest-git-ssh.") && strstr(out_text, "/key\n") &&
                strstr(out_text, "stricthostkeychecking accept-new\n") && strstr(out_text, "batchmode yes\n") &&
                strstr(out_text, "no-leftover\n"),
            "ssh helper: %s%s", out_text, err_text);
}

/* ---- browser -------------------------------------------------------------------------------- */

TestSuite(presets_browser, .init = setup, .fini = teardown, .timeout = 600);

static const char PAGE_HTML[] =
    "<!doctype html><html><head><style>body{margin:0;background:#fff}"
    "#box{position:absolute;left:0;top:100px;width:320px;height:100px;background:#000}</style></head>\n"
    "<body><form><input id=\"name\"><button id=\"go\" type=\"button\">Go</button></form><div id=\"box\"></div>\n"
    "<script>document.getElementById('go').addEventListener('click', function () {\n"
    "  var b = document.getElementById('box');\n"
    "  b.style.background = 'rgb(18, 200, 86)';\n"
    "  b.dataset.done = 'hello ' + document.getElementById('name').value;\n"
    "});</script></body></html>\n";

/* Serves page.html on 127.0.0.1 inside the sandbox and drives Chromium. */
static const char SHOT_JS[] =
    "const http = require('http'), fs = require('fs');\n"
    "const { chromium } = require('playwright-core');\n"
    "const html = fs.readFileSync('/workspace/page.html');\n"
    "const server = http.createServer((req, res) => {\n"
    "  res.writeHead(200, { 'Content-Type': 'text/html' }); res.end(html); });\n"
    "server.listen(0, '127.0.0.1', async () => {\n"
    "  const browser = await chromium.launch({ executablePath: process.env.CHROME_BIN, headless: true,\n"
    "    args: ['--no-sandbox'] });\n"
    "  const page = await browser.newPage({ viewport: { width: 320, height: 240 } });\n"
    "  await page.goto(`http://127.0.0.1:${server.address().port}/`);\n"
    "  await page.fill('#name', 'agent');\n"
    "  await page.click('#go');\n"
    "  await page.waitForSelector('#box[data-done=\"hello agent\"]');\n"
    "  await page.screenshot({ path: '/workspace/shot.png' });\n"
    "  console.log('form:', await page.$eval('#box', e => e.dataset.done));\n"
    "  await browser.close(); server.close();\n"
    "});\n";

/* PNG (RFC 2083) check on the host with the standard library only: the
 * signature, every chunk's CRC, IHDR, the inflated IDAT data unfiltered;
 * prints "W H R,G,B" of pixel (X, Y). */
static const char CHECK_PNG_PY[] =
    "import struct, sys, zlib\n"
    "data = open(sys.argv[1], 'rb').read()\n"
    "assert data[:8] == b'\\x89PNG\\r\\n\\x1a\\n', 'not a PNG signature'\n"
    "pos, idat, ihdr = 8, b'', None\n"
    "while pos < len(data):\n"
    "    n, kind = struct.unpack('>I4s', data[pos:pos + 8])\n"
    "    body = data[pos + 8:pos + 8 + n]\n"
    "    crc, = struct.unpack('>I', data[pos + 8 + n:pos + 12 + n])\n"
    "    assert zlib.crc32(kind + body) == crc, 'bad CRC in ' + kind.decode()\n"
    "    if kind == b'IHDR': ihdr = struct.unpack('>IIBBBBB', body)\n"
    "    if kind == b'IDAT': idat += body\n"
    "    pos += 12 + n\n"
    "    if kind == b'IEND': break\n"
    "w, h, depth, ctype, _, _, interlace = ihdr\n"
    "assert depth == 8 and ctype in (2, 6) and interlace == 0, 'unexpected IHDR %r' % (ihdr,)\n"
    "bpp = 3 if ctype == 2 else 4\n"
    "raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)\n"
    "for y in range(h):\n"
    "    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])\n"
    "    for i in range(stride):\n"
    "        a = line[i - bpp] if i >= bpp else 0\n"
    "        b = prev[i]; c = prev[i - bpp] if i >= bpp else 0\n"
    "        if f == 1: line[i] = (line[i] + a) & 255\n"
    "        elif f == 2: line[i] = (line[i] + b) & 255\n"
    "        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255\n"
    "        elif f == 4:\n"
    "            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)\n"
    "            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255\n"
    "        else: assert f == 0, 'bad filter %d' % f\n"
    "    rows.append(line); prev = line\n"
    "x, y = int(sys.argv[2]), int(sys.argv[3])\n"
    "px = rows[y][x * bpp:x * bpp + 3]\n"
    "print(w, h, '%d,%d,%d' % tuple(px))\n";

Test(presets_browser, playwright_fills_clicks_and_screenshots_a_page_served_inside) {
  import_image("browser");
  write_work_file("page.html", PAGE_HTML);
  write_work_file("shot.js", SHOT_JS);
  write_work_file("check_png.py", CHECK_PNG_PY);
  const char *id = create("--profile browser");
  char idc[64];
  snprintf(idc, sizeof idc, "%s", id);
  cr_assert_eq(an("cp page.html %s:page.html", idc), 0, "%s", err_text);
  cr_assert_eq(an("cp shot.js %s:shot.js", idc), 0, "%s", err_text);
  int rc = an("exec %s -- node shot.js", idc);
  cr_assert_eq(rc, 0, "rc %d: %s%s", rc, out_text, err_text);
  cr_expect(strstr(out_text, "form: hello agent\n"), "form state: %s", out_text);
  /* the profile's /dev/shm, which Chromium uses without --disable-dev-shm-usage */
  cr_assert_eq(an("exec %s -- df -k /dev/shm", idc), 0, "%s", err_text);
  cr_expect(strstr(out_text, " 524288 "), "/dev/shm is not the profile's 512 MiB: %s", out_text);
  char dir[400];
  snprintf(dir, sizeof dir, "%s/out", work);
  an_test_mkdirs(dir);
  cr_assert_eq(chmod(dir, 0755), 0);
  cr_assert_eq(an("artifacts %s shot.png --to '%s'", idc, dir), 0, "artifacts: %s", err_text);
  cr_expect(strstr(out_text, " shot.png\n"), "artifact list: %s", out_text);
  /* decoded as an unprivileged user: the file is sandbox-made data */
  int st = an_test_sh("cd '%s' && chmod 0644 out/shot.png && for xy in '160 150' '160 50'; do "
                      "setpriv --reuid=65534 --regid=65534 --clear-groups env -i /usr/bin/python3 "
                      "check_png.py out/shot.png $xy || exit 1; done > .png 2>&1",
                      work);
  char pp[400];
  snprintf(pp, sizeof pp, "%s/.png", work);
  char *res = slurp(pp);
  cr_assert_eq(st, 0, "PNG check failed: %s", res);
  cr_expect(strstr(res, "320 240 18,200,86\n"), "size or clicked colour (want 320x240, 18,200,86 at 160,150): %s", res);
  cr_expect(strstr(res, "320 240 255,255,255\n"), "the page background (white at 160,50): %s", res);
  free(res);
  an("destroy %s", idc);
}
