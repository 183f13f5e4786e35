/* Sweep specs: the values of each axis, from option text or a JSON file. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profiles/jsonfield.h"
#include "spsim/fields.h"
#include "sweep_internal.h"

/* Bounds of the integer axes: those spsim_parallel_check() enforces (src/engine/parallel.c
 * MAX_DEGREE, MAX_MBS, MAX_GBS, MAX_SEQ, MAX_GPUS), so a value outside them is an input error
 * rather than a point that can never be valid. */
#define DEGREE_MAX 65536u
#define GBS_MAX    (1ull << 32)
#define SEQ_MAX    (1u << 24)
#define GPUS_MAX   (1u << 24)
/* Values one axis may hold: far above any useful sweep, low enough to refuse a typo such as
 * --gbs 1..4294967296 before it allocates gigabytes. */
#define AXIS_MAX_VALUES (1u << 20)

enum axis_kind { KIND_INT, KIND_SWITCH, KIND_NAMES, KIND_CHOICE, KIND_MODULES };

struct axis_info {
    const char *name;
    enum axis_kind kind;
    uint64_t min, max;          /* KIND_INT */
    const char *const *choices; /* KIND_CHOICE, NULL-terminated; value = index + offset */
    int offset;
    int nchoices;   /* KIND_CHOICE: only the first nchoices; 0 = all */
    bool derivable; /* KIND_INT: also "auto", derived per configuration (sweep.c) */
};

/* flash_attn: −1 = the model's kernel, 0 = standard, 1 = flash (struct spsim_parallel). */
static const char *const flash_choices[] = {"model", "off", "on", NULL};
static const char *const split_choices[] = {"even", "account", "balanced", NULL};

static const struct axis_info axes[SPSIM_AXIS_COUNT] = {
    [SPSIM_AXIS_MODEL] = {"model", KIND_NAMES, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_HW] = {"hw", KIND_NAMES, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_TP] = {"tp", KIND_INT, 1, DEGREE_MAX, NULL, 0, 0},
    [SPSIM_AXIS_PP] = {"pp", KIND_INT, 1, DEGREE_MAX, NULL, 0, 0, true},
    [SPSIM_AXIS_CP] = {"cp", KIND_INT, 1, DEGREE_MAX, NULL, 0, 0},
    [SPSIM_AXIS_DP] = {"dp", KIND_INT, 1, DEGREE_MAX, NULL, 0, 0},
    [SPSIM_AXIS_GPUS] = {"gpus", KIND_INT, 1, GPUS_MAX, NULL, 0, 0},
    [SPSIM_AXIS_VPP] = {"vpp", KIND_INT, 1, DEGREE_MAX, NULL, 0, 0, true},
    [SPSIM_AXIS_SP] = {"sp", KIND_SWITCH, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_RECOMPUTE] = {"recompute", KIND_CHOICE, 0, 0, spsim_recompute_names, 0, 0},
    [SPSIM_AXIS_MBS] = {"mbs", KIND_INT, 1, DEGREE_MAX, NULL, 0, 0},
    [SPSIM_AXIS_GBS] = {"gbs", KIND_INT, 1, GBS_MAX, NULL, 0, 0},
    [SPSIM_AXIS_SEQ] = {"seq", KIND_INT, 1, SEQ_MAX, NULL, 0, 0},
    [SPSIM_AXIS_FLASH_ATTN] = {"flash_attn", KIND_CHOICE, 0, 0, flash_choices, -1, 0},
    [SPSIM_AXIS_DISTRIBUTED_OPTIMIZER] = {"distributed_optimizer", KIND_SWITCH, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_OVERLAP_GRAD_REDUCE] = {"overlap_grad_reduce", KIND_SWITCH, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_DTYPE] = {"dtype", KIND_CHOICE, 0, 0, spsim_dtype_names, 0,
                          SPSIM_DTYPE_TRAINING_COUNT},
    [SPSIM_AXIS_FP8_RECIPE] = {"fp8_recipe", KIND_CHOICE, 0, 0, spsim_fp8_recipe_names, 0, 0},
    [SPSIM_AXIS_PP_SPLIT] = {"pp_split", KIND_CHOICE, 0, 0, split_choices, 0, 0},
    [SPSIM_AXIS_MAX_GBS] = {"max_gbs", KIND_INT, 1, GBS_MAX, NULL, 0},
    [SPSIM_AXIS_RECOMPUTE_MODULES] = {"recompute_modules", KIND_MODULES, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_RECOMPUTE_METHOD] = {"recompute_method", KIND_CHOICE, 0, 0,
                                     spsim_recompute_method_names, 0, 0},
    [SPSIM_AXIS_RECOMPUTE_LAYERS] = {"recompute_layers", KIND_INT, 0, DEGREE_MAX, NULL, 0, 0},
    [SPSIM_AXIS_OFFLOAD_LAYERS] = {"offload_layers", KIND_INT, 0, DEGREE_MAX, NULL, 0, 0},
    [SPSIM_AXIS_CP_COMM_TYPE] = {"cp_comm_type", KIND_CHOICE, 0, 0, spsim_cp_comm_names, 0, 0},
    [SPSIM_AXIS_ZERO] = {"zero", KIND_INT, 0, 3, NULL, 0, 0},
    [SPSIM_AXIS_OVERLAP_PARAM_GATHER] = {"overlap_param_gather", KIND_SWITCH, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_GRAD_REDUCE_IN_FP32] = {"grad_reduce_in_fp32", KIND_SWITCH, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_EP] = {"ep", KIND_INT, 1, DEGREE_MAX, NULL, 0, 0},
    [SPSIM_AXIS_ETP] = {"etp", KIND_INT, 0, DEGREE_MAX, NULL, 0, 0},
    [SPSIM_AXIS_MOE_DISPATCHER] = {"moe_dispatcher", KIND_CHOICE, 0, 0, spsim_moe_dispatcher_names,
                                   0, 0},
    [SPSIM_AXIS_A2A_OVERLAP] = {"overlap_moe_expert_parallel_comm", KIND_SWITCH, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_DELAY_WGRAD] = {"delay_wgrad_compute", KIND_SWITCH, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_TP_COMM_OVERLAP] = {"tp_comm_overlap", KIND_SWITCH, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_OVERLAP_P2P] = {"overlap_p2p_communication", KIND_SWITCH, 0, 0, NULL, 0, 0},
    [SPSIM_AXIS_DIST_OPT_INSTANCES] = {"num_distributed_optimizer_instances", KIND_INT, 1,
                                       DEGREE_MAX, NULL, 0, 0},
};

