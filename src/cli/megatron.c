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

int
cli_megatron_apply(struct cli_config *cfg, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    int rc = read_all(path, &text, &len);
    if (rc != EXIT_OK)
        return rc;
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    int status = spsim_megatron_parse(text, len, path, &mc, &err);
    free(text);
    if (status != SPSIM_OK)
        return cli_fail(&err);
    if (mc.unmodelled[0])
        cli_warning("%s: flags spsim does not model, left out of its figures: %s", path,
                    mc.unmodelled);
    spsim_model_destroy(cfg->imported);
    cfg->imported = mc.model;
    cfg->par = mc.par;
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
