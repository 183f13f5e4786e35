/* `spsim query`: memory, communication and time of one configuration as a table, JSON or CSV. */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char query_help[] =
    "Usage: spsim query [OPTIONS]\n"
    "\n"
    "Activation memory (all six modes of Korthikanti et al. 2022, Table 2), weights, gradients\n"
    "and optimizer state per GPU, whether it fits, every TP/SP collective of a layer with its\n"
    "bytes, link and time, and the iteration time, MFU and HFU of one configuration.\n"
    "With no options: GPT-3 175B on DGX A100 80GB, tp 8, pp 8, vpp 3, SP, selective\n"
    "recomputation, micro-batch 1, global batch 64 (the paper's setting).\n"
    "\n"
    "Configuration:\n" CLI_CONFIG_HELP "\n"
    "Output:\n"
    "  --format F             table (default), json or csv (the header line and the row\n"
    "                         'spsim sweep' writes: model, hw, tp, pp, ..., then the other\n"
    "                         fields named by JSON path with '.' as '_') or megatron (the\n"
    "                         Megatron-LM launch line of the configuration: torchrun's world\n"
    "                         size, the model's shape, the parallel flags and the batch;\n"
    "                         --megatron-args reads it back)\n"
    "  -o, --output FILE      write to FILE atomically instead of standard output\n"
    "  -h, --help             show this help\n"
    "\n"
    "Time and cost to train (table and json):\n"
    "  --train-tokens N       a run of N tokens (15e12, 1e9 ...): whole iterations, wall days,\n"
    "                         GPU-hours and, from the profile's gpu.board_power_W, energy\n"
    "  --gpu-hour-price P     price of one GPU-hour: the run's cost = GPU-hours x P\n"
    "\n"
    "Exit status: 0 ok, 2 bad option, 3 bad profile file, 4 invalid configuration\n"
    "(Megatron-LM's rules: SP needs tp > 1, heads/kv_heads/ffn divisible by tp, layers by pp*vpp,\n"
    "global batch by mbs*dp, ...), 1 other failure.\n";

enum query_format { FORMAT_TABLE, FORMAT_JSON, FORMAT_CSV, FORMAT_MEGATRON };

static void
print_config_line(FILE *f, const struct spsim_result *r)
{
    const struct spsim_parallel *p = &r->config;
    fprintf(
        f,
        "  tp %u · pp %u · dp %u · vpp %u · SP %s · recompute %s · mbs %u · gbs %llu · seq %u · "
        "%s attention · %s\n",
        p->tp, p->pp, p->dp, p->vpp, p->sp ? "on" : "off", spsim_recompute_name(p->recompute),
        p->mbs, (unsigned long long)p->gbs, p->seq, r->flash_attention ? "flash" : "standard",
        spsim_dtype_name(p->dtype));
    char extra[160] = "";
    if (p->cp > 1)
        snprintf(extra, sizeof(extra), " · cp %u (%s)", p->cp, spsim_cp_comm_name(p->cp_comm_type));
    if (p->zero)
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " · zero %u", p->zero);
    if (p->overlap_param_gather)
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " · param AG overlapped");
    if (p->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON)
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), " · schedule %s",
                 spsim_pp_schedule_name(p->pp_schedule, p->vpp));
    if (p->microbatch_group && p->vpp > 1)
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
                 " · micro-batch groups of %u", p->microbatch_group);
    bool quantized = p->dtype == SPSIM_DTYPE_FP8 || p->dtype == SPSIM_DTYPE_NVFP4;
    if (p->first_last_layers_bf16 && quantized && (p->bf16_layers_start || p->bf16_layers_end))
        snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
                 " · BF16 layers: first %u, last %u", p->bf16_layers_start, p->bf16_layers_end);
    fprintf(f, "  %u GPUs · %u micro-batches per iteration · padded vocabulary %llu%s%s%s\n",
            r->gpus, r->comm.microbatches, (unsigned long long)r->padded_vocab,
            p->distributed_optimizer ? " · distributed optimizer" : "",
            p->overlap_grad_reduce ? " · DP reduce overlapped" : "", extra);
}

static bool
mode_selected(const struct spsim_parallel *p, int mode)
{
    switch (mode) {
    case SPSIM_MODE_NONE:
        return p->tp == 1 && p->recompute == SPSIM_RECOMPUTE_NONE;
    case SPSIM_MODE_TP:
        return p->tp > 1 && !p->sp && p->recompute == SPSIM_RECOMPUTE_NONE;
    case SPSIM_MODE_TP_SP:
        return p->sp && p->recompute == SPSIM_RECOMPUTE_NONE;
    case SPSIM_MODE_TP_SELECTIVE:
        return !p->sp && p->recompute == SPSIM_RECOMPUTE_SELECTIVE;
    case SPSIM_MODE_TP_SP_SELECTIVE:
        return p->sp && p->recompute == SPSIM_RECOMPUTE_SELECTIVE;
    case SPSIM_MODE_FULL:
        return !p->sp && p->recompute == SPSIM_RECOMPUTE_FULL;
    }
    return false;
}

static const char *
gradients_label(const struct spsim_result *r)
{
    if (r->config.zero >= 2)
        return r->grad_reduce_in_fp32 ? "gradients (fp32, sharded + 2 layers)"
                                      : "gradients (16-bit, sharded + 2 layers)";
    return r->grad_reduce_in_fp32 ? "gradients (fp32, 4 B/param)" : "gradients (16-bit, 2 B/param)";
}

