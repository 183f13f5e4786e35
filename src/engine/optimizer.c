/*
 * The Adam optimizer's state and step, as Megatron-Core's DistributedOptimizer runs it with
 * Transformer Engine's FusedAdam (megatron/core/optimizer/distrib_optimizer.py,
 * optimizer/__init__.py; TE transformer_engine/pytorch/optimizers/fused_adam.py), the
 * precision-aware optimizer (--use-precision-aware-optimizer) included.
 *
 * Two paths (optimizer_config.py use_precision_aware_optimizer_no_fp8_or_ds_fp8):
 * - Megatron holds fp32 main weights and gives Adam fp32 gradients, copying 16-bit ones
 *   (shard_main_param.grad = shard_model_grad.float()), then copies the main weights into the
 *   model's (_copy_main_params_to_model_params). Plain Adam, and the precision-aware optimizer
 *   with a current-scaling, MXFP8 or blockwise FP8 recipe and fp32 main weights.
 * - TE's FusedAdam holds the master weights (master_weights=True, master_weight_dtype =
 *   --main-params-dtype) and reads the gradient buffer's shard as decoupled_grad, no copy; it
 *   updates the bf16 parameter shard in its kernel. With fp32 master weights and bf16
 *   parameters it stores only the 16 low bits (store_param_remainders, Megatron's default from
 *   TE 2.1: an int16 tensor).
 * Moments are kept in --exp-avg-dtype / --exp-avg-sq-dtype either way.
 */
#include "optimizer.h"

#include <string.h>

#include "layer.h"

uint32_t
spsim_opt_dtype_bytes(enum spsim_opt_dtype d)
{
    switch (d) {
    case SPSIM_OPT_FP32:
        return 4;
    case SPSIM_OPT_FP16:
    case SPSIM_OPT_BF16:
        return 2;
    case SPSIM_OPT_FP8:
        return 1;
    case SPSIM_OPT_DTYPE_COUNT:
        break;
    }
    return 4;
}

bool
spsim_optimizer_te_master(const struct spsim_parallel *par)
{
    /* Megatron passes its --fp8-recipe (default delayed) whatever the dtype, so bf16 and fp16
     * training take this path; FP8 delayed scaling too (TE's kernel casts FP8 weights). */
    return par->precision_aware_optimizer &&
           (par->main_params_dtype != SPSIM_OPT_FP32 || par->dtype != SPSIM_DTYPE_FP8 ||
            par->fp8_recipe == SPSIM_FP8_DELAYED);
}

/* The master weights' bytes: Megatron's fp32 copy, TE's --main-params-dtype, or TE's int16
 * remainders beside bf16 parameters (FP8 parameters, --fp8-param-gather, keep a whole fp32
 * master: fused_adam.py stores remainders only for torch.bfloat16 parameters). */
static uint32_t
master_bytes(const struct spsim_parallel *par)
{
    if (!spsim_optimizer_te_master(par))
        return 4;
    if (par->main_params_dtype != SPSIM_OPT_FP32)
        return spsim_opt_dtype_bytes(par->main_params_dtype);
    bool bf16_params = par->dtype != SPSIM_DTYPE_FP16 && !par->fp8_param_gather;
    return bf16_params ? 2 : 4;
}

uint32_t
spsim_optimizer_state_bytes(const struct spsim_parallel *par, uint32_t grad_bytes)
{
    uint32_t copy = !spsim_optimizer_te_master(par) && grad_bytes == 2 ? 4 : 0;
    if (!par->precision_aware_optimizer)
        return 12 + copy;
    return master_bytes(par) + spsim_opt_dtype_bytes(par->exp_avg_dtype) +
           spsim_opt_dtype_bytes(par->exp_avg_sq_dtype) + copy;
}

/*
 * HBM bytes per element of one optimizer state in FusedAdam.step. An fp32 state is read and
 * written by the kernel (8). Both moments bf16: the kernel updates them in place (fuse_unscale,
 * 2 + 2). Otherwise a 16- or 8-bit state is unscaled into an fp32 temporary first
 * (get_unscaled_state: .float(), read s, write 4; fp16 also multiplies by its scale, 4 + 4), the
 * kernel updates the temporary (8), and _apply_scale writes it back: bf16 by
 * copy_(unscaled.bfloat16()) (4 + 2, then 2 + 2); fp16 and fp8 after an aminmax (4), fp16 by
 * mul_ with the reciprocal scale (4 + 4) and copy_ (4 + 2), fp8 by Float8Tensor's quantizing
 * copy_ (4 + 1). Sums: bf16 24, fp16 40, fp8 22.
 */
