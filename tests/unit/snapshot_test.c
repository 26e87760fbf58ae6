/* Tests for agentnest/snapshot.h: snapshot keeps symlinks as symlinks and
 * owners numeric; restore verifies sha256 first, refuses hostile entries
 * (BL-27) naming the first one, writes nothing outside and swaps
 * atomically. */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/snapshot.h"
#include "ws_fixture.h"

static struct ws_fixture fx;
static int rootfd = -1;
static void setup(void) {
  ws_fixture_setup(&fx);
  rootfd = open(fx.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}
static void teardown(void) {
  if (rootfd >= 0) close(rootfd);
  ws_fixture_teardown(&fx);
}
TestSuite(snapshot, .init = setup, .fini = teardown);

enum kind { F, D, L, H, C };
struct ent {
  enum kind k;
  const char *name;
  const char *arg; /* file content, link target */
};

static void make_tar(const char *path, const struct ent *ents, size_t n) {
  struct archive *a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  cr_assert_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
  for (size_t i = 0; i < n; i++) {
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, ents[i].name);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_mtime(e, 1700000000, 0);
    switch (ents[i].k) {
    case F:
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_size(e, (la_int64_t) strlen(ents[i].arg));
      break;
    case D:
      archive_entry_set_filetype(e, AE_IFDIR);
      archive_entry_set_perm(e, 0755);
      break;
    case L:
      archive_entry_set_filetype(e, AE_IFLNK);
      archive_entry_set_symlink(e, ents[i].arg);
      break;
    case H:
      archive_entry_set_filetype(e, AE_IFREG);
      archive_entry_set_hardlink(e, ents[i].arg);
      break;
    case C:
      archive_entry_set_filetype(e, AE_IFCHR);
      archive_entry_set_rdevmajor(e, 1);
      archive_entry_set_rdevminor(e, 5);
      break;
    }
    cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK, "%s", archive_error_string(a));
    if (ents[i].k == F) archive_write_data(a, ents[i].arg, strlen(ents[i].arg));
    archive_entry_free(e);
  }
  cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
  archive_write_free(a);
}

static void expect_restore_refused(const struct ent *ents, size_t n, const char *offender, int errnum) {
  char tar[PATH_MAX], before[65], after[65], p[PATH_MAX];
  ws_path(tar, "%s/hostile.tar", fx.root);
  make_tar(tar, ents, n);
  ws_path(p, "%s/keep.txt", fx.ws);
  ws_write(p, "workspace content\n");
  ws_tree_digest(fx.ws, before);
  an_error_t err = NULL;
  int r = an_workspace_restore(rootfd, "ws", tar, NULL, &err);
  cr_assert_eq(r, -errnum, "restore returned %d: %s", r, err ? err->msg : "ok");
  char needle[PATH_MAX];
  ws_path(needle, "entry \"%s\"", offender);
  cr_assert(strstr(err->msg, needle), "error does not name %s: %s", offender, err->msg);
  an_error_free(&err);
  ws_tree_digest(fx.ws, after);
  cr_assert_str_eq(before, after, "workspace changed by a failed restore");
  cr_assert(ws_canary_unchanged(&fx), "CANARY changed");
  cr_assert_eq(ws_count_named(fx.root, "pwned", NULL), 0);
  cr_assert_eq(ws_count_named(fx.root, "escaped.txt", NULL), 0);
  cr_assert_neq(access("/escaped.txt", F_OK), 0);
  cr_assert_neq(access("/tmp/escaped.txt", F_OK), 0);
  cr_assert_neq(access("/tmp/up.txt", F_OK), 0);
  cr_assert_neq(access("/root.txt", F_OK), 0);
  /* nothing left behind next to the workspace */
  char cmd[PATH_MAX + 64];
  ws_path(cmd, "test -z \"$(ls -A %s | grep restore)\"", fx.root);
  cr_assert_eq(system(cmd), 0, "temporary restore directory left behind");
}

