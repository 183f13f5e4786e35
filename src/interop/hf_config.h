/* Hugging Face transformers config.json files as model shapes (interop/hf_config.c). */
#ifndef SPSIM_HF_CONFIG_H
#define SPSIM_HF_CONFIG_H

#include "profiles/profiles.h"

struct spsim_jctx;
struct cJSON;
/** The sequence length a Hugging Face config with rotary positions defaults to (hf_config.c). */
#define SPSIM_HF_DEFAULT_SEQ 1024u

/** Whether a parsed JSON file is a Hugging Face transformers config (no "schema", a
 * "model_type"). */
bool spsim_hf_config_is(const struct cJSON *root);
/** Read a transformers config.json into a shape (interop/hf_config.c); a key it cannot model
 * is refused by name (SPSIM_EFIELD). The shape is then checked as a profile's. */
int spsim_hf_config_read(const struct spsim_jctx *c, const struct cJSON *root,
                         struct spsim_model_shape *m, uint32_t *positions, char *pattern,
                         size_t cap);
/** Qwen3-Next (qwen35 false) and Qwen3.5 (its text_config) as a hybrid model
 * (interop/hf_qwen_next.c): the pattern is written to `pattern` (cap bytes), which the shape
 * borrows. */
int spsim_hf_qwen_next_read(const struct spsim_jctx *c, const struct cJSON *root, bool qwen35,
                            struct spsim_model_shape *m, char *pattern, size_t cap);
/** Nemotron-H and Nemotron 3 (model_type nemotron_h) as a hybrid model of Mamba-2, attention,
 * MLP and MoE layers (interop/hf_nemotron_h.c): the decoder's pattern and the MTP depth's are
 * written to `pattern` (cap bytes), which the shape borrows. */
int spsim_hf_nemotron_h_read(const struct spsim_jctx *c, const struct cJSON *root,
                             struct spsim_model_shape *m, char *pattern, size_t cap);
/** Whether `key` is one of PretrainedConfig's own keys, which save_pretrained writes into every
 * config.json and none of which changes the decoder layer (interop/hf_common.c). */
bool spsim_hf_generic_key(const char *key);
/** Every key of `obj` is PretrainedConfig's, `known`'s (NULL-terminated) or starts with '_';
 * else SPSIM_EFIELD naming it and `family` (interop/hf_common.c). */
int spsim_hf_check_known(const struct spsim_jctx *c, const struct cJSON *obj, const char *prefix,
                         const char *const *known, const char *family);
/** Whether `key` is in `obj` and not null. */
bool spsim_hf_present(const struct cJSON *obj, const char *key);
/** An integer key in [0, 2^32); absent or null: SPSIM_EFIELD "missing" when required, else
 * *out is left as it is. */
int spsim_hf_get_u32(const struct spsim_jctx *c, const struct cJSON *o, const char *prefix,
                     const char *key, bool required, uint32_t *out);
/** The model's name from the file's path: the folder of a config.json, else the base name. */
const char *spsim_hf_config_name(const char *origin, char *buf, size_t cap);

#endif
