/*
 * NCCL's cost model and choice of algorithm and protocol, as NVIDIA/nccl computes them at commit
 * 5067397c (2026-06-11): the tables and formulas of src/graph/tuning.cc, the per-channel speeds
 * of src/graph/search.cc and the NVLink model of src/graph/topo.h. Line numbers below are at that
 * commit. What NCCL measures at run time (its topology search) is derived from the profile's
 * link rates instead, as spsim_nccl_comm_from_hw says.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "nccl_tuning.h"

enum { HW_NVLINK, HW_PCI, HW_NET };

/* tuning.cc:139-144 nvlsEfficiency {Volta, Ampere, Hopper, Blackwell}. */
static const double nvls_efficiency[4] = {0.0, 0.0, 0.85, 0.74};
/* clang-format off */
/* tuning.cc:149-155 baseLatencies (µs) [algo][LL, LL128, Simple]. */
static const double base_lat[SPSIM_NCCL_ALGO_COUNT][3] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, /* Tree, Ring */
    {0, 0, 0}, {0, 0, 0},               /* CollNetDirect, CollNetChain */
    {0, 0, 0}, {0, 0, 0},               /* NVLS, NVLSTree */
    {8.0, 8.0, 8.0}};                   /* PAT */
/* tuning.cc:156-176 hwLatencies (µs) [NVLINK, PCI, NET][algo][proto], algos as above. */
static const double hw_lat[3][SPSIM_NCCL_ALGO_COUNT][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25},
     {0, 0, 4.0}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0},
     {0, 0, 4.0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9},
     {0, 0, 14}}};
/* clang-format on */
/* tuning.cc:177-212, GB/s, [arch (llMaxBws: arch on one node, CPU row across nodes)][1 node,
 * 2 nodes, more]. */
