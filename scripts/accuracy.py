#!/usr/bin/env python3
"""spsim against the published Megatron-Bridge/NeMo throughput tables (the development set).

For every row of tests/data/published-runs/megatron-bridge-nemo-rows.csv it builds one
`spsim query --format json` command line from the row (system, model, precision, GBS, MBS,
sequence length, FSDP, TP, PP, CP, VP, EP) and the recipe settings the page leaves out
(tests/data/published-runs/recipe-settings.csv, read from the Megatron-Bridge presets by
scripts/accuracy_recipes.py), runs the built spsim, and tabulates predicted against
published tokens/s/GPU and model TFLOP/s/GPU.  A row spsim cannot express (no profile, a
task or an option it does not model) is listed with the reason: the profile map's, or
spsim's own one-line error.  It also reruns the paper figures of tests/test_accuracy.c.

Nothing here feeds back into spsim: no constant is set from these rows.
Python 3 standard library only.

Usage: scripts/accuracy.py [--spsim PATH] [--rows CSV] [--write FILE] [--json FILE] [--runs-dir DIR]
"""

import argparse
import csv
import io
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
DATA = os.path.join(ROOT, "tests", "data", "published-runs")

# Recipe setting -> spsim flags.  The flag names are those of Megatron-LM's arguments
# (spsim's convention); options spsim does not have yet are passed anyway, and spsim's
# refusal becomes the row's reason, so a rerun after they are added fills the table.
RECOMPUTE_MODULES = {"core_attn", "layernorm", "mlp", "moe_act", "moe", "shared_experts", "mla_up_proj"}


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def first(cell):
    """The unparenthesized value of a published cell: '4 (2)' -> '4', '661[^note]' -> '661'."""
    return cell.split("(")[0].split("[")[0].strip()


def as_int(cell, default=None):
    v = first(cell)
    return int(v) if v.isdigit() else default


def as_float(cell):
    try:
        return float(first(cell).replace(",", ""))
    except ValueError:
        return None


def row_key(r):
    return (r["container"], r["task"], r["system"], r["model"], r.get("Precision", r.get("precision")),
            r.get("#-GPUs", r.get("gpus")))


class Maps:
    def __init__(self, data):
        self.by = {}
        for r in read_csv(os.path.join(data, "profiles.csv")):
            self.by[(r["kind"], r["name"])] = r
        self.settings = {}
        for r in read_csv(os.path.join(data, "recipe-settings.csv")):
            self.settings.setdefault(row_key(r), []).append(r)

    def get(self, kind, name):
        return self.by.get((kind, name))


# A preset whose mapping (tp, pp, cp, FSDP) is not the row's was tuned for another memory
# budget: its recompute, offload and CUDA-graph choices are not the row's and are not used.
MAPPING = ("tensor ", "pipeline ", "context ", "use_megatron_fsdp ")
LAYER_SETTINGS = ("recompute_num_layers", "recompute_modules", "cpu_offloading_num_layers",
                  "cuda_graph_impl", "cuda_graph_scope")


def settings_for(maps, row):
    """The recipe settings of a row (rows sharing a key take their settings in order)."""
    lst = maps.settings.get(row_key(row), [])
    s = dict(lst.pop(0)) if lst else {}
    diffs = s.get("match", "").replace("differs: ", "").split("; ")
    if any(d.startswith(MAPPING) for d in diffs):
        s["unused"] = ", ".join(k for k in LAYER_SETTINGS if s.get(k))
        for k in LAYER_SETTINGS:
            s[k] = ""
    return s


def reason_of_maps(maps, row):
    """The profile map's reason a row cannot be expressed, or None."""
    for kind, name in (("task", row["task"]), ("system", row["system"]), ("model", row["model"])):
        m = maps.get(kind, name)
        if m is None:
            return f"no entry for {kind} '{name}' in tests/data/published-runs/profiles.csv"
        if m["reason"]:
            return m["reason"]
    if maps.get("precision", row["Precision"]) is None:
        return f"precision '{row['Precision']}' not mapped"
    # Checked here rather than left to spsim, whose first complaint would be an option.
    for kind, folder in (("system", "hardware"), ("model", "models")):
        name = maps.get(kind, row[kind])["spsim"]
        if not os.path.exists(os.path.join(ROOT, folder, name + ".json")):
            return f"no {'hardware' if kind == 'system' else 'model'} profile {folder}/{name}.json"
    return None


def parallel_args(row):
    """--tp ... --dp from the published cells; (args, reason)."""
    gpus, tp, pp = as_int(row["#-GPUs"]), as_int(row["TP"], 1), as_int(row["PP"], 1)
    cp, vp = as_int(row["CP"], 1), as_int(row["VP"], 1)
    if gpus is None:
        return None, "no GPU count"
    if gpus % (tp * pp * cp):
        return None, f"{gpus} GPUs not divisible by tp*pp*cp = {tp * pp * cp}"
    dp = gpus // (tp * pp * cp)
    args = ["--tp", tp, "--pp", pp, "--cp", cp, "--dp", dp, "--vpp", vp, "--mbs", as_int(row["MBS"], 1),
            "--gbs", as_int(row["GBS"]), "--seq", as_int(row["Sequence Length"])]
    args += ["--sp"] if tp > 1 else ["--no-sp"]
    return [str(a) for a in args], None


def recompute_args(s):
    if s.get("recompute_num_layers"):
        return ["--recompute", "full", "--recompute-method", "block", "--recompute-layers", s["recompute_num_layers"]]
    if s.get("recompute_modules"):
        mods = s["recompute_modules"].split(";")
        bad = [m for m in mods if m not in RECOMPUTE_MODULES]
        if bad:
            return ["--recompute-modules", ",".join(mods)]
        return ["--recompute", "selective", "--recompute-modules", ",".join(mods)]
    # Megatron-Core's TransformerConfig default: recompute_granularity None.
    return ["--recompute", "none"]


def dp_args(row, s):
    """Bridge's DDP defaults (recipes' DistributedDataParallelConfig: distributed optimizer,
    overlap_grad_reduce and overlap_param_gather on), Megatron-FSDP where the row or the
    preset uses it (overrides.py: data_parallel_sharding_strategy optim_grads_params)."""
    # The page's FSDP cell where it has one (0: none; the 25.09 to 26.04.01 pages state it), else
    # the preset's: a preset whose mapping differs from the row's is not the row's (MAPPING).
    cell = as_int(row["FSDP"], None)
    fsdp = cell > 0 if cell is not None else s.get("use_megatron_fsdp") == "True"
    args = ["--fsdp", "optim_grads_params"] if fsdp else ["--distributed-optimizer"]
    args.append("--overlap-grad-reduce")
    if s.get("overlap_param_gather") != "False":
        args.append("--overlap-param-gather")
    if s.get("grad_reduce_in_fp32") == "False":
        args.append("--grad-reduce-in-bf16")
    # MixedPrecisionConfig.fp8_param_gather as the row's precision preset sets it
    # (bf16_with_fp8_current_scaling_mixed and bf16_with_mxfp8_mixed: True; NVFP4: False;
    # some builders amend it): the FP8 tensors are the parameters, gathered in FP8.
    if s.get("fp8_param_gather") == "True":
        args.append("--fp8-param-gather")
    return args


