/*
 * The sweep's space and its points: profiles loaded once, points decoded from their index,
 * and a point evaluated from a cached layer summary plus spsim_compose() (the same arithmetic
 * as spsim_evaluate(), which composes from the same summary).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spsim/data.h"
#include "sweep_internal.h"

static void
free_names(char **names, uint32_t n)
{
    for (uint32_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

void
spsim_sweep_destroy(struct spsim_sweep *sw)
{
    if (!sw)
        return;
    uint32_t nm = sw->n[SPSIM_AXIS_MODEL], nh = sw->n[SPSIM_AXIS_HW];
    for (uint32_t i = 0; sw->models && i < nm; i++)
        spsim_model_destroy(sw->models[i]);
    for (uint32_t i = 0; sw->hws && i < nh; i++)
        spsim_hardware_destroy(sw->hws[i]);
    free(sw->models);
    free(sw->hws);
    free(sw->hw_names);
    free_names(sw->csv_model, nm);
    free_names(sw->json_model, nm);
    free_names(sw->csv_hw, nh);
    free_names(sw->json_hw, nh);
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++)
        free(sw->v[a]);
    free(sw);
}

/* The value an unset axis takes (spsim_parallel_defaults; gpus unused). */
static int64_t
axis_default(int axis)
{
    switch (axis) {
    case SPSIM_AXIS_TP:
    case SPSIM_AXIS_PP:
    case SPSIM_AXIS_CP:
    case SPSIM_AXIS_DP:
    case SPSIM_AXIS_VPP:
    case SPSIM_AXIS_MBS:
    case SPSIM_AXIS_GBS:
    case SPSIM_AXIS_EP:
    case SPSIM_AXIS_OVERLAP_P2P: /* Megatron's default: async sends with interleaving */
    case SPSIM_AXIS_DIST_OPT_INSTANCES:
        return 1;
    case SPSIM_AXIS_FLASH_ATTN:
        return -1; /* the model's kernel */
    case SPSIM_AXIS_GRAD_REDUCE_IN_FP32:
        return -1; /* Megatron's choice for the dtype */
    default:
        return 0; /* seq 0 = the model's; switches off; recompute none; dtype bf16; gpus unused */
    }
}

static int
copy_axes(const struct spsim_sweep_spec *spec, struct spsim_sweep *sw, struct spsim_error *err)
{
    sw->size = 1;
    sw->points = 1;
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++) {
        const struct spsim_axis_values *ax = &spec->axis[a];
        sw->n[a] = ax->set ? ax->n : 1;
        sw->v[a] = spsim_calloc(sw->n[a], sizeof(int64_t));
        if (!sw->v[a])
            return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
        if (ax->set)
            memcpy(sw->v[a], ax->v, ax->n * sizeof(int64_t));
        else
            sw->v[a][0] = axis_default(a);
        /* 2^62: indices, shard bounds and counts stay far from 64-bit overflow. Optimize's
         * space is searched by branch and bound, not by index: it may be larger, and is then
         * not indexed (size 0; spsim_sweep_run and spsim_sweep_point_at refuse it). */
        sw->points *= sw->n[a];
        if (sw->size > (UINT64_C(1) << 62) / sw->n[a] && !spec->skip_inert)
            return spsim_fail(err, SPSIM_ERANGE,
                              "sweep: the space has more than 2^62 points; shorten an axis");
        sw->unindexed |= sw->size > (UINT64_C(1) << 62) / sw->n[a];
        sw->size = sw->unindexed ? 0 : sw->size * sw->n[a];
    }
    sw->use_gpus = spec->axis[SPSIM_AXIS_GPUS].set;
    for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_PP]; i++)
        sw->auto_pipeline |= sw->v[SPSIM_AXIS_PP][i] == SPSIM_AXIS_AUTO;
    for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_VPP]; i++)
        sw->auto_pipeline |= sw->v[SPSIM_AXIS_VPP][i] == SPSIM_AXIS_AUTO;
    sw->skip_inert = spec->skip_inert;
    /* active[] lists the multi-valued axes outermost first; first_active[a] is the position
     * of the first of them at or inside axis a. */
    uint32_t k = 0;
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++) {
        sw->first_active[a] = k;
        if (sw->n[a] > 1)
            sw->active[k++] = (uint8_t)a;
    }
    sw->nactive = k;
    sw->recheck_from = SPSIM_AXIS_COUNT;
    for (uint32_t i = k; i-- > 0;) {
        int a = sw->active[i];
        if (a != SPSIM_AXIS_GBS && a != SPSIM_AXIS_DISTRIBUTED_OPTIMIZER &&
            a != SPSIM_AXIS_OVERLAP_GRAD_REDUCE)
            break;
        sw->recheck_from = a;
    }
    return SPSIM_OK;
}

static int
load_profiles(const struct spsim_sweep_spec *spec, struct spsim_sweep *sw, struct spsim_error *err)
{
    const struct spsim_axis_values *m = &spec->axis[SPSIM_AXIS_MODEL];
    const struct spsim_axis_values *h = &spec->axis[SPSIM_AXIS_HW];
    sw->models = spsim_calloc(m->n, sizeof(*sw->models));
    sw->hws = spsim_calloc(h->n, sizeof(*sw->hws));
    sw->hw_names = spsim_calloc(h->n, sizeof(*sw->hw_names));
    if (!sw->models || !sw->hws || !sw->hw_names)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    char path[4096];
    int rc = SPSIM_OK;
    for (uint32_t i = 0; rc == SPSIM_OK && i < m->n; i++) {
        rc = spsim_profile_resolve(SPSIM_PROFILE_MODEL, m->names[i], path, sizeof(path), err);
        if (rc == SPSIM_OK)
            rc = spsim_model_load(path, &sw->models[i], err);
        if (rc == SPSIM_OK)
            rc = spsim_model_modelled(sw->models[i], err);
    }
    for (uint32_t i = 0; rc == SPSIM_OK && i < h->n; i++) {
        rc = spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, h->names[i], path, sizeof(path), err);
        if (rc == SPSIM_OK)
            rc = spsim_hardware_load(path, &sw->hws[i], err);
        if (rc == SPSIM_OK)
            sw->hw_names[i] = sw->hws[i]->name;
    }
    return rc;
}

