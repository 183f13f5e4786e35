/* The fitted parameters of a runs calibration as edits of the base profile (runs_profile.c),
 * which the fit (runs_fit.c) drives: the fit calls this, this calls nothing of the fit. */
#ifndef SPSIM_RUNS_PROFILE_H
#define SPSIM_RUNS_PROFILE_H

#include <cjson/cJSON.h>

#include "spsim/calibrate.h"

/* Most numbers one parameter sets (a measured table's rates and its ceiling). */
#define SPSIM_RUNS_MAX_NODES 256

/** One parameter's place in the base profile: the numbers it sets and their base values. */
struct spsim_runs_knob {
    size_t nnodes;
    cJSON *node[SPSIM_RUNS_MAX_NODES];
    double base[SPSIM_RUNS_MAX_NODES];
    cJSON *source[4]; /* the "source" strings of the objects it edits */
    size_t nsources;
};

/** The base profile as a JSON tree and the parameters' places in it. */
struct spsim_runs_profile {
    cJSON *root;
    const char *origin;
    size_t nparams;
    struct spsim_runs_param param[SPSIM_RUNS_MAX_PARAMS];
    struct spsim_runs_knob knob[SPSIM_RUNS_MAX_PARAMS];
};

/** Read the base profile and find every parameter's fields; the priors come from it.
 * @return SPSIM_OK, SPSIM_EIO, SPSIM_EPARSE, SPSIM_EFIELD, SPSIM_ENOMEM */
int spsim_runs_profile_open(struct spsim_runs_profile *p, const char *path,
                            struct spsim_error *err);

void spsim_runs_profile_close(struct spsim_runs_profile *p);

/** The profile with parameter k at theta[k] for every k (the others at their priors): parsed by
 * the real loader. @return SPSIM_OK or the loader's code (err says why) */
int spsim_runs_profile_build(struct spsim_runs_profile *p, const double *theta,
                             struct spsim_hardware **hw, struct spsim_error *err);

/** The iteration time of a run on `hw`. @return SPSIM_OK or spsim_evaluate()'s code */
int spsim_runs_predict(const struct spsim_hardware *hw, const struct spsim_run *run, double *s,
                       struct spsim_error *err);

#endif
