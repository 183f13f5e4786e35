/*
 * The command's shared helpers: error messages, exit codes, strict number parsing, profile
 * loading, output.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* "spsim: PREFIX: MSG" on standard error, one line whatever MSG holds (spsim_escape: an
 * option's value with a newline or an ANSI escape in it is shown escaped). */
/* "FILE: line N" put before every message while a runs file's row is read (NULL: none). */
static const char *error_context;

void
cli_error_context(const char *context)
{
    error_context = context;
}

static void
report(const char *prefix, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *raw = n >= 0 ? malloc((size_t)n + 1) : NULL;
    char *shown = raw ? malloc(4 * (size_t)n + 8) : NULL;
    if (shown) {
        vsnprintf(raw, (size_t)n + 1, fmt, again);
        fprintf(stderr, "spsim: %s: %s%s%s\n", prefix, error_context ? error_context : "",
                error_context ? ": " : "", spsim_escape(raw, (size_t)n, shown, 4 * (size_t)n + 8));
    } else {
        fprintf(stderr, "spsim: %s: (out of memory formatting the message)\n", prefix);
    }
    va_end(again);
    free(raw);
    free(shown);
}

int
cli_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("error", fmt, ap);
    va_end(ap);
    return code;
}

void
cli_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("warning", fmt, ap);
    va_end(ap);
}

int
cli_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("error", fmt, ap);
    va_end(ap);
    /* Inside a file's row the message is the one line; the hint is for command lines. */
    if (!error_context)
        fprintf(stderr, "Try 'spsim %s --help'.\n", command);
    return EXIT_USAGE;
}

/* "; did you mean '--tp'?": the command's options nearest an unknown one ("" if none is). */
static const char *
option_hint(const char *given, const struct option *longopts, char *buf, size_t cap)
{
    const char *names[128];
    size_t n = 0;
    char word[64];
    buf[0] = '\0';
    if (strncmp(given, "--", 2) != 0 || !longopts)
        return buf;
    snprintf(word, sizeof(word), "%.*s", (int)strcspn(given + 2, "="), given + 2);
    for (; longopts[n].name && n < CLI_ARRAY_LENGTH(names); n++)
        names[n] = longopts[n].name;
    return spsim_did_you_mean(word, names, n, "--", buf, cap);
}

int
cli_getopt_error(const char *command, int opt, char **argv, const struct option *longopts)
{
    char hint[256];
    /* A short option inside a cluster ("-ab"): getopt names it in optopt, and argv[optind - 1]
     * may be the word before the cluster (it said "unknown option 'query'" for "-a\nb"). */
    if (optopt > 0 && optopt < 256 && strncmp(argv[optind - 1], "--", 2) != 0) {
        char flag[3] = {'-', (char)optopt, '\0'};
        return cli_usage_error(
            command, opt == ':' ? "option %s needs a value" : "unknown option %s", CLI_Q(flag));
    }
    if (opt == ':')
        return cli_usage_error(command, "option %s needs a value", CLI_Q(argv[optind - 1]));
    return cli_usage_error(command, "unknown option %s%s", CLI_Q(argv[optind - 1]),
                           option_hint(argv[optind - 1], longopts, hint, sizeof(hint)));
}

int
cli_no_operands(const char *command, int argc, char **argv)
{
    if (optind < argc)
        return cli_usage_error(command, "unexpected argument %s", CLI_Q(argv[optind]));
    return EXIT_OK;
}

int
cli_exit_for(int status)
{
    switch (status) {
    case SPSIM_OK:
        return EXIT_OK;
    case SPSIM_EIO:
    case SPSIM_EPARSE:
    case SPSIM_EFIELD:
        return EXIT_INPUT;
    case SPSIM_ECONFIG:
    case SPSIM_ERANGE:
        return EXIT_CONFIG;
    case SPSIM_ENOTSUP:
        return EXIT_NO_GPU;
    case SPSIM_EGPU:
        return EXIT_GPU;
    default:
        return EXIT_RUNTIME;
    }
}

int
cli_fail(const struct spsim_error *err)
{
    return cli_error(cli_exit_for(err->code), "%s",
                     err->message[0] ? err->message : spsim_strerror(err->code));
}

int
cli_parse_u64(const char *option, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *p = text;
    while (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return cli_error(EXIT_USAGE, "%s: %s is not an integer in [%llu, %llu]", option,
                         CLI_Q(text), (unsigned long long)min, (unsigned long long)max);
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno == ERANGE || *end != '\0' || v < min || v > max)
        return cli_error(EXIT_USAGE, "%s: %s is not an integer in [%llu, %llu]", option,
                         CLI_Q(text), (unsigned long long)min, (unsigned long long)max);
    *out = v;
    return EXIT_OK;
}

int
cli_parse_u32(const char *option, const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    int rc = cli_parse_u64(option, text, min, max, &v);
    if (rc == EXIT_OK)
        *out = (uint32_t)v;
    return rc;
}

