#!/bin/sh
# The CLI fuzz target replayed on its corpus: nothing of it may be left once it exits (its
# scratch directory, /tmp/spsim-fuzz-cli-XXXXXX with links to this source tree, used to stay,
# one per process; issue 23). It goes to $TMPDIR now, which the test points to a folder of its
# own; /tmp is searched too, for the directories linking to this tree made since the start.
# Usage: no_scratch_left.sh SOURCE_ROOT FUZZ_CLI_REPLAY CORPUS...
set -u
src=$1 replay=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
touch "$dir/.start"
TMPDIR=$dir "$replay" "$@" || { echo "FAIL: the replay exits $?"; exit 1; }
left=$(ls -A "$dir" | grep -v '^\.start$')
[ -z "$left" ] || { echo "FAIL: left in \$TMPDIR: $left"; exit 1; }
for d in /tmp/spsim-fuzz-cli-*; do
    if [ -d "$d" ] && [ "$d" -nt "$dir/.start" ] && [ "$(readlink "$d/models")" = "$src/models" ]; then
        echo "FAIL: $d was left behind"
        exit 1
    fi
done
echo "no scratch directory left"
