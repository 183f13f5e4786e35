/*
 * spsim optimize: the best configurations of a model on N GPUs, found by the library's branch
 * and bound (spsim_optimize_run) over every axis the hardware supports, ranked by throughput;
 * the table shows the axes in which the best rows differ, then the runner-up is compared with
 * the winner term by term.
 */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char optimize_help[] =
    "Usage: spsim optimize --model M --hw H --gpus N [--gbs B | --max-gbs B] [OPTIONS]\n"
    "\n"
    "Find the best parallel configurations of a model on N GPUs (dp = N / (tp*cp*pp)) that fit\n"
    "in memory, ranked by throughput, with their memory per GPU and MFU, and what makes the\n"
    "runner-up lose. The search covers every axis below and proves its answer the best of the\n"
    "space: branch and bound over lower bounds of each configuration's time and memory\n"
    "(doc/sweep.md, 'How optimize searches'), aliases of one configuration counted once. The\n"
    "table's second line says what the search evaluated (layer evaluations, configurations\n"
    "checked, evaluated in full or by memory alone); the bounds proved the rest unable to rank.\n"
    "\n"
    "Problem:\n"
    "  --model NAME|FILE      model profile (required; a Hugging Face config.json or its folder\n"
    "                         too)\n"
    "  --hw NAME|FILE         hardware profile (required)\n"
    "  --gpus N               number of GPUs (required)\n"
    "  --gbs B                global batch size (default N: one sequence per GPU, so that\n"
    "                         every data-parallel size is admissible)\n"
    "  --max-gbs B            instead of --gbs: each configuration's batch is the largest\n"
    "                         multiple of dp*mbs (dp*mbs*pp with interleaving) up to B\n"
    "Constraints (each list restricts the search; the defaults search everything):\n"
    "  --tp LIST, --cp LIST   default: every divisor of N\n"
    "  --pp LIST              default: every divisor of N up to the layer count\n"
    "  --vpp LIST             default 1..layers\n"
    "  --pp-split LIST        even, account (embedding and loss count as layers), balanced\n"
    "                         (lighter first and last stages); default all three\n"
    "  --mbs LIST             default 1..64:*2\n"
    "  --sp LIST              default on,off\n"
    "  --recompute LIST       default none,selective,full\n"
    "  --recompute-modules LIST   default: every set of the model's modules\n"
    "  --recompute-method LIST, --recompute-layers LIST   default every method, 0..layers\n"
    "  --offload-layers LIST  default 0..layers-1 (dense models, hardware with a host link)\n"
    "  --distributed-optimizer LIST, --overlap-grad-reduce LIST, --overlap-param-gather LIST\n"
    "                         default on,off\n"
    "  --zero LIST            Megatron-FSDP sharding over dp*cp; default 0,2,3 (level 1 is the\n"
    "                         distributed optimizer; --zero 1 repeats it)\n"
    "  --cp-comm-type LIST    default p2p,all_gather,a2a\n"
    "  --dtype LIST, --fp8-recipe LIST   default: bf16 and what the GPU has (fp8 with the\n"
    "                         delayed, current and blockwise recipes; nvfp4 and mxfp8 on GPUs\n"
    "                         with an NVFP4 peak)\n"
    "  --tp-comm-overlap LIST, --overlap-p2p-communication LIST   default on,off\n"
    "  --num-distributed-optimizer-instances LIST   HSDP replicas (default 1)\n"
    "  --ep LIST, --etp LIST, --moe-dispatcher LIST   MoE: every ep dividing gcd(N, experts),\n"
    "                         etp 0 (tp) and the divisors of the NVLink domain, alltoall and\n"
    "                         allgather\n"
    "  --seq LIST, --flash-attn LIST, --grad-reduce-in-fp32 LIST   default: the model's,\n"
    "                         Megatron's\n"
    "  --max-memory-gib X     memory per GPU at most X GiB (default: what the GPU reports\n"
    "                         less what tensors cannot use)\n"
    "Output:\n"
    "  --top K                how many configurations to show (default 5, at most 1000)\n"
    "  --by M                 rank by tokens_per_s (default: throughput, the order of the time\n"
    "                         to train a token budget), iteration_s, total_bytes or mfu (against\n"
    "                         the dense BF16 peak, the order of throughput)\n"
    "  --train-tokens T       also print each configuration's time to train T tokens (1e12,\n"
    "                         15T, ...)\n"
    "  --format F             table (default), csv or jsonl (rows as 'spsim sweep' writes), or\n"
    "                         megatron (the best configuration's Megatron-LM launch line)\n"
    "  --exhaustive           evaluate every point of the space instead (the bounds' check;\n"
    "                         small spaces only)\n"
    "  --threads N            threads of the search (default: every core; --exhaustive runs\n"
    "                         on one); the answer is the same for any N\n"
    "  -o, --output FILE      write FILE atomically instead of standard output\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 ok, 1 runtime failure, 2 bad option, 3 bad profile file, 4 no valid\n"
    "configuration fits.\n";

