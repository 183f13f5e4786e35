/*
 * Megatron-LM's functional-test cases (tests/data/megatron-functional, verbatim from
 * NVIDIA/Megatron-LM d98e8a64): each model_config.yaml read as the launch line its CI runs
 * (tests/functional_tests/shell_test_utils/_run_training.sh), every figure below read off the
 * file by hand, with Megatron-LM's defaults (arguments.py) where it is silent.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <math.h>

#include "testutil.h"

static char *
read_file(const char *rel, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", getenv("SPSIM_DATA_DIR"), rel);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s", path);
    char *buf = malloc(4 << 20);
    *len = fread(buf, 1, (4 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static char *
read_case(const char *name, size_t *len)
{
    char rel[512];
    snprintf(rel, sizeof(rel), "tests/data/megatron-functional/%s/model_config.yaml", name);
    return read_file(rel, len);
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
    /* the statistics logged every iteration (engine/opt_host.c) */
    ck_assert(mc.par.log_params_norm && mc.par.log_num_zeros_in_grad);
    ck_assert(!mc.world_size_given); /* the CI's recipe gives the GPUs, not the file */
    /* ENV_VARS' names first, then the flags in file order. */
    static const char head[] = "CUDA_DEVICE_MAX_CONNECTIONS, NVTE_ALLOW_NONDETERMINISTIC_ALGO, "
                               "NCCL_ALGO, CUBLAS_WORKSPACE_CONFIG, PYTORCH_CUDA_ALLOC_CONF, "
                               "--log-validation-ppl-to-tensorboard, ";
    ck_assert_msg(strncmp(mc.unmodelled, head, sizeof(head) - 1) == 0, "%s", mc.unmodelled);
    ck_assert_msg(strstr(mc.unmodelled, "--deterministic-mode") != NULL, "%s", mc.unmodelled);
    spsim_model_destroy(mc.model);
}
END_TEST

/* gpt3_mcore_te_tp2_pp2_resume_torch_dist_defer_embedding_wgrad_compute (d98e8a64): its
 * --defer-embedding-wgrad-compute and --wgrad-deferral-limit 2 are read, no longer listed as not
 * modelled; evaluated on 8 GPUs (dp 2, 4 micro-batches of 4 × 1024 tokens) the last stage keeps
 * min(2, 4 − 1) = 2 micro-batches' logits gradient, 2·4096·(50432 / 2) B, and output-layer input,
 * 2·4096·512 B (no SP): 2 · (206,569,472 + 4,194,304) = 421,527,552 B. */
START_TEST(deferred_wgrad_case)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse_case("gpt/gpt3_mcore_te_tp2_pp2_resume_torch_dist_defer_embedding_wgrad_"
                             "compute",
                             &mc, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert(mc.par.defer_embedding_wgrad_compute && mc.par.wgrad_deferral_limit == 2);
    ck_assert_msg(!strstr(mc.unmodelled, "defer") && !strstr(mc.unmodelled, "deferral"), "%s",
                  mc.unmodelled);
    ck_assert(mc.par.tp == 2 && mc.par.pp == 2 && !mc.par.sp);
    mc.par.dp = 2;
    struct spsim_hardware *hw = NULL;
    char path[512];
    snprintf(path, sizeof(path), "%s/hardware/dgx-h100.json", getenv("SPSIM_DATA_DIR"));
    ck_assert_msg(spsim_hardware_load(path, &hw, &err) == SPSIM_OK, "%s", err.message);
    struct spsim_result r;
    ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.memory.activation_deferred_wgrad_bytes, 421527552ull);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(mc.model);
}
END_TEST

/* Megatron-LM's own case with --cross-entropy-loss-fusion (d98e8a64 model_config.yaml; the
 * native fusion: no --cross-entropy-fusion-impl). At the loss its last stage holds the 16-bit
 * logits, calculate_logits_max's fp32 copy and the compiled exponentials (engine/summary.c):
 * 2 + 4 B per logit of s·b = 1024 · 4 tokens and v/t = 50,432 / 2 = 25,216 logits (GPT-2's
 * 50,257 padded to 128 · tp): 6 · 4096 · 25216 = 619,708,416 B, where the unfused case holds
 * 2 B (206,569,472); the case's golden values peak 409.4 MB above that case's, 4 B a logit
 * 413,138,944. */
