/*
 * The host's per-micro-batch work in eager mode outside the layers' schedule (NVIDIA/Megatron-LM
 * @d98e8a64), counted per block so that engine/host.c composes it with the block's GPU time:
 * - the DDP backward post-hook of every parameter tensor, each micro-batch's backward
 *   (megatron/core/distributed/distributed_data_parallel.py _make_backward_post_hook): its
 *   Python (is_graph_capturing, the bucket look-up, the grad's checks, param.grad = None,
 *   param_and_grad_buffer.py register_grad_ready's counts) taken as one torch call; where the
 *   gradient is not already in main_grad, param.grad.data and main_grad.add_: two calls and
 *   a kernel. Transformer Engine's linears accumulate their weight gradient into main_grad
 *   (fuse_wgrad_accumulation, grad_added_to_main_grad) unless --no-gradient-accumulation-fusion;
 *   norms, biases, embeddings and the router's torch weight always go through add_;
 * - get_batch (pretrain_gpt.py): on tensor-parallel rank 0 .cuda(non_blocking=True) of each
 *   batch tensor (tokens, labels, loss_mask, position_ids and, by default
 *   (--create-attention-mask-in-dataloader), the b × 1 × s × s boolean attention_mask), then
 *   megatron/core/utils.py get_batch_on_this_tp_rank's torch.distributed.broadcast of each over
 *   TP: a call and a launch each. Counted on the embedding's block (the first stage: the five
 *   copies and tokens', position_ids' and the mask's broadcasts) and the output block (labels'
 *   and loss_mask's broadcasts): with pp 1 the whole; with pp > 1 the last stage's own copies and
 *   mask broadcast are left out. The data loader's next() and the copies' PCIe time are not
 *   priced;
 * - loss_func (pretrain_gpt.py) on the output block: view and .float() twice, the product, sum,
 *   loss_mask.sum().clone().detach().to(int), loss.clone().detach().view(1), num_tokens.view(1),
 *   cat: 15 calls, 7 kernels (the fp32 .float()s launch none); with --check-for-nan-in-loss-and-
 *   grad (default) rerun_state_machine.py validate_result twice (torch.isnan, torch.isinf), each
 *   `if rejection_func(result)`: a kernel and the tensor's bool, a device-to-host copy and wait;
 *   then schedules.py forward_step_calc_loss's torch.tensor(0), clamp, and two divisions (4
 *   calls, 3 kernels). The first wait drains the GPU's queue: what comes before it runs beside
 *   the block's forward, what comes after it finds the GPU idle (host.c's segments).
 */
#include "config.h"

#include "compose.h"

double
spsim_norm_tensors(const struct spsim_model_shape *m)
{
    return m->norm == SPSIM_NORM_LAYERNORM ? 2.0 : 1.0; /* weight, and LayerNorm's bias */
}

/* Megatron-Core's TE layer spec (gpt_layer_specs.py): the input norm fused into linear_qkv
 * (TELayerNormColumnParallelLinear), QKV weight and bias, the Q and K norms, linear_proj; MLA:
 * input_layernorm, linear_q_proj or linear_q_down_proj and linear_q_up_proj (its norm fused),
 * linear_kv_down_proj, linear_kv_up_proj (its norm fused), linear_proj. *weights: the linears'
 * weights among them. */
double
spsim_attention_tensors(const struct spsim_model_shape *m, double *weights)
{
    double n = spsim_norm_tensors(m), b = m->linear_bias ? 1.0 : 0.0;
    /* core_attention.softmax_offset, with learnable attention sinks (model_params.c) */
    double sinks = m->softmax_type == SPSIM_SOFTMAX_LEARNABLE ? 1.0 : 0.0;
    if (m->kv_lora_rank) {
        *weights = (m->q_lora_rank ? 2.0 : 1.0) + 3.0;
        return n + (m->q_lora_rank ? 2.0 + n : 1.0) + 2.0 + n + 1.0 + 4.0 * b + sinks;
    }
    *weights = 2.0;
    /* Gemma's post-attention norm: linear_proj.post_layernorm (te_layers.py at Bridge 067f987). */
    double post = m->post_norms ? n : 0.0;
    return n + 1.0 + (m->linear_bias || m->qkv_bias) + (m->qk_norm ? 2.0 * n : 0) + 1.0 + b + post +
           sinks;
}

/* The dense MLP (its norm fused into linear_fc1) or the MoE block: pre_mlp_layernorm, the
 * router, fc1 and fc2 of each local expert (TE GroupedLinear registers weight{i} per expert
 * unless moe_single_grouped_weight, default False: extensions/transformer_engine.py; SequentialMLP
 * a module per expert), the shared experts and their gate. *weights: the TE linears' weights
 * (the router's and the shared gate's are torch's). */
