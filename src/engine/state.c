/* engine/state.c — the per-container state directory and state.json (see
 * state.h).  Written with util/json_gen, read with util/json_tree. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/utc.h"
#include "engine/state.h"
#include "util/cleanup.h"
#include "util/json_gen.h"
#include "util/json_tree.h"

int an_state_validate_id(const char *id, an_error_t *err) {
  size_t n = id ? strlen(id) : 0;
  if (n == 0 || n > 128 || !isalnum((unsigned char) id[0]))
    return an_error_set(err, EINVAL, "container id \"%s\": must match [A-Za-z0-9][A-Za-z0-9_.+-]{0,127}",
                        id ? id : "");
  for (size_t i = 1; i < n; i++) {
    unsigned char c = (unsigned char) id[i];
    if (!isalnum(c) && c != '_' && c != '.' && c != '+' && c != '-')
      return an_error_set(err, EINVAL, "container id \"%s\": must match [A-Za-z0-9][A-Za-z0-9_.+-]{0,127}", id);
  }
  return 0;
}

static int lock_dir(int fd, const char *id, an_error_t *err) {
  while (flock(fd, LOCK_EX) < 0)
    if (errno != EINTR) return an_error_set(err, errno, "lock state of container %s", id);
  return 0;
}

int an_state_dir_create(const char *root, const char *id, int *dirfd, an_error_t *err) {
  int r = an_state_validate_id(id, err);
  if (r < 0) return r;
  if (mkdir(root, 0711) < 0 && errno != EEXIST)
    return an_error_set(err, errno, "mkdir state root %s", root);
  cleanup_close int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) return an_error_set(err, errno, "open state root %s", root);
  if (mkdirat(rootfd, id, 0700) < 0) {
    if (errno == EEXIST) return an_error_set(err, EEXIST, "container %s already exists", id);
    return an_error_set(err, errno, "mkdir %s/%s", root, id);
  }
  int fd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "open %s/%s", root, id);
  r = lock_dir(fd, id, err);
  if (r < 0) { close(fd); return r; }
  *dirfd = fd;
  return 0;
}

int an_state_dir_open(const char *root, const char *id, int *dirfd, an_error_t *err) {
  int r = an_state_validate_id(id, err);
  if (r < 0) return r;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root, id);
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return an_error_set(err, ENOENT, "container %s does not exist", id);
    return an_error_set(err, errno, "open %s", path);
  }
  r = lock_dir(fd, id, err);
  if (r < 0) { close(fd); return r; }
  /* Deleted while we waited for the lock? */
  struct stat st;
  if (fstat(fd, &st) < 0 || st.st_nlink == 0) {
    close(fd);
    return an_error_set(err, ENOENT, "container %s does not exist", id);
  }
  *dirfd = fd;
  return 0;
}

int an_state_dir_remove(const char *root, const char *id, int dirfd, an_error_t *err) {
  cleanup_close int dup_fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
  if (dup_fd < 0) return an_error_set(err, errno, "remove state of %s", id);
  DIR *d = fdopendir(dup_fd);
  if (!d) return an_error_set(err, errno, "remove state of %s", id);
  dup_fd = -1;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (unlinkat(dirfd, de->d_name, 0) < 0 && errno != ENOENT) {
      int e = errno;
      closedir(d);
      return an_error_set(err, e, "remove %s/%s/%s", root, id, de->d_name);
    }
  }
  closedir(d);
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root, id);
  if (rmdir(path) < 0 && errno != ENOENT) return an_error_set(err, errno, "rmdir %s", path);
  return 0;
}

int an_state_write_file(int dirfd, const char *name, const char *data, size_t len,
                        an_error_t *err) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, ".%s.tmp", name);
  cleanup_close int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                                0600);
  if (fd < 0) return an_error_set(err, errno, "create %s", tmp);
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(fd, data + off, len - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      unlinkat(dirfd, tmp, 0);
      return an_error_set(err, e, "write %s", tmp);
    }
    off += (size_t) w;
  }
  if (renameat(dirfd, tmp, dirfd, name) < 0) {
    int e = errno;
    unlinkat(dirfd, tmp, 0);
    return an_error_set(err, e, "rename %s to %s", tmp, name);
  }
  return 0;
}

char *an_state_now_rfc3339(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char buf[64], *out = NULL;
  an_utc_format(ts.tv_sec, buf, sizeof buf);
  if (asprintf(&out, "%s.%09ldZ", buf, ts.tv_nsec) < 0) return NULL;
  return out;
}

