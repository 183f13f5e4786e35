#!/bin/sh
# Re-check that the tests pin each term of the time and memory model: every mutation below
# (half the pipeline bubble, three times the optimizer step, no pipeline sends, ...) is applied
# with sed to a temporary copy of the tree, never to the checkout, which is built once; then
# each mutated file is rebuilt and the unit tests must FAIL. A mutation whose sed changes
# nothing (the code moved) is reported as such, not as a pass (doc/testing.md).
#   scripts/mutation_check.sh              every mutation, against the whole unit suite
#   scripts/mutation_check.sh NAME...      only these (names in the table below)
#   --quick                                each mutation against the unit tests that killed it
#                                          when the table was last checked (its 4th field),
#                                          the whole unit suite where it names none
#   --changed[=REV]                        only the mutations of the files that differ from REV
#                                          (default HEAD^1: what the last commit or merge
#                                          changed); nothing to do is exit 0 without a build
# CI runs `--changed --quick` (.ci/run): a commit that touches no mutated file costs nothing,
# one that does a build of the copy and a few unit tests per mutation of its files.
# Exit 0 when every mutation applied and failed a test; 1 otherwise.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
quick=0 changed=""
while [ $# -gt 0 ]; do
    case $1 in
    --quick) quick=1 ;;
    --changed) changed=HEAD^1 ;;
    --changed=*) changed=${1#--changed=} ;;
    *) break ;;
    esac
    shift
done