static const char *
optimizer_label(const struct spsim_result *r)
{
    const struct spsim_parallel *p = &r->config;
    if (p->optimizer_cpu_offload) /* hybrid_optimizer.py: fp32 copy and moments on the GPU */
        return "optimizer (hybrid device: 12 B, kept on GPU)";
    if (p->precision_aware_optimizer) {
        static char buf[96];
        snprintf(buf, sizeof(buf), "optimizer (TE Adam: master %s, m %s, v %s)",
                 spsim_opt_dtype_name(p->main_params_dtype), spsim_opt_dtype_name(p->exp_avg_dtype),
                 spsim_opt_dtype_name(p->exp_avg_sq_dtype));
        return buf;
    }
    if (p->optimizer == SPSIM_OPTIMIZER_MUON) /* optimizer.c: 8 (+4) 2-D weights, Adam's rest */
        return p->distributed_optimizer || p->zero ? "optimizer (Muon 8 B + Adam, over dp·cp)"
                                                   : "optimizer (Muon 8 B + Adam 12 B)";
    if (!r->grad_reduce_in_fp32)
        return p->distributed_optimizer || p->zero ? "optimizer (Adam + fp32 grads, 16/(dp·cp) B)"
                                                   : "optimizer (Adam + fp32 grads, 16 B/param)";
    if (p->distributed_optimizer || p->zero)
        return p->cp > 1 ? "optimizer (fp32 Adam, 12/(dp·cp) B/param)"
                         : "optimizer (fp32 Adam, 12/dp B/param)";
    return "optimizer (fp32 Adam, 12 B/param)";
}

/* The first stage's layers in flight; with uneven stages, what each end builds and the most
 * loaded rank. */
static void
print_stage_note(FILE *f, const struct spsim_result *r)
{
    const struct spsim_memory_report *m = &r->memory;
    const struct spsim_parallel *p = &r->config;
    bool uneven = p->first_stage_layers || p->last_stage_layers || p->account_embedding ||
                  p->account_loss || p->pipeline_layout;
    if (!uneven)
        fprintf(f,
                "  (first stage: %u of %u layers' chunks in flight, %u layers each = %.4f × L;"
                " flash attention drops the s² terms)\n",
                m->inflight_chunks_first_stage, m->layers_per_stage * r->config.pp,
                m->layers_per_chunk, m->interleave_factor);
    else
        fprintf(
            f,
            "  (uneven stages: rank 0 builds %u layers and holds %llu in flight = %.4f × L; "
            "rank %u builds %u; the most loaded rank %u builds %u)\n",
            m->layers_first_stage,
            (unsigned long long)(m->activation_per_layer_bytes
                                     ? m->activation_layers_bytes / m->activation_per_layer_bytes
                                     : 0),
            m->interleave_factor, p->pp - 1, m->layers_last_stage, m->peak_stage,
            m->layers_peak_stage);
}

