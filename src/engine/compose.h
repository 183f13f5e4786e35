/*
 * The composition's private interface: what the files composing a result from a layer summary
 * share (evaluate.c composes; memory.c, comm.c, pipeline_time.c, dp_time.c each own one concern;
 * coll_memo.c remembers collective predictions). The shape of a configuration, one stage's per
 * micro-batch time, and the small rank helpers every concern reads, inline so that each file
 * calls no other for them.
 */
#ifndef SPSIM_COMPOSE_H
#define SPSIM_COMPOSE_H

#include <stddef.h>
#include <string.h>

#include "eval.h"
#include "moe.h"
#include "stages.h"

/* Everything the composition derives from the configuration before folding. */
/* d is the data-parallel size (it sets the micro-batches), dc = d·c the group gradients are
 * reduced over and the optimizer is sharded over (Megatron's intra_dp_cp_group). */
struct shape {
    uint64_t L, p, v, d, t, micro, c, dc;
    /* HSDP (--num-distributed-optimizer-instances R): the dc ranks split into R replicas of
     * di = dc/R consecutive ranks (parallel_state.py's intra_partial_dp groups), what the
     * sharding and the inner collectives span; R = 1, di = dc without it. */
    uint64_t R, di;
    uint64_t lps, lpc; /* the most layers a rank, and a model chunk, builds */
    const struct spsim_stage_plan *plan;
    /* Ranks 0, 1 and p − 1 (the candidates without a layout): layers built and in flight,
     * computed once per configuration. */
    uint64_t built[3], held[3];
    /* Mixture of experts: the expert data-parallel size (edp; dc for a dense model), its part
     * in one HSDP replica (edi = edp / R, the intra-partial expert data-parallel group the
     * experts' buffers shard over; edp without HSDP), whether dense layers mix with the MoE
     * ones (their count per rank from the model), and all of them. */
    bool moe, mixed;
    uint64_t edp, edi, dense_total, ep_group; /* ep_group: ranks of the widest dispatch group */
    const struct spsim_model *model;
    /* first_last_layers_bf16 on a dense model (bf16_layers.c): mixed too, the second kind of
     * layer (le->dense, rank_dense, dense_total) being the BF16 one; every rank a candidate. */
    bool bf16;
    /* A hybrid model (shape.hybrid_pattern): mixed too, its layers counted by kind per rank
     * (rank_kind) and its MTP depths by the MTP pattern's kinds (mtp_kind). */
    bool hybrid;
    /* The pipeline schedule (pp_schedule.c); DualPipe's rank r also holds stage p − 1 − r. */
    enum spsim_pp_schedule schedule;
};

/* The sharding level: --zero, or 1 for the distributed optimizer alone. */
static inline uint32_t
zero_level(const struct spsim_parallel *par)
{
    return par->zero > 0 ? par->zero : (par->distributed_optimizer ? 1u : 0u);
}

/* The ranks the optimizer state is sharded over: the replica's di, or all dc with Megatron-FSDP's
 * outer optimizer sharding (HFSDP: the main weight buffer and its optimizer state over the
 * DP-Outer × DP-Shard group, megatron_fsdp/param_and_grad_buffer.py @d98e8a64). */
static inline uint64_t
opt_ranks(const struct spsim_parallel *par, const struct shape *x)
{
    return par->outer_dp_shard && x->R > 1 ? x->dc : x->di;
}

/* The ranks the routed experts' optimizer state is sharded over: the replica's edi = edp / R,
 * or all edp with the outer sharding (HFSDP: the experts' main weight buffer over
 * get_dp_group(is_expert_parallel=True), the full expert data-parallel group,
 * megatron_fsdp/param_and_grad_buffer.py:2594-2603 and utils.py:686-694 @d98e8a64). */
static inline uint64_t
expert_opt_ranks(const struct spsim_parallel *par, const struct shape *x)
{
    return par->outer_dp_shard && x->R > 1 ? x->edp : x->edi;
}

/* Bytes per parameter of the gradient buffer: fp32 main gradients, or the parameter dtype
 * (arguments.py: bf16 training accumulates and reduces in fp32 unless --grad-reduce-in-bf16;
 * fp16 training keeps fp16 gradients). */
