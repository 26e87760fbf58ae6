/* engine/cdi_internal.h — the parsed form of CDI specs and the YAML reader
 * shared by cdi.c, cdi_apply.c and cdi_yaml.c (internal, not installed). */
#ifndef AN_ENGINE_CDI_INTERNAL_H
#define AN_ENGINE_CDI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/cdi.h"

struct an_cdi_node {                  /* containerEdits.deviceNodes[] */
  char *path, *host_path;             /* host_path NULL: path */
  char type;                          /* 0: from the host node */
  bool has_major, has_minor; int64_t major, minor;
  bool has_file_mode; mode_t file_mode;
  char *permissions;                  /* NULL: "rwm" */
  bool has_uid; uid_t uid;
  bool has_gid; gid_t gid;
};

struct an_cdi_mount {                 /* containerEdits.mounts[] */
  char *host_path, *container_path, *type;
  char **options;                     /* NULL-terminated or NULL */
};

struct an_cdi_hook {                  /* containerEdits.hooks[] */
  char *hook_name;
  struct an_spec_hook hook;
};

struct an_cdi_edits {
  char **env;
  struct an_cdi_node *nodes; size_t n_nodes;
  struct an_cdi_mount *mounts; size_t n_mounts;
  struct an_cdi_hook *hooks; size_t n_hooks;
  const char *unsupported;            /* the first unsupported member present, or NULL */
};

struct an_cdi_device {
  char *name;
  struct an_cdi_edits edits;
};

struct an_cdi_spec {
  char *file;                         /* host path it was read from */
  char *kind;                         /* "vendor/class" */
  size_t dir_index;                   /* priority: higher wins */
  struct an_cdi_device *devices; size_t n_devices;
  struct an_cdi_edits edits;
};

struct an_cdi_registry {
  struct an_cdi_spec *specs; size_t n_specs;
  char *dirs_text;                    /* "/etc/cdi, /var/run/cdi" for messages */
};

/* Convert a YAML document (the first of the stream) into JSON text (*json,
 * heap, NUL-terminated) with yajl_gen, so that YAML and JSON specs take one
 * parser.  Plain scalars true/false/null/~ and integers (decimal, 0o/0
 * octal, 0x hex) become JSON literals; everything else a string.  Aliases,
 * non-scalar keys and nesting deeper than 64 are refused (-EINVAL naming
 * `what` and the line).  Errors: -EINVAL, -ENOMEM. */
int an_cdi_yaml_to_json(const char *yaml, size_t len, const char *what, char **json,
                        an_error_t *err);

/* Parse one spec document (a yajl tree root) read from `file`. */
struct yajl_val_s;
int an_cdi_spec_parse(struct yajl_val_s *root, const char *file, struct an_cdi_spec *out,
                      an_error_t *err);
void an_cdi_spec_clear(struct an_cdi_spec *s);

#endif
