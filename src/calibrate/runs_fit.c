/*
 * Calibration from measured runs (doc/calibration.md, "Calibration from measured runs"): the
 * base profile's physical parameters (runs_profile.c) fitted to measured iteration times by
 * GSL's nonlinear least squares, leave-one-group-out cross-validation, and the fitted profile.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>

#include "internal.h"
#include "runs_profile.h"

/* The residuals are in units of the spread a measured iteration time is taken to have, 2 %
 * (log), and each parameter's prior is one more observation, one standard deviation a factor
 * of 4 from it: a parameter the runs pin down is theirs, one they barely move stays near its
 * source, and directions they cannot tell apart (GEMM against attention rate) are held by the
 * priors rather than left free. */
#define RUN_SPREAD  0.02
#define PRIOR_SIGMA 1.3862943611198906 /* ln 4 */
/* A parameter is fitted when a change of it (10 % of a scale, half a value) moves some run's
 * prediction by more than 0.1 %; below that the runs do not determine it. */
#define SENSITIVITY    1e-3
#define MAX_ITERATIONS 60

struct fit {
    struct spsim_runs_profile *prof;
    const struct spsim_run *runs;
    size_t nruns;
    const bool *use; /* the runs this fit sees */
    size_t nuse, nfree;
    size_t free_of[SPSIM_RUNS_MAX_PARAMS]; /* the fitted parameters' indices */
    double theta[SPSIM_RUNS_MAX_PARAMS];   /* every parameter; the others at their priors */
    int rc;                                /* the first failure inside GSL's callback */
    struct spsim_error *err;
};

/* The bounded parameter from GSL's unbounded one (logistic) and back. */
/* Held a hair inside the bounds: at a bound the transform's inverse is infinite. */
static double
inside(const struct spsim_runs_param *q, double theta)
{
    double eps = 1e-9 * (q->hi - q->lo);
    return fmin(fmax(theta, q->lo + eps), q->hi - eps);
}

static double
theta_of(const struct spsim_runs_param *q, double u)
{
    return inside(q, q->lo + (q->hi - q->lo) / (1 + exp(-u)));
}

static double
u_of(const struct spsim_runs_param *q, double theta)
{
    theta = inside(q, theta);
    return log((theta - q->lo) / (q->hi - theta));
}

/* Predict the runs of `mask` (NULL: all) on the profile at F->theta into s[]. */
static int
predict_all(struct fit *F, const bool *mask, double *s)
{
    struct spsim_hardware *hw = NULL;
    int rc = spsim_runs_profile_build(F->prof, F->theta, &hw, F->err);
    for (size_t i = 0; rc == SPSIM_OK && i < F->nruns; i++)
        if (!mask || mask[i])
            rc = spsim_runs_predict(hw, &F->runs[i], &s[i], F->err);
    spsim_hardware_destroy(hw);
    return rc;
}

/* log(predicted / measured) of the fit's runs, then each fitted parameter's prior term. */
static int
residuals(const gsl_vector *x, void *data, gsl_vector *f)
{
    struct fit *F = data;
    for (size_t k = 0; k < F->nfree; k++)
        F->theta[F->free_of[k]] = theta_of(&F->prof->param[F->free_of[k]], gsl_vector_get(x, k));
    double *s = spsim_calloc(F->nruns, sizeof(*s));
    int rc = s ? predict_all(F, F->use, s) : SPSIM_ENOMEM;
    size_t j = 0;
    for (size_t i = 0; rc == SPSIM_OK && i < F->nruns; i++)
        if (F->use[i])
            gsl_vector_set(f, j++, log(s[i] / F->runs[i].measured_s) / RUN_SPREAD);
    for (size_t k = 0; rc == SPSIM_OK && k < F->nfree; k++) {
        const struct spsim_runs_param *q = &F->prof->param[F->free_of[k]];
        gsl_vector_set(f, j++, log(F->theta[F->free_of[k]] / q->prior) / PRIOR_SIGMA);
    }
    free(s);
    if (rc != SPSIM_OK) {
        if (F->rc == SPSIM_OK)
            F->rc = rc == SPSIM_ENOMEM ? spsim_fail(F->err, rc, "out of memory") : rc;
        return GSL_EBADFUNC;
    }
    return GSL_SUCCESS;
}

