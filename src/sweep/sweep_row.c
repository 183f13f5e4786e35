/*
 * Rows of results as CSV or JSON Lines. Columns: model, hw, the configuration fields named as
 * the query options (config.tp → tp), then every other field of spsim_result_fields() named by
 * its path with '.' as '_'. Values are spsim_field_format()'s text, so a row, `spsim query
 * --format csv` and the JSON writer agree by construction.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "dtoa.h"
#include "spsim/fields.h"
#include "sweep_internal.h"

/* The column's name: config.tp → tp, memory.total_bytes → memory_total_bytes. */
static size_t
column_name(const char *path, char *out)
{
    const char *p = strncmp(path, "config.", 7) == 0 ? path + 7 : path;
    size_t n = 0;
    for (; *p; p++)
        out[n++] = *p == '.' ? '_' : *p;
    out[n] = '\0';
    return n;
}

char *
spsim_row_quote(enum spsim_row_format format, const char *name)
{
    size_t len = strlen(name);
    char *out = spsim_calloc(6 * len + 3, 1);
    if (!out)
        return NULL;
    size_t n = 0;
    if (format == SPSIM_ROW_JSONL) {
        static const char hex[] = "0123456789abcdef";
        out[n++] = '"';
        for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
            if (*p == '"' || *p == '\\') {
                out[n++] = '\\';
                out[n++] = (char)*p;
            } else if (*p < 0x20) {
                memcpy(out + n, "\\u00", 4);
                out[n + 4] = hex[*p >> 4];
                out[n + 5] = hex[*p & 15];
                n += 6;
            } else {
                out[n++] = (char)*p;
            }
        }
        out[n++] = '"';
        return out;
    }
    /* RFC 4180: a field with a comma, a quote or a line break is quoted, quotes doubled. */
    if (!strpbrk(name, ",\"\r\n")) {
        memcpy(out, name, len + 1);
        return out;
    }
    out[n++] = '"';
    for (const char *p = name; *p; p++) {
        if (*p == '"')
            out[n++] = '"';
        out[n++] = *p;
    }
    out[n++] = '"';
    return out;
}

static uint8_t
value_size(enum spsim_field_type type)
{
    switch (type) {
    case SPSIM_FIELD_BOOL:
        return sizeof(bool);
    case SPSIM_FIELD_U32:
        return sizeof(uint32_t);
    case SPSIM_FIELD_ENUM:
        return sizeof(int);
    default:
        return sizeof(uint64_t);
    }
}

/* The field's bytes, zero-extended: equal bytes give equal text. */
static inline uint64_t
raw_value(const struct spsim_row_column *c, const struct spsim_result *r)
{
    const char *p = (const char *)r + c->field->offset;
    uint64_t v = 0;
    if (c->size == 8)
        memcpy(&v, p, 8);
    else if (c->size == 4)
        memcpy(&v, p, 4);
    else
        memcpy(&v, p, 1);
    return v;
}

void
spsim_row_writer_free(struct spsim_row_writer *w)
{
    for (size_t i = 0; w->prefix && i < w->ncolumns; i++)
        free(w->prefix[i]);
    free(w->prefix);
    free(w->prefix_len);
    free(w->columns);
    memset(w, 0, sizeof(*w));
}

int
spsim_row_writer_init(struct spsim_row_writer *w, enum spsim_row_format format)
{
    memset(w, 0, sizeof(*w));
    const struct spsim_field *fields;
    size_t longest = 32; /* braces, the two names' keys, the line break */
    w->format = format;
    w->ncolumns = spsim_result_fields(&fields);
    w->columns = spsim_calloc(w->ncolumns, sizeof(*w->columns));
    w->prefix = spsim_calloc(w->ncolumns, sizeof(*w->prefix));
    w->prefix_len = spsim_calloc(w->ncolumns, sizeof(*w->prefix_len));
    if (!w->columns || !w->prefix || !w->prefix_len)
        goto fail;
    for (size_t i = 0; i < w->ncolumns; i++) {
        char name[128];
        size_t n = column_name(fields[i].path, name);
        w->columns[i].field = &fields[i];
        w->columns[i].size = value_size(fields[i].type);
        if (!(w->prefix[i] = spsim_calloc(n + 5, 1)))
            goto fail;
        if (format == SPSIM_ROW_JSONL) {
            w->prefix[i][0] = ',';
            w->prefix[i][1] = '"';
            memcpy(w->prefix[i] + 2, name, n);
            memcpy(w->prefix[i] + 2 + n, "\":", 2);
            w->prefix_len[i] = (uint8_t)(n + 4);
        } else {
            w->prefix[i][0] = ',';
            w->prefix_len[i] = 1;
        }
        longest += w->prefix_len[i] + SPSIM_ROW_CELL;
    }
    /* Every row fits in SPSIM_ROW_MAX beside its two names (the bound callers reserve). */
    if (longest > SPSIM_ROW_MAX)
        goto fail;
    return SPSIM_OK;
fail:
    spsim_row_writer_free(w);
    return SPSIM_ENOMEM;
}

