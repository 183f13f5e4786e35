/* The result's fields by JSON path: the one list JSON, CSV and sweep rows are written from. */
#include "config.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtoa.h"
#include "internal.h"
#include "spsim/fields.h"

static const char *
recompute_name(int v)
{
    return spsim_recompute_name((enum spsim_recompute)v);
}

static const char *
dtype_name(int v)
{
    return spsim_dtype_name((enum spsim_dtype)v);
}

static const char *
fp8_recipe_name(int v)
{
    return spsim_fp8_recipe_name((enum spsim_fp8_recipe)v);
}

static const char *
attention_backend_name(int v)
{
    return spsim_attention_backend_name((enum spsim_attention_backend)v);
}

/* LoRA's targets, the mask's names joined by '+' as --lora-target-modules reads them; 0 (the
 * default, Bridge's four) "default", which calibrate --runs reads as the option left out. */
static const char *
lora_targets_name(int v)
{
    static const char *const names[16] = {"default",
                                          "linear_qkv",
                                          "linear_proj",
                                          "linear_qkv+linear_proj",
                                          "linear_fc1",
                                          "linear_qkv+linear_fc1",
                                          "linear_proj+linear_fc1",
                                          "linear_qkv+linear_proj+linear_fc1",
                                          "linear_fc2",
                                          "linear_qkv+linear_fc2",
                                          "linear_proj+linear_fc2",
                                          "linear_qkv+linear_proj+linear_fc2",
                                          "linear_fc1+linear_fc2",
                                          "linear_qkv+linear_fc1+linear_fc2",
                                          "linear_proj+linear_fc1+linear_fc2",
                                          "linear_qkv+linear_proj+linear_fc1+linear_fc2"};
    return v >= 0 && v < 16 ? names[v] : "?";
}

static const char *
cp_comm_name(int v)
{
    return spsim_cp_comm_name((enum spsim_cp_comm)v);
}

static const char *
method_name(int v)
{
    return spsim_recompute_method_name((enum spsim_recompute_method)v);
}

/* The recomputed modules of a result (config.recompute_modules, resolved: none unless
 * selective); the MoE modules' sets are formatted into a per-thread buffer. */
static const char *
modules_name(int v)
{
    static const char *const names[8] = {
        "none", "core_attn",     "layernorm",     "core_attn+layernorm",
        "mlp",  "core_attn+mlp", "layernorm+mlp", "core_attn+layernorm+mlp"};
    static _Thread_local char buf[96];
    if (v >= 8 && v < (1 << SPSIM_RMOD_COUNT_))
        return spsim_recompute_modules_format((uint32_t)v, buf, sizeof(buf));
    return v >= 0 && v < 8 ? names[v] : "?";
}

static const char *
dispatcher_name(int v)
{
    return spsim_moe_dispatcher_name((enum spsim_moe_dispatcher)v);
}

static const char *
routing_name(int v)
{
    return spsim_moe_routing_name((enum spsim_moe_routing)v);
}

static const char *
cuda_graph_impl_name(int v)
{
    return spsim_cuda_graph_impl_name((enum spsim_cuda_graph_impl)v);
}

/* config.cuda_graph_scope: "default" for none named (the implementation's default: the whole
 * layer with local or transformer_engine). */
static const char *
cuda_graph_scope_name(int v)
{
    static _Thread_local char buf[96];
    if (v == 0)
        return "default";
    return v > 0 && v < (1 << SPSIM_CGS_COUNT_)
               ? spsim_cuda_graph_scope_format((uint32_t)v, buf, sizeof(buf))
               : "?";
}

static const char *
opt_dtype_name(int v)
{
    return spsim_opt_dtype_name((enum spsim_opt_dtype)v);
}

static const char *
optimizer_name(int v)
{
    return v == SPSIM_OPTIMIZER_MUON ? "muon" : v == SPSIM_OPTIMIZER_ADAM ? "adam" : "?";
}

static const char *
tier_name(int v)
{
    return spsim_tier_name((enum spsim_tier)v);
}

/* clang-format off */
#define F(path, type, member) {path, SPSIM_FIELD_##type, offsetof(struct spsim_result, member), NULL}
#define E(path, member, fn) {path, SPSIM_FIELD_ENUM, offsetof(struct spsim_result, member), fn}
/* clang-format on */

/* Contiguous by section and sub-object: the JSON writer opens and closes objects as the
 * path prefix changes. */
