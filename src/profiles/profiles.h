/* The private layout of models and hardware profiles. */
#ifndef SPSIM_PROFILES_H
#define SPSIM_PROFILES_H

#include <gsl/gsl_interp.h>

#include "internal.h"
#include "spsim/hardware.h"
#include "spsim/model.h"
#include "spsim/result.h"

struct spsim_model {
    char *name;
    char *source;
    char *description;
    struct spsim_model_shape shape;
};

/** Most points a measured curve or GEMM table may have. */
#define SPSIM_MAX_CURVE_POINTS 512

/**
 * A measured busbw-against-size curve, turned into eff(size) ∈ (0, 1]: the fraction of the
 * tier's peak bandwidth reached at that size once the latency term is taken out. Interpolated
 * linearly in log(size) with GSL; clamped at both ends.
 */
struct spsim_curve {
    uint32_t n;
    double log_size[SPSIM_MAX_CURVE_POINTS];
    double eff[SPSIM_MAX_CURVE_POINTS];
    gsl_interp *interp; /* NULL when n < 2 */
};

/** One link tier (NVLink domain, or scale-out network). */
struct spsim_tier_params {
    double base_latency_s;
    double hop_latency_s;
    double busbw_Bps[SPSIM_COLL_COUNT];          /* peak busbw per collective */
    struct spsim_curve *curve[SPSIM_COLL_COUNT]; /* NULL: eff = 1 */
};

/**
 * Measured GEMM throughput against GEMM size. Each measurement is divided by its own shape's
 * tile efficiency (spsim_tile_efficiency), so the table holds the size-dependent rate of a
 * perfectly tiled GEMM; a GEMM's time multiplies it back by its own shape's tile efficiency.
 */
struct spsim_gemm_table {
    uint32_t n;
    double log_flops[SPSIM_MAX_CURVE_POINTS];
    double tflops[SPSIM_MAX_CURVE_POINTS]; /* normalised */
    gsl_interp *interp;
};

/** Fraction of the GPU's SMs doing useful work for an M×N output (batch of them), tiled with
 * the best of the CUTLASS default tile shapes (wave quantisation and partial edge tiles). */
double spsim_tile_efficiency(uint32_t sms, uint64_t m, uint64_t n, uint64_t batch);

struct spsim_hardware;
/** The main-loop rate per full wave behind one measured M×N×K GEMM (16-bit output, beta = 0):
 * its serial epilogue (gpu.gemm_epilogue) taken out, then divided by its tile efficiency.
 * SPSIM_ERANGE when the measurement is faster than its epilogue alone. */
int spsim_gemm_mainloop_rate(const struct spsim_hardware *hw, uint64_t m, uint64_t n, uint64_t k,
                             double measured_flops_per_s, double *rate);

struct spsim_hardware {
    char *name;
    char *description;
    char *gpu_model;
    double peak_flops[SPSIM_DTYPE_COUNT];            /* FLOP/s; 0 = absent */
    double gemm_achievable_flops[SPSIM_DTYPE_COUNT]; /* FLOP/s; 0 = absent */
    double flash_flops; /* measured flash-attention FLOP/s (bf16); 0 = absent */
    uint32_t sm_count;
    uint64_t hbm_capacity_bytes;
    double hbm_Bps;
    double hbm_achievable_Bps;
    bool gemm_epilogue_serial; /* a GEMM tile's epilogue runs after its main loop (see timing.c) */
    uint32_t gpus_per_node;
    uint32_t nvlink_domain_gpus;
    uint32_t nics_per_node;
    uint32_t nccl_channels;    /* SMs a running collective occupies */
    uint32_t nvls_min_gpus;    /* NVLS AllReduce from this many GPUs up; 0 = for every group */
    double nvlink_line_Bps;    /* per GPU per direction */
    double nic_line_Bps;       /* per NIC */
    double nic_achievable_Bps; /* per NIC */
    double oversubscription;
    struct spsim_tier_params nvlink;
    struct spsim_tier_params network;
    struct spsim_curve curves[2 * SPSIM_COLL_COUNT + 2]; /* storage for the pointers above */
    uint32_t ncurves;
    struct spsim_gemm_table *gemm_table;
    bool calibrated;
};

/** Evaluate eff(size) of a curve (1 when curve is NULL). */
int spsim_curve_eval(const struct spsim_curve *curve, double size_bytes, double *eff);

/** Per-TP-rank parameter counts. */
uint64_t spsim_layer_parameters_per_rank(const struct spsim_model_shape *m, uint32_t tp, bool *ok);
uint64_t spsim_embedding_parameters_per_rank(const struct spsim_model_shape *m, uint64_t vpad,
                                             uint32_t tp, bool *ok);
uint64_t spsim_output_parameters_per_rank(const struct spsim_model_shape *m, uint64_t vpad,
                                          uint32_t tp, bool *ok);

#endif
