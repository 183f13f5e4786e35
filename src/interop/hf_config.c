/*
 * Hugging Face transformers config.json files read as model profiles: the decoder families whose
 * layer spsim models (Llama, Mistral, Qwen2, Qwen3, Gemma, Gemma 3's language model, GPT-2,
 * GPT-NeoX; the mixtures of experts Mixtral, Qwen3-MoE and DeepSeek-V2/V3 with its latent
 * attention, and Kimi K2; the
 * hybrids Qwen3-Next, Qwen3.5, Nemotron-H and Nemotron 3 in their own files). Every
 * key is either mapped, known to change nothing spsim computes, or refused by name: a key this file
 * does not know might change the layer, so it is not guessed at.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "hf_config.h"
#include "profiles/jsonfield.h"
#include "profiles/profiles.h"

/* One model_type: where its numbers are and the layer its modeling_*.py builds. */
struct hf_family {
    const char *type;
    const char *layers, *hidden, *heads, *ffn, *positions;
    enum spsim_mlp mlp;
    enum spsim_norm norm;
    enum spsim_position position;
    bool tied;     /* tie_word_embeddings when absent (the family's config class default) */
    bool all_bias; /* biases on every linear (GPT-2, GPT-NeoX) */
    bool qkv_bias; /* a QKV bias only (Qwen2: Qwen2Attention q/k/v_proj bias=True) */
    bool qk_norm;  /* Qwen3Attention's q_norm and k_norm (RMSNorm of head_dim) */
    const char *const *keys;     /* accepted beyond the common keys */
    int moe;                     /* enum hf_moe: how its experts are read (0: dense) */
    const char *const *moe_keys; /* accepted beyond keys (its MoE and MLA keys, Qwen2's extra) */
    bool post_norms; /* Gemma 3's post-attention and post-MLP norms (profile key post_norms) */
};

/* The mixture-of-experts families, by where transformers keeps their experts. */
enum hf_moe { HF_DENSE = 0, HF_MIXTRAL, HF_QWEN_MOE, HF_DEEPSEEK };

/* Keys every family here reads or may ignore: numerics of the norm, the rotary frequencies,
 * the tokenizer, the vocabulary and its tying (the identity, stored dtype, token ids, inference
 * cache and initialisation every reader accepts are hf_common.c's). */
static const char *const common_keys[] = {"rms_norm_eps",        "layer_norm_eps",
                                          "layer_norm_epsilon",  "rope_theta",
                                          "rope_scaling",        "rope_parameters",
                                          "tokenizer_class",     "vocab_size",
                                          "tie_word_embeddings", NULL};

/* transformers/models/llama/configuration_llama.py (and mistral, qwen2, gemma): the keys. */
static const char *const llama_keys[] = {"num_hidden_layers",
                                         "hidden_size",
                                         "num_attention_heads",
                                         "num_key_value_heads",
                                         "head_dim",
                                         "intermediate_size",
                                         "max_position_embeddings",
                                         "hidden_act",
                                         "attention_bias",
                                         "mlp_bias",
                                         "attention_dropout",
                                         "pretraining_tp",
                                         "sliding_window",
                                         "use_sliding_window",
                                         "max_window_layers",
                                         "hidden_activation",
                                         "layer_types",
                                         NULL};
/* transformers/models/gpt2/configuration_gpt2.py; summary_* configure the classification head
 * of GPT2DoubleHeadsModel, not the decoder. */
static const char *const gpt2_keys[] = {"n_layer",
                                        "n_embd",
                                        "n_head",
                                        "n_inner",
                                        "n_positions",
                                        "n_ctx",
                                        "activation_function",
                                        "resid_pdrop",
                                        "embd_pdrop",
                                        "attn_pdrop",
                                        "scale_attn_weights",
                                        "scale_attn_by_inverse_layer_idx",
                                        "reorder_and_upcast_attn",
                                        "summary_type",
                                        "summary_use_proj",
                                        "summary_activation",
                                        "summary_proj_to_labels",
                                        "summary_first_dropout",
                                        "task_specific_params",
                                        NULL};
/* transformers/models/gpt_neox/configuration_gpt_neox.py */
static const char *const neox_keys[] = {"num_hidden_layers",
                                        "hidden_size",
                                        "num_attention_heads",
                                        "intermediate_size",
                                        "max_position_embeddings",
                                        "hidden_act",
                                        "rotary_pct",
                                        "rotary_emb_base",
                                        "attention_dropout",
                                        "hidden_dropout",
                                        "classifier_dropout",
                                        "use_parallel_residual",
                                        "attention_bias",
                                        NULL};

/* Qwen2.5's released config.json files (Qwen/Qwen2.5-7B, -1.5B: tests/data/hf/) carry
 * "use_mrope": false, Qwen2-VL's multimodal rotary switch, which the text model's rotary
 * embedding does not use when false (the plain 1-D rotary positions spsim counts); true is
 * refused (check_variants). */
static const char *const qwen2_keys[] = {"use_mrope", NULL};

/* configuration_mixtral.py: the router's training knobs change no FLOP spsim counts. */
static const char *const mixtral_keys[] = {"num_local_experts",    "num_experts_per_tok",
                                           "output_router_logits", "router_aux_loss_coef",
                                           "router_jitter_noise",  NULL};
/* configuration_gpt_oss.py (openai/gpt-oss-120b's config.json): Mixtral's expert keys;
 * experts_per_token repeats num_experts_per_tok (the two must agree); swiglu_limit is the
 * activation's clamp (Bridge activation_func_clamp_value 7.0, elementwise: no FLOP or byte
 * spsim counts), initial_context_length the context before YaRN (the rope_scaling's
 * original_max_position_embeddings), quantization_config how the released weights are stored
 * (MXFP4 experts; the training dtype is --dtype). */
static const char *const gpt_oss_keys[] = {
    "num_local_experts",      "num_experts_per_tok",  "experts_per_token",
    "output_router_logits",   "router_aux_loss_coef", "swiglu_limit",
    "initial_context_length", "quantization_config",  NULL};
/* configuration_qwen3_moe.py */
static const char *const qwen_moe_keys[] = {
    "num_experts",          "num_experts_per_tok",  "moe_intermediate_size",
    "decoder_sparse_step",  "mlp_only_layers",      "norm_topk_prob",
    "output_router_logits", "router_aux_loss_coef", NULL};