static inline uint64_t
grad_bytes(const struct spsim_parallel *par)
{
    /* --main-grads-dtype bf16 (precision-aware optimizer) turns Megatron's automatic fp32
     * accumulation off (arguments.py: only when main_grads_dtype is fp32). */
    bool fp32 = par->grad_reduce_in_fp32 < 0
                    ? par->dtype != SPSIM_DTYPE_FP16 && par->main_grads_dtype == SPSIM_OPT_FP32
                    : par->grad_reduce_in_fp32 == 1;
    return fp32 ? 4 : 2;
}

static inline uint64_t
ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* Index of rank r in the shape's cache, or -1 (a layout's other ranks). */
static inline int
cached(const struct shape *x, uint64_t r)
{
    if (r == x->p - 1)
        return 2;
    return r == 0 ? 0 : r == 1 && !x->plan->nlayout ? 1 : -1;
}

static inline uint64_t
rank_built(const struct shape *x, uint64_t r)
{
    int i = cached(x, r);
    return i >= 0 ? x->built[i] : spsim_stage_rank_layers(x->plan, (uint32_t)r);
}

static inline uint64_t
rank_held(const struct shape *x, uint64_t r)
{
    int i = cached(x, r);
    return i >= 0 ? x->held[i] : spsim_stage_inflight_layers(x->plan, (uint32_t)r, x->micro);
}

/*
 * Multi-token prediction (transformer/multi_token_prediction.py MultiTokenPredictionBlock, on
 * the last pipeline stage): each of the D depths runs the embedding of the shifted tokens (the
 * model's embedding block), its own rows (enorm, hnorm, eh_proj: le->mtp), one transformer
 * layer of the last decoder layer's kind (MoE if that one is: training.py counts it so) and
 * the shared output head with its own loss (the output block).
 */
static inline const struct spsim_block_totals *
mtp_layer(const struct spsim_layer_summary *le, const struct shape *x)
{
    bool dense = x->moe && x->mixed && !spsim_model_layer_is_moe(x->model, (uint32_t)x->L - 1);
    return dense ? &le->dense : &le->layer; /* MTP layers run quantized (bf16_layers.c) */
}

/* Dense layers of an MoE model that pipeline rank r builds (0 when every layer is alike). */
static inline uint64_t
rank_dense(const struct shape *x, uint64_t r)
{
    return x->mixed ? spsim_moe_rank_dense_layers(x->model, x->plan, (uint32_t)r) : 0;
}

/* A hybrid model's layers of kind k on pipeline rank r (its chunks' pattern symbols), and of one
 * MTP depth; the depths' weights once when they share them (mtp_shared). */
static inline uint64_t
rank_kind(const struct shape *x, uint64_t r, enum spsim_layer_kind k)
{
    return spsim_hybrid_rank_layers(x->model, x->plan, (uint32_t)r, k);
}

static inline uint64_t
mtp_kind(const struct shape *x, enum spsim_layer_kind k)
{
    return spsim_hybrid_count(x->model->shape.mtp_pattern, k);
}

static inline uint64_t
mtp_weight_depths(const struct shape *x)
{
    const struct spsim_model_shape *m = &x->model->shape;
    return m->mtp_shared ? (m->mtp_layers > 0) : m->mtp_layers;
}

/* MoE layers of pipeline rank r: its decoder layers less the dense ones, and on the last rank
 * the MTP depths when their layer is an MoE layer (a hybrid model's: its 'E' layers, and the
 * MTP depths' with weights of their own). */
static inline uint64_t
rank_moe_layers(const struct spsim_layer_summary *le, const struct shape *x, uint64_t r)
{
    if (x->hybrid)
        return rank_kind(x, r, SPSIM_LAYER_MOE) +
               (r == x->p - 1 ? mtp_weight_depths(x) * mtp_kind(x, SPSIM_LAYER_MOE) : 0);
    uint64_t layers = rank_built(x, r) - rank_dense(x, r);
    if (r == x->p - 1 && le->params_mtp && mtp_layer(le, x) == &le->layer) /* MoE MTP layers */
        layers += x->model->shape.mtp_layers;
    return layers;
}

/* The parameters of pipeline rank r outside its transformer layers, Megatron-FSDP's root unit
 * (mcore_fsdp_adapter.py: the FSDP units are TransformerLayer, MoETransformerLayer, MambaLayer):
 * the embedding on rank 0; on rank p − 1 the output layer, past rank 0 a tied or MTP copy of
 * the word embedding, and the MTP depths' own rows (enorm, hnorm, eh_proj: their transformer
 * layer is a unit). */
