/*
 * Calibrating a hardware profile from measured collectives (doc/calibration.md): group the
 * samples by table, collective and group; place the groups on the node the samples describe;
 * fit time = α + steps·hop + wire/B per link tier; choose the busbw each tier must offer so that
 * eff(size) ≤ 1; write the profile (calibrate_json.c), load it with the real loader and predict
 * every measured size with it.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calibrate_json.h"
#include "engine/hardware_view.h"
#include "spsim/collective.h"
#include "spsim/data.h"

void
spsim_calibrate_defaults(struct spsim_calibrate_options *o)
{
    memset(o, 0, sizeof(*o));
}

/* Add a note to the result (one line; dropped past SPSIM_CALIBRATION_MAX_NOTES). */
static void spsim_cal_note(struct cal *c, const char *fmt, ...) SPSIM_PRINTF(2, 3);

static void
spsim_cal_note(struct cal *c, const char *fmt, ...)
{
    struct spsim_calibration *out = c->out;
    if (out->nnotes >= SPSIM_CALIBRATION_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->notes[out->nnotes++], sizeof(out->notes[0]), fmt, ap);
    va_end(ap);
}

/* ---- grouping the samples ------------------------------------------------------------------ */

static struct cal_series *
series_for(struct cal *c, size_t input, const struct spsim_bw_sample *x)
{
    for (size_t i = 0; i < c->ns; i++) {
        struct cal_series *s = &c->s[i];
        if (s->input == input && s->op == x->op && s->ranks == x->ranks && s->nodes == x->nodes)
            return s;
    }
    struct cal_series *grown = realloc(c->s, (c->ns + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    c->s = grown;
    struct cal_series *s = &c->s[c->ns++];
    *s = (struct cal_series){.input = input, .op = x->op, .ranks = x->ranks, .nodes = x->nodes};
    return s;
}

static int
series_push(struct cal_series *s, uint64_t size, double time_s)
{
    uint64_t *sz = realloc(s->size, (s->n + 1) * sizeof(*sz));
    if (sz)
        s->size = sz;
    double *t = sz ? realloc(s->time_s, (s->n + 1) * sizeof(*t)) : NULL;
    if (!t)
        return SPSIM_ENOMEM;
    s->time_s = t;
    s->size[s->n] = size;
    s->time_s[s->n++] = time_s;
    return SPSIM_OK;
}

/* Sort a series by size and average the times of equal sizes (repeated runs). */
static void
series_merge(struct cal_series *s)
{
    for (size_t i = 1; i < s->n; i++) /* insertion sort: tables are nearly sorted */
        for (size_t j = i; j > 0 && s->size[j - 1] > s->size[j]; j--) {
            uint64_t a = s->size[j];
            s->size[j] = s->size[j - 1];
            s->size[j - 1] = a;
            double b = s->time_s[j];
            s->time_s[j] = s->time_s[j - 1];
            s->time_s[j - 1] = b;
        }
    size_t out = 0;
    for (size_t i = 0; i < s->n;) {
        size_t j = i;
        double sum = 0;
        while (j < s->n && s->size[j] == s->size[i])
            sum += s->time_s[j++];
        s->size[out] = s->size[i];
        s->time_s[out++] = sum / (double)(j - i);
        i = j;
    }
    s->n = out;
}

static int
collect_series(struct cal *c)
{
    size_t lone = 0;
    for (size_t t = 0; t < c->ntables; t++) {
        size_t n = spsim_bw_table_size(c->tables[t]);
        for (size_t i = 0; i < n; i++) {
            const struct spsim_bw_sample *x = spsim_bw_table_get(c->tables[t], i);
            if (x->ranks < 2) { /* one GPU: no link is crossed (nccl-tests busbw factor 0) */
                lone++;
                continue;
            }
            struct cal_series *s = series_for(c, t, x);
            if (!s || series_push(s, x->size_bytes, x->time_s) != SPSIM_OK)
                return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
        }
    }
    if (lone)
        spsim_cal_note(c, "%zu samples of a single rank carry no link timing and were left out",
                       lone);
    if (c->ns == 0 && c->ngemms + c->nhbm == 0)
        return spsim_fail(c->err, SPSIM_EINVAL, "calibrate: no measured collectives");
    for (size_t i = 0; i < c->ns; i++)
        series_merge(&c->s[i]);
    return SPSIM_OK;
}

/* ---- where the samples ran ----------------------------------------------------------------- */

static const char *
input_name(const struct cal *c, size_t input)
{
    const char *src = spsim_bw_table_info(c->tables[input], "source");
    return src ? src : "measurement";
}

/* Multi-node samples say how many GPUs a node has: the calibrated node holds that many, and
 * an NVLink domain as many nodes as the base's does. Then every series is placed as
 * `spsim collective` would place it. */
static int
settle_layout(struct cal *c)
{
    c->model = *c->base;
    /* A log whose NCCL found no NVLS multicast (a node without NVSwitches) describes such
     * nodes: the calibrated profile has no NVLS, whatever the base. */
    for (size_t i = 0; i < c->ntables; i++)
        if (spsim_bw_table_info(c->tables[i], "nvls"))
            c->model.nvls_absent = true;
    for (size_t i = 0; i < c->ns; i++) {
        const struct cal_series *s = &c->s[i];
        if (s->nodes <= 1)
            continue;
        uint32_t gpn = s->ranks / s->nodes;
        if (c->multinode_gpn && gpn != c->multinode_gpn)
            return spsim_fail(c->err, SPSIM_EINVAL,
                              "calibrate: %s ran %u GPUs per node, another input %u: one profile "
                              "has one node size",
                              input_name(c, s->input), gpn, c->multinode_gpn);
        c->multinode_gpn = gpn;
    }
    if (c->multinode_gpn) {
        c->model.nvlink_domain_gpus =
            c->multinode_gpn * (c->base->nvlink_domain_gpus / c->base->gpus_per_node);
        c->model.gpus_per_node = c->multinode_gpn;
    }
    for (size_t i = 0; i < c->ns; i++) {
        struct cal_series *s = &c->s[i];
        struct spsim_error e = {0};
        if (spsim_collective_layout(&c->model, s->ranks, &s->nodes, "nodes", &s->g, &e) != SPSIM_OK)
            return spsim_fail(c->err, SPSIM_EINVAL, "calibrate: %s (%s, %u ranks): %s",
                              input_name(c, s->input), spsim_coll_op_name(s->op), s->ranks,
                              e.message);
        s->tier = spsim_group_tier(&c->model, s->g) == SPSIM_TIER_NVLINK ? CAL_NVLINK : CAL_NETWORK;
        c->measured[s->tier] = true;
    }
    return SPSIM_OK;
}

/* ---- the fit ------------------------------------------------------------------------------- */

/* The α and peak busbw the model gives a series' size i with `nic_Bps` per NIC: across domains
 * the algorithm NCCL would run at that size sets both (Ring, Tree, NVLSTree, PAT). */
static void
size_terms(const struct cal *c, const struct cal_series *s, size_t i, double nic_Bps, double *lat,
           double *peak)
{
    struct spsim_hardware m = c->model;
    m.nic_achievable_Bps = nic_Bps;
    spsim_collective_terms(&m, s->op, s->g, (double)s->size[i], lat, peak);
}

/*
 * A fit point of a series' size. NVLink rings count all their steps as hops. Across domains the
 * algorithm NCCL runs at the size sets the point's structure (spsim_collective_terms): its
 * network hop count k (spsim_collective_latency_parts), the known parts of its α (NVLink hops,
 * the protocol's latency, NVLSTree's fill, at the base profile's NIC rate), and its bytes
 * scaled by the bandwidth its NICs give at that size against the largest size's (protocol
 * share, tree geometry and correction), so that the fitted B is the busbw of the largest
 * size's algorithm whatever the protocol of the others.
 */
static struct spsim_fit_point
fit_point(const struct cal *c, const struct cal_series *s, size_t i)
{
    struct spsim_fit_point p = {s->op, 0, spsim_cal_wire(s, s->size[i]), 0, s->time_s[i]};
    if (s->tier == CAL_NVLINK) {
        p.steps = spsim_ring_steps(s->op, s->ranks);
        return p;
    }
    double lat, peak, unit, unit_last, k, fixed;
    size_terms(c, s, i, c->model.nic_achievable_Bps, &lat, &peak);
    struct spsim_nccl_choice ch = spsim_collective_algo(&c->model, s->op, s->g, (double)s->size[i]);
    spsim_collective_latency_parts(&c->model, s->op, s->g, ch.algo, &k, &fixed);
    p.steps = k;
    p.offset_s = lat - c->model.network.base_latency_s - k * c->model.network.hop_latency_s;
    size_terms(c, s, i, 1.0, &lat, &unit);
    size_terms(c, s, s->n - 1, 1.0, &lat, &unit_last);
    p.wire_bytes *= unit_last / unit;
    return p;
}

/* One step count leaves base and hop inseparable: keep the base profile's base latency (NCCL's
 * tuner constant in the shipped profiles) and spread the rest of α over the steps. */
static void
split_latency(const struct spsim_fit_result *f, double steps, double base_kept,
              struct spsim_tier_params *tier)
{
    if (f->hop_fitted) {
        tier->base_latency_s = f->alpha_s;
        tier->hop_latency_s = f->hop_s;
        return;
    }
    double hop = (f->alpha_s - base_kept) / steps;
    tier->base_latency_s = hop >= 0 ? base_kept : f->alpha_s;
    tier->hop_latency_s = hop >= 0 ? hop : 0;
}

static int
fit_tier(struct cal *c, int tier)
{
    size_t n = 0;
    for (size_t i = 0; i < c->ns; i++)
        n += c->s[i].tier == tier ? c->s[i].n : 0;
    if (n == 0)
        return SPSIM_OK;
    struct spsim_fit_point *pts = spsim_calloc(n, sizeof(*pts));
    if (!pts)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < c->ns; i++)
        for (size_t j = 0; c->s[i].tier == tier && j < c->s[i].n; j++)
            pts[k++] = fit_point(c, &c->s[i], j);
    struct spsim_error e = {0};
    int rc = spsim_latbw_fit(pts, n, &c->fit[tier], &e);
    c->fit_steps[tier] = pts[0].steps;
    c->fit_sizes[tier] = n;
    free(pts);
    if (rc != SPSIM_OK)
        return spsim_fail(c->err, rc, "calibrate: %s tier: %s", tier ? "network" : "NVLink",
                          e.message);
    if (c->fit[tier].alpha_zeroed)
        spsim_cal_note(c, "%s tier: the fitted latency came out negative and was fixed at 0%s",
                       tier ? "network" : "NVLink",
                       tier ? ": the NVLink hops the model puts inside each domain already exceed "
                              "the measured small-message time (NCCL runs small multi-node "
                              "messages as a tree), so small sizes are predicted slow"
                            : "");
    if (tier == CAL_NVLINK)
        split_latency(&c->fit[tier], c->fit_steps[tier], c->base->nvlink.base_latency_s,
                      &c->model.nvlink);
    else
        split_latency(&c->fit[tier], c->fit_steps[tier], c->base->network.base_latency_s,
                      &c->model.network);
    return SPSIM_OK;
}

/* ---- the peak busbw each tier must offer --------------------------------------------------- */

/* The busbw a series needs at its sizes once the calibrated α is taken out, over the sizes
 * where bandwidth takes at least half the time (below that, the remainder is noise); never
 * less than the fitted B. A peak below it would need eff > 1, which the loader clamps. */
static double
series_need_Bps(const struct cal *c, struct cal_series *s)
{
    s->latency_s = spsim_collective_latency_s(&c->model, s->op, s->g);
    double need = c->fit[s->tier].busbw_Bps[s->op];
    for (size_t i = 0; i < s->n; i++) {
        double bw_time = s->time_s[i] - s->latency_s;
        if (bw_time >= 0.5 * s->time_s[i])
            need = spsim_max_d(need, spsim_cal_wire(s, s->size[i]) / bw_time);
    }
    return need;
}

/* The per-NIC rate a network series needs: at every size where bandwidth takes at least half
 * the time, its busbw net of the α, against the busbw one B/s per NIC gives that size's
 * algorithm; never less than the fitted B on the largest size's algorithm. */
static double
series_nic_need_Bps(const struct cal *c, struct cal_series *s)
{
    double lat, unit;
    size_terms(c, s, s->n - 1, 1.0, &lat, &unit);
    double need = c->fit[CAL_NETWORK].busbw_Bps[s->op] / unit;
    s->latency_s = lat;
    for (size_t i = 0; i < s->n; i++) {
        size_terms(c, s, i, 1.0, &lat, &unit);
        double bw_time = s->time_s[i] - lat;
        if (bw_time >= 0.5 * s->time_s[i])
            need = spsim_max_d(need, spsim_cal_wire(s, s->size[i]) / bw_time / unit);
    }
    return need;
}

static int
set_peaks(struct cal *c, int tier)
{
    for (size_t i = 0; i < c->ns; i++) {
        struct cal_series *s = &c->s[i];
        if (s->tier != tier)
            continue;
        if (s->tier == CAL_NETWORK) {
            c->nic_Bps = spsim_max_d(c->nic_Bps, series_nic_need_Bps(c, s));
            continue;
        }
        double need = series_need_Bps(c, s);
        if (s->op == SPSIM_COLL_ALL_REDUCE)
            c->ar_peak_Bps = spsim_max_d(c->ar_peak_Bps, need);
        else if (need > c->ring_peak_Bps) {
            c->ring_peak_Bps = need;
            c->ring_peak_op = s->op;
        }
    }
    if (tier == CAL_NVLINK && c->ring_peak_Bps > c->base->nvlink_line_Bps) {
        /* The loader holds ring busbw to the NVLink line rate. */
        spsim_cal_note(c,
                       "ring busbw %.1f GB/s exceeds the base's NVLink line rate; capped at %.1f",
                       c->ring_peak_Bps / 1e9, c->base->nvlink_line_Bps / 1e9);
        c->ring_peak_Bps = c->base->nvlink_line_Bps;
        c->ring_capped = true;
    }
    if (tier == CAL_NETWORK && c->nic_Bps > c->base->nic_line_Bps)
        return spsim_fail(
            c->err, SPSIM_EINVAL,
            "calibrate: the multi-node samples need %.2f GB/s per NIC from the base's "
            "%u NICs per node, above their line rate (%.2f GB/s): choose a base "
            "profile with more or faster NICs",
            c->nic_Bps / 1e9, c->base->nics_per_node, c->base->nic_line_Bps / 1e9);
    return SPSIM_OK;
}

/* The peak busbw the written profile gives a series' group. */
static double
series_peak_Bps(const struct cal *c, const struct cal_series *s)
{
    if (s->tier == CAL_NETWORK) {
        struct spsim_hardware unit = c->model;
        unit.nic_achievable_Bps = c->nic_Bps;
        return spsim_collective_nic_bw(&unit, s->op, s->g, 1, 1);
    }
    if (s->op == SPSIM_COLL_ALL_REDUCE && c->ar_peak_Bps > 0)
        return c->ar_peak_Bps;
    return c->ring_peak_Bps > 0 ? c->ring_peak_Bps : c->base->nvlink.busbw_Bps[s->op];
}

/* The largest α with which every size from 1 MiB up leaves time for its bytes at the peak,
 * time − α >= wire/peak, so that eff(size) <= 1 there; INFINITY when the series has none. */
static double
series_latency_bound(const struct cal *c, const struct cal_series *s)
{
    double peak = series_peak_Bps(c, s), bound = HUGE_VAL;
    for (size_t i = 0; i < s->n; i++)
        if (s->size[i] >= SPSIM_CAL_REPRO_MIN_BYTES)
            bound = spsim_min_d(bound, s->time_s[i] - spsim_cal_wire(s, s->size[i]) / peak);
    return bound;
}

/*
 * NCCL changes protocol with size (LL, LL128, Simple), so a mid-size message may run faster than
 * the fitted α plus its bytes at the peak. Lower the tier's hop (then its base) just enough for
 * every series; the NVLink hops inside a hierarchical ring stay as they are.
 */
/* Lower the network base and hop so that every size from 1 MiB up leaves time for its bytes
 * at the written peak: α = base + k·hop + fixed, with k and fixed those of the algorithm NCCL
 * runs at that size (spsim_collective_latency_parts). Returns whether anything was lowered. */
static bool
cap_network_latency(struct cal *c, struct spsim_tier_params *tp)
{
    double hop = tp->hop_latency_s, base = tp->base_latency_s;
    bool lowered = false;
    for (size_t i = 0; i < c->ns; i++) {
        struct cal_series *s = &c->s[i];
        for (size_t j = 0; s->tier == CAL_NETWORK && j < s->n; j++) {
            if (s->size[j] < SPSIM_CAL_REPRO_MIN_BYTES)
                continue;
            double lat, peak, k, fixed;
            size_terms(c, s, j, c->nic_Bps, &lat, &peak);
            struct spsim_nccl_choice ch =
                spsim_collective_algo(&c->model, s->op, s->g, (double)s->size[j]);
            spsim_collective_latency_parts(&c->model, s->op, s->g, ch.algo, &k, &fixed);
            /* What the size's α holds beyond base + k·hop: the NVLink hops, the protocol's
             * latency and NVLSTree's fill (spsim_collective_terms), none of them fitted. */
            fixed = lat - tp->base_latency_s - k * tp->hop_latency_s;
            double bound =
                s->time_s[j] - spsim_cal_wire(s, s->size[j]) / (SPSIM_NETWORK_EFF_MAX * peak);
            if (!(base + k * hop + fixed > bound))
                continue;
            if (!lowered)
                c->fitted_latency_s[CAL_NETWORK] = lat;
            lowered = true;
            hop = k > 0 ? spsim_min_d(hop, (bound - fixed - base) / k) : hop;
            if (hop < 0 || (k == 0 && base + fixed > bound)) {
                base = spsim_max_d(0, spsim_min_d(base, bound - fixed));
                hop = 0;
            }
        }
    }
    tp->hop_latency_s = hop;
    tp->base_latency_s = base;
    return lowered;
}

static void
cap_latency(struct cal *c, int tier)
{
    struct spsim_tier_params *tp = tier == CAL_NVLINK ? &c->model.nvlink : &c->model.network;
    double hop = tp->hop_latency_s, base = tp->base_latency_s;
    bool lowered = false;
    for (size_t i = 0; i < c->ns && tier == CAL_NVLINK; i++) {
        struct cal_series *s = &c->s[i];
        double bound = series_latency_bound(c, s);
        if (s->tier != tier || !(s->latency_s > bound))
            continue;
        uint32_t steps = spsim_ring_steps(s->op, s->ranks), fixed_steps = 0;
        if (tier == CAL_NETWORK) {
            fixed_steps = steps - spsim_inter_steps(s->op, s->g);
            steps -= fixed_steps;
        }
        double fixed = fixed_steps * c->model.nvlink.hop_latency_s;
        if (!lowered)
            c->fitted_latency_s[tier] = s->latency_s;
        lowered = true;
        hop = spsim_min_d(hop, (bound - fixed - base) / steps);
        if (hop < 0) {
            base = spsim_max_d(0, spsim_min_d(base, bound - fixed));
            hop = 0;
        }
    }
    if (tier == CAL_NETWORK) {
        lowered = cap_network_latency(c, tp);
        hop = tp->hop_latency_s;
        base = tp->base_latency_s;
    }
    if (!lowered)
        return;
    tp->hop_latency_s = hop;
    tp->base_latency_s = base;
    for (size_t i = 0; i < c->ns; i++)
        c->s[i].latency_s = spsim_collective_latency_s(&c->model, c->s[i].op, c->s[i].g);
    spsim_cal_note(c,
                   "%s tier: latency lowered from the fitted %.2f us so that every size from "
                   "1 MiB up fits under latency + bytes at the peak busbw",
                   tier == CAL_NVLINK ? "NVLink" : "network", c->fitted_latency_s[tier] * 1e6);
}

/* Does series j come before series i as the source of their tier and collective's curve:
 * more ranks, then more nodes, then given first? Series of one size cannot make a curve. */
static bool
better_curve(const struct cal_series *j, size_t jn, const struct cal_series *i, size_t in)
{
    if (j->tier != i->tier || j->op != i->op || j->n < 2)
        return false;
    if (j->ranks != i->ranks)
        return j->ranks > i->ranks;
    if (j->nodes != i->nodes)
        return j->nodes > i->nodes;
    return jn < in;
}

/* Each tier and collective gets one curve; the other series count in the fit only. */
static void
choose_curves(struct cal *c)
{
    for (size_t i = 0; i < c->ns; i++) {
        struct cal_series *s = &c->s[i];
        s->curve = s->n >= 2;
        for (size_t j = 0; j < c->ns && s->curve; j++)
            if (j != i && better_curve(&c->s[j], j, s, i))
                s->curve = false;
        if (!s->curve)
            spsim_cal_note(c, "%s: %s on %u ranks, %u node(s): in the fit only (%s)",
                           input_name(c, s->input), spsim_coll_op_name(s->op), s->ranks, s->nodes,
                           s->n < 2 ? "one size is no curve"
                                    : "the curve comes from a larger or earlier measurement");
    }
}

/* ---- checking the written profile against the measurement ---------------------------------- */

static int
compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median and maximum of v[0..n) (reordered); -1 for both when n is 0. */
static void
median_max(double *v, size_t n, double *median, double *max)
{
    *median = *max = -1;
    if (n == 0)
        return;
    qsort(v, n, sizeof(*v), compare_double);
    *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    *max = v[n - 1];
}

static int
row_of(const struct cal *c, const struct spsim_hardware *hw, const struct cal_series *s, size_t i,
       struct spsim_calibration_row *r)
{
    struct spsim_fit_point p = fit_point(c, s, i);
    const struct spsim_tier_params *tier = s->tier == CAL_NVLINK ? &hw->nvlink : &hw->network;
    struct spsim_collective_prediction pred;
    struct spsim_error e = {0};
    *r = (struct spsim_calibration_row){.input = s->input,
                                        .op = s->op,
                                        .ranks = s->ranks,
                                        .nodes = s->nodes,
                                        .size_bytes = s->size[i],
                                        .measured_s = s->time_s[i],
                                        .in_curve = s->curve};
    r->algbw_GBps = (double)s->size[i] / s->time_s[i] / 1e9;
    r->busbw_GBps =
        s->op == SPSIM_COLL_SEND_RECV ? r->algbw_GBps : p.wire_bytes / s->time_s[i] / 1e9;
    r->fit_s = spsim_latbw_eval(&c->fit[s->tier], &p);
    int rc = spsim_curve_eval(tier->curve[s->op], (double)s->size[i], &r->eff);
    if (rc == SPSIM_OK)
        rc = spsim_collective_predict(hw, s->op, s->ranks, s->nodes, s->size[i], &pred, &e);
    if (rc != SPSIM_OK)
        return spsim_fail(c->err, rc,
                          "calibrate: predicting %s of %llu B with the calibrated "
                          "profile: %s",
                          spsim_coll_op_name(s->op), (unsigned long long)s->size[i], e.message);
    r->tier = pred.tier;
    r->predicted_s = pred.time_s;
    return SPSIM_OK;
}

/* One row per measured size; each series' fit and reproduction errors. */
static int
make_rows(struct cal *c, const struct spsim_hardware *hw)
{
    size_t total = 0;
    for (size_t i = 0; i < c->ns; i++)
        total += c->s[i].n;
    struct spsim_calibration *out = c->out;
    out->rows = spsim_calloc(total + 1, sizeof(*out->rows)); /* + 1: no sizes is no failure */
    double *fit = spsim_calloc(total + 1, sizeof(double)),
           *repro = spsim_calloc(total + 1, sizeof(double));
    int rc =
        out->rows && fit && repro ? SPSIM_OK : spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < c->ns && rc == SPSIM_OK; i++) {
        struct cal_series *s = &c->s[i];
        size_t nrepro = 0;
        for (size_t j = 0; j < s->n && rc == SPSIM_OK; j++) {
            struct spsim_calibration_row *r = &out->rows[out->nrows];
            if ((rc = row_of(c, hw, s, j, r)) != SPSIM_OK)
                break;
            out->nrows++;
            fit[j] = fabs(r->fit_s - r->measured_s) / r->measured_s;
            if (r->size_bytes >= SPSIM_CAL_REPRO_MIN_BYTES)
                repro[nrepro++] = fabs(r->predicted_s - r->measured_s) / r->measured_s;
        }
        median_max(fit, s->n, &s->fit_median, &s->fit_max);
        median_max(repro, nrepro, &s->repro_median, &s->repro_max);
    }
    free(fit);
    free(repro);
    return rc;
}