const char *
spsim_sweep_axis_name(enum spsim_sweep_axis axis)
{
    return (unsigned)axis < SPSIM_AXIS_COUNT ? axes[axis].name : "?";
}

int
spsim_sweep_axis_from_name(const char *name)
{
    if (!name)
        return -1;
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++) {
        const char *p = axes[a].name, *q = name;
        while (*p && (*q == *p || (*q == '-' && *p == '_'))) {
            p++;
            q++;
        }
        if (!*p && !*q)
            return a;
    }
    return -1;
}

int
spsim_sweep_spec_create(struct spsim_sweep_spec **out, struct spsim_error *err)
{
    if (!out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_sweep_spec_create: NULL argument");
    *out = spsim_calloc(1, sizeof(**out));
    return *out ? SPSIM_OK : spsim_fail(err, SPSIM_ENOMEM, "out of memory");
}

static void
values_free(struct spsim_axis_values *a)
{
    if (a->names)
        for (uint32_t i = 0; i < a->n; i++)
            free(a->names[i]);
    free(a->names);
    free(a->v);
    memset(a, 0, sizeof(*a));
}

void
spsim_sweep_spec_destroy(struct spsim_sweep_spec *spec)
{
    if (!spec)
        return;
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++)
        values_free(&spec->axis[a]);
    free(spec);
}

bool
spsim_sweep_spec_is_set(const struct spsim_sweep_spec *spec, enum spsim_sweep_axis axis)
{
    return spec && (unsigned)axis < SPSIM_AXIS_COUNT && spec->axis[axis].set;
}

/* One item of a list, being parsed: where it came from and the item's text. */
struct item {
    const char *where;
    const char *text; /* the item alone, NUL-terminated */
    struct spsim_error *err;
};

static int
item_error(const struct item *it, const char *fmt, const char *detail)
{
    char reason[256];
    snprintf(reason, sizeof(reason), fmt, detail);
    return spsim_fail(it->err, SPSIM_EFIELD, "%s: %s %s", it->where, SPSIM_Q(it->text), reason);
}

/* A whole unsigned decimal in [min, max]; *end gets what follows it. */
static bool
read_uint(const char *s, const char **end, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *end = p;
    *out = v;
    return v >= min && v <= max;
}

/* A list being built: values in order, each at most once. */
struct list {
    uint32_t n, cap;
    int64_t *v;
    uint32_t names_cap;
    struct spsim_strset seen; /* the names so far: an axis may hold 2^20 of them */
};

