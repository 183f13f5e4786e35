/*
 * A launch script's compound commands, followed as bash would run them where that can be
 * decided without running a program (bash(1), SHELL GRAMMAR): if/elif/else/fi, case/esac, for
 * over a list of words, while/until whose condition is false, { ... }, and-or lists (&& ||),
 * and the conditions test, [ ... ], [[ ... ]], true and false, on the variables the script
 * sets and the environment it is given (spsim --env NAME=VALUE; every other variable unset, and
 * no positional parameter: `env -i bash script.sh`).
 *
 * A condition that cannot be decided (a file test, a command's exit status, $(...)) leaves
 * several branches that could run. The one a launch takes is the only one, or the only one that
 * does not end in `exit` (a script checks its inputs and exits when they are wrong: the run
 * that launches passed the check); if none of them sets a variable or runs a launch command,
 * none matters. Anything else is refused, naming the line and what it tests.
 */
#include "config.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell_lex.h"

#define ARMS_MAX 64 /* elif branches, case items */

struct pos {
    const char *p;
    uint32_t line;
};

static struct pos
here(const struct spsim_sh *s)
{
    return (struct pos){s->p, s->line};
}

static void
seek(struct spsim_sh *s, struct pos at)
{
    s->p = at.p;
    s->line = at.line;
}

static int
fail_at(struct spsim_sh *s, uint32_t line, const char *fmt, const char *a, const char *b)
{
    char what[320];
    snprintf(what, sizeof(what), fmt, a, b);
    s->line = line;
    return spsim_sh_syntax(s, what);
}

