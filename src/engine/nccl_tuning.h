/* NCCL's own cost model and algorithm/protocol choice (NVIDIA/nccl src/graph/tuning.cc at
 * commit 5067397), on a topology graph derived from a hardware profile. */
#ifndef SPSIM_NCCL_TUNING_H
#define SPSIM_NCCL_TUNING_H

#include <stdbool.h>
#include <stdint.h>

#include "profiles/profiles.h"

/* NCCL's orders (src/include/device.h NCCL_ALGO_*, NCCL_PROTO_*), so tables index alike. */
enum spsim_nccl_algo {
    SPSIM_NCCL_TREE,
    SPSIM_NCCL_RING,
    SPSIM_NCCL_COLLNET_DIRECT,
    SPSIM_NCCL_COLLNET_CHAIN,
    SPSIM_NCCL_NVLS,
    SPSIM_NCCL_NVLS_TREE,
    SPSIM_NCCL_PAT,
    SPSIM_NCCL_ALGO_COUNT
};
enum spsim_nccl_proto {
    SPSIM_NCCL_LL,
    SPSIM_NCCL_LL128,
    SPSIM_NCCL_SIMPLE,
    SPSIM_NCCL_PROTO_COUNT
};
/* NCCL's ncclFunc_t order: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce. */
enum spsim_nccl_func {
    SPSIM_NCCL_BROADCAST,
    SPSIM_NCCL_REDUCE,
    SPSIM_NCCL_ALL_GATHER,
    SPSIM_NCCL_REDUCE_SCATTER,
    SPSIM_NCCL_ALL_REDUCE
};
/* tuning.cc NCCL_*_COMPCAP_IDX: the rows of the tuner's per-architecture tables. */
enum spsim_nccl_arch {
    SPSIM_NCCL_VOLTA,
    SPSIM_NCCL_AMPERE,
    SPSIM_NCCL_HOPPER,
    SPSIM_NCCL_BLACKWELL
};

/** One search graph's result (ncclTopoGraph): channels and per-channel GB/s. */
struct spsim_nccl_graph {
    uint32_t nchannels;
    double bw_intra, bw_inter; /* GB/s per channel */
    double latency_inter;      /* µs, the NIC's reported latency (0 for IB) */
};

/** What ncclTopoTuneModel reads from a communicator, and the table it fills (one function). */
struct spsim_nccl_comm {
    uint32_t nranks, nnodes;
    enum spsim_nccl_arch arch;
    bool intra_pci;                       /* intra-node path is PCI (else NVLink) */
    bool cpu_amd;                         /* x86 AMD hosts: llMaxBws row 1, net overhead 2 µs */
    bool nvls;                            /* NVLink SHARP (NVSwitch multicast) available */
    bool collnet;                         /* CollNet (SHARP in the network) enabled */
    bool ll128;                           /* LL128 allowed by the path types (tuning.cc:518-533) */
    bool tree_pattern_simple;             /* maxTreePattern == NCCL_TOPO_PATTERN_TREE (×0.85) */
    bool algo_off[SPSIM_NCCL_ALGO_COUNT]; /* NCCL_ALGO-style exclusions */
    struct spsim_nccl_graph graph[SPSIM_NCCL_ALGO_COUNT];
    double nic_GBps; /* comm->minNetBw: a NIC's line rate in GB/s (speed_Mbps / 8000) */
    /* Filled by spsim_nccl_tune for one function: algBw in GB/s (0 = disabled) and µs. */
    enum spsim_nccl_func func;
    double bw[SPSIM_NCCL_ALGO_COUNT][SPSIM_NCCL_PROTO_COUNT];
    double lat[SPSIM_NCCL_ALGO_COUNT][SPSIM_NCCL_PROTO_COUNT];
};

/** The chosen algorithm and protocol at one size, with NCCL's own time estimate. */
struct spsim_nccl_choice {
    enum spsim_nccl_algo algo;
    enum spsim_nccl_proto proto;
    double time_us;
};

/** ncclTopoTuneModel for one function: c->bw and c->lat (tuning.cc:243-560). */
void spsim_nccl_tune(struct spsim_nccl_comm *c, enum spsim_nccl_func func);

/** The latency of (a, p) at `nbytes` as ncclTopoGetAlgoTime takes it (µs): the table's, times
 * the ring's plateau factor for large multi-node Ring/Simple AllReduces (tuning.cc:647-650). */
double spsim_nccl_latency_us(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a,
                             enum spsim_nccl_proto p, double nbytes);

/** The protocol refinements and per-channel maxima ncclTopoTuneModel applies to a bus bandwidth
 * of (a, p) (tuning.cc:324-336, GB/s in, GB/s out), here on any bus bandwidth: Ring LL half (at
 * most llMaxBw), LL128 0.92 (at most perChMaxRingLL128Bw per channel), Tree AllReduce 0.92 (at
 * most perChMaxTreeBw), Tree LL /3.8, Tree LL128 120/128, PAT 0.75, NVLSTree at most
 * perChMaxNVLSTreeBw per channel; without `maxima`, the factors alone (llMaxBw and the
 * per-channel maxima left out). */
double spsim_nccl_refine_bus(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a,
                             enum spsim_nccl_proto p, double bus, bool maxima);

/** How NCCL splits an NVLSTree AllReduce of `nbytes`: `ops` chunks in flight at once (the NVLS
 * CTAs times the heads) and the chunk size (enqueue.cc:2280-2285, transport/nvls.cc). */
void spsim_nccl_nvls_tree_split(const struct spsim_nccl_comm *c, double nbytes, uint32_t *ops,
                                double *chunk_bytes);

/** ncclTopoGetAlgoTime for one operation (tuning.cc:630-655); < 0 when disabled. */
double spsim_nccl_time_us(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a,
                          enum spsim_nccl_proto p, double nbytes);

/** treeCorrectionFactor of a Tree AllReduce of `nbytes` (tuning.cc:623-641): NCCL's measured
 * shortfall of trees against its model at medium sizes, 1 outside 64 B .. 256 MiB. */
double spsim_nccl_tree_correction(enum spsim_nccl_proto p, double nbytes);

/** The (algorithm, protocol) of least time, as topoGetAlgoInfo takes it (enqueue.cc:2028);
 * false when nothing is enabled. */
bool spsim_nccl_choose(const struct spsim_nccl_comm *c, double nbytes,
                       struct spsim_nccl_choice *out);

/** The architecture of a profile's GPU, from its model name (A100 → Ampere, ...). */
enum spsim_nccl_arch spsim_nccl_arch_of(const struct spsim_hardware *hw);

/**
 * The communicator NCCL would build for `nranks` ranks on `nnodes` NVLink domains (nranks /
 * nnodes per domain) of `hw`: graphs from the profile's NVLink and NIC line rates in NCCL's
 * units and speed arrays (search.cc), the enables NCCL applies by default.
 */
void spsim_nccl_comm_from_hw(const struct spsim_hardware *hw, uint32_t nranks, uint32_t nnodes,
                             struct spsim_nccl_comm *c);

/** NCCL's names (ncclAlgoStr, ncclProtoStr). */
const char *spsim_nccl_algo_name(enum spsim_nccl_algo a);
const char *spsim_nccl_proto_name(enum spsim_nccl_proto p);

#endif
