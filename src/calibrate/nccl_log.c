/*
 * Reading nccl-tests output (NVIDIA/nccl-tests src/common.cu and util.cu print it; its columns in
 * shared/reference/nccl-tests.md §1.3). Pass 1 (nccl_log_scan.c) gathers what the log says about
 * itself; pass 2, here, reads the data rows, joining rows that NCCL debug lines cut in two. The
 * collective, rank and node counts are then settled, and every row's printed algbw and busbw
 * are checked against its size and time before it is imported.
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/collective_model.h"
#include "nccl_log.h"

void
spsim_nccl_log_defaults(struct spsim_nccl_log_options *o)
{
    o->op = SPSIM_COLL_COUNT;
    o->gpus = 0;
    o->nodes = 0;
}

/* ---- pass 2: data rows --------------------------------------------------------------------- */

struct raw_row {
    uint32_t line;
    uint64_t size, count;
    unsigned type_bytes;          /* 0: a type name spsim does not know */
    double time_us, algbw, busbw; /* as printed, out-of-place */
};

struct pass2 {
    const char *origin;
    struct spsim_error *err;
    struct spsim_log_facts *f;
    char *pending; /* a row whose text is not finished yet */
    size_t plen, pcap;
    uint32_t pline;
    bool split; /* the pending row was cut by an NCCL line */
    struct raw_row *rows;
    size_t n, cap, zero, nsplit;
    char type[16];
};

static int
pending_append(struct pass2 *p, const char *text, uint32_t lineno)
{
    size_t add = strlen(text) + 2;
    if (p->plen + add > p->pcap) {
        size_t cap = (p->plen + add) * 2;
        char *q = realloc(p->pending, cap);
        if (!q)
            return spsim_fail(p->err, SPSIM_ENOMEM, "out of memory");
        p->pending = q;
        p->pcap = cap;
    }
    if (p->plen == 0)
        p->pline = lineno;
    p->plen +=
        (size_t)snprintf(p->pending + p->plen, p->pcap - p->plen, "%s%s", p->plen ? " " : "", text);
    return SPSIM_OK;
}

static int
row_error(const struct pass2 *p, uint32_t line, const char *what)
{
    return spsim_fail(p->err, SPSIM_EPARSE, "%s: line %u: %s", p->origin, line, what);
}

/* Skip redop and root: which of them a row has comes from the column header, or, without one,
 * from the row (redop is a word; root makes the count of numeric fields odd: root + 4k). */
static size_t
skip_redop_root(const struct spsim_log_facts *f, char **tok, size_t n, size_t i)
{
    bool redop = f->have_header
                     ? f->has_redop
                     : i < n && isalpha((unsigned char)tok[i][0]) && strcmp(tok[i], "N/A");
    if (redop)
        i++;
    bool root = f->have_header ? f->has_root : (n - i) % 2 == 1;
    return root ? i + 1 : i;
}

/* Bounds of what a row can hold. 2^48 B: a buffer beyond the memory of any set of GPUs one
 * nccl-tests run spans (2^10 GPUs of 256 GiB); 10^9 us: a collective of 1000 s, which nccl-tests
 * would repeat for hours (warmup + 20 iterations by default, shared/reference/nccl-tests.md). */
#define ROW_MAX_BYTES (1ull << 48)
#define ROW_MAX_US    1e9

/* The element size of an nccl-tests type name (common.cu test_typenames). */
static unsigned
type_bytes(const char *type)
{
    static const struct {
        const char *name;
        unsigned bytes;
    } types[] = {{"int8", 1},   {"uint8", 1},    {"int32", 4},  {"uint32", 4},
                 {"int64", 8},  {"uint64", 8},   {"half", 2},   {"float", 4},
                 {"double", 8}, {"bfloat16", 2}, {"f8e4m3", 1}, {"f8e5m2", 1}};
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(types); i++)
        if (strcmp(type, types[i].name) == 0)
            return types[i].bytes;
    return 0;
}

