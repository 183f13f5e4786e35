/* A sweep spec from any bytes: the loader (which reads a file), then, for a space small
 * enough to run at fuzzing speed, every point of it. */
#include <unistd.h>

#include "fuzz.h"

/* Points evaluated at most per input: a spec may describe 2^60 of them. */
#define MAX_POINTS 64

static void
run_points(const struct spsim_sweep *sweep)
{
    uint64_t n = spsim_sweep_size(sweep);
    for (uint64_t i = 0; i < n && i < MAX_POINTS; i++) {
        struct spsim_result r;
        if (spsim_sweep_evaluate(sweep, i, &r, NULL) == SPSIM_OK)
            fuzz_check_result(&r);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0])
        snprintf(path, sizeof(path), "/tmp/spsim-fuzz-spec-%ld.json", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        abort();
    struct spsim_sweep_spec *spec = NULL;
    if (spsim_sweep_spec_create(&spec, NULL) != SPSIM_OK)
        abort();
    struct spsim_sweep *sweep = NULL;
    if (spsim_sweep_spec_load(spec, path, NULL) == SPSIM_OK &&
        spsim_sweep_create(spec, &sweep, NULL) == SPSIM_OK)
        run_points(sweep);
    spsim_sweep_destroy(sweep);
    spsim_sweep_spec_destroy(spec);
    unlink(path);
    return 0;
}
