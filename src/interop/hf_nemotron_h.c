/*
 * Nemotron-H and Nemotron 3 config.json files (model_type nemotron_h, NemotronHForCausalLM) read
 * as hybrid models in Megatron-Core's pattern symbols (models/hybrid/hybrid_layer_allocation.py
 * at Megatron-LM d98e8a6), as Megatron-Bridge converts them (NVIDIA-NeMo/Megatron-Bridge
 * src/megatron/bridge/models/nemotronh/nemotron_h_bridge.py at 067f987, NemotronHBridge):
 * CONFIG_MAPPING's mamba_head_dim, mamba_num_heads, chunk_size (mamba_chunk_size), n_groups
 * (mamba_num_groups), ssm_state_size (mamba_state_dim), hybrid_override_pattern
 * (hybrid_layer_pattern) and the base mapping's (model_bridge.py: n_routed_experts,
 * num_experts_per_tok, moe_intermediate_size, n_group, topk_group, num_nextn_predict_layers);
 * provider_bridge's position embedding none, squared ReLU, the sigmoid router with expert bias
 * and seq_aux_loss, moe_latent_size, and the MTP depth (mtp_hybrid_override_pattern, repeated:
 * mtp_use_repeated_layer defaults to True). Files written by newer transformers give the layers
 * as layers_block_type names (mamba, attention, moe, mlp) instead of the pattern: the mapping of
 * ai-dynamo/aiconfigurator aic-core/src/aiconfigurator_core/sdk/utils.py
 * _derive_nemotronh_hybrid_pattern (095f58a5).
 */
#include "config.h"

#include <string.h>

#include "hf_config.h"
#include "profiles/jsonfield.h"

/* The keys of NemotronHConfig that spsim reads, and those that change nothing it computes
 * (beyond the identity, token ids, use_cache and initializer_range every reader accepts:
 * hf_common.c): the norms' epsilons, initialisation (rescale_prenorm_residual,
 * time_step_min/max/floor: dt_bias's initial range), the clamp of dt (time_step_limit),
 * inference (num_logits_to_keep, mamba_ssm_cache_dtype,
 * use_mamba_kernels), the routing's normalisation and scale (norm_topk_prob,
 * routed_scaling_factor: no FLOP or byte spsim counts), rope_theta and partial_rotary_factor
 * (the model has no position embedding: provider_bridge sets "none"), expand and time_step_rank
 * (the Mamba-2 mixer's width is mamba_num_heads × mamba_head_dim, which Bridge maps; dt is one
 * per head), moe_shared_expert_overlap (when the shared expert runs, not what it computes). */
static const char *const known[] = {"auto_map",
                                    "num_logits_to_keep",
                                    "rescale_prenorm_residual",
                                    "rms_norm_eps",
                                    "layer_norm_epsilon",
                                    "norm_eps",
                                    "rope_theta",
                                    "partial_rotary_factor",
                                    "vocab_size",
                                    "tie_word_embeddings",
                                    "num_hidden_layers",
                                    "hidden_size",
                                    "num_attention_heads",
                                    "num_key_value_heads",
                                    "head_dim",
                                    "attention_head_dim",
                                    "intermediate_size",
                                    "max_position_embeddings",
                                    "mlp_hidden_act",
                                    "attention_bias",
                                    "mlp_bias",
                                    "use_bias",
                                    "attention_dropout",
                                    "hidden_dropout",
                                    "residual_in_fp32",
                                    "sliding_window",
                                    "hybrid_override_pattern",
                                    "layers_block_type",
                                    "mamba_num_heads",
                                    "mamba_head_dim",
                                    "ssm_state_size",
                                    "n_groups",
                                    "conv_kernel",
                                    "chunk_size",
                                    "expand",
                                    "time_step_rank",
                                    "time_step_min",
                                    "time_step_max",
                                    "time_step_floor",
                                    "time_step_limit",
                                    "mamba_hidden_act",
                                    "mamba_proj_bias",
                                    "use_conv_bias",
                                    "use_mamba_kernels",
                                    "mamba_ssm_cache_dtype",
                                    "n_routed_experts",
                                    "num_experts_per_tok",
                                    "moe_intermediate_size",
                                    "moe_shared_expert_intermediate_size",
                                    "n_shared_experts",
                                    "moe_latent_size",
                                    "moe_shared_expert_overlap",
                                    "n_group",
                                    "topk_group",
                                    "norm_topk_prob",
                                    "routed_scaling_factor",
                                    "num_nextn_predict_layers",
                                    "mtp_hybrid_override_pattern",
                                    "mtp_layers_block_type",
                                    NULL};

static int
check_known(const struct spsim_jctx *c, const cJSON *root)
{
    return spsim_hf_check_known(c, root, NULL, known, "Nemotron-H");
}

static int
get_u32(const struct spsim_jctx *c, const cJSON *o, const char *key, bool required, uint32_t *out)
{
    return spsim_hf_get_u32(c, o, NULL, key, required, out);
}