enum { OPT_MAXMEM = 5000, OPT_TOP, OPT_BY, OPT_FORMAT, OPT_THREADS, OPT_EXHAUSTIVE, OPT_TOKENS };

/* --format megatron: the best configuration's Megatron-LM launch line. */
#define OPTIMIZE_MEGATRON 100

struct optimize_args {
    struct cli_axes axes;
    const char *gpus;
    uint64_t top;
    enum spsim_sweep_by by;
    int format; /* SPSIM_ROW_NONE = table; OPTIMIZE_MEGATRON */
    double max_gib, train_tokens;
    bool exhaustive;
    unsigned threads; /* 0: every core */
    const char *output;
};

/* "15T", "1e12", "300B": a token count. */
static int
parse_tokens(const char *arg, double *out)
{
    char *end = NULL;
    double v = strtod(arg, &end), scale = 1;
    if (end && *end && !end[1])
        scale = *end == 'K'                  ? 1e3
                : *end == 'M'                ? 1e6
                : *end == 'B' || *end == 'G' ? 1e9
                : *end == 'T'                ? 1e12
                                             : 0;
    if (!end || end == arg || (*end && (end[1] || scale == 0)) || !(v > 0) || !isfinite(v))
        return cli_usage_error(
            "optimize", "--train-tokens: '%s' is not a positive token count (e.g. 1e12, 15T)", arg);
    *out = v * scale;
    return EXIT_OK;
}

static int
parse_option(void *ctx, int opt, const char *arg, const char *current)
{
    struct optimize_args *a = ctx;
    enum spsim_row_format format;
    int rc = EXIT_OK;
    switch (opt) {
    case OPT_MAXMEM:
        return cli_parse_double("--max-memory-gib", arg, 1.0 / 1024, 1 << 20, &a->max_gib);
    case OPT_TOP:
        return cli_parse_u64("--top", arg, 1, SPSIM_OPTIMIZE_MAX_TOP, &a->top);
    case OPT_BY:
        return cli_parse_by("optimize", arg, &a->by);
    case OPT_TOKENS:
        return parse_tokens(arg, &a->train_tokens);
    case OPT_EXHAUSTIVE:
        a->exhaustive = true;
        return EXIT_OK;
    case OPT_FORMAT:
        if (strcmp(arg, "table") == 0)
            a->format = SPSIM_ROW_NONE;
        else if (strcmp(arg, "megatron") == 0)
            a->format = OPTIMIZE_MEGATRON;
        else if ((rc = cli_parse_row_format("optimize", arg, &format)) == EXIT_OK)
            a->format = format;
        return rc;
    case OPT_THREADS:
        return cli_parse_u32("--threads", arg, 1, 256, &a->threads);
    case 'o':
        a->output = arg;
        return EXIT_OK;
    default:
        return cli_usage_error("optimize", "unknown option %s", CLI_Q(current));
    }
}

