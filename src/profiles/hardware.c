/* Reading and validating hardware profiles: every number sourced, measured points kept as given. */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "jsonfield.h"
#include "profiles.h"

static void
curve_free(struct spsim_curve *curve)
{
    if (curve && curve->interp) {
        gsl_interp_free(curve->interp);
        curve->interp = NULL;
    }
}

/* Read [[x0, y0, ...], ...] rows of `width` positive finite numbers. */
/* Rows of `width` numbers (at most cap), finite, > 0; column `zero_col` (-1: none) may be 0. */
static int
read_rows(const struct spsim_jctx *c, const cJSON *arr, const char *path, int width, int zero_col,
          const char *form, double *rows, uint32_t cap, uint32_t *count)
{
    if (!cJSON_IsArray(arr))
        return spsim_json_field_error(c, path, "points", "must be an array of [%s] rows", form);
    int n = cJSON_GetArraySize(arr);
    if (n < 1 || (uint32_t)n > cap)
        return spsim_json_field_error(c, path, "points", "must have 1 to %u rows, got %d", cap, n);
    int i = 0;
    for (const cJSON *row = arr->child; row; row = row->next, i++) {
        if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != width)
            return spsim_json_field_error(c, path, "points",
                                          "row %d must be an array of %d numbers", i, width);
        int j = 0;
        for (const cJSON *v = row->child; v; v = v->next, j++) {
            bool zero_ok = j == zero_col && cJSON_IsNumber(v) && v->valuedouble == 0;
            if (!zero_ok && (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
                             !(v->valuedouble > 0) || v->valuedouble > 1e20))
                return spsim_json_field_error(
                    c, path, "points", "row %d, column %d must be a finite number > 0", i, j);
            rows[(size_t)i * width + j] = v->valuedouble;
        }
    }
    *count = (uint32_t)n;
    return SPSIM_OK;
}

static int
read_points(const struct spsim_jctx *c, const cJSON *arr, const char *path, int width,
            double rows[][4], uint32_t *count)
{
    double flat[SPSIM_MAX_CURVE_POINTS * 4];
    int rc = read_rows(c, arr, path, width, -1,
                       width == 2 ? "SIZE_BYTES, BUSBW_GBps" : "M, N, K, TFLOPS", flat,
                       SPSIM_MAX_CURVE_POINTS, count);
    for (uint32_t i = 0; rc == SPSIM_OK && i < *count; i++)
        for (int j = 0; j < width; j++)
            rows[i][j] = flat[(size_t)i * width + j];
    return rc;
}

/* Read one measured curve as the profile gives it; the engine derives its efficiencies. */
static int
read_curve(const struct spsim_jctx *c, const cJSON *obj, const char *path, bool network,
           struct spsim_curve *curve)
{
    static const char *const keys[] = {"op", "gpus", "nodes", "source", "points", NULL};
    int rc, op = 0;
    uint32_t gpus = 0, nodes = 0;
    const char *source = NULL;
    double rows[SPSIM_MAX_CURVE_POINTS]
               [4]; /* 16 KiB on the stack: no shared state between loaders */
    uint32_t n = 0;
    if ((rc = spsim_json_check_keys(c, obj, path, keys)) ||
        (rc = spsim_json_get_enum(c, obj, path, "op", true, spsim_coll_op_names, &op)) ||
        (rc = spsim_json_get_u32(c, obj, path, "gpus", true, 2, 1u << 20, &gpus)) ||
        (rc = spsim_json_get_u32(c, obj, path, "nodes", false, 1, 1u << 20, &nodes)) ||
        (rc = spsim_json_get_string(c, obj, path, "source", true, true, &source)) ||
        (rc = read_points(c, cJSON_GetObjectItemCaseSensitive(obj, "points"), path, 2, rows, &n)))
        return rc;
    if (n < 2)
        return spsim_json_field_error(c, path, "points", "a curve needs at least 2 rows, got %u",
                                      n);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0 && !(rows[i][0] > rows[i - 1][0]))
            return spsim_json_field_error(c, path, "points",
                                          "sizes must be strictly increasing (row %u)", i);
        curve->size_bytes[i] = rows[i][0];
        curve->busbw_Bps[i] = rows[i][1] * 1e9;
    }
    curve->n = n;
    curve->op = (enum spsim_coll_op)op;
    curve->gpus = gpus;
    curve->nodes = nodes;
    curve->network = network;
    snprintf(curve->path, sizeof(curve->path), "%s", path);
    return SPSIM_OK;
}

