/*
 * A launch script's words as bash passes them to its commands (see shell_words.h): enough of
 * bash's quoting and expansion for the launch scripts of Megatron-LM's examples/ (arrays of
 * flags spliced into a torchrun line, integer arithmetic), nothing that needs running a
 * program. The compound commands that choose which words run are shell_flow.c's.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell_lex.h"

struct buf {
    char *s;
    size_t n, cap;
};

/* The word being built. */
struct wordb {
    struct buf text;
    char unresolved[64];
    bool quoted; /* a quote was seen: "" is a word */
    uint32_t line;
};

static bool
grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 8;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * size);
    if (!q)
        return false;
    *p = q;
    *cap = n;
    return true;
}

static int
oom(struct spsim_sh *s)
{
    if (s->rc == SPSIM_OK)
        s->rc = spsim_fail(s->err, SPSIM_ENOMEM, "out of memory");
    return s->rc;
}

int
spsim_sh_syntax(struct spsim_sh *s, const char *what)
{
    if (s->rc == SPSIM_OK)
        s->rc = spsim_fail(s->err, SPSIM_EPARSE, "%s:%u: %s", s->origin, s->line, what);
    return s->rc;
}

static void
put(struct spsim_sh *s, struct buf *b, const char *text, size_t len)
{
    if (s->rc != SPSIM_OK)
        return;
    if (b->n + len > SPSIM_SH_WORD_MAX) {
        spsim_sh_syntax(s, "a word longer than 65536 bytes (spsim's cap)");
        return;
    }
    void *p = b->s;
    if (!grow(&p, &b->cap, b->n + len + 1, 1)) {
        oom(s);
        return;
    }
    b->s = p;
    memcpy(b->s + b->n, text, len);
    b->n += len;
    b->s[b->n] = '\0';
}

void
spsim_sh_push(struct spsim_sh *s, struct spsim_sh_words *ws, const char *text, size_t len,
              uint32_t line, const char *unresolved)
{
    if (s->rc != SPSIM_OK)
        return;
    if (ws->n >= SPSIM_SH_WORDS_MAX) {
        spsim_sh_syntax(s, "more than 65536 words in one array or command (spsim's cap)");
        return;
    }
    s->bytes += len;
    if (++s->words > SPSIM_SH_TOTAL_WORDS || s->bytes > SPSIM_SH_TOTAL_BYTES) {
        spsim_sh_syntax(s, "the script expands to more than 16 MiB of words (spsim's cap)");
        return;
    }
    void *p = ws->w;
    char *t = malloc(len + 1);
    if (!t || !grow(&p, &ws->cap, ws->n + 1, sizeof(*ws->w))) {
        free(t);
        oom(s);
        return;
    }
    ws->w = p;
    memcpy(t, text, len);
    t[len] = '\0';
    struct spsim_sh_word *w = &ws->w[ws->n++];
    w->text = t;
    w->line = line;
    snprintf(w->unresolved, sizeof(w->unresolved), "%s", unresolved ? unresolved : "");
    w->key[0] = '\0';
    w->off = false;
    w->origin = NULL;
}

void
spsim_sh_words_free(struct spsim_sh_words *ws)
{
    for (size_t i = 0; i < ws->n; i++)
        free(ws->w[i].text);
    free(ws->w);
    memset(ws, 0, sizeof(*ws));
}

int
spsim_sh_peek(const struct spsim_sh *s)
{
    return s->p < s->end ? (unsigned char)*s->p : -1;
}

int
spsim_sh_take(struct spsim_sh *s)
{
    int c = spsim_sh_peek(s);
    if (c >= 0 && s->reads_left && --s->reads_left == 0) {
        spsim_sh_syntax(s, "the script's control flow reads it more than four times over "
                           "(spsim's cap)");
        s->p = s->end;
        return -1;
    }
    if (c >= 0)
        s->p++;
    if (c == '\n')
        s->line++;
    return c;
}

static void
mark(struct wordb *wb, const char *name)
{
    size_t n = strlen(name);
    n = n < sizeof(wb->unresolved) - 1 ? n : sizeof(wb->unresolved) - 1;
    if (!wb->unresolved[0]) {
        memcpy(wb->unresolved, name, n);
        wb->unresolved[n] = '\0';
    }
}