static inline uint64_t
rank_root_embedding(const struct spsim_layer_summary *le, uint64_t r)
{
    return r == 0 ? le->params_embedding : 0;
}

static inline uint64_t
rank_root_output(const struct spsim_model_shape *m, const struct spsim_layer_summary *le,
                 const struct shape *x, uint64_t r, bool *ok)
{
    if (r != x->p - 1)
        return 0;
    uint64_t n = le->params_output;
    if (x->p > 1 && (m->tied_embeddings || m->mtp_layers))
        n = spsim_add(n, spsim_mul(le->padded_vocab, m->hidden, ok) / x->t, ok);
    return spsim_add(n, spsim_mul(m->mtp_layers, le->params_mtp, ok), ok);
}

/* The ranks that can be the most loaded: with BF16 first/last layers every rank, in order (a
 * middle rank may hold BF16 layers of both ends through its interleaved chunks, and its BF16
 * layers follow from its chunks' global indices); else `n` of spsim_stage_candidate's. */
static inline uint32_t
candidate_count(const struct shape *x, uint32_t n)
{
    return x->bf16 ? (uint32_t)x->p : n;
}

static inline uint32_t
candidate_rank(const struct shape *x, uint32_t i)
{
    return x->bf16 ? i : spsim_stage_candidate(x->plan, i);
}

/* Per micro-batch work of one stage: its layers plus the embedding or output block. */
struct stage_time {
    double wall, fwd, bwd, rec, exposed, bwd_window, tp_comm, fwd_wall, cp_exposed, cp_comm,
        offload, wgrad;
    uint64_t layers;
};

/* Busy time of the links, summed addition by addition (the bits depend on the order), the
 * additions logged so that a memo can replay a stage's in order (SPSIM_BUSY_LOG at most). */
#define SPSIM_BUSY_LOG 16
struct busy {
    double nv, net;
    uint32_t n;
    bool nvlink[SPSIM_BUSY_LOG];
    double add[SPSIM_BUSY_LOG];
};

static inline void
busy_add(struct busy *b, bool nvlink, double seconds)
{
    *(nvlink ? &b->nv : &b->net) += seconds;
    if (b->n < SPSIM_BUSY_LOG) {
        b->nvlink[b->n] = nvlink;
        b->add[b->n] = seconds;
    }
    b->n++;
}

/* A memo key's slot among 2^bits (Fibonacci hashing of its words). */
static inline uint64_t
memo_hash(const uint64_t *key, size_t n, unsigned bits)
{
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = (h ^ key[i]) * 0x9E3779B97F4A7C15ull;
    return h >> (64 - bits);
}

static inline uint64_t
memo_bits(double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits)); /* the same bits, not ==: -0 and NaN stay apart */
    return bits;
}

/* Whether two configurations are equal but for their batch, which the memory and
 * synchronisation memos do not read (they compare the rest in place, padding included, as a
 * copy with gbs cleared compared). */
static inline bool
memo_par_equal(const struct spsim_parallel *a, const struct spsim_parallel *b)
{
    const size_t at = offsetof(struct spsim_parallel, gbs), end = at + sizeof(a->gbs);
    return memcmp(a, b, at) == 0 &&
           memcmp((const char *)a + end, (const char *)b + end, sizeof(*a) - end) == 0;
}

#define SPSIM_CRIT_MEMO_KEY    8
#define SPSIM_CRIT_MEMO_BITS   6
#define SPSIM_CRIT_MEMO_SLOTS  (1u << SPSIM_CRIT_MEMO_BITS)
#define SPSIM_MEM_MEMO_KEY     14
#define SPSIM_MEM_MEMO_HASHED  8
#define SPSIM_MEM_MEMO_BITS    6
#define SPSIM_MEM_MEMO_SLOTS   (1u << SPSIM_MEM_MEMO_BITS)
#define SPSIM_SYNC_MEMO_KEY    24
#define SPSIM_SYNC_MEMO_HASHED 8 /* the words of the key the slot is chosen by */
#define SPSIM_SYNC_MEMO_BITS   7
#define SPSIM_SYNC_MEMO_SLOTS  (1u << SPSIM_SYNC_MEMO_BITS)
#define SPSIM_STEP_MEMO_KEY    10
#define SPSIM_STEP_MEMO_BITS   6
#define SPSIM_STEP_MEMO_SLOTS  (1u << SPSIM_STEP_MEMO_BITS)

