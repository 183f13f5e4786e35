/*
 * The training loop's host work in eager mode around the steps that opt_host.c and mb_host.c
 * count (NVIDIA/Megatron-LM @d98e8a64): the logging after each train_step and the pipeline's
 * blocking transfers. Counted are torch calls (each at host.torch_call_us, profiles/hardware.c
 * read_host), the kernels and copies they launch (host.kernel_launch_us each) and the
 * collectives they wait for (the collective model); the Python between them is not charged,
 * so both terms are lower bounds.
 *
 * training_log (megatron/training/training.py:3263), after train_step's loss_scale .item()
 * (training.py:4869, opt_host.c) has drained the GPU's queue: nothing runs beside it, and the
 * interval timer's barriers hold every rank until the last one, which holds the TensorBoard
 * writer (global_vars.py:241, rank world_size − 1) and the loss (pipeline_time's last stage):
 * - every iteration: the loss accumulation, one addition per loss key (training.py:3306-3309;
 *   pretrain_gpt.py's loss_func reports one, 'lm loss'); reduce_max_stat_across_model_parallel_
 *   group of the learning rate (training.py:3369, utils/common_utils.py:269-293: torch.tensor on
 *   the device, all_reduce MAX over the model-parallel group, .item() twice: 4 calls, a copy
 *   and the AllReduce launched);
 * - with --tensorboard-dir, every iteration (tensorboard_log_interval 1, training_config.py:286):
 *   SummaryWriter.add_scalar pairs (value and "vs samples") of the learning rate, the batch
 *   size, each loss key, the loss scale (log_loss_scale_to_tensorboard default true,
 *   training_config.py:297) and the grad norm (clip-grad 1.0 by default), of num-zeros and
 *   params-norm when they are logged (training.py:3376-3428); with --log-memory-to-tensorboard
 *   torch.cuda.memory_stats() and four scalars (training.py:3436-3447). Each add_scalar taken
 *   as one call (its protobuf and queue put at least a torch call's Python);
 * - every --log-interval iterations (training.py:3539): timers('interval-time').elapsed(
 *   barrier=True) stops and restarts the timer, each a torch.distributed.barrier (an AllReduce
 *   of one element over the world with NCCL) and a torch.cuda.synchronize (megatron/core/
 *   timers.py:143-209); with --log-timers-to-tensorboard the iteration-time scalar
 *   (training.py:3563); per loss key .item() and the reset torch.tensor([0.0]) on the device
 *   (training.py:3620-3627). At --timing-log-level 0 timers.log and timers.write get no names
 *   and gather nothing (timers.py _get_elapsed_time_all_ranks returns at len(names) == 0).
 *
 * The pipeline's transfers without the interleaved schedule's overlap (arguments.py:1012 turns
 * overlap_p2p_comm off without vpp; argument_utils.py:307 batch_p2p_comm = not overlap;
 * model_parallel_config.py:395 batch_p2p_sync true): p2p_communication.py _communicate
 * (:280-428) allocates the receive buffer (torch.empty), issues batch_isend_irecv (one NCCL
 * group, one kernel), waits on both requests and calls torch.cuda.synchronize. The buffer and
 * the call come before the transfer starts, the waits run beside it, the synchronisation's
 * return after it: exposed per transfer, 2 calls and a launch before, 1 after, the waits where
 * they outlast the transfer. A full-iteration CUDA graph replays the transfers (none eager);
 * training_log runs outside it (training.py calls it after train_step) and stays.
 */
#include "config.h"

#include "compose.h"

/* Megatron's --log-interval default (training_config.py:247). */
#define LOG_INTERVAL_DEFAULT 100.0

double
spsim_p2p_host_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                 const struct shape *x, double t_send)
{
    if (!hw || hw->kernel_launch_s <= 0 || x->p <= 1 || t_send <= 0 ||
        par->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON || (x->v > 1 && !par->no_overlap_p2p) ||
        (spsim_cuda_graph_capture(par) & SPSIM_CGS_FULL_ITERATION))
        return 0;
    double call = hw->host_torch_call_s;
    return 3.0 * call + hw->kernel_launch_s + spsim_max_d(0.0, 2.0 * call - t_send);
}

/* A one-element AllReduce (4 bytes) over `size` ranks `stride` apart. */
static int
tiny_allreduce(struct spsim_coll_memo *memo, const struct spsim_hardware *hw, uint64_t size,
               uint64_t stride, double *t)
{
    struct spsim_coll_time ct = {0};
    *t = 0;
    if (size <= 1)
        return SPSIM_OK;
    int rc =
        spsim_memo_collective(memo, hw, SPSIM_COLL_ALL_REDUCE, (uint32_t)size, stride, 4.0, &ct);
    *t = ct.time_s;
    return rc;
}

int
spsim_log_host(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
               const struct spsim_parallel *par, const struct shape *x,
               struct spsim_time_report *tr)
{
    tr->log_host_s = 0;
    if (!hw || hw->kernel_launch_s <= 0)
        return SPSIM_OK;
    const double keys = 1.0; /* 'lm loss' */
    double calls = keys + 4.0, launches = keys + 2.0;
    if (par->tensorboard) {
        calls += 2.0 * (4.0 + keys) + 2.0 * (par->log_num_zeros_in_grad + par->log_params_norm);
        if (par->log_memory_to_tensorboard)
            calls += 1.0 + 4.0;
    }
    double every = par->log_interval ? (double)par->log_interval : LOG_INTERVAL_DEFAULT;
    double icalls = 4.0 + 2.0 * keys + (par->tensorboard && par->log_timers_to_tensorboard);
    double ilaunches = 2.0 + keys;
    /* The model-parallel group (TP × PP ranks, parallel_state.py): t·p ranks spread over the
     * world's span (stride dc between them), the tier the real group reaches. */
    uint64_t world = x->p * x->t * x->dc, mp = x->t * x->p, stride = x->p > 1 ? x->dc : 1;
    struct spsim_log_memo here = {hw, mp, stride, world, 0, 0}, *last = memo ? &memo->log : NULL;
    if (last && last->hw == hw && last->mp == mp && last->stride == stride &&
        last->world == world) {
        here = *last; /* the sweep's points repeat the groups */
    } else {
        int rc = tiny_allreduce(memo, hw, mp, stride, &here.t_mp);
        if (rc == SPSIM_OK)
            rc = tiny_allreduce(memo, hw, world, 1, &here.t_world);
        if (rc)
            return rc;
        if (last)
            *last = here;
    }
    double t_mp = here.t_mp, t_world = here.t_world;
    tr->log_host_s =
        calls * hw->host_torch_call_s + launches * hw->kernel_launch_s + t_mp +
        (icalls * hw->host_torch_call_s + ilaunches * hw->kernel_launch_s + 2.0 * t_world) / every;
    tr->iteration_s += tr->log_host_s;
    return SPSIM_OK;
}
