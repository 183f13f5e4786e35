/*
 * Pipeline stages: the layers of each rank's model chunks (Megatron-Core get_num_layers_to_build,
 * transformer_block.py; TransformerConfig.__post_init__'s checks, transformer_config.py; the
 * layout of pipeline_parallel_layer_layout.py), and the layers a rank holds in flight.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "stages.h"

#define CONFIG_FAIL(err, ...) spsim_fail((err), SPSIM_ECONFIG, "parallel config: " __VA_ARGS__)

/* Expanded layouts longer than this are refused: a few symbols per layer of any model. */
#define LAYOUT_MAX_CHARS (1u << 20)

static void
text_put(struct spsim_text *t, const char *s, size_t n, uint64_t times)
{
    for (uint64_t i = 0; i < times && !t->failed; i++)
        spsim_text_put(t, s, n);
}

/* "*N" at s: N, and *end after it; false when s is not '*' and digits. */
static bool
repeat_count(const char *s, const char **end, uint64_t *n)
{
    if (s[0] != '*' || s[1] < '0' || s[1] > '9')
        return false;
    uint64_t v = 0;
    for (s++; *s >= '0' && *s <= '9'; s++)
        v = v > LAYOUT_MAX_CHARS ? v : v * 10 + (uint64_t)(*s - '0');
    *end = s;
    *n = v;
    return true;
}

/* One of Megatron's two substitutions, left to right: groups "(x)*n" (parens), else "c*n". */
static void
unroll(const char *in, bool parens, struct spsim_text *out)
{
    const char *s = in, *end;
    uint64_t n;
    while (*s && !out->failed) {
        const char *close = parens && s[0] == '(' ? strchr(s + 1, ')') : NULL;
        if (close && close > s + 1 && repeat_count(close + 1, &end, &n)) {
            text_put(out, s + 1, (size_t)(close - s - 1), n);
            s = end;
        } else if (!parens && s[1] && repeat_count(s + 1, &end, &n)) {
            text_put(out, s, 1, n);
            s = end;
        } else {
            text_put(out, s, 1, 1);
            s++;
        }
    }
    text_put(out, "", 0, 1); /* an empty result is still a string */
}

/* Count the expanded layout's stages and symbols. */
static int
layout_count(const char *s, uint32_t *decoder, struct spsim_layout_info *info,
             struct spsim_error *err)
{
    memset(info, 0, sizeof(*info));
    info->nstages = 1;
    decoder[0] = 0;
    char last = 0;
    for (; *s; s++) {
        if (*s == '|') {
            if (info->nstages == SPSIM_LAYOUT_MAX_STAGES)
                return CONFIG_FAIL(err, "field 'pipeline_layout': more than %u stages",
                                   SPSIM_LAYOUT_MAX_STAGES);
            decoder[info->nstages++] = 0;
            info->n_mtp_last = 0;
            continue;
        }
        switch (*s) {
        case 'E':
            info->n_emb++;
            break;
        case 'L':
            info->n_loss++;
            break;
        case 'm':
            info->n_mtp++;
            info->n_mtp_last++;
            break;
        case 't':
            info->decoder_after_mtp |= info->n_mtp > 0;
            info->n_decoder++;
            decoder[info->nstages - 1]++;
            break;
        default:
            return CONFIG_FAIL(err,
                               "field 'pipeline_layout': Invalid layer character: %c, known "
                               "layer characters: E, L, t, m",
                               *s);
        }
        if (!last)
            info->emb_first = *s == 'E';
        last = *s;
    }
    info->loss_last = last == 'L';
    return SPSIM_OK;
}

int
spsim_layout_parse(const char *text, uint32_t *decoder, struct spsim_layout_info *info,
                   struct spsim_error *err)
{
    struct spsim_text a = {.max = LAYOUT_MAX_CHARS}, b = {.max = LAYOUT_MAX_CHARS},
                      c = {.max = LAYOUT_MAX_CHARS};
    for (const char *s = text; *s && !a.failed; s++)
        if (*s != ',') /* Megatron: "remove purely cosmetic commas" */
            text_put(&a, s, 1, 1);
    text_put(&a, "", 0, 1);
    if (!a.failed)
        unroll(a.s, true, &b);
    if (!a.failed && !b.failed)
        unroll(b.s, false, &c);
    int rc = a.failed || b.failed || c.failed
                 ? CONFIG_FAIL(err, "field 'pipeline_layout': expands to more than %u symbols",
                               LAYOUT_MAX_CHARS)
                 : layout_count(c.s, decoder, info, err);
    free(a.s);
    free(b.s);
    free(c.s);
    return rc;
}

