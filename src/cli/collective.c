/* `spsim collective`: one NCCL collective's time, algbw and busbw in nccl-tests' conventions. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "spsim/collective.h"

static const char collective_help[] =
    "Usage: spsim collective --op OP --gpus N [--nodes K] --bytes SIZES [--hw NAME|FILE]\n"
    "                        [--format table|json|csv] [-o FILE]\n"
    "\n"
    "Predict the time and bandwidth of one NCCL collective as nccl-tests reports it, so that the\n"
    "prediction can be held against nccl-tests output line by line.\n"
    "\n"
    "  --op OP        all_reduce, all_gather, reduce_scatter, send_recv or all_to_all\n"
    "  --gpus N       ranks in the communicator (2 or more)\n"
    "  --nodes K      nodes they span (default: as few as the hardware allows); a group larger\n"
    "                 than one NVLink domain runs hierarchically: NVLink inside, NICs across\n"
    "  --bytes SIZES  nccl-tests size convention (AllGather/ReduceScatter: the whole buffer, n\n"
    "                 times the per-rank part). One size, a list (8,1M,64M), a doubling range\n"
    "                 (8..1G), a range with a factor (1M..1G:x4) or a step (1M..100M:+10M).\n"
    "                 Suffixes K, M, G, T are powers of 1024, as in nccl-tests -b/-e\n"
    "  --hw NAME|FILE hardware profile (default dgx-a100-80g)\n"
    "  --format F     table (default, nccl-tests columns), json or csv\n"
    "  -o FILE        write to FILE atomically\n"
    "\n"
    "Model: time = base + steps·hop + wire bytes per rank / (busbw × eff(size)), ring steps n−1\n"
    "(AG, RS, all-to-all) or 2(n−1) (AR); algbw = size/time and busbw = algbw × 2(n−1)/n (AR),\n"
    "(n−1)/n (AG, RS, all-to-all), 1 (send/recv); GB = 1e9 bytes, as nccl-tests. Each size\n"
    "runs as the algorithm and protocol NCCL's tuner picks (Ring, Tree, NVLSTree, PAT across\n"
    "nodes; NVLS or Ring inside one), printed per row; a tree's α and NIC bytes are its own. A\n"
    "Ring inside one NVLink domain adds NCCL's ring-loop tails (S/n copied or reduce-copied at\n"
    "the GPU's HBM rate) beyond those its busbw figure holds (profile nvlink.ring_measured_on).\n"
    "Across nodes the protocol's share of the bandwidth (LL, LL128; NCCL's per-channel maxima),\n"
    "its latency beyond LL's (NCCL's tuning.cc table) and NVLSTree's pipeline fill are added.\n"
    "JSON: {\"rows\": [{\"size_bytes\", \"time_s\", \"algbw_GBps\", \"busbw_GBps\", "
    "\"algorithm\",\n"
    "\"protocol\", ...}]}; with one size the row's keys also appear at the top level.\n";

#define MAX_SIZES 4096

/* "a,b,c", "lo..hi", "lo..hi:xF", "lo..hi:+S" */
static int
parse_sizes(const char *text, uint64_t *sizes, size_t *n)
{
    char buf[256];
    if (strlen(text) >= sizeof(buf))
        return cli_error(EXIT_USAGE, "--bytes: %s is too long", CLI_Q(text));
    strcpy(buf, text);
    *n = 0;
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        char *dots = strstr(item, "..");
        uint64_t lo, hi, step = 0, factor = 2;
        if (!dots) {
            if (cli_parse_size(item, &lo) || *n >= MAX_SIZES)
                return cli_error(EXIT_USAGE, "--bytes: %s is not a size (e.g. 8, 64K, 1M, 2G)",
                                 CLI_Q(item));
            sizes[(*n)++] = lo;
            continue;
        }
        *dots = '\0';
        char *hi_text = dots + 2, *colon = strchr(hi_text, ':');
        if (colon) {
            *colon = '\0';
            const char *inc = colon + 1;
            if (*inc == 'x') {
                char *end = NULL;
                errno = 0;
                factor = strtoull(inc + 1, &end, 10);
                if (errno || *end || factor < 2 || factor > 1024)
                    return cli_error(EXIT_USAGE,
                                     "--bytes: %s is not a factor 'xF' with F in [2, 1024]",
                                     CLI_Q(inc));
            } else if (*inc != '+' || cli_parse_size(inc + 1, &step)) {
                return cli_error(EXIT_USAGE, "--bytes: %s is not 'xF' or '+SIZE'", CLI_Q(inc));
            }
        }
        if (cli_parse_size(item, &lo) || cli_parse_size(hi_text, &hi) || hi < lo)
            return cli_error(EXIT_USAGE,
                             "--bytes: '%s..%s' is not a range LO..HI of sizes with LO <= HI", item,
                             hi_text);
        for (uint64_t v = lo; v <= hi; v = step ? v + step : v * factor) {
            if (*n >= MAX_SIZES)
                return cli_error(EXIT_USAGE, "--bytes: more than %d sizes", MAX_SIZES);
            sizes[(*n)++] = v;
            if (v > (1ull << 50) / factor)
                break;
        }
    }
    if (*n == 0)
        return cli_error(EXIT_USAGE, "--bytes: no size given");
    return EXIT_OK;
}

