/*
 * spsim merge: join the outputs of sharded sweeps. Given in shard order, CSV files are
 * concatenated under one header (each file's header must be the same) and JSON Lines files
 * are concatenated; with --top K the best K rows of all files are kept, ties to the earlier
 * file and line, which is the order a single sweep breaks them in.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char merge_help[] =
    "Usage: spsim merge [OPTIONS] FILE...\n"
    "\n"
    "Combine the outputs of 'spsim sweep --shard I/N' runs, given in shard order (I = 0, 1,\n"
    "...). CSV files are concatenated under one header (their headers must be identical);\n"
    "JSON Lines files are concatenated. With --top K, the best K rows of all the files are\n"
    "written instead, best first (the shards should be run with --top K too).\n"
    "\n"
    "Each shard's first and last lines ('#spsim shard I/N of sweep ...', '#spsim end of shard\n"
    "I/N: R rows') are checked and dropped: the shards must be of one sweep, each given once,\n"
    "in order, and complete. Every line must end in a newline; CSV rows must have the header's\n"
    "field count, JSON Lines rows must be JSON objects.\n"
    "\n"
    "Options:\n"
    "  --top K                keep the best K rows\n"
    "  --by M                 what --top ranks by: tokens_per_s (default: throughput, the\n"
    "                         order of the time to train a token budget), iteration_s,\n"
    "                         total_bytes, mfu (against the dense BF16 peak)\n"
    "  -o, --output FILE      write FILE atomically instead of standard output\n"
    "  -h, --help             show this help\n"
    "\n"
    "Exit status: 0 ok, 1 output not writable, 2 bad option, 3 unreadable file, different\n"
    "headers, a damaged row, a missing, repeated or truncated shard, or a row without the\n"
    "ranked column.\n";

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
    long column;    /* CSV: the ranked column's position */
    size_t nfields; /* CSV: the header's field count */
    /* Shards: -1 before the first file, then whether the files are shards; the shard count,
     * the sweep's fingerprint and the shard due next. */
    int sharded;
    uint64_t nshards, fingerprint, next_shard;
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
    *key = by == SPSIM_BY_MFU || by == SPSIM_BY_TOKENS_PER_S ? ~bits : bits;
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

/* One input file, read record by record: a CSV record may span lines (a quoted field with a
 * line break, as sweep writes a profile name that holds one). */
struct input {
    const char *name;
    FILE *f;
    char *line, *rec;
    size_t line_cap, rec_len, rec_cap;
    unsigned long lineno, rec_lineno; /* the last line read; the record's first line */
    uint64_t rows;                    /* data rows so far */
    uint64_t shard;                   /* its I when it is a shard */
};

/* The next line, which must end in a newline and hold no NUL. @return EXIT_OK (*n < 0 at the
 * end) or an exit code */
static int
next_line(struct input *in, ssize_t *n)
{
    errno = 0;
    *n = getline(&in->line, &in->line_cap, in->f);
    if (*n < 0)
        return ferror(in->f) ? cli_error(EXIT_INPUT, "%s: read error: %s", in->name,
                                         strerror(errno ? errno : EIO))
                             : EXIT_OK;
    in->lineno++;
    if (strlen(in->line) != (size_t)*n)
        return cli_error(EXIT_INPUT, "%s:%lu: a NUL byte inside the line", in->name, in->lineno);
    if (in->line[*n - 1] != '\n')
        return cli_error(EXIT_INPUT, "%s:%lu: the last line has no newline (a truncated file?)",
                         in->name, in->lineno);
    return EXIT_OK;
}

/* The next record into in->rec (in->rec_len 0 at the end). CSV lines are joined while a quoted
 * field is open; a line starting with '{' is a JSON Lines row (a CSV row starts so only when its
 * first field needs no quotes, hence holds no line break). */
static int
next_record(struct input *in, bool jsonl)
{
    in->rec_len = 0;
    in->rec_lineno = in->lineno + 1;
    for (bool open = false;;) {
        ssize_t n;
        int rc = next_line(in, &n);
        if (rc != EXIT_OK || (n < 0 && !open))
            return rc;
        if (n < 0)
            return cli_error(EXIT_INPUT, "%s:%lu: a quoted field is not closed", in->name,
                             in->rec_lineno);
        if (in->rec_len + (size_t)n + 1 > in->rec_cap) {
            size_t cap = 2 * (in->rec_len + (size_t)n + 1);
            char *grown = realloc(in->rec, cap);
            if (!grown)
                return cli_error(EXIT_RUNTIME, "out of memory");
            in->rec = grown;
            in->rec_cap = cap;
        }
        memcpy(in->rec + in->rec_len, in->line, (size_t)n + 1);
        in->rec_len += (size_t)n;
        bool csv = !jsonl && in->rec[0] != '{';
        for (ssize_t i = 0; csv && i < n; i++)
            open ^= in->line[i] == '"';
        if (!open)
            return EXIT_OK;
    }
}

