/*
 * Mixture of experts against closed forms worked by hand from Megatron-Core
 * (megatron/core/transformer/moe/token_dispatcher.py, experts.py, router.py, parallel_state.py
 * and nccl-tests' alltoall busbw convention): the bytes each dispatcher moves per rank, the
 * expert parameters, gradients and optimizer state per rank with EP, ETP and the distributed
 * optimizer over the expert data-parallel group, the MoE layer's activations and what the moe
 * and moe_act recompute modules drop, the time of each MoE term, and Megatron's rules.
 */
#include <math.h>
#include <string.h>

#include "testutil.h"

/*
 * A round-number MoE model: L = 2, h = 1024, 8 heads of 128 (MHA), SwiGLU, RMSNorm, RoPE, no
 * dropout, no bias, flash attention, untied embeddings, v = 32768, s = 4096; E = 8 routed
 * experts, top-2, each of FFN 1024; every layer MoE.
 */
#define H   1024ull
#define E   8ull
#define K   2ull
#define FE  1024ull
#define SEQ 4096ull
#define V   32768ull
#define FFN 4096ull

static struct spsim_model_shape
moe_shape(void)
{
    struct spsim_model_shape m = {
        .layers = 2,
        .hidden = (uint32_t)H,
        .heads = 8,
        .kv_heads = 8,
        .head_dim = 128,
        .ffn_hidden = (uint32_t)FFN,
        .vocab = (uint32_t)V,
        .seq_len = (uint32_t)SEQ,
        .mlp = SPSIM_MLP_SWIGLU,
        .norm = SPSIM_NORM_RMSNORM,
        .attention = SPSIM_ATTENTION_FLASH,
        .position = SPSIM_POSITION_ROPE,
        .experts = (uint32_t)E,
        .experts_per_token = (uint32_t)K,
        .expert_ffn_hidden = (uint32_t)FE,
        .moe_layer_freq = 1,
    };
    return m;
}

static struct spsim_parallel
moe_config(uint32_t tp, uint32_t ep, uint32_t etp, uint32_t dp, enum spsim_moe_dispatcher d)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.sp = tp > 1;
    p.ep = ep;
    p.etp = etp;
    p.dp = dp;
    p.gbs = dp;
    p.moe_dispatcher = d;
    p.moe_routing = SPSIM_MOE_ROUTING_BALANCED; /* these values pin the balanced mean */
    return p;
}

static struct spsim_result
eval_ok(const struct spsim_model *m, const struct spsim_hardware *hw,
        const struct spsim_parallel *p)
{
    struct spsim_result r;
    struct spsim_error err = {0};
    int rc = spsim_evaluate(m, hw, p, &r, &err);
    ck_assert_msg(rc == SPSIM_OK, "spsim_evaluate: %s", err.message);
    return r;
}

/*
 * tp 2 with SP: T = s·b/t = 2048 tokens per rank. alltoall over ep = 2 (etp 1): the dispatch
 * all-to-all's buffer is T·k·(2h + 4) = 2048·2·2052 = 8 404 992 B (tokens and fp32 probs), the
 * combine's T·k·2h = 8 388 608 B; each rank sends (n−1)/n = 1/2 of each: 4 202 496 + 4 194 304
 * = 8 396 800 B forward, the same backward (the gradients of both, mirrored).
 * allgather over etp·ep = 2: AG of n·T·(2h + 4E + E) = 4096·2088 = 8 552 448 B and RS of
 * n·T·2h = 8 388 608 B, half each: 4 276 224 + 4 194 304 = 8 470 528 B forward; backward RS of
 * n·T·(2h + 4E) = 4096·2080 = 8 519 680 B and AG of 8 388 608 B: 4 259 840 + 4 194 304 =
 * 8 454 144 B.
 */
