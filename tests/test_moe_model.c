/*
 * Mixture-of-experts and multi-latent-attention model profiles (issue 11): the parameter counts
 * against closed forms worked here from each model's published shape (and the published rounded
 * totals), the MoE layer choice, the profile rules, and the engine's refusal until it models
 * the layers.
 */
#include "config.h"

#include <math.h>

#include "engine/eval.h"
#include "profiles/profiles.h"
#include "testutil.h"

static struct spsim_model *
parse_ok(const char *json)
{
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    int rc = spsim_model_parse(json, strlen(json), "moe.json", &m, &err);
    ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
    return m;
}

/* The published shape of each model as a profile body (fields after "schema" and "name"). */
#define HEAD "{\"schema\": \"spsim-model/1\", \"name\": \"t\", \"source\": \"test\", "
#define LLAMA_LIKE                                                                                 \
    "\"mlp\": \"swiglu\", \"norm\": \"rmsnorm\", \"dropout\": false, \"attention\": \"flash\", "   \
    "\"position_embedding\": \"rope\", \"linear_bias\": false, \"tied_embeddings\": false, "

/* Mixtral 8x7B: Megatron-LM examples/mixtral/train_mixtral_8x7b_distributed.sh (32 layers,
 * 4096, FFN 14336, 32 heads, 8 query groups, 8 experts, top 2, SwiGLU, RMSNorm, no biases,
 * untied) and the Llama-2 tokenizer's 32000 tokens it names. */
static const char mixtral_8x7b[] =
    HEAD LLAMA_LIKE "\"layers\": 32, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 8, "
                    "\"ffn_hidden\": 14336, \"vocab\": 32000, \"seq_len\": 4096, \"experts\": 8, "
                    "\"experts_per_token\": 2}";

/* Qwen3-30B-A3B and Qwen3-235B-A22B: Megatron-LM examples/post_training/modelopt/conf/Qwen/
 * (48/94 layers, 2048/4096, 32/64 heads, 4 groups, kv-channels 128, qk-layernorm, 128 experts,
 * moe-ffn 768/1536, top 8; vocabulary 151936 = 1187·128, its make-vocab-size-divisible-by). */
static const char qwen3_30b[] = HEAD LLAMA_LIKE
    "\"layers\": 48, \"hidden\": 2048, \"heads\": 32, \"kv_heads\": 4, "
    "\"head_dim\": 128, \"qk_norm\": true, \"ffn_hidden\": 6144, \"vocab\": 151936, "
    "\"seq_len\": 4096, \"experts\": 128, \"experts_per_token\": 8, "
    "\"expert_ffn_hidden\": 768}";
static const char qwen3_235b[] = HEAD LLAMA_LIKE
    "\"layers\": 94, \"hidden\": 4096, \"heads\": 64, \"kv_heads\": 4, "
    "\"head_dim\": 128, \"qk_norm\": true, \"ffn_hidden\": 12288, \"vocab\": 151936, "
    "\"seq_len\": 4096, \"experts\": 128, \"experts_per_token\": 8, "
    "\"expert_ffn_hidden\": 1536}";

/* DeepSeek-V3: Megatron-LM examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh (61 layers, 7168,
 * FFN 18432, 128 heads, q-lora 1536, kv-lora 512, qk 128 + rope 64, v 128, qk-layernorm, 256
 * experts of 2048, top 8, one shared expert of 2048, "[0]*3+[1]*58", sigmoid, MTP 1) and the
 * DeepSeek tokenizer's 129280 tokens (examples/.../DeepSeek-R1.sh: divisible-by 1280 · 101). */
#define DEEPSEEK_V3(MTP)                                                                           \
    HEAD LLAMA_LIKE "\"layers\": 61, \"hidden\": 7168, \"heads\": 128, \"kv_heads\": 128, "        \
                    "\"qk_norm\": true, \"ffn_hidden\": 18432, \"vocab\": 129280, "                \
                    "\"seq_len\": 4096, \"experts\": 256, \"experts_per_token\": 8, "              \
                    "\"expert_ffn_hidden\": 2048, \"shared_expert_ffn_hidden\": 2048, "            \
                    "\"moe_layer_pattern\": \"[0]*3+[1]*58\", \"router_score\": \"sigmoid\", "     \
                    "\"q_lora_rank\": 1536, \"kv_lora_rank\": 512, \"qk_head_dim\": 128, "         \
                    "\"qk_pos_emb_head_dim\": 64, \"v_head_dim\": 128, \"mtp_layers\": " #MTP "}"

/* A Llama-style GQA attention, SwiGLU and RMSNorm layer's pieces, by hand. */
static uint64_t
gqa_attention(uint64_t h, uint64_t a, uint64_t g, uint64_t d, bool qk_norm)
{
    return h * (a * d + 2 * g * d) + a * d * h + (qk_norm ? 2 * d : 0);
}

/* total = L·(attention + 2 norms + router + E experts) + 2·V·h + final norm; active with k. */
static void
moe_closed_form(uint64_t L, uint64_t h, uint64_t att, uint64_t E, uint64_t k, uint64_t fe,
                uint64_t V, uint64_t *total, uint64_t *active)
{
    uint64_t expert = 3 * h * fe, rest = att + 2 * h + h * E;
    *total = L * (rest + E * expert) + 2 * V * h + h;
    *active = L * (rest + k * expert) + 2 * V * h + h;
}

/* The published figures are rounded or truncated to their last digit (Qwen3-30B-A3B's active
 * 3.353B is published as 3.3B): the exact count is within one unit of that digit. */
static void
check_counts(const char *json, uint64_t total, uint64_t active, double pub_total, double pub_active,
             double rounding)
{
    struct spsim_model *m = parse_ok(json);
    ck_assert_uint_eq(spsim_model_parameters(m, 1), total);
    ck_assert_uint_eq(spsim_model_active_parameters(m, 1), active);
    ck_assert_msg(fabs((double)total - pub_total) <= rounding, "total %llu against %g",
                  (unsigned long long)total, pub_total);
    ck_assert_msg(fabs((double)active - pub_active) <= rounding, "active %llu against %g",
                  (unsigned long long)active, pub_active);
    spsim_model_destroy(m);
}

START_TEST(published_totals)
{
    uint64_t t, a;
    /* Mixtral 8x7B: 46.7B total, 12.9B active (Jiang et al. 2024, arXiv:2401.04088 §2:
     * "47B total", "13B active"; the Mistral AI release: 46.7B / 12.9B). */
    moe_closed_form(32, 4096, gqa_attention(4096, 32, 8, 128, false), 8, 2, 14336, 32000, &t, &a);
    check_counts(mixtral_8x7b, t, a, 46.7e9, 12.9e9, 0.1e9);
    /* Qwen3-30B-A3B: 30.5B total, 3.3B activated (Qwen3 technical report arXiv:2505.09388,
     * Table 2 and the model card). */
    moe_closed_form(48, 2048, gqa_attention(2048, 32, 4, 128, true), 128, 8, 768, 151936, &t, &a);
    check_counts(qwen3_30b, t, a, 30.5e9, 3.3e9, 0.1e9);
    /* Qwen3-235B-A22B: 235B total, 22B activated (same report, Table 2). */
    moe_closed_form(94, 4096, gqa_attention(4096, 64, 4, 128, true), 128, 8, 1536, 151936, &t, &a);
    check_counts(qwen3_235b, t, a, 235e9, 22e9, 1e9);
}
END_TEST

/* DeepSeek-V3's MLA layer by hand (multi_latent_attention.py :508-620 and the V3 report §2.1):
 * q down h·r_q, q norm r_q, q up r_q·n·(d_qk + d_r), kv down h·(r_kv + d_r), kv norm r_kv, kv up
 * r_kv·n·(d_qk + d_v), output n·d_v·h. */
static uint64_t
deepseek_mla(void)
{
    uint64_t h = 7168, n = 128, rq = 1536, rkv = 512, dqk = 128, dr = 64, dv = 128;
    return h * rq + rq + rq * n * (dqk + dr) + h * (rkv + dr) + rkv + rkv * n * (dqk + dv) +
           n * dv * h;
}

START_TEST(deepseek_v3_totals)
{
    /* 3 dense layers of FFN 18432, 58 MoE layers of 256 experts of 2048 (top 8) with one shared
     * expert of 2048 and a 7168×256 router; embedding and head of 129280; final norm. */
    uint64_t h = 7168, att = deepseek_mla(), V = 129280, expert = 3 * h * 2048;
    uint64_t dense = att + 2 * h + 3 * h * 18432;
    uint64_t moe_rest = att + 2 * h + h * 256 + 3 * h * 2048;
    uint64_t outer = 2 * V * h + h;
    uint64_t total = 3 * dense + 58 * (moe_rest + 256 * expert) + outer;
    uint64_t active = 3 * dense + 58 * (moe_rest + 8 * expert) + outer;
    /* 671B total, 37B activated (DeepSeek-V3 technical report arXiv:2412.19437, abstract):
     * the main model, without the MTP module. */
    check_counts(DEEPSEEK_V3(0), total, active, 671e9, 37e9, 1e9);
    /* The MTP module as Megatron builds it: one more MoE layer (the last decoder layer is MoE),
     * enorm, hnorm, final norm and eh_proj 2h·h; embedding and head shared. */
    uint64_t mtp = moe_rest + 256 * expert + 3 * h + 2 * h * h;
    struct spsim_model *m = parse_ok(DEEPSEEK_V3(1));
    ck_assert_uint_eq(spsim_model_parameters(m, 1), total + mtp);
    ck_assert_uint_eq(spsim_model_active_parameters(m, 1), active + mtp - 248 * expert);
    const struct spsim_model_shape *s = spsim_model_get_shape(m);
    ck_assert_uint_eq(s->head_dim, 192); /* d_qk + d_r */
    for (uint32_t i = 0; i < 61; i++)
        ck_assert(spsim_model_layer_is_moe(m, i) == (i >= 3));
    spsim_model_destroy(m);
}
END_TEST

