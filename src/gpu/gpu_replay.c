/*
 * spsim_gpu_impl_validate(): one transformer layer replayed on tp local GPUs, step by step in the
 * schedule's order, each step timed with CUDA events.
 *
 * One host thread per GPU (gpu_threads.c), as Megatron runs one process per GPU: each binds its
 * device once, queries its properties once, and queues only its own GPU's work, so that a
 * small step is not launch-bound on n GPUs driven one after another from one thread.
 *
 * Each GPU has a compute stream and a collective stream (the communicator's). A step records
 * c0 on the compute stream; its collective, if any, waits for c0 on the collective stream
 * (so it starts where Megatron issues it: after the previous step's work) and runs between k0
 * and k1, while the step's computation runs between c0 and c1 on the compute stream; the
 * compute stream then waits for k1 and records the step's end. A collective that Megatron
 * overlaps (the wgrad re-gather beside dgrad, the dgrad ReduceScatter/AllReduce beside wgrad)
 * thus runs beside its GEMM; the others are alone in their step and are waited for, which is
 * what Megatron's synchronous calls do.
 *
 * Memory-bound ops are copies of the op's bytes between stretches of a ring buffer
 * (spsim_gpu_ring_take), so that, like the real op on tensors no other op has just touched,
 * they stream from HBM instead of hitting in the L2.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

enum { EV_C0, EV_C1, EV_K0, EV_K1, EV_END, EV_COUNT };
enum { T_COMPUTE, T_COMM, T_STEP };

/* How long the others may run on after one GPU's thread failed before their collectives are
 * aborted: far beyond one pass of any layer (GPT-3 175B at tp 1 is about 50 ms on an H200). */
#define STALL_GRACE_S 10.0

struct member {
    int device, index;
    int cc_major, cc_minor; /* queried once */
    int l2_bytes;
    cudaStream_t compute;
    struct spsim_gpu_blas blas;
    struct spsim_gpu_gemm gemm[SPSIM_MAX_SCHEDULE_STEPS];
    cudaEvent_t ev[SPSIM_MAX_SCHEDULE_STEPS][EV_COUNT];
    void *a, *b, *d, *ring;
    struct spsim_gpu_ring rg;
    double sum[SPSIM_MAX_SCHEDULE_STEPS][3], fwd, bwd; /* over the timed passes */
};

struct replay {
    struct spsim_gpu_validate_report *r;
    const struct spsim_gpu_validate_options *o;
    int n;            /* GPUs: tp */
    struct member *m; /* n of them */
    struct spsim_gpu_comm comm;
    size_t last_forward; /* index of the last forward step */
};

static struct spsim_gpu_gemm_spec
step_spec(const struct spsim_gpu_validate_step *s)
{
    return (struct spsim_gpu_gemm_spec){
        .shape = {s->m, s->n, s->k, s->batch},
        .dtype = s->dtype,
        .fp32_output = s->fp32_output,
        .accumulate = s->fp32_output, /* main_grad += dW */
        .fast_accum = s->fp8_fast_accum,
    };
}

/* The largest operand of each kind over all steps, and the largest copy. */
static void
buffer_sizes(const struct spsim_gpu_validate_report *r, size_t size[4])
{
    memset(size, 0, 4 * sizeof(size[0]));
    for (size_t i = 0; i < r->nsteps; i++) {
        const struct spsim_gpu_validate_step *s = &r->steps[i];
        size_t x[4] = {0, 0, 0, (size_t)spsim_gpu_step_copy(s)};
        if (s->gemms) {
            struct spsim_gpu_gemm_spec spec = step_spec(s);
            spsim_gpu_gemm_bytes(&spec, &x[0], &x[1], &x[2]);
        }
        for (int k = 0; k < 4; k++)
            size[k] = x[k] > size[k] ? x[k] : size[k];
    }
}

static enum spsim_dtype
fill_type(const struct spsim_gpu_validate_report *r)
{
    /* FP8 bytes read as BF16 are finite; BF16 bytes read as FP8 may be NaN: fill with FP8's. */
    for (size_t i = 0; i < r->nsteps; i++)
        if (r->steps[i].gemms && r->steps[i].dtype == SPSIM_DTYPE_FP8)
            return SPSIM_DTYPE_FP8;
    return r->nsteps && r->steps[0].dtype == SPSIM_DTYPE_FP16 ? SPSIM_DTYPE_FP16 : SPSIM_DTYPE_BF16;
}