Test(snapshot, bl_27_crafted_tar_fails_naming_first_offending_entry) {
  const struct ent ents[] = {
      {L, "link", "../../../.."}, {F, "link/escaped.txt", "x"}, {L, "abs", "/etc"},
      {F, "abs/cron.d/x", "x"},   {F, "../up.txt", "x"},        {F, "/root.txt", "x"},
      {H, "h", "/etc/passwd"},    {D, "d", NULL},               {L, "d", "/"},
      {F, "d/x", "x"},
  };
  expect_restore_refused(ents, sizeof ents / sizeof *ents, "link/escaped.txt", EXDEV);
}

Test(snapshot, bl_27_write_through_absolute_symlink_entry_is_refused) {
  const struct ent ents[] = {{F, "ok.txt", "fine"}, {L, "abs", fx.canary}, {F, "abs/pwned", "x"}};
  expect_restore_refused(ents, 3, "abs/pwned", EXDEV);
}

Test(snapshot, bl_27_dotdot_entry_is_refused) {
  const struct ent ents[] = {{F, "ok.txt", "fine"}, {F, "../up.txt", "x"}};
  expect_restore_refused(ents, 2, "../up.txt", EXDEV);
}

Test(snapshot, bl_27_absolute_entry_is_refused) {
  const struct ent ents[] = {{F, "ok.txt", "fine"}, {F, "/root.txt", "x"}};
  expect_restore_refused(ents, 2, "/root.txt", EXDEV);
}

Test(snapshot, bl_27_hardlink_out_of_workspace_is_refused) {
  const struct ent ents[] = {{F, "ok.txt", "fine"}, {H, "h", "/etc/passwd"}};
  expect_restore_refused(ents, 2, "h", EXDEV);
  const struct ent ents2[] = {{L, "l", "/etc"}, {H, "h2", "l/passwd"}};
  expect_restore_refused(ents2, 2, "h2", EXDEV);
}

Test(snapshot, bl_27_type_change_dir_to_symlink_is_refused) {
  const struct ent ents[] = {{D, "d", NULL}, {L, "d", "/"}, {F, "d/x", "x"}};
  expect_restore_refused(ents, 3, "d", EEXIST);
}

Test(snapshot, bl_27_device_node_entry_is_refused) {
  const struct ent ents[] = {{F, "ok.txt", "fine"}, {C, "c", NULL}};
  expect_restore_refused(ents, 2, "c", EPERM);
}

static int warnings;
static void count_warn(void *d, const char *m) {
  (void) d;
  (void) m;
  warnings++;
}