/* End the word being built (if any) into ws. */
static void
finish(struct spsim_sh *s, struct wordb *wb, struct spsim_sh_words *ws)
{
    if (wb->text.n || wb->quoted)
        spsim_sh_push(s, ws, wb->text.s ? wb->text.s : "", wb->text.n, wb->line, wb->unresolved);
    free(wb->text.s);
    memset(wb, 0, sizeof(*wb));
    wb->line = s->line;
}

struct spsim_sh_var *
spsim_sh_var_find(struct spsim_sh *s, const char *name)
{
    for (size_t i = 0; i < s->nvars; i++)
        if (strcmp(s->vars[i].name, name) == 0)
            return &s->vars[i];
    return NULL;
}

/* NAME=WORDS (or NAME+=WORDS): the variable takes (or appends) the words. */
void
spsim_sh_var_set(struct spsim_sh *s, const char *name, struct spsim_sh_words *words, bool append)
{
    if (s->skip) { /* a branch not taken: counted (shell_flow.c asks whether it does anything) */
        s->effects++;
        spsim_sh_words_free(words);
        return;
    }
    struct spsim_sh_var *v = spsim_sh_var_find(s, name);
    void *p = s->vars;
    if (!v && s->nvars >= SPSIM_SH_VARS_MAX) {
        spsim_sh_words_free(words);
        spsim_sh_syntax(s, "more than 4096 variables (spsim's cap)");
        return;
    }
    if (!v) {
        if (!grow(&p, &s->capvars, s->nvars + 1, sizeof(*s->vars))) {
            spsim_sh_words_free(words);
            oom(s);
            return;
        }
        s->vars = p;
        v = &s->vars[s->nvars++];
        memset(v, 0, sizeof(*v));
        snprintf(v->name, sizeof(v->name), "%s", name);
    }
    if (!append)
        spsim_sh_words_free(&v->value);
    for (size_t i = 0; i < words->n; i++) {
        const struct spsim_sh_word *w = &words->w[i];
        spsim_sh_push(s, &v->value, w->text, strlen(w->text), w->line, w->unresolved);
    }
    spsim_sh_words_free(words);
}

void
spsim_sh_var_unset(struct spsim_sh *s, const char *name)
{
    struct spsim_sh_var *v = spsim_sh_var_find(s, name);
    if (s->skip) {
        s->effects++;
        return;
    }
    if (!v)
        return;
    spsim_sh_words_free(&v->value);
    *v = s->vars[--s->nvars];
}

void
spsim_sh_assume(struct spsim_sh *s, const char *name)
{
    if (s->skip) /* a branch not taken: what it tests is not what the script tested */
        return;
    size_t n = strlen(s->assumed), k = strlen(name);
    for (const char *p = s->assumed; (p = strstr(p, name)) != NULL; p += k)
        if ((p == s->assumed || p[-1] == ' ') && (p[k] == ',' || p[k] == '\0'))
            return;
    if (n + k + 3 < sizeof(s->assumed))
        snprintf(s->assumed + n, sizeof(s->assumed) - n, "%s%s", n ? ", " : "", name);
}

/* A value's words into the word being built: each element is a word of its own, and an
 * unquoted expansion is split on blanks as bash splits it. */
static void
splice(struct spsim_sh *s, struct wordb *wb, struct spsim_sh_words *ws,
       const struct spsim_sh_words *v, bool quoted)
{
    for (size_t i = 0; i < v->n; i++) {
        const struct spsim_sh_word *w = &v->w[i];
        if (i > 0)
            finish(s, wb, ws);
        if (!wb->text.n)
            wb->line = w->line; /* an array's element keeps the line it was written on */
        wb->quoted |= quoted;
        for (const char *t = w->text; *t; t++) {
            if (!quoted && (*t == ' ' || *t == '\t' || *t == '\n')) {
                finish(s, wb, ws);
                continue;
            }
            /* Split unquoted, only the words that hold the unresolved expansion's text ($1,
             * $(...), `...`) are unresolved. */
            if (w->unresolved[0] && (quoted || *t == '$' || *t == '`'))
                mark(wb, w->unresolved);
            put(s, &wb->text, t, 1);
        }
    }
}

