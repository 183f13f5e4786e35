/* --megatron-args FILE|- (query, explain, validate) and --format megatron (query, optimize). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* The whole of FILE (a regular file: a FIFO or a device is refused at once, as every input), or
 * of standard input for "-", at most 64 MiB. */
static int
read_all(const char *path, char **out, size_t *len)
{
    struct spsim_error err = {0};
    int rc = strcmp(path, "-") == 0 ? spsim_file_read_fd(STDIN_FILENO, "-", out, len, &err)
                                    : spsim_file_read(path, out, len, &err);
    return rc == SPSIM_OK ? EXIT_OK : cli_fail(&err);
}

static bool
is_recipe(const char *path)
{
    size_t n = strlen(path);
    return (n > 5 && strcmp(path + n - 5, ".yaml") == 0) ||
           (n > 4 && strcmp(path + n - 4, ".yml") == 0);
}

/* The files given so far (recipes merge; a script stands alone), on --model's shape. */
static int
parse_files(struct cli_config *cfg, struct spsim_megatron_config *mc)
{
    struct spsim_megatron_input in[CLI_ARRAY_LENGTH(cfg->megatron)];
    char *text[CLI_ARRAY_LENGTH(cfg->megatron)] = {0};
    struct spsim_model *base = NULL;
    int rc = EXIT_OK;
    for (size_t i = 0; rc == EXIT_OK && i < cfg->nmegatron; i++) {
        rc = read_all(cfg->megatron[i], &text[i], &in[i].len);
        in[i].text = text[i];
        in[i].origin = cfg->megatron[i];
    }
    if (rc == EXIT_OK && cfg->model_given && is_recipe(cfg->megatron[0]))
        rc = cli_load_model(cfg->model, &base);
    struct spsim_megatron_context ctx = {cfg->env, cfg->nenv, base};
    struct spsim_error err = {0};
    if (rc == EXIT_OK &&
        spsim_megatron_parse_inputs(in, cfg->nmegatron, &ctx, mc, &err) != SPSIM_OK)
        rc = cli_fail(&err);
    for (size_t i = 0; i < cfg->nmegatron; i++)
        free(text[i]);
    spsim_model_destroy(base);
    return rc;
}

/* The configuration a file gave, into cfg (the layout into cfg's own buffer). */
static void
take_config(struct cli_config *cfg, struct spsim_megatron_config *mc)
{
    spsim_model_destroy(cfg->imported);
    cfg->imported = mc->model;
    mc->model = NULL;
    cfg->par = mc->par;
    if (mc->par.pipeline_layout) { /* borrowed: the configuration keeps its own copy */
        snprintf(cfg->layout, sizeof(cfg->layout), "%s", mc->pipeline_layout);
        cfg->par.pipeline_layout = cfg->layout;
    }
    cfg->file_world = mc->world_size_given ? mc->par.tp * mc->par.cp * mc->par.pp * mc->par.dp : 0;
}

int
cli_megatron_apply(struct cli_config *cfg, const char *path)
{
    bool compose = cfg->nmegatron > 0 && is_recipe(path) && is_recipe(cfg->megatron[0]);
    if (!compose)
        cfg->nmegatron = 0;
    if (cfg->nmegatron == CLI_ARRAY_LENGTH(cfg->megatron))
        return cli_error(EXIT_USAGE, "--megatron-args: more than %zu recipes",
                         CLI_ARRAY_LENGTH(cfg->megatron));
    cfg->megatron[cfg->nmegatron++] = path;
    struct spsim_megatron_config mc;
    int rc = parse_files(cfg, &mc);
    if (rc != EXIT_OK)
        return rc;
    if (mc.assumed[0])
        cli_warning("%s: %s", path, mc.assumed);
    if (mc.unmodelled[0])
        cli_warning("%s: flags spsim does not model, left out of its figures: %s", path,
                    mc.unmodelled);
    take_config(cfg, &mc);
    cfg->measured.path = NULL;
    return EXIT_OK;
}

int
cli_megatron_log_apply(struct cli_config *cfg, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    int rc = read_all(path, &text, &len);
    if (rc != EXIT_OK)
        return rc;
    struct spsim_megatron_run run;
    struct spsim_error err = {0};
    int status = spsim_megatron_log_parse(text, len, path, &run, &err);
    free(text);
    if (status != SPSIM_OK)
        return cli_fail(&err);
    if (run.config.unmodelled[0])
        cli_warning("%s: arguments spsim does not model, left out of its figures: %s", path,
                    run.config.unmodelled);
    take_config(cfg, &run.config);
    cfg->measured = (struct cli_measured){
        .path = path,
        .median_s = run.median_s,
        .median_tflops = run.median_tflops,
        .peak_bytes = run.peak_allocated_bytes,
        .lines = run.n_iterations,
        .skipped = run.n_skipped,
        .first = run.first_iteration,
        .last = run.last_iteration,
        .interval = run.n_iterations ? run.iterations[0].interval : 0,
    };
    spsim_megatron_run_free(&run);
    return EXIT_OK;
}

