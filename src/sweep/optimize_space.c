/*
 * The space `spsim optimize` (and the Python module's spsim.optimize) searches: every valid
 * parallel configuration of a model on N GPUs, where the caller's axes say nothing.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* "default,a,b,a+b,...": every set of the modules in `mask` (default, Megatron's core_attn, for
 * the set of core_attn alone). NULL when out of memory. */
static char *
module_sets(uint32_t mask)
{
    size_t cap = 16384, len = 0;
    char *text = spsim_calloc(cap, 1);
    if (!text)
        return NULL;
    len += (size_t)snprintf(text, cap, "default");
    for (uint32_t set = 1; set < (1u << SPSIM_RMOD_COUNT_); set++) {
        char name[160];
        if ((set & ~mask) || set == SPSIM_RMOD_CORE_ATTN)
            continue;
        spsim_recompute_modules_format(set, name, sizeof(name));
        if (len + strlen(name) + 2 >= cap)
            break; /* 2^7 sets of at most 70 characters: never */
        len += (size_t)snprintf(text + len, cap - len, ",%s", name);
    }
    return text;
}

/* The recompute modules a model has (check_modules: dense layers core_attn, layernorm and mlp;
 * MoE layers moe_act, moe and, with shared experts, shared_experts; MLA mla_up_proj); mlp only
 * where some layer is dense. */
static uint32_t
model_modules(const struct spsim_model *m)
{
    uint32_t mask = SPSIM_RMOD_CORE_ATTN | SPSIM_RMOD_LAYERNORM;
    if (!m->shape.experts || m->moe_layers < m->shape.layers)
        mask |= SPSIM_RMOD_MLP;
    if (m->shape.experts)
        mask |= SPSIM_RMOD_MOE_ACT | SPSIM_RMOD_MOE;
    if (m->shape.experts && m->shape.shared_expert_ffn_hidden)
        mask |= SPSIM_RMOD_SHARED_EXPERTS;
    if (m->shape.kv_lora_rank)
        mask |= SPSIM_RMOD_MLA_UP_PROJ;
    return mask;
}

/* The data types and FP8 recipes the GPU has: FP8 where the profile has an FP8 peak; MXFP8 and
 * NVFP4 where it has an NVFP4 one (Blackwell: TE's MXFP8 and NVFP4 recipes need SM 10.x,
 * transformer_engine/common/recipe/__init__.py and docs nvfp4.rst). */
static void
dtypes_of(const struct spsim_hardware *hw, char *dtypes, size_t dcap, char *recipes, size_t rcap)
{
    bool fp8 = hw->peak_flops[SPSIM_DTYPE_FP8] > 0, fp4 = hw->peak_flops[SPSIM_DTYPE_NVFP4] > 0;
    snprintf(dtypes, dcap, "bf16%s%s", fp8 ? ",fp8" : "", fp4 ? ",nvfp4" : "");
    snprintf(recipes, rcap, "delayed%s%s", fp8 ? ",current,blockwise" : "",
             fp8 && fp4 ? ",mxfp8" : "");
}

/* One axis' default text, unless the spec sets it. */
static int
set_default(struct spsim_sweep_spec *spec, enum spsim_sweep_axis axis, const char *text,
            struct spsim_error *err)
{
    if (spsim_sweep_spec_is_set(spec, axis))
        return SPSIM_OK;
    return spsim_sweep_spec_parse(spec, axis, text, spsim_sweep_axis_name(axis), err);
}

int
spsim_sweep_spec_optimize_space(struct spsim_sweep_spec *spec, const struct spsim_model *model,
                                const struct spsim_hardware *hw, uint32_t gpus,
                                struct spsim_error *err)
{
    if (!spec || !model || !hw || gpus == 0)
        return spsim_fail(err, SPSIM_EINVAL, "optimize: a model, a hardware profile and gpus > 0");
    uint32_t layers = model->shape.layers;
    int rc = spsim_sweep_spec_optimize_defaults(spec, gpus, layers, err);
    if (rc == SPSIM_OK)
        rc = spsim_sweep_spec_optimize_moe(spec, gpus, model->shape.experts, err);
    char *cps = divisors(gpus, 65536), *mods = module_sets(model_modules(model));
    char dtypes[32], recipes[64], rlayers[32], offload[32];
    dtypes_of(hw, dtypes, sizeof(dtypes), recipes, sizeof(recipes));
    snprintf(rlayers, sizeof(rlayers), "0..%u", layers);
    /* CPU offload: pp 1, dense layers and a host link only (check_offload, moe.c). */
    bool offload_ok = hw->host_d2h_Bps > 0 && !model->shape.experts && layers > 1;
    snprintf(offload, sizeof(offload), offload_ok ? "0..%u" : "0", layers - 1);
    const struct {
        enum spsim_sweep_axis axis;
        const char *text;
    } axes[] = {{SPSIM_AXIS_CP, cps},
                {SPSIM_AXIS_CP_COMM_TYPE, "p2p,all_gather,a2a"},
                {SPSIM_AXIS_ZERO, "0,2,3"}, /* level 1 is the distributed optimizer */
                {SPSIM_AXIS_OVERLAP_PARAM_GATHER, "on,off"},
                {SPSIM_AXIS_DTYPE, dtypes},
                {SPSIM_AXIS_FP8_RECIPE, recipes},
                {SPSIM_AXIS_RECOMPUTE_MODULES, mods},
                {SPSIM_AXIS_RECOMPUTE_METHOD, "default,uniform,block"},
                {SPSIM_AXIS_RECOMPUTE_LAYERS, rlayers},
                {SPSIM_AXIS_OFFLOAD_LAYERS, offload},
                {SPSIM_AXIS_TP_COMM_OVERLAP, "on,off"},
                {SPSIM_AXIS_OVERLAP_P2P, "on,off"}};
    if (rc == SPSIM_OK && (!cps || !mods))
        rc = spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    for (size_t i = 0; rc == SPSIM_OK && i < SPSIM_ARRAY_LENGTH(axes); i++)
        rc = set_default(spec, axes[i].axis, axes[i].text, err);
    /* Expert tensor parallelism: tp's (0) or a divisor of the NVLink domain (its collectives
     * stay inside it). */
    uint64_t a = gpus, b = hw->nvlink_domain_gpus ? hw->nvlink_domain_gpus : 1;
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    char *etps = divisors(a, 65536), etp[4096];
    snprintf(etp, sizeof(etp), "0,%s", etps ? etps : "1");
    if (rc == SPSIM_OK && model->shape.experts)
        rc = etps ? set_default(spec, SPSIM_AXIS_ETP, etp, err)
                  : spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    free(etps);
    free(cps);
    free(mods);
    return rc;
}