/* The fields of a CSV record (RFC 4180 quoting, '\n' or "\r\n" at its end), or 0 when its
 * quoting is malformed. */
static size_t
csv_count(const char *rec, size_t len)
{
    len -= len > 0 && rec[len - 1] == '\n';
    len -= len > 0 && rec[len - 1] == '\r';
    size_t fields = 1;
    bool quoted = false, closed = false, start = true;
    for (size_t i = 0; i < len; i++) {
        char c = rec[i];
        if (quoted) {
            if (c == '"' && i + 1 < len && rec[i + 1] == '"')
                i++;
            else if (c == '"')
                quoted = false, closed = true;
        } else if (c == ',') {
            fields++;
            start = true, closed = false;
        } else if ((c == '"' && !start) || closed || c == '\n' || c == '\r') {
            return 0;
        } else {
            quoted = c == '"';
            start = false;
        }
    }
    return quoted ? 0 : fields;
}

/* JSON Lines rows as sweep writes them: one flat object of strings, numbers, true, false and
 * null (RFC 8259's grammar for those). A strict check at memory speed; a general parser took
 * three times as long as the whole merge. */
static const char *
json_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL; /* a control character or the end of the line */
        if (*p != '\\')
            continue;
        p++;
        if (*p == 'u') {
            for (int i = 1; i <= 4; i++)
                if (!isxdigit((unsigned char)p[i]))
                    return NULL;
            p += 4;
        } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
            return NULL;
        }
    }
    return p + 1;
}

static const char *
json_digits(const char *p)
{
    if (!isdigit((unsigned char)*p))
        return NULL;
    while (isdigit((unsigned char)*p))
        p++;
    return p;
}

static const char *
json_scalar(const char *p)
{
    if (*p == '"')
        return json_string(p);
    static const char *const words[] = {"true", "false", "null"};
    for (size_t i = 0; i < 3; i++)
        if (strncmp(p, words[i], strlen(words[i])) == 0)
            return p + strlen(words[i]);
    p += *p == '-';
    p = *p == '0' ? p + 1 : json_digits(p);
    if (p && *p == '.')
        p = json_digits(p + 1);
    if (p && (*p == 'e' || *p == 'E'))
        p = json_digits(p + 1 + (p[1] == '+' || p[1] == '-'));
    return p;
}

static bool
json_flat_object(const char *p)
{
    p += strspn(p, " \t");
    if (*p++ != '{')
        return false;
    p += strspn(p, " \t");
    for (bool first = true; *p != '}'; first = false) {
        if (!first && *p++ != ',')
            return false;
        p += strspn(p, " \t");
        if (!(p = json_string(p)))
            return false;
        p += strspn(p, " \t");
        if (*p++ != ':')
            return false;
        p += strspn(p, " \t");
        if (!(p = json_scalar(p)))
            return false;
        p += strspn(p, " \t");
    }
    p++;
    return p[strspn(p, " \t\r")] == '\n';
}

/* A record is one row of the layout: CSV with the header's field count, or a JSON object. */
static int
check_record(const struct merge *m, const struct input *in)
{
    if (m->jsonl)
        return json_flat_object(in->rec)
                   ? EXIT_OK
                   : cli_error(EXIT_INPUT, "%s:%lu: not a row of JSON Lines (one flat JSON object)",
                               in->name, in->rec_lineno);
    size_t n = csv_count(in->rec, in->rec_len);
    if (n == 0)
        return cli_error(EXIT_INPUT, "%s:%lu: malformed CSV quoting", in->name, in->rec_lineno);
    if (n != m->nfields)
        return cli_error(EXIT_INPUT, "%s:%lu: %zu fields where the header has %zu", in->name,
                         in->rec_lineno, n, m->nfields);
    return EXIT_OK;
}

/* Shards (doc/sweep.md): 'spsim sweep --shard I/N' writes "#spsim shard I/N of sweep HEX"
 * first and "#spsim end of shard I/N: R rows" last. */