static int
quote_names(struct spsim_sweep *sw, struct spsim_error *err)
{
    uint32_t nm = sw->n[SPSIM_AXIS_MODEL], nh = sw->n[SPSIM_AXIS_HW];
    sw->csv_model = spsim_calloc(nm, sizeof(char *));
    sw->json_model = spsim_calloc(nm, sizeof(char *));
    sw->csv_hw = spsim_calloc(nh, sizeof(char *));
    sw->json_hw = spsim_calloc(nh, sizeof(char *));
    if (!sw->csv_model || !sw->json_model || !sw->csv_hw || !sw->json_hw)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < nm; i++) {
        const char *name = spsim_model_name(sw->models[i]);
        if (!(sw->csv_model[i] = spsim_row_quote(SPSIM_ROW_CSV, name)) ||
            !(sw->json_model[i] = spsim_row_quote(SPSIM_ROW_JSONL, name)))
            return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < nh; i++) {
        if (!(sw->csv_hw[i] = spsim_row_quote(SPSIM_ROW_CSV, sw->hw_names[i])) ||
            !(sw->json_hw[i] = spsim_row_quote(SPSIM_ROW_JSONL, sw->hw_names[i])))
            return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    }
    return SPSIM_OK;
}

/* The layer configuration is a function of these axes' digits (single-valued ones add
 * nothing to the number: digit 0 of radix 1). */
static const int layer_key_axes[] = {SPSIM_AXIS_MODEL,
                                     SPSIM_AXIS_HW,
                                     SPSIM_AXIS_TP,
                                     SPSIM_AXIS_SP,
                                     SPSIM_AXIS_RECOMPUTE,
                                     SPSIM_AXIS_MBS,
                                     SPSIM_AXIS_SEQ,
                                     SPSIM_AXIS_FLASH_ATTN,
                                     SPSIM_AXIS_DTYPE,
                                     SPSIM_AXIS_RECOMPUTE_MODULES,
                                     SPSIM_AXIS_CP,
                                     SPSIM_AXIS_CP_COMM_TYPE,
                                     SPSIM_AXIS_FP8_RECIPE,
                                     SPSIM_AXIS_EP,
                                     SPSIM_AXIS_ETP,
                                     SPSIM_AXIS_MOE_DISPATCHER,
                                     SPSIM_AXIS_TP_COMM_OVERLAP,
                                     SPSIM_AXIS_GRAD_REDUCE_IN_FP32};

/* The axes that set no field spsim_layer_config_from reads (nor the padded vocabulary's tp):
 * while only these change, consecutive points share their layer summary. An axis whose field
 * the layer configuration comes to read must leave this list. */
static const int layer_inert_axes[] = {SPSIM_AXIS_PP,
                                       SPSIM_AXIS_VPP,
                                       SPSIM_AXIS_GBS,
                                       SPSIM_AXIS_DISTRIBUTED_OPTIMIZER,
                                       SPSIM_AXIS_OVERLAP_GRAD_REDUCE,
                                       SPSIM_AXIS_ZERO,
                                       SPSIM_AXIS_OVERLAP_PARAM_GATHER,
                                       SPSIM_AXIS_RECOMPUTE_METHOD,
                                       SPSIM_AXIS_RECOMPUTE_LAYERS,
                                       SPSIM_AXIS_OFFLOAD_LAYERS,
                                       SPSIM_AXIS_PP_SPLIT,
                                       SPSIM_AXIS_MAX_GBS,
                                       SPSIM_AXIS_A2A_OVERLAP,
                                       SPSIM_AXIS_DELAY_WGRAD,
                                       SPSIM_AXIS_DIST_OPT_INSTANCES};

/* The multi-valued ones among them, in that order (sw->key_axes). */
static void
find_key_axes(struct spsim_sweep *sw)
{
    sw->nkey_axes = 0;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(layer_key_axes); i++)
        if (sw->n[layer_key_axes[i]] > 1)
            sw->key_axes[sw->nkey_axes++] = (uint8_t)layer_key_axes[i];
    bool inert[SPSIM_AXIS_COUNT] = {false};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(layer_inert_axes); i++)
        inert[layer_inert_axes[i]] = true;
    sw->layer_inside[SPSIM_AXIS_COUNT] = false;
    for (int a = SPSIM_AXIS_COUNT - 1; a >= 0; a--)
        sw->layer_inside[a] = (sw->n[a] > 1 && !inert[a]) || sw->layer_inside[a + 1];
}

/* Their digits' mixed-radix number. */
static uint64_t
layer_key(const struct spsim_sweep *sw, const uint32_t *d)
{
    uint64_t key = 0;
    for (uint32_t i = 0; i < sw->nkey_axes; i++)
        key = key * sw->n[sw->key_axes[i]] + d[sw->key_axes[i]];
    return key;
}

/* Enough slots that the layer keys met while the outer axes stay put never collide: the
 * product of the key axes nested inside tp (they vary faster than pp, dp, vpp), capped so a
 * thread keeps a few megabytes. */
static uint32_t
cache_slots(const struct spsim_sweep *sw)
{
    static const int inner[] = {
        SPSIM_AXIS_SP,         SPSIM_AXIS_RECOMPUTE,         SPSIM_AXIS_MBS,
        SPSIM_AXIS_SEQ,        SPSIM_AXIS_FLASH_ATTN,        SPSIM_AXIS_DTYPE,
        SPSIM_AXIS_FP8_RECIPE, SPSIM_AXIS_RECOMPUTE_MODULES, SPSIM_AXIS_TP_COMM_OVERLAP};
    uint64_t want = 1;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(inner); i++)
        want *= sw->n[inner[i]];
    uint32_t slots = 16;
    while (slots < want && slots < 1024)
        slots *= 2;
    return slots;
}

