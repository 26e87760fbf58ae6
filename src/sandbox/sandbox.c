/* sandbox/sandbox.c — create, open and destroy a sandbox: image lookup, id
 * and id range, workspace, the spec with agentnest-init as pid 1, the
 * engine container, the monitor.  What does NOT live here: exec (exec.c,
 * exec_spawn.c), the monitor itself (monitor.c), teardown (teardown.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/container.h"
#include "agentnest/ctx.h"
#include "agentnest/image.h"
#include "engine/process.h"
#include "agentnest/doctor.h"
#include "sandbox/approval_internal.h"
#include "sandbox/audit_internal.h"
#include "sandbox/egress_run.h"
#include "sandbox/opts_internal.h"
#include "sandbox/sandbox_internal.h"
#include "sandbox/seccomp_check.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"

int an_sandbox_init_path(char **path, an_error_t *err) {
  return an_ctx_init_path(NULL, path, err);
}

static int mkdir_mode(const char *path, mode_t mode, bool excl, an_error_t *err);

static int mkdir_mode(const char *path, mode_t mode, bool excl, an_error_t *err) {
  if (mkdir(path, mode) < 0) {
    if (errno != EEXIST || excl) return an_error_set(err, errno, "mkdir %s", path);
    return 0;
  }
  if (chmod(path, mode) < 0) return an_error_set(err, errno, "chmod %s", path);
  return 0;
}

/* The engine mounts the workspace (and binds agentnest-init) as the sandbox's
 * own host ids, which must be able to search the store root on the way to
 * <root>/sandboxes/<id>/workspace.  A store root made
 * 0700 (by hand or an older version) would make every create fail with EACCES
 * deep inside the engine; add search permission for others (never read). */
static int ensure_traversable(const char *root, an_error_t *err) {
  struct stat st;
  if (stat(root, &st) < 0) return an_error_set(err, errno, "stat store root %s", root);
  if ((st.st_mode & 0011) == 0011) return 0;
  if (chmod(root, (st.st_mode & 07777) | 0011) < 0)
    return an_error_set(err, errno, "store root %s: add search permission for sandbox ids", root);
  return 0;
}

/* Add the read-only bind of agentnest-init to the spec. */
static int add_init_mount(struct an_spec *spec, const char *init_path, an_error_t *err) {
  struct an_spec_mount *m = realloc(spec->mounts, (spec->n_mounts + 1) * sizeof *m);
  if (!m) return an_error_set(err, ENOMEM, "spec mounts");
  spec->mounts = m;
  m = &spec->mounts[spec->n_mounts];
  memset(m, 0, sizeof *m);
  m->options = calloc(5, sizeof *m->options);
  if (!m->options || !(m->destination = strdup(AN_SB_INIT_DEST)) || !(m->type = strdup("bind")) ||
      !(m->source = strdup(init_path)) || !(m->options[0] = strdup("bind")) ||
      !(m->options[1] = strdup("ro")) || !(m->options[2] = strdup("nosuid")) ||
      !(m->options[3] = strdup("nodev"))) {
    spec->n_mounts++;   /* an_spec_free frees what was set */
    return an_error_set(err, ENOMEM, "spec mounts");
  }
  spec->n_mounts++;
  return 0;
}

/* Names of secrets: the spec env entries whose values are secret values. */
static int collect_secrets(const struct an_sandbox_opts *opts, const struct an_spec *spec,
                           struct an_sb_record *rec, an_error_t *err) {
  char *const *vals = an_sandbox_opts_secret_values(opts);
  size_t n = 0;
  while (vals[n]) n++;
  if (!n) return 0;
  rec->secrets = calloc(n, sizeof *rec->secrets);
  if (!rec->secrets) return an_error_set(err, ENOMEM, "secrets");
  for (size_t i = 0; i < n; i++) {
    const char *name = NULL;
    for (char **e = spec->process->env; e && *e; e++) {
      const char *eq = strchr(*e, '=');
      if (eq && !strcmp(eq + 1, vals[i])) name = *e;   /* later entries win */
    }
    char *nm = name ? strndup(name, (size_t) (strchr(name, '=') - name)) : strdup("SECRET");
    char *v = strdup(vals[i]);
    if (!nm || !v) { free(nm); free(v); return an_error_set(err, ENOMEM, "secrets"); }
    rec->secrets[rec->nsecrets].name = nm;
    rec->secrets[rec->nsecrets++].value = v;
  }
  return 0;
}