# DeepSeek-V3 presets that leave pp_layout unset get the builder's layout:
# scripts/performance/configs/deepseek/deepseek_llm_pretrain.py calls
# set_deepseek_v3_pipeline_model_parallel_layout, whose _get_deepseek_v3_pipeline_layout map
# (src/megatron/bridge/recipes/deepseek/deepseek_v3.py, the same at 5776a6d90, c0b9a0003,
# 21d102f5e and 8f341b04f) keys the layout by (pp, vp), with MTP and the loss on the last stage.
# Its layouts depend on the stage count pp·vp alone (8 stages at (8, 1) and (4, 2), 16 at (16, 1),
# (8, 2) and (4, 4)). The 32 stages of pp 8 × vp 4 are the H100 recipe's own layout
# (deepseek_llm_pretrain.py deepseek_v3_pretrain_config_h100 at 5776a6d90: layout="Et|(tt|)*30mL",
# the H100 base configs' pp_layout from 24db41970 on); pp 2 × vp 4, which no preset read has, takes
# the map's 8-stage layout.
DEEPSEEK_V3_LAYOUTS = {
    (4, 1): "Et*16|t*16|t*16|t*13mL",
    (8, 1): "Et*8|(t*8|)*6t*5mL", (4, 2): "Et*8|(t*8|)*6t*5mL", (2, 4): "Et*8|(t*8|)*6t*5mL",
    (16, 1): "Et*4|(t*4|)*14tmL", (8, 2): "Et*4|(t*4|)*14tmL", (4, 4): "Et*4|(t*4|)*14tmL",
    (8, 4): "Et|(tt|)*30mL",
}
# Kimi K2's builder (scripts/performance/configs/kimi/kimi_llm_pretrain.py, its presets having no
# pp_layout) takes _get_kimi_k2_pipeline_layout (src/megatron/bridge/recipes/kimi/kimi_k2.py, the
# same at cfeddcd94, 74695a06d, 21d102f5e and 8f341b04f): DeepSeek-V3's stages without MTP.
KIMI_K2_LAYOUTS = {
    (4, 1): "Et*16|t*16|t*16|t*13L",
    (8, 1): "Et*8|(t*8|)*6t*5L", (4, 2): "Et*8|(t*8|)*6t*5L",
    (16, 1): "Et*4|(t*4|)*14tL", (8, 2): "Et*4|(t*4|)*14tL", (4, 4): "Et*4|(t*4|)*14tL",
    (2, 8): "Et*4|(t*4|)*14tL",
}


def builder_layout(row):
    key = (as_int(row["PP"], 1), as_int(row["VP"], 1))
    if row["model"].startswith("DeepSeekV3"):
        return DEEPSEEK_V3_LAYOUTS.get(key)
    if row["model"] == "Kimi_K2":
        return KIMI_K2_LAYOUTS.get(key)
    return None


# The Kimi K2 rows train with Muon (the page: "Muon optimizer was used for pre-training
# Kimi-K2"; kimi_llm_pretrain.py's optimizer_type "muon" by default at every commit above):
# kimi_k2.py's Muon branch takes distributed_muon_with_cosine_annealing (recipes/utils/
# optimizer_utils.py @8f341b04f: optimizer "dist_muon", muon_use_nesterov True, muon_tp_mode
# "blockwise", muon_num_ns_steps 5), the parameter-gather overlap off, and
# set_kimi_k2_common_configs reduces gradients in bf16 and, for Muon with MXFP8, turns
# fp8_param_gather off. spsim's --optimizer dist_muon is Muon under the layer-wise distributed
# optimizer (Megatron's arguments.py: muon with --use-distributed-optimizer).
def muon_dp_args(row, s):
    return ["--overlap-grad-reduce", "--grad-reduce-in-bf16", "--optimizer", "dist_muon",
            "--muon-tp-mode", "blockwise", "--muon-nesterov"]


def feature_args(row, s, moe):
    args = []
    # At pp 1 the split has one stage holding every layer (Megatron's transformer_block.py
    # get_num_layers_to_build: (L + 2) / 1 less the embedding and the loss): a no-op.
    split = as_int(row["PP"], 1) > 1
    if s.get("account_embedding") == "True" and split:
        args.append("--account-for-embedding-in-pipeline-split")
    if s.get("account_loss") == "True" and split:
        args.append("--account-for-loss-in-pipeline-split")
    layout = s.get("pp_layout") or builder_layout(row)
    if layout:
        # As Megatron-Core writes it, the MTP depth ('m') beside the loss on the last stage;
        # none without MTP (no-mtp.yaml).
        args += ["--pipeline-layout", layout.replace("m", "") if "(w/o MTP)" in row["model"] else layout]
    if s.get("cpu_offloading_num_layers"):
        args += ["--offload-layers", s["cpu_offloading_num_layers"]]
    if s.get("cuda_graph_impl") not in (None, "", "none"):
        args += ["--cuda-graph-impl", s["cuda_graph_impl"]]
        if s.get("cuda_graph_scope"):
            args += ["--cuda-graph-scope", s["cuda_graph_scope"].replace(";", ",")]
    if s.get("tp_comm_overlap") == "True" and as_int(row["TP"], 1) > 1:
        args.append("--tp-comm-overlap")
    if moe and "(tokendrop)" in row["model"]:
        # The 25.09 page's token-dropping rows: Megatron-Bridge fa0315ae2 (the page's commit)
        # scripts/performance/run_script.py applies apply_moe_token_drop to the Qwen3 MoE
        # recipes and, on B200/GB200, DeepSeek-V3's (which then turns DeepEP off);
        # src/megatron/bridge/training/utils/moe_token_drop.py sets moe_expert_capacity_factor
        # 1.0 and moe_pad_expert_input_to_capacity True, and asserts the alltoall dispatcher.
        s["moe_token_dispatcher_type"], s["moe_flex_dispatcher_backend"] = "alltoall", ""
        args += ["--moe-expert-capacity-factor", "1.0", "--moe-pad-expert-input-to-capacity"]
    if moe:
        args += ["--ep", str(as_int(row["EP"], 1))]
        if s.get("etp"):
            args += ["--etp", s["etp"]]
        if s.get("moe_token_dispatcher_type"):
            args += ["--moe-dispatcher", s["moe_token_dispatcher_type"]]
        if s.get("moe_flex_dispatcher_backend") and s.get("moe_token_dispatcher_type") == "flex":
            args += ["--moe-flex-dispatcher-backend", s["moe_flex_dispatcher_backend"]]
            if s["moe_flex_dispatcher_backend"] == "hybridep":
                # Bridge's scripts/performance/utils/overrides.py (_set_common_perf_overrides,
                # :89 at 067f987 and at every CONTAINER_COMMITS commit): moe_hybridep_num_sms
                # = 32, which Megatron-Core routes to moe_flex_dispatcher_num_sms.
                args += ["--moe-flex-dispatcher-num-sms", "32"]
        if s.get("moe_a2a_overlap") == "True":
            # Bridge's scripts/performance/utils/overrides.py _set_moe_a2a_overlap_overrides sets
            # comm_overlap.delay_wgrad_compute with it (at every CONTAINER_COMMITS commit).
            args += ["--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute"]
    return args


