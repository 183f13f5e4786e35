/*
 * `mpirun -np N spsim sweep ...` (built with MPI): the ranks split the sweep and rank 0
 * writes the output, the same bytes as one process would write.
 *
 * Rows: the range is cut into chunks of CHUNK_POINTS; chunk j belongs to rank j mod N. Each
 * rank evaluates its chunks in order and sends each chunk's text to rank 0, which writes the
 * chunks in order (its own directly). A rank is at most one chunk ahead of rank 0, so memory
 * stays at one chunk per rank. --top K: each rank keeps the best K of a consecutive shard;
 * rank 0 gathers the candidates, ranks them as the sweep does (key, then index) and writes
 * the best K. Counts are summed on rank 0. Any failure aborts every rank (MPI_Abort).
 *
 * Linking MPI would make every command load libmpi and its dependencies at start (spsim
 * query: 137 -> 226 page faults, 3.6 -> 8.8 ms), so this file is built twice: without MPI
 * into `spsim`, which execs its sibling `spsim-mpi` (built with SPSIM_CLI_MPI = 1 where MPI
 * is found) when an MPI launcher started it.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#ifndef SPSIM_CLI_MPI
#define SPSIM_CLI_MPI 0
#endif

bool
cli_mpi_launched(void)
{
    return spsim_mpi_launched(NULL);
}

#if SPSIM_CLI_MPI
#include <mpi.h>

/* Points per chunk: at most 16384 rows of at most SPSIM_ROW_MAX bytes stay under MPI's
 * 2^31-byte message limit; typical rows (about a kilobyte) make 16 MB. */
#define CHUNK_POINTS 16384u

enum { TAG_COUNTS = 1, TAG_ROWS = 2, TAG_INVALID = 3 };

