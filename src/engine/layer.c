/*
 * The transformer layer as one ordered op list: saved tensors, FLOPs, collectives (every engine
 * reads it).
 */
#include "config.h"

#include <math.h>

#include <string.h>

#include "layer.h"
#include "moe.h"

/*
 * Activation inventory of one layer, after Korthikanti et al. 2022 §4.1 (bf16 activations,
 * 2 bytes/element; dropout masks 1 byte/element; small buffers such as LayerNorm statistics
 * ignored, as the paper does). For the paper's GPT layer the sums are exactly Table 2:
 *
 *   tensor (per layer)                    elements          where         GPT, per sbh
 *   LayerNorm 1 input                     s'·b·h            SEQ           2
 *   QKV input (the g/f boundary)          s'·b·h            SEQ           2
 *   Q and K (QKᵀ inputs)                  s·b·(q+kv)/t      TENSOR        4/t
 *   softmax output                        b·(a/t)·s²        TENSOR, core  2as/(ht)
 *   attention-dropout mask (1 B)          b·(a/t)·s²        TENSOR, core  as/(ht)
 *   attention-dropout output              b·(a/t)·s²        TENSOR, core  2as/(ht)
 *   V                                     s·b·kv/t          TENSOR        2/t
 *   projection input                      s·b·q/t           TENSOR        2/t
 *   dropout mask after attention (1 B)    s'·b·h            SEQ           1
 *   LayerNorm 2 input                     s'·b·h            SEQ           2
 *   FC1 input                             s'·b·h            SEQ           2
 *   GeLU input                            s·b·ffn/t         TENSOR        8/t
 *   FC2 input                             s·b·ffn/t         TENSOR        8/t
 *   dropout mask after MLP (1 B)          s'·b·h            SEQ           1
 *
 * where s' = s/t with sequence parallelism and s without (SEQ-region tensors are replicated
 * across the TP group without SP: the paper's 10sbh). Sum: 10 + 24/t + 5as/(ht) with TP;
 * 34/t + 5as/(ht) with SP; the "core" rows are what selective recomputation drops.
 *
 * Other layers, derived the same way:
 * - GQA: K and V have kv_heads·head_dim features, so Q+K is (q+kv) and V is kv.
 * - SwiGLU: FC1 produces gate and up (2·ffn/t); the activation keeps both (4 B per output
 *   element), FC2 keeps the activation's output (2 B): 6·s·b·ffn/t in all (GeLU: 4·s·b·ffn/t).
 * - No dropout: no masks, no dropout output (attention·V reads the softmax output, already kept).
 * - RMSNorm keeps its input like LayerNorm (2 B/element); RoPE keeps nothing (cos/sin tables).
 * - Flash attention (FlashAttention-2): no s×s tensor is stored; it keeps Q, K, V, its output
 *   (the projection input, counted there) and the fp32 log-sum-exp per row, b·(a/t)·s·4 B
 *   (core group); dropout masks are regenerated from the RNG state in backward.
 *
 * Selective recomputation by module (Megatron recompute_modules, transformer_layer.py): each
 * saved tensor and op carries the group of the module that drops and replays it.
 * - core_attn (tensor_parallel.checkpoint of Q, K, V): the "core" rows above.
 * - layernorm (CheckpointWithoutOutput): each norm's output, which is the QKV or FC1 input
 *   (4·s'·b·h bytes); the norms' inputs stay as the checkpoints' inputs.
 * - mlp (tensor_parallel.checkpoint of the MLP's input): GeLU/SwiGLU input and FC2 input; FC1's
 *   input is the checkpoint and stays (unless layernorm drops it). The MLP module runs from the
 *   g/f before FC1 to the ḡ/f̄ after FC2 (ColumnParallelLinear gathers, RowParallelLinear
 *   reduces inside it), so its replay repeats those collectives; the bias-dropout-add and the
 *   pre-MLP norm are outside it.
 */

struct builder {
    struct spsim_layer *layer;
    bool ok;
    struct spsim_op spare; /* written instead of past the op list (then !ok): never overrun */
};

static struct spsim_op *
add_op(struct builder *bld, const char *name, enum spsim_op_kind kind, enum spsim_region region,
       enum spsim_rgroup group)
{
    struct spsim_layer *L = bld->layer;
    struct spsim_op *op = &bld->spare;
    if (L->nops < SPSIM_LAYER_MAX_OPS)
        op = &L->ops[L->nops++];
    else
        bld->ok = false; /* a layer of more ops than the list holds is refused, not overrun */
    memset(op, 0, sizeof(*op));
    op->name = name;
    op->kind = kind;
    op->region = region;
    op->group = group;
    op->batch = 1;
    op->fwd_coll = op->bwd_coll = SPSIM_COLL_NONE;
    return op;
}

static void
save(struct spsim_op *op, const char *what, uint64_t elements, uint32_t bytes,
     enum spsim_rgroup group)
{
    if (op->nsaved < SPSIM_OP_MAX_SAVED) /* the op kinds save at most 3: never overrun */
        op->saved[op->nsaved++] = (struct spsim_saved_tensor){what, elements, bytes, group};
}

static void
dims3(struct spsim_dim *d, uint32_t *n, const char *s0, uint64_t v0, const char *s1, uint64_t v1,
      const char *s2, uint64_t v2)
{
    d[0] = (struct spsim_dim){s0, v0};
    d[1] = (struct spsim_dim){s1, v1};
    d[2] = (struct spsim_dim){s2, v2};
    *n = 3;
}

/* s is the tokens of one rank's sequence (s/c with context parallelism), s_full the whole
 * sequence its queries attend to. */
struct dims {
    uint64_t s, sl, b, h, t, q_t, kv_t, heads_t, d, ffn_t, gate, s_full;
    const char *s_sym, *sl_sym;
    /* Core attention per token on this rank: Q and K kept (qk_w), V (v_w) and the output
     * (o_w); each head's Q/K (dqk) and V (dv) channels; the group of the kept Q, K, V. Dense
     * and GQA: q+kv, kv, q, d, d, LAYER; MLA: add_mla_attention_block. */
    uint64_t qk_w, v_w, o_w, dqk, dv;
    enum spsim_rgroup qkv_group;
    const char *qkv_sym, *o_sym;
};

static struct spsim_op *
add_norm(struct builder *bld, const struct dims *x, const char *name, const char *what,
         uint64_t elements)
{
    struct spsim_op *op = add_op(bld, name, SPSIM_OPK_MEMORY, SPSIM_REGION_SEQ, SPSIM_RG_LAYER);
    /* Forward reads x and writes y (2 B each). Backward (apex fused_layer_norm_cuda:
     * cuComputePartGradGammaBeta, then cuComputeGradInput) reads dy and x once for the γ/β
     * partial sums and once more for dx, and writes dx: 10 B per element. */
    op->fwd_bytes = 4.0 * elements;
    op->bwd_bytes = 10.0 * elements;
    save(op, what, elements, 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "h", x->h);
    dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, "h", x->h);
    return op;
}

static struct spsim_op *
add_boundary(struct builder *bld, const struct dims *x, bool into_tp, const char *name_sp,
             const char *name_tp, const char *bwd_sp, const char *bwd_tp)
{
    if (x->t <= 1)
        return NULL; /* group of one: every operator is the identity */
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    struct spsim_op *op = add_op(bld, cfg->sp ? name_sp : name_tp, SPSIM_OPK_COMM,
                                 SPSIM_REGION_BOUNDARY, SPSIM_RG_LAYER);
    op->message_bytes = bld->layer->message_bytes;
    op->into_tp = into_tp;
    op->bwd_name = cfg->sp ? bwd_sp : bwd_tp;
    if (cfg->sp) {
        /* g: AllGather forward, ReduceScatter backward; ḡ the conjugate (paper Fig. 5). */
        op->operator_name = into_tp ? "g" : "ḡ";
        op->fwd_coll = into_tp ? SPSIM_COLL_ALL_GATHER : SPSIM_COLL_REDUCE_SCATTER;
        op->bwd_coll = into_tp ? SPSIM_COLL_REDUCE_SCATTER : SPSIM_COLL_ALL_GATHER;
    } else {
        /* f: identity forward, AllReduce backward; f̄ the conjugate (paper Fig. 4). */
        op->operator_name = into_tp ? "f" : "f̄";
        op->fwd_coll = into_tp ? SPSIM_COLL_NONE : SPSIM_COLL_ALL_REDUCE;
        op->bwd_coll = into_tp ? SPSIM_COLL_ALL_REDUCE : SPSIM_COLL_NONE;
    }
    if (into_tp) {
        dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "h", x->h);
        dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "h", x->h);
    } else {
        dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "h (partial sums)", x->h);
        dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, "h", x->h);
    }
    return op;
}

static struct spsim_op *
add_gemm(struct builder *bld, const char *name, enum spsim_gemm_role role, uint64_t m, uint64_t k,
         uint64_t n)
{
    struct spsim_op *op = add_op(bld, name, SPSIM_OPK_GEMM, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->role = role;
    op->m = m;
    op->n = n;
    op->k = k;
    return op;
}

/* The input a column-parallel linear keeps: with SP only this rank's sequence shard (Megatron
 * saves the shard and re-gathers it for the weight gradient); without SP the whole replicated
 * input. */
static void
save_column_input(struct builder *bld, struct spsim_op *op, const struct dims *x, const char *what,
                  enum spsim_rgroup group)
{
    save(op, what, spsim_mul3(x->sl, x->b, x->h, &bld->ok), 2, group);
}

static void
add_dropout_add(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x,
                const char *name)
{
    uint64_t elements = spsim_mul3(x->sl, x->b, x->h, &bld->ok);
    struct spsim_op *op = add_op(bld, name, SPSIM_OPK_MEMORY, SPSIM_REGION_SEQ, SPSIM_RG_LAYER);
    /* The row-parallel GEMM's bias is added here (skip_bias_add): its gradient is a
     * reduction of dy over the tokens (read 2 B per element). */
    double bias_grad = m->linear_bias ? 2.0 * elements : 0.0;
    if (m->dropout) {
        /* Fused bias-dropout-add: forward reads x and the residual, writes out and the mask;
         * backward reads dy and the mask, writes dx, and the residual's gradient is summed
         * with the branch's (read 2 + 2, write 2). */
        op->fwd_bytes = 7.0 * elements;
        op->bwd_bytes = 11.0 * elements + bias_grad;
        save(op, "dropout mask", elements, 1, SPSIM_RG_LAYER);
        /* Replicated across TP without SP: every rank must draw the same mask (default RNG).
         * With SP each rank holds a different sequence shard: different masks
         * (model-parallel RNG; Megatron-LM issue #1256). */
        op->rng = bld->layer->cfg.sp ? "model-parallel-rng" : "default";
    } else {
        op->fwd_bytes = 6.0 * elements;
        op->bwd_bytes = 6.0 * elements + bias_grad;
    }
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "h", x->h);
    dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, "h", x->h);
}

/* A CP exchange op of the core-attention group (replayed with it by selective recompute). */
static struct spsim_op *
add_cp_op(struct builder *bld, const char *name, enum spsim_coll_op coll, uint64_t fwd_bytes,
          uint64_t bwd_bytes, uint32_t group, uint32_t stride)
{
    struct spsim_op *op = add_op(bld, name, SPSIM_OPK_CP, SPSIM_REGION_TENSOR, SPSIM_RG_CORE_ATTN);
    op->operator_name = "cp";
    op->fwd_coll = op->bwd_coll = coll;
    op->message_bytes = fwd_bytes;
    op->cp_bwd_message_bytes = bwd_bytes;
    op->cp_group = group;
    op->cp_stride = stride;
    return op;
}

/*
 * Context parallelism's exchanges around flash attention (TE context_parallel.py), before it
 * (`before`) or after it. KV_blk = b·(s/c)·(k + v)·2 B, K and V of one rank, k and v their
 * channels per token on the rank: kv·d/t each for dense and GQA; for MLA n·(d_qk + d_r)/t and
 * n·d_v/t (the per-head keys after RoPE, k_pos_emb broadcast to every head, and the values:
 * multi_latent_attention.py hands TE key [s, b, n, d_qk + d_r] and value [s, b, n, d_v], and
 * AttnFuncWithCPAndKVP2P sends torch.cat(k.view(-1), v.view(-1)), so the two widths add). The
 * A2A group is the inner one (stride t), the p2p ring the outer one (stride t·inner).
 *   p2p:        ring of c−1 KV_blk sends beside the attention steps; backward c−1 KV_blk and
 *               c−1 dKV_blk sends (AttnFuncWithCPAndKVP2P);
 *   all_gather: AllGather of K and V (c·KV_blk) before attention, again in backward, and a
 *               ReduceScatter of dK, dV after it (AttnFuncWithCPAndKVAllGather);
 *   a2a:        all-to-all of Q, K, V before attention and of O (n·d_v/t for MLA) after it;
 *               backward the all-to-all of dO, then of dQ, dK, dV (AttnFuncWithCPAndQKVOA2A).
 */
static void
add_cp_exchange(struct builder *bld, const struct dims *x, bool before)
{
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    if (cfg->cp <= 1)
        return;
    bool *ok = &bld->ok;
    uint64_t kvw = x->qk_w - x->q_t + x->v_w; /* K and V channels per token on the rank */
    uint64_t tokens = spsim_mul(x->s, x->b, ok), kv = spsim_mul3(tokens, 2, kvw, ok);
    uint32_t t = (uint32_t)x->t, inner = cfg->cp_a2a, ring = cfg->cp_ring;
    bool mla = x->dqk != x->dv;
    const char *kv_sym = mla ? "n(d_qk+d_r+d_v)/t" : "2kv·d/t";
    struct spsim_op *op;
    if (cfg->cp_comm == SPSIM_CP_ALL_GATHER) {
        uint64_t full = spsim_mul(kv, cfg->cp, ok);
        op = before ? add_cp_op(bld, "CP AllGather of K and V", SPSIM_COLL_ALL_GATHER, full, full,
                                cfg->cp, t)
                    : add_cp_op(bld, "CP AllGather of K and V (backward re-gather)",
                                SPSIM_COLL_ALL_GATHER, 0, full, cfg->cp, t);
        if (before) /* its backward is the ReduceScatter of dK and dV */
            op->bwd_coll = SPSIM_COLL_REDUCE_SCATTER;
        else
            op->fwd_coll = SPSIM_COLL_NONE;
        dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, kv_sym, kvw);
        dims3(op->out, &op->nout, "s", x->s_full, "b", x->b, kv_sym, kvw);
        return;
    }
    if (inner > 1) {
        uint64_t w = before ? x->q_t + kvw : x->o_w;
        uint64_t io = spsim_mul3(tokens, 2, w, ok);
        op = add_cp_op(bld, before ? "CP all-to-all of Q, K, V" : "CP all-to-all of O",
                       SPSIM_COLL_ALL_TO_ALL, io, io, inner, t);
        const char *in =
            before ? (mla ? "n(2d_qk+2d_r+d_v)/t" : "(a+2kv)d/t") : (mla ? "n·d_v/t" : "ad/t");
        const char *out = before ? (mla ? "n(2d_qk+2d_r+d_v)/(t·inner)" : "(a+2kv)d/(t·inner)")
                                 : (mla ? "n·d_v/(t·inner)" : "ad/(t·inner)");
        dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, in, w);
        dims3(op->out, &op->nout, "s·inner/c", x->s * inner, "b", x->b, out, w / inner);
    }
    if (before && ring > 1) {
        op = add_cp_op(bld, "CP p2p ring of K/V blocks", SPSIM_COLL_SEND_RECV, kv,
                       spsim_mul(kv, 2, ok), ring, t * inner);
        const char *sym = mla ? "n(d_qk+d_r+d_v)/(t·inner)" : "2kv·d/(t·inner)";
        dims3(op->in, &op->nin, "s·inner/c", x->s * inner, "b", x->b, sym, kvw / inner);
        dims3(op->out, &op->nout, "s·inner/c", x->s * inner, "b", x->b, sym, kvw / inner);
    }
}

