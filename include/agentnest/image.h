/* agentnest/image.h — the image store: import OCI image layouts, oci-archive,
 * docker-archive and plain rootfs tars into verified, unpacked roots that
 * every sandbox of that image bind-mounts read-only (no per-sandbox copy).
 *
 * Standards: OCI image-spec 1.1 (image-layout.md, manifest.md, config.md,
 * layer.md "Whiteouts", descriptor.md "Digests"), Docker image manifest v2
 * schema 2 and the `docker save` archive format (manifest.json).
 *
 * STORE LAYOUT (store_root defaults to /var/lib/agentnest; the CLI passes
 * --root / $AGENTNEST_ROOT):
 *   <root>/images/                      mode 0700 (see "Modes" below)
 *   <root>/images/<hex>/rootfs/         the unpacked root (hex = manifest digest)
 *   <root>/images/<hex>/config.json     the image config blob, verbatim
 *   <root>/images/<hex>/manifest.json   the manifest (synthesised for
 *                                       docker-archive and rootfs tars)
 *   <root>/images/<hex>/meta.json       {digest, source, created, imported, size, layers}
 *   <root>/images/names.json            {"names": {"NAME:TAG": "sha256:HEX", ...}}
 *   <root>/images/.tmp-*                imports in progress; swept by the next
 *                                       import when no other import holds the store
 *   <root>/images/.lock, .names.lock    flock(2) files
 * Import unpacks into <root>/images/.tmp-*, syncfs(2)s, then renames into
 * place with renameat2(RENAME_NOREPLACE): an image directory either exists
 * complete or not at all.  A failed import removes its temp dir; a crashed one
 * is swept later.  Importing an image whose manifest digest is already stored
 * unpacks nothing and only (re)tags it.
 *
 * NAMES: NAME[:TAG][@sha256:HEX].  A NAME without a tag means NAME:latest.
 * Allowed characters: [A-Za-z0-9._/:@-], at most 255 bytes, not starting with
 * '.', '-' or '/'.  Lookups (inspect, rm, resolve) also accept "sha256:HEX",
 * the full HEX, or a unique HEX prefix of at least 12 characters.
 *
 * EXTRACTION RULES (safe by construction; src/image/unpack.c).  Layers are
 * read with libarchive (tar; gzip, zstd, xz, bzip2 or uncompressed) but every
 * entry is written by us through directory fds: each parent is resolved with
 * openat2(RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS) on the rootfs fd (chroot
 * semantics: a symlink in the image can never lead outside the rootfs), and
 * the last component is created with O_CREAT|O_EXCL|O_NOFOLLOW, mkdirat,
 * symlinkat, linkat or mknodat.  Per entry name:
 *  - absolute names ("/abs") are REBASED under the rootfs (leading '/'
 *    stripped), like tar(1) does; absolute hardlink targets likewise.
 *  - "." components are dropped; "./", "." and "/" name the root itself:
 *    accepted for a directory entry (its mode/owner/mtime apply to the root),
 *    refused for any other type.
 *  - any ".." component is refused: "entry \"a/../../x\": path escapes the
 *    root" (or "'..' component refused" when it would stay inside).
 *  - an empty name, a name that is not valid UTF-8, or a component longer than
 *    NAME_MAX is refused.
 *  - whiteouts (layer.md): ".wh.NAME" removes NAME from lower layers;
 *    ".wh..wh..opq" empties its directory of lower-layer entries (entries of
 *    the same layer are kept, whatever their order).  A bare ".wh.", ".wh.."
 *    and ".wh..." are refused.  Whiteout parents are resolved with
 *    RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS: a whiteout under a symlinked
 *    directory is refused, deletion never follows a symlink.  Other
 *    ".wh..wh.*" (aufs metadata) entries are skipped with a warning.
 *  - an existing entry of another type is removed first (a directory
 *    recursively, never following symlinks); directory onto directory merges.
 *  - hardlinks: the target is resolved inside the rootfs (O_PATH, last
 *    component not followed) and linked with linkat(AT_EMPTY_PATH): same
 *    inode, never a copy.  A missing or directory target fails the import.
 *  - char/block devices and sockets are skipped with a warning (progress
 *    callback, AN_IMAGE_EVENT_WARNING); FIFOs are created.
 *  - owners: numeric uid/gid from the tar header only (never a name lookup),
 *    set with fchownat(AT_SYMLINK_NOFOLLOW).
 *  - modes: kept as in the image, setuid/setgid included, because sandboxes
 *    need the image as built.  They are never honoured for the host: the
 *    store's images/ directory is 0700 (no host user but root reaches them)
 *    and sandboxes run with no_new_privs (DESIGN.md), so setuid grants
 *    nothing there either.
 *  - mtimes: kept (Python's .pyc checks need them).
 *  - xattrs: only "user.*" are applied; "security.capability" and every other
 *    namespace are dropped with a warning (file capabilities are ineffective
 *    under no_new_privs and must never become host capabilities).
 *  - size: the unpacked total (regular file bytes, all layers) is capped
 *    (default AN_IMAGE_DEFAULT_MAX_UNPACK, 16 GiB); an entry whose declared
 *    size exceeds what is left fails with "size N exceeds the unpack limit".
 *  - a tar that ends right after its last file's data, without padding and
 *    end-of-archive blocks (umoci 0.4 `insert` writes such layers), is
 *    accepted with a warning: the data is complete and digest-verified.
 * Every refusal is an error naming the layer, the entry and the reason; the
 * import then fails and leaves nothing in the store.
 *
 * Thread-safety: no global state; calls may run at once from several
 * threads and processes: the flock(2) files above serialise the changes to
 * the store.  The progress callback runs on the calling thread.
 */
