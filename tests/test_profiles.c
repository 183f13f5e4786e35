/* The profile loaders: every shipped file loads, every kind of bad input is refused with a
 * message naming the file, the field and the rule. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "profiles/profiles.h"
#include "testutil.h"

static const char valid_model[] =
    "{\"schema\": \"spsim-model/1\", \"name\": \"t\", \"source\": \"test\",\n"
    " \"layers\": 48, \"hidden\": 6144, \"heads\": 64, \"kv_heads\": 64, \"ffn_hidden\": 24576,\n"
    " \"vocab\": 51200, \"seq_len\": 2048, \"mlp\": \"gelu\", \"norm\": \"layernorm\",\n"
    " \"dropout\": true, \"attention\": \"standard\", \"position_embedding\": \"learned\",\n"
    " \"linear_bias\": true, \"tied_embeddings\": true}";

/* Replace the first occurrence of `from` in `text` by `to`. */
static char *
edit(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    ck_assert_msg(at != NULL, "test bug: '%s' not found", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

struct bad_case {
    const char *from, *to;
    int code;
    const char *message;
};

static const struct bad_case model_cases[] = {
    {"\"layers\": 48", "\"layers\": -48", SPSIM_EFIELD,
     "field 'layers': must be an integer in [1, 4096], got -48"},
    {"\"layers\": 48", "\"layers\": 0", SPSIM_EFIELD, "field 'layers'"},
    {"\"layers\": 48", "\"layers\": 48.5", SPSIM_EFIELD, "field 'layers'"},
    {"\"layers\": 48", "\"layers\": 1e400", SPSIM_EFIELD, "field 'layers'"},
    {"\"layers\": 48", "\"layers\": \"48\"", SPSIM_EFIELD,
     "field 'layers': must be an integer in [1, 4096], got a string"},
    {"\"hidden\": 6144,", "", SPSIM_EFIELD, "field 'hidden': is required but missing"},
    {"\"hidden\": 6144", "\"hidden\": 99999999", SPSIM_EFIELD, "field 'hidden'"},
    {"\"heads\": 64, \"kv_heads\": 64", "\"heads\": 100, \"kv_heads\": 100", SPSIM_EFIELD,
     "field 'heads': must divide hidden"},
    {"\"kv_heads\": 64", "\"kv_heads\": 48", SPSIM_EFIELD, "field 'kv_heads': must divide heads"},
    {"\"kv_heads\": 64", "\"kv_heads\": 128", SPSIM_EFIELD,
     "field 'kv_heads': must not exceed heads"},
    {"\"gelu\"", "\"relu\"", SPSIM_EFIELD,
     "field 'mlp': must be one of 'gelu', 'swiglu', 'relu2', got 'relu'"},
    {"\"dropout\": true", "\"dropout\": 1", SPSIM_EFIELD, "field 'dropout': must be true or false"},
    {"\"layers\"", "\"layer\"", SPSIM_EFIELD, "field 'layer': unknown key"},
    {"\"name\": \"t\",", "\"name\": \"t\", \"name\": \"u\",", SPSIM_EFIELD,
     "field 'name': appears twice"},
    {"spsim-model/1", "spsim-model/2", SPSIM_EFIELD, "field 'schema': must be \"spsim-model/1\""},
    {"\"source\": \"test\",", "\"source\": \"\",", SPSIM_EFIELD,
     "field 'source': must not be empty"},
    /* Malformed JSON: the position is reported (line 2: the missing comma). */
    {"\"heads\": 64,", "\"heads\": 64", SPSIM_EPARSE, "malformed JSON at line 2"},
    {"\"dropout\": true", "\"dropout\": tru", SPSIM_EPARSE, "malformed JSON at line 4"},
    {"\"layers\": 48", "\"layers\": NaN", SPSIM_EPARSE, "malformed JSON"},
    {"}", "} trailing", SPSIM_EPARSE, "unexpected text after the document"},
    /* Strings: UTF-8 (RFC 3629) and no U+0000, which cJSON would cut the string at. The offset
     * is that of the string's opening quote, or of the first bad byte: the value of "name" starts
     * at 36. */
    {"\"name\": \"t\"", "\"name\": \"llama\\u0000evil\"", SPSIM_EFIELD,
     "field 'name': the string at byte offset 36 holds \\u0000 (a NUL character)"},
    {"\"name\": \"t\"", "\"name\": \"t\xff\"", SPSIM_EFIELD,
     "field 'name': invalid UTF-8 at byte offset 38"},
    {"\"name\": \"t\"", "\"name\": \"\xc0\xaf\"", SPSIM_EFIELD,
     "field 'name': invalid UTF-8 at byte offset 37"}, /* overlong '/' */
    {"\"name\": \"t\"", "\"name\": \"\xed\xa0\x80\"", SPSIM_EFIELD,
     "field 'name': invalid UTF-8"}, /* a UTF-16 surrogate */
    {"\"name\": \"t\"", "\"name\": \"t\xe2\x82\"", SPSIM_EFIELD,
     "field 'name': invalid UTF-8"}, /* cut short */
    {"\"source\": \"test\"", "\"source\": \"\xf4\x90\x80\x80\"", SPSIM_EFIELD,
     "field 'source': invalid UTF-8"}, /* above U+10FFFF */
    {"\"name\": \"t\",", "\"name\": \"t\", \"_n\xfe\": 1,", SPSIM_EFIELD,
     "field '_n?': invalid UTF-8"},
    /* cJSON takes every byte below ' ' as a blank: the check must keep its place past them
     * (found by fuzz_model: it looped forever). */
    {"\"name\": \"t\",", "\"name\": \"t\",\x01\x02 \"_c\": [1\x1f]\x03, \"_d\": \"\xff\",",
     SPSIM_EFIELD, "field '_d': invalid UTF-8"},
};

START_TEST(model_bad_input)
{
    const struct bad_case *c = &model_cases[_i];
    char *text = edit(valid_model, c->from, c->to);
    struct spsim_model *m = (struct spsim_model *)0x1;
    struct spsim_error err = {0};
    int rc = spsim_model_parse(text, strlen(text), "models/bad.json", &m, &err);
    ck_assert_msg(rc == c->code, "case %d: rc %d, message '%s'", _i, rc, err.message);
    ck_assert_msg(strstr(err.message, c->message) && strstr(err.message, "models/bad.json: "),
                  "case %d: '%s' lacks '%s'", _i, err.message, c->message);
    ck_assert_ptr_eq(m, (struct spsim_model *)0x1); /* untouched on failure */
    free(text);
}
END_TEST

START_TEST(model_valid_and_empty)
{
    struct spsim_model *m = NULL;
    ck_assert_int_eq(spsim_model_parse(valid_model, strlen(valid_model), "x", &m, NULL), SPSIM_OK);
    ck_assert_uint_eq(spsim_model_get_shape(m)->head_dim, 96); /* 6144 / 64 */
    spsim_model_destroy(m);
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_model_parse("", 0, "empty.json", &m, &err), SPSIM_EPARSE);
    ck_assert_ptr_nonnull(strstr(err.message, "empty.json: malformed JSON: the file is empty"));
    ck_assert_int_eq(spsim_model_parse("[1,2]", 5, "arr.json", &m, &err), SPSIM_EFIELD);
    ck_assert_ptr_nonnull(strstr(err.message, "must be a JSON object"));
    ck_assert_int_eq(spsim_model_load("/nonexistent/x.json", &m, &err), SPSIM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/x.json: cannot open"));
}
END_TEST

/* What cJSON reads differently from the text: a NUL byte (skipped as a blank) and nesting
 * beyond CJSON_NESTING_LIMIT (a syntax error at the column where it stopped). */
START_TEST(model_nul_and_depth)
{
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    char text[sizeof(valid_model) + 1];
    memcpy(text, valid_model, sizeof(valid_model));
    size_t at = (size_t)(strstr(text, " \"layers\"") - text);
    text[at] = '\0';
    ck_assert_int_eq(spsim_model_parse(text, sizeof(valid_model) - 1, "nul.json", &m, &err),
                     SPSIM_EPARSE);
    char want[128];
    snprintf(want, sizeof(want),
             "nul.json: a NUL byte at byte offset %zu (a profile is UTF-8 text)", at);
    ck_assert_str_eq(err.message, want);
    /* After the document too: the whole file is the profile. */
    ck_assert_int_eq(spsim_model_parse(valid_model, sizeof(valid_model), "end.json", &m, &err),
                     SPSIM_EPARSE);
    snprintf(want, sizeof(want), "end.json: a NUL byte at byte offset %zu",
             sizeof(valid_model) - 1);
    ck_assert_ptr_nonnull(strstr(err.message, want));
    /* '{' and 999 '[' are 1000 levels, cJSON's limit: accepted; one more is refused. */
    for (int levels = 1000; levels <= 1001; levels++) {
        size_t n = strlen(valid_model) + 2 * (size_t)levels + 16;
        char *deep = malloc(n), *p = deep;
        p += sprintf(p, "{\"_c\": ");
        for (int i = 1; i < levels; i++)
            *p++ = '[';
        for (int i = 1; i < levels; i++)
            *p++ = ']';
        sprintf(p, ", %s", valid_model + 1);
        int rc = spsim_model_parse(deep, strlen(deep), "deep.json", &m, &err);
        if (levels == 1000) {
            ck_assert_msg(rc == SPSIM_OK, "%s", err.message);
            spsim_model_destroy(m);
        } else {
            ck_assert_int_eq(rc, SPSIM_EPARSE);
            /* the 1000th '[' at byte offset 7 + 999 */
            ck_assert_str_eq(err.message, "deep.json: JSON nested deeper than 1000 levels at line "
                                          "1, column 1007 (byte offset 1006)");
        }
        free(deep);
    }
    /* Valid UTF-8 and escapes other than \u0000 load as they are. */
    char *ok = edit(valid_model, "\"name\": \"t\"",
                    "\"name\": \"t\xc3\xa9 \\u00e9 \xe2\x80\x93 \xf0\x9f\x98\x80 \\\"\\\\\"");
    ck_assert_msg(spsim_model_parse(ok, strlen(ok), "ok.json", &m, &err) == SPSIM_OK, "%s",
                  err.message);
    ck_assert_str_eq(spsim_model_name(m), "t\xc3\xa9 \xc3\xa9 \xe2\x80\x93 \xf0\x9f\x98\x80 \"\\");
    spsim_model_destroy(m);
    free(ok);
}
END_TEST

static char *
read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 17];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *copy = malloc(n + 1);
    memcpy(copy, buf, n + 1);
    return copy;
}

