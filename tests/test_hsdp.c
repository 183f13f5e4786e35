/*
 * HSDP (--num-distributed-optimizer-instances R, --outer-dp-sharding-strategy) against closed
 * forms worked by hand, from Megatron-Core @d98e8a64: parallel_state.py splits the D = dp·cp
 * ranks into R consecutive slices of D/R (the intra groups) and builds the inter group across
 * them; the distributed optimizer (and Megatron-FSDP's DP-Shard buffers) shard over D/R
 * (distributed_data_parallel.py: intra_dp_cp_group); each bucket's shard is all-reduced across
 * the R instances after its reduce-scatter (param_and_grad_buffer.py start_grad_sync);
 * Megatron-FSDP's outer sharding (HFSDP) keeps the main weights and optimizer state over all D
 * and reduce-scatters the shard instead, gathering the weight shards back at the first
 * micro-batch (megatron_fsdp/param_and_grad_buffer.py).
 *
 * llama3-8b at tp 1 on dgx-h100 (8 GPUs a node), dp 16, R = 2: the inner groups are the two
 * nodes (8 ranks on NVLink), the outer group 2 ranks 8 apart (one per node, the network).
 */
#include <math.h>
#include <string.h>

#include "profiles/profiles.h"
#include "testutil.h"

/* tests/test_zero.c's llama3-8b counts: a layer, the whole model, the root FSDP unit. */
#define PL   218112000ull
#define P    8030261248ull
#define L    32ull
#define ROOT (525336576ull + 525340672ull)

static struct spsim_parallel
hsdp_config(uint32_t zero, uint32_t micro, uint32_t instances)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.dp = 16;
    p.seq = 1024;
    p.gbs = 16ull * micro;
    p.zero = zero;
    p.dist_opt_instances = instances;
    p.cuda_graph_impl = SPSIM_CUDA_GRAPH_FULL_ITERATION; /* no host waits (test_zero.c) */
    return p;
}

static uint64_t
ceil_n(uint64_t x, uint64_t n)
{
    return x / n + (x % n != 0);
}

/* (n−1)/n of x bytes, exact in integers (comm.c). */
static uint64_t
frac_n(uint64_t x, uint64_t n)
{
    return x / n * (n - 1) + (x % n) * (n - 1) / n;
}

