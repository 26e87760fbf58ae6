/* sandbox/store_access.c — refuse, before anything is made, a store root
 * that the sandboxes' own host ids cannot reach.
 *
 * The engine binds <root>/sandboxes/<id>/workspace (and agentnest-init)
 * into the sandbox from inside the sandbox's user namespace, as the
 * sandbox's root there: host uid host_uid_base (>= 268435456), which is
 * neither the owner nor in the group of the host's directories.  Every
 * directory above the store root must therefore grant search (x) to
 * "others"; the store root itself is the runtime's and gets it
 * (sandbox.c).  A parent made by mktemp -d (0700) made every create fail
 * deep in the engine with "open_tree .../workspace: EACCES".
 *
 * Why refuse rather than make it work: making it work means opening the
 * workspace as host root before the user namespace exists and mounting
 * from that detached tree (open_tree(2) with OPEN_TREE_CLONE in the host's
 * namespaces, then move_mount(2) inside), a change of the engine's mount
 * sequence; changing the mode of a directory the runtime does not own is
 * not the runtime's to do.  So the caller learns at once which directory
 * and which mode. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "agentnest/sandbox.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

int an_sb_check_store_parents(const char *root, an_error_t *err) {
  /* The parents as the kernel resolves them: realpath of the directory that
   * holds the root (the root itself may not exist yet). */
  cleanup_free char *copy = strdup(root);
  if (!copy) return an_error_set(err, ENOMEM, "store root %s", root);
  char *slash = strrchr(copy, '/');
  const char *parent = slash == copy ? "/" : slash ? (*slash = '\0', copy) : ".";
  char real[PATH_MAX];
  if (!realpath(parent, real))
    return an_error_set(err, errno, "store root %s: resolve parent directory %s", root, parent);
  /* "/", then each prefix of real that ends a component, real itself last. */
  size_t n = strlen(real);
  for (size_t i = 0; i < n || i == 0; i++) {
    if (i > 0 && real[i] != '/' && real[i + 1] != '\0') continue;
    char dir[PATH_MAX];
    size_t len = i == 0 ? 1 : real[i] == '/' ? i : i + 1;
    snprintf(dir, sizeof dir, "%.*s", (int) len, real);
    struct stat st;
    if (stat(dir, &st) < 0) return an_error_set(err, errno, "store root %s: stat %s", root, dir);
    if (S_ISDIR(st.st_mode) && !(st.st_mode & S_IXOTH))
      return an_error_set(err, EACCES,
                          "store root %s: directory %s is mode %04o, and sandboxes (their own "
                          "host ids, not its owner or group) must be able to search it; give "
                          "others search permission (chmod o+x %s, e.g. mode %04o) or use a store "
                          "root whose parent directories all have it",
                          root, dir, (unsigned) (st.st_mode & 07777), dir,
                          (unsigned) ((st.st_mode & 07777) | S_IXOTH));
  }
  return 0;
}

int an_sandbox_check_store_root(const char *store_root, an_error_t *err) {
  return an_sb_check_store_parents(an_sb_root_or_default(store_root), err);
}
