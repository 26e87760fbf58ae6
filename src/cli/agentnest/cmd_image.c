/* cli/agentnest/cmd_image.c — `agentnest image import|ls|inspect|rm`: parse
 * arguments, call the image store API (agentnest/image.h), print.  A progress
 * line goes to stderr once an import has run for more than a second. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agentnest/doctor.h"
#include "agentnest/image.h"
#include "agentnest/sandbox.h"
#include "cli.h"
#include "commands.h"

static const char *image_usage =
    "Usage: agentnest image COMMAND [ARG...]\n"
    "\n"
    "Commands:\n"
    "  import SRC [--name NAME]  import an OCI layout dir, oci-archive, docker-archive or rootfs tar\n"
    "  ls [--json]               list stored images (name, digest, size, created)\n"
    "  inspect NAME              print an image as JSON\n"
    "  rm NAME                   untag NAME; remove the image when no tag is left\n"
    "\n"
    "NAME is NAME[:TAG][@sha256:HEX], sha256:HEX or a digest prefix. See agentnest-image(1).\n";

static const char *import_usage =
    "Usage: agentnest image import SRC [--name NAME[:TAG][@sha256:HEX]]\n"
    "\n"
    "Import SRC (an OCI image layout directory, an oci-archive tar, a docker-archive tar\n"
    "from `docker save`/`podman save`, or a plain root filesystem tar, optionally gzip/zstd\n"
    "compressed) into the image store.  Every blob is verified against its sha256 digest;\n"
    "NAME@sha256:HEX also requires that manifest digest.  Prints the image digest.\n"
    "\n"
    "  --name NAME   tag the image NAME (default: the names the source carries)\n"
    "  -h, --help    this help\n";

static const char *ls_usage =
    "Usage: agentnest image ls [--json]\n"
    "\n"
    "List stored images: NAME, DIGEST, SIZE (unpacked), CREATED.\n"
    "  --json        one JSON array of {\"names\",\"digest\",\"size\",\"created\",\"imported\"}\n";

static const char *inspect_usage =
    "Usage: agentnest image inspect NAME\n"
    "\n"
    "Print the image as a JSON object: Id, RepoTags, Created, Size, Rootfs, Config\n"
    "(Env, Entrypoint, Cmd, WorkingDir, User), Layers.\n";

static const char *rm_usage =
    "Usage: agentnest image rm [--force] NAME\n"
    "\n"
    "Untag NAME[:TAG]; the image is deleted when no tag is left.  A digest (sha256:HEX or a\n"
    "prefix) deletes the image and all its tags.  Deleting an image that a sandbox still\n"
    "uses is refused, naming the sandboxes (destroy them first).\n"
    "  -f, --force   delete it anyway (those sandboxes' exec then fails: image removed)\n";

static bool wants_help_quiet(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return true;
  return false;
}

static int wants_help(int argc, char **argv, const char *usage) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return 1;
    }
  return 0;
}

/* Errors as every other command prints them: "agentnest image SUB: ..."
 * (cli_fail, cli_usage_error: one line and "Try 'agentnest image SUB --help'").
 * not_in_store: the error of an_image_resolve for rm and inspect. */
static int not_in_store(const char *cmd, struct an_global_opts *g, const char *name, an_error_t *err) {
  /* rm and inspect: the library's "import it first" hint is for create/run */
  if (*err && (*err)->errnum == ENOENT) {
    an_error_free(err);
    an_error_set(err, ENOENT, "image %s: no such image in the image store %s (agentnest%s%s image ls lists them)",
                 name, g->root, strcmp(g->root, AN_IMAGE_DEFAULT_STORE) ? " --root " : "",
                 strcmp(g->root, AN_IMAGE_DEFAULT_STORE) ? g->root : "");
  }
  return cli_fail(cmd, err);
}

/* ---- import ---- */
struct progress_state {
  struct timespec start, last;
  int shown, tty;
  size_t layer, n_layers;
};

static double since(const struct timespec *a, const struct timespec *b) {
  return (double) (b->tv_sec - a->tv_sec) + (double) (b->tv_nsec - a->tv_nsec) / 1e9;
}

