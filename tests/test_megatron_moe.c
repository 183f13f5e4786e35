/*
 * Mixture-of-experts, multi-latent-attention and multi-token-prediction launch lines (issues 11
 * and 13): the flags of Megatron-LM's own MoE examples (tests/data/megatron, the *_flags.sh files)
 * read into the shape and the configuration, each parameter total worked here by hand from the
 * model's published shape and held against its published total; then --format megatron read
 * back over sweeps of MoE configurations (ep, etp, dispatcher) and MLA/MTP models.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* A fixture's text with `extra` appended to its last line (argparse keeps a flag's last
 * value). */
static char *
fixture(const char *name, const char *extra)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/data/megatron/%s", getenv("SPSIM_DATA_DIR"), name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    char *buf = malloc(1 << 16);
    size_t len = fread(buf, 1, (1 << 16) - 1 - strlen(extra), f);
    fclose(f);
    while (len && buf[len - 1] == '\n')
        len--;
    memcpy(buf + len, extra, strlen(extra) + 1);
    return buf;
}

static void
parse_ok(const char *text, const char *origin, struct spsim_megatron_config *mc)
{
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(text, strlen(text), origin, mc, &err) == SPSIM_OK, "%s",
                  err.message);
}

static void
assert_refused(const char *text, int rc, const char *message)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_megatron_parse(text, strlen(text), "launch.sh", &mc, &err), rc);
    ck_assert_str_eq(err.message, message);
}

/* Published totals are rounded to their last digit: the exact count is within half of it. */
static void
assert_published(uint64_t count, double published, double unit)
{
    ck_assert_msg(fabs((double)count - published) <= unit / 2, "%llu against %g",
                  (unsigned long long)count, published);
}

/* examples/mixtral/train_mixtral_8x7b_distributed.sh's flags: its Llama2Tokenizer is a file
 * spsim does not read, taken as Llama 2's 32000 tokens (Mixtral's config.json vocab_size too)
 * and said so; the model is Mixtral 8x7B: per layer GQA attention h·(a·d + 2·g·d) + a·d·h, two
 * RMSNorms, the h×E router and 8 SwiGLU experts 3·h·f; untied embedding and head, final norm. */
START_TEST(mixtral_example)
{
    char *text = fixture("mixtral_8x7b_flags.sh", "");
    struct spsim_megatron_config mc;
    parse_ok(text, "mixtral.sh", &mc);
    ck_assert_str_eq(mc.assumed, "Llama2Tokenizer taken as Llama 2's 32000 tokens (give "
                                 "--vocab-size for another)");
    ck_assert_uint_eq(spsim_model_get_shape(mc.model)->vocab, 32000);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->experts == 8 && s->experts_per_token == 2 && s->moe_layer_freq == 1);
    ck_assert_uint_eq(s->expert_ffn_hidden, 14336); /* absent: --ffn-hidden-size */
    ck_assert(s->shared_expert_ffn_hidden == 0 && s->capacity_factor == 0 && !s->kv_lora_rank);
    ck_assert_int_eq(s->router_score, SPSIM_ROUTER_SOFTMAX);
    uint64_t h = 4096, layer = h * (32 * 128 + 2 * 8 * 128) + 32 * 128 * h + 2 * h + h * 8 +
                               8 * 3 * h * 14336;
    uint64_t total = 32 * layer + 2 * 32000 * h + h;
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), total);
    /* 46.7B total (Mistral AI's release of Mixtral 8x7B; Jiang et al. 2024 §2: 47B). */
    assert_published(total, 46.7e9, 0.1e9);
    ck_assert(mc.par.tp == 1 && mc.par.pp == 4 && mc.par.dp == 2 && mc.par.ep == 8);
    ck_assert(mc.par.etp == 0 && mc.par.moe_dispatcher == SPSIM_MOE_ALLTOALL);
    ck_assert(mc.par.distributed_optimizer && mc.par.overlap_grad_reduce);
    ck_assert_ptr_nonnull(strstr(mc.unmodelled, "--moe-grouped-gemm"));
    /* --moe-router-load-balancing-type aux_loss, --moe-aux-loss-coeff 1e-2: modelled. */
    ck_assert_ptr_null(strstr(mc.unmodelled, "--moe-aux-loss-coeff"));
    ck_assert_int_eq(spsim_model_get_shape(mc.model)->load_balancing, SPSIM_BALANCE_AUX_LOSS);
    /* As written, one node: tp·cp·dp = 2 ranks of a stage cannot hold ep 8 (parallel_state.py
     * refuses it too); four nodes (32 GPUs, dp 8) evaluate. */
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(mc.model, hw, &mc.par, NULL, &err), SPSIM_ECONFIG);
    spsim_model_destroy(mc.model);
    memcpy(strstr(text, "--nnodes 1"), "--nnodes 4", 10);
    parse_ok(text, "mixtral.sh", &mc);
    ck_assert_uint_eq(mc.par.dp, 8);
    struct spsim_result r;
    ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s", err.message);
    spsim_model_destroy(mc.model);
    spsim_hardware_destroy(hw);
    free(text);
}
END_TEST

/* examples/rl/model_configs/qwen3_30b_a3b_moe.sh: Qwen3-30B-A3B, 48 layers of 128 experts of
 * 768, top 8, QK-norm (2·d per layer), vocabulary 151936 untied. */
START_TEST(qwen3_example)
{
    char *text = fixture("qwen3_30b_a3b_flags.sh", "");
    struct spsim_megatron_config mc;
    parse_ok(text, "qwen3.sh", &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->experts == 128 && s->experts_per_token == 8 && s->expert_ffn_hidden == 768);
    ck_assert(s->kv_heads == 4 && s->head_dim == 128 && s->qk_norm && s->moe_layer_freq == 1);
    uint64_t h = 2048, att = h * (32 * 128 + 2 * 4 * 128) + 32 * 128 * h + 2 * 128;
    uint64_t rest = att + 2 * h + h * 128, expert = 3 * h * 768;
    uint64_t total = 48 * (rest + 128 * expert) + 2 * 151936 * h + h;
    uint64_t active = 48 * (rest + 8 * expert) + 2 * 151936 * h + h;
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), total);
    ck_assert_uint_eq(spsim_model_active_parameters(mc.model, 1), active);
    /* 30.5B total, 3.3B activated (Qwen3 technical report arXiv:2505.09388, Table 2). */
    assert_published(total, 30.5e9, 0.1e9);
    assert_published(active, 3.3e9, 0.2e9);
    /* The shipped profile has the same shape. */
    struct spsim_model *shipped = testutil_model_named("qwen3-30b-a3b");
    ck_assert_uint_eq(spsim_model_parameters(shipped, 4), spsim_model_parameters(mc.model, 4));
    spsim_model_destroy(shipped);
    ck_assert(mc.par.tp == 4 && mc.par.ep == 2 && mc.par.etp == 0 && mc.par.seq == 8192);
    ck_assert(mc.par.moe_dispatcher == SPSIM_MOE_ALLTOALL && mc.par.gbs == 256);
    ck_assert_ptr_null(strstr(mc.unmodelled, "--moe-router-load-balancing-type"));
    spsim_model_destroy(mc.model);
    free(text);
}
END_TEST

