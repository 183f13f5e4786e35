/*
 * spsim_format_double (src/sweep/dtoa.c) against the C library: for millions of doubles, strtod()
 * must read the output back to the same bits, the output must be no longer than printf's
 * "%.17g", no fewer significant digits may do (printf's correctly rounded "%.{n-1}g" must
 * not read back, n being the output's digit count; integers of 17 digits are written exactly
 * instead), and an output without '.' or 'e' must be the double's exact integer value (JSON
 * readers take it for an integer). glibc's printf and strtod are exact, so they are an
 * independent reference.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Random doubles per loop iteration of the two random tests: 500,000 (4 × 500,000 bit patterns
 * and 4 × 250,000 short decimals, 3 million in all) unless argv[1] gives fewer, as the
 * valgrind run of the unit suite does (tests/meson.build). */
static int samples = 500000;

/* xorshift64* (Vigna 2016), fixed seed: the same doubles on every run. */
static uint64_t
next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static double
from_bits(uint64_t bits)
{
    double d;
    memcpy(&d, &bits, sizeof(d));
    return d;
}

static uint64_t
to_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof(b));
    return b;
}

/* Significant digits of a decimal text (leading zeros not counted). */
static int
significant_digits(const char *s)
{
    int n = 0;
    bool started = false;
    for (const char *p = s; *p && *p != 'e'; p++) {
        if (*p < '0' || *p > '9')
            continue;
        if (*p != '0')
            started = true;
        if (started)
            n++;
    }
    /* Trailing zeros of an integer in fixed layout are placeholders, not digits. */
    if (!strchr(s, '.') && !strchr(s, 'e'))
        for (size_t i = strlen(s); i > 0 && s[i - 1] == '0' && n > 1; i--)
            n--;
    return n;
}

/* Plain comparisons, and Check only on failure: Check reports every passing assertion to its
 * parent process through a pipe, which would dominate millions of checks. */
static void
check_one(double v)
{
    char out[32], ref[512], fewer[512];
    size_t len = spsim_format_double(v, out);
    if (len != strlen(out))
        ck_abort_msg("%a: length %zu for '%s'", v, len, out);
    if (isnan(v)) {
        if (strcmp(out, "nan") != 0)
            ck_abort_msg("NaN printed as '%s'", out);
        return;
    }
    char *end = NULL;
    double back = strtod(out, &end);
    if (*end != '\0' || to_bits(back) != to_bits(v))
        ck_abort_msg("%a printed as '%s' reads back as %a", v, out, back);
    /* Text without '.' or 'e' reads as an integer in JSON: it must be the double exactly. */
    bool integer = isfinite(v) && !strpbrk(out, ".e");
    if (integer && (fabs(v) >= 18446744073709551616.0 ||
                    strtoull(out + (out[0] == '-'), NULL, 10) != (uint64_t)fabs(v)))
        ck_abort_msg("%a printed as the integer '%s', which is not its exact value", v, out);
    int reflen = snprintf(ref, sizeof(ref), "%.17g", v);
    if (len > (size_t)reflen)
        ck_abort_msg("%a: '%s' is longer than %%.17g '%s'", v, out, ref);
    /* Shortest, except integers of 17 digits, written exactly rather than padded. */
    int n = significant_digits(out);
    if (n > 1 && isfinite(v) && v != 0 && !(integer && n == 17)) {
        snprintf(fewer, sizeof(fewer), "%.*g", n - 1, v);
        if (to_bits(strtod(fewer, NULL)) == to_bits(v))
            ck_abort_msg("%a: '%s' has %d digits but '%s' reads back too", v, out, n, fewer);
    }
}

START_TEST(edge_cases)
{
    const double fixed[] = {0.0,
                            -0.0,
                            1.0,
                            -1.0,
                            0.1,
                            0.2,
                            0.3,
                            1.0 / 3,
                            2.0 / 3,
                            1e21,
                            1e22,
                            1e23,
                            123456.0,
                            1e-7,
                            5e-324,
                            -5e-324,
                            DBL_MIN,
                            DBL_MAX,
                            -DBL_MAX,
                            DBL_EPSILON,
                            9007199254740992.0,
                            9007199254740993.0,
                            4.35e-6,
                            1.5e300,
                            HUGE_VAL,
                            -HUGE_VAL,
                            (double)NAN,
                            0.000123,
                            100.0,
                            1e100};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        check_one(fixed[i]);
    char buf[32];
    ck_assert_str_eq((spsim_format_double(-0.0, buf), buf), "-0");
    ck_assert_str_eq((spsim_format_double(0.1, buf), buf), "0.1");
    ck_assert_str_eq((spsim_format_double(1e23, buf), buf), "1e+23");
    ck_assert_str_eq((spsim_format_double(123456.0, buf), buf), "123456");
    ck_assert_str_eq((spsim_format_double(5e-324, buf), buf), "5e-324");
    ck_assert_str_eq((spsim_format_double(-HUGE_VAL, buf), buf), "-inf");
    ck_assert_str_eq((spsim_format_double(DBL_MAX, buf), buf), "1.7976931348623157e+308");
}
END_TEST

