#!/bin/sh
# A few what-if questions answered with the spsim command. Run from the repository root after
# ./scripts/run.sh has built it: sh examples/what-if.sh
set -eu
spsim="${SPSIM:-build/src/cli/spsim}"

echo "== GPT-3 175B at the paper's setting (the default query), memory and time only"
"$spsim" query | sed -n '/Activation memory by mode/,/model parameters/p'

echo "== Does Llama 3 70B fit on 64 H100s with tp 8, pp 2, dp 4 and no recomputation?"
"$spsim" query --model llama3-70b --hw dgx-h100 --tp 8 --pp 2 --vpp 1 --dp 4 --gbs 256 \
    --recompute none --distributed-optimizer | grep -E '^  total'

echo "== The same with selective recomputation"
"$spsim" query --model llama3-70b --hw dgx-h100 --tp 8 --pp 2 --vpp 1 --dp 4 --gbs 256 \
    --recompute selective --distributed-optimizer | grep -E '^  total|MFU'

echo "== 1T on 512 A100s: a TP group of 16 (spans two DGX nodes) versus 8"
for layout in "8 64" "16 32"; do
    set -- $layout
    tp=$1
    "$spsim" query --model paper-1t --tp "$1" --pp "$2" --vpp 1 --gbs 512 --format csv 2>/dev/null |
        awk -F, -v tp="$tp" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
                              NR == 2 { print "tp " tp ": iteration " $col["time_iteration_s"] " s, exposed TP " $col["time_tp_exposed_s"] " s, tier " $col["comm_tp_tier"] }'
done

echo "== One layer of Llama 3 8B with tp 4 and SP on H100, as Megatron schedules it"
"$spsim" explain --model llama3-8b --hw dgx-h100 --tp 4 --pp 1 --vpp 1 --gbs 1 | head -25

echo "== AllReduce across two DGX H100 nodes, nccl-tests style"
"$spsim" collective --op all_reduce --gpus 16 --nodes 2 --hw dgx-h100 --bytes 1M..8G:x8
