# tests/bench/egress_rows.sh — bench.sh's egress data-path rows (issue 12),
# sourced by bench.sh (uses its measure/na/log, $ANR, $BB, $WORK, $RUNS_SLOW).
# A fake internet in network namespaces of its own, held by `sleep`
# processes, never the host's: "host" EH (agentnest and its sandboxes' egress
# processes run there) and "internet" EI, joined by a veth pair this script
# makes (198.51.100.1/.2); in EI, dnsmasq (as nobody) is the upstream DNS at
# 192.0.2.53 (pkg.example -> 203.0.113.10) and a python3 server (as nobody)
# sends EG_MIB MiB to each connection on 203.0.113.10:8080.  Rows:
#   DNS lookup through the filter: exec nslookup pkg.example in an allowlist
#     sandbox; DNS lookup refused: exec nslookup other.example (not on the
#     allowlist) in the same sandbox, answered REFUSED by the filter without
#     any upstream query (nslookup fails by design: the timed command is
#     `nslookup ... | grep -q REFUSED`, so it succeeds only on a refusal and a
#     timeout or any other answer makes the row n/a);
#   TCP throughput: EG_MIB MiB read by busybox nc in an allowlist sandbox
#     (--allow 203.0.113.10/32:8080: nft redirect + the splice proxy), vs the
#     same read by the same nc between the two plain netns (EH -> EI); the
#     targets section compares the medians (target >= 0.8x).
EG_MIB=${BENCH_EGRESS_MIB:-256}
EG_PIDS=
eg_stop() { local p; for p in $EG_PIDS; do kill "$p" 2>/dev/null; done; EG_PIDS=; }
eg_in() { local t=$1; shift; nsenter -t "$t" -n "$@"; }
eg_setup() {
  command -v dnsmasq >/dev/null && command -v setpriv >/dev/null && [ -x /usr/bin/python3 ] && [ -n "$BB" ] ||
    { EG_WHY="dnsmasq, setpriv, python3 or busybox missing"; return 1; }
  unshare -n sleep infinity & EH=$!; unshare -n sleep infinity & EI=$!; EG_PIDS="$EH $EI"
  sleep 0.1
  eg_in $EH sh -c "ip link set lo up && ip link add h0 type veth peer name i0 && ip link set i0 netns $EI &&
      ip addr add 198.51.100.1/24 dev h0 && ip link set h0 up &&
      ip route add 192.0.2.0/24 via 198.51.100.2 && ip route add 203.0.113.0/24 via 198.51.100.2" &&
  eg_in $EI sh -c "ip link set lo up && ip addr add 198.51.100.2/24 dev i0 && ip link set i0 up &&
      ip addr add 192.0.2.53/32 dev lo && ip addr add 203.0.113.10/32 dev lo && ip route add default via 198.51.100.1" ||
    { EG_WHY="fake internet links failed"; return 1; }
  nsenter -t "$EI" -n dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --bind-interfaces \
      --listen-address=192.0.2.53 --port=53 --host-record=pkg.example,203.0.113.10 >/dev/null 2>&1 &
  EG_PIDS="$EG_PIDS $!"
  nsenter -t "$EI" -n setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c '
import socket, socketserver, sys
n = int(sys.argv[1]) << 20
buf = b"x" * (1 << 20)
class H(socketserver.BaseRequestHandler):
    def handle(self):
        for _ in range(n >> 20): self.request.sendall(buf)
class S(socketserver.ThreadingTCPServer): allow_reuse_address = True; daemon_threads = True
S(("203.0.113.10", 8080), H).serve_forever()' "$EG_MIB" >/dev/null 2>&1 &
  EG_PIDS="$EG_PIDS $!"
  sleep 0.5
  # the rows' sandboxes are busybox ones: the bench's store holds only $IMAGE until now
  $ANR image inspect busybox >/dev/null 2>&1 ||
    $ANR image import "$AN_IMAGES/busybox/layout" --name busybox >/dev/null 2>"$WORK/eg.err" ||
    { EG_WHY="import busybox: $(tail -1 "$WORK/eg.err")"; return 1; }
  EG_ID=$(eg_in $EH $ANR create --image busybox --timeout 2h --dns-upstream 192.0.2.53 --network allowlist \
            --allow pkg.example --allow 203.0.113.10/32:8080 2>"$WORK/eg.err") ||
    { EG_WHY="create failed: $(tail -1 "$WORK/eg.err")"; return 1; }
  echo "$EG_ID" >"$WORK/ids.egress"
}
EG_DNS="DNS lookup through the filter (exec nslookup, allowlist)"
EG_DNS0="DNS lookup refused (exec nslookup of a name not on the allowlist)"
EG_TCP="TCP $EG_MIB MiB through egress (exec nc, allowlist)"
EG_TCP0="TCP $EG_MIB MiB between two plain netns (nc)"
if [ "$SB_OK" = 1 ] && eg_setup; then
  measure $G "$EG_DNS" "nsenter -t $EH -n $ANR exec $EG_ID -- nslookup -type=a pkg.example" \
    '{"note":"local upstream dnsmasq in a test netns; includes the exec"}'
  measure $G "$EG_DNS0" \
    "nsenter -t $EH -n $ANR exec $EG_ID -- sh -c 'nslookup -type=a -timeout=1 -retry=1 other.example 2>&1 | grep -q REFUSED'" \
    '{"note":"the filter answers REFUSED (no upstream query); the command succeeds only on that answer; includes the exec"}'
  MRUNS=$RUNS_SLOW MWARM=1 measure $G "$EG_TCP" \
    "nsenter -t $EH -n $ANR exec $EG_ID -- sh -c 'nc 203.0.113.10 8080 </dev/null >/dev/null'" \
    "$(jq -nc --argjson m "$EG_MIB" '{mib: $m, note: "nft redirect to the splice proxy; includes the exec"}')"
  MRUNS=$RUNS_SLOW MWARM=1 measure $G "$EG_TCP0" \
    "nsenter -t $EH -n sh -c '$BB nc 203.0.113.10 8080 </dev/null >/dev/null'" \
    "$(jq -nc --argjson m "$EG_MIB" '{mib: $m, note: "the same nc over the veth pair, no sandbox"}')"
  eg_in $EH $ANR destroy "$EG_ID" >/dev/null 2>&1
else
  for m in "$EG_DNS" "$EG_DNS0" "$EG_TCP" "$EG_TCP0"; do na $G "$m" "${SB_WHY:-$EG_WHY}"; done
fi
eg_stop