/* A pattern from its string key, else from its list of block names, into buf (cap bytes). */
static int
read_blocks(const struct spsim_jctx *c, const cJSON *root, const char *key, const char *list,
            char *buf, size_t cap)
{
    static const struct {
        const char *name;
        char symbol;
    } blocks[] = {{"mamba", 'M'}, {"attention", '*'}, {"moe", 'E'}, {"mlp", '-'}};
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, key);
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(root, list);
    buf[0] = '\0';
    if (s && !cJSON_IsNull(s)) {
        if (!cJSON_IsString(s) || strlen(s->valuestring) >= cap)
            return spsim_json_field_error(c, NULL, key, "must be a string of at most %zu symbols",
                                          cap - 1);
        strcpy(buf, s->valuestring);
        return SPSIM_OK;
    }
    size_t n = 0;
    for (const cJSON *e = cJSON_IsArray(l) ? l->child : NULL; e; e = e->next) {
        size_t i = 0;
        while (i < SPSIM_ARRAY_LENGTH(blocks) &&
               !(cJSON_IsString(e) && strcmp(e->valuestring, blocks[i].name) == 0))
            i++;
        if (i == SPSIM_ARRAY_LENGTH(blocks) || n + 1 >= cap)
            return spsim_json_field_error(c, NULL, list,
                                          "entry %zu must be \"mamba\", \"attention\", \"moe\" or "
                                          "\"mlp\" (at most %zu entries)",
                                          n, cap - 1);
        buf[n++] = blocks[i].symbol;
    }
    buf[n] = '\0';
    return SPSIM_OK;
}

/* What the layer has beyond the numbers, refused unless it is what Megatron's HybridModel
 * builds: squared ReLU (mlp_hidden_act relu2), Mamba-2's SiLU, no biases but the convolution's
 * (MambaMixer asserts not bias and conv_bias), no dropout, a bf16 residual, no window. */
static int
check_layer(const struct spsim_jctx *c, const cJSON *root)
{
    static const struct {
        const char *key, *want;
    } acts[] = {{"mlp_hidden_act", "relu2"}, {"mamba_hidden_act", "silu"}};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(acts); i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, acts[i].key);
        if (a && !(cJSON_IsString(a) && strcmp(a->valuestring, acts[i].want) == 0))
            return spsim_json_field_error(c, NULL, acts[i].key, "spsim models \"%s\" here",
                                          acts[i].want);
    }
    static const char *const off[] = {"attention_bias", "mlp_bias", "use_bias", "mamba_proj_bias",
                                      "residual_in_fp32"};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(off); i++)
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, off[i])))
            return spsim_json_field_error(c, NULL, off[i], "true is not modelled (false is)");
    const cJSON *conv = cJSON_GetObjectItemCaseSensitive(root, "use_conv_bias");
    if (conv && !cJSON_IsTrue(conv))
        return spsim_json_field_error(c, NULL, "use_conv_bias",
                                      "Megatron's MambaMixer always has the convolution's bias");
    if (spsim_hf_present(root, "sliding_window"))
        return spsim_json_field_error(c, NULL, "sliding_window",
                                      "sliding-window attention is not modelled (null is)");
    static const char *const drops[] = {"attention_dropout", "hidden_dropout"};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(drops); i++) {
        double p = 0;
        int rc = spsim_hf_present(root, drops[i])
                     ? spsim_json_get_double(c, root, NULL, drops[i], true, 0, 1, &p)
                     : SPSIM_OK;
        if (rc != SPSIM_OK || p > 0)
            return rc ? rc : spsim_json_field_error(c, NULL, drops[i], "dropout is not modelled");
    }
    return SPSIM_OK;
}

/* The decoder's, the attention's and the Mamba-2 mixer's numbers. */
static int
read_numbers(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m)
{
    int rc;
    if ((rc = get_u32(c, root, "hidden_size", true, &m->hidden)) ||
        (rc = get_u32(c, root, "num_attention_heads", true, &m->heads)) ||
        (rc = get_u32(c, root, "num_key_value_heads", true, &m->kv_heads)) ||
        (rc = get_u32(c, root, "intermediate_size", true, &m->ffn_hidden)) ||
        (rc = get_u32(c, root, "vocab_size", true, &m->vocab)) ||
        (rc = get_u32(c, root, "max_position_embeddings", true, &m->seq_len)) ||
        (rc = get_u32(c, root, "mamba_num_heads", true, &m->mamba_heads)) ||
        (rc = get_u32(c, root, "mamba_head_dim", true, &m->mamba_head_dim)) ||
        (rc = get_u32(c, root, "ssm_state_size", true, &m->mamba_state_dim)) ||
        (rc = get_u32(c, root, "n_groups", true, &m->mamba_groups)) ||
        (rc = get_u32(c, root, "conv_kernel", false, &m->mamba_conv)) ||
        (rc = get_u32(c, root, "chunk_size", false, &m->mamba_chunk)))
        return rc;
    if (m->heads == 0)
        return spsim_json_field_error(c, NULL, "num_attention_heads", "must be > 0");
    /* Bridge: kv_channels from head_dim, else attention_head_dim, else h / heads. */
    m->head_dim = m->hidden / m->heads;
    if ((rc = get_u32(c, root, "attention_head_dim", false, &m->head_dim)) ||
        (rc = get_u32(c, root, "head_dim", false, &m->head_dim)))
        return rc;
    return SPSIM_OK;
}

