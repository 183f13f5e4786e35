/* The GEMM and memory-bound op models: tile quantisation, epilogue, roofline; each op's time. */
#include "config.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "collective_model.h"
#include "compose.h"
#include "ep_overlap.h"
#include "eval.h"
#include "gemm_shape.h"
#include "moe.h"

/*
 * GEMM model. The throughput of a GEMM is a main-loop rate per full wave (the measured table's
 * rate at that work, else the GPU's best measured large-GEMM rate, gemm_achievable_tflops,
 * e.g. MAMF) times its shape efficiency (engine/gemm_shape.c: tile and wave quantisation, the
 * K loop and its prologue, split-K for outputs that do not fill one wave), at the clock a
 * training step sustains (gpu.sustained_clock: the measurements ran at the boost clock). A
 * roofline bound (bytes over the measured HBM bandwidth) covers thin shapes.
 *
 * The epilogue (reading C when it is accumulated into, writing the output) depends on the
 * kernel design, which the profile names (gpu.gemm_epilogue):
 *   "overlapped" (persistent, warp-specialised kernels: Hopper, Blackwell): another tile's
 *     main loop runs meanwhile, so time = max(compute, all bytes / HBM);
 *   "serial" (SM80 kernels: one tile per threadblock, one threadblock per SM for the large
 *     tiles, epilogue after the main loop): the SMs of a wave store their tiles together, so
 *     time = max(compute, operand bytes / HBM) + output bytes / HBM.
 * The output bytes matter for Megatron's weight-gradient GEMMs, which add into the fp32 main
 * gradient (read and write 8 bytes per element) with K = tokens only; elsewhere they are a few
 * per cent. Measured table points are converted to main-loop rates by the same rules
 * (spsim_gemm_mainloop_rate), so that the model gives them back at their own shapes and clock.
 */
static double
gemm_ceiling(const struct spsim_hardware *hw, enum spsim_dtype dtype)
{
    if (hw->gemm_achievable_flops[dtype] > 0)
        return hw->gemm_achievable_flops[dtype];
    /* No measurement for this dtype: the same fraction of its peak as bf16 reaches. */
    return hw->gemm_achievable_flops[SPSIM_DTYPE_BF16] * hw->peak_flops[dtype] /
           hw->peak_flops[SPSIM_DTYPE_BF16];
}

/* Sustained over boost clock; profiles built in code (calibration) leave it 0 = as measured. */
static double
clock_scale(const struct spsim_hardware *hw)
{
    return hw->clock_scale > 0 ? hw->clock_scale : 1.0;
}

/* Seconds a serial epilogue adds: the output (2 bytes per element written, beta = 0) or, for
 * fp32 accumulation, the main gradient read and written. */
static double
epilogue_s(const struct spsim_hardware *hw, uint64_t m, uint64_t n, uint64_t batch,
           bool fp32_accumulate_out)
{
    if (!hw->gemm_epilogue_serial)
        return 0;
    double bytes = (fp32_accumulate_out ? 8.0 : 2.0) * (double)batch * (double)m * (double)n;
    return bytes / hw->hbm_achievable_Bps;
}

int
spsim_gemm_mainloop_rate(const struct spsim_hardware *hw, uint64_t m, uint64_t n, uint64_t k,
                         double measured_flops_per_s, double *rate)
{
    double flops = 2.0 * (double)m * (double)n * (double)k;
    double mainloop = flops / measured_flops_per_s - epilogue_s(hw, m, n, 1, false);
    if (!(mainloop > 0))
        return SPSIM_ERANGE;
    struct spsim_gemm_geometry g = spsim_gemm_geometry_of(hw, false);
    *rate = flops / mainloop / spsim_gemm_shape_efficiency(&g, m, n, k, 1);
    return SPSIM_OK;
}

/* Seconds of the main loops at the measured clock: the table's rate (bf16) capped by the
 * ceiling, else the ceiling, through the shape model. */
static int
gemm_compute_s(const struct spsim_hardware *hw, enum spsim_dtype dtype, uint64_t m, uint64_t n,
               uint64_t k, uint64_t batch, double *compute)
{
    double flops = 2.0 * (double)batch * (double)m * (double)n * (double)k;
    struct spsim_gemm_geometry g = spsim_gemm_geometry_of(hw, dtype == SPSIM_DTYPE_FP8);
    if (dtype == SPSIM_DTYPE_NVFP4) /* 128 B of K: CUTLASS's NVFP4 tiles are 256×256×256
                                     * (examples/72_blackwell_narrow_precision_gemm/72a) */
        g.k_block = 256;
    const struct spsim_gemm_table *t = hw->gemm_table;
    if (!(t && t->n > 0 && dtype == SPSIM_DTYPE_BF16)) {
        *compute = spsim_gemm_shape_time(&g, gemm_ceiling(hw, dtype), hw->hbm_achievable_Bps, m, n,
                                         k, batch, NULL);
        return SPSIM_OK;
    }
    double x = log(flops > 1 ? flops : 1), tflops;
    if (t->n == 1 || x <= t->log_flops[0])
        tflops = t->tflops[0];
    else if (x >= t->log_flops[t->n - 1])
        tflops = t->tflops[t->n - 1];
    else if (gsl_interp_eval_e(t->interp, t->log_flops, t->tflops, x, NULL, &tflops) != GSL_SUCCESS)
        return SPSIM_ENUMERIC;
    double shaped =
        spsim_gemm_shape_time(&g, tflops * 1e12, hw->hbm_achievable_Bps, m, n, k, batch, NULL);
    *compute = spsim_max_d(shaped, flops / gemm_ceiling(hw, dtype));
    return SPSIM_OK;
}

