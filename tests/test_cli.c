/* The spsim command as a user meets it: output contracts, exit codes, messages. argv[1] is the
 * path of the spsim executable. */
#define _GNU_SOURCE /* mkstemps, mkdtemp */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static const char *spsim;

struct run {
    int status;
    char out[1 << 20];
    char err[8192];
};

/* Run "spsim ARGS" through the shell, capturing stdout and stderr. */
static void
run(struct run *r, const char *args)
{
    char errfile[] = "/tmp/spsim-cli-err-XXXXXX";
    int fd = mkstemp(errfile);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "%s %s 2>'%s'", spsim, args, errfile);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t n = fread(r->out, 1, sizeof(r->out) - 1, p);
    r->out[n] = '\0';
    int st = pclose(p);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    FILE *e = fopen(errfile, "r");
    n = e ? fread(r->err, 1, sizeof(r->err) - 1, e) : 0;
    r->err[n] = '\0';
    if (e)
        fclose(e);
    unlink(errfile);
}

static struct run R;

static const cJSON *
path(const cJSON *root, const char *dotted)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", dotted);
    const cJSON *node = root;
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && node;
         k = strtok_r(NULL, ".", &save))
        node = cJSON_GetObjectItemCaseSensitive(node, k);
    return node;
}

/* An integer written as an integer: digits only in the document. */
static void
check_integer(const char *text, const cJSON *root, const char *dotted)
{
    const cJSON *v = path(root, dotted);
    ck_assert_msg(cJSON_IsNumber(v), "%s missing or not a number", dotted);
    const char *key = strrchr(dotted, '.') ? strrchr(dotted, '.') + 1 : dotted;
    char pat[128];
    snprintf(pat, sizeof(pat), "\"%s\": ", key);
    const char *at = strstr(text, pat);
    ck_assert_ptr_nonnull(at);
    at += strlen(pat);
    ck_assert_msg(*at >= '0' && *at <= '9', "%s is not written as an integer", dotted);
    while (*at >= '0' && *at <= '9')
        at++;
    ck_assert_msg(*at == ',' || *at == '\n' || *at == '}', "%s is not written as an integer",
                  dotted);
}

START_TEST(query_json_document)
{
    run(&R, "query --format json");
    ck_assert_int_eq(R.status, 0);
    cJSON *root = cJSON_Parse(R.out);
    ck_assert_ptr_nonnull(root);
    static const char *const integers[] = {"memory.activation_per_layer_bytes",
                                           "memory.activation_first_stage_bytes",
                                           "memory.weights_bytes",
                                           "memory.gradients_bytes",
                                           "memory.optimizer_bytes",
                                           "memory.total_bytes",
                                           "memory.activation_modes_bytes.none",
                                           "memory.activation_modes_bytes.tp",
                                           "memory.activation_modes_bytes.tp_sp",
                                           "memory.activation_modes_bytes.tp_selective",
                                           "memory.activation_modes_bytes.tp_sp_selective",
                                           "memory.activation_modes_bytes.full"};
    for (size_t i = 0; i < sizeof(integers) / sizeof(integers[0]); i++)
        check_integer(R.out, root, integers[i]);
    ck_assert(cJSON_IsBool(path(root, "memory.fits")));
    /* The defaults: GPT-3 175B, tp 8, SP, selective: the layer keeps 34sbh/t bytes. */
    ck_assert_double_eq(path(root, "memory.activation_per_layer_bytes")->valuedouble,
                        34.0 * 2048 * 12288 / 8);
    const cJSON *list = path(root, "comm.per_layer");
    ck_assert(cJSON_IsArray(list));
    ck_assert_int_eq(cJSON_GetArraySize(list), 10);
    for (const cJSON *e = list->child; e; e = e->next) {
        static const char *const keys[] = {"phase", "op", "message_bytes", "wire_bytes_per_rank",
                                           "tier"};
        for (size_t k = 0; k < 5; k++)
            ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(e, keys[k]));
        ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(e, "message_bytes")->valuedouble,
                            2048.0 * 12288 * 2);
    }
    static const char *const times[] = {"time.iteration_s",
                                        "time.tokens_per_s",
                                        "time.model_flops",
                                        "time.hardware_flops",
                                        "time.mfu",
                                        "time.hfu",
                                        "time.tflops_per_gpu",
                                        "time.layer_forward_s",
                                        "time.layer_backward_s"};
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
        const cJSON *v = path(root, times[i]);
        ck_assert_msg(cJSON_IsNumber(v) && v->valuedouble > 0, "%s", times[i]);
    }
    /* Per GPU: the paper's setting's 64 sequences of 2048 tokens per iteration on 64 GPUs. */
    double per_gpu = path(root, "time.tokens_per_s_per_gpu")->valuedouble;
    double iteration = path(root, "time.iteration_s")->valuedouble;
    ck_assert_double_eq_tol(per_gpu, 64.0 * 2048 / iteration / 64, 1e-9 * per_gpu);
    cJSON_Delete(root);
}
END_TEST

