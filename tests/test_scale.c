/*
 * Inputs of 10^5 lines or keys through the parsers that once compared each line with every line
 * before it (issue 15): provenance lines and NCCL INFO hosts of an nccl-tests log, model names
 * of a sweep axis, comment keys of a profile. Each case checks what was read; meson's timeout
 * (tests/meson.build: 60 s; the quadratic versions took more than 120 s on each case)
 * is what fails if the time grows with n^2 again. Linear, the whole file takes well under a
 * second.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "testutil.h"

#define N_LINES 200000

struct text {
    char *p;
    size_t len, cap;
};

static void
text_add(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap) {
        t->cap = 2 * (t->len + n + 1);
        t->p = realloc(t->p, t->cap);
        ck_assert_ptr_nonnull(t->p);
    }
    memcpy(t->p + t->len, s, n + 1);
    t->len += n;
}

/* n lines or items from fmt, which takes the number once or twice. */
static void
text_numbered(struct text *t, int n, const char *fmt)
{
    char line[128];
    for (int i = 0; i < n; i++) {
        snprintf(line, sizeof(line), fmt, i, i);
        text_add(t, line);
    }
}

static void
text_add_file(struct text *t, const char *rel)
{
    char path[4096], *buf = NULL;
    const char *dir = getenv("SPSIM_DATA_DIR");
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : ".", rel);
    size_t len = 0;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_read_file(path, &buf, &len, &err) == SPSIM_OK, "%s", err.message);
    text_add(t, buf);
    free(buf);
}

static const char *const log4 = "tests/data/nccl-tests/h100x4of8_all_reduce_waynehacking8.txt";

START_TEST(provenance_lines)
{
    struct text t = {0};
    text_numbered(&t, N_LINES, "## key %d: value %d\n");
    text_add(&t, "## key 7: a second value, ignored\n");
    text_add_file(&t, log4);
    struct spsim_bw_table *tab = NULL;
    ck_assert_int_eq(spsim_bw_table_create(&tab), SPSIM_OK);
    struct spsim_nccl_log_summary s;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_nccl_log_parse(t.p, t.len, "big.txt", NULL, tab, &s, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert_uint_eq(s.rows, 31);
    ck_assert_str_eq(spsim_bw_table_info(tab, "log_key_0"), "value 0");
    ck_assert_str_eq(spsim_bw_table_info(tab, "log_key_7"), "value 7");
    ck_assert_str_eq(spsim_bw_table_info(tab, "log_key_199999"), "value 199999");
    /* Ours, then the log's own four "## " lines and what the importer adds (source, gpu). */
    size_t keys = 0;
    while (spsim_bw_table_info_key(tab, keys))
        keys++;
    ck_assert_uint_ge(keys, N_LINES + 4);
    ck_assert_str_eq(spsim_bw_table_info_key(tab, N_LINES - 1), "log_key_199999");
    spsim_bw_table_destroy(tab);
    free(t.p);
}
END_TEST

/* NCCL INFO lines of 2*10^5 hosts, and a data row cut by the line of the last of them: the
 * importer must still find where the row ends and the host starts. */
START_TEST(info_hosts)
{
    struct text t = {0};
    text_numbered(&t, N_LINES, "node%06d:1275:1275 [0] NCCL INFO Bootstrap : Using eth0\n");
    text_add_file(&t, log4);
    const char *row =
        "           8             2     float     sum      -1    22.72    0.00    0.00"
        "       0";
    char *at = strstr(t.p, row);
    ck_assert_ptr_nonnull(at);
    struct text cut = {0};
    at[strlen(row)] = '\0';
    text_add(&cut, t.p);
    text_add(&cut, "node199999:1275:1276 [1] NCCL INFO Channel 00 : 1[1] -> 2[2]\n");
    text_add(&cut, at + strlen(row) + 1);
    struct spsim_bw_table *tab = NULL;
    ck_assert_int_eq(spsim_bw_table_create(&tab), SPSIM_OK);
    struct spsim_nccl_log_summary s;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_nccl_log_parse(cut.p, cut.len, "hosts.txt", NULL, tab, &s, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    ck_assert_uint_eq(s.rows, 31);
    ck_assert_uint_eq(s.split_rows, 1);
    ck_assert_uint_eq(s.nodes, 1); /* from the rank lines, which name one host */
    ck_assert_double_eq(spsim_bw_table_get(tab, 0)->time_s, 22.72e-6);
    spsim_bw_table_destroy(tab);
    free(t.p);
    free(cut.p);
}
END_TEST

static struct text
name_list(int n, const char *last)
{
    struct text t = {0};
    text_numbered(&t, n, "m%d,");
    text_add(&t, last);
    return t;
}

START_TEST(sweep_names)
{
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_sweep_spec_create(&spec, &err), SPSIM_OK);
    struct text ok = name_list(N_LINES, "last");
    ck_assert_msg(spsim_sweep_spec_parse(spec, SPSIM_AXIS_MODEL, ok.p, "--model", &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert(spsim_sweep_spec_is_set(spec, SPSIM_AXIS_MODEL));
    struct text twice = name_list(N_LINES, "m123456");
    ck_assert_int_eq(spsim_sweep_spec_parse(spec, SPSIM_AXIS_MODEL, twice.p, "--model", &err),
                     SPSIM_EFIELD);
    ck_assert_str_eq(err.message, "--model: 'm123456' appears twice");
    spsim_sweep_spec_destroy(spec);
    free(ok.p);
    free(twice.p);
}
END_TEST

static struct text
model_with_comments(int n, const char *last_key)
{
    struct text t = {0};
    text_add(&t, "{");
    text_numbered(&t, n, "\"_c%d\": 0, ");
    char key[48];
    snprintf(key, sizeof(key), "\"%s\": 0, ", last_key);
    text_add(&t, key);
    struct text m = {0};
    text_add_file(&m, "models/llama3-8b.json");
    text_add(&t, strchr(m.p, '{') + 1);
    free(m.p);
    return t;
}

START_TEST(json_comment_keys)
{
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    struct text ok = model_with_comments(N_LINES, "_last");
    ck_assert_msg(spsim_model_parse(ok.p, ok.len, "big.json", &m, &err) == SPSIM_OK, "%s",
                  err.message);
    spsim_model_destroy(m);
    m = NULL;
    struct text twice = model_with_comments(N_LINES, "_c199998");
    ck_assert_int_eq(spsim_model_parse(twice.p, twice.len, "twice.json", &m, &err), SPSIM_EFIELD);
    ck_assert_str_eq(err.message, "twice.json: field '_c199998': appears twice");
    free(ok.p);
    free(twice.p);
}
END_TEST

static Suite *
scale_suite(void)
{
    Suite *s = suite_create("scale");
    /* One case each, so that CK_RUN_CASE=names runs one alone; meson's timeout is the check
     * (see the top of the file). */
    const struct {
        const char *name;
        const TTest *test;
    } cases[] = {{"provenance", provenance_lines},
                 {"hosts", info_hosts},
                 {"names", sweep_names},
                 {"keys", json_comment_keys}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 0);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

int
main(void)
{
    return testutil_run(scale_suite());
}
