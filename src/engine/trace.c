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
 *
 * ZB-H1, ZB-V, DualPipe and DualPipeV run their reference code's order (build_zb_h1;
 * build_zbv, zbv.py's greedy try_v_schedule in zbv_order.c; dual_steps),
 * with a backward split into its input gradient (B less W) and its weight gradient W
 * (time.wgrad_s / (m·v)) where the schedule splits it. Each op waits for its true producer's
 * end (stage_of, rank_at); the idle this leaves on each rank is then scaled, gap by gap, to
 * the composition's pp_bubble_s (the schedule's closed form, pp_schedule.c), so that the trace
 * still ends at time.iteration_s; otherData.dependency_idle_s keeps the largest before the
 * scaling. A DualPipe pair (a forward beside another micro-batch's backward) starts once both
 * inputs are in and hands both outputs on at its end, as _forward_backward_chunk receives both,
 * computes, then sends (dualpipe.py:205-214 at 3da1bbe). ZB-V's dependency_idle_s counts from
 * each rank's first forward, as zbv.py's bubble does.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "spsim/plan.h"
#include "zbv_order.h"

enum { TID_COMPUTE = 0, TID_COMM = 1, TID_SEND = 2, TID_DP = 3 };

/* The trace's text (internal.h spsim_text): each event printed in place, the buffer grown to
 * what vsnprintf says it needs. */
static void SPSIM_PRINTF(2, 3) put(struct spsim_text *b, const char *fmt, ...)
{
    if (b->failed || spsim_text_reserve(b, 256) != SPSIM_OK) {
        b->failed = true;
        return;
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < b->cap - b->len) {
            b->len += (size_t)k;
            return;
        }
        if (k < 0 || spsim_text_reserve(b, (size_t)k) != SPSIM_OK) {
            b->failed = true;
            return;
        }
    }
}

/* One complete ("X") event; times in seconds, written in microseconds. */
static void
event(struct spsim_text *b, const char *name, const char *cat, uint32_t pid, int tid, double start,
      double dur, int mb, int chunk)
{
    put(b, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%u,\"tid\":%d,", name, cat, pid,
        tid);
    put(b, "\"ts\":%.17g,\"dur\":%.17g", start * 1e6, dur * 1e6);
    if (mb >= 0)
        put(b, ",\"args\":{\"microbatch\":%d,\"chunk\":%d}", mb, chunk);
    put(b, "}");
}

/* The op list of one rank in its order: forwards (F), whole backwards (B), and, in the
 * zero-bubble and DualPipe schedules, input-gradient backwards and weight gradients (W) apart. */
enum op_kind { OP_F = 0, OP_B = 1, OP_BI = 2, OP_W = 3 };

struct op {
    uint8_t kind;
    bool paired; /* DualPipe's _forward_backward_chunk: a forward and a backward overlapped */
    bool done;
    int mb, chunk;
    double start, end;
};

struct sched {
    uint32_t p, v, m;
    uint32_t nc;     /* chunk indices: v, or DualPipe's two directions */
    uint32_t cap;    /* ops per rank at most: 3·m·nc */
    uint32_t *n;     /* each rank's ops */
    struct op *ops;  /* p × cap, each rank's in its order */
    uint32_t *where; /* (rank, F / B / W, micro-batch, chunk) -> the op's index in its rank */
    enum spsim_pp_schedule schedule;
};

static int
op_class(uint8_t kind)
{
    return kind == OP_F ? 0 : kind == OP_W ? 2 : 1;
}

static size_t
key(const struct sched *s, uint32_t r, int cls, int mb, int chunk)
{
    return (((size_t)r * 3 + (size_t)cls) * s->m + (size_t)mb) * s->nc + (size_t)chunk;
}

static struct op *
rank_ops(const struct sched *s, uint32_t r)
{
    return s->ops + (size_t)r * s->cap;
}

