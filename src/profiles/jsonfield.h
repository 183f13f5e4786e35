/* Reading validated fields out of cJSON trees, with errors that name the file and the field. */
#ifndef SPSIM_JSONFIELD_H
#define SPSIM_JSONFIELD_H

#include <cjson/cJSON.h>

#include "internal.h"

/** Where a field is read from: the file (for messages) and the error to fill. */
struct spsim_jctx {
    const char *origin;
    struct spsim_error *err;
};

/** Parse text; a syntax error reports the line and column where cJSON stopped. */
int spsim_json_parse(const char *text, size_t len, const char *origin, cJSON **out,
                     struct spsim_error *err);

/** Before cJSON: refuse a NUL byte and nesting deeper than cJSON's limit (SPSIM_EPARSE, naming
 * the offset). *plain is set when no string holds a byte above 0x7F or a \\u escape: then no
 * string can fail spsim_json_check_strings, and the walk it makes is not needed. */
int spsim_json_check_raw(const char *text, size_t len, const char *origin, bool *plain,
                         struct spsim_error *err);
/** After cJSON accepted the text: refuse a string, key or value, that is not valid UTF-8 or
 * holds \u0000 (SPSIM_EFIELD, naming the field). */
int spsim_json_check_strings(const char *text, size_t len, const char *origin,
                             struct spsim_error *err);

/** Fail (SPSIM_EFIELD) on a key of obj not in `allowed` (NULL-terminated) or on a duplicate.
 * Keys starting with '_' are comments and always allowed. */
int spsim_json_check_keys(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                          const char *const *allowed);

/** *repeat: the first member of obj whose key an earlier member has, or NULL (linear time: a
 * profile may carry 10^5 comment keys). @return SPSIM_OK or SPSIM_ENOMEM */
int spsim_json_repeated_key(const struct spsim_jctx *c, const cJSON *obj, const cJSON **repeat);

/** Format "prefix.key" (or "key") into buf. */
const char *spsim_json_path(char *buf, size_t cap, const char *prefix, const char *key);

/** Fail with "ORIGIN: field 'PATH': REASON". */
int spsim_json_field_error(const struct spsim_jctx *c, const char *prefix, const char *key,
                           const char *fmt, ...) SPSIM_PRINTF(4, 5);

/* Each getter returns SPSIM_OK, or SPSIM_EFIELD with err filled. A missing optional field
 * leaves *out untouched and returns SPSIM_OK. */
int spsim_json_get_uint(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                        const char *key, bool required, uint64_t min, uint64_t max, uint64_t *out);
int spsim_json_get_u32(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                       const char *key, bool required, uint32_t min, uint32_t max, uint32_t *out);
int spsim_json_get_double(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                          const char *key, bool required, double min, double max, double *out);
int spsim_json_get_bool(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                        const char *key, bool required, bool *out);
int spsim_json_get_string(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                          const char *key, bool required, bool nonempty, const char **out);
/** A string that must be one of `names` (NULL-terminated); *out is its index. */
int spsim_json_get_enum(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                        const char *key, bool required, const char *const *names, int *out);
/** An object member; *out is NULL when optional and absent. */
int spsim_json_get_object(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                          const char *key, bool required, const cJSON **out);
/**
 * A sourced number {"value": X, "source": "TEXT"}: X finite in [min, max], TEXT non-empty.
 * @param source  optional; receives a pointer into the tree
 */
int spsim_json_get_sourced(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                           const char *key, bool required, double min, double max, double *out,
                           const char **source);
/**
 * As spsim_json_get_sourced, but {"value": null, "source": "TEXT"} is accepted too: the figure
 * has no source (TEXT says why). Then *out is 0 and *unsourced points to TEXT (NULL otherwise).
 */
int spsim_json_get_sourced_or_null(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                                   const char *key, double min, double max, double *out,
                                   const char **unsourced);
/** A sourced name {"value": "NAME", "source": "TEXT"}: NAME one of `names`, *out its index. */
int spsim_json_get_sourced_enum(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                                const char *key, bool required, const char *const *names, int *out,
                                const char **source);

#endif
