/* A NeMo/Megatron-Bridge recipe or a Megatron-LM functional-test model_config.yaml from any
 * bytes (interop/megatron_yaml.c, megatron_ftest.c), then the configuration it gives
 * (fuzz_megatron). */
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_megatron(data, size, "fuzz.yaml");
    return 0;
}