# The fine-tuning rows' recipes (recipe-settings.csv reads the pre-training presets only).
# 26.06: Megatron-Bridge 8f341b04f scripts/performance/configs/llama/llama3_llm_finetune.py
# (set_llama3_common_peft_configs: grad_reduce_in_fp32 False, the distributed optimizer;
# CommOverlapConfig tp_comm_overlap = tp > 1; LoRA: peft/lora.py's dim 32, target_modules
# ["linear_qkv"]; packed_sequence_size = seq_length, 4096) and llama3_workload_base_configs.py
# (the _LLAMA3_70B_SFT_* and _LLAMA3_70B_LORA_* presets: cuda_graph_impl transformer_engine,
# scope mlp, on every system but H100, whose SFT FP8_CS variant alone sets them; no recompute
# for the FP8 presets). NeMo 24.07: NeMo-Framework-Launcher 24.07
# launcher_scripts/conf/peft/llama/squad.yaml (lora_tuning adapter_dim 32, adapter_dropout 0)
# and NeMo r2.0.0rc0 nlp/parts/peft_config.py (target_modules default ["attention_qkv"]).
# Packed rows' sub-sequences are SQuAD examples whose lengths the recipes do not state
# (Bridge counts their Σs² from the packed file): no --packed-subseq-len, attention over the
# whole 4096-token row, an upper bound of its cost.
FINETUNE_TASKS = {"SFT": "sft", "LoRA": "lora", "Fine-Tuning SFT": "sft", "Fine-Tuning LoRA": "lora"}


def finetune_settings(row, s):
    """Fill s with a 26.06 fine-tuning row's recipe settings (see FINETUNE_TASKS)."""
    if row["task"] not in FINETUNE_TASKS or row["container"] != "26.06":
        return
    s["grad_reduce_in_fp32"] = "False"
    s["tp_comm_overlap"] = "True"
    if row["system"] != "DGX-H100" or (FINETUNE_TASKS[row["task"]] == "sft"):
        s["cuda_graph_impl"], s["cuda_graph_scope"] = "transformer_engine", "mlp"
    # bf16_with_fp8_current_scaling_mixed and bf16_with_mxfp8_mixed set fp8_param_gather
    # (training/mixed_precision.py:302 and :264 at 8f341b04f; the SFT and LoRA builders keep it):
    # with LoRA the frozen base is built FP8 (spsim's memory.c add_fp8_weight_copies).
    if row["Precision"] in ("FP8", "MXFP8"):
        s["fp8_param_gather"] = "True"


# The 26.08 Nemotron 3 Ultra rows' presets are Bridge's library perf recipes at the page's own
# commit 067f987 (recipe-settings.csv reads scripts/performance/configs, which has none):
# src/megatron/bridge/perf_recipes/nemotronh/gb300/nemotronh.py
# nemotron_3_ultra_pretrain_256gpu_gb300_fp8mx_config and gb200/nemotronh.py
# nemotron_3_ultra_pretrain_256gpu_gb200_fp8mx_config (the rows' GPUs, TP, PP, EP, MBS, GBS):
# _perf_precision("fp8_mx") (bf16_with_mxfp8_mixed: fp8_param_gather; grad_reduce_in_fp32
# False), selective recompute of moe_act, the flex dispatcher with HybridEP (32 SMs,
# _common.py:89), ETP 1, and common.py _apply_nemotron_3_ultra_fsdp_hsdp: Megatron-FSDP
# optim_grads_params over HSDP, 256 // 64 = 4 optimizer instances with the outer strategy
# "optim", bf16 main gradients. Their fine-grained activation offloading of the fused expert MLP
# (offload_modules ["fused_group_mlp"], tensors above min_offloaded_tensor_size) has no spsim
# option: named in the reason when spsim refuses the row.
ULTRA_067F987 = {("26.08", "Nemotron_3_Ultra")}
ULTRA_UNMODELLED = ("nor is the recipe's fine-grained activation offloading of the fused expert MLP "
                    "(offload_modules fused_group_mlp)")


def perf_recipe_settings(row, s):
    """Fill s with a 26.08 Nemotron 3 Ultra row's recipe settings; the HSDP options (above)."""
    if (row["container"], row["model"]) not in ULTRA_067F987:
        return []
    s.update(use_megatron_fsdp="True", grad_reduce_in_fp32="False", fp8_param_gather="True",
             recompute_modules="moe_act", etp="1", moe_token_dispatcher_type="flex",
             moe_flex_dispatcher_backend="hybridep", unmodelled=ULTRA_UNMODELLED)
    return ["--num-distributed-optimizer-instances", "4", "--outer-dp-sharding-strategy", "optim"]


def finetune_args(row):
    # The 26.06 SFT configs (llama3_llm_finetune.py:123-124, 159-160, 189-190 at 8f341b04f)
    # defer the output layer's weight gradients of 22 micro-batches to the flush (undone only
    # with Megatron-FSDP, utils/overrides.py:95-97; Megatron needs pp > 1 for it).
    if FINETUNE_TASKS.get(row["task"]) == "sft" and row["container"] == "26.06":
        if as_int(row["PP"], 1) > 1 and row.get("FSDP", "") in ("", "0", "-", "n/a"):
            return ["--defer-embedding-wgrad-compute", "--wgrad-deferral-limit", "22"]
        return []
    if FINETUNE_TASKS.get(row["task"]) != "lora":
        return []
    return ["--lora-rank", "32", "--lora-target-modules", "linear_qkv"]


def command_for(maps, row, s):
    """(argv after 'spsim', reason): the query of a published row, or why there is none."""
    reason = reason_of_maps(maps, row)
    if reason:
        return None, reason
    par, reason = parallel_args(row)
    if reason:
        return None, reason
    finetune_settings(row, s)
    hsdp = perf_recipe_settings(row, s)
    model = maps.get("model", row["model"])
    argv = ["query", "--model", model["spsim"], "--hw", maps.get("system", row["system"])["spsim"]]
    if "(w/o MTP)" in row["model"]:
        argv[3:3] = ["--megatron-args", os.path.relpath(os.path.join(DATA, "no-mtp.yaml"), ROOT)]
    argv += par + shlex.split(maps.get("precision", row["Precision"])["spsim"])
    dp = muon_dp_args(row, s) if row["model"] == "Kimi_K2" else dp_args(row, s)
    argv += recompute_args(s) + dp + feature_args(row, s, model["dense_or_moe"] == "moe")
    if row["container"] != "24.07" and row["Precision"] == "BF16":
        # Bridge's bf16 performance runs use the precision-aware optimizer (development set's
        # README 1.0.1, scripts/performance/utils/overrides.py), its dtypes at their fp32 defaults.
        argv.append("--use-precision-aware-optimizer")
    if row["container"] != "24.07":
        # Bridge's loss: cross_entropy_loss_fusion on (GPTModelProvider's default, gpt_provider.py
        # :205, hybrid_provider.py:149 at 067f987) with impl "te" (the perf scripts' common
        # overrides, scripts/performance/utils/overrides.py at every row's commit); TE up to 2.17
        # writes the gradient into the logits: Bridge's uv.lock pins TE 2.9 to 2.16 at those
        # commits (release_v2.9 70f5366 ... 2.16 d64bc14), before TE's fp32 gradient (2.18, PR #3193).
        argv += ["--cross-entropy-fusion-impl", "te-inplace"]
    argv += nemo_2407_optimizer_args(row, argv) + hsdp
    return argv + finetune_args(row) + nemo_2407_args(row) + ["--format", "json"], None