int an_state_to_json(const struct an_container_state *st, bool internal, char **json,
                     an_error_t *err) {
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0)
    return an_error_set(err, ENOMEM, "%s of container %s: JSON", AN_STATE_FILE, st->id);
  struct an_jgen *g = &j;
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "ociVersion", st->oci_version ? st->oci_version : "1.2.0");
  an_jgen_kv_str(g, "id", st->id);
  an_jgen_kv_str(g, "status", an_container_status_name(st->status));
  an_jgen_kv_i64(g, "pid", st->status == AN_STATUS_STOPPED ? 0 : st->pid);
  an_jgen_kv_str(g, "bundle", st->bundle ? st->bundle : "");
  an_jgen_kv_str(g, "rootfs", st->rootfs ? st->rootfs : "");
  an_jgen_kv_str(g, "created", st->created ? st->created : "");
  an_jgen_kv_str(g, "owner", st->owner ? st->owner : "");
  an_jgen_key(g, "annotations");
  an_jgen_map_open(g);
  for (size_t i = 0; i < st->n_annotations; i++)
    an_jgen_kv_str(g, st->annotations[i].key, st->annotations[i].value ? st->annotations[i].value : "");
  an_jgen_map_close(g);
  if (internal) {
    an_jgen_key(g, "agentnest");
    an_jgen_map_open(g);
    an_jgen_kv_u64(g, "startTime", st->start_time);
    an_jgen_kv_str(g, "cgroupPath", st->cgroup_path);
    an_jgen_map_close(g);
  }
  an_jgen_map_close(g);
  int r = an_jgen_finish(&j, json, NULL);
  if (r < 0) return an_error_set(err, -r, "%s of container %s: JSON", AN_STATE_FILE, st->id);
  return 0;
}

int an_state_write(int dirfd, const struct an_container_state *st, an_error_t *err) {
  cleanup_free char *json = NULL;
  int r = an_state_to_json(st, true, &json, err);
  if (r < 0) return r;
  return an_state_write_file(dirfd, AN_STATE_FILE, json, strlen(json), err);
}

static enum an_container_status status_from_name(const char *s) {
  if (strcmp(s, "creating") == 0) return AN_STATUS_CREATING;
  if (strcmp(s, "created") == 0) return AN_STATUS_CREATED;
  if (strcmp(s, "running") == 0) return AN_STATUS_RUNNING;
  if (strcmp(s, "paused") == 0) return AN_STATUS_PAUSED;
  return AN_STATUS_STOPPED;
}

int an_state_read(int dirfd, struct an_container_state **out, an_error_t *err) {
  cleanup_close int fd = openat(dirfd, AN_STATE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return an_error_set(err, errno, "open %s", AN_STATE_FILE);
  char buf[65536];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) return an_error_set(err, errno, "read %s", AN_STATE_FILE);
  yajl_val root = NULL;
  int r = an_json_parse(buf, (size_t) n, AN_STATE_FILE, &root, err);
  if (r < 0) return r;
  struct an_container_state *st = calloc(1, sizeof *st);
  if (!st) { yajl_tree_free(root); return an_error_set(err, ENOMEM, "state"); }
  cleanup_free char *status = NULL;
  int64_t pid = 0;
  uint64_t start = 0;
  yajl_val v, ag = an_json_member(root, "agentnest");
  if ((v = an_json_member(root, "ociVersion")) && (r = an_json_get_string(v, "ociVersion", &st->oci_version, err)) < 0) goto fail;
  if ((v = an_json_member(root, "id")) && (r = an_json_get_string(v, "id", &st->id, err)) < 0) goto fail;
  if ((v = an_json_member(root, "status")) && (r = an_json_get_string(v, "status", &status, err)) < 0) goto fail;
  if ((v = an_json_member(root, "pid")) && (r = an_json_get_i64(v, "pid", 0, INT32_MAX, &pid, err)) < 0) goto fail;
  if ((v = an_json_member(root, "bundle")) && (r = an_json_get_string(v, "bundle", &st->bundle, err)) < 0) goto fail;
  if ((v = an_json_member(root, "rootfs")) && (r = an_json_get_string(v, "rootfs", &st->rootfs, err)) < 0) goto fail;
  if ((v = an_json_member(root, "created")) && (r = an_json_get_string(v, "created", &st->created, err)) < 0) goto fail;
  if ((v = an_json_member(root, "owner")) && (r = an_json_get_string(v, "owner", &st->owner, err)) < 0) goto fail;
  if (ag && (v = an_json_member(ag, "startTime")) && (r = an_json_get_u64(v, "agentnest.startTime", UINT64_MAX, &start, err)) < 0) goto fail;
  if (ag && (v = an_json_member(ag, "cgroupPath")) && (r = an_json_get_string(v, "agentnest.cgroupPath", &st->cgroup_path, err)) < 0) goto fail;
  if ((v = an_json_member(root, "annotations")) && YAJL_IS_OBJECT(v)) {
    size_t k = v->u.object.len;
    st->annotations = calloc(k ? k : 1, sizeof *st->annotations);
    if (!st->annotations) { r = an_error_set(err, ENOMEM, "state"); goto fail; }
    for (size_t i = 0; i < k; i++) {
      st->annotations[i].key = strdup(v->u.object.keys[i]);
      const char *s = YAJL_GET_STRING(v->u.object.values[i]);
      st->annotations[i].value = strdup(s ? s : "");
      st->n_annotations++;
    }
  }
  st->status = status ? status_from_name(status) : AN_STATUS_STOPPED;
  st->pid = (pid_t) pid;
  st->start_time = start;
  yajl_tree_free(root);
  *out = st;
  return 0;
fail:
  yajl_tree_free(root);
  an_container_state_free(st);
  return an_error_prefix(err, "%s", AN_STATE_FILE);
}
