/*
 * Checks of a profile's text that cJSON does not make: a NUL byte (cJSON skips it as blank),
 * nesting beyond cJSON's limit (reported by cJSON as a syntax error at the column where it
 * stopped), and strings that are not valid UTF-8 or hold U+0000 (cJSON keeps the bytes, or
 * cuts the string at the NUL, so "llama\u0000evil" would load as "llama").
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "jsonfield.h"

/* Line and column (1-based) of a byte offset. */
static void
line_column(const char *text, size_t offset, unsigned *line, unsigned *column)
{
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < offset; i++) {
        if (text[i] == '\n') {
            ++*line;
            *column = 1;
        } else {
            ++*column;
        }
    }
}

int
spsim_json_check_raw(const char *text, size_t len, const char *origin, bool *plain,
                     struct spsim_error *err)
{
    /* The bytes the loop acts on, outside and inside strings: the runs between them are
     * skipped by one table lookup a byte (a profile is mostly such runs). Inside a string a
     * byte above 0x7F stops the run too: it is what check_strings would have to validate. */
    static const bool outside[256] = {
        ['\0'] = 1, ['"'] = 1, ['['] = 1, ['{'] = 1, [']'] = 1, ['}'] = 1};
#define ROW16(b)                                                                                   \
    [b] = 1, [b + 1] = 1, [b + 2] = 1, [b + 3] = 1, [b + 4] = 1, [b + 5] = 1, [b + 6] = 1,         \
    [b + 7] = 1, [b + 8] = 1, [b + 9] = 1, [b + 10] = 1, [b + 11] = 1, [b + 12] = 1, [b + 13] = 1, \
    [b + 14] = 1, [b + 15] = 1
    static const bool inside[256] = {['\0'] = 1,  ['"'] = 1,   ['\\'] = 1,  ROW16(0x80),
                                     ROW16(0x90), ROW16(0xA0), ROW16(0xB0), ROW16(0xC0),
                                     ROW16(0xD0), ROW16(0xE0), ROW16(0xF0)};
#undef ROW16
    bool in_string = false;
    *plain = true;
    size_t depth = 0;
    for (size_t i = 0; i < len; i++) {
        const bool *acts = in_string ? inside : outside;
        while (i < len && !acts[(unsigned char)text[i]])
            i++;
        if (i == len)
            break;
        char c = text[i];
        unsigned line, column;
        if (c == '\0')
            return spsim_fail(err, SPSIM_EPARSE,
                              "%s: a NUL byte at byte offset %zu (a profile is UTF-8 text)", origin,
                              i);
        if (in_string) {
            if ((unsigned char)c > 0x7F || (c == '\\' && i + 1 < len && text[i + 1] == 'u'))
                *plain = false;
            if (c == '\\' && i + 1 < len && text[i + 1] != '\0')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > CJSON_NESTING_LIMIT) {
                line_column(text, i, &line, &column);
                return spsim_fail(err, SPSIM_EPARSE,
                                  "%s: JSON nested deeper than %d levels at line %u, column %u "
                                  "(byte offset %zu)",
                                  origin, CJSON_NESTING_LIMIT, line, column, i);
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return SPSIM_OK;
}

/* The length of the UTF-8 sequence at s (RFC 3629 §4: no overlong forms, no surrogates, at
 * most U+10FFFF), or 0 if it is not one. */
static size_t
utf8_length(const unsigned char *s, size_t room)
{
    if (s[0] < 0x80)
        return 1;
    size_t n = s[0] >= 0xC2 && s[0] <= 0xDF   ? 2
               : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
               : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4
                                              : 0;
    if (n == 0 || n > room)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) ||
        (s[0] == 0xF0 && s[1] < 0x90) || (s[0] == 0xF4 && s[1] > 0x8F))
        return 0;
    return n;
}

/* Where the walk over the document is: the key of each open object, the index in each open
 * array, for the field name of a message. */
struct walk {
    const char *text;
    size_t len, pos;
    const char *origin;
    struct spsim_error *err;
    char path[256];
};

