#!/bin/sh
# The accuracy figures of doc/calibration.md, recomputed from the public nccl-tests logs:
#  - calibrated: `spsim calibrate --from-nccl-tests LOG`, then `spsim collective` on the written
#    profile at every measured size >= 1 MiB against the log's time;
#  - shipped: `spsim collective` on the shipped profile of the log's system (held out: no shipped
#    number was taken from these logs).
# Usage: scripts/calibration-figures.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
spsim=$root/${1:-build}/src/cli/spsim
logs=$root/tests/data/nccl-tests
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SPSIM_DATA_DIR="$root"

# errors HW OP GPUS NODES: "median max" of |spsim − measured| / measured (%), sizes from
# $tmp/measured ("size time_us" lines)
errors() {
    cut -d' ' -f1 "$tmp/measured" >"$tmp/sizes"
    while read -r size; do
        "$spsim" collective --hw "$1" --op "$2" --gpus "$3" --nodes "$4" --bytes "$size" \
            --format csv | tail -n +2 | cut -d, -f6
    done <"$tmp/sizes" | paste -d' ' "$tmp/measured" - |
        awk '{ e = ($3 * 1e6 - $2) / $2; print (e < 0 ? -e : e) * 100 }' | sort -g |
        awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                                  printf "%.2f %.2f %d", m, v[NR], NR }'
}

# row LOG BASE OP GPUS NODES SHIPPED [LAYOUT]: one line of the table; LAYOUT "yes" gives
# calibrate --gpus GPUS --nodes NODES, for a log without rank lines
row() {
    log=$logs/$1
    base_opt=""
    [ "$2" = "-" ] || base_opt="--base $2"
    [ "${7:-}" != yes ] || base_opt="$base_opt --gpus $4 --nodes $5"
    # shellcheck disable=SC2086 # base_opt is empty or words
    "$spsim" calibrate --from-nccl-tests "$log" $base_opt -o "$tmp/cal.json" >"$tmp/report" 2>/dev/null
    # The measured sizes and times as the importer read them (split rows joined).
    awk '/^# / { next } $1 >= 1048576 && NF == 11 { print $1, $4 }' "$tmp/report" >"$tmp/measured"
    set -- "$1" "$3" "$4" "$5" "$6" "$(errors "$tmp/cal.json" "$3" "$4" "$5")"
    shipped="-"
    [ "$5" = "-" ] || shipped=$(errors "$5" "$2" "$3" "$4" | awk '{ printf "%s / %s", $1, $2 }')
    echo "$6" | awk -v file="$1" -v op="$2" -v g="$3" -v n="$4" -v hw="$5" -v sh="$shipped" \
        '{ printf "| %s | %s, %s GPUs, %s node(s) | %s | %s / %s | %s | %s |\n", file, op, g, n, $3, $1, $2, hw, sh }'
}

echo "| log | collective | sizes >= 1 MiB | calibrated: median / max error (%) | shipped profile | shipped: median / max error (%) |"
echo "|---|---|---|---|---|---|"
row a100x8_all_reduce_thanos_threads.txt - all_reduce 8 1 dgx-a100-80g
row a100x8x2nodes_ib_hdr_all_reduce_azure_ndmv4_aks.txt dgx-a100-80g all_reduce 16 2 dgx-a100-80g
row a100pcie_x2_pcie_all_reduce_medium_1MB-1GB_step10MB_thomaslie210.txt dgx-a100-40g all_reduce 2 1 -
row h100x8_all_reduce_dgxc_benchmarking.txt - all_reduce 8 1 dgx-h100
row h100x4of8_all_reduce_waynehacking8.txt - all_reduce 4 1 dgx-h100
row h100x4of8_all_gather_waynehacking8.txt - all_gather 4 1 dgx-h100
row h100x4of8_reduce_scatter_waynehacking8.txt - reduce_scatter 4 1 dgx-h100
row h100x6of8_all_reduce_NCCL_ALGO_Ring_waynehacking8.txt - all_reduce 6 1 dgx-h100
row h100x4x2nodes_ib_ndr200_all_reduce_snellius_odissei.txt dgx-h100 all_reduce 8 2 -
row h100x4x2nodes_ib_ndr200_all_gather_snellius_odissei.txt dgx-h100 all_gather 8 2 -
row h100x4x2nodes_ib_ndr200_reduce_scatter_snellius_odissei.txt dgx-h100 reduce_scatter 8 2 -
row h100x8x2nodes_ib_all_reduce_nebius_dstack.txt dgx-h100 all_reduce 16 2 dgx-h100 yes
row b200x8x2nodes_ib_all_reduce_lambda_dstack.txt dgx-b200 all_reduce 16 2 dgx-b200 yes
