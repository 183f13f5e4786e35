/*
 * ZB-V's order (Qi et al., "Zero Bubble Pipeline Parallelism", arXiv 2401.10241 §6) as its
 * reference builds it: sail-sg/zero-bubble at 3fd87fd, megatron/core/pipeline_parallel/
 * zerobubble/scheduler/zbv.py, PipelineGraph.try_v_schedule and create_schedule (runtime.py:1550
 * calls it with the measured f, b, w, c and max_mem None, i.e. 2p forward activations, zbv.py:23).
 * Written here from that algorithm:
 *
 * - Rank r holds model chunk 0 (stage r) and chunk 1 (stage 2p − 1 − r). The search's backward
 *   "chunk" counts the backward pass: its chunk 0 is model chunk 1 (create_schedule maps chunk
 *   to max_chunks − 1 − chunk for B and W). Each op ends at max(the rank's clock, the producer's
 *   end + c) + its cost; a rank's bubble counts from its first forward on.
 * - Warm-up: one chunk-0 forward per rank; then from the last rank down, chunk-0 forwards on
 *   ranks 0..i while memory (2 + 2i forwards ahead) and time (before rank i + 1's first chunk-1
 *   forward arrives) allow, and rank i's first chunk-1 forward. Then, rank by rank from 1, forwards
 *   on ranks p − 1..i alternating the chunk until rank i has as many as rank i − 1.
 * - 2m steps: each rank puts a weight gradient while a B would pass the cap; then one backward
 *   per rank (model chunk 0's, "b1", where its input is in, from the last rank down; the others
 *   model chunk 1's), then one forward per rank (chunk 1 where its input is in, else chunk 0),
 *   each preceded by the pending W's that fit before its input arrives, and one more where the
 *   wait would pass the largest bubble so far (fill_b, fill_f); the rest of the W's at the end.
 * - The search runs again with the last run's per-rank bubbles as the approved ones while the
 *   largest bubble falls; create_schedule keeps the best of fill_b, fill_f in {true, false}.
 */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "zbv_order.h"

struct zg {
    uint32_t p, m;
    double cost[3], mem_of[3], max_mem;
    bool fill_f, fill_b, bad;
    const double *approved; /* the last run's per-rank bubbles, or NULL */
    double max_approved;
    uint32_t *count;         /* p × 6: F0 F1 B0 B1 W0 W1 so far (search chunks) */
    double *end;             /* 6·p·m op ends (−1 not yet), zbv.py's get_id */
    double *cur, *mem, *bub; /* per rank: clock, memory, bubble */
    uint8_t *wq;             /* per rank, the chunks of its pending W's (FIFO, 2m) */
    uint8_t *b1;             /* per rank, this step's backward is the search's chunk 1 */
    uint32_t *wh, *wt;
    struct spsim_zbv_op *ops; /* p × 6m */
    uint32_t *n;
};

static size_t
gid(const struct zg *g, int cat, int chunk, uint32_t stage, uint32_t micro)
{
    return (size_t)cat * 2 * g->p * g->m + (size_t)chunk * g->p * g->m + (size_t)stage * g->m +
           micro;
}

/* end_time[id]; an id past the table (a count at m) reads as not yet, as the search never
 * runs the op it names. Python's end_time[-1] (no producer) is the table's last entry. */
static double
end_at(const struct zg *g, size_t id)
{
    size_t nodes = (size_t)6 * g->p * g->m;
    return id < nodes ? g->end[id] : -1;
}

static double
max_bubble(const struct zg *g, int stage)
{
    double most = 0;
    for (uint32_t i = 0; i < g->p; i++)
        most = fmax(most, g->bub[i]);
    if (stage >= 0)
        most = fmax(most, g->approved ? g->max_approved - g->approved[stage] : 0);
    return most;
}

/* The producer an op waits for on another rank, as the search checks it (−1: none). */
static long
producer(const struct zg *g, int cat, int chunk, uint32_t stage, uint32_t cnt)
{
    if (cat < 2 && chunk == 1 && stage + 1 < g->p)
        return (long)gid(g, cat, 1, stage + 1, cnt);
    if (cat < 2 && chunk == 0 && stage > 0)
        return (long)gid(g, cat, 0, stage - 1, cnt);
    return -1;
}

static void
put(struct zg *g, int cat, int chunk, uint32_t stage)
{
    uint32_t *cnt = g->count + (size_t)stage * 6 + (size_t)(cat * 2 + chunk);
    if (g->bad || *cnt >= g->m || g->mem[stage] + g->mem_of[cat] > g->max_mem) {
        g->bad = true; /* zbv.py's asserts */
        return;
    }
    int last = cat * 2 + chunk - 1;
    if (last >= 0 && end_at(g, cat < 2 ? gid(g, last / 2, last % 2, stage, *cnt)
                                       : gid(g, 1, chunk, stage, *cnt)) < 0) {
        g->bad = true;
        return;
    }
    double no_bubble = g->cur[stage] + g->cost[cat], t = no_bubble;
    long dep = producer(g, cat, chunk, stage, *cnt);
    if (dep >= 0) {
        if (g->end[dep] < 0) {
            g->bad = true;
            return;
        }
        t = fmax(t, g->end[dep] + g->cost[cat]); /* c = 0: the sends are in the costs */
    }
    if (g->count[(size_t)stage * 6] > 0)
        g->bub[stage] += t - no_bubble;
    g->end[gid(g, cat, chunk, stage, *cnt)] = t;
    g->cur[stage] = t;
    g->mem[stage] += g->mem_of[cat];
    g->ops[(size_t)stage * 6 * g->m + g->n[stage]++] = (struct spsim_zbv_op){
        .kind = (uint8_t)cat, .chunk = (uint8_t)(cat == 0 ? chunk : 1 - chunk), .mb = *cnt};
    if (cat == 1)
        g->wq[(size_t)stage * 2 * g->m + g->wt[stage]++] = (uint8_t)chunk;
    (*cnt)++;
}

