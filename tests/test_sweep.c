/*
 * The sweep engine: axis syntax and spec files (errors name the axis or field), exact shards,
 * the same output for any thread count, and rows equal to spsim_evaluate() of the
 * configuration they name. The reference enumeration is written here as plain nested loops
 * over the axes in their documented order (include/spsim/sweep.h), independent of the
 * engine's index decoding, and every configuration is evaluated with spsim_evaluate().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "sweep/sweep_internal.h"
#include "testutil.h"

/* ---- axis syntax ---------------------------------------------------------------------- */

static const struct {
    enum spsim_sweep_axis axis;
    const char *text;
    uint32_t n;
    int64_t v[8];
} good_axes[] = {
    {SPSIM_AXIS_TP, "1,2,4,8", 4, {1, 2, 4, 8}},
    {SPSIM_AXIS_PP, "1..5", 5, {1, 2, 3, 4, 5}},
    {SPSIM_AXIS_PP, "2..10:3", 3, {2, 5, 8}}, /* step 3 from 2, stops at 10 */
    {SPSIM_AXIS_TP, "1..64:*2", 7, {1, 2, 4, 8, 16, 32, 64}},
    {SPSIM_AXIS_MBS, " 1 , 2 ", 2, {1, 2}},   /* blanks around items */
    {SPSIM_AXIS_VPP, "3,1..2", 3, {3, 1, 2}}, /* lists keep their order */
    {SPSIM_AXIS_SP, "on,off", 2, {1, 0}},
    {SPSIM_AXIS_SP, "true", 1, {1}},
    {SPSIM_AXIS_RECOMPUTE, "full,none", 2, {2, 0}},         /* enum spsim_recompute */
    {SPSIM_AXIS_FLASH_ATTN, "model,on,off", 3, {-1, 1, 0}}, /* struct spsim_parallel.flash_attn */
    {SPSIM_AXIS_DTYPE, "fp8", 1, {2}},                      /* enum spsim_dtype */
    {SPSIM_AXIS_GBS, "4294967296", 1, {4294967296}},        /* the largest gbs, 2^32 */
    {SPSIM_AXIS_GPUS, "8..64:*4", 2, {8, 32}},              /* 8, 32; 128 is past 64 */
};

START_TEST(axis_syntax)
{
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
    int rc = spsim_sweep_spec_parse(spec, good_axes[_i].axis, good_axes[_i].text, NULL, &err);
    ck_assert_msg(rc == SPSIM_OK, "'%s': %s", good_axes[_i].text, err.message);
    const struct spsim_axis_values *a = &spec->axis[good_axes[_i].axis];
    ck_assert_uint_eq(a->n, good_axes[_i].n);
    for (uint32_t k = 0; k < a->n; k++)
        ck_assert_int_eq(a->v[k], good_axes[_i].v[k]);
    spsim_sweep_spec_destroy(spec);
}
END_TEST

static const struct {
    enum spsim_sweep_axis axis;
    const char *text;
    const char *message; /* the error names the option and the item */
} bad_axes[] = {
    {SPSIM_AXIS_TP, "0", "--x: '0' is not an integer or range of integers in [1, 65536]"},
    {SPSIM_AXIS_TP, "1..x", "--x: '1..x' is not a range A..B"},
    {SPSIM_AXIS_TP, "8..1", "--x: '8..1' is a range whose end is below its start"},
    {SPSIM_AXIS_TP, "1,1", "--x: the value 1 appears twice in '1,1'"},
    {SPSIM_AXIS_TP, "1..4,2", "--x: the value 2 appears twice in '1..4,2'"},
    {SPSIM_AXIS_SP, "on,true", "--x: the value 1 appears twice in 'on,true'"},
    {SPSIM_AXIS_TP, "", "--x: empty value in ''"},
    {SPSIM_AXIS_TP, "1,,2", "--x: empty value in '1,,2'"},
    {SPSIM_AXIS_PP, "1..4:0", "--x: '1..4:0' has a bad step"},
    {SPSIM_AXIS_PP, "1..4:*1", "--x: '1..4:*1' has a bad step"},
    {SPSIM_AXIS_PP, "4x", "--x: '4x' is not an integer or a range"},
    {SPSIM_AXIS_SEQ, "-5", "--x: '-5' is not an integer"},
    {SPSIM_AXIS_SEQ, "16777217",
     "--x: '16777217' is not an integer or range of integers in [1, 16777216]"},
    {SPSIM_AXIS_GBS, "4294967297", "in [1, 4294967296]"},
    {SPSIM_AXIS_TP, "99999999999999999999999", "'99999999999999999999999' is not an integer"},
    {SPSIM_AXIS_GBS, "1..2000000", "makes the axis longer than 1048576 values"},
    {SPSIM_AXIS_SP, "maybe", "--x: 'maybe' is not on or off"},
    {SPSIM_AXIS_RECOMPUTE, "some", "--x: 'some' is not one of none, selective, full"},
    {SPSIM_AXIS_DTYPE, "fp4", "--x: 'fp4' is not one of bf16, fp16, fp8"},
    {SPSIM_AXIS_MODEL, "a,a", "--x: 'a' appears twice"},
};

