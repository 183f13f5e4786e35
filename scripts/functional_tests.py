#!/usr/bin/env python3
"""spsim against Megatron-LM's functional tests measured on DGX H100 (development data).

Every case of tests/data/megatron-functional/cases.csv (each Megatron-LM functional-test case
with a golden_values_dev_dgx_h100.json at NVIDIA/Megatron-LM d98e8a64) is run as
`spsim query --megatron-args CASE/model_config.yaml --gpus N --hw dgx-h100 --format json`, N
the GPU count its CI recipe runs it on, and its predicted iteration time and peak memory are
tabulated against the golden values' `iteration-time` and `mem-max-allocated-bytes`.  A case
spsim cannot state is listed with the reason: the harness's (not a GPT training run, no GPU
count, no iteration time) or spsim's own one-line error.

Measured iteration time: the median of the golden `iteration-time` values after the first.
The first value covers the process's first iteration (training.py training_log: the
'interval-time' timer is not reset after the first iteration, so the first value written
averages it in; it holds CUDA/NCCL initialisation, the first allocations and the optimizer
state's creation); the median keeps checkpoint saves and other stragglers out.
Measured memory: the largest `mem-max-allocated-bytes` (torch.cuda.memory_stats()
allocated_bytes.all.peak of the last rank, world_size - 1, the only one with a TensorBoard
writer: global_vars.py _set_tensorboard_writer), against spsim's last pipeline stage.

No constant in spsim is set from these cases. `--runs FILE` writes the stated cases as measured
runs for `spsim calibrate --runs` (its CSV: the case's --megatron-args and --gpus as args, run
from the repository's root; its group the model folder, layer count and width), development
data a calibration may be fitted to (doc/calibration.md says what such a fit gives).
Python 3 standard library only.

Usage: scripts/functional_tests.py [--spsim PATH] [--write FILE] [--json FILE] [--runs FILE]
"""

import argparse
import csv
import io
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
DATA = os.path.join(ROOT, "tests", "data", "megatron-functional")
HARDWARE = "dgx-h100"

# The training scripts of the CI recipes (tests/test_utils/recipes/h100/*.yaml) and what spsim
# makes of them: pretrain_gpt.py trains a decoder-only GPT (dense or MoE), pretrain_hybrid.py a
# hybrid of Mamba-2, attention and MLP layers (--hybrid-layer-pattern), both as spsim models them.
SCRIPTS = {
    "pretrain_gpt.py": None,
    "pretrain_hybrid.py": None,
    "examples/bert/pretrain_bert.py": "BERT (encoder with a binary head, pretrain_bert.py) is not modelled",
    "examples/t5/pretrain_t5.py": "T5 (encoder-decoder, pretrain_t5.py) is not modelled",
    "megatron/elastification/pretrain_hybrid_flex.py": "hybrid Mamba models (Flextron) are not modelled",
    "./examples/mimo/train.py": "multimodal MIMO training (examples/mimo/train.py) is not modelled",
    "pretrain_vlm.py": "LLaVA vision-language training (pretrain_vlm.py) is not modelled",
    "train_rl.py": "reinforcement learning (GRPO, train_rl.py: generation between steps) is not modelled",
}
# Model folders whose recipe names no script at this commit (no recipe lists the case).
FOLDER_SCRIPT = {"bert": "examples/bert/pretrain_bert.py", "t5": "examples/t5/pretrain_t5.py",
                 "hybrid": "pretrain_hybrid.py", "mimo": "./examples/mimo/train.py",
                 "multimodal-llava": "pretrain_vlm.py"}


def read_cases():
    with open(os.path.join(DATA, "cases.csv"), newline="") as f:
        return list(csv.DictReader(f))


def harness_reason(case):
    """Why the harness cannot run a case, or None."""
    if case["iteration_time"] != "yes":
        return "no iteration-time in its golden values (an inference or gradient-check test)"
    script = case["script"] or FOLDER_SCRIPT.get(case["case"].split("/")[0], "pretrain_gpt.py")
    if "grpo" in case["case"]:
        script = "train_rl.py"
    why = SCRIPTS.get(script, f"training script {script} is not modelled")
    if why:
        return why
    if not case["gpus_per_node"]:
        return ("no GPU count: no CI recipe at the pinned commit runs this case "
                f"(TEST_TYPE {case['test_type']})")
    return None


def numbers(series):
    vals = []
    for k in sorted(series["values"], key=int):
        v = series["values"][k]
        if isinstance(v, (int, float)) and v == v:
            vals.append(v)
    return vals