/* The per-tier summary: latencies as written, fitted B, the peak the profile gives each
 * curve's group, and the fit's errors per collective over every series of the tier. */
static int
summarise_tiers(struct cal *c, const struct spsim_hardware *hw)
{
    double *err = spsim_calloc(c->out->nrows + 1, sizeof(double));
    if (!err)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    for (int t = 0; t < 2; t++) {
        struct spsim_calibration_tier *ct = &c->out->tier[t];
        const struct spsim_tier_params *tp = t == CAL_NVLINK ? &hw->nvlink : &hw->network;
        ct->measured = c->measured[t];
        ct->hop_fitted = c->fit[t].hop_fitted;
        ct->base_latency_us = tp->base_latency_s * 1e6;
        ct->hop_latency_us = tp->hop_latency_s * 1e6;
        for (int op = 0; op < SPSIM_COLL_COUNT; op++) {
            size_t n = 0;
            for (size_t i = 0; i < c->out->nrows; i++) {
                const struct spsim_calibration_row *r = &c->out->rows[i];
                if ((int)r->op == op && (r->tier == SPSIM_TIER_NVLINK) == (t == CAL_NVLINK))
                    err[n++] = fabs(r->fit_s - r->measured_s) / r->measured_s;
            }
            median_max(err, n, &ct->fit_median_rel_err[op], &ct->fit_max_rel_err[op]);
            ct->fit_busbw_GBps[op] = c->fit[t].busbw_Bps[op] / 1e9;
        }
        for (size_t i = 0; i < c->ns; i++) {
            const struct cal_series *s = &c->s[i];
            if (s->tier == t && s->curve)
                ct->peak_busbw_GBps[s->op] =
                    (t == CAL_NVLINK ? hw->nvlink.busbw_Bps[s->op]
                                     : spsim_collective_nic_bw(hw, s->op, s->g, 1, 1)) /
                    1e9;
        }
    }
    free(err);
    return SPSIM_OK;
}

