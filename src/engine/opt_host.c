/*
 * The host's per-iteration work in eager mode beyond the forward and backward schedule: the
 * optimizer step Megatron-Core runs in Python over each parameter tensor, and the training
 * loop's reductions after it (NVIDIA/Megatron-LM @d98e8a64, megatron/core/optimizer/
 * optimizer.py, distrib_optimizer.py, clip_grads.py; megatron/training/training.py train_step;
 * megatron/training/utils/common_utils.py; NVIDIA/TransformerEngine @d0067d0
 * transformer_engine/pytorch/optimizers/fused_adam.py, multi_tensor_apply.py and
 * common/multi_tensor/multi_tensor_apply.cuh).
 *
 * Counted are the torch calls the Python issues (each at host.torch_call_us, the profile's
 * host time of one aten op beyond its launch; host.op_us, a whole framework op's, where the
 * profile gives none: profiles/hardware.c read_host) and the kernels they launch (each at
 * host.kernel_launch_us); the Python between them (the filters, dict look-ups, .grad = None)
 * is not charged, so the term is likely an underestimate. BF16 (or FP16) with fp32 main
 * parameters and TE's FusedAdam, the default path:
 * - distributed optimizer, per tensor the rank's shard meets (distrib_optimizer.py): the
 *   gradient's view(-1), slice and .float() (_copy_model_grads_to_main_grads), the clip loop's
 *   grad.type() and detach() (clip_grad_by_total_norm_fp32), FusedAdam.step's p_grad.data
 *   twice and p.data, then view(-1), slice, .data and copy_ into the parameter buffer
 *   (_copy_main_params_to_model_params): 12 ops, the copy_ one kernel;
 * - Float16OptimizerWithFloat16Params, per tensor: main_grad.float(), the clip loop's two,
 *   FusedAdam's three, .data of the model and the main parameter for the multi-tensor copy
 *   (_get_model_and_main_params_data_float16): 8 ops;
 * - with 16-bit gradients (--grad-reduce-in-bf16) the .float() is a cast kernel;
 * - the multi-tensor kernels (clip_grads.py multi_tensor_l2norm and multi_tensor_scale_tensor,
 *   FusedAdam's adam, the Float16 optimizer's multi_tensor_scale copy): TE launches a kernel
 *   when the tensors of a launch reach depth_to_max_tensors (110, 64, 48, 36 for lists of 1 to
 *   4 tensors) or its chunks of 2048 × 32 elements reach 320 blocks, and l2norm a cleanup kernel;
 * - once per step: get_grad_norm_fp32 (zeros twice, the applier, ** 2, the AllReduce, pow: 6
 *   ops), clip_grad_by_total_norm_fp32 (+ 1e-6, the division, clamp_max_, zeros, the applier:
 *   5), FusedAdam's applier per parameter group (2: with and without weight decay), the Float16
 *   optimizer's overflow_buf.fill_ and applier (2), and train_step's
 *   logical_and_across_model_parallel_group (torch.tensor, AllReduce, .item(): 3).
 * That .item() is a device-to-host wait: the step's host time runs beside the GPU's work queued
 * after the backward (the exposed gradient reduction, the tied-embedding and expert-bias
 * AllReduces and the optimizer's kernels, engine/host.c's segments: max(host, GPU)); what the
 * host does after it finds the GPU idle and adds whole: reduce_max_stat_across_model_parallel_
 * group of the grad norm (torch.tensor of a tensor, AllReduce, .item() twice: 4), the last
 * stage's loss average (a view per micro-batch, vstack, sum, AllReduce, division: m + 4), the
 * training loop's loss_scale .item() (1) and the next step's zero_grad_buffer (a zero_ per
 * gradient buffer, param_and_grad_buffer.py reset). With --log-num-zeros-in-grad count_zeros_fp32
 * adds per optimizer tensor detach, count_nonzero, numel − n and the sum (4 ops, 3 kernels), zeros,
 * AllReduce and .item() (3) and a second reduce_max_stat (4, after the wait); with
 * --log-params-norm calc_params_l2_norm runs after it: per tensor param.data.float() (2 ops, a
 * cast) unless the distributed optimizer set main_param; its 8 lists' norms (3 ops each, 1 for an
 * empty list), 6 AllReduces, 7 additions and .item(). Muon and the CPU-offloaded optimizer step
 * differently and are not priced here.
 */
#include "config.h"

#include <math.h>

#include "compose.h"