static const struct bad_case hw_cases[] = {
    /* Every number needs its source. */
    {"\"sm_count\": {\"value\": 108,", "\"sm_count\": 108, \"_x\": {\"value\": 108,", SPSIM_EFIELD,
     "field 'gpu.sm_count': must be {\"value\": NUMBER or null, \"source\": \"TEXT\"}"},
    {"\"value\": 108, \"source\": \"", "\"value\": 108, \"sourc\": \"", SPSIM_EFIELD,
     "field 'gpu.sm_count.sourc': unknown key"},
    {"\"value\": 108,", "\"value\": -108,", SPSIM_EFIELD, "field 'gpu.sm_count.value'"},
    {"\"value\": 108,", "\"value\": 108.5,", SPSIM_EFIELD,
     "field 'gpu.sm_count': must be an integer"},
    {"\"value\": 2039,", "\"value\": 1e300,", SPSIM_EFIELD, "field 'gpu.hbm_bandwidth_GBps.value'"},
    {"\"value\": 1700,", "\"value\": 2100,", SPSIM_EFIELD,
     "field 'gpu.hbm_achievable_GBps': must not exceed hbm_bandwidth_GBps"},
    {"\"value\": 271.2,", "\"value\": 400,", SPSIM_EFIELD,
     "field 'gpu.gemm_achievable_tflops.bf16': must not exceed the peak"},
    {"[268435456, 194.07]", "[1, 194.07]", SPSIM_EFIELD, "sizes must be strictly increasing"},
    {"[268435456, 194.07]", "[268435456, -1]", SPSIM_EFIELD, "must be a finite number > 0"},
    {"\"nvlink_domain_gpus\": {\"value\": 8,", "\"nvlink_domain_gpus\": {\"value\": 12,",
     SPSIM_EFIELD, "must be a multiple of gpus_per_node"},
    {"\"value\": 24,", "\"value\": 26,", SPSIM_EFIELD, "field 'network.nic_achievable_GBps'"},
    {"\"network\":", "\"networks\": {}, \"network\":", SPSIM_EFIELD,
     "field 'networks': unknown key"},
    {"\"nccl_channels\":", "\"nvls\": {\"value\": 0.5, \"source\": \"t\"}, \"nccl_channels\":",
     SPSIM_EFIELD, "field 'nvlink.nvls': must be 0 or 1, got 0.5"},
    {"\"nccl_channels\":", "\"nvls\": {\"value\": 2, \"source\": \"t\"}, \"nccl_channels\":",
     SPSIM_EFIELD, "field 'nvlink.nvls.value'"},
    {"spsim-hardware/1", "spsim-hardware/9", SPSIM_EFIELD, "field 'schema'"},
    {"\"gpu\": {", "\"gpu\": [", SPSIM_EPARSE, "malformed JSON at line"},
};