static void
print_memory(FILE *f, const struct spsim_result *r)
{
    const struct spsim_memory_report *m = &r->memory;
    char a[32], b[32], c[32];
    static const char *const formula[SPSIM_MODE_COUNT] = {"sbh(34 + 5as/h)",
                                                          "sbh(10 + 24/t + 5as/(ht))",
                                                          "sbh(34/t + 5as/(ht))",
                                                          "sbh(10 + 24/t)",
                                                          "34sbh/t",
                                                          "2sbh"};
    fprintf(f, "\nActivation memory by mode (one TP rank; Table 2 rows at this t, s, b)\n");
    fprintf(f, "  %-17s %-27s %14s %16s %14s  %s\n", "mode", "paper formula", "per layer",
            "first stage", "total/GPU", "fits");
    for (int i = 0; i < SPSIM_MODE_COUNT; i++) {
        bool fits = m->total_modes_bytes[i] <= m->capacity_bytes;
        fprintf(f, "  %-17s %-27s %14s %16s %14s  %s%s\n", spsim_act_mode_name(i), formula[i],
                fmt_bytes(a, sizeof(a), (double)m->activation_modes_bytes[i]),
                fmt_bytes(b, sizeof(b), (double)m->activation_modes_first_stage_bytes[i]),
                fmt_bytes(c, sizeof(c), (double)m->total_modes_bytes[i]), fits ? "yes" : "no",
                mode_selected(&r->config, i) ? "   <- this config" : "");
    }
    print_stage_note(f, r);
    fprintf(f, "\nMemory per GPU (stage %u, the most loaded)\n", m->peak_stage);
    fprintf(f, "  %-44s %14s\n", "activations per layer (this config)",
            fmt_bytes(a, sizeof(a), (double)m->activation_per_layer_bytes));
    fprintf(f, "  %-44s %14s\n", "activations, layers in flight (stage 0)",
            fmt_bytes(a, sizeof(a), (double)m->activation_layers_bytes));
    fprintf(f, "  %-44s %14s\n", "activations, embedding dropout (stage 0)",
            fmt_bytes(a, sizeof(a), (double)m->activation_embedding_bytes));
    fprintf(f, "  %-44s %14s\n", "activations, output layer and logits (p = 1)",
            fmt_bytes(a, sizeof(a), (double)m->activation_output_bytes));
    fprintf(f, "  %-44s %14s\n", "activations, loss working set (last stage)",
            fmt_bytes(a, sizeof(a), (double)m->activation_logits_working_bytes));
    if (r->config.defer_embedding_wgrad_compute)
        fprintf(f, "  %-44s %14s\n", "activations, deferred output wgrads (last)",
                fmt_bytes(a, sizeof(a), (double)m->activation_deferred_wgrad_bytes));
    fprintf(f, "  %-44s %14s\n", "activations, full-recompute working set",
            fmt_bytes(a, sizeof(a), (double)m->activation_recompute_working_bytes));
    if (r->config.cp > 1)
        fprintf(f, "  %-44s %14s\n", "activations, CP exchange buffers",
                fmt_bytes(a, sizeof(a), (double)m->activation_cp_working_bytes));
    fprintf(f, "  %-44s %14s\n", "activations, first stage",
            fmt_bytes(a, sizeof(a), (double)m->activation_first_stage_bytes));
    fprintf(f, "  %-44s %14s\n", "activations, last stage",
            fmt_bytes(a, sizeof(a), (double)m->activation_last_stage_bytes));
    fprintf(f, "  %-44s %14.4g\n", "parameters on this GPU", (double)m->parameters_per_gpu);
    if (m->expert_parameters_per_gpu)
        fprintf(f, "  %-44s %14.4g\n", "  of which routed experts (over expert DP)",
                (double)m->expert_parameters_per_gpu);
    if (m->trainable_parameters_per_gpu != m->parameters_per_gpu) /* LoRA: the base frozen */
        fprintf(f, "  %-44s %14.4g\n", "  + LoRA adapters (all that is trained)",
                (double)m->trainable_parameters_per_gpu);
    fprintf(f, "  %-44s %14s\n",
            r->config.zero >= 3 ? "weights (bf16, sharded + 2 layers gathered)"
                                : "weights (bf16, 2 B/param)",
            fmt_bytes(a, sizeof(a), (double)m->weights_bytes));
    fprintf(f, "  %-44s %14s\n", gradients_label(r),
            fmt_bytes(a, sizeof(a), (double)m->gradients_bytes));
    fprintf(f, "  %-44s %14s\n", optimizer_label(r),
            fmt_bytes(a, sizeof(a), (double)m->optimizer_bytes));
    if (r->config.optimizer_cpu_offload)
        fprintf(f, "  %-44s %14s\n", "  + offloaded to pinned host memory",
                fmt_bytes(a, sizeof(a), (double)m->optimizer_host_bytes));
    fprintf(f, "  %-44s %14s of %s: %s (%s %s)\n", "total",
            fmt_bytes(a, sizeof(a), (double)m->total_bytes),
            fmt_bytes(b, sizeof(b), (double)m->capacity_bytes), m->fits ? "fits" : "DOES NOT FIT",
            fmt_bytes(c, sizeof(c),
                      (double)(m->headroom_bytes < 0 ? -m->headroom_bytes : m->headroom_bytes)),
            m->fits ? "free" : "over");
    fprintf(f, "  %-44s %14s of %s reported (CUDA context, cuBLAS, NCCL, fragmentation)\n",
            "reserved, not for tensors", fmt_bytes(a, sizeof(a), (double)m->reserved_bytes),
            fmt_bytes(b, sizeof(b), (double)m->hbm_bytes));
    if (m->parameters_active != m->parameters_total)
        fprintf(f, "  model parameters: %.4g, %.4g active per token (vocabulary padded)\n",
                (double)m->parameters_total, (double)m->parameters_active);
    else
        fprintf(f, "  model parameters: %.4g (vocabulary padded)\n", (double)m->parameters_total);
}

/* HSDP's bytes across the replicas: the gradient shard's, then with the outer sharding
 * ", weight shards" and the weight shard's gather. */
static const char *
fmt_outer(char *buf, size_t cap, uint64_t reduce, uint64_t gather)
{
    char a[32], b[32];
    fmt_bytes(a, sizeof(a), (double)reduce);
    if (gather)
        snprintf(buf, cap, "%s, weight shards %s", a, fmt_bytes(b, sizeof(b), (double)gather));
    else
        snprintf(buf, cap, "%s", a);
    return buf;
}

/* Context parallelism's exchanges and the sharded data-parallel traffic, when configured. */
static void
print_cp_sharding(FILE *f, const struct spsim_result *r)
{
    const struct spsim_comm_report *c = &r->comm;
    const struct spsim_parallel *p = &r->config;
    char a[32], b[32], t[32];
    if (p->cp > 1)
        fprintf(f,
                "  CP %s over %u ranks (%s): per layer and rank forward %s, backward %s, "
                "recompute %s\n",
                spsim_cp_comm_name(p->cp_comm_type), p->cp, spsim_tier_name(c->cp_tier),
                fmt_bytes(a, sizeof(a), (double)c->cp_forward_wire_bytes_per_layer),
                fmt_bytes(b, sizeof(b), (double)c->cp_backward_wire_bytes_per_layer),
                fmt_bytes(t, sizeof(t), (double)c->cp_recompute_wire_bytes_per_layer));
    char over[96];
    if (c->dp_outer_ranks > 1)
        snprintf(over, sizeof(over), "each HSDP replica's %u of dp·cp = %u", c->dp_inner_ranks,
                 p->dp * p->cp);
    else
        snprintf(over, sizeof(over), "dp·cp = %u", p->dp * p->cp);
    if (p->zero || (p->distributed_optimizer && p->cp > 1) || c->dp_outer_ranks > 1)
        fprintf(f, "  sharded over %s (zero %u): gradient RS %s, parameter AG %s per rank\n", over,
                p->zero ? p->zero : 1u,
                fmt_bytes(a, sizeof(a), (double)c->dp_rs_wire_bytes_per_rank),
                fmt_bytes(b, sizeof(b), (double)c->dp_ag_wire_bytes_per_rank));
    if (c->dp_outer_ranks > 1)
        fprintf(f, "  across the %u replicas: gradient shard %s on the wire per rank (%s)\n",
                c->dp_outer_ranks,
                fmt_outer(over, sizeof(over), c->dp_outer_reduce_wire_bytes_per_rank,
                          c->dp_outer_ag_wire_bytes_per_rank),
                spsim_tier_name(c->dp_outer_tier));
}