static int
parse(int argc, char **argv, struct optimize_args *a)
{
    static const struct option own[] = {{"max-memory-gib", required_argument, NULL, OPT_MAXMEM},
                                        {"top", required_argument, NULL, OPT_TOP},
                                        {"by", required_argument, NULL, OPT_BY},
                                        {"train-tokens", required_argument, NULL, OPT_TOKENS},
                                        {"exhaustive", no_argument, NULL, OPT_EXHAUSTIVE},
                                        {"format", required_argument, NULL, OPT_FORMAT},
                                        {"threads", required_argument, NULL, OPT_THREADS},
                                        {"output", required_argument, NULL, 'o'}};
    const struct cli_command c = {.name = "optimize",
                                  .help = optimize_help,
                                  .axes = &a->axes,
                                  .own = own,
                                  .nown = CLI_ARRAY_LENGTH(own),
                                  .handle = parse_option,
                                  .ctx = a};
    int rc = cli_parse_options(&c, argc, argv);
    if (rc != EXIT_OK)
        return rc;
    a->gpus = a->axes.text[SPSIM_AXIS_GPUS];
    uint32_t n32;
    if (!a->axes.text[SPSIM_AXIS_MODEL] || !a->axes.text[SPSIM_AXIS_HW] || !a->gpus)
        return cli_usage_error("optimize", "--model, --hw and --gpus are required");
    if (a->axes.text[SPSIM_AXIS_DP])
        return cli_usage_error("optimize", "--dp: dp is derived from --gpus");
    if (cli_parse_u32("--gpus", a->gpus, 1, 1u << 24, &n32) != EXIT_OK)
        return EXIT_USAGE;
    return EXIT_OK;
}

/* The search space: the options, and every axis the hardware supports where they say nothing
 * (spsim_sweep_spec_optimize_space). */
static int
build_space(const struct optimize_args *a, const struct spsim_model *model,
            const struct spsim_hardware *hw, struct spsim_sweep **out)
{
    uint32_t gpus = (uint32_t)strtoul(a->gpus, NULL, 10);
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_error err = {0};
    int rc = spsim_sweep_spec_create(&spec, &err) ? cli_fail(&err) : EXIT_OK;
    if (rc == EXIT_OK)
        rc = cli_axes_apply(&a->axes, spec, "optimize");
    if (rc == EXIT_OK && spsim_sweep_spec_optimize_space(spec, model, hw, gpus, &err))
        rc = cli_fail(&err);
    if (rc == EXIT_OK && spsim_sweep_create(spec, out, &err) != SPSIM_OK)
        rc = err.code == SPSIM_EINVAL || err.code == SPSIM_ERANGE
                 ? cli_usage_error("optimize", "%s", err.message)
                 : cli_fail(&err);
    spsim_sweep_spec_destroy(spec);
    return rc;
}

static const char *
on_off(bool v)
{
    return v ? "on" : "off";
}

/* ---- the table's configuration columns ---- */

typedef void (*cell_fn)(const struct spsim_result *r, char *buf, size_t cap);

static void
cell_tp(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%u", r->config.tp);
}
static void
cell_cp(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%u", r->config.cp);
}
static void
cell_pp(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%u", r->config.pp);
}
static void
cell_dp(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%u", r->config.dp);
}
static void
cell_vpp(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%u", r->config.vpp);
}
static void
cell_mbs(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%u", r->config.mbs);
}
static void
cell_gbs(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%llu", (unsigned long long)r->config.gbs);
}
static void
cell_sp(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", on_off(r->config.sp));
}

/* The pipeline split: even, account (embedding and loss as layers), or F/L layers. */
static void
cell_split(const struct spsim_result *r, char *b, size_t n)
{
    const struct spsim_parallel *p = &r->config;
    if (p->first_stage_layers || p->last_stage_layers)
        snprintf(b, n, "%u/%u", p->first_stage_layers, p->last_stage_layers);
    else
        snprintf(b, n, "%s", p->account_embedding || p->account_loss ? "account" : "even");
}

/* none, selective (its modules when not the default), full (its method). */
static void
cell_recompute(const struct spsim_result *r, char *b, size_t n)
{
    const struct spsim_parallel *p = &r->config;
    char mods[96];
    if (p->recompute == SPSIM_RECOMPUTE_SELECTIVE && p->recompute_modules != SPSIM_RMOD_CORE_ATTN)
        snprintf(b, n, "selective:%s",
                 spsim_recompute_modules_format(p->recompute_modules, mods, sizeof(mods)));
    else if (p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT)
        snprintf(b, n, "full:%s %u", spsim_recompute_method_name(p->recompute_method),
                 p->recompute_layers);
    else
        snprintf(b, n, "%s", spsim_recompute_name(p->recompute));
}

static void
cell_offload(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%u", r->config.offload_layers);
}

/* The sharding: none, the distributed optimizer, or Megatron-FSDP's strategy; with HSDP
 * "+hsdpR" (R replicas, "+hfsdpR" with the outer sharding). */
