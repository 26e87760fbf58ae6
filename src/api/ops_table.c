/* api/ops_table.c — THE operations table (agentnest/api.h): every operation
 * the front ends offer, with its JSON Schemas and HTTP route.  `agentnest
 * mcp` lists these as tools, `agentnest serve` routes them under /v1, and
 * an_api_openapi describes them; nothing else lists operations.  To add
 * one: a schema pair here, a handler, one entry in `ops`. */
#include <string.h>
#include "api_internal.h"

#define Q(...) #__VA_ARGS__

/* shared pieces of the schemas */
#define SANDBOX_PROP Q("sandbox":{"type":"string","minLength":1,"maxLength":64,"description":"sandbox id or name (from create)"})
#define ENV_PROP Q("env":{"type":"object","additionalProperties":{"type":"string"},"description":"extra environment variables"})
#define EXEC_PROPS \
  Q("timeout_s":{"type":"integer","minimum":1,"maximum":86400,"description":"timeout of this command in seconds (default: the sandbox's exec timeout)"},) \
  ENV_PROP "," \
  Q("workdir":{"type":"string","description":"absolute working directory inside the sandbox"},) \
  Q("stdin":{"type":"string","description":"text given to the command on stdin"},) \
  Q("stream":{"type":"boolean","description":"HTTP: answer JSON Lines (application/x-ndjson) with the output as it comes, then the result (as Accept: application/x-ndjson); elsewhere ignored"})
#define EXEC_RESULT \
  Q({"type":"object","required":["exit_code","status","timed_out","stdout","stderr"],"properties":{) \
  Q("id":{"type":"string"},) \
  Q("exit_code":{"type":["integer","null"],"description":"null when killed by a signal"},) \
  Q("signal":{"type":["integer","null"]},) \
  Q("status":{"type":"integer","description":"the CLI's exit status: 124 timed out, 126, 127, 128+N"},) \
  Q("timed_out":{"type":"boolean"},"oom_killed":{"type":"boolean"},"cancelled":{"type":"boolean"},) \
  Q("duration_ms":{"type":"integer"},) \
  Q("stdout":{"type":"string"},"stderr":{"type":"string"},) \
  Q("stdout_truncated":{"type":"boolean"},"stderr_truncated":{"type":"boolean"},) \
  Q("artifacts":{"type":"array"}}})
#define CREATED_RESULT \
  Q({"type":"object","required":["id"],"properties":{"id":{"type":"string"},) \
  Q("name":{"type":["string","null"]},"image":{"type":"string"},) \
  Q("deadline_ms":{"type":"integer","description":"end of its lifetime, ms since the epoch"}}})
/* an allowlist: `what` is its description (a string literal) */
#define ALLOW_PROP(what) \
  Q({"type":"array","maxItems":256,"items":{"type":"string","minLength":1,"maxLength":300},"description":what})
#define SIZE_TEXT(what) Q({"type":"string","maxLength":32,"description":what})

static const char create_in[] =
    Q({"type":"object","additionalProperties":false,"properties":{)
    Q("profile":{"type":"string","maxLength":256,"description":"a shipped profile: default, python, shell, git (refused when the server pins one)"},)
    Q("image":{"type":"string","maxLength":256,"description":"image in the store (default python)"},)
    Q("name":{"type":"string","maxLength":63},)
    Q("memory":) SIZE_TEXT("memory limit, e.g. 512m") ","
    Q("cpus":) SIZE_TEXT("CPUs, e.g. 1.5") ","
    Q("pids":{"type":"integer","minimum":1,"maximum":4194304},)
    Q("timeout":) SIZE_TEXT("lifetime, e.g. 300s or 10m (capped by the server)") ","
    Q("exec_timeout":) SIZE_TEXT("default timeout of each exec") ","
    Q("max_output":) SIZE_TEXT("output kept per exec, e.g. 10m") ","
    Q("disk":) SIZE_TEXT("workspace quota, e.g. 1g") ","
    Q("workdir":{"type":"string"},) ENV_PROP ","
    Q("secrets":{"type":"object","additionalProperties":{"type":"string","minLength":1},"description":"secrets: environment variables whose values are redacted as [REDACTED:NAME] in every output, never logged or recorded"},)
    Q("network":{"type":"string","enum":["none","allowlist","full"],"description":"egress: none (default), allowlist (only the allow entries) or full (refused when the server pins a profile)"},)
    Q("allow":) ALLOW_PROP("egress allowlist entries (network allowlist): NAME[:PORTS], *.ZONE[:PORTS] or CIDR[:PORTS]") "}}";

static const char sandbox_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox"],"properties":{) SANDBOX_PROP "}}";

