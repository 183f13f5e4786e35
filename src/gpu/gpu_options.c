/* Calibration options, the GEMM shapes and collective sizes a calibration measures. Host-only:
 * built with and without CUDA, so that options are checked the same way in both builds. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine/eval.h"
#include "gpu_plan.h"

/* Limits of the options (doc/gpu.md). nccl-tests takes any -b/-e; the cap of 64 GiB per buffer
 * is beyond the largest GPU memory in hardware-facts.md (B200: 180 GB holds two buffers of at
 * most 90 GB) and keeps every product below 2^63. */
#define MAX_SWEEP_BYTES (64ull << 30)
/* A guard against absurd values, not a measured limit: 10^6 timed passes of a 1 GiB collective
 * would take hours. */
#define MAX_ITERS 1000000u

void
spsim_gpu_calibrate_defaults(struct spsim_gpu_calibrate_options *o)
{
    /* nccl-tests' sweep of the issue: 8 B to 1 GiB, factor 2 (-b 8 -e 1G -f 2); 5 warm-up
     * iterations (older nccl-tests printed "warmup iters: 5") and 20 timed (-n default 20). */
    *o = (struct spsim_gpu_calibrate_options){
        .gpus = 0,
        .min_bytes = 8,
        .max_bytes = 1ull << 30,
        .factor = 2,
        .warmup_iters = 5,
        .iters = 20,
        .model = NULL,
        .mbs = 1,
        .seq = 0,
        .fp8 = false,
        .mpi = spsim_gpu_mpi_launched(),
    };
}

int
spsim_gpu_calibrate_check(const struct spsim_gpu_calibrate_options *o, struct spsim_error *err)
{
    const char *what = "calibrate options";
    if (!o)
        return spsim_fail(err, SPSIM_EINVAL, "%s: NULL options", what);
    if (!(o->gpus >= 0 && o->gpus <= SPSIM_GPU_MAX_LOCAL))
        return spsim_fail(err, SPSIM_EINVAL,
                          "%s: field 'gpus': must be an integer in [0, %d] "
                          "(0 = all visible)",
                          what, SPSIM_GPU_MAX_LOCAL);
    if (!(o->min_bytes >= 1 && o->min_bytes <= o->max_bytes && o->max_bytes <= MAX_SWEEP_BYTES))
        return spsim_fail(err, SPSIM_EINVAL,
                          "%s: fields 'min_bytes', 'max_bytes': need "
                          "1 <= min_bytes <= max_bytes <= %llu",
                          what, MAX_SWEEP_BYTES);
    if (!(o->factor >= 2 && o->factor <= 1024))
        return spsim_fail(err, SPSIM_EINVAL, "%s: field 'factor': must be an integer in [2, 1024]",
                          what);
    if (!(o->iters >= 1 && o->iters <= MAX_ITERS && o->warmup_iters <= MAX_ITERS))
        return spsim_fail(err, SPSIM_EINVAL,
                          "%s: fields 'iters', 'warmup_iters': need 1 <= iters "
                          "<= %u and warmup_iters <= %u",
                          what, MAX_ITERS, MAX_ITERS);
    if (!(o->mbs >= 1 && o->mbs <= 65536 && o->seq <= (1u << 24)))
        return spsim_fail(err, SPSIM_EINVAL,
                          "%s: fields 'mbs', 'seq': need mbs in [1, 65536] and "
                          "seq in [0, 16777216] (0 = the model's)",
                          what);
    if (o->mpi && o->gpus != 0)
        return spsim_fail(err, SPSIM_EINVAL,
                          "%s: field 'gpus': must be 0 under MPI (one rank "
                          "per GPU)",
                          what);
    return SPSIM_OK;
}

