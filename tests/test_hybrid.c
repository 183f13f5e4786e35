/*
 * Hybrid state-space models (issue 25), worked by hand: the shipped Nemotron profiles' parameter
 * counts against their published figures; a small hybrid model's Mamba-2 layer term by term
 * (parameters, FLOPs of its GEMMs and SSD matmuls, its memory-bound kernels' bytes, the
 * activations it keeps, its TP and CP collectives), the layers per pipeline stage by pattern, the
 * model FLOPs of Megatron-Bridge's hybrid formula, and Megatron-Core's refusals. The closed forms
 * are those of the sources cited beside each term in src/profiles/model_hybrid.c and
 * src/engine/layer.c (Megatron-LM d98e8a6 ssm/mamba_mixer.py, mamba_context_parallel.py,
 * models/hybrid/; mamba_ssm e9594ce ops/triton/ssd_combined.py; Megatron-Bridge 067f987
 * training/utils/flop_utils.py); none is computed by the library here.
 *
 * The small model: h = 1024; the pattern "M*M-" (two Mamba layers, one attention, one MLP);
 * attention 8 heads of 128 with 2 KV heads; a squared-ReLU MLP of 4096; Mamba H = 16 heads of
 * P = 64 (d = 1024, not Megatron-Bridge's 2h), N = 128, G = 4 groups, d_conv 4, chunk Q = 128;
 * vocabulary 32768, s = 1024, RMSNorm, no biases, no dropout, untied, no position embedding.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define terms_hw testutil_terms_hw
#define step     testutil_step

#define HBM 1e12 /* terms-hw: B/s achieved */
#define NV  50e9 /* terms-hw: NVLink ring busbw, B/s */

static const double h = 1024, H = 16, P = 64, d = 1024, N = 128, G = 4, Q = 128, dconv = 4;
static const double q = 1024, kv = 256, f = 4096, V = 32768;

#define EQ(got, want) ck_assert_double_eq_tol((double)(got), (want), 1e-9 * fabs(want) + 1e-12)

static struct spsim_model_shape
small_shape(const char *pattern)
{
    struct spsim_model_shape m = {
        .layers = (uint32_t)strlen(pattern),
        .hidden = 1024,
        .heads = 8,
        .kv_heads = 2,
        .head_dim = 128,
        .ffn_hidden = 4096,
        .vocab = 32768,
        .seq_len = 1024,
        .mlp = SPSIM_MLP_RELU2,
        .norm = SPSIM_NORM_RMSNORM,
        .attention = SPSIM_ATTENTION_FLASH,
        .position = SPSIM_POSITION_NONE,
        .hybrid_pattern = pattern,
        .mamba_heads = 16,
        .mamba_head_dim = 64,
        .mamba_state_dim = 128,
        .mamba_groups = 4,
        .mamba_conv = 4,
        .mamba_chunk = 128,
    };
    return m;
}

static struct spsim_model *
shipped(const char *name)
{
    char path[4096];
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    snprintf(path, sizeof(path), "%s/models/%s.json", getenv("SPSIM_DATA_DIR"), name);
    ck_assert_msg(spsim_model_load(path, &m, &err) == SPSIM_OK, "%s", err.message);
    return m;
}

/* One Mamba layer (mamba_mixer.py): the fused input norm h, in_proj h·(2d + 2GN + H), conv1d
 * (d + 2GN)·(d_conv + 1), dt_bias, A_log, D (H each), the gated norm d, out_proj d·h. */
static double
mamba_params(double hh, double heads, double p, double n, double g)
{
    double dd = heads * p;
    return hh + hh * (2 * dd + 2 * g * n + heads) + (dd + 2 * g * n) * (dconv + 1) + 3 * heads +
           dd + dd * hh;
}

/* A Mamba layer: 1024 + 1024·3088 + 2048·5 + 48 + 1024 + 1024·1024 = 4,223,024 parameters. */
START_TEST(small_model_parameters)
{
    struct spsim_model_shape s = small_shape("M*M-");
    struct spsim_model *m = testutil_model(&s);
    double mamba = mamba_params(h, H, P, N, G);
    ck_assert_double_eq(mamba, 4223024);
    double attention = h + h * (q + 2 * kv) + q * h; /* fused norm, QKV, projection */
    double mlp = h + 2 * h * f;                      /* squared ReLU: fc1 h·f, fc2 f·h */
    double total = 2 * mamba + attention + mlp + 2 * V * h + h;
    ck_assert_uint_eq(spsim_model_parameters(m, 1), (uint64_t)total);
    ck_assert_uint_eq(spsim_model_active_parameters(m, 1), (uint64_t)total);
    ck_assert_int_eq(spsim_model_layer_kind(m, 0), SPSIM_LAYER_MAMBA);
    ck_assert_int_eq(spsim_model_layer_kind(m, 1), SPSIM_LAYER_ATTENTION);
    ck_assert_int_eq(spsim_model_layer_kind(m, 3), SPSIM_LAYER_MLP);
    spsim_model_destroy(m);
}
END_TEST

/*
 * The published counts. Nemotron 3 Super: the Hugging Face checkpoint's 123,611,033,088 elements
 * (Megatron-Bridge examples/model_verification_cards/nemotron-3-super-120b-a12b/card.yaml at
 * 067f987) hold the 41 router correction biases of 512 (40 MoE layers and the MTP depth's),
 * which Megatron keeps as a buffer (router.py register_buffer), not a parameter: spsim counts
 * 123,611,033,088 − 41·512. Nemotron 3.5 Lightning: 32,913,266,240 with its 24 biases of 128.
 * Nemotron 3 Nano 4B: 3,973,556,832, dense (no biases). The Nano decoder and the Ultra one, by
 * hand from the same formulas: Nano 31,577,940,288 with its 23 biases of 128 (published
 * "30B"/"31.6B"), Ultra 549,308,993,536 with 48 of 512 (published "550B").
 */