/* configuration_deepseek_v3.py (and the V2 one, and deepseek-ai's configuration_deepseek.py the
 * config.json's auto_map names): routing options (scaling, the aux loss) change no FLOP spsim
 * counts, the group-limited top-k (n_group, topk_group) is read; quantization_config is how the
 * released weights are stored (the training dtype is --dtype). */
static const char *const deepseek_keys[] = {"n_routed_experts",
                                            "n_shared_experts",
                                            "num_experts_per_tok",
                                            "moe_intermediate_size",
                                            "first_k_dense_replace",
                                            "moe_layer_freq",
                                            "scoring_func",
                                            "q_lora_rank",
                                            "kv_lora_rank",
                                            "qk_nope_head_dim",
                                            "qk_rope_head_dim",
                                            "v_head_dim",
                                            "num_nextn_predict_layers",
                                            "routed_scaling_factor",
                                            "topk_method",
                                            "n_group",
                                            "topk_group",
                                            "norm_topk_prob",
                                            "aux_loss_alpha",
                                            "seq_aux",
                                            "ep_size",
                                            "auto_map",
                                            "quantization_config",
                                            "rope_interleave",
                                            NULL};

/* Gemma3TextConfig's own keys (the gemma3_text model_type, Gemma 3's text_config): the softmax
 * scale 1/sqrt(query_pre_attn_scalar) and the local layers' rotary base (Megatron-Bridge
 * gemma3_bridge.py at 067f987: softmax_scale, rotary_base (local, global)) change no FLOP or
 * byte spsim counts; the soft-capping keys are read, and refused unless null (check_variants);
 * sliding_window_pattern is the windowed layers' rule before layer_types (read_windows);
 * cache_implementation is generation's. */
static const char *const gemma3_keys[] = {"query_pre_attn_scalar",
                                          "rope_local_base_freq",
                                          "attn_logit_softcapping",
                                          "final_logit_softcapping",
                                          "sliding_window_pattern",
                                          "cache_implementation",
                                          NULL};

static const struct hf_family families[] = {
    {"llama", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     false, false, false, llama_keys, HF_DENSE, NULL, false},
    {"mistral", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     false, false, false, llama_keys, HF_DENSE, NULL, false},
    {"qwen2", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     false, true, false, llama_keys, HF_DENSE, qwen2_keys, false},
    {"qwen3", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     false, false, true, llama_keys, HF_DENSE, NULL, false},
    /* GemmaMLP is gated (gate_proj, up_proj) with a GeLU: the gated layer, GeLU for SiLU. */
    {"gemma", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, true,
     false, false, false, llama_keys, HF_DENSE, NULL, false},
    /* Gemma3DecoderLayer as Megatron-Bridge trains it (gemma3_provider.py at 067f987:
     * gated_linear_unit with fast_gelu, qk_layernorm, share_embeddings_and_output_weights, the
     * layer spec's TERowParallelLinearLayerNorm on linear_proj and linear_fc2): the Gemma layer
     * with Q/K norms of head_dim and a post-norm after the attention and after the MLP, the
     * embedding's output scaled by sqrt(h) (model embedding_scale). */
    {"gemma3_text", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, true,
     false, false, true, llama_keys, HF_DENSE, gemma3_keys, true},
    {"gpt2", "n_layer", "n_embd", "n_head", "n_inner", "n_positions", SPSIM_MLP_GELU,
     SPSIM_NORM_LAYERNORM, SPSIM_POSITION_LEARNED, true, true, false, false, gpt2_keys, HF_DENSE,
     NULL, false},
    {"gpt_neox", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_GELU, SPSIM_NORM_LAYERNORM, SPSIM_POSITION_ROPE, false,
     true, false, false, neox_keys, HF_DENSE, NULL, false},
    /* MixtralSparseMoeBlock in every layer: experts of intermediate_size, softmax router. */
    {"mixtral", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     false, false, false, llama_keys, HF_MIXTRAL, mixtral_keys, false},
    /* GptOssForCausalLM as Megatron-Bridge trains it (gpt_oss_bridge.py at 067f987:
     * gated_linear_unit with quick_gelu, add_bias_linear and add_qkv_bias, untied, experts of
     * intermediate_size): biases on every linear, the router's included (:178); its learned
     * sinks are set below, its windows read from layer_types. */
    {"gpt_oss", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     true, false, false, llama_keys, HF_MIXTRAL, gpt_oss_keys, false},
    /* Qwen3MoeSparseMoeBlock: experts of moe_intermediate_size, Qwen3's Q/K norms. */
    {"qwen3_moe", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     false, false, true, llama_keys, HF_QWEN_MOE, qwen_moe_keys, false},
    /* DeepseekV3MoE after first_k_dense_replace dense layers, DeepseekV3Attention (MLA) with
     * its q_a_layernorm and kv_a_layernorm (profile key qk_norm). */
    {"deepseek_v3", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     false, false, true, llama_keys, HF_DEEPSEEK, deepseek_keys, false},
    /* Moonshot's Kimi K2 (model_type kimi_k2): its config.json names DeepseekV3ForCausalLM and
     * auto_map's configuration_deepseek.DeepseekV3Config, the DeepSeek-V3 layer with other
     * widths (Kimi K2 report arXiv:2507.20534 §2: "a similar architecture to DeepSeek-V3"). */
    {"kimi_k2", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     false, false, true, llama_keys, HF_DEEPSEEK, deepseek_keys, false},
    {"deepseek_v2", "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
     "max_position_embeddings", SPSIM_MLP_SWIGLU, SPSIM_NORM_RMSNORM, SPSIM_POSITION_ROPE, false,
     false, false, true, llama_keys, HF_DEEPSEEK, deepseek_keys, false},
};

/* Keys of layers spsim does not model, named in the refusal. */
static const struct {
    const char *key, *what;
} refused_keys[] = {
    {"num_local_experts", "mixture-of-experts layers (Mixtral)"},
    {"num_experts", "mixture-of-experts layers (Qwen2-MoE, Qwen3-MoE)"},
    {"n_routed_experts", "mixture-of-experts layers (DeepSeek)"},
    {"moe_intermediate_size", "mixture-of-experts layers"},
    {"num_experts_per_tok", "mixture-of-experts layers"},
    {"kv_lora_rank", "multi-head latent attention (DeepSeek)"},
    {"q_lora_rank", "multi-head latent attention (DeepSeek)"},
};