/* How far the fit's runs move (largest |log ratio|) with parameter k at `theta` against s0. */
static int
moved_by(struct fit *F, size_t k, double theta, const double *s0, double *s1, double *moved)
{
    double keep = F->theta[k];
    F->theta[k] = theta;
    int rc = predict_all(F, F->use, s1);
    F->theta[k] = keep;
    *moved = 0;
    for (size_t i = 0; rc == SPSIM_OK && i < F->nruns; i++)
        if (F->use[i])
            *moved = fmax(*moved, fabs(log(s1[i] / s0[i])));
    return rc;
}

/*
 * Which present parameters move the fit's runs: those are fitted, the rest stay at prior. Each
 * is probed near its prior (a scale ×0.9, a value ×1.5) and, for a value, also far from it (0.9
 * of the way to its upper bound): a term that binds only beyond some size (the host time,
 * which counts where it exceeds the GPU's time) is flat at the prior, so its far probe is where
 * the second start of the fit puts it (far[k] > 0).
 */
static int
choose_free(struct fit *F, double *far)
{
    double *s0 = spsim_calloc(2 * F->nruns, sizeof(*s0)), *s1 = s0 ? s0 + F->nruns : NULL;
    if (!s0)
        return spsim_fail(F->err, SPSIM_ENOMEM, "out of memory");
    for (size_t k = 0; k < F->prof->nparams; k++)
        F->theta[k] = F->prof->param[k].prior;
    int rc = predict_all(F, F->use, s0);
    F->nfree = 0;
    for (size_t k = 0; rc == SPSIM_OK && k < F->prof->nparams; k++) {
        const struct spsim_runs_param *q = &F->prof->param[k];
        double near = 0, away = 0, at = q->prior + 0.9 * (q->hi - q->prior);
        far[k] = 0;
        if (!q->present)
            continue;
        rc = moved_by(F, k, fmin(q->prior * (q->scale ? 0.9 : 1.5), 0.5 * (q->prior + q->hi)), s0,
                      s1, &near);
        if (rc == SPSIM_OK && !q->scale && near <= SENSITIVITY)
            rc = moved_by(F, k, at, s0, s1, &away);
        if (rc == SPSIM_OK && (near > SENSITIVITY || away > SENSITIVITY))
            F->free_of[F->nfree++] = k;
        if (near <= SENSITIVITY && away > SENSITIVITY)
            far[k] = at;
    }
    free(s0);
    return rc;
}

/* The 1σ uncertainty of each fitted parameter: GSL's covariance of the unbounded ones scaled
 * by the residual variance of the runs, through the logistic's slope. */
static int
uncertainty(struct fit *F, gsl_multifit_nlinear_workspace *w, double *sigma)
{
    size_t p = F->nfree;
    gsl_matrix *cov = gsl_matrix_alloc(p, p);
    if (!cov)
        return spsim_fail(F->err, SPSIM_ENOMEM, "out of memory");
    int st = gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, cov);
    double chisq = 0;
    gsl_vector *f = gsl_multifit_nlinear_residual(w);
    for (size_t j = 0; j < F->nuse; j++)
        chisq += gsl_vector_get(f, j) * gsl_vector_get(f, j);
    double var = chisq / (F->nuse > p ? (double)(F->nuse - p) : 1.0);
    for (size_t k = 0; st == GSL_SUCCESS && k < p; k++) {
        const struct spsim_runs_param *q = &F->prof->param[F->free_of[k]];
        double th = F->theta[F->free_of[k]];
        double slope = (th - q->lo) * (q->hi - th) / (q->hi - q->lo);
        sigma[F->free_of[k]] = slope * sqrt(gsl_matrix_get(cov, k, k) * var);
    }
    gsl_matrix_free(cov);
    return st == GSL_SUCCESS ? SPSIM_OK
                             : spsim_fail(F->err, SPSIM_ENUMERIC,
                                          "calibrate: the fit's covariance: %s", gsl_strerror(st));
}