START_TEST(cross_entropy_fusion_case)
{
    static const char *const cases[] = {"gpt/gpt3_mcore_te_tp2_pp2_cross_entropy_loss_fusion",
                                        "gpt/gpt3_mcore_te_tp2_pp2_resume_torch_dist"};
    static const uint64_t want[] = {619708416ull, 206569472ull};
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    char path[512];
    snprintf(path, sizeof(path), "%s/hardware/dgx-h100.json", getenv("SPSIM_DATA_DIR"));
    ck_assert_msg(spsim_hardware_load(path, &hw, &err) == SPSIM_OK, "%s", err.message);
    for (int i = 0; i < 2; i++) {
        struct spsim_megatron_config mc;
        ck_assert_msg(parse_case(cases[i], &mc, &err) == SPSIM_OK, "%s", err.message);
        ck_assert(mc.par.cross_entropy_loss_fusion == (i == 0));
        ck_assert(mc.par.cross_entropy_fusion_impl == SPSIM_CE_NATIVE);
        ck_assert_msg(!strstr(mc.unmodelled, "cross-entropy"), "%s", mc.unmodelled);
        mc.par.dp = 2;
        struct spsim_result r;
        ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s",
                      err.message);
        ck_assert_uint_eq(r.memory.activation_logits_working_bytes, want[i]);
        spsim_model_destroy(mc.model);
    }
    spsim_hardware_destroy(hw);
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

static struct spsim_hardware *
h100(void)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/hardware/dgx-h100.json", getenv("SPSIM_DATA_DIR"));
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_hardware_load(path, &hw, &err) == SPSIM_OK, "%s", err.message);
    return hw;
}

/* gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap: 12 layers over pp 4, vpp 3 (one layer a chunk),
 * 40 sequences of 4 on dp 2 (8 GPUs): M = 5 micro-batches, which Megatron's interleaved
 * schedule runs only because the case groups them by N = 5
 * (--microbatch-group-size-per-virtual-pipeline-stage; N in [pp, M], M mod N = 0). Rank 0
 * warms up with 2(p − 1) + (v − 1)N = 6 + 10 = 16 chunk forwards, more than the 15 of the
 * iteration: all 15 layers' activations are in flight. With gbs 64 (M = 8) and N = 8 it warms
 * up with 6 + 16 = 22 and holds 23 chunks; with the default N = pp = 4, 6 + 8 + 1 = 15. */
START_TEST(microbatch_groups)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse_case("gpt/gpt3_mcore_te_tp1_pp4_vp1_tunable_overlap", &mc, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    ck_assert_uint_eq(mc.par.microbatch_group, 5);
    ck_assert_uint_eq(mc.par.vpp, 3);
    mc.par.dp = 2;
    struct spsim_hardware *hw = h100();
    struct spsim_result r;
    ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.comm.microbatches, 5);
    ck_assert_uint_eq(r.memory.inflight_chunks_first_stage, 15);
    mc.par.gbs = 64;
    mc.par.microbatch_group = 8;
    ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.memory.inflight_chunks_first_stage, 23);
    ck_assert_uint_eq(r.memory.activation_layers_bytes, 23 * r.memory.activation_per_layer_bytes);
    mc.par.microbatch_group = 0;
    ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.memory.inflight_chunks_first_stage, 15);
    /* M = 5 with the default group: Megatron refuses (5 mod 4 = 1 < pp). */
    mc.par.gbs = 40;
    ck_assert_int_eq(spsim_evaluate(mc.model, hw, &mc.par, &r, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "but it is 1 (M = 5, N = 4, pp = 4)") != NULL, "%s",
                  err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(mc.model);
}
END_TEST

