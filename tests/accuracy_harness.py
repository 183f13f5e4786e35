#!/usr/bin/env python3
"""scripts/accuracy.py over the development set: every published row is accounted for.

Runs the harness on tests/data/published-runs/megatron-bridge-nemo-rows.csv into temporary
files and checks, without asserting any accuracy figure, that each row is either predicted
(a figure from spsim, its error recomputed here) or carries a reason; that the counts add up
to the CSV's row count, counted here from the file itself; that the recipe settings line up
with the rows one to one; that one tabulated command line gives back its figure when run
again; and that a missing binary is refused. Usage: accuracy_harness.py SPSIM SOURCE_ROOT
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def csv_rows(path):
    """Records of the published CSV, counted two ways: the csv module, and lines (no cell
    holds a newline: every record is one line)."""
    with open(path, newline="") as f:
        text = f.read()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    rows = list(csv.reader(text.splitlines()))[1:]
    check(len(rows) == len(lines) - 1, f"csv records {len(rows)} != data lines {len(lines) - 1}")
    return rows, rows and lines[0].split(",")


def run_harness(spsim, root, tmp):
    md, js = os.path.join(tmp, "accuracy.md"), os.path.join(tmp, "rows.jsonl")
    p = subprocess.run([sys.executable, os.path.join(root, "scripts", "accuracy.py"), "--spsim", spsim,
                        "--write", md, "--json", js], capture_output=True, text=True, timeout=900)
    check(p.returncode == 0, f"harness exit {p.returncode}: {p.stderr.strip()}")
    check(p.stdout == "", "harness wrote to standard output with --write")
    with open(md) as f:
        text = f.read()
    with open(js) as f:
        records = [json.loads(ln) for ln in f if ln.strip()]
    return text, records


def check_records(records, rows, header):
    check(len(records) == len(rows), f"{len(records)} results for {len(rows)} rows")
    tok = header.index("Tokens / sec / GPU")
    predicted = 0
    for i, (r, row) in enumerate(zip(records, rows)):
        has_figure = isinstance(r.get("tokens"), (int, float)) and r["tokens"] > 0
        has_reason = bool(r.get("reason"))
        check(has_figure != has_reason, f"row {i + 2}: exactly one of a prediction and a reason")
        if has_figure:
            predicted += 1
            pub = float(re.match(r"[\d.]+", row[tok]).group(0))
            check(abs(r["err_tokens"] - (r["tokens"] / pub - 1)) < 1e-12, f"row {i + 2}: error recomputed")
            check(r["argv"][0] == "query" and "--format" in r["argv"], f"row {i + 2}: a query command")
    return predicted


def check_markdown(text, n, predicted):
    m = re.search(r"^(\d+) published rows: (\d+) predicted, (\d+) not expressible", text, re.M)
    check(m is not None, "summary line present")
    if m:
        total, pred, skipped = map(int, m.groups())
        check(total == n, f"summary says {total} rows, the CSV has {n}")
        check(pred == predicted, f"summary says {pred} predicted, the results have {predicted}")
        check(pred + skipped == n, f"{pred} + {skipped} != {n}")
        section = text.split("## Not expressible", 1)[-1].split("<details>", 1)[0]
        counts = [int(c) for c in re.findall(r"^\| .* \| (\d+) \|$", section, re.M)]
        check(sum(counts) == skipped, f"reason counts add to {sum(counts)}, not {skipped}")
    for heading in ("## Summary", "## Paper figures", "## Model FLOPs", "## Not expressible",
                    "No constant of spsim was set from these rows"):
        check(heading in text, f"'{heading}' in the report")


def check_settings(root, rows, header):
    with open(os.path.join(root, "tests", "data", "published-runs", "recipe-settings.csv"), newline="") as f:
        settings = list(csv.DictReader(f))
    check(len(settings) == len(rows), f"{len(settings)} recipe-settings lines for {len(rows)} rows")
    cols = [header.index(c) for c in ("container", "system", "model", "#-GPUs")]
    for i, (s, row) in enumerate(zip(settings, rows)):
        got = (s["container"], s["system"], s["model"], s["gpus"])
        check(got == tuple(row[c] for c in cols), f"recipe-settings line {i + 2} is not row {i + 2}")


def check_nemo_2407(records):
    """NeMo-Framework-Launcher 24.07's optimizer settings reach the rows (scripts/accuracy.py
    nemo_2407_optimizer_args): bf16 gradients for GPT-3, fp32 for Nemotron-8B, the 70B SFT
    example's VP 20 and FP8 parameters."""
    seen = 0
    for r in records:
        row, argv = r["row"], r.get("argv") or []
        if row["container"] != "24.07":
            continue
        if row["model"] == "GPT3-175B" or row["model"] == "Nemotron-8B":
            seen += 1
            bf16 = "--grad-reduce-in-bf16" in argv
            check(bf16 == (row["model"] == "GPT3-175B"), f"24.07 {row['model']}: bf16 gradients {bf16}")
        if row["model"] == "LLAMA2-70B" and row["task"] == "Fine-Tuning SFT":
            seen += 1
            check(argv[argv.index("--vpp") + 1] == "20" and "--fp8-param-gather" in argv,
                  f"24.07 LLAMA2-70B SFT: the example's VP 20 and FP8 parameters in {argv}")
    check(seen == 4, f"{seen} of the 4 NeMo 24.07 rows checked")


def check_rerun(spsim, root, records):
    """One tabulated command line (a prediction, else an approximation) run again by hand."""
    for r in records:
        fig = r if r.get("tokens") else r.get("approx")
        if fig:
            env = dict(os.environ, SPSIM_DATA_DIR=root)
            p = subprocess.run([spsim] + fig["argv"], capture_output=True, text=True, env=env)
            check(p.returncode == 0, f"rerun of {fig['argv']}: exit {p.returncode}")
            if p.returncode == 0:
                got = json.loads(p.stdout)["time"]["tokens_per_s_per_gpu"]
                check(got == fig["tokens"], f"rerun gives {got}, the table {fig['tokens']}")
            return
    print("no row ran (nothing to rerun)")


def main():
    spsim, root = sys.argv[1], sys.argv[2]
    rows, header = csv_rows(os.path.join(root, "tests", "data", "published-runs", "megatron-bridge-nemo-rows.csv"))
    check(len(rows) > 0, "rows in the development set")
    with tempfile.TemporaryDirectory() as tmp:
        text, records = run_harness(spsim, root, tmp)
        predicted = check_records(records, rows, header)
        check_markdown(text, len(rows), predicted)
        check_settings(root, rows, header)
        check_nemo_2407(records)
        check_rerun(spsim, root, records)
        missing = os.path.join(tmp, "no-such-spsim")
        p = subprocess.run([sys.executable, os.path.join(root, "scripts", "accuracy.py"), "--spsim", missing],
                           capture_output=True, text=True)
        check(p.returncode == 2 and p.stderr.count("\n") == 1 and "no-such-spsim" in p.stderr,
              f"a missing spsim: exit {p.returncode}, {p.stderr!r}")
    print(f"{len(rows)} rows: {predicted} predicted, {len(rows) - predicted} with a reason")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
