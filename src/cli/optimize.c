/*
 * spsim optimize: the best configurations of a model on N GPUs. A sweep over every valid
 * (tp, pp, vpp, mbs, sp, recompute, distributed optimizer, overlap, and cp, zero where asked)
 * with dp = N / (tp·cp·pp),
 * reduced to the best K that fit; then the runner-up compared with the winner term by term.
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
    "Search every valid parallel configuration of a model on N GPUs (dp = N / (tp*pp)) and\n"
    "print the best few that fit in memory, with their iteration time, memory per GPU and\n"
    "MFU, and what makes the runner-up lose.\n"
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
    "  --tp LIST, --pp LIST   default: every divisor of N (pp up to the layer count)\n"
    "  --vpp LIST             default 1..layers\n"
    "  --pp-split LIST        even, account (embedding and loss count as layers), balanced\n"
    "                         (lighter first and last stages); default all three, so that a\n"
    "                         pp that does not divide the layers gets an answer\n"
    "  --mbs LIST             default 1..64:*2\n"
    "  --sp LIST              default on,off\n"
    "  --recompute LIST       default none,selective,full\n"
    "  --distributed-optimizer LIST, --overlap-grad-reduce LIST   default on,off (on at dp 1\n"
    "                         is skipped: it repeats off)\n"
    "  --seq LIST, --flash-attn LIST, --dtype LIST   default: the model's, bf16\n"
    "  --fp8-recipe LIST      as 'spsim sweep' (default delayed)\n"
    "  --recompute-modules LIST, --recompute-method LIST, --recompute-layers LIST,\n"
    "  --offload-layers LIST  as 'spsim sweep' (default: Megatron's core_attn, none, 0, 0)\n"
    "  --cp LIST, --cp-comm-type LIST   context parallelism; default 1, p2p\n"
    "  --zero LIST            sharding over dp·cp (0-3); default 0 (--distributed-optimizer is 1)\n"
    "  --overlap-param-gather LIST, --grad-reduce-in-fp32 LIST   default off, the dtype's\n"
    "  --max-memory-gib X     memory per GPU at most X GiB (default: what the GPU reports\n"
    "                         less what tensors cannot use); the 'fit' count honours it\n"
    "Output:\n"
    "  --top K                how many configurations to show (default 5)\n"
    "  --by M                 rank by iteration_s (default), total_bytes or mfu\n"
    "  --format F             table (default), csv or jsonl (rows as 'spsim sweep' writes), or\n"
    "                         megatron (the best configuration's Megatron-LM launch line)\n"
    "  --threads N            worker threads (default: every core)\n"
    "  -o, --output FILE      write FILE atomically instead of standard output\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 ok, 1 runtime failure, 2 bad option, 3 bad profile file, 4 no valid\n"
    "configuration fits.\n";

enum { OPT_MAXMEM = 5000, OPT_TOP, OPT_BY, OPT_FORMAT, OPT_THREADS };

/* --format megatron: the best configuration's Megatron-LM launch line. */
#define OPTIMIZE_MEGATRON 100

struct optimize_args {
    struct cli_axes axes;
    const char *gpus;
    uint64_t top;
    enum spsim_sweep_by by;
    int format; /* SPSIM_ROW_NONE = table; OPTIMIZE_MEGATRON */
    unsigned threads;
    double max_gib;
    const char *output;
};