/* Drive GSL's trust-region solver from `start` (every parameter); F->theta holds the result,
 * *cost its sum of squared residuals. */
static int
solve(struct fit *F, const double *start, double *sigma, size_t *iterations, int *status,
      double *cost)
{
    size_t p = F->nfree, n = F->nuse + F->nfree;
    gsl_multifit_nlinear_fdf fdf = {.f = residuals, .n = n, .p = p, .params = F};
    gsl_multifit_nlinear_parameters par = gsl_multifit_nlinear_default_parameters();
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &par, n, p);
    gsl_vector *x0 = gsl_vector_alloc(p);
    int rc = w && x0 ? SPSIM_OK : spsim_fail(F->err, SPSIM_ENOMEM, "out of memory");
    for (size_t k = 0; rc == SPSIM_OK && k < p; k++) {
        const struct spsim_runs_param *q = &F->prof->param[F->free_of[k]];
        gsl_vector_set(x0, k, u_of(q, start[F->free_of[k]]));
    }
    int st = rc == SPSIM_OK ? gsl_multifit_nlinear_init(x0, &fdf, w) : GSL_SUCCESS, info = 0;
    if (rc == SPSIM_OK && st == GSL_SUCCESS)
        st = gsl_multifit_nlinear_driver(MAX_ITERATIONS, 1e-8, 1e-8, 1e-10, NULL, NULL, &info, w);
    if (rc == SPSIM_OK)
        rc = F->rc;
    /* Out of iterations or of progress: the best point reached stands, and is recorded. */
    if (rc == SPSIM_OK && st != GSL_SUCCESS && st != GSL_EMAXITER && st != GSL_ENOPROG)
        rc = spsim_fail(F->err, SPSIM_ENUMERIC, "calibrate: the fit failed: %s", gsl_strerror(st));
    if (rc == SPSIM_OK) {
        gsl_vector *x = gsl_multifit_nlinear_position(w);
        for (size_t k = 0; k < p; k++)
            F->theta[F->free_of[k]] =
                theta_of(&F->prof->param[F->free_of[k]], gsl_vector_get(x, k));
        rc = uncertainty(F, w, sigma);
        *iterations = gsl_multifit_nlinear_niter(w);
        *status = st;
        gsl_blas_ddot(gsl_multifit_nlinear_residual(w), gsl_multifit_nlinear_residual(w), cost);
    }
    gsl_vector_free(x0);
    if (w)
        gsl_multifit_nlinear_free(w);
    return rc;
}

/* Solve from `start` with the parameters flat at the priors (far[k] > 0) first held there,
 * then every fitted parameter from that point: a term that binds only beyond some value is
 * placed before the others can trade against it. */
static int
solve_held(struct fit *F, double *start, const double *far, double *sigma, size_t *iterations,
           int *status, double *cost)
{
    size_t keep[SPSIM_RUNS_MAX_PARAMS], nkeep = F->nfree, n = 0;
    memcpy(keep, F->free_of, sizeof(keep));
    for (size_t k = 0; k < nkeep; k++)
        if (!(far[keep[k]] > 0))
            F->free_of[n++] = keep[k];
    F->nfree = n;
    int rc = n ? solve(F, start, sigma, iterations, status, cost) : SPSIM_OK;
    F->nfree = nkeep;
    memcpy(F->free_of, keep, sizeof(keep));
    for (size_t k = 0; rc == SPSIM_OK && n && k < nkeep; k++)
        if (!(far[keep[k]] > 0))
            start[keep[k]] = F->theta[keep[k]];
    return rc == SPSIM_OK ? solve(F, start, sigma, iterations, status, cost) : rc;
}

/* Fit the runs of `use`: F->theta the fitted vector (priors where not fitted). GSL's trust
 * region starts at the priors and, where a parameter is flat there (choose_free: a term that
 * binds only beyond some value), also with those parameters at 1/4, 1/2, 3/4 and 9/10 of the
 * way (in log) from prior to upper bound, first held there (solve_held); the lowest cost
 * stands. */
