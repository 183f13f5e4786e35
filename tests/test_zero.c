/*
 * Sharded data parallelism (--zero 1|2|3, Megatron's distributed optimizer and Megatron-FSDP's
 * optim_grads, optim_grads_params) against closed forms worked by hand: what each level keeps
 * in HBM, the bytes it moves per iteration, the exposed time of its collectives, the
 * optimizer step, and Megatron's rules.
 */
#include <math.h>
#include <string.h>

#include "profiles/profiles.h"
#include "testutil.h"

/* llama3-8b at tp 1 (models/llama3-8b.json): one layer holds QKV 4096·6144, the projection
 * 4096·4096, FC1 (gate and up) 4096·28672, FC2 14336·4096 and two RMSNorm weights of 4096:
 * 218,112,000 parameters; the embedding and the untied output layer 128256·4096 each, plus the
 * final norm. The whole model: 32 layers + 525,336,576 + 525,340,672 = 8,030,261,248. */
#define PL 218112000ull
#define P  8030261248ull
#define L  32ull
/* Megatron-FSDP's root unit, the parameters outside every transformer layer (FSDP unit,
 * mcore_fsdp_adapter.py): the embedding 128256·4096 = 525,336,576 and the output layer with the
 * final norm 525,340,672. At level 3 they are gathered by their first forward and kept
 * (param_and_grad_buffer.py: the all-gather pipeline preserves the non-unit buckets), bf16, 2 B
 * each beside their shard: at tp 1 the root is almost 5 layers. */
#define EMB  525336576ull
#define OUT  525340672ull
#define ROOT (EMB + OUT)

static struct spsim_parallel
zero_config(uint32_t zero, uint32_t micro)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.dp = 8;
    p.seq = 1024;
    p.gbs = 8ull * micro;
    p.zero = zero;
    return p;
}

static uint64_t
ceil8(uint64_t x)
{
    return x / 8 + (x % 8 != 0);
}

/* (D−1)/D of x bytes, D = 8, exact in integers. */
static uint64_t
frac8(uint64_t x)
{
    return x / 8 * 7 + (x % 8) * 7 / 8;
}

START_TEST(memory_per_level)
{
    /* theoretical_memory_usage.py and megatron_fsdp.py: weights 2, gradients 4 (fp32) or 2,
     * optimizer 12 bytes per parameter; level 1 shards the 12, level 2 the gradients too, level
     * 3 the weights too; a sharded buffer keeps two layers (FSDP units) unsharded, and level
     * 3 the root unit whole. */
    for (uint32_t z = 0; z <= 3; z++)
        for (int fp32 = 0; fp32 <= 1; fp32++) {
            struct spsim_parallel p = zero_config(z, 1);
            p.grad_reduce_in_fp32 = fp32;
            struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
            uint64_t g = fp32 ? 4 : 2;
            ck_assert_uint_eq(r.memory.parameters_per_gpu, P);
            ck_assert_uint_eq(r.memory.weights_bytes,
                              z >= 3 ? ceil8(2 * P) + 2 * 2 * PL + 2 * ROOT : 2 * P);
            ck_assert_uint_eq(r.memory.gradients_bytes, z >= 2 ? ceil8(g * P) + 2 * g * PL : g * P);
            /* With 16-bit gradients the optimizer keeps fp32 copies: 16 bytes (Megatron's
             * dist_optimizer.md, fp16/fp16: 4 + 16/d). */
            uint64_t o = fp32 ? 12 : 16;
            ck_assert_uint_eq(r.memory.optimizer_bytes, z >= 1 ? ceil8(o * P) : o * P);
            ck_assert_uint_eq(r.memory.total_bytes,
                              r.memory.weights_bytes + r.memory.gradients_bytes +
                                  r.memory.optimizer_bytes + r.memory.activation_first_stage_bytes);
        }
    /* The distributed optimizer is level 1; cp 2 × dp 4 shards like dp 8. */
    struct spsim_parallel p = zero_config(0, 1);
    p.distributed_optimizer = true;
    struct spsim_result a = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(a.memory.optimizer_bytes, ceil8(12 * P));
    p = zero_config(3, 1);
    p.dp = 4;
    p.cp = 2;
    p.gbs = 4;
    a = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(a.memory.weights_bytes, ceil8(2 * P) + 4 * PL + 2 * ROOT);
    ck_assert_uint_eq(a.memory.gradients_bytes, ceil8(4 * P) + 8 * PL);
}
END_TEST