/* A list's multi-tensor launches (multi_tensor_apply.cuh): T tensors of E elements. */
static double
mt_launches(double T, double E, double max_tensors)
{
    if (T <= 0)
        return 0;
    double chunks = E / 65536.0 + T; /* 2048 × 32 elements a chunk, the last partial */
    double by_tensors = ceil(T / max_tensors), by_blocks = ceil(chunks / 320.0);
    return by_tensors > by_blocks ? by_tensors : by_blocks;
}

/* A layer's tensors by block, the same on every rank (computed once per evaluation). */
struct layer_tensors {
    double att, mlp, moe_shared;
};

static struct layer_tensors
layer_tensors_of(const struct spsim_model_shape *m, const struct spsim_parallel *par)
{
    double w = 0;
    struct layer_tensors t = {spsim_attention_tensors(m, &w),
                              spsim_mlp_tensors(m, par->ep, false, &w), 0};
    t.moe_shared = spsim_mlp_tensors(m, par->ep, true, &w) -
                   (double)m->experts / (par->ep ? par->ep : 1) * (2.0 + 2.0 * m->linear_bias);
    return t;
}

/* Tensors of pipeline rank r: its layers, the embedding on the first rank, the final norm and
 * the output layer (or the tied embedding's copy past rank 0) and the MTP depths (enorm, hnorm,
 * eh_proj, a layer, final_layernorm) on the last. Experts apart (sharded over edp, the replica's
 * edp / R with HSDP). */
static void
rank_tensors(const struct spsim_layer_summary *le, const struct shape *x,
             const struct spsim_parallel *par, const struct layer_tensors *lt, uint64_t r,
             double *dense, double *experts)
{
    const struct spsim_model_shape *m = &x->model->shape;
    double att = lt->att, mlp = lt->mlp, moe_shared = lt->moe_shared;
    double moe_layers = x->moe ? (double)rank_moe_layers(le, x, r) : 0;
    double layers = (double)rank_built(x, r);
    if (x->hybrid) {
        /* MambaMixer: in_proj (its norm fused), conv1d weight and bias, dt_bias, A_log, D,
         * norm, out_proj; a Gated DeltaNet layer taken as Mamba's (not read). */
        double ssm = 7.0 + spsim_norm_tensors(m);
        *dense =
            ssm * (double)(rank_kind(x, r, SPSIM_LAYER_MAMBA) + rank_kind(x, r, SPSIM_LAYER_GDN)) +
            att * (double)rank_kind(x, r, SPSIM_LAYER_ATTENTION) +
            mlp * (double)rank_kind(x, r, SPSIM_LAYER_MLP) + moe_shared * moe_layers;
    } else {
        /* The MTP depths' layer is of the last decoder layer's kind (compose.h mtp_layer). */
        double mtp = r == x->p - 1 ? (double)mtp_weight_depths(x) : 0;
        double dense_layers = x->moe ? (double)rank_dense(x, r) : layers;
        double mtp_dense = x->moe && mtp_layer(le, x) == &le->layer ? 0 : mtp;
        *dense = att * (layers + mtp) + mlp * (dense_layers + mtp_dense) + moe_shared * moe_layers +
                 mtp * (3.0 * spsim_norm_tensors(m) + 1.0);
    }
    *experts =
        moe_layers * ((double)m->experts / (par->ep ? par->ep : 1)) * (2.0 + 2.0 * m->linear_bias);
    if (r == 0)
        *dense += 1.0 + (m->position == SPSIM_POSITION_LEARNED);
    if (r == x->p - 1)
        *dense += spsim_norm_tensors(m) + (!m->tied_embeddings || x->p > 1);
}

/* One rank's step up to train_step's wait: the tensors its optimizer steps, torch calls and
 * kernel launches. */
struct opt_step {
    double tensors, ops, launches;
};

/* The optimizer's tensors on the rank (distrib_optimizer.py _build_model_gbuf_param_range_map:
 * a tensor is the rank's when its range meets the rank's contiguous 1/D of a bucket, so about
 * n/D of them and one more per bucket it cuts), and their per-tensor and multi-tensor work up to
 * train_step's wait. */