/* Megatron's PipelineParallelLayerLayout checks, at pp = p. */
static int
plan_layout(const struct spsim_model_shape *m, const struct spsim_parallel *par,
            struct spsim_stage_plan *pl, struct spsim_error *err)
{
    struct spsim_layout_info in;
    int rc = spsim_layout_parse(par->pipeline_layout, pl->layout, &in, err);
    if (rc != SPSIM_OK)
        return rc;
    if (in.nstages % par->pp != 0)
        return CONFIG_FAIL(err,
                           "field 'pipeline_layout': The length of pipeline_model_parallel_layout "
                           "must be divisible by pipeline_model_parallel_size (num_stages=%u, "
                           "pipeline_model_parallel_size=%u)",
                           in.nstages, par->pp);
    uint32_t v = in.nstages / par->pp;
    if (par->vpp != 1 && par->vpp != v)
        return CONFIG_FAIL(err,
                           "field 'vpp': virtual_pipeline_model_parallel_size conflicts with "
                           "pipeline_model_parallel_layout (vpp=%u, detected_vpp_size=%u)",
                           par->vpp, v);
    if (!in.emb_first || !in.loss_last || in.n_emb != 1 || in.n_loss != 1)
        return CONFIG_FAIL(err, "field 'pipeline_layout': the first layer must be embedding (E) "
                                "and the last loss (L), each specified exactly once");
    if (in.n_mtp && m->mtp_layers == 0)
        return CONFIG_FAIL(err, "field 'pipeline_layout': this model has no MTP layers (m)");
    /* pipeline_parallel_layer_layout.py validate_layer_layout: the m's count mtp_num_layers
     * and follow every decoder layer. */
    if (in.n_mtp && in.n_mtp != m->mtp_layers)
        return CONFIG_FAIL(err,
                           "field 'pipeline_layout': Number of mtp layers in layout must match "
                           "mtp_num_layers (%u m, %u MTP layers)",
                           in.n_mtp, m->mtp_layers);
    if (in.decoder_after_mtp)
        return CONFIG_FAIL(err, "field 'pipeline_layout': decoder layers must be placed before "
                                "MTP layers");
    /* spsim's limit: the MTP depths run on the last stage (pipeline_time.c), where Megatron
     * puts them when the layout names them in the last stage beside the loss; a standalone
     * MTP stage elsewhere is not modelled. */
    if (in.n_mtp != in.n_mtp_last)
        return CONFIG_FAIL(err, "field 'pipeline_layout': MTP layers (m) outside the last stage "
                                "are not modelled (spsim runs them on the last stage)");
    if (in.n_decoder != m->layers)
        return CONFIG_FAIL(err,
                           "field 'pipeline_layout': Number of decoder layers %u must match "
                           "num_layers %u",
                           in.n_decoder, m->layers);
    pl->v = v;
    pl->nlayout = in.nstages;
    return SPSIM_OK;
}

/* One of the first/last stage counts: positive and divisible by v (transformer_config.py). */
static int
edge_check(const char *field, const char *which, uint32_t n, uint32_t v, struct spsim_error *err)
{
    if (n % v != 0)
        return CONFIG_FAIL(err,
                           "field '%s': number of layers at %s stage: %u must be divisible by "
                           "virtual pipeline parallel degree %u",
                           field, which, n, v);
    return SPSIM_OK;
}