int
spsim_gpu_calibrate_begin(const struct spsim_gpu_calibrate_options *o,
                          const struct spsim_bw_table *collectives,
                          struct spsim_gemm_sample **gemms, size_t *ngemms,
                          struct spsim_hbm_sample **hbm, size_t *nhbm, struct spsim_error *err)
{
    if (gemms)
        *gemms = NULL;
    if (ngemms)
        *ngemms = 0;
    if (hbm)
        *hbm = NULL;
    if (nhbm)
        *nhbm = 0;
    if (!collectives || !gemms || !ngemms || !hbm || !nhbm)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_gpu_calibrate: NULL argument");
    return spsim_gpu_calibrate_check(o, err);
}

size_t
spsim_gpu_sweep_sizes(const struct spsim_gpu_calibrate_options *o, uint64_t *sizes, size_t cap)
{
    size_t n = 0;
    /* max_bytes <= 2^36 and factor <= 2^10: size · factor never overflows. */
    for (uint64_t s = o->min_bytes; s <= o->max_bytes && n < cap; s *= o->factor)
        sizes[n++] = s;
    return n;
}

uint64_t
spsim_gpu_coll_count(enum spsim_coll_op op, uint64_t size_bytes, uint32_t elt_bytes,
                     uint32_t nranks, uint64_t *reported)
{
    uint64_t count = size_bytes / elt_bytes;
    switch (op) {
    case SPSIM_COLL_ALL_GATHER:
    case SPSIM_COLL_REDUCE_SCATTER:
    case SPSIM_COLL_ALL_TO_ALL: /* AlltoAllGetCollByteCount: the same per-peer rounding */
        /* nccl-tests AllGatherGetCollByteCount: base = (count/nranks) & ~(16/eltSize - 1); the
         * printed size is max(send, recv) bytes = base · nranks · eltSize. */
        count = (count / nranks) & ~(uint64_t)(16 / elt_bytes - 1);
        *reported = count * nranks * elt_bytes;
        return count;
    case SPSIM_COLL_ALL_REDUCE:
    case SPSIM_COLL_SEND_RECV:
    case SPSIM_COLL_COUNT:
        break;
    }
    *reported = count * elt_bytes;
    return count;
}

/* ---- GEMM shapes ---------------------------------------------------------------------- */

struct shape_list {
    struct spsim_gpu_gemm_shape *v;
    size_t n, cap;
};

static int
shape_add(struct shape_list *l, uint64_t m, uint64_t n, uint64_t k)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].m == m && l->v[i].n == n && l->v[i].k == k)
            return SPSIM_OK;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct spsim_gpu_gemm_shape *p = realloc(l->v, cap * sizeof(*p));
        if (!p)
            return SPSIM_ENOMEM;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n++] = (struct spsim_gpu_gemm_shape){m, n, k, 1};
    return SPSIM_OK;
}

/* Every linear GEMM's forward, dgrad and wgrad shape in the layer's schedule. */
static int
shapes_of_layer(struct shape_list *l, const struct spsim_model_shape *m,
                const struct spsim_layer_config *cfg)
{
    struct spsim_layer *layer = spsim_calloc(1, sizeof(*layer));
    struct spsim_schedule *sched = spsim_calloc(1, sizeof(*sched));
    int rc = layer && sched ? SPSIM_OK : SPSIM_ENOMEM;
    if (rc == SPSIM_OK) {
        spsim_layer_build(m, cfg, layer);
        spsim_schedule_build(layer, sched);
    }
    for (uint32_t i = 0; rc == SPSIM_OK && layer->ok && i < sched->nsteps; i++) {
        const struct spsim_step *st = &sched->steps[i];
        if (st->op->kind == SPSIM_OPK_GEMM && st->phase != SPSIM_PHASE_RECOMPUTE)
            rc = shape_add(l, st->gm, st->gn, st->gk);
    }
    free(layer);
    free(sched);
    return rc;
}

