/*
 * spsim_gpu_impl_calibrate(): NCCL collectives over the size sweep, cuBLASLt GEMMs over the layer's
 * and a grid's shapes, and device-to-device copies, each timed with CUDA events after warm-up.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/collective_model.h"
#include "gpu_internal.h"

/* Most sizes in a sweep: 1 B .. 64 GiB by factors of 2 is 37. */
#define MAX_SIZES 64
/* HBM copies: spsim_gpu_hbm_sizes(), at most this many. */
#define HBM_SIZES SPSIM_GPU_HBM_MAX_SIZES

/* Fraction of the free device memory the GEMM and copy buffers may take: the rest is left to
 * cuBLASLt's workspace, the CUDA context and NCCL's own buffers. */
#define MEMORY_SHARE 0.8

struct progress {
    const struct spsim_gpu_calibrate_options *o;
    size_t done, total;
};

static void tick(struct progress *p, const char *fmt, ...) SPSIM_PRINTF(2, 3);

static void
tick(struct progress *p, const char *fmt, ...)
{
    p->done++;
    if (!p->o->progress)
        return;
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    p->o->progress(p->o->progress_cookie, what, p->done, p->total);
}

/* Time `iters` launches between two events after `warmup` launches: seconds per launch. */
typedef int (*launch_fn)(void *ctx, cudaStream_t stream, struct spsim_error *err);