START_TEST(axis_errors)
{
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
    ck_assert_int_eq(spsim_sweep_spec_parse(spec, SPSIM_AXIS_TP, "4", NULL, &err), SPSIM_OK);
    int rc = spsim_sweep_spec_parse(spec, bad_axes[_i].axis, bad_axes[_i].text, "--x", &err);
    ck_assert_int_eq(rc, SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, bad_axes[_i].message), "'%s' gave '%s'", bad_axes[_i].text,
                  err.message);
    /* A failed parse leaves the axis as it was. */
    if (bad_axes[_i].axis == SPSIM_AXIS_TP)
        ck_assert_int_eq(spec->axis[SPSIM_AXIS_TP].v[0], 4);
    spsim_sweep_spec_destroy(spec);
}
END_TEST

/* ---- spec files ----------------------------------------------------------------------- */

static const struct {
    const char *json;
    int code;
    const char *message; /* after "PATH: " */
} bad_specs[] = {
    {"{\"tp\": [1, 2", SPSIM_EPARSE, "malformed JSON"},
    {"[1]", SPSIM_EFIELD, "the document must be a JSON object"},
    {"{\"tp\": [1, 0]}", SPSIM_EFIELD, "field 'tp': '0' is not an integer"},
    {"{\"tpp\": [1]}", SPSIM_EFIELD, "field 'tpp': unknown key"},
    {"{\"flash-attn\": \"on\"}", SPSIM_EFIELD, "field 'flash-attn': unknown key"},
    {"{\"tp\": 1.5}", SPSIM_EFIELD, "field 'tp': 1.5 is not a non-negative integer"},
    {"{\"tp\": -2}", SPSIM_EFIELD, "field 'tp': -2 is out of range [1, 65536]"},
    {"{\"tp\": 1e20}", SPSIM_EFIELD, "field 'tp': 1e+20 is out of range [1, 65536]"},
    {"{\"gbs\": [1, 1e300]}", SPSIM_EFIELD, "field 'gbs': 1e+300 is out of range [1, 4294967296]"},
    {"{\"sp\": 1e20}", SPSIM_EFIELD, "field 'sp': 1e+20 is out of range"},
    {"{\"tp\": []}", SPSIM_EFIELD, "field 'tp': must not be an empty array"},
    {"{\"tp\": [[1]]}", SPSIM_EFIELD, "field 'tp': arrays must not be nested"},
    {"{\"tp\": {\"a\": 1}}", SPSIM_EFIELD, "field 'tp': must be a number, a string"},
    {"{\"tp\": null}", SPSIM_EFIELD, "field 'tp': must be a number, a string"},
    {"{\"sp\": \"maybe\"}", SPSIM_EFIELD, "field 'sp': 'maybe' is not on or off"},
    {"{\"pp\": \"1..8:0\"}", SPSIM_EFIELD, "field 'pp': '1..8:0' has a bad step"},
    {"{\"tp\": 1, \"tp\": 2}", SPSIM_EFIELD, "field 'tp': appears twice"},
};