/* Published families whose layer spsim does not model, named by what their config.json sets
 * (tests/data/hf/: the released files) rather than "not a family": Gemma 4's layer_types and
 * final_logit_softcapping, Llama 4's attention_chunk_size and no_rope layers, GLM-5's indexer keys,
 * MiniMax-M2's rotary_dim 64 of head_dim 128, MiMo's MTP layers (a Qwen2 decoder layer with its own
 * input projection and norms), Nemotron-Super's block_configs (31 of 80 attentions no_op),
 * Step 3.7's and Qwen3.5's layer_types, Qwen3-Next's full_attention_interval and linear_* keys,
 * DeepSeek-V3.2's index_* keys, DeepSeek-V4's compress_ratios and hc_* keys, Gemma 2's soft-capping
 * keys (its four norms per layer are Gemma 3's, which are read), Falcon's
 * parallel_attn. */
static const struct {
    const char *type, *what;
} unmodelled[] = {
    {"gemma4", "sliding-window attention on 5 of 6 layers, final logit softcapping, shared "
               "K=V projections and a vision tower"},
    /* Gemma2DecoderLayer: attn_logit_softcapping (tanh on the scores, which Megatron-Bridge
     * runs in its own Gemma2DotProductAttention, unfused or FlexAttention, not TE's fused
     * kernels: gemma2_provider.py at 067f987) and final_logit_softcapping. Its windows (every
     * other layer) and its four norms per layer (Bridge's TERowParallelLinearLayerNorm, as
     * Gemma 3's: profile key post_norms) alone would be read. */
    {"gemma2", "attention logit soft-capping (attn_logit_softcapping) and final logit "
               "soft-capping (final_logit_softcapping)"},
    {"llama4", "chunked attention (attention_chunk_size) on 3 of 4 layers, the 4th without "
               "rotary embedding, and a vision tower"},
    {"glm_moe_dsa", "DeepSeek sparse attention's indexer (index_topk, index_n_heads)"},
    {"minimax_m2", "rotary embedding on part of the head (rotary_dim) and per-layer Q/K norms"},
    {"mimo", "MiMo's multi-token prediction layers (num_nextn_predict_layers), not DeepSeek's"},
    {"nemotron-nas", "per-layer blocks (block_configs): layers without attention and FFN widths "
                     "that vary by layer"},
    {"step3p7", "sliding-window attention on 33 of 45 layers (layer_types)"},
    {"deepseek_v32", "DeepSeek sparse attention's indexer (index_topk, index_n_heads)"},
    {"deepseek_v4", "compressed sparse attention (compress_ratios, index_topk), "
                    "hyper-connections (hc_mult) and hash-routed layers"},
    /* FalconDecoderLayer (transformers modeling_falcon.py): with parallel_attn (every released
     * Falcon 7B/40B/180B; new_decoder_architecture gives the two branches their own input
     * norms, ln_attn and ln_mlp) the attention and the MLP read the same input and both add to
     * the residual; falcon-rw's sequential layer uses ALiBi (alibi) instead of rotary. */
    {"falcon", "parallel attention and MLP branches (parallel_attn, with new_decoder_"
               "architecture's two input norms) or ALiBi positions (alibi)"},
};

static const struct hf_family *
family_of(const char *type)
{
    for (size_t i = 0; type && i < SPSIM_ARRAY_LENGTH(families); i++)
        if (strcmp(families[i].type, type) == 0)
            return &families[i];
    return NULL;
}

static bool
present(const cJSON *root, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    return v && !cJSON_IsNull(v);
}

/* An integer key; null or absent leaves *out as it is (the family's default). */
static int
get_u32(const struct spsim_jctx *c, const cJSON *root, const char *key, bool required,
        uint32_t *out)
{
    if (!present(root, key))
        return required ? spsim_json_field_error(c, NULL, key, "missing") : SPSIM_OK;
    return spsim_json_get_u32(c, root, NULL, key, true, 1, UINT32_MAX, out);
}

static int
get_bool(const struct spsim_jctx *c, const cJSON *root, const char *key, bool *out)
{
    return present(root, key) ? spsim_json_get_bool(c, root, NULL, key, true, out) : SPSIM_OK;
}

/* A dropout probability: *out says whether it is nonzero. */
static int
get_dropout(const struct spsim_jctx *c, const cJSON *root, const char *key, int *out)
{
    double p = 0;
    if (!present(root, key))
        return SPSIM_OK;
    int rc = spsim_json_get_double(c, root, NULL, key, true, 0, 1, &p);
    *out = p > 0;
    return rc;
}

/* The family, after the refusals that name a key of an unmodelled layer: MoE and MLA keys are
 * read for the MoE families only. */
static int
find_family(const struct spsim_jctx *c, const cJSON *root, const struct hf_family **out)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *type = cJSON_IsString(t) ? t->valuestring : NULL;
    const struct hf_family *f = family_of(type);
    for (size_t i = 0; type && i < SPSIM_ARRAY_LENGTH(unmodelled); i++)
        if (strcmp(type, unmodelled[i].type) == 0)
            return spsim_json_field_error(
                c, NULL, "model_type", "%s: %s%s", SPSIM_Q(type), unmodelled[i].what,
                strstr(unmodelled[i].what, " not read ") ? "" : ": not modelled");
    for (size_t i = 0; (!f || !f->moe) && i < SPSIM_ARRAY_LENGTH(refused_keys); i++)
        if (present(root, refused_keys[i].key))
            return spsim_json_field_error(c, NULL, refused_keys[i].key,
                                          "%s are not read for model_type %s (spsim reads "
                                          "them for mixtral, qwen3_moe, deepseek_v2, "
                                          "deepseek_v3 and kimi_k2)",
                                          refused_keys[i].what, SPSIM_Q(type ? type : "?"));
    int rc = spsim_json_get_string(c, root, NULL, "model_type", true, true, &type);
    if (rc != SPSIM_OK)
        return rc;
    if ((*out = f))
        return SPSIM_OK;
    return spsim_json_field_error(
        c, NULL, "model_type",
        "%s is not a family spsim models (llama, mistral, qwen2, qwen3, gemma, gemma3, "
        "gemma3_text, gpt2, gpt_neox, mixtral, qwen3_moe, deepseek_v2, deepseek_v3, kimi_k2)",
        SPSIM_Q(type));
}

