/*
 * Measured runs: a Megatron-LM training log (its arguments block, iteration lines and memory
 * reports) or a functional-test case with its golden values, as a configuration and the
 * iteration times it measured. The formats are NVIDIA/Megatron-LM's at d98e8a64 (2026-08-22):
 * megatron/training/arguments.py _print_args ('  {} {} {}'.format(arg, '.' * (48 - len(arg)),
 * value), sorted, between "------------------------ arguments ------------------------" and
 * "-------------------- end of arguments ---------------------"), training.py training_log
 * (" iteration {:8d}/{:8d} |" ... " elapsed time per iteration (ms): {:.1f} |" ...
 * " throughput per GPU (TFLOP/s/GPU): {:.1f} |" ... " number of skipped iterations: {:3d} |"
 * " number of nan iterations: {:3d} |"), utils/common_utils.py report_memory ("[Rank R] NAME
 * memory (MB) | allocated: A | max allocated: B | ..."; MB = 2^20 bytes) and
 * core/tokenizers/utils/build_tokenizer.py (" > padded vocab (size: N) with D dummy tokens").
 * Older Megatron-LM prints the same block and lines (BigScience's 2021 logs, tests/data).
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "megatron_args.h"
#include "spsim/megatron.h"

static const char args_head[] = "------------------------ arguments ------------------------";
static const char args_end[] = "-------------------- end of arguments ---------------------";

/* One `name ..... value` of an arguments block. */
struct arg {
    char name[64];
    const char *value; /* into the text */
    size_t len;
    uint32_t line;
};

struct args {
    struct arg *a;
    size_t n, cap;
};

/* A line [p, e) of the text. */
struct line {
    const char *p, *e;
    uint32_t no;
};

static bool
next_line(const char *text, size_t len, size_t *at, struct line *l)
{
    if (*at >= len)
        return false;
    const char *p = text + *at, *nl = memchr(p, '\n', len - *at);
    l->p = p;
    l->e = nl ? nl : text + len;
    l->no++;
    *at = (size_t)(l->e - text) + (nl ? 1 : 0);
    return true;
}

/* Where `needle` is in the line, or NULL. */
static const char *
in_line(const struct line *l, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = l->p; p + n <= l->e; p++)
        if (memcmp(p, needle, n) == 0)
            return p;
    return NULL;
}

/* "  name<sp>dots<sp>value" after the block's prefix; false for a line of another kind. */
static bool
parse_arg(const struct line *l, size_t prefix, struct arg *out)
{
    const char *p = l->p + prefix, *e = l->e;
    while (e > p && (e[-1] == '\r' || e[-1] == ' '))
        e--;
    if (e - p < 4 || p[0] != ' ' || p[1] != ' ')
        return false;
    p += 2;
    size_t n = 0; /* the name, up to a blank (the text need not end in a NUL) */
    while (p + n < e && p[n] != ' ')
        n++;
    if (n == 0 || n >= sizeof(out->name) || p + n >= e)
        return false;
    memcpy(out->name, p, n);
    out->name[n] = '\0';
    p += n + 1;
    while (p < e && *p == '.')
        p++;
    if (p >= e || *p != ' ')
        return false;
    out->value = p + 1;
    out->len = (size_t)(e - p - 1);
    out->line = l->no;
    return true;
}

static const struct arg *
find(const struct args *as, const char *name)
{
    for (size_t i = 0; i < as->n; i++)
        if (strcmp(as->a[i].name, name) == 0)
            return &as->a[i];
    return NULL;
}

static bool
value_is(const struct arg *a, const char *v)
{
    return a && a->len == strlen(v) && memcmp(a->value, v, a->len) == 0;
}

static int
oom(struct spsim_error *err)
{
    return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
}

/* A word naming the argument `key` in messages. */
static int
word(struct spsim_sh_words *w, const char *text, size_t n, uint32_t line, const char *key,
     struct spsim_error *err)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "%.*s", (int)(n < sizeof(buf) ? n : sizeof(buf) - 1), text);
    return spsim_sh_append(w, buf, line, key) == SPSIM_OK ? SPSIM_OK : oom(err);
}

/* A Python list's items as words: "['core_attn', 'mlp']" is core_attn mlp. */
static int
list_words(struct spsim_sh_words *w, const struct arg *a, struct spsim_error *err)
{
    int rc = SPSIM_OK;
    for (size_t i = 1; i + 1 < a->len && rc == SPSIM_OK;) {
        const char *p = a->value + i;
        size_t n = 0; /* up to the next ',' or the closing ']', within the value */
        while (i + n < a->len - 1 && p[n] != ',')
            n++;
        size_t s = 0, e = n;
        while (s < e && strchr(" '\"", p[s]))
            s++;
        while (e > s && strchr(" '\"", p[e - 1]))
            e--;
        if (e > s)
            rc = word(w, p + s, e - s, a->line, a->name, err);
        i += n + 1;
    }
    return rc;
}