static int
shapes_of_model(struct shape_list *l, const struct spsim_gpu_calibrate_options *o)
{
    static const uint32_t tps[] = {1, 2, 4, 8};
    const struct spsim_model_shape *m = spsim_model_get_shape(o->model);
    int rc = SPSIM_OK;
    for (size_t i = 0; rc == SPSIM_OK && i < SPSIM_ARRAY_LENGTH(tps); i++) {
        struct spsim_parallel par;
        spsim_parallel_defaults(&par);
        par.tp = tps[i];
        par.mbs = o->mbs;
        par.gbs = o->mbs;
        par.seq = o->seq;
        if (spsim_parallel_check(o->model, NULL, &par, NULL, NULL) != SPSIM_OK)
            continue; /* heads, kv_heads or ffn not divisible by this tp */
        struct spsim_layer_config cfg;
        spsim_layer_config_from(m, &par, &cfg);
        rc = shapes_of_layer(l, m, &cfg);
    }
    return rc;
}

/* Korthikanti et al. 2022, Table 3: hidden, heads and micro-batch of the 22B, 175B, 530B and
 * 1T models, all at t = 8; s = 2048 and v = 51200 from §6; GPT layer (4h GeLU MLP). */
static int
shapes_of_paper(struct shape_list *l)
{
    static const struct {
        uint32_t hidden, heads, mbs;
    } table3[] = {{6144, 64, 4}, {12288, 96, 1}, {20480, 128, 1}, {25600, 160, 1}};
    int rc = SPSIM_OK;
    for (size_t i = 0; rc == SPSIM_OK && i < SPSIM_ARRAY_LENGTH(table3); i++) {
        struct spsim_model_shape m = {
            .layers = 1,
            .hidden = table3[i].hidden,
            .heads = table3[i].heads,
            .kv_heads = table3[i].heads,
            .head_dim = table3[i].hidden / table3[i].heads,
            .ffn_hidden = 4 * table3[i].hidden,
            .vocab = 51200,
            .seq_len = 2048,
            .mlp = SPSIM_MLP_GELU,
            .norm = SPSIM_NORM_LAYERNORM,
            .dropout = true,
            .attention = SPSIM_ATTENTION_STANDARD,
            .position = SPSIM_POSITION_LEARNED,
            .linear_bias = true,
            .tied_embeddings = true,
        };
        struct spsim_layer_config cfg = {.t = 8,
                                         .sp = true,
                                         .flash = false,
                                         .recompute = SPSIM_RECOMPUTE_SELECTIVE,
                                         .s = 2048,
                                         .b = table3[i].mbs,
                                         .dtype = SPSIM_DTYPE_BF16};
        rc = shapes_of_layer(l, &m, &cfg);
    }
    return rc;
}

int
spsim_gpu_calibrate_shapes(const struct spsim_gpu_calibrate_options *o,
                           struct spsim_gpu_gemm_shape **out, size_t *n, struct spsim_error *err)
{
    struct shape_list l = {0};
    int rc = o->model ? shapes_of_model(&l, o) : SPSIM_OK;
    /* Square GEMMs 512 .. 16384: the sizes MAMF-style sweeps and [AZ-*] cuBLASLt runs report. */
    for (uint64_t s = 512; rc == SPSIM_OK && s <= 16384; s *= 2)
        rc = shape_add(&l, s, s, s);
    if (rc == SPSIM_OK)
        rc = shapes_of_paper(&l);
    if (rc != SPSIM_OK) {
        free(l.v);
        return spsim_fail(err, rc, "calibrate: out of memory listing GEMM shapes");
    }
    *out = l.v;
    *n = l.n;
    return SPSIM_OK;
}

