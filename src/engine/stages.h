/*
 * The pipeline's stages: how many layers each model chunk of each pipeline rank builds, as
 * Megatron-Core's get_num_layers_to_build (transformer_block.py) and PipelineParallelLayerLayout
 * (pipeline_parallel_layer_layout.py) decide it, and the layers a rank holds in flight.
 */
#ifndef SPSIM_STAGES_H
#define SPSIM_STAGES_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "profiles/profiles.h"
#include "spsim/parallel.h"

/* Stages (pp·vpp) a layout string may name: far above any real pipeline (DeepSeek-V3's layout
 * has 32), low enough to keep the plan on the stack. */
#define SPSIM_LAYOUT_MAX_STAGES 1024

struct spsim_stage_plan {
    uint32_t p, v;
    uint32_t g; /* interleaved: micro-batches per group of one chunk (microbatch_group; p) */
    /* Without a layout: the layers of rank 0, of every middle rank, and of rank p − 1; each
     * rank's chunks build layers/v, less one for the embedding (chunk 0 of rank 0) or the loss
     * (chunk v − 1 of rank p − 1) when they are accounted. */
    uint32_t first, middle, last;
    bool emb, loss;
    bool even; /* no uneven option: every chunk builds L/(p·v) */
    /* With a layout: nlayout = p·v decoder-layer counts, virtual-stage-major ([c·p + r]). */
    uint32_t nlayout;
    uint32_t layout[SPSIM_LAYOUT_MAX_STAGES];
    /* first_last_layers_bf16 on a dense model (compose.h): the decoder layers [0, bf16_start)
     * and [L − bf16_end, L) run in BF16; 0, 0 otherwise. */
    uint32_t bf16_start, bf16_end;
};

/** Interleaved: rank r's warm-up forwards, 2(p − r − 1) + (v − 1)g, at most v·micro. */
uint64_t spsim_stage_warmup(const struct spsim_stage_plan *pl, uint32_t r, uint64_t micro);

/** Resolve and check the split of the model's layers (Megatron's rules and messages).
 * @return SPSIM_OK or SPSIM_ECONFIG */
int spsim_stage_plan_make(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                          struct spsim_stage_plan *out, struct spsim_error *err);

/** The refusal of an even split that pp·vpp does not divide. @return SPSIM_ECONFIG */
int spsim_stage_even_error(const struct spsim_model_shape *m, const struct spsim_parallel *par,
                           struct spsim_error *err);

/** Layers that chunk c of pipeline rank r builds. */
uint32_t spsim_stage_chunk_layers(const struct spsim_stage_plan *pl, uint32_t r, uint32_t c);

/** The global index of the first decoder layer chunk c of rank r builds. */
uint32_t spsim_stage_chunk_offset(const struct spsim_stage_plan *pl, uint32_t r, uint32_t c);

/** Of the layers chunk c of rank r builds, those in BF16 (pl->bf16_start, bf16_end) of a model
 * of `layers` decoder layers. */
uint32_t spsim_stage_chunk_bf16_layers(const struct spsim_stage_plan *pl, uint32_t layers,
                                       uint32_t r, uint32_t c);

/** Layers pipeline rank r builds (all its chunks). */
uint32_t spsim_stage_rank_layers(const struct spsim_stage_plan *pl, uint32_t r);

/** Most layers any one chunk builds. */
uint32_t spsim_stage_max_chunk_layers(const struct spsim_stage_plan *pl);

/**
 * Layers whose activations rank r holds at its peak with `micro` micro-batches: 1F1B holds
 * min(p − r, m) micro-batches of its layers; the interleaved schedule's warm-up of
 * 2(p − r − 1) + (v − 1)p chunk forwards plus one, taken in Megatron's chunk order when the
 * chunks differ in size.
 */
uint64_t spsim_stage_inflight_layers(const struct spsim_stage_plan *pl, uint32_t r, uint64_t micro);

/** How many ranks can be the most loaded: rank 0, rank p − 1, then the middle ranks (only
 * rank 1 without a layout: the middle ranks build the same layers and hold fewer in flight
 * the later they are). */
uint32_t spsim_stage_ncandidates(const struct spsim_stage_plan *pl);

/** The i-th of them, in the order ties are broken (0, p − 1, 1, 2, ...). */
static inline uint32_t
spsim_stage_candidate(const struct spsim_stage_plan *pl, uint32_t i)
{
    return i == 0 ? 0 : i == 1 ? pl->p - 1 : i - 1;
}

/** A layout string read as Megatron's parse_str_to_list reads it. */
struct spsim_layout_info {
    uint32_t nstages;
    uint32_t n_emb, n_loss, n_mtp, n_decoder;
    uint32_t n_mtp_last;       /* the m's of the last stage (the last rank's last chunk) */
    bool emb_first, loss_last; /* the first symbol is E, the last is L */
    bool decoder_after_mtp;    /* a t after the first m */
};

/** Expand and count a layout string; each stage's decoder layers go to decoder[] (capacity
 * SPSIM_LAYOUT_MAX_STAGES). @return SPSIM_OK, SPSIM_ECONFIG or SPSIM_ENOMEM */
int spsim_layout_parse(const char *text, uint32_t *decoder, struct spsim_layout_info *info,
                       struct spsim_error *err);

#endif