static const struct spsim_field fields[] = {
    F("config.tp", U32, config.tp),
    F("config.pp", U32, config.pp),
    F("config.dp", U32, config.dp),
    F("config.vpp", U32, config.vpp),
    F("config.sp", BOOL, config.sp),
    E("config.recompute", config.recompute, recompute_name),
    F("config.mbs", U32, config.mbs),
    F("config.gbs", U64, config.gbs),
    F("config.seq", U32, config.seq),
    F("config.flash_attn", BOOL, flash_attention),
    F("config.distributed_optimizer", BOOL, config.distributed_optimizer),
    F("config.overlap_grad_reduce", BOOL, config.overlap_grad_reduce),
    E("config.dtype", config.dtype, dtype_name),
    E("config.fp8_recipe", config.fp8_recipe, fp8_recipe_name),
    F("config.fp8_param_gather", BOOL, config.fp8_param_gather),
    F("config.first_stage_layers", U32, config.first_stage_layers),
    F("config.last_stage_layers", U32, config.last_stage_layers),
    F("config.account_embedding", BOOL, config.account_embedding),
    F("config.account_loss", BOOL, config.account_loss),
    F("config.gpus", U32, gpus),
    F("config.padded_vocab", U64, padded_vocab),
    E("config.recompute_modules", config.recompute_modules, modules_name),
    E("config.recompute_method", config.recompute_method, method_name),
    F("config.recompute_layers", U32, config.recompute_layers),
    F("config.offload_layers", U32, config.offload_layers),
    F("config.cp", U32, config.cp),
    E("config.cp_comm_type", config.cp_comm_type, cp_comm_name),
    F("config.zero", U32, config.zero),
    F("config.grad_reduce_in_fp32", BOOL, grad_reduce_in_fp32),
    F("config.overlap_param_gather", BOOL, config.overlap_param_gather),
    F("config.ep", U32, config.ep),
    F("config.etp", U32, config.etp),
    E("config.moe_dispatcher", config.moe_dispatcher, dispatcher_name),
    F("config.no_overlap_p2p", BOOL, config.no_overlap_p2p),
    F("config.ddp_bucket_size", U64, config.ddp_bucket_size),
    F("config.tp_comm_overlap", BOOL, config.tp_comm_overlap),
    E("config.cuda_graph_impl", config.cuda_graph_impl, cuda_graph_impl_name),
    E("config.cuda_graph_scope", config.cuda_graph_scope, cuda_graph_scope_name),
    F("config.moe_a2a_overlap", BOOL, config.moe_a2a_overlap),
    F("config.delay_wgrad_compute", BOOL, config.delay_wgrad_compute),
    E("config.moe_routing", config.moe_routing, routing_name),
    F("config.first_last_layers_bf16", BOOL, config.first_last_layers_bf16),
    F("config.bf16_layers_start", U32, config.bf16_layers_start),
    F("config.bf16_layers_end", U32, config.bf16_layers_end),
    F("config.precision_aware_optimizer", BOOL, config.precision_aware_optimizer),
    E("config.main_grads_dtype", config.main_grads_dtype, opt_dtype_name),
    E("config.main_params_dtype", config.main_params_dtype, opt_dtype_name),
    E("config.exp_avg_dtype", config.exp_avg_dtype, opt_dtype_name),
    E("config.exp_avg_sq_dtype", config.exp_avg_sq_dtype, opt_dtype_name),
    E("config.attention_backend", config.attention_backend, attention_backend_name),
    F("config.lora_rank", U32, config.lora_rank),
    E("config.lora_targets", config.lora_targets, lora_targets_name),
    F("config.lora_dropout", F64, config.lora_dropout),
    F("config.packed_subseq_len", U32, config.packed_subseq_len),
    F("memory.activation_per_layer_bytes", U64, memory.activation_per_layer_bytes),
    F("memory.activation_modes_bytes.none", U64, memory.activation_modes_bytes[SPSIM_MODE_NONE]),
    F("memory.activation_modes_bytes.tp", U64, memory.activation_modes_bytes[SPSIM_MODE_TP]),
    F("memory.activation_modes_bytes.tp_sp", U64, memory.activation_modes_bytes[SPSIM_MODE_TP_SP]),
    F("memory.activation_modes_bytes.tp_selective", U64,
      memory.activation_modes_bytes[SPSIM_MODE_TP_SELECTIVE]),
    F("memory.activation_modes_bytes.tp_sp_selective", U64,
      memory.activation_modes_bytes[SPSIM_MODE_TP_SP_SELECTIVE]),
    F("memory.activation_modes_bytes.full", U64, memory.activation_modes_bytes[SPSIM_MODE_FULL]),
    F("memory.activation_modes_first_stage_bytes.none", U64,
      memory.activation_modes_first_stage_bytes[SPSIM_MODE_NONE]),
    F("memory.activation_modes_first_stage_bytes.tp", U64,
      memory.activation_modes_first_stage_bytes[SPSIM_MODE_TP]),
    F("memory.activation_modes_first_stage_bytes.tp_sp", U64,
      memory.activation_modes_first_stage_bytes[SPSIM_MODE_TP_SP]),
    F("memory.activation_modes_first_stage_bytes.tp_selective", U64,
      memory.activation_modes_first_stage_bytes[SPSIM_MODE_TP_SELECTIVE]),
    F("memory.activation_modes_first_stage_bytes.tp_sp_selective", U64,
      memory.activation_modes_first_stage_bytes[SPSIM_MODE_TP_SP_SELECTIVE]),
    F("memory.activation_modes_first_stage_bytes.full", U64,
      memory.activation_modes_first_stage_bytes[SPSIM_MODE_FULL]),
    F("memory.total_modes_bytes.none", U64, memory.total_modes_bytes[SPSIM_MODE_NONE]),
    F("memory.total_modes_bytes.tp", U64, memory.total_modes_bytes[SPSIM_MODE_TP]),
    F("memory.total_modes_bytes.tp_sp", U64, memory.total_modes_bytes[SPSIM_MODE_TP_SP]),
    F("memory.total_modes_bytes.tp_selective", U64,
      memory.total_modes_bytes[SPSIM_MODE_TP_SELECTIVE]),
    F("memory.total_modes_bytes.tp_sp_selective", U64,
      memory.total_modes_bytes[SPSIM_MODE_TP_SP_SELECTIVE]),
    F("memory.total_modes_bytes.full", U64, memory.total_modes_bytes[SPSIM_MODE_FULL]),
    F("memory.layers_per_stage", U32, memory.layers_per_stage),
    F("memory.layers_per_chunk", U32, memory.layers_per_chunk),
    F("memory.layers_first_stage", U32, memory.layers_first_stage),
    F("memory.layers_last_stage", U32, memory.layers_last_stage),
    F("memory.inflight_chunks_first_stage", U32, memory.inflight_chunks_first_stage),
    F("memory.interleave_factor", F64, memory.interleave_factor),
    F("memory.activation_layers_bytes", U64, memory.activation_layers_bytes),
    F("memory.activation_embedding_bytes", U64, memory.activation_embedding_bytes),
    F("memory.activation_output_bytes", U64, memory.activation_output_bytes),
    F("memory.activation_recompute_working_bytes", U64, memory.activation_recompute_working_bytes),
    F("memory.activation_first_stage_bytes", U64, memory.activation_first_stage_bytes),
    F("memory.activation_last_stage_bytes", U64, memory.activation_last_stage_bytes),
    F("memory.recomputed_layers_per_stage", U32, memory.recomputed_layers_per_stage),
    F("memory.offload_bytes_per_layer", U64, memory.offload_bytes_per_layer),
    F("memory.offload_hbm_saved_bytes", U64, memory.offload_hbm_saved_bytes),
    F("memory.offload_host_bytes", U64, memory.offload_host_bytes),
    F("memory.parameters_total", U64, memory.parameters_total),
    F("memory.parameters_active", U64, memory.parameters_active),
    F("memory.parameters_first_stage", U64, memory.parameters_first_stage),
    F("memory.parameters_last_stage", U64, memory.parameters_last_stage),
    F("memory.parameters_per_gpu", U64, memory.parameters_per_gpu),
    F("memory.weights_bytes", U64, memory.weights_bytes),
    F("memory.gradients_bytes", U64, memory.gradients_bytes),
    F("memory.optimizer_bytes", U64, memory.optimizer_bytes),
    F("memory.total_bytes", U64, memory.total_bytes),
    F("memory.peak_stage", U32, memory.peak_stage),
    F("memory.layers_peak_stage", U32, memory.layers_peak_stage),
    F("memory.activation_peak_stage_bytes", U64, memory.activation_peak_stage_bytes),
    F("memory.capacity_bytes", U64, memory.capacity_bytes),
    F("memory.hbm_bytes", U64, memory.hbm_bytes),
    F("memory.reserved_bytes", U64, memory.reserved_bytes),
    F("memory.headroom_bytes", I64, memory.headroom_bytes),
    F("memory.fits", BOOL, memory.fits),
    F("memory.expert_parameters_per_gpu", U64, memory.expert_parameters_per_gpu),
    F("memory.trainable_parameters_per_gpu", U64, memory.trainable_parameters_per_gpu),
    F("memory.activation_cp_working_bytes", U64, memory.activation_cp_working_bytes),
    F("memory.activation_logits_working_bytes", U64, memory.activation_logits_working_bytes),
    F("memory.activation_deferred_wgrad_bytes", U64, memory.activation_deferred_wgrad_bytes),
    E("comm.tp_tier", comm.tp_tier, tier_name),
    F("comm.tp_forward_wire_bytes_per_layer", U64, comm.tp_forward_wire_bytes_per_layer),
    F("comm.tp_backward_wire_bytes_per_layer", U64, comm.tp_backward_wire_bytes_per_layer),
    F("comm.tp_recompute_wire_bytes_per_layer", U64, comm.tp_recompute_wire_bytes_per_layer),
    F("comm.tp_wgrad_gather_wire_bytes_per_layer", U64, comm.tp_wgrad_gather_wire_bytes_per_layer),
    F("comm.tp_wire_bytes_per_microbatch", U64, comm.tp_wire_bytes_per_microbatch),
    F("comm.tp_wire_bytes_per_iteration", U64, comm.tp_wire_bytes_per_iteration),
    F("comm.tp_wire_bytes_per_iteration_all_layers", U64,
      comm.tp_wire_bytes_per_iteration_all_layers),
    F("comm.microbatches", U32, comm.microbatches),
    E("comm.dp_tier", comm.dp_tier, tier_name),
    F("comm.dp_grad_bytes", U64, comm.dp_grad_bytes),
    F("comm.dp_wire_bytes_per_rank", U64, comm.dp_wire_bytes_per_rank),
    E("comm.pp_tier", comm.pp_tier, tier_name),
    F("comm.pp_message_bytes", U64, comm.pp_message_bytes),
    F("comm.pp_wire_bytes_per_rank", U64, comm.pp_wire_bytes_per_rank),
    F("comm.dp_rs_wire_bytes_per_rank", U64, comm.dp_rs_wire_bytes_per_rank),
    F("comm.dp_ag_wire_bytes_per_rank", U64, comm.dp_ag_wire_bytes_per_rank),
    E("comm.cp_tier", comm.cp_tier, tier_name),
    F("comm.cp_forward_wire_bytes_per_layer", U64, comm.cp_forward_wire_bytes_per_layer),
    F("comm.cp_backward_wire_bytes_per_layer", U64, comm.cp_backward_wire_bytes_per_layer),
    F("comm.cp_recompute_wire_bytes_per_layer", U64, comm.cp_recompute_wire_bytes_per_layer),
    F("comm.cp_wire_bytes_per_iteration", U64, comm.cp_wire_bytes_per_iteration),
    E("comm.ep_tier", comm.ep_tier, tier_name),
    F("comm.ep_forward_wire_bytes_per_layer", U64, comm.ep_forward_wire_bytes_per_layer),
    F("comm.ep_backward_wire_bytes_per_layer", U64, comm.ep_backward_wire_bytes_per_layer),
    F("comm.ep_recompute_wire_bytes_per_layer", U64, comm.ep_recompute_wire_bytes_per_layer),
    F("comm.ep_wire_bytes_per_iteration", U64, comm.ep_wire_bytes_per_iteration),
    F("comm.expert_dp_ranks", U32, comm.expert_dp_ranks),
    E("comm.expert_dp_tier", comm.expert_dp_tier, tier_name),
    F("comm.expert_dp_grad_bytes", U64, comm.expert_dp_grad_bytes),
    F("comm.expert_dp_wire_bytes_per_rank", U64, comm.expert_dp_wire_bytes_per_rank),
    F("time.iteration_s", F64, time.iteration_s),
    F("time.forward_s", F64, time.forward_s),
    F("time.backward_s", F64, time.backward_s),
    F("time.recompute_s", F64, time.recompute_s),
    F("time.tp_exposed_s", F64, time.tp_exposed_s),
    F("time.pp_bubble_s", F64, time.pp_bubble_s),
    F("time.pp_p2p_s", F64, time.pp_p2p_s),
    F("time.dp_exposed_s", F64, time.dp_exposed_s),
    F("time.tied_embedding_allreduce_s", F64, time.tied_embedding_allreduce_s),
    F("time.fp8_amax_allreduce_s", F64, time.fp8_amax_allreduce_s),
    F("time.optimizer_s", F64, time.optimizer_s),
    F("time.offload_exposed_s", F64, time.offload_exposed_s),
    F("time.offload_d2h_s_per_layer", F64, time.offload_d2h_s_per_layer),
    F("time.offload_h2d_s_per_layer", F64, time.offload_h2d_s_per_layer),
    F("time.microbatch_s", F64, time.microbatch_s),
    F("time.layer_forward_s", F64, time.layer_forward_s),
    F("time.layer_backward_s", F64, time.layer_backward_s),
    F("time.tokens_per_s", F64, time.tokens_per_s),
    F("time.tokens_per_s_per_gpu", F64, time.tokens_per_s_per_gpu),
    F("time.model_flops", F64, time.model_flops),
    F("time.hardware_flops", F64, time.hardware_flops),
    F("time.mfu", F64, time.mfu),
    F("time.hfu", F64, time.hfu),
    F("time.tflops_per_gpu", F64, time.tflops_per_gpu),
    F("time.model_flops_megatron", F64, time.model_flops_megatron),
    F("time.tflops_per_gpu_megatron", F64, time.tflops_per_gpu_megatron),
    F("time.model_flops_narayanan2021", F64, time.model_flops_narayanan2021),
    F("time.tflops_per_gpu_narayanan2021", F64, time.tflops_per_gpu_narayanan2021),
    F("time.hardware_tflops_per_gpu", F64, time.hardware_tflops_per_gpu),
    F("time.nvlink_busy_s", F64, time.nvlink_busy_s),
    F("time.network_busy_s", F64, time.network_busy_s),
    F("time.nvlink_utilisation", F64, time.nvlink_utilisation),
    F("time.network_utilisation", F64, time.network_utilisation),
    F("time.critical_stage", U32, time.critical_stage),
    F("time.cp_exposed_s", F64, time.cp_exposed_s),
    F("time.ep_exposed_s", F64, time.ep_exposed_s),
    F("time.pp_p2p_hidden_s", F64, time.pp_p2p_hidden_s),
    F("time.param_gather_exposed_s", F64, time.param_gather_exposed_s),
    F("time.dp_buckets", U32, time.dp_buckets),
    F("time.layer_forward_launches", U32, time.layer_forward_launches),
    F("time.layer_backward_launches", U32, time.layer_backward_launches),
    F("time.kernel_launch_us", F64, time.kernel_launch_us),
    F("time.host_op_us", F64, time.host_op_us),
    F("time.host_torch_call_us", F64, time.host_torch_call_us),
    F("time.host_exposed_s", F64, time.host_exposed_s),
    F("time.optimizer_host_s", F64, time.optimizer_host_s),
    F("time.optimizer_host_exposed_s", F64, time.optimizer_host_exposed_s),
    F("time.optimizer_host_tensors", U32, time.optimizer_host_tensors),
    F("time.log_host_s", F64, time.log_host_s),
    F("time.pp_p2p_host_s", F64, time.pp_p2p_host_s),
    F("time.ep_a2a_hidden_s", F64, time.ep_a2a_hidden_s),
    F("time.moe_aux_allreduce_s", F64, time.moe_aux_allreduce_s),
    F("time.moe_expert_bias_allreduce_s", F64, time.moe_expert_bias_allreduce_s),
    F("time.mfu_dtype", F64, time.mfu_dtype),
    F("time.hfu_dtype", F64, time.hfu_dtype),
};