static bool
shard_begin(const char *rec, uint64_t *shard, uint64_t *nshards, uint64_t *fingerprint)
{
    unsigned long long i, n, fp;
    char again[128];
    if (sscanf(rec, "#spsim shard %llu/%llu of sweep %llx", &i, &n, &fp) != 3)
        return false;
    snprintf(again, sizeof(again), "#spsim shard %llu/%llu of sweep %016llx\n", i, n, fp);
    *shard = i, *nshards = n, *fingerprint = fp;
    return strcmp(again, rec) == 0 && i < n;
}

static bool
shard_end(const struct input *in, uint64_t nshards, uint64_t *rows)
{
    unsigned long long i, n, r;
    char again[128];
    if (sscanf(in->rec, "#spsim end of shard %llu/%llu: %llu rows", &i, &n, &r) != 3)
        return false;
    snprintf(again, sizeof(again), "#spsim end of shard %llu/%llu: %llu rows\n", i, n, r);
    *rows = r;
    return strcmp(again, in->rec) == 0 && i == in->shard && n == nshards;
}

/* The first record of a file: a shard's first line must come in order, of the same sweep. */
static int
check_shard(struct merge *m, struct input *in, bool *shard)
{
    uint64_t n = 0, fp = 0;
    *shard = shard_begin(in->rec, &in->shard, &n, &fp);
    if (m->sharded < 0) {
        m->sharded = *shard;
        m->nshards = n;
        m->fingerprint = fp;
    }
    if (m->sharded != *shard)
        return cli_error(EXIT_INPUT,
                         *shard ? "%s: a shard of 'spsim sweep --shard', but the files before it "
                                  "are not"
                                : "%s: not a shard of 'spsim sweep --shard' (no first line "
                                  "'#spsim shard I/N of sweep ...'), but the files before it are",
                         in->name);
    if (!*shard)
        return EXIT_OK;
    if (fp != m->fingerprint || n != m->nshards)
        return cli_error(EXIT_INPUT, "%s: shard %llu/%llu of another sweep than the first file's",
                         in->name, (unsigned long long)in->shard, (unsigned long long)n);
    if (in->shard < m->next_shard)
        return cli_error(EXIT_INPUT, "%s: shard %llu/%llu is given twice", in->name,
                         (unsigned long long)in->shard, (unsigned long long)n);
    if (in->shard > m->next_shard)
        return cli_error(EXIT_INPUT,
                         "%s: shard %llu/%llu where shard %llu was due (give every shard once, "
                         "in order)",
                         in->name, (unsigned long long)in->shard, (unsigned long long)n,
                         (unsigned long long)m->next_shard);
    m->next_shard++;
    return EXIT_OK;
}

/* A file's first row: a CSV header (checked against the first file's) or a JSON Lines row. */
static int
first_line(struct merge *m, struct input *in, bool *header)
{
    const char *line = in->rec;
    bool jsonl = line[0] == '{';
    if ((jsonl && m->csv) || (!jsonl && m->jsonl))
        return cli_error(EXIT_INPUT, "%s: mixes CSV and JSON Lines with the files before it",
                         in->name);
    m->jsonl = jsonl;
    m->csv = !jsonl;
    *header = !jsonl;
    if (jsonl)
        return EXIT_OK;
    if (m->header)
        return strcmp(m->header, line) == 0
                   ? EXIT_OK
                   : cli_error(EXIT_INPUT, "%s: its header differs from the first file's",
                               in->name);
    if (!(m->nfields = csv_count(line, in->rec_len)))
        return cli_error(EXIT_INPUT, "%s:%lu: malformed CSV quoting", in->name, in->rec_lineno);
    if (!(m->header = strdup(line)))
        return cli_error(EXIT_RUNTIME, "out of memory");
    m->column = -1;
    char name[128];
    for (long i = 0; csv_field(line, i, name, sizeof(name)); i++)
        if (strcmp(name, spsim_sweep_by_column(m->by)) == 0)
            m->column = i;
    if (m->top_k && m->column < 0)
        return cli_error(EXIT_INPUT, "%s: no column %s to rank by", in->name,
                         CLI_Q(spsim_sweep_by_column(m->by)));
    if (!m->top_k && cli_stream_write(&m->out, line, in->rec_len))
        return -1;
    return EXIT_OK;
}