START_TEST(published_parameter_counts)
{
    static const struct {
        const char *name;
        uint64_t published, biases;
    } rows[] = {
        {"nemotron-3-super", 123611033088ull, 41 * 512},
        {"nemotron-3.5-lightning", 32913266240ull, 24 * 128},
        {"nemotron-3-nano-4b", 3973556832ull, 0},
        {"nemotron-3-nano", 31577940288ull, 23 * 128},
        {"nemotron-3-ultra", 549308993536ull, 48 * 512},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct spsim_model *m = shipped(rows[i].name);
        ck_assert_msg(spsim_model_parameters(m, 1) == rows[i].published - rows[i].biases,
                      "%s: %llu, want %llu", rows[i].name,
                      (unsigned long long)spsim_model_parameters(m, 1),
                      (unsigned long long)(rows[i].published - rows[i].biases));
        spsim_model_destroy(m);
    }
}
END_TEST

/* Nemotron 3 Super by hand: 40 Mamba layers of 4096 with 128 heads of 64, 8 groups of 128;
 * 8 attention layers of 32 heads and 2 KV heads of 128; 40 latent MoE layers (512 experts of
 * 2688 on 1024, a shared expert of 5376, the router, two latent projections); the MTP depth
 * (enorm, hnorm, eh_proj 2h·h, final norm, an attention and an MoE layer) once, its weights
 * shared by the 2 depths (mtp_shared); embedding and output 131072·4096 each, the final norm. */
START_TEST(super_by_hand)
{
    double hh = 4096, E = 512, fe = 2688, fs = 5376, r = 1024, vv = 131072;
    double mamba = mamba_params(hh, 128, 64, 128, 8);
    double attention = hh + hh * (32 * 128 + 2 * 2 * 128) + 32 * 128 * hh;
    double moe = hh + hh * E + E * 2 * r * fe + 2 * hh * fs + 2 * hh * r;
    double mtp = 3 * hh + 2 * hh * hh + attention + moe;
    double total = 40 * mamba + 8 * attention + 40 * moe + mtp + 2 * vv * hh + hh;
    struct spsim_model *m = shipped("nemotron-3-super");
    ck_assert_uint_eq(spsim_model_parameters(m, 1), (uint64_t)total);
    /* Active: 22 of the 512 experts in each of the 41 MoE layers. */
    double active = total - 41 * (E - 22) * 2 * r * fe;
    ck_assert_uint_eq(spsim_model_active_parameters(m, 1), (uint64_t)active);
    spsim_model_destroy(m);
}
END_TEST

/* One kind of layer's schedule at tp and cp (dp the rest of 8 GPUs, one micro-batch each). */
static size_t
kind_schedule(struct spsim_model_shape s, enum spsim_layer_kind kind, uint32_t tp, uint32_t cp,
              struct spsim_schedule_step *st)
{
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = terms_hw();
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.sp = tp > 1;
    p.cp = cp;
    p.dp = 8 / (tp * cp);
    p.gbs = p.dp;
    size_t n = 0;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_layer_kind_schedule(m, hw, &p, kind, st, SPSIM_MAX_SCHEDULE_STEPS, &n,
                                            &err) == SPSIM_OK,
                  "%s", err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
    return n;
}

static size_t
mamba_schedule(const char *pattern, uint32_t tp, uint32_t cp, struct spsim_schedule_step *st)
{
    return kind_schedule(small_shape(pattern), SPSIM_LAYER_MAMBA, tp, cp, st);
}

/*
 * The Mamba layer at tp 1, b = 1, s = 1024 (T = 1024 tokens, 8 chunks of Q): in_proj
 * 2·T·h·(2d + 2GN + H) = 2·1024·1024·3088 FLOPs, out_proj 2·T·d·h; the SSD matmuls bmm_chunk
 * 8·G × [Q×N]·[N×Q], chunk_state 8·H × [N×Q]·[Q×P], chunk_scan 8·H × [Q×Q]·[Q×P] and
 * 8·H × [Q×N]·[N×P]; the memory-bound kernels over HBM at 1 TB/s: the conv 4 (forward) and
 * 10 (backward) B per element of T·(d + 2GN), state passing 6 and 28 B per element of the
 * 8·H·P·N chunk states, the gate 6 and 10 B per element of T·d, the gated norm 4 and 10 B.
 */
START_TEST(mamba_terms)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = mamba_schedule("M*M-", 1, 1, st);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    double T = 1024, chunks = T / Q, proj = 2 * d + 2 * G * N + H;
    EQ(step(st, n, F, "Mamba in_proj GEMM (column-parallel: z, x, B, C, dt)", "forward")->flops,
       2 * T * h * proj);
    EQ(step(st, n, B, "Mamba in_proj GEMM (column-parallel: z, x, B, C, dt)", "wgrad")->flops,
       2 * T * h * proj);
    EQ(step(st, n, F, "Mamba out_proj GEMM (row-parallel)", "forward")->flops, 2 * T * d * h);
    EQ(step(st, n, F, "SSD C·Bᵀ within chunks (bmm_chunk)", "forward")->flops,
       2 * chunks * G * Q * N * Q);
    EQ(step(st, n, F, "SSD chunk states Bᵀ·x (chunk_state)", "forward")->flops,
       2 * chunks * H * N * Q * P);
    EQ(step(st, n, F, "SSD output within chunks (C·Bᵀ∘L)·x (chunk_scan)", "forward")->flops,
       2 * chunks * H * Q * Q * P);
    EQ(step(st, n, F, "SSD output from states C·states (chunk_scan)", "forward")->flops,
       2 * chunks * H * Q * N * P);
    double conv = T * (d + 2 * G * N), states = chunks * H * P * N, y = T * d;
    EQ(step(st, n, F, "causal conv1d and SiLU on x, B, C (causal_conv1d)", "forward")->time_s,
       4 * conv / HBM);
    EQ(step(st, n, B, "causal conv1d and SiLU on x, B, C (causal_conv1d)", "backward")->time_s,
       10 * conv / HBM);
    EQ(step(st, n, F, "SSD state passing across chunks (state_passing)", "forward")->time_s,
       6 * states / HBM);
    EQ(step(st, n, B, "SSD state passing across chunks (state_passing)", "backward")->time_s,
       28 * states / HBM);
    EQ(step(st, n, F, "SSD D skip and gate y·silu(z) (chunk_scan epilogue)", "forward")->time_s,
       6 * y / HBM);
    EQ(step(st, n, B, "SSD D skip and gate y·silu(z) (chunk_scan epilogue)", "backward")->time_s,
       10 * y / HBM);
    EQ(step(st, n, F, "gated RMSNorm (per group)", "forward")->time_s, 4 * y / HBM);
    EQ(step(st, n, B, "gated RMSNorm (per group)", "backward")->time_s, 10 * y / HBM);
}
END_TEST

