/* Time of the pipeline: each stage's work per micro-batch (its layers, the embedding and output
 * blocks, MTP, CPU offload's stall), the critical stage, the bubble and the point-to-point
 * sends, MoE exchange overlap and the host's launches, and the iteration with the
 * data-parallel terms (dp_time.c). */
#include "config.h"

#include "compose.h"
#include "ep_overlap.h"
#include "pp_schedule.h"

static void
add_block(struct stage_time *s, const struct spsim_block_totals *b, double times)
{
    s->wall += times * (b->fwd_s + b->bwd_s + b->recompute_s);
    s->fwd += times * b->fwd_compute_s;
    s->bwd += times * b->bwd_compute_s;
    s->wgrad += times * b->wgrad_compute_s;
    s->rec += times * b->recompute_compute_s;
    s->exposed += times * b->tp_exposed_s;
    s->bwd_window += times * (b->bwd_s + b->recompute_s);
    for (uint32_t i = 0; i < b->ncomm; i++)
        s->tp_comm += times * b->comm_s[i];
    s->fwd_wall += times * b->fwd_s;
    s->cp_exposed += times * b->cp_exposed_s;
    s->cp_comm += times * b->cp_comm_s;
}

/* A stage's layers: forward and backward on all of them, the recompute phase on the `replayed`
 * ones (fewer than all with the block method); the CP exchanges likewise. (An MoE layer's
 * token exchanges and aux-loss AllReduces never come here: moe.c refuses a recompute method
 * with MoE layers.) */
static void
add_layers(struct stage_time *s, const struct spsim_block_totals *b, double layers, double replayed)
{
    if (replayed == layers) { /* the same sums as every other block */
        add_block(s, b, layers);
        return;
    }
    s->wall += layers * (b->fwd_s + b->bwd_s) + replayed * b->recompute_s;
    s->fwd += layers * b->fwd_compute_s;
    s->bwd += layers * b->bwd_compute_s;
    s->wgrad += layers * b->wgrad_compute_s;
    s->rec += replayed * b->recompute_compute_s;
    s->exposed +=
        layers * (b->tp_exposed_s - b->recompute_exposed_s) + replayed * b->recompute_exposed_s;
    s->bwd_window += layers * b->bwd_s + replayed * b->recompute_s;
    double comm = 0;
    for (uint32_t i = 0; i < b->ncomm; i++)
        comm += b->comm_s[i];
    s->tp_comm += layers * (comm - b->recompute_comm_s) + replayed * b->recompute_comm_s;
    s->cp_exposed += layers * (b->cp_exposed_s - b->cp_recompute_exposed_s) +
                     replayed * b->cp_recompute_exposed_s;
    s->cp_comm +=
        layers * (b->cp_comm_s - b->cp_recompute_comm_s) + replayed * b->cp_recompute_comm_s;
}

/*
 * Stall of the compute stream behind TE's CPU offload (cpu_offload.py DefaultOffloadSynchronizer)
 * over one pass of L layers of `step` seconds each, N of them offloaded with copies of `copy`
 * seconds on one offload stream, in order. Forward: layer i's copy starts when its forward has
 * ended and the previous copy is done, and must finish before the forward of layer L − N + i
 * starts (its memory is released there). Backward is the mirror image: the j-th reload (of
 * layer N − 1 − j) is issued before the backward of the pass's position j + 1 and is needed by
 * position L − N + j, so the same recurrence holds with the backward's step.
 */
static double
offload_stall_s(uint32_t L, uint32_t N, double step, double copy)
{
    double done[SPSIM_MODEL_MAX_LAYERS]; /* when each copy finishes */
    double end = 0, last_copy = 0;
    uint32_t D = L - N;
    for (uint32_t j = 0; j < L; j++) {
        double start = j >= D ? spsim_max_d(end, done[j - D]) : end;
        end = start + step;
        if (j < N) {
            last_copy = spsim_max_d(end, last_copy) + copy;
            done[j] = last_copy;
        }
    }
    return end - L * step;
}