START_TEST(dispatch_bytes_per_dispatcher)
{
    struct spsim_model_shape s = moe_shape();
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = moe_config(2, 2, 1, 1, SPSIM_MOE_ALLTOALL);
    struct spsim_result r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.comm.ep_forward_wire_bytes_per_layer, 8396800);
    ck_assert_uint_eq(r.comm.ep_backward_wire_bytes_per_layer, 8396800);
    ck_assert_uint_eq(r.comm.ep_recompute_wire_bytes_per_layer, 0);
    ck_assert_uint_eq(r.comm.ep_wire_bytes_per_iteration, 2 * 2 * 8396800);
    ck_assert_int_eq(r.comm.ep_tier, SPSIM_TIER_NVLINK);
    p = moe_config(2, 2, 1, 1, SPSIM_MOE_ALLGATHER);
    r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.comm.ep_forward_wire_bytes_per_layer, 8470528);
    ck_assert_uint_eq(r.comm.ep_backward_wire_bytes_per_layer, 8454144);
    /* moe recompute replays the dispatch and the combine: the forward's bytes once more. */
    p = moe_config(2, 2, 1, 1, SPSIM_MOE_ALLTOALL);
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.recompute_modules = SPSIM_RMOD_MOE;
    r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.comm.ep_recompute_wire_bytes_per_layer, 8396800);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * alltoall with etp 2 (tp 2, ep 2, dp 2: etp·ep = 4 = tp·dp, edp 1): T = 2048, each rank
 * receives T·k = 4096 copies; the ETP AllGather's buffer is etp·4096·(2h + 4) = 16 809 984 B,
 * one rank moving half, 8 404 992 B; the combine's ReduceScatter etp·4096·2h = 16 777 216 B,
 * 8 388 608 B. With the EP all-to-all (4 202 496 + 4 194 304): 25 190 400 B per direction.
 */
START_TEST(dispatch_bytes_with_etp)
{
    struct spsim_model_shape s = moe_shape();
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = moe_config(2, 2, 2, 2, SPSIM_MOE_ALLTOALL);
    struct spsim_result r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.comm.ep_forward_wire_bytes_per_layer, 25190400);
    ck_assert_uint_eq(r.comm.ep_backward_wire_bytes_per_layer, 25190400);
    ck_assert_uint_eq(r.comm.expert_dp_ranks, 1);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * tp 2, etp 1, ep 4, dp 4, distributed optimizer: dp·cp = 4 for the dense parameters, the
 * expert data-parallel group tp·dp/(ep·etp) = 2. Per rank: the embedding and the output layer
 * 32768·1024/2 = 16 777 216 each (+ the final norm, 1024); per layer the attention
 * (1024·3072 + 1024·1024)/2 = 2 097 152, two norms 2048, the router 1024·8 = 8192 and E/ep = 2
 * experts of 3·1024·1024: 6 291 456. Two layers: 50 353 152 parameters, 12 582 912 of them
 * experts'. Optimizer: 12 B per dense parameter over 4 (113 310 720) plus 12 B per expert
 * parameter over 2 (75 497 472).
 */
START_TEST(expert_memory_per_rank)
{
    struct spsim_model_shape s = moe_shape();
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = moe_config(2, 4, 1, 4, SPSIM_MOE_ALLTOALL);
    p.distributed_optimizer = true;
    struct spsim_result r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.memory.parameters_per_gpu, 50353152);
    ck_assert_uint_eq(r.memory.expert_parameters_per_gpu, 12582912);
    ck_assert_uint_eq(r.memory.weights_bytes, 2ull * 50353152);
    ck_assert_uint_eq(r.memory.gradients_bytes, 4ull * 50353152);
    ck_assert_uint_eq(r.memory.optimizer_bytes, 113310720ull + 75497472ull);
    ck_assert_uint_eq(r.comm.expert_dp_ranks, 2);
    ck_assert_uint_eq(r.comm.dp_grad_bytes, 4ull * (50353152 - 12582912));
    ck_assert_uint_eq(r.comm.expert_dp_grad_bytes, 4ull * 12582912);
    /* Sharded: RS of the fp32 gradients and AG of the bf16 weights, (D−1)/D = 1/2 each. */
    ck_assert_uint_eq(r.comm.expert_dp_wire_bytes_per_rank, 4ull * 12582912 / 2 + 2 * 12582912 / 2);
    /* etp 2 halves each expert: tp 2, ep 2, etp 2, dp 4 (edp 2): 4 experts of 3·h·f_e/2. */
    p = moe_config(2, 2, 2, 4, SPSIM_MOE_ALLTOALL);
    r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.memory.expert_parameters_per_gpu, 2ull * 4 * 3 * H * FE / 2);
    ck_assert_uint_eq(r.memory.optimizer_bytes, 12ull * r.memory.parameters_per_gpu);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * One MoE layer's activations (tp 2, SP, ep 2, alltoall, flash, no recompute), n = 4096 tokens,
 * n' = 2048 on the sequence shard, b = 1:
 *   attention: norm 1 input, QKV input, V, projection input, norm 2 input, 2·2048·1024 =
 *     4 194 304 each; Q and K 2·4096·2048/2 = 8 388 608; log-sum-exp 4·4·4096 = 65 536;
 *   MoE: its input (router and dispatch) 4 194 304; fp32 router scores 4·2048·8 = 65 536; the
 *     experts' rows etp·T·k = 4096: FC1 input 2·4096·1024 = 8 388 608, activation input
 *     2·4096·2048 = 16 777 216, fp32 probabilities 4·4096 = 16 384, FC2 input 8 388 608.
 * Sum 67 256 320. moe_act drops the FC2 input (58 867 712); moe keeps only the MoE input of the
 * MoE part (33 619 968).
 */
