#!/bin/sh
# spsim sweep, merge and optimize through the command line: exit codes and messages of bad
# input, shards merged back into the whole sweep, --top merged across shards, -o written
# atomically, and optimize's report. Usage: cli_sweep.sh SPSIM SOURCE_DIR
set -u
spsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spsim=$(sh "$(dirname "$0")/wrap_spsim.sh" "$spsim" "$tmp") || exit 1
failures=0

fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# expect CODE TEXT -- ARGS: exit status CODE and TEXT on standard error.
expect() {
    code=$1 text=$2
    shift 3
    "$spsim" "$@" >"$tmp/out" 2>"$tmp/err"
    got=$?
    [ "$got" -eq "$code" ] || fail "spsim $*: exit $got, want $code ($(cat "$tmp/err"))"
    grep -qF -- "$text" "$tmp/err" || fail "spsim $*: no '$text' in: $(cat "$tmp/err")"
}

small="--model llama3-8b --hw dgx-h100 --gpus 16 --tp 1,2,4 --pp 1..4 --vpp 1,2 --mbs 1,2 --sp on,off --recompute none,full --gbs 64 --quiet"

for cmd in sweep optimize merge; do
    "$spsim" $cmd --help >"$tmp/out" 2>&1 || fail "$cmd --help exits $?"
    grep -q "^Usage: spsim $cmd" "$tmp/out" || fail "$cmd --help prints no usage"
done

# Bad axis values name the option; bad spec files name the file and the field.
expect 2 "--tp: '0' is not an integer" -- sweep --tp 0
expect 2 "--pp: '4..1' is a range whose end is below its start" -- sweep --pp 4..1
expect 2 "--sp: 'maybe' is not on or off" -- sweep --sp maybe
expect 2 "--flash-attn: 'fast' is not one of model, off, on" -- sweep --flash-attn fast
expect 2 "--mbs: the value 2 appears twice in '1,2,2'" -- sweep --mbs 1,2,2
expect 2 "axes 'dp' and 'gpus' exclude each other" -- sweep --dp 1 --gpus 8
expect 2 "--shard: '3/3' needs 0 <= I < N" -- sweep --shard 3/3
expect 2 "--shard: 'x' is not I/N" -- sweep --shard x
expect 2 "--by: 'speed' is not one of tokens_per_s, iteration_s, total_bytes, mfu" -- sweep --by speed
expect 2 "--format: 'xml' is not one of csv, jsonl" -- sweep --format xml
expect 2 "--threads: '0' is not an integer" -- sweep --threads 0
expect 2 "unknown option '--bogus'" -- sweep --bogus
expect 3 "no model profile named 'nope'" -- sweep --model nope
printf '{"tp": [1, 2], "pp": "1..x"}' >"$tmp/bad.json"
expect 3 "$tmp/bad.json: field 'pp': '1..x' is not a range" -- sweep --spec "$tmp/bad.json"
printf '{"tp": [1, 2], "mystery": 1}' >"$tmp/bad.json"
expect 3 "$tmp/bad.json: field 'mystery': unknown key" -- sweep --spec "$tmp/bad.json"
printf '{"tp": [1, 1e20]}' >"$tmp/bad.json"
expect 3 "$tmp/bad.json: field 'tp': 1e+20 is out of range [1, 65536]" -- sweep --spec "$tmp/bad.json"
printf '{"tp": [1, 2' >"$tmp/bad.json"
expect 3 "$tmp/bad.json: malformed JSON" -- sweep --spec "$tmp/bad.json"
expect 3 "$tmp/none.json: cannot open" -- sweep --spec "$tmp/none.json"
expect 2 "--model, --hw and --gpus are required" -- optimize --model llama3-8b
expect 2 "--dp: dp is derived from --gpus" -- optimize --model llama3-8b --hw dgx-h100 --gpus 8 --dp 2
expect 4 "none of the" -- optimize --model llama3-405b --hw dgx-a100-40g --gpus 8
expect 2 "no input files" -- merge
expect 3 "cannot open" -- merge "$tmp/none.csv"