static int
check_bounds(const struct pass2 *p, uint32_t line, const struct raw_row *row)
{
    if (row->size > ROW_MAX_BYTES)
        return spsim_fail(p->err, SPSIM_EPARSE,
                          "%s: line %u: size %llu B is beyond any GPU memory (at most 2^48)",
                          p->origin, line, (unsigned long long)row->size);
    if (row->time_us > ROW_MAX_US)
        return spsim_fail(p->err, SPSIM_EPARSE,
                          "%s: line %u: time %.6g us is beyond 10^9 us (1000 s) per collective",
                          p->origin, line, row->time_us);
    return SPSIM_OK;
}

/* Parse a row's text: *complete is false when fields are missing (truncated or cut). */
static int
parse_row(const struct pass2 *p, char *text, uint32_t line, struct raw_row *row, bool *complete)
{
    char *tok[64];
    size_t n = spsim_log_tokenize(text, tok, 64);
    *complete = false;
    if (n < 3 || !spsim_log_parse_u64(tok[0], &row->size) ||
        !spsim_log_parse_u64(tok[1], &row->count) || !isalpha((unsigned char)tok[2][0]))
        return row_error(p, line, "not an nccl-tests data row (expected 'SIZE COUNT TYPE ...')");
    row->type_bytes = type_bytes(tok[2]);
    size_t i = skip_redop_root(p->f, tok, n, 3);
    if (i > n || n - i < 4)
        return SPSIM_OK;
    if (!spsim_log_parse_num(tok[i], &row->time_us) ||
        !spsim_log_parse_num(tok[i + 1], &row->algbw) ||
        !spsim_log_parse_num(tok[i + 2], &row->busbw) || !spsim_log_is_numeric(tok[i + 3]))
        return row_error(p, line,
                         "time, algbw, busbw and #wrong must be decimal numbers, as nccl-tests "
                         "prints them");
    size_t rest = n - i - 4;
    if (rest >= 1 && rest <= 3)
        return SPSIM_OK; /* the in-place group is cut short */
    if (row->time_us < 0 || row->algbw < 0 || row->busbw < 0)
        return row_error(p, line, "negative time or bandwidth");
    if (row->size > 0 && row->time_us == 0)
        return row_error(p, line, "time 0 us for a non-empty message");
    int rc = check_bounds(p, line, row);
    if (rc != SPSIM_OK)
        return rc;
    row->line = line;
    *complete = true;
    return SPSIM_OK;
}

static int
rows_push(struct pass2 *p, const struct raw_row *row)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        struct raw_row *q = realloc(p->rows, cap * sizeof(*q));
        if (!q)
            return spsim_fail(p->err, SPSIM_ENOMEM, "out of memory");
        p->rows = q;
        p->cap = cap;
    }
    p->rows[p->n++] = *row;
    return SPSIM_OK;
}

/* The pending row is over: import it, or fail if it is missing fields. */
static int
row_finish(struct pass2 *p)
{
    if (p->plen == 0)
        return SPSIM_OK;
    struct raw_row row = {0};
    bool complete = false;
    char type[16] = "";
    sscanf(p->pending, "%*s %*s %15s", type);
    int rc = parse_row(p, p->pending, p->pline, &row, &complete);
    p->plen = 0;
    if (rc != SPSIM_OK)
        return rc;
    if (!complete)
        return row_error(p, p->pline, "truncated data row (time, algbw, busbw or #wrong missing)");
    if (!p->type[0])
        snprintf(p->type, sizeof(p->type), "%s", type);
    p->nsplit += p->split;
    p->split = false;
    if (row.size == 0) {
        p->zero++; /* nccl-tests prints size-0 rows when a per-rank count rounds down to 0 */
        return SPSIM_OK;
    }
    return rows_push(p, &row);
}

