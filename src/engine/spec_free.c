/* engine/spec_free.c — an_spec_free: release a parsed or built spec and
 * everything it owns (agentnest/spec.h).  Tolerates partly filled trees, so
 * the parser can free whatever it built before an error. */
#include <stdlib.h>
#include "agentnest/spec.h"
#include "engine/spec_internal.h"

static void free_kv(struct an_spec_key_value *kv, size_t n) {
  for (size_t i = 0; kv && i < n; i++) { free(kv[i].key); free(kv[i].value); }
  free(kv);
}

static void free_hooks(struct an_spec_hook *h, size_t n) {
  for (size_t i = 0; h && i < n; i++) {
    free(h[i].path);
    an_strv_free(h[i].args);
    an_strv_free(h[i].env);
  }
  free(h);
}

static void free_process(struct an_spec_process *p) {
  if (!p) return;
  free(p->cwd);
  an_strv_free(p->env);
  an_strv_free(p->args);
  free(p->user.additional_gids);
  free(p->user.username);
  if (p->capabilities) {
    an_strv_free(p->capabilities->bounding);
    an_strv_free(p->capabilities->effective);
    an_strv_free(p->capabilities->inheritable);
    an_strv_free(p->capabilities->permitted);
    an_strv_free(p->capabilities->ambient);
    free(p->capabilities);
  }
  free(p->rlimits);
  free(p->apparmor_profile);
  free(p->selinux_label);
  free(p);
}

static void free_resources(struct an_spec_resources *r) {
  if (!r) return;
  for (size_t i = 0; r->devices && i < r->n_devices; i++) free(r->devices[i].access);
  free(r->devices);
  free(r->cpu_cpus);
  free(r->cpu_mems);
  free(r->blkio_weight_device);
  free(r->blkio_throttle_read_bps);
  free(r->blkio_throttle_write_bps);
  free(r->blkio_throttle_read_iops);
  free(r->blkio_throttle_write_iops);
  for (size_t i = 0; r->hugepage_limits && i < r->n_hugepage_limits; i++)
    free(r->hugepage_limits[i].page_size);
  free(r->hugepage_limits);
  free_kv(r->unified, r->n_unified);
  free(r);
}

void an_spec_seccomp_free(struct an_spec_seccomp *s) {
  if (!s) return;
  free(s->architectures);
  an_strv_free(s->flags);
  free(s->listener_path);
  free(s->listener_metadata);
  for (size_t i = 0; s->syscalls && i < s->n_syscalls; i++) {
    an_strv_free(s->syscalls[i].names);
    free(s->syscalls[i].args);
  }
  free(s->syscalls);
  free(s);
}

static void free_linux(struct an_spec_linux *l) {
  for (size_t i = 0; l->namespaces && i < l->n_namespaces; i++) free(l->namespaces[i].path);
  free(l->namespaces);
  free(l->uid_mappings);
  free(l->gid_mappings);
  free_kv(l->sysctl, l->n_sysctl);
  free_resources(l->resources);
  free(l->cgroups_path);
  an_spec_seccomp_free(l->seccomp);
  an_strv_free(l->masked_paths);
  an_strv_free(l->readonly_paths);
  free(l->rootfs_propagation);
  free(l->mount_label);
  for (size_t i = 0; l->devices && i < l->n_devices; i++) free(l->devices[i].path);
  free(l->devices);
}

void an_spec_free(struct an_spec *spec) {
  if (!spec) return;
  free(spec->oci_version);
  free(spec->root.path);
  for (size_t i = 0; spec->mounts && i < spec->n_mounts; i++) {
    struct an_spec_mount *m = &spec->mounts[i];
    free(m->destination);
    free(m->type);
    free(m->source);
    an_strv_free(m->options);
    free(m->uid_mappings);
    free(m->gid_mappings);
  }
  free(spec->mounts);
  free_process(spec->process);
  free(spec->hostname);
  free(spec->domainname);
  free_hooks(spec->hooks.prestart, spec->hooks.n_prestart);
  free_hooks(spec->hooks.create_runtime, spec->hooks.n_create_runtime);
  free_hooks(spec->hooks.create_container, spec->hooks.n_create_container);
  free_hooks(spec->hooks.start_container, spec->hooks.n_start_container);
  free_hooks(spec->hooks.poststart, spec->hooks.n_poststart);
  free_hooks(spec->hooks.poststop, spec->hooks.n_poststop);
  free_kv(spec->annotations, spec->n_annotations);
  free_linux(&spec->linux);
  free(spec);
}

void an_spec_resources_free(struct an_spec_resources *res) { free_resources(res); }
