/*
 * FP8 as Transformer Engine runs it in Megatron-Core (TE d0067d0, Megatron-LM d98e8a6;
 * shared/reference/megatron-core-and-nccl.md sec. 7). With --fp8-format every TE linear of a
 * transformer layer (QKV, projection, FC1, FC2) runs its three GEMMs in FP8: fprop Y = X·Wᵀ,
 * dgrad dX = dY·W, wgrad dW = dYᵀ·X (Megatron's default fp8_wgrad = True); with experts the
 * shared experts' linears and each local expert of the grouped GEMMs (TE GroupedLinear) too.
 * Core attention stays BF16 (fp8_dot_product_attention off), and so do the embedding and the
 * output layer, which are outside the FP8 autocast, and the MoE router, a torch matmul
 * (moe_utils.py router_gating_linear).
 *
 * Per recipe (TE common/recipe/__init__.py), what the casts move through HBM per element of a
 * BF16 tensor quantized into the rowwise (fprop/dgrad) and columnwise (wgrad) FP8 copies:
 *   delayed    the scale is known: one cast-transpose pass, read 2 B, write 1 + 1 B = 4;
 *   current    an amax pass first (read 2 B), then the cast: 6;
 *   mxfp8      4, plus one E8M0 scale byte per 32 values in each orientation: 4 + 2/32;
 *   blockwise  4, plus an fp32 scale per 1×128 block in each orientation: 4 + 2·4/128.
 * A norm followed by a linear (TE LayerNormLinear: QKV, FC1) writes its output quantized
 * (pytorch/csrc/extensions/normalization.cpp): fully fused for delayed scaling (no extra
 * bytes); current scaling computes norm and amax in high precision, then quantizes (the cast's
 * read 2 + write 2 = 4 extra); MXFP8 and blockwise norm in high precision, then quantize (4 and
 * the scales). The gradients dY arriving at each linear are cast the same way (unfused).
 *
 * Saved for backward: each linear's input in the columnwise FP8 usage wgrad needs (1 B per
 * element instead of 2; linear.py, layernorm_linear.py), with the block recipes' scales
 * (1 B per 32 values either way). With sequence parallelism TE gathers the quantized shard:
 * the AllGathers of the layer's inputs, of dY and the wgrad re-gathers carry FP8 (M/2); the
 * ReduceScatters carry BF16 partial sums.
 *
 * NVFP4 (--dtype nvfp4; Megatron --fp4-format e2m1 --fp4-recipe nvfp4, TE NVFP4BlockScaling,
 * common/recipe/__init__.py and docs/features/low_precision_training/nvfp4/nvfp4.rst): the same
 * linears run all three GEMMs in FP4 E2M1 (fp8_dpa/fp8_mha off: attention stays BF16). Values
 * are 4 bits (two a byte) with an E4M3 scale per 16 (1D: inputs and gradients) or per 16×16
 * block (2D: weights) and one fp32 scale per tensor from the tensor's global amax. Both copies
 * are made from the BF16 tensor: first nvte_hadamard_transform_amax reads it once for the
 * rowwise amax and the columnwise amax after the random Hadamard transform (wgrad operands,
 * hadamard_transform.h), then the quantize reads it again and writes both copies with their
 * scales; stochastic rounding (gradients) is done by the conversion instructions. Per element:
 * 2 + 2 + 2·(1/2 + 1/16) = 5.125 B, after a norm as well (the columnwise amax is of the
 * transformed tensor, which the norm does not compute). Saved inputs: 1/2 + 1/16 B a value;
 * SP AllGathers carry the quantized shard, (1/2 + 1/16)/2 of M.
 */
#include "config.h"

#include "layer.h"
#include "nccl_tuning.h"

/* Scale bytes per element of one orientation (MXFP8: 1 B per 32; blockwise: 4 B per 128). */
static double
scale_bytes(enum spsim_fp8_recipe r)
{
    return r == SPSIM_FP8_MXFP8 || r == SPSIM_FP8_BLOCKWISE ? 1.0 / 32.0 : 0.0;
}

/* HBM bytes per element of quantizing a BF16 tensor into both FP8 copies; after_norm: the
 * norm's own BF16 output (already counted by the norm) is what is quantized. */
static double
cast_bytes(enum spsim_fp8_recipe r, bool after_norm)
{
    if (after_norm && r == SPSIM_FP8_DELAYED)
        return 0.0;
    if (r == SPSIM_FP8_CURRENT && !after_norm)
        return 6.0;
    return 4.0 + 2.0 * scale_bytes(r);
}

/* NVFP4: an E4M3 scale per 16 values; the bytes of one BF16 element cast into both copies. */
#define SPSIM_NVFP4_BLOCK      16
#define SPSIM_NVFP4_CAST_BYTES (2.0 + 2.0 + 2.0 * (0.5 + 1.0 / SPSIM_NVFP4_BLOCK))

