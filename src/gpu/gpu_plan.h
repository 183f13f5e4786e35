/*
 * The GPU part's host-only side, built with and without CUDA: option checks, the GEMM shapes
 * a calibration measures, and the replay plan of `spsim validate`.
 */
#ifndef SPSIM_GPU_PLAN_H
#define SPSIM_GPU_PLAN_H

#include "internal.h"
#include "spsim/gpu.h"

/** Most GPUs one process drives (one communicator member each): a guard well above the 8 of a
 * DGX/HGX node and the 4 of a GB200 NVL72 compute tray (hardware-facts.md). */
#define SPSIM_GPU_MAX_LOCAL 64

/** One GEMM shape: out[m, n] = A[m, k] · B[k, n], `batch` of them. */
struct spsim_gpu_gemm_shape {
    uint64_t m, n, k, batch;
};

/**
 * The distinct linear-layer GEMM shapes a calibration measures: o->model's layer (forward,
 * dgrad and wgrad of every linear GEMM) for each tp in {1, 2, 4, 8} that Megatron's rules
 * allow, the square sizes 512 .. 16384, and the paper's four models at t = 8.
 * @param out  receives an array the caller frees with free()
 * @return SPSIM_OK, SPSIM_ENOMEM
 */
int spsim_gpu_calibrate_shapes(const struct spsim_gpu_calibrate_options *o,
                               struct spsim_gpu_gemm_shape **out, size_t *n,
                               struct spsim_error *err);

/** What spsim_gpu_calibrate() does first in every build: set the outputs empty (NULL, 0), then
 * refuse NULL arguments and bad options. @return SPSIM_OK or SPSIM_EINVAL */
int spsim_gpu_calibrate_begin(const struct spsim_gpu_calibrate_options *o,
                              const struct spsim_bw_table *collectives,
                              struct spsim_gemm_sample **gemms, size_t *ngemms,
                              struct spsim_hbm_sample **hbm, size_t *nhbm, struct spsim_error *err);

/** The collective sizes of a sweep, nccl-tests' -b/-e/-f: min, min·f, ... ≤ max. */
size_t spsim_gpu_sweep_sizes(const struct spsim_gpu_calibrate_options *o, uint64_t *sizes,
                             size_t cap);

/**
 * nccl-tests' per-rank element count for a size (its *GetCollByteCount functions): AllGather and
 * ReduceScatter take size/elt/n rounded down to a 16-byte multiple, the others size/elt.
 * @param reported  receives the size nccl-tests prints for that count (AG/RS: count·n·elt)
 */
uint64_t spsim_gpu_coll_count(enum spsim_coll_op op, uint64_t size_bytes, uint32_t elt_bytes,
                              uint32_t nranks, uint64_t *reported);

/** Check validate options (NULL: the defaults, fine). @return SPSIM_OK or SPSIM_EINVAL */
int spsim_gpu_validate_check(const struct spsim_gpu_validate_options *o, struct spsim_error *err);

/**
 * The GPU module libspsim loads: `env` ($SPSIM_GPU_MODULE) when set and non-empty; else
 * `build_module` when `self`, the canonical path of the file libspsim's code was loaded from,
 * lies inside the canonical `build_root`; else `install_module`.
 */
const char *spsim_gpu_module_choose(const char *env, const char *self, const char *build_root,
                                    const char *build_module, const char *install_module);

/* HBM copies of a calibration: powers of two from SPSIM_GPU_HBM_L2_MULTIPLE × the L2 size (at
 * least SPSIM_GPU_HBM_MIN_BYTES) up to SPSIM_GPU_HBM_MAX_BYTES; at most 4 sizes. */
#define SPSIM_GPU_HBM_L2_MULTIPLE 4
#define SPSIM_GPU_HBM_MIN_BYTES   (64ull << 20)
#define SPSIM_GPU_HBM_MAX_BYTES   (4ull << 30)
#define SPSIM_GPU_HBM_MAX_SIZES   4

/**
 * The copy sizes of the HBM measurement for a GPU with `l2_bytes` of L2
 * (cudaDevAttrL2CacheSize) and `budget_bytes` of device memory to use: the powers of two from
 * the smallest at least 4 × L2 (and 64 MiB), doubling, each with fresh source and destination
 * buffers that fit the budget together. @return the number written (≤ cap; 0 when even the
 * first does not fit)
 */
size_t spsim_gpu_hbm_sizes(uint64_t l2_bytes, uint64_t budget_bytes, uint64_t *sizes, size_t cap);

/** One way a calibration runs its GEMMs: the input type and, for FP8, the accumulation. */
struct spsim_gpu_gemm_variant {
    enum spsim_dtype dtype;
    bool fast_accum;
};

/** The GEMM variants a calibration measures, in order: BF16; with `fp8` also FP8 with fast
 * accumulation (Transformer Engine's fprop) and FP8 with the split accumulator (its dgrad and
 * wgrad). @return how many (1 or 3) */
size_t spsim_gpu_gemm_variants(bool fp8, struct spsim_gpu_gemm_variant v[3]);

/* ---- where the replay's copies go ------------------------------------------------------- */

/* Every copy of the replay reads and writes its own stretch of one ring buffer, so that no
 * byte is touched again before SPSIM_GPU_RING_L2_MULTIPLE × the L2 size of other bytes have
 * been: a memory-bound op then streams from HBM as the real one does on tensors no other op has
 * just touched, instead of hitting in the L2 (two buffers reused by every copy stay there). */