static int
read_tier_curves(const struct spsim_jctx *c, const cJSON *tier_obj, const char *prefix,
                 struct spsim_tier_params *tier, struct spsim_hardware *hw)
{
    bool network = tier == &hw->network;
    const cJSON *obj = NULL, *set = NULL;
    char path[160];
    int rc;
    if ((rc = spsim_json_get_object(c, tier_obj, prefix, "busbw_curve", false, &obj)))
        return rc;
    if (obj) {
        struct spsim_curve *curve = &hw->curves[hw->ncurves++];
        if ((rc = read_curve(c, obj, spsim_json_path(path, sizeof(path), prefix, "busbw_curve"),
                             network, curve)))
            return rc;
        for (int op = 0; op < SPSIM_COLL_COUNT; op++)
            tier->curve[op] = curve;
    }
    if ((rc = spsim_json_get_object(c, tier_obj, prefix, "busbw_curves", false, &set)) || !set)
        return rc;
    char setpath[160];
    spsim_json_path(setpath, sizeof(setpath), prefix, "busbw_curves");
    if ((rc = spsim_json_check_keys(c, set, setpath, spsim_coll_op_names)))
        return rc;
    for (int op = 0; op < SPSIM_COLL_COUNT; op++) {
        if ((rc = spsim_json_get_object(c, set, setpath, spsim_coll_op_names[op], false, &obj)))
            return rc;
        if (!obj)
            continue;
        struct spsim_curve *curve = &hw->curves[hw->ncurves++];
        if ((rc = read_curve(c, obj,
                             spsim_json_path(path, sizeof(path), setpath, spsim_coll_op_names[op]),
                             network, curve)))
            return rc;
        if (curve->n > 0 && cJSON_GetObjectItemCaseSensitive(obj, "op") &&
            strcmp(cJSON_GetObjectItemCaseSensitive(obj, "op")->valuestring,
                   spsim_coll_op_names[op]) != 0)
            return spsim_json_field_error(c, path, "op", "must be '%s' under busbw_curves.%s",
                                          spsim_coll_op_names[op], spsim_coll_op_names[op]);
        tier->curve[op] = curve;
    }
    return SPSIM_OK;
}

static int
read_latency(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
             struct spsim_tier_params *tier)
{
    double base = 0, hop = 0;
    int rc;
    if ((rc = spsim_json_get_sourced(c, obj, prefix, "base_latency_us", true, 0, 1e4, &base,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, obj, prefix, "hop_latency_us", true, 0, 1e4, &hop, NULL)))
        return rc;
    tier->base_latency_s = base * 1e-6;
    tier->hop_latency_s = hop * 1e-6;
    return SPSIM_OK;
}

static int read_clock(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw);
static int read_attention_table(const struct spsim_jctx *c, const cJSON *gpu,
                                struct spsim_hardware *hw);
static int read_gpu_rest(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw);
static int read_hybridep(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw);
static int read_board_power(const struct spsim_jctx *c, const cJSON *gpu,
                            struct spsim_hardware *hw);
static int read_memory_limits(const struct spsim_jctx *c, const cJSON *gpu,
                              struct spsim_hardware *hw);

/* Record one figure the time model needs as unsourced: its path joins the list
 * (spsim_hardware_parse refuses the profile with them). */
static int
note_unsourced(const struct spsim_jctx *c, const char *path, struct spsim_hardware *hw)
{
    size_t have = hw->unsourced_fields ? strlen(hw->unsourced_fields) : 0;
    char *list = realloc(hw->unsourced_fields, have + strlen(path) + 3);
    if (!list)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    snprintf(list + have, strlen(path) + 3, "%s%s", have ? ", " : "", path);
    hw->unsourced_fields = list;
    return SPSIM_OK;
}

/* A figure the time model needs: required, sourced, or {"value": null, "source": WHY} where no
 * source gives it (doc/profiles.md, "Unsourced figures"); *out is then 0 and the path noted. */
static int
get_needed(const struct spsim_jctx *c, const cJSON *obj, const char *prefix, const char *key,
           double min, double max, double *out, struct spsim_hardware *hw)
{
    const char *why = NULL;
    char path[160];
    *out = 0;
    if (!cJSON_GetObjectItemCaseSensitive(obj, key))
        return spsim_json_get_sourced(c, obj, prefix, key, true, min, max, out, NULL);
    int rc = spsim_json_get_sourced_or_null(c, obj, prefix, key, min, max, out, &why);
    if (rc != SPSIM_OK || !why)
        return rc;
    return note_unsourced(c, spsim_json_path(path, sizeof(path), prefix, key), hw);
}

/* The keys of a profile's gpu object (doc/profiles.md). */
static const char *const gpu_keys[] = {"model",
                                       "peak_dense_tflops",
                                       "gemm_achievable_tflops",
                                       "sm_count",
                                       "hbm_capacity_GB",
                                       "hbm_bandwidth_GBps",
                                       "hbm_achievable_GBps",
                                       "flash_attention_tflops",
                                       "gemm_table",
                                       "attention_table",
                                       "gemm_epilogue",
                                       "hbm_reported_MiB",
                                       "cuda_context_MiB",
                                       "cublas_workspace_MiB",
                                       "nccl_buffers_per_communicator_MiB",
                                       "allocator_fragmentation",
                                       "sustained_clock",
                                       "board_power_W",
                                       "hybridep_dispatch_GBps",
                                       "hybridep_combine_GBps",
                                       "hybridep_rdma_dispatch_GBps",
                                       "hybridep_rdma_combine_GBps",
                                       NULL};

