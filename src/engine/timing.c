/* The GEMM and memory-bound op models: tile quantisation, epilogue, roofline; each op's time. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "collective_model.h"
#include "eval.h"
#include "moe.h"

/*
 * GEMM model. Without a measured table the throughput of a GEMM is the GPU's best measured
 * large-GEMM rate (the profile's gemm_achievable_tflops, e.g. MAMF) scaled by how well its
 * output tiles fill the GPU: a kernel computes the M×N output in tiles, one tile per SM at a
 * time, so ceil(tiles / SMs) waves run and the last one is partly idle, and edge tiles are
 * partly empty. The candidate tiles are the CUTLASS 2.x/3.x default threadblock shapes for
 * 16-bit tensor-core GEMMs on SM80/SM90 (128×256, 256×128, 128×128); cuBLAS' heuristics pick
 * among such kernels, so the best of the three is taken. A roofline bound (bytes over the
 * measured HBM bandwidth) covers thin shapes.
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
 * per cent. "compute" is the main loop's rate: measured table points are converted to it by
 * the same rule (spsim_gemm_mainloop_rate).
 */
double
spsim_tile_efficiency(uint32_t sms, uint64_t m, uint64_t n, uint64_t batch)
{
    static const uint64_t tiles[][2] = {{128, 256}, {256, 128}, {128, 128}};
    double best = 0;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(tiles); i++) {
        uint64_t tm = (m + tiles[i][0] - 1) / tiles[i][0];
        uint64_t tn = (n + tiles[i][1] - 1) / tiles[i][1];
        double count = (double)tm * (double)tn * (double)batch;
        double waves = ceil(count / sms);
        double fill =
            ((double)m * (double)n) / ((double)tm * tiles[i][0] * (double)tn * tiles[i][1]);
        double eff = fill * count / (waves * sms);
        if (eff > best)
            best = eff;
    }
    return best;
}

static double
gemm_ceiling(const struct spsim_hardware *hw, enum spsim_dtype dtype)
{
    if (hw->gemm_achievable_flops[dtype] > 0)
        return hw->gemm_achievable_flops[dtype];
    /* No measurement for this dtype: the same fraction of its peak as bf16 reaches. */
    return hw->gemm_achievable_flops[SPSIM_DTYPE_BF16] * hw->peak_flops[dtype] /
           hw->peak_flops[SPSIM_DTYPE_BF16];
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
    *rate = flops / mainloop / spsim_tile_efficiency(hw->sm_count, m, n, 1);
    return SPSIM_OK;
}

int
spsim_gemm_time(const struct spsim_hardware *hw, enum spsim_dtype dtype, uint64_t m, uint64_t n,
                uint64_t k, uint64_t batch, bool fp32_accumulate_out, double *seconds)
{
    double flops = 2.0 * (double)batch * (double)m * (double)n * (double)k;
    double compute;
    const struct spsim_gemm_table *t = hw->gemm_table;
    if (t && t->n > 0 && dtype == SPSIM_DTYPE_BF16) {
        double x = log(flops > 1 ? flops : 1), tflops;
        if (t->n == 1 || x <= t->log_flops[0])
            tflops = t->tflops[0];
        else if (x >= t->log_flops[t->n - 1])
            tflops = t->tflops[t->n - 1];
        else if (gsl_interp_eval_e(t->interp, t->log_flops, t->tflops, x, NULL, &tflops) !=
                 GSL_SUCCESS)
            return SPSIM_ENUMERIC;
        double rate = tflops * 1e12 * spsim_tile_efficiency(hw->sm_count, m, n, batch);
        compute = flops / spsim_min_d(rate, gemm_ceiling(hw, dtype));
    } else {
        compute =
            flops / (gemm_ceiling(hw, dtype) * spsim_tile_efficiency(hw->sm_count, m, n, batch));
    }
    /* Operands in 16 bits; Megatron's gradient-accumulation fusion reads and writes the fp32
     * main gradient for the weight-gradient GEMM. */
    double operand_bytes = (double)batch * 2.0 * ((double)m * k + (double)k * n);
    double output_bytes = (double)batch * (fp32_accumulate_out ? 8.0 : 2.0) * (double)m * n;
    double epilogue = epilogue_s(hw, m, n, batch, fp32_accumulate_out);
    double streamed = hw->gemm_epilogue_serial ? operand_bytes : operand_bytes + output_bytes;
    *seconds = spsim_max_d(compute, streamed / hw->hbm_achievable_Bps) + epilogue;
    return isfinite(*seconds) ? SPSIM_OK : SPSIM_ENUMERIC;
}

void
spsim_layer_config_from(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                        struct spsim_layer_config *cfg)
{
    cfg->t = par->tp;
    cfg->sp = par->sp;
    cfg->flash = par->flash_attn < 0 ? m->attention == SPSIM_ATTENTION_FLASH : par->flash_attn == 1;
    cfg->recompute = par->recompute;
    /* Megatron's default module list is ["core_attn"] (transformer_config.py). */
    cfg->rmods = par->recompute != SPSIM_RECOMPUTE_SELECTIVE ? 0
                 : par->recompute_modules                    ? par->recompute_modules
                                                             : SPSIM_RMOD_CORE_ATTN;
    cfg->s = par->seq ? par->seq : m->seq_len;
    cfg->b = par->mbs;
    cfg->dtype = par->dtype;
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
}