/* TP 2 with SP: each rank H/2 heads and G/2 groups; the AllGather before in_proj and the
 * ReduceScatter after out_proj of M = b·s·h·2 B over 2 ranks, (M/2)/busbw each; in_proj's
 * per-rank width (2d + 2GN + H)/2. */
START_TEST(mamba_tp)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = mamba_schedule("M*M-", 2, 1, st);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD;
    double T = 1024, M = T * h * 2;
    const struct spsim_schedule_step *ag = step(st, n, F, "g: AllGather before in_proj", "");
    ck_assert_uint_eq(ag->message_bytes, (uint64_t)M);
    ck_assert_uint_eq(ag->group_size, 2);
    EQ(ag->time_s, M / 2 / NV);
    EQ(step(st, n, F, "ḡ: ReduceScatter after out_proj", "")->time_s, M / 2 / NV);
    EQ(step(st, n, F, "Mamba in_proj GEMM (column-parallel: z, x, B, C, dt)", "forward")->flops,
       2 * T * h * (2 * d + 2 * G * N + H) / 2);
    EQ(step(st, n, F, "SSD chunk states Bᵀ·x (chunk_state)", "forward")->flops,
       2 * (T / Q) * (H / 2) * N * Q * P);
}
END_TEST

/* CP (mamba_context_parallel.py): the all-to-all of z, x, B, C, dt from this rank's s/c tokens
 * of every local head to the whole sequence of H/c heads, (s/c)·(2d + 2GN·rep + H)·2 B, and of
 * y back, (s/c)·d·2 B, over the c ranks; with G = 4 groups and c = 8 each group's B and C is
 * repeated rep = c/G = 2 times before it. The scan then runs over s = 1024 with H/c heads and
 * max(1, G/c) groups. */
START_TEST(mamba_cp)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    double s = 1024;
    size_t n = mamba_schedule("M*M-", 1, 2, st);
    const struct spsim_schedule_step *a =
        step(st, n, F, "CP all-to-all of z, x, B, C, dt (Mamba)", "");
    ck_assert_uint_eq(a->message_bytes, (uint64_t)(s / 2 * (2 * d + 2 * G * N + H) * 2));
    ck_assert_uint_eq(a->group_size, 2);
    ck_assert_uint_eq(step(st, n, B, "CP all-to-all of y (Mamba)", "")->message_bytes,
                      (uint64_t)(s / 2 * d * 2));
    EQ(step(st, n, F, "SSD C·Bᵀ within chunks (bmm_chunk)", "forward")->flops,
       2 * (s / Q) * (G / 2) * Q * N * Q);
    n = mamba_schedule("M*M-", 1, 8, st);
    ck_assert_uint_eq(step(st, n, F, "CP all-to-all of z, x, B, C, dt (Mamba)", "")->message_bytes,
                      (uint64_t)(s / 8 * (2 * d + 2 * G * 2 * N + H) * 2));
    EQ(step(st, n, F, "SSD chunk states Bᵀ·x (chunk_state)", "forward")->flops,
       2 * (s / Q) * (H / 8) * N * Q * P);
    EQ(step(st, n, F, "SSD C·Bᵀ within chunks (bmm_chunk)", "forward")->flops,
       2 * (s / Q) * 1 * Q * N * Q);
}
END_TEST

static void
evaluate(const char *pattern, uint32_t pp, uint32_t gbs, struct spsim_result *r)
{
    struct spsim_model_shape s = small_shape(pattern);
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = terms_hw();
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.pp = pp;
    p.gbs = gbs;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, r, &err) == SPSIM_OK, "%s", err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}

/*
 * Activations kept for backward, tp 1, b = 1, s = 1024, no recomputation (T = 1024):
 *   Mamba: norm input and in_proj input 2·T·h each, zxbcdt 2·T·(2d + 2GN + H), out_x, the
 *     gated norm's input and out_proj's input 2·T·d each: 16,809,984 B;
 *   attention: norm input, QKV input 2·T·h each, Q and K 2·T·(q + kv), V 2·T·kv, the fp32
 *     log-sum-exp 4·8·T, the projection input 2·T·q: 9,469,952 B;
 *   MLP: norm input, FC1 input 2·T·h each, the squared ReLU's input and FC2's 2·T·f each.
 * pp 2 splits "M*M-" into "M*" and "M-" (select_pipeline_segment, no pipes: L/p each); 1F1B
 * holds 2 micro-batches on stage 0 (gbs 4): 2·(Mamba + attention). Parameters: stage 0 a Mamba
 * and the attention layer with the embedding, stage 1 a Mamba and the MLP layer with the final
 * norm and output.
 */