# Shards concatenate to the whole sweep; options override the spec file's axes.
"$spsim" sweep $small -o "$tmp/whole.csv" || fail "whole sweep exits $?"
[ "$(wc -l <"$tmp/whole.csv")" -gt 50 ] || fail "whole sweep has too few rows"
for n in 2 3 5; do
    files=""
    i=0
    while [ $i -lt $n ]; do
        "$spsim" sweep $small --shard $i/$n --threads 2 -o "$tmp/s$i.csv" || fail "shard $i/$n"
        files="$files $tmp/s$i.csv"
        i=$((i + 1))
    done
    "$spsim" merge $files -o "$tmp/merged.csv" || fail "merge of $n shards exits $?"
    cmp -s "$tmp/merged.csv" "$tmp/whole.csv" || fail "$n shards merged differ from the whole"
done
"$spsim" sweep $small --format jsonl >"$tmp/whole.jsonl"
"$spsim" sweep $small --format jsonl --shard 0/2 >"$tmp/j0"
"$spsim" sweep $small --format jsonl --shard 1/2 >"$tmp/j1"
"$spsim" merge "$tmp/j0" "$tmp/j1" >"$tmp/merged.jsonl"
cmp -s "$tmp/merged.jsonl" "$tmp/whole.jsonl" || fail "JSON Lines shards merged differ"
expect 3 "mixes CSV and JSON Lines" -- merge "$tmp/whole.csv" "$tmp/whole.jsonl"

# A shard says which it is and that it is complete; merge checks and drops those lines.
[ "$(head -1 "$tmp/s1.csv")" = "#spsim shard 1/5 of sweep $(head -1 "$tmp/s0.csv" | cut -d' ' -f6)" ] ||
    fail "shard 1/5's first line: $(head -1 "$tmp/s1.csv")"