int
spsim_gemm_time(const struct spsim_hardware *hw, enum spsim_dtype dtype, uint64_t m, uint64_t n,
                uint64_t k, uint64_t batch, bool fp32_accumulate_out, double *seconds)
{
    double compute = 0;
    int rc = gemm_compute_s(hw, dtype, m, n, k, batch, &compute);
    if (rc != SPSIM_OK)
        return rc;
    compute /= clock_scale(hw);
    /* Operands in 16 bits (FP8: 8); Megatron's gradient-accumulation fusion reads and writes
     * the fp32 main gradient for the weight-gradient GEMM. */
    double elem = dtype == SPSIM_DTYPE_FP8 ? 1.0 : 2.0;
    if (dtype == SPSIM_DTYPE_NVFP4) /* 4 bits and an E4M3 scale per 16 (engine/fp8.c) */
        elem = 0.5 + 1.0 / 16.0;
    double operand_bytes = (double)batch * elem * ((double)m * k + (double)k * n);
    double output_bytes = (double)batch * (fp32_accumulate_out ? 8.0 : 2.0) * (double)m * n;
    double epilogue = epilogue_s(hw, m, n, batch, fp32_accumulate_out);
    double streamed = hw->gemm_epilogue_serial ? operand_bytes : operand_bytes + output_bytes;
    *seconds = spsim_max_d(compute, streamed / hw->hbm_achievable_Bps) + epilogue;
    return isfinite(*seconds) ? SPSIM_OK : SPSIM_ENUMERIC;
}

/* The sweep shares one layer summary among points that differ only in axes this reads no field
 * of (sweep.c layer_inert_axes): a field read here that such an axis sets takes it off that
 * list. */
void
spsim_layer_config_from(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                        struct spsim_layer_config *cfg)
{
    cfg->t = par->tp;
    cfg->sp = par->sp;
    cfg->flash = par->flash_attn < 0 ? m->attention == SPSIM_ATTENTION_FLASH : par->flash_attn == 1;
    cfg->attn_backend = cfg->flash ? par->attention_backend : SPSIM_ATTN_AUTO;
    cfg->tp_comm_overlap = par->tp_comm_overlap && par->sp && par->tp > 1;
    cfg->graph_capture = par->cuda_graph_impl ? spsim_cuda_graph_capture(par) : 0;
    cfg->recompute = par->recompute;
    /* Megatron's default module list is ["core_attn"] (transformer_config.py). */
    cfg->rmods = par->recompute != SPSIM_RECOMPUTE_SELECTIVE ? 0
                 : par->recompute_modules                    ? par->recompute_modules
                                                             : SPSIM_RMOD_CORE_ATTN;
    cfg->s = par->seq ? par->seq : m->seq_len;
    cfg->b = par->mbs;
    cfg->dtype = par->dtype;
    cfg->fp8_recipe = par->fp8_recipe; /* delayed unless dtype is fp8 (spsim_parallel_check) */
    cfg->cp = par->cp;
    cfg->cp_comm = par->cp > 1 ? par->cp_comm_type : SPSIM_CP_P2P;
    cfg->cp_a2a = 1;
    cfg->cp_ring = par->cp;
    if (par->cp > 1 && par->cp_comm_type == SPSIM_CP_A2A)
        cfg->cp_a2a = par->cp;
    else if (par->cp > 1 && par->cp_comm_type == SPSIM_CP_A2A_P2P)
        cfg->cp_a2a = par->hcp_sizes[0];
    cfg->cp_ring = par->cp / cfg->cp_a2a;
    /* An MoE model's layer is its MoE layer (the dense ones are built apart, summary.c). */
    cfg->moe = m->experts > 0;
    cfg->ep = cfg->moe ? par->ep : 1;
    cfg->etp = cfg->moe ? spsim_moe_etp(par) : 1;
    cfg->dispatcher = cfg->moe ? par->moe_dispatcher : SPSIM_MOE_ALLGATHER;
    bool flex = cfg->dispatcher == SPSIM_MOE_FLEX;
    cfg->flex_backend = flex ? par->moe_flex_backend : SPSIM_FLEX_DEEPEP;
    cfg->flex_per_domain = 0; /* spsim_layer_evaluate places the group */
    cfg->flex_sms = flex ? par->moe_flex_sms : 0;
    cfg->routing = cfg->moe ? par->moe_routing : SPSIM_MOE_ROUTING_BALANCED;
    cfg->aux_dp = m->load_balancing == SPSIM_BALANCE_GLOBAL_AUX_LOSS ? par->dp : 1;
    cfg->bf16_ends = par->first_last_layers_bf16 && !m->experts && spsim_bf16_layers_active(par);
    cfg->attn_len = par->packed_subseq_len;
    cfg->frozen = par->lora_rank > 0;
    cfg->lora_rank = par->lora_rank;
    cfg->lora_targets = par->lora_rank ? par->lora_targets : 0;
    cfg->lora_dropout = par->lora_rank ? par->lora_dropout : 0;
    cfg->kind = spsim_hybrid_primary(m);
    cfg->wgrad_fusion = !par->no_gradient_accumulation_fusion;
    cfg->main_grad_bytes = (uint8_t)grad_bytes(par);
    cfg->mask_in_dataloader = !par->no_create_attention_mask_in_dataloader;
    cfg->nan_check = !par->no_check_for_nan_in_loss_and_grad;
    cfg->cross_entropy = par->cross_entropy_loss_fusion
                             ? (uint8_t)(1 + par->cross_entropy_fusion_impl)
                             : SPSIM_LAYER_CE_UNFUSED;
}

enum spsim_layer_kind
spsim_hybrid_primary(const struct spsim_model_shape *m)
{
    static const enum spsim_layer_kind order[] = {SPSIM_LAYER_MOE, SPSIM_LAYER_MAMBA,
                                                  SPSIM_LAYER_GDN, SPSIM_LAYER_ATTENTION,
                                                  SPSIM_LAYER_MLP};
    if (!m->hybrid_pattern)
        return SPSIM_LAYER_TRANSFORMER;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(order); i++)
        if (strchr(m->hybrid_pattern, spsim_hybrid_kind_symbol(order[i])))
            return order[i];
    return SPSIM_LAYER_MAMBA; /* unreachable: a pattern has one symbol per layer */
}

/*
 * A computation and a collective run side by side. NCCL's kernel holds one SM per channel for
 * the collective's whole duration (hardware profile: nvlink.nccl_channels), so the computation
 * runs on the other SMs meanwhile: at rate r = 1 − k/S while the collective lasts, at full rate
 * after. The pair takes max(comm, min(compute / r, compute + comm·k/S)).
 */
static double
overlapped_s(double share, double compute, double comm)
{
    double slowed = spsim_min_d(compute / (1.0 - share), compute + comm * share);
    return spsim_max_d(comm, slowed);
}

static double
flash_rate(const struct spsim_hardware *hw)
{
    /* Measured flash-attention throughput where the profile has it, else the GEMM ceiling, at
     * the sustained clock. */
    return (hw->flash_flops > 0 ? hw->flash_flops : gemm_ceiling(hw, SPSIM_DTYPE_BF16)) *
           clock_scale(hw);
}