START_TEST(hardware_bad_input)
{
    const struct bad_case *c = &hw_cases[_i];
    char path[4096];
    ck_assert_int_eq(
        spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, "dgx-a100-80g", path, sizeof(path), NULL),
        SPSIM_OK);
    char *base = read_text(path);
    char *text = edit(base, c->from, c->to);
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    int rc = spsim_hardware_parse(text, strlen(text), "hardware/bad.json", &hw, &err);
    ck_assert_msg(rc == c->code, "case %d: rc %d '%s'", _i, rc, err.message);
    ck_assert_msg(strstr(err.message, c->message) && strstr(err.message, "hardware/bad.json: "),
                  "case %d: '%s' lacks '%s'", _i, err.message, c->message);
    ck_assert_ptr_null(hw);
    free(text);
    free(base);
}
END_TEST

static int
load_each_model(void *cookie, const char *name, const char *path)
{
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_model_load(path, &m, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_str_eq(spsim_model_name(m), name);
    ck_assert_str_ne(spsim_model_source(m), "");
    (*(int *)cookie)++;
    spsim_model_destroy(m);
    return 0;
}

static int
load_each_hardware(void *cookie, const char *name, const char *path)
{
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_hardware_load_listing(path, &hw, &err) == SPSIM_OK, "%s", err.message);
    struct spsim_hardware_info i;
    spsim_hardware_get_info(hw, &i);
    ck_assert_str_eq(i.name, name);
    ck_assert(i.peak_tflops[SPSIM_DTYPE_BF16] > 0 && i.hbm_capacity_bytes > 0);
    bool listing = i.unsourced_fields != NULL;
    spsim_hardware_destroy(hw);
    hw = NULL;
    /* A profile with unsourced time-model figures is refused by the loader the models use. */
    int rc = spsim_hardware_load(path, &hw, &err);
    ck_assert_msg(rc == (listing ? SPSIM_EFIELD : SPSIM_OK), "%s: rc %d", name, rc);
    spsim_hardware_destroy(hw);
    (*(int *)cookie)++;
    return 0;
}