/* Print and load the profile being written; the loader is the judge of what was built. */
static int
load_written(struct cal *c, struct spsim_hardware **hw)
{
    char *text = NULL;
    size_t len = 0;
    int rc = spsim_cal_json_print(c, &text, &len);
    if (rc != SPSIM_OK)
        return rc;
    struct spsim_error e = {0};
    rc = spsim_hardware_parse(text, len, c->o->name, hw, &e);
    if (rc != SPSIM_OK) {
        free(text);
        return spsim_fail(c->err, rc, "calibrate: the calibrated profile does not load: %s",
                          e.message);
    }
    free(c->out->profile_json);
    c->out->profile_json = text;
    c->out->profile_len = len;
    return SPSIM_OK;
}

/* ---- the whole calibration ----------------------------------------------------------------- */

static void
set_provenance(struct cal *c)
{
    if (c->o->date) {
        snprintf(c->date, sizeof(c->date), "%s", c->o->date);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        if (!gmtime_r(&now, &tm) || !strftime(c->date, sizeof(c->date), "%Y-%m-%dT%H:%M:%SZ", &tm))
            snprintf(c->date, sizeof(c->date), "unknown date");
    }
    size_t used = (size_t)snprintf(c->prov, sizeof(c->prov), "spsim calibrate %s, %s, from ",
                                   spsim_version(), c->date);
    for (size_t t = 0; t < c->ntables && used < sizeof(c->prov); t++)
        used += (size_t)snprintf(c->prov + used, sizeof(c->prov) - used, "%s%s", t ? ", " : "",
                                 input_name(c, t));
    if (c->ngemms + c->nhbm > 0 && used < sizeof(c->prov))
        used += (size_t)snprintf(c->prov + used, sizeof(c->prov) - used, "%sGEMM and HBM runs",
                                 c->ntables ? " and " : "");
    if (c->o->command_line && used < sizeof(c->prov))
        snprintf(c->prov + used, sizeof(c->prov) - used, "; command: %s", c->o->command_line);
}

