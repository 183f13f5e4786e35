/*
 * A table of measured collective sizes with its provenance (the importer fills it; calibration
 * reads it).
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "spsim/calibrate.h"

struct spsim_bw_table {
    struct spsim_bw_sample *samples;
    size_t n, cap;
    char **keys, **values;
    size_t ninfo, info_cap;
    struct spsim_strset info_index; /* key -> position in keys: a log may carry 10^5 of them */
};

int
spsim_bw_table_create(struct spsim_bw_table **out)
{
    if (!out)
        return SPSIM_EINVAL;
    *out = spsim_calloc(1, sizeof(**out));
    return *out ? SPSIM_OK : SPSIM_ENOMEM;
}

void
spsim_bw_table_destroy(struct spsim_bw_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->ninfo; i++) {
        free(t->keys[i]);
        free(t->values[i]);
    }
    free(t->keys);
    free(t->values);
    spsim_strset_free(&t->info_index);
    free(t->samples);
    free(t);
}

int
spsim_bw_table_add(struct spsim_bw_table *t, const struct spsim_bw_sample *s)
{
    if (!t || !s || (unsigned)s->op >= SPSIM_COLL_COUNT || s->ranks < 1 || s->size_bytes == 0 ||
        !(isfinite(s->time_s) && s->time_s > 0) || !isfinite(s->algbw_GBps) ||
        !isfinite(s->busbw_GBps) || s->algbw_GBps < 0 || s->busbw_GBps < 0)
        return SPSIM_EINVAL;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct spsim_bw_sample *p = realloc(t->samples, cap * sizeof(*p));
        if (!p)
            return SPSIM_ENOMEM;
        t->samples = p;
        t->cap = cap;
    }
    t->samples[t->n++] = *s;
    return SPSIM_OK;
}

size_t
spsim_bw_table_size(const struct spsim_bw_table *t)
{
    return t ? t->n : 0;
}

const struct spsim_bw_sample *
spsim_bw_table_get(const struct spsim_bw_table *t, size_t i)
{
    return t && i < t->n ? &t->samples[i] : NULL;
}

/* Room for one more key and value, doubling. */
static int
info_reserve(struct spsim_bw_table *t)
{
    if (t->ninfo < t->info_cap)
        return SPSIM_OK;
    size_t cap = t->info_cap ? 2 * t->info_cap : 16;
    char **keys = realloc(t->keys, cap * sizeof(*keys));
    if (keys)
        t->keys = keys;
    char **values = keys ? realloc(t->values, cap * sizeof(*values)) : NULL;
    if (values)
        t->values = values;
    if (!keys || !values)
        return SPSIM_ENOMEM;
    t->info_cap = cap;
    return SPSIM_OK;
}

int
spsim_bw_table_set_info(struct spsim_bw_table *t, const char *key, const char *value)
{
    if (!t || !key || !value)
        return SPSIM_EINVAL;
    char *v = spsim_strdup(value);
    if (!v)
        return SPSIM_ENOMEM;
    size_t i = spsim_strset_find(&t->info_index, key, strlen(key));
    if (i != SPSIM_STRSET_NONE) {
        free(t->values[i]);
        t->values[i] = v;
        return SPSIM_OK;
    }
    char *k = spsim_strdup(key);
    if (!k || info_reserve(t) != SPSIM_OK ||
        spsim_strset_put(&t->info_index, k, strlen(k), t->ninfo) != SPSIM_OK) {
        free(k);
        free(v);
        return SPSIM_ENOMEM;
    }
    t->keys[t->ninfo] = k;
    t->values[t->ninfo++] = v;
    return SPSIM_OK;
}

const char *
spsim_bw_table_info(const struct spsim_bw_table *t, const char *key)
{
    size_t i = t && key ? spsim_strset_find(&t->info_index, key, strlen(key)) : SPSIM_STRSET_NONE;
    return i != SPSIM_STRSET_NONE ? t->values[i] : NULL;
}

const char *
spsim_bw_table_info_key(const struct spsim_bw_table *t, size_t i)
{
    return t && i < t->ninfo ? t->keys[i] : NULL;
}
