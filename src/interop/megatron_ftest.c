/*
 * Megatron-LM's functional-test cases (tests/functional_tests/test_cases/MODEL/CASE/
 * model_config.yaml) as the words of the launch line their CI runs. The CI turns the file's
 * MODEL_ARGS mapping into pretrain_gpt.py's arguments as
 * tests/functional_tests/shell_test_utils/_run_training.sh does at NVIDIA/Megatron-LM d98e8a64
 * (2026-08-22): `--flag: true` is the flag alone, a value in [ ] is its words (brackets
 * stripped, split on blanks), a value in ( ) or with a blank, '|', '(' or ')' is one word,
 * an empty value drops the flag, anything else is `--flag value`; `${VAR}` is envsubst's, left
 * as it is when the CI does not set VAR. ENV_VARS are exported before the run; spsim models
 * none of them, so their names are listed as not modelled. The other top-level keys
 * (TEST_TYPE, LAUNCHER, METRICS, MODEL_ARGS_2 of a resumed second run) do not change the first
 * run's configuration.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "megatron_ftest.h"

bool
spsim_megatron_ftest_detect(const char *text, size_t len)
{
    /* A functional-test case has MODEL_ARGS at the top level (column 0). */
    static const char key[] = "MODEL_ARGS:";
    for (size_t i = 0; i + sizeof(key) - 1 <= len; i++)
        if ((i == 0 || text[i - 1] == '\n') && memcmp(text + i, key, sizeof(key) - 1) == 0)
            return true;
    return false;
}

#if HAVE_YAML
#include <yaml.h>

struct ft {
    const char *origin;
    struct spsim_error *err;
    struct spsim_sh_words flags, env;
    int section;   /* 0 elsewhere, 1 MODEL_ARGS, 2 ENV_VARS */
    int depth;     /* mappings open */
    int skip;      /* nested nodes of another top-level key being skipped */
    char key[128]; /* the pending key of a MODEL_ARGS or ENV_VARS pair, or "" */
    uint32_t line; /* its line */
    bool have_key;
};

/* The first ${VAR} or $VAR in `v` (envsubst's forms), or "". */
static void
first_variable(const char *v, char *out, size_t cap)
{
    out[0] = '\0';
    for (const char *p = strchr(v, '$'); p; p = strchr(p + 1, '$')) {
        const char *s = p + 1 + (p[1] == '{');
        size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
        if (n) {
            snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), s);
            return;
        }
    }
}

static int
push(struct ft *f, struct spsim_sh_words *ws, const char *text, size_t n, uint32_t line)
{
    char word[4096];
    snprintf(word, sizeof(word), "%.*s", (int)(n < sizeof(word) ? n : sizeof(word) - 1), text);
    if (spsim_sh_append(ws, word, line, NULL) != SPSIM_OK)
        return spsim_fail(f->err, SPSIM_ENOMEM, "out of memory");
    first_variable(word, ws->w[ws->n - 1].unresolved, sizeof(ws->w[ws->n - 1].unresolved));
    return SPSIM_OK;
}

/* One MODEL_ARGS pair as _run_training.sh passes it. */
static int
model_arg(struct ft *f, const char *value, size_t n, bool plain, uint32_t line)
{
    if (n == 0 && plain) /* `select(.value != "")`: an empty value drops the key */
        return SPSIM_OK;
    int rc = push(f, &f->flags, f->key, strlen(f->key), f->line);
    if (rc != SPSIM_OK || (n == 4 && memcmp(value, "true", 4) == 0))
        return rc; /* `true`: the flag alone */
    if (n >= 2 && value[0] == '[' && value[n - 1] == ']') {
        /* [a b c]: brackets stripped, the words split on blanks by the eval */
        for (size_t i = 1; i < n - 1 && rc == SPSIM_OK;) {
            size_t w = strcspn(value + i, " \t]");
            if (i + w > n - 1)
                w = n - 1 - i;
            if (w)
                rc = push(f, &f->flags, value + i, w, line);
            i += w ? w : 1;
        }
        return rc;
    }
    return push(f, &f->flags, value, n, line); /* one word, whether quoted or not */
}