static int
list_add(struct list *l, const struct item *it, int64_t value)
{
    if (l->n >= AXIS_MAX_VALUES)
        return item_error(it, "makes the axis longer than %s values", "1048576");
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 16;
        int64_t *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return spsim_fail(it->err, SPSIM_ENOMEM, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = value;
    return SPSIM_OK;
}

/* N, A..B, A..B:S or A..B:*F. */
static int
parse_int_item(const struct axis_info *ax, const struct item *it, struct list *l)
{
    char bounds[64];
    snprintf(bounds, sizeof(bounds), "[%llu, %llu]", (unsigned long long)ax->min,
             (unsigned long long)ax->max);
    const char *p = it->text;
    uint64_t a, b, step = 1;
    bool geometric = false;
    if (ax->derivable && strcmp(p, "auto") == 0)
        return list_add(l, it, SPSIM_AXIS_AUTO);
    if (!read_uint(p, &p, ax->min, ax->max, &a))
        return item_error(it, "is not an integer or range of integers in %s", bounds);
    b = a;
    if (p[0] == '.' && p[1] == '.') {
        if (!read_uint(p + 2, &p, ax->min, ax->max, &b))
            return item_error(it, "is not a range A..B of integers in %s", bounds);
        if (*p == ':') {
            geometric = p[1] == '*';
            if (!read_uint(p + 1 + geometric, &p, geometric ? 2 : 1, UINT32_MAX, &step))
                return item_error(it, "has a bad step: A..B:S needs S >= 1, A..B:*F needs F >= %s",
                                  "2");
        }
        if (b < a)
            return item_error(it, "is a range whose end is below its start%s", "");
    }
    if (*p != '\0')
        return item_error(it, "is not an integer or a range (N, A..B, A..B:S, A..B:*F) in %s",
                          bounds);
    for (uint64_t v = a; v <= b;) {
        int rc = list_add(l, it, (int64_t)v);
        if (rc != SPSIM_OK)
            return rc;
        uint64_t next = geometric ? v * step : v + step;
        if (next <= v || next > b)
            break;
        v = next;
    }
    return SPSIM_OK;
}

static int
parse_word_item(const struct axis_info *ax, const struct item *it, struct list *l)
{
    static const char *const on[] = {"on", "true", "yes", "1", NULL};
    static const char *const off[] = {"off", "false", "no", "0", NULL};
    if (ax->kind == KIND_SWITCH) {
        for (int i = 0; on[i]; i++)
            if (strcmp(it->text, on[i]) == 0)
                return list_add(l, it, 1);
        for (int i = 0; off[i]; i++)
            if (strcmp(it->text, off[i]) == 0)
                return list_add(l, it, 0);
        return item_error(it, "is not %s", "on or off");
    }
    char choices[128] = "";
    for (int i = 0; ax->choices[i] && (ax->nchoices == 0 || i < ax->nchoices); i++) {
        if (strcmp(it->text, ax->choices[i]) == 0)
            return list_add(l, it, i + ax->offset);
        size_t used = strlen(choices);
        snprintf(choices + used, sizeof(choices) - used, "%s%s", i ? ", " : "", ax->choices[i]);
    }
    return item_error(it, "is not one of %s", choices);
}

/* A set of recompute modules joined by '+', or "default" (0: Megatron's core_attn). */
static int
parse_modules_item(const struct item *it, struct list *l)
{
    uint32_t mask = 0;
    if (strcmp(it->text, "default") != 0 && spsim_recompute_modules_parse(it->text, &mask) != 0)
        return item_error(it, "is not default or modules joined by '+' (%s)",
                          "core_attn, layernorm, mlp, moe_act, mla_up_proj, moe, shared_experts");
    return list_add(l, it, mask);
}

static int
compare_values(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Each value at most once: a sorted copy has no equal neighbours. */
static int
check_repeats(const struct list *l, const char *text, const char *where, struct spsim_error *err)
{
    int64_t *sorted = spsim_calloc(l->n ? l->n : 1, sizeof(*sorted));
    if (!sorted)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    memcpy(sorted, l->v, l->n * sizeof(*sorted));
    qsort(sorted, l->n, sizeof(*sorted), compare_values);
    int rc = SPSIM_OK;
    for (uint32_t i = 1; i < l->n && rc == SPSIM_OK; i++)
        if (sorted[i] == sorted[i - 1])
            rc = spsim_fail(err, SPSIM_EFIELD, "%s: the value %lld appears twice in %s", where,
                            (long long)sorted[i], SPSIM_Q(text));
    free(sorted);
    return rc;
}

/* Names keep their text; the list holds their positions. */
static int
parse_name_item(const struct item *it, struct list *l, char ***names)
{
    size_t len = strlen(it->text);
    if (spsim_strset_find(&l->seen, it->text, len) != SPSIM_STRSET_NONE)
        return item_error(it, "appears twice%s", "");
    if (l->n == l->names_cap) {
        uint32_t cap = l->names_cap ? 2 * l->names_cap : 16;
        char **grown = realloc(*names, cap * sizeof(*grown));
        if (!grown)
            return spsim_fail(it->err, SPSIM_ENOMEM, "out of memory");
        *names = grown;
        l->names_cap = cap;
    }
    char *copy = spsim_strdup(it->text);
    if (!copy)
        return spsim_fail(it->err, SPSIM_ENOMEM, "out of memory");
    int rc = list_add(l, it, l->n);
    if (rc != SPSIM_OK) {
        free(copy);
        return rc;
    }
    (*names)[l->n - 1] = copy; /* owned by names from here */
    if (spsim_strset_put(&l->seen, copy, len, l->n - 1) != SPSIM_OK)
        return spsim_fail(it->err, SPSIM_ENOMEM, "out of memory");
    return SPSIM_OK;
}

/* Split at commas, trim blanks, parse every item. */
static int
parse_list(const struct axis_info *ax, const char *text, const char *where, struct list *l,
           char ***names, struct spsim_error *err)
{
    char *copy = spsim_strdup(text);
    if (!copy)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    int rc = SPSIM_OK;
    char *p = copy;
    for (bool last = false; rc == SPSIM_OK && !last;) {
        char *comma = strchr(p, ',');
        last = !comma;
        if (comma)
            *comma = '\0';
        while (*p == ' ' || *p == '\t')
            p++;
        for (char *e = p + strlen(p); e > p && (e[-1] == ' ' || e[-1] == '\t');)
            *--e = '\0';
        struct item it = {where, p, err};
        if (*p == '\0')
            rc = spsim_fail(err, SPSIM_EFIELD, "%s: empty value in %s", where, SPSIM_Q(text));
        else if (ax->kind == KIND_INT)
            rc = parse_int_item(ax, &it, l);
        else if (ax->kind == KIND_NAMES)
            rc = parse_name_item(&it, l, names);
        else if (ax->kind == KIND_MODULES)
            rc = parse_modules_item(&it, l);
        else
            rc = parse_word_item(ax, &it, l);
        if (comma)
            p = comma + 1; /* comma + 1 with comma NULL is undefined (C11 6.5.6p8) */
    }
    free(copy);
    if (rc == SPSIM_OK && ax->kind != KIND_NAMES)
        rc = check_repeats(l, text, where, err);
    return rc;
}

int
spsim_sweep_spec_parse(struct spsim_sweep_spec *spec, enum spsim_sweep_axis axis, const char *text,
                       const char *where, struct spsim_error *err)
{
    if (!spec || !text || (unsigned)axis >= SPSIM_AXIS_COUNT)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_sweep_spec_parse: invalid argument");
    if (!where)
        where = axes[axis].name;
    struct list l = {0};
    char **names = NULL;
    int rc = parse_list(&axes[axis], text, where, &l, &names, err);
    spsim_strset_free(&l.seen);
    if (rc != SPSIM_OK) {
        for (uint32_t i = 0; names && i < l.n; i++)
            free(names[i]);
        free(names);
        free(l.v);
        return rc;
    }
    struct spsim_axis_values *a = &spec->axis[axis];
    values_free(a);
    *a = (struct spsim_axis_values){true, l.n, l.v, names};
    return SPSIM_OK;
}

/* A number no axis can take: an integer out of the axis' range, or not an integer. Written
 * shortest (1e+300, not 1.0000000000000001e+300). */
static int
number_error(const struct spsim_jctx *c, const char *key, double d)
{
    int axis = spsim_sweep_axis_from_name(key);
    char text[32];
    spsim_format_double(d, text);
    if (d != floor(d) || !isfinite(d))
        return spsim_json_field_error(c, NULL, key, "%s is not a non-negative integer", text);
    if (axis >= 0 && axes[axis].kind == KIND_INT)
        return spsim_json_field_error(c, NULL, key, "%s is out of range [%llu, %llu]", text,
                                      (unsigned long long)axes[axis].min,
                                      (unsigned long long)axes[axis].max);
    return spsim_json_field_error(c, NULL, key, "%s is out of range", text);
}

/* A JSON value as list text: numbers and booleans written out, strings as they are. */
static int
json_item_text(const struct spsim_jctx *c, const char *key, const cJSON *v, char *buf, size_t cap)
{
    if (cJSON_IsString(v) && v->valuestring) {
        if (snprintf(buf, cap, "%s", v->valuestring) >= (int)cap)
            return spsim_json_field_error(c, NULL, key, "a value is longer than %zu bytes", cap);
        return SPSIM_OK;
    }
    if (cJSON_IsBool(v)) {
        snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "on" : "off");
        return SPSIM_OK;
    }
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        /* 2^53: beyond it a double no longer holds every integer. */
        if (!(d >= 0 && d <= 9007199254740992.0 && d == floor(d)))
            return number_error(c, key, d);
        snprintf(buf, cap, "%llu", (unsigned long long)d);
        return SPSIM_OK;
    }
    return spsim_json_field_error(c, NULL, key,
                                  "must be a number, a string, a boolean or an array of them");
}

