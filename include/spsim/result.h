/* Evaluating one configuration: memory, communication and time. */
#ifndef SPSIM_RESULT_H
#define SPSIM_RESULT_H

#include "spsim/common.h"
#include "spsim/hardware.h"
#include "spsim/model.h"
#include "spsim/parallel.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The six activation-memory modes of Korthikanti et al. 2022, Table 2 (per transformer layer,
 * bytes, one tensor-parallel rank).
 */
enum spsim_act_mode {
    SPSIM_MODE_NONE = 0,            /**< no parallelism: sbh(34 + 5as/h) */
    SPSIM_MODE_TP = 1,              /**< tensor parallel: sbh(10 + 24/t + 5as/(ht)) */
    SPSIM_MODE_TP_SP = 2,           /**< + sequence parallel: sbh(34/t + 5as/(ht)) */
    SPSIM_MODE_TP_SELECTIVE = 3,    /**< TP + selective recompute: sbh(10 + 24/t) */
    SPSIM_MODE_TP_SP_SELECTIVE = 4, /**< TP + SP + selective recompute: 34sbh/t */
    SPSIM_MODE_FULL = 5,            /**< full recompute (paper: without SP): 2sbh */
    SPSIM_MODE_COUNT = 6
};

/** @return "none", "tp", "tp_sp", "tp_selective", "tp_sp_selective", "full"; "?" otherwise. */
SPSIM_API const char *spsim_act_mode_name(enum spsim_act_mode mode);

enum spsim_phase { SPSIM_PHASE_FORWARD = 0, SPSIM_PHASE_BACKWARD = 1, SPSIM_PHASE_RECOMPUTE = 2 };
/** @return "forward", "backward", "recompute"; "?" otherwise. */
SPSIM_API const char *spsim_phase_name(enum spsim_phase phase);

enum spsim_coll_op {
    SPSIM_COLL_ALL_REDUCE = 0,
    SPSIM_COLL_ALL_GATHER = 1,
    SPSIM_COLL_REDUCE_SCATTER = 2,
    SPSIM_COLL_SEND_RECV = 3,
    SPSIM_COLL_ALL_TO_ALL = 4, /**< nccl-tests alltoall_perf; no layer uses it */
    SPSIM_COLL_COUNT
};
/** @return "all_reduce", "all_gather", "reduce_scatter", "send_recv", "all_to_all"; "?"
 * otherwise. */
SPSIM_API const char *spsim_coll_op_name(enum spsim_coll_op op);
/** The collective named `name`. @return SPSIM_OK or SPSIM_EINVAL */
SPSIM_API int spsim_coll_op_parse(const char *name, enum spsim_coll_op *out);

/** The link tier a transfer uses. */
enum spsim_tier {
    SPSIM_TIER_LOCAL = 0,       /**< group of one: no transfer */
    SPSIM_TIER_NVLINK = 1,      /**< inside one NVLink domain */
    SPSIM_TIER_NETWORK = 2,     /**< across nodes, one GPU per node in the group */
    SPSIM_TIER_HIERARCHICAL = 3 /**< across NVLink domains with several GPUs per domain */
};
/** @return "local", "nvlink", "network", "hierarchical"; "?" otherwise. */
SPSIM_API const char *spsim_tier_name(enum spsim_tier tier);

/** What a backward collective runs beside (Megatron's
 * LinearWithGradAccumulationAndAsyncCommunication); NONE means on the critical path. */
enum spsim_overlap {
    SPSIM_OVERLAP_NONE = 0,
    SPSIM_OVERLAP_DGRAD = 1,
    SPSIM_OVERLAP_WGRAD = 2,
    /** The CP p2p ring: each K/V block beside the attention step it feeds. */
    SPSIM_OVERLAP_ATTENTION = 3,
    /** TE userbuffers (--tp-comm-overlap): an AllGather sent chunk by chunk around the ring
     * beside the next GEMM's chunks (TE's ring_exchange). */
    SPSIM_OVERLAP_RING_EXCHANGE = 4,
    /** TE userbuffers: a ReduceScatter of the previous GEMM's output in chunks, each beside the
     * next chunk's GEMM (TE's pipeline). */
    SPSIM_OVERLAP_PIPELINE = 5
};
/** @return "none", "dgrad", "wgrad", "attention", "ring_exchange", "pipeline"; "?" otherwise. */
SPSIM_API const char *spsim_overlap_name(enum spsim_overlap overlap);

