/*
 * Running a sweep: the range is cut into blocks of consecutive points; worker threads take
 * blocks in order and fill a ring of slots; the calling thread writes the slots in block order.
 * At most `nslots` blocks are in flight, so memory is bounded whatever the range, and the
 * output is the same for any thread count. --top K keeps a heap per worker and merges them at
 * the end (ties to the lower index), then evaluates and writes the K winners.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sweep_internal.h"

/* Points per block: about a megabyte of CSV when rows are written. Without rows a block costs
 * only its counts, so blocks are as large as load balance allows (16 per thread) between
 * these bounds: handing a block over costs a few microseconds of locking and waking. */
#define BLOCK_ROWS        1024
#define BLOCK_POINTS_MIN  1024
#define BLOCK_POINTS_MAX  (1u << 20)
#define BLOCKS_PER_THREAD 16
#define SLOTS_PER_THREAD  4
#define MAX_THREADS       256
#define PROGRESS_EVERY_S  0.1

const char *
spsim_sweep_by_name(enum spsim_sweep_by by)
{
    static const char *const names[] = {"iteration_s", "total_bytes", "mfu", "tokens_per_s"};
    return (unsigned)by < SPSIM_ARRAY_LENGTH(names) ? names[by] : "?";
}

const char *
spsim_sweep_by_column(enum spsim_sweep_by by)
{
    static const char *const columns[] = {"time_iteration_s", "memory_total_bytes", "time_mfu",
                                          "time_tokens_per_s"};
    return (unsigned)by < SPSIM_ARRAY_LENGTH(columns) ? columns[by] : "?";
}

void
spsim_sweep_options_defaults(struct spsim_sweep_options *opt)
{
    memset(opt, 0, sizeof(*opt));
    opt->format = SPSIM_ROW_CSV;
    opt->header = true;
    opt->by = SPSIM_BY_TOKENS_PER_S;
}

struct runner {
    const struct spsim_sweep *sw;
    const struct spsim_sweep_options *opt;
    uint64_t begin, end, block_points, nblocks;
    unsigned nthreads, nslots;
    struct spsim_sweep_worker *workers;
    struct spsim_block *slots;
    bool *ready;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    uint64_t next, written; /* next block to hand out, next block to write */
    bool stop;
    bool stopped; /* the progress callback asked to stop */
    int rc;
    struct spsim_sweep_stats stats;
    struct timespec t0;
    double last_progress;
};

static double
elapsed(const struct runner *r)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - r->t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - r->t0.tv_nsec);
}

/* Report progress (at most every PROGRESS_EVERY_S unless final). @return SPSIM_EIO when the
 * callback asks to stop */
static int
progress(struct runner *r, bool final)
{
    if (!r->opt->progress)
        return SPSIM_OK;
    double now = elapsed(r);
    if (!final && now - r->last_progress < PROGRESS_EVERY_S)
        return SPSIM_OK;
    r->last_progress = now;
    r->stats.elapsed_s = now;
    if (r->opt->progress(r->opt->cookie, &r->stats)) {
        r->stopped = true;
        return SPSIM_EIO;
    }
    return SPSIM_OK;
}

static void
block_reset(const struct runner *r, uint64_t b, struct spsim_block *blk)
{
    blk->begin = r->begin + b * r->block_points;
    blk->end = blk->begin + r->block_points < r->end ? blk->begin + r->block_points : r->end;
    blk->evaluated = blk->valid = blk->feasible = blk->written = 0;
    blk->out.len = blk->invalid.len = 0;
    blk->rc = SPSIM_OK;
}