static bool
pending(const struct zg *g, uint32_t stage)
{
    return g->wh[stage] < g->wt[stage];
}

static void
put_w(struct zg *g, uint32_t stage)
{
    if (!pending(g, stage)) {
        g->bad = true;
        return;
    }
    put(g, 2, g->wq[(size_t)stage * 2 * g->m + g->wh[stage]++], stage);
}

static uint32_t
cnt_of(const struct zg *g, uint32_t stage, int k)
{
    return g->count[(size_t)stage * 6 + (size_t)k];
}

/* The warm-up forwards (zbv.py's two loops before the 2m steps). */
static void
warm_up(struct zg *g)
{
    uint32_t p = g->p, m = g->m;
    for (uint32_t i = 0; i < p; i++)
        put(g, 0, 0, i);
    for (uint32_t k = p; k-- > 0 && !g->bad;) {
        if (k == p - 1) {
            put(g, 0, 1, k);
            continue;
        }
        double t = end_at(g, gid(g, 0, 1, k + 1, 0));
        while (!g->bad && g->mem[k] + g->mem_of[0] * (2.0 + 2.0 * k) <= g->max_mem &&
               g->cur[k] + g->cost[0] <= t && cnt_of(g, k, 0) < m)
            for (uint32_t j = 0; j <= k; j++)
                put(g, 0, 0, j);
        put(g, 0, 1, k);
    }
    int chunk = 0;
    for (uint32_t i = 1; i < p; i++) {
        while (!g->bad &&
               (cnt_of(g, i, 0) + cnt_of(g, i, 1) < cnt_of(g, i - 1, 0) + cnt_of(g, i - 1, 1) ||
                (cnt_of(g, i, 1) <= cnt_of(g, i - 1, 1) && cnt_of(g, i - 1, 1) < m))) {
            for (uint32_t j = p; j-- > i;)
                if (cnt_of(g, j, chunk) < m)
                    put(g, 0, chunk, j);
            chunk = 1 - chunk;
        }
    }
}

/* Before an op of rank i whose producer is `fa`: the pending W's that end before its input
 * arrives, and one more if the wait would pass the largest bubble (when `fill`). */
static void
fill_w(struct zg *g, uint32_t i, long fa, bool fill)
{
    while (!g->bad && pending(g, i) && fa >= 0 && end_at(g, (size_t)fa) >= g->cur[i] + g->cost[2])
        put_w(g, i);
    double in = end_at(g, fa >= 0 ? (size_t)fa : (size_t)6 * g->p * g->m - 1);
    if (pending(g, i) && in - g->cur[i] > max_bubble(g, (int)i) - g->bub[i] && fill)
        put_w(g, i);
}

/* One step's backwards: each rank's kind chosen first (the search's chunk 1, model chunk 0,
 * where its input is in), those ranks put from the last down, then the others' chunk 0. */
static void
backwards(struct zg *g)
{
    uint32_t p = g->p;
    for (uint32_t i = 0; i < p; i++)
        g->b1[i] = cnt_of(g, i, 3) < cnt_of(g, i, 2) &&
                   (i == p - 1 || end_at(g, gid(g, 1, 1, i + 1, cnt_of(g, i, 3))) >= 0 ||
                    cnt_of(g, i, 2) >= g->m);
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t k = 0; k < p && !g->bad; k++) {
            uint32_t i = pass == 0 ? p - 1 - k : k;
            bool b1 = g->b1[i];
            if (b1 != (pass == 0))
                continue;
            long fa = b1 && i < p - 1 ? (long)gid(g, 1, 1, i + 1, cnt_of(g, i, 3))
                      : !b1 && i > 0  ? (long)gid(g, 1, 0, i - 1, cnt_of(g, i, 2))
                                      : -1;
            fill_w(g, i, fa, b1 || g->fill_b);
            put(g, 1, b1 ? 1 : 0, i);
        }
}