/* CPU offload's exposed time per micro-batch (pp = 1: the stage holds all L layers). */
static double
offload_exposed(const struct spsim_hardware *hw, const struct spsim_parallel *par,
                const struct spsim_layer_summary *le, const struct shape *x,
                struct spsim_time_report *tr)
{
    if (par->offload_layers == 0)
        return 0;
    double bytes = (double)le->offload_bytes;
    tr->offload_d2h_s_per_layer = bytes / hw->host_d2h_Bps;
    tr->offload_h2d_s_per_layer = bytes / hw->host_h2d_Bps;
    uint32_t L = (uint32_t)x->lps, N = par->offload_layers;
    return offload_stall_s(L, N, le->layer.fwd_s, tr->offload_d2h_s_per_layer) +
           offload_stall_s(L, N, le->layer.bwd_s, tr->offload_h2d_s_per_layer);
}

/* Point-to-point: in 1F1B's steady state every stage sends its output forward and its input
 * gradient backward once per micro-batch and model chunk, blocking (Megatron's
 * p2p_communication). Without SP the receiver re-gathers the [s, b, h] tensor from the t
 * scattered pieces. */
static int
pp_send_s(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
          const struct spsim_parallel *par, const struct spsim_layer_summary *le,
          const struct shape *x, const struct spsim_comm_report *comm, double *t_send)
{
    if (x->p <= 1)
        return SPSIM_OK;
    struct spsim_coll_time ct, ag = {0};
    int rc;
    if ((rc = spsim_memo_collective(memo, hw, SPSIM_COLL_SEND_RECV, 2, x->t * x->dc,
                                    (double)comm->pp_message_bytes, &ct)))
        return rc;
    if (!par->sp && x->t > 1 &&
        (rc = spsim_memo_time(memo, hw, SPSIM_COLL_ALL_GATHER, le->tp_group,
                              (double)le->layer.message_bytes, &ag)))
        return rc;
    *t_send = ct.time_s + ag.time_s;
    return SPSIM_OK;
}

/* The D depths' work per micro-batch on the last stage (mtp_layer); an MoE MTP layer counts
 * among the stage's MoE layers (its token exchanges, ep_exposed_s). */
static void
mtp_time(const struct spsim_layer_summary *le, const struct shape *x, struct stage_time *s)
{
    double D = x->model->shape.mtp_layers;
    add_block(s, &le->embedding, D);
    add_block(s, &le->mtp, D);
    if (x->hybrid) { /* each depth runs its pattern's layers; its 'E's are MoE layers */
        for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++)
            if (mtp_kind(x, (enum spsim_layer_kind)k))
                add_block(s, spsim_hybrid_totals(le, (enum spsim_layer_kind)k),
                          D * (double)mtp_kind(x, (enum spsim_layer_kind)k));
        add_block(s, &le->output, D);
        s->layers += (uint64_t)D * mtp_kind(x, SPSIM_LAYER_MOE);
        return;
    }
    add_block(s, mtp_layer(le, x), D);
    add_block(s, &le->output, D);
    if (mtp_layer(le, x) == &le->layer)
        s->layers += x->model->shape.mtp_layers;
}

/* Per micro-batch work of pipeline rank r: its layers, the embedding on rank 0 and the output
 * layer on rank p − 1. `layers` keeps the last layer block summed, for ranks that build as
 * many layers (every rank of an even split). */
