/* The private layout of models and hardware profiles. */
#ifndef SPSIM_PROFILES_H
#define SPSIM_PROFILES_H

#include <gsl/gsl_interp.h>

#include "internal.h"
#include "spsim/hardware.h"
#include "spsim/model.h"
#include "spsim/parallel.h"
#include "spsim/result.h"

/** The enums' names, NULL-terminated, in enum order (profiles/names.c). */
extern const char *const spsim_dtype_names[SPSIM_DTYPE_COUNT + 1];
extern const char *const spsim_recompute_names[SPSIM_RECOMPUTE_COUNT + 1];
extern const char *const spsim_cp_comm_names[SPSIM_CP_COMM_COUNT + 1];
extern const char *const spsim_softmax_names[]; /* enum spsim_softmax order */
extern const char *const spsim_attention_backend_names[SPSIM_ATTN_BACKEND_COUNT + 1];
extern const char *const spsim_moe_dispatcher_names[SPSIM_MOE_DISPATCHER_COUNT + 1];
extern const char *const spsim_moe_flex_backend_names[SPSIM_FLEX_BACKEND_COUNT + 1];
extern const char *const spsim_moe_routing_names[SPSIM_MOE_ROUTING_COUNT + 1];
extern const char *const spsim_fp8_recipe_names[SPSIM_FP8_RECIPE_COUNT + 1];
extern const char *const spsim_opt_dtype_names[SPSIM_OPT_DTYPE_COUNT + 1];
extern const char *const spsim_coll_op_names[SPSIM_COLL_COUNT + 1];
extern const char *const spsim_recompute_method_names[SPSIM_RECOMPUTE_METHOD_COUNT + 1];
extern const char *const spsim_recompute_module_names[SPSIM_RMOD_COUNT_ + 1];
extern const char *const spsim_host_link_names[];
extern const char *const spsim_cuda_graph_impl_names[SPSIM_CUDA_GRAPH_IMPL_COUNT + 1];
extern const char *const spsim_cuda_graph_scope_names[SPSIM_CGS_COUNT_ + 1];

/** Most transformer layers a model profile may have. */
#define SPSIM_MODEL_MAX_LAYERS 4096u

struct spsim_model {
    char *name;
    char *source;
    char *description;
    struct spsim_model_shape shape;
    /* Which decoder layers are MoE: an explicit list (moe_layer_pattern, Megatron's
       --moe-layer-freq "[0]*3+[1]*58"), one byte per layer, or NULL to derive it from
       moe_first_dense_layers and moe_layer_freq. */
    uint8_t *moe_pattern;
    uint32_t moe_layers; /* MoE decoder layers (0 for a dense model), counted at load */
    /* A hybrid model's patterns (shape.hybrid_pattern, shape.mtp_pattern point here), owned. */
    char *hybrid_pattern, *mtp_pattern;
};

/** Most points a measured curve or GEMM table may have. */
#define SPSIM_MAX_CURVE_POINTS 512

/**
 * A measured busbw-against-size curve. The loader keeps the points as the profile gives them
 * (validated: sizes strictly increasing, busbw finite and positive); the engine turns them into
 * eff(size) ∈ (0, 1], the fraction of the tier's peak bandwidth reached at that size once the
 * latency term is taken out (engine/hardware_view.c), interpolated linearly in log(size) with GSL
 * and clamped at both ends.
 */
