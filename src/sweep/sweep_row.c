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

/* Room for the last row: SPSIM_ROW_MAX beside names of up to as much. */
#define ROW_COPY (2 * SPSIM_ROW_MAX)

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
    free(w->row);
    free(w->start);
    free(w->changed);
    free(w->probe);
    memset(w, 0, sizeof(*w));
}

/* The field whose column is `name` (`len` bytes), of the main table or the optimizer or HSDP
 * object's (named only by --columns); NULL when none is. */
static const struct spsim_field *
field_of_column(const char *name, size_t len)
{
    for (int table = 0; table < 3; table++) {
        const struct spsim_field *fields;
        size_t n = table == 2   ? spsim_result_hsdp_fields(&fields)
                   : table == 1 ? spsim_result_optimizer_fields(&fields)
                                : spsim_result_fields(&fields);
        for (size_t i = 0; i < n; i++) {
            char col[128];
            if (column_name(fields[i].path, col) == len && memcmp(col, name, len) == 0)
                return &fields[i];
        }
    }
    return NULL;
}

/* Column `name` ("model", "hw" or a field's) as the writer's next column: its field or kind,
 * and the text before it (CSV ','; JSONL ',"name":'; the first column's without the comma). */
static int
add_column(struct spsim_row_writer *w, const char *name, size_t len, const struct spsim_field *f)
{
    size_t i = w->ncolumns++;
    bool json = w->format == SPSIM_ROW_JSONL;
    w->columns[i].field = f;
    w->columns[i].name = f ? 0 : len == 5 ? 1 : 2; /* model, hw */
    w->columns[i].size = f ? value_size(f->type) : 0;
    w->columns[i].offset = f ? f->offset : 0;
    memset(&w->columns[i].mask, 0xff, w->columns[i].size); /* the first `size` bytes */
    if (f && f->offset + sizeof(uint64_t) > sizeof(struct spsim_result))
        w->wide_loads = false;
    if (!(w->prefix[i] = spsim_calloc(len + 5, 1)))
        return SPSIM_ENOMEM;
    char *p = w->prefix[i];
    size_t n = 0;
    if (json) {
        p[n++] = i ? ',' : '{';
        p[n++] = '"';
        memcpy(p + n, name, len);
        memcpy(p + n + len, "\":", 2);
        n += len + 2;
    } else if (i) {
        p[n++] = ',';
    }
    w->prefix_len[i] = (uint8_t)n;
    return SPSIM_OK;
}

/* Every column: model, hw, then each field in the table's order. */
static int
add_all_columns(struct spsim_row_writer *w)
{
    const struct spsim_field *fields;
    size_t n = spsim_result_fields(&fields);
    int rc = add_column(w, "model", 5, NULL);
    if (rc == SPSIM_OK)
        rc = add_column(w, "hw", 2, NULL);
    for (size_t i = 0; rc == SPSIM_OK && i < n; i++) {
        char name[128];
        rc = add_column(w, name, column_name(fields[i].path, name), &fields[i]);
    }
    return rc;
}

int
spsim_row_columns_check(const char *columns, struct spsim_error *err)
{
    if (!columns || !*columns)
        return spsim_fail(err, SPSIM_EINVAL, "columns: the list is empty");
    /* Every item up to the end, so that "tp," has an empty last one. */
    for (const char *p = columns, *end = p; *end; p = end + 1) {
        end = strchr(p, ',');
        end = end ? end : p + strlen(p);
        size_t len = (size_t)(end - p);
        if (len == 0)
            return spsim_fail(err, SPSIM_EINVAL, "columns: an empty name in %s", SPSIM_Q(columns));
        bool named = (len == 5 && memcmp(p, "model", 5) == 0) || (len == 2 && !memcmp(p, "hw", 2));
        if (!named && !field_of_column(p, len))
            return spsim_fail(err, SPSIM_EINVAL,
                              "columns: %s is not a column (the header of 'spsim query "
                              "--format csv' lists them)",
                              SPSIM_QN(p, len));
        for (const char *q = columns; q < p; q = strchr(q, ',') + 1)
            if (strncmp(q, p, len) == 0 && (q[len] == ',' || q[len] == '\0'))
                return spsim_fail(err, SPSIM_EINVAL, "columns: %s is listed twice",
                                  SPSIM_QN(p, len));
    }
    return SPSIM_OK;
}

