/*
 * Routing imbalance of a dropless MoE layer: every EP rank waits at the combine for the
 * most-loaded one, whose grouped GEMM runs on the tokens it got. Modelled for a router that
 * picks each token's k distinct experts uniformly at random and independently across tokens,
 * which is a LOWER BOUND on a learned router's imbalance (its choices are correlated across
 * tokens); nothing here is fitted to any measurement.
 *
 * One EP rank holds S = E/ep experts. A token sends the rank one copy per local expert among
 * its k: a hypergeometric count (E experts, S marked, k drawn) of mean k·S/E and variance
 * k·(S/E)·(1 − S/E)·(E − k)/(E − 1). Over N independent tokens the rank's copies have mean
 * μ = N·k·S/E and variance σ² = N times that. The flex dispatcher sends a token once per
 * destination rank: it reaches the rank with probability q = 1 − C(E − S, k)/C(E, k), a
 * binomial count of mean N·q and variance N·q·(1 − q). The critical rank's expected load is
 * the expected maximum of ep exchangeable ranks, in the normal approximation μ + σ·z_ep with
 * z_ep = E[max of ep independent N(0, 1)] (the ranks' loads are slightly negatively
 * correlated, their sum being fixed, so z_ep errs high by O(1/ep)).
 */
#include "config.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_integration.h>
#include <gsl/gsl_randist.h>

#include "moe.h"

static double
max_density(double x, void *params)
{
    double n = *(const double *)params;
    return x * n * gsl_ran_ugaussian_pdf(x) * pow(gsl_cdf_ugaussian_P(x), n - 1);
}

/*
 * z_n = ∫ x·n·φ(x)·Φ(x)^(n−1) dx, the exact integral (order statistics of the normal; e.g.
 * Harter 1961, Biometrika 48:151, tabulates z_2 = 0.5642, z_4 = 1.0294, z_8 = 1.4236), by
 * 64-point Gauss-Legendre on unit intervals of [−12, 12 + √(2 ln n)]: the integrand is below
 * 1e-30 outside it and smooth on each interval for any n up to 2^32.
 */
static double
expected_max_integral(uint32_t n, bool *exact)
{
    gsl_integration_glfixed_table *t = gsl_integration_glfixed_table_alloc(64);
    double dn = (double)n, sum = 0, hi = 12.0 + sqrt(2.0 * log(dn));
    *exact = t != NULL;
    if (!t) /* Blom: Φ⁻¹((n − 0.375)/(n + 0.25)), within 0.026 for 2 <= n <= 1024 */
        return gsl_cdf_ugaussian_Pinv((dn - 0.375) / (dn + 0.25));
    gsl_function f = {max_density, &dn};
    for (double a = -12.0; a < hi; a += 1.0)
        sum += gsl_integration_glfixed(&f, a, a + 1.0, t);
    gsl_integration_glfixed_table_free(t);
    return sum;
}

/* z_n for n below this is computed once per process: a layer evaluation asks for it about ten
 * times (every build of an MoE layer), and each integral costs ~500 k instructions, most of a
 * fresh MoE layer's evaluation. The values are deterministic, so threads that race on a slot
 * store the same bits (relaxed atomics; 0 = not yet, z_n > 0 for n >= 2). */
#define EXPECTED_MAX_MEMO 4096

double
spsim_moe_expected_max(uint32_t n)
{
    static _Atomic uint64_t memo[EXPECTED_MAX_MEMO];
    if (n <= 1)
        return 0;
    double z;
    uint64_t bits =
        n < EXPECTED_MAX_MEMO ? atomic_load_explicit(&memo[n], memory_order_relaxed) : 0;
    if (bits) {
        memcpy(&z, &bits, sizeof(z));
        return z;
    }
    bool exact;
    z = expected_max_integral(n, &exact);
    memcpy(&bits, &z, sizeof(bits));
    if (exact && n < EXPECTED_MAX_MEMO && bits) /* the fallback is not kept */
        atomic_store_explicit(&memo[n], bits, memory_order_relaxed);
    return z;
}

/* C(E − S, k)/C(E, k): the chance that a token's k distinct experts all miss S of E. */
static double
miss_all(double E, double S, uint32_t k)
{
    double r = 1;
    for (uint32_t i = 0; i < k; i++)
        r *= E - S - i > 0 ? (E - S - i) / (E - i) : 0;
    return r;
}

/* The expected most-loaded rank over the mean, capped by a capacity factor (> 0: token
 * dropping keeps at most that many times the mean; moe_utils.py get_capacity). */
static double
max_over_mean(double mean, double var, double z, double capacity)
{
    double f = mean > 0 ? 1.0 + z * sqrt(var) / mean : 1.0;
    return capacity > 0 && f > capacity ? capacity : f;
}

void
spsim_moe_load(uint32_t experts, uint32_t k, uint32_t ep, double tokens, double capacity,
               struct spsim_moe_load *out)
{
    double E = experts, S = (double)experts / ep, p = S / E, N = tokens;
    out->z = spsim_moe_expected_max(ep);
    out->mean = N * k * p;
    out->var = E > 1 ? N * k * p * (1 - p) * (E - k) / (E - 1) : 0;
    out->q = 1.0 - miss_all(E, S, k);
    out->factor = max_over_mean(out->mean, out->var, out->z, capacity);
    out->flex_factor = spsim_moe_rank_factor(out->q, N, out->z, capacity);
}

double
spsim_moe_rank_factor(double q, double tokens, double z, double capacity)
{
    return max_over_mean(tokens * q, tokens * q * (1 - q), z, capacity);
}
