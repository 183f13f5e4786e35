/*
 * Hybrid state-space models (issue 25): the hybrid layer pattern and the Mamba-2 fields of a
 * model profile, read, defaulted and checked as Megatron-Core checks them, and the exact
 * parameters of each kind of hybrid layer, at Megatron-LM d98e8a6:
 *   models/hybrid/hybrid_layer_allocation.py  the pattern's symbols and their rules;
 *   models/hybrid/hybrid_layer_specs.py       what each symbol builds (hybrid_stack_spec);
 *   ssm/mamba_mixer.py                        the Mamba-2 mixer's parameters and asserts;
 *   ssm/gated_delta_net/common.py             the Gated DeltaNet mixer's parameters;
 *   transformer/transformer_config.py         its linear_* defaults and asserts.
 * Every field is optional; a profile without `hybrid_pattern` is the transformer it always was.
 */
#include "config.h"

#include <string.h>

#include "jsonfield.h"
#include "profiles.h"

#define MAX_MAMBA 1048576u

/* The symbols of hybrid_layer_allocation.py Symbols that spsim builds, in enum spsim_layer_kind
 * order from SPSIM_LAYER_MAMBA. */
static const char kind_symbols[] = "M*-EG";

/* The symbols Megatron accepts that spsim does not build, and why. */
static const char *
refused_symbol(char c)
{
    switch (c) {
    case 'D':
        return "'D' (a DeepSeek sparse-attention layer) is not modelled";
    case '+':
        return "'+' (a multi-latent attention layer) is not modelled in a hybrid model";
    case '|':
        return "'|' splits pipeline stages: that is a parallel layout, give it as "
               "pipeline_layout (--pipeline-layout)";
    case '/':
        return "'/' starts the MTP patterns: give them as mtp_pattern and mtp_layers";
    default:
        return NULL;
    }
}

enum spsim_layer_kind
spsim_hybrid_symbol_kind(char c)
{
    const char *p = c ? strchr(kind_symbols, c) : NULL;
    return p ? (enum spsim_layer_kind)(SPSIM_LAYER_MAMBA + (p - kind_symbols))
             : SPSIM_LAYER_TRANSFORMER;
}

char
spsim_hybrid_kind_symbol(enum spsim_layer_kind k)
{
    return k >= SPSIM_LAYER_MAMBA && k < SPSIM_LAYER_KIND_COUNT ? kind_symbols[k - 1] : '?';
}

uint32_t
spsim_hybrid_count(const char *pattern, enum spsim_layer_kind k)
{
    uint32_t n = 0;
    for (const char *p = pattern; p && *p; p++)
        n += spsim_hybrid_symbol_kind(*p) == k;
    return n;
}

/* A pattern's symbols: each one spsim builds (NULL), or the reason it is refused. */
static int
check_symbols(const struct spsim_jctx *c, const char *key, const char *pattern)
{
    for (const char *p = pattern; *p; p++) {
        if (spsim_hybrid_symbol_kind(*p) != SPSIM_LAYER_TRANSFORMER)
            continue;
        const char *why = refused_symbol(*p);
        if (why)
            return spsim_json_field_error(c, NULL, key, "at offset %u: %s", (unsigned)(p - pattern),
                                          why);
        return spsim_json_field_error(c, NULL, key,
                                      "at offset %u: '%c' is not a layer symbol (M Mamba, G "
                                      "Gated DeltaNet, * attention, - MLP, E MoE; "
                                      "hybrid_layer_allocation.py)",
                                      (unsigned)(p - pattern), *p);
    }
    return SPSIM_OK;
}

static const char *const mamba_keys[] = {"mamba_heads",  "mamba_head_dim", "mamba_state_dim",
                                         "mamba_groups", "mamba_conv",     "mamba_chunk"};

static const char *const gdn_keys[] = {"gdn_key_heads", "gdn_value_heads", "gdn_key_head_dim",
                                       "gdn_value_head_dim", "gdn_conv"};