int
spsim_row_writer_init(struct spsim_row_writer *w, enum spsim_row_format format, const char *columns)
{
    memset(w, 0, sizeof(*w));
    const struct spsim_field *fields;
    size_t cap = spsim_result_fields(&fields) + spsim_result_optimizer_fields(&fields) +
                 spsim_result_hsdp_fields(&fields) + 2,
           longest = 32; /* braces, line break */
    w->format = format;
    w->wide_loads = true; /* unless a column ends the struct (add_column) */
    w->columns = spsim_calloc(cap, sizeof(*w->columns));
    w->prefix = spsim_calloc(cap, sizeof(*w->prefix));
    w->prefix_len = spsim_calloc(cap, sizeof(*w->prefix_len));
    w->row = spsim_calloc(ROW_COPY, 1);
    w->start = spsim_calloc(cap, sizeof(*w->start));
    w->changed = spsim_calloc(cap, sizeof(*w->changed));
    w->probe = spsim_calloc(cap, sizeof(*w->probe));
    int rc =
        w->columns && w->prefix && w->prefix_len && w->row && w->start && w->changed && w->probe
            ? SPSIM_OK
            : SPSIM_ENOMEM;
    if (rc == SPSIM_OK && !columns)
        rc = add_all_columns(w);
    for (const char *p = columns, *end; rc == SPSIM_OK && p && *p; p = *end ? end + 1 : end) {
        end = strchr(p, ',');
        end = end ? end : p + strlen(p);
        if (w->ncolumns == cap)
            rc = SPSIM_EINVAL; /* a column twice: spsim_row_columns_check refuses it */
        else
            rc = add_column(w, p, (size_t)(end - p), field_of_column(p, (size_t)(end - p)));
    }
    for (size_t i = 0; i < w->ncolumns; i++)
        longest += w->prefix_len[i] + SPSIM_ROW_CELL;
    /* Every row fits in SPSIM_ROW_MAX beside its two names (the bound callers reserve). */
    if (rc != SPSIM_OK || longest > SPSIM_ROW_MAX) {
        spsim_row_writer_free(w);
        return rc == SPSIM_OK ? SPSIM_ENOMEM : rc;
    }
    return SPSIM_OK;
}

size_t
spsim_row_writer_header(const struct spsim_row_writer *w, char *buf, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < w->ncolumns; i++) {
        const struct spsim_row_column *c = &w->columns[i];
        char name[128] = "model";
        size_t len = c->field ? column_name(c->field->path, name) : c->name == 1 ? 5 : 2;
        if (c->name == 2)
            memcpy(name, "hw", 3);
        if (n + len + 3 > cap)
            return 0;
        if (i)
            buf[n++] = ',';
        memcpy(buf + n, name, len);
        n += len;
    }
    buf[n++] = '\n';
    buf[n] = '\0';
    return n;
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

/* The column's value `v` changed: take the text of the value before when it comes back, else
 * format it; the text replaced becomes the value before. */
static void
column_update(struct spsim_row_column *c, enum spsim_row_format format,
              const struct spsim_result *r, uint64_t v)
{
    char text[SPSIM_ROW_CELL];
    uint64_t last = c->last;
    uint8_t len = c->len;
    bool known = c->known;
    memcpy(text, c->text, SPSIM_ROW_CELL);
    if (c->known_prev && v == c->prev) {
        memcpy(c->text, c->prev_text, SPSIM_ROW_CELL);
        c->len = c->prev_len;
    } else {
        column_format(c, format, r);
    }
    c->last = v;
    c->known = true;
    c->prev = last;
    c->prev_len = len;
    c->known_prev = known;
    memcpy(c->prev_text, text, SPSIM_ROW_CELL);
}

/* The row's cells, each formatted or copied from its column's memory; kept as the row later
 * ones copy from (when it fits: names are of any length). */
