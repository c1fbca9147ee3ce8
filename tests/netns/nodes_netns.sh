#!/usr/bin/env bash
# Nodes as hosts (issue 12): each node of a run is a ranksight-cli process in its own network namespace, at
# its own address on a bridge the test builds (veth links into a "switch" namespace), so the nodes reach
# each other only through those links; nothing leaves the namespaces this test made.
#   1. Three nodes (10.77.<id>.1..3) train an MLP of 3 ranks; node 0's file equals the same run in one
#      process: losses and per-parameter gradient norms as exported (the CSV prints floats round-trip exact),
#      the weights identical across ranks, the summary fields of `inspect --json`.
#   2. Two nodes; mid-run the link of node 1 is cut (ip link set ... down): node 0 times out within its
#      timeout, names node 1's ranks and node, and closes a complete file; node 1 exits with an error naming
#      node 0.
# Needs root (ip netns); otherwise it says so and exits 77, which ctest reports as skipped.
# usage: nodes_netns.sh RANKSIGHT_CLI
set -euo pipefail
CLI=${1:?usage: nodes_netns.sh RANKSIGHT_CLI}
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
    echo "SKIP: network namespaces need root and iproute2 (ip); run ctest as root to include this test"
    exit 77
fi
id=$$
id8=$((id % 250 + 1)) # the subnet 10.77.<id8>.0/24 keeps concurrent runs apart
sw="rs-sw-$id"
ns=()
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    for n in "${ns[@]}" "$sw"; do ip netns del "$n" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

if ! ip netns add "$sw" 2>"$work/err"; then
    echo "SKIP: cannot create a network namespace here: $(cat "$work/err")"
    exit 77
fi
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
ip -n "$sw" link set lo up
for k in 0 1 2; do
    n="rs-n$k-$id"
    ns+=("$n")
    ip netns add "$n"
    ip link add "rsv$k-$id" type veth peer name "rsp$k-$id"
    ip link set "rsv$k-$id" netns "$n"
    ip link set "rsp$k-$id" netns "$sw"
    ip -n "$n" link set "rsv$k-$id" name eth0
    ip -n "$n" addr add "10.77.$id8.$((k + 1))/24" dev eth0
    ip -n "$n" link set eth0 up
    ip -n "$n" link set lo up
    ip -n "$sw" link set "rsp$k-$id" master br0
    ip -n "$sw" link set "rsp$k-$id" up
