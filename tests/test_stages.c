/*
 * Uneven pipeline stages (Megatron-Core get_num_layers_to_build and its checks), the memory a
 * GPU leaves to tensors, and the named model-FLOPs formulas: every figure against a closed
 * form worked by hand beside it.
 */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stages.h"
#include "spsim/spsim.h"
#include "testutil.h"

/* The GPT shape of these tests: L = 30, h = 1024, a = 16, s = 512, v = 51200 (a multiple of
 * 128·t for t <= 2, so unpadded); tp 2 with SP and selective recompute. */
#define L 30
#define H 1024ull
#define S 512ull
#define V 51200ull
#define T 2ull

/* Korthikanti et al. 2022 Table 2, TP + SP + selective: 34·s·b·h/t bytes per layer (b = 1). */
#define ACT (34 * S * H / T)
/* Paper §4.3: the embedding dropout mask (1 byte per element) of each in-flight micro-batch,
 * s·b·h/t; and on the last stage the final LayerNorm input, the output layer's input (2 bytes
 * each, SP-sharded: 4sbh/t) and the fp32 logits (4·s·b·v/t). */
#define EMB_MASK (S * H / T)
#define OUTPUT   (4 * S * H / T + 4 * S * V / T)
/* At the loss, beside the fp32 logits, the output layer's 16-bit logits (Megatron-LM
 * gpt_model.py:807 and cross_entropy.py:25 @d98e8a64): 2·s·b·v/t = 2·512·51200/2 = 26,214,400. */
#define LOGITS (2 * S * V / T)
/* Parameters of one TP rank (the memory suite's count): per layer the QKV, projection, FC1
 * and FC2 weights and the column-parallel biases over t, the two row-parallel biases and two
 * LayerNorms (2h each) replicated; the embedding is v·h/t plus s·h learned positions; the last
 * stage has the final LayerNorm (2h) and, the embeddings being tied, its own copy v·h/t. */
#define P_LAYER  ((12 * H * H + 7 * H) / T + 6 * H)
#define P_EMBED  (V * H / T + S * H)
#define P_OUTPUT (2 * H + V * H / T)
/* 18 bytes per parameter: bf16 weight, fp32 gradient, fp32 master and Adam moments. */
#define STATIC(p) (18 * (p))

static struct spsim_model *
gpt(void)
{
    struct spsim_model_shape ms = testutil_gpt_shape(L, (uint32_t)H, 16, (uint32_t)S, (uint32_t)V);
    return testutil_model(&ms);
}

static struct spsim_parallel
base(uint32_t pp, uint32_t vpp, uint64_t gbs)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = (uint32_t)T;
    p.pp = pp;
    p.vpp = vpp;
    p.sp = true;
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    p.gbs = gbs;
    return p;
}

static void
evaluate_ok(const struct spsim_model *m, const struct spsim_hardware *hw,
            const struct spsim_parallel *p, struct spsim_result *r)
{
    struct spsim_error err = {0};
    int rc = spsim_evaluate(m, hw, p, r, &err);
    ck_assert_msg(rc == SPSIM_OK, "spsim_evaluate: %s", err.message);
}

static void
refused(const struct spsim_parallel *p, const char *message)
{
    struct spsim_model *m = gpt();
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, NULL, p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, message), "'%s' lacks '%s'", err.message, message);
    spsim_model_destroy(m);
}