static int
member_buffers(struct member *mb, const struct spsim_gpu_validate_report *r,
               struct spsim_error *err)
{
    size_t size[4];
    buffer_sizes(r, size);
    spsim_gpu_ring_init(&mb->rg, size[3], (uint64_t)mb->l2_bytes);
    size_t ring = size[3] ? (size_t)mb->rg.size : 0;
    int rc;
    if ((rc = spsim_gpu_alloc(&mb->a, size[0], "replay GEMM operand A", err)) ||
        (rc = spsim_gpu_alloc(&mb->b, size[1], "replay GEMM operand B", err)) ||
        (rc = spsim_gpu_alloc(&mb->d, size[2], "replay GEMM output", err)) ||
        (rc = spsim_gpu_alloc(&mb->ring, ring, "replay copy ring", err)))
        return rc;
    enum spsim_dtype t = fill_type(r);
    cudaStream_t s = mb->compute; /* the stream whose GEMMs and copies read them */
    if ((rc = spsim_gpu_fill(mb->a, size[0], t, s, err)) ||
        (rc = spsim_gpu_fill(mb->b, size[1], t, s, err)) ||
        (rc = spsim_gpu_fill(mb->d, size[2], SPSIM_DTYPE_FP32, s, err))) /* read by accumulation */
        return rc;
    return spsim_gpu_cuda(cudaMemsetAsync(mb->ring, 0, ring, s), "cudaMemsetAsync (copy ring)",
                          err);
}

/* A GEMM the layer needs and this GPU cannot run is a failed replay, not a missing GPU. */
static int
prepare_gemm(struct member *mb, const struct spsim_gpu_validate_step *s, struct spsim_gpu_gemm *g,
             struct spsim_error *err)
{
    struct spsim_gpu_gemm_spec spec = step_spec(s);
    /* NVFP4 needs cuBLASLt's block-scaled FP4 matmul (E4M3 scale tensors), not wired here. */
    if (s->dtype == SPSIM_DTYPE_NVFP4)
        return spsim_fail(err, SPSIM_ENOTSUP, "validate: NVFP4 GEMM of '%s' is not replayed",
                          s->op);
    if (s->dtype == SPSIM_DTYPE_FP8 && !spsim_gpu_fp8_ok(mb->cc_major, mb->cc_minor, &spec.shape))
        return spsim_fail(err, SPSIM_ENOTSUP,
                          "validate: FP8 GEMM %llux%llux%llu of '%s' needs "
                          "compute capability 8.9 or later (GPU %d has %d.%d) and sizes that are "
                          "multiples of 16",
                          (unsigned long long)s->m, (unsigned long long)s->n,
                          (unsigned long long)s->k, s->op, mb->device, mb->cc_major, mb->cc_minor);
    int rc = spsim_gpu_gemm_prepare(&mb->blas, &spec, g, err);
    if (rc == SPSIM_ENOTSUP) { /* the message names the GEMM and cuBLASLt's answer */
        rc = SPSIM_EGPU;
        if (err)
            err->code = rc;
    }
    return rc;
}

/* The device's properties, once per replay (cudaDeviceGetAttribute: no cudaDeviceProp). */
static int
member_properties(struct member *mb, struct spsim_error *err)
{
    int d = mb->device, rc;
    if ((rc = spsim_gpu_cuda(
             cudaDeviceGetAttribute(&mb->cc_major, cudaDevAttrComputeCapabilityMajor, d),
             "cudaDeviceGetAttribute (compute capability)", err)) ||
        (rc = spsim_gpu_cuda(
             cudaDeviceGetAttribute(&mb->cc_minor, cudaDevAttrComputeCapabilityMinor, d),
             "cudaDeviceGetAttribute (compute capability)", err)))
        return rc;
    return spsim_gpu_cuda(cudaDeviceGetAttribute(&mb->l2_bytes, cudaDevAttrL2CacheSize, d),
                          "cudaDeviceGetAttribute (L2 cache size)", err);
}