static void
count_step(const struct spsim_parallel *par, const struct shape *x, double dense, double experts,
           double elements, double buckets, struct opt_step *c)
{
    /* One rank's shard is the whole model: counted as the Float16 optimizer's (the
     * DistributedOptimizer's extra view and slice per tensor left out), so that the sharding
     * settings, inert at dp·cp = 1, stay so (sweep/optimize_bounds.c inert_sharding_alias). */
    double D = (double)opt_ranks(par, x), n = dense + experts, ns = n;
    bool dist = zero_level(par) >= 1 && D > 1;
    if (dist) {
        ns = ceil(dense / D) + ceil(experts / (double)(x->edi ? x->edi : 1)) + buckets;
        ns = ns < n ? ns : n;
        elements /= D;
    }
    c->tensors = ns;
    c->ops = ns * (dist ? 12.0 : 8.0) + 6.0 + 5.0 + 2.0 + (dist ? 0 : 2.0) + 3.0;
    c->launches = ns * ((dist ? 1.0 : 0) + (grad_bytes(par) == 2)) + 5.0 + 4.0 + (dist ? 0 : 1.0) +
                  2.0 + mt_launches(ns, elements, 110) + 1.0 + mt_launches(ns, elements, 64) +
                  mt_launches(ns, elements, 36) + (dist ? 0 : mt_launches(ns, elements, 64));
    if (par->log_num_zeros_in_grad) {
        c->ops += 4.0 * ns + 3.0;
        c->launches += 3.0 * ns + 2.0;
    }
}

/* After the wait: the training loop's reductions, the last stage's loss average, the next
 * step's zero_grad_buffer, and the logged statistics' (see the header), priced at the torch
 * call's and the launch's host time (price). */
static double
after_s(const double price[2], const struct spsim_parallel *par, const struct shape *x, double n,
        double elements, bool last)
{
    /* zero_grad_buffer: one zero_ per gradient buffer (param_and_grad_buffer.py reset), a model
     * chunk's dense one and its experts' */
    double buffers = (double)x->v * (1.0 + x->moe);
    double ops = 4.0 + 1.0 + buffers + (last ? (double)x->micro + 4.0 : 0);
    double launches = 2.0 + buffers + (last ? 4.0 : 0);
    if (par->log_num_zeros_in_grad) {
        ops += 4.0;
        launches += 2.0;
    }
    if (par->log_params_norm) {
        bool dist = zero_level(par) >= 1 && opt_ranks(par, x) > 1;
        double k = 1.0 + x->moe; /* the lists that hold tensors: dense (and expert) */
        ops += (dist ? 0 : 2.0 * n) + 3.0 * k + (8.0 - k) + 6.0 + 7.0 + 1.0;
        launches +=
            (dist ? 0 : n) + k * 3.0 + mt_launches(n, elements, 110) + (8.0 - k) + 6.0 + 7.0;
    }
    return ops * price[0] + launches * price[1];
}

/* The step of ranks 0, a middle one (1) and p − 1, priced; a pipeline of one or two ranks
 * counts each rank once (the same counts). The last rank's time after the wait reads the
 * micro-batch count: it is priced per configuration (spsim_optimizer_host). */
static void
step_counts(const double price[2], const struct spsim_parallel *par,
            const struct spsim_layer_summary *le, const struct shape *x, double elements,
            uint32_t dp_buckets, struct spsim_opt_rank_counts out[3])
{
    /* The buckets a shard's range can cut: rank 0's first chunk's (dp_time.c) for each model
     * chunk, and one for the experts */
    double buckets = (double)(dp_buckets ? dp_buckets : 1) * (double)x->v + x->moe;
    const uint64_t ranks[3] = {0, x->p > 2 ? 1 : 0, x->p - 1};
    const struct layer_tensors lt = layer_tensors_of(&x->model->shape, par);
    for (int i = 0; i < 3; i++) {
        if (i > 0 && ranks[i] == ranks[i - 1]) {
            out[i] = out[i - 1];
            continue;
        }
        double dense = 0, experts = 0;
        struct opt_step c;
        rank_tensors(le, x, par, &lt, ranks[i], &dense, &experts);
        count_step(par, x, dense, experts, elements, buckets, &c);
        out[i].held = dense + experts;
        out[i].step_tensors = c.tensors;
        out[i].step_s = c.ops * price[0] + c.launches * price[1];
        out[i].after_s =
            ranks[i] == x->p - 1 ? 0 : after_s(price, par, x, out[i].held, elements, false);
    }
}