static void on_progress(const struct an_image_progress *p, void *data) {
  struct progress_state *st = data;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (p->event == AN_IMAGE_EVENT_WARNING) {
    fprintf(stderr, "%sagentnest: warning: %s\n", st->shown && st->tty ? "\n" : "", p->message);
    return;
  }
  if (p->event == AN_IMAGE_EVENT_DONE) {
    if (st->shown && st->tty) fputc('\n', stderr);
    return;
  }
  if (p->event != AN_IMAGE_EVENT_LAYER_START && p->event != AN_IMAGE_EVENT_LAYER_BYTES &&
      p->event != AN_IMAGE_EVENT_LAYER_DONE)
    return;
  if (since(&st->start, &now) < 1.0) return;
  bool layer_edge = p->event != AN_IMAGE_EVENT_LAYER_BYTES;
  if (!st->tty && !layer_edge) return;
  if (st->tty && !layer_edge && since(&st->last, &now) < 0.2) return;
  st->last = now;
  st->shown = 1;
  fprintf(stderr, "%simporting layer %zu/%zu %.19s: %.1f/%.1f MB%s", st->tty ? "\r" : "",
          p->layer + 1, p->n_layers, p->digest ? p->digest : "", p->bytes_done / 1e6,
          p->bytes_total / 1e6, st->tty ? "   " : "\n");
  fflush(stderr);
}

static int image_import(struct an_global_opts *g, int argc, char **argv) {
  static const struct option longopts[] = {{"name", required_argument, NULL, 'n'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  const char *name = NULL;
  const char *cmd = "image import";
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
    if (c == 'n') name = optarg;
    else if (c == 'h') { fputs(import_usage, stdout); return 0; }
    else return cli_getopt_error(cmd, c, argc, argv);
  }
  if (optind + 1 != argc) return cli_usage_error(cmd, "expected exactly one SRC");
  struct progress_state st = {.tty = isatty(STDERR_FILENO)};
  clock_gettime(CLOCK_MONOTONIC, &st.start);
  struct an_image_import_opts opts = {.progress = on_progress, .userdata = &st};
  struct an_image_info *info = NULL;
  an_error_t err = NULL;
  /* a store sandboxes cannot reach is refused now, as create would refuse it */
  if (an_sandbox_check_store_root(g->root, &err) < 0) return cli_fail(cmd, &err);
  if (an_image_import(g->root, argv[optind], name, &opts, &info, &err) < 0) {
    if (st.shown && st.tty) fputc('\n', stderr);
    return cli_fail(cmd, &err);   /* "image import SRC: ..." is said once (cli_fail) */
  }
  printf("%s\n", info->digest);
  an_image_info_free(info);
  return 0;
}

/* ---- ls ---- */
static void human_size(uint64_t n, char *buf, size_t len) {
  if (n >= 1000ULL * 1000 * 1000) snprintf(buf, len, "%.2fGB", n / 1e9);
  else if (n >= 1000 * 1000) snprintf(buf, len, "%.1fMB", n / 1e6);
  else if (n >= 1000) snprintf(buf, len, "%.1fkB", n / 1e3);
  else snprintf(buf, len, "%lluB", (unsigned long long) n);
}

static int image_ls(struct an_global_opts *g, int argc, char **argv) {
  int json = g->json;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (argv[i][0] == '-') return cli_usage_error("image ls", "unknown option '%s'", argv[i]);
    else return cli_usage_error("image ls", "unexpected argument '%s'", argv[i]);
  }
  struct an_image_info **list = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  if (an_image_list(g->root, &list, &n, &err) < 0) return cli_fail("image ls", &err);
  int status = 0;
  if (json) {
    cleanup_jgen struct an_jgen j;
    if (an_jgen_init(&j, true) == 0) {
      an_jgen_array_open(&j);
      for (size_t i = 0; i < n; i++) {
        an_jgen_map_open(&j);
        an_jgen_kv_strv(&j, "names", (const char *const *) list[i]->names);
        an_jgen_kv_str(&j, "digest", list[i]->digest);
        an_jgen_kv_u64(&j, "size", list[i]->size);
        an_jgen_kv_str(&j, "created", list[i]->created);
        an_jgen_kv_str(&j, "imported", list[i]->imported);
        an_jgen_map_close(&j);
      }
      an_jgen_array_close(&j);
    }
    status = cli_print_json("image ls", &j, "image list");   /* also reports a failed an_jgen_init */
  } else {
    printf("%-40s %-19s %10s  %s\n", "NAME", "DIGEST", "SIZE", "CREATED");
    for (size_t i = 0; i < n; i++) {
      char size[32];
      human_size(list[i]->size, size, sizeof size);
      const char *created = list[i]->created ? list[i]->created : "-";
      if (!list[i]->names[0])
        printf("%-40s %.19s %10s  %s\n", "<none>", list[i]->digest, size, created);
      for (char **s = list[i]->names; *s; s++)
        printf("%-40s %.19s %10s  %s\n", *s, list[i]->digest, size, created);
    }
  }
  an_image_list_free(list, n);
  return status;
}

