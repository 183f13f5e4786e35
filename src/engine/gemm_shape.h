/* The GEMM tile model (engine/gemm_shape.c): what a GEMM's shape leaves of the main loop's
 * full-wave rate. */
#ifndef SPSIM_GEMM_SHAPE_H
#define SPSIM_GEMM_SHAPE_H

#include "profiles/profiles.h"

/** What the GEMM shape model needs of a GPU and a dtype (engine/gemm_shape.c). */
struct spsim_gemm_geometry {
    uint32_t sms;
    uint32_t k_block; /* K elements per main-loop k-block: 128 bytes of K */
    bool persistent;  /* one prologue per SM (gpu.gemm_epilogue "overlapped"), else per tile */
};

static inline struct spsim_gemm_geometry
spsim_gemm_geometry_of(const struct spsim_hardware *hw, bool fp8)
{
    return (struct spsim_gemm_geometry){hw->sm_count, fp8 ? 128u : 64u, !hw->gemm_epilogue_serial};
}

/** Fraction of the main loop's full-wave rate an M×N×K GEMM (batch of them) reaches without
 * split-K: tile and wave quantisation, K-blocks and the prologue, best of the CUTLASS default
 * tile shapes. */
double spsim_gemm_shape_efficiency(const struct spsim_gemm_geometry *g, uint64_t m, uint64_t n,
                                   uint64_t k, uint64_t batch);

/** Seconds of the main loops of an M×N×K GEMM at `rate` (FLOP/s per full wave) with the best
 * tile and split-K (its fp32 partials through HBM at hbm_Bps); *split_out (may be NULL) the
 * split chosen, 1 = none. */
double spsim_gemm_shape_time(const struct spsim_gemm_geometry *g, double rate, double hbm_Bps,
                             uint64_t m, uint64_t n, uint64_t k, uint64_t batch,
                             uint32_t *split_out);

#endif
