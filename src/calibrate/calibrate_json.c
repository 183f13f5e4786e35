/*
 * Writing a calibrated hardware profile: the base profile's JSON with the calibrated numbers
 * replaced (each with a source naming the calibration), the measured curves and tables added,
 * and a `calibration` object of provenance. Every other field, comments included, is kept.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate_json.h"
#include "nccl_log.h"

/* Every cJSON constructor may fail; failures are counted here and turned into SPSIM_ENOMEM. */
struct jb {
    struct cal *c;
    bool oom;
    char src[2048];
};

static cJSON *
check(struct jb *j, cJSON *item)
{
    if (!item)
        j->oom = true;
    return item;
}

static void
put(struct jb *j, cJSON *obj, const char *key, cJSON *item)
{
    if (!check(j, item) || !obj)
        return;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item);
    else
        cJSON_AddItemToObject(obj, key, item);
}

static cJSON *
child(struct jb *j, cJSON *obj, const char *key)
{
    cJSON *item = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (!item && obj) {
        item = check(j, cJSON_CreateObject());
        if (item)
            cJSON_AddItemToObject(obj, key, item);
    }
    return item;
}

/* "calibration: WHAT [spsim calibrate VERSION, DATE, from FILES; command: ...]" */
static const char *source(struct jb *j, const char *fmt, ...) SPSIM_PRINTF(2, 3);

static const char *
source(struct jb *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(j->src, sizeof(j->src), "calibration: ");
    n += vsnprintf(j->src + n, sizeof(j->src) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof(j->src))
        snprintf(j->src + n, sizeof(j->src) - (size_t)n, " [%s]", j->c->prov);
    return j->src;
}

/* {"value": V, "source": S} in place of obj[key]. */
static void
put_sourced(struct jb *j, cJSON *obj, const char *key, double value, const char *src)
{
    cJSON *item = check(j, cJSON_CreateObject());
    if (!item)
        return;
    check(j, cJSON_AddNumberToObject(item, "value", value));
    check(j, cJSON_AddStringToObject(item, "source", src));
    put(j, obj, key, item);
}

/* {"value": "NAME", "source": S} in place of obj[key]. */
static void
put_sourced_name(struct jb *j, cJSON *obj, const char *key, const char *name, const char *src)
{
    put_sourced(j, obj, key, 0, src);
    cJSON *item = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    cJSON *value = check(j, cJSON_CreateString(name));
    if (item && value)
        cJSON_ReplaceItemInObjectCaseSensitive(item, "value", value);
    else
        cJSON_Delete(value);
}

/* nvlink.ring_measured_on for a ring busbw written from a measured `op` (the engine then adds
 * only the ring tails beyond op's, engine/collective_model.c spsim_ring_tail_extra_s); a
 * point-to-point measurement has no ring tail to name, and the field is left out (no tails). */
static void
put_ring_measured_on(struct jb *j, cJSON *nv, enum spsim_coll_op op)
{
    if (op > SPSIM_COLL_REDUCE_SCATTER) {
        cJSON_DeleteItemFromObjectCaseSensitive(nv, "ring_measured_on");
        return;
    }
    put_sourced_name(j, nv, "ring_measured_on", spsim_coll_op_name(op),
                     source(j,
                            "ring_busbw_GBps is this calibration's measured %s peak, which holds "
                            "its ring loops' local-only tails (NCCL all_reduce.h:81, "
                            "all_gather.h:70, reduce_scatter.h:53)",
                            spsim_coll_op_name(op)));
}

/* ---- the tiers ----------------------------------------------------------------------------- */

/* The collectives measured on a tier, e.g. "all_reduce, all_gather". */
static void
tier_ops(const struct cal *c, int tier, char *buf, size_t cap)
{
    bool seen[SPSIM_COLL_COUNT] = {false};
    buf[0] = '\0';
    for (size_t i = 0; i < c->ns; i++) {
        const struct cal_series *s = &c->s[i];
        if (s->tier == tier && !seen[s->op])
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? ", " : "",
                     spsim_coll_op_name(s->op));
        if (s->tier == tier)
            seen[s->op] = true;
    }
}

