#!/bin/bash
# Speed of `spsim optimize` over its default space (README, "spsim optimize"; issue 21's goal:
# each case under 1 s on one core): wall and user time on one thread, medians of REPEATS runs,
# with the search's summary and its best row, so that a change of the answer shows beside its
# time. Timing on a shared machine is noisy: the load is printed; user time suffers less.
#   bench/bench_optimize.sh SPSIM [REPEATS]   (meson test -C build --benchmark optimize)
set -u
spsim=$1 repeats=${2:-3}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
TIMEFORMAT='%R %U'
one() { # label, then the optimize options
    local label=$1 i
    shift
    : >"$tmp/times"
    for ((i = 0; i < repeats; i++)); do
        { time "$spsim" optimize --threads 1 "$@" >"$tmp/out" 2>"$tmp/err"; } 2>>"$tmp/times" || {
            echo "bench_optimize: $label failed: $(head -1 "$tmp/err")"
            return 1
        }
    done
    local wall user
    wall=$(cut -d' ' -f1 "$tmp/times" | sort -n | sed -n "$(((repeats + 1) / 2))p")
    user=$(cut -d' ' -f2 "$tmp/times" | sort -n | sed -n "$(((repeats + 1) / 2))p")
    printf 'optimize  %-42s wall %6.3f s  user %6.3f s  (medians of %d)\n' "$label" "$wall" \
        "$user" "$repeats"
    sed -n 2p "$tmp/out"
    sed -n 5p "$tmp/out"
}
echo "spsim optimize, 1 thread, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
one "llama3-8b, 64 H100, --gbs 512" --model llama3-8b --hw dgx-h100 --gpus 64 --gbs 512 &&
    one "gpt3-175b, 1,024 A100, --gbs 1536" --model gpt3-175b --hw dgx-a100-80g --gpus 1024 \
        --gbs 1536 &&
    one "llama3-405b, 16,384 H100, --max-gbs 2048" --model llama3-405b --hw dgx-h100 \
        --gpus 16384 --max-gbs 2048 &&
    one "mixtral-8x7b, 64 H100, --gbs 256" --model mixtral-8x7b --hw dgx-h100 --gpus 64 \
        --gbs 256