rows=$(($(wc -l <"$tmp/s1.csv") - 3))
[ "$(tail -1 "$tmp/s1.csv")" = "#spsim end of shard 1/5: $rows rows" ] || fail "shard 1/5's last line: $(tail -1 "$tmp/s1.csv")"
grep -q '^#' "$tmp/whole.csv" "$tmp/whole.jsonl" && fail "an unsharded sweep writes a '#' line"
s="$tmp/s0.csv $tmp/s1.csv $tmp/s2.csv $tmp/s3.csv $tmp/s4.csv"
# Cut in the middle of a row, the half row used to be glued onto the next shard's first row.
{ head -n 3 "$tmp/s1.csv"; sed -n 4p "$tmp/s1.csv" | head -c 40; } >"$tmp/cut.csv"
expect 3 "cut.csv:4: the last line has no newline" -- merge "$tmp/s0.csv" "$tmp/cut.csv" "$tmp/s2.csv" "$tmp/s3.csv" "$tmp/s4.csv"
head -n 4 "$tmp/s1.csv" >"$tmp/cut.csv"
expect 3 "cut.csv: truncated: no last line '#spsim end of shard 1/5" -- merge "$tmp/s0.csv" "$tmp/cut.csv" "$tmp/s2.csv" "$tmp/s3.csv" "$tmp/s4.csv"
head -c 5000 "$tmp/j0" >"$tmp/cut.jsonl"
expect 3 "the last line has no newline" -- merge "$tmp/cut.jsonl" "$tmp/j1"
# Plain outputs (no shard lines): a glued row has the wrong field count or is not JSON.
{ head -c 3000 "$tmp/whole.csv"; tail -n +2 "$tmp/whole.csv"; } >"$tmp/glued.csv"
# The field counts from the files (the header follows the result's field list, which grows).
ncols=$(head -1 "$tmp/glued.csv" | awk -F, '{print NF}')
nglued=$(sed -n 2p "$tmp/glued.csv" | awk -F, '{print NF}')
[ "$nglued" -ne "$ncols" ] || fail "the glued row has as many fields as the header"
expect 3 "glued.csv:2: $nglued fields where the header has $ncols" -- merge "$tmp/glued.csv"
{ head -c 3000 "$tmp/whole.jsonl"; cat "$tmp/whole.jsonl"; } >"$tmp/glued.jsonl"
expect 3 "glued.jsonl:1: not a row of JSON Lines" -- merge "$tmp/glued.jsonl"
{ head -1 "$tmp/whole.jsonl" | sed 's/}$/}x/'; } >"$tmp/tail.jsonl"
expect 3 "tail.jsonl:1: not a row of JSON Lines" -- merge "$tmp/tail.jsonl"
{ head -1 "$tmp/whole.jsonl" | sed 's/:0,/:01,/'; } >"$tmp/zero.jsonl"
expect 3 "zero.jsonl:1: not a row of JSON Lines" -- merge "$tmp/zero.jsonl"
tr '\n' '\n' <"$tmp/whole.csv" | sed '3s/,false,/,fa\x00se,/' >"$tmp/nul.csv"
expect 3 "nul.csv:3: a NUL byte inside the line" -- merge "$tmp/nul.csv"
expect 3 "s0.csv: shard 0/5 is given twice" -- merge "$tmp/s0.csv" $s
expect 3 "s2.csv: shard 2/5 where shard 1 was due" -- merge "$tmp/s0.csv" "$tmp/s2.csv"
expect 3 "shards 3/5 to 4/5 are missing" -- merge "$tmp/s0.csv" "$tmp/s1.csv" "$tmp/s2.csv"
expect 3 "shard 1/2 is missing" -- merge "$tmp/j0"
expect 3 "j1: shard 1/2 where shard 0 was due" -- merge "$tmp/j1"
"$spsim" sweep $small --tp 1,2 --shard 1/5 -o "$tmp/other1.csv"
expect 3 "other1.csv: shard 1/5 of another sweep" -- merge "$tmp/s0.csv" "$tmp/other1.csv"
"$spsim" sweep $small --feasible-only --shard 1/5 -o "$tmp/other1.csv"
expect 3 "other1.csv: shard 1/5 of another sweep" -- merge "$tmp/s0.csv" "$tmp/other1.csv"
expect 3 "s1.csv: a shard of 'spsim sweep --shard', but the files before it are not" -- merge "$tmp/whole.csv" "$tmp/s1.csv"
expect 3 "whole.csv: not a shard" -- merge "$tmp/s0.csv" "$tmp/whole.csv"
{ cat "$tmp/s4.csv"; sed -n 2p "$tmp/s4.csv"; } >"$tmp/after.csv"
expect 3 "text after the shard's last line" -- merge "$tmp/s0.csv" "$tmp/s1.csv" "$tmp/s2.csv" "$tmp/s3.csv" "$tmp/after.csv"
sed 3d "$tmp/s4.csv" >"$tmp/short.csv"
expect 3 "rows, its last line says" -- merge "$tmp/s0.csv" "$tmp/s1.csv" "$tmp/s2.csv" "$tmp/s3.csv" "$tmp/short.csv"
ls "$tmp" | grep -q '\.tmp\.' && fail "a failed merge left a temporary file"
"$spsim" merge $s -o "$tmp/merged.csv" || fail "merge of 5 shards exits $?"
cmp -s "$tmp/merged.csv" "$tmp/whole.csv" || fail "5 shards merged differ from the whole"
expect 2 "needs 0 <= I < N" -- sweep --shard 0/18446744073709551615
[ "$(grep -c '^spsim: error:' "$tmp/err")" -eq 1 ] || fail "--shard 0/2^64-1: $(cat "$tmp/err")"

