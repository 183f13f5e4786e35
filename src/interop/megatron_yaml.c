/*
 * Megatron-Bridge and NeMo recipes in YAML, read with libyaml into the Megatron-LM flags they
 * stand for, so that megatron_args.c maps them with the same rules and defaults. Keys are
 * matched by their last name: Megatron-Bridge's ConfigContainer (model: TransformerConfig's
 * fields, train:, ddp:, optimizer:, dataset:) and NeMo 1's megatron_gpt_config.yaml (trainer:,
 * model: with encoder_seq_length, activation, bias, activations_checkpoint_*). A key the table
 * does not know is listed as not modelled, as a flag would be.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "megatron_yaml.h"

#if HAVE_YAML
#include <yaml.h>

enum mode {
    M_VALUE,     /* --flag VALUE */
    M_SWITCH,    /* true: --flag */
    M_INVERSE,   /* false: --flag */
    M_GROUPS,    /* a number: --group-query-attention --num-query-groups N */
    M_NORM,      /* layernorm, rmsnorm in any case: Megatron's spelling */
    M_ACT,       /* NeMo's activation: swiglu / fast-swiglu: --swiglu; gelu: nothing */
    M_PRECISION, /* NeMo's trainer.precision: bf16*, 16*: --bf16, --fp16; 32: nothing */
    M_OPTIM,     /* NeMo's optim.name: distributed_fused_adam: --use-distributed-optimizer */
    M_FP8,       /* a format (Megatron-Bridge) or a boolean (NeMo: true is the hybrid format) */
    M_OFFLOAD,   /* cpu_offloading and its _num_layers: the count counts only when it is on */
    M_PATTERN,   /* moe_layer_freq: a number or expression, or a list of 0/1 ("[0,1,...]") */
    M_NULLABLE   /* --flag VALUE; null (None) is --flag None, not the field's default */
};

