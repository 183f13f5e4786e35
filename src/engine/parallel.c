/* Megatron-LM's parallel-configuration rules, with its messages, and spsim's own limits. */
#include "config.h"

#include <stdio.h>

#include "profiles/profiles.h"
#include "compose.h"
#include "moe.h"
#include "pp_schedule.h"
#include "stages.h"
#include "spsim/parallel.h"

#include "eval.h" /* spsim_model_modelled */

/* Bounds beyond which a configuration is refused as absurd: they keep every product of the
 * engines inside 64 bits and reject typos such as --gbs 1e12. */
#define MAX_DEGREE 65536u     /* tp, pp, dp, vpp, ep */
#define MAX_GPUS   (1u << 24) /* tp·pp·dp */
#define MAX_MBS    65536u
#define MAX_GBS    (1ull << 32)
#define MAX_SEQ    (1u << 24)

void
spsim_parallel_defaults(struct spsim_parallel *par)
{
    *par = (struct spsim_parallel){
        .tp = 1,
        .pp = 1,
        .dp = 1,
        .vpp = 1,
        .ep = 1,
        .sp = false,
        .recompute = SPSIM_RECOMPUTE_NONE,
        .recompute_modules = 0,
        .recompute_method = SPSIM_RECOMPUTE_METHOD_DEFAULT,
        .recompute_layers = 0,
        .offload_layers = 0,
        .mbs = 1,
        .gbs = 1,
        .seq = 0,
        .flash_attn = -1,
        .attention_backend = SPSIM_ATTN_AUTO,
        .distributed_optimizer = false,
        .overlap_grad_reduce = false,
        .dtype = SPSIM_DTYPE_BF16,
        .cp = 1,
        .cp_comm_type = SPSIM_CP_P2P,
        .hcp_sizes = {0, 0},
        .zero = 0,
        .grad_reduce_in_fp32 = -1,
        .overlap_param_gather = false,
        .bridge_ddp = false,
        .dist_opt_instances = 1,
        .outer_dp_shard = false,
        .fp8_recipe = SPSIM_FP8_DELAYED,
        .fp8_param_gather = false,
        .no_overlap_p2p = false,
        .ddp_bucket_size = 0,
        .tp_comm_overlap = false,
        .cuda_graph_impl = SPSIM_CUDA_GRAPH_NONE,
        .cuda_graph_scope = 0,
        .moe_a2a_overlap = false,
        .delay_wgrad_compute = false,
        .moe_routing = SPSIM_MOE_ROUTING_RANDOM,
        .first_last_layers_bf16 = false,
        .bf16_layers_start = 1,
        .bf16_layers_end = 1,
    };
}

const char *
spsim_warning_text(uint32_t bit)
{
    switch (bit) {
    case SPSIM_WARN_TP_SPANS_DOMAIN:
        return "the tensor-parallel group spans more GPUs than one NVLink domain holds: its "
               "collectives cross the scale-out network (Megatron advises keeping TP inside a "
               "node)";
    case SPSIM_WARN_TP_STRADDLES_DOMAIN:
        return "tp does not divide the NVLink domain size: some tensor-parallel groups straddle "
               "two domains";
    case SPSIM_WARN_FEW_MICROBATCHES:
        return "fewer micro-batches than pipeline stages: the pipeline never fills and most "
               "stages idle";
    default:
        return "";
    }
}

#define CONFIG_FAIL(err, ...) spsim_fail((err), SPSIM_ECONFIG, "parallel config: " __VA_ARGS__)

/* The degree out of [1, MAX_DEGREE], named. */
static int
degree_error(const struct spsim_parallel *p, struct spsim_error *err)
{
    const struct {
        const char *name;
        uint32_t value;
    } degrees[] = {{"tp", p->tp},   {"pp", p->pp}, {"dp", p->dp},
                   {"vpp", p->vpp}, {"ep", p->ep}, {"cp", p->cp}};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(degrees); i++)
        if (degrees[i].value < 1 || degrees[i].value > MAX_DEGREE)
            return CONFIG_FAIL(err, "field '%s': must be an integer in [1, %u], got %u",
                               degrees[i].name, MAX_DEGREE, degrees[i].value);
    return SPSIM_OK;
}

/* FP8 recipes and FP8 parameters (Megatron arguments.py: --fp8-param-gather needs the
 * distributed optimizer, FSDP2 or Megatron-FSDP). */
static int
check_fp8(const struct spsim_parallel *p, struct spsim_error *err)
{
    if (p->fp8_recipe == SPSIM_FP8_DELAYED && !p->fp8_param_gather)
        return SPSIM_OK; /* the sweep's common case: one test */
    if ((unsigned)p->fp8_recipe >= SPSIM_FP8_RECIPE_COUNT)
        return CONFIG_FAIL(err, "field 'fp8_recipe': must be delayed, current, mxfp8 or blockwise");
    if (p->fp8_recipe != SPSIM_FP8_DELAYED && p->dtype != SPSIM_DTYPE_FP8)
        return CONFIG_FAIL(err, "field 'fp8_recipe': %s scaling needs dtype fp8",
                           spsim_fp8_recipe_name(p->fp8_recipe));
    if (p->fp8_param_gather && p->dtype != SPSIM_DTYPE_FP8 && p->dtype != SPSIM_DTYPE_NVFP4)
        return CONFIG_FAIL(err,
                           "field 'fp8_param_gather': FP8 parameters need dtype fp8 (or nvfp4, "
                           "--fp4-param-gather)");
    if (p->fp8_param_gather && !p->distributed_optimizer && p->zero == 0)
        return CONFIG_FAIL(err, "field 'fp8_param_gather': needs the distributed optimizer or "
                                "Megatron-FSDP (zero >= 1)");
    return SPSIM_OK;
}