/* Every key is common, the family's, or refused by name. */
static int
check_keys(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f)
{
    for (const cJSON *it = root->child; it; it = it->next) {
        bool known = it->string[0] == '_';
        for (const char *const *k = common_keys; !known && *k; k++)
            known = strcmp(*k, it->string) == 0;
        known = known || spsim_hf_generic_key(it->string);
        for (const char *const *k = f->keys; !known && *k; k++)
            known = strcmp(*k, it->string) == 0;
        for (const char *const *k = f->moe_keys; !known && k && *k; k++)
            known = strcmp(*k, it->string) == 0;
        if (!known)
            return spsim_json_field_error(c, NULL, it->string,
                                          "not a key spsim knows for model_type %s; it may "
                                          "change the layer, so the file is refused",
                                          SPSIM_Q(f->type));
    }
    return SPSIM_OK;
}

/* PretrainedConfig's keys that would make another model: an encoder-decoder, cross-attention. */
static int
check_generic(const struct spsim_jctx *c, const cJSON *root)
{
    static const char *const keys[] = {"is_encoder_decoder", "add_cross_attention"};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(keys); i++) {
        bool on = false;
        int rc = get_bool(c, root, keys[i], &on);
        if (rc != SPSIM_OK || on)
            return rc ? rc
                      : spsim_json_field_error(c, NULL, keys[i],
                                               "true: encoder-decoder and cross-attention "
                                               "models are not modelled");
    }
    if (present(root, "cross_attention_hidden_size"))
        return spsim_json_field_error(c, NULL, "cross_attention_hidden_size",
                                      "cross-attention is not modelled");
    return SPSIM_OK;
}

/* The activation: gated SiLU for the Llama family, GeLU (any of transformers' GeLU kernels)
 * for GPT-2, GPT-NeoX and Gemma's gated MLP. */
static int
check_activation(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f)
{
    static const char *const keys[] = {"hidden_act", "hidden_activation", "activation_function"};
    bool silu = f->mlp == SPSIM_MLP_SWIGLU && strncmp(f->type, "gemma", 5) != 0;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(keys); i++) {
        const char *act = NULL;
        if (!present(root, keys[i]))
            continue;
        int rc = spsim_json_get_string(c, root, NULL, keys[i], true, true, &act);
        if (rc != SPSIM_OK)
            return rc;
        bool gelu = strncmp(act, "gelu", 4) == 0;
        if (silu ? strcmp(act, "silu") != 0 : !gelu)
            return spsim_json_field_error(c, NULL, keys[i], "%s: spsim models %s here",
                                          SPSIM_Q(act), silu ? "\"silu\" (SwiGLU)" : "a GeLU");
    }
    return SPSIM_OK;
}

/* Dropout: spsim's one switch covers attention probabilities and the residual branches, so
 * the file's probabilities must be all zero or all nonzero. */
static int
read_dropout(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m)
{
    static const char *const keys[] = {"attention_dropout", "hidden_dropout", "resid_pdrop",
                                       "embd_pdrop", "attn_pdrop"};
    int first = -1;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(keys); i++) {
        int on = -1;
        int rc = get_dropout(c, root, keys[i], &on);
        if (rc != SPSIM_OK)
            return rc;
        if (on < 0)
            continue;
        if (first >= 0 && on != first)
            return spsim_json_field_error(c, NULL, keys[i],
                                          "dropout on some sites only is not modelled (all "
                                          "probabilities zero, or all nonzero)");
        first = on;
    }
    /* The Llama family has attention dropout only: on, it would be that one site. */
    if (first == 1 && !present(root, "hidden_dropout") && !present(root, "resid_pdrop"))
        return spsim_json_field_error(c, NULL, "attention_dropout",
                                      "dropout on attention probabilities only is not modelled");
    m->dropout = first == 1;
    return SPSIM_OK;
}

/* Biases: all, the QKV projection only (Qwen2), or none. */
static int
read_bias(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f,
          struct spsim_model_shape *m)
{
    bool attention = f->all_bias, mlp = f->all_bias;
    int rc;
    if ((rc = get_bool(c, root, "attention_bias", &attention)) ||
        (rc = get_bool(c, root, "mlp_bias", &mlp)))
        return rc;
    if (f->qkv_bias && (attention || mlp))
        return spsim_json_field_error(c, NULL, attention ? "attention_bias" : "mlp_bias",
                                      "Qwen2's layer has a QKV bias only");
    if (attention != mlp)
        return spsim_json_field_error(c, NULL, attention ? "attention_bias" : "mlp_bias",
                                      "biases on the attention or the MLP linears only are not "
                                      "modelled");
    m->linear_bias = attention;
    m->qkv_bias = f->qkv_bias;
    return SPSIM_OK;
}

/* A window where neither layer_types nor the family says which layers it applies to. */
static int
check_window(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f,
             uint32_t positions)
{
    bool use_window = strncmp(f->type, "qwen", 4) != 0; /* Qwen2/3Config: use_sliding_window
                                                         * False */
    uint32_t window = UINT32_MAX;
    int rc;
    if ((rc = get_bool(c, root, "use_sliding_window", &use_window)) ||
        (use_window && (rc = get_u32(c, root, "sliding_window", false, &window))))
        return rc;
    if (use_window && window < positions)
        return spsim_json_field_error(c, NULL, "sliding_window",
                                      "sliding-window attention (%u of %u positions) "
                                      "without layer_types is not modelled for model_type %s",
                                      window, positions, SPSIM_Q(f->type));
    return SPSIM_OK;
}

/* One name of layer_types: whether the layer attends fully (else it is windowed). */
static int
layer_type(const struct spsim_jctx *c, const cJSON *t, uint32_t i, bool *full)
{
    const char *name = cJSON_IsString(t) ? t->valuestring : "?";
    *full = strcmp(name, "full_attention") == 0;
    if (*full || strcmp(name, "sliding_attention") == 0)
        return SPSIM_OK;
    return spsim_json_field_error(c, NULL, "layer_types",
                                  "layer %u is %s: only full_attention and sliding_attention "
                                  "are modelled",
                                  i, SPSIM_Q(name));
}

