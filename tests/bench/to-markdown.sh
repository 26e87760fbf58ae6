#!/bin/sh
# tests/bench/to-markdown.sh — render build/bench/results.json (bench.sh's output) as the
# Markdown tables quoted in tests/bench/README.md.  Usage: to-markdown.sh [results.json]
set -eu
J=${1:-build/bench/results.json}
jq -r '
  def f: if . == null then "-" else tostring end;
  "Host: \(.host); \(.versions); started \(.started); cleanup: \(.cleanup)\n",
  "| group | metric | runs | median ms | p95 | min–max ms | cpu ms | ratio / extra |",
  "|---|---|---|---|---|---|---|---|",
  (.metrics[] |
    if .status == "ok" then
      "| \(.group) | \(.metric) | \(.runs) | \(.median) | \(.p95) | \(.min)–\(.max) | \(.cpu_ms|f) | \(
        [(if .mb_per_s then "\(.mb_per_s) MB/s" else empty end), (if .rate_per_s then "\(.rate_per_s)/s" else empty end)]
        + ((.ratios // {}) | to_entries | map("×\(.value) \(.key)")) | join(", ")) |"
    elif .status == "n/a" then "| \(.group) | \(.metric) | n/a | | | | | \(.reason) |"
    else "| \(.group) | \(.metric) | – | \(.median) | | | | \(.status) |" end),
  (if (.growth | length) > 0 then
    "\n| live sandboxes | that create ms | create ms, median of last 10 | exec median ms | exec min–max ms |",
    "|---|---|---|---|---|",
    (.growth[] | "| \(.live) | \(.create_last) | \(.create_window.median) | \(.exec.median) | \(.exec.min)–\(.exec.max) |")
   else empty end),
  (if (.density | length) > 0 then
    "\n| N | created | alive | create all s | destroy all s | create median (min–max) ms | monitor RSS | monitor PSS | kernel objs | own procs RSS | cgroup mem | MemAvailable drop | overhead |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    (.density[] | .per_sandbox_mib as $p |
      "| \(.n) | \(.created) | \(.alive_at_measurement // .monitors) | \(.create_all_s) | \(.destroy_all_s) | \(.create.median) (\(.create.min)–\(.create.max)) | \($p.monitor_rss) | \($p.monitor_pss) | \($p.kernel_objects) | \($p.own_processes_rss) | \($p.cgroup_memory) | \($p.host_memavailable_drop) | \($p.overhead_beyond_own) |")
   else empty end),
  "\nTargets:",
  (.targets[] | "- \(if .met == null then "n/a" elif .met then "**met**" else "**not met**" end): \(.target) — measured \(.value // "-")\(if .value_minus_wrapper then " (wrapper subtracted \(.value_minus_wrapper))" else "" end)\(if .reason then " (\(.reason))" else "" end)")
' "$J"
