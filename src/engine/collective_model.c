/*
 * The collective model: ring and hierarchical times per tier, group placement, max-min link
 * sharing.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "collective_model.h"
#include "spsim/collective.h"

int
spsim_curve_eval(const struct spsim_curve *curve, double size_bytes, double *eff)
{
    if (!curve || curve->n == 0) {
        *eff = 1.0;
        return SPSIM_OK;
    }
    double x = log(size_bytes > 1.0 ? size_bytes : 1.0);
    if (curve->n == 1 || x <= curve->log_size[0]) {
        *eff = curve->eff[0];
        return SPSIM_OK;
    }
    if (x >= curve->log_size[curve->n - 1]) {
        *eff = curve->eff[curve->n - 1];
        return SPSIM_OK;
    }
    double y;
    int status = gsl_interp_eval_e(curve->interp, curve->log_size, curve->eff, x, NULL, &y);
    if (status != GSL_SUCCESS)
        return SPSIM_ENUMERIC;
    *eff = y;
    return SPSIM_OK;
}

double
spsim_wire_fraction(enum spsim_coll_op op, uint32_t n)
{
    if (n <= 1)
        return op == SPSIM_COLL_SEND_RECV ? 1.0 : 0.0;
    switch (op) {
    case SPSIM_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case SPSIM_COLL_ALL_GATHER:
    case SPSIM_COLL_REDUCE_SCATTER:
    case SPSIM_COLL_ALL_TO_ALL: /* nccl-tests AlltoAllGetBw: (n−1)/n (nccl-tests.md §1.1) */
        return (double)(n - 1) / n;
    case SPSIM_COLL_SEND_RECV:
    case SPSIM_COLL_COUNT:
        break;
    }
    return 1.0;
}

double
spsim_nvlink_peak_Bps(const struct spsim_hardware *hw, enum spsim_coll_op op, uint32_t n)
{
    if (op == SPSIM_COLL_ALL_REDUCE && hw->nvls_min_gpus && n < hw->nvls_min_gpus)
        return hw->nvlink.busbw_Bps[SPSIM_COLL_ALL_GATHER]; /* ring */
    return hw->nvlink.busbw_Bps[op];
}

uint32_t
spsim_ring_steps(enum spsim_coll_op op, uint32_t n)
{
    if (n <= 1)
        return op == SPSIM_COLL_SEND_RECV ? 1 : 0;
    switch (op) {
    case SPSIM_COLL_ALL_REDUCE:
        return 2 * (n - 1);
    case SPSIM_COLL_ALL_GATHER:
    case SPSIM_COLL_REDUCE_SCATTER:
        return n - 1;
    case SPSIM_COLL_ALL_TO_ALL:
        /* NCCL runs all-to-all as grouped point-to-point sends, one to each of the n − 1 peers
         * (nccl-tests alltoall.cu); counted as n − 1 steps like a ring pass. */
        return n - 1;
    case SPSIM_COLL_SEND_RECV:
    case SPSIM_COLL_COUNT:
        break;
    }
    return 1;
}

double
spsim_ring_latency_s(const struct spsim_tier_params *tier, enum spsim_coll_op op, uint32_t n)
{
    return tier->base_latency_s + spsim_ring_steps(op, n) * tier->hop_latency_s;
}

struct spsim_group
spsim_group_place(const struct spsim_hardware *hw, uint32_t size, uint64_t stride)
{
    struct spsim_group g = {size, 1};
    if (size <= 1)
        return g;
    /* Members at rank r, r+stride, ...; a domain holds `dom` consecutive ranks. */
    uint64_t dom = hw->nvlink_domain_gpus;
    uint64_t span = stride * (size - 1) + 1;
    if (span <= dom && dom % stride == 0 && (stride == 1 ? dom % size == 0 || size <= dom : 1)) {
        uint64_t per = stride >= dom ? 1 : dom / stride;
        g.per_domain = (uint32_t)(per < size ? per : size);
    } else if (stride >= dom) {
        g.per_domain = 1;
    } else {
        uint64_t per = dom / stride;
        g.per_domain = (uint32_t)(per < size ? per : size);
    }
    /* A group that does not fill whole domains evenly straddles one boundary: count it as
     * spanning, conservatively. */
    if (g.per_domain < size && size % g.per_domain != 0)
        g.per_domain = 1;
    return g;
}