Test(snapshot, bl_27_snapshot_stores_symlinks_as_symlinks_with_numeric_owners) {
  char p[PATH_MAX], tar[PATH_MAX], secret_link[PATH_MAX];
  ws_path(p, "%s/a.txt", fx.ws);
  ws_write(p, "hello\n");
  cr_assert_eq(chown(p, 12345, 23456), 0);
  ws_path(secret_link, "%s/secret.txt", fx.canary);
  ws_path(p, "%s/leak", fx.ws);
  cr_assert_eq(symlink(secret_link, p), 0);
  ws_path(p, "%s/root", fx.ws);
  cr_assert_eq(symlink("/", p), 0);
  ws_path(p, "%s/fifo", fx.ws);
  cr_assert_eq(mkfifo(p, 0600), 0);
  ws_path(tar, "%s/snap.tar", fx.root);
  struct an_snapshot_info info;
  an_error_t err = NULL;
  struct an_snapshot_opts o = {.warn = count_warn};
  warnings = 0;
  alarm(10);
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, &o, &info, &err), 0, "%s", err ? err->msg : "");
  alarm(0);
  cr_assert_eq(warnings, 1, "the FIFO is skipped with a warning");
  cr_assert_eq(info.entries, 3);
  char h[65];
  cr_assert(ws_file_sha256(tar, h));
  cr_assert_str_eq(h, info.sha256);
  struct stat st;
  cr_assert_eq(stat(tar, &st), 0);
  cr_assert_eq((uint64_t) st.st_size, info.size);

  struct archive *a = archive_read_new();
  archive_read_support_format_tar(a);
  cr_assert_eq(archive_read_open_filename(a, tar, 10240), ARCHIVE_OK);
  struct archive_entry *e;
  int seen = 0;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    const char *name = archive_entry_pathname(e);
    const char *un = archive_entry_uname(e), *gn = archive_entry_gname(e);
    cr_assert(!un || !*un, "user name '%s' stored for %s: ids must stay numeric", un, name);
    cr_assert(!gn || !*gn, "group name '%s' stored for %s", gn, name);
    if (!strcmp(name, "leak")) {
      cr_assert_eq(archive_entry_filetype(e), AE_IFLNK);
      cr_assert_str_eq(archive_entry_symlink(e), secret_link);
      cr_assert_eq(archive_entry_size(e), 0);
      seen++;
    } else if (!strcmp(name, "root")) {
      cr_assert_eq(archive_entry_filetype(e), AE_IFLNK);
      seen++;
    } else if (!strcmp(name, "a.txt")) {
      cr_assert_eq(archive_entry_uid(e), 12345);
      cr_assert_eq(archive_entry_gid(e), 23456);
      char buf[64] = {0};
      cr_assert_eq(archive_read_data(a, buf, sizeof buf), 6);
      cr_assert_str_eq(buf, "hello\n");
      seen++;
    }
  }
  archive_read_free(a);
  cr_assert_eq(seen, 3);
}

Test(snapshot, snapshot_restore_roundtrip_replaces_workspace_atomically) {
  char p[PATH_MAX], tar[PATH_MAX], orig[65], now[65];
  ws_path(p, "%s/dir", fx.ws);
  cr_assert_eq(mkdir(p, 0750), 0);
  ws_path(p, "%s/dir/sub", fx.ws);
  cr_assert_eq(mkdir(p, 0700), 0);
  ws_path(p, "%s/dir/sub/x.sh", fx.ws);
  ws_write(p, "#!/bin/sh\necho hi\n");
  cr_assert_eq(chmod(p, 0755), 0);
  ws_path(p, "%s/dir/empty", fx.ws);
  cr_assert_eq(mkdir(p, 0755), 0);
  ws_path(p, "%s/up", fx.ws);
  cr_assert_eq(symlink("/", p), 0);
  ws_path(p, "%s/big", fx.ws);
  int fd = open(p, O_CREAT | O_WRONLY, 0644);
  for (int i = 0; i < 300; i++) cr_assert_eq(write(fd, "0123456789abcdef0123456789abcdef", 32), 32);
  close(fd);
  ws_tree_digest(fx.ws, orig);
  ws_path(tar, "%s/snap.tar", fx.root);
  struct an_snapshot_info info;
  an_error_t err = NULL;
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, NULL, &info, &err), 0, "%s", err ? err->msg : "");
  /* change the workspace, then restore */
  ws_path(p, "%s/new.txt", fx.ws);
  ws_write(p, "new\n");
  ws_path(p, "%s/big", fx.ws);
  cr_assert_eq(unlink(p), 0);
  /* a wrong digest is refused before anything is extracted */
  char bad[65];
  memcpy(bad, info.sha256, 65);
  bad[0] = bad[0] == '0' ? '1' : '0';
  cr_assert_eq(an_workspace_restore(rootfd, "ws", tar, bad, &err), -EBADMSG);
  cr_assert(strstr(err->msg, "sha256 mismatch"), "%s", err->msg);
  an_error_free(&err);
  cr_assert_eq(an_workspace_restore(rootfd, "ws", tar, "xyz", &err), -EINVAL);
  an_error_free(&err);
  ws_path(p, "%s/new.txt", fx.ws);
  cr_assert_eq(access(p, F_OK), 0, "workspace untouched after refused restore");
  /* upper-case digest accepted */
  char upper[65];
  for (int i = 0; i < 65; i++) upper[i] = (char) (info.sha256[i] >= 'a' ? info.sha256[i] - 32 : info.sha256[i]);
  cr_assert_eq(an_workspace_restore(rootfd, "ws", tar, upper, &err), 0, "%s", err ? err->msg : "");
  ws_tree_digest(fx.ws, now);
  cr_assert_str_eq(now, orig, "restored tree differs from the snapshot");
  char cmd[PATH_MAX + 64];
  ws_path(cmd, "test -z \"$(ls -A %s | grep restore)\"", fx.root);
  cr_assert_eq(system(cmd), 0, "old tree left behind");
  cr_assert(ws_canary_unchanged(&fx));
}