/* A row starts with SIZE COUNT TYPE; a continuation of a cut row has numbers only. */
static bool
is_row_start(const char *text)
{
    char a[32], b[32], c[32];
    uint64_t v;
    return sscanf(text, "%31s %31s %31s", a, b, c) == 3 && spsim_log_parse_u64(a, &v) &&
           spsim_log_parse_u64(b, &v) && isalpha((unsigned char)c[0]);
}

static bool
starts_with_two_integers(const char *text)
{
    char a[32], b[32];
    uint64_t v;
    return sscanf(text, "%31s %31s", a, b) == 2 && spsim_log_parse_u64(a, &v) &&
           spsim_log_parse_u64(b, &v);
}

static bool
is_numbers_only(const char *text)
{
    char copy[512], *tok[64];
    snprintf(copy, sizeof(copy), "%s", text);
    size_t n = spsim_log_tokenize(copy, tok, 64);
    for (size_t i = 0; i < n; i++)
        if (!spsim_log_is_numeric(tok[i]))
            return false;
    return n > 0;
}

static int
feed_text(struct pass2 *p, char *text, uint32_t lineno, bool glued)
{
    while (*text == ' ' || *text == '\t')
        text++;
    if (!*text || !(isdigit((unsigned char)*text) || *text == '-' || *text == '.'))
        return SPSIM_OK; /* other text: "NCCL version ...", launcher messages */
    int rc = SPSIM_OK;
    if (is_row_start(text)) {
        if ((rc = row_finish(p)))
            return rc;
    } else if (is_numbers_only(text)) {
        if (p->plen == 0)
            return row_error(p, lineno, "numbers that continue no data row");
    } else if (starts_with_two_integers(text)) {
        return row_error(p, lineno, "not an nccl-tests data row (expected 'SIZE COUNT TYPE ...')");
    } else {
        return SPSIM_OK; /* text such as "8 GPUs found" */
    }
    if ((rc = pending_append(p, text, lineno)))
        return rc;
    if (glued) {
        p->split = true;
        return SPSIM_OK; /* the rest of the row comes after NCCL's lines */
    }
    return row_finish(p);
}

static int
read_rows(struct pass2 *p, struct spsim_log_lines *lines)
{
    char *line;
    uint32_t lineno = 0;
    int rc = SPSIM_OK;
    while (rc == SPSIM_OK && (line = spsim_log_next(lines, &lineno))) {
        if (spsim_log_nccl_prefix(line) > 0)
            continue;
        if (line[0] == '#') {
            rc = row_finish(p);
            continue;
        }
        long cut = spsim_log_glued_prefix(line, &p->f->info_hosts);
        if (cut < 0)
            cut = spsim_log_glued_prefix(line, &p->f->rank_hosts);
        if (cut >= 0)
            line[cut] = '\0';
        rc = feed_text(p, line, lineno, cut >= 0);
    }
    if (rc == SPSIM_OK && lines->failed)
        rc = spsim_fail(p->err, SPSIM_ENOMEM, "out of memory");
    if (rc == SPSIM_OK)
        rc = row_finish(p);
    if (rc == SPSIM_OK && p->n == 0)
        rc = spsim_fail(p->err, SPSIM_EPARSE,
                        "%s: line %u: no data rows of size > 0 (nccl-tests rows read 'SIZE COUNT "
                        "TYPE REDOP ROOT TIME ALGBW BUSBW #WRONG ...')",
                        p->origin, lines->lineno);
    return rc;
}

/* ---- what was measured: collective, ranks, nodes ------------------------------------------ */