START_TEST(first_last_stages_1f1b)
{
    /* --decoder-first/last-pipeline-num-layers 2: the other 26 layers over the 2 middle ranks,
     * 13 each. 1F1B holds min(p − r, m) micro-batches on rank r (m = 8): rank 0 4·2 = 8
     * layers, rank 1 3·13 = 39, rank 2 2·13 = 26, rank 3 1·2 = 2. */
    struct spsim_model *m = gpt();
    struct spsim_parallel p = base(4, 1, 8);
    p.first_stage_layers = 2;
    p.last_stage_layers = 2;
    struct spsim_result r;
    evaluate_ok(m, NULL, &p, &r);
    ck_assert_uint_eq(r.memory.layers_first_stage, 2);
    ck_assert_uint_eq(r.memory.layers_last_stage, 2);
    ck_assert_uint_eq(r.memory.layers_per_stage, 13);
    ck_assert_uint_eq(r.memory.activation_layers_bytes, 8 * ACT);
    ck_assert_uint_eq(r.memory.activation_first_stage_bytes, 8 * ACT + 4 * EMB_MASK);
    ck_assert_uint_eq(r.memory.activation_last_stage_bytes, 2 * ACT + OUTPUT + LOGITS);
    ck_assert_uint_eq(r.memory.parameters_first_stage, 2 * P_LAYER + P_EMBED);
    ck_assert_uint_eq(r.memory.parameters_last_stage, 2 * P_LAYER + P_OUTPUT);
    /* The most loaded rank is a middle one: 39·ACT + 18·13·P_LAYER = 1,822,080,000 B against
     * rank 0's 8·ACT + 4·EMB_MASK + 18·(2·P_LAYER + P_EMBED) = 780,490,752 B. */
    uint64_t mid = 39 * ACT + STATIC(13 * P_LAYER);
    uint64_t first = 8 * ACT + 4 * EMB_MASK + STATIC(2 * P_LAYER + P_EMBED);
    ck_assert_uint_eq(mid, 1822080000ull);
    ck_assert_uint_eq(first, 780490752ull);
    ck_assert_uint_eq(r.memory.peak_stage, 1);
    ck_assert_uint_eq(r.memory.layers_peak_stage, 13);
    ck_assert_uint_eq(r.memory.total_bytes, mid);
    ck_assert_uint_eq(r.memory.activation_peak_stage_bytes, 39 * ACT);
    ck_assert_uint_eq(r.memory.parameters_per_gpu, 13 * P_LAYER);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(accounted_embedding_and_loss_interleaved)
{
    /* --account-for-embedding/loss-in-pipeline-split, p 4, v 2: (30 + 2)/4 = 8 layers per
     * rank, 4 per chunk, less one on chunk 0 of rank 0 and chunk 1 of rank 3 (3 each).
     * Interleaved schedule, m = 8, groups of p = 4 micro-batches: forward k runs chunk
     * (k mod 8) div 4, backward j chunk 1 − (j mod 8) div 4; warm-up 2(p − r − 1) + (v − 1)p.
     * Rank 0 (chunks 3, 4): warm-up 10 forwards = 4·3 + 4·4 + 2·3 = 34 layers; then per step
     * + forward, peak, − backward: +3 → 37, −4; +3 → 36, −4; +4 → 36, −4; +4 → 36, −4;
     * +4 → 36, −3; +4 → 37, −3. Peak 37 (equal chunks of 4 would hold (10 + 1)·4 = 44).
     * Rank 3 (chunks 4, 3): warm-up 4 forwards of chunk 0 = 16; steady: chunk-1 forwards
     * +3 → 19 (freed −3), then chunk-0 forwards +4 → 20. Peak 20. Embedding dropout masks on
     * rank 0: chunk-0 forwards 0..3 and 8..11 (micro-batches 0..7) run before the first chunk-0
     * backward (backward 4): 2p = 8. */
    struct spsim_model *m = gpt();
    struct spsim_parallel p = base(4, 2, 8);
    p.account_embedding = true;
    p.account_loss = true;
    struct spsim_result r;
    evaluate_ok(m, NULL, &p, &r);
    ck_assert_uint_eq(r.memory.layers_first_stage, 7);
    ck_assert_uint_eq(r.memory.layers_last_stage, 7);
    ck_assert_uint_eq(r.memory.layers_per_chunk, 4);
    ck_assert_uint_eq(r.memory.activation_layers_bytes, 37 * ACT);
    ck_assert_uint_eq(r.memory.activation_first_stage_bytes, 37 * ACT + 8 * EMB_MASK);
    ck_assert_uint_eq(r.memory.activation_last_stage_bytes, 20 * ACT + OUTPUT + LOGITS);
    /* Rank 1 (uniform chunks of 4): (2·2 + 4 + 1)·4 = 36 layers, 8 layers' parameters. */
    uint64_t r0 = 37 * ACT + 8 * EMB_MASK + STATIC(7 * P_LAYER + P_EMBED);
    uint64_t r1 = 36 * ACT + STATIC(8 * P_LAYER);
    ck_assert_uint_eq(r.memory.total_bytes, r0 > r1 ? r0 : r1);
    ck_assert_uint_eq(r.memory.peak_stage, r0 > r1 ? 0 : 1);
    spsim_model_destroy(m);
}
END_TEST

/* The interleaved peak of a rank whose chunks differ by the accounted embedding or loss, in
 * closed form (stages.c interleaved_peak_split), against the same chunks given as a layout,
 * which the schedule's step-by-step count takes (interleaved_peak): every p ≤ 6, v ≤ 5, group
 * g = p or p + 2, b ≤ 3 layers a chunk, m ≤ 3gv + 2 micro-batches, both ends. And one by hand:
 * p = v = g = 2, b = 2, embedding accounted, m = 4: chunk 0 of rank 0 builds 1 layer, chunk 1
 * builds 2; the warm-up's 2 + 2 forwards run chunks 0, 0, 1, 1 (6 layers), then each step
 * adds a forward and frees a backward: +1 → 7, −2; +1 → 6, −2; +2 → 6, −1; +2 → 7. Peak 7. */
START_TEST(interleaved_split_peak_closed_form)
{
    struct spsim_stage_plan hand = {
        .p = 2, .v = 2, .g = 2, .first = 4, .middle = 4, .last = 4, .emb = true};
    ck_assert_uint_eq(spsim_stage_inflight_layers(&hand, 0, 4), 7);
    for (uint32_t p = 2; p <= 6; p++)
        for (uint32_t v = 2; v <= 5; v++)
            for (uint32_t g = p; g <= p + 2; g += 2)
                for (uint32_t b = 1; b <= 3; b++)
                    for (int ends = 1; ends <= 3; ends++) {
                        struct spsim_stage_plan split = {.p = p,
                                                         .v = v,
                                                         .g = g,
                                                         .first = b * v,
                                                         .middle = b * v,
                                                         .last = b * v,
                                                         .emb = ends & 1,
                                                         .loss = ends & 2};
                        struct spsim_stage_plan layout = split;
                        layout.emb = layout.loss = false;
                        layout.nlayout = p * v;
                        for (uint32_t i = 0; i < p * v; i++)
                            layout.layout[i] = spsim_stage_chunk_layers(&split, i % p, i / p);
                        for (uint64_t m = 1; m <= 3ull * g * v + 2; m++)
                            for (uint32_t r = 0; r < p; r++)
                                ck_assert_msg(spsim_stage_inflight_layers(&split, r, m) ==
                                                  spsim_stage_inflight_layers(&layout, r, m),
                                              "p %u v %u g %u b %u ends %d m %llu r %u", p, v, g, b,
                                              ends, (unsigned long long)m, r);
                    }
}
END_TEST

START_TEST(layout_equals_the_same_split)
{
    /* A layout naming the same counts gives the same memory as the options do. */
    struct spsim_model *m = gpt();
    struct spsim_parallel a = base(4, 2, 8), b = base(4, 1, 8);
    a.account_embedding = a.account_loss = true;
    b.pipeline_layout = "Et*3|(t*4|)*6,t*3L"; /* 8 stages on p 4: v 2 derived */
    struct spsim_result ra, rb;
    evaluate_ok(m, NULL, &a, &ra);
    evaluate_ok(m, NULL, &b, &rb);
    ck_assert_uint_eq(rb.config.vpp, 2);
    ck_assert_uint_eq(rb.memory.total_bytes, ra.memory.total_bytes);
    ck_assert_uint_eq(rb.memory.activation_first_stage_bytes,
                      ra.memory.activation_first_stage_bytes);
    ck_assert_uint_eq(rb.memory.activation_last_stage_bytes, ra.memory.activation_last_stage_bytes);
    /* First/last 2 and middle 13 as a layout, 1F1B. */
    struct spsim_parallel c = base(4, 1, 8), d = base(4, 1, 8);
    c.first_stage_layers = c.last_stage_layers = 2;
    d.pipeline_layout = "Ett|t*13|t*13|ttL";
    evaluate_ok(m, NULL, &c, &ra);
    evaluate_ok(m, NULL, &d, &rb);
    ck_assert_uint_eq(rb.memory.total_bytes, ra.memory.total_bytes);
    ck_assert_uint_eq(rb.memory.peak_stage, 1);
    spsim_model_destroy(m);
}
END_TEST

/* DeepSeek-V3 at pp 8 × vpp 4 with Megatron-Bridge's layout (scripts/performance/configs/deepseek/
 * deepseek_llm_pretrain.py deepseek_v3_pretrain_config_h100 at 5776a6d90: "Et|(tt|)*30mL"):
 * 32 stages in virtual-stage-major order, stage c·8 + r on rank r. Stage 0 holds layer 0, stage
 * s of 1..30 layers 2s−1 and 2s, stage 31 the MTP depth and the loss only. Rank 0 (stages 0, 8,
 * 16, 24) builds 1 + 3·2 = 7 layers, the dense layer 0 among them; ranks 1..6 build 8; rank 7
 * (7, 15, 23, 31) 3·2 = 6, all MoE, plus the MTP layer (an MoE layer, eh_proj 2h·h, enorm,
 * hnorm and its final norm: 3h), the final norm h, the output layer and, for the MTP depth's
 * input, its own copy of the embedding (gpt_model.py builds the embedding where pre_process or
 * mtp_process). Each is v·h (untied): at ep 1 the last rank has the MTP layer, h and one v·h
 * less one dense layer more than rank 0. */
START_TEST(deepseek_v3_bridge_layout_pp8_vpp4)
{
    struct spsim_model *m = testutil_model_named("deepseek-v3");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.pp = 8;
    p.vpp = 1;
    p.dp = 4;
    p.gbs = 64;
    p.pipeline_layout = "Et|(tt|)*30mL";
    struct spsim_result r, q;
    evaluate_ok(m, NULL, &p, &r);
    ck_assert_uint_eq(r.config.vpp, 4);
    ck_assert_uint_eq(r.memory.layers_first_stage, 7);
    ck_assert_uint_eq(r.memory.layers_last_stage, 6);
    ck_assert_uint_eq(r.memory.layers_per_stage, 8);
    ck_assert_uint_eq(r.memory.layers_per_chunk, 2);
    uint64_t h = 7168,
             att = 1536 * (h + 1 + 128 * 192) + h * 576 + 512 + 512 * 128 * 256 + 128 * 128 * h;
    uint64_t expert = 3 * h * 2048, dense = att + 2 * h + 3 * h * 18432;
    uint64_t mtp = att + 2 * h + h * 256 + 257 * expert + 3 * h + 2 * h * h;
    ck_assert_uint_eq(r.memory.parameters_last_stage + dense,
                      r.memory.parameters_first_stage + mtp + h + 129280 * h);
    /* Without the m spsim still runs the MTP depth on the last stage: the same figures. */
    p.pipeline_layout = "Et|(tt|)*30L";
    evaluate_ok(m, NULL, &p, &q);
    ck_assert_uint_eq(q.memory.parameters_last_stage, r.memory.parameters_last_stage);
    ck_assert_uint_eq(q.memory.total_bytes, r.memory.total_bytes);
    /* In a stage before the last it is refused (spsim runs it beside the loss only). */
    struct spsim_error err = {0};
    p.pipeline_layout = "Et|(tt|)*28tt|ttm|L";
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "MTP layers (m) outside the last stage"), "%s", err.message);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(critical_stage_is_found)
{
    /* tp 1, no SP: no TP collective, and full-iteration CUDA graphs: no host launch per block
     * (the small layer would wait for the host, engine/host.c), so a layer's forward wall time
     * is its compute. The middle ranks' 13 layers set the pace: forward = m · 13 · one layer's
     * forward. */
    struct spsim_model *m = gpt();
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = base(4, 1, 8);
    p.tp = 1;
    p.sp = false;
    p.cuda_graph_impl = SPSIM_CUDA_GRAPH_FULL_ITERATION;
    p.first_stage_layers = p.last_stage_layers = 2;
    struct spsim_result r;
    evaluate_ok(m, hw, &p, &r);
    ck_assert_uint_eq(r.time.critical_stage, 1);
    ck_assert_double_eq_tol(r.time.forward_s, 8 * 13 * r.time.layer_forward_s,
                            1e-12 * r.time.forward_s);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(megatron_rules_and_messages)
{
    struct spsim_parallel p = base(4, 1, 8);
    p.first_stage_layers = 2;
    p.account_embedding = true;
    refused(&p, "cannot be set at the same time with account_for_embedding_in_pipeline_split");
    p = base(4, 1, 8);
    p.first_stage_layers = 3; /* 27 left over 3 ranks: fine; with last 3, 24 over 2 fine */
    p.last_stage_layers = 4;  /* 23 over 2 middle ranks */
    refused(&p, "number of layers at middle stage: 23 must be divisible");
    p = base(4, 2, 8);
    p.first_stage_layers = 3;
    refused(&p, "number of layers at first stage: 3 must be divisible by virtual pipeline");
    p = base(2, 1, 8);
    p.first_stage_layers = 10;
    p.last_stage_layers = 10;
    refused(&p, "Mismatch: 10 middle layers remaining but 0 middle PP stages");
    p = base(4, 1, 8);
    p.account_embedding = true; /* 31 on 4 */
    refused(&p, "Number of layers should be divisible by the pipeline-model-parallel size");
    p = base(4, 1, 8);
    refused(&p, "not divisible by pp·vpp = 4·1 = 4 (uneven splits:");
    p = base(4, 1, 8);
    p.pipeline_layout = "Et*8|t*8|t*8|t*6L";
    p.account_loss = true;
    refused(&p, "cannot be set with other pipeline layout arguments");
    p.account_loss = false;
    p.pipeline_layout = "Et*8|t*8|t*8L";
    refused(&p, "must be divisible by pipeline_model_parallel_size (num_stages=3");
    p.pipeline_layout = "Et*8|t*8|t*8|t*5L";
    refused(&p, "Number of decoder layers 29 must match num_layers 30");
    p.pipeline_layout = "t*8|Et*8|t*8|t*6L";
    refused(&p, "the first layer must be embedding (E) and the last loss (L)");
    p.pipeline_layout = "Et*8|t*8|x|t*14L";
    refused(&p, "Invalid layer character: x");
    p.pipeline_layout = "Et*8|t*8|t*8|t*6L";
    p.vpp = 2;
    refused(&p, "conflicts with pipeline_model_parallel_layout (vpp=2, detected_vpp_size=1)");
    p.vpp = 1;
    p.pipeline_layout = "E(t|)*100000000000L";
    refused(&p, "expands to more than");
    /* spsim's own limit: a recompute method is modelled per chunk of equal layers. */
    p = base(4, 1, 8);
    p.first_stage_layers = p.last_stage_layers = 2;
    p.recompute = SPSIM_RECOMPUTE_FULL;
    p.recompute_method = SPSIM_RECOMPUTE_METHOD_UNIFORM;
    p.recompute_layers = 1;
    refused(&p, "uneven pipeline stages with a recompute method or offload_layers are not");
    p = base(4, 1, 8);
    /* Valid: an empty stage, repeats inside groups. */
    p.pipeline_layout = "E|(t*5|)*2,t*20L";
    struct spsim_model *m = gpt();
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, NULL), SPSIM_OK);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(capacity_less_what_tensors_cannot_use)
{
    /* dgx-h100: 81,559 MiB reported; reserved: TE's cuBLAS workspace 32 MiB + 1 KiB, and
     * 220.5 MiB of NCCL buffers per communicator used: TP (t = 2), DP (d = 2) and the tied
     * embedding's pair (p = 4): 3. */
    struct spsim_model *m = gpt();
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = base(4, 1, 16);
    p.dp = 2;
    p.first_stage_layers = p.last_stage_layers = 2;
    struct spsim_result r;
    evaluate_ok(m, hw, &p, &r);
    uint64_t mib = 1048576, hbm = 81559 * mib;
    uint64_t reserved = 32 * mib + 1024 + 3 * (441 * mib / 2);
    ck_assert_uint_eq(r.memory.hbm_bytes, hbm);
    ck_assert_uint_eq(r.memory.reserved_bytes, reserved);
    ck_assert_uint_eq(r.memory.capacity_bytes, hbm - reserved);
    ck_assert_int_eq(r.memory.headroom_bytes,
                     (int64_t)(hbm - reserved) - (int64_t)r.memory.total_bytes);
    /* tp 1, dp 1, pp 1: no communicator, the workspace alone. */
    struct spsim_parallel q = base(1, 1, 1);
    q.tp = 1;
    q.sp = false;
    evaluate_ok(m, hw, &q, &r);
    ck_assert_uint_eq(r.memory.reserved_bytes, 32 * mib + 1024);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/* The shipped dgx-h100 profile with the given text inserted after `"gpu": {`. */
static int
h100_with(const char *insert, struct spsim_hardware **hw, struct spsim_error *err)
{
    char path[4096], *text = NULL;
    ck_assert_int_eq(
        spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, "dgx-h100", path, sizeof(path), NULL),
        SPSIM_OK);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)n + strlen(insert) + 1);
    ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    char *at = strstr(text, "\"gpu\": {");
    ck_assert_ptr_nonnull(at);
    at += strlen("\"gpu\": {");
    memmove(at + strlen(insert), at, strlen(at) + 1);
    memcpy(at, insert, strlen(insert));
    int rc = spsim_hardware_parse(text, strlen(text), "test", hw, err);
    free(text);
    return rc;
}

