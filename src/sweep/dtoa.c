/*
 * Shortest round-trip formatting of doubles without printf.
 *
 * The digits come from Ryu (Ulf Adams, "Ryu: fast float-to-string conversion", PLDI 2018;
 * the algorithm of the reference implementation's d2s.c, rewritten here): the shortest
 * decimal d·10^e inside the interval of reals that round to the double, the closest one to
 * the exact value when several are shortest. strtod() therefore reads every output back to
 * the same bits. The layout is the shorter of the fixed and the exponent notation (ties:
 * fixed), so an output is never longer than printf's "%.17g" (tests/test_dtoa.c checks both
 * over millions of doubles). An output without '.' or 'e' is an integer equal to the double:
 * integers whose shortest digits would need padding zeros are written exactly (up to 17
 * digits, as %.17g does) or in exponent notation.
 */
#include "config.h"

#include <string.h>

#include "dtoa.h"

#include "dtoa_tables.h"

#define MANTISSA_BITS 52 /* IEEE 754 binary64 */
#define EXPONENT_BITS 11
#define EXPONENT_BIAS 1023

typedef unsigned __int128 u128;

/* ceil(log2(5^e)) for 0 < e <= 3528, and 1 for e = 0 (Ryu common.h pow5bits: 1217359/2^19
 * approximates log2(5) closely enough over that range). */
static inline int32_t
pow5bits(int32_t e)
{
    return (int32_t)((((uint32_t)e * 1217359u) >> 19) + 1);
}

/* floor(log10(2^e)) for 0 <= e <= 1650 (Ryu common.h log10Pow2: 78913/2^18 ≈ log10(2)). */
static inline uint32_t
log10_pow2(int32_t e)
{
    return ((uint32_t)e * 78913u) >> 18;
}

/* floor(log10(5^e)) for 0 <= e <= 2620 (Ryu common.h log10Pow5: 732923/2^20 ≈ log10(5)). */
static inline uint32_t
log10_pow5(int32_t e)
{
    return ((uint32_t)e * 732923u) >> 20;
}

static inline bool
multiple_of_pow5(uint64_t v, uint32_t p)
{
    uint32_t count = 0;
    while (v % 5 == 0 && count < p) {
        v /= 5;
        count++;
    }
    return count >= p;
}

static inline bool
multiple_of_pow2(uint64_t v, uint32_t p)
{
    return (v & ((1ull << p) - 1)) == 0;
}

/* (m · mul) >> j for the 125-bit multiplier {low, high}; 64 <= j < 128. */
static inline uint64_t
mul_shift(uint64_t m, const uint64_t *mul, int32_t j)
{
    u128 low = (u128)m * mul[0];
    u128 high = (u128)m * mul[1];
    return (uint64_t)(((low >> 64) + high) >> (j - 64));
}

struct decimal {
    uint64_t digits;
    int32_t exponent; /* value = digits · 10^exponent */
};

/* The interval bounds vr (the value), vp (upper), vm (lower), scaled by 10^-e10. */
struct bounds {
    uint64_t vr, vp, vm;
    int32_t e10;
    bool vm_trailing_zeros, vr_trailing_zeros;
};

static void
scale_positive(uint64_t m2, int32_t e2, uint32_t mm_shift, bool accept, struct bounds *b)
{
    uint64_t mv = 4 * m2;
    uint32_t q = log10_pow2(e2) - (e2 > 3);
    b->e10 = (int32_t)q;
    int32_t k = SPSIM_DTOA_POW5_INV_BITCOUNT + pow5bits((int32_t)q) - 1;
    int32_t i = -e2 + (int32_t)q + k;
    const uint64_t *mul = spsim_dtoa_pow5_inv_split[q];
    b->vr = mul_shift(mv, mul, i);
    b->vp = mul_shift(mv + 2, mul, i);
    b->vm = mul_shift(mv - 1 - mm_shift, mul, i);
    if (q <= 21) {
        /* Only one of mv, mp, mm can be a multiple of 5 (Ryu d2d). */
        if (mv % 5 == 0)
            b->vr_trailing_zeros = multiple_of_pow5(mv, q);
        else if (accept)
            b->vm_trailing_zeros = multiple_of_pow5(mv - 1 - mm_shift, q);
        else
            b->vp -= multiple_of_pow5(mv + 2, q);
    }
}

static void
scale_negative(uint64_t m2, int32_t e2, uint32_t mm_shift, bool accept, struct bounds *b)
{
    uint64_t mv = 4 * m2;
    uint32_t q = log10_pow5(-e2) - (-e2 > 1);
    b->e10 = (int32_t)q + e2;
    int32_t i = -e2 - (int32_t)q;
    int32_t k = pow5bits(i) - SPSIM_DTOA_POW5_BITCOUNT;
    int32_t j = (int32_t)q - k;
    const uint64_t *mul = spsim_dtoa_pow5_split[i];
    b->vr = mul_shift(mv, mul, j);
    b->vp = mul_shift(mv + 2, mul, j);
    b->vm = mul_shift(mv - 1 - mm_shift, mul, j);
    if (q <= 1) {
        /* mv = 4·m2 has two trailing zero bits; mm has one iff mm_shift; mp has one. */
        b->vr_trailing_zeros = true;
        if (accept)
            b->vm_trailing_zeros = mm_shift == 1;
        else
            b->vp--;
    } else if (q < 63) {
        /* The product has q trailing zeros iff mv has q trailing zero bits (-e2 >= q). */
        b->vr_trailing_zeros = multiple_of_pow2(mv, q);
    }
}

