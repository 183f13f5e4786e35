/*
 * The transformer layer as data: an ordered list of operations built once for a (model,
 * parallel configuration) pair. Every engine (memory, communication, time, explain) is a fold
 * over this list or over the schedule derived from it. New layer kinds (SwiGLU, GQA, RMSNorm,
 * no dropout, flash attention) are different rows, not different formulas.
 */
#ifndef SPSIM_LAYER_H
#define SPSIM_LAYER_H

#include "profiles/profiles.h"
#include "spsim/parallel.h"
#include "spsim/schedule.h"

enum spsim_op_kind {
    SPSIM_OPK_MEMORY = 0, /* memory-bound element-wise kernel (norm, dropout, activation...) */
    SPSIM_OPK_GEMM = 1,   /* a linear layer: out[m,n] = in[m,k] · W[k,n] on one rank */
    SPSIM_OPK_BMM = 2,    /* batched attention matmul (QKᵀ or attention·V), no weights */
    SPSIM_OPK_FLASH = 3,  /* fused flash attention (QKᵀ, softmax, dropout, ·V) */
    SPSIM_OPK_COMM = 4,   /* a TP boundary operator: f, f̄, g or ḡ */
    SPSIM_OPK_CP = 5,     /* a context-parallel exchange of attention inputs or outputs */
    SPSIM_OPK_EP = 6      /* an MoE token exchange over the EP, ETP or ETP×EP group */
};

/* Recompute group: what selective recomputation of a module (enum spsim_recompute_module, the
 * same bits) drops and replays. LAYER is never dropped by selective recomputation. */
enum spsim_rgroup {
    SPSIM_RG_LAYER = 0,
    SPSIM_RG_CORE_ATTN = SPSIM_RMOD_CORE_ATTN,
    SPSIM_RG_NORM = SPSIM_RMOD_LAYERNORM, /* a norm's output (the next linear's input) */
    SPSIM_RG_MLP = SPSIM_RMOD_MLP,
    SPSIM_RG_MOE_ACT = SPSIM_RMOD_MOE_ACT, /* with MOE: the experts' activation */
    SPSIM_RG_MOE = SPSIM_RMOD_MOE,         /* the MoE layer from the router to the combine */
    SPSIM_RG_SHARED = SPSIM_RMOD_SHARED_EXPERTS,
    SPSIM_RG_MLA_UP = SPSIM_RMOD_MLA_UP_PROJ /* MLA: up-projections, RoPE and their Q, K, V */
};

enum spsim_region { SPSIM_REGION_SEQ = 0, SPSIM_REGION_TENSOR = 1, SPSIM_REGION_BOUNDARY = 2 };

enum spsim_gemm_role { SPSIM_GEMM_COLUMN = 0, SPSIM_GEMM_ROW = 1 };

#define SPSIM_COLL_NONE SPSIM_COLL_COUNT

struct spsim_saved_tensor {
    const char *what;
    uint64_t elements; /* on one rank */
    uint32_t bytes_per_element;
    enum spsim_rgroup group;
};

struct spsim_dim {
    const char *sym; /* "s/t", "b", "h", "3h/t", ... */
    uint64_t value;
};

#define SPSIM_OP_MAX_SAVED 3
#define SPSIM_OP_MAX_DIMS  4

