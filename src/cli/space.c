/* The sweep axes given as options (sweep, optimize): into the spec, with defaults. */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli.h"

int
cli_axes_apply(const struct cli_axes *axes, struct spsim_sweep_spec *spec, const char *command)
{
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++) {
        if (!axes->text[a])
            continue;
        char where[48] = "--";
        size_t n = 2;
        for (const char *p = spsim_sweep_axis_name(a); *p && n + 1 < sizeof(where); p++)
            where[n++] = *p == '_' ? '-' : *p;
        where[n] = '\0';
        struct spsim_error err = {0};
        int rc = spsim_sweep_spec_parse(spec, a, axes->text[a], where, &err);
        if (rc == SPSIM_EFIELD)
            return cli_usage_error(command, "%s", err.message);
        if (rc != SPSIM_OK)
            return cli_fail(&err);
    }
    return EXIT_OK;
}

int
cli_axes_default(struct spsim_sweep_spec *spec, enum spsim_sweep_axis axis, const char *text)
{
    if (spsim_sweep_spec_is_set(spec, axis) ||
        (axis == SPSIM_AXIS_GBS && spsim_sweep_spec_is_set(spec, SPSIM_AXIS_MAX_GBS)))
        return EXIT_OK;
    struct spsim_error err = {0};
    int rc = spsim_sweep_spec_parse(spec, axis, text, spsim_sweep_axis_name(axis), &err);
    return rc == SPSIM_OK ? EXIT_OK : cli_fail(&err);
}

int
cli_parse_by(const char *command, const char *arg, enum spsim_sweep_by *by)
{
    for (int b = SPSIM_BY_ITERATION_S; b < SPSIM_BY_COUNT; b++)
        if (strcmp(arg, spsim_sweep_by_name(b)) == 0) {
            *by = b;
            return EXIT_OK;
        }
    return cli_usage_error(
        command, "--by: %s is not one of tokens_per_s, iteration_s, total_bytes, mfu", CLI_Q(arg));
}

int
cli_parse_row_format(const char *command, const char *arg, enum spsim_row_format *format)
{
    if (strcmp(arg, "csv") == 0)
        *format = SPSIM_ROW_CSV;
    else if (strcmp(arg, "jsonl") == 0)
        *format = SPSIM_ROW_JSONL;
    else
        return cli_usage_error(command, "--format: %s is not one of csv, jsonl", CLI_Q(arg));
    return EXIT_OK;
}