static const char destroy_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox"],"properties":{) SANDBOX_PROP ","
    Q("grace_ms":{"type":"integer","minimum":0,"maximum":60000,"description":"SIGTERM first, SIGKILL after this (default 1000)"}}});
static const char destroy_out[] = Q({"type":"object","required":["id","destroyed"],"properties":{"id":{"type":"string"},"destroyed":{"type":"boolean"}}});

static const char exec_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox","argv"],"properties":{) SANDBOX_PROP ","
    Q("argv":{"type":"array","minItems":1,"items":{"type":"string"},"description":"the command and its arguments (no shell)"},)
    EXEC_PROPS "}}";

static const char run_code_in[] =
    Q({"type":"object","additionalProperties":false,"required":["code"],"properties":{)
    Q("language":{"type":"string","enum":["python","shell"],"description":"python (default) runs python3 -c CODE, shell runs sh -c CODE"},)
    Q("code":{"type":"string","maxLength":1048576},)
    Q("sandbox":{"type":"string","minLength":1,"maxLength":64,"description":"run in this live sandbox; without it a one-shot sandbox is made and destroyed"},)
    EXEC_PROPS "}}";

static const char ls_in[] = Q({"type":"object","additionalProperties":false,"properties":{}});
static const char ls_out[] =
    Q({"type":"object","required":["sandboxes"],"properties":{"sandboxes":{"type":"array","items":)
    Q({"type":"object","required":["id","status"],"properties":{"id":{"type":"string"},)
    Q("name":{"type":["string","null"]},"image":{"type":["string","null"]},)
    Q("status":{"type":"string","enum":["running","creating","dead","expired"]},)
    Q("created_ms":{"type":"integer"},"deadline_ms":{"type":"integer"}}}}}});

static const char inspect_out[] =
    Q({"type":"object","required":["id","status"],"properties":{"id":{"type":"string"},)
    Q("name":{"type":["string","null"]},"image":{"type":"string"},"status":{"type":"string"},)
    Q("options":{"type":"object"}}});

static const char events_out[] =
    Q({"type":"object","required":["events"],"properties":{"events":{"type":"array","items":{"type":"object","required":["type"],"properties":{"time":{"type":"string"},"type":{"type":"string"}}}}}});

#define PATH_PROP Q("path":{"type":"string","minLength":1,"maxLength":4096,"description":"relative to /workspace (no .., no symlinks followed)"})
static const char write_file_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox","path","content"],"properties":{)
    SANDBOX_PROP "," PATH_PROP ","
    Q("content":{"type":"string"},)
    Q("encoding":{"type":"string","enum":["utf-8","base64"],"description":"of content (default utf-8)"},)
    Q("mode":{"type":"integer","minimum":0,"maximum":511,"description":"permission bits (default 0644 = 420)"}}});
static const char write_file_out[] = Q({"type":"object","required":["path","size"],"properties":{"path":{"type":"string"},"size":{"type":"integer"}}});
static const char read_file_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox","path"],"properties":{)
    SANDBOX_PROP "," PATH_PROP ","
    Q("encoding":{"type":"string","enum":["utf-8","base64"],"description":"base64 forces base64; text that is not UTF-8 comes as base64 anyway"}}});
static const char read_file_out[] =
    Q({"type":"object","required":["path","size","encoding","content"],"properties":{"path":{"type":"string"},"size":{"type":"integer"},"encoding":{"type":"string","enum":["utf-8","base64"]},"content":{"type":"string"}}});
static const char list_files_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox"],"properties":{) SANDBOX_PROP ","
    Q("path":{"type":"string","maxLength":4096,"description":"directory relative to /workspace (default: all)"}}});
static const char list_files_out[] =
    Q({"type":"object","required":["files"],"properties":{"files":{"type":"array","items":{"type":"object","required":["path","type","size"],"properties":{"path":{"type":"string"},"type":{"type":"string","enum":["file","symlink"]},"size":{"type":"integer"}}}}}});
