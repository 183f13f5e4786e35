/*
 * Hugging Face config.json files as model profiles. Each config is the model's published
 * config.json (Hugging Face Hub, the repository named beside it), copied as it is; the expected
 * parameter counts are the published totals, derived exactly in the comments (the Hub rounds
 * them), and spsim pads the vocabulary as Megatron does (a multiple of 128).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* meta-llama/Meta-Llama-3-8B, config.json */
static const char llama3_8b[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, "
    "\"attention_dropout\": 0.0, \"bos_token_id\": 128000, \"eos_token_id\": 128001, "
    "\"hidden_act\": \"silu\", \"hidden_size\": 4096, \"initializer_range\": 0.02, "
    "\"intermediate_size\": 14336, \"max_position_embeddings\": 8192, \"model_type\": \"llama\", "
    "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
    "\"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": null, "
    "\"rope_theta\": 500000.0, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", "
    "\"transformers_version\": \"4.40.0.dev0\", \"use_cache\": true, \"vocab_size\": 128256}";

/* mistralai/Mistral-7B-v0.3, config.json */
static const char mistral_7b_v03[] =
    "{\"architectures\": [\"MistralForCausalLM\"], \"attention_dropout\": 0.0, "
    "\"bos_token_id\": 1, \"eos_token_id\": 2, \"hidden_act\": \"silu\", \"hidden_size\": 4096, "
    "\"initializer_range\": 0.02, \"intermediate_size\": 14336, "
    "\"max_position_embeddings\": 32768, \"model_type\": \"mistral\", "
    "\"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8, "
    "\"rms_norm_eps\": 1e-05, \"rope_theta\": 1000000.0, \"sliding_window\": null, "
    "\"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", "
    "\"transformers_version\": \"4.42.0.dev0\", \"use_cache\": true, \"vocab_size\": 32768}";

/* Qwen/Qwen2-7B, config.json */
static const char qwen2_7b[] =
    "{\"architectures\": [\"Qwen2ForCausalLM\"], \"attention_dropout\": 0.0, "
    "\"bos_token_id\": 151643, \"eos_token_id\": 151643, \"hidden_act\": \"silu\", "
    "\"hidden_size\": 3584, \"initializer_range\": 0.02, \"intermediate_size\": 18944, "
    "\"max_position_embeddings\": 131072, \"max_window_layers\": 28, \"model_type\": \"qwen2\", "
    "\"num_attention_heads\": 28, \"num_hidden_layers\": 28, \"num_key_value_heads\": 4, "
    "\"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000.0, \"sliding_window\": 131072, "
    "\"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", "
    "\"transformers_version\": \"4.37.2\", \"use_cache\": true, \"use_sliding_window\": false, "
    "\"vocab_size\": 152064}";

/* Qwen/Qwen3-8B, config.json */
static const char qwen3_8b[] =
    "{\"architectures\": [\"Qwen3ForCausalLM\"], \"attention_bias\": false, "
    "\"attention_dropout\": 0.0, \"bos_token_id\": 151643, \"eos_token_id\": 151645, "
    "\"head_dim\": 128, \"hidden_act\": \"silu\", \"hidden_size\": 4096, "
    "\"initializer_range\": 0.02, \"intermediate_size\": 12288, "
    "\"max_position_embeddings\": 40960, \"max_window_layers\": 36, \"model_type\": \"qwen3\", "
    "\"num_attention_heads\": 32, \"num_hidden_layers\": 36, \"num_key_value_heads\": 8, "
    "\"rms_norm_eps\": 1e-06, \"rope_scaling\": null, \"rope_theta\": 1000000, "
    "\"sliding_window\": null, \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", "
    "\"transformers_version\": \"4.51.0\", \"use_cache\": true, \"use_sliding_window\": false, "
    "\"vocab_size\": 151936}";

/* google/gemma-7b, config.json (no tie_word_embeddings: GemmaConfig ties by default) */
static const char gemma_7b[] =
    "{\"architectures\": [\"GemmaForCausalLM\"], \"attention_bias\": false, "
    "\"attention_dropout\": 0.0, \"bos_token_id\": 2, \"eos_token_id\": 1, \"head_dim\": 256, "
    "\"hidden_act\": \"gelu\", \"hidden_size\": 3072, \"initializer_range\": 0.02, "
    "\"intermediate_size\": 24576, \"max_position_embeddings\": 8192, \"model_type\": \"gemma\", "
    "\"num_attention_heads\": 16, \"num_hidden_layers\": 28, \"num_key_value_heads\": 16, "
    "\"pad_token_id\": 0, \"rms_norm_eps\": 1e-06, \"rope_scaling\": null, "
    "\"rope_theta\": 10000.0, \"torch_dtype\": \"bfloat16\", "
    "\"transformers_version\": \"4.38.0.dev0\", \"use_cache\": true, \"vocab_size\": 256000}";

/* openai-community/gpt2, config.json */
static const char gpt2[] =
    "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"], "
    "\"attn_pdrop\": 0.1, \"bos_token_id\": 50256, \"embd_pdrop\": 0.1, \"eos_token_id\": 50256, "
    "\"initializer_range\": 0.02, \"layer_norm_epsilon\": 1e-05, \"model_type\": \"gpt2\", "
    "\"n_ctx\": 1024, \"n_embd\": 768, \"n_head\": 12, \"n_layer\": 12, \"n_positions\": 1024, "
    "\"resid_pdrop\": 0.1, \"summary_activation\": null, \"summary_first_dropout\": 0.1, "
    "\"summary_proj_to_labels\": true, \"summary_type\": \"cls_index\", "
    "\"summary_use_proj\": true, \"task_specific_params\": {\"text-generation\": "
    "{\"do_sample\": true, \"max_length\": 50}}, \"vocab_size\": 50257}";

