/* Unit tests for linux.devices[].fileMode in agentnest/spec.h's parser:
 * podman writes the node's whole st_mode (S_IFCHR|0666 = 8630) where the
 * runtime-spec means permission bits; runc and crun accept it, and so must we
 * (found by tests/engines: podman --device failed with "out of range").
 * File-type bits of another type are refused. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include "agentnest/spec.h"
#include "util/cleanup.h"

#define DEVDOC(type, mode)                                                                    \
  "{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},\"linux\":{\"devices\":[{\"type\":\"" \
  type "\",\"path\":\"/dev/an-zero\",\"major\":1,\"minor\":5,\"fileMode\":" mode "}]}}"

static int parse(const char *json, struct an_spec **spec, an_error_t *err) {
  return an_spec_parse(json, strlen(json), spec, err);
}

Test(spec_devices, file_mode_with_the_device_types_bits_is_accepted_as_its_permissions) {
  /* 8630 = 020666 (S_IFCHR | 0666), what podman 4.3 writes for --device /dev/zero */
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  cr_assert_eq(parse(DEVDOC("c", "8630"), &spec, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(spec->linux.n_devices, 1);
  cr_assert(spec->linux.devices[0].has_file_mode);
  cr_assert_eq(spec->linux.devices[0].file_mode, 0666);
  an_spec_free(spec);
  spec = NULL;
  /* 24992 = 060640 (S_IFBLK | 0640) for a block device */
  cr_assert_eq(parse(DEVDOC("b", "24992"), &spec, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(spec->linux.devices[0].file_mode, 0640);
  an_spec_free(spec);
}

Test(spec_devices, plain_permission_bits_are_unchanged) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  cr_assert_eq(parse(DEVDOC("c", "438"), &spec, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(spec->linux.devices[0].file_mode, 0666);
  an_spec_free(spec);
}

Test(spec_devices, file_type_bits_of_another_type_are_refused) {
  struct an_spec *spec = NULL;
  an_error_t err = NULL;
  /* S_IFBLK | 0666 on a character device */
  cr_assert_eq(parse(DEVDOC("c", "25014"), &spec, &err), -EINVAL);
  cr_assert_null(spec);
  cr_assert_not_null(err);
  cr_assert_str_eq(err->msg, "linux.devices[0].fileMode: 25014 has file-type bits 060000, not "
                             "those of type \"c\" (020000)");
  an_error_free(&err);
  /* beyond S_IFMT | 07777 */
  cr_assert_eq(parse(DEVDOC("c", "65536"), &spec, &err), -EINVAL);
  an_error_free(&err);
}