static const char artifacts_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox"],"properties":{) SANDBOX_PROP ","
    Q("globs":{"type":"array","items":{"type":"string","minLength":1},"description":"e.g. out/*.png, **/*.csv (default: everything)"}}});
static const char artifacts_out[] =
    Q({"type":"object","required":["artifacts"],"properties":{"artifacts":{"type":"array","items":{"type":"object","required":["path","type","size"],"properties":{"path":{"type":"string"},"type":{"type":"string"},"size":{"type":"integer"},"sha256":{"type":["string","null"]},"target":{"type":["string","null"]},"copied":{"type":"boolean"}}}}}});
static const char snapshot_out[] =
    Q({"type":"object","required":["snapshot","size"],"properties":{"snapshot":{"type":"string","description":"sha256 of the tar: give it to restore"},"size":{"type":"integer"},"entries":{"type":"integer"}}});
static const char restore_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox","snapshot"],"properties":{) SANDBOX_PROP ","
    Q("snapshot":{"type":"string","minLength":64,"maxLength":64,"description":"what snapshot returned"}}});
static const char restore_out[] =
    Q({"type":"object","required":["id","snapshot","restored"],"properties":{"id":{"type":"string"},"snapshot":{"type":"string"},"restored":{"type":"boolean"}}});

#define SESSION_PROP Q("session":{"type":"string","minLength":1,"maxLength":32,"description":"session name (from session_start)"})
static const char session_start_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox"],"properties":{) SANDBOX_PROP ","
    Q("kind":{"type":"string","enum":["python","shell"],"description":"python (default): globals kept; shell: cwd, env and variables kept"},)
    Q("session":{"type":"string","minLength":1,"maxLength":32,"description":"a name (default: s1, s2, ...)"}}});
static const char session_start_out[] =
    Q({"type":"object","required":["session","kind"],"properties":{"session":{"type":"string"},"kind":{"type":"string"}}});
static const char session_run_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox","session","code"],"properties":{) SANDBOX_PROP ","
    SESSION_PROP Q(,"code":{"type":"string","maxLength":1048576},)
    Q("timeout_s":{"type":"integer","minimum":1,"maximum":86400,"description":"interrupt the call after this (the session lives on)"}}});
static const char session_run_out[] =
    Q({"type":"object","required":["session","status","timed_out","session_lost","stdout","stderr"],"properties":{)
    Q("session":{"type":"string"},"status":{"type":"integer"},"timed_out":{"type":"boolean"},)
    Q("session_lost":{"type":"boolean"},"lost_reason":{"type":"string"},"duration_ms":{"type":"integer"},)
    Q("stdout":{"type":"string"},"stderr":{"type":"string"},)
    Q("stdout_truncated":{"type":"boolean"},"stderr_truncated":{"type":"boolean"},"cancelled":{"type":"boolean"},)
    Q("value":{"type":["object","null"],"properties":{"repr":{"type":"string"},"json":{}}},)
    Q("error":{"type":["object","null"],"properties":{"type":{"type":"string"},"message":{"type":"string"},"traceback":{"type":"string"}}}}});
static const char session_stop_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox","session"],"properties":{) SANDBOX_PROP "," SESSION_PROP "}}";
static const char session_stop_out[] =
    Q({"type":"object","required":["session","stopped"],"properties":{"session":{"type":"string"},"stopped":{"type":"boolean"}}});

static const char network_out[] =
    Q({"type":"object","required":["id","mode","allow"],"properties":{"id":{"type":"string"},)
    Q("mode":{"type":"string","enum":["none","allowlist","full"]},)
    Q("allow":{"type":"array","items":{"type":"string"}},"dns_upstream":{"type":"array","items":{"type":"string"}},)
    Q("counters":{"type":["object","null"],"description":"null for mode none or when the ruleset cannot be read","properties":{)
    Q("redirected_packets":{"type":"integer"},"dropped_packets":{"type":"integer"},)
    Q("dropped_bytes":{"type":"integer"},"dns_packets":{"type":"integer"}}}}});
static const char network_change_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox"],"properties":{) SANDBOX_PROP ","
    Q("mode":{"type":"string","enum":["allowlist","full"],"description":"new mode (default: unchanged; a sandbox made with network none has no egress)"},)
    Q("allow":) ALLOW_PROP("entries to add: NAME[:PORTS], *.ZONE[:PORTS] or CIDR[:PORTS]") ","
    Q("deny":{"type":"array","maxItems":256,"items":{"type":"string","minLength":1},"description":"entries to remove, exactly as added"}}});