/* Append (kind, micro-batch, chunk) to rank r's order. */
static void
push(struct sched *s, uint32_t r, uint8_t kind, int mb, int chunk, bool paired)
{
    uint32_t j = s->n[r]++;
    rank_ops(s, r)[j] = (struct op){.kind = kind, .paired = paired, .mb = mb, .chunk = chunk};
    s->where[key(s, r, op_class(kind), mb, chunk)] = j;
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
    uint32_t nf = 0, nb = 0;
    int mb, chunk;
    for (; nf < warm; nf++) {
        chunk_of(s, nf, false, &mb, &chunk);
        push(s, r, OP_F, mb, chunk, false);
    }
    while (nb < total) {
        if (nf < total) {
            chunk_of(s, nf++, false, &mb, &chunk);
            push(s, r, OP_F, mb, chunk, false);
        }
        chunk_of(s, nb++, true, &mb, &chunk);
        push(s, r, OP_B, mb, chunk, false);
    }
}

/*
 * ZB-H1 as the paper's hand-made schedule (Qi et al. 2024 §3.1, Figure 3; get_hand_schedule
 * with warmup_c = 1 in sail-sg/zero-bubble-pipeline-parallelism's arxiv branch at f68d3879,
 * megatron/core/pipeline_parallel/efficiency.py:110): 1F1B's min(p − r − 1, m) warm-up
 * forwards, every backward split into its input gradient B and its W, rank r running no W in
 * its first r steady steps (a W after each B once i >= r) and the r it deferred at the end.
 */
static void
build_zb_h1(struct sched *s, uint32_t r)
{
    uint32_t p = s->p, m = s->m, warm = spsim_min_u64(p - r - 1, m);
    int nf = 0, nb = 0, nw = 0;
    for (uint32_t k = 0; k < warm; k++)
        push(s, r, OP_F, nf++, 0, false);
    for (uint32_t i = 0; i < m; i++) {
        if (warm + i < m)
            push(s, r, OP_F, nf++, 0, false);
        push(s, r, OP_BI, nb++, 0, false);
        if (i >= r)
            push(s, r, OP_W, nw++, 0, false);
    }
    while (nw < (int)m)
        push(s, r, OP_W, nw++, 0, false);
}

/* One rank of DualPipe or DualPipeV while its order is built: the micro-batches each phase
 * ran forward and backward, and the weight gradients WeightGradStore holds (a FIFO). */
struct dual {
    struct sched *s;
    uint32_t r;
    bool flip; /* dualpipe.py: phase ^= is_in_second_half */
    int half;  /* DualPipe: direction 1's micro-batches are numbered after direction 0's */
    int nf[2], nb[2];
    int *wq, wh, wt; /* the deferred W's (micro-batch, chunk) pairs */
};

static void
dual_f(struct dual *d, int phase, bool paired)
{
    int c = phase ^ d->flip;
    push(d->s, d->r, OP_F, c * d->half + d->nf[c]++, c, paired);
}

/* _backward_chunk(phase, enable_zb): a whole backward, or B with its W queued */
static void
dual_b(struct dual *d, int phase, bool zb, bool paired)
{
    int c = phase ^ d->flip, mb = c * d->half + d->nb[c]++;
    push(d->s, d->r, zb ? OP_BI : OP_B, mb, c, paired);
    if (zb) {
        d->wq[2 * d->wt] = mb, d->wq[2 * d->wt + 1] = c;
        d->wt++;
    }
}

static void
dual_w(struct dual *d)
{
    push(d->s, d->r, OP_W, d->wq[2 * d->wh], d->wq[2 * d->wh + 1], false);
    d->wh++;
}

/*
 * DualPipe and DualPipeV's eight steps (deepseek-ai/DualPipe at 3da1bbe, dualpipe.py:358-425,
 * dualpipev.py:330-396; the same loops): `n` the ranks of a half (DualPipe p/2, DualPipeV p),
 * `h` the rank's place in it (DualPipe min(r, p − 1 − r), DualPipeV r), `c` each phase's
 * micro-batches (DualPipe m/2, DualPipeV m). A pair is _forward_backward_chunk; the middle
 * (DualPipeV: last) rank's first main step runs its forward and backward apart.
 */
