#!/bin/sh
# Issue 23, defect 5: text from an input shown in a message is quoted and escaped, so that a
# message is one line and an ANSI escape never reaches the terminal: a key or a value holding a
# newline and ESC [ 2 J (clear the screen) in a model profile, a Hugging Face config, a hardware
# profile, a sweep spec, a launch line and a command-line option. Each error must be exactly one
# line, hold no control byte, and show the text as 'a\nb\x1B[2J' (the option as '--a\nb...').
# Usage: cli_messages.sh SPSIM
set -u
spsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
nl='
'
esc=$(printf '\033')
bad="a${nl}b${esc}[2J"
shown="a\\nb\\x1B[2J'"

fail() {
    printf 'FAIL: %s\n' "$*"
    failures=$((failures + 1))
}

# one_line CODE NAME -- ARGS: exit CODE, one error line on standard error (a usage error adds
# "Try 'spsim CMD --help'."), no control byte but the newlines, and the escaped text.
one_line() {
    code=$1 name=$2
    shift 3
    "$spsim" "$@" >/dev/null 2>"$tmp/err" </dev/null
    got=$?
    [ "$got" -eq "$code" ] || fail "$name: exit $got, want $code: $(cat "$tmp/err")"
    lines=$(grep -vc "^Try 'spsim.*--help'\.$" "$tmp/err")
    [ "$lines" -eq 1 ] || fail "$name: not one line: $(cat -v "$tmp/err")"
    LC_ALL=C tr -d '\n' <"$tmp/err" | LC_ALL=C grep -q '[[:cntrl:]]' &&
        fail "$name: a control byte reached the terminal: $(cat -v "$tmp/err")"
    grep -qF -- "$shown" "$tmp/err" || fail "$name: no $shown in: $(cat -v "$tmp/err")"
}

# JSON strings with \n and \u001b: the parsed key or value holds the bytes.
j='a\nb\u001b[2J'
printf '{"schema": "spsim-model/1", "name": "x", "%s": 1}' "$j" >"$tmp/model.json"
one_line 3 "model profile key" -- query --model "$tmp/model.json"
printf '{"model_type": "%s", "num_hidden_layers": 2}' "$j" >"$tmp/config.json"
one_line 3 "Hugging Face model_type" -- query --model "$tmp/config.json"
printf '{"schema": "%s"}' "$j" >"$tmp/hw.json"
one_line 3 "hardware profile schema" -- query --hw "$tmp/hw.json"
printf '{"tp": "%s"}' "$j" >"$tmp/spec.json"
one_line 3 "sweep spec value" -- sweep --spec "$tmp/spec.json"
printf '{"%s": "1"}' "$j" >"$tmp/spec2.json"
one_line 3 "sweep spec key" -- sweep --spec "$tmp/spec2.json"
# A launch line: the value in single quotes keeps its newline and ESC.
cat >"$tmp/launch.sh" <<LAUNCH
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 256 \\
    --num-attention-heads 8 --seq-length 128 --vocab-size 1000 --bf16 \\
    --cp-comm-type '$bad'
LAUNCH
one_line 3 "launch line value" -- query --megatron-args "$tmp/launch.sh"
# Command-line options: a value, an unknown option, a profile name, a command, an axis.
one_line 2 "--tp value" -- query --tp "$bad"
one_line 2 "--recompute value" -- query --recompute "$bad"
one_line 2 "unknown option" -- query "--$bad"
one_line 3 "profile name" -- query --hw "$bad"
one_line 2 "unknown command" -- "$bad"
one_line 2 "sweep axis" -- sweep --dtype "$bad"
# A short option inside a cluster was named by the word before it ("unknown option 'query'").
"$spsim" query -k 2>"$tmp/err"
grep -qx "spsim: error: unknown option '-k'" "$tmp/err" || fail "-k: $(cat "$tmp/err")"
"$spsim" query "-a$bad" 2>"$tmp/err"
grep -qx "spsim: error: unknown option '-a'" "$tmp/err" || fail "-a...: $(cat "$tmp/err")"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "every message one line"