static const double ll_max_bw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
static const double ring_ll128_max[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
static const double tree_ll128_max[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
static const double tree_max[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
static const double nvls_tree_max[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};
/* tuning.cc:623-628 treeCorrectionFactor [proto][log2(bytes/64)], 64 B to 256 MiB. */
static const double tree_correction[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6,  .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6,  .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

static int
log2i(double x)
{
    /* bitops.h log2Down: floor(log2 x), −1 for 0; frexp is exact on doubles. */
    if (x < 1)
        return -1;
    int e;
    frexp(x, &e);
    return e - 1;
}

static bool
algo_serves(enum spsim_nccl_func f, enum spsim_nccl_algo a)
{
    /* tuning.cc:294-298 */
    if (f == SPSIM_NCCL_BROADCAST || f == SPSIM_NCCL_REDUCE)
        return a == SPSIM_NCCL_RING;
    if (f == SPSIM_NCCL_ALL_GATHER || f == SPSIM_NCCL_REDUCE_SCATTER)
        return a == SPSIM_NCCL_PAT || a == SPSIM_NCCL_RING || a == SPSIM_NCCL_NVLS ||
               a == SPSIM_NCCL_COLLNET_DIRECT;
    return a != SPSIM_NCCL_PAT;
}

/* The per-channel bandwidth of a graph before the protocol's refinements: bwIntra on <= 2
 * nodes (and CollNet), bwInter beyond; NVLS and NVLSTree from the NVLS efficiency and their
 * per-channel maximum (tuning.cc:306-323). */
static double
graph_bw(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a)
{
    const struct spsim_nccl_graph *g = &c->graph[a];
    int i2 = c->nnodes <= 2 ? (int)c->nnodes - 1 : 2, ar = c->arch;
    bool collnet = a == SPSIM_NCCL_COLLNET_DIRECT || a == SPSIM_NCCL_COLLNET_CHAIN;
    double ppn = (double)c->nranks / c->nnodes;
    double bw = c->nnodes <= 2 || collnet ? g->bw_intra : g->bw_inter;
    if (a == SPSIM_NCCL_NVLS || a == SPSIM_NCCL_NVLS_TREE) {
        if (g->nchannels < 2)
            return 0;
        double intra = g->bw_intra * nvls_efficiency[ar] * (g->nchannels - 1) / g->nchannels;
        intra *= c->func == SPSIM_NCCL_ALL_REDUCE ? 2.0 : (ppn - 1) / ppn;
        double inter = g->bw_inter * (c->nnodes <= 2 && a == SPSIM_NCCL_NVLS_TREE ? 2 : 1);
        bw = fmin(intra, inter);
        if (a == SPSIM_NCCL_NVLS_TREE)
            bw = fmin(bw, nvls_tree_max[ar][i2]);
    }
    return bw;
}

double
spsim_nccl_refine_bus(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a,
                      enum spsim_nccl_proto p, double bus, bool maxima)
{
    /* tuning.cc:324-336, in NCCL's order. */
    int i2 = c->nnodes <= 2 ? (int)c->nnodes - 1 : 2, ar = c->arch;
    int i1 = c->nnodes == 1 ? ar : (c->cpu_amd ? 1 : 0);
    double nch = maxima ? c->graph[a].nchannels : HUGE_VAL;
    double ll_max = maxima ? ll_max_bw[i1][i2] : HUGE_VAL;
    bool allreduce = c->func == SPSIM_NCCL_ALL_REDUCE;
    if (a == SPSIM_NCCL_RING && p == SPSIM_NCCL_LL)
        bus = fmin(ll_max, bus * .5);
    if (a == SPSIM_NCCL_RING && p == SPSIM_NCCL_LL128)
        bus = fmin(bus * 0.92, nch * ring_ll128_max[ar][i2]);
    if (a == SPSIM_NCCL_TREE && allreduce)
        bus = fmin(bus * .92, nch * tree_max[ar][i2]);
    if (a == SPSIM_NCCL_TREE && p == SPSIM_NCCL_LL)
        bus = fmin(bus / 3.8, ll_max);
    if (a == SPSIM_NCCL_TREE && p == SPSIM_NCCL_LL128)
        bus =
            fmin(bus * (c->nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nch * tree_ll128_max[ar][i2]);
    if (a == SPSIM_NCCL_TREE && c->tree_pattern_simple)
        bus *= .85;
    if (a == SPSIM_NCCL_PAT)
        bus *= .75;
    /* NVLSTree's per-channel maximum (tuning.cc:322), on a bandwidth not taken from the
     * graph; graph_bw applies it to NCCL's own. */
    if (a == SPSIM_NCCL_NVLS_TREE)
        bus = fmin(bus, nch * nvls_tree_max[ar][i2]);
    return bus;
}

/* The bus bandwidth of one (algorithm, protocol) before its conversion to algBw
 * (tuning.cc:306-375). */
static double
bus_bw(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a, enum spsim_nccl_proto p)
{
    const struct spsim_nccl_graph *g = &c->graph[a];
    int ar = c->arch;
    bool collnet = a == SPSIM_NCCL_COLLNET_DIRECT || a == SPSIM_NCCL_COLLNET_CHAIN;
    bool allreduce = c->func == SPSIM_NCCL_ALL_REDUCE;
    double ppn = (double)c->nranks / c->nnodes;
    double bus = spsim_nccl_refine_bus(c, a, p, g->nchannels * graph_bw(c, a), true);
    if (collnet && p != SPSIM_NCCL_SIMPLE)
        bus = 0;
    if (a == SPSIM_NCCL_COLLNET_DIRECT && p == SPSIM_NCCL_SIMPLE) {
        if (!allreduce) {
            bus = ppn * fmin(g->bw_intra, g->bw_inter * 0.9);
        } else {
            double factor = ppn / g->nchannels; /* GPU/NIC ratio */
            bus /= factor - (factor - 1) / 2;
            if (ar >= SPSIM_NCCL_HOPPER)
                bus *= .85;
        }
    }
    /* tuning.cc:351-374: NVLS and CollNetDirect AllGather/ReduceScatter across nodes need a
     * CollNet plugin with iallgather/ireducescatter, which the default network lacks. */
    if ((a == SPSIM_NCCL_NVLS || a == SPSIM_NCCL_COLLNET_DIRECT) && !allreduce && c->nnodes > 1)
        bus = 0;
    return bus;
}

/* tuning.cc:383-440: base latency plus the algorithm's hops. */
static double
latency(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a, enum spsim_nccl_proto p)
{
    uint32_t n = c->nranks, nn = c->nnodes, ppn = n / nn;
    int intra_hw = c->intra_pci ? HW_PCI : HW_NVLINK, hw = nn == 1 ? intra_hw : HW_NET;
    double lat = base_lat[a][p];
    double intra = hw_lat[intra_hw][a][p];
    /* "With ppn=1 latencies are fully exposed, use the Tree network latency" (:386-388). */
    double inter = hw_lat[HW_NET][ppn == 1 ? SPSIM_NCCL_TREE : a][p] + c->graph[a].latency_inter;
    if (p == SPSIM_NCCL_SIMPLE)
        inter += c->graph[a].latency_inter; /* the flush */
    bool ar = c->func == SPSIM_NCCL_ALL_REDUCE;
    uint32_t nsteps =
        ar ? 2 * (n - 1)
           : (c->func == SPSIM_NCCL_ALL_GATHER || c->func == SPSIM_NCCL_REDUCE_SCATTER ? n - 1 : n);
    switch (a) {
    case SPSIM_NCCL_RING:
        if (c->func == SPSIM_NCCL_BROADCAST || c->func == SPSIM_NCCL_REDUCE)
            return lat + hw_lat[hw][a][p]; /* sameChannels graphs (:397-399) */
        if (nn > 1) {
            /* getNetOverhead (:228-233): 1 µs on Intel x86, 2 on AMD; ×3 for Simple. */
            double overhead = (c->cpu_amd ? 2.0 : 1.0) * (p == SPSIM_NCCL_SIMPLE ? 3 : 1);
            intra = fmax(intra, overhead);
        }
        {
            uint32_t ninter = nn == 1 ? 0 : (ar ? 2 * (nn - 1) : nn - 1);
            return lat + (nsteps - ninter) * intra + ninter * inter;
        }
    case SPSIM_NCCL_TREE:
        return ar ? lat + 2 * ((ppn - 1) * intra + log2i(nn) * inter) : lat;
    case SPSIM_NCCL_COLLNET_DIRECT:
        return lat + 2 * ((ppn > 1 ? 1 : 0) * intra + (ppn - 1) * 0.4) + inter;
    case SPSIM_NCCL_COLLNET_CHAIN:
        return lat + 2 * (ppn - 1) * intra + inter;
    case SPSIM_NCCL_NVLS:
        return intra + (nn > 1 ? inter : 0);
    case SPSIM_NCCL_NVLS_TREE:
        return lat + intra + 2 * log2i(nn) * inter;
    case SPSIM_NCCL_PAT:
        return c->func == SPSIM_NCCL_ALL_GATHER || c->func == SPSIM_NCCL_REDUCE_SCATTER
                   ? lat + log2i(nn) * (inter / 3.5) + n * 2.8
                   : lat;
    case SPSIM_NCCL_ALGO_COUNT:
        break;
    }
    return lat;
}

/* Whether NCCL enables (a, p) by default (tuning.cc:300-304, 495-540). */
static bool
enabled(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a, enum spsim_nccl_proto p)
{
    if ((a == SPSIM_NCCL_NVLS || a == SPSIM_NCCL_NVLS_TREE) && p != SPSIM_NCCL_SIMPLE)
        return false;
    /* ncclPatEnable (:216-223): one GPU per node only. */
    if (a == SPSIM_NCCL_PAT && (p != SPSIM_NCCL_SIMPLE || c->nnodes != c->nranks))
        return false;
    if (a == SPSIM_NCCL_NVLS_TREE && c->nnodes == 1)
        return false;
    bool collnet_algo = a == SPSIM_NCCL_COLLNET_DIRECT || a == SPSIM_NCCL_COLLNET_CHAIN;
    if (!c->collnet && (collnet_algo || (a == SPSIM_NCCL_NVLS && c->nnodes > 1)))
        return false;
    if ((a == SPSIM_NCCL_NVLS || a == SPSIM_NCCL_NVLS_TREE) && !c->nvls)
        return false;
    if (p == SPSIM_NCCL_LL128 && !c->ll128)
        return false;
    return !c->algo_off[a];
}

void
spsim_nccl_tune(struct spsim_nccl_comm *c, enum spsim_nccl_func func)
{
    c->func = func;
    memset(c->bw, 0, sizeof(c->bw));
    memset(c->lat, 0, sizeof(c->lat));
    if (c->nranks <= 1)
        return;
    bool ar = func == SPSIM_NCCL_ALL_REDUCE,
         agrs = !ar && func != SPSIM_NCCL_BROADCAST && func != SPSIM_NCCL_REDUCE;
    double nsteps = ar ? 2.0 * (c->nranks - 1) : (agrs ? c->nranks - 1.0 : c->nranks);
    for (int a = 0; a < SPSIM_NCCL_ALGO_COUNT; a++) {
        if (!algo_serves(func, (enum spsim_nccl_algo)a))
            continue;
        for (int p = 0; p < SPSIM_NCCL_PROTO_COUNT; p++) {
            c->lat[a][p] = latency(c, (enum spsim_nccl_algo)a, (enum spsim_nccl_proto)p);
            if (!enabled(c, (enum spsim_nccl_algo)a, (enum spsim_nccl_proto)p))
                continue;
            double bus = bus_bw(c, (enum spsim_nccl_algo)a, (enum spsim_nccl_proto)p);
            /* busBw to algBw (:376-382): rings and NVLS by nRanks/nsteps, the rest by 0.5,
             * except non-ring AllGather/ReduceScatter. */
            if (a == SPSIM_NCCL_RING || !agrs) {
                bool ringlike =
                    a == SPSIM_NCCL_RING || a == SPSIM_NCCL_NVLS || a == SPSIM_NCCL_NVLS_TREE;
                bus *= ringlike ? c->nranks / nsteps : 0.5;
            }
            c->bw[a][p] = bus;
        }
    }
}

double
spsim_nccl_tree_correction(enum spsim_nccl_proto p, double nbytes)
{
    int logsize = log2i(floor(nbytes / 64));
    return logsize >= 0 && logsize < 23 && (unsigned)p < SPSIM_NCCL_PROTO_COUNT
               ? tree_correction[p][logsize]
               : 1.0;
}

double
spsim_nccl_latency_us(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a,
                      enum spsim_nccl_proto p, double nbytes)
{
    double lat = c->lat[a][p];
    /* "Plateau effect of ring" (:647-650); the comm's channels are the ring graph's. */
    uint32_t nch = c->graph[SPSIM_NCCL_RING].nchannels ? c->graph[SPSIM_NCCL_RING].nchannels : 1;
    if (a == SPSIM_NCCL_RING && p == SPSIM_NCCL_SIMPLE && c->nnodes > 1 &&
        c->func == SPSIM_NCCL_ALL_REDUCE && floor(nbytes / ((double)nch * c->nranks)) >= 64)
        lat *= c->arch < SPSIM_NCCL_AMPERE ? 1.9 : 1.4;
    return lat;
}

double
spsim_nccl_time_us(const struct spsim_nccl_comm *c, enum spsim_nccl_algo a, enum spsim_nccl_proto p,
                   double nbytes)
{
    double bw = c->bw[a][p];
    if (bw == 0)
        return -1.0;
    int logsize = log2i(floor(nbytes / 64));
    bool ar = c->func == SPSIM_NCCL_ALL_REDUCE;
    if (a == SPSIM_NCCL_TREE && ar && logsize >= 0 && logsize < 23)
        bw *= tree_correction[p][logsize];
    /* NVLSTree's correction applies on sm100+ x86 hosts (:643-646); x86 assumed. */
    if (a == SPSIM_NCCL_NVLS_TREE && ar && logsize >= 0 && logsize < 24 &&
        c->arch >= SPSIM_NCCL_BLACKWELL)
        bw *= tree_correction[p][logsize];
    /* one pipelined op: latCount 1 */
    return spsim_nccl_latency_us(c, a, p, nbytes) + nbytes / (1000 * bw);
}

/*
 * How NCCL splits an NVLSTree AllReduce (enqueue.cc:2280-2285): nvlsChannels CTAs, each
 * serving one chunk per NVLS head and loop (ncclPatternNvlsTree: nchunksPerLoop = nHeads), so
 * nChannels·nHeads chunks move at once; the chunk is min(nvlsChunkSize, nvlsTreeMaxChunkSize)
 * lowered to 256, 128, 64, 32 KiB while the message is below 32, 16, 4, 1 times that many
 * chunks. The channel count and chunk sizes are transport/nvls.cc's ncclNvlsTuning: 16 CTAs
 * and 128 KiB on sm90; on sm100 across nodes ncclNvlsTreeSm100Tuning's table by node count,
 * GPUs per node and NIC speed (comm->minNetBw, GB/s: the line rate / 8), the NICs on the
 * GPUs' PCIe switches (PATH_PXB, as on the shipped nodes); treeMaxChunkSize otherwise 64 KiB
 * from 4 nodes, else the chunk size (the NVLSTREE_MAX_CHUNKSIZE default -2).
 */
void
spsim_nccl_nvls_tree_split(const struct spsim_nccl_comm *c, double nbytes, uint32_t *ops,
                           double *chunk_bytes)
{
    enum { K = 1024 };
    uint32_t nch = 16, ppn = c->nranks / c->nnodes;
    double chunk = 128 * K, tmax = 0, nic = c->nic_GBps;
    if (c->arch >= SPSIM_NCCL_BLACKWELL && c->nnodes > 1) {
        nch = 32;
        if (c->nnodes == 2 && nic >= 48) {
            tmax = 128 * K;
            if (ppn <= 4)
                chunk = tmax = 256 * K;
            else if (ppn >= 16 || (ppn <= 8 && nic < 96))
                tmax = 64 * K;
        } else if (nic >= 96 && ppn <= 8) {
            nch = 24;
            chunk = tmax = 256 * K;
        } else if (nic >= 96) {
            tmax = ppn < 32 ? 128 * K : 64 * K;
        } else if (nic >= 48) {
            nch = 24;
            tmax = 64 * K; /* 128 KiB, then 64 KiB with the NIC on the GPU's PCIe switch */
        }
    }
    if (tmax == 0)
        tmax = c->nnodes >= 4 ? 64 * K : chunk;
    uint32_t heads = c->graph[SPSIM_NCCL_NVLS_TREE].nchannels;
    double n = (double)nch * (heads ? heads : 1);
    double cs = fmin(chunk, tmax);
    if (nbytes < 32 * n * cs && cs > 256 * K)
        cs = 256 * K;
    if (nbytes < 16 * n * cs && cs > 128 * K)
        cs = 128 * K;
    if (nbytes < 4 * n * cs && cs > 64 * K)
        cs = 64 * K;
    if (nbytes < n * cs && cs > 32 * K)
        cs = 32 * K;
    *ops = (uint32_t)n;
    *chunk_bytes = cs;
}

bool
spsim_nccl_choose(const struct spsim_nccl_comm *c, double nbytes, struct spsim_nccl_choice *out)
{
    /* topoGetAlgoInfo (enqueue.cc:2028-2043): the first strict minimum over algo, then proto. */
    double best = HUGE_VAL;
    bool found = false;
    for (int a = 0; a < SPSIM_NCCL_ALGO_COUNT; a++)
        for (int p = 0; p < SPSIM_NCCL_PROTO_COUNT; p++) {
            double t =
                spsim_nccl_time_us(c, (enum spsim_nccl_algo)a, (enum spsim_nccl_proto)p, nbytes);
            if (t >= 0 && t < best) {
                best = t;
                *out = (struct spsim_nccl_choice){(enum spsim_nccl_algo)a, (enum spsim_nccl_proto)p,
                                                  t};
                found = true;
            }
        }
    return found;
}

const char *
spsim_nccl_algo_name(enum spsim_nccl_algo a)
{
    /* device.h ncclAlgoStr */
    static const char *const names[] = {"Tree",     "Ring", "CollNetDirect", "CollNetChain", "NVLS",
                                        "NVLSTree", "PAT"};
    return (unsigned)a < SPSIM_NCCL_ALGO_COUNT ? names[a] : "?";
}

const char *
spsim_nccl_proto_name(enum spsim_nccl_proto p)
{
    static const char *const names[] = {"LL", "LL128", "Simple"};
    return (unsigned)p < SPSIM_NCCL_PROTO_COUNT ? names[p] : "?";
}

/* ---- the communicator NCCL would build on a profile's machine ------------------------------ */

/* topo.h:19-24 SMxx_NVLINK_BW: NCCL's modelled GB/s per NVLink {SM70, SM80, SM90, SM100}. */
static const double nccl_nvlink_GBps[4] = {20.0, 20.0, 20.6, 40.1};
/* Line rate of one NVLink per direction: 25 GB/s for NVLink 2-4, 50 for NVLink 5
 * (hardware-facts.md §1.3 A100 12 links / 300 GB/s, §3.3 H100 18 / 450, §5.3 B200 18 / 900). */
static const double nvlink_link_line_GBps[4] = {25.0, 25.0, 25.0, 50.0};
/* search.cc:1051-1066 speed arrays, GB/s per channel, inside a node and across nodes. */
static const double speeds_intra[3][13] = {
    {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0},
    {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0},
    {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0}};
static const uint32_t nspeeds_intra[3] = {13, 11, 12};
static const double speeds_inter[3][20] = {{48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                            9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12},
                                           {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                            15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12},
                                           {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0,
                                            30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0,
                                            6.0,  3.0,  2.4,  1.2,  0.24, 0.12}};
static const uint32_t nspeeds_inter[3] = {19, 17, 20};
/* init.cc:1177 ringGraph->maxChannels = MAXCHANNELS / 2 (device.h:91 MAXCHANNELS 64). */
#define NCCL_RING_MAX_CHANNELS 32

enum spsim_nccl_arch
spsim_nccl_arch_of(const struct spsim_hardware *hw)
{
    if (hw->nccl_arch_plus1) /* resolved once per profile (spsim_hardware_prepare) */
        return (enum spsim_nccl_arch)(hw->nccl_arch_plus1 - 1);
    const char *m = hw->gpu_model ? hw->gpu_model : "";
    static const char *const blackwell[] = {"B200", "B100", "B300", "GB200", "GB300", "Blackwell"};
    static const char *const hopper[] = {"H100", "H200", "H800", "H20", "Hopper"};
    for (size_t i = 0; i < sizeof(blackwell) / sizeof(*blackwell); i++)
        if (strstr(m, blackwell[i]))
            return SPSIM_NCCL_BLACKWELL;
    for (size_t i = 0; i < sizeof(hopper) / sizeof(*hopper); i++)
        if (strstr(m, hopper[i]))
            return SPSIM_NCCL_HOPPER;
    if (strstr(m, "V100"))
        return SPSIM_NCCL_VOLTA;
    /* A100, A800, A30 and anything unnamed: Ampere's tables (the oldest GPU of the shipped set). */
    return SPSIM_NCCL_AMPERE;
}

/* Index of the first speed not above `bw` (search.cc:1170-1174: skip speeds above maxBw). */
static uint32_t
speed_index(const double *speeds, uint32_t n, double bw)
{
    uint32_t i = 0;
    while (i < n - 1 && speeds[i] > bw)
        i++;
    return i;
}

/* ncclTopoDupChannels (search.cc:1036-1047): twice the channels at half the speed. */
static void
dup_channels(struct spsim_nccl_graph *g, enum spsim_nccl_arch arch)
{
    if (g->bw_intra < 25.0)
        return;
    if (arch > SPSIM_NCCL_AMPERE && g->bw_intra < 50.0 && g->nchannels > 4)
        return;
    uint32_t dup =
        g->nchannels * 2 < NCCL_RING_MAX_CHANNELS ? g->nchannels * 2 : NCCL_RING_MAX_CHANNELS;
    uint32_t div = (dup + g->nchannels - 1) / g->nchannels;
    g->bw_intra /= div;
    g->bw_inter /= div;
    g->nchannels = dup;
}

/* device.h:208 NCCL_MAX_NVLS_ARITY: an NVLS graph has at most this many heads (channels). */
#define NCCL_MAX_NVLS_ARITY 32

/*
 * The NVLS graph of one node, as NCCL 2.29.2's search builds it (search.cc:1062-1205): one
 * channel per GPU, all of them (minChannels = maxChannels = ngpus on one node, :1064-1072).
 * Each channel pulls every GPU's NVS<->GPU path once and its head's twice, both directions
 * (ncclTopoSearchTryNvls, :386-417), so a GPU's NVLink carries (ngpus + 1)·bwIntra. The
 * search starts at the first intra speed not above the path (maxBw) with speed·ngpus within
 * totalBw·ngpus/(ngpus − 1) (:1112-1114), lowers the speed until that fits (:1170-1174), is
 * not duplicated (:963), and pass 2 raises only bwInter, which one node's NVS paths do not
 * use (:137, bwIntra), to the array's top while below 2·bwIntra (:1201-1204).
 */
static struct spsim_nccl_graph
nvls_graph(const double *sp, uint32_t nsp, double nvl, uint32_t ngpus)
{
    struct spsim_nccl_graph g = {0};
    uint32_t nch = ngpus < NCCL_MAX_NVLS_ARITY ? ngpus : NCCL_MAX_NVLS_ARITY;
    if (nch < 2)
        return g;
    double total = nvl * ngpus / (ngpus - 1.0);
    uint32_t i = 0;
    while (i < nsp - 1 && (sp[i] > nvl || sp[i] * nch > total))
        i++;
    while (i < nsp && (ngpus + 1) * sp[i] > nvl)
        i++;
    if (i == nsp)
        return g;
    g = (struct spsim_nccl_graph){nch, sp[i], sp[i], 0};
    while (i > 0 && g.bw_inter < 2 * g.bw_intra)
        g.bw_inter = sp[--i];
    return g;
}

/* Channels an NVLS search across nodes finds at (bwIntra, bwInter): a channel per head, one
 * head per NIC with its own local GPU (search.cc:754-772), the NIC and its PCIe path carrying
 * bwInter each way (NET -> head -> NET, backToNet 0, :824-829); on the NVLink every GPU's
 * NVSwitch path once per channel and the head's twice (ncclTopoSearchTryNvls, :410-444), so a
 * GPU that heads one of k channels needs (k + 1)·bwIntra. */
static uint32_t
nvls_fit(double nvl, double nic, uint32_t heads, double intra, double inter)
{
    if (inter > nic)
        return 0;
    double k = floor(nvl / intra) - 1;
    return k < 1 ? 0 : (k < heads ? (uint32_t)k : heads);
}

/*
 * The NVLS graph across nodes, as ncclTopoCompute (search.cc:1104-1290) searches it from the
 * NICs, on the arch's inter speeds: pass 1 from the first speed not above maxBw (the GPU-NIC
 * path), lowering bwIntra = bwInter while the best graph (more channels, else more
 * nChannels·bwInter: ncclTopoCompareGraphs, :447-452) lacks all maxChannels = min(32, ppn)
 * heads and the next speed is above 0.49 of its bwInter; no duplication (:1038); pass 2
 * raises bwInter with the channels fixed while below 2·bwIntra, else tries bwIntra
 * (:1268-1283), keeping what still fits. On a DGX H100 (NVLink 370.8, NIC 50, 8 heads):
 * 6 × 48, 7 × 45, 8 × 40 in pass 1, then bwInter 42, 45, 48: 8 channels, 40 / 48.
 */
static struct spsim_nccl_graph
nvls_graph_inter(const double *sp, uint32_t nsp, double nvl, double nic, uint32_t ppn,
                 uint32_t heads)
{
    struct spsim_nccl_graph best = {0};
    uint32_t maxch = ppn < NCCL_MAX_NVLS_ARITY ? ppn : NCCL_MAX_NVLS_ARITY, i = 0;
    heads = heads < maxch ? heads : maxch;
    double total = nvl * ppn / (ppn - 1.0); /* non-ring totalBw (:1167-1168) */
    while (i < nsp - 1 && (sp[i] > fmin(nic, nvl) || sp[i] > total))
        i++;
    for (;;) {
        uint32_t k = nvls_fit(nvl, nic, heads, sp[i], sp[i]);
        if (k > best.nchannels || k * sp[i] > best.nchannels * best.bw_inter)
            best = (struct spsim_nccl_graph){k, sp[i], sp[i], 0};
        if (best.nchannels == maxch || best.nchannels * best.bw_inter >= nvl)
            break;
        if (i < nsp - 1 && (best.nchannels == 0 || sp[i + 1] / best.bw_inter > .49))
            i++;
        else
            break;
    }
    if (best.nchannels == 0)
        return best;
    i = speed_index(sp, nsp, best.bw_inter);
    double intra = sp[i], inter = sp[i];
    while (i > 0) {
        if (inter == best.bw_inter && inter < 2 * intra)
            inter = sp[--i];
        else if (intra == best.bw_intra && intra < 2 * inter)
            intra = sp[--i];
        else
            break;
        if (nvls_fit(nvl, nic, heads, intra, inter) >= best.nchannels && inter > best.bw_inter)
            best.bw_inter = inter;
    }
    return best;
}

/*
 * The graphs NCCL's search (search.cc:1074-1290) would find, from the profile's line rates in
 * NCCL's units: each GPU's NVLink is links × SMxx_NVLINK_BW, reached through an NVSwitch (the
 * shipped nodes); a NIC is its line rate / 8 (speed_Mbps / 8000). Pass 1 takes the highest
 * speed the path allows and as many channels as the links hold (one NIC per channel across
 * nodes, rail-optimised: the group's GPUs of a node own nics·ppn/gpus_per_node NICs), then
 * duplicates them; pass 2 raises a tree's bwIntra towards twice bwInter on two nodes
 * (search.cc:1270-1276) while the NVLink holds it; rings stay at the NIC's speed.
 */
static void
build_graphs(const struct spsim_hardware *hw, struct spsim_nccl_comm *c)
{
    int row = c->arch == SPSIM_NCCL_BLACKWELL ? 2 : (c->arch == SPSIM_NCCL_HOPPER ? 1 : 0);
    double links = round(hw->nvlink_line_Bps / 1e9 / nvlink_link_line_GBps[c->arch]);
    double nvl = (links < 1 ? 1 : links) * nccl_nvlink_GBps[c->arch];
    struct spsim_nccl_graph g = {0};
    if (c->nnodes == 1) {
        const double *sp = speeds_intra[row];
        double s = sp[speed_index(sp, nspeeds_intra[row], nvl)];
        double nch = floor(nvl / s);
        g = (struct spsim_nccl_graph){(uint32_t)fmin(fmax(nch, 1), NCCL_RING_MAX_CHANNELS), s, s,
                                      0};
        dup_channels(&g, c->arch);
        c->graph[SPSIM_NCCL_RING] = c->graph[SPSIM_NCCL_TREE] = g;
        if (c->nvls)
            c->graph[SPSIM_NCCL_NVLS] = nvls_graph(sp, nspeeds_intra[row], nvl, c->nranks);
        c->graph[SPSIM_NCCL_NVLS_TREE] = c->graph[SPSIM_NCCL_NVLS]; /* init.cc:980-981 */
        return;
    }
    const double *sp = speeds_inter[row];
    uint32_t ns = nspeeds_inter[row];
    double nic = hw->nic_line_Bps / 1e9, ppn = (double)c->nranks / c->nnodes;
    double nics = floor(hw->nics_per_node * ppn / hw->gpus_per_node);
    uint32_t i = speed_index(sp, ns, fmin(nic, nvl));
    double nch = fmax(nics, 1) * fmax(floor(nic / sp[i]), 1);
    g = (struct spsim_nccl_graph){(uint32_t)fmin(nch, NCCL_RING_MAX_CHANNELS), sp[i], sp[i], 0};
    dup_channels(&g, c->arch);
    c->graph[SPSIM_NCCL_RING] = g;
    if (c->nnodes <= 2) {
        uint32_t k = speed_index(sp, ns, g.bw_inter);
        while (k > 0 && g.bw_intra < 2 * g.bw_inter && g.nchannels * sp[k - 1] <= nvl)
            g.bw_intra = sp[--k];
    }
    c->graph[SPSIM_NCCL_TREE] = c->graph[SPSIM_NCCL_PAT] = g;
    if (c->nvls)
        c->graph[SPSIM_NCCL_NVLS] = c->graph[SPSIM_NCCL_NVLS_TREE] =
            nvls_graph_inter(sp, ns, nvl, nic, (uint32_t)ppn, (uint32_t)fmax(nics, 1));
}

void
spsim_nccl_comm_from_hw(const struct spsim_hardware *hw, uint32_t nranks, uint32_t nnodes,
                        struct spsim_nccl_comm *c)
{
    memset(c, 0, sizeof(*c));
    c->nranks = nranks;
    c->nnodes = nnodes ? nnodes : 1;
    c->arch = spsim_nccl_arch_of(hw);
    /* LL128 (tuning.cc:518-533): NVLink inside (typeIntra <= NVB) and NICs on the GPUs' PCIe
     * switches (typeInter <= PXB), as on the shipped nodes. */
    c->ll128 = true;
    /* CollNet (CollNetDirect, CollNetChain, and NVLS across nodes: tuning.cc:497-500) exists
     * only with a CollNet network plugin that reduces in the fabric (SHARP: NCCL_COLLNET_ENABLE
     * = 1 and a plugin such as nccl-rdma-sharp-plugins; collNetSupport, init.cc:1165-1167)
     * and NVSwitches for CollNetDirect. No hardware profile field says a fabric has it, so it
     * stays off. NVLS needs NVSwitch multicast on sm90+ (ncclNvlsInit, transport/nvls.cc:
     * 248-280: CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED; search.cc:1124: an NVS node) and at
     * least two of the communicator's GPUs on the node (gpuCount >= 2): one-GPU-per-node
     * groups have none. The shipped Hopper/Blackwell nodes reach their GPUs through
     * NVSwitches; their NVLS graph serves NVLS on one node and NVLSTree across nodes. A
     * profile without NVSwitch multicast says nvlink.nvls 0. */
    c->collnet = false;
    c->nic_GBps = hw->nic_line_Bps / 1e9;
    c->nvls = c->arch >= SPSIM_NCCL_HOPPER && nranks / c->nnodes >= 2 && !hw->nvls_absent;
    build_graphs(hw, c);
}
