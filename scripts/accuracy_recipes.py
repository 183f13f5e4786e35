#!/usr/bin/env python3
"""Read the settings each published Megatron-Bridge row ran with from the recipes.

Writes tests/data/published-runs/recipe-settings.csv (one line per row of
megatron-bridge-nemo-rows.csv) from a Megatron-Bridge git mirror.  For every row it
reads, at the commit that published the row's container (CONTAINER_COMMITS), the
workload presets of scripts/performance/configs/<family>/*_workload_base_configs.py
and the per-GPU builder of *_llm_pretrain.py, and keeps the preset whose parallel
mapping matches the row (V1/V2 variants differ in it).  Nothing is imported from
Megatron-Bridge: the preset files are plain `replace(BASE, field=value)` literals,
evaluated here against the WorkloadBaseConfig dataclass defaults read from
utils/utils.py at the same commit; the builders are scanned (ast) for the
assignments that set the TP overlap, the MoE dispatcher and the parameter-gather
overlap, with `if precision == ...` branches resolved for the row's precision.

Needs the mirror (not in CI); the CSV it writes is committed.  Python 3 stdlib only.
Usage: scripts/accuracy_recipes.py --mirror DIR [-o FILE]
"""

import argparse
import ast
import csv
import dataclasses
import io
import os
import subprocess
import sys
import typing

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = os.path.join(HERE, "..", "tests", "data", "published-runs", "megatron-bridge-nemo-rows.csv")
OUT = os.path.join(HERE, "..", "tests", "data", "published-runs", "recipe-settings.csv")

# The commit of docs/performance-summary.md that published each container's table
# (git log -- docs/performance-summary.md).  25.09's recipes were YAML perf matrices
# without the recompute/offload presets: the first Python presets (5776a6d90, two
# months later) are read instead.  The legacy presets were deleted in c8327cfc2
# (2026-07-08), before the 26.06.01 and 26.08 tables: its parent is read for those.
CONTAINER_COMMITS = {
    "25.09": ("5776a6d90", "25.09 published at fa0315ae2 (YAML perf matrix); presets of 5776a6d90 read"),
    "25.11": ("5776a6d90", "25.11 summary, 5776a6d90"),
    "26.02": ("c0b9a0003", "26.02 summary, c0b9a0003"),
    "26.02.01": ("cfeddcd94", "26.02 patch summary, cfeddcd94"),
    "26.04": ("74695a06d", "26.04 summary, 74695a06d"),
    "26.04.01": ("21d102f5e", "26.04.01 summary, 21d102f5e"),
    "26.06": ("8f341b04f", "26.06 summary (last of its three commits), 8f341b04f"),
    "26.06.01": ("c8327cfc2^", "26.06.01 published at 381d0b825 after the presets were removed; c8327cfc2^ read"),
    "26.08": ("c8327cfc2^", "26.08 published at 4ab94dfad after the presets were removed; c8327cfc2^ read"),
}

# Table model name -> (preset family directory, preset name prefix).
MODELS = {
    "LLAMA3_8B": ("llama", "LLAMA3_8B"),
    "LLAMA3_70B": ("llama", "LLAMA3_70B"),
    "LLAMA3.1_405B": ("llama", "LLAMA31_405B"),
    "Qwen3_30B_a3B": ("qwen", "QWEN3_30B_A3B"),
    "Qwen3_30B_a3B (tokendrop)": ("qwen", "QWEN3_30B_A3B"),
    "Qwen3_235B_a22B": ("qwen", "QWEN3_235B_A22B"),
    "Qwen3_235B_a22B (tokendrop)": ("qwen", "QWEN3_235B_A22B"),
    "DeepSeekV3": ("deepseek", "DEEPSEEK_V3"),
    "DeepSeekV3 (tokendrop)": ("deepseek", "DEEPSEEK_V3"),
    "DeepSeekV3 (dropless)": ("deepseek", "DEEPSEEK_V3"),
    "DeepSeekV3 (w/o MTP)": ("deepseek", "DEEPSEEK_V3"),
    "DeepSeekV3 (w/ MTP)": ("deepseek", "DEEPSEEK_V3"),
    "GPT OSS 120B": ("gpt_oss", "GPT_OSS_120B"),
    "Kimi_K2": ("kimi", "KIMI_K2"),
    "Nemotron_3_Nano": ("nemotronh", "NEMOTRON_3_NANO"),
    "Nemotron_3_Super": ("nemotronh", "NEMOTRON_3_SUPER"),
}

