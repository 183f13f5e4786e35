/*
 * Mixture of experts: Megatron-Core's rules for expert parallelism, the expert process groups
 * refolded from the stage's ranks, and the bytes each token dispatcher moves per rank.
 */
#include "config.h"

#include <math.h>

#include <string.h>

#include "ep_overlap.h"
#include "moe.h"

#define MOE_FAIL(err, ...) spsim_fail((err), SPSIM_ECONFIG, "parallel config: " __VA_ARGS__)

/* A dense model: no expert option may ask for experts (messages of transformer_config.py and
 * arguments.py, verbatim where Megatron has one). */
static int
check_dense(const struct spsim_parallel *p, struct spsim_error *err)
{
    /* model_parallel_config.py's warning first, as spsim has always refused it. */
    if (p->ep > 1 && p->tp > 1 && !p->sp)
        return MOE_FAIL(err, "field 'sp': When using expert parallelism and tensor "
                             "parallelism, sequence parallelism must be used");
    if (p->ep > 1)
        return MOE_FAIL(err, "field 'ep': expert parallelism needs a mixture-of-experts model; "
                             "this model has no experts (num_moe_experts must be non None to "
                             "use expert-parallel)");
    if (p->etp > 1 && p->etp != p->tp)
        return MOE_FAIL(err, "field 'etp': expert tensor parallelism needs a mixture-of-experts "
                             "model; this model has no experts");
    return SPSIM_OK;
}

/* The expert grid: etp · ep · edp = tp · cp · dp (parallel_state.py initialize_model_parallel,
 * the expert RankGenerator with cp = 1). */
static int
check_grid(const struct spsim_model_shape *m, const struct spsim_parallel *p, uint32_t etp,
           struct spsim_error *err)
{
    if (m->experts % p->ep != 0)
        return MOE_FAIL(err,
                        "field 'ep': Number of experts should be a multiple of expert model "
                        "parallel_size (%u experts, ep = %u)",
                        m->experts, p->ep);
    uint64_t world = (uint64_t)p->tp * p->cp * p->dp * p->pp;
    uint64_t etmp = (uint64_t)etp * p->ep * p->pp;
    if (world % etmp != 0)
        return MOE_FAIL(err,
                        "field 'ep': world_size (%llu) is not divisible by "
                        "expert_tensor_model_pipeline_parallel size (%llu)",
                        (unsigned long long)world, (unsigned long long)etmp);
    if (m->expert_ffn_hidden % etp != 0)
        return MOE_FAIL(err,
                        "field 'etp': the model's expert_ffn_hidden %u is not divisible by "
                        "etp = %u",
                        m->expert_ffn_hidden, etp);
    if (m->shared_expert_ffn_hidden % p->tp != 0)
        return MOE_FAIL(err,
                        "field 'tp': the model's shared_expert_ffn_hidden %u is not divisible "
                        "by tp = %u",
                        m->shared_expert_ffn_hidden, p->tp);
    /* transformer_config.py __post_init__. */
    if (m->linear_bias && etp > 1)
        return MOE_FAIL(err, "field 'etp': Bias in Moe is only supported when ETP==1");
    return SPSIM_OK;
}

/* The flex dispatcher (token_dispatcher.py MoEFlexTokenDispatcher, its assertion verbatim). */
static int
check_flex(const struct spsim_parallel *p, uint32_t etp, struct spsim_error *err)
{
    if ((unsigned)p->moe_flex_backend >= SPSIM_FLEX_BACKEND_COUNT)
        return MOE_FAIL(err, "field 'moe_flex_backend': must be deepep or hybridep");
    if (p->moe_flex_backend == SPSIM_FLEX_DEEPEP && (uint64_t)etp * p->ep <= 1)
        return MOE_FAIL(err, "field 'ep': DeepEP dispatcher requires TPxEP > 1");
    return SPSIM_OK;
}