int
spsim_sweep_create(const struct spsim_sweep_spec *spec, struct spsim_sweep **out,
                   struct spsim_error *err)
{
    if (!spec || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_sweep_create: NULL argument");
    if (!spec->axis[SPSIM_AXIS_MODEL].set || !spec->axis[SPSIM_AXIS_HW].set)
        return spsim_fail(err, SPSIM_EINVAL, "sweep: axis '%s' is required",
                          spec->axis[SPSIM_AXIS_MODEL].set ? "hw" : "model");
    if (spec->axis[SPSIM_AXIS_GBS].set && spec->axis[SPSIM_AXIS_MAX_GBS].set)
        return spsim_fail(err, SPSIM_EINVAL, "sweep: axes 'gbs' and 'max_gbs' exclude each other");
    if (spec->axis[SPSIM_AXIS_DP].set && spec->axis[SPSIM_AXIS_GPUS].set)
        return spsim_fail(err, SPSIM_EINVAL,
                          "sweep: axes 'dp' and 'gpus' exclude each other (with gpus, dp = "
                          "gpus / (tp·pp))");
    struct spsim_sweep *sw = spsim_calloc(1, sizeof(*sw));
    if (!sw)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    int rc = copy_axes(spec, sw, err);
    if (rc == SPSIM_OK)
        rc = load_profiles(spec, sw, err);
    if (rc == SPSIM_OK)
        rc = quote_names(sw, err);
    if (rc != SPSIM_OK) {
        spsim_sweep_destroy(sw);
        return rc;
    }
    sw->cache_slots = cache_slots(sw);
    find_key_axes(sw);
    *out = sw;
    return SPSIM_OK;
}

uint64_t
spsim_sweep_size(const struct spsim_sweep *sw)
{
    return sw ? sw->size : 0;
}

uint32_t
spsim_sweep_axis_size(const struct spsim_sweep *sw, enum spsim_sweep_axis axis)
{
    return sw && (unsigned)axis < SPSIM_AXIS_COUNT ? sw->n[axis] : 0;
}

/* FNV-1a, 64 bits (Fowler, Noll, Vo; offset basis and prime from the IETF draft
 * draft-eastlake-fnv): a checksum of the space, not a cryptographic hash. */
static uint64_t
fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static uint64_t
fnv1a_u64(uint64_t h, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i)); /* little-endian whatever the host */
    return fnv1a(h, b, sizeof(b));
}

static uint64_t
fnv1a_str(uint64_t h, const char *s)
{
    size_t len = strlen(s);
    return fnv1a(fnv1a_u64(h, len), s, len);
}

uint64_t
spsim_sweep_fingerprint(const struct spsim_sweep *sw, const struct spsim_sweep_options *opt)
{
    if (!sw || !opt)
        return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++) {
        /* Axes added later count only when set apart from their default: the checksums of
         * the sweeps that existed before them stay as they were. */
        if (a >= SPSIM_AXIS_TP_COMM_OVERLAP && sw->n[a] == 1 && sw->v[a][0] == axis_default(a))
            continue;
        h = fnv1a_u64(h, sw->n[a]);
        for (uint32_t i = 0; i < sw->n[a] && sw->v[a]; i++)
            h = fnv1a_u64(h, (uint64_t)sw->v[a][i]);
    }
    for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_MODEL]; i++)
        h = fnv1a_str(h, spsim_model_name(sw->models[i]));
    for (uint32_t i = 0; i < sw->n[SPSIM_AXIS_HW]; i++)
        h = fnv1a_str(h, sw->hw_names[i]);
    const uint64_t rows[] = {sw->use_gpus,       (uint64_t)opt->format, opt->header,
                             opt->feasible_only, opt->max_total_bytes,  opt->top_k,
                             (uint64_t)opt->by};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(rows); i++)
        h = fnv1a_u64(h, rows[i]);
    if (opt->columns) /* only then: the fingerprints of every-column sweeps stay as they were */
        h = fnv1a_str(h, opt->columns);
    return h;
}

int
spsim_sweep_shard_range(uint64_t size, uint64_t shard, uint64_t nshards, uint64_t *begin,
                        uint64_t *end, struct spsim_error *err)
{
    if (!begin || !end || nshards == 0 || shard >= nshards)
        return spsim_fail(err, SPSIM_EINVAL, "--shard: I/N needs 0 <= I < N, got %llu/%llu",
                          (unsigned long long)shard, (unsigned long long)nshards);
    /* floor(size·i/n) in 128 bits: consecutive shards share their bounds exactly. */
    *begin = (uint64_t)((unsigned __int128)size * shard / nshards);
    *end = (uint64_t)((unsigned __int128)size * (shard + 1) / nshards);
    return SPSIM_OK;
}

static void
digits_of(const struct spsim_sweep *sw, uint64_t index, uint32_t *d)
{
    for (int a = SPSIM_AXIS_COUNT - 1; a >= 0; a--) {
        d[a] = (uint32_t)(index % sw->n[a]);
        index /= sw->n[a];
    }
}

/* Advance to the next point, over the axes of more than one value only.
 * @return the outermost axis whose digit changed */
static int
digits_next(const struct spsim_sweep *sw, uint32_t *d)
{
    for (int i = (int)sw->nactive - 1; i >= 0; i--) {
        int a = sw->active[i];
        if (++d[a] < sw->n[a])
            return a;
        d[a] = 0;
    }
    return 0;
}

/* The context-parallel and sharding axes. */
static void
set_sharding_axis(struct spsim_parallel *p, int axis, int64_t v)
{
    switch (axis) {
    case SPSIM_AXIS_CP:
        p->cp = (uint32_t)v;
        break;
    case SPSIM_AXIS_CP_COMM_TYPE:
        p->cp_comm_type = (enum spsim_cp_comm)v;
        break;
    case SPSIM_AXIS_ZERO:
        p->zero = (uint32_t)v;
        break;
    case SPSIM_AXIS_OVERLAP_PARAM_GATHER:
        p->overlap_param_gather = v != 0;
        break;
    case SPSIM_AXIS_GRAD_REDUCE_IN_FP32:
        p->grad_reduce_in_fp32 = (int)v;
        break;
    case SPSIM_AXIS_EP:
        p->ep = (uint32_t)v;
        break;
    case SPSIM_AXIS_ETP:
        p->etp = (uint32_t)v;
        break;
    case SPSIM_AXIS_MOE_DISPATCHER:
        p->moe_dispatcher = (enum spsim_moe_dispatcher)v;
        break;
    case SPSIM_AXIS_A2A_OVERLAP:
        p->moe_a2a_overlap = v != 0;
        break;
    case SPSIM_AXIS_DELAY_WGRAD:
        p->delay_wgrad_compute = v != 0;
        break;
    case SPSIM_AXIS_TP_COMM_OVERLAP:
        p->tp_comm_overlap = v != 0;
        break;
    case SPSIM_AXIS_OVERLAP_P2P:
        p->no_overlap_p2p = v == 0;
        break;
    case SPSIM_AXIS_DIST_OPT_INSTANCES:
        p->dist_opt_instances = (uint32_t)v;
        break;
    default: /* model and hw are pointers, set by point_update */
        break;
    }
}