/* EleutherAI/pythia-160m, config.json, with its two layer variants as %s */
static const char pythia_160m_fmt[] =
    "{\"architectures\": [\"GPTNeoXForCausalLM\"], \"bos_token_id\": 0, \"eos_token_id\": 0, "
    "\"hidden_act\": \"gelu\", \"hidden_size\": 768, \"initializer_range\": 0.02, "
    "\"intermediate_size\": 3072, \"layer_norm_eps\": 1e-05, \"max_position_embeddings\": 2048, "
    "\"model_type\": \"gpt_neox\", \"num_attention_heads\": 12, \"num_hidden_layers\": 12, "
    "\"rotary_emb_base\": 10000, \"rotary_pct\": %s, \"tie_word_embeddings\": false, "
    "\"torch_dtype\": \"float16\", \"transformers_version\": \"4.24.0\", \"use_cache\": true, "
    "\"use_parallel_residual\": %s, \"vocab_size\": 50304}";

static struct spsim_model *
load(const char *json, const char *origin, struct spsim_error *err)
{
    struct spsim_model *m = NULL;
    int rc = spsim_model_parse(json, strlen(json), origin, &m, err);
    ck_assert_msg(rc == SPSIM_OK, "%s: %s", origin, err->message);
    return m;
}

/* Published totals (Hub, safetensors metadata), each derived per layer:
 * Llama 3 8B: 32 × (4096·6144 + 4096² + 3·4096·14336 + 2·4096) + 2·128256·4096 + 4096
 *   = 8,030,261,248 (the figure).
 * Mistral 7B v0.3: the same layer, vocabulary 32768: 7,248,023,552 ("7.25B").
 * Qwen2-7B: 28 × (3584·4608 + 4608 (QKV bias) + 3584² + 3·3584·18944 + 2·3584)
 *   + 2·152064·3584 + 3584 = 7,615,616,512 ("7.62B").
 * Gemma 7B: 28 × (3072·12288 + 4096·3072 + 3·3072·24576 + 2·3072) + 256000·3072 (tied) + 3072
 *   = 8,537,680,896 ("8.54B").
 * Qwen3-8B: 36 × (4096·6144 + 4096² + 3·4096·12288 + 2·4096 + 2·128 (QK-norm))
 *   + 2·151936·4096 + 4096 = 8,190,735,360 ("8.2B").
 * GPT-2: 124,439,808 with the 50257-token table; spsim pads it to 50304 (Megatron), 47 rows of
 *   768 more. */
