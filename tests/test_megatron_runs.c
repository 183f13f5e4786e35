/*
 * Megatron-LM's functional-test cases (tests/data/megatron-functional, verbatim from
 * NVIDIA/Megatron-LM d98e8a64): each model_config.yaml read as the launch line its CI runs
 * (tests/functional_tests/shell_test_utils/_run_training.sh), every figure below read off the
 * file by hand, with Megatron-LM's defaults (arguments.py) where it is silent.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "testutil.h"

static char *
read_case(const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/data/megatron-functional/%s/model_config.yaml",
             getenv("SPSIM_DATA_DIR"), name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static int
parse_case(const char *name, struct spsim_megatron_config *mc, struct spsim_error *err)
{
    size_t len;
    char *text = read_case(name, &len);
    char origin[256];
    snprintf(origin, sizeof(origin), "%s/model_config.yaml", name);
    int rc = spsim_megatron_parse(text, len, origin, mc, err);
    free(text);
    return rc;
}

/* gpt3_mcore_te_tp1_pp4_vp1: 12 layers of h 512, 8 heads, 1 layer per virtual stage over pp 4
 * (vpp 12 / (4 · 1) = 3), micro-batch 4 of 32, seq 1024, bf16, --attention-backend unfused
 * (no flash), GPT-2's BPE (--vocab-file and --merge-file: 50257 tokens), GELU 4h MLP,
 * LayerNorm, learned positions, biases, tied embeddings, dropout 0.1 (absent, Megatron's
 * default). ENV_VARS and the CI-only flags are listed as not modelled. */
START_TEST(gpt_case_as_the_ci_runs_it)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse_case("gpt/gpt3_mcore_te_tp1_pp4_vp1", &mc, &err) == SPSIM_OK, "%s",
                  err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_uint_eq(s->layers, 12);
    ck_assert_uint_eq(s->hidden, 512);
    ck_assert_uint_eq(s->heads, 8);
    ck_assert_uint_eq(s->kv_heads, 8);
    ck_assert_uint_eq(s->ffn_hidden, 2048);
    ck_assert_uint_eq(s->vocab, 50257);
    ck_assert_uint_eq(s->seq_len, 1024);
    ck_assert_int_eq(s->attention, SPSIM_ATTENTION_STANDARD);
    ck_assert_int_eq(s->mlp, SPSIM_MLP_GELU);
    ck_assert_int_eq(s->norm, SPSIM_NORM_LAYERNORM);
    ck_assert_int_eq(s->position, SPSIM_POSITION_LEARNED);
    ck_assert(s->dropout && s->linear_bias && s->tied_embeddings);
    ck_assert_uint_eq(mc.par.tp, 1);
    ck_assert_uint_eq(mc.par.pp, 4);
    ck_assert_uint_eq(mc.par.vpp, 3);
    ck_assert_uint_eq(mc.par.mbs, 4);
    ck_assert_uint_eq(mc.par.gbs, 32);
    ck_assert_uint_eq(mc.par.seq, 1024);
    ck_assert_int_eq(mc.par.dtype, SPSIM_DTYPE_BF16);
    ck_assert(!mc.par.distributed_optimizer && !mc.par.sp);
    ck_assert(!mc.world_size_given); /* the CI's recipe gives the GPUs, not the file */
    /* ENV_VARS' names first, then the flags in file order. */
    static const char head[] = "CUDA_DEVICE_MAX_CONNECTIONS, NVTE_ALLOW_NONDETERMINISTIC_ALGO, "
                               "NCCL_ALGO, CUBLAS_WORKSPACE_CONFIG, PYTORCH_CUDA_ALLOC_CONF, "
                               "--log-params-norm, --log-num-zeros-in-grad, ";
    ck_assert_msg(strncmp(mc.unmodelled, head, sizeof(head) - 1) == 0, "%s", mc.unmodelled);
    ck_assert_msg(strstr(mc.unmodelled, "--deterministic-mode") != NULL, "%s", mc.unmodelled);
    spsim_model_destroy(mc.model);
}
END_TEST

/* The CI's rules in memory: `true` is the flag alone, an empty value drops the flag, a value
 * in [ ] is its words, ${VAR} the CI does not set is refused in a flag spsim maps. */
START_TEST(ci_value_rules)
{
    static const char base[] = "MODEL_ARGS:\n"
                               "  --num-layers: 4\n"
                               "  --hidden-size: 256\n"
                               "  --num-attention-heads: 4\n"
                               "  --seq-length: 128\n"
                               "  --vocab-size: 1000\n"
                               "  --bf16: true\n"
                               "  --micro-batch-size:\n"
                               "  --recompute-granularity: selective\n"
                               "  --recompute-modules: \"[core_attn mlp]\"\n";
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_parse(base, strlen(base), "c/model_config.yaml", &mc, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    ck_assert_uint_eq(mc.par.mbs, 1); /* dropped: Megatron's default */
    ck_assert_int_eq(mc.par.recompute, SPSIM_RECOMPUTE_SELECTIVE);
    ck_assert_uint_eq(mc.par.recompute_modules, SPSIM_RMOD_CORE_ATTN | SPSIM_RMOD_MLP);
    spsim_model_destroy(mc.model);
    static const char var[] = "MODEL_ARGS:\n"
                              "  --num-layers: ${LAYERS}\n";
    ck_assert_int_eq(spsim_megatron_parse(var, strlen(var), "c/model_config.yaml", &mc, &err),
                     SPSIM_EFIELD);
    ck_assert_str_eq(err.message, "c/model_config.yaml:2: --num-layers: '${LAYERS}' uses LAYERS, "
                                  "which the file does not set (spsim does not run the script: "
                                  "write the value)");
    static const char nested[] = "MODEL_ARGS:\n"
                                 "  --num-layers:\n"
                                 "    - 4\n";
    ck_assert_int_eq(spsim_megatron_parse(nested, strlen(nested), "c/model_config.yaml", &mc, &err),
                     SPSIM_EFIELD);
    ck_assert_str_eq(err.message, "c/model_config.yaml:3: --num-layers: a nested value (the CI "
                                  "passes scalars only)");
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("megatron_runs");
    TCase *tc = tcase_create("functional tests");
    tcase_add_test(tc, gpt_case_as_the_ci_runs_it);
    tcase_add_test(tc, ci_value_rules);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(suite());
}