/* DeepSeek's MLA attention by hand (multi_latent_attention.py; DeepSeek-V2 arXiv:2405.04434
 * §2.1): Q down h·r_q and its norm r_q, then up r_q·n·(d_qk + d_r) (or, r_q = 0, h·n·(d_qk +
 * d_r) directly); KV down h·(r_kv + d_r), norm r_kv, up r_kv·n·(d_qk + d_v); output n·d_v·h. */
static uint64_t
mla(uint64_t h, uint64_t n, uint64_t rq, uint64_t rkv)
{
    uint64_t q = rq ? h * rq + rq + rq * n * 192 : h * n * 192;
    return q + h * (rkv + 64) + rkv + rkv * n * 256 + n * 128 * h;
}

/* examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh: its tokenizer is a file spsim does not
 * read; with DeepSeek's 129280 tokens (config.json) it is DeepSeek-V3: 3 dense layers (FFN
 * 18432) and 58 MoE layers of 256 experts of 2048 plus one shared, the MTP layer (one more MoE
 * layer, enorm, hnorm, its final norm and eh_proj 2h·h). Its padding, 3232 · tp, keeps 129280
 * = 3232 · 40 at tp 1, 2, 4 and 5; at tp 3 it is 14 · 9696 = 135744 (128 · 3 would give
 * 337 · 384 = 129408). */
START_TEST(deepseek_v3_example)
{
    char *text = fixture("deepseek_v3_flags.sh", "");
    assert_refused(text, SPSIM_EFIELD,
                   "launch.sh: --vocab-size: missing: spsim reads no tokenizer file, so give the "
                   "vocabulary's size (--vocab-size N)");
    free(text);
    /* Its padding, 3232 · tp 1, is the tokenizer's 129280 tokens = 40 · 3232 (build_tokenizer.py
     * vocab_size_with_padding). */
    text = fixture("deepseek_v3_flags.sh", "\n--vocab-size 129280\n");
    struct spsim_megatron_config mc;
    parse_ok(text, "deepseek.sh", &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_uint_eq(s->vocab_divisible_by, 3232);
    ck_assert_uint_eq(spsim_model_padded_vocab(mc.model, 1), 129280);
    ck_assert_uint_eq(spsim_model_padded_vocab(mc.model, 3), 135744);
    ck_assert_uint_eq(spsim_model_padded_vocab(mc.model, 2), 2 * 3232 * 20);
    ck_assert(s->q_lora_rank == 1536 && s->kv_lora_rank == 512 && s->qk_head_dim == 128);
    ck_assert(s->qk_pos_emb_head_dim == 64 && s->v_head_dim == 128 && s->head_dim == 192);
    ck_assert(s->kv_heads == 128 && s->mtp_layers == 1 && s->router_score == SPSIM_ROUTER_SIGMOID);
    ck_assert(s->experts == 256 && s->experts_per_token == 8 && s->expert_ffn_hidden == 2048);
    ck_assert_uint_eq(s->shared_expert_ffn_hidden, 2048);
    for (uint32_t i = 0; i < 61; i++) /* --moe-layer-freq [0]*3+[1]*58 */
        ck_assert(spsim_model_layer_is_moe(mc.model, i) == (i >= 3));
    uint64_t h = 7168, att = mla(h, 128, 1536, 512), expert = 3 * h * 2048;
    uint64_t dense = att + 2 * h + 3 * h * 18432, moe = att + 2 * h + h * 256 + expert;
    uint64_t main_model = 3 * dense + 58 * (moe + 256 * expert) + 2 * 129280 * h + h;
    /* 671B total (DeepSeek-V3 technical report arXiv:2412.19437, abstract), without MTP. */
    assert_published(main_model, 671e9, 1e9);
    uint64_t mtp = moe + 256 * expert + 3 * h + 2 * h * h;
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), main_model + mtp);
    struct spsim_model *shipped = testutil_model_named("deepseek-v3");
    ck_assert_uint_eq(spsim_model_parameters(shipped, 1), main_model + mtp);
    spsim_model_destroy(shipped);
    ck_assert(mc.par.tp == 1 && mc.par.ep == 8 && mc.par.etp == 1 && mc.par.mbs == 4);
    ck_assert(mc.par.moe_dispatcher == SPSIM_MOE_FLEX && mc.par.zero == 3 && mc.par.gbs == 2048);
    /* Megatron's MLA reads no --kv-channels: listed, as the flags spsim does not model are. */
    ck_assert_ptr_nonnull(strstr(mc.unmodelled, "--kv-channels"));
    /* Node-limited routing and the HybridEP backend are read, not listed. */
    ck_assert(s->router_num_groups == 8 && s->router_group_topk == 4);
    ck_assert(mc.par.moe_flex_backend == SPSIM_FLEX_HYBRIDEP);
    ck_assert_ptr_null(strstr(mc.unmodelled, "--moe-router-group-topk"));
    ck_assert_ptr_null(strstr(mc.unmodelled, "--moe-flex-dispatcher-backend"));
    spsim_model_destroy(mc.model);
    free(text);
}
END_TEST