START_TEST(stages_by_pattern)
{
    double T = 1024;
    double mamba = 2 * T * h * 2 + 2 * T * (2 * d + 2 * G * N + H) + 3 * 2 * T * d;
    double attention = 2 * T * h * 2 + 2 * T * (q + kv) + 2 * T * kv + 4 * 8 * T + 2 * T * q;
    double mlp = 2 * T * h * 2 + 2 * 2 * T * f;
    ck_assert_double_eq(mamba, 16809984);
    struct spsim_result r;
    evaluate("M*M-", 1, 1, &r);
    ck_assert_uint_eq(r.memory.activation_per_layer_bytes, (uint64_t)mamba);
    ck_assert_uint_eq(r.memory.activation_layers_bytes, (uint64_t)(2 * mamba + attention + mlp));
    evaluate("M*M-", 2, 4, &r);
    ck_assert_uint_eq(r.memory.activation_layers_bytes, (uint64_t)(2 * (mamba + attention)));
    double pm = mamba_params(h, H, P, N, G);
    ck_assert_uint_eq(r.memory.parameters_first_stage,
                      (uint64_t)(pm + h + h * (q + 2 * kv) + q * h + V * h));
    ck_assert_uint_eq(r.memory.parameters_last_stage, (uint64_t)(pm + h + 2 * h * f + V * h + h));
}
END_TEST

/*
 * Model FLOPs per token, forward, of "M*M-" at s = 1024 (×3 for forward and backward, × gbs·s):
 *   Megatron-Bridge (flop_utils.py hybrid_flops): a Mamba layer 2h(2·d_in + 2GN + H) + 7·d_in·N
 *     + 2·d_in·h with d_in = 2h (not H·P), the attention 4h(q + kv) + 2·q·s (causal), the MLP
 *     4·f·h, the logits 2·h·V;
 *   spsim's own (time.model_flops): 2 per weight, core attention 4·q·s, the conv
 *     2·d_conv·(d + 2GN) and the SSD matmuls 2·Q·N·G + 4·N·d + 2·Q·d.
 */
START_TEST(hybrid_model_flops)
{
    double s = 1024, din = 2 * h;
    double bridge_mamba = 2 * h * (2 * din + 2 * G * N + H) + 7 * din * N + 2 * din * h;
    double bridge = 2 * bridge_mamba + 4 * h * (q + kv) + 2 * q * s + 4 * f * h + 2 * h * V;
    double weights =
        2 * (h * (2 * d + 2 * G * N + H) + d * h) + h * (q + 2 * kv) + q * h + 2 * h * f;
    double scan = 2 * dconv * (d + 2 * G * N) + 2 * Q * N * G + 4 * N * d + 2 * Q * d;
    double model = 2 * weights + 2 * scan + 4 * q * s + 2 * h * V;
    struct spsim_result r;
    evaluate("M*M-", 1, 2, &r);
    EQ(r.time.model_flops_megatron, 3 * 2 * s * bridge);
    EQ(r.time.model_flops, 3 * 2 * s * model);
}
END_TEST

/* A shape for the refusals: 8 KV heads so that the attention's TP rule passes, the Mamba
 * heads and groups as given. */
static void
refused(uint32_t heads, uint32_t groups, uint32_t tp, uint32_t cp, uint32_t vpp,
        enum spsim_dtype dtype, const char *want)
{
    struct spsim_model_shape s = small_shape("M*M-");
    s.kv_heads = 8;
    s.mamba_heads = heads;
    s.mamba_groups = groups;
    struct spsim_model *m = testutil_model(&s);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.sp = tp > 1;
    p.cp = cp;
    p.pp = vpp > 1 ? 2 : 1;
    p.vpp = vpp;
    p.gbs = 2;
    p.dtype = dtype;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, want), "'%s' lacks '%s'", err.message, want);
    spsim_model_destroy(m);
}

/* mamba_mixer.py and mamba_context_parallel.py asserts, select_pipeline_segment's vpp rule, and
 * FP8's width: H = 20 heads of 64 with 4 groups make 2d + 2GN + H = 2560 + 1024 + 20 = 3604, not
 * a multiple of 16 (16 heads: 3088 = 16·193 passes). */
START_TEST(hybrid_refusals)
{
    const enum spsim_dtype bf16 = SPSIM_DTYPE_BF16;
    refused(16, 4, 8, 1, 1, bf16, "ngroups must be evenly divisible by tp_size");
    refused(12, 4, 8, 1, 1, bf16, "nheads must be evenly divisble by tp_size");
    refused(16, 4, 1, 32, 1, bf16, "nheads must be evenly divisible by tp_size * cp_size");
    refused(24, 12, 1, 8, 1, bf16, "ngroups must be evenly divisible by tp_size * cp_size");
    refused(16, 4, 1, 1, 2, bf16, "no pipe ('|') separators");
    refused(20, 4, 1, 1, 1, SPSIM_DTYPE_FP8, "must be a multiple of 16");
    struct spsim_model_shape s = small_shape("M*M-");
    struct spsim_model *m = testutil_model(&s);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.dtype = SPSIM_DTYPE_FP8;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_OK);
    spsim_model_destroy(m);
}
END_TEST

/* The profile's rules (model_hybrid.c): one symbol per layer, symbols Megatron defines but spsim
 * does not build refused with their reason, Mamba fields only with Mamba layers. */
