/*
 * The mixture-of-experts and multi-latent-attention fields of a model profile (issue 11): read,
 * defaulted and checked, and Megatron's --moe-layer-freq list form. Every field is optional; a
 * profile without them is the dense model it always was.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "jsonfield.h"
#include "profiles.h"

static const char *const router_names[] = {"softmax", "sigmoid", NULL};
/* enum spsim_moe_balancing, Megatron's names (arguments.py --moe-router-load-balancing-type) */
static const char *const balancing_names[] = {
    "none", "aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", NULL};

/* Far above any published model (DeepSeek-V3 256 routed experts, top 8; Kimi-K2 384): low
 * enough that experts × expert parameters stay checked 64-bit arithmetic. */
#define MAX_EXPERTS 65536u
#define MAX_FFN     4194304u
#define MAX_RANK    1048576u

/* The parser of Megatron's list expressions over one text (arguments.py moe_freq_type evals
 * it as Python: "[0]*3+[1]*58", "([1]*3+[0])*4", "[1,0,1,0]"). */
struct pattern_parser {
    const char *p;
    uint8_t *out;
    uint32_t n, cap;
    const char *error;
};

static void
skip_blank(struct pattern_parser *s)
{
    while (isspace((unsigned char)*s->p))
        s->p++;
}

static bool
read_count(struct pattern_parser *s, uint32_t *out)
{
    skip_blank(s);
    if (!isdigit((unsigned char)*s->p))
        return false;
    uint64_t v = 0;
    while (isdigit((unsigned char)*s->p) && v <= SPSIM_MODEL_MAX_LAYERS)
        v = v * 10 + (uint64_t)(*s->p++ - '0');
    *out = v > SPSIM_MODEL_MAX_LAYERS ? SPSIM_MODEL_MAX_LAYERS + 1 : (uint32_t)v;
    return !isdigit((unsigned char)*s->p);
}

static bool pattern_expr(struct pattern_parser *s, int depth);

/* A list of 0s and 1s, or a parenthesised expression, appended to out. */
static bool
pattern_atom(struct pattern_parser *s, int depth)
{
    skip_blank(s);
    if (*s->p == '(') {
        s->p++;
        if (!pattern_expr(s, depth + 1))
            return false;
        skip_blank(s);
        return *s->p++ == ')' || (s->error = "a '(' without its ')'", false);
    }
    if (*s->p++ != '[')
        return s->error = "expected '[' or '('", false;
    for (;;) {
        uint32_t v;
        if (!read_count(s, &v) || v > 1)
            return s->error = "list entries must be 0 (dense) or 1 (MoE)", false;
        if (s->n >= s->cap)
            return s->error = "longer than the model's layers", false;
        s->out[s->n++] = (uint8_t)v;
        skip_blank(s);
        if (*s->p == ']')
            return s->p++, true;
        if (*s->p++ != ',')
            return s->error = "expected ',' or ']'", false;
    }
}

/* atom ('*' count)? terms joined by '+'; a repeat copies what its atom appended. */
static bool
pattern_expr(struct pattern_parser *s, int depth)
{
    if (depth > 16)
        return s->error = "nested too deeply", false;
    for (;;) {
        uint32_t start = s->n, times = 1;
        if (!pattern_atom(s, depth))
            return false;
        skip_blank(s);
        if (*s->p == '*') {
            s->p++;
            if (!read_count(s, &times))
                return s->error = "expected a count after '*'", false;
        }
        uint32_t len = s->n - start;
        if (times == 0)
            s->n = start;
        for (uint32_t r = 1; r < times; r++) {
            if (len > s->cap - s->n)
                return s->error = "longer than the model's layers", false;
            memmove(s->out + s->n, s->out + start, len);
            s->n += len;
        }
        skip_blank(s);
        if (*s->p != '+')
            return true;
        s->p++;
    }
}