/* On the member's own thread: bind the device (once), then create what it replays with. */
static int
member_open(struct member *mb, const struct spsim_gpu_validate_report *r, struct spsim_error *err)
{
    int rc;
    if ((rc = spsim_gpu_use(mb->device, err)) || (rc = member_properties(mb, err)) ||
        (rc = spsim_gpu_cuda(cudaStreamCreateWithFlags(&mb->compute, cudaStreamNonBlocking),
                             "cudaStreamCreate (replay compute)", err)) ||
        (rc = spsim_gpu_blas_open(&mb->blas, err)) || (rc = member_buffers(mb, r, err)))
        return rc;
    for (size_t i = 0; rc == SPSIM_OK && i < r->nsteps; i++) {
        for (int e = 0; rc == SPSIM_OK && e < EV_COUNT; e++)
            rc = spsim_gpu_cuda(cudaEventCreate(&mb->ev[i][e]), "cudaEventCreate", err);
        if (rc == SPSIM_OK && r->steps[i].gemms)
            rc = prepare_gemm(mb, &r->steps[i], &mb->gemm[i], err);
    }
    return rc;
}

static void
member_close(struct member *mb)
{
    /* Release path: errors were reported when they happened. */
    (void)cudaSetDevice(mb->device);
    if (mb->compute)
        (void)cudaStreamSynchronize(mb->compute);
    for (size_t i = 0; i < SPSIM_MAX_SCHEDULE_STEPS; i++) {
        spsim_gpu_gemm_release(&mb->gemm[i]);
        for (int e = 0; e < EV_COUNT; e++)
            if (mb->ev[i][e])
                (void)cudaEventDestroy(mb->ev[i][e]);
    }
    void *bufs[4] = {mb->a, mb->b, mb->d, mb->ring};
    for (int k = 0; k < 4; k++)
        if (bufs[k])
            (void)cudaFree(bufs[k]);
    if (mb->compute)
        (void)cudaStreamDestroy(mb->compute);
    spsim_gpu_blas_close(&mb->blas);
}

static size_t
largest_message(const struct spsim_gpu_validate_report *r)
{
    uint64_t most = 0;
    for (size_t i = 0; i < r->nsteps; i++)
        if (r->steps[i].coll != SPSIM_COLL_COUNT && r->steps[i].coll_bytes > most)
            most = r->steps[i].coll_bytes;
    return (size_t)most;
}

static void
replay_close(struct replay *R)
{
    for (int j = 0; R->m && j < R->n; j++)
        member_close(&R->m[j]);
    free(R->m);
    R->m = NULL;
    spsim_gpu_comm_close(&R->comm);
}

/* The communicator (from this thread: ncclCommInitAll) and the members, not yet opened. */
static int
replay_open(struct replay *R, struct spsim_gpu_validate_report *r,
            const struct spsim_gpu_validate_options *o, struct spsim_error *err)
{
    memset(R, 0, sizeof(*R));
    R->r = r;
    R->o = o;
    R->n = (int)r->gpus;
    for (size_t i = 0; i < r->nsteps; i++)
        if (r->steps[i].phase == SPSIM_PHASE_FORWARD)
            R->last_forward = i;
    int visible = 0, rc = spsim_gpu_impl_device_count(&visible, err);
    if (rc == SPSIM_OK && (visible < R->n || R->n > SPSIM_GPU_MAX_LOCAL))
        return spsim_fail(err, SPSIM_ENOTSUP,
                          "validate: tp = %d needs %d GPUs in this process, "
                          "%d visible",
                          R->n, R->n, visible);
    if (rc == SPSIM_OK && R->n > 1)
        rc = spsim_gpu_comm_open(&R->comm, R->n, false, largest_message(r), err);
    R->m = rc == SPSIM_OK ? spsim_calloc((size_t)R->n, sizeof(*R->m)) : NULL;
    if (rc == SPSIM_OK && !R->m)
        rc = spsim_fail(err, SPSIM_ENOMEM, "validate: out of memory");
    for (int j = 0; rc == SPSIM_OK && j < R->n; j++) {
        R->m[j].index = j;
        R->m[j].device = R->n > 1 ? R->comm.devices[j] : 0;
    }
    if (rc != SPSIM_OK)
        replay_close(R);
    return rc;
}

static int
record(struct member *mb, size_t i, int e, cudaStream_t s, struct spsim_error *err)
{
    return spsim_gpu_cuda(cudaEventRecord(mb->ev[i][e], s), "cudaEventRecord (replay)", err);
}

