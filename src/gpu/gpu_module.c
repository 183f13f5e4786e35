/* The entry point of libspsim-gpu.so: the table the loader in libspsim resolves with dlsym. */
#include "config.h"

#include "gpu_plan.h"

static const struct spsim_gpu_vtable vtable = {
    .abi = SPSIM_GPU_MODULE_ABI,
    .device_count = spsim_gpu_impl_device_count,
    .info = spsim_gpu_impl_info,
    .calibrate = spsim_gpu_impl_calibrate,
    .validate = spsim_gpu_impl_validate,
    .mpi_rank = spsim_gpu_impl_mpi_rank,
    .finalize = spsim_gpu_impl_finalize,
};

const struct spsim_gpu_vtable *spsim_gpu_module_vtable(void) __attribute__((visibility("default")));

const struct spsim_gpu_vtable *
spsim_gpu_module_vtable(void)
{
    return &vtable;
}