static void
set_axis(struct spsim_sweep_point *pt, int axis, int64_t v)
{
    struct spsim_parallel *p = &pt->par;
    switch (axis) {
    case SPSIM_AXIS_TP:
        p->tp = (uint32_t)v;
        break;
    case SPSIM_AXIS_PP:
        p->pp = (uint32_t)v;
        break;
    case SPSIM_AXIS_DP:
        p->dp = (uint32_t)v;
        break;
    case SPSIM_AXIS_GPUS:
        pt->gpus = (uint32_t)v;
        break;
    case SPSIM_AXIS_VPP:
        p->vpp = (uint32_t)v;
        break;
    case SPSIM_AXIS_SP:
        p->sp = v != 0;
        break;
    case SPSIM_AXIS_RECOMPUTE:
        p->recompute = (enum spsim_recompute)v;
        break;
    case SPSIM_AXIS_MBS:
        p->mbs = (uint32_t)v;
        break;
    case SPSIM_AXIS_GBS:
        p->gbs = (uint64_t)v;
        break;
    case SPSIM_AXIS_SEQ:
        p->seq = (uint32_t)v;
        break;
    case SPSIM_AXIS_FLASH_ATTN:
        p->flash_attn = (int)v;
        break;
    case SPSIM_AXIS_DISTRIBUTED_OPTIMIZER:
        p->distributed_optimizer = v != 0;
        break;
    case SPSIM_AXIS_OVERLAP_GRAD_REDUCE:
        p->overlap_grad_reduce = v != 0;
        break;
    case SPSIM_AXIS_DTYPE:
        p->dtype = (enum spsim_dtype)v;
        break;
    case SPSIM_AXIS_FP8_RECIPE:
        p->fp8_recipe = (enum spsim_fp8_recipe)v;
        break;
    case SPSIM_AXIS_PP_SPLIT:
        pt->pp_split = (int)v;
        break;
    case SPSIM_AXIS_MAX_GBS:
        pt->max_gbs = (uint64_t)v;
        break;
    case SPSIM_AXIS_RECOMPUTE_MODULES:
        p->recompute_modules = (uint32_t)v;
        break;
    case SPSIM_AXIS_RECOMPUTE_METHOD:
        p->recompute_method = (enum spsim_recompute_method)v;
        break;
    case SPSIM_AXIS_RECOMPUTE_LAYERS:
        p->recompute_layers = (uint32_t)v;
        break;
    case SPSIM_AXIS_OFFLOAD_LAYERS:
        p->offload_layers = (uint32_t)v;
        break;
    default: /* CP and sharding; model and hw are pointers, set by point_update */
        set_sharding_axis(p, axis, v);
        break;
    }
}

/* The balanced first/last stage size: the largest f < middle with f and the middle ranks'
 * count multiples of v and the rest dividing over the p − 2 middle ranks (with p = 2, the
 * first stage gets the odd layer); where no equal pair exists (an odd layer count over an even
 * number of middle ranks: DeepSeek-V3's 61 at pp 16), the last stage, which also holds the
 * output layer and the loss, takes v layers fewer than the first (61 = 3 + 14·4 + 2); 0 if
 * none. */
static uint32_t
balanced_edge(uint32_t layers, uint32_t p, uint32_t v, uint32_t *last)
{
    *last = 0; /* no split: nothing derived (a stale last stage would reach the next point) */
    if (p == 2) {
        uint32_t f = layers - layers / 2, l = layers / 2;
        if (f == l || f % v != 0 || l % v != 0 || l == 0)
            return 0;
        *last = l;
        return f;
    }
    for (uint32_t lighter = 0; lighter <= v; lighter += v)
        for (uint32_t f = layers / p / v * v; p > 2 && f >= v + lighter; f -= v) {
            uint32_t rest = layers - 2 * f + lighter, mid = rest / (p - 2);
            if (rest % (p - 2) == 0 && mid % v == 0 && f < mid) {
                *last = f - lighter;
                return f;
            }
        }
    return 0;
}

/* The configuration the pp_split and max_gbs axes derive from the other axes. */
static void
derived_axes(struct spsim_sweep_point *pt)
{
    struct spsim_parallel *p = &pt->par;
    pt->invalid = NULL;
    if (!pt->pp_split && !pt->max_gbs && !p->account_embedding && !p->account_loss &&
        !p->first_stage_layers && !p->last_stage_layers)
        return; /* the default: nothing derived, nothing to undo */
    p->account_embedding = p->account_loss = pt->pp_split == 1;
    p->first_stage_layers = p->last_stage_layers = 0;
    if (pt->pp_split == 1 && p->pp == 1)
        pt->invalid = "account: the same split as even at pp = 1";
    if (pt->pp_split == 2 && p->pp > 1)
        p->first_stage_layers =
            balanced_edge(pt->model->shape.layers, p->pp, p->vpp, &p->last_stage_layers);
    if (pt->pp_split == 2 && p->first_stage_layers == 0)
        pt->invalid = "balanced: no split with lighter first and last stages that Megatron's "
                      "rules admit at this pp and vpp";
    if (pt->max_gbs && p->dp) {
        uint64_t step = (uint64_t)p->dp * p->mbs * (p->vpp > 1 ? p->pp : 1);
        p->gbs = pt->max_gbs / step * step;
        if (p->gbs == 0)
            pt->invalid = "max_gbs: smaller than dp·mbs (·pp with interleaving)";
    }
}