size_t
spsim_gpu_hbm_sizes(uint64_t l2_bytes, uint64_t budget_bytes, uint64_t *sizes, size_t cap)
{
    /* A copy of c bytes streams from HBM only when it is well beyond the L2: repeated over the
     * same buffers, a copy that fits (H100/H200 have 50 MB, NVIDIA H100 Tensor Core GPU
     * Architecture whitepaper) is served from the L2 and beats the datasheet's HBM rate. At
     * SPSIM_GPU_HBM_L2_MULTIPLE times the L2, at most a quarter of each copy could still be
     * in the L2 when it starts, and none is, as the last bytes written evict the first ones
     * read. The floor keeps the copy long beside its launch: 64 MiB at 3.35 TB/s (H100 SXM)
     * is 40 us, against about 5 us to launch. */
    uint64_t want = SPSIM_GPU_HBM_L2_MULTIPLE * l2_bytes, size = SPSIM_GPU_HBM_MIN_BYTES;
    while (size < want && size < SPSIM_GPU_HBM_MAX_BYTES)
        size *= 2;
    size_t n = 0;
    /* Source and destination are allocated fresh for each size: 2 x size must fit. */
    for (; n < cap && size <= SPSIM_GPU_HBM_MAX_BYTES && size <= budget_bytes / 2; size *= 2)
        sizes[n++] = size;
    return n;
}

size_t
spsim_gpu_gemm_variants(bool fp8, struct spsim_gpu_gemm_variant v[3])
{
    /* Transformer Engine (pytorch/module/base.py _2X_ACC_FPROP = False, _2X_ACC_DGRAD =
     * _2X_ACC_WGRAD = True; recipe Float8CurrentScaling the same) runs both FP8 modes in one
     * training step, and they differ in speed: each shape is measured both ways. */
    v[0] = (struct spsim_gpu_gemm_variant){SPSIM_DTYPE_BF16, false};
    if (!fp8)
        return 1;
    v[1] = (struct spsim_gpu_gemm_variant){SPSIM_DTYPE_FP8, true};
    v[2] = (struct spsim_gpu_gemm_variant){SPSIM_DTYPE_FP8, false};
    return 3;
}

int
spsim_gpu_rank_device(int local_rank, int visible)
{
    if (local_rank < 0 || visible < 1)
        return -1;
    /* Slurm --gpus-per-task=1 (or CUDA_VISIBLE_DEVICES set per rank) shows each rank one GPU,
     * device 0, whatever its local rank; with the node's GPUs all visible, local rank r takes
     * GPU r. Two ranks that land on one physical GPU are NCCL's to report ("Duplicate GPU
     * detected"): the visible count alone cannot tell a shared GPU from a per-rank one. */
    return local_rank % visible;
}

bool
spsim_gpu_mpi_launched(void)
{
#if HAVE_MPI
    /* One rank needs no NCCL bootstrap over MPI; a launcher that does not say how many ranks
     * it started (PMIx) is taken at its word. */
    uint32_t size = 0;
    return spsim_mpi_launched(&size) && size != 1;
#else
    return false;
#endif
}

void
spsim_gpu_validate_defaults(struct spsim_gpu_validate_options *o)
{
    *o = (struct spsim_gpu_validate_options){.warmup_iters = 3, .iters = 10};
}

int
spsim_gpu_validate_check(const struct spsim_gpu_validate_options *o, struct spsim_error *err)
{
    if (o && !(o->iters >= 1 && o->iters <= MAX_ITERS && o->warmup_iters <= MAX_ITERS))
        return spsim_fail(err, SPSIM_EINVAL,
                          "validate options: fields 'iters', 'warmup_iters': "
                          "need 1 <= iters <= %u and warmup_iters <= %u",
                          MAX_ITERS, MAX_ITERS);
    return SPSIM_OK;
}

const char *
spsim_replay_kind_name(enum spsim_replay_kind kind)
{
    switch (kind) {
    case SPSIM_REPLAY_NONE:
        return "none";
    case SPSIM_REPLAY_GEMM:
        return "gemm";
    case SPSIM_REPLAY_BATCHED_GEMM:
        return "batched_gemm";
    case SPSIM_REPLAY_COPY:
        return "copy";
    case SPSIM_REPLAY_ATTENTION_PROXY:
        return "attention_proxy";
    }
    return "?";
}
