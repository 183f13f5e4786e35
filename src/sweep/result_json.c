/*
 * The JSON document of one result, as `spsim query --format json` prints it and the Python
 * module returns it: the names, then every field of spsim_result_fields() nested by its path,
 * the warnings and the layer's collectives. One writer, so the two can never disagree.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "spsim/fields.h"
#include "spsim/parallel.h"
#include "sweep_internal.h"

/* Pretty printing with two spaces per level; an empty container stays "[]" or "{}". The text
 * grows in a buffer of its own: a memstream's locked fputs and fwrite were a fifth of a
 * `spsim query --format json`'s instructions. */
struct jdoc {
    struct spsim_text text;
    int depth;
    bool first[8];
    bool failed; /* out of memory quoting a string */
};

static void
jd_puts(struct jdoc *d, const char *s)
{
    spsim_text_put(&d->text, s, strlen(s));
}

static void
jd_putc(struct jdoc *d, char c)
{
    spsim_text_put(&d->text, &c, 1);
}

/* Two spaces per level, written at once (fprintf and a call per level were a fifth of a short
 * `spsim query --format json`'s instructions). */
static void
indent_to(struct jdoc *d, int depth)
{
    static const char spaces[] = "                                ";
    for (size_t left = 2 * (size_t)depth; left > 0;) {
        size_t n = left < sizeof(spaces) - 1 ? left : sizeof(spaces) - 1;
        spsim_text_put(&d->text, spaces, n);
        left -= n;
    }
}

static void
jd_key(struct jdoc *d, const char *key)
{
    if (d->depth > 0) {
        jd_puts(d, d->first[d->depth] ? "\n" : ",\n");
        d->first[d->depth] = false;
        indent_to(d, d->depth);
    }
    if (key) { /* keys are the field table's identifiers: nothing to escape */
        jd_putc(d, '"');
        jd_puts(d, key);
        jd_puts(d, "\": ");
    }
}

static void
jd_open(struct jdoc *d, const char *key, char c)
{
    jd_key(d, key);
    jd_putc(d, c);
    d->first[++d->depth] = true;
}

static void
jd_close(struct jdoc *d, char c)
{
    if (!d->first[d->depth--]) {
        jd_putc(d, '\n');
        indent_to(d, d->depth);
    }
    jd_putc(d, c);
}

static void
jd_raw(struct jdoc *d, const char *key, const char *text)
{
    jd_key(d, key);
    jd_puts(d, text);
}

static void
jd_string(struct jdoc *d, const char *key, const char *value)
{
    char *q = spsim_row_quote(SPSIM_ROW_JSONL, value ? value : "");
    d->failed |= !q;
    jd_raw(d, key, q ? q : "\"\"");
    free(q);
}

/* JSON has no NaN or infinity: spsim_format_double's "nan", "inf", "-inf" become null. */
static const char *
jd_number(const char *text)
{
    return text[0] == 'n' || text[0] == 'i' || text[1] == 'i' ? "null" : text;
}

/* The fields of the table (n of them) under `section.`, opening one sub-object per deeper path
 * prefix. */
static void
jd_section(struct jdoc *d, const struct spsim_result *r, const struct spsim_field *fields, size_t n,
           const char *section)
{
    size_t plen = strlen(section);
    char open_sub[64] = "";
    for (size_t i = 0; i < n; i++) {
        const char *path = fields[i].path;
        if (strncmp(path, section, plen) != 0 || path[plen] != '.')
            continue;
        const char *rest = path + plen + 1, *dot = strchr(rest, '.');
        char sub[64] = "", buf[64];
        if (dot)
            snprintf(sub, sizeof(sub), "%.*s", (int)(dot - rest), rest);
        if (strcmp(sub, open_sub) != 0) {
            if (open_sub[0])
                jd_close(d, '}');
            if (sub[0])
                jd_open(d, sub, '{');
            snprintf(open_sub, sizeof(open_sub), "%s", sub);
        }
        spsim_field_format(&fields[i], r, buf, sizeof(buf));
        const char *key = dot ? dot + 1 : rest;
        if (fields[i].type == SPSIM_FIELD_ENUM)
            jd_string(d, key, buf);
        else
            jd_raw(d, key, fields[i].type == SPSIM_FIELD_F64 ? jd_number(buf) : buf);
    }
    if (open_sub[0])
        jd_close(d, '}');
}

