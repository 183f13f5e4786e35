/*
 * Qwen3-Next and Qwen3.5 config.json files (model_type qwen3_next; qwen3_5 with its language
 * model in text_config) read as hybrid models in Megatron-Core's pattern symbols
 * (models/hybrid/hybrid_layer_allocation.py at Megatron-LM d98e8a6): each decoder layer of
 * transformers' Qwen3NextDecoderLayer is a mixer ('G' for a "linear_attention" layer, the Gated
 * DeltaNet; '*' for a "full_attention" one, gated attention with Q/K norms) followed by its FFN
 * ('E' for a sparse MoE block, '-' for a dense MLP), each its own norm and residual, as in
 * HybridStack. The layer types come from layer_types, else full_attention_interval (layer i
 * full when (i + 1) % interval == 0, Qwen3NextConfig's rule).
 */
#include "config.h"

#include <string.h>

#include "hf_config.h"
#include "profiles/jsonfield.h"

/* The keys of Qwen3NextConfig and of Qwen3.5's text_config (beyond the identity, token ids,
 * use_cache and initializer_range every reader accepts: hf_common.c): the layer's numbers, the
 * routing options (norm_topk_prob, output_router_logits change no FLOP spsim counts), the
 * multimodal wrapper's token ids and the stored dtypes (mamba_ssm_dtype: the inference state
 * cache's). */
static const char *const known[] = {"rms_norm_eps",
                                    "rope_theta",
                                    "rope_scaling",
                                    "rope_parameters",
                                    "partial_rotary_factor",
                                    "vocab_size",
                                    "tie_word_embeddings",
                                    "num_hidden_layers",
                                    "hidden_size",
                                    "num_attention_heads",
                                    "num_key_value_heads",
                                    "head_dim",
                                    "intermediate_size",
                                    "max_position_embeddings",
                                    "hidden_act",
                                    "attention_bias",
                                    "attention_dropout",
                                    "attn_output_gate",
                                    "use_sliding_window",
                                    "layer_types",
                                    "full_attention_interval",
                                    "linear_conv_kernel_dim",
                                    "linear_key_head_dim",
                                    "linear_value_head_dim",
                                    "linear_num_key_heads",
                                    "linear_num_value_heads",
                                    "num_experts",
                                    "num_experts_per_tok",
                                    "moe_intermediate_size",
                                    "shared_expert_intermediate_size",
                                    "decoder_sparse_step",
                                    "mlp_only_layers",
                                    "norm_topk_prob",
                                    "output_router_logits",
                                    "router_aux_loss_coef",
                                    "mtp_num_hidden_layers",
                                    "mtp_use_dedicated_embeddings",
                                    "mamba_ssm_dtype",
                                    "text_config",
                                    "vision_config",
                                    "image_token_id",
                                    "video_token_id",
                                    "vision_start_token_id",
                                    "vision_end_token_id",
                                    NULL};

static int
check_known(const struct spsim_jctx *c, const cJSON *obj, const char *prefix)
{
    return spsim_hf_check_known(c, obj, prefix, known, "Qwen3-Next or Qwen3.5");
}

static int
get_u32(const struct spsim_jctx *c, const cJSON *o, const char *p, const char *key, bool required,
        uint32_t *out)
{
    return spsim_hf_get_u32(c, o, p, key, required, out);
}