/* Skip a balanced $( ... ) or $(( ... )) (quotes inside respected). */
static void
skip_parens(struct spsim_sh *s)
{
    int depth = 0, quote = 0;
    do {
        int c = spsim_sh_take(s);
        if (c < 0) {
            spsim_sh_syntax(s, "unterminated $( ... )");
            return;
        }
        if (quote) {
            if (c == '\\' && quote == '"')
                spsim_sh_take(s);
            else if (c == quote)
                quote = 0;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '(') {
            depth++;
        } else if (c == ')') {
            depth--;
        }
    } while (depth > 0);
}

/* An unset variable: in a condition, empty (a clean environment) and noted; elsewhere left as
 * written, unresolved. */
static void
unset_variable(struct spsim_sh *s, struct wordb *wb, const char *text, const char *name)
{
    if (s->test) {
        spsim_sh_assume(s, name);
        return;
    }
    put(s, &wb->text, text, strlen(text));
    mark(wb, name);
}

/* ${...}: NAME, NAME[@], NAME[*], NAME:-WORD, NAME-WORD; anything else stays unresolved. */
static void
expand_braces(struct spsim_sh *s, struct wordb *wb, struct spsim_sh_words *ws, bool quoted)
{
    char body[256];
    size_t n = 0;
    for (int c; (c = spsim_sh_take(s)) != '}';) {
        if (c < 0 || c == '\n')
            return (void)spsim_sh_syntax(s, "unterminated ${ ... }");
        if (n + 1 < sizeof(body))
            body[n++] = (char)c;
    }
    body[n] = '\0';
    size_t name = strspn(body, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    const char *rest = body + name;
    bool all = strcmp(rest, "[@]") == 0 || strcmp(rest, "[*]") == 0;
    const char *dflt = strncmp(rest, ":-", 2) == 0 ? rest + 2 : *rest == '-' ? rest + 1 : NULL;
    char text[300];
    snprintf(text, sizeof(text), "${%s}", body);
    body[name] = '\0';
    struct spsim_sh_var *v = name && (all || dflt || !*rest) ? spsim_sh_var_find(s, body) : NULL;
    if (v && v->value.n) {
        struct spsim_sh_words first = {v->value.w, all ? v->value.n : 1, 0};
        splice(s, wb, ws, &first, quoted);
    } else if (dflt) {
        for (; *dflt; dflt++)
            if (*dflt != '"' && *dflt != '\'')
                put(s, &wb->text, dflt, 1);
        if (strchr(text, '$') != strrchr(text, '$'))
            mark(wb, text);
    } else if (!v && name && (all || !*rest)) {
        unset_variable(s, wb, text, body);
    } else if (!v) {
        put(s, &wb->text, text, strlen(text));
        mark(wb, text);
    }
}

/* A variable of an arithmetic expression: its value if it is one resolved word. */
static bool
arith_value(struct spsim_sh *s, const char *name, struct buf *out)
{
    struct spsim_sh_var *v = spsim_sh_var_find(s, name);
    if (!v && s->test) { /* unset: 0, as bash counts it, and noted */
        spsim_sh_assume(s, name);
        put(s, out, "0", 1);
        return true;
    }
    if (!v || v->value.n != 1 || v->value.w[0].unresolved[0])
        return false;
    put(s, out, "(", 1);
    put(s, out, v->value.w[0].text, strlen(v->value.w[0].text));
    put(s, out, ")", 1);
    return true;
}

/* $(( e )): e's variables ($X, ${X}, X) replaced, then evaluated (shell_arith.c). */
static bool
arith_expand(struct spsim_sh *s, const char *e, size_t n, long long *out)
{
    struct buf b = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < n;) {
        size_t brace = e[i] == '$' && i + 1 < n && e[i + 1] == '{';
        size_t start = i + (e[i] == '$') + brace, k = start;
        while (k < n && (isalnum((unsigned char)e[k]) || e[k] == '_'))
            k++;
        if (k == start || isdigit((unsigned char)e[start])) {
            ok = e[i] != '$'; /* $(...), $1, $# and such: not known */
            put(s, &b, e + i, 1);
            i++;
            continue;
        }
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)(k - start < 63 ? k - start : 63), e + start);
        ok = arith_value(s, name, &b) && (!brace || (k < n && e[k] == '}'));
        i = k + (brace && k < n);
    }
    ok = ok && s->rc == SPSIM_OK && spsim_sh_arith(b.s ? b.s : "", out);
    free(b.s);
    return ok;
}

