/*
 * Fine-tuning, worked by hand independently of engine/finetune.c.
 *
 * LoRA (Megatron-Bridge 8f341b04f: peft/lora.py LoRA, dim 32 by default; the performance
 * recipe scripts/performance/configs/llama/llama3_llm_finetune.py sets target_modules
 * ["linear_qkv"] and, set_llama3_common_peft_configs, grad_reduce_in_fp32 False and the
 * distributed optimizer) on Llama 3 70B (models/llama3-70b.json: 80 layers, h 8192, 64 heads of
 * 128, 8 KV heads, FFN 28672, vocabulary 128256, untied), tp 1, pp 1, dp 8, seq 4096:
 * - base parameters per GPU: a layer's 8192·(8192 + 2·1024) + 8192·8192 + 3·8192·28672 + 2·8192
 *   = 855 654 400, ·80 = 68 452 352 000, + embedding and output 2·128256·8192 = 2 101 346 304
 *   + the final norm 8192: 70 553 706 496;
 * - the adapters beside linear_qkv: linear_in 8192 → 32, linear_out 32 → 10240 (q + 2 kv):
 *   32·18432 = 589 824 a layer, 47 185 920 in all: the only trainable parameters;
 * - memory: BF16 weights of both, 2·(70 553 706 496 + 47 185 920); BF16 gradients of the
 *   adapters only, 2·47 185 920; Adam's fp32 main weight and moments with the fp32 copy of the
 *   BF16 gradients (16 B, test_optimizer's case) of the adapters, sharded over 8.
 * - hardware FLOPs (what runs): the frozen linears skip their weight gradients, 2·m·W per
 *   layer and micro-batch (m = 4096 tokens, W = 855 638 016 linear weights) and the output
 *   layer's 2·m·8192·128256; the adapters add forward, data and weight gradients,
 *   3·2·m·32·18432 a layer; 32 micro-batches.
 * - model FLOPs (Bridge flop_utils.py transformer_flops, its LoRA branch): the frozen weights
 *   2/3 of 6 FLOPs per weight and token, core attention's 12·L·h²·s/h per token whole.
 *
 * Packed THD sequences (Megatron-Core PackedSeqParams, cu_seqlens; Bridge's
 * core_attn_seq_factor = Σs_i²/Σs_i): Llama 3 8B, rows of 4096 tokens holding sub-sequences of
 * 512: attention per layer and row Σs_i²·(d_qk + d_v)·heads = 4096·512·256·32 forward (flash,
 * causal half), 2.5 times that backward (FlashAttention-2's backward, schedule.c), instead of
 * 4096·4096·...; model FLOPs' core attention 4·s·q per token and layer becomes 4·512·q.
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "spsim/spsim.h"
#include "testutil.h"

#define BASE_70B     70553706496.0
#define ADAPTERS_70B 47185920.0

static struct spsim_parallel
lora_70b(void)
{
    struct spsim_parallel p = testutil_config(1, 1, 1, 1, 32, false, SPSIM_RECOMPUTE_NONE);
    p.dp = 8;
    p.seq = 4096;
    p.distributed_optimizer = true;
    p.grad_reduce_in_fp32 = 0;
    p.lora_rank = 32;
    p.lora_targets = SPSIM_LORA_QKV;
    return p;
}

START_TEST(lora_memory)
{
    struct spsim_parallel p = lora_70b();
    struct spsim_result r = testutil_evaluate_config("llama3-70b", "gb300-nvl72", &p);
    ck_assert_uint_eq(r.memory.parameters_per_gpu, (uint64_t)BASE_70B);
    ck_assert_uint_eq(r.memory.trainable_parameters_per_gpu, (uint64_t)ADAPTERS_70B);
    ck_assert_uint_eq(r.memory.weights_bytes, (uint64_t)(2 * (BASE_70B + ADAPTERS_70B)));
    ck_assert_uint_eq(r.memory.gradients_bytes, (uint64_t)(2 * ADAPTERS_70B));
    ck_assert_uint_eq(r.memory.optimizer_bytes, (uint64_t)(16 * ADAPTERS_70B / 8));
    /* Only the adapters' BF16 gradients are reduced over dp. */
    ck_assert_uint_eq(r.comm.dp_grad_bytes, (uint64_t)(2 * ADAPTERS_70B));
}
END_TEST