static int
wait_for(cudaStream_t s, cudaEvent_t e, struct spsim_error *err)
{
    return spsim_gpu_cuda(cudaStreamWaitEvent(s, e, 0), "cudaStreamWaitEvent (replay)", err);
}

/* The step's computation on one GPU: its GEMMs, then its copy (a memory-bound kernel, or the
 * bias gradient's reduction after a wgrad GEMM) between two fresh stretches of the ring. */
static int
compute(struct member *mb, const struct spsim_gpu_validate_step *s, size_t i,
        struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (uint32_t g = 0; rc == SPSIM_OK && g < s->gemms; g++)
        rc = spsim_gpu_gemm_launch(&mb->blas, &mb->gemm[i], mb->a, mb->b, mb->d, mb->compute, err);
    uint64_t bytes = spsim_gpu_step_copy(s);
    if (rc == SPSIM_OK && bytes > 0) {
        char *src = (char *)mb->ring + spsim_gpu_ring_take(&mb->rg, bytes);
        char *dst = (char *)mb->ring + spsim_gpu_ring_take(&mb->rg, bytes);
        rc = spsim_gpu_cuda(
            cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice, mb->compute),
            "cudaMemcpyAsync (replay of a memory-bound op)", err);
    }
    return rc;
}

/* nccl-tests' count of a message in bf16 elements: AllReduce the whole tensor, AllGather and
 * ReduceScatter each rank's share. */
static uint64_t
coll_count(const struct spsim_gpu_validate_step *s, int n)
{
    uint64_t elements = s->coll_bytes / 2;
    return s->coll == SPSIM_COLL_ALL_REDUCE || s->coll == SPSIM_COLL_SEND_RECV ? elements
                                                                               : elements / n;
}

static int
launch_step(struct replay *R, struct member *mb, size_t i, struct spsim_error *err)
{
    const struct spsim_gpu_validate_step *s = &R->r->steps[i];
    bool coll = s->coll != SPSIM_COLL_COUNT;
    cudaStream_t cs = coll ? R->comm.streams[mb->index] : NULL;
    int rc = record(mb, i, EV_C0, mb->compute, err);
    if (rc == SPSIM_OK && coll &&
        ((rc = wait_for(cs, mb->ev[i][EV_C0], err)) || (rc = record(mb, i, EV_K0, cs, err)) ||
         (rc = spsim_gpu_coll_launch_member(&R->comm, mb->index, s->coll, coll_count(s, R->n),
                                            ncclBfloat16, err)) ||
         (rc = record(mb, i, EV_K1, cs, err))))
        return rc;
    if (rc == SPSIM_OK &&
        ((rc = compute(mb, s, i, err)) || (rc = record(mb, i, EV_C1, mb->compute, err)) ||
         (coll && (rc = wait_for(mb->compute, mb->ev[i][EV_K1], err)))))
        return rc;
    return rc == SPSIM_OK ? record(mb, i, EV_END, mb->compute, err) : rc;
}

/* One layer pass on this thread's GPU; it stops early once another GPU's thread has failed,
 * so that it does not queue collectives that GPU will never join. */
static int
run_pass(struct spsim_gpu_threads *t, struct replay *R, struct member *mb, bool *stopped,
         struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (size_t i = 0; rc == SPSIM_OK && !*stopped && i < R->r->nsteps; i++) {
        *stopped = R->n > 1 && spsim_gpu_threads_failed(t);
        if (!*stopped)
            rc = launch_step(R, mb, i, err);
    }
    if (rc == SPSIM_OK && !*stopped)
        rc = spsim_gpu_cuda(cudaStreamSynchronize(mb->compute), "cudaStreamSynchronize (replay)",
                            err);
    return rc;
}

/* Elapsed seconds between two events of this GPU, added to *sum. */
static int
add_elapsed(struct member *mb, size_t i0, int e0, size_t i1, int e1, double *sum,
            struct spsim_error *err)
{
    double s = 0;
    int rc = spsim_gpu_elapsed(mb->ev[i0][e0], mb->ev[i1][e1], &s, err);
    *sum += s;
    return rc;
}