START_TEST(part_counts)
{
    struct spsim_model *m = parse_ok(DEEPSEEK_V3(0));
    const struct spsim_model_shape *s = spsim_model_get_shape(m);
    uint64_t h = 7168, expert = 3 * h * 2048;
    ck_assert_uint_eq(spsim_expert_parameters(s), expert);
    ck_assert_uint_eq(spsim_shared_expert_parameters(s), 3 * h * 2048);
    ck_assert_uint_eq(spsim_router_parameters(s), h * 256); /* expert_bias is a buffer */
    /* Per TP rank of 8: the down-projections and the latent norms whole on each rank. */
    bool ok = true;
    uint64_t n = 128, rq = 1536, rkv = 512;
    uint64_t split = rq * n * 192 + rkv * n * 256 + n * 128 * h + 3 * h * 18432;
    uint64_t whole = h * rq + rq + h * (rkv + 64) + rkv + 2 * h;
    ck_assert_uint_eq(spsim_layer_parameters_per_rank(s, 8, &ok), split / 8 + whole);
    /* A MoE layer at tp 8, ep 32, etp 1: 8 local experts whole; shared expert split. */
    uint64_t moe_split = rq * n * 192 + rkv * n * 256 + n * 128 * h + 3 * h * 2048;
    ck_assert_uint_eq(spsim_moe_layer_parameters_per_rank(s, 8, 32, 1, &ok),
                      moe_split / 8 + whole + h * 256 + 8 * expert);
    /* etp 2 halves each local expert. */
    ck_assert_uint_eq(spsim_expert_parameters_per_rank(s, 2, &ok), expert / 2);
    ck_assert(ok);
    spsim_model_destroy(m);
    /* With biases (GPT-OSS-style linear_bias): fc1 2·f_e and fc2 h per expert, the router's
     * bias of E; fc2's bias stays whole under etp. */
    struct spsim_model *mx = parse_ok(mixtral_8x7b);
    struct spsim_model_shape g = *spsim_model_get_shape(mx);
    spsim_model_destroy(mx);
    g.linear_bias = true;
    struct spsim_model *gm = testutil_model(&g);
    ck_assert_uint_eq(spsim_expert_parameters(&g), 3ull * 4096 * 14336 + 2 * 14336 + 4096);
    ck_assert_uint_eq(spsim_expert_parameters_per_rank(&g, 2, &ok),
                      (3ull * 4096 * 14336 + 2 * 14336) / 2 + 4096);
    ck_assert_uint_eq(spsim_router_parameters(&g), 4096 * 8 + 8);
    spsim_model_destroy(gm);
    /* A GELU expert has fc1 and fc2 only: 2·h·f_e (+ f_e + h biases). */
    g.mlp = SPSIM_MLP_GELU;
    ck_assert_uint_eq(spsim_expert_parameters(&g), 2ull * 4096 * 14336 + 14336 + 4096);
    g.shared_expert_ffn_hidden = 1000;
    ck_assert_uint_eq(spsim_shared_expert_parameters(&g), 2ull * 4096 * 1000 + 1000 + 4096);
}
END_TEST

START_TEST(moe_layer_choice)
{
    /* first_k_dense 2 and frequency 3 over 10 layers: MoE where i >= 2 and i % 3 == 0. */
    struct spsim_model *m = parse_ok(
        HEAD LLAMA_LIKE "\"layers\": 10, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 4, "
                        "\"ffn_hidden\": 128, \"vocab\": 128, \"seq_len\": 64, \"experts\": 4, "
                        "\"experts_per_token\": 1, \"moe_first_dense_layers\": 2, "
                        "\"moe_layer_freq\": 3}");
    const bool want[10] = {0, 0, 0, 1, 0, 0, 1, 0, 0, 1};
    for (uint32_t i = 0; i < 10; i++)
        ck_assert(spsim_model_layer_is_moe(m, i) == want[i]);
    ck_assert(!spsim_model_layer_is_moe(m, 10));
    /* 3 MoE layers of 4 experts (3·64·128 each) and 7 dense ones of 3·64·128: the MoE layers add
     * a router of 64·4 and 3 more experts. */
    uint64_t att = 4 * 64 * 64, dense = att + 2 * 64 + 3 * 64 * 128, outer = 2 * 128 * 64 + 64;
    uint64_t moe = att + 2 * 64 + 64 * 4 + 4 * 3 * 64 * 128;
    ck_assert_uint_eq(spsim_model_parameters(m, 1), 7 * dense + 3 * moe + outer);
    spsim_model_destroy(m);
    /* An explicit list, as an array and in Megatron's text form. */
    static const char *const lists[] = {"[1, 0, 1, 0]", "\"[1,0]*2\"", "\"([1]+[0])*2\"",
                                        "\"[1] + [0] + [1]*1 + [0]\""};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(lists); i++) {
        char json[1024];
        snprintf(json, sizeof(json),
                 HEAD LLAMA_LIKE "\"layers\": 4, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 4, "
                                 "\"ffn_hidden\": 128, \"vocab\": 128, \"seq_len\": 64, "
                                 "\"experts\": 4, \"experts_per_token\": 2, "
                                 "\"moe_layer_pattern\": %s}",
                 lists[i]);
        m = parse_ok(json);
        for (uint32_t l = 0; l < 4; l++)
            ck_assert_msg(spsim_model_layer_is_moe(m, l) == (l % 2 == 0), "%s layer %u", lists[i],
                          l);
        spsim_model_destroy(m);
    }
}
END_TEST

START_TEST(pattern_parser)
{
    uint8_t out[64];
    uint32_t n = 0;
    ck_assert_ptr_null(spsim_moe_pattern_parse("[0]*3+[1]*58", out, 61, &n));
    ck_assert_uint_eq(n, 61);
    ck_assert(out[2] == 0 && out[3] == 1 && out[60] == 1);
    ck_assert_ptr_null(spsim_moe_pattern_parse(" ( [0,1] * 2 ) * 2 + [1]*0 ", out, 64, &n));
    ck_assert_uint_eq(n, 8);
    ck_assert(out[0] == 0 && out[1] == 1 && out[7] == 1);
    ck_assert_str_eq(spsim_moe_pattern_parse("[0]*3+[1]*58", out, 60, &n),
                     "longer than the model's layers");
    ck_assert_str_eq(spsim_moe_pattern_parse("[2]", out, 64, &n),
                     "list entries must be 0 (dense) or 1 (MoE)");
    ck_assert_ptr_nonnull(spsim_moe_pattern_parse("[1]*", out, 64, &n));
    ck_assert_ptr_nonnull(spsim_moe_pattern_parse("[1", out, 64, &n));
    ck_assert_ptr_nonnull(spsim_moe_pattern_parse("([1]", out, 64, &n));
    ck_assert_ptr_nonnull(spsim_moe_pattern_parse("[1] x", out, 64, &n));
    ck_assert_ptr_nonnull(spsim_moe_pattern_parse("1", out, 64, &n));
    ck_assert_ptr_nonnull(spsim_moe_pattern_parse("[1]*99999999999", out, 64, &n));
}
END_TEST

#define SMALL                                                                                      \
    HEAD LLAMA_LIKE "\"layers\": 4, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 4, "               \
                    "\"ffn_hidden\": 128, \"vocab\": 128, \"seq_len\": 64"

/* Each rule of doc/profiles.md "Mixture of experts" and "Multi-latent attention", refused with
 * the field it names. */