# NeMo 24.07's optimizer is Apex's DistributedFusedAdam (NeMo r2.0.0rc1
# nemo/core/optim/distributed_adam.py; optim.name distributed_fused_adam in every training and
# SFT config of NeMo-Framework-Launcher 24.07), sharded over dp·cp like the distributed optimizer
# (its process_group: get_data_parallel_group(with_context_parallel=True)); its gradient buffer
# is in grad_sync_dtype (apex distributed_fused_adam.py _init_grad_buffer at f3f04924: one buffer
# of the bucket sizes in grad_sync_dtype), its moments in optim.dtype. The launcher at tag 24.07
# sets, whatever the parallel mapping:
#  * grad_sync_dtype bf16 in every H100 GPT-3 and Llama training example
#    (examples/training/{gpt,llama}/h100/*.sh, `+training.model.optim.grad_sync_dtype=bf16`, the
#    FSDP ones aside) and in conf/training/nemotron/nemotron_340b.yaml:161, whose optim.dtype
#    bf16 (:162) keeps Adam's moments in bf16; the Nemotron 8B/22B examples and configs leave
#    both at fp32;
#  * for SFT, conf/peft/llama/sft.yaml:257-258 (optim.dtype and grad_sync_dtype bf16), and the
#    H100 SFT examples of the page's rows (examples/peft/llama/h100/7b_1node.sh, 13b_1node.sh,
#    70b_2node.sh: the rows' GPUs, TP, PP, MBS and GBS) `++peft.model.fp8_params=true`, VP 10
#    (13B) and 20 (70B), and for 70B ub_tp_comm_overlap true.
# spsim states the bf16 moments as the precision-aware optimizer's (--exp-avg-dtype bf16): its
# fp32 master weights over-count DistributedFusedAdam's (none with optim.dtype bf16, bf16 ones
# with fp8_params: store_params by megatron_base_model.py:797-806), as its fp32 Adam's 12 B over
# dp·cp over-counts the 10 of the fp32 configs (store_param_remainders: bf16 weight + 16-bit
# remainder, exp_avg, exp_avg_sq).
NEMO_2407_BF16_GRADS = ("GPT3-", "LLAMA", "Nemotron-340B")
NEMO_2407_BF16_MOMENTS = ["--use-precision-aware-optimizer", "--exp-avg-dtype", "bf16", "--exp-avg-sq-dtype", "bf16"]
NEMO_2407_SFT_VP = {"LLAMA2-13B": 10, "LLAMA2-70B": 20}


def nemo_2407_optimizer_args(row, argv):
    """The 24.07 launcher's optimizer and SFT settings (above); argv's --vpp set in place."""
    if row["container"] != "24.07" or FINETUNE_TASKS.get(row["task"]) == "lora":
        return []
    if row["task"] in FINETUNE_TASKS:
        if row["model"] in NEMO_2407_SFT_VP:
            argv[argv.index("--vpp") + 1] = str(NEMO_2407_SFT_VP[row["model"]])
        extra = ["--tp-comm-overlap"] if row["model"] == "LLAMA2-70B" else []
        return ["--grad-reduce-in-bf16", "--fp8-param-gather"] + NEMO_2407_BF16_MOMENTS + extra
    if not row["model"].startswith(NEMO_2407_BF16_GRADS):
        return []
    return ["--grad-reduce-in-bf16"] + (NEMO_2407_BF16_MOMENTS if row["model"] == "Nemotron-340B" else [])


def nemo_2407_args(row):
    """NeMo 24.07 ran Transformer Engine's attention with cuDNN's FusedAttention turned off:
    NVIDIA/NeMo-Framework-Launcher at tag 24.07, launcher_scripts/conf/config.yaml env_vars
    `NVTE_FUSED_ATTN: 0  # Disable cudnn FA until we've tested it more` (removed by 04b8d098,
    after the tag), so TE's DotProductAttention runs FlashAttention (flash-attn, NVTE_FLASH_ATTN
    on by default) for every model, GPT-3's too (its training configs: mcore_gpt and
    transformer_engine True)."""
    if row["container"] != "24.07":
        return []
    return ["--flash-attn", "--attention-backend", "flash"]


def run_spsim(spsim, argv, env):
    """(parsed JSON, None) or (None, spsim's error line)."""
    try:
        # From the checkout's root: the rows' override files are named relative to it.
        p = subprocess.run([os.path.abspath(spsim)] + argv, capture_output=True, text=True, timeout=60,
                           env=env, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"spsim did not run: {e}"
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith("spsim: error: ")]
        msg = lines[0][len("spsim: error: "):] if lines else f"no error line"
        # The search path in "no model profile" errors names this checkout: dropped.
        msg = msg.split(" (looked for ")[0]
        return None, f"spsim: {msg} (exit {p.returncode})"
    try:
        return json.loads(p.stdout), None
    except ValueError as e:
        return None, f"spsim's JSON did not parse: {e}"


# Which of spsim's model-FLOPs figures matches the table's definition (README 1.0.2 of the
# development set): Megatron-Bridge's flop_utils counts causal attention at half, NeMo
# 24.07's page counts it whole (Korthikanti et al. Eq. 7 in spsim).
def flops_field(row):
    return "tflops_per_gpu" if row["container"] == "24.07" else "tflops_per_gpu_megatron"


def without_unknown(spsim, argv, env, reason):
    """Rerun dropping each option spsim does not know (and its value): (JSON, dropped) or
    (None, dropped). The result is an approximation, reported apart from the summary."""
    dropped = []
    while reason and "unknown option '" in reason and len(dropped) < 10:
        opt = reason.split("unknown option '")[1].split("'")[0]
        if opt not in argv:
            break
        i = argv.index(opt)
        n = 2 if i + 1 < len(argv) and not argv[i + 1].startswith("--") else 1
        argv = argv[:i] + argv[i + n:]
        dropped.append(opt)
        res, reason = run_spsim(spsim, argv, env)
        if res is not None:
            return res, dropped, argv
    return None, dropped, reason


def evaluate_row(spsim, env, maps, row):
    s = settings_for(maps, row)
    out = {"row": row, "settings": s, "argv": None, "reason": None}
    argv, reason = command_for(maps, row, s)
    out["argv"] = argv
    if reason:
        out["reason"] = reason
        return out
    res, reason = run_spsim(spsim, argv, env)
    if reason:
        out["reason"] = reason
        if "unknown option '--optimizer'" in reason:  # muon_dp_args
            out["reason"] = f"Muon optimizer (the recipe's dist_muon): spsim models Adam only; {reason}"
        if s.get("unmodelled"):
            out["reason"] = f"{reason}; {s['unmodelled']}"
        res, dropped, rest = without_unknown(spsim, argv, env, reason)
        if res is not None:
            out["approx"] = dict(dropped=dropped, argv=rest, **figures(res, row))
        elif dropped:
            out["then"] = f"without {' '.join(dropped)}: {rest}"
        return out
    out.update(figures(res, row))
    return out


def figures(res, row):
    t = res["time"]
    out = {}
    out.update(tokens=t["tokens_per_s_per_gpu"], tflops=t[flops_field(row)],
               flops_per_token_megatron=t["model_flops_megatron"] / (res["config"]["gbs"] * res["config"]["seq"]),
               flops_per_token=t["model_flops"] / (res["config"]["gbs"] * res["config"]["seq"]),
               padded_vocab=res["config"]["padded_vocab"], warnings=res.get("warnings", []),
               fits=res["memory"]["fits"], gib=res["memory"]["total_bytes"] / 2**30)
    pub_tok, pub_tf = as_float(row["Tokens / sec / GPU"]), as_float(row["Model TFLOP / sec / GPU"])
    out["pub_tokens"], out["pub_tflops"] = pub_tok, pub_tf
    out["err_tokens"] = out["tokens"] / pub_tok - 1 if pub_tok else None
    out["err_tflops"] = out["tflops"] / pub_tf - 1 if pub_tf else None
    return out


