/* sandbox/idrange.c — reserve a host uid/gid range of 65536 ids per sandbox
 * (agentnest/sandbox_opts.h, an_idrange_alloc).  A range is free when no
 * lock file claims it, no passwd user or group id and no subuid/subgid range
 * falls inside it, and it lies inside this process's own uid_map and
 * gid_map (user_namespaces(7): a child's map may only name ids mapped in the
 * parent).  Reservations are files created with O_EXCL, not flocks, so a
 * crashed sandbox keeps its ids until prune has removed it.  They live in
 * one machine-wide directory (an_idrange_root(), not a store root): host
 * uids are machine-wide, so sandboxes of two stores must not share them. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "agentnest/sandbox_opts.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

#define IDRANGE_DIR "idranges"
/* An empty reservation younger than this is one being written. */
#define IDRANGE_WRITE_GRACE_S 60

struct interval { uint64_t lo, hi; };          /* [lo, hi) */

struct intervals {
  struct interval *v;
  size_t n, cap;
};

static void intervals_free(struct intervals *s) { free(s->v); s->v = NULL; s->n = s->cap = 0; }

static int intervals_add(struct intervals *s, uint64_t lo, uint64_t hi) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    struct interval *v = realloc(s->v, cap * sizeof *v);
    if (!v) return -ENOMEM;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = (struct interval){lo, hi};
  return 0;
}

static bool intervals_overlap(const struct intervals *s, uint64_t lo, uint64_t hi) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].lo < hi && lo < s->v[i].hi) return true;
  return false;
}

/* [lo, hi) covered by the union of intervals (map ranges do not overlap). */
static bool intervals_cover(const struct intervals *s, uint64_t lo, uint64_t hi) {
  uint64_t covered = 0;
  for (size_t i = 0; i < s->n; i++) {
    uint64_t a = s->v[i].lo > lo ? s->v[i].lo : lo;
    uint64_t b = s->v[i].hi < hi ? s->v[i].hi : hi;
    if (a < b) covered += b - a;
  }
  return covered == hi - lo;
}

/* Parse a decimal id field; false if not a number. */
static bool parse_u64(const char *s, uint64_t *out) {
  if (!s || *s < '0' || *s > '9') return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || (*end && *end != '\n')) return false;
  *out = v;
  return true;
}

enum id_file_kind { ID_FILE_DB, ID_FILE_SUBID, ID_FILE_MAP };

/* Add the ids a host file claims to *set:
 *   DB    passwd(5)/group(5): the third ':' field, one id per line
 *   SUBID subuid(5)/subgid(5): "owner:start:count"
 *   MAP   /proc/PID/uid_map: "inside outside count" -> [inside, inside+count)
 * A missing DB or SUBID file claims nothing; malformed lines are skipped
 * (they claim nothing the login tools would honour either). */
static int add_id_file(struct intervals *set, const char *path, enum id_file_kind kind,
                       an_error_t *err) {
  cleanup_fclose FILE *f = fopen(path, "re");
  if (!f) {
    if (errno == ENOENT && kind != ID_FILE_MAP) return 0;
    return an_error_set(err, errno, "open %s", path);
  }
  cleanup_free char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0) {
    uint64_t a = 0, b = 0;
    if (kind == ID_FILE_MAP) {
      unsigned long long in, out, count;
      if (sscanf(line, "%llu %llu %llu", &in, &out, &count) != 3) continue;
      a = in;
      b = in + count;
    } else {
      char *fields[4] = {0};
      char *p = line;
      for (int i = 0; i < 4; i++) {
        /* strsep keeps empty fields (passwd's password field may be empty) */
        fields[i] = strsep(&p, ":");
        if (!fields[i]) break;
      }
      if (kind == ID_FILE_DB) {
        if (!parse_u64(fields[2], &a)) continue;
        b = a + 1;
      } else {
        uint64_t count;
        if (!parse_u64(fields[1], &a) || !parse_u64(fields[2], &count)) continue;
        b = a + count;
      }
    }
    if (intervals_add(set, a, b) < 0) return an_error_set(err, ENOMEM, "read %s", path);
  }
  if (ferror(f)) return an_error_set(err, EIO, "read %s", path);
  return 0;
}

