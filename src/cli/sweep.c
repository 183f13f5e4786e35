/* spsim sweep: every configuration of a space, streamed as CSV or JSON Lines. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char sweep_help[] =
    "Usage: spsim sweep [OPTIONS]\n"
    "\n"
    "Evaluate every configuration of a space of axes and write one row per valid\n"
    "configuration: a CSV header line, then model, hw, the configuration columns (tp, pp, dp,\n"
    "vpp, sp, recompute, mbs, gbs, seq, flash_attn, ...) and every figure of\n"
    "'spsim query --format json' named by its JSON path with '.' as '_' (memory_total_bytes,\n"
    "time_iteration_s, time_mfu, ...), in full precision. Rows come in a fixed order (the\n"
    "axes below nest in the order listed, the last varying fastest), whatever --threads.\n"
    "\n"
    "Space: each axis takes a comma-separated list whose items are N, A..B (every integer),\n"
    "A..B:S (step S) or A..B:*F (A, A*F, A*F^2, ... up to B):\n"
    "  --spec FILE            JSON sweep spec (examples/sweeps/); options replace its axes\n"
    "  --model LIST           model profiles (default gpt3-175b; names, profile files, Hugging\n"
    "                         Face config.json files or their folders)\n"
    "  --hw LIST              hardware profiles (default dgx-a100-80g)\n"
    "  --tp LIST              tensor parallel sizes (default 8)\n"
    "  --pp LIST              pipeline parallel sizes, or auto: 8, or the largest below\n"
    "                         that divides the model's layers (default auto)\n"
    "  --dp LIST              data parallel sizes (default 1)\n"
    "  --gpus LIST            GPU counts instead of --dp: dp = gpus / (tp*cp*pp)\n"
    "  --vpp LIST             interleaved chunks per pipeline stage, or auto: 3 where\n"
    "                         pp >= 2 and pp*3 divides the layers, else 1 (default auto)\n"
    "  --sp LIST              on, off (default on)\n"
    "  --recompute LIST       none, selective, full (default selective)\n"
    "  --mbs LIST             micro-batch sizes (default 1)\n"
    "  --gbs LIST             global batch sizes (default 64)\n"
    "  --seq LIST             sequence lengths (default: the model's)\n"
    "  --flash-attn LIST      on, off, model (default model)\n"
    "  --distributed-optimizer LIST, --overlap-grad-reduce LIST\n"
    "                         on, off (default off)\n"
    "  --dtype LIST           bf16, fp16, fp8, nvfp4 (default bf16)\n"
    "  --fp8-recipe LIST      delayed, current, mxfp8, blockwise (default delayed; another\n"
    "                         recipe than delayed needs dtype fp8)\n"
    "  --recompute-modules LIST\n"
    "                         selective: module sets joined by '+' (core_attn+mlp), of\n"
    "                         core_attn, layernorm, mlp, or default (core_attn)\n"
    "  --recompute-method LIST default, uniform, block (full recompute; default default)\n"
    "  --recompute-layers LIST layers per checkpoint with a method (default 0)\n"
    "  --offload-layers LIST  layers whose activations go to host memory (default 0)\n"
    "  --cp LIST              context parallel sizes (default 1)\n"
    "  --cp-comm-type LIST    p2p, all_gather, a2a (default p2p; a2a+p2p needs\n"
    "                         hierarchical sizes, which only 'spsim query' takes)\n"
    "  --zero LIST            sharding levels 0-3 over dp*cp (default 0)\n"
    "  --overlap-param-gather LIST, --grad-reduce-in-fp32 LIST\n"
    "                         on, off (default off; fp32 gradients except with fp16)\n"
    "  --pp-split LIST        even, account (embedding and loss count as layers), balanced\n"
    "                         (lighter first and last stages) (default even)\n"
    "  --max-gbs LIST         instead of --gbs: the largest multiple of dp*mbs (dp*mbs*pp with\n"
    "                         interleaving) up to each value\n"
    "  --ep LIST, --etp LIST, --moe-dispatcher LIST   MoE: expert parallel and expert tensor\n"
    "                         parallel sizes (default 1, 0 = tp), allgather, alltoall, flex\n"
    "  --overlap-moe-expert-parallel-comm LIST, --delay-wgrad-compute LIST   on, off (default\n"
    "                         off)\n"
    "  --tp-comm-overlap LIST TE userbuffers TP overlap: on, off (default off; on needs sp)\n"
    "  --overlap-p2p-communication LIST   the interleaved schedule's async sends: on, off\n"
    "                         (default on, Megatron's)\n"
    "  --num-distributed-optimizer-instances LIST   HSDP replicas R (default 1; R > 1 needs\n"
    "                         the distributed optimizer or --zero, R dividing dp*cp and edp)\n"
    "  Unlisted axes take the defaults of 'spsim query' (the paper's GPT-3 175B setting).\n"
    "\n"
    "Selection and output:\n"
    "  --feasible-only        only configurations that fit in HBM (memory_fits)\n"
    "  --top K                only the best K, best first (written at the end)\n"
    "  --by M                 what --top ranks by: tokens_per_s (default: throughput, the\n"
    "                         order of the time to train a token budget), iteration_s,\n"
    "                         total_bytes, mfu (against the dense BF16 peak)\n"
    "  --format F             csv (default) or jsonl (one object per line, same keys)\n"
    "  --columns LIST         only these columns, in this order (names as in the header:\n"
    "                         model,hw,tp,...,time_mfu); default: all of them, or where\n"
    "                         standard output is a terminal a short set (model, hw, tp, pp,\n"
    "                         dp, the other axes that vary, memory_total_bytes, memory_fits,\n"
    "                         time_iteration_s, time_tokens_per_s_per_gpu, time_mfu)\n"
    "  -o, --output FILE      write FILE atomically (temporary file beside it, renamed at\n"
    "                         the end) instead of standard output\n"
    "  --show-invalid         list invalid configurations and the rule each breaks on\n"
    "                         standard error\n"
    "  --count                print the number of points of the space and exit\n"
    "  --threads N            worker threads (default: every core)\n"
    "  --shard I/N            evaluate only the I-th of N consecutive slices of the space\n"
    "                         (0 <= I < N); the output gets a first and a last line that\n"
    "                         'spsim merge' checks and drops when it joins the shards\n"
    "  --quiet                no progress bar, no summary line\n"
    "  -h, --help             show this help\n"
    "\n"
    "A progress bar (rate, ETA) is drawn on standard error when it is a terminal and the\n"
    "sweep lasts more than a second; a summary line follows (evaluated, valid, feasible,\n"
    "written, elapsed).\n"
    "\n"
    "Where spsim was built with MPI, 'mpirun -np N spsim sweep ...' splits the sweep over the\n"
    "N processes and rank 0 writes the same output one process would.\n"
    "\n"
    "Exit status: 0 ok, 1 runtime failure (output not writable, interrupted), 2 bad option or\n"
    "axis value, 3 bad spec or profile file.\n";

enum {
    OPT_SPEC = 4000,
    OPT_FEASIBLE,
    OPT_TOP,
    OPT_BY,
    OPT_FORMAT,
    OPT_SHOW_INVALID,
    OPT_COUNT,
    OPT_THREADS,
    OPT_SHARD,
    OPT_QUIET,
    OPT_COLUMNS
};

struct sweep_args {
    const char *spec;
    struct cli_axes axes;
    struct spsim_sweep_options opt;
    const char *output;
    bool count, quiet, show_invalid;
    uint64_t shard, nshards;
};

/* A whole decimal number, without a message (the caller's names the whole option). */
static bool
scan_u64(const char *text, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    *out = v;
    return text[0] >= '0' && text[0] <= '9' && *end == '\0' && errno == 0;
}

