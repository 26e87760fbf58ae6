/* sandbox/batch_results.c — the files of a batch after and between runs:
 * reading the results file (resume: the ids already recorded, and the
 * repair of a last line a crash cut short), the journal of starts (attempt
 * numbers), the summary (counts, slowest jobs) and the JUnit XML report,
 * all streamed one line at a time (agentnest/batch.h "MEMORY").  Records are
 * parsed with yajl (util/json_tree); the XML is written here with every
 * character escaped for XML 1.0 (XML is written, never parsed). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sandbox/batch_internal.h"
#include "util/cleanup.h"
#include "util/json_tree.h"

const char *an_batch_result_name(enum an_batch_result r) {
  static const char *const names[] = {"passed", "failed", "timed_out", "oom_killed", "error"};
  return (unsigned) r < AN_BATCH__NRESULTS ? names[r] : "error";
}

int an_batch_read_line(FILE *f, char **buf, size_t *cap, size_t *len, size_t max, bool *too_long,
                       bool *eol) {
  *len = 0;
  *too_long = false;
  *eol = false;
  int c;
  bool any = false;
  while ((c = getc_unlocked(f)) != EOF) {
    any = true;
    if (c == '\n') {
      *eol = true;
      break;
    }
    if (*len >= max) {
      *too_long = true;
      continue;
    }
    if (*len + 1 >= *cap) {
      size_t nc = *cap ? *cap * 2 : 4096;
      char *b = realloc(*buf, nc);
      if (!b) return -ENOMEM;
      *buf = b;
      *cap = nc;
    }
    (*buf)[(*len)++] = (char) c;
  }
  if (ferror(f)) return -EIO;
  if (!any) return 0;
  if (!*buf && !(*buf = malloc(*cap = 16))) return -ENOMEM;
  (*buf)[*len] = 0;
  return 1;
}

int an_batch_rec_parse(const char *buf, size_t len, yajl_val *tree, struct an_batch_rec *rec,
                       an_error_t *err) {
  *tree = NULL;
  int r = an_json_parse(buf, len, "", tree, err);
  if (r < 0) return r;
  memset(rec, 0, sizeof *rec);
  rec->id = an_json_member_str(*tree, "id");
  const char *res = an_json_member_str(*tree, "result");
  yajl_val d = an_json_member_type(*tree, "duration_ms", yajl_t_number);
  if (!rec->id || !res || !d || !YAJL_IS_INTEGER(d)) {
    yajl_tree_free(*tree);
    *tree = NULL;
    return an_error_set(err, EINVAL, "not a batch record (no \"id\", \"result\" or \"duration_ms\")");
  }
  rec->result = AN_BATCH_ERROR;
  for (int i = 0; i < AN_BATCH__NRESULTS; i++)
    if (!strcmp(res, an_batch_result_name((enum an_batch_result) i))) rec->result = (enum an_batch_result) i;
  rec->duration_ms = YAJL_GET_INTEGER(d) > 0 ? (uint64_t) YAJL_GET_INTEGER(d) : 0;
  rec->reason = an_json_member_str(*tree, "reason");
  return 0;
}

/* Call fn for each record of the results at fd (from its start). */
typedef int (*rec_fn)(void *arg, const struct an_batch_rec *rec, yajl_val tree, an_error_t *err);

static int each_record(int fd, const char *path, bool repair, rec_fn fn, void *arg,
                       an_error_t *err) {
  int dfd = dup(fd);
  if (dfd < 0) return an_error_set(err, errno, "results %s", path);
  if (lseek(dfd, 0, SEEK_SET) < 0) {
    close(dfd);
    return an_error_set(err, errno, "results %s: seek", path);
  }
  FILE *f = fdopen(dfd, "r");
  if (!f) {
    close(dfd);
    return an_error_set(err, errno, "results %s", path);
  }
  cleanup_free char *buf = NULL;
  size_t cap = 0, len = 0;
  uint64_t lineno = 0;
  off_t good = 0;
  int r;
  bool too_long, eol;
  while ((r = an_batch_read_line(f, &buf, &cap, &len, AN_BATCH_LINE_MAX, &too_long, &eol)) > 0) {
    lineno++;
    off_t end = ftello(f);
    yajl_val tree = NULL;
    struct an_batch_rec rec;
    an_error_t e = NULL;
    int p = too_long ? an_error_set(&e, EINVAL, "line longer than 16 MiB")
                     : an_batch_rec_parse(buf, len, &tree, &rec, &e);
    if (p < 0 || !eol) {
      yajl_tree_free(tree);
      /* a crash while appending leaves only the last line short: with
       * `repair` (resume) it is cut off, else skipped */
      int c = getc_unlocked(f);
      if (c == EOF) {
        an_error_free(&e);
        if (repair && ftruncate(fd, good) < 0) r = an_error_set(err, errno, "results %s: truncate", path);
        else r = 0;
        break;
      }
      r = an_error_set(err, EINVAL, "results %s line %llu: %s", path, (unsigned long long) lineno,
                       e ? e->msg : "cut short");
      an_error_free(&e);
      break;
    }
    r = fn(arg, &rec, tree, err);
    yajl_tree_free(tree);
    if (r < 0) break;
    good = end;
  }
  if (r == -EIO || r == -ENOMEM) an_error_set(err, -r, "results %s: read", path);
  fclose(f);
  return r < 0 ? r : 0;
}

