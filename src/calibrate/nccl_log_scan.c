/*
 * The first pass over an nccl-tests log: what the log says about itself (column header, rank
 * lines, NCCL INFO facts, provenance), and the text helpers both passes use.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_log.h"

/* ---- the lines of a log, one at a time (both passes read them) ------------------------- */

void
spsim_log_lines_init(struct spsim_log_lines *l, const char *text, size_t len)
{
    memset(l, 0, sizeof(*l));
    l->text = text;
    l->len = len;
}

char *
spsim_log_next(struct spsim_log_lines *l, uint32_t *lineno)
{
    if (l->pos >= l->len || l->failed)
        return NULL;
    const char *start = l->text + l->pos;
    const char *nl = memchr(start, '\n', l->len - l->pos);
    size_t n = nl ? (size_t)(nl - start) : l->len - l->pos;
    l->pos += n + (nl != NULL);
    if (n + 1 > l->cap) {
        char *p = realloc(l->buf, n + 1);
        if (!p) {
            l->failed = true;
            return NULL;
        }
        l->buf = p;
        l->cap = n + 1;
    }
    memcpy(l->buf, start, n);
    while (n > 0 && l->buf[n - 1] == '\r')
        n--;
    l->buf[n] = '\0';
    *lineno = ++l->lineno;
    return l->buf;
}

void
spsim_log_lines_free(struct spsim_log_lines *l)
{
    free(l->buf);
    l->buf = NULL;
}

/* ---- small text helpers -------------------------------------------------------------------- */

size_t
spsim_log_tokenize(char *s, char **tok, size_t cap)
{
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(s, " \t", &save); t && n < cap;
         t = strtok_r(NULL, " \t", &save))
        tok[n++] = t;
    return n;
}