START_TEST(pattern_rules)
{
    static const struct {
        const char *pattern;
        const char *want;
    } rows[] = {
        {"M*M", "has 3 symbols but layers is 4"},
        {"M*MD", "a DeepSeek sparse-attention layer"},
        {"M*|M", "'|' splits pipeline stages"},
        {"M*Mx", "'x' is not a layer symbol"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        struct spsim_model_shape s = small_shape(rows[i].pattern);
        s.layers = 4;
        struct spsim_model *m = NULL;
        struct spsim_error err = {0};
        ck_assert_int_eq(spsim_model_create(&s, "t", &m, &err), SPSIM_EFIELD);
        ck_assert_msg(strstr(err.message, rows[i].want), "'%s' lacks '%s'", err.message,
                      rows[i].want);
    }
    struct spsim_model_shape s = small_shape("*-*-");
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_model_create(&s, "t", &m, &err), SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, "is a Mamba field"), "%s", err.message);
}
END_TEST

/* The hybrid attention and MLP layers' norms are fused in their first linear (hybrid_layer_
 * specs.py), the Mamba layer's in in_proj: --recompute-modules layernorm drops nothing of them
 * (the stage keeps what it keeps without recomputation). */
START_TEST(fused_norms_not_recomputed)
{
    struct spsim_result none, ln;
    struct spsim_model_shape s = small_shape("M*M-");
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = terms_hw();
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, &none, &err) == SPSIM_OK, "%s", err.message);
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.recompute_modules = SPSIM_RMOD_LAYERNORM;
    ck_assert_msg(spsim_evaluate(m, hw, &p, &ln, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(ln.memory.activation_layers_bytes, none.memory.activation_layers_bytes);
    /* Nor does the backward replay a norm: no recomputation time either. */
    ck_assert_double_eq(ln.time.recompute_s, none.time.recompute_s);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * A latent MoE layer (moe_layer.py, Nemotron 3 Super): "ME" with 32 experts of f_e = 256 on a
 * latent r = 256, top 4, ep 8, alltoall, balanced routing, tp 1, T = 1024 tokens. The tokens are
 * projected h → r before the dispatch (2·T·h·r FLOPs) and back after the combine; the dispatch
 * carries T·k·(2r + 4) B, the combine T·k·2r, and the experts' FC1 runs 4 local experts of
 * T·k·ep/E = 1024 rows × [r → f_e] (each of the 8 ranks sends it T·k/E = 128).
 */
START_TEST(latent_moe_terms)
{
    struct spsim_model_shape s = small_shape("ME");
    s.experts = 32;
    s.experts_per_token = 4;
    s.expert_ffn_hidden = 256;
    s.moe_latent = 256;
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = terms_hw();
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.ep = 8;
    p.dp = 8;
    p.gbs = 8;
    p.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    p.moe_routing = SPSIM_MOE_ROUTING_BALANCED;
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = 0;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_layer_kind_schedule(m, hw, &p, SPSIM_LAYER_MOE, st,
                                            SPSIM_MAX_SCHEDULE_STEPS, &n, &err) == SPSIM_OK,
                  "%s", err.message);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD;
    double T = 1024, r = 256, k = 4, fe = 256;
    EQ(step(st, n, F, "latent down-projection GEMM (fc1_latent_proj, duplicated)", "forward")
           ->flops,
       2 * T * h * r);
    EQ(step(st, n, F, "latent up-projection GEMM (fc2_latent_proj, duplicated)", "forward")->flops,
       2 * T * r * h);
    ck_assert_uint_eq(step(st, n, F, "dispatch all-to-all (EP)", "")->message_bytes,
                      (uint64_t)(T * k * 2 * r));
    ck_assert_uint_eq(
        step(st, n, F, "dispatch all-to-all of the probabilities (EP)", "")->message_bytes,
        (uint64_t)(T * k * 4));
    ck_assert_uint_eq(step(st, n, F, "combine all-to-all (EP)", "")->message_bytes,
                      (uint64_t)(T * k * 2 * r));
    EQ(step(st, n, F, "experts FC1 grouped GEMM", "forward")->flops, 2 * 4 * 1024 * r * fe);
    /* Parameters: the MoE layer's norm, router h·E, 32 experts of 2·r·f_e, the projections
     * 2·h·r (no shared expert). */
    double moe = h + h * 32 + 32 * 2 * r * fe + 2 * h * r;
    ck_assert_uint_eq(spsim_model_parameters(m, 1),
                      (uint64_t)(mamba_params(h, H, P, N, G) + moe + 2 * V * h + h));
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * Gated DeltaNet ('G', Megatron-LM d98e8a6 ssm/gated_delta_net/common.py and gdn.py; the FLA
 * kernels of fla-org/flash-linear-attention bc3b101 fla/ops/gated_delta_rule/chunk.py; Yang et
 * al., Gated Delta Networks, ICLR 2025 §3.3), on the small model with the pattern "G*G-":
 * H_k = 2 key heads of d_k = 64 (qk = 128), H_v = 8 value heads of d_v = 128 (v = 1024), a
 * 4-tap convolution, chunk C = 64 (gdn.py chunk_size).
 */
static const double Hv = 8, dk = 64, dv = 128, Cg = 64;
static const double qkg = 128, vg = 1024, ing = 2 * 128 + 2 * 1024 + 2 * 8; /* in_proj width */

static struct spsim_model_shape
gdn_shape(const char *pattern)
{
    struct spsim_model_shape m = small_shape(pattern);
    m.mamba_heads = m.mamba_head_dim = m.mamba_state_dim = 0;
    m.mamba_groups = m.mamba_conv = m.mamba_chunk = 0;
    m.gdn_key_heads = 2;
    m.gdn_value_heads = 8;
    m.gdn_key_head_dim = 64;
    m.gdn_value_head_dim = 128;
    m.gdn_conv = 4;
    return m;
}

/* One GDN layer (common.py _GDNBase.__init__): the input norm fused in in_proj h, in_proj
 * h·(2qk + 2v + 2H_v) = 1024·2320, conv1d (2qk + v)·4 without bias, dt_bias and A_log H_v each,
 * out_norm d_v (one γ for every head), out_proj v·h: 3,430,544 parameters. */
START_TEST(gdn_parameters)
{
    double gdn = h + h * ing + (2 * qkg + vg) * dconv + 2 * Hv + dv + vg * h;
    ck_assert_double_eq(gdn, 3430544);
    struct spsim_model_shape s = gdn_shape("G*G-");
    struct spsim_model *m = testutil_model(&s);
    double attention = h + h * (q + 2 * kv) + q * h, mlp = h + 2 * h * f;
    ck_assert_uint_eq(spsim_model_parameters(m, 1),
                      (uint64_t)(2 * gdn + attention + mlp + 2 * V * h + h));
    ck_assert_int_eq(spsim_model_layer_kind(m, 0), SPSIM_LAYER_GDN);
    spsim_model_destroy(m);
    /* Megatron's defaults (transformer_config.py: 16 key heads, 32 value heads of 128, 4 taps)
     * when the profile gives none. */
    s = gdn_shape("G*G-");
    s.gdn_key_heads = s.gdn_value_heads = s.gdn_key_head_dim = s.gdn_value_head_dim = 0;
    s.gdn_conv = 0;
    m = testutil_model(&s);
    const struct spsim_model_shape *got = spsim_model_get_shape(m);
    ck_assert_uint_eq(got->gdn_key_heads, 16);
    ck_assert_uint_eq(got->gdn_value_heads, 32);
    ck_assert_uint_eq(got->gdn_key_head_dim, 128);
    ck_assert_uint_eq(got->gdn_conv, 4);
    spsim_model_destroy(m);
    /* The gates need what they act on (model_hybrid.c check_gates). */
    struct spsim_error err = {0};
    s = gdn_shape("G*G-");
    s.moe_shared_expert_gate = true;
    ck_assert_int_eq(spsim_model_create(&s, "t", &m, &err), SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, "needs shared experts"), "%s", err.message);
    s = gdn_shape("G*G-");
    s.rotary_percent = 0.5; /* the small model has no position embedding */
    ck_assert_int_eq(spsim_model_create(&s, "t", &m, &err), SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, "needs position_embedding"), "%s", err.message);
}
END_TEST