# A profile name with a quote, a comma and a line break: sweep quotes it (RFC 4180) and merge
# reads the record whole, with --top too (it used to refuse the second half of the name).
sed 's/"name": *"[^"]*"/"name": "odd, \\"name\\"\\nsecond line"/' "$src/models/llama3-8b.json" >"$tmp/odd.json"
"$spsim" sweep $small --model "$tmp/odd.json" --top 4 -o "$tmp/odd.csv" || fail "sweep of an odd name exits $?"
grep -q '^"odd, ""name""$' "$tmp/odd.csv" || fail "the odd name is not quoted over two lines: $(head -3 "$tmp/odd.csv")"
"$spsim" merge --top 4 "$tmp/odd.csv" >"$tmp/oddm.csv" || fail "merge --top of an odd name exits $?"
cmp -s "$tmp/odd.csv" "$tmp/oddm.csv" || fail "merge --top of an odd name differs"
"$spsim" sweep $small --model "$tmp/odd.json" --shard 0/2 -o "$tmp/o0.csv"
"$spsim" sweep $small --model "$tmp/odd.json" --shard 1/2 -o "$tmp/o1.csv"
"$spsim" sweep $small --model "$tmp/odd.json" -o "$tmp/oall.csv"
"$spsim" merge "$tmp/o0.csv" "$tmp/o1.csv" >"$tmp/oddm.csv" || fail "merge of odd-name shards exits $?"
cmp -s "$tmp/oall.csv" "$tmp/oddm.csv" || fail "odd-name shards merged differ from the whole"
"$spsim" sweep $small --tp 1,2 -o "$tmp/other.csv"
"$spsim" query --format csv -o "$tmp/query.csv"
head -1 "$tmp/whole.csv" >"$tmp/h1"
head -1 "$tmp/query.csv" >"$tmp/h2"
cmp -s "$tmp/h1" "$tmp/h2" || fail "query --format csv and sweep have different headers"

# --top K merged across shards is the whole sweep's --top K, for every ranking.
for by in iteration_s total_bytes mfu; do
    "$spsim" sweep $small --top 7 --by $by >"$tmp/top.csv"
    "$spsim" sweep $small --top 7 --by $by --shard 0/3 >"$tmp/t0.csv"
    "$spsim" sweep $small --top 7 --by $by --shard 1/3 >"$tmp/t1.csv"
    "$spsim" sweep $small --top 7 --by $by --shard 2/3 >"$tmp/t2.csv"
    "$spsim" merge --top 7 --by $by "$tmp/t0.csv" "$tmp/t1.csv" "$tmp/t2.csv" >"$tmp/tm.csv"
    cmp -s "$tmp/tm.csv" "$tmp/top.csv" || fail "--top 7 --by $by merged differs"
    [ "$(wc -l <"$tmp/top.csv")" -eq 8 ] || fail "--top 7 --by $by: not 7 rows"
done
"$spsim" sweep $small --top 3 --format jsonl >"$tmp/top.jsonl"
"$spsim" merge --top 3 "$tmp/whole.jsonl" >"$tmp/tm.jsonl"
cmp -s "$tmp/tm.jsonl" "$tmp/top.jsonl" || fail "--top 3 of JSON Lines differs"

# --feasible-only keeps the rows that fit; the summary counts them.
"$spsim" sweep $small --feasible-only -o "$tmp/fit.csv" 2>/dev/null
col=$(head -1 "$tmp/whole.csv" | tr ',' '\n' | grep -n '^memory_fits$' | cut -d: -f1)
[ "$(tail -n +2 "$tmp/fit.csv" | cut -d, -f"$col" | sort -u)" = "true" ] || fail "--feasible-only kept a row that does not fit"
"$spsim" sweep $(echo "$small" | sed 's/--quiet//') -o "$tmp/x.csv" 2>"$tmp/err"
grep -qE '^spsim: sweep: [0-9]+ evaluated, [0-9]+ valid, [0-9]+ feasible, [0-9]+ written in' "$tmp/err" || fail "no summary line: $(cat "$tmp/err")"

# -o is atomic: a failed run leaves the old file whole and no temporary file.
echo "old" >"$tmp/keep.csv"
expect 2 "--tp" -- sweep --tp 0 -o "$tmp/keep.csv"
[ "$(cat "$tmp/keep.csv")" = "old" ] || fail "a failed sweep touched the output"
ls "$tmp" | grep -q '\.tmp\.' && fail "a temporary file was left behind"
expect 1 "cannot create a temporary file" -- sweep --tp 8 -o "$tmp/no/such/dir.csv"

# Optimize: a table of the best, the runner-up explained, rows on request.
"$spsim" optimize --model llama3-8b --hw dgx-h100 --gpus 16 --top 3 --threads 2 >"$tmp/opt" ||
    fail "optimize exits $?"
