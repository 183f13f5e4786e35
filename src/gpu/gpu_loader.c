/*
 * The public GPU functions. With the `cuda` feature they load libspsim-gpu.so on first use
 * (see gpu_plan.h for why it is a separate module); without it, or when the module or the CUDA
 * runtime it needs cannot be loaded, every call returns SPSIM_ENOTSUP saying why. Options are
 * checked before anything is loaded, so a bad option is reported as such in every build.
 */
/* dladdr() and Dl_info are GNU extensions of <dlfcn.h> (glibc guards them with __USE_GNU). */
#define _GNU_SOURCE
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if HAVE_CUDA
#include <dlfcn.h>
#endif

#include "gpu_plan.h"

bool
spsim_gpu_built(void)
{
    return HAVE_CUDA;
}

const char *
spsim_gpu_module_choose(const char *env, const char *self, const char *build_root,
                        const char *build_module, const char *install_module)
{
    if (env && *env)
        return env;
    /* Only a library (or test program) that was itself loaded from the build tree takes the
     * build tree's module: an installed libspsim must not pick up a stale or differently
     * configured module just because the build directory it was installed from still exists. */
    size_t n = build_root ? strlen(build_root) : 0;
    while (n > 1 && build_root[n - 1] == '/')
        n--;
    if (self && n > 0 && strncmp(self, build_root, n) == 0 && self[n] == '/')
        return build_module;
    return install_module;
}

#if HAVE_CUDA
static const struct spsim_gpu_vtable *loaded;
static char load_error[SPSIM_ERROR_MESSAGE_MAX];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* The canonical path of the file this code was loaded from: libspsim.so, or the program that
 * links the library statically (a test); "" when neither can be resolved. */
static void
self_path(char buf[PATH_MAX])
{
    Dl_info info;
    buf[0] = '\0';
    if (dladdr((void *)(uintptr_t)spsim_gpu_built, &info) && info.dli_fname &&
        realpath(info.dli_fname, buf))
        return;
    if (!realpath("/proc/self/exe", buf)) /* dladdr names the main program as it was invoked */
        buf[0] = '\0';
}

static const char *
module_path(char self[PATH_MAX], char root[PATH_MAX])
{
    self_path(self);
    if (!realpath(SPSIM_BUILD_ROOT, root)) /* the build tree is gone: not loaded from it */
        root[0] = '\0';
    return spsim_gpu_module_choose(getenv("SPSIM_GPU_MODULE"), self, root,
                                   SPSIM_GPU_MODULE_BUILD_PATH, SPSIM_GPU_MODULE_INSTALL_PATH);
}

static void
load(void)
{
    static char self[PATH_MAX], root[PATH_MAX];
    const char *path = module_path(self, root);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(load_error, sizeof(load_error),
                 "cannot load spsim's GPU module (%s; the CUDA runtime, cuBLASLt and NCCL must "
                 "be installed)",
                 dlerror());
        return;
    }
    const struct spsim_gpu_vtable *(*entry)(void);
    *(void **)&entry = dlsym(handle, "spsim_gpu_module_vtable");
    const struct spsim_gpu_vtable *vt = entry ? entry() : NULL;
    if (!vt || vt->abi != SPSIM_GPU_MODULE_ABI) {
        snprintf(load_error, sizeof(load_error),
                 "%s is not a GPU module of this spsim (missing entry point or ABI %u)", path,
                 vt ? vt->abi : 0u);
        dlclose(handle);
        return;
    }
    loaded = vt; /* never unloaded: CUDA and NCCL state lives until exit */
}
#endif

static const struct spsim_gpu_vtable *
module(struct spsim_error *err)
{
#if HAVE_CUDA
    pthread_once(&load_once, load);
    if (!loaded)
        spsim_fail(err, SPSIM_ENOTSUP, "%s", load_error);
    return loaded;
#else
    spsim_fail(err, SPSIM_ENOTSUP,
               "this spsim was built without GPU support (configure with -Dcuda=enabled on a "
               "machine with the CUDA toolkit, cuBLAS and NCCL)");
    return NULL;
#endif
}

int
spsim_gpu_device_count(int *count, struct spsim_error *err)
{
    if (count)
        *count = 0;
    const struct spsim_gpu_vtable *vt = module(err);
    return vt ? vt->device_count(count, err) : SPSIM_ENOTSUP;
}

int
spsim_gpu_info(int device, struct spsim_gpu_info *out, struct spsim_error *err)
{
    if (!out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_gpu_info: NULL argument");
    const struct spsim_gpu_vtable *vt = module(err);
    return vt ? vt->info(device, out, err) : SPSIM_ENOTSUP;
}

int
spsim_gpu_calibrate(const struct spsim_gpu_calibrate_options *o, struct spsim_bw_table *collectives,
                    struct spsim_gemm_sample **gemms, size_t *ngemms, struct spsim_hbm_sample **hbm,
                    size_t *nhbm, struct spsim_error *err)
{
    int rc = spsim_gpu_calibrate_begin(o, collectives, gemms, ngemms, hbm, nhbm, err);
    if (rc != SPSIM_OK)
        return rc;
    const struct spsim_gpu_vtable *vt = module(err);
    return vt ? vt->calibrate(o, collectives, gemms, ngemms, hbm, nhbm, err) : SPSIM_ENOTSUP;
}

int
spsim_gpu_validate(const struct spsim_model *model, const struct spsim_hardware *hw,
                   const struct spsim_parallel *par, const struct spsim_gpu_validate_options *o,
                   struct spsim_gpu_validate_report *out, struct spsim_error *err)
{
    int rc = spsim_gpu_validate_check(o, err);
    if (rc == SPSIM_OK)
        rc = spsim_gpu_validate_plan(model, hw, par, out, err);
    if (rc != SPSIM_OK)
        return rc;
    const struct spsim_gpu_vtable *vt = module(err);
    return vt ? vt->validate(model, hw, par, o, out, err) : SPSIM_ENOTSUP;
}

int
spsim_gpu_mpi_rank(void)
{
#if HAVE_CUDA
    return loaded ? loaded->mpi_rank() : 0; /* rank 0 until a calibration has loaded MPI */
#else
    return 0;
#endif
}

void
spsim_gpu_finalize(void)
{
#if HAVE_CUDA
    if (loaded)
        loaded->finalize();
#endif
}