/* The collective named in a file name ("h100x4of8_all_gather_...txt"), when exactly one is. */
static enum spsim_coll_op
op_from_file_name(const char *origin, int *matches)
{
    static const char *const names[][2] = {{"all_reduce", "allreduce"},
                                           {"all_gather", "allgather"},
                                           {"reduce_scatter", "reducescatter"},
                                           {"sendrecv", "send_recv"},
                                           {"alltoall", "all_to_all"}};
    const char *base = strrchr(origin, '/');
    base = base ? base + 1 : origin;
    enum spsim_coll_op op = SPSIM_COLL_COUNT;
    *matches = 0;
    for (int i = 0; i < SPSIM_COLL_COUNT; i++) {
        if (strstr(base, names[i][0]) || strstr(base, names[i][1])) {
            op = (enum spsim_coll_op)i;
            ++*matches;
        }
    }
    return *matches == 1 ? op : SPSIM_COLL_COUNT;
}

static int
settle_op(const struct pass2 *p, const struct spsim_nccl_log_options *o,
          struct spsim_nccl_log_summary *s)
{
    const struct spsim_log_facts *f = p->f;
    if (f->op_line) {
        if (f->op == SPSIM_COLL_COUNT)
            return spsim_fail(p->err, SPSIM_EFIELD,
                              "%s: line %u: %s is not a collective spsim models (all_reduce, "
                              "all_gather, reduce_scatter, sendrecv, alltoall)",
                              p->origin, f->op_line, SPSIM_Q(f->op_text));
        if (o->op != SPSIM_COLL_COUNT && o->op != f->op)
            return spsim_fail(p->err, SPSIM_EFIELD,
                              "%s: line %u: the log measured %s, not %s (--op)", p->origin,
                              f->op_line, spsim_coll_op_name(f->op), spsim_coll_op_name(o->op));
        s->op = f->op;
        s->op_from = "log";
        return SPSIM_OK;
    }
    if (o->op != SPSIM_COLL_COUNT) {
        s->op = o->op;
        s->op_from = "--op";
        return SPSIM_OK;
    }
    int matches = 0;
    s->op = op_from_file_name(p->origin, &matches);
    s->op_from = "file name";
    if (s->op == SPSIM_COLL_COUNT)
        return spsim_fail(
            p->err, SPSIM_EFIELD,
            "%s: cannot tell which collective the log measured: it has no 'Collective "
            "test starting:' line and its file name names %s; give it with --op",
            p->origin, matches ? "several" : "none");
    return SPSIM_OK;
}

/* Take the log's count, or the option's; refuse when both are given and differ. */
static int
settle_count(const struct pass2 *p, uint32_t from_log, const char *log_source, uint32_t option,
             const char *option_name, uint32_t *out, const char **source)
{
    if (from_log && option && from_log != option)
        return spsim_fail(p->err, SPSIM_EFIELD, "%s: the log's %s give %u, but %s says %u",
                          p->origin, log_source, from_log, option_name, option);
    *out = from_log ? from_log : option;
    *source = from_log ? log_source : option_name;
    return SPSIM_OK;
}

static int
settle_ranks_nodes(const struct pass2 *p, const struct spsim_nccl_log_options *o,
                   struct spsim_nccl_log_summary *s)
{
    const struct spsim_log_facts *f = p->f;
    uint32_t ranks = f->max_rank_plus1;
    const char *ranks_src = "rank lines";
    if (!ranks && !f->info_nranks_mixed) {
        ranks = f->info_nranks;
        ranks_src = "NCCL INFO nranks";
    }
    uint32_t nodes = (uint32_t)f->rank_hosts.n;
    const char *nodes_src = "rank lines";
    if (!nodes && f->info_nnodes && !f->info_nnodes_mixed) {
        nodes = f->info_nnodes;
        nodes_src = "NCCL INFO nNodes";
    } else if (!nodes) {
        nodes = (uint32_t)f->info_hosts.n;
        nodes_src = "NCCL INFO hosts";
    }
    int rc;
    if ((rc = settle_count(p, ranks, ranks_src, o->gpus, "--gpus", &s->ranks, &s->ranks_from)) ||
        (rc = settle_count(p, nodes, nodes_src, o->nodes, "--nodes", &s->nodes, &s->nodes_from)))
        return rc;
    if (s->ranks == 0)
        return spsim_fail(p->err, SPSIM_EFIELD,
                          "%s: the log does not say how many ranks ran (no '#  Rank' lines, no "
                          "'nranks' in NCCL INFO lines); give it with --gpus",
                          p->origin);
    if (s->nodes == 0)
        return spsim_fail(p->err, SPSIM_EFIELD,
                          "%s: the log does not say how many nodes ran (no '#  Rank ... on HOST' "
                          "lines, no NCCL INFO lines); give it with --nodes",
                          p->origin);
    if (s->ranks < 2 || s->ranks % s->nodes != 0)
        return spsim_fail(p->err, SPSIM_EFIELD,
                          "%s: %u rank(s) on %u node(s): a collective needs 2 or more ranks spread "
                          "evenly over the nodes",
                          p->origin, s->ranks, s->nodes);
    return SPSIM_OK;
}

