/* The launch-line flags' mapping (megatron_args.c), for readers that build the words
 * themselves (megatron_log.c: a training log's arguments block). */
#ifndef SPSIM_MEGATRON_ARGS_H
#define SPSIM_MEGATRON_ARGS_H

#include "shell_words.h"
#include "spsim/megatron.h"

/**
 * Map the words of a launch command (its .py word, or flags alone) as spsim_megatron_parse()
 * maps a launch script's; each word's `key` names it in messages.
 * @return as spsim_megatron_parse()
 */
int spsim_megatron_words(const struct spsim_sh_script *sc, const char *origin,
                         struct spsim_megatron_config *out, struct spsim_error *err);

#endif