const char *
spsim_moe_pattern_parse(const char *text, uint8_t *out, uint32_t cap, uint32_t *n)
{
    struct pattern_parser s = {text, out, 0, cap, NULL};
    if (!pattern_expr(&s, 0))
        return s.error ? s.error : "not a list expression";
    skip_blank(&s);
    if (*s.p)
        return "text after the expression";
    *n = s.n;
    return NULL;
}

/* "moe_layer_pattern": an array of 0/1 or Megatron's text form; one entry per layer. */
static int
read_pattern(const struct spsim_jctx *c, const cJSON *item, uint32_t layers, uint8_t **out)
{
    uint8_t *p = spsim_calloc(layers, 1);
    if (!p)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    uint32_t n = 0;
    const char *why = NULL;
    if (cJSON_IsString(item)) {
        why = spsim_moe_pattern_parse(item->valuestring, p, layers, &n);
    } else if (cJSON_IsArray(item)) {
        const cJSON *e;
        cJSON_ArrayForEach(e, item)
        {
            if (!cJSON_IsNumber(e) || (e->valuedouble != 0 && e->valuedouble != 1)) {
                why = "entries must be 0 (dense) or 1 (MoE)";
                break;
            }
            if (n >= layers) {
                why = "longer than the model's layers";
                break;
            }
            p[n++] = e->valuedouble == 1;
        }
    } else {
        why = "must be an array of 0/1 or a Megatron list expression like \"[0]*3+[1]*58\"";
    }
    if (!why && n != layers)
        why = "must have one entry per layer";
    if (why) {
        free(p);
        return spsim_json_field_error(c, NULL, "moe_layer_pattern", "%s (layers %u, got %u)", why,
                                      layers, n);
    }
    *out = p;
    return SPSIM_OK;
}

static const char *const moe_keys[] = {"experts_per_token",
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
                                       "expert_bias"};

static int
read_moe_fields(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m)
{
    int rc, score = 0, balancing = 0;
    if ((rc = spsim_json_get_u32(c, root, NULL, "experts", false, 0, MAX_EXPERTS, &m->experts)))
        return rc;
    if (m->experts == 0) {
        for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(moe_keys); i++)
            if (cJSON_GetObjectItemCaseSensitive(root, moe_keys[i]))
                return spsim_json_field_error(c, NULL, moe_keys[i],
                                              "is a mixture-of-experts field: needs experts > 0");
        return SPSIM_OK;
    }
    m->expert_ffn_hidden = m->ffn_hidden; /* Megatron's default (arguments.py) */
    m->moe_layer_freq = 1;
    if ((rc = spsim_json_get_u32(c, root, NULL, "experts_per_token", true, 1, m->experts,
                                 &m->experts_per_token)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "expert_ffn_hidden", false, 1, MAX_FFN,
                                 &m->expert_ffn_hidden)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "shared_expert_ffn_hidden", false, 0, MAX_FFN,
                                 &m->shared_expert_ffn_hidden)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "moe_first_dense_layers", false, 0, m->layers - 1,
                                 &m->moe_first_dense_layers)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "moe_layer_freq", false, 1, m->layers,
                                 &m->moe_layer_freq)) ||
        (rc = spsim_json_get_enum(c, root, NULL, "router_score", false, router_names, &score)) ||
        (rc = spsim_json_get_double(c, root, NULL, "capacity_factor", false, 0, 1000,
                                    &m->capacity_factor)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "router_num_groups", false, 0, m->experts,
                                 &m->router_num_groups)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "router_group_topk", false, 0, m->experts,
                                 &m->router_group_topk)) ||
        (rc = spsim_json_get_enum(c, root, NULL, "load_balancing", false, balancing_names,
                                  &balancing)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "z_loss", false, &m->z_loss)) ||
        (rc = spsim_json_get_bool(c, root, NULL, "expert_bias", false, &m->expert_bias)))
        return rc;
    m->router_score = (enum spsim_router_score)score;
    m->load_balancing = (enum spsim_moe_balancing)balancing;
    return SPSIM_OK;
}

