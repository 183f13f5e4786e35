/* Reading and validating model profiles, and the exact per-rank parameter counts. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfield.h"
#include "profiles.h"

static const char *const mlp_names[] = {"gelu", "swiglu", "relu2", NULL};
static const char *const norm_names[] = {"layernorm", "rmsnorm", NULL};
static const char *const attention_names[] = {"standard", "flash", NULL};
static const char *const position_names[] = {"learned", "rope", "none", NULL};

/* Limits on sizes: far above any real model, low enough that every per-layer byte count of
 * the memory engine is checked rather than assumed to fit (see the checked arithmetic). */
#define MAX_LAYERS SPSIM_MODEL_MAX_LAYERS
#define MAX_HIDDEN 1048576u
#define MAX_HEADS  65536u
#define MAX_FFN    4194304u
#define MAX_VOCAB  16777216u
#define MAX_SEQ    16777216u

static int
shape_check(const struct spsim_model_shape *m, const struct spsim_jctx *c, bool head_dim_given)
{
    if (m->kv_heads > m->heads)
        return spsim_json_field_error(c, NULL, "kv_heads", "must not exceed heads (%u), got %u",
                                      m->heads, m->kv_heads);
    if (m->heads % m->kv_heads != 0)
        return spsim_json_field_error(c, NULL, "kv_heads",
                                      "must divide heads (%u) for grouped-query attention, got %u",
                                      m->heads, m->kv_heads);
    if (!head_dim_given && m->hidden % m->heads != 0)
        return spsim_json_field_error(c, NULL, "heads",
                                      "must divide hidden (%u) unless head_dim is given, got %u",
                                      m->hidden, m->heads);
    if ((uint64_t)m->heads * m->head_dim > MAX_HIDDEN)
        return spsim_json_field_error(c, NULL, "head_dim", "heads × head_dim must not exceed %u",
                                      MAX_HIDDEN);
    /* Gemma 2's and 3's post-norms are built for dense layers of standard attention (layer.c
     * add_post_norm); on MoE, MLA or hybrid layers they are not modelled. */
    if (m->post_norms && (m->experts || m->kv_lora_rank || m->hybrid_pattern))
        return spsim_json_field_error(c, NULL, "post_norms",
                                      "post-attention and post-MLP norms are modelled on dense "
                                      "layers of standard attention only (Gemma 2 and 3)");
    return SPSIM_OK;
}

/* The ranges of a shape built in memory (a file's are checked as each field is read). */
static int
shape_limits(const struct spsim_model_shape *shape, const struct spsim_jctx *c)
{
    const struct {
        const char *key;
        uint32_t value, max;
    } limits[] = {
        {"layers", shape->layers, MAX_LAYERS},     {"hidden", shape->hidden, MAX_HIDDEN},
        {"heads", shape->heads, MAX_HEADS},        {"kv_heads", shape->kv_heads, MAX_HEADS},
        {"head_dim", shape->head_dim, MAX_HIDDEN}, {"ffn_hidden", shape->ffn_hidden, MAX_FFN},
        {"vocab", shape->vocab, MAX_VOCAB},        {"seq_len", shape->seq_len, MAX_SEQ}};
    if ((unsigned)shape->softmax_type > SPSIM_SOFTMAX_LEARNABLE)
        return spsim_json_field_error(c, NULL, "softmax_type",
                                      "must be vanilla, off-by-one or learnable");
    if (shape->vocab_divisible_by > MAX_VOCAB)
        return spsim_json_field_error(c, NULL, "vocab_divisible_by",
                                      "must be an integer in [0, %u], got %u", MAX_VOCAB,
                                      shape->vocab_divisible_by);
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(limits); i++)
        if (limits[i].value < 1 || limits[i].value > limits[i].max)
            return spsim_json_field_error(c, NULL, limits[i].key,
                                          "must be an integer in [1, %u], got %u", limits[i].max,
                                          limits[i].value);
    int rc = shape_check(shape, c, true);
    if (rc == SPSIM_OK)
        rc = spsim_model_check_hybrid(shape, c);
    return rc ? rc : spsim_model_check_moe(shape, NULL, c);
}

