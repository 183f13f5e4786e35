/* The latency–bandwidth fit of measured collective times. */
#ifndef SPSIM_CALIB_FIT_H
#define SPSIM_CALIB_FIT_H

#include "internal.h"
#include "spsim/result.h"

/** One measured time: time = α + steps·hop + wire/B[op] + offset. */
struct spsim_fit_point {
    enum spsim_coll_op op;
    double steps;      /**< multiplier of the fitted hop latency */
    double wire_bytes; /**< per-rank bytes on the wire */
    double offset_s;   /**< a known part of the time (intra-domain hops of a hierarchical ring) */
    double time_s;     /**< measured */
};

struct spsim_fit_result {
    double alpha_s;
    double hop_s;
    bool hop_fitted;   /**< false: the points have one step count, so α holds α + steps·hop */
    bool alpha_zeroed; /**< α came out negative and was fixed at 0 */
    bool hop_zeroed;   /**< hop came out negative and was fixed at 0 */
    double busbw_Bps[SPSIM_COLL_COUNT]; /**< B per collective; 0 where there is no point */
};

/**
 * Weighted least squares (GSL gsl_multifit_wlinear) of the points, each weighted by
 * 1/time² so that every size counts by its relative error. Unknowns: α, hop (only when the
 * points have two or more step counts) and 1/B for each collective present. A negative α or
 * hop is fixed at 0 and the rest refitted.
 * @return SPSIM_OK; SPSIM_EINVAL (fewer points than unknowns, non-finite input); SPSIM_ENUMERIC
 *         (GSL failed, or a time does not grow with the bytes: 1/B ≤ 0); SPSIM_ENOMEM
 */
int spsim_latbw_fit(const struct spsim_fit_point *pts, size_t n, struct spsim_fit_result *out,
                    struct spsim_error *err);

/** The fitted time of a point. */
double spsim_latbw_eval(const struct spsim_fit_result *r, const struct spsim_fit_point *p);

#endif