int
spsim_moe_check(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                struct spsim_error *err)
{
    if ((unsigned)p->moe_dispatcher >= SPSIM_MOE_DISPATCHER_COUNT)
        return MOE_FAIL(err, "field 'moe_dispatcher': must be allgather, alltoall or flex");
    if ((unsigned)p->moe_routing >= SPSIM_MOE_ROUTING_COUNT)
        return MOE_FAIL(err, "field 'moe_routing': must be random or balanced");
    if (p->etp > 65536)
        return MOE_FAIL(err, "field 'etp': must be an integer in [1, 65536], got %u", p->etp);
    if (m->experts == 0) {
        int rc = check_dense(p, err);
        return rc != SPSIM_OK ? rc : spsim_ep_overlap_check(m, p, err);
    }
    uint32_t etp = spsim_moe_etp(p);
    int rc = check_grid(m, p, etp, err);
    if (rc != SPSIM_OK)
        return rc;
    /* model_parallel_config.py warns (message verbatim); the MoE layers expect [s/t] inputs. */
    if (p->ep > 1 && p->tp > 1 && !p->sp)
        return MOE_FAIL(err, "field 'sp': When using expert parallelism and tensor "
                             "parallelism, sequence parallelism must be used");
    /* spsim's limit: the router and the dispatchers are modelled on the sequence shard. */
    if (p->tp > 1 && !p->sp)
        return MOE_FAIL(err, "field 'sp': mixture-of-experts layers with tp > 1 are modelled "
                             "with sequence parallelism only");
    if (p->moe_dispatcher == SPSIM_MOE_FLEX && (rc = check_flex(p, etp, err)) != SPSIM_OK)
        return rc;
    /* spsim's limit: drop-and-pad is modelled for the all-to-all dispatcher's fixed-size
     * buffers (token_dispatcher.py MoEAlltoAllTokenDispatcher, drop_and_pad), the dispatcher
     * Megatron-Bridge's apply_moe_token_drop requires (training/utils/moe_token_drop.py). */
    if (m->pad_to_capacity && p->moe_dispatcher != SPSIM_MOE_ALLTOALL)
        return MOE_FAIL(err, "field 'moe_dispatcher': padding the experts' input to capacity "
                             "(pad_to_capacity) is modelled with the alltoall dispatcher only");
    /* spsim's limits: the per-chunk recompute methods and the offload of a layer's tensors are
     * modelled for layers that are all alike. */
    if (p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT || p->offload_layers)
        return MOE_FAIL(err, "field 'recompute_method': a recompute method or offload_layers "
                             "with mixture-of-experts layers is not modelled");
    return spsim_ep_overlap_check(m, p, err);
}

uint32_t
spsim_moe_etp(const struct spsim_parallel *p)
{
    return p->etp ? p->etp : p->tp;
}

uint32_t
spsim_moe_edp(const struct spsim_parallel *p)
{
    uint64_t etp = spsim_moe_etp(p), stage = (uint64_t)p->tp * p->cp * p->dp;
    return (uint32_t)(stage / (etp * p->ep));
}

/*
 * Bytes per rank and MoE layer (token_dispatcher.py), T = b·s/(c·t) tokens of this rank's
 * sequence shard, k copies each, at the balanced expectation: every expert receives T·k/E
 * copies from each rank. Dropless routing and a capacity factor (at least 1, the profile's
 * rule) then move the same copies: none is over capacity, and padding to capacity
 * (--moe-pad-expert-input-to-capacity) is not modelled. With f = 1:
 *   alltoall: all-to-all over EP of the token copies, S = T·k·f·2h, then a second of their
 *     fp32 probabilities, T·k·f·4 (token_dispatch, Megatron-LM d98e8a64
 *     token_dispatcher.py:705 and 718: two all_to_all calls, each its own NCCL launch and
 *     latency), forward and their gradients backward; combine the tokens back, T·k·f·2h. With
 *     ETP > 1 an AllGather over ETP after the dispatch (S = etp·T·k·f·(2h + 4)) and a
 *     ReduceScatter before the combine (etp·T·k·f·2h); backward the conjugates.
 *   allgather: AllGather over ETP×EP of the hidden states, the fp32 probabilities and the
 *     routing map of all E experts, S = n·T·(2h + 4E + E), n = etp·ep; ReduceScatter back,
 *     n·T·2h. Backward: ReduceScatter of n·T·(2h + 4E), AllGather of n·T·2h.
 *   flex: the bytes each link carries (moe_flex.c).
 * Sizes are nccl-tests' (AG and RS: the whole buffer; all-to-all: one rank's send buffer).
 * Rows: the token copies one rank's local experts compute, etp·T·k·f, rounded up to whole
 * tokens per local expert. With random routing (the default; moe_imbalance.c) the rank is the
 * most-loaded one: its rows and the copies it receives (alltoall; the tokens, flex) are the
 * mean times the expected maximum over the mean, over the etp·ep·T tokens its experts see;
 * what it sends of its own tokens (`sent`, permuted before the all-to-all) stays the mean.
 * The allgather dispatcher's collectives move every token whatever the routing.
 */
