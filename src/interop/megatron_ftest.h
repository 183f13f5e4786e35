/* Megatron-LM functional-test cases (model_config.yaml) as the launch line their CI runs. */
#ifndef SPSIM_MEGATRON_FTEST_H
#define SPSIM_MEGATRON_FTEST_H

#include "shell_words.h"

/** Whether a YAML text is a functional-test case (a top-level MODEL_ARGS key). */
bool spsim_megatron_ftest_detect(const char *text, size_t len);

/**
 * The case as one command: `env NAME=VALUE ... pretrain_gpt.py` (its ENV_VARS), then the words
 * of its MODEL_ARGS.
 * @return SPSIM_OK, SPSIM_EPARSE (malformed YAML), SPSIM_EFIELD (a nested value, an alias, no
 *         flags), SPSIM_ENOTSUP (built without libyaml), SPSIM_ENOMEM
 */
int spsim_megatron_ftest(const char *text, size_t len, const char *origin,
                         struct spsim_sh_script *out, struct spsim_error *err);

#endif
