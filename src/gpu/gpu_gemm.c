/*
 * GEMMs through cuBLASLt. Every GEMM uses the "TN" layout (A transposed, column-major), the
 * only one cuBLASLt's FP8 kernels accept and the one Megatron's linear layers present: A is
 * stored k×m (lda = k), B k×n (ldb = k), D m×n (ldd = m); FP32 accumulation and scale.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "gpu_internal.h"

/* cuBLAS documentation, cublasSetWorkspace(): 32 MiB is the workspace recommended on Hopper
 * (4 MiB suffices before it); cuBLASLt's heuristic is told the same size. */
#define WORKSPACE_BYTES (32u << 20)

int
spsim_gpu_blas_open(struct spsim_gpu_blas *b, struct spsim_error *err)
{
    memset(b, 0, sizeof(*b));
    int rc = spsim_gpu_cublas(cublasLtCreate(&b->lt), "cublasLtCreate", err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_alloc(&b->workspace, WORKSPACE_BYTES, "cuBLASLt workspace", err);
    if (rc == SPSIM_OK)
        b->workspace_bytes = WORKSPACE_BYTES;
    else
        spsim_gpu_blas_close(b);
    return rc;
}

void
spsim_gpu_blas_close(struct spsim_gpu_blas *b)
{
    /* Release paths ignore errors: an earlier failure has already been reported. */
    if (b->workspace)
        (void)cudaFree(b->workspace);
    if (b->lt)
        (void)cublasLtDestroy(b->lt);
    memset(b, 0, sizeof(*b));
}

static size_t
input_bytes(enum spsim_dtype d)
{
    return d == SPSIM_DTYPE_FP8 ? 1 : 2;
}

static size_t
output_bytes(const struct spsim_gpu_gemm_spec *s)
{
    return s->fp32_output && s->dtype != SPSIM_DTYPE_FP8 ? 4 : 2;
}

void
spsim_gpu_gemm_bytes(const struct spsim_gpu_gemm_spec *s, size_t *a, size_t *b, size_t *d)
{
    const struct spsim_gpu_gemm_shape *x = &s->shape;
    *a = x->batch * x->m * x->k * input_bytes(s->dtype);
    *b = x->batch * x->k * x->n * input_bytes(s->dtype);
    *d = x->batch * x->m * x->n * output_bytes(s);
}

bool
spsim_gpu_fp8_ok(int cc_major, int cc_minor, const struct spsim_gpu_gemm_shape *s)
{
    /* FP8 tensor cores: compute capability 8.9 (Ada) and 9.0 (Hopper) onwards (CUDA
     * Programming Guide, "Compute Capabilities"); cuBLASLt's FP8 matmul needs leading
     * dimensions that are multiples of 16 (cuBLAS documentation, cublasLtMatmul, FP8 notes). */
    bool unit = cc_major > 8 || (cc_major == 8 && cc_minor >= 9);
    return unit && s->m % 16 == 0 && s->n % 16 == 0 && s->k % 16 == 0;
}

static cudaDataType_t
input_type(enum spsim_dtype d)
{
    switch (d) {
    case SPSIM_DTYPE_FP16:
        return CUDA_R_16F;
    case SPSIM_DTYPE_FP8:
        return CUDA_R_8F_E4M3;
    case SPSIM_DTYPE_BF16:
    case SPSIM_DTYPE_NVFP4:
    case SPSIM_DTYPE_TF32:
    case SPSIM_DTYPE_FP32:
    case SPSIM_DTYPE_COUNT:
        break;
    }
    return CUDA_R_16BF;
}

static cudaDataType_t
output_type(const struct spsim_gpu_gemm_spec *s)
{
    if (output_bytes(s) == 4)
        return CUDA_R_32F;
    return s->dtype == SPSIM_DTYPE_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

static void
describe(const struct spsim_gpu_gemm_spec *s, const char *call, char *buf, size_t cap)
{
    const struct spsim_gpu_gemm_shape *x = &s->shape;
    const char *acc = s->dtype != SPSIM_DTYPE_FP8 ? ""
                      : s->fast_accum             ? " fast-accumulate"
                                                  : " split-accumulate";
    snprintf(buf, cap, "cuBLASLt %s%s GEMM M=%llu N=%llu K=%llu batch=%llu%s (%s)",
             spsim_dtype_name(s->dtype), acc, (unsigned long long)x->m, (unsigned long long)x->n,
             (unsigned long long)x->k, (unsigned long long)x->batch,
             output_bytes(s) == 4 ? " into fp32" : "", call);
}

static cublasStatus_t
make_layout(cublasLtMatrixLayout_t *l, cudaDataType_t type, uint64_t rows, uint64_t cols,
            uint64_t batch)
{
    cublasStatus_t s = cublasLtMatrixLayoutCreate(l, type, rows, cols, (int64_t)rows);
    if (s != CUBLAS_STATUS_SUCCESS || batch <= 1)
        return s;
    int32_t count = (int32_t)batch;
    int64_t stride = (int64_t)(rows * cols);
    s = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                         sizeof(count));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                             &stride, sizeof(stride));
    return s;
}