START_TEST(memory_per_level)
{
    /* Sharded over the replica's D/R = 8 ranks: level 1 the 12 bytes of optimizer state
     * (fp32 master + Adam m, v), level 3 also the 2 + 4 of weights and gradients (plus two
     * units unsharded, the root unit whole, as test_zero.c). HFSDP: the 12 over all 16. */
    struct spsim_parallel p = hsdp_config(1, 1, 2);
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(r.memory.parameters_per_gpu, P);
    ck_assert_uint_eq(r.memory.weights_bytes, 2 * P);
    ck_assert_uint_eq(r.memory.gradients_bytes, 4 * P);
    ck_assert_uint_eq(r.memory.optimizer_bytes, ceil_n(12 * P, 8));
    for (int outer = 0; outer <= 1; outer++) {
        p = hsdp_config(3, 1, 2);
        p.outer_dp_shard = outer;
        r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        ck_assert_uint_eq(r.memory.weights_bytes, ceil_n(2 * P, 8) + 2 * 2 * PL + 2 * ROOT);
        ck_assert_uint_eq(r.memory.gradients_bytes, ceil_n(4 * P, 8) + 2 * 4 * PL);
        ck_assert_uint_eq(r.memory.optimizer_bytes, ceil_n(12 * P, outer ? 16 : 8));
    }
    /* The NCCL buffers of two more communicators (the intra and inter groups). */
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel one = hsdp_config(1, 1, 1);
    struct spsim_result r1 = testutil_evaluate_config("llama3-8b", "dgx-h100", &one);
    p = hsdp_config(1, 1, 2);
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(r.memory.reserved_bytes, r1.memory.reserved_bytes + 2 * hw->nccl_comm_bytes);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(bytes_per_level)
{
    /* G = 4P fp32 gradient bytes. Inner: RS (7/8)·G, AG of the bf16 weights (7/8)·2P; outer:
     * AllReduce of the shard S = G/8 across 2 ranks, 2·(1/2)·S = S. */
    uint64_t G = 4 * P, S = G / 8;
    struct spsim_parallel p = hsdp_config(1, 1, 2);
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(r.comm.dp_grad_bytes, G);
    ck_assert_uint_eq(r.comm.dp_inner_ranks, 8);
    ck_assert_uint_eq(r.comm.dp_outer_ranks, 2);
    ck_assert_uint_eq(r.comm.dp_rs_wire_bytes_per_rank, frac_n(G, 8));
    ck_assert_uint_eq(r.comm.dp_ag_wire_bytes_per_rank, frac_n(G, 8) / 2);
    ck_assert_uint_eq(r.comm.dp_outer_reduce_wire_bytes_per_rank, S);
    ck_assert_uint_eq(r.comm.dp_outer_reduce_wire_bytes_per_rank, 4015130624ull);
    ck_assert_uint_eq(r.comm.dp_outer_ag_wire_bytes_per_rank, 0);
    ck_assert_int_eq(r.comm.dp_tier, SPSIM_TIER_NVLINK);
    ck_assert_int_eq(r.comm.dp_outer_tier, SPSIM_TIER_NETWORK);
    /* HFSDP (level 3): the outer RS (1/2)·S and the weight shards' AG (1/2)·2P/8. */
    p = hsdp_config(3, 1, 2);
    p.outer_dp_shard = true;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(r.comm.dp_outer_reduce_wire_bytes_per_rank, S / 2);
    ck_assert_uint_eq(r.comm.dp_outer_ag_wire_bytes_per_rank, 2 * P / 8 / 2);
    ck_assert_uint_eq(r.comm.dp_outer_ag_wire_bytes_per_rank, 1003782656ull);
    /* Without HSDP: one group of 16, no outer level. */
    p = hsdp_config(1, 1, 1);
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(r.comm.dp_inner_ranks, 16);
    ck_assert_uint_eq(r.comm.dp_outer_reduce_wire_bytes_per_rank, 0);
    ck_assert_uint_eq(r.comm.dp_rs_wire_bytes_per_rank, frac_n(G, 16));
}
END_TEST

static double
predict(enum spsim_coll_op op, uint32_t gpus, uint32_t nodes, uint64_t bytes)
{
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_collective_prediction c;
    ck_assert_int_eq(spsim_collective_predict(hw, op, gpus, nodes, bytes, &c, NULL), SPSIM_OK);
    spsim_hardware_destroy(hw);
    return c.time_s;
}

/* dp_time.c spsim_dp_beside_compute_s, as test_zero.c's beside(). */
static double
beside(double busy, double exposed)
{
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    double k = (double)hw->nccl_channels / hw->sm_count;
    spsim_hardware_destroy(hw);
    return exposed + k * (busy - exposed);
}

START_TEST(exposed_time)
{
    uint64_t G = 4 * P;
    double rs = predict(SPSIM_COLL_REDUCE_SCATTER, 8, 1, G),
           ag = predict(SPSIM_COLL_ALL_GATHER, 8, 1, 2 * P);
    double ar = predict(SPSIM_COLL_ALL_REDUCE, 2, 2, G / 8);
    /* Level 1 without --overlap-grad-reduce: RS, then the shard's AllReduce on the same
     * stream, the AG after the step: all exposed. */
    struct spsim_parallel p = hsdp_config(1, 1, 2);
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_double_eq_tol(r.time.dp_outer_s, ar, 1e-12 * ar);
    ck_assert_double_eq_tol(r.time.dp_exposed_s, rs + ag + ar, 1e-12 * (rs + ag + ar));
    /* Level 2, m micro-batches: every micro-batch's RS beside its backward; on the last one
     * each unit's outer AllReduce follows its RS, so the L units run through backward (tb),
     * RS (ti) and AllReduce (to): the outer stream ends at max(max(B, RS) + to, tb + ti + L·to)
     * (B the micro-batch's backward), what passes B shows. */
    for (uint32_t m = 1; m <= 4; m *= 2) {
        p = hsdp_config(2, m, 2);
        r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        double B = r.time.backward_s / m, tb = B / L, ti = rs / L, to = ar / L;
        double end = fmax(fmax(B, rs) + to, tb + ti + L * to);
        ck_assert(end - B > fmax(0, rs - B)); /* the outer level shows */
        double want = (m - 1.0) * fmax(0, rs - B) + (end - B) + ag;
        want = beside(m * rs + ag + ar, want);
        ck_assert_double_eq_tol(r.time.dp_exposed_s, want, 1e-9 * want);
    }
}
END_TEST

/*
 * An MoE model (parallel_state.py:1444-1496, distributed_data_parallel.py:285-286 and 352-360 at
 * d98e8a64): the experts' buffers shard over the intra-partial expert data-parallel group,
 * edp / R consecutive ranks of the expert data-parallel group, and each expert bucket's shard
 * is all-reduced across the R instances after its reduce-scatter, as the dense ones. Mixtral
 * 8x7B at tp 1, ep 8, dp 32 (4 nodes), R = 2: edp = 32 / 8 = 4, edi = 2. A rank holds one
 * expert of each of the 32 layers, 3·4096·14336 parameters each: E = 5,637,144,576, fp32
 * gradients G = 4E. Intra group (2 ranks 8 apart, across nodes): RS (1/2)·G, AG of the bf16
 * weights (1/2)·2E; across the replicas (2 ranks 16 apart): AllReduce of S = G/2, 2·(1/2)·S = S
 * on the wire. Optimizer state 12 B: the dense parameters over the replica's 16 ranks, the
 * experts over edi = 2 (over edp = 4 without HSDP). Without --overlap-grad-reduce the experts'
 * RS, AG and AllReduce are exposed whole, the AllReduce also in dp_outer_s beside the dense
 * one's (2 ranks on 2 nodes, the dense shard 4·(P − E)/16).
 */
START_TEST(moe_groups)
{
    uint64_t E = 32ull * 3 * 4096 * 14336, G = 4 * E, S = G / 2;
    ck_assert_uint_eq(E, 5637144576ull);
    struct spsim_parallel p = hsdp_config(1, 1, 2);
    p.dp = 32;
    p.gbs = 32;
    p.ep = 8;
    struct spsim_result r = testutil_evaluate_config("mixtral-8x7b", "dgx-h100", &p);
    ck_assert_uint_eq(r.memory.expert_parameters_per_gpu, E);
    ck_assert_uint_eq(r.comm.expert_dp_grad_bytes, G);
    ck_assert_uint_eq(r.comm.expert_dp_ranks, 2);
    ck_assert_uint_eq(r.comm.expert_dp_wire_bytes_per_rank, frac_n(G, 2) + frac_n(G, 2) / 2);
    ck_assert_uint_eq(r.comm.expert_dp_outer_wire_bytes_per_rank, S);
    ck_assert_int_eq(r.comm.expert_dp_outer_tier, SPSIM_TIER_NETWORK);
    uint64_t dense = r.memory.parameters_per_gpu - E;
    ck_assert_uint_eq(r.memory.optimizer_bytes, ceil_n(12 * dense, 16) + ceil_n(12 * E, 2));
    double rs = predict(SPSIM_COLL_REDUCE_SCATTER, 2, 2, G),
           ag = predict(SPSIM_COLL_ALL_GATHER, 2, 2, 2 * E),
           ar = predict(SPSIM_COLL_ALL_REDUCE, 2, 2, S),
           dense_ar = predict(SPSIM_COLL_ALL_REDUCE, 2, 2, ceil_n(4 * dense, 16));
    ck_assert_double_eq_tol(r.time.dp_outer_s, dense_ar + ar, 1e-12 * ar);
    struct spsim_parallel one = p;
    one.dist_opt_instances = 1;
    struct spsim_result w = testutil_evaluate_config("mixtral-8x7b", "dgx-h100", &one);
    ck_assert_uint_eq(w.comm.expert_dp_ranks, 4);
    ck_assert_uint_eq(w.comm.expert_dp_outer_wire_bytes_per_rank, 0);
    ck_assert_uint_eq(w.memory.optimizer_bytes, ceil_n(12 * dense, 32) + ceil_n(12 * E, 4));
    /* The experts' part of the exposed time: what the dense part leaves (the dense one alone
     * with the experts' collectives taken out: the same configuration's dense figures). */
    double dense_rs = predict(SPSIM_COLL_REDUCE_SCATTER, 16, 2, 4 * dense),
           dense_ag = predict(SPSIM_COLL_ALL_GATHER, 16, 2, 2 * dense);
    double all = rs + ag + ar + dense_rs + dense_ag + dense_ar;
    ck_assert_double_eq_tol(r.time.dp_exposed_s, beside(all, all), 1e-9 * all);
    /* R = 8 divides dp·cp = 32 but not edp = 4 (parallel_state.py:1447-1449). */
    struct spsim_model *model = testutil_model_named("mixtral-8x7b");
    struct spsim_error err = {0};
    uint32_t warnings = 0;
    p.dist_opt_instances = 8;
    ck_assert_int_eq(spsim_parallel_check(model, NULL, &p, &warnings, &err), SPSIM_ECONFIG);
    ck_assert_str_eq(err.message, "parallel config: field 'dist_opt_instances': Expert data "
                                  "parallel size should be divisible by partial DistOpt shard "
                                  "factor (edp = 4, 8 instances)");
    spsim_model_destroy(model);
}
END_TEST

/*
 * Megatron-FSDP's HSDP of an MoE model (Megatron-Core @d98e8a64): mcore_fsdp_adapter.py:406-415
 * meshes the experts as [outer_fsdp_dp, intra-partial expert dp, etp], so their DP-Shard
 * buffers (weights, gradients, and the optimizer state without the outer sharding) shard over
 * edi = edp / R, the optimizer state with --outer-dp-sharding-strategy optim over all edp
 * (megatron_fsdp/param_and_grad_buffer.py:2594-2603: get_dp_group(is_expert_parallel)); on the
 * last micro-batch each expert unit's shard is all-reduced across the R replicas, or
 * reduce-scattered and its bf16 weight shard gathered back at the first micro-batch
 * (param_and_grad_buffer.py:4138-4200, 4541-4560). Mixtral 8x7B as moe_groups: tp 1, ep 8,
 * dp 32 (4 nodes), R = 2, edp = 4, edi = 2; E = 5,637,144,576 expert parameters a rank.
 */
static struct spsim_parallel
fsdp_moe_config(uint32_t zero, uint32_t micro, uint32_t instances, bool outer)
{
    struct spsim_parallel p = hsdp_config(zero, micro, instances);
    p.dp = 32;
    p.gbs = 32ull * micro;
    p.ep = 8;
    p.outer_dp_shard = outer;
    return p;
}

#define MIXTRAL_E 5637144576ull /* 32 layers · 3·4096·14336, one expert each at ep 8 */

START_TEST(fsdp_moe_memory)
{
    /* Level 3: weights 2 B, gradients 4 B, optimizer 12 B a parameter; the dense N over the
     * replica's 16 ranks (32 without HSDP), the experts' E over edi = 2 (edp = 4 without
     * HSDP), the outer sharding putting the 12 B over 32 and 4. The two gathered units and
     * the root unit are the same in the three, so the differences are the shards':
     * weights 2N/16 − 2N/32 + 2E/2 − 2E/4, gradients 4N/16 − 4N/32 + 4E/2 − 4E/4. */
    uint64_t E = MIXTRAL_E;
    struct spsim_parallel p = fsdp_moe_config(3, 1, 2, false);
    struct spsim_result r = testutil_evaluate_config("mixtral-8x7b", "dgx-h100", &p);
    p = fsdp_moe_config(3, 1, 2, true);
    struct spsim_result o = testutil_evaluate_config("mixtral-8x7b", "dgx-h100", &p);
    p = fsdp_moe_config(3, 1, 1, false);
    struct spsim_result w = testutil_evaluate_config("mixtral-8x7b", "dgx-h100", &p);
    ck_assert_uint_eq(r.memory.expert_parameters_per_gpu, E);
    uint64_t N = r.memory.parameters_per_gpu - E;
    ck_assert_uint_eq(r.memory.optimizer_bytes, ceil_n(12 * N, 16) + ceil_n(12 * E, 2));
    ck_assert_uint_eq(o.memory.optimizer_bytes, ceil_n(12 * N, 32) + ceil_n(12 * E, 4));
    ck_assert_uint_eq(w.memory.optimizer_bytes, ceil_n(12 * N, 32) + ceil_n(12 * E, 4));
    ck_assert_uint_eq(r.memory.weights_bytes - w.memory.weights_bytes,
                      ceil_n(2 * N, 16) - ceil_n(2 * N, 32) + ceil_n(2 * E, 2) - ceil_n(2 * E, 4));
    ck_assert_uint_eq(r.memory.gradients_bytes - w.memory.gradients_bytes,
                      ceil_n(4 * N, 16) - ceil_n(4 * N, 32) + ceil_n(4 * E, 2) - ceil_n(4 * E, 4));
    ck_assert_uint_eq(o.memory.weights_bytes, r.memory.weights_bytes);
    ck_assert_uint_eq(o.memory.gradients_bytes, r.memory.gradients_bytes);
}
END_TEST

START_TEST(fsdp_moe_bytes)
{
    /* fp32 gradients G = 4E, the intra shard S = G/2 = 2E. No outer sharding: AllReduce across
     * 2 ranks, 2·(1/2)·S = 2E = 11,274,289,152 B. Outer sharding: ReduceScatter (1/2)·S = E,
     * and the bf16 weight shard 2E/2 = E gathered, (1/2)·E = 2,818,572,288 B. The 2 ranks are
     * etp·ep·edi = 16 apart: two nodes (the network). */
    uint64_t E = MIXTRAL_E, S = 4 * E / 2;
    struct spsim_parallel p = fsdp_moe_config(3, 1, 2, false);
    struct spsim_result r = testutil_evaluate_config("mixtral-8x7b", "dgx-h100", &p);
    ck_assert_uint_eq(r.comm.expert_dp_ranks, 2);
    ck_assert_uint_eq(r.comm.expert_dp_grad_bytes, 4 * E);
    ck_assert_uint_eq(r.comm.expert_dp_outer_wire_bytes_per_rank, S);
    ck_assert_uint_eq(r.comm.expert_dp_outer_wire_bytes_per_rank, 11274289152ull);
    ck_assert_uint_eq(r.comm.expert_dp_outer_ag_wire_bytes_per_rank, 0);
    ck_assert_int_eq(r.comm.expert_dp_outer_tier, SPSIM_TIER_NETWORK);
    /* dp_outer_s: the dense shard's AllReduce (4N/16 B) and the experts' (S), 2 ranks on 2
     * nodes each. */
    uint64_t N = r.memory.parameters_per_gpu - E;
    double want = predict(SPSIM_COLL_ALL_REDUCE, 2, 2, ceil_n(4 * N, 16)) +
                  predict(SPSIM_COLL_ALL_REDUCE, 2, 2, S);
    ck_assert_double_eq_tol(r.time.dp_outer_s, want, 1e-12 * want);
    p = fsdp_moe_config(3, 1, 2, true);
    r = testutil_evaluate_config("mixtral-8x7b", "dgx-h100", &p);
    ck_assert_uint_eq(r.comm.expert_dp_outer_wire_bytes_per_rank, S / 2);
    ck_assert_uint_eq(r.comm.expert_dp_outer_ag_wire_bytes_per_rank, 2 * E / 2 / 2);
    ck_assert_uint_eq(r.comm.expert_dp_outer_ag_wire_bytes_per_rank, 2818572288ull);
    /* HFSDP: the ReduceScatters of the dense shard and of S, the AllGathers of the dense
     * weight shard 2N/16 and of the experts' 2E/2. */
    want = predict(SPSIM_COLL_REDUCE_SCATTER, 2, 2, ceil_n(4 * N, 16)) +
           predict(SPSIM_COLL_ALL_GATHER, 2, 2, ceil_n(2 * N, 16)) +
           predict(SPSIM_COLL_REDUCE_SCATTER, 2, 2, S) +
           predict(SPSIM_COLL_ALL_GATHER, 2, 2, 2 * E / 2);
    ck_assert_double_eq_tol(r.time.dp_outer_s, want, 1e-12 * want);
}
END_TEST

START_TEST(fsdp_moe_exposed)
{
    /* Level 2 (optim_grads), m micro-batches, tp = pp = cp = 1, seq 8192: every micro-batch's
     * RS (the dense 4N over the replica's 16 ranks on 2 nodes, the experts' 4E over edi = 2 on
     * 2 nodes) runs beside its backward B; on the last one each level's outer AllReduce (the
     * dense shard 4N/16, the experts' 4E/2) follows its RS unit by unit through the L units
     * (outer_last_exposed: the stream ends at max(max(B, RS) + AR/L, B/L + RS/L + AR)). Here B
     * exceeds RS + AR on both levels (asserted from its lower bound, the backward's compute), so
     * each shows by its last unit's AR/L, and the bf16 weights' AllGathers after the step (2N
     * over 16, 2E over 2) in full: exposed = AG + AG_e + (AR + AR_e)/L, then beside(). */
    uint64_t E = MIXTRAL_E;
    for (uint32_t m = 1; m <= 2; m++) {
        struct spsim_parallel p = fsdp_moe_config(2, m, 2, false);
        p.seq = 8192;
        struct spsim_result r = testutil_evaluate_config("mixtral-8x7b", "dgx-h100", &p);
        uint64_t N = r.memory.parameters_per_gpu - E;
        double rs = predict(SPSIM_COLL_REDUCE_SCATTER, 16, 2, 4 * N),
               ag = predict(SPSIM_COLL_ALL_GATHER, 16, 2, 2 * N),
               ar = predict(SPSIM_COLL_ALL_REDUCE, 2, 2, ceil_n(4 * N, 16));
        double rs_e = predict(SPSIM_COLL_REDUCE_SCATTER, 2, 2, 4 * E),
               ag_e = predict(SPSIM_COLL_ALL_GATHER, 2, 2, 2 * E),
               ar_e = predict(SPSIM_COLL_ALL_REDUCE, 2, 2, 4 * E / 2);
        double lo = (r.time.backward_s + r.time.recompute_s) / m;
        ck_assert(lo * (1 - 1.0 / L) >= fmax(rs, rs_e) + fmax(ar, ar_e) * (1 - 1.0 / L));
        double busy = m * (rs + rs_e) + ag + ag_e + ar + ar_e;
        double want = beside(busy, ag + ag_e + (ar + ar_e) / L);
        ck_assert_double_eq_tol(r.time.dp_exposed_s, want, 1e-9 * want);
    }
}
END_TEST

START_TEST(megatron_rules)
{
    struct spsim_model *model = testutil_model_named("llama3-8b");
    struct spsim_error err = {0};
    uint32_t warnings = 0;
    struct spsim_parallel p = hsdp_config(1, 1, 3);
    ck_assert_int_eq(spsim_parallel_check(model, NULL, &p, &warnings, &err), SPSIM_ECONFIG);
    ck_assert_str_eq(err.message, "parallel config: field 'dist_opt_instances': Data parallel "
                                  "size should be divisible by partial DistOpt shard factor "
                                  "(dp·cp = 16·1, 3 instances)");
    p = hsdp_config(0, 1, 2);
    ck_assert_int_eq(spsim_parallel_check(model, NULL, &p, &warnings, &err), SPSIM_ECONFIG);
    ck_assert_str_eq(err.message, "parallel config: field 'dist_opt_instances': Partial DistOpt "
                                  "cannot be used without DistOpt");
    p = hsdp_config(2, 1, 2);
    p.outer_dp_shard = true;
    ck_assert_int_eq(spsim_parallel_check(model, NULL, &p, &warnings, &err), SPSIM_ECONFIG);
    ck_assert_str_eq(err.message, "parallel config: field 'outer_dp_shard': [Megatron-FSDP] "
                                  "Optimizer fully-sharded HFSDP is only supported with "
                                  "full-sharding on DP-Shard.");
    p = hsdp_config(1, 1, 16); /* one rank a replica: accepted, the shard is whole */
    ck_assert_int_eq(spsim_parallel_check(model, NULL, &p, &warnings, &err), SPSIM_OK);
    spsim_model_destroy(model);
}
END_TEST

/* The launch line's and a Megatron-Bridge recipe's flags: the same configuration. */
START_TEST(imported)
{
    static const char line[] =
        "torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
        "--num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
        "--vocab-size 1000 --bf16 --micro-batch-size 1 --global-batch-size 16 "
        "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params "
        "--use-distributed-optimizer --num-distributed-optimizer-instances 2 "
        "--outer-dp-sharding-strategy optim";
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(line, strlen(line), "launch.sh", &mc, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert(mc.par.dist_opt_instances == 2 && mc.par.outer_dp_shard && mc.par.zero == 3);
    spsim_model_destroy(mc.model);
    static const char yaml[] = "model:\n  num_layers: 2\n  hidden_size: 64\n"
                               "  num_attention_heads: 4\n  seq_length: 128\n  vocab_size: 1000\n"
                               "  bf16: true\nddp:\n  use_distributed_optimizer: true\n"
                               "  num_distributed_optimizer_instances: 4\n"
                               "  outer_dp_sharding_strategy: no_shard\n";
    ck_assert_msg(spsim_megatron_parse(yaml, strlen(yaml), "x.yaml", &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert(mc.par.dist_opt_instances == 4 && !mc.par.outer_dp_shard);
    ck_assert(mc.par.distributed_optimizer);
    spsim_model_destroy(mc.model);
    static const char bad[] = "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 64 "
                              "--num-attention-heads 4 --seq-length 128 "
                              "--max-position-embeddings 128 --vocab-size 1000 --bf16 "
                              "--outer-dp-sharding-strategy optim_grads";
    ck_assert_int_ne(spsim_megatron_parse(bad, strlen(bad), "launch.sh", &mc, &err), SPSIM_OK);
    ck_assert_ptr_nonnull(strstr(err.message, "--outer-dp-sharding-strategy"));
}
END_TEST

static Suite *
hsdp_suite(void)
{
    Suite *s = suite_create("hsdp");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, memory_per_level);
    tcase_add_test(tc, bytes_per_level);
    tcase_add_test(tc, exposed_time);
    tcase_add_test(tc, moe_groups);
    tcase_add_test(tc, fsdp_moe_memory);
    tcase_add_test(tc, fsdp_moe_bytes);
    tcase_add_test(tc, fsdp_moe_exposed);
    tcase_add_test(tc, megatron_rules);
    tcase_add_test(tc, imported);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(hsdp_suite());
}
