/* A model file: an spsim-model/1 profile (profiles/model.c) or a Hugging Face transformers
 * config.json (hf_config.c), told apart by their keys; a folder is read as its config.json. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hf_config.h"
#include "profiles/jsonfield.h"
#include "spsim/model.h"

/* A Hugging Face config.json: its shape, named after its folder, checked as a profile's. */
static int
hf_model(const cJSON *root, const char *origin, struct spsim_model **out, struct spsim_error *err)
{
    struct spsim_jctx c = {origin, err};
    struct spsim_model_shape shape;
    char name[256], source[512], description[512] = "", pattern[8194];
    uint32_t positions = 0;
    int rc = spsim_hf_config_read(&c, root, &shape, &positions, pattern, sizeof(pattern));
    if (rc != SPSIM_OK)
        return rc;
    snprintf(source, sizeof(source), "Hugging Face transformers config: %s", origin);
    /* The description says where the default sequence came from (the CLI prints it). */
    if (shape.position != SPSIM_POSITION_LEARNED)
        snprintf(description, sizeof(description),
                 "sequence length %u unless --seq gives one (Megatron-Bridge's and Megatron-LM's "
                 "GPT default 1024, at most the positions; its max_position_embeddings %u is the "
                 "context it can take, not a training sequence)",
                 shape.seq_len, positions);
    else
        snprintf(description, sizeof(description),
                 "sequence length %u unless --seq gives one (its learned positions, "
                 "max_position_embeddings)",
                 shape.seq_len);
    /* Qwen3.5's vision encoder (vision_config) is not read: the model is its language model. */
    if (cJSON_GetObjectItemCaseSensitive(root, "vision_config")) {
        size_t n = strlen(description);
        snprintf(description + n, sizeof(description) - n,
                 "; the language model only: the vision tower (vision_config) is not counted");
    }
    return spsim_model_from_shape(&c, &shape, spsim_hf_config_name(origin, name, sizeof(name)),
                                  source, description, out);
}

/* Python's json.dumps, which save_pretrained writes config.json with, spells float("inf") as
 * the bare token Infinity, which strict JSON (RFC 8259 §6) has not: Nemotron-H's
 * time_step_limit [0.0, Infinity]. A copy with each Infinity outside strings written as 1e999
 * (cJSON's strtod reads it as HUGE_VAL; the padding keeps every byte offset of a later message)
 * lets the Hugging Face reader judge the file; spsim's own profiles stay strict. NULL when
 * there is none or no memory. */
static char *
python_infinities(const char *json, size_t len)
{
    static const char word[] = "Infinity";
    const size_t n = sizeof(word) - 1;
    char *copy = NULL;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        if (in_string) {
            if (json[i] == '\\')
                i++;
            else if (json[i] == '"')
                in_string = false;
        } else if (json[i] == '"') {
            in_string = true;
        } else if (len - i >= n && memcmp(json + i, word, n) == 0) {
            if (!copy && (copy = malloc(len)))
                memcpy(copy, json, len);
            if (!copy)
                return NULL;
            memcpy(copy + i, "1e999   ", n);
            i += n - 1;
        }
    }
    return copy;
}

int
spsim_model_parse(const char *json, size_t len, const char *origin, struct spsim_model **out,
                  struct spsim_error *err)
{
    if (!json || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_model_parse: NULL argument");
    if (!origin)
        origin = "<model>";
    cJSON *root = NULL;
    int rc = spsim_json_parse(json, len, origin, &root, err);
    if (rc == SPSIM_EPARSE) {
        struct spsim_error strict = err ? *err : (struct spsim_error){0};
        char *copy = python_infinities(json, len);
        rc = copy ? spsim_json_parse(copy, len, origin, &root, err) : SPSIM_EPARSE;
        free(copy);
        if (rc == SPSIM_OK && !spsim_hf_config_is(root)) {
            cJSON_Delete(root);
            rc = SPSIM_EPARSE;
        }
        if (rc != SPSIM_OK && err)
            *err = strict;
    }
    if (rc != SPSIM_OK)
        return rc;
    rc = spsim_hf_config_is(root) ? hf_model(root, origin, out, err)
                                  : spsim_model_read_profile(root, origin, out, err);
    cJSON_Delete(root);
    return rc;
}

int
spsim_model_load(const char *path, struct spsim_model **out, struct spsim_error *err)
{
    if (!path || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_model_load: NULL argument");
    char *buf = NULL, file[4096];
    size_t len = 0;
    struct stat st;
    /* A folder is a Hugging Face model: its config.json is read, and whatever that is (a FIFO,
     * a symbolic link loop) the reader's message names it, not the folder. A folder without
     * one is refused as not a regular file. */
    int w = snprintf(file, sizeof(file), "%s/config.json", path);
    if (w > 0 && (size_t)w < sizeof(file) && stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
        lstat(file, &st) == 0)
        path = file;
    int rc = spsim_read_file(path, &buf, &len, err);
    if (rc == SPSIM_OK)
        rc = spsim_model_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}