static int
read_gpu(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw)
{
    const cJSON *peak = NULL, *ach = NULL;
    const char *model = NULL;
    double sm = 0, cap = 0;
    int rc;
    if ((rc = spsim_json_check_keys(c, gpu, "gpu", gpu_keys)) ||
        (rc = spsim_json_get_string(c, gpu, "gpu", "model", true, true, &model)) ||
        (rc = spsim_json_get_object(c, gpu, "gpu", "peak_dense_tflops", true, &peak)) ||
        (rc = spsim_json_check_keys(c, peak, "gpu.peak_dense_tflops", spsim_dtype_names)) ||
        (rc = spsim_json_get_object(c, gpu, "gpu", "gemm_achievable_tflops", true, &ach)) ||
        (rc = spsim_json_check_keys(c, ach, "gpu.gemm_achievable_tflops", spsim_dtype_names)))
        return rc;
    for (int t = 0; t < SPSIM_DTYPE_COUNT; t++) {
        double p = 0, a = 0;
        bool required = t == SPSIM_DTYPE_BF16;
        if ((rc = spsim_json_get_sourced(c, peak, "gpu.peak_dense_tflops", spsim_dtype_names[t],
                                         required, 1e-3, 1e5, &p, NULL)) ||
            (rc = required
                      ? get_needed(c, ach, "gpu.gemm_achievable_tflops", spsim_dtype_names[t], 1e-3,
                                   1e5, &a, hw)
                      : spsim_json_get_sourced(c, ach, "gpu.gemm_achievable_tflops",
                                               spsim_dtype_names[t], false, 1e-3, 1e5, &a, NULL)))
            return rc;
        if (a > 0 && p == 0)
            return spsim_json_field_error(c, "gpu.gemm_achievable_tflops", spsim_dtype_names[t],
                                          "has no matching gpu.peak_dense_tflops.%s",
                                          spsim_dtype_names[t]);
        if (a > p)
            return spsim_json_field_error(c, "gpu.gemm_achievable_tflops", spsim_dtype_names[t],
                                          "must not exceed the peak (%g), got %g", p, a);
        hw->peak_flops[t] = p * 1e12;
        hw->gemm_achievable_flops[t] = a * 1e12;
    }
    static const char *const epilogues[] = {"overlapped", "serial", NULL};
    int epilogue = 0;
    double bw = 0, bw_ach = 0, flash = 0;
    if ((rc = spsim_json_get_sourced_enum(c, gpu, "gpu", "gemm_epilogue", false, epilogues,
                                          &epilogue, NULL)) ||
        (rc = spsim_json_get_sourced(c, gpu, "gpu", "flash_attention_tflops", false, 1e-3,
                                     hw->peak_flops[SPSIM_DTYPE_BF16] / 1e12, &flash, NULL)) ||
        (rc = get_needed(c, gpu, "gpu", "sm_count", 1, 4096, &sm, hw)) ||
        (rc = spsim_json_get_sourced(c, gpu, "gpu", "hbm_capacity_GB", true, 1e-3, 1e5, &cap,
                                     NULL)) ||
        (rc = get_needed(c, gpu, "gpu", "hbm_bandwidth_GBps", 1e-3, 1e6, &bw, hw)) ||
        (rc = get_needed(c, gpu, "gpu", "hbm_achievable_GBps", 1e-3, 1e6, &bw_ach, hw)))
        return rc;
    if (sm != floor(sm))
        return spsim_json_field_error(c, "gpu", "sm_count", "must be an integer, got %g", sm);
    if (bw > 0 && bw_ach > bw)
        return spsim_json_field_error(c, "gpu", "hbm_achievable_GBps",
                                      "must not exceed hbm_bandwidth_GBps (%g), got %g", bw,
                                      bw_ach);
    hw->sm_count = (uint32_t)sm;
    hw->gemm_epilogue_serial = epilogue == 1;
    hw->flash_flops = flash * 1e12;
    hw->hbm_marketed_bytes = hw->hbm_capacity_bytes = (uint64_t)llround(cap * 1e9);
    hw->hbm_Bps = bw * 1e9;
    hw->hbm_achievable_Bps = bw_ach * 1e9;
    hw->gpu_model = spsim_strdup(model);
    if (!hw->gpu_model)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    return read_gpu_rest(c, gpu, hw);
}

/* The optional gpu fields: memory limits, clock and board power. */
static int
read_gpu_rest(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw)
{
    int rc;
    if ((rc = read_memory_limits(c, gpu, hw)) || (rc = read_clock(c, gpu, hw)) ||
        (rc = read_hybridep(c, gpu, hw)))
        return rc;
    return read_board_power(c, gpu, hw);
}

/* HybridEP's measured rates (engine/moe_flex.c), each optional: in one NVLink domain and across
 * RDMA domains, dispatch then combine. */
static int
read_hybridep(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw)
{
    static const char *const keys[4] = {"hybridep_dispatch_GBps", "hybridep_combine_GBps",
                                        "hybridep_rdma_dispatch_GBps",
                                        "hybridep_rdma_combine_GBps"};
    double *to[4] = {&hw->hybridep_Bps[0], &hw->hybridep_Bps[1], &hw->hybridep_rdma_Bps[0],
                     &hw->hybridep_rdma_Bps[1]};
    for (int i = 0; i < 4; i++) {
        double v = 0;
        int rc = spsim_json_get_sourced(c, gpu, "gpu", keys[i], false, 1e-3, 1e6, &v, NULL);
        if (rc != SPSIM_OK)
            return rc;
        *to[i] = v * 1e9;
    }
    return SPSIM_OK;
}

/* What the GPU reports and what is not available to tensors (doc/profiles.md, "Memory"); every
 * field optional: without hbm_reported_MiB the capacity is hbm_capacity_GB. */