/* How far a table row's head dimensions and window are from the kernel's: the log distance of
 * d_qk + d_v, then of d_qk, then of the window (a row of the other kind, windowed or whole,
 * only when the table has none of the kernel's kind). */
static double
attention_distance(const double *r, double dqk, double dv, double window)
{
    double d = fabs(log((r[0] + r[1]) / (dqk + dv))) * 1e6 + fabs(log(r[0] / dqk)) * 1e3;
    if ((r[3] > 0) != (window > 0))
        return d + 1e12;
    return window > 0 ? d + fabs(log(r[3] / window)) : d;
}

/*
 * The row of the nearest head dimensions and window (attention_distance's first minimum; NULL
 * for an empty table), remembered per thread with the table's contents and the dimensions it
 * was found for: a layer evaluation asks for it at each attention step, forward and backward,
 * and the search takes two or three logarithms a row; a hit is the same search's answer.
 */
static const double *
attention_key(const struct spsim_attention_table *t, double dqk, double dv, double window)
{
    static _Thread_local struct attention_key_memo {
        bool used;
        double dqk, dv, window;
        uint32_t index;
        struct spsim_attention_table table;
    } cache[2]; /* one for whole layers, one for windowed ones (attention_s asks for both) */
    struct attention_key_memo *c = &cache[window > 0];
    size_t rows = t->n * sizeof(t->rows[0]);
    if (c->used && c->dqk == dqk && c->dv == dv && c->window == window && c->table.n == t->n &&
        memcmp(c->table.rows, t->rows, rows) == 0)
        return c->index < t->n ? t->rows[c->index] : NULL;
    double best = INFINITY;
    uint32_t index = t->n;
    for (uint32_t i = 0; i < t->n; i++) {
        double d = attention_distance(t->rows[i], dqk, dv, window);
        if (d < best) {
            best = d;
            index = i;
        }
    }
    c->used = true;
    c->dqk = dqk;
    c->dv = dv;
    c->window = window;
    c->index = index;
    c->table.n = t->n;
    memcpy(c->table.rows, t->rows, rows);
    return index < t->n ? t->rows[index] : NULL;
}

/*
 * Fused attention's measured rate (gpu.attention_table: cuDNN, TE's FusedAttention, which TE
 * prefers on Hopper and later, dot_product_attention/utils.py get_attention_backend) for
 * head dimensions dqk/dv, queries seeing at most `seq` keys and a sliding window (0: none):
 * the rows of the nearest head dimensions and window (attention_distance), linear in log(seq)
 * between their sequences, the end rows' rates beyond them; at the sustained clock.
 */
static double
attention_table_rate(const struct spsim_hardware *hw, double dqk, double dv, double seq,
                     double window, bool bwd)
{
    const struct spsim_attention_table *t = hw->attention;
    double lo_s = 0, hi_s = INFINITY, lo_r = 0, hi_r = 0;
    const double *key = attention_key(t, dqk, dv, window);
    double first_s = INFINITY, first_r = 0, last_s = 0, last_r = 0;
    for (uint32_t i = 0; i < t->n; i++) {
        const double *r = t->rows[i];
        if (r[0] != key[0] || r[1] != key[1] || r[3] != key[3])
            continue;
        double rate = r[bwd ? 5 : 4];
        if (r[2] <= seq && r[2] > lo_s)
            lo_s = r[2], lo_r = rate;
        if (r[2] >= seq && r[2] < hi_s)
            hi_s = r[2], hi_r = rate;
        if (r[2] < first_s)
            first_s = r[2], first_r = rate;
        if (r[2] > last_s)
            last_s = r[2], last_r = rate;
    }
    double tflops = seq <= first_s  ? first_r
                    : seq >= last_s ? last_r
                    : hi_s == lo_s  ? lo_r
                                    : lo_r + (hi_r - lo_r) * log(seq / lo_s) / log(hi_s / lo_s);
    return tflops * 1e12 * clock_scale(hw);
}

/*
 * Seconds of a flash-attention step of `flops` (its forward's, or the backward's 2.5×): on TE's
 * FusedAttention where the profile measures it and the backend is fused or TE's choice (auto),
 * the whole layers' share at the rate of their head dimensions and sequence and the windowed
 * layers' share (op->flash_window_flops) at the windowed rate; else FlashAttention's measured
 * rate (gpu.flash_attention_tflops) on all of it.
 */
static double
attention_s(const struct spsim_hardware *hw, const struct spsim_layer_config *cfg,
            const struct spsim_op *op, double flops, bool bwd)
{
    if (!hw->attention || cfg->attn_backend == SPSIM_ATTN_FLASH || op->attn_dqk == 0)
        return flops / flash_rate(hw);
    double win = op->flash_fwd_flops > 0 ? op->flash_window_flops / op->flash_fwd_flops : 0;
    double dqk = op->attn_dqk, dv = op->attn_dv, seq = (double)op->attn_seq;
    double s = (1.0 - win) * flops / attention_table_rate(hw, dqk, dv, seq, 0, bwd);
    if (win > 0)
        s += win * flops / attention_table_rate(hw, dqk, dv, seq, op->attn_window, bwd);
    return s;
}

/*
 * The CP p2p ring (TE AttnFuncWithCPAndKVP2P): r steps of equal causal work a = attention / r
 * (the diagonal step is half of a (s/c)² block, each other step half a block too). Forward:
 * the block for step i+1 travels while step i computes, r−1 transfers of KV_blk, exposed
 * max(0, T(KV_blk) − a) each. Backward (a = 2.5× the forward's, FlashAttention-2): KV_blk at
 * step 0, KV_blk + dKV_blk at the r−2 middle steps, and the last dKV_blk after the last step
 * (exposed). Transfers are one ring hop: a network hop when the ring leaves the NVLink domain.
 */