START_TEST(published_parameter_counts)
{
    struct spsim_error err = {0};
    const struct {
        const char *json, *origin;
        uint64_t params;
    } cases[] = {
        {llama3_8b, "Meta-Llama-3-8B/config.json", 8030261248ull},
        {mistral_7b_v03, "Mistral-7B-v0.3/config.json", 7248023552ull},
        {qwen2_7b, "Qwen2-7B/config.json", 7615616512ull},
        {qwen3_8b, "Qwen3-8B/config.json", 8190735360ull},
        {gemma_7b, "gemma-7b/config.json", 8537680896ull},
        {gpt2, "gpt2/config.json", 124439808ull + 47ull * 768},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct spsim_model *m = load(cases[i].json, cases[i].origin, &err);
        ck_assert_uint_eq(spsim_model_parameters(m, 1), cases[i].params);
        /* Gemma alone has its embedding scaled by sqrt(h) (Megatron-Bridge 067f987
         * gemma_provider.py:76-78, modules.py:40), which no Megatron-LM flag says. */
        bool gemma = cases[i].json == gemma_7b;
        ck_assert(spsim_model_get_shape(m)->embedding_scale == gemma);
        const char *why = spsim_megatron_unsupported(m);
        ck_assert(gemma ? why && strstr(why, "sqrt(h) scale (embedding_scale") : !why);
        spsim_model_destroy(m);
    }
}
END_TEST

START_TEST(llama3_shape_and_name)
{
    struct spsim_error err = {0};
    struct spsim_model *m = load(llama3_8b, "hf/Meta-Llama-3-8B/config.json", &err);
    const struct spsim_model_shape *s = spsim_model_get_shape(m);
    ck_assert_str_eq(spsim_model_name(m), "Meta-Llama-3-8B");
    ck_assert_uint_eq(s->kv_heads, 8);
    ck_assert_uint_eq(s->head_dim, 128);
    /* max_position_embeddings 8192 is the context, not a training sequence: the default is
     * Megatron-Bridge's and Megatron-LM's GPT seq_length 1024 (--seq sets another). */
    ck_assert_uint_eq(s->seq_len, 1024);
    ck_assert_msg(strstr(spsim_model_description(m), "sequence length 1024 unless --seq gives "
                                                     "one") != NULL,
                  "%s", spsim_model_description(m));
    ck_assert_msg(strstr(spsim_model_description(m), "max_position_embeddings 8192") != NULL, "%s",
                  spsim_model_description(m));
    ck_assert_int_eq(s->mlp, SPSIM_MLP_SWIGLU);
    ck_assert_int_eq(s->norm, SPSIM_NORM_RMSNORM);
    ck_assert_int_eq(s->position, SPSIM_POSITION_ROPE);
    ck_assert(!s->tied_embeddings && !s->linear_bias && !s->qkv_bias && !s->dropout);
    spsim_model_destroy(m);
    /* The shipped llama3-8b profile, written from the paper and the same config, agrees. */
    struct spsim_model *shipped = testutil_model_named("llama3-8b");
    ck_assert_uint_eq(spsim_model_parameters(shipped, 1), 8030261248ull);
    spsim_model_destroy(shipped);
}
END_TEST

/* transformers 4.53 and later write layer_types; all full attention is the same model. */
/*
 * PretrainedConfig's own keys, which save_pretrained writes and which change no layer
 * (return_dict, output_attentions, the generation defaults, the task head's labels, ...):
 * Mistral-7B v0.3's config with them is the same model, 7 248 023 552 parameters: 32 layers of
 * q, o 4096² and k, v 4096·1024 (41 943 040), SwiGLU 3·4096·14336 (176 160 768), two RMSNorms
 * (8192), plus the untied 32768·4096 embedding and head and the final norm. An
 * encoder-decoder or cross-attention is refused by name. A 131072-position config (Llama 3.1,
 * Qwen2.5) defaults to 1024 positions of training sequence too, not 131072.
 */