static size_t
row_cells(struct spsim_row_writer *w, const char *model, const char *hw,
          const struct spsim_result *r, char *out)
{
    size_t n = 0, names = 0;
    bool csv = w->format == SPSIM_ROW_CSV;
    for (size_t i = 0; i < w->ncolumns; i++) {
        struct spsim_row_column *c = &w->columns[i];
        if (csv) { /* the prefix is a comma but before the first cell: no call to copy it */
            out[n] = ',';
            n += i > 0;
        } else {
            memcpy(out + n, w->prefix[i], w->prefix_len[i]);
            n += w->prefix_len[i];
        }
        w->start[i] = (uint32_t)n;
        if (c->name) {
            const char *name = c->name == 1 ? model : hw;
            size_t len = strlen(name);
            memcpy(out + n, name, len);
            n += len;
            names += len;
            continue;
        }
        uint64_t v = raw_value(c, r);
        if (!c->known || v != c->last)
            column_update(c, w->format, r, v);
        w->probe[i] = (struct spsim_row_probe){c->last, c->mask, c->offset};
        /* The whole cell buffer, a fixed size the compiler copies in two moves. */
        memcpy(out + n, c->text, SPSIM_ROW_CELL);
        n += c->len;
    }
    /* Rows then stay within SPSIM_ROW_MAX beside the names (spsim_row_writer_init). */
    w->primed = w->wide_loads && names <= SPSIM_ROW_MAX;
    if (w->primed) {
        memcpy(w->row, out, n);
        w->row_len = n;
        w->last_model = model;
        w->last_hw = hw;
    }
    return n;
}

/* The columns whose value differs from the last row's (names: mask 0, never), in order. */
static size_t
changed_columns(struct spsim_row_writer *w, const struct spsim_result *r)
{
    const char *base = (const char *)r;
    const struct spsim_row_probe *p = w->probe;
    uint32_t *changed = w->changed;
    size_t k = 0, ncolumns = w->ncolumns; /* not read again after each store */
    for (size_t i = 0; i < ncolumns; i++) {
        uint64_t v;
        memcpy(&v, base + p[i].offset, sizeof(v));
        changed[k] = (uint32_t)i;
        k += (v & p[i].mask) != p[i].last;
    }
    return k;
}

/* The row as the last one with its changed cells replaced: the text between them is copied
 * in spans, and the cells after a changed one move by its change of length. */
static size_t
row_spans(struct spsim_row_writer *w, const struct spsim_result *r, char *out)
{
    size_t k = changed_columns(w, r), n = 0, from = 0, next = 0;
    int64_t delta = 0;
    for (size_t j = 0; j < k; j++) {
        uint32_t i = w->changed[j];
        struct spsim_row_column *c = &w->columns[i];
        size_t s = w->start[i], old = c->len;
        for (; delta && next <= i; next++)
            w->start[next] = (uint32_t)((int64_t)w->start[next] + delta);
        next = i + 1;
        memcpy(out + n, w->row + from, s - from);
        n += s - from;
        uint64_t v;
        memcpy(&v, (const char *)r + c->offset, sizeof(v));
        column_update(c, w->format, r, v & c->mask);
        w->probe[i].last = c->last;
        memcpy(out + n, c->text, SPSIM_ROW_CELL);
        n += c->len;
        from = s + old;
        delta += (int64_t)c->len - (int64_t)old;
    }
    for (; delta && next < w->ncolumns; next++)
        w->start[next] = (uint32_t)((int64_t)w->start[next] + delta);
    memcpy(out + n, w->row + from, w->row_len - from);
    n += w->row_len - from;
    memcpy(w->row, out, n);
    w->row_len = n;
    return n;
}

size_t
spsim_row_writer_row(struct spsim_row_writer *w, const char *model, const char *hw,
                     const struct spsim_result *r, char *out)
{
    size_t n = w->primed && model == w->last_model && hw == w->last_hw
                   ? row_spans(w, r, out)
                   : row_cells(w, model, hw, r, out);
    if (w->format == SPSIM_ROW_JSONL)
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
    struct spsim_row_writer w;
    if (format != SPSIM_ROW_CSV || spsim_row_writer_init(&w, format, NULL) != SPSIM_OK)
        return 0;
    size_t n = spsim_row_writer_header(&w, buf, cap);
    spsim_row_writer_free(&w);
    if (n == 0)
        buf[0] = '\0';
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
    if (model && hw && row && spsim_row_writer_init(&w, format, NULL) == SPSIM_OK) {
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