int
cli_parse_double(const char *option, const char *text, double min, double max, double *out)
{
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || !(v >= min && v <= max))
        return cli_error(EXIT_USAGE, "%s: %s is not a number in [%g, %g]", option, CLI_Q(text), min,
                         max);
    *out = v;
    return EXIT_OK;
}

int
cli_parse_size(const char *text, uint64_t *out)
{
    errno = 0;
    char *end = NULL;
    if (*text < '0' || *text > '9')
        return -1;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return -1;
    uint64_t mult = 1;
    switch (*end) {
    case 'K':
    case 'k':
        mult = 1ull << 10;
        end++;
        break;
    case 'M':
    case 'm':
        mult = 1ull << 20;
        end++;
        break;
    case 'G':
    case 'g':
        mult = 1ull << 30;
        end++;
        break;
    case 'T':
    case 't':
        mult = 1ull << 40;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || v == 0 || v > (1ull << 50) / mult)
        return -1;
    *out = v * mult;
    return 0;
}

const char *
cli_profile_stem(const char *path, size_t *len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    *len = strlen(base);
    if (*len > 5 && strcmp(base + *len - 5, ".json") == 0)
        *len -= 5;
    return base;
}

int
cli_load_model(const char *arg, struct spsim_model **out)
{
    char path[4096];
    struct spsim_error err = {0};
    int rc = spsim_profile_resolve(SPSIM_PROFILE_MODEL, arg, path, sizeof(path), &err);
    if (rc == SPSIM_OK)
        rc = spsim_model_load(path, out, &err);
    return rc == SPSIM_OK ? EXIT_OK : cli_fail(&err);
}

int
cli_load_hardware(const char *arg, struct spsim_hardware **out)
{
    char path[4096];
    struct spsim_error err = {0};
    int rc = spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, arg, path, sizeof(path), &err);
    if (rc == SPSIM_OK)
        rc = spsim_hardware_load(path, out, &err);
    return rc == SPSIM_OK ? EXIT_OK : cli_fail(&err);
}

int
cli_output_check(const char *path)
{
    return path && !*path ? cli_error(EXIT_USAGE, "-o: the output path is empty") : EXIT_OK;
}

int
cli_output_open(struct cli_output *out, const char *path)
{
    memset(out, 0, sizeof(*out));
    out->path = path;
    if (cli_output_check(path) != EXIT_OK)
        return EXIT_USAGE;
    if (!path) {
        out->stream = stdout;
        return EXIT_OK;
    }
    out->stream = open_memstream(&out->buffer, &out->size);
    if (!out->stream)
        return cli_error(EXIT_RUNTIME, "%s: cannot buffer output: %s", path, strerror(errno));
    return EXIT_OK;
}

int
cli_output_close(struct cli_output *out)
{
    if (!out->path) {
        if (fflush(stdout) != 0 || ferror(stdout))
            return cli_error(EXIT_RUNTIME, "cannot write to standard output: %s", strerror(errno));
        return EXIT_OK;
    }
    if (fclose(out->stream) != 0) {
        free(out->buffer);
        return cli_error(EXIT_RUNTIME, "%s: cannot buffer output", out->path);
    }
    struct spsim_error err = {0};
    /* The whole output is in memory: a signal that would end the process waits until it is
     * written and renamed (or failed), so that no temporary file is left behind. */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    int rc = spsim_file_write_atomic(out->path, out->buffer, out->size, &err);
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(out->buffer);
    out->buffer = NULL;
    return rc == SPSIM_OK ? EXIT_OK : cli_error(EXIT_RUNTIME, "%s", err.message);
}

void
cli_output_abort(struct cli_output *out)
{
    if (out->path && out->stream)
        fclose(out->stream);
    free(out->buffer);
    out->buffer = NULL;
    out->stream = NULL;
}

const char *
fmt_bytes(char *buf, size_t cap, double bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    double v = bytes;
    while (fabs(v) >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%.0f B", v);
    else
        snprintf(buf, cap, "%.2f %s", v, units[u]);
    return buf;
}

const char *
fmt_time(char *buf, size_t cap, double s)
{
    if (s == 0)
        snprintf(buf, cap, "0");
    else if (fabs(s) < 1e-3)
        snprintf(buf, cap, "%.1f us", s * 1e6);
    else if (fabs(s) < 1)
        snprintf(buf, cap, "%.3f ms", s * 1e3);
    else
        snprintf(buf, cap, "%.3f s", s);
    return buf;
}

void
fput_padded(FILE *f, const char *text, int width)
{
    int cols = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        bool continuation = (*p & 0xC0) == 0x80;
        /* U+0300..U+036F (combining diacritics) are encoded 0xCC 0x80..0xCD 0xAF. */
        bool combining = (*p == 0xCC || (*p == 0xCD && p[1] <= 0xAF)) && (p[1] & 0xC0) == 0x80;
        if (!continuation && !combining)
            cols++;
    }
    fputs(text, f);
    for (; cols < width; cols++)
        fputc(' ', f);
}
