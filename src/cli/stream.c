/*
 * Streamed output for outputs too big to hold in memory (sweep, merge): standard output, or a
 * temporary file beside the target renamed over it at the end (after fsync), so readers see
 * the old file or the complete new one. SIGINT and SIGTERM only raise a flag: the command
 * stops at its next write and removes the temporary file.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t interrupted;

static void
on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

bool
cli_interrupted(void)
{
    return interrupted != 0;
}

static void
catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int
cli_stream_open(struct cli_stream *s, const char *path)
{
    memset(s, 0, sizeof(*s));
    s->fd = STDOUT_FILENO;
    s->path = path;
    catch_signals();
    if (!path)
        return EXIT_OK;
    if (cli_output_check(path) != EXIT_OK)
        return EXIT_USAGE;
    struct spsim_error err = {0};
    if (spsim_output_file_open(path, &s->file, &err) != SPSIM_OK)
        return cli_error(EXIT_RUNTIME, "%s", err.message);
    s->fd = spsim_output_file_fd(s->file);
    return EXIT_OK;
}

int
cli_stream_write(struct cli_stream *s, const char *data, size_t len)
{
    if (interrupted || s->error)
        return -1;
    while (len > 0) {
        ssize_t n = write(s->fd, data, len);
        if (n < 0 && errno == EINTR && !interrupted)
            continue;
        if (n <= 0) {
            s->error = n < 0 ? errno : EIO;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

void
cli_stream_abort(struct cli_stream *s)
{
    spsim_output_file_abort(s->file);
    s->file = NULL;
}

int
cli_stream_commit(struct cli_stream *s)
{
    const char *name = s->path ? s->path : "standard output";
    if (interrupted) {
        cli_stream_abort(s);
        return cli_error(EXIT_RUNTIME, "interrupted%s", s->path ? "; nothing written" : "");
    }
    if (s->error) {
        cli_stream_abort(s);
        return cli_error(EXIT_RUNTIME, "cannot write to %s: %s", name, strerror(s->error));
    }
    struct spsim_error err = {0};
    if (s->file && spsim_output_file_commit(s->file, &err) != SPSIM_OK) {
        s->file = NULL;
        return cli_error(EXIT_RUNTIME, "%s", err.message);
    }
    s->file = NULL;
    return EXIT_OK;
}
