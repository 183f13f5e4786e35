/* The engine's view of a hardware profile: the efficiencies its models derive from the
 * profile's measured points (busbw curves, GEMM table), once per loaded profile. */
#ifndef SPSIM_HARDWARE_VIEW_H
#define SPSIM_HARDWARE_VIEW_H

#include "profiles/profiles.h"

/** Derive every curve's eff(size) and the GEMM rate table of a freshly read profile, once.
 * @return SPSIM_OK, SPSIM_EFIELD (a point the model cannot reproduce: err names origin and
 *         field), SPSIM_ENOMEM, SPSIM_ENUMERIC */
int spsim_hardware_prepare(struct spsim_hardware *hw, const char *origin, struct spsim_error *err);

#endif