struct spsim_op {
    const char *name;
    enum spsim_op_kind kind;
    enum spsim_region region;
    enum spsim_rgroup group;
    /* GEMM and BMM: forward shape per rank (batch = 1 for GEMM). */
    enum spsim_gemm_role role;
    uint64_t m, n, k, batch;
    double bias_grad_bytes; /* GEMM with its bias in the epilogue: the bias-gradient reduction */
    /* FLASH: causal attention computes half of the s×s score matrix. With sliding windows
     * (layers whose queries see at most `window` keys) the op is the layers' mean: its forward
     * FLOPs hold the windowed layers' share (flash_window_flops) at their smaller work. The
     * head dimensions, the keys a query sees at most (seq: s, or s/c per CP ring step) and the
     * window pick the measured fused-attention rate (timing.c attention_rate); the CP ring op
     * beside it carries the same. */
    double flash_fwd_flops, flash_window_flops;
    uint32_t attn_dqk, attn_dv, attn_window;
    uint64_t attn_seq;
    /* MEMORY: bytes moved through HBM forward and backward. */
    double fwd_bytes, bwd_bytes;
    /* COMM: the operator and the collective it issues in each direction. */
    const char *operator_name;
    const char *bwd_name;                  /* the collective's site in backward */
    bool into_tp;                          /* g or f (before a column-parallel GEMM) */
    bool flex;                             /* EP: a flex dispatch or combine (moe_flex.c) */
    enum spsim_coll_op fwd_coll, bwd_coll; /* SPSIM_COLL_NONE for identity */
    /* Column-parallel GEMM with SP: where its weight-gradient re-gather is reported. */
    const char *regather_site;
    uint64_t message_bytes; /* M = b·s·h·2 */
    /* FP8 (engine/fp8.c): a GEMM in FP8 and the HBM bytes of its input's cast (forward) and of
     * its output gradient's (backward); a boundary whose AllGathers carry FP8 (M/2). */
    bool fp8, fp8_gather;
    double cast_fwd_bytes, cast_bwd_bytes;
    /* A GEMM Transformer Engine does not run (the router's torch matmul): never quantized. */
    bool outside_te;
    /* CP and EP: the backward message (p2p: K/V and dK/dV blocks travel together), the group
     * (size, stride in ranks) and, for the p2p ring, the attention it overlaps (forward FLOPs). */
    uint64_t cp_bwd_message_bytes;
    uint32_t cp_group, cp_stride;
    double cp_attn_flops;
    const char *rng; /* RNG domain of a dropout, or NULL */
    uint32_t nsaved;
    struct spsim_saved_tensor saved[SPSIM_OP_MAX_SAVED];
    uint32_t nin, nout;
    struct spsim_dim in[SPSIM_OP_MAX_DIMS], out[SPSIM_OP_MAX_DIMS];
    /* EP, flex dispatcher (moe_flex.c, op->flex): the bytes per rank through its NIC share,
     * forward [0] and backward [1]; message_bytes and cp_bwd_message_bytes add its NVLink
     * bytes. */
    uint64_t flex_rdma[2];
    /* HybridEP (op->flex): the hidden bytes of the rows the rank receives, its own included
     * (the accounting of gpu.hybridep_*_GBps, moe_flex.c), and the kernel its forward runs,
     * 0 dispatch or 1 combine (its backward runs the other); 0 bytes: DeepEP. */
    uint64_t flex_recv_bytes;
    uint8_t flex_kernel;
    /* HybridEP across domains: 2h bytes per domain send (spsim_moe_flex_traffic domain_sends),
     * the accounting of gpu.hybridep_rdma_*_GBps; 0 in one domain. */
    uint64_t flex_domain_bytes;
    /* The per-layer CUDA-graph module it runs in (an enum spsim_cuda_graph_scope bit: attn,
     * mlp, moe_router for the pre-MLP norm, router and shared experts, moe for the rest of an
     * MoE block); 0 outside transformer layers (engine/host.c). */
    uint32_t graph_module;
    double gather_fraction; /* fp8_gather: the fraction of M an AllGather carries (fp8.c) */
    /* Current scaling and NVFP4 with SP: the fp32 amax bytes all-reduced over TP before each
     * quantized AllGather of this boundary (fp8.c); 0 = none. */
    uint32_t amax_bytes;
    /* A CP-kind step that is the router's tokens-per-expert AllReduce (add_router_losses):
     * timed in its own line (time.moe_aux_allreduce_s), not with the CP exchanges. */
    bool moe_aux;
    /* A LoRA adapter's GEMM (finetune.c): trained, in BF16 (Megatron's Column/RowParallelLinear,
     * not TE's quantized modules), beside a frozen base linear. */
    bool adapter;
    /* A frozen row-parallel linear whose adapter reads the same input (no dropout): the input
     * stays saved (spsim_lora_freeze). */
    bool input_shared;
    /* The host waits here for the GPU (a device-to-host copy this op's launch needs: the MoE
     * dispatchers' tokens per expert), in forward and its recompute (engine/host.c). */
    bool d2h_sync;
    /* Kernels whose calls and launches mb_host.c prices (the DDP hook's main_grad.add_): timed
     * on the GPU here, never counted again by the schedule's host walk (host.c step_kernels). */
    bool mb_host_launched;
    /* Gemma's post-attention or post-MLP norm (add_post_norm): it runs inside the row-parallel
     * linear before it, so the input norms' recompute hook is on its output (schedule.c). */
    bool post_norm;
};

#define SPSIM_LAYER_MAX_OPS 56

/* struct spsim_layer_config cross_entropy: tensor_parallel.vocab_parallel_cross_entropy, or a
 * fused loss (1 + enum spsim_ce_impl). */
#define SPSIM_LAYER_CE_UNFUSED 0