static char *
write_temp(const char *text)
{
    char *path = strdup("/tmp/spsim-test-spec-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

START_TEST(spec_errors)
{
    char *path = write_temp(bad_specs[_i].json);
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
    int rc = spsim_sweep_spec_load(spec, path, &err);
    ck_assert_int_eq(rc, bad_specs[_i].code);
    ck_assert_msg(strncmp(err.message, path, strlen(path)) == 0, "no path in '%s'", err.message);
    ck_assert_msg(strstr(err.message, bad_specs[_i].message), "%s gave '%s'", bad_specs[_i].json,
                  err.message);
    spsim_sweep_spec_destroy(spec);
    unlink(path);
    free(path);
}
END_TEST

START_TEST(shipped_specs_load)
{
    static const char *const names[] = {"gpt3-175b.json", "gpt3-175b-dense.json",
                                        "llama3-70b-h100.json", "models-hardware.json",
                                        "llama3-70b-fresh.json"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/examples/sweeps/%s", getenv("SPSIM_DATA_DIR"), names[i]);
        struct spsim_sweep_spec *spec = NULL;
        struct spsim_sweep *sw = NULL;
        struct spsim_error err = {0};
        ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
        ck_assert_msg(spsim_sweep_spec_load(spec, path, &err) == SPSIM_OK, "%s", err.message);
        ck_assert_msg(spsim_sweep_create(spec, &sw, &err) == SPSIM_OK, "%s", err.message);
        ck_assert_uint_gt(spsim_sweep_size(sw), 0);
        spsim_sweep_destroy(sw);
        spsim_sweep_spec_destroy(spec);
    }
}
END_TEST

START_TEST(create_errors)
{
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_sweep *sw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
    ck_assert_int_eq(spsim_sweep_create(spec, &sw, &err), SPSIM_EINVAL);
    ck_assert_str_eq(err.message, "sweep: axis 'model' is required");
    spsim_sweep_spec_parse(spec, SPSIM_AXIS_MODEL, "no-such-model", NULL, &err);
    spsim_sweep_spec_parse(spec, SPSIM_AXIS_HW, "dgx-h100", NULL, &err);
    ck_assert_int_eq(spsim_sweep_create(spec, &sw, &err), SPSIM_EIO);
    ck_assert_msg(strstr(err.message, "no model profile named 'no-such-model'"), "%s", err.message);
    spsim_sweep_spec_parse(spec, SPSIM_AXIS_MODEL, "llama3-8b", NULL, &err);
    spsim_sweep_spec_parse(spec, SPSIM_AXIS_DP, "1,2", NULL, &err);
    spsim_sweep_spec_parse(spec, SPSIM_AXIS_GPUS, "8", NULL, &err);
    ck_assert_int_eq(spsim_sweep_create(spec, &sw, &err), SPSIM_EINVAL);
    ck_assert_msg(strstr(err.message, "'dp' and 'gpus' exclude each other"), "%s", err.message);
    spsim_sweep_spec_destroy(spec);
}
END_TEST

/* ---- the reference enumeration ---------------------------------------------------------- */

/* A mixed space: two models, two machines, the gpus axis, every switch. Values as text in the
 * axis syntax, and the same values as numbers for the reference loops. */
static const char *const space_text[SPSIM_AXIS_COUNT] = {
    [SPSIM_AXIS_MODEL] = "llama3-8b,paper-22b",
    [SPSIM_AXIS_HW] = "dgx-a100-80g,gb200-nvl72",
    [SPSIM_AXIS_TP] = "1,2,8",
    [SPSIM_AXIS_PP] = "1..4",
    [SPSIM_AXIS_GPUS] = "16,24",
    [SPSIM_AXIS_VPP] = "1,2",
    [SPSIM_AXIS_SP] = "off,on",
    [SPSIM_AXIS_RECOMPUTE] = "none,full",
    [SPSIM_AXIS_MBS] = "1,2",
    [SPSIM_AXIS_GBS] = "48",
    [SPSIM_AXIS_SEQ] = "2048",
    [SPSIM_AXIS_FLASH_ATTN] = "model,off",
    [SPSIM_AXIS_DISTRIBUTED_OPTIMIZER] = "on,off",
    [SPSIM_AXIS_OVERLAP_GRAD_REDUCE] = "off,on",
};

static struct spsim_sweep *
make_sweep(const char *const *text)
{
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_sweep *sw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
    for (int a = 0; a < SPSIM_AXIS_COUNT; a++)
        if (text[a])
            ck_assert_msg(spsim_sweep_spec_parse(spec, a, text[a], NULL, &err) == SPSIM_OK, "%s",
                          err.message);
    ck_assert_msg(spsim_sweep_create(spec, &sw, &err) == SPSIM_OK, "%s", err.message);
    spsim_sweep_spec_destroy(spec);
    return sw;
}

/* One valid configuration of the reference enumeration. */
struct ref_row {
    uint64_t index;
    const char *model, *hw;
    struct spsim_result r;
};

struct reference {
    struct ref_row *rows;
    size_t n, cap;
    uint64_t points;
};

static void
ref_add(struct reference *ref, uint64_t index, const char *model, const char *hw,
        const struct spsim_result *r)
{
    if (ref->n == ref->cap) {
        ref->cap = ref->cap ? 2 * ref->cap : 256;
        ref->rows = realloc(ref->rows, ref->cap * sizeof(*ref->rows));
        ck_assert_ptr_nonnull(ref->rows);
    }
    ref->rows[ref->n++] = (struct ref_row){index, model, hw, *r};
}

/* The space of space_text by nested loops in the documented axis order, each point checked
 * and evaluated with spsim_evaluate(). */
static struct reference
reference_rows(void)
{
    static const char *const models[] = {"llama3-8b", "paper-22b"};
    static const char *const hws[] = {"dgx-a100-80g", "gb200-nvl72"};
    static const uint32_t tps[] = {1, 2, 8}, gpus[] = {16, 24}, mbs[] = {1, 2};
    static const int flash[] = {-1, 0};
    struct reference ref = {0};
    for (int mi = 0; mi < 2; mi++) {
        struct spsim_model *m = testutil_model_named(models[mi]);
        for (int hi = 0; hi < 2; hi++) {
            struct spsim_hardware *hw = testutil_hardware(hws[hi]);
            for (int t = 0; t < 3; t++)
                for (uint32_t pp = 1; pp <= 4; pp++)
                    for (int g = 0; g < 2; g++)
                        for (uint32_t vpp = 1; vpp <= 2; vpp++)
                            for (int sp = 0; sp < 2; sp++)
                                for (int rec = 0; rec < 2; rec++)
                                    for (int b = 0; b < 2; b++)
                                        for (int f = 0; f < 2; f++)
                                            for (int dist = 1; dist >= 0; dist--)
                                                for (int over = 0; over < 2; over++) {
                                                    struct spsim_parallel p;
                                                    spsim_parallel_defaults(&p);
                                                    p.tp = tps[t];
                                                    p.pp = pp;
                                                    p.dp = gpus[g] % (tps[t] * pp) == 0
                                                               ? gpus[g] / (tps[t] * pp)
                                                               : 0;
                                                    p.vpp = vpp;
                                                    p.sp = sp;
                                                    p.recompute = rec ? SPSIM_RECOMPUTE_FULL
                                                                      : SPSIM_RECOMPUTE_NONE;
                                                    p.mbs = mbs[b];
                                                    p.gbs = 48;
                                                    p.seq = 2048;
                                                    p.flash_attn = flash[f];
                                                    p.distributed_optimizer = dist;
                                                    p.overlap_grad_reduce = over;
                                                    struct spsim_result r;
                                                    /* Shipped profiles are named as their files. */
                                                    if (p.dp && spsim_evaluate(m, hw, &p, &r,
                                                                               NULL) == SPSIM_OK)
                                                        ref_add(&ref, ref.points, models[mi],
                                                                hws[hi], &r);
                                                    ref.points++;
                                                }
            spsim_hardware_destroy(hw);
        }
        spsim_model_destroy(m);
    }
    return ref;
}

/* ---- running into memory ------------------------------------------------------------- */

static int
append(void *cookie, const char *text, size_t len)
{
    struct spsim_text *b = cookie;
    ck_assert_int_eq(spsim_text_reserve(b, len + 1), SPSIM_OK);
    memcpy(b->s + b->len, text, len);
    b->len += len;
    b->s[b->len] = '\0';
    return 0;
}

static struct spsim_text
run_to_memory(const struct spsim_sweep *sw, struct spsim_sweep_options *opt,
              struct spsim_sweep_stats *stats)
{
    struct spsim_text out = {0};
    struct spsim_error err = {0};
    append(&out, "", 0);
    opt->write = append;
    opt->cookie = &out;
    ck_assert_msg(spsim_sweep_run(sw, opt, stats, &err) == SPSIM_OK, "%s", err.message);
    return out;
}

static struct spsim_text
run_csv(const struct spsim_sweep *sw, unsigned threads, uint64_t begin, uint64_t end, bool header)
{
    struct spsim_sweep_options opt;
    spsim_sweep_options_defaults(&opt);
    opt.threads = threads;
    opt.begin = begin;
    opt.end = end;
    opt.header = header;
    return run_to_memory(sw, &opt, NULL);
}

/* The text of the row the engine should write for a reference row. */
static void
expected_row(enum spsim_row_format format, const struct ref_row *row, char *buf)
{
    ck_assert_uint_gt(spsim_row_format(format, row->model, row->hw, &row->r, buf, SPSIM_ROW_MAX),
                      0);
}

/* The engine's rows in `format` against the reference, in order. */
static void
check_rows(const struct spsim_sweep *sw, const struct reference *ref, enum spsim_row_format format)
{
    struct spsim_sweep_stats stats;
    struct spsim_sweep_options opt;
    spsim_sweep_options_defaults(&opt);
    opt.threads = 2;
    opt.format = format;
    struct spsim_text out = run_to_memory(sw, &opt, &stats);
    ck_assert_uint_eq(stats.valid, ref->n);
    ck_assert_uint_eq(stats.written, ref->n);
    char *line = out.s, expect[SPSIM_ROW_MAX];
    if (format == SPSIM_ROW_CSV) {
        char header[SPSIM_ROW_MAX];
        spsim_row_header(SPSIM_ROW_CSV, header, sizeof(header));
        ck_assert_int_eq(strncmp(line, header, strlen(header)), 0);
        line += strlen(header);
    }
    for (size_t k = 0; k < ref->n; k++) {
        expected_row(format, &ref->rows[k], expect);
        /* Check only on failure: it reports each passing assertion through a pipe. */
        if (strncmp(line, expect, strlen(expect)) != 0)
            ck_abort_msg("row %zu (point %llu):\n%.300s\n%.300s", k,
                         (unsigned long long)ref->rows[k].index, line, expect);
        line += strlen(expect);
    }
    ck_assert_str_eq(line, "");
    free(out.s);
}

START_TEST(row_writer_keeps_rows_exact)
{
    /* One writer fed a run of results, as a worker is: each row equals the row of a fresh
     * writer (spsim_row_format, every cell formatted). The run alternates values (the memory
     * of the value before), grows and shrinks cells (the cells after move), changes a bool
     * and a u32 beside doubles, changes the names (the row built again), in both layouts. */
    static const double times[] = {1.5, 0.1, 1.5, 0.1, 123456.789012345, 2.0, 0.1, 1e-300, 7.0};
    static const char *const models[] = {"m", "m", "m", "m", "m", "model-b", "model-b", "m", "m"};
    for (int f = 0; f < 2; f++) {
        enum spsim_row_format format = f ? SPSIM_ROW_JSONL : SPSIM_ROW_CSV;
        struct spsim_row_writer w;
        ck_assert_int_eq(spsim_row_writer_init(&w, format, NULL), SPSIM_OK);
        static char row[2 * SPSIM_ROW_MAX], expect[2 * SPSIM_ROW_MAX];
        /* Quoted once, as the sweep does: a row of the same names then copies the last. */
        char *name[] = {spsim_row_quote(format, "m"), spsim_row_quote(format, "model-b"),
                        spsim_row_quote(format, "hw")};
        for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
            struct spsim_result r;
            memset(&r, 0, sizeof(r));
            r.time.iteration_s = times[i];
            r.time.mfu = times[(i + 3) % 9] / 3.0;
            r.config.tp = i % 2 ? 8 : 1000000u + (uint32_t)i;
            r.memory.fits = i % 3 == 0;
            r.memory.total_bytes = i * 1000003u;
            size_t n = spsim_row_writer_row(&w, name[models[i][1] != 0], name[2], &r, row);
            size_t m = spsim_row_format(format, models[i], "hw", &r, expect, sizeof(expect));
            size_t k = 0;
            while (k < n && row[k] == expect[k])
                k++;
            ck_assert_msg(m == n && k == n, "row %zu, layout %d, from byte %zu:\n%.120s\n%.120s", i,
                          f, k, row + (k > 60 ? k - 60 : 0), expect + (k > 60 ? k - 60 : 0));
        }
        spsim_row_writer_free(&w);
        for (int j = 0; j < 3; j++)
            free(name[j]);
    }
}
END_TEST

START_TEST(rows_equal_evaluate)
{
    /* Every row, in order, is the reference's next valid configuration, formatted field by
     * field from its spsim_evaluate() result; and no valid configuration is missing. */
    struct spsim_sweep *sw = make_sweep(space_text);
    struct reference ref = reference_rows();
    ck_assert_uint_eq(spsim_sweep_size(sw), ref.points);
    ck_assert_uint_gt(ref.n, 100);
    check_rows(sw, &ref, SPSIM_ROW_CSV);
    check_rows(sw, &ref, SPSIM_ROW_JSONL);
    free(ref.rows);
    spsim_sweep_destroy(sw);
}
END_TEST

START_TEST(jsonl_matches_csv)
{
    /* The same keys, values and order in both layouts: parse the JSONL rows with cJSON and
     * compare with the CSV cells (doubles by their bits). */
    struct spsim_sweep *sw = make_sweep(space_text);
    struct spsim_text csv = run_csv(sw, 1, 0, 0, true);
    struct spsim_sweep_options opt;
    spsim_sweep_options_defaults(&opt);
    opt.format = SPSIM_ROW_JSONL;
    struct spsim_text jsonl = run_to_memory(sw, &opt, NULL);
    char *c = csv.s, *j = jsonl.s;
    char *header_end = strchr(c, '\n');
    *header_end = '\0';
    char *names[256];
    int nnames = 0;
    for (char *tok = strtok(c, ","); tok; tok = strtok(NULL, ","))
        names[nnames++] = tok;
    c = header_end + 1;
    int rows = 0;
    for (; *j; rows++) {
        char *jend = strchr(j, '\n'), *cend = strchr(c, '\n');
        *jend = *cend = '\0';
        cJSON *obj = cJSON_Parse(j);
        ck_assert_ptr_nonnull(obj);
        ck_assert_int_eq(cJSON_GetArraySize(obj), nnames);
        int col = 0;
        for (char *cell = strtok(c, ","); cell; cell = strtok(NULL, ","), col++) {
            const cJSON *v = cJSON_GetArrayItem(obj, col);
            bool same = strcmp(v->string, names[col]) == 0;
            if (cJSON_IsString(v))
                same = same && strcmp(v->valuestring, cell) == 0;
            else if (cJSON_IsBool(v))
                same = same && strcmp(cJSON_IsTrue(v) ? "true" : "false", cell) == 0;
            else
                same = same && v->valuedouble == strtod(cell, NULL);
            if (!same) /* Check only on failure (see check_rows) */
                ck_abort_msg("row %d, column %s: JSON '%s' vs CSV '%s'", rows, names[col],
                             v->string, cell);
        }
        ck_assert_int_eq(col, nnames);
        cJSON_Delete(obj);
        j = jend + 1;
        c = cend + 1;
    }
    ck_assert_int_gt(rows, 100);
    ck_assert_str_eq(c, "");
    free(csv.s);
    free(jsonl.s);
    spsim_sweep_destroy(sw);
}
END_TEST

START_TEST(columns_are_cells_of_the_full_rows)
{
    /* --columns: each row is the full row's cells at the named header positions (cut here by
     * strtok, not by the row writer), in the order given, from two threads. */
    static const char *const pick[] = {"time_mfu", "tp", "model", "memory_fits", "hw", "sp"};
    struct spsim_sweep *sw = make_sweep(space_text);
    struct spsim_text full = run_csv(sw, 1, 0, 0, true);
    struct spsim_sweep_options opt;
    spsim_sweep_options_defaults(&opt);
    opt.threads = 2;
    opt.columns = "time_mfu,tp,model,memory_fits,hw,sp";
    struct spsim_text some = run_to_memory(sw, &opt, NULL);
    char *f = full.s, *line = some.s, *names[256];
    int nnames = 0, at[6], rows = 0;
    char *end = strchr(f, '\n');
    *end = '\0';
    for (char *tok = strtok(f, ","); tok; tok = strtok(NULL, ","))
        names[nnames++] = tok;
    for (int k = 0; k < 6; k++)
        for (at[k] = 0; strcmp(names[at[k]], pick[k]) != 0; at[k]++)
            ck_assert_int_lt(at[k] + 1, nnames);
    char *want = malloc(SPSIM_ROW_MAX);
    ck_assert_ptr_nonnull(want);
    snprintf(want, SPSIM_ROW_MAX, "%s\n", opt.columns);
    ck_assert_int_eq(strncmp(line, want, strlen(want)), 0);
    line += strlen(want);
    for (f = end + 1; *f; f = end + 1, rows++) {
        end = strchr(f, '\n');
        *end = '\0';
        char *cells[256];
        int n = 0;
        for (char *tok = strtok(f, ","); tok; tok = strtok(NULL, ","))
            cells[n++] = tok;
        snprintf(want, SPSIM_ROW_MAX, "%s,%s,%s,%s,%s,%s\n", cells[at[0]], cells[at[1]],
                 cells[at[2]], cells[at[3]], cells[at[4]], cells[at[5]]);
        if (strncmp(line, want, strlen(want)) != 0) /* Check only on failure (see check_rows) */
            ck_abort_msg("row %d: '%.80s' vs '%s'", rows, line, want);
        line += strlen(want);
    }
    ck_assert_int_gt(rows, 100);
    ck_assert_str_eq(line, "");
    free(want);
    free(full.s);
    free(some.s);
    spsim_sweep_destroy(sw);
}
END_TEST

START_TEST(columns_errors)
{
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_row_columns_check("model,hw,time_mfu", &err), SPSIM_OK);
    ck_assert_int_eq(spsim_row_columns_check("tp,nope", &err), SPSIM_EINVAL);
    ck_assert_str_eq(err.message, "columns: 'nope' is not a column (the header of 'spsim query "
                                  "--format csv' lists them)");
    ck_assert_int_eq(spsim_row_columns_check("tp,pp,tp", &err), SPSIM_EINVAL);
    ck_assert_str_eq(err.message, "columns: 'tp' is listed twice");
    ck_assert_int_eq(spsim_row_columns_check("", &err), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_row_columns_check("tp,", &err), SPSIM_EINVAL);
    ck_assert_str_eq(err.message, "columns: an empty name in 'tp,'");
    ck_assert_int_eq(spsim_row_columns_check(",tp", &err), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_row_columns_check("memory", &err), SPSIM_EINVAL); /* a prefix only */
    /* The run refuses what the check refuses, before writing anything. */
    struct spsim_sweep *sw = make_sweep(space_text);
    struct spsim_sweep_options opt;
    spsim_sweep_options_defaults(&opt);
    opt.columns = "tp,tp";
    struct spsim_text out = {0};
    opt.write = append;
    opt.cookie = &out;
    ck_assert_int_eq(spsim_sweep_run(sw, &opt, NULL, &err), SPSIM_EINVAL);
    ck_assert_str_eq(err.message, "columns: 'tp' is listed twice");
    ck_assert_uint_eq(out.len, 0);
    free(out.s);
    spsim_sweep_destroy(sw);
}
END_TEST

