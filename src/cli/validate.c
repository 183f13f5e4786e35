/* `spsim validate`: one layer replayed on the local GPUs, predicted against measured. */
#include "config.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char validate_help[] =
    "Usage: spsim validate [OPTIONS]\n"
    "\n"
    "Replay one transformer layer of the model and configuration on the local GPUs and print,\n"
    "step by step in the order of 'spsim explain', the time spsim predicts (with --hw) against\n"
    "the time measured with CUDA events, and the error (predicted - measured) / measured.\n"
    "The replay runs the layer's GEMMs at this rank's shapes (cuBLASLt), its TP collectives\n"
    "(NCCL, bf16) in Megatron's order - f/f-bar AllReduces without SP, g/g-bar AllGathers and\n"
    "ReduceScatters with SP, the weight-gradient re-gathers - on a stream of their own beside\n"
    "the GEMM Megatron overlaps them with; memory-bound ops are replayed as device-to-device\n"
    "copies moving the same HBM bytes (between fresh stretches of a buffer beyond the L2),\n"
    "flash attention as batched GEMMs of its FLOPs. One host thread drives each GPU.\n"
    "tp GPUs are needed (tp 1: one GPU, no collectives). Only tp, sp, recompute, mbs, seq,\n"
    "the attention kernel and dtype shape the layer; the other options must still be valid.\n"
    "\n"
    "Configuration (as 'spsim query'):\n" CLI_CONFIG_HELP "\n"
    "Replay:\n"
    "  --iters N              timed layer passes, forward and backward (default 10)\n"
    "  --warmup N             passes before timing (default 3)\n"
    "  --plan                 print what would run and the prediction, without a GPU\n"
    "\n"
    "Output:\n"
    "  --format F             table (default) or json\n"
    "  -o, --output FILE      write to FILE atomically instead of standard output\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 ok, 2 bad option, 3 bad profile file, 4 invalid configuration,\n"
    "5 no GPU support in this build, no GPU, or fewer than tp GPUs, 6 a CUDA, cuBLAS or NCCL\n"
    "call failed (the message names it and the step), 1 other failure.\n";

struct validate_args {
    struct cli_config cfg;
    struct spsim_gpu_validate_options opts;
    bool plan, json;
    const char *output;
};

static int
parse_option(void *ctx, int opt, const char *arg, const char *current)
{
    struct validate_args *a = ctx;
    (void)current;
    switch (opt) {
    case 'i':
        return cli_parse_u32("--iters", arg, 1, 1000000, &a->opts.iters);
    case 'w':
        return cli_parse_u32("--warmup", arg, 0, 1000000, &a->opts.warmup_iters);
    case 'p':
        a->plan = true;
        return EXIT_OK;
    case 'o':
        a->output = arg;
        return EXIT_OK;
    default: /* --format */
        if (strcmp(arg, "json") == 0 || strcmp(arg, "table") == 0) {
            a->json = arg[0] == 'j';
            return EXIT_OK;
        }
        return cli_usage_error("validate", "--format: %s is not one of table, json", CLI_Q(arg));
    }
}

/* @return EXIT_OK, an exit code, or -1 after --help */
static int
parse(int argc, char **argv, struct validate_args *a)
{
    static const struct option own[] = {{"iters", required_argument, NULL, 'i'},
                                        {"warmup", required_argument, NULL, 'w'},
                                        {"plan", no_argument, NULL, 'p'},
                                        {"format", required_argument, NULL, 'f'},
                                        {"output", required_argument, NULL, 'o'}};
    const struct cli_command c = {.name = "validate",
                                  .help = validate_help,
                                  .config = &a->cfg,
                                  .own = own,
                                  .nown = CLI_ARRAY_LENGTH(own),
                                  .handle = parse_option,
                                  .ctx = a};
    return cli_parse_options(&c, argc, argv);
}

/* ---- output ---------------------------------------------------------------------------- */

/* (predicted − measured) / measured, as the README's accuracy tables; NaN without a
 * measurement. */
static double
rel_error(double predicted, double measured)
{
    return measured > 0 ? (predicted - measured) / measured : (double)NAN;
}

static const char *
fmt_error(char *buf, size_t cap, double e)
{
    if (e != e)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%+.1f%%", 100 * e);
    return buf;
}

