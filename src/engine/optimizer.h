/* The optimizer's state and its step's HBM traffic, per parameter (engine/optimizer.c). */
#ifndef SPSIM_ENGINE_OPTIMIZER_H
#define SPSIM_ENGINE_OPTIMIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "spsim/parallel.h"

/** Bytes of one element of a precision-aware optimizer tensor: fp32 4, fp16 and bf16 2, fp8 1
 * (TE keeps FP8 state as torch.uint8 plus one fp32 scale per tensor, which is not counted). */
uint32_t spsim_opt_dtype_bytes(enum spsim_opt_dtype d);

/** Whether Transformer Engine's FusedAdam holds the master weights and reads the gradient
 * buffer's shard directly (Megatron-Core's use_precision_aware_optimizer_no_fp8_or_ds_fp8). */
bool spsim_optimizer_te_master(const struct spsim_parallel *par);

/** Bytes per parameter the optimizer holds before sharding (master weights, both moments, the
 * fp32 copy of 16-bit gradients where Megatron makes one); grad_bytes is the gradient buffer's
 * element size (4 or 2). Plain Adam: 12, or 16 with 16-bit gradients. */
uint32_t spsim_optimizer_state_bytes(const struct spsim_parallel *par, uint32_t grad_bytes);

/** HBM bytes of the optimizer step: *shard per parameter of the rank's optimizer shard (the
 * gradient read and any copy of it, the master weights and moments read and written, TE's
 * bf16 parameter update), *full per parameter of the rank's whole bf16 weights (Megatron's
 * copy of the main weights into the model's; 0 where TE updates the parameter shard itself).
 * Plain Adam with fp32 gradients: 28 and 2. */
void spsim_optimizer_step_bytes(const struct spsim_parallel *par, uint32_t grad_bytes,
                                double *shard, double *full);

#endif