/*
 * What picks the attention kernel's measured rate (timing.c attention_rate): the head
 * dimensions, the keys a query sees at most (the sequence; one ring step's block, s/c, with the
 * CP p2p ring, whose kernels run block by block) and the sliding window. A model with windows
 * (m->window < s; every window_skip_freq-th layer attends fully, Megatron
 * --window-attn-skip-freq) runs windowed layers whose queries see at most W keys:
 * W(W + 1)/2 + (s − W)·W scores per head (cudnn-frontend's count for a causal window), so the
 * op, the mean of its layers, holds the windowed share of layers at that work. With CP the
 * windows are not modelled (no shipped row runs both).
 */
static void
attention_kernel(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x,
                 struct spsim_op *op)
{
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    /* Causal: half of the s×s scores; two matmuls of 2·s·s·d each per head, halved. With
     * context parallelism the rank's s/c queries (chunks r and 2c−1−r) see exactly the causal
     * half of s/c × s (TE's load balancing), so the work is the causal total / c. */
    /* Packed THD rows (cu_seqlens): each query sees its own sub-sequence only, Σs_i²/2 scores
     * per head instead of s²/2, i.e. s·attn_len/2 (finetune.c); the kernel runs at the rate of
     * attn_len-long sequences. */
    uint64_t keys = cfg->attn_len ? cfg->attn_len : x->s_full;
    op->flash_fwd_flops = 2.0 * (double)x->b * (double)x->heads_t * (double)x->s * (double)keys *
                          ((double)(x->dqk + x->dv) / 2.0);
    op->attn_dqk = (uint32_t)x->dqk;
    op->attn_dv = (uint32_t)x->dv;
    op->attn_seq = keys / (cfg->cp_ring > 1 ? cfg->cp_ring : 1);
    if (!m->window || m->window >= x->s_full || cfg->cp > 1)
        return;
    double L = m->layers, full = m->window_skip_freq ? floor(L / m->window_skip_freq) : 0;
    double share = (L - full) / L, W = m->window, S = (double)x->s_full;
    double windowed = 2.0 * (double)x->b * (double)x->heads_t * (W * (W + 1) / 2 + (S - W) * W) *
                      (double)(x->dqk + x->dv);
    op->attn_window = m->window;
    op->flash_window_flops = share * windowed;
    op->flash_fwd_flops = (1.0 - share) * op->flash_fwd_flops + op->flash_window_flops;
}

/* The CP p2p ring op just before the flash op (if any) hides its transfers behind the same
 * attention kernels. */
static void
ring_beside(struct builder *bld, const struct spsim_op *flash)
{
    if (bld->layer->nops < 2 || bld->layer->ops[bld->layer->nops - 2].kind != SPSIM_OPK_CP)
        return;
    struct spsim_op *ring = &bld->layer->ops[bld->layer->nops - 2];
    ring->cp_attn_flops = flash->flash_fwd_flops;
    ring->attn_dqk = flash->attn_dqk;
    ring->attn_dv = flash->attn_dv;
    ring->attn_seq = flash->attn_seq;
}

static void
add_core_attention(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x)
{
    bool *ok = &bld->ok;
    uint64_t tokens = spsim_mul(x->s, x->b, ok);
    if (bld->layer->cfg.flash) {
        add_cp_exchange(bld, x, true);
        struct spsim_op *op = add_op(bld, "flash attention (QK^T, softmax, dropout, .V)",
                                     SPSIM_OPK_FLASH, SPSIM_REGION_TENSOR, SPSIM_RG_CORE_ATTN);
        attention_kernel(bld, m, x, op);
        save(op, "Q and K", spsim_mul(tokens, x->qk_w, ok), 2, x->qkv_group);
        save(op, "V", spsim_mul(tokens, x->v_w, ok), 2, x->qkv_group);
        save(op, "softmax log-sum-exp (fp32)", spsim_mul3(x->b, x->heads_t, x->s, ok), 4,
             SPSIM_RG_CORE_ATTN);
        if (m->dropout)
            op->rng = "model-parallel-rng";
        dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, x->qkv_sym, x->qk_w + x->v_w);
        dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, x->o_sym, x->o_w);
        ring_beside(bld, op);
        add_cp_exchange(bld, x, false);
        return;
    }
    uint64_t scores = spsim_mul4(x->b, x->heads_t, x->s, x->s, ok);
    struct spsim_op *op =
        add_op(bld, "QK^T (batched)", SPSIM_OPK_BMM, SPSIM_REGION_TENSOR, SPSIM_RG_CORE_ATTN);
    op->batch = x->b * x->heads_t;
    op->m = x->s;
    op->n = x->s;
    op->k = x->dqk;
    save(op, "Q and K", spsim_mul(tokens, x->qk_w, ok), 2, x->qkv_group);
    op->in[0] = (struct spsim_dim){"b·a/t", x->b * x->heads_t};
    op->in[1] = (struct spsim_dim){x->s_sym, x->s};
    op->in[2] = (struct spsim_dim){"d", x->dqk};
    op->nin = 3;
    op->out[0] = (struct spsim_dim){"b·a/t", x->b * x->heads_t};
    op->out[1] = (struct spsim_dim){x->s_sym, x->s};
    op->out[2] = (struct spsim_dim){x->s_sym, x->s};
    op->nout = 3;
    struct spsim_dim score_dims[3] = {op->out[0], op->out[1], op->out[2]};

    op = add_op(bld, "scale-mask-softmax", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR,
                SPSIM_RG_CORE_ATTN);
    op->fwd_bytes = 4.0 * scores;
    op->bwd_bytes = 6.0 * scores;
    save(op, "softmax output", scores, 2, SPSIM_RG_CORE_ATTN);
    memcpy(op->in, score_dims, sizeof(score_dims));
    memcpy(op->out, score_dims, sizeof(score_dims));
    op->nin = op->nout = 3;

    if (m->dropout) {
        op = add_op(bld, "attention dropout", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR,
                    SPSIM_RG_CORE_ATTN);
        op->fwd_bytes = 5.0 * scores;
        op->bwd_bytes = 5.0 * scores;
        save(op, "attention-dropout mask", scores, 1, SPSIM_RG_CORE_ATTN);
        op->rng = "model-parallel-rng"; /* heads differ per TP rank: masks must differ */
        memcpy(op->in, score_dims, sizeof(score_dims));
        memcpy(op->out, score_dims, sizeof(score_dims));
        op->nin = op->nout = 3;
    }

    op = add_op(bld, "attention x V (batched)", SPSIM_OPK_BMM, SPSIM_REGION_TENSOR,
                SPSIM_RG_CORE_ATTN);
    op->batch = x->b * x->heads_t;
    op->m = x->s;
    op->n = x->dv;
    op->k = x->s;
    if (m->dropout)
        save(op, "attention-dropout output", scores, 2, SPSIM_RG_CORE_ATTN);
    save(op, "V", spsim_mul(tokens, x->v_w, ok), 2, x->qkv_group);
    memcpy(op->in, score_dims, sizeof(score_dims));
    op->nin = 3;
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, x->o_sym, x->o_w);
}

/* QK-norm (Qwen3; Megatron-Core's qk_layernorm): the layer's norm over each head's d channels
 * of Q and K after the QKV GEMM, before RoPE. It keeps its input and moves bytes as the
 * layer's norms do (add_norm), over this rank's (a + kv)·d/t channels. */
static void
add_qk_norm(struct builder *bld, const struct dims *x)
{
    uint64_t elements = spsim_mul3(x->s, x->b, x->q_t + x->kv_t, &bld->ok);
    struct spsim_op *op =
        add_op(bld, "QK-norm on Q and K", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = 4.0 * elements;
    op->bwd_bytes = 10.0 * elements;
    save(op, "QK-norm input", elements, 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "(a+kv)d/t", x->q_t + x->kv_t);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "(a+kv)d/t", x->q_t + x->kv_t);
}

/* Gemma 2's and 3's post-norms (model post_norms): Megatron-Bridge's
 * TERowParallelLinearLayerNorm (common/te_layers.py at 067f987, the linear_proj and linear_fc2
 * of gemma3_provider.py's layer spec) runs a TENorm of h channels on the row-parallel linear's
 * reduced output, s'·b·h (after the ReduceScatter with SP, the AllReduce without), before the
 * residual add. TE's RMSNorm keeps its input for backward and moves the input norms' bytes
 * (add_norm). It belongs to the module of its linear: the attention block's (not core_attn's
 * checkpoint) or the MLP's (replayed by mlp recomputation, its input dropped with it). */
static void
add_post_norm(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x,
              bool mlp)
{
    bool ln = m->norm == SPSIM_NORM_LAYERNORM;
    const char *name = mlp ? (ln ? "post-MLP LayerNorm" : "post-MLP RMSNorm")
                           : (ln ? "post-attention LayerNorm" : "post-attention RMSNorm");
    struct spsim_op *op =
        add_norm(bld, x, name, mlp ? "post-MLP norm input" : "post-attention norm input",
                 spsim_mul3(x->sl, x->b, x->h, &bld->ok));
    op->post_norm = true;
    if (mlp)
        op->group = op->saved[0].group = SPSIM_RG_MLP;
}

static void
add_attention_block(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x)
{
    bool *ok = &bld->ok;
    uint64_t tokens = spsim_mul(x->s, x->b, ok);
    add_norm(bld, x, m->norm == SPSIM_NORM_LAYERNORM ? "LayerNorm 1" : "RMSNorm 1", "norm 1 input",
             spsim_mul3(x->sl, x->b, x->h, ok))
        ->group = SPSIM_RG_NORM;
    add_boundary(bld, x, true, "g: AllGather before QKV", "f: identity before QKV",
                 "g backward: ReduceScatter of the QKV input gradient",
                 "f backward: AllReduce of the QKV input gradient");
    /* attention.py: the output gate widens linear_qkv by heads·head_dim. */
    uint64_t gate = m->attention_output_gate ? x->q_t : 0, qkv = x->q_t + 2 * x->kv_t + gate;
    struct spsim_op *op =
        add_gemm(bld, "QKV GEMM (column-parallel)", SPSIM_GEMM_COLUMN, tokens, x->h, qkv);
    save_column_input(bld, op, x, "QKV input", SPSIM_RG_NORM); /* the norm's output */
    if (m->linear_bias || m->qkv_bias) /* grad_bias = grad_output.sum(0): read dY once */
        op->bias_grad_bytes = 2.0 * (double)tokens * (double)qkv;
    op->regather_site = "wgrad AG: re-gather of the saved QKV input shard";
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "h", x->h);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, gate ? "(2a+2kv)d/t" : "(a+2kv)d/t", qkv);
    spsim_lora_add(bld->layer, SPSIM_LORA_QKV, tokens, x->h, x->t * qkv, ok);
    if (m->qk_norm)
        add_qk_norm(bld, x);
    if (m->position == SPSIM_POSITION_ROPE) {
        /* --rotary-percent: the rotary channels only are read and written. */
        double rot = m->rotary_percent > 0 ? m->rotary_percent : 1.0;
        double elements = rot * (double)spsim_mul(tokens, x->q_t + x->kv_t, ok);
        op = add_op(bld, "RoPE on Q and K", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
        op->fwd_bytes = 4.0 * elements;
        op->bwd_bytes = 4.0 * elements;
        dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "(a+kv)d/t", x->q_t + x->kv_t);
        dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "(a+kv)d/t", x->q_t + x->kv_t);
    }
    add_core_attention(bld, m, x);
    if (gate) {
        /* attention.py _apply_output_gate: x·sigmoid(gate.float()) reads x and the gate, writes
         * the product (6 B an element); backward reads dy, x and the gate, writes dx and dgate
         * (10 B); autograd keeps x and the gate. */
        uint64_t elements = spsim_mul(tokens, gate, ok);
        op = add_op(bld, "attention output gate x·sigmoid(gate)", SPSIM_OPK_MEMORY,
                    SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
        op->fwd_bytes = 6.0 * (double)elements;
        op->bwd_bytes = 10.0 * (double)elements;
        save(op, "core attention output and gate", spsim_mul(elements, 2, ok), 2, SPSIM_RG_LAYER);
        dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "ad/t", gate);
        dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "ad/t", gate);
    }
    op = add_gemm(bld, "attention projection GEMM (row-parallel)", SPSIM_GEMM_ROW, tokens, x->q_t,
                  x->h);
    save(op, "projection input", spsim_mul(tokens, x->q_t, ok), 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "ad/t", x->q_t);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "h (partial sums)", x->h);
    add_boundary(bld, x, false, "ḡ: ReduceScatter after projection",
                 "f̄: AllReduce after projection",
                 "ḡ backward: AllGather of the projection output gradient", "f̄ backward: identity");
    spsim_lora_add(bld->layer, SPSIM_LORA_PROJ, tokens, x->t * x->q_t, x->h, ok);
    if (m->post_norms)
        add_post_norm(bld, m, x, false);
    add_dropout_add(bld, m, x,
                    m->dropout ? "bias-dropout-add (attention)" : "residual add (attention)");
}

/*
 * Multi-latent attention (transformer/multi_latent_attention.py MLASelfAttention, TE spec).
 * The down-projections linear_q_down_proj h → r_q and linear_kv_down_proj h → r_kv + d_r are
 * duplicated on every TP rank (TELinear parallel_mode 'duplicated'): they run on this rank's
 * tokens (s/t with SP) and issue no TP collective in the layer; with SP their weights are
 * marked sequence_parallel and their gradients all-reduced over TP once per iteration
 * (finalize_model_grads._allreduce_non_tensor_model_parallel_grads; dp_time.c). With SP the
 * rope key k_pos_emb [s/t, b, d_r] is gathered on its own (gather_from_sequence_parallel_region),
 * and the column-parallel up-projections gather the normed latents r_q and r_kv instead of h.
 * Core attention sees Q and K of d_qk + d_r channels per head (the rope key broadcast to every
 * head) and V of d_v. mla_up_proj (CheckpointWithoutOutput over qkv_up_proj_and_rope_apply)
 * discards Q, K, V once core attention has run and keeps the checkpoint's inputs: the latents
 * (which the up-projections keep anyway) and the gathered rope key.
 */
static struct spsim_op *
add_mla_gemm(struct builder *bld, const struct dims *x, const char *name, enum spsim_gemm_role role,
             uint64_t m, uint64_t k, uint64_t n, const char *ksym, const char *nsym)
{
    const char *rows = role == SPSIM_GEMM_COLUMN ? x->s_sym : x->sl_sym;
    uint64_t r = role == SPSIM_GEMM_COLUMN ? x->s : x->sl;
    struct spsim_op *op = add_gemm(bld, name, role, m, k, n);
    dims3(op->in, &op->nin, rows, r, "b", x->b, ksym, k);
    dims3(op->out, &op->nout, rows, r, "b", x->b, nsym, n);
    return op;
}

