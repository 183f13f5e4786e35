/* The layer schedule as public steps for `spsim explain`: ops, regions, collectives, shapes. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "spsim/schedule.h"

static void
shape_text(char *buf, size_t cap, const struct spsim_dim *d, uint32_t n)
{
    if (n == 0) {
        snprintf(buf, cap, "-");
        return;
    }
    size_t used = 0;
    used += (size_t)snprintf(buf + used, cap - used, "[");
    for (uint32_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", d[i].sym);
    if (used < cap)
        used += (size_t)snprintf(buf + used, cap - used, "] = [");
    for (uint32_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%llu", i ? ", " : "",
                                 (unsigned long long)d[i].value);
    if (used < cap)
        snprintf(buf + used, cap - used, "]");
}

static const char *
region_text(enum spsim_region r, bool sp)
{
    switch (r) {
    case SPSIM_REGION_SEQ:
        return sp ? "SP region" : "replicated";
    case SPSIM_REGION_TENSOR:
        return "TP region";
    case SPSIM_REGION_BOUNDARY:
        return "boundary";
    }
    return "?";
}

const char *
spsim_pass_name(enum spsim_pass p)
{
    switch (p) {
    case SPSIM_PASS_FWD:
        return "forward";
    case SPSIM_PASS_DGRAD:
        return "dgrad";
    case SPSIM_PASS_WGRAD:
        return "wgrad";
    case SPSIM_PASS_BWD:
        return "backward";
    case SPSIM_PASS_COMM:
        return "";
    }
    return "";
}

int
spsim_layer_evaluate_checked(const struct spsim_model *model, const struct spsim_hardware *hw,
                             const struct spsim_parallel *par, struct spsim_layer_eval *le,
                             struct spsim_error *err)
{
    int rc = spsim_parallel_check(model, hw, par, NULL, err);
    if (rc != SPSIM_OK)
        return rc;
    const struct spsim_model_shape *m = spsim_model_get_shape(model);
    struct spsim_layer_config cfg;
    spsim_layer_config_from(m, par, &cfg);
    return spsim_layer_evaluate(m, hw, &cfg, spsim_model_padded_vocab(model, par->tp), le, err);
}

/* The algorithm the step's collective was timed with and NCCL's protocol for it. */
static void
step_algorithm(const struct spsim_hardware *hw, const struct spsim_layer_eval *le,
               const struct spsim_step *st, const struct spsim_coll_time *ct,
               struct spsim_schedule_step *o)
{
    o->algorithm = o->protocol = "";
    if (!hw || st->coll == SPSIM_COLL_NONE || ct->tier == SPSIM_TIER_LOCAL ||
        ct->algo == SPSIM_NCCL_ALGO_COUNT)
        return;
    o->algorithm = spsim_nccl_algo_name(ct->algo);
    enum spsim_nccl_proto p = ct->proto;
    if (p == SPSIM_NCCL_PROTO_COUNT && st->group_size == le->tp_group.size)
        p = spsim_collective_algo(hw, st->coll, le->tp_group, (double)st->message_bytes).proto;
    o->protocol = p == SPSIM_NCCL_PROTO_COUNT ? "" : spsim_nccl_proto_name(p);
}

/* The block a schedule is asked of: the layer, or a hybrid model's layer of that kind. */
static int
kind_block(const struct spsim_model *model, const struct spsim_layer_eval *le,
           enum spsim_layer_kind kind, const struct spsim_block_eval **out, struct spsim_error *err)
{
    const struct spsim_model_shape *m = spsim_model_get_shape(model);
    *out = &le->layer;
    if (kind == SPSIM_LAYER_TRANSFORMER || (m->hybrid_pattern && kind == le->hybrid_primary))
        return SPSIM_OK;
    if ((unsigned)kind >= SPSIM_LAYER_KIND_COUNT)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_layer_kind_schedule: unknown layer kind %d",
                          (int)kind);
    if (!m->hybrid_pattern || !(le->hybrid_kinds >> kind & 1))
        return spsim_fail(err, SPSIM_ECONFIG,
                          "layer kind: the model %s has no '%c' layer (its pattern: %s)",
                          SPSIM_Q(spsim_model_name(model)), spsim_hybrid_kind_symbol(kind),
                          m->hybrid_pattern ? m->hybrid_pattern : "none, a transformer");
    *out = &le->hybrid[kind];
    return SPSIM_OK;
}

