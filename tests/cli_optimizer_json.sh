#!/bin/sh
# The "optimizer" object of `spsim query --format json` (README "The optimizer object (JSON)"):
# written only with Muon or the optimizer CPU offload (Adam's documents and the CSV header stay
# as they were); its values agree with the text output and with figures worked by hand:
#
# llama3-8b on dgx-h100, tp 2, dp 4, the distributed optimizer, --optimizer muon: Muon's
# weights per GPU M = 3,489,660,928, Newton-Schulz 160,975,374,254,080 FLOPs per GPU, its TP
# gathers 6,979,321,856 B in 48 all-gathers (tests/test_muon.c's closed forms, from
# emerging_optimizers muon_utils.py @fd772926 and emerging_optimizers.py @d98e8a64); the
# Newton-Schulz time at dgx-h100's achievable BF16 GEMM rate 794.5 TFLOP/s (hardware/dgx-h100.json).
#
# The same layout with --use-precision-aware-optimizer --optimizer-cpu-offload, fraction 0.5
# (tests/test_optimizer_offload.c, from Megatron-Core hybrid_optimizer.py @d98e8a64): the
# GPU's parameters P = 2 · 128256·4096 / 2 (embedding, output layer over tp 2) + 32 · (4096 ·
# (2048 + 1024 + 2048 + 14336 + 7168) + 2·4096) + 4096 = 4,015,263,744; host bytes
# 16 · 0.5 · P / 4 = 8,030,527,488; D2H 0.5·P/4 · 4 B at 52 GB/s, the CPU's AdamW 0.5·P/4 · 28 B
# at 100 GB/s (this test's copy of the profile; no shipped profile states it), H2D 0.5·P/4 · 2 B
# at 51 GB/s (dgx-h100.json host_link).
# Usage: cli_optimizer_json.sh SPSIM
set -u
spsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    printf 'FAIL: %s\n' "$*"
    failures=$((failures + 1))
}
py=$(command -v python3) || {
    echo "cli optimizer json: skipped (no python3)"
    exit 77
}
base="--model llama3-8b --tp 2 --pp 1 --dp 4 --mbs 1 --gbs 32 --sp --recompute selective --distributed-optimizer"

# get FILE KEY...: the value at the JSON path (null when absent).
get() {
    "$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    d = d.get(k) if isinstance(d, dict) else None
print(json.dumps(d))' "$@"
}
# near A B: |A - B| <= 1e-9 |B|.
near() {
    "$py" -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-9 * abs(b))' "$1" "$2"
}
# text_ms FILE LABEL: the milliseconds the text output prints beside LABEL.
text_ms() {
    grep -F -- "$2" "$1" | head -1 | sed 's/.*  *\([0-9.]*\) ms .*/\1/'
}
# same_ms SECONDS MS: the JSON's seconds, printed as the text's %.3f milliseconds.
same_ms() {
    [ "$("$py" -c 'import sys; print("%.3f" % (float(sys.argv[1]) * 1e3))' "$1")" = "$2" ]
}

# Adam: no object, the document's sections as they were.
"$spsim" query $base --hw dgx-h100 --format json >"$tmp/adam.json" || fail "adam: exit $?"
[ "$(get "$tmp/adam.json" optimizer)" = null ] || fail "adam wrote an optimizer object"
"$spsim" query $base --hw dgx-h100 --format csv | head -1 >"$tmp/adam.head"

# Muon.
"$spsim" query $base --hw dgx-h100 --optimizer muon --format json >"$tmp/muon.json" ||
    fail "muon: exit $?"
"$spsim" query $base --hw dgx-h100 --optimizer muon >"$tmp/muon.txt" || fail "muon text: exit $?"
[ "$("$py" -c 'import json, sys; print(list(json.load(open(sys.argv[1])))[-1])' "$tmp/muon.json")" = optimizer ] ||
    fail "muon: the optimizer object is not after time"
[ "$(get "$tmp/muon.json" optimizer name)" = '"muon"' ] || fail "muon: name"
[ "$(get "$tmp/muon.json" optimizer cpu_offload)" = false ] || fail "muon: cpu_offload"
[ "$(get "$tmp/muon.json" optimizer muon_parameters_per_gpu)" = 3489660928 ] ||
    fail "muon_parameters_per_gpu $(get "$tmp/muon.json" optimizer muon_parameters_per_gpu)"
near "$(get "$tmp/muon.json" optimizer muon_ns_flops_per_gpu)" 160975374254080 ||
    fail "muon_ns_flops_per_gpu $(get "$tmp/muon.json" optimizer muon_ns_flops_per_gpu)"
near "$(get "$tmp/muon.json" optimizer muon_tp_gather_bytes_per_gpu)" 6979321856 ||
    fail "muon_tp_gather_bytes_per_gpu"