/* --decoder-first/last-pipeline-num-layers: the rest split evenly over the middle ranks. */
static int
plan_first_last(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                struct spsim_stage_plan *pl, struct spsim_error *err)
{
    uint32_t f = par->first_stage_layers, l = par->last_stage_layers, v = par->vpp;
    int64_t left = m->layers, stages = par->pp;
    int rc;
    if (f && ((rc = edge_check("first_stage_layers", "first", f, v, err))))
        return rc;
    if (l && ((rc = edge_check("last_stage_layers", "last", l, v, err))))
        return rc;
    if (f && l && par->pp < 2)
        return CONFIG_FAIL(err, "field 'last_stage_layers': first and last stage layers need "
                                "pp >= 2");
    left -= (int64_t)f + l;
    stages -= (f != 0) + (l != 0);
    if (left < 0 || (left != 0) != (stages != 0))
        return CONFIG_FAIL(err,
                           "field 'first_stage_layers': Mismatch: %lld middle layers remaining "
                           "but %lld middle PP stages available",
                           (long long)left, (long long)stages);
    if (stages && left % stages != 0)
        return CONFIG_FAIL(err,
                           "field 'first_stage_layers': number of layers at middle stage: %lld "
                           "must be divisible by the middle pipeline model parallel size %lld",
                           (long long)left, (long long)stages);
    uint32_t mid = stages ? (uint32_t)(left / stages) : 0;
    if (stages && mid % v != 0)
        return CONFIG_FAIL(err,
                           "field 'first_stage_layers': number of layers on each middle pipeline "
                           "rank: %u must be divisible by virtual pipeline parallel degree %u",
                           mid, v);
    pl->first = f ? f : mid;
    pl->last = l ? l : mid;
    pl->middle = mid;
    return SPSIM_OK;
}

int
spsim_stage_even_error(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                       struct spsim_error *err)
{
    return CONFIG_FAIL(err,
                       "field 'pp': the model's %u layers are not divisible by pp·vpp = "
                       "%u·%u = %llu (uneven splits: first_stage_layers, last_stage_layers, "
                       "account_embedding, account_loss or pipeline_layout)",
                       m->layers, par->pp, par->vpp, (unsigned long long)par->pp * par->vpp);
}

/* Even split, with the embedding and the loss optionally counted as layers. */
static int
plan_even(const struct spsim_model_shape *m, const struct spsim_parallel *par,
          struct spsim_stage_plan *pl, struct spsim_error *err)
{
    uint64_t n = (uint64_t)m->layers + par->account_embedding + par->account_loss;
    uint64_t chunks = (uint64_t)par->pp * par->vpp;
    if (pl->even && n % chunks != 0)
        return spsim_stage_even_error(m, par, err);
    if (n % par->pp != 0)
        return CONFIG_FAIL(err,
                           "field 'pp': Number of layers should be divisible by the "
                           "pipeline-model-parallel size (%llu layers with the embedding and "
                           "loss accounted, pp = %u)",
                           (unsigned long long)n, par->pp);
    if (n / par->pp % par->vpp != 0)
        return CONFIG_FAIL(err,
                           "field 'vpp': num_layers_per_pipeline_rank %llu should be divisible "
                           "by vp_size %u",
                           (unsigned long long)(n / par->pp), par->vpp);
    pl->first = pl->middle = pl->last = (uint32_t)(n / par->pp);
    return SPSIM_OK;
}

int
spsim_stage_plan_make(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                      struct spsim_stage_plan *pl, struct spsim_error *err)
{
    bool edges = par->first_stage_layers || par->last_stage_layers;
    bool account = par->account_embedding || par->account_loss;
    pl->p = par->pp;
    pl->v = par->vpp;
    pl->g = par->microbatch_group ? par->microbatch_group : par->pp;
    pl->emb = par->account_embedding;
    pl->loss = par->account_loss;
    pl->nlayout = 0;
    pl->bf16_start = pl->bf16_end = 0;
    pl->even = !edges && !account && !par->pipeline_layout;
    if (par->pipeline_layout && (edges || account))
        return CONFIG_FAIL(err, "field 'pipeline_layout': pipeline_model_parallel_layout cannot "
                                "be set with other pipeline layout arguments");
    if (edges && account)
        return CONFIG_FAIL(err, "field 'first_stage_layers': num_layers_in_first_pipeline_stage "
                                "and num_layers_in_last_pipeline_stage cannot be set at the same "
                                "time with account_for_embedding_in_pipeline_split and "
                                "account_for_loss_in_pipeline_split");
    if (par->pipeline_layout)
        return plan_layout(m, par, pl, err);
    return edges ? plan_first_last(m, par, pl, err) : plan_even(m, par, pl, err);
}