/* A collective whose exposed time exceeds its own: TE userbuffers' pipelined ReduceScatter
 * (timing.c ub_cost) runs its GEMM in chunks on the SMs the communication leaves, and that
 * slowdown is the collective's cost too. */
static void
print_exposed_note(FILE *f, const struct spsim_result *r)
{
    const struct spsim_comm_report *c = &r->comm;
    for (uint32_t i = 0; i < c->per_layer_count; i++)
        if (c->per_layer[i].exposed_s > c->per_layer[i].time_s) {
            fprintf(f,
                    "  exposed above time: with TE userbuffers the GEMM beside the collective runs "
                    "in chunks on the SMs the communication leaves; what that costs the GEMM "
                    "counts as the collective's exposed time\n");
            return;
        }
}

static void
print_comm(FILE *f, const struct spsim_result *r)
{
    const struct spsim_comm_report *c = &r->comm;
    char a[32], b[32], t[32], d[32];
    fprintf(f, "\n%s of one layer, one rank (group of %u, %s)\n",
            r->config.cp > 1 ? "TP collectives and CP exchanges" : "TP collectives", r->config.tp,
            spsim_tier_name(c->tp_tier));
    if (c->per_layer_count == 0)
        fprintf(f, "  none (tp = 1)\n");
    else
        fprintf(f, "  %-9s %-14s %-56s %11s %11s %-8s %10s %10s\n", "phase", "collective", "site",
                "message", "wire/rank", "beside", "time", "exposed");
    for (uint32_t i = 0; i < c->per_layer_count; i++) {
        const struct spsim_collective_entry *e = &c->per_layer[i];
        char x[32];
        fprintf(f, "  %-9s %-14s ", spsim_phase_name(e->phase), spsim_coll_op_name(e->op));
        fput_padded(f, e->site, 56);
        fprintf(f, " %11s %11s %-8s %10s %10s\n", fmt_bytes(a, sizeof(a), (double)e->message_bytes),
                fmt_bytes(b, sizeof(b), (double)e->wire_bytes_per_rank),
                e->overlap == SPSIM_OVERLAP_NONE ? "-" : spsim_overlap_name(e->overlap),
                fmt_time(t, sizeof(t), e->time_s), fmt_time(x, sizeof(x), e->exposed_s));
    }
    print_exposed_note(f, r);
    fprintf(f,
            "  wire bytes per layer and rank: forward %s, backward %s (wgrad re-gathers %s), "
            "recompute %s\n",
            fmt_bytes(a, sizeof(a), (double)c->tp_forward_wire_bytes_per_layer),
            fmt_bytes(b, sizeof(b), (double)c->tp_backward_wire_bytes_per_layer),
            fmt_bytes(t, sizeof(t), (double)c->tp_wgrad_gather_wire_bytes_per_layer),
            fmt_bytes(d, sizeof(d), (double)c->tp_recompute_wire_bytes_per_layer));
    fprintf(
        f,
        "  per rank: %s per micro-batch, %s per iteration; all %u layers × %u micro-batches: %s\n",
        fmt_bytes(a, sizeof(a), (double)c->tp_wire_bytes_per_microbatch),
        fmt_bytes(b, sizeof(b), (double)c->tp_wire_bytes_per_iteration),
        r->memory.layers_per_stage * r->config.pp, c->microbatches,
        fmt_bytes(t, sizeof(t), (double)c->tp_wire_bytes_per_iteration_all_layers));
    print_cp_sharding(f, r);
    fprintf(f, "  DP gradient reduction: %s of %s gradients, %s on the wire per rank (%s)\n",
            fmt_bytes(a, sizeof(a), (double)c->dp_grad_bytes),
            r->grad_reduce_in_fp32 ? "fp32" : "16-bit",
            fmt_bytes(b, sizeof(b), (double)c->dp_wire_bytes_per_rank),
            spsim_tier_name(c->dp_tier));
    fprintf(f, "  PP point-to-point: %s per send, %s per rank per iteration (%s)\n",
            fmt_bytes(a, sizeof(a), (double)c->pp_message_bytes),
            fmt_bytes(b, sizeof(b), (double)c->pp_wire_bytes_per_rank),
            spsim_tier_name(c->pp_tier));
    if (c->expert_dp_ranks == 0) /* a dense model */
        return;
    fprintf(f,
            "  MoE dispatch and combine (%s, ep %u, etp %u): %s forward, %s backward per MoE "
            "layer and rank, %s per iteration (%s; balanced routing)\n",
            spsim_moe_dispatcher_name(r->config.moe_dispatcher), r->config.ep, r->config.etp,
            fmt_bytes(a, sizeof(a), (double)c->ep_forward_wire_bytes_per_layer),
            fmt_bytes(b, sizeof(b), (double)c->ep_backward_wire_bytes_per_layer),
            fmt_bytes(t, sizeof(t), (double)c->ep_wire_bytes_per_iteration),
            spsim_tier_name(c->ep_tier));
    fprintf(f, "  expert DP gradient reduction: %s over %u ranks, %s on the wire per rank (%s)\n",
            fmt_bytes(a, sizeof(a), (double)c->expert_dp_grad_bytes), c->expert_dp_ranks,
            fmt_bytes(b, sizeof(b), (double)c->expert_dp_wire_bytes_per_rank),
            spsim_tier_name(c->expert_dp_ranks > 1 ? c->expert_dp_tier : SPSIM_TIER_LOCAL));
    char outer[96];
    if (c->dp_outer_ranks > 1)
        fprintf(f,
                "  expert gradient shard across the %u HSDP replicas: %s on the wire per rank "
                "(%s)\n",
                c->dp_outer_ranks,
                fmt_outer(outer, sizeof(outer), c->expert_dp_outer_wire_bytes_per_rank,
                          c->expert_dp_outer_ag_wire_bytes_per_rank),
                spsim_tier_name(c->expert_dp_outer_tier));
}