START_TEST(threads_give_the_same_output)
{
    struct spsim_sweep *sw = make_sweep(space_text);
    struct spsim_text one = run_csv(sw, 1, 0, 0, true);
    for (unsigned t = 2; t <= 5; t++) {
        struct spsim_text more = run_csv(sw, t, 0, 0, true);
        ck_assert_uint_eq(more.len, one.len);
        ck_assert_msg(memcmp(more.s, one.s, one.len) == 0, "threads = %u differs", t);
        free(more.s);
    }
    free(one.s);
    spsim_sweep_destroy(sw);
}
END_TEST

START_TEST(shard_ranges_partition)
{
    /* Consecutive, covering, non-overlapping, and balanced to one point. */
    static const uint64_t sizes[] = {0, 1, 7, 100, 12345, (1ull << 62) - 1};
    static const uint64_t counts[] = {1, 2, 3, 7, 64, 1000};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            uint64_t n = counts[k], expect = 0;
            for (uint64_t s = 0; s < n; s++) {
                uint64_t b, e;
                ck_assert_int_eq(spsim_sweep_shard_range(sizes[i], s, n, &b, &e, NULL), SPSIM_OK);
                ck_assert_uint_eq(b, expect);
                ck_assert_uint_le(b, e);
                ck_assert_uint_le(e - b, sizes[i] / n + 1);
                expect = e;
            }
            ck_assert_uint_eq(expect, sizes[i]);
        }
    uint64_t b, e;
    ck_assert_int_eq(spsim_sweep_shard_range(10, 3, 3, &b, &e, NULL), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_sweep_shard_range(10, 0, 0, &b, &e, NULL), SPSIM_EINVAL);
}
END_TEST

