/* `spsim calibrate`: nccl-tests logs or the local GPUs in, a calibrated hardware profile out. */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char calibrate_help[] =
    "Usage: spsim calibrate --from-nccl-tests LOG... [--op OP] [--gpus N] [--nodes K]\n"
    "                       [--base NAME|FILE] [--name NAME] -o OUT.json\n"
    "       spsim calibrate --runs RUNS.csv... [--no-cross-validate] [--base NAME|FILE]\n"
    "                       [--name NAME] -o OUT.json\n"
    "       spsim calibrate [--gpus N] [--model NAME|FILE] [--min-bytes SIZE] [--max-bytes SIZE]\n"
    "                       [--iters N] [--fp8] [--base NAME|FILE] [--name NAME] -o OUT.json\n"
    "\n"
    "Fit the collective model, time = base + steps·hop + wire/(busbw·eff(size)), to measured\n"
    "NCCL collectives and write a calibrated hardware profile: the base profile with the fitted\n"
    "latencies, busbw and a busbw curve per measured collective (multi-node measurements: the\n"
    "network tier and node.gpus_per_node), each replaced number's source naming the calibration,\n"
    "and a 'calibration' object of provenance. 'spsim collective --hw OUT.json' then reproduces\n"
    "the measured times. Prints, per input, the measured table as nccl-tests prints it beside the\n"
    "fit and the calibrated profile's prediction with their errors, then the fit.\n"
    "\n"
    "From nccl-tests output (no GPU needed):\n"
    "  --from-nccl-tests  the LOG arguments are nccl-tests output files (all_reduce, all_gather,\n"
    "                 reduce_scatter, sendrecv, alltoall; any column layout; NCCL INFO lines\n"
    "                 between or inside rows; rows of size 0 are skipped)\n"
    "  --op OP        all_reduce, all_gather, reduce_scatter, send_recv or all_to_all, for logs\n"
    "                 without a 'Collective test starting:' line whose file name names none\n"
    "  --gpus N       ranks, for logs without '#  Rank' lines or 'nranks' in NCCL INFO lines\n"
    "  --nodes K      nodes, for logs that name no host\n"
    "                 (--op, --gpus and --nodes apply to every LOG; a log that says otherwise is\n"
    "                 refused)\n"
    "\n"
    "From measured training runs (--runs):\n"
    "  --runs         the RUNS arguments are CSV files of measured runs, one a row: spsim's own\n"
    "                 sweep columns (model, hw, tp, pp, dp, vpp, sp, recompute, mbs, gbs, seq,\n"
    "                 ...: any configuration column 'spsim sweep' writes; its result columns are\n"
    "                 read past), measured_iteration_s (seconds per iteration, required), and\n"
    "                 optionally group (the cross-validation group; default the model's family\n"
    "                 x the hardware), id (the run's label) and args (further 'spsim query'\n"
    "                 options for what no column states, e.g. --tp-comm-overlap). A RUNS file\n"
    "                 may instead be a Megatron-LM training log: one run, its arguments block\n"
    "                 the configuration, the median of its iteration lines after the warm-up\n"
    "                 the time, on --base's hardware. Every row must\n"
    "                 name the same hardware and be one 'spsim query' accepts; a column whose\n"
    "                 value spsim cannot state is refused, one line naming the file, line and\n"
    "                 reason. Fits the profile's efficiency parameters (sustained GEMM rate per\n"
    "                 dtype, attention rate, memory-bound bandwidth, per-op host time, network\n"
    "                 hop latency), each bounded, with a weak sourced prior, by GSL's nonlinear\n"
    "                 least squares on log(predicted/measured); parameters the runs do not move\n"
    "                 stay at their prior. Prints every run (measured, sourced, fitted and\n"
    "                 leave-one-group-out cross-validated times) and every parameter (value +-\n"
    "                 1 sigma); the profile records them, labelled fitted.\n"
    "  --no-cross-validate  skip the leave-one-group-out refits (the cross-validated column\n"
    "                 then repeats the fitted one)\n"
    "\n"
    "On the local GPUs (a build with the cuda feature):\n"
    "  --gpus N       GPUs in the communicator (default: all visible)\n"
    "  --model M      also time the GEMMs of model M's layer for tp 1, 2, 4, 8 (a NAME or FILE)\n"
    "  --min-bytes SIZE, --max-bytes SIZE\n"
    "                 collective sizes, nccl-tests convention (default 8 and 1G; K, M, G "
    "suffixes)\n"
    "  --iters N      timed iterations per size (default 20)\n"
    "  --fp8          also FP8 GEMMs (compute capability 8.9 on), each shape with fast\n"
    "                 accumulation (Transformer Engine's fprop) and split (its dgrad, wgrad)\n"
    "\n"
    "Both:\n"
    "  --base NAME|FILE  the profile to start from (default: the shipped profile of the GPU the\n"
    "                 measurement names; required when it names none or one not shipped)\n"
    "  --name NAME    the calibrated profile's name (default: OUT's file name without .json)\n"
    "  -o OUT.json    where to write the profile, atomically (required): a failed run leaves any\n"
    "                 existing OUT as it was\n"
    "\n"
    "Exit status: 0 ok; 1 the profile cannot be written or the fit failed; 2 bad command line,\n"
    "or no --base where one is required; 3 a log or runs file is malformed, a log lacks what\n"
    "--op/--gpus/--nodes would give, a run cannot be stated, or the base profile is invalid; 5\n"
    "no GPU support or no GPU; 6 a CUDA, cuBLAS or NCCL call failed. Details:\n"
    "doc/calibration.md.\n";