/* The decoder's numbers, the Gated DeltaNet's and the experts'. */
static int
read_numbers(const struct spsim_jctx *c, const cJSON *t, const char *p, struct spsim_model_shape *m,
             uint32_t *layers)
{
    uint32_t shared = 0;
    int rc;
    if ((rc = get_u32(c, t, p, "num_hidden_layers", true, layers)) ||
        (rc = get_u32(c, t, p, "hidden_size", true, &m->hidden)) ||
        (rc = get_u32(c, t, p, "num_attention_heads", true, &m->heads)) ||
        (rc = get_u32(c, t, p, "num_key_value_heads", true, &m->kv_heads)) ||
        (rc = get_u32(c, t, p, "head_dim", true, &m->head_dim)) ||
        (rc = get_u32(c, t, p, "intermediate_size", true, &m->ffn_hidden)) ||
        (rc = get_u32(c, t, p, "vocab_size", true, &m->vocab)) ||
        (rc = get_u32(c, t, p, "max_position_embeddings", true, &m->seq_len)) ||
        (rc = get_u32(c, t, p, "linear_conv_kernel_dim", true, &m->gdn_conv)) ||
        (rc = get_u32(c, t, p, "linear_key_head_dim", true, &m->gdn_key_head_dim)) ||
        (rc = get_u32(c, t, p, "linear_value_head_dim", true, &m->gdn_value_head_dim)) ||
        (rc = get_u32(c, t, p, "linear_num_key_heads", true, &m->gdn_key_heads)) ||
        (rc = get_u32(c, t, p, "linear_num_value_heads", true, &m->gdn_value_heads)) ||
        (rc = get_u32(c, t, p, "num_experts", false, &m->experts)) ||
        (rc = get_u32(c, t, p, "num_experts_per_tok", m->experts > 0, &m->experts_per_token)) ||
        (rc = get_u32(c, t, p, "moe_intermediate_size", m->experts > 0, &m->expert_ffn_hidden)) ||
        (rc = get_u32(c, t, p, "shared_expert_intermediate_size", false, &shared)) ||
        (rc = get_u32(c, t, p, "mtp_num_hidden_layers", false, &m->mtp_layers)))
        return rc;
    if (*layers == 0 || *layers > UINT32_MAX / 2)
        return spsim_json_field_error(c, p, "num_hidden_layers", "must be in [1, 2^31)");
    /* Qwen3NextSparseMoeBlock: one shared expert of that width behind a sigmoid gate
     * (shared_expert_gate, Linear(h, 1)): Megatron's --moe-shared-expert-gate. */
    m->shared_expert_ffn_hidden = m->experts ? shared : 0;
    m->moe_shared_expert_gate = m->experts && shared;
    return SPSIM_OK;
}

/* Whether decoder layer i is full attention: layer_types, else full_attention_interval. */
static int
layer_is_full(const struct spsim_jctx *c, const cJSON *t, const char *p, uint32_t i, bool *full)
{
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(t, "layer_types");
    if (types && !cJSON_IsNull(types)) {
        const cJSON *e = cJSON_IsArray(types) ? cJSON_GetArrayItem(types, (int)i) : NULL;
        const char *s = cJSON_IsString(e) ? e->valuestring : "";
        *full = strcmp(s, "full_attention") == 0;
        if (!*full && strcmp(s, "linear_attention") != 0)
            return spsim_json_field_error(c, p, "layer_types",
                                          "entry %u must be \"linear_attention\" or "
                                          "\"full_attention\" (one per layer)",
                                          i);
        return SPSIM_OK;
    }
    uint32_t every = 4;
    int rc = get_u32(c, t, p, "full_attention_interval", false, &every);
    if (rc == SPSIM_OK && every == 0)
        return spsim_json_field_error(c, p, "full_attention_interval", "must be > 0");
    *full = (i + 1) % every == 0;
    return rc;
}

/* Whether layer i's FFN is the MoE block (Qwen3NextDecoderLayer: num_experts > 0, i not in
 * mlp_only_layers and (i + 1) % decoder_sparse_step == 0). */
static int
layer_is_moe(const struct spsim_jctx *c, const cJSON *t, const char *p,
             const struct spsim_model_shape *m, uint32_t i, bool *moe)
{
    uint32_t step = 1;
    int rc = get_u32(c, t, p, "decoder_sparse_step", false, &step);
    if (rc != SPSIM_OK || step == 0)
        return rc ? rc : spsim_json_field_error(c, p, "decoder_sparse_step", "must be > 0");
    *moe = m->experts > 0 && (i + 1) % step == 0;
    const cJSON *dense = cJSON_GetObjectItemCaseSensitive(t, "mlp_only_layers");
    for (const cJSON *d = cJSON_IsArray(dense) ? dense->child : NULL; *moe && d; d = d->next)
        *moe = !(cJSON_IsNumber(d) && d->valuedouble == (double)i);
    return SPSIM_OK;
}

static int
read_pattern(const struct spsim_jctx *c, const cJSON *t, const char *p,
             const struct spsim_model_shape *m, uint32_t layers, char *pattern, size_t cap)
{
    if ((size_t)layers * 2 + 1 > cap)
        return spsim_json_field_error(c, p, "num_hidden_layers", "must not exceed %zu",
                                      (cap - 1) / 2);
    for (uint32_t i = 0; i < layers; i++) {
        bool full = false, moe = false;
        int rc;
        if ((rc = layer_is_full(c, t, p, i, &full)) || (rc = layer_is_moe(c, t, p, m, i, &moe)))
            return rc;
        pattern[2 * i] = full ? '*' : 'G';
        pattern[2 * i + 1] = moe ? 'E' : '-';
    }
    pattern[2 * layers] = '\0';
    return SPSIM_OK;
}