double
spsim_mlp_tensors(const struct spsim_model_shape *m, uint32_t ep, bool moe, double *weights)
{
    double n = spsim_norm_tensors(m), b = m->linear_bias ? 1.0 : 0.0;
    if (!moe) { /* and Gemma's post-MLP norm, linear_fc2.post_layernorm */
        *weights = 2.0;
        return n + 2.0 + 2.0 * b + (m->post_norms ? n : 0.0);
    }
    double local = (double)m->experts / (ep ? ep : 1);
    double shared = m->shared_expert_ffn_hidden ? 2.0 + 2.0 * b + m->moe_shared_expert_gate : 0;
    *weights = 2.0 * local + (m->shared_expert_ffn_hidden ? 2.0 : 0);
    return n + 1.0 + local * (2.0 + 2.0 * b) + shared;
}

/* A transformer layer block's tensors (its kind's: hybrid layers one kind each). */
static double
layer_tensors(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
              double *weights)
{
    double wa = 0, wm = 0, t;
    switch (cfg->kind) {
    case SPSIM_LAYER_MAMBA:
    case SPSIM_LAYER_GDN: /* MambaMixer: in_proj, conv1d weight and bias, dt_bias, A_log, D,
                             norm, out_proj (opt_host.c) */
        *weights = 2.0;
        return 7.0 + spsim_norm_tensors(m);
    case SPSIM_LAYER_ATTENTION:
        t = spsim_attention_tensors(m, &wa);
        *weights = wa;
        return t;
    case SPSIM_LAYER_MLP:
    case SPSIM_LAYER_MOE:
        t = spsim_mlp_tensors(m, cfg->ep, cfg->kind == SPSIM_LAYER_MOE, &wm);
        *weights = wm;
        return t;
    default:
        t = spsim_attention_tensors(m, &wa) + spsim_mlp_tensors(m, cfg->ep, cfg->moe, &wm);
        *weights = wa + wm;
        return t;
    }
}

void
spsim_block_mb_host(const struct spsim_model_shape *m, enum spsim_block_role role,
                    struct spsim_block_eval *be)
{
    const struct spsim_layer_config *cfg = &be->block.cfg;
    struct spsim_mb_host *h = &be->mb_host;
    *h = (struct spsim_mb_host){0};
    double tensors = 0, weights = 0;
    if (role == SPSIM_BLOCK_LAYER)
        tensors = layer_tensors(m, cfg, &weights);
    else if (role == SPSIM_BLOCK_EMBEDDING)
        tensors = 1.0 + (m->position == SPSIM_POSITION_LEARNED);
    else if (role == SPSIM_BLOCK_OUTPUT) /* the final norm and an untied output layer */
        tensors = spsim_norm_tensors(m) + (weights = !m->tied_embeddings);
    else if (role == SPSIM_BLOCK_MTP) { /* enorm, hnorm, final_layernorm, eh_proj */
        tensors = 3.0 * spsim_norm_tensors(m) + 1.0;
        weights = 1.0;
    }
    if (cfg->frozen) /* LoRA: the base frozen, each adapter's two weights trained */
        tensors = weights =
            role == SPSIM_BLOCK_LAYER ? 2.0 * __builtin_popcount(cfg->lora_targets) : 0;
    double adds = cfg->wgrad_fusion ? tensors - weights : tensors;
    h->bwd_calls = tensors + 2.0 * adds;
    h->bwd_launches = adds;
    if (role == SPSIM_BLOCK_EMBEDDING) {
        double keys = 4.0 + cfg->mask_in_dataloader, sent = 2.0 + cfg->mask_in_dataloader;
        h->fwd_head_calls = h->fwd_head_launches = keys + sent;
    }
    if (role == SPSIM_BLOCK_OUTPUT) {
        h->fwd_head_calls = h->fwd_head_launches = 2.0; /* labels', loss_mask's broadcasts */
        h->fwd_tail_calls = 15.0;                       /* loss_func */
        h->fwd_tail_launches = 7.0;
        h->after_calls = 4.0; /* forward_step_calc_loss */
        h->after_launches = 3.0;
        if (cfg->nan_check) { /* isnan and its bool before the wait, isinf and its bool after */
            h->fwd_tail_calls += 2.0;
            h->fwd_tail_launches += 2.0;
            h->after_calls += 2.0;
            h->after_launches += 2.0;
            h->wait = true;
        }
    }
}
