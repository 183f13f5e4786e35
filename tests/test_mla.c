/*
 * Multi-latent attention through the engine, against closed forms worked by hand from
 * Megatron-Core's megatron/core/transformer/multi_latent_attention.py (MLASelfAttention: the
 * duplicated down-projections, the latent norms, the rope key's gather, the column-parallel
 * up-projections, mla_up_proj's CheckpointWithoutOutput) and finalize_model_grads.py (the TP
 * all-reduce of the duplicated weights' gradients with SP).
 */
#include <math.h>
#include <string.h>

#include "testutil.h"

/*
 * A round-number dense MLA model: L = 2, h = 1024, n = 8 heads, r_q = 256, r_kv = 128,
 * d_qk = 64, d_r = 32, d_v = 64, latent norms (qk_norm), SwiGLU of 4096, RMSNorm, RoPE, no
 * dropout, no bias, flash attention, untied, v = 32768, s = 4096.
 */
#define H   1024ull
#define N   8ull
#define RQ  256ull
#define RKV 128ull
#define DQK 64ull
#define DR  32ull
#define DV  64ull
#define SEQ 4096ull
#define FFN 4096ull
#define V   32768ull

static struct spsim_model_shape
mla_shape(void)
{
    struct spsim_model_shape m = {
        .layers = 2,
        .hidden = (uint32_t)H,
        .heads = (uint32_t)N,
        .kv_heads = (uint32_t)N,
        .head_dim = (uint32_t)(DQK + DR),
        .ffn_hidden = (uint32_t)FFN,
        .vocab = (uint32_t)V,
        .seq_len = (uint32_t)SEQ,
        .mlp = SPSIM_MLP_SWIGLU,
        .norm = SPSIM_NORM_RMSNORM,
        .attention = SPSIM_ATTENTION_FLASH,
        .position = SPSIM_POSITION_ROPE,
        .qk_norm = true,
        .q_lora_rank = (uint32_t)RQ,
        .kv_lora_rank = (uint32_t)RKV,
        .qk_head_dim = (uint32_t)DQK,
        .qk_pos_emb_head_dim = (uint32_t)DR,
        .v_head_dim = (uint32_t)DV,
    };
    return m;
}

static struct spsim_parallel
mla_config(uint32_t tp, bool sp)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.sp = sp;
    p.gbs = 1;
    return p;
}