/* A latent's norm (q_layernorm over r_q, kv_layernorm over r_kv): add_norm's bytes. */
static void
add_latent_norm(struct builder *bld, const struct dims *x, const char *name, const char *what,
                uint64_t width, const char *sym)
{
    uint64_t elements = spsim_mul3(x->sl, x->b, width, &bld->ok);
    struct spsim_op *op = add_op(bld, name, SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = 4.0 * elements;
    op->bwd_bytes = 10.0 * elements;
    save(op, what, elements, 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, sym, width);
    dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, sym, width);
}

/* The TP boundary before an up-projection, at the latent's width (M = b·s·width·2 B). */
static void
add_latent_boundary(struct builder *bld, const struct dims *x, uint64_t width, const char *sym,
                    const char *name_sp, const char *name_tp, const char *bwd_sp,
                    const char *bwd_tp)
{
    struct spsim_op *op = add_boundary(bld, x, true, name_sp, name_tp, bwd_sp, bwd_tp);
    if (!op)
        return;
    op->group = SPSIM_RG_MLA_UP;
    op->message_bytes = spsim_mul4(x->b, x->s, width, 2, &bld->ok);
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, sym, width);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, sym, width);
}

/* With SP the rope key's own gather (forward AllGather, backward ReduceScatter); with
 * mla_up_proj the gathered key is the checkpoint's input and is kept. */
static void
add_rope_key_gather(struct builder *bld, const struct dims *x, uint64_t dr)
{
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    bool *ok = &bld->ok;
    struct spsim_op *op = NULL;
    if (x->t > 1 && cfg->sp) {
        op = add_op(bld, "AllGather of the rope key", SPSIM_OPK_COMM, SPSIM_REGION_BOUNDARY,
                    SPSIM_RG_LAYER);
        op->operator_name = "g";
        op->bwd_name = "ReduceScatter of the rope key gradient";
        op->fwd_coll = SPSIM_COLL_ALL_GATHER;
        op->bwd_coll = SPSIM_COLL_REDUCE_SCATTER;
        op->message_bytes = spsim_mul4(x->b, x->s, dr, 2, ok);
        dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "d_r", dr);
        dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "d_r", dr);
    }
    if ((cfg->rmods & SPSIM_RG_MLA_UP) && op)
        save(op, "rope key (mla_up_proj checkpoint input)", spsim_mul3(x->s, x->b, dr, ok), 2,
             SPSIM_RG_LAYER);
    else if (cfg->rmods & SPSIM_RG_MLA_UP) /* the kv down-projection's output, kept */
        save(&bld->layer->ops[bld->layer->nops - 1], "rope key (mla_up_proj checkpoint input)",
             spsim_mul3(x->s, x->b, dr, ok), 2, SPSIM_RG_LAYER);
}

/* Fused MLA RoPE (fused_apply_mla_rope_for_q / _for_kv): reads q, kv and the rope key, writes
 * Q, K (the key broadcast to each head) and V; backward the same traffic reversed. */
static void
add_mla_rope(struct builder *bld, const struct dims *x, uint64_t q_w, uint64_t kv_w, uint64_t dr)
{
    uint64_t tokens = spsim_mul(x->s, x->b, &bld->ok);
    double per_token = (double)(q_w + kv_w + dr + x->qk_w + x->v_w);
    struct spsim_op *op =
        add_op(bld, "MLA RoPE (Q, K, V)", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_MLA_UP);
    op->fwd_bytes = 2.0 * (double)tokens * per_token;
    op->bwd_bytes = 2.0 * (double)tokens * per_token;
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "n(2d_qk+d_r+d_v)/t", q_w + kv_w);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, x->qkv_sym, x->qk_w + x->v_w);
}

/* The projections before core attention, down then up (the order of get_query_key_value_tensors).
 */
static void
add_mla_projections(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x)
{
    bool *ok = &bld->ok;
    uint64_t rq = m->q_lora_rank, rkv = m->kv_lora_rank, dr = m->qk_pos_emb_head_dim;
    uint64_t T = spsim_mul(x->s, x->b, ok), Tl = spsim_mul(x->sl, x->b, ok);
    uint64_t q_w = x->heads_t * ((uint64_t)m->qk_head_dim + dr);
    uint64_t kv_w = x->heads_t * ((uint64_t)m->qk_head_dim + m->v_head_dim);
    struct spsim_op *op;
    if (rq) {
        op = add_mla_gemm(bld, x, "q down-projection GEMM (replicated)", SPSIM_GEMM_ROW, Tl, x->h,
                          rq, "h", "r_q");
        save(op, "down-projection input", spsim_mul3(x->sl, x->b, x->h, ok), 2, SPSIM_RG_NORM);
    }
    op = add_mla_gemm(bld, x, "kv down-projection GEMM (replicated)", SPSIM_GEMM_ROW, Tl, x->h,
                      rkv + dr, "h", "r_kv+d_r");
    if (!rq)
        save(op, "down-projection input", spsim_mul3(x->sl, x->b, x->h, ok), 2, SPSIM_RG_NORM);
    add_rope_key_gather(bld, x, dr);
    if (rq && m->qk_norm)
        add_latent_norm(bld, x, "q latent RMSNorm", "q latent norm input", rq, "r_q");
    if (m->qk_norm)
        add_latent_norm(bld, x, "kv latent RMSNorm", "kv latent norm input", rkv, "r_kv");
    if (rq)
        add_latent_boundary(bld, x, rq, "r_q", "g: AllGather of the q latent",
                            "f: identity before the q up-projection",
                            "g backward: ReduceScatter of the q latent gradient",
                            "f backward: AllReduce of the q latent gradient");
    else
        add_latent_boundary(bld, x, x->h, "h", "g: AllGather before the q projection",
                            "f: identity before the q projection",
                            "g backward: ReduceScatter of the q projection input gradient",
                            "f backward: AllReduce of the q projection input gradient");
    op = rq ? add_mla_gemm(bld, x, "q up-projection GEMM (column-parallel)", SPSIM_GEMM_COLUMN, T,
                           rq, q_w, "r_q", "n(d_qk+d_r)/t")
            : add_mla_gemm(bld, x, "q projection GEMM (column-parallel)", SPSIM_GEMM_COLUMN, T,
                           x->h, q_w, "h", "n(d_qk+d_r)/t");
    op->group = SPSIM_RG_MLA_UP;
    op->regather_site = "wgrad AG: re-gather of the saved q latent shard";
    if (rq) /* without r_q its input is the down-projection input, kept above */
        save(op, "q up-projection input", spsim_mul(Tl, rq, ok), 2, SPSIM_RG_LAYER);
    add_latent_boundary(bld, x, rkv, "r_kv", "g: AllGather of the kv latent",
                        "f: identity before the kv up-projection",
                        "g backward: ReduceScatter of the kv latent gradient",
                        "f backward: AllReduce of the kv latent gradient");
    op = add_mla_gemm(bld, x, "kv up-projection GEMM (column-parallel)", SPSIM_GEMM_COLUMN, T, rkv,
                      kv_w, "r_kv", "n(d_qk+d_v)/t");
    op->group = SPSIM_RG_MLA_UP;
    op->regather_site = "wgrad AG: re-gather of the saved kv latent shard";
    save(op, "kv up-projection input", spsim_mul(Tl, rkv, ok), 2, SPSIM_RG_LAYER);
    add_mla_rope(bld, x, q_w, kv_w, dr);
}

static void
add_mla_attention_block(struct builder *bld, const struct spsim_model_shape *m,
                        const struct dims *dense)
{
    bool *ok = &bld->ok;
    struct dims x = *dense;
    x.dqk = (uint64_t)m->qk_head_dim + m->qk_pos_emb_head_dim;
    x.dv = m->v_head_dim;
    x.qk_w = 2 * x.heads_t * x.dqk;
    x.v_w = x.heads_t * x.dv;
    x.o_w = x.v_w;
    x.qkv_group = SPSIM_RG_MLA_UP;
    x.qkv_sym = "n(2d_qk+2d_r+d_v)/t";
    x.o_sym = "n·d_v/t";
    uint64_t tokens = spsim_mul(x.s, x.b, ok);
    add_norm(bld, &x, m->norm == SPSIM_NORM_LAYERNORM ? "LayerNorm 1" : "RMSNorm 1", "norm 1 input",
             spsim_mul3(x.sl, x.b, x.h, ok))
        ->group = SPSIM_RG_NORM;
    add_mla_projections(bld, m, &x);
    add_core_attention(bld, m, &x);
    struct spsim_op *op = add_gemm(bld, "attention projection GEMM (row-parallel)", SPSIM_GEMM_ROW,
                                   tokens, x.o_w, x.h);
    save(op, "projection input", spsim_mul(tokens, x.o_w, ok), 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, x.s_sym, x.s, "b", x.b, x.o_sym, x.o_w);
    dims3(op->out, &op->nout, x.s_sym, x.s, "b", x.b, "h (partial sums)", x.h);
    add_boundary(bld, &x, false, "ḡ: ReduceScatter after projection",
                 "f̄: AllReduce after projection",
                 "ḡ backward: AllGather of the projection output gradient", "f̄ backward: identity");
    add_dropout_add(bld, m, &x,
                    m->dropout ? "bias-dropout-add (attention)" : "residual add (attention)");
}

/* The MLP between its norm and its residual add: the dense layer's (group mlp), or the MoE
 * layer's shared experts (group shared_experts, whose input the MoE layer already keeps). */
static void
add_mlp_core(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x,
             bool shared)
{
    bool *ok = &bld->ok;
    uint64_t tokens = spsim_mul(x->s, x->b, ok);
    uint64_t act = spsim_mul(tokens, x->ffn_t, ok);
    enum spsim_rgroup g = shared ? SPSIM_RG_SHARED : SPSIM_RG_MLP;
    /* The MLP module (recompute module mlp) runs from the boundary before FC1 to the one after
     * FC2: Megatron's ColumnParallelLinear gathers and RowParallelLinear reduces inside it. */
    struct spsim_op *op =
        add_boundary(bld, x, true, "g: AllGather before FC1", "f: identity before FC1",
                     "g backward: ReduceScatter of the FC1 input gradient",
                     "f backward: AllReduce of the FC1 input gradient");
    if (op)
        op->group = g;
    op = add_gemm(
        bld, shared ? "shared experts FC1 GEMM (column-parallel)" : "FC1 GEMM (column-parallel)",
        SPSIM_GEMM_COLUMN, tokens, x->h, x->gate * x->ffn_t);
    op->group = g;
    /* The MLP checkpoint's input: kept by mlp recomputation, dropped by layernorm's. */
    if (!shared)
        save_column_input(bld, op, x, "FC1 input", SPSIM_RG_NORM);
    if (m->linear_bias) /* bias-GeLU's bias gradient: read dY once */
        op->bias_grad_bytes = 2.0 * (double)tokens * (double)(x->gate * x->ffn_t);
    op->regather_site = "wgrad AG: re-gather of the saved FC1 input shard";
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "h", x->h);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, x->gate == 2 ? "2ffn/t" : "ffn/t",
          x->gate * x->ffn_t);
    if (!shared)
        spsim_lora_add(bld->layer, SPSIM_LORA_FC1, tokens, x->h, x->t * x->gate * x->ffn_t, ok);
    if (m->mlp == SPSIM_MLP_SWIGLU) {
        op = add_op(bld, "SwiGLU", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, g);
        op->fwd_bytes = 6.0 * act;
        op->bwd_bytes = 10.0 * act;
        save(op, "SwiGLU input (gate and up)", spsim_mul(act, 2, ok), 2, g);
        dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "2ffn/t", 2 * x->ffn_t);
    } else {
        /* GeLU, or squared ReLU (activations.py squared_relu): one elementwise pass either way,
         * its input kept for backward. */
        op = add_op(bld, m->mlp == SPSIM_MLP_RELU2 ? "squared ReLU" : "bias-GeLU", SPSIM_OPK_MEMORY,
                    SPSIM_REGION_TENSOR, g);
        op->fwd_bytes = 4.0 * act;
        op->bwd_bytes = 6.0 * act;
        save(op, "GeLU input", act, 2, g);
        dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "ffn/t", x->ffn_t);
    }
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "ffn/t", x->ffn_t);
    op =
        add_gemm(bld, shared ? "shared experts FC2 GEMM (row-parallel)" : "FC2 GEMM (row-parallel)",
                 SPSIM_GEMM_ROW, tokens, x->ffn_t, x->h);
    op->group = g;
    save(op, "FC2 input", act, 2, g);
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "ffn/t", x->ffn_t);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "h (partial sums)", x->h);
    op = add_boundary(bld, x, false, "ḡ: ReduceScatter after FC2", "f̄: AllReduce after FC2",
                      "ḡ backward: AllGather of the FC2 output gradient", "f̄ backward: identity");
    if (op)
        op->group = g;
    if (!shared)
        spsim_lora_add(bld->layer, SPSIM_LORA_FC2, tokens, x->t * x->ffn_t, x->h, ok);
}

static void
add_mlp_block(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x)
{
    add_norm(bld, x, m->norm == SPSIM_NORM_LAYERNORM ? "LayerNorm 2" : "RMSNorm 2", "norm 2 input",
             spsim_mul3(x->sl, x->b, x->h, &bld->ok))
        ->group = SPSIM_RG_NORM;
    add_mlp_core(bld, m, x, false);
    if (m->post_norms)
        add_post_norm(bld, m, x, true);
    add_dropout_add(bld, m, x, m->dropout ? "bias-dropout-add (MLP)" : "residual add (MLP)");
}

/* An MoE token exchange (group MOE: the moe recompute module replays it). */
static struct spsim_op *
add_ep_op(struct builder *bld, const char *name, enum spsim_coll_op fwd, enum spsim_coll_op bwd,
          uint64_t fwd_bytes, uint64_t bwd_bytes, uint32_t group, uint32_t stride)
{
    struct spsim_op *op = add_op(bld, name, SPSIM_OPK_EP, SPSIM_REGION_TENSOR, SPSIM_RG_MOE);
    op->operator_name = "moe";
    op->fwd_coll = fwd;
    op->bwd_coll = bwd;
    op->message_bytes = fwd_bytes;
    op->cp_bwd_message_bytes = bwd_bytes;
    op->cp_group = group;
    op->cp_stride = stride;
    return op;
}

static struct spsim_op *
add_moe_memory(struct builder *bld, const char *name, double fwd, double bwd)
{
    struct spsim_op *op = add_op(bld, name, SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_MOE);
    op->fwd_bytes = fwd;
    op->bwd_bytes = bwd;
    return op;
}

/*
 * Router (router.py TopKRouter): logits = x·W_r, W_r [h, E] replicated; the score function
 * (softmax or sigmoid) in fp32 and the top-k. Forward reads the bf16 logits (2 B) and writes
 * fp32 scores (4 B), top-k reads them (4 B) and writes k probabilities and int64 indices
 * (12 B per copy); backward reads the scattered fp32 probability gradient and the scores and
 * writes the logits' gradient (4 + 4 + 2 B). The scores are kept for the backward. The
 * auxiliary losses, off by default (moe_aux_loss_coeff = 0.0), are add_router_losses'.
 */