/* examples/post_training/modelopt/conf/moonshotai/Kimi-K2-Instruct.sh (kimi_k2_flags.sh): Kimi
 * K2 is DeepSeek-V3's layer with 64 heads, 384 experts and one dense layer, no MTP layer and no
 * group-limited routing. Its --padded-vocab-size 163840 is not read (listed), so the tokenizer's
 * 163840 tokens are given (Megatron-Bridge tests/unit_tests/recipes/kimi/test_kimi_k2.py at
 * 8f341b04f, vocab_size = 163840; --make-vocab-size-divisible-by 1 keeps it). By hand: MLA
 * 101,124,096 a layer (Q 7168·1536 + 1536 + 1536·64·192, KV 7168·576 + 512 + 512·64·256,
 * output 64·128·7168) and its two norms; the dense MLP 3·7168·18432; an MoE layer's router
 * 384·7168, one shared and 384 routed experts of 3·7168·2048; both embeddings 163840·7168 and
 * the final norm: 1,026,408,209,408. MoonshotAI/Kimi-K2 README.md at c6157be: "1T" total,
 * "32B" activated; the tokens' path (8 routed experts) is 32,861,477,888 with the input embedding
 * and 31,687,072,768 without its lookup table, the README's 32B. */
START_TEST(kimi_k2_example)
{
    char *text = fixture("kimi_k2_flags.sh", "\n--vocab-size 163840\n");
    struct spsim_megatron_config mc;
    parse_ok(text, "kimi.sh", &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->q_lora_rank == 1536 && s->kv_lora_rank == 512 && s->head_dim == 192);
    ck_assert(s->heads == 64 && s->kv_heads == 64 && s->mtp_layers == 0);
    ck_assert(s->experts == 384 && s->experts_per_token == 8 && s->expert_ffn_hidden == 2048);
    ck_assert(s->shared_expert_ffn_hidden == 2048 && s->router_score == SPSIM_ROUTER_SIGMOID);
    ck_assert(s->router_num_groups <= 1);
    for (uint32_t i = 0; i < 61; i++) /* --moe-layer-freq [0]*1+[1]*60 */
        ck_assert(spsim_model_layer_is_moe(mc.model, i) == (i >= 1));
    ck_assert_uint_eq(spsim_model_padded_vocab(mc.model, 1), 163840);
    uint64_t h = 7168, att = mla(h, 64, 1536, 512), expert = 3 * h * 2048;
    ck_assert_uint_eq(att, 101124096);
    uint64_t dense = att + 2 * h + 3 * h * 18432, moe = att + 2 * h + h * 384 + expert;
    uint64_t emb = 163840 * h, total = dense + 60 * (moe + 384 * expert) + 2 * emb + h;
    ck_assert_uint_eq(total, 1026408209408ULL);
    assert_published(total, 1e12, 1e12);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), total);
    uint64_t active = dense + 60 * (moe + 8 * expert) + 2 * emb + h;
    ck_assert_uint_eq(spsim_model_active_parameters(mc.model, 1), active);
    assert_published(active - emb, 32e9, 1e9);
    struct spsim_model *shipped = testutil_model_named("kimi-k2");
    ck_assert_uint_eq(spsim_model_parameters(shipped, 1), total);
    ck_assert_uint_eq(spsim_model_active_parameters(shipped, 1), active);
    spsim_model_destroy(shipped);
    ck_assert_ptr_nonnull(strstr(mc.unmodelled, "--padded-vocab-size"));
    spsim_model_destroy(mc.model);
    free(text);
}
END_TEST

/* examples/post_training/modelopt/conf/deepseek-ai/DeepSeek-V2-Lite.sh: no --q-lora-rank (the
 * command line's default None: Q projected directly), "([0]+[1]*26)", 64 experts of 1408, top
 * 6, shared 2816; vocabulary 102400 (config.json; its padding 3200 = 102400/32 replaced). */
START_TEST(deepseek_v2_lite_example)
{
    char *text = fixture("deepseek_v2_lite_flags.sh", "\n--make-vocab-size-divisible-by 128\n"
                                                      "--vocab-size 102400\n");
    struct spsim_megatron_config mc;
    parse_ok(text, "v2lite.sh", &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->q_lora_rank == 0 && s->kv_lora_rank == 512 && s->head_dim == 192);
    ck_assert(s->experts == 64 && s->experts_per_token == 6 && s->expert_ffn_hidden == 1408);
    ck_assert(s->shared_expert_ffn_hidden == 2816 && s->mtp_layers == 0);
    for (uint32_t i = 0; i < 27; i++)
        ck_assert(spsim_model_layer_is_moe(mc.model, i) == (i >= 1));
    uint64_t h = 2048, att = mla(h, 16, 0, 512), expert = 3 * h * 1408;
    uint64_t dense = att + 2 * h + 3 * h * 10944;
    uint64_t moe = att + 2 * h + h * 64 + 3 * h * 2816 + 64 * expert;
    uint64_t total = dense + 26 * moe + 2 * 102400 * h + h;
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), total);
    /* 15.7B total (DeepSeek-V2 report arXiv:2405.04434, Appendix B: DeepSeek-V2-Lite). */
    assert_published(total, 15.7e9, 0.1e9);
    ck_assert(mc.par.ep == 1 && mc.par.moe_dispatcher == SPSIM_MOE_ALLTOALL);
    spsim_model_destroy(mc.model);
    free(text);
}
END_TEST

/* A Megatron-Bridge recipe: TransformerConfig's MoE and MLA fields, a moe_layer_freq list, and
 * MLATransformerConfig's defaults where a key is absent (q_lora_rank and kv_lora_rank 512, not
 * the command line's None and 32); q_lora_rank: null is None. */