static void
cell_sharding(const struct spsim_result *r, char *b, size_t n)
{
    static const char *const fsdp[] = {"none", "fsdp-optim", "fsdp-grads", "fsdp-params"};
    uint32_t z = r->config.zero < 4 ? r->config.zero : 0, R = r->config.dist_opt_instances;
    int k = snprintf(b, n, "%s", z == 1 && r->config.distributed_optimizer ? "dist-opt" : fsdp[z]);
    if (R > 1 && k >= 0 && (size_t)k < n)
        snprintf(b + k, n - (size_t)k, "+%s%u", r->config.outer_dp_shard ? "hfsdp" : "hsdp", R);
}

static void
cell_overlap(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", on_off(r->config.overlap_grad_reduce));
}
static void
cell_param_gather(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", on_off(r->config.overlap_param_gather));
}
static void
cell_tp_overlap(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", on_off(r->config.tp_comm_overlap));
}
/* The interleaved schedule's async sends; without interleaving they block either way. */
static void
cell_p2p(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", r->config.vpp > 1 ? on_off(!r->config.no_overlap_p2p) : "-");
}
static void
cell_dtype(const struct spsim_result *r, char *b, size_t n)
{
    if (r->config.dtype == SPSIM_DTYPE_FP8)
        snprintf(b, n, "fp8:%s", spsim_fp8_recipe_name(r->config.fp8_recipe));
    else
        snprintf(b, n, "%s", spsim_dtype_name(r->config.dtype));
}
static void
cell_cp_comm(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", r->config.cp > 1 ? spsim_cp_comm_name(r->config.cp_comm_type) : "-");
}
/* MoE (config.etp is resolved for MoE models only): ep, etp, the dispatcher. */
static void
cell_ep(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", "-");
    if (r->config.etp)
        snprintf(b, n, "%u", r->config.ep);
}
static void
cell_etp(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", "-");
    if (r->config.etp)
        snprintf(b, n, "%u", r->config.etp);
}
static void
cell_dispatcher(const struct spsim_result *r, char *b, size_t n)
{
    snprintf(b, n, "%s", r->config.etp ? spsim_moe_dispatcher_name(r->config.moe_dispatcher) : "-");
}

static const struct {
    const char *title;
    cell_fn cell;
} config_columns[] = {
    {"tp", cell_tp},
    {"cp", cell_cp},
    {"pp", cell_pp},
    {"dp", cell_dp},
    {"vpp", cell_vpp},
    {"split", cell_split},
    {"ep", cell_ep},
    {"etp", cell_etp},
    {"dispatch", cell_dispatcher},
    {"sp", cell_sp},
    {"mbs", cell_mbs},
    {"gbs", cell_gbs},
    {"recompute", cell_recompute},
    {"offload", cell_offload},
    {"sharding", cell_sharding},
    {"dp-overlap", cell_overlap},
    {"ag-overlap", cell_param_gather},
    {"tp-overlap", cell_tp_overlap},
    {"p2p-overlap", cell_p2p},
    {"dtype", cell_dtype},
    {"cp-comm", cell_cp_comm},
};
#define NCOLUMNS CLI_ARRAY_LENGTH(config_columns)
#define CELL     48

/* The rows' configuration cells, and which columns differ between rows. */
struct table {
    uint64_t rows;
    char (*cells)[NCOLUMNS][CELL];
    bool differ[NCOLUMNS];
    int width[NCOLUMNS];
};

static int
table_make(const struct spsim_optimize_result *res, struct table *t)
{
    t->rows = res->count;
    t->cells = calloc(res->count, sizeof(*t->cells));
    if (!t->cells)
        return cli_error(EXIT_RUNTIME, "out of memory");
    for (size_t c = 0; c < NCOLUMNS; c++) {
        t->differ[c] = false;
        t->width[c] = (int)strlen(config_columns[c].title);
        for (uint64_t i = 0; i < res->count; i++) {
            config_columns[c].cell(&res->top[i].result, t->cells[i][c], CELL);
            t->differ[c] |= strcmp(t->cells[i][c], t->cells[0][c]) != 0;
            if ((int)strlen(t->cells[i][c]) > t->width[c])
                t->width[c] = (int)strlen(t->cells[i][c]);
        }
    }
    return EXIT_OK;
}

/* "12.3 days", "5.1 h": the time to train `tokens` at this throughput. */
static const char *
fmt_train(char *buf, size_t cap, double tokens, double tokens_per_s)
{
    double s = tokens / tokens_per_s;
    if (s >= 2 * 86400)
        snprintf(buf, cap, "%.1f days", s / 86400);
    else
        snprintf(buf, cap, "%.1f h", s / 3600);
    return buf;
}