START_TEST(profile_rules)
{
    static const struct {
        const char *json, *field, *reason;
    } bad[] = {
        {SMALL ", \"experts_per_token\": 2}", "experts_per_token", "needs experts > 0"},
        {SMALL ", \"experts\": 0, \"capacity_factor\": 1}", "capacity_factor", "needs experts > 0"},
        {SMALL ", \"experts\": 4}", "experts_per_token", "missing"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 5}", "experts_per_token", "[1, 4]"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 0}", "experts_per_token", "[1, 4]"},
        {SMALL ", \"experts\": 70000, \"experts_per_token\": 1}", "experts", "65536"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"capacity_factor\": 0.5}",
         "capacity_factor", "0 (dropless) or in [1, 1000]"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"moe_first_dense_layers\": 4}",
         "moe_first_dense_layers", "[0, 3]"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"moe_layer_freq\": 5}",
         "moe_layer_freq", "[1, 4]"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"moe_first_dense_layers\": 1, "
               "\"moe_layer_freq\": 4}",
         "moe_layer_freq", "chooses no mixture-of-experts layer"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"moe_layer_pattern\": [1, 0, 1]}",
         "moe_layer_pattern", "one entry per layer (layers 4, got 3)"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"moe_layer_pattern\": \"[1]*5\"}",
         "moe_layer_pattern", "longer than the model's layers"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"moe_layer_pattern\": [0, 0, 0, 0]}",
         "moe_layer_pattern", "chooses no mixture-of-experts layer"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"moe_layer_pattern\": [0, 2, 0, 0]}",
         "moe_layer_pattern", "0 (dense) or 1 (MoE)"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"moe_layer_pattern\": 3}",
         "moe_layer_pattern", "Megatron list expression"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"moe_layer_freq\": 2, "
               "\"moe_layer_pattern\": [1, 0, 1, 0]}",
         "moe_layer_pattern", "give one way"},
        {SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"router_score\": \"tanh\"}",
         "router_score", "softmax"},
        {SMALL ", \"kv_lora_rank\": 16, \"qk_head_dim\": 16, \"v_head_dim\": 16}",
         "qk_pos_emb_head_dim", "needs all of"},
        {SMALL ", \"q_lora_rank\": 16}", "q_lora_rank", "needs kv_lora_rank"},
        {SMALL ", \"kv_lora_rank\": 16, \"qk_head_dim\": 16, \"qk_pos_emb_head_dim\": 8, "
               "\"v_head_dim\": 16, \"head_dim\": 16}",
         "head_dim", "qk_head_dim + qk_pos_emb_head_dim (24)"},
        {HEAD LLAMA_LIKE "\"layers\": 4, \"hidden\": 64, \"heads\": 4, \"kv_heads\": 2, "
                         "\"ffn_hidden\": 128, \"vocab\": 128, \"seq_len\": 64, \"kv_lora_rank\": "
                         "16, \"qk_head_dim\": 16, \"qk_pos_emb_head_dim\": 8, \"v_head_dim\": 16}",
         "kv_heads", "must equal heads (4)"},
        {SMALL ", \"qkv_bias\": true, \"kv_lora_rank\": 16, \"qk_head_dim\": 16, "
               "\"qk_pos_emb_head_dim\": 8, \"v_head_dim\": 16}",
         "qkv_bias", "no bias"},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(bad); i++) {
        struct spsim_model *m = NULL;
        struct spsim_error err = {0};
        int rc = spsim_model_parse(bad[i].json, strlen(bad[i].json), "moe.json", &m, &err);
        ck_assert_msg(rc == SPSIM_EFIELD, "case %zu accepted", i);
        char field[128];
        snprintf(field, sizeof(field), "moe.json: field '%s'", bad[i].field);
        ck_assert_msg(strstr(err.message, field) && strstr(err.message, bad[i].reason),
                      "case %zu: %s", i, err.message);
    }
    /* The same rules hold for a shape built in memory. */
    struct spsim_model *mx = parse_ok(mixtral_8x7b);
    struct spsim_model_shape s = *spsim_model_get_shape(mx);
    spsim_model_destroy(mx);
    s.experts_per_token = 9;
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_model_create(&s, "x", &m, &err), SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "experts_per_token"));
    s.experts_per_token = 2;
    s.experts = 0;
    ck_assert_int_eq(spsim_model_create(&s, "x", &m, &err), SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "needs experts > 0"));
}
END_TEST

/* Megatron-LM's num_floating_point_operations (training.py transformer_flops at d98e8a6) for
 * DeepSeek-V3 with one MTP layer, per token and pass (its value / (3·B·s)), worked term by term
 * from its source: MLP 2h·[f·3·L_dense + f_e·k·3·L_moe + f_shared·3·L_moe]; MLA 2·[r_q·(h + n·192
 * + 1) + r_kv·(h + n·256 + 1) + h·d_r + n·d_v·h] per layer; core 2·(n·192/2 + n·128/2)·s; MTP
 * 2·(3h + 2h²); logits 2·h·V·2. The MTP layer is MoE (the last decoder layer is). */
START_TEST(megatron_flops_formula)
{
    double h = 7168, n = 128, s = 4096, V = 129280, L = 62, Lmoe = 59, Ldense = 3;
    double mlp = 2 * h * (18432.0 * 3 * Ldense + 2048.0 * 8 * 3 * Lmoe + 2048.0 * 3 * Lmoe);
    double mla = 2 * (1536 * (h + n * 192 + 1) + 512 * (h + n * 256 + 1) + h * 64 + n * 128 * h);
    double core = 2 * (n * 192 / 2 + n * 128 / 2) * s;
    double want = mlp + L * (mla + core) + 2 * (3 * h + 2 * h * h) + 2 * h * V * 2;
    struct spsim_model *m = parse_ok(DEEPSEEK_V3(1));
    struct spsim_flops_per_token f;
    spsim_model_flops_per_token(m, s, V, &f);
    ck_assert_double_eq_tol(f.megatron, want, want * 1e-12);
    ck_assert_double_eq_tol(f.logits, 2 * h * V * 2, 1);
    /* The 2022 convention: no MLA norms, no MTP norms, core attention not halved. */
    double model = want - 2 * L * (1536 + 512) - 2 * 3 * h + L * core;
    ck_assert_double_eq_tol(f.model, model, model * 1e-12);
    spsim_model_destroy(m);
}
END_TEST

/* For a dense shape the layer-kind sum is the engine's closed form: a GQA SwiGLU model's
 * model_flops, model_flops_megatron and model_flops_narayanan2021 from spsim_evaluate. */
START_TEST(flops_dense_agree)
{
    struct spsim_model *m = testutil_model_named("llama3-8b");
    struct spsim_result r =
        testutil_evaluate("llama3-8b", "dgx-h100", 8, 1, 1, 1, 8, true, SPSIM_RECOMPUTE_SELECTIVE);
    struct spsim_flops_per_token f;
    double s = 8192, tokens = 8 * s;
    spsim_model_flops_per_token(m, s, (double)spsim_model_padded_vocab(m, 8), &f);
    /* A dense model's active parameters are all of them: 8,030,261,248 (the Hugging Face card's)
     * with the vocabulary padded from 128256 to 129024 for tp 8, 768 rows of 4096 twice more. */
    ck_assert_uint_eq(r.memory.parameters_active, 8030261248ull + 2 * 768 * 4096);
    ck_assert_uint_eq(r.memory.parameters_total, r.memory.parameters_active);
    ck_assert_double_eq_tol(r.time.model_flops, 3 * tokens * f.model, r.time.model_flops * 1e-12);
    ck_assert_double_eq_tol(r.time.model_flops_megatron, 3 * tokens * f.megatron,
                            r.time.model_flops * 1e-12);
    ck_assert_double_eq_tol(r.time.model_flops_narayanan2021,
                            tokens * (4 * (f.model - f.logits) + 3 * f.logits),
                            r.time.model_flops * 1e-12);
    spsim_model_destroy(m);
}
END_TEST

static struct spsim_model *
load_path(const char *rel)
{
    return testutil_model_path(rel);
}

/* The shape fields that decide every count (seq_len aside: a config's is its longest context). */
static void
same_shape(const struct spsim_model_shape *a, const struct spsim_model_shape *b, const char *what)
{
    const uint32_t x[] = {a->layers,
                          a->hidden,
                          a->heads,
                          a->kv_heads,
                          a->head_dim,
                          a->vocab,
                          a->experts,
                          a->experts_per_token,
                          a->expert_ffn_hidden,
                          a->shared_expert_ffn_hidden,
                          a->q_lora_rank,
                          a->kv_lora_rank,
                          a->qk_head_dim,
                          a->qk_pos_emb_head_dim,
                          a->v_head_dim,
                          a->mtp_layers,
                          a->mlp,
                          a->norm,
                          a->router_score,
                          a->qk_norm,
                          a->linear_bias,
                          a->tied_embeddings};
    const uint32_t y[] = {b->layers,
                          b->hidden,
                          b->heads,
                          b->kv_heads,
                          b->head_dim,
                          b->vocab,
                          b->experts,
                          b->experts_per_token,
                          b->expert_ffn_hidden,
                          b->shared_expert_ffn_hidden,
                          b->q_lora_rank,
                          b->kv_lora_rank,
                          b->qk_head_dim,
                          b->qk_pos_emb_head_dim,
                          b->v_head_dim,
                          b->mtp_layers,
                          b->mlp,
                          b->norm,
                          b->router_score,
                          b->qk_norm,
                          b->linear_bias,
                          b->tied_embeddings};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(x); i++)
        ck_assert_msg(x[i] == y[i], "%s: field %zu: %u against %u", what, i, x[i], y[i]);
}

/* The published Hugging Face configs (tests/data/hf/) read as the shipped profiles and as the
 * hand-written shapes above: the same counts, the same MoE layers. */
START_TEST(hf_import)
{
    static const struct {
        const char *dir, *shipped, *inline_json;
    } cases[] = {
        {"tests/data/hf/Mixtral-8x7B-v0.1", "mixtral-8x7b", mixtral_8x7b},
        {"tests/data/hf/Qwen3-30B-A3B", "qwen3-30b-a3b", qwen3_30b},
        {"tests/data/hf/DeepSeek-V3", "deepseek-v3", DEEPSEEK_V3(1)},
    };
    /* The router's terms as Megatron-Bridge converts each config: Mixtral router_aux_loss_coef
     * 0.02 and Qwen3 0.001 give aux_loss; DeepSeek-V3 aux_loss_alpha 0.001 with topk_method
     * noaux_tc gives seq_aux_loss and the expert bias (deepseek_v3_bridge.py). */
    static const enum spsim_moe_balancing balancing[] = {
        SPSIM_BALANCE_AUX_LOSS, SPSIM_BALANCE_AUX_LOSS, SPSIM_BALANCE_SEQ_AUX_LOSS};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(cases); i++) {
        struct spsim_model *hf = load_path(cases[i].dir);
        ck_assert_int_eq(spsim_model_get_shape(hf)->load_balancing, balancing[i]);
        ck_assert(spsim_model_get_shape(hf)->expert_bias == (i == 2));
        ck_assert(!spsim_model_get_shape(hf)->z_loss);
        struct spsim_model *shipped = testutil_model_named(cases[i].shipped);
        struct spsim_model *hand = parse_ok(cases[i].inline_json);
        same_shape(spsim_model_get_shape(hf), spsim_model_get_shape(shipped), cases[i].dir);
        same_shape(spsim_model_get_shape(hand), spsim_model_get_shape(shipped), cases[i].shipped);
        ck_assert_uint_eq(spsim_model_parameters(hf, 1), spsim_model_parameters(hand, 1));
        ck_assert_uint_eq(spsim_model_active_parameters(hf, 1),
                          spsim_model_active_parameters(hand, 1));
        for (uint32_t l = 0; l < spsim_model_get_shape(hf)->layers; l++)
            ck_assert(spsim_model_layer_is_moe(hf, l) == spsim_model_layer_is_moe(shipped, l));
        spsim_model_destroy(hf);
        spsim_model_destroy(shipped);
        spsim_model_destroy(hand);
    }
}
END_TEST