/* What the layer has beyond the numbers: SiLU, no biases, no dropout, gated attention,
 * partial rotary embedding, the router's auxiliary loss, shared MTP embeddings. */
static int
read_layer(const struct spsim_jctx *c, const cJSON *t, const char *p, bool qwen35,
           struct spsim_model_shape *m)
{
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(t, "hidden_act");
    if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "silu") == 0))
        return spsim_json_field_error(c, p, "hidden_act", "spsim models \"silu\" (SwiGLU) here");
    static const char *const off[] = {"attention_bias", "use_sliding_window",
                                      "mtp_use_dedicated_embeddings"};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(off); i++)
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, off[i])))
            return spsim_json_field_error(c, p, off[i], "true is not modelled (false is)");
    double drop = 0, coef = 0, rot = 1;
    const cJSON *rope = cJSON_GetObjectItemCaseSensitive(t, "rope_parameters");
    const cJSON *rot_at = spsim_hf_present(t, "partial_rotary_factor") ? t : rope;
    int rc;
    if ((spsim_hf_present(t, "attention_dropout") &&
         (rc = spsim_json_get_double(c, t, p, "attention_dropout", true, 0, 1, &drop))) ||
        (spsim_hf_present(t, "router_aux_loss_coef") &&
         (rc = spsim_json_get_double(c, t, p, "router_aux_loss_coef", true, 0, 1e9, &coef))) ||
        (cJSON_IsObject(rot_at) && spsim_hf_present(rot_at, "partial_rotary_factor") &&
         (rc = spsim_json_get_double(c, rot_at, rot_at == t ? p : "rope_parameters",
                                     "partial_rotary_factor", true, 0.001, 1, &rot))))
        return rc;
    if (drop > 0)
        return spsim_json_field_error(c, p, "attention_dropout",
                                      "dropout on attention probabilities only is not modelled");
    /* Qwen3NextAttention always gates its output (q_proj of 2·heads·head_dim); Qwen3.5 says
     * so in attn_output_gate. */
    m->attention_output_gate =
        !qwen35 || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "attn_output_gate"));
    m->rotary_percent = rot;
    /* qwen3_next_bridge.py (Megatron-Bridge 067f987): moe_router_load_balancing_type
     * "global_aux_loss" with router_aux_loss_coef. */
    m->load_balancing = m->experts && coef > 0 ? SPSIM_BALANCE_GLOBAL_AUX_LOSS : m->load_balancing;
    if (m->mtp_layers) /* one gated-attention layer and a dense MLP per depth */
        m->mtp_pattern = "*-";
    return SPSIM_OK;
}

int
spsim_hf_qwen_next_read(const struct spsim_jctx *c, const cJSON *root, bool qwen35,
                        struct spsim_model_shape *m, char *pattern, size_t cap)
{
    const cJSON *t = root;
    const char *p = NULL;
    int rc = check_known(c, root, NULL);
    if (rc == SPSIM_OK && qwen35) {
        t = cJSON_GetObjectItemCaseSensitive(root, "text_config");
        p = "text_config";
        if (!cJSON_IsObject(t))
            return spsim_json_field_error(c, NULL, "text_config", "missing (Qwen3.5's decoder)");
        rc = check_known(c, t, p);
    }
    uint32_t layers = 0;
    if (rc || (rc = read_numbers(c, t, p, m, &layers)) || (rc = read_layer(c, t, p, qwen35, m)) ||
        (rc = read_pattern(c, t, p, m, layers, pattern, cap)))
        return rc;
    m->layers = 2 * layers;
    m->hybrid_pattern = pattern;
    m->qk_norm = true; /* Qwen3NextAttention's q_norm and k_norm over head_dim */
    m->tied_embeddings =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings")) ||
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "tie_word_embeddings"));
    m->mlp = SPSIM_MLP_SWIGLU;
    m->norm = SPSIM_NORM_RMSNORM;
    m->position = SPSIM_POSITION_ROPE;
    m->attention = SPSIM_ATTENTION_FLASH;
    return SPSIM_OK;
}