/* transformers 4.53 and later save each layer's attention ("layer_types"; Gemma 2's and
 * Gemma 3's config classes derive it as sliding unless (i + 1) % 2, resp. (i + 1) %
 * sliding_window_pattern, is 0). Megatron-Core windows layer_number (1-based) unless
 * layer_number % window_attn_skip_freq == 0 (transformer/utils.py is_layer_window_attention at
 * d98e8a6; Megatron-Bridge gemma3_provider.py _is_local_attn_layer at 067f987 is the same rule
 * for its (5, 1) pattern): the names must be of that form, the first full layer's number the
 * frequency (0: every layer windowed). *sliding says whether any layer is windowed. */
static int
layer_types_pattern(const struct spsim_jctx *c, const cJSON *types, uint32_t layers, uint32_t *freq,
                    bool *sliding)
{
    if (!cJSON_IsArray(types))
        return spsim_json_field_error(c, NULL, "layer_types", "must be an array of names");
    if ((uint32_t)cJSON_GetArraySize(types) != layers)
        return spsim_json_field_error(c, NULL, "layer_types", "has %d names for %u layers",
                                      cJSON_GetArraySize(types), layers);
    uint32_t i = 0;
    bool full = false;
    *freq = 0;
    *sliding = false;
    for (const cJSON *t = types->child; t; t = t->next, i++) {
        int rc = layer_type(c, t, i, &full);
        if (rc != SPSIM_OK)
            return rc;
        *sliding = *sliding || !full;
        if (full && !*freq)
            *freq = i + 1;
    }
    i = 0;
    for (const cJSON *t = types->child; *sliding && t; t = t->next, i++) {
        full = strcmp(t->valuestring, "full_attention") == 0;
        if (full != (*freq && (i + 1) % *freq == 0))
            return spsim_json_field_error(c, NULL, "layer_types",
                                          "layer %u is %s: only every N-th layer full (here "
                                          "N = %u, Megatron's --window-attn-skip-freq) is "
                                          "modelled",
                                          i, full ? "full" : "windowed", *freq);
    }
    return SPSIM_OK;
}

/* Gemma 3's files before layer_types (transformers < 4.53) say sliding_window_pattern N (4.53
 * and later write it as _sliding_window_pattern beside layer_types): Gemma3TextConfig's layers
 * are sliding unless (i + 1) % N == 0, Megatron's --window-attn-skip-freq N (N = 1: every layer
 * full). Neither key: which layers are windowed is not stated, and is not guessed. */
static int
gemma3_pattern(const struct spsim_jctx *c, const cJSON *root, uint32_t *freq, bool *sliding)
{
    const char *key = present(root, "sliding_window_pattern") ? "sliding_window_pattern"
                                                              : "_sliding_window_pattern";
    if (!present(root, key))
        return spsim_json_field_error(c, NULL, "layer_types",
                                      "missing, and no sliding_window_pattern says which layers "
                                      "are windowed");
    int rc = get_u32(c, root, key, true, freq);
    *sliding = rc == SPSIM_OK && *freq > 1;
    return rc;
}

/* Sliding windows: from layer_types where the file has them; else MistralAttention and
 * MixtralAttention window every layer by sliding_window (Megatron-Bridge mistral_bridge.py at
 * 067f987: window_size [sliding_window - 1, 0], i.e. W positions, the query's own included),
 * and the other families' windows (Qwen2's from max_window_layers on) are refused when shorter
 * than the context. Flash and fused attention keep no s × s scores, so a window changes the
 * attention kernels' work (layer.c attention_kernel) and Megatron-Bridge's FLOP count
 * (model_flops.c bridge_core_layers), not the activations. */
static int
read_windows(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f,
             struct spsim_model_shape *m, uint32_t positions)
{
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    bool sliding = false, mistral = !strcmp(f->type, "mistral") || !strcmp(f->type, "mixtral");
    uint32_t freq = 0, window = UINT32_MAX;
    int rc;
    if (types && !cJSON_IsNull(types))
        rc = layer_types_pattern(c, types, m->layers, &freq, &sliding);
    else if (f->post_norms)
        rc = gemma3_pattern(c, root, &freq, &sliding);
    else if (mistral)
        sliding = present(root, "sliding_window"), rc = SPSIM_OK;
    else
        return check_window(c, root, f, positions);
    if (rc != SPSIM_OK || !sliding ||
        (rc = get_u32(c, root, "sliding_window", true, &window)) != SPSIM_OK)
        return rc;
    m->window = window;
    m->window_skip_freq = freq;
    return SPSIM_OK;
}

/* transformers 5 writes a model's rotary settings as one rope_parameters object (rope_theta,
 * rope_type and its scaling numbers, partial_rotary_factor; modeling_rope_utils.py
 * RopeParameters) where earlier releases wrote rope_theta and rope_scaling beside the layer's
 * keys. The frequencies change no FLOP or byte spsim counts; the rotated fraction of the head is
 * the shape's rotary_percent (GPT-NeoX's is checked with its rotary_pct below). */
static int
read_rope(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    m->rotary_percent = 1.0;
    if (!r || cJSON_IsNull(r))
        return SPSIM_OK;
    if (!cJSON_IsObject(r))
        return spsim_json_field_error(c, NULL, "rope_parameters", "must be an object or null");
    if (!present(r, "partial_rotary_factor"))
        return SPSIM_OK;
    return spsim_json_get_double(c, r, "rope_parameters", "partial_rotary_factor", true, 0.001, 1,
                                 &m->rotary_percent);
}

/* Layer variants spsim does not model: GPT-NeoX's parallel residual and partial rotary
 * embedding (both on by default in GPTNeoXConfig), Qwen2-VL's multimodal rotary sections. */