/* ---- checking and importing the rows ------------------------------------------------------- */

/* Printed values carry two decimals and come from an unrounded time; the time itself is printed
 * to 4 or 5 significant digits (util.cu: %7.2f below 100 us, %7.1f, %7.0f from 10 ms). */
static bool
disagrees(double printed, double expected)
{
    return fabs(printed - expected) > 0.0051 + 2e-3 * expected;
}

static void
note_row(struct spsim_nccl_log_summary *s, const struct raw_row *r, const char *what,
         double printed, double expected, double factor)
{
    s->mismatched_rows++;
    if (s->nnotes >= SPSIM_NCCL_LOG_MAX_NOTES)
        return;
    struct spsim_nccl_log_note *n = &s->notes[s->nnotes++];
    n->line = r->line;
    snprintf(n->text, sizeof(n->text), "%s %.2f GB/s printed, %.4g from size, time%s", what,
             printed, expected, factor != 1.0 ? " and the busbw factor" : "");
}

/* SIZE = COUNT x the type's size, times the rank count where COUNT is per rank (AllGather,
 * ReduceScatter, AlltoAll; shared/reference/nccl-tests.md §1.1). A row that breaks it has its
 * size or count column wrong (swapped columns make every size 4x too small for float). AlltoAll
 * also passes with COUNT over all peers: no public AlltoAll log was at hand to confirm which. */
static int
check_sizes(const struct pass2 *p, const struct spsim_nccl_log_summary *s)
{
    bool per_rank = s->op == SPSIM_COLL_ALL_GATHER || s->op == SPSIM_COLL_REDUCE_SCATTER ||
                    s->op == SPSIM_COLL_ALL_TO_ALL;
    uint64_t ranks = per_rank ? s->ranks : 1;
    for (size_t i = 0; i < p->n; i++) {
        const struct raw_row *r = &p->rows[i];
        bool ok = true, all_peers_ok = true;
        uint64_t expected = spsim_mul3(r->count, r->type_bytes, ranks, &ok);
        if (s->op == SPSIM_COLL_ALL_TO_ALL &&
            spsim_mul(r->count, r->type_bytes, &all_peers_ok) == r->size && all_peers_ok)
            continue;
        if (r->type_bytes && (!ok || expected != r->size))
            return spsim_fail(p->err, SPSIM_EPARSE,
                              "%s: line %u: size %llu B is not count %llu x %u B%s%s: a wrong "
                              "or swapped size or count column",
                              p->origin, r->line, (unsigned long long)r->size,
                              (unsigned long long)r->count, r->type_bytes,
                              per_rank ? " x the ranks of " : "",
                              per_rank ? spsim_coll_op_name(s->op) : "");
    }
    return SPSIM_OK;
}

/* A printed algbw this far from size/time is no rounding (0.2 %) or slip of a digit: size or
 * time is wrong, and both go into the profile. */
#define ALGBW_REFUSE 0.10
/* The most a hardware profile holds (src/profiles/hardware.c: busbw in [1e-3, 1e6] GB/s): a row
 * beyond it would fail later, against the profile being written instead of this line. */