#define SPSIM_GPU_RING_L2_MULTIPLE 2
/* Stretches start at multiples of 256 bytes (cudaMalloc's alignment, CUDA Programming Guide,
 * "Device Memory Accesses"), so that each copy runs at the aligned rate. */
#define SPSIM_GPU_RING_ALIGN 256u

struct spsim_gpu_ring {
    uint64_t size; /* bytes */
    uint64_t next; /* offset of the next stretch */
};

/**
 * A ring for copies of at most `largest` bytes each on a GPU with `l2_bytes` of L2:
 * 3 × largest (aligned) + SPSIM_GPU_RING_L2_MULTIPLE × L2. Taking a stretch wraps to 0 when it
 * does not fit before the end; between two takes that share a byte, the takes in between cover
 * at least size − 3 × largest distinct bytes (the rest of the lap less the wasted tail, and the
 * new lap's start), which is the L2 multiple.
 */
void spsim_gpu_ring_init(struct spsim_gpu_ring *r, uint64_t largest, uint64_t l2_bytes);
/** The offset of the next stretch of `bytes` (≤ the ring's largest). */
uint64_t spsim_gpu_ring_take(struct spsim_gpu_ring *r, uint64_t bytes);

/** The bytes one memory-bound copy of step s moves each way (its HBM traffic is read + written:
 * half of copy_bytes); 0 without a copy. */
uint64_t spsim_gpu_step_copy(const struct spsim_gpu_validate_step *s);

/* ---- one host thread per GPU (gpu_threads.c) --------------------------------------------- */

struct spsim_gpu_threads;

/** The body of thread j: its failure goes into err (the thread's own). A thread that stops
 * because another failed returns SPSIM_OK, so that the first real failure is what is reported. */
typedef int (*spsim_gpu_thread_fn)(struct spsim_gpu_threads *t, void *ctx, int j,
                                   struct spsim_error *err);

/**
 * Run fn(t, ctx, j, ...) for j = 0 .. n-1, each on a thread of its own, and wait for all.
 * When one has failed and others are still running `grace_s` seconds later (waiting, say, in
 * a collective for the member that failed), stall(ctx) is called once to make them return
 * (NULL: wait on). @return SPSIM_OK, or the first failure (in time), its error copied into err
 */
int spsim_gpu_run_threads(int n, spsim_gpu_thread_fn fn, void (*stall)(void *ctx), void *ctx,
                          double grace_s, struct spsim_error *err);

/** A barrier of the running threads (one that has returned counts as arrived): true when no
 * thread has failed, counting `ok` of this one. */
bool spsim_gpu_threads_agree(struct spsim_gpu_threads *t, bool ok);

/** True once a thread has failed (at a barrier or by returning a failure). */
bool spsim_gpu_threads_failed(struct spsim_gpu_threads *t);

/** The device an MPI rank drives: local_rank % visible (-1 for a negative rank or no device). */
int spsim_gpu_rank_device(int local_rank, int visible);

/** True when the process was started by an MPI launcher with more than one rank. */
bool spsim_gpu_mpi_launched(void);

/*
 * The CUDA side lives in a separately loaded module (libspsim-gpu.so), so that a program that
 * never touches a GPU does not map cudart, cuBLASLt, NCCL and MPI at start-up (hundreds of
 * milliseconds and 200 MB per process). The library's public GPU functions (gpu_loader.c)
 * dlopen the module on first use and call its entry points through this table.
 */
#define SPSIM_GPU_MODULE_ABI 1

struct spsim_gpu_vtable {
    uint32_t abi; /* SPSIM_GPU_MODULE_ABI */
    int (*device_count)(int *count, struct spsim_error *err);
    int (*info)(int device, struct spsim_gpu_info *out, struct spsim_error *err);
    int (*calibrate)(const struct spsim_gpu_calibrate_options *o,
                     struct spsim_bw_table *collectives, struct spsim_gemm_sample **gemms,
                     size_t *ngemms, struct spsim_hbm_sample **hbm, size_t *nhbm,
                     struct spsim_error *err);
    int (*validate)(const struct spsim_model *model, const struct spsim_hardware *hw,
                    const struct spsim_parallel *par, const struct spsim_gpu_validate_options *o,
                    struct spsim_gpu_validate_report *out, struct spsim_error *err);
    int (*mpi_rank)(void);
    void (*finalize)(void);
};

/* The module's implementations of the public GPU functions (CUDA build only). */
int spsim_gpu_impl_device_count(int *count, struct spsim_error *err);
int spsim_gpu_impl_info(int device, struct spsim_gpu_info *out, struct spsim_error *err);
int spsim_gpu_impl_calibrate(const struct spsim_gpu_calibrate_options *o,
                             struct spsim_bw_table *collectives, struct spsim_gemm_sample **gemms,
                             size_t *ngemms, struct spsim_hbm_sample **hbm, size_t *nhbm,
                             struct spsim_error *err);
int spsim_gpu_impl_validate(const struct spsim_model *model, const struct spsim_hardware *hw,
                            const struct spsim_parallel *par,
                            const struct spsim_gpu_validate_options *o,
                            struct spsim_gpu_validate_report *out, struct spsim_error *err);
int spsim_gpu_impl_mpi_rank(void);
void spsim_gpu_impl_finalize(void);

#endif
