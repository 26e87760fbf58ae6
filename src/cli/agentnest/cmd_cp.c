/* cli/agentnest/cmd_cp.c — `agentnest cp LOCAL ID:PATH` and `agentnest cp
 * ID:PATH LOCAL`: copy a file or directory into or out of a sandbox's
 * workspace with the path-safe rules of agentnest/files.h (relative paths,
 * no "..", no symlink followed, regular files only, capped, atomic). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "agentnest/sandbox.h"
#include "cli.h"
#include "util/cleanup.h"
#include "util/quote.h"

static const char cp_usage[] =
    "Usage: agentnest cp LOCAL ID:PATH\n"
    "       agentnest cp ID:PATH LOCAL\n"
    "\n"
    "Copy a host file or directory into the workspace of sandbox ID, or out of it.  PATH is\n"
    "relative to /workspace (a leading /workspace/ is accepted); `..`, absolute paths outside\n"
    "/workspace and symlinks at any component are refused.  ID: alone means the workspace\n"
    "root (into: the source's basename).  Copying out to an existing directory puts the file\n"
    "inside it.  Files are written atomically; reads are capped by the sandbox's --max-read.\n"
    "`-` (docker cp's tar on stdin/stdout) is refused; a host file named - is ./-.\n"
    "\n"
    "  -h, --help   this help\n";

static bool is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* What a directory copy skipped (names already quoted by the library). */
static void warn_stderr(void *data, const char *msg) {
  fprintf(stderr, "agentnest %s: warning: %s\n", (const char *) data, msg);
}

int cmd_cp(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {0}};
  const char *cmd = argv[0];
  int r = cli_parse_opts(cmd, argc, argv, "+:h", longopts, cp_usage, NULL, NULL);
  if (r >= 0) return r;
  if (argc - optind != 2) return cli_usage_error(cmd, "expected LOCAL ID:PATH or ID:PATH LOCAL");
  const char *a = argv[optind], *b = argv[optind + 1];
  /* docker cp's `-` (a tar on stdin/stdout) is not offered: never a file named "-" */
  if (!strcmp(a, "-") || !strcmp(b, "-"))
    return cli_usage_error(cmd, "'-' (a tar on stdin or stdout, as docker cp) is not supported: copy to or "
                                "from a host path (a file named - is ./-)");
  struct stat st;
  cleanup_free char *ida = NULL, *idb = NULL;
  const char *pa = NULL, *pb = NULL;
  /* A host path that exists is a host path even if it holds a ':'. */
  bool a_sb = lstat(a, &st) != 0 && cli_split_sandbox_path(a, &ida, &pa);
  bool b_sb = cli_split_sandbox_path(b, &idb, &pb);
  if (a_sb == b_sb)
    return cli_usage_error(cmd, a_sb ? "both %s and %s name a sandbox; one side must be a host path"
                                     : "neither %s nor %s names a sandbox (ID:PATH)", a, b);
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  if (an_sandbox_open_ctx(cli_ctx(), g->root, a_sb ? ida : idb, &sb, &err) < 0) return cli_fail(cmd, &err);
  if (b_sb) {
    /* into the sandbox */
    const char *dest = *pb && strcmp(pb, ".") ? pb : NULL;
    cleanup_free char *joined = NULL;
    if (dest && dest[strlen(dest) - 1] == '/') {
      const char *base = strrchr(a, '/');
      if (asprintf(&joined, "%s%s", dest, base ? base + 1 : a) < 0) joined = NULL;
      dest = joined;
    }
    r = an_sandbox_put(sb, a, dest, &err);
    if (r < 0) an_error_prefix(&err, "cp %s to %s", AN_QUOTED(a), AN_QUOTED(b));
  } else {
    const char *src = *pa ? pa : ".";
    cleanup_free char *joined = NULL;
    const char *dest = b;
    if (is_dir(b) && strcmp(src, ".")) {
      const char *base = strrchr(src, '/');
      if (asprintf(&joined, "%s/%s", b, base ? base + 1 : src) < 0) joined = NULL;
      dest = joined ? joined : b;
    }
    r = an_sandbox_get_warn(sb, src, dest, warn_stderr, (void *) cmd, &err);
    if (r < 0) an_error_prefix(&err, "cp %s to %s", AN_QUOTED(a), AN_QUOTED(b));
  }
  an_sandbox_close(sb);
  return r < 0 ? cli_fail(cmd, &err) : 0;
}