static const struct {
    const char *key, *flag;
    enum mode mode;
} keys[] = {
    {"num_layers", "--num-layers", M_VALUE},
    {"hidden_size", "--hidden-size", M_VALUE},
    {"num_attention_heads", "--num-attention-heads", M_VALUE},
    {"ffn_hidden_size", "--ffn-hidden-size", M_VALUE},
    {"num_query_groups", "--num-query-groups", M_GROUPS},
    {"kv_channels", "--kv-channels", M_VALUE},
    {"seq_length", "--seq-length", M_VALUE},
    {"encoder_seq_length", "--seq-length", M_VALUE},
    {"max_position_embeddings", "--max-position-embeddings", M_VALUE},
    {"gated_linear_unit", "--swiglu", M_SWITCH},
    {"activation", "--swiglu", M_ACT},
    {"normalization", "--normalization", M_NORM},
    {"position_embedding_type", "--position-embedding-type", M_VALUE},
    {"add_bias_linear", "--disable-bias-linear", M_INVERSE},
    {"bias", "--disable-bias-linear", M_INVERSE},
    {"add_qkv_bias", "--add-qkv-bias", M_SWITCH},
    {"qk_layernorm", "--qk-layernorm", M_SWITCH},
    {"share_embeddings_and_output_weights", "--untie-embeddings-and-output-weights", M_INVERSE},
    {"hidden_dropout", "--hidden-dropout", M_VALUE},
    {"attention_dropout", "--attention-dropout", M_VALUE},
    {"vocab_size", "--vocab-size", M_VALUE},
    {"make_vocab_size_divisible_by", "--make-vocab-size-divisible-by", M_VALUE},
    {"attention_backend", "--attention-backend", M_VALUE},
    {"tensor_model_parallel_size", "--tensor-model-parallel-size", M_VALUE},
    {"pipeline_model_parallel_size", "--pipeline-model-parallel-size", M_VALUE},
    {"virtual_pipeline_model_parallel_size", "--num-virtual-stages-per-pipeline-rank", M_VALUE},
    {"sequence_parallel", "--sequence-parallel", M_SWITCH},
    {"context_parallel_size", "--context-parallel-size", M_VALUE},
    {"expert_model_parallel_size", "--expert-model-parallel-size", M_VALUE},
    {"num_moe_experts", "--num-experts", M_VALUE},
    {"moe_router_topk", "--moe-router-topk", M_VALUE},
    {"moe_ffn_hidden_size", "--moe-ffn-hidden-size", M_VALUE},
    {"moe_shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size", M_VALUE},
    {"moe_layer_freq", "--moe-layer-freq", M_PATTERN},
    {"moe_router_score_function", "--moe-router-score-function", M_VALUE},
    {"moe_expert_capacity_factor", "--moe-expert-capacity-factor", M_VALUE},
    {"moe_token_dispatcher_type", "--moe-token-dispatcher-type", M_VALUE},
    {"moe_flex_dispatcher_backend", "--moe-flex-dispatcher-backend", M_VALUE},
    {"moe_flex_dispatcher_num_sms", "--moe-flex-dispatcher-num-sms", M_VALUE},
    {"moe_deepep_num_sms", "--moe-deepep-num-sms", M_VALUE},
    {"moe_hybridep_num_sms", "--moe-hybridep-num-sms", M_VALUE},
    {"moe_router_num_groups", "--moe-router-num-groups", M_VALUE},
    {"moe_router_group_topk", "--moe-router-group-topk", M_VALUE},
    {"moe_router_load_balancing_type", "--moe-router-load-balancing-type", M_VALUE},
    {"moe_aux_loss_coeff", "--moe-aux-loss-coeff", M_VALUE},
    {"moe_z_loss_coeff", "--moe-z-loss-coeff", M_VALUE},
    {"moe_router_enable_expert_bias", "--moe-router-enable-expert-bias", M_SWITCH},
    {"expert_tensor_parallel_size", "--expert-tensor-parallel-size", M_VALUE},
    {"multi_latent_attention", "--multi-latent-attention", M_SWITCH},
    {"q_lora_rank", "--q-lora-rank", M_NULLABLE},
    {"kv_lora_rank", "--kv-lora-rank", M_VALUE},
    {"qk_head_dim", "--qk-head-dim", M_VALUE},
    {"qk_pos_emb_head_dim", "--qk-pos-emb-head-dim", M_VALUE},
    {"v_head_dim", "--v-head-dim", M_VALUE},
    {"mtp_num_layers", "--mtp-num-layers", M_VALUE},
    {"micro_batch_size", "--micro-batch-size", M_VALUE},
    {"global_batch_size", "--global-batch-size", M_VALUE},
    {"recompute_granularity", "--recompute-granularity", M_VALUE},
    {"activations_checkpoint_granularity", "--recompute-granularity", M_VALUE},
    {"recompute_method", "--recompute-method", M_VALUE},
    {"activations_checkpoint_method", "--recompute-method", M_VALUE},
    {"recompute_num_layers", "--recompute-num-layers", M_VALUE},
    {"activations_checkpoint_num_layers", "--recompute-num-layers", M_VALUE},
    {"use_distributed_optimizer", "--use-distributed-optimizer", M_SWITCH},
    {"recompute_modules", "--recompute-modules", M_VALUE},
    {"cpu_offloading", "--cpu-offloading", M_OFFLOAD},
    {"cpu_offloading_num_layers", "--cpu-offloading-num-layers", M_OFFLOAD},
    {"overlap_grad_reduce", "--overlap-grad-reduce", M_SWITCH},
    {"tp_comm_overlap", "--tp-comm-overlap", M_SWITCH},
    {"cuda_graph_impl", "--cuda-graph-impl", M_VALUE},
    {"cuda_graph_scope", "--cuda-graph-scope", M_VALUE},
    {"overlap_moe_expert_parallel_comm", "--overlap-moe-expert-parallel-comm", M_SWITCH},
    {"moe_a2a_overlap", "--overlap-moe-expert-parallel-comm", M_SWITCH},
    {"delay_wgrad_compute", "--delay-wgrad-compute", M_SWITCH},
    {"bf16", "--bf16", M_SWITCH},
    {"fp16", "--fp16", M_SWITCH},
    {"fp8", "--fp8-format", M_FP8},
    {"fp8_recipe", "--fp8-recipe", M_VALUE},
    {"fp8_param_gather", "--fp8-param-gather", M_SWITCH},
    {"fp4", "--fp4-format", M_VALUE},
    {"fp4_recipe", "--fp4-recipe", M_VALUE},
    {"fp4_param_gather", "--fp4-param-gather", M_SWITCH},
    {"fp8_dot_product_attention", "--fp8-dot-product-attention", M_SWITCH},
    {"fp8_multi_head_attention", "--fp8-multi-head-attention", M_SWITCH},
    {"first_last_layers_bf16", "--first-last-layers-bf16", M_SWITCH},
    {"num_layers_at_start_in_bf16", "--num-layers-at-start-in-bf16", M_VALUE},
    {"num_layers_at_end_in_bf16", "--num-layers-at-end-in-bf16", M_VALUE},
    {"precision", "--bf16", M_PRECISION},
    {"tokenizer_type", "--tokenizer-type", M_VALUE},
    {"optim_name", "--use-distributed-optimizer", M_OPTIM},
    {"devices", "--nproc_per_node", M_VALUE},
    {"num_nodes", "--nnodes", M_VALUE},
};

