/* sandbox/result_json.c — the one writer of an exec result as JSON members:
 * `agentnest run --json` prints it as a document (cli_print_result_json),
 * `agentnest batch` writes it inside each results record (batch_exec.c).
 * Both go through here, so the members cannot drift apart. */
#include <string.h>
#include "agentnest/output.h"
#include "agentnest/sandbox.h"

#define TRY(x) do { yajl_gen_status s_ = (x); if (s_ != yajl_gen_status_ok) return s_; } while (0)

static yajl_gen_status key(yajl_gen g, const char *k) {
  return yajl_gen_string(g, (const unsigned char *) k, strlen(k));
}

static yajl_gen_status path_value(yajl_gen g, const char *path) {
  return path ? an_json_escape_output(g, path, strlen(path)) : yajl_gen_null(g);
}

yajl_gen_status an_artifact_json(yajl_gen g, const struct an_artifact *a, bool with_target) {
  TRY(yajl_gen_map_open(g));
  TRY(key(g, "path"));
  TRY(path_value(g, a->path));
  TRY(key(g, "type"));
  const char *type = a->kind == AN_ARTIFACT_SYMLINK ? "symlink" : "file";
  TRY(yajl_gen_string(g, (const unsigned char *) type, strlen(type)));
  TRY(key(g, "size"));
  TRY(yajl_gen_integer(g, (long long) a->size));
  TRY(key(g, "sha256"));
  if (a->kind == AN_ARTIFACT_FILE) TRY(yajl_gen_string(g, (const unsigned char *) a->sha256, strlen(a->sha256)));
  else TRY(yajl_gen_null(g));
  if (with_target) {
    TRY(key(g, "target"));
    TRY(path_value(g, a->link_target));
  }
  TRY(key(g, "copied"));
  TRY(yajl_gen_bool(g, a->copied));
  return yajl_gen_map_close(g);
}

yajl_gen_status an_exec_result_json_fields(yajl_gen g, const struct an_exec_result *res,
                                           const struct an_artifact_list *arts) {
  TRY(key(g, "exit_code"));
  TRY(res->exit_code >= 0 ? yajl_gen_integer(g, res->exit_code) : yajl_gen_null(g));
  TRY(key(g, "signal"));
  TRY(res->signal > 0 ? yajl_gen_integer(g, res->signal) : yajl_gen_null(g));
  TRY(key(g, "status"));
  TRY(yajl_gen_integer(g, res->status));
  TRY(key(g, "timed_out"));
  TRY(yajl_gen_bool(g, res->timed_out));
  TRY(key(g, "oom_killed"));
  TRY(yajl_gen_bool(g, res->oom_killed));
  TRY(key(g, "duration_ms"));
  TRY(yajl_gen_integer(g, (long long) res->duration_ms));
  /* stdout, stderr (non-UTF-8 bytes become U+FFFD), *_truncated */
  TRY(an_output_json_fields(g, &res->output));
  TRY(key(g, "artifacts"));
  TRY(yajl_gen_array_open(g));
  for (size_t i = 0; arts && i < arts->n; i++) TRY(an_artifact_json(g, &arts->items[i], false));
  return yajl_gen_array_close(g);
}