static double
state_step_bytes(enum spsim_opt_dtype d, bool fused_bf16)
{
    switch (d) {
    case SPSIM_OPT_FP32:
        return 8;
    case SPSIM_OPT_BF16:
        return fused_bf16 ? 4 : (2 + 4) + 8 + (4 + 2) + (2 + 2);
    case SPSIM_OPT_FP16:
        return (2 + 4) + (4 + 4) + 8 + 4 + (4 + 4) + (4 + 2);
    case SPSIM_OPT_FP8:
        return (1 + 4) + 8 + 4 + (4 + 1);
    case SPSIM_OPT_DTYPE_COUNT:
        break;
    }
    return 8;
}

void
spsim_optimizer_step_bytes(const struct spsim_parallel *par, uint32_t grad_bytes, double *shard,
                           double *full)
{
    bool te = spsim_optimizer_te_master(par);
    bool pao = par->precision_aware_optimizer;
    enum spsim_opt_dtype m = pao ? par->exp_avg_dtype : SPSIM_OPT_FP32;
    enum spsim_opt_dtype v = pao ? par->exp_avg_sq_dtype : SPSIM_OPT_FP32;
    bool fused = m == SPSIM_OPT_BF16 && v == SPSIM_OPT_BF16;
    double g = grad_bytes;
    /* The gradient: read by the kernel as it is (TE), or, 16-bit under Megatron, copied to
     * fp32 (read g, write 4) and read as fp32 (4). */
    double grad = te || grad_bytes == 4 ? g : g + 4 + 4;
    double master;
    if (!te || par->main_params_dtype == SPSIM_OPT_FP32)
        master = te && master_bytes(par) == 2 ? 2 + 2 : 8; /* int16 remainders: read, write */
    else
        master = state_step_bytes(par->main_params_dtype, false);
    *shard = grad + master + state_step_bytes(m, fused) + state_step_bytes(v, fused) +
             (te ? 2 + 2 : 0); /* TE reads and writes the bf16 parameter shard */
    *full = te ? 0 : 2;
}

/*
 * Muon as Megatron-Core runs it (megatron/core/optimizer/emerging_optimizers.py @d98e8a64
 * TensorParallelMuon over NVIDIA-NeMo/Emerging-Optimizers @fd772926,
 * orthogonalized_optimizers/{orthogonalized_optimizer,muon_utils}.py):
 * - which weights: every 2-D parameter but the embedding and output layer
 *   (_is_nonlinear_or_embedding: is_embedding_or_output_parameter or len(shape) != 2, routed to
 *   Adam by _default_param_overrides_factory); Mamba's in_proj is excluded (use_muon = False).
 * - state: one momentum buffer (torch.zeros_like(p.data): the fp32 main weight under
 *   Float16OptimizerWithFloat16Params, which keeps that fp32 main weight too).
 * - step: weight decay p.mul_ (read, write 4 + 4), momentum_buffer.lerp_(grad) (m, g read, m
 *   written: 12), with --muon-nesterov grad.lerp(m) (12 more), then newton_schulz: normalize
 *   (the norm reads X, the division reads and writes: 12), X.to(bfloat16) under the default
 *   fp32_matmul_prec "medium" (4 + 2), the iterations' GEMMs, X.to(float32) (2 + 4), the scale
 *   factor's multiply (8), p.add_ (12): 64, 76 with Nesterov.
 * - Newton-Schulz (newton_schulz, newton_schulz_step): X transposed so that it is m × n with
 *   m <= n; each step A = X·Xᵀ (2m²n), B = b·A + c·A·A (2m³), X = a·X + B·X (2m²n), in BF16;
 *   --muon-num-ns-steps 5 quintic steps by default (arguments.py). The fused QKV weight is
 *   split into Q, K and V per query group first (--muon-split-qkv, default on).
 * - TP: duplicated (the default) all-gathers the fp32 momentum of a TP-sharded weight along
 *   its partition dim and orthogonalizes the whole matrix on every TP rank (newton_schulz_tp);
 *   blockwise orthogonalizes each shard alone.
 */
uint32_t
spsim_muon_ns_steps(const struct spsim_parallel *par)
{
    return par->muon_ns_steps ? par->muon_ns_steps : 5; /* arguments.py --muon-num-ns-steps */
}