const char *an_idrange_root(void) {
  return AN_IDRANGE_ROOT_DEFAULT;
}

/* Open (making it if needed, mode 0700) <state_root>/idranges without
 * following symlinks. */
static int open_idrange_dir(const char *state_root, an_error_t *err) {
  if (mkdir(state_root, 0700) < 0 && errno != EEXIST)
    return an_error_set(err, errno, "mkdir %s", state_root);
  cleanup_close int root = open(state_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return an_error_set(err, errno, "open %s", state_root);
  if (mkdirat(root, IDRANGE_DIR, 0700) < 0 && errno != EEXIST)
    return an_error_set(err, errno, "mkdir %s/" IDRANGE_DIR, state_root);
  int dir = openat(root, IDRANGE_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return an_error_set(err, errno, "open %s/" IDRANGE_DIR, state_root);
  return dir;
}

int an_idrange_alloc_config(const char *state_root, const struct an_idrange_config *config,
                            const char *owner, struct an_sandbox_ids *ids, an_error_t *err) {
  static const struct an_idrange_config none;
  if (!config) config = &none;
  if (!state_root) state_root = an_idrange_root();
  if (!*state_root) return an_error_set(err, EINVAL, "id range: no state directory");
  if (owner && (owner[0] != '/' || strchr(owner, '\n')))
    return an_error_set(err, EINVAL, "id range: owner %s is not an absolute path", owner);
  uint64_t base = config->base ? config->base : AN_IDRANGE_BASE;
  uint64_t slots = config->slots ? config->slots : AN_IDRANGE_SLOTS;
  if (base % AN_IDRANGE_SIZE || base + slots * AN_IDRANGE_SIZE > UINT32_MAX)
    return an_error_set(err, EINVAL, "id range: base %llu with %llu slots: not 65536-aligned "
                        "or beyond 32-bit ids", (unsigned long long) base, (unsigned long long) slots);

  struct intervals taken = {0}, uid_map = {0}, gid_map = {0};
  int r = add_id_file(&taken, config->passwd ? config->passwd : "/etc/passwd", ID_FILE_DB, err);
  if (r == 0) r = add_id_file(&taken, config->group ? config->group : "/etc/group", ID_FILE_DB, err);
  if (r == 0) r = add_id_file(&taken, config->subuid ? config->subuid : "/etc/subuid", ID_FILE_SUBID, err);
  if (r == 0) r = add_id_file(&taken, config->subgid ? config->subgid : "/etc/subgid", ID_FILE_SUBID, err);
  if (r == 0)
    r = add_id_file(&uid_map, config->uid_map ? config->uid_map : "/proc/self/uid_map", ID_FILE_MAP, err);
  if (r == 0)
    r = add_id_file(&gid_map, config->gid_map ? config->gid_map : "/proc/self/gid_map", ID_FILE_MAP, err);
  cleanup_close int dir = -1;
  if (r == 0) {
    r = open_idrange_dir(state_root, err);
    if (r >= 0) { dir = r; r = 0; }
  }
  if (r < 0) goto out;

  uint32_t start = 0;
  if (getrandom(&start, sizeof start, GRND_NONBLOCK) != sizeof start) start = (uint32_t) getpid();
  for (uint64_t k = 0; k < slots; k++) {
    uint64_t lo = base + ((start + k) % slots) * AN_IDRANGE_SIZE, hi = lo + AN_IDRANGE_SIZE;
    if (intervals_overlap(&taken, lo, hi) || !intervals_cover(&uid_map, lo, hi) ||
        !intervals_cover(&gid_map, lo, hi))
      continue;
    char name[32];
    snprintf(name, sizeof name, "%llu.lock", (unsigned long long) lo);
    cleanup_close int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) {
      r = an_error_set(err, errno, "create %s/" IDRANGE_DIR "/%s", state_root, name);
      goto out;
    }
    cleanup_free char *content = NULL;
    int len = asprintf(&content, "%d\n%s\n", (int) getpid(), owner ? owner : "");
    if (len < 0 || write(fd, content, (size_t) len) != len) {
      r = an_error_set(err, errno ? errno : EIO, "write %s/" IDRANGE_DIR "/%s", state_root, name);
      unlinkat(dir, name, 0);
      goto out;
    }
    ids->host_uid_base = (uint32_t) lo;
    ids->size = AN_IDRANGE_SIZE;
    r = 0;
    goto out;
  }
  r = an_error_set(err, ENOSPC, "id range: all %llu ranges of 65536 ids from %llu are taken or "
                   "overlap host users, groups or subordinate ids",
                   (unsigned long long) slots, (unsigned long long) base);
out:
  intervals_free(&taken);
  intervals_free(&uid_map);
  intervals_free(&gid_map);
  return r;
}

int an_idrange_alloc(const char *state_root, const char *owner, struct an_sandbox_ids *ids,
                     an_error_t *err) {
  return an_idrange_alloc_config(state_root, NULL, owner, ids, err);
}

/* The reservation file of range `ids` under state_root (NULL: the default
 * root): *path heap.  -EINVAL a range an_idrange_alloc does not hand out. */
static int reservation_path(const char *state_root, const struct an_sandbox_ids *ids, char **path,
                            an_error_t *err) {
  if (!state_root) state_root = an_idrange_root();
  if (!ids || ids->size != AN_IDRANGE_SIZE || ids->host_uid_base % AN_IDRANGE_SIZE)
    return an_error_set(err, EINVAL, "id range %u+%u: not a range an_idrange_alloc hands out",
                        ids ? ids->host_uid_base : 0, ids ? ids->size : 0);
  if (asprintf(path, "%s/" IDRANGE_DIR "/%u.lock", state_root, ids->host_uid_base) < 0) {
    *path = NULL;
    return an_error_set(err, ENOMEM, "id range %u", ids->host_uid_base);
  }
  return 0;
}

int an_idrange_free(const char *state_root, const struct an_sandbox_ids *ids, an_error_t *err) {
  cleanup_free char *path = NULL;
  int r = reservation_path(state_root, ids, &path, err);
  if (r < 0) return r;
  if (unlink(path) < 0) return an_error_set(err, errno, "release id range: unlink %s", path);
  return 0;
}

int an_sb_idrange_free_owned(const char *state_root, const struct an_sandbox_ids *ids, const char *owner_name,
                             an_error_t *err) {
  cleanup_free char *path = NULL;
  int pr = reservation_path(state_root, ids, &path, err);
  if (pr < 0) return pr;
  /* "<pid>\n<owner>\n": the owner's last component names the holder */
  char buf[PATH_MAX + 32];
  ssize_t len;
  {
    cleanup_close int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return an_error_set(err, errno, "release id range: open %s", path);
    len = read(fd, buf, sizeof buf - 1);
    if (len < 0) return an_error_set(err, errno, "release id range: read %s", path);
  }
  buf[len] = '\0';
  char *owner = strchr(buf, '\n');
  if (owner) {
    owner++;
    owner[strcspn(owner, "\n")] = '\0';
  }
  const char *last = owner ? strrchr(owner, '/') : NULL;
  if (!last || strcmp(last + 1, owner_name))
    return an_error_set(err, EBUSY, "release id range %u: reserved by %s now, not by %s", ids->host_uid_base,
                        owner && *owner ? owner : "another holder", owner_name);
  if (unlink(path) < 0) return an_error_set(err, errno, "release id range: unlink %s", path);
  return 0;
}

int an_idrange_list(const char *state_root, struct an_idrange_reservation **out, size_t *n,
                    an_error_t *err) {
  cleanup_free char *path = NULL;
  if (!state_root) state_root = an_idrange_root();
  if (asprintf(&path, "%s/" IDRANGE_DIR, state_root) < 0)
    return an_error_set(err, ENOMEM, "list id ranges");
  *out = NULL;
  *n = 0;
  cleanup_closedir DIR *d = opendir(path);
  if (!d) return errno == ENOENT ? 0 : an_error_set(err, errno, "open %s", path);
  struct an_idrange_reservation *list = NULL;
  size_t count = 0, cap = 0;
  int read_errno = 0;
  for (;;) {
    errno = 0;
    struct dirent *de = readdir(d);
    if (!de) { read_errno = errno; break; }
    char *end;
    if (de->d_name[0] < '1' || de->d_name[0] > '9') continue;
    unsigned long long base = strtoull(de->d_name, &end, 10);
    if (strcmp(end, ".lock") != 0 || base % AN_IDRANGE_SIZE || base + AN_IDRANGE_SIZE > UINT32_MAX)
      continue;
    if (count == cap) {
      cap = cap ? cap * 2 : 16;
      struct an_idrange_reservation *grown = realloc(list, cap * sizeof *grown);
      if (!grown) {
        an_idrange_list_free(list, count);
        return an_error_set(err, ENOMEM, "list %s", path);
      }
      list = grown;
    }
    struct an_idrange_reservation *r = &list[count++];
    *r = (struct an_idrange_reservation){.ids = {(uint32_t) base, AN_IDRANGE_SIZE}, .pid = 0};
    /* "<pid>\n<owner>\n" (owner may be empty) */
    cleanup_close int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char buf[PATH_MAX + 32];
    ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (len <= 0) {
      /* empty: an_idrange_alloc between its O_EXCL create and its write,
       * or one killed there.  Young, it is a reservation being made (of a
       * create in progress, in any store), not a stale one. */
      struct stat st;
      if (fd >= 0 && fstat(fd, &st) == 0 && time(NULL) - st.st_mtime < IDRANGE_WRITE_GRACE_S) r->pid = -1;
      continue;
    }
    buf[len] = '\0';
    r->pid = (pid_t) atoi(buf);
    char *owner = strchr(buf, '\n');
    if (owner && owner[1] == '/') {
      owner[strcspn(owner + 1, "\n") + 1] = '\0';
      r->owner = strdup(owner + 1);
    }
  }
  if (read_errno) {
    an_idrange_list_free(list, count);
    return an_error_set(err, read_errno, "read %s", path);
  }
  *out = list;
  *n = count;
  return 0;
}

void an_idrange_list_free(struct an_idrange_reservation *list, size_t n) {
  for (size_t i = 0; list && i < n; i++) free(list[i].owner);
  free(list);
}

bool an_idrange_stale(const struct an_idrange_reservation *r) {
  if (r->pid < 0) return false;   /* being written (an_idrange_list) */
  if (r->pid > 0 && (kill(r->pid, 0) == 0 || errno == EPERM)) return false;
  struct stat st;
  if (!r->owner) return true;
  if (lstat(r->owner, &st) == 0 || errno != ENOENT) return false;
  /* A destroyed sandbox's state directory <store>/sandboxes/<id> moves to
   * <store>/sandbox-reaping/<id> until its reaper is done with the files
   * its ids own (sandbox/teardown_detach.c): still the owner. */
  const char *slash = strrchr(r->owner, '/');
  static const char area[] = "/sandboxes";
  size_t pre = slash ? (size_t) (slash - r->owner) : 0;
  if (pre < sizeof area - 1 || strncmp(slash - (sizeof area - 1), area, sizeof area - 1)) return true;
  char moved[PATH_MAX];
  int n = snprintf(moved, sizeof moved, "%.*s/sandbox-reaping%s", (int) (pre - (sizeof area - 1)), r->owner, slash);
  return n < 0 || (size_t) n >= sizeof moved || (lstat(moved, &st) < 0 && errno == ENOENT);
}