static int
fit_runs(struct fit *F, const bool *use, double *sigma, size_t *iterations, int *status)
{
    static const double way[] = {0, 0.25, 0.5, 0.75, 0.9};
    F->use = use;
    F->nuse = 0;
    for (size_t i = 0; i < F->nruns; i++)
        F->nuse += use[i];
    for (size_t k = 0; k < SPSIM_RUNS_MAX_PARAMS; k++)
        sigma[k] = 0;
    *iterations = 0;
    *status = GSL_SUCCESS;
    double far[SPSIM_RUNS_MAX_PARAMS] = {0}, start[SPSIM_RUNS_MAX_PARAMS] = {0};
    int rc = choose_free(F, far);
    if (rc != SPSIM_OK || F->nfree == 0)
        return rc;
    bool flat = false;
    for (size_t k = 0; k < F->prof->nparams; k++)
        flat = flat || far[k] > 0;
    double best = HUGE_VAL, theta[SPSIM_RUNS_MAX_PARAMS] = {0}, sig[SPSIM_RUNS_MAX_PARAMS] = {0};
    for (size_t s = 0; rc == SPSIM_OK && s < (flat ? sizeof(way) / sizeof(*way) : 1); s++) {
        for (size_t k = 0; k < F->prof->nparams; k++) {
            const struct spsim_runs_param *q = &F->prof->param[k];
            start[k] = far[k] > 0 ? q->prior * pow(0.999 * q->hi / q->prior, way[s]) : q->prior;
        }
        size_t it = 0;
        int st = GSL_SUCCESS;
        double cost = HUGE_VAL;
        rc = s ? solve_held(F, start, far, sig, &it, &st, &cost)
               : solve(F, start, sig, &it, &st, &cost);
        if (rc == SPSIM_OK && cost < best) {
            best = cost;
            memcpy(theta, F->theta, sizeof(theta));
            memcpy(sigma, sig, sizeof(sig));
            *iterations = it;
            *status = st;
        }
    }
    if (rc == SPSIM_OK)
        memcpy(F->theta, theta, sizeof(theta));
    return rc;
}

/* Leave-one-group-out: each group's runs predicted by the fit to the other groups' runs (the
 * base profile where no other group has runs). */
static int
cross_validate(struct fit *F, struct spsim_runs_calibration *out)
{
    bool *use = spsim_calloc(2 * F->nruns, sizeof(*use)), *done = use ? use + F->nruns : NULL;
    double *s = spsim_calloc(F->nruns, sizeof(*s)), sigma[SPSIM_RUNS_MAX_PARAMS];
    int rc = use && s ? SPSIM_OK : spsim_fail(F->err, SPSIM_ENOMEM, "out of memory");
    for (size_t g = 0; rc == SPSIM_OK && g < F->nruns; g++) {
        if (done[g])
            continue;
        size_t others = 0;
        for (size_t i = 0; i < F->nruns; i++) {
            use[i] = strcmp(F->runs[i].group, F->runs[g].group) != 0;
            others += use[i];
        }
        size_t iterations;
        int status;
        rc = others ? fit_runs(F, use, sigma, &iterations, &status) : SPSIM_OK;
        for (size_t i = 0; rc == SPSIM_OK && i < F->nruns; i++)
            use[i] = !use[i];
        if (rc == SPSIM_OK && others)
            rc = predict_all(F, use, s);
        for (size_t i = 0; rc == SPSIM_OK && i < F->nruns; i++)
            if (use[i]) {
                out->runs[i].cv_s = others ? s[i] : out->runs[i].sourced_s;
                done[i] = true;
            }
        out->ngroups++;
    }
    free(use);
    free(s);
    return rc;
}

/* ---- the fitted profile -------------------------------------------------------------------- */