/** One collective of one transformer layer on one TP rank. */
struct spsim_collective_entry {
    enum spsim_phase phase;
    enum spsim_coll_op op;
    const char *site;             /**< static text, e.g. "g: AllGather before QKV" */
    uint64_t message_bytes;       /**< M = b·s·h·2 (the whole gathered/reduced tensor) */
    uint64_t wire_bytes_per_rank; /**< ring: (t−1)/t·M for AG/RS, 2(t−1)/t·M for AR */
    uint32_t group_size;          /**< t */
    enum spsim_tier tier;
    enum spsim_overlap overlap;
    double time_s;    /**< predicted duration */
    double exposed_s; /**< part of time_s not hidden behind computation */
};

/** Most collectives one layer can have (TP+SP with full recompute has 14; CP adds up to 9). */
#define SPSIM_MAX_LAYER_COLLECTIVES 48

struct spsim_memory_report {
    uint64_t
        activation_modes_bytes[SPSIM_MODE_COUNT]; /**< per layer, Table 2 rows at this t, s, b */
    uint64_t activation_per_layer_bytes; /**< the configured (sp, recompute, attention) mode */
    /** First-stage activations if the layers used each Table 2 mode (the in-flight layers ×
     * that mode's per-layer bytes, plus this configuration's embedding, output and, for full,
     * recompute-working terms). */
    uint64_t activation_modes_first_stage_bytes[SPSIM_MODE_COUNT];
    /** The first stage's weights, gradients and optimizer state plus the above, per mode. */
    uint64_t total_modes_bytes[SPSIM_MODE_COUNT];
    uint32_t layers_per_stage;   /**< L/p; with uneven stages the most layers a rank builds */
    uint32_t layers_per_chunk;   /**< L/(p·vpp); with uneven stages the most a chunk builds */
    uint32_t layers_first_stage; /**< the layers pipeline rank 0 builds */
    uint32_t layers_last_stage;  /**< the layers rank p−1 builds */
    uint32_t
        inflight_chunks_first_stage; /**< model chunks whose activations stage 0 holds at peak */
    double
        interleave_factor; /**< in-flight layers / L: 1 + (p−1)/(p·vpp) with enough micro-batches */
    uint64_t activation_layers_bytes;    /**< in-flight layers × per-layer bytes on stage 0 */
    uint64_t activation_embedding_bytes; /**< embedding dropout masks, sbhp/t (paper §4.3) */
    uint64_t activation_output_bytes;    /**< p = 1 only: 4sbh/t·(1 + v/h) (paper §4.3) */
    uint64_t activation_recompute_working_bytes; /**< full recompute: the activations of one
                                                    checkpointed group (uniform: recompute_layers
                                                    layers; default and block: one) while it is
                                                    recomputed */
    /** Context parallelism: one layer's transient exchange buffers (p2p: the backward's two
     * [KV, dKV] receive buffers; all_gather: the gathered K, V and the full dK, dV; a2a: the
     * exchanged Q, K, V). 0 with cp = 1. */
    uint64_t activation_cp_working_bytes;
    /** The last stage's cross-entropy peak beside the kept fp32 logits: the 16-bit logits in
     * forward (their gradient in backward), 2·(s/c)·b·v/t; in the first stage's sum when p = 1. */
    uint64_t activation_logits_working_bytes;
    /** --defer-embedding-wgrad-compute: the last stage's kept logits gradients (16-bit, s/c·b·v/t
     * each) and output-layer inputs of the micro-batches deferred before the peak's; in the last
     * stage's sum. */
    uint64_t activation_deferred_wgrad_bytes;
    uint64_t activation_first_stage_bytes; /**< sum of the six terms above */
    uint64_t activation_last_stage_bytes;  /**< the last stage (its layers, output layer, logits) */
    uint32_t recomputed_layers_per_stage;  /**< layers whose forward is replayed (full
                                              recompute): L/p, or vpp·min(N, L/(p·vpp)) with
                                              the block method; 0 otherwise */
    uint64_t offload_bytes_per_layer;      /**< activations an offloaded layer moves to host memory
                                              and back, each way (tensors of >= 256Ki elements) */
    uint64_t offload_hbm_saved_bytes;      /**< offload_layers × the above: HBM freed at peak */
    uint64_t offload_host_bytes;           /**< pinned host memory per GPU holding them */
    uint64_t parameters_total;             /**< whole model, exact, vocabulary padded */
    uint64_t parameters_active;            /**< those one token passes through: top-k of the
                                              routed experts (= parameters_total when dense) */
    uint64_t parameters_first_stage;       /**< one TP rank of stage 0 */
    uint64_t parameters_last_stage;        /**< one TP rank of stage p−1 */
    uint64_t parameters_per_gpu;           /**< the most loaded stage's TP rank */
    uint64_t weights_bytes;                /**< bf16 weights: 2 per parameter (most loaded stage) */
    uint64_t gradients_bytes;              /**< fp32 main gradients: 4 per parameter */
    uint64_t optimizer_bytes;   /**< fp32 master + Adam m, v: 12 per parameter (12/d sharded) */
    uint64_t total_bytes;       /**< max over stages of weights+grads+optimizer+activations */
    uint32_t peak_stage;        /**< the pipeline rank holding total_bytes */
    uint32_t layers_peak_stage; /**< the layers that rank builds */
    uint64_t activation_peak_stage_bytes; /**< that rank's activations */
    uint64_t capacity_bytes;              /**< memory for tensors: hbm_bytes − reserved_bytes */
    uint64_t hbm_bytes;      /**< what the GPU reports (profile hbm_reported_MiB, else GB) */
    uint64_t reserved_bytes; /**< CUDA context, cuBLAS workspace, NCCL buffers, fragmentation */
    int64_t headroom_bytes;  /**< capacity − total; negative when it does not fit */
    bool fits;
    /** MoE: of parameters_per_gpu, the routed experts' (sharded over ep and etp, their
     * gradients reduced and optimizer sharded over the expert data-parallel group) */
    uint64_t expert_parameters_per_gpu;
    /** Of parameters_per_gpu's GPU, those trained, whose gradients and optimizer state it
     * holds: all of them, or with LoRA only the adapters' (their weights beside the frozen
     * base's in weights_bytes) */
    uint64_t trainable_parameters_per_gpu;
    /** Muon (--optimizer muon): of trainable_parameters_per_gpu, the 2-D weights Muon steps
     * (the others: Adam); 0 with Adam */
    uint64_t muon_parameters_per_gpu;
    /** Muon: the Newton-Schulz FLOPs of one step this GPU runs (its share of the whole weights
     * under the layer-wise distributed optimizer; whole matrices with --muon-tp-mode
     * duplicated) */
    double muon_ns_flops_per_gpu;
    /** Muon, --muon-tp-mode duplicated, tp > 1: the fp32 momentum bytes of whole matrices this
     * GPU all-gathers over TP per step, and how many all-gathers */
    double muon_tp_gather_bytes_per_gpu, muon_tp_gathers_per_gpu;
    /** --optimizer-cpu-offload: the pinned host memory one GPU's offloaded optimizer shard takes
     * (fp32 copies, moments and gradients; optimizer_bytes is then what stays on the GPU) */
    uint64_t optimizer_host_bytes;
};

