/*
 * The public hardware loader: the profile as profiles/hardware.c reads and validates it, then
 * the efficiencies the collective and GEMM models derive from its measured points, once per
 * loaded profile, so that the profile reader knows nothing of the models that use it.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>

#include "collective_model.h"
#include "eval.h"
#include "hardware_view.h"
#include "profiles/jsonfield.h"

/* The α and the peak busbw the model applies to a curve's measurement at each of its sizes: the
 * formulas spsim_collective_time() predicts with, so that a curve reproduces its own points. An
 * NVLink curve is a ring inside one domain; a network curve is placed on `nodes` nodes (default:
 * as few as the node allows) and takes, size by size, the latency and NIC bandwidth of the
 * algorithm NCCL would run there (spsim_collective_terms). */
static int
curve_group(const struct spsim_jctx *c, const struct spsim_hardware *hw,
            const struct spsim_curve *cv, struct spsim_group *g)
{
    uint32_t nodes = cv->nodes;
    struct spsim_error e = {0};
    if (spsim_collective_layout(hw, cv->gpus, &nodes, "nodes", g, &e) != SPSIM_OK)
        return spsim_json_field_error(c, cv->path, "nodes", "%s", e.message);
    bool inside = spsim_group_tier(hw, *g) == SPSIM_TIER_NVLINK;
    if (inside != !cv->network)
        return spsim_json_field_error(c, cv->path, "nodes",
                                      "%u GPUs on %u node(s) %s one NVLink domain of %u GPUs, but "
                                      "this is %s curve",
                                      cv->gpus, nodes, inside ? "stay inside" : "span more than",
                                      hw->nvlink_domain_gpus,
                                      cv->network ? "a network" : "an NVLink");
    return SPSIM_OK;
}

/* eff(size) from measured busbw: the time at each size minus the model's latency for that
 * collective and group, against the peak busbw the model gives the group. */
static int
prepare_curve(const struct spsim_jctx *c, const struct spsim_hardware *hw, struct spsim_curve *cv)
{
    struct spsim_group g = {cv->gpus, cv->gpus};
    bool ring = !cv->network && cv->nodes == 0;
    int rc = ring ? SPSIM_OK : curve_group(c, hw, cv, &g);
    if (rc)
        return rc;
    double latency_s = spsim_ring_latency_s(&hw->nvlink, cv->op, cv->gpus);
    double peak = spsim_nvlink_peak_Bps(hw, cv->op, cv->gpus);
    for (uint32_t i = 0; i < cv->n; i++) {
        double size = cv->size_bytes[i];
        if (!ring)
            spsim_collective_terms(hw, cv->op, g, size, &latency_s, &peak);
        double wire = spsim_wire_fraction(cv->op, cv->gpus) * size;
        double measured_s = wire / cv->busbw_Bps[i];
        double eff = 1.0;
        if (measured_s > latency_s)
            eff = wire / (peak * (measured_s - latency_s));
        /* Above the maximum: the point beats the tier's stated peak; below 1e-3:
         * latency-dominated sizes whose residual is noise. Both are clamped. */
        double most = cv->network ? SPSIM_NETWORK_EFF_MAX : 1.0;
        cv->log_size[i] = log(size);
        cv->eff[i] = eff > most ? most : (eff < 1e-3 ? 1e-3 : eff);
    }
    cv->interp = gsl_interp_alloc(gsl_interp_linear, cv->n);
    if (!cv->interp)
        return spsim_fail(c->err, SPSIM_ENOMEM, "%s: out of memory", c->origin);
    if (gsl_interp_init(cv->interp, cv->log_size, cv->eff, cv->n) != GSL_SUCCESS)
        return spsim_fail(c->err, SPSIM_ENUMERIC,
                          "%s: field '%s.points': interpolation setup failed", c->origin, cv->path);
    return SPSIM_OK;
}