/* The precision-aware optimizer's dtypes (Megatron optimizer_config.py __post_init__,
 * arguments.py, optimizer/__init__.py; messages as Megatron words them). */
static int
check_optimizer(const struct spsim_parallel *p, struct spsim_error *err)
{
    static const char *const fields[4] = {"main_grads_dtype", "main_params_dtype", "exp_avg_dtype",
                                          "exp_avg_sq_dtype"};
    const enum spsim_opt_dtype d[4] = {p->main_grads_dtype, p->main_params_dtype, p->exp_avg_dtype,
                                       p->exp_avg_sq_dtype};
    for (int i = 0; i < 4; i++) {
        if ((unsigned)d[i] >= SPSIM_OPT_DTYPE_COUNT)
            return CONFIG_FAIL(err, "field '%s': must be fp32, fp16, bf16 or fp8", fields[i]);
        if (d[i] != SPSIM_OPT_FP32 && !p->precision_aware_optimizer)
            return CONFIG_FAIL(err,
                               "field '%s': %s can only be fp32 when not using precision-aware "
                               "optimizer",
                               fields[i], fields[i]);
    }
    if (p->main_grads_dtype != SPSIM_OPT_FP32 && p->main_grads_dtype != SPSIM_OPT_BF16)
        return CONFIG_FAIL(err,
                           "field 'main_grads_dtype': must be fp32 or bf16 (--main-grads-dtype)");
    if (p->main_params_dtype != SPSIM_OPT_FP32 && p->main_params_dtype != SPSIM_OPT_FP16)
        return CONFIG_FAIL(err,
                           "field 'main_params_dtype': must be fp32 or fp16 (--main-params-dtype)");
    if (p->main_grads_dtype == SPSIM_OPT_BF16 && p->grad_reduce_in_fp32 == 1)
        return CONFIG_FAIL(err,
                           "field 'main_grads_dtype': --main-grads-dtype can only be fp32 when "
                           "--accumulate-allreduce-grads-in-fp32 is set");
    if (p->precision_aware_optimizer && !p->distributed_optimizer && p->zero == 0)
        return CONFIG_FAIL(err, "field 'precision_aware_optimizer': "
                                "--use-precision-aware-optimizer only supported with distributed "
                                "optimizer");
    return SPSIM_OK;
}

static int
check_ranges(const struct spsim_parallel *p, struct spsim_error *err)
{
    /* v − 1 < MAX_DEGREE (unsigned) is 1 <= v <= MAX_DEGREE: the sweep's common case is one
     * test per degree, the message only on failure. */
    if (!(p->tp - 1u < MAX_DEGREE && p->pp - 1u < MAX_DEGREE && p->dp - 1u < MAX_DEGREE &&
          p->vpp - 1u < MAX_DEGREE && p->ep - 1u < MAX_DEGREE && p->cp - 1u < MAX_DEGREE))
        return degree_error(p, err);
    uint64_t gpus = (uint64_t)p->tp * p->cp * p->pp * p->dp;
    if (gpus > MAX_GPUS)
        return CONFIG_FAIL(err, "field 'tp·cp·pp·dp': %llu GPUs is more than the %u supported",
                           (unsigned long long)gpus, MAX_GPUS);
    if (p->mbs < 1 || p->mbs > MAX_MBS)
        return CONFIG_FAIL(err, "field 'mbs': must be an integer in [1, %u], got %u", MAX_MBS,
                           p->mbs);
    if (p->gbs < 1 || p->gbs > MAX_GBS)
        return CONFIG_FAIL(err, "field 'gbs': must be an integer in [1, %llu], got %llu",
                           (unsigned long long)MAX_GBS, (unsigned long long)p->gbs);
    if (p->seq > MAX_SEQ)
        return CONFIG_FAIL(err, "field 'seq': must be at most %u, got %u", MAX_SEQ, p->seq);
    if ((unsigned)p->recompute > SPSIM_RECOMPUTE_FULL)
        return CONFIG_FAIL(err, "field 'recompute': must be none, selective or full");
    if (p->flash_attn < -1 || p->flash_attn > 1)
        return CONFIG_FAIL(err, "field 'flash_attn': must be -1 (model default), 0 or 1");
    if (p->dtype != SPSIM_DTYPE_BF16 && p->dtype != SPSIM_DTYPE_FP16 &&
        p->dtype != SPSIM_DTYPE_FP8 && p->dtype != SPSIM_DTYPE_NVFP4)
        return CONFIG_FAIL(err, "field 'dtype': must be bf16, fp16, fp8 or nvfp4");
    if ((unsigned)p->cp_comm_type >= SPSIM_CP_COMM_COUNT)
        return CONFIG_FAIL(err, "field 'cp_comm_type': must be p2p, all_gather, a2a or a2a+p2p");
    if (p->zero > 3)
        return CONFIG_FAIL(err, "field 'zero': must be 0, 1, 2 or 3, got %u", p->zero);
    if (p->grad_reduce_in_fp32 < -1 || p->grad_reduce_in_fp32 > 1)
        return CONFIG_FAIL(err, "field 'grad_reduce_in_fp32': must be -1 (dtype default), 0 or 1");
    return check_fp8(p, err);
}