START_TEST(shipped_profiles_load)
{
    int models = 0, hardware = 0;
    ck_assert_int_eq(spsim_profile_list(SPSIM_PROFILE_MODEL, load_each_model, &models, NULL),
                     SPSIM_OK);
    ck_assert_int_eq(
        spsim_profile_list(SPSIM_PROFILE_HARDWARE, load_each_hardware, &hardware, NULL), SPSIM_OK);
    ck_assert_int_ge(models, 10);
    ck_assert_int_ge(hardware, 6);
}
END_TEST

START_TEST(paper_shapes)
{
    /* Table 3 of Korthikanti et al. 2022 and the §6 text (s = 2048, v = 51200). */
    static const struct {
        const char *name;
        uint32_t a, h, L;
    } t3[] = {{"paper-22b", 64, 6144, 48},
              {"paper-175b", 96, 12288, 96},
              {"paper-530b", 128, 20480, 105},
              {"paper-1t", 160, 25600, 128}};
    for (size_t i = 0; i < 4; i++) {
        struct spsim_model *m = testutil_model_named(t3[i].name);
        const struct spsim_model_shape *s = spsim_model_get_shape(m);
        ck_assert_uint_eq(s->heads, t3[i].a);
        ck_assert_uint_eq(s->hidden, t3[i].h);
        ck_assert_uint_eq(s->layers, t3[i].L);
        ck_assert_uint_eq(s->seq_len, 2048);
        ck_assert_uint_eq(s->vocab, 51200);
        ck_assert_uint_eq(s->ffn_hidden, 4 * t3[i].h);
        spsim_model_destroy(m);
    }
    /* Megatron pads 50257 to a multiple of 128·tp (tokenizer.py _vocab_size_with_padding):
     * 128·8 = 1024 → 51200. */
    struct spsim_model *g = testutil_model_named("gpt3-175b");
    ck_assert_uint_eq(spsim_model_padded_vocab(g, 8), 51200);
    ck_assert_uint_eq(spsim_model_padded_vocab(g, 1), 50304);
    spsim_model_destroy(g);
}
END_TEST

START_TEST(parameter_counts)
{
    /* Hand count, paper-175b (biases, LayerNorm γ/β, learned positions, tied embedding):
     * per layer 12h² + 13h; embeddings v·h + s·h; final LayerNorm 2h. */
    uint64_t h = 12288, L = 96, v = 51200, s = 2048;
    uint64_t want = L * (12 * h * h + 13 * h) + v * h + s * h + 2 * h;
    struct spsim_model *m = testutil_model_named("paper-175b");
    ck_assert_uint_eq(spsim_model_parameters(m, 8), want);
    spsim_model_destroy(m);
    /* Llama 3 8B (no biases, RMSNorm, untied, GQA 8 KV heads of 128, SwiGLU 14336, padded
     * vocabulary 128256 is already a multiple of 128): 8,030,261,248 parameters, the Hugging
     * Face model card's count. */
    struct spsim_model *l3 = testutil_model_named("llama3-8b");
    ck_assert_uint_eq(spsim_model_parameters(l3, 1), 8030261248ull);
    spsim_model_destroy(l3);
}
END_TEST

/* Parameters per transformer layer from a dense profile's config (no biases, two norms of
 * weight + bias for LayerNorm or weight only for RMSNorm): Q and output h·h each, K and V
 * h·kv·d each, the MLP 3·h·f gated or 2·h·f plain. Written out here from the NeMo configs quoted
 * in each file's source, independently of src/profiles/model_params.c. */
static uint64_t
dense_layer_params(uint64_t h, uint64_t kv_width, uint64_t f, int gated, uint64_t norm_width)
{
    return 2 * h * h + 2 * h * kv_width + (gated ? 3 : 2) * h * f + 2 * norm_width;
}