/* The host's kernel launches, when CUDA graphs are asked or the profile prices a launch. */
static void
print_host(FILE *f, const struct spsim_result *r)
{
    const struct spsim_time_report *t = &r->time;
    char a[32], scope[96];
    if (r->config.cuda_graph_impl == SPSIM_CUDA_GRAPH_NONE && t->kernel_launch_us <= 0)
        return;
    spsim_cuda_graph_scope_format(r->config.cuda_graph_scope, scope, sizeof(scope));
    fprintf(f, "  host launches per layer: %u forward, %u backward (CUDA graphs %s%s%s)\n",
            t->layer_forward_launches, t->layer_backward_launches,
            spsim_cuda_graph_impl_name(r->config.cuda_graph_impl), scope[0] ? " " : "", scope);
    if (t->kernel_launch_us > 0 && t->host_op_us > 0)
        fprintf(f,
                "  at %.4g us a launch and %.4g us a framework op, host-bound time beyond the "
                "GPU's: %s\n",
                t->kernel_launch_us, t->host_op_us, fmt_time(a, sizeof(a), t->host_exposed_s));
    else if (t->kernel_launch_us > 0)
        fprintf(f, "  at %.4g us a launch, host-bound time beyond the GPU's: %s\n",
                t->kernel_launch_us, fmt_time(a, sizeof(a), t->host_exposed_s));
    else
        fprintf(f, "  host launch cost not modelled: no sourced figure (host.kernel_launch_us)\n");
    if (t->optimizer_host_s > 0)
        fprintf(f,
                "  optimizer step and training loop on the host: %s for %u parameter tensors "
                "at %.4g us a torch call, %s of it beyond the GPU's work\n",
                fmt_time(a, sizeof(a), t->optimizer_host_s), t->optimizer_host_tensors,
                t->host_torch_call_us, fmt_time(scope, sizeof(scope), t->optimizer_host_exposed_s));
    if (t->pp_p2p_host_s > 0)
        fprintf(f,
                "  synchronised pipeline transfers' host calls (in the sends and the bubble): "
                "%s\n",
                fmt_time(a, sizeof(a), t->pp_p2p_host_s));
}

/* What the pipeline and data-parallel overlaps hide and leave exposed, where they run. */
static void
print_overlaps(FILE *f, const struct spsim_result *r)
{
    const struct spsim_time_report *t = &r->time;
    char a[32], b[32];
    if (t->pp_p2p_hidden_s > 0)
        fprintf(f, "  pipeline sends beside the next model chunk: %s hidden, %s exposed\n",
                fmt_time(a, sizeof(a), t->pp_p2p_hidden_s), fmt_time(b, sizeof(b), t->pp_p2p_s));
    if (r->config.overlap_grad_reduce && t->dp_buckets > 0)
        fprintf(
            f, "  DP reduction in %u bucket%s of %llu parameters (pipeline rank 0's first chunk)\n",
            t->dp_buckets, t->dp_buckets == 1 ? "" : "s",
            (unsigned long long)r->config.ddp_bucket_size);
    if (t->param_gather_exposed_s > 0)
        fprintf(f, "  of the exposed DP time, the parameter AllGather %s: %s\n",
                r->config.overlap_param_gather ? "(first forward's wait)" : "(after the step)",
                fmt_time(a, sizeof(a), t->param_gather_exposed_s));
    if (r->config.moe_a2a_overlap)
        fprintf(f,
                "  MoE all-to-all beside the other micro-batch's computation%s: %s hidden, %s "
                "exposed\n",
                r->config.delay_wgrad_compute ? " (delayed wgrad)" : "",
                fmt_time(a, sizeof(a), t->ep_a2a_hidden_s),
                fmt_time(b, sizeof(b), t->ep_exposed_s));
}

/* Throughput, MFU and HFU: against the dense BF16 peak (one stated peak, whatever the dtype),
 * beside the dtype's own peak when it differs; why HFU can be below MFU. */
static void
print_utilisation(FILE *f, const struct spsim_result *r)
{
    const struct spsim_time_report *t = &r->time;
    fprintf(f,
            "  %.4g tokens/s (%.4g per GPU) · %.1f TFLOP/s per GPU · MFU %.1f%% · HFU %.1f%% "
            "of the dense BF16 peak (%.4g TFLOP/s)\n",
            t->tokens_per_s, t->tokens_per_s_per_gpu, t->tflops_per_gpu, 100 * t->mfu, 100 * t->hfu,
            t->tflops_per_gpu / t->mfu);
    if (t->mfu_dtype != t->mfu)
        fprintf(f, "  against the %s peak (%.4g TFLOP/s): MFU %.1f%% · HFU %.1f%%\n",
                spsim_dtype_name(r->config.dtype), t->tflops_per_gpu / t->mfu_dtype,
                100 * t->mfu_dtype, 100 * t->hfu_dtype);
    if (t->hfu < t->mfu && r->flash_attention)
        fprintf(f,
                "  HFU below MFU: the model FLOPs count attention's whole s×s scores (Korthikanti "
                "2022 Eq. 7), the hardware FLOPs what the kernels run (flash attention the causal "
                "half%s)\n",
                r->config.recompute == SPSIM_RECOMPUTE_NONE ? "" : ", recomputation included");
    else if (t->hfu < t->mfu)
        fprintf(f, "  HFU below MFU: the hardware FLOPs are what the kernels run, the model FLOPs "
                   "the 2022 formula's (Korthikanti 2022 Eq. 7)\n");
}