/* Check the string starting at w->pos (its opening quote); on return w->pos is past it. */
static int
walk_string(struct walk *w, const char *field)
{
    const unsigned char *s = (const unsigned char *)w->text;
    size_t start = w->pos++;
    for (;;) {
        size_t p = w->pos; /* a run of plain ASCII, the common case, in a register */
        while (p < w->len && s[p] < 0x80 && s[p] != '"' && s[p] != '\\')
            p++;
        w->pos = p;
        if (p >= w->len || s[p] == '"')
            break;
        size_t n = 1;
        if (s[w->pos] == '\\') {
            n = s[w->pos + 1] == 'u' ? 6 : 2;
            if (n == 6 && w->pos + 6 <= w->len && memcmp(s + w->pos + 2, "0000", 4) == 0)
                return spsim_fail(w->err, SPSIM_EFIELD,
                                  "%s: field %s: the string at byte offset %zu holds \\u0000 "
                                  "(a NUL character)",
                                  w->origin, SPSIM_Q(field), start);
        } else if ((n = utf8_length(s + w->pos, w->len - w->pos)) == 0) {
            return spsim_fail(w->err, SPSIM_EFIELD,
                              "%s: field %s: invalid UTF-8 at byte offset %zu", w->origin,
                              SPSIM_Q(field), w->pos);
        }
        w->pos += n;
    }
    w->pos++;
    return SPSIM_OK;
}

/* cJSON skips every byte up to ' ' as a blank (cJSON.c buffer_skip_whitespace), not only the
 * four of RFC 8259; so must the walk, or it loses its place. */
static bool
is_blank(char c)
{
    return (unsigned char)c <= ' ';
}

static void
skip_blanks(struct walk *w)
{
    while (w->pos < w->len && is_blank(w->text[w->pos]))
        w->pos++;
}

/* Append `.key` (or `key` at the top) to the path, bytes outside printable ASCII as '?', so
 * that a message can name a key that is itself not valid UTF-8. */
static void
path_push_key(struct walk *w, size_t plen)
{
    size_t end = w->pos + 1, cap = sizeof(w->path);
    if (plen > 0 && plen + 1 < cap)
        w->path[plen++] = '.';
    for (; end < w->len && w->text[end] != '"'; end++) {
        if (w->text[end] == '\\')
            end++;
        unsigned char c = (unsigned char)w->text[end];
        if (plen + 1 < cap)
            w->path[plen++] = c >= 0x20 && c < 0x7F ? (char)c : '?';
    }
    w->path[plen < cap ? plen : cap - 1] = '\0';
}

static int walk_value(struct walk *w, unsigned depth);

static int
walk_members(struct walk *w, unsigned depth, bool object)
{
    size_t plen = strlen(w->path);
    char close = object ? '}' : ']';
    w->pos++;
    for (unsigned long index = 0;; index++) {
        skip_blanks(w);
        size_t start = w->pos;
        if (w->pos >= w->len || w->text[w->pos] == close)
            break;
        int rc = SPSIM_OK;
        if (object) {
            path_push_key(w, plen);
            if ((rc = walk_string(w, w->path)) != SPSIM_OK)
                return rc;
            skip_blanks(w);
            w->pos++; /* the ':' of a document cJSON has accepted */
        } else {
            snprintf(w->path + plen, sizeof(w->path) - plen, "[%lu]", index);
        }
        if ((rc = walk_value(w, depth + 1)) != SPSIM_OK)
            return rc;
        w->path[plen] = '\0';
        skip_blanks(w);
        if (w->pos < w->len && w->text[w->pos] == ',')
            w->pos++;
        else if (w->pos == start)
            return SPSIM_OK; /* not where a member starts: cJSON accepted the text, so never */
    }
    w->pos++;
    return SPSIM_OK;
}

static int
walk_value(struct walk *w, unsigned depth)
{
    skip_blanks(w);
    if (w->pos >= w->len || depth > CJSON_NESTING_LIMIT)
        return SPSIM_OK;
    char c = w->text[w->pos];
    if (c == '"')
        return walk_string(w, w->path);
    if (c == '{' || c == '[')
        return walk_members(w, depth, c == '{');
    while (w->pos < w->len && !is_blank(w->text[w->pos]) && !strchr(",]}", w->text[w->pos]))
        w->pos++; /* a number, true, false or null */
    return SPSIM_OK;
}

int
spsim_json_check_strings(const char *text, size_t len, const char *origin, struct spsim_error *err)
{
    struct walk w = {text, len, 0, origin, err, ""};
    return walk_value(&w, 0);
}