# The paper figures of tests/test_accuracy.c (Korthikanti et al. 2022 on Selene, tp 8). The 2022
# runs sent between pipeline stages blocking: Megatron-LM gained overlap_p2p_comm on 2023-05-31
# (commit f9283c5a8a), so paper_rows passes --no-overlap-p2p-communication (a no-op at vpp 1).
T4 = "--model paper-22b --tp 8 --pp 1 --vpp 1 --mbs 4 --gbs 4 "
PAPER = [
    ("Table 4: 22B layer, baseline, forward (ms)", "layer_forward_s", 7.7e-3, T4 + "--no-sp --recompute none"),
    ("Table 4: baseline, backward (ms)", "layer_backward_s", 11.9e-3, T4 + "--no-sp --recompute none"),
    ("Table 4: sequence parallelism, forward", "layer_forward_s", 7.2e-3, T4 + "--sp --recompute none"),
    ("Table 4: sequence parallelism, backward", "layer_backward_s", 11.8e-3, T4 + "--sp --recompute none"),
    ("Table 4: full recompute, forward", "layer_forward_s", 7.7e-3, T4 + "--no-sp --recompute full"),
    ("Table 4: full recompute, backward", "layer_backward_s", 19.5e-3, T4 + "--no-sp --recompute full"),
    ("Table 4: selective recompute, forward", "layer_forward_s", 7.7e-3, T4 + "--no-sp --recompute selective"),
    ("Table 4: selective recompute, backward", "layer_backward_s", 13.2e-3, T4 + "--no-sp --recompute selective"),
    ("Table 4: selective + SP, forward", "layer_forward_s", 7.2e-3, T4 + "--sp --recompute selective"),
    ("Table 4: selective + SP, backward", "layer_backward_s", 13.1e-3, T4 + "--sp --recompute selective"),
    ("Table 5: 530B, full recompute (iteration s)", "iteration_s", 49.05,
     "--model paper-530b --tp 8 --pp 35 --vpp 3 --mbs 1 --gbs 280 --no-sp --recompute full"),
    ("Table 5: 530B, SP + selective (iteration s)", "iteration_s", 37.83,
     "--model paper-530b --tp 8 --pp 35 --vpp 3 --mbs 1 --gbs 280 --sp --recompute selective"),
    ("Table 5: 530B, SP + selective, MFU", "mfu", 0.560,
     "--model paper-530b --tp 8 --pp 35 --vpp 3 --mbs 1 --gbs 280 --sp --recompute selective"),
    ("Table 5: 530B, SP + selective, HFU", "hfu", 0.570,
     "--model paper-530b --tp 8 --pp 35 --vpp 3 --mbs 1 --gbs 280 --sp --recompute selective"),
    ("MFU, 22B (Megatron-LM README, dp 1)", "mfu", 0.415,
     "--model paper-22b --tp 8 --pp 1 --vpp 1 --mbs 4 --gbs 4 --sp --recompute selective"),
    ("MFU, 175B", "mfu", 0.514,
     "--model paper-175b --tp 8 --pp 8 --vpp 3 --mbs 1 --gbs 64 --sp --recompute selective"),
    ("MFU, 530B", "mfu", 0.560,
     "--model paper-530b --tp 8 --pp 35 --vpp 3 --mbs 1 --gbs 280 --sp --recompute selective"),
    ("MFU, 1T", "mfu", 0.563,
     "--model paper-1t --tp 8 --pp 64 --vpp 1 --mbs 1 --gbs 512 --sp --recompute selective"),
]


def paper_rows(spsim, env):
    out = []
    for name, field, paper, args in PAPER:
        argv = (["query", "--hw", "dgx-a100-80g"] + args.split()
                + ["--no-overlap-p2p-communication", "--format", "json"])
        res, reason = run_spsim(spsim, argv, env)
        v = res["time"][field] if res else None
        out.append({"name": name, "field": field, "paper": paper, "spsim": v, "reason": reason,
                    "argv": argv})
    return out


def bridge_flops_per_token(model, seq, tp, causal=True):
    """Megatron-Bridge's model FLOPs per token for a dense GQA SwiGLU model, the closed form
    of flop_utils.py transformer_flops() at fa0315ae (development-set README 1.0.2):
    L·h²·(12 + 12·g/n_h + 18·ffn/h + 6·s/h) + 6·h·V_pad, with the vocabulary padded to a
    multiple of 128·tp (Megatron's make_vocab_size_divisible_by 128; recipes pad the vocab).
    causal=False counts attention whole (12·s/h), as NeMo <= 25.07 did (README 2.D there)."""
    L, h, ffn = model["layers"], model["hidden"], model["ffn_hidden"]
    g, nh, v = model["kv_heads"], model["heads"], model["vocab"]
    mult = 128 * tp
    vpad = -(-v // mult) * mult
    attn = (6 if causal else 12) * seq / h
    return L * h * h * (12 + 12 * g / nh + 18 * ffn / h + attn) + 6 * h * vpad


def flops_checks(results):
    """Bridge's formula against spsim's Megatron figure and the rows' implied FLOPs/token
    (rows predicted, or approximated: the FLOPs count does not depend on the options dropped)."""
    out = []
    for r in results:
        r = dict(r, **r["approx"]) if r.get("approx") else r
        row = r["row"]
        if r.get("tokens") is None or "--model" not in r["argv"]:
            continue
        name = r["argv"][r["argv"].index("--model") + 1]
        if not name.startswith("llama") or row["task"] in FINETUNE_TASKS:
            continue  # the closed form is pre-training's (LoRA counts its frozen weights at 2/3)
        with open(os.path.join(ROOT, "models", name + ".json")) as f:
            model = json.load(f)
        causal = row["container"] != "24.07"
        bridge = bridge_flops_per_token(model, as_int(row["Sequence Length"]), as_int(row["TP"], 1), causal)
        implied = r["pub_tflops"] * 1e12 / r["pub_tokens"] if r["pub_tflops"] and r["pub_tokens"] else None
        mine = r["flops_per_token_megatron"] if causal else r["flops_per_token"]
        out.append({"row": row, "bridge": bridge, "spsim": mine, "implied": implied, "causal": causal})
    return out


def stats(errs):
    errs = [e for e in errs if e is not None]
    if not errs:
        return None
    return {"n": len(errs), "mean": sum(errs) / len(errs), "mae": sum(abs(e) for e in errs) / len(errs),
            "min": min(errs), "max": max(errs)}


def group_stats(done, key):
    groups = {}
    for r in done:
        groups.setdefault(key(r), []).append(r)
    return {k: (stats([r["err_tokens"] for r in v]), stats([r["err_tflops"] for r in v]))
            for k, v in sorted(groups.items())}


def pct(x, digits=1):
    return "" if x is None else f"{100 * x:+.{digits}f}%"


def absp(x):
    return "" if x is None else f"{100 * x:.1f}%"


def num(x, fmt="{:.0f}"):
    return "" if x is None else fmt.format(x)


def cmdline(argv):
    return "spsim " + " ".join(shlex.quote(a) for a in argv)


def md_stats_table(title, groups):
    if all(tok is None for tok, _ in groups.values()):
        return [f"({title}: no rows yet)"]
    lines = [f"| {title} | rows | tokens/s/GPU mean | mean abs | range | TFLOP/s/GPU mean | mean abs |",
             "|---|---|---|---|---|---|---|"]
    for k, (tok, tf) in groups.items():
        if tok is None:
            continue
        lines.append(f"| {k} | {tok['n']} | {pct(tok['mean'])} | {absp(tok['mae'])} | "
                     f"{pct(tok['min'])} .. {pct(tok['max'])} | {pct(tf and tf['mean'])} | {absp(tf and tf['mae'])} |")
    return lines


def md_rows(done, extra=None):
    lines = ["| container | system | model | precision | GPUs | TP/PP/CP/VP/EP | MBS/GBS | tokens/s/GPU published | "
             "spsim | error | TFLOP/s/GPU published | spsim | error | spsim GiB/GPU (fits) | preset |" +
             (f" {extra} |" if extra else ""),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if extra else "")]
    for r in done:
        row, s = r["row"], r["settings"]
        par = "/".join(first(row[c]) or "-" for c in ("TP", "PP", "CP", "VP", "EP"))
        preset = f"`{s['config_name']}` @{s['recipe_commit']}" if s.get("config_name") else "page only"
        if s.get("match") not in (None, "", "exact"):
            preset += f" ({s['match']}" + (f"; its {s['unused']} not used" if s.get("unused") else "") + ")"
        lines.append(f"| {row['container']} | {row['system']} | {row['model']} | {row['Precision'] or '(FP8-CS)'} | "
                     f"{row['#-GPUs']} | {par} | {first(row['MBS'])}/{first(row['GBS'])} | {num(r['pub_tokens'])} | "
                     f"{num(r['tokens'])} | {pct(r['err_tokens'])} | {num(r['pub_tflops'])} | {num(r['tflops'])} | "
                     f"{pct(r['err_tflops'])} | {r['gib']:.1f} ({'yes' if r['fits'] else '**no**'}) | {preset} |" + (f" {' '.join(r['dropped'])} |" if extra else ""))
    return lines