static int
run(struct cal *c, const char *base_text, size_t len)
{
    struct spsim_hardware *hw = NULL;
    int rc;
    set_provenance(c);
    if ((rc = collect_series(c)) || (rc = settle_layout(c)))
        return rc;
    /* The NVLink tier first: a hierarchical ring's NVLink hops are its. */
    for (int tier = CAL_NVLINK; tier <= CAL_NETWORK; tier++) {
        if ((rc = fit_tier(c, tier)) || (rc = set_peaks(c, tier)))
            return rc;
        cap_latency(c, tier);
    }
    choose_curves(c);
    if ((rc = spsim_cal_json_build(c, base_text, len)) || (rc = load_written(c, &hw)) ||
        (rc = make_rows(c, hw)) || (rc = summarise_tiers(c, hw)) ||
        (rc = spsim_cal_json_errors(c))) {
        spsim_hardware_destroy(hw);
        return rc;
    }
    spsim_hardware_destroy(hw);
    hw = NULL;
    rc = load_written(c, &hw); /* the provenance changed: print and check again */
    spsim_hardware_destroy(hw);
    return rc;
}

int
spsim_calibrate_profile(const struct spsim_calibrate_options *o,
                        const struct spsim_bw_table *const *tables, size_t ntables,
                        const struct spsim_gemm_sample *gemms, size_t ngemms,
                        const struct spsim_hbm_sample *hbm, size_t nhbm,
                        struct spsim_calibration *out, struct spsim_error *err)
{
    if (!o || !o->base_path || !o->name || !o->name[0] || !out || (ntables && !tables) ||
        (ngemms && !gemms) || (nhbm && !hbm))
        return spsim_fail(err, SPSIM_EINVAL, "spsim_calibrate_profile: invalid argument");
    for (size_t t = 0; t < ntables; t++)
        if (!tables[t])
            return spsim_fail(err, SPSIM_EINVAL, "spsim_calibrate_profile: table %zu is NULL", t);
    memset(out, 0, sizeof(*out));
    struct cal c = {.o = o,
                    .err = err,
                    .tables = tables,
                    .ntables = ntables,
                    .gemms = gemms,
                    .ngemms = ngemms,
                    .hbm = hbm,
                    .nhbm = nhbm,
                    .out = out};
    char *text = NULL;
    size_t len = 0;
    int rc = spsim_read_file(o->base_path, &text, &len, err);
    if (rc == SPSIM_OK)
        rc = spsim_hardware_parse(text, len, o->base_path, &c.base, err);
    if (rc == SPSIM_OK)
        rc = run(&c, text, len);
    for (size_t i = 0; i < c.ns; i++) {
        free(c.s[i].size);
        free(c.s[i].time_s);
    }
    free(c.s);
    cJSON_Delete(c.root);
    spsim_hardware_destroy(c.base);
    free(text);
    if (rc != SPSIM_OK)
        spsim_calibration_free(out);
    return rc;
}