static void
table_print(FILE *f, const struct optimize_args *a, const struct spsim_optimize_result *res,
            const struct table *t)
{
    char x[32], y[32], z[32];
    fprintf(f, "  #");
    for (size_t c = 0; c < NCOLUMNS; c++)
        if (t->differ[c])
            fprintf(f, " %*s", t->width[c], config_columns[c].title);
    fprintf(f, " %13s %12s %11s %6s", "tokens/s/GPU", "iteration", "memory/GPU", "MFU");
    if (a->train_tokens > 0)
        fprintf(f, " %12s", "to train");
    fputc('\n', f);
    for (uint64_t i = 0; i < t->rows; i++) {
        const struct spsim_result *r = &res->top[i].result;
        fprintf(f, "%3llu", (unsigned long long)i + 1);
        for (size_t c = 0; c < NCOLUMNS; c++)
            if (t->differ[c])
                fprintf(f, " %*s", t->width[c], t->cells[i][c]);
        fprintf(f, " %13.1f %12s %11s %5.1f%%", r->time.tokens_per_s_per_gpu,
                fmt_time(x, sizeof(x), r->time.iteration_s),
                fmt_bytes(y, sizeof(y), (double)r->memory.total_bytes), 100 * r->time.mfu);
        if (a->train_tokens > 0)
            fprintf(f, " %12s", fmt_train(z, sizeof(z), a->train_tokens, r->time.tokens_per_s));
        fputc('\n', f);
    }
    fprintf(f, "in every row:");
    for (size_t c = 0, n = 0; c < NCOLUMNS; c++)
        if (!t->differ[c] && strcmp(t->cells[0][c], "-") != 0)
            fprintf(f, "%s %s %s", n++ ? "," : "", config_columns[c].title, t->cells[0][c]);
    fprintf(f, " (MFU of the dense BF16 peak)\n");
}

/* The configuration fields where b differs from a: "pp 16 vs 8, mbs 2 vs 1". */
static void
config_diff(const struct spsim_result *a, const struct spsim_result *b, char *out, size_t cap)
{
    const struct spsim_field *fields;
    size_t n = spsim_result_fields(&fields), len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && strncmp(fields[i].path, "config.", 7) == 0; i++) {
        char x[64], y[64];
        spsim_field_format(&fields[i], a, x, sizeof(x));
        spsim_field_format(&fields[i], b, y, sizeof(y));
        bool flag = fields[i].type == SPSIM_FIELD_BOOL;
        if (strcmp(x, y) != 0 && strcmp(fields[i].path, "config.gpus") != 0 && len + 80 < cap)
            len += (size_t)snprintf(out + len, cap - len, "%s%s %s vs %s", len ? ", " : "",
                                    fields[i].path + 7, flag ? on_off(y[0] == 't') : y,
                                    flag ? on_off(x[0] == 't') : x);
    }
}

struct term {
    const char *name;
    double delta;
};

static int
by_size(const void *x, const void *y)
{
    double a = fabs(((const struct term *)x)->delta), b = fabs(((const struct term *)y)->delta);
    return a < b ? 1 : a > b ? -1 : 0;
}

/* The headline: how much worse #2 is by the ranked figure, and what differs in its setup.
 * @return whether they tie (nothing more to say) */