static void
rank_time(const struct spsim_layer_summary *le, const struct shape *x, uint32_t r,
          const double replayed_offload[2], struct stage_time *layers, struct stage_time *s)
{
    uint64_t n = rank_built(x, r);
    if (x->hybrid) {
        /* A hybrid model's kinds (no recompute method, no offload: hybrid.c). */
        *layers = (struct stage_time){.layers = n};
        for (int k = SPSIM_LAYER_MAMBA; k < SPSIM_LAYER_KIND_COUNT; k++) {
            double c = (double)rank_kind(x, r, (enum spsim_layer_kind)k);
            if (c > 0)
                add_layers(layers, spsim_hybrid_totals(le, (enum spsim_layer_kind)k), c, c);
        }
    } else if (x->mixed) {
        /* An MoE model's MoE and dense layers (no recompute method, no offload: moe.c). */
        uint64_t dense = rank_dense(x, r);
        *layers = (struct stage_time){.layers = n};
        add_layers(layers, &le->layer, (double)(n - dense), (double)(n - dense));
        add_layers(layers, &le->dense, (double)dense, (double)dense);
    } else if (layers->layers != n || layers->wall == 0) {
        /* The recompute phase on the replayed layers (fewer with the block method; uneven
         * splits have no method, spsim_parallel_check); the offload stall on each. */
        double replayed = x->plan->even ? replayed_offload[0] : (double)n;
        *layers = (struct stage_time){.layers = n};
        add_layers(layers, &le->layer, (double)n, replayed);
        layers->offload = replayed_offload[1];
        layers->wall += layers->offload;
    }
    *s = *layers;
    if (r == 0)
        add_block(s, &le->embedding, 1);
    if (r == x->p - 1)
        add_block(s, &le->output, 1);
    if (r == x->p - 1 && le->params_mtp)
        mtp_time(le, x, s);
}

/* The rank that sets the pace (the first of the slowest, ranks in spsim_stage_candidates'
 * order) and the mean stage time: with a layout every rank's, else rank 0's, rank p − 1's and
 * the p − 2 middle ranks' (which build the same layers). */
static uint32_t
critical_stage(const struct spsim_layer_summary *le, const struct shape *x,
               const double replayed_offload[2], struct stage_time *crit, double *avg)
{
    /* Evenly split, a middle rank's work is rank 0's without the embedding: never slower. */
    uint32_t best = 0, n = candidate_count(
                           x, x->plan->even && x->p > 2 ? 2 : spsim_stage_ncandidates(x->plan));
    double walls[3] = {0};
    struct stage_time layers = {0}, s;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = candidate_rank(x, i);
        rank_time(le, x, r, replayed_offload, &layers, &s);
        if (i < 3)
            walls[i] = s.wall;
        if (i == 0 || s.wall > crit->wall) {
            *crit = s;
            best = r;
        }
    }
    if (n == 2 && x->p > 2)
        walls[2] = layers.wall;
    if (x->p == 1) {
        *avg = walls[0];
    } else if (!x->plan->nlayout && !x->bf16) {
        *avg = (walls[0] + walls[1] + (x->p - 2.0) * (x->p > 2 ? walls[2] : 0)) / x->p;
    } else {
        double sum = 0;
        for (uint32_t r = 0; r < x->p; r++) {
            rank_time(le, x, r, replayed_offload, &layers, &s);
            sum += s.wall;
        }
        *avg = sum / x->p;
    }
    return best;
}

/*
 * Point-to-point sends per micro-batch on the critical stage: 2v blocking sends (1F1B), or with
 * the interleaved schedule's overlap_p2p_comm (Megatron's default with vpp > 1, schedules.py
 * forward_backward_pipelining_with_interleaving) async isend/irecv whose wait comes before the
 * chunk after next: each steady-state transfer runs beside one model chunk's forward or
 * backward. As for every overlapped collective (timing.c overlapped_s), NCCL's kernel holds one
 * SM per channel while it runs, so the chunk computes on the others meanwhile: the pair takes
 * max(T, min(c/(1 − k/S), c + T·k/S)), the send showing by that less the chunk's c. The fill
 * and drain sends lie on the dependency chain from rank to rank and stay whole in the bubble
 * (compose_time).
 */
