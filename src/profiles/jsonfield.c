/*
 * Field readers for the JSON profiles: types, ranges, sourced numbers, messages naming file and
 * field.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jsonfield.h"

int
spsim_json_parse(const char *text, size_t len, const char *origin, cJSON **out,
                 struct spsim_error *err)
{
    const char *end = NULL;
    bool plain = false;
    int rc = spsim_json_check_raw(text, len, origin, &plain, err);
    if (rc != SPSIM_OK)
        return rc;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!root) {
        /* cJSON leaves `end` at the byte where parsing failed. */
        size_t offset = end && end >= text ? (size_t)(end - text) : 0;
        if (offset > len)
            offset = len;
        unsigned line = 1, column = 1;
        for (size_t i = 0; i < offset; i++) {
            if (text[i] == '\n') {
                line++;
                column = 1;
            } else {
                column++;
            }
        }
        if (len == 0)
            return spsim_fail(err, SPSIM_EPARSE, "%s: malformed JSON: the file is empty", origin);
        return spsim_fail(err, SPSIM_EPARSE,
                          "%s: malformed JSON at line %u, column %u (byte offset %zu)", origin,
                          line, column, offset);
    }
    /* Trailing garbage after the document is an error too. */
    for (const char *p = end; p && p < text + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n' && *p != '\0') {
            cJSON_Delete(root);
            return spsim_fail(err, SPSIM_EPARSE,
                              "%s: malformed JSON: unexpected text after the document at byte "
                              "offset %zu",
                              origin, (size_t)(p - text));
        }
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return spsim_fail(err, SPSIM_EFIELD, "%s: the document must be a JSON object", origin);
    }
    /* Most profiles are ASCII without \u escapes: check_raw has then seen that every string
     * passes, and the walk (a sixth of a query's instructions) is skipped. */
    if (!plain && (rc = spsim_json_check_strings(text, len, origin, err)) != SPSIM_OK) {
        cJSON_Delete(root);
        return rc;
    }
    *out = root;
    return SPSIM_OK;
}

const char *
spsim_json_path(char *buf, size_t cap, const char *prefix, const char *key)
{
    if (prefix && *prefix)
        snprintf(buf, cap, "%s.%s", prefix, key);
    else
        snprintf(buf, cap, "%s", key);
    return buf;
}

int
spsim_json_field_error(const struct spsim_jctx *c, const char *prefix, const char *key,
                       const char *fmt, ...)
{
    char path[160], reason[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    /* The key may be the input's own (an unknown key): quoted and escaped. */
    return spsim_fail(c->err, SPSIM_EFIELD, "%s: field %s: %s", c->origin,
                      SPSIM_Q(spsim_json_path(path, sizeof(path), prefix, key)), reason);
}

int
spsim_json_repeated_key(const struct spsim_jctx *c, const cJSON *obj, const cJSON **repeat)
{
    struct spsim_strset seen = {0};
    int rc = SPSIM_OK;
    *repeat = NULL;
    for (const cJSON *it = obj->child; it && !*repeat && rc == SPSIM_OK; it = it->next) {
        if (!it->string)
            continue;
        size_t len = strlen(it->string);
        if (spsim_strset_find(&seen, it->string, len) != SPSIM_STRSET_NONE)
            *repeat = it;
        else if (spsim_strset_put(&seen, it->string, len, 0) != SPSIM_OK)
            rc = spsim_fail(c->err, SPSIM_ENOMEM, "out of memory");
    }
    spsim_strset_free(&seen);
    return rc;
}

int
spsim_json_check_keys(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                      const char *const *allowed)
{
    const cJSON *repeat = NULL;
    int rc = spsim_json_repeated_key(c, obj, &repeat);
    if (rc != SPSIM_OK)
        return rc;
    for (const cJSON *it = obj->child; it; it = it->next) {
        if (!it->string)
            continue;
        if (it == repeat)
            return spsim_json_field_error(c, prefix, it->string, "appears twice");
        if (it->string[0] == '_')
            continue;
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(*a, it->string) == 0;
        if (!known)
            return spsim_json_field_error(c, prefix, it->string,
                                          "unknown key (see doc/profiles.md; keys starting "
                                          "with '_' are comments)");
    }
    return SPSIM_OK;
}

static const cJSON *
member(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

static int
missing(const struct spsim_jctx *c, const char *prefix, const char *key, bool required)
{
    if (required)
        return spsim_json_field_error(c, prefix, key, "is required but missing");
    return SPSIM_OK;
}

static const char *
type_name(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "invalid";
}

int
spsim_json_get_uint(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                    const char *key, bool required, uint64_t min, uint64_t max, uint64_t *out)
{
    const cJSON *v = member(obj, key);
    if (!v)
        return missing(c, prefix, key, required);
    if (!cJSON_IsNumber(v))
        return spsim_json_field_error(c, prefix, key, "must be an integer in [%llu, %llu], got %s",
                                      (unsigned long long)min, (unsigned long long)max,
                                      type_name(v));
    double d = v->valuedouble;
    /* 2^53: beyond it a double no longer holds every integer, so the value is not exact. */
    if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max ||
        d > 9007199254740992.0)
        return spsim_json_field_error(c, prefix, key,
                                      "must be an integer in [%llu, %llu], got %.17g",
                                      (unsigned long long)min, (unsigned long long)max, d);
    *out = (uint64_t)d;
    return SPSIM_OK;
}

int
spsim_json_get_u32(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                   const char *key, bool required, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    bool present = member(obj, key) != NULL;
    int rc = spsim_json_get_uint(c, obj, prefix, key, required, min, max, &v);
    if (rc == SPSIM_OK && present)
        *out = (uint32_t)v;
    return rc;
}

int
spsim_json_get_double(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                      const char *key, bool required, double min, double max, double *out)
{
    const cJSON *v = member(obj, key);
    if (!v)
        return missing(c, prefix, key, required);
    if (!cJSON_IsNumber(v))
        return spsim_json_field_error(c, prefix, key, "must be a number in [%g, %g], got %s", min,
                                      max, type_name(v));
    double d = v->valuedouble;
    if (!isfinite(d) || !(d >= min && d <= max))
        return spsim_json_field_error(c, prefix, key, "must be a finite number in [%g, %g], got %g",
                                      min, max, d);
    *out = d;
    return SPSIM_OK;
}

int
spsim_json_get_bool(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                    const char *key, bool required, bool *out)
{
    const cJSON *v = member(obj, key);
    if (!v)
        return missing(c, prefix, key, required);
    if (!cJSON_IsBool(v))
        return spsim_json_field_error(c, prefix, key, "must be true or false, got %s",
                                      type_name(v));
    *out = cJSON_IsTrue(v);
    return SPSIM_OK;
}

int
spsim_json_get_string(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                      const char *key, bool required, bool nonempty, const char **out)
{
    const cJSON *v = member(obj, key);
    if (!v)
        return missing(c, prefix, key, required);
    if (!cJSON_IsString(v) || !v->valuestring)
        return spsim_json_field_error(c, prefix, key, "must be a string, got %s", type_name(v));
    if (nonempty && v->valuestring[0] == '\0')
        return spsim_json_field_error(c, prefix, key, "must not be empty");
    *out = v->valuestring;
    return SPSIM_OK;
}

int
spsim_json_get_enum(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                    const char *key, bool required, const char *const *names, int *out)
{
    const char *s = NULL;
    int rc = spsim_json_get_string(c, obj, prefix, key, required, true, &s);
    if (rc != SPSIM_OK || !s)
        return rc;
    char choices[200] = "";
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], s) == 0) {
            *out = i;
            return SPSIM_OK;
        }
        size_t used = strlen(choices);
        snprintf(choices + used, sizeof(choices) - used, "%s'%s'", i ? ", " : "", names[i]);
    }
    return spsim_json_field_error(c, prefix, key, "must be one of %s, got %s", choices, SPSIM_Q(s));
}