/* "auto" pp and vpp as spsim query derives them when unset (cli_config_finish): the paper's
 * pp 8 counted down to a divisor of the layers, and its interleaving (vpp 3) where pp >= 2 and
 * pp·3 divides the layers, else none. */
static void
derive_pipeline(const struct spsim_sweep *sw, const uint32_t *d, struct spsim_sweep_point *pt)
{
    struct spsim_parallel *p = &pt->par;
    uint32_t layers = pt->model->shape.layers;
    if (sw->v[SPSIM_AXIS_PP][d[SPSIM_AXIS_PP]] == SPSIM_AXIS_AUTO)
        for (p->pp = 8; p->pp > 1 && layers % p->pp != 0;)
            p->pp--;
    if (sw->v[SPSIM_AXIS_VPP][d[SPSIM_AXIS_VPP]] == SPSIM_AXIS_AUTO)
        p->vpp = p->pp >= 2 && layers % (3 * p->pp) == 0 ? 3 : 1;
}

/* Bring the point's configuration up to date for axis `from` and those inside it (0: all);
 * dp = 0 when the GPU count does not split over tp·pp. */
static void point_update(const struct spsim_sweep *sw, const uint32_t *d, int from,
                         struct spsim_sweep_point *pt);
static void set_axis(struct spsim_sweep_point *pt, int axis, int64_t v);

void
spsim_sweep_point_of(const struct spsim_sweep *sw, const uint32_t *d, struct spsim_sweep_point *pt)
{
    point_update(sw, d, 0, pt);
}

void
spsim_sweep_point_update(const struct spsim_sweep *sw, const uint32_t *d, int from,
                         struct spsim_sweep_point *pt)
{
    point_update(sw, d, from, pt);
}

void
spsim_sweep_point_set(const struct spsim_sweep *sw, struct spsim_sweep_point *pt, int axis,
                      uint32_t digit)
{
    set_axis(pt, axis, sw->v[axis][digit]);
}

static void
point_update(const struct spsim_sweep *sw, const uint32_t *d, int from,
             struct spsim_sweep_point *pt)
{
    if (from == 0) {
        spsim_parallel_defaults(&pt->par);
        pt->gpus = 0;
    }
    if (from <= SPSIM_AXIS_HW) {
        pt->model = sw->models[d[SPSIM_AXIS_MODEL]];
        pt->hw = sw->hws[d[SPSIM_AXIS_HW]];
        pt->model_name = spsim_model_name(pt->model);
        pt->hw_name = sw->hw_names[d[SPSIM_AXIS_HW]];
    }
    if (from == 0) {
        for (int a = SPSIM_AXIS_TP; a < SPSIM_AXIS_COUNT; a++)
            set_axis(pt, a, sw->v[a][d[a]]);
    } else {
        /* Single-valued axes keep the value the full update gave them. */
        for (uint32_t i = sw->first_active[from]; i < sw->nactive; i++)
            set_axis(pt, sw->active[i], sw->v[sw->active[i]][d[sw->active[i]]]);
    }
    if (sw->auto_pipeline)
        derive_pipeline(sw, d, pt);
    if (sw->use_gpus && from <= SPSIM_AXIS_GPUS) {
        uint64_t tp_pp = (uint64_t)pt->par.tp * pt->par.cp * pt->par.pp;
        pt->par.dp = pt->gpus % tp_pp == 0 ? (uint32_t)(pt->gpus / tp_pp) : 0;
    }
    derived_axes(pt);
}

static int
gpus_error(const struct spsim_sweep_point *pt, struct spsim_error *err)
{
    if (pt->par.cp > 1)
        return spsim_fail(err, SPSIM_ECONFIG,
                          "parallel config: field 'gpus': %u GPUs do not split into tp·cp·pp = "
                          "%u·%u·%u groups",
                          pt->gpus, pt->par.tp, pt->par.cp, pt->par.pp);
    return spsim_fail(err, SPSIM_ECONFIG,
                      "parallel config: field 'gpus': %u GPUs do not split into tp·pp = %u·%u "
                      "groups",
                      pt->gpus, pt->par.tp, pt->par.pp);
}

int
spsim_sweep_point_at(const struct spsim_sweep *sw, uint64_t index, struct spsim_sweep_point *out,
                     struct spsim_error *err)
{
    if (!sw || !out || index >= sw->size)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_sweep_point_at: index out of range");
    uint32_t d[SPSIM_AXIS_COUNT];
    digits_of(sw, index, d);
    point_update(sw, d, 0, out);
    out->index = index;
    if (out->par.dp == 0)
        return gpus_error(out, err);
    return out->invalid ? spsim_fail(err, SPSIM_ECONFIG, "parallel config: %s", out->invalid)
                        : SPSIM_OK;
}

int
spsim_sweep_worker_init(struct spsim_sweep_worker *w, const struct spsim_sweep *sw,
                        const struct spsim_sweep_options *opt)
{
    enum spsim_row_format format = opt ? opt->format : SPSIM_ROW_NONE;
    uint64_t top_k = opt ? opt->top_k : 0;
    memset(w, 0, sizeof(*w));
    w->sw = sw;
    w->changed_since = 0;
    w->check_ok = false;
    w->check_since = 0;
    /* Without options, a worker for one point (spsim_sweep_evaluate): one cache slot and no
     * memo, which only repeats serve (they were up to 9 MB to clear for a single point). */
    w->cache_slots = opt ? sw->cache_slots : 1;
    w->le = spsim_calloc(1, sizeof(*w->le));
    w->cache = spsim_calloc(w->cache_slots, sizeof(*w->cache));
    w->memo = opt ? spsim_coll_memo_create() : NULL;
    w->top = top_k ? spsim_calloc(top_k, sizeof(*w->top)) : NULL;
    if (!w->le || !w->cache || (opt && !w->memo) || (top_k && !w->top) ||
        (format != SPSIM_ROW_NONE &&
         spsim_row_writer_init(&w->rows, format, opt->columns) != SPSIM_OK)) {
        spsim_sweep_worker_free(w);
        return SPSIM_ENOMEM;
    }
    return SPSIM_OK;
}