START_TEST(shards_concatenate_to_the_whole)
{
    /* The shards' rows, headers dropped and concatenated in order, are the whole sweep's:
     * no point twice, none missing. */
    struct spsim_sweep *sw = make_sweep(space_text);
    struct spsim_text whole = run_csv(sw, 1, 0, 0, false);
    uint64_t size = spsim_sweep_size(sw);
    for (uint64_t n = 2; n <= 7; n++) {
        struct spsim_text joined = {0};
        append(&joined, "", 0);
        for (uint64_t s = 0; s < n; s++) {
            uint64_t b, e;
            ck_assert_int_eq(spsim_sweep_shard_range(size, s, n, &b, &e, NULL), SPSIM_OK);
            struct spsim_text part = run_csv(sw, 2, b, e, false);
            append(&joined, part.s, part.len);
            free(part.s);
        }
        ck_assert_uint_eq(joined.len, whole.len);
        ck_assert_msg(memcmp(joined.s, whole.s, whole.len) == 0, "%llu shards differ",
                      (unsigned long long)n);
        free(joined.s);
    }
    free(whole.s);
    spsim_sweep_destroy(sw);
}
END_TEST

/* Reference ranking: the key of spsim_sweep_rank_key written out for each metric. */
static int ref_by;

static double
ref_metric(const struct ref_row *row)
{
    switch (ref_by) {
    case SPSIM_BY_TOTAL_BYTES:
        return (double)row->r.memory.total_bytes;
    case SPSIM_BY_MFU:
        return -row->r.time.mfu;
    case SPSIM_BY_TOKENS_PER_S:
        return -row->r.time.tokens_per_s;
    default:
        return row->r.time.iteration_s;
    }
}

