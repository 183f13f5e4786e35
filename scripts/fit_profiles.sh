#!/bin/sh
# The fitted hardware profiles of the development set's systems: the rows spsim predicts, as
# measured runs (tests/data/published-runs/runs-HW.csv, written by scripts/accuracy.py
# --runs-dir), fitted by `spsim calibrate --runs` from each sourced profile into
# hardware/HW-fitted.json (labelled fitted; cross-validated leave one model family out), then
# doc/accuracy.md regenerated with the sourced and fitted columns. Rerun after any change that
# moves predictions. Usage: scripts/fit_profiles.sh [BUILD_DIR]   (default: build)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
spsim=$root/${1:-build}/src/cli/spsim
runs=$root/tests/data/published-runs
export SPSIM_DATA_DIR="$root"
python3 "$root/scripts/accuracy.py" --spsim "$spsim" --runs-dir "$runs" >/dev/null
for file in "$runs"/runs-*.csv; do
    hw=$(basename "$file" .csv)
    hw=${hw#runs-}
    echo "fit_profiles.sh: $hw" >&2
    "$spsim" calibrate --runs "$file" --base "$hw" --name "$hw-fitted" \
        -o "$root/hardware/$hw-fitted.json" >"$root/hardware/$hw-fitted.txt.tmp"
    # Paths as the repository names them, not this checkout's absolute ones (atomic rewrite).
    sed "s|$root/||g" "$root/hardware/$hw-fitted.json" \
        >"$root/hardware/$hw-fitted.json.tmp" &&
        mv "$root/hardware/$hw-fitted.json.tmp" "$root/hardware/$hw-fitted.json"
    tail -n 12 "$root/hardware/$hw-fitted.txt.tmp" >&2
    rm -f "$root/hardware/$hw-fitted.txt.tmp"
done
python3 "$root/scripts/accuracy.py" --spsim "$spsim" --write "$root/doc/accuracy.md"