static void
arithmetic(struct spsim_sh *s, struct wordb *wb)
{
    const char *start = s->p;
    skip_parens(s);
    size_t n = (size_t)(s->p - start);
    long long v = 0;
    char text[32];
    if (s->rc == SPSIM_OK && n >= 4 && start[n - 2] == ')' &&
        arith_expand(s, start + 2, n - 4, &v)) {
        int k = snprintf(text, sizeof(text), "%lld", v);
        put(s, &wb->text, text, (size_t)k);
        return;
    }
    put(s, &wb->text, "$((...))", 8);
    mark(wb, "$((...))");
}

/* After a '$': the expansion into the word being built. */
static void
expand(struct spsim_sh *s, struct wordb *wb, struct spsim_sh_words *ws, bool quoted)
{
    int c = spsim_sh_peek(s);
    if (c == '(' && s->p + 1 < s->end && s->p[1] == '(') {
        arithmetic(s, wb);
    } else if (c == '(') {
        skip_parens(s);
        put(s, &wb->text, "$(...)", 6);
        mark(wb, "$(...)");
    } else if (c == '{') {
        spsim_sh_take(s);
        expand_braces(s, wb, ws, quoted);
    } else if (c >= 0 && (isalpha(c) || c == '_')) {
        char name[64];
        size_t n = 0;
        while ((c = spsim_sh_peek(s)) >= 0 && (isalnum(c) || c == '_'))
            if (n + 1 < sizeof(name))
                name[n++] = (char)spsim_sh_take(s);
            else
                spsim_sh_take(s);
        name[n] = '\0';
        struct spsim_sh_var *v = spsim_sh_var_find(s, name);
        if (v) {
            struct spsim_sh_words first = {v->value.w, v->value.n ? 1 : 0, 0};
            splice(s, wb, ws, &first, quoted);
        } else {
            char text[66];
            snprintf(text, sizeof(text), "$%s", name);
            unset_variable(s, wb, text, name);
        }
    } else if (c == '#') { /* the script runs with no arguments */
        spsim_sh_take(s);
        put(s, &wb->text, "0", 1);
    } else if (c >= 0 && strchr("0123456789@*?$!-", c)) {
        char name[3] = {'$', (char)spsim_sh_take(s), '\0'};
        if (s->test && strchr("0123456789@*", name[1]) && name[1] != '0')
            spsim_sh_assume(s, name); /* no arguments: empty */
        else
            put(s, &wb->text, name, 2), mark(wb, name);
    } else {
        put(s, &wb->text, "$", 1);
    }
}

/* Inside "...": backslash escapes $ ` " \ and newline only; expansions are not split. */
static void
double_quoted(struct spsim_sh *s, struct wordb *wb, struct spsim_sh_words *ws)
{
    wb->quoted = true;
    uint32_t start = s->line;
    for (int c; s->rc == SPSIM_OK;) {
        if ((c = spsim_sh_take(s)) < 0 && (s->line = start))
            return (void)spsim_sh_syntax(s, "unterminated double quote");
        if (c == '"')
            return;
        if (c == '\\' && spsim_sh_peek(s) >= 0 && strchr("$`\"\\\n", spsim_sh_peek(s))) {
            if ((c = spsim_sh_take(s)) == '\n')
                continue;
        } else if (c == '$') {
            expand(s, wb, ws, true);
            continue;
        } else if (c == '`') {
            while ((c = spsim_sh_take(s)) >= 0 && c != '`')
                ;
            put(s, &wb->text, "`...`", 5);
            mark(wb, "`...`");
            continue;
        }
        char ch = (char)c;
        put(s, &wb->text, &ch, 1);
    }
}