/* a2a+p2p: Megatron's hierarchical sizes (arguments.py, parallel_state.py; messages verbatim). */
static int
check_hierarchical(const struct spsim_parallel *p, struct spsim_error *err)
{
    bool set = p->hcp_sizes[0] || p->hcp_sizes[1];
    if (p->cp_comm_type == SPSIM_CP_A2A_P2P && !set)
        return CONFIG_FAIL(err, "field 'hierarchical_cp_sizes': "
                                "--hierarchical-context-parallel-sizes must be set when a2a+p2p is "
                                "used in cp comm");
    if (set && (uint64_t)p->hcp_sizes[0] * p->hcp_sizes[1] != p->cp)
        return CONFIG_FAIL(err,
                           "field 'hierarchical_cp_sizes': the product of the hierarchical "
                           "context-parallel sizes %u·%u must equal context_parallel_size = %u",
                           p->hcp_sizes[0], p->hcp_sizes[1], p->cp);
    return SPSIM_OK;
}

/* Context parallelism: Megatron's arguments.py and TE's context_parallel.py (messages
 * verbatim); the heads an A2A splits are those of one TP rank. */
static int
check_context(const struct spsim_model_shape *m, const struct spsim_parallel *p, uint32_t seq,
              bool flash, struct spsim_error *err)
{
    if (p->cp <= 1 && p->cp_comm_type != SPSIM_CP_A2A_P2P && !p->hcp_sizes[0] && !p->hcp_sizes[1])
        return SPSIM_OK;
    int rc = check_hierarchical(p, err);
    if (rc != SPSIM_OK || p->cp <= 1)
        return rc;
    if (seq % (2ull * p->cp) != 0)
        return CONFIG_FAIL(err,
                           "field 'seq': seq-length should be a multiple of 2 * "
                           "context-parallel-size if context-parallel-size > 1 (seq = %u, cp = %u)",
                           seq, p->cp);
    /* With SP each of the 2·cp load-balancing chunks is split over the tp ranks. */
    if (p->sp && seq % (2ull * p->cp * p->tp) != 0)
        return CONFIG_FAIL(err,
                           "field 'seq': with sequence parallelism seq = %u must be a multiple "
                           "of 2·cp·tp = 2·%u·%u",
                           seq, p->cp, p->tp);
    /* megatron/core/transformer/dot_product_attention.py (the local attention). */
    if (!flash)
        return CONFIG_FAIL(err, "field 'flash_attn': Context parallelism is only supported by "
                                "TEDotProductAttention!");
    uint32_t a2a = p->cp_comm_type == SPSIM_CP_A2A       ? p->cp
                   : p->cp_comm_type == SPSIM_CP_A2A_P2P ? p->hcp_sizes[0]
                                                         : 1;
    if (a2a > 1 && ((m->heads / p->tp) % a2a != 0 || (m->kv_heads / p->tp) % a2a != 0))
        return CONFIG_FAIL(err,
                           "field 'cp_comm_type': cp_comm_type='a2a' requires num_heads %% "
                           "cp_size == 0 for Q, K, V. Found num_heads_q = %u, num_heads_kv = %u, "
                           "cp_size = %u.",
                           m->heads / p->tp, m->kv_heads / p->tp, a2a);
    return SPSIM_OK;
}

/* The optimizer's CPU offload: Megatron's rules (arguments.py, messages verbatim) and what the
 * time model needs of the profile. */
static int
check_cpu_offload(const struct spsim_hardware *hw, const struct spsim_parallel *p,
                  struct spsim_error *err)
{
    if (!p->optimizer_cpu_offload) {
        if (p->optimizer_offload_fraction != 0 || p->overlap_cpu_optimizer_d2h_h2d)
            return CONFIG_FAIL(err, "field 'optimizer_offload_fraction': needs "
                                    "optimizer_cpu_offload");
        return SPSIM_OK;
    }
    double f = p->optimizer_offload_fraction;
    if (!(f >= 0 && f <= 1))
        return CONFIG_FAIL(err, "field 'optimizer_offload_fraction': %g is not in [0, 1]", f);
    if (!p->precision_aware_optimizer)
        return CONFIG_FAIL(err,
                           "field 'optimizer_cpu_offload': The optimizer cpu offload must be "
                           "used in conjunction with `--use-precision-aware-optimizer`, as the "
                           "hybrid device optimizer reuses the code path of this flag.");
    if (p->fp8_param_gather && p->fp8_recipe != SPSIM_FP8_DELAYED)
        return CONFIG_FAIL(err, "field 'optimizer_cpu_offload': When `--fp8-param-gather` is "
                                "enabled, the optimizer cpu offload must be used in conjunction "
                                "with `--fp8-recipe delayed`.");
    /* optimizer/__init__.py builds HybridDeviceOptimizer's Adams with fp32 states whatever the
     * precision-aware dtypes say */
    if (p->main_params_dtype || p->exp_avg_dtype || p->exp_avg_sq_dtype)
        return CONFIG_FAIL(err, "field 'optimizer_cpu_offload': the precision-aware optimizer's "
                                "master and moment dtypes are not those of the hybrid device "
                                "optimizer (fp32); leave them fp32");
    if (p->optimizer == SPSIM_OPTIMIZER_MUON || p->zero >= 2)
        return CONFIG_FAIL(err, "field 'optimizer_cpu_offload': with Muon or Megatron-FSDP "
                                "(zero >= 2) it is not modelled");
    /* The offloaded gradients' copy into the fp32 host buffer (hybrid_optimizer.py:108-114;
     * the buffer has the host copy's dtype, fp32 by param_update_in_fp32): fp32 gradients move
     * 4 B each; 16-bit ones are converted on the GPU or on the host as PyTorch's copy_ decides
     * (aten/src/ATen/native/cuda/Copy.cu, not readable here: the pytorch snapshot is over the
     * fetch limit), so their 2 or 4 B is unsourced. */
    if (f > 0 && grad_bytes(p) != 4)
        return CONFIG_FAIL(err, "field 'main_grads_dtype': --optimizer-cpu-offload with 16-bit "
                                "gradients is not modelled (the size of their copy to the fp32 "
                                "host buffer, converted on the GPU or the host by PyTorch's "
                                "copy_, is unsourced); use fp32 main gradients");
    if (f > 0 && hw && hw->host_d2h_Bps <= 0)
        return CONFIG_FAIL(err, "field 'optimizer_cpu_offload': the hardware profile has no "
                                "host_link (GPU <-> host copy bandwidth)");
    if (f > 0 && hw && hw->host_cpu_memory_Bps <= 0)
        return CONFIG_FAIL(err, "field 'optimizer_cpu_offload': the hardware profile has no "
                                "host_link.cpu_memory_GBps (the CPU's memory bandwidth for its "
                                "Adam step; no shipped profile has a sourced figure)");
    return SPSIM_OK;
}