/* Where the reader is: the keys above the current value. */
struct ys {
    const char *origin;
    struct spsim_error *err;
    struct spsim_sh_words *words;
    char path[512];
    size_t depth_len[16];
    int depth;
    bool at_key[16];
    char key[128];
    /* cpu_offloading (NeMo, ModelParallelConfig) and cpu_offloading_num_layers, kept to the end:
     * the count (NeMo writes ${sum:${.num_layers},-1}) matters only when offloading is on. */
    int offload;
    char offload_layers[96];
    uint32_t offload_line;
    /* The scalars read so far, for OmegaConf's ${.key} and ${section.key} (NeMo). */
    struct {
        char path[160], value[96];
    } seen[256];
    size_t nseen;
};

static int
yaml_error(const struct ys *y, uint32_t line, const char *reason, const char *value)
{
    return spsim_fail(y->err, SPSIM_EFIELD, "%s:%u: %s%s: %s%s", y->origin, line, y->path, y->key,
                      reason, value);
}

static int
add(struct ys *y, const char *text, uint32_t line)
{
    char key[sizeof(y->path) + sizeof(y->key)];
    snprintf(key, sizeof(key), "%s%s", y->path, y->key);
    if (spsim_sh_append(y->words, text, line, key) != SPSIM_OK)
        return spsim_fail(y->err, SPSIM_ENOMEM, "out of memory");
    return SPSIM_OK;
}

/* YAML 1.1's booleans: 1 true, 0 false, -1 neither. */
static int
boolean(const char *v)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    for (size_t i = 0; i < 3; i++)
        if (strcasecmp(v, yes[i]) == 0 || strcasecmp(v, no[i]) == 0)
            return strcasecmp(v, yes[i]) == 0;
    return -1;
}