/* The "optimizer" object: Muon's and the CPU offload's terms, written only when either is on
 * (spsim_result_optimizer_shown), so Adam's documents and the default rows stay as they were;
 * `spsim sweep --columns` names them as any field (optimizer.muon_ns_s → optimizer_muon_ns_s). */
static const struct spsim_field optimizer_fields[] = {
    E("optimizer.name", config.optimizer, optimizer_name),
    F("optimizer.cpu_offload", BOOL, config.optimizer_cpu_offload),
    F("optimizer.offload_fraction", F64, config.optimizer_offload_fraction),
    F("optimizer.muon_parameters_per_gpu", U64, memory.muon_parameters_per_gpu),
    F("optimizer.muon_ns_flops_per_gpu", F64, memory.muon_ns_flops_per_gpu),
    F("optimizer.muon_tp_gather_bytes_per_gpu", F64, memory.muon_tp_gather_bytes_per_gpu),
    F("optimizer.muon_tp_gathers_per_gpu", F64, memory.muon_tp_gathers_per_gpu),
    F("optimizer.host_bytes", U64, memory.optimizer_host_bytes),
    F("optimizer.muon_ns_s", F64, time.optimizer_muon_ns_s),
    F("optimizer.muon_gather_s", F64, time.optimizer_muon_gather_s),
    F("optimizer.d2h_s", F64, time.optimizer_d2h_s),
    F("optimizer.cpu_s", F64, time.optimizer_cpu_s),
    F("optimizer.h2d_s", F64, time.optimizer_h2d_s),
};