int
spsim_model_read_hybrid(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m)
{
    int rc;
    uint32_t *dst[] = {&m->mamba_heads,  &m->mamba_head_dim, &m->mamba_state_dim,
                       &m->mamba_groups, &m->mamba_conv,     &m->mamba_chunk};
    uint32_t *gdn[] = {&m->gdn_key_heads, &m->gdn_value_heads, &m->gdn_key_head_dim,
                       &m->gdn_value_head_dim, &m->gdn_conv};
    if ((rc = spsim_json_get_string(c, root, NULL, "hybrid_pattern", false, true,
                                    &m->hybrid_pattern)) ||
        (rc = spsim_json_get_string(c, root, NULL, "mtp_pattern", false, true, &m->mtp_pattern)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "mtp_shared", false, &m->mtp_shared)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "moe_latent", false, 1, MAX_MAMBA, &m->moe_latent)))
        return rc;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(mamba_keys); i++)
        if ((rc = spsim_json_get_u32(c, root, NULL, mamba_keys[i], false, 1, MAX_MAMBA, dst[i])))
            return rc;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(gdn_keys); i++)
        if ((rc = spsim_json_get_u32(c, root, NULL, gdn_keys[i], false, 1, MAX_MAMBA, gdn[i])))
            return rc;
    return SPSIM_OK;
}

/* transformer_config.py's defaults (linear_conv_kernel_dim 4, linear_key_head_dim 128,
 * linear_value_head_dim 128, linear_num_key_heads 16, linear_num_value_heads 32), for a model
 * with 'G' layers. */
static void
gdn_defaults(struct spsim_model_shape *m)
{
    if (!m->hybrid_pattern || !strchr(m->hybrid_pattern, 'G'))
        return;
    static const uint32_t dflt[] = {16, 32, 128, 128, 4};
    uint32_t *gdn[] = {&m->gdn_key_heads, &m->gdn_value_heads, &m->gdn_key_head_dim,
                       &m->gdn_value_head_dim, &m->gdn_conv};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(dflt); i++)
        if (!*gdn[i])
            *gdn[i] = dflt[i];
}

/* Megatron's defaults (transformer_config.py mamba_head_dim 64, mamba_state_dim 128,
 * mamba_num_groups 8, mamba_num_heads None: hidden·expand / head_dim with MambaMixer's
 * expand 2; MambaMixer d_conv 4, chunk_size 128). Nothing for a model without Mamba layers. */
void
spsim_hybrid_defaults(struct spsim_model_shape *m)
{
    gdn_defaults(m);
    if (!m->hybrid_pattern || !strchr(m->hybrid_pattern, 'M'))
        return;
    if (!m->mamba_head_dim)
        m->mamba_head_dim = 64;
    if (!m->mamba_state_dim)
        m->mamba_state_dim = 128;
    if (!m->mamba_groups)
        m->mamba_groups = 8;
    if (!m->mamba_conv)
        m->mamba_conv = 4;
    if (!m->mamba_chunk)
        m->mamba_chunk = 128;
    if (!m->mamba_heads && 2ull * m->hidden % m->mamba_head_dim == 0)
        m->mamba_heads = (uint32_t)(2ull * m->hidden / m->mamba_head_dim);
}

/* The Mamba mixer's asserts (mamba_mixer.py __init__): d_inner = heads·head_dim (2h by default,
 * which head_dim must divide), heads divisible by groups. */
static int
check_mamba(const struct spsim_model_shape *m, const struct spsim_jctx *c)
{
    bool mamba = m->hybrid_pattern && strchr(m->hybrid_pattern, 'M');
    const uint32_t v[] = {m->mamba_heads,  m->mamba_head_dim, m->mamba_state_dim,
                          m->mamba_groups, m->mamba_conv,     m->mamba_chunk};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(v); i++) {
        if (!mamba && v[i])
            return spsim_json_field_error(c, NULL, mamba_keys[i],
                                          "is a Mamba field: needs an 'M' in hybrid_pattern");
        if (mamba && (v[i] < 1 || v[i] > MAX_MAMBA))
            return spsim_json_field_error(c, NULL, mamba_keys[i],
                                          v[i] ? "must be in [1, %u], got %u"
                                               : "must be given: 2·hidden (%u) is not a multiple "
                                                 "of mamba_head_dim (mamba_mixer.py: d_inner must "
                                                 "be evenly divisible by headdim)",
                                          v[i] ? MAX_MAMBA : 2 * m->hidden, v[i]);
    }
    if (!mamba)
        return SPSIM_OK;
    if ((uint64_t)m->mamba_heads * m->mamba_head_dim > MAX_MAMBA)
        return spsim_json_field_error(c, NULL, "mamba_heads",
                                      "mamba_heads × mamba_head_dim must not exceed %u", MAX_MAMBA);
    if (m->mamba_heads % m->mamba_groups != 0)
        return spsim_json_field_error(
            c, NULL, "mamba_groups",
            "must divide mamba_heads (%u), got %u (mamba_mixer.py: nheads "
            "must be evenly divisible by ngroups)",
            m->mamba_heads, m->mamba_groups);
    return SPSIM_OK;
}