static void
dual_steps(struct dual *d, int n, int h, int c)
{
    for (int i = 0; i < (n - h - 1) * 2; i++) /* step 1: nF0 */
        dual_f(d, 0, false);
    for (int i = 0; i < h + 1; i++) { /* step 2: nF0F1 */
        dual_f(d, 0, false);
        dual_f(d, 1, false);
    }
    for (int i = 0; i < n - h - 1; i++) { /* step 3: nB1W1F1 */
        dual_b(d, 1, true, false);
        dual_w(d);
        dual_f(d, 1, false);
    }
    for (int i = 0; i < c - 2 * n + h + 1; i++) { /* step 4: nF0B1F1B0 */
        bool apart = i == 0 && h == n - 1;
        dual_f(d, 0, !apart);
        dual_b(d, 1, false, !apart);
        dual_f(d, 1, true);
        dual_b(d, 0, false, true);
    }
    for (int i = 0; i < n - h - 1; i++) { /* step 5: nB1F1B0 */
        dual_b(d, 1, false, false);
        dual_f(d, 1, true);
        dual_b(d, 0, false, true);
    }
    bool zb = false;
    for (int i = 0; i < h + 1; i++) { /* step 6: nB1B0, the second half zero-bubble */
        if (i == (h + 1) / 2 && h % 2 == 1)
            zb = true;
        dual_b(d, 1, zb, false);
        if (i == (h + 1) / 2 && h % 2 == 0)
            zb = true;
        dual_b(d, 0, zb, false);
    }
    for (int i = 0; i < n - h - 1; i++) { /* step 7: nWB0 */
        dual_w(d);
        dual_b(d, 0, true, false);
    }
    while (d->wh < d->wt) /* step 8: nW, the rest (h + 1) */
        dual_w(d);
}

static bool
build_dual(struct sched *s, uint32_t r)
{
    uint32_t p = s->p, m = s->m;
    bool v_shape = s->schedule == SPSIM_PP_SCHEDULE_DUALPIPEV;
    struct dual d = {.s = s, .r = r, .wq = malloc(sizeof(int) * 2 * 2 * m)};
    if (!d.wq)
        return false;
    d.flip = !v_shape && r >= p / 2;
    d.half = v_shape ? 0 : (int)m / 2;
    int h = v_shape ? (int)r : (int)spsim_min_u64(r, p - 1 - r);
    dual_steps(&d, v_shape ? (int)p : (int)p / 2, h, v_shape ? (int)m : (int)m / 2);
    free(d.wq);
    return true;
}

/* A DualPipe pair's forward, its backward next in the rank's order (dual_steps): the pair
 * receives both inputs before it computes and sends both outputs after (dualpipe.py:205-214,
 * _forward_backward_chunk). */
static bool
pair_head(const struct op *o)
{
    return o->paired && o->kind == OP_F;
}

/* The end of rank r's op of class `cls` (F 0, B 1, W 2) on (micro-batch, chunk), or -1 if not
 * yet scheduled. A paired forward's output leaves with its backward's, at the pair's end
 * (dualpipe.py _forward_backward_chunk: _send_forward after the overlapped compute). */
static double
done_at(const struct sched *s, uint32_t r, int cls, int mb, int chunk)
{
    const struct op *o = rank_ops(s, r) + s->where[key(s, r, cls, mb, chunk)];
    if (pair_head(o))
        o++; /* the pair's end */
    return o->done ? o->end : -1;
}

/* The start of rank r's op of class `cls` on (micro-batch, chunk) plus `hop`, or -1 if not yet
 * scheduled. */
static double
handed_at(const struct sched *s, uint32_t r, int cls, int mb, int chunk, double hop)
{
    const struct op *o = rank_ops(s, r) + s->where[key(s, r, cls, mb, chunk)];
    return o->done ? o->start + hop : -1;
}

/* When an op's input is ready in Megatron's schedules (see the header), or -1 if its producer
 * has not run: a producer on another rank hands over `hop[bwd]` after it starts, one on the
 * same rank (the last chunk's own forward, or everything with pp = 1) when it ends. */
static double
ready_at(const struct sched *s, uint32_t r, const struct op *o, const double hop[2])
{
    uint32_t p = s->p, v = s->v;
    int c = o->chunk;
    if (o->kind == OP_F) {
        if (r > 0)
            return handed_at(s, r - 1, 0, o->mb, c, hop[0]);
        if (c == 0)
            return 0;
        return p > 1 ? handed_at(s, p - 1, 0, o->mb, c - 1, hop[0])
                     : done_at(s, 0, 0, o->mb, c - 1);
    }
    if (r < p - 1)
        return handed_at(s, r + 1, 1, o->mb, c, hop[1]);
    if ((uint32_t)c < v - 1)
        return p > 1 ? handed_at(s, 0, 1, o->mb, c + 1, hop[1]) : done_at(s, 0, 1, o->mb, c + 1);
    return done_at(s, r, 0, o->mb, c);
}