/* The "hsdp" object (README "HSDP"): written only with --num-distributed-optimizer-instances
 * R > 1 (spsim_result_hsdp_shown), so the other documents stay as they were. */
static const struct spsim_field hsdp_fields[] = {
    F("hsdp.num_distributed_optimizer_instances", U32, config.dist_opt_instances),
    F("hsdp.outer_dp_shard", BOOL, config.outer_dp_shard),
    F("hsdp.inner_ranks", U32, comm.dp_inner_ranks),
    F("hsdp.outer_ranks", U32, comm.dp_outer_ranks),
    E("hsdp.outer_tier", comm.dp_outer_tier, tier_name),
    F("hsdp.outer_reduce_wire_bytes_per_rank", U64, comm.dp_outer_reduce_wire_bytes_per_rank),
    F("hsdp.outer_ag_wire_bytes_per_rank", U64, comm.dp_outer_ag_wire_bytes_per_rank),
    F("hsdp.expert_outer_reduce_wire_bytes_per_rank", U64,
      comm.expert_dp_outer_wire_bytes_per_rank),
    E("hsdp.expert_outer_tier", comm.expert_dp_outer_tier, tier_name),
    F("hsdp.outer_s", F64, time.dp_outer_s),
};

size_t
spsim_result_hsdp_fields(const struct spsim_field **out)
{
    *out = hsdp_fields;
    return SPSIM_ARRAY_LENGTH(hsdp_fields);
}

