/* The engine's view of a hardware profile: the efficiencies its models derive from the
 * profile's measured points (busbw curves, GEMM table), and the GEMM tile model behind them. */
#ifndef SPSIM_HARDWARE_VIEW_H
#define SPSIM_HARDWARE_VIEW_H

#include "profiles/profiles.h"

/** Derive every curve's eff(size) and the GEMM rate table of a freshly read profile, once.
 * @return SPSIM_OK, SPSIM_EFIELD (a point the model cannot reproduce: err names origin and
 *         field), SPSIM_ENOMEM, SPSIM_ENUMERIC */
int spsim_hardware_prepare(struct spsim_hardware *hw, const char *origin, struct spsim_error *err);

/** Fraction of the GPU's SMs doing useful work for an M×N output (batch of them), tiled with
 * the best of the CUTLASS default tile shapes (wave quantisation and partial edge tiles). */
double spsim_tile_efficiency(uint32_t sms, uint64_t m, uint64_t n, uint64_t batch);

/** The main-loop rate per full wave behind one measured M×N×K GEMM (16-bit output, beta = 0):
 * its serial epilogue (gpu.gemm_epilogue) taken out, then divided by its tile efficiency.
 * SPSIM_ERANGE when the measurement is faster than its epilogue alone. */
int spsim_gemm_mainloop_rate(const struct spsim_hardware *hw, uint64_t m, uint64_t n, uint64_t k,
                             double measured_flops_per_s, double *rate);

#endif
