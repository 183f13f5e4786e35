/* Megatron-Bridge and NeMo YAML recipes as the Megatron-LM flags they stand for. */
#ifndef SPSIM_MEGATRON_YAML_H
#define SPSIM_MEGATRON_YAML_H

#include "shell_words.h"

/**
 * One command of words ("--num-layers", "32", ...), each naming the recipe's key in `key`; a
 * key the recipe table does not know is one word, its dotted path.
 * @return SPSIM_OK, SPSIM_EPARSE (malformed YAML), SPSIM_EFIELD (a value that cannot be read),
 *         SPSIM_ENOTSUP (built without libyaml), SPSIM_ENOMEM
 */
int spsim_megatron_yaml(const char *text, size_t len, const char *origin,
                        struct spsim_sh_script *out, struct spsim_error *err);

#endif