/*
 * step_counts() through the memo, keyed by all it reads: the model (by its address, fixed for a
 * sweep's run) and the hardware profile (its prices, likewise), the stage plan (for one kind of
 * layer the three ranks' layer counts; with several kinds, an even split's, which p and v fix),
 * whether the summary has MTP parameters, the parameters per GPU, ep, the gradient dtype and
 * the logging flags, and where the optimizer is sharded the ranks, the expert data-parallel size
 * and the buckets it spans. Not the batch, mbs, the overlaps, the layer's other settings, nor dp
 * unsharded, so that the sweep's inner axes reuse one slot. first_last_layers_bf16 (its layers
 * from the configuration) and uneven splits of several kinds of layer are counted afresh.
 */
static const struct spsim_opt_rank_counts *
step_counts_memo(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                 const double price[2], const struct spsim_parallel *par,
                 const struct spsim_layer_summary *le, const struct shape *x, uint64_t elements,
                 uint32_t dp_buckets, struct spsim_opt_rank_counts local[3])
{
    if (!memo || x->bf16 || (x->mixed && !x->plan->even)) {
        step_counts(price, par, le, x, (double)elements, dp_buckets, local);
        return local;
    }
    const uint64_t D = opt_ranks(par, x);
    const bool dist = zero_level(par) >= 1 && D > 1;
    const uint64_t key[SPSIM_STEP_MEMO_KEY] = {
        x->built[2] | (uint64_t)x->plan->even << 32 | (uint64_t)x->mixed << 33 |
            (uint64_t)(le->params_mtp != 0) << 34 | (uint64_t)dist << 35 |
            (uint64_t)(grad_bytes(par) == 2) << 36 | (uint64_t)par->log_num_zeros_in_grad << 37 |
            (uint64_t)par->log_params_norm << 38,
        elements,
        dist ? D : 0,
        dist ? dp_buckets : 0,
        dist ? x->edi : 0,
        x->p | x->v << 32,
        (uint64_t)(uintptr_t)x->model,
        x->built[0] | x->built[1] << 32,
        par->ep,
        (uint64_t)(uintptr_t)hw};
    struct spsim_opthost_memo_slot *s =
        &memo->opthost[memo_hash(key, SPSIM_STEP_MEMO_KEY, SPSIM_STEP_MEMO_BITS)];
    if (!s->used || memcmp(s->key, key, sizeof(key)) != 0) {
        step_counts(price, par, le, x, (double)elements, dp_buckets, s->rank);
        memcpy(s->key, key, sizeof(key));
        s->used = true;
    }
    return s->rank;
}

void
spsim_optimizer_host(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                     const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                     const struct shape *x, const struct spsim_memory_report *mem,
                     struct spsim_time_report *tr)
{
    tr->optimizer_host_s = tr->optimizer_host_exposed_s = 0;
    tr->optimizer_host_tensors = 0;
    if (!hw || hw->kernel_launch_s <= 0 || par->optimizer != SPSIM_OPTIMIZER_ADAM ||
        par->optimizer_cpu_offload)
        return;
    /* The prices (the memo knows them by the profile's address). */
    const double price[2] = {hw->host_torch_call_s, hw->kernel_launch_s};
    /* The GPU's work queued after the backward's last wait, which the step's host time runs
     * beside. */
    double gpu = tr->dp_exposed_s + tr->tied_embedding_allreduce_s +
                 tr->moe_expert_bias_allreduce_s + tr->optimizer_s;
    struct spsim_opt_rank_counts local[3];
    const struct spsim_opt_rank_counts *c = step_counts_memo(
        memo, hw, price, par, le, x, mem->trainable_parameters_per_gpu, tr->dp_buckets, local);
    const uint64_t ranks[3] = {0, x->p > 2 ? 1 : 0, x->p - 1};
    for (int i = 0; i < 3; i++) {
        if (i > 0 && ranks[i] == ranks[i - 1])
            continue; /* the same rank again (p <= 2): the same counts, never more exposed */
        double after =
            ranks[i] == x->p - 1
                ? after_s(price, par, x, c[i].held, (double)mem->trainable_parameters_per_gpu, true)
                : c[i].after_s;
        double exposed = spsim_max_d(0.0, c[i].step_s - gpu) + after;
        if (i == 0 || exposed > tr->optimizer_host_exposed_s) {
            tr->optimizer_host_exposed_s = exposed;
            tr->optimizer_host_s = c[i].step_s + after;
            tr->optimizer_host_tensors = (uint32_t)c[i].step_tensors;
        }
    }
    tr->iteration_s += tr->optimizer_host_exposed_s;
}