void
spsim_sweep_worker_free(struct spsim_sweep_worker *w)
{
    free(w->le);
    free(w->cache);
    spsim_coll_memo_destroy(w->memo);
    free(w->top);
    spsim_row_writer_free(&w->rows);
    memset(w, 0, sizeof(*w));
}

/*
 * The point's layer summary, from the cache. The slot is chosen by the key axes' digits; a hit
 * also requires every input of spsim_layer_evaluate to be equal (model, hardware, the layer
 * configuration, the padded vocabulary), so the cache stays right whatever those inputs come
 * to depend on.
 */
int
spsim_sweep_summary(struct spsim_sweep_worker *w, const uint32_t *d,
                    const struct spsim_sweep_point *pt, const struct spsim_layer_summary **out,
                    struct spsim_error *err)
{
    struct spsim_cache_slot *slot = &w->cache[layer_key(w->sw, d) & (w->cache_slots - 1)];
    const struct spsim_model_shape *m = &pt->model->shape;
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg)); /* padding too: configurations compare as bytes */
    spsim_layer_config_from(m, &pt->par, &cfg);
    uint64_t vpad = spsim_model_padded_vocab(pt->model, pt->par.tp);
    if (!slot->used || slot->model != pt->model || slot->hw != pt->hw || slot->vpad != vpad ||
        memcmp(&slot->cfg, &cfg, sizeof(cfg)) != 0) {
        slot->rc = spsim_layer_evaluate(m, pt->hw, &cfg, vpad, w->le, NULL);
        w->layer_evaluations++;
        if (slot->rc == SPSIM_OK)
            spsim_layer_summarize(pt->model, pt->hw, w->le, &slot->sum);
        slot->sum.id = ++w->summaries; /* the composition's memos know it by this */
        slot->used = true;
        slot->model = pt->model;
        slot->hw = pt->hw;
        slot->cfg = cfg;
        slot->vpad = vpad;
    }
    if (slot->rc != SPSIM_OK && err) /* failures are rare: evaluate again for the message */
        spsim_layer_evaluate(m, pt->hw, &cfg, vpad, w->le, err);
    *out = &slot->sum;
    return slot->rc;
}

/* The point's layer summary: the last point's while no layer key axis changed since, else from
 * the cache (a failure is asked again for its message). */
static int
point_summary(struct spsim_sweep_worker *w, const uint32_t *d, const struct spsim_sweep_point *pt,
              const struct spsim_layer_summary **out, struct spsim_error *err)
{
    if (!w->sw->layer_inside[w->changed_since] && w->last_sum &&
        (w->last_sum_rc == SPSIM_OK || !err)) {
        *out = w->last_sum;
        return w->last_sum_rc;
    }
    int rc = spsim_sweep_summary(w, d, pt, out, err);
    w->last_sum = *out;
    w->last_sum_rc = rc;
    w->changed_since = SPSIM_AXIS_COUNT;
    return rc;
}

/* Evaluate the point of digits `d`, whose configuration `pt` holds up to axis `from`. */
int
spsim_sweep_eval_digits(struct spsim_sweep_worker *w, const uint32_t *d, int from, bool per_layer,
                        struct spsim_sweep_point *pt, struct spsim_error *err)
{
    if (from < w->changed_since)
        w->changed_since = from;
    if (from < w->check_since)
        w->check_since = from;
    point_update(w->sw, d, from, pt);
    bool recheck = w->check_ok && w->check_since >= w->sw->recheck_from;
    w->check_ok = false;
    if (pt->par.dp == 0)
        return gpus_error(pt, err);
    if (pt->invalid)
        return spsim_fail(err, SPSIM_ECONFIG, "parallel config: %s", pt->invalid);
    uint32_t warnings = 0;
    int rc = recheck ? spsim_parallel_recheck_batch(pt->model, pt->hw, &pt->par, &warnings, err)
                     : spsim_parallel_check(pt->model, pt->hw, &pt->par, &warnings, err);
    const struct spsim_layer_summary *sum = NULL;
    if (rc == SPSIM_OK)
        rc = point_summary(w, d, pt, &sum, err);
    if (rc == SPSIM_OK)
        rc = spsim_compose_into(pt->model, pt->hw, &pt->par, sum, warnings, w->memo, per_layer,
                                &w->res, err);
    /* A failure (and the points skipped after it) leaves no configuration that passed behind. */
    w->check_ok = rc == SPSIM_OK;
    w->check_since = SPSIM_AXIS_COUNT;
    return rc;
}

int
spsim_sweep_eval_point(struct spsim_sweep_worker *w, uint64_t index, bool per_layer,
                       struct spsim_sweep_point *pt, struct spsim_error *err)
{
    uint32_t d[SPSIM_AXIS_COUNT];
    digits_of(w->sw, index, d);
    pt->index = index;
    return spsim_sweep_eval_digits(w, d, 0, per_layer, pt, err);
}

int
spsim_sweep_evaluate(const struct spsim_sweep *sw, uint64_t index, struct spsim_result *out,
                     struct spsim_error *err)
{
    if (!sw || !out || index >= sw->size)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_sweep_evaluate: index out of range");
    struct spsim_sweep_worker w;
    struct spsim_sweep_point pt;
    if (spsim_sweep_worker_init(&w, sw, NULL) != SPSIM_OK)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    int rc = spsim_sweep_eval_point(&w, index, true, &pt, err);
    if (rc == SPSIM_OK)
        *out = w.res;
    spsim_sweep_worker_free(&w);
    return rc;
}

uint64_t
spsim_sweep_rank_key(enum spsim_sweep_by by, const struct spsim_result *r)
{
    /* Positive doubles order as their bit patterns; the complement reverses the order. */
    uint64_t bits;
    switch (by) {
    case SPSIM_BY_TOTAL_BYTES:
        return r->memory.total_bytes;
    case SPSIM_BY_MFU:
        if (!(r->time.mfu >= 0))
            return UINT64_MAX;
        memcpy(&bits, &r->time.mfu, sizeof(bits));
        return ~bits;
    case SPSIM_BY_TOKENS_PER_S:
        if (!(r->time.tokens_per_s >= 0))
            return UINT64_MAX;
        memcpy(&bits, &r->time.tokens_per_s, sizeof(bits));
        return ~bits;
    case SPSIM_BY_ITERATION_S:
    default:
        memcpy(&bits, &r->time.iteration_s, sizeof(bits));
        return bits;
    }
}