def md_commands(done):
    lines = []
    for r in done:
        row = r["row"]
        lines.append(f"- {row['container']} {row['system']} {row['model']} {row['Precision']} "
                     f"{row['#-GPUs']} GPUs: `{cmdline(r['argv'])}`")
    return lines


def md_not_expressible(skipped):
    counts = {}
    for r in skipped:
        counts.setdefault(r["reason"], []).append(r)
    lines = ["| reason | rows |", "|---|---|"]
    for reason, rs in sorted(counts.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"| {reason.replace('|', '/')} | {len(rs)} |")
    lines += ["", "<details><summary>Every row not expressible, with its reason</summary>", ""]
    lines += ["| container | task | system | model | precision | GPUs | reason | then, without the unknown options |",
              "|---|---|---|---|---|---|---|---|"]
    for r in skipped:
        row = r["row"]
        lines.append(f"| {row['container']} | {row['task']} | {row['system']} | {row['model']} | "
                     f"{row['Precision']} | {row['#-GPUs']} | {r['reason'].replace('|', '/')} | "
                     f"{r.get('then', '').replace('|', '/')} |")
    return lines + ["", "</details>"]


def md_flops(checks):
    lines = ["| container | system | model | TP | seq | attention | formula (FLOPs/token) | spsim per token | "
             "ratio | published TFLOP/s ÷ tokens/s | ratio to formula |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in checks:
        row = c["row"]
        ratio = c["implied"] / c["bridge"] if c["implied"] else None
        lines.append(f"| {row['container']} | {row['system']} | {row['model']} | {first(row['TP'])} | "
                     f"{first(row['Sequence Length'])} | {'causal half' if c['causal'] else 'whole'} | "
                     f"{c['bridge']:.5e} | {c['spsim']:.5e} | "
                     f"{c['spsim'] / c['bridge']:.5f} | {num(c['implied'], '{:.5e}')} | {num(ratio, '{:.3f}')} |")
    return lines


def md_paper(paper):
    lines = ["| figure | paper | spsim | error | command |", "|---|---|---|---|---|"]
    for p in paper:
        if p["spsim"] is None:
            lines.append(f"| {p['name']} | {p['paper']} | {p['reason']} | | `{cmdline(p['argv'])}` |")
            continue
        scale, fmt = {"mfu": (100, "{:.1f}%"), "hfu": (100, "{:.1f}%"), "layer_forward_s": (1e3, "{:.2f}"),
                      "layer_backward_s": (1e3, "{:.2f}")}.get(p["field"], (1, "{:.2f}"))
        lines.append(f"| {p['name']} | {fmt.format(scale * p['paper'])} | {fmt.format(scale * p['spsim'])} | "
                     f"{pct(p['spsim'] / p['paper'] - 1)} | `{cmdline(p['argv'])}` |")
    return lines


HEADER = """# Accuracy against published training runs

Generated by `scripts/accuracy.py --write doc/accuracy.md` from the built `spsim`; do not edit
by hand (rerun it: rows that spsim cannot express today fill in as the options they need are
added). The development set is `tests/data/published-runs/megatron-bridge-nemo-rows.csv`: every
row of NVIDIA's Megatron-Bridge performance summaries (containers 25.09 to 26.08) and the NeMo
24.07 page, cells as published (provenance in that folder's README.md).

**No constant of spsim was set from these rows.** The hardware profiles come from sourced
hardware facts (hardware/README.md), the model profiles from the models' published configs;
nothing was fitted to any published throughput. These rows only show where the model stands.

How a row becomes a command line: the page gives system, model, precision, GBS, MBS, sequence
length, FSDP, TP, PP, CP, VP and EP (dp = GPUs / (tp·pp·cp); the 25.09 page's "A (B)" cells
are read as A, the FP8-CS run). What the page leaves out comes from the Megatron-Bridge
performance preset the row ran with, read by `scripts/accuracy_recipes.py` at the commit that
published the row's container into `tests/data/published-runs/recipe-settings.csv` (preset
file, config name and commit per row): SP whenever TP > 1 (`WorkloadBaseConfig.sequence_parallel`),
no recomputation unless the preset sets `recompute_num_layers` (full, block) or
`recompute_modules` (selective), CPU activation offload, Megatron-FSDP (`optim_grads_params`)
or the distributed optimizer (where the page has no FSDP cell: a cell, 0 included, is the row's),
Transformer Engine's cross-entropy fusion (GPTModelProvider's fusion, the perf scripts' impl "te";
TE 2.9 to 2.16 in Bridge's uv.lock write the gradient into the logits: `--cross-entropy-fusion-impl
te-inplace`), overlapped gradient reduction and parameter gather (the recipes'
DDP config; off where the builder turns it off), 16-bit gradient reduction
(`grad_reduce_in_fp32 = False`), the precision-aware optimizer for bf16 runs (its dtypes at
Megatron's fp32 defaults), CUDA graphs, TP communication overlap (userbuffers; off for
NVFP4), FP8 parameters (`fp8_param_gather` of the precision preset: on for FP8 current scaling and
MXFP8, `--fp8-param-gather`), and for MoE the EP/ETP sizes, the token dispatcher and its backend (HybridEP with the 32 SMs of the perf scripts' common overrides, `moe_hybridep_num_sms`). The model FLOPs
compared are Megatron-Bridge's (causal attention at half: spsim's `tflops_per_gpu_megatron`) and,
for the NeMo 24.07 rows, whole attention (spsim's `tflops_per_gpu`, Korthikanti et al. Eq. 7),
as the development set's README (1.0.2) establishes. NeMo 24.07's rows run with the page's values
and Bridge's defaults above, FP8 as delayed scaling, and FlashAttention: NeMo-Framework-Launcher's
24.07 `config.yaml` turns cuDNN's fused attention off (`NVTE_FUSED_ATTN: 0`), so TE runs flash-attn
(`--flash-attn --attention-backend flash`); the page's parallel mappings are not those of the
launcher's training configs, whose mapping-tuned settings (recompute) are therefore not read. What
the launcher sets whatever the mapping is: its optimizer, Apex's DistributedFusedAdam, reduces
gradients in bf16 in every H100 GPT-3 and Llama training example and in Nemotron-340B's config,
whose Adam moments are bf16 too (`--grad-reduce-in-bf16`, `--exp-avg-dtype bf16`); the SFT rows
are the launcher's H100 SFT examples (`examples/peft/llama/h100/`: the rows' GPUs, TP, PP and
batches), with FP8 parameters, VP 10 (13B) and 20 (70B), and `sft.yaml`'s bf16 gradients and moments.
The 26.08 Nemotron 3 Ultra rows take Bridge's library perf recipes at the page's commit 067f987
(`perf_recipes/nemotronh/`: Megatron-FSDP over HSDP, bf16 gradients, FP8 parameters, moe_act
recompute, fine-grained offload of the expert MLP), which spsim cannot state yet.
Pipeline layouts (`--pipeline-layout`, with DeepSeek-V3's MTP depth `m` beside the loss) are the
preset's `pp_layout` or its builder's map by (pp, vp) (DeepSeek-V3, Kimi K2); DeepSeek-V3 at pp 8 × vp 4
takes the H100 recipe's `Et|(tt|)*30mL` and at pp 2 × vp 4 the map's 8-stage layout (its layouts
depend on pp·vp alone). Kimi K2 trains with Muon (the page's note): its rows run the Muon recipe's
settings (`--optimizer dist_muon --muon-tp-mode blockwise --muon-nesterov`, Bridge's
`distributed_muon_with_cosine_annealing`: Muon's 8 B of state per 2-D weight, Adam's for the rest,
its Newton-Schulz GEMMs in the step; no parameter-gather overlap, no FP8 parameter gather).
The 25.11 page's "(w/o MTP)" rows run DeepSeek-V3 without its MTP layer (`--megatron-args
tests/data/published-runs/no-mtp.yaml`, `mtp_num_layers: null`): their published TFLOP/s ÷ tokens/s
is Bridge's FLOPs per token without it.
Fine-tuning rows (SFT and LoRA) take their recipes' settings from `scripts/accuracy.py`
(`FINETUNE_TASKS`: Bridge 8f341b04f `llama3_llm_finetune.py` and its presets for 26.06, the
24.07 launcher's `peft/llama/squad.yaml`): LoRA rank 32 on `linear_qkv`, 16-bit gradient
reduction, CUDA graphs of the MLP where the preset sets them, FP8 parameters (the LoRA rows'
frozen base built in FP8, no BF16 copy), and the packed SQuAD rows attend over the whole
4096-token row (`--packed-subseq-len` unset: the recipes do not state the sub-sequences'
lengths), an upper bound of their attention cost. Bridge counts a LoRA row's model FLOPs with
its frozen weights at 2/3 and only the real (unpadded) tokens of the packed file, so their
TFLOP/s error reads above their tokens/s error.
Error = spsim / published − 1 (positive: spsim predicts faster than measured). The 26.04.01,
26.06.01 and 26.08 tables' tokens/s look quantized (README 1.0.2): their TFLOP/s error is the
better figure. spsim counts Bridge's current formula (flop_utils.py at 067f987, used from 26.06 on:
a gated linear unit as 3 GEMMs, GPT-OSS's 128-token windows on alternate layers), 32.6 GFLOP per
GPT-OSS 120B token at s = 4096; the GPT-OSS rows of 25.11 to 26.04.01 publish 27.2 (their
TFLOP/s ÷ tokens/s), Bridge's older count that took the gated unit as 3 GEMMs only with SiLU
(GPT-OSS's is quick-GELU: 2) and attention as full: their TFLOP/s error overstates spsim's by
32.6 / 27.2 = 1.20, and their tokens/s error is the figure to read.
"""


FITTED_TEXT = """The sourced profiles (hardware/NAME.json) are what the summary above uses: nothing in them was
set from these rows. The fitted profiles (hardware/NAME-fitted.json, labelled fitted: their
`calibration.kind` is "fitted") are the sourced ones with their efficiency parameters fitted by
`spsim calibrate --runs` to these rows (scripts/fit_profiles.sh: tests/data/published-runs/runs-NAME.csv,
the rows of each system as measured runs); each records its parameters and every run. In-sample
errors are those of the profile fitted to all of its system's rows; the cross-validated ones
predict each model family of a system by the profile fitted to that system's other families
(leave one group out: group = model family x system), the figure to read. A family alone on its
system is predicted by the sourced profile. Errors on tokens/s/GPU, as above."""


def write_md(results, paper, checks):
    done = [r for r in results if r.get("tokens") is not None]
    skipped = [r for r in results if r.get("tokens") is None]
    moe = lambda r: "MoE" if "--ep" in r["argv"] else "dense"
    out = [HEADER, "## Summary", "",
           f"{len(results)} published rows: {len(done)} predicted, {len(skipped)} not expressible "
           f"(reasons below).", ""]
    if done:
        out += md_stats_table("all rows", {"all": (stats([r["err_tokens"] for r in done]),
                                                   stats([r["err_tflops"] for r in done]))}) + [""]
        out += md_stats_table("system", group_stats(done, lambda r: r["row"]["system"])) + [""]
        out += md_stats_table("precision", group_stats(done, lambda r: r["row"]["Precision"] or "(FP8-CS)")) + [""]
        out += md_stats_table("dense / MoE", group_stats(done, moe)) + [""]
        out += md_stats_table("container", group_stats(done, lambda r: r["row"]["container"])) + [""]
        out += ["## Sourced and fitted profiles", "", FITTED_TEXT, ""] + md_fitted(done) + [""]
    out += ["## Rows predicted", ""] + (md_rows(done) + ["", "### Command lines", ""] + md_commands(done)
                                          if done else ["None on this build: every row lacks something (see below)."])
    out += [""]
    approx = [dict(r, **r["approx"]) for r in skipped if r.get("approx")]
    out += ["## Approximations (not in the summary)", "",
            f"{len(approx)} of the rows not expressible run when the options spsim does not know yet are "
            "dropped from their command lines (last column): the recipe's setting is then missing from the "
            "prediction, so these figures are not the model's accuracy, only a check that the rest of "
            "the row's configuration is accepted. They become rows above once spsim has those options.", ""]
    out += md_stats_table("approximate rows", {"all": (stats([r["err_tokens"] for r in approx]),
                                                       stats([r["err_tflops"] for r in approx]))}) + [""]
    out += md_stats_table("system", group_stats(approx, lambda r: r["row"]["system"])) + [""]
    out += md_rows(approx, "options dropped") + ["", "### Command lines of the approximations", ""]
    out += md_commands(approx) + [""]
    out += ["## Model FLOPs: Megatron-Bridge's formula against spsim's", "",
            "Dense Llama rows that run (predicted or approximated). The formula column is Bridge's closed form "
            "(README 1.0.2 of the development set) computed here from the model profile, with attention "
            "whole for the NeMo 24.07 rows; spsim's column is its `model_flops_megatron` per token "
            "(`model_flops`, Eq. 7, for 24.07); the last columns check the formula against each row's "
            "published TFLOP/s ÷ tokens/s (the 26.04.01, 26.06.01 and 26.08 token counts are quantized, README 1.0.2).", ""]
    out += md_flops(checks) + [""]
    out += ["## Paper figures (Korthikanti et al. 2022, Selene, dgx-a100-80g)", "",
            "The figures of tests/test_accuracy.c (which asserts them), rerun with the built spsim. "
            "MFU and HFU are spsim's `time.mfu` and `time.hfu`: model FLOPs by the paper's Eq. 7 "
            "(Appendix A, causal attention counted whole), hardware FLOPs with recomputation.", ""] + md_paper(paper) + [""]
    out += ["## Not expressible", ""] + md_not_expressible(skipped) + [""]
    return "\n".join(out)


# ---- measured runs for `spsim calibrate --runs`, and the fitted profiles' figures ----------

def run_id(i, row):
    """A row's label in a runs file and in the fitted profile it gives (unique: the row's number
    in the development set)."""
    return (f"row {i + 2}: {row['container']} {row['system']} {row['model']} "
            f"{row['Precision'] or '(FP8-CS)'} {row['#-GPUs']}")


def measured_s(row):
    """The measured time per iteration of a published row: GBS·seq tokens at its tokens/s/GPU
    over its GPUs (the 26.04.01-26.08 counts are quantized, README 1.0.2: a few % at most)."""
    tok, gpus = as_float(row["Tokens / sec / GPU"]), as_int(row["#-GPUs"])
    gbs, seq = as_int(row["GBS"]), as_int(row["Sequence Length"])
    return gbs * seq / (tok * gpus) if tok and gpus and gbs and seq else None


def hw_of(r):
    return r["argv"][r["argv"].index("--hw") + 1]


def write_runs(results, folder):
    """One runs CSV per hardware profile of the rows predicted: model, hw, the measured time, the
    row's id and the rest of its query as args (the default group, model family x system)."""
    files = {}
    for r in results:
        if r.get("tokens") is None or measured_s(r["row"]) is None:
            continue
        argv = r["argv"][1:]
        model, hw = argv[argv.index("--model") + 1], argv[argv.index("--hw") + 1]
        rest, skip = [], 0
        for i, a in enumerate(argv):
            if skip:
                skip -= 1
            elif a in ("--model", "--hw", "--format"):
                skip = 1
            else:
                rest.append(a)
        files.setdefault(hw, []).append([model, hw, repr(measured_s(r["row"])), r["id"],
                                         " ".join(shlex.quote(a) for a in rest)])
    for hw, rows in sorted(files.items()):
        buf = io.StringIO()
        buf.write(f"# Measured runs of the development set on {hw}: written by scripts/accuracy.py "
                  "--runs-dir from tests/data/published-runs (measured_iteration_s = GBS * seq / "
                  "(tokens/s/GPU * GPUs)); do not edit.\n")
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["model", "hw", "measured_iteration_s", "id", "args"])
        w.writerows(rows)
        write_atomic(os.path.join(folder, f"runs-{hw}.csv"), buf.getvalue())
    return sorted(files)