#define BUSBW_MAX_GBPS 1e6

/* Check every row against size/time and the busbw factor of the settled collective and rank
 * count. A factor that is wrong on every row means the rank count is wrong: refuse. */
static int
check_rows(const struct pass2 *p, struct spsim_nccl_log_summary *s, double factor)
{
    size_t ratio_rows = 0, factor_bad = 0;
    const struct raw_row *bad = NULL;
    for (size_t i = 0; i < p->n; i++) {
        const struct raw_row *r = &p->rows[i];
        double algbw = (double)r->size / (r->time_us * 1e-6) / 1e9;
        bool bad_alg = disagrees(r->algbw, algbw), bad_bus = disagrees(r->busbw, algbw * factor);
        if (algbw * spsim_max_d(factor, 1.0) > BUSBW_MAX_GBPS)
            return spsim_fail(p->err, SPSIM_EPARSE,
                              "%s: line %u: size and time give %.4g GB/s, beyond the 10^6 GB/s a "
                              "profile may hold",
                              p->origin, r->line, algbw * spsim_max_d(factor, 1.0));
        if (bad_alg && fabs(r->algbw - algbw) > 0.0051 + ALGBW_REFUSE * algbw)
            return spsim_fail(p->err, SPSIM_EPARSE,
                              "%s: line %u: algbw %.2f GB/s printed, but size and time give %.4g: "
                              "the size or the time is wrong",
                              p->origin, r->line, r->algbw, algbw);
        if (bad_alg)
            note_row(s, r, "algbw", r->algbw, algbw, 1.0);
        else if (bad_bus)
            note_row(s, r, "busbw", r->busbw, algbw * factor, factor);
        if (r->algbw >= 1.0) {
            ratio_rows++;
            if (!bad_alg && bad_bus) {
                factor_bad++;
                bad = r;
            }
        }
    }
    if (ratio_rows >= 3 && factor_bad == ratio_rows)
        return spsim_fail(p->err, SPSIM_EFIELD,
                          "%s: line %u: busbw/algbw is %.4f on every row, but %s on %u ranks has "
                          "factor %.4f (nccl-tests PERFORMANCE.md): the rank count or the "
                          "collective is wrong",
                          p->origin, bad->line, bad->busbw / bad->algbw, spsim_coll_op_name(s->op),
                          s->ranks, factor);
    return SPSIM_OK;
}

static int
set_info(struct spsim_bw_table *t, const char *key, const char *value)
{
    return value && value[0] ? spsim_bw_table_set_info(t, key, value) : SPSIM_OK;
}

static int
hosts_info(struct spsim_bw_table *t, const struct spsim_log_hosts *hs)
{
    char buf[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < hs->n && used + 1 < sizeof(buf); i++) {
        int w = snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? "," : "", hs->name[i]);
        used = w < 0 ? sizeof(buf) : used + (size_t)w;
    }
    return set_info(t, "hosts", buf);
}