/* (key, index) pairs: the max-heap's root is the worst of the best K. */
static bool
worse(const void *x, const void *y)
{
    const struct spsim_top_entry *a = x, *b = y;
    return a->key != b->key ? a->key > b->key : a->index > b->index;
}

static const char *
switch_text(bool on)
{
    return on ? "on" : "off";
}

/* The FP8 recipe, context-parallel and sharding settings that differ from the defaults,
 * " cp=2 ...". */
static void
sharding_text(const struct spsim_parallel *p, char *buf, size_t cap)
{
    int n = 0;
    buf[0] = '\0';
    if (p->fp8_recipe != SPSIM_FP8_DELAYED)
        n += snprintf(buf, cap, " fp8_recipe=%s", spsim_fp8_recipe_name(p->fp8_recipe));
    if (p->cp > 1 && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, " cp=%u cp_comm_type=%s", p->cp,
                      spsim_cp_comm_name(p->cp_comm_type));
    if (p->zero && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, " zero=%u", p->zero);
    if (p->overlap_param_gather && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, " overlap_param_gather=on");
    if (p->grad_reduce_in_fp32 == 0 && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, " grad_reduce_in_fp32=off");
    if (p->tp_comm_overlap && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, " tp_comm_overlap=on");
    if (p->no_overlap_p2p && n >= 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, " overlap_p2p_communication=off");
    if (p->dist_opt_instances > 1 && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, " num_distributed_optimizer_instances=%u",
                 p->dist_opt_instances);
}

/* "model=M hw=H tp=.. ...: REASON\n" for --show-invalid. */
static int
describe_invalid(const struct spsim_sweep_point *pt, const char *reason, struct spsim_text *out)
{
    const struct spsim_parallel *p = &pt->par;
    char seq[16] = "model", dp[32];
    if (p->seq)
        snprintf(seq, sizeof(seq), "%u", p->seq);
    if (pt->gpus)
        snprintf(dp, sizeof(dp), "gpus=%u", pt->gpus);
    else
        snprintf(dp, sizeof(dp), "dp=%u", p->dp);
    char extra[272];
    sharding_text(p, extra, sizeof(extra));
    size_t room = strlen(reason) + strlen(pt->model_name) + strlen(pt->hw_name) + 784;
    if (spsim_text_reserve(out, room) != SPSIM_OK)
        return SPSIM_ENOMEM;
    static const char *const splits[] = {"", " pp_split=account", " pp_split=balanced"};
    const char *split = (unsigned)pt->pp_split < 3 ? splits[pt->pp_split] : "";
    int n = snprintf(out->s + out->len, out->cap - out->len,
                     "model=%s hw=%s tp=%u pp=%u %s vpp=%u sp=%s recompute=%s mbs=%u gbs=%llu "
                     "seq=%s flash_attn=%s distributed_optimizer=%s overlap_grad_reduce=%s "
                     "dtype=%s%s%s: %s\n",
                     pt->model_name, pt->hw_name, p->tp, p->pp, dp, p->vpp, switch_text(p->sp),
                     spsim_recompute_name(p->recompute), p->mbs, (unsigned long long)p->gbs, seq,
                     p->flash_attn < 0 ? "model" : switch_text(p->flash_attn == 1),
                     switch_text(p->distributed_optimizer), switch_text(p->overlap_grad_reduce),
                     spsim_dtype_name(p->dtype), extra, split, reason);
    out->len += n > 0 ? (size_t)n : 0;
    return SPSIM_OK;
}

static bool
kept(const struct spsim_sweep_options *opt, const struct spsim_result *r)
{
    if (opt->feasible_only && !r->memory.fits)
        return false;
    return opt->max_total_bytes == 0 || r->memory.total_bytes <= opt->max_total_bytes;
}

static int
emit_row(struct spsim_sweep_worker *w, const struct spsim_sweep_options *opt, const uint32_t *d,
         struct spsim_block *b)
{
    const struct spsim_sweep *sw = w->sw;
    bool csv = opt->format == SPSIM_ROW_CSV;
    const char *model = (csv ? sw->csv_model : sw->json_model)[d[SPSIM_AXIS_MODEL]];
    const char *hw = (csv ? sw->csv_hw : sw->json_hw)[d[SPSIM_AXIS_HW]];
    if (spsim_text_reserve(&b->out, SPSIM_ROW_MAX + strlen(model) + strlen(hw)) != SPSIM_OK)
        return SPSIM_ENOMEM;
    b->out.len += spsim_row_writer_row(&w->rows, model, hw, &w->res, b->out.s + b->out.len);
    b->written++;
    return SPSIM_OK;
}

/*
 * Points inside `axis` that fail alike (a GPU count that tp·pp does not divide fails every
 * point inside the gpus axis) are counted at once. @return the points skipped after the
 * current one (its digits then end the run of such points, so the next point has the next
 * value of `axis`)
 */
static uint64_t
skip_inside(const struct spsim_sweep *sw, int axis, uint32_t *d, uint64_t left_in_block)
{
    uint64_t inside = 0, size = 1;
    for (int a = SPSIM_AXIS_COUNT - 1; a > axis; a--) {
        inside += d[a] * size;
        size *= sw->n[a];
    }
    uint64_t left = size - inside; /* this point and the rest of its run */
    if (left > left_in_block)
        return left_in_block - 1; /* the block ends first */
    for (int a = axis + 1; a < SPSIM_AXIS_COUNT; a++)
        d[a] = sw->n[a] - 1;
    return left - 1;
}

/*
 * Whether every point inside the vpp axis fails as this invalid one does: the rules of
 * spsim_parallel_check that the model, tp, pp and vpp alone decide (heads, key/value heads and
 * ffn_hidden divisible by tp; the even split of the layers over pp·vpp; interleaving needs
 * pp >= 2), the split only where no inner axis can make it uneven. Most points of a space
 * written as plain ranges fail these (96 layers have 12 divisors).
 */