/* The Gated DeltaNet fields come with 'G' layers; transformer_config.py __post_init__:
 * "linear_num_value_heads ... must be a multiple of linear_num_key_heads". */
static int
check_gdn(const struct spsim_model_shape *m, const struct spsim_jctx *c)
{
    bool gdn = m->hybrid_pattern && strchr(m->hybrid_pattern, 'G');
    const uint32_t v[] = {m->gdn_key_heads, m->gdn_value_heads, m->gdn_key_head_dim,
                          m->gdn_value_head_dim, m->gdn_conv};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(v); i++)
        if (gdn != (v[i] != 0))
            return spsim_json_field_error(c, NULL, gdn_keys[i],
                                          "is a Gated DeltaNet field: needs a 'G' in "
                                          "hybrid_pattern");
    if (!gdn)
        return SPSIM_OK;
    if (m->gdn_value_heads % m->gdn_key_heads != 0)
        return spsim_json_field_error(c, NULL, "gdn_value_heads",
                                      "linear_num_value_heads (%u) must be a multiple of "
                                      "linear_num_key_heads (%u)",
                                      m->gdn_value_heads, m->gdn_key_heads);
    if ((uint64_t)m->gdn_value_heads * m->gdn_value_head_dim > MAX_MAMBA ||
        (uint64_t)m->gdn_key_heads * m->gdn_key_head_dim > MAX_MAMBA)
        return spsim_json_field_error(c, NULL, "gdn_value_heads",
                                      "heads × head_dim must not exceed %u", MAX_MAMBA);
    return SPSIM_OK;
}

/* The gates and the rotary share need what they act on: shared experts, a rotary embedding,
 * the standard attention (MLA's projections are built by multi_latent_attention.py, which has
 * no output gate). */
static int
check_gates(const struct spsim_model_shape *m, const struct spsim_jctx *c)
{
    if (m->moe_shared_expert_gate && !m->shared_expert_ffn_hidden)
        return spsim_json_field_error(c, NULL, "moe_shared_expert_gate",
                                      "needs shared experts (shared_expert_ffn_hidden > 0)");
    if (m->rotary_percent > 0 && m->rotary_percent < 1 && m->position != SPSIM_POSITION_ROPE)
        return spsim_json_field_error(c, NULL, "rotary_percent",
                                      "needs position_embedding \"rope\"");
    if (m->attention_output_gate && m->kv_lora_rank)
        return spsim_json_field_error(c, NULL, "attention_output_gate",
                                      "the output gate of multi-latent attention is not modelled");
    return SPSIM_OK;
}

/* The MTP pattern, the shared-depth flag and the latent width. */
static int
check_mtp_latent(const struct spsim_model_shape *m, const struct spsim_jctx *c)
{
    int rc;
    if (m->mtp_pattern && !m->hybrid_pattern)
        return spsim_json_field_error(c, NULL, "mtp_pattern", "needs hybrid_pattern");
    if (m->mtp_pattern && !m->mtp_layers)
        return spsim_json_field_error(c, NULL, "mtp_pattern", "needs mtp_layers (its depths) > 0");
    if (m->mtp_pattern && (rc = check_symbols(c, "mtp_pattern", m->mtp_pattern)))
        return rc;
    if (m->mtp_pattern && strchr(m->mtp_pattern, 'M') && !strchr(m->hybrid_pattern, 'M'))
        return spsim_json_field_error(c, NULL, "mtp_pattern",
                                      "has an 'M' but hybrid_pattern has none (the Mamba fields "
                                      "come with the decoder's Mamba layers)");
    if (m->hybrid_pattern && m->mtp_layers && !m->mtp_pattern)
        return spsim_json_field_error(c, NULL, "mtp_layers",
                                      "a hybrid model's MTP depths need mtp_pattern (their layers, "
                                      "Megatron's pattern after '/')");
    if (m->mtp_shared && !m->mtp_layers)
        return spsim_json_field_error(c, NULL, "mtp_shared", "needs mtp_layers > 0");
    if (m->moe_latent && !m->experts)
        return spsim_json_field_error(c, NULL, "moe_latent",
                                      "is a mixture-of-experts field: needs experts > 0");
    return SPSIM_OK;
}