static int
cp_ring_cost(const struct spsim_hardware *hw, const struct spsim_layer_config *cfg,
             const struct spsim_step *st, struct spsim_group g, struct spsim_step_cost *c)
{
    const struct spsim_op *op = st->op;
    struct spsim_group pair = {2, g.per_domain < g.size ? 1 : 2};
    bool bwd = st->phase == SPSIM_PHASE_BACKWARD;
    double r = op->cp_group;
    double attn = attention_s(hw, cfg, op, (bwd ? 2.5 : 1.0) * op->cp_attn_flops, bwd) / r;
    double blk = bwd ? (double)st->message_bytes / 2 : (double)st->message_bytes;
    struct spsim_coll_time one, two;
    int rc = spsim_collective_time(hw, SPSIM_COLL_SEND_RECV, pair, blk, 1.0, &one);
    if (rc == SPSIM_OK)
        rc = spsim_collective_time(hw, SPSIM_COLL_SEND_RECV, pair, 2 * blk, 1.0, &two);
    if (rc != SPSIM_OK)
        return rc;
    c->coll = one;
    if (!bwd) {
        c->comm_s = (r - 1) * one.time_s;
        c->exposed_comm_s = (r - 1) * spsim_max_d(0.0, one.time_s - attn);
    } else {
        c->comm_s = 2 * one.time_s + (r - 2) * two.time_s;
        c->exposed_comm_s = spsim_max_d(0.0, one.time_s - attn) +
                            (r - 2) * spsim_max_d(0.0, two.time_s - attn) + one.time_s;
    }
    double k = bwd ? 2 * (r - 1) : r - 1; /* KV_blk transfers of the whole step */
    c->coll.wire_bytes = k * one.wire_bytes;
    c->coll.nvlink_bytes = k * one.nvlink_bytes;
    c->coll.network_bytes = k * one.network_bytes;
    return SPSIM_OK;
}

/* A CP exchange: the ring beside attention, the others exposed, on the CP (sub)group. */
static int
cp_step_cost(const struct spsim_hardware *hw, const struct spsim_layer_config *cfg,
             const struct spsim_step *st, struct spsim_step_cost *c)
{
    struct spsim_group g = spsim_group_place(hw, st->op->cp_group, st->op->cp_stride);
    if (st->coll == SPSIM_COLL_SEND_RECV)
        return cp_ring_cost(hw, cfg, st, g, c);
    int rc = spsim_collective_time(hw, st->coll, g, (double)st->message_bytes, 1.0, &c->coll);
    c->comm_s = c->exposed_comm_s = c->coll.time_s;
    return rc;
}

/* FP8 and NVFP4 configurations run the layer's linear GEMMs in FP8 or FP4 (engine/fp8.c),
 * the rest in BF16. */
static enum spsim_dtype
gemm_dtype(const struct spsim_layer_config *cfg, const struct spsim_op *op)
{
    if (op->fp8)
        return cfg->dtype == SPSIM_DTYPE_NVFP4 ? SPSIM_DTYPE_NVFP4 : SPSIM_DTYPE_FP8;
    return cfg->dtype == SPSIM_DTYPE_FP8 || cfg->dtype == SPSIM_DTYPE_NVFP4 ? SPSIM_DTYPE_BF16
                                                                            : cfg->dtype;
}

/* TE userbuffers' defaults (transformer_engine/pytorch/module/base.py initialize_ub, the
 * per-method config): ring_exchange in t chunks moved by the copy engines on 1 SM with no SM
 * margin; pipeline and bulk in 4 chunks on 16 SMs, the GEMM on the others (set_sm_margin). */
#define SPSIM_UB_COMM_SMS        16
#define SPSIM_UB_PIPELINE_SPLITS 4

/* TE userbuffers (--tp-comm-overlap) move the TP collectives with their own copies (the copy
 * engines for ring_exchange) and kernels on buffers registered at initialize_ub, not through
 * NCCL's ring and its FIFO, so without NCCL's ring-loop tails (spsim_ring_tail_extra_s); the
 * NCCL time stays their stand-in, as before the tails. */
static void
ub_without_ring_tail(const struct spsim_layer_config *cfg, struct spsim_coll_time *ct)
{
    if (cfg->tp_comm_overlap) {
        ct->time_s -= ct->tail_s;
        ct->tail_s = 0;
    }
}

/* TE's grouped GEMM (GroupedLinear, general_grouped_gemm -> nvte_multi_tensor_gemm): without
 * NVTE_USE_CUTLASS_GROUPED_GEMM (Hopper only, off by default) one cuBLASLt GEMM per expert,
 * expert i on compute stream i % 4 (multi_stream_cublas_gemm, get_num_compute_streams() = 4,
 * common/util/multi_stream.cpp at TE d0067d0). Four experts run at a time, their tiles sharing
 * the waves; the next four follow (a stream's next GEMM after its previous one): an upper
 * bound on the tail of each round, which a stream whose GEMM ends early may start to fill. */
#define SPSIM_TE_GEMM_STREAMS 4

static int
grouped_gemm_time(const struct spsim_hardware *hw, enum spsim_dtype dtype,
                  const struct spsim_step *st, bool fp32_accumulate_out, double *seconds)
{
    uint64_t rounds = st->gbatch / SPSIM_TE_GEMM_STREAMS, rest = st->gbatch % SPSIM_TE_GEMM_STREAMS;
    double full = 0, part = 0;
    int rc = SPSIM_OK;
    if (rounds)
        rc = spsim_gemm_time(hw, dtype, st->gm, st->gn, st->gk, SPSIM_TE_GEMM_STREAMS,
                             fp32_accumulate_out, &full);
    if (rc == SPSIM_OK && rest)
        rc = spsim_gemm_time(hw, dtype, st->gm, st->gn, st->gk, rest, fp32_accumulate_out, &part);
    *seconds = (double)rounds * full + part;
    return rc;
}

/*
 * The GEMM times and TP collective times of one block's steps by their exact inputs (the
 * hardware, the configuration and the TP group are the block's): a layer's forward, dgrad,
 * wgrad and recomputed GEMMs and its AllGathers and ReduceScatters repeat shapes and sizes, and
 * a hit is what computing again gives.
 */
#define STEP_MEMO_SLOTS 32
struct gemm_memo_entry {
    uint64_t m, n, k, batch;
    enum spsim_dtype dtype;
    bool wgrad, grouped;
    double s;
};
struct coll_memo_entry {
    enum spsim_coll_op op;
    uint64_t bytes;
    struct spsim_coll_time t;
};
struct step_memo {
    uint32_t ngemm, ncoll;
    struct gemm_memo_entry gemm[STEP_MEMO_SLOTS];
    struct coll_memo_entry coll[STEP_MEMO_SLOTS];
};