static double
p2p_exposed_s(const struct spsim_hardware *hw, const struct spsim_parallel *par,
              const struct shape *x, const struct stage_time *crit, double t_send, double *hidden)
{
    double blocking = 2.0 * (double)x->v * t_send;
    *hidden = 0;
    if (x->v == 1 || par->no_overlap_p2p || t_send == 0 ||
        par->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON) /* ZB-V's, DualPipeV's: as 1F1B's */
        return blocking;
    double k = (double)hw->nccl_channels / hw->sm_count, exposed = 0;
    const double chunk[2] = {crit->fwd_wall / x->v, crit->bwd_window / x->v};
    for (int i = 0; i < 2; i++)
        exposed += spsim_max_d(t_send, spsim_min_d(chunk[i] / (1.0 - k), chunk[i] + t_send * k)) -
                   chunk[i];
    exposed *= (double)x->v;
    *hidden = blocking - exposed;
    return exposed;
}

/* --overlap-moe-expert-parallel-comm: the critical stage's paired micro-batches leave the MoE
 * layer's pair exposure (ep_overlap.c), the warm-up forwards and cool-down backwards their
 * exchanges whole. The bubble keeps the whole exchanges: fill and drain run alone. DualPipe
 * and DualPipeV pair their own (pp_schedule.c), with W apart. */
static void
ep_a2a_overlap(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
               const struct shape *x, double moe_layers, struct spsim_time_report *tr)
{
    bool dual = par->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON;
    double pairs =
        dual ? spsim_pp_schedule_paired(par->pp_schedule, x->micro, x->p, tr->critical_stage)
             : spsim_ep_overlap_paired(x->micro, x->p, x->v, tr->critical_stage);
    double pair = le->layer.ep_pair_exposed_s[dual || par->delay_wgrad_compute ? 1 : 0];
    double whole = tr->ep_exposed_s;
    tr->ep_exposed_s = moe_layers * ((x->micro - pairs) * le->layer.ep_exposed_s + pairs * pair);
    tr->ep_a2a_hidden_s = whole - tr->ep_exposed_s;
}

/* A zero-bubble or DualPipe schedule's fill and drain (pp_schedule.c) from the mean stage:
 * its F + B, and B, W and the EP time a forward-backward pair hides in the critical stage's
 * proportions. */
static double
schedule_bubble(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                const struct shape *x, const struct stage_time *crit, double avg, double t_send)
{
    double k = crit->wall > 0 ? avg / crit->wall : 0, hidden = 0;
    if (x->moe && par->ep > 1)
        hidden = (double)crit->layers * (le->layer.ep_exposed_s - le->layer.ep_pair_exposed_s[1]);
    return spsim_pp_schedule_bubble(par->pp_schedule, x->p, avg, k * crit->bwd_window,
                                    k * crit->wgrad, k * hidden, t_send);
}

/*
 * Host launches (engine/host.c): one layer's launches and, when some block is host-bound, the
 * critical stage's wall beyond its GPU time. A block's phase wall is its computation, its
 * exposed TP, CP and MoE exchanges and its host excess (timing.c fold_step, host.c), so the
 * excess is what the stage's wall holds beyond the other per-micro-batch lines; configurations
 * without a launch figure pay one branch.
 */
static void
host_time(const struct spsim_hardware *hw, const struct spsim_layer_summary *le, double mb,
          const struct stage_time *crit, struct spsim_time_report *tr)
{
    tr->layer_forward_launches = le->layer_forward_launches;
    tr->layer_backward_launches = le->layer_backward_launches;
    tr->kernel_launch_us = hw ? hw->kernel_launch_us : 0;
    tr->host_op_us = hw ? hw->host_op_us : 0;
    tr->host_torch_call_us = hw ? hw->host_torch_call_us : 0;
    if (!le->host_bound)
        return;
    double others = crit->fwd + crit->bwd + crit->rec + crit->exposed + crit->cp_exposed +
                    crit->offload +
                    (tr->ep_exposed_s + tr->ep_a2a_hidden_s + tr->moe_aux_allreduce_s) / mb;
    tr->host_exposed_s = spsim_max_d(0.0, mb * (crit->wall - others));
    tr->iteration_s += tr->host_exposed_s;
}

