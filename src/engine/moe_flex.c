/*
 * The flex token dispatcher (Megatron-Core token_dispatcher.py MoEFlexTokenDispatcher): one
 * communication group over the expert-TP×EP ranks (n = etp·ep; the routing map is replicated
 * over the etp ranks of each EP rank, _initialize_metadata), fused kernels that read each token
 * once and send it once per destination RANK (not per expert copy), in BF16 (fused_a2a.py:
 * DeepEP is given the bf16 hidden states, HybridEP's fp8_dispatch is forced off).
 *
 * Across RDMA domains (DeepEP internode.cu, HybridEP's hierarchical design) a token crosses
 * the network once per destination DOMAIN, to the rank of the same local index there, which
 * forwards it over NVLink to the ranks of its domain that need it; combine reverses the path,
 * reducing inside the domain before the RDMA hop. With uniform routing (the balanced
 * expectation, as spsim's other dispatchers) a rank receives a given token with probability
 * p_rank and a domain with p_domain, so per source rank and T tokens, B bytes per record:
 *   NVLink: T·B·p_rank·(n − N)   (every destination rank but the forwarders, one per domain)
 *   RDMA:   T·B·p_domain·(N − 1) (every destination domain but its own)
 * where N = n/g domains of g ranks. In one domain (N = 1) that is T·B·p_rank·(n − 1).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "collective_model.h"
#include "moe.h"

/* DeepEP's normal kernels pair each RDMA rank with at most 8 NVLink peers
 * (csrc/kernels/legacy/internode.cu: LEGACY_NUM_MAX_NVL_PEERS == 8); up to 8 ranks inside one
 * NVLink domain run the intranode kernels. */
#define SPSIM_DEEPEP_NVL_PEERS 8

/* C(a, k) / C(b, k) for b >= a: the chance that k distinct draws from b miss b − a of them. */
static double
choose_ratio(double a, double b, uint32_t k)
{
    double r = 1;
    for (uint32_t t = 0; t < k; t++) {
        if (a - t <= 0)
            return 0;
        r *= (a - t) / (b - t);
    }
    return r;
}

static double
log_choose(double n, double k)
{
    return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1);
}

/*
 * The chance that a token's k distinct experts all miss a set of `size` contiguous experts
 * (a rank's, a domain's). Without group-limited routing: C(E − size, k)/C(E, k). With G groups
 * of q = E/G experts of which the router keeps M (router.py group_limited_topk: the groups
 * first, then the k experts among their M·q), uniform over the groups and then over those
 * experts: the set spans j groups with o experts in each (j = size/q, o = q when it holds whole
 * groups; j = 1, o = size inside one; a set that straddles groups is taken as j = ⌈size/q⌉
 * groups of size/j each); i of its groups are kept with the hypergeometric probability
 * C(j, i)·C(G − j, M − i)/C(G, M), and then the k experts miss its i·o of the M·q.
 */
static double
miss_prob(uint32_t E, uint32_t k, uint32_t G, uint32_t M, uint64_t size)
{
    if (G <= 1 || M >= G)
        return choose_ratio((double)E - (double)size, E, k);
    uint64_t q = E / G, j = (size + q - 1) / q;
    double o = (double)size / (double)j, pool = (double)M * (double)q, miss = 0;
    for (uint64_t i = 0; i <= j && i <= M; i++) {
        if (M - i > G - j)
            continue;
        double hyp = exp(log_choose(j, i) + log_choose(G - j, M - i) - log_choose(G, M));
        miss += hyp * choose_ratio(pool - (double)i * o, pool, k);
    }
    return miss;
}

/* Bytes of one token's record to one destination rank: [0] dispatch, [1] its backward (a
 * combine of the gradients), [2] combine, [3] its backward (a dispatch of the gradients).
 * DeepEP (internode.cu get_num_bytes_per_token, 16-byte aligned): the bf16 hidden state, an
 * 8-byte SourceMeta, the top-k' int32 indices and fp32 weights (k' = etp·k: the routing map is
 * widened over etp); the combine carries the weights' slot only, its backward no top-k.
 * HybridEP (csrc/hybrid_ep/config.cuh: the dispatch stages a token with the fp32 probabilities
 * of the destination domain's experts, L·g of them; the combine is always 16-bit): 2h + 4·L·g,
 * and 2h for the combine and the dispatch of gradients. */