/* The pipeline stage of rank r's chunk c in the zero-bubble and DualPipe schedules (see
 * pp_schedule.c): ZB-H1 stage r; DualPipe direction c's stage (r, or p − 1 − r for the
 * micro-batches fed at the last rank); the V shapes stage r (chunk 0) or 2p − 1 − r. */
static uint32_t
stage_of(const struct sched *s, uint32_t r, int c)
{
    return c == 0 ? r : s->schedule == SPSIM_PP_SCHEDULE_DUALPIPE ? s->p - 1 - r : 2 * s->p - 1 - r;
}

/* The rank holding stage `st` of chunk (direction) c's micro-batches, and its chunk there. */
static uint32_t
rank_at(const struct sched *s, uint32_t st, int c, int *chunk)
{
    if (s->schedule == SPSIM_PP_SCHEDULE_DUALPIPE) {
        *chunk = c;
        return c == 0 ? st : s->p - 1 - st;
    }
    *chunk = st < s->p ? 0 : 1;
    return st < s->p ? st : 2 * s->p - 1 - st;
}

/* When an op's input is ready in the other schedules: a forward at the end of the stage
 * before's (with its send), a backward at the end of the stage after's (the last stage's own
 * forward), a W at the end of its own B. */
static double
ready_dep(const struct sched *s, uint32_t r, const struct op *o)
{
    uint32_t stages = s->schedule == SPSIM_PP_SCHEDULE_DUALPIPE || s->nc == 1 ? s->p : 2 * s->p;
    uint32_t st = stage_of(s, r, o->chunk);
    int c;
    if (o->kind == OP_W)
        return done_at(s, r, 1, o->mb, o->chunk);
    if (o->kind == OP_F) {
        if (st == 0)
            return 0;
        uint32_t q = rank_at(s, st - 1, o->chunk, &c);
        return done_at(s, q, 0, o->mb, c);
    }
    if (st == stages - 1)
        return done_at(s, r, 0, o->mb, o->chunk);
    uint32_t q = rank_at(s, st + 1, o->chunk, &c);
    return done_at(s, q, 1, o->mb, c);
}

/* When rank r's op j can start: its input's arrival, or for a DualPipe pair (a paired forward
 * and the backward after it) both inputs', as _forward_backward_chunk receives both before
 * computing (dualpipe.py:205-214 at 3da1bbe); -1 if not yet there. */
static double
input_at(const struct sched *s, uint32_t r, uint32_t j, const double hop[2])
{
    const struct op *o = rank_ops(s, r) + j;
    if (s->schedule == SPSIM_PP_SCHEDULE_MEGATRON)
        return ready_at(s, r, o, hop);
    double in = ready_dep(s, r, o);
    if (in >= 0 && pair_head(o)) {
        double other = ready_dep(s, r, o + 1);
        in = other < 0 ? -1 : fmax(in, other);
    }
    return in;
}

/* Place every op at max(its rank's previous op, its input); step = op + exposed send (a W
 * sends nothing). `len` each kind's duration. */
static bool
simulate(struct sched *s, const double len[4], double send, const double hop[2])
{
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
            while (next[r] < s->n[r]) {
                struct op *o = rank_ops(s, r) + next[r];
                bool pair_b = o->paired && o->kind != OP_F; /* its forward waited for it */
                double in = pair_b ? 0 : input_at(s, r, next[r], hop);
                if (in < 0)
                    break;
                o->start = fmax(free_at[r], in);
                o->end = o->start + len[o->kind] + (o->kind == OP_W ? 0 : send);
                o->done = true;
                free_at[r] = o->end;
                next[r]++;
                moved = true;
            }
        }
    }
    bool all = true;
    for (uint32_t r = 0; r < s->p; r++)
        all = all && next[r] == s->n[r];
    free(next);
    free(free_at);
    return all;
}