def fitted_runs():
    """{run id: (fitted_s, cross_validated_s, profile)} from the shipped fitted profiles
    (hardware/*-fitted.json, written by spsim calibrate --runs)."""
    out = {}
    folder = os.path.join(ROOT, "hardware")
    for name in sorted(os.listdir(folder)):
        if not name.endswith("-fitted.json"):
            continue
        with open(os.path.join(folder, name)) as f:
            cal = json.load(f).get("calibration", {})
        if cal.get("kind") != "fitted":
            continue
        for run in cal.get("runs", []):
            out[run["id"]] = (run["fitted_s"], run["cross_validated_s"], name[:-5])
    return out


def add_fitted(results):
    fits = fitted_runs()
    for r in results:
        f = fits.get(r.get("id"))
        m = measured_s(r["row"]) if r.get("tokens") is not None else None
        if f and m:
            r["err_fitted"] = m / f[0] - 1     # tokens/s error: time's inverse
            r["err_cv"] = m / f[1] - 1
            r["fitted_profile"] = f[2]


def klass(r):
    """The classes of the fitted profiles' target: dense H100, dense Blackwell, MoE."""
    if "--ep" in r["argv"]:
        return "MoE"
    return "dense H100" if r["row"]["system"] == "DGX-H100" else "dense Blackwell"