/* moe/gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental: the case spsim refused
 * for --make-vocab-size-divisible-by 3232 and a layout with MTP. GPT-2's 50257 tokens padded to
 * a multiple of 3232 · tp 2 = 6464: ceil(50257 / 6464) = 8, 51712 (build_tokenizer.py
 * vocab_size_with_padding). The layout "Et*3|(tt|)*6tmL" puts its one MTP layer (m) in the last
 * stage beside the loss, where spsim runs it: 16 layers, stages 3 + 2·6 + 1, 8 stages over pp 2
 * (vpp 4). Its recompute modules come as a list in [ ]: layernorm, mla_up_proj, mlp, moe_act. */
START_TEST(vocab_padding_and_mtp_layout)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse_case("moe/gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental",
                             &mc, &err) == SPSIM_OK,
                  "%s", err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_uint_eq(s->vocab, 50257);
    ck_assert_uint_eq(s->vocab_divisible_by, 3232);
    ck_assert_uint_eq(spsim_model_padded_vocab(mc.model, 2), 51712);
    ck_assert_uint_eq(s->layers, 16);
    ck_assert_uint_eq(s->mtp_layers, 1);
    ck_assert_uint_eq(s->experts, 32);
    ck_assert_uint_eq(s->experts_per_token, 4);
    ck_assert_str_eq(mc.par.pipeline_layout, "Et*3|(tt|)*6tmL");
    ck_assert_ptr_eq(mc.par.pipeline_layout, mc.pipeline_layout);
    ck_assert_uint_eq(mc.par.recompute_modules, SPSIM_RMOD_LAYERNORM | SPSIM_RMOD_MLA_UP_PROJ |
                                                    SPSIM_RMOD_MLP | SPSIM_RMOD_MOE_ACT);
    mc.par.dp = 2; /* 8 GPUs over tp 2 · pp 2 */
    struct spsim_hardware *hw = h100();
    struct spsim_result r;
    ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.padded_vocab, 51712);
    ck_assert_uint_eq(r.config.vpp, 4);
    /* MTP elsewhere than the last stage stays refused, and Megatron's count check holds. */
    mc.par.pipeline_layout = "Et*3|(tt|)*5tt|mtL";
    ck_assert_int_eq(spsim_evaluate(mc.model, hw, &mc.par, &r, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "decoder layers must be placed before MTP layers"), "%s",
                  err.message);
    mc.par.pipeline_layout = "Et*3|(tt|)*6tmmL";
    ck_assert_int_eq(spsim_evaluate(mc.model, hw, &mc.par, &r, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "must match mtp_num_layers (2 m, 1 MTP layers)"), "%s",
                  err.message);
    mc.par.pipeline_layout = "Et*3|(tt|)*5ttm|L";
    ck_assert_int_eq(spsim_evaluate(mc.model, hw, &mc.par, &r, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "MTP layers (m) outside the last stage are not modelled"),
                  "%s", err.message);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(mc.model);
}
END_TEST

/* gpt3_mcore_te_tp1_pp4_vp2_account_for_embedding_loss_in_pipeline_split: 6 layers, pp 4,
 * vpp 2, the embedding and the loss each counted as a layer: (6 + 2) / (4 · 2) = 1 a chunk, so
 * rank 0's first chunk and rank 3's last chunk build none (transformer_block.py
 * get_num_layers_to_build); the importer dropped both flags as unmodelled before, and 6 layers
 * do not split over 8 chunks. gpt3_mcore_te_tp1_pp4_vp1_uneven_pipeline: 2 layers on the first
 * and the last rank, (12 − 4) / 2 = 4 on each middle one. */