START_TEST(bytes_per_level)
{
    for (uint32_t m = 1; m <= 4; m *= 2) {
        struct spsim_parallel p = zero_config(1, m);
        struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        /* ZeRO-1: one RS of the fp32 gradients, one AG of the bf16 weights. */
        ck_assert_uint_eq(r.comm.dp_rs_wire_bytes_per_rank, frac8(4 * P));
        ck_assert_uint_eq(r.comm.dp_ag_wire_bytes_per_rank, frac8(4 * P) / 2);
        ck_assert_uint_eq(r.comm.dp_wire_bytes_per_rank, frac8(4 * P) + frac8(4 * P) / 2);
        /* ZeRO-2: the RS after every micro-batch (grad_reduce_every_bprop), one AG. */
        p = zero_config(2, m);
        r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        ck_assert_uint_eq(r.comm.dp_rs_wire_bytes_per_rank, m * frac8(4 * P));
        ck_assert_uint_eq(r.comm.dp_ag_wire_bytes_per_rank, frac8(2 * P));
        /* ZeRO-3: each layer's bf16 weights gathered before its forward and its backward,
         * every micro-batch, and the root unit's once an iteration. */
        p = zero_config(3, m);
        r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        ck_assert_uint_eq(r.comm.dp_rs_wire_bytes_per_rank, m * frac8(4 * P));
        uint64_t ag = 2 * m * L * frac8(2 * PL) + frac8(2 * ROOT);
        ck_assert_uint_eq(r.comm.dp_ag_wire_bytes_per_rank, ag);
        ck_assert_uint_eq(r.comm.dp_wire_bytes_per_rank, m * frac8(4 * P) + ag);
        /* bf16 gradients halve the RS. */
        p.grad_reduce_in_fp32 = false;
        r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        ck_assert_uint_eq(r.comm.dp_grad_bytes, 2 * P);
        ck_assert_uint_eq(r.comm.dp_rs_wire_bytes_per_rank, m * frac8(2 * P));
    }
}
END_TEST

static double
predict(enum spsim_coll_op op, uint64_t bytes)
{
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_collective_prediction c;
    ck_assert_int_eq(spsim_collective_predict(hw, op, 8, 1, bytes, &c, NULL), SPSIM_OK);
    spsim_hardware_destroy(hw);
    return c.time_s;
}

/* The exposed DP time when `exposed` of `busy` seconds of collectives shows: the hidden rest
 * holds NCCL's channels (dgx-h100 nvlink.nccl_channels of its gpu.sm_count SMs), so the
 * computation beside it lasts that share of it longer (dp_time.c spsim_dp_beside_compute_s). */
static double
beside(double busy, double exposed)
{
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    double k = (double)hw->nccl_channels / hw->sm_count;
    spsim_hardware_destroy(hw);
    return exposed + k * (busy - exposed);
}

