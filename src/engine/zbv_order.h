/* ZB-V's order: the zero-bubble repository's greedy V scheduler (zbv_order.c). */
#ifndef SPSIM_ENGINE_ZBV_ORDER_H
#define SPSIM_ENGINE_ZBV_ORDER_H

#include <stdint.h>

/* One op of a rank's order: kind 0 forward, 1 input-gradient backward, 2 weight gradient;
 * chunk the model chunk (0: stage r, 1: stage 2p − 1 − r); mb the micro-batch. */
struct spsim_zbv_op {
    uint8_t kind, chunk;
    uint32_t mb;
};

/* Every rank's order for p ranks and m micro-batches: `cost` the forward, input-gradient and
 * weight-gradient times of a chunk (sends included), `mem` the memory each adds (F > 0; B and
 * W free it) and `max_mem` the cap. `out` holds p × 6m ops, rank r's from r·6m, `n` each
 * rank's count. @return 0, 1 when the search finds no order, −1 out of memory. */
int spsim_zbv_order(uint32_t p, uint32_t m, const double cost[3], const double mem[3],
                    double max_mem, struct spsim_zbv_op *out, uint32_t *n);

#endif
