/*
 * Fine-tuning as Megatron-Bridge runs it (README "Fine-tuning: LoRA and packed sequences"): LoRA
 * (peft/lora.py LoRA, the adapter of peft/utils.py ParallelLinearAdapter at Megatron-Bridge
 * 8f341b04f) and packed THD sequences (Megatron-Core PackedSeqParams with cu_seqlens; Bridge's
 * packed SFT datasets).
 *
 * LoRA freezes the base model (peft/base.py PEFT.freeze_model: requires_grad False on every
 * base parameter) and adds, beside each targeted linear of every transformer layer, an adapter
 * in -> linear_in -> r -> linear_out -> out whose output is added to the base's (lora_layers.py
 * LoRALinear). linear_in and linear_out are Megatron's (non-TE, BF16) Column/RowParallelLinear
 * split over TP as the base: for a column-parallel base (linear_qkv, linear_fc1) linear_in is
 * column-parallel h -> r/t (its output gathered) and linear_out column-parallel r -> n/t; for a
 * row-parallel base (linear_proj, linear_fc2) linear_in is row-parallel k/t -> r and linear_out
 * column-parallel r -> n/t. Either way a rank holds r·(k + n)/t adapter weights and runs
 * 2·m·r·(k + n)/t FLOPs forward, twice that backward (data and weight gradients). The adapters'
 * own TP collectives carry m·r elements, r/h of a boundary's (32/8192 for the published LoRA
 * runs): left out. The frozen base still runs its forward and its data-gradient GEMMs (the
 * backward must reach the adapters below), not its weight-gradient GEMMs, and has no gradient
 * buffer and no optimizer state: those are the adapters' alone. Their data-parallel reduction
 * is taken as exposed whole after the backward (dp_time.c): a few tens of MB for the published
 * runs, under one DDP bucket; large adapters on all four targets would overlap in part.
 */
#include "config.h"

#include <string.h>

#include "layer.h"

#define CONFIG_FAIL(err, ...) spsim_fail((err), SPSIM_ECONFIG, "parallel config: " __VA_ARGS__)

/* The ops' names, by target (bit index). */
static const char *const dropout_names[4] = {
    "LoRA dropout (linear_qkv)", "LoRA dropout (linear_proj)", "LoRA dropout (linear_fc1)",
    "LoRA dropout (linear_fc2)"};
static const char *const in_names[4] = {
    "LoRA linear_in GEMM (linear_qkv)", "LoRA linear_in GEMM (linear_proj)",
    "LoRA linear_in GEMM (linear_fc1)", "LoRA linear_in GEMM (linear_fc2)"};
static const char *const out_names[4] = {
    "LoRA linear_out GEMM (linear_qkv)", "LoRA linear_out GEMM (linear_proj)",
    "LoRA linear_out GEMM (linear_fc1)", "LoRA linear_out GEMM (linear_fc2)"};

static uint32_t
target_index(uint32_t target)
{
    uint32_t i = 0;
    while (i < 3 && !(target & (1u << i)))
        i++;
    return i;
}

/* An adapter op's tokens × width shapes, for explain's tables. */
static void
lora_dims(struct spsim_op *op, uint64_t tokens, const char *in, uint64_t k, const char *out,
          uint64_t n)
{
    op->in[0] = op->out[0] = (struct spsim_dim){"sb", tokens};
    op->in[1] = (struct spsim_dim){in, k};
    op->out[1] = (struct spsim_dim){out, n};
    op->nin = op->nout = 2;
}

static struct spsim_op *
lora_op(struct spsim_layer *L, const char *name, enum spsim_op_kind kind)
{
    struct spsim_op *op = &L->ops[L->nops++];
    memset(op, 0, sizeof(*op));
    op->name = name;
    op->kind = kind;
    op->region = SPSIM_REGION_TENSOR;
    op->group = SPSIM_RG_LAYER;
    op->batch = 1;
    op->fwd_coll = op->bwd_coll = SPSIM_COLL_NONE;
    op->adapter = true;
    return op;
}

/* The base linear the adapter being added stands beside: the last GEMM not an adapter's. */
static void
mark_base_input_shared(struct spsim_layer *L)
{
    for (uint32_t i = L->nops; i-- > 0;)
        if (L->ops[i].kind == SPSIM_OPK_GEMM && !L->ops[i].adapter) {
            L->ops[i].input_shared = true;
            return;
        }
}