START_TEST(powers_of_two_and_ten_and_neighbours)
{
    /* Every power of two, subnormals included, and the doubles beside it. */
    for (int e = -1074; e <= 1023; e++) {
        double p = ldexp(1.0, e);
        check_one(p);
        check_one(nextafter(p, 0));
        check_one(nextafter(p, HUGE_VAL));
        check_one(-p);
    }
    /* The doubles nearest every power of ten in range, and their neighbours. */
    for (int e = -323; e <= 308; e++) {
        char text[16];
        snprintf(text, sizeof(text), "1e%d", e);
        double p = strtod(text, NULL);
        check_one(p);
        check_one(nextafter(p, 0));
        check_one(nextafter(p, HUGE_VAL));
    }
}
END_TEST

START_TEST(random_bit_patterns)
{
    /* Uniform over bit patterns: every exponent equally, subnormals and NaNs included. */
    uint64_t state = 0x9E3779B97F4A7C15ull + (uint64_t)_i;
    for (int i = 0; i < samples; i++)
        check_one(from_bits(next_random(&state)));
}
END_TEST

START_TEST(random_short_decimals)
{
    /* Doubles nearest short decimals (1 to 17 digits): the trailing-zero paths of the digit
     * search, and the values a simulator prints most. */
    uint64_t state = 0xD1B54A32D192ED03ull + (uint64_t)_i;
    for (int i = 0; i < samples / 2; i++) {
        uint64_t limit = 10;
        for (uint64_t d = next_random(&state) % 17; d > 0; d--)
            limit *= 10;
        uint64_t mantissa = next_random(&state) % limit;
        int exponent = (int)(next_random(&state) % 620) - 330;
        char text[64];
        snprintf(text, sizeof(text), "%llue%d", (unsigned long long)mantissa, exponent);
        check_one(strtod(text, NULL));
    }
}
END_TEST

START_TEST(integers)
{
    for (uint64_t v = 0; v < 100000; v++)
        check_one((double)v);
    uint64_t state = 42;
    for (int i = 0; i < 100000; i++)
        check_one((double)(next_random(&state) >> (next_random(&state) % 64)));
}
END_TEST

START_TEST(u64_matches_printf)
{
    uint64_t state = 7;
    char out[32], ref[32];
    const uint64_t edges[] = {0,   9,    10,         99,         100,
                              999, 1000, UINT32_MAX, UINT64_MAX, 10000000000000000000ull};
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        spsim_format_u64(edges[i], out);
        snprintf(ref, sizeof(ref), "%llu", (unsigned long long)edges[i]);
        ck_assert_str_eq(out, ref);
    }
    for (int i = 0; i < 200000; i++) {
        uint64_t v = next_random(&state) >> (next_random(&state) % 64);
        size_t n = spsim_format_u64(v, out);
        snprintf(ref, sizeof(ref), "%llu", (unsigned long long)v);
        ck_assert_str_eq(out, ref);
        ck_assert_uint_eq(n, strlen(ref));
    }
}
END_TEST

static Suite *
dtoa_suite(void)
{
    Suite *s = suite_create("dtoa");
    TCase *tc = tcase_create("format");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, edge_cases);
    tcase_add_test(tc, powers_of_two_and_ten_and_neighbours);
    /* 4 × `samples` random bit patterns and 4 × samples/2 short decimals. */
    tcase_add_loop_test(tc, random_bit_patterns, 0, 4);
    tcase_add_loop_test(tc, random_short_decimals, 0, 4);
    tcase_add_test(tc, integers);
    tcase_add_test(tc, u64_matches_printf);
    suite_add_tcase(s, tc);
    return s;
}

int
main(int argc, char **argv)
{
    if (argc > 1)
        samples = atoi(argv[1]) > 0 ? atoi(argv[1]) : samples;
    return testutil_run(dtoa_suite());
}
