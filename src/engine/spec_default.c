/* engine/spec_default.c — an_spec_new_default: the config that
 * `agentnest-oci spec` writes.  It is runc's `spec` template changed to
 * AgentNest's secure defaults (DESIGN.md, "Secure defaults"):
 *
 * - namespaces user, mount, pid, network, ipc, uts, cgroup; the user
 *   namespace maps container ids 0..65535 onto host ids 100000..165535, so
 *   container root is never host root (runc's template has no userns);
 * - process.user 0:0 *inside* that namespace, with no capabilities in any
 *   of the five sets and noNewPrivileges on;
 * - terminal false (runc's template says true): `agentnest-oci run` then
 *   works without a --console-socket, and no tty of the caller is shared
 *   with the container (BL-11);
 * - read-only root "rootfs"; runc's standard mounts (/proc, /dev tmpfs,
 *   /dev/pts, /dev/shm 64 MiB, /dev/mqueue, /sys ro, /sys/fs/cgroup ro)
 *   plus /tmp as a 64 MiB nosuid,nodev,noexec tmpfs;
 * - runc's maskedPaths and readonlyPaths plus /sys/devices/virtual/powercap
 *   (energy counters, CVE-2020-8694);
 * - the DESIGN.md limits: memory 512 MiB without swap, 1.0 CPU, 256 pids,
 *   and every device denied in the device cgroup.
 *
 * It carries no seccomp filter: the profile is a file
 * (profiles/seccomp/default.json) and this function does no I/O.  Front
 * ends attach it with an_seccomp_profile_load() (agentnest/seccomp_profile.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "agentnest/spec.h"
#include "engine/spec_internal.h"

#define AN_DEFAULT_HOST_ID 100000u
#define AN_DEFAULT_ID_RANGE 65536u

/* Allocation with a sticky out-of-memory flag: build first, check once. */
struct builder { bool oom; };

static char *sdup(struct builder *b, const char *s) {
  char *d = strdup(s);
  if (!d) b->oom = true;
  return d;
}

/* A NULL-terminated vector of copies of the given strings (list ends with NULL). */
__attribute__((sentinel)) static char **svec(struct builder *b, ...) {
  va_list ap;
  size_t n = 0;
  va_start(ap, b);
  while (va_arg(ap, const char *)) n++;
  va_end(ap);
  char **v = calloc(n + 1, sizeof *v);
  if (!v) { b->oom = true; return NULL; }
  va_start(ap, b);
  for (size_t i = 0; i < n; i++) v[i] = sdup(b, va_arg(ap, const char *));
  va_end(ap);
  return v;
}

static void *zalloc(struct builder *b, size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) b->oom = true;
  return p;
}

static void set_mount(struct builder *b, struct an_spec_mount *m, const char *dest,
                      const char *type, const char *source, char **options) {
  m->destination = sdup(b, dest);
  m->type = sdup(b, type);
  m->source = sdup(b, source);
  m->options = options;
}

static void build_process(struct builder *b, struct an_spec *s) {
  struct an_spec_process *p = s->process = zalloc(b, 1, sizeof *p);
  if (!p) return;
  p->terminal = false;
  p->user.uid = 0;
  p->user.gid = 0;
  p->args = svec(b, "sh", NULL);
  p->env = svec(b, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "TERM=xterm", NULL);
  p->cwd = sdup(b, "/");
  if ((p->capabilities = zalloc(b, 1, sizeof *p->capabilities))) {
    /* present and empty: "no capabilities", not "unspecified" */
    p->capabilities->bounding = svec(b, NULL);
    p->capabilities->effective = svec(b, NULL);
    p->capabilities->inheritable = svec(b, NULL);
    p->capabilities->permitted = svec(b, NULL);
    p->capabilities->ambient = svec(b, NULL);
  }
  if ((p->rlimits = zalloc(b, 1, sizeof *p->rlimits))) {
    p->n_rlimits = 1;
    p->rlimits[0] = (struct an_spec_rlimit){ RLIMIT_NOFILE, 1024, 1024 };
  }
  p->no_new_privileges = true;
}

