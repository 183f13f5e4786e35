/*
 * What every Hugging Face config.json reader shares (hf_config.c and the hybrid families'
 * readers below it, hf_qwen_next.c and hf_nemotron_h.c, which hf_config.c calls): the keys
 * PretrainedConfig writes into every file.
 */
#include "config.h"

#include <string.h>

#include "hf_config.h"
#include "profiles/jsonfield.h"

/* PretrainedConfig's own keys (transformers configuration_utils.py, PretrainedConfig.__init__:
 * the outputs a forward returns, generation's defaults, the task head's labels, the token ids
 * of encoder-decoders, the attention implementation chosen at load time, the hub's
 * bookkeeping), which save_pretrained writes into every config.json and none of which changes
 * the decoder layer. The list follows transformers' documented PretrainedConfig parameters
 * (4.x); the repository itself (1.3 GB) could not be fetched here to check it against the
 * source. is_encoder_decoder, add_cross_attention and cross_attention_hidden_size do change the
 * model and are refused when true or set (check_generic). Then the keys every family's config
 * writes that change nothing spsim computes: the identity (architectures, model_type,
 * transformers_version: PretrainedConfig.to_dict adds the last two), the stored dtype
 * (torch_dtype, renamed dtype in 4.56; the training dtype is --dtype), the special tokens' ids,
 * the inference cache (use_cache) and the initialisation's range (initializer_range). */
static const char *const generic_keys[] = {"return_dict",
                                           "output_hidden_states",
                                           "output_attentions",
                                           "torchscript",
                                           "use_bfloat16",
                                           "tf_legacy_loss",
                                           "pruned_heads",
                                           "chunk_size_feed_forward",
                                           "is_decoder",
                                           "tie_encoder_decoder",
                                           "max_length",
                                           "min_length",
                                           "do_sample",
                                           "early_stopping",
                                           "num_beams",
                                           "num_beam_groups",
                                           "diversity_penalty",
                                           "temperature",
                                           "top_k",
                                           "top_p",
                                           "typical_p",
                                           "repetition_penalty",
                                           "length_penalty",
                                           "no_repeat_ngram_size",
                                           "encoder_no_repeat_ngram_size",
                                           "bad_words_ids",
                                           "num_return_sequences",
                                           "output_scores",
                                           "return_dict_in_generate",
                                           "forced_bos_token_id",
                                           "forced_eos_token_id",
                                           "remove_invalid_values",
                                           "exponential_decay_length_penalty",
                                           "suppress_tokens",
                                           "begin_suppress_tokens",
                                           "finetuning_task",
                                           "id2label",
                                           "label2id",
                                           "num_labels",
                                           "prefix",
                                           "sep_token_id",
                                           "decoder_start_token_id",
                                           "problem_type",
                                           "is_encoder_decoder",
                                           "add_cross_attention",
                                           "cross_attention_hidden_size",
                                           "attn_implementation",
                                           "use_return_dict",
                                           "architectures",
                                           "model_type",
                                           "transformers_version",
                                           "torch_dtype",
                                           "dtype",
                                           "bos_token_id",
                                           "eos_token_id",
                                           "pad_token_id",
                                           "use_cache",
                                           "initializer_range",
                                           NULL};

bool
spsim_hf_generic_key(const char *key)
{
    for (const char *const *k = generic_keys; *k; k++)
        if (strcmp(*k, key) == 0)
            return true;
    return false;
}

int
spsim_hf_check_known(const struct spsim_jctx *c, const cJSON *obj, const char *prefix,
                     const char *const *known, const char *family)
{
    for (const cJSON *it = obj->child; it; it = it->next) {
        bool ok = it->string[0] == '_' || spsim_hf_generic_key(it->string);
        for (const char *const *k = known; !ok && *k; k++)
            ok = strcmp(*k, it->string) == 0;
        if (!ok)
            return spsim_json_field_error(c, prefix, it->string,
                                          "not a key spsim knows for %s; it may change the layer, "
                                          "so the file is refused",
                                          family);
    }
    return SPSIM_OK;
}

bool
spsim_hf_present(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return v && !cJSON_IsNull(v);
}

int
spsim_hf_get_u32(const struct spsim_jctx *c, const cJSON *o, const char *prefix, const char *key,
                 bool required, uint32_t *out)
{
    if (!spsim_hf_present(o, key))
        return required ? spsim_json_field_error(c, prefix, key, "missing") : SPSIM_OK;
    return spsim_json_get_u32(c, o, prefix, key, true, 0, UINT32_MAX, out);
}