START_TEST(context_and_fragmentation_fields)
{
    /* A CUDA context of 512 MiB and 10% fragmentation: (hbm − cuBLAS − context − NCCL)·0.9. */
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    int rc = h100_with("\"cuda_context_MiB\": {\"value\": 512, \"source\": \"test\"}, "
                       "\"allocator_fragmentation\": {\"value\": 0.1, \"source\": \"test\"},",
                       &hw, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
    struct spsim_model *m = gpt();
    struct spsim_parallel q = base(1, 1, 1);
    q.tp = 1;
    q.sp = false;
    struct spsim_result r;
    evaluate_ok(m, hw, &q, &r);
    uint64_t mib = 1048576, left = 81559 * mib - 512 * mib - (32 * mib + 1024);
    ck_assert_uint_eq(r.memory.capacity_bytes, (uint64_t)((double)left * 0.9));
    spsim_hardware_destroy(hw);
    /* Refused: fragmentation beyond 0.5, reserved memory beyond the capacity. */
    ck_assert_int_eq(
        h100_with("\"allocator_fragmentation\": {\"value\": 0.6, \"source\": \"t\"},", &hw, &err),
        SPSIM_EFIELD);
    ck_assert_int_eq(
        h100_with("\"cuda_context_MiB\": {\"value\": 90000, \"source\": \"t\"},", &hw, &err),
        SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "cuda_context_MiB"));
    spsim_model_destroy(m);
}
END_TEST