static void build_mounts(struct builder *b, struct an_spec *s) {
  enum { N = 8 };
  struct an_spec_mount *m = s->mounts = zalloc(b, N, sizeof *m);
  if (!m) return;
  s->n_mounts = N;
  set_mount(b, &m[0], "/proc", "proc", "proc", svec(b, "nosuid", "noexec", "nodev", NULL));
  set_mount(b, &m[1], "/dev", "tmpfs", "tmpfs",
            svec(b, "nosuid", "strictatime", "mode=755", "size=65536k", NULL));
  set_mount(b, &m[2], "/dev/pts", "devpts", "devpts",
            svec(b, "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5",
                 NULL));
  set_mount(b, &m[3], "/dev/shm", "tmpfs", "shm",
            svec(b, "nosuid", "noexec", "nodev", "mode=1777", "size=65536k", NULL));
  set_mount(b, &m[4], "/dev/mqueue", "mqueue", "mqueue",
            svec(b, "nosuid", "noexec", "nodev", NULL));
  set_mount(b, &m[5], "/sys", "sysfs", "sysfs", svec(b, "nosuid", "noexec", "nodev", "ro", NULL));
  set_mount(b, &m[6], "/sys/fs/cgroup", "cgroup", "cgroup",
            svec(b, "nosuid", "noexec", "nodev", "relatime", "ro", NULL));
  set_mount(b, &m[7], "/tmp", "tmpfs", "tmpfs",
            svec(b, "nosuid", "nodev", "noexec", "mode=1777", "size=65536k", NULL));
}

static void build_linux(struct builder *b, struct an_spec_linux *l) {
  static const int ns[] = { CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS,
                            CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWCGROUP };
  size_t nns = sizeof ns / sizeof ns[0];
  if ((l->namespaces = zalloc(b, nns, sizeof *l->namespaces))) {
    l->n_namespaces = nns;
    for (size_t i = 0; i < nns; i++) {
      l->namespaces[i].clone_flag = ns[i];
      l->ns_flags |= ns[i];
    }
  }
  const struct an_spec_id_mapping map = { 0, AN_DEFAULT_HOST_ID, AN_DEFAULT_ID_RANGE };
  if ((l->uid_mappings = zalloc(b, 1, sizeof map))) { l->uid_mappings[0] = map; l->n_uid_mappings = 1; }
  if ((l->gid_mappings = zalloc(b, 1, sizeof map))) { l->gid_mappings[0] = map; l->n_gid_mappings = 1; }

  struct an_spec_resources *r = l->resources = zalloc(b, 1, sizeof *r);
  if (r) {
    if ((r->devices = zalloc(b, 1, sizeof *r->devices))) {
      r->n_devices = 1;
      r->devices[0] = (struct an_spec_device_cgroup){ false, 'a', -1, -1, sdup(b, "rwm") };
    }
    r->has_memory_limit = true;
    r->memory_limit = 512ll << 20;
    r->has_memory_swap = true;          /* memory+swap == memory: no swap */
    r->memory_swap = 512ll << 20;
    r->has_cpu_quota = true;
    r->cpu_quota = 100000;              /* 1.0 CPU: 100 ms per 100 ms period */
    r->has_cpu_period = true;
    r->cpu_period = 100000;
    r->has_pids_limit = true;
    r->pids_limit = 256;
  }
  l->masked_paths = svec(b, "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
                         "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats",
                         "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
                         "/sys/devices/virtual/powercap", NULL);
  l->readonly_paths = svec(b, "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                           "/proc/sysrq-trigger", NULL);
}

int an_spec_new_default(struct an_spec **out, an_error_t *err) {
  struct builder b = { false };
  struct an_spec *s = zalloc(&b, 1, sizeof *s);
  if (!s) return an_error_set(err, ENOMEM, "default config");
  s->oci_version = sdup(&b, "1.2.0");
  s->root.path = sdup(&b, "rootfs");
  s->root.readonly = true;
  s->hostname = sdup(&b, "agentnest");
  build_process(&b, s);
  build_mounts(&b, s);
  build_linux(&b, &s->linux);
  if (b.oom) {
    an_spec_free(s);
    return an_error_set(err, ENOMEM, "default config");
  }
  *out = s;
  return 0;
}
