/* tests/lib/rm_tree.h — removal of a test's own temporary tree. */
#pragma once

/* Remove the directory tree at `path` (absolute) and `path` itself, never
 * leaving it: every directory is opened relative to its parent's fd with
 * openat2(2) RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV, its
 * mount id (statx(2) STATX_MNT_ID) must equal the top's, and entries are
 * removed with unlinkat(2) on the parent's fd, never by path.  So a symlink
 * or a mount point (a bind mount of the same file system included, which
 * st_dev and nftw FTW_MOUNT cannot tell apart) that is present or swapped
 * in during the walk is left in place, not followed.  Refuses "/", the
 * caller's $HOME and a top that is a mount point.  Best effort: goes on
 * after an error.  Returns 0, or the first negative errno met (-EINVAL:
 * not absolute / refused top; -EXDEV: a mount point was not entered;
 * -ELOOP: a symlink where a directory was). */
int an_test_rm_tree(const char *path);