static int
time_launches(launch_fn launch, void *ctx, cudaStream_t s, cudaEvent_t ev[2],
              const struct spsim_gpu_calibrate_options *o, double *seconds, struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (uint32_t i = 0; rc == SPSIM_OK && i < o->warmup_iters; i++)
        rc = launch(ctx, s, err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_cuda(cudaEventRecord(ev[0], s), "cudaEventRecord", err);
    for (uint32_t i = 0; rc == SPSIM_OK && i < o->iters; i++)
        rc = launch(ctx, s, err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_cuda(cudaEventRecord(ev[1], s), "cudaEventRecord", err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_cuda(cudaEventSynchronize(ev[1]), "cudaEventSynchronize", err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_elapsed(ev[0], ev[1], seconds, err);
    *seconds /= o->iters;
    return rc;
}

/* ---- provenance ------------------------------------------------------------------------ */

static int set_info(struct spsim_bw_table *t, const char *key, const char *fmt, ...)
    SPSIM_PRINTF(3, 4);

static int
set_info(struct spsim_bw_table *t, const char *key, const char *fmt, ...)
{
    char value[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    return spsim_bw_table_set_info(t, key, value);
}

static int
hosts_of(const struct spsim_gpu_comm *c, char *buf, size_t cap, struct spsim_error *err)
{
    if (c->mpi)
        return spsim_gpu_mpi_hosts(buf, cap, err);
    if (gethostname(buf, cap - 1) != 0)
        snprintf(buf, cap, "?");
    buf[cap - 1] = '\0';
    return SPSIM_OK;
}

static int
provenance(struct spsim_bw_table *t, const struct spsim_gpu_comm *c,
           const struct spsim_gpu_calibrate_options *o, struct spsim_error *err)
{
    struct spsim_gpu_info g;
    char hosts[1024];
    int rc = spsim_gpu_impl_info(c->devices[0], &g, err);
    if (rc == SPSIM_OK)
        rc = hosts_of(c, hosts, sizeof(hosts), err);
    if (rc != SPSIM_OK)
        return rc;
    /* Version codes: CUDA 1000·major + 10·minor; NCCL ≥ 2.9 10000·major + 100·minor + patch. */
    if (spsim_bw_table_set_info(t, "source",
                                c->mpi ? "spsim calibrate (MPI, one rank per GPU)"
                                       : "spsim calibrate (local GPUs)") ||
        spsim_bw_table_set_info(t, "gpu", g.name) ||
        set_info(t, "compute_capability", "%d.%d", g.cc_major, g.cc_minor) ||
        set_info(t, "sm_count", "%d", g.sm_count) ||
        set_info(t, "gpu_memory_bytes", "%llu", (unsigned long long)g.memory_bytes) ||
        set_info(t, "cuda_driver", "%d.%d", g.driver_version / 1000,
                 g.driver_version % 1000 / 10) ||
        set_info(t, "cuda_runtime", "%d.%d", g.runtime_version / 1000,
                 g.runtime_version % 1000 / 10) ||
        set_info(t, "nccl_version", "%d.%d.%d", g.nccl_version / 10000,
                 g.nccl_version % 10000 / 100, g.nccl_version % 100) ||
        set_info(t, "gpus", "%d", c->nranks) || set_info(t, "nodes", "%d", c->nodes) ||
        spsim_bw_table_set_info(t, "hosts", hosts) ||
        spsim_bw_table_set_info(t, "datatype", "float") ||
        set_info(t, "warmup_iters", "%u", o->warmup_iters) || set_info(t, "iters", "%u", o->iters))
        return spsim_fail(err, SPSIM_ENOMEM, "calibrate: out of memory recording provenance");
    return SPSIM_OK;
}

/* ---- collectives ----------------------------------------------------------------------- */

static int
sweep_op(struct spsim_gpu_comm *c, enum spsim_coll_op op, const uint64_t *sizes, size_t n,
         struct spsim_bw_table *t, struct progress *p, struct spsim_error *err)
{
    const struct spsim_gpu_calibrate_options *o = p->o;
    uint64_t last = 0;
    int rc = SPSIM_OK;
    for (size_t i = 0; rc == SPSIM_OK && i < n; i++) {
        uint64_t size = 0,
                 count = spsim_gpu_coll_count(op, sizes[i], 4, (uint32_t)c->nranks, &size);
        tick(p, "%s %llu B", spsim_coll_op_name(op), (unsigned long long)sizes[i]);
        if (count == 0 || size == last)
            continue; /* rounds to nothing, or to the size already measured */
        last = size;
        double s = 0;
        rc = spsim_gpu_coll_time(c, op, count, o->warmup_iters, o->iters, &s, err);
        if (rc != SPSIM_OK)
            break;
        struct spsim_bw_sample b = {.op = op,
                                    .ranks = (uint32_t)c->nranks,
                                    .nodes = (uint32_t)c->nodes,
                                    .size_bytes = size,
                                    .time_s = s};
        b.algbw_GBps = (double)size / 1e9 / s;
        b.busbw_GBps = b.algbw_GBps * spsim_wire_fraction(op, (uint32_t)c->nranks);
        int added = spsim_bw_table_add(t, &b);
        if (added == SPSIM_ENOMEM)
            rc = spsim_fail(err, added, "calibrate: out of memory storing samples");
        else if (added != SPSIM_OK)
            rc = spsim_fail(err, SPSIM_EGPU,
                            "NCCL %s of %llu B: CUDA events gave an implausible "
                            "time of %g s",
                            spsim_coll_op_name(op), (unsigned long long)size, s);
    }
    return rc;
}

static int
measure_collectives(const struct spsim_gpu_calibrate_options *o, struct spsim_bw_table *t,
                    struct progress *p, const uint64_t *sizes, size_t nsizes,
                    struct spsim_error *err)
{
    /* Out-of-place, so two buffers of the largest size per GPU (AllReduce needs both whole);
     * at least 64 KiB for the check of known data. */
    size_t bytes = o->max_bytes > (64u << 10) ? (size_t)o->max_bytes : (64u << 10);
    struct spsim_gpu_comm c;
    int rc = spsim_gpu_comm_open(&c, o->gpus, o->mpi, bytes, err);
    if (rc != SPSIM_OK)
        return rc;
    /* 64 KiB per rank (16384 floats) spans several of NCCL's chunks yet is read back at once. */
    uint64_t check = bytes / sizeof(float) / (uint64_t)c.nranks;
    if ((rc = spsim_gpu_coll_verify(&c, check < 16384 ? check : 16384, err)) == SPSIM_OK)
        rc = provenance(t, &c, o, err);
    static const enum spsim_coll_op ops[] = {SPSIM_COLL_ALL_GATHER, SPSIM_COLL_REDUCE_SCATTER,
                                             SPSIM_COLL_ALL_REDUCE, SPSIM_COLL_SEND_RECV};
    for (size_t k = 0; rc == SPSIM_OK && k < SPSIM_ARRAY_LENGTH(ops); k++)
        rc = sweep_op(&c, ops[k], sizes, nsizes, t, p, err);
    spsim_gpu_comm_close(&c);
    return rc;
}

/* ---- GEMMs and copies on one GPU ------------------------------------------------------- */

/* What one GPU's GEMM and copy measurements share. */
struct bench {
    struct spsim_gpu_blas blas;
    cudaStream_t stream;
    cudaEvent_t ev[2];
    void *a, *b, *d; /* GEMM operands, or copy source (a) and destination (b) */
    size_t a_bytes, b_bytes;
    struct spsim_gpu_gemm gemm;
    size_t copy_bytes;
    struct spsim_gpu_info info;
};

static int
bench_open(struct bench *x, struct spsim_error *err)
{
    memset(x, 0, sizeof(*x));
    int rc;
    if ((rc = spsim_gpu_impl_info(0, &x->info, err)) || (rc = spsim_gpu_use(0, err)) ||
        (rc = spsim_gpu_blas_open(&x->blas, err)) ||
        (rc = spsim_gpu_cuda(cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking),
                             "cudaStreamCreate", err)) ||
        (rc = spsim_gpu_cuda(cudaEventCreate(&x->ev[0]), "cudaEventCreate", err)))
        return rc;
    return spsim_gpu_cuda(cudaEventCreate(&x->ev[1]), "cudaEventCreate", err);
}

static void
bench_free_buffers(struct bench *x)
{
    void *bufs[3] = {x->a, x->b, x->d};
    for (int i = 0; i < 3; i++)
        if (bufs[i])
            (void)cudaFree(bufs[i]); /* release path: errors were reported before */
    x->a = x->b = x->d = NULL;
}

static void
bench_close(struct bench *x)
{
    spsim_gpu_gemm_release(&x->gemm);
    bench_free_buffers(x);
    for (int i = 0; i < 2; i++)
        if (x->ev[i])
            (void)cudaEventDestroy(x->ev[i]);
    if (x->stream)
        (void)cudaStreamDestroy(x->stream);
    spsim_gpu_blas_close(&x->blas);
}

static int
free_budget(size_t *budget, struct spsim_error *err)
{
    size_t free_b = 0, total = 0;
    int rc = spsim_gpu_cuda(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo", err);
    *budget = (size_t)(MEMORY_SHARE * (double)free_b);
    return rc;
}

static int
launch_gemm(void *ctx, cudaStream_t s, struct spsim_error *err)
{
    struct bench *x = ctx;
    return spsim_gpu_gemm_launch(&x->blas, &x->gemm, x->a, x->b, x->d, s, err);
}

static int
launch_copy(void *ctx, cudaStream_t s, struct spsim_error *err)
{
    struct bench *x = ctx;
    return spsim_gpu_cuda(cudaMemcpyAsync(x->b, x->a, x->copy_bytes, cudaMemcpyDeviceToDevice, s),
                          "cudaMemcpyAsync (device to device)", err);
}

static struct spsim_gpu_gemm_spec
gemm_spec(const struct spsim_gpu_gemm_shape *s, enum spsim_dtype dtype)
{
    return (struct spsim_gpu_gemm_spec){.shape = *s, .dtype = dtype};
}

static size_t
shape_total(const struct spsim_gpu_gemm_shape *s)
{
    size_t a, b, d;
    struct spsim_gpu_gemm_spec spec = gemm_spec(s, SPSIM_DTYPE_BF16);
    spsim_gpu_gemm_bytes(&spec, &a, &b, &d);
    return a + b + d;
}

static int
by_total(const void *l, const void *r)
{
    size_t a = shape_total(l), b = shape_total(r);
    return (a > b) - (a < b);
}

/* Sort by size and keep the longest prefix whose largest operands fit in the budget together;
 * allocate and fill those operands (BF16 sizes bound the FP8 ones). */
static int
gemm_buffers(struct bench *x, struct spsim_gpu_gemm_shape *v, size_t *n, size_t budget,
             struct spsim_error *err)
{
    qsort(v, *n, sizeof(*v), by_total);
    size_t ma = 0, mb = 0, md = 0, keep = 0;
    for (; keep < *n; keep++) {
        size_t a, b, d;
        struct spsim_gpu_gemm_spec spec = gemm_spec(&v[keep], SPSIM_DTYPE_BF16);
        spsim_gpu_gemm_bytes(&spec, &a, &b, &d);
        a = a > ma ? a : ma;
        b = b > mb ? b : mb;
        d = d > md ? d : md;
        if (a + b + d > budget)
            break;
        ma = a, mb = b, md = d;
    }
    *n = keep;
    x->a_bytes = ma;
    x->b_bytes = mb;
    int rc;
    if ((rc = spsim_gpu_alloc(&x->a, ma, "GEMM operand A", err)) ||
        (rc = spsim_gpu_alloc(&x->b, mb, "GEMM operand B", err)))
        return rc;
    return spsim_gpu_alloc(&x->d, md, "GEMM output D", err);
}

static int
time_gemm(struct bench *x, const struct spsim_gpu_gemm_shape *s,
          const struct spsim_gpu_gemm_variant *var, const struct spsim_gpu_calibrate_options *o,
          struct spsim_gemm_sample *out, struct spsim_error *err)
{
    struct spsim_gpu_gemm_spec spec = gemm_spec(s, var->dtype);
    spec.fast_accum = var->fast_accum;
    double sec = 0;
    int rc = spsim_gpu_gemm_prepare(&x->blas, &spec, &x->gemm, err);
    if (rc == SPSIM_OK)
        rc = time_launches(launch_gemm, x, x->stream, x->ev, o, &sec, err);
    spsim_gpu_gemm_release(&x->gemm);
    *out = (struct spsim_gemm_sample){.m = s->m,
                                      .n = s->n,
                                      .k = s->k,
                                      .dtype = var->dtype,
                                      .time_s = sec,
                                      .fp8_fast_accum = var->fast_accum};
    out->tflops = 2.0 * (double)s->m * (double)s->n * (double)s->k / sec / 1e12;
    return rc;
}

/* One variant over the shapes; a shape cuBLASLt has no kernel for (SPSIM_ENOTSUP) is skipped.
 * The operands are refilled when the input type changes. */
static int
gemm_pass(struct bench *x, const struct spsim_gpu_gemm_shape *v, size_t n,
          const struct spsim_gpu_gemm_variant *var, bool fill, struct spsim_gemm_sample *out,
          size_t *nout, size_t *skipped, struct progress *p, struct spsim_error *err)
{
    int rc = SPSIM_OK;
    enum spsim_dtype dtype = var->dtype;
    if (fill && ((rc = spsim_gpu_fill(x->a, x->a_bytes, dtype, x->stream, err)) ||
                 (rc = spsim_gpu_fill(x->b, x->b_bytes, dtype, x->stream, err))))
        return rc;
    for (size_t i = 0; rc == SPSIM_OK && i < n; i++) {
        tick(p, "gemm %s%s %llux%llux%llu", spsim_dtype_name(dtype),
             dtype != SPSIM_DTYPE_FP8 ? ""
             : var->fast_accum        ? " fast-accumulate"
                                      : " split-accumulate",
             (unsigned long long)v[i].m, (unsigned long long)v[i].n, (unsigned long long)v[i].k);
        if (dtype == SPSIM_DTYPE_FP8 &&
            !spsim_gpu_fp8_ok(x->info.cc_major, x->info.cc_minor, &v[i]))
            continue;
        struct spsim_gemm_sample sample;
        rc = time_gemm(x, &v[i], var, p->o, &sample, err);
        if (rc == SPSIM_ENOTSUP)
            ++*skipped;
        else if (rc == SPSIM_OK)
            out[(*nout)++] = sample;
        rc = rc == SPSIM_ENOTSUP ? SPSIM_OK : rc;
    }
    return rc;
}

static bool
want_fp8(const struct bench *x, const struct spsim_gpu_calibrate_options *o)
{
    struct spsim_gpu_gemm_shape unit = {16, 16, 16, 1};
    return o->fp8 && spsim_gpu_fp8_ok(x->info.cc_major, x->info.cc_minor, &unit);
}

static int
measure_gemms(struct bench *x, struct spsim_gpu_gemm_shape *v, size_t n, size_t *skipped,
              struct spsim_gemm_sample **out, size_t *nout, struct progress *p,
              struct spsim_error *err)
{
    struct spsim_gpu_gemm_variant var[3];
    size_t budget = 0, keep = n, nvar = spsim_gpu_gemm_variants(want_fp8(x, p->o), var);
    int rc = free_budget(&budget, err);
    if (rc == SPSIM_OK)
        rc = gemm_buffers(x, v, &keep, budget, err);
    *skipped = n - keep;
    p->total = p->done + keep * nvar + HBM_SIZES;
    *out = spsim_calloc(nvar * keep + 1, sizeof(**out));
    if (rc == SPSIM_OK && !*out)
        rc = spsim_fail(err, SPSIM_ENOMEM, "calibrate: out of memory for GEMM samples");
    for (size_t k = 0; rc == SPSIM_OK && keep > 0 && k < nvar; k++)
        rc = gemm_pass(x, v, keep, &var[k], k == 0 || var[k].dtype != var[k - 1].dtype, *out, nout,
                       skipped, p, err);
    bench_free_buffers(x);
    return rc;
}

/* One copy size on fresh buffers: nothing of them is in the L2 from an earlier size. */
static int
time_copy(struct bench *x, uint64_t bytes, const struct spsim_gpu_calibrate_options *o,
          struct spsim_hbm_sample *out, struct spsim_error *err)
{
    double sec = 0;
    x->copy_bytes = bytes;
    int rc;
    if ((rc = spsim_gpu_alloc(&x->a, bytes, "copy source", err)) == SPSIM_OK &&
        (rc = spsim_gpu_alloc(&x->b, bytes, "copy destination", err)) == SPSIM_OK &&
        (rc = spsim_gpu_fill(x->a, bytes, SPSIM_DTYPE_BF16, x->stream, err)) == SPSIM_OK)
        rc = time_launches(launch_copy, x, x->stream, x->ev, o, &sec, err);
    /* A copy reads and writes every byte: 2 × bytes of HBM traffic. */
    *out = (struct spsim_hbm_sample){bytes, sec, 2.0 * (double)bytes / sec / 1e9};
    if (x->stream)
        (void)cudaStreamSynchronize(x->stream); /* release path: before the buffers go */
    bench_free_buffers(x);
    return rc;
}

static int
measure_hbm(struct bench *x, struct spsim_bw_table *t, struct spsim_hbm_sample **out, size_t *nout,
            struct progress *p, struct spsim_error *err)
{
    uint64_t sizes[HBM_SIZES];
    size_t budget = 0, n = 0;
    int l2 = 0, rc = free_budget(&budget, err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0),
                            "cudaDeviceGetAttribute (L2 cache size)", err);
    if (rc == SPSIM_OK)
        n = spsim_gpu_hbm_sizes((uint64_t)l2, budget, sizes, HBM_SIZES);
    p->total = p->done + n;
    *out = spsim_calloc(HBM_SIZES, sizeof(**out));
    if (rc == SPSIM_OK && !*out)
        rc = spsim_fail(err, SPSIM_ENOMEM, "calibrate: out of memory for copy samples");
    if (rc == SPSIM_OK && (set_info(t, "l2_cache_bytes", "%d", l2) ||
                           set_info(t, "hbm_copy_sizes", "%zu powers of two from %llu B", n,
                                    n ? (unsigned long long)sizes[0] : 0ull)))
        rc = spsim_fail(err, SPSIM_ENOMEM, "calibrate: out of memory recording provenance");
    for (size_t i = 0; rc == SPSIM_OK && i < n; i++) {
        tick(p, "hbm copy %llu B", (unsigned long long)sizes[i]);
        if ((rc = time_copy(x, sizes[i], p->o, &(*out)[*nout], err)) == SPSIM_OK)
            ++*nout;
    }
    return rc;
}

static int
measure_local(struct spsim_gpu_gemm_shape *v, size_t n, struct spsim_bw_table *t,
              struct spsim_gemm_sample **gemms, size_t *ngemms, struct spsim_hbm_sample **hbm,
              size_t *nhbm, struct progress *p, struct spsim_error *err)
{
    struct bench x;
    size_t skipped = 0;
    int rc = bench_open(&x, err);
    if (rc == SPSIM_OK)
        rc = measure_gemms(&x, v, n, &skipped, gemms, ngemms, p, err);
    if (rc == SPSIM_OK)
        rc = measure_hbm(&x, t, hbm, nhbm, p, err);
    if (rc == SPSIM_OK &&
        (set_info(t, "gemm_shapes_skipped", "%zu", skipped) ||
         spsim_bw_table_set_info(t, "fp8_accumulation",
                                 "each FP8 shape twice: fast accumulation "
                                 "(CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1, Transformer Engine's "
                                 "fprop) and split accumulator (0, its dgrad and wgrad)")))
        rc = spsim_fail(err, SPSIM_ENOMEM, "calibrate: out of memory recording provenance");
    bench_close(&x);
    return rc;
}

/* A failed calibration returns no samples. */
static void
discard(struct spsim_gemm_sample **gemms, size_t *ngemms, struct spsim_hbm_sample **hbm,
        size_t *nhbm)
{
    free(*gemms);
    free(*hbm);
    *gemms = NULL;
    *hbm = NULL;
    *ngemms = *nhbm = 0;
}

int
spsim_gpu_impl_calibrate(const struct spsim_gpu_calibrate_options *o,
                         struct spsim_bw_table *collectives, struct spsim_gemm_sample **gemms,
                         size_t *ngemms, struct spsim_hbm_sample **hbm, size_t *nhbm,
                         struct spsim_error *err)
{
    uint64_t sizes[MAX_SIZES];
    struct spsim_gpu_gemm_shape *shapes = NULL;
    size_t nshapes = 0, nsizes = 0;
    int rc = spsim_gpu_calibrate_begin(o, collectives, gemms, ngemms, hbm, nhbm, err);
    if (rc != SPSIM_OK)
        return rc;
    rc = spsim_gpu_impl_device_count(NULL, err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_calibrate_shapes(o, &shapes, &nshapes, err);
    if (rc == SPSIM_OK) {
        nsizes = spsim_gpu_sweep_sizes(o, sizes, MAX_SIZES);
        struct spsim_gpu_gemm_variant var[3];
        size_t nvar = spsim_gpu_gemm_variants(o->fp8, var);
        struct progress p = {o, 0, 4 * nsizes + HBM_SIZES + nshapes * nvar};
        rc = measure_collectives(o, collectives, &p, sizes, nsizes, err);
        /* Under MPI the GEMMs and copies of one GPU are enough: rank 0 measures them. */
        if (rc == SPSIM_OK && spsim_gpu_impl_mpi_rank() == 0)
            rc = measure_local(shapes, nshapes, collectives, gemms, ngemms, hbm, nhbm, &p, err);
    }
    free(shapes);
    if (rc != SPSIM_OK)
        discard(gemms, ngemms, hbm, nhbm);
    if (rc != SPSIM_OK && o->mpi)
        spsim_gpu_mpi_note_failure();
    return rc;
}
