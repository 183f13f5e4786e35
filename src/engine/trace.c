/*
 * The timeline of one iteration as Chrome / Perfetto trace events (include/spsim/plan.h).
 *
 * Every pipeline rank runs Megatron-Core's schedule (pipeline_parallel/schedules.py): 1F1B
 * (forward_backward_pipelining_without_interleaving: min(p − r − 1, m) warm-up forwards, then
 * one forward and one backward per step, then the cool-down backwards) or the interleaved one
 * (forward_backward_pipelining_with_interleaving: (p − r − 1)·2 + (v − 1)·p warm-up chunk
 * forwards; the k-th forward runs model chunk (k / p) mod v of micro-batch (k / (p·v))·p + k mod p,
 * the k-th backward chunk v − 1 − (k / p) mod v). A chunk's forward waits for the same chunk on
 * the rank before (chunk c − 1 on the last rank when r = 0), its backward for the rank after
 * (chunk c + 1 on the first rank when r = p − 1; the last chunk's own forward).
 *
 * Durations come from the result's terms, as the composition priced the critical stage
 * (every rank gets its per-chunk times, as the analytic bubble does): a micro-batch's forward
 * is time.forward_s / m, its backward (backward_s + recompute_s) / m, each grown by its share
 * of the exposed TP, CP and EP communication, CPU offload, FP8 amax and MoE aux-loss
 * reductions and host launch time (split in proportion to compute); a chunk is 1/v of that.
 * After every chunk the exposed part of its pipeline send, pp_p2p_s / (2·m·v), holds the
 * compute stream; the whole send, (pp_p2p_s + pp_p2p_hidden_s) / (2·m·v), is drawn on the
 * send stream. The fill and drain follow the composition (engine/pipeline_time.c), which
 * prices them at the mean stage with whole sends, pp_bubble_s = (p − 1)/v·(mean stage + 2v
 * sends): a chunk on another rank is handed over pp_bubble_s / (p − 1) after its producer
 * starts (the forward hop that share of it the chunk's forward step, f + send, has of the
 * chunk's forward and backward steps; the backward hop the rest), while an op waiting for its
 * own rank waits for the op's end. The longest path of the schedule is then the p − 1 forward
 * hops of the fill, the micro-batches' steps and the p − 1 backward hops of the drain, so every
 * rank's pipeline ends at m·v chunk steps + pp_bubble_s, idle pp_bubble_s, and the trace ends
 * at time.iteration_s after the iteration's tail: the data-parallel reduction, the parameter
 * AllGather, the tied-embedding and expert-bias AllReduces and the optimizer step. Where the
 * mean stage is quicker than the critical one (uneven stages), a hop is shorter than the
 * drawn op: the next rank starts before the drawing of its producer ends, by the critical
 * stage's excess over the mean.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "spsim/plan.h"

enum { TID_COMPUTE = 0, TID_COMM = 1, TID_SEND = 2, TID_DP = 3 };

struct buf {
    char *s;
    size_t n, cap;
    bool oom;
};

static void SPSIM_PRINTF(2, 3) put(struct buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    if (!b->s) { /* never offset a null pointer (vsnprintf into NULL + 0) */
        b->cap = 1 << 16;
        if (!(b->s = malloc(b->cap))) {
            b->oom = true;
            return;
        }
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = true;
            return;
        }
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = b->cap * 2 + (size_t)k + 256;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

/* One complete ("X") event; times in seconds, written in microseconds. */
static void
event(struct buf *b, const char *name, const char *cat, uint32_t pid, int tid, double start,
      double dur, int mb, int chunk)
{
    put(b, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%u,\"tid\":%d,", name, cat, pid,
        tid);
    put(b, "\"ts\":%.17g,\"dur\":%.17g", start * 1e6, dur * 1e6);
    if (mb >= 0)
        put(b, ",\"args\":{\"microbatch\":%d,\"chunk\":%d}", mb, chunk);
    put(b, "}");
}

/* The op list of one rank: forwards (F) and backwards (B) of (micro-batch, chunk), in order. */
struct op {
    bool bwd;
    int mb, chunk;
    double start, end;
    bool done;
};

