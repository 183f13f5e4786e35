/*
 * `spsim calibrate --runs FILE...`: measured training runs in, a hardware profile with its
 * efficiency parameters fitted out (doc/calibration.md, "Calibration from measured runs").
 * A runs file is a CSV: spsim's own sweep columns (model, hw, tp, pp, dp, ...: any of the
 * configuration columns `spsim sweep` writes; its result columns are read past), a measured
 * time per iteration, and optionally the cross-validation group, an id and further `spsim
 * query` options. A row spsim cannot state is refused with one line naming the file, the line
 * and the reason.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_COLUMNS 512
#define MAX_WORDS   128

/* One runs file in memory and the cursor of its CSV records. */
struct csv {
    const char *path;
    char *text;
    size_t len, pos;
    uint32_t line; /* of the record being read */
    uint32_t next; /* of the next character */
};

/* One record's fields (pointers into `buf`). */
struct record {
    size_t n;
    char *field[MAX_COLUMNS];
    char buf[65536];
};

/* The next CSV record (RFC 4180: commas, double quotes with "" inside, CRLF or LF), skipping
 * blank lines and lines that start with '#'. @return 1 read, 0 at the end, -1 malformed */
static int
csv_next(struct csv *c, struct record *r)
{
    while (c->pos < c->len &&
           (c->text[c->pos] == '\n' || c->text[c->pos] == '\r' ||
            (c->text[c->pos] == '#' && (c->pos == 0 || c->text[c->pos - 1] == '\n')))) {
        if (c->text[c->pos] == '#')
            while (c->pos < c->len && c->text[c->pos] != '\n')
                c->pos++;
        c->next += c->pos < c->len && c->text[c->pos] == '\n';
        c->pos++;
    }
    if (c->pos >= c->len)
        return 0;
    c->line = c->next;
    size_t out = 0;
    r->n = 0;
    bool quoted = false, start = true;
    for (; c->pos <= c->len; c->pos++) {
        char ch = c->pos < c->len ? c->text[c->pos] : '\n';
        if (start) {
            if (r->n == MAX_COLUMNS || out >= sizeof(r->buf) - 1)
                return -1;
            r->field[r->n++] = r->buf + out;
            start = false;
            if (ch == '"') {
                quoted = true;
                continue;
            }
        }
        if (quoted && ch == '"' && c->pos + 1 < c->len && c->text[c->pos + 1] == '"') {
            r->buf[out++] = '"';
            c->pos++;
        } else if (quoted && ch == '"') {
            quoted = false;
        } else if (!quoted && (ch == ',' || ch == '\n')) {
            r->buf[out++] = '\0';
            start = ch == ',';
            if (ch == '\n') {
                c->next++;
                c->pos++;
                break;
            }
        } else if (ch != '\r' || quoted) {
            c->next += ch == '\n';
            r->buf[out++] = ch;
        }
        if (out >= sizeof(r->buf) - 1)
            return -1;
    }
    return quoted ? -1 : 1;
}

/* ---- the columns --------------------------------------------------------------------------- */

enum col_kind { COL_CONFIG, COL_RESULT, COL_MEASURED, COL_GROUP, COL_ID, COL_ARGS };

struct columns {
    size_t n;
    enum col_kind kind[MAX_COLUMNS];
    const char *name[MAX_COLUMNS]; /* into the header record */
    size_t measured;
};

/* The configuration columns of a sweep row: those before the first memory_ one. */
static bool
sweep_column(const char *name, bool *config)
{
    static char header[SPSIM_ROW_MAX];
    if (!header[0])
        spsim_row_header(SPSIM_ROW_CSV, header, sizeof(header));
    bool before_memory = true;
    for (const char *p = header; *p;) {
        size_t n = strcspn(p, ",\n");
        if (strncmp(p, "memory_", 7) == 0)
            before_memory = false;
        if (strlen(name) == n && strncmp(p, name, n) == 0) {
            *config = before_memory;
            return true;
        }
        p += n + (p[n] != '\0');
    }
    return false;
}

