/*
 * Gemma 3's language model as Megatron-Bridge trains it (gemma3_provider.py and
 * common/te_layers.py at Megatron-Bridge 067f987): the Hugging Face config read through its
 * text_config, the post-attention and post-MLP norms (model key post_norms) in the parameter
 * count, in the layer's ops and in the saved activations, and what stays refused.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "engine/eval.h"
#include "engine/layer.h"
#include "testutil.h"

static struct spsim_model *
load_hf(const char *dir)
{
    char rel[256];
    snprintf(rel, sizeof(rel), "tests/data/hf/%s", dir);
    return testutil_model_path(rel);
}

/*
 * google/gemma-3-27b's config.json (tests/data/hf/gemma-3-27b, copied from
 * aws-neuron/neuronx-distributed-inference at cd1fd19: tests/data/hf/README.md), text_config:
 * L = 62, h = 5376, 32 heads and 16 KV heads of head_dim 128 (q = 4096, kv = 2048),
 * intermediate_size 21504, vocab_size 262208, tied (Gemma3TextConfig's default), Q/K norms of
 * head_dim (Gemma3Attention q_norm, k_norm; Bridge qk_layernorm True) and four norms of h per
 * layer (input, post-attention, pre-feedforward, post-feedforward; Bridge's mapping_registry
 * in gemma3_bridge.py maps all four). Per layer:
 *   linear_qkv  h·(q + 2kv)   = 5376·8192          =  44,040,192
 *   linear_proj q·h           = 4096·5376          =  22,020,096
 *   q/k norms   2·128                              =         256
 *   MLP         3·h·f         = 3·5376·21504       = 346,816,512
 *   norms       4·h                                =      21,504
 *                                                    412,898,560
 * 62 layers: 25,599,710,720; the tied table 262208·5376 = 1,409,630,208 (Bridge's divisor 64
 * keeps 262208 at tp 1: 262208 = 64·4097); the final norm 5376. Total 27,009,346,304.
 * The model card's "27B" is the whole Gemma3ForConditionalGeneration with its SigLIP vision
 * tower of about 0.4B (the Gemma 3 technical report, arXiv:2503.19786 Table 1, quotes 417M
 * vision encoder, 1,416M embedding and 25,600M non-embedding parameters for 27B; quoted, the
 * report not fetched here): the language model's non-embedding share here is 25,599,716,096.
 */
START_TEST(gemma3_27b_parameters)
{
    struct spsim_model *m = load_hf("gemma-3-27b");
    const struct spsim_model_shape *s = spsim_model_get_shape(m);
    ck_assert_uint_eq(s->layers, 62);
    ck_assert_uint_eq(s->hidden, 5376);
    ck_assert_uint_eq(s->heads, 32);
    ck_assert_uint_eq(s->kv_heads, 16);
    ck_assert_uint_eq(s->head_dim, 128);
    ck_assert_uint_eq(s->ffn_hidden, 21504);
    ck_assert_uint_eq(s->vocab, 262208);
    ck_assert_uint_eq(s->vocab_divisible_by, 64);
    ck_assert(s->tied_embeddings && s->qk_norm && s->post_norms);
    ck_assert_int_eq(s->mlp, SPSIM_MLP_SWIGLU); /* gated, gelu_pytorch_tanh */
    ck_assert_int_eq(s->norm, SPSIM_NORM_RMSNORM);
    /* layer_types: 1024-token windows, every 6th layer full (Bridge's (5, 1) pattern). */
    ck_assert_uint_eq(s->window, 1024);
    ck_assert_uint_eq(s->window_skip_freq, 6);
    ck_assert_uint_eq(s->seq_len, 1024); /* the stated default, not its 131072 positions */
    ck_assert_ptr_nonnull(strstr(spsim_model_description(m), "the vision tower (vision_config) "
                                                             "is not counted"));
    uint64_t h = 5376, layer = h * 8192 + 4096 * h + 2 * 128 + 3 * h * 21504 + 4 * h;
    ck_assert_uint_eq(layer, 412898560ull);
    ck_assert_uint_eq(62 * layer + 262208 * h + h, 27009346304ull);
    ck_assert_uint_eq(spsim_model_parameters(m, 1), 27009346304ull);
    uint64_t non_embedding = spsim_model_parameters(m, 1) - 262208 * h;
    ck_assert_uint_eq(non_embedding, 25599716096ull);
    ck_assert_double_eq_tol((double)non_embedding, 25.6e9, 0.001 * 25.6e9);
    ck_assert_double_eq_tol((double)spsim_model_parameters(m, 1) + 0.417e9, 27e9, 0.02 * 27e9);
    /* At tp 2 the table is padded to a multiple of 64·2: 262272 rows, 64 more. */
    ck_assert_uint_eq(spsim_model_padded_vocab(m, 2), 262272);
    spsim_model_destroy(m);
}
END_TEST