/* Why a tier's latency differs from its fit, if it does. */
static const char *
latency_suffix(const struct cal *c, int tier, char *buf, size_t cap)
{
    const struct spsim_fit_result *f = &c->fit[tier];
    buf[0] = '\0';
    if (f->alpha_zeroed)
        snprintf(buf, cap, "; the fitted latency came out negative%s and was fixed at 0",
                 tier == CAL_NETWORK ? " (the NVLink hops inside the domains already exceed the "
                                       "small-message time)"
                                     : "");
    if (c->fitted_latency_s[tier] > 0)
        snprintf(buf + strlen(buf), cap - strlen(buf),
                 "; then lowered from %.4g us so that every size from 1 MiB up fits under "
                 "latency + bytes at the peak busbw (NCCL changes protocol with size)",
                 c->fitted_latency_s[tier] * 1e6);
    return buf;
}

static void
put_latencies(struct jb *j, cJSON *tobj, int tier, const struct spsim_tier_params *base,
              const struct spsim_tier_params *cal)
{
    const struct cal *c = j->c;
    const struct spsim_fit_result *f = &c->fit[tier];
    char ops[128], why[512];
    tier_ops(c, tier, ops, sizeof(ops));
    latency_suffix(c, tier, why, sizeof(why));
    const char *steps = tier == CAL_NVLINK ? "ring steps" : "inter-domain ring steps";
    if (f->hop_fitted) {
        put_sourced(j, tobj, "base_latency_us", cal->base_latency_s * 1e6,
                    source(j,
                           "fitted base of time = base + steps·hop + wire/B (GSL weighted least "
                           "squares on relative error) over %zu sizes of %s%s",
                           c->fit_sizes[tier], ops, why));
        put_sourced(j, tobj, "hop_latency_us", cal->hop_latency_s * 1e6,
                    source(j, "fitted hop per one of the %s in the same fit%s%s", steps,
                           f->hop_zeroed ? "; fitted negative, fixed at 0" : "", why));
        return;
    }
    if (cal->base_latency_s != base->base_latency_s)
        put_sourced(j, tobj, "base_latency_us", cal->base_latency_s * 1e6,
                    source(j,
                           "the fitted latency of %s (one step count: base and hop are "
                           "inseparable), %.4g us, is below the base profile's base latency, "
                           "so it is all base and hop is 0%s",
                           ops, f->alpha_s * 1e6, why));
    put_sourced(j, tobj, "hop_latency_us", cal->hop_latency_s * 1e6,
                source(j,
                       "(fitted latency %.4g us - base_latency_us) / %.0f %s; the fit is time = "
                       "latency + wire/B (GSL weighted least squares on relative error) over "
                       "%zu sizes of %s, all with one step count, so base and hop are "
                       "inseparable and the base profile's base latency is kept%s",
                       f->alpha_s * 1e6, c->fit_steps[tier], steps, c->fit_sizes[tier], ops, why));
}

/* {"op", "gpus", ["nodes",] "source", "points": [[size, busbw GB/s], ...]}: the measured busbw
 * recomputed from each size's time, so the loader's eff(size) reproduces that time. */
static cJSON *
curve_object(struct jb *j, const struct cal_series *s)
{
    if (s->n > SPSIM_MAX_CURVE_POINTS)
        return NULL;
    cJSON *o = check(j, cJSON_CreateObject()), *pts = check(j, cJSON_CreateArray());
    if (!o || !pts) {
        cJSON_Delete(o);
        cJSON_Delete(pts);
        return NULL;
    }
    check(j, cJSON_AddStringToObject(o, "op", spsim_coll_op_name(s->op)));
    check(j, cJSON_AddNumberToObject(o, "gpus", s->ranks));
    if (s->tier == CAL_NETWORK)
        check(j, cJSON_AddNumberToObject(o, "nodes", s->nodes));
    const char *src = spsim_bw_table_info(j->c->tables[s->input], "source");
    check(j, cJSON_AddStringToObject(
                 o, "source",
                 source(j,
                        "%s: %s on %u ranks, %u node(s); busbw = wire bytes / measured time "
                        "(nccl-tests conventions, GB = 1e9 B)",
                        src ? src : "measurement", spsim_coll_op_name(s->op), s->ranks, s->nodes)));
    for (size_t i = 0; i < s->n; i++) {
        double row[2] = {(double)s->size[i], spsim_cal_wire(s, s->size[i]) / s->time_s[i] / 1e9};
        cJSON *item = check(j, cJSON_CreateDoubleArray(row, 2));
        if (item)
            cJSON_AddItemToArray(pts, item);
    }
    cJSON_AddItemToObject(o, "points", pts);
    return o;
}