#ifndef AGENTNEST_IMAGE_H
#define AGENTNEST_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include "agentnest/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default total unpacked size cap: 16 GiB. */
#define AN_IMAGE_DEFAULT_MAX_UNPACK (16ULL << 30)
/* Default store root when neither --root nor $AGENTNEST_ROOT is given. */
#define AN_IMAGE_DEFAULT_STORE "/var/lib/agentnest"

/* What kind of SRC an import read. */
enum an_image_source_kind {
  AN_IMAGE_SOURCE_OCI_LAYOUT = 1,   /* directory with oci-layout + index.json */
  AN_IMAGE_SOURCE_OCI_ARCHIVE,      /* tar of an OCI layout */
  AN_IMAGE_SOURCE_DOCKER_ARCHIVE,   /* `docker save` / `podman save` tar (manifest.json) */
  AN_IMAGE_SOURCE_ROOTFS_TAR,       /* any other tar: one layer, synthesised config */
};

/* Name of a source kind: "oci-layout", "oci-archive", "docker-archive",
 * "rootfs-tar" (static storage; "unknown" otherwise). */
const char *an_image_source_kind_name(enum an_image_source_kind kind);

/* Progress / warning events passed to an an_image_progress_fn. */
enum an_image_event {
  AN_IMAGE_EVENT_SOURCE = 1,  /* SRC detected: `kind` set */
  AN_IMAGE_EVENT_LAYER_START, /* layer `layer` (0-based) of `n_layers` begins; digest, bytes_total */
  AN_IMAGE_EVENT_LAYER_BYTES, /* bytes_done of the layer's compressed blob read so far */
  AN_IMAGE_EVENT_LAYER_DONE,  /* layer fully applied and verified */
  AN_IMAGE_EVENT_WARNING,     /* something skipped (device node, xattr...): `message` */
  AN_IMAGE_EVENT_DONE,        /* import finished (also when already present: `already_present`) */
};

struct an_image_progress {
  enum an_image_event event;
  enum an_image_source_kind kind;
  size_t layer, n_layers;
  const char *digest;         /* "sha256:HEX" of the layer blob, or NULL */
  uint64_t bytes_done;        /* compressed bytes of this layer read so far */
  uint64_t bytes_total;       /* compressed size of this layer (descriptor size) */
  const char *message;        /* WARNING: e.g. "layer sha256:..: entry \"dev/null\": device node skipped" */
  int already_present;        /* DONE: 1 when the digest was already in the store */
};

/* Progress callback.  Always called on the thread that called
 * an_image_import() (each layer is decompressed by a short-lived helper
 * thread, which never calls it); must not call back into the store.  `p`
 * and its strings are valid only during the call.  LAYER_BYTES events are
 * rate-limited (about every 1 MiB). */
typedef void (*an_image_progress_fn)(const struct an_image_progress *p, void *userdata);

/* The part of the image config a sandbox needs (OCI image-spec config.md,
 * "config" object).  All strings heap-allocated and owned by the struct;
 * arrays NULL-terminated; any member may be NULL when the image omits it. */
struct an_image_config {
  char **env;           /* "KEY=VALUE" */
  char **entrypoint;
  char **cmd;
  char *working_dir;
  char *user;           /* "uid", "uid:gid", "name" or "name:group" as in the image */
  char *architecture;   /* "amd64", ... */
  char *os;             /* "linux" */
};

/* One stored image.  Owned by the caller; free with an_image_info_free(). */
struct an_image_info {
  char *digest;         /* "sha256:HEX" of the manifest: the image id */
  char **names;         /* NULL-terminated, sorted; empty list when untagged */
  char *dir;            /* absolute path <root>/images/<hex> */
  char *rootfs;         /* absolute path <root>/images/<hex>/rootfs */
  char *created;        /* image config "created" (RFC 3339) or NULL */
  char *imported;       /* when it was imported (RFC 3339, UTC) */
  uint64_t size;        /* unpacked bytes (regular files, as counted at import) */
  enum an_image_source_kind source;
  struct an_image_config config;
  int already_present;  /* set by an_image_import() when nothing was unpacked */
};