/* gpt-oss's count by hand: biases everywhere (QKV 4096 + 2·512, projection 2880; each expert's
 * fc1 2·2880 and fc2 2880; the router's E), and a sink logit for each of the 64 heads; 4 of
 * the E experts active. */
static void
gpt_oss_closed_form(uint64_t layers, uint64_t E, uint64_t *total, uint64_t *active)
{
    uint64_t h = 2880, f = 2880, V = 201088;
    uint64_t att = h * (4096 + 1024) + 4096 * h + (4096 + 1024) + h + 64;
    uint64_t expert = 3 * h * f + 2 * f + h, rest = att + 2 * h + h * E + E;
    *total = layers * (rest + E * expert) + 2 * V * h + h;
    *active = layers * (rest + 4 * expert) + 2 * V * h + h;
}

/* Shipped profiles against the closed forms: Mixtral 8x22B 141B / 39B (Mistral AI's release,
 * "141B parameters, 39B active"), Qwen3-235B-A22B, gpt-oss-120b 116.83B and gpt-oss-20b 20.91B
 * total (OpenAI's model card, Table 1), their 64 attention-sink logits a layer included (TE's
 * softmax_offset, one per head:
 * transformer_engine/pytorch/attention/dot_product_attention/dot_product_attention.py at d0067d0,
 * lines 772-784). */
START_TEST(shipped_totals)
{
    uint64_t t, a;
    moe_closed_form(56, 6144, gqa_attention(6144, 48, 8, 128, false), 8, 2, 16384, 32768, &t, &a);
    struct spsim_model *m = testutil_model_named("mixtral-8x22b");
    ck_assert_uint_eq(spsim_model_parameters(m, 1), t);
    ck_assert_uint_eq(spsim_model_active_parameters(m, 1), a);
    ck_assert(fabs((double)t - 141e9) < 1e9 && fabs((double)a - 39e9) < 1e9);
    spsim_model_destroy(m);
    moe_closed_form(94, 4096, gqa_attention(4096, 64, 4, 128, true), 128, 8, 1536, 151936, &t, &a);
    m = testutil_model_named("qwen3-235b-a22b");
    ck_assert_uint_eq(spsim_model_parameters(m, 1), t);
    spsim_model_destroy(m);
    gpt_oss_closed_form(36, 128, &t, &a);
    m = testutil_model_named("gpt-oss-120b");
    ck_assert_uint_eq(spsim_model_parameters(m, 1), t);
    ck_assert(fabs((double)t - 116.83e9) < 0.01e9);
    spsim_model_destroy(m);
    gpt_oss_closed_form(24, 32, &t, &a);
    m = testutil_model_named("gpt-oss-20b");
    ck_assert_uint_eq(spsim_model_parameters(m, 1), t);
    ck_assert_uint_eq(spsim_model_active_parameters(m, 1), a);
    ck_assert(fabs((double)t - 20.91e9) < 0.01e9);
    spsim_model_destroy(m);
}
END_TEST

/* The sinks on one rank: tp 2 with SP, pp 4 (9 layers a stage), ep 8, etp 1. Each layer's
 * softmax_offset is one Parameter of heads / tp = 32 logits (TE dot_product_attention.py:778-784 at
 * d0067d0): against the same model without sinks, 9 · 32 = 288 more parameters on the GPU and 9
 * more tensors for its optimizer step (opt_host.c). */