static const char *const mla_keys[] = {"kv_lora_rank", "qk_head_dim", "qk_pos_emb_head_dim",
                                       "v_head_dim"};

static int
read_mla_fields(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m)
{
    uint32_t *dst[] = {&m->kv_lora_rank, &m->qk_head_dim, &m->qk_pos_emb_head_dim, &m->v_head_dim};
    size_t given = 0;
    int rc;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(mla_keys); i++) {
        if ((rc = spsim_json_get_u32(c, root, NULL, mla_keys[i], false, 1, MAX_RANK, dst[i])))
            return rc;
        given += cJSON_GetObjectItemCaseSensitive(root, mla_keys[i]) != NULL;
    }
    for (size_t i = 0; given && given < SPSIM_ARRAY_LENGTH(mla_keys); i++)
        if (!cJSON_GetObjectItemCaseSensitive(root, mla_keys[i]))
            return spsim_json_field_error(c, NULL, mla_keys[i],
                                          "multi-latent attention needs all of kv_lora_rank, "
                                          "qk_head_dim, qk_pos_emb_head_dim and v_head_dim");
    if (!given && cJSON_GetObjectItemCaseSensitive(root, "q_lora_rank"))
        return spsim_json_field_error(c, NULL, "q_lora_rank",
                                      "is a multi-latent attention field: needs kv_lora_rank");
    return spsim_json_get_u32(c, root, NULL, "q_lora_rank", false, 1, MAX_RANK, &m->q_lora_rank);
}

int
spsim_model_read_moe(const struct spsim_jctx *c, const cJSON *root, struct spsim_model_shape *m,
                     uint8_t **pattern)
{
    int rc;
    *pattern = NULL;
    if ((rc = read_moe_fields(c, root, m)) || (rc = read_mla_fields(c, root, m)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "mtp_layers", false, 0, SPSIM_MODEL_MAX_LAYERS,
                                 &m->mtp_layers)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "window", false, 1, MAX_RANK, &m->window)) ||
        (rc = spsim_json_get_u32(c, root, NULL, "window_skip_freq", false, 1,
                                 SPSIM_MODEL_MAX_LAYERS, &m->window_skip_freq)))
        return rc;
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, "moe_layer_pattern");
    if (!item)
        return SPSIM_OK;
    if (cJSON_GetObjectItemCaseSensitive(root, "moe_first_dense_layers") ||
        cJSON_GetObjectItemCaseSensitive(root, "moe_layer_freq"))
        return spsim_json_field_error(c, NULL, "moe_layer_pattern",
                                      "is given with moe_first_dense_layers or moe_layer_freq: "
                                      "give one way of choosing the MoE layers");
    return read_pattern(c, item, m->layers, pattern);
}

bool
spsim_moe_layer_in(const struct spsim_model_shape *m, const uint8_t *pattern, uint32_t layer)
{
    if (m->experts == 0 || layer >= m->layers)
        return false;
    if (m->hybrid_pattern) /* a hybrid model's 'E' layers (model_hybrid.c) */
        return m->hybrid_pattern[layer] == 'E';
    if (pattern)
        return pattern[layer] != 0;
    if (layer < m->moe_first_dense_layers)
        return false;
    uint32_t freq = m->moe_layer_freq ? m->moe_layer_freq : 1;
    return layer % freq == 0;
}

uint32_t
spsim_moe_layer_count(const struct spsim_model_shape *m, const uint8_t *pattern)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->layers && m->experts; i++)
        n += spsim_moe_layer_in(m, pattern, i);
    return n;
}

/* Group-limited routing (transformer_config.py __post_init__: group_topk needs num_groups,
 * which divides the experts, group_topk <= num_groups; router.py group_limited_topk then takes
 * the top-k among the kept groups' experts, so they must hold k). */
