/*
 * A launch script's words as bash passes them to its commands (see shell_words.h): enough of
 * bash's quoting and expansion for the launch scripts of Megatron-LM's examples/ (arrays of
 * flags spliced into a torchrun line), nothing that needs running the script.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shell_words.h"

/* Caps that keep a hostile script bounded in time and memory (a real launch script is a few
 * kB of words): one word, one array or command, all words produced, the variables. Doubling
 * A="$A$A" forty times would otherwise ask for 2^40 bytes. */
#define SH_WORD_MAX    65536u
#define SH_WORDS_MAX   65536u
#define SH_TOTAL_BYTES (16u << 20)
#define SH_TOTAL_WORDS (1u << 20)
#define SH_VARS_MAX    4096u

struct buf {
    char *s;
    size_t n, cap;
};

struct var {
    char name[64];
    struct spsim_sh_words value; /* a scalar is one word */
};

struct sh {
    const char *p, *end;
    uint32_t line;
    const char *origin;
    struct spsim_error *err;
    struct var *vars;
    size_t nvars, capvars;
    size_t bytes, words; /* produced so far, against SH_TOTAL_BYTES and SH_TOTAL_WORDS */
    int rc;
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
oom(struct sh *s)
{
    if (s->rc == SPSIM_OK)
        s->rc = spsim_fail(s->err, SPSIM_ENOMEM, "out of memory");
    return s->rc;
}

static int
syntax(struct sh *s, const char *what)
{
    if (s->rc == SPSIM_OK)
        s->rc = spsim_fail(s->err, SPSIM_EPARSE, "%s:%u: %s", s->origin, s->line, what);
    return s->rc;
}

static void
put(struct sh *s, struct buf *b, const char *text, size_t len)
{
    if (s->rc != SPSIM_OK)
        return;
    if (b->n + len > SH_WORD_MAX) {
        syntax(s, "a word longer than 65536 bytes (spsim's cap)");
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

static void
push_word(struct sh *s, struct spsim_sh_words *ws, const char *text, size_t len, uint32_t line,
          const char *unresolved)
{
    if (s->rc != SPSIM_OK)
        return;
    if (ws->n >= SH_WORDS_MAX) {
        syntax(s, "more than 65536 words in one array or command (spsim's cap)");
        return;
    }
    s->bytes += len;
    if (++s->words > SH_TOTAL_WORDS || s->bytes > SH_TOTAL_BYTES) {
        syntax(s, "the script expands to more than 16 MiB of words (spsim's cap)");
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

static int
peek(const struct sh *s)
{
    return s->p < s->end ? (unsigned char)*s->p : -1;
}

static int
take(struct sh *s)
{
    int c = peek(s);
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
finish(struct sh *s, struct wordb *wb, struct spsim_sh_words *ws)
{
    if (wb->text.n || wb->quoted)
        push_word(s, ws, wb->text.s ? wb->text.s : "", wb->text.n, wb->line, wb->unresolved);
    free(wb->text.s);
    memset(wb, 0, sizeof(*wb));
    wb->line = s->line;
}

static struct var *
var_find(struct sh *s, const char *name)
{
    for (size_t i = 0; i < s->nvars; i++)
        if (strcmp(s->vars[i].name, name) == 0)
            return &s->vars[i];
    return NULL;
}

/* NAME=WORDS (or NAME+=WORDS): the variable takes (or appends) the words. */
static void
var_set(struct sh *s, const char *name, struct spsim_sh_words *words, bool append)
{
    struct var *v = var_find(s, name);
    void *p = s->vars;
    if (!v && s->nvars >= SH_VARS_MAX) {
        spsim_sh_words_free(words);
        syntax(s, "more than 4096 variables (spsim's cap)");
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
        push_word(s, &v->value, w->text, strlen(w->text), w->line, w->unresolved);
    }
    spsim_sh_words_free(words);
}

/* A value's words into the word being built: each element is a word of its own, and an
 * unquoted expansion is split on blanks as bash splits it. */
static void
splice(struct sh *s, struct wordb *wb, struct spsim_sh_words *ws, const struct spsim_sh_words *v,
       bool quoted)
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
            if (w->unresolved[0])
                mark(wb, w->unresolved);
            put(s, &wb->text, t, 1);
        }
    }
}

/* Skip a balanced $( ... ) or $(( ... )) (quotes inside respected). */
static void
skip_parens(struct sh *s)
{
    int depth = 0, quote = 0;
    do {
        int c = take(s);
        if (c < 0) {
            syntax(s, "unterminated $( ... )");
            return;
        }
        if (quote) {
            if (c == '\\' && quote == '"')
                take(s);
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

/* ${...}: NAME, NAME[@], NAME[*], NAME:-WORD, NAME-WORD; anything else stays unresolved. */
static void
expand_braces(struct sh *s, struct wordb *wb, struct spsim_sh_words *ws, bool quoted)
{
    char body[256];
    size_t n = 0;
    for (int c; (c = take(s)) != '}';) {
        if (c < 0 || c == '\n')
            return (void)syntax(s, "unterminated ${ ... }");
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
    struct var *v = name && (all || dflt || !*rest) ? var_find(s, body) : NULL;
    if (v && v->value.n) {
        struct spsim_sh_words first = {v->value.w, all ? v->value.n : 1, 0};
        splice(s, wb, ws, &first, quoted);
    } else if (dflt) {
        for (; *dflt; dflt++)
            if (*dflt != '"' && *dflt != '\'')
                put(s, &wb->text, dflt, 1);
        if (strchr(text, '$') != strrchr(text, '$'))
            mark(wb, text);
    } else if (!v) {
        put(s, &wb->text, text, strlen(text));
        mark(wb, name && (all || !*rest) ? body : text);
    }
}

/* After a '$': the expansion into the word being built. */
static void
expand(struct sh *s, struct wordb *wb, struct spsim_sh_words *ws, bool quoted)
{
    int c = peek(s);
    if (c == '(') {
        skip_parens(s);
        put(s, &wb->text, "$(...)", 6);
        mark(wb, "$(...)");
    } else if (c == '{') {
        take(s);
        expand_braces(s, wb, ws, quoted);
    } else if (c >= 0 && (isalpha(c) || c == '_')) {
        char name[64];
        size_t n = 0;
        while ((c = peek(s)) >= 0 && (isalnum(c) || c == '_'))
            if (n + 1 < sizeof(name))
                name[n++] = (char)take(s);
            else
                take(s);
        name[n] = '\0';
        struct var *v = var_find(s, name);
        if (v) {
            struct spsim_sh_words first = {v->value.w, v->value.n ? 1 : 0, 0};
            splice(s, wb, ws, &first, quoted);
        } else {
            put(s, &wb->text, "$", 1);
            put(s, &wb->text, name, n);
            mark(wb, name);
        }
    } else if (c >= 0 && strchr("0123456789@*#?$!-", c)) {
        char name[3] = {'$', (char)take(s), '\0'};
        put(s, &wb->text, name, 2);
        mark(wb, name);
    } else {
        put(s, &wb->text, "$", 1);
    }
}

/* Inside "...": backslash escapes $ ` " \ and newline only; expansions are not split. */
static void
double_quoted(struct sh *s, struct wordb *wb, struct spsim_sh_words *ws)
{
    wb->quoted = true;
    uint32_t start = s->line;
    for (int c; s->rc == SPSIM_OK;) {
        if ((c = take(s)) < 0 && (s->line = start))
            return (void)syntax(s, "unterminated double quote");
        if (c == '"')
            return;
        if (c == '\\' && peek(s) >= 0 && strchr("$`\"\\\n", peek(s))) {
            if ((c = take(s)) == '\n')
                continue;
        } else if (c == '$') {
            expand(s, wb, ws, true);
            continue;
        } else if (c == '`') {
            while ((c = take(s)) >= 0 && c != '`')
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
static void
read_word(struct sh *s, struct spsim_sh_words *ws)
{
    struct wordb wb = {.line = s->line};
    for (int c; s->rc == SPSIM_OK && !word_end(c = peek(s), &wb);) {
        take(s);
        if (c == '\\') {
            if ((c = take(s)) == '\n' || c < 0)
                continue;
        } else if (c == '\'') {
            wb.quoted = true;
            uint32_t start = s->line;
            while ((c = take(s)) != '\'' && s->rc == SPSIM_OK)
                if (c < 0 && (s->line = start))
                    syntax(s, "unterminated single quote");
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
            while ((c = take(s)) >= 0 && c != '`')
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
static void
skip_blanks(struct sh *s, bool newlines)
{
    for (int c; (c = peek(s)) >= 0;) {
        if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n'))
            take(s);
        else if (c == '\\' && s->p + 1 < s->end && s->p[1] == '\n')
            take(s), take(s);
        else if (newlines && c == '#')
            while (peek(s) >= 0 && peek(s) != '\n')
                take(s);
        else
            return;
    }
}

/* NAME= or NAME+= at the cursor: the name's length, else 0. */
static size_t
assignment_at(const struct sh *s, bool *append)
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
assign(struct sh *s, size_t n, bool append)
{
    char name[64];
    struct spsim_sh_words words = {0};
    memcpy(name, s->p, n);
    name[n] = '\0';
    s->p += n + append + 1;
    if (peek(s) == '(') {
        uint32_t start = s->line;
        take(s);
        for (skip_blanks(s, true); s->rc == SPSIM_OK && peek(s) != ')'; skip_blanks(s, true)) {
            const char *before = s->p;
            if (peek(s) >= 0 && peek(s) != '(')
                read_word(s, &words);
            if (s->p == before) { /* EOF, or ( ; & | where a word should be */
                char what[64];
                s->line = peek(s) < 0 ? start : s->line;
                snprintf(what, sizeof(what),
                         peek(s) < 0 ? "unterminated array" : "'%c' inside an array", peek(s));
                return (void)(syntax(s, what), spsim_sh_words_free(&words));
            }
        }
        take(s);
    } else if (!word_end(peek(s), &(struct wordb){0})) {
        struct spsim_sh_words parts = {0};
        read_word(s, &parts);
        struct buf joined = {0};
        for (size_t i = 0; i < parts.n; i++) {
            put(s, &joined, " ", i > 0);
            put(s, &joined, parts.w[i].text, strlen(parts.w[i].text));
        }
        const char *unresolved = NULL;
        for (size_t i = 0; i < parts.n && !unresolved; i++)
            unresolved = parts.w[i].unresolved[0] ? parts.w[i].unresolved : NULL;
        push_word(s, &words, joined.s ? joined.s : "", joined.n, s->line, unresolved);
        free(joined.s);
        spsim_sh_words_free(&parts);
    } else {
        push_word(s, &words, "", 0, s->line, NULL);
    }
    var_set(s, name, &words, append);
}

/* Words that open control flow, whose branches cannot be followed without running. */
static bool
control_word(const char *w)
{
    static const char *const words[] = {
        "if",   "then", "elif",   "else",     "fi", "for", "while", "until", "do",   "done",
        "case", "esac", "select", "function", "[[", "[",   "{",     "}",     "test", NULL};
    for (const char *const *k = words; *k; k++)
        if (strcmp(*k, w) == 0)
            return true;
    return false;
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

/* The words of one command up to ; & | or a newline; assignments applied. */
static void
statement(struct sh *s, struct spsim_sh_words *cmd)
{
    bool prefix = true, append;
    size_t n, drop = 0;
    for (int c; s->rc == SPSIM_OK;) {
        skip_blanks(s, false);
        if ((c = peek(s)) < 0)
            break;
        if (c == '#') {
            while (peek(s) >= 0 && peek(s) != '\n')
                take(s);
        } else if (strchr("\n;&|", c)) {
            take(s);
            if (c != '\n' && c != ';' && peek(s) == c)
                take(s);
            break;
        } else if (c == '(' || c == ')') {
            syntax(s, "a subshell or a group ( ... ) is not followed");
        } else if (prefix && (n = assignment_at(s, &append))) {
            assign(s, n, append);
        } else {
            read_word(s, cmd);
            const char *w = cmd->n ? cmd->w[cmd->n - 1].text : "";
            if (prefix && control_word(w)) {
                char what[96];
                snprintf(what, sizeof(what),
                         "'%s': shell control flow is not followed (give the launch command "
                         "with its values)",
                         w);
                syntax(s, what);
            }
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
}

/* The environment's NAME=VALUE words, set before the script runs. */
static int
environment(struct sh *s, const char *const *env, size_t nenv)
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
        push_word(s, &value, e + n + 1, strlen(e + n + 1), 0, NULL);
        var_set(s, name, &value, false);
    }
    return s->rc;
}

int
spsim_sh_parse(const char *text, size_t len, const char *origin, const char *const *env,
               size_t nenv, struct spsim_sh_script *out, struct spsim_error *err)
{
    struct sh s = {.p = text, .end = text + len, .line = 1, .origin = origin, .err = err};
    memset(out, 0, sizeof(*out));
    s.rc = environment(&s, env, nenv);
    while (s.rc == SPSIM_OK && peek(&s) >= 0) {
        struct spsim_sh_words cmd = {0};
        statement(&s, &cmd);
        if (s.rc == SPSIM_OK && cmd.n && spsim_sh_add_command(out, &cmd) != SPSIM_OK)
            oom(&s);
        spsim_sh_words_free(&cmd);
    }
    for (size_t i = 0; i < s.nvars; i++)
        spsim_sh_words_free(&s.vars[i].value);
    free(s.vars);
    if (s.rc != SPSIM_OK)
        spsim_sh_free(out);
    return s.rc;
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
    struct sh s = {.rc = SPSIM_OK};
    push_word(&s, ws, text, strlen(text), line, NULL);
    if (s.rc == SPSIM_OK && key)
        snprintf(ws->w[ws->n - 1].key, sizeof(ws->w[ws->n - 1].key), "%s", key);
    return s.rc;
}
