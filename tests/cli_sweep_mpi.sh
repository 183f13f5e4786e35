#!/bin/sh
# `mpirun -np N spsim sweep` writes what one process writes: rows in order (with the invalid
# list), and --top K. Registered only where MPI and mpirun exist. Usage: cli_sweep_mpi.sh SPSIM
set -u
spsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
# Open MPI's plugins leave allocations behind at exit (outside spsim): under AddressSanitizer
# (build-asan) leak reports would fail every rank. spsim's own sweep code is leak-checked by
# the other tests, which run it without MPI.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpirun=mpirun
if mpirun --version 2>&1 | grep -q "Open MPI"; then
    # Open MPI refuses root without this, and the test machine may have fewer cores than ranks.
    mpirun="mpirun --allow-run-as-root --oversubscribe"
fi
space="--model llama3-8b --hw dgx-h100 --gpus 16 --tp 1,2,4 --pp 1..4 --vpp 1,2 --mbs 1,2
       --sp on,off --recompute none,full --gbs 16..512:16 --quiet"

"$spsim" sweep $space --show-invalid -o "$tmp/one.csv" 2>"$tmp/one.invalid"
"$spsim" sweep $space --top 9 --by mfu >"$tmp/one.top"
for n in 2 3; do
    $mpirun -np $n "$spsim" sweep $space --show-invalid -o "$tmp/mpi.csv" 2>"$tmp/mpi.invalid" ||
        { echo "FAIL: mpirun -np $n exits $?"; failures=$((failures + 1)); }
    cmp -s "$tmp/one.csv" "$tmp/mpi.csv" || { echo "FAIL: -np $n rows differ"; failures=$((failures + 1)); }
    cmp -s "$tmp/one.invalid" "$tmp/mpi.invalid" ||
        { echo "FAIL: -np $n invalid list differs"; failures=$((failures + 1)); }
    $mpirun -np $n "$spsim" sweep $space --top 9 --by mfu >"$tmp/mpi.top"
    cmp -s "$tmp/one.top" "$tmp/mpi.top" || { echo "FAIL: -np $n --top differs"; failures=$((failures + 1)); }
done
[ $failures -eq 0 ] || exit 1
echo "mpirun output equals one process's"
