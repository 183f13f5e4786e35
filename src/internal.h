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

/** Fill err (if not NULL) and return code. The message is formatted like printf. */
int spsim_fail(struct spsim_error *err, int code, const char *fmt, ...) SPSIM_PRINTF(3, 4);

/** Allocation wrappers: zeroed, overflow-checked, NULL on failure. */
void *spsim_calloc(size_t n, size_t size);
char *spsim_strdup(const char *s);

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
