/* The engine's view of a hardware profile: the efficiencies its models derive from the
 * profile's measured points (busbw curves, GEMM table), once per loaded profile. */
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

#endif