START_TEST(uneven_pipeline_flags)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse_case("gpt/gpt3_mcore_te_tp1_pp4_vp2_account_for_embedding_loss_in_"
                             "pipeline_split",
                             &mc, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert(mc.par.account_embedding && mc.par.account_loss);
    ck_assert_uint_eq(mc.par.pp, 4);
    ck_assert_uint_eq(mc.par.vpp, 2);
    ck_assert_msg(strstr(mc.unmodelled, "account-for") == NULL, "%s", mc.unmodelled);
    mc.par.dp = 2;
    struct spsim_hardware *hw = h100();
    struct spsim_result r;
    ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.memory.layers_first_stage, 1); /* chunk 0 none, chunk 1 one */
    ck_assert_uint_eq(r.memory.layers_last_stage, 1);
    spsim_model_destroy(mc.model);
    ck_assert_msg(parse_case("gpt/gpt3_mcore_te_tp1_pp4_vp1_uneven_pipeline", &mc, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    ck_assert_uint_eq(mc.par.first_stage_layers, 2);
    ck_assert_uint_eq(mc.par.last_stage_layers, 2);
    mc.par.dp = 2;
    ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_uint_eq(r.memory.layers_first_stage, 2);
    ck_assert_uint_eq(r.memory.layers_last_stage, 2);
    ck_assert_uint_eq(r.memory.layers_peak_stage, 4);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(mc.model);
}
END_TEST

#define terms_hw testutil_terms_hw

static const struct spsim_schedule_step *
step(const struct spsim_schedule_step *st, size_t n, enum spsim_phase ph, const char *op)
{
    for (size_t i = 0; i < n; i++)
        if (st[i].phase == ph && strcmp(st[i].op, op) == 0)
            return &st[i];
    return NULL;
}

/*
 * Sinkhorn routing (router.py sinkhorn_load_balancing; bytes per [T, E] element as argued
 * beside add_sinkhorn in src/engine/layer.c), on the synthetic profile of
 * tests/data/terms (HBM 1 TB/s achieved): tp 2 with SP, b 1, s 1024: T = 512 tokens, E = 128.
 * Top-1 (sigmoid): forward (44 + 4)·T·E + 12·T B, backward (5 + 6)·T·E; top-8 (softmax):
 * (44 + 12)·T·E + 12·8·T and (5 + 24)·T·E. No load-balancing loss and no tokens-per-expert
 * AllReduce (Megatron asserts a coefficient of 0).
 */
START_TEST(sinkhorn_rows)
{
    static struct spsim_schedule_step st[SPSIM_MAX_SCHEDULE_STEPS];
    struct spsim_hardware *hw = terms_hw();
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = 2;
    p.sp = true;
    p.ep = 4;
    p.dp = 4;
    p.gbs = 4;
    p.moe_dispatcher = SPSIM_MOE_ALLTOALL;
    const double te = 512.0 * 128, hbm = 1e12;
    for (uint32_t k = 1; k <= 8; k += 7) {
        struct spsim_model_shape s = {TESTUTIL_MOE_SHAPE};
        s.experts_per_token = k;
        s.load_balancing = SPSIM_BALANCE_SINKHORN;
        struct spsim_model *m = testutil_model(&s);
        size_t n = 0;
        struct spsim_error err = {0};
        ck_assert_msg(spsim_layer_schedule(m, hw, &p, st, SPSIM_MAX_SCHEDULE_STEPS, &n, &err) ==
                          SPSIM_OK,
                      "%s", err.message);
        const char *name =
            k == 1 ? "router Sinkhorn, top-1 and sigmoid" : "router Sinkhorn, top-k and softmax";
        const struct spsim_schedule_step *f = step(st, n, SPSIM_PHASE_FORWARD, name);
        const struct spsim_schedule_step *b = step(st, n, SPSIM_PHASE_BACKWARD, name);
        ck_assert_msg(f && b, "no '%s'", name);
        double fwd = ((k == 1 ? 48 : 56) * te + 12.0 * 512 * k) / hbm;
        double bwd = (k == 1 ? 11 : 29) * te / hbm;
        ck_assert_double_eq_tol(f->time_s, fwd, 1e-9 * fwd);
        ck_assert_double_eq_tol(b->time_s, bwd, 1e-9 * bwd);
        ck_assert_ptr_null(step(st, n, SPSIM_PHASE_FORWARD, "aux-loss scores and routing map"));
        ck_assert_ptr_null(step(st, n, SPSIM_PHASE_FORWARD, "router softmax and top-k"));
        ck_assert_ptr_null(step(st, n, SPSIM_PHASE_FORWARD, "tokens-per-expert AllReduce (TP×CP)"));
        spsim_model_destroy(m);
    }
    spsim_hardware_destroy(hw);
}
END_TEST

/* moe/gpt3_mcore_tp2_pp2_ep2_te_4experts2parallel: --moe-router-load-balancing-type sinkhorn,
 * top-1 of 4 experts; a coefficient above 0 with it is Megatron's assertion. */
START_TEST(sinkhorn_case)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse_case("moe/gpt3_mcore_tp2_pp2_ep2_te_4experts2parallel", &mc, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_int_eq(s->load_balancing, SPSIM_BALANCE_SINKHORN);
    ck_assert_uint_eq(s->experts, 4);
    ck_assert_uint_eq(s->experts_per_token, 1);
    spsim_model_destroy(mc.model);
    static const char coeff[] = "--num-layers 2 --hidden-size 256 --num-attention-heads 4 "
                                "--seq-length 128 --vocab-size 1000 --bf16 --num-experts 4 "
                                "--moe-router-load-balancing-type sinkhorn --moe-aux-loss-coeff "
                                "0.01\n";
    ck_assert_int_eq(spsim_megatron_parse(coeff, strlen(coeff), "x.sh", &mc, &err), SPSIM_ECONFIG);
    ck_assert_str_eq(err.message, "x.sh:1: --moe-aux-loss-coeff: Sinkhorn routing does not "
                                  "support aux loss (router.py): give 0");
}
END_TEST

/*
 * BigScience's Megatron-LM run on Jean Zay (tests/data/megatron-logs, 2021): its arguments
 * block gives 40 layers of h 6144, 32 heads of kv_channels 192, ffn 24576, seq 1024,
 * GPT2BPETokenizer (50257; the log's "padded vocab (size: 50257)"), tp 4, pp 4 over world 16
 * (dp 1), micro-batch 1 of 4, fp16, checkpoint_activations with checkpoint_num_layers 1 (full
 * recomputation, one layer a checkpoint: spsim's default full mode), no attention_backend nor
 * use_flash_attn (a Megatron-LM before flash attention: standard attention), dropout 0.1.
 * Its 20 iteration lines (every 10 iterations): the first two are the process's warm-up, the
 * one at iteration 30 reports a skipped iteration (fp16 loss scale): the 17 at 40 .. 200 are
 * kept, each of 10 iterations, median 1380.6 ms (sorted, the 9th of 17: 1377.4 1378.0 1378.9
 * 1379.8 1379.8 1380.0 1380.4 1380.6 [1380.6] ... 1564.1). The largest "max allocated" of the
 * 16 ranks' reports: 26204.5595703125 MB (ranks 0-3, the first stage).
 */
START_TEST(bigscience_log)
{
    size_t len;
    char *text =
        read_file("tests/data/megatron-logs/meg_gpt2_base_n4_dp1_tp4_pp4-1809579.out", &len);
    struct spsim_megatron_run run;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_log_parse(text, len, "n4.out", &run, &err) == SPSIM_OK, "%s",
                  err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(run.config.model);
    ck_assert_uint_eq(s->layers, 40);
    ck_assert_uint_eq(s->hidden, 6144);
    ck_assert_uint_eq(s->heads, 32);
    ck_assert_uint_eq(s->kv_heads, 32);
    ck_assert_uint_eq(s->head_dim, 192);
    ck_assert_uint_eq(s->ffn_hidden, 24576);
    ck_assert_uint_eq(s->seq_len, 1024);
    ck_assert_uint_eq(s->vocab, 50257);
    ck_assert_int_eq(s->attention, SPSIM_ATTENTION_STANDARD);
    ck_assert_int_eq(s->mlp, SPSIM_MLP_GELU);
    ck_assert(s->dropout && s->linear_bias && s->tied_embeddings);
    const struct spsim_parallel *p = &run.config.par;
    ck_assert_uint_eq(p->tp, 4);
    ck_assert_uint_eq(p->pp, 4);
    ck_assert_uint_eq(p->dp, 1);
    ck_assert_uint_eq(p->vpp, 1);
    ck_assert_uint_eq(p->mbs, 1);
    ck_assert_uint_eq(p->gbs, 4);
    ck_assert_uint_eq(p->seq, 1024);
    ck_assert_int_eq(p->dtype, SPSIM_DTYPE_FP16);
    ck_assert_int_eq(p->recompute, SPSIM_RECOMPUTE_FULL);
    ck_assert_int_eq(p->recompute_method, SPSIM_RECOMPUTE_METHOD_DEFAULT);
    ck_assert(run.config.world_size_given);
    ck_assert_uint_eq(run.gpus, 16);
    ck_assert_uint_eq(run.n_iterations, 17);
    ck_assert_uint_eq(run.n_skipped, 3);
    ck_assert_uint_eq(run.first_iteration, 40);
    ck_assert_uint_eq(run.last_iteration, 200);
    ck_assert_uint_eq(run.iterations[0].interval, 10);
    ck_assert_double_eq_tol(run.iterations[0].seconds, 1.3798, 1e-12);
    ck_assert_double_eq_tol(run.median_s, 1.3806, 1e-12);
    ck_assert(isnan(run.median_tflops));
    ck_assert_double_eq_tol(run.peak_allocated_bytes, 26204.5595703125 * 1048576, 1e-3);
    spsim_megatron_run_free(&run);
    free(text);
}
END_TEST

/* BigScience's 64-GPU probe: three iteration lines, each with a skipped iteration (fp16 loss
 * scale still falling): nothing is measured, and the error says why. */
START_TEST(log_without_measured_lines)
{
    size_t len;
    char *text = read_file("tests/data/megatron-logs/meg_gpt2_perf_n16.out", &len);
    struct spsim_megatron_run run;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_megatron_log_parse(text, len, "n16.out", &run, &err), SPSIM_EFIELD);
    ck_assert_str_eq(err.message, "n16.out: no measured iteration: 3 \"elapsed time per "
                                  "iteration (ms)\" lines, each the first two of a process "
                                  "(warm-up) or with skipped or NaN iterations");
    free(text);
    static const char none[] = "iteration 10/100 | elapsed time per iteration (ms): 5.0 |\n";
    ck_assert_int_eq(spsim_megatron_log_parse(none, strlen(none), "x.log", &run, &err),
                     SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, "x.log: no arguments block") == err.message, "%s",
                  err.message);
}
END_TEST

