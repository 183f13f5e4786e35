/*
 * GEMM shape efficiency: how much of the main loop's full-wave rate an M×N×K GEMM (a batch of
 * them) reaches on the GPU's SMs, with the kernel choices cuBLAS makes among CUTLASS-style
 * tiled kernels. Four effects, each from how the kernels run (doc/profiles.md, "GEMM model"):
 *
 * - Tile quantisation: the output is cut into BM×BN tiles; edge tiles are partly empty. The
 *   candidates are the CUTLASS default threadblock shapes 128×256, 256×128 and 128×128
 *   (include/cutlass/gemm/device/default_gemm_configuration.h, Sm80 tensor-op 16-bit:
 *   GemmShape<128, 256, 64>, kStages = 3; NVIDIA/cutlass at 7107b05).
 * - Wave quantisation: one tile (work unit) per SM at a time, ceil(units / SMs) waves, the
 *   last one partly idle.
 * - K: each unit's main loop runs ceil(K / BK) k-blocks of BK = 128 bytes of K (64 16-bit
 *   elements, GemmShape<..., 64> above; 128 FP8 elements, examples/54_hopper_fp8_warp_
 *   specialized_gemm TileShape <128,128,128>); the multistage prologue waits for the first
 *   k-block's operands before the first MMA, one k-block slot per unit when tiles run one
 *   after another ("serial" epilogue kernels, SM80) and once per SM for persistent kernels
 *   (SM90 and later, whose producer warps prefetch the next tile meanwhile). Short K pays it.
 * - Split-K: when the tiles do not fill one wave, the K range is split into s parts so that
 *   tiles·s units run at once; the fp32 partial tiles are written and read back for the
 *   reduction (8 bytes per output element per split).
 * The best (tile, split) pair is taken, as cuBLAS' heuristics pick among such kernels. The
 * measured GEMM points are converted to main-loop rates by the same efficiency (split-K
 * excluded: the measured shapes fill the GPU), so the model reproduces them at their shapes.
 */
#include "config.h"

#include <math.h>

#include "eval.h"
#include "gemm_shape.h"

#define SPSIM_GEMM_MAX_SPLIT 16

static const uint64_t tiles[][2] = {{128, 256}, {256, 128}, {128, 128}};

/* ceil(a / b) of integers, which is ceil((double)a / b) for a below 2^53: the quotient's
 * rounding cannot cross an integer there (a fraction of it is at least 1/b). */
static inline uint64_t
ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* One tile's split-independent terms (computed once for all its splits): the tile count, the
 * k-blocks of K and the useful k-block slots. */
struct tile_terms {
    double count, useful;
    uint64_t kblocks;
};
static struct tile_terms
tile_terms(const struct spsim_gemm_geometry *g, uint64_t m, uint64_t n, uint64_t k, uint64_t batch,
           size_t tile)
{
    double bm = (double)tiles[tile][0], bn = (double)tiles[tile][1], bk = (double)g->k_block;
    double useful = (double)m * (double)n * (double)k * (double)batch / (bm * bn * bk);
    if ((m | n | k) >> 52) /* where doubles round the dimensions */
        return (struct tile_terms){ceil((double)m / bm) * ceil((double)n / bn) * (double)batch,
                                   useful, (uint64_t)ceil((double)k / bk)};
    return (struct tile_terms){(double)ceil_div(m, tiles[tile][0]) *
                                   (double)ceil_div(n, tiles[tile][1]) * (double)batch,
                               useful, ceil_div(k, g->k_block)};
}
/* Efficiency of one (tile, split) choice: useful k-block slots over the slots the SMs hold. */
static double
choice_efficiency(const struct spsim_gemm_geometry *g, const struct tile_terms *tt, uint32_t split)
{
    double units = tt->count * split;
    double waves = ceil(units / g->sms);
    double kb = (double)ceil_div(tt->kblocks, split);
    double slots = g->persistent ? waves * kb + 1.0 : waves * (kb + 1.0);
    return tt->useful / ((double)g->sms * slots);
}

double
spsim_gemm_shape_efficiency(const struct spsim_gemm_geometry *g, uint64_t m, uint64_t n, uint64_t k,
                            uint64_t batch)
{
    double best = 0;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(tiles); i++) {
        struct tile_terms tt = tile_terms(g, m, n, k, batch, i);
        double e = choice_efficiency(g, &tt, 1);
        if (e > best)
            best = e;
    }
    return best;
}

double
spsim_gemm_shape_time(const struct spsim_gemm_geometry *g, double rate, double hbm_Bps, uint64_t m,
                      uint64_t n, uint64_t k, uint64_t batch, uint32_t *split_out)
{
    double flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;
    double best = INFINITY;
    uint32_t best_split = 1;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(tiles); i++) {
        struct tile_terms tt = tile_terms(g, m, n, k, batch, i);
        for (uint32_t s = 1; s <= SPSIM_GEMM_MAX_SPLIT; s++) {
            if (s > 1 && (tt.count * (s - 1) >= g->sms || (double)s * g->k_block > (double)k))
                break; /* split only to fill the first wave, at least one k-block a split */
            double t = flops / (rate * choice_efficiency(g, &tt, s));
            if (s > 1)
                t += 8.0 * s * (double)m * (double)n * (double)batch / hbm_Bps;
            if (t < best) {
                best = t;
                best_split = s;
            }
        }
    }
    if (split_out)
        *split_out = best_split;
    return best;
}
