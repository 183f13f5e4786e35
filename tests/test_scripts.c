/*
 * Launch scripts as Megatron-LM's examples write them (tests/data/megatron, verbatim from
 * NVIDIA/Megatron-LM d98e8a64): control flow followed where the script's own variables and
 * the environment decide it, refused naming the line where they do not; and each shell
 * construct on a small script whose outcome is worked by hand from bash(1).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* A valid launch line's head; the scripts below add the flags they decide. */
#define HEAD                                                                                       \
    "pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 128 "   \
    "--vocab-size 1000 --bf16"

static int
parse_env(const char *text, const char *const *env, size_t nenv, struct spsim_megatron_config *mc,
          struct spsim_error *err)
{
    struct spsim_megatron_input in = {text, strlen(text), "launch.sh"};
    struct spsim_megatron_context ctx = {env, nenv, NULL};
    return spsim_megatron_parse_inputs(&in, 1, &ctx, mc, err);
}

/* The configuration of a script that must be accepted. */
static struct spsim_megatron_config
accepted(const char *text, const char *const *env, size_t nenv)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse_env(text, env, nenv, &mc, &err) == SPSIM_OK, "%s\n%s", err.message, text);
    return mc;
}

static void
refused(const char *text, int rc, const char *message)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_int_eq(parse_env(text, NULL, 0, &mc, &err), rc);
    ck_assert_str_eq(err.message, message);
    ck_assert_ptr_null(mc.model);
}

/* The script's configuration evaluates; then the model, the profile and the text are freed. */
static void
evaluate_and_free(struct spsim_megatron_config *mc, struct spsim_hardware *hw, char *text)
{
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(mc->model, hw, &mc->par, &r, &err) == SPSIM_OK, "%s", err.message);
    spsim_model_destroy(mc->model);
    spsim_hardware_destroy(hw);
    free(text);
}

/* if/elif/else and case on the script's variables, for over words, && and ||, $(( )). */
START_TEST(flow_decided)
{
    struct spsim_megatron_config mc =
        accepted("MODE=b\n"
                 "if [ \"$MODE\" = a ]; then TP=1\n"
                 "elif [[ $MODE == b* && -n $MODE ]]; then TP=2\n"
                 "else TP=4; fi\n"
                 "case \"$MODE\" in\n  a|c) PP=3 ;;\n  b) PP=2 ;;\n  *) PP=1 ;;\nesac\n"
                 "EXTRA=()\nfor f in --swiglu --qk-layernorm; do\n  EXTRA+=($f)\ndone\n"
                 "GPUS=8; NODES=2; WORLD=$(( GPUS * NODES ))\n"
                 "[ -z \"$CP\" ] && CP=2 || CP=8\n"
                 "true || exit 1\n"
                 "torchrun --nproc_per_node $((WORLD / 2)) --nnodes 2 " HEAD
                 " --tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP "
                 "--context-parallel-size $CP ${EXTRA[@]}\n",
                 NULL, 0);
    ck_assert(mc.par.tp == 2 && mc.par.pp == 2 && mc.par.cp == 2);
    ck_assert_uint_eq(mc.par.dp, 16 / (2 * 2 * 2)); /* world 8 · 2 over tp · pp · cp */
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->mlp == SPSIM_MLP_SWIGLU && s->qk_norm);
    /* CP was tested unset: the script ran as in a clean environment, and says so */
    ck_assert_str_eq(mc.assumed, "variables the script tests that it does not set, taken as "
                                 "unset: CP (give them with --env NAME=VALUE)");
    spsim_model_destroy(mc.model);
}
END_TEST

/* --env NAME=VALUE: the environment the script reads (${NAME:-default}, its tests); the
 * script's own assignments still win, as bash runs it. */
START_TEST(flow_environment)
{
    static const char script[] =
        "TP=${TP:-8}\nPP=1\n"
        "if [ -n \"$BIG\" ]; then PP=4; fi\n"
        "torchrun --nproc_per_node 32 " HEAD " --tensor-model-parallel-size $TP "
        "--pipeline-model-parallel-size $PP\n";
    const char *env[] = {"TP=2", "BIG=1", "PP=7"};
    struct spsim_megatron_config mc = accepted(script, env, 3);
    ck_assert(mc.par.tp == 2 && mc.par.pp == 4 && mc.par.dp == 4);
    ck_assert_str_eq(mc.assumed, "");
    spsim_model_destroy(mc.model);
    mc = accepted(script, NULL, 0);
    ck_assert(mc.par.tp == 8 && mc.par.pp == 1);
    ck_assert_ptr_nonnull(strstr(mc.assumed, "unset: BIG "));
    spsim_model_destroy(mc.model);
    const char *bad[] = {"1X=2"};
    struct spsim_error err = {0};
    ck_assert_int_eq(parse_env(script, bad, 1, &mc, &err), SPSIM_EINVAL);
    ck_assert_str_eq(err.message, "--env '1X=2': not NAME=VALUE (NAME a shell variable's name)");
}
END_TEST