static int
parse_option(void *ctx, int opt, const char *arg, const char *current)
{
    struct optimize_args *a = ctx;
    uint32_t threads = 0;
    enum spsim_row_format format;
    int rc = EXIT_OK;
    switch (opt) {
    case OPT_MAXMEM:
        return cli_parse_double("--max-memory-gib", arg, 1.0 / 1024, 1 << 20, &a->max_gib);
    case OPT_TOP:
        return cli_parse_u64("--top", arg, 1, 1000, &a->top);
    case OPT_BY:
        return cli_parse_by("optimize", arg, &a->by);
    case OPT_FORMAT:
        if (strcmp(arg, "table") == 0)
            a->format = SPSIM_ROW_NONE;
        else if (strcmp(arg, "megatron") == 0)
            a->format = OPTIMIZE_MEGATRON;
        else if ((rc = cli_parse_row_format("optimize", arg, &format)) == EXIT_OK)
            a->format = format;
        return rc;
    case OPT_THREADS:
        rc = cli_parse_u32("--threads", arg, 1, 256, &threads);
        a->threads = threads;
        return rc;
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

/* The search space: the options, and everything valid where they say nothing
 * (spsim_sweep_spec_optimize_defaults). */
static int
build_space(const struct optimize_args *a, const struct spsim_model_shape *shape,
            struct spsim_sweep **out)
{
    uint32_t layers = shape->layers;
    uint32_t gpus = (uint32_t)strtoul(a->gpus, NULL, 10);
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_error err = {0};
    int rc = spsim_sweep_spec_create(&spec, &err) ? cli_fail(&err) : EXIT_OK;
    if (rc == EXIT_OK)
        rc = cli_axes_apply(&a->axes, spec, "optimize");
    if (rc == EXIT_OK && (spsim_sweep_spec_optimize_defaults(spec, gpus, layers, &err) ||
                          spsim_sweep_spec_optimize_moe(spec, gpus, shape->experts, &err)))
        rc = cli_fail(&err);
    if (rc == EXIT_OK && spsim_sweep_create(spec, out, &err) != SPSIM_OK)
        rc = err.code == SPSIM_EINVAL || err.code == SPSIM_ERANGE
                 ? cli_usage_error("optimize", "%s", err.message)
                 : cli_fail(&err);
    spsim_sweep_spec_destroy(spec);
    return rc;
}

/* The best points of a search, best first. */
struct search {
    uint64_t *index, count;
    struct spsim_sweep_stats stats;
};

static int
search(const struct spsim_sweep *sw, const struct spsim_sweep_options *base, uint64_t top,
       enum spsim_sweep_by by, bool constrained, struct search *s)
{
    struct spsim_sweep_options opt = *base;
    struct spsim_error err = {0};
    s->index = calloc(top, sizeof(*s->index));
    if (!s->index)
        return cli_error(EXIT_RUNTIME, "out of memory");
    opt.format = SPSIM_ROW_NONE;
    opt.top_k = top;
    opt.by = by;
    opt.top_index = s->index;
    opt.top_count = &s->count;
    if (!constrained) {
        opt.feasible_only = false;
        opt.max_total_bytes = 0;
    }
    return spsim_sweep_run(sw, &opt, &s->stats, &err) == SPSIM_OK ? EXIT_OK : cli_fail(&err);
}

static const char *
on_off(bool v)
{
    return v ? "on" : "off";
}

/* The pipeline split: "even", "account" (embedding and loss as layers), or "F/L" layers. */
static const char *
split_text(const struct spsim_parallel *p, char *buf, size_t cap)
{
    if (p->first_stage_layers || p->last_stage_layers)
        snprintf(buf, cap, "%u/%u", p->first_stage_layers, p->last_stage_layers);
    else
        snprintf(buf, cap, "%s", p->account_embedding || p->account_loss ? "account" : "even");
    return buf;
}

/* What a row adds to its recompute column when it is not the plain mode: the selective
 * modules, the full method, the offloaded layers. */
static void
print_row_details(FILE *f, const struct spsim_parallel *p)
{
    char mods[96];
    if (p->recompute == SPSIM_RECOMPUTE_SELECTIVE && p->recompute_modules != SPSIM_RMOD_CORE_ATTN)
        fprintf(f, "  modules %s",
                spsim_recompute_modules_format(p->recompute_modules, mods, sizeof(mods)));
    if (p->recompute_method != SPSIM_RECOMPUTE_METHOD_DEFAULT)
        fprintf(f, "  %s %u", spsim_recompute_method_name(p->recompute_method),
                p->recompute_layers);
    if (p->offload_layers)
        fprintf(f, "  offload %u", p->offload_layers);
    if (p->etp) /* resolved for MoE models only */
        fprintf(f, "  ep %u etp %u %s", p->ep, p->etp,
                spsim_moe_dispatcher_name(p->moe_dispatcher));
}

static void
print_row(FILE *f, int rank, const struct spsim_result *r)
{
    const struct spsim_parallel *p = &r->config;
    char t[32], m[32], s[32];
    fprintf(f, "%3d %4u %4u %3u %5u %4u %-7s  %-3s %-9s %4u  %-8s %4u %-7s %12s %12s %6.1f%%", rank,
            p->tp, p->pp, p->cp, p->dp, p->vpp, split_text(p, s, sizeof(s)), on_off(p->sp),
            spsim_recompute_name(p->recompute), p->mbs, on_off(p->distributed_optimizer), p->zero,
            on_off(p->overlap_grad_reduce), fmt_time(t, sizeof(t), r->time.iteration_s),
            fmt_bytes(m, sizeof(m), (double)r->memory.total_bytes), 100 * r->time.mfu);
    print_row_details(f, p);
    fputc('\n', f);
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

/* The headline: how much worse #2 is by the ranked figure, and what differs in its setup. */
static void
explain_headline(FILE *f, enum spsim_sweep_by by, const struct spsim_result *a,
                 const struct spsim_result *b, const char *diff)
{
    char x[32];
    if (spsim_sweep_rank_key(by, a) == spsim_sweep_rank_key(by, b))
        fprintf(f, "\n#2 ties with #1 on %s; the order is the sweep's (%s)",
                spsim_sweep_by_name(by), diff);
    else if (by == SPSIM_BY_TOTAL_BYTES)
        fprintf(
            f, "\n#2 needs %s more per GPU than #1 (%s)",
            fmt_bytes(x, sizeof(x), (double)b->memory.total_bytes - (double)a->memory.total_bytes),
            diff);
    else if (by == SPSIM_BY_MFU)
        fprintf(f, "\n#2 reaches %.2f%% MFU, %.2f points below #1 (%s)", 100 * b->time.mfu,
                100 * (a->time.mfu - b->time.mfu), diff);
    else
        fprintf(f, "\n#2 is %s slower per iteration than #1 (%+.2f%%; %s)",
                fmt_time(x, sizeof(x), b->time.iteration_s - a->time.iteration_s),
                100 * (b->time.iteration_s / a->time.iteration_s - 1), diff);
}

static double
activations(const struct spsim_memory_report *m)
{
    return (double)m->total_bytes - (double)m->weights_bytes - (double)m->gradients_bytes -
           (double)m->optimizer_bytes;
}

/* Why b ranks below a: the setup differences and the terms of the ranked figure (time, or
 * memory with --by total_bytes) that differ most. */
static void
explain(FILE *f, enum spsim_sweep_by by, const struct spsim_result *a, const struct spsim_result *b)
{
    char diff[512], y[32];
    config_diff(a, b, diff, sizeof(diff));
    const struct spsim_time_report *ta = &a->time, *tb = &b->time;
    const struct spsim_memory_report *ma = &a->memory, *mb = &b->memory;
    struct term time_terms[] = {{"forward", tb->forward_s - ta->forward_s},
                                {"backward", tb->backward_s - ta->backward_s},
                                {"recomputation", tb->recompute_s - ta->recompute_s},
                                {"exposed TP communication", tb->tp_exposed_s - ta->tp_exposed_s},
                                {"pipeline bubble", tb->pp_bubble_s - ta->pp_bubble_s},
                                {"pipeline point-to-point", tb->pp_p2p_s - ta->pp_p2p_s},
                                {"exposed DP reduction", tb->dp_exposed_s - ta->dp_exposed_s},
                                {"tied-embedding AllReduce",
                                 tb->tied_embedding_allreduce_s - ta->tied_embedding_allreduce_s},
                                {"optimizer step", tb->optimizer_s - ta->optimizer_s}};
    struct term mem_terms[] = {
        {"weights", (double)mb->weights_bytes - (double)ma->weights_bytes},
        {"gradients", (double)mb->gradients_bytes - (double)ma->gradients_bytes},
        {"optimizer state", (double)mb->optimizer_bytes - (double)ma->optimizer_bytes},
        {"activations", activations(mb) - activations(ma)}};
    bool mem = by == SPSIM_BY_TOTAL_BYTES;
    struct term *terms = mem ? mem_terms : time_terms;
    size_t nterms = mem ? 4 : sizeof(time_terms) / sizeof(time_terms[0]);
    qsort(terms, nterms, sizeof(*terms), by_size);
    explain_headline(f, by, a, b, diff);
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
    fprintf(f, " (#2 minus #1)\n");
}

static int
report(FILE *f, const struct optimize_args *a, const struct spsim_sweep *sw,
       const struct search *best, const struct search *unlimited, uint64_t limit)
{
    struct spsim_result *r = calloc(best->count, sizeof(*r)), any;
    struct spsim_sweep_point pt;
    struct spsim_error err = {0};
    if (!r)
        return cli_error(EXIT_RUNTIME, "out of memory");
    int rc = EXIT_OK;
    for (uint64_t i = 0; rc == EXIT_OK && i < best->count; i++)
        if (spsim_sweep_evaluate(sw, best->index[i], &r[i], &err) != SPSIM_OK)
            rc = cli_fail(&err);
    spsim_sweep_point_at(sw, best->index[0], &pt, NULL);
    char lim[32], t[32], m[32];
    fprintf(f, "spsim optimize: %s on %s, %s GPUs, global batch %llu, at most %s%s per GPU\n",
            pt.model_name, pt.hw_name, a->gpus, (unsigned long long)pt.par.gbs,
            fmt_bytes(lim, sizeof(lim), (double)limit),
            a->max_gib > 0 && (double)limit < a->max_gib * 1073741824.0 + 1
                ? ""
                : " less what tensors cannot use");
    fprintf(f, "searched %llu configurations in %.2f s: %llu valid, %llu fit\n\n",
            (unsigned long long)best->stats.evaluated, best->stats.elapsed_s,
            (unsigned long long)best->stats.valid, (unsigned long long)best->stats.feasible);
    fprintf(f, "  # %4s %4s %3s %5s %4s %-7s  %-3s %-9s %4s  %-8s %4s %-7s %12s %12s %7s\n", "tp",
            "pp", "cp", "dp", "vpp", "split", "sp", "recompute", "mbs", "dist-opt", "zero",
            "overlap", "iteration", "memory/GPU", "MFU");
    for (uint64_t i = 0; rc == EXIT_OK && i < best->count; i++)
        print_row(f, (int)i + 1, &r[i]);
    if (rc == EXIT_OK && best->count > 1)
        explain(f, a->by, &r[0], &r[1]);
    if (rc == EXIT_OK && unlimited->count &&
        spsim_sweep_evaluate(sw, unlimited->index[0], &any, &err) == SPSIM_OK &&
        spsim_sweep_rank_key(a->by, &any) < spsim_sweep_rank_key(a->by, &r[0]))
        fprintf(f,
                "\nWithout the memory limit the best by %s would be tp %u, pp %u, dp %u, vpp "
                "%u, mbs %u, recompute %s (%s, MFU %.1f%%), but it needs %s per GPU.\n",
                spsim_sweep_by_name(a->by), any.config.tp, any.config.pp, any.config.dp,
                any.config.vpp, any.config.mbs, spsim_recompute_name(any.config.recompute),
                fmt_time(t, sizeof(t), any.time.iteration_s), 100 * any.time.mfu,
                fmt_bytes(m, sizeof(m), (double)any.memory.total_bytes));
    free(r);
    return rc;
}

/* No configuration fits: say what the smallest needs. */
static int
none_fits(const struct spsim_sweep *sw, const struct spsim_sweep_options *base,
          const struct search *unlimited, uint64_t limit)
{
    if (unlimited->stats.valid == 0)
        return cli_error(EXIT_CONFIG,
                         "no valid configuration of %llu points (--show-invalid of "
                         "'spsim sweep' lists why each is refused)",
                         (unsigned long long)unlimited->stats.evaluated);
    struct search smallest = {0};
    struct spsim_result r;
    struct spsim_error err = {0};
    char need[32], lim[32];
    int rc = search(sw, base, 1, SPSIM_BY_TOTAL_BYTES, false, &smallest);
    if (rc == EXIT_OK && spsim_sweep_evaluate(sw, smallest.index[0], &r, &err) == SPSIM_OK)
        rc = cli_error(EXIT_CONFIG,
                       "none of the %llu valid configurations fits: the smallest "
                       "needs %s per GPU, the limit is %s",
                       (unsigned long long)unlimited->stats.valid,
                       fmt_bytes(need, sizeof(need), (double)r.memory.total_bytes),
                       fmt_bytes(lim, sizeof(lim), (double)limit));
    free(smallest.index);
    return rc == EXIT_OK ? EXIT_CONFIG : rc;
}

static int
write_rows(void *cookie, const char *text, size_t len)
{
    return cli_stream_write(cookie, text, len);
}

static int
write_megatron(const struct optimize_args *a, const struct spsim_sweep *sw,
               const struct search *best)
{
    struct spsim_sweep_point pt;
    struct spsim_result r;
    struct spsim_error err = {0};
    struct cli_output out;
    int rc;
    if (spsim_sweep_point_at(sw, best->index[0], &pt, &err) != SPSIM_OK ||
        spsim_sweep_evaluate(sw, best->index[0], &r, &err) != SPSIM_OK)
        return cli_fail(&err);
    if ((rc = cli_output_open(&out, a->output)) != EXIT_OK)
        return rc;
    rc = cli_megatron_write(out.stream, pt.model, pt.hw, &r.config);
    int closed = cli_output_close(&out);
    return rc != EXIT_OK ? rc : closed;
}

static int
output(const struct optimize_args *a, const struct spsim_sweep *sw,
       const struct spsim_sweep_options *base, const struct search *best,
       const struct search *unlimited, uint64_t limit)
{
    struct cli_output out;
    struct cli_stream stream;
    int rc;
    if (a->format == OPTIMIZE_MEGATRON)
        return write_megatron(a, sw, best);
    if (a->format == SPSIM_ROW_NONE) {
        if ((rc = cli_output_open(&out, a->output)) != EXIT_OK)
            return rc;
        if ((rc = report(out.stream, a, sw, best, unlimited, limit)) == EXIT_OK)
            return cli_output_close(&out);
        cli_output_abort(&out);
        return rc;
    }
    /* Rows: the same search again, written. */
    struct spsim_sweep_options opt = *base;
    struct spsim_error err = {0};
    opt.format = (enum spsim_row_format)a->format;
    opt.top_k = a->top;
    opt.by = a->by;
    opt.write = write_rows;
    opt.cookie = &stream;
    if ((rc = cli_stream_open(&stream, a->output)) != EXIT_OK)
        return rc;
    if (spsim_sweep_run(sw, &opt, NULL, &err) != SPSIM_OK && !stream.error && !cli_interrupted()) {
        cli_stream_abort(&stream);
        return cli_fail(&err);
    }
    return cli_stream_commit(&stream);
}

int
cmd_optimize(int argc, char **argv)
{
    struct optimize_args a;
    memset(&a, 0, sizeof(a));
    a.top = 5;
    int rc = parse(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    if ((rc = cli_output_check(a.output)) != EXIT_OK)
        return rc;
    struct spsim_model *model = NULL;
    struct spsim_hardware *hw = NULL;
    struct spsim_sweep *sw = NULL;
    struct search best = {0}, unlimited = {0};
    if ((rc = cli_load_model(a.axes.text[SPSIM_AXIS_MODEL], &model)) ||
        (rc = cli_load_hardware(a.axes.text[SPSIM_AXIS_HW], &hw)) ||
        (rc = build_space(&a, spsim_model_get_shape(model), &sw)))
        goto done;
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    uint64_t limit = info.hbm_capacity_bytes;
    struct spsim_sweep_options base;
    spsim_sweep_options_defaults(&base);
    base.threads = a.threads;
    base.feasible_only = true;
    if (a.max_gib > 0 && a.max_gib * 1073741824.0 < (double)limit)
        limit = base.max_total_bytes = (uint64_t)(a.max_gib * 1073741824.0);
    if ((rc = search(sw, &base, a.top, a.by, true, &best)) ||
        (rc = search(sw, &base, 1, a.by, false, &unlimited)))
        goto done;
    rc = best.count == 0 ? none_fits(sw, &base, &unlimited, limit)
                         : output(&a, sw, &base, &best, &unlimited, limit);
done:
    free(best.index);
    free(unlimited.index);
    spsim_sweep_destroy(sw);
    spsim_model_destroy(model);
    spsim_hardware_destroy(hw);
    return rc;
}
