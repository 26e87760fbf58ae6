/* agentnest.h — libagentnest's public API (umbrella header).
 * Layers (DESIGN.md): images -> engine -> sandbox -> front ends. */
#ifndef AGENTNEST_H
#define AGENTNEST_H
#include "agentnest/error.h"
#include "agentnest/spec.h"
#include "agentnest/cgroup.h"
#include "agentnest/container.h"
#include "agentnest/image.h"
#include "agentnest/sandbox_opts.h"
#include "agentnest/sandbox.h"
#include "agentnest/doctor.h"
#include "agentnest/batch.h"
#include "agentnest/pool.h"
#include "agentnest/audit.h"
#include "agentnest/approval.h"
#include "agentnest/session.h"
#include "agentnest/proc.h"
#include "agentnest/ctx.h"
#include "agentnest/files.h"
#include "agentnest/output.h"
#include "agentnest/artifacts.h"
#include "agentnest/snapshot.h"
#include "agentnest/git.h"
#include "agentnest/policy.h"
#include "agentnest/seccomp_profile.h"
#include "agentnest/cdi.h"
#include "agentnest/api.h"
#endif