struct sched {
    uint32_t p, v, m;
    struct op *ops;  /* p × 2·m·v, each rank's in its order */
    uint32_t *where; /* (rank, backward, micro-batch, chunk) -> the op's index in its rank */
};

static size_t
key(const struct sched *s, uint32_t r, bool bwd, int mb, int chunk)
{
    return (((size_t)r * 2 + bwd) * s->m + (size_t)mb) * s->v + (size_t)chunk;
}

/* Megatron's model chunk and micro-batch of rank-local forward (or backward) k. */
static void
chunk_of(const struct sched *s, uint32_t k, bool bwd, int *mb, int *chunk)
{
    uint32_t p = s->p, v = s->v;
    if (v == 1) {
        *mb = (int)k;
        *chunk = 0;
        return;
    }
    uint32_t c = (k / p) % v;
    *chunk = (int)(bwd ? v - 1 - c : c);
    *mb = (int)((k / (p * v)) * p + k % p);
}

static void
build_order(struct sched *s, uint32_t r)
{
    uint32_t p = s->p, v = s->v, total = s->m * v;
    uint32_t warm = v == 1 ? p - r - 1 : (p - r - 1) * 2 + (v - 1) * p;
    if (warm > total)
        warm = total;
    struct op *o = s->ops + (size_t)r * 2 * total;
    uint32_t nf = 0, nb = 0, i = 0;
    for (; nf < warm; nf++, i++)
        o[i] = (struct op){.bwd = false};
    while (nb < total) {
        if (nf < total) {
            o[i++] = (struct op){.bwd = false, .mb = (int)nf};
            nf++;
        }
        o[i++] = (struct op){.bwd = true, .mb = (int)nb};
        nb++;
    }
    for (uint32_t j = 0, f = 0, b = 0; j < 2 * total; j++) {
        uint32_t k = o[j].bwd ? b++ : f++;
        chunk_of(s, k, o[j].bwd, &o[j].mb, &o[j].chunk);
        s->where[key(s, r, o[j].bwd, o[j].mb, o[j].chunk)] = j;
    }
}

/* The end of (rank, micro-batch, chunk)'s forward or backward, or -1 if not yet scheduled. */
static double
done_at(const struct sched *s, uint32_t r, bool bwd, int mb, int chunk)
{
    const struct op *o = s->ops + (size_t)r * 2 * s->m * s->v + s->where[key(s, r, bwd, mb, chunk)];
    return o->done ? o->end : -1;
}

/* The start of (rank, micro-batch, chunk)'s forward or backward plus `hop`, or -1 if not yet
 * scheduled. */
static double
handed_at(const struct sched *s, uint32_t r, bool bwd, int mb, int chunk, double hop)
{
    const struct op *o = s->ops + (size_t)r * 2 * s->m * s->v + s->where[key(s, r, bwd, mb, chunk)];
    return o->done ? o->start + hop : -1;
}

/* When an op's input is ready (see the header), or -1 if its producer has not run: a
 * producer on another rank hands over `hop[bwd]` after it starts, one on the same rank (the
 * last chunk's own forward, or everything with pp = 1) when it ends. */
static double
ready_at(const struct sched *s, uint32_t r, const struct op *o, const double hop[2])
{
    uint32_t p = s->p, v = s->v;
    int c = o->chunk;
    if (!o->bwd) {
        if (r > 0)
            return handed_at(s, r - 1, false, o->mb, c, hop[0]);
        if (c == 0)
            return 0;
        return p > 1 ? handed_at(s, p - 1, false, o->mb, c - 1, hop[0])
                     : done_at(s, 0, false, o->mb, c - 1);
    }
    if (r < p - 1)
        return handed_at(s, r + 1, true, o->mb, c, hop[1]);
    if ((uint32_t)c < v - 1)
        return p > 1 ? handed_at(s, 0, true, o->mb, c + 1, hop[1])
                     : done_at(s, 0, true, o->mb, c + 1);
    return done_at(s, r, false, o->mb, c);
}