void
spsim_calibration_free(struct spsim_calibration *c)
{
    if (!c)
        return;
    free(c->rows);
    free(c->profile_json);
    memset(c, 0, sizeof(*c));
}

int
spsim_calibration_write(const struct spsim_calibration *c, const char *path,
                        struct spsim_error *err)
{
    if (!c || !c->profile_json || !path)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_calibration_write: nothing to write");
    return spsim_file_write_atomic(path, c->profile_json, c->profile_len, err);
}

/* ---- the default base profile -------------------------------------------------------------- */

/* CUDA device names of GPUs whose shipped profile names the GPU otherwise in gpu.model. */
static const struct {
    const char *cuda_name, *profile;
} gpu_aliases[] = {
    /* H100 SXM5 80GB as a DGX H100 reports it: the rank lines of NVIDIA dgxc-benchmarking's
     * DGX H100 sample (tests/data/nccl-tests/h100x8_all_reduce_dgxc_benchmarking.txt). */
    {"NVIDIA H100 80GB HBM3", "dgx-h100"},
};

struct base_search {
    const char *gpu;
    char *out;
    size_t cap;
    bool found;
};

static int
match_profile(void *cookie, const char *name, const char *path)
{
    struct base_search *b = cookie;
    struct spsim_hardware *hw = NULL;
    if (spsim_hardware_load(path, &hw, NULL) != SPSIM_OK)
        return 0;
    /* A sourced profile, not one fitted to runs: a calibration starts from the sources. */
    b->found = !hw->fitted && strcmp(hw->gpu_model, b->gpu) == 0 && strlen(name) < b->cap;
    if (b->found)
        snprintf(b->out, b->cap, "%s", name);
    spsim_hardware_destroy(hw);
    return b->found;
}

int
spsim_calibrate_base_for_gpu(const char *gpu_name, char *out, size_t cap, struct spsim_error *err)
{
    if (!gpu_name || !out || cap == 0)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_calibrate_base_for_gpu: invalid argument");
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(gpu_aliases); i++) {
        if (strcmp(gpu_aliases[i].cuda_name, gpu_name) == 0) {
            if (strlen(gpu_aliases[i].profile) >= cap)
                return spsim_fail(err, SPSIM_EINVAL, "spsim_calibrate_base_for_gpu: no room");
            snprintf(out, cap, "%s", gpu_aliases[i].profile);
            return SPSIM_OK;
        }
    }
    struct base_search b = {gpu_name, out, cap, false};
    int rc = spsim_profile_list(SPSIM_PROFILE_HARDWARE, match_profile, &b, err);
    if (rc != SPSIM_OK || b.found)
        return rc;
    return spsim_fail(err, SPSIM_EFIELD,
                      "no shipped hardware profile is for GPU %s; give the base profile (--base)",
                      SPSIM_Q(gpu_name));
}