int
spsim_json_get_object(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                      const char *key, bool required, const cJSON **out)
{
    const cJSON *v = member(obj, key);
    *out = NULL;
    if (!v)
        return missing(c, prefix, key, required);
    if (!cJSON_IsObject(v))
        return spsim_json_field_error(c, prefix, key, "must be an object, got %s", type_name(v));
    *out = v;
    return SPSIM_OK;
}

/* Open a sourced member {"value": ..., "source": "TEXT"}: checks its shape and source; *v is
 * NULL when optional and absent, and path receives "prefix.key". */
static int
open_sourced(const struct spsim_jctx *c, const cJSON *obj, const char *prefix, const char *key,
             bool required, const char *value_kind, char *path, size_t path_size, const cJSON **v,
             const char **source)
{
    *v = member(obj, key);
    if (!*v)
        return missing(c, prefix, key, required);
    if (!cJSON_IsObject(*v))
        return spsim_json_field_error(c, prefix, key,
                                      "must be {\"value\": %s, \"source\": \"TEXT\"}, got %s "
                                      "(every hardware number carries its source)",
                                      value_kind, type_name(*v));
    spsim_json_path(path, path_size, prefix, key);
    static const char *const keys[] = {"value", "source", NULL};
    const char *src = NULL;
    int rc = spsim_json_check_keys(c, *v, path, keys);
    if (rc == SPSIM_OK)
        rc = spsim_json_get_string(c, *v, path, "source", true, true, &src);
    if (rc == SPSIM_OK && source)
        *source = src;
    return rc;
}

int
spsim_json_get_sourced(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                       const char *key, bool required, double min, double max, double *out,
                       const char **source)
{
    char path[160];
    const cJSON *v = NULL;
    int rc = open_sourced(c, obj, prefix, key, required, "NUMBER", path, sizeof(path), &v, source);
    if (rc != SPSIM_OK || !v)
        return rc;
    return spsim_json_get_double(c, v, path, "value", true, min, max, out);
}

int
spsim_json_get_sourced_or_null(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                               const char *key, double min, double max, double *out,
                               const char **unsourced)
{
    char path[160];
    const cJSON *v = NULL;
    const char *src = NULL;
    *unsourced = NULL;
    int rc =
        open_sourced(c, obj, prefix, key, false, "NUMBER or null", path, sizeof(path), &v, &src);
    if (rc != SPSIM_OK || !v)
        return rc;
    if (cJSON_IsNull(member(v, "value"))) {
        *out = 0;
        *unsourced = src;
        return SPSIM_OK;
    }
    return spsim_json_get_double(c, v, path, "value", true, min, max, out);
}

int
spsim_json_get_sourced_enum(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                            const char *key, bool required, const char *const *names, int *out,
                            const char **source)
{
    char path[160];
    const cJSON *v = NULL;
    int rc =
        open_sourced(c, obj, prefix, key, required, "\"NAME\"", path, sizeof(path), &v, source);
    if (rc != SPSIM_OK || !v)
        return rc;
    return spsim_json_get_enum(c, v, path, "value", true, names, out);
}
