/*
 * Output files written atomically: a temporary file beside the target, fsync, rename(2), so a
 * reader sees the old file or the whole new one. A symbolic link is written through (the
 * temporary file goes beside the link's target, which the rename replaces), an existing file
 * keeps its permission bits, and a device or a pipe (/dev/null, a FIFO) is written in place:
 * renaming over it would replace it with a regular file.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

struct spsim_output_file {
    int fd;
    char *path;   /* as given, for messages */
    char *target; /* path with its symbolic links followed: what the rename replaces */
    char *tmp;    /* the temporary file; NULL when written in place */
    mode_t mode;  /* the permission bits the file gets */
};

/* Linux gives up after 40 links in one lookup (path_resolution(7)); so do we. */
#define SPSIM_MAX_LINKS 40

/* The link's target, relative to the link's directory unless absolute. */
static char *
link_target(const char *link, off_t size)
{
    size_t cap = (size > 0 ? (size_t)size : 4095) + 1;
    char *text = spsim_calloc(cap, 1);
    ssize_t n = text ? readlink(link, text, cap) : -1;
    if (n <= 0 || (size_t)n >= cap) { /* failed, or the link changed since lstat */
        free(text);
        if (n >= 0)
            errno = ENAMETOOLONG;
        return NULL;
    }
    if (text[0] == '/')
        return text;
    const char *slash = strrchr(link, '/');
    size_t dir = slash ? (size_t)(slash - link) + 1 : 0;
    char *joined = spsim_calloc(dir + (size_t)n + 1, 1);
    if (joined) {
        memcpy(joined, link, dir);
        memcpy(joined + dir, text, (size_t)n);
    }
    free(text);
    return joined;
}

/* Follow `path` while it is a symbolic link (a dangling one names the file to create). */
static char *
resolve_links(const char *path, struct spsim_error *err)
{
    char *p = spsim_strdup(path);
    struct stat st;
    for (int hops = 0; p && lstat(p, &st) == 0 && S_ISLNK(st.st_mode); hops++) {
        char *next = hops < SPSIM_MAX_LINKS ? link_target(p, st.st_size) : NULL;
        if (!next)
            spsim_fail(err, SPSIM_EIO, "%s: cannot follow the symbolic link: %s", path,
                       hops < SPSIM_MAX_LINKS ? strerror(errno) : strerror(ELOOP));
        free(p);
        p = next;
        if (!p)
            return NULL;
    }
    if (!p)
        spsim_fail(err, SPSIM_ENOMEM, "%s: out of memory", path);
    return p;
}

/* Open the temporary file beside the target. */
static int
open_temporary(struct spsim_output_file *f, const struct stat *old, struct spsim_error *err)
{
    size_t len = strlen(f->target);
    if (!(f->tmp = spsim_calloc(len + 12, 1)))
        return spsim_fail(err, SPSIM_ENOMEM, "%s: out of memory", f->path);
    memcpy(f->tmp, f->target, len);
    memcpy(f->tmp + len, ".tmp.XXXXXX", 11);
    /* mkstemp creates 0600: a new file gets 0644 (an ordinary output), an existing one keeps
     * its permission bits (a 0444 file stays read-only). */
    f->mode = old ? old->st_mode & 0777 : 0644;
    if ((f->fd = mkstemp(f->tmp)) < 0) {
        int e = errno;
        free(f->tmp);
        f->tmp = NULL;
        return spsim_fail(err, SPSIM_EIO, "%s: cannot create a temporary file beside it: %s",
                          f->path, strerror(e));
    }
    return SPSIM_OK;
}

int
spsim_output_file_open(const char *path, struct spsim_output_file **out, struct spsim_error *err)
{
    if (!path || !out)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_output_file_open: NULL argument");
    *out = NULL;
    if (!*path)
        return spsim_fail(err, SPSIM_EINVAL, "the output path is empty");
    struct spsim_output_file *f = spsim_calloc(1, sizeof(*f));
    if (!f || !(f->path = spsim_strdup(path))) {
        free(f);
        return spsim_fail(err, SPSIM_ENOMEM, "%s: out of memory", path);
    }
    f->fd = -1;
    int rc = (f->target = resolve_links(path, err)) ? SPSIM_OK : SPSIM_EIO;
    struct stat st;
    bool exists = rc == SPSIM_OK && stat(f->target, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        f->fd = open(f->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (f->fd < 0)
            rc = spsim_fail(err, SPSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
    } else if (rc == SPSIM_OK) {
        rc = open_temporary(f, exists ? &st : NULL, err);
    }
    if (rc != SPSIM_OK) {
        spsim_output_file_abort(f);
        return rc;
    }
    *out = f;
    return SPSIM_OK;
}

int
spsim_output_file_fd(const struct spsim_output_file *f)
{
    return f ? f->fd : -1;
}

static void
output_file_free(struct spsim_output_file *f)
{
    free(f->path);
    free(f->target);
    free(f->tmp);
    free(f);
}

void
spsim_output_file_abort(struct spsim_output_file *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    if (f->tmp)
        unlink(f->tmp);
    output_file_free(f);
}

int
spsim_output_file_commit(struct spsim_output_file *f, struct spsim_error *err)
{
    if (!f)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_output_file_commit: NULL argument");
    int rc = SPSIM_OK;
    if (f->tmp && (fsync(f->fd) != 0 || fchmod(f->fd, f->mode) != 0))
        rc = spsim_fail(err, SPSIM_EIO, "%s: write error: %s", f->path, strerror(errno));
    if (close(f->fd) != 0 && rc == SPSIM_OK)
        rc = spsim_fail(err, SPSIM_EIO, "%s: write error: %s", f->path, strerror(errno));
    f->fd = -1;
    if (rc == SPSIM_OK && f->tmp && rename(f->tmp, f->target) != 0)
        rc = spsim_fail(err, SPSIM_EIO, "%s: cannot rename the temporary file: %s", f->path,
                        strerror(errno));
    if (rc == SPSIM_OK) {
        free(f->tmp);
        f->tmp = NULL;
    }
    spsim_output_file_abort(f);
    return rc;
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

int
spsim_write_file_atomic(const char *path, const void *data, size_t len, struct spsim_error *err)
{
    struct spsim_output_file *f = NULL;
    int rc = spsim_output_file_open(path, &f, err);
    if (rc != SPSIM_OK)
        return rc;
    if (write_all(f->fd, data, len) != 0) {
        rc = spsim_fail(err, SPSIM_EIO, "%s: write error: %s", path, strerror(errno));
        spsim_output_file_abort(f);
        return rc;
    }
    return spsim_output_file_commit(f, err);
}
