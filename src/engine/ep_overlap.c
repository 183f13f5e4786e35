/*
 * Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm; Bridge YAML
 * moe_a2a_overlap). The combined 1F1B schedule (pipeline_parallel/combined_1f1b.py) runs the
 * forward of one micro-batch beside the backward of another, layer by layer
 * (models/common/model_chunk_schedule_plan.py TransformerLayerSchedulePlan.run): each MoE layer
 * is split into four nodes (models/gpt/fine_grained_callables.py), two on the computation
 * stream and two on the communication stream:
 *   A  pre_dispatch_computation: attention, the pre-MLP norm, the router, the shared experts
 *      and the dispatch preprocess (the permutation);
 *   D  moe_dispatch: the EP all-to-all (and, with etp > 1, the expert-TP AllGather);
 *   M  mlp: the routed experts;
 *   C  moe_combine: the combine exchanges, the unpermutation and the residual add.
 * The pair runs in this order (f: forward, b: backward of the other micro-batch):
 *   comm: C_b | D_f -> D_b | C_f        comp: A_f | M_b -> M_b wgrad -> M_f | A_b
 * each node starting when its stream is free and its inputs exist. With --delay-wgrad-compute
 * the experts' weight gradient runs apart from M_b (backward_dw), so D_b leaves as soon as the
 * data gradient is done and hides under the wgrad and M_f.
 */
#include "config.h"

#include <string.h>

#include "ep_overlap.h"
#include "moe.h"

#define OVERLAP_FAIL(err, ...) spsim_fail((err), SPSIM_ECONFIG, "parallel config: " __VA_ARGS__)

/* Megatron's messages verbatim (transformer_config.py __post_init__). Its bf16-or-fp16 rule
 * holds already: spsim trains in bf16, fp16 or fp8 (bf16 parameters). */
int
spsim_ep_overlap_check(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                       struct spsim_error *err)
{
    if (p->delay_wgrad_compute && !p->moe_a2a_overlap)
        return OVERLAP_FAIL(err, "field 'delay_wgrad_compute': overlap_moe_expert_parallel_comm "
                                 "must be enabled when enabling delay_wgrad_compute");
    if (!p->moe_a2a_overlap)
        return SPSIM_OK;
    if (m->experts == 0 || p->ep <= 1)
        return OVERLAP_FAIL(err, "field 'moe_a2a_overlap': overlap_moe_expert_parallel_comm is "
                                 "only supported with expert model parallelism");
    if (p->pp > 1 && p->vpp <= 1 && !p->pipeline_layout)
        return OVERLAP_FAIL(err, "field 'vpp': If enabling EP A2A overlap, "
                                 "virtual_pipeline_model_parallel_size must be specified when "
                                 "pipeline_model_parallel_size > 1");
    if (p->moe_dispatcher != SPSIM_MOE_ALLTOALL && p->moe_dispatcher != SPSIM_MOE_FLEX)
        return OVERLAP_FAIL(err, "field 'moe_dispatcher': overlap_moe_expert_parallel_comm is "
                                 "supported with alltoall/flex token dispatcher");
    if (p->recompute == SPSIM_RECOMPUTE_FULL)
        return OVERLAP_FAIL(err, "field 'recompute': disable full recomputation when enabling "
                                 "overlap_moe_expert_parallel_comm");
    if (p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT || p->recompute_layers)
        return OVERLAP_FAIL(err, "field 'recompute_method': disable recomputation method when "
                                 "enabling overlap_moe_expert_parallel_comm");
    if (p->recompute == SPSIM_RECOMPUTE_SELECTIVE && (p->recompute_modules & SPSIM_RMOD_MOE))
        return OVERLAP_FAIL(err, "field 'recompute_modules': disable moe in recompute_modules "
                                 "when enabling overlap_moe_expert_parallel_comm");
    if (m->mtp_layers > 1)
        return OVERLAP_FAIL(err, "field 'mtp_layers': MTP supports at most one layer when "
                                 "enabling overlap_moe_expert_parallel_comm.");
    /* spsim's limit: spsim_ep_overlap_paired counts the pairs of Megatron's default groups. */
    if (p->microbatch_group && p->microbatch_group != p->pp)
        return OVERLAP_FAIL(err, "field 'microbatch_group': micro-batch groups other than pp "
                                 "with overlap_moe_expert_parallel_comm are not modelled");
    return SPSIM_OK;
}

enum node { NODE_A, NODE_D, NODE_M, NODE_C };

/* The node of each op, in op order: A until the first token exchange, D for the exchanges that
 * follow, M for the experts, C from the combine's first exchange on; the shared experts
 * (listed after the dispatch) belong to A. */
static void
classify(const struct spsim_layer *layer, enum node *node)
{
    enum node at = NODE_A;
    for (uint32_t i = 0; i < layer->nops; i++) {
        const struct spsim_op *op = &layer->ops[i];
        bool ep = op->kind == SPSIM_OPK_EP;
        if (ep)
            at = at == NODE_A || at == NODE_D ? NODE_D : NODE_C;
        else if (at == NODE_D || at == NODE_M)
            at = NODE_M;
        node[i] = !ep && (op->group & SPSIM_RG_SHARED) ? NODE_A : at;
    }
}

