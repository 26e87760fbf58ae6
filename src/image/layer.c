/* image/layer.c — read one layer blob exactly once and apply it.
 *
 * Two threads, so that decompression overlaps with writing files:
 *   inflater (helper thread): blob fd -> sha256 + byte count -> libarchive
 *     "raw" format with every filter (gzip, zstd, xz, bzip2, none) -> the
 *     uncompressed tar stream -> one end of a socketpair;
 *   caller's thread: libarchive tar reader on the other end -> unpack.c,
 *     which writes the entries.  All progress callbacks run here.
 * The digest and size are compared with the descriptor at the end (OCI
 * descriptor.md: content MUST be verified); a mismatch wins over any other
 * error.  A failed layer leaves its partial output in the import's temp dir,
 * which the caller removes.  Also the plain extraction of an outer archive
 * (oci-archive, docker-archive) into a scratch dir. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "image/image_internal.h"
#include "util/cleanup.h"

#define BLOB_BUF (256 * 1024)

struct blob_reader {
  int fd;
  struct an_sha256 *h;
  uint64_t done;               /* written by the inflater, read with __atomic */
  int64_t expect;
  char buf[BLOB_BUF];
};

static ssize_t blob_fill(struct blob_reader *br) {
  ssize_t n;
  do n = read(br->fd, br->buf, sizeof br->buf);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return n;
  if (an_sha256_update(br->h, br->buf, (size_t) n) < 0) {
    errno = EIO;
    return -1;
  }
  __atomic_add_fetch(&br->done, (uint64_t) n, __ATOMIC_RELAXED);
  return n;
}

static la_ssize_t blob_read(struct archive *a, void *data, const void **buf) {
  struct blob_reader *br = data;
  ssize_t n = blob_fill(br);
  if (n < 0) {
    archive_set_error(a, errno, "read blob");
    return -1;
  }
  if (br->expect >= 0 && br->done > (uint64_t) br->expect) {
    archive_set_error(a, EFBIG, "blob is larger than its descriptor's size %lld",
                      (long long) br->expect);
    return -1;
  }
  *buf = br->buf;
  return n;
}

struct inflater {
  struct blob_reader *br;
  int sock;
  char errmsg[512];            /* set when decompression failed */
  char out[BLOB_BUF];
};

static void *inflate_main(void *arg) {
  struct inflater *in = arg;
  struct archive *a = archive_read_new();
  struct archive_entry *e;
  if (!a) { snprintf(in->errmsg, sizeof in->errmsg, "out of memory"); goto out; }
  archive_read_support_filter_all(a);
  archive_read_support_format_raw(a);
  archive_read_support_format_empty(a);
  if (archive_read_open(a, in->br, NULL, blob_read, NULL) != ARCHIVE_OK) {
    snprintf(in->errmsg, sizeof in->errmsg, "%s", archive_error_string(a));
    goto out;
  }
  int r = archive_read_next_header(a, &e);
  if (r == ARCHIVE_EOF) goto out;
  if (r < ARCHIVE_WARN) {
    snprintf(in->errmsg, sizeof in->errmsg, "%s", archive_error_string(a));
    goto out;
  }
  for (;;) {
    la_ssize_t n = archive_read_data(a, in->out, sizeof in->out);
    if (n == 0) break;
    if (n < 0) {
      snprintf(in->errmsg, sizeof in->errmsg, "%s", archive_error_string(a));
      break;
    }
    for (la_ssize_t off = 0; off < n;) {
      ssize_t w = send(in->sock, in->out + off, (size_t) (n - off), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) goto out;     /* the tar side stopped (it reports why) */
      off += w;
    }
  }
out:
  if (a) archive_read_free(a);
  shutdown(in->sock, SHUT_WR);
  return NULL;
}

struct tick_state {
  struct blob_reader *br;
  const struct an_unpack_opts *o;
  struct an_image_progress *p;
  uint64_t last;
};

static void tick(void *data) {
  struct tick_state *t = data;
  uint64_t done = __atomic_load_n(&t->br->done, __ATOMIC_RELAXED);
  if (!t->o->progress || done - t->last < (1u << 20)) return;
  t->last = done;
  t->p->event = AN_IMAGE_EVENT_LAYER_BYTES;
  t->p->bytes_done = done;
  t->o->progress(t->p, t->o->userdata);
}

static struct archive *tar_reader(void) {
  struct archive *a = archive_read_new();
  if (!a) return NULL;
  archive_read_support_filter_all(a);
  archive_read_support_format_tar(a);
  archive_read_support_format_gnutar(a);
  return a;
}