static int
parse_shard(const char *arg, uint64_t *shard, uint64_t *nshards)
{
    const char *slash = strchr(arg, '/');
    char first[32];
    if (!slash || (size_t)(slash - arg) >= sizeof(first))
        return cli_usage_error("sweep", "--shard: %s is not I/N", CLI_Q(arg));
    memcpy(first, arg, (size_t)(slash - arg));
    first[slash - arg] = '\0';
    if (!scan_u64(slash + 1, nshards) || !scan_u64(first, shard) || *nshards < 1 ||
        *nshards > UINT32_MAX || *shard >= *nshards)
        return cli_usage_error("sweep", "--shard: %s needs 0 <= I < N (integers, N <= %u)",
                               CLI_Q(arg), UINT32_MAX);
    return EXIT_OK;
}

static int
parse_option(void *ctx, int opt, const char *arg, const char *current)
{
    struct sweep_args *a = ctx;
    uint32_t threads = 0;
    int rc = EXIT_OK;
    switch (opt) {
    case OPT_SPEC:
        a->spec = arg;
        break;
    case OPT_FEASIBLE:
        a->opt.feasible_only = true;
        break;
    case OPT_TOP:
        rc = cli_parse_u64("--top", arg, 1, SPSIM_SWEEP_MAX_TOP, &a->opt.top_k);
        break;
    case OPT_BY:
        return cli_parse_by("sweep", arg, &a->opt.by);
    case OPT_FORMAT:
        return cli_parse_row_format("sweep", arg, &a->opt.format);
    case OPT_SHOW_INVALID:
        a->show_invalid = true;
        break;
    case OPT_COUNT:
        a->count = true;
        break;
    case OPT_THREADS:
        rc = cli_parse_u32("--threads", arg, 1, 256, &threads);
        a->opt.threads = threads;
        break;
    case OPT_SHARD:
        return parse_shard(arg, &a->shard, &a->nshards);
    case OPT_QUIET:
        a->quiet = true;
        break;
    case OPT_COLUMNS:
        a->opt.columns = arg;
        break;
    case 'o':
        a->output = arg;
        break;
    default:
        return cli_usage_error("sweep", "unknown option %s", CLI_Q(current));
    }
    return rc;
}