#define MAX_LOGS 64

struct calibrate_args {
    bool from_logs, from_runs, no_cv;
    const char *logs[MAX_LOGS];
    size_t nlogs;
    struct spsim_nccl_log_options log;
    struct spsim_gpu_calibrate_options gpu;
    const char *model, *base, *name, *output;
    bool gpu_option, log_option; /* options of one path only were given */
};

enum {
    CAL_FROM = 1,
    CAL_OP,
    CAL_GPUS,
    CAL_NODES,
    CAL_BASE,
    CAL_NAME,
    CAL_MODEL,
    CAL_MIN,
    CAL_MAX,
    CAL_ITERS,
    CAL_FP8,
    CAL_RUNS,
    CAL_NO_CV
};

static int
parse_bytes(const char *option, const char *text, uint64_t *out)
{
    if (cli_parse_size(text, out) != 0)
        return cli_usage_error("calibrate", "%s: %s is not a size (e.g. 8, 64K, 1M, 2G)", option,
                               CLI_Q(text));
    return EXIT_OK;
}

static int
apply_option(struct calibrate_args *a, int opt, const char *arg)
{
    uint32_t v = 0;
    switch (opt) {
    case CAL_FROM:
        a->from_logs = true;
        return EXIT_OK;
    case CAL_RUNS:
        a->from_runs = true;
        return EXIT_OK;
    case CAL_NO_CV:
        a->no_cv = true;
        return EXIT_OK;
    case CAL_OP:
        a->log_option = true;
        return cli_parse_coll_op("--op", arg, &a->log.op);
    case CAL_GPUS:
        if (cli_parse_u32("--gpus", arg, 1, 1u << 24, &v))
            return EXIT_USAGE;
        a->log.gpus = v;
        a->gpu.gpus = (int)v;
        return EXIT_OK;
    case CAL_NODES:
        a->log_option = true;
        return cli_parse_u32("--nodes", arg, 1, 1u << 24, &a->log.nodes);
    case CAL_BASE:
        a->base = arg;
        return EXIT_OK;
    case CAL_NAME:
        a->name = arg;
        return EXIT_OK;
    case CAL_MODEL:
        a->gpu_option = true;
        a->model = arg;
        return EXIT_OK;
    case CAL_MIN:
        a->gpu_option = true;
        return parse_bytes("--min-bytes", arg, &a->gpu.min_bytes);
    case CAL_MAX:
        a->gpu_option = true;
        return parse_bytes("--max-bytes", arg, &a->gpu.max_bytes);
    case CAL_ITERS:
        a->gpu_option = true;
        return cli_parse_u32("--iters", arg, 1, 1000000, &a->gpu.iters);
    case CAL_FP8:
        a->gpu_option = true;
        a->gpu.fp8 = true;
        return EXIT_OK;
    default:
        return EXIT_USAGE;
    }
}