static size_t
gdn_schedule(uint32_t tp, uint32_t cp, struct spsim_schedule_step *st)
{
    return kind_schedule(gdn_shape("G*G-"), SPSIM_LAYER_GDN, tp, cp, st);
}

/*
 * The GDN layer at tp 1, b = 1, s = 1024 (T = 1024 tokens, 16 chunks of C): in_proj
 * 2·T·h·2320, out_proj 2·T·v·h; the kernel's matmuls over 16·H_v = 128 chunk-heads: β·K·Kᵀ
 * [C×d_k]·[d_k×C], w = A·(βK) [C×C]·[C×d_k], u = A·(βV) [C×C]·[C×d_v], v_new = u − w·S
 * [C×d_k]·[d_k×d_v], Kᵀ·v_new [d_k×C]·[C×d_v], Q·Kᵀ [C×d_k]·[d_k×C], ·v_new [C×C]·[C×d_v], Q·S
 * [C×d_k]·[d_k×d_v] (2mkn each), and the memory-bound kernels at 1 TB/s: the conv 4 and 6 B per
 * element of T·(2qk + v), the L2 norm 4 and 6 B of T·2qk, the repeat 2·T·2qk + 4·T·H_v·d_k B
 * each way, the gates 10 and 14 B per element of T·H_v, the chunk states 4 and 8 B per element
 * of 16·H_v·d_k·d_v, the gated norm 6 and 10 B of T·v.
 */
START_TEST(gdn_terms)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = gdn_schedule(1, 1, st);
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    double T = 1024, nc = T / Cg * Hv;
    EQ(step(st, n, F, "GDN in_proj GEMM (column-parallel: q, k, v, z, β, α)", "forward")->flops,
       2 * T * h * ing);
    EQ(step(st, n, F, "GDN out_proj GEMM (row-parallel)", "forward")->flops, 2 * T * vg * h);
    const struct {
        const char *name;
        double m, k, n; /* each chunk-head's [m×k]·[k×n] */
    } bmm[] = {
        {"GDN β·K·Kᵀ within chunks (chunk_scaled_dot_kkt)", Cg, dk, Cg},
        {"GDN WY w = A·(β·K) (recompute_w_u)", Cg, Cg, dk},
        {"GDN WY u = A·(β·V) (recompute_w_u)", Cg, Cg, dv},
        {"GDN v_new = u − w·S (chunk_fwd_h)", Cg, dk, dv},
        {"GDN state update Kᵀ·v_new (chunk_fwd_h)", dk, Cg, dv},
        {"GDN Q·Kᵀ within chunks (chunk_fwd_o)", Cg, dk, Cg},
        {"GDN (Q·Kᵀ∘M)·v_new (chunk_fwd_o)", Cg, Cg, dv},
        {"GDN output from states Q·S (chunk_fwd_o)", Cg, dk, dv},
    };
    for (size_t i = 0; i < sizeof(bmm) / sizeof(bmm[0]); i++)
        EQ(step(st, n, F, bmm[i].name, "forward")->flops, 2 * nc * bmm[i].m * bmm[i].k * bmm[i].n);
    double conv = T * (2 * qkg + vg), qkn = T * 2 * qkg, gates = T * Hv;
    double states = nc * dk * dv, y = T * vg;
    EQ(step(st, n, F, "causal conv1d and SiLU on q, k, v (FLA causal_conv1d)", "forward")->time_s,
       4 * conv / HBM);
    EQ(step(st, n, B, "causal conv1d and SiLU on q, k, v (FLA causal_conv1d)", "backward")->time_s,
       6 * conv / HBM);
    EQ(step(st, n, F, "L2 norm of q and k (FLA l2norm)", "forward")->time_s, 4 * qkn / HBM);
    EQ(step(st, n, B, "L2 norm of q and k (FLA l2norm)", "backward")->time_s, 6 * qkn / HBM);
    EQ(step(st, n, F, "q and k repeated to the value heads (repeat_interleave)", "forward")->time_s,
       (2 * qkn + 4 * T * Hv * dk) / HBM);
    EQ(step(st, n, F, "GDN gates g and β (softplus, sigmoid)", "forward")->time_s,
       10 * gates / HBM);
    EQ(step(st, n, B, "GDN gates g and β (softplus, sigmoid)", "backward")->time_s,
       14 * gates / HBM);
    EQ(step(st, n, F, "GDN chunk states (chunk_fwd_h)", "forward")->time_s, 4 * states / HBM);
    EQ(step(st, n, B, "GDN chunk states (chunk_fwd_h)", "backward")->time_s, 8 * states / HBM);
    EQ(step(st, n, F, "GDN gated RMSNorm out_norm(o)·silu(z)", "forward")->time_s, 6 * y / HBM);
    EQ(step(st, n, B, "GDN gated RMSNorm out_norm(o)·silu(z)", "backward")->time_s, 10 * y / HBM);
}
END_TEST

