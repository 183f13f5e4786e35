/*
 * spsim_gpu_impl_validate(): one transformer layer replayed on tp local GPUs, step by step in the
 * schedule's order, each step timed with CUDA events.
 *
 * Each GPU has a compute stream and a collective stream (the communicator's). A step records
 * c0 on the compute stream; its collective, if any, waits for c0 on the collective stream
 * (so it starts where Megatron issues it: after the previous step's work) and runs between k0
 * and k1, while the step's computation runs between c0 and c1 on the compute stream; the
 * compute stream then waits for k1 and records the step's end. A collective that Megatron
 * overlaps (the wgrad re-gather beside dgrad, the dgrad ReduceScatter/AllReduce beside wgrad)
 * thus runs beside its GEMM; the others are alone in their step and are waited for, which is
 * what Megatron's synchronous calls do.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

enum { EV_C0, EV_C1, EV_K0, EV_K1, EV_END, EV_COUNT };

struct member {
    int device;
    cudaStream_t compute;
    struct spsim_gpu_blas blas;
    struct spsim_gpu_gemm gemm[SPSIM_MAX_SCHEDULE_STEPS];
    cudaEvent_t ev[SPSIM_MAX_SCHEDULE_STEPS][EV_COUNT];
    void *a, *b, *d, *src, *dst;
};

struct replay {
    struct spsim_gpu_validate_report *r;
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
buffer_sizes(const struct spsim_gpu_validate_report *r, size_t size[5])
{
    memset(size, 0, 5 * sizeof(size[0]));
    for (size_t i = 0; i < r->nsteps; i++) {
        const struct spsim_gpu_validate_step *s = &r->steps[i];
        size_t x[3] = {0, 0, 0};
        if (s->gemms) {
            struct spsim_gpu_gemm_spec spec = step_spec(s);
            spsim_gpu_gemm_bytes(&spec, &x[0], &x[1], &x[2]);
        }
        for (int k = 0; k < 3; k++)
            size[k] = x[k] > size[k] ? x[k] : size[k];
        size_t copy = (size_t)(s->copy_bytes / 2); /* a copy of c bytes moves 2c */
        size[3] = size[4] = copy > size[3] ? copy : size[3];
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
    size_t size[5];
    buffer_sizes(r, size);
    void **ptr[5] = {&mb->a, &mb->b, &mb->d, &mb->src, &mb->dst};
    static const char *const what[5] = {"replay GEMM operand A", "replay GEMM operand B",
                                        "replay GEMM output", "replay copy source",
                                        "replay copy destination"};
    int rc = SPSIM_OK;
    for (int k = 0; rc == SPSIM_OK && k < 5; k++)
        rc = spsim_gpu_alloc(ptr[k], size[k], what[k], err);
    enum spsim_dtype t = fill_type(r);
    cudaStream_t s = mb->compute; /* the stream whose GEMMs read them */
    if (rc == SPSIM_OK && (rc = spsim_gpu_fill(mb->a, size[0], t, s, err)) == SPSIM_OK &&
        (rc = spsim_gpu_fill(mb->b, size[1], t, s, err)) == SPSIM_OK)
        rc = spsim_gpu_fill(mb->d, size[2], SPSIM_DTYPE_FP32, s, err); /* read by accumulation */
    return rc;
}

/* A GEMM the layer needs and this GPU cannot run is a failed replay, not a missing GPU. */
static int
prepare_gemm(struct member *mb, const struct spsim_gpu_validate_step *s, struct spsim_gpu_gemm *g,
             struct spsim_error *err)
{
    struct spsim_gpu_info info;
    struct spsim_gpu_gemm_spec spec = step_spec(s);
    int rc = spsim_gpu_impl_info(mb->device, &info, err);
    if (rc == SPSIM_OK && s->dtype == SPSIM_DTYPE_FP8 &&
        !spsim_gpu_fp8_ok(info.cc_major, info.cc_minor, &spec.shape))
        return spsim_fail(err, SPSIM_ENOTSUP,
                          "validate: FP8 GEMM %llux%llux%llu of '%s' needs "
                          "compute capability 8.9 or later (GPU %d has %d.%d) and sizes that are "
                          "multiples of 16",
                          (unsigned long long)s->m, (unsigned long long)s->n,
                          (unsigned long long)s->k, s->op, mb->device, info.cc_major,
                          info.cc_minor);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_gemm_prepare(&mb->blas, &spec, g, err);
    if (rc == SPSIM_ENOTSUP) { /* the message names the GEMM and cuBLASLt's answer */
        rc = SPSIM_EGPU;
        if (err)
            err->code = rc;
    }
    return rc;
}