/*
 * FP8 current scaling on GB300 (Blackwell: one 1-B copy of a per-tensor FP8 weight, no
 * transpose). The frozen linear weights are W = 80 · 855 638 016 = 68 451 041 280 (a layer's
 * 855 654 400 parameters less its two 8192-wide norms). Without FP8 parameters TE's copy sits
 * beside the BF16 base: 2·(base + adapters) + W. With them (fp8_param_gather: the base built
 * FP8, fp8_model_init) the copy is the weight: 2·(base − W) + W + 2·adapters, and nothing of
 * the base is gathered (the BF16 adapters only, dp_grad_bytes unchanged). On H100 (Hopper)
 * the FP8 weight keeps its transpose too, 2 B: 2·(base + adapters) again. MXFP8's two copies
 * and their scale bytes (1 per 32 in each): 2W + W/16 in place of the 2W of BF16.
 */
START_TEST(lora_fp8_parameters)
{
    const double W = 68451041280.0;
    ck_assert_double_eq(80.0 * 855638016.0, W);
    struct spsim_parallel p = lora_70b();
    p.dtype = SPSIM_DTYPE_FP8;
    p.fp8_recipe = SPSIM_FP8_CURRENT;
    struct spsim_result r = testutil_evaluate_config("llama3-70b", "gb300-nvl72", &p);
    ck_assert_uint_eq(r.memory.weights_bytes, (uint64_t)(2 * (BASE_70B + ADAPTERS_70B) + W));
    p.fp8_param_gather = true;
    r = testutil_evaluate_config("llama3-70b", "gb300-nvl72", &p);
    ck_assert_uint_eq(r.memory.weights_bytes,
                      (uint64_t)(2 * (BASE_70B - W) + W + 2 * ADAPTERS_70B));
    ck_assert_uint_eq(r.memory.gradients_bytes, (uint64_t)(2 * ADAPTERS_70B));
    ck_assert_uint_eq(r.comm.dp_grad_bytes, (uint64_t)(2 * ADAPTERS_70B));
    ck_assert_uint_eq(r.comm.dp_ag_wire_bytes_per_rank, (uint64_t)(2 * ADAPTERS_70B / 8 * 7));
    r = testutil_evaluate_config("llama3-70b", "dgx-h100", &p);
    ck_assert_uint_eq(r.memory.weights_bytes, (uint64_t)(2 * (BASE_70B + ADAPTERS_70B)));
    p.fp8_recipe = SPSIM_FP8_MXFP8;
    r = testutil_evaluate_config("llama3-70b", "gb300-nvl72", &p);
    ck_assert_uint_eq(r.memory.weights_bytes,
                      (uint64_t)(2 * (BASE_70B - W) + 2 * W + W / 16 + 2 * ADAPTERS_70B));
}
END_TEST

/*
 * The activations a layer keeps (tp 1, one micro-batch of 4096 tokens, BF16): a frozen linear
 * keeps no input (TE linear.py saves it only when the weight requires a gradient; Megatron's
 * LinearWithFrozenWeight only the weight), except the attention projection's, the output that
 * flash attention's backward reads. linear_qkv's adapter keeps its input (the layernorm output
 * TE returns, 2·s·h) and linear_out its r-wide input (2·s·r); with linear_qkv alone the base's
 * QKV, FC1 and FC2 inputs go (2·s·h, 2·s·h, 2·s·f). With all four targets each adapter keeps
 * 2·s·r and linear_in keeps linear_qkv's and linear_fc1's inputs (2·s·h each, what the bases
 * kept); linear_proj's and linear_fc2's adapters read their base's own input, which stays.
 */
START_TEST(lora_activations)
{
    struct spsim_parallel p = lora_70b();
    p.lora_rank = 0;
    p.lora_targets = 0;
    uint64_t full =
        testutil_evaluate_config("llama3-70b", "gb300-nvl72", &p).memory.activation_per_layer_bytes;
    p = lora_70b();
    uint64_t qkv =
        testutil_evaluate_config("llama3-70b", "gb300-nvl72", &p).memory.activation_per_layer_bytes;
    p.lora_targets = 0; /* Bridge's default: all four */
    uint64_t all =
        testutil_evaluate_config("llama3-70b", "gb300-nvl72", &p).memory.activation_per_layer_bytes;
    uint64_t s = 4096, h = 8192, f = 28672, r = 32;
    ck_assert_uint_eq(qkv + 2 * s * h + 2 * s * f, full + 2 * s * r);
    ck_assert_uint_eq(all, full + 4 * 2 * s * r);
}
END_TEST

