/* sandbox/pool_keeper.c — an_pool_start and the pool keeper: a
 * double-forked host process (its own session, stdio on /dev/null, no
 * inherited fds but the start report pipe; outside every sandbox) that
 * keeps a pool's ready/ directory at its size (agentnest/pool.h "KEEPER").
 * It waits on an inotify watch of ready/ (a claim renames an entry away:
 * refill at once), a signalfd (SIGTERM/SIGINT/SIGHUP: destroy the ready
 * sandboxes and exit) and a 1 s tick (ready sandboxes found dead are
 * replaced; a failed create is retried with a backoff; the inits of
 * sandboxes that ended are reaped).  The first fill is
 * reported to an_pool_start over a pipe: its first error fails the start. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "agentnest/audit.h"
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/doctor.h"
#include "engine/process.h"
#include "sandbox/pool_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 30000
#define TICK_MS 1000

/* What the keeper tells an_pool_start once the first fill ends. */
struct report {
  int errnum;          /* 0: the pool is full */
  char msg[1200];
};

struct keeper {
  const char *root, *name, *dir;
  unsigned size;
  const struct an_sandbox_opts *opts;
  uint64_t created, failures;
  char last_error[1024];
  uint64_t written_created, written_failures;   /* what status.json holds */
  bool written;
};

/* status.json, when its numbers changed since the last write. */
static void write_status(struct keeper *k) {
  if (k->written && k->written_created == k->created && k->written_failures == k->failures) return;
  k->written = true;
  k->written_created = k->created;
  k->written_failures = k->failures;
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) return;
  an_jgen_map_open(&j);
  an_jgen_kv_u64(&j, "created", k->created);
  an_jgen_kv_u64(&j, "failures", k->failures);
  an_jgen_key(&j, "last_error");
  if (k->last_error[0] && j.g) an_jgen_check(&j, an_json_escape_output(j.g, k->last_error, strlen(k->last_error)));
  else an_jgen_null(&j);
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  an_error_t e = NULL;
  if (an_jgen_finish(&j, &doc, NULL) == 0) an_pool_write_file(k->dir, AN_POOL_STATUS, doc, &e);
  an_error_free(&e);
}

/* Ready entries whose sandbox is not running any more are removed (and
 * what is left of the sandbox torn down). */
static void check_ready(const struct keeper *k) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", k->dir, AN_POOL_READY);
  cleanup_close int rfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int dfd = rfd >= 0 ? fcntl(rfd, F_DUPFD_CLOEXEC, 3) : -1;
  cleanup_closedir DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d && dfd >= 0) close(dfd);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name)) continue;
    char sdir[PATH_MAX * 2];
    snprintf(sdir, sizeof sdir, "%s/%s/%s", k->root, AN_SB_DIR, de->d_name);
    struct an_sb_record rec;
    an_error_t e = NULL;
    bool dead = true;
    if (an_sb_record_read(sdir, &rec, &e) == 0) {
      dead = strcmp(an_sb_status(&rec), "running") != 0;
      an_sb_record_clear(&rec);
    }
    an_error_free(&e);
    if (dead && unlinkat(rfd, de->d_name, 0) == 0) {
      an_sb_teardown(k->root, de->d_name, "pool: found dead", false, 0, false, NULL, &e);
      an_error_free(&e);
    }
  }
}

/* Destroy every ready sandbox (the keeper is stopping). */
static void drain(const struct keeper *k) {
  char path[PATH_MAX * 2];
  snprintf(path, sizeof path, "%s/%s", k->dir, AN_POOL_READY);
  cleanup_close int rfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int dfd = rfd >= 0 ? fcntl(rfd, F_DUPFD_CLOEXEC, 3) : -1;
  cleanup_closedir DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
  if (!d && dfd >= 0) close(dfd);
  struct dirent *de;
  while (d && (de = readdir(d))) {
    if (!an_sb_valid_id(de->d_name) || unlinkat(rfd, de->d_name, 0) < 0) continue;
    an_error_t e = NULL;
    an_sb_teardown(k->root, de->d_name, "pool stopped", false, 0, false, NULL, &e);
    an_error_free(&e);
  }
}

