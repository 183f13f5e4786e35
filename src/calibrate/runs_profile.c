/*
 * The parameters a runs calibration fits, as edits of the base profile: where each lives, its
 * prior and bounds and their sources, and the profile at a parameter vector, built by the real
 * loader so that every derived efficiency (GEMM table, curves) follows the edit.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "runs_profile.h"

/*
 * The physical knobs of the time model a run's measured time can move, each a field of the
 * profile. A scale multiplies the base profile's measured figures (prior 1: the figures as
 * their sources measured them); a value replaces the field (prior: the base profile's, with
 * its source). The bounds keep the fit physical, not near any run: no sustained GEMM or
 * memory rate above its best-shape measurement by more than the 5 % its sources disagree by
 * (hardware/README.md: [ZZC-79] 797.5 against MAMF 794.5 TFLOP/s), none below 0.4-0.5 of it
 * (under the lowest sustained/boost clock ratio any source gives, GB200's 0.806, with room);
 * the host time per framework op beyond its launches (host.op_us) between 1 µs and 100 µs
 * (the source's per-aten-op reading is 6.9 µs, its per-layer reading 42.76 µs); the
 * network hop between 0.5 and 30 µs (NCCL's table spans 2.7 to 20.9 µs per NET step).
 * host.op_us and host.torch_call_us are one physical parameter, the host's speed at running
 * PyTorch eagerly (both read off one run, ml-engineering's eager forward: per framework op and
 * per aten op): the fit sets op_us and scales torch_call_us by the same factor, value / prior.
 */
/* A measured table a scale also multiplies: its points' entries [first, last] (rates), when
 * its dtype is the one named. */
struct table_part {
    const char *path, *dtype;
    int first, last;
};

static const struct {
    /* also: a value parameter's second field, which moves by the factor the first moves by */
    const char *name, *field, *path, *why, *also;
    struct table_part table[2];
    bool scale;
    double lo, hi;
} defs[] = {
    /* A GEMM scale also moves the sustained-load points of its dtype (gpu.sustained_clock.gemm,
     * whose sustained/boost ratio the engine solves against the ceiling): the ratio stays, and
     * every GEMM of the dtype scales. */
    {"gemm_bf16",
     "gpu.gemm_achievable_tflops.bf16, gpu.gemm_table and gpu.sustained_clock.gemm (bf16)",
     "gpu.gemm_achievable_tflops.bf16",
     "1: the profile's measured BF16 GEMM rates (MAMF, gemm_table, sustained-load points) as "
     "their sources give them",
     NULL,
     {{"gpu.gemm_table", "bf16", 3, 3}, {"gpu.sustained_clock.gemm", "bf16", 3, 3}},
     true,
     0.5,
     1.05},
    {"gemm_fp8",
     "gpu.gemm_achievable_tflops.fp8, gpu.sustained_clock.gemm (fp8)",
     "gpu.gemm_achievable_tflops.fp8",
     "1: the profile's measured FP8 GEMM rates (MAMF, sustained-load points)",
     NULL,
     {{"gpu.sustained_clock.gemm", "fp8", 3, 3}, {NULL, NULL, 0, 0}},
     true,
     0.4,
     1.05},
    {"gemm_nvfp4",
     "gpu.gemm_achievable_tflops.nvfp4",
     "gpu.gemm_achievable_tflops.nvfp4",
     "1: the profile's NVFP4 GEMM rate",
     NULL,
     {{NULL, NULL, 0, 0}, {NULL, NULL, 0, 0}},
     true,
     0.4,
     1.05},
    /* The attention table's points are [d_qk, d_v, sequence, window, forward, backward TFLOP/s]
     * (fused attention, profiles.md): its two rates scale with the flash rate. */
    {"attention",
     "gpu.flash_attention_tflops, gpu.attention_table (rates)",
     "gpu.flash_attention_tflops",
     "1: the profile's measured attention rates (FlashAttention-2 on H100, else a stated "
     "fraction of MAMF; cuDNN's fused attention per shape in attention_table)",
     NULL,
     {{"gpu.attention_table", NULL, 4, 5}, {NULL, NULL, 0, 0}},
     true,
     0.4,
     1.05},
    {"memory_bound",
     "gpu.hbm_achievable_GBps",
     "gpu.hbm_achievable_GBps",
     "1: the profile's achievable HBM bandwidth (a measured STREAM Triad or its stated carry-over)",
     NULL,
     {{NULL, NULL, 0, 0}, {NULL, NULL, 0, 0}},
     true,
     0.4,
     1.05},
    {"host_op_us",
     "host.op_us (and host.torch_call_us by the same factor)",
     "host.op_us",
     "the profile's host time per framework op beyond its launches (an eager Llama 3.2 1B "
     "forward on a B200, stas00/ml-engineering; 6.9 us per aten op at the range's low end)",
     "host.torch_call_us",
     {{NULL, NULL, 0, 0}, {NULL, NULL, 0, 0}},
     false,
     1.0,
     100.0},
    {"net_hop_us",
     "network.hop_latency_us",
     "network.hop_latency_us",
     "the profile's network hop latency (NCCL's NET Ring/LL 2.7 us)",
     NULL,
     {{NULL, NULL, 0, 0}, {NULL, NULL, 0, 0}},
     false,
     0.5,
     30.0},
};

/* The object at a dotted path ("gpu.gemm_achievable_tflops.bf16"), or NULL. */
static cJSON *
at_path(cJSON *root, const char *path)
{
    char part[64];
    for (const char *p = path; root && *p;) {
        size_t n = strcspn(p, ".");
        if (n >= sizeof(part))
            return NULL;
        memcpy(part, p, n);
        part[n] = '\0';
        root = cJSON_GetObjectItemCaseSensitive(root, part);
        p += n + (p[n] == '.');
    }
    return root;
}