/* --train-tokens: the "train" object after the result's sections, its figures the result's
 * iteration time times ceil(tokens / (gbs·seq)) (llama3-8b: 64 × 8192 = 524,288 tokens an
 * iteration, 1e9 tokens = 1908 iterations), 8 GPUs at 700 W (dgx-h100), $2 a GPU-hour. */
START_TEST(query_train_plan)
{
    run(&R, "query --model llama3-8b --hw dgx-h100 --tp 2 --pp 1 --vpp 1 --dp 4 --gbs 64 "
            "--train-tokens 1e9 --gpu-hour-price 2 --format json");
    ck_assert_int_eq(R.status, 0);
    cJSON *root = cJSON_Parse(R.out);
    ck_assert_ptr_nonnull(root);
    double it = path(root, "time.iteration_s")->valuedouble;
    ck_assert_double_eq(path(root, "train.iterations")->valuedouble, 1908);
    double wall = 1908 * it;
    ck_assert_double_eq_tol(path(root, "train.wall_s")->valuedouble, wall, 1e-9 * wall);
    ck_assert_double_eq_tol(path(root, "train.energy_kWh")->valuedouble, 8 * 700 * wall / 3.6e6,
                            1e-9 * wall);
    ck_assert_double_eq_tol(path(root, "train.cost")->valuedouble, 8 * wall / 3600 * 2,
                            1e-9 * wall);
    cJSON_Delete(root);
    run(&R, "query --model llama3-8b --hw hgx-h800 --tp 2 --pp 1 --vpp 1 --dp 4 --gbs 64 "
            "--train-tokens 1e9");
    ck_assert_int_eq(R.status, 0);
    ck_assert_ptr_nonnull(strstr(R.out, "Time and cost to train 1e+09 tokens"));
    ck_assert_ptr_nonnull(strstr(R.out, "energy not given: unsourced: no source read states "
                                        "H800's board power"));
}
END_TEST

START_TEST(query_table_and_csv)
{
    run(&R, "query");
    ck_assert_int_eq(R.status, 0);
    for (int i = 0; i < SPSIM_MODE_COUNT; i++)
        ck_assert_ptr_nonnull(strstr(R.out, spsim_act_mode_name(i)));
    ck_assert_ptr_nonnull(strstr(R.out, "<- this config"));
    ck_assert_ptr_nonnull(strstr(R.out, "MFU"));
    run(&R,
        "query --format csv --model llama3-8b --hw dgx-h100 --tp 2 --pp 1 --vpp 1 --dp 4 --gbs 64");
    ck_assert_int_eq(R.status, 0);
    char *nl = strchr(R.out, '\n');
    ck_assert_ptr_nonnull(nl);
    size_t header = 0, row = 0;
    for (char *c = R.out; c < nl; c++)
        header += *c == ',';
    for (char *c = nl + 1; *c && *c != '\n'; c++)
        row += *c == ',';
    ck_assert_uint_eq(header, row);
    /* The sweep's header: configuration columns named as the options (doc/sweep.md). */
    ck_assert(strncmp(R.out, "model,hw,tp,pp,dp,", 18) == 0);
    ck_assert(strncmp(nl + 1, "llama3-8b,dgx-h100,2,", 21) == 0);
}
END_TEST