START_TEST(parameter_counts_nemo_dense)
{
    /* Nemotron-4 340B: the technical report's Table 1 (arXiv:2406.11704) gives 9.4B embedding
     * and 331.6B non-embedding parameters. 96 layers of h 18432, 8 KV heads of 192, plain
     * (squared-ReLU) MLP of 73728, LayerNorm 2h per norm; untied 256000 x h twice. */
    uint64_t h = 18432, v = 256000;
    uint64_t body = 96 * dense_layer_params(h, 8 * 192, 73728, 0, 2 * h) + 2 * h;
    uint64_t emb = 2 * v * h;
    ck_assert_uint_eq((emb + 50000000) / 100000000, 94);
    ck_assert_uint_eq((body + 50000000) / 100000000, 3316);
    struct spsim_model *m = testutil_model_named("nemotron4-340b");
    ck_assert_uint_eq(spsim_model_parameters(m, 8), body + emb);
    spsim_model_destroy(m);
    /* Nemotron-3 8B and 22B (multi-head, d = 128, plain MLP 4h, same 256000 untied vocabulary). */
    static const struct {
        const char *name;
        uint64_t L, h;
    } nemotron3[] = {{"nemotron3-8b", 32, 4096}, {"nemotron3-22b", 40, 6144}};
    for (size_t i = 0; i < 2; i++) {
        uint64_t hh = nemotron3[i].h;
        uint64_t want =
            nemotron3[i].L * dense_layer_params(hh, hh, 4 * hh, 0, 2 * hh) + 2 * hh + 2 * v * hh;
        m = testutil_model_named(nemotron3[i].name);
        ck_assert_uint_eq(spsim_model_parameters(m, 1), want);
        spsim_model_destroy(m);
    }
    /* Llama 2 13B: 40 layers of 5120, MHA, SwiGLU 13824, RMSNorm, untied 32000 (a multiple of
     * 128, unpadded): 13,015,864,320, the "13B" of Touvron et al. 2023 Table 1. */
    uint64_t l2 = 40 * dense_layer_params(5120, 5120, 13824, 1, 5120) + 5120 + 2 * 32000 * 5120;
    ck_assert_uint_eq(l2, 13015864320ull);
    m = testutil_model_named("llama2-13b");
    ck_assert_uint_eq(spsim_model_parameters(m, 1), l2);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(parameter_counts_nemo_gpt3)
{
    /* NeMo GPT-3 5B and 20B (GPTConfig5B/20B): GPT-2 style, per layer 12h² + 13h (biases on
     * QKV 3h, proj h, fc1 4h, fc2 h; two LayerNorms 4h), learned positions s·h with s = 2048,
     * tied embedding of 50257 padded to a multiple of 128·tp, final LayerNorm 2h. */
    static const struct {
        const char *name;
        uint64_t L, h, tp, v_padded;
    } gpt[] = {{"gpt3-5b", 24, 4096, 1, 50304}, {"gpt3-20b", 44, 6144, 2, 50432}};
    for (size_t i = 0; i < 2; i++) {
        uint64_t h = gpt[i].h;
        uint64_t want = gpt[i].L * (12 * h * h + 13 * h) + gpt[i].v_padded * h + 2048 * h + 2 * h;
        struct spsim_model *m = testutil_model_named(gpt[i].name);
        ck_assert_uint_eq(spsim_model_parameters(m, (uint32_t)gpt[i].tp), want);
        spsim_model_destroy(m);
    }
}
END_TEST

/* dgx-b300's derived fields are what their source strings say: NDR's measured 48 of 50 GB/s
 * applied to XDR's 800 Gb/s, H200's Triad/spec ratio 4150/4800 applied to 8 TB/s, and the
 * NVLink collective figures carried over from dgx-b200 (same NVLink5 fabric). Its NVFP4
 * figures: the dense peak of [ML-ACC]'s TFLOPS table (stas00/ml-engineering @744d01e), row
 * 'NVIDIA B300 SXM', column nvfp4, 15000, and NVIDIA's best measured NVFP4 GEMM on B300
 * (ai-dynamo/aiconfigurator @095f58a, systems/data/b300_sxm/gemm/trtllm/1.3.0rc20/
 * gemm_perf.parquet: 3584 x 51200 x 65536 in 4.01664 ms), as measured. */
START_TEST(dgx_b300_derivations)
{
    struct spsim_hardware *b3 = testutil_hardware("dgx-b300");
    struct spsim_hardware *b2 = testutil_hardware("dgx-b200");
    struct spsim_hardware_info i3, i2;
    spsim_hardware_get_info(b3, &i3);
    spsim_hardware_get_info(b2, &i2);
    ck_assert_double_eq_tol(i3.nic_achievable_GBps, 800.0 / 8 * 48.0 / 50.0, 1e-9);
    ck_assert_double_eq_tol(i3.hbm_achievable_GBps, 8000.0 * 4150.0 / 4800.0, 0.05);
    ck_assert_double_eq(i3.nvlink_ring_busbw_GBps, i2.nvlink_ring_busbw_GBps);
    ck_assert_double_eq(i3.nvlink_allreduce_busbw_GBps, i2.nvlink_allreduce_busbw_GBps);
    ck_assert_uint_eq(i3.sm_count, 148);
    ck_assert_uint_eq(i3.nics_per_node, 8);
    /* 275,040 MiB as MLPerf's B300 system descriptions report it. */
    ck_assert_uint_eq(i3.hbm_capacity_bytes, 275040ull << 20);
    ck_assert_double_eq_tol(i3.peak_tflops[SPSIM_DTYPE_NVFP4], 15000, 1e-9);
    ck_assert_double_eq_tol(b3->gemm_achievable_flops[SPSIM_DTYPE_NVFP4] / 1e12,
                            2.0 * 3584 * 51200 * 65536 / 4.01664e-3 / 1e12, 0.05);
    spsim_hardware_destroy(b3);
    spsim_hardware_destroy(b2);
}
END_TEST

/* gb300-nvl72's derived fields are what their source strings say: NVIDIA's GB300 GEMM sweep best
 * (2 * 32768 * 5120 * 16384 FLOP in 2.60944 ms) put on GB200's MAMF basis (1822.0 over the same
 * collector's GB200 best, 2 * 3840 * 2560 * 65536 FLOP in 0.66804 ms), XDR's 800 Gb/s at NDR's
 * 48/50, MLPerf's 284,208 MiB, the NVLink figures carried over from gb200-nvl72 and the 1400 W
 * per-GPU maximum. */
START_TEST(gb300_nvl72_derivations)
{
    struct spsim_hardware *g3 = testutil_hardware("gb300-nvl72");
    struct spsim_hardware *g2 = testutil_hardware("gb200-nvl72");
    struct spsim_hardware_info i3, i2;
    spsim_hardware_get_info(g3, &i3);
    spsim_hardware_get_info(g2, &i2);
    double measured = 2.0 * 32768 * 5120 * 16384 / 2.60944e-3 / 1e12;
    double gb200 = 2.0 * 3840 * 2560 * 65536 / 0.6680427e-3 / 1e12; /* its best, 1928.8 */
    ck_assert_double_eq_tol(i3.gemm_achievable_tflops_bf16, 1822.0 * measured / gb200, 0.05);
    ck_assert_double_eq_tol(i3.peak_tflops[SPSIM_DTYPE_BF16], 2500, 1e-9);
    ck_assert_double_eq_tol(i3.peak_tflops[SPSIM_DTYPE_NVFP4], 15000, 1e-9);
    ck_assert_double_eq_tol(i3.nic_achievable_GBps, 800.0 / 8 * 48.0 / 50.0, 1e-9);
    ck_assert_double_eq(i3.nvlink_ring_busbw_GBps, i2.nvlink_ring_busbw_GBps);
    ck_assert_double_eq(i3.nvlink_allreduce_busbw_GBps, i2.nvlink_allreduce_busbw_GBps);
    ck_assert_uint_eq(i3.nvlink_domain_gpus, 72);
    ck_assert_uint_eq(i3.gpus_per_node, 4);
    ck_assert_uint_eq(i3.nics_per_node, 4);
    ck_assert_uint_eq(i3.hbm_capacity_bytes, 284208ull << 20);
    ck_assert_double_eq_tol(i3.board_power_W, 1400, 1e-9);
    ck_assert_ptr_null(i3.board_power_unsourced);
    spsim_hardware_destroy(g3);
    spsim_hardware_destroy(g2);
}
END_TEST

/* hgx-h800: 8 NVLink4 links (SimAI's H800_NVLINKS) at H100's 25 GB/s per link and direction,
 * NCCL's 20.6 GB/s per link for the ring and one channel per link; H100's compute; no sourced
 * board power, marked so in the profile. */
START_TEST(hgx_h800_derivations)
{
    struct spsim_hardware *h8 = testutil_hardware("hgx-h800");
    struct spsim_hardware *h1 = testutil_hardware("dgx-h100");
    struct spsim_hardware_info i8, i1;
    spsim_hardware_get_info(h8, &i8);
    spsim_hardware_get_info(h1, &i1);
    ck_assert_double_eq_tol(i8.nvlink_bandwidth_per_direction_GBps, 8 * 450.0 / 18, 1e-9);
    ck_assert_double_eq_tol(i8.nvlink_ring_busbw_GBps, 8 * 20.6, 1e-9);
    ck_assert_double_eq_tol(i8.nvlink_allreduce_busbw_GBps, 215.0, 1e-9);
    ck_assert_uint_eq(i8.sm_count, 132);
    ck_assert_double_eq(i8.gemm_achievable_tflops_bf16, i1.gemm_achievable_tflops_bf16);
    ck_assert_double_eq_tol(i8.hbm_bandwidth_GBps, 3350, 1e-9);
    ck_assert_double_eq(i8.board_power_W, 0);
    ck_assert_ptr_nonnull(i8.board_power_unsourced);
    ck_assert_ptr_nonnull(strstr(i8.board_power_unsourced, "unsourced"));
    ck_assert_double_eq_tol(i1.board_power_W, 700, 1e-9);
    spsim_hardware_destroy(h8);
    spsim_hardware_destroy(h1);
}
END_TEST

/* hgx-h20 (H20 141GB, H20-3e): SimAI's H20 is H100's 18 NVLink4 links, so 18 x 25 GB/s per
 * direction and NCCL's 18 x 20.6 = 370.8 GB/s ring, one channel per link; the peaks and memory
 * are vidur's H20 SKU (148 / 296 TFLOPS, 141 GB) and SimAI's test machine (143,771 MiB). The
 * NVLink step latency is worked from [DeepEP-303]'s 12.49 us all_reduce of 8 B on 8 H20:
 * (12.49 - 6.6 base) / 14 ring steps = 0.4207 us, so base + 14 steps gives the measurement back.
 * The SM count, GEMM rate and HBM bandwidth are unsourced: the profile is listed, never timed. */
START_TEST(hgx_h20_derivations)
{
    char path[4096];
    struct spsim_error err = {0};
    struct spsim_hardware *hw = NULL;
    ck_assert_int_eq(
        spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, "hgx-h20", path, sizeof(path), NULL),
        SPSIM_OK);
    ck_assert_msg(spsim_hardware_load_listing(path, &hw, &err) == SPSIM_OK, "%s", err.message);
    struct spsim_hardware_info i;
    spsim_hardware_get_info(hw, &i);
    ck_assert_double_eq_tol(i.peak_tflops[SPSIM_DTYPE_BF16], 148, 1e-9);
    ck_assert_double_eq_tol(i.peak_tflops[SPSIM_DTYPE_FP8], 296, 1e-9);
    ck_assert_uint_eq(i.hbm_marketed_bytes, 141000000000ull);
    ck_assert_uint_eq(i.hbm_capacity_bytes, 143771ull << 20);
    ck_assert_double_eq_tol(i.nvlink_bandwidth_per_direction_GBps, 18 * 450.0 / 18, 1e-9);
    ck_assert_double_eq_tol(i.nvlink_ring_busbw_GBps, 18 * 20.6, 1e-9);
    ck_assert_double_eq_tol(i.nvlink_allreduce_busbw_GBps, 475.0, 1e-9);
    ck_assert_uint_eq(hw->nccl_channels, 18);
    ck_assert_uint_eq(i.nics_per_node, 8);
    double hop_us = (12.49 - 6.6) / 14; /* 0.420714... */
    ck_assert_double_eq_tol(hw->nvlink.hop_latency_s * 1e6, hop_us, 1e-4);
    ck_assert_double_eq_tol((hw->nvlink.base_latency_s + 14 * hw->nvlink.hop_latency_s) * 1e6,
                            12.49, 2e-3);
    ck_assert_str_eq(i.unsourced_fields, "gpu.gemm_achievable_tflops.bf16, gpu.sm_count, "
                                         "gpu.hbm_bandwidth_GBps, gpu.hbm_achievable_GBps");
    ck_assert_uint_eq(i.sm_count, 0);
    ck_assert_double_eq(i.hbm_bandwidth_GBps, 0);
    ck_assert_ptr_nonnull(i.board_power_unsourced);
    spsim_hardware_destroy(hw);
    hw = NULL;
    ck_assert_int_eq(spsim_hardware_load(path, &hw, &err), SPSIM_EFIELD);
    ck_assert_ptr_null(hw);
    ck_assert_msg(strstr(err.message, "hgx-h20.json: unsourced gpu.gemm_achievable_tflops.bf16, "
                                      "gpu.sm_count, gpu.hbm_bandwidth_GBps, "
                                      "gpu.hbm_achievable_GBps (each field's source says why): "
                                      "the time model needs them, so the profile is refused"),
                  "%s", err.message);
}
END_TEST

