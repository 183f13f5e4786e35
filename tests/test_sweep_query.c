/*
 * `spsim sweep` rows against `spsim query --format json`, through the real command: random
 * rows of a sweep over three models, four machines and every switch are queried one by one
 * with the configuration their columns name, and every column must equal the JSON field of
 * the same path (integers exactly, doubles to the bit, strings and booleans as text).
 * argv[1] is the spsim executable (tests/meson.build).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"

static const char *spsim;

/* Run a command and return its standard output (the caller frees it). */
static char *
capture(const char *command)
{
    FILE *p = popen(command, "r");
    ck_assert_msg(p != NULL, "%s", command);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    for (size_t n; (n = fread(out + len, 1, cap - len - 1, p)) > 0;) {
        len += n;
        if (cap - len < 4096)
            out = realloc(out, cap *= 2);
    }
    out[len] = '\0';
    ck_assert_msg(pclose(p) == 0, "'%s' failed", command);
    return out;
}

/* Split a CSV line in place (profile names hold no comma or quote). */
static int
split(char *line, char **cells, int max)
{
    int n = 0;
    for (char *p = line; n < max;) {
        cells[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    return n;
}

static int
column(char **names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    ck_abort_msg("no column '%s'", name);
    return -1;
}

/* The JSON value at a field's path ("memory.activation_modes_bytes.tp"). */
static const cJSON *
at_path(const cJSON *root, const char *path)
{
    char part[128];
    const cJSON *v = root;
    while (*path) {
        size_t n = strcspn(path, ".");
        snprintf(part, sizeof(part), "%.*s", (int)n, path);
        v = cJSON_GetObjectItemCaseSensitive(v, part);
        ck_assert_msg(v != NULL, "no JSON member '%s'", part);
        path += n + (path[n] == '.');
    }
    return v;
}

static void
compare_cell(const struct spsim_field *f, const cJSON *v, const char *cell)
{
    switch (f->type) {
    case SPSIM_FIELD_ENUM:
        ck_assert_msg(cJSON_IsString(v) && strcmp(v->valuestring, cell) == 0, "%s: %s", f->path,
                      cell);
        break;
    case SPSIM_FIELD_BOOL:
        ck_assert_msg(cJSON_IsBool(v) && strcmp(cJSON_IsTrue(v) ? "true" : "false", cell) == 0,
                      "%s: %s", f->path, cell);
        break;
    case SPSIM_FIELD_F64: {
        if (cJSON_IsNull(v)) { /* JSON's NaN and infinities */
            ck_assert_msg(strpbrk(cell, "ni"), "%s: %s vs null", f->path, cell);
            break;
        }
        double a = strtod(cell, NULL), b = v->valuedouble;
        ck_assert_msg(cJSON_IsNumber(v) && memcmp(&a, &b, sizeof(a)) == 0, "%s: %s vs %.17g",
                      f->path, cell, b);
        break;
    }
    default: {
        /* Integers: cJSON holds them as doubles, exact below 2^53. */
        double b = v->valuedouble;
        long long a = strtoll(cell, NULL, 10);
        ck_assert_msg(cJSON_IsNumber(v) && b < 9007199254740992.0 && (double)a == b,
                      "%s: %s vs %.17g", f->path, cell, b);
    }
    }
}

static const char *
on_off(const char *boolean, const char *on, const char *off)
{
    return strcmp(boolean, "true") == 0 ? on : off;
}

/* The query options of a row's context-parallel and sharding cells. */
static void
cp_zero_options(char **cells, char **names, int ncols, char *out, size_t cap)
{
#define CELL(name) cells[column(names, ncols, name)]
    snprintf(
        out, cap, " --cp %s --cp-comm-type %s --zero %s %s %s %s %s", CELL("cp"),
        CELL("cp_comm_type"), CELL("zero"),
        on_off(CELL("grad_reduce_in_fp32"), "--grad-reduce-in-fp32", "--grad-reduce-in-bf16"),
        on_off(CELL("overlap_param_gather"), "--overlap-param-gather", "--no-overlap-param-gather"),
        on_off(CELL("tp_comm_overlap"), "--tp-comm-overlap", "--no-tp-comm-overlap"),
        on_off(CELL("no_overlap_p2p"), "--no-overlap-p2p-communication",
               "--overlap-p2p-communication"));
#undef CELL
}

/* The query options that give a row's recompute modules, method, layer count and offload. */
static void
recompute_options(char **cells, char **names, int ncols, char *out, size_t cap)
{
    const char *mods = cells[column(names, ncols, "recompute_modules")];
    snprintf(out, cap, "%s%s --recompute-method %s --recompute-layers %s --offload-layers %s",
             strcmp(mods, "none") ? "--recompute-modules " : "", strcmp(mods, "none") ? mods : "",
             cells[column(names, ncols, "recompute_method")],
             cells[column(names, ncols, "recompute_layers")],
             cells[column(names, ncols, "offload_layers")]);
}

/* `picks` random rows of the sweep's CSV, each against the query of its configuration. */
static void
rows_equal_queries(const char *sweep, size_t min_rows, int picks)
{
    char command[8192], extra[512];
    char *csv = capture(sweep);
    /* Index the lines. */
    size_t nlines = 0;
    char **lines = malloc(sizeof(*lines) * (strlen(csv) / 64 + 2));
    for (char *p = csv; *p; nlines++) {
        lines[nlines] = p;
        p = strchr(p, '\n');
        *p++ = '\0';
    }
    ck_assert_uint_gt(nlines, min_rows);
    char *names[256];
    int ncols = split(lines[0], names, 256);
    const struct spsim_field *fields;
    size_t nfields = spsim_result_fields(&fields);
    ck_assert_int_eq(ncols, (int)nfields + 2);
    uint64_t state = 12345;
    for (int pick = 0; pick < picks; pick++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull; /* Knuth's MMIX LCG */
        char *cells[256];
        size_t row = 1 + (state >> 33) % (nlines - 1);
        char *line = strdup(lines[row]); /* split() cuts it, and a row may be picked twice */
        ck_assert_int_eq(split(line, cells, 256), ncols);
#define CELL(name) cells[column(names, ncols, name)]
        recompute_options(cells, names, ncols, extra, sizeof(extra));
        size_t used = strlen(extra);
        cp_zero_options(cells, names, ncols, extra + used, sizeof(extra) - used);
        snprintf(command, sizeof(command),
                 "%s query --format json --model %s --hw %s --tp %s --pp %s --dp %s --vpp %s %s "
                 "--recompute %s --mbs %s --gbs %s --seq %s %s %s %s --dtype %s %s",
                 spsim, CELL("model"), CELL("hw"), CELL("tp"), CELL("pp"), CELL("dp"), CELL("vpp"),
                 on_off(CELL("sp"), "--sp", "--no-sp"), CELL("recompute"), CELL("mbs"), CELL("gbs"),
                 CELL("seq"), on_off(CELL("flash_attn"), "--flash-attn", "--no-flash-attn"),
                 on_off(CELL("distributed_optimizer"), "--distributed-optimizer",
                        "--no-distributed-optimizer"),
                 on_off(CELL("overlap_grad_reduce"), "--overlap-grad-reduce",
                        "--no-overlap-grad-reduce"),
                 CELL("dtype"), extra);
        char *json = capture(command);
        cJSON *root = cJSON_Parse(json);
        ck_assert_msg(root != NULL, "%s", command);
        ck_assert_str_eq(cJSON_GetObjectItem(root, "model")->valuestring, cells[0]);
        ck_assert_str_eq(cJSON_GetObjectItem(root, "hardware")->valuestring, cells[1]);
        for (size_t i = 0; i < nfields; i++)
            compare_cell(&fields[i], at_path(root, fields[i].path), cells[2 + i]);
        cJSON_Delete(root);
        free(json);
        free(line);
    }
    free(lines);
    free(csv);
}

START_TEST(rows_equal_query_json)
{
    char command[8192];
    snprintf(command, sizeof(command),
             "%s sweep --quiet --spec %s/examples/sweeps/models-hardware.json "
             "--flash-attn model,off --overlap-grad-reduce off,on --seq 2048,4096 --vpp 1,2 "
             "--tp-comm-overlap off,on --overlap-p2p-communication on,off",
             spsim, getenv("SPSIM_DATA_DIR"));
    rows_equal_queries(command, 1000, 40);
}
END_TEST

START_TEST(recompute_and_offload_rows_equal_query_json)
{
    /* The fine-grained recompute and offload axes: every method, module set and offload. */
    char command[8192];
    snprintf(command, sizeof(command),
             "%s sweep --quiet --model llama3-8b,gpt3-175b --hw dgx-h100,gb200-nvl72 --tp 1,8 "
             "--pp 1,2 --vpp 1,2 --sp on,off --recompute none,selective,full "
             "--recompute-modules default,mlp,core_attn+layernorm,layernorm+mlp+core_attn "
             "--recompute-method default,uniform,block --recompute-layers 0,1,3 "
             "--offload-layers 0,1,7 --seq 2048 --gbs 16",
             spsim);
    rows_equal_queries(command, 200, 40);
}
END_TEST

/* Context parallelism and sharding: the cp axes key the layer cache, the rest the composition. */
START_TEST(cp_zero_rows_equal_query_json)
{
    char command[8192];
    snprintf(command, sizeof(command),
             "%s sweep --quiet --model llama3-8b,llama3-70b --hw dgx-h100,dgx-a100-80g "
             "--tp 1,2,4,8 --pp 1,2 --vpp 1 --gpus 64 --cp 1,2,4 "
             "--cp-comm-type p2p,all_gather,a2a --zero 0..3 --sp on,off "
             "--recompute none,selective --gbs 64 --seq 8192 --overlap-grad-reduce on,off "
             "--overlap-param-gather on,off --grad-reduce-in-fp32 on,off",
             spsim);
    rows_equal_queries(command, 1000, 40);
}
END_TEST

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SPSIM\n", argv[0]);
        return 2;
    }
    spsim = testutil_spsim_command(argv[1]);
    Suite *s = suite_create("sweep-query");
    TCase *tc = tcase_create("rows");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, rows_equal_query_json);
    tcase_add_test(tc, recompute_and_offload_rows_equal_query_json);
    tcase_add_test(tc, cp_zero_rows_equal_query_json);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
