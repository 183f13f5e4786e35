#!/usr/bin/env python3
"""scripts/functional_tests.py over Megatron-LM's DGX H100 functional-test cases: every case
with golden values is accounted for, without asserting any accuracy figure.

Runs the harness into temporary files and checks that each case of
tests/data/megatron-functional/cases.csv (counted here from the file) is a row, either
predicted (spsim's figures, the measured ones recomputed here from the golden file: the median
of iteration-time after its first value, the largest mem-max-allocated-bytes) or refused with
a reason; that the cases spsim states are many (the frictions of issue 24 stay fixed: no row is
refused for sinkhorn, the vocabulary padding, interleaved micro-batch groups or the uneven
pipeline flags); and that the written table lists every case.
Usage: functional_harness.py SPSIM SOURCE_ROOT
"""
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def main():
    spsim, root = sys.argv[1], sys.argv[2]
    data = os.path.join(root, "tests", "data", "megatron-functional")
    with open(os.path.join(data, "cases.csv"), newline="") as f:
        cases = list(csv.DictReader(f))
    with tempfile.TemporaryDirectory() as tmp:
        md, js = os.path.join(tmp, "ft.md"), os.path.join(tmp, "rows.json")
        runs = os.path.join(tmp, "runs.csv")
        p = subprocess.run([sys.executable, os.path.join(root, "scripts", "functional_tests.py"),
                            "--spsim", spsim, "--write", md, "--json", js, "--runs", runs],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"harness exit {p.returncode}: {p.stderr[-500:]}")
        rows = json.load(open(js))
        table = open(md).read()
        with open(runs) as f:
            run_rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    check(len(rows) == len(cases), f"{len(rows)} rows for {len(cases)} cases")
    by = {c["case"]: c for c in cases}
    stated = 0
    for r in rows:
        check(f"| {r['case']} |" in table, f"{r['case']} not in the table")
        if r["reason"] is not None:
            check(r["reason"].strip() != "", f"{r['case']}: empty reason")
            for friction in ("sinkhorn", "vocabulary padding", "interleaved schedule",
                             "account_embedding"):
                check(friction not in r["reason"], f"{r['case']}: refused for {friction}")
            continue
        stated += 1
        c = by[r["case"]]
        g = json.load(open(os.path.join(data, c["case"], c["golden"])))
        it = [v for v in g["iteration-time"]["values"].values() if isinstance(v, (int, float))]
        check(abs(r["measured_s"] - statistics.median(it[1:])) < 1e-12, f"{r['case']}: measured s")
        check(r["predicted_s"] > 0 and r["predicted_mem"] > 0, f"{r['case']}: no prediction")
        if "mem-max-allocated-bytes" in g:
            mem = max(g["mem-max-allocated-bytes"]["values"].values())
            check(r["measured_mem"] == mem, f"{r['case']}: measured memory")
    check(stated >= 80, f"only {stated} cases stated")
    # --runs: one calibrate --runs row per stated case, its args the case's file and GPUs.
    timed = {r["case"]: r for r in rows if r["reason"] is None and r["measured_s"]}
    check(len(run_rows) == len(timed), f"{len(run_rows)} runs for {len(timed)} timed cases")
    for run in run_rows:
        r = timed.get(run["id"][len("ftest "):])
        check(r is not None and float(run["measured_iteration_s"]) == r["measured_s"],
              f"run {run['id']}: measured time")
        words = run["args"].split()
        check(words[0] == "--megatron-args" and os.path.exists(os.path.join(root, words[1])) and
              r is not None and words[2:] == ["--gpus", str(r["gpus"])], f"run {run['id']}: args")
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        return 1
    print(f"functional harness: {len(rows)} cases, {stated} stated, each other refused with a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
