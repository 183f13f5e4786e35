/*
 * spsim: analytic simulator of Megatron-style training (tensor, sequence, pipeline and data
 * parallelism, activation recomputation).
 *
 * The library never prints and never exits. Fallible functions return 0 or a negative
 * enum spsim_status and fill an optional struct spsim_error. Objects (models, hardware) are
 * opaque and freed with their _destroy function, which accepts NULL.
 *
 * The library calls GSL and checks every status it returns. GSL's default error handler aborts
 * the process; a program that links spsim should call gsl_set_error_handler_off() once at
 * start-up (the spsim command does), so that a numerical failure becomes SPSIM_ENUMERIC.
 */
#ifndef SPSIM_SPSIM_H
#define SPSIM_SPSIM_H

#include "spsim/calibrate.h"
#include "spsim/collective.h"
#include "spsim/common.h"
#include "spsim/data.h"
#include "spsim/fields.h"
#include "spsim/gpu.h"
#include "spsim/hardware.h"
#include "spsim/megatron.h"
#include "spsim/model.h"
#include "spsim/parallel.h"
#include "spsim/plan.h"
#include "spsim/result.h"
#include "spsim/schedule.h"
#include "spsim/sweep.h"

#endif