static const struct {
    const char *args;
    int status;
    const char *message;
} errors[] = {
    {"query --tp x", 2, "--tp: 'x' is not an integer"},
    {"query --tp -8", 2, "--tp: '-8' is not an integer"},
    {"query --mbs 0", 2, "--mbs: '0' is not an integer in [1, 65536]"},
    {"query --recompute some", 2, "--recompute: 'some' is not one of none, selective, full"},
    {"query --bogus", 2, "unknown option '--bogus'"},
    {"query --format xml", 2, "--format: 'xml'"},
    {"query --model /nonexistent/m.json", 3, "/nonexistent/m.json: cannot open"},
    {"query --model no-such-model", 3, "no model profile named 'no-such-model'"},
    {"query --tp 7", 4, "96 attention heads are not divisible by tp = 7"},
    {"query --mbs 2 --gbs 65", 4, "global batch size 65 is not divisible"},
    {"query --recompute-modules core_attn,attention", 2,
     "--recompute-modules: 'core_attn,attention' is not a list of core_attn, layernorm, mlp"},
    {"query --recompute-method zigzag", 2,
     "--recompute-method: 'zigzag' is not one of default, uniform, block"},
    {"query --offload-layers x", 2, "--offload-layers: 'x'"},
    {"query --recompute full --recompute-method block", 4,
     "recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: 12"},
    {"query --recompute-modules moe", 4, "this model is dense"},
    {"query --offload-layers 4", 4,
     "Currently there is no support for Pipeline parallelism with CPU offloading"},
    {"explain --recompute-modules mla_up_proj", 4,
     "mla_up_proj in recompute_modules is only supported with multi_latent_attention."},
    {"sweep --model gpt3-175b --hw dgx-h100 --recompute-modules core_attn+mlp,bogus", 2,
     "--recompute-modules: 'bogus' is not default or modules joined by '+'"},
    {"query --cp 0", 2, "--cp: '0' is not an integer in [1, 65536]"},
    {"query --cp-comm-type ring", 2,
     "--cp-comm-type: 'ring' is not one of p2p, all_gather, a2a, a2a+p2p"},
    {"query --hierarchical-cp-sizes 2", 2, "'2' is not two sizes A,B"},
    {"query --zero 4", 2, "--zero: '4'"},
    {"query --fsdp full", 2, "--fsdp: 'full' is not one of optim, optim_grads"},
    {"query --cp 3", 4, "seq-length should be a multiple of 2 * context-parallel-size"},
    {"query --model llama3-8b --hw dgx-h100 --cp 4 --cp-comm-type a2a+p2p", 4,
     "--hierarchical-context-parallel-sizes must be set when a2a+p2p is used"},
    {"query --overlap-param-gather", 4, "--overlap-param-gather only supported with"},
    {"query --train-tokens 0", 2, "--train-tokens: '0' is not a number in [1, 1e+18]"},
    {"query --gpu-hour-price 2", 2, "--gpu-hour-price: needs --train-tokens"},
    {"query --train-tokens 1e9 --format csv", 2, "--train-tokens: with --format table or json"},
    {"query --exp-avg-dtype fp12", 2, "--exp-avg-dtype: 'fp12' is not one of fp32 fp16 bf16 fp8"},
    {"bogus", 2, "unknown command 'bogus'"},
    {"list gadgets", 2, "'gadgets' is not one of models, hardware"},
    {"check", 2, "expected at least one FILE"},
    {"collective --op all_reduce --gpus 8", 2, "--op, --gpus and --bytes are required"},
    {"collective --op broadcast --gpus 8 --bytes 1M", 2, "--op: 'broadcast'"},
    {"collective --op all_reduce --gpus 8 --bytes 1X", 2, "--bytes: '1X' is not a size"},
    {"collective --op all_reduce --gpus 12 --nodes 5 --bytes 1M", 2, "do not spread evenly"},
};

START_TEST(bad_input_exit_codes)
{
    run(&R, errors[_i].args);
    ck_assert_msg(R.status == errors[_i].status, "'%s': exit %d, stderr '%s'", errors[_i].args,
                  R.status, R.err);
    ck_assert_msg(strstr(R.err, "spsim: error: ") && strstr(R.err, errors[_i].message),
                  "'%s': stderr '%s' lacks '%s'", errors[_i].args, R.err, errors[_i].message);
    ck_assert_str_eq(R.out, "");
}
END_TEST

/* Defaults for a model other than the paper's: no interleaving unless asked, pp the largest of
 * 8..1 dividing the layers (llama3-8b: 32 layers, 8 divides; llama3-405b: 126 = 2·3²·7, so 7);
 * SP at tp 1 is disabled with Megatron's warning (arguments.py), not refused. */