START_TEST(named_model_flops)
{
    /* GPT layer (f = 4h, a·d = h), per iteration with B sequences:
     *   Korthikanti 2022: 72·B·s·L·h² + 12·B·s²·L·h + 6·B·s·h·V
     *   Megatron today:   72·B·s·L·h² +  6·B·s²·L·h + 6·B·s·h·V (causal attention halved)
     *   Narayanan 2021:   96·B·s·L·h² + 16·B·s²·L·h + 6·B·s·h·V (recompute forward counted) */
    struct spsim_model *m = gpt();
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = base(2, 1, 8);
    struct spsim_result r;
    evaluate_ok(m, hw, &p, &r);
    double B = 8, s = S, h = H, v = V, l = L;
    double k22 = 72 * B * s * l * h * h + 12 * B * s * s * l * h + 6 * B * s * h * v;
    double meg = 72 * B * s * l * h * h + 6 * B * s * s * l * h + 6 * B * s * h * v;
    double n21 = 96 * B * s * l * h * h + 16 * B * s * s * l * h + 6 * B * s * h * v;
    ck_assert_double_eq_tol(r.time.model_flops, k22, 1e-12 * k22);
    ck_assert_double_eq_tol(r.time.model_flops_megatron, meg, 1e-12 * meg);
    ck_assert_double_eq_tol(r.time.model_flops_narayanan2021, n21, 1e-12 * n21);
    /* The rates over the iteration are worked on a hand-worked iteration in test_terms.c
     * (one_gpu_forward_backward_optimizer); here they would only restate the result's own
     * iteration_s (issue 23). */
    spsim_model_destroy(m);

    /* GQA and SwiGLU (training.py transformer_flops): per token 6·[3·h·f + h·(q + 2g·d) +
     * q·h]·L + 6·h·V, plus 6·q·s·L for causal attention; h 4096, 32 heads of 128, 8 KV
     * heads, f 14336, V the padded vocabulary (128256 = 501·256: unpadded at t = 2). */
    struct spsim_model_shape ls = testutil_gpt_shape(4, 4096, 32, 1024, 128256);
    ls.kv_heads = 8;
    ls.ffn_hidden = 14336;
    ls.mlp = SPSIM_MLP_SWIGLU;
    ls.tied_embeddings = false;
    struct spsim_model *lm = testutil_model(&ls);
    struct spsim_parallel q = base(1, 1, 2);
    evaluate_ok(lm, hw, &q, &r);
    double hh = 4096, qq = 4096, kv = 1024, f = 14336, V2 = (double)r.padded_vocab, s2 = 1024;
    double per_token =
        6 * (3 * hh * f + hh * (qq + 2 * kv) + qq * hh) * 4 + 6 * hh * V2 + 6 * qq * s2 * 4;
    ck_assert_double_eq_tol(r.time.model_flops_megatron, 2 * s2 * per_token,
                            1e-12 * r.time.model_flops_megatron);
    spsim_model_destroy(lm);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(llama3_405b_as_meta_ran_it)
{
    /* Llama 3 paper §3.3: BF16, tp 8, pp 16, dp 128 on 16,384 H100 80 GB, seq 8192, 16M
     * tokens per batch (2048 sequences), first and last stages one layer fewer (126 layers:
     * the embedding and the loss counted as stages), optimizer state and gradients sharded
     * over dp (here: the distributed optimizer; gradient sharding is part A's ZeRO-2). */
    struct spsim_model *m = NULL;
    char path[4096];
    ck_assert_int_eq(
        spsim_profile_resolve(SPSIM_PROFILE_MODEL, "llama3-405b", path, sizeof(path), NULL),
        SPSIM_OK);
    ck_assert_int_eq(spsim_model_load(path, &m, NULL), SPSIM_OK);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 8;
    p.pp = 16;
    p.dp = 128;
    p.sp = true;
    p.seq = 8192;
    p.gbs = 2048;
    p.distributed_optimizer = true;
    p.overlap_grad_reduce = true;
    p.account_embedding = p.account_loss = true;
    struct spsim_result r;
    evaluate_ok(m, hw, &p, &r);
    ck_assert_uint_eq(r.memory.layers_first_stage, 7);
    ck_assert_uint_eq(r.memory.layers_last_stage, 7);
    ck_assert(r.memory.fits);
    /* The same with --decoder-first/last-pipeline-num-layers 7: 112 layers, 8 per middle rank. */
    p.account_embedding = p.account_loss = false;
    p.first_stage_layers = p.last_stage_layers = 7;
    struct spsim_result e;
    evaluate_ok(m, hw, &p, &e);
    ck_assert_uint_eq(e.memory.total_bytes, r.memory.total_bytes);
    ck_assert(e.memory.fits);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

static Suite *
stages_suite(void)
{
    Suite *s = suite_create("stages");
    TCase *tc = tcase_create("stages");
    tcase_add_test(tc, first_last_stages_1f1b);
    tcase_add_test(tc, accounted_embedding_and_loss_interleaved);
    tcase_add_test(tc, layout_equals_the_same_split);
    tcase_add_test(tc, interleaved_split_peak_closed_form);
    tcase_add_test(tc, deepseek_v3_bridge_layout_pp8_vpp4);
    tcase_add_test(tc, critical_stage_is_found);
    tcase_add_test(tc, megatron_rules_and_messages);
    tcase_add_test(tc, capacity_less_what_tensors_cannot_use);
    tcase_add_test(tc, context_and_fragmentation_fields);
    tcase_add_test(tc, named_model_flops);
    tcase_add_test(tc, llama3_405b_as_meta_ran_it);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(stages_suite());
}