/* Replace a string item of `obj`. */
static int
set_string(cJSON *obj, const char *key, const char *text)
{
    cJSON *s = cJSON_CreateString(text);
    if (!s)
        return SPSIM_ENOMEM;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, s) ? SPSIM_OK : SPSIM_ENOMEM;
    return cJSON_AddItemToObject(obj, key, s) ? SPSIM_OK : SPSIM_ENOMEM;
}

struct provenance {
    const char *date, *command, *base;
    size_t nruns;
};

/* Each fitted field's source: the fitted value, its uncertainty, prior and bounds, then what
 * the field's source said. */
static int
write_sources(struct spsim_runs_profile *p, const struct provenance *v)
{
    for (size_t k = 0; k < p->nparams; k++) {
        const struct spsim_runs_param *q = &p->param[k];
        for (size_t j = 0; q->fitted && j < p->knob[k].nsources; j++) {
            cJSON *src = p->knob[k].source[j];
            const char *was = src->valuestring;
            size_t cap = strlen(was) + 1024;
            char *text = malloc(cap);
            if (!text)
                return SPSIM_ENOMEM;
            snprintf(text, cap,
                     "fitted: %s = %.6g +- %.2g (%s; prior %.6g: %s; bounds [%.4g, %.4g]) to "
                     "%zu measured runs [spsim calibrate --runs %s, %s, base %s; command: %s]; "
                     "the base's source: %s",
                     q->name, q->value, q->sigma,
                     q->scale ? "a factor on the base's figures"
                     : j == 0 ? "the field's value"
                              : "this field is its base value times that value / prior",
                     q->prior, q->prior_source, q->lo, q->hi, v->nruns, spsim_version(), v->date,
                     v->base, v->command ? v->command : "-", was);
            bool ok = cJSON_SetValuestring(src, text) != NULL;
            free(text);
            if (!ok)
                return SPSIM_ENOMEM;
        }
    }
    return SPSIM_OK;
}

static cJSON *
params_json(const struct spsim_runs_profile *p)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t k = 0; a && k < p->nparams; k++) {
        const struct spsim_runs_param *q = &p->param[k];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(a, o))
            return cJSON_Delete(o), cJSON_Delete(a), NULL;
        bool ok = cJSON_AddStringToObject(o, "name", q->name) &&
                  cJSON_AddStringToObject(o, "field", q->field) &&
                  cJSON_AddStringToObject(o, "kind", q->scale ? "scale" : "value") &&
                  cJSON_AddBoolToObject(o, "fitted", q->fitted) &&
                  cJSON_AddNumberToObject(o, "value", q->value) &&
                  cJSON_AddNumberToObject(o, "sigma", q->sigma) &&
                  cJSON_AddNumberToObject(o, "prior", q->prior) &&
                  cJSON_AddStringToObject(o, "prior_source", q->prior_source) &&
                  cJSON_AddNumberToObject(o, "lower", q->lo) &&
                  cJSON_AddNumberToObject(o, "upper", q->hi) &&
                  (q->present || cJSON_AddBoolToObject(o, "absent_from_base", true));
        if (!ok)
            return cJSON_Delete(a), NULL;
    }
    return a;
}

static cJSON *
runs_json(const struct spsim_run *runs, const struct spsim_runs_calibration *c)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < c->nruns; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(a, o))
            return cJSON_Delete(o), cJSON_Delete(a), NULL;
        if (!cJSON_AddStringToObject(o, "id", runs[i].id ? runs[i].id : "") ||
            !cJSON_AddStringToObject(o, "group", runs[i].group) ||
            !cJSON_AddNumberToObject(o, "measured_s", runs[i].measured_s) ||
            !cJSON_AddNumberToObject(o, "sourced_s", c->runs[i].sourced_s) ||
            !cJSON_AddNumberToObject(o, "fitted_s", c->runs[i].fitted_s) ||
            !cJSON_AddNumberToObject(o, "cross_validated_s", c->runs[i].cv_s))
            return cJSON_Delete(a), NULL;
    }
    return a;
}