static int
read_memory_limits(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw)
{
    double reported = 0, context = 0, cublas = 0, nccl = 0, frag = 0;
    int rc;
    if ((rc = spsim_json_get_sourced(c, gpu, "gpu", "hbm_reported_MiB", false, 1, 1e8, &reported,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, gpu, "gpu", "cuda_context_MiB", false, 0, 1e5, &context,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, gpu, "gpu", "cublas_workspace_MiB", false, 0, 1e5, &cublas,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, gpu, "gpu", "nccl_buffers_per_communicator_MiB", false, 0,
                                     1e5, &nccl, NULL)) ||
        (rc = spsim_json_get_sourced(c, gpu, "gpu", "allocator_fragmentation", false, 0, 0.5, &frag,
                                     NULL)))
        return rc;
    if (reported > 0)
        hw->hbm_capacity_bytes = (uint64_t)llround(reported * 1048576.0);
    hw->reserved_fixed_bytes = (uint64_t)llround((context + cublas) * 1048576.0);
    hw->nccl_comm_bytes = (uint64_t)llround(nccl * 1048576.0);
    hw->allocator_fragmentation = frag;
    if (hw->reserved_fixed_bytes + 2 * hw->nccl_comm_bytes >= hw->hbm_capacity_bytes)
        return spsim_json_field_error(c, "gpu", "cuda_context_MiB",
                                      "the reserved memory exceeds the capacity (%g MiB)",
                                      (double)hw->hbm_capacity_bytes / 1048576.0);
    return SPSIM_OK;
}

/* The SM clock a training step sustains against the one the GEMM measurements ran at
 * (doc/profiles.md, "Sustained clock"): {"boost_MHz", optional "sustained_MHz", "source"}, or
 * {"gemm", "source"} (boost_MHz optional). Tensor-core rates scale by sustained / boost; "gemm"
 * gives GEMMs measured under sustained load instead, from which the engine derives that ratio
 * (hardware_view.c); without either (no sourced figure) or without the object they stay at the
 * measured ones. */
static int read_sustained_gemm(const struct spsim_jctx *c, const cJSON *o,
                               struct spsim_hardware *hw);

static int
read_clock(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw)
{
    static const char *const keys[] = {"boost_MHz", "sustained_MHz", "gemm", "source", NULL};
    const cJSON *o = NULL;
    const char *source = NULL;
    double boost = 0, sustained = 0;
    int rc;
    hw->clock_scale = 1.0;
    if ((rc = spsim_json_get_object(c, gpu, "gpu", "sustained_clock", false, &o)) || !o)
        return rc;
    /* With gemm the ratio comes from the points, and no clock needs naming. */
    bool gemm = cJSON_GetObjectItemCaseSensitive(o, "gemm") != NULL;
    if ((rc = spsim_json_check_keys(c, o, "gpu.sustained_clock", keys)) ||
        (rc = spsim_json_get_double(c, o, "gpu.sustained_clock", "boost_MHz", !gemm, 1, 1e5,
                                    &boost)) ||
        (rc = spsim_json_get_double(c, o, "gpu.sustained_clock", "sustained_MHz", false, 1, 1e5,
                                    &sustained)) ||
        (rc = spsim_json_get_string(c, o, "gpu.sustained_clock", "source", true, true, &source)))
        return rc;
    if (sustained > boost)
        return spsim_json_field_error(c, "gpu.sustained_clock", "sustained_MHz",
                                      "must not exceed boost_MHz (%g), got %g", boost, sustained);
    if (sustained > 0)
        hw->clock_scale = sustained / boost;
    if ((rc = read_sustained_gemm(c, o, hw)))
        return rc;
    if (sustained > 0 && hw->sustained_gemm)
        return spsim_json_field_error(c, "gpu.sustained_clock", "gemm",
                                      "give sustained_MHz or gemm, not both");
    return SPSIM_OK;
}

/* M, N and K of a GEMM point: whole numbers up to 1e9; its rate at most the dtype's peak. */
static int
check_gemm_rows(const struct spsim_jctx *c, const char *path, const struct spsim_gemm_points *t,
                double peak, const char *dtype)
{
    for (uint32_t i = 0; i < t->n; i++) {
        if (t->rows[i][3] * 1e12 > peak)
            return spsim_json_field_error(c, path, "points",
                                          "row %u: %g TFLOP/s exceeds the %s peak", i,
                                          t->rows[i][3], dtype);
        for (int j = 0; j < 3; j++)
            if (t->rows[i][j] != floor(t->rows[i][j]) || t->rows[i][j] > 1e9)
                return spsim_json_field_error(c, path, "points",
                                              "row %u: M, N and K must be whole numbers from 1 "
                                              "to 1e9, got %g",
                                              i, t->rows[i][j]);
    }
    return SPSIM_OK;
}

/* gpu.sustained_clock.gemm: {"dtype": bf16 | fp8 | nvfp4, "points": [[M, N, K, TFLOPS], ...]},
 * GEMMs a benchmark ran long enough to reach the power-limited clock (the object's source
 * says which and how). */
static int
read_sustained_gemm(const struct spsim_jctx *c, const cJSON *o, struct spsim_hardware *hw)
{
    static const char *const keys[] = {"dtype", "points", NULL};
    static const char *const dtypes[] = {"bf16", "fp16", "fp8", "nvfp4", NULL};
    const cJSON *g = NULL;
    int rc = spsim_json_get_object(c, o, "gpu.sustained_clock", "gemm", false, &g);
    if (rc || !g)
        return rc;
    int dtype = 0;
    struct spsim_gemm_points *t = spsim_calloc(1, sizeof(*t));
    if (!t)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    hw->sustained_gemm = t;
    if ((rc = spsim_json_check_keys(c, g, "gpu.sustained_clock.gemm", keys)) ||
        (rc = spsim_json_get_enum(c, g, "gpu.sustained_clock.gemm", "dtype", true, dtypes,
                                  &dtype)) ||
        (rc = read_points(c, cJSON_GetObjectItemCaseSensitive(g, "points"),
                          "gpu.sustained_clock.gemm", 4, t->rows, &t->n)))
        return rc;
    hw->sustained_gemm_dtype = (enum spsim_dtype)dtype; /* the names in enum order */
    if (!(hw->peak_flops[dtype] > 0))
        return spsim_json_field_error(c, "gpu.sustained_clock.gemm", "dtype",
                                      "the GPU has no %s peak (gpu.peak_dense_tflops)",
                                      dtypes[dtype]);
    return check_gemm_rows(c, "gpu.sustained_clock.gemm", t, hw->peak_flops[dtype], dtypes[dtype]);
}