START_TEST(bridge_recipe)
{
    static const char head[] =
        "model:\n  num_layers: 4\n  hidden_size: 256\n  num_attention_heads: 8\n"
        "  ffn_hidden_size: 1024\n  seq_length: 512\n  vocab_size: 1000\n"
        "  normalization: RMSNorm\n  gated_linear_unit: true\n  add_bias_linear: false\n"
        "  bf16: true\n  num_moe_experts: 8\n  moe_router_topk: 2\n  moe_ffn_hidden_size: 128\n"
        "  moe_shared_expert_intermediate_size: 256\n  moe_router_score_function: sigmoid\n"
        "  moe_expert_capacity_factor: null\n  moe_token_dispatcher_type: alltoall\n"
        "  expert_model_parallel_size: 4\n  expert_tensor_parallel_size: 1\n"
        "  multi_latent_attention: true\n  qk_head_dim: 32\n  qk_pos_emb_head_dim: 16\n"
        "  v_head_dim: 32\n  mtp_num_layers: 1\n";
    char yaml[2048];
    snprintf(yaml, sizeof(yaml),
             "%s  moe_layer_freq: [0, 1, 1, 1]\n  q_lora_rank: null\n"
             "  kv_lora_rank: 64\ntrain:\n  global_batch_size: 8\n",
             head);
    struct spsim_megatron_config mc;
    parse_ok(yaml, "bridge.yaml", &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->experts == 8 && s->experts_per_token == 2 && s->expert_ffn_hidden == 128);
    ck_assert(s->shared_expert_ffn_hidden == 256 && s->router_score == SPSIM_ROUTER_SIGMOID);
    ck_assert(s->capacity_factor == 0 && s->mtp_layers == 1 && s->head_dim == 48);
    ck_assert(s->q_lora_rank == 0 && s->kv_lora_rank == 64 && s->v_head_dim == 32);
    for (uint32_t i = 0; i < 4; i++)
        ck_assert(spsim_model_layer_is_moe(mc.model, i) == (i >= 1));
    ck_assert(mc.par.ep == 4 && mc.par.etp == 1 && mc.par.moe_dispatcher == SPSIM_MOE_ALLTOALL);
    ck_assert_str_eq(mc.unmodelled, "");
    spsim_model_destroy(mc.model);
    snprintf(yaml, sizeof(yaml), "%s  moe_layer_freq: \"[0]+[1]*3\"\n", head);
    parse_ok(yaml, "bridge.yaml", &mc);
    s = spsim_model_get_shape(mc.model);
    ck_assert(s->q_lora_rank == 512 && s->kv_lora_rank == 512);
    ck_assert(!spsim_model_layer_is_moe(mc.model, 0) && spsim_model_layer_is_moe(mc.model, 3));
    spsim_model_destroy(mc.model);
    /* A list is read whole (one of 17 entries was once listed, and refused): one entry per
     * layer. */
    snprintf(yaml, sizeof(yaml),
             "%s  moe_layer_freq: [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n", head);
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_megatron_parse(yaml, strlen(yaml), "long.yaml", &mc, &err),
                     SPSIM_EFIELD);
    ck_assert_str_eq(err.message, "long.yaml:26: model.moe_layer_freq: "
                                  "'[0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]': longer than the "
                                  "model's layers");
}
END_TEST

/* Sliding windows (arguments.py --window-size tuple_type, --window-attn-skip-freq): "127,0" and
 * "(127,0)" attend to 127 + 0 + 1 = 128 positions (Megatron-Bridge's effective window; GPT-OSS's
 * bridge sets (sliding_window − 1, 0)); L = −1 is unbounded, no window. The shipped GPT-OSS
 * profile goes out and back through the launch line with its window. */
START_TEST(window_flags)
{
    static const char *const forms[] = {" --window-size 127,0 --window-attn-skip-freq 2",
                                        " --window-size \"(127,0)\" --window-attn-skip-freq 2"};
    for (size_t i = 0; i < 2; i++) {
        char *text = fixture("qwen3_30b_a3b_flags.sh", forms[i]);
        struct spsim_megatron_config mc;
        parse_ok(text, "qwen3.sh", &mc);
        const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
        ck_assert_uint_eq(s->window, 128);
        ck_assert_uint_eq(s->window_skip_freq, 2);
        ck_assert_ptr_null(strstr(mc.unmodelled, "--window-size"));
        spsim_model_destroy(mc.model);
        free(text);
    }
    char *text = fixture("qwen3_30b_a3b_flags.sh", " --window-size -1,0");
    struct spsim_megatron_config mc;
    parse_ok(text, "qwen3.sh", &mc);
    ck_assert_uint_eq(spsim_model_get_shape(mc.model)->window, 0);
    spsim_model_destroy(mc.model);
    free(text);
    text = fixture("qwen3_30b_a3b_flags.sh", " --window-size 128");
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_megatron_parse(text, strlen(text), "w.sh", &mc, &err), SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "--window-size"));
    free(text);
    struct spsim_model *oss = testutil_model_named("gpt-oss-120b");
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 1;
    p.sp = false;
    p.ep = 8;
    p.dp = 8;
    p.gbs = 64;
    char line[8192];
    ck_assert_uint_lt(spsim_megatron_format(oss, &p, 8, line, sizeof(line)), sizeof(line));
    ck_assert_ptr_nonnull(strstr(line, "--window-size 127,0"));
    ck_assert_ptr_nonnull(strstr(line, "--softmax-type learnable"));
    parse_ok(line, "oss.sh", &mc);
    ck_assert_uint_eq(spsim_model_get_shape(mc.model)->window, 128);
    ck_assert_uint_eq(spsim_model_get_shape(mc.model)->window_skip_freq, 2);
    ck_assert_int_eq(spsim_model_get_shape(mc.model)->softmax_type, SPSIM_SOFTMAX_LEARNABLE);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), spsim_model_parameters(oss, 1));
    spsim_model_destroy(mc.model);
    spsim_model_destroy(oss);
}
END_TEST

/* --softmax-type (arguments.py choices vanilla, off-by-one, learnable; TE's softmax_offset):
 * learnable adds a Parameter of one logit per head in each layer (Qwen3-30B-A3B's 32 heads ×
 * 48 layers = 1536), off-by-one a zero buffer (no parameter); --quick-geglu is the gated
 * layer's two fc1 halves, as --swiglu (mlp.py:287 at d98e8a64), and refused beside it. */
START_TEST(softmax_type_flags)
{
    struct spsim_megatron_config mc;
    char *text = fixture("qwen3_30b_a3b_flags.sh", "");
    parse_ok(text, "qwen3.sh", &mc);
    uint64_t vanilla = spsim_model_parameters(mc.model, 1);
    ck_assert_int_eq(spsim_model_get_shape(mc.model)->softmax_type, SPSIM_SOFTMAX_VANILLA);
    spsim_model_destroy(mc.model);
    free(text);
    static const struct {
        const char *flag;
        enum spsim_softmax type;
        uint64_t extra;
    } cases[] = {{" --softmax-type off-by-one", SPSIM_SOFTMAX_OFF_BY_ONE, 0},
                 {" --softmax-type learnable", SPSIM_SOFTMAX_LEARNABLE, 32 * 48}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        text = fixture("qwen3_30b_a3b_flags.sh", cases[i].flag);
        parse_ok(text, "qwen3.sh", &mc);
        ck_assert_int_eq(spsim_model_get_shape(mc.model)->softmax_type, cases[i].type);
        ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), vanilla + cases[i].extra);
        ck_assert_ptr_null(strstr(mc.unmodelled, "--softmax-type"));
        spsim_model_destroy(mc.model);
        free(text);
    }
    struct spsim_error err = {0};
    text = fixture("qwen3_30b_a3b_flags.sh", " --softmax-type sink");
    ck_assert_int_eq(spsim_megatron_parse(text, strlen(text), "q.sh", &mc, &err), SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "--softmax-type"));
    free(text);
    text = fixture("qwen3_30b_a3b_flags.sh", " --quick-geglu");
    ck_assert_int_eq(spsim_megatron_parse(text, strlen(text), "q.sh", &mc, &err), SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "--quick-geglu"));
    free(text);
}
END_TEST