/* Add one timed pass of this GPU: per step, and the forward and backward spans. */
static int
collect(struct replay *R, struct member *mb, struct spsim_error *err)
{
    const struct spsim_gpu_validate_report *r = R->r;
    size_t last = r->nsteps - 1, fwd = R->last_forward;
    int rc = SPSIM_OK;
    for (size_t i = 0; rc == SPSIM_OK && i < r->nsteps; i++) {
        double *t = mb->sum[i];
        if ((rc = add_elapsed(mb, i, EV_C0, i, EV_C1, &t[T_COMPUTE], err)) == SPSIM_OK &&
            r->steps[i].coll != SPSIM_COLL_COUNT)
            rc = add_elapsed(mb, i, EV_K0, i, EV_K1, &t[T_COMM], err);
        if (rc == SPSIM_OK)
            rc = add_elapsed(mb, i, EV_C0, i, EV_END, &t[T_STEP], err);
    }
    if (rc == SPSIM_OK &&
        (rc = add_elapsed(mb, 0, EV_C0, fwd, EV_END, &mb->fwd, err)) == SPSIM_OK && fwd < last)
        rc = add_elapsed(mb, fwd, EV_END, last, EV_END, &mb->bwd, err);
    return rc;
}

/* The body of one GPU's thread: open, agree with the others that all opened, run the passes. */
static int
member_main(struct spsim_gpu_threads *t, void *ctx, int j, struct spsim_error *err)
{
    struct replay *R = ctx;
    struct member *mb = &R->m[j];
    int rc = member_open(mb, R->r, err);
    if (!spsim_gpu_threads_agree(t, rc == SPSIM_OK))
        return rc; /* its own failure, or SPSIM_OK where another GPU's failed */
    bool stopped = false;
    for (uint32_t w = 0; rc == SPSIM_OK && !stopped && w < R->o->warmup_iters; w++)
        rc = run_pass(t, R, mb, &stopped, err);
    for (uint32_t it = 0; rc == SPSIM_OK && !stopped && it < R->o->iters; it++)
        if ((rc = run_pass(t, R, mb, &stopped, err)) == SPSIM_OK && !stopped)
            rc = collect(R, mb, err);
    return rc;
}

static void
replay_stall(void *ctx)
{
    struct replay *R = ctx;
    spsim_gpu_comm_abort(&R->comm);
}

/* The report: per step and per phase, the slowest GPU's mean over the timed passes. */
static void
report(struct replay *R)
{
    struct spsim_gpu_validate_report *r = R->r;
    double iters = R->o->iters, f = 0, b = 0;
    for (size_t i = 0; i < r->nsteps; i++) {
        double t[3] = {0, 0, 0};
        for (int j = 0; j < R->n; j++)
            for (int k = 0; k < 3; k++)
                t[k] = spsim_max_d(t[k], R->m[j].sum[i][k] / iters);
        r->steps[i].measured_compute_s = t[T_COMPUTE];
        r->steps[i].measured_comm_s = t[T_COMM];
        r->steps[i].measured_s = t[T_STEP];
    }
    for (int j = 0; j < R->n; j++) {
        f = spsim_max_d(f, R->m[j].fwd / iters);
        b = spsim_max_d(b, R->m[j].bwd / iters);
    }
    r->measured_forward_s = f;
    r->measured_backward_s = b;
}

int
spsim_gpu_impl_validate(const struct spsim_model *model, const struct spsim_hardware *hw,
                        const struct spsim_parallel *par,
                        const struct spsim_gpu_validate_options *o,
                        struct spsim_gpu_validate_report *out, struct spsim_error *err)
{
    struct spsim_gpu_validate_options defaults;
    spsim_gpu_validate_defaults(&defaults);
    if (!o)
        o = &defaults;
    struct replay R;
    int rc = spsim_gpu_validate_check(o, err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_validate_plan(model, hw, par, out, err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_impl_info(0, &out->gpu, err);
    if (rc != SPSIM_OK || (rc = replay_open(&R, out, o, err)) != SPSIM_OK)
        return rc;
    out->iters = o->iters;
    out->warmup_iters = o->warmup_iters;
    rc = spsim_gpu_run_threads(R.n, member_main, replay_stall, &R, STALL_GRACE_S, err);
    if (rc == SPSIM_OK)
        report(&R);
    replay_close(&R);
    return rc;
}