static void
sinks_on_a_rank(const struct spsim_model *with)
{
    struct spsim_model_shape sh = *spsim_model_get_shape(with);
    sh.softmax_type = SPSIM_SOFTMAX_VANILLA;
    struct spsim_model *without = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_model_create(&sh, "no sinks", &without, &err), SPSIM_OK);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 2, p.sp = true, p.pp = 4, p.ep = 8, p.etp = 1, p.dp = 8, p.gbs = 64;
    struct spsim_result a, b;
    ck_assert_msg(spsim_evaluate(with, hw, &p, &a, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_msg(spsim_evaluate(without, hw, &p, &b, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(a.memory.parameters_per_gpu - b.memory.parameters_per_gpu, 9 * 32);
    ck_assert_uint_eq(a.time.optimizer_host_tensors - b.time.optimizer_host_tensors, 9);
    spsim_model_destroy(without);
    spsim_hardware_destroy(hw);
}

/* openai/gpt-oss-120b's and -20b's config.json, verbatim from ai-dynamo/aiconfigurator
 * (tests/data/hf/README.md), read as Megatron-Bridge's GPTOSSBridge converts them
 * (gpt_oss_bridge.py at 067f987): the closed form above, the totals of OpenAI's model card
 * (Table 1: 116.83B and 20.91B; active 5.13B and 3.61B, the input embedding left out), learned
 * sinks, the 128-token window on the first of each pair of layers, no load-balancing loss. */
START_TEST(hf_gpt_oss)
{
    static const struct {
        const char *dir, *shipped;
        uint64_t layers, experts;
        double total, active;
    } cases[] = {
        {"tests/data/hf/gpt-oss-120b", "gpt-oss-120b", 36, 128, 116.83e9, 5.13e9},
        {"tests/data/hf/gpt-oss-20b", "gpt-oss-20b", 24, 32, 20.91e9, 3.61e9},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(cases); i++) {
        uint64_t t, a;
        gpt_oss_closed_form(cases[i].layers, cases[i].experts, &t, &a);
        struct spsim_model *hf = load_path(cases[i].dir);
        const struct spsim_model_shape *sh = spsim_model_get_shape(hf);
        ck_assert_uint_eq(spsim_model_parameters(hf, 1), t);
        ck_assert_uint_eq(spsim_model_active_parameters(hf, 1), a);
        ck_assert(fabs((double)t - cases[i].total) < 0.01e9);
        ck_assert(fabs((double)(a - 201088 * 2880) - cases[i].active) < 0.01e9);
        ck_assert_int_eq(sh->softmax_type, SPSIM_SOFTMAX_LEARNABLE);
        ck_assert_uint_eq(sh->window, 128);
        ck_assert_uint_eq(sh->window_skip_freq, 2);
        ck_assert_int_eq(sh->load_balancing, SPSIM_BALANCE_NONE);
        ck_assert(sh->linear_bias && !sh->tied_embeddings && sh->mlp == SPSIM_MLP_SWIGLU);
        ck_assert_uint_eq(sh->seq_len, 1024); /* GPTModelProvider's seq_length */
        struct spsim_model *shipped = testutil_model_named(cases[i].shipped);
        same_shape(sh, spsim_model_get_shape(shipped), cases[i].dir);
        ck_assert_int_eq(spsim_model_get_shape(shipped)->softmax_type, sh->softmax_type);
        ck_assert(spsim_model_get_shape(shipped)->window == sh->window &&
                  spsim_model_get_shape(shipped)->window_skip_freq == sh->window_skip_freq);
        spsim_model_destroy(shipped);
        if (i == 0)
            sinks_on_a_rank(hf);
        spsim_model_destroy(hf);
    }
}
END_TEST

/* Families and keys the reader refuses, naming them (exit 3). */
START_TEST(hf_refusals)
{
    struct spsim_error err = {0};
    struct spsim_model *m = NULL;
    static const struct {
        const char *json, *field;
    } cases[] = {
        {"{\"model_type\": \"llama\", \"num_local_experts\": 8}", "num_local_experts"},
        {"{\"model_type\": \"qwen3\", \"num_experts\": 8}", "num_experts"},
        {"{\"model_type\": \"qwen2_moe\", \"num_experts\": 8}", "num_experts"},
        {"{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"num_experts\": 4, \"num_experts_per_tok\": 2, "
         "\"moe_intermediate_size\": 32, \"decoder_sparse_step\": 2}",
         "decoder_sparse_step"},
        {"{\"model_type\": \"qwen3_moe\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"num_experts\": 4, \"num_experts_per_tok\": 2, "
         "\"moe_intermediate_size\": 32, \"mlp_only_layers\": [0]}",
         "mlp_only_layers"},
        {"{\"model_type\": \"mixtral\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"num_local_experts\": 4, \"num_experts_per_tok\": 5}",
         "experts_per_token"},
        {"{\"model_type\": \"mixtral\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"num_local_experts\": 4}",
         "num_experts_per_tok"},
        {"{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"num_local_experts\": 4, \"num_experts_per_tok\": 2, "
         "\"experts_per_token\": 3}",
         "experts_per_token"},
        {"{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, "
         "\"moe_intermediate_size\": 32, \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 16, "
         "\"qk_rope_head_dim\": 8, \"v_head_dim\": 16, \"scoring_func\": \"sqrtsoftplus\"}",
         "scoring_func"},
        {"{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, "
         "\"moe_intermediate_size\": 32, \"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8, "
         "\"v_head_dim\": 16}",
         "kv_lora_rank"},
        /* Issue 23, defect 11: nope + rope wrapped to 64, a valid width. */
        {"{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"n_routed_experts\": 4, \"num_experts_per_tok\": 2, "
         "\"moe_intermediate_size\": 32, \"kv_lora_rank\": 16, \"qk_nope_head_dim\": "
         "4294967295, \"qk_rope_head_dim\": 65, \"v_head_dim\": 16}",
         "qk_rope_head_dim"},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(cases); i++) {
        char want[128];
        int rc = spsim_model_parse(cases[i].json, strlen(cases[i].json), "x/config.json", &m, &err);
        ck_assert_msg(rc == SPSIM_EFIELD, "case %zu accepted", i);
        snprintf(want, sizeof(want), "x/config.json: field '%s': ", cases[i].field);
        ck_assert_msg(strncmp(err.message, want, strlen(want)) == 0, "%zu: %s", i, err.message);
    }
}
END_TEST

/* The published dense and Kimi K2 configs of tests/data/hf/ against their counts by hand (no
 * vocabulary padding: spsim_model_parameters at tp 1; both vocabularies divide by 128). */
START_TEST(hf_published_counts)
{
    /* Llama 3.1 8B (config.json: 32 layers, 4096, 32 heads, 8 KV heads of 128, FFN 14336,
     * 128256 tokens, untied): per layer Q 4096² + K,V 2·4096·1024 + O 4096² = 41,943,040,
     * SwiGLU 3·4096·14336 = 176,160,768, two norms 8192; embedding and head 2·128256·4096;
     * final norm 4096: 8,030,261,248, Meta's "8B" (the model card's 8.03B). */
    uint64_t h = 4096;
    uint64_t llama =
        32 * (gqa_attention(h, 32, 8, 128, false) + 3 * h * 14336 + 2 * h) + 2 * 128256 * h + h;
    ck_assert_uint_eq(llama, 8030261248ull);
    /* Qwen3-8B (36 layers, 4096, 32 heads, 8 KV heads, head_dim 128 with Q/K norms of 128,
     * FFN 12288, 151936 tokens, untied): 8,190,735,360, the Qwen3 report's 8.2B (Table 1). */
    uint64_t qwen =
        36 * (gqa_attention(h, 32, 8, 128, true) + 3 * h * 12288 + 2 * h) + 2 * 151936 * h + h;
    ck_assert_uint_eq(qwen, 8190735360ull);
    /* Kimi K2 (DeepSeek-V3's layer: 61 layers, 7168, 64 heads, q-lora 1536, kv-lora 512,
     * qk 128 + rope 64, v 128; first layer dense FFN 18432, then 60 MoE layers of 384 experts
     * of 2048, top 8, one shared expert, router 7168·384; 163840 tokens; no MTP layer). Its
     * report (arXiv:2507.20534) says 1.04T total and 32B activated; the count here is
     * 1,026.4B and 32.86B (the 14B of the total are not found in the config). */
    uint64_t k = 7168, n = 64, rq = 1536, rkv = 512, V = 163840, expert = 3 * k * 2048;
    uint64_t mla = k * rq + rq + rq * n * 192 + k * (rkv + 64) + rkv + rkv * n * 256 + n * 128 * k;
    uint64_t dense = mla + 2 * k + 3 * k * 18432, rest = mla + 2 * k + k * 384 + expert;
    uint64_t kimi = dense + 60 * (rest + 384 * expert) + 2 * V * k + k;
    uint64_t kimi_active = dense + 60 * (rest + 8 * expert) + 2 * V * k + k;
    ck_assert(fabs((double)kimi - 1.04e12) < 0.02e12 && fabs((double)kimi_active - 32e9) < 1e9);
    /* Qwen2.5-7B (28 layers, 3584, 28 heads, 4 KV heads of 128, Q/K/V biases, FFN 18944,
     * 152064 tokens, untied; "use_mrope": false): per layer 29,364,736 attention with its
     * 3584 + 2·512 biases, SwiGLU 203,685,888, norms 7168; 7,615,616,512, the model card's
     * "7.61B" (6.53B non-embedding: 28 layers' 6,525,618,176). Qwen2.5-1.5B (28 layers, 1536,
     * 12 heads, 2 KV heads, FFN 8960, 151936 tokens, tied): 1,543,714,304, the card's 1.54B
     * (1.31B non-embedding). */
    uint64_t q7 = 3584, q15 = 1536;
    uint64_t qwen25_7b =
        28 * (gqa_attention(q7, 28, 4, 128, false) + q7 + 2 * 512 + 3 * q7 * 18944 + 2 * q7) +
        2 * 152064 * q7 + q7;
    uint64_t qwen25_15b =
        28 * (gqa_attention(q15, 12, 2, 128, false) + q15 + 2 * 256 + 3 * q15 * 8960 + 2 * q15) +
        151936 * q15 + q15;
    ck_assert(fabs((double)qwen25_7b - 7.61e9) < 0.01e9 &&
              fabs((double)(qwen25_7b - 2 * 152064 * q7 - q7) - 6.53e9) < 0.01e9);
    ck_assert(fabs((double)qwen25_15b - 1.54e9) < 0.01e9);
    /* Mixtral-8x22B-v0.1 (tests/data/hf, ai-dynamo/aiconfigurator 0b077da: 56 layers, 6144, 48
     * heads, 8 KV heads of 128, 8 experts of 16384, top 2, router h·8, 32000 tokens, untied):
     * per layer attention 88,080,384, experts 8 × 301,989,888, router 49,152, norms 12,288;
     * 140,620,634,112 total and 39,152,031,744 active, Mistral AI's "141B" and "39B active". */
    uint64_t mx = 6144, mx_total, mx_active;
    moe_closed_form(56, mx, gqa_attention(mx, 48, 8, 128, false), 8, 2, 16384, 32000, &mx_total,
                    &mx_active);
    ck_assert_uint_eq(mx_total, 140620634112ull);
    ck_assert_uint_eq(mx_active, 39152031744ull);
    ck_assert(fabs((double)mx_total - 141e9) < 0.5e9 && fabs((double)mx_active - 39e9) < 0.5e9);
    const struct {
        const char *dir;
        uint64_t total, active;
    } cases[] = {{"tests/data/hf/Meta-Llama-3.1-8B", llama, llama},
                 {"tests/data/hf/Qwen3-8B", qwen, qwen},
                 {"tests/data/hf/Kimi-K2-Instruct", kimi, kimi_active},
                 {"tests/data/hf/Qwen2.5-7B", qwen25_7b, qwen25_7b},
                 {"tests/data/hf/Qwen2.5-1.5B", qwen25_15b, qwen25_15b},
                 {"tests/data/hf/Mixtral-8x22B-v0.1", mx_total, mx_active}};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(cases); i++) {
        struct spsim_model *m = load_path(cases[i].dir);
        ck_assert_uint_eq(spsim_model_parameters(m, 1), cases[i].total);
        ck_assert_uint_eq(spsim_model_active_parameters(m, 1), cases[i].active);
        spsim_model_destroy(m);
    }
}
END_TEST

/* A Gated DeltaNet layer (Megatron-LM d98e8a6 ssm/gated_delta_net/common.py): the input norm
 * h, in_proj h·(2·H_k·d_k + 2·H_v·d_v + 2·H_v), the depthwise conv (2·H_k·d_k + H_v·d_v)·K
 * without bias, dt_bias and A_log H_v each, out_norm d_v, out_proj H_v·d_v·h. */
static uint64_t
gdn_layer(uint64_t h, uint64_t hk, uint64_t dk, uint64_t hv, uint64_t dv, uint64_t K)
{
    return h + h * (2 * hk * dk + 2 * hv * dv + 2 * hv) + (2 * hk * dk + hv * dv) * K + 2 * hv +
           dv + hv * dv * h;
}

/* Gated attention with Q/K norms (attention.py attention_output_gate: linear_qkv also projects
 * heads·head_dim of gate) and its input norm. */
static uint64_t
gated_attention(uint64_t h, uint64_t a, uint64_t g, uint64_t d)
{
    return gqa_attention(h, a, g, d, true) + h * a * d + h;
}

/*
 * Qwen3-Next-80B-A3B (tests/data/hf, aliyun/SimAI ba03630): 48 layers of 2048, every 4th full
 * attention (16 heads, 2 KV heads of 256, gated, Q/K norms), the others Gated DeltaNet (16 key
 * heads of 128, 32 value heads of 128, 4 taps); each layer's FFN an MoE of 512 experts of 512,
 * top 10, one shared expert of 512 behind its sigmoid gate (h), router h·512; 151936 tokens,
 * untied. 79,674,391,296 total: the card's "80B in total"; 3,874,929,408 active, of which
 * 3,252,599,552 without the embedding and output head: the card's "3B activated".
 * Qwen3.5-27B (ai-dynamo/aiconfigurator 0b077da, its text_config): 64 layers of 5120, every 4th
 * gated attention (24 heads, 4 KV heads of 256), the others Gated DeltaNet (16 key heads,
 * 48 value heads of 128), dense SwiGLU 17408, 248320 tokens, untied, one MTP depth (a gated
 * attention and an MLP layer, enorm, hnorm, final norm 3h, eh_proj 2h·h): 27,320,697,856, the
 * card's 27B (the vision tower is not counted).
 */
START_TEST(hf_gated_deltanet_counts)
{
    uint64_t h = 2048, V = 151936, expert = 3 * h * 512;
    uint64_t moe_rest = h + h * 512 + h + expert; /* norm, router, shared gate, shared expert */
    uint64_t layers = 36 * gdn_layer(h, 16, 128, 32, 128, 4) + 12 * gated_attention(h, 16, 2, 256);
    uint64_t total = layers + 48 * (moe_rest + 512 * expert) + 2 * V * h + h;
    uint64_t active = layers + 48 * (moe_rest + 10 * expert) + 2 * V * h + h;
    ck_assert_uint_eq(total, 79674391296ull);
    ck_assert(fabs((double)total - 80e9) < 0.5e9);
    ck_assert(fabs((double)(active - 2 * V * h) - 3e9) < 0.3e9);
    uint64_t H = 5120, W = 248320, mlp = H + 3 * H * 17408;
    uint64_t q35 = 48 * gdn_layer(H, 16, 128, 48, 128, 4) + 16 * gated_attention(H, 24, 4, 256) +
                   64 * mlp + 2 * W * H + H;
    uint64_t mtp = gated_attention(H, 24, 4, 256) + mlp + 3 * H + 2 * H * H;
    ck_assert(fabs((double)(q35 + mtp) - 27e9) < 0.5e9);
    const struct {
        const char *dir;
        uint64_t total, active;
    } cases[] = {{"tests/data/hf/Qwen3-Next-80B-A3B", total, active},
                 {"tests/data/hf/Qwen3.5-27B", q35 + mtp, q35 + mtp}};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(cases); i++) {
        struct spsim_model *m = load_path(cases[i].dir);
        ck_assert_uint_eq(spsim_model_parameters(m, 1), cases[i].total);
        ck_assert_uint_eq(spsim_model_active_parameters(m, 1), cases[i].active);
        const struct spsim_model_shape *s = spsim_model_get_shape(m);
        ck_assert_int_eq(spsim_model_layer_kind(m, 0), SPSIM_LAYER_GDN);
        ck_assert_int_eq(spsim_model_layer_kind(m, 6), SPSIM_LAYER_ATTENTION);
        ck_assert(s->attention_output_gate && s->qk_norm && s->rotary_percent == 0.25);
        spsim_model_destroy(m);
    }
    /* The shipped profile: the same shape as the config reads to (Megatron-Bridge's
     * global_aux_loss, qwen3_next_bridge.py), the same counts. */
    struct spsim_model *hf = load_path("tests/data/hf/Qwen3-Next-80B-A3B");
    struct spsim_model *shipped = testutil_model_named("qwen3-next-80b-a3b");
    const struct spsim_model_shape *a = spsim_model_get_shape(hf),
                                   *b = spsim_model_get_shape(shipped);
    ck_assert_str_eq(a->hybrid_pattern, b->hybrid_pattern);
    ck_assert_int_eq(a->load_balancing, SPSIM_BALANCE_GLOBAL_AUX_LOSS);
    ck_assert_int_eq(b->load_balancing, SPSIM_BALANCE_GLOBAL_AUX_LOSS);
    ck_assert(a->moe_shared_expert_gate && b->moe_shared_expert_gate);
    ck_assert_uint_eq(spsim_model_parameters(shipped, 1), total);
    ck_assert_uint_eq(spsim_model_active_parameters(shipped, 1), active);
    spsim_model_destroy(hf);
    spsim_model_destroy(shipped);
}
END_TEST

/* A Mamba-2 layer (Megatron-LM d98e8a6 ssm/mamba_mixer.py): the input norm h, in_proj
 * h·(2d + 2GN + H) with d = H·P, conv1d (d + 2GN)·(4 taps + its bias), dt_bias, A_log and D per
 * head, the gated norm d, out_proj d·h. */
static uint64_t
mamba_layer(uint64_t h, uint64_t H, uint64_t P, uint64_t N, uint64_t G)
{
    uint64_t d = H * P;
    return h + h * (2 * d + 2 * G * N + H) + (d + 2 * G * N) * 5 + 3 * H + d + d * h;
}

/* A latent MoE layer of Nemotron 3 (moe_layer.py): norm h, router h·E, E squared-ReLU experts
 * of 2·r·f_e on the latent r (r = h without one), the shared expert 2·h·f_s, the two latent
 * projections 2·h·r. */
static uint64_t
nemotron_moe(uint64_t h, uint64_t E, uint64_t k, uint64_t fe, uint64_t fs, uint64_t r)
{
    uint64_t w = r ? r : h;
    return h + h * E + k * 2 * w * fe + 2 * h * fs + (r ? 2 * h * r : 0);
}

/*
 * Nemotron-H and Nemotron 3 config.json files (tests/data/hf, ai-dynamo/aiconfigurator), read as
 * Megatron-Bridge's NemotronHBridge converts them. Nemotron-H-56B: 54 Mamba layers of 8192 (256
 * heads of 64, state 256, 8 groups), 10 attention layers (64 heads, 8 KV heads of 128), 54
 * squared-ReLU MLPs of 32768 (fc1 and fc2), 131072 tokens untied, the final norm:
 * 56,324,350,464 (the name's 56B). Nemotron 3 Nano 30B-A3B: 23 Mamba layers of 2688 (64 heads of
 * 64, state 128, 8 groups), 6 attention layers (32 heads, 2 KV of 128), 23 MoE layers of 128
 * experts of 1856, top 6, a shared expert of 3712: 31,577,937,344 (the shipped profile's; the
 * checkpoint's 23 router biases of 128 are buffers). Super, 3.5 Lightning: the shipped profiles'
 * totals (test_hybrid.c works them by hand; their one MTP depth's weights once). Ultra: the
 * shipped profile and the MTP depth its config publishes (mtp_layers_block_type attention, moe):
 * enorm, hnorm and final norm 3h, eh_proj 2h·h, an attention and a latent MoE layer.
 */
START_TEST(hf_nemotron_h_counts)
{
    uint64_t V = 131072;
    uint64_t h = 8192, h56 = 54 * mamba_layer(h, 256, 64, 256, 8) +
                             10 * (h + h * (64 * 128 + 2 * 8 * 128) + 64 * 128 * h) +
                             54 * (h + 2 * h * 32768) + 2 * V * h + h;
    ck_assert_uint_eq(h56, 56324350464ull);
    uint64_t n = 2688, att = n + n * (32 * 128 + 2 * 2 * 128) + 32 * 128 * n;
    uint64_t nano_rest = 23 * mamba_layer(n, 64, 64, 128, 8) + 6 * att + 2 * V * n + n;
    uint64_t nano = nano_rest + 23 * nemotron_moe(n, 128, 128, 1856, 3712, 0);
    uint64_t nano_active = nano_rest + 23 * nemotron_moe(n, 128, 6, 1856, 3712, 0);
    uint64_t u = 8192, uatt = u + u * (64 * 128 + 2 * 2 * 128) + 64 * 128 * u;
    uint64_t umtp = 3 * u + 2 * u * u + uatt + nemotron_moe(u, 512, 512, 5120, 10240, 2048);
    uint64_t umtp_active = 3 * u + 2 * u * u + uatt + nemotron_moe(u, 512, 22, 5120, 10240, 2048);
    const struct {
        const char *dir, *shipped, *mtp;
        uint64_t total, active;
    } cases[] = {
        {"Nemotron-H-56B-Base-8K", "nemotron-h-56b", NULL, h56, h56},
        {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nemotron-3-nano", NULL, nano, nano_active},
        {"NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "nemotron-3-super", "*E", 0, 0},
        {"NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4", "nemotron-3.5-lightning", "*E", 0, 0},
        {"NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", "nemotron-3-ultra", "*E", umtp, umtp_active},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(cases); i++) {
        char path[256];
        snprintf(path, sizeof(path), "tests/data/hf/%s", cases[i].dir);
        struct spsim_model *m = load_path(path);
        struct spsim_model *ship = testutil_model_named(cases[i].shipped);
        const struct spsim_model_shape *a = spsim_model_get_shape(m),
                                       *b = spsim_model_get_shape(ship);
        bool ultra = strstr(cases[i].dir, "Ultra") != NULL;
        uint64_t total = ultra            ? spsim_model_parameters(ship, 1) + cases[i].total
                         : cases[i].total ? cases[i].total
                                          : spsim_model_parameters(ship, 1);
        uint64_t active = ultra ? spsim_model_active_parameters(ship, 1) + cases[i].active
                          : cases[i].active ? cases[i].active
                                            : spsim_model_active_parameters(ship, 1);
        ck_assert_msg(spsim_model_parameters(m, 1) == total, "%s: %llu, want %llu", cases[i].dir,
                      (unsigned long long)spsim_model_parameters(m, 1), (unsigned long long)total);
        ck_assert_uint_eq(spsim_model_active_parameters(m, 1), active);
        /* The decoder the shipped profile states: its pattern, the Mamba-2 mixer, squared ReLU,
         * no position embedding, the experts with their latent width and router. */
        ck_assert_str_eq(a->hybrid_pattern, b->hybrid_pattern);
        ck_assert(a->mlp == SPSIM_MLP_RELU2 && a->position == SPSIM_POSITION_NONE &&
                  a->norm == SPSIM_NORM_RMSNORM && !a->linear_bias && !a->tied_embeddings);
        ck_assert(a->mamba_heads == b->mamba_heads && a->mamba_head_dim == b->mamba_head_dim &&
                  a->mamba_state_dim == b->mamba_state_dim && a->mamba_groups == b->mamba_groups);
        ck_assert(a->heads == b->heads && a->kv_heads == b->kv_heads &&
                  a->head_dim == b->head_dim && a->ffn_hidden == b->ffn_hidden &&
                  a->vocab == b->vocab);
        ck_assert(a->experts == b->experts && a->experts_per_token == b->experts_per_token &&
                  a->expert_ffn_hidden == b->expert_ffn_hidden && a->moe_latent == b->moe_latent &&
                  a->shared_expert_ffn_hidden == b->shared_expert_ffn_hidden &&
                  a->router_score == b->router_score && a->expert_bias == b->expert_bias &&
                  a->load_balancing == b->load_balancing);
        ck_assert(cases[i].mtp ? a->mtp_pattern && strcmp(a->mtp_pattern, cases[i].mtp) == 0 &&
                                     a->mtp_layers == 1 && a->mtp_shared
                               : !a->mtp_pattern && !a->mtp_layers);
        spsim_model_destroy(ship);
        spsim_model_destroy(m);
    }
}
END_TEST

/* What a Nemotron-H config may set that Megatron's HybridModel does not build is refused by key:
 * another MLP activation, biases, a window, a block name without a symbol, a pattern whose
 * length is not num_hidden_layers, MTP depths without their pattern, an unknown key. */
START_TEST(hf_nemotron_h_refusals)
{
    static const char head[] =
        "{\"model_type\": \"nemotron_h\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
        "\"num_key_value_heads\": 2, \"intermediate_size\": 128, \"vocab_size\": 256, "
        "\"max_position_embeddings\": 64, \"mamba_num_heads\": 4, \"mamba_head_dim\": 32, "
        "\"ssm_state_size\": 16, \"n_groups\": 2, ";
    static const struct {
        const char *tail, *field, *what;
    } cases[] = {
        {"\"hybrid_override_pattern\": \"M*-\", \"mlp_hidden_act\": \"gelu\"}", "mlp_hidden_act",
         "\"relu2\""},
        {"\"hybrid_override_pattern\": \"M*-\", \"use_bias\": true}", "use_bias", "true is not"},
        {"\"hybrid_override_pattern\": \"M*-\", \"sliding_window\": 16}", "sliding_window",
         "sliding-window"},
        {"\"layers_block_type\": [\"mamba\", \"gdn\"]}", "layers_block_type", "entry 1"},
        {"\"hybrid_override_pattern\": \"M*-\", \"num_hidden_layers\": 4}", "num_hidden_layers",
         "pattern has 3"},
        {"\"hybrid_override_pattern\": \"M*-\", \"num_nextn_predict_layers\": 1}",
         "num_nextn_predict_layers", "mtp_hybrid_override_pattern"},
        {"\"hybrid_override_pattern\": \"M*-\", \"mamba_d_ssm\": 3}", "mamba_d_ssm",
         "not a key spsim knows for Nemotron-H"},
        {"\"hybrid_override_pattern\": \"MD-\"}", "hybrid_pattern", "'D'"},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(cases); i++) {
        char json[1024], field[64];
        snprintf(json, sizeof(json), "%s%s", head, cases[i].tail);
        snprintf(field, sizeof(field), "field '%s'", cases[i].field);
        struct spsim_model *m = NULL;
        struct spsim_error err = {0};
        ck_assert_int_eq(spsim_model_parse(json, strlen(json), "nh.json", &m, &err), SPSIM_EFIELD);
        ck_assert_msg(strstr(err.message, field) && strstr(err.message, cases[i].what), "%zu: %s",
                      i, err.message);
    }
    /* The smallest accepted: one Mamba, one attention, one MLP layer. */
    char json[1024];
    snprintf(json, sizeof(json), "%s\"hybrid_override_pattern\": \"M*-\"}", head);
    struct spsim_model *m = parse_ok(json);
    uint64_t h = 64, att = h + h * (4 * 16 + 2 * 2 * 16) + 4 * 16 * h;
    ck_assert_uint_eq(spsim_model_parameters(m, 1),
                      mamba_layer(h, 4, 32, 16, 2) + att + h + 2 * h * 128 + 2 * 256 * h + h);
    spsim_model_destroy(m);
}
END_TEST

/* The published configs of families spsim does not model are refused naming what their
 * layer has (exit 3). */
START_TEST(hf_published_refusals)
{
    static const struct {
        const char *dir, *what;
    } cases[] = {
        {"gemma-4-26B-A4B", "'gemma4': sliding-window attention on 5 of 6 layers, final logit "
                            "softcapping"},
        {"Llama-4-Scout-17B-16E-Instruct", "'llama4': chunked attention (attention_chunk_size)"},
        {"GLM-5", "'glm_moe_dsa': DeepSeek sparse attention's indexer"},
        {"MiniMax-M2.5", "'minimax_m2': rotary embedding on part of the head (rotary_dim)"},
        {"MiMo-7B-Base", "'mimo': MiMo's multi-token prediction layers"},
        {"Llama-3_3-Nemotron-Super-49B-v1", "'nemotron-nas': per-layer blocks (block_configs)"},
        {"Step-3.7-Flash", "'step3p7': sliding-window attention on 33 of 45 layers"},
        {"DeepSeek-V3.2", "'deepseek_v32': DeepSeek sparse attention's indexer"},
        {"DeepSeek-V4-Flash", "'deepseek_v4': compressed sparse attention (compress_ratios"},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(cases); i++) {
        char path[4096];
        struct spsim_model *m = NULL;
        struct spsim_error err = {0};
        snprintf(path, sizeof(path), "%s/tests/data/hf/%s", getenv("SPSIM_DATA_DIR"), cases[i].dir);
        ck_assert_int_eq(spsim_model_load(path, &m, &err), SPSIM_EFIELD);
        ck_assert_msg(strstr(err.message, "field 'model_type': ") &&
                          strstr(err.message, cases[i].what),
                      "%s: %s", cases[i].dir, err.message);
    }
    /* Infinity stays refused where a number is read, and in spsim's own profiles. */
    static const char inf_hf[] =
        "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": Infinity}";
    static const char inf_profile[] = HEAD "\"layers\": Infinity}";
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_model_parse(inf_hf, strlen(inf_hf), "x.json", &m, &err), SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "field 'hidden_size'"));
    ck_assert_int_eq(spsim_model_parse(inf_profile, strlen(inf_profile), "p.json", &m, &err),
                     SPSIM_EPARSE);
    ck_assert_ptr_nonnull(strstr(err.message, "p.json: malformed JSON at line 1"));
}
END_TEST