/* A value of one of the modes that are not a plain --flag VALUE. */
static int
special(struct ys *y, size_t k, const char *v, uint32_t line)
{
    int b = boolean(v);
    switch (keys[k].mode) {
    case M_SWITCH:
    case M_INVERSE:
        if (b < 0)
            return yaml_error(y, line, "must be true or false, got ", v);
        return b == (keys[k].mode == M_SWITCH) ? add(y, keys[k].flag, line) : SPSIM_OK;
    case M_GROUPS:
        if (add(y, "--group-query-attention", line) || add(y, keys[k].flag, line))
            return SPSIM_ENOMEM;
        return add(y, v, line);
    case M_NORM:
        return add(y, keys[k].flag, line) ? SPSIM_ENOMEM
                                          : add(y,
                                                strcasecmp(v, "layernorm") == 0 ? "LayerNorm"
                                                : strcasecmp(v, "rmsnorm") == 0 ? "RMSNorm"
                                                                                : v,
                                                line);
    case M_ACT:
        if (strcmp(v, "swiglu") == 0 || strcmp(v, "fast-swiglu") == 0)
            return add(y, keys[k].flag, line);
        return strcmp(v, "gelu") == 0
                   ? SPSIM_OK
                   : yaml_error(y, line, "not modelled (gelu or swiglu is): ", v);
    case M_FP8:
        if (b == 0)
            return SPSIM_OK;
        return add(y, keys[k].flag, line) ? SPSIM_ENOMEM : add(y, b == 1 ? "hybrid" : v, line);
    case M_OPTIM:
        return strcmp(v, "distributed_fused_adam") == 0 ? add(y, keys[k].flag, line) : SPSIM_OK;
    case M_PRECISION:
        if (strncmp(v, "bf16", 4) == 0 || strcmp(v, "16") == 0 || strcmp(v, "16-mixed") == 0)
            return add(y, v[0] == 'b' ? "--bf16" : "--fp16", line);
        return strcmp(v, "32") == 0 ? SPSIM_OK
                                    : yaml_error(y, line, "not modelled (bf16, 16 or 32 is): ", v);
    default:
        return SPSIM_OK;
    }
}

static void
copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src) < cap - 1 ? strlen(src) : cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* "${.key}" (a sibling) or "${section.key}" already read: its value, else NULL. */
static const char *
interpolation(const struct ys *y, const char *v)
{
    char path[sizeof(y->path) + 128];
    size_t n = strlen(v);
    if (n < 4 || strncmp(v, "${", 2) != 0 || strcspn(v + 2, "${:}") != n - 3)
        return NULL;
    if (v[2] == '.')
        snprintf(path, sizeof(path), "%s%.*s", y->path, (int)(n - 4), v + 3);
    else
        snprintf(path, sizeof(path), "%.*s", (int)(n - 3), v + 2);
    for (size_t i = 0; i < y->nseen; i++)
        if (strcmp(y->seen[i].path, path) == 0)
            return y->seen[i].value;
    return NULL;
}

/* The table's entry for the current key (NeMo's tokenizer.type and optim.name by section). */
static size_t
entry(const struct ys *y)
{
    size_t n = strlen(y->path);
    const char *name = y->key;
    if (strcmp(y->key, "type") == 0 && n >= 10 && strcmp(y->path + n - 10, "tokenizer.") == 0)
        name = "tokenizer_type";
    else if (strcmp(y->key, "name") == 0 && n >= 6 && strcmp(y->path + n - 6, "optim.") == 0)
        name = "optim_name";
    size_t k = 0;
    while (k < SPSIM_ARRAY_LENGTH(keys) && strcmp(keys[k].key, name) != 0)
        k++;
    return k;
}

