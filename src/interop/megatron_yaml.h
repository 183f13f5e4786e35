/*
 * Megatron-Bridge and NeMo YAML recipes: the keys of one or more files, merged as OmegaConf
 * merges them (megatron_yaml.c), then read as the Megatron-LM flags they stand for
 * (megatron_recipe.c).
 */
#ifndef SPSIM_MEGATRON_YAML_H
#define SPSIM_MEGATRON_YAML_H

#include "shell_words.h"

/* Caps that bound a hostile file (a Megatron-Bridge dump has about 800 keys, 4 levels). */
#define SPSIM_YAML_DEPTH_MAX 1000   /* as the JSON reader's cJSON limit */
#define SPSIM_YAML_KEYS_MAX  65536u /* keys of all files together */
#define SPSIM_YAML_ITEMS_MAX 65536u /* items of one sequence */
#define SPSIM_YAML_VALUE_MAX 65536u /* bytes of a value after interpolation */
#define SPSIM_YAML_FILES_MAX 16u    /* files merged */

enum spsim_yaml_kind {
    SPSIM_YAML_SCALAR,  /* a scalar (v[0]) */
    SPSIM_YAML_NULL,    /* null, ~ or nothing */
    SPSIM_YAML_SEQ,     /* a sequence of scalars (v[0 .. n)) */
    SPSIM_YAML_MAP,     /* a mapping: its keys are entries of their own */
    SPSIM_YAML_COMPLEX, /* a sequence holding collections (not read) */
};

/** One key of the merged files. */
struct spsim_yaml_entry {
    char *path;       /* "model.num_layers" */
    const char *name; /* its last key, inside path */
    char **v;
    uint32_t n;
    enum spsim_yaml_kind kind;
    bool plain;        /* a plain (unquoted) scalar */
    bool partial;      /* COMPLEX: values hold only its sequences of scalars, each closed by "|";
                          partial: it held mappings or deeper sequences too */
    bool unresolved;   /* an interpolation (${...}) spsim could not resolve */
    uint8_t resolving; /* interpolation state: 0 not yet, 1 in progress, 2 done */
    uint32_t line, column;
    int32_t parent; /* the enclosing mapping's entry, -1 at the top */
    bool dead;      /* replaced by a later file */
    const char *origin;
};

struct spsim_yaml {
    struct spsim_yaml_entry *e;
    size_t n, cap;
    int32_t *slot; /* open addressing: path -> newest entry */
    size_t nslot;
    char *origins[SPSIM_YAML_FILES_MAX];
    size_t norigins;
    size_t resolved; /* bytes written by interpolation, against a 64 MiB cap */
};

/**
 * Read one file's document and merge it onto `y` (zeroed for the first): a mapping merges key
 * by key, anything else replaces what was there (OmegaConf.merge). Refused, naming the line: a
 * duplicate key, a second document, a NUL character, an empty or non-scalar key, an alias,
 * nesting deeper than SPSIM_YAML_DEPTH_MAX.
 * @return SPSIM_OK, SPSIM_EPARSE, SPSIM_EFIELD, SPSIM_ENOTSUP (built without libyaml),
 *         SPSIM_ENOMEM
 */
int spsim_yaml_read(struct spsim_yaml *y, const char *text, size_t len, const char *origin,
                    struct spsim_error *err);
/** Resolve OmegaConf's ${a.b}, ${.b} and ${..b} in every live value (chains included); what
 * cannot be resolved is marked `unresolved`. @return SPSIM_OK or SPSIM_ENOMEM */
int spsim_yaml_resolve(struct spsim_yaml *y, struct spsim_error *err);
/** @return the live entry at `path`, or NULL */
const struct spsim_yaml_entry *spsim_yaml_get(const struct spsim_yaml *y, const char *path);
/** @return whether entry i is live (neither it nor a mapping above it replaced) */
bool spsim_yaml_live(const struct spsim_yaml *y, size_t i);
void spsim_yaml_free(struct spsim_yaml *y);
/** A key set by spsim (a named recipe's fields): `value` NULL is null; `parent` the entry it
 * belongs to (its file and line name it). @return SPSIM_OK or SPSIM_ENOMEM */
int spsim_yaml_set(struct spsim_yaml *y, const char *path, const char *value, int32_t parent,
                   uint32_t line);

/**
 * The merged keys as the flags they stand for, one command per key ("--num-layers", "32"),
 * each word naming its key in `key`; a key the recipe table does not know, with a value that is
 * set, is a command of one word, its dotted path.
 * @return SPSIM_OK, SPSIM_EFIELD (a value that cannot be read or a feature spsim does not
 *         model), SPSIM_ENOMEM
 */
int spsim_yaml_flags(struct spsim_yaml *y, struct spsim_sh_script *out, struct spsim_error *err);

#endif
