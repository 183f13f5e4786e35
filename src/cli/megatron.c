/* --megatron-args FILE|- (query, explain, validate) and --format megatron (query, optimize). */
#include "config.h"

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
    spsim_model_destroy(cfg->imported);
    cfg->imported = mc.model;
    cfg->par = mc.par;
    if (mc.par.pipeline_layout) { /* the file's text, kept while the configuration is */
        memcpy(cfg->layout, mc.pipeline_layout, sizeof(cfg->layout));
        cfg->par.pipeline_layout = cfg->layout;
    }
    cfg->file_world = mc.world_size_given ? mc.par.tp * mc.par.cp * mc.par.pp * mc.par.dp : 0;
    return EXIT_OK;
}

int
cli_config_model(struct cli_config *cfg, struct spsim_model **out)
{
    if (cfg->imported) {
        *out = cfg->imported;
        cfg->imported = NULL;
        return EXIT_OK;
    }
    return cli_load_model(cfg->model, out);
}

int
cli_megatron_write(FILE *f, const struct spsim_model *model, const struct spsim_hardware *hw,
                   const struct spsim_parallel *par)
{
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