/* The slot of the first exec made ahead (exec.c acquire_slot: the lock
 * file <dir>/exec-slots/0.lock and the child cgroup exec-0 of the sandbox
 * cgroup, which every exec then reuses): creating a cgroup in every v1
 * hierarchy costs milliseconds on the taker's clock (the cpu controller's
 * mkdir alone took 9.7 ms here, strace -ttt).  An empty cgroup and an
 * empty file: nothing ran, and a fresh sandbox has the same after its first
 * exec.  Best effort (the exec makes them when missing). */
static void prepare_exec_slot(struct an_sandbox *sb) {
  an_error_t e = NULL;
  char path[PATH_MAX * 2];
  if (an_sb_ensure_cgroup(sb, &e) < 0) {
    an_error_free(&e);
    return;
  }
  snprintf(path, sizeof path, "%s/exec-slots", sb->dir);
  if (mkdir(path, 0700) < 0 && errno != EEXIST) return;
  snprintf(path, sizeof path, "%s/exec-slots/0.lock", sb->dir);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) close(fd);
  struct an_cgroup *cg = NULL;
  if (an_cgroup_create_child(sb->cg, "exec-0", &cg, &e) == 0) an_cgroup_free(cg);
  an_error_free(&e);
}

/* Create one ready sandbox.  0, or -errno with k->last_error set. */
static int create_one(struct keeper *k) {
  struct an_sandbox *sb = NULL;
  an_error_t e = NULL;
  int r = an_sb_create(k->root, k->opts, AN_SB_KEEP_POOL, NULL, NULL, &sb, &e);
  if (r < 0) {
    k->failures++;
    snprintf(k->last_error, sizeof k->last_error, "%s", e ? e->msg : "create failed");
    an_error_free(&e);
    return r;
  }
  prepare_exec_slot(sb);
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s/%s", k->dir, AN_POOL_READY, an_sandbox_id(sb));
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    r = -errno;
    k->failures++;
    snprintf(k->last_error, sizeof k->last_error, "pool entry for sandbox %s: %s", an_sandbox_id(sb), strerror(errno));
    an_sandbox_destroy(sb, 0, &e);
    an_error_free(&e);
    an_sandbox_close(sb);
    return r;
  }
  close(fd);
  an_sb_event(sb->dir, "pooled", ",\"pool\":\"%s\"", k->name);
  an_sandbox_close(sb);
  k->created++;
  return 0;
}

/* The keeper is the parent of its sandboxes' init processes (and of
 * nothing it waits for by pid between creates): reap every one that ended
 * (a sandbox handed out and destroyed, or found dead), or each would stay
 * a zombie until the keeper exits. */
static void reap_children(void) {
  siginfo_t si;
  for (;;) {
    memset(&si, 0, sizeof si);
    if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0) {
      if (errno == EINTR) continue;
      return;   /* ECHILD: none left */
    }
    if (!si.si_pid) return;   /* none ended */
  }
}

static bool stop_requested(int sfd) {
  struct pollfd p = {.fd = sfd, .events = POLLIN};
  return poll(&p, 1, 0) > 0;
}

