/*
 * Data-parallel buckets as Megatron-Core launches them: the overlapped gradient reduction
 * (--overlap-grad-reduce) and the parameter AllGather deferred to the next forward
 * (--overlap-param-gather), one pipeline rank at a time. Pure arithmetic on collective times
 * the caller computed; see buckets.c for the sources.
 */
#ifndef SPSIM_BUCKETS_H
#define SPSIM_BUCKETS_H

#include <stdint.h>

/* One pipeline rank's model chunks and their buckets, for one direction (the gradients'
 * reduction after the last micro-batch's backward, or the parameters' gather before the first
 * micro-batch's forward). Times in seconds. */
struct spsim_dp_rank {
    uint32_t v;      /* model chunks on the rank */
    double head;     /* gradients: how long before rank 0's last backward this rank's ends;
                        parameters: how long this rank's first forward waits for its input anyway */
    double slot;     /* one chunk's backward (gradients) or forward (parameters), one micro-batch */
    double group;    /* micro-batches per chunk group in the interleaved schedule (p) */
    double chunk_s;  /* the collective of one chunk after the first, as one bucket */
    double chunk0_s; /* chunk 0's as one bucket (nbuckets == 0) */
    /* Chunk 0 in buckets (pipeline rank 0 only): nbuckets buckets in reverse parameter order,
     * all of bucket_s but the last (the remainder, with the embedding) of last_s; lin_buckets
     * bucket sizes of layer parameters come before the embedding's. */
    uint64_t nbuckets;
    double bucket_s, last_s, lin_buckets;
};

/** When the rank's last gradient bucket is reduced, relative to the end of pipeline rank 0's
 * last backward (negative: before it). */
double spsim_grad_reduce_finish(const struct spsim_dp_rank *r);

/** How long the rank's first forward waits for its parameters beyond `head`. */
double spsim_param_gather_wait(const struct spsim_dp_rank *r);

#endif