static int
parse(int argc, char **argv, struct sweep_args *a)
{
    static const struct option own[] = {{"spec", required_argument, NULL, OPT_SPEC},
                                        {"feasible-only", no_argument, NULL, OPT_FEASIBLE},
                                        {"top", required_argument, NULL, OPT_TOP},
                                        {"by", required_argument, NULL, OPT_BY},
                                        {"format", required_argument, NULL, OPT_FORMAT},
                                        {"show-invalid", no_argument, NULL, OPT_SHOW_INVALID},
                                        {"count", no_argument, NULL, OPT_COUNT},
                                        {"threads", required_argument, NULL, OPT_THREADS},
                                        {"shard", required_argument, NULL, OPT_SHARD},
                                        {"quiet", no_argument, NULL, OPT_QUIET},
                                        {"columns", required_argument, NULL, OPT_COLUMNS},
                                        {"output", required_argument, NULL, 'o'}};
    const struct cli_command c = {.name = "sweep",
                                  .help = sweep_help,
                                  .axes = &a->axes,
                                  .own = own,
                                  .nown = CLI_ARRAY_LENGTH(own),
                                  .handle = parse_option,
                                  .ctx = a};
    return cli_parse_options(&c, argc, argv);
}

/* The space: the spec file, the options over it, then query's defaults for the rest. */
static int
build_sweep(const struct sweep_args *a, struct spsim_sweep **out)
{
    static const struct {
        enum spsim_sweep_axis axis;
        const char *text;
    } defaults[] = {/* cli_config_defaults: Korthikanti et al. 2022, GPT-3 175B, Table 3 and §6. */
                    {SPSIM_AXIS_MODEL, "gpt3-175b"},
                    {SPSIM_AXIS_HW, "dgx-a100-80g"},
                    {SPSIM_AXIS_TP, "8"},
                    {SPSIM_AXIS_PP, "auto"},
                    {SPSIM_AXIS_VPP, "auto"},
                    {SPSIM_AXIS_SP, "on"},
                    {SPSIM_AXIS_RECOMPUTE, "selective"},
                    {SPSIM_AXIS_MBS, "1"},
                    {SPSIM_AXIS_GBS, "64"}};
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_error err = {0};
    int rc = spsim_sweep_spec_create(&spec, &err) ? cli_fail(&err) : EXIT_OK;
    if (rc == EXIT_OK && a->spec && spsim_sweep_spec_load(spec, a->spec, &err) != SPSIM_OK)
        rc = cli_fail(&err);
    if (rc == EXIT_OK)
        rc = cli_axes_apply(&a->axes, spec, "sweep");
    for (size_t i = 0; rc == EXIT_OK && i < sizeof(defaults) / sizeof(defaults[0]); i++)
        rc = cli_axes_default(spec, defaults[i].axis, defaults[i].text);
    if (rc == EXIT_OK) {
        int st = spsim_sweep_create(spec, out, &err);
        if (st == SPSIM_EINVAL || st == SPSIM_ERANGE)
            rc = cli_usage_error("sweep", "%s", err.message);
        else if (st != SPSIM_OK)
            rc = cli_fail(&err);
    }
    spsim_sweep_spec_destroy(spec);
    return rc;
}

