/* sandbox/batch_job.c — one line of a batch's JOBS file (agentnest/batch.h
 * "JOBS") parsed with yajl (util/json_tree) into a job: its id, argv, files
 * to put and globs to get, and its sandbox options (the batch defaults, the
 * job's profile, then its members through an_sandbox_opts_set_option, the
 * setter the CLI flags use).  Every error names the member at fault. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sandbox/batch_internal.h"
#include "util/json_tree.h"

/* Members passed to an_sandbox_opts_set_option under the same name. */
static const char *const option_members[] = {
    "image", "memory", "cpus", "pids", "tmp_size", "max_output", "max_read", "workdir",
    "network", "seccomp_profile", NULL,
};
static const char *const other_members[] = {
    "id", "cmd", "shell", "python", "file", "profile", "timeout", "env", "secrets", "put", "get",
    NULL,
};

static bool in_list(const char *const *l, const char *k) {
  for (; *l; l++)
    if (!strcmp(*l, k)) return true;
  return false;
}

static bool valid_id(const char *s) {
  size_t n = strlen(s);
  if (!n || n > AN_BATCH_ID_MAX || !strcmp(s, ".") || !strcmp(s, "..")) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '.' || *p == '_' || *p == '-'))
      return false;
  return true;
}

static int member_error(an_error_t *err, const char *m, const char *fmt, const char *what) {
  return an_json_error(err, "", "member \"%s\": %s%s", m, fmt, what ? what : "");
}

/* A scalar option value as text: a string, or a number's own text. */
static int scalar_text(yajl_val v, const char *m, const char **out, an_error_t *err) {
  if (YAJL_IS_STRING(v)) *out = v->u.string;
  else if (YAJL_IS_NUMBER(v)) *out = v->u.number.r;
  else return member_error(err, m, "must be a string or a number", NULL);
  return 0;
}

static int strv_member(yajl_val v, const char *m, bool nonempty, char ***out, an_error_t *err) {
  if (!YAJL_IS_ARRAY(v)) return member_error(err, m, "must be an array of strings", NULL);
  if (nonempty && !v->u.array.len) return member_error(err, m, "must not be empty", NULL);
  for (size_t i = 0; i < v->u.array.len; i++)
    if (!YAJL_IS_STRING(v->u.array.values[i]) || !v->u.array.values[i]->u.string[0])
      return member_error(err, m, "must be an array of non-empty strings", NULL);
  int r = an_json_get_strv(v, m, out, err);
  return r;
}

static int set_argv(struct an_batch_job *job, const char *a0, const char *a1, const char *a2,
                    an_error_t *err) {
  const char *src[] = {a0, a1, a2, NULL};
  size_t n = a2 ? 3 : a1 ? 2 : 1;
  job->argv = calloc(n + 1, sizeof *job->argv);
  if (!job->argv) return an_error_set(err, ENOMEM, "job");
  for (size_t i = 0; i < n; i++)
    if (!(job->argv[i] = strdup(src[i]))) return an_error_set(err, ENOMEM, "job");
  return 0;
}

static int parse_command(yajl_val root, struct an_batch_job *job, an_error_t *err) {
  static const char *const kinds[] = {"cmd", "shell", "python", "file"};
  const char *kind = NULL;
  for (size_t i = 0; i < 4; i++)
    if (an_json_member(root, kinds[i])) {
      if (kind)
        return an_json_error(err, "", "members \"%s\" and \"%s\": give only one command", kind,
                            kinds[i]);
      kind = kinds[i];
    }
  if (!kind) return an_json_error(err, "", "no command: give one of \"cmd\", \"shell\", \"python\", \"file\"");
  yajl_val v = an_json_member(root, kind);
  if (!strcmp(kind, "cmd")) return strv_member(v, "cmd", true, &job->argv, err);
  if (!YAJL_IS_STRING(v) || !v->u.string[0]) return member_error(err, kind, "must be a non-empty string", NULL);
  const char *s = v->u.string;
  if (!strcmp(kind, "shell")) return set_argv(job, "sh", "-c", s, err);
  if (!strcmp(kind, "python")) return set_argv(job, "python3", "-c", s, err);
  /* file: put it in and run it by its base name */
  const char *base = strrchr(s, '/');
  base = base ? base + 1 : s;
  if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
    return member_error(err, "file", "must name a file", NULL);
  if (!(job->file = strdup(s))) return an_error_set(err, ENOMEM, "job");
  size_t n = strlen(base);
  return set_argv(job, n > 3 && !strcmp(base + n - 3, ".py") ? "python3" : "sh", base, NULL, err);
}