static void
jd_collective(struct jdoc *d, const struct spsim_collective_entry *e)
{
    char buf[32];
    jd_open(d, NULL, '{');
    jd_string(d, "phase", spsim_phase_name(e->phase));
    jd_string(d, "op", spsim_coll_op_name(e->op));
    jd_string(d, "site", e->site);
    jd_raw(d, "message_bytes", (spsim_format_u64(e->message_bytes, buf), buf));
    jd_raw(d, "wire_bytes_per_rank", (spsim_format_u64(e->wire_bytes_per_rank, buf), buf));
    jd_raw(d, "group_size", (spsim_format_u64(e->group_size, buf), buf));
    jd_string(d, "tier", spsim_tier_name(e->tier));
    jd_string(d, "overlap", spsim_overlap_name(e->overlap));
    jd_raw(d, "time_s", (spsim_format_double(e->time_s, buf), jd_number(buf)));
    jd_raw(d, "exposed_s", (spsim_format_double(e->exposed_s, buf), jd_number(buf)));
    jd_close(d, '}');
}

static void
jd_document(struct jdoc *d, const struct spsim_result *r, const char *model, const char *hw)
{
    static const char *const sections[] = {"config", "warnings", "memory", "comm", "time"};
    jd_open(d, NULL, '{');
    jd_string(d, "spsim_version", spsim_version());
    jd_string(d, "model", model);
    jd_string(d, "hardware", hw);
    for (size_t s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
        if (strcmp(sections[s], "warnings") == 0) {
            jd_open(d, "warnings", '[');
            for (uint32_t bit = 1; bit < (1u << SPSIM_WARN_COUNT_); bit <<= 1)
                if (r->warnings & bit)
                    jd_string(d, NULL, spsim_warning_text(bit));
            jd_close(d, ']');
            continue;
        }
        jd_open(d, sections[s], '{');
        if (strcmp(sections[s], "comm") == 0) {
            jd_open(d, "per_layer", '[');
            for (uint32_t i = 0; i < r->comm.per_layer_count; i++)
                jd_collective(d, &r->comm.per_layer[i]);
            jd_close(d, ']');
        }
        const struct spsim_field *fields;
        size_t n = spsim_result_fields(&fields);
        jd_section(d, r, fields, n, sections[s]);
        jd_close(d, '}');
    }
    if (spsim_result_optimizer_shown(r)) { /* Adam's documents as they were */
        const struct spsim_field *fields;
        size_t n = spsim_result_optimizer_fields(&fields);
        jd_open(d, "optimizer", '{');
        jd_section(d, r, fields, n, "optimizer");
        jd_close(d, '}');
    }
    if (spsim_result_hsdp_shown(r)) { /* the other documents as they were */
        const struct spsim_field *fields;
        size_t n = spsim_result_hsdp_fields(&fields);
        jd_open(d, "hsdp", '{');
        jd_section(d, r, fields, n, "hsdp");
        jd_close(d, '}');
    }
    jd_close(d, '}');
    jd_putc(d, '\n');
}

int
spsim_result_to_json(const struct spsim_result *r, const char *model_name, const char *hw_name,
                     char **out, struct spsim_error *err)
{
    if (!r || !model_name || !hw_name || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_result_to_json: NULL argument");
    *out = NULL;
    struct jdoc d = {0};
    jd_document(&d, r, model_name, hw_name);
    if (d.failed || d.text.failed) {
        free(d.text.s);
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    }
    *out = d.text.s;
    return SPSIM_OK;
}
