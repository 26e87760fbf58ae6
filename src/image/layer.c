/* image/layer.c — read one layer blob exactly once: every byte goes through
 * sha256 (and a size count) on its way into libarchive, which decompresses
 * (gzip, zstd, xz, bzip2 or none) and parses the tar; unpack.c writes the
 * entries.  The digest and size are compared with the descriptor at the end
 * (OCI descriptor.md: "the content MUST be verified").  A failed layer leaves
 * its partial output in the import's temp dir, which the caller removes.
 * Also the plain extraction of an outer archive (oci-archive,
 * docker-archive) into a scratch dir. */
#include <archive.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "image/image_internal.h"
#include "util/cleanup.h"

#define BLOB_BUF (256 * 1024)

struct blob_reader {
  int fd;
  struct an_sha256 *h;
  uint64_t done;
  int64_t expect;
  uint64_t last_report;
  const struct an_unpack_opts *o;
  struct an_image_progress p;
  char buf[BLOB_BUF];
};

static ssize_t blob_fill(struct blob_reader *br) {
  ssize_t n;
  do n = read(br->fd, br->buf, sizeof br->buf);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return n;
  an_sha256_update(br->h, br->buf, (size_t) n);
  br->done += (uint64_t) n;
  if (br->o->progress && br->done - br->last_report >= (1u << 20)) {
    br->last_report = br->done;
    br->p.event = AN_IMAGE_EVENT_LAYER_BYTES;
    br->p.bytes_done = br->done;
    br->o->progress(&br->p, br->o->userdata);
  }
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
  if (!br || !(br->h = an_sha256_new())) return an_error_set(err, ENOMEM, "layer %s", desc->digest);
  char label[40];
  snprintf(label, sizeof label, "layer %.19s", desc->digest);
  struct an_unpack_opts lo = *o;
  lo.label = label;
  br->fd = blobfd;
  br->expect = desc->size;
  br->o = o;
  br->p = (struct an_image_progress){.event = AN_IMAGE_EVENT_LAYER_START, .layer = index,
                                     .n_layers = n, .digest = desc->digest,
                                     .bytes_total = desc->size > 0 ? (uint64_t) desc->size : 0};
  if (o->progress) o->progress(&br->p, o->userdata);

  an_error_t uerr = NULL;
  int r;
  struct archive *a = tar_reader();
  if (!a) r = an_error_set(&uerr, ENOMEM, "archive_read_new");
  else if (archive_read_open(a, br, NULL, blob_read, NULL) != ARCHIVE_OK)
    r = an_error_set(&uerr, EIO, "open: %s", archive_error_string(a));
  else
    r = an_unpack_archive(rootfd, a, &lo, &uerr);
  if (a) archive_read_free(a);

  /* hash what libarchive did not consume (tar padding, or all of it after an error) */
  for (;;) {
    if (br->expect >= 0 && br->done > (uint64_t) br->expect) break;
    ssize_t m = blob_fill(br);
    if (m < 0) { an_error_free(&uerr); r = an_error_set(&uerr, errno, "read blob"); break; }
    if (m == 0) break;
  }
  char got[AN_DIGEST_SIZE];
  an_sha256_finish(br->h, got);
  br->h = NULL;
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
  if (r < 0) {
    *err = uerr;
    return an_error_prefix(err, "%s", label);
  }
  if (o->progress) {
    br->p.event = AN_IMAGE_EVENT_LAYER_DONE;
    br->p.bytes_done = br->done;
    o->progress(&br->p, o->userdata);
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