/* Muon (engine/optimizer.c): what spsim models of it. */
static int
check_muon(const struct spsim_model_shape *m, const struct spsim_parallel *p,
           struct spsim_error *err)
{
    if ((unsigned)p->optimizer >= SPSIM_OPTIMIZER_COUNT)
        return CONFIG_FAIL(err, "field 'optimizer': %d is not adam or muon", (int)p->optimizer);
    if (p->optimizer != SPSIM_OPTIMIZER_MUON) {
        if (p->muon_ns_steps || p->muon_tp_mode || p->muon_nesterov || p->muon_no_split_qkv)
            return CONFIG_FAIL(err, "field 'optimizer': the muon_* options need optimizer muon");
        return SPSIM_OK;
    }
    if ((unsigned)p->muon_tp_mode >= SPSIM_MUON_TP_COUNT)
        return CONFIG_FAIL(err, "field 'muon_tp_mode': %d is not duplicated or blockwise",
                           (int)p->muon_tp_mode);
    if (p->muon_ns_steps > 100)
        return CONFIG_FAIL(err, "field 'muon_ns_steps': %u exceeds 100", p->muon_ns_steps);
    if (p->precision_aware_optimizer)
        return CONFIG_FAIL(err, "field 'optimizer': muon with --use-precision-aware-optimizer "
                                "(TE's FusedAdam dtypes) is not modelled");
    if (p->zero >= 2)
        return CONFIG_FAIL(err, "field 'optimizer': muon with Megatron-FSDP (zero >= 2) is not "
                                "modelled");
    /* Megatron-Bridge kimi_llm_pretrain.py @8f341b04f: fp8_param_gather "requires
     * DistributedOptimizer infrastructure, incompatible with Muon's
     * LayerWiseDistributedOptimizer" */
    if (p->fp8_param_gather)
        return CONFIG_FAIL(err, "field 'fp8_param_gather': --fp8-param-gather is incompatible "
                                "with Muon's layer-wise distributed optimizer");
    if (p->lora_rank)
        return CONFIG_FAIL(err, "field 'optimizer': muon with LoRA is not modelled");
    if (m->hybrid_pattern)
        return CONFIG_FAIL(err, "field 'optimizer': muon with a hybrid model (Mamba's in_proj "
                                "steps with Adam: use_muon = False) is not modelled");
    uint32_t etp = p->etp ? p->etp : p->tp;
    if (p->muon_tp_mode == SPSIM_MUON_TP_DUPLICATED && m->experts && etp > 1)
        return CONFIG_FAIL(err, "field 'muon_tp_mode': duplicated with expert tensor "
                                "parallelism (etp > 1) is not modelled; use blockwise");
    return SPSIM_OK;
}

/* Sharded data parallelism: arguments.py's --overlap-param-gather rules (messages verbatim). */
static int
check_sharding(const struct spsim_parallel *p, struct spsim_error *err)
{
    /* Megatron-FSDP at d98e8a64 shards over the dp·cp × tp ranks of the whole world: its v1
     * adapter builds the device mesh from torch.arange(world_size) as (dp_cp ep tp)
     * (distributed/fsdp/mcore_fsdp_adapter.py:820-832 _get_dp_tp_mesh, :751-761 for HSDP), which
     * fails unless pp = 1, and its v2 refuses pipeline_model_parallel_size != 1 (:626-640). No
     * functional test nor Bridge recipe runs it with pp > 1. zero 1 is also the distributed
     * optimizer, which pipelines. */
    if (p->zero >= 2 && p->pp > 1)
        return CONFIG_FAIL(err,
                           "field 'zero': Megatron-FSDP (zero %u, %s) needs pp = 1: it meshes "
                           "the dp·cp × tp ranks of the whole world (mcore_fsdp_adapter.py "
                           "_get_dp_tp_mesh); got pp = %u",
                           p->zero, p->zero == 2 ? "optim_grads" : "optim_grads_params", p->pp);
    if (!p->overlap_param_gather)
        return SPSIM_OK;
    if (p->overlap_param_gather && !p->distributed_optimizer && p->zero == 0)
        return CONFIG_FAIL(err, "field 'overlap_param_gather': --overlap-param-gather only "
                                "supported with distributed optimizer, megatron fsdp, or "
                                "dist_muon");
    /* Megatron-FSDP forces overlap_grad_reduce for optim_grads and optim_grads_params
     * (megatron_fsdp.py), so only levels 0 and 1 can lack it; Megatron-Bridge's recipes do not
     * run arguments.py (bridge_ddp). */
    if (p->overlap_param_gather && !p->overlap_grad_reduce && p->zero < 2 && !p->bridge_ddp)
        return CONFIG_FAIL(err, "field 'overlap_param_gather': Must use --overlap-param-gather "
                                "with --overlap-grad-reduce");
    return SPSIM_OK;
}