static bool
explain_headline(FILE *f, enum spsim_sweep_by by, const struct spsim_result *a,
                 const struct spsim_result *b, const char *diff)
{
    char x[32];
    /* Equal to rounding (a few ulps of a sum of terms): a tie. */
    double fa = by == SPSIM_BY_TOTAL_BYTES ? (double)a->memory.total_bytes : a->time.tokens_per_s;
    double fb = by == SPSIM_BY_TOTAL_BYTES ? (double)b->memory.total_bytes : b->time.tokens_per_s;
    if (by == SPSIM_BY_ITERATION_S || by == SPSIM_BY_MFU) {
        fa = by == SPSIM_BY_MFU ? a->time.mfu : a->time.iteration_s;
        fb = by == SPSIM_BY_MFU ? b->time.mfu : b->time.iteration_s;
    }
    if (fabs(fb - fa) <= 1e-9 * fabs(fa)) {
        fprintf(f, "\n#2 ties with #1 on %s; the order is the space's (%s).\n",
                spsim_sweep_by_name(by), diff);
        return true;
    }
    if (by == SPSIM_BY_TOTAL_BYTES)
        fprintf(
            f, "\n#2 needs %s more per GPU than #1 (%s)",
            fmt_bytes(x, sizeof(x), (double)b->memory.total_bytes - (double)a->memory.total_bytes),
            diff);
    else if (by == SPSIM_BY_MFU)
        fprintf(f, "\n#2 reaches %.2f%% MFU, %.2f points below #1 (%s)", 100 * b->time.mfu,
                100 * (a->time.mfu - b->time.mfu), diff);
    else if (by == SPSIM_BY_TOKENS_PER_S)
        fprintf(f, "\n#2 trains %.2f%% fewer tokens per second than #1 (%s)",
                100 * (1 - b->time.tokens_per_s / a->time.tokens_per_s), diff);
    else
        fprintf(f, "\n#2 is %s slower per iteration than #1 (%+.2f%%; %s)",
                fmt_time(x, sizeof(x), b->time.iteration_s - a->time.iteration_s),
                100 * (b->time.iteration_s / a->time.iteration_s - 1), diff);
    return false;
}

static double
activations(const struct spsim_memory_report *m)
{
    return (double)m->total_bytes - (double)m->weights_bytes - (double)m->gradients_bytes -
           (double)m->optimizer_bytes;
}

/* Why b ranks below a: the setup differences and the terms of the ranked figure (time, or
 * memory with --by total_bytes) that differ most. Times compare per token: b's terms are
 * scaled to a's batch when their batches differ. */
static void
explain(FILE *f, enum spsim_sweep_by by, const struct spsim_result *a, const struct spsim_result *b)
{
    char diff[512], y[32];
    config_diff(a, b, diff, sizeof(diff));
    const struct spsim_time_report *ta = &a->time, *tb = &b->time;
    const struct spsim_memory_report *ma = &a->memory, *mb = &b->memory;
    double k = ((double)a->config.gbs * a->config.seq) / ((double)b->config.gbs * b->config.seq);
#define TERM(name, field)                                                                          \
    {                                                                                              \
        name, k * tb->field - ta->field                                                            \
    }
    struct term time_terms[] = {TERM("forward", forward_s),
                                TERM("backward", backward_s),
                                TERM("recomputation", recompute_s),
                                TERM("exposed TP communication", tp_exposed_s),
                                TERM("exposed CP exchanges", cp_exposed_s),
                                TERM("MoE dispatch and combine", ep_exposed_s),
                                TERM("pipeline bubble", pp_bubble_s),
                                TERM("pipeline point-to-point", pp_p2p_s),
                                TERM("exposed DP reduction", dp_exposed_s),
                                TERM("tied-embedding AllReduce", tied_embedding_allreduce_s),
                                TERM("CPU offload", offload_exposed_s),
                                TERM("FP8 amax AllReduces", fp8_amax_allreduce_s),
                                TERM("optimizer step", optimizer_s)};
#undef TERM
    struct term mem_terms[] = {
        {"weights", (double)mb->weights_bytes - (double)ma->weights_bytes},
        {"gradients", (double)mb->gradients_bytes - (double)ma->gradients_bytes},
        {"optimizer state", (double)mb->optimizer_bytes - (double)ma->optimizer_bytes},
        {"activations", activations(mb) - activations(ma)}};
    bool mem = by == SPSIM_BY_TOTAL_BYTES;
    struct term *terms = mem ? mem_terms : time_terms;
    size_t nterms = mem ? 4 : sizeof(time_terms) / sizeof(time_terms[0]);
    qsort(terms, nterms, sizeof(*terms), by_size);
    if (explain_headline(f, by, a, b, diff))
        return;
    if (terms[0].delta == 0) {
        fprintf(f, ".\n");
        return;
    }
    fprintf(f, ":\n ");
    for (size_t i = 0; i < 3 && i < nterms && terms[i].delta != 0; i++) {
        if (mem)
            fmt_bytes(y, sizeof(y), fabs(terms[i].delta));
        else
            fmt_time(y, sizeof(y), fabs(terms[i].delta));
        fprintf(f, "%s %c%s %s", i ? "," : "", terms[i].delta > 0 ? '+' : '-', y, terms[i].name);
    }
    fprintf(f, " (#2 minus #1%s)\n",
            !mem && k != 1 ? ", #2 scaled to #1's tokens per iteration" : "");
}