static int load_one(void *arg, const struct an_batch_rec *rec, yajl_val tree, an_error_t *err) {
  (void) tree;
  if (an_batch_idset_put(arg, rec->id, 0) < 0) return an_error_set(err, ENOMEM, "results");
  return 0;
}

int an_batch_results_load(int fd, const char *path, struct an_batch_idset *done, an_error_t *err) {
  return each_record(fd, path, true, load_one, done, err);
}

int an_batch_journal_load(const char *path, const struct an_batch_idset *done,
                          struct an_batch_idset *attempts, an_error_t *err) {
  cleanup_fclose FILE *f = fopen(path, "re");
  if (!f) return errno == ENOENT ? 0 : an_error_set(err, errno, "journal %s", path);
  cleanup_free char *buf = NULL;
  size_t cap = 0, len = 0;
  bool too_long, eol;
  int r;
  while ((r = an_batch_read_line(f, &buf, &cap, &len, 4096, &too_long, &eol)) > 0) {
    yajl_val t = NULL;
    an_error_t e = NULL;
    /* a cut last line is a start that was never recorded: ignore it */
    if (too_long || !eol || an_json_parse(buf, len, "", &t, &e) < 0) {
      an_error_free(&e);
      continue;
    }
    const char *id = an_json_member_str(t, "id");
    yajl_val a = an_json_member_type(t, "attempt", yajl_t_number);
    uint32_t prev = 0;
    if (id && a && YAJL_IS_INTEGER(a) && YAJL_GET_INTEGER(a) > 0 && YAJL_GET_INTEGER(a) < 1000000 &&
        !an_batch_idset_get(done, id, NULL)) {
      an_batch_idset_get(attempts, id, &prev);
      if ((uint32_t) YAJL_GET_INTEGER(a) > prev &&
          an_batch_idset_put(attempts, id, (uint32_t) YAJL_GET_INTEGER(a)) < 0) {
        yajl_tree_free(t);
        return an_error_set(err, ENOMEM, "journal %s", path);
      }
    }
    yajl_tree_free(t);
  }
  return r < 0 ? an_error_set(err, -r, "journal %s: read", path) : 0;
}

static int sum_one(void *arg, const struct an_batch_rec *rec, yajl_val tree, an_error_t *err) {
  (void) tree;
  struct an_batch_summary *s = arg;
  s->counts.by_result[rec->result]++;
  s->counts.done++;
  s->job_ms_total += rec->duration_ms;
  size_t i = s->nslowest;
  while (i > 0 && s->slowest[i - 1].ms < rec->duration_ms) i--;
  if (i >= AN_BATCH_SLOWEST) return 0;
  char *id = strdup(rec->id);
  if (!id) return an_error_set(err, ENOMEM, "summary");
  if (s->nslowest == AN_BATCH_SLOWEST) free(s->slowest[AN_BATCH_SLOWEST - 1].id);
  else s->nslowest++;
  memmove(&s->slowest[i + 1], &s->slowest[i], (s->nslowest - 1 - i) * sizeof s->slowest[0]);
  s->slowest[i].id = id;
  s->slowest[i].ms = rec->duration_ms;
  return 0;
}

int an_batch_results_summarize(int fd, const char *path, struct an_batch_summary *sum,
                               an_error_t *err) {
  memset(sum->counts.by_result, 0, sizeof sum->counts.by_result);
  sum->counts.done = 0;
  sum->job_ms_total = 0;
  return each_record(fd, path, false, sum_one, sum, err);
}

void an_batch_summary_release(struct an_batch_summary *sum) {
  if (!sum) return;
  for (size_t i = 0; i < sum->nslowest; i++) free(sum->slowest[i].id);
  memset(sum, 0, sizeof *sum);
}

/* ---- JUnit -------------------------------------------------------------------------------- */

/* Write s as XML 1.0 character data or attribute value: & < > " ' escaped;
 * characters XML 1.0 forbids (controls other than tab, newline, CR) become
 * U+FFFD.  s is valid UTF-8 (it comes from a parsed JSON record). */