near "$(get "$tmp/muon.json" optimizer muon_tp_gathers_per_gpu)" 48 || fail "muon_tp_gathers_per_gpu"
ns=$(get "$tmp/muon.json" optimizer muon_ns_s)
near "$ns" "$("$py" -c 'print(160975374254080 / 794.5e12)')" || fail "muon_ns_s $ns"
same_ms "$ns" "$(text_ms "$tmp/muon.txt" "of which Muon's Newton-Schulz GEMMs")" ||
    fail "muon_ns_s $ns is not the text's $(text_ms "$tmp/muon.txt" "Newton-Schulz")"
gather=$(get "$tmp/muon.json" optimizer muon_gather_s)
same_ms "$gather" "$(text_ms "$tmp/muon.txt" "of which Muon's TP gathers")" ||
    fail "muon_gather_s $gather is not the text's"
[ "$(get "$tmp/muon.json" optimizer host_bytes)" = 0 ] || fail "muon: host_bytes"
"$spsim" query $base --hw dgx-h100 --optimizer muon --format csv | head -1 >"$tmp/muon.head"
cmp -s "$tmp/adam.head" "$tmp/muon.head" || fail "muon: the CSV header moved"

# CPU offload, fraction 0.5, on a copy of dgx-h100 with the CPU's memory bandwidth.
sed 's/"host_link": {/"host_link": {"cpu_memory_GBps": {"value": 100, "source": "test"},/' \
    "$(dirname "$0")/../hardware/dgx-h100.json" >"$tmp/hw.json"
off="$base --hw $tmp/hw.json --use-precision-aware-optimizer --optimizer-cpu-offload --optimizer-offload-fraction 0.5"
"$spsim" query $off --format json >"$tmp/off.json" || fail "offload: exit $?"
"$spsim" query $off >"$tmp/off.txt" || fail "offload text: exit $?"
[ "$(get "$tmp/off.json" memory parameters_per_gpu)" = 4015263744 ] || fail "offload: P"
[ "$(get "$tmp/off.json" optimizer name)" = '"adam"' ] || fail "offload: name"
[ "$(get "$tmp/off.json" optimizer cpu_offload)" = true ] || fail "offload: cpu_offload"
near "$(get "$tmp/off.json" optimizer offload_fraction)" 0.5 || fail "offload: fraction"
[ "$(get "$tmp/off.json" optimizer host_bytes)" = 8030527488 ] ||
    fail "host_bytes $(get "$tmp/off.json" optimizer host_bytes)"
grep -F "+ offloaded to pinned host memory" "$tmp/off.txt" | grep -q " 7.48 GiB" ||
    fail "the text's host bytes are not 8030527488 B = 7.48 GiB"
for term in "d2h_s 4015263744*0.5/4*4/52e9 offload: gradients to the host" \
    "cpu_s 4015263744*0.5/4*28/100e9 offload: the CPU's Adam step" \
    "h2d_s 4015263744*0.5/4*2/51e9 offload: parameters back"; do
    key=${term%% *} rest=${term#* }
    hand=${rest%% *} label=${rest#* }
    v=$(get "$tmp/off.json" optimizer "$key")
    near "$v" "$("$py" -c "print($hand)")" || fail "$key $v, by hand $hand"
    same_ms "$v" "$(text_ms "$tmp/off.txt" "$label")" || fail "$key $v is not the text's"
done
[ "$(get "$tmp/off.json" optimizer muon_ns_s)" = 0 ] || fail "offload: muon_ns_s"

# sweep --columns names the object's fields (Adam: zeros); the default header has none.
sw="--model llama3-8b --hw dgx-h100 --tp 2 --pp 1 --dp 4 --gbs 32 --quiet"
"$spsim" sweep $sw --columns tp,optimizer_muon_ns_s,optimizer_host_bytes,optimizer_name \
    -o "$tmp/cols.csv" || fail "sweep --columns optimizer_*: exit $?"
[ "$(head -1 "$tmp/cols.csv")" = "tp,optimizer_muon_ns_s,optimizer_host_bytes,optimizer_name" ] ||
    fail "sweep --columns header: $(head -1 "$tmp/cols.csv")"
[ "$(sed -n 2p "$tmp/cols.csv")" = "2,0,0,adam" ] || fail "sweep --columns row: $(sed -n 2p "$tmp/cols.csv")"
"$spsim" sweep $sw -o "$tmp/all.csv" || fail "sweep: exit $?"
head -1 "$tmp/all.csv" | grep -q optimizer_muon && fail "the default sweep header holds optimizer_*"

[ "$failures" -eq 0 ] || exit 1
echo "cli optimizer json: ok"