static int
read_shape(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m,
           uint8_t **pattern)
{
    int rc;
    int mlp = 0, norm = 0, attention = 0, position = 0, softmax = 0;
    bool head_dim_given = cJSON_GetObjectItemCaseSensitive(root, "head_dim") != NULL;
    memset(m, 0, sizeof(*m));
    if ((rc = spsim_json_get_u32(c, root, NULL, "layers", true, 1, MAX_LAYERS, &m->layers)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "hidden", true, 1, MAX_HIDDEN, &m->hidden)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "heads", true, 1, MAX_HEADS, &m->heads)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "kv_heads", true, 1, MAX_HEADS, &m->kv_heads)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "head_dim", false, 1, MAX_HIDDEN, &m->head_dim)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "ffn_hidden", true, 1, MAX_FFN, &m->ffn_hidden)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "vocab", true, 1, MAX_VOCAB, &m->vocab)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "vocab_divisible_by", false, 1, MAX_VOCAB,
                                 &m->vocab_divisible_by)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "seq_len", true, 1, MAX_SEQ, &m->seq_len)) ||
        (rc = spsim_json_get_enum(c, root, NULL, "mlp", true, mlp_names, &mlp)) ||
        (rc = spsim_json_get_enum(c, root, NULL, "norm", true, norm_names, &norm)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "dropout", true, &m->dropout)) ||
        (rc = spsim_json_get_enum(c, root, NULL, "attention", true, attention_names, &attention)) ||
        (rc = spsim_json_get_enum(c, root, NULL, "position_embedding", true, position_names,
                                  &position)) ||
        (rc = spsim_json_get_enum(c, root, NULL, "softmax_type", false, spsim_softmax_names,
                                  &softmax)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "linear_bias", true, &m->linear_bias)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "tied_embeddings", true, &m->tied_embeddings)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "qkv_bias", false, &m->qkv_bias)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "qk_norm", false, &m->qk_norm)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "post_norms", false, &m->post_norms)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "embedding_scale", false, &m->embedding_scale)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "attention_output_gate", false,
                                  &m->attention_output_gate)) ||
        (rc = spsim_json_get_double(c, root, NULL, "rotary_percent", false, 0.001, 1.0,
                                    &m->rotary_percent)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "moe_shared_expert_gate", false,
                                  &m->moe_shared_expert_gate)) ||
        (rc = spsim_model_read_moe(c, root, m, pattern)) ||
        (rc = spsim_model_read_hybrid(c, root, m)))
        return rc;
    /* MLA's Q and K heads are qk_head_dim + qk_pos_emb_head_dim wide, whatever hidden/heads. */
    if (!head_dim_given && m->kv_lora_rank)
        m->head_dim = m->qk_head_dim + m->qk_pos_emb_head_dim;
    else if (!head_dim_given)
        m->head_dim = m->heads ? m->hidden / m->heads : 0;
    m->mlp = (enum spsim_mlp)mlp;
    m->norm = (enum spsim_norm)norm;
    m->attention = (enum spsim_attention)attention;
    m->position = (enum spsim_position)position;
    m->softmax_type = (enum spsim_softmax)softmax;
    spsim_hybrid_defaults(m);
    if ((rc = shape_check(m, c, head_dim_given || m->kv_lora_rank)) ||
        (rc = spsim_model_check_hybrid(m, c)))
        return rc;
    if (m->hybrid_pattern && *pattern)
        return spsim_json_field_error(c, NULL, "moe_layer_pattern",
                                      "a hybrid model's MoE layers are its pattern's 'E's");
    return spsim_model_check_moe(m, *pattern, c);
}

/* Takes pattern (NULL or one byte per layer), freed with the model or on failure. */
static int
model_new(const struct spsim_model_shape *shape, uint8_t *pattern, const char *name,
          const char *source, const char *description, struct spsim_model **out,
          struct spsim_error *err)
{
    struct spsim_model *m = spsim_calloc(1, sizeof(*m));
    if (!m)
        free(pattern);
    if (m) {
        m->shape = *shape;
        m->moe_pattern = pattern;
        m->hybrid_pattern = shape->hybrid_pattern ? spsim_strdup(shape->hybrid_pattern) : NULL;
        m->mtp_pattern = shape->mtp_pattern ? spsim_strdup(shape->mtp_pattern) : NULL;
        m->shape.hybrid_pattern = m->hybrid_pattern;
        m->shape.mtp_pattern = m->mtp_pattern;
        m->moe_layers = spsim_moe_layer_count(shape, pattern);
        m->name = spsim_strdup(name);
        m->source = spsim_strdup(source);
        m->description = spsim_strdup(description);
    }
    if (!m || !m->name || !m->source || !m->description ||
        (shape->hybrid_pattern && !m->hybrid_pattern) || (shape->mtp_pattern && !m->mtp_pattern)) {
        spsim_model_destroy(m);
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    }
    *out = m;
    return SPSIM_OK;
}