int an_layer_apply(int rootfd, int blobfd, const struct an_layer_desc *desc, size_t index,
                   size_t n, const struct an_unpack_opts *o, an_error_t *err) {
  cleanup_free struct blob_reader *br = calloc(1, sizeof *br);
  cleanup_free struct inflater *in = calloc(1, sizeof *in);
  if (!br || !in || !(br->h = an_sha256_new()))
    return an_error_set(err, ENOMEM, "layer %s", desc->digest);
  char label[40];
  snprintf(label, sizeof label, "layer %.19s", desc->digest);
  br->fd = blobfd;
  br->expect = desc->size;
  struct an_image_progress p = {.event = AN_IMAGE_EVENT_LAYER_START, .layer = index, .n_layers = n,
                                .digest = desc->digest,
                                .bytes_total = desc->size > 0 ? (uint64_t) desc->size : 0};
  if (o->progress) o->progress(&p, o->userdata);
  struct tick_state ts = {.br = br, .o = o, .p = &p};
  struct an_unpack_opts lo = *o;
  lo.label = label;
  lo.tick = tick;
  lo.tick_data = &ts;

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
    an_sha256_free(br->h);
    return an_error_set(err, errno, "%s: socketpair", label);
  }
  in->br = br;
  in->sock = sv[0];
  pthread_t th;
  int pe = pthread_create(&th, NULL, inflate_main, in);
  if (pe) {
    close(sv[0]);
    close(sv[1]);
    an_sha256_free(br->h);
    return an_error_set(err, pe, "%s: start decompression thread", label);
  }
  an_error_t uerr = NULL;
  int r;
  struct archive *a = tar_reader();
  if (!a) r = an_error_set(&uerr, ENOMEM, "archive_read_new");
  else if (archive_read_open_fd(a, sv[1], BLOB_BUF) != ARCHIVE_OK)
    r = an_error_set(&uerr, EIO, "open: %s", archive_error_string(a));
  else
    r = an_unpack_archive(rootfd, a, &lo, &uerr);
  if (a) archive_read_free(a);
  close(sv[1]);                /* an inflater still sending gets EPIPE and stops */
  pthread_join(th, NULL);
  close(sv[0]);

  /* hash what was not consumed (tar padding, or all of it after an error) */
  for (;;) {
    if (br->expect >= 0 && br->done > (uint64_t) br->expect) break;
    ssize_t m = blob_fill(br);
    if (m < 0) { an_error_free(&uerr); r = an_error_set(&uerr, errno, "read blob"); break; }
    if (m == 0) break;
  }
  char got[AN_DIGEST_SIZE];
  int hr = an_digest_finish(an_steal(&br->h), got);
  if (hr < 0) {
    an_error_free(&uerr);
    return an_error_set(err, -hr, "layer %s: sha256 of the blob", desc->digest);
  }
  if (br->expect >= 0 && br->done != (uint64_t) br->expect) {
    an_error_free(&uerr);
    return an_error_set(err, EINVAL, "layer %s: size mismatch: descriptor says %lld bytes, blob has %s%llu",
                        desc->digest, (long long) br->expect,
                        br->done > (uint64_t) br->expect ? "more than " : "",
                        (unsigned long long) br->done);
  }
  if (strcmp(got, desc->digest)) {
    an_error_free(&uerr);
    return an_error_set(err, EINVAL, "layer %s: digest mismatch: blob has %s", desc->digest, got);
  }
  if (in->errmsg[0]) {         /* the decompressor's own error is the cause */
    int ret;
    if (uerr && strstr(uerr->msg, "entry \""))   /* and where the tar side was */
      ret = an_error_set(err, EIO, "%s: decompress: %s (while reading %s)", label, in->errmsg, uerr->msg);
    else
      ret = an_error_set(err, EIO, "%s: decompress: %s", label, in->errmsg);
    an_error_free(&uerr);
    return ret;
  }
  if (r < 0) {
    *err = uerr;
    return an_error_prefix(err, "%s", label);
  }
  if (o->progress) {
    p.event = AN_IMAGE_EVENT_LAYER_DONE;
    p.bytes_done = br->done;
    o->progress(&p, o->userdata);
  }
  return 0;
}

int an_archive_extract_fd(int fd, int destfd, const struct an_unpack_opts *o, an_error_t *err) {
  struct archive *a = tar_reader();
  if (!a) return an_error_set(err, ENOMEM, "archive_read_new");
  int r;
  if (archive_read_open_fd(a, fd, BLOB_BUF) != ARCHIVE_OK)
    r = an_error_set(err, EIO, "open archive: %s", archive_error_string(a));
  else
    r = an_unpack_archive(destfd, a, o, err);
  archive_read_free(a);
  return r;
}