static int
compare_rows(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The rate table: each point's main-loop rate keyed by its work (2MNK FLOPs), equal keys
 * averaged, interpolated in log FLOPs. */
static int
prepare_gemm_table(const struct spsim_jctx *c, struct spsim_hardware *hw)
{
    const struct spsim_gemm_points *p = hw->gemm_points;
    double rows[SPSIM_MAX_CURVE_POINTS][2]; /* 8 KiB on the stack: no shared state */
    for (uint32_t i = 0; i < p->n; i++) {
        const double *r = p->rows[i];
        uint64_t gm = (uint64_t)r[0], gn = (uint64_t)r[1], gk = (uint64_t)r[2];
        double rate = 0;
        if (spsim_gemm_mainloop_rate(hw, gm, gn, gk, r[3] * 1e12, &rate))
            return spsim_json_field_error(c, "gpu.gemm_table", "points",
                                          "row %u: %g TFLOP/s is faster than writing the %llu x "
                                          "%llu output at gpu.hbm_achievable_GBps alone",
                                          i, r[3], (unsigned long long)gm, (unsigned long long)gn);
        rows[i][0] = log(2.0 * r[0] * r[1] * r[2]);
        rows[i][1] = rate / 1e12;
    }
    qsort(rows, p->n, sizeof(rows[0]), compare_rows);
    struct spsim_gemm_table *t = spsim_calloc(1, sizeof(*t));
    if (!t)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    hw->gemm_table = t;
    for (uint32_t i = 0; i < p->n;) {
        uint32_t j = i;
        double sum = 0;
        while (j < p->n && rows[j][0] == rows[i][0])
            sum += rows[j++][1];
        t->log_flops[t->n] = rows[i][0];
        t->tflops[t->n++] = sum / (j - i);
        i = j;
    }
    if (t->n < 2)
        return SPSIM_OK;
    t->interp = gsl_interp_alloc(gsl_interp_linear, t->n);
    if (!t->interp)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    if (gsl_interp_init(t->interp, t->log_flops, t->tflops, t->n) != GSL_SUCCESS)
        return spsim_fail(c->err, SPSIM_ENUMERIC,
                          "%s: field 'gpu.gemm_table': interpolation setup failed", c->origin);
    return SPSIM_OK;
}

/* The points' summed GEMM time at sustained / boost = scale (the model of timing.c). */
static int
sustained_sum(struct spsim_hardware *hw, double scale, double *sum)
{
    const struct spsim_gemm_points *p = hw->sustained_gemm;
    hw->clock_scale = scale;
    *sum = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        double s = 0;
        int rc = spsim_gemm_time(hw, hw->sustained_gemm_dtype, (uint64_t)p->rows[i][0],
                                 (uint64_t)p->rows[i][1], (uint64_t)p->rows[i][2], 1, false, &s);
        if (rc != SPSIM_OK)
            return rc;
        *sum += s;
    }
    return SPSIM_OK;
}

/*
 * gpu.sustained_clock.gemm: GEMMs measured under sustained load. The clock ratio is the one at
 * which the GEMM model (the boost-clock measurements: gemm_achievable_tflops, gemm_table) takes
 * as long over the points together as they were measured to take: a power-limited GPU runs its
 * tensor cores at a lower clock, and its rate falls with it. The model's time falls
 * monotonically as the ratio grows, so bisection finds it; points the boost-clock model cannot
 * reach (measured faster than it) are refused.
 */
static int
prepare_sustained(const struct spsim_jctx *c, struct spsim_hardware *hw)
{
    const struct spsim_gemm_points *p = hw->sustained_gemm;
    double measured = 0, at_boost = 0, lo = 1e-3, hi = 1.0;
    for (uint32_t i = 0; i < p->n; i++)
        measured += 2.0 * p->rows[i][0] * p->rows[i][1] * p->rows[i][2] / (p->rows[i][3] * 1e12);
    int rc = sustained_sum(hw, 1.0, &at_boost);
    if (rc == SPSIM_OK && at_boost > measured * (1.0 + 1e-12))
        return spsim_json_field_error(c, "gpu.sustained_clock.gemm", "points",
                                      "the points take %.6g s together, less than the GEMM model "
                                      "gives them at the boost clock (%.6g s)",
                                      measured, at_boost);
    for (int i = 0; rc == SPSIM_OK && i < 100 && hi - lo > 1e-15; i++) {
        double mid = 0.5 * (lo + hi), sum = 0;
        rc = sustained_sum(hw, mid, &sum);
        *(sum > measured ? &lo : &hi) = mid;
    }
    if (rc != SPSIM_OK)
        return spsim_fail(c->err, rc, "%s: field 'gpu.sustained_clock.gemm': numerical failure",
                          c->origin);
    hw->clock_scale = hi;
    return SPSIM_OK;
}