int
spsim_layer_schedule(const struct spsim_model *model, const struct spsim_hardware *hw,
                     const struct spsim_parallel *par, struct spsim_schedule_step *steps,
                     size_t cap, size_t *count, struct spsim_error *err)
{
    return spsim_layer_kind_schedule(model, hw, par, SPSIM_LAYER_TRANSFORMER, steps, cap, count,
                                     err);
}

int
spsim_layer_kind_schedule(const struct spsim_model *model, const struct spsim_hardware *hw,
                          const struct spsim_parallel *par, enum spsim_layer_kind kind,
                          struct spsim_schedule_step *steps, size_t cap, size_t *count,
                          struct spsim_error *err)
{
    if (!model || !par || !count || (cap && !steps))
        return spsim_fail(err, SPSIM_EINVAL, "spsim_layer_schedule: NULL argument");
    /* On the heap, not thread-local: 80 kB of TLS are zeroed at every program start. */
    struct spsim_layer_eval *le = spsim_calloc(1, sizeof(*le));
    if (!le)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    int rc = spsim_layer_evaluate_checked(model, hw, par, le, err);
    const struct spsim_block_eval *b = &le->layer;
    if (rc == SPSIM_OK)
        rc = kind_block(model, le, kind, &b, err);
    const struct spsim_layer_config cfg = b->block.cfg;
    const struct spsim_schedule *s = &b->sched;
    if (rc == SPSIM_OK && (*count = s->nsteps) > cap)
        rc = spsim_fail(err, SPSIM_EINVAL, "spsim_layer_schedule: %u steps need room, got %zu",
                        s->nsteps, cap);
    if (rc != SPSIM_OK) {
        free(le);
        return rc;
    }
    for (uint32_t i = 0; i < s->nsteps; i++) {
        const struct spsim_step *st = &s->steps[i];
        const struct spsim_op *op = st->op;
        struct spsim_schedule_step *o = &steps[i];
        memset(o, 0, sizeof(*o));
        o->phase = st->phase;
        o->op = op->name;
        o->pass = spsim_pass_name(st->pass);
        o->region = region_text(op->region, cfg.sp);
        o->collective = st->coll == SPSIM_COLL_NONE ? "" : spsim_coll_op_name(st->coll);
        o->operator_name = st->coll_operator
                               ? st->coll_operator
                               : (op->kind == SPSIM_OPK_COMM ? op->operator_name : "");
        o->rng = op->rng && st->pass != SPSIM_PASS_COMM ? op->rng : "";
        o->overlap = st->overlap;
        bool backward = st->phase == SPSIM_PHASE_BACKWARD;
        /* Backward flows from the op's output to its input. */
        shape_text(o->shape_in, sizeof(o->shape_in), backward ? op->out : op->in,
                   backward ? op->nout : op->nin);
        shape_text(o->shape_out, sizeof(o->shape_out), backward ? op->in : op->out,
                   backward ? op->nin : op->nout);
        o->flops = st->flops;
        o->time_s = hw ? b->cost[i].compute_s + b->cost[i].exposed_comm_s : 0;
        o->message_bytes = st->message_bytes;
        o->wire_bytes = st->wire_bytes;
        o->group_size = st->group_size;
        o->tier = hw ? b->cost[i].coll.tier : SPSIM_TIER_LOCAL;
        step_algorithm(hw, le, st, &b->cost[i].coll, o);
        o->graphed = spsim_cuda_graph_captures(cfg.graph_capture, op->graph_module);
    }
    free(le);
    return SPSIM_OK;
}
