#!/bin/sh
# REGRESSION PIN, not an accuracy claim: the bytes `spsim query`, `spsim explain` and
# `spsim sweep --spec examples/sweeps/*.json` wrote when the library was reorganised into
# profiles/, engine/, sweep/ and calibrate/ (issue 9), recorded from the code before the move.
# A change that is meant to alter a figure updates these files in the same commit and says why;
# any other difference is a defect. Usage: regression_pin.sh SPSIM SOURCE_DIR [--update]
# (--update rewrites the pins from SPSIM: then check the diff field by field before committing)
set -u
spsim=$1
src=$2
update=${3:-}
pins="$src/tests/data/regression"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# pin FILE ARGS...: `spsim ARGS` must write exactly the pinned FILE.
pin() {
    file=$1
    shift
    if ! "$spsim" "$@" >"$tmp/out" 2>"$tmp/err"; then
        echo "FAIL: spsim $*: exit $? ($(cat "$tmp/err"))"
        failures=$((failures + 1))
    elif [ "$update" = --update ]; then
        cp "$tmp/out" "$pins/$file"
    elif ! cmp -s "$tmp/out" "$pins/$file"; then
        echo "FAIL: spsim $* differs from $file:"
        diff "$pins/$file" "$tmp/out" | head -20
        failures=$((failures + 1))
    fi
}

pin default.json query --format json
pin default.csv query --format csv
pin default.txt query
pin explain.txt explain
pin q2.json query --model llama3-70b --hw dgx-h100 --tp 8 --pp 4 --vpp 1 --dp 8 --gbs 512 --format json
pin q3.json query --model llama3-8b --hw dgx-a100-80g --tp 2 --pp 2 --vpp 1 --dp 4 --gbs 64 \
    --recompute full --format json
pin q4.json query --model paper-530b --hw dgx-a100-80g --tp 8 --pp 35 --vpp 3 --dp 1 --gbs 2240 \
    --format json
# Beyond the dense models (issue 23): MoE, CP, FP8, ZeRO-2 and -3, MLA and offload.
pin q5-moe.json query --model mixtral-8x7b --hw dgx-h100 --tp 2 --pp 2 --vpp 1 --ep 4 --dp 4 \
    --gbs 64 --moe-dispatcher alltoall --format json
pin q6-cp.json query --model llama3-8b --hw dgx-h100 --tp 2 --cp 2 --pp 1 --vpp 1 --dp 2 \
    --seq 16384 --gbs 16 --format json
pin q7-fp8.json query --model llama3-70b --hw dgx-h100 --tp 4 --pp 2 --vpp 1 --dp 2 --gbs 64 \
    --dtype fp8 --fp8-recipe current --distributed-optimizer --format json
pin q8-zero2.json query --model llama3-8b --hw dgx-h100 --tp 1 --pp 1 --vpp 1 --dp 8 --gbs 64 \
    --zero 2 --seq 4096 --format json
pin q9-zero3.json query --model llama3-8b --hw dgx-h100 --tp 1 --pp 1 --vpp 1 --dp 8 --gbs 64 \
    --zero 3 --seq 4096 --format json
pin q10-mla.json query --model deepseek-v3 --hw dgx-h100 --tp 2 --pp 8 --vpp 1 --ep 8 --dp 8 \
    --gbs 512 --moe-dispatcher alltoall --first-stage-layers 5 --last-stage-layers 8 --format json
pin q11-offload.json query --model llama3-8b --hw dgx-h100 --tp 2 --pp 1 --vpp 1 --dp 4 --gbs 32 \
    --recompute none --offload-layers 8 --format json
pin explain-moe.txt explain --model mixtral-8x7b --hw dgx-h100 --tp 2 --pp 2 --vpp 1 --ep 4 \
    --dp 4 --gbs 64 --moe-dispatcher alltoall

# The sweep CSVs (up to 860 MB) are pinned by their SHA-256, streamed from standard output.
while read -r sum name; do
    spec="$src/examples/sweeps/${name%.csv}.json"
    got=$("$spsim" sweep --spec "$spec" | sha256sum | cut -d' ' -f1)
    echo "$got  $name" >>"$tmp/sweeps.sha256"
    if [ "$got" != "$sum" ] && [ "$update" != --update ]; then
        echo "FAIL: spsim sweep --spec $spec: SHA-256 $got, pinned $sum"
        failures=$((failures + 1))
    fi
done <"$pins/sweeps.sha256"
[ "$update" = --update ] && cp "$tmp/sweeps.sha256" "$pins/sweeps.sha256"

if [ "$update" = --update ]; then
    echo "regression pin: pins rewritten from $spsim"
elif [ "$failures" -eq 0 ]; then
    echo "regression pin: all outputs byte-identical"
fi
exit $((failures > 0))