static void
nvfp4_gemm(struct spsim_layer *L, struct spsim_op *op)
{
    struct spsim_saved_tensor *in = &op->saved[0];
    uint64_t elements = in->elements;
    op->fp8 = true; /* a quantized linear: timing.c runs it at the cfg's dtype, nvfp4 */
    /* The saved input packed two values a byte, then its E4M3 scales. */
    in->what = "input in NVFP4 (two values a byte)";
    in->elements = (elements + 1) / 2;
    in->bytes_per_element = 1;
    if (op->nsaved < SPSIM_OP_MAX_SAVED)
        op->saved[op->nsaved++] = (struct spsim_saved_tensor){
            "NVFP4 scales of the input", (elements + SPSIM_NVFP4_BLOCK - 1) / SPSIM_NVFP4_BLOCK, 1,
            in->group};
    op->cast_fwd_bytes = (double)elements * SPSIM_NVFP4_CAST_BYTES;
    double dy = (double)op->m * (double)op->n;
    if (op->role == SPSIM_GEMM_ROW && L->cfg.sp && L->cfg.t > 1)
        dy /= L->cfg.t;
    op->cast_bwd_bytes = dy * SPSIM_NVFP4_CAST_BYTES;
}

static void
fp8_gemm(struct spsim_layer *L, struct spsim_op *op)
{
    const struct spsim_layer_config *cfg = &L->cfg;
    enum spsim_fp8_recipe r = cfg->fp8_recipe;
    struct spsim_saved_tensor *in = &op->saved[0];
    uint64_t elements = in->elements;
    op->fp8 = true;
    in->bytes_per_element = 1;
    if (scale_bytes(r) > 0 && op->nsaved < SPSIM_OP_MAX_SAVED)
        op->saved[op->nsaved++] = (struct spsim_saved_tensor){"FP8 scales of the input",
                                                              (elements + 31) / 32, 1, in->group};
    /* The input is cast where it lives: the SP shard before the AllGather (column-parallel)
     * or this rank's activation (row-parallel), the elements it saves. */
    op->cast_fwd_bytes = (double)elements * cast_bytes(r, op->role == SPSIM_GEMM_COLUMN);
    /* dY: this rank's output gradient; a row-parallel output's with SP is the sequence shard,
     * cast before the AllGather. */
    double dy = (double)op->m * (double)op->n;
    if (op->role == SPSIM_GEMM_ROW && cfg->sp && cfg->t > 1)
        dy /= cfg->t;
    op->cast_bwd_bytes = dy * cast_bytes(r, false);
}

/*
 * A tensor quantized with a per-tensor scale computed from itself (current scaling, NVFP4's
 * global scale) and then all-gathered needs the same scale on every rank: TE all-reduces its
 * amax (MAX) over the TP group before quantizing, blocking (pytorch/csrc/quantizer.cpp:
 * Float8CurrentScalingQuantizer one fp32, NVFP4Quantizer the rowwise and the columnwise amax
 * coalesced, 8 B). The groups are set in pytorch/module/linear.py and layernorm_linear.py: a
 * column-parallel input with SP (forward, and again in a recomputed forward), a row-parallel
 * output gradient with SP (backward). Delayed scaling's amax reduction is per pass, not per
 * tensor (dp_time.c); MXFP8 and blockwise scales are local to their blocks.
 */
static uint32_t
amax_reduction_bytes(const struct spsim_layer_config *cfg)
{
    if (cfg->dtype == SPSIM_DTYPE_NVFP4)
        return 8;
    return cfg->fp8_recipe == SPSIM_FP8_CURRENT ? 4 : 0;
}

void
spsim_layer_apply_fp8(struct spsim_layer *L)
{
    bool fp4 = L->cfg.dtype == SPSIM_DTYPE_NVFP4;
    if (L->cfg.dtype != SPSIM_DTYPE_FP8 && !fp4)
        return;
    for (uint32_t i = 0; i < L->nops; i++) {
        struct spsim_op *op = &L->ops[i];
        /* LoRA's adapters are Megatron's linears, outside TE's quantized autocast */
        if (op->adapter || (op->kind == SPSIM_OPK_GEMM && op->outside_te))
            continue;
        if (op->kind == SPSIM_OPK_GEMM && fp4)
            nvfp4_gemm(L, op);
        else if (op->kind == SPSIM_OPK_GEMM)
            fp8_gemm(L, op);
        else if (op->kind == SPSIM_OPK_COMM && L->cfg.sp) {
            op->fp8_gather = true;
            /* NVFP4's shard: (1/2 + 1/16) B a value of the BF16 message's 2 */
            op->gather_fraction = fp4 ? (0.5 + 1.0 / SPSIM_NVFP4_BLOCK) / 2.0 : 0.5;
            op->amax_bytes = amax_reduction_bytes(&L->cfg);
        }
    }
}