/* One `  name ..... value` line as arguments.py _print_args writes it at d98e8a64:
 * '  {} {} {}'.format(arg, '.' * (48 - len(arg)), value), behind a launcher's prefix. */
static size_t
arg_line(char *buf, size_t at, const char *prefix, const char *name, const char *value)
{
    int dots = 48 - (int)strlen(name);
    at += (size_t)sprintf(buf + at, "%s  %s ", prefix, name);
    for (int i = 0; i < dots; i++)
        buf[at++] = '.';
    return at + (size_t)sprintf(buf + at, " %s\n", value);
}

/*
 * A log in today's format (arguments.py _print_args, training.py training_log at d98e8a64),
 * every line behind srun's "3: " label: Llama-like 8 layers of h 1024, 8 heads in 2 groups,
 * SwiGLU 2816, RMSNorm, RoPE, no bias (add_bias_linear False), untied, attention_backend
 * AttnBackend.flash, tp 2 with SP, pp 2, world 8 (dp 2), bf16, selective recomputation of
 * ['core_attn', 'mlp'], the distributed optimizer. Its iteration lines at 1 (the first:
 * printed, timer not reset), 10 (its average still holds iteration 1), 20 and 30 (kept, 10
 * iterations each): median (150.0 + 160.0) / 2 ms, throughput (400.0 + 380.0) / 2.
 */