/* TP 2 with SP: in_proj's per-rank width 2320/2, the kernel on H_v/2 heads, the AllGather before
 * in_proj of b·s·h·2 B. CP 2 (common.py a2a_cp_to_hp, a2a_hp_to_cp): the all-to-all of q, k, v,
 * z, β, α from s/2 tokens of every head, (s/2)·2320·2 B, and of the gated output back,
 * (s/2)·v·2 B; the kernel then runs over the whole s = 1024 (16 chunks) with H_v/2 heads. */
START_TEST(gdn_tp_cp)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    double T = 1024, s = 1024;
    size_t n = gdn_schedule(2, 1, st);
    EQ(step(st, n, F, "GDN in_proj GEMM (column-parallel: q, k, v, z, β, α)", "forward")->flops,
       2 * T * h * ing / 2);
    EQ(step(st, n, F, "GDN β·K·Kᵀ within chunks (chunk_scaled_dot_kkt)", "forward")->flops,
       2 * (T / Cg) * (Hv / 2) * Cg * dk * Cg);
    ck_assert_uint_eq(step(st, n, F, "g: AllGather before in_proj", "")->message_bytes,
                      (uint64_t)(T * h * 2));
    n = gdn_schedule(1, 2, st);
    const struct spsim_schedule_step *a =
        step(st, n, F, "CP all-to-all of q, k, v, z, β, α (GDN)", "");
    ck_assert_uint_eq(a->message_bytes, (uint64_t)(s / 2 * ing * 2));
    ck_assert_uint_eq(a->group_size, 2);
    ck_assert_uint_eq(step(st, n, B, "CP all-to-all of the gated output (GDN)", "")->message_bytes,
                      (uint64_t)(s / 2 * vg * 2));
    EQ(step(st, n, F, "GDN Q·Kᵀ within chunks (chunk_fwd_o)", "forward")->flops,
       2 * (s / Cg) * (Hv / 2) * Cg * dk * Cg);
}
END_TEST

static void
gdn_evaluate(struct spsim_model_shape s, uint32_t tp, uint32_t cp, struct spsim_result *r,
             const char *refusal)
{
    struct spsim_model *m = testutil_model(&s);
    struct spsim_hardware *hw = terms_hw();
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.sp = tp > 1;
    p.cp = cp;
    p.gbs = 1;
    struct spsim_error err = {0};
    int rc = spsim_evaluate(m, hw, &p, r, &err);
    if (refusal)
        ck_assert_msg(rc == SPSIM_ECONFIG && strstr(err.message, refusal), "%d %s", rc,
                      err.message);
    else
        ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}

/*
 * Activations kept by the GDN layer, tp 1, b = 1, s = 1024 (2 B each, per token): the norm
 * input and in_proj input h each, the conv1d input 2qk + v, the L2-normed q and k 2qk, the
 * gates' inputs α and b 2·H_v, the kernel's q, k and v H_v·(2·d_k + d_v), g (fp32) and β
 * 3·H_v, A H_v·C, the kernel output o and the gate z 2v, out_proj's input v: 18,956,288 B.
 * Model FLOPs per token, forward (×3 × s for the iteration at gbs 1): spsim's
 * 2·(h·2320 + v·h) + 2·4·(2qk + v) + H_v·(6·C·d_k + 4·C·d_v + 6·d_k·d_v) per GDN layer;
 * Megatron-LM training.py gdn_layer_flops 2·(h·2320 + 4·(2qk + v) + 4·H_v·d_v² + h·v).
 * Refused as transformer_config.py refuses: key heads not a multiple of tp·cp (cp 4).
 */
START_TEST(gdn_activations_and_flops)
{
    double T = 1024, s = 1024;
    double kept = 2 * T *
                  (2 * h + (2 * qkg + vg) + 2 * qkg + 2 * Hv + Hv * (2 * dk + dv) + 3 * Hv +
                   Hv * Cg + 2 * vg + vg);
    ck_assert_double_eq(kept, 18956288);
    struct spsim_result r;
    gdn_evaluate(gdn_shape("G*G-"), 1, 1, &r, NULL);
    ck_assert_uint_eq(r.memory.activation_per_layer_bytes, (uint64_t)kept);
    double gdn = 2 * (h * ing + vg * h) + 2 * dconv * (2 * qkg + vg) +
                 Hv * (6 * Cg * dk + 4 * Cg * dv + 6 * dk * dv);
    double megatron_gdn = 2 * (h * ing + dconv * (2 * qkg + vg) + 4 * Hv * dv * dv + h * vg);
    double rest = 2 * (h * (q + 2 * kv) + q * h + 2 * h * f) + 4 * q * s + 2 * h * V;
    double bridge_rest = 4 * h * (q + kv) + 2 * q * s + 4 * f * h + 2 * h * V;
    EQ(r.time.model_flops, 3 * s * (2 * gdn + rest));
    EQ(r.time.model_flops_megatron, 3 * s * (2 * megatron_gdn + bridge_rest));
    gdn_evaluate(gdn_shape("G*G-"), 1, 4, &r,
                 "self.linear_num_key_heads=2 must be a multiple of "
                 "(self.tensor_model_parallel_size=1 * self.context_parallel_size=4)");
}
END_TEST

