/* engine/spec_names.h — the runtime-spec's symbolic names and the kernel /
 * libseccomp numbers they stand for (internal): rlimits, namespaces, seccomp
 * actions, architectures, comparison operators and filter flags.
 *
 * Lookups by name return 0 and write *out, or -ENOENT for an unknown name;
 * lookups by number return the spec name or NULL.  Tables are const.
 */
#ifndef AN_ENGINE_SPEC_NAMES_H
#define AN_ENGINE_SPEC_NAMES_H

#include <stdint.h>

int an_rlimit_from_name(const char *name, int *out);            /* "RLIMIT_NOFILE" */
const char *an_rlimit_name(int resource);

int an_namespace_from_type(const char *type, int *clone_flag);  /* "pid" -> CLONE_NEWPID */
const char *an_namespace_type(int clone_flag);

/* Seccomp action names without their errno: "SCMP_ACT_ERRNO" -> SCMP_ACT_ERRNO(0). */
int an_seccomp_action_from_name(const char *name, uint32_t *out);
/* Name of an action with any errno/trace data masked off; NULL if unknown. */
const char *an_seccomp_action_name(uint32_t action);
/* True for actions that carry errnoRet (SCMP_ACT_ERRNO, SCMP_ACT_TRACE). */
int an_seccomp_action_takes_errno(uint32_t action);

int an_seccomp_arch_from_name(const char *name, uint32_t *out); /* "SCMP_ARCH_X86_64" */
const char *an_seccomp_arch_name(uint32_t arch);

int an_seccomp_op_from_name(const char *name, int *out);        /* "SCMP_CMP_MASKED_EQ" */
const char *an_seccomp_op_name(int op);

/* Known linux.seccomp.flags ("SECCOMP_FILTER_FLAG_TSYNC", ...). */
int an_seccomp_flag_known(const char *name);

#endif