START_TEST(exposed_time_per_level)
{
    /* tp 1, pp 1, cp 1: the gradient RS is the only flow beside the backward, so it takes its
     * time alone; each micro-batch's backward is backward_s / m (no recompute, no TP; under
     * full-iteration CUDA graphs, so that no block waits for the host's launches, host.c). */
    double rs = predict(SPSIM_COLL_REDUCE_SCATTER, 4 * P),
           ag = predict(SPSIM_COLL_ALL_GATHER, 2 * P);
    double agl = predict(SPSIM_COLL_ALL_GATHER, 2 * PL);
    double age = predict(SPSIM_COLL_ALL_GATHER, 2 * EMB),
           ago = predict(SPSIM_COLL_ALL_GATHER, 2 * OUT);
    for (uint32_t m = 1; m <= 4; m *= 2) {
        struct spsim_parallel p = zero_config(1, m);
        p.cuda_graph_impl = SPSIM_CUDA_GRAPH_FULL_ITERATION;
        struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        ck_assert_double_eq_tol(r.time.dp_exposed_s, rs + ag, 1e-12 * (rs + ag));
        double bwd = r.time.backward_s / m, fwd = r.time.forward_s / m;
        double hidden_rs = m * fmax(0, rs - bwd);
        ck_assert(hidden_rs > 0); /* the test must see the per-micro-batch RS */
        /* A Megatron-Bridge recipe's DDP at dp > 1 with comm_overlap.overlap_grad_reduce false:
         * comm_overlap.py:576-579 @067f987 turns overlap_param_gather on, which Megatron-LM's
         * arguments.py:1028 refuses and Megatron-Core's DDP runs: the RS after the backward
         * whole, the AG behind the next iteration's first forward, max(0, ag − fwd); busy:
         * both. */
        p.overlap_param_gather = true;
        p.bridge_ddp = true;
        r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        ck_assert_double_eq_tol(r.time.param_gather_exposed_s, fmax(0, ag - fwd), 1e-12 * ag);
        double want = beside(rs + ag, rs + fmax(0, ag - fwd));
        ck_assert_double_eq_tol(r.time.dp_exposed_s, want, 1e-9 * want);
        ck_assert(fwd > 0); /* the forward hides some of it */
        p = zero_config(2, m);
        p.cuda_graph_impl = SPSIM_CUDA_GRAPH_FULL_ITERATION;
        r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        /* Busy: every micro-batch's RS and the AG after the step. */
        want = beside(m * rs + ag, hidden_rs + ag);
        ck_assert_double_eq_tol(r.time.dp_exposed_s, want, 1e-9 * want);
        /* --overlap-param-gather: the AG behind the next iteration's first forward. */
        p.overlap_param_gather = true;
        r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        want = beside(m * rs + ag, hidden_rs + fmax(0, ag - fwd));
        ck_assert_double_eq_tol(r.time.dp_exposed_s, want, 1e-9 * want);
        /* ZeRO-3: per micro-batch, the first layer's gather of each pass in full, the other
         * L−1 behind the previous layer's pass; once an iteration the root unit's, the
         * embedding's in full (first in the forward), the output layer's behind the last
         * layer's forward. */
        p = zero_config(3, m);
        p.cuda_graph_impl = SPSIM_CUDA_GRAPH_FULL_ITERATION;
        r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
        double lf = r.time.layer_forward_s, lb = r.time.layer_backward_s;
        want = hidden_rs + m * (2 * agl + (L - 1.0) * (fmax(0, agl - lf) + fmax(0, agl - lb))) +
               age + fmax(0, ago - lf);
        /* Busy: the RSs, each layer's two gathers every micro-batch, the root unit's two. */
        want = beside(m * rs + m * 2.0 * L * agl + age + ago, want);
        ck_assert(ago > lf); /* the output layer's gather shows */
        ck_assert_double_eq_tol(r.time.dp_exposed_s, want, 1e-9 * want);
    }
}
END_TEST

START_TEST(optimizer_step_per_level)
{
    /* Bytes of the step per parameter (optimizer.py, fused Adam): gradient norm read g, Adam
     * g + 24 (+2 bf16 weight written), zero_grad g, D = 8: level 0: 4 + 30 + 4 = 38;
     * 1: 4 + 28/8 + 2 + 4 = 13.5; 2: 0.5 + 3.5 + 2 + 0.5 = 6.5; 3: 0.5 + 3.5 + 0.25 + 0.5 =
     * 4.75; level 1 with bf16 gradients, copied to fp32 before Adam (read 2, write 4, Adam
     * reads 4): 2 + (2 + 4 + 4 + 24)/8 + 2 + 2 = 10.25. */
    static const double per_param[] = {38, 13.5, 6.5, 4.75};
    struct spsim_parallel p = zero_config(0, 1);
    double t0 = testutil_evaluate_config("llama3-8b", "dgx-h100", &p).time.optimizer_s;
    for (uint32_t z = 1; z <= 3; z++) {
        p = zero_config(z, 1);
        double t = testutil_evaluate_config("llama3-8b", "dgx-h100", &p).time.optimizer_s;
        ck_assert_double_eq_tol(t / t0, per_param[z] / per_param[0], 1e-12);
    }
    p = zero_config(1, 1);
    p.grad_reduce_in_fp32 = false;
    ck_assert_double_eq_tol(testutil_evaluate_config("llama3-8b", "dgx-h100", &p).time.optimizer_s /
                                t0,
                            10.25 / 38, 1e-12);
}
END_TEST

