/* The time, energy and cost of a whole training run (include/spsim/plan.h). */
#include "config.h"

#include <math.h>

#include "internal.h"
#include "profiles/profiles.h"
#include "spsim/plan.h"

int
spsim_train_plan_make(const struct spsim_result *r, const struct spsim_hardware *hw,
                      double train_tokens, double gpu_hour_price, struct spsim_train_plan *out,
                      struct spsim_error *err)
{
    if (!r || !hw || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_train_plan_make: NULL argument");
    if (!(train_tokens >= 1 && train_tokens <= 1e18))
        return spsim_fail(err, SPSIM_EINVAL,
                          "train_tokens: must be a number from 1 to 1e18, got %g", train_tokens);
    if (!(gpu_hour_price >= 0 && gpu_hour_price <= 1e6))
        return spsim_fail(err, SPSIM_EINVAL,
                          "gpu_hour_price: must be a number from 0 to 1e6, got %g", gpu_hour_price);
    double per_iter = (double)r->config.gbs * (double)r->config.seq;
    if (!(per_iter > 0 && r->time.iteration_s > 0))
        return spsim_fail(err, SPSIM_EINVAL, "spsim_train_plan_make: the result has no iteration");
    struct spsim_train_plan p = {0};
    p.train_tokens = train_tokens;
    p.tokens_per_iteration = per_iter;
    /* Whole iterations: a run stops after the one that reaches its token count. */
    p.iterations = (uint64_t)ceil(train_tokens / per_iter);
    p.wall_s = (double)p.iterations * r->time.iteration_s;
    p.wall_days = p.wall_s / 86400.0;
    p.gpu_hours = (double)r->gpus * p.wall_s / 3600.0;
    p.board_power_W = hw->board_power_W;
    p.energy_available = hw->board_power_W > 0;
    if (p.energy_available)
        p.energy_kWh = (double)r->gpus * hw->board_power_W * p.wall_s / 3.6e6;
    else
        p.energy_refused = hw->board_power_unsourced ? hw->board_power_unsourced
                                                     : "the hardware profile gives no "
                                                       "gpu.board_power_W";
    p.gpu_hour_price = gpu_hour_price;
    p.cost = p.gpu_hours * gpu_hour_price;
    *out = p;
    return SPSIM_OK;
}