/* Drop the last digit of the three bounds; `last` receives vr's dropped digit. */
static void
drop_digit(struct bounds *b, uint32_t *last, int32_t *removed)
{
    b->vr_trailing_zeros &= *last == 0;
    *last = (uint32_t)(b->vr % 10);
    b->vr /= 10;
    b->vp /= 10;
    b->vm /= 10;
    ++*removed;
}

/* Remove digits while the interval still holds a shorter number (the rare general case). */
static uint64_t
shorten_exact(struct bounds *b, bool accept, int32_t *removed)
{
    uint32_t last = 0;
    while (b->vp / 10 > b->vm / 10) {
        b->vm_trailing_zeros &= b->vm % 10 == 0;
        drop_digit(b, &last, removed);
    }
    if (b->vm_trailing_zeros)
        while (b->vm % 10 == 0)
            drop_digit(b, &last, removed);
    /* Round half to even when the exact value ends in 5 followed by zeros. */
    if (b->vr_trailing_zeros && last == 5 && b->vr % 2 == 0)
        last = 4;
    bool outside = b->vr == b->vm && (!accept || !b->vm_trailing_zeros);
    return b->vr + (outside || last >= 5);
}

/* The common case (no trailing zeros to track): round half up on the last removed digit. */
static uint64_t
shorten_common(struct bounds *b, int32_t *removed)
{
    bool round_up = false;
    if (b->vp / 100 > b->vm / 100) {
        round_up = b->vr % 100 >= 50;
        b->vr /= 100;
        b->vp /= 100;
        b->vm /= 100;
        *removed += 2;
    }
    while (b->vp / 10 > b->vm / 10) {
        round_up = b->vr % 10 >= 5;
        b->vr /= 10;
        b->vp /= 10;
        b->vm /= 10;
        ++*removed;
    }
    return b->vr + (b->vr == b->vm || round_up);
}

static struct decimal
shortest(uint64_t mantissa, uint32_t exponent)
{
    int32_t e2;
    uint64_t m2;
    if (exponent == 0) {
        e2 = 1 - EXPONENT_BIAS - MANTISSA_BITS - 2;
        m2 = mantissa;
    } else {
        e2 = (int32_t)exponent - EXPONENT_BIAS - MANTISSA_BITS - 2;
        m2 = (1ull << MANTISSA_BITS) | mantissa;
    }
    /* Round-to-even reading: the interval's ends belong to it when m2 is even. */
    bool accept = (m2 & 1) == 0;
    /* The lower neighbour is half as far at the bottom of a binade. */
    uint32_t mm_shift = mantissa != 0 || exponent <= 1;
    struct bounds b;
    b.vm_trailing_zeros = b.vr_trailing_zeros = false;
    if (e2 >= 0)
        scale_positive(m2, e2, mm_shift, accept, &b);
    else
        scale_negative(m2, e2, mm_shift, accept, &b);
    int32_t removed = 0;
    uint64_t digits = b.vm_trailing_zeros || b.vr_trailing_zeros
                          ? shorten_exact(&b, accept, &removed)
                          : shorten_common(&b, &removed);
    return (struct decimal){digits, b.e10 + removed};
}

/* The two-digit numbers "00" to "99" in order: two digits per lookup. */
static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
                                  "31323334353637383940414243444546474849505152535455565758596061"
                                  "62636465666768697071727374757677787980818283848586878889909192"
                                  "93949596979899";

/* Digits of v (1 for 0): floor(log10(v)) from the bit length, 1233/4096 ≈ log10(2) (Sean
 * Anderson, "Bit Twiddling Hacks", IntegerLog10), corrected by one comparison. */
static uint32_t
decimal_length(uint64_t v)
{
    static const uint64_t pow10[20] = {1ull,
                                       10ull,
                                       100ull,
                                       1000ull,
                                       10000ull,
                                       100000ull,
                                       1000000ull,
                                       10000000ull,
                                       100000000ull,
                                       1000000000ull,
                                       10000000000ull,
                                       100000000000ull,
                                       1000000000000ull,
                                       10000000000000ull,
                                       100000000000000ull,
                                       1000000000000000ull,
                                       10000000000000000ull,
                                       100000000000000000ull,
                                       1000000000000000000ull,
                                       10000000000000000000ull}; /* 10^i */
    uint32_t bits = 64 - (uint32_t)__builtin_clzll(v | 1);
    uint32_t t = (bits * 1233) >> 12;
    return v ? t + (v >= pow10[t]) : 1;
}

