/*
 * The space `spsim optimize` (and the Python module's spsim.optimize) searches: every valid
 * parallel configuration of a model on N GPUs, where the caller's axes say nothing.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "sweep_internal.h"

/* "d1,d2,..." of the divisors of n up to `max`; NULL when out of memory. */
static char *
divisors(uint64_t n, uint64_t max)
{
    size_t cap = 4096, len = 0;
    char *text = spsim_calloc(cap, 1);
    for (uint64_t d = 1; text && d <= n && d <= max; d++) {
        if (n % d != 0)
            continue;
        if (len + 24 > cap) {
            char *grown = realloc(text, cap *= 2);
            if (!grown)
                free(text);
            text = grown;
            if (!text)
                break;
        }
        len += (size_t)snprintf(text + len, cap - len, "%s%llu", len ? "," : "",
                                (unsigned long long)d);
    }
    return text;
}

int
spsim_sweep_spec_optimize_defaults(struct spsim_sweep_spec *spec, uint32_t gpus, uint32_t layers,
                                   struct spsim_error *err)
{
    if (!spec || gpus == 0 || layers == 0)
        return spsim_fail(err, SPSIM_EINVAL, "optimize: gpus and layers must be positive");
    char *tps = divisors(gpus, 65536), *pps = divisors(gpus, layers), vpp[32], gbs[32];
    snprintf(vpp, sizeof(vpp), "1..%u", layers);
    snprintf(gbs, sizeof(gbs), "%u", gpus);
    /* gbs = N: one sequence per GPU, so that every data-parallel size is admissible. */
    const struct {
        enum spsim_sweep_axis axis;
        const char *text;
    } defaults[] = {{SPSIM_AXIS_TP, tps},
                    {SPSIM_AXIS_PP, pps},
                    {SPSIM_AXIS_VPP, vpp},
                    {SPSIM_AXIS_MBS, "1..64:*2"},
                    {SPSIM_AXIS_PP_SPLIT, "even,account,balanced"},
                    {SPSIM_AXIS_GBS, gbs},
                    {SPSIM_AXIS_SP, "on,off"},
                    {SPSIM_AXIS_RECOMPUTE, "none,selective,full"},
                    {SPSIM_AXIS_DISTRIBUTED_OPTIMIZER, "on,off"},
                    {SPSIM_AXIS_OVERLAP_GRAD_REDUCE, "on,off"}};
    int rc = tps && pps ? SPSIM_OK : spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    for (size_t i = 0; rc == SPSIM_OK && i < sizeof(defaults) / sizeof(defaults[0]); i++)
        if (!spsim_sweep_spec_is_set(spec, defaults[i].axis) &&
            !(defaults[i].axis == SPSIM_AXIS_GBS &&
              spsim_sweep_spec_is_set(spec, SPSIM_AXIS_MAX_GBS)))
            rc = spsim_sweep_spec_parse(spec, defaults[i].axis, defaults[i].text,
                                        spsim_sweep_axis_name(defaults[i].axis), err);
    free(tps);
    free(pps);
    spec->skip_inert = true;
    return rc;
}

int
spsim_sweep_spec_optimize_moe(struct spsim_sweep_spec *spec, uint32_t gpus, uint32_t experts,
                              struct spsim_error *err)
{
    if (!spec || gpus == 0)
        return spsim_fail(err, SPSIM_EINVAL, "optimize: gpus must be positive");
    if (experts == 0)
        return SPSIM_OK;
    /* ep divides the experts (arguments.py) and the GPUs (it refolds tp·cp·dp). */
    uint64_t a = gpus, b = experts;
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    char *eps = divisors(a, 65536);
    int rc = eps ? SPSIM_OK : spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    if (rc == SPSIM_OK && !spsim_sweep_spec_is_set(spec, SPSIM_AXIS_EP))
        rc = spsim_sweep_spec_parse(spec, SPSIM_AXIS_EP, eps, "ep", err);
    if (rc == SPSIM_OK && !spsim_sweep_spec_is_set(spec, SPSIM_AXIS_MOE_DISPATCHER))
        rc = spsim_sweep_spec_parse(spec, SPSIM_AXIS_MOE_DISPATCHER, "alltoall,allgather",
                                    "moe_dispatcher", err);
    free(eps);
    return rc;
}