grep -q "^spsim optimize: llama3-8b on dgx-h100, 16 GPUs, global batch 16" "$tmp/opt" || fail "optimize header: $(head -2 "$tmp/opt")"
grep -qE "^  1 " "$tmp/opt" && grep -qE "^  3 " "$tmp/opt" || fail "optimize shows no 3 rows"
grep -qE "^#2 (trains .* fewer tokens per second than|ties with) #1" "$tmp/opt" ||
    fail "optimize explains nothing: $(cat "$tmp/opt")"
grep -q "^in every row: " "$tmp/opt" || fail "optimize names no shared setting: $(cat "$tmp/opt")"
"$spsim" optimize --model llama3-8b --hw dgx-h100 --gpus 16 --top 2 --format csv >"$tmp/opt.csv"
[ "$(wc -l <"$tmp/opt.csv")" -eq 3 ] || fail "optimize --format csv: not 2 rows"
# --threads: the same answer on any number of threads (only the search's counts differ).
"$spsim" optimize --model llama3-8b --hw dgx-h100 --gpus 64 --gbs 512 --top 8 --format csv \
    --threads 1 >"$tmp/opt1.csv" || fail "optimize --threads 1 exits $?"
"$spsim" optimize --model llama3-8b --hw dgx-h100 --gpus 64 --gbs 512 --top 8 --format csv \
    --threads 3 >"$tmp/opt3.csv" || fail "optimize --threads 3 exits $?"
cmp -s "$tmp/opt1.csv" "$tmp/opt3.csv" || fail "optimize --threads 3 answers otherwise than 1"
"$spsim" optimize --model llama3-8b --hw dgx-h100 --gpus 16 --max-memory-gib 30 >"$tmp/opt" ||
    fail "optimize with a memory limit exits $?"
grep -q "at most 30.00 GiB per GPU" "$tmp/opt" || fail "optimize ignores --max-memory-gib"

# --max-memory-gib: every row of the answer needs at most that, and the limit costs throughput.
"$spsim" optimize --model llama3-8b --hw dgx-h100 --gpus 16 --format jsonl >"$tmp/all" ||
    fail "optimize exits $?"
"$spsim" optimize --model llama3-8b --hw dgx-h100 --gpus 16 --max-memory-gib 12 --format jsonl \
    >"$tmp/lim" || fail "optimize --max-memory-gib 12 exits $?"
[ "$(wc -l <"$tmp/lim")" -eq 5 ] || fail "optimize --max-memory-gib 12: not 5 rows"
python3 -c '
import json, sys
lim = [json.loads(l) for l in open(sys.argv[1])]
allr = [json.loads(l) for l in open(sys.argv[2])]
assert all(r["memory_total_bytes"] <= 12 * 2**30 for r in lim), "a row above 12 GiB"
assert lim[0]["time_tokens_per_s"] < allr[0]["time_tokens_per_s"], "the limit costs nothing"
' "$tmp/lim" "$tmp/all" || fail "optimize ignores --max-memory-gib in its answer"

# At dp 1 the distributed optimizer and the overlaps do nothing: the best rows are still
# distinct configurations, no two with the same figures (aliases count once).
"$spsim" optimize --model llama3-8b --hw dgx-h100 --gpus 8 --tp 8 --top 5 --format jsonl \
    >"$tmp/dp1" || fail "optimize at dp 1 exits $?"
[ "$(cut -d, -f1 "$tmp/dp1" | wc -l)" -eq 5 ] || fail "optimize at dp 1: not 5 rows"
python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
figures = {(r["time_iteration_s"], r["memory_total_bytes"]) for r in rows}
assert len(figures) == len(rows), "two rows with the same figures"
' "$tmp/dp1" || fail "optimize at dp 1 repeats a configuration: $(cat "$tmp/dp1")"

# 126 layers on 16 stages: the even split is refused, account and balanced (7 + 14·8 + 7)
# answer; --max-gbs 2050 gives 2048 = 16·128·1.
"$spsim" sweep --model llama3-405b --hw dgx-h100 --gpus 16384 --tp 8 --pp 16 --vpp 1 \
    --pp-split even,account,balanced --max-gbs 2050 --distributed-optimizer on \
    --format jsonl >"$tmp/405.jsonl" 2>"$tmp/err" || fail "405B sweep exits $?"