/** A configuration with its defaults resolved, as the engines use it. */
struct spsim_layer_config {
    uint32_t t; /* tensor parallel size */
    bool sp;
    bool flash;
    enum spsim_attention_backend attn_backend; /* flash's kernels (auto: TE's choice) */
    bool tp_comm_overlap; /* TE userbuffers on this block's TP collectives (sp, t > 1) */
    enum spsim_recompute recompute;
    uint32_t rmods; /* selective: the modules recomputed (enum spsim_rgroup bits); else 0 */
    uint64_t s, b;  /* sequence length, micro-batch size */
    enum spsim_dtype dtype;
    enum spsim_fp8_recipe fp8_recipe; /* dtype fp8 only; else delayed */
    /* Context parallelism: size, exchange, and the A2A (inner) and p2p ring (outer) sizes. */
    uint32_t cp;
    enum spsim_cp_comm cp_comm;
    uint32_t cp_a2a, cp_ring;
    /* Mixture of experts: whether this is an MoE layer (its FFN the routed experts), and the
     * expert-parallel, expert-tensor-parallel sizes and the dispatcher (1, 1, allgather for a
     * dense model). */
    bool moe;
    uint32_t ep, etp;
    enum spsim_moe_dispatcher dispatcher;
    /* The flex dispatcher (0 otherwise): its backend and the ranks of its etp·ep group in one
     * RDMA domain (the hardware's, set by spsim_layer_evaluate; 0: all in one). */
    enum spsim_moe_flex_backend flex_backend;
    uint32_t flex_per_domain;
    uint32_t flex_sms; /* --moe-flex-dispatcher-num-sms; 0: the backend's default */
    /* CUDA graphs: the modules captured (enum spsim_cuda_graph_scope bits, resolved by
     * spsim_cuda_graph_capture; SPSIM_CGS_FULL_ITERATION: every block); 0 = eager. */
    uint32_t graph_capture;
    /* The EP ranks' token load: the expected most-loaded rank (random) or the mean (balanced,
     * and every dense layer); moe_imbalance.c. */
    enum spsim_moe_routing routing;
    /* global_aux_loss: the data-parallel size its tokens-per-expert AllReduce also spans
     * (TP×DP×CP); 1 for every other model, so their layer is the same for every dp. */
    uint32_t aux_dp;
    /* first_last_layers_bf16 (bf16_layers.c): some decoder layers run in BF16; the evaluation
     * builds that layer too (spsim_layer_eval.dense). */
    bool bf16_ends;
    /* Fine-tuning (finetune.c): the keys each query sees, Σs_i²/Σs_i of packed sub-sequences
     * (0: the whole sequence); the base weights frozen (LoRA: their GEMMs run no weight
     * gradient); the adapters' rank, targets (enum spsim_lora_target bits) and input dropout. */
    uint32_t attn_len;
    bool frozen;
    uint32_t lora_rank, lora_targets;
    double lora_dropout;
    /* The micro-batch's host work outside the schedule (engine/mb_host.c): TE's linears
     * accumulate their weight gradient into main_grad (no --no-gradient-accumulation-fusion),
     * the data loader builds the attention mask (no --no-create-attention-mask-in-dataloader),
     * loss_func checks the loss for NaN and Inf (no --no-check-for-nan-in-loss-and-grad). */
    bool wgrad_fusion, mask_in_dataloader, nan_check;
    /* Bytes of a main-gradient element (4: fp32, 2: 16-bit with --grad-reduce-in-bf16): what
     * the DDP hook's main_grad.add_ reads and writes (layer.c add_main_grad_adds). */
    uint8_t main_grad_bytes;
    /* The last stage's cross-entropy (struct spsim_parallel cross_entropy_loss_fusion and its
     * impl): SPSIM_LAYER_CE_UNFUSED or 1 + enum spsim_ce_impl. */
    uint8_t cross_entropy;
    /* A hybrid model's layer kind to build (SPSIM_LAYER_TRANSFORMER: attention and the MLP or,
     * with moe, the MoE block); spsim_layer_evaluate builds one block per kind. */
    enum spsim_layer_kind kind;
};

struct spsim_layer {
    struct spsim_layer_config cfg;
    uint32_t nops;
    struct spsim_op ops[SPSIM_LAYER_MAX_OPS];
    uint64_t message_bytes; /* M = b·s·h·2 */
    bool ok;                /* false if a count overflowed 64 bits */
};

/** Build the op list. Never fails except on 64-bit overflow (layer->ok == false). */
void spsim_layer_build(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                       struct spsim_layer *layer);

/** The first stage's embedding block: vocabulary-parallel lookup, its ḡ/f̄, dropout. */
void spsim_embedding_build(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                           uint64_t padded_vocab, struct spsim_layer *block);

