/* Data-parallel buckets as Megatron-Core launches them: gradient reduction and parameter gather. */
#include "config.h"

#include <math.h>

#include "buckets.h"
#include "internal.h"

/*
 * Megatron-Core (megatron/core/distributed/distributed_data_parallel.py,
 * param_and_grad_buffer.py, pipeline_parallel/schedules.py):
 *   - buckets of bucket_size parameters (default max(40,000,000, 1,000,000·dp)) are filled in
 *     reverse parameter order, the order gradients become ready; only pipeline rank 0's first
 *     model chunk is bucketed, every other chunk and rank is one bucket;
 *   - gradients are counted ready only in the last micro-batch's backward (no_sync before), so a
 *     bucket is reduced when that backward has passed all its parameters; with interleaving each
 *     chunk's reduction is launched when its last micro-batch's backward ends (grad_sync_func,
 *     align_grad_reduce), chunk v − 1 first, chunk j − 1 one group of p chunk backwards later;
 *   - the collectives of one rank run one after another on the data-parallel communicator.
 * A FIFO of entries ready at r_k lasting c_k ends at max_k (r_k + Σ_{i ≥ k} c_i). The layers'
 * gradients are taken to become ready in proportion to their parameters over the chunk's
 * backward; the embedding's (rank 0, at the end of the parameter order) at its end.
 */
double
spsim_grad_reduce_finish(const struct spsim_dp_rank *r)
{
    double end = -r->head, finish, total;
    if (r->nbuckets == 0) {
        total = r->chunk0_s;
        finish = end + total;
    } else {
        double n = (double)r->nbuckets, lin = r->lin_buckets;
        double j = spsim_min_d(floor(lin), n); /* buckets wholly of layer parameters */
        total = (n - 1) * r->bucket_s + r->last_s;
        finish = -INFINITY;
        /* Ready times rise linearly over the first j buckets while the tails fall: the
         * maximum is at an end of that run, or at the first bucket ready at the end. */
        if (j >= 1) {
            finish = end - r->slot + r->slot / lin + total;
            finish = spsim_max_d(finish,
                                 end - r->slot + r->slot * j / lin + total - (j - 1) * r->bucket_s);
        }
        if (j <= n - 1)
            finish = spsim_max_d(finish, end + total - j * r->bucket_s);
    }
    /* Chunk k ≥ 1 is ready k groups of chunk backwards earlier and is followed by k chunks'
     * reductions: linear in k, so its ends (k = 1, v − 1) bound it. */
    for (uint32_t k = 1; k < r->v; k = k == 1 && r->v > 2 ? r->v - 1 : k + 1)
        finish = spsim_max_d(finish, end - k * r->group * r->slot + k * r->chunk_s + total);
    return finish;
}

/*
 * With --overlap-param-gather the AllGathers after the step move to the next forward
 * (distributed_data_parallel.py forward pre-hook): the first bucket's is launched at the start
 * of the iteration and waited for by the first module; finishing bucket i dispatches bucket
 * i + 1, in forward order (the reverse of the buckets', so the embedding's remainder bucket
 * comes first), which runs beside the forward of bucket i's layers. With interleaving the
 * schedule dispatches chunk k + 1's gather at chunk k's first micro-batch (param_sync_func,
 * align_param_gather), a group of p chunk forwards before chunk k + 1 needs it. A rank past
 * the first waits `head` for its first input anyway, which hides as much of its first gather.
 */
double
spsim_param_gather_wait(const struct spsim_dp_rank *r)
{
    double wait;
    if (r->nbuckets == 0) {
        wait = spsim_max_d(0.0, r->chunk0_s - r->head);
    } else {
        double n = (double)r->nbuckets, lin = r->lin_buckets;
        double j = spsim_min_d(floor(lin), n);
        double full = r->slot / lin; /* the forward of one bucket of layers */
        wait = spsim_max_d(0.0, r->last_s - r->head);
        /* Bucket b (b = n − 1 .. 1) computes while bucket b − 1 (a full one) gathers. */
        if (j >= 2)
            wait += (spsim_min_d(j, n) - 1) * spsim_max_d(0.0, r->bucket_s - full);
        if (j >= 1 && j <= n - 1)
            wait += spsim_max_d(0.0, r->bucket_s - full * (lin - j));
        if (j + 1 <= n - 1)
            wait += (n - 1 - j) * r->bucket_s;
    }
    if (r->v > 1)
        wait += (r->v - 1) * spsim_max_d(0.0, r->chunk_s - r->group * r->slot);
    return wait;
}
