/* `spsim trace`: one iteration's timeline as Chrome / Perfetto trace-event JSON. */
#include "config.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char trace_help[] =
    "Usage: spsim trace [OPTIONS]\n"
    "\n"
    "The schedule of one iteration of a configuration as Chrome trace-event JSON, which\n"
    "Perfetto (ui.perfetto.dev) and chrome://tracing open: one process per pipeline rank, a\n"
    "compute stream with every forward and backward of each micro-batch and model chunk\n"
    "(Megatron-Core's 1F1B or interleaved order; --pp-schedule zb-h1, zb-v, dualpipe and\n"
    "dualpipev in their reference code's order, with input-gradient and weight-gradient backwards\n"
    "apart), the exposed TP/CP/EP communication, the\n"
    "pipeline sends, and the data-parallel reduction and optimizer step at the end. Times are\n"
    "the query's terms; the trace ends at its time.iteration_s. 'spsim plot timeline FILE'\n"
    "draws it.\n"
    "\n"
    "Configuration:\n" CLI_CONFIG_HELP "\n"
    "Output:\n"
    "  -o, --output FILE      write to FILE atomically instead of standard output\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 ok, 2 bad option, 3 bad profile file, 4 invalid configuration or one not\n"
    "traced (an interleaved schedule whose micro-batches are not a multiple of pp, a zb-v\n"
    "case its greedy search finds no order for, more than 2,000,000 ops), 1 other failure.\n";

static int
parse_option(void *ctx, int opt, const char *arg, const char *current)
{
    (void)current;
    (void)opt;
    *(const char **)ctx = arg;
    return EXIT_OK;
}

int
cmd_trace(int argc, char **argv)
{
    struct cli_config cfg;
    cli_config_defaults(&cfg);
    const char *output = NULL;
    static const struct option own[] = {{"output", required_argument, NULL, 'o'}};
    const struct cli_command c = {.name = "trace",
                                  .help = trace_help,
                                  .config = &cfg,
                                  .own = own,
                                  .nown = CLI_ARRAY_LENGTH(own),
                                  .handle = parse_option,
                                  .ctx = &output};
    int rc = cli_parse_options(&c, argc, argv);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    struct spsim_model *model = NULL;
    struct spsim_hardware *hw = NULL;
    struct spsim_result result;
    struct spsim_error err = {0};
    char *doc = NULL;
    if ((rc = cli_config_model(&cfg, &model)) || (rc = cli_load_hardware(cfg.hardware, &hw)))
        goto done;
    cli_config_finish(&cfg, model);
    if (spsim_evaluate(model, hw, &cfg.par, &result, &err) != SPSIM_OK ||
        spsim_trace_json(&result, &doc, &err) != SPSIM_OK) {
        rc = cli_fail(&err);
        goto done;
    }
    struct cli_output out;
    if ((rc = cli_output_open(&out, output)))
        goto done;
    if (fputs(doc, out.stream) < 0) {
        cli_output_abort(&out); /* a failed command never replaces its output */
        rc = cli_error(EXIT_RUNTIME, "trace: cannot write");
    } else {
        rc = cli_output_close(&out);
    }
done:
    free(doc);
    spsim_model_destroy(model);
    spsim_hardware_destroy(hw);
    return rc;
}
