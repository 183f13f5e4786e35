/* Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm): its rules and one
 * MoE layer's forward of one micro-batch run beside the backward of another (ep_overlap.c). */
#ifndef SPSIM_EP_OVERLAP_H
#define SPSIM_EP_OVERLAP_H

#include "eval.h"

/** Megatron's rules for moe_a2a_overlap and delay_wgrad_compute (transformer_config.py).
 * @return SPSIM_OK or SPSIM_ECONFIG */
int spsim_ep_overlap_check(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                           struct spsim_error *err);

/** The EP time one MoE layer's pair (a forward beside another micro-batch's backward) leaves
 * exposed, without [0] and with [1] the delayed expert wgrad; a folded block with costs. */
void spsim_ep_overlap_pair(const struct spsim_hardware *hw, const struct spsim_block_eval *be,
                           double exposed[2]);

/** Forward/backward pairs per micro-batch of the stage's chunks that pipeline rank r runs
 * combined (the rest alone: warm-up forwards and cool-down backwards), of m micro-batches over
 * p ranks and v chunks. */
double spsim_ep_overlap_paired(uint64_t m, uint64_t p, uint64_t v, uint64_t r);

#endif