int
spsim_model_from_shape(const struct spsim_jctx *c, const struct spsim_model_shape *shape,
                       const char *name, const char *source, const char *description,
                       struct spsim_model **out)
{
    struct spsim_model_shape sh = *shape;
    spsim_hybrid_defaults(&sh);
    int rc = shape_limits(&sh, c);
    if (rc != SPSIM_OK)
        return rc;
    return model_new(&sh, NULL, name, source, description ? description : "", out, c->err);
}

/* The keys of a model profile (doc/profiles.md). */
static const char *const model_keys[] = {"schema",
                                         "name",
                                         "description",
                                         "source",
                                         "layers",
                                         "hidden",
                                         "heads",
                                         "kv_heads",
                                         "head_dim",
                                         "ffn_hidden",
                                         "vocab",
                                         "vocab_divisible_by",
                                         "seq_len",
                                         "mlp",
                                         "norm",
                                         "dropout",
                                         "attention",
                                         "position_embedding",
                                         "linear_bias",
                                         "tied_embeddings",
                                         "qkv_bias",
                                         "qk_norm",
                                         "post_norms",
                                         "embedding_scale",
                                         "experts",
                                         "experts_per_token",
                                         "expert_ffn_hidden",
                                         "shared_expert_ffn_hidden",
                                         "moe_first_dense_layers",
                                         "moe_layer_freq",
                                         "moe_layer_pattern",
                                         "router_score",
                                         "capacity_factor",
                                         "router_num_groups",
                                         "router_group_topk",
                                         "load_balancing",
                                         "z_loss",
                                         "expert_bias",
                                         "pad_to_capacity",
                                         "q_lora_rank",
                                         "kv_lora_rank",
                                         "qk_head_dim",
                                         "qk_pos_emb_head_dim",
                                         "v_head_dim",
                                         "mtp_layers",
                                         "window",
                                         "window_skip_freq",
                                         "softmax_type",
                                         "moe_latent",
                                         "hybrid_pattern",
                                         "mtp_pattern",
                                         "mtp_shared",
                                         "mamba_heads",
                                         "mamba_head_dim",
                                         "mamba_state_dim",
                                         "mamba_groups",
                                         "mamba_conv",
                                         "mamba_chunk",
                                         "gdn_key_heads",
                                         "gdn_value_heads",
                                         "gdn_key_head_dim",
                                         "gdn_value_head_dim",
                                         "gdn_conv",
                                         "attention_output_gate",
                                         "rotary_percent",
                                         "moe_shared_expert_gate",
                                         NULL};

int
spsim_model_read_profile(const cJSON *root, const char *origin, struct spsim_model **out,
                         struct spsim_error *err)
{
    int rc;
    struct spsim_jctx c = {origin, err};
    const char *schema = NULL, *name = NULL, *source = NULL, *description = "";
    struct spsim_model_shape shape;
    uint8_t *pattern = NULL;
    if ((rc = spsim_json_check_keys(&c, root, NULL, model_keys)) ||
        (rc = spsim_json_get_string(&c, root, NULL, "schema", true, true, &schema)))
        goto done;
    if (strcmp(schema, "spsim-model/1") != 0) {
        rc = spsim_json_field_error(&c, NULL, "schema", "must be \"spsim-model/1\", got %s",
                                    SPSIM_Q(schema));
        goto done;
    }
    if ((rc = spsim_json_get_string(&c, root, NULL, "name", true, true, &name)) ||
        (rc = spsim_json_get_string(&c, root, NULL, "source", true, true, &source)) ||
        (rc = spsim_json_get_string(&c, root, NULL, "description", false, false, &description)) ||
        (rc = read_shape(&c, root, &shape, &pattern)))
        goto done;
    rc = model_new(&shape, pattern, name, source, description, out, err);
    pattern = NULL;
done:
    free(pattern);
    return rc;
}