/*
 * Sinkhorn routing (--moe-router-load-balancing-type sinkhorn; router.py
 * sinkhorn_load_balancing, moe_utils.py sinkhorn), per [T, E] element of the logits. Forward,
 * under no_grad: the fp32 copy (read 2, write 4 B), exp (4 + 4), the loop's two sums over the
 * cost (4 + 4 per iteration; one iteration counted, a lower bound: the loop runs until the
 * mean change of d1 is below 1e-4, a count the data decides, and each test of `error > tol`
 * is a device-to-host synchronisation, not modelled), the product d1·cost·d0 (4 + 4) and its
 * top-k (read 4; k probabilities and int64 indices written, 12 B per copy); then the
 * activation of the bf16 logits (top-1: sigmoid, read 2, write 2; else softmax in fp32 cast
 * back: read 2, write 4, read 4, write 2), the routing map (int32 zeros 4, scattered, to bool:
 * read 4, write 1) and scores = logits · map (read 2 + 1, write 2): 44 B plus the activation's.
 * Backward: the product's (read 2 + 1, write 2) and the activation's (sigmoid: read its output
 * and the gradient, write 2 + 2 + 2; softmax on its saved fp32 output: the gradient to fp32
 * 2 + 4, read 4 + 4, write 4, back to bf16 4 + 2). Kept: the activation's output (2 B, or
 * 4 B fp32) and the map (1 B). No auxiliary loss (Megatron asserts moe_aux_loss_coeff == 0).
 */
static void
add_sinkhorn(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x,
             uint64_t T)
{
    uint64_t E = m->experts, k = m->experts_per_token, te = spsim_mul(T, E, &bld->ok);
    bool top1 = k == 1;
    double act_fwd = top1 ? 4.0 : 12.0, act_bwd = top1 ? 6.0 : 24.0;
    struct spsim_op *op = add_moe_memory(bld,
                                         top1 ? "router Sinkhorn, top-1 and sigmoid"
                                              : "router Sinkhorn, "
                                                "top-k and softmax",
                                         (44.0 + act_fwd) * (double)te + 12.0 * (double)T * k,
                                         (5.0 + act_bwd) * (double)te);
    save(op, top1 ? "router sigmoid output" : "router softmax output (fp32)", te, top1 ? 2 : 4,
         SPSIM_RG_MOE);
    save(op, "router routing map (bool)", te, 1, SPSIM_RG_MOE);
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "E", E);
    dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, "k", k);
}

static void
add_router(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x, uint64_t T)
{
    bool *ok = &bld->ok;
    uint64_t E = m->experts, k = m->experts_per_token, scores = spsim_mul(T, E, ok);
    struct spsim_op *op = add_gemm(bld, "router GEMM (replicated)", SPSIM_GEMM_ROW, T, x->h, E);
    op->group = SPSIM_RG_MOE;
    /* router.py gating: moe_utils.py router_gating_linear, a torch matmul in the router's
     * dtype, outside TE's FP8 autocast. */
    op->outside_te = true;
    save(op, "MoE input (router and dispatch)", spsim_mul(T, x->h, ok), 2, SPSIM_RG_NORM);
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "h", x->h);
    dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, "E", E);
    if (m->load_balancing == SPSIM_BALANCE_SINKHORN) {
        add_sinkhorn(bld, m, x, T);
        return;
    }
    op = add_moe_memory(bld,
                        m->router_score == SPSIM_ROUTER_SIGMOID ? "router sigmoid and top-k"
                                                                : "router softmax and top-k",
                        10.0 * scores + 12.0 * (double)T * k, 10.0 * scores);
    save(op, "router scores (fp32)", scores, 4, SPSIM_RG_MOE);
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "E", E);
    dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, "k", k);
}

/*
 * The router's auxiliary terms (router.py TopKRouter.routing, moe_utils.py), per MoE layer on
 * this rank's T tokens and E experts; rows only where the model turns them on.
 * Load-balancing loss (aux_loss, seq_aux_loss): compute_routing_scores_for_aux_loss recomputes
 * the scores from the bf16 logits (read 2 B, write fp32 4 B), its top-k reads them (4 B) and
 * writes the bool routing map (1 B), 11 B per [T, E] element; the scores are kept (4 B) for the
 * backward, which reads the scores' gradient and the scores (4 + 4 B), writes the logits'
 * gradient (2 B) and autograd adds it to the router's (read 2 + 2, write 2): 16 B. The loss
 * (switch_load_balancing_loss_func) reads the map and the scores (1 + 4 B), its backward
 * writes the scores' gradient (4 B). The routed tokens per expert (routing_map.sum, int64) are
 * all-reduced over TP×CP (get_tokens_per_expert_and_token_count, reduce_group = tp_cp_group):
 * 8·E bytes, 8·b·E for seq_aux_loss (the map reshaped to [s, b·E], one count per sequence);
 * global_aux_loss (_apply_global_aux_loss) runs aux_loss's rows with reduce_group =
 * tp_dp_cp_group, 8·E bytes over TP×DP×CP (contiguous ranks), and adds the counts into its
 * fp32 [E] running sum (negligible, not a row).
 * z-loss (z_loss_func): logsumexp reads the logits (2 B); backward reads them and writes their
 * gradient (2 + 2 B), added to the router's (6 B): 10 B.
 * Expert bias (topk_routing_with_score_function, _apply_expert_bias): scores + bias read and
 * write fp32 (4 + 4 B) and local_tokens_per_expert += routing_map.sum(0) reads the map (1 B);
 * no backward.
 */
static void
add_router_losses(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x,
                  uint64_t T)
{
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    double te = (double)T * (double)m->experts;
    if (m->load_balancing != SPSIM_BALANCE_NONE && m->load_balancing != SPSIM_BALANCE_SINKHORN) {
        struct spsim_op *op =
            add_moe_memory(bld, "aux-loss scores and routing map", 11.0 * te, 16.0 * te);
        save(op, "aux-loss scores (fp32)", spsim_mul(T, m->experts, &bld->ok), 4, SPSIM_RG_MOE);
        dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "E", m->experts);
        dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, "E", m->experts);
        add_moe_memory(bld,
                       m->load_balancing == SPSIM_BALANCE_SEQ_AUX_LOSS
                           ? "sequence load-balancing loss"
                           : "load-balancing loss",
                       5.0 * te, 4.0 * te);
        bool global = m->load_balancing == SPSIM_BALANCE_GLOBAL_AUX_LOSS;
        uint64_t n = (uint64_t)cfg->t * (cfg->cp > 1 ? cfg->cp : 1) * (global ? cfg->aux_dp : 1);
        uint64_t counts = m->load_balancing == SPSIM_BALANCE_SEQ_AUX_LOSS ? x->b : 1;
        if (n > 1) {
            op = add_op(bld,
                        global ? "tokens-per-expert AllReduce (TP×DP×CP)"
                               : "tokens-per-expert AllReduce (TP×CP)",
                        SPSIM_OPK_CP, SPSIM_REGION_TENSOR, SPSIM_RG_MOE);
            op->operator_name = "moe";
            op->fwd_coll = SPSIM_COLL_ALL_REDUCE;
            op->message_bytes = spsim_mul3(8, counts, m->experts, &bld->ok);
            op->cp_group = (uint32_t)n;
            op->cp_stride = 1;
            op->moe_aux = true;
        }
    }
    if (m->z_loss) {
        struct spsim_op *op = add_moe_memory(bld, "router z-loss", 2.0 * te, 10.0 * te);
        dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "E", m->experts);
    }
    if (m->expert_bias)
        add_moe_memory(bld, "expert bias and tokens-per-expert count", 9.0 * te, 0.0);
}

/* A flex dispatch or combine over the etp·ep group (moe_flex.c): one fused kernel, its
 * NVLink and RDMA bytes per direction; `combine` the kernel its forward runs, and for HybridEP
 * the hidden bytes of the rows the rank receives (2h each, its own tokens included). */
static void
add_flex_op(struct builder *bld, const char *name, const uint64_t nvlink[2], const uint64_t rdma[2],
            bool combine, const struct dims *x, const struct spsim_moe_flex_traffic *f)
{
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    if (cfg->ep * cfg->etp <= 1)
        return;
    struct spsim_op *op =
        add_ep_op(bld, name, SPSIM_COLL_ALL_TO_ALL, SPSIM_COLL_ALL_TO_ALL, nvlink[0] + rdma[0],
                  nvlink[1] + rdma[1], cfg->ep * cfg->etp, 1);
    op->flex = true;
    op->flex_rdma[0] = rdma[0];
    op->flex_rdma[1] = rdma[1];
    op->flex_kernel = combine;
    if (cfg->flex_backend != SPSIM_FLEX_HYBRIDEP)
        return;
    op->flex_recv_bytes = 2ull * x->h * f->received;
    op->flex_domain_bytes = 2ull * x->h * f->domain_sends;
}

/* flex: the kernel reads each token once where it is (no permute before it) and the receiver
 * puts the tokens it got in expert order: read them, write the copies (2 B each way), backward
 * the same. */
static struct spsim_op *
add_flex_dispatch(struct builder *bld, const struct dims *x, const struct spsim_moe_traffic *tr)
{
    const struct spsim_moe_flex_traffic *f = &tr->flex;
    bool hybrid = bld->layer->cfg.flex_backend == SPSIM_FLEX_HYBRIDEP;
    add_flex_op(bld,
                hybrid ? "flex dispatch (HybridEP: NVLink + RDMA)"
                       : "flex dispatch (DeepEP: NVLink + RDMA)",
                f->dispatch_nvlink, f->dispatch_rdma, false, x, f);
    double moved = 2.0 * (double)x->h * (double)(f->received + tr->rows);
    return add_moe_memory(bld, "permute (received tokens into expert order)", moved, moved);
}

static void
add_flex_combine(struct builder *bld, const struct dims *x, const struct spsim_moe_traffic *tr)
{
    const struct spsim_moe_flex_traffic *f = &tr->flex;
    bool hybrid = bld->layer->cfg.flex_backend == SPSIM_FLEX_HYBRIDEP;
    double moved = 2.0 * (double)x->h * (double)(f->received + tr->rows);
    add_moe_memory(bld, "unpermute (sum of the rank's copies of each token)", moved, moved);
    add_flex_op(bld,
                hybrid ? "flex combine (HybridEP: NVLink + RDMA)"
                       : "flex combine (DeepEP: NVLink + RDMA)",
                f->combine_nvlink, f->combine_rdma, true, x, f);
}

/* Tokens to the experts' ranks (token_dispatcher.py; bytes in moe.c). alltoall: permute the
 * T·k copies into expert order (read and write 2 B each way), the EP all-to-all, with ETP the
 * AllGather over the expert-TP group (the tokens and the probabilities in one, a lower bound: the
 * code gathers each). allgather: the AllGather over ETP×EP, then the local
 * experts' copies are picked out (the same permute over `rows`).
 * Returns the op before whose launch the host waits for the tokens per expert (dropless
 * routing sizes the experts' GEMMs on the host): alltoall copies them to the host after the
 * permute and synchronizes before the EP all-to-all (or before the experts without EP:
 * _maybe_dtoh_and_synchronize, cuda_sync_point "before_ep_alltoall" / "before_finish");
 * allgather calls .cpu() on them after its AllGather (dispatch_postprocess); flex receives
 * them as a host list from DeepEP's dispatch ("the CPU will wait for GPU's signal",
 * fused_a2a.py) and from HybridEP's without a token budget ("CPU sync in dispatch",
 * token_dispatcher.py _HybridEPManager). */
static uint32_t
add_dispatch(struct builder *bld, const struct dims *x, const struct spsim_moe_traffic *tr)
{
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    double h = (double)x->h, copies = (double)tr->sent;
    struct spsim_op *op;
    uint32_t sync = bld->layer->nops + 1;
    if (cfg->dispatcher == SPSIM_MOE_FLEX) {
        op = add_flex_dispatch(bld, x, tr);
    } else if (cfg->dispatcher == SPSIM_MOE_ALLTOALL) {
        op = add_moe_memory(bld, "permute (token copies into expert order)", 4.0 * copies * h,
                            4.0 * copies * h);
        if (cfg->ep > 1) {
            add_ep_op(bld, "dispatch all-to-all (EP)", SPSIM_COLL_ALL_TO_ALL, SPSIM_COLL_ALL_TO_ALL,
                      tr->dispatch, tr->dispatch_bwd, cfg->ep, cfg->etp);
            add_ep_op(bld, "dispatch all-to-all of the probabilities (EP)", SPSIM_COLL_ALL_TO_ALL,
                      SPSIM_COLL_ALL_TO_ALL, tr->dispatch_probs, tr->dispatch_probs, cfg->ep,
                      cfg->etp);
        }
        if (cfg->etp > 1)
            add_ep_op(bld, "dispatch AllGather (expert TP)", SPSIM_COLL_ALL_GATHER,
                      SPSIM_COLL_REDUCE_SCATTER, tr->etp_dispatch, tr->etp_dispatch, cfg->etp, 1);
        /* dispatch_postprocess: with several local experts the received chunks (rank-major)
         * are sorted expert-major (sort_chunks_by_idxs), the tokens (2 B read, 2 B written)
         * and their fp32 probabilities (4 + 4 B), the backward the same for their gradients. */
        if (tr->local_experts > 1) {
            double rows = (double)tr->rows;
            add_moe_memory(bld, "sort chunks by local expert", 4.0 * rows * h + 8.0 * rows,
                           4.0 * rows * h + 8.0 * rows);
        }
    } else {
        if (cfg->ep * cfg->etp > 1)
            add_ep_op(bld, "dispatch AllGather (expert TP×EP)", SPSIM_COLL_ALL_GATHER,
                      SPSIM_COLL_REDUCE_SCATTER, tr->dispatch, tr->dispatch_bwd, cfg->ep * cfg->etp,
                      1);
        sync = bld->layer->nops;
        op = add_moe_memory(bld, "permute (the local experts' token copies)",
                            4.0 * (double)tr->rows * h, 4.0 * (double)tr->rows * h);
    }
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "h", x->h);
    op->out[0] = (struct spsim_dim){"token copies", tr->rows / cfg->etp};
    op->out[1] = (struct spsim_dim){"h", x->h};
    op->nout = 2;
    return sync;
}

/* The combine: the dispatch's mirror; the unpermute sums each token's k copies (read 2 B per
 * copy, write 2 B per token; backward the copies' gradients, read and write). */
static void
add_combine(struct builder *bld, const struct dims *x, const struct spsim_moe_traffic *tr)
{
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    double h = (double)x->h, copies = (double)tr->sent, T = (double)tr->tokens;
    if (cfg->dispatcher == SPSIM_MOE_FLEX) {
        add_flex_combine(bld, x, tr);
        return;
    }
    if (cfg->dispatcher == SPSIM_MOE_ALLTOALL) {
        /* combine_preprocess: the experts' output back to rank-major order (sort_chunks_by_idxs,
         * the tokens alone: 2 B read, 2 B written, both passes). */
        if (tr->local_experts > 1)
            add_moe_memory(bld, "unsort chunks (rank order)", 4.0 * (double)tr->rows * h,
                           4.0 * (double)tr->rows * h);
        if (cfg->etp > 1)
            add_ep_op(bld, "combine ReduceScatter (expert TP)", SPSIM_COLL_REDUCE_SCATTER,
                      SPSIM_COLL_ALL_GATHER, tr->etp_combine, tr->etp_combine, cfg->etp, 1);
        if (cfg->ep > 1)
            add_ep_op(bld, "combine all-to-all (EP)", SPSIM_COLL_ALL_TO_ALL, SPSIM_COLL_ALL_TO_ALL,
                      tr->combine, tr->combine, cfg->ep, cfg->etp);
        add_moe_memory(bld, "unpermute (sum of each token's copies)",
                       2.0 * copies * h + 2.0 * T * h, 4.0 * copies * h);
        return;
    }
    double gathered = (double)(cfg->ep * cfg->etp) * T;
    add_moe_memory(bld, "unpermute (into the gathered tokens)",
                   2.0 * (double)tr->rows * h + 2.0 * gathered * h, 4.0 * (double)tr->rows * h);
    if (cfg->ep * cfg->etp > 1)
        add_ep_op(bld, "combine ReduceScatter (expert TP×EP)", SPSIM_COLL_REDUCE_SCATTER,
                  SPSIM_COLL_ALL_GATHER, tr->combine, tr->combine, cfg->ep * cfg->etp, 1);
}