/* The pipeline's stages: the send between them (pp_send_s) and the critical stage
 * (critical_stage), through the memo for an even split of one kind of layer, where they depend
 * on the layer summary, p, v, the layers a rank builds, the replayed and offload terms, the
 * send's group stride and size and SP alone. */
static int
pipeline_stages(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                const struct shape *x, const struct spsim_comm_report *comm,
                const double replayed_offload[2], double *t_send, struct stage_time *crit,
                double *avg, uint32_t *critical)
{
    bool memoized = memo && le->id && x->plan->even && !x->mixed && !x->bf16;
    const uint64_t key[SPSIM_CRIT_MEMO_KEY] = {le->id,
                                               x->p | x->v << 32,
                                               x->lps,
                                               memo_bits(replayed_offload[0]),
                                               memo_bits(replayed_offload[1]),
                                               x->t * x->dc,
                                               comm->pp_message_bytes,
                                               par->sp};
    struct spsim_crit_memo_slot *s =
        memoized ? &memo->crit[memo_hash(key, SPSIM_CRIT_MEMO_KEY, SPSIM_CRIT_MEMO_BITS)] : NULL;
    if (s && s->used && memcmp(s->key, key, sizeof(key)) == 0) {
        *t_send = s->t_send;
        *crit = s->crit;
        *avg = s->avg;
        *critical = s->best;
        return SPSIM_OK;
    }
    int rc = pp_send_s(memo, hw, par, le, x, comm, t_send);
    if (rc != SPSIM_OK)
        return rc;
    *critical = critical_stage(le, x, replayed_offload, crit, avg);
    if (s) {
        *s = (struct spsim_crit_memo_slot){
            .used = true, .best = *critical, .avg = *avg, .t_send = *t_send, .crit = *crit};
        memcpy(s->key, key, sizeof(key));
    }
    return SPSIM_OK;
}

/* The data-parallel reduction and gather, the iteration's synchronisations and the optimizer
 * step, which add to the links' busy time in this order. */
static int
sync_terms(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
           const struct spsim_parallel *par, const struct spsim_layer_summary *le,
           const struct shape *x, const struct spsim_memory_report *mem,
           const struct spsim_comm_report *comm, const struct stage_time *crit, double t_send,
           struct spsim_time_report *tr, struct busy *busy)
{
    const struct spsim_model_shape *m = &x->model->shape;
    int rc;
    /* The data-parallel collectives' busy time on its own (the same sum whatever came before),
     * then added to the links' in the order it was made. */
    struct busy dp = {0};
    if ((rc = spsim_dp_exposed(memo, hw, par, le, x, comm, mem, crit, t_send, tr, &dp)))
        return rc;
    if (x->moe && (rc = spsim_expert_dp_exposed(memo, hw, par, x, comm, crit, &tr->dp_exposed_s,
                                                &tr->dp_outer_s, &dp)))
        return rc;
    tr->dp_exposed_s += spsim_dp_beside_compute_s(hw, dp.nv + dp.net, tr->dp_exposed_s);
    for (uint32_t i = 0; i < dp.n && dp.n <= SPSIM_BUSY_LOG; i++)
        busy_add(busy, dp.nvlink[i], dp.add[i]);
    if (dp.n > SPSIM_BUSY_LOG) { /* not logged whole (the terms add a few): the sums */
        busy_add(busy, true, dp.nv);
        busy_add(busy, false, dp.net);
    }
    if ((rc = spsim_tied_embedding_sync(memo, hw, m, le, x, tr, busy)))
        return rc;
    if ((le->params_tp_synced | le->params_router_tp_synced) &&
        (rc = spsim_mla_grad_sync(memo, hw, par, le, x, crit, tr, busy)))
        return rc;
    if (par->dtype == SPSIM_DTYPE_FP8 && par->fp8_recipe == SPSIM_FP8_DELAYED &&
        (rc = spsim_fp8_amax_sync(memo, hw, le, x, crit, tr, busy)))
        return rc;
    if (x->moe && m->expert_bias && (rc = spsim_expert_bias_sync(memo, hw, le, x, tr, busy)))
        return rc;
    if (par->optimizer == SPSIM_OPTIMIZER_MUON)
        return spsim_muon_step_s(memo, hw, par, x, mem, tr);
    if (par->optimizer_cpu_offload) {
        spsim_offload_step_s(hw, par, x, mem, tr);
        return SPSIM_OK;
    }
    tr->optimizer_s = spsim_optimizer_step_s(hw, par, x, mem);
    return SPSIM_OK;
}