static const char *
fmt_work(char *buf, size_t cap, const struct spsim_gpu_validate_step *s)
{
    char b[32];
    int used = 0;
    unsigned long long m = s->m, n = s->n, k = s->k, batch = s->batch;
    if (s->gemms == 1 && batch <= 1)
        used = snprintf(buf, cap, "%llux%llux%llu", m, n, k);
    else if (s->gemms == 1)
        used = snprintf(buf, cap, "%llu*%llux%llux%llu", batch, m, n, k);
    else if (s->gemms)
        used = snprintf(buf, cap, "%ux %llu*%llux%llux%llu", s->gemms, batch, m, n, k);
    if (used < 0 || (size_t)used >= cap)
        used = 0;
    if (s->copy_bytes)
        snprintf(buf + used, cap - (size_t)used, "%s%s", used ? " + " : "",
                 fmt_bytes(b, sizeof(b), (double)s->copy_bytes));
    else if (!used)
        snprintf(buf, cap, "-");
    return buf;
}

static void
write_notes(FILE *f)
{
    fputs("GEMMs: cuBLASLt at this rank's shapes (MxNxK; batched B*MxNxK; 'nx' for n GEMMs);\n"
          "wgrad accumulates into fp32 (bf16, fp16) as Megatron's gradient-accumulation fusion;\n"
          "fp8 as Transformer Engine: fast accumulation in forward, split in dgrad and wgrad.\n"
          "Memory-bound ops: device-to-device copies moving the same HBM bytes (the size shown:\n"
          "bytes read + written), each between fresh stretches of a ring of 3x the largest copy\n"
          "+ 2x L2, so that none hits in the L2. Flash attention: batched GEMMs with its FLOPs\n"
          "(causal half). One host thread per GPU, each binding its device once.\n"
          "Collectives: NCCL, bf16, on their own stream; 'beside' names the GEMM they overlap.\n",
          f);
}

static void
write_header(FILE *f, const struct spsim_gpu_validate_report *r, const char *model, const char *hw,
             const struct spsim_parallel *p, bool plan)
{
    const struct spsim_gpu_info *g = &r->gpu;
    fprintf(f, "spsim validate: %s, predicted with %s\n", model, hw);
    if (plan)
        fprintf(f, "plan only: nothing was run (--plan)\n");
    else
        fprintf(f,
                "measured on %u x %s (compute capability %d.%d, driver %d.%d, CUDA runtime "
                "%d.%d, NCCL %d.%d.%d): %u timed passes after %u warm-up, the slowest GPU's "
                "mean\n",
                r->gpus, g->name, g->cc_major, g->cc_minor, g->driver_version / 1000,
                g->driver_version % 1000 / 10, g->runtime_version / 1000,
                g->runtime_version % 1000 / 10, g->nccl_version / 10000,
                g->nccl_version % 10000 / 100, g->nccl_version % 100, r->iters, r->warmup_iters);
    fprintf(f, "tp %u · SP %s · recompute %s · mbs %u · seq %u · %s attention · %s\n", p->tp,
            p->sp ? "on" : "off", spsim_recompute_name(p->recompute), p->mbs, p->seq,
            p->flash_attn == 1 ? "flash" : "standard", spsim_dtype_name(p->dtype));
    write_notes(f);
}

static void
write_row(FILE *f, size_t i, const struct spsim_gpu_validate_step *s)
{
    char work[64], coll[40] = "-", pt[24], mt[24], e[16], cp[24] = "-", cm[24] = "-";
    if (s->coll != SPSIM_COLL_COUNT) {
        char b[32];
        snprintf(coll, sizeof(coll), "%s %s", spsim_coll_op_name(s->coll),
                 fmt_bytes(b, sizeof(b), (double)s->coll_bytes));
        fmt_time(cp, sizeof(cp), s->predicted_comm_s);
        if (s->measured_s > 0)
            fmt_time(cm, sizeof(cm), s->measured_comm_s);
    }
    fprintf(f, "%-3zu %-9s ", i + 1, spsim_phase_name(s->phase));
    fput_padded(f, s->op, 44);
    fprintf(f, " %-8s %-15s %-30s %-24s %-6s %10s %10s %8s %10s %10s\n", s->pass[0] ? s->pass : "-",
            spsim_replay_kind_name(s->kind), fmt_work(work, sizeof(work), s), coll,
            s->overlap == SPSIM_OVERLAP_NONE ? "-" : spsim_overlap_name(s->overlap),
            fmt_time(pt, sizeof(pt), s->predicted_s),
            s->measured_s > 0 ? fmt_time(mt, sizeof(mt), s->measured_s) : "-",
            fmt_error(e, sizeof(e), rel_error(s->predicted_s, s->measured_s)), cp, cm);
}