struct spsim_comm_report {
    uint32_t per_layer_count;
    struct spsim_collective_entry per_layer[SPSIM_MAX_LAYER_COLLECTIVES];
    uint64_t tp_forward_wire_bytes_per_layer;      /**< per rank */
    uint64_t tp_backward_wire_bytes_per_layer;     /**< per rank, wgrad re-gathers included */
    uint64_t tp_recompute_wire_bytes_per_layer;    /**< per rank, full recompute only */
    uint64_t tp_wgrad_gather_wire_bytes_per_layer; /**< the SP weight-gradient re-gathers alone */
    uint64_t tp_wire_bytes_per_microbatch; /**< per rank: layers on its stage × per layer */
    uint64_t tp_wire_bytes_per_iteration;  /**< per rank: × micro-batches */
    uint64_t tp_wire_bytes_per_iteration_all_layers; /**< L × per layer × micro-batches (one TP rank
                                                        of every stage) */
    uint32_t microbatches;                           /**< gbs / (mbs · dp) */
    enum spsim_tier tp_tier;
    /* Data parallel gradient reduction (per rank, per iteration). */
    enum spsim_tier dp_tier;
    uint64_t dp_grad_bytes;             /**< gradients reduced per rank (fp32) */
    uint64_t dp_wire_bytes_per_rank;    /**< AR 2(D−1)/D, or RS+AG with the distributed optimizer
                                           (D = dp·cp) */
    uint64_t dp_rs_wire_bytes_per_rank; /**< sharded (zero >= 1): gradient ReduceScatters */
    uint64_t dp_ag_wire_bytes_per_rank; /**< sharded: parameter AllGathers */
    /* HSDP (--num-distributed-optimizer-instances R > 1): the dp_* figures above are those of
     * the replica's D/R ranks (the inner group); across the R replicas (the outer group,
     * inter_dist_opt) the gradient shard of D/R of the gradients is reduced once an iteration. */
    uint32_t dp_inner_ranks;                      /**< D/R (D without HSDP) */
    uint32_t dp_outer_ranks;                      /**< R (1 without HSDP) */
    enum spsim_tier dp_outer_tier;                /**< the outer group's links */
    uint64_t dp_outer_reduce_wire_bytes_per_rank; /**< AllReduce 2(R−1)/R of the shard, or with
                                                     outer_dp_shard its ReduceScatter (R−1)/R */
    uint64_t dp_outer_ag_wire_bytes_per_rank;     /**< outer_dp_shard: the bf16 weight shards
                                                     gathered (R−1)/R, at the first micro-batch */
    /* Context parallelism (per rank): KV exchanges of one layer, and of the stage's layers over
     * the iteration. */
    uint64_t cp_forward_wire_bytes_per_layer;
    uint64_t cp_backward_wire_bytes_per_layer;
    uint64_t cp_recompute_wire_bytes_per_layer;
    uint64_t cp_wire_bytes_per_iteration;
    enum spsim_tier cp_tier;
    /* Pipeline point-to-point (per rank, per iteration). */
    enum spsim_tier pp_tier;
    uint64_t pp_message_bytes; /**< one activation send: s·b·h·2 / t with SP's scatter */
    uint64_t
        pp_wire_bytes_per_rank; /**< sends of a middle stage per iteration, forward + backward */
    /* Mixture of experts (per rank): the token dispatch and combine of one MoE layer, and of
     * the MoE layers (MTP depths included) of the pipeline rank that runs the most of them over
     * the iteration; the tier of the widest dispatch group; the
     * expert data-parallel group (tp·cp·dp / (ep·etp)) and its gradient reduction. */
    uint64_t ep_forward_wire_bytes_per_layer;
    uint64_t ep_backward_wire_bytes_per_layer;
    uint64_t ep_recompute_wire_bytes_per_layer;
    uint64_t ep_wire_bytes_per_iteration;
    enum spsim_tier ep_tier;
    uint32_t expert_dp_ranks;
    enum spsim_tier expert_dp_tier;
    uint64_t expert_dp_grad_bytes;          /**< the experts' gradients reduced per rank */
    uint64_t expert_dp_wire_bytes_per_rank; /**< AR 2(D−1)/D, or RS + AG sharded (D = edp, or
                                               edp / R with HSDP: expert_dp_ranks) */
    /* HSDP: the experts' gradient shard all-reduced across the R replicas once an iteration
     * (2(R−1)/R of G / (edp / R)), and that group's links. */
    uint64_t expert_dp_outer_wire_bytes_per_rank;
    enum spsim_tier expert_dp_outer_tier;
};