/* Write one finished block and add its counts (the calling thread only). */
static int
emit(struct runner *r, struct spsim_block *blk)
{
    const struct spsim_sweep_options *opt = r->opt;
    if (blk->rc != SPSIM_OK)
        return blk->rc;
    if (blk->invalid.len && opt->invalid(opt->cookie, blk->invalid.s, blk->invalid.len))
        return SPSIM_EIO;
    if (blk->out.len && opt->write(opt->cookie, blk->out.s, blk->out.len))
        return SPSIM_EIO;
    r->stats.evaluated += blk->evaluated;
    r->stats.valid += blk->valid;
    r->stats.feasible += blk->feasible;
    r->stats.written += blk->written;
    return progress(r, false);
}

struct thread_arg {
    struct runner *r;
    unsigned id;
};

static void *
worker_main(void *arg)
{
    struct thread_arg *ta = arg;
    struct runner *r = ta->r;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && r->next < r->nblocks && r->next >= r->written + r->nslots)
            pthread_cond_wait(&r->work, &r->mu);
        if (r->stop || r->next >= r->nblocks)
            break;
        uint64_t b = r->next++;
        struct spsim_block *blk = &r->slots[b % r->nslots];
        pthread_mutex_unlock(&r->mu);
        block_reset(r, b, blk);
        spsim_sweep_run_block(&r->workers[ta->id], r->opt, blk);
        pthread_mutex_lock(&r->mu);
        r->ready[b % r->nslots] = true;
        pthread_cond_broadcast(&r->done);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* The calling thread: write blocks in order as they complete. */
static void
write_in_order(struct runner *r)
{
    pthread_mutex_lock(&r->mu);
    while (r->written < r->nblocks && !r->stop) {
        unsigned s = (unsigned)(r->written % r->nslots);
        while (!r->ready[s]) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 100000000; /* wake for the progress report */
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&r->done, &r->mu, &until);
            pthread_mutex_unlock(&r->mu);
            int rc = progress(r, false);
            pthread_mutex_lock(&r->mu);
            if (rc != SPSIM_OK) {
                r->rc = rc;
                r->stop = true;
                break;
            }
        }
        if (r->stop)
            break;
        pthread_mutex_unlock(&r->mu);
        int rc = emit(r, &r->slots[s]);
        pthread_mutex_lock(&r->mu);
        r->ready[s] = false;
        r->written++;
        if (rc != SPSIM_OK) {
            r->rc = rc;
            r->stop = true;
        }
        pthread_cond_broadcast(&r->work);
    }
    r->stop = true;
    pthread_cond_broadcast(&r->work);
    pthread_mutex_unlock(&r->mu);
}

static int
run_threads(struct runner *r)
{
    pthread_t tid[MAX_THREADS];
    struct thread_arg args[MAX_THREADS];
    unsigned started = 0;
    for (; started < r->nthreads; started++) {
        args[started] = (struct thread_arg){r, started};
        if (pthread_create(&tid[started], NULL, worker_main, &args[started]) != 0)
            break;
    }
    if (started == 0)
        return SPSIM_ENOMEM;
    write_in_order(r);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    return r->rc;
}

static int
run_inline(struct runner *r)
{
    for (uint64_t b = 0; b < r->nblocks; b++) {
        block_reset(r, b, &r->slots[0]);
        spsim_sweep_run_block(&r->workers[0], r->opt, &r->slots[0]);
        int rc = emit(r, &r->slots[0]);
        if (rc != SPSIM_OK)
            return rc;
    }
    return SPSIM_OK;
}