static int
member_open(struct member *mb, int device, const struct spsim_gpu_validate_report *r,
            struct spsim_error *err)
{
    mb->device = device;
    int rc;
    if ((rc = spsim_gpu_use(device, err)) ||
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
    void *bufs[5] = {mb->a, mb->b, mb->d, mb->src, mb->dst};
    for (int k = 0; k < 5; k++)
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

static int
replay_open(struct replay *R, struct spsim_gpu_validate_report *r, struct spsim_error *err)
{
    memset(R, 0, sizeof(*R));
    R->r = r;
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
    for (int j = 0; rc == SPSIM_OK && j < R->n; j++)
        rc = member_open(&R->m[j], j, r, err);
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
 * bias gradient's reduction after a wgrad GEMM). */
static int
compute(struct member *mb, const struct spsim_gpu_validate_step *s, size_t i,
        struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (uint32_t g = 0; rc == SPSIM_OK && g < s->gemms; g++)
        rc = spsim_gpu_gemm_launch(&mb->blas, &mb->gemm[i], mb->a, mb->b, mb->d, mb->compute, err);
    if (rc == SPSIM_OK && s->copy_bytes / 2 > 0)
        rc = spsim_gpu_cuda(cudaMemcpyAsync(mb->dst, mb->src, (size_t)(s->copy_bytes / 2),
                                            cudaMemcpyDeviceToDevice, mb->compute),
                            "cudaMemcpyAsync (replay of a memory-bound op)", err);
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
launch_collective(struct replay *R, size_t i, struct spsim_error *err)
{
    const struct spsim_gpu_validate_step *s = &R->r->steps[i];
    int rc = SPSIM_OK;
    for (int j = 0; rc == SPSIM_OK && j < R->n; j++) {
        struct member *mb = &R->m[j];
        if ((rc = spsim_gpu_use(mb->device, err)) ||
            (rc = wait_for(R->comm.streams[j], mb->ev[i][EV_C0], err)))
            break;
        rc = record(mb, i, EV_K0, R->comm.streams[j], err);
    }
    if (rc == SPSIM_OK)
        rc = spsim_gpu_coll_launch(&R->comm, s->coll, coll_count(s, R->n), ncclBfloat16, err);
    for (int j = 0; rc == SPSIM_OK && j < R->n; j++)
        if ((rc = spsim_gpu_use(R->m[j].device, err)) == SPSIM_OK)
            rc = record(&R->m[j], i, EV_K1, R->comm.streams[j], err);
    return rc;
}

static int
launch_step(struct replay *R, size_t i, struct spsim_error *err)
{
    const struct spsim_gpu_validate_step *s = &R->r->steps[i];
    bool coll = s->coll != SPSIM_COLL_COUNT;
    int rc = SPSIM_OK;
    for (int j = 0; rc == SPSIM_OK && j < R->n; j++)
        if ((rc = spsim_gpu_use(R->m[j].device, err)) == SPSIM_OK)
            rc = record(&R->m[j], i, EV_C0, R->m[j].compute, err);
    if (rc == SPSIM_OK && coll)
        rc = launch_collective(R, i, err);
    for (int j = 0; rc == SPSIM_OK && j < R->n; j++) {
        struct member *mb = &R->m[j];
        if ((rc = spsim_gpu_use(mb->device, err)) || (rc = compute(mb, s, i, err)) ||
            (rc = record(mb, i, EV_C1, mb->compute, err)) ||
            (coll && (rc = wait_for(mb->compute, mb->ev[i][EV_K1], err))))
            break;
        rc = record(mb, i, EV_END, mb->compute, err);
    }
    return rc;
}

static int
run_pass(struct replay *R, struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (size_t i = 0; rc == SPSIM_OK && i < R->r->nsteps; i++)
        rc = launch_step(R, i, err);
    for (int j = 0; rc == SPSIM_OK && j < R->n; j++)
        if ((rc = spsim_gpu_use(R->m[j].device, err)) == SPSIM_OK)
            rc = spsim_gpu_cuda(cudaStreamSynchronize(R->m[j].compute),
                                "cudaStreamSynchronize (replay)", err);
    return rc;
}

/* Elapsed seconds between two events of one GPU, the larger of it and *slowest kept. */
static int
slowest_of(struct member *mb, size_t i0, int e0, size_t i1, int e1, double *slowest,
           struct spsim_error *err)
{
    double s = 0;
    int rc = spsim_gpu_elapsed(mb->ev[i0][e0], mb->ev[i1][e1], &s, err);
    *slowest = s > *slowest ? s : *slowest;
    return rc;
}

/* Add one timed pass: per step and per phase, the slowest GPU. */
static int
collect(struct replay *R, struct spsim_error *err)
{
    struct spsim_gpu_validate_report *r = R->r;
    size_t last = r->nsteps - 1, fwd = R->last_forward;
    int rc = SPSIM_OK;
    for (size_t i = 0; rc == SPSIM_OK && i < r->nsteps; i++) {
        struct spsim_gpu_validate_step *s = &r->steps[i];
        double t[3] = {0, 0, 0};
        for (int j = 0; rc == SPSIM_OK && j < R->n; j++) {
            struct member *mb = &R->m[j];
            if ((rc = slowest_of(mb, i, EV_C0, i, EV_C1, &t[0], err)) == SPSIM_OK &&
                s->coll != SPSIM_COLL_COUNT)
                rc = slowest_of(mb, i, EV_K0, i, EV_K1, &t[1], err);
            if (rc == SPSIM_OK)
                rc = slowest_of(mb, i, EV_C0, i, EV_END, &t[2], err);
        }
        s->measured_compute_s += t[0];
        s->measured_comm_s += t[1];
        s->measured_s += t[2];
    }
    double f = 0, b = 0;
    for (int j = 0; rc == SPSIM_OK && j < R->n; j++) {
        if ((rc = slowest_of(&R->m[j], 0, EV_C0, fwd, EV_END, &f, err)) == SPSIM_OK && fwd < last)
            rc = slowest_of(&R->m[j], fwd, EV_END, last, EV_END, &b, err);
    }
    r->measured_forward_s += f;
    r->measured_backward_s += b;
    return rc;
}

static void
average(struct spsim_gpu_validate_report *r, uint32_t iters)
{
    for (size_t i = 0; i < r->nsteps; i++) {
        r->steps[i].measured_compute_s /= iters;
        r->steps[i].measured_comm_s /= iters;
        r->steps[i].measured_s /= iters;
    }
    r->measured_forward_s /= iters;
    r->measured_backward_s /= iters;
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
    if (rc != SPSIM_OK || (rc = replay_open(&R, out, err)) != SPSIM_OK)
        return rc;
    out->iters = o->iters;
    out->warmup_iters = o->warmup_iters;
    for (uint32_t w = 0; rc == SPSIM_OK && w < o->warmup_iters; w++)
        rc = run_pass(&R, err);
    for (uint32_t it = 0; rc == SPSIM_OK && it < o->iters; it++)
        if ((rc = run_pass(&R, err)) == SPSIM_OK)
            rc = collect(&R, err);
    if (rc == SPSIM_OK)
        average(out, o->iters);
    replay_close(&R);
    return rc;
}
