/*
 * Streamed output for outputs too big to hold in memory (sweep, merge): standard output, or a
 * temporary file beside the target renamed over it at the end (after fsync), so readers see
 * the old file or the complete new one. A terminating signal only raises a flag: the command
 * stops at its next write and removes the temporary file.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static volatile sig_atomic_t interrupted; /* the signal that came, 0 if none */

static void
on_signal(int sig)
{
    interrupted = sig;
}

bool
cli_interrupted(void)
{
    return interrupted != 0;
}

/*
 * Every signal whose default action ends the process (signal(7)) and that can be caught, but
 * for those a fault raises (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS: returning
 * from their handler would fault again) and SIGXFSZ (ignored by main: the write fails instead).
 * Each only raises the flag, so that a kill -HUP, an alarm or a batch system's SIGUSR1 in the
 * middle of `sweep -o` leaves the old file and no temporary one. SIGPIPE is caught only when
 * writing a file: on standard output it keeps its usual meaning (`spsim sweep | head` ends
 * quietly). SIGKILL and SIGSTOP cannot be caught.
 */
static void
catch_signals(bool to_file)
{
    static const int terminating[] = {SIGHUP,    SIGINT,  SIGQUIT, SIGALRM,   SIGTERM, SIGUSR1,
                                      SIGUSR2,   SIGPOLL, SIGPROF, SIGVTALRM, SIGXCPU,
#ifdef SIGSTKFLT
                                      SIGSTKFLT,
#endif
#ifdef SIGPWR
                                      SIGPWR,
#endif
                                      SIGPIPE};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask);
    size_t n = CLI_ARRAY_LENGTH(terminating) - (to_file ? 0 : 1);
    for (size_t i = 0; i < n; i++)
        sigaction(terminating[i], &sa, NULL);
    /* The real-time signals end the process by default too. */
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        sigaction(sig, &sa, NULL);
}

/* The interruption's message: "interrupted by SIGHUP". */
static const char *
signal_name(int sig, char *buf, size_t cap)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGHUP, "SIGHUP"},       {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"},
        {SIGALRM, "SIGALRM"},     {SIGTERM, "SIGTERM"}, {SIGUSR1, "SIGUSR1"},
        {SIGUSR2, "SIGUSR2"},     {SIGPOLL, "SIGPOLL"}, {SIGPROF, "SIGPROF"},
        {SIGVTALRM, "SIGVTALRM"}, {SIGXCPU, "SIGXCPU"}, {SIGPIPE, "SIGPIPE"},
#ifdef SIGSTKFLT
        {SIGSTKFLT, "SIGSTKFLT"},
#endif
#ifdef SIGPWR
        {SIGPWR, "SIGPWR"},
#endif
    };
    for (size_t i = 0; i < CLI_ARRAY_LENGTH(names); i++)
        if (names[i].sig == sig)
            return names[i].name;
    if (sig == SIGRTMIN)
        snprintf(buf, cap, "SIGRTMIN");
    else if (sig > SIGRTMIN && sig <= SIGRTMAX)
        snprintf(buf, cap, "SIGRTMIN+%d", sig - SIGRTMIN);
    else
        snprintf(buf, cap, "signal %d", sig);
    return buf;
}

int
cli_stream_open(struct cli_stream *s, const char *path)
{
    memset(s, 0, sizeof(*s));
    s->fd = STDOUT_FILENO;
    s->path = path;
    catch_signals(path != NULL);
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
        char buf[32];
        cli_stream_abort(s);
        return cli_error(EXIT_RUNTIME, "interrupted by %s%s",
                         signal_name(interrupted, buf, sizeof(buf)),
                         s->path ? "; nothing written" : "");
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