static bool
word_end(int c, const struct wordb *wb)
{
    /* '&' after '>' belongs to a redirection (2>&1). */
    if (c == '&' && wb->text.n && wb->text.s[wb->text.n - 1] == '>')
        return false;
    return c < 0 || strchr(" \t\n;&|()", c) != NULL;
}

/* One word, its expansions spliced into ws. */
void
spsim_sh_read_word(struct spsim_sh *s, struct spsim_sh_words *ws)
{
    struct wordb wb = {.line = s->line};
    for (int c; s->rc == SPSIM_OK && !word_end(c = spsim_sh_peek(s), &wb);) {
        spsim_sh_take(s);
        if (c == '\\') {
            if ((c = spsim_sh_take(s)) == '\n' || c < 0)
                continue;
        } else if (c == '\'') {
            wb.quoted = true;
            uint32_t start = s->line;
            while ((c = spsim_sh_take(s)) != '\'' && s->rc == SPSIM_OK)
                if (c < 0 && (s->line = start))
                    spsim_sh_syntax(s, "unterminated single quote");
                else
                    put(s, &wb.text, &(char){(char)c}, 1);
            continue;
        } else if (c == '"') {
            double_quoted(s, &wb, ws);
            continue;
        } else if (c == '$') {
            expand(s, &wb, ws, false);
            continue;
        } else if (c == '`') {
            while ((c = spsim_sh_take(s)) >= 0 && c != '`')
                ;
            put(s, &wb.text, "`...`", 5);
            mark(&wb, "`...`");
            continue;
        }
        put(s, &wb.text, &(char){(char)c}, 1);
    }
    finish(s, &wb, ws);
    free(wb.text.s);
}

/* Blanks and line continuations. */
void
spsim_sh_skip_blanks(struct spsim_sh *s, bool newlines)
{
    for (int c; (c = spsim_sh_peek(s)) >= 0;) {
        if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n'))
            spsim_sh_take(s);
        else if (c == '\\' && s->p + 1 < s->end && s->p[1] == '\n')
            spsim_sh_take(s), spsim_sh_take(s);
        else if (newlines && c == '#')
            while (spsim_sh_peek(s) >= 0 && spsim_sh_peek(s) != '\n')
                spsim_sh_take(s);
        else
            return;
    }
}

/* NAME= or NAME+= at the cursor: the name's length, else 0. */
static size_t
assignment_at(const struct spsim_sh *s, bool *append)
{
    const char *p = s->p;
    if (p >= s->end || !(isalpha((unsigned char)*p) || *p == '_'))
        return 0;
    while (p < s->end && (isalnum((unsigned char)*p) || *p == '_'))
        p++;
    size_t n = (size_t)(p - s->p);
    *append = p < s->end && *p == '+';
    p += *append;
    return p < s->end && *p == '=' && n < 64 ? n : 0;
}

static void
assign(struct spsim_sh *s, size_t n, bool append)
{
    char name[64];
    struct spsim_sh_words words = {0};
    memcpy(name, s->p, n);
    name[n] = '\0';
    s->p += n + append + 1;
    if (spsim_sh_peek(s) == '(') {
        uint32_t start = s->line;
        spsim_sh_take(s);
        for (spsim_sh_skip_blanks(s, true); s->rc == SPSIM_OK && spsim_sh_peek(s) != ')';
             spsim_sh_skip_blanks(s, true)) {
            const char *before = s->p;
            if (spsim_sh_peek(s) >= 0 && spsim_sh_peek(s) != '(')
                spsim_sh_read_word(s, &words);
            if (s->p == before) { /* EOF, or ( ; & | where a word should be */
                char what[64];
                s->line = spsim_sh_peek(s) < 0 ? start : s->line;
                snprintf(what, sizeof(what),
                         spsim_sh_peek(s) < 0 ? "unterminated array" : "'%c' inside an array",
                         spsim_sh_peek(s));
                return (void)(spsim_sh_syntax(s, what), spsim_sh_words_free(&words));
            }
        }
        spsim_sh_take(s);
    } else if (!word_end(spsim_sh_peek(s), &(struct wordb){0})) {
        struct spsim_sh_words parts = {0};
        spsim_sh_read_word(s, &parts);
        struct buf joined = {0};
        for (size_t i = 0; i < parts.n; i++) {
            put(s, &joined, " ", i > 0);
            put(s, &joined, parts.w[i].text, strlen(parts.w[i].text));
        }
        const char *unresolved = NULL;
        for (size_t i = 0; i < parts.n && !unresolved; i++)
            unresolved = parts.w[i].unresolved[0] ? parts.w[i].unresolved : NULL;
        spsim_sh_push(s, &words, joined.s ? joined.s : "", joined.n, s->line, unresolved);
        free(joined.s);
        spsim_sh_words_free(&parts);
    } else {
        spsim_sh_push(s, &words, "", 0, s->line, NULL);
    }
    spsim_sh_var_set(s, name, &words, append);
}