/* gpu.attention_table: {"dtype": "bf16", "source", "points": [[d_qk, d_v, seq, window, fwd,
 * bwd], ...]} (profiles.h struct spsim_attention_table); window 0 is the whole causal context. */
static int
read_attention_table(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw)
{
    static const char *const keys[] = {"dtype", "source", "points", NULL};
    static const char *const dtypes[] = {"bf16", NULL};
    static const char *const path = "gpu.attention_table";
    const cJSON *obj = NULL;
    int rc = spsim_json_get_object(c, gpu, "gpu", "attention_table", false, &obj);
    if (rc || !obj)
        return rc;
    int dtype = 0;
    const char *source = NULL;
    struct spsim_attention_table *t = spsim_calloc(1, sizeof(*t));
    if (!t)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    hw->attention = t;
    if ((rc = spsim_json_check_keys(c, obj, path, keys)) ||
        (rc = spsim_json_get_enum(c, obj, path, "dtype", true, dtypes, &dtype)) ||
        (rc = spsim_json_get_string(c, obj, path, "source", true, true, &source)) ||
        (rc = read_rows(c, cJSON_GetObjectItemCaseSensitive(obj, "points"), path, 6, 3,
                        "D_QK, D_V, SEQ, WINDOW, FWD_TFLOPS, BWD_TFLOPS", &t->rows[0][0],
                        SPSIM_MAX_ATTENTION_POINTS, &t->n)))
        return rc;
    for (uint32_t i = 0; i < t->n; i++) {
        const double *r = t->rows[i];
        for (int j = 0; j < 4; j++)
            if (r[j] != floor(r[j]) || r[j] > (j < 2 ? 4096 : 1e8))
                return spsim_json_field_error(c, path, "points",
                                              "row %u: head dimensions (to 4096), sequence and "
                                              "window (to 1e8) must be whole numbers, got %g",
                                              i, r[j]);
        if (r[3] > 0 && r[3] >= r[2])
            return spsim_json_field_error(c, path, "points",
                                          "row %u: a window (%g) must be shorter than the "
                                          "sequence (%g); write 0 for the whole context",
                                          i, r[3], r[2]);
        if (r[4] * 1e12 > hw->peak_flops[SPSIM_DTYPE_BF16] ||
            r[5] * 1e12 > hw->peak_flops[SPSIM_DTYPE_BF16])
            return spsim_json_field_error(
                c, path, "points", "row %u: %g / %g TFLOP/s exceeds the bf16 peak", i, r[4], r[5]);
    }
    return SPSIM_OK;
}

/* gpu.board_power_W: the vendor's maximum board power (TDP, TGP or per-GPU maximum) for the
 * energy of a run (spsim_train_plan); optional, and {"value": null, "source": WHY} where no source
 * gives it, so that energy is refused with that reason. */
static int
read_board_power(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw)
{
    const char *why = NULL;
    int rc = spsim_json_get_sourced_or_null(c, gpu, "gpu", "board_power_W", 1, 1e5,
                                            &hw->board_power_W, &why);
    if (rc || !why)
        return rc;
    hw->board_power_unsourced = spsim_strdup(why);
    return hw->board_power_unsourced ? SPSIM_OK : spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
}

/* Read the measured GEMM points; the engine derives its rate table from them. */
static int
read_gemm_table(const struct spsim_jctx *c, const cJSON *gpu, struct spsim_hardware *hw)
{
    const cJSON *obj = NULL;
    int rc = spsim_json_get_object(c, gpu, "gpu", "gemm_table", false, &obj);
    if (rc || !obj)
        return rc;
    static const char *const keys[] = {"dtype", "source", "points", NULL};
    static const char *const dtypes[] = {"bf16", NULL};
    int dtype = 0;
    const char *source = NULL;
    struct spsim_gemm_points *t = spsim_calloc(1, sizeof(*t));
    if (!t)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    hw->gemm_points = t;
    if ((rc = spsim_json_check_keys(c, obj, "gpu.gemm_table", keys)) ||
        (rc = spsim_json_get_enum(c, obj, "gpu.gemm_table", "dtype", true, dtypes, &dtype)) ||
        (rc = spsim_json_get_string(c, obj, "gpu.gemm_table", "source", true, true, &source)) ||
        (rc = read_points(c, cJSON_GetObjectItemCaseSensitive(obj, "points"), "gpu.gemm_table", 4,
                          t->rows, &t->n)))
        return rc;
    return check_gemm_rows(c, "gpu.gemm_table", t, hw->peak_flops[SPSIM_DTYPE_BF16], "bf16");
}

