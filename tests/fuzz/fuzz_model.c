/* A model profile from any bytes: the loader, then an evaluation of what it accepted. */
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct spsim_model *m = NULL;
    if (spsim_model_parse((const char *)data, size, "fuzz.json", &m, NULL) != SPSIM_OK)
        return 0;
    const char *name = spsim_model_name(m);
    if (!name || !*name)
        fuzz_fail("model", "name empty", 0);
    fuzz_evaluate(m, fuzz_shipped_hardware(), 1);
    fuzz_evaluate(m, fuzz_shipped_hardware(), 8);
    spsim_model_destroy(m);
    return 0;
}