/* Evaluate the shape under p on DGX H100 (the hardware of every test here). */
static struct spsim_result
evaluate(const struct spsim_model_shape *s, const struct spsim_parallel *p)
{
    struct spsim_model *m = testutil_model(s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_result r;
    struct spsim_error err = {0};
    int rc = spsim_evaluate(m, hw, p, &r, &err);
    ck_assert_msg(rc == SPSIM_OK, "spsim_evaluate: %s", err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
    return r;
}

/* The same with mtp_layers = D. */
static struct spsim_result
evaluate_mtp(uint32_t D, const struct spsim_parallel *p)
{
    struct spsim_model_shape s = mla_shape();
    s.mtp_layers = D;
    return evaluate(&s, p);
}

/*
 * Parameters on one of t = 2 ranks. Split over TP: q up r_q·n·(d_qk+d_r) = 196 608, kv up
 * r_kv·n·(d_qk+d_v) = 131 072, projection n·d_v·h = 524 288, together 851 968 / 2 = 425 984.
 * Duplicated: q down h·r_q = 262 144, kv down h·(r_kv+d_r) = 163 840, latent norms r_q + r_kv
 * = 384: 426 368. The layer's two norms 2048 and SwiGLU 3·h·f/2 = 6 291 456: 7 145 856 per
 * layer. Embedding and output layer v·h/2 = 16 777 216 each, the final norm 1024:
 * 2·7 145 856 + 33 554 432 + 1024 = 47 847 168.
 */
START_TEST(parameters_per_rank)
{
    struct spsim_model_shape s = mla_shape();
    struct spsim_parallel p = mla_config(2, true);
    ck_assert_uint_eq(evaluate(&s, &p).memory.parameters_per_gpu, 47847168);
}
END_TEST

/*
 * Activations of one layer, t = 2 with SP, b = 1: s/t = 2048 local tokens, s = 4096 gathered,
 * n/t = 4 heads; bytes (2 B per element unless said).
 *   norm 1 input, down-projections' input     2·2048·1024·2          8 388 608
 *   q latent norm input, q up input           2·2048·256·2           2 097 152
 *   kv latent norm input, kv up input         2·2048·128·2           1 048 576
 *   Q and K (d_qk + d_r = 96 per head)        4096·2·4·96·2          6 291 456
 *   V (d_v = 64)                              4096·4·64·2            2 097 152
 *   flash log-sum-exp (fp32)                  4·4096·4                  65 536
 *   projection input                          4096·4·64·2            2 097 152
 *   norm 2 input, FC1 input                   2·2048·1024·2          8 388 608
 *   SwiGLU input, FC2 input                   4096·(2·2048·2 + 2048·2)   50 331 648
 * Sum 80 805 888. core_attn drops the log-sum-exp (80 740 352); mla_up_proj drops Q, K, V
 * (8 388 608) and keeps its checkpoint's gathered rope key, 4096·32·2 = 262 144 (72 679 424).
 */
START_TEST(activations_and_recompute)
{
    struct spsim_model_shape s = mla_shape();
    struct spsim_parallel p = mla_config(2, true);
    ck_assert_uint_eq(evaluate(&s, &p).memory.activation_per_layer_bytes, 80805888);
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.recompute_modules = SPSIM_RMOD_CORE_ATTN;
    ck_assert_uint_eq(evaluate(&s, &p).memory.activation_per_layer_bytes, 80740352);
    p.recompute_modules = SPSIM_RMOD_MLA_UP_PROJ;
    ck_assert_uint_eq(evaluate(&s, &p).memory.activation_per_layer_bytes, 72679424);
    p.recompute_modules = SPSIM_RMOD_MLA_UP_PROJ | SPSIM_RMOD_CORE_ATTN;
    ck_assert_uint_eq(evaluate(&s, &p).memory.activation_per_layer_bytes, 72613888);
    /* Without SP (t = 2): the SEQ-region tensors hold all 4096 tokens, the latents too, and
     * the rope key is the kv down-projection's slice (no gather). Attention: 2·8 388 608 +
     * 2·2 097 152 + 2·1 048 576 + 6 291 456 + 2 097 152 + 65 536 + 2 097 152 = 33 619 968;
     * MLP 2·8 388 608 + 50 331 648 = 67 108 864: 100 728 832. */
    p = mla_config(2, false);
    ck_assert_uint_eq(evaluate(&s, &p).memory.activation_per_layer_bytes, 100728832);
}
END_TEST

/*
 * TP bytes of one layer per rank, t = 2 with SP (an AllGather or ReduceScatter moves
 * (t−1)/t = 1/2 of its message). Forward: the rope key's AllGather b·s·d_r·2 = 262 144
 * (131 072 on the wire), the q latent's b·s·r_q·2 = 2 097 152 (1 048 576), the kv latent's
 * b·s·r_kv·2 = 1 048 576 (524 288), and the layer's three h-wide boundaries (ḡ after the
 * projection, g and ḡ around the MLP) of 8 388 608 (4 194 304 each): 14 286 848. Backward:
 * the rope key's ReduceScatter 131 072; each latent's wgrad re-gather and ReduceScatter
 * 2·1 048 576 + 2·524 288; ḡ's AllGather after the projection, FC1's re-gather and
 * ReduceScatter, ḡ's after FC2, 4·4 194 304: 20 054 016, of which re-gathers
 * 1 048 576 + 524 288 + 4 194 304 = 5 767 168.
 */
START_TEST(tp_bytes)
{
    struct spsim_model_shape s = mla_shape();
    struct spsim_parallel p = mla_config(2, true);
    struct spsim_result r = evaluate(&s, &p);
    ck_assert_uint_eq(r.comm.tp_forward_wire_bytes_per_layer, 14286848);
    ck_assert_uint_eq(r.comm.tp_backward_wire_bytes_per_layer, 20054016);
    ck_assert_uint_eq(r.comm.tp_wgrad_gather_wire_bytes_per_layer, 5767168);
    /* mla_up_proj replays the up-projections, whose latent AllGathers run again:
     * 1 048 576 + 524 288. */
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.recompute_modules = SPSIM_RMOD_MLA_UP_PROJ;
    ck_assert_uint_eq(evaluate(&s, &p).comm.tp_recompute_wire_bytes_per_layer, 1572864);
    /* Without SP: f before each up-projection (AllReduce of the latent gradients in backward,
     * 2·(t−1)/t of b·s·r·2: 2 097 152 + 1 048 576), f̄ after the projection and FC2 forward,
     * f before FC1 backward (8 388 608 each); no rope-key exchange. */
    p = mla_config(2, false);
    r = evaluate(&s, &p);
    ck_assert_uint_eq(r.comm.tp_forward_wire_bytes_per_layer, 2 * 8388608);
    ck_assert_uint_eq(r.comm.tp_backward_wire_bytes_per_layer, 2097152 + 1048576 + 8388608);
}
END_TEST

static const struct spsim_schedule_step *
find_step(const struct spsim_schedule_step *steps, size_t n, enum spsim_phase phase, const char *op,
          const char *pass)
{
    for (size_t i = 0; i < n; i++)
        if (steps[i].phase == phase && strcmp(steps[i].op, op) == 0 &&
            strcmp(steps[i].pass, pass) == 0)
            return &steps[i];
    ck_abort_msg("no %s %s step '%s'", spsim_phase_name(phase), pass, op);
    return NULL;
}

/*
 * Forward FLOPs of each MLA op on one rank, t = 2 with SP (2 per multiply-add): the
 * duplicated down-projections on the 2048 local tokens, q 2·2048·1024·256 and kv
 * 2·2048·1024·160; the up-projections on all 4096 tokens to n/t = 4 heads, q
 * 2·4096·256·(4·96) and kv 2·4096·128·(4·128); causal flash attention, half of
 * 2·s²·(d_qk + d_r) + 2·s²·d_v per head: 4·4096²·160; the projection 2·4096·(4·64)·1024.
 * Backward: dgrad and wgrad each as much as the forward GEMM.
 */
START_TEST(op_flops)
{
    struct spsim_model_shape s = mla_shape();
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = mla_config(2, true);
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = 0;
    ck_assert_int_eq(spsim_layer_schedule(m, hw, &p, st, SPSIM_MAX_SCHEDULE_STEPS, &n, NULL),
                     SPSIM_OK);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    ck_assert_double_eq(
        find_step(st, n, F, "q down-projection GEMM (replicated)", "forward")->flops,
        2.0 * 2048 * 1024 * 256);
    ck_assert_double_eq(
        find_step(st, n, F, "kv down-projection GEMM (replicated)", "forward")->flops,
        2.0 * 2048 * 1024 * 160);
    ck_assert_double_eq(
        find_step(st, n, F, "q up-projection GEMM (column-parallel)", "forward")->flops,
        2.0 * 4096 * 256 * 384);
    ck_assert_double_eq(
        find_step(st, n, F, "kv up-projection GEMM (column-parallel)", "forward")->flops,
        2.0 * 4096 * 128 * 512);
    ck_assert_double_eq(
        find_step(st, n, F, "flash attention (QK^T, softmax, dropout, .V)", "forward")->flops,
        4.0 * 4096 * 4096 * 160);
    ck_assert_double_eq(
        find_step(st, n, F, "attention projection GEMM (row-parallel)", "forward")->flops,
        2.0 * 4096 * 256 * 1024);
    ck_assert_double_eq(find_step(st, n, B, "kv down-projection GEMM (replicated)", "wgrad")->flops,
                        2.0 * 2048 * 1024 * 160);
    /* The down-projections issue no collective in the layer (duplicated weights). */
    ck_assert_str_eq(
        find_step(st, n, B, "q down-projection GEMM (replicated)", "wgrad")->collective, "");
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * The memory-bound MLA rows take their HBM bytes at one rate, so their times stand to RMSNorm 1's
 * (4·s/t·b·h = 8 388 608 B forward, 10·s/t·b·h backward) as their bytes: the latent norms
 * 4·2048·256 and 4·2048·128 (1/4 and 1/8 of it, backward likewise); the fused RoPE reads q, kv
 * and the rope key and writes Q, K, V, 2·4096·(384 + 512 + 32 + 768 + 256) = 15 990 784 B each
 * way (1.90625 forward, 0.762 5 of the norm's backward).
 */
START_TEST(memory_bound_rows)
{
    struct spsim_model_shape s = mla_shape();
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = mla_config(2, true);
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = 0;
    ck_assert_int_eq(spsim_layer_schedule(m, hw, &p, st, SPSIM_MAX_SCHEDULE_STEPS, &n, NULL),
                     SPSIM_OK);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    double norm = find_step(st, n, F, "RMSNorm 1", "forward")->time_s;
    double norm_b = find_step(st, n, B, "RMSNorm 1", "backward")->time_s;
    ck_assert_double_eq_tol(find_step(st, n, F, "q latent RMSNorm", "forward")->time_s / norm, 0.25,
                            1e-12);
    ck_assert_double_eq_tol(find_step(st, n, B, "kv latent RMSNorm", "backward")->time_s / norm_b,
                            0.125, 1e-12);
    ck_assert_double_eq_tol(find_step(st, n, F, "MLA RoPE (Q, K, V)", "forward")->time_s / norm,
                            1.90625, 1e-12);
    ck_assert_double_eq_tol(find_step(st, n, B, "MLA RoPE (Q, K, V)", "backward")->time_s / norm_b,
                            0.7625, 1e-12);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * With SP the duplicated weights' gradients (426 368 per layer, fp32 main gradients) are
 * all-reduced over TP once per iteration: 2 layers · 426 368 · 4 = 3 410 944 B over the 2 GPUs
 * of the TP group. With dp = 1 and untied embeddings it is the whole of dp_exposed_s; without
 * SP there is none (the weights see the same replicated tokens).
 */
START_TEST(duplicated_weight_gradient_sync)
{
    struct spsim_model_shape s = mla_shape();
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = mla_config(2, true);
    struct spsim_collective_prediction ar;
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 2, 1, 3410944, &ar, NULL),
                     SPSIM_OK);
    ck_assert_double_eq_tol(evaluate(&s, &p).time.dp_exposed_s, ar.time_s, 1e-15);
    p = mla_config(2, false);
    ck_assert_double_eq(evaluate(&s, &p).time.dp_exposed_s, 0.0);
    spsim_hardware_destroy(hw);
}
END_TEST

/*
 * Context parallelism with MLA (TE context_parallel.py on multi_latent_attention.py's key
 * [s, b, n, d_qk + d_r] and value [s, b, n, d_v]): per rank's n_c = s/c tokens, K and V take
 * k + v = n·(d_qk + d_r + d_v)/t channels, so KV_blk = 2·n_c·(k + v) B (GQA's 2·kv·d would be
 * 2·n·96/t here: the 64 + 32 + 64 = 160 channels per head tell them apart).
 *   p2p:        forward (c−1)·KV_blk, backward 2(c−1)·KV_blk, working 4·KV_blk;
 *   all_gather: forward (c−1)·KV_blk, backward 2(c−1)·KV_blk, working 2c·KV_blk;
 *   a2a:        Q, K, V (2·n_c·(n·96 + n·160)/t) and O (2·n_c·n·d_v/t), (c−1)/c of each both ways.
 * Activations stay per token: cp = c saves 1/c of cp = 1.
 */
START_TEST(context_parallel)
{
    struct spsim_model_shape s = mla_shape();
    uint64_t t = 2, c = 2, nc = SEQ / c, kv = N * (DQK + DR + DV) / t, blk = 2 * nc * kv;
    struct spsim_parallel p = mla_config((uint32_t)t, true);
    struct spsim_result r1 = evaluate(&s, &p);
    p.cp = (uint32_t)c;
    struct spsim_result r = evaluate(&s, &p);
    ck_assert_uint_eq(r.comm.cp_forward_wire_bytes_per_layer, (c - 1) * blk);
    ck_assert_uint_eq(r.comm.cp_backward_wire_bytes_per_layer, 2 * (c - 1) * blk);
    ck_assert_uint_eq(r.memory.activation_cp_working_bytes, 4 * blk);
    ck_assert_uint_eq(r1.memory.activation_per_layer_bytes,
                      c * r.memory.activation_per_layer_bytes);
    ck_assert_double_gt(r.time.cp_exposed_s, 0);
    p.cp_comm_type = SPSIM_CP_ALL_GATHER;
    r = evaluate(&s, &p);
    ck_assert_uint_eq(r.comm.cp_forward_wire_bytes_per_layer, (c - 1) * blk);
    ck_assert_uint_eq(r.comm.cp_backward_wire_bytes_per_layer, 2 * (c - 1) * blk);
    ck_assert_uint_eq(r.memory.activation_cp_working_bytes, 2 * c * blk);
    p.cp_comm_type = SPSIM_CP_A2A;
    r = evaluate(&s, &p);
    uint64_t qkv = 2 * nc * (N * (DQK + DR) / t + kv), o = 2 * nc * N * DV / t;
    uint64_t wire = qkv / c * (c - 1) + o / c * (c - 1);
    ck_assert_uint_eq(r.comm.cp_forward_wire_bytes_per_layer, wire);
    ck_assert_uint_eq(r.comm.cp_backward_wire_bytes_per_layer, wire);
    ck_assert_uint_eq(r.memory.activation_cp_working_bytes, qkv);
}
END_TEST

/* What is not modelled is refused: mla_up_proj without MLA. */
START_TEST(refusals)
{
    struct spsim_model_shape s = mla_shape();
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_result r;
    struct spsim_error err = {0};
    s.q_lora_rank = s.kv_lora_rank = s.qk_head_dim = s.qk_pos_emb_head_dim = s.v_head_dim = 0;
    struct spsim_model *m = testutil_model(&s);
    struct spsim_parallel p = mla_config(2, true);
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.recompute_modules = SPSIM_RMOD_MLA_UP_PROJ;
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "only supported with multi_latent_attention"), "%s",
                  err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * Multi-token prediction, one depth (D = 1), pp 1, t = 2 with SP. Parameters: the depth's
 * enorm, hnorm and final_layernorm 3h = 3072, eh_proj 2h·h/t = 1 048 576, and one more
 * transformer layer 7 145 856 (parameters_per_rank): 8 197 504. With pp 2 the last stage also
 * holds the word embedding for the shifted tokens, v·h/t = 16 777 216.
 */
START_TEST(mtp_parameters)
{
    struct spsim_parallel p = mla_config(2, true);
    ck_assert_uint_eq(evaluate_mtp(1, &p).memory.parameters_per_gpu -
                          evaluate_mtp(0, &p).memory.parameters_per_gpu,
                      8197504);
    p.pp = 2;
    p.gbs = 2;
    /* The last stage: one layer 7 145 856, the output layer 16 777 216 + 1024, the depth
     * 8 197 504 and the embedding's copy 16 777 216; the first stage has 23 923 072. */
    ck_assert_uint_eq(evaluate_mtp(1, &p).memory.parameters_per_gpu,
                      7145856 + 16778240 + 8197504 + 16777216);
}
END_TEST

/*
 * The depth's activations (pp 1, t = 2, SP, no dropout: the embedding keeps nothing): enorm and
 * hnorm inputs 2·2048·1024·2 = 8 388 608 and eh_proj's input shard 2048·2048·2 = 8 388 608; the
 * transformer layer 80 805 888 (activations_and_recompute); the output head's final norm and
 * GEMM inputs 2·2048·1024·2 = 8 388 608 and fp32 logits 4096·(32768/2)·4 = 268 435 456:
 * 374 407 168 more on the (first and) last stage.
 */
START_TEST(mtp_activations)
{
    struct spsim_parallel p = mla_config(2, true);
    ck_assert_uint_eq(evaluate_mtp(1, &p).memory.activation_last_stage_bytes -
                          evaluate_mtp(0, &p).memory.activation_last_stage_bytes,
                      374407168);
}
END_TEST

/*
 * Hardware FLOPs of the depth on one rank and micro-batch (t = 2, SP, gbs 1), forward plus
 * backward (GEMMs 3×, flash attention 1 + 2.5 times its forward):
 *   the layer: GEMM forwards q down 1 073 741 824, kv down 671 088 640, q up 805 306 368,
 *     kv up 536 870 912, projection 2 147 483 648, FC1 2·4096·1024·4096 = 34 359 738 368,
 *     FC2 2·4096·2048·1024 = 17 179 869 184 (56 774 098 944, ×3) and flash 10 737 418 240
 *     (×3.5): 207 903 260 672;
 *   the output GEMM 2·4096·1024·16384 ×3 = 412 316 860 416;
 *   eh_proj 2·4096·2048·512 ×3 = 25 769 803 776;
 * 645 989 924 864 per rank, ×t = 1 291 979 849 728 more per iteration.
 */
START_TEST(mtp_flops)
{
    struct spsim_parallel p = mla_config(2, true);
    ck_assert_double_eq_tol(evaluate_mtp(1, &p).time.hardware_flops -
                                evaluate_mtp(0, &p).time.hardware_flops,
                            1291979849728.0, 1.0);
}
END_TEST

/*
 * The depth's time on the last stage (pp 1, so forward_s is the sum of every block's forward
 * computation per micro-batch): with f(L, D) the forward time of L layers and D depths,
 * f(2, 1) − f(3, 0) is the embedding, the output head and the depth's own rows once more, and
 * the embedding and output head alone are 2·f(1, 0) − f(2, 0); what is left, the depth's
 * norms and eh_proj, takes at least eh_proj's 2·4096·2048·512 FLOPs at the dense bf16 peak.
 * Two depths cost twice one.
 */
static double
forward_s(uint32_t layers, uint32_t mtp)
{
    struct spsim_model_shape s = mla_shape();
    s.layers = layers;
    s.mtp_layers = mtp;
    struct spsim_parallel p = mla_config(2, true);
    return evaluate(&s, &p).time.forward_s;
}

START_TEST(mtp_time)
{
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    double f10 = forward_s(1, 0), f20 = forward_s(2, 0), f30 = forward_s(3, 0);
    double f21 = forward_s(2, 1), f22 = forward_s(2, 2);
    double head = 2 * f10 - f20, own = (f21 - f30) - head;
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    ck_assert_double_gt(own, 2.0 * 4096 * 2048 * 512 / (info.peak_tflops[SPSIM_DTYPE_BF16] * 1e12));
    ck_assert_double_eq_tol(f22 - f21, f21 - f20, 1e-12 * f22);
    ck_assert_double_lt(own, head);
    spsim_hardware_destroy(hw);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("mla");
    TCase *tc = tcase_create("mla");
    tcase_add_test(tc, parameters_per_rank);
    tcase_add_test(tc, activations_and_recompute);
    tcase_add_test(tc, tp_bytes);
    tcase_add_test(tc, op_flops);
    tcase_add_test(tc, memory_bound_rows);
    tcase_add_test(tc, duplicated_weight_gradient_sync);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, context_parallel);
    tcase_add_test(tc, mtp_parameters);
    tcase_add_test(tc, mtp_activations);
    tcase_add_test(tc, mtp_flops);
    tcase_add_test(tc, mtp_time);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