enum spsim_tier
spsim_group_tier(const struct spsim_hardware *hw, struct spsim_group g)
{
    (void)hw;
    if (g.size <= 1)
        return SPSIM_TIER_LOCAL;
    if (g.per_domain >= g.size)
        return SPSIM_TIER_NVLINK;
    return g.per_domain == 1 ? SPSIM_TIER_NETWORK : SPSIM_TIER_HIERARCHICAL;
}

uint32_t
spsim_inter_steps(enum spsim_coll_op op, struct spsim_group g)
{
    /* One domain boundary crossed per domain and ring pass (NCCL tuning.cc nInterSteps =
     * 2(nNodes − 1) for AllReduce, nNodes − 1 otherwise; nccl-tests.md §1.5). */
    uint32_t domains = g.size / g.per_domain;
    uint32_t steps = spsim_ring_steps(op, g.size);
    uint32_t inter = op == SPSIM_COLL_ALL_REDUCE ? 2 * (domains - 1) : domains - 1;
    if (op == SPSIM_COLL_SEND_RECV)
        inter = 1;
    return inter > steps ? steps : inter;
}

double
spsim_collective_latency_s(const struct spsim_hardware *hw, enum spsim_coll_op op,
                           struct spsim_group g)
{
    uint32_t n = g.size;
    if (spsim_group_tier(hw, g) == SPSIM_TIER_NVLINK)
        return spsim_ring_latency_s(&hw->nvlink, op, n);
    /* NCCL tuning.cc ring latency: base + (nsteps − nInterSteps)·intraLat + nInterSteps·interLat
     * (nccl-tests.md §1.5). */
    uint32_t steps = spsim_ring_steps(op, n);
    uint32_t inter = spsim_inter_steps(op, g);
    return hw->network.base_latency_s + (steps - inter) * hw->nvlink.hop_latency_s +
           inter * hw->network.hop_latency_s;
}

double
spsim_collective_nic_bw(const struct spsim_hardware *hw, enum spsim_coll_op op,
                        struct spsim_group g, double eff_net, double nic_share)
{
    /* NICs owned by the group's GPUs in one domain (one NIC share per GPU). */
    double nic_per_gpu = hw->nic_achievable_Bps * hw->nics_per_node / hw->gpus_per_node;
    if (op == SPSIM_COLL_ALL_TO_ALL) {
        /* Each rank sends (n − per_domain)/n of S through its own NIC share, against a wire
         * fraction of (n − 1)/n: the NIC-bound rate expressed as busbw. */
        double n = g.size;
        return nic_per_gpu * eff_net * nic_share / hw->oversubscription * (n - 1) /
               (n - g.per_domain);
    }
    return nic_per_gpu * g.per_domain * eff_net * nic_share / hw->oversubscription;
}

int
spsim_collective_time(const struct spsim_hardware *hw, enum spsim_coll_op op, struct spsim_group g,
                      double size_bytes, double nic_share, struct spsim_coll_time *out)
{
    memset(out, 0, sizeof(*out));
    out->tier = spsim_group_tier(hw, g);
    if (out->tier == SPSIM_TIER_LOCAL || size_bytes <= 0)
        return SPSIM_OK;
    uint32_t n = g.size;
    double wire = spsim_wire_fraction(op, n) * size_bytes;
    double eff_nv = 1, eff_net = 1;
    int rc = spsim_curve_eval(hw->nvlink.curve[op], size_bytes, &eff_nv);
    if (rc == SPSIM_OK)
        rc = spsim_curve_eval(hw->network.curve[op], size_bytes, &eff_net);
    if (rc != SPSIM_OK)
        return rc;

    double bw = spsim_nvlink_peak_Bps(hw, op, g.per_domain) * eff_nv;
    double latency = spsim_collective_latency_s(hw, op, g);
    if (out->tier != SPSIM_TIER_NVLINK) {
        double nic_bw = spsim_collective_nic_bw(hw, op, g, eff_net, nic_share);
        /* A ring of one GPU per domain has no NVLink hops: its bandwidth is the NIC's. */
        bw = g.per_domain == 1 ? nic_bw : spsim_min_d(bw, nic_bw);
        out->network_bytes =
            op == SPSIM_COLL_ALL_TO_ALL ? size_bytes * (n - g.per_domain) / n : wire / g.per_domain;
        out->nvlink_bytes = g.per_domain > 1 ? wire : 0;
    } else {
        out->nvlink_bytes = wire;
    }
    if (!(bw > 0) || !isfinite(bw))
        return SPSIM_ENUMERIC;
    out->latency_s = latency;
    out->bandwidth_Bps = bw;
    out->wire_bytes = wire;
    out->time_s = latency + wire / bw;
    return SPSIM_OK;
}