static int
check_groups(const struct spsim_model_shape *m, const struct spsim_jctx *c)
{
    uint32_t g = m->router_num_groups, k = m->router_group_topk;
    if (k == 0 && g == 0)
        return SPSIM_OK;
    if (k == 0 || g == 0)
        return spsim_json_field_error(c, NULL, k ? "router_num_groups" : "router_group_topk",
                                      "router_num_groups and router_group_topk go together "
                                      "(group-limited routing), got %u and %u",
                                      g, k);
    if (m->experts % g != 0)
        return spsim_json_field_error(c, NULL, "router_num_groups",
                                      "must divide the experts (%u), got %u", m->experts, g);
    if (k > g || (uint64_t)k * (m->experts / g) < m->experts_per_token)
        return spsim_json_field_error(c, NULL, "router_group_topk",
                                      "must be at most router_num_groups (%u) and its groups "
                                      "must hold experts_per_token (%u) experts, got %u",
                                      g, m->experts_per_token, k);
    return SPSIM_OK;
}

/* A dense model's MoE fields are all zero; a MoE model's are in range and choose a MoE layer. */
static int
check_moe(const struct spsim_model_shape *m, const uint8_t *pattern, const struct spsim_jctx *c)
{
    if (m->experts == 0) {
        const uint32_t v[] = {m->experts_per_token,
                              m->expert_ffn_hidden,
                              m->shared_expert_ffn_hidden,
                              m->moe_first_dense_layers,
                              m->moe_layer_freq > 1,
                              pattern != NULL,
                              m->router_score != 0,
                              0,
                              m->router_num_groups,
                              m->router_group_topk,
                              m->load_balancing != 0,
                              m->z_loss,
                              m->expert_bias};
        for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(v); i++)
            if (v[i])
                return spsim_json_field_error(c, NULL, moe_keys[i],
                                              "is a mixture-of-experts field: needs experts > 0");
        if (m->capacity_factor != 0)
            return spsim_json_field_error(c, NULL, "capacity_factor",
                                          "is a mixture-of-experts field: needs experts > 0");
        return SPSIM_OK;
    }
    if (m->experts > MAX_EXPERTS)
        return spsim_json_field_error(c, NULL, "experts", "must be at most %u, got %u", MAX_EXPERTS,
                                      m->experts);
    if (m->experts_per_token < 1 || m->experts_per_token > m->experts)
        return spsim_json_field_error(c, NULL, "experts_per_token",
                                      "must be in [1, experts (%u)], got %u", m->experts,
                                      m->experts_per_token);
    if (m->expert_ffn_hidden < 1 || m->expert_ffn_hidden > MAX_FFN)
        return spsim_json_field_error(c, NULL, "expert_ffn_hidden",
                                      "must be an integer in [1, %u], got %u", MAX_FFN,
                                      m->expert_ffn_hidden);
    if (m->shared_expert_ffn_hidden > MAX_FFN)
        return spsim_json_field_error(c, NULL, "shared_expert_ffn_hidden",
                                      "must be an integer in [0, %u], got %u", MAX_FFN,
                                      m->shared_expert_ffn_hidden);
    if (!(m->capacity_factor == 0 || (m->capacity_factor >= 1 && m->capacity_factor <= 1000)))
        return spsim_json_field_error(c, NULL, "capacity_factor",
                                      "must be 0 (dropless) or in [1, 1000], got %g",
                                      m->capacity_factor);
    if ((unsigned)m->router_score > SPSIM_ROUTER_SIGMOID)
        return spsim_json_field_error(c, NULL, "router_score", "is out of range");
    if ((unsigned)m->load_balancing > SPSIM_BALANCE_SINKHORN)
        return spsim_json_field_error(c, NULL, "load_balancing", "is out of range");
    int rc = check_groups(m, c);
    if (rc != SPSIM_OK)
        return rc;
    if (spsim_moe_layer_count(m, pattern) == 0)
        return spsim_json_field_error(c, NULL, pattern ? "moe_layer_pattern" : "moe_layer_freq",
                                      "chooses no mixture-of-experts layer among the %u layers "
                                      "(first %u dense, every %u-th MoE)",
                                      m->layers, m->moe_first_dense_layers,
                                      m->moe_layer_freq ? m->moe_layer_freq : 1);
    return SPSIM_OK;
}