static const char extend_in[] =
    Q({"type":"object","additionalProperties":false,"required":["sandbox","by"],"properties":{) SANDBOX_PROP ","
    Q("by":) SIZE_TEXT("how much longer, e.g. 10m (the whole lifetime is bounded by the sandbox's max_lifetime and the server's cap)") "}}";
static const char extend_out[] =
    Q({"type":"object","required":["id","deadline_ms"],"properties":{"id":{"type":"string"},"deadline_ms":{"type":"integer","description":"the new end of its lifetime, ms since the epoch"}}});
static const char audit_in[] =
    Q({"type":"object","additionalProperties":false,"properties":{)
    Q("sandbox":{"type":"string","minLength":1,"maxLength":64,"description":"only this sandbox's records"},)
    Q("op":{"type":"string","maxLength":64,"description":"only records of this op (create, exec, network_change, ...)"},)
    Q("since":) SIZE_TEXT("RFC 3339 UTC time, a date, or a duration before now (10m)") ","
    Q("limit":{"type":"integer","minimum":1,"maximum":100000,"description":"at most this many records (oldest first)"}}});
static const char audit_out[] =
    Q({"type":"object","required":["records"],"properties":{"records":{"type":"array","items":{"type":"object","required":["op"],"properties":{"time":{"type":"string"},"op":{"type":"string"},"sandbox":{"type":"string"},"result":{}}}}}});

static const struct an_api_op ops[] = {
    {"create", "Create a sandbox",
     "Create a persistent sandbox (isolated Linux environment with a /workspace directory) and return its id. "
     "It lives until destroy or the end of its lifetime; the server destroys it when the client goes away.",
     create_in, CREATED_RESULT, "POST", "/sandboxes", AN_API_OP_CREATES, an_api_op_create},
    {"run_code", "Run Python or shell code",
     "Run Python (python3 -c) or shell (sh -c) source code, in a live sandbox or in a one-shot sandbox made for the call, "
     "and return its exit status, stdout and stderr.",
     run_code_in, EXEC_RESULT, "POST", "/run", AN_API_OP_LONG | AN_API_OP_STREAMS, an_api_op_run_code},
    {"exec", "Run a command in a sandbox",
     "Run a command (an argv, no shell) in a live sandbox and return its exit status, stdout and stderr. "
     "A timeout kills the command's whole process tree and leaves the sandbox.",
     exec_in, EXEC_RESULT, "POST", "/sandboxes/{sandbox}/exec", AN_API_OP_LONG | AN_API_OP_STREAMS, an_api_op_exec},
    {"write_file", "Write a file into a sandbox",
     "Write a file (text or base64) into the sandbox's /workspace, atomically.",
     write_file_in, write_file_out, "POST", "/sandboxes/{sandbox}/files/write", 0, an_api_op_write_file},
    {"read_file", "Read a file from a sandbox",
     "Read a file of the sandbox's /workspace (UTF-8 text, else base64).",
     read_file_in, read_file_out, "POST", "/sandboxes/{sandbox}/files/read", AN_API_OP_READ_ONLY, an_api_op_read_file},
    {"list_files", "List a sandbox's files",
     "List the regular files and symlinks under a directory of /workspace.",
     list_files_in, list_files_out, "POST", "/sandboxes/{sandbox}/files/list", AN_API_OP_READ_ONLY, an_api_op_list_files},
    {"artifacts", "List artifacts",
     "List the workspace files matching globs, with size and sha256.",
     artifacts_in, artifacts_out, "POST", "/sandboxes/{sandbox}/artifacts", AN_API_OP_READ_ONLY, an_api_op_artifacts},
    {"snapshot", "Snapshot a workspace",
     "Save a point-in-time tar of the sandbox's /workspace on the server; returns its id for restore.",
     sandbox_in, snapshot_out, "POST", "/sandboxes/{sandbox}/snapshot", AN_API_OP_LONG, an_api_op_snapshot},
    {"restore", "Restore a workspace",
     "Replace the sandbox's /workspace with a snapshot (all at once: processes see the old or the new one).",
     restore_in, restore_out, "POST", "/sandboxes/{sandbox}/restore", AN_API_OP_LONG, an_api_op_restore},
    {"fork", "Fork a sandbox",
     "Make a new sandbox with the same options and a point-in-time copy of the workspace.",
     sandbox_in, CREATED_RESULT, "POST", "/sandboxes/{sandbox}/fork", AN_API_OP_CREATES | AN_API_OP_LONG, an_api_op_fork},
    {"ls", "List sandboxes", "List the sandboxes this client created.",
     ls_in, ls_out, "GET", "/sandboxes", AN_API_OP_READ_ONLY, an_api_op_ls},
    {"inspect", "Inspect a sandbox", "Describe a sandbox: status, image, limits, options.",
     sandbox_in, inspect_out, "GET", "/sandboxes/{sandbox}", AN_API_OP_READ_ONLY, an_api_op_inspect},
    {"events", "A sandbox's events", "The sandbox's events so far (created, exec, expired, destroyed).",
     sandbox_in, events_out, "GET", "/sandboxes/{sandbox}/events", AN_API_OP_READ_ONLY, an_api_op_events},
    {"destroy", "Destroy a sandbox", "Stop every process of the sandbox and delete it and its workspace.",
     destroy_in, destroy_out, "DELETE", "/sandboxes/{sandbox}", AN_API_OP_DESTROYS, an_api_op_destroy},
    {"session_start", "Start a session",
     "Start a Python (globals kept between calls) or shell (cwd, env and variables kept) session in a live sandbox.",
     session_start_in, session_start_out, "POST", "/sandboxes/{sandbox}/sessions", 0, an_api_op_session_start},
    {"session_run", "Run code in a session",
     "Run code in a session: stdout, stderr, the final expression's value (repr and JSON) and a structured error "
     "(type, message, traceback). A call over its timeout is interrupted and the session lives on.",
     session_run_in, session_run_out, "POST", "/sandboxes/{sandbox}/sessions/run", AN_API_OP_LONG,
     an_api_op_session_run},
    {"session_stop", "Stop a session", "Stop a session and every process it started.",
     session_stop_in, session_stop_out, "POST", "/sandboxes/{sandbox}/sessions/stop", 0, an_api_op_session_stop},
    {"network", "A sandbox's egress policy",
     "The sandbox's egress policy (mode none, allowlist or full; its allowlist entries; DNS upstreams) and its "
     "counters (packets redirected to the proxy, dropped, DNS).",
     sandbox_in, network_out, "GET", "/sandboxes/{sandbox}/network", AN_API_OP_READ_ONLY, an_api_op_network},
    {"network_change", "Change a sandbox's egress policy",
     "Change a live sandbox's egress policy at once (one nftables transaction): a new mode, entries to add and to "
     "remove. Returns the new policy.",
     network_change_in, network_out, "POST", "/sandboxes/{sandbox}/network", 0, an_api_op_network_change},
    {"extend", "Extend a sandbox's lifetime",
     "Move the end of a live sandbox's lifetime later, within its max_lifetime counted from creation.",
     extend_in, extend_out, "POST", "/sandboxes/{sandbox}/extend", 0, an_api_op_extend},
    {"audit", "The audit log",
     "Records of the audit log (who did what to which sandbox, with the result) about this client's sandboxes, "
     "oldest first, filtered by sandbox, op and time.",
     audit_in, audit_out, "POST", "/audit", AN_API_OP_READ_ONLY, an_api_op_audit},
};

const char an_api_error_schema[] =
    Q({"type":"object","required":["error"],"properties":{"error":{"type":"object","required":["code","message"],"properties":{"code":{"type":"integer","description":"HTTP status"},"errno":{"type":"string","description":"symbolic errno, e.g. ENOENT"},"message":{"type":"string"}}}}});

const struct an_api_op *an_api_ops(size_t *n) {
  *n = sizeof ops / sizeof ops[0];
  return ops;
}

bool an_api_call_holds_sandbox(const struct an_api_op *op, yajl_val input) {
  if (!op) return false;
  if (op->flags & AN_API_OP_CREATES) return true;
  if (strcmp(op->name, "run_code")) return false;
  const char *path[] = {"sandbox", NULL};
  return !(input && YAJL_IS_OBJECT(input) && yajl_tree_get(input, path, yajl_t_any));
}

const struct an_api_op *an_api_op_find(const char *name) {
  for (size_t i = 0; name && i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(ops[i].name, name)) return &ops[i];
  return NULL;
}