/* A copy of env with "NAME=" (value left out) for each secret's entry: what
 * the engine's config.json records.  One allocation (the array, then the
 * strings): free() it. */
static char **env_without_secrets(char **env, const struct an_sb_record *rec) {
  size_t n = 0, bytes = 0;
  for (char **e = env; e && *e; e++, n++) bytes += strlen(*e) + 1;
  /* one allocation: the array, then the strings */
  char **out = malloc((n + 1) * sizeof *out + bytes);
  if (!out) return NULL;
  char *p = (char *) (out + n + 1);
  for (size_t i = 0; i < n; i++) {
    const char *eq = strchr(env[i], '=');
    size_t kl = eq ? (size_t) (eq - env[i]) : strlen(env[i]);
    bool secret = false;
    for (size_t k = 0; eq && k < rec->nsecrets; k++)
      if (strlen(rec->secrets[k].name) == kl && !strncmp(env[i], rec->secrets[k].name, kl) &&
          !strcmp(eq + 1, rec->secrets[k].value))
        secret = true;
    out[i] = p;
    if (secret) {
      memcpy(p, env[i], kl + 1); /* "NAME=" */
      p[kl + 1] = '\0';
      p += kl + 2;
    } else {
      p = stpcpy(p, env[i]) + 1;
    }
  }
  out[n] = NULL;
  return out;
}

static int claim_name(const char *root, const char *name, const char *id, an_error_t *err) {
  char dir[PATH_MAX], link[PATH_MAX + 256], target[64];
  snprintf(dir, sizeof dir, "%s/%s", root, AN_SB_NAMES_DIR);
  int r = mkdir_mode(dir, 0700, false, err);
  if (r < 0) return r;
  snprintf(link, sizeof link, "%s/%s", dir, name);
  for (int tries = 0; tries < 3; tries++) {
    if (symlink(id, link) == 0) return 0;
    if (errno != EEXIST) return an_error_set(err, errno, "symlink %s", link);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0) {
      target[n] = '\0';
      char sdir[PATH_MAX + 64];
      snprintf(sdir, sizeof sdir, "%s/%s/%s", root, AN_SB_DIR, target);
      /* the holder's id is not told: through serve or mcp it may be another
       * client's, whose ids every other answer keeps from this one */
      if (access(sdir, F_OK) == 0)
        return an_error_set(err, EEXIST, "sandbox name %s: in use by another sandbox", name);
    }
    unlink(link);   /* stale: its sandbox is gone */
  }
  return an_error_set(err, EEXIST, "sandbox name %s: in use", name);
}

/* <dir>/options.json: the options of the sandbox, read back by
 * an_sandbox_open_ctx.  A new file (O_EXCL); 0 or -errno. */