static int
read_node(const struct spsim_jctx *c, const cJSON *node, struct spsim_hardware *hw)
{
    static const char *const keys[] = {"gpus_per_node", "nvlink_domain_gpus", "nics_per_node",
                                       NULL};
    double gpn = 0, dom = 0, nics = 0;
    int rc;
    if ((rc = spsim_json_check_keys(c, node, "node", keys)) ||
        (rc =
             spsim_json_get_sourced(c, node, "node", "gpus_per_node", true, 1, 1024, &gpn, NULL)) ||
        (rc = spsim_json_get_sourced(c, node, "node", "nvlink_domain_gpus", true, 1, 65536, &dom,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, node, "node", "nics_per_node", true, 1, 1024, &nics, NULL)))
        return rc;
    if (gpn != floor(gpn) || dom != floor(dom) || nics != floor(nics))
        return spsim_json_field_error(c, "node", "gpus_per_node",
                                      "gpus_per_node, nvlink_domain_gpus and nics_per_node must be "
                                      "integers");
    if ((uint32_t)dom % (uint32_t)gpn != 0)
        return spsim_json_field_error(c, "node", "nvlink_domain_gpus",
                                      "must be a multiple of gpus_per_node (%g), got %g", gpn, dom);
    hw->gpus_per_node = (uint32_t)gpn;
    hw->nvlink_domain_gpus = (uint32_t)dom;
    hw->nics_per_node = (uint32_t)nics;
    return SPSIM_OK;
}

static int
read_nvlink(const struct spsim_jctx *c, const cJSON *nv, struct spsim_hardware *hw)
{
    static const char *const keys[] = {"bandwidth_per_direction_GBps",
                                       "ring_busbw_GBps",
                                       "allreduce_busbw_GBps",
                                       "base_latency_us",
                                       "hop_latency_us",
                                       "nccl_channels",
                                       "nvls_min_gpus",
                                       "nvls",
                                       "busbw_curve",
                                       "busbw_curves",
                                       "ring_measured_on",
                                       NULL};
    double line = 0, ring = 0, ar = 0, channels = 0, nvls_min = 0, nvls = 1;
    int rc, basis = -1;
    if ((rc = spsim_json_check_keys(c, nv, "nvlink", keys)) ||
        (rc = spsim_json_get_sourced(c, nv, "nvlink", "bandwidth_per_direction_GBps", true, 1e-3,
                                     1e6, &line, NULL)) ||
        (rc = spsim_json_get_sourced(c, nv, "nvlink", "ring_busbw_GBps", true, 1e-3, 1e6, &ring,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, nv, "nvlink", "allreduce_busbw_GBps", false, 1e-3, 1e6, &ar,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, nv, "nvlink", "nccl_channels", true, 1, 256, &channels,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, nv, "nvlink", "nvls_min_gpus", false, 2, 65536, &nvls_min,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, nv, "nvlink", "nvls", false, 0, 1, &nvls, NULL)) ||
        (rc = spsim_json_get_sourced_enum(c, nv, "nvlink", "ring_measured_on", false,
                                          spsim_ring_basis_names, &basis, NULL)) ||
        (rc = read_latency(c, nv, "nvlink", &hw->nvlink)))
        return rc;
    hw->ring_measured_on = (enum spsim_ring_basis)(basis + 1);
    if (ring > line)
        return spsim_json_field_error(c, "nvlink", "ring_busbw_GBps",
                                      "must not exceed bandwidth_per_direction_GBps (%g), got %g",
                                      line, ring);
    if (channels != floor(channels) || (hw->sm_count > 0 && channels >= hw->sm_count))
        return spsim_json_field_error(c, "nvlink", "nccl_channels",
                                      "must be an integer below gpu.sm_count (%u), got %g",
                                      hw->sm_count, channels);
    hw->nccl_channels = (uint32_t)channels;
    if (nvls_min != floor(nvls_min))
        return spsim_json_field_error(c, "nvlink", "nvls_min_gpus", "must be an integer, got %g",
                                      nvls_min);
    hw->nvls_min_gpus = (uint32_t)nvls_min;
    if (nvls != floor(nvls))
        return spsim_json_field_error(c, "nvlink", "nvls", "must be 0 or 1, got %g", nvls);
    hw->nvls_absent = nvls == 0;
    hw->nvlink_line_Bps = line * 1e9;
    for (int op = 0; op < SPSIM_COLL_COUNT; op++)
        hw->nvlink.busbw_Bps[op] = ring * 1e9;
    /* NVLink SHARP (NVLS) AllReduce exceeds the ring figure; AG/RS/p2p stay ring-bound. */
    if (ar > 0)
        hw->nvlink.busbw_Bps[SPSIM_COLL_ALL_REDUCE] = ar * 1e9;
    return read_tier_curves(c, nv, "nvlink", &hw->nvlink, hw);
}

