/* The optimizer's state and its step's HBM traffic, per parameter (engine/optimizer.c). */
#ifndef SPSIM_ENGINE_OPTIMIZER_H
#define SPSIM_ENGINE_OPTIMIZER_H

#include <stdbool.h>
#include <stdint.h>

#include "spsim/model.h"
#include "spsim/parallel.h"

struct spsim_layer;

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

/** Muon's Newton-Schulz iterations (--muon-num-ns-steps, 0 = Megatron's default 5). */
uint32_t spsim_muon_ns_steps(const struct spsim_parallel *par);

/** FLOPs of `steps` quintic Newton-Schulz iterations on a rows × cols matrix (engine/optimizer.c:
 * with m = min, n = max, 4m²n + 2m³ each). */
double spsim_muon_ns_flops(uint64_t rows, uint64_t cols, uint32_t steps);

/** What Muon steps of one block (a decoder layer, or an MTP depth's own rows) on one rank: its
 * 2-D weights' elements and the Newton-Schulz FLOPs of one iteration, the routed experts'
 * apart, and with --muon-tp-mode duplicated the fp32 bytes of the whole matrices gathered over
 * TP and how many gathers. */
struct spsim_muon_totals {
    uint64_t params, expert_params;
    double ns_flops, expert_ns_flops;
    double gather_bytes, gathers;
};

/** Muon's totals of `layer`, out[1 with --muon-no-split-qkv][--muon-tp-mode]. */
void spsim_muon_block(const struct spsim_model_shape *m, const struct spsim_layer *layer,
                      struct spsim_muon_totals out[2][SPSIM_MUON_TP_COUNT]);

/** Bytes per parameter Muon holds for a 2-D weight before sharding: the fp32 main weight and
 * momentum buffer (8), + the fp32 copy of 16-bit gradients (4). */
uint32_t spsim_muon_state_bytes(uint32_t grad_bytes);

/** HBM bytes per element of Muon's elementwise step on a 2-D weight of its shard (the torch
 * ops of OrthogonalizedOptimizer.step and newton_schulz outside its GEMMs). */
double spsim_muon_step_bytes(const struct spsim_parallel *par, uint32_t grad_bytes);

/* Megatron-Core's HybridDeviceOptimizer (engine/memory.c offload_sharded): bytes per shard
 * parameter left on the GPU (fp32 copy 4, FusedAdam's fp32 moments 8) and per offloaded one in
 * pinned host memory (fp32 copy 4, torch AdamW's moments 8, the fp32 gradient buffer 4). */
#define SPSIM_HDO_GPU_BYTES  12.0
#define SPSIM_HDO_HOST_BYTES 16.0

#endif