/** The last stage's output block: final norm, g/f, vocabulary-parallel output GEMM,
 * cross-entropy with fp32 logits. */
void spsim_output_build(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                        uint64_t padded_vocab, struct spsim_layer *block);

/** One multi-token-prediction depth's enorm, hnorm, eh_proj and its output gather (the
 * embedding, transformer layer and output head are the model's blocks). */
void spsim_mtp_build(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                     struct spsim_layer *block);

/** LoRA's adapter beside the base GEMM just added (finetune.c): its optional input dropout and
 * its two GEMMs in -> r -> out, split over TP as the base (peft/utils.py ParallelLinearAdapter),
 * when cfg targets the module `target` (enum spsim_lora_target). `k_full`, `n_full`: the base
 * linear's whole input and output widths. */
void spsim_lora_add(struct spsim_layer *layer, uint32_t target, uint64_t tokens, uint64_t k_full,
                    uint64_t n_full, bool *ok);
/** cfg.frozen: the base linears of a built block keep no input (finetune.c). */
void spsim_lora_freeze(struct spsim_layer *layer);
/** What is modelled of LoRA and packed sequences (spsim_parallel_check). */
int spsim_finetune_check(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                         bool flash, struct spsim_error *err);

/** Transformer Engine's FP8 on a built transformer layer (cfg.dtype fp8; engine/fp8.c): its
 * linear GEMMs in FP8, their saved inputs in FP8 with the recipe's scales, the cast bytes and
 * the FP8 AllGathers. Nothing for other dtypes. */
void spsim_layer_apply_fp8(struct spsim_layer *layer);

/** The linear weights of one layer that run in FP8 or NVFP4 on one rank, but for the routed
 * experts' (the weights the dense data-parallel gather carries; 0 in BF16). */
uint64_t spsim_layer_fp8_weights(const struct spsim_layer *layer, bool *ok);

/** The FP8 or NVFP4 weight copies TE keeps beside one layer's BF16 linear weights on one rank
 * (rowwise and columnwise, with the recipe's scales; every local expert; one copy for
 * per-tensor FP8 where `non_tn`, spsim_te_non_tn_fp8). 0 in BF16. */
uint64_t spsim_layer_fp8_weight_bytes(const struct spsim_layer *layer, bool non_tn, bool *ok);

/** Whether TE runs FP8 GEMMs in every layout on this GPU (Blackwell), so that a per-tensor
 * FP8 weight needs no transpose; false without a profile. */
bool spsim_te_non_tn_fp8(const struct spsim_hardware *hw);

/** Activation bytes this layer keeps for backward on one rank, for its recompute setting.
 * *ok is cleared on overflow. */
uint64_t spsim_layer_saved_bytes(const struct spsim_layer *layer, bool *ok);

/** What TE's CPU offload moves of a layer kept whole (no recomputation): its saved tensors of
 * at least 256·1024 elements (transformer_engine/pytorch/cpu_offload.py _check_if_offload). */
uint64_t spsim_layer_offload_bytes(const struct spsim_layer *layer, bool *ok);

/* The schedule: forward, recompute and backward steps of one layer, with Megatron's overlaps. */

enum spsim_pass {
    SPSIM_PASS_FWD,
    SPSIM_PASS_DGRAD,
    SPSIM_PASS_WGRAD,
    SPSIM_PASS_BWD,
    SPSIM_PASS_COMM
};

struct spsim_step {
    enum spsim_phase phase;
    const struct spsim_op *op;
    enum spsim_pass pass;
    /* Computation of the step (none for a pure collective step). */
    double flops;
    uint64_t gm, gn, gk, gbatch; /* GEMM shape of this pass (M, N, K) */
    double bytes;                /* memory-bound bytes */
    /* A collective issued in this step (runs beside the computation when overlap != NONE). */
    enum spsim_coll_op coll; /* SPSIM_COLL_NONE: none */
    uint64_t message_bytes;  /* the collective's size (nccl-tests convention) */
    const char *coll_site;
    const char *coll_operator;
    enum spsim_overlap overlap;
    /* Filled when the step is costed: the group its collective spans, the bytes per rank. */
    uint32_t group_size;
    uint64_t wire_bytes;
};

#define SPSIM_MAX_STEPS 160

struct spsim_schedule {
    uint32_t nsteps;
    struct spsim_step steps[SPSIM_MAX_STEPS];
};

void spsim_schedule_build(const struct spsim_layer *layer, struct spsim_schedule *sched);

/** "forward", "dgrad", "wgrad", "backward"; "" for a collective step (as `spsim explain` prints).
 */
const char *spsim_pass_name(enum spsim_pass p);

#endif