/* Progress bar and summary on standard error. */
struct report {
    bool quiet, tty, drawn;
    struct cli_stream *stream;
};

static int
write_rows(void *cookie, const char *text, size_t len)
{
    struct report *r = cookie;
    return cli_stream_write(r->stream, text, len);
}

static int
write_invalid(void *cookie, const char *text, size_t len)
{
    (void)cookie;
    return fwrite(text, 1, len, stderr) == len && !cli_interrupted() ? 0 : -1;
}

static int
draw_progress(void *cookie, const struct spsim_sweep_stats *s)
{
    struct report *r = cookie;
    if (cli_interrupted())
        return -1;
    if (r->quiet || !r->tty || s->elapsed_s < 1.0)
        return 0;
    double done = s->points ? (double)s->evaluated / (double)s->points : 1;
    double rate = (double)s->evaluated / s->elapsed_s;
    double eta = rate > 0 ? (double)(s->points - s->evaluated) / rate : 0;
    char bar[31];
    int fill = (int)(done * 30);
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "\r[%s] %5.1f%%  %llu/%llu  %.3g configs/s  ETA %.0f s   ", bar, 100 * done,
            (unsigned long long)s->evaluated, (unsigned long long)s->points, rate, eta);
    r->drawn = true;
    return 0;
}

static void
summary(const struct report *r, const struct spsim_sweep_options *opt,
        const struct spsim_sweep_stats *s)
{
    if (r->drawn)
        fprintf(stderr, "\r%*s\r", 100, "");
    if (r->quiet)
        return;
    fprintf(stderr,
            "spsim: sweep: %llu evaluated, %llu valid, %llu feasible, %llu written in %.3f s "
            "(%.3g configs/s)\n",
            (unsigned long long)s->evaluated, (unsigned long long)s->valid,
            (unsigned long long)s->feasible, (unsigned long long)s->written, s->elapsed_s,
            s->elapsed_s > 0 ? (double)s->evaluated / s->elapsed_s : 0.0);
    /* A ranking a planner can trust holds only what fits (issue 24): say when it may not. */
    if (opt->top_k && !opt->feasible_only && s->valid > s->feasible)
        fprintf(stderr,
                "spsim: sweep: --top ranked every valid configuration, %llu of which do not fit "
                "in HBM (memory_fits false); --feasible-only ranks only those that fit\n",
                (unsigned long long)(s->valid - s->feasible));
}

/* The evaluation, alone or spread over MPI ranks. @return an exit code; a failure of the
 * write callback (SPSIM_EIO) is left for the stream's commit to report */
static int
evaluate_all(const struct cli_mpi *mpi, const struct spsim_sweep *sw,
             const struct spsim_sweep_options *opt, struct spsim_sweep_stats *stats)
{
    if (mpi->size > 1)
        return cli_mpi_sweep(mpi, sw, opt, stats);
    struct spsim_error err = {0};
    int st = spsim_sweep_run(sw, opt, stats, &err);
    return st == SPSIM_OK || st == SPSIM_EIO ? EXIT_OK : cli_fail(&err);
}

/* A shard's first and last lines, which 'spsim merge' checks and drops (doc/sweep.md): which
 * shard of which sweep, and that it is complete. @return 0 or -1 (a failed write) */
