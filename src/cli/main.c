/* The spsim command: subcommand dispatch, --help, --version. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "cli.h"

static const char main_help[] =
    "Usage: spsim COMMAND [OPTIONS]\n"
    "\n"
    "Analytic simulator of Megatron-style training: tensor, sequence, pipeline and data\n"
    "parallelism with activation recomputation. No GPU needed.\n"
    "\n"
    "Commands:\n"
    "  query      memory, communication and time of one configuration\n"
    "  explain    a layer's schedule: ops, regions, collectives, shapes, RNG domains\n"
    "  trace      one iteration's timeline as Chrome/Perfetto trace-event JSON\n"
    "  list       list the shipped profiles: spsim list models|hardware\n"
    "  check      validate profile files: spsim check FILE...\n"
    "  collective time and bandwidth of one NCCL collective, as nccl-tests reports it\n"
    "  validate   replay one layer on the local GPUs: predicted against measured, per op\n"
    "  calibrate  fit a calibrated hardware profile to nccl-tests logs or the local GPUs\n"
    "  sweep      every configuration of a space of axes, streamed as CSV or JSON Lines\n"
    "  optimize   the fastest configurations of a model on N GPUs, and why\n"
    "  merge      combine the outputs of sharded sweeps\n"
    "  plot       draw a query or a sweep's CSV with matplotlib (python3 -m spsim.plot)\n"
    "\n"
    "Run 'spsim COMMAND --help' for a command's options. 'spsim --version' prints the version.\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  runtime failure (numerical error, cannot write output)\n"
    "  2  invalid command line\n"
    "  3  invalid input file (profile, sweep spec, nccl-tests log, merge input; or not a\n"
    "     regular file)\n"
    "  4  invalid parallel configuration\n"
    "  5  GPU support missing from this build, no GPU, fewer than tp GPUs, or no FP8\n"
    "  6  a CUDA, cuBLAS or NCCL call failed\n";

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
};

static const struct command commands[] = {
    {"query", cmd_query},       {"explain", cmd_explain},     {"trace", cmd_trace},
    {"list", cmd_list},         {"check", cmd_check},         {"collective", cmd_collective},
    {"validate", cmd_validate}, {"calibrate", cmd_calibrate}, {"sweep", cmd_sweep},
    {"optimize", cmd_optimize}, {"merge", cmd_merge},         {"plot", cmd_plot},
};

/* Whatever a command printed to standard output must have reached it: a full disk or a file
 * size limit is a failure, not a silent truncation. */
static int
finish_stdout(int rc)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    int e = errno;
    if (rc == EXIT_OK)
        rc = cli_error(EXIT_RUNTIME, "cannot write to standard output: %s", strerror(e ? e : EIO));
    return rc;
}

int
main(int argc, char **argv)
{
    /* The library checks every GSL status; only the program may turn GSL's abort off. */
    gsl_set_error_handler_off();
    /* Past a file size limit (ulimit -f) the kernel sends SIGXFSZ, whose default action kills
     * the process without a word and leaves a temporary file behind; ignored, the write fails
     * with EFBIG instead, which every writer reports and cleans up after. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        fputs(main_help, stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "help") == 0) {
        fputs(main_help, stdout);
        return EXIT_OK;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("spsim %s\n", spsim_version());
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0)
            return finish_stdout(commands[i].run(argc - 1, argv + 1));
    cli_error(EXIT_USAGE, "unknown command %s", CLI_Q(name));
    fputs("Try 'spsim --help'.\n", stderr);
    return EXIT_USAGE;
}