/* The launch-line flag of an argument whose flag is not its name with '-' for '_'. */
static const struct {
    const char *name, *flag;
    bool inverse; /* False is the flag; True is nothing */
} renamed[] = {
    {"add_bias_linear", "--disable-bias-linear", true},
    {"overlap_p2p_comm", "--no-overlap-p2p-communication", true},
    {"fp8", "--fp8-format", false},
    {"fp4", "--fp4-format", false},
    {"virtual_pipeline_model_parallel_size", "--num-virtual-stages-per-pipeline-rank", false},
    {"microbatch_group_size_per_vp_stage", "--microbatch-group-size-per-virtual-pipeline-stage",
     false},
};

/* Arguments read with another (below), or that restate one (validate_args derives
 * virtual_pipeline_model_parallel_size from them). */
static const char *const restated[] = {"num_virtual_stages_per_pipeline_rank",
                                       "num_layers_per_virtual_pipeline_stage",
                                       "checkpoint_activations",
                                       "checkpoint_num_layers",
                                       "world_size",
                                       NULL};

static bool
is_skipped(const struct args *as, const struct arg *a)
{
    for (int i = 0; restated[i]; i++)
        if (strcmp(a->name, restated[i]) == 0)
            return true;
    /* Megatron reads the sharding strategy and the graphs' modules only when they are on. */
    if (strcmp(a->name, "data_parallel_sharding_strategy") == 0)
        return !value_is(find(as, "use_megatron_fsdp"), "True");
    if (strcmp(a->name, "cuda_graph_scope") == 0 || strcmp(a->name, "cuda_graph_modules") == 0) {
        const struct arg *impl = find(as, "cuda_graph_impl");
        return (!impl || value_is(impl, "none")) &&
               !value_is(find(as, "enable_cuda_graph"), "True") &&
               !value_is(find(as, "external_cuda_graph"), "True");
    }
    return false;
}

/* One argument as launch-line words. */
static int
arg_words(struct spsim_sh_words *w, const struct args *as, const struct arg *a,
          struct spsim_error *err)
{
    if (is_skipped(as, a) || value_is(a, "None") || value_is(a, "[]"))
        return SPSIM_OK;
    char flag[80];
    snprintf(flag, sizeof(flag), "--%s", a->name);
    for (char *c = flag + 2; *c; c++)
        *c = *c == '_' ? '-' : *c;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(renamed); i++)
        if (strcmp(a->name, renamed[i].name) == 0) {
            if (renamed[i].inverse)
                return value_is(a, "False") ? word(w, renamed[i].flag, strlen(renamed[i].flag),
                                                   a->line, a->name, err)
                                            : SPSIM_OK;
            snprintf(flag, sizeof(flag), "%s", renamed[i].flag);
        }
    if (value_is(a, "False"))
        return SPSIM_OK;
    int rc = word(w, flag, strlen(flag), a->line, a->name, err);
    if (rc != SPSIM_OK || value_is(a, "True"))
        return rc;
    const char *v = a->value;
    size_t n = a->len;
    if (strncmp(v, "AttnBackend.", 12) == 0) { /* the enum's str(): AttnBackend.flash */
        v += 12;
        n -= 12;
    }
    if (v[0] == '[' && strcmp(a->name, "moe_layer_freq") != 0)
        return list_words(w, a, err);
    if (v[0] != '[')
        return word(w, v, n, a->line, a->name, err);
    char one[1024]; /* moe_layer_freq's list as one expression, without its blanks */
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof(one); i++)
        if (v[i] != ' ')
            one[k++] = v[i];
    return word(w, one, k, a->line, a->name, err);
}

/* What the block leaves to the versions and lines around it: the world size (torchrun's),
 * the 2021 checkpoint_activations (full recomputation of checkpoint_num_layers-layer groups),
 * standard attention for a Megatron-LM older than its flash-attention flags (2023), and the
 * tokenizer's vocabulary from the "padded vocab" line. */