static bool
word_in(const char *w, const char *list)
{
    size_t n = strlen(w);
    for (const char *p = list; n && (p = strstr(p, w)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

static void run_list(struct spsim_sh *s, const char *ends, char *found);
static enum spsim_sh_truth and_or(struct spsim_sh *s, char *why, size_t cap);

/* What a branch does when it runs: its assignments and launches, and whether it exits. */
struct probe {
    unsigned effects;
    bool exits;
};

/* Read a branch from `body` to one of `ends` without applying it. */
static struct probe
probe(struct spsim_sh *s, struct pos body, const char *ends)
{
    struct pos back = here(s);
    bool skip = s->skip, exit = s->probe_exit;
    unsigned effects = s->effects;
    int depth = s->probe_depth;
    char found[16];
    seek(s, body);
    s->skip = true;
    s->probe_depth = s->depth;
    s->probe_exit = false;
    run_list(s, ends, found);
    struct probe r = {s->effects - effects, s->probe_exit};
    s->skip = skip;
    s->probe_exit = exit;
    s->probe_depth = depth;
    seek(s, back);
    return r;
}

/*
 * Of the branches that may run (`may`: indexes into `bodies`, -1 for "none of them"), the one a
 * launch takes (see the top of this file); -1: none. On a refusal s->rc is set.
 */
static int
choose(struct spsim_sh *s, const struct pos *bodies, const int *may, size_t n, const char *ends,
       uint32_t line, const char *kw, const char *why)
{
    if (n == 1 || s->rc != SPSIM_OK)
        return n ? may[0] : -1;
    int keep = may[0];
    size_t alive = 0;
    bool effects = false;
    for (size_t i = 0; i < n; i++) {
        struct probe p = may[i] < 0 ? (struct probe){0} : probe(s, bodies[may[i]], ends);
        if (p.exits)
            continue;
        keep = alive++ ? keep : may[i];
        effects |= p.effects > 0;
    }
    if (alive <= 1)
        return keep;
    if (!effects)
        return -1;
    fail_at(s, line,
            "'%s': cannot be decided without running the script (it tests %s); give the "
            "variable with --env NAME=VALUE, or write the branch's commands without it",
            kw, why[0] ? why : "a command's exit status");
    return -1;
}

/* Run `body` for real up to one of `ends`, then continue at `end`. */
static void
run_body(struct spsim_sh *s, int chosen, const struct pos *bodies, const char *ends, struct pos end)
{
    if (chosen >= 0 && s->rc == SPSIM_OK) {
        char found[16];
        seek(s, bodies[chosen]);
        run_list(s, ends, found);
    }
    if (!s->exited)
        seek(s, end);
}

/* The commands of a condition, up to the reserved word `end`: the last one's status. */
static enum spsim_sh_truth
condition(struct spsim_sh *s, const char *end, uint32_t line, char *why, size_t cap)
{
    enum spsim_sh_truth t = SPSIM_SH_TRUE;
    bool was = s->in_condition;
    char kw[16];
    s->in_condition = true;
    for (why[0] = '\0'; s->rc == SPSIM_OK;) {
        spsim_sh_skip_blanks(s, true);
        spsim_sh_keyword(s, kw, sizeof(kw));
        if (strcmp(kw, end) == 0 || spsim_sh_peek(s) < 0)
            break;
        const char *p = s->p;
        t = and_or(s, why, cap);
        if (s->p == p && s->rc == SPSIM_OK)
            fail_at(s, s->line, "'%s' without its '%s'", end, end);
    }
    s->in_condition = was;
    if (strcmp(kw, end) != 0)
        return fail_at(s, line, "'%s' without its '%s'", end, end), SPSIM_SH_UNKNOWN;
    spsim_sh_skip_keyword(s, end);
    return s->skip ? SPSIM_SH_UNKNOWN : t;
}

/* Skip a branch's commands (reading them) up to one of `ends`: the one found. */
static void
skip_list(struct spsim_sh *s, const char *ends, char *found)
{
    bool skip = s->skip;
    s->skip = true;
    run_list(s, ends, found);
    s->skip = skip;
}

/* if LIST; then LIST [elif LIST; then LIST]... [else LIST] fi */
static void
if_clause(struct spsim_sh *s)
{
    uint32_t line = s->line;
    struct pos bodies[ARMS_MAX + 1];
    int may[ARMS_MAX + 1];
    size_t n = 0, arms = 0;
    bool decided = false;
    char found[16] = "elif", why[128] = "", w[128];
    spsim_sh_skip_keyword(s, "if");
    while (s->rc == SPSIM_OK && strcmp(found, "elif") == 0) {
        if (arms == ARMS_MAX)
            return (void)fail_at(s, line, "'%s' with more than 64 branches%s", "if", "");
        bool skip = s->skip;
        s->skip = skip || decided; /* after a true branch, bash tests no further */
        enum spsim_sh_truth t = condition(s, "then", line, w, sizeof(w));
        s->skip = skip;
        bodies[arms] = here(s);
        if (!decided && t != SPSIM_SH_FALSE)
            may[n++] = (int)arms;
        if (!why[0] && t == SPSIM_SH_UNKNOWN)
            snprintf(why, sizeof(why), "%s", w);
        decided |= t == SPSIM_SH_TRUE;
        arms++;
        skip_list(s, "elif else fi", found);
    }
    bool has_else = strcmp(found, "else") == 0;
    bodies[arms] = here(s);
    if (s->rc == SPSIM_OK && has_else)
        skip_list(s, "fi", found);
    if (s->rc == SPSIM_OK && strcmp(found, "fi") != 0)
        return (void)fail_at(s, line, "'%s' without its '%s'", "if", "fi");
    if (!decided)
        may[n++] = has_else ? (int)arms : -1;
    if (s->skip || s->rc != SPSIM_OK)
        return;
    struct pos end = here(s);
    run_body(s, choose(s, bodies, may, n, "elif else fi", line, "if", why), bodies, "elif else fi",
             end);
}

/* A case item's patterns up to ')': each a word. */
static bool
patterns(struct spsim_sh *s, struct spsim_sh_words *pats)
{
    spsim_sh_skip_blanks(s, true);
    if (spsim_sh_peek(s) == '(')
        spsim_sh_take(s);
    for (; s->rc == SPSIM_OK;) {
        spsim_sh_skip_blanks(s, false);
        spsim_sh_read_word(s, pats);
        spsim_sh_skip_blanks(s, false);
        int c = spsim_sh_take(s);
        if (c == ')')
            return true;
        if (c != '|')
            return false;
    }
    return false;
}

/* Which items of a case may run for `word`: the first whose pattern matches, or all of them
 * when the word (or a pattern) is not known; -1 when none is sure to match. */
static size_t
case_may(const struct spsim_sh_words *word, const struct spsim_sh_words *pats, size_t items,
         int *may, char *why, size_t cap)
{
    bool known = word->n == 1 && !word->w[0].unresolved[0];
    size_t n = 0;
    bool sure = false;
    for (size_t i = 0; i < items && !sure; i++) {
        bool hit = false, maybe = !known;
        for (size_t k = 0; k < pats[i].n; k++) {
            const struct spsim_sh_word *p = &pats[i].w[k];
            sure |= strcmp(p->text, "*") == 0;
            maybe |= p->unresolved[0] != '\0';
            hit |= known && !p->unresolved[0] && fnmatch(p->text, word->w[0].text, 0) == 0;
        }
        if (hit || maybe)
            may[n++] = (int)i;
        sure |= hit;
    }
    if (!sure)
        may[n++] = -1;
    if (!known)
        snprintf(why, cap, "%s", word->n == 1 ? word->w[0].unresolved : "a word of several");
    return n;
}

/* case WORD in [(]PATTERN[|PATTERN]...) LIST ;; ... esac */
static void
case_clause(struct spsim_sh *s)
{
    uint32_t line = s->line;
    struct spsim_sh_words word = {0}, pats[ARMS_MAX] = {{0}};
    struct pos bodies[ARMS_MAX];
    size_t items = 0;
    char kw[16], found[16] = ";;";
    spsim_sh_skip_keyword(s, "case");
    spsim_sh_skip_blanks(s, false);
    s->test = true;
    spsim_sh_read_word(s, &word);
    s->test = false;
    spsim_sh_skip_blanks(s, true);
    spsim_sh_keyword(s, kw, sizeof(kw));
    if (strcmp(kw, "in") != 0)
        fail_at(s, line, "'%s' without its '%s'", "case", "in");
    spsim_sh_skip_keyword(s, "in");
    while (s->rc == SPSIM_OK && strcmp(found, ";;") == 0) {
        spsim_sh_skip_blanks(s, true);
        spsim_sh_keyword(s, kw, sizeof(kw));
        if (strcmp(kw, "esac") == 0) {
            spsim_sh_skip_keyword(s, "esac");
            strcpy(found, "esac");
        } else if (items == ARMS_MAX || !patterns(s, &pats[items])) {
            fail_at(s, line, "'%s': a pattern without ')', or more than 64 items%s", "case", "");
        } else {
            bodies[items++] = here(s);
            skip_list(s, ";; esac", found);
        }
    }
    if (s->rc == SPSIM_OK && strcmp(found, "esac") != 0)
        fail_at(s, line, "'%s' without its '%s'", "case", "esac");
    if (s->rc == SPSIM_OK && !s->skip) {
        int may[ARMS_MAX + 1];
        char why[128] = "";
        size_t n = case_may(&word, pats, items, may, why, sizeof(why));
        run_body(s, choose(s, bodies, may, n, ";; esac", line, "case", why), bodies, ";; esac",
                 here(s));
    }
    spsim_sh_words_free(&word);
    for (size_t i = 0; i < ARMS_MAX; i++)
        spsim_sh_words_free(&pats[i]);
}

/* A loop's `do LIST done` start: after `do`, or 0 (s->rc set). */
static bool
loop_do(struct spsim_sh *s, uint32_t line, const char *kw)
{
    char w[16];
    spsim_sh_skip_blanks(s, true);
    if (spsim_sh_peek(s) == ';')
        spsim_sh_take(s), spsim_sh_skip_blanks(s, true);
    spsim_sh_keyword(s, w, sizeof(w));
    if (strcmp(w, "do") != 0)
        return fail_at(s, line, "'%s' without its '%s'", kw, "do"), false;
    spsim_sh_skip_keyword(s, "do");
    return true;
}

/* The words of `for NAME in WORDS;`, expanded. */
static void
for_words(struct spsim_sh *s, struct spsim_sh_words *items)
{
    char kw[16];
    spsim_sh_skip_blanks(s, true);
    spsim_sh_keyword(s, kw, sizeof(kw));
    if (strcmp(kw, "in") != 0) /* for NAME; do: over the arguments, of which there are none */
        return;
    spsim_sh_skip_keyword(s, "in");
    for (int c; s->rc == SPSIM_OK;) {
        spsim_sh_skip_blanks(s, false);
        if ((c = spsim_sh_peek(s)) < 0 || c == ';' || c == '\n')
            break;
        const char *p = s->p;
        spsim_sh_read_word(s, items);
        if (s->p == p) /* & | ( ) */
            fail_at(s, s->line, "'%s' without its '%s'", "for", "do");
    }
}

/* for NAME [in WORDS]; do LIST done */
static void
for_clause(struct spsim_sh *s)
{
    uint32_t line = s->line;
    struct spsim_sh_words items = {0}, name = {0};
    char found[16];
    spsim_sh_skip_keyword(s, "for");
    spsim_sh_skip_blanks(s, false);
    if (spsim_sh_peek(s) == '(')
        return (void)fail_at(s, line, "'%s': an arithmetic loop is not followed%s", "for (( ))",
                             "");
    spsim_sh_read_word(s, &name);
    for_words(s, &items);
    if (name.n != 1 || !loop_do(s, line, "for")) {
        if (name.n != 1)
            fail_at(s, line, "'%s' without a variable's name%s", "for", "");
    } else if (s->skip || items.n == 0) {
        skip_list(s, "done", found);
    } else {
        struct pos body = here(s);
        for (size_t i = 0; i < items.n && s->rc == SPSIM_OK && !s->exited; i++) {
            if (++s->iterations > SPSIM_SH_ITERATIONS_MAX) {
                fail_at(s, line, "'%s': more than 65536 loop iterations (spsim's cap)%s", "for",
                        "");
                break;
            }
            struct spsim_sh_words v = {0};
            spsim_sh_push(s, &v, items.w[i].text, strlen(items.w[i].text), items.w[i].line,
                          items.w[i].unresolved);
            spsim_sh_var_set(s, name.w[0].text, &v, false);
            seek(s, body);
            run_list(s, "done", found);
        }
    }
    spsim_sh_words_free(&items);
    spsim_sh_words_free(&name);
}

/* while|until LIST; do LIST done: followed when its condition is false at once. */
static void
while_clause(struct spsim_sh *s, const char *kw)
{
    uint32_t line = s->line;
    char why[128], found[16];
    spsim_sh_skip_keyword(s, kw);
    enum spsim_sh_truth t = condition(s, "do", line, why, sizeof(why));
    if (t != SPSIM_SH_UNKNOWN && kw[0] == 'u')
        t = t == SPSIM_SH_TRUE ? SPSIM_SH_FALSE : SPSIM_SH_TRUE;
    struct pos body = here(s);
    bool skip = s->skip;
    skip_list(s, "done", found);
    if (skip || s->rc != SPSIM_OK || t == SPSIM_SH_FALSE)
        return;
    struct probe p = probe(s, body, "done");
    if (t == SPSIM_SH_TRUE)
        fail_at(s, line,
                "'%s': a loop whose condition holds is not followed (spsim runs no loop but "
                "for over words)%s",
                kw, "");
    else if (p.effects && !p.exits)
        fail_at(s, line,
                "'%s': cannot be decided without running the script (it tests %s); give the "
                "variable with --env NAME=VALUE",
                kw, why[0] ? why : "a command's exit status");
}

/* { LIST; } */
static void
group(struct spsim_sh *s)
{
    uint32_t line = s->line;
    char found[16];
    spsim_sh_skip_keyword(s, "{");
    run_list(s, "}", found);
    if (s->rc == SPSIM_OK && strcmp(found, "}") != 0)
        fail_at(s, line, "'%s' without its '%s'", "{", "}");
}

/* NAME() or function NAME: the body read, not run; a call is refused (simple()). */
static void
function_def(struct spsim_sh *s, const char *name)
{
    size_t n = strlen(s->functions);
    if (n + strlen(name) + 2 < sizeof(s->functions))
        snprintf(s->functions + n, sizeof(s->functions) - n, " %s ", name);
    spsim_sh_skip_blanks(s, true);
    char kw[16];
    spsim_sh_keyword(s, kw, sizeof(kw));
    bool skip = s->skip;
    s->skip = true;
    if (strcmp(kw, "{") == 0)
        group(s);
    else
        fail_at(s, s->line, "'%s': a function body that is not { ... }%s", name, "");
    s->skip = skip;
}

/* The first word at the cursor as written (unexpanded), for the builtins that read their
 * words as a condition's. */
static void
raw_first(const struct spsim_sh *s, char *w, size_t cap)
{
    const char *p = s->p;
    while (p < s->end && (*p == ' ' || *p == '\t'))
        p++;
    size_t n = 0;
    while (p + n < s->end && !strchr(" \t\r\n;&|()<>", p[n]))
        n++;
    snprintf(w, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
}

/* NAME() at the cursor: a function definition; its name into `name`, "()" consumed. */
static bool
function_name(struct spsim_sh *s, char *name, size_t cap)
{
    const char *p = s->p;
    while (p < s->end && (*p == ' ' || *p == '\t'))
        p++;
    const char *start = p;
    while (p < s->end && (strchr("_-.", *p) || (*p >= '0' && *p <= '9') ||
                          ((*p | 32) >= 'a' && (*p | 32) <= 'z')))
        p++;
    size_t n = (size_t)(p - start);
    while (p < s->end && (*p == ' ' || *p == '\t'))
        p++;
    if (n == 0 || p + 1 >= s->end || p[0] != '(' || p[1] != ')')
        return false;
    snprintf(name, cap, "%.*s", (int)(n < cap ? n : cap - 1), start);
    while (s->p < p + 2)
        spsim_sh_take(s);
    return true;
}

/* Builtins that change nothing spsim reads and succeed. */
static bool
quiet_builtin(const char *w)
{
    return word_in(w, "echo printf set shift export declare local readonly typeset cd pushd "
                      "popd ulimit umask trap wait sleep mkdir :");
}

/* A command that launches (a .py script) or is only flags: the script's configuration. */
static bool
launch_like(const struct spsim_sh_words *cmd)
{
    for (size_t i = 0; i < cmd->n; i++) {
        size_t n = strlen(cmd->w[i].text);
        if (n > 3 && strcmp(cmd->w[i].text + n - 3, ".py") == 0)
            return true;
    }
    return cmd->w[0].text[0] == '-';
}

/* exit, source, eval, unset, a call of a function: what they do to the script's reading. */
static enum spsim_sh_truth
builtin(struct spsim_sh *s, const struct spsim_sh_words *cmd, uint32_t line, bool *record)
{
    const char *w = cmd->w[0].text;
    *record = false;
    if (strcmp(w, "exit") == 0) {
        if (!s->skip)
            s->exited = true;
        else if (s->depth == s->probe_depth)
            s->probe_exit = true;
        return SPSIM_SH_TRUE;
    }
    if (strcmp(w, "unset") == 0) {
        for (size_t i = 1; i < cmd->n; i++)
            if (cmd->w[i].text[0] != '-')
                spsim_sh_var_unset(s, cmd->w[i].text);
        return SPSIM_SH_TRUE;
    }
    bool refused = word_in(w, "source . eval break continue return") || word_in(w, s->functions);
    if (refused && !s->skip)
        return fail_at(s, line, "'%s': %s (give the variables it would set with --env NAME=VALUE)",
                       w,
                       word_in(w, s->functions) ? "a call of a function, which spsim does not "
                                                  "follow"
                                                : "spsim does not follow it"),
               SPSIM_SH_UNKNOWN;
    if (strcmp(w, "true") == 0 || strcmp(w, "false") == 0)
        return w[0] == 't' ? SPSIM_SH_TRUE : SPSIM_SH_FALSE;
    if (quiet_builtin(w))
        return SPSIM_SH_TRUE;
    s->effects += s->skip && (refused || launch_like(cmd));
    *record = !s->skip && !s->in_condition;
    return SPSIM_SH_UNKNOWN;
}

/* A simple command: run (its assignments, its record), its status. */
static enum spsim_sh_truth
simple(struct spsim_sh *s, enum spsim_sh_sep *sep, char *why, size_t cap)
{
    char first[8];
    raw_first(s, first, sizeof(first));
    bool bracket = strcmp(first, "[") == 0, test = bracket || strcmp(first, "test") == 0;
    struct spsim_sh_words cmd = {0};
    uint32_t line = s->line;
    s->test = test;
    *sep = spsim_sh_statement(s, &cmd);
    s->test = false;
    enum spsim_sh_truth t = SPSIM_SH_TRUE;
    bool record = false;
    if (s->rc != SPSIM_OK || cmd.n == 0) {
        t = s->rc == SPSIM_OK ? SPSIM_SH_TRUE : SPSIM_SH_UNKNOWN;
    } else if (test && s->skip) {
        t = SPSIM_SH_UNKNOWN;
    } else if (test) {
        bool closed = !bracket || strcmp(cmd.w[cmd.n - 1].text, "]") == 0;
        t = closed ? spsim_sh_test(cmd.w + 1, cmd.n - 1 - bracket, false, why, cap)
                   : (fail_at(s, line, "'%s' without its '%s'", "[", "]"), SPSIM_SH_UNKNOWN);
    } else {
        t = builtin(s, &cmd, line, &record);
        if (t == SPSIM_SH_UNKNOWN && !why[0])
            snprintf(why, cap, "the exit status of '%s'", cmd.w[0].text);
    }
    if (record && s->rc == SPSIM_OK && spsim_sh_add_command(s->out, &cmd) != SPSIM_OK)
        spsim_fail(s->err, SPSIM_ENOMEM, "out of memory"), s->rc = SPSIM_ENOMEM;
    spsim_sh_words_free(&cmd);
    return t;
}

/* [[ ... ]]: its words (&&, ||, !, (, ), < and > among them), expanded as a condition's. */
static enum spsim_sh_truth
double_bracket(struct spsim_sh *s, enum spsim_sh_sep *sep, char *why, size_t cap)
{
    uint32_t line = s->line;
    struct spsim_sh_words w = {0}, rest = {0};
    spsim_sh_skip_keyword(s, "[[");
    for (bool closed = false; s->rc == SPSIM_OK && !closed;) {
        spsim_sh_skip_blanks(s, true);
        int c = spsim_sh_peek(s);
        const char *p = s->p;
        size_t two = p + 1 < s->end &&
                     ((p[0] == ']' && p[1] == ']') || (strchr("&|", p[0]) && p[1] == p[0]));
        if (c < 0)
            fail_at(s, line, "'%s' without its '%s'", "[[", "]]");
        else if (two || strchr("()<>", c)) {
            closed = two && p[0] == ']';
            if (!closed)
                spsim_sh_push(s, &w, p, 1 + two, s->line, NULL);
            for (size_t k = 0; k <= two; k++)
                spsim_sh_take(s);
        } else {
            s->test = true;
            spsim_sh_read_word(s, &w);
            s->test = false;
            if (s->p == p) /* ; & | where a test's word was expected */
                fail_at(s, line, "'%s' without its '%s'", "[[", "]]");
        }
    }
    *sep = spsim_sh_statement(s, &rest); /* what follows ]] up to its separator */
    enum spsim_sh_truth t =
        s->rc != SPSIM_OK || s->skip ? SPSIM_SH_UNKNOWN : spsim_sh_test(w.w, w.n, true, why, cap);
    spsim_sh_words_free(&w);
    spsim_sh_words_free(&rest);
    return t;
}

/* A compound command at the cursor (s->depth counts it), then its separator. */
static void
compound(struct spsim_sh *s, const char *kw, enum spsim_sh_sep *sep)
{
    char name[64];
    if (++s->depth > SPSIM_SH_DEPTH_MAX) {
        fail_at(s, s->line, "compound commands nested deeper than %s levels%s", "64", "");
    } else if (strcmp(kw, "if") == 0) {
        if_clause(s);
    } else if (strcmp(kw, "case") == 0) {
        case_clause(s);
    } else if (strcmp(kw, "for") == 0) {
        for_clause(s);
    } else if (strcmp(kw, "while") == 0 || strcmp(kw, "until") == 0) {
        while_clause(s, kw);
    } else if (strcmp(kw, "{") == 0) {
        group(s);
    } else if (strcmp(kw, "function") == 0) {
        spsim_sh_skip_keyword(s, "function");
        if (!function_name(s, name, sizeof(name))) {
            raw_first(s, name, sizeof(name));
            spsim_sh_skip_keyword(s, name);
        }
        function_def(s, name);
    } else {
        fail_at(s, s->line, "'%s': not followed (spsim reads if, case, for, while and { })%s", kw,
                "");
    }
    s->depth--;
    struct spsim_sh_words rest = {0};
    *sep = s->rc == SPSIM_OK && !s->exited ? spsim_sh_statement(s, &rest) : SPSIM_SH_SEP_END;
    spsim_sh_words_free(&rest);
}

/* One command of an and-or list: its status and its separator. */
static enum spsim_sh_truth
element(struct spsim_sh *s, enum spsim_sh_sep *sep, char *why, size_t cap)
{
    char kw[16], name[64];
    spsim_sh_keyword(s, kw, sizeof(kw));
    *sep = SPSIM_SH_SEP_END;
    bool negate = false;
    for (; strcmp(kw, "!") == 0; spsim_sh_keyword(s, kw, sizeof(kw))) { /* ! ! x is x */
        spsim_sh_skip_keyword(s, "!");
        negate = !negate;
    }
    if (negate) {
        enum spsim_sh_truth t = element(s, sep, why, cap);
        return t == SPSIM_SH_UNKNOWN ? t : t == SPSIM_SH_TRUE ? SPSIM_SH_FALSE : SPSIM_SH_TRUE;
    }
    if (strcmp(kw, "[[") == 0)
        return double_bracket(s, sep, why, cap);
    if (word_in(kw, "if case for while until { function select time coproc")) {
        compound(s, kw, sep);
        return SPSIM_SH_TRUE;
    }
    if (function_name(s, name, sizeof(name))) {
        function_def(s, name);
        return SPSIM_SH_TRUE;
    }
    return simple(s, sep, why, cap);
}

/* The next command of a list, read without running: what it would do. */
static struct probe
probe_element(struct spsim_sh *s, enum spsim_sh_sep *sep)
{
    bool skip = s->skip, exit = s->probe_exit;
    unsigned effects = s->effects;
    int depth = s->probe_depth;
    char why[8];
    s->skip = true;
    s->probe_depth = s->depth;
    s->probe_exit = false;
    element(s, sep, why, sizeof(why));
    struct probe r = {s->effects - effects, s->probe_exit};
    s->skip = skip;
    s->probe_exit = exit;
    s->probe_depth = depth;
    return r;
}

/* An and-or list (a && b || c): each command run when the status before it says so; one whose
 * turn cannot be decided is read only if it changes nothing or exits. */
static enum spsim_sh_truth
and_or(struct spsim_sh *s, char *why, size_t cap)
{
    enum spsim_sh_sep sep;
    enum spsim_sh_truth t = element(s, &sep, why, cap);
    while (s->rc == SPSIM_OK && !s->exited && (sep == SPSIM_SH_SEP_AND || sep == SPSIM_SH_SEP_OR)) {
        bool run = t == (sep == SPSIM_SH_SEP_AND ? SPSIM_SH_TRUE : SPSIM_SH_FALSE);
        spsim_sh_skip_blanks(s, true);
        uint32_t line = s->line;
        if (run || s->skip) {
            enum spsim_sh_truth u = element(s, &sep, why, cap);
            t = run ? u : s->skip ? SPSIM_SH_UNKNOWN : t;
        } else if (t == SPSIM_SH_UNKNOWN) {
            struct probe p = probe_element(s, &sep);
            if (p.effects && !p.exits)
                fail_at(s, line, "'%s': cannot be decided without running the script (it tests %s)",
                        sep == SPSIM_SH_SEP_OR ? "||" : "&&",
                        why[0] ? why : "a command's exit status");
        } else {
            bool skip = s->skip;
            s->skip = true;
            element(s, &sep, why, cap);
            s->skip = skip;
        }
    }
    return t;
}

/* Commands up to one of the reserved words `ends` (consumed, copied to found) or the end. */
static void
run_list(struct spsim_sh *s, const char *ends, char *found)
{
    char kw[16], why[128];
    found[0] = '\0';
    while (s->rc == SPSIM_OK && !s->exited) {
        spsim_sh_skip_blanks(s, true);
        if (spsim_sh_peek(s) < 0)
            return;
        spsim_sh_keyword(s, kw, sizeof(kw));
        if (kw[0] && word_in(kw, ends)) {
            spsim_sh_skip_keyword(s, kw);
            snprintf(found, 16, "%s", kw);
            return;
        }
        if (word_in(kw, "then elif else fi do done esac ;; } in"))
            return (void)fail_at(s, s->line, "'%s' where a command was expected%s", kw, "");
        why[0] = '\0';
        const char *p = s->p;
        and_or(s, why, sizeof(why));
        if (s->p == p && s->rc == SPSIM_OK && !s->exited) { /* nothing read: not a command */
            char c[2] = {*s->p, '\0'};
            fail_at(s, s->line, "%s where a command was expected%s", SPSIM_Q(kw[0] ? kw : c), "");
            return;
        }
    }
}

/* The environment's NAME=VALUE words, set before the script runs. */
static int
environment(struct spsim_sh *s, const char *const *env, size_t nenv)
{
    for (size_t i = 0; s->rc == SPSIM_OK && i < nenv; i++) {
        const char *e = env[i] ? env[i] : "";
        size_t n = strspn(e, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        if (n == 0 || n >= 64 || e[n] != '=' || (e[0] >= '0' && e[0] <= '9'))
            return spsim_fail(s->err, SPSIM_EINVAL,
                              "--env %s: not NAME=VALUE (NAME a shell variable's name)",
                              SPSIM_Q(e));
        char name[64];
        struct spsim_sh_words value = {0};
        memcpy(name, e, n);
        name[n] = '\0';
        spsim_sh_push(s, &value, e + n + 1, strlen(e + n + 1), 0, NULL);
        spsim_sh_var_set(s, name, &value, false);
    }
    return s->rc;
}

int
spsim_sh_parse(const char *text, size_t len, const char *origin, const char *const *env,
               size_t nenv, struct spsim_sh_script *out, struct spsim_error *err)
{
    struct spsim_sh s = {.p = text, .end = text + len, .line = 1, .origin = origin, .err = err};
    char found[16];
    /* Branches are read again to choose and to run them, loops once an iteration: bounded. */
    s.reads_left = 4 * (uint64_t)len + SPSIM_SH_REREAD_MIN;
    memset(out, 0, sizeof(*out));
    s.out = out;
    s.rc = environment(&s, env, nenv);
    if (s.rc == SPSIM_OK)
        run_list(&s, "", found);
    for (size_t i = 0; i < s.nvars; i++)
        spsim_sh_words_free(&s.vars[i].value);
    free(s.vars);
    if (s.rc != SPSIM_OK)
        spsim_sh_free(out);
    else
        snprintf(out->assumed, sizeof(out->assumed), "%s", s.assumed);
    return s.rc;
}