static int
put_curves(struct jb *j, cJSON *tobj, int tier)
{
    for (size_t i = 0; i < j->c->ns; i++) {
        const struct cal_series *s = &j->c->s[i];
        if (s->tier != tier || !s->curve)
            continue;
        if (s->n > SPSIM_MAX_CURVE_POINTS)
            return spsim_fail(j->c->err, SPSIM_EINVAL,
                              "calibrate: %s: %zu sizes of %s; a profile curve holds at most %d",
                              spsim_bw_table_info(j->c->tables[s->input], "source"), s->n,
                              spsim_coll_op_name(s->op), SPSIM_MAX_CURVE_POINTS);
        put(j, child(j, tobj, "busbw_curves"), spsim_coll_op_name(s->op), curve_object(j, s));
    }
    return SPSIM_OK;
}

/* The AllReduce series that gives the NVLink curve when it ran as a ring (no NVLS), else
 * NULL. */
static const struct cal_series *
ring_allreduce(const struct cal *c)
{
    for (size_t i = 0; i < c->ns; i++) {
        const struct cal_series *s = &c->s[i];
        if (s->tier == CAL_NVLINK && s->curve && s->op == SPSIM_COLL_ALL_REDUCE &&
            spsim_collective_algo(c->base, s->op, s->g, (double)s->size[s->n - 1]).algo ==
                SPSIM_NCCL_RING)
            return s;
    }
    return NULL;
}

/* The size of `op` that moves the bytes per rank of the AllReduce's i-th size. */
static double
ar_to_op_size(const struct cal_series *ar, enum spsim_coll_op op, size_t i)
{
    return (double)ar->size[i] * spsim_wire_fraction(ar->op, ar->ranks) /
           spsim_wire_fraction(op, ar->ranks);
}

/*
 * NCCL runs AllReduce, AllGather and ReduceScatter on one ring graph with the same channels
 * and per-channel bandwidth (tuning.cc:288-382: busBw = nChannels·bw for each, then only the
 * algBw conversion differs), so a ring AllReduce measures the ring every collective uses: its
 * peak becomes the ring busbw and its efficiency the curve of an unmeasured AllGather or
 * ReduceScatter (points written so that the loader's eff equals the AllReduce's, against
 * that collective's own ring latency).
 * The AllReduce's efficiency at size S is placed where the other collective moves the same
 * bytes per rank, S·wire_AR/wire_op (2 S for AllGather and ReduceScatter): there both run
 * the same ring steps with the same payload. NCCL 2.29.2 enqueue.cc calcCollChunking: one
 * chunk is stepSize·chunkSteps for all three (ALL{REDUCE,GATHER}_CHUNKSTEPS =
 * REDUCESCATTER_CHUNKSTEPS = NCCL_STEPS/2, collectives.h:18-25), a loop is
 * nChannels·nRanks·chunk of the op's nBytes (= S for each) and takes 2(n−1) steps for
 * AllReduce (ncclPatternRingTwice), n−1 for AllGather/ReduceScatter (ncclPatternRing); so an
 * AllGather of 2 S makes as many steps of the same chunk as an AllReduce of S, and the
 * per-step synchronisation that makes eff(size) < 1 weighs the same. Below one full loop per
 * channel (S < nChannels·n·chunk, 192 MiB on 24 H100 channels) the kernels split the rest
 * differently (all_reduce.h: n chunks of rest/n; all_gather.h: one chunk of the rest), so
 * there the same-bytes placement is the nearest match, not an identity.
 * What the same steps do not carry over is each loop's local-only last primitive
 * (spsim_ring_tail_s): at equal bytes per rank AllGather and ReduceScatter run twice the
 * AllReduce's loops, so twice its tails (and ReduceScatter's reads the input too); the
 * AllReduce's time is taken with its own tail and the other collective's tail put in its
 * place, at the base profile's achievable HBM rate.
 */