def md_fitted(done):
    with_cv = [r for r in done if r.get("err_cv") is not None]
    if not with_cv:
        return ["(no fitted profiles yet: scripts/fit_profiles.sh writes them)"]
    lines = ["| class | rows | sourced mean | sourced mean abs | fitted, in sample, mean abs | "
             "fitted, leave-one-group-out cross-validated, mean | mean abs | worst |",
             "|---|---|---|---|---|---|---|---|"]
    groups = {"all": with_cv}
    for r in with_cv:
        groups.setdefault(klass(r), []).append(r)
        groups.setdefault(r["row"]["system"], []).append(r)
    for k in ["all", "dense H100", "dense Blackwell", "MoE"] + sorted(
            g for g in groups if g.startswith("DGX")):
        v = groups.get(k)
        if not v:
            continue
        src, fit, cv = stats([r["err_tokens"] for r in v]), stats([r["err_fitted"] for r in v]), \
            stats([r["err_cv"] for r in v])
        worst = max((abs(r["err_cv"]) for r in v), default=0)
        lines.append(f"| {k} | {len(v)} | {pct(src['mean'])} | {absp(src['mae'])} | {absp(fit['mae'])} | "
                     f"{pct(cv['mean'])} | {absp(cv['mae'])} | {absp(worst)} |")
    return lines


def write_atomic(path, text):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def default_spsim():
    for p in ("build/src/cli/spsim", "build/spsim"):
        if os.path.exists(os.path.join(ROOT, p)):
            return os.path.join(ROOT, p)
    return os.path.join(ROOT, "build/src/cli/spsim")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spsim", default=default_spsim(), help="the spsim binary (default build/src/cli/spsim)")
    ap.add_argument("--rows", default=os.path.join(DATA, "megatron-bridge-nemo-rows.csv"))
    ap.add_argument("--data", default=DATA, help="folder of profiles.csv and recipe-settings.csv")
    ap.add_argument("--write", metavar="FILE", help="write the Markdown report to FILE (atomically)")
    ap.add_argument("--json", metavar="FILE", help="write one JSON object per row to FILE (atomically)")
    ap.add_argument("--runs-dir", metavar="DIR", help="write DIR/runs-HW.csv, the rows predicted as "
                    "measured runs for spsim calibrate --runs, one file per hardware profile")
    a = ap.parse_args(argv)
    if not os.access(a.spsim, os.X_OK):
        print(f"accuracy.py: error: {a.spsim}: not an executable spsim (build it, or give --spsim)", file=sys.stderr)
        return 2
    env = dict(os.environ, SPSIM_DATA_DIR=ROOT)
    maps = Maps(a.data)
    results = [evaluate_row(a.spsim, env, maps, row) for row in read_csv(a.rows)]
    for i, r in enumerate(results):
        r["id"] = run_id(i, r["row"])
    if a.runs_dir:
        for hw in write_runs(results, a.runs_dir):
            print(f"accuracy.py: wrote {os.path.join(a.runs_dir, 'runs-' + hw + '.csv')}", file=sys.stderr)
    add_fitted(results)
    text = write_md(results, paper_rows(a.spsim, env), flops_checks(results))
    if a.json:
        write_atomic(a.json, "".join(json.dumps({k: v for k, v in r.items() if k != "settings"}) + "\n"
                                     for r in results))
    if a.write:
        write_atomic(a.write, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