static int
scalar(struct ft *f, const yaml_event_t *ev, uint32_t line)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (f->depth == 1) { /* a top-level key */
        f->section = strcmp(v, "MODEL_ARGS") == 0 ? 1 : strcmp(v, "ENV_VARS") == 0 ? 2 : 0;
        f->have_key = false;
        return SPSIM_OK;
    }
    if (f->depth != 2 || f->section == 0)
        return SPSIM_OK;
    if (!f->have_key) {
        snprintf(f->key, sizeof(f->key), "%.*s", (int)(n < 127 ? n : 127), v);
        f->line = line;
        f->have_key = true;
        return SPSIM_OK;
    }
    f->have_key = false;
    if (f->section == 1)
        return model_arg(f, v, n, plain, line);
    char assignment[256]; /* NAME=VALUE: listed by its name as not modelled */
    snprintf(assignment, sizeof(assignment), "%s=%.*s", f->key, (int)(n < 120 ? n : 120), v);
    return push(f, &f->env, assignment, strlen(assignment), f->line);
}

static int
event(struct ft *f, const yaml_event_t *ev)
{
    uint32_t line = (uint32_t)ev->start_mark.line + 1;
    switch (ev->type) {
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        if (f->depth == 2 && f->section != 0)
            return spsim_fail(f->err, SPSIM_EFIELD,
                              "%s:%u: %s: a nested value (the CI passes scalars only)", f->origin,
                              line,
                              f->have_key       ? f->key
                              : f->section == 1 ? "MODEL_ARGS"
                                                : "ENV_VARS");
        if (f->depth == 1 && ev->type == YAML_SEQUENCE_START_EVENT && f->section != 0)
            return spsim_fail(f->err, SPSIM_EFIELD, "%s:%u: %s: not a mapping", f->origin, line,
                              f->section == 1 ? "MODEL_ARGS" : "ENV_VARS");
        f->depth++;
        return SPSIM_OK;
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        f->depth--;
        if (f->depth == 1)
            f->section = 0;
        return SPSIM_OK;
    case YAML_SCALAR_EVENT:
        return scalar(f, ev, line);
    case YAML_ALIAS_EVENT:
        return spsim_fail(f->err, SPSIM_EFIELD, "%s:%u: an alias (spsim does not expand them)",
                          f->origin, line);
    default:
        return SPSIM_OK;
    }
}

int
spsim_megatron_ftest(const char *text, size_t len, const char *origin, struct spsim_sh_script *out,
                     struct spsim_error *err)
{
    yaml_parser_t p;
    struct ft f = {.origin = origin, .err = err};
    int rc = SPSIM_OK;
    memset(out, 0, sizeof(*out));
    if (!yaml_parser_initialize(&p))
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    for (bool done = false; rc == SPSIM_OK && !done;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = spsim_fail(err, SPSIM_EPARSE, "%s:%zu: %s", origin, p.problem_mark.line + 1,
                            p.problem ? p.problem : "malformed YAML");
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = event(&f, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    /* As a launch line: `env NAME=VALUE ... pretrain_gpt.py FLAGS`, so that the environment is
     * listed as not modelled and the flags are Megatron's. */
    struct spsim_sh_words cmd = {0};
    if (rc == SPSIM_OK && spsim_sh_append(&cmd, "env", 1, NULL) != SPSIM_OK)
        rc = spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    for (size_t i = 0; rc == SPSIM_OK && i < f.env.n; i++)
        if (spsim_sh_append(&cmd, f.env.w[i].text, f.env.w[i].line, NULL) != SPSIM_OK)
            rc = spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    if (rc == SPSIM_OK && spsim_sh_append(&cmd, "pretrain_gpt.py", 1, NULL) != SPSIM_OK)
        rc = spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    for (size_t i = 0; rc == SPSIM_OK && i < f.flags.n; i++) {
        const struct spsim_sh_word *w = &f.flags.w[i];
        if (spsim_sh_append(&cmd, w->text, w->line, NULL) != SPSIM_OK)
            rc = spsim_fail(err, SPSIM_ENOMEM, "out of memory");
        else
            snprintf(cmd.w[cmd.n - 1].unresolved, sizeof(cmd.w[0].unresolved), "%s", w->unresolved);
    }
    if (rc == SPSIM_OK && f.flags.n == 0)
        rc = spsim_fail(err, SPSIM_EFIELD, "%s: MODEL_ARGS: no flags", origin);
    if (rc == SPSIM_OK && spsim_sh_add_command(out, &cmd) != SPSIM_OK)
        rc = spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    spsim_sh_words_free(&cmd);
    spsim_sh_words_free(&f.flags);
    spsim_sh_words_free(&f.env);
    return rc;
}

#else

int
spsim_megatron_ftest(const char *text, size_t len, const char *origin, struct spsim_sh_script *out,
                     struct spsim_error *err)
{
    (void)text;
    (void)len;
    memset(out, 0, sizeof(*out));
    return spsim_fail(err, SPSIM_ENOTSUP, "%s: this build reads no YAML (libyaml was not found)",
                      origin);
}

#endif