def measured(case):
    with open(os.path.join(DATA, case["case"], case["golden"])) as f:
        g = json.load(f)
    times = numbers(g["iteration-time"])[1:]
    mem = numbers(g["mem-max-allocated-bytes"]) if "mem-max-allocated-bytes" in g else []
    return (statistics.median(times) if times else None, len(times),
            max(mem) if mem else None)


def last_stage_bytes(memory):
    """The last pipeline stage's tensors: its activations, and its parameters' weights,
    gradients and optimizer state at the peak stage's bytes per parameter."""
    per_param = memory["weights_bytes"] + memory["gradients_bytes"] + memory["optimizer_bytes"]
    params = memory["parameters_per_gpu"]
    scale = memory["parameters_last_stage"] / params if params else 1.0
    return memory["activation_last_stage_bytes"] + per_param * scale


def run_case(spsim, case):
    gpus = int(case["nodes"]) * int(case["gpus_per_node"])
    cfg = os.path.join(DATA, case["case"], "model_config.yaml")
    cmd = [spsim, "query", "--megatron-args", cfg, "--gpus", str(gpus), "--hw", HARDWARE,
           "--format", "json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        err = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
        return None, err.replace("spsim: error: ", "").replace(cfg + ":", "line ")
    return json.loads(p.stdout), None


def pct(pred, meas):
    return 100.0 * (pred - meas) / meas


def config_rel(case):
    return os.path.join("tests", "data", "megatron-functional", case["case"], "model_config.yaml")


def case_group(case):
    """The cross-validation group: the model folder and the case's layer count and width (the
    model family of a functional test: gpt 12x512, gpt 32x4096, moe ..., hybrid ...)."""
    text = open(os.path.join(ROOT, config_rel(case))).read()
    dims = []
    for flag in ("--num-layers", "--hidden-size"):
        m = re.search(r"^\s*" + re.escape(flag) + r":\s*(\d+)", text, re.M)
        dims.append(m.group(1) if m else "?")
    if dims[0] == "?" and "hybrid" in case["case"]:
        m = re.search(r"^\s*--hybrid-(?:layer|override)-pattern:\s*(\S+)", text, re.M)
        dims[0] = str(len(m.group(1).split("/")[0].replace("|", ""))) if m else "?"
    return f"ftest {case['case'].split('/')[0]} {dims[0]}x{dims[1]}"


def run_id(row):
    return "ftest " + row["case"]


def write_runs(rows, cases, path):
    """The stated cases with a measured time as spsim calibrate --runs's CSV (paths from the
    repository's root, where scripts/fit_profiles.sh runs it)."""
    by = {c["case"]: c for c in cases}
    buf = io.StringIO()
    buf.write(f"# Measured runs of Megatron-LM's functional tests on {HARDWARE}: written by "
              "scripts/functional_tests.py --runs from tests/data/megatron-functional (the median "
              "iteration-time after the first value); do not edit.\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["hw", "measured_iteration_s", "id", "group", "args"])
    for r in rows:
        if r["reason"] is None and r.get("measured_s"):
            c = by[r["case"]]
            w.writerow([HARDWARE, repr(r["measured_s"]), run_id(r), case_group(c),
                        f"--megatron-args {config_rel(c)} --gpus {r['gpus']}"])
    write_atomic(path, buf.getvalue())


def write_atomic(path, text):
    """Write through a temporary file renamed over `path`: a failure leaves the old file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def evaluate(spsim):
    rows = []
    for case in read_cases():
        row = {"case": case["case"], "gpus": None, "reason": harness_reason(case)}
        if row["reason"] is None:
            row["gpus"] = int(case["nodes"]) * int(case["gpus_per_node"])
            row["gpus_from"] = case["gpus_from"]
            t, n, mem = measured(case)
            row.update(measured_s=t, measured_n=n, measured_mem=mem)
            res, err = run_case(spsim, case)
            if err:
                row["reason"] = err
            else:
                c = res["config"]
                row["config"] = (f"tp{c['tp']} pp{c['pp']} dp{c['dp']} cp{c['cp']} vpp{c['vpp']}"
                                 + (f" ep{c['ep']}" if c.get("ep", 1) > 1 else "")
                                 + f" mbs{c['mbs']} gbs{c['gbs']} seq{c['seq']}")
                row["predicted_s"] = res["time"]["iteration_s"]
                row["predicted_mem"] = last_stage_bytes(res["memory"])
                row["predicted_peak_mem"] = res["memory"]["total_bytes"]
                row["time_err"] = pct(row["predicted_s"], t) if t else None
                row["mem_err"] = pct(row["predicted_mem"], mem) if mem else None
        rows.append(row)
    return rows


def summary(rows):
    ok = [r for r in rows if r["reason"] is None]
    lines = [f"{len(rows)} cases with DGX H100 golden values: {len(ok)} expressible, "
             f"{len(rows) - len(ok)} refused (each with its reason below)."]
    te = [r["time_err"] for r in ok if r.get("time_err") is not None]
    me = [r["mem_err"] for r in ok if r.get("mem_err") is not None]
    if te:
        lines.append(f"Iteration time: mean error {statistics.mean(te):+.1f} %, mean |error| "
                     f"{statistics.mean(abs(e) for e in te):.1f} %, median |error| "
                     f"{statistics.median(abs(e) for e in te):.1f} % over {len(te)} cases "
                     f"({sum(e < 0 for e in te)} predicted too fast).")
    if me:
        lines.append(f"Peak memory (last stage): mean error {statistics.mean(me):+.1f} %, median "
                     f"|error| {statistics.median(abs(e) for e in me):.1f} % over {len(me)} cases.")
    return lines


def gib(b):
    return f"{b / 2**30:.2f}"


def markdown(rows):
    out = ["# spsim against Megatron-LM's functional tests on DGX H100", "",
           "Generated by `scripts/functional_tests.py --write doc/functional-tests.md` from",
           "`tests/data/megatron-functional/` (Megatron-LM d98e8a64: each case's `model_config.yaml`",
           "and `golden_values_dev_dgx_h100.json`; README there). Development data for the time and",
           "memory models: nothing in spsim is set from these figures (`--runs FILE` writes the",
           "stated cases as `spsim calibrate --runs` input; see doc/calibration.md).", "",
           "How each case is run: `spsim query --megatron-args CASE/model_config.yaml --gpus N --hw",
           "dgx-h100`, N = nodes × GPUs per node of the CI recipe that runs the case (column",
           "`GPUs`; `default`: no recipe at the pinned commit lists the case, and",
           "`_run_training.sh`'s defaults, 8 GPUs on 1 node, are taken). Measured time: the median",
           "`iteration-time` after the first value (which averages in the process's first",
           "iteration). Measured memory: the largest `mem-max-allocated-bytes`, the PyTorch",
           "allocator's peak on the last rank (the only one with a TensorBoard writer), against",
           "spsim's last pipeline stage (its activations plus its parameters at the peak stage's",
           "bytes per parameter); spsim's peak stage is beside it.", "",
           "Not modelled for every case (the CI's own settings): `_run_training.sh` exports",
           "NCCL_ALGO=Ring (unless the case sets it), NCCL_PROTO=simple and NCCL_NVLS_ENABLE=0,",
           "which spsim's NCCL tuning does not take; `--deterministic-mode`, ENV_VARS and the other",
           "flags spsim lists as not modelled are left out of its figures.", ""]
    out += summary(rows) + [""]
    out += ["| case | GPUs | configuration | measured s | spsim s | time err | measured GiB | "
            "spsim last stage GiB | mem err | spsim peak stage GiB |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["reason"] is not None:
            continue
        te = f"{r['time_err']:+.1f} %" if r.get("time_err") is not None else "—"
        me = f"{r['mem_err']:+.1f} %" if r.get("mem_err") is not None else "—"
        ms = f"{r['measured_s']:.4f}" if r["measured_s"] else "—"
        mm = gib(r["measured_mem"]) if r["measured_mem"] else "—"
        g = f"{r['gpus']}" + (" default" if r["gpus_from"] == "default" else "")
        out.append(f"| {r['case']} | {g} | {r['config']} | {ms} | {r['predicted_s']:.4f} | {te} | "
                   f"{mm} | {gib(r['predicted_mem'])} | {me} | {gib(r['predicted_peak_mem'])} |")
    out += ["", "## Refused", "", "| case | reason |", "|---|---|"]
    for r in rows:
        if r["reason"] is not None:
            out.append(f"| {r['case']} | {r['reason'].replace('|', '/')} |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spsim", default=os.path.join(ROOT, "build", "src", "cli", "spsim"))
    ap.add_argument("--write", help="write the Markdown table to FILE")
    ap.add_argument("--json", help="write the rows as JSON to FILE")
    ap.add_argument("--runs", help="write the stated cases as spsim calibrate --runs's CSV to FILE")
    args = ap.parse_args()
    rows = evaluate(args.spsim)
    if args.runs:
        write_runs(rows, read_cases(), args.runs)
    text = markdown(rows)
    if args.write:
        write_atomic(args.write, text)
    else:
        sys.stdout.write(text)
    if args.json:
        write_atomic(args.json, json.dumps(rows, indent=1))
    for line in summary(rows):
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