/** Times of one iteration on the slowest pipeline stage. Seconds unless named otherwise. */
struct spsim_time_report {
    double iteration_s;
    double forward_s;    /**< forward computation of all micro-batches (critical stage) */
    double backward_s;   /**< backward computation (recompute excluded) */
    double recompute_s;  /**< recomputation (selective or full) */
    double tp_exposed_s; /**< TP communication not hidden */
    double cp_exposed_s; /**< CP exchanges not hidden behind attention */
    double pp_bubble_s;  /**< pipeline fill and drain: (p−1)/vpp micro-batch slots */
    double pp_p2p_s;     /**< exposed point-to-point sends */
    double dp_exposed_s; /**< exposed data-parallel gradient reduction */
    /** The first and last pipeline stages' AllReduce of the tied word embedding's gradient
     * (Megatron finalize_model_grads, after the DP reduction; 0 unless pp > 1 and tied). */
    double tied_embedding_allreduce_s;
    double optimizer_s;             /**< optimizer step (memory-bound; Muon's below included) */
    double offload_exposed_s;       /**< CPU offload copies not hidden behind the layers' compute */
    double ep_exposed_s;            /**< MoE token dispatch and combine (on the critical path) */
    double offload_d2h_s_per_layer; /**< one offloaded layer's copy to host memory */
    double offload_h2d_s_per_layer; /**< its reload before its backward */
    double microbatch_s;            /**< one micro-batch's forward+backward on the critical stage */
    double layer_forward_s;         /**< one layer, one micro-batch, one rank */
    double layer_backward_s;        /**< idem, backward including its recompute */
    double tokens_per_s;            /**< global batch × seq / iteration, the whole job */
    double tokens_per_s_per_gpu;    /**< tokens_per_s / GPUs, the figure to compare across sizes */
    double model_flops;    /**< per iteration, whole model (Korthikanti et al. 2022 Eq. 7, no causal
                                halving: 72·B·L·s·h²·(1 + s/(6h) + v/(12hL)) for the GPT layer) */
    double hardware_flops; /**< per iteration, with the recomputation actually done */
    /** model FLOP/s ÷ (GPUs × the dense BF16 peak), whatever the dtype: one stated peak, as
     * Megatron and Megatron-Bridge report model TFLOP/s per GPU, so MFU ranks as throughput */
    double mfu;
    double hfu;            /**< hardware FLOP/s ÷ (GPUs × the dense BF16 peak) */
    double tflops_per_gpu; /**< model FLOPs / (iteration · GPUs) / 1e12 (the 2022 formula) */
    /** Megatron-LM's current formula (training.py num_floating_point_operations: 6 FLOPs per
     * weight and token, causal attention halved, GQA, SwiGLU), what Megatron and NeMo log. */
    double model_flops_megatron;
    double tflops_per_gpu_megatron;
    /** Narayanan et al. 2021: 96·B·s·L·h²·(1 + s/(6h) + V/(16Lh)), recomputation counted. */
    double model_flops_narayanan2021;
    double tflops_per_gpu_narayanan2021;
    double hardware_tflops_per_gpu; /**< hardware FLOPs / (iteration · GPUs) / 1e12 */
    double nvlink_busy_s;           /**< per GPU, per iteration */
    double network_busy_s;          /**< per GPU, per iteration */
    double nvlink_utilisation;      /**< busy / iteration */
    double network_utilisation;
    uint32_t critical_stage; /**< the pipeline stage that sets the pace */
    /** Point-to-point time hidden behind the next model chunk (interleaved schedule with
     * overlap_p2p_comm); pp_p2p_s is what stays exposed. */
    double pp_p2p_hidden_s;
    /** The parameter AllGather's share of dp_exposed_s: after the step, or with
     * --overlap-param-gather the first forward's wait for its buckets. */
    double param_gather_exposed_s;
    /** Buckets of pipeline rank 0's first model chunk in the overlapped gradient reduction
     * (1: one bucket, the whole buffer). */
    uint32_t dp_buckets;
    /** HSDP: the collectives across the replicas (outer group) alone, per iteration: the
     * gradient shard's AllReduce (or ReduceScatter) and, with outer_dp_shard, the weight shards'
     * AllGather, and an MoE model's expert shard AllReduce; part of what dp_exposed_s shows. 0
     * without HSDP. */
    double dp_outer_s;
    /** Kernels the host launches for one transformer layer, one micro-batch, forward and
     * backward (recompute included); a CUDA graph replay counts one (engine/host.c) */
    uint32_t layer_forward_launches;
    uint32_t layer_backward_launches;
    /** The profile's host time per kernel launch (host.kernel_launch_us); 0: absent, the host
     * launch cost is not modelled */
    double kernel_launch_us;
    /** The profile's host time per framework op in eager mode beyond its launches (host.op_us:
     * Python, the dispatcher, Transformer Engine's module code); 0: absent, not modelled */
    double host_op_us;
    /** The host time per torch call beyond its launch that prices the Python outside the layers'
     * schedule (the optimizer step's, engine/opt_host.c): the profile's host.torch_call_us, or
     * host.op_us where the profile gives no torch_call_us (doc/profiles.md "host") */
    double host_torch_call_us;
    /** Wall time the critical stage's blocks take beyond their GPU time because the host
     * issues their launches more slowly (max(GPU, host) per block and phase) */
    double host_exposed_s;
    /** The host's per-iteration work in eager mode beyond the layers' schedule: the optimizer
     * step Megatron-Core runs in Python per parameter tensor (copies, clipping, FusedAdam's
     * lists, multi-tensor launches), train_step's reductions and, with log_params_norm and
     * log_num_zeros_in_grad, their statistics (engine/opt_host.c), at host_torch_call_us a
     * torch call and host.kernel_launch_us a launch, on the pipeline rank where most of it is
     * exposed; 0 without host.kernel_launch_us, for Muon and the CPU-offloaded optimizer */
    double optimizer_host_s;
    /** Of it, the wall time added to the iteration: beyond the GPU work queued after the
     * backward (exposed DP reduction, optimizer kernels), and whole after train_step's wait */
    double optimizer_host_exposed_s;
    /** The parameter tensors that rank's optimizer steps (its shard's with the distributed
     * optimizer) */
    uint32_t optimizer_host_tensors;
    /** training_log's host work on the last rank, the TensorBoard writer's (engine/log_host.c):
     * every iteration the loss accumulation, the learning rate's reduction and the scalars
     * written; every log_interval iterations the interval timer's barriers and synchronisations
     * and the loss's .item(); after train_step's last wait, so whole in the iteration; 0
     * without host.kernel_launch_us */
    double log_host_s;
    /** Of pp_p2p_s and pp_bubble_s, the host's part: each blocking transfer's calls
     * (p2p_communication.py _communicate with batch_p2p_comm and batch_p2p_sync: the receive
     * buffer, batch_isend_irecv, the waits, torch.cuda.synchronize) */
    double pp_p2p_host_s;
    /** FP8 delayed scaling: the amax AllReduces over the TP×DP×CP group after each model
     * chunk's forward and backward of every micro-batch, on the critical path (0 otherwise). */
    double fp8_amax_allreduce_s;
    /** With --overlap-moe-expert-parallel-comm: the token exchanges' time hidden under the
     * other micro-batch's computation (ep_exposed_s is what stays exposed); else 0. */
    double ep_a2a_hidden_s;
    /** The MoE routers' tokens-per-expert AllReduces of the load-balancing loss, per MoE layer
     * and micro-batch in its forward (and its recompute), on the critical stage: over TP×CP
     * for aux_loss and seq_aux_loss, over TP×DP×CP for global_aux_loss (moe_utils.py
     * get_tokens_per_expert_and_token_count, router.py _apply_global_aux_loss). */
    double moe_aux_allreduce_s;
    /** Expert bias (aux-loss-free balancing): the once-per-iteration AllReduce over TP×DP×CP
     * of the critical stage's routers' fp32 tokens-per-expert counts, 4·E B per MoE layer
     * (finalize_model_grads _update_router_expert_bias), exposed; 0 without expert bias. */
    double moe_expert_bias_allreduce_s;
    /** MFU and HFU against the peak of the GEMMs' dtype (FP8: twice BF16's on H100; equal to
     * mfu and hfu for bf16 and fp16) */
    double mfu_dtype;
    double hfu_dtype;
    /** Muon: of optimizer_s, the Newton-Schulz GEMMs (BF16, at the profile's achievable GEMM
     * rate) and the TP all-gathers of whole matrices (--muon-tp-mode duplicated) */
    double optimizer_muon_ns_s, optimizer_muon_gather_s;
    /** --optimizer-cpu-offload: of optimizer_s's inputs, the offloaded gradients' copy to the
     * host, the CPU's Adam step and the updated parameters' copy back (each alone) */
    double optimizer_d2h_s, optimizer_cpu_s, optimizer_h2d_s;
    /** The weight-gradient GEMMs' share of backward_s (critical stage): the W that the zero-
     * bubble and DualPipe schedules defer into the bubble (README "Pipeline schedules"); not
     * written to JSON or CSV */
    double wgrad_s;
};

