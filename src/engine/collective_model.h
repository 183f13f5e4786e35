/* Time of one collective on a link tier, and where a group of GPUs sits. */
#ifndef SPSIM_COLLECTIVE_MODEL_H
#define SPSIM_COLLECTIVE_MODEL_H

#include "profiles/profiles.h"
#include "nccl_tuning.h"

/** Evaluate eff(size) of a curve (1 when curve is NULL): linear in log(size), clamped. */
int spsim_curve_eval(const struct spsim_curve *curve, double size_bytes, double *eff);

/** Per-rank ring traffic as a fraction of the nccl-tests size S:
 * AR 2(n−1)/n, AG and RS (n−1)/n, send/recv 1 (nccl-tests PERFORMANCE.md). */
double spsim_wire_fraction(enum spsim_coll_op op, uint32_t n);

/** Peak NVLink busbw of `op` among `n` GPUs of one domain: the NVLS AllReduce figure where
 * NCCL uses NVLink SHARP (n >= nvls_min_gpus), the ring figure otherwise. */
double spsim_nvlink_peak_Bps(const struct spsim_hardware *hw, enum spsim_coll_op op, uint32_t n);

/** Ring steps: AR 2(n−1), AG/RS n−1, send/recv 1 (NCCL tuning.cc nsteps). */
uint32_t spsim_ring_steps(enum spsim_coll_op op, uint32_t n);

/** base + steps·hop for a ring of n ranks inside one tier. */
double spsim_ring_latency_s(const struct spsim_tier_params *tier, enum spsim_coll_op op,
                            uint32_t n);

/**
 * The local-only last primitive of every ring loop inside one domain, all channels at once:
 * (size/n) · HBM bytes per payload byte / hbm_Bps (AR, AG: 2; RS: 3; others 0; hbm_Bps <= 0:
 * 0). See collective_model.c for where it comes from in NCCL 2.29.2.
 */
double spsim_ring_tail_s(enum spsim_coll_op op, uint32_t n, double size_bytes, double hbm_Bps);

/**
 * Where a communication group sits: `size` ranks, `per_domain` of them in each NVLink domain
 * (so size / per_domain domains), on a machine whose nodes have `gpus_per_node` GPUs.
 */
struct spsim_group {
    uint32_t size;
    uint32_t per_domain;
};

/** The tier a group's collectives use. */
enum spsim_tier spsim_group_tier(const struct spsim_hardware *hw, struct spsim_group g);

/**
 * Place a group of `size` ranks whose members are `stride` ranks apart (TP: stride 1; DP:
 * stride t; PP neighbours: stride t·d), with ranks filled domain by domain.
 */
struct spsim_group spsim_group_place(const struct spsim_hardware *hw, uint32_t size,
                                     uint64_t stride);

/**
 * Place `gpus` ranks on `*nodes` nodes (0: as few as the hardware allows; receives the count
 * used) the way `spsim collective` does: nodes fill NVLink domains in order.
 * @param what  names the node count in messages ("--nodes")
 * @return SPSIM_OK or SPSIM_EINVAL (err says why the ranks do not spread evenly)
 */
int spsim_collective_layout(const struct spsim_hardware *hw, uint32_t gpus, uint32_t *nodes,
                            const char *what, struct spsim_group *g, struct spsim_error *err);

/** Ring steps of a group spanning domains that cross a domain boundary. */
uint32_t spsim_inter_steps(enum spsim_coll_op op, struct spsim_group g);

/** The α of a collective on a placed group: NVLink ring latency inside a domain, NCCL's
 * hierarchical ring latency (network base, NVLink hops inside, network hops across) otherwise. */
double spsim_collective_latency_s(const struct spsim_hardware *hw, enum spsim_coll_op op,
                                  struct spsim_group g);

/** The NIC-bound busbw of a group spanning domains, at network efficiency `eff_net`. */
double spsim_collective_nic_bw(const struct spsim_hardware *hw, enum spsim_coll_op op,
                               struct spsim_group g, double eff_net, double nic_share);

/** Prediction of one collective. */
struct spsim_coll_time {
    enum spsim_tier tier;
    double time_s;
    double latency_s;
    double bandwidth_Bps; /* effective per-rank wire bandwidth (busbw) at this size */
    double wire_bytes;    /* per rank */
    double nvlink_bytes;  /* per rank, on the NVLink port */
    double network_bytes; /* per rank (its share of the node's NIC traffic) */
    /* The algorithm timed and NCCL's protocol (nccl_tuning.h); SPSIM_NCCL_ALGO_COUNT for
     * point-to-point transfers (send/recv, all-to-all), which NCCL's tuner does not choose.
     * Inside one domain the ring's protocol does not change the time and is not chosen here
     * (SPSIM_NCCL_PROTO_COUNT; spsim_collective_algo gives it). */
    enum spsim_nccl_algo algo;
    enum spsim_nccl_proto proto;
    /* Part of time_s: the ring loops' local-only tails beyond those the bandwidth figure holds
     * (spsim_ring_tail_extra_s; Ring inside one domain only, else 0). */
    double tail_s;
};