static int write_options(const char *dir, const struct an_sandbox_opts *opts, an_error_t *err) {
  cleanup_free char *oj = NULL;
  char op[PATH_MAX];
  snprintf(op, sizeof op, "%s/%s", dir, AN_SB_OPTIONS_FILE);
  int r = an_sandbox_opts_to_json(opts, &oj, err);
  if (r < 0) return r;
  cleanup_close int fd = open(op, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return an_error_set(err, errno, "create %s", op);
  if ((r = an_write_all(fd, oj, strlen(oj), op, err)) < 0) return r;
  int c = fd;
  fd = -1;
  if (close(c) != 0) return an_error_set(err, errno, "close %s", op);
  return 0;
}

int an_sb_create(const char *store_root, const struct an_sandbox_opts *opts,
                 enum an_sb_keeper keeper, char *const *oneshot_argv, const int stdio[3],
                 struct an_sandbox **out, an_error_t *err) {
  if (!opts) return an_error_set(err, EINVAL, "sandbox: no options");
  const char *root = an_sb_root_or_default(store_root ? store_root : an_ctx_store_root(opts->ctx));
  const char *image = an_sandbox_opts_image(opts);
  if (!image) return an_error_set(err, EINVAL, "sandbox: no image given (--image or a profile)");
  /* an approval hook asked for must exist (fail closed) */
  int r = an_sb_approval_validate(opts, err);
  if (r < 0) return r;
  /* as non-root the 0700 store reads as empty: say the real cause */
  r = an_doctor_check_privilege(err);
  if (r < 0) return r;
  /* egress: a policy the mode refuses, or one this build cannot enforce, is
   * refused before anything is made (sandbox/egress_opts.c) */
  if ((r = an_sb_egress_check(opts, err)) < 0) return r;
  r = an_sb_check_store_parents(root, err);
  if (r < 0) return r;
  struct an_image_info *img = NULL;
  if ((r = an_image_resolve(root, image, &img, err)) < 0) return r;
  cleanup_free char *init_path = NULL;
  cleanup_free char **config_env = NULL;  /* the env config.json records */
  if ((r = an_ctx_init_path(opts->ctx, &init_path, err)) < 0) { an_image_info_free(img); return r; }

  struct an_sb_record rec = {0};
  struct an_sb_egress_prep *eprep = NULL;   /* egress made while the rest is (egress_run.c) */
  if ((r = an_sb_new_id(rec.id, err)) < 0) { an_image_info_free(img); return r; }
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", root, AN_SB_DIR);
  if ((r = mkdir_mode(root, 0711, false, err)) < 0 || (r = ensure_traversable(root, err)) < 0 ||
      (r = mkdir_mode(path, 0711, false, err)) < 0) {
    an_image_info_free(img);
    return r;
  }
  /* The creating process keeps the sandbox until the monitor takes over
   * (for a one-shot: to the end).  The directory is made as
   * .new-<id>.<pid>.<start time> and renamed to <id> once it holds the
   * record, so prune can tell a create in progress from one whose creator
   * was killed at every point (unborn.c; no record-less <id> ever). */
  rec.owner_pid = getpid();
  {
    an_error_t e = NULL;
    an_process_start_time(rec.owner_pid, &rec.owner_start, &e);
    an_error_free(&e);
  }
  snprintf(path, sizeof path, "%s/%s/" AN_SB_UNBORN_PREFIX "%s.%d.%" PRIu64, root, AN_SB_DIR, rec.id,
           (int) rec.owner_pid, rec.owner_start);
  if ((r = mkdir_mode(path, 0711, true, err)) < 0) { an_image_info_free(img); return r; }

  /* From here on, failure tears down whatever exists under the id. */
  struct an_sandbox *sb = NULL;
  struct an_spec *spec = NULL;
  cleanup_close int devnull = -1;
  rec.created_ms = an_sb_now_ms();
  rec.deadline_ms = rec.created_ms + an_sandbox_opts_lifetime(opts);
  if (keeper == AN_SB_KEEP_POOL) rec.deadline_ms = 0;   /* set when handed out (pool.c) */
  if (strcmp(an_ctx_idrange_root(opts->ctx), AN_IDRANGE_ROOT_DEFAULT) &&
      !(rec.idrange_root = strdup(an_ctx_idrange_root(opts->ctx)))) {
    r = an_error_set(err, ENOMEM, "sandbox record");
    goto fail_rec;
  }
  if (!(rec.image = strdup(image)) ||
      (an_sandbox_opts_name(opts) && !(rec.name = strdup(an_sandbox_opts_name(opts))))) {
    r = an_error_set(err, ENOMEM, "sandbox record");
    goto fail_rec;
  }
  if ((r = an_sb_record_write(path, &rec, err)) < 0) goto fail_rec;
  {
    char named[PATH_MAX];
    snprintf(named, sizeof named, "%s/%s/%s", root, AN_SB_DIR, rec.id);
    if (renameat2(AT_FDCWD, path, AT_FDCWD, named, RENAME_NOREPLACE) < 0) {
      r = an_error_set(err, errno, "rename %s to %s", path, named);
      goto fail_rec;
    }
    memcpy(path, named, sizeof path);
  }
  if ((r = an_sb_egress_prepare(path, opts, &eprep, err)) < 0) goto fail_rec;
  {
    /* the state directory owns the range: prune of any store leaves it
     * alone while the directory exists */
    char owner[PATH_MAX];
    if (!realpath(path, owner)) { r = an_error_set(err, errno, "resolve %s", path); goto fail_rec; }
    if ((r = an_idrange_alloc(rec.idrange_root, owner, &rec.ids, err)) < 0) goto fail_rec;
  }
  /* Only the sandbox's own id range may pass through its directory (its
   * root-in-userns binds the workspace below it): 0710, group = the range's
   * base gid.  0711 let every host user reach a workspace the sandbox had
   * made 0777, a channel around --network none. */
  if (chown(path, 0, (gid_t) rec.ids.host_uid_base) < 0 || chmod(path, 0710) < 0) {
    r = an_error_set(err, errno, "sandbox directory %s: owner and mode", path);
    an_error_t e = NULL;
    an_idrange_free(rec.idrange_root, &rec.ids, &e);
    an_error_free(&e);
    goto fail_rec;
  }
  if ((r = an_sb_record_write(path, &rec, err)) < 0) {
    an_error_t e = NULL;
    an_idrange_free(rec.idrange_root, &rec.ids, &e);
    an_error_free(&e);
    goto fail_rec;
  }
  if ((r = an_sb_handle_new(root, &rec, &sb, err)) < 0) goto fail_rec;
  if ((r = an_sandbox_opts_dup(opts, &sb->opts, err)) < 0) goto fail;
  if (sb->rec.name && (r = claim_name(root, sb->rec.name, sb->rec.id, err)) < 0) {
    free(sb->rec.name);   /* not ours: teardown must not remove it */
    sb->rec.name = NULL;
    goto fail;
  }
  uid_t wuid = sb->rec.ids.host_uid_base + an_sandbox_opts_uid(opts);
  gid_t wgid = sb->rec.ids.host_uid_base + an_sandbox_opts_gid(opts);
  if ((r = an_sb_ws_make(root, sb->dir, sb->workspace, (uint32_t) sb->rec.ids.host_uid_base,
                         an_sandbox_opts_disk(opts), an_sandbox_opts_inodes(opts), wuid, wgid, err)) < 0)
    goto fail;
  sb->ws_fd = open(sb->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (sb->ws_fd < 0) { r = an_error_set(err, errno, "open %s", sb->workspace); goto fail; }

  /* argv of pid 1: agentnest-init, or agentnest-init -- CMD... (one-shot) */
  size_t n = 0;
  while (oneshot_argv && oneshot_argv[n]) n++;
  char **argv = calloc(n + 3, sizeof *argv);
  if (!argv) { r = an_error_set(err, ENOMEM, "argv"); goto fail; }
  argv[0] = (char *) AN_SB_INIT_DEST;
  if (n) {
    argv[1] = (char *) "--";
    for (size_t i = 0; i < n; i++) argv[2 + i] = oneshot_argv[i];
  }
  /* The engine clones the root with open_tree as host root, so the image's
   * own read-only rootfs in the 0700 store is used directly (no copy, no
   * mount in the host's namespace). */
  struct an_sandbox_image simg = {.rootfs = img->rootfs, .env = img->config.env,
                                  .working_dir = img->config.working_dir};
  r = an_sandbox_build_spec(opts, &simg, &sb->rec.ids, sb->rec.id, sb->workspace, argv, &spec, err);
  free(argv);
  if (r < 0) goto fail;
  if ((r = add_init_mount(spec, init_path, err)) < 0) goto fail;
  r = an_sb_egress_start(sb, eprep, img->rootfs, spec, err);
  an_sb_egress_prep_free(eprep);
  eprep = NULL;
  if (r < 0) goto fail;
  free(spec->linux.cgroups_path);
  if (!(spec->linux.cgroups_path = strdup(sb->cgroup_path))) { r = an_error_set(err, ENOMEM, "spec"); goto fail; }
  if ((r = collect_secrets(opts, spec, &sb->rec, err)) < 0) goto fail;
  if ((r = an_sb_secrets_write(sb->rec.id, sb->rec.secrets, sb->rec.nsecrets, err)) < 0) goto fail;
  /* the engine's config.json records the env with the secret values out */
  if (sb->rec.nsecrets && !(config_env = env_without_secrets(spec->process->env, &sb->rec))) {
    r = an_error_set(err, ENOMEM, "spec");
    goto fail;
  }

  devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) { r = an_error_set(err, errno, "open /dev/null"); goto fail; }
  char seccomp_cache[PATH_MAX];
  snprintf(seccomp_cache, sizeof seccomp_cache, "%s/.seccomp-cache", sb->containers);
  struct an_container_opts co = {
    .state_root = sb->containers, .id = sb->rec.id, .bundle = sb->dir,
    .seccomp_cache = seccomp_cache,
    .stdio = {stdio ? stdio[0] : devnull, stdio ? stdio[1] : devnull, stdio ? stdio[2] : devnull},
    .config_env = config_env,
    /* cgroups only in the hierarchies its limits use (engine/cgroup.c):
     * a sandbox's limits never change after create */
    .cgroup_used_only = true,
  };
  if ((r = mkdir_mode(sb->containers, 0700, false, err)) < 0) goto fail;
  /* create + start in one step (runc run --detach): pid 1 execs at once. */
  co.detach = true;
  co.keep = true;
  if ((r = an_container_run(spec, &co, err)) < 0) goto fail;
  /* the handle keeps the spec for execs (exec_spawn.c) */
  sb->spec = spec;
  spec = NULL;
  struct an_container_state *st = NULL;
  if ((r = an_container_state(sb->containers, sb->rec.id, &st, err)) < 0) goto fail;
  sb->rec.init_pid = st->pid;
  sb->rec.init_start = st->start_time;
  an_container_state_free(st);
  if (keeper != AN_SB_KEEP_CALLER) {
    if (keeper == AN_SB_KEEP_MONITOR) {
      sb->rec.owner_pid = 0;
      sb->rec.owner_start = 0;
    }
    if ((r = an_sb_monitor_start(sb, err)) < 0) goto fail;
  }
  /* options.json before the record that names init: from that record on,
   * exec, destroy and fork open the sandbox, and they read it back */
  if ((r = write_options(sb->dir, opts, err)) < 0) goto fail;
  if ((r = an_sb_record_write(sb->dir, &sb->rec, err)) < 0) goto fail;
  an_sb_event(sb->dir, "created", ",\"image\":\"%s\",\"init_pid\":%d", image, (int) sb->rec.init_pid);
  an_sb_seccomp_unsafe_event(sb->dir, opts, sb->spec ? sb->spec->linux.seccomp : NULL);
  an_image_info_free(img);
  an_sb_audit_create(root, sb->rec.id, opts, keeper == AN_SB_KEEP_CALLER, 0, NULL);
  *out = sb;
  return 0;

fail:;
  an_sb_egress_prep_free(eprep);
  an_sb_audit_create(root, sb->rec.id, opts, keeper == AN_SB_KEEP_CALLER, r, err);
  an_error_t e = NULL;
  an_sb_teardown(root, sb->rec.id, "create failed", false, 0, false, NULL, &e);
  an_error_free(&e);
  an_sandbox_close(sb);
  an_spec_free(spec);
  an_image_info_free(img);
  return r;
fail_rec:
  an_sb_egress_prep_free(eprep);
  an_sb_audit_create(root, rec.id, opts, keeper == AN_SB_KEEP_CALLER, r, err);
  {
    char sj[PATH_MAX + 32];
    snprintf(sj, sizeof sj, "%s/%s", path, AN_SB_STATE_FILE);
    unlink(sj);
    rmdir(path);
  }
  an_sb_record_clear(&rec);
  an_image_info_free(img);
  return r;
}

int an_sandbox_create(const char *store_root, const struct an_sandbox_opts *opts,
                      struct an_sandbox **out, an_error_t *err) {
  return an_sb_create(store_root, opts, AN_SB_KEEP_MONITOR, NULL, NULL, out, err);
}

int an_sandbox_create_owned(const char *store_root, const struct an_sandbox_opts *opts,
                            struct an_sandbox **out, an_error_t *err) {
  return an_sb_create(store_root, opts, AN_SB_KEEP_MONITOR_AND_OWNER, NULL, NULL, out, err);
}

int an_sandbox_open(const char *store_root, const char *id_or_name, struct an_sandbox **out,
                    an_error_t *err) {
  return an_sandbox_open_ctx(NULL, store_root, id_or_name, out, err);
}

/* An ENOENT from what open reads after the record (options, workspace):
 * a destroy at work between the two removes the workspace, then moves the
 * state away.  Said as the sandbox having ended when a teardown is at work
 * (an_sb_destroying), its record is gone or its status is no longer
 * running; any other error, or an ENOENT of a running sandbox (a file an
 * operator removed), stays. */
static int ended_while_opening(const char *dir, const char *who, int r, an_error_t *err) {
  if (r != -ENOENT || !an_sb_ended(dir)) return r;
  an_error_free(err);
  return an_error_set(err, ESRCH, "sandbox %s ended while it was being opened (destroyed, or its pid 1 exited)",
                      who);
}

int an_sandbox_open_ctx(const struct an_ctx *ctx, const char *store_root, const char *id_or_name,
                        struct an_sandbox **out, an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root ? store_root : an_ctx_store_root(ctx));
  char id[AN_SANDBOX_ID_LEN + 1];
  int r = an_sb_resolve(root, id_or_name, id, err);
  if (r < 0) return r;
  /* what the caller named: "NAME (ID)" for a name, the id otherwise */
  char who[AN_SANDBOX_ID_LEN + 300];
  if (strcmp(id_or_name, id)) snprintf(who, sizeof who, "%.256s (%s)", id_or_name, id);
  else snprintf(who, sizeof who, "%s", id);
  if (r == 1) return an_error_set(err, ETIME, "sandbox %s expired", who);
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/%s/%s", root, AN_SB_DIR, id);
  struct an_sb_record rec;
  if ((r = an_sb_record_read(dir, &rec, err)) < 0) {
    if (r == -ENOENT) {
      /* Raced with teardown. */
      an_error_free(err);
      char tmp[AN_SANDBOX_ID_LEN + 1];
      if (an_sb_resolve(root, id, tmp, NULL) == 1) return an_error_set(err, ETIME, "sandbox %s expired", who);
      return an_error_set(err, ENOENT, "sandbox %s: no such sandbox", id_or_name);
    }
    return r;
  }
  struct an_sandbox *sb = NULL;
  if ((r = an_sb_handle_new(root, &rec, &sb, err)) < 0) { an_sb_record_clear(&rec); return r; }
  /* Values gone (the /run file removed, e.g. a reboot): the handle still
   * serves destroy, cp, inspect; exec and fork refuse (an_sb_secret_values_ok). */
  if ((r = an_sb_secrets_read(&sb->rec, err)) == -ENOENT) {
    an_ctx_warn(ctx, "%s: exec and fork refuse", err && *err ? (*err)->msg : "secret values gone");
    an_error_free(err);
  }
  else if (r < 0) {
    an_sandbox_close(sb);
    return r;
  }
  /* the status ls shows (an_sb_status): dead before expired (past the
   * deadline with no keeper left, nothing tears it down but destroy) */
  const char *status = an_sb_status(&sb->rec);
  if (!strcmp(status, "dead")) {
    an_sandbox_close(sb);
    /* not "destroy it" while a destroy (or a keeper's teardown) is at work */
    if (an_sb_destroying(dir)) return an_error_set(err, ESRCH, "sandbox %s is being destroyed", who);
    return an_error_set(err, ESRCH, "sandbox %s is dead (monitor or init gone); destroy it (agentnest destroy)",
                        who);
  }
  if (!strcmp(status, "creating")) {
    an_sandbox_close(sb);
    return an_error_set(err, EBUSY, "sandbox %s is being created (its create has not started pid 1 yet); "
                        "retry once create has printed its id", who);
  }
  if (!strcmp(status, "expired")) {
    an_sandbox_close(sb);
    return an_error_set(err, ETIME, "sandbox %s expired", who);
  }
  char op[PATH_MAX + 64];
  snprintf(op, sizeof op, "%s/%s", dir, AN_SB_OPTIONS_FILE);
  if ((r = an_sandbox_opts_new_ctx(ctx, &sb->opts, err)) < 0 ||
      (r = an_sandbox_opts_load_profile(sb->opts, op, NULL, err)) < 0) {
    an_sandbox_close(sb);
    return ended_while_opening(dir, who, r, err);
  }
  for (size_t i = 0; i < sb->rec.nsecrets; i++)
    if (sb->rec.secrets[i].value &&
        (r = an_sandbox_opts_add_secret(sb->opts, sb->rec.secrets[i].name, sb->rec.secrets[i].value, err)) < 0) {
      an_sandbox_close(sb);
      return r;
    }
  sb->ws_fd = open(sb->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (sb->ws_fd < 0) {
    r = an_error_set(err, errno, "open %s", sb->workspace);
    an_sandbox_close(sb);
    return ended_while_opening(dir, who, r, err);
  }
  *out = sb;
  return 0;
}

int an_sandbox_destroy(struct an_sandbox *sb, uint64_t grace_ms, an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "destroy: no sandbox");
  return an_sb_teardown(sb->root, sb->rec.id, "destroy", false, grace_ms, false, NULL, err);
}