static int
shard_line(const struct sweep_args *a, const struct spsim_sweep *sw, struct cli_stream *stream,
           const struct spsim_sweep_stats *done)
{
    char line[128];
    int n = done ? snprintf(line, sizeof(line), "#spsim end of shard %llu/%llu: %llu rows\n",
                            (unsigned long long)a->shard, (unsigned long long)a->nshards,
                            (unsigned long long)done->written)
                 : snprintf(line, sizeof(line), "#spsim shard %llu/%llu of sweep %016llx\n",
                            (unsigned long long)a->shard, (unsigned long long)a->nshards,
                            (unsigned long long)spsim_sweep_fingerprint(sw, &a->opt));
    return a->nshards ? cli_stream_write(stream, line, (size_t)n) : 0;
}

/* Rank 0 (or the only process): open the output, evaluate, report, commit. */
static int
write_output(struct sweep_args *a, const struct spsim_sweep *sw, const struct cli_mpi *mpi)
{
    struct cli_stream stream;
    int rc = cli_stream_open(&stream, a->output);
    if (rc != EXIT_OK)
        return rc;
    struct report rep = {a->quiet, isatty(STDERR_FILENO) == 1, false, &stream};
    a->opt.write = write_rows;
    a->opt.invalid = a->show_invalid ? write_invalid : NULL;
    a->opt.progress = draw_progress;
    a->opt.cookie = &rep;
    struct spsim_sweep_stats stats = {0};
    char *terminal = NULL; /* a person reads standard output: the short set of columns */
    if (!a->opt.columns && !a->output && isatty(STDOUT_FILENO) == 1)
        a->opt.columns = terminal = cli_short_columns(sw);
    if (mpi->size > 1 && a->opt.top_k && a->opt.columns)
        rc = cli_usage_error("sweep", "--columns: not with --top under mpirun");
    else if (shard_line(a, sw, &stream, NULL) == 0)
        rc = evaluate_all(mpi, sw, &a->opt, &stats);
    summary(&rep, &a->opt, &stats);
    if (rc == EXIT_OK && !stream.error)
        shard_line(a, sw, &stream, &stats);
    free(terminal);
    a->opt.columns = NULL;
    if (rc != EXIT_OK && !stream.error && !cli_interrupted()) {
        cli_stream_abort(&stream);
        return rc;
    }
    return cli_stream_commit(&stream); /* reports a failed write or an interruption */
}

static int
run(struct sweep_args *a, const struct spsim_sweep *sw, int argc, char **argv)
{
    struct cli_mpi mpi;
    struct spsim_error err = {0};
    struct spsim_sweep_stats stats;
    int rc = cli_mpi_begin(&mpi, argc, argv);
    if (rc == EXIT_OK && mpi.size > 1 && a->nshards)
        rc = cli_usage_error("sweep", "--shard: under mpirun the ranks are the shards");
    if (rc == EXIT_OK && a->nshards &&
        spsim_sweep_shard_range(spsim_sweep_size(sw), a->shard, a->nshards, &a->opt.begin,
                                &a->opt.end, &err) != SPSIM_OK)
        rc = cli_usage_error("sweep", "%s", err.message);
    a->opt.invalid = a->show_invalid ? write_invalid : NULL; /* other ranks: only the flag */
    if (rc == EXIT_OK && a->count && mpi.rank == 0)
        printf("%llu\n", (unsigned long long)spsim_sweep_size(sw));
    else if (rc == EXIT_OK && !a->count && mpi.rank == 0)
        rc = write_output(a, sw, &mpi);
    else if (rc == EXIT_OK && !a->count)
        rc = cli_mpi_sweep(&mpi, sw, &a->opt, &stats);
    return cli_mpi_end(&mpi, rc);
}

int
cmd_sweep(int argc, char **argv)
{
    struct sweep_args a;
    memset(&a, 0, sizeof(a));
    spsim_sweep_options_defaults(&a.opt);
    int rc = parse(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    struct spsim_error err = {0};
    if (a.opt.columns && spsim_row_columns_check(a.opt.columns, &err) != SPSIM_OK)
        return cli_usage_error("sweep", "--%s", err.message);
    struct spsim_sweep *sw = NULL;
    if ((rc = build_sweep(&a, &sw)) != EXIT_OK)
        return rc;
    rc = run(&a, sw, argc, argv);
    spsim_sweep_destroy(sw);
    return rc;
}