/* The `calibration` object of a fitted profile. */
static cJSON *
calibration_json(const struct spsim_runs_profile *p, const struct spsim_run *runs,
                 const struct spsim_runs_calibration *c, const struct provenance *v)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *params = params_json(p), *list = runs_json(runs, c);
    bool ok = o && params && list && cJSON_AddStringToObject(o, "kind", "fitted") &&
              cJSON_AddStringToObject(o, "tool", "spsim calibrate --runs") &&
              cJSON_AddStringToObject(o, "version", spsim_version()) &&
              cJSON_AddStringToObject(o, "date", v->date) &&
              cJSON_AddStringToObject(o, "command", v->command ? v->command : "") &&
              cJSON_AddStringToObject(o, "base", v->base) &&
              cJSON_AddNumberToObject(o, "groups", (double)c->ngroups) &&
              cJSON_AddNumberToObject(o, "iterations", (double)c->iterations) &&
              cJSON_AddStringToObject(o, "gsl_status", gsl_strerror(c->status));
    if (ok && cJSON_AddItemToObject(o, "parameters", params)) {
        params = NULL;
        ok = cJSON_AddItemToObject(o, "runs", list);
        list = ok ? NULL : list;
    } else {
        ok = false;
    }
    cJSON_Delete(params);
    cJSON_Delete(list);
    if (!ok)
        cJSON_Delete(o);
    return ok ? o : NULL;
}

/* The fitted profile's text into c->profile_json, checked by the loader. */
static int
write_profile(struct fit *F, const struct spsim_calibrate_options *o,
              struct spsim_runs_calibration *c, const char *date)
{
    struct spsim_runs_profile *p = F->prof;
    struct spsim_hardware *hw = NULL;
    struct provenance v = {date, o->command_line, o->base_path, F->nruns};
    int rc = spsim_runs_profile_build(p, F->theta, &hw, F->err); /* sets the numbers */
    spsim_hardware_destroy(hw);
    if (rc != SPSIM_OK)
        return rc;
    char desc[512];
    cJSON *d = cJSON_GetObjectItemCaseSensitive(p->root, "description");
    snprintf(desc, sizeof(desc), "%s (fitted to %zu measured runs: spsim calibrate --runs)",
             cJSON_IsString(d) ? d->valuestring : "", F->nruns);
    cJSON *cal = calibration_json(p, F->runs, c, &v);
    rc = cal && write_sources(p, &v) == SPSIM_OK && set_string(p->root, "name", o->name) == 0 &&
                 set_string(p->root, "description", desc) == SPSIM_OK
             ? SPSIM_OK
             : SPSIM_ENOMEM;
    if (rc == SPSIM_OK) {
        cJSON_DeleteItemFromObjectCaseSensitive(p->root, "calibration");
        rc = cJSON_AddItemToObject(p->root, "calibration", cal) ? SPSIM_OK : SPSIM_ENOMEM;
        cal = rc == SPSIM_OK ? NULL : cal;
    }
    cJSON_Delete(cal);
    c->profile_json = rc == SPSIM_OK ? cJSON_Print(p->root) : NULL;
    if (!c->profile_json)
        return spsim_fail(F->err, SPSIM_ENOMEM, "out of memory");
    c->profile_len = strlen(c->profile_json);
    rc = spsim_hardware_parse(c->profile_json, c->profile_len, o->name, &hw, F->err);
    spsim_hardware_destroy(hw);
    return rc;
}

/* ---- the entry point ----------------------------------------------------------------------- */

static int
check_runs(const struct spsim_run *runs, size_t n, struct spsim_error *err)
{
    if (n == 0)
        return spsim_fail(err, SPSIM_EINVAL, "calibrate: no measured runs");
    for (size_t i = 0; i < n; i++) {
        const char *id = runs[i].id ? runs[i].id : "a run";
        if (!runs[i].model || !runs[i].group || !runs[i].group[0])
            return spsim_fail(err, SPSIM_EINVAL, "%s: no model or no group", id);
        if (!(runs[i].measured_s > 0) || !isfinite(runs[i].measured_s))
            return spsim_fail(err, SPSIM_EINVAL, "%s: the measured time must be positive", id);
    }
    return SPSIM_OK;
}