# Table precision -> the builders' `precision` argument (utils/precision.py names).
# 25.09 has no precision column: its unparenthesized cell is the FP8-CS run (README 1.0.1).
PRECISIONS = {
    "BF16": "bf16",
    "FP8": "fp8_cs",
    "FP8-CS": "fp8_cs",
    "FP8-CS (FP8-MX)": "fp8_cs",
    "": "fp8_cs",
    "FP8-MX": "fp8_mx",
    "MXFP8": "fp8_mx",
    "NVFP4": "nvfp4",
}

FIELDS = [
    "container", "task", "system", "model", "precision", "gpus", "recipe_commit", "recipe_file",
    "config_name", "match", "recipe_tp", "recipe_pp", "recipe_cp", "recipe_vp", "recipe_ep",
    "recipe_mbs", "recipe_gbs", "use_megatron_fsdp", "etp", "recompute_num_layers",
    "recompute_modules", "cpu_offloading_num_layers", "cuda_graph_impl", "cuda_graph_scope",
    "moe_token_dispatcher_type", "moe_flex_dispatcher_backend", "moe_a2a_overlap",
    "tp_comm_overlap", "overlap_param_gather", "grad_reduce_in_fp32", "account_embedding",
    "account_loss", "pp_layout", "fp8_param_gather", "note",
]