/* HSDP (--num-distributed-optimizer-instances R > 1): Megatron-Core's rules at d98e8a64,
 * messages verbatim. Without HSDP the outer strategy has no effect, as in Megatron (arguments.py:
 * "only effective when Hybrid FSDP is enabled"). */
static int
check_hsdp(const struct spsim_model_shape *m, const struct spsim_parallel *p,
           struct spsim_error *err)
{
    uint32_t R = p->dist_opt_instances;
    if (R <= 1)
        return SPSIM_OK;
    /* parallel_state.py:922-926 */
    if (((uint64_t)p->dp * p->cp) % R != 0)
        return CONFIG_FAIL(err,
                           "field 'dist_opt_instances': Data parallel size should be divisible by "
                           "partial DistOpt shard factor (dp·cp = %u·%u, %u instances)",
                           p->dp, p->cp, R);
    /* distributed_data_parallel.py:357-360 */
    if (!p->distributed_optimizer && p->zero == 0)
        return CONFIG_FAIL(err, "field 'dist_opt_instances': Partial DistOpt cannot be used "
                                "without DistOpt");
    /* megatron_fsdp/param_and_grad_buffer.py:2500-2513 (NotImplementedError) */
    if (p->outer_dp_shard && p->zero != 3)
        return CONFIG_FAIL(err, "field 'outer_dp_shard': [Megatron-FSDP] Optimizer fully-sharded "
                                "HFSDP is only supported with full-sharding on DP-Shard.");
    /* parallel_state.py:1447-1449: the experts' groups split the same way */
    uint64_t edp = m->experts ? spsim_moe_edp(p) : R;
    if (edp % R != 0)
        return CONFIG_FAIL(err,
                           "field 'dist_opt_instances': Expert data parallel size should be "
                           "divisible by partial DistOpt shard factor (edp = %llu, %u instances)",
                           (unsigned long long)edp, R);
    /* Megatron-FSDP's HSDP of an MoE model is accepted: mcore_fsdp_adapter.py:406-415 builds
     * the experts' mesh [outer_fsdp_dp, intra-partial expert dp, etp] beside the dense one, with
     * nothing asserted against it (the outer sharding too: the upstream unit test
     * tests/unit_tests/distributed/mfsdp_v1/test_mcore_fully_sharded_data_parallel.py:899,914-915
     * runs OUTER_DP 2 × EP 2 with outer_dp_sharding_strategy "optim"). */
    if (p->optimizer == SPSIM_OPTIMIZER_MUON)
        return CONFIG_FAIL(err, "field 'dist_opt_instances': HSDP with Muon (the layer-wise "
                                "distributed optimizer) is not modelled");
    return SPSIM_OK;
}

static int
check_tensor(const struct spsim_model_shape *m, const struct spsim_parallel *p, uint32_t seq,
             struct spsim_error *err)
{
    /* arguments.py (message verbatim). */
    if (p->tp_comm_overlap && !p->sp)
        return CONFIG_FAIL(err, "field 'tp_comm_overlap': Tensor parallel communication/GEMM "
                                "overlap can happen only when sequence parallelism is enabled");
    /* megatron/core/model_parallel_config.py __post_init__ (message verbatim). */
    if (p->sp && p->tp <= 1)
        return CONFIG_FAIL(err,
                           "field 'sp': Cannot use sequence parallelism without tensor "
                           "parallelism (tp = %u)",
                           p->tp);
    if (m->heads % p->tp != 0)
        return CONFIG_FAIL(err,
                           "field 'tp': the model's %u attention heads are not divisible by "
                           "tp = %u",
                           m->heads, p->tp);
    if (m->kv_heads % p->tp != 0)
        return CONFIG_FAIL(err,
                           "field 'tp': the model's %u key/value heads (query groups) are not "
                           "divisible by tp = %u",
                           m->kv_heads, p->tp);
    if (m->ffn_hidden % p->tp != 0)
        return CONFIG_FAIL(err, "field 'tp': the model's ffn_hidden %u is not divisible by tp = %u",
                           m->ffn_hidden, p->tp);
    /* Megatron splits [s, b, h] along s for the SP region: s must divide evenly. */
    if (p->sp && seq % p->tp != 0)
        return CONFIG_FAIL(err,
                           "field 'seq': sequence parallelism splits the sequence over tp = "
                           "%u ranks, but seq = %u is not divisible by it",
                           p->tp, seq);
    if (m->experts == 0 && p->ep == 1 && p->etp <= 1 && p->moe_dispatcher == SPSIM_MOE_ALLGATHER &&
        !p->moe_a2a_overlap && !p->delay_wgrad_compute)
        return SPSIM_OK; /* dense: nothing of MoE asked */
    return spsim_moe_check(m, p, err);
}

/*
 * The interleaved schedule's micro-batch groups (schedules.py
 * forward_backward_pipelining_with_interleaving at d98e8a64, messages verbatim): each virtual
 * stage runs N micro-batches in a row (--microbatch-group-size-per-virtual-pipeline-stage,
 * default pp), N in [pp, M], and the last group, M mod N, is 0 or at least pp. With the default
 * N = pp that is M divisible by pp (2022-2024's "number of microbatches is not divisible by
 * pipeline-parallel size when using interleaved schedule").
 */