/* A DeepSeek-V2-Lite-style config: no Q compression (q_lora_rank null), softmax router, two
 * shared experts, first layer dense; its MLA attention counted without the q down-projection
 * and q norm. */
START_TEST(hf_deepseek_v2_lite)
{
    static const char json[] =
        "{\"model_type\": \"deepseek_v2\", \"num_hidden_layers\": 4, \"hidden_size\": 64, "
        "\"num_attention_heads\": 4, \"num_key_value_heads\": 4, \"intermediate_size\": 128, "
        "\"vocab_size\": 128, \"max_position_embeddings\": 64, \"n_routed_experts\": 8, "
        "\"n_shared_experts\": 2, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 16, "
        "\"first_k_dense_replace\": 1, \"moe_layer_freq\": 1, \"q_lora_rank\": null, "
        "\"kv_lora_rank\": 32, \"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8, "
        "\"v_head_dim\": 16, \"topk_method\": \"greedy\", \"tie_word_embeddings\": false}";
    struct spsim_model *m = parse_ok(json);
    const struct spsim_model_shape *s = spsim_model_get_shape(m);
    ck_assert_uint_eq(s->shared_expert_ffn_hidden, 32);
    ck_assert_uint_eq(s->head_dim, 24);
    ck_assert(s->router_score == SPSIM_ROUTER_SOFTMAX && s->q_lora_rank == 0);
    uint64_t h = 64, att = h * 4 * 24 + h * (32 + 8) + 32 + 32 * 4 * 32 + 4 * 16 * h;
    uint64_t dense = att + 2 * h + 3 * h * 128;
    uint64_t moe = att + 2 * h + h * 8 + 3 * h * 32 + 8 * 3 * h * 16;
    ck_assert_uint_eq(spsim_model_parameters(m, 1), dense + 3 * moe + 2 * 128 * h + h);
    spsim_model_destroy(m);
}
END_TEST