/*
 * The local experts (experts.py TEGroupedMLP: one grouped GEMM over the E/ep local experts,
 * each with tokens_per_expert rows): FC1 [h → gate·f_e/etp], the activation (the routing
 * probabilities applied to its output), FC2 [f_e/etp → h]. Kept: FC1's input (the permuted
 * copies), its output and the probabilities (dropped by moe), FC2's input (dropped by moe and
 * by moe_act, whose output-discarding checkpoint re-runs the activation).
 * In FP8 and NVFP4 TEGroupedMLP pads each expert's rows to the recipe's alignment before FC1
 * and strips the padding after FC2 (experts_pad below).
 */
/*
 * TEGroupedMLP.forward (Megatron-LM d98e8a64 moe/experts.py:896-904; the op-fuser path 736-744)
 * runs TE's Fp8Padding on the experts' tokens and on their probabilities before FC1, and
 * Fp8Unpadding on FC2's output (experts.py:1043; 826), when the config is fp8 or fp4 and
 * skip_routed_expert_padding is false (moe_utils.py:1494: not with
 * moe_router_padding_for_quantization, off by default and set False by Megatron-Bridge's
 * Qwen3 MoE recipes, 067f987df recipes/qwen/h100/qwen3_moe.py:106, with no override in
 * scripts/performance; nor with the HybridEP dispatcher, nor DeepEP's fused permute-and-pad, which
 * needs moe_use_grouped_tensor, off by default). Each is one autograd op of one TE kernel
 * (fp8_padding.py, fp8_unpadding.py: tex.fused_multi_row_padding / _unpadding, one launch per
 * 64 tensors, common/util/padding.cu kMaxTensorsPerKernel), a copy: the tokens read and written
 * (2 + 2 B an element), the fp32 probabilities (4 + 4 B a row); backward the same copy the
 * other way. The copy is skipped only when every expert's rows are already a multiple of the
 * alignment (16, MXFP8 32: TE quantization.py get_align_size_for_quantization), which dropless
 * routing over several experts all but never gives: taken as always. The up to alignment - 1
 * padded rows an expert adds to the GEMMs are left out.
 */
static bool
experts_pad(const struct spsim_layer_config *cfg)
{
    if (cfg->dtype != SPSIM_DTYPE_FP8 && cfg->dtype != SPSIM_DTYPE_NVFP4)
        return false;
    return !(cfg->dispatcher == SPSIM_MOE_FLEX && cfg->flex_backend == SPSIM_FLEX_HYBRIDEP);
}

/*
 * The experts' FC2 bias (add_bias_linear, e.g. GPT-OSS). TEGroupedMLP builds linear_fc2 with
 * skip_bias_add=True (Megatron-LM d98e8a64 moe/experts.py:247) and adds the bias times each
 * copy's routing probability after FC2 in _apply_bias (experts.py:1039), which without
 * moe_use_grouped_tensor (off by default; tokens_per_expert is then a host list,
 * experts.py:905-915) takes its list path (experts.py:365-380): per expert t + b·p, then
 * torch.cat of the experts' results and .to(the output's dtype), four PyTorch kernels over the
 * [copies, h] output. p is [copies, 1] in the dispatcher's probability dtype: fp32 with the flex
 * dispatchers (HybridEP and DeepEP upcast, token_dispatcher.py:1135-1141, 1312-1318), else the
 * router logits' (probs.type_as(logits), moe_utils.py:936; bf16 without moe_router_dtype,
 * router.py:106-111, which spsim does not take). PyTorch's type promotion makes b·p and the sum
 * fp32 when p is (bf16 with fp32 -> fp32); torch.cat always writes a new tensor; .to() to the
 * same dtype returns its input. Bytes per element of [copies, h], e = 4 (fp32 p) or 2:
 *   forward   b·p writes e; t + b·p reads 2 + e, writes e; cat reads and writes e;
 *             .to(bf16) (e = 4 only) reads 4, writes 2:       e = 4: 28;  e = 2: 12
 *   backward  .to's backward casts dY up (e = 4: read 2, write 4); cat's is slices; autograd's
 *             engine casts t's gradient to bf16 (e = 4: read 4, write 2); the product's two
 *             gradients dY·p and dY·b, each written (e), read with dY (e, e) and summed over the
 *             broadcast dimension; torch.split's backward concatenates the experts' bf16
 *             gradients of t into one (read 2, write 2):     e = 4: 40;  e = 2: 16
 * FC1's bias is TE's: added in the cuBLAS epilogue, its gradient fused into dY's quantization
 * in FP8 (TE d0067d0 pytorch/module/grouped_linear.py:1315-1321 compute_dbias) or into the
 * wgrad GEMMs' bgrad epilogue (grouped_linear.py:1455): no extra pass.
 */
static void
add_expert_fc2_bias(struct builder *bld, const struct dims *x, const struct spsim_moe_traffic *tr)
{
    bool fp32_probs = bld->layer->cfg.dispatcher == SPSIM_MOE_FLEX;
    double elements = (double)tr->rows * (double)x->h;
    add_moe_memory(bld, "experts FC2 bias × probabilities (_apply_bias)",
                   (fp32_probs ? 28.0 : 12.0) * elements, (fp32_probs ? 40.0 : 16.0) * elements);
}

static void
add_experts(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x,
            const struct spsim_moe_traffic *tr)
{
    bool *ok = &bld->ok;
    uint64_t f = m->expert_ffn_hidden / bld->layer->cfg.etp, tpe = tr->tokens_per_expert;
    uint64_t act = spsim_mul(tr->rows, f, ok);
    const enum spsim_rgroup act_group = (enum spsim_rgroup)(SPSIM_RG_MOE | SPSIM_RG_MOE_ACT);
    double copy = 4.0 * (double)tr->rows * (double)x->h;
    bool pad = experts_pad(&bld->layer->cfg);
    if (pad) {
        add_moe_memory(bld, "experts' tokens padded for quantization (Fp8Padding)", copy, copy);
        add_moe_memory(bld, "experts' probabilities padded (Fp8Padding)", 8.0 * (double)tr->rows,
                       8.0 * (double)tr->rows);
    }
    struct spsim_op *op =
        add_gemm(bld, "experts FC1 grouped GEMM", SPSIM_GEMM_ROW, tpe, x->h, x->gate * f);
    op->batch = tr->local_experts;
    op->group = SPSIM_RG_MOE;
    save(op, "experts FC1 input (permuted token copies)", spsim_mul(tr->rows, x->h, ok), 2,
         SPSIM_RG_MOE);
    dims3(op->in, &op->nin, "E/ep", tr->local_experts, "tokens per expert", tpe, "h", x->h);
    dims3(op->out, &op->nout, "E/ep", tr->local_experts, "tokens per expert", tpe,
          x->gate == 2 ? "2f_e/etp" : "f_e/etp", x->gate * f);
    op = add_op(bld,
                m->mlp == SPSIM_MLP_SWIGLU  ? "experts SwiGLU (× probabilities)"
                : m->mlp == SPSIM_MLP_RELU2 ? "experts squared ReLU (× probabilities)"
                                            : "experts GeLU (× probabilities)",
                SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, act_group);
    op->fwd_bytes = (x->gate == 2 ? 6.0 : 4.0) * (double)act + 4.0 * (double)tr->rows;
    op->bwd_bytes = (x->gate == 2 ? 10.0 : 6.0) * (double)act + 8.0 * (double)tr->rows;
    save(op, "experts activation input (FC1 output)", spsim_mul(act, x->gate, ok), 2, SPSIM_RG_MOE);
    save(op, "permuted probabilities (fp32)", tr->rows, 4, SPSIM_RG_MOE);
    dims3(op->in, &op->nin, "E/ep", tr->local_experts, "tokens per expert", tpe,
          x->gate == 2 ? "2f_e/etp" : "f_e/etp", x->gate * f);
    dims3(op->out, &op->nout, "E/ep", tr->local_experts, "tokens per expert", tpe, "f_e/etp", f);
    op = add_gemm(bld, "experts FC2 grouped GEMM", SPSIM_GEMM_ROW, tpe, f, x->h);
    op->batch = tr->local_experts;
    op->group = SPSIM_RG_MOE;
    save(op, "experts FC2 input", act, 2, act_group);
    dims3(op->in, &op->nin, "E/ep", tr->local_experts, "tokens per expert", tpe, "f_e/etp", f);
    dims3(op->out, &op->nout, "E/ep", tr->local_experts, "tokens per expert", tpe,
          "h (partial sums)", x->h);
    if (m->linear_bias)
        add_expert_fc2_bias(bld, x, tr);
    if (pad)
        add_moe_memory(bld, "experts' output unpadded (Fp8Unpadding)", copy, copy);
}

/* The ops from `first` not yet in a CUDA-graph module join `module` (transformer_layer.py
 * _get_submodules_under_cudagraphs: which submodules a per-layer graph captures). */
static void
mark_graph(struct spsim_layer *layer, uint32_t first, uint32_t module)
{
    for (uint32_t i = first; i < layer->nops; i++)
        if (!layer->ops[i].graph_module)
            layer->ops[i].graph_module = module;
}

/* SharedExpertMLP's gate (moe/shared_experts.py forward, Megatron-LM d98e8a6:
 * output · sigmoid(linear(hidden_states, gate_weight)), gate_weight 1 × h): on this rank's
 * tokens (s/t with SP) it reads the input and the output and writes the product (6 B an element
 * of h); backward reads dy, the output and the input, writes dx and the input's gradient
 * (10 B); autograd keeps the output (the input is kept already). The h → 1 GEMV's 2h FLOPs a
 * token are left in these bytes. */
static void
add_shared_expert_gate(struct builder *bld, const struct dims *x)
{
    uint64_t gated = spsim_mul3(x->sl, x->b, x->h, &bld->ok);
    struct spsim_op *op = add_op(bld, "shared expert gate y·sigmoid(x·w)", SPSIM_OPK_MEMORY,
                                 SPSIM_REGION_SEQ, SPSIM_RG_LAYER);
    op->fwd_bytes = 6.0 * (double)gated;
    op->bwd_bytes = 10.0 * (double)gated;
    save(op, "shared experts' output", gated, 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "h", x->h);
    dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, "h", x->h);
}

/* The MoE layer's FFN (moe_layer.py MoELayer.forward): route, dispatch, shared experts, the
 * routed experts, combine; the shared experts are a dense TP MLP of their width. */
/*
 * Latent MoE (moe_layer.py preprocess and postprocess, moe_latent_size): fc1_latent_proj h → r
 * on this rank's tokens before the dispatch and fc2_latent_proj r → h after the combine, two
 * duplicated TELinear (no TP collective; their gradients are all-reduced over TP once per
 * iteration with SP, as the router's: dp_time.c). Between them the tokens travel and the
 * experts run r wide: the dispatch, experts and combine are built on a shape of hidden r.
 */
static void
add_latent_proj(struct builder *bld, const struct dims *x, uint64_t T, uint64_t r, bool down)
{
    struct spsim_op *op =
        down ? add_gemm(bld, "latent down-projection GEMM (fc1_latent_proj, duplicated)",
                        SPSIM_GEMM_ROW, T, x->h, r)
             : add_gemm(bld, "latent up-projection GEMM (fc2_latent_proj, duplicated)",
                        SPSIM_GEMM_ROW, T, r, x->h);
    op->group = SPSIM_RG_MOE;
    if (!down) /* its input, the combine's output (the down-projection's is the MoE input) */
        save(op, "latent up-projection input", spsim_mul(T, r, &bld->ok), 2, SPSIM_RG_MOE);
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, down ? "h" : "r", down ? x->h : r);
    dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, down ? "r" : "h", down ? r : x->h);
}

static void
add_moe_block(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x)
{
    struct spsim_moe_traffic tr;
    struct spsim_model_shape lm = *m; /* the experts' shape: hidden r with a latent */
    struct dims lx = *x;
    if (m->moe_latent)
        lm.hidden = m->moe_latent, lx.h = m->moe_latent;
    spsim_moe_traffic(&lm, &bld->layer->cfg, &tr, &bld->ok);
    uint32_t norm2 = bld->layer->nops;
    add_norm(bld, x, m->norm == SPSIM_NORM_LAYERNORM ? "LayerNorm 2" : "RMSNorm 2", "norm 2 input",
             spsim_mul3(x->sl, x->b, x->h, &bld->ok))
        ->group = SPSIM_RG_NORM;
    add_router(bld, m, x, tr.tokens);
    add_router_losses(bld, m, x, tr.tokens);
    /* transformer_layer.py: moe_router captures the pre-MLP norm, the router and the shared
     * experts (what runs before the dispatch); the rest of the block stays eager. */
    mark_graph(bld->layer, norm2, SPSIM_CGS_MOE_ROUTER);
    if (m->moe_latent)
        add_latent_proj(bld, x, tr.tokens, m->moe_latent, true);
    uint32_t sync = add_dispatch(bld, &lx, &tr);
    if (m->shared_expert_ffn_hidden) {
        struct dims sx = *x;
        sx.ffn_t = m->shared_expert_ffn_hidden / x->t;
        uint32_t first = bld->layer->nops;
        add_mlp_core(bld, m, &sx, true);
        mark_graph(bld->layer, first, SPSIM_CGS_MOE_ROUTER);
        for (uint32_t i = first; i < bld->layer->nops; i++) /* moe drops them too */
            bld->layer->ops[i].group = (enum spsim_rgroup)(SPSIM_RG_SHARED | SPSIM_RG_MOE);
        if (m->moe_shared_expert_gate)
            add_shared_expert_gate(bld, x);
        for (uint32_t i = first; i < bld->layer->nops; i++)
            for (uint32_t k = 0; k < bld->layer->ops[i].nsaved; k++)
                bld->layer->ops[i].saved[k].group = bld->layer->ops[i].group;
    }
    add_experts(bld, &lm, &lx, &tr);
    bld->layer->ops[sync].d2h_sync = true; /* the experts' GEMMs follow it: it exists */
    add_combine(bld, &lx, &tr);
    if (m->moe_latent)
        add_latent_proj(bld, x, tr.tokens, m->moe_latent, false);
    add_dropout_add(bld, m, x, m->dropout ? "bias-dropout-add (MoE)" : "residual add (MoE)");
}

