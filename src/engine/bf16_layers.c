/*
 * FP8 and NVFP4 training with the first and last decoder layers kept in BF16 (Megatron-Core
 * --first-last-layers-bf16, --num-layers-at-start-in-bf16 N, --num-layers-at-end-in-bf16 M,
 * both 1 by default; transformer_config.py first_last_layers_bf16 and its __post_init__
 * checks). Megatron-LM d98e8a6:
 *   - transformer_block.py builds each layer under get_fp8_context(config, global_layer_number
 *     − 1, is_init=True) and runs it under get_fp8_context(config, layer.layer_number − 1)
 *     (get_fp4_context for NVFP4); fp8_utils.py is_first_last_bf16_layer (fp4_utils.py the
 *     same test) returns nullcontext for layer_no < N or layer_no >= num_layers − M. The layer
 *     number is global (get_transformer_layer_offset), so the BF16 layers are wherever the
 *     pipeline ranks and virtual chunks put them, not necessarily on the first and last rank.
 *   - Outside the autocast TE's linears run BF16 GEMMs, quantize nothing and save BF16 inputs;
 *     their SP AllGathers carry BF16. fp8_model_init is the init context too, so with
 *     --fp8-param-gather those layers' weights are BF16 parameters gathered in BF16, and
 *     without it TE keeps no FP8 weight copy for them (the copy is made in the autocast).
 *   - recompute.py re-enters the same per-layer context: a recomputed BF16 layer is BF16.
 *   - MTP layers run under get_fp8_context(config) without a layer number: quantized.
 * In spsim the BF16 layer is a second layer block (spsim_layer_eval.dense, as an MoE model's
 * dense layers are): the layer built with dtype bf16, and the composition counts each rank's
 * and chunk's BF16 layers from the global indices (stages.c spsim_stage_chunk_bf16_layers).
 */
#include "config.h"

#include "eval.h"

#define CONFIG_FAIL(err, ...) spsim_fail((err), SPSIM_ECONFIG, "parallel config: " __VA_ARGS__)

bool
spsim_bf16_layers_active(const struct spsim_parallel *par)
{
    return par->first_last_layers_bf16 &&
           (par->dtype == SPSIM_DTYPE_FP8 || par->dtype == SPSIM_DTYPE_NVFP4) &&
           (par->bf16_layers_start || par->bf16_layers_end);
}

uint64_t
spsim_bf16_layers_total(uint32_t layers, uint32_t start, uint32_t end)
{
    uint64_t quantized = (uint64_t)layers > (uint64_t)start + end ? layers - start - end : 0;
    return layers - quantized;
}

/* Megatron's checks (transformer_config.py __post_init__, under `if self.fp8`, messages
 * verbatim): no delayed scaling, and each count within num_layers // pipeline size. NVFP4
 * (config.fp4) has neither. Then spsim's limits. */
int
spsim_bf16_layers_check(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                        struct spsim_error *err)
{
    if (!spsim_bf16_layers_active(p))
        return SPSIM_OK; /* bf16, fp16: Megatron ignores the flag */
    uint32_t most = m->layers / p->pp;
    if (p->dtype == SPSIM_DTYPE_FP8 && p->fp8_recipe == SPSIM_FP8_DELAYED)
        return CONFIG_FAIL(err, "field 'first_last_layers_bf16': Delayed scaling does not "
                                "support first / last layer in BF16.");
    if (p->dtype == SPSIM_DTYPE_FP8 && p->bf16_layers_start > most)
        return CONFIG_FAIL(err,
                           "field 'bf16_layers_start': num_layers_at_start_in_bf16 (%u) must be "
                           "between 0 and number of layers per pipeline stage (%u).",
                           p->bf16_layers_start, most);
    if (p->dtype == SPSIM_DTYPE_FP8 && p->bf16_layers_end > most)
        return CONFIG_FAIL(err,
                           "field 'bf16_layers_end': num_layers_at_end_in_bf16 (%u) must be "
                           "between 0 and number of layers per pipeline stage (%u).",
                           p->bf16_layers_end, most);
    /* spsim's limits: the second layer block is an MoE model's dense layer; the per-chunk
     * recompute methods, offload and FSDP units are modelled for layers that are all alike. */
    if (m->experts)
        return CONFIG_FAIL(err, "field 'first_last_layers_bf16': BF16 layers in a "
                                "mixture-of-experts model are not modelled");
    if (p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT || p->offload_layers)
        return CONFIG_FAIL(err, "field 'first_last_layers_bf16': with a recompute method or "
                                "offload_layers is not modelled");
    if (p->zero >= 2)
        return CONFIG_FAIL(err, "field 'first_last_layers_bf16': with Megatron-FSDP sharding "
                                "(zero >= 2) is not modelled");
    return SPSIM_OK;
}