static int
compare_ref(const void *a, const void *b)
{
    const struct ref_row *x = a, *y = b;
    double mx = ref_metric(x), my = ref_metric(y);
    if (mx != my)
        return mx < my ? -1 : 1;
    return x->index < y->index ? -1 : 1;
}

/* The engine's --top K by `by` against the reference rows sorted by the same key. */
static void
check_top(const struct spsim_sweep *sw, struct ref_row *rows, size_t n, enum spsim_sweep_by by)
{
    ref_by = by;
    qsort(rows, n, sizeof(*rows), compare_ref);
    const uint64_t ks[] = {1, 7, 1000};
    for (size_t t = 0; t < 3; t++) {
        uint64_t index[1000], count = 0;
        struct spsim_sweep_options opt;
        spsim_sweep_options_defaults(&opt);
        opt.threads = 3;
        opt.top_k = ks[t];
        opt.by = by;
        opt.feasible_only = true;
        opt.top_index = index;
        opt.top_count = &count;
        struct spsim_text out = run_to_memory(sw, &opt, NULL);
        ck_assert_uint_eq(count, ks[t] < n ? ks[t] : n);
        char *line = strchr(out.s, '\n') + 1, expect[SPSIM_ROW_MAX];
        for (uint64_t k = 0; k < count; k++) {
            ck_assert_uint_eq(index[k], rows[k].index);
            expected_row(SPSIM_ROW_CSV, &rows[k], expect);
            ck_assert_int_eq(strncmp(line, expect, strlen(expect)), 0);
            line += strlen(expect);
        }
        free(out.s);
    }
}

