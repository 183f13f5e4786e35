/* Remembered collective predictions: spsim_collective_time() and the max-min link sharing of
 * the data-parallel reduction, keyed by every input, so that a hit is what a call would give. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "compose.h"

/* spsim_collective_time(), through the memo when there is one. */
int
spsim_memo_time(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                enum spsim_coll_op op, struct spsim_group g, double bytes,
                struct spsim_coll_time *out)
{
    if (!memo)
        return spsim_collective_time(hw, op, g, bytes, 1.0, out);
    uint64_t bits;
    memcpy(&bits, &bytes, sizeof(bits));
    /* Fibonacci hashing of the inputs. */
    uint64_t h = (bits ^ ((uint64_t)op << 56) ^ ((uint64_t)g.size << 24) ^ g.per_domain) *
                 0x9E3779B97F4A7C15ull;
    struct spsim_coll_memo_slot *s = &memo->slot[h >> 52 & (SPSIM_COLL_MEMO_SLOTS - 1)];
    uint64_t slot_bits; /* the same bits (not ==: a hit must be what a run gives, -0 and NaN) */
    memcpy(&slot_bits, &s->bytes, sizeof(slot_bits));
    if (s->hw == hw && s->op == (uint32_t)op && s->size == g.size &&
        s->per_domain == g.per_domain && slot_bits == bits) {
        *out = s->out;
        return SPSIM_OK;
    }
    int rc = spsim_collective_time(hw, op, g, bytes, 1.0, out);
    if (rc == SPSIM_OK)
        *s = (struct spsim_coll_memo_slot){hw, (uint32_t)op, g.size, g.per_domain, bytes, *out};
    return rc;
}

/* The finish time of flows[0] under max-min sharing (spsim_maxmin_run), through the memo when
 * there is one: keyed by every input, so a hit is what a run would give. */
int
spsim_memo_maxmin(struct spsim_coll_memo *memo, const double cap[2], struct spsim_flow *flows,
                  uint32_t n, double *finish)
{
    double key[SPSIM_MAXMIN_MEMO_KEY] = {(double)n, cap[0], cap[1]};
    for (uint32_t i = 0; i < n; i++) {
        key[3 + 3 * i] = flows[i].bytes;
        key[4 + 3 * i] = flows[i].max_rate;
        key[5 + 3 * i] = flows[i].res[0];
    }
    struct spsim_maxmin_memo_slot *s = NULL;
    /* key[0] = n: the first 3 + 3n entries are the whole key. */
    size_t len = 3 + 3 * (size_t)n;
    if (memo) {
        uint64_t h = 0;
        for (size_t i = 0; i < len; i++) {
            uint64_t bits;
            memcpy(&bits, &key[i], sizeof(bits));
            h = (h ^ bits) * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
        }
        s = &memo->maxmin[h >> 58];
        if (s->used && memcmp(s->key, key, len * sizeof(key[0])) == 0) {
            *finish = s->finish;
            return SPSIM_OK;
        }
    }
    double makespan = 0;
    int rc = spsim_maxmin_run(cap, 2, flows, n, &makespan, NULL);
    *finish = flows[0].finish_s;
    if (rc == SPSIM_OK && s) {
        memcpy(s->key, key, len * sizeof(key[0]));
        s->finish = *finish;
        s->used = true;
    }
    return rc;
}

int
spsim_memo_collective(struct spsim_coll_memo *memo, const struct spsim_hardware *hw,
                      enum spsim_coll_op op, uint32_t size, uint64_t stride, double bytes,
                      struct spsim_coll_time *out)
{
    return spsim_memo_time(memo, hw, op, spsim_group_place(hw, size, stride), bytes, out);
}

struct spsim_coll_memo *
spsim_coll_memo_create(void)
{
    return spsim_calloc(1, sizeof(struct spsim_coll_memo));
}

void
spsim_coll_memo_destroy(struct spsim_coll_memo *memo)
{
    free(memo);
}
