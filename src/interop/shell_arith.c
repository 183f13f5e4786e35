/*
 * Bash's integer arithmetic as launch scripts use it ($(($GPUS_PER_NODE*$NUM_NODES))): decimal
 * integers, + - * / %, unary + and -, parentheses, evaluated in 64 bits with bash's precedence
 * (bash(1), ARITHMETIC EVALUATION). Anything else (comparisons, assignments, hexadecimal) is not
 * such an expression: the caller leaves the expansion unresolved.
 */
#include "config.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>

#include "shell_lex.h"

#define ARITH_DEPTH_MAX 64

struct ax {
    const char *p;
    int depth;
    bool ok;
};

static void
blanks(struct ax *a)
{
    while (*a->p == ' ' || *a->p == '\t' || *a->p == '\n')
        a->p++;
}

static long long sum(struct ax *a);

static long long
factor(struct ax *a)
{
    blanks(a);
    if ((*a->p == '-' || *a->p == '+') && a->depth < ARITH_DEPTH_MAX) {
        bool minus = *a->p++ == '-';
        a->depth++;
        long long v = factor(a);
        a->depth--;
        if (minus && v == LLONG_MIN)
            a->ok = false;
        return minus ? -v : v;
    }
    if (*a->p == '(' && a->depth < ARITH_DEPTH_MAX) {
        a->p++;
        a->depth++;
        long long v = sum(a);
        a->depth--;
        blanks(a);
        a->ok = a->ok && *a->p == ')';
        a->p += *a->p == ')';
        return v;
    }
    if (!isdigit((unsigned char)*a->p)) {
        a->ok = false;
        return 0;
    }
    long long v = 0;
    for (; isdigit((unsigned char)*a->p); a->p++) {
        int d = *a->p - '0';
        if (v > (LLONG_MAX - d) / 10)
            a->ok = false;
        else
            v = 10 * v + d;
    }
    return v;
}

static long long
product(struct ax *a)
{
    long long v = factor(a);
    for (blanks(a); a->ok && (*a->p == '*' || *a->p == '/' || *a->p == '%'); blanks(a)) {
        char op = *a->p++;
        long long w = factor(a);
        if (op == '*') {
            if (__builtin_mul_overflow(v, w, &v))
                a->ok = false;
        } else if (w == 0 || (v == LLONG_MIN && w == -1)) { /* bash: "division by 0" */
            a->ok = false;
        } else {
            v = op == '/' ? v / w : v % w;
        }
    }
    return v;
}

static long long
sum(struct ax *a)
{
    long long v = product(a);
    for (blanks(a); a->ok && (*a->p == '+' || *a->p == '-'); blanks(a)) {
        char op = *a->p++;
        long long w = product(a);
        if (op == '+' ? __builtin_add_overflow(v, w, &v) : __builtin_sub_overflow(v, w, &v))
            a->ok = false;
    }
    return v;
}

bool
spsim_sh_arith(const char *expr, long long *out)
{
    struct ax a = {expr, 0, true};
    long long v = sum(&a);
    blanks(&a);
    if (!a.ok || *a.p)
        return false;
    *out = v;
    return true;
}