Test(snapshot, restore_can_set_owner_and_strips_setuid) {
  char tar[PATH_MAX], p[PATH_MAX];
  ws_path(tar, "%s/in.tar", fx.root);
  struct archive *a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  cr_assert_eq(archive_write_open_filename(a, tar), ARCHIVE_OK);
  struct archive_entry *e = archive_entry_new();
  archive_entry_set_pathname(e, "./deep/suid");
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 04755);
  archive_entry_set_size(e, 2);
  archive_write_header(a, e);
  archive_write_data(a, "ok", 2);
  archive_entry_free(e);
  archive_write_close(a);
  archive_write_free(a);
  an_error_t err = NULL;
  struct an_snapshot_opts o = {.set_owner = true, .uid = 100000, .gid = 100001};
  cr_assert_eq(an_workspace_restore_ex(rootfd, "ws", tar, NULL, &o, &err), 0, "%s", err ? err->msg : "");
  struct stat st;
  ws_path(p, "%s/deep/suid", fx.ws);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_mode & 07777, 0755);
  cr_assert_eq(st.st_uid, 100000);
  ws_path(p, "%s/deep", fx.ws);
  cr_assert_eq(stat(p, &st), 0);
  cr_assert_eq(st.st_uid, 100000, "implicit parent gets the owner too");
}

Test(snapshot, bl_27_hostile_entry_names_are_quoted_in_errors) {
  char tar[PATH_MAX];
  ws_path(tar, "%s/evil.tar", fx.root);
  const struct ent ents[] = {{F, "ok\n\x1b[31mFAKE LOG LINE/../../x", "x"}};
  make_tar(tar, ents, 1);
  an_error_t err = NULL;
  cr_assert_eq(an_workspace_restore(rootfd, "ws", tar, NULL, &err), -EXDEV);
  cr_assert_null(strchr(err->msg, '\n'), "raw newline in: %s", err->msg);
  cr_assert_null(strchr(err->msg, '\x1b'), "raw escape in: %s", err->msg);
  cr_assert(strstr(err->msg, "entry \"ok\\x0a\\x1b[31mFAKE"), "%s", err->msg);
  an_error_free(&err);
}

/* Any byte a workspace file name may hold survives snapshot and restore,
 * whatever the locale (the C locale could not convert "café" to UTF-8 for
 * pax and refused the whole snapshot). */
Test(snapshot, non_ascii_and_invalid_utf8_names_round_trip) {
  const char *names[] = {"caf\xc3\xa9-\xe6\x97\xa5\xe6\x9c\xac.txt", "raw-\xff\xfe", NULL};
  char p[PATH_MAX], tar[PATH_MAX];
  for (int i = 0; names[i]; i++) {
    ws_path(p, "%s/%s", fx.ws, names[i]);
    ws_write(p, names[i]);
  }
  ws_path(tar, "%s/snap.tar", fx.root);
  struct an_snapshot_info info;
  an_error_t err = NULL;
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, NULL, &info, &err), 0, "%s", err ? err->msg : "");
  for (int i = 0; names[i]; i++) {
    ws_path(p, "%s/%s", fx.ws, names[i]);
    cr_assert_eq(unlink(p), 0);
  }
  cr_assert_eq(an_workspace_restore(rootfd, "ws", tar, info.sha256, &err), 0, "%s", err ? err->msg : "");
  for (int i = 0; names[i]; i++) {
    ws_path(p, "%s/%s", fx.ws, names[i]);
    cr_assert_eq(access(p, F_OK), 0, "%s not restored", p);
  }
}