static cJSON *
ring_curve_from(struct jb *j, const struct cal_series *ar, enum spsim_coll_op op, double peak)
{
    const struct cal *c = j->c;
    double hbm = c->base->hbm_achievable_Bps > 0 ? c->base->hbm_achievable_Bps : c->base->hbm_Bps;
    cJSON *o = check(j, cJSON_CreateObject()), *pts = check(j, cJSON_CreateArray());
    if (!o || !pts) {
        cJSON_Delete(o);
        cJSON_Delete(pts);
        return NULL;
    }
    check(j, cJSON_AddStringToObject(o, "op", spsim_coll_op_name(op)));
    check(j, cJSON_AddNumberToObject(o, "gpus", ar->ranks));
    check(j, cJSON_AddStringToObject(
                 o, "source",
                 source(j,
                        "derived: the ring all_reduce's efficiency on %u ranks at the size "
                        "that moves the same bytes per rank (NCCL runs both on one ring "
                        "graph with the same chunk, tuning.cc:288-382, enqueue.cc "
                        "calcCollChunking), with %s's own ring latency and its loops' "
                        "local-only tails in place of the all_reduce's (S/n x %g HBM bytes "
                        "per byte at %.0f GB/s, against S/n x 2: all_reduce.h:81, "
                        "all_gather.h:70, reduce_scatter.h:53)",
                        ar->ranks, spsim_coll_op_name(op), spsim_ring_tail_s(op, 1, 1.0, 1.0),
                        hbm / 1e9)));
    double lat_ar = spsim_ring_latency_s(&c->model.nvlink, ar->op, ar->ranks);
    double lat = spsim_ring_latency_s(&c->model.nvlink, op, ar->ranks);
    for (size_t i = 0; i < ar->n; i++) {
        double tail = spsim_ring_tail_s(op, ar->ranks, ar_to_op_size(ar, op, i), hbm) -
                      spsim_ring_tail_s(ar->op, ar->ranks, (double)ar->size[i], hbm);
        double t = ar->time_s[i];
        double eff =
            t > lat_ar ? spsim_cal_wire(ar, ar->size[i]) / (c->ar_peak_Bps * (t - lat_ar)) : 1.0;
        eff = eff > 1.0 ? 1.0 : (eff < 1e-3 ? 1e-3 : eff);
        double at = ar_to_op_size(ar, op, i);
        double wire = spsim_wire_fraction(op, ar->ranks) * at;
        double row[2] = {at, wire / (lat + wire / (peak * eff) + tail) / 1e9};
        cJSON *item = check(j, cJSON_CreateDoubleArray(row, 2));
        if (item)
            cJSON_AddItemToArray(pts, item);
    }
    cJSON_AddItemToObject(o, "points", pts);
    return o;
}

static void
put_ring_from_allreduce(struct jb *j, cJSON *nv)
{
    const struct cal *c = j->c;
    const struct cal_series *ar = ring_allreduce(c);
    if (!ar || c->ring_peak_Bps > 0 || c->ar_peak_Bps <= 0)
        return;
    double peak = spsim_min_d(c->ar_peak_Bps, c->base->nvlink_line_Bps);
    put_sourced(j, nv, "ring_busbw_GBps", peak / 1e9,
                source(j, "the ring all_reduce's peak (allreduce_busbw_GBps, capped at "
                          "bandwidth_per_direction_GBps): NCCL's AllGather and ReduceScatter run "
                          "on the same ring channels (tuning.cc:288-382)"));
    for (int op = SPSIM_COLL_ALL_GATHER; op <= SPSIM_COLL_REDUCE_SCATTER; op++)
        put(j, child(j, nv, "busbw_curves"), spsim_coll_op_name((enum spsim_coll_op)op),
            ring_curve_from(j, ar, (enum spsim_coll_op)op, peak));
    put_ring_measured_on(j, nv, SPSIM_COLL_ALL_REDUCE);
}

