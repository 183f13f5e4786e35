/*
 * Streamed output for outputs too big to hold in memory (sweep, merge): standard output, or a
 * temporary file beside the target renamed over it at the end (after fsync), so readers see
 * the old file or the complete new one. SIGINT and SIGTERM only raise a flag: the command
 * stops at its next write and removes the temporary file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    /* A device or a pipe (-o /dev/null, a FIFO) is written in place: renaming a file over it
     * would replace it. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        s->fd = open(path, O_WRONLY);
        s->special = true;
        return s->fd >= 0 ? EXIT_OK
                          : cli_error(EXIT_RUNTIME, "%s: cannot open: %s", path, strerror(errno));
    }
    size_t len = strlen(path) + 16;
    s->tmp = malloc(len);
    if (!s->tmp)
        return cli_error(EXIT_RUNTIME, "%s: out of memory", path);
    memcpy(s->tmp, path, strlen(path));
    memcpy(s->tmp + strlen(path), ".tmp.XXXXXX", 12);
    s->fd = mkstemp(s->tmp);
    if (s->fd < 0) {
        int e = errno;
        free(s->tmp);
        s->tmp = NULL;
        return cli_error(EXIT_RUNTIME, "%s: cannot create a temporary file beside it: %s", path,
                         strerror(e));
    }
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
    if (s->special)
        close(s->fd);
    if (s->tmp) {
        close(s->fd);
        unlink(s->tmp);
        free(s->tmp);
        s->tmp = NULL;
    }
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
    if (s->special && close(s->fd) != 0)
        return cli_error(EXIT_RUNTIME, "%s: write error: %s", name, strerror(errno));
    if (!s->tmp)
        return EXIT_OK;
    int rc = EXIT_OK;
    /* mkstemp creates 0600; outputs are ordinary files. */
    if (fsync(s->fd) != 0 || fchmod(s->fd, 0644) != 0)
        rc = cli_error(EXIT_RUNTIME, "%s: write error: %s", name, strerror(errno));
    if (close(s->fd) != 0 && rc == EXIT_OK)
        rc = cli_error(EXIT_RUNTIME, "%s: write error: %s", name, strerror(errno));
    if (rc == EXIT_OK && rename(s->tmp, s->path) != 0)
        rc = cli_error(EXIT_RUNTIME, "%s: cannot rename the temporary file: %s", name,
                       strerror(errno));
    if (rc != EXIT_OK)
        unlink(s->tmp);
    free(s->tmp);
    s->tmp = NULL;
    return rc;
}