static int
read_network(const struct spsim_jctx *c, const cJSON *net, struct spsim_hardware *hw)
{
    static const char *const keys[] = {
        "nic_line_rate_Gbit_s",    "nic_achievable_GBps", "base_latency_us", "hop_latency_us",
        "uplink_oversubscription", "busbw_curve",         "busbw_curves",    NULL};
    double line = 0, ach = 0, over = 0;
    int rc;
    if ((rc = spsim_json_check_keys(c, net, "network", keys)) ||
        (rc = spsim_json_get_sourced(c, net, "network", "nic_line_rate_Gbit_s", true, 1e-3, 1e7,
                                     &line, NULL)) ||
        (rc = spsim_json_get_sourced(c, net, "network", "nic_achievable_GBps", true, 1e-3, 1e6,
                                     &ach, NULL)) ||
        (rc = spsim_json_get_sourced(c, net, "network", "uplink_oversubscription", true, 1, 1024,
                                     &over, NULL)) ||
        (rc = read_latency(c, net, "network", &hw->network)))
        return rc;
    if (ach > line / 8.0)
        return spsim_json_field_error(c, "network", "nic_achievable_GBps",
                                      "must not exceed the line rate (%g Gbit/s = %g GB/s), got %g",
                                      line, line / 8.0, ach);
    hw->nic_line_Bps = line * 1e9 / 8.0;
    hw->nic_achievable_Bps = ach * 1e9;
    hw->oversubscription = over;
    /* The network tier's peak busbw is set per group from the NICs its GPUs own (comm model);
     * the curve's efficiency is measured against one GPU's NIC share. */
    double per_gpu = hw->nic_achievable_Bps * hw->nics_per_node / hw->gpus_per_node;
    for (int op = 0; op < SPSIM_COLL_COUNT; op++)
        hw->network.busbw_Bps[op] = per_gpu * hw->gpus_per_node;
    return read_tier_curves(c, net, "network", &hw->network, hw);
}

/* host_link: the GPU's copy bandwidth to and from pinned host memory (activation offload, the
 * optimizer's CPU offload), and optionally the bandwidth the CPU's optimizer step streams its
 * host memory at (cpu_memory_GBps; no shipped profile has a sourced figure). */
static int
read_host_link(const struct spsim_jctx *c, const cJSON *hl, struct spsim_hardware *hw)
{
    static const char *const keys[] = {
        "link", "line_rate_per_direction_GBps", "h2d_GBps", "d2h_GBps", "cpu_memory_GBps", NULL};
    double line = 0, h2d = 0, d2h = 0, cpu = 0;
    int rc;
    if (!hl)
        return SPSIM_OK;
    if ((rc = spsim_json_check_keys(c, hl, "host_link", keys)) ||
        (rc = spsim_json_get_sourced_enum(c, hl, "host_link", "link", true, spsim_host_link_names,
                                          &hw->host_link, NULL)) ||
        (rc = spsim_json_get_sourced(c, hl, "host_link", "line_rate_per_direction_GBps", false,
                                     1e-3, 1e6, &line, NULL)) ||
        (rc =
             spsim_json_get_sourced(c, hl, "host_link", "h2d_GBps", true, 1e-3, 1e6, &h2d, NULL)) ||
        (rc =
             spsim_json_get_sourced(c, hl, "host_link", "d2h_GBps", true, 1e-3, 1e6, &d2h, NULL)) ||
        (rc = spsim_json_get_sourced(c, hl, "host_link", "cpu_memory_GBps", false, 1e-3, 1e6, &cpu,
                                     NULL)))
        return rc;
    hw->host_cpu_memory_Bps = cpu * 1e9;
    if (line > 0 && (h2d > line || d2h > line))
        return spsim_json_field_error(c, "host_link", h2d > line ? "h2d_GBps" : "d2h_GBps",
                                      "must not exceed line_rate_per_direction_GBps (%g), got %g",
                                      line, h2d > line ? h2d : d2h);
    hw->host_h2d_Bps = h2d * 1e9;
    hw->host_d2h_Bps = d2h * 1e9;
    return SPSIM_OK;
}

/* host: the node's CPU as it drives the GPU. kernel_launch_us is the host time of one kernel
 * launch through PyTorch and the CUDA driver (the shipped profiles give the driver call's
 * alone, doc/profiles.md "host"); op_us (optional) the host time of one framework op beyond
 * its launches (Python, the dispatcher, Transformer Engine's module code); torch_call_us
 * (optional) one torch call's beyond its launch, op_us when absent (doc/profiles.md). */
static int
read_host(const struct spsim_jctx *c, const cJSON *host, struct spsim_hardware *hw)
{
    static const char *const keys[] = {"kernel_launch_us", "op_us", "torch_call_us", NULL};
    double us = 0, op = 0, call = -1;
    int rc;
    if (!host)
        return SPSIM_OK;
    if ((rc = spsim_json_check_keys(c, host, "host", keys)) ||
        (rc = spsim_json_get_sourced(c, host, "host", "kernel_launch_us", true, 1e-3, 1e4, &us,
                                     NULL)) ||
        (rc = spsim_json_get_sourced(c, host, "host", "op_us", false, 0, 1e4, &op, NULL)) ||
        (rc = spsim_json_get_sourced(c, host, "host", "torch_call_us", false, 0, 1e4, &call, NULL)))
        return rc;
    hw->torch_call_given = call >= 0;
    hw->host_torch_call_us = hw->torch_call_given ? call : op;
    hw->host_torch_call_s = hw->host_torch_call_us * 1e-6;
    hw->kernel_launch_s = us * 1e-6;
    hw->kernel_launch_us = us;
    hw->host_op_s = op * 1e-6;
    hw->host_op_us = op;
    return SPSIM_OK;
}