static int
implied_words(struct spsim_sh_words *w, const struct args *as, uint64_t vocab,
              struct spsim_error *err)
{
    const struct arg *world = find(as, "world_size");
    int rc = SPSIM_OK;
    if (world)
        if ((rc = word(w, "--nproc_per_node", 16, world->line, "world_size", err)) ||
            (rc = word(w, world->value, world->len, world->line, "world_size", err)))
            return rc;
    const struct arg *ckpt = find(as, "checkpoint_activations");
    if (value_is(ckpt, "True")) {
        const struct arg *n = find(as, "checkpoint_num_layers");
        static const char *const full[] = {"--recompute-granularity", "full", "--recompute-method",
                                           "uniform", "--recompute-num-layers"};
        for (int i = 0; i < 5 && rc == SPSIM_OK; i++)
            rc = word(w, full[i], strlen(full[i]), ckpt->line, ckpt->name, err);
        if (rc == SPSIM_OK)
            rc = n ? word(w, n->value, n->len, n->line, n->name, err)
                   : word(w, "1", 1, ckpt->line, ckpt->name, err);
    }
    if (rc == SPSIM_OK && !find(as, "attention_backend") && !find(as, "use_flash_attn") &&
        (rc = word(w, "--attention-backend", 19, 0, "attention_backend", err)) == SPSIM_OK)
        rc = word(w, "unfused", 7, 0, "attention_backend", err);
    const struct arg *size = find(as, "vocab_size");
    if (rc == SPSIM_OK && vocab && (!size || value_is(size, "None"))) {
        char v[32];
        snprintf(v, sizeof(v), "%llu", (unsigned long long)vocab);
        if ((rc = word(w, "--vocab-size", 12, 0, "padded vocab", err)) == SPSIM_OK)
            rc = word(w, v, strlen(v), 0, "padded vocab", err);
    }
    return rc;
}

/* The block's configuration through the launch-line rules. */
static int
configure(const struct args *as, uint64_t vocab, const char *origin,
          struct spsim_megatron_config *out, struct spsim_error *err)
{
    struct spsim_sh_words w = {0};
    int rc = word(&w, "pretrain_gpt.py", 15, 0, NULL, err);
    for (size_t i = 0; rc == SPSIM_OK && i < as->n; i++)
        rc = arg_words(&w, as, &as->a[i], err);
    if (rc == SPSIM_OK)
        rc = implied_words(&w, as, vocab, err);
    struct spsim_sh_script sc = {0};
    if (rc == SPSIM_OK && spsim_sh_add_command(&sc, &w) != SPSIM_OK)
        rc = oom(err);
    spsim_sh_words_free(&w);
    if (rc == SPSIM_OK)
        rc = spsim_megatron_words(&sc, origin, out, err);
    spsim_sh_free(&sc);
    return rc;
}

/* The number after `key` in the line, or NaN. */
static double
number_after(const struct line *l, const char *key)
{
    const char *p = in_line(l, key);
    if (!p)
        return NAN;
    char buf[64];
    p += strlen(key);
    size_t n = (size_t)(l->e - p) < sizeof(buf) - 1 ? (size_t)(l->e - p) : sizeof(buf) - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    return end == buf ? (double)NAN : v;
}

/* What a log says beyond its arguments: iteration lines, memory reports, the vocabulary. */
struct scan {
    struct spsim_megatron_run *run;
    size_t cap;
    uint64_t previous;   /* the previous iteration line's iteration in this process */
    uint32_t in_process; /* iteration lines since the last arguments block */
    uint64_t vocab;
};

static int
iteration_line(struct scan *s, const struct line *l, struct spsim_error *err)
{
    double ms = number_after(l, "elapsed time per iteration (ms):");
    double at = number_after(l, " iteration ");
    if (ms != ms || !(at >= 0 && at < 1e18))
        return SPSIM_OK;
    uint64_t k = (uint64_t)at;
    double skipped = number_after(l, "number of skipped iterations:");
    double nans = number_after(l, "number of nan iterations:");
    uint64_t interval = k > s->previous ? k - s->previous : 0;
    s->previous = k;
    /* The first two lines of a process: the first iteration's set-up is in both (training.py
     * resets its interval timer only after the first iteration). */
    if (s->in_process++ < 2 || skipped > 0 || nans > 0 || !(ms > 0)) {
        s->run->n_skipped++;
        return SPSIM_OK;
    }
    struct spsim_megatron_run *r = s->run;
    if (r->n_iterations == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        void *p = realloc(r->iterations, cap * sizeof(*r->iterations));
        if (!p)
            return oom(err);
        r->iterations = p;
        s->cap = cap;
    }
    r->iterations[r->n_iterations++] = (struct spsim_measured_iteration){
        .iteration = k,
        .interval = interval,
        .seconds = ms / 1000.0,
        .tflops_per_gpu = number_after(l, "throughput per GPU (TFLOP/s/GPU):"),
    };
    return SPSIM_OK;
}

