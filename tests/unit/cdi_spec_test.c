/* Unit tests for agentnest/cdi.h (issue 16 item 4): CDI specs in JSON and
 * YAML read from a test-made directory and their containerEdits applied to
 * a default OCI spec; the refusals (a name no spec defines, hooks without
 * AN_CDI_ALLOW_HOOKS, a world-writable spec, YAML aliases, an unknown
 * cdiVersion) and the sandbox options that ask for devices (--gpu). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/cdi.h"
#include "agentnest/sandbox_opts.h"
#include "agentnest/spec.h"
#include "rm_tree.h"
#include "util.h"
#include "ctx_fixture.h"

static char dir[64];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/an-cdi-unit-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) { an_test_rm_tree(dir); }

TestSuite(cdi, .init = setup, .fini = teardown);

static void write_spec(const char *name, const char *text, mode_t mode) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  an_test_write_file(path, text, strlen(text), mode);
  cr_assert_eq(chmod(path, mode), 0);
}

static const char json_spec[] =
    "{\"cdiVersion\": \"0.6.0\", \"kind\": \"example.com/fake\",\n"
    " \"devices\": [\n"
    "  {\"name\": \"0\", \"containerEdits\": {\n"
    "    \"deviceNodes\": [{\"path\": \"/dev/fakegpu0\", \"hostPath\": \"/dev/null\"}],\n"
    "    \"env\": [\"FAKE_VISIBLE=0\"]}},\n"
    "  {\"name\": \"1\", \"containerEdits\": {\n"
    "    \"deviceNodes\": [{\"path\": \"/dev/fakegpu1\", \"type\": \"c\", \"major\": 1, \"minor\": 5,\n"
    "                     \"permissions\": \"rw\", \"fileMode\": 432}]}}],\n"
    " \"containerEdits\": {\"mounts\": [{\"hostPath\": \"/usr/lib\", \"containerPath\": \"/opt/fakelib\",\n"
    "                                  \"options\": [\"rw\", \"bind\"]}],\n"
    "                    \"env\": [\"FAKE_DRIVER=1\"]}}\n";

static const char yaml_spec[] =
    "cdiVersion: \"0.5.0\"\n"
    "kind: example.com/yaml\n"
    "devices:\n"
    "  - name: gpu0\n"
    "    containerEdits:\n"
    "      deviceNodes:\n"
    "        - path: /dev/yamlgpu0\n"
    "          hostPath: /dev/null\n"
    "          fileMode: 0640\n"
    "      env:\n"
    "        - YAML_DEVICE=gpu0\n"
    "containerEdits:\n"
    "  mounts:\n"
    "    - hostPath: /usr/lib\n"
    "      containerPath: /opt/yamllib\n"
    "      options: [ro, nosuid, nodev, bind]\n";

static struct an_spec *default_spec(void) {
  struct an_spec *s = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_spec_new_default(&s, &err), 0);
  return s;
}

static int apply(struct an_spec *s, const char *const *names, unsigned flags, an_error_t *err) {
  const char *dirs[] = {dir, NULL};
  return an_cdi_apply_from_dirs(dirs, s, names, flags, err);
}

static const struct an_spec_device *find_dev(const struct an_spec *s, const char *path) {
  for (size_t i = 0; i < s->linux.n_devices; i++)
    if (strcmp(s->linux.devices[i].path, path) == 0) return &s->linux.devices[i];
  return NULL;
}

static const struct an_spec_mount *find_mount(const struct an_spec *s, const char *dest) {
  for (size_t i = 0; i < s->n_mounts; i++)
    if (strcmp(s->mounts[i].destination, dest) == 0) return &s->mounts[i];
  return NULL;
}

static bool has_env(const struct an_spec *s, const char *kv) {
  for (char **e = s->process->env; e && *e; e++)
    if (strcmp(*e, kv) == 0) return true;
  return false;
}

static bool has_opt(const struct an_spec_mount *m, const char *o) {
  for (char **p = m->options; p && *p; p++)
    if (strcmp(*p, o) == 0) return true;
  return false;
}

static bool has_rule(const struct an_spec *s, char type, int64_t major, int64_t minor, const char *acc) {
  const struct an_spec_resources *r = s->linux.resources;
  for (size_t i = 0; r && i < r->n_devices; i++)
    if (r->devices[i].allow && r->devices[i].type == type && r->devices[i].major == major &&
        r->devices[i].minor == minor && r->devices[i].access && strcmp(r->devices[i].access, acc) == 0)
      return true;
  return false;
}

Test(cdi, json_spec_edits_nodes_cgroup_mounts_and_env) {
  write_spec("fake.json", json_spec, 0644);
  struct an_spec *s = default_spec();
  an_error_t err = NULL;
  const char *names[] = {"example.com/fake=0", "example.com/fake=1", NULL};
  cr_assert_eq(apply(s, names, 0, &err), 0, "%s", err ? err->msg : "");
  const struct an_spec_device *d0 = find_dev(s, "/dev/fakegpu0"), *d1 = find_dev(s, "/dev/fakegpu1");
  cr_assert(d0 && d1);
  /* major/minor/type of device 0 come from its host node /dev/null (1:3) */
  cr_expect(d0->type == 'c' && d0->major == 1 && d0->minor == 3, "%c %lld:%lld", d0->type,
            (long long) d0->major, (long long) d0->minor);
  cr_expect_str_eq(d0->host_path, "/dev/null");
  cr_expect(d1->type == 'c' && d1->major == 1 && d1->minor == 5 && d1->file_mode == 0660);
  cr_expect(has_rule(s, 'c', 1, 3, "rwm"), "no cgroup rule for 1:3 rwm");
  cr_expect(has_rule(s, 'c', 1, 5, "rw"), "no cgroup rule for 1:5 rw");
  const struct an_spec_mount *m = find_mount(s, "/opt/fakelib");
  cr_assert_not_null(m);
  cr_expect_str_eq(m->source, "/usr/lib");
  cr_expect(has_opt(m, "ro") && has_opt(m, "nosuid") && has_opt(m, "nodev") && has_opt(m, "bind"));
  cr_expect(!has_opt(m, "rw"), "the spec's rw was kept");
  cr_expect(has_env(s, "FAKE_VISIBLE=0") && has_env(s, "FAKE_DRIVER=1"));
  an_spec_free(s);
}