static int
read_hardware(const struct spsim_jctx *c, const cJSON *root, struct spsim_hardware *hw)
{
    static const char *const keys[] = {"schema",      "name",   "description", "gpu",
                                       "node",        "nvlink", "network",     "host_link",
                                       "calibration", "host",   NULL};
    const char *schema = NULL, *name = NULL, *description = "";
    const cJSON *gpu = NULL, *node = NULL, *nv = NULL, *net = NULL, *cal = NULL, *hl = NULL,
                *host = NULL;
    int rc;
    if ((rc = spsim_json_check_keys(c, root, NULL, keys)) ||
        (rc = spsim_json_get_string(c, root, NULL, "schema", true, true, &schema)))
        return rc;
    if (strcmp(schema, "spsim-hardware/1") != 0)
        return spsim_json_field_error(c, NULL, "schema", "must be \"spsim-hardware/1\", got %s",
                                      SPSIM_Q(schema));
    if ((rc = spsim_json_get_string(c, root, NULL, "name", true, true, &name)) ||
        (rc = spsim_json_get_string(c, root, NULL, "description", false, false, &description)) ||
        (rc = spsim_json_get_object(c, root, NULL, "gpu", true, &gpu)) ||
        (rc = spsim_json_get_object(c, root, NULL, "node", true, &node)) ||
        (rc = spsim_json_get_object(c, root, NULL, "nvlink", true, &nv)) ||
        (rc = spsim_json_get_object(c, root, NULL, "network", true, &net)) ||
        (rc = spsim_json_get_object(c, root, NULL, "calibration", false, &cal)) ||
        (rc = spsim_json_get_object(c, root, NULL, "host_link", false, &hl)) ||
        (rc = spsim_json_get_object(c, root, NULL, "host", false, &host)) ||
        (rc = read_gpu(c, gpu, hw)) || (rc = read_gemm_table(c, gpu, hw)) ||
        (rc = read_attention_table(c, gpu, hw)) || (rc = read_node(c, node, hw)) ||
        (rc = read_nvlink(c, nv, hw)) || (rc = read_network(c, net, hw)) ||
        (rc = read_host_link(c, hl, hw)) || (rc = read_host(c, host, hw)))
        return rc;
    hw->calibrated = cal != NULL;
    /* spsim calibrate --runs labels its profiles: calibration.kind "fitted". */
    const cJSON *kind = cal ? cJSON_GetObjectItemCaseSensitive(cal, "kind") : NULL;
    hw->fitted = cJSON_IsString(kind) && strcmp(kind->valuestring, "fitted") == 0;
    hw->name = spsim_strdup(name);
    hw->description = spsim_strdup(description);
    if (!hw->name || !hw->description)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    return SPSIM_OK;
}

int
spsim_hardware_read(const char *json, size_t len, const char *origin, struct spsim_hardware **out,
                    struct spsim_error *err)
{
    if (!origin)
        origin = "<hardware>";
    cJSON *root = NULL;
    int rc = spsim_json_parse(json, len, origin, &root, err);
    if (rc != SPSIM_OK)
        return rc;
    struct spsim_hardware *hw = spsim_calloc(1, sizeof(*hw));
    if (!hw) {
        cJSON_Delete(root);
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    }
    struct spsim_jctx c = {origin, err};
    rc = read_hardware(&c, root, hw);
    cJSON_Delete(root);
    if (rc != SPSIM_OK) {
        spsim_hardware_destroy(hw);
        return rc;
    }
    *out = hw;
    return SPSIM_OK;
}

void
spsim_hardware_destroy(struct spsim_hardware *hw)
{
    if (!hw)
        return;
    for (uint32_t i = 0; i < hw->ncurves; i++)
        curve_free(&hw->curves[i]);
    if (hw->gemm_table && hw->gemm_table->interp)
        gsl_interp_free(hw->gemm_table->interp);
    free(hw->gemm_table);
    free(hw->gemm_points);
    free(hw->sustained_gemm);
    free(hw->attention);
    free(hw->name);
    free(hw->description);
    free(hw->gpu_model);
    free(hw->board_power_unsourced);
    free(hw->unsourced_fields);
    free(hw);
}

void
spsim_hardware_get_info(const struct spsim_hardware *hw, struct spsim_hardware_info *info)
{
    memset(info, 0, sizeof(*info));
    info->name = hw->name;
    info->description = hw->description;
    info->gpu_model = hw->gpu_model;
    for (int t = 0; t < SPSIM_DTYPE_COUNT; t++)
        info->peak_tflops[t] = hw->peak_flops[t] / 1e12;
    info->gemm_achievable_tflops_bf16 = hw->gemm_achievable_flops[SPSIM_DTYPE_BF16] / 1e12;
    info->sm_count = hw->sm_count;
    info->hbm_capacity_bytes = hw->hbm_capacity_bytes;
    info->hbm_marketed_bytes = hw->hbm_marketed_bytes;
    info->hbm_bandwidth_GBps = hw->hbm_Bps / 1e9;
    info->hbm_achievable_GBps = hw->hbm_achievable_Bps / 1e9;
    info->gpus_per_node = hw->gpus_per_node;
    info->nvlink_domain_gpus = hw->nvlink_domain_gpus;
    info->nics_per_node = hw->nics_per_node;
    info->nvlink_bandwidth_per_direction_GBps = hw->nvlink_line_Bps / 1e9;
    info->nvlink_ring_busbw_GBps = hw->nvlink.busbw_Bps[SPSIM_COLL_ALL_GATHER] / 1e9;
    info->nvlink_allreduce_busbw_GBps = hw->nvlink.busbw_Bps[SPSIM_COLL_ALL_REDUCE] / 1e9;
    info->nic_line_rate_Gbit_s = hw->nic_line_Bps * 8.0 / 1e9;
    info->nic_achievable_GBps = hw->nic_achievable_Bps / 1e9;
    info->calibrated = hw->calibrated;
    info->fitted = hw->fitted;
    info->board_power_W = hw->board_power_W;
    info->board_power_unsourced = hw->board_power_unsourced;
    info->unsourced_fields = hw->unsourced_fields;
}