/* Place every op at max(its rank's previous op, its input); step = op + exposed send. */
static bool
simulate(struct sched *s, double f, double b, double send, const double hop[2])
{
    uint32_t n = 2 * s->m * s->v;
    uint32_t *next = calloc(s->p, sizeof(*next));
    double *free_at = calloc(s->p, sizeof(*free_at));
    if (!next || !free_at) {
        free(next);
        free(free_at);
        return false;
    }
    for (bool moved = true; moved;) {
        moved = false;
        for (uint32_t r = 0; r < s->p; r++) {
            while (next[r] < n) {
                struct op *o = s->ops + (size_t)r * n + next[r];
                double in = ready_at(s, r, o, hop);
                if (in < 0)
                    break;
                o->start = fmax(free_at[r], in);
                o->end = o->start + (o->bwd ? b : f) + send;
                o->done = true;
                free_at[r] = o->end;
                next[r]++;
                moved = true;
            }
        }
    }
    bool all = true;
    for (uint32_t r = 0; r < s->p; r++)
        all = all && next[r] == n;
    free(next);
    free(free_at);
    return all;
}

static void
metadata(struct buf *b, uint32_t p)
{
    static const char *const streams[] = {"compute", "TP/CP/EP exposed", "pipeline sends",
                                          "data parallel, optimizer"};
    put(b, "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
           "\"args\":{\"name\":\"pipeline rank 0\"}}");
    for (uint32_t r = 0; r < p; r++) {
        if (r > 0)
            put(b,
                ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":0,"
                "\"args\":{\"name\":\"pipeline rank %u\"}}",
                r, r);
        for (int t = 0; t < 4; t++)
            put(b,
                ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%d,"
                "\"args\":{\"name\":\"%s\"}}",
                r, t, streams[t]);
    }
}

/* The iteration's tail, the same on every rank from `at` (see the header). */
static void
tail(struct buf *b, const struct spsim_time_report *t, uint32_t pid, double at)
{
    const struct {
        const char *name;
        double dur;
    } steps[] = {
        {"DP gradient reduction (exposed)", t->dp_exposed_s - t->param_gather_exposed_s},
        {"DP parameter AllGather (exposed)", t->param_gather_exposed_s},
        {"tied embedding AllReduce", t->tied_embedding_allreduce_s},
        {"expert-bias AllReduce", t->moe_expert_bias_allreduce_s},
        {"optimizer step", t->optimizer_s},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        if (steps[i].dur <= 0)
            continue;
        event(b, steps[i].name, "tail", pid, TID_DP, at, steps[i].dur, -1, -1);
        at += steps[i].dur;
    }
}

/* The per-micro-batch terms of the critical stage (see the header). */
struct mb_terms {
    double f, b, exposed_f, exposed_b, send, send_full, tail, hop[2];
};

static struct mb_terms
terms(const struct spsim_result *r)
{
    const struct spsim_time_report *t = &r->time;
    double m = r->comm.microbatches, v = r->config.vpp;
    double comp_f = t->forward_s, comp_b = t->backward_s + t->recompute_s;
    double exposed = t->tp_exposed_s + t->cp_exposed_s + t->ep_exposed_s + t->offload_exposed_s +
                     t->fp8_amax_allreduce_s + t->moe_aux_allreduce_s + t->host_exposed_s;
    double share_f = comp_f + comp_b > 0 ? comp_f / (comp_f + comp_b) : 0.5;
    struct mb_terms x;
    x.exposed_f = exposed * share_f / (m * v);
    x.exposed_b = exposed * (1 - share_f) / (m * v);
    x.f = comp_f / (m * v) + x.exposed_f;
    x.b = comp_b / (m * v) + x.exposed_b;
    x.send = t->pp_p2p_s / (2 * m * v);
    x.send_full = (t->pp_p2p_s + t->pp_p2p_hidden_s) / (2 * m * v);
    /* The fill and drain's hand-overs: pp_bubble_s / (p − 1) per chunk, split as the chunk's
     * forward and backward steps (each with its exposed send). */
    double p = r->config.pp, step = x.f + x.b + 2 * x.send;
    double hop = p > 1 ? t->pp_bubble_s / (p - 1) : 0;
    x.hop[0] = step > 0 ? hop * (x.f + x.send) / step : 0;
    x.hop[1] = hop - x.hop[0];
    x.tail = t->dp_exposed_s + t->tied_embedding_allreduce_s + t->moe_expert_bias_allreduce_s +
             t->optimizer_s;
    return x;
}