/* The router's auxiliary terms (arguments.py _add_moe_args): DeepSeek-V3's launch line
 * (seq_aux_loss, coefficient 1e-4, expert bias), Qwen3's (aux_loss 0.001); a coefficient of 0
 * turns the loss off, --moe-z-loss-coeff above 0 turns the z-loss on; the exporter writes them
 * back. */
START_TEST(router_loss_flags)
{
    struct spsim_megatron_config mc;
    char *text = fixture("deepseek_v3_flags.sh", "\n--make-vocab-size-divisible-by 128\n"
                                                 "--vocab-size 129280\n");
    parse_ok(text, "deepseek.sh", &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_int_eq(s->load_balancing, SPSIM_BALANCE_SEQ_AUX_LOSS);
    ck_assert(s->expert_bias && !s->z_loss);
    ck_assert_ptr_null(strstr(mc.unmodelled, "--moe-aux-loss-coeff"));
    char line[8192];
    ck_assert_uint_lt(spsim_megatron_format(mc.model, &mc.par, 8, line, sizeof(line)),
                      sizeof(line));
    spsim_model_destroy(mc.model);
    free(text);
    parse_ok(line, "export.sh", &mc);
    s = spsim_model_get_shape(mc.model);
    ck_assert_int_eq(s->load_balancing, SPSIM_BALANCE_SEQ_AUX_LOSS);
    ck_assert(s->expert_bias && !s->z_loss);
    spsim_model_destroy(mc.model);
    static const char *const extra[] = {"", " --moe-aux-loss-coeff 0 --moe-z-loss-coeff 1e-3"};
    for (int i = 0; i < 2; i++) {
        text = fixture("qwen3_30b_a3b_flags.sh", extra[i]);
        parse_ok(text, "qwen3.sh", &mc);
        s = spsim_model_get_shape(mc.model);
        ck_assert_int_eq(s->load_balancing, i ? SPSIM_BALANCE_NONE : SPSIM_BALANCE_AUX_LOSS);
        ck_assert(s->z_loss == (i == 1) && !s->expert_bias);
        spsim_model_destroy(mc.model);
        free(text);
    }
    /* Megatron-Bridge's TransformerConfig keys (a recipe's model: section); z-loss null is
     * None, off. */
    static const char yaml[] =
        "model:\n  num_layers: 4\n  hidden_size: 256\n  num_attention_heads: 8\n"
        "  ffn_hidden_size: 1024\n  seq_length: 512\n  vocab_size: 1000\n"
        "  bf16: true\n  num_moe_experts: 8\n  moe_router_topk: 2\n"
        "  moe_router_load_balancing_type: seq_aux_loss\n  moe_aux_loss_coeff: 0.0001\n"
        "  moe_z_loss_coeff: null\n  moe_router_enable_expert_bias: true\n"
        "train:\n  global_batch_size: 8\n";
    parse_ok(yaml, "bridge.yaml", &mc);
    s = spsim_model_get_shape(mc.model);
    ck_assert_int_eq(s->load_balancing, SPSIM_BALANCE_SEQ_AUX_LOSS);
    ck_assert(s->expert_bias && !s->z_loss);
    spsim_model_destroy(mc.model);
    text = fixture("qwen3_30b_a3b_flags.sh", " --moe-router-load-balancing-type global_aux_loss");
    parse_ok(text, "q.sh", &mc);
    ck_assert_int_eq(spsim_model_get_shape(mc.model)->load_balancing,
                     SPSIM_BALANCE_GLOBAL_AUX_LOSS);
    spsim_model_destroy(mc.model);
    free(text);
    /* Sinkhorn routes without a loss: the example's --moe-aux-loss-coeff 1e-3 is Megatron's
     * assertion (router.py). */
    text = fixture("qwen3_30b_a3b_flags.sh", " --moe-router-load-balancing-type sinkhorn");
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_megatron_parse(text, strlen(text), "q.sh", &mc, &err), SPSIM_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "Sinkhorn routing does not support aux loss"));
    free(text);
}
END_TEST

/* A Mamba-2 layer (Megatron-LM d98e8a6 ssm/mamba_mixer.py): the input norm h, in_proj
 * h·(2d + 2GN + H) with d = H·P, conv1d (d + 2GN)·(4 taps + bias), dt_bias, A_log and D per
 * head, the gated norm d, out_proj d·h. */
static uint64_t
mamba_layer(uint64_t h, uint64_t H, uint64_t P, uint64_t N, uint64_t G)
{
    uint64_t d = H * P;
    return h + h * (2 * d + 2 * G * N + H) + (d + 2 * G * N) * 5 + 3 * H + d + d * h;
}

/*
 * Megatron-LM's Nemotron-H and Nemotron 3 conf files (examples/post_training/modelopt/conf/
 * nvidia/ at d98e8a64, verbatim: their MODEL_ARGS, launched here by pretrain_hybrid.py with the
 * Nemotron tokenizer's 131072 tokens, which HuggingFaceTokenizer would read from the checkpoint).
 * Nemotron-H 8B by hand: 24 Mamba layers of 4096 (128 heads of 64, state 128, 8 groups: the
 * defaults), 4 attention layers (32 heads, 8 KV of 128), 24 squared-ReLU MLPs of 21504, both
 * embeddings and the final norm: 8,100,852,736 (the shipped nemotron-h-8b's; its RoPE on half
 * the channels has no weight). 56B, Nemotron 3 Nano and Ultra: the shipped profiles' counts
 * (test_hybrid.c works them by hand). Super: the shipped profile less its MTP depth, which the
 * script does not train (enorm, hnorm, final norm 3h, eh_proj 2h·h, an attention layer
 * h + h·(32·128 + 2·2·128) + 32·128·h and a latent MoE layer h + h·512 + 512·2·1024·2688 +
 * 2·h·5376 + 2·h·1024).
 */