/* {"value": null} for a figure the time model needs: read by the listing loader only; absent is
 * still an error, and the GEMM derivations that would run the model are refused. */
START_TEST(unsourced_time_figures)
{
    char path[4096];
    ck_assert_int_eq(
        spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, "dgx-a100-80g", path, sizeof(path), NULL),
        SPSIM_OK);
    char *base = read_text(path);
    char *null_sm = edit(base, "\"sm_count\": {\"value\": 108,", "\"sm_count\": {\"value\": null,");
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_hardware_parse(null_sm, strlen(null_sm), "t.json", &hw, &err),
                     SPSIM_EFIELD);
    ck_assert_ptr_null(hw);
    ck_assert_msg(strstr(err.message, "t.json: unsourced gpu.sm_count (each field's source"), "%s",
                  err.message);
    char *absent = edit(base, "\"sm_count\": {", "\"_sm_count\": {");
    ck_assert_int_eq(spsim_hardware_parse(absent, strlen(absent), "t.json", &hw, &err),
                     SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, "field 'gpu.sm_count': is required but missing"), "%s",
                  err.message);
    /* dgx-a100-80g has a gemm_table: with the SM count unsourced it cannot be derived. */
    char tmp[] = "/tmp/spsim-h20-XXXXXX";
    int fd = mkstemp(tmp);
    ck_assert_int_ge(fd, 0);
    ck_assert(write(fd, null_sm, strlen(null_sm)) == (ssize_t)strlen(null_sm));
    close(fd);
    ck_assert_int_eq(spsim_hardware_load_listing(tmp, &hw, &err), SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, "field 'gpu.gemm_table': needs gpu.sm_count, which the "
                                      "profile marks unsourced"),
                  "%s", err.message);
    unlink(tmp);
    free(absent);
    free(null_sm);
    free(base);
}
END_TEST