START_TEST(moe_activations)
{
    struct spsim_model_shape s = moe_shape();
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = moe_config(2, 2, 1, 1, SPSIM_MOE_ALLTOALL);
    ck_assert_uint_eq(eval_ok(m, hw, &p).memory.activation_per_layer_bytes, 67256320);
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.recompute_modules = SPSIM_RMOD_MOE_ACT;
    ck_assert_uint_eq(eval_ok(m, hw, &p).memory.activation_per_layer_bytes, 58867712);
    p.recompute_modules = SPSIM_RMOD_MOE;
    ck_assert_uint_eq(eval_ok(m, hw, &p).memory.activation_per_layer_bytes, 33619968);
    /* A capacity factor (>= 1) drops no copy of a balanced routing: the same rows. */
    s.capacity_factor = 1.5;
    struct spsim_model *capped = testutil_model(&s);
    p.recompute = SPSIM_RECOMPUTE_NONE;
    p.recompute_modules = 0;
    ck_assert_uint_eq(eval_ok(capped, hw, &p).memory.activation_per_layer_bytes, 67256320);
    spsim_model_destroy(capped);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

static const struct spsim_schedule_step *
find_step(const struct spsim_schedule_step *steps, size_t n, enum spsim_phase phase, const char *op)
{
    for (size_t i = 0; i < n; i++)
        if (steps[i].phase == phase && strcmp(steps[i].op, op) == 0)
            return &steps[i];
    ck_abort_msg("no %s step '%s'", spsim_phase_name(phase), op);
    return NULL;
}

/*
 * Each MoE term's time, tp 2, SP, ep 2, alltoall, T = 2048 (k = 2, E = 8, h = 1024):
 *   - the dispatch's two all-to-alls and the combine's cost what `spsim collective --op
 *     all_to_all` says for their buffers (8 388 608 B of tokens and 16 384 B of probabilities,
 *     8 388 608 B) on 2 GPUs of one node;
 *   - memory-bound rows take their HBM bytes at one rate: permute 4·T·k·h, unpermute
 *     2·T·k·h + 2·T·h, router score and top-k 10·T·E + 12·T·k, so their times stand
 *     (k + 1)/(2k) = 3/4 and (10E + 12k)/(4kh) = 104/8192 to the permute's;
 *   - the grouped GEMMs: E/ep = 4 local experts of T·k·ep/E = 1024 rows each; FC1's forward
 *     is 2·4·1024·1024·2048 FLOPs and FC2's 2·4·1024·1024·1024; the router GEMM
 *     2·2048·1024·8.
 */
START_TEST(moe_term_times)
{
    struct spsim_model_shape s = moe_shape();
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = moe_config(2, 2, 1, 1, SPSIM_MOE_ALLTOALL);
    static struct spsim_schedule_step steps[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = 0;
    ck_assert_int_eq(spsim_layer_schedule(m, hw, &p, steps, SPSIM_MAX_SCHEDULE_STEPS, &n, NULL),
                     SPSIM_OK);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    struct spsim_collective_prediction a2a;
    /* The tokens (2048·2 copies·2·1024 B = 8388608) and then, a second all-to-all, their fp32
     * probabilities (2048·2·4 = 16384 B; token_dispatcher.py token_dispatch). */
    const struct spsim_schedule_step *st = find_step(steps, n, F, "dispatch all-to-all (EP)");
    ck_assert_uint_eq(st->message_bytes, 8388608);
    ck_assert_uint_eq(st->wire_bytes, 4194304);
    ck_assert_uint_eq(st->group_size, 2);
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_TO_ALL, 2, 1, 8388608, &a2a, NULL),
                     SPSIM_OK);
    ck_assert_double_eq_tol(st->time_s, a2a.time_s, 1e-15);
    st = find_step(steps, n, F, "dispatch all-to-all of the probabilities (EP)");
    ck_assert_uint_eq(st->message_bytes, 16384);
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_TO_ALL, 2, 1, 16384, &a2a, NULL),
                     SPSIM_OK);
    ck_assert_double_eq_tol(st->time_s, a2a.time_s, 1e-15);
    st = find_step(steps, n, B, "combine all-to-all (EP)");
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_TO_ALL, 2, 1, 8388608, &a2a, NULL),
                     SPSIM_OK);
    ck_assert_double_eq_tol(st->time_s, a2a.time_s, 1e-15);
    double permute = find_step(steps, n, F, "permute (token copies into expert order)")->time_s;
    double unpermute = find_step(steps, n, F, "unpermute (sum of each token's copies)")->time_s;
    double router = find_step(steps, n, F, "router softmax and top-k")->time_s;
    ck_assert_double_eq_tol(unpermute / permute, 0.75, 1e-12);
    ck_assert_double_eq_tol(router / permute, 104.0 / 8192.0, 1e-12);
    ck_assert_double_eq(find_step(steps, n, F, "experts FC1 grouped GEMM")->flops,
                        2.0 * 4 * 1024 * 1024 * 2048);
    ck_assert_double_eq(find_step(steps, n, F, "experts FC2 grouped GEMM")->flops,
                        2.0 * 4 * 1024 * 1024 * 1024);
    ck_assert_double_eq(find_step(steps, n, F, "router GEMM (replicated)")->flops,
                        2.0 * 2048 * 1024 * 8);
    /* The exposed all-to-alls of both layers and passes make up time.ep_exposed_s. */
    struct spsim_result r = eval_ok(m, hw, &p);
    double ep = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(steps[i].operator_name, "moe") == 0)
            ep += steps[i].time_s;
    ck_assert_double_eq_tol(r.time.ep_exposed_s, 2 * ep, 1e-12 * ep);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * An MoE model whose first layer is dense (DeepSeek's first_k_dense_replace), L = 4 over pp 2,
 * tp 2 with SP, ep 2, 4 micro-batches. Rank 0 builds the dense layer 0 and the MoE layer 1,
 * rank 1 two MoE layers. Parameters: the embedding 16 777 216; a dense layer's attention
 * 2 097 152, norms 2048 and SwiGLU MLP 3·1024·4096/2 = 6 291 456 (8 390 656); an MoE layer's
 * attention and norms, the router 8192 and E/ep = 4 experts of 3·1024·1024 (14 690 304); the
 * output layer 16 777 216 + 1024. Activations (1F1B): rank 0 holds 2 micro-batches of the
 * dense layer (the MoE layer's attention part 29 425 664, FC1 input 4 194 304, SwiGLU input
 * 2·4096·2·2048·2 = 33 554 432, FC2 input 16 777 216: 83 951 616) and of the MoE layer
 * (67 256 320); rank 1 one of its two MoE layers, with the output layer's norm and GEMM inputs
 * (4 194 304 each), fp32 logits 4096·16384·4 = 268 435 456 and, at the loss, the 16-bit
 * logits beside them 4096·16384·2 = 134 217 728 (Megatron-LM gpt_model.py:807,
 * cross_entropy.py:25 @d98e8a64).
 */
START_TEST(dense_layers_of_an_moe_model)
{
    struct spsim_model_shape s = moe_shape();
    s.layers = 4;
    s.moe_first_dense_layers = 1;
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = moe_config(2, 2, 1, 1, SPSIM_MOE_ALLTOALL);
    p.pp = 2;
    p.gbs = 4;
    struct spsim_result r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.memory.parameters_first_stage, 16777216ull + 8390656 + 14690304);
    ck_assert_uint_eq(r.memory.parameters_last_stage, 2ull * 14690304 + 16777216 + 1024);
    ck_assert_uint_eq(r.memory.activation_first_stage_bytes, 2ull * (83951616 + 67256320));
    ck_assert_uint_eq(r.memory.activation_last_stage_bytes,
                      2ull * 67256320 + 2 * 4194304 + 268435456 + 134217728);
    /* The most loaded rank is the last (its logits): two MoE layers' 4 experts each. */
    ck_assert_uint_eq(r.memory.peak_stage, 1);
    ck_assert_uint_eq(r.memory.expert_parameters_per_gpu, 2ull * 4 * 3 * H * FE);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

static void
expect_refused(const struct spsim_model *m, const struct spsim_parallel *p, const char *text)
{
    struct spsim_error err = {0};
    int rc = spsim_parallel_check(m, NULL, p, NULL, &err);
    ck_assert_msg(rc == SPSIM_ECONFIG, "accepted (rc %d), expected '%s'", rc, text);
    ck_assert_msg(strstr(err.message, text), "'%s' lacks '%s'", err.message, text);
}

/* Megatron's rules (arguments.py, parallel_state.py, transformer_config.py). */
START_TEST(rules)
{
    struct spsim_model_shape s = moe_shape();
    struct spsim_model *m = testutil_model(&s);
    struct spsim_parallel p = moe_config(1, 3, 1, 3, SPSIM_MOE_ALLTOALL);
    expect_refused(m, &p, "Number of experts should be a multiple of expert model parallel_size");
    p = moe_config(2, 4, 1, 1, SPSIM_MOE_ALLTOALL);
    expect_refused(m, &p,
                   "world_size (2) is not divisible by "
                   "expert_tensor_model_pipeline_parallel size (4)");
    p = moe_config(2, 2, 1, 1, SPSIM_MOE_ALLTOALL);
    p.sp = false;
    expect_refused(m, &p, "sequence parallelism must be used");
    /* token_dispatcher.py MoEFlexTokenDispatcher: "DeepEP dispatcher requires TPxEP > 1". */
    p = moe_config(1, 1, 1, 1, SPSIM_MOE_FLEX);
    expect_refused(m, &p, "DeepEP dispatcher requires TPxEP > 1");
    p.moe_flex_backend = SPSIM_FLEX_BACKEND_COUNT;
    expect_refused(m, &p, "must be deepep or hybridep");
    s.expert_ffn_hidden = 1000;
    struct spsim_model *odd = testutil_model(&s);
    p = moe_config(1, 1, 16, 16, SPSIM_MOE_ALLTOALL);
    expect_refused(odd, &p, "expert_ffn_hidden 1000 is not divisible by etp = 16");
    struct spsim_model_shape d = testutil_gpt_shape(4, 1024, 8, 2048, 32000);
    struct spsim_model *dense = testutil_model(&d);
    p = moe_config(1, 2, 1, 2, SPSIM_MOE_ALLGATHER);
    expect_refused(dense, &p, "num_moe_experts must be non None to use expert-parallel");
    spsim_model_destroy(dense);
    spsim_model_destroy(odd);
    spsim_model_destroy(m);
}
END_TEST

/*
 * Token dropping (Megatron --moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity,
 * Megatron-Bridge apply_moe_token_drop): tp 2 with SP, alltoall over ep 2, T = 2048 tokens per
 * rank, k = 2, E = 8. Each rank sends every expert its capacity ceil(T·k/E · f)
 * (moe_utils.py get_capacity): f = 1.25 gives ceil(512 · 1.25) = 640, so each of the 4 local
 * experts computes 640 · ep = 1280 rows and a rank receives 5120 copies (dropless balanced: 4096).
 * Dispatch buffer 5120·(2h + 4) = 10 506 240 B, combine 5120·2h = 10 485 760 B, half of each on
 * the wire: 5 253 120 + 5 242 880 = 10 496 000 B forward; the padded rows whatever the routing.
 * Without padding the factor only caps the load: balanced routing stays at 8 396 800 B.
 */
START_TEST(drop_and_pad)
{
    struct spsim_model_shape s = moe_shape();
    s.capacity_factor = 1.25;
    struct spsim_model *m = testutil_model(&s);
    s.pad_to_capacity = true;
    struct spsim_model *padded = testutil_model(&s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = moe_config(2, 2, 1, 1, SPSIM_MOE_ALLTOALL);
    struct spsim_result r = eval_ok(m, hw, &p);
    ck_assert_uint_eq(r.comm.ep_forward_wire_bytes_per_layer, 8396800);
    r = eval_ok(padded, hw, &p);
    ck_assert_uint_eq(r.comm.ep_forward_wire_bytes_per_layer, 10496000);
    p.moe_routing = SPSIM_MOE_ROUTING_RANDOM;
    r = eval_ok(padded, hw, &p);
    ck_assert_uint_eq(r.comm.ep_forward_wire_bytes_per_layer, 10496000);
    /* Drop and pad is modelled with the all-to-all dispatcher's buffers only. */
    p = moe_config(2, 2, 1, 1, SPSIM_MOE_ALLGATHER);
    struct spsim_result rr;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_evaluate(padded, hw, &p, &rr, &err), SPSIM_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "pad_to_capacity"));
    spsim_hardware_destroy(hw);
    spsim_model_destroy(padded);
    spsim_model_destroy(m);
}
END_TEST

static Suite *
moe_suite(void)
{
    Suite *s = suite_create("moe");
    TCase *tc = tcase_create("moe");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, dispatch_bytes_per_dispatcher);
    tcase_add_test(tc, dispatch_bytes_with_etp);
    tcase_add_test(tc, drop_and_pad);
    tcase_add_test(tc, expert_memory_per_rank);
    tcase_add_test(tc, moe_activations);
    tcase_add_test(tc, moe_term_times);
    tcase_add_test(tc, dense_layers_of_an_moe_model);
    tcase_add_test(tc, rules);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(moe_suite());
}