/* The quantized GEMMs' weights: a grouped GEMM's every local expert (TE GroupedLinear
 * quantizes each expert's weight), the routed experts' (`routed`) or the others'. */
static uint64_t
quantized_weights(const struct spsim_layer *L, bool routed, bool *ok)
{
    uint64_t weights = 0;
    for (uint32_t i = 0; i < L->nops; i++) {
        const struct spsim_op *op = &L->ops[i];
        if (op->fp8 && (op->group == SPSIM_RG_MOE) == routed)
            weights = spsim_add(weights, spsim_mul3(op->k, op->n, op->batch, ok), ok);
    }
    return weights;
}

uint64_t
spsim_layer_fp8_weights(const struct spsim_layer *L, bool *ok)
{
    return quantized_weights(L, false, ok);
}

static uint64_t
round_up(uint64_t v, uint64_t m)
{
    return (v + m - 1) / m * m;
}

/*
 * One usage of an NVFP4 weight of `rows` × `cols` as TE stores it (pytorch/tensor/
 * nvfp4_tensor.py, NVFP4Quantizer.get_scale_shape and inner_tensor_specs): the data two values
 * a byte, the E4M3 block scales one byte per 1×16 block in a [round_up(rows, 128),
 * round_up(ceil(cols/16), 4)] array (the swizzled GEMM layout; 2D-quantized weights repeat
 * each 16×16 block's scale over its 16 rows in the same array), and the fp32 amax of the
 * tensor, the second-level scale. The columnwise usage is the same of the transpose.
 */
static uint64_t
nvfp4_usage_bytes(uint64_t rows, uint64_t cols, bool *ok)
{
    uint64_t data = spsim_mul(rows, cols, ok) / 2 + spsim_mul(rows, cols, ok) % 2;
    uint64_t scales = spsim_mul(round_up(rows, 128), round_up((cols + 15) / 16, 4), ok);
    return spsim_add(spsim_add(data, scales, ok), 4, ok);
}

/* The NVFP4 copies of one layer's quantized weights: each [out, in] weight (out = the GEMM's
 * n, in its k) rowwise and columnwise, every local expert of a grouped GEMM. About w + w/8 + a
 * little padding: TE's own figure, where spsim once counted w + w/128 (issue 23). */
static uint64_t
nvfp4_copies(const struct spsim_layer *L, bool *ok)
{
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < L->nops; i++) {
        const struct spsim_op *op = &L->ops[i];
        if (!op->fp8)
            continue;
        uint64_t one =
            spsim_add(nvfp4_usage_bytes(op->n, op->k, ok), nvfp4_usage_bytes(op->k, op->n, ok), ok);
        bytes = spsim_add(bytes, spsim_mul(one, op->batch, ok), ok);
    }
    return bytes;
}

bool
spsim_te_non_tn_fp8(const struct spsim_hardware *hw)
{
    /* transformer_engine.cpp:1200 nvte_is_non_tn_fp8_gemm_supported: compute capability 10.x,
     * 11.x or >= 13.0, the Blackwell data-centre GPUs (B200, B300, GB200, GB300: 10.0 and
     * 10.3); Hopper and anything unnamed keep the transpose. */
    return hw && spsim_nccl_arch_of(hw) == SPSIM_NCCL_BLACKWELL;
}

uint64_t
spsim_layer_fp8_weight_bytes(const struct spsim_layer *L, bool non_tn, bool *ok)
{
    if (L->cfg.dtype == SPSIM_DTYPE_NVFP4)
        return nvfp4_copies(L, ok);
    if (L->cfg.dtype != SPSIM_DTYPE_FP8)
        return 0;
    uint64_t weights =
        spsim_add(quantized_weights(L, false, ok), quantized_weights(L, true, ok), ok);
    /* Per-tensor scaling (delayed, current) where the GPU runs non-TN FP8 GEMMs: one 1-B copy
     * serves both usages (TE d0067d0da pytorch/csrc/quantizer.cpp:363,375 Float8Quantizer and
     * :679,689 Float8CurrentScalingQuantizer: the rowwise data kept whenever non-TN GEMMs run,
     * the transpose only where they do not). */
    bool per_tensor =
        L->cfg.fp8_recipe == SPSIM_FP8_DELAYED || L->cfg.fp8_recipe == SPSIM_FP8_CURRENT;
    uint64_t copies = per_tensor && non_tn ? 1 : 2;
    /* Else rowwise and columnwise (the transpose cache), 1 B each; MXFP8's E8M0 scale per 32
     * in each; blockwise's fp32 scale per 128×128 block in each (2·4/16384 per weight). */
    uint64_t scales = 0;
    if (L->cfg.fp8_recipe == SPSIM_FP8_MXFP8)
        scales = weights / 16;
    else if (L->cfg.fp8_recipe == SPSIM_FP8_BLOCKWISE)
        scales = weights / 2048;
    return spsim_add(spsim_mul(weights, copies, ok), scales, ok);
}