static int
read_header(struct csv *c, struct record *h, struct columns *cols)
{
    int got = csv_next(c, h);
    if (got <= 0)
        return cli_error(EXIT_INPUT, "%s: line %u: %s", c->path, c->line,
                         got ? "malformed CSV record" : "no header line");
    cols->n = h->n;
    cols->measured = SIZE_MAX;
    for (size_t i = 0; i < h->n; i++) {
        const char *s = cols->name[i] = h->field[i];
        bool config = false;
        if (strcmp(s, "measured_iteration_s") == 0)
            cols->kind[i] = COL_MEASURED, cols->measured = i;
        else if (strcmp(s, "group") == 0)
            cols->kind[i] = COL_GROUP;
        else if (strcmp(s, "id") == 0)
            cols->kind[i] = COL_ID;
        else if (strcmp(s, "args") == 0)
            cols->kind[i] = COL_ARGS;
        else if (sweep_column(s, &config))
            cols->kind[i] = config ? COL_CONFIG : COL_RESULT;
        else
            return cli_error(EXIT_INPUT,
                             "%s: line %u: column %s is neither a column of spsim sweep's rows "
                             "nor measured_iteration_s, group, id or args",
                             c->path, c->line, CLI_Q(s));
    }
    if (cols->measured == SIZE_MAX)
        return cli_error(EXIT_INPUT, "%s: line %u: no measured_iteration_s column", c->path,
                         c->line);
    return EXIT_OK;
}

/* ---- one run ------------------------------------------------------------------------------- */

/* Sweep columns whose option is spelled otherwise; on/off columns without a negation take
 * `off` NULL (the default, checked afterwards like every column). */
static const struct {
    const char *column, *on, *off;
} flag_columns[] = {
    {"sp", "sp", "no-sp"},
    {"flash_attn", "flash-attn", "no-flash-attn"},
    {"distributed_optimizer", "distributed-optimizer", "no-distributed-optimizer"},
    {"overlap_grad_reduce", "overlap-grad-reduce", "no-overlap-grad-reduce"},
    {"fp8_param_gather", "fp8-param-gather", "no-fp8-param-gather"},
    {"account_embedding", "account-for-embedding-in-pipeline-split", NULL},
    {"account_loss", "account-for-loss-in-pipeline-split", NULL},
    {"grad_reduce_in_fp32", "grad-reduce-in-fp32", "grad-reduce-in-bf16"},
    {"overlap_param_gather", "overlap-param-gather", "no-overlap-param-gather"},
    {"no_overlap_p2p", "no-overlap-p2p-communication", "overlap-p2p-communication"},
    {"tp_comm_overlap", "tp-comm-overlap", "no-tp-comm-overlap"},
    {"moe_a2a_overlap", "overlap-moe-expert-parallel-comm", "no-overlap-moe-expert-parallel-comm"},
    {"delay_wgrad_compute", "delay-wgrad-compute", "no-delay-wgrad-compute"},
    {"first_last_layers_bf16", "first-last-layers-bf16", "no-first-last-layers-bf16"},
    {"precision_aware_optimizer", "use-precision-aware-optimizer", NULL},
};
static const struct {
    const char *column, *option;
} renamed_columns[] = {
    {"bf16_layers_start", "num-layers-at-start-in-bf16"},
    {"bf16_layers_end", "num-layers-at-end-in-bf16"},
    {"lora_targets", "lora-target-modules"},
};
/* Columns the configuration derives (checked, never set). */
static const char *const derived_columns[] = {"gpus", "padded_vocab"};

static bool
truthy(const char *v, bool *on)
{
    static const char *const yes[] = {"true", "on", "1", "yes"}, *const no[] = {"false", "off", "0",
                                                                                "no"};
    for (size_t i = 0; i < 4; i++)
        if (strcmp(v, yes[i]) == 0 || strcmp(v, no[i]) == 0) {
            *on = strcmp(v, yes[i]) == 0;
            return true;
        }
    return false;
}