/* MLA: all of its widths or none; heads not grouped and head_dim the Q/K head's width. */
static int
check_mla(const struct spsim_model_shape *m, const struct spsim_jctx *c)
{
    const uint32_t v[] = {m->kv_lora_rank, m->qk_head_dim, m->qk_pos_emb_head_dim, m->v_head_dim};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(v); i++) {
        if ((v[i] != 0) != (m->kv_lora_rank != 0) || v[i] > MAX_RANK)
            return spsim_json_field_error(c, NULL, mla_keys[i],
                                          "multi-latent attention needs all of kv_lora_rank, "
                                          "qk_head_dim, qk_pos_emb_head_dim and v_head_dim, each "
                                          "in [1, %u] (or none)",
                                          MAX_RANK);
    }
    if (m->q_lora_rank > (m->kv_lora_rank ? MAX_RANK : 0))
        return spsim_json_field_error(c, NULL, "q_lora_rank",
                                      m->kv_lora_rank ? "must be at most %u"
                                                      : "is a multi-latent attention field: "
                                                        "needs kv_lora_rank (limit %u)",
                                      MAX_RANK);
    if (!m->kv_lora_rank)
        return SPSIM_OK;
    /* MultiLatentAttention asserts not group_query_attention (training.py, arguments.py). */
    if (m->kv_heads != m->heads)
        return spsim_json_field_error(c, NULL, "kv_heads",
                                      "must equal heads (%u) with multi-latent attention, got %u",
                                      m->heads, m->kv_heads);
    if (m->head_dim != m->qk_head_dim + m->qk_pos_emb_head_dim)
        return spsim_json_field_error(c, NULL, "head_dim",
                                      "must be qk_head_dim + qk_pos_emb_head_dim (%u) with "
                                      "multi-latent attention, got %u",
                                      m->qk_head_dim + m->qk_pos_emb_head_dim, m->head_dim);
    if (m->qkv_bias)
        return spsim_json_field_error(c, NULL, "qkv_bias",
                                      "must be false with multi-latent attention (its projections "
                                      "have no bias)");
    return SPSIM_OK;
}

/* A sliding window: in range, its skip frequency only with a window, and not with MLA (no MLA
 * model has one, and Megatron-Bridge's flop_utils.py counts windows on its GQA path only). */
static int
check_window(const struct spsim_model_shape *m, const struct spsim_jctx *c)
{
    if (m->window > MAX_RANK)
        return spsim_json_field_error(c, NULL, "window", "must be in [1, %u], got %u", MAX_RANK,
                                      m->window);
    if (m->window_skip_freq > SPSIM_MODEL_MAX_LAYERS || (m->window_skip_freq && !m->window))
        return spsim_json_field_error(c, NULL, "window_skip_freq",
                                      "must be in [1, %u] and needs window, got %u",
                                      SPSIM_MODEL_MAX_LAYERS, m->window_skip_freq);
    if (m->window && m->kv_lora_rank)
        return spsim_json_field_error(c, NULL, "window",
                                      "is not supported with multi-latent attention");
    return SPSIM_OK;
}

int
spsim_model_check_moe(const struct spsim_model_shape *m, const uint8_t *pattern,
                      const struct spsim_jctx *c)
{
    int rc;
    if ((rc = check_moe(m, pattern, c)) || (rc = check_mla(m, c)))
        return rc;
    if (m->mtp_layers > SPSIM_MODEL_MAX_LAYERS)
        return spsim_json_field_error(c, NULL, "mtp_layers", "must be at most %u, got %u",
                                      SPSIM_MODEL_MAX_LAYERS, m->mtp_layers);
    return check_window(m, c);
}
