/* A small streaming JSON writer (exact integers, shortest round-trip doubles), result sections. */
#include "config.h"

#include <string.h>

#include "cli.h"

void
jw_init(struct jw *w, FILE *f, bool pretty)
{
    memset(w, 0, sizeof(*w));
    w->f = f;
    w->pretty = pretty;
    w->first[0] = true;
}

static void
indent(struct jw *w)
{
    if (!w->pretty)
        return;
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->f);
}

static void
write_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void
member(struct jw *w, const char *key)
{
    if (w->depth > 0) {
        if (!w->first[w->depth])
            fputc(',', w->f);
        w->first[w->depth] = false;
        indent(w);
    }
    if (key) {
        write_string(w->f, key);
        fputs(w->pretty ? ": " : ":", w->f);
    }
}

static void
open_container(struct jw *w, const char *key, char c)
{
    member(w, key);
    fputc(c, w->f);
    w->depth++;
    w->first[w->depth] = true;
}

static void
close_container(struct jw *w, char c)
{
    bool empty = w->first[w->depth];
    w->depth--;
    if (!empty)
        indent(w);
    fputc(c, w->f);
}

void
jw_begin_object(struct jw *w, const char *key)
{
    open_container(w, key, '{');
}

void
jw_end_object(struct jw *w)
{
    close_container(w, '}');
}

void
jw_begin_array(struct jw *w, const char *key)
{
    open_container(w, key, '[');
}

void
jw_end_array(struct jw *w)
{
    close_container(w, ']');
}

void
jw_string(struct jw *w, const char *key, const char *value)
{
    member(w, key);
    write_string(w->f, value ? value : "");
}

void
jw_u64(struct jw *w, const char *key, uint64_t value)
{
    char buf[32];
    spsim_format_u64(value, buf);
    jw_raw(w, key, buf);
}

void
jw_i64(struct jw *w, const char *key, int64_t value)
{
    member(w, key);
    fprintf(w->f, "%lld", (long long)value);
}

void
jw_double(struct jw *w, const char *key, double value)
{
    char buf[32];
    spsim_format_double(value, buf);
    /* JSON has no NaN or infinity. */
    jw_raw(w, key, buf[0] == 'n' || buf[0] == 'i' || buf[1] == 'i' ? "null" : buf);
}

void
jw_bool(struct jw *w, const char *key, bool value)
{
    jw_raw(w, key, value ? "true" : "false");
}

void
jw_raw(struct jw *w, const char *key, const char *text)
{
    member(w, key);
    fputs(text, w->f);
}

void
jw_finish(struct jw *w)
{
    fputc('\n', w->f);
}