Test(cdi, yaml_spec_is_read_through_libyaml) {
  write_spec("yaml.yaml", yaml_spec, 0644);
  struct an_spec *s = default_spec();
  an_error_t err = NULL;
  const char *names[] = {"example.com/yaml=gpu0", NULL};
  cr_assert_eq(apply(s, names, 0, &err), 0, "%s", err ? err->msg : "");
  const struct an_spec_device *d = find_dev(s, "/dev/yamlgpu0");
  cr_assert_not_null(d);
  cr_expect(d->major == 1 && d->minor == 3 && d->file_mode == 0640, "mode %o", (unsigned) d->file_mode);
  cr_expect_not_null(find_mount(s, "/opt/yamllib"));
  cr_expect(has_env(s, "YAML_DEVICE=gpu0"));
  an_spec_free(s);
}

Test(cdi, all_means_every_device_of_the_kind) {
  write_spec("fake.json", json_spec, 0644);
  struct an_spec *s = default_spec();
  an_error_t err = NULL;
  const char *names[] = {"example.com/fake=all", NULL};
  cr_assert_eq(apply(s, names, 0, &err), 0, "%s", err ? err->msg : "");
  cr_expect(find_dev(s, "/dev/fakegpu0") && find_dev(s, "/dev/fakegpu1"));
  an_spec_free(s);
}

Test(cdi, a_name_no_spec_defines_is_refused_naming_it_and_the_dirs) {
  write_spec("fake.json", json_spec, 0644);
  struct an_spec *s = default_spec();
  an_error_t err = NULL;
  const char *names[] = {"example.com/fake=7", NULL};
  cr_assert_eq(apply(s, names, 0, &err), -ENOENT);
  cr_expect(strstr(err->msg, "example.com/fake=7") && strstr(err->msg, dir), "%s", err->msg);
  an_error_free(&err);
  const char *gpu[] = {"nvidia.com/gpu=all", NULL};
  cr_assert_eq(apply(s, gpu, 0, &err), -ENOENT);
  char want[256];
  snprintf(want, sizeof want, "no CDI spec defines nvidia.com/gpu in %s: install the NVIDIA "
           "Container Toolkit and run nvidia-ctk cdi generate", dir);
  cr_expect(strstr(err->msg, want), "%s", err->msg);
  an_error_free(&err);
  const char *bad[] = {"fake0", NULL};
  cr_assert_eq(apply(s, bad, 0, &err), -EINVAL);
  an_error_free(&err);
  an_spec_free(s);
}