static void xml_text(FILE *f, const char *s, size_t max) {
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *) s; p && *p && n < max; p++, n++) {
    switch (*p) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&apos;", f); break;
    case '\t': case '\n': fputc(*p, f); break;
    case '\r': fputs("&#13;", f); break;
    default:
      if (*p < 0x20 || *p == 0x7f) fputs("\xEF\xBF\xBD", f);
      /* U+FFFE and U+FFFF (EF BF BE/BF) are not XML characters either */
      else if (p[0] == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF)) {
        fputs("\xEF\xBF\xBD", f);
        p += 2;
      } else fputc(*p, f);
    }
  }
}

struct junit {
  FILE *f;
  const char *classname;
};

static void junit_ms(FILE *f, uint64_t ms) {
  fprintf(f, "%llu.%03llu", (unsigned long long) (ms / 1000), (unsigned long long) (ms % 1000));
}

static int junit_case(void *arg, const struct an_batch_rec *rec, yajl_val tree, an_error_t *err) {
  (void) err;
  struct junit *j = arg;
  FILE *f = j->f;
  fputs("    <testcase classname=\"", f);
  xml_text(f, j->classname, SIZE_MAX);
  fputs("\" name=\"", f);
  xml_text(f, rec->id, SIZE_MAX);
  fputs("\" time=\"", f);
  junit_ms(f, rec->duration_ms);
  fputs("\">\n", f);
  const char *tag = rec->result == AN_BATCH_ERROR ? "error" : "failure";
  if (rec->result != AN_BATCH_PASSED) {
    fprintf(f, "      <%s type=\"%s\" message=\"", tag, an_batch_result_name(rec->result));
    xml_text(f, rec->reason ? rec->reason : an_batch_result_name(rec->result), SIZE_MAX);
    fputs("\">", f);
    xml_text(f, rec->reason ? rec->reason : "", SIZE_MAX);
    fprintf(f, "</%s>\n", tag);
  }
  const char *out = an_json_member_str(tree, "stdout"), *errs = an_json_member_str(tree, "stderr");
  if (out && *out) {
    fputs("      <system-out>", f);
    xml_text(f, out, SIZE_MAX);
    fputs("</system-out>\n", f);
  }
  if (errs && *errs) {
    fputs("      <system-err>", f);
    xml_text(f, errs, SIZE_MAX);
    fputs("</system-err>\n", f);
  }
  fputs("    </testcase>\n", f);
  return ferror(f) ? -EIO : 0;
}

int an_batch_junit_write(int fd, const char *results_name, const char *classname,
                         const char *junit_path, const char *suite_name, an_error_t *err) {
  struct an_batch_summary s = {0};
  int r = an_batch_results_summarize(fd, results_name, &s, err);
  if (r < 0) {
    an_batch_summary_release(&s);
    return r;
  }
  cleanup_free char *tmp = NULL;
  if (asprintf(&tmp, "%s.tmp.%d", junit_path, (int) getpid()) < 0) {
    an_batch_summary_release(&s);
    return an_error_set(err, ENOMEM, "junit");
  }
  FILE *f = fopen(tmp, "wex");
  if (!f) {
    an_batch_summary_release(&s);
    return an_error_set(err, errno, "junit %s", tmp);
  }
  uint64_t failures = s.counts.by_result[AN_BATCH_FAILED] + s.counts.by_result[AN_BATCH_TIMED_OUT] +
                      s.counts.by_result[AN_BATCH_OOM];
  char ts[32];
  an_batch_now_rfc3339(ts);
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
  fprintf(f, "<testsuites tests=\"%llu\" failures=\"%llu\" errors=\"%llu\" time=\"",
          (unsigned long long) s.counts.done, (unsigned long long) failures,
          (unsigned long long) s.counts.by_result[AN_BATCH_ERROR]);
  junit_ms(f, s.job_ms_total);
  fputs("\">\n  <testsuite name=\"", f);
  xml_text(f, suite_name, SIZE_MAX);
  fprintf(f, "\" tests=\"%llu\" failures=\"%llu\" errors=\"%llu\" skipped=\"0\" timestamp=\"%.19s\" time=\"",
          (unsigned long long) s.counts.done, (unsigned long long) failures,
          (unsigned long long) s.counts.by_result[AN_BATCH_ERROR], ts);
  junit_ms(f, s.job_ms_total);
  fputs("\">\n", f);
  an_batch_summary_release(&s);
  struct junit j = {.f = f, .classname = classname};
  r = each_record(fd, results_name, false, junit_case, &j, err);
  fputs("  </testsuite>\n</testsuites>\n", f);
  if (r >= 0 && (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) < 0))
    r = an_error_set(err, errno ? errno : EIO, "junit %s: write", tmp);
  if (fclose(f) != 0 && r >= 0) r = an_error_set(err, errno, "junit %s: close", tmp);
  if (r >= 0 && rename(tmp, junit_path) < 0) r = an_error_set(err, errno, "junit %s: rename", junit_path);
  if (r < 0) unlink(tmp);
  return r < 0 ? r : 0;
}