static void
record_bytes(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg, uint64_t L,
             uint64_t g, double rec[4])
{
    double h2 = 2.0 * m->hidden;
    if (cfg->flex_backend == SPSIM_FLEX_HYBRIDEP) {
        double probs = 4.0 * (double)L * (double)g;
        rec[0] = rec[1] = h2 + probs;
        rec[2] = rec[3] = h2;
        return;
    }
    uint64_t k = (uint64_t)cfg->etp * m->experts_per_token, h = 2ull * m->hidden;
    rec[0] = (double)((h + 8 + 8 * k + 15) / 16 * 16);
    rec[1] = rec[2] = (double)((h + 8 + 4 * k + 15) / 16 * 16);
    rec[3] = (double)((h + 8 + 15) / 16 * 16);
}

void
spsim_moe_flex_traffic(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                       uint64_t T, uint64_t rows, struct spsim_moe_flex_traffic *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t n = (uint64_t)cfg->etp * cfg->ep, E = m->experts, L = E / cfg->ep;
    uint64_t g = cfg->flex_per_domain && cfg->flex_per_domain < n ? cfg->flex_per_domain : n;
    uint64_t N = (n + g - 1) / g;
    /* A domain holds g/etp EP ranks' experts, or part of one EP rank's etp shards. */
    uint64_t domain_experts = g >= cfg->etp ? L * (g / cfg->etp) : L;
    uint32_t G = m->router_num_groups, M = m->router_group_topk, k = m->experts_per_token;
    out->ranks = (uint32_t)n;
    out->per_domain = (uint32_t)g;
    out->domains = (uint32_t)N;
    out->p_rank = 1.0 - miss_prob((uint32_t)E, k, G, M, L);
    out->p_domain = N > 1 ? 1.0 - miss_prob((uint32_t)E, k, G, M, domain_experts) : 1.0;
    /* Random routing: the most-loaded rank receives `load` times the mean of the n·T tokens,
     * each reaching it with probability p_rank (moe_imbalance.c); bytes on its receive side. */
    double load = cfg->routing == SPSIM_MOE_ROUTING_RANDOM && cfg->ep > 1
                      ? spsim_moe_rank_factor(out->p_rank, (double)n * (double)T,
                                              spsim_moe_expected_max(cfg->ep), m->capacity_factor)
                      : 1.0;
    double recv = (double)n * (double)T * out->p_rank * load;
    out->received = recv < (double)rows ? (uint64_t)llround(recv) : rows;
    out->domain_sends = N > 1 ? (uint64_t)llround((double)T * out->p_domain * (double)N * load) : 0;
    double rec[4], nvl = (double)T * out->p_rank * (double)(n - N) * load;
    double rdma = (double)T * out->p_domain * (double)(N - 1) * load;
    record_bytes(m, cfg, L, g, rec);
    for (int d = 0; d < 2; d++) {
        out->dispatch_nvlink[d] = (uint64_t)llround(nvl * rec[d]);
        out->dispatch_rdma[d] = (uint64_t)llround(rdma * rec[d]);
        out->combine_nvlink[d] = (uint64_t)llround(nvl * rec[2 + d]);
        out->combine_rdma[d] = (uint64_t)llround(rdma * rec[2 + d]);
    }
}

uint32_t
spsim_moe_flex_per_domain(const struct spsim_hardware *hw, const struct spsim_layer_config *cfg)
{
    uint32_t n = cfg->etp * cfg->ep;
    if (!hw || n <= 1)
        return n;
    uint32_t g = spsim_group_place(hw, n, 1).per_domain;
    if (cfg->flex_backend == SPSIM_FLEX_DEEPEP && g > SPSIM_DEEPEP_NVL_PEERS)
        g = SPSIM_DEEPEP_NVL_PEERS;
    return g ? g : 1;
}

enum spsim_tier
spsim_moe_flex_tier(const struct spsim_hardware *hw, const struct spsim_parallel *p)
{
    /* etp unset is tp (spsim_moe_etp; moe.c calls this file, so not from here) */
    struct spsim_layer_config cfg = {.ep = p->ep, .etp = p->etp ? p->etp : p->tp};
    cfg.flex_backend = p->moe_flex_backend;
    uint32_t n = cfg.ep * cfg.etp, g = spsim_moe_flex_per_domain(hw, &cfg);
    return n <= 1   ? SPSIM_TIER_LOCAL
           : g >= n ? SPSIM_TIER_NVLINK
           : g == 1 ? SPSIM_TIER_NETWORK
                    : SPSIM_TIER_HIERARCHICAL;
}