def git_show(mirror, commit, path):
    r = subprocess.run(["git", "-C", mirror, "show", f"{commit}:{path}"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def git_ls(mirror, commit):
    r = subprocess.run(["git", "-C", mirror, "ls-tree", "-r", "--name-only", commit],
                       capture_output=True, text=True, check=True)
    return r.stdout.split()


def base_config_class(src):
    """The WorkloadBaseConfig dataclass, rebuilt from utils/utils.py's class body."""
    tree = ast.parse(src)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "WorkloadBaseConfig")
    cls.body = [n for n in cls.body if isinstance(n, ast.AnnAssign)]
    cls.decorator_list = []
    mod = ast.Module(body=[cls], type_ignores=[])
    ns = {"Optional": typing.Optional, "List": typing.List, "Dict": typing.Dict,
          "Union": typing.Union, "Any": typing.Any}
    exec(compile(mod, "WorkloadBaseConfig", "exec"), ns)
    return dataclasses.dataclass(ns["WorkloadBaseConfig"])


def presets(src, base_cls):
    """Evaluate a *_workload_base_configs.py: assignments of replace(...) / constructor calls."""
    tree = ast.parse(src)
    ns = {"WorkloadBaseConfig": base_cls, "replace": dataclasses.replace}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            try:
                exec(compile(ast.Module(body=[node], type_ignores=[]), "preset", "exec"), ns)
            except Exception:  # a preset built from something not read here: skipped
                pass
    return {k: v for k, v in ns.items() if isinstance(v, base_cls)}


def attr_path(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def precision_test(test, precision):
    """True/False for `precision == "x"`, `precision in (...)`, their negations; None otherwise."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        v = precision_test(test.operand, precision)
        return None if v is None else not v
    if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "precision"
            and len(test.ops) == 1):
        return None
    try:
        rhs = ast.literal_eval(test.comparators[0])
    except ValueError:
        return None
    op = test.ops[0]
    if isinstance(op, (ast.Eq, ast.NotEq)):
        return (precision == rhs) == isinstance(op, ast.Eq)
    if isinstance(op, (ast.In, ast.NotIn)):
        return (precision in rhs) == isinstance(op, ast.In)
    return None


KEYS = {
    "cfg.comm_overlap.tp_comm_overlap": "tp_comm_overlap",
    "cfg.model.moe_token_dispatcher_type": "moe_token_dispatcher_type",
    "cfg.ddp.overlap_param_gather": "overlap_param_gather",
    "cfg.ddp.grad_reduce_in_fp32": "grad_reduce_in_fp32",
    "cfg.model.account_for_embedding_in_pipeline_split": "account_embedding",
    "cfg.model.account_for_loss_in_pipeline_split": "account_loss",
    "cfg.mixed_precision.fp8_param_gather": "fp8_param_gather",
    "cfg.model.fp8_param_gather": "fp8_param_gather",
    "precision_config.fp8_param_gather": "fp8_param_gather",
}


def value_of(node, precision, prev):
    if isinstance(node, ast.IfExp):
        t = precision_test(node.test, precision)
        if t is None:
            return prev
        return value_of(node.body if t else node.orelse, precision, prev)
    try:
        return ast.literal_eval(node)
    except ValueError:
        return prev


def scan(body, precision, funcs, out):
    """The settings a builder assigns, following `if precision` branches and local helpers."""
    for st in body:
        if isinstance(st, ast.If):
            t = precision_test(st.test, precision)
            if t is not None:
                scan(st.body if t else st.orelse, precision, funcs, out)
        elif isinstance(st, ast.Assign) and len(st.targets) == 1:
            path = attr_path(st.targets[0])
            if path == "cfg.comm_overlap" and isinstance(st.value, ast.Call):
                for kw in st.value.keywords:
                    if kw.arg == "tp_comm_overlap":
                        out["tp_comm_overlap"] = value_of(kw.value, precision, None)
            elif path in KEYS:
                out[KEYS[path]] = value_of(st.value, precision, out.get(KEYS[path]))
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            name = attr_path(st.value.func)
            if name in funcs:
                scan(funcs[name].body, precision, funcs, out)


# What the library recipe sets before the perf builder runs, where the builder only
# amends it: src/megatron/bridge/recipes/llama/llama3.py builds the 70B and 405B
# pretrain configs with CommOverlapConfig(tp_comm_overlap=True) (userbuffers), and the
# 405B one with account_for_embedding/loss_in_pipeline_split = True (126 + 2 layers split);
# src/megatron/bridge/recipes/qwen/qwen3_moe.py qwen3_235b_a22b_pretrain_config sets the same
# (94 + 2 layers split) at every commit the Qwen3-235B rows read (5776a6d90 to 8f341b04f).
LIBRARY_DEFAULTS = {
    "LLAMA3_70B": {"tp_comm_overlap": True},
    "LLAMA31_405B": {"tp_comm_overlap": True, "account_embedding": True, "account_loss": True},
    "QWEN3_235B_A22B": {"account_embedding": True, "account_loss": True},
}


# The MoE token dispatcher before the builder amends it: the model providers' default
# "alltoall" (deepseek_provider.py, qwen_provider.py, gpt_oss_provider.py), made "flex" by
# apply_flex_dispatcher_backend (training/flex_dispatcher_backend.py) where the preset names a
# backend the GPU supports: DeepEP on Ampere, Hopper, B200 and B300; HybridEP on compute
# capability 8, 9 and 10 (every system of the tables). Elsewhere the backend is skipped.
FLEX_GPUS = {"deepep": ("H100", "B200", "B300"), "hybridep": ("H100", "B200", "B300", "GB200", "GB300")}
MOE_FAMILIES = ("deepseek", "qwen", "gpt_oss", "kimi", "nemotronh")


def dispatcher_default(family, gpu, backend):
    if family not in MOE_FAMILIES:
        return {}
    if backend and gpu in FLEX_GPUS.get(backend, ()):
        return {"moe_token_dispatcher_type": "flex"}
    return {"moe_token_dispatcher_type": "alltoall", "moe_flex_dispatcher_backend": None}


def builder_settings(src, fn_name, precision, prefix, start):
    if src is None:
        return None
    tree = ast.parse(src)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if fn_name not in funcs:
        return None
    out = dict(LIBRARY_DEFAULTS.get(prefix, {}), **start)
    scan(funcs[fn_name].body, precision, funcs, out)
    return out


def precision_settings(mirror, commit, precision):
    """What scripts/performance/utils/precision.py get_precision_config(precision) returns, of
    the fields read here: fp8_param_gather, as the training/mixed_precision.py function that
    branch calls sets it (MixedPrecisionConfig's default False where it does not), then as the
    branch itself amends it."""
    out = {"fp8_param_gather": False}
    src = git_show(mirror, commit, "scripts/performance/utils/precision.py")
    lib = git_show(mirror, commit, "src/megatron/bridge/training/mixed_precision.py")
    if src is None or lib is None:
        return out
    funcs = {n.name: n for n in ast.parse(lib).body if isinstance(n, ast.FunctionDef)}
    fn = next((n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef)
               and n.name == "get_precision_config"), None)
    body = fn.body if fn else []
    while body:
        st = next((b for b in body if isinstance(b, ast.If)), None)
        if st is None:
            return out
        t = st.test
        if (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and len(t.ops) == 1
                and isinstance(t.ops[0], ast.Eq) and ast.literal_eval(t.comparators[0]) == precision):
            break
        body = st.orelse
    else:
        return out
    for node in ast.walk(ast.Module(body=st.body, type_ignores=[])):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in funcs:
            for a in ast.walk(funcs[node.func.id]):
                if (isinstance(a, ast.Assign) and len(a.targets) == 1
                        and attr_path(a.targets[0]) == "cfg.fp8_param_gather"):
                    out["fp8_param_gather"] = value_of(a.value, precision, False)
    for a in st.body:
        if (isinstance(a, ast.Assign) and len(a.targets) == 1
                and attr_path(a.targets[0]).endswith(".fp8_param_gather")):
            out["fp8_param_gather"] = value_of(a.value, precision, out["fp8_param_gather"])
    return out


def first(cell):
    """The unparenthesized value of a cell ("4 (2)" -> "4"; footnote markers dropped)."""
    return cell.split("(")[0].split("[")[0].strip()


def as_int(cell, default):
    v = first(cell)
    return int(v) if v.isdigit() else default


class Mirror:
    def __init__(self, path):
        self.path = path
        self.cache = {}

    def family(self, commit, family):
        key = (commit, family)
        if key not in self.cache:
            files = [f for f in git_ls(self.path, commit) if f.startswith(f"scripts/performance/configs/{family}/")]
            utils_src = git_show(self.path, commit, "scripts/performance/utils/utils.py")
            cls = base_config_class(utils_src)
            found, builders = {}, {}
            for f in files:
                if f.endswith("_workload_base_configs.py"):
                    for name, p in presets(git_show(self.path, commit, f), cls).items():
                        found[name] = (f, p)
                elif f.endswith("_llm_pretrain.py"):
                    builders[f] = git_show(self.path, commit, f)
            self.cache[key] = (found, builders)
        return self.cache[key]


def row_wants(row):
    return {
        "tensor_model_parallel_size": as_int(row["TP"], 1),
        "pipeline_model_parallel_size": as_int(row["PP"], 1),
        "context_parallel_size": as_int(row["CP"], 1),
        "virtual_pipeline_model_parallel_size": as_int(row["VP"], None),
        "expert_model_parallel_size": as_int(row["EP"], 1),
        "micro_batch_size": as_int(row["MBS"], 1),
        "global_batch_size": as_int(row["GBS"], 1),
    }


def best_preset(found, stem, row):
    want = row_wants(row)
    best = None
    for name in sorted(found):
        if not (name == stem or name.startswith(stem + "_")):
            continue
        f, p = found[name]
        diffs = []
        for k, v in want.items():
            got = getattr(p, k)
            if k == "virtual_pipeline_model_parallel_size" and got in (None, 1) and v in (None, 1):
                continue
            if got != v:
                diffs.append(f"{k.split('_')[0]} {got} (row {v})")
        fsdp = (as_int(row["FSDP"], 0) or 0) > 0
        if bool(p.use_megatron_fsdp) != fsdp:
            diffs.append(f"use_megatron_fsdp {p.use_megatron_fsdp} (row FSDP {row['FSDP'] or 'blank'})")
        if best is None or len(diffs) < len(best[2]):
            best = (name, (f, p), diffs)
    return best


def settings_for(mirror, row):
    out = {k: "" for k in FIELDS}
    for k, col in (("container", "container"), ("task", "task"), ("system", "system"), ("model", "model"),
                   ("precision", "Precision"), ("gpus", "#-GPUs")):
        out[k] = row[col]
    if row["task"] != "Pre-Training" or row["container"] not in CONTAINER_COMMITS:
        out["note"] = "no Megatron-Bridge pre-training preset (NeMo 24.07 or a fine-tuning row)"
        return out
    if row["model"] not in MODELS or row["Precision"] not in PRECISIONS:
        out["note"] = "model or precision without a preset family read here"
        return out
    family, prefix = MODELS[row["model"]]
    precision = PRECISIONS[row["Precision"]]
    commit, why = CONTAINER_COMMITS[row["container"]]
    gpu = row["system"].replace("DGX-", "")
    found, builders = mirror.family(commit, family)
    stem = f"{prefix}_PRETRAIN_CONFIG_{gpu}_{precision.upper()}"
    best = best_preset(found, stem, row)
    out["recipe_commit"] = commit
    out["note"] = why
    if best is None:
        out["note"] += f"; no preset {stem}* at this commit"
        return out
    name, (f, p), diffs = best
    out.update(recipe_file=f, config_name=name, match="exact" if not diffs else "differs: " + "; ".join(diffs))
    for k, attr in (("recipe_tp", "tensor_model_parallel_size"), ("recipe_pp", "pipeline_model_parallel_size"),
                    ("recipe_cp", "context_parallel_size"), ("recipe_vp", "virtual_pipeline_model_parallel_size"),
                    ("recipe_ep", "expert_model_parallel_size"), ("recipe_mbs", "micro_batch_size"),
                    ("recipe_gbs", "global_batch_size"), ("use_megatron_fsdp", "use_megatron_fsdp"),
                    ("etp", "expert_tensor_parallel_size"), ("recompute_num_layers", "recompute_num_layers"),
                    ("recompute_modules", "recompute_modules"),
                    ("cpu_offloading_num_layers", "cpu_offloading_num_layers"),
                    ("cuda_graph_impl", "cuda_graph_impl"), ("cuda_graph_scope", "cuda_graph_scope"),
                    ("moe_flex_dispatcher_backend", "moe_flex_dispatcher_backend"),
                    ("moe_a2a_overlap", "moe_a2a_overlap"), ("pp_layout", "pp_layout")):
        v = getattr(p, attr, None)
        if isinstance(v, (list, tuple)):
            v = ";".join(v)
        out[k] = "" if v is None else str(v)
    fn = f"{prefix.lower()}_pretrain_config_{gpu.lower()}"
    for bf, src in sorted(builders.items()):
        start = dispatcher_default(family, gpu, getattr(p, "moe_flex_dispatcher_backend", None))
        start.update(precision_settings(mirror.path, commit, precision))
        b = builder_settings(src, fn, precision, prefix, start)
        if b is not None:
            out["recipe_file"] += " + " + bf
            for k, v in b.items():
                out[k] = "" if v is None else str(v)
            break
    else:
        out["note"] += f"; builder {fn} not found"
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", required=True, help="Megatron-Bridge git directory")
    ap.add_argument("-o", "--output", default=OUT)
    a = ap.parse_args()
    mirror = Mirror(a.mirror)
    with open(ROWS, newline="") as f:
        rows = list(csv.DictReader(f))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow(settings_for(mirror, row))
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        f.write(buf.getvalue())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