START_TEST(nemotron_conf_examples)
{
    uint64_t h = 4096, V = 131072;
    uint64_t h8 = 24 * mamba_layer(h, 128, 64, 128, 8) +
                  4 * (h + h * (32 * 128 + 2 * 8 * 128) + 32 * 128 * h) + 24 * (h + 2 * h * 21504) +
                  2 * V * h + h;
    ck_assert_uint_eq(h8, 8100852736ull);
    uint64_t att = h + h * (32 * 128 + 2 * 2 * 128) + 32 * 128 * h;
    uint64_t moe = h + h * 512 + 512ull * 2 * 1024 * 2688 + 2 * h * 5376 + 2 * h * 1024;
    uint64_t mtp = 3 * h + 2 * h * h + att + moe;
    const struct {
        const char *file, *shipped;
        uint64_t total, less;
        enum spsim_position position;
    } cases[] = {
        {"Nemotron-H-8B-Base-8K.sh", "nemotron-h-8b", h8, 0, SPSIM_POSITION_ROPE},
        {"Nemotron-H-56B-Base-8K.sh", "nemotron-h-56b", 0, 0, SPSIM_POSITION_NONE},
        {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.sh", "nemotron-3-nano", 0, 0, SPSIM_POSITION_NONE},
        {"NVIDIA-Nemotron-3-Super-120B-A12B-BF16.sh", "nemotron-3-super", 0, mtp,
         SPSIM_POSITION_NONE},
        {"NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.sh", "nemotron-3-ultra", 0, 0,
         SPSIM_POSITION_NONE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = fixture(cases[i].file, "\ntorchrun pretrain_hybrid.py --vocab-size 131072 "
                                            "$MODEL_ARGS\n");
        struct spsim_megatron_config mc;
        parse_ok(text, cases[i].file, &mc);
        struct spsim_model *ship = testutil_model_named(cases[i].shipped);
        const struct spsim_model_shape *a = spsim_model_get_shape(mc.model),
                                       *b = spsim_model_get_shape(ship);
        uint64_t want =
            cases[i].total ? cases[i].total : spsim_model_parameters(ship, 1) - cases[i].less;
        ck_assert_msg(spsim_model_parameters(mc.model, 1) == want, "%s: %llu, want %llu",
                      cases[i].file, (unsigned long long)spsim_model_parameters(mc.model, 1),
                      (unsigned long long)want);
        ck_assert_str_eq(a->hybrid_pattern, b->hybrid_pattern);
        ck_assert(a->mlp == SPSIM_MLP_RELU2 && a->position == cases[i].position);
        ck_assert(a->mamba_heads == b->mamba_heads && a->mamba_head_dim == b->mamba_head_dim &&
                  a->mamba_state_dim == b->mamba_state_dim && a->mamba_groups == b->mamba_groups);
        ck_assert(a->experts == b->experts && a->moe_latent == b->moe_latent &&
                  a->expert_ffn_hidden == b->expert_ffn_hidden &&
                  a->shared_expert_ffn_hidden == b->shared_expert_ffn_hidden &&
                  a->load_balancing == b->load_balancing && a->expert_bias == b->expert_bias);
        ck_assert(!a->mtp_layers);
        spsim_model_destroy(ship);
        spsim_model_destroy(mc.model);
        free(text);
    }
}
END_TEST

/* Each of `n` launch lines, `base` and a refusal's flags, refused with its message. */
struct refusal {
    const char *flags, *message;
};

static void
expect_refused(const char *base, const struct refusal *refused, size_t n)
{
    char text[1024];
    struct spsim_megatron_config mc;
    for (size_t i = 0; i < n; i++) {
        snprintf(text, sizeof(text), "%s%s", base, refused[i].flags);
        struct spsim_error err = {0};
        ck_assert_int_ne(spsim_megatron_parse(text, strlen(text), "h.sh", &mc, &err), SPSIM_OK);
        ck_assert_msg(strstr(err.message, refused[i].message), "%zu: %s", i, err.message);
    }
}

/* The pattern's MTP depths ('/', all identical; or the legacy --mtp-hybrid-override-pattern
 * with --mtp-num-layers), what it refuses, and --experimental-attention-variant: gdn on a GPT
 * model makes its layers Gated DeltaNet where --linear-attention-freq says (every 4th SDPA),
 * each layer its mixer then its MLP; gdn2 and dsa are refused naming them. */
START_TEST(hybrid_flags)
{
    static const char base[] =
        "torchrun pretrain_hybrid.py --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 256 --bf16 --squared-relu --position-embedding-type none --normalization "
        "RMSNorm "
        "--disable-bias-linear --untie-embeddings-and-output-weights --mamba-num-heads 4 "
        "--mamba-head-dim 32 --mamba-state-dim 16 --mamba-num-groups 2 --ffn-hidden-size 128 ";
    char text[1024];
    struct spsim_megatron_config mc;
    snprintf(text, sizeof(text), "%s--hybrid-layer-pattern 'M*-/*-/*-' --mtp-use-repeated-layer",
             base);
    parse_ok(text, "h.sh", &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_str_eq(s->hybrid_pattern, "M*-");
    ck_assert(s->mtp_layers == 2 && s->mtp_shared && strcmp(s->mtp_pattern, "*-") == 0);
    uint64_t h = 64, att = h + h * (4 * 16 + 2 * 4 * 16) + 4 * 16 * h, mlp = h + 2 * h * 128;
    uint64_t total = mamba_layer(h, 4, 32, 16, 2) + att + mlp + 2 * 256 * h + h +
                     (3 * h + 2 * h * h + att + mlp); /* one shared MTP depth */
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), total);
    spsim_model_destroy(mc.model);
    snprintf(text, sizeof(text),
             "%s--hybrid-override-pattern M*- --mtp-hybrid-override-pattern '*-' "
             "--mtp-num-layers 3",
             base);
    parse_ok(text, "h.sh", &mc);
    s = spsim_model_get_shape(mc.model);
    ck_assert(s->mtp_layers == 3 && !s->mtp_shared && strcmp(s->mtp_pattern, "*-") == 0);
    spsim_model_destroy(mc.model);
    static const struct refusal refused[] = {
        {"--hybrid-layer-pattern 'M*-/*|-'", "offset 1: a pipe ('|') in an MTP pattern"},
        {"--hybrid-layer-pattern 'MD-'", "'D' (DeepSeek sparse attention) is not modelled"},
        {"--hybrid-layer-pattern 'M*-/*-/*E'", "the MTP patterns after '/' must be identical"},
        {"--hybrid-layer-pattern M*- --mtp-num-layers 1", "need their pattern"},
        {"--hybrid-layer-pattern M*- --hybrid-override-pattern M*-", "cannot both be specified"},
        {"--num-layers 3", "--hybrid-layer-pattern: missing: pretrain_hybrid.py builds"},
        {"--hybrid-layer-pattern M*G --experimental-attention-variant gdn2",
         "'gdn2': Gated DeltaNet-2 (channel-wise decay, erase and write gates) is not modelled"},
        {"--hybrid-layer-pattern M*- --experimental-attention-variant dsa",
         "'dsa': DeepSeek sparse attention is not modelled"},
    };
    expect_refused(base, refused, sizeof(refused) / sizeof(refused[0]));
    /* A GPT model with Gated DeltaNet layers: 8 layers, every 4th SDPA, dense. */
    static const char gpt[] =
        "torchrun pretrain_gpt.py --num-layers 8 --hidden-size 64 --num-attention-heads 4 "
        "--seq-length 128 --vocab-size 256 --bf16 --swiglu --normalization RMSNorm "
        "--disable-bias-linear "
        "--untie-embeddings-and-output-weights --experimental-attention-variant gated_delta_net "
        "--linear-attention-freq 4 --linear-num-key-heads 2 --linear-num-value-heads 4 "
        "--linear-key-head-dim 16 --linear-value-head-dim 16";
    parse_ok(gpt, "g.sh", &mc);
    s = spsim_model_get_shape(mc.model);
    ck_assert_str_eq(s->hybrid_pattern, "G-G-G-*-G-G-G-*-");
    ck_assert(s->gdn_key_heads == 2 && s->gdn_value_heads == 4 && s->gdn_conv == 4);
    spsim_model_destroy(mc.model);
}
END_TEST

/* Pipeline segments ('|') in the pattern (arguments.py, hybrid_layer_allocation.py
 * select_pipeline_segment at d98e8a64): segment vp·pp + rank on rank `rank` at virtual stage vp,
 * the order of a --pipeline-model-parallel-layout's stages, so 'M*|-M|*-|M-' over pp 2 is the
 * layout E + tt | tt | tt | tt + L (embedding first, loss last) with vpp = 4 / 2 = 2; an MTP depth
 * goes before the loss; the segments' count a multiple of pp, and the flags arguments.py asserts
 * against beside them refused naming the flag. */
START_TEST(hybrid_segments)
{
    static const char base[] =
        "torchrun pretrain_hybrid.py --hidden-size 64 --num-attention-heads 4 --seq-length 128 "
        "--vocab-size 256 --bf16 --position-embedding-type none --mamba-num-heads 4 "
        "--mamba-head-dim 32 --mamba-state-dim 16 --mamba-num-groups 2 --ffn-hidden-size 128 "
        "--pipeline-model-parallel-size 2 ";
    char text[1024];
    struct spsim_megatron_config mc;
    snprintf(text, sizeof(text), "%s--hybrid-layer-pattern 'M*|-M|*-|M-'", base);
    parse_ok(text, "h.sh", &mc);
    ck_assert_str_eq(spsim_model_get_shape(mc.model)->hybrid_pattern, "M*-M*-M-");
    ck_assert_str_eq(mc.par.pipeline_layout, "Ett|tt|tt|ttL");
    ck_assert(mc.par.pipeline_layout == mc.pipeline_layout && mc.par.vpp == 2 && mc.par.pp == 2);
    spsim_model_destroy(mc.model);
    snprintf(text, sizeof(text), "%s--hybrid-layer-pattern '|M*-M/*-'", base);
    parse_ok(text, "h.sh", &mc);
    ck_assert_str_eq(mc.par.pipeline_layout, "E|ttttmL");
    ck_assert(mc.par.vpp == 1 && spsim_model_get_shape(mc.model)->layers == 4);
    spsim_model_destroy(mc.model);
    static const struct refusal refused[] = {
        {"--hybrid-layer-pattern 'M*|-M|*-'",
         "must be evenly divisible by --pipeline-model-parallel-size. Got 3 segments and 2"},
        {"--hybrid-layer-pattern 'M*|-M' --decoder-first-pipeline-num-layers 1",
         "--decoder-first-pipeline-num-layers: should not be used with --hybrid-layer-pattern"},
        {"--hybrid-layer-pattern 'M*|-M' --num-virtual-stages-per-pipeline-rank 2",
         "--num-virtual-stages-per-pipeline-rank: should not be used"},
        {"--hybrid-layer-pattern 'M*|-M' --pipeline-model-parallel-layout 'Ett|ttL'",
         "defined by the '|' segments"},
    };
    expect_refused(base, refused, sizeof(refused) / sizeof(refused[0]));
}
END_TEST

/* A file of tests/data as one spsim_megatron_input (the caller frees text). */
static struct spsim_megatron_input
data_input(const char *rel)
{
    char *text = fixture(rel, "\n");
    struct spsim_megatron_input in = {text, strlen(text), rel};
    return in;
}

/*
 * Megatron-LM's functional-test case hybrid/hybrid_mr_mcore_te_tp2_pp1_cp1_dgx_a100_1N8G
 * (tests/data/megatron-functional, d98e8a64; its config only): the pattern's 20 Mamba, 4
 * attention and 20 MLP layers of 1024 with Megatron's defaults (LayerNorm, biases, GeLU MLP of
 * 4h, tied embeddings, learned positions), 16 heads in 8 groups of 64, GPT-2's vocabulary padded
 * to 128·tp = 256: 50432. By hand: Mamba 2h + h(2d + 2GN + H) + (d + 2GN)·5 + 3H + d + d·h with
 * H = 2h/64 = 32, d = 2048, GN = 8·128; attention 2h + h·2048 + 2048 + 1024·h + h; MLP 2h + h·4h +
 * 4h + 4h·h + h; embeddings 50432·h and positions 1024·h, the final norm 2h: 402,132,864.
 * Megatron-Bridge's override file examples/recipes/nemotron_3/config/nemotron_3_nano_pretrain.yaml
 * (at baa2a8fb5^) on --model nemotron-3-nano: its pp 2 and batch 32 over the shipped profile,
 * whose hybrid flags the base model's words carry.
 */
START_TEST(hybrid_recipes)
{
    uint64_t h = 1024, H = 32, d = H * 64, GN = 8 * 128;
    uint64_t mamba = 2 * h + h * (2 * d + 2 * GN + H) + (d + 2 * GN) * 5 + 3 * H + d + d * h;
    uint64_t att = 2 * h + h * 2048 + 2048 + 1024 * h + h;
    uint64_t mlp = 2 * h + h * 4 * h + 4 * h + 4 * h * h + h;
    uint64_t total = 20 * mamba + 4 * att + 20 * mlp + 50432 * h + 1024 * h + 2 * h;
    ck_assert_uint_eq(total, 402132864ull);
    struct spsim_megatron_input in =
        data_input("../megatron-functional/hybrid/hybrid_mr_mcore_te_tp2_pp1_cp1_dgx_a100_1N8G/"
                   "model_config.yaml");
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse_inputs(&in, 1, NULL, &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 2), total);
    ck_assert_int_eq(spsim_model_layer_kind(mc.model, 0), SPSIM_LAYER_MAMBA);
    ck_assert_uint_eq(mc.par.tp, 2);
    spsim_model_destroy(mc.model);
    free((char *)in.text);
    /* The same model at pp 2 with its pattern in four pipe segments of 11 layers
     * (hybrid_mr_mcore_te_tp1_pp2_vpp2_cp1_dgx_a100_1N8G, d98e8a64): vpp = 4 / 2 = 2 and the
     * segments as the layout, embedding first and loss last. */
    in = data_input(
        "../megatron-functional/hybrid/hybrid_mr_mcore_te_tp1_pp2_vpp2_cp1_dgx_a100_1N8G/"
        "model_config.yaml");
    ck_assert_msg(spsim_megatron_parse_inputs(&in, 1, NULL, &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert(mc.par.pp == 2 && mc.par.vpp == 2 && mc.par.tp == 1);
    ck_assert_str_eq(mc.par.pipeline_layout, "Ettttttttttt|ttttttttttt|ttttttttttt|tttttttttttL");
    ck_assert_str_eq(spsim_model_get_shape(mc.model)->hybrid_pattern,
                     "M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M*-M-M-M-M-");
    /* at tp 1 the vocabulary pads to 128: 50304 rows instead of 50432 */
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), total - (50432 - 50304) * h);
    spsim_model_destroy(mc.model);
    free((char *)in.text);
    struct spsim_model *nano = testutil_model_named("nemotron-3-nano");
    struct spsim_megatron_context ctx = {.model = nano};
    in = data_input("bridge/nemotron_3_nano_pretrain.yaml");
    ck_assert_msg(spsim_megatron_parse_inputs(&in, 1, &ctx, &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert(mc.par.pp == 2 && mc.par.gbs == 32);
    ck_assert_str_eq(spsim_model_get_shape(mc.model)->hybrid_pattern,
                     spsim_model_get_shape(nano)->hybrid_pattern);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), spsim_model_parameters(nano, 1));
    ck_assert_uint_eq(spsim_model_active_parameters(mc.model, 1),
                      spsim_model_active_parameters(nano, 1));
    spsim_model_destroy(mc.model);
    spsim_model_destroy(nano);
    free((char *)in.text);
}
END_TEST