static int
check_groups(const struct spsim_parallel *p, uint32_t v, uint64_t micro, struct spsim_error *err)
{
    uint64_t n = p->microbatch_group ? p->microbatch_group : p->pp;
    if (v <= 1 || p->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON) /* only the interleaved
                                                                  schedule reads it */
        return SPSIM_OK;
    if (n > micro || n < p->pp)
        return CONFIG_FAIL(err,
                           "field 'microbatch_group': The number of contiguous micro-batches in "
                           "a virtual pipeline stageshould range in [PP=%u , M=%llu] (it is %llu)",
                           p->pp, (unsigned long long)micro, (unsigned long long)n);
    uint64_t last = micro % n;
    if (last > 0 && last < p->pp)
        return CONFIG_FAIL(err,
                           "field 'gbs': The remainder of M (the total micro-batches) divided by "
                           "N (number of contiguous micro-batches in a virtual pipeline stage) "
                           "should be 0, or larger than or equal to the pipeline-parallel size, "
                           "but it is %llu (M = %llu, N = %llu, pp = %u)",
                           (unsigned long long)last, (unsigned long long)micro,
                           (unsigned long long)n, p->pp);
    return SPSIM_OK;
}

bool
spsim_batch_fails(const struct spsim_parallel *p, uint32_t v)
{
    uint64_t per_step = (uint64_t)p->mbs * p->dp;
    if (per_step == 0 || p->gbs % per_step != 0)
        return true;
    return check_groups(p, v, p->gbs / per_step, NULL) != SPSIM_OK;
}

/* --defer-embedding-wgrad-compute: Megatron-LM d98e8a64 model_parallel_config.py:545-553 (its
 * messages); the drain is in Megatron's own schedules only (schedules.py). */
static int
check_deferred_wgrad(const struct spsim_parallel *p, struct spsim_error *err)
{
    if (!p->defer_embedding_wgrad_compute)
        return SPSIM_OK;
    if (p->pp < 2)
        return CONFIG_FAIL(err, "field 'defer_embedding_wgrad_compute': Cannot defer embedding "
                                "wgrad compute when pipeline model parallel is not used");
    if (p->no_gradient_accumulation_fusion)
        return CONFIG_FAIL(err, "field 'defer_embedding_wgrad_compute': Cannot defer embedding "
                                "wgrad compute when gradient accumulation fusion is not used");
    if (p->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON)
        return CONFIG_FAIL(err,
                           "field 'defer_embedding_wgrad_compute': only Megatron's 1F1B and "
                           "interleaved schedules drain the deferred gradients "
                           "(schedules.py); not with --pp-schedule %s",
                           spsim_pp_schedule_name(p->pp_schedule, p->vpp));
    return SPSIM_OK;
}

static int
check_pipeline(const struct spsim_model_shape *m, const struct spsim_parallel *p,
               struct spsim_error *err)
{
    struct spsim_stage_plan plan;
    plan.v = p->vpp;
    bool plain = !p->first_stage_layers && !p->last_stage_layers && !p->account_embedding &&
                 !p->account_loss && !p->pipeline_layout;
    /* The sweep's common case first: an even split either divides or is refused. */
    int rc = !plain                                        ? spsim_stage_plan_make(m, p, &plan, err)
             : m->layers % ((uint64_t)p->pp * p->vpp) == 0 ? SPSIM_OK
                                                           : spsim_stage_even_error(m, p, err);
    if (rc != SPSIM_OK)
        return rc;
    /* spsim's limit, not Megatron's: a recompute method and CPU offload are modelled per
     * model chunk of equal layers. */
    if (!plain && (p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT || p->offload_layers))
        return CONFIG_FAIL(err, "field 'recompute_method': uneven pipeline stages with a "
                                "recompute method or offload_layers are not modelled");
    if (plan.v > 1 && p->pp < 2)
        return CONFIG_FAIL(err, "field 'vpp': the interleaved schedule (vpp = %u) needs pp >= 2",
                           plan.v);
    if ((rc = check_deferred_wgrad(p, err)) != SPSIM_OK)
        return rc;
    uint64_t per_step = (uint64_t)p->mbs * p->dp;
    if (p->gbs % per_step != 0)
        return CONFIG_FAIL(err,
                           "field 'gbs': global batch size %llu is not divisible by "
                           "micro-batch size × dp = %u × %u",
                           (unsigned long long)p->gbs, p->mbs, p->dp);
    uint64_t micro = p->gbs / per_step;
    if (p->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON &&
        (rc = spsim_pp_schedule_check(p, micro, err)))
        return rc;
    return check_groups(p, plan.v, micro, err);
}

/* Selective modules: dense layers have core_attn, layernorm and mlp. */
static int
check_modules(const struct spsim_model_shape *m, const struct spsim_parallel *p,
              struct spsim_error *err)
{
    uint32_t mods = p->recompute_modules;
    if (mods >> SPSIM_RMOD_COUNT_)
        return CONFIG_FAIL(err, "field 'recompute_modules': unknown module bits 0x%x", mods);
    if (mods && p->recompute != SPSIM_RECOMPUTE_SELECTIVE)
        return CONFIG_FAIL(err, "field 'recompute_modules': modules are recomputed with recompute "
                                "selective only (Megatron reads recompute_modules for "
                                "recompute_granularity selective)");
    /* transformer_config.py __post_init__ (message verbatim). */
    if ((mods & SPSIM_RMOD_MLA_UP_PROJ) && m->kv_lora_rank == 0)
        return CONFIG_FAIL(err, "field 'recompute_modules': mla_up_proj in recompute_modules is "
                                "only supported with multi_latent_attention.");
    if (m->experts == 0 &&
        (mods & (SPSIM_RMOD_MOE_ACT | SPSIM_RMOD_MOE | SPSIM_RMOD_SHARED_EXPERTS)))
        return CONFIG_FAIL(err, "field 'recompute_modules': moe_act, moe and shared_experts "
                                "recompute mixture-of-experts layers; this model is dense (dense "
                                "layers have core_attn, layernorm and mlp)");
    return SPSIM_OK;
}