uint32_t
spsim_stage_chunk_layers(const struct spsim_stage_plan *pl, uint32_t r, uint32_t c)
{
    if (pl->nlayout)
        return pl->layout[c * pl->p + r];
    uint32_t n = (r == 0 ? pl->first : r == pl->p - 1 ? pl->last : pl->middle) / pl->v;
    if (pl->emb && r == 0 && c == 0)
        n--;
    if (pl->loss && r == pl->p - 1 && c == pl->v - 1)
        n--;
    return n;
}

/* Virtual stages come in c·p + r order (Megatron-Core transformer_block.py
 * get_transformer_layer_offset). */
uint32_t
spsim_stage_chunk_offset(const struct spsim_stage_plan *pl, uint32_t r, uint32_t c)
{
    uint32_t offset = 0;
    for (uint32_t j = 0; j < c * pl->p + r; j++)
        offset += spsim_stage_chunk_layers(pl, j % pl->p, j / pl->p);
    return offset;
}

/* Megatron-Core fp8_utils.py is_first_last_bf16_layer on the global layer number (layer_number
 * − 1, transformer_block.py): layer_no < start or layer_no >= L − end. */
uint32_t
spsim_stage_chunk_bf16_layers(const struct spsim_stage_plan *pl, uint32_t layers, uint32_t r,
                              uint32_t c)
{
    uint32_t first = spsim_stage_chunk_offset(pl, r, c), n = spsim_stage_chunk_layers(pl, r, c);
    uint64_t end = (uint64_t)layers - spsim_min_u64(pl->bf16_end, layers), bf16 = 0;
    for (uint32_t i = first; i < first + n; i++)
        bf16 += i < pl->bf16_start || i >= end;
    return (uint32_t)bf16;
}

uint32_t
spsim_stage_rank_layers(const struct spsim_stage_plan *pl, uint32_t r)
{
    if (!pl->nlayout) /* the sweep's path: no loop over the chunks */
        return (r == 0           ? pl->first
                : r == pl->p - 1 ? pl->last
                                 : pl->middle) -
               (pl->emb && r == 0) - (pl->loss && r == pl->p - 1);
    uint32_t n = 0;
    for (uint32_t c = 0; c < pl->v; c++)
        n += spsim_stage_chunk_layers(pl, r, c);
    return n;
}

uint32_t
spsim_stage_max_chunk_layers(const struct spsim_stage_plan *pl)
{
    if (pl->even)
        return pl->first / pl->v;
    uint32_t most = 0, n = spsim_stage_ncandidates(pl);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t c = 0; c < pl->v; c++) {
            uint32_t k = spsim_stage_chunk_layers(pl, spsim_stage_candidate(pl, i), c);
            most = k > most ? k : most;
        }
    return most;
}

/* Whether every chunk of rank r builds the same number of layers. */
static bool
rank_uniform(const struct spsim_stage_plan *pl, uint32_t r)
{
    if (!pl->nlayout)
        return pl->v == 1 || !((pl->emb && r == 0) || (pl->loss && r == pl->p - 1));
    uint32_t first = spsim_stage_chunk_layers(pl, r, 0);
    for (uint32_t c = 1; c < pl->v; c++)
        if (spsim_stage_chunk_layers(pl, r, c) != first)
            return false;
    return true;
}

/*
 * The interleaved schedule (schedules.py get_schedule_table, micro-batch groups of g, g = p by
 * default): forward k runs chunk (k mod gv) div g, backward k chunk v − 1 − that; rank r warms
 * up with 2(p − r − 1) + (v − 1)g forwards (get_pp_rank_microbatches). After the warm-up, each
 * steady step runs one forward and then frees one backward's activations; the held layers
 * repeat with period gv (a period's forwards and backwards cover the same chunks), so one
 * period of steady steps finds the peak. A last group of fewer micro-batches (m mod g, which
 * Megatron wants 0 or at least p) runs late in the iteration and is left out.
 */
uint64_t
spsim_stage_warmup(const struct spsim_stage_plan *pl, uint32_t r, uint64_t micro)
{
    return spsim_min_u64(2 * ((uint64_t)pl->p - r - 1) + ((uint64_t)pl->v - 1) * pl->g,
                         micro * pl->v);
}