bool
spsim_log_parse_u64(const char *s, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* Digits with an optional sign and fraction: how nccl-tests prints times and bandwidths
 * (util.cu, "%7.2f" and the like); with `exponent`, also "1e-07", as old versions print their
 * error column ("%5.0le"). strtod alone would also take "0x1p5", "1e300" or "inf". */
static bool
is_plain_decimal(const char *s, bool exponent)
{
    s += *s == '-' || *s == '+';
    if (!isdigit((unsigned char)*s))
        return false;
    while (isdigit((unsigned char)*s))
        s++;
    if (*s == '.')
        for (s++; isdigit((unsigned char)*s); s++)
            ;
    if (exponent && (*s == 'e' || *s == 'E')) {
        s++;
        s += *s == '-' || *s == '+';
        if (!isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    return *s == '\0';
}

/* strtod on a token already checked for its form. */
static bool
parse_finite(const char *s, double *out)
{
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool
spsim_log_parse_num(const char *s, double *out)
{
    return is_plain_decimal(s, false) && parse_finite(s, out);
}

bool
spsim_log_is_numeric(const char *s)
{
    double v;
    return (is_plain_decimal(s, true) && parse_finite(s, &v)) || strcmp(s, "N/A") == 0;
}

/* The number after the first occurrence of `key` (followed by a blank) in s, if any. */
static bool
find_u64_after(const char *s, const char *key, uint64_t *out)
{
    const char *p = strstr(s, key);
    if (!p)
        return false;
    p += strlen(key);
    while (*p == ' ')
        p++;
    char buf[24];
    size_t n = 0;
    while (isdigit((unsigned char)p[n]) && n + 1 < sizeof(buf)) {
        buf[n] = p[n];
        n++;
    }
    buf[n] = '\0';
    return n > 0 && spsim_log_parse_u64(buf, out);
}

/* Copy the word starting at p (up to a blank) into buf. */
static void
copy_word(const char *p, char *buf, size_t cap)
{
    size_t n = 0;
    while (p[n] && !isspace((unsigned char)p[n]) && n + 1 < cap) {
        buf[n] = p[n];
        n++;
    }
    buf[n] = '\0';
}

/* ---- NCCL debug lines ---------------------------------------------------------------------- */

size_t
spsim_log_nccl_prefix(const char *s)
{
    size_t h = 0;
    while (s[h] && s[h] != ':' && !isspace((unsigned char)s[h]))
        h++;
    const char *p = s + h;
    for (int field = 0; field < 2; field++) {
        if (h == 0 || *p != ':' || !isdigit((unsigned char)p[1]))
            return 0;
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    }
    if (p[0] != ' ' || p[1] != '[')
        return 0;
    for (p += 2; isdigit((unsigned char)*p); p++)
        ;
    return strncmp(p, "] NCCL ", 7) == 0 ? h : 0;
}

/* Host names are hashed from their last byte back, so that spsim_log_glued_prefix can grow a
 * candidate leftwards one byte at a time. */
static uint64_t
reverse_hash(const char *s, size_t len)
{
    uint64_t h = SPSIM_FNV_BASIS;
    while (len > 0)
        h = spsim_fnv_step(h, s[--len]);
    return h;
}

static int
hosts_add(struct spsim_log_hosts *hs, const char *host, size_t len)
{
    uint64_t h = reverse_hash(host, len);
    if (spsim_strset_find_hashed(&hs->index, host, len, h) != SPSIM_STRSET_NONE)
        return SPSIM_OK;
    if (hs->n == hs->cap) {
        size_t cap = hs->cap ? 2 * hs->cap : 16;
        char **p = realloc(hs->name, cap * sizeof(*p));
        if (!p)
            return SPSIM_ENOMEM;
        hs->name = p;
        hs->cap = cap;
    }
    char *copy = spsim_calloc(len + 1, 1);
    if (!copy)
        return SPSIM_ENOMEM;
    memcpy(copy, host, len);
    if (spsim_strset_put_hashed(&hs->index, copy, len, h, hs->n) != SPSIM_OK) {
        free(copy);
        return SPSIM_ENOMEM;
    }
    hs->name[hs->n++] = copy;
    if (len > hs->longest)
        hs->longest = len;
    return SPSIM_OK;
}

static void
hosts_free(struct spsim_log_hosts *hs)
{
    for (size_t i = 0; i < hs->n; i++)
        free(hs->name[i]);
    free(hs->name);
    spsim_strset_free(&hs->index);
}

/* The start of the longest known host that ends at `end`. A host has no ':' or blank
 * (spsim_log_nccl_prefix), so the search stops at one: each byte of a line is hashed at most
 * once over all the candidates of that line. */
static long
known_host_before(const char *s, const char *end, const struct spsim_log_hosts *known)
{
    uint64_t h = SPSIM_FNV_BASIS;
    long best = -1;
    for (size_t len = 1; len <= known->longest && len <= (size_t)(end - s); len++) {
        char c = end[-(ptrdiff_t)len];
        if (c == ':' || isspace((unsigned char)c))
            break;
        h = spsim_fnv_step(h, c);
        if (spsim_strset_find_hashed(&known->index, end - len, len, h) != SPSIM_STRSET_NONE)
            best = (long)(end - len - s);
    }
    return best;
}

long
spsim_log_glued_prefix(const char *s, const struct spsim_log_hosts *known)
{
    for (const char *m = strstr(s, "] NCCL "); m; m = strstr(m + 1, "] NCCL ")) {
        const char *p = m;
        while (p > s && isdigit((unsigned char)p[-1]))
            p--;
        if (p == m || p - 1 <= s || p[-1] != '[' || p[-2] != ' ')
            continue;
        p -= 2;
        for (int field = 0; field < 2; field++) {
            const char *d = p;
            while (p > s && isdigit((unsigned char)p[-1]))
                p--;
            if (p == d || p == s || p[-1] != ':')
                break;
            p--;
            if (field == 1) {
                long at = known_host_before(s, p, known);
                if (at >= 0)
                    return at;
            }
        }
    }
    return -1;
}

/* ---- pass 1: what the log says about itself ------------------------------------------------ */

static const char *const perf_names[SPSIM_COLL_COUNT] = {"all_reduce", "all_gather",
                                                         "reduce_scatter", "sendrecv", "alltoall"};

/* The collective of an nccl-tests binary name ("all_reduce_perf", "all_reduce_perf_mpi"). */
static enum spsim_coll_op
op_from_binary(const char *name)
{
    for (int op = 0; op < SPSIM_COLL_COUNT; op++) {
        size_t n = strlen(perf_names[op]);
        if (strncmp(name, perf_names[op], n) == 0 && strncmp(name + n, "_perf", 5) == 0)
            return (enum spsim_coll_op)op;
    }
    return SPSIM_COLL_COUNT;
}

/* "#  Rank  0 Group  0 Pid  54740 on     thanos device  0 [0x07] NVIDIA A100-SXM4-80GB"
 * (older nccl-tests print no Group). */
static int
scan_rank_line(struct spsim_log_facts *f, char *line)
{
    char *tok[64];
    size_t n = spsim_log_tokenize(line, tok, 64);
    uint64_t rank = 0;
    if (n < 3 || strcmp(tok[1], "Rank") != 0 || !spsim_log_parse_u64(tok[2], &rank))
        return SPSIM_OK;
    size_t on = 3;
    while (on < n && strcmp(tok[on], "on") != 0)
        on++;
    if (on + 1 >= n || rank >= (1u << 24))
        return SPSIM_OK;
    f->rank_lines++;
    if (rank + 1 > f->max_rank_plus1)
        f->max_rank_plus1 = (uint32_t)(rank + 1);
    int rc = hosts_add(&f->rank_hosts, tok[on + 1], strlen(tok[on + 1]));
    /* The device name follows the "[bus id]" token and runs to the end of the line. */
    size_t name = on + 2;
    while (name < n && tok[name][0] != '[')
        name++;
    if (rc != SPSIM_OK || ++name >= n)
        return rc;
    char gpu[sizeof(f->gpu)] = "";
    for (size_t i = name; i < n; i++) {
        strncat(gpu, tok[i], sizeof(gpu) - strlen(gpu) - 1);
        if (i + 1 < n)
            strncat(gpu, " ", sizeof(gpu) - strlen(gpu) - 1);
    }
    if (!f->gpu[0])
        snprintf(f->gpu, sizeof(f->gpu), "%s", gpu);
    else if (strcmp(f->gpu, gpu) != 0)
        f->gpu_mixed = true;
    return SPSIM_OK;
}

/* The column header "#  size  count  type  redop  root  time  algbw  busbw  #wrong ...". */
static void
scan_header(struct spsim_log_facts *f, const char *line)
{
    if (!strstr(line, " size ") || !strstr(line, " time ") || !strstr(line, "algbw") ||
        !strstr(line, " type"))
        return;
    f->have_header = true;
    f->has_redop = strstr(line, " redop ") != NULL;
    f->has_root = strstr(line, " root ") != NULL;
}

/* "nccl-library=22902": NCCL_VERSION_CODE, X*10000+Y*100+Z since 2.9, X*1000+Y*100+Z before
 * (nccl.h NCCL_VERSION macro). */
static void
scan_tests_version(struct spsim_log_facts *f, const char *line)
{
    const char *p = strstr(line, "nccl-tests version ");
    if (p)
        copy_word(p + strlen("nccl-tests version "), f->tests_version, sizeof(f->tests_version));
    uint64_t code = 0;
    if (!find_u64_after(line, "nccl-library=", &code) || code == 0 || f->nccl_version[0])
        return;
    if (code >= 10000)
        snprintf(f->nccl_version, sizeof(f->nccl_version), "%u.%u.%u", (unsigned)(code / 10000),
                 (unsigned)(code / 100 % 100), (unsigned)(code % 100));
    else
        snprintf(f->nccl_version, sizeof(f->nccl_version), "%u.%u.%u", (unsigned)(code / 1000),
                 (unsigned)(code / 100 % 10), (unsigned)(code % 100));
}

static void
scan_comment(struct spsim_log_facts *f, char *line, uint32_t lineno)
{
    const char *start = strstr(line, "Collective test starting:");
    if (start && f->op == SPSIM_COLL_COUNT) {
        char name[64];
        const char *p = start + strlen("Collective test starting:");
        while (*p == ' ')
            p++;
        copy_word(p, name, sizeof(name));
        f->op = op_from_binary(name);
        f->op_line = lineno;
        snprintf(f->op_text, sizeof(f->op_text), "%s", name);
    }
    if (strstr(line, "nccl-tests version "))
        scan_tests_version(f, line);
    uint64_t threads = 0, gpus = 0;
    if (!f->layout[0] && find_u64_after(line, "nThread", &threads) &&
        find_u64_after(line, "nGpus", &gpus))
        snprintf(f->layout, sizeof(f->layout), "%llu thread(s) x %llu GPU(s) per process",
                 (unsigned long long)threads, (unsigned long long)gpus);
    scan_header(f, line);
}

/* Facts NCCL's debug output gives: communicator size, nodes, versions. */
static void
scan_nccl_text(struct spsim_log_facts *f, const char *line)
{
    uint64_t v = 0;
    if ((find_u64_after(line, " nranks ", &v) || find_u64_after(line, " nRanks ", &v)) && v > 0 &&
        v < (1u << 24)) {
        if (f->info_nranks && f->info_nranks != v)
            f->info_nranks_mixed = true;
        f->info_nranks = (uint32_t)v;
    }
    if (find_u64_after(line, " nNodes ", &v) && v > 0 && v < (1u << 24)) {
        if (f->info_nnodes && f->info_nnodes != v)
            f->info_nnodes_mixed = true;
        f->info_nnodes = (uint32_t)v;
    }
    const char *p = strstr(line, "NCCL version ");
    if (p && !strstr(line, "nccl-tests"))
        copy_word(p + strlen("NCCL version "), f->nccl_version, sizeof(f->nccl_version));
    /* ncclNvlsInit's INFO line (transport/nvls.cc:279): no NVSwitch multicast on this GPU. */
    if (strstr(line, SPSIM_LOG_NO_NVLS))
        f->nvls_unavailable = true;
    if (find_u64_after(line, "cudaDriverVersion", &v) && v > 0 && !f->driver[0])
        snprintf(f->driver, sizeof(f->driver), "%u.%u", (unsigned)(v / 1000),
                 (unsigned)(v % 1000 / 10));
}

/* "## key: value" lines: provenance written by whoever published the log. */
static int
scan_provenance(struct spsim_bw_table *table, const char *line)
{
    const char *colon = strchr(line, ':');
    if (!colon)
        return SPSIM_OK;
    char key[48] = "log_";
    size_t n = 4;
    for (const char *p = line + 2; p < colon && n + 1 < sizeof(key); p++) {
        if (n == 4 && *p == ' ')
            continue;
        key[n++] = *p == ' ' ? '_' : (char)tolower((unsigned char)*p);
    }
    while (n > 0 && key[n - 1] == '_')
        n--;
    key[n] = '\0';
    const char *value = colon + 1;
    while (*value == ' ')
        value++;
    if (n == 4 || spsim_bw_table_info(table, key))
        return SPSIM_OK;
    return spsim_bw_table_set_info(table, key, value);
}

int
spsim_log_scan(struct spsim_log_facts *f, struct spsim_log_lines *lines,
               struct spsim_bw_table *table)
{
    int rc = SPSIM_OK;
    char *line;
    uint32_t lineno;
    while (rc == SPSIM_OK && (line = spsim_log_next(lines, &lineno))) {
        size_t host = spsim_log_nccl_prefix(line);
        if (host > 0) {
            rc = hosts_add(&f->info_hosts, line, host);
            scan_nccl_text(f, line);
        } else if (strncmp(line, "## ", 3) == 0) {
            rc = scan_provenance(table, line);
        } else if (line[0] == '#') {
            scan_comment(f, line, lineno);
            if (strstr(line, " Rank ") && strstr(line, " on "))
                rc = scan_rank_line(f, line);
        } else if (strstr(line, "NCCL version ")) {
            scan_nccl_text(f, line);
        }
    }
    return rc;
}

void
spsim_log_facts_free(struct spsim_log_facts *f)
{
    hosts_free(&f->rank_hosts);
    hosts_free(&f->info_hosts);
}