static int
memo_gemm_time(struct step_memo *mo, const struct spsim_hardware *hw, enum spsim_dtype dtype,
               const struct spsim_step *st, bool wgrad, bool grouped, double *seconds)
{
    for (uint32_t i = 0; i < mo->ngemm; i++) {
        const struct gemm_memo_entry *e = &mo->gemm[i];
        if (e->m == st->gm && e->n == st->gn && e->k == st->gk && e->batch == st->gbatch &&
            e->dtype == dtype && e->wgrad == wgrad && e->grouped == grouped) {
            *seconds = e->s;
            return SPSIM_OK;
        }
    }
    int rc = grouped
                 ? grouped_gemm_time(hw, dtype, st, wgrad, seconds)
                 : spsim_gemm_time(hw, dtype, st->gm, st->gn, st->gk, st->gbatch, wgrad, seconds);
    if (rc == SPSIM_OK && mo->ngemm < STEP_MEMO_SLOTS)
        mo->gemm[mo->ngemm++] = (struct gemm_memo_entry){st->gm, st->gn, st->gk,  st->gbatch,
                                                         dtype,  wgrad,  grouped, *seconds};
    return rc;
}

static int
memo_coll_time(struct step_memo *mo, const struct spsim_hardware *hw, const struct spsim_step *st,
               struct spsim_group tp, struct spsim_coll_time *out)
{
    for (uint32_t i = 0; i < mo->ncoll; i++)
        if (mo->coll[i].op == st->coll && mo->coll[i].bytes == st->message_bytes) {
            *out = mo->coll[i].t;
            return SPSIM_OK;
        }
    int rc = spsim_collective_time(hw, st->coll, tp, (double)st->message_bytes, 1.0, out);
    if (rc == SPSIM_OK && mo->ncoll < STEP_MEMO_SLOTS)
        mo->coll[mo->ncoll++] = (struct coll_memo_entry){st->coll, st->message_bytes, *out};
    return rc;
}

static int
step_cost(const struct spsim_hardware *hw, const struct spsim_layer_config *cfg,
          const struct spsim_step *st, struct spsim_group tp, struct step_memo *mo,
          struct spsim_step_cost *c)
{
    memset(c, 0, sizeof(*c));
    int rc = SPSIM_OK;
    const struct spsim_op *op = st->op;
    switch (op->kind) {
    case SPSIM_OPK_GEMM:
    case SPSIM_OPK_BMM:
        if (st->flops <= 0) /* a frozen linear's weight gradient (schedule.c): not run */
            break;
        /* only the experts' GEMMs are batched (TE's grouped GEMM) */
        rc = memo_gemm_time(mo, hw, gemm_dtype(cfg, op), st,
                            op->kind == SPSIM_OPK_GEMM && st->pass == SPSIM_PASS_WGRAD,
                            op->kind == SPSIM_OPK_GEMM && st->gbatch > 1, &c->compute_s);
        /* the bias-gradient reduction (wgrad), FP8 casts (forward, dgrad) */
        c->compute_s += st->bytes / hw->hbm_achievable_Bps;
        break;
    case SPSIM_OPK_FLASH:
        c->compute_s = attention_s(hw, cfg, op, st->flops, st->phase == SPSIM_PHASE_BACKWARD);
        break;
    case SPSIM_OPK_CP:
        return cp_step_cost(hw, cfg, st, c);
    case SPSIM_OPK_EP: /* on the critical path: the experts wait for their tokens */
        if (op->flex)
            rc = spsim_moe_flex_time(hw, op, st->phase == SPSIM_PHASE_BACKWARD, &c->coll);
        else
            rc = spsim_collective_time(hw, st->coll,
                                       spsim_group_place(hw, op->cp_group, op->cp_stride),
                                       (double)st->message_bytes, 1.0, &c->coll);
        c->comm_s = c->exposed_comm_s = c->coll.time_s;
        return rc;
    case SPSIM_OPK_MEMORY:
        c->compute_s = st->bytes / hw->hbm_achievable_Bps;
        break;
    case SPSIM_OPK_COMM:
        break;
    }
    if (rc != SPSIM_OK)
        return rc;
    if (st->coll != SPSIM_COLL_NONE) {
        rc = memo_coll_time(mo, hw, st, tp, &c->coll);
        ub_without_ring_tail(cfg, &c->coll);
        c->comm_s = c->coll.time_s;
        /* TE's bulk overlaps (--tp-comm-overlap) take 16 SMs, NCCL one per channel. */
        double share =
            (double)(cfg->tp_comm_overlap ? SPSIM_UB_COMM_SMS : hw->nccl_channels) / hw->sm_count;
        c->exposed_comm_s = st->overlap == SPSIM_OVERLAP_NONE ||
                                    st->overlap == SPSIM_OVERLAP_RING_EXCHANGE ||
                                    st->overlap == SPSIM_OVERLAP_PIPELINE
                                ? c->comm_s
                                : overlapped_s(share, c->compute_s, c->comm_s) - c->compute_s;
    }
    return rc;
}

/* A layer's saved bytes as if built with recompute `rec` and modules `rmods`: the builder reads
 * neither (but MLA's up-projection module, layer.c), only spsim_layer_saved_bytes does. */
static uint64_t
saved_as(struct spsim_layer *L, enum spsim_recompute rec, uint32_t rmods, bool offload, bool *ok)
{
    struct spsim_layer_config keep = L->cfg;
    L->cfg.recompute = rec;
    L->cfg.rmods = rmods;
    uint64_t bytes = offload ? spsim_layer_offload_bytes(L, ok) : spsim_layer_saved_bytes(L, ok);
    L->cfg = keep;
    return bytes;
}

/* The layer of c's t and sp for c's recompute mode: the evaluated layer `own` when it has them
 * (and no up-projection module, which the builder reads), else one of the two spares, built once
 * per (t, sp) (modes of one pair share it: 3 builds a layer evaluation at most, were 7). */
static struct spsim_layer *
mode_layer(const struct spsim_model_shape *m, const struct spsim_layer_config *c,
           struct spsim_layer *own, struct spsim_layer spare[2], bool *ok)
{
    if (c->t == own->cfg.t && c->sp == own->cfg.sp && !(own->cfg.rmods & SPSIM_RG_MLA_UP))
        return own;
    for (int i = 0; i < 2; i++) {
        if (spare[i].nops && spare[i].cfg.t == c->t && spare[i].cfg.sp == c->sp)
            return &spare[i];
        if (!spare[i].nops) {
            spsim_layer_build(m, c, &spare[i]);
            *ok = *ok && spare[i].ok;
            return &spare[i];
        }
    }
    spsim_layer_build(m, c, &spare[1]); /* a third pair: not among the modes below */
    *ok = *ok && spare[1].ok;
    return &spare[1];
}

