/* Private helpers shared by the library's translation units. */
#ifndef SPSIM_INTERNAL_H
#define SPSIM_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spsim/common.h"

#if defined(__GNUC__)
#define SPSIM_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define SPSIM_PRINTF(f, a)
#endif

#define SPSIM_ARRAY_LENGTH(a) (sizeof(a) / sizeof((a)[0]))

/** Fill err (if not NULL) and return code. The message is formatted like printf, then made one
 * line (spsim_escape: what a caller forgot to quote cannot split it or reach the terminal). */
int spsim_fail(struct spsim_error *err, int code, const char *fmt, ...) SPSIM_PRINTF(3, 4);

/* An input's text quoted for a message (spsim_quote into a buffer of the enclosing
 * expression's lifetime): spsim_fail(err, ..., "%s: key %s: ...", path, SPSIM_Q(key)). */
#define SPSIM_QUOTE_MAX 160
#define SPSIM_Q(s)      spsim_quote((s), SIZE_MAX, (char[SPSIM_QUOTE_MAX]){0}, SPSIM_QUOTE_MAX)
#define SPSIM_QN(s, n)  spsim_quote((s), (n), (char[SPSIM_QUOTE_MAX]){0}, SPSIM_QUOTE_MAX)

/** memset(p, 0, n) and memcpy(d, s, n) out of line, for the hot paths' structures of a
 * kilobyte or so: GCC expands a copy or clear of constant size inline as `rep stos`/`rep movs`,
 * whose start-up cost on the project machine's AMD EPYC cores made the result's clears half of
 * spsim_compose_into's samples (perf, dense space), where libc's vector stores take a fraction. */
void spsim_clear(void *p, size_t n);
void spsim_copy(void *restrict d, const void *restrict s, size_t n);

/** Allocation wrappers: zeroed, overflow-checked, NULL on failure. */
void *spsim_calloc(size_t n, size_t size);
char *spsim_strdup(const char *s);

/** Text grown by appending (s NULL until the first put or reserve; spsim_text_free frees it).
 * spsim_text_put keeps it NUL-terminated and sets `failed` once a put would take it past `max`
 * bytes with its NUL (0: no limit) or an allocation failed; later puts do nothing.
 * spsim_text_reserve makes room for `more` bytes and a NUL for a caller that writes them
 * itself (the sweep's rows): SPSIM_OK or SPSIM_ENOMEM. */
struct spsim_text {
    char *s;
    size_t len, cap, max;
    bool failed;
};
void spsim_text_put(struct spsim_text *t, const char *s, size_t n);
int spsim_text_reserve(struct spsim_text *t, size_t more);
void spsim_text_free(struct spsim_text *t);

/** Read a whole regular file (spsim_file_open_input: no FIFO, device or directory) to its end,
 * at most 64 MiB. *buf is NUL-terminated; the caller frees it. */
int spsim_read_file(const char *path, char **buf, size_t *len, struct spsim_error *err);

/**
 * Write `len` bytes to `path` atomically (spsim_output_file_open): a temporary file beside the
 * target, fsync, then rename(2). Either the old file or the complete new one exists at every
 * moment.
 */
int spsim_write_file_atomic(const char *path, const void *data, size_t len,
                            struct spsim_error *err);

/**
 * A set of strings (not owned: each key must outlive the set) with a value each, for the
 * parsers' "seen before?" checks in O(1). Zero-initialised = empty.
 */
struct spsim_strset_entry {
    const char *key;
    size_t len;
    uint64_t hash;
    size_t value;
};
struct spsim_strset {
    struct spsim_strset_entry *slot;
    size_t cap, n;
};
#define SPSIM_STRSET_NONE ((size_t)-1)
/** The value of key[0..len), or SPSIM_STRSET_NONE. */
size_t spsim_strset_find(const struct spsim_strset *s, const char *key, size_t len);
/** Add key[0..len) (or replace its value). @return SPSIM_OK or SPSIM_ENOMEM */
int spsim_strset_put(struct spsim_strset *s, const char *key, size_t len, size_t value);
void spsim_strset_free(struct spsim_strset *s);
/** The same with the caller's hash of the key (one set, one hash function), for keys hashed
 * incrementally, e.g. suffixes grown one byte at a time with spsim_fnv_step. */
size_t spsim_strset_find_hashed(const struct spsim_strset *s, const char *key, size_t len,
                                uint64_t hash);
int spsim_strset_put_hashed(struct spsim_strset *s, const char *key, size_t len, uint64_t hash,
                            size_t value);
/* FNV-1a, 64 bits (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/). */
#define SPSIM_FNV_BASIS 14695981039346656037ull
static inline uint64_t
spsim_fnv_step(uint64_t h, char c)
{
    return (h ^ (unsigned char)c) * 1099511628211ull;
}

/*
 * Checked 64-bit arithmetic. The memory engine counts bytes exactly; a product that does not
 * fit in 64 bits must be refused, never wrapped. The accumulator idiom: start with ok = true,
 * chain the operations, check ok once.
 */
static inline uint64_t
spsim_mul(uint64_t a, uint64_t b, bool *ok)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        *ok = false;
        return 0;
    }
    return r;
}

static inline uint64_t
spsim_add(uint64_t a, uint64_t b, bool *ok)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        *ok = false;
        return 0;
    }
    return r;
}

static inline uint64_t
spsim_mul3(uint64_t a, uint64_t b, uint64_t c, bool *ok)
{
    return spsim_mul(spsim_mul(a, b, ok), c, ok);
}

static inline uint64_t
spsim_mul4(uint64_t a, uint64_t b, uint64_t c, uint64_t d, bool *ok)
{
    return spsim_mul(spsim_mul3(a, b, c, ok), d, ok);
}

static inline uint64_t
spsim_min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static inline uint64_t
spsim_max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static inline double
spsim_max_d(double a, double b)
{
    return a > b ? a : b;
}

static inline double
spsim_min_d(double a, double b)
{
    return a < b ? a : b;
}

#endif