/* Conditions that cannot be decided: refused when the branches differ, followed when all but
 * one exit, or when none changes anything. */
START_TEST(flow_undecided)
{
    refused("if [ -f /etc/cluster ]; then TP=2; else TP=4; fi\n" HEAD
            " --tensor-model-parallel-size $TP\n",
            SPSIM_EPARSE,
            "launch.sh:1: 'if': cannot be decided without running the script (it tests a file "
            "(-f)); give the variable with --env NAME=VALUE, or write the branch's commands "
            "without it");
    refused("TP=2\nnvidia-smi | grep -q H100 && TP=8\n" HEAD " --tensor-model-parallel-size $TP\n",
            SPSIM_EPARSE,
            "launch.sh:2: '&&': cannot be decided without running the script (it tests the exit "
            "status of 'grep')");
    refused("case $(hostname) in\n  a*) TP=2 ;;\n  *) TP=4 ;;\nesac\n" HEAD "\n", SPSIM_EPARSE,
            "launch.sh:1: 'case': cannot be decided without running the script (it tests "
            "$(...)); give the variable with --env NAME=VALUE, or write the branch's commands "
            "without it");
    struct spsim_megatron_config mc =
        accepted("if [ ! -d logs ]; then\n  echo creating logs\n  mkdir -p logs\nfi\n"
                 "if ! command -v python >/dev/null; then\n  echo no python; exit 1\nfi\n"
                 "mkdir -p ckpt || { echo cannot; exit 1; }\n"
                 "while [[ $# -gt 0 ]]; do case $1 in -x) X=1; shift ;; esac; done\n" HEAD "\n",
                 NULL, 0);
    ck_assert_uint_eq(mc.par.tp, 1);
    spsim_model_destroy(mc.model);
    refused("while true; do TP=2; done\n" HEAD "\n", SPSIM_EPARSE,
            "launch.sh:1: 'while': a loop whose condition holds is not followed (spsim runs no "
            "loop but for over words)");
}
END_TEST

/* What spsim does not follow, refused at its line; what is not a command, not read as one. */
START_TEST(flow_refused)
{
    refused("f() {\n  TP=2\n}\nf\n" HEAD "\n", SPSIM_EPARSE,
            "launch.sh:4: 'f': a call of a function, which spsim does not follow (give the "
            "variables it would set with --env NAME=VALUE)");
    refused("source ./cluster.env\n" HEAD "\n", SPSIM_EPARSE,
            "launch.sh:1: 'source': spsim does not follow it (give the variables it would set "
            "with --env NAME=VALUE)");
    refused("exit 0\n" HEAD "\n", SPSIM_EFIELD,
            "launch.sh: no launch command (a command running a .py script, such as torchrun ... "
            "pretrain_gpt.py --num-layers ...) and no flags; a launch inside a string (bash -c, "
            "a here-document, sbatch --wrap) is not followed");
    refused("if true; then TP=1\n" HEAD "\n", SPSIM_EPARSE, "launch.sh:1: 'if' without its 'fi'");
    refused("fi\n", SPSIM_EPARSE, "launch.sh:1: 'fi' where a command was expected");
    /* Found by mutating the Llama 3 example: a ';' inside [[ ]] once looped for ever. */
    refused("if [[ \"$A\" == x ]\x01; then TP=2; fi\n" HEAD "\n", SPSIM_EPARSE,
            "launch.sh:1: '[[' without its ']]'");
    refused("for a in x & y; do :; done\n" HEAD "\n", SPSIM_EPARSE,
            "launch.sh:1: 'for' without its 'do'");
    /* A here-document is a command's input: its lines are not the script's flags. */
    struct spsim_megatron_config mc = accepted("cat > notes.txt <<'EOF'\n--num-layers 99\n"
                                               "EOF\n" HEAD "\n",
                                               NULL, 0);
    ck_assert_uint_eq(spsim_model_get_shape(mc.model)->layers, 4);
    spsim_model_destroy(mc.model);
}
END_TEST

