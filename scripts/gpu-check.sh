#!/bin/sh
# The GPU check of issues 5 and 14, for a machine with NVIDIA GPUs (one H200 or H100 is
# enough): build spsim with -Dcuda=enabled, run the test suite (its 'cuda' suite runs instead
# of skipping; 'gpu-multi' needs 2 GPUs), calibrate the GPUs (BF16 and FP8 GEMMs), and replay
# one transformer layer with `spsim validate` (GPT-3 175B, standard attention; Llama 3 8B,
# flash attention) at every tp of 1, 2, 4, 8 that the visible GPUs allow. Everything it writes
# goes to OUTDIR, at most 18 files:
#
#   gpu-check.log                  what ran, nvidia-smi, build, tests and calibration logs
#   calibrated-HW.json             `spsim calibrate`'s profile, where that command exists, else
#   calibration-samples.json       the raw samples of examples/gpu_calibrate (public API)
#   validate-MODEL-tpN.txt, .json  predicted against measured per op (two separate runs)
#
# Time plan on one H200 (16 cores), against the 540 s budget; each step also has its cap:
#   nvidia-smi                              ~2 s
#   build, release (setup.sh)              ~60 s   cap 300 (about 100 C files; 2 cores: ~3 min)
#   meson test (unit, cli, cuda suites)    ~90 s   cap 240 (test_gpu's calibration ~40 s)
#   spsim calibrate --fp8, 8 B .. 1 GiB    ~40 s   cap 180 (1 GPU: ~10 s of NCCL, ~80 shapes
#                                                   x 3 GEMM variants x 25 launches ~20 s, HBM 1 s)
#   validate, 2 models x 2 formats at tp 1 ~20 s   cap 60 each (CUDA start ~2 s, 13 passes)
#   total                                 ~4 min; with 8 GPUs add ~2 min (tp 2, 4, 8: 12 more
#                                                   validate runs with NCCL start ~3 s each)
#
# Usage: scripts/gpu-check.sh OUTDIR
# Environment:
#   SPSIM_HW               hardware profile to predict with (default: from the GPU's name)
#   SPSIM_DEBS             directory of .deb files to install first (a machine without network)
#   SPSIM_CALIBRATE_ARGS   extra arguments for `spsim calibrate`
#   SPSIM_CHECK_BUDGET     seconds the whole check may take (default 540: a 10-minute slot
#                          with room to copy the results back)
#   BUILDDIR               build directory (default build-gpu)
# Exit status: 0 when every step succeeded, 1 otherwise (the steps after a failure still run
# where they can), 2 on a usage error.
set -u

if [ $# -ne 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
    [ $# -eq 1 ] && exit 0
    exit 2
fi
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.." || exit 2
builddir=${BUILDDIR:-build-gpu}
log="$out/gpu-check.log"
budget=${SPSIM_CHECK_BUDGET:-540}
start=$(date +%s)
status=0
: >"$log"

note() {
    printf 'gpu-check: [%4ss] %s\n' "$(($(date +%s) - start))" "$*" | tee -a "$log" >&2
}

# capped SECONDS CMD...: run CMD with its output appended to the log, for at most SECONDS and
# never past the budget; a failure is noted and remembered, not fatal.
capped() {
    cap=$1
    shift
    left=$((budget - ($(date +%s) - start)))
    [ "$left" -lt "$cap" ] && cap=$left
    if [ "$cap" -le 5 ]; then
        note "SKIPPED (budget spent): $*"
        status=1
        return 1
    fi
    note "run (at most ${cap}s): $*"
    timeout "$cap" "$@" >>"$log" 2>&1
    rc=$?
    [ "$rc" -eq 124 ] && note "TIMED OUT after ${cap}s: $1"
    [ "$rc" -ne 0 ] && { note "FAILED (exit $rc): $1"; status=1; }
    return "$rc"
}

# ---- the machine ----------------------------------------------------------------------------
{ nvidia-smi || echo "nvidia-smi: not available"; } >>"$log" 2>&1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
case "$gpu" in
*H200*) hw=hgx-h200 ;;
*H100*) hw=dgx-h100 ;;
*A100*40GB*) hw=dgx-a100-40g ;;
*A100*) hw=dgx-a100-80g ;;
*GB200*) hw=gb200-nvl72 ;;
*B200*) hw=dgx-b200 ;;
*) hw=hgx-h200 ;;
esac
hw=${SPSIM_HW:-$hw}
note "GPU '${gpu:-unknown}', predicting with the '$hw' profile"

# ---- build ----------------------------------------------------------------------------------
if [ -n "${SPSIM_DEBS:-}" ]; then
    # shellcheck disable=SC2016 # $1 is expanded by the inner shell
    capped 120 sh -c 'dpkg -i "$1"/*.deb' sh "$SPSIM_DEBS"
fi
BUILDDIR=$builddir
MESON_ARGS="-Dcuda=enabled -Dbuildtype=release ${MESON_ARGS:-}"
export BUILDDIR MESON_ARGS
if ! capped 300 scripts/setup.sh; then
    note "no build: nothing else can run"
    exit 1
fi
spsim=$builddir/src/cli/spsim

# ---- tests (the 'cuda' suite included) ------------------------------------------------------
capped 240 meson test -C "$builddir" --print-errorlogs

# ---- calibrate -------------------------------------------------------------------------------
# Collectives 8 B .. 1 GiB (one GPU: NCCL's local copies), the GEMMs of Llama 3 8B's layer and
# the grid in BF16 and FP8 (fast and split accumulation), HBM beyond the L2.
if "$spsim" calibrate --help >/dev/null 2>&1; then
    # shellcheck disable=SC2086 # SPSIM_CALIBRATE_ARGS is a list of arguments
    capped 180 "$spsim" calibrate --base "$hw" --model llama3-8b --fp8 ${SPSIM_CALIBRATE_ARGS:-} \
        -o "$out/calibrated-$hw.json"
else
    note "'spsim calibrate' is not in this build: raw samples from examples/gpu_calibrate"
    capped 180 "$builddir/examples/gpu_calibrate" --model llama3-8b --max-bytes 268435456 --fp8 \
        -o "$out/calibration-samples.json"
fi

# ---- validate: one layer at tp 1, 2, 4, 8 as the GPUs allow --------------------------------
# pp, vpp and gbs only have to satisfy Megatron's rules: the replay is one layer on tp GPUs
# (SP with tp > 1, as Megatron runs tensor parallelism).
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "${ngpus:-0}" -ge 1 ] || ngpus=1
note "$ngpus GPU(s) visible: validating tp up to $ngpus (at most 8)"
for tp in 1 2 4 8; do
    [ "$tp" -le "$ngpus" ] || break
    sp=--sp
    [ "$tp" -eq 1 ] && sp=--no-sp
    for model in gpt3-175b llama3-8b; do
        set -- --model "$model" --hw "$hw" --tp "$tp" "$sp" --pp 1 --vpp 1 --dp 1 --mbs 1 \
            --gbs 1 --recompute selective --iters 10 --warmup 3
        capped 60 "$spsim" validate "$@" -o "$out/validate-$model-tp$tp.txt"
        capped 60 "$spsim" validate "$@" --format json -o "$out/validate-$model-tp$tp.json"
    done
done

note "done, exit $status; results in $out"
exit "$status"