/*
 * The other schedules' fill and drain are the composition's pp_bubble_s (pp_schedule.c's
 * closed forms), not the dependency simulation's idle: each rank's idle gaps, in the places
 * the dependencies put them, are scaled to sum to pp_bubble_s (a rank without any keeps it
 * at its end). @return the largest idle of a rank before scaling.
 */
static double
spread_idle(struct sched *s, double bubble, bool from_first)
{
    double most = 0;
    for (uint32_t r = 0; r < s->p; r++) {
        struct op *o = rank_ops(s, r);
        double busy = 0;
        for (uint32_t j = 0; j < s->n[r]; j++)
            busy += o[j].end - o[j].start;
        double idle = s->n[r] ? o[s->n[r] - 1].end - busy : 0;
        /* ZB-V's bubble counts from the rank's first forward (zbv.py put: stage_bubble grows
         * once count[stage][0] > 0), as try_v_schedule's max_bubble and the closed form do */
        most = fmax(most, idle - (from_first && s->n[r] ? o[0].start : 0));
        double k = idle > 0 ? bubble / idle : 0, at = 0, before = 0;
        for (uint32_t j = 0; j < s->n[r]; j++) {
            double len = o[j].end - o[j].start, gap = o[j].start - before;
            before = o[j].end;
            o[j].start = at + gap * k;
            o[j].end = o[j].start + len;
            at = o[j].end;
        }
    }
    return most;
}

static void
metadata(struct spsim_text *b, uint32_t p)
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
tail(struct spsim_text *b, const struct spsim_time_report *t, uint32_t pid, double at)
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
        {"optimizer step on the host (exposed)", t->optimizer_host_exposed_s},
        {"training_log on the host", t->log_host_s},
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
    double f, b, w, exposed_f, exposed_b, send, send_full, tail, hop[2];
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
    /* the weight-gradient GEMMs' share (pipeline_time.c wgrad_s), a chunk's */
    x.w = spsim_min_d(t->wgrad_s / (m * v), comp_b / (m * v));
    x.send = t->pp_p2p_s / (2 * m * v);
    x.send_full = (t->pp_p2p_s + t->pp_p2p_hidden_s) / (2 * m * v);
    /* The fill and drain's hand-overs: pp_bubble_s / (p − 1) per chunk, split as the chunk's
     * forward and backward steps (each with its exposed send). */
    double p = r->config.pp, step = x.f + x.b + 2 * x.send;
    double hop = p > 1 ? t->pp_bubble_s / (p - 1) : 0;
    x.hop[0] = step > 0 ? hop * (x.f + x.send) / step : 0;
    x.hop[1] = hop - x.hop[0];
    x.tail = t->dp_exposed_s + t->tied_embedding_allreduce_s + t->moe_expert_bias_allreduce_s +
             t->optimizer_s + t->optimizer_host_exposed_s + t->log_host_s;
    return x;
}

static void
rank_events(struct spsim_text *b, const struct sched *s, const struct mb_terms *x, uint32_t r)
{
    static const char *const names[] = {"forward", "backward", "backward input-gradient",
                                        "weight-gradient"};
    static const char *const cats[] = {"forward", "backward", "backward", "wgrad"};
    const struct op *o = rank_ops(s, r);
    char name[96];
    for (uint32_t j = 0; j < s->n[r]; j++) {
        int k = o[j].kind;
        double len = k == OP_F ? x->f : k == OP_B ? x->b : k == OP_BI ? x->b - x->w : x->w;
        double ex = k == OP_F ? x->exposed_f : k == OP_W ? 0 : x->exposed_b;
        snprintf(name, sizeof(name), "%s mb %d chunk %d%s", names[k], o[j].mb, o[j].chunk,
                 o[j].paired ? " (F&B)" : "");
        event(b, name, cats[k], r, TID_COMPUTE, o[j].start, len, o[j].mb, o[j].chunk);
        if (ex > 0)
            event(b, "exposed communication", "comm", r, TID_COMM, o[j].start + len - ex, ex,
                  o[j].mb, o[j].chunk);
        if (k == OP_W)
            continue;
        if (s->p > 1 && x->send > 0)
            event(b, "send (exposed)", "p2p", r, TID_COMPUTE, o[j].start + len, x->send, o[j].mb,
                  o[j].chunk);
        if (s->p > 1 && x->send_full > 0)
            event(b, k == OP_F ? "send activation" : "send gradient", "p2p", r, TID_SEND,
                  o[j].start + len, x->send_full, o[j].mb, o[j].chunk);
    }
}