static bool
fails_inside_vpp(const struct spsim_sweep *sw, const struct spsim_sweep_point *pt)
{
    const struct spsim_model_shape *m = &pt->model->shape;
    const struct spsim_parallel *p = &pt->par;
    if (m->heads % p->tp || m->kv_heads % p->tp || m->ffn_hidden % p->tp)
        return true;
    bool even = sw->n[SPSIM_AXIS_PP_SPLIT] == 1 && !p->first_stage_layers &&
                !p->last_stage_layers && !p->account_embedding && !p->account_loss &&
                !p->pipeline_layout;
    return even && ((p->vpp > 1 && p->pp < 2) || m->layers % ((uint64_t)p->pp * p->vpp) != 0);
}

/*
 * Whether every point inside the gbs axis fails as this one would: the batch rules of
 * spsim_parallel_check (spsim_batch_fails), which gbs, mbs, dp, pp and the chunks per rank
 * alone decide and no axis inside gbs sets (unless max_gbs, inside it, derives gbs; the
 * interleaving rules only where no inner axis can make the split uneven, which may change its
 * chunks). A space of plain batch ranges has most of its points here (gbs not a multiple of
 * mbs·dp).
 */
static bool
fails_inside_gbs(const struct spsim_sweep *sw, const struct spsim_sweep_point *pt,
                 const struct spsim_parallel *p)
{
    if (sw->n[SPSIM_AXIS_MAX_GBS] > 1 || pt->max_gbs)
        return false;
    uint64_t per_step = (uint64_t)p->mbs * p->dp;
    if (per_step == 0 || p->gbs % per_step != 0)
        return per_step != 0;
    bool even = sw->n[SPSIM_AXIS_PP_SPLIT] == 1 && !p->first_stage_layers &&
                !p->last_stage_layers && !p->account_embedding && !p->account_loss &&
                !p->pipeline_layout;
    return even && spsim_batch_fails(p, p->vpp);
}

/* After the current point's run inside gbs, the following batch values that fail alike: their
 * whole runs too, while they end inside the block. @return the points skipped */
static uint64_t
skip_batches(const struct spsim_sweep *sw, const struct spsim_sweep_point *pt, uint32_t *d,
             uint64_t left_in_block)
{
    uint64_t skipped = skip_inside(sw, SPSIM_AXIS_GBS, d, left_in_block), inside = 1;
    for (int a = SPSIM_AXIS_GBS + 1; a < SPSIM_AXIS_COUNT; a++)
        inside *= sw->n[a];
    struct spsim_parallel p = pt->par;
    while (d[SPSIM_AXIS_GBS] + 1 < sw->n[SPSIM_AXIS_GBS] && skipped + 1 + inside <= left_in_block) {
        p.gbs = (uint64_t)sw->v[SPSIM_AXIS_GBS][d[SPSIM_AXIS_GBS] + 1];
        if (!fails_inside_gbs(sw, pt, &p))
            break;
        d[SPSIM_AXIS_GBS]++; /* the digits inside stay at their last values */
        skipped += inside;
    }
    return skipped;
}

/* The points after the current one that fail alike and are counted at once (0: none):
 * sequence parallelism without tensor parallelism fails every point inside the sp axis. */
static uint64_t
skip_failing(const struct spsim_sweep *sw, const struct spsim_sweep_point *pt, uint32_t *d,
             uint64_t left_in_block)
{
    if (pt->par.dp == 0)
        return skip_inside(sw, SPSIM_AXIS_GPUS, d, left_in_block);
    if (fails_inside_vpp(sw, pt))
        return skip_inside(sw, SPSIM_AXIS_VPP, d, left_in_block);
    if (pt->par.sp && pt->par.tp <= 1)
        return skip_inside(sw, SPSIM_AXIS_SP, d, left_in_block);
    if (fails_inside_gbs(sw, pt, &pt->par))
        return skip_batches(sw, pt, d, left_in_block);
    return 0;
}

void
spsim_sweep_run_block(struct spsim_sweep_worker *w, const struct spsim_sweep_options *opt,
                      struct spsim_block *shared)
{
    /* Counted in a private copy: blocks of other threads sit in the same cache lines. */
    struct spsim_block local = *shared, *b = &local;
    uint32_t d[SPSIM_AXIS_COUNT];
    struct spsim_sweep_point pt;
    struct spsim_error err = {0};
    digits_of(w->sw, b->begin, d);
    int from = 0;
    for (uint64_t i = b->begin; i < b->end && b->rc == SPSIM_OK;
         i++, from = digits_next(w->sw, d)) {
        b->evaluated++;
        pt.index = i;
        int rc = spsim_sweep_eval_digits(w, d, from, false, &pt, opt->invalid ? &err : NULL);
        if (rc != SPSIM_OK && opt->invalid)
            b->rc = describe_invalid(&pt, err.message, &b->invalid);
        else if (rc != SPSIM_OK) {
            uint64_t skipped = skip_failing(w->sw, &pt, d, b->end - i);
            b->evaluated += skipped;
            i += skipped;
        }
        if (rc != SPSIM_OK)
            continue;
        /* With dp·cp = 1 every sharding level shards over one rank and there is no reduction
         * to overlap or gather to defer: such a point repeats the one with all of them off
         * (unless an MoE model's expert data-parallel group tp/(ep·etp) has more). */
        if (w->sw->skip_inert && pt.par.dp * pt.par.cp == 1 &&
            (pt.par.distributed_optimizer || pt.par.overlap_grad_reduce || pt.par.zero ||
             pt.par.overlap_param_gather) &&
            (uint64_t)pt.par.ep * (pt.par.etp ? pt.par.etp : pt.par.tp) >= pt.par.tp)
            continue;
        b->valid++;
        b->feasible += w->res.memory.fits && (opt->max_total_bytes == 0 ||
                                              w->res.memory.total_bytes <= opt->max_total_bytes);
        if (!kept(opt, &w->res))
            continue;
        if (opt->top_k)
            spsim_heap_push(w->top, sizeof(*w->top), &w->ntop, opt->top_k,
                            &(struct spsim_top_entry){spsim_sweep_rank_key(opt->by, &w->res), i},
                            worse);
        else if (opt->format != SPSIM_ROW_NONE)
            b->rc = emit_row(w, opt, d, b);
    }
    *shared = local;
}
