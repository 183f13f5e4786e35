/* A hardware profile from any bytes: the loader, then collectives and an evaluation on it. */
#include "fuzz.h"

static void
check_collectives(const struct spsim_hardware *hw)
{
    static const uint64_t sizes[] = {8, 65536, 1u << 20, 1u << 30};
    for (int op = 0; op < SPSIM_COLL_COUNT; op++)
        for (uint32_t gpus = 2; gpus <= 16; gpus *= 8)
            for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                struct spsim_collective_prediction p;
                if (spsim_collective_predict(hw, (enum spsim_coll_op)op, gpus, 0, sizes[i], &p,
                                             NULL) != SPSIM_OK)
                    continue;
                fuzz_check_number("collective time_s", p.time_s);
                fuzz_check_number("collective latency_s", p.latency_s);
                fuzz_check_number("collective algbw_GBps", p.algbw_GBps);
                fuzz_check_number("collective busbw_GBps", p.busbw_GBps);
            }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct spsim_hardware *hw = NULL;
    if (spsim_hardware_parse((const char *)data, size, "fuzz.json", &hw, NULL) != SPSIM_OK)
        return 0;
    check_collectives(hw);
    fuzz_evaluate(fuzz_shipped_model(), hw, 1);
    fuzz_evaluate(fuzz_shipped_model(), hw, 8);
    spsim_hardware_destroy(hw);
    return 0;
}