/*
 * A computation and a collective run side by side. NCCL's kernel holds one SM per channel for
 * the collective's whole duration (hardware profile: nvlink.nccl_channels), so the computation
 * runs on the other SMs meanwhile: at rate r = 1 − k/S while the collective lasts, at full rate
 * after. The pair takes max(comm, min(compute / r, compute + comm·k/S)).
 */
static double
overlapped_s(const struct spsim_hardware *hw, double compute, double comm)
{
    double share = (double)hw->nccl_channels / hw->sm_count;
    double slowed = spsim_min_d(compute / (1.0 - share), compute + comm * share);
    return spsim_max_d(comm, slowed);
}

static double
flash_rate(const struct spsim_hardware *hw)
{
    /* Measured flash-attention throughput where the profile has it, else the GEMM ceiling. */
    return hw->flash_flops > 0 ? hw->flash_flops : gemm_ceiling(hw, SPSIM_DTYPE_BF16);
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
cp_ring_cost(const struct spsim_hardware *hw, const struct spsim_step *st, struct spsim_group g,
             struct spsim_step_cost *c)
{
    const struct spsim_op *op = st->op;
    struct spsim_group pair = {2, g.per_domain < g.size ? 1 : 2};
    double r = op->cp_group, attn = op->cp_attn_flops / flash_rate(hw) / r;
    bool bwd = st->phase == SPSIM_PHASE_BACKWARD;
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
        attn *= 2.5;
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
cp_step_cost(const struct spsim_hardware *hw, const struct spsim_step *st,
             struct spsim_step_cost *c)
{
    struct spsim_group g = spsim_group_place(hw, st->op->cp_group, st->op->cp_stride);
    if (st->coll == SPSIM_COLL_SEND_RECV)
        return cp_ring_cost(hw, st, g, c);
    int rc = spsim_collective_time(hw, st->coll, g, (double)st->message_bytes, 1.0, &c->coll);
    c->comm_s = c->exposed_comm_s = c->coll.time_s;
    return rc;
}

static int
step_cost(const struct spsim_hardware *hw, const struct spsim_layer_config *cfg,
          const struct spsim_step *st, struct spsim_group tp, struct spsim_step_cost *c)
{
    memset(c, 0, sizeof(*c));
    int rc = SPSIM_OK;
    const struct spsim_op *op = st->op;
    switch (op->kind) {
    case SPSIM_OPK_GEMM:
    case SPSIM_OPK_BMM:
        rc = spsim_gemm_time(hw, cfg->dtype, st->gm, st->gn, st->gk, st->gbatch,
                             op->kind == SPSIM_OPK_GEMM && st->pass == SPSIM_PASS_WGRAD,
                             &c->compute_s);
        c->compute_s += st->bytes / hw->hbm_achievable_Bps; /* bias-gradient reduction */
        break;
    case SPSIM_OPK_FLASH:
        c->compute_s = st->flops / flash_rate(hw);
        break;
    case SPSIM_OPK_CP:
        return cp_step_cost(hw, st, c);
    case SPSIM_OPK_EP: /* on the critical path: the experts wait for their tokens */
        rc = spsim_collective_time(hw, st->coll, spsim_group_place(hw, op->cp_group, op->cp_stride),
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
        rc = spsim_collective_time(hw, st->coll, tp, (double)st->message_bytes, 1.0, &c->coll);
        c->comm_s = c->coll.time_s;
        c->exposed_comm_s = st->overlap == SPSIM_OVERLAP_NONE
                                ? c->comm_s
                                : overlapped_s(hw, c->compute_s, c->comm_s) - c->compute_s;
    }
    return rc;
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
    struct spsim_layer tmp;
    for (int i = 0; i < SPSIM_MODE_COUNT; i++) {
        struct spsim_layer_config c = *cfg;
        c.t = modes[i].tensor ? cfg->t : 1;
        c.sp = modes[i].sp;
        c.recompute = modes[i].rec;
        c.rmods = modes[i].rec == SPSIM_RECOMPUTE_SELECTIVE ? SPSIM_RMOD_CORE_ATTN : 0;
        spsim_layer_build(m, &c, &tmp);
        *ok = *ok && tmp.ok;
        le->act_modes[i] = spsim_layer_saved_bytes(&tmp, ok);
    }
    struct spsim_layer_config c = *cfg;
    c.recompute = SPSIM_RECOMPUTE_NONE;
    c.rmods = 0;
    spsim_layer_build(m, &c, &tmp);
    *ok = *ok && tmp.ok;
    le->act_no_recompute = spsim_layer_saved_bytes(&tmp, ok);
    le->offload_bytes = spsim_layer_offload_bytes(&tmp, ok);
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
        *(ep   ? &be->ep_bwd_wire_bytes
          : cp ? &be->cp_bwd_wire_bytes
               : &be->tp_bwd_wire_bytes) += c->coll.wire_bytes;
        break;
    case SPSIM_PHASE_RECOMPUTE:
        be->recompute_s += wall;
        be->recompute_compute_s += c->compute_s;
        be->recompute_flops += st->flops;
        be->recompute_comm_s += c->comm_s;
        be->recompute_exposed_s += c->exposed_comm_s;
        break;
    }
    if (ep) {
        be->ep_exposed_s += c->exposed_comm_s;
        be->ep_comm_s += c->comm_s;
        be->ep_network = be->ep_network || c->coll.tier >= SPSIM_TIER_NETWORK;
        return;
    }
    if (cp) {
        be->cp_exposed_s += c->exposed_comm_s;
        be->cp_comm_s += c->comm_s;
        be->cp_network = be->cp_network || c->coll.tier >= SPSIM_TIER_NETWORK;
        return;
    }
    be->tp_exposed_s += c->exposed_comm_s;
    be->tp_nvlink_bytes += c->coll.nvlink_bytes;
    be->tp_network_bytes += c->coll.network_bytes;
}

/* Schedule, cost and fold a built block. */
static int
block_fold(const struct spsim_hardware *hw, struct spsim_group tp, struct spsim_block_eval *be,
           bool *ok, struct spsim_error *err)
{
    const struct spsim_layer_config *cfg = &be->block.cfg;
    be->saved_bytes = spsim_layer_saved_bytes(&be->block, ok);
    spsim_schedule_build(&be->block, &be->sched);
    for (uint32_t i = 0; i < be->sched.nsteps; i++) {
        const struct spsim_step *st = &be->sched.steps[i];
        if (st->coll != SPSIM_COLL_NONE && st->op->kind >= SPSIM_OPK_CP) {
            be->sched.steps[i].group_size = st->op->cp_group;
            be->sched.steps[i].wire_bytes = cp_wire(st);
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
            int rc = step_cost(hw, cfg, st, tp, &be->cost[i]);
            if (rc != SPSIM_OK)
                return spsim_fail(err, rc, "numerical failure while costing '%s'", st->op->name);
        }
        fold_step(be, st, &be->cost[i]);
    }
    return SPSIM_OK;
}

int
spsim_layer_evaluate(const struct spsim_model_shape *m, const struct spsim_hardware *hw,
                     const struct spsim_layer_config *cfg, uint64_t padded_vocab,
                     struct spsim_layer_eval *le, struct spsim_error *err)
{
    memset(le, 0, sizeof(*le));
    le->cfg = *cfg;
    le->padded_vocab = padded_vocab;
    le->tp_group = hw ? spsim_group_place(hw, cfg->t, 1) : (struct spsim_group){cfg->t, cfg->t};
    bool ok = true;
    /* The embedding and output layers are never recomputed. */
    struct spsim_layer_config plain = *cfg;
    plain.recompute = SPSIM_RECOMPUTE_NONE;
    plain.rmods = 0;
    spsim_layer_build(m, cfg, &le->layer.block);
    spsim_embedding_build(m, &plain, padded_vocab, &le->embedding.block);
    spsim_output_build(m, &plain, padded_vocab, &le->output.block);
    ok = le->layer.block.ok && le->embedding.block.ok && le->output.block.ok;
    fill_modes(m, cfg, le, &ok);
    int rc;
    if ((rc = block_fold(hw, le->tp_group, &le->layer, &ok, err)) ||
        (rc = block_fold(hw, le->tp_group, &le->embedding, &ok, err)) ||
        (rc = block_fold(hw, le->tp_group, &le->output, &ok, err)))
        return rc;
    if (m->mtp_layers) {
        spsim_mtp_build(m, &plain, &le->mtp.block);
        ok = ok && le->mtp.block.ok;
        if ((rc = block_fold(hw, le->tp_group, &le->mtp, &ok, err)))
            return rc;
    }
    /* An MoE model's dense layers (spsim_model_layer_is_moe): a dense layer of its FFN size. */
    le->has_dense = cfg->moe && m->ffn_hidden > 0; /* whether it has any: the model's pattern */
    if (le->has_dense) {
        struct spsim_layer_config dense = *cfg;
        dense.moe = false;
        dense.recompute = SPSIM_RECOMPUTE_NONE;
        dense.rmods = 0;
        spsim_layer_build(m, &dense, &le->dense.block);
        le->dense_no_recompute = spsim_layer_saved_bytes(&le->dense.block, &ok);
        dense = *cfg;
        dense.moe = false;
        spsim_layer_build(m, &dense, &le->dense.block);
        ok = ok && le->dense.block.ok;
        if ((rc = block_fold(hw, le->tp_group, &le->dense, &ok, err)))
            return rc;
    }
    if (!ok)
        return spsim_fail(err, SPSIM_ERANGE,
                          "parallel config: the activation byte counts of one layer (s = %llu, "
                          "b = %llu) do not fit in 64 bits",
                          (unsigned long long)cfg->s, (unsigned long long)cfg->b);
    return SPSIM_OK;
}
