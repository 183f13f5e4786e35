/* A parallel training configuration and the rules Megatron-LM applies to it. */
#ifndef SPSIM_PARALLEL_H
#define SPSIM_PARALLEL_H

#include "spsim/common.h"
#include "spsim/hardware.h"
#include "spsim/model.h"

#ifdef __cplusplus
extern "C" {
#endif

enum spsim_recompute {
    SPSIM_RECOMPUTE_NONE = 0,
    SPSIM_RECOMPUTE_SELECTIVE = 1, /**< core attention only (Korthikanti et al. §5) */
    SPSIM_RECOMPUTE_FULL = 2,      /**< the whole layer, one layer per checkpoint */
    SPSIM_RECOMPUTE_COUNT
};

/** @return "none", "selective", "full"; "?" for an unknown value. */
SPSIM_API const char *spsim_recompute_name(enum spsim_recompute r);
/** The mode named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_recompute_parse(const char *name, enum spsim_recompute *out);

/** How attention exchanges keys and values across the context-parallel group (Megatron's
 * --cp-comm-type; Transformer Engine's context_parallel.py). */
enum spsim_cp_comm {
    SPSIM_CP_P2P = 0,        /**< ring of K/V blocks overlapped with the attention steps */
    SPSIM_CP_ALL_GATHER = 1, /**< AllGather of K and V before attention, ReduceScatter of dK, dV */
    SPSIM_CP_A2A = 2,        /**< Ulysses: all-to-all of Q, K, V (heads for sequence) and of O */
    SPSIM_CP_A2A_P2P = 3,    /**< A2A in an inner group, the p2p ring across the outer group */
    SPSIM_CP_COMM_COUNT
};

/** @return "p2p", "all_gather", "a2a", "a2a+p2p"; "?" for an unknown value. */
SPSIM_API const char *spsim_cp_comm_name(enum spsim_cp_comm c);
/** The type named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_cp_comm_parse(const char *name, enum spsim_cp_comm *out);
/** Which Transformer Engine attention backend runs core attention (Megatron's
 * --attention-backend; TE dot_product_attention/utils.py get_attention_backend). */
enum spsim_attention_backend {
    SPSIM_ATTN_AUTO = 0,  /**< TE's choice: FusedAttention (cuDNN) on Hopper and later when the
                           * profile measures it (gpu.attention_table), else FlashAttention */
    SPSIM_ATTN_FLASH = 1, /**< FlashAttention (flash-attn; gpu.flash_attention_tflops) */
    SPSIM_ATTN_FUSED = 2, /**< FusedAttention (cuDNN; gpu.attention_table) */
    SPSIM_ATTN_BACKEND_COUNT
};

/** @return "auto", "flash", "fused"; "?" for an unknown value. */
SPSIM_API const char *spsim_attention_backend_name(enum spsim_attention_backend b);
/** The backend named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_attention_backend_parse(const char *name, enum spsim_attention_backend *out);
/** How an MoE layer moves tokens to the experts' ranks (Megatron-Core
 * --moe-token-dispatcher-type; moe/token_dispatcher.py). */
enum spsim_moe_dispatcher {
    SPSIM_MOE_ALLGATHER = 0, /**< AllGather over the expert-TP×EP group, ReduceScatter back */
    SPSIM_MOE_ALLTOALL = 1,  /**< all-to-all over EP (+ AllGather/ReduceScatter over ETP) */
    SPSIM_MOE_FLEX = 2,      /**< DeepEP/HybridEP fused kernels over the expert-TP×EP group */
    SPSIM_MOE_DISPATCHER_COUNT
};

/** @return "allgather", "alltoall", "flex"; "?" for an unknown value. */
SPSIM_API const char *spsim_moe_dispatcher_name(enum spsim_moe_dispatcher d);
/** The dispatcher named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_moe_dispatcher_parse(const char *name, enum spsim_moe_dispatcher *out);
/** The flex dispatcher's kernels (--moe-flex-dispatcher-backend; token_dispatcher.py
 * MoEFlexTokenDispatcher; ncclep is refused). */
enum spsim_moe_flex_backend {
    SPSIM_FLEX_DEEPEP = 0,   /**< DeepEP's normal kernels (Megatron's default) */
    SPSIM_FLEX_HYBRIDEP = 1, /**< HybridEP (DeepEP branch hybrid-ep) */
    SPSIM_FLEX_BACKEND_COUNT
};
/** @return "deepep", "hybridep"; "?" for an unknown value. */
SPSIM_API const char *spsim_moe_flex_backend_name(enum spsim_moe_flex_backend b);
/** The backend named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_moe_flex_backend_parse(const char *name, enum spsim_moe_flex_backend *out);
/** Which tokens-per-rank load a dropless MoE layer is timed at (spsim's own option; Megatron
 * has no such flag). */
enum spsim_moe_routing {
    /** The expected most-loaded EP rank of a router that picks experts uniformly at random
     * (engine/moe_imbalance.c); a lower bound on a learned router's imbalance. Default. */
    SPSIM_MOE_ROUTING_RANDOM = 0,
    SPSIM_MOE_ROUTING_BALANCED = 1, /**< every EP rank at the mean T·k/ep copies */
    SPSIM_MOE_ROUTING_COUNT
};
/** @return "random", "balanced"; "?" for an unknown value. */
SPSIM_API const char *spsim_moe_routing_name(enum spsim_moe_routing r);
/** The routing named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_moe_routing_parse(const char *name, enum spsim_moe_routing *out);

/** The pipeline schedule. */
enum spsim_pp_schedule {
    /** Megatron-Core's (schedules.py): 1F1B with vpp 1, the interleaved one with vpp > 1 */
    SPSIM_PP_SCHEDULE_MEGATRON = 0,
    /** Zero-bubble ZB-H1 (Qi et al. 2024, ICLR, §3.1; ZB1P): backward split into the input
     * gradient B and the weight gradient W, W deferred into the drain; vpp 1 */
    SPSIM_PP_SCHEDULE_ZB_H1 = 1,
    /** Zero-bubble ZB-V (Qi et al. 2024, arXiv 2401.10241 §6): two model chunks per rank in a
     * V shape (rank r holds stages r and 2p − 1 − r), W deferred; vpp 2 */
    SPSIM_PP_SCHEDULE_ZB_V = 2,
    /** DualPipe (DeepSeek-V3 report §3.2.1, deepseek-ai/DualPipe): micro-batches fed from both
     * ends, rank r holds stages r and p − 1 − r (two parameter copies), each forward overlapped
     * with another micro-batch's backward; vpp 1, pp even */
    SPSIM_PP_SCHEDULE_DUALPIPE = 3,
    /** DualPipeV (DualPipe's "cut-in-half" V shape): one copy of the parameters as two chunks
     * per rank, rank r holding stages r and 2p − 1 − r; vpp 2 */
    SPSIM_PP_SCHEDULE_DUALPIPEV = 4,
    SPSIM_PP_SCHEDULE_COUNT
};
/** @return "1f1b" (vpp 1) or "interleaved" for the default, "zb-h1", "zb-v", "dualpipe",
 * "dualpipev"; "?" for an unknown value. */
SPSIM_API const char *spsim_pp_schedule_name(enum spsim_pp_schedule s, uint32_t vpp);
/** The schedule named `name`: "1f1b" and "interleaved" are the default (which of them vpp
 * says), "zb-h1", "zb-v", "dualpipe", "dualpipev" the others. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_pp_schedule_parse(const char *name, enum spsim_pp_schedule *out);

/** The fused cross-entropy loss's implementation (Megatron --cross-entropy-fusion-impl, with
 * --cross-entropy-loss-fusion; Megatron-LM d98e8a64 language_module.py:161-205). */
enum spsim_ce_impl {
    /** fused_cross_entropy.py: tensor_parallel/cross_entropy.py's steps in torch.compile'd
     * functions (jit.py: jit_fuser = torch.compile); Megatron's default */
    SPSIM_CE_NATIVE = 0,
    /** Transformer Engine's parallel_cross_entropy (Triton), 2.18 on: an fp32 gradient beside
     * the 16-bit logits (TE 01bbe3e, PR #3193) */
    SPSIM_CE_TE = 1,
    /** Transformer Engine's parallel_cross_entropy up to 2.17: the gradient written into the
     * 16-bit logits themselves (triton/cross_entropy.py returns its input) */
    SPSIM_CE_TE_INPLACE = 2,
    SPSIM_CE_IMPL_COUNT
};
/** @return "native", "te", "te-inplace"; "?" for an unknown value. */
SPSIM_API const char *spsim_ce_impl_name(enum spsim_ce_impl impl);
/** The implementation named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_ce_impl_parse(const char *name, enum spsim_ce_impl *out);

/** How Transformer Engine scales FP8 tensors (Megatron --fp8-recipe; TE
 * common/recipe/__init__.py). */
enum spsim_fp8_recipe {
    SPSIM_FP8_DELAYED = 0,   /**< DelayedScaling: per-tensor scale from past amax (default) */
    SPSIM_FP8_CURRENT = 1,   /**< Float8CurrentScaling ("tensorwise"): an amax pass first */
    SPSIM_FP8_MXFP8 = 2,     /**< MXFP8BlockScaling: an E8M0 scale per 32 values */
    SPSIM_FP8_BLOCKWISE = 3, /**< Float8BlockScaling: 1×128 (data), 128×128 (weights) blocks */
    SPSIM_FP8_RECIPE_COUNT
};

/** @return "delayed", "current", "mxfp8", "blockwise"; "?" for an unknown value. */
SPSIM_API const char *spsim_fp8_recipe_name(enum spsim_fp8_recipe r);
/** The recipe named `name` ("tensorwise", Megatron's name, is "current"). @return SPSIM_OK or
 * SPSIM_EINVAL */
SPSIM_API int spsim_fp8_recipe_parse(const char *name, enum spsim_fp8_recipe *out);

/** How Megatron-Core captures training work in CUDA graphs (--cuda-graph-impl; Megatron-LM
 * docs/user-guide/features/cuda_graph.md, transformer/cuda_graphs.py). */
enum spsim_cuda_graph_impl {
    SPSIM_CUDA_GRAPH_NONE = 0,           /**< eager: every kernel launched from the host */
    SPSIM_CUDA_GRAPH_LOCAL = 1,          /**< MCore CudaGraphManager, per layer */
    SPSIM_CUDA_GRAPH_TE = 2,             /**< TE make_graphed_callables, per layer */
    SPSIM_CUDA_GRAPH_FULL_ITERATION = 3, /**< FullCudaGraphWrapper: forward and backward of the
                                              whole iteration, the optimizer eager */
    SPSIM_CUDA_GRAPH_IMPL_COUNT
};

/** @return "none", "local", "transformer_engine", "full_iteration"; "?" for an unknown value. */
SPSIM_API const char *spsim_cuda_graph_impl_name(enum spsim_cuda_graph_impl i);
/** The implementation named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_cuda_graph_impl_parse(const char *name, enum spsim_cuda_graph_impl *out);

/** What a per-layer CUDA graph captures (--cuda-graph-scope, now --cuda-graph-modules;
 * transformer_layer.py _get_submodules_under_cudagraphs), as bits. */
enum spsim_cuda_graph_scope {
    SPSIM_CGS_ATTN = 1u << 0,           /**< input norm, self-attention, its residual add */
    SPSIM_CGS_MLP = 1u << 1,            /**< dense layers: pre-MLP norm, MLP, residual add */
    SPSIM_CGS_MOE = 1u << 2,            /**< MoE layers: the whole MoE block (drop-and-pad) */
    SPSIM_CGS_MOE_ROUTER = 1u << 3,     /**< pre-MLP norm, router, shared experts */
    SPSIM_CGS_MOE_PREPROCESS = 1u << 4, /**< the dispatcher's preprocess (needs moe_router) */
    SPSIM_CGS_MAMBA = 1u << 5,          /**< Mamba layers (spsim's models have none) */
    SPSIM_CGS_FULL_ITERATION = 1u << 6, /**< legacy: `local` + full_iteration */
    SPSIM_CGS_COUNT_ = 7
};

/** Parse a scope list: names separated by ',' or '+' ("attn,moe_router"). @return SPSIM_OK, or
 * SPSIM_EINVAL for an empty list or an unknown name */
SPSIM_API int spsim_cuda_graph_scope_parse(const char *text, uint32_t *mask);
/** The mask's names joined by '+' in bit order; "" for 0 (the implementation's default: the
 * whole layer). @return buf */
SPSIM_API const char *spsim_cuda_graph_scope_format(uint32_t mask, char *buf, size_t cap);

/** A dtype of the precision-aware optimizer's tensors (Megatron --main-grads-dtype,
 * --main-params-dtype, --exp-avg-dtype, --exp-avg-sq-dtype; TE FusedAdam). 0 is fp32, Megatron's
 * default for each. */
enum spsim_opt_dtype {
    SPSIM_OPT_FP32 = 0,
    SPSIM_OPT_FP16 = 1,
    SPSIM_OPT_BF16 = 2,
    SPSIM_OPT_FP8 = 3, /**< E4M3 with one fp32 scale per tensor (TE's torch.uint8 state) */
    SPSIM_OPT_DTYPE_COUNT
};
/** @return "fp32", "fp16", "bf16", "fp8"; "?" for an unknown value. */
SPSIM_API const char *spsim_opt_dtype_name(enum spsim_opt_dtype d);
/** The dtype named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_opt_dtype_parse(const char *name, enum spsim_opt_dtype *out);

/** The optimizer (Megatron --optimizer). 0 is Adam, Megatron's default. */
enum spsim_optimizer_kind {
    SPSIM_OPTIMIZER_ADAM = 0,
    /** Muon (Megatron-Core emerging_optimizers.py TensorParallelMuon over NVIDIA's
     * emerging_optimizers): every 2-D weight but the embedding and output layer steps with one
     * fp32 momentum buffer and a Newton-Schulz orthogonalization; the others with Adam. With
     * the distributed optimizer, the layer-wise one (layer_wise_optimizer.py). */
    SPSIM_OPTIMIZER_MUON = 1,
    SPSIM_OPTIMIZER_COUNT
};

/** Muon's tensor-parallel mode (--muon-tp-mode). */
enum spsim_muon_tp_mode {
    SPSIM_MUON_TP_DUPLICATED = 0, /**< gather the whole matrix over TP, orthogonalize it on every
                                       TP rank (Megatron's default) */
    SPSIM_MUON_TP_BLOCKWISE = 1,  /**< orthogonalize each rank's shard alone, no collective */
    SPSIM_MUON_TP_COUNT
};

/** Which layers full recomputation checkpoints (Megatron --recompute-method). */
enum spsim_recompute_method {
    SPSIM_RECOMPUTE_METHOD_DEFAULT = 0, /**< spsim's `full`: uniform groups of one layer */
    SPSIM_RECOMPUTE_METHOD_UNIFORM = 1, /**< groups of recompute_layers layers, each checkpointed */
    SPSIM_RECOMPUTE_METHOD_BLOCK = 2,   /**< the first recompute_layers layers of each chunk */
    SPSIM_RECOMPUTE_METHOD_COUNT
};

/** @return "default", "uniform", "block"; "?" for an unknown value. */
SPSIM_API const char *spsim_recompute_method_name(enum spsim_recompute_method m);
/** The method named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_recompute_method_parse(const char *name, enum spsim_recompute_method *out);

/**
 * Megatron's selective-recompute modules (--recompute-modules), as bits. Dense layers have the
 * first three; MoE models add moe_act, moe and shared_experts; MLA models add mla_up_proj.
 */
enum spsim_recompute_module {
    SPSIM_RMOD_CORE_ATTN = 1u << 0,      /**< QKᵀ, softmax, dropout, ·V (checkpoint) */
    SPSIM_RMOD_LAYERNORM = 1u << 1,      /**< both norms' outputs discarded, recomputed */
    SPSIM_RMOD_MLP = 1u << 2,            /**< the dense MLP (checkpoint of its input) */
    SPSIM_RMOD_MOE_ACT = 1u << 3,        /**< MoE experts' activation (output discarded) */
    SPSIM_RMOD_MLA_UP_PROJ = 1u << 4,    /**< MLA up-projections and RoPE (output discarded) */
    SPSIM_RMOD_MOE = 1u << 5,            /**< the MoE layer, dispatch and combine included */
    SPSIM_RMOD_SHARED_EXPERTS = 1u << 6, /**< MoE shared experts */
    SPSIM_RMOD_COUNT_ = 7
};

/**
 * Parse a module list: names separated by ',' or '+' ("core_attn,mlp").
 * @return SPSIM_OK, or SPSIM_EINVAL for an empty list or an unknown name
 */
SPSIM_API int spsim_recompute_modules_parse(const char *text, uint32_t *mask);
/** The mask's names joined by '+' in bit order ("core_attn+mlp"); "core_attn" for 0 (the
 * default). Writes at most cap bytes, NUL included. @return buf */
SPSIM_API const char *spsim_recompute_modules_format(uint32_t mask, char *buf, size_t cap);

/**
 * A parallel configuration. Fill it with spsim_parallel_defaults() first, then set what differs.
 * GPUs used = tp · cp · pp · dp (ranks ordered tp, cp, dp, pp: Megatron's 'tp-cp-ep-dp-pp').
 */
struct spsim_parallel {
    uint32_t tp;  /**< tensor parallel size t; default 1 */
    uint32_t pp;  /**< pipeline parallel size p; default 1 */
    uint32_t dp;  /**< data parallel size d; default 1 */
    uint32_t vpp; /**< interleaved model chunks per pipeline rank (m); 1 = no interleaving */
    uint32_t ep;  /**< expert parallel size (MoE); 1 = none; default 1 */
    bool sp;      /**< sequence parallelism; default false */
    enum spsim_recompute recompute; /**< default none */
    /** selective: OR of enum spsim_recompute_module; 0 = Megatron's default, core_attn alone
     * (default 0). Must be 0 unless recompute is selective. */
    uint32_t recompute_modules;
    /** full: which layers are checkpointed; default SPSIM_RECOMPUTE_METHOD_DEFAULT */
    enum spsim_recompute_method recompute_method;
    /** full with a method: Megatron's --recompute-num-layers, 1 .. layers per stage; 0 with
     * the default method (default 0) */
    uint32_t recompute_layers;
    /** activations of the first N layers offloaded to host memory (Megatron
     * --cpu-offloading-num-layers; TE cpu_offload); 0 = none (default). Needs pp = 1, no
     * recomputation and a hardware profile with a host_link. */
    uint32_t offload_layers;
    uint32_t mbs;   /**< micro-batch size b, sequences; default 1 */
    uint64_t gbs;   /**< global batch size B, sequences; default 1 */
    uint32_t seq;   /**< sequence length s; 0 = the model's seq_len (default) */
    int flash_attn; /**< -1 = the model's `attention` (default), 0 = standard, 1 = flash */
    /** flash attention's kernels: TE's choice (auto, default), flash or fused */
    enum spsim_attention_backend attention_backend;
    bool distributed_optimizer; /**< shard optimizer state over dp (Megatron); default false */
    bool overlap_grad_reduce;   /**< overlap DP gradient reduction with backward; default false */
    enum spsim_dtype dtype;     /**< GEMM data type: bf16 (default), fp16 or fp8 */
    /** dtype fp8: how TE scales (default delayed, Megatron's --fp8-recipe default) */
    enum spsim_fp8_recipe fp8_recipe;
    /** dtype fp8: --fp8-param-gather, the linear weights kept only in FP8 and gathered in FP8
     * by the distributed optimizer (needs zero >= 1); default false */
    bool fp8_param_gather;
    uint32_t cp;                     /**< context parallel size c; default 1 */
    enum spsim_cp_comm cp_comm_type; /**< default p2p (Megatron's --cp-comm-type default) */
    /** a2a+p2p only: Megatron's --hierarchical-context-parallel-sizes [inner A2A, outer p2p];
     * 0, 0 = unset (default); their product must be cp. */
    uint32_t hcp_sizes[2];
    /** Sharded data parallelism over the dp·cp group: 0 = none (default), 1 = optimizer state
     * (Megatron's distributed optimizer, Megatron-FSDP optim), 2 = + gradients (optim_grads),
     * 3 = + parameters (optim_grads_params). distributed_optimizer = true means at least 1. */
    uint32_t zero;
    /** Gradient buffers and their reduction: 1 = fp32 (--accumulate-allreduce-grads-in-fp32),
     * 0 = the parameter dtype (--grad-reduce-in-bf16, or bf16 main gradients with the
     * precision-aware optimizer; the optimizer then keeps an fp32 copy of its gradient shard),
     * -1 = Megatron's choice for dtype (default): fp32 for bf16 and fp8, fp16 for fp16
     * (arguments.py). */
    int grad_reduce_in_fp32;
    /** Defer the parameter AllGather after the optimizer step to the next forward
     * (--overlap-param-gather; needs the distributed optimizer and overlap_grad_reduce). */
    bool overlap_param_gather;
    /** The DDP's overlaps as Megatron-Bridge sets them (training/comm_overlap.py:562-586 at
     * 067f987): overlap_param_gather without overlap_grad_reduce is allowed, as Megatron-Core's
     * DDP runs it; Megatron-LM's arguments.py:1028 (d98e8a64) refuses it. Set by the recipe
     * reader (spsim_megatron_parse_inputs on YAML); default false. */
    bool bridge_ddp;
    /* Uneven pipeline stages (Megatron-Core transformer_block.py get_num_layers_to_build). At
     * most one way is used: first/last layer counts, embedding/loss accounting, or a layout. */
    uint32_t first_stage_layers; /**< layers of pipeline rank 0 (--decoder-first-pipeline-num-
                                      layers); 0 = unset (default) */
    uint32_t last_stage_layers;  /**< layers of rank p−1 (--decoder-last-...); 0 = unset */
    bool account_embedding;      /**< the embedding counts as one layer of the split (first chunk of
                                      rank 0 builds one layer fewer); default false */
    bool account_loss;           /**< the loss counts as one layer (last chunk of rank p−1) */
    /** --pipeline-model-parallel-layout: stages split by '|' in virtual-stage-major order,
     * E embedding, t layer, L loss, "x*n" and "(..)*n" repeat, commas ignored; NULL = none
     * (default). vpp is then the stage count / pp (vpp must be 1 or that). Borrowed: the string
     * must outlive the configuration and any result that copies it. */
    const char *pipeline_layout;
    /* Mixture of experts (ignored by dense models). The expert grid refolds the same
     * tp·cp·dp ranks of a pipeline stage as etp · ep · edp (parallel_state.py), so the expert
     * data-parallel size is tp·cp·dp / (ep·etp). */
    uint32_t etp; /**< expert tensor parallel size; 0 = tp (Megatron's default) */
    enum spsim_moe_dispatcher moe_dispatcher; /**< default allgather (Megatron's default) */
    /** Interleaved schedule: blocking point-to-point sends (Megatron's
     * --no-overlap-p2p-communication). false (default): Megatron's CLI default with vpp > 1,
     * async isend/irecv beside the next chunk (p2p_communication.py); without interleaving
     * Megatron forces blocking sends whatever this says (arguments.py). */
    bool no_overlap_p2p;
    /** Interleaved schedule: micro-batches each virtual stage runs in a row, forward and
     * backward (--microbatch-group-size-per-virtual-pipeline-stage, model_parallel_config.py);
     * 0 = pp (default, Megatron's depth-first schedule). pp ≤ N ≤ micro-batches. */
    uint32_t microbatch_group;
    /** --ddp-bucket-size in parameters (elements) for the overlapped gradient reduction;
     * 0 = Megatron's default max(40,000,000, 1,000,000·dp) (distributed_data_parallel.py). */
    uint64_t ddp_bucket_size;
    /** TE userbuffers TP communication overlap (--tp-comm-overlap; needs sp); default false */
    bool tp_comm_overlap;
    /** The flex dispatcher's backend (--moe-flex-dispatcher-backend); default deepep. */
    enum spsim_moe_flex_backend moe_flex_backend;
    /** SMs the flex kernels run on (--moe-flex-dispatcher-num-sms); 0 = the backend's default
     * (DeepEP 20, Megatron's; HybridEP 24 in one NVLink domain, 8 across, its own). */
    uint32_t moe_flex_sms;
    /** CUDA graphs (--cuda-graph-impl); default none. They change the host's kernel launches
     * (time.layer_*_launches) and, with a profile's host.kernel_launch_us, the host-bound time. */
    enum spsim_cuda_graph_impl cuda_graph_impl;
    /** local or transformer_engine: OR of enum spsim_cuda_graph_scope; 0 = the whole layer
     * (default 0) */
    uint32_t cuda_graph_scope;
    /** EP all-to-all overlap (--overlap-moe-expert-parallel-comm; Bridge moe_a2a_overlap): the
     * combined 1F1B schedule runs one micro-batch's forward beside another's backward, each
     * one's token exchanges under the other's computation; default false */
    bool moe_a2a_overlap;
    /** The experts' and attention's weight gradients run apart from their data gradients
     * (--delay-wgrad-compute; needs moe_a2a_overlap); default false */
    bool delay_wgrad_compute;
    /** The EP ranks' token load (--moe-routing): random (default) times the expected
     * most-loaded rank of uniform random routing, balanced the mean. */
    enum spsim_moe_routing moe_routing;
    /** dtype fp8 or nvfp4: Megatron's --first-last-layers-bf16, the first bf16_layers_start and
     * the last bf16_layers_end decoder layers (global indices, on whichever pipeline rank and
     * chunk builds them) run outside TE's quantized autocast, in BF16 (fp8_utils.py
     * is_first_last_bf16_layer); ignored for bf16 and fp16, as Megatron ignores it; default
     * false */
    bool first_last_layers_bf16;
    uint32_t bf16_layers_start; /**< --num-layers-at-start-in-bf16; default 1 (Megatron's) */
    uint32_t bf16_layers_end;   /**< --num-layers-at-end-in-bf16; default 1 (Megatron's) */
    /** Megatron's --use-precision-aware-optimizer: Transformer Engine's FusedAdam keeps the
     * optimizer's tensors in the dtypes below (needs the distributed optimizer, zero >= 1);
     * default false (every optimizer tensor fp32) */
    bool precision_aware_optimizer;
    /** --main-grads-dtype: fp32 (default) or bf16; bf16 makes the gradient buffer bf16
     * (grad_reduce_in_fp32 0) and needs precision_aware_optimizer */
    enum spsim_opt_dtype main_grads_dtype;
    /** --main-params-dtype: fp32 (default) or fp16 (the master weights); not fp32 needs
     * precision_aware_optimizer */
    enum spsim_opt_dtype main_params_dtype;
    /** --exp-avg-dtype, --exp-avg-sq-dtype: Adam's moments, fp32 (default), fp16, bf16 or fp8;
     * not fp32 needs precision_aware_optimizer */
    enum spsim_opt_dtype exp_avg_dtype;
    enum spsim_opt_dtype exp_avg_sq_dtype;
    /* Fine-tuning (README "Fine-tuning: LoRA and packed sequences"). LoRA as Megatron-Bridge builds
     * it (peft/lora.py LoRA, peft/utils.py ParallelLinearAdapter): the base model frozen (no
     * gradients, no optimizer state, no weight-gradient GEMMs), a low-rank adapter in -> r -> out
     * beside each targeted linear of every transformer layer, the adapters trained. */
    uint32_t lora_rank;    /**< LoRA's dim r; 0 = full training (default) */
    uint32_t lora_targets; /**< OR of enum spsim_lora_target; 0 = Bridge's default, all four */
    double lora_alpha;     /**< the adapter's scale alpha/r: recorded, no cost; 0 = unset */
    double lora_dropout;   /**< dropout on the adapter's input ('pre'), in [0, 1); default 0 */
    /** Packed THD sequences (Megatron-Core PackedSeqParams, cu_seqlens): each micro-batch row of
     * seq tokens holds sub-sequences s_i that attend causally within themselves only, and this is
     * their Σs_i² / Σs_i (equal sub-sequences: their length), Megatron-Bridge's
     * core_attn_seq_factor (training/utils/flop_utils.py); 0 = one sequence per row (default) */
    uint32_t packed_subseq_len;
    /** --optimizer: adam (default) or muon (README "Muon"); Megatron's dist_muon is muon with
     * distributed_optimizer */
    enum spsim_optimizer_kind optimizer;
    /** muon: --muon-num-ns-steps, Newton-Schulz iterations; 0 = Megatron's default 5 */
    uint32_t muon_ns_steps;
    enum spsim_muon_tp_mode muon_tp_mode; /**< muon: default duplicated (Megatron's) */
    bool muon_nesterov; /**< muon: --muon-nesterov (Nesterov momentum); default false */
    /** muon: --muon-no-split-qkv; false (default): Megatron splits the fused QKV weight into its
     * Q, K and V matrices before orthogonalizing */
    bool muon_no_split_qkv;
    /** --optimizer-cpu-offload: Megatron-Core's HybridDeviceOptimizer (optimizer/cpu_offloading/
     * hybrid_optimizer.py) steps a fraction of the optimizer shard's parameters on the CPU
     * (torch AdamW), their fp32 copies, moments and gradients in pinned host memory (README
     * "Optimizer CPU offload"); needs the precision-aware optimizer, as Megatron; default false */
    bool optimizer_cpu_offload;
    /** --optimizer-offload-fraction in [0, 1]: the shard's parameters offloaded (default 0.0,
     * Megatron's) */
    double optimizer_offload_fraction;
    /** --overlap-cpu-optimizer-d2h-h2d: the copies and the CPU step overlap per parameter on
     * their own streams; default false */
    bool overlap_cpu_optimizer_d2h_h2d;
    /** --log-params-norm: the training loop computes the parameters' L2 norm every iteration
     * (calc_params_l2_norm, host ops and a device-to-host wait: time.optimizer_host_s);
     * default false */
    bool log_params_norm;
    /** --log-num-zeros-in-grad: the optimizer counts the gradients' zeros every step
     * (count_zeros_fp32, per tensor ops and a wait: time.optimizer_host_s); default false */
    bool log_num_zeros_in_grad;
    /** --no-gradient-accumulation-fusion: TE's linears return their weight gradient and the DDP
     * hook adds it to main_grad, a kernel per parameter tensor per micro-batch (engine/
     * mb_host.c); default false (fused into the wgrad GEMM) */
    bool no_gradient_accumulation_fusion;
    /** --defer-embedding-wgrad-compute: the last stage keeps the output layer's input and the
     * logits' gradient of the first wgrad_deferral_limit micro-batches and runs their weight
     * gradient GEMMs in the pipeline flush (Megatron-LM d98e8a64 tensor_parallel/layers.py
     * 1228-1232, 661-663; schedules.py finish_embedding_wgrad_compute): memory.
     * activation_deferred_wgrad_bytes. Needs pp > 1 and gradient accumulation fusion
     * (model_parallel_config.py:545-553); default false */
    bool defer_embedding_wgrad_compute;
    /** --wgrad-deferral-limit: the micro-batches deferred; 0 = every one (Megatron's default) */
    uint32_t wgrad_deferral_limit;
    /** --cross-entropy-loss-fusion: the last stage's loss runs fused, as
     * cross_entropy_fusion_impl says (memory.activation_logits_working_bytes and the loss's
     * bytes, engine/layer.c); default false (tensor_parallel.vocab_parallel_cross_entropy) */
    bool cross_entropy_loss_fusion;
    /** --cross-entropy-fusion-impl: which fused loss (read with cross_entropy_loss_fusion only);
     * default native */
    enum spsim_ce_impl cross_entropy_fusion_impl;
    /** --no-create-attention-mask-in-dataloader: get_batch copies and broadcasts no attention
     * mask; default false (the data loader builds it, pretrain_gpt.py) */
    bool no_create_attention_mask_in_dataloader;
    /** --no-check-for-nan-in-loss-and-grad: loss_func does not check the loss (two
     * device-to-host waits per micro-batch on the last stage otherwise); default false */
    bool no_check_for_nan_in_loss_and_grad;
    /** --log-interval: training_log prints (and stops and restarts its interval timer, two
     * barriers and device synchronisations) every this many iterations; 0 = Megatron's default
     * 100 (engine/log_host.c) */
    uint32_t log_interval;
    /** --tensorboard-dir given: the last rank writes training_log's scalars every iteration
     * (tensorboard_log_interval 1, Megatron's default); default false */
    bool tensorboard;
    /** --log-timers-to-tensorboard: the iteration time is written too; default false */
    bool log_timers_to_tensorboard;
    /** --log-memory-to-tensorboard: torch.cuda.memory_stats() and four scalars every
     * iteration; default false */
    bool log_memory_to_tensorboard;
    /** HSDP (README "HSDP"): Megatron's --num-distributed-optimizer-instances R, the dp·cp ranks
     * D split into R replicas of D/R consecutive ranks (parallel_state.py intra_partial groups);
     * the sharding (zero >= 1) is over D/R, the gradient shards reduced across the R replicas
     * (inter_dist_opt group); 0 or 1 = one instance (default) */
    uint32_t dist_opt_instances;
    /** --outer-dp-sharding-strategy optim (Megatron-FSDP HFSDP, needs zero 3 and R > 1): the
     * main weights and optimizer state sharded over all D ranks; false = no_shard (default) */
    bool outer_dp_shard;
    /** The pipeline schedule (--pp-schedule; README "Pipeline schedules"): Megatron-Core's 1F1B
     * or interleaved by vpp (default), or zero-bubble ZB-H1 / ZB-V, DualPipe / DualPipeV */
    enum spsim_pp_schedule pp_schedule;
};

/** LoRA's target modules (Megatron-Bridge LoRA.target_modules), as bits. */
enum spsim_lora_target {
    SPSIM_LORA_QKV = 1u << 0,  /**< linear_qkv */
    SPSIM_LORA_PROJ = 1u << 1, /**< linear_proj */
    SPSIM_LORA_FC1 = 1u << 2,  /**< linear_fc1 */
    SPSIM_LORA_FC2 = 1u << 3,  /**< linear_fc2 */
    SPSIM_LORA_ALL = 15u
};

/** Parse a target list: names separated by ',' or '+' ("linear_qkv,linear_proj"). @return
 * SPSIM_OK, or SPSIM_EINVAL for an empty list or an unknown name */
SPSIM_API int spsim_lora_targets_parse(const char *text, uint32_t *mask);
/** The mask's names joined by '+' in bit order; Bridge's four for 0. @return buf */
SPSIM_API const char *spsim_lora_targets_format(uint32_t mask, char *buf, size_t cap);

/** Set every field to its documented default. */
SPSIM_API void spsim_parallel_defaults(struct spsim_parallel *par);

/** Warnings: configurations that run but are probably not what the user wants. */
enum spsim_warning {
    SPSIM_WARN_TP_SPANS_DOMAIN = 1u << 0, /**< a TP group spans more GPUs than one NVLink domain */
    SPSIM_WARN_TP_STRADDLES_DOMAIN = 1u << 1, /**< t does not divide the NVLink domain size */
    SPSIM_WARN_FEW_MICROBATCHES = 1u << 2,    /**< fewer micro-batches than pipeline stages */
    SPSIM_WARN_COUNT_ = 3
};

/** @return the one-line text of a single warning bit; "" for unknown bits. */
SPSIM_API const char *spsim_warning_text(uint32_t warning_bit);

/**
 * Check a configuration against the model and hardware with Megatron-LM's rules (SP needs
 * tp > 1, as ModelParallelConfig checks it: the command line disables SP at tp = 1 first, with
 * Megatron's warning, as arguments.py does; heads, kv_heads and ffn divisible by tp; layers split
 * over pp·vpp, evenly or by the uneven options; global batch divisible by mbs·dp; recompute
 * modules, method and layer count, and CPU offload as transformer_config.py checks them; ...).
 * Nothing is computed.
 * @param hw        may be NULL (hardware-dependent checks are skipped)
 * @param warnings  optional; receives an OR of enum spsim_warning
 * @return SPSIM_OK, SPSIM_ECONFIG (err names the field and the rule) or SPSIM_EINVAL
 */
SPSIM_API int spsim_parallel_check(const struct spsim_model *model, const struct spsim_hardware *hw,
                                   const struct spsim_parallel *par, uint32_t *warnings,
                                   struct spsim_error *err);

#ifdef __cplusplus
}
#endif

#endif