/* N hard links of a file are archived as its data once plus N-1 link
 * entries (a sandbox's 50 links of 10 MiB were 500 MiB of tar), and
 * restore makes them links again. */
Test(snapshot, hard_links_are_archived_once_and_restored_as_links) {
  char p[PATH_MAX], q[PATH_MAX], tar[PATH_MAX];
  ws_path(p, "%s/f0", fx.ws);
  int fd = open(p, O_CREAT | O_WRONLY, 0644);
  static char block[65536];
  memset(block, 'x', sizeof block);
  for (int i = 0; i < 16; i++) cr_assert_eq(write(fd, block, sizeof block), (ssize_t) sizeof block);
  close(fd);
  for (int i = 1; i < 20; i++) {
    ws_path(q, "%s/f%d", fx.ws, i);
    cr_assert_eq(link(p, q), 0);
  }
  ws_path(tar, "%s/snap.tar", fx.root);
  struct an_snapshot_info info;
  an_error_t err = NULL;
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, NULL, &info, &err), 0, "%s", err ? err->msg : "");
  cr_assert_lt(info.size, 2u * 1024 * 1024, "1 MiB file with 20 links made a %llu-byte tar",
               (unsigned long long) info.size);
  cr_assert_eq(info.entries, 20);
  /* a cap of 1.5 MiB holds the file once */
  struct an_snapshot_opts cap = {.max_bytes = 3u * 512 * 1024};
  ws_path(q, "%s/snap2.tar", fx.root);
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, q, &cap, NULL, &err), 0, "%s", err ? err->msg : "");
  for (int i = 0; i < 20; i++) {
    ws_path(q, "%s/f%d", fx.ws, i);
    cr_assert_eq(unlink(q), 0);
  }
  cr_assert_eq(an_workspace_restore(rootfd, "ws", tar, info.sha256, &err), 0, "%s", err ? err->msg : "");
  struct stat st0, st;
  ws_path(p, "%s/f0", fx.ws);
  cr_assert_eq(stat(p, &st0), 0);
  cr_assert_eq(st0.st_size, 16 * 65536);
  for (int i = 1; i < 20; i++) {
    ws_path(q, "%s/f%d", fx.ws, i);
    cr_assert_eq(stat(q, &st), 0, "%s missing", q);
    cr_assert_eq(st.st_ino, st0.st_ino, "%s is not a link of f0", q);
  }
  cr_assert(ws_canary_unchanged(&fx));
}

/* Names the sandbox chose are quoted in snapshot's errors too (a file named
 * with a newline and an escape sequence, over the cap). */
Test(snapshot, hostile_names_are_quoted_in_snapshot_errors) {
  char p[PATH_MAX], tar[PATH_MAX];
  ws_path(p, "%s/%s", fx.ws, "big\n\x1b[31mFAKE");
  ws_write(p, "more than the cap");
  ws_path(tar, "%s/snap.tar", fx.root);
  struct an_snapshot_opts cap = {.max_bytes = 4};
  an_error_t err = NULL;
  cr_assert_eq(an_workspace_snapshot(fx.wsfd, tar, &cap, NULL, &err), -EFBIG);
  cr_assert_null(strchr(err->msg, '\n'), "raw newline in: %s", err->msg);
  cr_assert_null(strchr(err->msg, '\x1b'), "raw escape in: %s", err->msg);
  cr_assert(strstr(err->msg, "\"big\\x0a\\x1b[31mFAKE\""), "%s", err->msg);
  an_error_free(&err);
}
