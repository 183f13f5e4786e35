/* Built when the `cuda` feature is absent: every GPU call says so. */
#include "config.h"

#include "internal.h"
#include "spsim/gpu.h"

bool
spsim_gpu_built(void)
{
    return false;
}

int
spsim_gpu_device_count(int *count, struct spsim_error *err)
{
    if (count)
        *count = 0;
    return spsim_fail(err, SPSIM_ENOTSUP,
                      "this spsim was built without GPU support (configure with -Dcuda=enabled on "
                      "a machine with the CUDA toolkit, cuBLAS and NCCL)");
}

void
spsim_gpu_calibrate_defaults(struct spsim_gpu_calibrate_options *o)
{
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
    };
}

int
spsim_gpu_calibrate(const struct spsim_gpu_calibrate_options *o, struct spsim_bw_table *collectives,
                    struct spsim_gemm_sample **gemms, size_t *ngemms, struct spsim_hbm_sample **hbm,
                    size_t *nhbm, struct spsim_error *err)
{
    (void)o;
    (void)collectives;
    if (gemms)
        *gemms = NULL;
    if (ngemms)
        *ngemms = 0;
    if (hbm)
        *hbm = NULL;
    if (nhbm)
        *nhbm = 0;
    return spsim_gpu_device_count(NULL, err);
}