int
spsim_model_check_hybrid(const struct spsim_model_shape *m, const struct spsim_jctx *c)
{
    int rc;
    if (m->hybrid_pattern) {
        size_t n = strlen(m->hybrid_pattern);
        if ((rc = check_symbols(c, "hybrid_pattern", m->hybrid_pattern)))
            return rc;
        if (n != m->layers)
            return spsim_json_field_error(c, NULL, "hybrid_pattern",
                                          "has %zu symbols but layers is %u (one symbol per "
                                          "decoder layer)",
                                          n, m->layers);
        bool moe =
            strchr(m->hybrid_pattern, 'E') || (m->mtp_pattern && strchr(m->mtp_pattern, 'E'));
        if (moe != (m->experts > 0))
            return spsim_json_field_error(c, NULL, moe ? "experts" : "hybrid_pattern",
                                          moe ? "must be > 0: the pattern has MoE layers ('E')"
                                              : "has no 'E' layer for the experts");
        if (m->kv_lora_rank)
            return spsim_json_field_error(c, NULL, "kv_lora_rank",
                                          "multi-latent attention is not modelled in a hybrid "
                                          "model");
        if (m->moe_first_dense_layers || m->moe_layer_freq > 1)
            return spsim_json_field_error(
                c, NULL, m->moe_layer_freq > 1 ? "moe_layer_freq" : "moe_first_dense_layers",
                "a hybrid model's MoE layers are its pattern's 'E's");
    }
    if ((rc = check_mamba(m, c)) || (rc = check_gdn(m, c)) || (rc = check_gates(m, c)))
        return rc;
    return check_mtp_latent(m, c);
}

/* Weights of one norm over n channels: RMSNorm γ; LayerNorm γ and β. */
static uint64_t
norm_params(const struct spsim_model_shape *m, uint64_t n)
{
    return m->norm == SPSIM_NORM_LAYERNORM ? 2 * n : n;
}

/*
 * One Mamba layer (ssm/mamba_layer.py MambaLayer, its mixer mamba_mixer.py MambaMixer): the
 * input norm fused in in_proj (TELayerNormColumnParallelLinear, whole on every rank); in_proj
 * h → 2·d + 2·G·N + H ([z, x, B, C, dt]) column-parallel, no bias (MambaMixer asserts not
 * bias); conv1d over d + 2·G·N channels of d_conv taps with its bias (conv_bias asserted);
 * dt_bias, A_log and D (one per head, D_has_hdim False); the gated RMSNorm over d; out_proj
 * d → h row-parallel. Every mixer tensor is split over TP by heads and groups (each rank holds
 * H/t heads and G/t groups: mamba_mixer.py nheads_local_tp, ngroups_local_tp).
 */
void
spsim_mamba_parameters(const struct spsim_model_shape *m, struct spsim_param_split *p, bool *ok)
{
    uint64_t h = m->hidden, H = m->mamba_heads, d = H * m->mamba_head_dim;
    uint64_t gn = (uint64_t)m->mamba_groups * m->mamba_state_dim, conv = d + 2 * gn;
    uint64_t in_proj = spsim_mul(h, 2 * d + 2 * gn + H, ok);
    uint64_t conv1d = spsim_mul(conv, (uint64_t)m->mamba_conv + 1, ok);
    p->sharded = spsim_add(spsim_add(in_proj, conv1d, ok), spsim_mul(d, h, ok), ok);
    p->sharded = spsim_add(p->sharded, 3 * H + d, ok); /* dt_bias, A_log, D; the gated norm */
    p->replicated = norm_params(m, h);
}

/*
 * One Gated DeltaNet layer ('G': hybrid_layer_specs.py hybrid_stack_spec gdn_layer, a
 * TransformerLayer whose self_attention is ssm/gated_delta_net/gdn.py GatedDeltaNet; its norm
 * fused in in_proj, TELayerNormColumnParallelLinear, whole on every rank). common.py _GDNBase:
 * in_proj h → 2·qk + 2·v + 2·H_v ([q, k, v, z, β, α]; qk = H_k·d_k, v = H_v·d_v), no bias
 * (bias False); conv1d over the 2·qk + v channels of q, k, v with linear_conv_kernel_dim taps,
 * depthwise, no bias (conv_bias False); dt_bias and A_log, one per value head; out_norm a TENorm
 * of d_v (one γ shared by the heads, whole on every rank); out_proj v → h row-parallel. The
 * projections, the convolution, dt_bias and A_log are split over TP ("tensor_model_parallel").
 */
