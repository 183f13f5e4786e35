/* CUDA, cuBLAS and NCCL errors by name; devices, provenance and device buffers. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

int
spsim_gpu_cuda(cudaError_t e, const char *step, struct spsim_error *err)
{
    if (e == cudaSuccess)
        return SPSIM_OK;
    return spsim_fail(err, SPSIM_EGPU, "%s: %s (%s)", step, cudaGetErrorName(e),
                      cudaGetErrorString(e));
}

int
spsim_gpu_cublas(cublasStatus_t s, const char *step, struct spsim_error *err)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return SPSIM_OK;
    return spsim_fail(err, SPSIM_EGPU, "%s: %s (%s)", step, cublasLtGetStatusName(s),
                      cublasLtGetStatusString(s));
}

static const char *
nccl_result_name(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess:
        return "ncclSuccess";
    case ncclUnhandledCudaError:
        return "ncclUnhandledCudaError";
    case ncclSystemError:
        return "ncclSystemError";
    case ncclInternalError:
        return "ncclInternalError";
    case ncclInvalidArgument:
        return "ncclInvalidArgument";
    case ncclInvalidUsage:
        return "ncclInvalidUsage";
    case ncclRemoteError:
        return "ncclRemoteError";
    case ncclInProgress:
        return "ncclInProgress";
    default: /* NCCL's enum, not ours: later versions may add results */
        return "ncclResult";
    }
}

int
spsim_gpu_nccl(ncclResult_t r, const char *step, struct spsim_error *err)
{
    if (r == ncclSuccess)
        return SPSIM_OK;
    return spsim_fail(err, SPSIM_EGPU, "%s: %s %d (%s)", step, nccl_result_name(r), (int)r,
                      ncclGetErrorString(r));
}

int
spsim_gpu_impl_device_count(int *count, struct spsim_error *err)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (count)
        *count = 0;
    /* No device, or no driver (libcuda absent or older than this runtime): no GPU here, which
     * is not a failure of a CUDA call but the absence of what it needs. */
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || (e == cudaSuccess && n < 1))
        return spsim_fail(err, SPSIM_ENOTSUP,
                          "no GPU: the CUDA driver reports no usable device "
                          "(%s: %s)",
                          cudaGetErrorName(e), cudaGetErrorString(e));
    int rc = spsim_gpu_cuda(e, "cudaGetDeviceCount", err);
    if (rc == SPSIM_OK && count)
        *count = n;
    return rc;
}

int
spsim_gpu_use(int device, struct spsim_error *err)
{
    return spsim_gpu_cuda(cudaSetDevice(device), "cudaSetDevice", err);
}