static int
compare_top(const void *a, const void *b)
{
    const struct spsim_top_entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Merge the workers' heaps, keep the best K, and write them. */
static int
finish_top(struct runner *r)
{
    const struct spsim_sweep_options *opt = r->opt;
    uint64_t total = 0;
    for (unsigned i = 0; i < r->nthreads; i++)
        total += r->workers[i].ntop;
    struct spsim_top_entry *all = spsim_calloc(total ? total : 1, sizeof(*all));
    if (!all)
        return SPSIM_ENOMEM;
    uint64_t n = 0;
    for (unsigned i = 0; i < r->nthreads; i++) {
        memcpy(all + n, r->workers[i].top, r->workers[i].ntop * sizeof(*all));
        n += r->workers[i].ntop;
    }
    qsort(all, n, sizeof(*all), compare_top);
    if (n > opt->top_k)
        n = opt->top_k;
    for (uint64_t i = 0; opt->top_index && i < n; i++)
        opt->top_index[i] = all[i].index;
    if (opt->top_count)
        *opt->top_count = n;
    int rc = SPSIM_OK;
    struct spsim_block *blk = &r->slots[0];
    block_reset(r, 0, blk);
    for (uint64_t i = 0; rc == SPSIM_OK && opt->format != SPSIM_ROW_NONE && i < n; i++) {
        /* Every point of the range evaluated once; winners again, to write their rows. */
        struct spsim_sweep_options one = *opt;
        one.top_k = 0;
        one.invalid = NULL;
        blk->begin = all[i].index;
        blk->end = blk->begin + 1;
        blk->out.len = 0;
        blk->written = 0;
        spsim_sweep_run_block(&r->workers[0], &one, blk);
        rc = blk->rc;
        if (rc == SPSIM_OK && blk->out.len && opt->write(opt->cookie, blk->out.s, blk->out.len))
            rc = SPSIM_EIO;
        r->stats.written += blk->written;
    }
    free(all);
    return rc;
}

static int
check_options(const struct spsim_sweep *sw, const struct spsim_sweep_options *opt,
              struct spsim_error *err)
{
    if (sw->unindexed)
        return spsim_fail(err, SPSIM_ERANGE,
                          "sweep: the space has 2^62 points or more (only optimize searches it)");
    uint64_t end = opt->end ? opt->end : sw->size;
    if (opt->begin > end || end > sw->size)
        return spsim_fail(err, SPSIM_EINVAL, "sweep: range [%llu, %llu) is outside the %llu points",
                          (unsigned long long)opt->begin, (unsigned long long)end,
                          (unsigned long long)sw->size);
    if ((unsigned)opt->format > SPSIM_ROW_JSONL || (unsigned)opt->by >= SPSIM_BY_COUNT)
        return spsim_fail(err, SPSIM_EINVAL, "sweep: unknown format or ranking");
    if (opt->format != SPSIM_ROW_NONE && !opt->write)
        return spsim_fail(err, SPSIM_EINVAL, "sweep: rows need a write callback");
    if (opt->format != SPSIM_ROW_NONE && opt->columns &&
        spsim_row_columns_check(opt->columns, err) != SPSIM_OK)
        return err ? err->code : SPSIM_EINVAL;
    if (opt->top_k > SPSIM_SWEEP_MAX_TOP)
        return spsim_fail(err, SPSIM_EINVAL, "--top: at most %u, got %llu", SPSIM_SWEEP_MAX_TOP,
                          (unsigned long long)opt->top_k);
    return SPSIM_OK;
}

static unsigned
thread_count(unsigned asked, uint64_t most)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = asked ? asked : online > 0 ? (unsigned)online : 1;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    if (n > most)
        n = (unsigned)most;
    return n;
}

static void
runner_free(struct runner *r)
{
    for (unsigned i = 0; r->workers && i < r->nthreads; i++)
        spsim_sweep_worker_free(&r->workers[i]);
    for (unsigned i = 0; r->slots && i < r->nslots; i++) {
        spsim_text_free(&r->slots[i].out);
        spsim_text_free(&r->slots[i].invalid);
    }
    free(r->workers);
    free(r->slots);
    free(r->ready);
}