static bool
declare_word(const char *w)
{
    return strcmp(w, "export") == 0 || strcmp(w, "declare") == 0 || strcmp(w, "local") == 0 ||
           strcmp(w, "readonly") == 0 || strcmp(w, "typeset") == 0;
}

/* A redirection (>, 2>&1, >>file): dropped, with its target when it stands alone. */
static size_t
redirection(const char *w)
{
    size_t d = strspn(w, "0123456789&");
    if (w[d] != '>' && w[d] != '<')
        return 0;
    return strspn(w + d, "<>&") == strlen(w + d) && !strchr(w + d, '&') ? 2 : 1;
}

/* A here-document's body (its lines up to the end word): the input of a command, not words of
 * the script. */
static void
skip_heredoc(struct spsim_sh *s)
{
    uint32_t start = s->line;
    size_t n = strlen(s->heredoc);
    while (s->p < s->end) {
        const char *line = s->p;
        while (s->heredoc_tabs && line < s->end && *line == '\t')
            line++;
        const char *eol = memchr(s->p, '\n', (size_t)(s->end - s->p));
        const char *stop = eol ? eol : s->end;
        bool last = (size_t)(stop - line) == n && memcmp(line, s->heredoc, n) == 0;
        s->p = eol ? eol + 1 : s->end;
        s->line += eol != NULL;
        if (last) {
            s->heredoc[0] = '\0';
            return;
        }
    }
    s->line = start;
    spsim_sh_syntax(s, "a here-document without its end word");
}

/* <<WORD, <<-WORD, << WORD: the end word of the body to skip after the line. */
static bool
heredoc_start(struct spsim_sh *s, const char *w)
{
    size_t d = strspn(w, "0123456789");
    if (strncmp(w + d, "<<", 2) != 0 || w[d + 2] == '<')
        return false;
    s->heredoc_tabs = w[d + 2] == '-';
    snprintf(s->heredoc, sizeof(s->heredoc), "%s", w + d + 2 + s->heredoc_tabs);
    return s->heredoc[0] == '\0'; /* the word comes next */
}

/* A separator at the cursor (consumed). */
static enum spsim_sh_sep
separator(struct spsim_sh *s)
{
    if (s->p + 1 < s->end && s->p[0] == ';' && s->p[1] == ';')
        return SPSIM_SH_SEP_CASE; /* left for the case clause to read (spsim_sh_keyword) */
    int c = spsim_sh_take(s), next = spsim_sh_peek(s);
    if (c == '\n' && s->heredoc[0])
        skip_heredoc(s);
    if ((c == '&' || c == '|') && next == c)
        return spsim_sh_take(s), c == '&' ? SPSIM_SH_SEP_AND : SPSIM_SH_SEP_OR;
    return c == '&' ? SPSIM_SH_SEP_BG : c == '|' ? SPSIM_SH_SEP_PIPE : SPSIM_SH_SEP_END;
}