static void
add_node(struct spsim_runs_knob *k, cJSON *num)
{
    if (cJSON_IsNumber(num) && k->nnodes < SPSIM_RUNS_MAX_NODES) {
        k->node[k->nnodes] = num;
        k->base[k->nnodes++] = num->valuedouble;
    }
}

static void
add_source(struct spsim_runs_knob *k, cJSON *obj)
{
    cJSON *src = cJSON_GetObjectItemCaseSensitive(obj, "source");
    if (cJSON_IsString(src) && k->nsources < sizeof(k->source) / sizeof(*k->source))
        k->source[k->nsources++] = src;
}

/* Entries [first, last] of every point of a measured table (of the named dtype, if one). */
static void
add_table(struct spsim_runs_knob *k, cJSON *root, const struct table_part *part)
{
    cJSON *t = part->path ? at_path(root, part->path) : NULL;
    cJSON *d = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    if (!t || (part->dtype && (!cJSON_IsString(d) || strcmp(d->valuestring, part->dtype) != 0)))
        return;
    cJSON *pt;
    cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(t, "points")) for (int i = part->first;
                                                                               i <= part->last; i++)
        add_node(k, cJSON_GetArrayItem(pt, i));
    add_source(k, t);
}

/* Find parameter i's fields and set its prior and bounds. */
static void
open_param(struct spsim_runs_profile *p, size_t i)
{
    struct spsim_runs_param *q = &p->param[i];
    struct spsim_runs_knob *k = &p->knob[i];
    cJSON *obj = at_path(p->root, defs[i].path);
    add_node(k, cJSON_GetObjectItemCaseSensitive(obj, "value"));
    add_source(k, obj);
    cJSON *also = defs[i].also && k->nnodes ? at_path(p->root, defs[i].also) : NULL;
    if (also) {
        add_node(k, cJSON_GetObjectItemCaseSensitive(also, "value"));
        add_source(k, also);
    }
    for (int t = 0; t < 2 && k->nnodes; t++)
        add_table(k, p->root, &defs[i].table[t]);
    *q = (struct spsim_runs_param){.name = defs[i].name,
                                   .field = defs[i].field,
                                   .prior_source = defs[i].why,
                                   .scale = defs[i].scale,
                                   .present = k->nnodes > 0,
                                   .lo = defs[i].lo,
                                   .hi = defs[i].hi};
    q->prior = q->scale || !q->present ? 1.0 : k->base[0];
    if (!q->scale) {
        /* A base value near or outside the bounds (a profile of its own): they widen to hold
         * it with room on both sides. */
        q->lo = fmin(q->lo, 0.5 * q->prior);
        q->hi = fmax(q->hi, 2.0 * q->prior);
    }
    q->value = q->prior;
}

int
spsim_runs_profile_open(struct spsim_runs_profile *p, const char *path, struct spsim_error *err)
{
    memset(p, 0, sizeof(*p));
    char *text = NULL;
    size_t len = 0;
    int rc = spsim_read_file(path, &text, &len, err);
    if (rc != SPSIM_OK)
        return rc;
    /* The loader's own errors first: a profile it refuses is no base. */
    struct spsim_hardware *hw = NULL;
    rc = spsim_hardware_parse(text, len, path, &hw, err);
    spsim_hardware_destroy(hw);
    if (rc == SPSIM_OK) {
        p->root = cJSON_ParseWithLength(text, len);
        rc = p->root ? SPSIM_OK : spsim_fail(err, SPSIM_ENOMEM, "%s: out of memory", path);
    }
    free(text);
    if (rc != SPSIM_OK)
        return rc;
    p->origin = path;
    p->nparams = sizeof(defs) / sizeof(*defs);
    for (size_t i = 0; i < p->nparams; i++)
        open_param(p, i);
    return SPSIM_OK;
}

void
spsim_runs_profile_close(struct spsim_runs_profile *p)
{
    cJSON_Delete(p->root);
    memset(p, 0, sizeof(*p));
}

int
spsim_runs_profile_build(struct spsim_runs_profile *p, const double *theta,
                         struct spsim_hardware **hw, struct spsim_error *err)
{
    for (size_t i = 0; i < p->nparams; i++) {
        const struct spsim_runs_knob *k = &p->knob[i];
        /* A value's second field (defs[].also) moves by the value's factor on its base. */
        double f = p->param[i].scale               ? theta[i]
                   : k->nnodes && k->base[0] > 0.0 ? theta[i] / k->base[0]
                                                   : 1.0;
        for (size_t j = 0; j < k->nnodes; j++)
            cJSON_SetNumberValue(k->node[j],
                                 !p->param[i].scale && j == 0 ? theta[i] : k->base[j] * f);
    }
    char *text = cJSON_PrintUnformatted(p->root);
    if (!text)
        return spsim_fail(err, SPSIM_ENOMEM, "%s: out of memory", p->origin);
    int rc = spsim_hardware_parse(text, strlen(text), p->origin, hw, err);
    cJSON_free(text);
    return rc;
}

int
spsim_runs_predict(const struct spsim_hardware *hw, const struct spsim_run *run, double *s,
                   struct spsim_error *err)
{
    struct spsim_result r;
    int rc = spsim_evaluate(run->model, hw, &run->par, &r, err);
    if (rc == SPSIM_OK)
        *s = r.time.iteration_s;
    return rc;
}