static uint64_t
interleaved_peak(const struct spsim_stage_plan *pl, uint32_t r, uint64_t micro)
{
    uint64_t g = pl->g, v = pl->v, period = g * v, total = micro * v;
    uint64_t warm = spsim_stage_warmup(pl, r, micro), held = 0, peak = 0;
    for (uint64_t k = 0; k < warm; k++)
        held += spsim_stage_chunk_layers(pl, r, (uint32_t)(k % period / g));
    if (warm == total)
        return held;
    uint64_t steady = spsim_min_u64(total - warm, period);
    for (uint64_t j = 0; j < steady; j++) {
        held += spsim_stage_chunk_layers(pl, r, (uint32_t)((warm + j) % period / g));
        peak = held > peak ? held : peak;
        held -= spsim_stage_chunk_layers(pl, r, (uint32_t)(v - 1 - j % period / g));
    }
    return peak;
}

/* Of the steps k in [0, n), those whose chunk (k mod period) div g is c. */
static uint64_t
chunk_steps(uint64_t n, uint64_t g, uint64_t period, uint64_t c)
{
    uint64_t rem = n % period, lo = c * g;
    return n / period * g + (rem > lo ? spsim_min_u64(rem - lo, g) : 0);
}

/*
 * interleaved_peak without a layout, in closed form: rank r's chunks build b layers each but
 * chunk s, which builds b − 1 (the accounted embedding, s = 0 on rank 0, or loss, s = v − 1 on
 * rank p − 1). After the warm-up's `warm` forwards (b each, less one per forward of chunk s),
 * steady step j holds H(j) = held + b − F(j) + B(j): F(j) the forwards of chunk s among the
 * steady forwards 0..j, B(j) the backwards of chunk s among the frees 0..j − 1. Both count
 * steps in blocks of g, so H is piecewise linear with slopes −1, 0, +1 between the block edges:
 * its largest value over the steady steps is at an edge or an end, where it is evaluated.
 */
static uint64_t
interleaved_peak_split(const struct spsim_stage_plan *pl, uint32_t r, uint64_t micro)
{
    uint64_t g = pl->g, v = pl->v, period = g * v, total = micro * v, s = r == 0 ? 0 : v - 1;
    uint64_t b = (r == 0 ? pl->first : r == pl->p - 1 ? pl->last : pl->middle) / v;
    uint64_t warm = spsim_stage_warmup(pl, r, micro);
    uint64_t held = warm * b - chunk_steps(warm, g, period, s);
    if (warm == total)
        return held;
    uint64_t steady = spsim_min_u64(total - warm, period), fwd0 = chunk_steps(warm, g, period, s);
    /* edges: where a backward block of chunk s begins or ends (j − 1 crosses (v−1−s)g, +g), or a
     * forward block of chunk s does (warm + j crosses sg, sg + g modulo period) */
    uint64_t lo = (v - 1 - s) * g, at = (s * g + period - warm % period) % period;
    uint64_t edges[] = {0,
                        steady - 1,
                        lo,
                        lo + 1,
                        lo + g,
                        lo + g + 1,
                        at,
                        at + g,
                        at + period - 1,
                        at + g - 1,
                        at == 0 ? 0 : at - 1,
                        (at + g) % period};
    uint64_t peak = 0;
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        uint64_t j = spsim_min_u64(edges[i], steady - 1);
        uint64_t f = chunk_steps(warm + j + 1, g, period, s) - fwd0;
        uint64_t h = held + b + chunk_steps(j, g, period, v - 1 - s) - f;
        peak = h > peak ? h : peak;
    }
    return peak;
}

uint64_t
spsim_stage_inflight_layers(const struct spsim_stage_plan *pl, uint32_t r, uint64_t micro)
{
    uint64_t p = pl->p, v = pl->v;
    if (v == 1)
        return spsim_min_u64(p - r, micro) * spsim_stage_rank_layers(pl, r);
    if (rank_uniform(pl, r))
        return spsim_min_u64(spsim_stage_warmup(pl, r, micro) + 1, micro * v) *
               spsim_stage_chunk_layers(pl, r, 0);
    return pl->nlayout ? interleaved_peak(pl, r, micro) : interleaved_peak_split(pl, r, micro);
}

uint32_t
spsim_stage_ncandidates(const struct spsim_stage_plan *pl)
{
    if (pl->p <= 2)
        return pl->p;
    return pl->nlayout ? pl->p : 3;
}