/* Full recomputation's method and layer count (transformer_config.py, messages verbatim). */
static int
check_recompute_method(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                       struct spsim_error *err)
{
    if ((unsigned)p->recompute_method >= SPSIM_RECOMPUTE_METHOD_COUNT)
        return CONFIG_FAIL(err, "field 'recompute_method': must be default, uniform or block");
    bool method = p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT;
    if (p->recompute == SPSIM_RECOMPUTE_SELECTIVE && p->recompute_layers)
        return CONFIG_FAIL(err, "field 'recompute_layers': When using recompute_granularity: "
                                "selective recompute_num_layers must be None.");
    if (p->recompute != SPSIM_RECOMPUTE_FULL && (method || p->recompute_layers))
        return CONFIG_FAIL(err, "field 'recompute_method': a method and a layer count apply to "
                                "recompute full only");
    if (p->recompute != SPSIM_RECOMPUTE_FULL)
        return SPSIM_OK;
    if (!method && p->recompute_layers)
        return CONFIG_FAIL(err, "field 'recompute_method': Using recompute_granularity: full so "
                                "recompute_method must be \"block\" or \"uniform\"");
    uint32_t per_rank = m->layers / p->pp;
    if (method && (p->recompute_layers < 1 || p->recompute_layers > per_rank))
        return CONFIG_FAIL(err,
                           "field 'recompute_layers': When using recompute_granularity: full "
                           "recompute_num_layers must be between 1 and "
                           "num_layers_per_pipeline_rank: %u",
                           per_rank);
    return SPSIM_OK;
}

/* Layer-level CPU offloading (transformer_config.py __post_init__, messages verbatim). */
static int
check_offload(const struct spsim_model_shape *m, const struct spsim_hardware *hw,
              const struct spsim_parallel *p, struct spsim_error *err)
{
    if (p->offload_layers == 0)
        return SPSIM_OK;
    if (p->offload_layers >= m->layers)
        return CONFIG_FAIL(err,
                           "field 'offload_layers': CPU offloading can be done only for layers "
                           "less than %u",
                           m->layers);
    if (p->pp > 1)
        return CONFIG_FAIL(err, "field 'offload_layers': Currently there is no support for "
                                "Pipeline parallelism with CPU offloading");
    if (p->recompute != SPSIM_RECOMPUTE_NONE)
        return CONFIG_FAIL(err, "field 'offload_layers': CPU offloading does not work when "
                                "activation recomputation is enabled");
    if (hw && hw->host_d2h_Bps <= 0)
        return CONFIG_FAIL(err,
                           "field 'offload_layers': the hardware profile %s has no host_link "
                           "(GPU to host memory bandwidth)",
                           SPSIM_Q(hw->name));
    return SPSIM_OK;
}

static uint32_t
hardware_warnings(const struct spsim_hardware *hw, const struct spsim_parallel *p)
{
    uint32_t w = 0;
    if (!hw)
        return w;
    if (p->tp > hw->nvlink_domain_gpus)
        w |= SPSIM_WARN_TP_SPANS_DOMAIN;
    else if (hw->nvlink_domain_gpus % p->tp != 0)
        w |= SPSIM_WARN_TP_STRADDLES_DOMAIN;
    return w;
}

/* The warnings of a configuration that passed the rules. */
static uint32_t
config_warnings(const struct spsim_hardware *hw, const struct spsim_parallel *p)
{
    uint64_t micro = p->gbs / ((uint64_t)p->mbs * p->dp);
    uint32_t w = hardware_warnings(hw, p);
    if (p->pp > 1 && micro < p->pp)
        w |= SPSIM_WARN_FEW_MICROBATCHES;
    return w;
}

/* Every feature a valid profile describes (issue 11: MoE, MLA, MTP) is modelled; what is not
 * modelled of their combinations with a configuration is refused by spsim_parallel_check. */
int
spsim_model_modelled(const struct spsim_model *model, struct spsim_error *err)
{
    (void)model;
    (void)err;
    return SPSIM_OK;
}

/*
 * Attention sinks (softmax_type off-by-one or learnable) where Transformer Engine runs them
 * (dot_product_attention/utils.py get_attention_backend at d0067d0, "Filter: Softmax type",
 * :1113-1155): FlashAttention is disabled for them (:1122-1124), so the flash backend alone
 * leaves none; with context parallelism FusedAttention only with cp_comm_type a2a (:1148-1155),
 * and UnfusedDotProductAttention has no context parallelism (Megatron-Core's local attention:
 * check_context). Its FP8 rule meets no configuration spsim states (core attention stays
 * BF16, engine/fp8.c); its packed-sequence (THD) rule asks for cuDNN 9.18, a version spsim is
 * not told: packed sequences are taken to run. Without a measured FusedAttention
 * (gpu.attention_table) the attention is priced at the profile's flash rate (timing.c).
 */
static int
check_softmax(const struct spsim_model_shape *m, const struct spsim_parallel *p,
              struct spsim_error *err)
{
    if (m->softmax_type == SPSIM_SOFTMAX_VANILLA)
        return SPSIM_OK;
    const char *type = spsim_softmax_names[m->softmax_type];
    if (p->attention_backend == SPSIM_ATTN_FLASH)
        return CONFIG_FAIL(err,
                           "field 'attention_backend': flash runs no attention sinks (the "
                           "model's softmax_type %s): Transformer Engine disables "
                           "FlashAttention for them; use auto or fused",
                           type);
    if (p->cp > 1 && p->cp_comm_type != SPSIM_CP_A2A)
        return CONFIG_FAIL(err,
                           "field 'cp_comm_type': attention sinks (the model's softmax_type %s) "
                           "run with context parallelism only with cp_comm_type a2a "
                           "(Transformer Engine's FusedAttention), got %s",
                           type, spsim_cp_comm_name(p->cp_comm_type));
    return SPSIM_OK;
}