/* Write v's n = decimal_length(v) digits to out[0..n): eight at a time in 32-bit
 * arithmetic. */
/* Exactly 8 digits of v < 10^8: two halves of 4, whose pairs do not wait on each other. */
static inline void
write_8(char *p, uint32_t v)
{
    uint32_t hi = v / 10000, lo = v % 10000;
    memcpy(p, digit_pairs + 2 * (hi / 100), 2);
    memcpy(p + 2, digit_pairs + 2 * (hi % 100), 2);
    memcpy(p + 4, digit_pairs + 2 * (lo / 100), 2);
    memcpy(p + 6, digit_pairs + 2 * (lo % 100), 2);
}

static void
write_digits(char *out, uint64_t v, uint32_t n)
{
    char *p = out + n;
    while (v >= 100000000) {
        write_8(p -= 8, (uint32_t)(v % 100000000));
        v /= 100000000;
    }
    uint32_t w = (uint32_t)v;
    for (; w >= 100; w /= 100)
        memcpy(p -= 2, digit_pairs + 2 * (w % 100), 2);
    if (w >= 10)
        memcpy(p - 2, digit_pairs + 2 * w, 2);
    else
        p[-1] = (char)('0' + w);
}

size_t
spsim_u64_text(uint64_t v, char *buf)
{
    uint32_t n = decimal_length(v);
    write_digits(buf, v, n);
    buf[n] = '\0';
    return n;
}

static size_t
layout_fixed(const char *d, uint32_t n, int32_t pt, char *out)
{
    size_t len = 0;
    if (pt <= 0) {
        out[len++] = '0';
        out[len++] = '.';
        for (int32_t i = 0; i < -pt; i++)
            out[len++] = '0';
        memcpy(out + len, d, n);
        return len + n;
    }
    if ((uint32_t)pt < n) {
        memcpy(out, d, (size_t)pt);
        out[pt] = '.';
        memcpy(out + pt + 1, d + pt, n - (uint32_t)pt);
        return n + 1;
    }
    memcpy(out, d, n);
    for (uint32_t i = n; i < (uint32_t)pt; i++)
        out[i] = '0';
    return (size_t)pt;
}

/* d.ddde±XX with at least two exponent digits, as printf writes it. */
static size_t
layout_exponent(const char *d, uint32_t n, int32_t x, char *out)
{
    size_t len = 0;
    out[len++] = d[0];
    if (n > 1) {
        out[len++] = '.';
        memcpy(out + len, d + 1, n - 1);
        len += n - 1;
    }
    out[len++] = 'e';
    out[len++] = x < 0 ? '-' : '+';
    uint32_t ax = (uint32_t)(x < 0 ? -x : x);
    if (ax >= 100)
        out[len++] = (char)('0' + ax / 100);
    memcpy(out + len, digit_pairs + 2 * (ax % 100), 2);
    return len + 2;
}

size_t
spsim_dtoa_shortest(double value, char *buf)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof(bits));
    bool negative = bits >> 63;
    uint64_t mantissa = bits & ((1ull << MANTISSA_BITS) - 1);
    uint32_t exponent = (uint32_t)(bits >> MANTISSA_BITS) & ((1u << EXPONENT_BITS) - 1);
    char *out = buf;
    if (exponent == (1u << EXPONENT_BITS) - 1) {
        const char *text = mantissa ? "nan" : negative ? "-inf" : "inf";
        size_t len = strlen(text);
        memcpy(buf, text, len + 1);
        return len;
    }
    if (negative)
        *out++ = '-';
    if (exponent == 0 && mantissa == 0) {
        *out++ = '0';
        *out = '\0';
        return (size_t)(out - buf);
    }
    struct decimal dec = shortest(mantissa, exponent);
    char d[20];
    uint32_t n = decimal_length(dec.digits);
    write_digits(d, dec.digits, n);
    int32_t pt = (int32_t)n + dec.exponent; /* digits before the decimal point */
    int32_t x = pt - 1;                     /* the exponent of d.ddd */
    if (pt > (int32_t)n && pt <= 17) {
        /* An integer the shortest digits would pad with zeros: write its exact value, so a
         * number without '.' or 'e' is always exactly the double (JSON readers take it for an
         * integer); 17 digits at most, as %.17g writes it. */
        uint64_t whole = (uint64_t)(negative ? -value : value);
        n = decimal_length(whole);
        write_digits(out, whole, n);
        out[n] = '\0';
        return (size_t)(out + n - buf);
    }
    size_t fixed = pt <= 0 ? 2 + (size_t)-pt + n : (uint32_t)pt < n ? n + 1 : (size_t)pt;
    size_t sci = n + (n > 1) + 2 + (x <= -100 || x >= 100 ? 3 : 2);
    /* Past 17 digits, padding zeros would stand for digits the double does not have. */
    bool use_fixed = fixed <= sci && pt <= 17;
    out += use_fixed ? layout_fixed(d, n, pt, out) : layout_exponent(d, n, x, out);
    *out = '\0';
    return (size_t)(out - buf);
}