struct spsim_curve {
    /* As measured (profiles/hardware.c). */
    uint32_t n;
    enum spsim_coll_op op;
    uint32_t gpus;
    uint32_t nodes; /* 0: not given */
    bool network;   /* a network-tier curve (else NVLink) */
    char path[160]; /* the profile field, for messages */
    double size_bytes[SPSIM_MAX_CURVE_POINTS];
    double busbw_Bps[SPSIM_MAX_CURVE_POINTS];
    /* Derived by the engine once per loaded profile. */
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

/** Measured GEMMs as the profile gives them: rows of M, N, K and TFLOP/s (validated). */
struct spsim_gemm_points {
    uint32_t n;
    double rows[SPSIM_MAX_CURVE_POINTS][4];
};

/** gpu.attention_table (doc/profiles.md, "Attention"): fused attention measured per head
 * dimensions, sequence and sliding window, causal. Each row: d_qk, d_v, sequence (keys a query
 * sees at most), window (0: the whole causal context), forward and backward TFLOP/s (the
 * causal half counted, backward 2.5 times the forward FLOPs). */
#define SPSIM_MAX_ATTENTION_POINTS 128
struct spsim_attention_table {
    uint32_t n;
    double rows[SPSIM_MAX_ATTENTION_POINTS][6];
};

/**
 * The engine's GEMM rate against GEMM size, derived from the measured points
 * (engine/hardware_view.c): each measurement is divided by its own shape's tile efficiency, so
 * the table holds the size-dependent rate of a perfectly tiled GEMM; a GEMM's time multiplies it
 * back by its own shape's tile efficiency.
 */
struct spsim_gemm_table {
    uint32_t n;
    double log_flops[SPSIM_MAX_CURVE_POINTS];
    double tflops[SPSIM_MAX_CURVE_POINTS]; /* normalised */
    gsl_interp *interp;
};

/** What a profile's ring busbw figure was measured on: unknown (the field is absent: no ring
 * tails are added), one of the three ring collectives, or derived from link specs ("link"). In
 * spsim_ring_basis_names order. */
enum spsim_ring_basis {
    SPSIM_RING_BASIS_UNKNOWN = 0,
    SPSIM_RING_BASIS_ALL_REDUCE,
    SPSIM_RING_BASIS_ALL_GATHER,
    SPSIM_RING_BASIS_REDUCE_SCATTER,
    SPSIM_RING_BASIS_LINK,
};

/** The profile names of SPSIM_RING_BASIS_ALL_REDUCE.. (index 0), NULL-terminated. */
extern const char *const spsim_ring_basis_names[];

struct spsim_hardware {
    char *name;
    char *description;
    char *gpu_model;
    double peak_flops[SPSIM_DTYPE_COUNT];            /* FLOP/s; 0 = absent */
    double gemm_achievable_flops[SPSIM_DTYPE_COUNT]; /* FLOP/s; 0 = absent */
    double flash_flops; /* measured flash-attention FLOP/s (bf16); 0 = absent */
    struct spsim_attention_table *attention; /* measured fused attention; NULL = none */
    double clock_scale; /* sustained / boost SM clock (gpu.sustained_clock); 1 = as measured */
    uint32_t sm_count;
    uint64_t hbm_capacity_bytes;   /* what the GPU reports (hbm_reported_MiB), else the GB figure */
    uint64_t hbm_marketed_bytes;   /* hbm_capacity_GB · 1e9, the size the GPU is sold as */
    uint64_t reserved_fixed_bytes; /* CUDA context + cuBLAS workspace */
    uint64_t nccl_comm_bytes;      /* NCCL buffers of one communicator */
    double allocator_fragmentation;
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
    /* GPU <-> host memory (activation offload); host_d2h_Bps == 0: the profile has none. */
    int host_link;       /* index into spsim_host_link_names */
    double host_h2d_Bps; /* measured copy bandwidth, host to device, per GPU */
    double host_d2h_Bps; /* measured copy bandwidth, device to host, per GPU */
    /* the host memory bandwidth one GPU's CPU optimizer step streams at (host_link
     * cpu_memory_GBps); 0: the profile has no sourced figure */
    double host_cpu_memory_Bps;
    struct spsim_curve curves[2 * SPSIM_COLL_COUNT + 2]; /* storage for the pointers above */
    uint32_t ncurves;
    struct spsim_gemm_points *gemm_points; /* as measured; NULL = none */
    struct spsim_gemm_table *gemm_table;   /* derived by the engine; NULL = none */
    /* GEMMs measured under sustained load (gpu.sustained_clock.gemm), as measured; NULL = none.
     * The engine derives clock_scale from them (hardware_view.c). */
    struct spsim_gemm_points *sustained_gemm;
    enum spsim_dtype sustained_gemm_dtype;
    bool calibrated;
    bool fitted; /* calibration.kind "fitted" (spsim calibrate --runs) */
    /* Host time to launch one kernel through PyTorch and the CUDA driver on the node's CPU
     * (profile host.kernel_launch_us); 0: absent, host launch cost not modelled. */
    double kernel_launch_s;
    double kernel_launch_us; /* the same as the profile gives it, for the report */
    /* Host time of one framework op in eager mode beyond its kernels' launches: Python,
     * PyTorch's dispatcher and autograd, Transformer Engine's module code (profile
     * host.op_us); 0: absent, only the launches are priced. */
    double host_op_s;
    double host_op_us;
    /* Host time of one torch call beyond its kernel's launch (a view, a slice, a copy_: one aten
     * op through Python and the dispatcher; profile host.torch_call_us), for the Python outside
     * the layers' schedule (engine/opt_host.c). Absent: host.op_us, the per-op figure that
     * priced these calls before the field (an upper end: a framework op is one or more torch
     * calls); torch_call_given says which. */
    double host_torch_call_s;
    double host_torch_call_us;
    bool torch_call_given;
    /* nvlink.nvls 0: the GPUs have no NVSwitch multicast (NVLink SHARP), so NCCL builds no NVLS
     * graph (a 4-GPU HGX board's direct NVLinks); false: NVLS on sm90+ as before. */
    bool nvls_absent;
    /* What nvlink.ring_busbw_GBps was measured on (profile nvlink.ring_measured_on), so that
     * the ring loops' local-only tails it already holds are not counted twice
     * (engine/collective_model.c spsim_ring_tail_extra_s). */
    enum spsim_ring_basis ring_measured_on;
    /* gpu.board_power_W: the vendor's maximum board power per GPU, W; 0 = none. When the profile
     * marks it unsourced ({"value": null}), board_power_unsourced holds its reason (owned). */
    double board_power_W;
    char *board_power_unsourced;
    /* The figures the time model needs (gpu.sm_count, gpu.gemm_achievable_tflops.bf16,
     * gpu.hbm_bandwidth_GBps, gpu.hbm_achievable_GBps) that the profile marks unsourced
     * ({"value": null}): their paths, comma-separated (owned); NULL when all are sourced.
     * spsim_hardware_load refuses such a profile; only spsim_hardware_load_listing reads it
     * (list, check). */
    char *unsourced_fields;
    /* Derived, not read: the NCCL tuning tables' GPU architecture (engine/nccl_tuning.c) plus 1,
     * resolved from gpu_model once by spsim_hardware_prepare; 0: not resolved (a profile built
     * in code), looked up from gpu_model at each use. */
    uint8_t nccl_arch_plus1;
    /* gpu.hybridep_dispatch_GBps / gpu.hybridep_combine_GBps: HybridEP's measured dispatch
     * (BF16) and combine rates through its Python API, in its benchmark's accounting (the
     * bytes of the hidden rows a rank receives, its own included, over the call's time;
     * engine/moe_flex.c); 0 = not measured: the links' rates alone. */
    double hybridep_Bps[2];
    /* gpu.hybridep_rdma_dispatch_GBps / _combine_GBps: the same calls' rates across RDMA
     * domains, in the benchmark's accounting (2h bytes per destination domain a token reaches,
     * its own included); 0 = not measured. */
    double hybridep_rdma_Bps[2];
};

/** Read and validate a hardware profile: every field as the file gives it, nothing derived.
 * The public spsim_hardware_parse() is this plus the engine's derivations. */
int spsim_hardware_read(const char *json, size_t len, const char *origin,
                        struct spsim_hardware **out, struct spsim_error *err);

struct spsim_jctx;
struct cJSON;
/** Read an spsim-model/1 profile from its parsed JSON (root stays the caller's): the reader
 * behind the public spsim_model_parse (interop/model_file.c), which sends Hugging Face configs
 * to interop/hf_config.c instead. */
int spsim_model_read_profile(const struct cJSON *root, const char *origin, struct spsim_model **out,
                             struct spsim_error *err);
/** A model of a shape read elsewhere (a Hugging Face config): the profile's size limits, then
 * the model with that name, source and description (NULL: "") (SPSIM_EFIELD naming c's
 * origin, SPSIM_ENOMEM). */
int spsim_model_from_shape(const struct spsim_jctx *c, const struct spsim_model_shape *shape,
                           const char *name, const char *source, const char *description,
                           struct spsim_model **out);

/** The MoE and MLA fields of a profile, all optional (profiles/model_moe.c); *pattern receives
 * moe_layer_pattern (one byte per layer, the caller frees it) or NULL. */
int spsim_model_read_moe(const struct spsim_jctx *c, const struct cJSON *root,
                         struct spsim_model_shape *m, uint8_t **pattern);
/** The MoE and MLA rules of a shape (files, Hugging Face configs, spsim_model_create). */
int spsim_model_check_moe(const struct spsim_model_shape *m, const uint8_t *pattern,
                          const struct spsim_jctx *c);
/** Whether layer is MoE under the shape's rule or the explicit pattern (NULL: the rule). */
bool spsim_moe_layer_in(const struct spsim_model_shape *m, const uint8_t *pattern, uint32_t layer);
uint32_t spsim_moe_layer_count(const struct spsim_model_shape *m, const uint8_t *pattern);
/** Megatron's --moe-layer-freq list expression ("[0]*3+[1]*58", "([1]*3+[0])*2", "[1,0]") into
 * out (at most cap entries, *n written); NULL, or the reason it is refused. */
const char *spsim_moe_pattern_parse(const char *text, uint8_t *out, uint32_t cap, uint32_t *n);
/** spsim_model_create() keeping an explicit MoE layer pattern (one byte per layer, copied;
 * NULL: the shape's rule), checked as a profile's moe_layer_pattern is (Megatron-LM import). */
int spsim_model_create_pattern(const struct spsim_model_shape *shape, const uint8_t *pattern,
                               const char *name, struct spsim_model **out, struct spsim_error *err);

/** Per-TP-rank parameter counts. */
uint64_t spsim_layer_parameters_per_rank(const struct spsim_model_shape *m, uint32_t tp, bool *ok);
uint64_t spsim_embedding_parameters_per_rank(const struct spsim_model_shape *m, uint64_t vpad,
                                             uint32_t tp, bool *ok);
uint64_t spsim_output_parameters_per_rank(const struct spsim_model_shape *m, uint64_t vpad,
                                          uint32_t tp, bool *ok);

/** Parameters of a part split over a TP group (sharded: each rank holds 1/t) and those every
 * rank keeps whole (replicated). */
struct spsim_param_split {
    uint64_t sharded, replicated;
};
/** The attention of one layer, standard or multi-latent (profiles/model_params.c). */
void spsim_attention_parameters(const struct spsim_model_shape *m, struct spsim_param_split *p,
                                bool *ok);
/** A dense MLP of inner size f (also one expert's and the shared experts' shape). */
void spsim_mlp_parameters(const struct spsim_model_shape *m, uint64_t f,
                          struct spsim_param_split *p, bool *ok);
/** One routed expert, unsharded: SwiGLU 3·h·f_e, GELU 2·h·f_e, + f_e(·2) + h biases. */
uint64_t spsim_expert_parameters(const struct spsim_model_shape *m);
/** One routed expert on one rank of an expert-TP group of etp. */
uint64_t spsim_expert_parameters_per_rank(const struct spsim_model_shape *m, uint32_t etp,
                                          bool *ok);
/** The shared experts of one MoE layer together, unsharded (0 when none). */
uint64_t spsim_shared_expert_parameters(const struct spsim_model_shape *m);
/** The router of one MoE layer: h·experts (+ experts with linear_bias), replicated. */
uint64_t spsim_router_parameters(const struct spsim_model_shape *m);
/** A MoE layer on one rank: attention, norms, router and shared experts split tp ways, and
 * experts/ep routed experts split etp ways. (1, 1, 1): the whole layer. */
uint64_t spsim_moe_layer_parameters_per_rank(const struct spsim_model_shape *m, uint32_t tp,
                                             uint32_t ep, uint32_t etp, bool *ok);
/** Latent MoE's two duplicated projections h ↔ moe_latent of one MoE layer (0 without). */
uint64_t spsim_moe_latent_parameters(const struct spsim_model_shape *m);

/* Hybrid models (profiles/model_hybrid.c). */
/** The kind a pattern symbol names ('M', '*', '-', 'E'); SPSIM_LAYER_TRANSFORMER otherwise. */
enum spsim_layer_kind spsim_hybrid_symbol_kind(char c);
/** The symbol of a hybrid kind; '?' for SPSIM_LAYER_TRANSFORMER. */
char spsim_hybrid_kind_symbol(enum spsim_layer_kind k);
/** The layers of kind k in a pattern (NULL: none). */
uint32_t spsim_hybrid_count(const char *pattern, enum spsim_layer_kind k);
/** Read hybrid_pattern, mtp_pattern, mtp_shared, moe_latent and the Mamba fields (the patterns
 * point into the tree; model_new copies them). */
int spsim_model_read_hybrid(const struct spsim_jctx *c, const struct cJSON *root,
                            struct spsim_model_shape *m);
/** Megatron's Mamba defaults for the unset fields of a model with Mamba layers. */
void spsim_hybrid_defaults(struct spsim_model_shape *m);
/** The hybrid rules of a shape (files, Megatron-LM lines, Hugging Face configs). */
int spsim_model_check_hybrid(const struct spsim_model_shape *m, const struct spsim_jctx *c);
/** One Gated DeltaNet layer's parameters: the mixer split over TP, its norms whole. */
void spsim_gdn_parameters(const struct spsim_model_shape *m, struct spsim_param_split *p, bool *ok);
/** One Mamba layer's parameters: the mixer split over TP, its input norm whole. */
void spsim_mamba_parameters(const struct spsim_model_shape *m, struct spsim_param_split *p,
                            bool *ok);
/** One hybrid layer of kind k on one TP rank, an 'E' layer without its routed experts. */
uint64_t spsim_hybrid_layer_parameters(const struct spsim_model_shape *m, enum spsim_layer_kind k,
                                       uint32_t tp, bool *ok);
/** Every hybrid decoder layer and MTP depth (the shared depth once), unsplit; with only
 * experts_per_token of the routed experts when active. */
uint64_t spsim_hybrid_layers_parameters(const struct spsim_model_shape *m, bool active, bool *ok);

/** What one multi-token-prediction layer adds beyond its transformer layer, per TP rank. */
uint64_t spsim_mtp_extra_parameters_per_rank(const struct spsim_model_shape *m, uint32_t tp,
                                             bool *ok);

#endif