/* The experts of the MoE layers ('E') with the router provider_bridge sets: sigmoid scores,
 * expert bias, seq_aux_loss (moe_aux_loss_coeff 1e-4), dropless; one shared expert of
 * moe_shared_expert_intermediate_size (Bridge maps that width, n_shared_experts not). */
static int
read_moe(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m)
{
    uint32_t shared_n = 1;
    int rc;
    if ((rc = get_u32(c, root, "n_routed_experts", false, &m->experts)) || m->experts == 0)
        return rc;
    if ((rc = get_u32(c, root, "num_experts_per_tok", true, &m->experts_per_token)) ||
        (rc = get_u32(c, root, "moe_intermediate_size", true, &m->expert_ffn_hidden)) ||
        (rc = get_u32(c, root, "moe_shared_expert_intermediate_size", false,
                      &m->shared_expert_ffn_hidden)) ||
        (rc = get_u32(c, root, "n_shared_experts", false, &shared_n)) ||
        (rc = get_u32(c, root, "moe_latent_size", false, &m->moe_latent)) ||
        (rc = get_u32(c, root, "n_group", false, &m->router_num_groups)) ||
        (rc = get_u32(c, root, "topk_group", false, &m->router_group_topk)))
        return rc;
    if (shared_n != 1 && m->shared_expert_ffn_hidden)
        return spsim_json_field_error(c, NULL, "n_shared_experts",
                                      "%u: spsim reads one shared expert of "
                                      "moe_shared_expert_intermediate_size (as Bridge maps it)",
                                      shared_n);
    m->router_score = SPSIM_ROUTER_SIGMOID;
    m->expert_bias = true;
    m->load_balancing = SPSIM_BALANCE_SEQ_AUX_LOSS;
    m->moe_layer_freq = 1;
    return SPSIM_OK;
}

/* The decoder's pattern (its length the layer count: num_hidden_layers, when given, must
 * agree) and the MTP depth's after it in the same buffer. */
static int
read_patterns(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m,
              char *pattern, size_t cap)
{
    size_t half = cap / 2;
    uint32_t layers = 0;
    int rc = read_blocks(c, root, "hybrid_override_pattern", "layers_block_type", pattern, half);
    if (rc == SPSIM_OK)
        rc = read_blocks(c, root, "mtp_hybrid_override_pattern", "mtp_layers_block_type",
                         pattern + half, cap - half);
    if (rc == SPSIM_OK)
        rc = get_u32(c, root, "num_hidden_layers", false, &layers);
    if (rc == SPSIM_OK)
        rc = get_u32(c, root, "num_nextn_predict_layers", false, &m->mtp_layers);
    if (rc != SPSIM_OK)
        return rc;
    if (!pattern[0])
        return spsim_json_field_error(c, NULL, "hybrid_override_pattern",
                                      "missing (or layers_block_type): the layers' kinds");
    if (layers && layers != strlen(pattern))
        return spsim_json_field_error(c, NULL, "num_hidden_layers",
                                      "is %u but the pattern has %zu layers", layers,
                                      strlen(pattern));
    if (m->mtp_layers && !pattern[half])
        return spsim_json_field_error(c, NULL, "num_nextn_predict_layers",
                                      "needs mtp_hybrid_override_pattern (nemotron_h_bridge.py)");
    m->layers = (uint32_t)strlen(pattern);
    m->hybrid_pattern = pattern;
    m->mtp_pattern = m->mtp_layers ? pattern + half : NULL;
    m->mtp_shared = m->mtp_layers > 0; /* mtp_use_repeated_layer, True by default */
    return SPSIM_OK;
}

int
spsim_hf_nemotron_h_read(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m,
                         char *pattern, size_t cap)
{
    int rc;
    if ((rc = check_known(c, root)) || (rc = check_layer(c, root)) ||
        (rc = read_numbers(c, root, m)) || (rc = read_moe(c, root, m)) ||
        (rc = read_patterns(c, root, m, pattern, cap)))
        return rc;
    m->tied_embeddings =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings"));
    m->mlp = SPSIM_MLP_RELU2;
    m->norm = SPSIM_NORM_RMSNORM;
    m->position = SPSIM_POSITION_NONE;
    m->attention = SPSIM_ATTENTION_FLASH;
    return SPSIM_OK;
}