/*
 * The Mamba-2 layer (ssm/mamba_layer.py MambaLayer, ssm/mamba_mixer.py MambaMixer with
 * use_mem_eff_path, Megatron's training path _ssm_training; the kernels of mamba_ssm
 * ops/triton/ssd_combined.py mamba_split_conv1d_scan_combined at state-spaces/mamba e9594ce).
 * Per rank of TP size t: H/t heads of P channels (d/t = H·P/t), G/t groups of the N-wide B and
 * C (nheads_local_tp, ngroups_local_tp). With CP c the all-to-all before the convolution gives
 * each rank the whole sequence of H/(t·c) heads and max(1, G/(t·c)) groups (B and C repeated
 * c·t/G times when the groups are fewer: mamba_context_parallel.py group_repeat_count).
 */
struct mamba_dims {
    uint64_t H, d, G, N, P, Q; /* per rank after the CP exchange */
    uint64_t d_t, G_t, H_t;    /* per TP rank (the in_proj and out_proj widths) */
    uint64_t s;                /* tokens per sequence the scan runs over (the whole s with CP) */
    uint64_t rep;              /* B and C repeats for CP (1 without) */
};

static struct mamba_dims
mamba_dims(const struct spsim_model_shape *m, const struct dims *x, uint64_t c)
{
    struct mamba_dims md = {.N = m->mamba_state_dim, .P = m->mamba_head_dim, .Q = m->mamba_chunk};
    md.H_t = m->mamba_heads / x->t;
    md.G_t = m->mamba_groups / x->t;
    md.d_t = md.H_t * md.P;
    md.H = md.H_t / c;
    md.d = md.H * md.P;
    md.rep = md.G_t < c ? c / md.G_t : 1;
    md.G = md.G_t < c ? 1 : md.G_t / c;
    md.s = x->s * c;
    return md;
}

/* The SSD chunked scan's matmuls (ssd_combined.py _mamba_chunk_scan_combined_fwd: bmm_chunk
 * C·Bᵀ per group, chunk_state Bᵀ·x per head, chunk_scan (C·Bᵀ ∘ L)·x and C·states per head), as
 * batched matmuls over the b·s/Q chunks; the Triton kernels' tl.dot tiles are timed as the GEMM
 * model times a batched GEMM of that shape. chunk_scan skips the tiles above the causal
 * diagonal of C·Bᵀ ∘ L: counted whole (a bound; the scan is a few per cent of the layer).
 * Backward: each matmul's two gradients (spsim's BMM rule); mamba_ssm's backward also recomputes
 * the chunk states (one more chunk_state pass, 2·N·d/t FLOPs a token, not counted). */