static void
print_time(FILE *f, const struct spsim_result *r)
{
    const struct spsim_time_report *t = &r->time;
    char a[32], b[32];
    fprintf(f, "\nTime per iteration (critical stage %u)\n", t->critical_stage);
    /* The always-shown lines, then those of mechanisms that apply to this configuration. */
    const struct {
        const char *name;
        double v;
        bool shown;
    } rows[] = {
        {"forward computation", t->forward_s, true},
        {"backward computation", t->backward_s, true},
        {"recomputation", t->recompute_s, true},
        {"exposed TP communication", t->tp_exposed_s, true},
        {"pipeline bubble", t->pp_bubble_s, true},
        {"pipeline point-to-point", t->pp_p2p_s, true},
        {"exposed DP gradient reduction", t->dp_exposed_s, true},
        {"tied-embedding AllReduce", t->tied_embedding_allreduce_s, true},
        {"optimizer step", t->optimizer_s, true},
        {"  of which Muon's Newton-Schulz GEMMs", t->optimizer_muon_ns_s,
         t->optimizer_muon_ns_s > 0},
        {"  of which Muon's TP gathers", t->optimizer_muon_gather_s,
         t->optimizer_muon_gather_s > 0},
        {"  offload: gradients to the host", t->optimizer_d2h_s, t->optimizer_d2h_s > 0},
        {"  offload: the CPU's Adam step", t->optimizer_cpu_s, t->optimizer_cpu_s > 0},
        {"  offload: parameters back", t->optimizer_h2d_s, t->optimizer_h2d_s > 0},
        {"exposed CP exchanges", t->cp_exposed_s, r->config.cp > 1},
        {"MoE aux-loss AllReduces", t->moe_aux_allreduce_s, t->moe_aux_allreduce_s > 0},
        {"MoE expert-bias AllReduce", t->moe_expert_bias_allreduce_s,
         t->moe_expert_bias_allreduce_s > 0},
        {"MoE dispatch and combine", t->ep_exposed_s, t->ep_exposed_s > 0},
        {"host-bound kernel launches", t->host_exposed_s, t->host_exposed_s > 0},
        {"optimizer step on the host", t->optimizer_host_exposed_s,
         t->optimizer_host_exposed_s > 0},
        {"training_log on the host", t->log_host_s, t->log_host_s > 0},
        {"FP8 amax AllReduces (delayed)", t->fp8_amax_allreduce_s, t->fp8_amax_allreduce_s > 0}};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (rows[i].shown)
            fprintf(f, "  %-32s %12s  %5.1f%%\n", rows[i].name, fmt_time(a, sizeof(a), rows[i].v),
                    100.0 * rows[i].v / t->iteration_s);
    fprintf(f, "  %-32s %12s\n", "iteration", fmt_time(a, sizeof(a), t->iteration_s));
    print_overlaps(f, r);
    print_host(f, r);
    fprintf(f, "  one layer, one micro-batch: forward %s, backward %s (recompute included)\n",
            fmt_time(a, sizeof(a), t->layer_forward_s),
            fmt_time(b, sizeof(b), t->layer_backward_s));
    print_utilisation(f, r);
    fprintf(f,
            "  model TFLOP/s per GPU by formula: %.1f Megatron-LM today (causal attention "
            "halved), %.1f Korthikanti 2022, %.1f Narayanan 2021; hardware %.1f TFLOP/s\n",
            t->tflops_per_gpu_megatron, t->tflops_per_gpu, t->tflops_per_gpu_narayanan2021,
            t->hardware_tflops_per_gpu);
    fprintf(f, "  link busy per GPU: NVLink %s (%.0f%%), network %s (%.0f%%)\n",
            fmt_time(a, sizeof(a), t->nvlink_busy_s), 100 * t->nvlink_utilisation,
            fmt_time(b, sizeof(b), t->network_busy_s), 100 * t->network_utilisation);
}

/* Fine-grained recomputation and CPU offload, printed only when they are used. */
static void
print_recompute_offload(FILE *f, const struct spsim_result *r)
{
    const struct spsim_parallel *p = &r->config;
    const struct spsim_memory_report *m = &r->memory;
    const struct spsim_time_report *t = &r->time;
    char a[32], b[32], c[64];
    bool modules =
        p->recompute == SPSIM_RECOMPUTE_SELECTIVE && p->recompute_modules != SPSIM_RMOD_CORE_ATTN;
    if (modules || p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT || p->offload_layers)
        fprintf(f, "\nRecomputation and offload\n");
    if (modules)
        fprintf(f, "  selective recompute of %s\n",
                spsim_recompute_modules_format(p->recompute_modules, c, sizeof(c)));
    if (p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT)
        fprintf(f, "  full recompute, %s method, %u layers: %u layers replayed per stage\n",
                spsim_recompute_method_name(p->recompute_method), p->recompute_layers,
                m->recomputed_layers_per_stage);
    if (!p->offload_layers)
        return;
    fprintf(f,
            "  CPU offload of %u layers: %s per layer each way, %s of HBM freed, %s pinned host "
            "memory per GPU\n",
            p->offload_layers, fmt_bytes(a, sizeof(a), (double)m->offload_bytes_per_layer),
            fmt_bytes(b, sizeof(b), (double)m->offload_hbm_saved_bytes),
            fmt_bytes(c, sizeof(c), (double)m->offload_host_bytes));
    fprintf(f, "  copies per layer: to host %s, back %s; exposed per iteration %s\n",
            fmt_time(a, sizeof(a), t->offload_d2h_s_per_layer),
            fmt_time(b, sizeof(b), t->offload_h2d_s_per_layer),
            fmt_time(c, sizeof(c), t->offload_exposed_s));
}