/* A list of 0/1 for moe_layer_freq, as Megatron's expression "[0,1,...]" in one word. */
static int
pattern_list(struct ys *y, size_t k, const char **values, size_t n, uint32_t line)
{
    char text[128] = "[";
    size_t len = 1;
    for (size_t i = 0; i < n && len < sizeof(text); i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%s", i ? "," : "", values[i]);
    if (len + 2 > sizeof(text))
        return yaml_error(y, line, "a list too long (write Megatron's expression)", "");
    memcpy(text + len, "]", 2);
    int rc = add(y, keys[k].flag, line);
    return rc ? rc : add(y, text, line);
}

/* A key's scalar value (`values` items for a sequence). */
static int
leaf(struct ys *y, const char **values, size_t n, bool null, uint32_t line)
{
    size_t k = entry(y);
    char full[sizeof(y->path) + sizeof(y->key)];
    snprintf(full, sizeof(full), "%s%s", y->path, y->key);
    if (n == 1 && !null && y->nseen < SPSIM_ARRAY_LENGTH(y->seen)) {
        copy(y->seen[y->nseen].path, sizeof(y->seen[0].path), full);
        copy(y->seen[y->nseen++].value, sizeof(y->seen[0].value), values[0]);
    }
    if (k == SPSIM_ARRAY_LENGTH(keys))
        return null ? SPSIM_OK : add(y, full, line);
    if (null && keys[k].mode == M_NULLABLE)
        return add(y, keys[k].flag, line) ? SPSIM_ENOMEM : add(y, "None", line);
    if (null || n == 0)
        return SPSIM_OK;
    if (keys[k].mode == M_PATTERN && n > 1)
        return pattern_list(y, k, values, n, line);
    if (keys[k].mode == M_OFFLOAD && strcmp(keys[k].key, "cpu_offloading") == 0) {
        y->offload = boolean(values[0]);
        return y->offload < 0 ? yaml_error(y, line, "must be true or false, got ", values[0])
                              : SPSIM_OK;
    }
    if (keys[k].mode == M_OFFLOAD) {
        const char *v = strstr(values[0], "${") ? interpolation(y, values[0]) : values[0];
        copy(y->offload_layers, sizeof(y->offload_layers), v ? v : "${");
        y->offload_line = line;
        return SPSIM_OK;
    }
    for (size_t i = 0; i < n; i++)
        if (strstr(values[i], "${") && !(values[i] = interpolation(y, values[i])))
            return yaml_error(y, line, "an interpolation spsim cannot resolve (write the value)",
                              "");
    if (keys[k].mode != M_VALUE && keys[k].mode != M_NULLABLE && keys[k].mode != M_PATTERN)
        return n == 1 ? special(y, k, values[0], line)
                      : yaml_error(y, line, "must be one value", "");
    int rc = add(y, keys[k].flag, line);
    for (size_t i = 0; rc == SPSIM_OK && i < n; i++)
        rc = add(y, values[i], line);
    return rc;
}

static int
open_mapping(struct ys *y)
{
    if (y->depth + 1 >= (int)SPSIM_ARRAY_LENGTH(y->at_key))
        return spsim_fail(y->err, SPSIM_EFIELD, "%s: %s: nested too deep", y->origin, y->path);
    y->depth_len[y->depth] = strlen(y->path);
    if (y->depth > 0) {
        size_t n = strlen(y->path);
        snprintf(y->path + n, sizeof(y->path) - n, "%s.", y->key);
    }
    y->at_key[++y->depth] = true;
    return SPSIM_OK;
}

static void
close_mapping(struct ys *y)
{
    if (y->depth > 0)
        y->depth--;
    y->path[y->depth_len[y->depth]] = '\0';
    y->at_key[y->depth] = true;
}

static int
scalar(struct ys *y, const yaml_event_t *ev, uint32_t line)
{
    const char *v = (const char *)ev->data.scalar.value;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (y->depth == 0)
        return spsim_fail(y->err, SPSIM_EFIELD, "%s:%u: not a mapping of keys", y->origin, line);
    if (y->at_key[y->depth]) {
        snprintf(y->key, sizeof(y->key), "%s", v);
        y->at_key[y->depth] = false;
        return SPSIM_OK;
    }
    y->at_key[y->depth] = true;
    bool null = plain && (!*v || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0);
    const char *values[1] = {v};
    return leaf(y, values, 1, null, line);
}

/* A sequence's scalars, for one key; one holding collections is only listed. */
struct seq {
    bool open, nested;
    size_t n;
    char item[16][128];
    uint32_t line;
};

static int
sequence_end(struct ys *y, struct seq *q)
{
    const char *items[16];
    for (size_t i = 0; i < q->n; i++)
        items[i] = q->item[i];
    q->open = false;
    y->at_key[y->depth] = true;
    if (q->nested || q->n == SPSIM_ARRAY_LENGTH(q->item)) {
        char full[sizeof(y->path) + sizeof(y->key)];
        snprintf(full, sizeof(full), "%s%s", y->path, y->key);
        return add(y, full, q->line);
    }
    return leaf(y, items, q->n, false, q->line);
}

static int
event(struct ys *y, const yaml_event_t *ev, struct seq *q, int *skip)
{
    uint32_t line = (uint32_t)ev->start_mark.line + 1;
    switch (ev->type) {
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        if (*skip || q->open) {
            q->nested = true;
            ++*skip;
        } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
            *q = (struct seq){.open = true, .line = line};
        } else {
            return open_mapping(y);
        }
        return SPSIM_OK;
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        if (*skip)
            --*skip;
        else if (ev->type == YAML_SEQUENCE_END_EVENT)
            return sequence_end(y, q);
        else
            close_mapping(y);
        return SPSIM_OK;
    case YAML_SCALAR_EVENT:
        if (q->open && !*skip && q->n < SPSIM_ARRAY_LENGTH(q->item))
            snprintf(q->item[q->n++], sizeof(q->item[0]), "%s",
                     (const char *)ev->data.scalar.value);
        return *skip || q->open ? SPSIM_OK : scalar(y, ev, line);
    case YAML_ALIAS_EVENT:
        return *skip || q->open
                   ? SPSIM_OK
                   : yaml_error(y, line, "aliases are not resolved (write the value)", "");
    default:
        return SPSIM_OK;
    }
}