/* The words of one command up to ; & | or a newline; leading assignments applied. */
enum spsim_sh_sep
spsim_sh_statement(struct spsim_sh *s, struct spsim_sh_words *cmd)
{
    bool prefix = true, append, end_word = false;
    size_t n, drop = 0;
    enum spsim_sh_sep sep = SPSIM_SH_SEP_END;
    for (int c; s->rc == SPSIM_OK;) {
        spsim_sh_skip_blanks(s, false);
        if ((c = spsim_sh_peek(s)) < 0)
            break;
        if (c == '#') {
            while (spsim_sh_peek(s) >= 0 && spsim_sh_peek(s) != '\n')
                spsim_sh_take(s);
        } else if (strchr("\n;&|", c)) {
            sep = separator(s);
            break;
        } else if (c == '(' || c == ')') {
            spsim_sh_syntax(s, "a subshell or a group ( ... ) is not followed");
        } else if (prefix && (n = assignment_at(s, &append))) {
            assign(s, n, append);
        } else {
            /* A word may expand to none ($UNSET, "${EMPTY[@]}"): then there is no word of its
             * own to judge (the last one is an earlier word's; none at all on an empty command,
             * where a pending redirection target would drop w[-1]: fuzz_launch, 2026-12-02).
             * The read consumed at least one character (the checks above leave no word end). */
            size_t before = cmd->n;
            spsim_sh_read_word(s, cmd);
            if (cmd->n == before)
                continue;
            const char *w = cmd->w[cmd->n - 1].text;
            if (end_word)
                snprintf(s->heredoc, sizeof(s->heredoc), "%s", w);
            end_word = !drop && redirection(w) && heredoc_start(s, w);
            if (drop || (drop = redirection(w))) {
                drop--;
                free(cmd->w[--cmd->n].text);
                continue;
            }
            prefix = prefix && (declare_word(w) || (cmd->n > 1 && w[0] == '-'));
        }
    }
    if (prefix)
        spsim_sh_words_free(cmd);
    return sep;
}

/* The reserved words shell_flow.c follows, and those that end its lists. */
static const char *const keywords[] = {
    "if",    "then",  "elif",   "else",     "fi", "for", "in", "do", "done", "case",   "esac",
    "while", "until", "select", "function", "{",  "}",   "[[", "!",  "time", "coproc", NULL};

void
spsim_sh_keyword(const struct spsim_sh *s, char *kw, size_t cap)
{
    const char *p = s->p;
    while (p < s->end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    kw[0] = '\0';
    if (p + 1 < s->end && p[0] == ';' && p[1] == ';') {
        snprintf(kw, cap, ";;");
        return;
    }
    size_t n = 0;
    while (p + n < s->end && !strchr(" \t\r\n;&|()<>\"'`$\\", p[n]))
        n++;
    for (const char *const *k = keywords; n && *k; k++)
        if (strlen(*k) == n && strncmp(*k, p, n) == 0) {
            snprintf(kw, cap, "%s", *k);
            return;
        }
}

void
spsim_sh_skip_keyword(struct spsim_sh *s, const char *kw)
{
    spsim_sh_skip_blanks(s, false);
    for (size_t n = strlen(kw); n-- && spsim_sh_peek(s) >= 0;)
        spsim_sh_take(s);
}

void
spsim_sh_free(struct spsim_sh_script *s)
{
    for (size_t i = 0; i < s->n; i++)
        spsim_sh_words_free(&s->cmd[i]);
    free(s->cmd);
    memset(s, 0, sizeof(*s));
}

int
spsim_sh_add_command(struct spsim_sh_script *s, struct spsim_sh_words *cmd)
{
    void *p = s->cmd;
    if (!grow(&p, &s->cap, s->n + 1, sizeof(*s->cmd)))
        return SPSIM_ENOMEM;
    s->cmd = p;
    s->cmd[s->n++] = *cmd;
    memset(cmd, 0, sizeof(*cmd));
    return SPSIM_OK;
}

int
spsim_sh_append(struct spsim_sh_words *ws, const char *text, uint32_t line, const char *key)
{
    struct spsim_sh s = {.rc = SPSIM_OK};
    spsim_sh_push(&s, ws, text, strlen(text), line, NULL);
    if (s.rc == SPSIM_OK && key)
        snprintf(ws->w[ws->n - 1].key, sizeof(ws->w[ws->n - 1].key), "%s", key);
    return s.rc;
}