void
spsim_gdn_parameters(const struct spsim_model_shape *m, struct spsim_param_split *p, bool *ok)
{
    uint64_t h = m->hidden, Hv = m->gdn_value_heads;
    uint64_t qk = (uint64_t)m->gdn_key_heads * m->gdn_key_head_dim;
    uint64_t v = Hv * m->gdn_value_head_dim;
    uint64_t in_proj = spsim_mul(h, 2 * qk + 2 * v + 2 * Hv, ok);
    uint64_t conv1d = spsim_mul(2 * qk + v, m->gdn_conv, ok);
    p->sharded = spsim_add(spsim_add(in_proj, conv1d, ok), spsim_mul(v, h, ok), ok);
    p->sharded = spsim_add(p->sharded, 2 * Hv, ok); /* dt_bias, A_log */
    p->replicated = norm_params(m, h) + m->gdn_value_head_dim;
}

/*
 * One layer of a hybrid model of kind k on one rank of TP size tp (hybrid_layer_specs.py
 * hybrid_stack_spec): '*' a TransformerLayer with self-attention only (its norm fused in
 * linear_qkv), '-' an MLPLayer (its norm fused in linear_fc1), 'E' a MoETransformerLayer with
 * pre_mlp_layernorm and the MoE block, whose routed experts this leaves out (`experts` receives
 * the E/ep local ones split etp ways; spsim_hybrid_moe_parameters).
 */
uint64_t
spsim_hybrid_layer_parameters(const struct spsim_model_shape *m, enum spsim_layer_kind k,
                              uint32_t tp, bool *ok)
{
    struct spsim_param_split p = {0, 0};
    switch (k) {
    case SPSIM_LAYER_MAMBA:
        spsim_mamba_parameters(m, &p, ok);
        break;
    case SPSIM_LAYER_GDN:
        spsim_gdn_parameters(m, &p, ok);
        break;
    case SPSIM_LAYER_ATTENTION:
        spsim_attention_parameters(m, &p, ok);
        p.replicated += norm_params(m, m->hidden);
        break;
    case SPSIM_LAYER_MLP:
        spsim_mlp_parameters(m, m->ffn_hidden, &p, ok);
        p.replicated += norm_params(m, m->hidden);
        break;
    case SPSIM_LAYER_MOE:
        spsim_mlp_parameters(m, m->shared_expert_ffn_hidden, &p, ok);
        p.replicated +=
            norm_params(m, m->hidden) + spsim_router_parameters(m) + spsim_moe_latent_parameters(m);
        break;
    default:
        return 0;
    }
    return spsim_add(p.sharded / (tp ? tp : 1), p.replicated, ok);
}

/* The decoder's and the MTP depths' layers of kind k: the MTP pattern once when its depths
 * share one set of weights (mtp_shared), else once per depth. */
static uint64_t
kind_layers(const struct spsim_model_shape *m, enum spsim_layer_kind k, bool weights)
{
    uint64_t n = spsim_hybrid_count(m->hybrid_pattern, k);
    uint64_t depths = weights && m->mtp_shared ? 1 : m->mtp_layers;
    return n + depths * spsim_hybrid_count(m->mtp_pattern, k);
}

uint64_t
spsim_hybrid_layers_parameters(const struct spsim_model_shape *m, bool active, bool *ok)
{
    uint64_t total = 0;
    for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++) {
        uint64_t one = spsim_hybrid_layer_parameters(m, (enum spsim_layer_kind)k, 1, ok);
        if (k == SPSIM_LAYER_MOE)
            one = spsim_add(one,
                            spsim_mul(active ? m->experts_per_token : m->experts,
                                      spsim_expert_parameters_per_rank(m, 1, ok), ok),
                            ok);
        total = spsim_add(total, spsim_mul(kind_layers(m, (enum spsim_layer_kind)k, true), one, ok),
                          ok);
    }
    uint64_t depths = m->mtp_shared ? (m->mtp_layers ? 1 : 0) : m->mtp_layers;
    return spsim_add(total, spsim_mul(depths, spsim_mtp_extra_parameters_per_rank(m, 1, ok), ok),
                     ok);
}