/* Options of an_image_import().  Zero-initialise; all members optional. */
struct an_image_import_opts {
  an_image_progress_fn progress;
  void *userdata;
  uint64_t max_unpack_bytes;  /* 0 = AN_IMAGE_DEFAULT_MAX_UNPACK */
  int no_sync;                /* 1: skip syncfs(2) before the rename (tests) */
};

/* Import SRC into the store at STORE_ROOT (created if missing).
 *   src:  an OCI image layout directory, an oci-archive tar, a docker-archive
 *         tar, or a plain rootfs tar (optionally gzip/zstd/xz compressed);
 *         the kind is detected from the contents, never from the file name.
 *   name: NULL (use the source's own names: index.json annotation
 *         org.opencontainers.image.ref.name or docker RepoTags), or
 *         NAME[:TAG] to tag the result, or NAME[:TAG]@sha256:HEX to also
 *         require that manifest digest (OCI sources: selects that manifest
 *         from index.json).
 *   opts: may be NULL.
 *   result: if non-NULL, receives the stored image (caller frees with
 *         an_image_info_free()).
 * Every blob read is checked against its descriptor's sha256 digest and size
 * (docker-archive: the config file name and the config's rootfs.diff_ids).
 * A given NAME replaces the source's own names (they are not applied).
 * Returns 0, or a negative errno with *err set, e.g.:
 *   -EINVAL  bad name; bad JSON; unsupported layout; an entry refused by the
 *            extraction rules above (message: "layer sha256:HEX12: entry
 *            \"NAME\": reason"); blob digest or size mismatch (message has
 *            both values); NAME@sha256 not matching the image
 *   -EIO     corrupt or truncated compressed data or tar stream
 *   -ENOENT  SRC missing; a manifest naming a blob not present in SRC; a
 *            hardlink to a missing target; a parent that is a dangling symlink
 *   -EPERM   a hardlink to a directory
 *   -EFBIG   the unpack size cap was exceeded
 *   -ENOTSUP a digest algorithm other than sha256; an unsupported media type
 *   other    the failing system call's errno (disk full, EACCES, ...)
 * On error the store is unchanged (temp dirs removed). */
int an_image_import(const char *store_root, const char *src, const char *name,
                    const struct an_image_import_opts *opts, struct an_image_info **result,
                    an_error_t *err);

/* List the stored images, sorted by digest.  *list receives a heap array of
 * *n pointers (each freed by an_image_info_free(); free the array itself with
 * an_image_list_free()).  A missing store is an empty list.
 * Returns 0 or a negative errno (-EIO/-EINVAL for a corrupt meta.json or
 * names.json, naming the file). */
int an_image_list(const char *store_root, struct an_image_info ***list, size_t *n,
                  an_error_t *err);

/* Free a list from an_image_list() (NULL allowed). */
void an_image_list_free(struct an_image_info **list, size_t n);

/* Look NAME up (see NAMES above) and return the image: its rootfs path (for
 * the engine to bind-mount read-only, shared by all sandboxes) and its
 * config.  *info is owned by the caller (an_image_info_free()).
 * Returns 0, -ENOENT "image NAME: not found in the image store ROOT; import it
 * first: agentnest [--root ROOT] image import SRC --name NAME" (no such image,
 * or no store), -EINVAL for a malformed name or an ambiguous digest prefix,
 * or the errno of reading the store's files (names.json, the image's
 * meta.json and config.json), naming the file. */
int an_image_resolve(const char *store_root, const char *name, struct an_image_info **info,
                     an_error_t *err);

/* Describe NAME as a JSON object (yajl_gen, beautified):
 *   {"Id","RepoTags","Created","Imported","Size","Source","Rootfs",
 *    "Architecture","Os","Config":{"Env","Entrypoint","Cmd","WorkingDir","User"},
 *    "Layers":[digest...]}
 * *json is a heap NUL-terminated string owned by the caller (free()).
 * Errors as an_image_resolve(). */
int an_image_inspect(const char *store_root, const char *name, char **json, an_error_t *err);

/* Remove NAME.  A tag (NAME[:TAG]) is untagged; the image itself is deleted
 * once no tag refers to it.  A digest (sha256:HEX, HEX or prefix) deletes the
 * image and every tag on it.  Deletion first renames the image directory to
 * a .tmp-* name (atomic disappearance), then removes it.  The caller must
 * make sure no sandbox still uses the root.
 * Returns 0, -ENOENT when NAME is not in the store, or a negative errno. */
int an_image_remove(const char *store_root, const char *name, an_error_t *err);

/* Free an image info (NULL allowed). */
void an_image_info_free(struct an_image_info *info);

/* Free the members of an image config (not the struct itself). */
void an_image_config_clear(struct an_image_config *config);

#ifdef __cplusplus
}
#endif
#endif