static void
fill_modes(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
           struct spsim_layer_eval *le, bool *ok)
{
    static const struct {
        bool tensor, sp;
        enum spsim_recompute rec;
    } modes[SPSIM_MODE_COUNT] = {
        [SPSIM_MODE_NONE] = {false, false, SPSIM_RECOMPUTE_NONE},
        [SPSIM_MODE_TP] = {true, false, SPSIM_RECOMPUTE_NONE},
        [SPSIM_MODE_TP_SP] = {true, true, SPSIM_RECOMPUTE_NONE},
        [SPSIM_MODE_TP_SELECTIVE] = {true, false, SPSIM_RECOMPUTE_SELECTIVE},
        [SPSIM_MODE_TP_SP_SELECTIVE] = {true, true, SPSIM_RECOMPUTE_SELECTIVE},
        [SPSIM_MODE_FULL] = {true, false, SPSIM_RECOMPUTE_FULL},
    };
    struct spsim_layer spare[2];
    spare[0].nops = spare[1].nops = 0; /* a built layer has ops: nops 0 marks an empty spare */
    for (int i = 0; i < SPSIM_MODE_COUNT; i++) {
        struct spsim_layer_config c = *cfg;
        c.t = modes[i].tensor ? cfg->t : 1;
        c.sp = modes[i].sp;
        c.recompute = modes[i].rec;
        c.rmods = modes[i].rec == SPSIM_RECOMPUTE_SELECTIVE ? SPSIM_RMOD_CORE_ATTN : 0;
        struct spsim_layer *L = mode_layer(m, &c, &le->layer.block, spare, ok);
        le->act_modes[i] = saved_as(L, c.recompute, c.rmods, false, ok);
    }
    struct spsim_layer_config c = *cfg;
    c.recompute = SPSIM_RECOMPUTE_NONE;
    c.rmods = 0;
    struct spsim_layer *L = mode_layer(m, &c, &le->layer.block, spare, ok);
    le->act_no_recompute = saved_as(L, SPSIM_RECOMPUTE_NONE, 0, false, ok);
    le->offload_bytes = saved_as(L, SPSIM_RECOMPUTE_NONE, 0, true, ok);
}

static uint64_t
tp_wire(enum spsim_coll_op op, uint64_t message, uint32_t t)
{
    /* Exact for the TP boundaries: M = 2bsh is divisible by t because h is. */
    uint64_t per = message / t * (t - 1);
    return op == SPSIM_COLL_ALL_REDUCE ? 2 * per : per;
}

/* Exact bytes per rank of a CP or EP step: the ring's KV_blk transfers ((r−1) per message, the
 * backward message being KV_blk + dKV_blk), (n−1)/n of an AG, RS or A2A buffer. */
static uint64_t
cp_wire(const struct spsim_step *st)
{
    uint64_t n = st->op->cp_group;
    if (st->coll == SPSIM_COLL_SEND_RECV)
        return st->message_bytes * (n - 1);
    return st->message_bytes / n * (n - 1);
}

static void
fold_step(struct spsim_block_eval *be, const struct spsim_step *st, const struct spsim_step_cost *c)
{
    double wall = c->compute_s + c->exposed_comm_s;
    bool cp = st->op->kind == SPSIM_OPK_CP, ep = st->op->kind == SPSIM_OPK_EP;
    switch (st->phase) {
    case SPSIM_PHASE_FORWARD:
        be->fwd_s += wall;
        be->fwd_compute_s += c->compute_s;
        be->fwd_flops += st->flops;
        break;
    case SPSIM_PHASE_BACKWARD:
        be->bwd_s += wall;
        be->bwd_compute_s += c->compute_s;
        be->bwd_flops += st->flops;
        if (st->pass == SPSIM_PASS_WGRAD)
            be->wgrad_compute_s += c->compute_s;
        *(ep   ? &be->ep_bwd_wire_bytes
          : cp ? &be->cp_bwd_wire_bytes
               : &be->tp_bwd_wire_bytes) += c->coll.wire_bytes;
        break;
    case SPSIM_PHASE_RECOMPUTE:
        be->recompute_s += wall;
        be->recompute_compute_s += c->compute_s;
        be->recompute_flops += st->flops;
        if (!cp && !ep) { /* the TP collectives' share, as tp_exposed_s */
            be->recompute_comm_s += c->comm_s;
            be->recompute_exposed_s += c->exposed_comm_s;
        } else if (cp && !st->op->moe_aux) {
            be->cp_recompute_comm_s += c->comm_s;
            be->cp_recompute_exposed_s += c->exposed_comm_s;
        }
        break;
    }
    if (ep) {
        be->ep_exposed_s += c->exposed_comm_s;
        be->ep_comm_s += c->comm_s;
        be->ep_network = be->ep_network || c->coll.tier >= SPSIM_TIER_NETWORK;
        return;
    }
    if (cp) {
        *(st->op->moe_aux ? &be->moe_aux_exposed_s : &be->cp_exposed_s) += c->exposed_comm_s;
        be->cp_comm_s += c->comm_s;
        be->cp_network = be->cp_network || c->coll.tier >= SPSIM_TIER_NETWORK;
        return;
    }
    be->tp_exposed_s += c->exposed_comm_s;
    be->tp_nvlink_bytes += c->coll.nvlink_bytes;
    be->tp_network_bytes += c->coll.network_bytes;
}

/* The GEMM step a userbuffers collective at step i runs with: the next one (ring exchange)
 * or the previous one (pipeline) of the same phase; -1 if none. */
static int
ub_partner(const struct spsim_schedule *sched, uint32_t i)
{
    const struct spsim_step *st = &sched->steps[i];
    int dir = st->overlap == SPSIM_OVERLAP_RING_EXCHANGE ? 1 : -1;
    for (int j = (int)i + dir; j >= 0 && j < (int)sched->nsteps; j += dir) {
        const struct spsim_step *g = &sched->steps[j];
        if (g->phase != st->phase)
            return -1;
        if (g->op->kind == SPSIM_OPK_GEMM)
            return j;
    }
    return -1;
}