/* The best configuration whatever its memory, when the limit excludes it. */
static void
report_unlimited(FILE *f, enum spsim_sweep_by by, const struct spsim_optimize_result *res)
{
    const struct spsim_result *any = &res->unconstrained.result, *r = &res->top[0].result;
    char t[32], m[32];
    if (!res->has_unconstrained || spsim_sweep_rank_key(by, any) >= spsim_sweep_rank_key(by, r))
        return;
    fprintf(f,
            "\nWithout the memory limit the best by %s would be tp %u, cp %u, pp %u, dp %u, vpp "
            "%u, mbs %u, recompute %s, %s (%.1f tokens/s per GPU, %s an iteration, MFU %.1f%%), "
            "but it needs %s per GPU.\n",
            spsim_sweep_by_name(by), any->config.tp, any->config.cp, any->config.pp, any->config.dp,
            any->config.vpp, any->config.mbs, spsim_recompute_name(any->config.recompute),
            spsim_dtype_name(any->config.dtype), any->time.tokens_per_s_per_gpu,
            fmt_time(t, sizeof(t), any->time.iteration_s), 100 * any->time.mfu,
            fmt_bytes(m, sizeof(m), (double)any->memory.total_bytes));
}

static void
report_search(FILE *f, const struct optimize_args *a, const struct spsim_optimize_stats *st)
{
    fprintf(f,
            "%s a space of %.3g configurations in %.2f s: %llu layer evaluations, %llu of them "
            "searched in %llu pipeline shapes (%llu pipelines); %llu configurations checked "
            "(%llu valid), %llu evaluated in full and %llu by memory alone%s\n\n",
            a->exhaustive ? "evaluated every point of" : "searched", st->points, st->elapsed_s,
            (unsigned long long)st->layer_evaluations, (unsigned long long)st->summaries,
            (unsigned long long)st->shapes, (unsigned long long)st->pipelines,
            (unsigned long long)st->checked, (unsigned long long)st->valid,
            (unsigned long long)st->composed, (unsigned long long)st->memory_only,
            a->exhaustive ? "" : "; the bounds proved the rest unable to rank higher");
}

static int
report(FILE *f, const struct optimize_args *a, const struct spsim_optimize_result *res,
       uint64_t limit)
{
    const struct spsim_optimize_entry *e = &res->top[0];
    char lim[32];
    struct table t;
    int rc = table_make(res, &t);
    if (rc != EXIT_OK)
        return rc;
    fprintf(f, "spsim optimize: %s on %s, %s GPUs, %s %llu, at most %s%s per GPU, by %s\n",
            e->model_name, e->hw_name, a->gpus,
            a->axes.text[SPSIM_AXIS_MAX_GBS] ? "global batch up to" : "global batch",
            a->axes.text[SPSIM_AXIS_MAX_GBS] ? strtoull(a->axes.text[SPSIM_AXIS_MAX_GBS], NULL, 10)
                                             : (unsigned long long)e->result.config.gbs,
            fmt_bytes(lim, sizeof(lim), (double)limit),
            a->max_gib > 0 && (double)limit < a->max_gib * 1073741824.0 + 1
                ? ""
                : " less what tensors cannot use",
            spsim_sweep_by_name(a->by));
    report_search(f, a, &res->stats);
    table_print(f, a, res, &t);
    free(t.cells);
    if (res->count > 1)
        explain(f, a->by, &res->top[0].result, &res->top[1].result);
    report_unlimited(f, a->by, res);
    return EXIT_OK;
}

/* Nothing fits: say what the smallest valid configuration needs (exit 4). */
static int
none_fits(const struct spsim_optimize_result *res, uint64_t limit)
{
    char need[32], lim[32];
    if (!res->has_smallest)
        return cli_error(EXIT_CONFIG,
                         "no valid configuration among %.3g points (--show-invalid of 'spsim "
                         "sweep' lists why each is refused)",
                         res->stats.points);
    const struct spsim_parallel *p = &res->smallest.result.config;
    return cli_error(EXIT_CONFIG,
                     "none of the valid configurations fits: the smallest (tp %u, cp %u, pp %u, "
                     "dp %u, recompute %s, zero %u) needs %s per GPU, the limit is %s",
                     p->tp, p->cp, p->pp, p->dp, spsim_recompute_name(p->recompute), p->zero,
                     fmt_bytes(need, sizeof(need), (double)res->smallest.result.memory.total_bytes),
                     fmt_bytes(lim, sizeof(lim), (double)limit));
}