int
spsim_gpu_impl_info(int device, struct spsim_gpu_info *out, struct spsim_error *err)
{
    if (!out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_gpu_info: NULL argument");
    int n = 0, rc = spsim_gpu_impl_device_count(&n, err);
    if (rc != SPSIM_OK)
        return rc;
    if (device < 0 || device >= n)
        return spsim_fail(err, SPSIM_EINVAL, "GPU %d: no such device (%d visible)", device, n);
    struct cudaDeviceProp p;
    struct spsim_gpu_info info = {.device_count = n};
    if ((rc =
             spsim_gpu_cuda(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties", err)) ||
        (rc = spsim_gpu_cuda(cudaDriverGetVersion(&info.driver_version), "cudaDriverGetVersion",
                             err)) ||
        (rc = spsim_gpu_cuda(cudaRuntimeGetVersion(&info.runtime_version), "cudaRuntimeGetVersion",
                             err)) ||
        (rc = spsim_gpu_nccl(ncclGetVersion(&info.nccl_version), "ncclGetVersion", err)))
        return rc;
    memcpy(info.name, p.name, sizeof(info.name));
    info.name[sizeof(info.name) - 1] = '\0';
    info.cc_major = p.major;
    info.cc_minor = p.minor;
    info.sm_count = p.multiProcessorCount;
    info.memory_bytes = p.totalGlobalMem;
    *out = info;
    return SPSIM_OK;
}

int
spsim_gpu_elapsed(cudaEvent_t start, cudaEvent_t stop, double *seconds, struct spsim_error *err)
{
    float ms = 0;
    int rc = spsim_gpu_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime", err);
    *seconds = rc == SPSIM_OK ? (double)ms * 1e-3 : 0.0;
    return rc;
}

int
spsim_gpu_alloc(void **ptr, size_t bytes, const char *what, struct spsim_error *err)
{
    *ptr = NULL;
    cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1);
    if (e == cudaSuccess)
        return SPSIM_OK;
    *ptr = NULL;
    int device = -1;
    (void)cudaGetDevice(&device); /* only for the message */
    char step[160];
    snprintf(step, sizeof(step), "cudaMalloc (%s, %zu bytes on GPU %d)", what, bytes, device);
    return spsim_gpu_cuda(e, step, err);
}

/* xorshift64 (Marsaglia 2003): deterministic, fast, plenty for test data. */
static uint64_t
next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* One element's bits; see spsim_gpu_fill() for the ranges. */
static uint32_t
random_bits(enum spsim_dtype dtype, uint64_t *state)
{
    uint64_t r = next_random(state);
    uint32_t sign = (uint32_t)(r & 1), mant = (uint32_t)(r >> 8);
    uint32_t exp = (uint32_t)((r >> 1) & 7); /* 8 binades below 2 */
    uint32_t bf16 = sign << 15 | (120u + exp) << 7 | (mant & 0x7f);
    switch (dtype) {
    case SPSIM_DTYPE_FP16:
        return sign << 15 | (8u + exp) << 10 | (mant & 0x3ff);
    case SPSIM_DTYPE_FP8:
        return (uint32_t)(r >> 16) & 0xbf; /* E4M3 with the top exponent bit clear: |x| < 2 */
    case SPSIM_DTYPE_TF32:
    case SPSIM_DTYPE_FP32:
        return bf16 << 16 | ((mant >> 16) & 0xffff);
    case SPSIM_DTYPE_BF16:
    case SPSIM_DTYPE_NVFP4: /* not replayed (gpu_plan.c refuses it) */
    case SPSIM_DTYPE_COUNT:
        break;
    }
    return bf16;
}

static size_t
dtype_bytes(enum spsim_dtype dtype)
{
    switch (dtype) {
    case SPSIM_DTYPE_FP8:
        return 1;
    case SPSIM_DTYPE_TF32:
    case SPSIM_DTYPE_FP32:
        return 4;
    case SPSIM_DTYPE_BF16:
    case SPSIM_DTYPE_FP16:
    case SPSIM_DTYPE_NVFP4:
    case SPSIM_DTYPE_COUNT:
        break;
    }
    return 2;
}

int
spsim_gpu_fill(void *dev, size_t bytes, enum spsim_dtype dtype, cudaStream_t stream,
               struct spsim_error *err)
{
    /* One host chunk of at most 16 MiB, then doubling device-to-device copies. */
    size_t chunk = bytes < (16u << 20) ? bytes : (16u << 20);
    size_t esize = dtype_bytes(dtype);
    unsigned char *host = spsim_calloc(1, chunk + esize);
    if (!host)
        return spsim_fail(err, SPSIM_ENOMEM, "fill GPU buffer: out of host memory");
    uint64_t state = 0x9e3779b97f4a7c15ull; /* any non-zero seed; this is 2^64 / golden ratio */
    for (size_t i = 0; i < chunk; i += esize) {
        uint32_t v = random_bits(dtype, &state);
        memcpy(host + i, &v, esize); /* little-endian: the low esize bytes */
    }
    int rc = spsim_gpu_cuda(cudaMemcpyAsync(dev, host, chunk, cudaMemcpyHostToDevice, stream),
                            "fill GPU buffer (cudaMemcpyAsync host to device)", err);
    /* The host chunk is freed next: the copy out of it must be complete. */
    if (rc == SPSIM_OK)
        rc = spsim_gpu_cuda(cudaStreamSynchronize(stream), "fill GPU buffer (synchronise)", err);
    free(host);
    for (size_t done = chunk; rc == SPSIM_OK && done < bytes; done *= 2) {
        size_t n = done <= bytes - done ? done : bytes - done;
        rc = spsim_gpu_cuda(
            cudaMemcpyAsync((char *)dev + done, dev, n, cudaMemcpyDeviceToDevice, stream),
            "fill GPU buffer (cudaMemcpyAsync device to device)", err);
    }
    return rc;
}