void
spsim_moe_traffic(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                  struct spsim_moe_traffic *out, bool *ok)
{
    memset(out, 0, sizeof(*out));
    uint64_t t = cfg->t ? cfg->t : 1, c = cfg->cp > 1 ? cfg->cp : 1;
    uint64_t T = cfg->s / c / (cfg->sp ? t : 1) * cfg->b, h = m->hidden, E = m->experts;
    uint64_t k = m->experts_per_token, local = E / cfg->ep;
    const double f = 1.0;
    out->tokens = T;
    out->local_experts = local;
    /* Copies per local expert: etp·T·k·f·ep/E (each of ep source ranks sends T·k·f/E). */
    double per_expert = (double)cfg->etp * (double)T * (double)k * f * (double)cfg->ep / (double)E;
    uint64_t tpe = (uint64_t)per_expert;
    tpe += (double)tpe < per_expert;
    out->sent = spsim_mul(tpe, local, ok) / cfg->etp;
    out->load_factor = 1.0;
    if (cfg->routing == SPSIM_MOE_ROUTING_RANDOM && cfg->ep > 1) {
        struct spsim_moe_load load;
        spsim_moe_load((uint32_t)E, (uint32_t)k, cfg->ep, (double)cfg->etp * cfg->ep * T,
                       m->capacity_factor, &load);
        out->load_factor = load.factor;
        per_expert *= load.factor;
        tpe = (uint64_t)per_expert;
        tpe += (double)tpe < per_expert;
    }
    if (m->pad_to_capacity) {
        /* Drop and pad: each of the etp·ep source ranks sends every expert exactly its
         * capacity, ceil(T·k/E · factor) (moe_utils.py get_capacity with num_tokens = T·k), so
         * every local expert computes capacity·etp·ep rows whatever the routing
         * (token_dispatcher.py: tokens_per_expert = capacity·tp_size·ep_size) and a rank sends
         * capacity·E rows. */
        double cap = ceil((double)T * (double)k / (double)E * m->capacity_factor);
        tpe = (uint64_t)cap * cfg->etp * cfg->ep;
        out->sent = spsim_mul((uint64_t)cap, E, ok);
        out->load_factor = cap * (double)E / ((double)T * (double)k);
    }
    out->tokens_per_expert = tpe;
    out->rows = spsim_mul(out->tokens_per_expert, local, ok);
    if (cfg->dispatcher == SPSIM_MOE_FLEX) {
        spsim_moe_flex_traffic(m, cfg, T, out->rows, &out->flex);
        return;
    }
    uint64_t copies = out->rows / cfg->etp; /* received by the all-to-all, per rank */
    if (cfg->dispatcher == SPSIM_MOE_ALLTOALL) {
        out->dispatch = spsim_mul(copies, 2 * h, ok);
        out->dispatch_probs = spsim_mul(copies, 4, ok);
        out->combine = spsim_mul(copies, 2 * h, ok);
        out->etp_dispatch = cfg->etp > 1 ? spsim_mul(copies * cfg->etp, 2 * h + 4, ok) : 0;
        out->etp_combine = cfg->etp > 1 ? spsim_mul(out->combine, cfg->etp, ok) : 0;
        out->dispatch_bwd = out->dispatch;
        return;
    }
    uint64_t n = (uint64_t)cfg->etp * cfg->ep, gathered = spsim_mul(n, T, ok);
    out->dispatch = spsim_mul(gathered, 2 * h + 5 * E, ok);
    out->dispatch_bwd = spsim_mul(gathered, 2 * h + 4 * E, ok);
    out->combine = spsim_mul(gathered, 2 * h, ok);
}

/* One MoE layer on one rank (profiles' spsim_moe_layer_parameters_per_rank) and, of those, the
 * E/ep local experts split over etp: reduced and sharded over the expert data-parallel group,
 * the rest over dp·cp. */
uint64_t
spsim_moe_layer_parameters(const struct spsim_model_shape *m, uint32_t tp, uint32_t ep,
                           uint32_t etp, uint64_t *experts, bool *ok)
{
    *experts = spsim_mul(m->experts / ep, spsim_expert_parameters_per_rank(m, etp, ok), ok);
    return spsim_moe_layer_parameters_per_rank(m, tp, ep, etp, ok);
}