static int apply_options(yajl_val root, struct an_batch_job *job, an_error_t *err) {
  struct an_sandbox_opts *o = job->opts;
  int r;
  yajl_val v = an_json_member(root, "profile");
  if (v) {
    if (!YAJL_IS_STRING(v)) return member_error(err, "profile", "must be a string", NULL);
    if ((r = an_sandbox_opts_load_profile(o, v->u.string, NULL, err)) < 0)
      return an_error_prefix(err, "member \"profile\"");
  }
  for (const char *const *m = option_members; *m; m++) {
    if (!(v = an_json_member(root, *m))) continue;
    const char *text = NULL;
    if ((r = scalar_text(v, *m, &text, err)) < 0) return r;
    if ((r = an_sandbox_opts_set_option(o, *m, text, err)) < 0)
      return an_error_prefix(err, "member \"%s\"", *m);
  }
  if ((v = an_json_member(root, "timeout"))) {
    const char *text = NULL;
    if ((r = scalar_text(v, "timeout", &text, err)) < 0) return r;
    if ((r = an_sandbox_opts_set_option(o, "exec_timeout", text, err)) < 0)
      return an_error_prefix(err, "member \"timeout\"");
    job->timeout_ms = an_sandbox_opts_exec_timeout(o);
    /* the lifetime holds the command's timeout, with room to set up and copy out */
    if (job->timeout_ms + 30000 > an_sandbox_opts_lifetime(o) &&
        (r = an_sandbox_opts_set_lifetime(o, job->timeout_ms + 30000, err)) < 0)
      return an_error_prefix(err, "member \"timeout\"");
  }
  if ((v = an_json_member(root, "env"))) {
    if (!YAJL_IS_OBJECT(v)) return member_error(err, "env", "must be an object of strings", NULL);
    for (size_t i = 0; i < v->u.object.len; i++) {
      yajl_val s = v->u.object.values[i];
      const char *k = v->u.object.keys[i];
      if (!YAJL_IS_STRING(s)) return an_json_error(err, "", "member \"env\": \"%s\" must be a string", k);
      char *kv = NULL;
      if (asprintf(&kv, "%s=%s", k, s->u.string) < 0) return an_error_set(err, ENOMEM, "job");
      r = an_sandbox_opts_add_env(o, kv, err);
      free(kv);
      if (r < 0) return an_error_prefix(err, "member \"env\"");
    }
  }
  if ((v = an_json_member(root, "secrets"))) {
    if (!YAJL_IS_ARRAY(v)) return member_error(err, "secrets", "must be an array of names", NULL);
    for (size_t i = 0; i < v->u.array.len; i++) {
      yajl_val s = v->u.array.values[i];
      /* a name only: "NAME=@FILE" would read a host file the job file chose */
      if (!YAJL_IS_STRING(s) || !s->u.string[0] || strchr(s->u.string, '='))
        return member_error(err, "secrets", "must be an array of environment variable names", NULL);
      if ((r = an_sandbox_opts_add_secret_arg(o, s->u.string, err)) < 0)
        return an_error_prefix(err, "member \"secrets\"");
    }
  }
  if ((v = an_json_member(root, "put")) && (r = strv_member(v, "put", false, &job->puts, err)) < 0)
    return r;
  if ((v = an_json_member(root, "get"))) {
    if ((r = strv_member(v, "get", false, &job->gets, err)) < 0) return r;
    for (char **g = job->gets; *g; g++)
      if ((r = an_glob_check(*g, err)) < 0) return an_error_prefix(err, "member \"get\"");
  }
  if (!an_sandbox_opts_image(o) && (r = an_sandbox_opts_set_image(o, "python", err)) < 0) return r;
  return 0;
}

int an_batch_job_parse(const char *buf, size_t len, uint64_t lineno,
                       const struct an_sandbox_opts *defaults, struct an_batch_job *job,
                       an_error_t *err) {
  memset(job, 0, sizeof *job);
  job->line = lineno;
  job->attempt = 1;
  yajl_val root = NULL;
  int r = an_json_parse(buf, len, "", &root, err);
  if (r < 0) {
    if (err && *err && (*err)->errnum == EFBIG) (*err)->errnum = EINVAL;
    return -EINVAL;
  }
  if (!YAJL_IS_OBJECT(root)) {
    r = an_json_error(err, "", "not a JSON object");
    goto out;
  }
  yajl_val id = an_json_member(root, "id");
  if (!id) { r = an_json_error(err, "", "member \"id\": missing"); goto out; }
  if (!YAJL_IS_STRING(id) || !valid_id(id->u.string)) {
    r = member_error(err, "id", "must be 1-128 of [A-Za-z0-9._-] (not \".\" or \"..\")", NULL);
    goto out;
  }
  snprintf(job->id, sizeof job->id, "%s", id->u.string);
  for (size_t i = 0; i < root->u.object.len; i++) {
    const char *k = root->u.object.keys[i];
    if (!in_list(option_members, k) && !in_list(other_members, k)) {
      r = an_json_error(err, "", "member \"%s\": unknown", k);
      goto out;
    }
  }
  if ((r = parse_command(root, job, err)) < 0) goto out;
  if (defaults) r = an_sandbox_opts_dup(defaults, &job->opts, err);
  else r = an_sandbox_opts_new(&job->opts, err);
  if (r < 0) goto out;
  r = apply_options(root, job, err);
out:
  yajl_tree_free(root);
  if (r < 0 && err && *err && (*err)->errnum != ENOMEM) (*err)->errnum = EINVAL;
  return r < 0 ? (r == -ENOMEM ? r : -EINVAL) : 0;
}

void an_batch_job_clear(struct an_batch_job *job) {
  if (!job) return;
  char **lists[] = {job->argv, job->puts, job->gets};
  for (size_t i = 0; i < 3; i++) {
    for (char **p = lists[i]; p && *p; p++) free(*p);
    free(lists[i]);
  }
  free(job->file);
  an_sandbox_opts_free(job->opts);
  memset(job, 0, sizeof *job);
}
