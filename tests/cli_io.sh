#!/bin/sh
# Files in and out of every command (issue 15): a FIFO, a directory, a device or a socket as an
# input is refused at once (exit 3) instead of waiting forever; /proc files are read to their end;
# a file size limit (ulimit -f) is reported and leaves no temporary file; -o writes through a
# symbolic link and keeps the file's mode; an empty -o is refused before any work.
# Usage: cli_io.sh SPSIM SOURCE_DIR
set -u
spsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# expect CODE TEXT -- ARGS: exit status CODE and TEXT on standard error, within 10 seconds (a
# FIFO used to block the reader for ever).
expect() {
    code=$1 text=$2
    shift 3
    timeout 10 "$spsim" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
    got=$?
    [ "$got" -eq "$code" ] || fail "spsim $*: exit $got, want $code ($(cat "$tmp/err"))"
    grep -qF -- "$text" "$tmp/err" || fail "spsim $*: no '$text' in: $(cat "$tmp/err")"
}

# No temporary file left beside an output.
no_tmp() {
    ls -a "$tmp" | grep -q '\.tmp\.' && fail "$1: a temporary file was left: $(ls "$tmp")"
    rm -f "$tmp"/*.tmp.*
}

a100="$src/tests/data/nccl-tests/a100x8_all_reduce_thanos_threads.txt"

# Non-regular inputs: every reader, and a FIFO named inside a sweep spec.
mkfifo "$tmp/fifo"
fifo="not a regular file (a FIFO)"
expect 3 "$fifo" -- query --model "$tmp/fifo"
expect 3 "$fifo" -- query --hw "$tmp/fifo"
expect 3 "$fifo" -- explain --model "$tmp/fifo"
expect 3 "$fifo" -- sweep --spec "$tmp/fifo"
expect 3 "$fifo" -- sweep --model "$tmp/fifo"
expect 3 "$fifo" -- check "$tmp/fifo"
expect 3 "$fifo" -- calibrate --from-nccl-tests "$tmp/fifo" --gpus 8 --op all_reduce -o "$tmp/c.json"
expect 3 "$fifo" -- calibrate --from-nccl-tests "$a100" --base "$tmp/fifo" -o "$tmp/c.json"
expect 3 "$fifo" -- merge "$tmp/fifo"
# Issue 23, defect 1: --megatron-args read with fopen: a FIFO hung, /dev/zero exited 1 after
# 64 MiB, a directory was a "read error".
expect 3 "$fifo" -- query --megatron-args "$tmp/fifo" --hw dgx-h100
expect 3 "not a regular file (a character device)" -- query --megatron-args /dev/zero
expect 3 "not a regular file (a directory)" -- explain --megatron-args "$tmp"
timeout 20 "$spsim" query --megatron-args - </dev/zero >/dev/null 2>"$tmp/err"
got=$?
[ "$got" -eq 3 ] && grep -qx "spsim: error: -: file is larger than 67108864 bytes" "$tmp/err" ||
    fail "--megatron-args - </dev/zero: exit $got, $(cat "$tmp/err")"
printf '{"model": "%s", "tp": 8}' "$tmp/fifo" >"$tmp/spec.json"
expect 3 "$fifo" -- sweep --spec "$tmp/spec.json"
expect 3 "not a regular file (a directory)" -- query --model "$tmp/"
# Issue 23, defect 10: a model folder whose config.json is a FIFO or a link loop was "DIR: not a
# regular file (a directory)".
mkdir "$tmp/hf-fifo" "$tmp/hf-loop"
mkfifo "$tmp/hf-fifo/config.json"
ln -s config.json "$tmp/hf-loop/config.json"
expect 3 "$tmp/hf-fifo/config.json: $fifo" -- query --model "$tmp/hf-fifo"
expect 3 "$tmp/hf-loop/config.json: cannot open: Too many levels of symbolic links" -- query --model "$tmp/hf-loop"
expect 3 "not a regular file (a directory)" -- merge "$tmp"
expect 3 "not a regular file (a character device)" -- query --model /dev/zero
expect 3 "not a regular file (a character device)" -- merge /dev/null
if command -v python3 >/dev/null 2>&1 &&
    python3 -c "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$tmp/sock"; then
    expect 3 "not a regular file (a socket)" -- query --model "$tmp/sock"
fi
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "a refused input prints more than one line"

# -o '': refused before any work (it used to run the whole sweep, then fail to rename).
expect 2 "-o: the output path is empty" -- sweep -o ''
expect 2 "-o: the output path is empty" -- query -o ''
expect 2 "-o: the output path is empty" -- merge -o '' "$tmp/none.csv"
expect 2 "-o: the output path is empty" -- optimize --model llama3-8b --hw dgx-h100 --gpus 8 -o ''
expect 2 "-o: the output path is empty" -- calibrate --from-nccl-tests "$a100" -o ''
expect 2 "-o: the output path is empty" -- validate -o ''
expect 2 "-o: the output path is empty" -- explain -o ''

# ulimit -f: SIGXFSZ used to kill the command silently and leave TARGET.tmp.XXXXXX. Now the
# write fails with EFBIG: one line, exit 1, no temporary file, the old file whole.
big="--tp 1,2,4,8 --pp 1,2,4,8 --quiet"
echo old >"$tmp/keep"
for args in "sweep $big" "sweep $big --format jsonl" "query --format json" "merge $src/tests/data/regression/default.csv $src/tests/data/regression/default.csv" \
    "optimize --model llama3-8b --hw dgx-h100 --gpus 16 --format csv" \
    "calibrate --from-nccl-tests $a100"; do
    # shellcheck disable=SC2086
    (ulimit -f 1 && exec "$spsim" $args -o "$tmp/keep") >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" -eq 1 ] || fail "ulimit -f 1: $args -o: exit $got, want 1 ($(cat "$tmp/err"))"
    grep -q "^spsim: error: .*File too large" "$tmp/err" || fail "ulimit -f 1: $args -o: $(cat "$tmp/err")"
    [ "$(grep -c '^spsim: error:' "$tmp/err")" -eq 1 ] || fail "ulimit -f 1: $args -o: not one error line"
    [ "$(cat "$tmp/keep")" = "old" ] || fail "ulimit -f 1: $args -o replaced the file"
    no_tmp "ulimit -f 1: $args -o"
    # shellcheck disable=SC2086
    (ulimit -f 1 && exec "$spsim" $args) >"$tmp/stdout" 2>"$tmp/err"
    got=$?
    case $args in calibrate*) continue ;; esac # its -o is required
    [ "$got" -eq 1 ] || fail "ulimit -f 1: $args >FILE: exit $got, want 1 ($(cat "$tmp/err"))"
    grep -q "^spsim: error: cannot write to standard output: File too large" "$tmp/err" ||
        fail "ulimit -f 1: $args >FILE: $(cat "$tmp/err")"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "ulimit -f 1: $args >FILE: not one line: $(cat "$tmp/err")"
done
rm -f "$tmp/stdout"

# Issue 23, defect 7: a terminating signal in the middle of `sweep -o` (SIGHUP, SIGALRM, SIGUSR1
# used to kill it and leave a mode-0600 .tmp file) leaves the old file and no temporary one.
huge="--tp 1..64 --pp 1..64 --dp 1..1000 --mbs 1..8 --quiet"
for sig in HUP INT QUIT ALRM TERM USR1 USR2 PIPE VTALRM PROF XCPU PWR RTMIN; do
    echo old >"$tmp/keep"
    # shellcheck disable=SC2086
    "$spsim" sweep $huge -o "$tmp/keep" 2>"$tmp/err" &
    pid=$!
    i=0
    while ! ls -a "$tmp" | grep -q '^keep\.tmp\.' && [ $i -lt 600 ]; do
        sleep 0.05
        i=$((i + 1))
    done
    kill -s "$sig" $pid
    wait $pid
    got=$?
    [ "$got" -eq 1 ] || fail "sweep -o, SIG$sig: exit $got, want 1 ($(cat "$tmp/err"))"
    grep -qx "spsim: error: interrupted by SIG$sig; nothing written" "$tmp/err" ||
        fail "sweep -o, SIG$sig: $(cat "$tmp/err")"
    [ "$(cat "$tmp/keep")" = "old" ] || fail "sweep -o, SIG$sig: the old file was replaced"
    no_tmp "sweep -o, SIG$sig"
done

# -o onto a symbolic link writes the link's target (the link stays); a file keeps its mode.
mkdir "$tmp/d"
echo old >"$tmp/d/target.csv"
ln -s d/target.csv "$tmp/link.csv"
"$spsim" query --format csv -o "$tmp/link.csv" || fail "query -o LINK exits $?"
[ -L "$tmp/link.csv" ] || fail "query -o LINK replaced the link"
cmp -s "$tmp/d/target.csv" "$src/tests/data/regression/default.csv" || fail "query -o LINK: target not written"
echo old >"$tmp/d/target.csv"
"$spsim" sweep --quiet -o "$tmp/link.csv" || fail "sweep -o LINK exits $?"
[ -L "$tmp/link.csv" ] || fail "sweep -o LINK replaced the link"
cmp -s "$tmp/d/target.csv" "$src/tests/data/regression/default.csv" || fail "sweep -o LINK: target not written"
ln -s "$tmp/d/new.csv" "$tmp/dangling.csv"
"$spsim" sweep --quiet -o "$tmp/dangling.csv" || fail "sweep -o DANGLING exits $?"
[ -L "$tmp/dangling.csv" ] && [ -f "$tmp/d/new.csv" ] || fail "sweep -o DANGLING: the link's target was not created"
ls -a "$tmp/d" | grep -q '\.tmp\.' && fail "a temporary file was left in the link's directory"
for cmd in "query --format csv" "sweep --quiet" "calibrate --from-nccl-tests $a100"; do
    echo old >"$tmp/ro.csv"
    chmod 0444 "$tmp/ro.csv"
    # shellcheck disable=SC2086
    "$spsim" $cmd -o "$tmp/ro.csv" >/dev/null || fail "$cmd -o (0444 file) exits $?"
    [ "$(stat -c %a "$tmp/ro.csv")" = 444 ] || fail "$cmd -o: a 0444 file became $(stat -c %a "$tmp/ro.csv")"
    [ "$(cat "$tmp/ro.csv")" != old ] || fail "$cmd -o: the 0444 file was not written"
    chmod 0640 "$tmp/ro.csv"
    # shellcheck disable=SC2086
    "$spsim" $cmd -o "$tmp/ro.csv" >/dev/null
    [ "$(stat -c %a "$tmp/ro.csv")" = 640 ] || fail "$cmd -o: a 0640 file became $(stat -c %a "$tmp/ro.csv")"
done
rm -f "$tmp/new.csv"
"$spsim" query --format csv -o "$tmp/new.csv"
[ "$(stat -c %a "$tmp/new.csv")" = 644 ] || fail "a new output is $(stat -c %a "$tmp/new.csv"), not 644"

# A profile name sweep can write, query writes too (a 20,000-byte name used to replace the
# output with a header-only file and exit 1); the row is sweep's.
python3 - "$src/models/gpt3-175b.json" "$tmp/long.json" <<'EOF' || fail "cannot write the long-name model"
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = "x" * 20000
json.dump(m, open(sys.argv[2], "w"))
EOF
echo old >"$tmp/q.csv"
"$spsim" query --model "$tmp/long.json" --format csv -o "$tmp/q.csv" || fail "query, 20,000-byte name: exit $?"
"$spsim" sweep --model "$tmp/long.json" --quiet -o "$tmp/s.csv"
cmp -s "$tmp/q.csv" "$tmp/s.csv" || fail "query --format csv with a 20,000-byte name differs from sweep's row"
[ "$(wc -c <"$tmp/q.csv")" -gt 20000 ] || fail "query --format csv: the long name is missing"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all CLI file checks passed"