/* ---- inspect, rm ---- */
static int image_inspect(struct an_global_opts *g, int argc, char **argv) {
  if (argc != 2) return cli_usage_error("image inspect", "expected exactly one NAME");
  char *json = NULL;
  an_error_t err = NULL;
  struct an_image_info *info = NULL;
  if (an_image_resolve(g->root, argv[1], &info, &err) < 0) return not_in_store("image inspect", g, argv[1], &err);
  an_image_info_free(info);
  if (an_image_inspect(g->root, argv[1], &json, &err) < 0) return cli_fail("image inspect", &err);
  fputs(json, stdout);
  free(json);
  return 0;
}

/* Whether removing NAME (resolved to info) deletes the image: not when NAME
 * is one of several tags on it. */
static bool rm_deletes(const struct an_image_info *info, const char *name) {
  size_t n = 0;
  bool tag = false;
  for (; info->names && info->names[n]; n++) {
    size_t l = strlen(name);
    if (!strcmp(info->names[n], name) ||
        (!strncmp(info->names[n], name, l) && !strcmp(info->names[n] + l, ":latest")))
      tag = true;
  }
  return !(tag && n > 1);
}

static int image_rm(struct an_global_opts *g, int argc, char **argv) {
  const char *cmd = "image rm";
  bool force = false;
  const char *name = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--force")) force = true;
    else if (argv[i][0] == '-') return cli_usage_error(cmd, "unknown option '%s'", argv[i]);
    else if (name) return cli_usage_error(cmd, "expected exactly one NAME, got '%s' and '%s'", name, argv[i]);
    else name = argv[i];
  }
  if (!name) return cli_usage_error(cmd, "expected exactly one NAME");
  an_error_t err = NULL;
  struct an_image_info *info = NULL;
  if (an_image_resolve(g->root, name, &info, &err) < 0) return not_in_store(cmd, g, name, &err);
  if (force) an_image_info_free(info);
  else {
    char **users = NULL;
    int n = rm_deletes(info, name) ? an_sandbox_image_users(g->root, info->rootfs, &users, &err) : 0;
    an_image_info_free(info);
    if (n < 0) return cli_fail(cmd, &err);
    if (n > 0) {
      fprintf(stderr, "agentnest %s: image %s: in use by sandbox%s", cmd, name, n > 1 ? "es" : "");
      for (int i = 0; i < n; i++) fprintf(stderr, "%s %s", i ? "," : "", users[i]);
      fprintf(stderr, "; destroy %s first, or remove it anyway with --force (%s exec then fails)\n",
              n > 1 ? "them" : "it", n > 1 ? "their" : "its");
      an_sandbox_image_users_free(users);
      return AN_EXIT_RUNTIME;
    }
  }
  if (an_image_remove(g->root, name, &err) < 0) return cli_fail(cmd, &err);
  return 0;
}

int cmd_image(struct an_global_opts *g, int argc, char **argv) {
  if (argc < 2) return cli_usage_error("image", "expected a command: import, ls, inspect or rm");
  const char *sub = argv[1];
  if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) { fputs(image_usage, stdout); return 0; }
  argc--;
  argv++;
  /* as non-root the 0700 store reads as empty or missing: say the real cause */
  an_error_t perr = NULL;
  if (!wants_help_quiet(argc, argv) && an_doctor_check_privilege(&perr) < 0) return cli_fail("image", &perr);
  if (!strcmp(sub, "import")) return image_import(g, argc, argv);
  if (!strcmp(sub, "ls") || !strcmp(sub, "list")) {
    if (wants_help(argc, argv, ls_usage)) return 0;
    return image_ls(g, argc, argv);
  }
  if (!strcmp(sub, "inspect")) {
    if (wants_help(argc, argv, inspect_usage)) return 0;
    return image_inspect(g, argc, argv);
  }
  if (!strcmp(sub, "rm")) {
    if (wants_help(argc, argv, rm_usage)) return 0;
    return image_rm(g, argc, argv);
  }
  return cli_usage_error("image", "unknown command '%s' (import, ls, inspect, rm)", sub);
}
