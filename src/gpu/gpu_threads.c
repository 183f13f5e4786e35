/*
 * One host thread per GPU, as Megatron runs one process per GPU: each thread binds its device
 * once and queues that GPU's work alone, so that a small step costs one launch on every GPU at
 * the same time, not n launches one after another from one thread. Host-only (pthreads), so
 * that its tests need no GPU.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_plan.h"

struct spsim_gpu_threads {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int alive;           /* threads that have not returned */
    int arrived;         /* at the barrier of this generation */
    unsigned generation; /* of the barrier */
    bool bad;            /* a thread came to a barrier with a failure, or returned one */
    int first;           /* the thread whose failure was first, or -1 */
    spsim_gpu_thread_fn fn;
    void *ctx;
    int *rcs;
    struct spsim_error *errs;
};

struct worker {
    struct spsim_gpu_threads *t;
    int j;
};

bool
spsim_gpu_threads_agree(struct spsim_gpu_threads *t, bool ok)
{
    pthread_mutex_lock(&t->lock);
    unsigned gen = t->generation;
    t->bad |= !ok;
    if (++t->arrived >= t->alive) {
        t->arrived = 0;
        t->generation++;
        pthread_cond_broadcast(&t->cond);
    }
    /* A thread that has returned counts as arrived: alive drops and wakes the others. */
    while (gen == t->generation && t->arrived < t->alive)
        pthread_cond_wait(&t->cond, &t->lock);
    if (gen == t->generation) { /* completed by a thread's return, not by an arrival */
        t->arrived = 0;
        t->generation++;
        pthread_cond_broadcast(&t->cond);
    }
    bool all = !t->bad;
    pthread_mutex_unlock(&t->lock);
    return all;
}

bool
spsim_gpu_threads_failed(struct spsim_gpu_threads *t)
{
    pthread_mutex_lock(&t->lock);
    bool bad = t->bad;
    pthread_mutex_unlock(&t->lock);
    return bad;
}

static void *
worker_main(void *arg)
{
    struct worker *w = arg;
    struct spsim_gpu_threads *t = w->t;
    int rc = t->fn(t, t->ctx, w->j, &t->errs[w->j]);
    pthread_mutex_lock(&t->lock);
    t->rcs[w->j] = rc;
    if (rc != SPSIM_OK && t->first < 0)
        t->first = w->j;
    t->bad |= rc != SPSIM_OK;
    t->alive--;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Wait until every thread has returned; `grace_s` after the first failure, call stall once. */
static void
wait_all(struct spsim_gpu_threads *t, void (*stall)(void *ctx), double grace_s)
{
    bool stalled = false;
    pthread_mutex_lock(&t->lock);
    while (t->alive > 0) {
        if (t->first < 0 || stalled || !stall) {
            pthread_cond_wait(&t->cond, &t->lock);
            continue;
        }
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl); /* pthread_cond_timedwait's default clock */
        double s = (double)dl.tv_nsec * 1e-9 + grace_s;
        dl.tv_sec += (time_t)s;
        dl.tv_nsec = (long)((s - (double)(time_t)s) * 1e9);
        int w = 0;
        while (t->alive > 0 && w != ETIMEDOUT)
            w = pthread_cond_timedwait(&t->cond, &t->lock, &dl);
        if (t->alive > 0) {
            stalled = true;
            pthread_mutex_unlock(&t->lock);
            stall(t->ctx);
            pthread_mutex_lock(&t->lock);
        }
    }
    pthread_mutex_unlock(&t->lock);
}

/* Start the n workers; a thread that cannot start counts as one that failed at once. */
static void
start_all(struct spsim_gpu_threads *t, struct worker *w, pthread_t *tid, bool *started, int n)
{
    for (int j = 0; j < n; j++) {
        w[j] = (struct worker){t, j};
        started[j] = pthread_create(&tid[j], NULL, worker_main, &w[j]) == 0;
        if (started[j])
            continue;
        pthread_mutex_lock(&t->lock);
        t->rcs[j] = spsim_fail(&t->errs[j], SPSIM_ENOMEM, "cannot start the thread of GPU %d", j);
        if (t->first < 0)
            t->first = j;
        t->bad = true;
        t->alive--;
        pthread_cond_broadcast(&t->cond);
        pthread_mutex_unlock(&t->lock);
    }
}

int
spsim_gpu_run_threads(int n, spsim_gpu_thread_fn fn, void (*stall)(void *ctx), void *ctx,
                      double grace_s, struct spsim_error *err)
{
    struct spsim_gpu_threads t = {.alive = n, .first = -1, .fn = fn, .ctx = ctx};
    struct worker *w = spsim_calloc((size_t)n, sizeof(*w));
    pthread_t *tid = spsim_calloc((size_t)n, sizeof(*tid));
    bool *started = spsim_calloc((size_t)n, sizeof(*started));
    t.rcs = spsim_calloc((size_t)n, sizeof(*t.rcs));
    t.errs = spsim_calloc((size_t)n, sizeof(*t.errs));
    int rc = SPSIM_OK;
    if (n < 1 || !w || !tid || !started || !t.rcs || !t.errs)
        rc = n < 1 ? spsim_fail(err, SPSIM_EINVAL, "spsim_gpu_run_threads: no threads")
                   : spsim_fail(err, SPSIM_ENOMEM, "GPU threads: out of memory");
    if (rc == SPSIM_OK) {
        pthread_mutex_init(&t.lock, NULL);
        pthread_cond_init(&t.cond, NULL);
        start_all(&t, w, tid, started, n);
        wait_all(&t, stall, grace_s);
        for (int j = 0; j < n; j++)
            if (started[j])
                pthread_join(tid[j], NULL);
        pthread_cond_destroy(&t.cond);
        pthread_mutex_destroy(&t.lock);
        if (t.first >= 0) {
            rc = t.rcs[t.first];
            if (err)
                *err = t.errs[t.first];
        }
    }
    free(w);
    free(tid);
    free(started);
    free(t.rcs);
    free(t.errs);
    return rc;
}