START_TEST(top_k_is_the_sorted_head)
{
    /* --top K equals sorting every valid configuration by the metric (ties to the lower
     * index) and keeping the first K; here among those that fit (--feasible-only). */
    struct spsim_sweep *sw = make_sweep(space_text);
    struct reference ref = reference_rows();
    size_t kept = 0;
    for (size_t k = 0; k < ref.n; k++)
        if (ref.rows[k].r.memory.fits)
            ref.rows[kept++] = ref.rows[k];
    ck_assert_uint_gt(kept, 20);
    for (int by = SPSIM_BY_ITERATION_S; by < SPSIM_BY_COUNT; by++)
        check_top(sw, ref.rows, kept, by);
    free(ref.rows);
    spsim_sweep_destroy(sw);
}
END_TEST

START_TEST(invalid_points_are_listed)
{
    struct spsim_sweep *sw = make_sweep(space_text);
    struct spsim_text invalid = {0};
    append(&invalid, "", 0);
    struct spsim_sweep_stats stats;
    struct spsim_sweep_options opt;
    spsim_sweep_options_defaults(&opt);
    opt.format = SPSIM_ROW_NONE;
    opt.invalid = append;
    opt.cookie = &invalid;
    ck_assert_int_eq(spsim_sweep_run(sw, &opt, &stats, NULL), SPSIM_OK);
    uint64_t lines = 0;
    for (char *p = invalid.s; (p = strchr(p, '\n')); p++)
        lines++;
    ck_assert_uint_eq(lines, stats.points - stats.valid);
    ck_assert_ptr_nonnull(strstr(invalid.s, "model=llama3-8b hw=dgx-a100-80g tp=1 pp=1 gpus=16 "
                                               "vpp=2 sp=off recompute=none mbs=1 gbs=48 seq=2048 "
                                               "flash_attn=model distributed_optimizer=on "
                                               "overlap_grad_reduce=off dtype=bf16: parallel "
                                               "config: field 'vpp'"));
    ck_assert_ptr_nonnull(strstr(invalid.s,
                                 "tp=8 pp=3 gpus=16 vpp=1 sp=off recompute=none mbs=1 "
                                 "gbs=48 seq=2048 flash_attn=model "
                                 "distributed_optimizer=on overlap_grad_reduce=off "
                                 "dtype=bf16: parallel config: field 'gpus': 16 GPUs "
                                 "do not split into tp·pp = 8·3 groups"));
    free(invalid.s);
    spsim_sweep_destroy(sw);
}
END_TEST