done
master="10.77.$id8.1:29500"
fail() {
    echo "FAIL: $*"
    for f in "$work"/*.err; do echo "--- $f"; cat "$f"; done
    exit 1
}
inspect() { "$CLI" inspect "$1" --json 2>/dev/null; }
field() { /usr/bin/python3 -c "
import json, sys
try:
    print(json.load(sys.stdin).get('$1'))
except ValueError:
    print(None)"; }

# Node k of N in its namespace: gloo binds the namespace's eth0 (RANKSIGHT_IFNAME), the rendezvous goes to
# node 0's address.
node() {
    local k=$1 nodes=$2 out=$3
    shift 3
    ip netns exec "${ns[$k]}" env RANKSIGHT_IFNAME=eth0 "$CLI" train "$@" --nodes "$nodes" --node-rank "$k" \
        --master "$master" --quiet ${out:+--out "$out"} 2>"$work/node$k.err"
}

echo "== 3 nodes at 10.77.$id8.1-3, one rank each, against one process of 3 servers"
common=(--model mlp --ranks 3 --batch 8 --steps 6 --precision O0 --set timeout_ms=20000)
node 2 3 "" "${common[@]}" &
pids+=($!)
node 1 3 "" "${common[@]}" &
pids+=($!)
node 0 3 "$work/nodes.h5" "${common[@]}" || fail "node 0 exited with $?"
for p in "${pids[@]}"; do wait "$p" || fail "a node exited with an error"; done
pids=()
"$CLI" train "${common[@]}" --set devices_per_server=1 --quiet --out "$work/one.h5" 2>"$work/one.err" ||
    fail "the one-process run failed"
a=$(inspect "$work/nodes.h5")
b=$(inspect "$work/one.h5")
for key in steps_recorded complete loss_first loss_last first_grad_mismatch_step weights_identical world_size; do
    va=$(echo "$a" | field "$key")
    vb=$(echo "$b" | field "$key")
    [ "$va" = "$vb" ] || fail "$key is $va on the nodes, $vb in one process"
    echo "  $key: $va (both)"
done
[ "$(echo "$a" | field steps_recorded)" = 6 ] || fail "node 0's file has $(echo "$a" | field steps_recorded) steps, not 6"
# Bit for bit: every loss and synced fingerprint (the CSV export prints floats round-trip exactly).
"$CLI" export-csv "$work/nodes.h5" --out "$work/csv-nodes" >/dev/null
"$CLI" export-csv "$work/one.h5" --out "$work/csv-one" >/dev/null
cut -d, -f1-4 "$work/csv-nodes/steps.csv" >"$work/a.csv"
cut -d, -f1-4 "$work/csv-one/steps.csv" >"$work/b.csv"
cmp -s "$work/a.csv" "$work/b.csv" || fail "the steps differ: $(diff "$work/a.csv" "$work/b.csv" | head -3)"
echo "  steps.csv (step, rank, loss, accuracy): identical ($(wc -l <"$work/a.csv") rows)"
cmp -s "$work/csv-nodes/gradients.csv" "$work/csv-one/gradients.csv" ||
    fail "the gradients differ: $(diff "$work/csv-nodes/gradients.csv" "$work/csv-one/gradients.csv" | head -3)"
echo "  gradients.csv (local and synced norm per rank and parameter): identical"

echo "== 2 nodes; node 1's link is cut mid-run"
master="10.77.$id8.1:29501"
common=(--model mlp --ranks 4 --batch 8 --steps 100000 --precision O0 --set timeout_ms=3000)
node 1 2 "" "${common[@]}" &
n1=$!
pids+=($n1)
node 0 2 "$work/cut.h5" "${common[@]}" &
n0=$!
pids+=($n0)
for _ in $(seq 120); do
    s=$(inspect "$work/cut.h5" | field steps_recorded || true)
    [ "${s:-None}" != None ] && [ "$s" -ge 3 ] && break
    sleep 0.5
done
[ "${s:-None}" != None ] && [ "$s" -ge 3 ] || fail "node 0 recorded no steps within 60 s"
ip -n "$sw" link set "rsp1-$id" down
t0=$(date +%s)
rc0=0
wait $n0 || rc0=$?
rc1=0
wait $n1 || rc1=$?
pids=()
t=$(($(date +%s) - t0))
echo "  node 0 exited $rc0, node 1 exited $rc1, ${t} s after the cut (timeout 3 s)"
[ "$rc0" = 1 ] || fail "node 0 exited $rc0, not 1"
[ "$rc1" = 1 ] || fail "node 1 exited $rc1, not 1"
[ "$t" -lt 30 ] || fail "the nodes took $t s to give up"
grep -q "waiting for rank(s) 2, 3" "$work/node0.err" && grep -q "node 1 is gone" "$work/node0.err" ||
    fail "node 0 does not name node 1's ranks and node"
grep -q "node 0" "$work/node1.err" || fail "node 1 does not name node 0"
c=$(inspect "$work/cut.h5")
[ "$(echo "$c" | field complete)" = True ] || fail "node 0's file is not complete"
echo "  node 0: $(tail -c 300 "$work/node0.err" | tr '\n' ' ')"
echo "  node 1: $(tail -c 300 "$work/node1.err" | tr '\n' ' ')"
echo "  node 0's file: complete, $(echo "$c" | field steps_recorded) steps"
echo "PASS"