/* A sweep column as `spsim query` words: "--tp", "4"; a flag column "--sp" or "--no-sp";
 * nothing for a derived column, a default ("none", "default", "0"), or off without a negation.
 * @return the number of words (0, 1 or 2), -1 when the value cannot be read */
static int
column_words(const char *col, const char *value, char opt[96], const char **arg)
{
    for (size_t i = 0; i < CLI_ARRAY_LENGTH(derived_columns); i++)
        if (strcmp(col, derived_columns[i]) == 0)
            return 0;
    for (size_t i = 0; i < CLI_ARRAY_LENGTH(flag_columns); i++) {
        bool on;
        if (strcmp(col, flag_columns[i].column) != 0)
            continue;
        if (!truthy(value, &on))
            return -1;
        const char *name = on ? flag_columns[i].on : flag_columns[i].off;
        return name ? (snprintf(opt, 96, "--%s", name), 1) : 0;
    }
    if (!value[0] || strcmp(value, "none") == 0 || strcmp(value, "default") == 0 ||
        strcmp(value, "0") == 0)
        return 0;
    const char *name = col;
    for (size_t i = 0; i < CLI_ARRAY_LENGTH(renamed_columns); i++)
        if (strcmp(col, renamed_columns[i].column) == 0)
            name = renamed_columns[i].option;
    int n = snprintf(opt, 96, "--%s", name);
    for (int i = 2; i < n; i++)
        opt[i] = opt[i] == '_' ? '-' : opt[i];
    *arg = value;
    return 2;
}

/* Split an args cell into words at blanks ('...' and "..." quote). @return count or -1 */
static int
split_words(char *s, char **words, int cap)
{
    int n = 0;
    for (char *p = s; *p;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        if (n == cap)
            return -1;
        char q = *p == '"' || *p == '\'' ? *p++ : 0, *out = p;
        words[n++] = out;
        while (*p && (q ? *p != q : !isspace((unsigned char)*p)))
            *out++ = *p++;
        if (q && !*p)
            return -1;
        if (*p)
            p++;
        *out = '\0';
    }
    return n;
}

static int
no_own_option(void *ctx, int opt, const char *arg, const char *current)
{
    (void)ctx, (void)opt, (void)arg;
    return cli_error(EXIT_INPUT, "%s is not a configuration option", CLI_Q(current));
}

/* The runs read so far and what they own. */
struct runs {
    struct spsim_run *run;
    size_t n, cap;
    struct spsim_model **model; /* one per run, owned */
    char **text;                /* the runs' group and id strings, owned */
    size_t ntext;
    const char *base;          /* --base, or NULL: the hardware the rows name */
    struct spsim_hardware *hw; /* the base profile, on which every row is checked */
    char hw_name[256];         /* the hardware the rows name */
};

