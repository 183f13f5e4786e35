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