uint32_t
spsim_moe_chunk_dense_layers(const struct spsim_model *model, const struct spsim_stage_plan *pl,
                             uint32_t r, uint32_t c)
{
    /* A dense model mixes layers only with first_last_layers_bf16: the second kind is BF16. */
    if (!model->shape.experts)
        return spsim_stage_chunk_bf16_layers(pl, model->shape.layers, r, c);
    uint32_t first = spsim_stage_chunk_offset(pl, r, c), n = spsim_stage_chunk_layers(pl, r, c),
             dense = 0;
    for (uint32_t i = first; i < first + n; i++)
        dense += !spsim_model_layer_is_moe(model, i);
    return dense;
}

uint32_t
spsim_moe_rank_dense_layers(const struct spsim_model *model, const struct spsim_stage_plan *pl,
                            uint32_t r)
{
    uint32_t dense = 0;
    for (uint32_t c = 0; c < pl->v; c++)
        dense += spsim_moe_chunk_dense_layers(model, pl, r, c);
    return dense;
}

uint32_t
spsim_hybrid_chunk_layers(const struct spsim_model *model, const struct spsim_stage_plan *pl,
                          uint32_t r, uint32_t c, enum spsim_layer_kind kind)
{
    uint32_t first = spsim_stage_chunk_offset(pl, r, c), n = spsim_stage_chunk_layers(pl, r, c),
             count = 0;
    for (uint32_t i = first; i < first + n; i++)
        count += spsim_model_layer_kind(model, i) == kind;
    return count;
}

uint32_t
spsim_hybrid_rank_layers(const struct spsim_model *model, const struct spsim_stage_plan *pl,
                         uint32_t r, enum spsim_layer_kind kind)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < pl->v; c++)
        n += spsim_hybrid_chunk_layers(model, pl, r, c, kind);
    return n;
}

/* The bytes chunk c of rank r keeps per micro-batch: a hybrid model's layers by kind
 * (kept[kind]), else its MoE layers kept[0] and dense ones kept[1]. */
static uint64_t
chunk_bytes(const struct spsim_model *model, const struct spsim_stage_plan *pl, uint32_t r,
            uint32_t c, const uint64_t *kept, bool *ok)
{
    if (model->shape.hybrid_pattern) {
        uint64_t sum = 0;
        for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++)
            sum = spsim_add(
                sum,
                spsim_mul(spsim_hybrid_chunk_layers(model, pl, r, c, (enum spsim_layer_kind)k),
                          kept[k], ok),
                ok);
        return sum;
    }
    uint64_t dense = spsim_moe_chunk_dense_layers(model, pl, r, c);
    uint64_t moe = spsim_stage_chunk_layers(pl, r, c) - dense;
    return spsim_add(spsim_mul(moe, kept[0], ok), spsim_mul(dense, kept[1], ok), ok);
}

/*
 * The activations rank r holds at its peak when its chunks keep different bytes (MoE and dense
 * layers, kept[0] and kept[1] per layer): 1F1B holds min(p − r, m) micro-batches of all its
 * layers; the interleaved schedule runs chunk (k mod gv) div g as its k-th forward and frees
 * chunk v − 1 − that at its k-th backward, as stages.c interleaved_peak counts layers.
 */
uint64_t
spsim_moe_rank_held_bytes(const struct spsim_model *model, const struct spsim_stage_plan *pl,
                          uint32_t r, uint64_t micro, const uint64_t *kept, bool *ok)
{
    uint64_t p = pl->p, g = pl->g, v = pl->v, period = g * v, total = micro * v, held = 0, peak = 0;
    if (v == 1)
        return spsim_mul(spsim_min_u64(p - r, micro), chunk_bytes(model, pl, r, 0, kept, ok), ok);
    uint64_t warm = spsim_stage_warmup(pl, r, micro);
    for (uint64_t k = 0; k < warm; k++)
        held += chunk_bytes(model, pl, r, (uint32_t)(k % period / g), kept, ok);
    if (warm == total)
        return held;
    uint64_t steady = spsim_min_u64(total - warm, period);
    for (uint64_t j = 0; j < steady; j++) {
        held += chunk_bytes(model, pl, r, (uint32_t)((warm + j) % period / g), kept, ok);
        peak = held > peak ? held : peak;
        held -= chunk_bytes(model, pl, r, (uint32_t)(v - 1 - j % period / g), kept, ok);
    }
    return peak;
}