static int
row(struct merge *m, struct input *in)
{
    int rc = check_record(m, in);
    if (rc != EXIT_OK)
        return rc;
    in->rows++;
    if (!m->top_k)
        return cli_stream_write(&m->out, in->rec, in->rec_len) ? -1 : EXIT_OK;
    char text[64];
    const char *col = spsim_sweep_by_column(m->by);
    bool found = m->jsonl ? jsonl_field(in->rec, col, text, sizeof(text))
                          : csv_field(in->rec, m->column, text, sizeof(text));
    uint64_t key;
    if (!found || !rank_key(m->by, text, &key))
        return cli_error(EXIT_INPUT, "%s:%lu: no valid %s value to rank by", in->name,
                         in->rec_lineno, CLI_Q(col));
    return keep(m, key, in->rec);
}

/* A shard's last line: its row count, and nothing after it. */
static int
end_of_shard(struct merge *m, struct input *in, uint64_t rows)
{
    if (rows != in->rows)
        return cli_error(EXIT_INPUT, "%s:%lu: the shard has %llu rows, its last line says %llu",
                         in->name, in->rec_lineno, (unsigned long long)in->rows,
                         (unsigned long long)rows);
    int rc = next_record(in, m->jsonl);
    if (rc == EXIT_OK && in->rec_len)
        rc = cli_error(EXIT_INPUT, "%s:%lu: text after the shard's last line", in->name,
                       in->rec_lineno);
    return rc;
}

/* The records of an open file, after its first (a shard's first line or a header/row). */
static int
merge_records(struct merge *m, struct input *in, bool shard)
{
    uint64_t rows;
    int rc = shard ? next_record(in, m->jsonl) : EXIT_OK;
    for (bool first = true; rc == EXIT_OK && in->rec_len; first = false) {
        bool header = false;
        if (shard && shard_end(in, m->nshards, &rows))
            return end_of_shard(m, in, rows);
        if (first)
            rc = first_line(m, in, &header);
        if (rc == EXIT_OK && !header)
            rc = row(m, in);
        if (rc == EXIT_OK)
            rc = next_record(in, m->jsonl);
    }
    if (rc == EXIT_OK && shard)
        rc = cli_error(EXIT_INPUT,
                       "%s: truncated: no last line '#spsim end of shard %llu/%llu: R rows'",
                       in->name, (unsigned long long)in->shard, (unsigned long long)m->nshards);
    return rc;
}

static int
merge_file(struct merge *m, const char *file)
{
    struct input in = {.name = file};
    struct spsim_error err = {0};
    int fd = -1;
    if (spsim_file_open_input(file, &fd, &err) != SPSIM_OK)
        return cli_fail(&err);
    if (!(in.f = fdopen(fd, "r"))) {
        close(fd);
        return cli_error(EXIT_RUNTIME, "%s: cannot read: %s", file, strerror(errno));
    }
    bool shard = false;
    int rc = next_record(&in, m->jsonl);
    if (rc == EXIT_OK && in.rec_len && (rc = check_shard(m, &in, &shard)) == EXIT_OK)
        rc = merge_records(m, &in, shard);
    else if (rc == EXIT_OK && !in.rec_len && m->sharded > 0)
        rc = cli_error(EXIT_INPUT, "%s: empty, not a shard of 'spsim sweep --shard'", file);
    free(in.line);
    free(in.rec);
    fclose(in.f);
    return rc;
}

static int
missing_shards(const struct merge *m)
{
    unsigned long long from = m->next_shard, last = m->nshards - 1, n = m->nshards;
    return from == last ? cli_error(EXIT_INPUT, "shard %llu/%llu is missing", from, n)
                        : cli_error(EXIT_INPUT, "shards %llu/%llu to %llu/%llu are missing", from,
                                    n, last, n);
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
    m.by = SPSIM_BY_TOKENS_PER_S; /* spsim_sweep_options_defaults' */
    const char *output = NULL;
    int rc = parse(argc, argv, &m, &output);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    if (m.top_k && !(m.heap = calloc(m.top_k, sizeof(*m.heap))))
        return cli_error(EXIT_RUNTIME, "out of memory");
    m.sharded = -1;
    if ((rc = cli_stream_open(&m.out, output)) == EXIT_OK) {
        for (int i = optind; rc == EXIT_OK && i < argc; i++)
            rc = merge_file(&m, argv[i]);
        if (rc == EXIT_OK && m.sharded > 0 && m.next_shard < m.nshards)
            rc = missing_shards(&m);
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