_Noreturn static void keeper_main(struct keeper *k, int report_fd) {
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2) close(null);
  }
  if (report_fd != 3 && dup2(report_fd, 3) < 0) _exit(1);
  report_fd = 3;
  syscall(SYS_close_range, 4, ~0U, 0);
  if (chdir("/") < 0) {}
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
  sigprocmask(SIG_SETMASK, &set, NULL);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  char ready[PATH_MAX * 2];
  snprintf(ready, sizeof ready, "%s/%s", k->dir, AN_POOL_READY);
  struct an_pool_meta m = {.size = k->size, .keeper_pid = getpid(), .created_ms = an_sb_now_ms()};
  an_error_t e = NULL;
  if (an_process_start_time(m.keeper_pid, &m.keeper_start, &e) < 0) m.keeper_start = 0;
  an_error_free(&e);
  struct report rep = {0};
  if (sfd < 0 || ifd < 0 || inotify_add_watch(ifd, ready, IN_DELETE | IN_MOVED_FROM) < 0) {
    rep.errnum = errno;
    snprintf(rep.msg, sizeof rep.msg, "pool %s: keeper: signalfd/inotify: %s", k->name, strerror(errno));
  } else if (an_pool_meta_write(k->dir, k->name, &m, &e) < 0) {
    rep.errnum = e->errnum;
    snprintf(rep.msg, sizeof rep.msg, "%s", e->msg);
    an_error_free(&e);
  }
  if (rep.errnum) {
    if (write(report_fd, &rep, sizeof rep) < 0) {}
    _exit(1);
  }
  bool initial = true;
  uint64_t backoff = 0, retry_at = 0;
  for (;;) {
    unsigned n = an_pool_count(k->dir, AN_POOL_READY);
    while (n < k->size && an_mono_ms() >= retry_at && !stop_requested(sfd)) {
      int cr = create_one(k);
      if (cr < 0) {
        if (initial) {
          rep.errnum = -cr;
          snprintf(rep.msg, sizeof rep.msg, "pool %s: %s", k->name, k->last_error);
          write_status(k);
          drain(k);
          if (write(report_fd, &rep, sizeof rep) < 0) {}
          _exit(1);
        }
        backoff = backoff ? (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2) : BACKOFF_MIN_MS;
        retry_at = an_mono_ms() + backoff;
        break;
      }
      backoff = 0;
      n++;
    }
    write_status(k);
    if (initial && n >= k->size) {
      if (write(report_fd, &rep, sizeof rep) < 0) {}
      close(report_fd);
      initial = false;
    }
    uint64_t now = an_mono_ms();
    int timeout = retry_at > now ? (int) (retry_at - now) : TICK_MS;
    if (timeout > TICK_MS) timeout = TICK_MS;
    struct pollfd p[2] = {{.fd = ifd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
    int pr = poll(p, 2, timeout);
    reap_children();
    if (pr < 0) continue;
    if (p[1].revents) {
      drain(k);
      _exit(0);
    }
    if (p[0].revents) {
      char buf[4096];
      while (read(ifd, buf, sizeof buf) > 0) {}
    }
    if (pr == 0) check_ready(k);
  }
}

static int mkdir_0700(const char *path, bool excl, an_error_t *err) {
  if (mkdir(path, 0700) < 0 && (excl || errno != EEXIST)) return an_error_set(err, errno, "mkdir %s", path);
  return 0;
}

/* Make the pool directory; a stale one (keeper gone) is removed first. */
static int make_dir(const char *root, const char *name, const char *dir, an_error_t *err) {
  char pools[PATH_MAX];
  snprintf(pools, sizeof pools, "%s/%s", root, AN_POOL_DIR);
  int r = mkdir_0700(pools, false, err);
  if (r < 0) return r;
  for (int tries = 0; tries < 2; tries++) {
    if (mkdir(dir, 0700) == 0) return 0;
    if (errno != EEXIST) return an_error_set(err, errno, "mkdir %s", dir);
    struct an_pool_meta m = {0};
    an_error_t e = NULL;
    if (an_pool_meta_read(dir, &m, &e) < 0) {
      /* the keeper writes pool.json: without it the pool is being started,
       * unless that began long ago (a start killed half-way) */
      an_error_free(&e);
      struct stat st;
      if (stat(dir, &st) == 0 && an_sb_now_ms() - (uint64_t) st.st_mtime * 1000 < 60000)
        return an_error_set(err, EEXIST, "pool %s: being started by another process", name);
    } else if (an_pool_keeper_alive(&m))
      return an_error_set(err, EEXIST, "pool %s exists (keeper pid %d); `agentnest pool stop %s` first",
                          name, (int) m.keeper_pid, name);
    if ((r = an_pool_remove(root, name, NULL, err)) < 0) return an_error_prefix(err, "pool %s: remove the stale pool", name);
  }
  return an_error_set(err, EEXIST, "pool %s exists", name);
}

int an_pool_start(const char *store_root, const char *name, unsigned size,
                  const struct an_sandbox_opts *opts, pid_t *keeper_pid, an_error_t *err) {
  const char *root = an_sb_root_or_default(store_root);
  char dir[PATH_MAX], path[PATH_MAX * 2];
  int r = an_pool_path(root, name, dir, sizeof dir, err);
  if (r < 0) return r;
  if (!opts) return an_error_set(err, EINVAL, "pool %s: no options", name);
  if (size < 1 || size > AN_POOL_SIZE_MAX)
    return an_error_set(err, EINVAL, "pool %s: size %u: expected 1-%d", name, size, AN_POOL_SIZE_MAX);
  if (an_sandbox_opts_name(opts))
    return an_error_set(err, EINVAL, "pool %s: --name: a pooled sandbox cannot have a name (a name is one sandbox's)", name);
  if (an_sandbox_opts_secret_values(opts)[0])
    return an_error_set(err, EINVAL, "pool %s: --secret: secret values would wait in every ready sandbox; "
                        "give secrets to a fresh sandbox instead", name);
  if (!an_sandbox_opts_image(opts)) return an_error_set(err, EINVAL, "pool %s: no image given (--image or a profile)", name);
  if ((r = an_doctor_check_privilege(err)) < 0) return r;
  cleanup_free char *oj = NULL;
  if ((r = an_sandbox_opts_to_json(opts, &oj, err)) < 0) return r;
  if ((r = make_dir(root, name, dir, err)) < 0) return r;
  snprintf(path, sizeof path, "%s/%s", dir, AN_POOL_READY);
  if ((r = mkdir_0700(path, true, err)) < 0) goto fail;
  snprintf(path, sizeof path, "%s/%s", dir, AN_POOL_TAKEN);
  if ((r = mkdir_0700(path, true, err)) < 0) goto fail;
  if ((r = an_pool_write_file(dir, AN_POOL_OPTIONS, oj, err)) < 0) goto fail;

  int pfd = -1;
  fflush(NULL);
  int f = an_sb_fork_detached("pool keeper", &pfd, err);
  if (f < 0) { r = an_error_prefix(err, "pool %s", name); goto fail; }
  if (f == 0) {
    struct keeper k = {.root = root, .name = name, .dir = dir, .size = size, .opts = opts};
    keeper_main(&k, pfd);
  }
  struct report rep = {0};
  ssize_t n;
  while ((n = read(pfd, &rep, sizeof rep)) < 0 && errno == EINTR) {}
  close(pfd);
  struct an_pool_meta m = {0};
  an_error_t e = NULL;
  if (an_pool_meta_read(dir, &m, &e) < 0) an_error_free(&e);
  if (n != (ssize_t) sizeof rep || rep.errnum) {
    rep.msg[sizeof rep.msg - 1] = 0;
    r = n == (ssize_t) sizeof rep ? an_error_set(err, rep.errnum, "%s", rep.msg)
                                  : an_error_set(err, ECHILD, "pool %s: the keeper did not start", name);
    if (m.keeper_pid) an_pool_end_keeper(&m, 2000);
    goto fail;
  }
  if (keeper_pid) *keeper_pid = m.keeper_pid;
  an_audit_record(root, "pool_start", NULL, NULL, AN_AUDIT_STR("pool", name), AN_AUDIT_INT("size", size),
                  AN_AUDIT_STR("image", an_sandbox_opts_image(opts)), AN_AUDIT_END);
  return 0;
fail:;
  an_pool_remove(root, name, NULL, &e);
  an_error_free(&e);
  return r;
}
