/*
 * spsim merge: join the outputs of sharded sweeps. Given in shard order, CSV files are
 * concatenated under one header (each file's header must be the same) and JSON Lines files
 * are concatenated; with --top K the best K rows of all files are kept, ties to the earlier
 * file and line, which is the order a single sweep breaks them in.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char merge_help[] =
    "Usage: spsim merge [OPTIONS] FILE...\n"
    "\n"
    "Combine the outputs of 'spsim sweep --shard I/N' runs, given in shard order (I = 0, 1,\n"
    "...). CSV files are concatenated under one header (their headers must be identical);\n"
    "JSON Lines files are concatenated. With --top K, the best K rows of all the files are\n"
    "written instead, best first (the shards should be run with --top K too).\n"
    "\n"
    "Options:\n"
    "  --top K                keep the best K rows\n"
    "  --by M                 what --top ranks by: iteration_s (default), total_bytes, mfu\n"
    "  -o, --output FILE      write FILE atomically instead of standard output\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 ok, 1 output not writable, 2 bad option, 3 unreadable file, different\n"
    "headers, or a row without the ranked column.\n";

struct kept_row {
    uint64_t key, seq; /* rank (smaller is better), then input order */
    char *line;
};

struct merge {
    struct cli_stream out;
    uint64_t top_k;
    enum spsim_sweep_by by;
    char *header; /* the first CSV file's header line */
    bool jsonl, csv;
    long column; /* CSV: the ranked column's position */
    struct kept_row *heap;
    uint64_t nheap, seq;
};

/* Field `index` of a CSV line (RFC 4180 quoting), copied into buf. */
static bool
csv_field(const char *line, long index, char *buf, size_t cap)
{
    const char *p = line;
    for (long i = 0;; i++) {
        size_t n = 0;
        bool quoted = *p == '"';
        if (quoted)
            p++;
        while (*p && (quoted || (*p != ',' && *p != '\n' && *p != '\r'))) {
            if (quoted && *p == '"') {
                if (p[1] != '"') {
                    p++;
                    quoted = false;
                    continue;
                }
                p++;
            }
            if (i == index && n + 1 < cap)
                buf[n++] = *p;
            p++;
        }
        if (i == index) {
            buf[n] = '\0';
            return true;
        }
        if (*p != ',')
            return false;
        p++;
    }
}

/* The ranked value of a JSON Lines row: the text after "KEY":. */
static bool
jsonl_field(const char *line, const char *key, char *buf, size_t cap)
{
    char pattern[64];
    snprintf(pattern, sizeof(pattern), "\"%s\":", key);
    const char *p = strstr(line, pattern);
    if (!p)
        return false;
    p += strlen(pattern);
    size_t n = 0;
    while (*p && *p != ',' && *p != '}' && n + 1 < cap)
        buf[n++] = *p++;
    buf[n] = '\0';
    return true;
}

/* The rank key as the sweep computes it (spsim_sweep_rank_key): smaller is better. */
static bool
rank_key(enum spsim_sweep_by by, const char *text, uint64_t *key)
{
    char *end = NULL;
    errno = 0;
    if (by == SPSIM_BY_TOTAL_BYTES) {
        unsigned long long v = strtoull(text, &end, 10);
        *key = v;
        return end != text && *end == '\0' && errno == 0 && text[0] != '-';
    }
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(v) || v < 0)
        return false;
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    *key = by == SPSIM_BY_MFU ? ~bits : bits;
    return true;
}

static bool
worse(const struct kept_row *a, const struct kept_row *b)
{
    return a->key != b->key ? a->key > b->key : a->seq > b->seq;
}

static void
sift_down(struct kept_row *h, uint64_t n, uint64_t i)
{
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && worse(&h[c + 1], &h[c]))
            c++;
        if (!worse(&h[c], &h[i]))
            return;
        struct kept_row t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

/* Keep the row if it is among the best K seen (a max-heap of K rows). */
static int
keep(struct merge *m, uint64_t key, const char *line)
{
    struct kept_row row = {key, m->seq++, NULL};
    if (m->nheap == m->top_k && !worse(&m->heap[0], &row))
        return EXIT_OK;
    if (!(row.line = strdup(line)))
        return cli_error(EXIT_RUNTIME, "out of memory");
    if (m->nheap < m->top_k) {
        uint64_t i = m->nheap++;
        for (; i > 0 && worse(&row, &m->heap[(i - 1) / 2]); i = (i - 1) / 2)
            m->heap[i] = m->heap[(i - 1) / 2];
        m->heap[i] = row;
        return EXIT_OK;
    }
    free(m->heap[0].line);
    m->heap[0] = row;
    sift_down(m->heap, m->nheap, 0);
    return EXIT_OK;
}