static void
write_total(FILE *f, const char *what, double predicted, double measured)
{
    char a[24], b[24] = "-", e[16];
    fprintf(f, "%-30s predicted %10s  measured %10s  error %8s\n", what,
            fmt_time(a, sizeof(a), predicted),
            measured > 0 ? fmt_time(b, sizeof(b), measured) : "-",
            fmt_error(e, sizeof(e), rel_error(predicted, measured)));
}

static void
write_table(FILE *f, const struct spsim_gpu_validate_report *r, const char *model, const char *hw,
            const struct spsim_parallel *p, bool plan)
{
    write_header(f, r, model, hw, p, plan);
    fprintf(f, "\n%-3s %-9s %-44s %-8s %-15s %-30s %-24s %-6s %10s %10s %8s %10s %10s\n", "#",
            "phase", "op", "pass", "replay", "work", "collective", "beside", "predicted",
            "measured", "error", "coll pred", "coll meas");
    for (size_t i = 0; i < r->nsteps; i++)
        write_row(f, i, &r->steps[i]);
    fputc('\n', f);
    write_total(f, "forward, one layer", r->predicted_forward_s, r->measured_forward_s);
    write_total(f, "backward (with recompute)", r->predicted_backward_s, r->measured_backward_s);
}

static void
json_step(struct jw *w, size_t i, const struct spsim_gpu_validate_step *s)
{
    jw_begin_object(w, NULL);
    jw_u64(w, "index", i + 1);
    jw_string(w, "phase", spsim_phase_name(s->phase));
    jw_string(w, "op", s->op);
    jw_string(w, "pass", s->pass);
    jw_string(w, "replay", spsim_replay_kind_name(s->kind));
    jw_string(w, "dtype", spsim_dtype_name(s->dtype));
    jw_u64(w, "m", s->m);
    jw_u64(w, "n", s->n);
    jw_u64(w, "k", s->k);
    jw_u64(w, "batch", s->batch);
    jw_u64(w, "gemms", s->gemms);
    jw_bool(w, "fp32_output", s->fp32_output);
    jw_bool(w, "fp8_fast_accum", s->fp8_fast_accum);
    jw_double(w, "flops", s->flops);
    jw_u64(w, "copy_bytes", s->copy_bytes);
    jw_string(w, "collective", s->coll == SPSIM_COLL_COUNT ? "" : spsim_coll_op_name(s->coll));
    jw_u64(w, "collective_bytes", s->coll_bytes);
    jw_string(w, "collective_site", s->coll_site);
    jw_string(w, "overlap", spsim_overlap_name(s->overlap));
    jw_double(w, "predicted_compute_s", s->predicted_compute_s);
    jw_double(w, "predicted_collective_s", s->predicted_comm_s);
    jw_double(w, "predicted_s", s->predicted_s);
    jw_double(w, "measured_compute_s", s->measured_compute_s);
    jw_double(w, "measured_collective_s", s->measured_comm_s);
    jw_double(w, "measured_s", s->measured_s);
    jw_double(w, "error", rel_error(s->predicted_s, s->measured_s));
    jw_end_object(w);
}

static void
json_total(struct jw *w, const char *key, double predicted, double measured)
{
    jw_begin_object(w, key);
    jw_double(w, "predicted_s", predicted);
    jw_double(w, "measured_s", measured);
    jw_double(w, "error", rel_error(predicted, measured));
    jw_end_object(w);
}

static void
json_device(struct jw *w, const struct spsim_gpu_validate_report *r)
{
    const struct spsim_gpu_info *g = &r->gpu;
    char cc[16];
    snprintf(cc, sizeof(cc), "%d.%d", g->cc_major, g->cc_minor);
    jw_begin_object(w, "device");
    jw_string(w, "gpu", g->name);
    jw_string(w, "compute_capability", cc);
    jw_i64(w, "cuda_driver", g->driver_version);
    jw_i64(w, "cuda_runtime", g->runtime_version);
    jw_i64(w, "nccl", g->nccl_version);
    jw_u64(w, "gpus", r->gpus);
    jw_u64(w, "iters", r->iters);
    jw_u64(w, "warmup_iters", r->warmup_iters);
    jw_end_object(w);
}

