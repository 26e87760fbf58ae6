/* util/safe_path.h — resolve, open, create and remove paths *beneath* a
 * directory fd without ever following a symlink (internal, shared by the
 * sandbox file operations and the image unpacker).
 *
 * Every function here treats `dirfd` as the root of an untrusted tree that
 * another party (a running sandbox, a hostile tar) may change at any moment.
 * Paths are resolved by the kernel with openat2(2) and
 *   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
 * so no component, including the last one, may be a symlink, and resolution
 * can never leave `dirfd` (see openat2(2), linux/openat2.h).  The checks and
 * the open are one system call: there is no check-then-use window.
 *
 * Errors for paths that would leave the tree:
 *   -EXDEV "<path>: path escapes workspace (...)"  — absolute path, a `..`
 *          component, or a symlink at any component.  (EXDEV is what the
 *          kernel itself answers for RESOLVE_BENEATH escapes.)
 *
 * Two resolution rules, on purpose:
 *  - workspace files (sandbox/) and everything named "_beneath" here:
 *    RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS — a symlink anywhere is refused,
 *    because the tree belongs to a live, hostile sandbox;
 *  - image unpacking (image/): an_mkdir_p_in_root() and an_openat2() with
 *    RESOLVE_IN_ROOT — an image's own symlinks ("lib -> usr/lib",
 *    "x -> /etc") are followed with chroot semantics, so a layer can write
 *    through them yet never leave the rootfs.  The last component of an
 *    entry is still created with O_EXCL/O_NOFOLLOW/mkdirat by the caller.
 * Tree removal never follows a symlink and never crosses a mount point
 * (RESOLVE_NO_XDEV) under either rule.
 *
 * What does not live here: reading/writing file contents (util/fdcopy.c,
 * sandbox/files.c), tar handling (sandbox/tar_extract.c, image/unpack.c).
 */
#ifndef AN_UTIL_SAFE_PATH_H
#define AN_UTIL_SAFE_PATH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "agentnest/error.h"

/* openat2 resolve flags used for every lookup beneath a tree. */
#define AN_RESOLVE_SAFE_FLAGS_DOC "RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS"

/* Deepest directory nesting any tree walk here (and in its users) accepts;
 * deeper trees fail with -ELOOP instead of exhausting fds or stack. */
#define AN_TREE_MAX_DEPTH 256

/* openat2(2) with the given RESOLVE_* flags (no other checks); O_CLOEXEC is
 * always added; EAGAIN (a concurrent rename) and EINTR are retried.
 * Returns a new fd (caller owns it) or -errno; sets no error message. */
int an_openat2(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve);

/* Check `relpath` lexically: non-empty, relative, shorter than PATH_MAX, no
 * `..` component.  `.` components and repeated slashes are allowed.
 * Returns 0, or -EXDEV ("path escapes workspace") for absolute paths and `..`
 * components, -EINVAL for empty paths, -ENAMETOOLONG for long ones. */
int an_path_check_relative(const char *relpath, an_error_t *err);

/* openat2(dirfd, relpath, flags|O_CLOEXEC|O_NOFOLLOW, mode) with
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, after
 * an_path_check_relative().  `relpath` may be "." for dirfd itself.
 * Returns a new fd owned by the caller, or:
 *   -EXDEV  the path leaves the tree or crosses a symlink at any component
 *           (kernel ELOOP/EXDEV are both reported as -EXDEV, "path escapes
 *           workspace");
 *   -ENOENT, -ENOTDIR, -EEXIST, -EACCES, ...: from openat2(2), message names
 *           the path;
 *   -ENOSYS the kernel lacks openat2 (< 5.6): we fail closed. */
int an_openat_beneath(int dirfd, const char *relpath, int flags, mode_t mode, an_error_t *err);

/* Create every missing directory of `relpath` beneath `dirfd`, one component
 * at a time (mkdirat(2) then an O_DIRECTORY|O_NOFOLLOW openat2 of just that
 * component), so a symlink planted at any component is never followed.
 * New directories get `mode` (umask applies as for mkdir(2)).
 * Returns an O_RDONLY|O_DIRECTORY fd of the last directory (caller owns it),
 * or -EXDEV (symlink/escape), -ENOTDIR (a component is not a directory),
 * or the errno of mkdirat/openat2. */