/* Every scalar field as text (distinct doubles have distinct shortest texts) and the
 * per-layer collective list. */
static void
assert_same_result(const struct spsim_result *a, const struct spsim_result *b, uint64_t point)
{
    const struct spsim_field *fields;
    size_t n = spsim_result_fields(&fields);
    for (size_t i = 0; i < n; i++) {
        char x[64], y[64];
        spsim_field_format(&fields[i], a, x, sizeof(x));
        spsim_field_format(&fields[i], b, y, sizeof(y));
        ck_assert_msg(strcmp(x, y) == 0, "point %llu: %s: %s vs %s", (unsigned long long)point,
                      fields[i].path, x, y);
    }
    ck_assert_uint_eq(a->comm.per_layer_count, b->comm.per_layer_count);
    for (uint32_t i = 0; i < a->comm.per_layer_count; i++) {
        const struct spsim_collective_entry *x = &a->comm.per_layer[i], *y = &b->comm.per_layer[i];
        ck_assert(x->phase == y->phase && x->op == y->op && x->site == y->site &&
                  x->message_bytes == y->message_bytes &&
                  x->wire_bytes_per_rank == y->wire_bytes_per_rank &&
                  x->group_size == y->group_size && x->tier == y->tier &&
                  x->overlap == y->overlap && x->time_s == y->time_s &&
                  x->exposed_s == y->exposed_s);
    }
}

START_TEST(sweep_evaluate_equals_evaluate)
{
    /* The whole result, comm.per_layer included, of a few points. */
    struct spsim_sweep *sw = make_sweep(space_text);
    uint64_t size = spsim_sweep_size(sw);
    for (uint64_t i = 0; i < size; i += 97) {
        struct spsim_sweep_point pt;
        struct spsim_result a, b;
        memset(&a, 0, sizeof(a));
        memset(&b, 0, sizeof(b));
        if (spsim_sweep_point_at(sw, i, &pt, NULL) != SPSIM_OK)
            continue;
        int ra = spsim_evaluate(pt.model, pt.hw, &pt.par, &a, NULL);
        int rb = spsim_sweep_evaluate(sw, i, &b, NULL);
        ck_assert_int_eq(ra, rb);
        if (ra == SPSIM_OK)
            assert_same_result(&a, &b, i);
    }
    spsim_sweep_destroy(sw);
}
END_TEST

static Suite *
sweep_suite(void)
{
    Suite *s = suite_create("sweep");
    TCase *spec = tcase_create("spec");
    tcase_add_loop_test(spec, axis_syntax, 0, sizeof(good_axes) / sizeof(good_axes[0]));
    tcase_add_loop_test(spec, axis_errors, 0, sizeof(bad_axes) / sizeof(bad_axes[0]));
    tcase_add_loop_test(spec, spec_errors, 0, sizeof(bad_specs) / sizeof(bad_specs[0]));
    tcase_add_test(spec, shipped_specs_load);
    tcase_add_test(spec, create_errors);
    suite_add_tcase(s, spec);
    TCase *run = tcase_create("run");
    tcase_set_timeout(run, 60);
    tcase_add_test(run, row_writer_keeps_rows_exact);
    tcase_add_test(run, rows_equal_evaluate);
    tcase_add_test(run, jsonl_matches_csv);
    tcase_add_test(run, columns_are_cells_of_the_full_rows);
    tcase_add_test(run, columns_errors);
    tcase_add_test(run, threads_give_the_same_output);
    tcase_add_test(run, shard_ranges_partition);
    tcase_add_test(run, shards_concatenate_to_the_whole);
    tcase_add_test(run, top_k_is_the_sorted_head);
    tcase_add_test(run, invalid_points_are_listed);
    tcase_add_test(run, sweep_evaluate_equals_evaluate);
    suite_add_tcase(s, run);
    return s;
}

int
main(void)
{
    return testutil_run(sweep_suite());
}