int
spsim_hardware_prepare(struct spsim_hardware *hw, const char *origin, struct spsim_error *err)
{
    struct spsim_jctx c = {origin, err};
    int rc;
    /* Both derivations run the GEMM model, which needs every figure a listing-only profile
     * lacks. */
    if (hw->unsourced_fields && (hw->gemm_points || hw->sustained_gemm))
        return spsim_json_field_error(&c, "gpu", hw->gemm_points ? "gemm_table" : "sustained_clock",
                                      "needs %s, which the profile marks unsourced",
                                      hw->unsourced_fields);
    if (hw->gemm_points && (rc = prepare_gemm_table(&c, hw)))
        return rc;
    if (hw->sustained_gemm && (rc = prepare_sustained(&c, hw)))
        return rc;
    for (uint32_t i = 0; i < hw->ncurves; i++)
        if ((rc = prepare_curve(&c, hw, &hw->curves[i])))
            return rc;
    /* Up to a dozen strstr a collective prediction asked before. */
    hw->nccl_arch_plus1 = (uint8_t)(spsim_nccl_arch_of(hw) + 1);
    return SPSIM_OK;
}

/* A profile that marks figures the time model needs unsourced is read for listing only: every
 * GEMM, memory-bound term and ring tail would use them, so no model is given a 0 in their place
 * (doc/profiles.md, "Unsourced figures"). */
static int
refuse_unsourced(const struct spsim_hardware *hw, const char *origin, struct spsim_error *err)
{
    return spsim_fail(err, SPSIM_EFIELD,
                      "%s: unsourced %s (each field's source says why): the time model needs "
                      "them, so the profile is refused here ('spsim list hardware' and 'spsim "
                      "check' read it)",
                      origin, hw->unsourced_fields);
}

static int
parse_profile(const char *json, size_t len, const char *origin, bool listing,
              struct spsim_hardware **out, struct spsim_error *err)
{
    if (!json || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_hardware_parse: NULL argument");
    if (!origin)
        origin = "<hardware>";
    struct spsim_hardware *hw = NULL;
    int rc = spsim_hardware_read(json, len, origin, &hw, err);
    if (rc == SPSIM_OK && hw->unsourced_fields && !listing)
        rc = refuse_unsourced(hw, origin, err);
    else if (rc == SPSIM_OK)
        rc = spsim_hardware_prepare(hw, origin, err);
    if (rc != SPSIM_OK) {
        spsim_hardware_destroy(hw);
        hw = NULL;
    }
    *out = hw;
    return rc;
}

int
spsim_hardware_parse(const char *json, size_t len, const char *origin, struct spsim_hardware **out,
                     struct spsim_error *err)
{
    return parse_profile(json, len, origin, false, out, err);
}

static int
load_profile(const char *path, bool listing, struct spsim_hardware **out, struct spsim_error *err)
{
    if (!path || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_hardware_load: NULL argument");
    char *buf = NULL;
    size_t len = 0;
    int rc = spsim_read_file(path, &buf, &len, err);
    if (rc == SPSIM_OK)
        rc = parse_profile(buf, len, path, listing, out, err);
    free(buf);
    return rc;
}

int
spsim_hardware_load(const char *path, struct spsim_hardware **out, struct spsim_error *err)
{
    return load_profile(path, false, out, err);
}

int
spsim_hardware_load_listing(const char *path, struct spsim_hardware **out, struct spsim_error *err)
{
    return load_profile(path, true, out, err);
}