START_TEST(todays_log_format)
{
    static const char *const args[][2] = {
        {"add_bias_linear", "False"},
        {"attention_backend", "AttnBackend.flash"},
        {"bf16", "True"},
        {"ffn_hidden_size", "2816"},
        {"global_batch_size", "64"},
        {"group_query_attention", "True"},
        {"hidden_size", "1024"},
        {"micro_batch_size", "2"},
        {"normalization", "RMSNorm"},
        {"num_attention_heads", "8"},
        {"num_layers", "8"},
        {"num_query_groups", "2"},
        {"pipeline_model_parallel_size", "2"},
        {"position_embedding_type", "rope"},
        {"recompute_granularity", "selective"},
        {"recompute_modules", "['core_attn', 'mlp']"},
        {"seq_length", "4096"},
        {"sequence_parallel", "True"},
        {"swiglu", "True"},
        {"tensor_model_parallel_size", "2"},
        {"untie_embeddings_and_output_weights", "True"},
        {"use_distributed_optimizer", "True"},
        {"virtual_pipeline_model_parallel_size", "None"},
        {"vocab_size", "32000"},
        {"world_size", "8"},
    };
    static const char *const iterations[] = {
        "3:  [2026-08-22 10:00:00.000000] iteration        1/     100 | consumed samples:          "
        " "
        "64 | elapsed time per iteration (ms): 9000.0 | throughput per GPU (TFLOP/s/GPU): 7.0 | "
        "learning rate: 1.000000E-05 | global batch size:    64 | lm loss: 1.040000E+01 | loss "
        "scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        "3:  [2026-08-22 10:00:09.000000] iteration       10/     100 | consumed samples:          "
        "640 | elapsed time per iteration (ms): 1000.0 | throughput per GPU (TFLOP/s/GPU): 60.0 | "
        "global batch size:    64 | loss scale: 1.0 | number of skipped iterations:   0 | number "
        "of nan iterations:   0 |",
        "3:  [2026-08-22 10:00:11.000000] iteration       20/     100 | consumed samples:         "
        "1280 | elapsed time per iteration (ms): 150.0 | throughput per GPU (TFLOP/s/GPU): 400.0 "
        "| global batch size:    64 | loss scale: 1.0 | number of skipped iterations:   0 | "
        "number of nan iterations:   0 |",
        "3:  [2026-08-22 10:00:13.000000] iteration       30/     100 | consumed samples:         "
        "1920 | elapsed time per iteration (ms): 160.0 | throughput per GPU (TFLOP/s/GPU): 380.0 "
        "| global batch size:    64 | loss scale: 1.0 | number of skipped iterations:   0 | "
        "number of nan iterations:   0 |",
        "3: [Rank 6] (after 10 iterations) memory (MB) | allocated: 1000.00 | max allocated: "
        "3000.50 | reserved: 4000.00 | max reserved: 4000.00",
    };
    char *buf = malloc(1 << 16);
    size_t at =
        (size_t)sprintf(buf, "3: ------------------------ arguments ------------------------\n");
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
        at = arg_line(buf, at, "3: ", args[i][0], args[i][1]);
    at += (size_t)sprintf(buf + at,
                          "3: -------------------- end of arguments ---------------------\n");
    for (size_t i = 0; i < sizeof(iterations) / sizeof(iterations[0]); i++)
        at += (size_t)sprintf(buf + at, "%s\n", iterations[i]);
    struct spsim_megatron_run run;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_log_parse(buf, at, "today.log", &run, &err) == SPSIM_OK, "%s",
                  err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(run.config.model);
    ck_assert_uint_eq(s->layers, 8);
    ck_assert_uint_eq(s->kv_heads, 2);
    ck_assert_uint_eq(s->ffn_hidden, 2816);
    ck_assert_uint_eq(s->vocab, 32000);
    ck_assert_int_eq(s->mlp, SPSIM_MLP_SWIGLU);
    ck_assert_int_eq(s->norm, SPSIM_NORM_RMSNORM);
    ck_assert_int_eq(s->position, SPSIM_POSITION_ROPE);
    ck_assert_int_eq(s->attention, SPSIM_ATTENTION_FLASH);
    ck_assert(!s->linear_bias && !s->tied_embeddings);
    const struct spsim_parallel *p = &run.config.par;
    ck_assert(p->tp == 2 && p->pp == 2 && p->dp == 2 && p->sp && p->distributed_optimizer);
    ck_assert(p->mbs == 2 && p->gbs == 64 && p->seq == 4096 && p->dtype == SPSIM_DTYPE_BF16);
    ck_assert_int_eq(p->recompute, SPSIM_RECOMPUTE_SELECTIVE);
    ck_assert_uint_eq(p->recompute_modules, SPSIM_RMOD_CORE_ATTN | SPSIM_RMOD_MLP);
    ck_assert_uint_eq(run.n_iterations, 2);
    ck_assert_uint_eq(run.n_skipped, 2);
    ck_assert_uint_eq(run.first_iteration, 20);
    ck_assert_uint_eq(run.iterations[1].interval, 10);
    ck_assert_double_eq_tol(run.median_s, 0.155, 1e-12);
    ck_assert_double_eq_tol(run.median_tflops, 390.0, 1e-12);
    ck_assert_double_eq_tol(run.peak_allocated_bytes, 3000.5 * 1048576, 1e-6);
    spsim_megatron_run_free(&run);
    free(buf);
}
END_TEST