static int
put_nvlink(struct jb *j, cJSON *nv)
{
    const struct cal *c = j->c;
    put_latencies(j, nv, CAL_NVLINK, &c->base->nvlink, &c->model.nvlink);
    const char *why = "the largest busbw the measurement needs once the fitted latency is taken "
                      "out (wire / (time - latency), over sizes where bandwidth takes at least "
                      "half the time), or the fitted B if larger, so that eff(size) <= 1";
    /* The measured AllReduce peak holds for the measured group: the base profile's NVLS
     * threshold no longer applies. */
    if (c->ar_peak_Bps > 0)
        cJSON_DeleteItemFromObjectCaseSensitive(nv, "nvls_min_gpus");
    if (c->ar_peak_Bps > 0)
        put_sourced(j, nv, "allreduce_busbw_GBps", c->ar_peak_Bps / 1e9,
                    source(j, "all_reduce: %s (fitted B %.4g GB/s)", why,
                           c->fit[CAL_NVLINK].busbw_Bps[SPSIM_COLL_ALL_REDUCE] / 1e9));
    if (c->ring_peak_Bps > 0)
        put_sourced(j, nv, "ring_busbw_GBps", c->ring_peak_Bps / 1e9,
                    source(j, "ring collectives other than all_reduce: %s%s", why,
                           c->ring_capped ? "; capped at bandwidth_per_direction_GBps" : ""));
    if (c->ring_peak_Bps > 0)
        put_ring_measured_on(j, nv, c->ring_peak_op);
    put_ring_from_allreduce(j, nv);
    return put_curves(j, nv, CAL_NVLINK);
}

static int
put_network(struct jb *j, cJSON *net)
{
    const struct cal *c = j->c;
    put_latencies(j, net, CAL_NETWORK, &c->base->network, &c->model.network);
    put_sourced(j, net, "nic_achievable_GBps", c->nic_Bps / 1e9,
                source(j,
                       "the per-NIC rate at which the nodes' %u NICs (the base profile's count) "
                       "give each multi-node group the largest busbw its measurement needs once "
                       "the fitted latency is taken out, or the fitted B if larger",
                       c->base->nics_per_node));
    return put_curves(j, net, CAL_NETWORK);
}

static void
put_node(struct jb *j, cJSON *node)
{
    const struct cal *c = j->c;
    const struct cal_series *s = NULL;
    for (size_t i = 0; i < c->ns && !s; i++)
        if (c->s[i].nodes > 1)
            s = &c->s[i];
    put_sourced(j, node, "gpus_per_node", c->multinode_gpn,
                source(j, "ranks per node of %s (%u ranks on %u nodes)",
                       spsim_bw_table_info(c->tables[s->input], "source"), s->ranks, s->nodes));
    put_sourced(j, node, "nvlink_domain_gpus", c->model.nvlink_domain_gpus,
                source(j, "gpus_per_node x the base profile's %u node(s) per NVLink domain",
                       c->base->nvlink_domain_gpus / c->base->gpus_per_node));
}

/* ---- GPU runs ------------------------------------------------------------------------------ */

/* The fastest device-to-device copy, 0 without HBM samples. */
static double
measured_hbm_GBps(const struct cal *c)
{
    double best = 0;
    for (size_t i = 0; i < c->nhbm; i++)
        best = spsim_max_d(best, c->hbm[i].GBps);
    return best;
}