/*
 * Time of one flex step: the NVLink and RDMA transfers run together (DeepEP's forwarder warps
 * and HybridEP's pipeline overlap them), so the slower link sets the time, after one base
 * latency of the outer tier: max(nvlink / busbw_a2a·eff, rdma / NIC share·eff). The NVLink
 * rate is the profile's all-to-all busbw (bytes a rank sends to others over time); the NIC
 * share is its NICs' achievable bandwidth over its GPUs.
 *
 * HybridEP's kernels do not reach the links' rates: where the profile gives its measured
 * dispatch and combine rates (gpu.hybridep_*_GBps: DeepEP hybrid-ep
 * docs/README_Hybrid-EP.md's "Torch API" columns, the call Megatron's fused_a2a.py makes,
 * timed by tests/test_hybrid_ep.py with the bytes nvl_dispatch = dispatched_hidden.numel()·2,
 * the hidden rows a rank receives, its own included), the call takes at least those bytes
 * over that rate, latency and API overhead included: max(latency + links, received·2h / rate).
 * Across RDMA domains the same call's IB rates (gpu.hybridep_rdma_*_GBps) count 2h bytes per
 * destination domain a token reaches, its own domain included (tests/utils.py
 * count_rdma_send_from_routing_map, "to align with the implementation in the DeepEP"), so they
 * bound the call by T·p_domain·N·2h / rate, the larger of the two kernel bounds applying.
 * The forward dispatch and the combine's backward run the dispatch kernel, the others the
 * combine kernel. DeepEP (no such field) keeps the links' rates. Left out: the benchmark passes
 * the previous call's handle, so its time holds no metadata preprocessing (the routing maps'
 * exchange Megatron's calls, without a handle, run each time).
 */
int
spsim_moe_flex_time(const struct spsim_hardware *hw, const struct spsim_op *op, bool backward,
                    struct spsim_coll_time *out)
{
    memset(out, 0, sizeof(*out));
    out->algo = SPSIM_NCCL_ALGO_COUNT;
    out->proto = SPSIM_NCCL_PROTO_COUNT;
    uint64_t total = backward ? op->cp_bwd_message_bytes : op->message_bytes;
    double rdma = (double)op->flex_rdma[backward], nvl = (double)(total - op->flex_rdma[backward]);
    out->tier = rdma > 0  ? (nvl > 0 ? SPSIM_TIER_HIERARCHICAL : SPSIM_TIER_NETWORK)
                : nvl > 0 ? SPSIM_TIER_NVLINK
                          : SPSIM_TIER_LOCAL;
    if (out->tier == SPSIM_TIER_LOCAL)
        return SPSIM_OK;
    double eff_nv = 1, eff_net = 1;
    int rc = spsim_curve_eval(hw->nvlink.curve[SPSIM_COLL_ALL_TO_ALL], nvl, &eff_nv);
    if (rc == SPSIM_OK)
        rc = spsim_curve_eval(hw->network.curve[SPSIM_COLL_ALL_TO_ALL], rdma, &eff_net);
    if (rc != SPSIM_OK)
        return rc;
    double nv_bw = spsim_nvlink_peak_Bps(hw, SPSIM_COLL_ALL_TO_ALL, op->cp_group) * eff_nv;
    double nic_bw = hw->nic_achievable_Bps * hw->nics_per_node / hw->gpus_per_node * eff_net /
                    hw->oversubscription;
    double t_nv = nvl > 0 ? nvl / nv_bw : 0, t_net = rdma > 0 ? rdma / nic_bw : 0;
    out->latency_s = rdma > 0 ? hw->network.base_latency_s : hw->nvlink.base_latency_s;
    out->wire_bytes = nvl + rdma;
    out->nvlink_bytes = nvl;
    out->network_bytes = rdma;
    double transfer = spsim_max_d(t_nv, t_net);
    int which = op->flex_kernel ^ backward;
    double rate = hw->hybridep_Bps[which], rate_rdma = hw->hybridep_rdma_Bps[which];
    double kernel = spsim_max_d(rate > 0 ? (double)op->flex_recv_bytes / rate : 0,
                                rate_rdma > 0 ? (double)op->flex_domain_bytes / rate_rdma : 0);
    out->time_s = spsim_max_d(out->latency_s + transfer, kernel);
    transfer = out->time_s - out->latency_s;
    out->bandwidth_Bps = transfer > 0 ? out->wire_bytes / transfer : 0;
    return isfinite(out->time_s) ? SPSIM_OK : SPSIM_ENUMERIC;
}
