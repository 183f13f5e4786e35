/* The pipeline schedules beyond Megatron-Core's (pp_schedule.c). */
#ifndef SPSIM_ENGINE_PP_SCHEDULE_H
#define SPSIM_ENGINE_PP_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"
#include "spsim/model.h"
#include "spsim/parallel.h"

/* The schedule's rules for `micro` micro-batches. */
int spsim_pp_schedule_check(const struct spsim_parallel *p, uint64_t micro,
                            struct spsim_error *err);
/* The fill and drain from the mean stage's F + B, B, W, the EP time pairing hides and a send. */
double spsim_pp_schedule_bubble(enum spsim_pp_schedule s, uint32_t pp, double stage, double bwd,
                                double wgrad, double hidden, double send);
/* Chunk activations rank `rank` holds at its peak. */
uint64_t spsim_pp_schedule_inflight(enum spsim_pp_schedule s, uint64_t pp, uint64_t rank,
                                    uint64_t micro);
/* Micro-batches whose forward runs beside another's backward on rank r (DualPipe's
 * _forward_backward_chunk calls, in micro-batches: DualPipeV's chunk pairs halved). */
double spsim_pp_schedule_paired(enum spsim_pp_schedule s, uint64_t micro, uint64_t pp,
                                uint64_t rank);

#endif
