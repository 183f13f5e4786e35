/*
 * The weighted least-squares fit (GSL) of a tier's base latency, hop latency and per-collective
 * bandwidth.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>

#include "calib_fit.h"

/* Which unknowns the design matrix has: α, hop, and one 1/B column per collective present.
 * Columns are scaled to µs (α, hop) and µs per GB (1/B) so that they are of like size. */
struct design {
    bool alpha, hop;
    int col_of[SPSIM_COLL_COUNT]; /* -1: collective absent */
    size_t p;
};

static void
design_columns(struct design *d)
{
    size_t p = 0;
    if (d->alpha)
        p++;
    if (d->hop)
        p++;
    for (int op = 0; op < SPSIM_COLL_COUNT; op++)
        if (d->col_of[op] >= 0)
            d->col_of[op] = (int)p++;
    d->p = p;
}

static void
fill_row(const struct design *d, const struct spsim_fit_point *pt, gsl_matrix *X, size_t i)
{
    size_t j = 0;
    for (size_t k = 0; k < d->p; k++)
        gsl_matrix_set(X, i, k, 0.0);
    if (d->alpha)
        gsl_matrix_set(X, i, j++, 1.0);
    if (d->hop)
        gsl_matrix_set(X, i, j++, pt->steps);
    gsl_matrix_set(X, i, (size_t)d->col_of[pt->op], pt->wire_bytes * 1e-9);
}

/* Solve for the design's unknowns; coef receives α, hop (µs) and µs/GB per collective. */
static int
solve(const struct design *d, const struct spsim_fit_point *pts, size_t n, double *coef)
{
    gsl_matrix *X = gsl_matrix_alloc(n, d->p), *cov = gsl_matrix_alloc(d->p, d->p);
    gsl_vector *y = gsl_vector_alloc(n), *w = gsl_vector_alloc(n), *c = gsl_vector_alloc(d->p);
    gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, d->p);
    int rc = SPSIM_ENOMEM;
    if (X && cov && y && w && c && ws) {
        for (size_t i = 0; i < n; i++) {
            fill_row(d, &pts[i], X, i);
            gsl_vector_set(y, i, (pts[i].time_s - pts[i].offset_s) * 1e6);
            gsl_vector_set(w, i, 1.0 / (pts[i].time_s * 1e6 * pts[i].time_s * 1e6));
        }
        double chisq = 0;
        rc = gsl_multifit_wlinear(X, w, y, c, cov, &chisq, ws) == GSL_SUCCESS ? SPSIM_OK
                                                                              : SPSIM_ENUMERIC;
        for (size_t k = 0; rc == SPSIM_OK && k < d->p; k++) {
            coef[k] = gsl_vector_get(c, k);
            if (!isfinite(coef[k]))
                rc = SPSIM_ENUMERIC;
        }
    }
    gsl_multifit_linear_free(ws);
    gsl_vector_free(c);
    gsl_vector_free(w);
    gsl_vector_free(y);
    gsl_matrix_free(cov);
    gsl_matrix_free(X);
    return rc;
}

static int
check_points(const struct spsim_fit_point *pts, size_t n, struct design *d, struct spsim_error *err)
{
    bool distinct_steps = false;
    memset(d, 0, sizeof(*d));
    for (int op = 0; op < SPSIM_COLL_COUNT; op++)
        d->col_of[op] = -1;
    for (size_t i = 0; i < n; i++) {
        const struct spsim_fit_point *q = &pts[i];
        if ((unsigned)q->op >= SPSIM_COLL_COUNT || !(q->time_s > 0) || !isfinite(q->time_s) ||
            !(q->wire_bytes > 0) || !isfinite(q->wire_bytes) || !(q->steps >= 0) ||
            !isfinite(q->steps) || !isfinite(q->offset_s))
            return spsim_fail(err, SPSIM_EINVAL,
                              "fit: point %zu is not a finite positive measurement", i);
        d->col_of[q->op] = 0;
        distinct_steps |= q->steps != pts[0].steps;
    }
    d->alpha = true;
    d->hop = distinct_steps;
    design_columns(d);
    return SPSIM_OK;
}

int
spsim_latbw_fit(const struct spsim_fit_point *pts, size_t n, struct spsim_fit_result *out,
                struct spsim_error *err)
{
    struct design d;
    if (!pts || !out)
        return spsim_fail(err, SPSIM_EINVAL, "fit: NULL argument");
    int rc = check_points(pts, n, &d, err);
    if (rc != SPSIM_OK)
        return rc;
    memset(out, 0, sizeof(*out));
    double coef[2 + SPSIM_COLL_COUNT];
    /* At most two refits: a negative hop, then a negative α, is fixed at 0. */
    for (int attempt = 0; attempt < 3; attempt++) {
        if (n < d.p)
            return spsim_fail(err, SPSIM_EINVAL, "fit: %zu sizes for %zu unknowns", n, d.p);
        if ((rc = solve(&d, pts, n, coef)) != SPSIM_OK)
            return spsim_fail(err, rc, "fit: GSL weighted least squares failed");
        double alpha = d.alpha ? coef[0] : 0, hop = d.hop ? coef[d.alpha] : 0;
        if (d.hop && hop < 0) {
            d.hop = false;
            out->hop_zeroed = true;
        } else if (d.alpha && alpha < 0) {
            d.alpha = false;
            out->alpha_zeroed = true;
        } else {
            break;
        }
        design_columns(&d);
    }
    out->alpha_s = d.alpha ? coef[0] * 1e-6 : 0;
    out->hop_s = d.hop ? coef[d.alpha] * 1e-6 : 0;
    out->hop_fitted = d.hop;
    for (int op = 0; op < SPSIM_COLL_COUNT; op++) {
        if (d.col_of[op] < 0)
            continue;
        double us_per_GB = coef[d.col_of[op]];
        if (!(us_per_GB > 0))
            return spsim_fail(err, SPSIM_ENUMERIC,
                              "fit: the %s times do not grow with the bytes moved (1/B = %g)",
                              spsim_coll_op_name((enum spsim_coll_op)op), us_per_GB);
        out->busbw_Bps[op] = 1e15 / us_per_GB; /* 1 GB in us_per_GB µs */
    }
    return SPSIM_OK;
}

double
spsim_latbw_eval(const struct spsim_fit_result *r, const struct spsim_fit_point *p)
{
    double bw = r->busbw_Bps[p->op];
    return r->alpha_s + p->steps * r->hop_s + (bw > 0 ? p->wire_bytes / bw : 0) + p->offset_s;
}
