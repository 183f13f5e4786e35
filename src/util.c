#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int
spsim_fail(struct spsim_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void *
spsim_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

char *
spsim_strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = spsim_calloc(len, 1);
    if (copy)
        memcpy(copy, s, len);
    return copy;
}

/* Profiles are small; anything above this is not a profile and is refused. */
#define SPSIM_MAX_FILE_BYTES (64u * 1024u * 1024u)

static const char *
file_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a plain file";
}

int
spsim_file_open_input(const char *path, int *fd_out, struct spsim_error *err)
{
    if (!path || !fd_out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_file_open_input: NULL argument");
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer, forever if none comes;
     * O_NOCTTY: a terminal named as input must not become the controlling one. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int e = errno;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) /* a socket: ENXIO */
            return spsim_fail(err, SPSIM_EIO, "%s: not a regular file (%s)", path,
                              file_kind(st.st_mode));
        return spsim_fail(err, SPSIM_EIO, "%s: cannot open: %s", path, strerror(e));
    }
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || flags < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int rc = S_ISREG(st.st_mode)
                     ? spsim_fail(err, SPSIM_EIO, "%s: cannot open: %s", path, strerror(errno))
                     : spsim_fail(err, SPSIM_EIO, "%s: not a regular file (%s)", path,
                                  file_kind(st.st_mode));
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return SPSIM_OK;
}

/* Read fd to its end: files under /proc and /sys report a size of 0, so st_size is only the
 * first guess of the buffer's size. */
static int
read_to_end(int fd, const char *path, size_t guess, char **buf, size_t *len,
            struct spsim_error *err)
{
    size_t cap = guess + 1 > 4096 ? guess + 1 : 4096, n = 0;
    char *data = malloc(cap);
    for (;;) {
        if (data && n + 1 == cap) {
            char *grown = realloc(data, cap * 2);
            if (!grown)
                free(data);
            data = grown;
            cap *= 2;
        }
        if (!data)
            return spsim_fail(err, SPSIM_ENOMEM, "%s: out of memory", path);
        ssize_t got = read(fd, data + n, cap - 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 || n + (size_t)(got > 0 ? got : 0) > SPSIM_MAX_FILE_BYTES) {
            int e = errno;
            free(data);
            return got < 0 ? spsim_fail(err, SPSIM_EIO, "%s: read error: %s", path, strerror(e))
                           : spsim_fail(err, SPSIM_EIO, "%s: file is larger than %u bytes", path,
                                        SPSIM_MAX_FILE_BYTES);
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    data[n] = '\0';
    *buf = data;
    *len = n;
    return SPSIM_OK;
}

int
spsim_read_file(const char *path, char **buf, size_t *len, struct spsim_error *err)
{
    int fd = -1;
    int rc = spsim_file_open_input(path, &fd, err);
    if (rc != SPSIM_OK)
        return rc;
    struct stat st;
    if (fstat(fd, &st) != 0)
        rc = spsim_fail(err, SPSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
    else if ((uint64_t)st.st_size > SPSIM_MAX_FILE_BYTES)
        rc = spsim_fail(err, SPSIM_EIO, "%s: file is larger than %u bytes", path,
                        SPSIM_MAX_FILE_BYTES);
    else
        rc = read_to_end(fd, path, (size_t)st.st_size, buf, len, err);
    close(fd);
    return rc;
}

int
spsim_file_write_atomic(const char *path, const void *data, size_t len, struct spsim_error *err)
{
    if (!path || (!data && len))
        return spsim_fail(err, SPSIM_EINVAL, "spsim_file_write_atomic: NULL argument");
    return spsim_write_file_atomic(path, data, len, err);
}

const char *
spsim_strerror(int code)
{
    switch (code) {
    case SPSIM_OK:
        return "success";
    case SPSIM_EINVAL:
        return "invalid argument";
    case SPSIM_ENOMEM:
        return "out of memory";
    case SPSIM_EIO:
        return "input/output error";
    case SPSIM_EPARSE:
        return "malformed JSON";
    case SPSIM_EFIELD:
        return "invalid field";
    case SPSIM_ECONFIG:
        return "invalid parallel configuration";
    case SPSIM_ERANGE:
        return "result not representable in 64 bits";
    case SPSIM_ENOTSUP:
        return "not supported by this build";
    case SPSIM_EGPU:
        return "GPU runtime error";
    case SPSIM_ENUMERIC:
        return "numerical error";
    default:
        return "unknown error";
    }
}

const char *
spsim_version(void)
{
    return SPSIM_VERSION_STRING;
}