void
cli_measured_table(FILE *f, const struct cli_measured *m, const struct spsim_result *r)
{
    char a[32], b[32];
    double t = r->time.iteration_s;
    fprintf(f, "\nMeasured (%s: Megatron-LM training log)\n", m->path);
    fprintf(f,
            "  iteration time       %s, median of %zu log lines (iterations %llu..%llu, %llu a "
            "line); %zu left out (the process's first two: warm-up; skipped or NaN iterations)\n",
            fmt_time(a, sizeof(a), m->median_s), m->lines, (unsigned long long)m->first,
            (unsigned long long)m->last, (unsigned long long)m->interval, m->skipped);
    fprintf(f, "  spsim                %s: %+.1f %% against the measured\n",
            fmt_time(b, sizeof(b), t), 100.0 * (t - m->median_s) / m->median_s);
    if (m->median_tflops == m->median_tflops)
        fprintf(f,
                "  throughput per GPU   %.1f TFLOP/s logged (Megatron-LM's count), spsim %.1f "
                "(time.tflops_per_gpu_megatron)\n",
                m->median_tflops, r->time.tflops_per_gpu_megatron);
    if (m->peak_bytes == m->peak_bytes)
        fprintf(f,
                "  peak allocated       %s, the largest \"max allocated\" of the ranks' reports; "
                "spsim's most loaded stage %s (tensors)\n",
                fmt_bytes(a, sizeof(a), m->peak_bytes),
                fmt_bytes(b, sizeof(b), (double)r->memory.total_bytes));
}

void
cli_measured_json(struct jw *w, const struct cli_measured *m, const struct spsim_result *r)
{
    jw_begin_object(w, "measured");
    jw_string(w, "source", m->path);
    jw_double(w, "iteration_s", m->median_s);
    jw_u64(w, "lines", m->lines);
    jw_u64(w, "lines_left_out", m->skipped);
    jw_u64(w, "first_iteration", m->first);
    jw_u64(w, "last_iteration", m->last);
    jw_double(w, "tflops_per_gpu", m->median_tflops);
    jw_double(w, "peak_allocated_bytes", m->peak_bytes);
    jw_double(w, "time_error", (r->time.iteration_s - m->median_s) / m->median_s);
    jw_end_object(w);
}

/* --mtp-num-layers, --moe-expert-capacity-factor, --moe-pad-expert-input-to-capacity: the
 * model rebuilt with them, validated as a profile is (spsim_model_create). */
static int
model_overrides(const struct cli_config *cfg, struct spsim_model **model)
{
    if (cfg->mtp_layers < 0 && cfg->capacity_factor < 0 && cfg->pad_to_capacity < 0)
        return EXIT_OK;
    struct spsim_model_shape s = *spsim_model_get_shape(*model);
    if (cfg->mtp_layers >= 0)
        s.mtp_layers = (uint32_t)cfg->mtp_layers;
    if (cfg->capacity_factor >= 0)
        s.capacity_factor = cfg->capacity_factor;
    if (cfg->pad_to_capacity >= 0)
        s.pad_to_capacity = cfg->pad_to_capacity != 0;
    if (s.experts == 0 && (cfg->capacity_factor > 0 || cfg->pad_to_capacity > 0))
        return cli_error(EXIT_CONFIG, "--moe-expert-capacity-factor: model %s has no experts",
                         spsim_model_name(*model));
    struct spsim_model *m = NULL;
    struct spsim_error err;
    if (spsim_model_derive(*model, &s, &m, &err) != SPSIM_OK)
        return cli_error(EXIT_CONFIG, "model %s with the command line's model flags: %s",
                         spsim_model_name(*model), err.message);
    spsim_model_destroy(*model);
    *model = m;
    return EXIT_OK;
}

int
cli_config_model(struct cli_config *cfg, struct spsim_model **out)
{
    int rc;
    if (cfg->imported) {
        *out = cfg->imported;
        cfg->imported = NULL;
    } else if ((rc = cli_load_model(cfg->model, out)) != EXIT_OK) {
        return rc;
    }
    if ((rc = model_overrides(cfg, out)) != EXIT_OK) {
        spsim_model_destroy(*out);
        *out = NULL;
    }
    return rc;
}

int
cli_megatron_write(FILE *f, const struct spsim_model *model, const struct spsim_hardware *hw,
                   const struct spsim_parallel *par)
{
    const char *unsupported = spsim_megatron_unsupported(model);
    if (unsupported)
        return cli_error(EXIT_INPUT, "--format megatron: model %s has %s", spsim_model_name(model),
                         unsupported);
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    char buf[8192];
    size_t n = spsim_megatron_format(model, par, info.gpus_per_node, buf, sizeof(buf));
    if (n >= sizeof(buf))
        return cli_error(EXIT_RUNTIME, "the Megatron-LM flags do not fit in %zu bytes",
                         sizeof(buf));
    fwrite(buf, 1, n, f);
    return EXIT_OK;
}
