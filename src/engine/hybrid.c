/*
 * Megatron-Core's rules for a hybrid model's parallel configuration (issue 25), messages
 * verbatim where Megatron has one, at Megatron-LM d98e8a6:
 *   ssm/mamba_mixer.py            TP: heads and groups split over the TP ranks; FP8's width;
 *   ssm/mamba_context_parallel.py CP: heads split over tp·cp, groups split or repeated;
 *   models/hybrid/hybrid_layer_allocation.py select_pipeline_segment: the pipeline split;
 *   transformer/transformer_config.py  Gated DeltaNet: heads split over tp·cp;
 *   ssm/gated_delta_net/common.py      _GDNBase.__init__: FP8's in_proj width;
 * and spsim's limits on what it composes for layers of several kinds.
 */
#include "config.h"

#include "eval.h"

#define CONFIG_FAIL(err, ...) spsim_fail((err), SPSIM_ECONFIG, "parallel config: " __VA_ARGS__)

/* MambaMixer.__init__'s asserts on the TP split and, with FP8, on in_proj's width. */
static int
check_mamba_tp(const struct spsim_model_shape *m, const struct spsim_parallel *p,
               struct spsim_error *err)
{
    if (m->mamba_heads % p->tp != 0)
        return CONFIG_FAIL(err,
                           "field 'tp': nheads must be evenly divisble by tp_size (the model's %u "
                           "Mamba heads, tp = %u)",
                           m->mamba_heads, p->tp);
    if (m->mamba_groups % p->tp != 0)
        return CONFIG_FAIL(err,
                           "field 'tp': ngroups must be evenly divisible by tp_size (the model's "
                           "%u Mamba groups, tp = %u)",
                           m->mamba_groups, p->tp);
    uint64_t d = (uint64_t)m->mamba_heads * m->mamba_head_dim;
    uint64_t width = 2 * d + 2ull * m->mamba_groups * m->mamba_state_dim + m->mamba_heads;
    bool quantized = p->dtype == SPSIM_DTYPE_FP8 || p->dtype == SPSIM_DTYPE_NVFP4;
    if (quantized && width % 16 != 0)
        return CONFIG_FAIL(err,
                           "field 'dtype': For FP8, the innermost dimension of the Mamba layer "
                           "input projection output tensor must be a multiple of 16 "
                           "(2d + 2GN + H = %llu)",
                           (unsigned long long)width);
    return SPSIM_OK;
}

/* MambaContextParallel.__init__: each CP rank takes H/(t·c) heads and whole groups, or one
 * group repeated when there are fewer groups per TP rank than CP ranks. */
static int
check_mamba_cp(const struct spsim_model_shape *m, const struct spsim_parallel *p,
               struct spsim_error *err)
{
    uint32_t c = p->cp, h = m->mamba_heads / p->tp, g = m->mamba_groups / p->tp;
    if (c <= 1)
        return SPSIM_OK;
    if (h % c != 0)
        return CONFIG_FAIL(err,
                           "field 'cp': nheads must be evenly divisible by tp_size * cp_size (%u "
                           "Mamba heads, tp = %u, cp = %u)",
                           m->mamba_heads, p->tp, c);
    if (g < c && c % g != 0)
        return CONFIG_FAIL(err,
                           "field 'cp': cp_size must be evenly divisible by ngroups/tp_size (%u "
                           "Mamba groups, tp = %u, cp = %u)",
                           m->mamba_groups, p->tp, c);
    if (g >= c && g % c != 0)
        return CONFIG_FAIL(err,
                           "field 'cp': ngroups must be evenly divisible by tp_size * cp_size (%u "
                           "Mamba groups, tp = %u, cp = %u)",
                           m->mamba_groups, p->tp, c);
    return SPSIM_OK;
}

/* transformer_config.py __post_init__ (the Gated DeltaNet checks): key and value heads are
 * multiples of tp·cp; common.py _GDNBase.__init__: with FP8 in_proj's output width a multiple
 * of 16 (get_fp8_align_size). */
static int
check_gdn(const struct spsim_model_shape *m, const struct spsim_parallel *p,
          struct spsim_error *err)
{
    uint64_t tc = (uint64_t)p->tp * (p->cp ? p->cp : 1);
    if (m->gdn_key_heads % tc != 0)
        return CONFIG_FAIL(err,
                           "field 'tp': self.linear_num_key_heads=%u must be a multiple of "
                           "(self.tensor_model_parallel_size=%u * self.context_parallel_size=%u)",
                           m->gdn_key_heads, p->tp, p->cp);
    if (m->gdn_value_heads % tc != 0)
        return CONFIG_FAIL(err,
                           "field 'tp': self.linear_num_value_heads=%u must be a multiple of "
                           "(self.tensor_model_parallel_size=%u * self.context_parallel_size=%u)",
                           m->gdn_value_heads, p->tp, p->cp);
    uint64_t width = 2ull * m->gdn_key_heads * m->gdn_key_head_dim +
                     2ull * m->gdn_value_heads * m->gdn_value_head_dim + 2ull * m->gdn_value_heads;
    bool quantized = p->dtype == SPSIM_DTYPE_FP8 || p->dtype == SPSIM_DTYPE_NVFP4;
    if (quantized && width % 16 != 0)
        return CONFIG_FAIL(err,
                           "field 'dtype': For FP8, the innermost dimension of the GDN layer "
                           "input projection output tensor must be a multiple of 16 (%llu)",
                           (unsigned long long)width);
    return SPSIM_OK;
}

/* The pipeline (select_pipeline_segment) and what spsim composes for mixed kinds of layer. */
static int
check_hybrid_pipeline(const struct spsim_parallel *p, struct spsim_error *err)
{
    if (p->vpp > 1 && !p->pipeline_layout)
        return CONFIG_FAIL(err, "field 'vpp': Virtual pipeline parallelism (vp_stage != None) is "
                                "not supported when hybrid_layer_pattern has no pipe ('|') "
                                "separators: give the stages' layer counts as pipeline_layout");
    if (p->account_embedding || p->account_loss)
        return CONFIG_FAIL(err, "field 'account_embedding': a hybrid model's pipeline segments "
                                "hold decoder layers only (select_pipeline_segment has no "
                                "embedding or loss accounting)");
    if (p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT || p->offload_layers)
        return CONFIG_FAIL(err, "field 'recompute_method': a recompute method or offload_layers "
                                "with a hybrid model's layers of several kinds is not modelled");
    if (p->zero >= 2)
        return CONFIG_FAIL(err, "field 'zero': Megatron-FSDP sharding of a hybrid model's "
                                "layers of several kinds is not modelled (zero 0 or 1)");
    if (p->first_last_layers_bf16 && spsim_bf16_layers_active(p))
        return CONFIG_FAIL(err, "field 'first_last_layers_bf16': BF16 first and last layers of a "
                                "hybrid model are not modelled");
    return SPSIM_OK;
}

int
spsim_hybrid_check(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                   struct spsim_error *err)
{
    if (!m->hybrid_pattern)
        return SPSIM_OK;
    int rc = check_hybrid_pipeline(p, err);
    if (rc == SPSIM_OK && m->gdn_value_heads)
        rc = check_gdn(m, p, err);
    if (rc != SPSIM_OK || !m->mamba_heads)
        return rc;
    if ((rc = check_mamba_tp(m, p, err)))
        return rc;
    return check_mamba_cp(m, p, err);
}
