/* Shared helpers of every part: errors, checked arithmetic, files (read, atomic writes), sets. */
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
        char raw[SPSIM_ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof(raw), fmt, ap);
        va_end(ap);
        spsim_escape(raw, SIZE_MAX, err->message, sizeof(err->message));
        err->code = code;
    }
    return code;
}

/* ---- text echoed in messages ----------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at s[0..n) (RFC 3629: no overlong form, surrogate or
 * code point above U+10FFFF), 0 if none; *cp receives its code point. */
static size_t
utf8_sequence(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t k = c < 0x80                 ? 1
               : c >= 0xC2 && c <= 0xDF ? 2
               : (c & 0xF0) == 0xE0     ? 3
               : c >= 0xF0 && c <= 0xF4 ? 4
                                        : 0;
    if (k == 0 || n < k)
        return 0;
    static const uint32_t lowest[5] = {0, 0, 0x80, 0x800, 0x10000};
    uint32_t v = k == 1 ? c : (uint32_t)(c & (0x7F >> k));
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    if (v < lowest[k] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return k;
}

/* Code points that move the cursor, end a line or reorder what follows on a terminal. */
static bool
unsafe_code_point(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The shown form of the character at s[0..n) into out (at most 16 bytes, not terminated);
 * *used receives the bytes of input it stands for. @return its length */
static size_t
escape_one(const unsigned char *s, size_t n, bool quote, char *out, size_t *used)
{
    uint32_t cp = 0;
    size_t k = utf8_sequence(s, n, &cp);
    if (k == 0) { /* one byte that is not UTF-8 */
        *used = 1;
        return (size_t)snprintf(out, 16, "\\x%02X", s[0]);
    }
    *used = k;
    if (cp == '\n' || cp == '\t' || cp == '\r' || (quote && (cp == '\'' || cp == '\\'))) {
        out[0] = '\\';
        out[1] = cp == '\n' ? 'n' : cp == '\t' ? 't' : cp == '\r' ? 'r' : (char)cp;
        return 2;
    }
    if (!unsafe_code_point(cp)) {
        memcpy(out, s, k);
        return k;
    }
    size_t len = 0;
    for (size_t i = 0; i < k; i++)
        len += (size_t)snprintf(out + len, 16 - len, "\\x%02X", s[i]);
    return len;
}

/* spsim_quote and spsim_escape: the whole text if it fits, else as much as fits before "...". */
static const char *
escape_text(const char *text, size_t len, bool quote, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return "";
    if (!text) {
        text = "(null)";
        len = SIZE_MAX;
    }
    if (len == SIZE_MAX)
        len = strlen(text);
    const unsigned char *s = (const unsigned char *)text;
    size_t need = 0, used = 0, out = 0, close = quote ? 1 : 0;
    char piece[16];
    for (size_t i = 0; i < len; i += used)
        need += escape_one(s + i, len - i, quote, piece, &used);
    /* Room for the quotes and the NUL, and for "..." when the text is cut. */
    size_t room = need + 2 * close + 1 <= cap ? cap - 1 - close
                  : cap > 5 + 2 * close       ? cap - 4 - close
                                              : 0;
    if (quote && room > 0)
        buf[out++] = '\'';
    for (size_t i = 0; i < len; i += used) {
        size_t n = escape_one(s + i, len - i, quote, piece, &used);
        if (out + n > room)
            break;
        memcpy(buf + out, piece, n);
        out += n;
    }
    if (need + 2 * close + 1 > cap && room > 0) {
        memcpy(buf + out, "...", 3);
        out += 3;
    }
    if (quote && room > 0)
        buf[out++] = '\'';
    buf[out] = '\0';
    return buf;
}

const char *
spsim_quote(const char *text, size_t len, char *buf, size_t cap)
{
    return escape_text(text, len, true, buf, cap);
}

const char *
spsim_escape(const char *text, size_t len, char *buf, size_t cap)
{
    return escape_text(text, len, false, buf, cap);
}

void
spsim_clear(void *p, size_t n)
{
    memset(p, 0, n);
}

void
spsim_copy(void *restrict d, const void *restrict s, size_t n)
{
    memcpy(d, s, n);
}

void *
spsim_calloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    return calloc(n ? n : 1, size ? size : 1);
}

int
spsim_text_reserve(struct spsim_text *t, size_t more)
{
    if (t->cap - t->len > more)
        return SPSIM_OK;
    if (more >= SIZE_MAX - t->len)
        return SPSIM_ENOMEM;
    size_t cap = t->cap ? t->cap : 64;
    while (cap - t->len <= more) {
        if (cap > SIZE_MAX / 2)
            return SPSIM_ENOMEM;
        cap *= 2;
    }
    char *grown = realloc(t->s, cap);
    if (!grown)
        return SPSIM_ENOMEM;
    t->s = grown;
    t->cap = cap;
    return SPSIM_OK;
}

void
spsim_text_put(struct spsim_text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if ((t->max && (n >= t->max || t->len + n + 1 > t->max)) ||
        spsim_text_reserve(t, n) != SPSIM_OK) {
        t->failed = true;
        return;
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

void
spsim_text_free(struct spsim_text *t)
{
    free(t->s);
    memset(t, 0, sizeof(*t));
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
    size_t cap = guess + 2 > 4096 ? guess + 2 : 4096, n = 0;
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
spsim_file_read(const char *path, char **buf, size_t *len, struct spsim_error *err)
{
    if (!path || !buf || !len)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_file_read: NULL argument");
    return spsim_read_file(path, buf, len, err);
}

int
spsim_file_read_fd(int fd, const char *name, char **buf, size_t *len, struct spsim_error *err)
{
    if (fd < 0 || !name || !buf || !len)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_file_read_fd: invalid argument");
    return read_to_end(fd, name, 0, buf, len, err);
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

/* ---- output files ---------------------------------------------------------------------- */

/*
 * Output files written atomically: a temporary file beside the target, fsync, rename(2), so a
 * reader sees the old file or the whole new one. A symbolic link is written through (the
 * temporary file goes beside the link's target, which the rename replaces), an existing file
 * keeps its permission bits, and a device or a pipe (/dev/null, a FIFO) is written in place:
 * renaming over it would replace it with a regular file.
 */
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

/* ---- string sets ----------------------------------------------------------------------- */

/*
 * A set of strings with a value each: open addressing, linear probing, load factor at most 1/2,
 * FNV-1a hash (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/). Lookups the
 * parsers make once per input line or key, so that a file of n lines costs O(n), not O(n^2).
 */

static uint64_t
fnv1a(const char *s, size_t len)
{
    uint64_t h = SPSIM_FNV_BASIS;
    for (size_t i = 0; i < len; i++)
        h = spsim_fnv_step(h, s[i]);
    return h;
}

static struct spsim_strset_entry *
probe(const struct spsim_strset *s, const char *key, size_t len, uint64_t h)
{
    size_t mask = s->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        struct spsim_strset_entry *e = &s->slot[i];
        if (!e->key || (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0))
            return e;
    }
}

size_t
spsim_strset_find_hashed(const struct spsim_strset *s, const char *key, size_t len, uint64_t hash)
{
    if (s->n == 0)
        return SPSIM_STRSET_NONE;
    const struct spsim_strset_entry *e = probe(s, key, len, hash);
    return e->key ? e->value : SPSIM_STRSET_NONE;
}

size_t
spsim_strset_find(const struct spsim_strset *s, const char *key, size_t len)
{
    return spsim_strset_find_hashed(s, key, len, fnv1a(key, len));
}

static int
grow(struct spsim_strset *s)
{
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct spsim_strset_entry *slot = spsim_calloc(cap, sizeof(*slot));
    if (!slot || cap < s->cap) {
        free(slot);
        return SPSIM_ENOMEM;
    }
    struct spsim_strset old = *s;
    s->slot = slot;
    s->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
        if (old.slot[i].key)
            *probe(s, old.slot[i].key, old.slot[i].len, old.slot[i].hash) = old.slot[i];
    free(old.slot);
    return SPSIM_OK;
}

int
spsim_strset_put(struct spsim_strset *s, const char *key, size_t len, size_t value)
{
    return spsim_strset_put_hashed(s, key, len, fnv1a(key, len), value);
}

int
spsim_strset_put_hashed(struct spsim_strset *s, const char *key, size_t len, uint64_t h,
                        size_t value)
{
    if (2 * (s->n + 1) > s->cap && grow(s) != SPSIM_OK)
        return SPSIM_ENOMEM;
    struct spsim_strset_entry *e = probe(s, key, len, h);
    if (!e->key)
        s->n++;
    *e = (struct spsim_strset_entry){key, len, h, value};
    return SPSIM_OK;
}

void
spsim_strset_free(struct spsim_strset *s)
{
    free(s->slot);
    memset(s, 0, sizeof(*s));
}