START_TEST(generic_keys_and_sequence)
{
    char json[4096];
    snprintf(json, sizeof(json),
             "%.*s, \"return_dict\": true, \"output_attentions\": false, "
             "\"output_hidden_states\": false, \"torchscript\": false, "
             "\"use_bfloat16\": false, \"chunk_size_feed_forward\": 0, "
             "\"is_decoder\": false, \"is_encoder_decoder\": false, "
             "\"add_cross_attention\": false, \"max_length\": 20, "
             "\"num_beams\": 1, \"temperature\": 1.0, \"top_k\": 50, "
             "\"top_p\": 1.0, \"id2label\": {\"0\": \"LABEL_0\"}, "
             "\"label2id\": {\"LABEL_0\": 0}, \"problem_type\": null, "
             "\"pruned_heads\": {}, \"tf_legacy_loss\": false, "
             "\"_name_or_path\": \"mistralai/Mistral-7B-v0.3\"}",
             (int)strlen(mistral_7b_v03) - 1, mistral_7b_v03);
    struct spsim_error err = {0};
    struct spsim_model *m = load(json, "Mistral-7B-v0.3/config.json", &err);
    ck_assert_uint_eq(spsim_model_parameters(m, 1), 7248023552ull);
    ck_assert_uint_eq(spsim_model_get_shape(m)->seq_len, 1024);
    spsim_model_destroy(m);
    static const char *const refused[][2] = {
        {"\"is_encoder_decoder\": true", "is_encoder_decoder"},
        {"\"add_cross_attention\": true", "add_cross_attention"},
        {"\"cross_attention_hidden_size\": 1024", "cross_attention_hidden_size"}};
    for (size_t i = 0; i < 3; i++) {
        snprintf(json, sizeof(json), "%.*s, %s}", (int)strlen(mistral_7b_v03) - 1, mistral_7b_v03,
                 refused[i][0]);
        struct spsim_model *bad = NULL;
        ck_assert_int_eq(spsim_model_parse(json, strlen(json), "c.json", &bad, &err), SPSIM_EFIELD);
        ck_assert_msg(strstr(err.message, refused[i][1]) != NULL, "%s", err.message);
    }
    /* Llama 3.1 8B's context: 131072 positions, still a 1024-token default sequence. */
    static const char key[] = "\"max_position_embeddings\": 8192";
    const char *pos = strstr(llama3_8b, key);
    ck_assert_ptr_nonnull(pos);
    snprintf(json, sizeof(json), "%.*s\"max_position_embeddings\": 131072%s",
             (int)(pos - llama3_8b), llama3_8b, pos + sizeof(key) - 1);
    m = load(json, "Llama-3.1-8B/config.json", &err);
    ck_assert_uint_eq(spsim_model_get_shape(m)->seq_len, 1024);
    ck_assert_msg(strstr(spsim_model_description(m), "max_position_embeddings 131072"), "%s",
                  spsim_model_description(m));
    spsim_model_destroy(m);
}
END_TEST

/*
 * transformers 5 writes the rotary settings as one rope_parameters object instead of rope_theta
 * and rope_scaling (modeling_rope_utils.py RopeParameters): Llama 3 8B's file so written is the
 * same model, 8,030,261,248 parameters, its partial_rotary_factor the shape's rotary_percent
 * (0.5 here, 1 when absent); anything but an object or null is refused naming the key.
 */
START_TEST(rope_parameters_object)
{
    static const char old_keys[] = "\"rope_scaling\": null, \"rope_theta\": 500000.0, ";
    const char *at = strstr(llama3_8b, old_keys);
    ck_assert_ptr_nonnull(at);
    static const char *const rope[] = {
        "{\"rope_theta\": 500000.0, \"rope_type\": \"default\"}",
        "{\"rope_theta\": 500000.0, \"rope_type\": \"default\", \"partial_rotary_factor\": 0.5}",
        "null", "3", "{\"partial_rotary_factor\": 2}"};
    const double percent[] = {1.0, 0.5, 1.0};
    char json[4096];
    struct spsim_error err = {0};
    for (size_t i = 0; i < 5; i++) {
        snprintf(json, sizeof(json), "%.*s\"rope_parameters\": %s, %s", (int)(at - llama3_8b),
                 llama3_8b, rope[i], at + sizeof(old_keys) - 1);
        if (i < 3) {
            struct spsim_model *m = load(json, "Meta-Llama-3-8B/config.json", &err);
            ck_assert_uint_eq(spsim_model_parameters(m, 1), 8030261248ull);
            ck_assert_double_eq(spsim_model_get_shape(m)->rotary_percent, percent[i]);
            spsim_model_destroy(m);
            continue;
        }
        struct spsim_model *bad = NULL;
        ck_assert_int_eq(spsim_model_parse(json, strlen(json), "c.json", &bad, &err), SPSIM_EFIELD);
        ck_assert_msg(strstr(err.message, i == 3 ? "'rope_parameters': must be an object"
                                                 : "partial_rotary_factor"),
                      "%s", err.message);
    }
}
END_TEST