/** Everything spsim says about one configuration. */
struct spsim_result {
    /** The configuration with defaults resolved (seq, flash_attn, grad_reduce_in_fp32, and zero
     * at least 1 with the distributed optimizer). */
    struct spsim_parallel config;
    uint32_t gpus;            /**< tp · cp · pp · dp */
    bool flash_attention;     /**< the attention kernel used (config.flash_attn resolved) */
    bool grad_reduce_in_fp32; /**< config.grad_reduce_in_fp32 resolved for the dtype */
    uint64_t padded_vocab;
    uint32_t warnings; /**< OR of enum spsim_warning */
    struct spsim_memory_report memory;
    struct spsim_comm_report comm;
    struct spsim_time_report time;
};

/**
 * Evaluate one configuration. The configuration is checked first (spsim_parallel_check()).
 * @param out  filled on success; untouched on failure
 * @return SPSIM_OK, SPSIM_ECONFIG, SPSIM_ERANGE (a byte count overflows 64 bits),
 *         SPSIM_ENUMERIC or SPSIM_EINVAL
 */
SPSIM_API int spsim_evaluate(const struct spsim_model *model, const struct spsim_hardware *hw,
                             const struct spsim_parallel *par, struct spsim_result *out,
                             struct spsim_error *err);

#ifdef __cplusplus
}
#endif

#endif