int
spsim_model_create(const struct spsim_model_shape *shape, const char *name,
                   struct spsim_model **out, struct spsim_error *err)
{
    if (!shape || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_model_create: NULL argument");
    const char *origin = name ? name : "custom";
    struct spsim_jctx c = {origin, err};
    if ((unsigned)shape->mlp > SPSIM_MLP_RELU2 || (unsigned)shape->norm > SPSIM_NORM_RMSNORM ||
        (unsigned)shape->attention > SPSIM_ATTENTION_FLASH ||
        (unsigned)shape->position > SPSIM_POSITION_NONE)
        return spsim_fail(err, SPSIM_EINVAL, "%s: an enumeration field is out of range", origin);
    struct spsim_model_shape sh = *shape;
    spsim_hybrid_defaults(&sh);
    int rc = shape_limits(&sh, &c);
    if (rc != SPSIM_OK)
        return rc;
    return model_new(&sh, NULL, origin, "", "", out, err);
}

void
spsim_model_destroy(struct spsim_model *model)
{
    if (!model)
        return;
    free(model->name);
    free(model->source);
    free(model->description);
    free(model->moe_pattern);
    free(model->hybrid_pattern);
    free(model->mtp_pattern);
    free(model);
}

const char *
spsim_model_name(const struct spsim_model *model)
{
    return model ? model->name : "";
}

const char *
spsim_model_source(const struct spsim_model *model)
{
    return model ? model->source : "";
}

const char *
spsim_model_description(const struct spsim_model *model)
{
    return model ? model->description : "";
}

const struct spsim_model_shape *
spsim_model_get_shape(const struct spsim_model *model)
{
    return model ? &model->shape : NULL;
}

uint64_t
spsim_model_padded_vocab(const struct spsim_model *model, uint32_t tp)
{
    /* Megatron pads to a multiple of make_vocab_size_divisible_by (default 128) × TP size
     * (megatron/core/tokenizers/utils/build_tokenizer.py vocab_size_with_padding). */
    uint32_t by = model->shape.vocab_divisible_by ? model->shape.vocab_divisible_by : 128;
    uint64_t multiple = (uint64_t)by * (tp ? tp : 1);
    uint64_t v = model->shape.vocab;
    return (v + multiple - 1) / multiple * multiple;
}

/*
 * Parameter counts, exact, on one tensor-parallel rank. Column-parallel weights and biases
 * (QKV, FC1) and row-parallel weights (projection, FC2) are split t ways; row-parallel biases
 * and the norms are replicated (Megatron RowParallelLinear keeps the whole bias on every rank).
 * With t = 1 these are the full counts.
 */
uint64_t
spsim_layer_parameters_per_rank(const struct spsim_model_shape *m, uint32_t tp, bool *ok)
{
    struct spsim_param_split att, mlp;
    spsim_attention_parameters(m, &att, ok);
    spsim_mlp_parameters(m, m->ffn_hidden, &mlp, ok);
    uint64_t norm = m->norm == SPSIM_NORM_LAYERNORM ? 2ull * m->hidden : m->hidden;
    uint64_t sharded = spsim_add(att.sharded, mlp.sharded, ok);
    /* Two input norms, and Gemma's post-attention and post-MLP norms (each a TENorm of h). */
    uint64_t norms = (m->post_norms ? 4 : 2) * norm;
    uint64_t replicated = spsim_add(norms, att.replicated + mlp.replicated, ok);
    return spsim_add(sharded / tp, replicated, ok);
}

uint64_t
spsim_embedding_parameters_per_rank(const struct spsim_model_shape *m, uint64_t vpad, uint32_t tp,
                                    bool *ok)
{
    /* VocabParallelEmbedding splits the word table; the learned position table is replicated. */
    uint64_t words = spsim_mul(vpad, m->hidden, ok) / tp;
    uint64_t positions =
        m->position == SPSIM_POSITION_LEARNED ? spsim_mul(m->seq_len, m->hidden, ok) : 0;
    return spsim_add(words, positions, ok);
}

uint64_t
spsim_output_parameters_per_rank(const struct spsim_model_shape *m, uint64_t vpad, uint32_t tp,
                                 bool *ok)
{
    /* The final norm, then the output projection unless it is tied to the word embedding. */
    uint64_t final_norm = m->norm == SPSIM_NORM_LAYERNORM ? 2ull * m->hidden : m->hidden;
    uint64_t output = m->tied_embeddings ? 0 : spsim_mul(vpad, m->hidden, ok) / tp;
    return spsim_add(final_norm, output, ok);
}

/* The decoder layers and the multi-token-prediction layers (each one more layer of the kind of
 * the last decoder layer, as Megatron's num_floating_point_operations counts them, plus its own
 * norms and eh_proj), with only k of the routed experts when active. */
static uint64_t
layers_parameters(const struct spsim_model *model, bool active, bool *ok)
{
    const struct spsim_model_shape *m = &model->shape;
    if (m->hybrid_pattern)
        return spsim_hybrid_layers_parameters(m, active, ok);
    uint64_t dense = spsim_layer_parameters_per_rank(m, 1, ok);
    uint64_t moe = model->moe_layers ? spsim_moe_layer_parameters_per_rank(m, 1, 1, 1, ok) : 0;
    if (active && model->moe_layers)
        moe -= (uint64_t)(m->experts - m->experts_per_token) * spsim_expert_parameters(m);
    uint64_t nmoe = model->moe_layers, ndense = m->layers - nmoe;
    if (spsim_model_layer_is_moe(model, m->layers - 1))
        nmoe += m->mtp_layers;
    else
        ndense += m->mtp_layers;
    uint64_t total = spsim_add(spsim_mul(ndense, dense, ok), spsim_mul(nmoe, moe, ok), ok);
    return spsim_add(
        total, spsim_mul(m->mtp_layers, spsim_mtp_extra_parameters_per_rank(m, 1, ok), ok), ok);
}

static uint64_t
model_parameters(const struct spsim_model *model, uint32_t tp, bool active)
{
    const struct spsim_model_shape *m = &model->shape;
    uint64_t vpad = spsim_model_padded_vocab(model, tp);
    bool ok = true;
    uint64_t total = spsim_add(layers_parameters(model, active, &ok),
                               spsim_embedding_parameters_per_rank(m, vpad, 1, &ok), &ok);
    total = spsim_add(total, spsim_output_parameters_per_rank(m, vpad, 1, &ok), &ok);
    return ok ? total : UINT64_MAX;
}

uint64_t
spsim_model_parameters(const struct spsim_model *model, uint32_t tp)
{
    return model_parameters(model, tp, false);
}

uint64_t
spsim_model_active_parameters(const struct spsim_model *model, uint32_t tp)
{
    return model_parameters(model, tp, true);
}

bool
spsim_model_layer_is_moe(const struct spsim_model *model, uint32_t layer)
{
    return spsim_moe_layer_in(&model->shape, model->moe_pattern, layer);
}

enum spsim_layer_kind
spsim_model_layer_kind(const struct spsim_model *model, uint32_t layer)
{
    const char *p = model ? model->shape.hybrid_pattern : NULL;
    return p && layer < model->shape.layers ? spsim_hybrid_symbol_kind(p[layer])
                                            : SPSIM_LAYER_TRANSFORMER;
}

int
spsim_model_create_pattern(const struct spsim_model_shape *shape, const uint8_t *pattern,
                           const char *name, struct spsim_model **out, struct spsim_error *err)
{
    if (!pattern || !shape)
        return spsim_model_create(shape, name, out, err);
    struct spsim_jctx c = {name ? name : "custom", err};
    if (shape->layers < 1 || shape->layers > SPSIM_MODEL_MAX_LAYERS)
        return spsim_model_create(shape, name, out, err); /* its error names layers */
    int rc = spsim_model_check_moe(shape, pattern, &c);
    if (rc != SPSIM_OK)
        return rc;
    uint8_t *copy = spsim_calloc(shape->layers, 1);
    if (!copy)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    memcpy(copy, pattern, shape->layers);
    if ((rc = spsim_model_create(shape, name, out, err)) != SPSIM_OK) {
        free(copy);
        return rc;
    }
    (*out)->moe_pattern = copy;
    (*out)->moe_layers = spsim_moe_layer_count(shape, copy);
    return SPSIM_OK;
}

int
spsim_model_derive(const struct spsim_model *base, const struct spsim_model_shape *shape,
                   struct spsim_model **out, struct spsim_error *err)
{
    if (!base || !shape || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_model_derive: NULL argument");
    if (shape->layers != base->shape.layers)
        return spsim_fail(err, SPSIM_EINVAL, "%s: spsim_model_derive keeps the layer count",
                          base->name);
    struct spsim_model *m = NULL;
    int rc = spsim_model_create_pattern(shape, base->moe_pattern, base->name, &m, err);
    if (rc != SPSIM_OK)
        return rc;
    char *source = spsim_strdup(base->source), *description = spsim_strdup(base->description);
    if (!source || !description) {
        free(source);
        free(description);
        spsim_model_destroy(m);
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    }
    free(m->source);
    free(m->description);
    m->source = source;
    m->description = description;
    *out = m;
    return SPSIM_OK;
}