/* The sourced predictions and the fit to every run. */
static int
fit_all(struct fit *F, struct spsim_runs_calibration *out)
{
    bool *all = spsim_calloc(F->nruns, sizeof(*all));
    double *s = spsim_calloc(F->nruns, sizeof(*s)), sigma[SPSIM_RUNS_MAX_PARAMS];
    int rc = all && s ? SPSIM_OK : spsim_fail(F->err, SPSIM_ENOMEM, "out of memory");
    for (size_t i = 0; i < F->nruns && all; i++)
        all[i] = true;
    for (size_t k = 0; k < F->prof->nparams; k++)
        F->theta[k] = F->prof->param[k].prior;
    if (rc == SPSIM_OK)
        rc = predict_all(F, NULL, s);
    for (size_t i = 0; rc == SPSIM_OK && i < F->nruns; i++)
        out->runs[i].sourced_s = s[i];
    if (rc == SPSIM_OK)
        rc = fit_runs(F, all, sigma, &out->iterations, &out->status);
    for (size_t k = 0; rc == SPSIM_OK && k < F->nfree; k++)
        F->prof->param[F->free_of[k]].fitted = true;
    for (size_t k = 0; rc == SPSIM_OK && k < F->prof->nparams; k++) {
        F->prof->param[k].value = F->theta[k];
        F->prof->param[k].sigma = sigma[k];
    }
    if (rc == SPSIM_OK)
        rc = predict_all(F, NULL, s);
    for (size_t i = 0; rc == SPSIM_OK && i < F->nruns; i++)
        out->runs[i].fitted_s = out->runs[i].cv_s = s[i];
    free(all);
    free(s);
    return rc;
}

static void
today(char *buf, size_t cap)
{
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, cap, "unknown");
}

int
spsim_calibrate_runs(const struct spsim_calibrate_options *o, const struct spsim_run *runs,
                     size_t nruns, bool cross, struct spsim_runs_calibration *out,
                     struct spsim_error *err)
{
    if (!o || !o->base_path || !o->name || !o->name[0] || !out || (nruns && !runs))
        return spsim_fail(err, SPSIM_EINVAL, "spsim_calibrate_runs: invalid argument");
    memset(out, 0, sizeof(*out));
    int rc = check_runs(runs, nruns, err);
    struct spsim_runs_profile prof;
    if (rc == SPSIM_OK)
        rc = spsim_runs_profile_open(&prof, o->base_path, err);
    if (rc != SPSIM_OK)
        return rc;
    struct fit F = {.prof = &prof, .runs = runs, .nruns = nruns, .err = err};
    out->nruns = nruns;
    out->runs = spsim_calloc(nruns, sizeof(*out->runs));
    rc = out->runs ? fit_all(&F, out) : spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    double theta[SPSIM_RUNS_MAX_PARAMS];
    memcpy(theta, F.theta, sizeof(theta));
    if (rc == SPSIM_OK && cross)
        rc = cross_validate(&F, out);
    memcpy(F.theta, theta, sizeof(theta));
    char date[32];
    if (o->date)
        snprintf(date, sizeof(date), "%s", o->date);
    else
        today(date, sizeof(date));
    if (rc == SPSIM_OK)
        rc = write_profile(&F, o, out, date);
    out->nparams = prof.nparams;
    memcpy(out->param, prof.param, sizeof(out->param));
    spsim_runs_profile_close(&prof);
    if (rc != SPSIM_OK)
        spsim_runs_calibration_free(out);
    return rc;
}

void
spsim_runs_calibration_free(struct spsim_runs_calibration *c)
{
    if (!c)
        return;
    free(c->runs);
    cJSON_free(c->profile_json);
    memset(c, 0, sizeof(*c));
}

int
spsim_runs_calibration_write(const struct spsim_runs_calibration *c, const char *path,
                             struct spsim_error *err)
{
    if (!c || !c->profile_json || !path)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_runs_calibration_write: nothing to write");
    return spsim_file_write_atomic(path, c->profile_json, c->profile_len, err);
}