/* A Bridge dump's hybrid fields (HybridModelProvider: the pattern, the Mamba-2 numbers,
 * mamba_chunk_size, moe_latent_size, squared_relu as activation_func, the attention variant);
 * dsa refused naming it. */
START_TEST(hybrid_bridge_fields)
{
    static char yaml[] =
        "model:\n"
        "  _target_: megatron.bridge.models.hybrid.hybrid_provider.HybridModelProvider\n"
        "  hybrid_layer_pattern: \"M*-E\"\n"
        "  hybrid_override_pattern: null\n"
        "  num_layers: 4\n"
        "  hidden_size: 64\n"
        "  num_attention_heads: 4\n"
        "  num_query_groups: 2\n"
        "  ffn_hidden_size: 128\n"
        "  mamba_num_heads: 4\n"
        "  mamba_head_dim: 32\n"
        "  mamba_state_dim: 16\n"
        "  mamba_num_groups: 2\n"
        "  mamba_chunk_size: 64\n"
        "  num_moe_experts: 4\n"
        "  moe_router_topk: 2\n"
        "  moe_latent_size: 32\n"
        "  experimental_attention_variant: gdn\n"
        "  activation_func:\n"
        "    _target_: megatron.core.activations.squared_relu\n"
        "  position_embedding_type: none\n"
        "  vocab_size: 256\n"
        "  seq_length: 128\n"
        "  bf16: true\n"
        "train:\n"
        "  global_batch_size: 8\n";
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(yaml, strlen(yaml), "h.yaml", &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_str_eq(s->hybrid_pattern, "M*-E");
    ck_assert(s->mlp == SPSIM_MLP_RELU2 && s->moe_latent == 32 && s->mamba_chunk == 64);
    ck_assert(s->mamba_heads == 4 && s->mamba_state_dim == 16 &&
              s->position == SPSIM_POSITION_NONE);
    spsim_model_destroy(mc.model);
    char *v = strstr(yaml, "variant: gdn");
    memcpy(v + 9, "dsa", 3);
    ck_assert_int_eq(spsim_megatron_parse(yaml, strlen(yaml), "h.yaml", &mc, &err), SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "'dsa': DeepSeek sparse attention is not modelled"));
}
END_TEST

static Suite *
megatron_moe_suite(void)
{
    Suite *s = suite_create("megatron_moe");
    TCase *tc = tcase_create("examples");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, mixtral_example);
    tcase_add_test(tc, qwen3_example);
    tcase_add_test(tc, deepseek_v3_example);
    tcase_add_test(tc, deepseek_v2_lite_example);
    tcase_add_test(tc, kimi_k2_example);
    tcase_add_test(tc, nemotron_conf_examples);
    tcase_add_test(tc, hybrid_flags);
    tcase_add_test(tc, hybrid_segments);
    tcase_add_test(tc, hybrid_recipes);
    tcase_add_test(tc, hybrid_bridge_fields);
    tcase_add_test(tc, bridge_recipe);
    tcase_add_test(tc, window_flags);
    tcase_add_test(tc, softmax_type_flags);
    tcase_add_test(tc, router_loss_flags);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(megatron_moe_suite());
}