/* What sync_terms reads: the summary (and through it the model and hardware), the shape, the
 * volumes, the parameters, the critical stage and the send as words, and the whole
 * configuration but its batch, which the terms read only as the micro-batch count, and that
 * only where a term scales with it (Megatron-FSDP's per-micro-batch collectives, FP8 delayed
 * scaling's amax reductions): a term of dp_time.c that comes to read x->micro elsewhere adds
 * its case to per_micro. The first words are the hash's. */
static void
sync_key(const struct spsim_parallel *par, const struct spsim_layer_summary *le,
         const struct shape *x, const struct spsim_memory_report *mem,
         const struct spsim_comm_report *comm, const struct stage_time *crit, double t_send,
         uint32_t critical, uint64_t *key)
{
    bool per_micro = zero_level(par) >= 2 || par->dtype == SPSIM_DTYPE_FP8;
    key[0] = le->id;
    key[1] = (uint64_t)par->zero | (uint64_t)par->distributed_optimizer << 8 |
             (uint64_t)par->overlap_grad_reduce << 9 | (uint64_t)par->overlap_param_gather << 10 |
             (uint64_t)(par->grad_reduce_in_fp32 + 1) << 12 | (uint64_t)par->dtype << 16 |
             (uint64_t)par->fp8_recipe << 24 | (uint64_t)par->fp8_param_gather << 32 |
             (uint64_t)x->moe << 33;
    key[2] = x->p | x->v << 32;
    key[3] = x->d;
    key[4] = per_micro ? x->micro : 0;
    key[5] = mem->parameters_per_gpu;
    key[6] = memo_bits(crit->bwd_window);
    key[7] = comm->dp_grad_bytes;
    key[8] = par->ddp_bucket_size;
    key[9] = (uint64_t)par->ep | (uint64_t)par->etp << 32;
    key[10] = x->dc;
    key[11] = x->t;
    key[12] = x->lps;
    key[13] = x->edp;
    key[14] = comm->expert_dp_grad_bytes;
    key[15] = comm->pp_message_bytes;
    key[16] = mem->parameters_first_stage;
    key[17] = mem->parameters_last_stage;
    key[18] = memo_bits(crit->fwd_wall);
    key[19] = crit->layers;
    key[20] = memo_bits(t_send);
    key[21] = critical;
    key[22] = x->c;
    key[23] = x->L;
}

/* sync_terms() through the memo, for an even split of one kind of layer: a hit sets its lines
 * and replays its additions to the busy time in their order. */