/* The schedule's rules the trace relies on (a result edited by hand escapes the query's
 * checks, parallel.c and pp_schedule.c), or 0. */
static int
trace_check(const struct spsim_result *r, struct spsim_error *err)
{
    uint32_t p = r->config.pp, v = r->config.vpp, m = r->comm.microbatches;
    enum spsim_pp_schedule sc = r->config.pp_schedule;
    const char *name = spsim_pp_schedule_name(sc, v);
    if ((uint64_t)p * 2 * m * v > 4000000)
        return spsim_fail(err, SPSIM_ERANGE,
                          "trace: %u ranks x %u micro-batches x %u chunks are more than 2,000,000 "
                          "ops",
                          p, m, v);
    if (sc == SPSIM_PP_SCHEDULE_MEGATRON && v > 1 && m % p != 0) /* groups of p per chunk */
        return spsim_fail(err, SPSIM_ERANGE,
                          "trace: the interleaved schedule is traced for micro-batches a multiple "
                          "of pp (%u micro-batches, pp %u)",
                          m, p);
    bool dual = sc == SPSIM_PP_SCHEDULE_DUALPIPE || sc == SPSIM_PP_SCHEDULE_DUALPIPEV;
    if (sc != SPSIM_PP_SCHEDULE_MEGATRON &&
        (p < 2 ||
         v != (sc == SPSIM_PP_SCHEDULE_DUALPIPEV || sc == SPSIM_PP_SCHEDULE_ZB_V ? 2u : 1u) ||
         (dual && m < 2 * p) || (sc == SPSIM_PP_SCHEDULE_DUALPIPE && (p % 2 || m % 2))))
        return spsim_fail(err, SPSIM_ERANGE,
                          "trace: %s is traced as its rules say (pp %u, vpp %u, %u micro-batches)",
                          name, p, v, m);
    return SPSIM_OK;
}

/*
 * ZB-V's order from the zero-bubble repository's greedy search (zbv_order.c), run as its
 * runtime runs it (runtime.py:1550 at 3fd87fd) with each chunk's forward, input-gradient and
 * weight-gradient steps (the exposed send in the first two; c = 0) and the memory of the ZB
 * paper's Table 1 (M_B = 34sbh + 5as²b a forward holds, M_W = 32sbh its W keeps until it runs;
 * runtime.py:1336-1338): activation_modes_bytes[none] and 16× [full] (2sbh), under zbv.py's
 * cap of 2p forwards. @return 0, 1 no order, −1 out of memory.
 */
static int
build_zbv(struct sched *s, const struct spsim_memory_report *mr, const double len[4], double send)
{
    size_t per = (size_t)6 * s->m;
    struct spsim_zbv_op *o = calloc(per * s->p, sizeof(*o));
    uint32_t *n = calloc(s->p, sizeof(*n));
    double fm = (double)mr->activation_modes_bytes[SPSIM_MODE_NONE];
    double wm = fm > 0 ? 16.0 * (double)mr->activation_modes_bytes[SPSIM_MODE_FULL] : 0;
    fm = fm > 0 ? fm : 1; /* a result without the modes: W keeps nothing */
    const double cost[3] = {len[OP_F] + send, len[OP_BI] + send, len[OP_W]};
    const double mem[3] = {fm, -(fm - wm), -wm};
    int rc = o && n ? spsim_zbv_order(s->p, s->m, cost, mem, 2.0 * s->p * fm, o, n) : -1;
    static const uint8_t kinds[3] = {OP_F, OP_BI, OP_W};
    for (uint32_t r = 0; rc == 0 && r < s->p; r++)
        for (uint32_t j = 0; j < n[r]; j++) {
            const struct spsim_zbv_op *x = o + per * r + j;
            push(s, r, kinds[x->kind], (int)x->mb, x->chunk, false);
        }
    free(o);
    free(n);
    return rc;
}

