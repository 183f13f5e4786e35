/* A Hugging Face transformers config.json from any bytes (interop/hf_config.c through
 * spsim_model_parse, which reads a file with a model_type as one), then an evaluation of the
 * model it gives at tp 1 and tp 8. The seeds are tests/data/hf/'s configs, so most inputs keep
 * their model_type; one without is a profile, which fuzz_model covers as well. */
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    if (spsim_model_parse((const char *)data, size, "fuzz/config.json", &m, &err) != SPSIM_OK) {
        if (strchr(err.message, '\n'))
            fuzz_fail("hf", "error message not one line", 0);
        return 0;
    }
    const struct spsim_model_shape *s = spsim_model_get_shape(m);
    if (!s || s->layers == 0 || s->hidden == 0)
        fuzz_fail("hf", "accepted a model without layers", 0);
    fuzz_evaluate(m, fuzz_shipped_hardware(), 1);
    fuzz_evaluate(m, fuzz_shipped_hardware(), 8);
    spsim_model_destroy(m);
    return 0;
}