static int
check_args(struct calibrate_args *a)
{
    if (!a->output)
        return cli_usage_error("calibrate", "-o OUT.json is required");
    if (cli_output_check(a->output) != EXIT_OK)
        return EXIT_USAGE;
    if (a->from_logs && a->from_runs)
        return cli_usage_error("calibrate", "--from-nccl-tests and --runs are two calibrations: "
                                            "give one");
    if (a->from_runs && a->nlogs == 0)
        return cli_usage_error("calibrate", "--runs needs at least one RUNS file");
    if (a->from_runs && (a->gpu_option || a->log_option || a->log.gpus))
        return cli_usage_error("calibrate", "--runs takes --base, --name, --no-cross-validate "
                                            "and -o only");
    if (a->no_cv && !a->from_runs)
        return cli_usage_error("calibrate", "--no-cross-validate is for --runs");
    if (a->from_logs && a->nlogs == 0)
        return cli_usage_error("calibrate", "--from-nccl-tests needs at least one LOG");
    if (!a->from_logs && !a->from_runs && a->nlogs > 0)
        return cli_usage_error("calibrate", "unexpected argument %s (logs need --from-nccl-tests)",
                               CLI_Q(a->logs[0]));
    if (a->from_logs && a->gpu_option)
        return cli_usage_error("calibrate", "--model, --min-bytes, --max-bytes, --iters and --fp8 "
                                            "are for measuring on the local GPUs, not "
                                            "--from-nccl-tests");
    if (!a->from_logs && a->log_option)
        return cli_usage_error("calibrate", "--op and --nodes are for --from-nccl-tests");
    if (a->gpu.min_bytes > a->gpu.max_bytes)
        return cli_usage_error("calibrate", "--min-bytes must not exceed --max-bytes");
    return EXIT_OK;
}