/* The answer's rows as 'spsim sweep' writes them (CSV with its header, or JSON Lines). */
static int
write_rows(FILE *f, enum spsim_row_format format, const struct spsim_optimize_result *res)
{
    size_t cap = SPSIM_ROW_SIZE(4096, 4096);
    char *buf = malloc(cap);
    if (!buf)
        return cli_error(EXIT_RUNTIME, "out of memory");
    fwrite(buf, 1, spsim_row_header(format, buf, cap), f); /* JSON Lines: none */
    size_t n = 1;
    for (uint64_t i = 0; n && i < res->count; i++) {
        const struct spsim_optimize_entry *e = &res->top[i];
        if (strlen(e->model_name) > 4096 || strlen(e->hw_name) > 4096)
            n = 0;
        else if ((n = spsim_row_format(format, e->model_name, e->hw_name, &e->result, buf, cap)))
            fwrite(buf, 1, n, f);
    }
    free(buf);
    return n ? EXIT_OK : cli_error(EXIT_RUNTIME, "out of memory");
}

static int
output(const struct optimize_args *a, const struct spsim_optimize_result *res, uint64_t limit)
{
    struct cli_output out;
    int rc = cli_output_open(&out, a->output);
    if (rc != EXIT_OK)
        return rc;
    if (a->format == OPTIMIZE_MEGATRON)
        rc = cli_megatron_write(out.stream, res->top[0].model, res->top[0].hw,
                                &res->top[0].result.config);
    else if (a->format == SPSIM_ROW_NONE)
        rc = report(out.stream, a, res, limit);
    else
        rc = write_rows(out.stream, (enum spsim_row_format)a->format, res);
    if (rc == EXIT_OK)
        return cli_output_close(&out);
    cli_output_abort(&out);
    return rc;
}

/* Search the space; *limit receives the memory limit the answer honours. */
static int
search(const struct optimize_args *a, const struct spsim_sweep *sw, const struct spsim_hardware *hw,
       struct spsim_optimize_result *res, uint64_t *limit)
{
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    struct spsim_optimize_options opt;
    spsim_optimize_options_defaults(&opt);
    opt.top_k = a->top;
    opt.by = a->by;
    opt.exhaustive = a->exhaustive;
    opt.threads = a->threads;
    *limit = info.hbm_capacity_bytes;
    if (a->max_gib > 0 && a->max_gib * 1073741824.0 < (double)*limit)
        *limit = opt.max_total_bytes = (uint64_t)(a->max_gib * 1073741824.0);
    res->top = calloc(a->top, sizeof(*res->top));
    if (!res->top)
        return cli_error(EXIT_RUNTIME, "out of memory");
    struct spsim_error err = {0};
    return spsim_optimize_run(sw, &opt, res, &err) == SPSIM_OK ? EXIT_OK : cli_fail(&err);
}

int
cmd_optimize(int argc, char **argv)
{
    struct optimize_args a;
    memset(&a, 0, sizeof(a));
    a.top = 5;
    a.by = SPSIM_BY_TOKENS_PER_S;
    int rc = parse(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    if ((rc = cli_output_check(a.output)) != EXIT_OK)
        return rc;
    struct spsim_model *model = NULL;
    struct spsim_hardware *hw = NULL;
    struct spsim_sweep *sw = NULL;
    struct spsim_optimize_result res;
    memset(&res, 0, sizeof(res));
    uint64_t limit = 0;
    if ((rc = cli_load_model(a.axes.text[SPSIM_AXIS_MODEL], &model)) ||
        (rc = cli_load_hardware(a.axes.text[SPSIM_AXIS_HW], &hw)) ||
        (rc = build_space(&a, model, hw, &sw)) || (rc = search(&a, sw, hw, &res, &limit)))
        goto done;
    rc = res.count == 0 ? none_fits(&res, limit) : output(&a, &res, limit);
done:
    free(res.top);
    spsim_sweep_destroy(sw);
    spsim_model_destroy(model);
    spsim_hardware_destroy(hw);
    return rc;
}