static int
check_variants(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f)
{
    int rc;
    bool mrope = false;
    if ((rc = get_bool(c, root, "use_mrope", &mrope)))
        return rc;
    if (mrope)
        return spsim_json_field_error(c, NULL, "use_mrope",
                                      "true: multimodal rotary sections (Qwen2-VL) are not "
                                      "modelled");
    /* Gemma3TextConfig's soft-capping keys, null in Gemma 3's released files (Gemma 2's tanh
     * soft-capping: not modelled, see unmodelled). */
    static const char *const caps[] = {"attn_logit_softcapping", "final_logit_softcapping"};
    for (size_t i = 0; f->post_norms && i < SPSIM_ARRAY_LENGTH(caps); i++)
        if (present(root, caps[i]))
            return spsim_json_field_error(c, NULL, caps[i],
                                          "logit soft-capping (Gemma 2's tanh) is not modelled "
                                          "(only null)");
    if (strcmp(f->type, "gpt_neox") != 0)
        return SPSIM_OK;
    bool parallel = true;
    double rotary = 0.25;
    if ((rc = get_bool(c, root, "use_parallel_residual", &parallel)))
        return rc;
    if (parallel)
        return spsim_json_field_error(c, NULL, "use_parallel_residual",
                                      "parallel attention and MLP branches are not modelled "
                                      "(true when absent); spsim models the sequential layer");
    if (present(root, "rotary_pct") &&
        (rc = spsim_json_get_double(c, root, NULL, "rotary_pct", true, 0, 1, &rotary)))
        return rc;
    if (rotary != 1.0)
        return spsim_json_field_error(c, NULL, "rotary_pct",
                                      "rotary embedding on part of the head is not modelled "
                                      "(0.25 when absent; 1 is)");
    return SPSIM_OK;
}

static int
read_numbers(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f,
             struct spsim_model_shape *m)
{
    int rc;
    if ((rc = get_u32(c, root, f->layers, true, &m->layers)) ||
        (rc = get_u32(c, root, f->hidden, true, &m->hidden)) ||
        (rc = get_u32(c, root, f->heads, true, &m->heads)) ||
        (rc = get_u32(c, root, "vocab_size", true, &m->vocab)) ||
        (rc = get_u32(c, root, f->positions, true, &m->seq_len)))
        return rc;
    m->kv_heads = m->heads;
    m->head_dim = m->hidden / m->heads;
    /* GPT2MLP: n_inner None is 4 * n_embd (kept from wrapping: the shape's limits then refuse
     * the hidden size itself). */
    m->ffn_hidden = m->hidden <= UINT32_MAX / 4 ? 4 * m->hidden : UINT32_MAX;
    if ((rc = get_u32(c, root, "num_key_value_heads", false, &m->kv_heads)) ||
        (rc = get_u32(c, root, "head_dim", false, &m->head_dim)) ||
        (rc = get_u32(c, root, f->ffn, f->mlp == SPSIM_MLP_SWIGLU, &m->ffn_hidden)))
        return rc;
    if (!present(root, "head_dim") && m->hidden % m->heads != 0)
        return spsim_json_field_error(c, NULL, f->heads, "must divide %s (%u)", f->hidden,
                                      m->hidden);
    return SPSIM_OK;
}

/* An integer key that may be 0, null or absent (absent and null leave *out as it is). */
static int
get_count(const struct spsim_jctx *c, const cJSON *root, const char *key, uint32_t *out)
{
    if (!present(root, key))
        return SPSIM_OK;
    return spsim_json_get_u32(c, root, NULL, key, true, 0, UINT32_MAX, out);
}

/* Qwen3MoeDecoderLayer: MoE where layer_idx is not in mlp_only_layers and (layer_idx + 1) %
 * decoder_sparse_step == 0; every layer (step 1, no list) is what spsim reads. */
static int
qwen_moe_layers(const struct spsim_jctx *c, const cJSON *root)
{
    uint32_t step = 1;
    int rc = get_u32(c, root, "decoder_sparse_step", false, &step);
    if (rc == SPSIM_OK && step != 1)
        return spsim_json_field_error(c, NULL, "decoder_sparse_step",
                                      "MoE on every %u-th layer counted from 1 is not read (only "
                                      "1: every layer)",
                                      step);
    const cJSON *dense = cJSON_GetObjectItemCaseSensitive(root, "mlp_only_layers");
    if (rc == SPSIM_OK && dense && !cJSON_IsNull(dense) &&
        !(cJSON_IsArray(dense) && cJSON_GetArraySize(dense) == 0))
        return spsim_json_field_error(c, NULL, "mlp_only_layers",
                                      "dense layers among the MoE layers are not read (only [])");
    return rc;
}

/* DeepseekV3Config / DeepseekV2Config: shared experts, the dense first layers and frequency
 * (DeepseekV3DecoderLayer: MoE where layer_idx >= first_k_dense_replace and layer_idx %
 * moe_layer_freq == 0, spsim's rule), the score function, MLA's widths and the MTP layers. */
/* Group-limited routing: n_group and topk_group (Megatron-Bridge model_bridge.py maps them to
 * moe_router_num_groups and moe_router_group_topk); DeepSeek's "greedy" top-k ignores them. */
static int
group_limited(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m)
{
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "topk_method");
    if (cJSON_IsString(method) && strcmp(method->valuestring, "greedy") == 0)
        return SPSIM_OK;
    int rc = get_count(c, root, "n_group", &m->router_num_groups);
    return rc ? rc : get_count(c, root, "topk_group", &m->router_group_topk);
}

static int
deepseek_fields(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m)
{
    static const char *const scores[] = {"softmax", "sigmoid", NULL};
    uint32_t shared = 0, nope = 0, rope = 0;
    int score = 0, rc;
    if ((rc = get_count(c, root, "n_shared_experts", &shared)) ||
        (rc = get_count(c, root, "first_k_dense_replace", &m->moe_first_dense_layers)) ||
        (rc = get_u32(c, root, "moe_layer_freq", false, &m->moe_layer_freq)) ||
        (present(root, "scoring_func") &&
         (rc = spsim_json_get_enum(c, root, NULL, "scoring_func", true, scores, &score))) ||
        (rc = get_count(c, root, "q_lora_rank", &m->q_lora_rank)) ||
        (rc = get_u32(c, root, "kv_lora_rank", true, &m->kv_lora_rank)) ||
        (rc = get_u32(c, root, "qk_nope_head_dim", true, &nope)) ||
        (rc = get_u32(c, root, "qk_rope_head_dim", true, &rope)) ||
        (rc = get_u32(c, root, "v_head_dim", true, &m->v_head_dim)) ||
        (rc = get_count(c, root, "num_nextn_predict_layers", &m->mtp_layers)) ||
        (rc = group_limited(c, root, m)))
        return rc;
    if ((uint64_t)shared * m->expert_ffn_hidden > UINT32_MAX)
        return spsim_json_field_error(c, NULL, "n_shared_experts", "too many shared experts");
    m->shared_expert_ffn_hidden = shared * m->expert_ffn_hidden;
    m->router_score = (enum spsim_router_score)score;
    if ((uint64_t)nope + rope > UINT32_MAX) /* the sum must not wrap to a valid width */
        return spsim_json_field_error(c, NULL, "qk_rope_head_dim",
                                      "qk_nope_head_dim + qk_rope_head_dim exceeds 2^32 - 1");
    m->qk_head_dim = nope;
    m->qk_pos_emb_head_dim = rope;
    m->head_dim = nope + rope; /* the Q/K head width; transformers' head_dim is the rope part */
    return SPSIM_OK;
}