static int
sync_terms_memo(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                const struct spsim_parallel *par, const struct spsim_layer_summary *le,
                const struct shape *x, const struct spsim_memory_report *mem,
                const struct spsim_comm_report *comm, const struct stage_time *crit, double t_send,
                struct spsim_time_report *tr, struct busy *busy)
{
    /* Muon's step lines (optimizer_muon_*) are not among what a slot replays */
    if (!memo || !le->id || !x->plan->even || x->mixed || x->bf16 ||
        par->optimizer == SPSIM_OPTIMIZER_MUON || par->optimizer_cpu_offload)
        return sync_terms(memo, hw, par, le, x, mem, comm, crit, t_send, tr, busy);
    uint64_t key[SPSIM_SYNC_MEMO_KEY];
    sync_key(par, le, x, mem, comm, crit, t_send, tr->critical_stage, key);
    struct spsim_sync_memo_slot *s =
        &memo->sync[memo_hash(key, SPSIM_SYNC_MEMO_HASHED, SPSIM_SYNC_MEMO_BITS)];
    if (s->used && memcmp(s->key, key, sizeof(key)) == 0 && memo_par_equal(&s->par, par)) {
        tr->dp_exposed_s = s->dp_exposed_s;
        tr->dp_buckets = s->dp_buckets;
        tr->param_gather_exposed_s = s->param_gather_exposed_s;
        tr->tied_embedding_allreduce_s = s->tied_embedding_allreduce_s;
        tr->fp8_amax_allreduce_s = s->fp8_amax_allreduce_s;
        tr->moe_expert_bias_allreduce_s = s->moe_expert_bias_allreduce_s;
        tr->optimizer_s = s->optimizer_s;
        for (uint32_t i = 0; i < s->nbusy; i++)
            busy_add(busy, s->busy_nvlink[i], s->busy_add[i]);
        return SPSIM_OK;
    }
    uint32_t first = busy->n;
    int rc = sync_terms(memo, hw, par, le, x, mem, comm, crit, t_send, tr, busy);
    if (rc != SPSIM_OK || busy->n > SPSIM_BUSY_LOG)
        return rc; /* more additions than the log holds: not remembered */
    *s = (struct spsim_sync_memo_slot){.used = true,
                                       .dp_buckets = tr->dp_buckets,
                                       .nbusy = busy->n - first,
                                       .dp_exposed_s = tr->dp_exposed_s,
                                       .param_gather_exposed_s = tr->param_gather_exposed_s,
                                       .tied_embedding_allreduce_s = tr->tied_embedding_allreduce_s,
                                       .fp8_amax_allreduce_s = tr->fp8_amax_allreduce_s,
                                       .moe_expert_bias_allreduce_s =
                                           tr->moe_expert_bias_allreduce_s,
                                       .optimizer_s = tr->optimizer_s};
    memcpy(s->key, key, sizeof(key));
    spsim_copy(&s->par, par, sizeof(*par));
    memcpy(s->busy_nvlink, busy->nvlink + first, s->nbusy * sizeof(bool));
    memcpy(s->busy_add, busy->add + first, s->nbusy * sizeof(double));
    return SPSIM_OK;
}

