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
                         struct spsim_model_shape *m, uint32_t *positions);
/** The model's name from the file's path: the folder of a config.json, else the base name. */
const char *spsim_hf_config_name(const char *origin, char *buf, size_t cap);

#endif