/* Bounded whatever the script: 65 nested ifs, 300 · 300 loop iterations. */
START_TEST(flow_capped)
{
    static char text[8192];
    size_t n = 0;
    for (int i = 0; i < 65; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "if true; then\n");
    snprintf(text + n, sizeof(text) - n, HEAD "\n");
    refused(text, SPSIM_EPARSE, "launch.sh:65: compound commands nested deeper than 64 levels");
    static char loops[16384];
    n = (size_t)snprintf(loops, sizeof(loops), "W=\"");
    for (int i = 0; i < 300; i++)
        n += (size_t)snprintf(loops + n, sizeof(loops) - n, "x ");
    snprintf(loops + n, sizeof(loops) - n,
             "\"\nfor a in $W; do for b in $W; do :; done; done\n" HEAD "\n");
    refused(loops, SPSIM_EPARSE,
            "launch.sh:2: 'for': more than 65536 loop iterations (spsim's cap)");
    /* A long body run by many iterations: the reading is capped too. */
    size_t cap = 1 << 18;
    char *big = malloc(cap);
    n = (size_t)snprintf(big, cap, "W=\"");
    for (int i = 0; i < 30000; i++)
        n += (size_t)snprintf(big + n, cap - n, "x ");
    n += (size_t)snprintf(big + n, cap - n, "\"\nfor a in $W; do\n#");
    for (int i = 0; i < 1000; i++) /* a comment: read, no word made */
        n += (size_t)snprintf(big + n, cap - n, "..");
    snprintf(big + n, cap - n, "\ndone\n" HEAD "\n");
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_int_eq(parse_env(big, NULL, 0, &mc, &err), SPSIM_EPARSE);
    ck_assert_msg(strstr(err.message, "the script's control flow reads it more than four times "
                                      "over (spsim's cap)") != NULL,
                  "%s", err.message);
    free(big);
    /* 100,000 negations are a loop, not a recursion. */
    n = (size_t)snprintf(big = malloc(cap), cap, "%s", "");
    for (int i = 0; i < 100000; i++)
        n += (size_t)snprintf(big + n, cap - n, "! ");
    snprintf(big + n, cap - n, "false\n" HEAD "\n");
    mc = accepted(big, NULL, 0);
    spsim_model_destroy(mc.model);
    free(big);
}
END_TEST

static char *
data(const char *name)
{
    size_t len;
    return testutil_megatron_data(name, &len);
}

/* examples/mixtral/train_mixtral_8x7b_distributed.sh as written: NNODES=${SLURM_NNODES:-"1"},
 * its wandb branch not taken (WANDB_API_KEY unset), Llama2Tokenizer's 32000 tokens assumed
 * and both said. One node: pp 4 leaves dp 2, whose 2 ranks of a stage cannot hold ep 8
 * (parallel_state.py refuses it too); --env SLURM_NNODES=4 gives 32 GPUs, dp 8, and it
 * evaluates. */
START_TEST(mixtral_script)
{
    char *text = data("train_mixtral_8x7b_distributed.sh");
    struct spsim_megatron_config mc = accepted(text, NULL, 0);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->experts == 8 && s->experts_per_token == 2 && s->vocab == 32000);
    /* 46.7B (Mistral AI's release), as tests/test_megatron_moe.c works it */
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), 46702792704ull);
    ck_assert(mc.par.pp == 4 && mc.par.ep == 8 && mc.par.dp == 2 && mc.par.gbs == 256);
    ck_assert_str_eq(mc.assumed,
                     "variables the script tests that it does not set, taken as unset: "
                     "WANDB_API_KEY (give them with --env NAME=VALUE); Llama2Tokenizer taken as "
                     "Llama 2's 32000 tokens (give --vocab-size for another)");
    ck_assert_ptr_null(strstr(mc.unmodelled, "--wandb-project"));
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(mc.model, hw, &mc.par, NULL, &err), SPSIM_ECONFIG);
    spsim_model_destroy(mc.model);
    const char *env[] = {"SLURM_NNODES=4", "WANDB_API_KEY=k"};
    mc = accepted(text, env, 2);
    ck_assert_uint_eq(mc.par.dp, 8);
    ck_assert_ptr_nonnull(strstr(mc.unmodelled, "--wandb-project"));
    evaluate_and_free(&mc, hw, text);
}
END_TEST

/* examples/megatron_fsdp/train_llama3_8b_fsdp_h100_fp8.sh: USE_MEGATRON_FSDP=${...:-1} takes
 * the Megatron-FSDP branch (optim_grads_params: ZeRO-3), launched as `uv run python -m
 * torch.distributed.run` (USE_UV=1); with USE_MEGATRON_FSDP=0, the distributed optimizer. */
START_TEST(fsdp_script)
{
    char *text = data("train_llama3_8b_fsdp_h100_fp8.sh");
    struct spsim_megatron_config mc = accepted(text, NULL, 0);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), 8030261248ull);
    ck_assert(mc.par.zero == 3 && mc.par.dp == 8 && mc.par.dtype == SPSIM_DTYPE_FP8);
    ck_assert(mc.par.fp8_param_gather && mc.par.gbs == 128);
    ck_assert_ptr_null(strstr(mc.unmodelled, "python"));
    ck_assert_ptr_nonnull(strstr(mc.unmodelled, "--fsdp-double-buffer"));
    spsim_model_destroy(mc.model);
    const char *env[] = {"USE_MEGATRON_FSDP=0"};
    mc = accepted(text, env, 1);
    ck_assert(mc.par.zero == 0 && mc.par.distributed_optimizer);
    ck_assert_ptr_null(strstr(mc.unmodelled, "--fsdp-double-buffer"));
    spsim_model_destroy(mc.model);
    free(text);
}
END_TEST