static void
rank_events(struct buf *b, const struct sched *s, const struct mb_terms *x, uint32_t r)
{
    const struct op *o = s->ops + (size_t)r * 2 * s->m * s->v;
    char name[64];
    for (uint32_t j = 0; j < 2 * s->m * s->v; j++) {
        double len = o[j].bwd ? x->b : x->f, ex = o[j].bwd ? x->exposed_b : x->exposed_f;
        snprintf(name, sizeof(name), "%s mb %d chunk %d", o[j].bwd ? "backward" : "forward",
                 o[j].mb, o[j].chunk);
        event(b, name, o[j].bwd ? "backward" : "forward", r, TID_COMPUTE, o[j].start, len, o[j].mb,
              o[j].chunk);
        if (ex > 0)
            event(b, "exposed communication", "comm", r, TID_COMM, o[j].start + len - ex, ex,
                  o[j].mb, o[j].chunk);
        if (s->p > 1 && x->send > 0)
            event(b, "send (exposed)", "p2p", r, TID_COMPUTE, o[j].start + len, x->send, o[j].mb,
                  o[j].chunk);
        if (s->p > 1 && x->send_full > 0)
            event(b, o[j].bwd ? "send gradient" : "send activation", "p2p", r, TID_SEND,
                  o[j].start + len, x->send_full, o[j].mb, o[j].chunk);
    }
}

int
spsim_trace_json(const struct spsim_result *r, char **out, struct spsim_error *err)
{
    if (!r || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_trace_json: NULL argument");
    uint32_t p = r->config.pp, v = r->config.vpp, m = r->comm.microbatches;
    if (!(p >= 1 && v >= 1 && m >= 1 && r->time.iteration_s > 0))
        return spsim_fail(err, SPSIM_EINVAL, "spsim_trace_json: the result has no iteration");
    if ((uint64_t)p * 2 * m * v > 4000000)
        return spsim_fail(err, SPSIM_ERANGE,
                          "trace: %u ranks x %u micro-batches x %u chunks are more than 2,000,000 "
                          "ops",
                          p, m, v);
    if (r->config.pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON)
        return spsim_fail(err, SPSIM_ERANGE,
                          "trace: the %s schedule is not drawn (the trace draws 1F1B and "
                          "interleaved only); its query gives its terms",
                          spsim_pp_schedule_name(r->config.pp_schedule, v));
    if (v > 1 && m % p != 0) /* schedules.py's micro-batch groups of p per model chunk */
        return spsim_fail(err, SPSIM_ERANGE,
                          "trace: the interleaved schedule is traced for micro-batches a multiple "
                          "of pp (%u micro-batches, pp %u)",
                          m, p);
    size_t n = (size_t)p * 2 * m * v;
    struct sched s = {p, v, m, calloc(n, sizeof(struct op)), calloc(n, sizeof(uint32_t))};
    if (!s.ops || !s.where) {
        free(s.ops);
        free(s.where);
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    }
    for (uint32_t k = 0; k < p; k++)
        build_order(&s, k);
    struct mb_terms x = terms(r);
    if (!simulate(&s, x.f, x.b, p > 1 ? x.send : 0, x.hop)) {
        free(s.ops);
        free(s.where);
        return spsim_fail(err, SPSIM_ENUMERIC, "trace: the schedule deadlocked (p %u, v %u, m %u)",
                          p, v, m);
    }
    struct buf b = {0};
    metadata(&b, p);
    double pipe_end = 0;
    for (uint32_t k = 0; k < p; k++) {
        rank_events(&b, &s, &x, k);
        const struct op *last = s.ops + ((size_t)k + 1) * 2 * m * v - 1;
        pipe_end = fmax(pipe_end, last->end);
    }
    double at = pipe_end; /* = iteration_s − tail (see the header) */
    for (uint32_t k = 0; k < p; k++)
        tail(&b, &r->time, k, at);
    put(&b,
        "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"iteration_s\":%.17g,"
        "\"pipeline_end_s\":%.17g,\"trace_end_s\":%.17g}}\n",
        r->time.iteration_s, pipe_end, at + x.tail);
    free(s.ops);
    free(s.where);
    if (b.oom) {
        free(b.s);
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    }
    *out = b.s;
    return SPSIM_OK;
}