START_TEST(gradient_dtype_follows_megatron)
{
    /* arguments.py: bf16 (and fp8 on bf16) training accumulates and reduces gradients in fp32;
     * fp16 training keeps fp16 gradients unless asked for fp32. */
    struct spsim_parallel p = zero_config(1, 1);
    struct spsim_result r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert(r.grad_reduce_in_fp32 && r.config.grad_reduce_in_fp32 == 1);
    ck_assert_uint_eq(r.comm.dp_grad_bytes, 4 * P);
    p.dtype = SPSIM_DTYPE_FP16;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert(!r.grad_reduce_in_fp32);
    ck_assert_uint_eq(r.comm.dp_grad_bytes, 2 * P);
    ck_assert_uint_eq(r.memory.gradients_bytes, 2 * P);
    ck_assert_uint_eq(r.memory.optimizer_bytes, ceil8(16 * P));
    p.grad_reduce_in_fp32 = 1;
    r = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    ck_assert_uint_eq(r.memory.gradients_bytes, 4 * P);
    ck_assert_uint_eq(r.memory.optimizer_bytes, ceil8(12 * P));
}
END_TEST

START_TEST(llama3_405b_as_meta_ran_it)
{
    /* Llama 3 paper §3.3: gradients and optimizer state sharded over data parallelism,
     * parameters not resharded after forward: Megatron-FSDP optim_grads, --zero 2. Meta ran it
     * with 16 pipeline stages (its own stack); Megatron-FSDP at d98e8a64 meshes the whole world
     * as dp·cp × tp (mcore_fsdp_adapter.py _get_dp_tp_mesh) and cannot pipeline: refused with
     * pp 14, stated with the 126 layers on one stage. */
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.pp = 14;
    p.dp = 128;
    p.sp = true;
    p.seq = 8192;
    p.gbs = 2048;
    p.zero = 2;
    testutil_expect_rule("llama3-405b", &p, "Megatron-FSDP (zero 2, optim_grads) needs pp = 1");
    p.zero = 3;
    testutil_expect_rule("llama3-405b", &p, "Megatron-FSDP (zero 3, optim_grads_params) needs pp");
    p.pp = 1;
    p.vpp = 1;
    p.zero = 2;
    struct spsim_result r = testutil_evaluate_config("llama3-405b", "dgx-h100", &p);
    uint64_t params = r.memory.parameters_per_gpu;
    ck_assert_uint_eq(r.memory.weights_bytes, 2 * params);
    /* One layer at tp 8: QKV 16384·18432, projection 16384², FC1 16384·106496, FC2
     * 53248·16384, over 8, plus two RMSNorm weights of 16384: 398,491,648 parameters. */
    uint64_t layer =
        (16384ull * 18432 + 16384ull * 16384 + 16384ull * 106496 + 53248ull * 16384) / 8 +
        2 * 16384;
    ck_assert_uint_eq(layer, 398491648);
    ck_assert_uint_eq(r.memory.gradients_bytes, (4 * params + 127) / 128 + 2 * 4 * layer);
    ck_assert_uint_eq(r.memory.optimizer_bytes, (12 * params + 127) / 128);
    ck_assert(r.time.iteration_s > 0);
}
END_TEST

/*
 * Megatron-FSDP with experts (the DeepSeek-V3 example, examples/megatron_fsdp/
 * sbatch_mfsdp_deepseek_v3.sh, runs optim_grads_params): mcore_fsdp_adapter.py shards the
 * routed experts over the expert data-parallel mesh and the rest over dp·cp. TESTUTIL_MOE_SHAPE
 * (2 MoE layers, h 1024, 8 heads of 128, 128 experts of f_e 128, SwiGLU, RMSNorm, untied, v
 * 32768), tp 1, ep 4, dp 8: edp = 8/4 = 2 and D = 8. Per layer the attention 4h², two norms 2h
 * and the router E·h, 4,327,424, and 32 local experts of 3·h·f_e, 12,582,912 (X); the root unit
 * the embedding v·h and the output layer with the final norm v·h + h.
 */