Test(cdi, hooks_are_refused_without_allow_hooks_naming_the_hook) {
  write_spec("hook.json",
             "{\"cdiVersion\": \"0.8.0\", \"kind\": \"example.com/hook\", \"devices\": [{\"name\": \"x\",\n"
             " \"containerEdits\": {\"hooks\": [{\"hookName\": \"createContainer\",\n"
             "   \"path\": \"/usr/bin/fake-hook\", \"args\": [\"fake-hook\", \"x\"]}]}}]}\n", 0644);
  struct an_spec *s = default_spec();
  an_error_t err = NULL;
  const char *names[] = {"example.com/hook=x", NULL};
  cr_assert_eq(apply(s, names, 0, &err), -EPERM);
  cr_expect(strstr(err->msg, "/usr/bin/fake-hook") && strstr(err->msg, "--cdi-allow-hooks"), "%s", err->msg);
  an_error_free(&err);
  cr_assert_eq(apply(s, names, AN_CDI_ALLOW_HOOKS, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(s->hooks.n_create_container, 1);
  cr_expect_str_eq(s->hooks.create_container[0].path, "/usr/bin/fake-hook");
  an_spec_free(s);
}

Test(cdi, a_spec_others_may_write_is_refused) {
  write_spec("fake.json", json_spec, 0666);
  struct an_spec *s = default_spec();
  an_error_t err = NULL;
  const char *names[] = {"example.com/fake=0", NULL};
  cr_assert_eq(apply(s, names, 0, &err), -EPERM);
  cr_expect(strstr(err->msg, "fake.json"), "%s", err->msg);
  an_error_free(&err);
  an_spec_free(s);
}

Test(cdi, malformed_specs_are_errors_naming_the_file) {
  const char *cases[][2] = {
    {"v.json", "{\"cdiVersion\": \"9.9.9\", \"kind\": \"a.b/c\", \"devices\": []}"},
    {"k.json", "{\"cdiVersion\": \"0.6.0\", \"kind\": \"nokind\", \"devices\": []}"},
    {"a.yaml", "cdiVersion: 0.6.0\nkind: a.b/c\nx: &a [1]\ndevices: *a\n"},
    {"r.json", "{\"cdiVersion\": \"0.6.0\", \"kind\": \"a.b/c\", \"devices\": [{\"name\": \"0\","
               " \"containerEdits\": {\"mounts\": [{\"hostPath\": \"lib\", \"containerPath\": \"/l\"}]}}]}"},
    {"g.json", "{\"cdiVersion\": \"0.7.0\", \"kind\": \"a.b/c\", \"devices\": [{\"name\": \"0\","
               " \"containerEdits\": {\"deviceNodes\": [{\"path\": \"/dev/x\", \"permissions\": \"rwx\"}]}}]}"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    write_spec(cases[i][0], cases[i][1], 0644);
    struct an_cdi_registry *reg = NULL;
    an_error_t err = NULL;
    const char *dirs[] = {dir, NULL};
    cr_expect_eq(an_cdi_registry_load(dirs, &reg, &err), -EINVAL, "%s loaded", cases[i][0]);
    cr_expect(err && strstr(err->msg, cases[i][0]), "%s: %s", cases[i][0], err ? err->msg : "");
    an_error_free(&err);
    an_cdi_registry_free(reg);
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, cases[i][0]);
    unlink(path);
  }
}

Test(cdi, annotations_list_qualified_names) {
  struct an_spec *s = default_spec();
  s->annotations = realloc(s->annotations, (s->n_annotations + 2) * sizeof *s->annotations);
  s->annotations[s->n_annotations++] = (struct an_spec_key_value){strdup("cdi.k8s.io/test"),
                                                                  strdup("a.b/c=0,a.b/c=1")};
  s->annotations[s->n_annotations++] = (struct an_spec_key_value){strdup("other"), strdup("x.y/z=0")};
  char **names = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_cdi_annotation_devices(s, &names, &err), 0);
  cr_assert(names && names[0] && names[1] && !names[2]);
  cr_expect_str_eq(names[0], "a.b/c=0");
  cr_expect_str_eq(names[1], "a.b/c=1");
  for (char **n = names; *n; n++) free(*n);
  free(names);
  an_spec_free(s);
}

Test(cdi, gpu_option_grammar) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "gpu", "0,1", &err), 0);
  cr_assert_eq(an_sandbox_opts_set_option(o, "gpu", "example.com/fake=0", &err), 0);
  char *const *d = an_sandbox_opts_cdi_devices(o);
  cr_assert(d[0] && d[1] && d[2] && !d[3]);
  cr_expect_str_eq(d[0], "nvidia.com/gpu=0");
  cr_expect_str_eq(d[1], "nvidia.com/gpu=1");
  cr_expect_str_eq(d[2], "example.com/fake=0");
  const char *bad[] = {"", "0,,1", "x", "a=b", "nvidia.com/gpu=", "-1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_expect_eq(an_sandbox_opts_set_option(o, "gpu", bad[i], &err), -EINVAL, "\"%s\" accepted", bad[i]);
    an_error_free(&err);
  }
  cr_expect_eq(an_sandbox_opts_set_option(o, "cdi_spec_dir", "relative", &err), -EINVAL);
  an_error_free(&err);
  an_sandbox_opts_free(o);
}