START_TEST(profile_names_resolve)
{
    char path[4096];
    struct spsim_error err = {0};
    ck_assert_int_eq(
        spsim_profile_resolve(SPSIM_PROFILE_MODEL, "no-such-model", path, sizeof(path), &err),
        SPSIM_EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "no model profile named 'no-such-model'"));
    ck_assert_int_eq(
        spsim_profile_resolve(SPSIM_PROFILE_MODEL, "dir/file.json", path, sizeof(path), NULL),
        SPSIM_OK);
    ck_assert_str_eq(path, "dir/file.json");
}
END_TEST

/* The enum name table (profiles/names.c): the spellings of doc/profiles.md and Megatron-LM's
 * --recompute-granularity, each name parsed back to its value, unknown names refused. */
START_TEST(enum_names_round_trip)
{
    static const char *const dtypes[] = {"bf16", "fp16", "fp8", "nvfp4", "tf32", "fp32"};
    static const char *const modes[] = {"none", "selective", "full"};
    static const char *const ops[] = {"all_reduce", "all_gather", "reduce_scatter", "send_recv",
                                      "all_to_all"};
    enum spsim_dtype d;
    enum spsim_recompute r;
    enum spsim_coll_op o;
    for (int i = 0; i < 6; i++) {
        ck_assert_str_eq(spsim_dtype_name((enum spsim_dtype)i), dtypes[i]);
        ck_assert_int_eq(spsim_dtype_parse(dtypes[i], &d), SPSIM_OK);
        ck_assert_int_eq(d, i);
    }
    for (int i = 0; i < 5; i++) {
        ck_assert_str_eq(spsim_coll_op_name((enum spsim_coll_op)i), ops[i]);
        ck_assert_int_eq(spsim_coll_op_parse(ops[i], &o), SPSIM_OK);
        ck_assert_int_eq(o, i);
    }
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(spsim_recompute_name((enum spsim_recompute)i), modes[i]);
        ck_assert_int_eq(spsim_recompute_parse(modes[i], &r), SPSIM_OK);
        ck_assert_int_eq(r, i);
    }
    ck_assert_str_eq(spsim_recompute_name(SPSIM_RECOMPUTE_COUNT), "?");
    ck_assert_int_eq(spsim_dtype_parse("BF16", &d), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_recompute_parse("", &r), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_coll_op_parse(NULL, &o), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_coll_op_parse("all_reduce", NULL), SPSIM_EINVAL);
}
END_TEST

