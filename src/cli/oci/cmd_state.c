/* cli/oci/cmd_state.c — `state` (runtime-spec State JSON, indented like
 * runc) and `list` (runc's table, `--format json`, `-q`). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/container.h"
#include "cli/oci/oci.h"
#include "util/cleanup.h"

int oci_cmd_state(struct oci_ctx *ctx, int argc, char **argv) {
  const char *id;
  int r = oci_id_only_args(ctx, argc, argv, &id);
  if (r) return r == -2 ? 0 : 1;
  cleanup_error an_error_t err = NULL;
  struct an_container_state *st = NULL;
  cleanup_free char *json = NULL;
  if (an_container_state(ctx->root, id, &st, &err) < 0) return oci_fail_error(ctx, &err);
  r = an_container_state_json(st, &json, &err);
  an_container_state_free(st);
  if (r < 0 || oci_json_reprint(json, stdout, &err) < 0) return oci_fail_error(ctx, &err);
  return 0;
}

static void owner_of(const char *root, const char *id, char *buf, size_t len);

/* Go's string fields: an unset one is "". */
static const char *go_str(const char *s) { return s ? s : ""; }

/* One row of `list`, in runc's containerState field order. */
static void list_json_item(struct an_jgen *g, const struct an_container_state *st, const char *owner) {
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "ociVersion", go_str(st->oci_version));
  an_jgen_kv_str(g, "id", go_str(st->id));
  an_jgen_kv_i64(g, "pid", st->pid);
  an_jgen_kv_str(g, "status", go_str(an_container_status_name(st->status)));
  an_jgen_kv_str(g, "bundle", go_str(st->bundle));
  an_jgen_kv_str(g, "rootfs", go_str(st->rootfs));
  an_jgen_kv_str(g, "created", go_str(st->created));
  if (st->n_annotations) {
    an_jgen_key(g, "annotations");
    an_jgen_map_open(g);
    for (size_t i = 0; i < st->n_annotations; i++)
      an_jgen_kv_str(g, go_str(st->annotations[i].key), go_str(st->annotations[i].value));
    an_jgen_map_close(g);
  }
  an_jgen_kv_str(g, "owner", go_str(owner));
  an_jgen_map_close(g);
}

/* runc's OWNER column: the user owning the container's state directory. */
static void owner_of(const char *root, const char *id, char *buf, size_t len) {
  char path[PATH_MAX];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", root, id);
  buf[0] = 0;
  if (stat(path, &st) < 0) return;
  struct passwd pw, *res = NULL;
  char pwbuf[1024];
  if (getpwuid_r(st.st_uid, &pw, pwbuf, sizeof pwbuf, &res) == 0 && res)
    snprintf(buf, len, "%s", res->pw_name);
  else
    snprintf(buf, len, "#%u", (unsigned) st.st_uid);
}

/* Go's text/tabwriter as runc configures it for `list`: minwidth 12,
 * padding 3, spaces; the last column is not padded. */
#define LIST_COLS 6
static void print_table(char *(*rows)[LIST_COLS], size_t n) {
  size_t width[LIST_COLS] = {0};
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < LIST_COLS - 1; c++) {
      size_t w = strlen(rows[i][c]) + 3;
      if (w < 12) w = 12;
      if (w > width[c]) width[c] = w;
    }
  for (size_t i = 0; i < n; i++) {
    for (int c = 0; c < LIST_COLS - 1; c++) printf("%-*s", (int) width[c], rows[i][c]);
    printf("%s\n", rows[i][LIST_COLS - 1]);
  }
}

int oci_cmd_list(struct oci_ctx *ctx, int argc, char **argv) {
  const struct oci_command *cmd = oci_find_command(argv[0]);
  static const struct option long_opts[] = {
    {"format", required_argument, NULL, 'f'}, {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  const char *format = "table";
  bool quiet = false;
  int c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+f:qh", long_opts, NULL)) != -1) {
    if (c == 'f') format = optarg;
    else if (c == 'q') quiet = true;
    else if (c == 'h') { oci_print_command_help(cmd, stdout); return 0; }
    else return oci_usage_error(ctx, cmd, "flag provided but not defined: %s", argv[optind - 1]);
  }
  if (oci_check_args(ctx, cmd, argc - optind, 0, 0)) return 1;
  bool json = strcmp(format, "json") == 0;
  if (!json && strcmp(format, "table") != 0) return oci_fail(ctx, "invalid format option");

  cleanup_error an_error_t err = NULL;
  cleanup_strv char **ids = NULL;
  int r = an_container_list(ctx->root, &ids, &err);
  if (r == -ENOENT) an_error_free(&err);   /* no root yet: no containers */
  else if (r < 0) return oci_fail_error(ctx, &err);

  size_t n = 0;
  for (char **i = ids; i && *i; i++) n++;
  struct an_container_state **states = calloc(n + 1, sizeof *states);
  if (!states) return oci_fail(ctx, "out of memory");
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (an_container_state(ctx->root, ids[i], &states[m], &err) < 0) {
      /* runc skips containers it cannot load (e.g. half-created). */
      oci_log(ctx, "debug", "list: skipping %s: %s", ids[i], err ? err->msg : "");
      an_error_free(&err);
      continue;
    }
    m++;
  }

  int ret = 0;
  if (quiet) {
    for (size_t i = 0; i < m; i++) printf("%s\n", states[i]->id);
  } else if (json) {
    /* runc prints `null` for no containers (a nil Go slice); we print []. */
    cleanup_jgen struct an_jgen j;
    struct an_jgen *g = &j;
    oci_json_init(g, false);   /* a failure is reported by oci_json_print */
    an_jgen_array_open(g);
    for (size_t i = 0; i < m; i++) {
      char owner[64];
      if (states[i]->owner && states[i]->owner[0]) snprintf(owner, sizeof owner, "%s", states[i]->owner);
      else owner_of(ctx->root, states[i]->id, owner, sizeof owner);
      list_json_item(g, states[i], owner);
    }
    an_jgen_array_close(g);
    int pr = oci_json_print(g);
    if (pr < 0) ret = oci_fail(ctx, "list: JSON: %s", an_errno_name(-pr));
  } else {
    char *(*rows)[LIST_COLS] = calloc(m + 1, sizeof *rows);
    char (*pids)[16] = calloc(m + 1, sizeof *pids);
    char (*owners)[64] = calloc(m + 1, sizeof *owners);
    if (!rows || !pids || !owners) {
      free(rows); free(pids); free(owners);
      ret = oci_fail(ctx, "out of memory");
      goto out;
    }
    static char *header[LIST_COLS] = {"ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"};
    memcpy(rows[0], header, sizeof header);
    for (size_t i = 0; i < m; i++) {
      snprintf(pids[i], sizeof pids[i], "%d", (int) states[i]->pid);
      rows[i + 1][0] = states[i]->id;
      rows[i + 1][1] = pids[i];
      rows[i + 1][2] = (char *) an_container_status_name(states[i]->status);
      rows[i + 1][3] = states[i]->bundle ? states[i]->bundle : (char *) "";
      rows[i + 1][4] = states[i]->created ? states[i]->created : (char *) "";
      if (states[i]->owner && states[i]->owner[0])
        snprintf(owners[i], sizeof owners[i], "%s", states[i]->owner);
      else
        owner_of(ctx->root, states[i]->id, owners[i], sizeof owners[i]);
      rows[i + 1][5] = owners[i];
    }
    print_table(rows, m + 1);
    free(rows);
    free(pids);
    free(owners);
  }
out:
  for (size_t i = 0; i < m; i++) an_container_state_free(states[i]);
  free(states);
  return ret;
}
