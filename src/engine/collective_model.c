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

/*
 * NCCL 2.29.2 ends every ring loop with a primitive that receives and sends nothing:
 * AllReduce and AllGather prims.directRecv (all_reduce.h:81, all_gather.h:70), ReduceScatter
 * prims.recvReduceCopy (reduce_scatter.h:53). Without registered user buffers (nccl-tests
 * without -R, no CUDA graph: coll_reg.cc:289-290 leaves the ring unregistered, so
 * prims_simple.h:512 sets no DirectWrite/DirectRead) the peer has written the chunk into this
 * GPU's FIFO (P2P write on Hopper: graph/paths.cc:370 reads only on compute capability 8.0), and
 * that primitive copies it to the output (read FIFO, write output: 2 HBM bytes per byte) or
 * reduces it with the input into the output (2 reads, 1 write: 3). It moves nothing over
 * NVLink. Over the loops it handles each rank's part once: S/n of the AllReduce's S, of the
 * AllGather's output, of the ReduceScatter's input. The channels run the same steps on equal
 * parts (ncclCollCbdPart) and so reach their tails together; the tail is taken as bound by
 * the GPU's HBM rate, which the channels' copies share.
 */
double
spsim_ring_tail_s(enum spsim_coll_op op, uint32_t n, double size_bytes, double hbm_Bps)
{
    double bytes_per_byte = op == SPSIM_COLL_ALL_REDUCE || op == SPSIM_COLL_ALL_GATHER ? 2.0
                            : op == SPSIM_COLL_REDUCE_SCATTER                          ? 3.0
                                                                                       : 0.0;
    if (hbm_Bps <= 0 || n == 0)
        return 0;
    return bytes_per_byte * (size_bytes / n) / hbm_Bps;
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

static enum spsim_nccl_func
nccl_func(enum spsim_coll_op op)
{
    return op == SPSIM_COLL_ALL_REDUCE
               ? SPSIM_NCCL_ALL_REDUCE
               : (op == SPSIM_COLL_ALL_GATHER ? SPSIM_NCCL_ALL_GATHER : SPSIM_NCCL_REDUCE_SCATTER);
}

/* Inside one domain: NVLS AllReduce where the profile says NCCL uses it, else Ring; the
 * protocol is left to spsim_collective_algo (SPSIM_NCCL_PROTO_COUNT: not chosen). */
static struct spsim_nccl_choice
domain_algo(const struct spsim_hardware *hw, enum spsim_coll_op op, struct spsim_group g)
{
    /* NVLS needs NVSwitch multicast on sm90+ (transport/nvls.cc:159); the profile's
     * nvls_min_gpus says from which group size NCCL takes it. */
    if (op == SPSIM_COLL_ALL_REDUCE && !hw->nvls_absent &&
        spsim_nccl_arch_of(hw) >= SPSIM_NCCL_HOPPER &&
        (hw->nvls_min_gpus == 0 || g.size >= hw->nvls_min_gpus))
        return (struct spsim_nccl_choice){SPSIM_NCCL_NVLS, SPSIM_NCCL_SIMPLE, 0};
    return (struct spsim_nccl_choice){SPSIM_NCCL_RING, SPSIM_NCCL_PROTO_COUNT, 0};
}

/* The ring collective a profile's ring busbw figure holds the tails of; SPSIM_COLL_COUNT: none
 * (link specs) or not known. */
static enum spsim_coll_op
ring_basis_op(enum spsim_ring_basis b)
{
    switch (b) {
    case SPSIM_RING_BASIS_ALL_REDUCE:
        return SPSIM_COLL_ALL_REDUCE;
    case SPSIM_RING_BASIS_ALL_GATHER:
        return SPSIM_COLL_ALL_GATHER;
    case SPSIM_RING_BASIS_REDUCE_SCATTER:
        return SPSIM_COLL_REDUCE_SCATTER;
    case SPSIM_RING_BASIS_UNKNOWN:
    case SPSIM_RING_BASIS_LINK:
        break;
    }
    return SPSIM_COLL_COUNT;
}

/*
 * The ring loops' local-only tails (spsim_ring_tail_s) a ring `op` of `size_bytes` inside one
 * domain pays beyond those its bandwidth figure already holds. The figure is peak · eff(size):
 * where eff comes from a ring curve measured on some collective, peak · eff is that
 * collective's measured busbw and holds its tails; otherwise (no curve, or an NVLS AllReduce
 * curve, whose kernel has no ring tail) it is the profile's ring busbw, which holds the tails
 * of what ring_measured_on names ("link": none). The tail is linear in the bytes, so a
 * figure measured on collective b holds, per wire byte, b's tail at the size of b that moves
 * the same bytes per rank (as calibrate_json.c ring_curve_from takes it). Not known: 0.
 */
double
spsim_ring_tail_extra_s(const struct spsim_hardware *hw, enum spsim_coll_op op,
                        struct spsim_group g, double size_bytes)
{
    if (hw->ring_measured_on == SPSIM_RING_BASIS_UNKNOWN)
        return 0;
    enum spsim_coll_op b = ring_basis_op(hw->ring_measured_on);
    const struct spsim_curve *cv = hw->nvlink.curve[op];
    if (cv && cv->op <= SPSIM_COLL_REDUCE_SCATTER &&
        domain_algo(hw, cv->op, (struct spsim_group){cv->gpus, cv->gpus}).algo == SPSIM_NCCL_RING)
        b = cv->op;
    double hbm = hw->hbm_achievable_Bps > 0 ? hw->hbm_achievable_Bps : hw->hbm_Bps;
    double own = spsim_ring_tail_s(op, g.size, size_bytes, hbm);
    if (b == SPSIM_COLL_COUNT)
        return own;
    double same_bytes =
        size_bytes * spsim_wire_fraction(op, g.size) / spsim_wire_fraction(b, g.size);
    return own - spsim_ring_tail_s(b, g.size, same_bytes, hbm);
}

static bool
tuner_collective(enum spsim_coll_op op, struct spsim_group g)
{
    return g.size > 1 && (op == SPSIM_COLL_ALL_REDUCE || op == SPSIM_COLL_ALL_GATHER ||
                          op == SPSIM_COLL_REDUCE_SCATTER);
}

static const struct spsim_nccl_comm *tuned(const struct spsim_hardware *hw,
                                           enum spsim_nccl_func func, uint32_t n, uint32_t nodes);

/* NCCL's choice for a group spanning domains; Ring/Simple if nothing is enabled. */
static struct spsim_nccl_choice
spanning_algo(const struct spsim_hardware *hw, enum spsim_coll_op op, struct spsim_group g,
              double size_bytes)
{
    struct spsim_nccl_choice ch;
    if (!spsim_nccl_choose(tuned(hw, nccl_func(op), g.size, g.size / g.per_domain), size_bytes,
                           &ch))
        ch = (struct spsim_nccl_choice){SPSIM_NCCL_RING, SPSIM_NCCL_SIMPLE, 0};
    return ch;
}

struct spsim_nccl_choice
spsim_collective_algo(const struct spsim_hardware *hw, enum spsim_coll_op op, struct spsim_group g,
                      double size_bytes)
{
    struct spsim_nccl_choice ch = {SPSIM_NCCL_ALGO_COUNT, SPSIM_NCCL_SIMPLE, 0};
    if (!tuner_collective(op, g))
        return ch;
    if (g.per_domain < g.size)
        return spanning_algo(hw, op, g, size_bytes);
    ch = domain_algo(hw, op, g);
    if (ch.algo == SPSIM_NCCL_NVLS)
        return ch;
    /* The ring's protocol from NCCL's tuner on one node (NCCL's tree loses there). */
    struct spsim_nccl_comm c;
    spsim_nccl_comm_from_hw(hw, g.size, 1, &c);
    for (int a = 0; a < SPSIM_NCCL_ALGO_COUNT; a++)
        c.algo_off[a] = a != SPSIM_NCCL_RING;
    spsim_nccl_tune(&c, nccl_func(op));
    if (!spsim_nccl_choose(&c, size_bytes, &ch))
        ch = (struct spsim_nccl_choice){SPSIM_NCCL_RING, SPSIM_NCCL_SIMPLE, 0};
    return ch;
}

/*
 * The tuned communicator of a group spanning domains, remembered per thread: the sweep times
 * the same few groups millions of times, and the table depends only on what the key holds
 * (everything spsim_nccl_comm_from_hw reads), so a hit is exactly what tuning again gives.
 */
struct tuned_comm {
    bool used;
    enum spsim_nccl_func func;
    uint32_t nranks, nnodes, nics_per_node, gpus_per_node;
    double nvlink_line_Bps, nic_line_Bps;
    char gpu_model[64];
    struct spsim_nccl_comm comm;
    bool nvls_absent;
};

static const struct spsim_nccl_comm *
tuned(const struct spsim_hardware *hw, enum spsim_nccl_func func, uint32_t n, uint32_t nodes)
{
    enum { SLOTS = 4 };
    static _Thread_local struct tuned_comm cache[SLOTS];
    static _Thread_local unsigned next;
    const char *model = hw->gpu_model ? hw->gpu_model : "";
    bool cacheable = strlen(model) < sizeof(cache[0].gpu_model);
    for (unsigned i = 0; i < SLOTS && cacheable; i++) {
        const struct tuned_comm *t = &cache[i];
        if (t->used && t->func == func && t->nranks == n && t->nnodes == nodes &&
            t->nics_per_node == hw->nics_per_node && t->gpus_per_node == hw->gpus_per_node &&
            t->nvlink_line_Bps == hw->nvlink_line_Bps && t->nic_line_Bps == hw->nic_line_Bps &&
            t->nvls_absent == hw->nvls_absent && strcmp(t->gpu_model, model) == 0)
            return &t->comm;
    }
    struct tuned_comm *t = &cache[cacheable ? next++ % SLOTS : 0];
    *t = (struct tuned_comm){true,
                             func,
                             n,
                             nodes,
                             hw->nics_per_node,
                             hw->gpus_per_node,
                             hw->nvlink_line_Bps,
                             hw->nic_line_Bps,
                             {0},
                             {0},
                             hw->nvls_absent};
    if (cacheable)
        memcpy(t->gpu_model, model, strlen(model) + 1);
    else
        t->used = false;
    spsim_nccl_comm_from_hw(hw, n, nodes, &t->comm);
    spsim_nccl_tune(&t->comm, func);
    return &t->comm;
}

static double
log2_floor(uint32_t x)
{
    double r = 0;
    while (x >= 2) {
        x /= 2;
        r++;
    }
    return r;
}

void
spsim_collective_latency_parts(const struct spsim_hardware *hw, enum spsim_coll_op op,
                               struct spsim_group g, enum spsim_nccl_algo a, double *k,
                               double *fixed_s)
{
    uint32_t steps = spsim_ring_steps(op, g.size);
    uint32_t nodes = g.per_domain ? g.size / g.per_domain : 1;
    *fixed_s = 0;
    if (spsim_group_tier(hw, g) == SPSIM_TIER_NVLINK) {
        *k = steps;
    } else if (a == SPSIM_NCCL_TREE) {
        /* tuning.cc:414-417: base + 2((ppn − 1)·intraLat + log2(nNodes)·interLat). */
        *k = 2 * log2_floor(nodes);
        *fixed_s = 2.0 * (g.per_domain - 1) * hw->nvlink.hop_latency_s;
    } else if (a == SPSIM_NCCL_NVLS_TREE) {
        /* tuning.cc:425-426: intraLat + 2·log2(nNodes)·interLat, the double binary tree of the
         * NVLS heads (connect.cc:272-317, ncclGetDtree) up and down; inside the node one hop
         * to the NVSwitch, which reduces, and one back as it multicasts. */
        *k = 2 * log2_floor(nodes);
        *fixed_s = 2.0 * hw->nvlink.hop_latency_s;
    } else if (a == SPSIM_NCCL_PAT) {
        /* tuning.cc:429-434: base + log2(nNodes)·interLat/3.5 + 2.8 µs·nRanks. */
        *k = log2_floor(nodes) / 3.5;
        *fixed_s = 2.8e-6 * g.size;
    } else {
        uint32_t inter = spsim_inter_steps(op, g);
        *k = inter;
        *fixed_s = (steps - inter) * hw->nvlink.hop_latency_s;
    }
}

double
spsim_collective_algo_latency_s(const struct spsim_hardware *hw, enum spsim_coll_op op,
                                struct spsim_group g, enum spsim_nccl_algo a)
{
    if (a != SPSIM_NCCL_TREE && a != SPSIM_NCCL_PAT && a != SPSIM_NCCL_NVLS_TREE)
        return spsim_collective_latency_s(hw, op, g);
    double k, fixed;
    spsim_collective_latency_parts(hw, op, g, a, &k, &fixed);
    return hw->network.base_latency_s + k * hw->network.hop_latency_s + fixed;
}

/*
 * busbw (wire bytes 2(n−1)/n·S per rank over time) of a group spanning N = n/ppn domains under
 * algorithm a. A ring's NIC traffic per domain is one rank's ring traffic; NCCL's double binary
 * tree (trees.cc ncclGetDtree, each tree carrying half the data up and down its N − 1 edges)
 * sends 2(N − 1)/N·S through a domain's NICs, and each GPU of the in-domain chain forwards S up
 * and S down (2S on its NVLink against the ring's 2(n − 1)/n·S). PAT moves the ring's bytes.
 * NVLSTree runs the same double binary tree
 * over the nodes between the NVLS heads, one per NIC, each carrying 1/ppn of the data
 * (connect.cc:272-317), so a domain's NICs carry the tree's 2(N − 1)/N·S. NCCL's own time
 * applies its tree correction to NVLSTree on sm100+ (tuning.cc:643-646), its stand-in for the
 * medium-size shortfall that spsim models as NVLSTree's pipeline fill (nvls_tree_fill_s), so
 * it is not applied here: both would count it twice.
 */
static double
spanning_nic_bw(struct spsim_group g, struct spsim_nccl_choice ch, double size, double nic_bw)
{
    if (ch.algo == SPSIM_NCCL_TREE || ch.algo == SPSIM_NCCL_NVLS_TREE) {
        double n = g.size, N = (double)g.size / g.per_domain;
        return nic_bw * N * (n - 1) / (n * (N - 1)) *
               (ch.algo == SPSIM_NCCL_TREE ? spsim_nccl_tree_correction(ch.proto, size) : 1.0);
    }
    return nic_bw; /* PAT's 0.75 is among NCCL's refinements (spanning_refine) */
}

/* A tree also runs at NCCL's treeCorrectionFactor of its size, NCCL's own measurement of how
 * far trees fall short at medium sizes (tuning.cc:621-641). NVLSTree's NVLink side is an NVLS
 * AllReduce of the node's ppn GPUs (2(ppn − 1)/ppn·S at the profile's NVLS busbw, nv_bw),
 * expressed against the group's wire 2(n − 1)/n·S. */
static double
spanning_bw(struct spsim_group g, struct spsim_nccl_choice ch, double size, double nv_bw,
            double nic_bw)
{
    nic_bw = spanning_nic_bw(g, ch, size, nic_bw);
    if (ch.algo == SPSIM_NCCL_TREE)
        nv_bw *= (g.size - 1.0) / g.size * spsim_nccl_tree_correction(ch.proto, size);
    if (ch.algo == SPSIM_NCCL_NVLS_TREE)
        nv_bw *= (g.size - 1.0) * g.per_domain / ((double)g.size * (g.per_domain - 1));
    return g.per_domain == 1 ? nic_bw : spsim_min_d(nv_bw, nic_bw);
}

/*
 * The protocol's share of the bandwidth across domains, as NCCL's tuner states it
 * (spsim_nccl_refine_bus): the LL protocols carry flags beside the data (LL: 8 of every 16
 * bytes, Ring at most llMaxBw, Tree /3.8; LL128: 120 of 128), trees and rings reach at most
 * NCCL's measured per-channel maxima, PAT 0.75 of the ring. `busbw` is spsim's (wire
 * 2(n − 1)/n·S per rank for AllReduce); NCCL's bus bandwidth is the same figure for rings,
 * PAT and NVLSTree (algBw = bus·nRanks/nsteps) and n/(n − 1) of it for a tree (algBw =
 * bus/2). NCCL's maxima are its estimate of what a channel reaches; a network curve measured
 * on the machine for `op` says what it reaches there (the Snellius log's tree exceeds the
 * 41.4 GB/s per channel NCCL's table gives Hopper), so with one only the factors apply.
 */
static double
spanning_refine(const struct spsim_hardware *hw, enum spsim_coll_op op, struct spsim_group g,
                struct spsim_nccl_choice ch, double busbw)
{
    if (ch.algo == SPSIM_NCCL_ALGO_COUNT)
        return busbw;
    const struct spsim_nccl_comm *c = tuned(hw, nccl_func(op), g.size, g.size / g.per_domain);
    double tree = ch.algo == SPSIM_NCCL_TREE ? (double)g.size / (g.size - 1) : 1.0;
    bool maxima = hw->network.curve[op] == NULL;
    return spsim_nccl_refine_bus(c, ch.algo, ch.proto, busbw * tree / 1e9, maxima) * 1e9 / tree;
}

/*
 * What a protocol adds to the α across domains. The profile's latencies are those of LL (the
 * protocol of the small messages they were measured or chosen on); NCCL's own table
 * (tuning.cc:149-176) gives LL128 and Simple longer per-step latencies (Simple: a network
 * step 14 µs against LL's 2.7, an NVLink step 3.4 against 0.6, and the ring's ×1.4 plateau
 * for large multi-node AllReduces, :647-650), the cost of their larger steps and flag
 * handshakes; the difference of NCCL's latencies for the chosen protocol and LL is added to
 * the profile's. Rings and trees only: NVLSTree and PAT have Simple alone.
 */
static double
protocol_latency_s(const struct spsim_hardware *hw, enum spsim_coll_op op, struct spsim_group g,
                   struct spsim_nccl_choice ch, double size)
{
    if ((ch.algo != SPSIM_NCCL_RING && ch.algo != SPSIM_NCCL_TREE) || ch.proto == SPSIM_NCCL_LL)
        return 0;
    const struct spsim_nccl_comm *c = tuned(hw, nccl_func(op), g.size, g.size / g.per_domain);
    double d = spsim_nccl_latency_us(c, ch.algo, ch.proto, size) -
               spsim_nccl_latency_us(c, ch.algo, SPSIM_NCCL_LL, size);
    return d > 0 ? d * 1e-6 : 0;
}

/*
 * NVLSTree's pipeline fill. NCCL moves the message in chunks, `ops` of them in flight at once
 * (spsim_nccl_nvls_tree_split: the NVLS CTAs times the heads), each sharing the collective's
 * bandwidth; a chunk passes 2 + 2·log2(N) stages in order (the NVLS reduce on its node, log2 N
 * levels up the double binary tree of the heads, log2 N down, the NVLS multicast), each taking
 * it chunk·ops/algBw at the shared rate. The last stage starts (1 + 2·log2 N) stage times
 * after the first: time = α + S/algBw + (1 + 2·log2 N)·c·ops/algBw, c the chunk, or S/ops when
 * the message is less than one chunk per op. `alg_Bps` is the bandwidth without the size's
 * measured efficiency, which this term replaces for NVLSTree.
 */
static double
nvls_tree_fill_s(const struct spsim_hardware *hw, struct spsim_group g, double size, double alg_Bps)
{
    uint32_t nodes = g.size / g.per_domain, ops;
    double chunk;
    spsim_nccl_nvls_tree_split(tuned(hw, SPSIM_NCCL_ALL_REDUCE, g.size, nodes), size, &ops, &chunk);
    double c = spsim_min_d(chunk, size / ops);
    return (1 + 2 * log2_floor(nodes)) * c * ops / alg_Bps;
}

/* The bandwidth (eff = 1 on the network) and the α a spanning group's collective has at a
 * size: the algorithm's NVLink and NIC sides (NVLSTree's NVLink side at its peak, the fill
 * standing for its size), NCCL's protocol share, the protocol's latency and NVLSTree's fill. */
static void
spanning_terms(const struct spsim_hardware *hw, enum spsim_coll_op op, struct spsim_group g,
               struct spsim_nccl_choice ch, double size, double eff_nv, double nic_share,
               double *latency_s, double *bw)
{
    bool nvls_tree = ch.algo == SPSIM_NCCL_NVLS_TREE;
    double nv =
        nvls_tree ? hw->nvlink.busbw_Bps[op] : spsim_nvlink_peak_Bps(hw, op, g.per_domain) * eff_nv;
    *bw = spanning_refine(
        hw, op, g, ch,
        spanning_bw(g, ch, size, nv, spsim_collective_nic_bw(hw, op, g, 1, nic_share)));
    *latency_s = spsim_collective_algo_latency_s(hw, op, g, ch.algo) +
                 protocol_latency_s(hw, op, g, ch, size);
    if (nvls_tree && *bw > 0)
        *latency_s += nvls_tree_fill_s(hw, g, size, *bw / spsim_wire_fraction(op, g.size));
}

void
spsim_collective_terms(const struct spsim_hardware *hw, enum spsim_coll_op op, struct spsim_group g,
                       double size_bytes, double *latency_s, double *peak_Bps)
{
    struct spsim_nccl_choice ch = spsim_collective_algo(hw, op, g, size_bytes);
    if (spsim_group_tier(hw, g) == SPSIM_TIER_NVLINK) {
        *latency_s = spsim_collective_algo_latency_s(hw, op, g, ch.algo);
        *peak_Bps = spsim_nvlink_peak_Bps(hw, op, g.per_domain);
        return;
    }
    double eff_nv = 1;
    if (spsim_curve_eval(hw->nvlink.curve[op], size_bytes, &eff_nv) != SPSIM_OK)
        eff_nv = 1;
    spanning_terms(hw, op, g, ch, size_bytes, eff_nv, 1.0, latency_s, peak_Bps);
}

/* The bytes each rank puts on its NVLink port and its share of the domain's NIC traffic. */
static void
traffic(enum spsim_coll_op op, struct spsim_group g, double size_bytes, enum spsim_nccl_algo a,
        struct spsim_coll_time *out)
{
    double n = g.size, wire = out->wire_bytes;
    if (out->tier == SPSIM_TIER_NVLINK) {
        out->nvlink_bytes = wire;
        return;
    }
    if (a == SPSIM_NCCL_TREE || a == SPSIM_NCCL_NVLS_TREE) {
        double N = n / g.per_domain, ppn = g.per_domain;
        out->network_bytes = 2 * (N - 1) / N * size_bytes / ppn;
        /* the chain forwards S up and S down; NVLS reduces and multicasts through the switch */
        out->nvlink_bytes =
            ppn <= 1 ? 0 : (a == SPSIM_NCCL_TREE ? 2 : 2 * (ppn - 1) / ppn) * size_bytes;
        return;
    }
    out->network_bytes =
        op == SPSIM_COLL_ALL_TO_ALL ? size_bytes * (n - g.per_domain) / n : wire / g.per_domain;
    out->nvlink_bytes = g.per_domain > 1 ? wire : 0;
}

int
spsim_collective_time(const struct spsim_hardware *hw, enum spsim_coll_op op, struct spsim_group g,
                      double size_bytes, double nic_share, struct spsim_coll_time *out)
{
    memset(out, 0, sizeof(*out));
    out->tier = spsim_group_tier(hw, g);
    out->algo = SPSIM_NCCL_ALGO_COUNT;
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

    struct spsim_nccl_choice ch = {SPSIM_NCCL_ALGO_COUNT, SPSIM_NCCL_SIMPLE, 0};
    if (tuner_collective(op, g))
        ch = out->tier == SPSIM_TIER_NVLINK ? domain_algo(hw, op, g)
                                            : spanning_algo(hw, op, g, size_bytes);
    out->algo = ch.algo;
    out->proto = ch.proto;
    double bw = spsim_nvlink_peak_Bps(hw, op, g.per_domain) * eff_nv;
    double latency = spsim_collective_algo_latency_s(hw, op, g, ch.algo);
    if (out->tier != SPSIM_TIER_NVLINK) {
        /* A network curve's efficiency is taken against the whole spanning bandwidth
         * (spsim_collective_terms), so it scales all of it. */
        spanning_terms(hw, op, g, ch, size_bytes, eff_nv, nic_share, &latency, &bw);
        bw *= eff_net;
    }
    out->wire_bytes = wire;
    traffic(op, g, size_bytes, ch.algo, out);
    if (!(bw > 0) || !isfinite(bw))
        return SPSIM_ENUMERIC;
    out->latency_s = latency;
    out->bandwidth_Bps = bw;
    if (out->tier == SPSIM_TIER_NVLINK && ch.algo == SPSIM_NCCL_RING)
        out->tail_s = spsim_ring_tail_extra_s(hw, op, g, size_bytes);
    out->time_s = latency + wire / bw + out->tail_s;
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
        return spsim_fail(err, SPSIM_EINVAL, "%s: %u GPUs per node, but a %s node has %u", what,
                          per_node, SPSIM_Q(hw->name), hw->gpus_per_node);
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
    if (t.proto == SPSIM_NCCL_PROTO_COUNT)
        t.proto = spsim_collective_algo(hw, op, g, (double)size_bytes).proto;
    bool p2p = t.algo == SPSIM_NCCL_ALGO_COUNT;
    out->algorithm = p2p ? "P2P" : spsim_nccl_algo_name(t.algo);
    out->protocol = p2p ? "" : spsim_nccl_proto_name(t.proto);
    return SPSIM_OK;
}