static int
store(const struct pass2 *p, const struct spsim_nccl_log_summary *s, struct spsim_bw_table *t)
{
    const struct spsim_log_facts *f = p->f;
    int rc = SPSIM_OK;
    double factor = s->op == SPSIM_COLL_SEND_RECV ? 1.0 : spsim_wire_fraction(s->op, s->ranks);
    for (size_t i = 0; i < p->n && rc == SPSIM_OK; i++) {
        const struct raw_row *r = &p->rows[i];
        struct spsim_bw_sample x = {s->op, s->ranks, s->nodes, r->size, r->time_us * 1e-6, 0, 0};
        x.algbw_GBps = (double)r->size / x.time_s / 1e9;
        x.busbw_GBps = x.algbw_GBps * factor;
        if ((rc = spsim_bw_table_add(t, &x)) == SPSIM_EINVAL)
            return row_error(p, r->line, "time or bandwidth out of range");
    }
    if (rc == SPSIM_OK && !(rc = set_info(t, "source", p->origin)) &&
        !(rc = set_info(t, "gpu", f->gpu_mixed ? NULL : f->gpu)) &&
        !(rc = hosts_info(t, f->rank_hosts.n ? &f->rank_hosts : &f->info_hosts)) &&
        !(rc = set_info(t, "nccl_version", f->nccl_version)) &&
        !(rc = set_info(t, "nccl_tests_version", f->tests_version)) &&
        !(rc = set_info(t, "cuda_driver_version", f->driver)) &&
        !(rc = set_info(t, "process_layout", f->layout)) &&
        !(rc = set_info(t, "nvls", f->nvls_unavailable ? SPSIM_LOG_NO_NVLS : NULL)))
        rc = set_info(t, "type", p->type);
    return rc == SPSIM_OK ? rc : spsim_fail(p->err, rc, "out of memory");
}

static int
parse_log(struct pass2 *p, const char *text, size_t len, const struct spsim_nccl_log_options *o,
          struct spsim_bw_table *table, struct spsim_nccl_log_summary *s)
{
    struct spsim_log_lines lines;
    spsim_log_lines_init(&lines, text, len);
    int rc = spsim_log_scan(p->f, &lines, table);
    if (rc == SPSIM_OK && lines.failed)
        rc = SPSIM_ENOMEM;
    spsim_log_lines_free(&lines);
    if (rc != SPSIM_OK)
        return spsim_fail(p->err, rc, "out of memory");
    spsim_log_lines_init(&lines, text, len);
    rc = read_rows(p, &lines);
    spsim_log_lines_free(&lines);
    if (rc == SPSIM_OK && !(rc = settle_op(p, o, s)) && !(rc = settle_ranks_nodes(p, o, s)) &&
        !(rc = check_sizes(p, s)))
        rc = check_rows(p, s,
                        s->op == SPSIM_COLL_SEND_RECV ? 1.0 : spsim_wire_fraction(s->op, s->ranks));
    s->rows = p->n;
    s->zero_rows = p->zero;
    s->split_rows = p->nsplit;
    return rc == SPSIM_OK ? store(p, s, table) : rc;
}

int
spsim_nccl_log_parse(const char *text, size_t len, const char *origin,
                     const struct spsim_nccl_log_options *o, struct spsim_bw_table *table,
                     struct spsim_nccl_log_summary *summary, struct spsim_error *err)
{
    struct spsim_nccl_log_options defaults;
    spsim_nccl_log_defaults(&defaults);
    if (!o)
        o = &defaults;
    if (!text || !table || (unsigned)o->op > SPSIM_COLL_COUNT)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_nccl_log_parse: invalid argument");
    struct spsim_log_facts facts = {.op = SPSIM_COLL_COUNT};
    struct pass2 p = {.origin = origin ? origin : "<nccl-tests log>", .err = err, .f = &facts};
    struct spsim_nccl_log_summary s = {.op = SPSIM_COLL_COUNT};
    int rc = parse_log(&p, text, len, o, table, &s);
    spsim_log_facts_free(&facts);
    free(p.pending);
    free(p.rows);
    if (rc == SPSIM_OK && summary)
        *summary = s;
    return rc;
}

int
spsim_nccl_log_load(const char *path, const struct spsim_nccl_log_options *o,
                    struct spsim_bw_table *table, struct spsim_nccl_log_summary *summary,
                    struct spsim_error *err)
{
    if (!path)
        return spsim_fail(err, SPSIM_EINVAL, "spsim_nccl_log_load: NULL path");
    char *buf = NULL;
    size_t len = 0;
    int rc = spsim_read_file(path, &buf, &len, err);
    if (rc == SPSIM_OK)
        rc = spsim_nccl_log_parse(buf, len, path, o, table, summary, err);
    free(buf);
    return rc;
}