/* One step's forwards, one per rank from the first. */
static void
forwards(struct zg *g)
{
    uint32_t p = g->p, m = g->m;
    for (uint32_t i = 0; i < p && !g->bad; i++) {
        uint32_t f0 = cnt_of(g, i, 0), f1 = cnt_of(g, i, 1);
        int item = -1;
        if (f1 >= m)
            continue;
        if (f1 >= f0)
            item = 0;
        else if (i == p - 1 || end_at(g, gid(g, 0, 1, i + 1, f1)) >= 0)
            item = 1;
        else if (f0 < m && (i == 0 || end_at(g, gid(g, 0, 0, i - 1, f0)) >= 0))
            item = 0;
        if (item < 0)
            continue;
        while (!g->bad && g->mem[i] + g->mem_of[0] > g->max_mem)
            put_w(g, i);
        long fa = item == 0 && i > 0       ? (long)gid(g, 0, 0, i - 1, f0)
                  : item == 1 && i < p - 1 ? (long)gid(g, 0, 1, i + 1, f1)
                                           : -1;
        fill_w(g, i, fa, g->fill_f);
        put(g, 0, item, i);
    }
}

/* One try_v_schedule run; false when an assert of the reference fails. */
static bool
try_run(struct zg *g)
{
    uint32_t p = g->p, m = g->m;
    g->bad = false;
    memset(g->count, 0, sizeof(uint32_t) * 6 * p);
    for (size_t k = 0; k < (size_t)6 * p * m; k++)
        g->end[k] = -1;
    memset(g->cur, 0, sizeof(double) * p);
    memset(g->mem, 0, sizeof(double) * p);
    memset(g->bub, 0, sizeof(double) * p);
    memset(g->wh, 0, sizeof(uint32_t) * p);
    memset(g->wt, 0, sizeof(uint32_t) * p);
    memset(g->n, 0, sizeof(uint32_t) * p);
    warm_up(g);
    for (uint32_t step = 0; step < 2 * m && !g->bad; step++) {
        for (uint32_t i = 0; i < p; i++)
            while (!g->bad && g->mem[i] + g->mem_of[1] > g->max_mem)
                put_w(g, i);
        backwards(g);
        forwards(g);
    }
    for (uint32_t i = 0; i < p; i++)
        while (!g->bad && pending(g, i))
            put_w(g, i);
    for (uint32_t i = 0; i < p && !g->bad; i++)
        g->bad = g->n[i] != 6 * m;
    return !g->bad;
}

/* try_v_schedule's recursion: run again with this run's bubbles approved while the largest
 * falls; the last run that lowered it. Its order is left in `best`, its bubble returned (−1:
 * no order). */
static double
search(struct zg *g, struct spsim_zbv_op *best, uint32_t *best_n, double *approved)
{
    size_t ops = (size_t)6 * g->p * g->m;
    g->approved = NULL;
    if (!try_run(g))
        return -1;
    double most = max_bubble(g, -1);
    for (int depth = 0; depth < 1000; depth++) { /* Python's recursion limit */
        memcpy(best, g->ops, sizeof(*best) * ops);
        memcpy(best_n, g->n, sizeof(*best_n) * g->p);
        memcpy(approved, g->bub, sizeof(double) * g->p);
        g->approved = approved;
        g->max_approved = most;
        if (!try_run(g) || !(max_bubble(g, -1) < most))
            break;
        most = max_bubble(g, -1);
    }
    return most;
}

int
spsim_zbv_order(uint32_t p, uint32_t m, const double cost[3], const double mem[3], double max_mem,
                struct spsim_zbv_op *out, uint32_t *n)
{
    size_t ops = (size_t)6 * p * m;
    struct zg g = {.p = p, .m = m, .max_mem = max_mem};
    memcpy(g.cost, cost, sizeof(g.cost));
    memcpy(g.mem_of, mem, sizeof(g.mem_of));
    g.count = calloc((size_t)6 * p, sizeof(uint32_t));
    g.end = calloc(ops, sizeof(double));
    g.cur = calloc((size_t)3 * p, sizeof(double));
    double *approved = calloc(p, sizeof(double));
    g.wq = calloc((size_t)2 * m * p + p, 1);
    g.wh = calloc((size_t)3 * p, sizeof(uint32_t));
    g.ops = calloc(ops, sizeof(*g.ops));
    struct spsim_zbv_op *best = calloc(ops, sizeof(*best));
    uint32_t *best_n = calloc(p, sizeof(uint32_t));
    int rc = -1;
    if (g.count && g.end && g.cur && approved && g.wq && g.wh && g.ops && best && best_n) {
        g.mem = g.cur + p, g.bub = g.cur + 2 * (size_t)p;
        g.wt = g.wh + p, g.n = g.wh + 2 * (size_t)p;
        g.b1 = g.wq + (size_t)2 * m * p;
        double least = -1;
        rc = 1;
        for (int k = 0; k < 4; k++) { /* create_schedule: fill_b, then fill_f, true first */
            g.fill_b = k < 2, g.fill_f = k % 2 == 0;
            double b = search(&g, best, best_n, approved);
            if (b >= 0 && (least < 0 || b < least)) {
                least = b, rc = 0;
                memcpy(out, best, sizeof(*out) * ops);
                memcpy(n, best_n, sizeof(*n) * p);
            }
        }
    }
    free(g.count), free(g.end), free(g.cur), free(approved), free(g.wq), free(g.wh);
    free(g.ops), free(best), free(best_n);
    return rc;
}