int
spsim_compose_time(struct spsim_coll_memo *memo, const struct spsim_model *model,
                   const struct spsim_hardware *hw, const struct spsim_parallel *par,
                   const struct spsim_layer_summary *le, const struct shape *x,
                   const struct spsim_memory_report *mem, const struct spsim_comm_report *comm,
                   struct spsim_time_report *tr)
{
    (void)model;
    double t_send = 0, avg = 0;
    struct stage_time critical = {0};
    const struct stage_time *crit = &critical;
    const double replayed_offload[2] = {
        par->recompute == SPSIM_RECOMPUTE_FULL ? mem->recomputed_layers_per_stage : (double)x->lps,
        offload_exposed(hw, par, le, x, tr)};
    int rc = pipeline_stages(memo, hw, par, le, x, comm, replayed_offload, &t_send, &critical, &avg,
                             &tr->critical_stage);
    if (rc)
        return rc;
    double p2p = 2.0 * (double)x->v * t_send;
    double mb = (double)x->micro, hidden = 0;
    double p2p_steady = p2p_exposed_s(hw, par, x, crit, t_send, &hidden);
    /* the host's calls around each blocking transfer (log_host.c), 2v a micro-batch */
    double p2p_host = 2.0 * (double)x->v * spsim_p2p_host_s(hw, par, x, t_send);
    p2p_steady += p2p_host;
    tr->pp_p2p_host_s = (mb + (x->p - 1.0) / x->v) * p2p_host;
    tr->pp_p2p_hidden_s = mb * hidden;
    tr->microbatch_s = crit->wall + p2p_steady;
    tr->forward_s = mb * crit->fwd;
    tr->backward_s = mb * crit->bwd;
    tr->wgrad_s = mb * crit->wgrad;
    tr->recompute_s = mb * crit->rec;
    tr->tp_exposed_s = mb * crit->exposed;
    tr->cp_exposed_s = mb * crit->cp_exposed;
    tr->offload_exposed_s = mb * crit->offload;
    /* Bubble (Narayanan et al. 2021): (p − 1)/v micro-batch slots of fill and drain. */
    tr->pp_bubble_s = (x->p - 1.0) / x->v * (avg + p2p + p2p_host);
    if (par->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON)
        tr->pp_bubble_s = schedule_bubble(par, le, x, crit, avg, t_send);
    tr->pp_p2p_s = mb * p2p_steady;

    struct busy busy = {0};
    double tp_busy = mb * crit->tp_comm + (x->p - 1.0) / x->v * crit->tp_comm;
    busy_add(&busy, le->tp_group.per_domain >= le->tp_group.size, tp_busy);
    busy_add(&busy, comm->pp_tier == SPSIM_TIER_NVLINK, (mb + x->p - 1.0) * p2p);
    if (x->c > 1)
        busy_add(&busy, !le->layer.cp_network,
                 mb * crit->cp_comm + (x->p - 1.0) / x->v * crit->cp_comm);
    if (x->moe) {
        /* The MoE layers' token exchanges (in the stage's wall time already). */
        double moe_layers = (double)(crit->layers - rank_dense(x, tr->critical_stage));
        tr->ep_exposed_s = mb * moe_layers * le->layer.ep_exposed_s;
        /* The routers' tokens-per-expert AllReduces (in the stage's wall, not in cp_exposed). */
        tr->moe_aux_allreduce_s = mb * moe_layers * le->layer.moe_aux_exposed_s;
        if (par->moe_a2a_overlap || par->pp_schedule == SPSIM_PP_SCHEDULE_DUALPIPE ||
            par->pp_schedule == SPSIM_PP_SCHEDULE_DUALPIPEV)
            ep_a2a_overlap(par, le, x, moe_layers, tr);
        busy_add(&busy, !le->layer.ep_network,
                 (mb + (x->p - 1.0) / x->v) * moe_layers * le->layer.ep_comm_s);
    }
    if ((rc = sync_terms_memo(memo, hw, par, le, x, mem, comm, crit, t_send, tr, &busy)))
        return rc;
    tr->iteration_s = tr->forward_s + tr->backward_s + tr->recompute_s + tr->tp_exposed_s +
                      tr->cp_exposed_s + tr->pp_bubble_s + tr->pp_p2p_s +
                      (tr->dp_exposed_s + tr->tied_embedding_allreduce_s) + tr->optimizer_s +
                      tr->offload_exposed_s + tr->ep_exposed_s + tr->fp8_amax_allreduce_s +
                      tr->moe_aux_allreduce_s + tr->moe_expert_bias_allreduce_s;
    host_time(hw, le, mb, crit, tr);
    spsim_optimizer_host(memo, hw, par, le, x, mem, tr);
    if ((rc = spsim_log_host(memo, hw, par, x, tr)))
        return rc;
    tr->layer_forward_s = le->layer.fwd_s;
    tr->layer_backward_s = le->layer.bwd_s + le->layer.recompute_s;
    tr->nvlink_busy_s = busy.nv;
    tr->network_busy_s = busy.net;
    return SPSIM_OK;
}