int
cli_mpi_begin(struct cli_mpi *m, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    m->rank = 0;
    m->size = 1;
    m->active = cli_mpi_launched();
    if (!m->active)
        return EXIT_OK;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return cli_error(EXIT_RUNTIME, "MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    return EXIT_OK;
}

int
cli_mpi_end(const struct cli_mpi *m, int rc)
{
    if (m->active && m->size > 1 && rc != EXIT_OK)
        MPI_Abort(MPI_COMM_WORLD, rc); /* the other ranks would wait for ever */
    if (m->active)
        MPI_Finalize();
    return rc;
}

/* A chunk's text kept in memory (ranks other than 0). */
struct text {
    char *data;
    size_t len, cap;
};
struct chunk {
    struct text out, invalid;
};

static int
keep_text(void *cookie, const char *text, size_t len, int which)
{
    struct chunk *c = cookie;
    struct text *b = which ? &c->invalid : &c->out;
    if (b->cap - b->len < len) {
        size_t cap = b->cap ? b->cap : 1 << 20;
        while (cap - b->len < len)
            cap *= 2;
        char *data = realloc(b->data, cap);
        if (!data)
            return -1;
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, text, len);
    b->len += len;
    return 0;
}

static int
keep_rows(void *cookie, const char *text, size_t len)
{
    return keep_text(cookie, text, len, 0);
}

static int
keep_invalid(void *cookie, const char *text, size_t len)
{
    return keep_text(cookie, text, len, 1);
}

static void
chunk_range(const struct spsim_sweep_options *opt, uint64_t j, uint64_t *begin, uint64_t *end)
{
    *begin = opt->begin + j * CHUNK_POINTS;
    *end = *begin + CHUNK_POINTS < opt->end ? *begin + CHUNK_POINTS : opt->end;
}

/* Run points [begin, end) with `opt` (no progress report: rank 0 reports the whole). */
static int
run_range(const struct spsim_sweep *sw, struct spsim_sweep_options opt, uint64_t begin,
          uint64_t end, bool header, struct spsim_sweep_stats *stats)
{
    struct spsim_error err = {0};
    opt.begin = begin;
    opt.end = end;
    opt.header = header;
    opt.progress = NULL;
    return spsim_sweep_run(sw, &opt, stats, &err) == SPSIM_OK ? EXIT_OK : cli_fail(&err);
}

/* A rank other than 0, rows: evaluate its chunks and send them in order. */
static int
rows_worker(const struct cli_mpi *m, const struct spsim_sweep *sw,
            const struct spsim_sweep_options *base, uint64_t nchunks)
{
    for (uint64_t j = (uint64_t)m->rank; j < nchunks; j += (uint64_t)m->size) {
        struct chunk c = {0};
        struct spsim_sweep_options opt;
        struct spsim_sweep_stats s;
        uint64_t begin, end;
        chunk_range(base, j, &begin, &end);
        opt = *base;
        opt.write = keep_rows;
        opt.invalid = base->invalid ? keep_invalid : NULL;
        opt.cookie = &c;
        int rc = run_range(sw, opt, begin, end, false, &s);
        uint64_t counts[6] = {s.evaluated, s.valid,   s.feasible,
                              s.written,   c.out.len, c.invalid.len};
        if (rc == EXIT_OK) {
            MPI_Send(counts, 6, MPI_UINT64_T, 0, TAG_COUNTS, MPI_COMM_WORLD);
            MPI_Send(c.out.data, (int)c.out.len, MPI_CHAR, 0, TAG_ROWS, MPI_COMM_WORLD);
            MPI_Send(c.invalid.data, (int)c.invalid.len, MPI_CHAR, 0, TAG_INVALID, MPI_COMM_WORLD);
        }
        free(c.out.data);
        free(c.invalid.data);
        if (rc != EXIT_OK)
            return rc;
    }
    return EXIT_OK;
}

static void
add_stats(struct spsim_sweep_stats *total, const uint64_t *counts)
{
    total->evaluated += counts[0];
    total->valid += counts[1];
    total->feasible += counts[2];
    total->written += counts[3];
}

/* Receive one chunk from `from` and pass its text on. */
static int
receive_chunk(int from, const struct spsim_sweep_options *opt, struct spsim_sweep_stats *total)
{
    uint64_t counts[6];
    MPI_Recv(counts, 6, MPI_UINT64_T, from, TAG_COUNTS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int rc = EXIT_OK;
    for (int part = 0; part < 2; part++) {
        size_t len = counts[4 + part];
        char *text = malloc(len ? len : 1);
        if (!text)
            return cli_error(EXIT_RUNTIME, "out of memory");
        MPI_Recv(text, (int)len, MPI_CHAR, from, part ? TAG_INVALID : TAG_ROWS, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        spsim_sweep_write_fn write = part ? opt->invalid : opt->write;
        if (len && rc == EXIT_OK && write(opt->cookie, text, len))
            rc = EXIT_RUNTIME; /* the stream says why when it is committed */
        free(text);
    }
    add_stats(total, counts);
    return rc;
}

/* Rank 0, rows: its own chunks written directly, the others' received, all in order. */
static int
rows_root(const struct cli_mpi *m, const struct spsim_sweep *sw,
          const struct spsim_sweep_options *base, uint64_t nchunks, struct spsim_sweep_stats *total)
{
    double t0 = MPI_Wtime();
    int rc = EXIT_OK;
    for (uint64_t j = 0; rc == EXIT_OK && j < nchunks; j++) {
        int owner = (int)(j % (uint64_t)m->size);
        if (owner == 0) {
            struct spsim_sweep_stats s;
            uint64_t begin, end;
            chunk_range(base, j, &begin, &end);
            rc = run_range(sw, *base, begin, end, base->header && j == 0, &s);
            uint64_t counts[4] = {s.evaluated, s.valid, s.feasible, s.written};
            add_stats(total, counts);
        } else {
            rc = receive_chunk(owner, base, total);
        }
        total->elapsed_s = MPI_Wtime() - t0;
        if (rc == EXIT_OK && base->progress && base->progress(base->cookie, total))
            rc = EXIT_RUNTIME;
    }
    return rc;
}

static int
compare_ranked(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b; /* {key, index} */
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Rank 0, --top: rank the gathered candidates and write the best K. */
static int
top_write(const struct spsim_sweep *sw, const struct spsim_sweep_options *opt,
          const uint64_t *candidates, int n, struct spsim_sweep_stats *total)
{
    uint64_t(*ranked)[2] = calloc((size_t)n + 1, sizeof(*ranked));
    struct spsim_result *r = malloc(sizeof(*r));
    size_t cap = SPSIM_ROW_MAX;
    char *row = malloc(cap);
    struct spsim_error err = {0};
    int rc = ranked && r && row ? EXIT_OK : cli_error(EXIT_RUNTIME, "out of memory");
    for (int i = 0; rc == EXIT_OK && i < n; i++) {
        if (spsim_sweep_evaluate(sw, candidates[i], r, &err) != SPSIM_OK)
            rc = cli_fail(&err);
        ranked[i][0] = spsim_sweep_rank_key(opt->by, r);
        ranked[i][1] = candidates[i];
    }
    if (rc == EXIT_OK)
        qsort(ranked, (size_t)n, sizeof(*ranked), compare_ranked);
    size_t len = rc == EXIT_OK && opt->format == SPSIM_ROW_CSV && opt->header
                     ? spsim_row_header(SPSIM_ROW_CSV, row, cap)
                     : 0;
    if (len && opt->write(opt->cookie, row, len))
        rc = EXIT_RUNTIME;
    for (uint64_t i = 0; rc == EXIT_OK && i < (uint64_t)n && i < opt->top_k; i++) {
        struct spsim_sweep_point pt;
        spsim_sweep_point_at(sw, ranked[i][1], &pt, NULL);
        spsim_sweep_evaluate(sw, ranked[i][1], r, NULL);
        size_t need = SPSIM_ROW_SIZE(strlen(pt.model_name), strlen(pt.hw_name));
        char *grown = need > cap ? realloc(row, need) : row;
        if (!grown) {
            rc = cli_error(EXIT_RUNTIME, "out of memory");
            break;
        }
        row = grown;
        cap = need > cap ? need : cap;
        len = spsim_row_format(opt->format, pt.model_name, pt.hw_name, r, row, cap);
        if (!len || opt->write(opt->cookie, row, len))
            rc = EXIT_RUNTIME;
        total->written++;
    }
    free(ranked);
    free(r);
    free(row);
    return rc;
}

/* --top K: each rank's best K of its shard, gathered on rank 0. */
static int
top_k(const struct cli_mpi *m, const struct spsim_sweep *sw, const struct spsim_sweep_options *base,
      struct spsim_sweep_stats *total)
{
    uint64_t begin, end, count = 0;
    uint64_t *best = calloc(base->top_k, sizeof(*best));
    if (!best)
        return cli_error(EXIT_RUNTIME, "out of memory");
    spsim_sweep_shard_range(base->end - base->begin, (uint64_t)m->rank, (uint64_t)m->size, &begin,
                            &end, NULL);
    struct spsim_sweep_options opt = *base;
    struct spsim_sweep_stats s = {0};
    opt.format = SPSIM_ROW_NONE;
    opt.top_index = best;
    opt.top_count = &count;
    opt.invalid = NULL;
    int rc = run_range(sw, opt, base->begin + begin, base->begin + end, false, &s);
    if (rc != EXIT_OK) {
        free(best);
        return rc;
    }
    int mine = (int)count, *counts = calloc((size_t)m->size, sizeof(int));
    int *offsets = calloc((size_t)m->size, sizeof(int));
    uint64_t sums[4] = {s.evaluated, s.valid, s.feasible, 0}, all[4];
    MPI_Reduce(sums, all, 4, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int n = 0;
    for (int i = 0; m->rank == 0 && i < m->size; i++) {
        offsets[i] = n;
        n += counts[i];
    }
    uint64_t *candidates = calloc((size_t)n + 1, sizeof(*candidates));
    MPI_Gatherv(best, mine, MPI_UINT64_T, candidates, counts, offsets, MPI_UINT64_T, 0,
                MPI_COMM_WORLD);
    if (m->rank == 0) {
        add_stats(total, all);
        rc = top_write(sw, base, candidates, n, total);
    }
    free(candidates);
    free(counts);
    free(offsets);
    free(best);
    return rc;
}

int
cli_mpi_sweep(const struct cli_mpi *m, const struct spsim_sweep *sw,
              const struct spsim_sweep_options *opt, struct spsim_sweep_stats *total)
{
    memset(total, 0, sizeof(*total));
    struct spsim_sweep_options base = *opt;
    base.end = opt->end ? opt->end : spsim_sweep_size(sw);
    total->points = base.end - base.begin;
    double t0 = MPI_Wtime();
    int rc;
    if (base.top_k)
        rc = top_k(m, sw, &base, total);
    else {
        uint64_t nchunks = (total->points + CHUNK_POINTS - 1) / CHUNK_POINTS;
        rc = m->rank == 0 ? rows_root(m, sw, &base, nchunks, total)
                          : rows_worker(m, sw, &base, nchunks);
    }
    total->elapsed_s = MPI_Wtime() - t0;
    return rc;
}

#else

/* Replace this process with `spsim-mpi sweep ARGS...` from the same directory. */
static int
exec_mpi_build(int argc, char **argv)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 16);
    char *slash = n > 0 ? memchr(self, '/', (size_t)n) : NULL;
    if (slash) {
        self[n] = '\0';
        strcpy(strrchr(self, '/') + 1, "spsim-mpi");
        char **args = calloc((size_t)argc + 2, sizeof(*args));
        if (args) {
            args[0] = self;
            memcpy(args + 1, argv, (size_t)argc * sizeof(*args)); /* "sweep", options */
            execv(self, args);
            free(args);
        }
    }
    return cli_error(EXIT_RUNTIME, "started by an MPI launcher, but this spsim has no MPI "
                                   "support and no spsim-mpi beside it (build with "
                                   "-Dmpi=enabled, or give each process --shard I/N)");
}

int
cli_mpi_begin(struct cli_mpi *m, int argc, char **argv)
{
    m->rank = 0;
    m->size = 1;
    m->active = false;
    return cli_mpi_launched() ? exec_mpi_build(argc, argv) : EXIT_OK;
}

int
cli_mpi_end(const struct cli_mpi *m, int rc)
{
    (void)m;
    return rc;
}

int
cli_mpi_sweep(const struct cli_mpi *m, const struct spsim_sweep *sw,
              const struct spsim_sweep_options *opt, struct spsim_sweep_stats *total)
{
    (void)m;
    (void)sw;
    (void)opt;
    (void)total;
    return cli_error(EXIT_RUNTIME, "this spsim was built without MPI");
}

#endif