/* The MTP layer is counted as the last decoder layer's kind (training.py: num_moe_layers +=
 * last_layer_is_moe · mtp_num_layers): a 4-layer model whose dense FFN (128) and active expert
 * width (top 1 of 32) differ, with the MoE layer last and then first. */
START_TEST(mtp_counts_as_last_layer)
{
    static const char *const patterns[] = {"[0, 0, 0, 1]", "[1, 0, 0, 0]"};
    for (int last_moe = 1; last_moe >= 0; last_moe--) {
        char json[1024];
        snprintf(json, sizeof(json),
                 SMALL ", \"experts\": 4, \"experts_per_token\": 1, \"expert_ffn_hidden\": 32, "
                       "\"moe_layer_pattern\": %s, \"mtp_layers\": 1}",
                 patterns[1 - last_moe]);
        struct spsim_model *m = parse_ok(json);
        double h = 64, s = 64, V = 128, att = h * (64 + 128) + 64 * h;
        double moe = 1 + last_moe, dense = 5 - moe;
        double mlp = dense * 3 * h * 128 + moe * 3 * h * 32;
        double want = 2 * (5 * att + mlp + 2 * h * h + 3 * h) + 5 * s * (64 + 64) + 2 * h * V * 2;
        struct spsim_flops_per_token f;
        spsim_model_flops_per_token(m, s, V, &f);
        ck_assert_double_eq_tol(f.megatron, want, want * 1e-12);
        spsim_model_destroy(m);
    }
}
END_TEST

/* Megatron-Bridge's num_floating_point_operations (flop_utils.py transformer_flops at 067f987)
 * per token and pass (its value / (3·B·s)) for the shipped Qwen3-30B-A3B and GPT-OSS 120B
 * profiles at s = 4096, worked from their published configs (HF config.json in tests/data/hf):
 * MLP 2h·f_e·k·3·L; GQA projections 2·[h·(q + 2kv) + q·h]; core attention 2·q·s per full layer
 * and 4·q·c per sliding-window layer, c = W − W(W − 1)/(2s) (W = 128; GPT-OSS's odd 1-based
 * layers slide: 18 of 36); logits 2·h·V. DeepSeek-V3's is megatron_flops_formula. */