static void
add_ssd_bmm(struct builder *bld, const char *name, uint64_t batch, uint64_t m, uint64_t k,
            uint64_t n)
{
    struct spsim_op *op = add_op(bld, name, SPSIM_OPK_BMM, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->batch = batch;
    op->m = m;
    op->k = k;
    op->n = n;
    op->in[0] = (struct spsim_dim){"b·s/Q chunks × heads or groups", batch};
    op->in[1] = (struct spsim_dim){"rows", m};
    op->in[2] = (struct spsim_dim){"inner", k};
    op->nin = 3;
    op->out[0] = op->in[0];
    op->out[1] = op->in[1];
    op->out[2] = (struct spsim_dim){"columns", n};
    op->nout = 3;
}

/* A Mamba CP all-to-all of `width` channels per token of this rank's s/c tokens (forward and
 * backward the same size, mamba_context_parallel.py _all_to_all_cp2hp / _all_to_all_hp2cp), and
 * the reorder of TE's attention load balancing beside it (_undo/_redo_attention_load_balancing:
 * torch.cat of 2c chunks, a read and a write of each element, again for its gradient). */
static void
add_mamba_cp(struct builder *bld, const struct dims *x, const char *name, uint64_t width)
{
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    if (cfg->cp <= 1)
        return;
    uint64_t elements = spsim_mul3(x->s, x->b, width, &bld->ok);
    struct spsim_op *op = add_op(bld, name, SPSIM_OPK_CP, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->operator_name = "cp";
    op->fwd_coll = op->bwd_coll = SPSIM_COLL_ALL_TO_ALL;
    op->message_bytes = op->cp_bwd_message_bytes = spsim_mul(elements, 2, &bld->ok);
    op->cp_group = cfg->cp;
    op->cp_stride = (uint32_t)x->t;
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "channels/t", width);
    dims3(op->out, &op->nout, "s", x->s * cfg->cp, "b", x->b, "channels/(t·c)", width / cfg->cp);
    op = add_op(bld, "CP chunk reorder (attention load balancing undone or redone)",
                SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = op->bwd_bytes = 4.0 * (double)elements;
}

/* The fused conv, scan and gate between in_proj and the gated norm (mamba_split_conv1d_scan_
 * combined without rmsnorm_weight, so its epilogue gates y·silu(z)): it keeps zxbcdt, its whole
 * input, and out_x, the scan's output before the gate, for its backward, which recomputes the
 * convolution from zxbcdt. */
static void
add_ssd_scan(struct builder *bld, const struct dims *x, const struct mamba_dims *md)
{
    bool *ok = &bld->ok;
    /* A last partial chunk runs as a whole one (the kernels' tiles are Q rows). */
    uint64_t tok = spsim_mul(md->s, x->b, ok);
    uint64_t chunks = spsim_mul(x->b, (md->s + md->Q - 1) / md->Q, ok);
    uint64_t xbc = md->d + 2 * md->G * md->N, zxbcdt = md->d + xbc + md->H;
    /* causal_conv1d_fwd over x, B, C and SiLU (read 2, write 2 B per element); backward the
     * recomputed forward (2 + 2) and causal_conv1d_bwd (x and dy read, dx written: 6). */
    uint64_t conv = spsim_mul(tok, xbc, ok);
    struct spsim_op *op = add_op(bld, "causal conv1d and SiLU on x, B, C (causal_conv1d)",
                                 SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = 4.0 * (double)conv;
    op->bwd_bytes = 10.0 * (double)conv;
    save(op, "zxbcdt (in_proj output: z, x, B, C, dt)", spsim_mul(tok, zxbcdt, ok), 2,
         SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, "s", md->s, "b", x->b, "(d+2GN)/t", xbc);
    dims3(op->out, &op->nout, "s", md->s, "b", x->b, "(d+2GN)/t", xbc);
    uint64_t nc = chunks;
    add_ssd_bmm(bld, "SSD C·Bᵀ within chunks (bmm_chunk)", spsim_mul(nc, md->G, ok), md->Q, md->N,
                md->Q);
    add_ssd_bmm(bld, "SSD chunk states Bᵀ·x (chunk_state)", spsim_mul(nc, md->H, ok), md->N, md->Q,
                md->P);
    /* _state_passing_fwd reads the fp32 chunk states and writes the passed states (the
     * activations' dtype: mamba_training_ssm_states_dtype unset), 4 + 2 B per state element;
     * backward recomputes chunk_state (4) and the passing (6), chunk_scan_bwd_dstates writes
     * dstates (4), _state_passing_bwd reads dstates and states and writes their gradient
     * (4 + 2 + 4), chunk_state_bwd_dx reads dstates (4): 28 B. */
    uint64_t states = spsim_mul4(nc, md->H, md->P, md->N, ok);
    op = add_op(bld, "SSD state passing across chunks (state_passing)", SPSIM_OPK_MEMORY,
                SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = 6.0 * (double)states;
    op->bwd_bytes = 28.0 * (double)states;
    add_ssd_bmm(bld, "SSD output within chunks (C·Bᵀ∘L)·x (chunk_scan)", spsim_mul(nc, md->H, ok),
                md->Q, md->Q, md->P);
    add_ssd_bmm(bld, "SSD output from states C·states (chunk_scan)", spsim_mul(nc, md->H, ok),
                md->Q, md->N, md->P);
    /* chunk_scan's epilogue: D·x, y·silu(z), writing out and out_x (read z 2, write 2 + 2 B);
     * backward reads dout, z and out_x and writes dz (8 B) and the D and skip terms (2). */
    uint64_t y = spsim_mul(tok, md->d, ok);
    op = add_op(bld, "SSD D skip and gate y·silu(z) (chunk_scan epilogue)", SPSIM_OPK_MEMORY,
                SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = 6.0 * (double)y;
    op->bwd_bytes = 10.0 * (double)y;
    save(op, "SSD output before the gate (out_x)", y, 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, "s", md->s, "b", x->b, "d/(t·c)", md->d);
    dims3(op->out, &op->nout, "s", md->s, "b", x->b, "d/(t·c)", md->d);
}

/* MambaLayer: its norm fused in in_proj (TELayerNormColumnParallelLinear; MambaLayer's own norm
 * is IdentityOp, so --recompute-modules layernorm has nothing to drop), the mixer, the residual
 * add (mamba_bda, no dropout in the hybrid models). No selective-recompute module covers the
 * mixer; full recomputation checkpoints the whole layer. */
static void
add_mamba_block(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x)
{
    bool *ok = &bld->ok;
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    struct mamba_dims md = mamba_dims(m, x, cfg->cp > 1 ? cfg->cp : 1);
    uint64_t tokens = spsim_mul(x->s, x->b, ok);
    uint64_t proj = 2 * md.d_t + 2 * md.G_t * m->mamba_state_dim + md.H_t;
    add_norm(bld, x, m->norm == SPSIM_NORM_LAYERNORM ? "LayerNorm (Mamba)" : "RMSNorm (Mamba)",
             "norm input", spsim_mul3(x->sl, x->b, x->h, ok));
    add_boundary(bld, x, true, "g: AllGather before in_proj", "f: identity before in_proj",
                 "g backward: ReduceScatter of the in_proj input gradient",
                 "f backward: AllReduce of the in_proj input gradient");
    struct spsim_op *op = add_gemm(bld, "Mamba in_proj GEMM (column-parallel: z, x, B, C, dt)",
                                   SPSIM_GEMM_COLUMN, tokens, x->h, proj);
    save_column_input(bld, op, x, "in_proj input", SPSIM_RG_LAYER);
    op->regather_site = "wgrad AG: re-gather of the saved in_proj input shard";
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "h", x->h);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "(2d+2GN+H)/t", proj);
    add_mamba_cp(bld, x, "CP all-to-all of z, x, B, C, dt (Mamba)",
                 2 * md.d_t + 2 * md.G_t * md.rep * m->mamba_state_dim + md.H_t);
    add_ssd_scan(bld, x, &md);
    add_mamba_cp(bld, x, "CP all-to-all of y (Mamba)", md.d_t);
    /* RMSNormGated (mamba_ssm layernorm_gated, groups of d/G channels; z already applied): it
     * keeps its input, and out_proj keeps its output. */
    uint64_t y = spsim_mul(tokens, md.d_t, ok);
    op = add_op(bld, "gated RMSNorm (per group)", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR,
                SPSIM_RG_LAYER);
    op->fwd_bytes = 4.0 * (double)y;
    op->bwd_bytes = 10.0 * (double)y;
    save(op, "gated-norm input", y, 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "d/t", md.d_t);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "d/t", md.d_t);
    op = add_gemm(bld, "Mamba out_proj GEMM (row-parallel)", SPSIM_GEMM_ROW, tokens, md.d_t, x->h);
    save(op, "out_proj input", y, 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "d/t", md.d_t);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "h (partial sums)", x->h);
    add_boundary(bld, x, false, "ḡ: ReduceScatter after out_proj", "f̄: AllReduce after out_proj",
                 "ḡ backward: AllGather of the out_proj output gradient", "f̄ backward: identity");
    add_dropout_add(bld, m, x, m->dropout ? "bias-dropout-add (Mamba)" : "residual add (Mamba)");
}

/*
 * The Gated DeltaNet layer ('G': hybrid_layer_specs.py gdn_layer, a TransformerLayer whose
 * self_attention is ssm/gated_delta_net/gdn.py GatedDeltaNet, Megatron-LM d98e8a6; the kernels
 * of fla-org/flash-linear-attention bc3b101 fla/ops/gated_delta_rule/chunk.py, chunk size
 * C = 64: gdn.py chunk_size). Per rank of TP size t: H_k/t key heads of d_k, H_v/t value heads
 * of d_v; with CP c the all-to-all after in_proj (common.py a2a_cp_to_hp) gives each rank the
 * whole sequence of H/(t·c) heads, and the one before out_proj (a2a_hp_to_cp) gives it back.
 */
struct gdn_dims {
    uint64_t Hk, Hv, dk, dv, C; /* heads per rank after the CP exchange; head widths; chunk */
    uint64_t in_t, v_t;         /* per TP rank: in_proj's output width and v = H_v·d_v/t */
    uint64_t tok, chunks;       /* tokens and chunks the kernel runs over (the whole s with CP) */
};

#define GDN_CHUNK 64 /* gdn.py GatedDeltaNet._setup_variant_attrs: self.chunk_size = 64 */

static struct gdn_dims
gdn_dims(const struct spsim_model_shape *m, const struct dims *x, uint64_t c, bool *ok)
{
    struct gdn_dims g = {.dk = m->gdn_key_head_dim, .dv = m->gdn_value_head_dim, .C = GDN_CHUNK};
    uint64_t Hk_t = m->gdn_key_heads / x->t, Hv_t = m->gdn_value_heads / x->t;
    g.in_t = 2 * Hk_t * g.dk + 2 * Hv_t * g.dv + 2 * Hv_t;
    g.v_t = Hv_t * g.dv;
    g.Hk = Hk_t / c;
    g.Hv = Hv_t / c;
    g.tok = spsim_mul(x->s * c, x->b, ok);
    g.chunks = spsim_mul(x->b, (x->s * c + g.C - 1) / g.C, ok);
    return g;
}

/* The convolution, the L2 norm of q and k, their repeat to the value heads and the gates
 * (common.py _prepare_input_for_gated_delta_rule, gdn.py _compute_gates). */
static void
add_gdn_inputs(struct builder *bld, const struct dims *x, const struct gdn_dims *g)
{
    bool *ok = &bld->ok;
    uint64_t qk = g->Hk * g->dk, conv = spsim_mul(g->tok, 2 * qk + g->Hv * g->dv, ok);
    /* FLA causal_conv1d with the SiLU fused: reads x and writes y (2 + 2 B a channel); its
     * backward reads x and dy and writes dx (6 B); it keeps x. */
    struct spsim_op *op = add_op(bld, "causal conv1d and SiLU on q, k, v (FLA causal_conv1d)",
                                 SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = 4.0 * (double)conv;
    op->bwd_bytes = 6.0 * (double)conv;
    save(op, "conv1d input (q, k, v)", conv, 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, "s", x->s * bld->layer->cfg.cp, "b", x->b, "(2qk+v)/(t·c)",
          2 * qk + g->Hv * g->dv);
    dims3(op->out, &op->nout, "s", x->s * bld->layer->cfg.cp, "b", x->b, "(2qk+v)/(t·c)",
          2 * qk + g->Hv * g->dv);
    /* fla.modules.l2norm over each head of q and k: reads and writes (4 B); backward reads y
     * and dy, writes dx (6 B); it keeps y (and a rstd per head, not counted). */
    uint64_t qkn = spsim_mul(g->tok, 2 * qk, ok);
    op = add_op(bld, "L2 norm of q and k (FLA l2norm)", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR,
                SPSIM_RG_LAYER);
    op->fwd_bytes = 4.0 * (double)qkn;
    op->bwd_bytes = 6.0 * (double)qkn;
    save(op, "L2-normed q and k", qkn, 2, SPSIM_RG_LAYER);
    /* repeat_interleave of q and k to H_v heads and .contiguous(): reads 2qk, writes 2·H_v·d_k
     * (2 B each); the gradient the reverse. */
    double rep = 2.0 * (double)qkn + 4.0 * (double)spsim_mul(g->tok, g->Hv * g->dk, ok);
    op = add_op(bld, "q and k repeated to the value heads (repeat_interleave)", SPSIM_OPK_MEMORY,
                SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = op->bwd_bytes = rep;
    /* g = −exp(A_log)·softplus(α + dt_bias) in fp32, β = sigmoid(b): reads α and b (2 + 2 B a
     * head), writes g (4) and β (2); backward reads dg, dβ and α, b, writes dα, db (14 B). */
    uint64_t heads = spsim_mul(g->tok, g->Hv, ok);
    op = add_op(bld, "GDN gates g and β (softplus, sigmoid)", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR,
                SPSIM_RG_LAYER);
    op->fwd_bytes = 10.0 * (double)heads;
    op->bwd_bytes = 14.0 * (double)heads;
    save(op, "gate inputs α and b", spsim_mul(heads, 2, ok), 2, SPSIM_RG_LAYER);
}

/* chunk_gated_delta_rule's matmuls per value head over the b·s/C chunks (chunk.py
 * chunk_gated_delta_rule_fwd): chunk_gated_delta_rule_fwd_intra's β·K·Kᵀ (chunk_scaled_dot_kkt)
 * and the WY factors w = A·(β·K), u = A·(β·V) (recompute_w_u_fwd; solve_tril's C×C inverse,
 * C³/3 a chunk, not counted), chunk_gated_delta_rule_fwd_h's v_new = u − w·S and S += Kᵀ·v_new,
 * chunk_fwd_o's (Q·Kᵀ ∘ M)·v_new and Q·S; the gated delta rule of Yang et al. (ICLR 2025) §3.3
 * in its chunkwise form. Backward: each matmul's two gradients (spsim's BMM rule);
 * chunk_gated_delta_rule_bwd also recomputes w, u and the states (not counted). */
static void
add_gdn_kernel(struct builder *bld, const struct gdn_dims *g)
{
    bool *ok = &bld->ok;
    uint64_t n = spsim_mul(g->chunks, g->Hv, ok), C = g->C, dk = g->dk, dv = g->dv;
    add_ssd_bmm(bld, "GDN β·K·Kᵀ within chunks (chunk_scaled_dot_kkt)", n, C, dk, C);
    add_ssd_bmm(bld, "GDN WY w = A·(β·K) (recompute_w_u)", n, C, C, dk);
    add_ssd_bmm(bld, "GDN WY u = A·(β·V) (recompute_w_u)", n, C, C, dv);
    add_ssd_bmm(bld, "GDN v_new = u − w·S (chunk_fwd_h)", n, C, dk, dv);
    add_ssd_bmm(bld, "GDN state update Kᵀ·v_new (chunk_fwd_h)", n, dk, C, dv);
    add_ssd_bmm(bld, "GDN Q·Kᵀ within chunks (chunk_fwd_o)", n, C, dk, C);
    add_ssd_bmm(bld, "GDN (Q·Kᵀ∘M)·v_new (chunk_fwd_o)", n, C, C, dv);
    add_ssd_bmm(bld, "GDN output from states Q·S (chunk_fwd_o)", n, C, dk, dv);
    /* The chunk states h (bf16, one d_k × d_v per head and chunk): written by chunk_fwd_h and
     * read by chunk_fwd_o (2 + 2 B); backward writes and reads them again (recomputed) and dh
     * (8 B). ChunkGatedDeltaRuleFunction.forward keeps q, k (H_v heads), v, g (fp32), β and A
     * (the solved C-wide rows, k's dtype). */
    uint64_t states = spsim_mul4(g->chunks, g->Hv, dk, dv, ok);
    struct spsim_op *op = add_op(bld, "GDN chunk states (chunk_fwd_h)", SPSIM_OPK_MEMORY,
                                 SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = 4.0 * (double)states;
    op->bwd_bytes = 8.0 * (double)states;
    save(op, "q, k and v (the kernel's inputs)", spsim_mul(g->tok, g->Hv * (2 * dk + dv), ok), 2,
         SPSIM_RG_LAYER);
    save(op, "g (fp32) and β", spsim_mul(g->tok, 3 * g->Hv, ok), 2, SPSIM_RG_LAYER);
    save(op, "A (the chunks' (I + β·K·Kᵀ)⁻¹ rows)", spsim_mul3(g->tok, g->Hv, C, ok), 2,
         SPSIM_RG_LAYER);
}

/* The GDN layer: its norm fused in in_proj (like MambaLayer's), in_proj, the CP exchange, the
 * kernel inputs, the kernel, the gated norm (common.py _apply_gated_norm: out_norm(o)·silu(z)),
 * the exchange back, out_proj and the residual add. */
static void
add_gdn_block(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x)
{
    bool *ok = &bld->ok;
    const struct spsim_layer_config *cfg = &bld->layer->cfg;
    uint64_t c = cfg->cp > 1 ? cfg->cp : 1, tokens = spsim_mul(x->s, x->b, ok);
    struct gdn_dims g = gdn_dims(m, x, c, ok);
    add_norm(bld, x, m->norm == SPSIM_NORM_LAYERNORM ? "LayerNorm (GDN)" : "RMSNorm (GDN)",
             "norm input", spsim_mul3(x->sl, x->b, x->h, ok));
    add_boundary(bld, x, true, "g: AllGather before in_proj", "f: identity before in_proj",
                 "g backward: ReduceScatter of the in_proj input gradient",
                 "f backward: AllReduce of the in_proj input gradient");
    struct spsim_op *op = add_gemm(bld, "GDN in_proj GEMM (column-parallel: q, k, v, z, β, α)",
                                   SPSIM_GEMM_COLUMN, tokens, x->h, g.in_t);
    save_column_input(bld, op, x, "in_proj input", SPSIM_RG_LAYER);
    op->regather_site = "wgrad AG: re-gather of the saved in_proj input shard";
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "h", x->h);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "(2qk+2v+2H_v)/t", g.in_t);
    add_mamba_cp(bld, x, "CP all-to-all of q, k, v, z, β, α (GDN)", g.in_t);
    add_gdn_inputs(bld, x, &g);
    add_gdn_kernel(bld, &g);
    /* out_norm (RMSNorm of d_v) times silu(z), fused: reads o and z, writes y (6 B a channel);
     * backward reads dy, o and z, writes do and dz (10 B); it keeps o and z. */
    uint64_t v = spsim_mul(g.tok, g.Hv * g.dv, ok);
    op = add_op(bld, "GDN gated RMSNorm out_norm(o)·silu(z)", SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR,
                SPSIM_RG_LAYER);
    op->fwd_bytes = 6.0 * (double)v;
    op->bwd_bytes = 10.0 * (double)v;
    save(op, "kernel output o and gate z", spsim_mul(v, 2, ok), 2, SPSIM_RG_LAYER);
    add_mamba_cp(bld, x, "CP all-to-all of the gated output (GDN)", g.v_t);
    uint64_t y = spsim_mul(tokens, g.v_t, ok);
    op = add_gemm(bld, "GDN out_proj GEMM (row-parallel)", SPSIM_GEMM_ROW, tokens, g.v_t, x->h);
    save(op, "out_proj input", y, 2, SPSIM_RG_LAYER);
    dims3(op->in, &op->nin, x->s_sym, x->s, "b", x->b, "v/t", g.v_t);
    dims3(op->out, &op->nout, x->s_sym, x->s, "b", x->b, "h (partial sums)", x->h);
    add_boundary(bld, x, false, "ḡ: ReduceScatter after out_proj", "f̄: AllReduce after out_proj",
                 "ḡ backward: AllGather of the out_proj output gradient", "f̄ backward: identity");
    add_dropout_add(bld, m, x, m->dropout ? "bias-dropout-add (GDN)" : "residual add (GDN)");
}

/* A hybrid attention or MLP layer's norm is fused in its first linear (hybrid_layer_specs.py:
 * linear_qkv and linear_fc1 are TELayerNormColumnParallelLinear, the layer's input_layernorm
 * IdentityOp), so --recompute-modules layernorm drops nothing of it (transformer_layer.py
 * recomputes a norm only when it is not IdentityOp). */
static void
fuse_norms(struct spsim_layer *layer, uint32_t first)
{
    for (uint32_t i = first; i < layer->nops; i++) {
        struct spsim_op *op = &layer->ops[i];
        if (op->group == SPSIM_RG_NORM)
            op->group = SPSIM_RG_LAYER;
        for (uint32_t k = 0; k < op->nsaved; k++)
            if (op->saved[k].group == SPSIM_RG_NORM)
                op->saved[k].group = SPSIM_RG_LAYER;
    }
}

/* One layer of a hybrid model (hybrid_layer_specs.py hybrid_stack_spec): each kind its own
 * norm, mixer or FFN, and residual add. */
static void
build_hybrid(struct builder *bld, const struct spsim_model_shape *m, const struct dims *x)
{
    struct spsim_layer *layer = bld->layer;
    switch (layer->cfg.kind) {
    case SPSIM_LAYER_MAMBA:
        add_mamba_block(bld, m, x);
        mark_graph(layer, 0, SPSIM_CGS_MAMBA);
        break;
    case SPSIM_LAYER_GDN: /* a TransformerLayer: the attention graph scope */
        add_gdn_block(bld, m, x);
        mark_graph(layer, 0, SPSIM_CGS_ATTN);
        break;
    case SPSIM_LAYER_ATTENTION:
        add_attention_block(bld, m, x);
        fuse_norms(layer, 0);
        mark_graph(layer, 0, SPSIM_CGS_ATTN);
        break;
    case SPSIM_LAYER_MLP:
        add_mlp_block(bld, m, x);
        fuse_norms(layer, 0);
        mark_graph(layer, 0, SPSIM_CGS_MLP);
        break;
    default: /* SPSIM_LAYER_MOE: a MoETransformerLayer, its pre_mlp_layernorm a TENorm */
        add_moe_block(bld, m, x);
        mark_graph(layer, 0, SPSIM_CGS_MOE);
        break;
    }
}

static struct dims
make_dims(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg)
{
    uint64_t t = cfg->t ? cfg->t : 1, c = cfg->cp > 1 ? cfg->cp : 1, s = cfg->s / c;
    return (struct dims){
        .s = s,
        .s_full = cfg->s,
        .sl = cfg->sp ? s / t : s,
        .b = cfg->b,
        .h = m->hidden,
        .t = t,
        .q_t = (uint64_t)m->heads * m->head_dim / t,
        .kv_t = (uint64_t)m->kv_heads * m->head_dim / t,
        .heads_t = m->heads / t,
        .d = m->head_dim,
        .ffn_t = m->ffn_hidden / t,
        .gate = m->mlp == SPSIM_MLP_SWIGLU ? 2 : 1,
        .s_sym = c > 1 ? "s/c" : "s",
        .sl_sym = cfg->sp && t > 1 ? (c > 1 ? "s/(c·t)" : "s/t") : (c > 1 ? "s/c" : "s"),
        .qk_w = ((uint64_t)m->heads + m->kv_heads) * m->head_dim / t,
        .v_w = (uint64_t)m->kv_heads * m->head_dim / t,
        .o_w = (uint64_t)m->heads * m->head_dim / t,
        .dqk = m->head_dim,
        .dv = m->head_dim,
        .qkv_group = SPSIM_RG_LAYER,
        .qkv_sym = "(a+2kv)d/t",
        .o_sym = "ad/t",
    };
}

static void
block_begin(struct spsim_layer *layer, const struct spsim_layer_config *cfg, struct builder *bld,
            struct dims *x, const struct spsim_model_shape *m)
{
    /* Only the header: add_op clears each op it hands out, and nothing reads past nops (the op
     * table is 20 kB, zeroed ten times a layer evaluation before). */
    layer->nops = 0;
    layer->ok = true;
    layer->cfg = *cfg;
    bld->layer = layer; /* the spare op is cleared when used */
    bld->ok = true;
    *x = make_dims(m, cfg);
    layer->message_bytes = spsim_mul4(x->b, x->s, x->h, 2, &bld->ok);
}

/*
 * Without gradient-accumulation fusion (--no-gradient-accumulation-fusion) TE's wgrad GEMMs
 * write each weight's gradient in the weights' dtype and Megatron's DDP hook adds it into the
 * main gradient (Megatron-LM d98e8a64 distributed_data_parallel.py _make_backward_post_hook:
 * param.main_grad.add_(param.grad.data)): an add_ a weight reading 2 + g and writing g bytes an
 * element of the rank's weights (g = main_grad_bytes). With the fusion the GEMM accumulates
 * into main_grad in its epilogue (fuse_wgrad_accumulation). The calls and launches are
 * mb_host.c's. The norms' and biases' add_, and a LoRA base's frozen GEMMs (no gradient),
 * are left out.
 */
static void
add_main_grad_adds(struct builder *bld)
{
    struct spsim_layer *L = bld->layer;
    if (L->cfg.wgrad_fusion)
        return;
    double elements = 0;
    for (uint32_t i = 0; i < L->nops; i++) {
        const struct spsim_op *op = &L->ops[i];
        if (op->kind == SPSIM_OPK_GEMM && (!L->cfg.frozen || op->adapter))
            elements += (double)op->k * (double)op->n * (double)op->batch;
    }
    if (elements <= 0)
        return;
    struct spsim_op *op = add_op(bld, "main_grad.add_ of the weights' gradients (DDP hook)",
                                 SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->bwd_bytes = (2.0 + 2.0 * L->cfg.main_grad_bytes) * elements;
    op->mb_host_launched = true;
}

void
spsim_layer_build(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                  struct spsim_layer *layer)
{
    struct builder bld;
    struct dims x;
    block_begin(layer, cfg, &bld, &x, m);
    if (cfg->kind != SPSIM_LAYER_TRANSFORMER) {
        build_hybrid(&bld, m, &x);
        add_main_grad_adds(&bld);
        spsim_layer_apply_fp8(layer);
        layer->ok = bld.ok;
        return;
    }
    if (m->kv_lora_rank)
        add_mla_attention_block(&bld, m, &x);
    else
        add_attention_block(&bld, m, &x);
    mark_graph(layer, 0, SPSIM_CGS_ATTN);
    uint32_t ffn = layer->nops;
    if (cfg->moe)
        add_moe_block(&bld, m, &x);
    else
        add_mlp_block(&bld, m, &x);
    mark_graph(layer, ffn, cfg->moe ? SPSIM_CGS_MOE : SPSIM_CGS_MLP);
    spsim_lora_freeze(layer);
    add_main_grad_adds(&bld);
    spsim_layer_apply_fp8(layer);
    layer->ok = bld.ok;
}

/* Gemma's sqrt(h) scale on the embedding's output (model embedding_scale): Megatron-Bridge 067f987
 * gemma3_provider.py:281 multiplies what LanguageModelEmbedding.forward returns (after its
 * sequence-parallel scatter and dropout: s/t·b·h with SP) by a Python float, modules.py:40 by a
 * 0-dim tensor that needs no gradient. One elementwise kernel forward (read 2 B, write 2 B an
 * element) and one backward (the gradient times the same scalar: 4 B); autograd's MulBackward0
 * keeps only the scalar, since the factor needs no gradient, so nothing is saved. */
static void
add_embedding_scale(struct builder *bld, const struct dims *x)
{
    uint64_t local = spsim_mul3(x->sl, x->b, x->h, &bld->ok);
    struct spsim_op *op = add_op(bld, "embedding scale (× sqrt(h), Gemma)", SPSIM_OPK_MEMORY,
                                 SPSIM_REGION_SEQ, SPSIM_RG_LAYER);
    op->fwd_bytes = 4.0 * local;
    op->bwd_bytes = 4.0 * local;
    dims3(op->in, &op->nin, x->sl_sym, x->sl, "b", x->b, "h", x->h);
    dims3(op->out, &op->nout, x->sl_sym, x->sl, "b", x->b, "h", x->h);
}

void
spsim_embedding_build(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                      uint64_t padded_vocab, struct spsim_layer *block)
{
    struct builder bld;
    struct dims x;
    block_begin(block, cfg, &bld, &x, m);
    uint64_t elements = spsim_mul3(x.s, x.b, x.h, &bld.ok);
    /* VocabParallelEmbedding (Megatron-LM d98e8a64 tensor_parallel/layers.py:357-361): each rank
     * looks up the tokens of its vocabulary shard with F.embedding (2 B read, 2 B written per
     * element), the learned position table is read and added. */
    struct spsim_op *op = add_op(&bld, "word embedding lookup (vocabulary-parallel)",
                                 SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    bool learned = m->position == SPSIM_POSITION_LEARNED;
    op->fwd_bytes = (learned ? 8.0 : 4.0) * elements;
    /* Backward: F.embedding's (and, in deterministic mode, indexing's) gradient is a dense table
     * of the shard, V/t × h in the weights' 16-bit dtype, zero-filled (2 B an element) before
     * the token rows' gradients are summed into it (read 2, read and write the rows' 4 B); the
     * DDP hook then adds the table into the main gradient (distributed_data_parallel.py
     * _make_backward_post_hook, main_grad.add_: read 2 + g, write g): (4 + 2g)·(V/t)·h + 6·s·b·h.
     * A frozen table (LoRA) gets no gradient: nothing runs backward below the first layer. */
    double table = (double)padded_vocab / (double)x.t * (double)x.h;
    op->bwd_bytes =
        cfg->frozen ? 0 : (4.0 + 2.0 * cfg->main_grad_bytes) * table + 6.0 * (double)elements;
    dims3(op->in, &op->nin, x.s_sym, x.s, "b", x.b, "token ids", 1);
    op->nin = 2;
    dims3(op->out, &op->nout, x.s_sym, x.s, "b", x.b, "h (partial sums)", x.h);
    op = add_boundary(
        &bld, &x, false, "ḡ: ReduceScatter after the embedding", "f̄: AllReduce after the embedding",
        "ḡ backward: AllGather of the embedding output gradient", "f̄ backward: identity");
    if (op && cfg->frozen)
        op->bwd_coll = SPSIM_COLL_NONE;
    if (m->dropout) {
        uint64_t local = spsim_mul3(x.sl, x.b, x.h, &bld.ok);
        op = add_op(&bld, "embedding dropout", SPSIM_OPK_MEMORY, SPSIM_REGION_SEQ, SPSIM_RG_LAYER);
        op->fwd_bytes = 5.0 * local;
        op->bwd_bytes = 5.0 * local;
        /* Paper §4.3: the embedding dropout mask, sbh/t per micro-batch with SP. */
        save(op, "embedding dropout mask", local, 1, SPSIM_RG_LAYER);
        op->rng = cfg->sp ? "model-parallel-rng" : "default";
        dims3(op->in, &op->nin, x.sl_sym, x.sl, "b", x.b, "h", x.h);
        dims3(op->out, &op->nout, x.sl_sym, x.sl, "b", x.b, "h", x.h);
    }
    if (m->embedding_scale)
        add_embedding_scale(&bld, &x);
    block->ok = bld.ok;
}

/*
 * The last stage's loss over [s/c·b, v/t] logits, the kernels' bytes per logit (Megatron-LM
 * d98e8a64 language_module.py compute_language_model_loss:161-205). Its small all-reduces
 * (max, sum, target logit; s·b fp32 each; TE's one all-gather of them) are latency-bound and
 * modelled as one (spsim_output_build).
 *  - Unfused (tensor_parallel/cross_entropy.py, eager kernels): forward .float() (read 2,
 *    write 4, :25), max (4, :27), the in-place subtraction (4 + 4, :42), exp in place (4 + 4,
 *    :62), its sum (4, :63), the in-place division (4 + 4, :77): 38 B; backward the in-place
 *    mul_ (4 + 4, :114, by :206) and the cast of the fp32 gradient to the logits' 16 bits (4 + 2):
 * 14 B. Keeps the fp32 softmax (paper §4.3: 4sbv/t).
 *  - Native fusion (fusions/fused_cross_entropy.py:12-82: the same steps in torch.compile'd
 *    functions (jit.py:21), each reading its inputs and writing its outputs and the inputs it
 * mutates once): calculate_logits_max (2 + 4), calculate_predicted_logits (the fp32 copy read, the
 *    exponentials written and the copy they mutate: 4 + 4 + 4), calculate_cross_entropy_loss
 *    (div_: 4 + 4): 26 B; backward calculate_gradients (the softmax read and mutated, the
 *    bf16 gradient written, :82: 4 + 4 + 2): 10 B. Keeps the fp32 softmax; its working set
 *    (summary.c logits_working_bytes) holds one more fp32 tensor.
 *  - TE up to 2.17 (pytorch/triton/cross_entropy.py at TE 70f5366 (2.9) ... d64bc14 (2.16),
 *    the commits Megatron-Bridge's uv.lock pins for its 25.11 to 26.08 containers):
 *    online_softmax_kernel
 *    reads the logits (2), cross_entropy_kernel reads them and writes the gradient into them
 *    (2 + 2): 6 B; backward element_mul_kernel scales it in place (2 + 2; grad_output is the
 *    loss mask, not the scalar 1.0 it skips for): 4 B. Keeps only the 16-bit logits.
 *  - TE 2.18 on (d0067d0, PR #3193): the gradient in a new fp32 tensor (2, 2 + 4: 8 B); backward
 *    element_mul in fp32 (4 + 4) and autograd's cast to the logits' dtype (4 + 2): 14 B. Keeps
 *    the fp32 gradient.
 */
static struct spsim_op *
add_cross_entropy(struct builder *bld, const struct spsim_layer_config *cfg, uint64_t logits)
{
    static const struct {
        const char *name, *kept;
        double fwd, bwd;
        uint32_t kept_bytes;
    } ce[] = {
        [SPSIM_LAYER_CE_UNFUSED] = {"vocabulary-parallel cross-entropy", "logits (fp32)", 38, 14,
                                    4},
        [1 + SPSIM_CE_NATIVE] = {"vocabulary-parallel cross-entropy (native fusion)",
                                 "softmax (fp32)", 26, 10, 4},
        [1 + SPSIM_CE_TE] = {"vocabulary-parallel cross-entropy (TE)", "logits gradient (fp32)", 8,
                             14, 4},
        [1 + SPSIM_CE_TE_INPLACE] = {"vocabulary-parallel cross-entropy (TE, in place)",
                                     "logits, their gradient in place (16-bit)", 6, 4, 2},
    };
    uint32_t i = cfg->cross_entropy < SPSIM_ARRAY_LENGTH(ce) ? cfg->cross_entropy : 0;
    struct spsim_op *op =
        add_op(bld, ce[i].name, SPSIM_OPK_MEMORY, SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
    op->fwd_bytes = ce[i].fwd * (double)logits;
    op->bwd_bytes = ce[i].bwd * (double)logits;
    save(op, ce[i].kept, logits, ce[i].kept_bytes, SPSIM_RG_LAYER);
    return op;
}

void
spsim_output_build(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                   uint64_t padded_vocab, struct spsim_layer *block)
{
    struct builder bld;
    struct dims x;
    block_begin(block, cfg, &bld, &x, m);
    uint64_t tokens = spsim_mul(x.s, x.b, &bld.ok);
    uint64_t vocab_t = padded_vocab / x.t;
    add_norm(&bld, &x, m->norm == SPSIM_NORM_LAYERNORM ? "final LayerNorm" : "final RMSNorm",
             "final norm input", spsim_mul3(x.sl, x.b, x.h, &bld.ok));
    add_boundary(&bld, &x, true, "g: AllGather before the output layer",
                 "f: identity before the output layer",
                 "g backward: ReduceScatter of the output-layer input gradient",
                 "f backward: AllReduce of the output-layer input gradient");
    struct spsim_op *op = add_gemm(&bld, "output layer GEMM (vocabulary-parallel)",
                                   SPSIM_GEMM_COLUMN, tokens, x.h, vocab_t);
    save_column_input(&bld, op, &x, "output layer input", SPSIM_RG_LAYER);
    op->regather_site = "wgrad AG: re-gather of the saved output-layer input shard";
    dims3(op->in, &op->nin, x.s_sym, x.s, "b", x.b, "h", x.h);
    dims3(op->out, &op->nout, x.s_sym, x.s, "b", x.b, "v/t", vocab_t);
    uint64_t logits = spsim_mul(tokens, vocab_t, &bld.ok);
    op = add_cross_entropy(&bld, cfg, logits);
    dims3(op->in, &op->nin, x.s_sym, x.s, "b", x.b, "v/t", vocab_t);
    dims3(op->out, &op->nout, x.s_sym, x.s, "b", x.b, "loss", 1);
    op->nout = 2;
    if (x.t > 1) {
        op = add_op(&bld, "cross-entropy AllReduces (max, sum, target)", SPSIM_OPK_COMM,
                    SPSIM_REGION_TENSOR, SPSIM_RG_LAYER);
        op->operator_name = "";
        op->fwd_coll = SPSIM_COLL_ALL_REDUCE;
        op->message_bytes = spsim_mul(tokens, 12, &bld.ok);
        dims3(op->in, &op->nin, x.s_sym, x.s, "b", x.b, "3 fp32", 3);
        dims3(op->out, &op->nout, x.s_sym, x.s, "b", x.b, "3 fp32", 3);
    }
    spsim_lora_freeze(block);
    /* An untied output layer's weight (Megatron's ColumnParallelLinear: without the fusion its
     * wgrad is a plain matmul, then the hook's add_); a tied one is the embedding's table,
     * whose add_ the embedding pays (the last stage's copy of it with pp > 1 left out). */
    if (!m->tied_embeddings)
        add_main_grad_adds(&bld);
    block->ok = bld.ok;
}

/*
 * One multi-token-prediction depth's own rows (transformer/multi_token_prediction.py
 * MultiTokenPredictionLayer._concat_embeddings and _proj_and_transformer_layer): enorm over
 * the shifted tokens' embedding and hnorm over the previous depth's hidden state (each on this
 * rank's s' tokens, keeping its input), their concatenation [s', b, 2h] into eh_proj, a
 * column-parallel 2h → h/t linear without bias (with SP it gathers its 2h-wide input), whose
 * output gather_from_tensor_model_parallel_region all-gathers over TP (backward: a split),
 * then with SP scatter_to_sequence_parallel_region splits the sequence (backward: an
 * AllGather). The embedding, the transformer layer and the output head around it are the
 * model's blocks (pipeline_time.c mtp_time).
 */
void
spsim_mtp_build(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                struct spsim_layer *block)
{
    struct builder bld;
    struct dims x;
    block_begin(block, cfg, &bld, &x, m);
    uint64_t local = spsim_mul3(x.sl, x.b, x.h, &bld.ok), tokens = spsim_mul(x.s, x.b, &bld.ok);
    bool ln = m->norm == SPSIM_NORM_LAYERNORM;
    add_norm(&bld, &x, ln ? "MTP enorm (LayerNorm)" : "MTP enorm (RMSNorm)", "enorm input", local);
    add_norm(&bld, &x, ln ? "MTP hnorm (LayerNorm)" : "MTP hnorm (RMSNorm)", "hnorm input", local);
    struct dims wide = x;
    wide.h = 2 * x.h;
    struct spsim_op *op =
        add_boundary(&bld, &wide, true, "g: AllGather before eh_proj", "f: identity before eh_proj",
                     "g backward: ReduceScatter of the eh_proj input gradient",
                     "f backward: AllReduce of the eh_proj input gradient");
    if (op)
        op->message_bytes = spsim_mul4(x.b, x.s, wide.h, 2, &bld.ok);
    op = add_gemm(&bld, "MTP eh_proj GEMM (column-parallel)", SPSIM_GEMM_COLUMN, tokens, wide.h,
                  x.h / x.t);
    save(op, "eh_proj input (enorm and hnorm outputs)", spsim_mul(local, 2, &bld.ok), 2,
         SPSIM_RG_LAYER);
    op->regather_site = "wgrad AG: re-gather of the saved eh_proj input shard";
    dims3(op->in, &op->nin, x.s_sym, x.s, "b", x.b, "2h", wide.h);
    dims3(op->out, &op->nout, x.s_sym, x.s, "b", x.b, "h/t", x.h / x.t);
    if (x.t > 1) {
        op = add_op(&bld, "AllGather of the eh_proj output", SPSIM_OPK_COMM, SPSIM_REGION_BOUNDARY,
                    SPSIM_RG_LAYER);
        op->operator_name = "";
        op->fwd_coll = SPSIM_COLL_ALL_GATHER;
        op->bwd_coll = cfg->sp ? SPSIM_COLL_ALL_GATHER : SPSIM_COLL_NONE;
        op->bwd_name = "AllGather of the MTP layer's input gradient (sequence scatter)";
        op->message_bytes = bld.layer->message_bytes;
        dims3(op->in, &op->nin, x.s_sym, x.s, "b", x.b, "h/t", x.h / x.t);
        dims3(op->out, &op->nout, x.sl_sym, x.sl, "b", x.b, "h", x.h);
    }
    block->ok = bld.ok;
}

uint64_t
spsim_layer_saved_bytes(const struct spsim_layer *layer, bool *ok)
{
    if (layer->cfg.recompute == SPSIM_RECOMPUTE_FULL) {
        /* One checkpoint per layer: its input, [s', b, h] in bf16 (paper §5: 2sbh; with SP the
         * input is already the sequence shard). */
        const struct spsim_op *first = &layer->ops[0];
        return spsim_mul(first->saved[0].elements, 2, ok);
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < layer->nops; i++) {
        const struct spsim_op *op = &layer->ops[i];
        for (uint32_t k = 0; k < op->nsaved; k++) {
            const struct spsim_saved_tensor *st = &op->saved[k];
            if (st->group & layer->cfg.rmods) /* dropped by selective recomputation */
                continue;
            total = spsim_add(total, spsim_mul(st->elements, st->bytes_per_element, ok), ok);
        }
    }
    return total;
}

uint64_t
spsim_layer_offload_bytes(const struct spsim_layer *layer, bool *ok)
{
    /* TE offloads only tensors of at least 256k elements ("~1MB for float32"); smaller ones
     * (e.g. a flash-attention log-sum-exp of short sequences) stay in HBM. */
    const uint64_t min_elements = 256u * 1024u;
    uint64_t total = 0;
    for (uint32_t i = 0; i < layer->nops; i++)
        for (uint32_t k = 0; k < layer->ops[i].nsaved; k++) {
            const struct spsim_saved_tensor *st = &layer->ops[i].saved[k];
            if (st->elements >= min_elements && !(st->group & layer->cfg.rmods))
                total = spsim_add(total, spsim_mul(st->elements, st->bytes_per_element, ok), ok);
        }
    return total;
}
