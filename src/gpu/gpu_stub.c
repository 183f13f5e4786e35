/* Built when the `cuda` feature is absent: every GPU call says so, after checking its input
 * like the CUDA build does (so that a bad option is reported as such in both builds). */
#include "config.h"

#include "gpu_plan.h"

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

int
spsim_gpu_info(int device, struct spsim_gpu_info *out, struct spsim_error *err)
{
    (void)device;
    if (!out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_gpu_info: NULL argument");
    return spsim_gpu_device_count(NULL, err);
}

int
spsim_gpu_calibrate(const struct spsim_gpu_calibrate_options *o, struct spsim_bw_table *collectives,
                    struct spsim_gemm_sample **gemms, size_t *ngemms, struct spsim_hbm_sample **hbm,
                    size_t *nhbm, struct spsim_error *err)
{
    int rc = spsim_gpu_calibrate_begin(o, collectives, gemms, ngemms, hbm, nhbm, err);
    return rc != SPSIM_OK ? rc : spsim_gpu_device_count(NULL, err);
}

int
spsim_gpu_validate(const struct spsim_model *model, const struct spsim_hardware *hw,
                   const struct spsim_parallel *par, const struct spsim_gpu_validate_options *o,
                   struct spsim_gpu_validate_report *out, struct spsim_error *err)
{
    int rc = spsim_gpu_validate_check(o, err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_validate_plan(model, hw, par, out, err);
    return rc != SPSIM_OK ? rc : spsim_gpu_device_count(NULL, err);
}

int
spsim_gpu_mpi_rank(void)
{
    return 0;
}

void
spsim_gpu_finalize(void)
{
}
