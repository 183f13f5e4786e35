/* The engine's view of a hardware profile: the efficiencies its models derive from the
 * profile's measured points (busbw curves, GEMM table), and the GEMM tile model behind them. */
#ifndef SPSIM_HARDWARE_VIEW_H
#define SPSIM_HARDWARE_VIEW_H

#include "profiles/profiles.h"

/* The largest efficiency a network curve may hold. A network curve's eff(size) is measured
 * against the bandwidth the model gives that size, which carries NCCL's own estimates (the
 * protocols' shares, the tree correction factors of tuning.cc:623-628, down to 0.4): a
 * measurement may beat those by up to their inverse, so a network curve's eff may exceed 1, up
 * to 2.5 = 1/0.4; an NVLink curve's peak is a measured busbw and holds eff <= 1. */
#define SPSIM_NETWORK_EFF_MAX 2.5

/** Derive every curve's eff(size) and the GEMM rate table of a freshly read profile, once.
 * @return SPSIM_OK, SPSIM_EFIELD (a point the model cannot reproduce: err names origin and
 *         field), SPSIM_ENOMEM, SPSIM_ENUMERIC */
int spsim_hardware_prepare(struct spsim_hardware *hw, const char *origin, struct spsim_error *err);

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

/** The main-loop rate per full wave behind one measured M×N×K GEMM (16-bit output, beta = 0):
 * its serial epilogue (gpu.gemm_epilogue) taken out, then divided by its tile efficiency.
 * SPSIM_ERANGE when the measurement is faster than its epilogue alone. */
int spsim_gemm_mainloop_rate(const struct spsim_hardware *hw, uint64_t m, uint64_t n, uint64_t k,
                             double measured_flops_per_s, double *rate);

#endif