/* The offload flags, once the document is read. */
static int
offload_flags(struct ys *y)
{
    if (y->offload != 1 || !y->offload_layers[0])
        return SPSIM_OK;
    snprintf(y->key, sizeof(y->key), "cpu_offloading_num_layers");
    y->path[0] = '\0';
    if (strcmp(y->offload_layers, "${") == 0)
        return yaml_error(y, y->offload_line,
                          "an interpolation spsim cannot resolve (write the value)", "");
    int rc = add(y, "--cpu-offloading-num-layers", y->offload_line);
    return rc ? rc : add(y, y->offload_layers, y->offload_line);
}

int
spsim_megatron_yaml(const char *text, size_t len, const char *origin, struct spsim_sh_script *out,
                    struct spsim_error *err)
{
    yaml_parser_t p;
    struct spsim_sh_words words = {0};
    struct ys y = {.origin = origin, .err = err, .words = &words};
    struct seq q = {.open = false};
    int rc = SPSIM_OK, skip = 0;
    memset(out, 0, sizeof(*out));
    if (!yaml_parser_initialize(&p))
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    for (bool done = false; rc == SPSIM_OK && !done;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = spsim_fail(err, SPSIM_EPARSE, "%s:%zu: %s", origin, p.problem_mark.line + 1,
                            p.problem ? p.problem : "malformed YAML");
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = event(&y, &ev, &q, &skip);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    if (rc == SPSIM_OK)
        rc = offload_flags(&y);
    if (rc == SPSIM_OK && (rc = spsim_sh_add_command(out, &words)) != SPSIM_OK)
        rc = spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    spsim_sh_words_free(&words);
    return rc;
}

#else

int
spsim_megatron_yaml(const char *text, size_t len, const char *origin, struct spsim_sh_script *out,
                    struct spsim_error *err)
{
    (void)text;
    (void)len;
    memset(out, 0, sizeof(*out));
    return spsim_fail(err, SPSIM_ENOTSUP, "%s: this build reads no YAML (libyaml was not found)",
                      origin);
}

#endif