int
spsim_maxmin_rates(const double *capacity, uint32_t nres, struct spsim_flow *flows, uint32_t nflows)
{
    /* Progressive filling (Bertsekas & Gallager, Data Networks §6.5.2): raise all unfrozen flows
     * together; when a link saturates, freeze the flows crossing it. */
    enum { MAXR = 64, MAXF = 64 };
    if (nres > MAXR || nflows > MAXF)
        return SPSIM_EINVAL;
    double left[MAXR];
    bool frozen[MAXF] = {false};
    for (uint32_t r = 0; r < nres; r++)
        left[r] = capacity[r];
    for (uint32_t f = 0; f < nflows; f++) {
        flows[f].rate = 0;
        for (uint32_t k = 0; k < flows[f].nres; k++)
            if (flows[f].res[k] >= nres)
                return SPSIM_EINVAL;
    }
    for (uint32_t active = nflows; active > 0;) {
        double inc = HUGE_VAL;
        uint32_t users[MAXR] = {0};
        for (uint32_t f = 0; f < nflows; f++) {
            if (frozen[f])
                continue;
            for (uint32_t k = 0; k < flows[f].nres; k++)
                users[flows[f].res[k]]++;
            if (flows[f].max_rate > 0)
                inc = spsim_min_d(inc, flows[f].max_rate - flows[f].rate);
        }
        for (uint32_t r = 0; r < nres; r++)
            if (users[r])
                inc = spsim_min_d(inc, left[r] / users[r]);
        if (!isfinite(inc)) {
            /* Unfrozen flows cross no finite link and have no ceiling: unbounded. */
            return SPSIM_EINVAL;
        }
        for (uint32_t f = 0; f < nflows; f++) {
            if (frozen[f])
                continue;
            flows[f].rate += inc;
            for (uint32_t k = 0; k < flows[f].nres; k++)
                left[flows[f].res[k]] -= inc;
        }
        for (uint32_t f = 0; f < nflows; f++) {
            if (frozen[f])
                continue;
            bool saturated =
                flows[f].max_rate > 0 && flows[f].rate >= flows[f].max_rate * (1 - 1e-12);
            for (uint32_t k = 0; k < flows[f].nres && !saturated; k++)
                saturated = left[flows[f].res[k]] <= capacity[flows[f].res[k]] * 1e-12;
            if (saturated) {
                frozen[f] = true;
                active--;
            }
        }
    }
    return SPSIM_OK;
}

int
spsim_maxmin_run(const double *capacity, uint32_t nres, struct spsim_flow *flows, uint32_t nflows,
                 double *makespan_s, double *busy_s)
{
    enum { MAXF = 64 };
    if (nflows > MAXF)
        return SPSIM_EINVAL;
    struct spsim_flow live[MAXF];
    uint32_t index[MAXF];
    double remaining[MAXF];
    uint32_t nlive = 0;
    for (uint32_t f = 0; f < nflows; f++) {
        flows[f].finish_s = 0;
        if (flows[f].bytes > 0) {
            remaining[nlive] = flows[f].bytes;
            index[nlive++] = f;
        }
    }
    if (busy_s)
        for (uint32_t r = 0; r < nres; r++)
            busy_s[r] = 0;
    double now = 0;
    while (nlive > 0) {
        for (uint32_t i = 0; i < nlive; i++) {
            live[i] = flows[index[i]];
            live[i].bytes = remaining[i];
        }
        int rc = spsim_maxmin_rates(capacity, nres, live, nlive);
        if (rc != SPSIM_OK)
            return rc;
        double dt = HUGE_VAL;
        for (uint32_t i = 0; i < nlive; i++)
            if (live[i].rate > 0)
                dt = spsim_min_d(dt, remaining[i] / live[i].rate);
        if (!isfinite(dt))
            return SPSIM_ENUMERIC;
        if (busy_s) {
            bool used[64] = {false};
            for (uint32_t i = 0; i < nlive; i++)
                for (uint32_t k = 0; k < live[i].nres; k++)
                    used[live[i].res[k]] = true;
            for (uint32_t r = 0; r < nres && r < 64; r++)
                if (used[r])
                    busy_s[r] += dt;
        }
        now += dt;
        uint32_t kept = 0;
        for (uint32_t i = 0; i < nlive; i++) {
            remaining[i] -= live[i].rate * dt;
            if (remaining[i] <= flows[index[i]].bytes * 1e-12) {
                flows[index[i]].finish_s = now;
            } else {
                remaining[kept] = remaining[i];
                index[kept++] = index[i];
            }
        }
        nlive = kept;
    }
    if (makespan_s)
        *makespan_s = now;
    return SPSIM_OK;
}