int an_mkdir_p_beneath(int dirfd, const char *relpath, mode_t mode, an_error_t *err);

/* As an_mkdir_p_beneath; directories it creates get exactly `mode` & 0777
 * (fchmod, umask ignored) and, unless uid and gid are both -1, are
 * fchown'ed to uid:gid.  Existing directories are left as they are. */
int an_mkdir_p_beneath_owned(int dirfd, const char *relpath, mode_t mode, uid_t uid, gid_t gid,
                             an_error_t *err);

/* Split `relpath` into its parent and last component and open the parent
 * beneath `dirfd` (O_RDONLY|O_DIRECTORY), creating missing parents with
 * `dir_mode` (owner uid:gid unless both are -1, see an_mkdir_p_beneath_owned)
 * when `mkdir_parents` is true.  *last receives a malloc'd copy
 * of the last component (never "", "." or ".."; trailing slashes dropped).
 * Returns the parent fd (caller owns it and *last) or a negative errno as
 * for an_openat_beneath / an_mkdir_p_beneath; -EINVAL when the path names
 * the tree itself ("." or "./"). */
int an_open_parent_beneath(int dirfd, const char *relpath, bool mkdir_parents, mode_t dir_mode,
                           uid_t uid, gid_t gid, char **last, an_error_t *err);

/* Open `name` (a single component) in `dirfd` as a regular file for reading
 * without opening anything else first: an O_PATH|O_NOFOLLOW handle is
 * fstat'ed and only a regular file is then re-opened (O_RDONLY|O_NONBLOCK
 * through /proc/self/fd, so the inode read is the inode checked and FIFOs,
 * sockets and devices are never opened at all).  `relpath` may also be a
 * multi-component path: it is resolved with an_openat_beneath().
 * On success returns the fd (O_NONBLOCK cleared) and fills *st if non-NULL.
 * Errors: -EXDEV (escape/symlink at any component, including the last),
 * -EINVAL "not a regular file" (FIFO, socket, device, directory), -ENOENT.. */
int an_open_regular_beneath(int dirfd, const char *relpath, struct stat *st, an_error_t *err);

/* Remove `name` in `dirfd` and, if it is a directory, everything in it,
 * walking with openat2 no-symlink dirfds (symlinks are unlinked, never
 * followed).  Any nesting depth is removed with a bounded number of open
 * fds: subtrees deeper than 32 levels are renamed up into the top directory
 * and removed in a further pass.  ENOENT is not an error.  Returns 0 or a
 * negative errno naming the entry that could not go. */
int an_remove_tree_beneath(int dirfd, const char *name, an_error_t *err);

/* Remove every entry of the directory `dirfd` as an_remove_tree_beneath()
 * does, keeping those for which keep(name, data) returns true (keep may be
 * NULL).  The directory itself stays.  Returns 0 or a negative errno with a
 * message naming the entry that could not go. */
int an_empty_dir_beneath(int dirfd, bool (*keep)(const char *name, void *data), void *data,
                         an_error_t *err);

/* mkdir -p of `path` inside an image rootfs with chroot semantics: each
 * prefix is resolved from `rootfd` with RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS
 * (symlinks in the image are followed, "/" and ".." stop at the rootfs), and
 * missing directories are made 0755 (umask applies).  `path` "" is the root.
 * Returns an O_PATH|O_DIRECTORY fd of the directory (caller owns it), or
 * -ENOTDIR (a prefix is not a directory), -ENOMEM, or the errno of
 * openat2/mkdirat, with a message naming `path`. */
int an_mkdir_p_in_root(int rootfd, const char *path, an_error_t *err);

/* mkdir -p of a trusted host path (the runtime's own store root, never
 * sandbox or image data): intermediate directories 0755, the last `mode`
 * (umask applies); existing ones are left alone.  Returns 0 or the mkdir(2)
 * errno with "mkdir <prefix>". */
int an_mkdir_p_host(const char *path, mode_t mode, an_error_t *err);

/* Make a unique name "<prefix>.<16 hex chars from getrandom(2)>" in a
 * malloc'd string.  Returns NULL only on allocation failure. */
char *an_random_name(const char *prefix);

/* Lowercase hex of `len` bytes into `out` (2*len+1 bytes, NUL-terminated). */
void an_hex_encode(const unsigned char *bytes, size_t len, char *out);

#endif