START_TEST(bridge_flops_shipped)
{
    double s = 4096;
    /* Qwen3-30B-A3B: h 2048, 32 heads of 128, 4 KV heads, 48 layers all MoE, 128 experts of
     * 768, top 8, vocab 151936 (a multiple of 128: unpadded). */
    double h = 2048, q = 32 * 128, kv = 4 * 128;
    double proj = h * (q + 2 * kv) + q * h;
    double want = 2 * h * 768 * 8 * 3 * 48 + 48 * (2 * proj + 2 * q * s) + 2 * h * 151936;
    struct spsim_model *m = testutil_model_named("qwen3-30b-a3b");
    struct spsim_flops_per_token f;
    spsim_model_flops_per_token(m, s, 151936, &f);
    ck_assert_double_eq_tol(f.megatron, want, want * 1e-12);
    spsim_model_destroy(m);
    /* GPT-OSS 120B: h 2880, 64 heads of 64, 8 KV heads, 36 layers, 128 experts of 2880, top 4,
     * vocab 201088 (a multiple of 128). */
    h = 2880, q = 64 * 64, kv = 8 * 64;
    proj = h * (q + 2 * kv) + q * h;
    double c = 128 - 128.0 * 127 / (2 * s);
    want = 2 * h * 2880 * 4 * 3 * 36 + 36 * 2 * proj + 18 * 2 * q * s + 18 * 4 * q * c +
           2 * h * 201088;
    m = testutil_model_named("gpt-oss-120b");
    spsim_model_flops_per_token(m, s, 201088, &f);
    ck_assert_double_eq_tol(f.megatron, want, want * 1e-12);
    /* The 2022 convention keeps every layer's whole s × s attention. */
    double model = want - 18 * 2 * q * s - 18 * 4 * q * c + 36 * 4 * q * s;
    ck_assert_double_eq_tol(f.model, model, model * 1e-12);
    /* A window as long as the sequence is full causal attention (flop_utils: W < s only). */
    struct spsim_model_shape sh = *spsim_model_get_shape(m);
    spsim_model_destroy(m);
    sh.window = 4096;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_model_create(&sh, "x", &m, &err), SPSIM_OK);
    spsim_model_flops_per_token(m, s, 201088, &f);
    want += 18 * 2 * q * s - 18 * 4 * q * c;
    ck_assert_double_eq_tol(f.megatron, want, want * 1e-12);
    spsim_model_destroy(m);
}
END_TEST

/* The forward flash FLOPs of the layer op (layer.c attention_kernel) at sequence s, mbs 1, tp 1. */
static double
attention_op_flops(const struct spsim_model *m, uint32_t s, uint32_t *window)
{
    struct spsim_model_shape sh = *spsim_model_get_shape(m);
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.seq = s;
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(&sh, &p, &cfg);
    static struct spsim_layer_eval le;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_layer_evaluate(&sh, NULL, &cfg, sh.vocab, &le, &err) == SPSIM_OK, "%s",
                  err.message);
    for (uint32_t i = 0; i < le.layer.block.nops; i++)
        if (le.layer.block.ops[i].flash_fwd_flops > 0) {
            *window = le.layer.block.ops[i].attn_window;
            return le.layer.block.ops[i].flash_fwd_flops;
        }
    ck_abort_msg("no attention op");
    return 0;
}

/*
 * Sliding windows read from config.json. Mistral-7B-v0.1-4L (tests/data/hf,
 * aws-neuron/neuronx-distributed-inference e07f056: Mistral 7B v0.1's config cut to 4 layers of
 * 256, 32 heads of 8, 8 KV heads, FFN 256, tied, sliding_window 1024): MistralAttention windows
 * every layer, Megatron-Bridge's window_size [1023, 0]. Parameters 4·(163,840 attention +
 * 196,608 SwiGLU + 512 norms) + 32000·256 + 256 = 9,636,096. At s = 4096 > W = 1024 each
 * query sees at most 1024 keys: the windowed layer's forward core attention is
 * 2·b·a·(W(W + 1)/2 + (s − W)·W)·(d_qk + d_v) = 2·32·3,670,528·16 = 3,758,620,672 FLOPs (cuDNN's
 * causal-window count), against the whole causal 2·32·4096²·16/2 = 8,589,934,592; Bridge's
 * per-token count takes each layer's average context W − W(W − 1)/(2s) = 896.125 keys:
 * 2·1,441,792 weights + 4·2·896.125·512 core + 2·256·32000 logits = 22,938,112.
 */
START_TEST(hf_sliding_windows)
{
    struct spsim_model *m = load_path("tests/data/hf/Mistral-7B-v0.1-4L");
    const struct spsim_model_shape *sh = spsim_model_get_shape(m);
    ck_assert_uint_eq(sh->window, 1024);
    ck_assert_uint_eq(sh->window_skip_freq, 0);
    uint64_t h = 256;
    ck_assert_uint_eq(spsim_model_parameters(m, 1),
                      4 * (gqa_attention(h, 32, 8, 8, false) + 3 * h * 256 + 2 * h) + 32000 * h +
                          h);
    ck_assert_uint_eq(spsim_model_parameters(m, 1), 9636096ull);
    uint32_t window = 0;
    double W = 1024, S = 4096, windowed = 2.0 * 32 * (W * (W + 1) / 2 + (S - W) * W) * 16;
    ck_assert_double_eq_tol(windowed, 3758620672.0, 0.5);
    ck_assert_double_eq_tol(attention_op_flops(m, 4096, &window), windowed, 1);
    ck_assert_uint_eq(window, 1024);
    /* At s = 1024 the window covers the whole context: 2·32·1024²·16/2. */
    ck_assert_double_eq_tol(attention_op_flops(m, 1024, &window), 2.0 * 32 * 1024 * 1024 * 8, 1);
    struct spsim_flops_per_token f;
    spsim_model_flops_per_token(m, S, 32000, &f);
    double c = W - W * (W - 1) / (2 * S);
    ck_assert_double_eq_tol(f.megatron, 2 * 1441792.0 + 4 * 2 * c * 512 + 2 * 256 * 32000.0, 1);
    ck_assert_double_eq_tol(f.megatron, 22938112.0, 1);
    spsim_model_destroy(m);

    /* Gemma 2's layer_types (sliding unless (i + 1) % 2 == 0) and Gemma 3's ((i + 1) % 6) on
     * a Mistral layer: Megatron's --window-attn-skip-freq 2 and 6, the op the layers' mean
     * ((L − L/N)/L of them windowed). Layer types of another form (Step 3.7's full layers 0, 4,
     * 8, ...) and other kinds are refused naming layer_types. */
    static const char head[] =
        "{\"model_type\": \"mistral\", \"num_hidden_layers\": 12, \"hidden_size\": 256, "
        "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"intermediate_size\": 256, "
        "\"vocab_size\": 32000, \"max_position_embeddings\": 8192, \"sliding_window\": 1024, "
        "\"layer_types\": [";
    const struct {
        uint32_t freq;
        const char *full; /* 'f' full, 's' sliding, 'c' chunked, per layer */
        const char *error;
    } cases[] = {{2, "sfsfsfsfsfsf", NULL},
                 {6, "sssssfsssssf", NULL},
                 {0, "ssssssssssss", NULL},
                 {0, "fsssfsssfsss", "layer 1 is windowed: only every N-th layer full"},
                 {0, "sssssfssssss", "layer 11 is windowed"},
                 {0, "sfsfsfsfsfsc", "layer 11 is 'chunked_attention'"}};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(cases); i++) {
        char json[1024];
        size_t n = snprintf(json, sizeof(json), "%s", head);
        for (const char *k = cases[i].full; *k; k++)
            n += snprintf(json + n, sizeof(json) - n, "%s\"%s_attention\"",
                          k == cases[i].full ? "" : ", ",
                          *k == 'f'   ? "full"
                          : *k == 's' ? "sliding"
                                      : "chunked");
        snprintf(json + n, sizeof(json) - n, "]}");
        struct spsim_error err = {0};
        m = NULL;
        int rc = spsim_model_parse(json, strlen(json), "x/config.json", &m, &err);
        if (cases[i].error) {
            ck_assert_int_eq(rc, SPSIM_EFIELD);
            ck_assert_msg(strstr(err.message, "field 'layer_types': ") &&
                              strstr(err.message, cases[i].error),
                          "%s", err.message);
            continue;
        }
        ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
        ck_assert_uint_eq(spsim_model_get_shape(m)->window, 1024);
        ck_assert_uint_eq(spsim_model_get_shape(m)->window_skip_freq, cases[i].freq);
        double share = cases[i].freq ? 1 - 1.0 / cases[i].freq : 1;
        double full = 2.0 * 32 * S * S * 8;
        ck_assert_double_eq_tol(attention_op_flops(m, 4096, &window),
                                share * windowed + (1 - share) * full, 1);
        spsim_model_destroy(m);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("moe_model");
    TCase *tc = tcase_create("moe_model");
    tcase_add_test(tc, published_totals);
    tcase_add_test(tc, deepseek_v3_totals);
    tcase_add_test(tc, part_counts);
    tcase_add_test(tc, moe_layer_choice);
    tcase_add_test(tc, pattern_parser);
    tcase_add_test(tc, profile_rules);
    tcase_add_test(tc, megatron_flops_formula);
    tcase_add_test(tc, flops_dense_agree);
    tcase_add_test(tc, hf_import);
    tcase_add_test(tc, shipped_totals);
    tcase_add_test(tc, hf_gpt_oss);
    tcase_add_test(tc, hf_refusals);
    tcase_add_test(tc, hf_deepseek_v2_lite);
    tcase_add_test(tc, hf_published_counts);
    tcase_add_test(tc, hf_gated_deltanet_counts);
    tcase_add_test(tc, hf_nemotron_h_counts);
    tcase_add_test(tc, hf_nemotron_h_refusals);
    tcase_add_test(tc, hf_published_refusals);
    tcase_add_test(tc, mtp_counts_as_last_layer);
    tcase_add_test(tc, bridge_flops_shipped);
    tcase_add_test(tc, hf_sliding_windows);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