int
spsim_collective_layout(const struct spsim_hardware *hw, uint32_t gpus, uint32_t *nodes,
                        const char *what, struct spsim_group *g, struct spsim_error *err)
{
    if (*nodes == 0)
        *nodes = (gpus + hw->gpus_per_node - 1) / hw->gpus_per_node;
    if (*nodes > gpus || gpus % *nodes != 0)
        return spsim_fail(err, SPSIM_EINVAL, "%s: %u GPUs do not spread evenly over %u nodes", what,
                          gpus, *nodes);
    uint32_t per_node = gpus / *nodes;
    if (per_node > hw->gpus_per_node)
        return spsim_fail(err, SPSIM_EINVAL, "%s: %u GPUs per node, but a '%s' node has %u", what,
                          per_node, hw->name, hw->gpus_per_node);
    /* Nodes fill NVLink domains (one node per domain on a DGX, 18 trays on an NVL72). */
    uint32_t nodes_per_domain = hw->nvlink_domain_gpus / hw->gpus_per_node;
    uint32_t domains = (*nodes + nodes_per_domain - 1) / nodes_per_domain;
    if (gpus % domains != 0)
        return spsim_fail(err, SPSIM_EINVAL,
                          "%s: %u nodes do not fill NVLink domains of %u nodes evenly", what,
                          *nodes, nodes_per_domain);
    *g = (struct spsim_group){gpus, gpus / domains};
    return SPSIM_OK;
}

int
spsim_collective_predict(const struct spsim_hardware *hw, enum spsim_coll_op op, uint32_t gpus,
                         uint32_t nodes, uint64_t size_bytes,
                         struct spsim_collective_prediction *out, struct spsim_error *err)
{
    if (!hw || !out || (unsigned)op >= SPSIM_COLL_COUNT)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_collective_predict: invalid argument");
    if (gpus < 2 || gpus > (1u << 24))
        return spsim_fail(err, SPSIM_EINVAL, "--gpus: a collective needs 2 to %u ranks, got %u",
                          1u << 24, gpus);
    if (size_bytes == 0 || size_bytes > (1ull << 50))
        return spsim_fail(err, SPSIM_EINVAL, "--bytes: must be in [1, 2^50], got %llu",
                          (unsigned long long)size_bytes);
    struct spsim_group g;
    int rc = spsim_collective_layout(hw, gpus, &nodes, "--nodes", &g, err);
    if (rc != SPSIM_OK)
        return rc;
    struct spsim_coll_time t;
    rc = spsim_collective_time(hw, op, g, (double)size_bytes, 1.0, &t);
    if (rc != SPSIM_OK)
        return spsim_fail(err, rc, "numerical failure in the collective model");
    memset(out, 0, sizeof(*out));
    out->op = op;
    out->gpus = gpus;
    out->nodes = nodes;
    out->gpus_per_domain = g.per_domain;
    out->size_bytes = size_bytes;
    out->tier = t.tier;
    out->time_s = t.time_s;
    out->latency_s = t.latency_s;
    out->algbw_GBps = (double)size_bytes / t.time_s / 1e9;
    double factor = op == SPSIM_COLL_SEND_RECV ? 1.0 : spsim_wire_fraction(op, gpus);
    out->busbw_GBps = out->algbw_GBps * factor;
    return SPSIM_OK;
}