/* Every rank's order; false when out of memory. */
static bool
build_orders(struct sched *s)
{
    for (uint32_t k = 0; k < s->p; k++) {
        if (s->schedule == SPSIM_PP_SCHEDULE_MEGATRON)
            build_order(s, k);
        else if (s->schedule == SPSIM_PP_SCHEDULE_ZB_H1)
            build_zb_h1(s, k);
        else if (!build_dual(s, k))
            return false;
    }
    return true;
}

/* Every rank's order and its ops placed by their dependencies (see the header), or the
 * failure. */
static int
lay_out(struct sched *s, const struct spsim_result *r, const struct mb_terms *x,
        struct spsim_error *err)
{
    uint32_t p = s->p;
    const double len[4] = {x->f, x->b, x->b - x->w, x->w};
    double send = p > 1 ? x->send : 0;
    int z = s->schedule == SPSIM_PP_SCHEDULE_ZB_V ? build_zbv(s, &r->memory, len, send)
            : build_orders(s)                     ? 0
                                                  : -1;
    if (z < 0)
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    if (z > 0) /* one of zbv.py's asserts */
        return spsim_fail(err, SPSIM_ERANGE,
                          "trace: zb-v's greedy search (zbv.py try_v_schedule) finds no order "
                          "for pp %u and %u micro-batches",
                          p, s->m);
    if (!simulate(s, len, send, x->hop))
        return spsim_fail(err, SPSIM_ENUMERIC, "trace: the schedule deadlocked (p %u, v %u, m %u)",
                          p, s->v, s->m);
    return SPSIM_OK;
}

static void
sched_free(struct sched *s)
{
    free(s->ops);
    free(s->where);
    free(s->n);
}

int
spsim_trace_json(const struct spsim_result *r, char **out, struct spsim_error *err)
{
    if (!r || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_trace_json: NULL argument");
    uint32_t p = r->config.pp, v = r->config.vpp, m = r->comm.microbatches;
    if (!(p >= 1 && v >= 1 && m >= 1 && r->time.iteration_s > 0))
        return spsim_fail(err, SPSIM_EINVAL, "spsim_trace_json: the result has no iteration");
    int rc = trace_check(r, err);
    if (rc)
        return rc;
    enum spsim_pp_schedule sc = r->config.pp_schedule;
    uint32_t nc = sc == SPSIM_PP_SCHEDULE_DUALPIPE ? 2 : v;
    uint32_t cap = (sc == SPSIM_PP_SCHEDULE_MEGATRON ? 2 : 3) * m * nc;
    size_t n = (size_t)p * cap;
    struct sched s = {p,
                      v,
                      m,
                      nc,
                      cap,
                      calloc(p, sizeof(uint32_t)),
                      calloc(n, sizeof(struct op)),
                      calloc((size_t)p * 3 * m * nc, sizeof(uint32_t)),
                      sc};
    struct mb_terms x = terms(r);
    rc = s.n && s.ops && s.where ? lay_out(&s, r, &x, err)
                                 : spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    if (rc) {
        sched_free(&s);
        return rc;
    }
    double dep_idle = sc == SPSIM_PP_SCHEDULE_MEGATRON
                          ? 0
                          : spread_idle(&s, r->time.pp_bubble_s, sc == SPSIM_PP_SCHEDULE_ZB_V);
    struct spsim_text b = {0};
    metadata(&b, p);
    double pipe_end = 0;
    for (uint32_t k = 0; k < p; k++) {
        rank_events(&b, &s, &x, k);
        pipe_end = fmax(pipe_end, rank_ops(&s, k)[s.n[k] - 1].end);
    }
    double at = pipe_end; /* = iteration_s − tail (see the header) */
    for (uint32_t k = 0; k < p; k++)
        tail(&b, &r->time, k, at);
    put(&b,
        "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"iteration_s\":%.17g,"
        "\"pipeline_end_s\":%.17g,\"trace_end_s\":%.17g",
        r->time.iteration_s, pipe_end, at + x.tail);
    if (sc != SPSIM_PP_SCHEDULE_MEGATRON)
        put(&b, ",\"schedule\":\"%s\",\"dependency_idle_s\":%.17g", spsim_pp_schedule_name(sc, v),
            dep_idle);
    put(&b, "}}\n");
    sched_free(&s);
    if (b.failed) {
        free(b.s);
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    }
    *out = b.s;
    return SPSIM_OK;
}