/* Format a column's value into its memory: JSONL writes enums as strings and non-finite
 * doubles as null (JSON has no NaN or infinity). */
static void
column_format(struct spsim_row_column *c, enum spsim_row_format format,
              const struct spsim_result *r)
{
    char text[64];
    size_t n = spsim_field_format(c->field, r, text, sizeof(text));
    bool json = format == SPSIM_ROW_JSONL;
    if (json && c->field->type == SPSIM_FIELD_ENUM && n + 2 < sizeof(c->text)) {
        c->text[0] = '"';
        memcpy(c->text + 1, text, n);
        c->text[n + 1] = '"';
        n += 2;
    } else if (json && c->field->type == SPSIM_FIELD_F64 &&
               (text[0] == 'n' || text[0] == 'i' || text[1] == 'i')) {
        memcpy(c->text, "null", 4);
        n = 4;
    } else {
        memcpy(c->text, text, n < sizeof(c->text) ? n : sizeof(c->text));
    }
    c->len = (uint8_t)(n < sizeof(c->text) ? n : sizeof(c->text));
}

size_t
spsim_row_writer_row(struct spsim_row_writer *w, const char *model, const char *hw,
                     const struct spsim_result *r, char *out)
{
    bool json = w->format == SPSIM_ROW_JSONL;
    size_t n = 0, ml = strlen(model), hl = strlen(hw);
    if (json) {
        memcpy(out, "{\"model\":", 9);
        n = 9;
    }
    memcpy(out + n, model, ml);
    n += ml;
    memcpy(out + n, json ? ",\"hw\":" : ",", json ? 6 : 1);
    n += json ? 6 : 1;
    memcpy(out + n, hw, hl);
    n += hl;
    for (size_t i = 0; i < w->ncolumns; i++) {
        struct spsim_row_column *c = &w->columns[i];
        uint64_t v = raw_value(c, r);
        if (!c->known || v != c->last) {
            c->last = v;
            c->known = true;
            column_format(c, w->format, r);
        }
        if (json) {
            memcpy(out + n, w->prefix[i], w->prefix_len[i]);
            n += w->prefix_len[i];
        } else {
            out[n++] = ',';
        }
        /* The whole cell buffer, a fixed size the compiler copies in two moves. */
        memcpy(out + n, c->text, SPSIM_ROW_CELL);
        n += c->len;
    }
    if (json)
        out[n++] = '}';
    out[n++] = '\n';
    out[n] = '\0';
    return n;
}

size_t
spsim_row_header(enum spsim_row_format format, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return 0;
    buf[0] = '\0';
    if (format != SPSIM_ROW_CSV)
        return 0;
    const struct spsim_field *fields;
    size_t nf = spsim_result_fields(&fields), n = 8;
    if (cap < n + 1)
        return 0;
    memcpy(buf, "model,hw", n);
    for (size_t i = 0; i < nf; i++) {
        char name[128];
        size_t len = column_name(fields[i].path, name);
        if (n + len + 3 > cap)
            return 0;
        buf[n++] = ',';
        memcpy(buf + n, name, len);
        n += len;
    }
    buf[n++] = '\n';
    buf[n] = '\0';
    return n;
}

size_t
spsim_row_format(enum spsim_row_format format, const char *model_name, const char *hw_name,
                 const struct spsim_result *result, char *buf, size_t cap)
{
    if (!model_name || !hw_name || !result || !buf || cap == 0 || format == SPSIM_ROW_NONE)
        return 0;
    struct spsim_row_writer w;
    char *model = spsim_row_quote(format, model_name), *hw = spsim_row_quote(format, hw_name);
    /* Names of any length, as the sweep writes them (spsim_sweep_run reserves the same). */
    char *row =
        model && hw ? spsim_calloc(SPSIM_ROW_MAX + strlen(model) + strlen(hw) + 8, 1) : NULL;
    size_t n = 0;
    if (model && hw && row && spsim_row_writer_init(&w, format) == SPSIM_OK) {
        n = spsim_row_writer_row(&w, model, hw, result, row);
        spsim_row_writer_free(&w);
    }
    if (n + 1 > cap)
        n = 0;
    memcpy(buf, row ? row : "", n);
    buf[n] = '\0';
    free(model);
    free(hw);
    free(row);
    return n;
}
