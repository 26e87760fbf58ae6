/* tests/lib/serve_fixture.c — see serve_fixture.h. */
#include "serve_fixture.h"
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "batch_fixture.h"
#include "util.h"

pid_t sv_start(char sock[400]) { return sv_start_opt(sock, NULL, NULL); }

pid_t sv_start_opt(char sock[400], const char *opt, const char *val) {
  char tokens[400];
  snprintf(tokens, sizeof tokens, "%s/tokens", bf_work);
  const char *text = SV_TOK_A " alice\n" SV_TOK_B " bob\n" SV_TOK_C " carol max-sandboxes=1\n";
  an_test_write_file(tokens, text, strlen(text), 0600);
  snprintf(sock, 400, "%s/serve.sock", bf_work);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    char listen[420];
    snprintf(listen, sizeof listen, "unix:%s", sock);
    execl(bf_an_bin, bf_an_bin, "--root", bf_root, "serve", "--quiet", "--tokens", tokens, "--listen", listen,
          opt, val, (char *) NULL);
    _exit(127);
  }
  struct stat st;
  for (int i = 0; i < 200 && stat(sock, &st) != 0; i++) usleep(50000);
  cr_assert_eq(stat(sock, &st), 0, "serve did not make %s", sock);
  return pid;
}

void sv_stop(pid_t *pid) {
  if (*pid <= 0) return;
  kill(*pid, SIGTERM);
  waitpid(*pid, NULL, 0);
  *pid = 0;
}

int sv_call(const char *sock, const char *token, const char *method, const char *path, const char *body,
            char **out) {
  char bodyf[400], outf[400];
  snprintf(bodyf, sizeof bodyf, "%s/.body", bf_work);
  snprintf(outf, sizeof outf, "%s/.resp", bf_work);
  if (body) an_test_write_file(bodyf, body, strlen(body), 0600);
  char cmd[2000];
  snprintf(cmd, sizeof cmd,
           "curl -s -o '%s' -w '%%{http_code}' --unix-socket '%s' -X %s -H 'Authorization: Bearer %s' "
           "-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' "
           "%s%s%s 'http://localhost%s'",
           outf, sock, method, token, body ? "--data-binary @'" : "", body ? bodyf : "", body ? "'" : "", path);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  int code = 0;
  if (fscanf(p, "%d", &code) != 1) code = -1;
  pclose(p);
  *out = an_test_read_file(outf, NULL);
  if (!*out) *out = strdup("");
  return code;
}

char *sv_member(const char *json, const char *key) {
  yajl_val v = yajl_tree_parse(json, NULL, 0);
  const char *path[] = {key, NULL};
  yajl_val m = v ? yajl_tree_get(v, path, yajl_t_string) : NULL;
  const char *str = m ? YAJL_GET_STRING(m) : NULL;
  char *s = str ? strdup(str) : NULL;
  yajl_tree_free(v);
  cr_assert_not_null(s, "no \"%s\" in %s", key, json);
  return s;
}