static void
json_row(struct jw *w, const char *key, const struct spsim_collective_prediction *p)
{
    if (key)
        jw_begin_object(w, key);
    jw_u64(w, "size_bytes", p->size_bytes);
    jw_double(w, "time_s", p->time_s);
    jw_double(w, "latency_s", p->latency_s);
    jw_double(w, "algbw_GBps", p->algbw_GBps);
    jw_double(w, "busbw_GBps", p->busbw_GBps);
    jw_string(w, "algorithm", p->algorithm);
    jw_string(w, "protocol", p->protocol);
    if (key)
        jw_end_object(w);
}

struct collective_args {
    const char *hw_name, *output, *format;
    enum spsim_coll_op op;
    uint32_t gpus, nodes;
    uint64_t *sizes; /* MAX_SIZES */
    size_t nsizes;
};

static int
parse_option(void *ctx, int opt, const char *arg, const char *current)
{
    struct collective_args *a = ctx;
    (void)current;
    switch (opt) {
    case 'p':
        return cli_parse_coll_op("--op", arg, &a->op);
    case 'g':
        return cli_parse_u32("--gpus", arg, 2, 1u << 24, &a->gpus);
    case 'n':
        return cli_parse_u32("--nodes", arg, 1, 1u << 24, &a->nodes);
    case 'b':
        return parse_sizes(arg, a->sizes, &a->nsizes);
    case 'w':
        a->hw_name = arg;
        return EXIT_OK;
    case 'o':
        a->output = arg;
        return EXIT_OK;
    default: /* --format */
        a->format = arg;
        if (strcmp(arg, "table") && strcmp(arg, "json") && strcmp(arg, "csv"))
            return cli_usage_error("collective", "--format: %s is not one of table, json, csv",
                                   CLI_Q(arg));
        return EXIT_OK;
    }
}