# name@file@sed expression@tests (one substitution; the file must change; tests: the unit tests
# that killed it at the last full check, comma-separated, which --quick runs)
mutations='sinks-parameters-dropped@src/profiles/model_params.c@s|        p->sharded = spsim_add(p->sharded, m->heads, ok);|        p->sharded = spsim_add(p->sharded, 0, ok);|@moe_model
sinks-tensor-dropped@src/engine/mb_host.c@s|softmax_type == SPSIM_SOFTMAX_LEARNABLE ? 1.0 : 0.0;|softmax_type == SPSIM_SOFTMAX_LEARNABLE ? 0.0 : 0.0;|@moe_model
sinks-flash-backend-accepted@src/engine/parallel.c@s|    if (p->attention_backend == SPSIM_ATTN_FLASH)|    if (0)|@cli-import
sinks-cp-p2p-accepted@src/engine/parallel.c@s|    if (p->cp > 1 \&\& p->cp_comm_type != SPSIM_CP_A2A)|    if (0)|@cli-import
hf-gpt-oss-without-sinks@src/interop/hf_config.c@s|strcmp(f->type, "gpt_oss") == 0 ? SPSIM_SOFTMAX_LEARNABLE|0 ? SPSIM_SOFTMAX_LEARNABLE|@moe_model
hf-gpt-oss-aux-loss-kept@src/interop/hf_config.c@s|    m->load_balancing = SPSIM_BALANCE_NONE;|    (void)0;|@moe_model
softmax-type-flag-not-read@src/interop/megatron_args.c@s|        s->softmax_type = (enum spsim_softmax)type;|        s->softmax_type = SPSIM_SOFTMAX_VANILLA;|@megatron_moe,scripts
quick-geglu-not-gated@src/interop/megatron_args.c@s|    s->mlp = m->given\[F_SWIGLU\] \|\| m->given\[F_QUICK_GEGLU\] ? SPSIM_MLP_SWIGLU|    s->mlp = m->given[F_SWIGLU] ? SPSIM_MLP_SWIGLU|@scripts
softmax-type-not-exported@src/interop/megatron_export.c@s|    if (s->softmax_type != SPSIM_SOFTMAX_VANILLA) /\* arguments.py --softmax-type \*/|    if (0)|@megatron_moe
interleaved-split-peak-without-b@src/engine/stages.c@s|uint64_t h = held + b + chunk_steps(j, g, period, v - 1 - s) - f;|uint64_t h = held + chunk_steps(j, g, period, v - 1 - s) - f;|@stages
interleaved-split-peak-no-edges@src/engine/stages.c@s|        uint64_t j = spsim_min_u64(edges\[i\], steady - 1);|        uint64_t j = spsim_min_u64(0 * edges[i], steady - 1);|@stages
fsdp-pipelined-accepted@src/engine/parallel.c@s|    if (p->zero >= 2 \&\& p->pp > 1)|    if (0)|@zero,cli-sweep
ce-unfused-fwd-halved@src/engine/layer.c@s|"logits (fp32)", 38, 14,|"logits (fp32)", 19, 14,|@terms
ce-unfused-bwd-halved@src/engine/layer.c@s|"logits (fp32)", 38, 14,|"logits (fp32)", 38, 7,|@terms
ce-te-inplace-keeps-fp32@src/engine/layer.c@s|"logits, their gradient in place (16-bit)", 6, 4, 2}|"logits, their gradient in place (16-bit)", 6, 4, 4}|@terms
ce-native-working-as-unfused@src/engine/summary.c@s|cfg->cross_entropy == 1 + SPSIM_CE_NATIVE   ? 6|cfg->cross_entropy == 1 + SPSIM_CE_NATIVE   ? 2|@terms,megatron_runs
ce-fusion-not-in-layer-config@src/engine/timing.c@s|    cfg->cross_entropy = par->cross_entropy_loss_fusion|    cfg->cross_entropy = 0 \&\& par->cross_entropy_loss_fusion|@terms
ce-fusion-flag-not-read@src/interop/megatron_args.c@s|p->cross_entropy_loss_fusion = m->given\[F_CE_FUSION\];|p->cross_entropy_loss_fusion = false;|@megatron_runs
ce-te-launch-line-accepted@src/interop/megatron_args.c@s|if (p->cross_entropy_loss_fusion \&\& impl \&\& !m->yaml)|if (0)|@cli-import
export-bridge-gather-alone-written@src/interop/megatron_export.c@s|if (p->overlap_param_gather \&\& (p->overlap_grad_reduce \|\| p->zero >= 2))|if (p->overlap_param_gather)|@cli-import
deferred-wgrad-flag-not-read@src/interop/megatron_args.c@s|    p->defer_embedding_wgrad_compute = m->given\[F_DEFER_EMB_WGRAD\];|    p->defer_embedding_wgrad_compute = false;|@megatron_runs,recipes
deferred-wgrad-kept-halved@src/engine/memory.c@s|    uint64_t kept = spsim_min_u64(limit, x->micro - 1);|    uint64_t kept = spsim_min_u64(limit, x->micro - 1) / 2;|@terms
deferred-wgrad-input-dropped@src/engine/memory.c@s|spsim_add(le->logits_working_bytes, input, ok)|spsim_add(le->logits_working_bytes, 0, ok)|@terms
deferred-wgrad-not-in-last-stage@src/engine/memory.c@s|mem->activation_last_stage_bytes = spsim_add(last, mem->activation_deferred_wgrad_bytes, ok);|mem->activation_last_stage_bytes = last;|@terms
deferred-wgrad-limit-ignored@src/engine/memory.c@s|uint64_t limit = par->wgrad_deferral_limit ? par->wgrad_deferral_limit : x->micro;|uint64_t limit = x->micro;|@terms
json-plain-always@src/profiles/jsontext.c@s|                \*plain = false;|                (void)0;|@profiles
recheck-no-sharding-rule@src/engine/parallel.c@s|check_fp8(p, NULL) == SPSIM_OK \&\& check_sharding(p, NULL) == SPSIM_OK \&\&|check_fp8(p, NULL) == SPSIM_OK \&\&|@staged
recheck-no-batch-split@src/engine/parallel.c@s|              p->gbs % per_step == 0 \&\&|              1 \&\&|@staged
recheck-no-groups-rule@src/engine/parallel.c@s|check_groups(p, p->vpp, micro, NULL) == SPSIM_OK \&\&|1 \&\&|@staged
bubble-halved@src/engine/pipeline_time.c@s|tr->pp_bubble_s = (x->p - 1.0) / x->v \* (avg + p2p + p2p_host);|tr->pp_bubble_s = 0.5 * (x->p - 1.0) / x->v * (avg + p2p + p2p_host);|@overlap,terms
hsdp-outer-allreduce-bytes-halved@src/engine/comm.c@s|: 2 \* outer_frac(S, R);|: outer_frac(S, R);|@hsdp
hsdp-outer-reduction-hidden@src/engine/dp_time.c@s|rs += outer_last_exposed(crit->bwd_window, finish, o.time_s,|rs += outer_last_exposed(crit->bwd_window, finish, 0 * o.time_s,|@hsdp
hsdp-moe-outer-bytes-halved@src/engine/comm.c@s|outer ? outer_frac(shard, x->R) : 2 \* outer_frac(shard, x->R);|outer ? outer_frac(shard, x->R) : outer_frac(shard, x->R);|@hsdp
hsdp-moe-outer-time-dropped@src/engine/dp_time.c@s|double alone = o.time_s + a.time_s + b.time_s;|double alone = a.time_s + b.time_s;|@hsdp
hsdp-moe-experts-over-edp@src/engine/compose.h@s|? x->edp : x->edi;|? x->edp : x->edp;|@hsdp
hsdp-fsdp-moe-opt-over-edi@src/engine/compose.h@s|? x->edp : x->edi;|? x->edi : x->edi;|@hsdp
hsdp-fsdp-moe-outer-rs-bytes-halved@src/engine/comm.c@s|outer ? outer_frac(shard, x->R) :|outer ? outer_frac(shard, x->R) / 2 :|@hsdp
hsdp-fsdp-moe-outer-ag-bytes-halved@src/engine/comm.c@s|= outer ? outer_frac(weights, x->R) : 0;|= outer ? outer_frac(weights, x->R) / 2 : 0;|@hsdp
hsdp-fsdp-moe-outer-bytes-halved@src/engine/dp_time.c@s|(double)x->edi, grads, o, og);|(double)x->edi, grads / 2, o, og);|@hsdp
hsdp-fsdp-moe-outer-ag-dropped@src/engine/dp_time.c@s|og.time_s += eog.time_s;|og.time_s += 0 * eog.time_s;|@hsdp
hsdp-fsdp-moe-outer-exposure-dropped@src/engine/dp_time.c@s|outer_last_exposed(crit->bwd_window, a.time_s, outer,|outer_last_exposed(crit->bwd_window, a.time_s, 0 * outer,|@hsdp
main-grad-add-halved@src/engine/layer.c@s|op->bwd_bytes = (2.0 + 2.0 \* L->cfg.main_grad_bytes) \* elements;|op->bwd_bytes = (1.0 + 1.0 * L->cfg.main_grad_bytes) * elements;|@terms
embedding-table-grad-dropped@src/engine/layer.c@s|cfg->frozen ? 0 : (4.0 + 2.0 \* cfg->main_grad_bytes) \* table + 6.0|cfg->frozen ? 0 : 6.0|@terms
main-grad-add-launched@src/engine/host.c@s|if (st->op->mb_host_launched)|if (0)|@terms
log-host-calls-halved@src/engine/log_host.c@s|double calls = keys + 4.0, launches = keys + 2.0;|double calls = 0.5 * (keys + 4.0), launches = keys + 2.0;|@host
log-host-interval-halved@src/engine/log_host.c@s|double icalls = 4.0 + 2.0 \* keys|double icalls = 2.0 + 1.0 * keys|@host
log-host-tensorboard-halved@src/engine/log_host.c@s|calls += 2.0 \* (4.0 + keys)|calls += 1.0 * (4.0 + keys)|@host
log-host-memory-stats-dropped@src/engine/log_host.c@s|calls += 1.0 + 4.0;|calls += 0.0;|@host
log-host-exposed-halved@src/engine/log_host.c@s|tr->iteration_s += tr->log_host_s;|tr->iteration_s += 0.5 * tr->log_host_s;|@host
p2p-host-halved@src/engine/log_host.c@s|return 3.0 \* call + hw->kernel_launch_s|return 1.5 * call + hw->kernel_launch_s|@host
p2p-host-waits-hidden@src/engine/log_host.c@s|spsim_max_d(0.0, 2.0 \* call - t_send)|spsim_max_d(0.0, 0.0 * call - t_send)|@host
p2p-host-not-in-bubble@src/engine/pipeline_time.c@s|(avg + p2p + p2p_host);|(avg + p2p);|@schedules,trace
p2p-host-not-in-steady-state@src/engine/pipeline_time.c@s|    p2p_steady += p2p_host;|    p2p_steady += 0.5 * p2p_host;|@host
opt-host-memo-no-shard-ranks@src/engine/opt_host.c@s#dist ? \(D\|x->edi\) : 0,#0,#@staged
opt-host-memo-no-params-per-gpu@src/engine/opt_host.c@s|^        elements,$|        0,|@staged
opt-host-tensor-ops-halved@src/engine/opt_host.c@s|c->ops = ns \* (dist ? 12.0 : 8.0)|c->ops = ns * (dist ? 6.0 : 4.0)|@host
opt-host-never-hidden@src/engine/opt_host.c@s|double exposed = spsim_max_d(0.0, c\[i\].step_s - gpu) + after;|double exposed = c[i].step_s + after;|@host
opt-host-exposed-halved@src/engine/opt_host.c@s|tr->iteration_s += tr->optimizer_host_exposed_s;|tr->iteration_s += 0.5 * tr->optimizer_host_exposed_s;|@host
opt-host-experts-one-tensor@src/engine/mb_host.c@s|return n + 1.0 + local \* (2.0 + 2.0 \* b) + shared;|return n + 1.0 + (2.0 + 2.0 * b) + shared;|@host
opt-host-torch-call-halved@src/engine/opt_host.c@s|const double price\[2\] = {hw->host_torch_call_s,|const double price[2] = {0.5 * hw->host_torch_call_s,|@host
torch-call-field-ignored@src/profiles/hardware.c@s|hw->host_torch_call_us = hw->torch_call_given ? call : op;|hw->host_torch_call_us = op;|@host
torch-call-no-fallback@src/profiles/hardware.c@s|hw->host_torch_call_us = hw->torch_call_given ? call : op;|hw->host_torch_call_us = hw->torch_call_given ? call : 0;|@host
calibrate-torch-call-not-scaled@src/calibrate/runs_profile.c@s|: k->nnodes \&\& k->base\[0\] > 0.0 ? theta\[i\] / k->base\[0\]|: false ? theta[i] / k->base[0]|@calibrate_runs
mb-hooks-halved@src/engine/mb_host.c@s|h->bwd_calls = tensors + 2.0 \* adds;|h->bwd_calls = 0.5 * (tensors + 2.0 * adds);|@host
mb-wgrad-fusion-ignored@src/engine/mb_host.c@s|double adds = cfg->wgrad_fusion ? tensors - weights : tensors;|double adds = tensors - weights;|@host
mb-get-batch-halved@src/engine/mb_host.c@s|h->fwd_head_calls = h->fwd_head_launches = keys + sent;|h->fwd_head_calls = h->fwd_head_launches = 0.5 * (keys + sent);|@host
mb-loss-halved@src/engine/mb_host.c@s|h->fwd_tail_calls = 15.0;|h->fwd_tail_calls = 7.5;|@host
mb-loss-wait-ignored@src/engine/host.c@s|    if (h->wait)|    if (false)|@host
mb-after-wait-dropped@src/engine/host.c@s|fwd->host += h->after_calls \* call_s + h->after_launches \* launch_s;|(void)0;|@host
trace-hop-at-critical-pace@src/engine/trace.c@s|double hop = p > 1 ? t->pp_bubble_s / (p - 1) : 0;|double hop = p > 1 ? step : 0;|@trace
trace-hop-halved@src/engine/trace.c@s|double hop = p > 1 ? t->pp_bubble_s / (p - 1) : 0;|double hop = p > 1 ? 0.5 * t->pp_bubble_s / (p - 1) : 0;|@trace
trace-zbh1-w-not-deferred@src/engine/trace.c@s|        if (i >= r)|        if (i + 1 >= r)|@trace
trace-wgrad-halved@src/engine/trace.c@s|x.w = spsim_min_d(t->wgrad_s / (m \* v)|x.w = spsim_min_d(0.5 * t->wgrad_s / (m * v)|@trace
trace-dual-warmup-halved@src/engine/trace.c@s|i < (n - h - 1) \* 2; i++|i < (n - h - 1); i++|@trace
trace-dual-no-flip@src/engine/trace.c@s|d.flip = !v_shape \&\& r >= p / 2;|d.flip = false;|@trace
trace-idle-spread-halved@src/engine/trace.c@s|double k = idle > 0 ? bubble / idle : 0|double k = idle > 0 ? 0.5 * bubble / idle : 0|@trace
trace-dual-pair-as-two-ops@src/engine/trace.c@s|    return o->paired \&\& o->kind == OP_F;|    return false;|@trace
trace-zbv-backward-chunk-unmapped@src/engine/zbv_order.c@s|(cat == 0 ? chunk : 1 - chunk)|(chunk)|@trace
trace-zbv-no-approved-rerun@src/engine/zbv_order.c@s|if (!try_run(g) \|\| !(max_bubble(g, -1) < most))|if (1 \|\| !try_run(g))|@trace
trace-zbv-bubble-from-zero@src/engine/trace.c@s|idle - (from_first \&\& s->n\[r\] ? o\[0\].start : 0)|idle|@trace
trace-dependency-at-start@src/engine/trace.c@s|    return o->done ? o->end : -1;|    return o->done ? o->start : -1;|@trace
zbh1-w-halved@src/engine/pp_schedule.c@s|slots = p - 1, chunk = stage - 2 \* wgrad;|slots = p - 1, chunk = stage - wgrad;|@schedules
zbv-w-halved@src/engine/pp_schedule.c@s|chunk = (stage - 3 \* wgrad) / 2;|chunk = (stage - 1.5 * wgrad) / 2;|@schedules
zbv-slots-halved@src/engine/pp_schedule.c@s|slots = p - 1, chunk = (stage - 3 \* wgrad) / 2;|slots = (p - 1) / 2, chunk = (stage - 3 * wgrad) / 2;|@schedules
dualpipe-slots-doubled@src/engine/pp_schedule.c@s|slots = p / 2 - 1, chunk|slots = p - 1, chunk|@schedules
dualpipe-b-halved@src/engine/pp_schedule.c@s|chunk = stage - hidden + bwd - 3 \* wgrad;|chunk = stage - hidden + 0.5 * bwd - 3 * wgrad;|@schedules
dualpipe-pair-hides-nothing@src/engine/pp_schedule.c@s|chunk = stage - hidden + bwd - 3 \* wgrad;|chunk = stage + bwd - 3 * wgrad;|@schedules
dualpipev-chunk-halved@src/engine/pp_schedule.c@s|chunk = (stage - hidden + bwd - 3 \* wgrad) / 2;|chunk = (stage - hidden + bwd - 3 * wgrad) / 4;|@schedules
schedule-sends-halved@src/engine/pp_schedule.c@s|return slots \* (spsim_max_d(0.0, chunk) + 2 \* send);|return slots * (spsim_max_d(0.0, chunk) + send);|@schedules
zbv-inflight-halved@src/engine/pp_schedule.c@s|return spsim_min_u64(2 \* pp, 2 \* micro);|return spsim_min_u64(pp, 2 * micro);|@schedules
dualpipe-inflight-pp@src/engine/pp_schedule.c@s|return spsim_min_u64(pp + 1, micro);|return spsim_min_u64(pp, micro);|@schedules
dualpipev-inflight-2pp@src/engine/pp_schedule.c@s|return spsim_min_u64(2 \* pp + 1, 2 \* micro);|return spsim_min_u64(2 * pp, 2 * micro);|@schedules
dualpipe-one-copy@src/engine/memory.c@s|n = spsim_add(n, own_parameters(m, le, x, mirror_rank(x, r), ok), ok);|n = spsim_add(n, 0, ok);|@schedules
dualpipe-pairs-off@src/engine/pp_schedule.c@s|return m - 1.5 \* p + (double)h + 1 - (h == pp / 2 - 1 ? 1 : 0);|return m - 1.5 * p + (double)h + 1;|@schedules
wgrad-halved@src/engine/timing.c@s|be->wgrad_compute_s += c->compute_s;|be->wgrad_compute_s += 0.5 * c->compute_s;|@schedules
dualpipe-no-pairing@src/engine/pipeline_time.c@s|if (par->moe_a2a_overlap \|\| par->pp_schedule == SPSIM_PP_SCHEDULE_DUALPIPE \|\||if (par->moe_a2a_overlap \|\||@schedules
schedule-held-as-megatron@src/engine/evaluate.c@s|if (x.schedule != SPSIM_PP_SCHEDULE_MEGATRON)|if (0 \&\& x.schedule != SPSIM_PP_SCHEDULE_MEGATRON)|@schedules
optimizer-x3@src/engine/dp_time.c@s|return opt_bytes / hw->hbm_achievable_Bps;|return 3.0 * opt_bytes / hw->hbm_achievable_Bps;|@terms
no-pipeline-sends@src/engine/pipeline_time.c@s|\*t_send = ct.time_s + ag.time_s;|*t_send = 0 * (ct.time_s + ag.time_s);|@overlap,terms
overlapped-dp-free@src/engine/dp_time.c@s|\*exposed = spsim_max_d(0.0, grad) + tr->param_gather_exposed_s;|*exposed = 0 * spsim_max_d(0.0, grad) + tr->param_gather_exposed_s;|@overlap,terms
no-tied-allreduce@src/engine/dp_time.c@s|tr->tied_embedding_allreduce_s = e.time_s;|tr->tied_embedding_allreduce_s = 0 * e.time_s;|@terms,time
tied-allreduce-in-dp@src/engine/dp_time.c@s|tr->tied_embedding_allreduce_s = e.time_s;|tr->dp_exposed_s += e.time_s;|@terms,time
flash-backward-1x@src/engine/schedule.c@s|st->flops = 2.5 \* op->flash_fwd_flops;|st->flops = 1.0 * op->flash_fwd_flops;|@terms,mla
layernorm-backward-bytes-x2@src/engine/layer.c@0,/op->bwd_bytes = 10.0 \* elements;/s//op->bwd_bytes = 20.0 * elements;/@terms,mla
adam-unsharded@src/engine/dp_time.c@s|double adam = coef \* params / (z >= 1 ? D : 1.0)|double adam = coef * params / (z >= 1 ? 1.0 : 1.0)|@terms,zero
embedding-masks-p-interleaved@src/engine/memory.c@s|return spsim_min_u64(f / period \* g + spsim_min_u64(f % period, g), x->micro);|return spsim_min_u64(x->p, x->micro);|@terms,memory
iteration-without-sends@src/engine/pipeline_time.c@s|tr->pp_bubble_s + tr->pp_p2p_s +$|tr->pp_bubble_s + 0 * tr->pp_p2p_s +|@overlap,terms
overlap-sm-share-halved@src/engine/timing.c@s|(double)(cfg->tp_comm_overlap ? SPSIM_UB_COMM_SMS : hw->nccl_channels) / hw->sm_count;|0.5 * (cfg->tp_comm_overlap ? SPSIM_UB_COMM_SMS : hw->nccl_channels) / hw->sm_count;|@overlap,terms
cp-block-recompute-dropped@src/engine/pipeline_time.c@s|s->cp_exposed += layers \* (b->cp_exposed_s - b->cp_recompute_exposed_s) +|s->cp_exposed += 0 * (b->cp_exposed_s - b->cp_recompute_exposed_s) +|@cp
cp-recompute-in-tp@src/engine/timing.c@s|if (!cp \&\& !ep) { /\* the TP|if (!ep) { /* the TP|@cp
cp-last-block-hidden@src/engine/timing.c@s|(r - 2) \* spsim_max_d(0.0, two.time_s - attn) + one.time_s;|(r - 2) * spsim_max_d(0.0, two.time_s - attn) + 0 * one.time_s;|@terms,cp
full-recompute-free@src/engine/pipeline_time.c@s|tr->recompute_s = mb \* crit->rec;|tr->recompute_s = 0 * mb * crit->rec;|@terms,accuracy
dp-overlap-ignores-tp@src/engine/dp_time.c@s|if (tp_bytes > 0)|if (0 * tp_bytes > 0)|@terms
no-sp-send-regather@src/engine/pipeline_time.c@s|if (!par->sp \&\& x->t > 1 \&\&|if (0 \&\& !par->sp \&\& x->t > 1 \&\&|@terms
nvfp4-cast-halved@src/engine/fp8.c@s|op->cast_fwd_bytes = (double)elements \* SPSIM_NVFP4_CAST_BYTES;|op->cast_fwd_bytes = 0.5 * (double)elements * SPSIM_NVFP4_CAST_BYTES;|@fp8
nvfp4-at-fp8-rate@src/engine/timing.c@s|return cfg->dtype == SPSIM_DTYPE_NVFP4 ? SPSIM_DTYPE_NVFP4 : SPSIM_DTYPE_FP8;|return SPSIM_DTYPE_FP8;|@fp8
amax-tp-free@src/engine/schedule.c@s|if (op->amax_bytes == 0 \|\| coll != SPSIM_COLL_ALL_GATHER)|if (1 \|\| coll != SPSIM_COLL_ALL_GATHER)|@fp8
delayed-amax-group-cp-twice@src/engine/dp_time.c@s|uint64_t group = x->t \* x->dc; /\*|uint64_t group = x->t * x->dc * x->c; /*|@fp8
delayed-amax-halved@src/engine/dp_time.c@s|tr->fp8_amax_allreduce_s = times \* (f.time_s + b.time_s);|tr->fp8_amax_allreduce_s = 0.5 * times * (f.time_s + b.time_s);|@fp8
moe-router-bytes-halved@src/engine/layer.c@s|10.0 \* scores + 12.0 \* (double)T \* k, 10.0 \* scores);|5.0 * scores + 6.0 * (double)T * k, 5.0 * scores);|@moe_terms,moe
moe-permute-halved@src/engine/layer.c@s|"permute (token copies into expert order)", 4.0 \* copies \* h,|"permute (token copies into expert order)", 2.0 * copies * h,|@moe_terms,moe_imbalance
moe-unpermute-halved@src/engine/layer.c@s|2.0 \* copies \* h + 2.0 \* T \* h, 4.0 \* copies \* h);|1.0 * copies * h + 1.0 * T * h, 2.0 * copies * h);|@moe_terms,moe
moe-dispatch-halved@src/engine/moe.c@s|out->dispatch = spsim_mul(copies, 2 \* h, ok);|out->dispatch = spsim_mul(copies / 2, 2 * h, ok);|@moe_terms,ep_overlap
moe-probs-alltoall-halved@src/engine/moe.c@s|out->dispatch_probs = spsim_mul(copies, 4, ok);|out->dispatch_probs = spsim_mul(copies, 2, ok);|@moe_terms,moe
moe-probs-alltoall-dropped@src/engine/layer.c@s|add_ep_op(bld, "dispatch all-to-all of the probabilities (EP)", SPSIM_COLL_ALL_TO_ALL,|if (0) add_ep_op(bld, "dispatch all-to-all of the probabilities (EP)", SPSIM_COLL_ALL_TO_ALL,|@moe_terms,moe
moe-etp-gather-without-probs@src/engine/moe.c@s|spsim_mul(copies \* cfg->etp, 2 \* h + 4, ok)|spsim_mul(copies * cfg->etp, 2 * h, ok)|@moe_terms
moe-combine-halved@src/engine/moe.c@s|out->combine = spsim_mul(copies, 2 \* h, ok);|out->combine = spsim_mul(copies / 2, 2 * h, ok);|@moe_terms,ep_overlap
moe-fc2-bias-fp32-fwd-halved@src/engine/layer.c@s|(fp32_probs ? 28.0 : 12.0) \* elements,|(fp32_probs ? 14.0 : 12.0) * elements,|@moe_terms
moe-fc2-bias-fp32-bwd-halved@src/engine/layer.c@s|(fp32_probs ? 40.0 : 16.0) \* elements);|(fp32_probs ? 20.0 : 16.0) * elements);|@moe_terms
moe-fc2-bias-bf16-halved@src/engine/layer.c@s|(fp32_probs ? 28.0 : 12.0) \* elements, (fp32_probs ? 40.0 : 16.0) \* elements);|(fp32_probs ? 28.0 : 6.0) * elements, (fp32_probs ? 40.0 : 8.0) * elements);|@moe_terms
moe-fc2-bias-dropped@src/engine/layer.c@s|        add_expert_fc2_bias(bld, x, tr);|        (void)0;|@moe_terms
grouped-gemm-halved@src/engine/timing.c@s|\*seconds = (double)rounds \* full + part;|*seconds = 0.5 * ((double)rounds * full + part);|@moe_terms
grouped-gemm-one-batch@src/engine/timing.c@s|#define SPSIM_TE_GEMM_STREAMS 4|#define SPSIM_TE_GEMM_STREAMS 64|@moe_terms
grouped-gemm-one-launch@src/engine/host.c@s|(uint32_t)st->gbatch : 1;|1 : 1;|@host
moe-sort-chunks-halved@src/engine/layer.c@s|"sort chunks by local expert", 4.0 \* rows \* h + 8.0 \* rows,|"sort chunks by local expert", 2.0 * rows * h + 4.0 * rows,|@moe_terms
moe-unsort-chunks-halved@src/engine/layer.c@s|"unsort chunks (rank order)", 4.0 \* (double)tr->rows \* h,|"unsort chunks (rank order)", 2.0 * (double)tr->rows * h,|@moe_terms
moe-etp-dispatch-halved@src/engine/moe.c@s|spsim_mul(copies \* cfg->etp, 2 \* h + 4, ok) : 0;|spsim_mul(copies * cfg->etp / 2, 2 * h + 4, ok) : 0;|@moe_terms,ep_overlap
moe-grouped-fc1-half-experts@src/engine/layer.c@0,/op->batch = tr->local_experts;/s//op->batch = tr->local_experts \/ 2;/@moe_terms,moe_flex
moe-experts-act-halved@src/engine/layer.c@s|op->fwd_bytes = (x->gate == 2 ? 6.0 : 4.0) \* (double)act|op->fwd_bytes = (x->gate == 2 ? 3.0 : 2.0) * (double)act|@moe_terms,moe_imbalance
moe-shared-width-halved@src/engine/layer.c@s|sx.ffn_t = m->shared_expert_ffn_hidden / x->t;|sx.ffn_t = m->shared_expert_ffn_hidden / x->t / 2;|@moe_terms
moe-aux-scores-fwd-halved@src/engine/layer.c@s|"aux-loss scores and routing map", 11.0 \* te, 16.0 \* te|"aux-loss scores and routing map", 5.5 * te, 16.0 * te|@moe_aux
moe-aux-scores-bwd-halved@src/engine/layer.c@s|"aux-loss scores and routing map", 11.0 \* te, 16.0 \* te|"aux-loss scores and routing map", 11.0 * te, 8.0 * te|@moe_aux
moe-aux-scores-kept-halved@src/engine/layer.c@s|m->experts, \&bld->ok), 4, SPSIM_RG_MOE);|m->experts, \&bld->ok), 2, SPSIM_RG_MOE);|@moe_aux
moe-aux-loss-halved@src/engine/layer.c@s|5.0 \* te, 4.0 \* te);|2.5 * te, 2.0 * te);|@moe_aux
moe-aux-counts-halved@src/engine/layer.c@s|spsim_mul3(8, counts, m->experts, \&bld->ok)|spsim_mul3(4, counts, m->experts, \&bld->ok)|@moe_aux
moe-aux-group-halved@src/engine/layer.c@s|op->cp_group = (uint32_t)n;|op->cp_group = (uint32_t)n / 2;|@moe_aux
moe-aux-line-halved@src/engine/pipeline_time.c@s|tr->moe_aux_allreduce_s = mb \* moe_layers|tr->moe_aux_allreduce_s = 0.5 * mb * moe_layers|@moe_aux
moe-aux-not-in-iteration@src/engine/pipeline_time.c@s|tr->fp8_amax_allreduce_s +$|tr->fp8_amax_allreduce_s + 0 *|@moe_aux
moe-aux-in-cp-line@src/engine/timing.c@s|(st->op->moe_aux ? |(false ? |@moe_aux
moe-expert-bias-bytes-halved@src/engine/dp_time.c@s|double bytes = 4.0 \* (double)x->model->shape.experts|double bytes = 2.0 * (double)x->model->shape.experts|@moe_aux
moe-expert-bias-dropped@src/engine/dp_time.c@s|tr->moe_expert_bias_allreduce_s = e.time_s;|tr->moe_expert_bias_allreduce_s = 0 * e.time_s;|@moe_aux
moe-expert-bias-not-in-iteration@src/engine/pipeline_time.c@s|tr->moe_aux_allreduce_s + tr->moe_expert_bias_allreduce_s;|tr->moe_aux_allreduce_s;|@moe_aux
sustained-gemm-ignored@src/engine/hardware_view.c@s|    hw->clock_scale = hi;|    hw->clock_scale = 1.0 + 0 * hi;|
sustained-gemm-model-halved@src/engine/hardware_view.c@s|        \*sum += s;|        *sum += 0.5 * s;|
attention-table-ignored@src/engine/timing.c@s|    if (!hw->attention \|\| cfg->attn_backend == SPSIM_ATTN_FLASH|    if (1 \|\| !hw->attention \|\| cfg->attn_backend == SPSIM_ATTN_FLASH|
attention-interpolation-halved@src/engine/timing.c@s|(hi_r - lo_r) \* log(seq / lo_s)|0.5 * (hi_r - lo_r) * log(seq / lo_s)|
attention-window-share-halved@src/engine/layer.c@s|op->flash_window_flops = share \* windowed;|op->flash_window_flops = 0.5 * share * windowed;|
hybridep-rate-doubled@src/engine/moe_flex.c@s|double rate = hw->hybridep_Bps\[which\]|double rate = 2.0 * hw->hybridep_Bps[which]|@moe_flex
hybridep-rdma-rate-doubled@src/engine/moe_flex.c@s|rate_rdma = hw->hybridep_rdma_Bps\[which\]|rate_rdma = 2.0 * hw->hybridep_rdma_Bps[which]|@moe_flex
hybridep-domain-sends-without-own@src/engine/moe_flex.c@s|out->p_domain \* (double)N \* load|out->p_domain * (double)(N - 1) * load|@moe_flex
hybridep-kernels-swapped@src/engine/moe_flex.c@s|int which = op->flex_kernel ^ backward;|int which = op->flex_kernel;|@moe_flex
hybridep-recv-bytes-halved@src/engine/layer.c@s|op->flex_recv_bytes = 2ull \* x->h \* f->received;|op->flex_recv_bytes = x->h * f->received;|@moe_flex
hybridep-domain-bytes-halved@src/engine/layer.c@s|op->flex_domain_bytes = 2ull \* x->h \* f->domain_sends;|op->flex_domain_bytes = x->h * f->domain_sends;|@moe_flex
hybridep-rate-not-read@src/profiles/hardware.c@s|        \*to\[i\] = v \* 1e9;|        *to[i] = 0 * v;|@moe_flex
dp-beside-compute-halved@src/engine/dp_time.c@s|return hidden > 0 ? (double)hw->nccl_channels / hw->sm_count \* hidden : 0;|return hidden > 0 ? 0.5 * hw->nccl_channels / hw->sm_count * hidden : 0;|@overlap,terms,zero
dp-beside-compute-whole@src/engine/dp_time.c@s|    double hidden = busy - exposed;|    double hidden = busy;|@overlap,terms,zero
flex-sms-ignored@src/engine/ep_overlap.c@s|    if (cfg->flex_sms)|    if (0 \&\& cfg->flex_sms)|
flex-deepep-sms-halved@src/engine/ep_overlap.c@s|        return 20;|        return 10;|
moe-global-aux-without-dp@src/engine/layer.c@s|(global ? cfg->aux_dp : 1)|(global ? 1 : 1)|@moe_aux
moe-expert-bias-group-without-dp@src/engine/dp_time.c@s|uint64_t group = x->t \* x->dc, routers|uint64_t group = x->t * x->c, routers|@moe_aux
moe-z-loss-halved@src/engine/layer.c@s|"router z-loss", 2.0 \* te, 10.0 \* te|"router z-loss", 1.0 * te, 5.0 * te|@moe_aux
moe-expert-bias-halved@src/engine/layer.c@s|9.0 \* te, 0.0);|4.5 * te, 0.0);|@moe_aux
cp-mla-v-dropped@src/engine/layer.c@s|uint64_t kvw = x->qk_w - x->q_t + x->v_w;|uint64_t kvw = x->qk_w - x->q_t;|@terms,mla
hf-window-skip-freq-off-by-one@src/interop/hf_config.c@s|            \*freq = i + 1;|            *freq = i + 2;|@moe_model
hf-mistral-window-dropped@src/interop/hf_config.c@s|    m->window = window;|    m->window = 0;|@moe_model
nemotron-h-head-dim-ignored@src/interop/hf_nemotron_h.c@s|get_u32(c, root, "head_dim", false|get_u32(c, root, "head_dimx", false|@moe_model
nemotron-h-moe-block-dropped@src/interop/hf_nemotron_h.c@s|{"moe", |{"moex", |@moe_model
nemotron-h-shared-expert-dropped@src/interop/hf_nemotron_h.c@s|"moe_shared_expert_intermediate_size", false,|"moe_shared_expert_intermediate_sizex", false,|@moe_model
megatron-hybrid-mtp-depths-one@src/interop/megatron_args.c@s|    s->mtp_layers = depths;|    s->mtp_layers = 1;|@megatron_moe
megatron-hybrid-mamba-heads-ignored@src/interop/megatron_args.c@s|uint32_t \*mdst\[\] = {\&s->mamba_heads,|uint32_t *mdst[] = {\&s->gdn_conv,|@megatron_moe
megatron-gdn-gpt-every-layer-linear@src/interop/megatron_args.c@s|bool linear = every ? (i + 1) % every != 0 : la\[i\] != 0;|bool linear = true;|@megatron_moe
recipe-squared-relu-dropped@src/interop/megatron_recipe.c@s|int rc = word(c, "--squared-relu", false);|int rc = SPSIM_OK;|@megatron_moe
hf-mrope-accepted@src/interop/hf_config.c@s|    if (mrope)$|    if (0 \&\& mrope)|@hf_config
bridge-window-context-halved@src/engine/model_flops.c@s|return full + (layers - full) \* (w|return full + 0.5 * (layers - full) * (w|@moe_model
launch-cost-halved@src/profiles/hardware.c@s|hw->kernel_launch_s = us \* 1e-6;|hw->kernel_launch_s = us * 0.5e-6;|@host
kernels-halved@src/engine/host.c@s|be->launches\[ph\] += k;|be->launches[ph] += (k + 1) / 2;|@host
host-excess-halved@src/engine/host.c@s|double excess = spsim_max_d(0.0, hp\[ph\].wall - gpu\[ph\]);|double excess = spsim_max_d(0.0, 0.5 * (hp[ph].wall - gpu[ph]));|@host
host-op-halved@src/engine/host.c@s|hp\[ph\].host += k \* launch_s + op_s;|hp[ph].host += k * launch_s + 0.5 * op_s;|@host
graph-replay-call-halved@src/engine/host.c@s|hp\[ph\].host += launch_s + op_s;|hp[ph].host += launch_s + 0.5 * op_s;|@host
d2h-sync-ignored@src/engine/host.c@s|if (st->op->d2h_sync \&\& ph != SPSIM_PHASE_BACKWARD)|if (false \&\& st->op->d2h_sync)|@host
d2h-sync-unmarked@src/engine/layer.c@s|bld->layer->ops\[sync\].d2h_sync = true;|bld->layer->ops[sync].d2h_sync = false;|@host
graph-replay-free@src/engine/host.c@s|be->launches\[ph\]++;|(void)0;|@host
fp8-cast-launch-dropped@src/engine/host.c@s|bool cast = st->op->kind == SPSIM_OPK_GEMM \&\& st->pass != SPSIM_PASS_WGRAD \&\& st->bytes > 0;|bool cast = false;|@host
split-quantize-halved@src/engine/host.c@s|return (cfg->fp8_recipe == SPSIM_FP8_CURRENT ? 3 : 1) \* splits;|return (cfg->fp8_recipe == SPSIM_FP8_CURRENT ? 3 : 1) * splits / 2;|@host
split-quantize-current-one-kernel@src/engine/host.c@s|SPSIM_FP8_CURRENT ? 3 : 1) \* splits;|SPSIM_FP8_CURRENT ? 1 : 1) * splits;|@host
experts-padding-copy-halved@src/engine/layer.c@s|double copy = 4.0 \* (double)tr->rows \* (double)x->h;|double copy = 2.0 * (double)tr->rows * (double)x->h;|@host
experts-padding-dropped@src/engine/layer.c@s|bool pad = experts_pad(\&bld->layer->cfg);|bool pad = false;|@host
experts-padding-with-hybridep@src/engine/layer.c@s|return !(cfg->dispatcher == SPSIM_MOE_FLEX \&\& cfg->flex_backend == SPSIM_FLEX_HYBRIDEP);|return true;|@host
moe-sent-not-over-etp@src/engine/moe.c@s|out->sent = spsim_mul(tpe, local, ok) / cfg->etp;|out->sent = spsim_mul(tpe, local, ok);|@moe_terms
moe-tokens-not-over-cp@src/engine/moe.c@s|uint64_t T = cfg->s / c / (cfg->sp ? t : 1) \* cfg->b|uint64_t T = cfg->s / (cfg->sp ? t : 1) * cfg->b|@moe_terms,moe_aux
cp-ring-backward-busy-one-block@src/engine/timing.c@s|c->comm_s = 2 \* one.time_s + (r - 2) \* two.time_s;|c->comm_s = 1 * one.time_s + (r - 2) * two.time_s;|@terms
cp-ring-forward-busy-dropped@src/engine/timing.c@s|c->comm_s = (r - 1) \* one.time_s;|c->comm_s = 0 * (r - 1) * one.time_s;|@terms
pp-busy-without-fill@src/engine/pipeline_time.c@s|(mb + x->p - 1.0) \* p2p);|mb * p2p);|@terms
expert-dp-overlapped-free@src/engine/dp_time.c@s|\*exposed += par->overlap_grad_reduce ? spsim_max_d(0.0, alone - crit->bwd_window) : alone;|*exposed += par->overlap_grad_reduce ? 0 : alone;|@moe_terms
nvfp4-copy-scales-dropped@src/engine/fp8.c@s|return spsim_add(spsim_add(data, scales, ok), 4, ok);|return spsim_add(data, 4, ok);|@fp8
fp8-blackwell-transpose-kept@src/engine/fp8.c@s|uint64_t copies = per_tensor \&\& non_tn ? 1 : 2;|uint64_t copies = 2;|@fp8
lora-fp8-base-bf16-kept@src/engine/memory.c@s|s->weights - bf16,|s->weights - 0 * bf16,|@finetune
lora-fp8-base-gathered@src/engine/comm.c@s|if (!par->fp8_param_gather \|\| le->params_lora_layer)|if (!par->fp8_param_gather)|@finetune
moe-fp8-copies-one-expert@src/engine/fp8.c@s|spsim_mul3(op->k, op->n, op->batch, ok)|spsim_mul(op->k, op->n, ok)|@fp8
router-in-fp8@src/engine/fp8.c@s|if (op->adapter \|\| (op->kind == SPSIM_OPK_GEMM \&\& op->outside_te))|if (op->adapter \|\| (0 \&\& op->outside_te))|@fp8
fsdp-root-not-kept@src/engine/memory.c@s|spsim_mul(sp->root, 2, ok), ok);|spsim_mul(sp->root, 0, ok), ok);|@zero
fsdp-root-gather-free@src/engine/dp_time.c@s|\*exposed = emb.time_s + spsim_max_d(0.0, out.time_s - le->layer.fwd_s);|*exposed = 0;|@zero
expert-fsdp-rs-free@src/engine/dp_time.c@s|    \*exposed += mb \* inner + param_gather_exposed(par, crit, b.time_s);|    *exposed += 0 * mb * inner + param_gather_exposed(par, crit, b.time_s);|@moe_terms
mamba-inproj-z-dropped@src/engine/layer.c@s|uint64_t proj = 2 \* md.d_t + 2 \* md.G_t|uint64_t proj = md.d_t + 2 * md.G_t|@hybrid
mamba-conv-bytes-halved@src/engine/layer.c@s|op->fwd_bytes = 4.0 \* (double)conv;|op->fwd_bytes = 2.0 * (double)conv;|@hybrid
mamba-state-passing-bwd-halved@src/engine/layer.c@s|op->bwd_bytes = 28.0 \* (double)states;|op->bwd_bytes = 14.0 * (double)states;|@hybrid
mamba-ssd-half-chunks@src/engine/layer.c@s|uint64_t chunks = spsim_mul(x->b, (md->s + md->Q - 1) / md->Q, ok);|uint64_t chunks = spsim_mul(x->b, (md->s + md->Q - 1) / md->Q / 2, ok);|@hybrid
mamba-zxbcdt-kept-halved@src/engine/layer.c@s|"zxbcdt (in_proj output: z, x, B, C, dt)", spsim_mul(tok, zxbcdt, ok), 2,|"zxbcdt (in_proj output: z, x, B, C, dt)", spsim_mul(tok, zxbcdt, ok), 1,|@hybrid
mamba-cp-a2a-halved@src/engine/layer.c@s|op->message_bytes = op->cp_bwd_message_bytes = spsim_mul(elements, 2, \&bld->ok);|op->message_bytes = op->cp_bwd_message_bytes = spsim_mul(elements, 1, \&bld->ok);|@hybrid
mamba-cp-no-group-repeat@src/engine/layer.c@s|md.rep = md.G_t < c ? c / md.G_t : 1;|md.rep = 1;|@hybrid
mamba-conv-params-halved@src/profiles/model_hybrid.c@s|uint64_t conv1d = spsim_mul(conv, (uint64_t)m->mamba_conv + 1, ok);|uint64_t conv1d = spsim_mul(conv / 2, (uint64_t)m->mamba_conv + 1, ok);|@hybrid
gdn-conv-params-halved@src/profiles/model_hybrid.c@s|uint64_t conv1d = spsim_mul(2 \* qk + v, m->gdn_conv, ok);|uint64_t conv1d = spsim_mul(qk + v / 2, m->gdn_conv, ok);|@hybrid
gdn-out-norm-sharded@src/profiles/model_hybrid.c@s|p->replicated = norm_params(m, h) + m->gdn_value_head_dim;|p->replicated = norm_params(m, h);|@hybrid
gdn-half-chunks@src/engine/layer.c@s|g.chunks = spsim_mul(x->b, (x->s \* c + g.C - 1) / g.C, ok);|g.chunks = spsim_mul(x->b, (x->s * c + g.C - 1) / g.C / 2, ok);|@hybrid
gdn-wy-A-kept-halved@src/engine/layer.c@s|spsim_mul3(g->tok, g->Hv, C, ok), 2,|spsim_mul3(g->tok, g->Hv, C, ok), 1,|@hybrid
gdn-states-bwd-halved@src/engine/layer.c@s|op->bwd_bytes = 8.0 \* (double)states;|op->bwd_bytes = 4.0 * (double)states;|@hybrid
gdn-cp-a2a-halved@src/engine/layer.c@s|add_mamba_cp(bld, x, "CP all-to-all of q, k, v, z, β, α (GDN)", g.in_t);|add_mamba_cp(bld, x, "CP all-to-all of q, k, v, z, β, α (GDN)", g.in_t / 2);|@hybrid
gdn-model-core-halved@src/engine/model_flops.c@s|Hv \* (6 \* C \* dk + 4 \* C \* dv + 6 \* dk \* dv);|Hv * (3 * C * dk + 4 * C * dv + 6 * dk * dv);|@hybrid
gdn-megatron-core-halved@src/engine/model_flops.c@s|4 \* Hv \* dv \* dv + h \* v);|2 * Hv * dv * dv + h * v);|@hybrid
gdn-cp-rule-tp-only@src/engine/hybrid.c@s|uint64_t tc = (uint64_t)p->tp \* (p->cp ? p->cp : 1);|uint64_t tc = (uint64_t)p->tp;|@hybrid
attention-gate-params-dropped@src/profiles/model_params.c@s|uint64_t gate = m->attention_output_gate ? q : 0;|uint64_t gate = 0;|@hybrid,moe_model
attention-gate-bytes-halved@src/engine/layer.c@s|op->fwd_bytes = 6.0 \* (double)elements;|op->fwd_bytes = 3.0 * (double)elements;|@hybrid
attention-gate-kept-halved@src/engine/layer.c@s|save(op, "core attention output and gate", spsim_mul(elements, 2, ok), 2, SPSIM_RG_LAYER);|save(op, "core attention output and gate", elements, 2, SPSIM_RG_LAYER);|@hybrid
rotary-percent-ignored@src/engine/layer.c@s|double rot = m->rotary_percent > 0 ? m->rotary_percent : 1.0;|double rot = 1.0;|@hybrid
shared-expert-gate-dropped@src/profiles/model_params.c@s|uint64_t gate = m->moe_shared_expert_gate \&\& m->shared_expert_ffn_hidden ? m->hidden : 0;|uint64_t gate = 0;|@moe_model
hf-qwen-next-full-every-layer@src/interop/hf_qwen_next.c@s|\*full = (i + 1) % every == 0;|*full = true;|@moe_model
shared-expert-gate-op-dropped@src/engine/layer.c@s|        if (m->moe_shared_expert_gate)$|        if (0 \&\& m->moe_shared_expert_gate)|@hybrid
mtp-shared-weights-per-depth@src/profiles/model_hybrid.c@s|uint64_t depths = weights \&\& m->mtp_shared ? 1 : m->mtp_layers;|uint64_t depths = m->mtp_layers;|@hybrid
latent-projections-halved@src/profiles/model_params.c@s|return r ? 2 \* h \* r + |return r ? h * r + |@hybrid
latent-dispatch-at-hidden@src/engine/layer.c@s|lm.hidden = m->moe_latent, lx.h = m->moe_latent;|lm.hidden = m->hidden, lx.h = m->moe_latent;|@hybrid
hybrid-norms-recomputed@src/engine/layer.c@s|if (op->group == SPSIM_RG_NORM)|if (0 \&\& op->group == SPSIM_RG_NORM)|@hybrid
hybrid-last-stage-as-first@src/engine/memory.c@s|n, spsim_mul(rank_kind(x, r, (enum spsim_layer_kind)k), le->params_hybrid\[k\], ok),|n, spsim_mul(rank_kind(x, 0, (enum spsim_layer_kind)k), le->params_hybrid[k], ok),|@hybrid
bridge-mamba-din-actual@src/engine/model_flops.c@s|double din = 2 \* h, sf = r / 2;|double din = d, sf = r / 2;|@hybrid
hybrid-scan-flops-dropped@src/engine/model_flops.c@s|f->model = 2 \* weights + nM \* scan|f->model = 2 * weights + 0 * scan|@hybrid
optimize-memory-bound-doubled@src/sweep/optimize_bounds.c@s|return spsim_max_d(rank_static(sw, probe, le, P0, E0, D, edp),|return 2 * spsim_max_d(rank_static(sw, probe, le, P0, E0, D, edp),|@optimize
optimize-layer-floor-doubled@src/sweep/optimize_bounds.c@s|f->sum = f->layers \* layer_replay + f->embedding + f->last;|f->sum = 2 * f->layers * layer_replay + f->embedding + f->last;|@optimize
optimize-threads-unmerged@src/sweep/optimize.c@s|for (unsigned i = 1; i < started \&\& rc == SPSIM_OK; i++)|for (unsigned i = 1; i < 1 \&\& rc == SPSIM_OK; i++)|@optimize
optimize-offload-twins-kept@src/sweep/optimize.c@s|if (s->sw->n\[SPSIM_AXIS_OFFLOAD_LAYERS\] > 1) {|if (0 \&\& s->sw->n[SPSIM_AXIS_OFFLOAD_LAYERS] > 1) {|@optimize
optimize-lazy-ub-full-floor@src/sweep/optimize.c@s|spsim_opt_floor_of(probe.model, le, true, \&f);|spsim_opt_floor_of(probe.model, le, false, \&f);|@optimize
muon-state-halved@src/engine/optimizer.c@s|return 8 + (grad_bytes == 2 ? 4 : 0);|return 4 + (grad_bytes == 2 ? 4 : 0);|@muon
muon-ns-halved@src/engine/optimizer.c@s|return (double)steps \* (4.0 \* m \* m \* n + 2.0 \* m \* m \* m);|return 0.5 * steps * (4.0 * m * m * n + 2.0 * m * m * m);|@muon
muon-ns-gram-square-dropped@src/engine/optimizer.c@s|+ 2.0 \* m \* m \* m);|+ 0.0 * m * m * m);|@muon
muon-step-bytes-halved@src/engine/optimizer.c@s|return copy + 8 + 12 + (par->muon_nesterov|return 0.5 * copy + 4 + 6 + (par->muon_nesterov|@muon
muon-gathers-free@src/engine/dp_time.c@s|tr->optimizer_muon_gather_s = n \* e.time_s;|tr->optimizer_muon_gather_s = 0 * n * e.time_s;|@muon
muon-ns-unsharded@src/engine/memory.c@s|mem->muon_ns_flops_per_gpu = o.ns_flops / D|mem->muon_ns_flops_per_gpu = o.ns_flops / 1|@muon
muon-qkv-unsplit@src/engine/optimizer.c@s|if (qkv \&\& split == 0) {|if (0 \&\& qkv \&\& split == 0) {|@muon
muon-tp-shard-not-gathered@src/engine/optimizer.c@s|full_r \*= shard_rows ? shards : 1;|full_r *= 1;|@muon
muon-matrices-as-adam@src/engine/memory.c@s|spsim_mul(mne, muon, ok), ok);|spsim_mul(mne, adam, ok), ok);|@muon
offload-host-bytes-halved@src/engine/optimizer.h@s|#define SPSIM_HDO_HOST_BYTES 16.0|#define SPSIM_HDO_HOST_BYTES 8.0|@optimizer_offload
offload-gpu-bytes-halved@src/engine/optimizer.h@s|#define SPSIM_HDO_GPU_BYTES  12.0|#define SPSIM_HDO_GPU_BYTES  6.0|@optimizer_offload
optimizer-json-muon-hidden@src/sweep/fields.c@s|return r->config.optimizer != SPSIM_OPTIMIZER_ADAM \|\| r->config.optimizer_cpu_offload;|return r->config.optimizer_cpu_offload;|@muon
optimizer-json-offload-hidden@src/sweep/fields.c@s|return r->config.optimizer != SPSIM_OPTIMIZER_ADAM \|\| r->config.optimizer_cpu_offload;|return r->config.optimizer != SPSIM_OPTIMIZER_ADAM;|@optimizer_offload
optimizer-json-d2h-as-h2d@src/sweep/fields.c@s|F("optimizer.d2h_s", F64, time.optimizer_d2h_s)|F("optimizer.d2h_s", F64, time.optimizer_h2d_s)|@optimizer_offload
optimizer-json-ns-as-gather@src/sweep/fields.c@s|F("optimizer.muon_ns_s", F64, time.optimizer_muon_ns_s)|F("optimizer.muon_ns_s", F64, time.optimizer_muon_gather_s)|@muon
offload-d2h-halved@src/engine/dp_time.c@s|f \* Ps \* 4.0 / hw->host_d2h_Bps|f * Ps * 2.0 / hw->host_d2h_Bps|@optimizer_offload
offload-cpu-step-halved@src/engine/dp_time.c@s|f \* Ps \* 28.0 / hw->host_cpu_memory_Bps|f * Ps * 14.0 / hw->host_cpu_memory_Bps|@optimizer_offload
offload-h2d-halved@src/engine/dp_time.c@s|f \* Ps \* 2.0 / hw->host_h2d_Bps|f * Ps * 1.0 / hw->host_h2d_Bps|@optimizer_offload
offload-always-overlapped@src/engine/dp_time.c@s|if (par->overlap_cpu_optimizer_d2h_h2d)|if (1)|@optimizer_offload
offload-no-grad-cast@src/engine/dp_time.c@s|double cast = g == 4 ? 0.0 : g + 4.0;|double cast = 0.0;|@optimizer_offload
post-norms-params-dropped@src/profiles/model.c@s|uint64_t norms = (m->post_norms ? 4 : 2) \* norm;|uint64_t norms = 2 * norm;|@gemma3
post-mlp-norm-op-dropped@src/engine/layer.c@s|        add_post_norm(bld, m, x, true);|        (void)0;|@gemma3
post-mlp-norm-outside-mlp-module@src/engine/layer.c@s|op->group = op->saved\[0\].group = SPSIM_RG_MLP;|(void)op;|@gemma3
post-norm-recompute-hook-before-it@src/engine/schedule.c@s/ || L->ops\[k\].post_norm))/))/@gemma3
opt-host-post-mlp-norm-tensor-dropped@src/engine/mb_host.c@s|return n + 2.0 + 2.0 \* b + (m->post_norms ? n : 0.0);|return n + 2.0 + 2.0 * b;|@gemma3
gemma3-text-config-ignored@src/interop/hf_config.c@s|    if (text_ctx.origin) /\* Gemma 3: its text_config, the errors naming it \*/|    if (0)|@gemma3
offload-gpu-step-halved@src/engine/dp_time.c@s|(cast + 28.0 + 6.0) / hw->hbm_achievable_Bps|(cast + 28.0 + 6.0) / 2 / hw->hbm_achievable_Bps|@optimizer_offload
logits-working-halved@src/engine/summary.c@s|padded_vocab / t, 2, ok);|padded_vocab / t, 1, ok);|@terms,stages,moe,bf16_layers,cp
logits-working-first-stage-dropped@src/engine/memory.c@s|        first = spsim_add(first, le->logits_working_bytes, ok);|        first = first;|@terms
transformer-impl-local-as-te@src/interop/megatron_args.c@s|m->given\[F_FLASH\]) \&\& impl == 0|m->given[F_FLASH]) \&\& impl >= 0|@megatron
vpp-chunks-without-accounted-layers@src/interop/megatron_args.c@s|(uint64_t)layers + m->given\[F_ACCOUNT_EMB\] + m->given\[F_ACCOUNT_LOSS\];|(uint64_t)layers;|@megatron
embedding-scale-fwd-halved@src/engine/layer.c@s|    op->fwd_bytes = 4.0 \* local;|    op->fwd_bytes = 2.0 * local;|@gemma3
embedding-scale-bwd-halved@src/engine/layer.c@s|    op->bwd_bytes = 4.0 \* local;|    op->bwd_bytes = 2.0 * local;|@gemma3
embedding-scale-dropped@src/engine/layer.c@s|    if (m->embedding_scale)|    if (0 \&\& m->embedding_scale)|@gemma3
embedding-scale-gemma3-not-read@src/interop/hf_config.c@s|strcmp(f->type, "gemma3_text") == 0;|strcmp(f->type, "gemma3_texx") == 0;|@gemma3
embedding-scale-gemma-not-read@src/interop/hf_config.c@s|m->embedding_scale = strcmp(f->type, "gemma") == 0|m->embedding_scale = strcmp(f->type, "gemmx") == 0|@hf_config
bridge-ddp-gather-exposed-whole@src/engine/dp_time.c@s|            alone += tr->param_gather_exposed_s - b.time_s;|            alone += 0 * b.time_s;|@zero
bridge-ddp-not-from-recipes@src/interop/megatron_args.c@s|    p->bridge_ddp = m->yaml;|    p->bridge_ddp = false;|@recipes
plot-top-ranks-unfit@python/spsim/plot.py@s|    fit = \[r for r in rows if r.get("memory_fits") is True\]|    fit = list(rows)|@python-api
plot-memory-activations-alone@python/spsim/plot.py@s|right = {m: \[d\["memory"\]\["total_modes_bytes"\]|right = {m: [d["memory"]["activation_modes_first_stage_bytes"]|@python-api
unsourced-profile-timed@src/engine/hardware_view.c@s|hw->unsourced_fields \&\& !listing)|hw->unsourced_fields \&\& 0)|@profiles,cli
unsourced-null-taken-as-zero@src/profiles/hardware.c@s|    return note_unsourced(c, spsim_json_path(path, sizeof(path), prefix, key), hw);|    return SPSIM_OK;|@profiles,cli
unsourced-listed-as-zero@src/cli/list.c@s|        snprintf(buf, size, "%s", "n/s");|        snprintf(buf, size, fmt, value);|@cli'

# --changed: the files that differ from the revision (committed or not).
if [ -n "$changed" ]; then
    if ! changed_files=$(cd "$src" && git diff --name-only "$changed" -- 2>/dev/null); then
        echo "mutation check: cannot compare with $changed"
        # The default: a first commit or a shallow clone has no parent to compare with.
        [ "$changed" = HEAD^1 ] && ! (cd "$src" && git rev-parse -q --verify HEAD^1 >/dev/null) &&
            echo "mutation check: HEAD has no parent here; run the full check by hand" && exit 0
        exit 1
    fi
    selected=$(echo "$mutations" | while IFS='@' read -r name file expr tests; do
        for f in $changed_files; do [ "$f" = "$file" ] && echo "$name"; done
    done)
    if [ -z "$selected" ]; then
        echo "mutation check: no mutated file differs from $changed; nothing to do"
        exit 0
    fi
    # shellcheck disable=SC2086
    set -- $selected "$@"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spsim-mutation.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# A copy of the checkout as it is (tracked and untracked files git does not ignore).
(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$tmp"
build="$tmp/build"
echo "mutation check: building a copy in $tmp"
if ! meson setup "$build" "$tmp" -Dcuda=disabled -Dmpi=disabled -Dexamples=false >"$tmp/setup.log" 2>&1 ||
    ! meson compile -C "$build" >"$tmp/compile.log" 2>&1; then
    echo "mutation check: the unmutated copy does not build:"
    tail -n 20 "$tmp/setup.log" "$tmp/compile.log"
    exit 1
fi
# Generous timeouts (meson's and Check's own): on a loaded machine a slow suite must not pass
# for a killed mutation.
export CK_TIMEOUT_MULTIPLIER=10
if ! meson test -C "$build" --no-rebuild --suite unit -t 10 >"$tmp/test.log" 2>&1; then
    echo "mutation check: the unmutated copy already fails its unit tests"
    exit 1
fi

# run_tests TESTS: the unit suite, or with --quick the tests named (comma-separated) when any.
run_tests() {
    if [ $quick -eq 1 ] && [ -n "$1" ]; then
        # shellcheck disable=SC2046
        meson test -C "$build" --no-rebuild -t 10 $(echo "$1" | tr ',' ' ') >"$tmp/test.log" 2>&1
    else
        meson test -C "$build" --no-rebuild --suite unit -t 10 >"$tmp/test.log" 2>&1
    fi
}

echo "$mutations" | while IFS='@' read -r name file expr tests; do
    [ -n "$name" ] || continue
    if [ $# -gt 0 ]; then
        keep=0
        for want in "$@"; do [ "$want" = "$name" ] && keep=1; done
        [ $keep -eq 1 ] || continue
    fi
    cp "$tmp/$file" "$tmp/$file.orig"
    sed -i "$expr" "$tmp/$file"
    if cmp -s "$tmp/$file" "$tmp/$file.orig"; then
        echo "NOT APPLIED  $name: the sed expression matches nothing in $file"
        echo x >>"$tmp/bad"
    elif ! meson compile -C "$build" >"$tmp/compile.log" 2>&1; then
        echo "NO BUILD     $name"
        echo x >>"$tmp/bad"
    elif run_tests "$tests"; then
        echo "SURVIVED     $name: every unit test passed${tests:+ (quick: $tests)}"
        echo x >>"$tmp/bad"
    else
        failed=$(grep -E '^ *[0-9]+/[0-9]+ .* (FAIL|ERROR) ' "$tmp/test.log" |
            sed -E 's/.* \/ ([a-z_0-9-]+) +(FAIL|ERROR).*/\1/' | tr '\n' ' ')
        if grep -q -E 'Timeout: +[1-9]' "$tmp/test.log" ||
            grep -q 'Test timeout expired' "$build/meson-logs/testlog.txt"; then
            echo "TIMED OUT    $name: a suite timed out (failed: $failed); rerun on a quieter machine"
            echo x >>"$tmp/bad"
        else
            echo "KILLED       $name: failed $failed"
        fi
    fi
    # cp, not mv: the restored file must be newer than the mutated object, or ninja keeps it.
    cp "$tmp/$file.orig" "$tmp/$file"
    rm -f "$tmp/$file.orig"
done
meson compile -C "$build" >/dev/null 2>&1
if [ -s "$tmp/bad" ]; then
    echo "mutation check: $(wc -l <"$tmp/bad") mutation(s) not killed"
    exit 1
fi
echo "mutation check: every mutation failed a test"
