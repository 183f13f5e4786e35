/* The calibrated-profile writer (calibrate_json.c) and the calibration's state it reads, which
 * the fit (calibrate.c) fills: the fit calls the writer, the writer calls nothing of the fit. */
#ifndef SPSIM_CALIBRATE_JSON_H
#define SPSIM_CALIBRATE_JSON_H

#include <cjson/cJSON.h>

#include "calib_fit.h"
#include "engine/collective_model.h"
#include "engine/eval.h"
#include "profiles/profiles.h"
#include "spsim/calibrate.h"

enum { CAL_NVLINK = 0, CAL_NETWORK = 1 };

/** The sizes one table measured for one collective on one group. */
struct cal_series {
    size_t input; /* index of the table */
    enum spsim_coll_op op;
    uint32_t ranks, nodes; /* nodes as placed on the calibrated layout */
    struct spsim_group g;
    int tier; /* CAL_NVLINK or CAL_NETWORK */
    size_t n; /* distinct sizes, increasing */
    uint64_t *size;
    double *time_s;                 /* mean of the samples of each size */
    bool curve;                     /* this series gives its tier and collective's busbw curve */
    double latency_s;               /* the calibrated model's α for the group */
    double fit_median, fit_max;     /* relative error of the tier's fit */
    double repro_median, repro_max; /* calibrated profile, sizes >= 1 MiB; < 0: no such size */
};

struct cal {
    const struct spsim_calibrate_options *o;
    struct spsim_error *err;
    const struct spsim_bw_table *const *tables;
    size_t ntables;
    const struct spsim_gemm_sample *gemms;
    size_t ngemms;
    const struct spsim_hbm_sample *hbm;
    size_t nhbm;
    struct spsim_hardware *base;
    struct spsim_hardware model; /* scalars of the base with the calibrated node and latencies */
    uint32_t multinode_gpn;      /* ranks per node of the multi-node samples; 0: none */
    struct cal_series *s;
    size_t ns;
    struct spsim_fit_result fit[2];
    double fit_steps[2]; /* the step count of a tier whose hop could not be fitted */
    size_t fit_sizes[2]; /* points in each tier's fit */
    bool measured[2];
    double ar_peak_Bps, ring_peak_Bps, nic_Bps; /* written values; 0: left as in the base */
    double fitted_latency_s[2]; /* the first series' α before cap_latency(); 0: not lowered */
    bool ring_capped;
    char date[40];
    char prov[1536]; /* "spsim calibrate VERSION, DATE, from FILES; command: ..." */
    cJSON *root;     /* the profile being written */
    struct spsim_calibration *out;
    enum spsim_coll_op ring_peak_op; /* the series that set ring_peak_Bps */
};

/** Sizes from 1 MiB up: where the issue asks `spsim collective` to reproduce a measurement
 * within 10 % (issue 5), so where the calibrated latency must leave room for the bandwidth. */
#define SPSIM_CAL_REPRO_MIN_BYTES (1ull << 20)

/** The measured collective per-rank wire bytes of a series' size. */
static inline double
spsim_cal_wire(const struct cal_series *s, uint64_t size)
{
    return spsim_wire_fraction(s->op, s->ranks) * (double)size;
}

/** Turn the base profile's text into c->root with every calibrated field replaced. */
int spsim_cal_json_build(struct cal *c, const char *base_text, size_t len);
/** Record each series' fit and reproduction errors in the calibration object. */
int spsim_cal_json_errors(struct cal *c);
/** Print c->root; *text is malloc'd. */
int spsim_cal_json_print(struct cal *c, char **text, size_t *len);

#endif