/*
 * A TP collective of T inside its GEMM of G (TE comm_gemm_overlap), in n chunks of the GEMM's
 * M (tokens): chunk GEMMs of g, chunk transfers of c.
 *   ring exchange (AllGather, n = t): each rank starts on its own chunk while the next one
 *     arrives from its ring neighbour; the t − 1 hops move what NCCL's ring AllGather moves
 *     over the same links, so a hop takes c = T/(t − 1): (t − 1)·max(g, c) + g;
 *   pipeline (ReduceScatter, n = 4): chunk i's output is reduce-scattered while chunk i + 1
 *     computes on the SMs the communication leaves: g + (n − 1)·max(g, c) + c, the last chunk's
 *     reduction exposed.
 * What the pair takes beyond G is the collective's exposed time (chunking's smaller GEMMs
 * included).
 */
static int
ub_cost(const struct spsim_hardware *hw, const struct spsim_layer_config *cfg,
        const struct spsim_schedule *sched, uint32_t i, struct spsim_group tp,
        struct spsim_step_cost *cost)
{
    int j = ub_partner(sched, i);
    if (j < 0)
        return SPSIM_OK; /* nothing to hide behind: exposed whole, as step_cost left it */
    const struct spsim_step *st = &sched->steps[i], *g = &sched->steps[j];
    bool ring = st->overlap == SPSIM_OVERLAP_RING_EXCHANGE;
    uint64_t n = ring ? cfg->t : SPSIM_UB_PIPELINE_SPLITS;
    double gc = 0;
    struct spsim_coll_time ct = {.time_s = cost[i].comm_s / (n - 1.0)};
    uint64_t rows = g->gm / n > 0 ? g->gm / n : 1; /* fewer tokens than chunks: one a chunk */
    int rc = spsim_gemm_time(hw, cfg->dtype, rows, g->gn, g->gk, g->gbatch, false, &gc);
    if (rc == SPSIM_OK && !ring)
        rc = spsim_collective_time(hw, SPSIM_COLL_REDUCE_SCATTER, tp, (double)st->message_bytes / n,
                                   1.0, &ct);
    if (rc != SPSIM_OK)
        return rc;
    ub_without_ring_tail(cfg, &ct);
    double c = ct.time_s, total;
    if (ring) {
        total = (n - 1.0) * spsim_max_d(gc, c) + gc;
    } else {
        gc *= (double)hw->sm_count / (hw->sm_count - SPSIM_UB_COMM_SMS);
        total = gc + (n - 1.0) * spsim_max_d(gc, c) + c;
    }
    cost[i].exposed_comm_s = spsim_max_d(0.0, total - cost[j].compute_s);
    return SPSIM_OK;
}

/* Schedule, cost and fold a built block. Without hardware the steps cost nothing. */
static int
block_fold(const struct spsim_model_shape *m, enum spsim_block_role role,
           const struct spsim_hardware *hw, struct spsim_group tp, struct spsim_block_eval *be,
           bool *ok, struct spsim_error *err)
{
    const struct spsim_layer_config *cfg = &be->block.cfg;
    be->saved_bytes = spsim_layer_saved_bytes(&be->block, ok);
    spsim_schedule_build(&be->block, &be->sched);
    struct step_memo mo;
    mo.ngemm = mo.ncoll = 0;
    if (!hw)
        memset(be->cost, 0, be->sched.nsteps * sizeof(be->cost[0]));
    for (uint32_t i = 0; i < be->sched.nsteps; i++) {
        const struct spsim_step *st = &be->sched.steps[i];
        if (st->coll != SPSIM_COLL_NONE && st->op->kind >= SPSIM_OPK_CP) {
            be->sched.steps[i].group_size = st->op->cp_group;
            be->sched.steps[i].wire_bytes = st->op->flex ? st->message_bytes : cp_wire(st);
            *(st->op->kind == SPSIM_OPK_EP ? &be->ep_wire[st->phase] : &be->cp_wire[st->phase]) +=
                be->sched.steps[i].wire_bytes;
        } else if (st->coll != SPSIM_COLL_NONE) {
            uint64_t w = tp_wire(st->coll, st->message_bytes, cfg->t);
            be->sched.steps[i].group_size = cfg->t;
            be->sched.steps[i].wire_bytes = w;
            be->tp_wire[st->phase] += w;
            if (st->overlap == SPSIM_OVERLAP_DGRAD)
                be->tp_regather_wire += w;
        }
        if (hw) {
            int rc = step_cost(hw, cfg, st, tp, &mo, &be->cost[i]);
            if (rc != SPSIM_OK)
                return spsim_fail(err, rc, "numerical failure while costing '%s'", st->op->name);
        }
    }
    for (uint32_t i = 0; i < be->sched.nsteps; i++) {
        const struct spsim_step *st = &be->sched.steps[i];
        if (hw &&
            (st->overlap == SPSIM_OVERLAP_RING_EXCHANGE || st->overlap == SPSIM_OVERLAP_PIPELINE)) {
            int rc = ub_cost(hw, cfg, &be->sched, i, tp, be->cost);
            if (rc != SPSIM_OK)
                return spsim_fail(err, rc, "numerical failure while costing '%s'", st->op->name);
        }
        fold_step(be, st, &be->cost[i]);
    }
    spsim_block_mb_host(m, role, be);
    spsim_block_host(hw, be);
    return SPSIM_OK;
}

/* The second kind of decoder layer, in le->dense: an MoE model's dense layer, or with
 * first_last_layers_bf16 the layer outside TE's quantized autocast (bf16_layers.c), built with
 * dtype bf16 (the recipe's casts, FP8 saved inputs and FP8 AllGathers all gone). */
static int
second_layer(const struct spsim_model_shape *m, const struct spsim_hardware *hw,
             const struct spsim_layer_config *cfg, struct spsim_layer_eval *le, bool *ok,
             struct spsim_error *err)
{
    struct spsim_layer_config dense = *cfg;
    dense.moe = false;
    if (cfg->bf16_ends) {
        dense.dtype = SPSIM_DTYPE_BF16;
        dense.fp8_recipe = SPSIM_FP8_DELAYED;
    }
    dense.recompute = SPSIM_RECOMPUTE_NONE;
    dense.rmods = 0;
    spsim_layer_build(m, &dense, &le->dense.block);
    le->dense_no_recompute = spsim_layer_saved_bytes(&le->dense.block, ok);
    dense.recompute = cfg->recompute;
    dense.rmods = cfg->rmods;
    spsim_layer_build(m, &dense, &le->dense.block);
    *ok = *ok && le->dense.block.ok;
    return block_fold(m, SPSIM_BLOCK_LAYER, hw, le->tp_group, &le->dense, ok, err);
}