/*
 * Gated attention as Qwen3-Next's full-attention layers have it (Megatron-LM d98e8a6
 * attention.py: attention_output_gate widens linear_qkv by heads·head_dim, _apply_output_gate
 * x·sigmoid(gate)), with rotary embedding on a quarter of each head (--rotary-percent 0.25),
 * on the "G*G-" model at tp 1, b = 1, s = 1024: the QKV GEMM 2·T·h·(2q + 2kv) FLOPs, the gate
 * 6 and 10 B per element of T·q, RoPE 4·0.25 B per element of T·(q + kv) each way; the
 * parameters h·q more; the gate keeps the core attention output and the gate, 2·2·T·q B.
 */
START_TEST(gated_attention_terms)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    const enum spsim_phase F = SPSIM_PHASE_FORWARD, B = SPSIM_PHASE_BACKWARD;
    double T = 1024;
    struct spsim_model_shape s = gdn_shape("G*G-");
    s.position = SPSIM_POSITION_ROPE;
    s.rotary_percent = 0.25;
    struct spsim_model *plain = testutil_model(&s);
    s.attention_output_gate = true;
    struct spsim_model *gated = testutil_model(&s);
    ck_assert_uint_eq(spsim_model_parameters(gated, 1) - spsim_model_parameters(plain, 1),
                      (uint64_t)(h * q));
    spsim_model_destroy(plain);
    spsim_model_destroy(gated);
    size_t n = kind_schedule(s, SPSIM_LAYER_ATTENTION, 1, 1, st);
    EQ(step(st, n, F, "QKV GEMM (column-parallel)", "forward")->flops,
       2 * T * h * (2 * q + 2 * kv));
    EQ(step(st, n, F, "attention output gate x·sigmoid(gate)", "forward")->time_s, 6 * T * q / HBM);
    EQ(step(st, n, B, "attention output gate x·sigmoid(gate)", "backward")->time_s,
       10 * T * q / HBM);
    EQ(step(st, n, F, "RoPE on Q and K", "forward")->time_s, 4 * 0.25 * T * (q + kv) / HBM);
    struct spsim_result with, without;
    gdn_evaluate(s, 1, 1, &with, NULL);
    s.attention_output_gate = false;
    gdn_evaluate(s, 1, 1, &without, NULL);
    ck_assert_uint_eq(with.memory.activation_layers_bytes - without.memory.activation_layers_bytes,
                      (uint64_t)(2 * 2 * T * q));
}
END_TEST

/* The shared expert's sigmoid gate (moe/shared_experts.py, --moe-shared-expert-gate; Qwen3-Next)
 * on "G*EE" with 4 experts of 512, top 2, a shared expert of 512, tp 1, s = 1024: gate_weight
 * h more parameters per MoE layer, the gate 6 and 10 B per element of T·h. */
START_TEST(shared_expert_gate_terms)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    double T = 1024;
    struct spsim_model_shape s = gdn_shape("G*EE");
    s.experts = 4;
    s.experts_per_token = 2;
    s.expert_ffn_hidden = 512;
    s.shared_expert_ffn_hidden = 512;
    struct spsim_model *plain = testutil_model(&s);
    s.moe_shared_expert_gate = true;
    struct spsim_model *gated = testutil_model(&s);
    ck_assert_uint_eq(spsim_model_parameters(gated, 1) - spsim_model_parameters(plain, 1),
                      (uint64_t)(2 * h));
    spsim_model_destroy(plain);
    spsim_model_destroy(gated);
    size_t n = kind_schedule(s, SPSIM_LAYER_MOE, 1, 1, st);
    EQ(step(st, n, SPSIM_PHASE_FORWARD, "shared expert gate y·sigmoid(x·w)", "forward")->time_s,
       6 * T * h / HBM);
    EQ(step(st, n, SPSIM_PHASE_BACKWARD, "shared expert gate y·sigmoid(x·w)", "backward")->time_s,
       10 * T * h / HBM);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("hybrid");
    TCase *tc = tcase_create("hybrid");
    tcase_add_test(tc, small_model_parameters);
    tcase_add_test(tc, published_parameter_counts);
    tcase_add_test(tc, super_by_hand);
    tcase_add_test(tc, mamba_terms);
    tcase_add_test(tc, mamba_tp);
    tcase_add_test(tc, mamba_cp);
    tcase_add_test(tc, stages_by_pattern);
    tcase_add_test(tc, hybrid_model_flops);
    tcase_add_test(tc, hybrid_refusals);
    tcase_add_test(tc, pattern_rules);
    tcase_add_test(tc, fused_norms_not_recomputed);
    tcase_add_test(tc, latent_moe_terms);
    tcase_add_test(tc, gdn_parameters);
    tcase_add_test(tc, gdn_terms);
    tcase_add_test(tc, gdn_tp_cp);
    tcase_add_test(tc, gdn_activations_and_flops);
    tcase_add_test(tc, gated_attention_terms);
    tcase_add_test(tc, shared_expert_gate_terms);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
