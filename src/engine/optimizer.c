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