/* Node durations: forward [0], backward with the recompute of its ops [1], weight gradients
 * [2]; and the wall of the layer's steps that are no token exchange. */
static void
node_times(const struct spsim_block_eval *be, double t[4][3], double *other)
{
    enum node node[SPSIM_LAYER_MAX_OPS];
    classify(&be->block, node);
    memset(t, 0, sizeof(double) * 12);
    *other = 0;
    for (uint32_t i = 0; i < be->sched.nsteps; i++) {
        const struct spsim_step *st = &be->sched.steps[i];
        double wall = be->cost[i].compute_s + be->cost[i].exposed_comm_s;
        int dir = st->phase == SPSIM_PHASE_FORWARD ? 0 : st->pass == SPSIM_PASS_WGRAD ? 2 : 1;
        t[node[st->op - be->block.ops]][dir] += wall;
        if (st->op->kind != SPSIM_OPK_EP)
            *other += wall;
    }
}

/* The pair on the two streams (see the top of the file); k: the share of SMs the exchanges hold
 * meanwhile (exchange_sms). */
static double
pair_exposed(double t[4][3], bool delay, double k, double other)
{
    double a_f = t[NODE_A][0], a_b = t[NODE_A][1] + t[NODE_A][2];
    double m_f = t[NODE_M][0], m_bd = t[NODE_M][1], m_bw = t[NODE_M][2];
    double d_f = t[NODE_D][0], d_b = t[NODE_D][1] + t[NODE_D][2];
    double c_f = t[NODE_C][0], c_b = t[NODE_C][1] + t[NODE_C][2];
    double start = spsim_max_d(a_f, c_b); /* M_b needs C_b's gradient, D_f A_f's tokens */
    double m_bd_end = start + m_bd, m_bw_end = m_bd_end + m_bw, d_f_end = start + d_f;
    double d_b_end = spsim_max_d(d_f_end, delay ? m_bd_end : m_bw_end) + d_b;
    double m_f_end = spsim_max_d(m_bw_end, d_f_end) + m_f;
    double after = spsim_max_d(m_f_end, d_b_end);
    double wall = spsim_max_d(after + a_b, after + c_f);
    /* The computation-stream time the exchanges did not stall; their kernels hold k of the
     * SMs while they run beside it (as timing.c overlapped_s). */
    double comp = a_f + a_b + m_f + m_bd + m_bw, comm = d_f + d_b + c_f + c_b;
    double stall = spsim_max_d(0.0, wall - comp);
    wall += k * spsim_max_d(0.0, comm - stall);
    return spsim_max_d(0.0, wall - other);
}

/*
 * The SMs the exchanges hold while they run beside computation: NCCL one per channel
 * (alltoall); the flex kernels their own budget, --moe-flex-dispatcher-num-sms or the backend's
 * default: DeepEP 20 (Megatron-Core transformer_config.py moe_deepep_num_sms, "historical default
 * 20"), HybridEP 24 inside one NVLink domain and 8 across domains (deepseek-ai/DeepEP branch
 * hybrid-ep at 94a9f8f, csrc/hybrid_ep/config.cuh: num_sms_dispatch_api / num_sms_combine_api
 * value_or((num_of_nodes == 1) ? 24 : 8)).
 */
static double
exchange_sms(const struct spsim_hardware *hw, const struct spsim_layer_config *cfg)
{
    if (cfg->dispatcher != SPSIM_MOE_FLEX)
        return hw->nccl_channels;
    if (cfg->flex_sms)
        return cfg->flex_sms;
    if (cfg->flex_backend != SPSIM_FLEX_HYBRIDEP)
        return 20;
    uint32_t n = cfg->etp * cfg->ep;
    return cfg->flex_per_domain == 0 || cfg->flex_per_domain >= n ? 24 : 8;
}

void
spsim_ep_overlap_pair(const struct spsim_hardware *hw, const struct spsim_block_eval *be,
                      double exposed[2])
{
    double t[4][3], other;
    node_times(be, t, &other);
    double k = spsim_min_d(1.0, exchange_sms(hw, &be->block.cfg) / hw->sm_count);
    exposed[0] = pair_exposed(t, false, k, other);
    exposed[1] = pair_exposed(t, true, k, other);
}

/*
 * The combined 1F1B schedule (pipeline_parallel/schedules.py get_pp_rank_microbatches): without
 * pipelining the first forward and the last backward run alone (m − 1 pairs); interleaved, rank
 * r's warm-up runs 2(p − r − 1) + (v − 1)·g chunk forwards with g = p (Megatron's default
 * microbatch_group_size_per_vp_stage) and one more with the overlap, so that each steady step's
 * forward and backward are independent; as many backwards cool down alone. Of the m·v chunk
 * forwards the rest pair up: (m·v − w)/v micro-batches of the stage's layers.
 */
double
spsim_ep_overlap_paired(uint64_t m, uint64_t p, uint64_t v, uint64_t r)
{
    uint64_t total = m * v, warm = p == 1 ? 1 : 2 * (p - r - 1) + (v - 1) * p + 1;
    warm = warm < total ? warm : total;
    return (double)(total - warm) / (double)v;
}