/* Every "max allocated: B" of a line of memory reports (several ranks' may share a line). */
static void
memory_line(struct scan *s, const struct line *l)
{
    if (!in_line(l, "memory (MB)"))
        return;
    for (struct line rest = *l; in_line(&rest, "max allocated:");) {
        double mb = number_after(&rest, "max allocated:");
        if (mb == mb && !(s->run->peak_allocated_bytes >= mb * 1048576.0))
            s->run->peak_allocated_bytes = mb * 1048576.0;
        rest.p = in_line(&rest, "max allocated:") + 14;
    }
}

static int
compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of the kept lines' seconds and TFLOP/s (NaN where none). */
static int
medians(struct spsim_megatron_run *r, struct spsim_error *err)
{
    r->median_s = r->median_tflops = NAN;
    if (!r->n_iterations)
        return SPSIM_OK;
    double *v = malloc(r->n_iterations * sizeof(*v));
    if (!v)
        return oom(err);
    for (int which = 0; which < 2; which++) {
        size_t n = 0;
        for (size_t i = 0; i < r->n_iterations; i++) {
            double x = which ? r->iterations[i].tflops_per_gpu : r->iterations[i].seconds;
            if (x == x)
                v[n++] = x;
        }
        if (!n)
            continue;
        qsort(v, n, sizeof(*v), compare_double);
        double m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
        *(which ? &r->median_tflops : &r->median_s) = m;
    }
    free(v);
    r->first_iteration = r->iterations[0].iteration;
    r->last_iteration = r->iterations[r->n_iterations - 1].iteration;
    return SPSIM_OK;
}

/* The first arguments block into `as`; every block restarts the warm-up count. */
static int
scan_log(const char *text, size_t len, struct args *as, struct scan *s, struct spsim_error *err)
{
    struct line l = {0};
    size_t at = 0, prefix = 0;
    int block = 0; /* 0 before the first block, 1 inside it, 2 after it */
    while (next_line(text, len, &at, &l)) {
        const char *head = in_line(&l, args_head);
        if (head) {
            prefix = (size_t)(head - l.p);
            block = block == 0 ? 1 : 2;
            s->in_process = 0;
            s->previous = 0;
            continue;
        }
        if (block == 1 && in_line(&l, args_end)) {
            block = 2;
            continue;
        }
        struct arg a;
        if (block == 1 && parse_arg(&l, prefix, &a)) {
            if (as->n == as->cap) {
                size_t cap = as->cap ? 2 * as->cap : 256;
                void *p = realloc(as->a, cap * sizeof(*as->a));
                if (!p)
                    return oom(err);
                as->a = p;
                as->cap = cap;
            }
            as->a[as->n++] = a;
            continue;
        }
        double v = number_after(&l, "padded vocab (size:");
        if (v == v && !s->vocab && v >= 1)
            s->vocab = (uint64_t)v;
        memory_line(s, &l);
        int rc = block ? iteration_line(s, &l, err) : SPSIM_OK;
        if (rc != SPSIM_OK)
            return rc;
    }
    return SPSIM_OK;
}

int
spsim_megatron_log_parse(const char *text, size_t len, const char *origin,
                         struct spsim_megatron_run *out, struct spsim_error *err)
{
    if (!text || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_megatron_log_parse: NULL argument");
    origin = origin ? origin : "-";
    memset(out, 0, sizeof(*out));
    out->peak_allocated_bytes = NAN;
    struct args as = {0};
    struct scan s = {.run = out};
    int rc = scan_log(text, len, &as, &s, err);
    if (rc == SPSIM_OK && as.n == 0)
        rc = spsim_fail(err, SPSIM_EFIELD,
                        "%s: no arguments block (\"%s\", as Megatron-LM's arguments.py prints it)",
                        origin, args_head);
    if (rc == SPSIM_OK && out->n_iterations == 0)
        rc = spsim_fail(err, SPSIM_EFIELD,
                        "%s: no measured iteration: %zu \"elapsed time per iteration (ms)\" "
                        "lines, each the first two of a process (warm-up) or with skipped or "
                        "NaN iterations",
                        origin, out->n_skipped);
    if (rc == SPSIM_OK)
        rc = configure(&as, s.vocab, origin, &out->config, err);
    if (rc == SPSIM_OK)
        rc = medians(out, err);
    if (rc == SPSIM_OK && out->config.par.pipeline_layout)
        out->config.par.pipeline_layout = out->config.pipeline_layout;
    struct spsim_parallel *p = &out->config.par;
    if (rc == SPSIM_OK)
        out->gpus = p->tp * p->cp * p->pp * p->dp;
    free(as.a);
    if (rc != SPSIM_OK)
        spsim_megatron_run_free(out);
    return rc;
}

/* A golden-values series' numbers in step order: {"values": {"1": x, "2": y, ...}}. */
static int
series(const cJSON *root, const char *key, const char *origin, double **out, uint64_t **steps,
       size_t *n, struct spsim_error *err)
{
    *out = NULL;
    *steps = NULL;
    *n = 0;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!s)
        return SPSIM_OK;
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(s, "values");
    if (!cJSON_IsObject(values))
        return spsim_fail(err, SPSIM_EFIELD, "%s: field '%s.values': not an object", origin, key);
    size_t count = (size_t)cJSON_GetArraySize(values);
    *out = calloc(count ? count : 1, sizeof(**out));
    *steps = calloc(count ? count : 1, sizeof(**steps));
    if (!*out || !*steps)
        return oom(err);
    /* Steps are the keys; cJSON keeps the file's order, which the golden files write in step
     * order; a non-number (NaN written as a string) is left out. */
    for (const cJSON *v = values->child; v; v = v->next)
        if (cJSON_IsNumber(v)) {
            (*steps)[*n] = v->string ? strtoull(v->string, NULL, 10) : 0;
            (*out)[(*n)++] = v->valuedouble;
        }
    return SPSIM_OK;
}