START_TEST(experts_sharded)
{
    struct spsim_model_shape ms = {TESTUTIL_MOE_SHAPE};
    struct spsim_model *m = testutil_model(&ms);
    const uint64_t h = 1024, X = 32 * 3 * h * 128, dense = 4 * h * h + 2 * h + 128 * h;
    const uint64_t unit = dense + X, root = 32768 * h + 32768 * h + h;
    const uint64_t params = 2 * unit + root, experts = 2 * X;
    for (uint32_t z = 2; z <= 3; z++) {
        struct spsim_parallel p;
        spsim_parallel_defaults(&p);
        p.ep = 4;
        p.dp = 8;
        p.gbs = 16; /* m = 2 micro-batches */
        p.zero = z;
        struct spsim_result r;
        struct spsim_error err = {0};
        ck_assert_msg(spsim_evaluate(m, NULL, &p, &r, &err) == SPSIM_OK, "%s", err.message);
        ck_assert_uint_eq(r.memory.parameters_per_gpu, params);
        ck_assert_uint_eq(r.memory.expert_parameters_per_gpu, experts);
        ck_assert_uint_eq(r.comm.expert_dp_ranks, 2);
        uint64_t grads = ceil8(4 * (params - experts)) + 4 * experts / 2 + 2 * 4 * unit;
        ck_assert_uint_eq(r.memory.gradients_bytes, grads);
        uint64_t weights =
            z == 3 ? ceil8(2 * (params - experts)) + 2 * experts / 2 + 2 * 2 * unit + 2 * root
                   : 2 * params;
        ck_assert_uint_eq(r.memory.weights_bytes, weights);
        ck_assert_uint_eq(r.memory.optimizer_bytes,
                          ceil8(12 * (params - experts)) + 12 * experts / 2);
        /* The experts' fp32 gradients reduce-scattered over 2 ranks every micro-batch (1/2 on
         * the wire); level 2 gathers their bf16 weights once, level 3 each layer's experts
         * before its forward and its backward, every micro-batch. */
        uint64_t rs = 2 * (4 * experts / 2),
                 ag = z == 3 ? 2 * 2 * 2 * (2 * X / 2) : 2 * experts / 2;
        ck_assert_uint_eq(r.comm.expert_dp_wire_bytes_per_rank, rs + ag);
        /* The dense part's level-3 gathers leave the experts out: 2·(dense)·7/8 each. */
        if (z == 3)
            ck_assert_uint_eq(r.comm.dp_ag_wire_bytes_per_rank,
                              2 * 2 * 2 * frac8(2 * dense) + frac8(2 * root));
    }
    spsim_model_destroy(m);
}
END_TEST

START_TEST(megatron_rules)
{
    struct spsim_parallel p = zero_config(0, 1);
    p.overlap_param_gather = true;
    testutil_expect_rule("llama3-8b", &p,
                         "--overlap-param-gather only supported with distributed optimizer");
    p.zero = 1;
    testutil_expect_rule("llama3-8b", &p,
                         "Must use --overlap-param-gather with --overlap-grad-reduce");
    p.bridge_ddp = true; /* Megatron-Bridge's recipes do not run arguments.py */
    {
        struct spsim_model *m = testutil_model_named("llama3-8b");
        ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, NULL), SPSIM_OK);
        spsim_model_destroy(m);
    }
    p.bridge_ddp = false;
    p.zero = 4;
    p.overlap_param_gather = false;
    testutil_expect_rule("llama3-8b", &p, "field 'zero'");
    struct spsim_model *m = testutil_model_named("llama3-8b");
    p = zero_config(2, 1); /* FSDP forces overlap_grad_reduce */
    p.overlap_param_gather = true;
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, NULL), SPSIM_OK);
    p = zero_config(1, 1);
    p.overlap_param_gather = p.overlap_grad_reduce = true;
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, NULL), SPSIM_OK);
    spsim_model_destroy(m);
}
END_TEST

static Suite *
zero_suite(void)
{
    Suite *s = suite_create("zero");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, memory_per_level);
    tcase_add_test(tc, bytes_per_level);
    tcase_add_test(tc, exposed_time_per_level);
    tcase_add_test(tc, experts_sharded);
    tcase_add_test(tc, optimizer_step_per_level);
    tcase_add_test(tc, gradient_dtype_follows_megatron);
    tcase_add_test(tc, llama3_405b_as_meta_ran_it);
    tcase_add_test(tc, megatron_rules);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(zero_suite());
}