static int
parse_args(int argc, char **argv, struct calibrate_args *a, bool *help)
{
    static const struct option longopts[] = {{"from-nccl-tests", no_argument, NULL, CAL_FROM},
                                             {"runs", no_argument, NULL, CAL_RUNS},
                                             {"no-cross-validate", no_argument, NULL, CAL_NO_CV},
                                             {"op", required_argument, NULL, CAL_OP},
                                             {"gpus", required_argument, NULL, CAL_GPUS},
                                             {"nodes", required_argument, NULL, CAL_NODES},
                                             {"base", required_argument, NULL, CAL_BASE},
                                             {"name", required_argument, NULL, CAL_NAME},
                                             {"model", required_argument, NULL, CAL_MODEL},
                                             {"min-bytes", required_argument, NULL, CAL_MIN},
                                             {"max-bytes", required_argument, NULL, CAL_MAX},
                                             {"iters", required_argument, NULL, CAL_ITERS},
                                             {"fp8", no_argument, NULL, CAL_FP8},
                                             {"output", required_argument, NULL, 'o'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    optind = 1;
    opterr = 0;
    for (int opt, rc; (opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1;) {
        if (opt == 'h') {
            *help = true;
            return EXIT_OK;
        } else if (opt == 'o') {
            a->output = optarg;
        } else if (opt == ':' || opt == '?') {
            return cli_getopt_error("calibrate", opt, argv, longopts);
        } else if ((rc = apply_option(a, opt, optarg)) != EXIT_OK) {
            return rc;
        }
    }
    for (int i = optind; i < argc; i++) {
        if (a->nlogs == MAX_LOGS)
            return cli_usage_error("calibrate", "more than %d logs", MAX_LOGS);
        a->logs[a->nlogs++] = argv[i];
    }
    return check_args(a);
}

/* ---- the measurements ---------------------------------------------------------------------- */

struct inputs {
    struct spsim_bw_table *tables[MAX_LOGS];
    struct spsim_nccl_log_summary sums[MAX_LOGS];
    size_t n;
    struct spsim_gemm_sample *gemms;
    size_t ngemms;
    struct spsim_hbm_sample *hbm;
    size_t nhbm;
};

static void
free_inputs(struct inputs *in)
{
    for (size_t i = 0; i < in->n; i++)
        spsim_bw_table_destroy(in->tables[i]);
    free(in->gemms);
    free(in->hbm);
}

static int
import_logs(const struct calibrate_args *a, struct inputs *in)
{
    for (size_t i = 0; i < a->nlogs; i++) {
        struct spsim_error err = {0};
        if (spsim_bw_table_create(&in->tables[in->n]) != SPSIM_OK)
            return cli_error(EXIT_RUNTIME, "out of memory");
        struct spsim_nccl_log_summary *s = &in->sums[in->n];
        if (spsim_nccl_log_load(a->logs[i], &a->log, in->tables[in->n++], s, &err) != SPSIM_OK)
            return cli_fail(&err);
        for (size_t k = 0; k < s->nnotes; k++)
            cli_warning("%s: line %u: %s", a->logs[i], s->notes[k].line, s->notes[k].text);
        if (s->mismatched_rows > s->nnotes)
            cli_warning("%s: %zu more rows whose algbw or busbw disagree with size and time",
                        a->logs[i], s->mismatched_rows - s->nnotes);
    }
    return EXIT_OK;
}

static void
progress(void *cookie, const char *what, size_t done, size_t total)
{
    (void)cookie;
    fprintf(stderr, "spsim: calibrate: %s (%zu/%zu)\n", what, done, total);
}

static int
measure_gpus(struct calibrate_args *a, struct inputs *in)
{
    struct spsim_model *model = NULL;
    int rc;
    if (a->model && (rc = cli_load_model(a->model, &model)) != EXIT_OK)
        return rc;
    if (spsim_bw_table_create(&in->tables[0]) != SPSIM_OK) {
        spsim_model_destroy(model);
        return cli_error(EXIT_RUNTIME, "out of memory");
    }
    in->n = 1;
    a->gpu.model = model;
    a->gpu.progress = progress;
    struct spsim_error err = {0};
    rc = spsim_gpu_calibrate(&a->gpu, in->tables[0], &in->gemms, &in->ngemms, &in->hbm, &in->nhbm,
                             &err);
    spsim_model_destroy(model);
    return rc == SPSIM_OK ? EXIT_OK : cli_fail(&err);
}

/* ---- the base profile ---------------------------------------------------------------------- */

/* --base, or the shipped profile of the GPU every input names. */
static int
resolve_base(const struct calibrate_args *a, const struct inputs *in, char *path, size_t cap)
{
    char name[256];
    const char *base = a->base;
    struct spsim_error err = {0};
    if (!base) {
        const char *gpu = in->n ? spsim_bw_table_info(in->tables[0], "gpu") : NULL;
        for (size_t i = 1; i < in->n && gpu; i++) {
            const char *other = spsim_bw_table_info(in->tables[i], "gpu");
            if (!other || strcmp(other, gpu) != 0)
                return cli_usage_error("calibrate",
                                       "the inputs name different GPUs (%s, %s); "
                                       "give the base profile with --base",
                                       CLI_Q(gpu), CLI_Q(other ? other : "none"));
        }
        if (!gpu)
            return cli_usage_error("calibrate",
                                   "%s names no GPU; give the base profile with --base",
                                   a->from_logs ? a->logs[0] : "the measurement");
        int st = spsim_calibrate_base_for_gpu(gpu, name, sizeof(name), &err);
        if (st == SPSIM_EFIELD)
            return cli_usage_error("calibrate", "%s", err.message);
        if (st != SPSIM_OK)
            return cli_fail(&err);
        base = name;
    }
    if (spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, base, path, cap, &err) != SPSIM_OK)
        return cli_fail(&err);
    return EXIT_OK;
}

/* ---- the report ---------------------------------------------------------------------------- */

/* Bytes per element of an nccl-tests data type (nccl-tests -d). */
static double
type_bytes(const char *type)
{
    static const struct {
        const char *name;
        double bytes;
    } types[] = {{"int8", 1}, {"uint8", 1},    {"char", 1},  {"f8e4m3", 1}, {"f8e5m2", 1},
                 {"half", 2}, {"bfloat16", 2}, {"float", 4}, {"int32", 4},  {"uint32", 4},
                 {"int", 4},  {"double", 8},   {"int64", 8}, {"uint64", 8}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(types[i].name, type) == 0)
            return types[i].bytes;
    return 0;
}

static void
print_header(FILE *f, const char *src, const struct spsim_calibration_row *r, const char *gpu)
{
    fprintf(f, "# %s: %s, %u ranks on %u node(s), %s%s%s\n", src, spsim_coll_op_name(r->op),
            r->ranks, r->nodes, spsim_tier_name(r->tier), gpu ? ", " : "", gpu ? gpu : "");
    fprintf(f, "#%12s %12s %8s %10s %8s %8s %10s %7s %10s %7s %7s\n", "size", "count", "type",
            "time", "algbw", "busbw", "fit", "err", "spsim", "err", "eff");
    fprintf(f, "#%12s %12s %8s %10s %8s %8s %10s %7s %10s %7s %7s\n", "(B)", "(elements)", "",
            "(us)", "(GB/s)", "(GB/s)", "(us)", "(%)", "(us)", "(%)", "(0-1)");
}

static void
print_row(FILE *f, const struct spsim_calibration_row *r, const char *type)
{
    double bytes = type_bytes(type);
    uint64_t count = bytes > 0 ? (uint64_t)((double)r->size_bytes / bytes) : 0;
    if (r->op == SPSIM_COLL_ALL_GATHER || r->op == SPSIM_COLL_REDUCE_SCATTER ||
        r->op == SPSIM_COLL_ALL_TO_ALL)
        count /= r->ranks; /* nccl-tests prints the per-rank (per-peer) count */
    fprintf(f, " %12llu %12llu %8s %10.2f %8.2f %8.2f %10.2f %+7.1f %10.2f %+7.2f %7.4f\n",
            (unsigned long long)r->size_bytes, (unsigned long long)count, type, r->measured_s * 1e6,
            r->algbw_GBps, r->busbw_GBps, r->fit_s * 1e6,
            100 * (r->fit_s - r->measured_s) / r->measured_s, r->predicted_s * 1e6,
            100 * (r->predicted_s - r->measured_s) / r->measured_s, r->eff);
}

static int
compare_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The calibrated profile against rows [from, to), sizes >= 1 MiB. */
static void
print_reproduction(FILE *f, const struct spsim_calibration *c, size_t from, size_t to)
{
    double err[4096];
    size_t n = 0;
    for (size_t i = from; i < to && n < 4096; i++)
        if (c->rows[i].size_bytes >= (1u << 20))
            err[n++] = fabs(c->rows[i].predicted_s - c->rows[i].measured_s) / c->rows[i].measured_s;
    if (n == 0) {
        fputs("# no size >= 1 MiB to compare\n", f);
        return;
    }
    qsort(err, n, sizeof(err[0]), compare_double);
    double median = n % 2 ? err[n / 2] : 0.5 * (err[n / 2 - 1] + err[n / 2]);
    fprintf(f,
            "# spsim collective with the calibrated profile, %zu sizes >= 1 MiB: median error "
            "%.3f %%, max %.3f %%\n",
            n, 100 * median, 100 * err[n - 1]);
}

static bool
same_series(const struct spsim_calibration_row *a, const struct spsim_calibration_row *b)
{
    return a->input == b->input && a->op == b->op && a->ranks == b->ranks && a->nodes == b->nodes;
}

static void
print_tables(FILE *f, const struct spsim_calibration *c, const struct inputs *in)
{
    for (size_t i = 0; i < c->nrows;) {
        const struct spsim_calibration_row *r = &c->rows[i];
        const struct spsim_bw_table *t = in->tables[r->input];
        const char *src = spsim_bw_table_info(t, "source"), *type = spsim_bw_table_info(t, "type");
        print_header(f, src ? src : "local GPUs", r, spsim_bw_table_info(t, "gpu"));
        size_t j = i;
        for (; j < c->nrows && same_series(&c->rows[j], r); j++)
            print_row(f, &c->rows[j], type ? type : "float");
        print_reproduction(f, c, i, j);
        if (r->input < in->n && in->sums[r->input].rows > 0)
            fprintf(f, "# %zu rows read, %zu of size 0 skipped, %zu cut by NCCL lines and joined\n",
                    in->sums[r->input].rows + in->sums[r->input].zero_rows,
                    in->sums[r->input].zero_rows, in->sums[r->input].split_rows);
        fputs("#\n", f);
        i = j;
    }
}

static void
print_tier(FILE *f, const struct spsim_calibration_tier *t, const char *name)
{
    if (!t->measured)
        return;
    fprintf(f,
            "# %s tier: time = base + steps*hop + wire/B, weighted least squares on relative "
            "error\n",
            name);
    fprintf(f, "#   base latency %.3f us, hop %.3f us%s\n", t->base_latency_us, t->hop_latency_us,
            t->hop_fitted ? " (both fitted)"
                          : " (one step count: base kept from the base profile unless the latency "
                            "is below it, hop from the rest)");
    for (int op = 0; op < SPSIM_COLL_COUNT; op++)
        if (t->fit_busbw_GBps[op] > 0)
            fprintf(f,
                    "#   %-14s fitted B %8.2f GB/s, profile peak %8.2f GB/s; fit error median "
                    "%.1f %%, max %.1f %%\n",
                    spsim_coll_op_name((enum spsim_coll_op)op), t->fit_busbw_GBps[op],
                    t->peak_busbw_GBps[op], 100 * t->fit_median_rel_err[op],
                    100 * t->fit_max_rel_err[op]);
}

/* ---- calibrating and writing --------------------------------------------------------------- */

/* "spsim calibrate ARGS...", quoted where an argument has blanks or quotes. */
static void
command_line(int argc, char **argv, char *buf, size_t cap)
{
    snprintf(buf, cap, "spsim");
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(buf);
        bool quote = strpbrk(argv[i], " \t'\"") != NULL;
        snprintf(buf + used, cap - used, quote ? " '%s'" : " %s", argv[i]);
    }
}

static void
default_name(const char *output, char *name, size_t cap)
{
    size_t n;
    const char *base = cli_profile_stem(output, &n);
    snprintf(name, cap, "%.*s", (int)(n ? n : 10), n ? base : "calibrated");
}

static int
calibrate_and_write(const struct calibrate_args *a, const struct inputs *in, int argc, char **argv)
{
    char base[4096], name[256], cmd[2048];
    int rc = resolve_base(a, in, base, sizeof(base));
    if (rc != EXIT_OK)
        return rc;
    default_name(a->output, name, sizeof(name));
    command_line(argc, argv, cmd, sizeof(cmd));
    struct spsim_calibrate_options o;
    spsim_calibrate_defaults(&o);
    o.base_path = base;
    o.name = a->name ? a->name : name;
    o.command_line = cmd;
    struct spsim_calibration cal;
    struct spsim_error err = {0};
    if (spsim_calibrate_profile(&o, (const struct spsim_bw_table *const *)in->tables, in->n,
                                in->gemms, in->ngemms, in->hbm, in->nhbm, &cal, &err) != SPSIM_OK)
        /* SPSIM_EINVAL here: the measurements do not fit the base profile. */
        return err.code == SPSIM_EINVAL ? cli_error(EXIT_INPUT, "%s", err.message) : cli_fail(&err);
    for (size_t i = 0; i < cal.nnotes; i++)
        cli_warning("%s", cal.notes[i]);
    print_tables(stdout, &cal, in);
    print_tier(stdout, &cal.tier[0], "NVLink");
    print_tier(stdout, &cal.tier[1], "network");
    rc = spsim_calibration_write(&cal, a->output, &err);
    spsim_calibration_free(&cal);
    if (rc != SPSIM_OK)
        return cli_error(EXIT_RUNTIME, "%s", err.message);
    printf("# wrote %s (profile '%s', base %s)\n", a->output, o.name, base);
    return cli_output_close(&(struct cli_output){.stream = stdout});
}

int
cmd_calibrate(int argc, char **argv)
{
    struct calibrate_args a = {0};
    spsim_nccl_log_defaults(&a.log);
    spsim_gpu_calibrate_defaults(&a.gpu);
    bool help = false;
    int rc = parse_args(argc, argv, &a, &help);
    if (help) {
        fputs(calibrate_help, stdout);
        return EXIT_OK;
    }
    if (rc != EXIT_OK)
        return rc;
    if (a.from_runs) {
        char name[256], cmd[2048];
        default_name(a.output, name, sizeof(name));
        command_line(argc, argv, cmd, sizeof(cmd));
        return cli_calibrate_runs(a.logs, a.nlogs, a.base, a.name ? a.name : name, a.output,
                                  !a.no_cv, cmd);
    }
    struct inputs in = {0};
    char base[4096];
    if (a.from_logs)
        rc = import_logs(&a, &in);
    else if (!a.base || (rc = resolve_base(&a, &in, base, sizeof(base))) == EXIT_OK)
        rc = measure_gpus(&a, &in); /* an explicit --base is checked before measuring */
    if (rc == EXIT_OK)
        rc = calibrate_and_write(&a, &in, argc, argv);
    free_inputs(&in);
    return rc;
}