/* The router's auxiliary terms as Megatron-Bridge converts them: model_bridge.py maps
 * router_aux_loss_coef and aux_loss_alpha to moe_aux_loss_coeff (TransformerConfig's type
 * aux_loss); deepseek_v2_bridge.py and deepseek_v3_bridge.py set seq_aux_loss, and DeepSeek-V3's
 * aux-loss-free routing (topk_method "noaux_tc", its e_score_correction_bias) is Megatron's
 * expert bias (deepseek_v3_bridge.py moe_router_enable_expert_bias). */
static int
router_terms(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f,
             struct spsim_model_shape *m)
{
    const char *key = f->moe == HF_DEEPSEEK ? "aux_loss_alpha" : "router_aux_loss_coef";
    double coef = 0;
    if (present(root, key) &&
        spsim_json_get_double(c, root, NULL, key, true, 0, 1e9, &coef) != SPSIM_OK)
        return SPSIM_EFIELD;
    if (coef > 0)
        m->load_balancing =
            f->moe == HF_DEEPSEEK ? SPSIM_BALANCE_SEQ_AUX_LOSS : SPSIM_BALANCE_AUX_LOSS;
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(root, "topk_method");
    m->expert_bias = cJSON_IsString(method) && strcmp(method->valuestring, "noaux_tc") == 0;
    return SPSIM_OK;
}

/* gpt-oss: experts_per_token beside num_experts_per_tok, and the router as the bridge sets it,
 * moe_router_load_balancing_type "none" whatever router_aux_loss_coef says
 * (gpt_oss_bridge.py:71 at 067f987). */
static int
gpt_oss_fields(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f,
               struct spsim_model_shape *m)
{
    if (strcmp(f->type, "gpt_oss") != 0)
        return SPSIM_OK;
    uint32_t k = m->experts_per_token;
    int rc = get_u32(c, root, "experts_per_token", false, &k);
    if (rc == SPSIM_OK && k != m->experts_per_token)
        return spsim_json_field_error(c, NULL, "experts_per_token",
                                      "%u disagrees with num_experts_per_tok %u", k,
                                      m->experts_per_token);
    m->load_balancing = SPSIM_BALANCE_NONE;
    return rc;
}

/* The experts: how many, top-k and their width (Mixtral's intermediate_size, the others'
 * moe_intermediate_size), then the family's own keys. */
static int
read_moe(const struct spsim_jctx *c, const cJSON *root, const struct hf_family *f,
         struct spsim_model_shape *m)
{
    const char *key = f->moe == HF_MIXTRAL    ? "num_local_experts"
                      : f->moe == HF_QWEN_MOE ? "num_experts"
                                              : "n_routed_experts";
    int rc;
    m->expert_ffn_hidden = m->ffn_hidden;
    m->moe_layer_freq = 1;
    if ((rc = get_u32(c, root, key, true, &m->experts)) ||
        (rc = get_u32(c, root, "num_experts_per_tok", true, &m->experts_per_token)) ||
        (f->moe != HF_MIXTRAL &&
         (rc = get_u32(c, root, "moe_intermediate_size", true, &m->expert_ffn_hidden))))
        return rc;
    if ((rc = router_terms(c, root, f, m)) || (rc = gpt_oss_fields(c, root, f, m)))
        return rc;
    if (f->moe == HF_QWEN_MOE)
        return qwen_moe_layers(c, root);
    return f->moe == HF_DEEPSEEK ? deepseek_fields(c, root, m) : SPSIM_OK;
}

/* Qwen3-Next and Qwen3.5: hybrid models of Gated DeltaNet and gated attention layers
 * (hf_qwen_next.c), Nemotron-H and Nemotron 3: Mamba-2 hybrids (hf_nemotron_h.c); the sequence
 * defaults as below (neither has learned positions). */
static int
hybrid(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m,
       uint32_t *positions, char *pattern, size_t cap)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    bool qwen35 = strcmp(t->valuestring, "qwen3_5") == 0;
    int rc = strcmp(t->valuestring, "nemotron_h") == 0
                 ? spsim_hf_nemotron_h_read(c, root, m, pattern, cap)
                 : spsim_hf_qwen_next_read(c, root, qwen35, m, pattern, cap);
    *positions = m->seq_len;
    if (m->seq_len > SPSIM_HF_DEFAULT_SEQ)
        m->seq_len = SPSIM_HF_DEFAULT_SEQ;
    return rc;
}

/* Gemma3ForConditionalGeneration's config (model_type gemma3): its language model is
 * text_config, a gemma3_text config (Megatron-Bridge's Gemma3ModelBridge converts
 * Gemma3ForCausalLM, that model; gemma3_vl_bridge.py the whole), read in its place, the errors
 * naming it; the SigLIP vision tower (vision_config) and the image tokens' ids are left out
 * (model_file.c says so in the description). */
static const char *const gemma3_wrapper_keys[] = {"text_config",
                                                  "vision_config",
                                                  "boi_token_index",
                                                  "eoi_token_index",
                                                  "image_token_index",
                                                  "mm_tokens_per_image",
                                                  NULL};