/* examples/gptoss/02_train.sh: gpt-oss's layer at a small width (h 512, 64 heads of 8, 8 KV
 * groups, 4 experts of 2048, top 2, no biases, untied, vocabulary 128256): quick-GeGLU gated
 * as SwiGLU is (two fc1 halves), learned sinks, --window-size 127,0 on the first of each pair
 * of layers. By hand: attention 512·(512 + 2·64) + 512·512 = 589,824, 64 sinks, two norms
 * 1024, the router 512·4 = 2048, experts 4·3·512·2048 = 12,582,912: 13,175,872 a layer; 12
 * layers, 2·128256·512 embedding and output, the final norm 512: 289,445,120. Its defaults
 * (PP_SIZE = WORLD_SIZE = 8 over 12 layers) fail Megatron's own check (arguments.py:996-998 at
 * d98e8a64: num_layers divisible by the pipeline size); pp 4 runs. */
START_TEST(gptoss_script)
{
    char *text = data("gptoss_02_train.sh");
    struct spsim_megatron_config mc = accepted(text, NULL, 0);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->layers == 12 && s->hidden == 512 && s->heads == 64 && s->kv_heads == 8);
    ck_assert(s->experts == 4 && s->experts_per_token == 2 && s->expert_ffn_hidden == 2048);
    ck_assert(s->mlp == SPSIM_MLP_SWIGLU && !s->linear_bias && !s->tied_embeddings);
    ck_assert_int_eq(s->softmax_type, SPSIM_SOFTMAX_LEARNABLE);
    ck_assert(s->window == 128 && s->window_skip_freq == 2);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), 289445120ull);
    ck_assert(mc.par.pp == 8 && mc.par.dtype == SPSIM_DTYPE_FP8 && mc.par.gbs == 128);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(mc.model, hw, &mc.par, NULL, &err), SPSIM_ECONFIG);
    ck_assert_ptr_nonnull(strstr(err.message, "12 layers are not divisible by pp"));
    mc.par.pp = 4, mc.par.dp = 2;
    evaluate_and_free(&mc, hw, text);
}
END_TEST

/* The examples spsim refuses, each naming what it does not model. */
START_TEST(refused_scripts)
{
    static const struct {
        const char *file, *message;
    } cases[] = {
        {"train_bert_340m_distributed.sh",
         "launch.sh:73: 'pretrain_bert.py': spsim models pretrain_gpt.py's models (GPT and its "
         "mixtures of experts) and pretrain_hybrid.py's, not this one"},
        {"train_t5_220m_distributed.sh",
         "launch.sh:72: 'pretrain_t5.py': spsim models pretrain_gpt.py's models (GPT and its "
         "mixtures of experts) and pretrain_hybrid.py's, not this one"},
        /* The hybrid model is read (its case on MODEL_SCALE, the 800M pattern); its
         * GPTSentencePieceTokenizer's size is in a file spsim does not read. */
        {"mamba_train.sh", "launch.sh: --vocab-size: missing: spsim reads no tokenizer file, so "
                           "give the vocabulary's size (--vocab-size N)"},
        {"sbatch_mfsdp_deepseek_v3.sh",
         "launch.sh: no launch command (a command running a .py script, such as torchrun ... "
         "pretrain_gpt.py --num-layers ...) and no flags; a launch inside a string (bash -c, a "
         "here-document, sbatch --wrap) is not followed"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *text = data(cases[i].file);
        struct spsim_megatron_config mc;
        struct spsim_error err = {0};
        ck_assert_msg(parse_env(text, NULL, 0, &mc, &err) != SPSIM_OK, "%s", cases[i].file);
        ck_assert_msg(strcmp(err.message, cases[i].message) == 0, "%s: %s", cases[i].file,
                      err.message);
        free(text);
    }
}
END_TEST

static Suite *
scripts_suite(void)
{
    Suite *s = suite_create("scripts");
    TCase *tc = tcase_create("flow");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, flow_decided);
    tcase_add_test(tc, flow_environment);
    tcase_add_test(tc, flow_undecided);
    tcase_add_test(tc, flow_refused);
    tcase_add_test(tc, flow_capped);
    tcase_add_test(tc, mixtral_script);
    tcase_add_test(tc, fsdp_script);
    tcase_add_test(tc, gptoss_script);
    tcase_add_test(tc, refused_scripts);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(scripts_suite());
}