static Suite *
profiles_suite(void)
{
    Suite *s = suite_create("profiles");
    TCase *tc = tcase_create("model");
    tcase_add_loop_test(tc, model_bad_input, 0, sizeof(model_cases) / sizeof(model_cases[0]));
    tcase_add_test(tc, model_valid_and_empty);
    tcase_add_test(tc, model_nul_and_depth);
    tcase_add_test(tc, paper_shapes);
    tcase_add_test(tc, parameter_counts);
    tcase_add_test(tc, parameter_counts_nemo_dense);
    tcase_add_test(tc, parameter_counts_nemo_gpt3);
    suite_add_tcase(s, tc);
    tc = tcase_create("hardware");
    tcase_add_loop_test(tc, hardware_bad_input, 0, sizeof(hw_cases) / sizeof(hw_cases[0]));
    tcase_add_test(tc, dgx_b300_derivations);
    tcase_add_test(tc, gb300_nvl72_derivations);
    tcase_add_test(tc, hgx_h800_derivations);
    tcase_add_test(tc, hgx_h20_derivations);
    tcase_add_test(tc, unsourced_time_figures);
    suite_add_tcase(s, tc);
    tc = tcase_create("shipped");
    tcase_add_test(tc, shipped_profiles_load);
    tcase_add_test(tc, profile_names_resolve);
    tcase_add_test(tc, enum_names_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(profiles_suite());
}