static void
write_table(FILE *f, const struct spsim_result *r, const char *model, const char *hw)
{
    fprintf(f, "spsim query: %s on %s\n", model, hw);
    print_config_line(f, r);
    print_memory(f, r);
    print_recompute_offload(f, r);
    print_comm(f, r);
    print_time(f, r);
}

/* --train-tokens: the run's wall time, GPU-hours, energy and cost (spsim_train_plan_make). */
static void
print_train_plan(FILE *f, const struct spsim_train_plan *p)
{
    char a[32];
    fprintf(f, "\nTime and cost to train %.4g tokens\n", p->train_tokens);
    fprintf(f, "  iterations of %.4g tokens%27s%" PRIu64 "\n", p->tokens_per_iteration, "",
            p->iterations);
    fprintf(f, "  wall time%40s%s (%.3f days)\n", "", fmt_time(a, sizeof(a), p->wall_s),
            p->wall_days);
    fprintf(f, "  GPU-hours%40s%.6g\n", "", p->gpu_hours);
    if (p->energy_available)
        fprintf(f, "  energy at %g W per GPU (board maximum)%11s%.6g kWh\n", p->board_power_W, "",
                p->energy_kWh);
    else
        fprintf(f, "  energy not given: %s\n", p->energy_refused);
    if (p->gpu_hour_price > 0)
        fprintf(f, "  cost at %g per GPU-hour%26s%.6g\n", p->gpu_hour_price, "", p->cost);
}

/* The "train" object of --train-tokens (the fields of struct spsim_train_plan), written as the
 * last member of the result document. */
static void
write_train_json(FILE *f, const struct spsim_train_plan *p)
{
    struct jw w;
    jw_init(&w, f, true);
    w.depth = 1; /* inside the document, after its last member */
    jw_begin_object(&w, "train");
    jw_double(&w, "train_tokens", p->train_tokens);
    jw_double(&w, "tokens_per_iteration", p->tokens_per_iteration);
    jw_u64(&w, "iterations", p->iterations);
    jw_double(&w, "wall_s", p->wall_s);
    jw_double(&w, "wall_days", p->wall_days);
    jw_double(&w, "gpu_hours", p->gpu_hours);
    if (p->energy_available) {
        jw_double(&w, "board_power_W", p->board_power_W);
        jw_double(&w, "energy_kWh", p->energy_kWh);
    } else {
        jw_raw(&w, "board_power_W", "null");
        jw_raw(&w, "energy_kWh", "null");
        jw_string(&w, "energy_refused", p->energy_refused);
    }
    jw_double(&w, "gpu_hour_price", p->gpu_hour_price);
    jw_double(&w, "cost", p->cost);
    jw_end_object(&w);
}

/* --pp-schedule other than Megatron's: the "pp_schedule" object, the schedule's name, what it
 * holds and overlaps (README "Pipeline schedules"). Megatron's schedules write none, so their
 * documents stay as they were. */
static void
write_schedule_json(FILE *f, const struct spsim_result *r)
{
    enum spsim_pp_schedule s = r->config.pp_schedule;
    struct jw w;
    jw_init(&w, f, true);
    w.depth = 1; /* inside the document, after its last member */
    jw_begin_object(&w, "pp_schedule");
    jw_string(&w, "name", spsim_pp_schedule_name(s, r->config.vpp));
    jw_u64(&w, "parameter_copies", s == SPSIM_PP_SCHEDULE_DUALPIPE ? 2 : 1);
    jw_u64(&w, "inflight_chunks_first_stage", r->memory.inflight_chunks_first_stage);
    jw_double(&w, "pp_bubble_s", r->time.pp_bubble_s);
    jw_string(&w, "overlap",
              s == SPSIM_PP_SCHEDULE_DUALPIPE || s == SPSIM_PP_SCHEDULE_DUALPIPEV
                  ? "each forward beside another micro-batch's backward (EP all-to-all hidden); "
                    "weight gradients deferred into the bubble"
                  : "weight gradients deferred into the bubble");
    jw_end_object(&w);
}

/* The library's document (spsim_result_to_json), shared with the Python module; with
 * --train-tokens a "train" object, with --megatron-log a "measured" one, with --pp-schedule
 * other than Megatron's a "pp_schedule" one, added at the end. */
static int
write_json(FILE *f, const struct spsim_result *r, const char *model, const char *hw,
           const struct spsim_train_plan *plan, const struct cli_measured *measured)
{
    bool schedule = r->config.pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON;
    char *doc = NULL;
    struct spsim_error err = {0};
    if (spsim_result_to_json(r, model, hw, &doc, &err) != SPSIM_OK)
        return cli_fail(&err);
    size_t n = strlen(doc);
    if ((plan || measured || schedule) && n >= 3 && strcmp(doc + n - 3, "\n}\n") == 0) {
        doc[n - 3] = '\0'; /* the document ends "  }\n}\n": reopen it after its last object */
        fputs(doc, f);
        if (schedule)
            write_schedule_json(f, r);
        if (plan)
            write_train_json(f, plan);
        if (measured) {
            struct jw w;
            jw_init(&w, f, true);
            w.depth = 1; /* inside the document, after its last member */
            cli_measured_json(&w, measured, r);
        }
        fputs("\n}\n", f);
    } else {
        fputs(doc, f);
    }
    free(doc);
    return EXIT_OK;
}