[ "$(wc -l <"$tmp/405.jsonl")" -eq 2 ] || fail "405B sweep: not 2 rows: $(cat "$tmp/405.jsonl")"
grep -q '"first_stage_layers":7,"last_stage_layers":7' "$tmp/405.jsonl" ||
    fail "405B balanced split is not 7/7"
grep -q '"account_embedding":true,"account_loss":true' "$tmp/405.jsonl" || fail "no account row"
[ "$(grep -c '"gbs":2048' "$tmp/405.jsonl")" -eq 2 ] || fail "--max-gbs 2050 did not give 2048"
# DeepSeek-V3's 61 layers on 16 stages: no equal first/last pair exists (61 − 2f is odd, 14
# middle ranks), so the balanced split gives the last stage one layer fewer: 3 + 14·4 + 2.
"$spsim" sweep --model deepseek-v3 --hw dgx-h100 --tp 8 --sp on --etp 1 --ep 64 --pp 16 --dp 8 \
    --vpp 1 --gbs 1024 --pp-split balanced --format jsonl >"$tmp/ds.jsonl" 2>"$tmp/err" ||
    fail "deepseek-v3 balanced sweep exits $?: $(cat "$tmp/err")"
grep -q '"first_stage_layers":3,"last_stage_layers":2' "$tmp/ds.jsonl" ||
    fail "deepseek-v3 balanced split is not 3/2: $(cat "$tmp/ds.jsonl" "$tmp/err")"
expect 2 "axes 'gbs' and 'max_gbs' exclude each other" -- sweep --model llama3-8b --hw dgx-h100 \
    --gbs 8 --max-gbs 16

# Llama 3 405B on 16,384 H100: optimize answers.
"$spsim" optimize --model llama3-405b --hw dgx-h100 --gpus 16384 --max-gbs 2048 >"$tmp/405" ||
    fail "optimize llama3-405b on 16384 exits $?: $(cat "$tmp/405")"
grep -qE '^  1 ' "$tmp/405" || fail "optimize llama3-405b shows no row"

# Unset --pp/--vpp are derived per model as spsim query derives them: Llama 3 8B's 32 layers
# take pp 8 and no interleaving (8·3 does not divide 32), GPT-3 175B's 96 take pp 8, vpp 3;
# at pp 1 interleaving is off (Megatron refuses it there), and an explicit vpp 2 there is an
# invalid point, not a row. They were the paper's pp 8, vpp 3
# for every model, which left every Llama 3 8B row invalid.
"$spsim" sweep --model llama3-8b,gpt3-175b --quiet --columns model,pp,vpp >"$tmp/auto.csv" 2>"$tmp/err" ||
    fail "sweep with derived pp/vpp exits $? ($(cat "$tmp/err"))"
printf 'model,pp,vpp\nllama3-8b,8,1\ngpt3-175b,8,3\n' | cmp -s - "$tmp/auto.csv" ||
    fail "derived pp/vpp: got $(cat "$tmp/auto.csv")"
"$spsim" sweep --model gpt3-175b --pp 1,16 --vpp auto,2 --quiet --columns pp,vpp,time_iteration_s >"$tmp/auto.csv" 2>&1 ||
    fail "sweep --vpp auto,2 exits $?"
[ "$(cut -d, -f1,2 "$tmp/auto.csv" | tr '\n' ' ')" = "pp,vpp 1,1 16,3 16,2 " ] ||
    fail "--vpp auto at pp 1 and 16: got $(cat "$tmp/auto.csv")"
expect 2 "--vpp: 'automatic' is not an integer" -- sweep --vpp automatic
expect 2 "--tp: 'auto' is not an integer" -- sweep --tp auto
"$spsim" query --pp 1 >/dev/null 2>"$tmp/err" || fail "query --pp 1 (vpp unset) exits $? ($(cat "$tmp/err"))"

