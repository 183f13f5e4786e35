/*
 * A layer evaluation (schedule, per-step costs) folded into the totals the composition reads.
 * spsim_evaluate() and the sweep both compose from this summary, so a sweep row and a query
 * of the same configuration are the same arithmetic.
 */
#include "config.h"

#include <string.h>

#include "eval.h"

static void
block_totals(const struct spsim_block_eval *b, struct spsim_block_totals *t)
{
    t->saved_bytes = b->saved_bytes;
    t->fwd_s = b->fwd_s;
    t->bwd_s = b->bwd_s;
    t->recompute_s = b->recompute_s;
    t->fwd_compute_s = b->fwd_compute_s;
    t->bwd_compute_s = b->bwd_compute_s;
    t->recompute_compute_s = b->recompute_compute_s;
    t->tp_exposed_s = b->tp_exposed_s;
    t->recompute_comm_s = b->recompute_comm_s;
    t->recompute_exposed_s = b->recompute_exposed_s;
    /* Steps without a collective cost 0, and x + 0 = x: leaving them out changes no sum. */
    t->ncomm = 0;
    for (uint32_t i = 0; i < b->sched.nsteps; i++)
        if (b->cost[i].comm_s != 0)
            t->comm_s[t->ncomm++] = b->cost[i].comm_s;
    t->fwd_flops = b->fwd_flops;
    t->bwd_flops = b->bwd_flops;
    t->recompute_flops = b->recompute_flops;
    t->tp_bwd_wire_bytes = b->tp_bwd_wire_bytes;
    memcpy(t->tp_wire, b->tp_wire, sizeof(t->tp_wire));
    t->tp_regather_wire = b->tp_regather_wire;
    t->message_bytes = b->block.message_bytes;
}

/* The layer's collectives in schedule order, as comm.per_layer reports them. */
static void
layer_collectives(const struct spsim_hardware *hw, const struct spsim_block_eval *L, uint32_t t,
                  struct spsim_layer_summary *s)
{
    s->ncoll = 0;
    for (uint32_t i = 0; i < L->sched.nsteps; i++) {
        const struct spsim_step *st = &L->sched.steps[i];
        if (st->coll == SPSIM_COLL_NONE || s->ncoll >= SPSIM_MAX_LAYER_COLLECTIVES)
            continue;
        struct spsim_collective_entry *e = &s->coll[s->ncoll++];
        e->phase = st->phase;
        e->op = st->coll;
        e->site = st->coll_site;
        e->message_bytes = st->message_bytes;
        uint64_t per = st->message_bytes / t * (t - 1);
        e->wire_bytes_per_rank = st->coll == SPSIM_COLL_ALL_REDUCE ? 2 * per : per;
        e->group_size = t;
        e->tier = L->cost[i].coll.tier;
        if (!hw)
            e->tier = t > 1 ? SPSIM_TIER_NVLINK : SPSIM_TIER_LOCAL;
        e->overlap = st->overlap;
        e->time_s = L->cost[i].comm_s;
        e->exposed_s = L->cost[i].exposed_comm_s;
    }
}

void
spsim_layer_summarize(const struct spsim_model *model, const struct spsim_hardware *hw,
                      const struct spsim_layer_eval *le, struct spsim_layer_summary *s)
{
    const struct spsim_model_shape *m = &model->shape;
    uint32_t t = le->cfg.t;
    memset(s, 0, sizeof(*s));
    s->cfg = le->cfg;
    s->tp_group = le->tp_group;
    s->padded_vocab = le->padded_vocab;
    block_totals(&le->layer, &s->layer);
    block_totals(&le->embedding, &s->embedding);
    block_totals(&le->output, &s->output);
    memcpy(s->act_modes, le->act_modes, sizeof(s->act_modes));
    s->act_no_recompute = le->act_no_recompute;
    s->offload_bytes = le->offload_bytes;
    bool ok = true;
    s->params_layer = spsim_layer_parameters_per_rank(m, t, &ok);
    s->params_embedding = spsim_embedding_parameters_per_rank(m, le->padded_vocab, t, &ok);
    s->params_output = spsim_output_parameters_per_rank(m, le->padded_vocab, t, &ok);
    s->params_total = spsim_model_parameters(model, t);
    s->params_ok = ok;
    layer_collectives(hw, &le->layer, t, s);
}