/* One pipeline rank's optimizer step on the host (opt_host.c): the parameter tensors it holds,
 * the tensors its optimizer steps (its shard's), the host time up to train_step's wait and,
 * but on the last rank, whose loss average reads the micro-batch count, after it. */
struct spsim_opt_rank_counts {
    double held, step_tensors, step_s, after_s;
};

/*
 * The composition's memos, one per sweep worker (spsim_coll_memo_create). Remembered collective
 * predictions: the sweep composes millions of configurations whose data-parallel,
 * point-to-point and embedding collectives repeat. A direct-mapped table keyed by every input
 * of spsim_collective_time(), so a hit returns exactly what a call would. And the stages of
 * the composition that repeat while a sweep's inner axes (batch size, sharding, overlaps) move,
 * each keyed by every input it reads, the layer summary by its id.
 */
#define SPSIM_COLL_MEMO_SLOTS 4096
#define SPSIM_MAXMIN_MEMO_KEY 15 /* flow count, two capacities, four flows' three inputs */
struct spsim_coll_memo {
    struct spsim_coll_memo_slot {
        const struct spsim_hardware *hw; /* NULL: empty */
        uint32_t op, size, per_domain;
        double bytes;
        struct spsim_coll_time out;
    } slot[SPSIM_COLL_MEMO_SLOTS];
    /* The data-parallel reduction's finish time under link sharing (64 slots). */
    struct spsim_maxmin_memo_slot {
        bool used;
        double key[SPSIM_MAXMIN_MEMO_KEY];
        double finish;
    } maxmin[64];
    /* The send between stages and the critical stage of an even split (pipeline_time.c
     * pipeline_stages). */
    struct spsim_crit_memo_slot {
        bool used;
        uint64_t key[SPSIM_CRIT_MEMO_KEY];
        uint32_t best;
        double avg, t_send;
        struct stage_time crit;
    } crit[SPSIM_CRIT_MEMO_SLOTS];
    /* The memory report of an even split (memory.c spsim_compose_memory). */
    struct spsim_mem_memo_slot {
        bool used;
        uint64_t key[SPSIM_MEM_MEMO_KEY];
        struct spsim_parallel par; /* the configuration (its batch not compared) */
        struct spsim_memory_report mem;
    } mem[SPSIM_MEM_MEMO_SLOTS];
    /* The data-parallel and synchronisation terms of an iteration (pipeline_time.c
     * sync_terms_memo): their lines and their additions to the links' busy time, in order. */
    struct spsim_sync_memo_slot {
        bool used;
        uint32_t dp_buckets, nbusy;
        uint64_t key[SPSIM_SYNC_MEMO_KEY];
        struct spsim_parallel par; /* the configuration (its batch not compared: sync_key) */
        double dp_exposed_s, param_gather_exposed_s, tied_embedding_allreduce_s,
            fp8_amax_allreduce_s, moe_expert_bias_allreduce_s, optimizer_s;
        bool busy_nvlink[SPSIM_BUSY_LOG];
        double busy_add[SPSIM_BUSY_LOG];
    } sync[SPSIM_SYNC_MEMO_SLOTS];
    /* training_log's two one-element AllReduces (log_host.c), the last groups' */
    struct spsim_log_memo {
        const struct spsim_hardware *hw; /* NULL: empty */
        uint64_t mp, stride, world;
        double t_mp, t_world;
    } log;
    /* The optimizer step's host time of ranks 0, 1 and p − 1 (opt_host.c step_counts_memo):
     * it reads the stage plan, ep, the sharding and the flags, not the batch, mbs or the
     * layer's other settings. */
    struct spsim_opthost_memo_slot {
        bool used;
        uint64_t key[SPSIM_STEP_MEMO_KEY];
        struct spsim_opt_rank_counts rank[3];
    } opthost[SPSIM_STEP_MEMO_SLOTS];
};

/* Memory per GPU (memory.c): the stages' weights, gradients, optimizer state and activations
 * (through the memo when there is one). */
int spsim_compose_memory(struct spsim_coll_memo *memo, const struct spsim_model_shape *m,
                         const struct spsim_hardware *hw, const struct spsim_parallel *par,
                         const struct spsim_layer_summary *le, const struct shape *x,
                         struct spsim_memory_report *mem, bool *ok);

/* Communication volumes (comm.c): TP, CP, EP, DP and PP bytes per rank and their tiers. */
void spsim_compose_comm(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                        const struct spsim_layer_summary *le, const struct shape *x,
                        uint32_t hidden, const struct spsim_memory_report *mem,
                        struct spsim_comm_report *comm, bool *ok);