static char *
keep(struct runs *rs, const char *s)
{
    char **grown = realloc(rs->text, (rs->ntext + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    rs->text = grown;
    return rs->text[rs->ntext++] = strdup(s);
}

/* A model's family: its name without a trailing size ("llama3-70b" -> "llama3",
 * "qwen3-30b-a3b" -> "qwen3", "mixtral-8x7b" -> "mixtral"); the name itself if it has none. */
static void
family_of(const char *model, char *out, size_t cap)
{
    size_t n;
    const char *base = cli_profile_stem(model, &n);
    for (size_t i = 1; i < n; i++)
        if (base[i - 1] == '-' && isdigit((unsigned char)base[i])) {
            size_t j = i;
            while (j < n && (isalnum((unsigned char)base[j]) || base[j] == '.'))
                j++;
            if (memchr(base + i, 'b', j - i) || memchr(base + i, 'B', j - i)) {
                n = i - 1;
                break;
            }
        }
    snprintf(out, cap, "%.*s", (int)n, base);
}

/* The words of a row (*n of them): the program name, the configuration columns' options, the
 * args cell's words. */
static int
row_words(const struct csv *c, struct record *r, const struct columns *cols, char **words,
          char opts[][96], int *n)
{
    *n = 0;
    words[(*n)++] = "calibrate --runs";
    for (size_t i = 0; i < cols->n; i++) {
        const char *arg = NULL;
        int k = 0;
        if (cols->kind[i] == COL_ARGS) {
            k = split_words(r->field[i], words + *n, MAX_WORDS - *n - 1);
            if (k < 0)
                return cli_error(EXIT_INPUT,
                                 "%s: line %u: args: an unbalanced quote or too many words",
                                 c->path, c->line);
            *n += k;
            continue;
        }
        if (cols->kind[i] != COL_CONFIG)
            continue;
        bool name = strcmp(cols->name[i], "model") == 0 || strcmp(cols->name[i], "hw") == 0;
        if (name && r->field[i][0]) { /* the profile NAME or FILE as given */
            snprintf(opts[i], 96, "--%s", cols->name[i]);
            arg = r->field[i];
            k = 2;
        } else if (!name) {
            k = column_words(cols->name[i], r->field[i], opts[i], &arg);
        }
        if (k < 0)
            return cli_error(EXIT_INPUT, "%s: line %u: column %s: %s is not true or false", c->path,
                             c->line, CLI_Q(cols->name[i]), CLI_Q(r->field[i]));
        if (*n + k >= MAX_WORDS)
            return cli_error(EXIT_INPUT, "%s: line %u: too many options", c->path, c->line);
        if (k > 0)
            words[(*n)++] = opts[i];
        if (k > 1)
            words[(*n)++] = (char *)arg;
    }
    words[*n] = NULL;
    return EXIT_OK;
}

/* The configuration a row states (*model loaded, cfg finished as `spsim query` finishes it). */
static int
row_config(const struct csv *c, struct record *r, const struct columns *cols,
           struct cli_config *cfg, struct spsim_model **model)
{
    static char opts[MAX_COLUMNS][96];
    char *words[MAX_WORDS];
    int n = 0;
    int rc = row_words(c, r, cols, words, opts, &n);
    if (rc != EXIT_OK)
        return rc;
    /* No model or hardware default (a row names both), and the model flags left at "keep the
     * profile's" (-1: a zero would drop a profile's MTP layers and capacity factor). */
    *cfg = (struct cli_config){.mtp_layers = -1, .capacity_factor = -1, .pad_to_capacity = -1};
    spsim_parallel_defaults(&cfg->par);
    cfg->pp_set = cfg->vpp_set = true; /* the row's pp and vpp as they are */
    char context[4200];
    snprintf(context, sizeof(context), "%s: line %u", c->path, c->line);
    cli_error_context(context);
    struct cli_command cmd = {
        .name = "calibrate", .help = "", .config = cfg, .handle = no_own_option};
    rc = cli_parse_options(&cmd, n, words);
    if (rc == -1)
        rc = cli_error(EXIT_INPUT, "--help is not a configuration option");
    else if (rc == EXIT_OK && !cfg->model && !cfg->imported)
        rc = cli_error(EXIT_INPUT, "no model (a model column, or --model in args)");
    else if (rc == EXIT_OK && !cfg->hardware)
        rc = cli_error(EXIT_INPUT, "no hardware (an hw column, or --hw in args)");
    if (rc == EXIT_OK)
        rc = cli_config_model(cfg, model);
    if (rc == EXIT_OK && (rc = cli_config_finish(cfg, *model)) != EXIT_OK) {
        spsim_model_destroy(*model);
        *model = NULL;
    }
    spsim_model_destroy(cfg->imported);
    cli_error_context(NULL);
    return rc == EXIT_OK ? EXIT_OK : EXIT_INPUT;
}

/* Do two cells say the same: equal text, the same truth value or the same number. */
static bool
same_value(const char *a, const char *b)
{
    bool x, y;
    if (strcmp(a, b) == 0)
        return true;
    if (truthy(a, &x) && truthy(b, &y))
        return x == y;
    char *ea, *eb;
    double u = strtod(a, &ea), v = strtod(b, &eb);
    return *a && *b && !*ea && !*eb && fabs(u - v) <= 1e-9 * fmax(fabs(u), fabs(v));
}

/* Every configuration column of the row against what spsim states for it: a value no option
 * could give shows here. */
static int
row_check(const struct csv *c, struct record *r, const struct columns *cols,
          const struct spsim_result *res)
{
    static char header[SPSIM_ROW_MAX], row[SPSIM_ROW_MAX + 64];
    static struct record hr, rr;
    spsim_row_header(SPSIM_ROW_CSV, header, sizeof(header));
    spsim_row_format(SPSIM_ROW_CSV, "m", "h", res, row, sizeof(row));
    struct csv ch = {.path = "", .text = header, .len = strlen(header)};
    struct csv cr = {.path = "", .text = row, .len = strlen(row)};
    if (csv_next(&ch, &hr) != 1 || csv_next(&cr, &rr) != 1 || hr.n != rr.n)
        return cli_error(EXIT_RUNTIME, "the sweep row of %s line %u cannot be read back", c->path,
                         c->line);
    for (size_t i = 0; i < cols->n; i++) {
        if (cols->kind[i] != COL_CONFIG || !r->field[i][0] || strcmp(cols->name[i], "model") == 0 ||
            strcmp(cols->name[i], "hw") == 0)
            continue;
        for (size_t j = 0; j < hr.n; j++)
            if (strcmp(hr.field[j], cols->name[i]) == 0 && !same_value(r->field[i], rr.field[j]))
                return cli_error(EXIT_INPUT,
                                 "%s: line %u: column %s is %s, but the configuration spsim "
                                 "states from the row has %s (no option of spsim's gives it)",
                                 c->path, c->line, CLI_Q(cols->name[i]), CLI_Q(r->field[i]),
                                 CLI_Q(rr.field[j]));
    }
    return EXIT_OK;
}

/* The measured time of a row. */
static int
row_measured(const struct csv *c, const struct record *r, const struct columns *cols, double *s)
{
    const char *v = r->field[cols->measured];
    char *end;
    *s = strtod(v, &end);
    if (!*v || *end || !isfinite(*s) || !(*s > 0))
        return cli_error(EXIT_INPUT,
                         "%s: line %u: measured_iteration_s %s is not a positive number of "
                         "seconds",
                         c->path, c->line, CLI_Q(v));
    return EXIT_OK;
}

static int
grow(struct runs *rs)
{
    if (rs->n < rs->cap)
        return EXIT_OK;
    size_t cap = rs->cap ? 2 * rs->cap : 64;
    struct spsim_run *run = realloc(rs->run, cap * sizeof(*run));
    if (run)
        rs->run = run;
    struct spsim_model **model = run ? realloc(rs->model, cap * sizeof(*model)) : NULL;
    if (!model)
        return cli_error(EXIT_RUNTIME, "out of memory");
    rs->model = model;
    rs->cap = cap;
    return EXIT_OK;
}

/* One record: its configuration, stated and checked on the base profile, and its time. */
static int
add_run(struct runs *rs, const struct csv *c, struct record *r, const struct columns *cols)
{
    if (r->n != cols->n)
        return cli_error(EXIT_INPUT, "%s: line %u: %zu fields, the header has %zu", c->path,
                         c->line, r->n, cols->n);
    struct cli_config cfg;
    struct spsim_model *model = NULL;
    double measured;
    int rc = grow(rs);
    if (rc == EXIT_OK)
        rc = row_measured(c, r, cols, &measured);
    if (rc == EXIT_OK)
        rc = row_config(c, r, cols, &cfg, &model);
    if (rc != EXIT_OK)
        return rc;
    rs->model[rs->n++] = model; /* the runs' to free from here */
    if (!rs->hw_name[0])
        snprintf(rs->hw_name, sizeof(rs->hw_name), "%s", cfg.hardware);
    else if (strcmp(rs->hw_name, cfg.hardware) != 0)
        return cli_error(EXIT_INPUT,
                         "%s: line %u: hardware %s, earlier runs %s: one fit is one profile",
                         c->path, c->line, CLI_Q(cfg.hardware), CLI_Q(rs->hw_name));
    if (!rs->hw && (rc = cli_load_hardware(rs->base ? rs->base : rs->hw_name, &rs->hw)))
        return rc;
    struct spsim_result res;
    struct spsim_error err = {0};
    if (spsim_evaluate(model, rs->hw, &cfg.par, &res, &err) != SPSIM_OK)
        return cli_error(EXIT_INPUT, "%s: line %u: %s", c->path, c->line, err.message);
    if ((rc = row_check(c, r, cols, &res)) != EXIT_OK)
        return rc;
    char group[600], id[4200], family[256];
    family_of(cfg.model ? cfg.model : spsim_model_name(model), family, sizeof(family));
    snprintf(group, sizeof(group), "%s x %s", family, rs->hw_name);
    snprintf(id, sizeof(id), "%s:%u", c->path, c->line);
    for (size_t i = 0; i < cols->n; i++) {
        if (cols->kind[i] == COL_GROUP && r->field[i][0])
            snprintf(group, sizeof(group), "%s", r->field[i]);
        if (cols->kind[i] == COL_ID && r->field[i][0])
            snprintf(id, sizeof(id), "%s", r->field[i]);
    }
    struct spsim_run *run = &rs->run[rs->n - 1];
    *run = (struct spsim_run){model, cfg.par, measured, keep(rs, group), keep(rs, id)};
    /* The layout points into the row's words: the run keeps its own copy. */
    if (cfg.par.pipeline_layout && !(run->par.pipeline_layout = keep(rs, cfg.par.pipeline_layout)))
        return cli_error(EXIT_RUNTIME, "out of memory");
    if (!run->group || !run->id)
        return cli_error(EXIT_RUNTIME, "out of memory");
    return EXIT_OK;
}

static void
free_runs(struct runs *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        spsim_model_destroy(rs->model[i]);
    for (size_t i = 0; i < rs->ntext; i++)
        free(rs->text[i]);
    free(rs->run);
    free(rs->model);
    free(rs->text);
    spsim_hardware_destroy(rs->hw);
}

static int
read_text(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return cli_error(EXIT_INPUT, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t got = 1; buf && got;) {
        if (n + 1 >= cap) {
            char *grown = cap < (1u << 30) ? realloc(buf, cap *= 2) : NULL;
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    }
    bool failed = ferror(f);
    fclose(f);
    if (!buf || failed) {
        free(buf);
        return cli_error(EXIT_INPUT, "%s: cannot read%s", path, buf ? "" : ": out of memory");
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return EXIT_OK;
}

/* Whether a file is a Megatron-LM training log rather than a runs CSV: its arguments block or
 * its iteration lines (training.py). */
static bool
is_megatron_log(const char *text)
{
    return strstr(text, "------------------------ arguments ------------------------") ||
           strstr(text, "elapsed time per iteration (ms)");
}

/* A Megatron-LM training log as one run (spsim_megatron_log_parse: the arguments block, the
 * median of the iteration lines after the warm-up): on the hardware the runs name (--base, or
 * the runs files' hw), checked there like a row. */
static int
add_log_run(struct runs *rs, const char *path, const char *text, size_t len)
{
    struct spsim_megatron_run m = {0};
    struct spsim_error err = {0};
    if (spsim_megatron_log_parse(text, len, path, &m, &err) != SPSIM_OK)
        return cli_error(EXIT_INPUT, "%s", err.message);
    int rc = grow(rs);
    if (rc == EXIT_OK && m.n_iterations == 0)
        rc = cli_error(EXIT_INPUT,
                       "%s: no iteration line kept (%zu left out: the warm-up, skipped or NaN "
                       "iterations)",
                       path, m.n_skipped);
    if (rc == EXIT_OK && !rs->base && !rs->hw_name[0])
        rc = cli_error(EXIT_INPUT,
                       "%s: a Megatron-LM log names no hardware: give --base, or a runs file "
                       "whose rows name it",
                       path);
    if (rc == EXIT_OK && !rs->hw)
        rc = cli_load_hardware(rs->base ? rs->base : rs->hw_name, &rs->hw);
    if (rc != EXIT_OK) {
        spsim_megatron_run_free(&m);
        return rc;
    }
    if (!rs->hw_name[0])
        snprintf(rs->hw_name, sizeof(rs->hw_name), "%s", rs->base);
    struct spsim_model *model = m.config.model;
    m.config.model = NULL;
    rs->model[rs->n++] = model; /* the runs' to free from here */
    struct spsim_parallel par = m.config.par;
    double measured = m.median_s;
    spsim_megatron_run_free(&m);
    struct spsim_result res;
    if (spsim_evaluate(model, rs->hw, &par, &res, &err) != SPSIM_OK)
        return cli_error(EXIT_INPUT, "%s: %s", path, err.message);
    char group[600], family[256];
    family_of(spsim_model_name(model), family, sizeof(family));
    snprintf(group, sizeof(group), "%s x %s", family, rs->hw_name);
    struct spsim_run *run = &rs->run[rs->n - 1];
    *run = (struct spsim_run){model, par, measured, keep(rs, group), keep(rs, path)};
    if (par.pipeline_layout && !(run->par.pipeline_layout = keep(rs, par.pipeline_layout)))
        return cli_error(EXIT_RUNTIME, "out of memory");
    return run->group && run->id ? EXIT_OK : cli_error(EXIT_RUNTIME, "out of memory");
}

static int
read_runs(struct runs *rs, const char *path)
{
    static struct record header, rec;
    struct csv c = {.path = path, .next = 1};
    int rc = read_text(path, &c.text, &c.len);
    static struct columns cols;
    cols.n = 0;
    if (rc == EXIT_OK && is_megatron_log(c.text)) {
        rc = add_log_run(rs, path, c.text, c.len);
        free(c.text);
        return rc;
    }
    if (rc == EXIT_OK)
        rc = read_header(&c, &header, &cols);
    for (int got; rc == EXIT_OK && (got = csv_next(&c, &rec)) != 0;)
        rc = got < 0 ? cli_error(EXIT_INPUT, "%s: line %u: malformed CSV record", path, c.line)
                     : add_run(rs, &c, &rec, &cols);
    free(c.text);
    return rc;
}

/* ---- the report ---------------------------------------------------------------------------- */

static double
rel(double predicted, double measured)
{
    return 100 * (predicted / measured - 1);
}

static void
print_runs(FILE *f, const struct runs *rs, const struct spsim_runs_calibration *cal)
{
    fprintf(f, "# %-40s %-28s %11s %11s %7s %11s %7s %11s %7s\n", "run", "group", "measured",
            "sourced", "err", "fitted", "err", "cross-val", "err");
    double sum[3] = {0, 0, 0};
    for (size_t i = 0; i < rs->n; i++) {
        const struct spsim_run *r = &rs->run[i];
        const struct spsim_runs_prediction *p = &cal->runs[i];
        double e[3] = {rel(p->sourced_s, r->measured_s), rel(p->fitted_s, r->measured_s),
                       rel(p->cv_s, r->measured_s)};
        fprintf(f, "  %-40s %-28s %11.5g %11.5g %+6.1f%% %11.5g %+6.1f%% %11.5g %+6.1f%%\n", r->id,
                r->group, r->measured_s, p->sourced_s, e[0], p->fitted_s, e[1], p->cv_s, e[2]);
        for (int k = 0; k < 3; k++)
            sum[k] += fabs(e[k]);
    }
    fprintf(f, "# mean |error| over %zu runs: sourced %.1f %%, fitted %.1f %%", rs->n,
            sum[0] / rs->n, sum[1] / rs->n);
    if (cal->ngroups)
        fprintf(f, ", leave-one-group-out cross-validated %.1f %% (%zu groups)\n", sum[2] / rs->n,
                cal->ngroups);
    else
        fprintf(f, " (not cross-validated)\n");
}

static void
print_params(FILE *f, const struct spsim_runs_calibration *cal)
{
    fprintf(f, "# parameters (%zu iterations, %s)\n", cal->iterations,
            cal->status == 0 ? "converged" : "stopped at the best point reached");
    for (size_t k = 0; k < cal->nparams; k++) {
        const struct spsim_runs_param *q = &cal->param[k];
        if (!q->present)
            fprintf(f, "#   %-13s not in the base profile (%s)\n", q->name, q->field);
        else if (!q->fitted)
            fprintf(f, "#   %-13s %10.5g          prior, the runs do not move it (%s)\n", q->name,
                    q->value, q->field);
        else
            /* At a bound the transform's slope is 0: the bound, not the runs, holds it. */
            fprintf(f, "#   %-13s %10.5g +- %-8.2g prior %g, bounds [%g, %g]%s (%s)\n", q->name,
                    q->value, q->sigma, q->prior, q->lo, q->hi,
                    fmin(q->value - q->lo, q->hi - q->value) < 1e-6 * (q->hi - q->lo)
                        ? ", at its bound"
                        : "",
                    q->field);
    }
}

int
cli_calibrate_runs(const char *const *files, size_t nfiles, const char *base, const char *name,
                   const char *output, bool cross, const char *command_line)
{
    struct runs rs = {.base = base};
    int rc = EXIT_OK;
    for (size_t i = 0; rc == EXIT_OK && i < nfiles; i++)
        rc = read_runs(&rs, files[i]);
    if (rc == EXIT_OK && rs.n == 0)
        rc = cli_error(EXIT_INPUT, "%s: no runs", nfiles ? files[0] : "--runs");
    char path[4096];
    struct spsim_error err = {0};
    if (rc == EXIT_OK && spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, base ? base : rs.hw_name,
                                               path, sizeof(path), &err) != SPSIM_OK)
        rc = cli_fail(&err);
    struct spsim_calibrate_options o;
    spsim_calibrate_defaults(&o);
    o.base_path = path;
    o.name = name;
    o.command_line = command_line;
    struct spsim_runs_calibration cal = {0};
    if (rc == EXIT_OK && spsim_calibrate_runs(&o, rs.run, rs.n, cross, &cal, &err) != SPSIM_OK)
        rc = err.code == SPSIM_ECONFIG || err.code == SPSIM_EINVAL
                 ? cli_error(EXIT_INPUT, "%s", err.message)
                 : cli_fail(&err);
    if (rc == EXIT_OK) {
        print_runs(stdout, &rs, &cal);
        print_params(stdout, &cal);
        if (spsim_runs_calibration_write(&cal, output, &err) != SPSIM_OK)
            rc = cli_error(EXIT_RUNTIME, "%s", err.message);
    }
    if (rc == EXIT_OK)
        printf("# wrote %s (profile '%s', fitted; base %s)\n", output, name, path);
    spsim_runs_calibration_free(&cal);
    free_runs(&rs);
    return rc == EXIT_OK ? cli_output_close(&(struct cli_output){.stream = stdout}) : rc;
}