/* @return EXIT_OK, an exit code, or -1 after --help */
static int
parse(int argc, char **argv, struct collective_args *a)
{
    static const struct option own[] = {
        {"op", required_argument, NULL, 'p'},    {"gpus", required_argument, NULL, 'g'},
        {"nodes", required_argument, NULL, 'n'}, {"bytes", required_argument, NULL, 'b'},
        {"hw", required_argument, NULL, 'w'},    {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'}};
    const struct cli_command c = {.name = "collective",
                                  .help = collective_help,
                                  .own = own,
                                  .nown = CLI_ARRAY_LENGTH(own),
                                  .handle = parse_option,
                                  .ctx = a};
    int rc = cli_parse_options(&c, argc, argv);
    if (rc == EXIT_OK && (a->op == SPSIM_COLL_COUNT || a->gpus == 0 || a->nsizes == 0))
        return cli_usage_error("collective", "--op, --gpus and --bytes are required");
    return rc;
}

static void
write_json(FILE *f, const struct collective_args *a, const char *hw,
           const struct spsim_collective_prediction *rows)
{
    const struct spsim_collective_prediction *r0 = &rows[0];
    struct jw w;
    jw_init(&w, f, true);
    jw_begin_object(&w, NULL);
    jw_string(&w, "hardware", hw);
    jw_string(&w, "op", spsim_coll_op_name(a->op));
    jw_u64(&w, "gpus", r0->gpus);
    jw_u64(&w, "nodes", r0->nodes);
    jw_u64(&w, "gpus_per_domain", r0->gpus_per_domain);
    jw_string(&w, "tier", spsim_tier_name(r0->tier));
    jw_bool(&w, "hierarchical", r0->tier == SPSIM_TIER_HIERARCHICAL);
    if (a->nsizes == 1)
        json_row(&w, NULL, r0);
    jw_begin_array(&w, "rows");
    for (size_t i = 0; i < a->nsizes; i++) {
        jw_begin_object(&w, NULL);
        json_row(&w, NULL, &rows[i]);
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_end_object(&w);
    jw_finish(&w);
}

static void
write_csv(FILE *f, const struct collective_args *a, const struct spsim_collective_prediction *rows)
{
    fputs("op,gpus,nodes,tier,size_bytes,time_s,latency_s,algbw_GBps,busbw_GBps,algorithm,"
          "protocol\n",
          f);
    for (size_t i = 0; i < a->nsizes; i++) {
        char t[32], l[32], al[32], b[32];
        spsim_format_double(rows[i].time_s, t);
        spsim_format_double(rows[i].latency_s, l);
        spsim_format_double(rows[i].algbw_GBps, al);
        spsim_format_double(rows[i].busbw_GBps, b);
        fprintf(f, "%s,%u,%u,%s,%llu,%s,%s,%s,%s,%s,%s\n", spsim_coll_op_name(a->op), rows[i].gpus,
                rows[i].nodes, spsim_tier_name(rows[i].tier),
                (unsigned long long)rows[i].size_bytes, t, l, al, b, rows[i].algorithm,
                rows[i].protocol);
    }
}

/* nccl-tests' own table layout. */
static void
write_table(FILE *f, const struct collective_args *a, const char *hw,
            const struct spsim_collective_prediction *rows)
{
    const struct spsim_collective_prediction *r0 = &rows[0];
    fprintf(f, "# spsim collective: %s, %u GPUs on %u node(s) of %s, %s%s\n",
            spsim_coll_op_name(a->op), r0->gpus, r0->nodes, hw, spsim_tier_name(r0->tier),
            r0->tier == SPSIM_TIER_HIERARCHICAL
                ? " (NVLink inside each domain, NICs across domains)"
                : "");
    fprintf(f, "#%12s %12s %10s %8s %8s  %s\n", "size", "count(fp32)", "time", "algbw", "busbw",
            "NCCL algorithm/protocol");
    fprintf(f, "#%12s %12s %10s %8s %8s\n", "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)");
    for (size_t i = 0; i < a->nsizes; i++) {
        uint64_t count = rows[i].size_bytes / 4;
        if (a->op == SPSIM_COLL_ALL_GATHER || a->op == SPSIM_COLL_REDUCE_SCATTER ||
            a->op == SPSIM_COLL_ALL_TO_ALL)
            count /= a->gpus; /* nccl-tests prints the per-rank (per-peer) count */
        fprintf(f, " %12llu %12llu %10.2f %8.2f %8.2f  %s%s%s\n",
                (unsigned long long)rows[i].size_bytes, (unsigned long long)count,
                rows[i].time_s * 1e6, rows[i].algbw_GBps, rows[i].busbw_GBps, rows[i].algorithm,
                rows[i].protocol[0] ? "/" : "", rows[i].protocol);
    }
}

int
cmd_collective(int argc, char **argv)
{
    static uint64_t sizes[MAX_SIZES];
    static struct spsim_collective_prediction rows[MAX_SIZES];
    struct collective_args a = {"dgx-a100-80g", NULL, "table", SPSIM_COLL_COUNT, 0, 0, sizes, 0};
    int rc = parse(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    struct spsim_hardware *hw = NULL;
    if ((rc = cli_load_hardware(a.hw_name, &hw)))
        return rc;
    struct spsim_error err = {0};
    for (size_t i = 0; i < a.nsizes; i++) {
        if (spsim_collective_predict(hw, a.op, a.gpus, a.nodes, sizes[i], &rows[i], &err)) {
            spsim_hardware_destroy(hw);
            return cli_error(err.code == SPSIM_EINVAL ? EXIT_USAGE : EXIT_RUNTIME, "%s",
                             err.message);
        }
    }
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    struct cli_output out;
    if ((rc = cli_output_open(&out, a.output)) == EXIT_OK) {
        if (strcmp(a.format, "json") == 0)
            write_json(out.stream, &a, info.name, rows);
        else if (strcmp(a.format, "csv") == 0)
            write_csv(out.stream, &a, rows);
        else
            write_table(out.stream, &a, info.name, rows);
        rc = cli_output_close(&out);
    }
    spsim_hardware_destroy(hw);
    return rc;
}