/* The axis' JSON value (a value or an array of values) joined into list text. */
static int
json_axis_text(const struct spsim_jctx *c, const cJSON *v, struct spsim_text *text)
{
    bool array = cJSON_IsArray(v);
    if (array && !v->child)
        return spsim_json_field_error(c, NULL, v->string, "must not be an empty array");
    for (const cJSON *it = array ? v->child : v; it; it = array ? it->next : NULL) {
        char item[4096];
        int rc = cJSON_IsArray(it)
                     ? spsim_json_field_error(c, NULL, v->string, "arrays must not be nested")
                     : json_item_text(c, v->string, it, item, sizeof(item));
        if (rc == SPSIM_OK)
            rc = spsim_text_reserve(text, strlen(item) + 2);
        if (rc != SPSIM_OK)
            return rc == SPSIM_ENOMEM ? spsim_fail(c->err, rc, "out of memory") : rc;
        if (text->len)
            text->s[text->len++] = ',';
        memcpy(text->s + text->len, item, strlen(item) + 1);
        text->len += strlen(item);
    }
    return SPSIM_OK;
}

static int
load_axes(struct spsim_sweep_spec *spec, const cJSON *root, const char *path,
          struct spsim_error *err)
{
    struct spsim_jctx c = {path, err};
    const cJSON *repeat = NULL;
    int rc0 = spsim_json_repeated_key(&c, root, &repeat);
    if (rc0 != SPSIM_OK)
        return rc0;
    for (const cJSON *v = root->child; v; v = v->next) {
        if (v == repeat)
            return spsim_json_field_error(&c, NULL, v->string, "appears twice");
        if (v->string[0] == '_')
            continue;
        int axis = spsim_sweep_axis_from_name(v->string);
        if (axis < 0 || strchr(v->string, '-'))
            return spsim_json_field_error(
                &c, NULL, v->string,
                "unknown key (the axes are model, hw, tp, pp, cp, dp, "
                "gpus, vpp, sp, recompute, mbs, gbs, seq, flash_attn, "
                "distributed_optimizer, overlap_grad_reduce, dtype, fp8_recipe, "
                "recompute_modules, recompute_method, "
                "recompute_layers, offload_layers, cp_comm_type, zero, "
                "overlap_param_gather, grad_reduce_in_fp32; "
                "keys starting with '_' are comments)");
        struct spsim_text text = {0};
        int rc = json_axis_text(&c, v, &text);
        char where[512];
        snprintf(where, sizeof(where), "%s: field %s", path, SPSIM_Q(v->string));
        if (rc == SPSIM_OK)
            rc = spsim_sweep_spec_parse(spec, (enum spsim_sweep_axis)axis, text.s, where, err);
        spsim_text_free(&text);
        if (rc != SPSIM_OK)
            return rc;
    }
    return SPSIM_OK;
}

int
spsim_sweep_spec_load(struct spsim_sweep_spec *spec, const char *path, struct spsim_error *err)
{
    if (!spec || !path)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_sweep_spec_load: NULL argument");
    char *buf = NULL;
    size_t len = 0;
    cJSON *root = NULL;
    int rc = spsim_read_file(path, &buf, &len, err);
    if (rc == SPSIM_OK)
        rc = spsim_json_parse(buf, len, path, &root, err);
    if (rc == SPSIM_OK)
        rc = load_axes(spec, root, path, err);
    cJSON_Delete(root);
    free(buf);
    return rc;
}
