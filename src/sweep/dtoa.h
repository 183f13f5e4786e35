/* Shortest round-trip decimal text of a double (src/sweep/dtoa.c). */
#ifndef SPSIM_DTOA_H
#define SPSIM_DTOA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Longest output, terminating NUL included: sign, 17 digits, point, "e-324". */
#define SPSIM_DTOA_MAX 26

/**
 * Write the shortest decimal that strtod() reads back as `value` (nearest such when several),
 * in the shorter of the fixed ("0.00123", "1234") and exponent ("1.5e+20") layouts; "nan",
 * "inf", "-inf" for the others. Text without '.' or 'e' is always the double's exact integer
 * value (integers of 17 digits are written in full rather than padded with zeros). Never
 * longer than printf's "%.17g". buf must hold SPSIM_DTOA_MAX bytes; it is NUL-terminated.
 * @return the length written
 */
size_t spsim_dtoa_shortest(double value, char *buf);

/** Write v in decimal, NUL-terminated; buf must hold 21 bytes. @return the length */
size_t spsim_u64_text(uint64_t v, char *buf);

#endif