# Points that the model, tp, pp and vpp alone make invalid are skipped inside the vpp axis
# without evaluation; --show-invalid evaluates every point: both must keep the same rows
# (balanced splits are valid where the even one is not, so pp_split stops the skip).
space="--model gpt3-175b,llama3-8b --gpus 64,128 --tp 1..16 --pp 1..12 --vpp 1..5 --mbs 1,2 --gbs 128,256 --threads 1 --quiet"
for split in even even,balanced; do
    "$spsim" sweep $space --pp-split $split >"$tmp/skip.csv" 2>&1 || fail "skip sweep exits $?"
    "$spsim" sweep $space --pp-split $split --show-invalid >"$tmp/all.csv" 2>/dev/null ||
        fail "--show-invalid sweep exits $?"
    [ "$(wc -l <"$tmp/skip.csv")" -gt 100 ] || fail "skip sweep: only $(wc -l <"$tmp/skip.csv") rows"
    cmp -s "$tmp/skip.csv" "$tmp/all.csv" || fail "--pp-split $split: skipping changed the rows"
done

# The HSDP axis (num_distributed_optimizer_instances): each row, its hsdp columns named by
# --columns, equals the query of its configuration (Mixtral 8x7B at ep 8 on 32 GPUs, Megatron-FSDP
# level 3: R = 4 = edp leaves one expert replica a group); R = 8 breaks edp % R (invalid); the
# spec file's field; optimize shows the replicas in its sharding cell.
moe="--model mixtral-8x7b --hw dgx-h100 --tp 1 --pp 1 --dp 32 --ep 8 --gbs 32 --zero 3"
cols=hsdp_num_distributed_optimizer_instances,hsdp_expert_outer_reduce_wire_bytes_per_rank,memory_total_bytes,time_iteration_s
"$spsim" sweep $moe --sp off --num-distributed-optimizer-instances 1,2,4,8 --quiet --columns "$cols" \
    >"$tmp/hsdp.csv" 2>"$tmp/err" || fail "hsdp axis sweep: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/hsdp.csv")" -eq 4 ] || fail "hsdp axis: want 3 rows: $(cat "$tmp/hsdp.csv")"
tail -n +2 "$tmp/hsdp.csv" | while IFS=, read -r R bytes total iter; do
    "$spsim" query $moe --no-sp --num-distributed-optimizer-instances "$R" --format json 2>/dev/null |
        python3 -c "
import json, sys
d = json.load(sys.stdin)
h = d.get('hsdp', {'expert_outer_reduce_wire_bytes_per_rank': 0})
got = (h['expert_outer_reduce_wire_bytes_per_rank'], d['memory']['total_bytes'], repr(d['time']['iteration_s']))
sys.exit(got != ($bytes, $total, repr($iter)))" || echo "R=$R" >>"$tmp/hsdp.bad"
done
[ -s "$tmp/hsdp.bad" ] && fail "hsdp axis rows differ from query: $(cat "$tmp/hsdp.bad")"
printf '{"model": ["mixtral-8x7b"], "hw": ["dgx-h100"], "tp": [1], "pp": [1], "dp": [32], "ep": [8], "gbs": [32], "sp": ["off"], "zero": [3], "num_distributed_optimizer_instances": [2]}\n' >"$tmp/hsdp.json"
"$spsim" sweep --spec "$tmp/hsdp.json" --quiet --columns hsdp_num_distributed_optimizer_instances \
    >"$tmp/hsdp-spec.csv" 2>"$tmp/err" || fail "hsdp spec: $(cat "$tmp/err")"
[ "$(tail -1 "$tmp/hsdp-spec.csv")" = 2 ] || fail "hsdp spec: $(cat "$tmp/hsdp-spec.csv")"
expect 2 "--num-distributed-optimizer-instances: '0' is not an integer" -- sweep \
    --num-distributed-optimizer-instances 0
"$spsim" optimize --model mixtral-8x7b --hw dgx-h100 --gpus 32 --tp 2 --pp 1 --cp 1 --ep 8 --etp 1 \
    --gbs 32 --zero 3 --num-distributed-optimizer-instances 2 --recompute full --dtype bf16 \
    --mbs 1 --top 1 >"$tmp/hsdp-opt.txt" 2>"$tmp/err" || fail "hsdp optimize: $(cat "$tmp/err")"
grep -qF "fsdp-params+hsdp2" "$tmp/hsdp-opt.txt" || fail "hsdp optimize: $(cat "$tmp/hsdp-opt.txt")"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "all CLI sweep checks passed"
