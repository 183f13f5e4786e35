/* Shared helpers of every part: errors, checked arithmetic, file reading, atomic writes. */
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

/* Profiles are small; anything above this is not a profile and is refused before reading. */
#define SPSIM_MAX_FILE_BYTES (64u * 1024u * 1024u)

int
spsim_read_file(const char *path, char **buf, size_t *len, struct spsim_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return spsim_fail(err, SPSIM_EIO, "%s: cannot open: %s", path, strerror(errno));

    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return spsim_fail(err, SPSIM_EIO, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > SPSIM_MAX_FILE_BYTES) {
        fclose(f);
        return spsim_fail(err, SPSIM_EIO, "%s: file is larger than %u bytes", path,
                          SPSIM_MAX_FILE_BYTES);
    }

    size_t size = (size_t)st.st_size;
    char *data = spsim_calloc(size + 1, 1);
    if (!data) {
        fclose(f);
        return spsim_fail(err, SPSIM_ENOMEM, "%s: out of memory", path);
    }
    size_t got = fread(data, 1, size, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || got != size) {
        free(data);
        return spsim_fail(err, SPSIM_EIO, "%s: read error", path);
    }
    data[size] = '\0';
    *buf = data;
    *len = size;
    return SPSIM_OK;
}

static int
write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A device or a pipe (/dev/null, a FIFO) is written in place: renaming over it would
 * replace it with a regular file. */
static int
write_special(const char *path, const void *data, size_t len, struct spsim_error *err)
{
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return spsim_fail(err, SPSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
    int rc = write_all(fd, data, len) == 0
                 ? SPSIM_OK
                 : spsim_fail(err, SPSIM_EIO, "%s: write error: %s", path, strerror(errno));
    if (close(fd) != 0 && rc == SPSIM_OK)
        rc = spsim_fail(err, SPSIM_EIO, "%s: write error: %s", path, strerror(errno));
    return rc;
}

int
spsim_write_file_atomic(const char *path, const void *data, size_t len, struct spsim_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return write_special(path, data, len, err);
    size_t plen = strlen(path);
    char *tmp = spsim_calloc(plen + 16, 1);
    if (!tmp)
        return spsim_fail(err, SPSIM_ENOMEM, "%s: out of memory", path);
    snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);

    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return spsim_fail(err, SPSIM_EIO, "%s: cannot create a temporary file: %s", path,
                          strerror(e));
    }
    int rc = SPSIM_OK;
    if (write_all(fd, data, len) != 0 || fsync(fd) != 0)
        rc = spsim_fail(err, SPSIM_EIO, "%s: write error: %s", path, strerror(errno));
    /* mkstemp creates 0600; profiles and reports are ordinary files. */
    if (rc == SPSIM_OK && fchmod(fd, 0644) != 0)
        rc = spsim_fail(err, SPSIM_EIO, "%s: cannot set permissions: %s", path, strerror(errno));
    if (close(fd) != 0 && rc == SPSIM_OK)
        rc = spsim_fail(err, SPSIM_EIO, "%s: write error: %s", path, strerror(errno));
    if (rc == SPSIM_OK && rename(tmp, path) != 0)
        rc = spsim_fail(err, SPSIM_EIO, "%s: cannot rename the temporary file: %s", path,
                        strerror(errno));
    if (rc != SPSIM_OK)
        unlink(tmp);
    free(tmp);
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

bool
spsim_mpi_launched(uint32_t *world_size)
{
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"};
    uint32_t n = 0;
    bool launched = getenv("PMIX_RANK") != NULL;
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(sizes); i++) {
        const char *v = getenv(sizes[i]);
        if (!v)
            continue;
        launched = true;
        char *end = NULL;
        unsigned long long k = strtoull(v, &end, 10);
        if (n == 0 && end != v && *end == '\0' && k <= UINT32_MAX)
            n = (uint32_t)k;
    }
    if (world_size)
        *world_size = n;
    return launched;
}

/* Levenshtein distance, two rows; words are cut at 255 bytes (names and options are short). */
static size_t
edit_distance(const char *a, const char *b)
{
    size_t la = strnlen(a, 255), lb = strnlen(b, 255);
    size_t row[256], prev[256];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, row, (lb + 1) * sizeof(row[0]));
    }
    return prev[lb];
}

const char *
spsim_did_you_mean(const char *word, const char *const *candidates, size_t n, const char *prefix,
                   char *buf, size_t cap)
{
    size_t near[3], found = 0, used = 0;
    if (!buf || !cap)
        return "";
    buf[0] = '\0';
    if (!word || !candidates)
        return buf;
    size_t limit = strlen(word) / 3 > 2 ? strlen(word) / 3 : 2;
    /* Nearest first: every distance from 0 up to the limit, candidates in order within one. */
    for (size_t d = 0; d <= limit && found < 3; d++)
        for (size_t i = 0; i < n && found < 3; i++)
            if (candidates[i] && edit_distance(word, candidates[i]) == d)
                near[found++] = i;
    for (size_t i = 0; i < found && used < cap; i++) {
        const char *sep = i == 0 ? "; did you mean " : i + 1 == found ? " or " : ", ";
        used += (size_t)snprintf(buf + used, cap - used, "%s'%s%s'%s", sep, prefix ? prefix : "",
                                 candidates[near[i]], i + 1 == found ? "?" : "");
    }
    return buf;
}