static int
put_gemm_table(struct jb *j, cJSON *gpu)
{
    const struct cal *c = j->c;
    /* The loader turns each point into a main-loop rate with the profile's HBM bandwidth (the
     * measured one, written below); a GEMM whose output fits in L2 can finish faster than its
     * output would take to reach HBM, which a serial-epilogue profile cannot represent: such
     * points are left out and counted. */
    struct spsim_hardware written = *c->base;
    double hbm_GBps = measured_hbm_GBps(c);
    if (hbm_GBps > 0)
        written.hbm_achievable_Bps = hbm_GBps * 1e9;
    cJSON *pts = check(j, cJSON_CreateArray());
    size_t n = 0, too_fast = 0;
    for (size_t i = 0; i < c->ngemms && pts; i++) {
        const struct spsim_gemm_sample *g = &c->gemms[i];
        double rate;
        if (g->dtype != SPSIM_DTYPE_BF16)
            continue;
        if (!(g->tflops > 0) || g->tflops * 1e12 > c->base->peak_flops[SPSIM_DTYPE_BF16] ||
            n >= SPSIM_MAX_CURVE_POINTS) {
            cJSON_Delete(pts);
            return spsim_fail(c->err, SPSIM_EINVAL,
                              "calibrate: GEMM %llux%llux%llu at %g TFLOP/s is not within the base "
                              "profile's bf16 peak (%g), or there are more than %d: wrong base?",
                              (unsigned long long)g->m, (unsigned long long)g->n,
                              (unsigned long long)g->k, g->tflops,
                              c->base->peak_flops[SPSIM_DTYPE_BF16] / 1e12, SPSIM_MAX_CURVE_POINTS);
        }
        if (spsim_gemm_mainloop_rate(&written, g->m, g->n, g->k, g->tflops * 1e12, &rate)) {
            too_fast++;
            continue;
        }
        double row[4] = {(double)g->m, (double)g->n, (double)g->k, g->tflops};
        cJSON *item = check(j, cJSON_CreateDoubleArray(row, 4));
        if (item)
            cJSON_AddItemToArray(pts, item);
        n++;
    }
    if (n == 0) {
        cJSON_Delete(pts);
        return SPSIM_OK;
    }
    cJSON *t = check(j, cJSON_CreateObject());
    check(j, cJSON_AddStringToObject(t, "dtype", "bf16"));
    check(j, cJSON_AddStringToObject(t, "source",
                                     source(j,
                                            "%zu bf16 GEMMs timed on the local GPU (M, N, K, "
                                            "TFLOP/s = 2MNK / time); %zu left out, faster than "
                                            "their output at the HBM rate (gpu.gemm_epilogue)",
                                            n, too_fast)));
    if (t)
        cJSON_AddItemToObject(t, "points", pts);
    else
        cJSON_Delete(pts);
    put(j, gpu, "gemm_table", t);
    return SPSIM_OK;
}

static int
put_hbm(struct jb *j, cJSON *gpu)
{
    const struct cal *c = j->c;
    double best = measured_hbm_GBps(c);
    if (c->nhbm == 0)
        return SPSIM_OK;
    if (!(best > 0) || best * 1e9 > c->base->hbm_Bps)
        return spsim_fail(c->err, SPSIM_EINVAL,
                          "calibrate: measured HBM rate %g GB/s is not within the base profile's "
                          "spec %g GB/s: wrong base?",
                          best, c->base->hbm_Bps / 1e9);
    put_sourced(j, gpu, "hbm_achievable_GBps", best,
                source(j, "fastest of %zu device-to-device copies (2 x bytes / time)", c->nhbm));
    return SPSIM_OK;
}

/* ---- provenance ---------------------------------------------------------------------------- */

static const char *const tier_keys[2] = {"nvlink", "network"};