/* The header and the row 'spsim sweep' writes for this configuration. */
static int
write_csv(FILE *f, const struct spsim_result *r, const char *model, const char *hw)
{
    size_t cap = SPSIM_ROW_SIZE(strlen(model), strlen(hw));
    char *buf = malloc(cap);
    if (!buf)
        return cli_error(EXIT_RUNTIME, "out of memory");
    size_t n = spsim_row_header(SPSIM_ROW_CSV, buf, cap);
    fwrite(buf, 1, n, f);
    n = spsim_row_format(SPSIM_ROW_CSV, model, hw, r, buf, cap);
    fwrite(buf, 1, n, f);
    free(buf);
    return n ? EXIT_OK : cli_error(EXIT_RUNTIME, "out of memory");
}

struct query_args {
    enum query_format format;
    const char *output;
    double train_tokens, gpu_hour_price; /* 0: not given */
};

static int
parse_option(void *ctx, int opt, const char *arg, const char *current)
{
    struct query_args *a = ctx;
    (void)current;
    if (opt == 'o') {
        a->output = arg;
    } else if (opt == 't') {
        return cli_parse_double("--train-tokens", arg, 1, 1e18, &a->train_tokens);
    } else if (opt == 'p') {
        return cli_parse_double("--gpu-hour-price", arg, 0, 1e6, &a->gpu_hour_price);
    } else if (strcmp(arg, "table") == 0) {
        a->format = FORMAT_TABLE;
    } else if (strcmp(arg, "json") == 0) {
        a->format = FORMAT_JSON;
    } else if (strcmp(arg, "csv") == 0) {
        a->format = FORMAT_CSV;
    } else if (strcmp(arg, "megatron") == 0) {
        a->format = FORMAT_MEGATRON;
    } else {
        return cli_usage_error("query", "--format: %s is not one of table, json, csv, megatron",
                               CLI_Q(arg));
    }
    return EXIT_OK;
}

static int
parse(int argc, char **argv, struct cli_config *cfg, struct query_args *out)
{
    static const struct option own[] = {{"format", required_argument, NULL, 'f'},
                                        {"output", required_argument, NULL, 'o'},
                                        {"train-tokens", required_argument, NULL, 't'},
                                        {"gpu-hour-price", required_argument, NULL, 'p'}};
    struct query_args a = {FORMAT_TABLE, NULL, 0, 0};
    const struct cli_command c = {.name = "query",
                                  .help = query_help,
                                  .config = cfg,
                                  .own = own,
                                  .nown = CLI_ARRAY_LENGTH(own),
                                  .handle = parse_option,
                                  .ctx = &a};
    int rc = cli_parse_options(&c, argc, argv);
    if (rc == EXIT_OK && a.gpu_hour_price > 0 && a.train_tokens <= 0)
        return cli_usage_error("query", "--gpu-hour-price: needs --train-tokens");
    if (rc == EXIT_OK && a.train_tokens > 0 && a.format != FORMAT_TABLE && a.format != FORMAT_JSON)
        return cli_usage_error("query", "--train-tokens: with --format table or json");
    *out = a;
    return rc;
}

int
cmd_query(int argc, char **argv)
{
    struct cli_config cfg;
    cli_config_defaults(&cfg);
    struct query_args a = {FORMAT_TABLE, NULL, 0, 0};
    int rc = parse(argc, argv, &cfg, &a);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;

    struct spsim_model *model = NULL;
    struct spsim_hardware *hw = NULL;
    struct spsim_result result;
    struct spsim_error err = {0};
    if ((rc = cli_config_model(&cfg, &model)) || (rc = cli_load_hardware(cfg.hardware, &hw)))
        goto done;
    if ((rc = cli_config_finish(&cfg, model)))
        goto done;
    if (spsim_evaluate(model, hw, &cfg.par, &result, &err) != SPSIM_OK) {
        rc = cli_fail(&err);
        goto done;
    }
    for (uint32_t bit = 1; bit < (1u << SPSIM_WARN_COUNT_); bit <<= 1)
        if (result.warnings & bit)
            cli_warning("%s", spsim_warning_text(bit));
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    struct spsim_train_plan plan;
    if (a.train_tokens > 0 &&
        spsim_train_plan_make(&result, hw, a.train_tokens, a.gpu_hour_price, &plan, &err)) {
        rc = cli_fail(&err);
        goto done;
    }
    const struct spsim_train_plan *pl = a.train_tokens > 0 ? &plan : NULL;
    struct cli_output out;
    if ((rc = cli_output_open(&out, a.output)))
        goto done;
    switch (a.format) {
    case FORMAT_TABLE:
        write_table(out.stream, &result, spsim_model_name(model), info.name);
        if (pl)
            print_train_plan(out.stream, pl);
        if (cfg.measured.path)
            cli_measured_table(out.stream, &cfg.measured, &result);
        break;
    case FORMAT_JSON:
        rc = write_json(out.stream, &result, spsim_model_name(model), info.name, pl,
                        cfg.measured.path ? &cfg.measured : NULL);
        break;
    case FORMAT_CSV:
        rc = write_csv(out.stream, &result, spsim_model_name(model), info.name);
        break;
    case FORMAT_MEGATRON:
        rc = cli_megatron_write(out.stream, model, hw, &result.config);
        break;
    }
    if (rc == EXIT_OK)
        rc = cli_output_close(&out);
    else
        cli_output_abort(&out); /* a failed command never replaces its output */
done:
    spsim_model_destroy(model);
    spsim_hardware_destroy(hw);
    return rc;
}