/* A file's first line: a CSV header (checked, *header set) or a JSON Lines row. */
static int
first_line(struct merge *m, const char *file, const char *line, bool *header)
{
    bool jsonl = line[0] == '{';
    if ((jsonl && m->csv) || (!jsonl && m->jsonl))
        return cli_error(EXIT_INPUT, "%s: mixes CSV and JSON Lines with the files before it", file);
    m->jsonl = jsonl;
    m->csv = !jsonl;
    *header = !jsonl;
    if (jsonl)
        return EXIT_OK;
    if (m->header)
        return strcmp(m->header, line) == 0
                   ? EXIT_OK
                   : cli_error(EXIT_INPUT, "%s: its header differs from the first file's", file);
    if (!(m->header = strdup(line)))
        return cli_error(EXIT_RUNTIME, "out of memory");
    m->column = -1;
    char name[128];
    for (long i = 0; csv_field(line, i, name, sizeof(name)); i++)
        if (strcmp(name, spsim_sweep_by_column(m->by)) == 0)
            m->column = i;
    if (m->top_k && m->column < 0)
        return cli_error(EXIT_INPUT, "%s: no column '%s' to rank by", file,
                         spsim_sweep_by_column(m->by));
    if (!m->top_k && cli_stream_write(&m->out, line, strlen(line)))
        return -1;
    return EXIT_OK;
}

static int
row(struct merge *m, const char *file, unsigned long lineno, const char *line)
{
    if (!m->top_k)
        return cli_stream_write(&m->out, line, strlen(line)) ? -1 : EXIT_OK;
    char text[64];
    const char *col = spsim_sweep_by_column(m->by);
    bool found = m->jsonl ? jsonl_field(line, col, text, sizeof(text))
                          : csv_field(line, m->column, text, sizeof(text));
    uint64_t key;
    if (!found || !rank_key(m->by, text, &key))
        return cli_error(EXIT_INPUT, "%s:%lu: no valid '%s' value to rank by", file, lineno, col);
    return keep(m, key, line);
}

static int
merge_file(struct merge *m, const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return cli_error(EXIT_INPUT, "%s: cannot open: %s", file, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    unsigned long lineno = 0;
    int rc = EXIT_OK;
    while (rc == EXIT_OK && getline(&line, &cap, f) > 0) {
        bool header = false;
        if (++lineno == 1 && ((rc = first_line(m, file, line, &header)) != EXIT_OK || header))
            continue;
        rc = row(m, file, lineno, line);
    }
    if (rc == EXIT_OK && ferror(f))
        rc = cli_error(EXIT_INPUT, "%s: read error", file);
    free(line);
    fclose(f);
    return rc;
}

static int
compare_rows(const void *a, const void *b)
{
    const struct kept_row *x = a, *y = b;
    return worse(x, y) ? 1 : worse(y, x) ? -1 : 0;
}

static int
write_top(struct merge *m)
{
    qsort(m->heap, m->nheap, sizeof(*m->heap), compare_rows);
    if (m->header && cli_stream_write(&m->out, m->header, strlen(m->header)))
        return -1;
    for (uint64_t i = 0; i < m->nheap; i++)
        if (cli_stream_write(&m->out, m->heap[i].line, strlen(m->heap[i].line)))
            return -1;
    return EXIT_OK;
}

static int
parse(int argc, char **argv, struct merge *m, const char **output)
{
    static const struct option longopts[] = {{"top", required_argument, NULL, 't'},
                                             {"by", required_argument, NULL, 'b'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    optind = 1;
    opterr = 0;
    for (int opt; (opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1;) {
        int rc = EXIT_OK;
        switch (opt) {
        case 'h':
            fputs(merge_help, stdout);
            return -1;
        case 't':
            rc = cli_parse_u64("--top", optarg, 1, SPSIM_SWEEP_MAX_TOP, &m->top_k);
            break;
        case 'b':
            rc = cli_parse_by("merge", optarg, &m->by);
            break;
        case 'o':
            *output = optarg;
            break;
        default:
            return cli_getopt_error("merge", opt, argv, longopts);
        }
        if (rc != EXIT_OK)
            return rc;
    }
    if (optind >= argc)
        return cli_usage_error("merge", "no input files");
    return EXIT_OK;
}

int
cmd_merge(int argc, char **argv)
{
    struct merge m;
    memset(&m, 0, sizeof(m));
    const char *output = NULL;
    int rc = parse(argc, argv, &m, &output);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    if (m.top_k && !(m.heap = calloc(m.top_k, sizeof(*m.heap))))
        return cli_error(EXIT_RUNTIME, "out of memory");
    if ((rc = cli_stream_open(&m.out, output)) == EXIT_OK) {
        for (int i = optind; rc == EXIT_OK && i < argc; i++)
            rc = merge_file(&m, argv[i]);
        if (rc == EXIT_OK && m.top_k)
            rc = write_top(&m);
        if (rc == EXIT_OK || rc == -1)
            rc = cli_stream_commit(&m.out);
        else
            cli_stream_abort(&m.out);
    }
    for (uint64_t i = 0; i < m.nheap; i++)
        free(m.heap[i].line);
    free(m.heap);
    free(m.header);
    return rc;
}
