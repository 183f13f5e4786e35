/*
 * The words of a launch script as bash would pass them to its commands: quotes, backslashes,
 * line continuations, comments, scalar and array assignments (NAME=value, NAME=( ... ),
 * NAME+=( ... )) and their expansions ($NAME, ${NAME}, ${NAME:-default}, ${NAME[@]}). What a
 * script cannot say without running (positional parameters, $(...), `...`, $((...)), variables
 * it does not assign) stays unresolved, and each word remembers the first such name. Control
 * flow is followed where it can be decided (shell_flow.c): if/elif/else, case, for over words,
 * && and ||, test and [[ ]] on the variables the script sets or its environment gives; what
 * cannot be (a file test, a command's status, a loop that runs) is refused naming its line,
 * unless no branch it could take changes anything or all but one end in `exit`.
 */
#ifndef SPSIM_SHELL_WORDS_H
#define SPSIM_SHELL_WORDS_H

#include "internal.h"

struct spsim_sh_word {
    char *text;
    uint32_t line;
    char unresolved[64]; /* the first expansion left unresolved ("TP", "1", "$(...)"), or "" */
    char key[96];        /* a YAML recipe's key the word stands for ("model.num_layers"), or "" */
    bool off;            /* a recipe's flag set to false or null: it unsets the flag */
    const char *origin;  /* a recipe's file (borrowed), or NULL: the script's */
};

struct spsim_sh_words {
    struct spsim_sh_word *w;
    size_t n, cap;
};

/** The simple commands of a script, expanded; assignments are applied, not listed. */
struct spsim_sh_script {
    struct spsim_sh_words *cmd;
    size_t n, cap;
    char assumed[256]; /* the variables its conditions read unset ("A, B"), or "" */
};

/** @param env  "NAME=VALUE" the script sees set before it runs (nenv of them; may be NULL)
 * @return SPSIM_OK, SPSIM_EPARSE ("ORIGIN:LINE: reason"), SPSIM_EINVAL (an env word that is not
 *         NAME=VALUE) or SPSIM_ENOMEM */
int spsim_sh_parse(const char *text, size_t len, const char *origin, const char *const *env,
                   size_t nenv, struct spsim_sh_script *out, struct spsim_error *err);
void spsim_sh_free(struct spsim_sh_script *s);
/** Append a word (a YAML recipe's flags, megatron_yaml.c). @return SPSIM_OK or SPSIM_ENOMEM */
int spsim_sh_append(struct spsim_sh_words *ws, const char *text, uint32_t line, const char *key);
void spsim_sh_words_free(struct spsim_sh_words *ws);
/** Append a command (taking its words). @return SPSIM_OK or SPSIM_ENOMEM */
int spsim_sh_add_command(struct spsim_sh_script *s, struct spsim_sh_words *cmd);

#endif
