/*
 * test, [ ... ] and [[ ... ]] over a condition's expanded words (bash(1), CONDITIONAL
 * EXPRESSIONS; test(1)): -z, -n, string = == != < >, integer -eq -ne -lt -le -gt -ge, !, ( ),
 * -a -o ([ ]) and && || ([[ ]]); in [[ ]] the right side of == and != is a glob pattern. A file
 * test, =~, a value spsim could not resolve or an operator it does not know cannot be decided
 * without running the script: UNKNOWN, with `why` naming it. The result of an operation on an
 * UNKNOWN side is decided when the other side decides it (false && x, true || x).
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell_lex.h"

#define TEST_DEPTH_MAX 64

struct tx {
    const struct spsim_sh_word *w;
    size_t i, n;
    bool dbl;
    int depth;
    char *why;
    size_t cap;
};

static enum spsim_sh_truth
unknown(struct tx *t, const char *fmt, const char *what)
{
    if (!t->why[0])
        snprintf(t->why, t->cap, fmt, what);
    return SPSIM_SH_UNKNOWN;
}

static const char *
at(const struct tx *t, size_t k)
{
    return t->i + k < t->n ? t->w[t->i + k].text : NULL;
}

static bool
is(const struct tx *t, size_t k, const char *op)
{
    const char *w = at(t, k);
    return w && strcmp(w, op) == 0;
}

static const char *
unresolved(const struct tx *t, size_t k)
{
    return t->i + k < t->n && t->w[t->i + k].unresolved[0] ? t->w[t->i + k].unresolved : NULL;
}

static enum spsim_sh_truth
truth(bool b)
{
    return b ? SPSIM_SH_TRUE : SPSIM_SH_FALSE;
}

static bool
integer(const char *s, long long *v)
{
    char *end = NULL;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return end != s && *end == '\0' && errno != ERANGE;
}

/* WORD OP WORD: strings, integers, patterns. */
static enum spsim_sh_truth
binary(struct tx *t, const char *op, const char *a, const char *b)
{
    static const char *const ints[] = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"};
    if (strcmp(op, "=") == 0 || strcmp(op, "==") == 0 || strcmp(op, "!=") == 0) {
        bool eq = t->dbl ? fnmatch(b, a, 0) == 0 : strcmp(a, b) == 0;
        return truth(eq == (op[0] != '!'));
    }
    if (strcmp(op, "<") == 0 || strcmp(op, ">") == 0)
        return truth(op[0] == '<' ? strcmp(a, b) < 0 : strcmp(a, b) > 0);
    for (size_t k = 0; k < SPSIM_ARRAY_LENGTH(ints); k++) {
        long long x, y;
        if (strcmp(op, ints[k]) != 0)
            continue;
        if (!integer(a, &x) || !integer(b, &y))
            return unknown(t, "%s compares values that are not integers", op);
        bool r[] = {x == y, x != y, x<y, x <= y, x> y, x >= y};
        return truth(r[k]);
    }
    return unknown(t, "the operator %s", op);
}

static bool
binary_op(const char *w)
{
    static const char *const ops[] = {"=",   "==",  "!=",  "<",  ">",   "-eq", "-ne", "-lt",
                                      "-le", "-gt", "-ge", "=~", "-nt", "-ot", "-ef", NULL};
    for (const char *const *o = ops; w && *o; o++)
        if (strcmp(*o, w) == 0)
            return true;
    return false;
}

static enum spsim_sh_truth expr(struct tx *t);

static enum spsim_sh_truth
primary(struct tx *t)
{
    const char *a = at(t, 0);
    if (!a)
        return unknown(t, "%s", "an empty test");
    if (is(t, 0, "(") && t->depth < TEST_DEPTH_MAX) {
        t->i++;
        t->depth++;
        enum spsim_sh_truth v = expr(t);
        t->depth--;
        if (!is(t, 0, ")"))
            return unknown(t, "%s", "a ( without its )");
        t->i++;
        return v;
    }
    if (binary_op(at(t, 1))) {
        const char *op = at(t, 1), *b = at(t, 2), *why = unresolved(t, 0);
        why = why ? why : unresolved(t, 2);
        t->i += 3;
        if (!b)
            return unknown(t, "%s without its right side", op);
        if (strcmp(op, "=~") == 0 || strcmp(op, "-nt") == 0 || strcmp(op, "-ot") == 0 ||
            strcmp(op, "-ef") == 0) /* a regular expression, files' times or identity */
            return unknown(t, "the operator %s", op);
        return why ? unknown(t, "%s, which the script does not set", why) : binary(t, op, a, b);
    }
    if (a[0] == '-' && a[1] && !a[2] && at(t, 1)) {
        const char *b = at(t, 1), *why = unresolved(t, 1);
        t->i += 2;
        if (a[1] == 'z' || a[1] == 'n')
            return why ? unknown(t, "%s, which the script does not set", why)
                       : truth((b[0] == '\0') == (a[1] == 'z'));
        return unknown(t, a[1] == 'v' ? "%s (whether a variable is set)" : "a file (%s)", a);
    }
    const char *why = unresolved(t, 0);
    t->i++;
    return why ? unknown(t, "%s, which the script does not set", why) : truth(a[0] != '\0');
}

static enum spsim_sh_truth
negation(struct tx *t)
{
    if (is(t, 0, "!") && t->depth < TEST_DEPTH_MAX) {
        t->i++;
        t->depth++;
        enum spsim_sh_truth v = negation(t);
        t->depth--;
        return v == SPSIM_SH_UNKNOWN ? v : truth(v == SPSIM_SH_FALSE);
    }
    return primary(t);
}

static enum spsim_sh_truth
conjunction(struct tx *t)
{
    enum spsim_sh_truth v = negation(t);
    while (is(t, 0, t->dbl ? "&&" : "-a")) {
        t->i++;
        enum spsim_sh_truth w = negation(t);
        v = v == SPSIM_SH_FALSE || w == SPSIM_SH_FALSE ? SPSIM_SH_FALSE
            : v == SPSIM_SH_TRUE && w == SPSIM_SH_TRUE ? SPSIM_SH_TRUE
                                                       : SPSIM_SH_UNKNOWN;
    }
    return v;
}

static enum spsim_sh_truth
expr(struct tx *t)
{
    enum spsim_sh_truth v = conjunction(t);
    while (is(t, 0, t->dbl ? "||" : "-o")) {
        t->i++;
        enum spsim_sh_truth w = conjunction(t);
        v = v == SPSIM_SH_TRUE || w == SPSIM_SH_TRUE     ? SPSIM_SH_TRUE
            : v == SPSIM_SH_FALSE && w == SPSIM_SH_FALSE ? SPSIM_SH_FALSE
                                                         : SPSIM_SH_UNKNOWN;
    }
    return v;
}

enum spsim_sh_truth
spsim_sh_test(const struct spsim_sh_word *w, size_t n, bool double_bracket, char *why, size_t cap)
{
    struct tx t = {w, 0, n, double_bracket, 0, why, cap};
    why[0] = '\0';
    if (n == 0)
        return SPSIM_SH_FALSE; /* test with no argument is false */
    enum spsim_sh_truth v = expr(&t);
    if (t.i != n)
        return unknown(&t, "%s", "a test spsim does not read");
    return v;
}