int
spsim_parallel_check(const struct spsim_model *model, const struct spsim_hardware *hw,
                     const struct spsim_parallel *p, uint32_t *warnings, struct spsim_error *err)
{
    if (!model || !p)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_parallel_check: NULL argument");
    const struct spsim_model_shape *m = &model->shape;
    int rc = check_ranges(p, err);
    if (rc != SPSIM_OK)
        return rc;
    uint32_t seq = p->seq ? p->seq : m->seq_len;
    if (m->position == SPSIM_POSITION_LEARNED && seq > m->seq_len)
        return CONFIG_FAIL(err,
                           "field 'seq': %u exceeds the model's %u learned position "
                           "embeddings (seq_len)",
                           seq, m->seq_len);
    bool flash = p->flash_attn < 0 ? m->attention == SPSIM_ATTENTION_FLASH : p->flash_attn == 1;
    if ((rc = check_tensor(m, p, seq, err)) || (rc = check_context(m, p, seq, flash, err)) ||
        (rc = check_softmax(m, p, err)) || (rc = check_sharding(p, err)) ||
        (rc = check_hsdp(m, p, err)) || (rc = check_pipeline(m, p, err)) ||
        (rc = check_modules(m, p, err)) || (rc = check_recompute_method(m, p, err)) ||
        (rc = check_offload(m, hw, p, err)) ||
        ((p->precision_aware_optimizer || p->main_grads_dtype || p->main_params_dtype ||
          p->exp_avg_dtype || p->exp_avg_sq_dtype) &&
         (rc = check_optimizer(p, err))) ||
        (rc = check_muon(m, p, err)) || (rc = check_cpu_offload(hw, p, err)) ||
        (rc = spsim_hybrid_check(m, p, err)) ||
        (p->first_last_layers_bf16 && (rc = spsim_bf16_layers_check(m, p, err))) ||
        ((p->cuda_graph_impl || p->cuda_graph_scope) && (rc = spsim_cuda_graph_check(m, p, err))))
        return rc;
    if ((p->lora_rank || p->lora_targets || p->lora_alpha != 0 || p->lora_dropout != 0 ||
         p->packed_subseq_len) &&
        (rc = spsim_finetune_check(m, p, flash, err)))
        return rc;
    /* TE trains NVFP4 on SM 10.0 and 10.3 only (docs/.../nvfp4.rst "Supported devices"):
     * a GPU without an FP4 tensor-core peak (Hopper, Ampere) cannot run it. */
    if (hw && p->dtype == SPSIM_DTYPE_NVFP4 && hw->peak_flops[p->dtype] <= 0)
        return CONFIG_FAIL(err,
                           "field 'dtype': nvfp4 needs FP4 tensor cores (Blackwell); the hardware "
                           "profile %s has no nvfp4 peak",
                           SPSIM_Q(hw->name));
    if (hw && hw->peak_flops[p->dtype] <= 0)
        return CONFIG_FAIL(err, "field 'dtype': the hardware profile %s has no %s peak",
                           SPSIM_Q(hw->name), spsim_dtype_name(p->dtype));
    if ((unsigned)p->attention_backend >= SPSIM_ATTN_BACKEND_COUNT)
        return CONFIG_FAIL(err, "field 'attention_backend': must be auto, flash or fused");
    if (hw && p->attention_backend == SPSIM_ATTN_FUSED && !hw->attention)
        return CONFIG_FAIL(err,
                           "field 'attention_backend': fused needs the profile's measured fused "
                           "attention (gpu.attention_table), which '%s' has not",
                           hw->name);
    if (warnings)
        *warnings = config_warnings(hw, p);
    return SPSIM_OK;
}

int
spsim_parallel_recheck_batch(const struct spsim_model *model, const struct spsim_hardware *hw,
                             const struct spsim_parallel *p, uint32_t *warnings,
                             struct spsim_error *err)
{
    bool plain = !p->first_stage_layers && !p->last_stage_layers && !p->account_embedding &&
                 !p->account_loss && !p->pipeline_layout;
    uint64_t per_step = (uint64_t)p->mbs * p->dp, micro = per_step ? p->gbs / per_step : 0;
    bool precision = p->precision_aware_optimizer || p->main_grads_dtype || p->main_params_dtype ||
                     p->exp_avg_dtype || p->exp_avg_sq_dtype;
    bool ok = model && plain && p->gbs >= 1 && p->gbs <= MAX_GBS &&
              check_fp8(p, NULL) == SPSIM_OK && check_sharding(p, NULL) == SPSIM_OK &&
              check_hsdp(&model->shape, p, NULL) == SPSIM_OK && per_step &&
              p->gbs % per_step == 0 &&
              (p->pp_schedule == SPSIM_PP_SCHEDULE_MEGATRON ||
               spsim_pp_schedule_check(p, micro, NULL) == SPSIM_OK) &&
              check_groups(p, p->vpp, micro, NULL) == SPSIM_OK &&
              (!precision || check_optimizer(p, NULL) == SPSIM_OK);
    if (!ok)
        return spsim_parallel_check(model, hw, p, warnings, err);
    if (warnings)
        *warnings = config_warnings(hw, p);
    return SPSIM_OK;
}