/**
 * Ring (hierarchical across domains) model:
 *   time = base + (steps − inter)·hop_nvlink + inter·hop_net + wire / busbw_eff(S)
 * where busbw_eff is the NVLink peak × eff_nvlink(S) inside a domain, and across domains the
 * smaller of that and the NIC bandwidth the group's GPUs in one domain own × eff_net(S)
 * (a ring enters and leaves each domain once per channel, so a domain's NIC traffic equals one
 * rank's ring traffic). `size_bytes` uses nccl-tests' convention (AG/RS: the whole buffer).
 * @param nic_share  fraction of each NIC's bandwidth this transfer gets (1 when alone)
 */
int spsim_collective_time(const struct spsim_hardware *hw, enum spsim_coll_op op,
                          struct spsim_group g, double size_bytes, double nic_share,
                          struct spsim_coll_time *out);

/**
 * The ring tails a ring `op` of `size_bytes` on `g` inside one domain pays beyond those its
 * bandwidth figure (the profile's ring busbw, or a ring curve's measurement) already holds:
 * spsim_ring_tail_s(op) less that of the collective the figure was measured on, at the size of
 * it that moves the same bytes per rank; all of it for a figure from link specs
 * (ring_measured_on "link"); 0 where the profile does not say. May be negative (AllGather on a
 * ReduceScatter-measured figure).
 */
double spsim_ring_tail_extra_s(const struct spsim_hardware *hw, enum spsim_coll_op op,
                               struct spsim_group g, double size_bytes);

/**
 * The algorithm and protocol of `op` on `g` at `size_bytes`: across NVLink domains NCCL's own
 * choice (spsim_nccl_choose on the communicator spsim_nccl_comm_from_hw builds, nnodes = the
 * group's domains); inside one domain NVLS AllReduce where the profile says NCCL uses it
 * (nvls_min_gpus), else Ring, with the protocol NCCL's tuner gives the ring at that size.
 */
struct spsim_nccl_choice spsim_collective_algo(const struct spsim_hardware *hw,
                                               enum spsim_coll_op op, struct spsim_group g,
                                               double size_bytes);

/** The α of `op` on `g` under algorithm `a`: the tier's base and hops laid out as NCCL's
 * latency model lays them for that algorithm (tuning.cc:383-440). */
double spsim_collective_algo_latency_s(const struct spsim_hardware *hw, enum spsim_coll_op op,
                                       struct spsim_group g, enum spsim_nccl_algo a);

/** The same α as tier.base + k·tier.hop + fixed (network tier across domains, NVLink inside),
 * for the calibration, which fits base and hop. */
void spsim_collective_latency_parts(const struct spsim_hardware *hw, enum spsim_coll_op op,
                                    struct spsim_group g, enum spsim_nccl_algo a, double *k,
                                    double *fixed_s);

/** The α and the peak busbw (eff = 1, the whole NIC) the model gives `op` on `g` at a size:
 * the NVLink peak inside a domain, across domains the NIC side of the algorithm at that size
 * (a network curve's efficiency is taken against it). */
void spsim_collective_terms(const struct spsim_hardware *hw, enum spsim_coll_op op,
                            struct spsim_group g, double size_bytes, double *latency_s,
                            double *peak_Bps);

/* Max-min fair sharing of links between concurrent transfers. */

#define SPSIM_FLOW_MAX_RESOURCES 4

struct spsim_flow {
    double bytes; /**< to move */
    double
        max_rate; /**< the flow's own ceiling (bytes/s), e.g. its protocol efficiency; 0 = none */
    uint32_t nres;
    uint32_t res[SPSIM_FLOW_MAX_RESOURCES]; /**< indices of the links it crosses */
    double rate;     /**< out: rate while all flows are active (maxmin_rates) */
    double finish_s; /**< out: completion time (maxmin_run) */
};

/** Progressive filling: every flow's max-min fair rate given link capacities (bytes/s). */
int spsim_maxmin_rates(const double *capacity, uint32_t nres, struct spsim_flow *flows,
                       uint32_t nflows);

/** Run all flows from t = 0, re-sharing bandwidth whenever one completes.
 * @param busy_s  optional, nres entries: time each link carried traffic */
int spsim_maxmin_run(const double *capacity, uint32_t nres, struct spsim_flow *flows,
                     uint32_t nflows, double *makespan_s, double *busy_s);

#endif