/*
 * The adapter's ops after its base GEMM: with dropout (dropout_position 'pre', nn.Dropout on the
 * adapter's input) a memory-bound pass that reads the input and writes its output and a 1-byte
 * mask (5 B per element each way, as the layer's dropouts); linear_in keeps its BF16 input
 * (the dropout's output, else the base's input: for a column-parallel base TE's layernorm
 * output, gathered with SP, which the frozen base itself no longer keeps), linear_out its
 * r-wide input.
 */
void
spsim_lora_add(struct spsim_layer *L, uint32_t target, uint64_t tokens, uint64_t k_full,
               uint64_t n_full, bool *ok)
{
    const struct spsim_layer_config *cfg = &L->cfg;
    uint32_t targets = cfg->lora_targets ? cfg->lora_targets : SPSIM_LORA_ALL;
    if (cfg->lora_rank == 0 || !(targets & target))
        return;
    if (L->nops + 3 > SPSIM_LAYER_MAX_OPS) { /* never silently without an adapter */
        *ok = false;
        return;
    }
    uint32_t i = target_index(target);
    uint64_t t = cfg->t ? cfg->t : 1, r = cfg->lora_rank;
    bool column = target == SPSIM_LORA_QKV || target == SPSIM_LORA_FC1;
    uint64_t k_in = column ? k_full : k_full / t; /* linear_in's input width on this rank */
    uint64_t elements = spsim_mul(tokens, k_in, ok);
    struct spsim_op *op;
    if (cfg->lora_dropout > 0) {
        op = lora_op(L, dropout_names[i], SPSIM_OPK_MEMORY);
        op->fwd_bytes = 5.0 * (double)elements;
        op->bwd_bytes = 5.0 * (double)elements;
        op->saved[op->nsaved++] =
            (struct spsim_saved_tensor){"LoRA dropout mask", elements, 1, SPSIM_RG_LAYER};
        lora_dims(op, tokens, "k", k_in, "k", k_in);
    }
    op = lora_op(L, in_names[i], SPSIM_OPK_GEMM);
    op->role = column ? SPSIM_GEMM_COLUMN : SPSIM_GEMM_ROW;
    op->m = tokens;
    op->k = k_in;
    op->n = column ? r / t : r;
    lora_dims(op, tokens, "k", k_in, column ? "r/t" : "r", op->n);
    /* A row-parallel base's input without dropout is the very tensor the base linear received:
     * kept once, by the base (spsim_lora_freeze leaves it). */
    if (column || cfg->lora_dropout > 0)
        op->saved[op->nsaved++] =
            (struct spsim_saved_tensor){"LoRA linear_in input", elements, 2, SPSIM_RG_LAYER};
    else
        mark_base_input_shared(L);
    op = lora_op(L, out_names[i], SPSIM_OPK_GEMM);
    op->role = SPSIM_GEMM_COLUMN;
    op->m = tokens;
    op->k = r;
    op->n = n_full / t;
    lora_dims(op, tokens, "r", r, "n/t", op->n);
    op->saved[op->nsaved++] = (struct spsim_saved_tensor){
        "LoRA linear_out input", spsim_mul(tokens, r, ok), 2, SPSIM_RG_LAYER};
}