bool
spsim_result_hsdp_shown(const struct spsim_result *r)
{
    return r->config.dist_opt_instances > 1;
}

size_t
spsim_result_fields(const struct spsim_field **out)
{
    *out = fields;
    return SPSIM_ARRAY_LENGTH(fields);
}

size_t
spsim_result_optimizer_fields(const struct spsim_field **out)
{
    *out = optimizer_fields;
    return SPSIM_ARRAY_LENGTH(optimizer_fields);
}

bool
spsim_result_optimizer_shown(const struct spsim_result *r)
{
    return r->config.optimizer != SPSIM_OPTIMIZER_ADAM || r->config.optimizer_cpu_offload;
}

size_t
spsim_format_u64(uint64_t v, char *buf)
{
    return spsim_u64_text(v, buf);
}

size_t
spsim_format_double(double value, char *buf)
{
    return spsim_dtoa_shortest(value, buf);
}

static size_t
copy_text(const char *text, char *buf, size_t cap)
{
    size_t len = strlen(text);
    if (len >= cap)
        return 0;
    memcpy(buf, text, len + 1);
    return len;
}

size_t
spsim_field_format(const struct spsim_field *f, const struct spsim_result *r, char *buf, size_t cap)
{
    if (cap < 32)
        return 0;
    const char *p = (const char *)r + f->offset;
    switch (f->type) {
    case SPSIM_FIELD_U64: {
        uint64_t v;
        memcpy(&v, p, sizeof(v));
        return spsim_format_u64(v, buf);
    }
    case SPSIM_FIELD_U32: {
        uint32_t v;
        memcpy(&v, p, sizeof(v));
        return spsim_format_u64(v, buf);
    }
    case SPSIM_FIELD_I64: {
        int64_t v;
        memcpy(&v, p, sizeof(v));
        if (v < 0) {
            buf[0] = '-';
            return 1 + spsim_format_u64((uint64_t)0 - (uint64_t)v, buf + 1);
        }
        return spsim_format_u64((uint64_t)v, buf);
    }
    case SPSIM_FIELD_F64: {
        double v;
        memcpy(&v, p, sizeof(v));
        return spsim_format_double(v, buf);
    }
    case SPSIM_FIELD_BOOL: {
        bool v;
        memcpy(&v, p, sizeof(v));
        return copy_text(v ? "true" : "false", buf, cap);
    }
    case SPSIM_FIELD_ENUM: {
        int v;
        memcpy(&v, p, sizeof(v));
        return copy_text(f->enum_name(v), buf, cap);
    }
    }
    return 0;
}