static cJSON *
inputs_array(struct jb *j)
{
    cJSON *arr = check(j, cJSON_CreateArray());
    for (size_t t = 0; t < j->c->ntables && arr; t++) {
        const struct spsim_bw_table *tab = j->c->tables[t];
        cJSON *o = check(j, cJSON_CreateObject());
        for (size_t k = 0; o && spsim_bw_table_info_key(tab, k); k++) {
            const char *key = spsim_bw_table_info_key(tab, k);
            check(j, cJSON_AddStringToObject(o, key, spsim_bw_table_info(tab, key)));
        }
        check(j, cJSON_AddNumberToObject(o, "samples", (double)spsim_bw_table_size(tab)));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static cJSON *
series_array(struct jb *j)
{
    cJSON *arr = check(j, cJSON_CreateArray());
    for (size_t i = 0; i < j->c->ns && arr; i++) {
        const struct cal_series *s = &j->c->s[i];
        cJSON *o = check(j, cJSON_CreateObject());
        check(j, cJSON_AddNumberToObject(o, "input", (double)s->input));
        check(j, cJSON_AddStringToObject(o, "op", spsim_coll_op_name(s->op)));
        check(j, cJSON_AddNumberToObject(o, "ranks", s->ranks));
        check(j, cJSON_AddNumberToObject(o, "nodes", s->nodes));
        check(j, cJSON_AddStringToObject(o, "tier", tier_keys[s->tier]));
        check(j, cJSON_AddNumberToObject(o, "sizes", (double)s->n));
        check(j, cJSON_AddBoolToObject(o, "curve", s->curve));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static cJSON *
fits_object(struct jb *j)
{
    const struct cal *c = j->c;
    cJSON *fits = check(j, cJSON_CreateObject());
    for (int t = 0; t < 2 && fits; t++) {
        if (!c->measured[t])
            continue;
        const struct spsim_fit_result *f = &c->fit[t];
        const struct spsim_tier_params *tp = t == CAL_NVLINK ? &c->model.nvlink : &c->model.network;
        cJSON *o = child(j, fits, tier_keys[t]), *bw = child(j, o, "fitted_busbw_GBps");
        check(j, cJSON_AddStringToObject(o, "model",
                                         "time = alpha + steps*hop + wire/B, "
                                         "weights 1/time^2 (relative error)"));
        check(j, cJSON_AddNumberToObject(o, "sizes", (double)c->fit_sizes[t]));
        check(j, cJSON_AddNumberToObject(o, "fitted_alpha_us", f->alpha_s * 1e6));
        check(j, cJSON_AddNumberToObject(o, "fitted_hop_us", f->hop_s * 1e6));
        check(j, cJSON_AddBoolToObject(o, "hop_fitted", f->hop_fitted));
        check(j, cJSON_AddBoolToObject(o, "alpha_fixed_at_0", f->alpha_zeroed));
        check(j, cJSON_AddBoolToObject(o, "hop_fixed_at_0", f->hop_zeroed));
        check(j, cJSON_AddNumberToObject(o, "base_latency_us", tp->base_latency_s * 1e6));
        check(j, cJSON_AddNumberToObject(o, "hop_latency_us", tp->hop_latency_s * 1e6));
        for (int op = 0; op < SPSIM_COLL_COUNT && bw; op++)
            if (f->busbw_Bps[op] > 0)
                check(j, cJSON_AddNumberToObject(bw, spsim_coll_op_name((enum spsim_coll_op)op),
                                                 f->busbw_Bps[op] / 1e9));
    }
    return fits;
}

static void
put_calibration(struct jb *j, cJSON *root)
{
    const struct cal *c = j->c;
    cJSON *cal = check(j, cJSON_CreateObject());
    if (!cal)
        return;
    check(j, cJSON_AddStringToObject(cal, "tool", "spsim calibrate"));
    check(j, cJSON_AddStringToObject(cal, "spsim_version", spsim_version()));
    check(j, cJSON_AddStringToObject(cal, "date", c->date));
    if (c->o->command_line)
        check(j, cJSON_AddStringToObject(cal, "command", c->o->command_line));
    check(j, cJSON_AddStringToObject(cal, "base", c->o->base_path));
    cJSON_AddItemToObject(cal, "inputs", inputs_array(j));
    cJSON_AddItemToObject(cal, "series", series_array(j));
    cJSON_AddItemToObject(cal, "fits", fits_object(j));
    if (c->ngemms + c->nhbm > 0) {
        check(j, cJSON_AddNumberToObject(cal, "gemm_samples", (double)c->ngemms));
        check(j, cJSON_AddNumberToObject(cal, "hbm_samples", (double)c->nhbm));
    }
    put(j, root, "calibration", cal);
}

int
spsim_cal_json_build(struct cal *c, const char *text, size_t len)
{
    struct jb j = {.c = c};
    /* The base was accepted by the loader: a parse failure here can only be memory. */
    if (!(c->root = cJSON_ParseWithLength(text, len)))
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    char desc[1024];
    const char *base_desc = c->base->description[0] ? c->base->description : c->base->name;
    snprintf(desc, sizeof(desc), "%s, calibrated by spsim calibrate on %s; base profile '%s': %s",
             c->base->gpu_model, c->date, c->base->name, base_desc);
    put(&j, c->root, "name", cJSON_CreateString(c->o->name));
    put(&j, c->root, "description", cJSON_CreateString(desc));
    cJSON *gpu = child(&j, c->root, "gpu");
    int rc = SPSIM_OK;
    if (c->multinode_gpn)
        put_node(&j, child(&j, c->root, "node"));
    if (c->model.nvls_absent && !c->base->nvls_absent)
        put_sourced(&j, child(&j, c->root, "nvlink"), "nvls", 0,
                    source(&j,
                           "the log's NCCL INFO line '%s': no NVSwitch multicast, so NCCL "
                           "builds no NVLS graph (transport/nvls.cc ncclNvlsInit)",
                           SPSIM_LOG_NO_NVLS));
    if (c->measured[CAL_NVLINK])
        rc = put_nvlink(&j, child(&j, c->root, "nvlink"));
    if (rc == SPSIM_OK && c->measured[CAL_NETWORK])
        rc = put_network(&j, child(&j, c->root, "network"));
    if (rc == SPSIM_OK && !(rc = put_gemm_table(&j, gpu)))
        rc = put_hbm(&j, gpu);
    if (rc == SPSIM_OK)
        put_calibration(&j, c->root);
    if (rc == SPSIM_OK && j.oom)
        rc = spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    return rc;
}

static void
put_rel_errors(struct jb *j, cJSON *o, const char *key, double median, double max)
{
    cJSON *e = child(j, o, key);
    put(j, e, "median", median >= 0 ? cJSON_CreateNumber(median) : cJSON_CreateNull());
    put(j, e, "max", max >= 0 ? cJSON_CreateNumber(max) : cJSON_CreateNull());
}

int
spsim_cal_json_errors(struct cal *c)
{
    struct jb j = {.c = c};
    cJSON *cal = cJSON_GetObjectItemCaseSensitive(c->root, "calibration");
    cJSON *series = cJSON_GetObjectItemCaseSensitive(cal, "series");
    cJSON *fits = cJSON_GetObjectItemCaseSensitive(cal, "fits");
    for (size_t i = 0; i < c->ns; i++) {
        const struct cal_series *s = &c->s[i];
        cJSON *o = cJSON_GetArrayItem(series, (int)i);
        put_rel_errors(&j, o, "fit_rel_err", s->fit_median, s->fit_max);
        put_rel_errors(&j, o, "calibrated_rel_err_from_1MiB", s->repro_median, s->repro_max);
    }
    for (int t = 0; t < 2; t++) {
        cJSON *o = cJSON_GetObjectItemCaseSensitive(fits, tier_keys[t]);
        const struct spsim_calibration_tier *ct = &c->out->tier[t];
        for (int op = 0; o && op < SPSIM_COLL_COUNT; op++)
            if (ct->fit_max_rel_err[op] >= 0 && c->fit[t].busbw_Bps[op] > 0)
                put_rel_errors(&j, child(&j, o, "fit_rel_err"),
                               spsim_coll_op_name((enum spsim_coll_op)op),
                               ct->fit_median_rel_err[op], ct->fit_max_rel_err[op]);
    }
    return j.oom ? spsim_fail(c->err, SPSIM_ENOMEM, "out of memory") : SPSIM_OK;
}

int
spsim_cal_json_print(struct cal *c, char **text, size_t *len)
{
    char *printed = cJSON_Print(c->root);
    size_t n = printed ? strlen(printed) : 0;
    char *copy = printed ? spsim_calloc(n + 2, 1) : NULL;
    if (copy) {
        memcpy(copy, printed, n);
        copy[n++] = '\n';
    }
    cJSON_free(printed);
    if (!copy)
        return spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    *text = copy;
    *len = n;
    return SPSIM_OK;
}
