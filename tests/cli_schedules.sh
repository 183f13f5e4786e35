#!/bin/sh
# --pp-schedule on the command line (README "Pipeline schedules"): the JSON names the schedule
# in its "pp_schedule" object (only there: Megatron's schedules write none), the text names it,
# and each refusal is one line with its exit code (2 a bad name, 4 a rule).
# Usage: cli_schedules.sh SPSIM
set -u
spsim=$1
failures=0
base="--model llama3-8b --hw dgx-h100 --tp 2 --pp 4 --dp 1 --gbs 16"

fail() {
    printf 'FAIL: %s\n' "$*"
    failures=$((failures + 1))
}

# refused CODE TEXT ARGS...: exit CODE and one line holding TEXT.
refused() {
    code=$1 text=$2
    shift 2
    err=$("$spsim" query $base "$@" 2>&1 >/dev/null)
    got=$?
    [ "$got" -eq "$code" ] || fail "$*: exit $got, want $code ($err)"
    [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "$*: not one line: $err"
    printf '%s' "$err" | grep -qF -- "$text" || fail "$*: no '$text' in: $err"
}

for s in zb-h1 zb-v dualpipe dualpipev; do
    out=$("$spsim" query $base --pp-schedule "$s" --format json) || fail "$s: exit $?"
    printf '%s' "$out" | grep -q "\"pp_schedule\": {" || fail "$s: no pp_schedule object"
    printf '%s' "$out" | grep -q "\"name\": \"$s\"" || fail "$s: the object does not name it"
    "$spsim" query $base --pp-schedule "$s" | grep -q "schedule $s" || fail "$s: text lacks it"
done
copies=$("$spsim" query $base --pp-schedule dualpipe --format json | grep -c '"parameter_copies": 2')
[ "$copies" -eq 1 ] || fail "dualpipe: parameter_copies is not 2"
"$spsim" query $base --format json | grep -q '"pp_schedule"' && fail "1f1b wrote a pp_schedule object"
"$spsim" query $base --pp-schedule 1f1b --format json | grep -q '"pp_schedule"' &&
    fail "--pp-schedule 1f1b wrote a pp_schedule object"
"$spsim" query $base --pp-schedule dualpipe --format megatron |
    grep -q "^# the dualpipe pipeline schedule is its reference code's" ||
    fail "--format megatron drops dualpipe without a word"
refused 2 "is not one of 1f1b, interleaved" --pp-schedule zb-h2
refused 4 "interleaved needs --vpp 2" --pp-schedule interleaved
refused 4 "1f1b needs vpp 1" --pp-schedule 1f1b --vpp 2
refused 4 "zb-h1 runs one model chunk per rank" --pp-schedule zb-h1 --vpp 2
refused 4 "an even count of micro-batches >= 2·pp = 8" --pp-schedule dualpipe --gbs 6
refused 4 "dualpipe is not modelled with Muon" --pp-schedule dualpipe --optimizer muon
err=$("$spsim" trace $base --pp-schedule zb-v --vpp 1 2>&1 >/dev/null)
[ $? -eq 4 ] || fail "trace --pp-schedule zb-v --vpp 1: exit not 4 ($err)"
printf '%s' "$err" | grep -q "zb-v runs two model chunks" || fail "trace: $err"
"$spsim" trace $base --pp-schedule zb-v | grep -q '"schedule":"zb-v"' ||
    fail "trace --pp-schedule zb-v: no trace naming it"
for s in zb-h1 dualpipe; do
    "$spsim" trace $base --pp-schedule "$s" | grep -q "\"schedule\":\"$s\"" ||
        fail "trace --pp-schedule $s: no trace naming it"
done
"$spsim" trace $base --pp-schedule dualpipev --vpp 2 | grep -q '"cat":"wgrad"' ||
    fail "trace --pp-schedule dualpipev: no weight-gradient ops"
[ "$failures" -eq 0 ] || exit 1
echo "cli schedules: ok"