static const struct spsim_op *
find_op(const struct spsim_layer *L, const char *name)
{
    for (uint32_t i = 0; i < L->nops; i++)
        if (strcmp(L->ops[i].name, name) == 0)
            return &L->ops[i];
    return NULL;
}

/* Tensor parallelism t with SP, s = 4096, b = 1, the rest the defaults. */
static struct spsim_parallel
tp_sp(uint32_t t)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = t;
    p.sp = true;
    p.seq = 4096;
    p.mbs = 1;
    return p;
}

/* Both models evaluated at par, each result checked. */
static void
evaluate_both(struct spsim_model *a, struct spsim_model *b, const struct spsim_hardware *hw,
              const struct spsim_parallel *par, struct spsim_result *ra, struct spsim_result *rb)
{
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(a, hw, par, ra, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_msg(spsim_evaluate(b, hw, par, rb, &err) == SPSIM_OK, "%s", err.message);
}

/* The layer at tp_sp(t); rmods: the recompute modules (0: the default). */
static void
build(const struct spsim_model_shape *ms, uint32_t t, uint32_t rmods, struct spsim_layer *L)
{
    struct spsim_parallel p = tp_sp(t);
    if (rmods) {
        p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
        p.recompute_modules = rmods;
    }
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(ms, &p, &cfg);
    spsim_layer_build(ms, &cfg, L);
    ck_assert(L->ok);
}

/*
 * The post-norms' ops (layer.c add_post_norm) at tp 4 with SP, s = 4096, b = 1: each a TENorm
 * on the row-parallel linear's reduced output, s/t·b·h = 1024·5376 = 5,505,024 elements; its
 * forward reads x and writes y (2 B each: 4 B an element), its backward reads dy and x twice
 * and writes dx (10 B), as the input norms (apex/TE RMSNorm); it keeps its input, 2 B an
 * element (TE's RMSNorm saves x and rsigma for backward; rsigma, 4 B a token, left out as the
 * input norms' statistics are). The post-attention norm is in the attention block (group
 * layer), the post-MLP one in the MLP module (group mlp: mlp recomputation drops its input).
 */
START_TEST(post_norm_ops)
{
    struct spsim_model *m = load_hf("gemma-3-27b");
    struct spsim_model_shape ms = *spsim_model_get_shape(m);
    static struct spsim_layer with, without;
    build(&ms, 4, 0, &with);
    const double x = 4096.0 / 4 * 5376;
    ck_assert_double_eq_tol(x, 5505024.0, 0.1);
    const char *names[] = {"post-attention RMSNorm", "post-MLP RMSNorm"};
    for (int i = 0; i < 2; i++) {
        const struct spsim_op *op = find_op(&with, names[i]);
        ck_assert_msg(op != NULL, "%s", names[i]);
        ck_assert_int_eq(op->kind, SPSIM_OPK_MEMORY);
        ck_assert_int_eq(op->region, SPSIM_REGION_SEQ);
        ck_assert_double_eq_tol(op->fwd_bytes, 4 * x, 0.5);
        ck_assert_double_eq_tol(op->bwd_bytes, 10 * x, 0.5);
        ck_assert_uint_eq(op->nsaved, 1);
        ck_assert_uint_eq(op->saved[0].elements, 5505024ull);
        ck_assert_uint_eq(op->saved[0].bytes_per_element, 2);
        ck_assert_int_eq(op->group, i ? SPSIM_RG_MLP : SPSIM_RG_LAYER);
        ck_assert_int_eq(op->saved[0].group, op->group);
        /* Between the projection's (FC2's) ReduceScatter and the residual add. */
        ck_assert_int_eq(op[-1].kind, SPSIM_OPK_COMM);
        ck_assert_ptr_nonnull(strstr(op[1].name, "residual add"));
    }
    ms.post_norms = false;
    build(&ms, 4, 0, &without);
    ck_assert_uint_eq(with.nops, without.nops + 2);
    ck_assert_ptr_null(find_op(&without, "post-attention RMSNorm"));
    bool ok = true;
    ck_assert_uint_eq(spsim_layer_saved_bytes(&with, &ok) - spsim_layer_saved_bytes(&without, &ok),
                      2ull * 2 * 5505024);
    ck_assert(ok);
    spsim_model_destroy(m);
}
END_TEST

/* With --recompute-modules layernorm an input norm is replayed from a hook on the gradient of
 * the attention or MLP output it feeds (transformer_layer.py at Megatron-LM d98e8a6:
 * discard_output_and_register_recompute on attention_output_with_bias[0] and on the MLP's
 * output): Gemma's post-norm runs inside linear_proj and linear_fc2 (te_layers.py), so the
 * output is the post-norm's and the replay comes before its backward, right after the
 * residual add's. */
START_TEST(post_norm_recompute_hook)
{
    struct spsim_model *m = load_hf("gemma-3-27b");
    static struct spsim_layer L;
    static struct spsim_schedule sched;
    build(spsim_model_get_shape(m), 4, SPSIM_RMOD_LAYERNORM, &L);
    spsim_schedule_build(&L, &sched);
    const char *pairs[][3] = {{"residual add (MLP)", "RMSNorm 2", "post-MLP RMSNorm"},
                              {"residual add (attention)", "RMSNorm 1", "post-attention RMSNorm"}};
    for (int k = 0; k < 2; k++) {
        uint32_t i = 1;
        while (i + 1 < sched.nsteps && !(sched.steps[i].phase == SPSIM_PHASE_RECOMPUTE &&
                                         strcmp(sched.steps[i].op->name, pairs[k][1]) == 0))
            i++;
        ck_assert_msg(i + 1 < sched.nsteps, "no replay of %s", pairs[k][1]);
        ck_assert_int_eq(sched.steps[i - 1].phase, SPSIM_PHASE_BACKWARD);
        ck_assert_str_eq(sched.steps[i - 1].op->name, pairs[k][0]);
        ck_assert_int_eq(sched.steps[i + 1].phase, SPSIM_PHASE_BACKWARD);
        ck_assert_str_eq(sched.steps[i + 1].op->name, pairs[k][2]);
    }
    spsim_model_destroy(m);
}
END_TEST

/* The evaluation: per layer 2 norms of 2·s/t·b·h bytes more activation memory (the default
 * selective recomputation, core_attn, keeps both), 2·h more parameters per layer. */
START_TEST(post_norm_memory)
{
    struct spsim_error err = {0};
    struct spsim_model *with = load_hf("gemma-3-27b"), *without = NULL;
    struct spsim_model_shape shape = *spsim_model_get_shape(with);
    shape.post_norms = false;
    ck_assert_int_eq(spsim_model_create(&shape, "no-post-norms", &without, &err), SPSIM_OK);
    ck_assert_uint_eq(spsim_model_parameters(with, 1) - spsim_model_parameters(without, 1),
                      62ull * 2 * 5376);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel par = tp_sp(8);
    par.pp = 2;
    par.gbs = 16;
    struct spsim_result a, b;
    evaluate_both(with, without, hw, &par, &a, &b);
    ck_assert_uint_eq(a.memory.activation_per_layer_bytes - b.memory.activation_per_layer_bytes,
                      2ull * 2 * 4096 / 8 * 5376);
    ck_assert(a.time.layer_forward_s > b.time.layer_forward_s);
    ck_assert(a.time.layer_backward_s > b.time.layer_backward_s);
    /* The optimizer's parameter tensors on the most loaded pipeline rank (opt_host.c), the
     * last: per layer the input norm fused in linear_qkv, its weight, q_layernorm, k_layernorm,
     * linear_proj and its post_layernorm, linear_fc1's norm and weight, linear_fc2 and its
     * post_layernorm (the ten names of gemma3_bridge.py's mapping_registry), 31 layers, the
     * final norm and the tied embedding's copy: 312 (8 a layer without the post-norms). */
    ck_assert_uint_eq(a.time.optimizer_host_tensors, 31 * 10 + 2);
    ck_assert_uint_eq(b.time.optimizer_host_tensors, 31 * 8 + 2);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(with);
    spsim_model_destroy(without);
}
END_TEST

/* The embedding block at tp_sp(t). */
static void
build_embedding(const struct spsim_model_shape *ms, uint32_t t, struct spsim_layer *E)
{
    struct spsim_parallel p = tp_sp(t);
    struct spsim_layer_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    spsim_layer_config_from(ms, &p, &cfg);
    spsim_embedding_build(ms, &cfg, 262208, E);
    ck_assert(E->ok);
}

/*
 * Gemma's sqrt(h) scale on the embedding's output (model embedding_scale; Megatron-Bridge 067f987
 * gemma3_provider.py:281, modules.py:40), read from the Hugging Face gemma3 config, not from
 * Llama's. At tp 4 with SP, s = 4096, b = 1 the scaled tensor is the scattered output,
 * s/t·b·h = 1024·5376 = 5,505,024 elements: forward reads and writes 2 B each,
 * 4 · 5,505,024 = 22,020,096 B; backward the gradient times the scalar, the same 22,020,096 B;
 * nothing saved (the factor needs no gradient). On the synthetic profile (HBM 1 TB/s, no
 * latencies), tp 4, pp 1, gbs 2 (two micro-batches): the iteration's forward and backward
 * each grow by 2 · 22,020,096 B / 1e12 B/s = 44.040192 µs.
 */
START_TEST(embedding_scale)
{
    struct spsim_model *m = load_hf("gemma-3-27b"), *llama = load_hf("Meta-Llama-3.1-8B");
    ck_assert(spsim_model_get_shape(m)->embedding_scale);
    ck_assert(!spsim_model_get_shape(llama)->embedding_scale);
    spsim_model_destroy(llama);
    struct spsim_model_shape ms = *spsim_model_get_shape(m);
    static struct spsim_layer with, without;
    build_embedding(&ms, 4, &with);
    const struct spsim_op *op = find_op(&with, "embedding scale (× sqrt(h), Gemma)");
    ck_assert_ptr_nonnull(op);
    ck_assert_int_eq(op->kind, SPSIM_OPK_MEMORY);
    ck_assert_int_eq(op->region, SPSIM_REGION_SEQ);
    ck_assert_double_eq_tol(op->fwd_bytes, 22020096.0, 0.5);
    ck_assert_double_eq_tol(op->bwd_bytes, 22020096.0, 0.5);
    ck_assert_uint_eq(op->nsaved, 0);
    ck_assert_ptr_eq(op, &with.ops[with.nops - 1]); /* after the scatter: the block's last op */
    ms.embedding_scale = false;
    build_embedding(&ms, 4, &without);
    ck_assert_uint_eq(with.nops, without.nops + 1);
    bool ok = true;
    ck_assert_uint_eq(spsim_layer_saved_bytes(&with, &ok), spsim_layer_saved_bytes(&without, &ok));
    ck_assert(ok);

    struct spsim_error err = {0};
    struct spsim_model *unscaled = NULL;
    ck_assert_int_eq(spsim_model_create(&ms, "unscaled", &unscaled, &err), SPSIM_OK);
    struct spsim_hardware *hw = testutil_terms_hw();
    struct spsim_parallel par = tp_sp(4);
    par.pp = 1;
    par.vpp = 1;
    par.gbs = 2;
    struct spsim_result a, b;
    evaluate_both(m, unscaled, hw, &par, &a, &b);
    ck_assert_double_eq_tol(a.time.forward_s - b.time.forward_s, 44.040192e-6, 1e-12);
    ck_assert_double_eq_tol(a.time.backward_s - b.time.backward_s, 44.040192e-6, 1e-12);
    ck_assert_uint_eq(a.memory.activation_first_stage_bytes, b.memory.activation_first_stage_bytes);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(unscaled);
    spsim_model_destroy(m);
}
END_TEST

/* A gemma3_text config (Gemma3ForCausalLM's, Gemma 3 1B's form) written with the 27B's
 * text_config numbers: the same model without the wrapper. */
#define TEXT27                                                                                     \
    "{\"model_type\": \"gemma3_text\", \"architectures\": [\"Gemma3ForCausalLM\"], "               \
    "\"head_dim\": 128, \"hidden_activation\": \"gelu_pytorch_tanh\", \"hidden_size\": 5376, "     \
    "\"intermediate_size\": 21504, \"max_position_embeddings\": 131072, "                          \
    "\"num_attention_heads\": 32, \"num_hidden_layers\": 62, \"num_key_value_heads\": 16, "        \
    "\"query_pre_attn_scalar\": 168, \"rope_local_base_freq\": 10000.0, "                          \
    "\"rope_theta\": 1000000.0, \"sliding_window\": 1024, \"vocab_size\": 262208"

START_TEST(gemma3_text_and_refusals)
{
    struct spsim_error err = {0};
    struct spsim_model *m = NULL;
    /* transformers < 4.53 wrote sliding_window_pattern instead of layer_types. */
    static const char text[] = TEXT27 ", \"sliding_window_pattern\": 6, "
                                      "\"attn_logit_softcapping\": null}";
    ck_assert_msg(spsim_model_parse(text, strlen(text), "g/config.json", &m, &err) == SPSIM_OK,
                  "%s", err.message);
    ck_assert_uint_eq(spsim_model_parameters(m, 1), 27009346304ull);
    ck_assert_uint_eq(spsim_model_get_shape(m)->window_skip_freq, 6);
    ck_assert_uint_eq(spsim_model_get_shape(m)->window, 1024);
    spsim_model_destroy(m);
    const struct {
        const char *json, *message;
    } bad[] = {
        /* Gemma 2's soft-capping, in a gemma3_text file */
        {TEXT27 ", \"sliding_window_pattern\": 6, \"attn_logit_softcapping\": 50.0}",
         "g/config.json: field 'attn_logit_softcapping': logit soft-capping (Gemma 2's tanh) is "
         "not modelled (only null)"},
        {TEXT27 ", \"sliding_window_pattern\": 6, \"final_logit_softcapping\": 30.0}",
         "field 'final_logit_softcapping': logit soft-capping"},
        {TEXT27 "}", "field 'layer_types': missing, and no sliding_window_pattern says which "
                     "layers are windowed"},
        /* Gemma 2 stays refused, naming its soft-capping */
        {"{\"model_type\": \"gemma2\", \"num_hidden_layers\": 42}",
         "field 'model_type': 'gemma2': attention logit soft-capping (attn_logit_softcapping) and "
         "final logit soft-capping (final_logit_softcapping): not modelled"},
        /* the wrapper: its text_config must be there, and gemma3_text; errors name it */
        {"{\"model_type\": \"gemma3\", \"vision_config\": {}}",
         "field 'text_config': missing (Gemma 3's decoder)"},
        {"{\"model_type\": \"gemma3\", \"text_config\": {\"model_type\": \"llama\"}}",
         "field 'text_config.model_type': must be \"gemma3_text\""},
        {"{\"model_type\": \"gemma3\", \"text_config\": " TEXT27 ", \"sliding_window_pattern\": "
         "6, \"use_bidirectional_attention\": true}}",
         "g/config.json: text_config: field 'use_bidirectional_attention': not a key"},
        {"{\"model_type\": \"gemma3\", \"audio_config\": {}}", "field 'audio_config': not a key"},
    };
    for (size_t i = 0; i < SPSIM_ARRAY_LENGTH(bad); i++) {
        m = NULL;
        ck_assert_int_eq(
            spsim_model_parse(bad[i].json, strlen(bad[i].json), "g/config.json", &m, &err),
            SPSIM_EFIELD);
        ck_assert_msg(strstr(err.message, bad[i].message), "%zu: %s", i, err.message);
    }
    /* post_norms in a profile: dense layers of standard attention only. */
    static const char moe[] =
        "{\"schema\": \"spsim-model/1\", \"name\": \"x\", \"source\": \"test\", \"layers\": 2, "
        "\"hidden\": 256, \"heads\": 4, \"kv_heads\": 4, \"ffn_hidden\": 512, \"vocab\": 1024, "
        "\"seq_len\": 128, \"mlp\": \"swiglu\", \"norm\": \"rmsnorm\", \"dropout\": false, "
        "\"attention\": \"flash\", \"position_embedding\": \"rope\", \"linear_bias\": false, "
        "\"tied_embeddings\": true, \"post_norms\": true, \"experts\": 8, "
        "\"experts_per_token\": 2, \"expert_ffn_hidden\": 128}";
    ck_assert_int_eq(spsim_model_parse(moe, strlen(moe), "p.json", &m, &err), SPSIM_EFIELD);
    ck_assert_msg(strstr(err.message, "field 'post_norms': post-attention and post-MLP norms are "
                                      "modelled on dense layers of standard attention only"),
                  "%s", err.message);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("gemma3");
    TCase *tc = tcase_create("gemma3");
    tcase_add_test(tc, gemma3_27b_parameters);
    tcase_add_test(tc, post_norm_ops);
    tcase_add_test(tc, post_norm_recompute_hook);
    tcase_add_test(tc, post_norm_memory);
    tcase_add_test(tc, embedding_scale);
    tcase_add_test(tc, gemma3_text_and_refusals);
    suite_add_tcase(s, tc);
    return testutil_run(s);
}