START_TEST(defaults_fit_the_model)
{
    static const struct {
        const char *args;
        long pp, vpp;
        bool sp;
    } cases[] = {
        {"query --model llama3-8b --hw dgx-h100 --format json", 8, 1, true},
        {"query --model llama3-405b --hw dgx-h100 --format json", 7, 1, true},
        {"query --model gpt3-175b --format json", 8, 3, true},
        {"query --model llama3-8b --vpp 2 --pp 4 --format json", 4, 2, true},
        {"query --tp 1 --sp --pp 1 --vpp 1 --format json", 1, 1, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run(&R, cases[i].args);
        ck_assert_msg(R.status == 0, "'%s': exit %d, stderr '%s'", cases[i].args, R.status, R.err);
        cJSON *root = cJSON_Parse(R.out);
        ck_assert_ptr_nonnull(root);
        ck_assert_int_eq((long)path(root, "config.pp")->valuedouble, cases[i].pp);
        ck_assert_int_eq((long)path(root, "config.vpp")->valuedouble, cases[i].vpp);
        ck_assert(cJSON_IsTrue(path(root, "config.sp")) == cases[i].sp);
        bool warned = strstr(R.err, "spsim: warning: Disabling sequence parallelism because "
                                    "tensor model parallelism is disabled") != NULL;
        ck_assert_msg(warned == !cases[i].sp, "'%s': stderr '%s'", cases[i].args, R.err);
        cJSON_Delete(root);
    }
}
END_TEST

START_TEST(check_reports_bad_files)
{
    char bad[] = "/tmp/spsim-bad-XXXXXX.json";
    int fd = mkstemps(bad, 5);
    ck_assert_int_ge(fd, 0);
    const char text[] =
        "{\"schema\": \"spsim-model/1\", \"name\": \"x\", \"source\": \"y\",\n \"layers\": -1}";
    ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
    close(fd);
    char args[256];
    snprintf(args, sizeof(args), "check '%s'", bad);
    run(&R, args);
    ck_assert_int_eq(R.status, 3);
    ck_assert_ptr_nonnull(strstr(R.err, "field 'layers': must be an integer in [1, 4096], got -1"));
    ck_assert_ptr_nonnull(strstr(R.err, bad));
    unlink(bad);
}
END_TEST

/* A name that would load as "llama" (cJSON stops at the NUL) or put invalid UTF-8 into JSON
 * output: refused, naming the field, exit 3. */
START_TEST(profile_strings_are_checked)
{
    static const char *const names[] = {"llama\\u0000evil", "llama\xff", "llama"};
    static const char *const reasons[] = {"holds \\u0000", "invalid UTF-8", NULL};
    for (int i = 0; i < 3; i++) {
        char path[] = "/tmp/spsim-name-XXXXXX.json";
        int fd = mkstemps(path, 5);
        ck_assert_int_ge(fd, 0);
        char text[512];
        int n = snprintf(text, sizeof(text),
                         "{\"schema\": \"spsim-model/1\", \"name\": \"%s\", \"source\": \"t\", "
                         "\"layers\": 32, \"hidden\": 4096, \"heads\": 32, \"kv_heads\": 8, "
                         "\"ffn_hidden\": 14336, \"vocab\": 128256, \"seq_len\": 8192, \"mlp\": "
                         "\"swiglu\", \"norm\": \"rmsnorm\", \"dropout\": false, \"attention\": "
                         "\"flash\", \"position_embedding\": \"rope\", \"linear_bias\": false, "
                         "\"tied_embeddings\": false}",
                         names[i]);
        ck_assert_int_eq(write(fd, text, (size_t)n), n);
        close(fd);
        char args[256];
        snprintf(args, sizeof(args),
                 "query --model '%s' --hw dgx-h100 --pp 1 --vpp 1 --format json", path);
        run(&R, args);
        unlink(path);
        if (!reasons[i]) { /* the same profile with a plain name loads */
            ck_assert_msg(R.status == 0, "exit %d: %s", R.status, R.err);
            ck_assert_ptr_nonnull(strstr(R.out, "\"model\": \"llama\""));
            continue;
        }
        ck_assert_msg(R.status == 3, "exit %d: %s", R.status, R.err);
        ck_assert_ptr_nonnull(strstr(R.err, "field 'name': "));
        ck_assert_ptr_nonnull(strstr(R.err, reasons[i]));
        ck_assert_str_eq(R.out, "");
    }
}
END_TEST

START_TEST(output_file_is_atomic)
{
    char dir[] = "/tmp/spsim-out-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char args[1024], file[600];
    snprintf(file, sizeof(file), "%s/q.json", dir);
    snprintf(args, sizeof(args), "query --format json -o '%s'", file);
    run(&R, args);
    ck_assert_int_eq(R.status, 0);
    ck_assert_str_eq(R.out, "");
    FILE *f = fopen(file, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    run(&R, "query --format json");
    ck_assert_str_eq(buf, R.out);
    /* An unwritable target: exit 1, and no temporary file left behind. */
    snprintf(args, sizeof(args), "query -o '%s/missing/q.json'", dir);
    run(&R, args);
    ck_assert_int_eq(R.status, 1);
    ck_assert_ptr_nonnull(strstr(R.err, "missing/q.json"));
    unlink(file);
    ck_assert_int_eq(rmdir(dir), 0); /* empty: nothing half-written */
}
END_TEST

START_TEST(explain_shows_the_seed_schedule)
{
    run(&R, "explain");
    ck_assert_int_eq(R.status, 0);
    ck_assert_ptr_nonnull(strstr(R.out, "g: all_gather"));
    ck_assert_ptr_nonnull(strstr(R.out, "ḡ: reduce_scatter"));
    ck_assert_ptr_nonnull(strstr(R.out, "wgrad AG: all_gather"));
    ck_assert_ptr_nonnull(strstr(R.out, "[s/t, b, h] = [256, 1, 12288]"));
    ck_assert_ptr_nonnull(strstr(R.out, "model-parallel-rng"));
    ck_assert_ptr_nonnull(strstr(R.out, "recompute"));
    run(&R, "explain --no-sp --recompute none");
    ck_assert_int_eq(R.status, 0);
    ck_assert_ptr_nonnull(strstr(R.out, "f̄: all_reduce"));
    ck_assert_ptr_nonnull(strstr(R.out, "f: identity"));
    /* Replicated dropout without SP: the same mask on every TP rank, the default RNG. */
    ck_assert_ptr_nonnull(strstr(R.out, "default"));
}
END_TEST

/* --cp and --fsdp through the command: the CP steps in explain, --fsdp as its --zero level. */
START_TEST(context_parallel_and_fsdp)
{
    const char *cfg = "--model llama3-8b --hw dgx-h100 --tp 2 --pp 1 --vpp 1 --gbs 8 --seq 8192";
    char args[512];
    snprintf(args, sizeof(args),
             "explain %s --cp 4 --cp-comm-type a2a+p2p "
             "--hierarchical-cp-sizes 2,2",
             cfg);
    run(&R, args);
    ck_assert_msg(R.status == 0, "%s", R.err);
    ck_assert_ptr_nonnull(strstr(R.out, "Context parallelism: cp 4, a2a+p2p (A2A over 2, p2p "
                                        "ring over 2)"));
    ck_assert_ptr_nonnull(strstr(R.out, "cp: send_recv"));
    ck_assert_ptr_nonnull(strstr(R.out, "cp: all_to_all"));
    ck_assert_ptr_nonnull(strstr(R.out, "[s/(c·t), b, h] = [1024, 1, 4096]"));
    static char zero[sizeof(R.out)];
    snprintf(args, sizeof(args), "query %s --dp 8 --zero 2 --format json", cfg);
    run(&R, args);
    ck_assert_int_eq(R.status, 0);
    memcpy(zero, R.out, sizeof(zero));
    snprintf(args, sizeof(args), "query %s --dp 8 --fsdp optim_grads --format json", cfg);
    run(&R, args);
    ck_assert_int_eq(R.status, 0);
    ck_assert_str_eq(R.out, zero);
    ck_assert_ptr_nonnull(strstr(R.out, "\"zero\": 2"));
}
END_TEST

START_TEST(collective_json_and_table)
{
    run(&R, "collective --op all_gather --gpus 8 --bytes 1G --format json");
    ck_assert_int_eq(R.status, 0);
    cJSON *root = cJSON_Parse(R.out);
    ck_assert_ptr_nonnull(root);
    double t = cJSON_GetObjectItem(root, "time_s")->valuedouble;
    double alg = cJSON_GetObjectItem(root, "algbw_GBps")->valuedouble;
    double bus = cJSON_GetObjectItem(root, "busbw_GBps")->valuedouble;
    /* nccl-tests: algbw = S/t (GB = 1e9), busbw = algbw·(n−1)/n for AllGather. */
    ck_assert_double_eq_tol(alg, 1073741824.0 / t / 1e9, 1e-9);
    ck_assert_double_eq_tol(bus, alg * 7 / 8, 1e-9);
    cJSON_Delete(root);
    run(&R, "collective --op all_reduce --gpus 8 --bytes 8..1M:x4");
    ck_assert_int_eq(R.status, 0);
    int rows = 0;
    for (char *line = strtok(R.out, "\n"); line; line = strtok(NULL, "\n"))
        rows += line[0] != '#';
    ck_assert_int_eq(rows, 9); /* 8, 32, ..., 524288: nine sizes (2 MiB is past 1 MiB) */
}
END_TEST

START_TEST(every_command_has_help)
{
    static const char *const cmds[] = {"--help",      "query --help", "explain --help",
                                       "list --help", "check --help", "collective --help",
                                       "trace --help"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        run(&R, cmds[i]);
        ck_assert_msg(R.status == 0 && strstr(R.out, "Usage:"), "%s", cmds[i]);
    }
    run(&R, "list models");
    ck_assert_int_eq(R.status, 0);
    ck_assert_ptr_nonnull(strstr(R.out, "llama3-405b"));
    run(&R, "list hardware");
    ck_assert_int_eq(R.status, 0);
    ck_assert_ptr_nonnull(strstr(R.out, "gb200-nvl72"));
    ck_assert_ptr_nonnull(strstr(R.out, "gb300-nvl72"));
    ck_assert_ptr_nonnull(strstr(R.out, "hgx-h800"));
    /* hgx-h20: listed with its unsourced GEMM rate, HBM bandwidth and board power as n/s */
    ck_assert_ptr_nonnull(strstr(R.out,
                                 "hgx-h20        NVIDIA H20 141GB (H20-3e)    148     n/s   "
                                 "141  140.4     n/s    450   370.8    8   8x400     n/s\n"));
    /* ... checked, and refused by every command that times it: exit 3, the fields named */
    run(&R, "check \"$SPSIM_DATA_DIR/hardware/hgx-h20.json\"");
    ck_assert_int_eq(R.status, 0);
    ck_assert_ptr_nonnull(strstr(R.out, "hgx-h20.json: ok, time model refused: unsourced "
                                        "gpu.gemm_achievable_tflops.bf16, gpu.sm_count"));
    static const char *const timed[] = {
        "query --model llama3-8b --hw hgx-h20 --tp 1 --pp 1 --vpp 1",
        "collective --op all_reduce --gpus 8 --bytes 8 --hw hgx-h20",
        "trace --model llama3-8b --hw hgx-h20 --tp 1 --pp 1 --vpp 1"};
    for (size_t i = 0; i < sizeof(timed) / sizeof(timed[0]); i++) {
        run(&R, timed[i]);
        ck_assert_msg(R.status == 3 && strstr(R.err, "hgx-h20.json: unsourced "
                                                     "gpu.gemm_achievable_tflops.bf16, "
                                                     "gpu.sm_count, gpu.hbm_bandwidth_GBps, "
                                                     "gpu.hbm_achievable_GBps (each field's "
                                                     "source says why): the time model needs "
                                                     "them"),
                      "%s: %d %s", timed[i], R.status, R.err);
    }
    /* spsim trace: a trace-event document; a bad configuration is exit 4 as for query */
    run(&R, "trace --model llama3-8b --hw dgx-h100 --tp 2 --pp 2 --vpp 1 --gbs 4");
    ck_assert_int_eq(R.status, 0);
    ck_assert(strncmp(R.out, "{\"traceEvents\":[", 16) == 0);
    ck_assert_ptr_nonnull(strstr(R.out, "\"name\":\"forward mb 3 chunk 0\""));
    run(&R, "trace --tp 7");
    ck_assert_int_eq(R.status, 4);
}
END_TEST

static Suite *
cli_suite(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("commands");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, query_json_document);
    tcase_add_test(tc, query_table_and_csv);
    tcase_add_test(tc, query_train_plan);
    tcase_add_loop_test(tc, bad_input_exit_codes, 0, sizeof(errors) / sizeof(errors[0]));
    tcase_add_test(tc, defaults_fit_the_model);
    tcase_add_test(tc, check_reports_bad_files);
    tcase_add_test(tc, output_file_is_atomic);
    tcase_add_test(tc, profile_strings_are_checked);
    tcase_add_test(tc, explain_shows_the_seed_schedule);
    tcase_add_test(tc, context_parallel_and_fsdp);
    tcase_add_test(tc, collective_json_and_table);
    tcase_add_test(tc, every_command_has_help);
    suite_add_tcase(s, tc);
    return s;
}

int
main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli PATH-TO-SPSIM\n");
        return 2;
    }
    spsim = testutil_spsim_command(argv[1]);
    return testutil_run(cli_suite());
}