START_TEST(layer_types_full_attention)
{
    static const char json[] =
        "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
        "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 128, "
        "\"max_position_embeddings\": 64, \"layer_types\": [\"full_attention\", "
        "\"full_attention\"]}";
    struct spsim_error err = {0};
    struct spsim_model *m = load(json, "qwen2-tiny/config.json", &err);
    ck_assert(spsim_model_get_shape(m)->qkv_bias);
    /* MHA (no num_key_value_heads): 2 × (64·192 + 192 + 64² + 3·64·128 + 2·64) + 2·128·64 + 64 */
    ck_assert_uint_eq(spsim_model_parameters(m, 1),
                      2ull * (64 * 192 + 192 + 64 * 64 + 3 * 64 * 128 + 128) + 2 * 128 * 64 + 64);
    spsim_model_destroy(m);
}
END_TEST

/* Qwen3's QK-norm keeps its input, Q and K, for backward: (a + kv)·d/t channels of 2 B for
 * each of s·b tokens more per layer than the same layer without it; its weights are d each for
 * Q and K, replicated on every TP rank. */
START_TEST(qwen3_qk_norm_memory)
{
    struct spsim_error err = {0};
    struct spsim_model *with = load(qwen3_8b, "Qwen3-8B/config.json", &err), *without = NULL;
    struct spsim_model_shape shape = *spsim_model_get_shape(with);
    ck_assert(shape.qk_norm);
    shape.qk_norm = false;
    ck_assert_int_eq(spsim_model_create(&shape, "no-qk-norm", &without, &err), SPSIM_OK);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel par;
    spsim_parallel_defaults(&par);
    par.tp = 2;
    par.sp = true;
    par.seq = 4096;
    par.gbs = 8;
    struct spsim_result a, b;
    ck_assert_msg(spsim_evaluate(with, hw, &par, &a, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_msg(spsim_evaluate(without, hw, &par, &b, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(a.memory.activation_per_layer_bytes - b.memory.activation_per_layer_bytes,
                      4096ull * 1 * (32 + 8) * 128 / 2 * 2);
    ck_assert_uint_eq(spsim_model_parameters(with, 1) - spsim_model_parameters(without, 1),
                      36ull * 2 * 128);
    ck_assert(a.time.layer_forward_s > b.time.layer_forward_s);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(with);
    spsim_model_destroy(without);
}
END_TEST

START_TEST(gpt2_and_neox_layers)
{
    struct spsim_error err = {0};
    struct spsim_model *m = load(gpt2, "gpt2.json", &err);
    const struct spsim_model_shape *s = spsim_model_get_shape(m);
    ck_assert_str_eq(spsim_model_name(m), "gpt2");
    ck_assert_uint_eq(s->ffn_hidden, 4 * 768); /* n_inner absent: 4 · n_embd */
    ck_assert(s->dropout && s->linear_bias && s->tied_embeddings);
    ck_assert_int_eq(s->position, SPSIM_POSITION_LEARNED);
    ck_assert_int_eq(s->norm, SPSIM_NORM_LAYERNORM);
    spsim_model_destroy(m);

    /* Pythia's layer is parallel (attention and MLP from the same input) with rotary
     * embedding on a quarter of each head: refused by key. */
    char json[2048];
    snprintf(json, sizeof(json), pythia_160m_fmt, "0.25", "true");
    ck_assert_int_eq(spsim_model_parse(json, strlen(json), "pythia-160m/config.json", &m, &err),
                     SPSIM_EFIELD);
    ck_assert_str_eq(err.message, "pythia-160m/config.json: field 'use_parallel_residual': "
                                  "parallel attention and MLP branches are not modelled (true "
                                  "when absent); spsim models the sequential layer");
    snprintf(json, sizeof(json), pythia_160m_fmt, "0.25", "false");
    ck_assert_int_eq(spsim_model_parse(json, strlen(json), "pythia-160m/config.json", &m, &err),
                     SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "field 'rotary_pct'"));
    /* Neither variant changes a tensor: the sequential, fully rotary layer has Pythia-160M's
     * published 162,322,944 parameters: 12 × (768·2304 + 2304 + 768² + 768 + 2·768·3072 + 3072
     * + 768 + 4·768) + 2·50304·768 + 2·768. */
    snprintf(json, sizeof(json), pythia_160m_fmt, "1.0", "false");
    m = load(json, "pythia-160m/config.json", &err);
    ck_assert_uint_eq(spsim_model_parameters(m, 1), 162322944ull);
    spsim_model_destroy(m);
}
END_TEST

/* MoE and latent-attention keys in a dense family's config (read for mixtral, qwen3_moe and
 * deepseek only: tests/test_moe_model.c), Gemma 2, Qwen2's sliding window, and an unknown
 * key: refused naming the key, SPSIM_EFIELD (exit 3). */
START_TEST(refused_by_key)
{
    const struct {
        const char *json, *field;
    } cases[] = {
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 32, \"num_local_experts\": 8, "
         "\"num_experts_per_tok\": 2}",
         "num_local_experts"},
        /* Qwen/Qwen1.5-MoE-A2.7B: a family spsim does not read */
        {"{\"model_type\": \"qwen2_moe\", \"num_experts\": 60, \"moe_intermediate_size\": 1408}",
         "num_experts"},
        {"{\"model_type\": \"qwen3\", \"kv_lora_rank\": 512}", "kv_lora_rank"},
        /* google/gemma-2-9b: soft-capping, sliding layers, four norms per layer */
        {"{\"model_type\": \"gemma2\", \"num_hidden_layers\": 42}", "model_type"},
        /* Qwen2's windows from max_window_layers on, without layer_types (Mistral v0.1's
         * window on every layer is read: test_moe_model.c hf_sliding_windows) */
        {"{\"model_type\": \"qwen2\", \"num_hidden_layers\": 32, \"hidden_size\": 4096, "
         "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"intermediate_size\": 14336, "
         "\"vocab_size\": 32000, \"max_position_embeddings\": 32768, \"use_sliding_window\": "
         "true, \"sliding_window\": 4096, \"max_window_layers\": 28}",
         "sliding_window"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"parallel_attn\": true}",
         "parallel_attn"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"hidden_act\": \"relu\"}",
         "hidden_act"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"attention_bias\": true}",
         "attention_bias"},
        {"{\"model_type\": \"llama\", \"hidden_size\": 64}", "num_hidden_layers"},
        /* Qwen2-VL's multimodal rotary sections on a Qwen2 text config (Qwen2.5's files say
         * false: tests/data/hf/Qwen2.5-7B, accepted) */
        {"{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"use_mrope\": true}",
         "use_mrope"},
        /* transformers 4.53's layer_types: Qwen2 with sliding-window layers */
        {"{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64, \"layer_types\": [\"full_attention\", "
         "\"sliding_attention\"]}",
         "layer_types"},
        {"{\"model_type\": \"llama\", \"num_hidden_layers\": 5000, \"hidden_size\": 64, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100, "
         "\"max_position_embeddings\": 64}",
         "layers"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct spsim_model *m = NULL;
        struct spsim_error err = {0};
        char want[128];
        int rc = spsim_model_parse(cases[i].json, strlen(cases[i].json), "x/config.json", &m, &err);
        ck_assert_int_eq(rc, SPSIM_EFIELD);
        ck_assert_ptr_null(m);
        snprintf(want, sizeof(want), "x/config.json: field '%s': ", cases[i].field);
        ck_assert_msg(strncmp(err.message, want, strlen(want)) == 0, "%s", err.message);
    }
}
END_TEST

static Suite *
hf_suite(void)
{
    Suite *s = suite_create("hf_config");
    TCase *tc = tcase_create("import");
    tcase_add_test(tc, published_parameter_counts);
    tcase_add_test(tc, llama3_shape_and_name);
    tcase_add_test(tc, generic_keys_and_sequence);
    tcase_add_test(tc, gpt2_and_neox_layers);
    tcase_add_test(tc, rope_parameters_object);
    tcase_add_test(tc, layer_types_full_attention);
    tcase_add_test(tc, qwen3_qk_norm_memory);
    tcase_add_test(tc, refused_by_key);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(hf_suite());
}