static cublasStatus_t
make_desc(struct spsim_gpu_gemm *g)
{
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasStatus_t s = cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
    /* FP8 accumulation as Transformer Engine sets it (common/gemm/cublaslt_gemm.cu: the int8
     * FAST_ACCUM attribute is !use_split_accumulator): fast accumulation, which cuBLASLt's
     * documentation says may run faster as partial sums are not periodically promoted to
     * higher precision, for fprop; the split accumulator for dgrad and wgrad
     * (pytorch/module/base.py: _2X_ACC_FPROP False, _2X_ACC_DGRAD and _WGRAD True). Set either
     * way, so that cuBLASLt's default does not decide. */
    int8_t fast = g->spec.fast_accum ? 1 : 0;
    if (s == CUBLAS_STATUS_SUCCESS && g->spec.dtype == SPSIM_DTYPE_FP8)
        s = cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                           sizeof(fast));
    return s;
}

/* The first algorithm of cuBLASLt's heuristic, as cuBLAS itself would pick. */
static int
choose_algo(struct spsim_gpu_blas *blas, struct spsim_gpu_gemm *g, struct spsim_error *err)
{
    char step[192];
    cublasLtMatmulPreference_t pref = NULL;
    uint64_t ws = blas->workspace_bytes;
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    cublasStatus_t s = cublasLtMatmulPreferenceCreate(&pref);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws, sizeof(ws));
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(blas->lt, g->desc, g->a, g->b, g->d, g->d, pref, 1,
                                           &result, &found);
    if (pref)
        (void)cublasLtMatmulPreferenceDestroy(pref);
    describe(&g->spec, "cublasLtMatmulAlgoGetHeuristic", step, sizeof(step));
    if ((s == CUBLAS_STATUS_SUCCESS && found < 1) || s == CUBLAS_STATUS_NOT_SUPPORTED)
        return spsim_fail(err, SPSIM_ENOTSUP, "%s: no algorithm for these types and sizes", step);
    if (s == CUBLAS_STATUS_SUCCESS)
        g->algo = result.algo;
    return spsim_gpu_cublas(s, step, err);
}

int
spsim_gpu_gemm_prepare(struct spsim_gpu_blas *blas, const struct spsim_gpu_gemm_spec *spec,
                       struct spsim_gpu_gemm *g, struct spsim_error *err)
{
    memset(g, 0, sizeof(*g));
    g->spec = *spec;
    g->alpha = 1.0f;
    g->beta = spec->accumulate ? 1.0f : 0.0f;
    const struct spsim_gpu_gemm_shape *x = &spec->shape;
    cudaDataType_t in = input_type(spec->dtype), out = output_type(spec);
    cublasStatus_t s = make_desc(g);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = make_layout(&g->a, in, x->k, x->m, x->batch);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = make_layout(&g->b, in, x->k, x->n, x->batch);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = make_layout(&g->d, out, x->m, x->n, x->batch);
    char step[192];
    describe(spec, "descriptors", step, sizeof(step));
    int rc = spsim_gpu_cublas(s, step, err);
    if (rc == SPSIM_OK)
        rc = choose_algo(blas, g, err);
    if (rc != SPSIM_OK)
        spsim_gpu_gemm_release(g);
    return rc;
}

int
spsim_gpu_gemm_launch(struct spsim_gpu_blas *blas, const struct spsim_gpu_gemm *g, const void *a,
                      const void *b, void *d, cudaStream_t stream, struct spsim_error *err)
{
    cublasStatus_t s =
        cublasLtMatmul(blas->lt, g->desc, &g->alpha, a, g->a, b, g->b, &g->beta, d, g->d, d, g->d,
                       &g->algo, blas->workspace, blas->workspace_bytes, stream);
    if (s == CUBLAS_STATUS_SUCCESS)
        return SPSIM_OK;
    char step[192];
    describe(&g->spec, "cublasLtMatmul", step, sizeof(step));
    return spsim_gpu_cublas(s, step, err);
}

void
spsim_gpu_gemm_release(struct spsim_gpu_gemm *g)
{
    if (g->a)
        (void)cublasLtMatrixLayoutDestroy(g->a);
    if (g->b)
        (void)cublasLtMatrixLayoutDestroy(g->b);
    if (g->d)
        (void)cublasLtMatrixLayoutDestroy(g->d);
    if (g->desc)
        (void)cublasLtMatmulDescDestroy(g->desc);
    memset(g, 0, sizeof(*g));
}
