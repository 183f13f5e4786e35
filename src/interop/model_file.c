/* A model file: an spsim-model/1 profile (profiles/model.c) or a Hugging Face transformers
 * config.json (hf_config.c), told apart by their keys; a folder is read as its config.json. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
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
    char name[256], source[512], description[512] = "";
    uint32_t positions = 0;
    int rc = spsim_hf_config_read(&c, root, &shape, &positions);
    if (rc != SPSIM_OK)
        return rc;
    snprintf(source, sizeof(source), "Hugging Face transformers config: %s", origin);
    /* The description says where the default sequence came from (the CLI prints it). */
    if (shape.position == SPSIM_POSITION_ROPE)
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
    return spsim_model_from_shape(&c, &shape, spsim_hf_config_name(origin, name, sizeof(name)),
                                  source, description, out);
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