static int
gemma3_text(const struct spsim_jctx *c, const cJSON **root, struct spsim_jctx *tc, char *origin,
            size_t cap)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(*root, "model_type");
    if (!cJSON_IsString(t) || strcmp(t->valuestring, "gemma3") != 0)
        return SPSIM_OK;
    int rc = spsim_hf_check_known(c, *root, NULL, gemma3_wrapper_keys, "Gemma 3");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(*root, "text_config");
    if (rc == SPSIM_OK && !cJSON_IsObject(text))
        return spsim_json_field_error(c, NULL, "text_config", "missing (Gemma 3's decoder)");
    t = cJSON_GetObjectItemCaseSensitive(text, "model_type");
    if (rc == SPSIM_OK && (!cJSON_IsString(t) || strcmp(t->valuestring, "gemma3_text") != 0))
        return spsim_json_field_error(c, "text_config", "model_type", "must be \"gemma3_text\"");
    snprintf(origin, cap, "%s: text_config", c->origin);
    *tc = (struct spsim_jctx){origin, c->err};
    *root = text;
    return rc;
}

/* Megatron-Bridge's converted vocabulary divisor (model_bridge.py make_vocab_size_divisible_by
 * at 067f987): the largest power of 2 up to 128 dividing the vocabulary (Gemma 3's 262208: 64). */
static uint32_t
bridge_vocab_divisor(uint32_t vocab)
{
    uint32_t by = 128;
    while (by > 1 && vocab % by != 0)
        by /= 2;
    return by;
}

int
spsim_hf_config_read(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m,
                     uint32_t *positions, char *pattern, size_t cap)
{
    const struct hf_family *f = NULL;
    int rc;
    memset(m, 0, sizeof(*m));
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (cJSON_IsString(t) &&
        (strcmp(t->valuestring, "qwen3_next") == 0 || strcmp(t->valuestring, "qwen3_5") == 0 ||
         strcmp(t->valuestring, "nemotron_h") == 0))
        return hybrid(c, root, m, positions, pattern, cap);
    struct spsim_jctx text_ctx = {NULL, NULL};
    char origin[512];
    if ((rc = gemma3_text(c, &root, &text_ctx, origin, sizeof(origin))))
        return rc;
    if (text_ctx.origin) /* Gemma 3: its text_config, the errors naming it */
        c = &text_ctx;
    if ((rc = find_family(c, root, &f)) || (rc = check_keys(c, root, f)) ||
        (rc = read_numbers(c, root, f, m)) || (f->moe && (rc = read_moe(c, root, f, m))) ||
        (rc = check_activation(c, root, f)) || (rc = read_dropout(c, root, m)) ||
        (rc = read_bias(c, root, f, m)) || (rc = read_rope(c, root, m)) ||
        (rc = check_variants(c, root, f)) || (rc = read_windows(c, root, f, m, m->seq_len)) ||
        (rc = check_generic(c, root)))
        return rc;
    /* max_position_embeddings is the context the model can take, not a training sequence
     * (Llama 3.1 and Qwen2.5 say 131072): with rotary positions the sequence defaults to 1024,
     * Megatron-Bridge's GPTModelProvider seq_length (gpt_provider.py at 067f987d) and
     * Megatron-LM's GPT model config's (megatron/training/models/gpt.py at d98e8a64), or the
     * positions if fewer; --seq sets it. Learned positions (GPT-2) are a table of that many rows:
     * the sequence stays theirs. */
    *positions = m->seq_len;
    if (f->position == SPSIM_POSITION_ROPE && m->seq_len > SPSIM_HF_DEFAULT_SEQ)
        m->seq_len = SPSIM_HF_DEFAULT_SEQ;
    m->tied_embeddings = f->tied;
    m->qk_norm = f->qk_norm;
    m->post_norms = f->post_norms;
    /* GptOssAttention's sinks, a learned logit per head: Megatron-Bridge trains them as TE's
     * softmax_offset (gpt_oss_bridge.py:86 softmax_type "learnable", :176 the sinks' mapping). */
    m->softmax_type =
        strcmp(f->type, "gpt_oss") == 0 ? SPSIM_SOFTMAX_LEARNABLE : SPSIM_SOFTMAX_VANILLA;
    /* Megatron-Bridge 067f987 scales the first stage's embedding output by sqrt(h) for Gemma
     * (gemma_provider.py:76-78, modules.py:40 EmbeddingScalingMixin) and Gemma 3
     * (gemma3_provider.py:120 and :281 Gemma3LanguageModelEmbedding), as transformers'
     * GemmaModel and Gemma3TextModel do (the normalizer). */
    m->embedding_scale = strcmp(f->type, "gemma") == 0 || strcmp(f->type, "gemma3_text") == 0;
    if (f->post_norms)
        m->vocab_divisible_by = bridge_vocab_divisor(m->vocab);
    if ((rc = get_bool(c, root, "tie_word_embeddings", &m->tied_embeddings)))
        return rc;
    if (strcmp(f->type, "gpt2") == 0 && !m->tied_embeddings)
        return spsim_json_field_error(c, NULL, "tie_word_embeddings",
                                      "GPT2LMHeadModel always ties the output layer");
    m->mlp = f->mlp;
    m->norm = f->norm;
    m->position = f->position;
    /* Training runs use fused attention kernels (Megatron-Core's default backend, transformers'
     * sdpa); --no-flash-attn asks for the 2022 kernel. */
    m->attention = SPSIM_ATTENTION_FLASH;
    return SPSIM_OK;
}

bool
spsim_hf_config_is(const cJSON *root)
{
    return !cJSON_GetObjectItemCaseSensitive(root, "schema") &&
           cJSON_GetObjectItemCaseSensitive(root, "model_type");
}

const char *
spsim_hf_config_name(const char *origin, char *buf, size_t cap)
{
    /* ".../Meta-Llama-3-8B/config.json" is the model Meta-Llama-3-8B; another FILE.json is FILE. */
    const char *base = strrchr(origin, '/');
    base = base ? base + 1 : origin;
    size_t n = strlen(base);
    if (strcmp(base, "config.json") == 0 && base > origin + 1) {
        const char *dir = base - 1;
        while (dir > origin && dir[-1] != '/')
            dir--;
        base = dir;
        n = (size_t)(origin + strlen(origin) - 12 - dir);
    } else if (n > 5 && strcmp(base + n - 5, ".json") == 0) {
        n -= 5;
    }
    snprintf(buf, cap, "%.*s", (int)n, base);
    if (strcmp(buf, ".") == 0 || strcmp(buf, "..") == 0 || !buf[0])
        snprintf(buf, cap, "hf-config");
    return buf;
}