/* Clear what the evaluation sums into or sets only sometimes, not the op, step and cost tables
 * (270 kB, each entry written before it is read: block_begin, add_op, spsim_schedule_build,
 * step_cost), which were zeroed whole for every layer evaluation. */
static void
block_clear(struct spsim_block_eval *b)
{
    const size_t from = offsetof(struct spsim_block_eval, saved_bytes);
    memset((char *)b + from, 0, sizeof(*b) - from);
    b->sched.nsteps = 0;
    b->block.nops = 0;
}

static void
eval_clear(struct spsim_layer_eval *le)
{
    struct spsim_block_eval *const blocks[] = {&le->layer, &le->embedding, &le->output, &le->dense,
                                               &le->mtp};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(blocks); i++)
        block_clear(blocks[i]);
    for (uint32_t k = 0; le->hybrid_kinds && k < SPSIM_LAYER_KIND_COUNT; k++)
        if (le->hybrid_kinds >> k & 1)
            block_clear(&le->hybrid[k]);
    le->dense_no_recompute = 0;
    le->hybrid_kinds = 0;
    le->hybrid_no_recompute = 0;
}

/* A hybrid model's other layer kinds (the primary one is le->layer): each kind its pattern or
 * MTP pattern has, built as its own block (the MoE settings only on the 'E' one). */
static int
hybrid_kinds(const struct spsim_model_shape *m, const struct spsim_hardware *hw,
             const struct spsim_layer_config *cfg, struct spsim_layer_eval *le, bool *ok,
             struct spsim_error *err)
{
    le->hybrid_primary = cfg->kind;
    le->hybrid_no_recompute = le->act_no_recompute;
    for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++) {
        char sym = spsim_hybrid_kind_symbol((enum spsim_layer_kind)k);
        if (!strchr(m->hybrid_pattern, sym) && !(m->mtp_pattern && strchr(m->mtp_pattern, sym)))
            continue;
        le->hybrid_kinds |= 1u << k;
        if (k == (int)cfg->kind)
            continue;
        struct spsim_layer_config c = *cfg;
        c.kind = (enum spsim_layer_kind)k;
        c.moe = false; /* the primary is the 'E' kind whenever the pattern has one */
        c.recompute = SPSIM_RECOMPUTE_NONE;
        c.rmods = 0;
        spsim_layer_build(m, &c, &le->hybrid[k].block);
        le->hybrid_no_recompute = spsim_max_u64(le->hybrid_no_recompute,
                                                spsim_layer_saved_bytes(&le->hybrid[k].block, ok));
        c.recompute = cfg->recompute;
        c.rmods = cfg->rmods;
        spsim_layer_build(m, &c, &le->hybrid[k].block);
        *ok = *ok && le->hybrid[k].block.ok;
        int rc = block_fold(m, SPSIM_BLOCK_LAYER, hw, le->tp_group, &le->hybrid[k], ok, err);
        if (rc != SPSIM_OK)
            return rc;
    }
    return SPSIM_OK;
}

int
spsim_layer_evaluate(const struct spsim_model_shape *m, const struct spsim_hardware *hw,
                     const struct spsim_layer_config *cfg, uint64_t padded_vocab,
                     struct spsim_layer_eval *le, struct spsim_error *err)
{
    eval_clear(le);
    struct spsim_layer_config placed;
    if (cfg->dispatcher == SPSIM_MOE_FLEX) { /* the flex group's RDMA domains (moe_flex.c) */
        placed = *cfg;
        placed.flex_per_domain = spsim_moe_flex_per_domain(hw, cfg);
        cfg = &placed;
    }
    le->cfg = *cfg;
    le->padded_vocab = padded_vocab;
    le->tp_group = hw ? spsim_group_place(hw, cfg->t, 1) : (struct spsim_group){cfg->t, cfg->t};
    bool ok = true;
    /* The embedding and output layers are never recomputed. */
    struct spsim_layer_config plain = *cfg;
    plain.recompute = SPSIM_RECOMPUTE_NONE;
    plain.rmods = 0;
    /* Megatron's output layer is its own ColumnParallelLinear, not a TE module: no userbuffers. */
    plain.tp_comm_overlap = false;
    spsim_layer_build(m, cfg, &le->layer.block);
    spsim_embedding_build(m, &plain, padded_vocab, &le->embedding.block);
    spsim_output_build(m, &plain, padded_vocab, &le->output.block);
    ok = le->layer.block.ok && le->embedding.block.ok && le->output.block.ok;
    fill_modes(m, cfg, le, &ok);
    int rc;
    if ((rc = block_fold(m, SPSIM_BLOCK_LAYER, hw, le->tp_group, &le->layer, &ok, err)))
        return rc;
    if (hw && cfg->moe && cfg->ep > 1)
        spsim_ep_overlap_pair(hw, &le->layer, le->layer.ep_pair_exposed_s);
    if ((rc = block_fold(m, SPSIM_BLOCK_EMBEDDING, hw, le->tp_group, &le->embedding, &ok, err)) ||
        (rc = block_fold(m, SPSIM_BLOCK_OUTPUT, hw, le->tp_group, &le->output, &ok, err)))
        return rc;
    if (m->mtp_layers) {
        spsim_mtp_build(m, &plain, &le->mtp.block);
        ok = ok && le->mtp.block.ok;
        if ((rc = block_fold(m, SPSIM_BLOCK_MTP, hw, le->tp_group, &le->mtp, &ok, err)))
            return rc;
    }
    /* An MoE model's dense layers (spsim_model_layer_is_moe): a dense layer of its FFN size. */
    le->has_dense = ((cfg->moe && m->ffn_hidden > 0) || cfg->bf16_ends) && !m->hybrid_pattern;
    if (le->has_dense && (rc = second_layer(m, hw, cfg, le, &ok, err)))
        return rc;
    if (m->hybrid_pattern && (rc = hybrid_kinds(m, hw, cfg, le, &ok, err)))
        return rc;
    if (!ok)
        return spsim_fail(err, SPSIM_ERANGE,
                          "parallel config: the activation byte counts of one layer (s = %llu, "
                          "b = %llu) do not fit in 64 bits",
                          (unsigned long long)cfg->s, (unsigned long long)cfg->b);
    return SPSIM_OK;
}