static int
runner_init(struct runner *r, const struct spsim_sweep *sw, const struct spsim_sweep_options *opt)
{
    r->sw = sw;
    r->opt = opt;
    r->begin = opt->begin;
    r->end = opt->end ? opt->end : sw->size;
    bool rows = opt->format != SPSIM_ROW_NONE && !opt->top_k;
    uint64_t points = r->end - r->begin;
    r->nthreads = thread_count(opt->threads, points / BLOCK_ROWS + 1);
    r->block_points = points / ((uint64_t)r->nthreads * BLOCKS_PER_THREAD);
    if (r->block_points > BLOCK_POINTS_MAX)
        r->block_points = BLOCK_POINTS_MAX;
    if (r->block_points < BLOCK_POINTS_MIN)
        r->block_points = BLOCK_POINTS_MIN;
    if (rows)
        r->block_points = BLOCK_ROWS;
    r->nblocks = (points + r->block_points - 1) / r->block_points;
    if (r->nthreads > r->nblocks)
        r->nthreads = r->nblocks ? (unsigned)r->nblocks : 1;
    r->nslots = r->nthreads == 1 ? 1 : SLOTS_PER_THREAD * r->nthreads;
    r->stats.points = r->end - r->begin;
    clock_gettime(CLOCK_MONOTONIC, &r->t0);
    r->workers = spsim_calloc(r->nthreads, sizeof(*r->workers));
    r->slots = spsim_calloc(r->nslots, sizeof(*r->slots));
    r->ready = spsim_calloc(r->nslots, sizeof(*r->ready));
    if (!r->workers || !r->slots || !r->ready)
        return SPSIM_ENOMEM;
    for (unsigned i = 0; i < r->nthreads; i++)
        if (spsim_sweep_worker_init(&r->workers[i], sw, opt) != SPSIM_OK)
            return SPSIM_ENOMEM;
    return SPSIM_OK;
}

static int
write_header(const struct spsim_sweep_options *opt)
{
    if (opt->format != SPSIM_ROW_CSV || !opt->header)
        return SPSIM_OK;
    struct spsim_row_writer w;
    char *header = spsim_calloc(SPSIM_ROW_MAX, 1);
    if (!header || spsim_row_writer_init(&w, SPSIM_ROW_CSV, opt->columns) != SPSIM_OK) {
        free(header);
        return SPSIM_ENOMEM;
    }
    size_t n = spsim_row_writer_header(&w, header, SPSIM_ROW_MAX);
    int rc = n && opt->write(opt->cookie, header, n) ? SPSIM_EIO : SPSIM_OK;
    spsim_row_writer_free(&w);
    free(header);
    return rc;
}

int
spsim_sweep_run(const struct spsim_sweep *sw, const struct spsim_sweep_options *opt,
                struct spsim_sweep_stats *stats, struct spsim_error *err)
{
    if (!sw || !opt)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_sweep_run: NULL argument");
    int rc = check_options(sw, opt, err);
    if (rc != SPSIM_OK)
        return rc;
    struct runner r;
    memset(&r, 0, sizeof(r));
    rc = runner_init(&r, sw, opt);
    if (rc == SPSIM_OK)
        rc = write_header(opt);
    if (rc == SPSIM_OK && r.nblocks > 0) {
        pthread_mutex_init(&r.mu, NULL);
        pthread_cond_init(&r.work, NULL);
        pthread_cond_init(&r.done, NULL);
        rc = r.nthreads == 1 ? run_inline(&r) : run_threads(&r);
        pthread_cond_destroy(&r.done);
        pthread_cond_destroy(&r.work);
        pthread_mutex_destroy(&r.mu);
    }
    if (rc == SPSIM_OK && opt->top_k)
        rc = finish_top(&r);
    if (rc == SPSIM_OK)
        rc = progress(&r, true);
    r.stats.elapsed_s = elapsed(&r);
    if (stats)
        *stats = r.stats;
    runner_free(&r);
    if (rc == SPSIM_ENOMEM)
        return spsim_fail(err, rc, "sweep: out of memory (or no thread could be started)");
    if (rc == SPSIM_EIO)
        return spsim_fail(err, rc,
                          r.stopped ? "sweep: stopped by the progress callback"
                                    : "sweep: the output was refused (write failed)");
    return rc;
}
