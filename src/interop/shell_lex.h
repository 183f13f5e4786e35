/*
 * The launch-script reader's inside (shell_words.c, the words and their expansions;
 * shell_flow.c, the compound commands), shared by the two files and nothing else.
 */
#ifndef SPSIM_SHELL_LEX_H
#define SPSIM_SHELL_LEX_H

#include "shell_words.h"

/* Caps that keep a hostile script bounded in time and memory (a real launch script is a few
 * kB of words): one word, one array or command, all words produced, the variables, the nesting
 * of compound commands, the loop iterations. Doubling A="$A$A" forty times would otherwise ask
 * for 2^40 bytes. */
#define SPSIM_SH_WORD_MAX       65536u
#define SPSIM_SH_WORDS_MAX      65536u
#define SPSIM_SH_TOTAL_BYTES    (16u << 20)
#define SPSIM_SH_TOTAL_WORDS    (1u << 20)
#define SPSIM_SH_VARS_MAX       4096u
#define SPSIM_SH_DEPTH_MAX      64
#define SPSIM_SH_ITERATIONS_MAX 65536u
/* Characters read in all, once the script's own are read four times: nested undecidable
 * branches are read again to choose among them (the count would grow with the nesting). */
#define SPSIM_SH_REREAD_MIN (16u << 20)

struct spsim_sh_var {
    char name[64];
    struct spsim_sh_words value; /* a scalar is one word */
};

/* How a simple command ended. */
enum spsim_sh_sep {
    SPSIM_SH_SEP_END,  /* newline, ';' or the end of the text */
    SPSIM_SH_SEP_AND,  /* && */
    SPSIM_SH_SEP_OR,   /* || */
    SPSIM_SH_SEP_PIPE, /* | */
    SPSIM_SH_SEP_BG,   /* & */
    SPSIM_SH_SEP_CASE, /* ;; (a case item's end) */
};

struct spsim_sh {
    const char *p, *end;
    uint32_t line;
    const char *origin;
    struct spsim_error *err;
    struct spsim_sh_var *vars;
    size_t nvars, capvars;
    size_t bytes, words; /* produced so far, against the totals */
    int rc;
    bool skip;         /* a branch not taken: read, nothing applied or recorded */
    bool test;         /* expanding a condition: an unset variable is empty, and noted */
    unsigned effects;  /* while skipping: the assignments and launch commands met */
    int depth;         /* compound commands open */
    int probe_depth;   /* the depth a probed branch starts at */
    bool probe_exit;   /* the probed branch ends in `exit` */
    bool in_condition; /* its commands are not recorded */
    uint32_t iterations;
    uint64_t reads_left; /* characters spsim_sh_take may still read (0: unlimited) */
    bool exited;         /* `exit` ran */
    char functions[256]; /* the functions the script defines, " f g " */
    char heredoc[64];    /* a here-document's end word, its body skipped after this line */
    bool heredoc_tabs;   /* <<-: the end word may follow tabs */
    struct spsim_sh_script *out;
    char assumed[256]; /* the variables conditions read unset, "A, B" */
};

int spsim_sh_syntax(struct spsim_sh *s, const char *what);
int spsim_sh_peek(const struct spsim_sh *s);
int spsim_sh_take(struct spsim_sh *s);
/** Blanks, line continuations and (with `newlines`) newlines and comments. */
void spsim_sh_skip_blanks(struct spsim_sh *s, bool newlines);
/** The unquoted reserved word at the cursor ("if", "then", "{", "[[", ";;", ...) into kw, or
 * "": nothing is consumed. */
void spsim_sh_keyword(const struct spsim_sh *s, char *kw, size_t cap);
/** Consume the reserved word spsim_sh_keyword() saw. */
void spsim_sh_skip_keyword(struct spsim_sh *s, const char *kw);
/** One word at the cursor, its expansions spliced into ws. */
void spsim_sh_read_word(struct spsim_sh *s, struct spsim_sh_words *ws);
/** A simple command's words up to its separator; leading assignments applied (not while
 * skipping: counted). @return how it ended */
enum spsim_sh_sep spsim_sh_statement(struct spsim_sh *s, struct spsim_sh_words *cmd);
struct spsim_sh_var *spsim_sh_var_find(struct spsim_sh *s, const char *name);
/** NAME=WORDS (or +=): takes the words (not while skipping: counted). */
void spsim_sh_var_set(struct spsim_sh *s, const char *name, struct spsim_sh_words *words,
                      bool append);
void spsim_sh_var_unset(struct spsim_sh *s, const char *name);
/** Note a variable a condition read unset (spsim_megatron_config.assumed). */
void spsim_sh_assume(struct spsim_sh *s, const char *name);
void spsim_sh_push(struct spsim_sh *s, struct spsim_sh_words *ws, const char *text, size_t len,
                   uint32_t line, const char *unresolved);

/** Integer arithmetic ($(( ... )), variables already replaced): + - * / % ( ), unary + - and
 * decimal integers (shell_arith.c). @return false if it is not such an expression or a
 * result leaves 64 bits */
bool spsim_sh_arith(const char *expr, long long *out);

/** A condition's truth: known, or not decidable without running the script. */
enum spsim_sh_truth { SPSIM_SH_FALSE, SPSIM_SH_TRUE, SPSIM_SH_UNKNOWN };
/** test / [ ... ] / [[ ... ]] over expanded words (shell_test.c; the brackets removed): what
 * cannot be decided (a file test, an unresolved value, an operator it does not know) is
 * UNKNOWN, `why` naming it. */
enum spsim_sh_truth spsim_sh_test(const struct spsim_sh_word *w, size_t n, bool double_bracket,
                                  char *why, size_t cap);

#endif