double
spsim_muon_ns_flops(uint64_t rows, uint64_t cols, uint32_t steps)
{
    double m = (double)(rows < cols ? rows : cols), n = (double)(rows < cols ? cols : rows);
    return (double)steps * (4.0 * m * m * n + 2.0 * m * m * m);
}

uint32_t
spsim_muon_state_bytes(uint32_t grad_bytes)
{
    return 8 + (grad_bytes == 2 ? 4 : 0);
}

double
spsim_muon_step_bytes(const struct spsim_parallel *par, uint32_t grad_bytes)
{
    /* 16-bit gradients are first copied to fp32 (read g, write 4: optimizer.py
     * _copy_model_grads_to_main_grads) */
    double copy = grad_bytes == 2 ? 2.0 + 4.0 : 0.0;
    return copy + 8 + 12 + (par->muon_nesterov ? 12 : 0) + 12 + 6 + 6 + 8 + 12;
}

/* The TP group a weight's shard is split over, and whether along its output rows (a
 * column-parallel linear, the experts' FC1) or its input columns (row-parallel, FC2); 1 for a
 * replicated weight (the router, MLA's down-projections). */
static uint32_t
weight_shards(const struct spsim_layer *L, const struct spsim_op *op, bool *rows)
{
    bool grouped = strstr(op->name, "grouped GEMM") != NULL;
    *rows = strstr(op->name, "(column-parallel") || (grouped && strstr(op->name, "FC1"));
    bool split = *rows || strstr(op->name, "(row-parallel") || grouped;
    return split ? (grouped ? L->cfg.etp : L->cfg.t) : 1;
}

/* One weight of `rows` × `cols` on this rank (`experts` of them), split over `shards` ranks,
 * in TP mode `mode`; Newton-Schulz FLOPs of one iteration. */
static void
add_matrix(struct spsim_muon_totals *o, int mode, bool routed, uint64_t rows, uint64_t cols,
           uint64_t experts, uint32_t shards, bool shard_rows)
{
    uint64_t full_r = rows, full_c = cols;
    if (mode == SPSIM_MUON_TP_DUPLICATED && shards > 1) {
        full_r *= shard_rows ? shards : 1;
        full_c *= shard_rows ? 1 : shards;
        o->gather_bytes += 4.0 * (double)experts * (double)full_r * (double)full_c;
        o->gathers += (double)experts;
    }
    double f = (double)experts * spsim_muon_ns_flops(full_r, full_c, 1);
    *(routed ? &o->expert_params : &o->params) += experts * rows * cols;
    *(routed ? &o->expert_ns_flops : &o->ns_flops) += f;
}

void
spsim_muon_block(const struct spsim_model_shape *m, const struct spsim_layer *L,
                 struct spsim_muon_totals out[2][SPSIM_MUON_TP_COUNT])
{
    memset(out, 0, 2 * SPSIM_MUON_TP_COUNT * sizeof(out[0][0]));
    for (uint32_t i = 0; i < L->nops; i++) {
        const struct spsim_op *op = &L->ops[i];
        if (op->kind != SPSIM_OPK_GEMM || op->adapter)
            continue;
        bool rows, routed = strstr(op->name, "grouped GEMM") != NULL;
        uint32_t shards = weight_shards(L, op, &rows);
        uint64_t experts = op->batch > 1 ? op->batch : 1;
        bool qkv = strstr(op->name, "QKV GEMM") != NULL;
        /* per query group [q/g, kv, kv] (_get_qkv_split_shapes): Q a·d/t rows, K, V g·d/t */
        uint64_t a = m->heads, g = m->kv_heads, q = op->n * a / (a + 2 * g);
        uint64_t kv = op->n * g / (a + 2 * g);
        for (int split = 0; split < 2; split++)
            for (int mode = 0; mode < SPSIM_MUON_TP_COUNT; mode++) {
                struct spsim_muon_totals *o = &out[split][mode];
                /* a Linear's weight is [out, in]: the GEMM's n × k */
                if (qkv && split == 0) {
                    add_matrix(o, mode, false, q, op->k, 1, shards, true);
                    add_matrix(o, mode, false, kv, op->k, 2, shards, true);
                } else {
                    add_matrix(o, mode, routed, op->n, op->k, experts, shards, rows);
                }
            }
    }
}
