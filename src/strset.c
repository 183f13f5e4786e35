/*
 * A set of strings with a value each: open addressing, linear probing, load factor at most 1/2,
 * FNV-1a hash (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/). Lookups the
 * parsers make once per input line or key, so that a file of n lines costs O(n), not O(n^2).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint64_t
fnv1a(const char *s, size_t len)
{
    uint64_t h = SPSIM_FNV_BASIS;
    for (size_t i = 0; i < len; i++)
        h = spsim_fnv_step(h, s[i]);
    return h;
}

static struct spsim_strset_entry *
probe(const struct spsim_strset *s, const char *key, size_t len, uint64_t h)
{
    size_t mask = s->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct spsim_strset_entry *e = &s->slot[i];
        if (!e->key || (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0))
            return e;
    }
}

size_t
spsim_strset_find_hashed(const struct spsim_strset *s, const char *key, size_t len, uint64_t hash)
{
    if (s->n == 0)
        return SPSIM_STRSET_NONE;
    const struct spsim_strset_entry *e = probe(s, key, len, hash);
    return e->key ? e->value : SPSIM_STRSET_NONE;
}

size_t
spsim_strset_find(const struct spsim_strset *s, const char *key, size_t len)
{
    return spsim_strset_find_hashed(s, key, len, fnv1a(key, len));
}

static int
grow(struct spsim_strset *s)
{
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct spsim_strset_entry *slot = spsim_calloc(cap, sizeof(*slot));
    if (!slot || cap < s->cap) {
        free(slot);
        return SPSIM_ENOMEM;
    }
    struct spsim_strset old = *s;
    s->slot = slot;
    s->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
        if (old.slot[i].key)
            *probe(s, old.slot[i].key, old.slot[i].len, old.slot[i].hash) = old.slot[i];
    free(old.slot);
    return SPSIM_OK;
}

int
spsim_strset_put(struct spsim_strset *s, const char *key, size_t len, size_t value)
{
    return spsim_strset_put_hashed(s, key, len, fnv1a(key, len), value);
}

int
spsim_strset_put_hashed(struct spsim_strset *s, const char *key, size_t len, uint64_t h,
                        size_t value)
{
    if (2 * (s->n + 1) > s->cap && grow(s) != SPSIM_OK)
        return SPSIM_ENOMEM;
    struct spsim_strset_entry *e = probe(s, key, len, h);
    if (!e->key)
        s->n++;
    *e = (struct spsim_strset_entry){key, len, h, value};
    return SPSIM_OK;
}

void
spsim_strset_free(struct spsim_strset *s)
{
    free(s->slot);
    memset(s, 0, sizeof(*s));
}