/* The bytes `layers` layers' data-parallel gather saves with --fp8-param-gather. */
uint64_t spsim_fp8_gather_saved(const struct spsim_parallel *par,
                                const struct spsim_layer_summary *le, uint64_t layers);

/* Collective predictions through the sweep's memo (coll_memo.c); memo may be NULL. */
int spsim_memo_time(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                    enum spsim_coll_op op, struct spsim_group g, double bytes,
                    struct spsim_coll_time *out);
int spsim_memo_maxmin(struct spsim_coll_memo *memo, const double cap[2], struct spsim_flow *flows,
                      uint32_t n, double *finish);
int spsim_memo_collective(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                          enum spsim_coll_op op, uint32_t size, uint64_t stride, double bytes,
                          struct spsim_coll_time *out);

/* The training loop's host work beyond opt_host.c's: training_log and the pipeline's blocking
 * transfers (log_host.c). */
double spsim_p2p_host_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                        const struct shape *x, double t_send);
int spsim_log_host(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                   const struct spsim_parallel *par, const struct shape *x,
                   struct spsim_time_report *tr);

/* Data parallelism, the iteration's gradient synchronisations and the optimizer step
 * (dp_time.c). */
uint64_t spsim_bucket_params(const struct spsim_parallel *par, const struct shape *x);
int spsim_dp_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                     const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                     const struct shape *x, const struct spsim_comm_report *comm,
                     const struct spsim_memory_report *mem, const struct stage_time *crit,
                     double t_send, struct spsim_time_report *tr, struct busy *busy);
/** The computation's slowdown beside `busy` s of data-parallel collectives, `exposed` of them
 * shown (NCCL's channels hold their SMs; dp_time.c). */
double spsim_dp_beside_compute_s(const struct spsim_hardware *hw, double busy, double exposed);
int spsim_expert_dp_exposed(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                            const struct spsim_parallel *par, const struct shape *x,
                            const struct spsim_comm_report *comm, const struct stage_time *crit,
                            double *exposed, double *outer_s, struct busy *busy);
int spsim_tied_embedding_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                              const struct spsim_model_shape *m,
                              const struct spsim_layer_summary *le, const struct shape *x,
                              struct spsim_time_report *tr, struct busy *busy);
int spsim_fp8_amax_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                        const struct spsim_layer_summary *le, const struct shape *x,
                        const struct stage_time *crit, struct spsim_time_report *tr,
                        struct busy *busy);
int spsim_expert_bias_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                           const struct spsim_layer_summary *le, const struct shape *x,
                           struct spsim_time_report *tr, struct busy *busy);
int spsim_mla_grad_sync(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                        const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                        const struct shape *x, const struct stage_time *crit,
                        struct spsim_time_report *tr, struct busy *busy);
double spsim_optimizer_step_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                              const struct shape *x, const struct spsim_memory_report *mem);
/* The host's per-iteration optimizer step and training-loop work in eager mode (opt_host.c):
 * tr's optimizer_host_* lines, the exposed part added to iteration_s (the step's counts through
 * the memo when there is one). */
void spsim_optimizer_host(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                          const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                          const struct shape *x, const struct spsim_memory_report *mem,
                          struct spsim_time_report *tr);
/* The hybrid device optimizer's step (dp_time.c): tr's optimizer_s and optimizer_d2h/cpu/h2d. */
void spsim_offload_step_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                          const struct shape *x, const struct spsim_memory_report *mem,
                          struct spsim_time_report *tr);
/* Muon's step (dp_time.c): tr's optimizer_s and its optimizer_muon_* lines. */
int spsim_muon_step_s(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                      const struct spsim_parallel *par, const struct shape *x,
                      const struct spsim_memory_report *mem, struct spsim_time_report *tr);

/* The pipeline's time (pipeline_time.c): the stages, the critical one, bubble and sends, and
 * the iteration with the data-parallel terms. */
int spsim_compose_time(struct spsim_coll_memo *memo, const struct spsim_model *model,
                       const struct spsim_hardware *hw, const struct spsim_parallel *par,
                       const struct spsim_layer_summary *le, const struct shape *x,
                       const struct spsim_memory_report *mem, const struct spsim_comm_report *comm,
                       struct spsim_time_report *tr);

#endif