static void
json_config(struct jw *w, const struct spsim_parallel *p)
{
    jw_begin_object(w, "config");
    jw_u64(w, "tp", p->tp);
    jw_bool(w, "sp", p->sp);
    jw_string(w, "recompute", spsim_recompute_name(p->recompute));
    jw_u64(w, "mbs", p->mbs);
    jw_u64(w, "seq", p->seq);
    jw_bool(w, "flash_attention", p->flash_attn == 1);
    jw_string(w, "dtype", spsim_dtype_name(p->dtype));
    jw_end_object(w);
}

static void
write_json(FILE *f, const struct spsim_gpu_validate_report *r, const char *model, const char *hw,
           const struct spsim_parallel *p, bool plan)
{
    struct jw w;
    jw_init(&w, f, true);
    jw_begin_object(&w, NULL);
    jw_string(&w, "spsim_version", spsim_version());
    jw_string(&w, "model", model);
    jw_string(&w, "hardware", hw);
    jw_bool(&w, "plan_only", plan);
    if (!plan)
        json_device(&w, r);
    json_config(&w, p);
    jw_string(&w, "replay_notes",
              "memory-bound ops replayed as device-to-device copies moving "
              "the same HBM bytes between fresh stretches of a ring of 3 x the "
              "largest copy + 2 x L2; flash attention as batched GEMMs of its "
              "FLOPs; collectives in bf16 on their own stream; one host thread "
              "per GPU; fp8 forward GEMMs with fast accumulation, dgrad and "
              "wgrad split (Transformer Engine)");
    jw_begin_array(&w, "steps");
    for (size_t i = 0; i < r->nsteps; i++)
        json_step(&w, i, &r->steps[i]);
    jw_end_array(&w);
    json_total(&w, "forward", r->predicted_forward_s, r->measured_forward_s);
    json_total(&w, "backward", r->predicted_backward_s, r->measured_backward_s);
    jw_end_object(&w);
    jw_finish(&w);
}

/* The configuration as the replay resolves it: the model's sequence length and attention. */
static struct spsim_parallel
resolved(const struct spsim_parallel *par, const struct spsim_model *model)
{
    const struct spsim_model_shape *m = spsim_model_get_shape(model);
    struct spsim_parallel p = *par;
    if (!p.seq)
        p.seq = m->seq_len;
    if (p.flash_attn < 0)
        p.flash_attn = m->attention == SPSIM_ATTENTION_FLASH;
    return p;
}

static int
run(const struct validate_args *a, const struct spsim_model *model, const struct spsim_hardware *hw,
    struct spsim_gpu_validate_report *report)
{
    struct spsim_error err = {0};
    int rc = a->plan ? spsim_gpu_validate_plan(model, hw, &a->cfg.par, report, &err)
                     : spsim_gpu_validate(model, hw, &a->cfg.par, &a->opts, report, &err);
    if (rc != SPSIM_OK)
        return cli_fail(&err);
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    struct spsim_parallel shown = resolved(&a->cfg.par, model);
    struct cli_output out;
    if ((rc = cli_output_open(&out, a->output)))
        return rc;
    if (a->json)
        write_json(out.stream, report, spsim_model_name(model), info.name, &shown, a->plan);
    else
        write_table(out.stream, report, spsim_model_name(model), info.name, &shown, a->plan);
    return cli_output_close(&out);
}

int
cmd_validate(int argc, char **argv)
{
    struct validate_args a = {.plan = false, .json = false, .output = NULL};
    cli_config_defaults(&a.cfg);
    spsim_gpu_validate_defaults(&a.opts);
    int rc = parse(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    if ((rc = cli_output_check(a.output)) != EXIT_OK) /* before the GPUs run */
        return rc;
    struct spsim_model *model = NULL;
    struct spsim_hardware *hw = NULL;
    struct spsim_gpu_validate_report *report = calloc(1, sizeof(*report));
    if (!report)
        rc = cli_error(EXIT_RUNTIME, "out of memory");
    else if ((rc = cli_config_model(&a.cfg, &model)) == EXIT_OK &&
             (rc = cli_load_hardware(a.cfg.hardware, &hw)) == EXIT_OK) {
        if ((rc = cli_config_finish(&a.cfg, model)) == EXIT_OK)
            rc = run(&a, model, hw, report);
    }
    free(report);
    spsim_model_destroy(model);
    spsim_hardware_destroy(hw);
    return rc;
}