/* gpt3_mcore_te_tp1_pp4_vp1 on its recipe's 8 GPUs (dp 8 / (1 · 1 · 4) = 2) with its DGX H100
 * golden values: 49 iteration-time steps (2 .. 50), the first (4.79204 s, which averages in
 * iteration 1) left out; the median of the other 48 is (0.09182 + 0.09185) / 2 = 0.091835 s;
 * the largest mem-max-allocated-bytes is 4161191424. */
START_TEST(functional_case_run)
{
    size_t clen, glen;
    char *cfg = read_case("gpt/gpt3_mcore_te_tp1_pp4_vp1", &clen);
    char *gold = read_file("tests/data/megatron-functional/gpt/gpt3_mcore_te_tp1_pp4_vp1/"
                           "golden_values_dev_dgx_h100.json",
                           &glen);
    struct spsim_megatron_run run;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_megatron_case_parse(cfg, clen, "c/model_config.yaml", gold, glen, "g.json",
                                            8, &run, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert_uint_eq(run.gpus, 8);
    ck_assert_uint_eq(run.config.par.dp, 2);
    ck_assert_uint_eq(run.n_iterations, 48);
    ck_assert_uint_eq(run.n_skipped, 1);
    ck_assert_uint_eq(run.first_iteration, 3);
    ck_assert_uint_eq(run.last_iteration, 50);
    ck_assert_double_eq_tol(run.median_s, 0.091835, 1e-12);
    ck_assert_double_eq_tol(run.peak_allocated_bytes, 4161191424.0, 1e-3);
    spsim_megatron_run_free(&run);
    ck_assert_int_eq(spsim_megatron_case_parse(cfg, clen, "c/model_config.yaml", gold, glen,
                                               "g.json", 6, &run, &err),
                     SPSIM_ECONFIG);
    ck_assert_str_eq(err.message, "c/model_config.yaml: 6 GPUs are not a multiple of tp·cp·pp = 4");
    free(cfg);
    free(gold);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("megatron_runs");
    TCase *tc = tcase_create("functional tests");
    tcase_add_test(tc, gpt_case_as_the_ci_runs_it);
    tcase_add_test(tc, ci_value_rules);
    tcase_add_test(tc, deferred_wgrad_case);
    tcase_add_test(tc, cross_entropy_fusion_case);
    tcase_add_test(tc, microbatch_groups);
    tcase_add_test(tc, vocab_padding_and_mtp_layout);
    tcase_add_test(tc, uneven_pipeline_flags);
    tcase_add_test(tc, sinkhorn_rows);
    tcase_add_test(tc, sinkhorn_case);
    tcase_add_test(tc, bigscience_log);
    tcase_add_test(tc, log_without_measured_lines);
    tcase_add_test(tc, todays_log_format);
    tcase_add_test(tc, functional_case_run);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(suite());
}