START_TEST(lora_flops)
{
    struct spsim_parallel p = lora_70b();
    struct spsim_result lora = testutil_evaluate_config("llama3-70b", "gb300-nvl72", &p);
    p.lora_rank = 0;
    p.lora_targets = 0;
    struct spsim_result full = testutil_evaluate_config("llama3-70b", "gb300-nvl72", &p);
    double m = 4096, W = 855638016.0, L = 80, passes = 32;
    double wgrad = L * 2 * m * W + 2 * m * 8192 * 128256.0;
    double adapters = L * 3 * 2 * m * 32 * 18432.0;
    ck_assert_double_eq_tol(full.time.hardware_flops - lora.time.hardware_flops,
                            passes * (wgrad - adapters), 1e-9 * full.time.hardware_flops);
    /* Model FLOPs: per token 2·W·L + 2·h·V of weights (4 of 6 FLOPs counted), 4·s·q·L of
     * attention (12 of 12). */
    double tokens = 32 * m, weights = 2 * (W * L + 8192 * 128256.0), attn = L * 4 * m * 8192;
    ck_assert_double_eq_tol(lora.time.model_flops, tokens * (2 * weights + 3 * attn),
                            1e-12 * lora.time.model_flops);
    ck_assert_double_eq_tol(full.time.model_flops, tokens * 3 * (weights + attn),
                            1e-12 * full.time.model_flops);
}
END_TEST

START_TEST(packed_attention_flops)
{
    struct spsim_parallel p = testutil_config(1, 1, 1, 1, 8, false, SPSIM_RECOMPUTE_NONE);
    p.seq = 4096;
    struct spsim_result whole = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    p.packed_subseq_len = 512;
    struct spsim_result packed = testutil_evaluate_config("llama3-8b", "dgx-h100", &p);
    double s = 4096, a = 512, L = 32, heads = 32, d = 128, passes = 8;
    double per_key = s * (2 * d) * heads * 3.5; /* forward 1, backward 2.5 */
    ck_assert_double_eq_tol(whole.time.hardware_flops - packed.time.hardware_flops,
                            passes * L * per_key * (s - a), 1e-9 * whole.time.hardware_flops);
    /* Model FLOPs (2022 convention): 3 passes · tokens · L · 4·(s − a)·q fewer. */
    double q = heads * d, tokens = passes * s;
    ck_assert_double_eq_tol(whole.time.model_flops - packed.time.model_flops,
                            3 * tokens * L * 4 * (s - a) * q, 1e-9 * whole.time.model_flops);
    /* Megatron's count halves causal attention: 3 · tokens · L · 2·(s − a)·q fewer. */
    ck_assert_double_eq_tol(whole.time.model_flops_megatron - packed.time.model_flops_megatron,
                            3 * tokens * L * 2 * (s - a) * q,
                            1e-9 * whole.time.model_flops_megatron);
}
END_TEST

/* What is refused, in the engine's words. */
START_TEST(finetune_rules)
{
    struct spsim_parallel p = lora_70b();
    p.lora_rank = 0;
    p.lora_dropout = 0.1;
    testutil_expect_rule("llama3-70b", &p, "the LoRA options need lora_rank > 0");
    p = lora_70b();
    p.tp = 4;
    p.sp = true;
    p.dp = 2;
    p.lora_rank = 30;
    testutil_expect_rule("llama3-70b", &p, "not divisible");
    p = lora_70b();
    p.recompute = SPSIM_RECOMPUTE_FULL;
    testutil_expect_rule("llama3-70b", &p, "LoRA with recomputation other than selective");
    p = lora_70b();
    p.lora_rank = 0;
    p.lora_targets = 0;
    p.packed_subseq_len = 8192;
    testutil_expect_rule("llama3-70b", &p, "exceeds the packed row's 4096 tokens");
    p = lora_70b();
    testutil_expect_rule("mixtral-8x7b", &p, "LoRA on mixture-of-experts");
    p = lora_70b();
    p.dtype = SPSIM_DTYPE_FP8;
    p.fp8_recipe = SPSIM_FP8_CURRENT;
    p.fp8_param_gather = true;
    p.dtype = SPSIM_DTYPE_NVFP4;
    p.fp8_recipe = SPSIM_FP8_DELAYED;
    testutil_expect_rule("llama3-70b", &p, "LoRA with NVFP4 parameters is not modelled");
}
END_TEST

static Suite *
finetune_suite(void)
{
    Suite *s = suite_create("finetune");
    TCase *tc = tcase_create("lora_packed");
    tcase_add_test(tc, lora_memory);
    tcase_add_test(tc, lora_fp8_parameters);
    tcase_add_test(tc, lora_activations);
    tcase_add_test(tc, lora_flops);
    tcase_add_test(tc, packed_attention_flops);
    tcase_add_test(tc, finetune_rules);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(finetune_suite());
}