static int
golden(const char *text, size_t len, const char *origin, struct spsim_megatron_run *r,
       struct spsim_error *err)
{
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root)
        return spsim_fail(err, SPSIM_EPARSE, "%s: malformed JSON", origin);
    double *t = NULL, *m = NULL;
    uint64_t *ts = NULL, *ms = NULL;
    size_t nt = 0, nm = 0;
    int rc = series(root, "iteration-time", origin, &t, &ts, &nt, err);
    if (rc == SPSIM_OK)
        rc = series(root, "mem-max-allocated-bytes", origin, &m, &ms, &nm, err);
    if (rc == SPSIM_OK && nt < 2)
        rc = spsim_fail(err, SPSIM_EFIELD,
                        "%s: field 'iteration-time': %zu steps (the first averages in the first "
                        "iteration: at least two are needed)",
                        origin, nt);
    if (rc == SPSIM_OK && !(r->iterations = calloc(nt > 1 ? nt - 1 : 1, sizeof(*r->iterations))))
        rc = oom(err);
    for (size_t i = 1; rc == SPSIM_OK && i < nt; i++) /* the first is the warm-up */
        r->iterations[r->n_iterations++] = (struct spsim_measured_iteration){
            .iteration = ts[i], .interval = 1, .seconds = t[i], .tflops_per_gpu = NAN};
    r->n_skipped = rc == SPSIM_OK ? 1 : 0;
    for (size_t i = 0; i < nm; i++)
        if (!(r->peak_allocated_bytes >= m[i]))
            r->peak_allocated_bytes = m[i];
    free(t);
    free(m);
    free(ts);
    free(ms);
    cJSON_Delete(root);
    return rc;
}

int
spsim_megatron_case_parse(const char *config, size_t config_len, const char *config_origin,
                          const char *golden_text, size_t golden_len, const char *golden_origin,
                          uint32_t gpus, struct spsim_megatron_run *out, struct spsim_error *err)
{
    if (!config || !golden_text || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_megatron_case_parse: NULL argument");
    memset(out, 0, sizeof(*out));
    out->peak_allocated_bytes = NAN;
    int rc = spsim_megatron_parse(config, config_len, config_origin, &out->config, err);
    struct spsim_parallel *p = &out->config.par;
    uint64_t model = (uint64_t)p->tp * p->cp * p->pp;
    if (rc == SPSIM_OK && (gpus == 0 || gpus % model))
        rc = spsim_fail(err, SPSIM_ECONFIG, "%s: %u GPUs are not a multiple of tp·cp·pp = %llu",
                        config_origin ? config_origin : "-", gpus, (unsigned long long)model);
    if (rc == SPSIM_OK) {
        p->dp = (uint32_t)(gpus / model);
        out->gpus = gpus;
        if (p->pipeline_layout)
            p->pipeline_layout = out->config.pipeline_layout;
        rc = golden(golden_text, golden_len, golden_origin ? golden_origin : "-", out, err);
    }
    if (rc == SPSIM_OK)
        rc = medians(out, err);
    if (rc != SPSIM_OK)
        spsim_megatron_run_free(out);
    return rc;
}

void
spsim_megatron_run_free(struct spsim_megatron_run *run)
{
    if (!run)
        return;
    spsim_model_destroy(run->config.model);
    run->config.model = NULL;
    free(run->iterations);
    run->iterations = NULL;
    run->n_iterations = 0;
}