/* What is modelled of fine-tuning, checked before anything is computed. */
int
spsim_finetune_check(const struct spsim_model_shape *m, const struct spsim_parallel *p, bool flash,
                     struct spsim_error *err)
{
    if (p->packed_subseq_len) {
        uint32_t seq = p->seq ? p->seq : m->seq_len;
        if (p->packed_subseq_len > seq)
            return CONFIG_FAIL(err,
                               "field 'packed_subseq_len': %u exceeds the packed row's %u tokens "
                               "(seq)",
                               p->packed_subseq_len, seq);
        /* THD runs in TE's fused or flash attention only (Megatron-Core's attention with
         * packed_seq_params). */
        if (!flash)
            return CONFIG_FAIL(err, "field 'packed_subseq_len': packed (THD) sequences need "
                                    "flash attention (TE's fused or flash kernels)");
        if (p->cp > 1 || m->window || m->hybrid_pattern)
            return CONFIG_FAIL(err, "field 'packed_subseq_len': packed sequences with context "
                                    "parallelism, sliding windows or hybrid (Mamba) layers are "
                                    "not modelled");
    }
    if (p->lora_rank == 0) {
        if (p->lora_targets || p->lora_alpha != 0 || p->lora_dropout != 0)
            return CONFIG_FAIL(err, "field 'lora_rank': the LoRA options need lora_rank > 0");
        return SPSIM_OK;
    }
    if (p->lora_targets & ~SPSIM_LORA_ALL)
        return CONFIG_FAIL(err, "field 'lora_targets': unknown target bits 0x%x", p->lora_targets);
    if (!(p->lora_alpha >= 0 && p->lora_alpha <= 1e9))
        return CONFIG_FAIL(err, "field 'lora_alpha': must be in [0, 1e9], got %g", p->lora_alpha);
    if (!(p->lora_dropout >= 0 && p->lora_dropout < 1))
        return CONFIG_FAIL(err, "field 'lora_dropout': must be in [0, 1), got %g", p->lora_dropout);
    if (p->lora_rank % (p->tp ? p->tp : 1) != 0)
        return CONFIG_FAIL(err,
                           "field 'lora_rank': the adapters' linear_in splits r = %u over tp = %u "
                           "(ColumnParallelLinear): not divisible",
                           p->lora_rank, p->tp);
    /* spsim's limits: adapters on MoE experts (GroupedExpertLinearAdapter) and on MLA's split
     * projections, Megatron-FSDP's sharding of a frozen model, and the adapters' input-gradient
     * all-reduce that ColumnParallelLinear issues without SP are not modelled. */
    if (m->experts || m->kv_lora_rank || m->mtp_layers || m->window || m->hybrid_pattern)
        return CONFIG_FAIL(err, "field 'lora_rank': LoRA on mixture-of-experts, multi-latent "
                                "attention, multi-token prediction, sliding-window or hybrid "
                                "(Mamba) models is not modelled");
    /* FP8 primary weights of a frozen base (memory.c add_fp8_weight_copies); NVFP4 ones
     * (--fp4-param-gather) are not modelled. */
    if (p->fp8_param_gather && p->dtype != SPSIM_DTYPE_FP8)
        return CONFIG_FAIL(err, "field 'fp8_param_gather': LoRA with NVFP4 parameters is not "
                                "modelled");
    if (p->zero >= 2)
        return CONFIG_FAIL(err, "field 'zero': LoRA with Megatron-FSDP sharding (zero 2, 3) is "
                                "not modelled");
    if (p->tp > 1 && !p->sp)
        return CONFIG_FAIL(err, "field 'sp': LoRA with tp > 1 is modelled with sequence "
                                "parallelism only");
    /* Core attention's recompute touches no linear, so neither the base nor the adapters: it
     * is the one recompute modelled with LoRA. */
    bool core_attn = p->recompute == SPSIM_RECOMPUTE_SELECTIVE &&
                     (p->recompute_modules & ~(uint32_t)SPSIM_RMOD_CORE_ATTN) == 0;
    if ((p->recompute != SPSIM_RECOMPUTE_NONE && !core_attn) || p->offload_layers)
        return CONFIG_FAIL(err, "field 'recompute': LoRA with recomputation other than selective "
                                "core_attn, or with activation offload, is not modelled");
    return SPSIM_OK;
}

/*
 * The frozen base of a built block: its linears keep no input for backward (Megatron-Core's
 * LinearWithGradAccumulationAndAsyncCommunication and TE's Linear save the input only for the
 * weight gradient, when the weight requires it); the schedule then skips their weight-gradient
 * GEMMs (schedule.c). Two inputs stay, saved for another reader: the attention projection's,
 * the output that flash attention's backward reads (TE FusedAttention saves out with q, k, v),
 * and a row-parallel linear's whose adapter, without dropout, reads the same tensor.
 */
void
spsim_lora_freeze(struct spsim_layer *L)
{
    if (!L->cfg.frozen)
        return;
    for (uint32_t i = 0; i < L->nops; i++) {
        struct spsim_op *op = &L->ops[i];
        if (op->kind != SPSIM_OPK_GEMM || op->adapter || op->nsaved == 0)
            continue;
        bool flash_out = L->cfg.flash && strcmp(op->saved[0].what, "projection input") == 0;
        if (!flash_out && !op->input_shared)
            op->nsaved = 0;
    }
}
