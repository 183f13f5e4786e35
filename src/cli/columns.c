/* The short set of sweep columns for a person at a terminal (`spsim sweep` without -o). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The figures a person reads first; each name carries its unit (or is a ratio or a flag). */
static const char *const figures[] = {"memory_total_bytes", "memory_fits", "time_iteration_s",
                                      "time_tokens_per_s_per_gpu", "time_mfu"};

/* Whether `name` is a column of the full header ("model,hw,tp,...\n"). */
static bool
is_column(const char *header, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = header; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\n' || p[len] == '\0'))
            return true;
    return false;
}

static void
append(char *out, size_t cap, const char *name)
{
    size_t n = strlen(out);
    snprintf(out + n, cap - n, "%s%s", n ? "," : "", name);
}

char *
cli_short_columns(const struct spsim_sweep *sw)
{
    char *header = malloc(SPSIM_ROW_MAX), *out = calloc(SPSIM_ROW_MAX, 1);
    if (!header || !out || !spsim_row_header(SPSIM_ROW_CSV, header, SPSIM_ROW_MAX)) {
        free(header);
        free(out);
        return NULL;
    }
    /* model, hw, tp, pp, dp always; then every other axis the sweep varies, by the library's
     * axis table, so that a new axis shows up here without a change. */
    append(out, SPSIM_ROW_MAX, "model,hw,tp,pp,dp");
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++) {
        const char *name = spsim_sweep_axis_name(a);
        if (spsim_sweep_axis_size(sw, a) > 1 && !is_column(out, name) && is_column(header, name))
            append(out, SPSIM_ROW_MAX, name);
    }
    for (size_t i = 0; i < CLI_ARRAY_LENGTH(figures); i++)
        if (is_column(header, figures[i]))
            append(out, SPSIM_ROW_MAX, figures[i]);
    free(header);
    return out;
}
