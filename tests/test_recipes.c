/*
 * Megatron-Bridge recipes and dumps (tests/data/megatron/bridge, verbatim): ConfigContainer
 * dumps read field by field with Bridge's precedence (mixed_precision over the model's fields,
 * comm_overlap's defaults, the vocabulary's padding), refusals that name the feature, override
 * files merged onto a dump or onto a model; and the YAML that the reader once read silently
 * wrong or never finished (issue 23).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "testutil.h"

static char *
read_data(const char *name, size_t *len)
{
    return testutil_megatron_data(name, len);
}

/* spsim_megatron_parse_inputs of data files (and a base model). */
static int
parse_files(const char *const *names, size_t n, const struct spsim_model *model,
            struct spsim_megatron_config *mc, struct spsim_error *err)
{
    struct spsim_megatron_input in[4];
    char *text[4];
    for (size_t i = 0; i < n; i++) {
        text[i] = read_data(names[i], &in[i].len);
        in[i].text = text[i];
        in[i].origin = strrchr(names[i], '/') ? strrchr(names[i], '/') + 1 : names[i];
    }
    struct spsim_megatron_context ctx = {.model = model};
    int rc = spsim_megatron_parse_inputs(in, n, &ctx, mc, err);
    for (size_t i = 0; i < n; i++)
        free(text[i]);
    return rc;
}

static void
parse_ok(const char *const *names, size_t n, const struct spsim_model *model,
         struct spsim_megatron_config *mc)
{
    struct spsim_error err = {0};
    ck_assert_msg(parse_files(names, n, model, mc, &err) == SPSIM_OK, "%s", err.message);
}

static int
parse_text(const char *text, struct spsim_megatron_config *mc, struct spsim_error *err)
{
    return spsim_megatron_parse(text, strlen(text), "x.yaml", mc, err);
}

static void
assert_refused(const char *text, int rc, const char *message)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_int_eq(parse_text(text, &mc, &err), rc);
    ck_assert_str_eq(err.message, message);
    ck_assert_ptr_null(mc.model);
}

/* Llama 3 8B SFT, GB200, MXFP8 (Bridge's performance recipe, dumped by ConfigContainer.to_yaml):
 * the Llama 3 8B layer (8,030,261,248 parameters: Meta's model card, and the count
 * tests/test_hf_config.c works from config.json); FP8 from mixed_precision although the model's
 * own fp8 is null and its fp8_recipe delayed; grad_reduce_in_fp32 from mixed_precision (true)
 * over ddp's false; should_pad_vocab true: padded to 128 · tp; no comm_overlap: the model's
 * overlap_p2p_comm false stands (blocking sends). */
START_TEST(llama3_8b_sft_dump)
{
    const char *names[] = {"bridge/llama3_8b_sft_gb200_fp8_mx_v1.yaml"};
    struct spsim_megatron_config mc;
    parse_ok(names, 1, NULL, &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->layers == 32 && s->hidden == 4096 && s->heads == 32 && s->kv_heads == 8);
    ck_assert(s->head_dim == 128 && s->ffn_hidden == 14336 && s->vocab == 128256);
    ck_assert(s->vocab_divisible_by == 0 && s->seq_len == 16384 && s->mlp == SPSIM_MLP_SWIGLU);
    ck_assert(s->norm == SPSIM_NORM_RMSNORM && s->position == SPSIM_POSITION_ROPE);
    ck_assert(!s->linear_bias && !s->tied_embeddings && !s->dropout && !s->experts);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), 8030261248ull);
    const struct spsim_parallel *p = &mc.par;
    ck_assert(p->tp == 1 && p->pp == 1 && p->cp == 1 && p->vpp == 1 && p->dp == 1);
    ck_assert(p->mbs == 1 && p->gbs == 8 && p->seq == 16384);
    ck_assert(p->dtype == SPSIM_DTYPE_FP8 && p->fp8_recipe == SPSIM_FP8_MXFP8);
    ck_assert(p->fp8_param_gather && p->distributed_optimizer && p->grad_reduce_in_fp32 == 1);
    ck_assert(!p->overlap_grad_reduce && !p->overlap_param_gather && p->no_overlap_p2p);
    ck_assert(p->cuda_graph_impl == SPSIM_CUDA_GRAPH_NONE && !p->first_last_layers_bf16);
    ck_assert(p->recompute == SPSIM_RECOMPUTE_NONE && !mc.world_size_given);
    /* model.cross_entropy_loss_fusion: true, cross_entropy_fusion_impl: native (:281-282) */
    ck_assert(p->cross_entropy_loss_fusion && p->cross_entropy_fusion_impl == SPSIM_CE_NATIVE);
    ck_assert_str_eq(mc.unmodelled, "");
    spsim_model_destroy(mc.model);
}
END_TEST

/* Llama 3 70B SFT: 70,553,706,496 parameters (the Llama 3 70B checkpoint's count), pp 8 with
 * 10 chunks a rank, TE CUDA graphs of the MLP; its comm_overlap section is a mapping whose
 * overlap_grad_reduce, overlap_param_gather and bucket_size are null: with the distributed
 * optimizer Bridge turns both overlaps on and buckets 128 Mi parameters (comm_overlap.py). */
START_TEST(llama3_70b_sft_dump)
{
    const char *names[] = {"bridge/llama3_70b_sft_gb200_fp8_mx_v1.yaml"};
    struct spsim_megatron_config mc;
    parse_ok(names, 1, NULL, &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->layers == 80 && s->hidden == 8192 && s->heads == 64 && s->kv_heads == 8);
    ck_assert(s->ffn_hidden == 28672 && s->seq_len == 4096);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), 70553706496ull);
    const struct spsim_parallel *p = &mc.par;
    ck_assert(p->tp == 1 && p->pp == 8 && p->vpp == 10 && p->gbs == 32 && p->mbs == 1);
    ck_assert(p->cuda_graph_impl == SPSIM_CUDA_GRAPH_TE && p->cuda_graph_scope == SPSIM_CGS_MLP);
    ck_assert(p->overlap_grad_reduce && p->overlap_param_gather && !p->no_overlap_p2p);
    ck_assert_uint_eq(p->ddp_bucket_size, 128ull * 1024 * 1024);
    ck_assert(p->dtype == SPSIM_DTYPE_FP8 && p->fp8_recipe == SPSIM_FP8_MXFP8);
    /* comm_overlap's defer_embedding_wgrad_compute (true) and wgrad_deferral_limit (22) are
     * read over the model section's (false, 0), as Bridge applies them (comm_overlap.py
     * _get_model_comm_overlap_cfgs, _apply_cfgs); nothing is left unmodelled */
    ck_assert(p->defer_embedding_wgrad_compute && p->wgrad_deferral_limit == 22);
    ck_assert_str_eq(mc.unmodelled, "");
    spsim_model_destroy(mc.model);
}
END_TEST

/* Qwen3-235B-A22B, GB200, NVFP4: the shipped profile's model (235B total, 22B active: Qwen3
 * technical report arXiv:2505.09388, table 2); its preset vocabulary unpadded
 * (should_pad_vocab false: 151936 = 1187 · 128 anyway); the embedding and the loss counted in
 * the pipeline split; the flex dispatcher's HybridEP backend with its own SM count (32, not
 * DeepEP's 20); comm_overlap's TP overlap, which Bridge turns off at tp 1; the FSDP sharding
 * strategy, which counts only with use_megatron_fsdp (false). */
START_TEST(qwen3_235b_dump)
{
    const char *names[] = {"bridge/qwen3_235b_a22b_pretrain_gb200_nvfp4_v1.yaml"};
    struct spsim_megatron_config mc;
    parse_ok(names, 1, NULL, &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->layers == 94 && s->experts == 128 && s->experts_per_token == 8);
    ck_assert(s->expert_ffn_hidden == 1536 && s->kv_heads == 4 && s->qk_norm);
    ck_assert(s->vocab == 151936 && s->vocab_divisible_by == 1);
    ck_assert(s->load_balancing == SPSIM_BALANCE_AUX_LOSS);
    struct spsim_model *shipped = testutil_model_named("qwen3-235b-a22b");
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), spsim_model_parameters(shipped, 1));
    ck_assert_uint_eq(spsim_model_active_parameters(mc.model, 1),
                      spsim_model_active_parameters(shipped, 1));
    spsim_model_destroy(shipped);
    const struct spsim_parallel *p = &mc.par;
    ck_assert(p->pp == 8 && p->ep == 8 && p->etp == 1 && p->account_embedding && p->account_loss);
    ck_assert(p->dtype == SPSIM_DTYPE_NVFP4 && p->moe_dispatcher == SPSIM_MOE_FLEX);
    ck_assert(p->moe_flex_backend == SPSIM_FLEX_HYBRIDEP && p->moe_flex_sms == 32);
    ck_assert(!p->tp_comm_overlap && p->zero == 0 && p->gbs == 1024);
    ck_assert(p->cuda_graph_scope ==
              (SPSIM_CGS_ATTN | SPSIM_CGS_MOE_ROUTER | SPSIM_CGS_MOE_PREPROCESS));
    ck_assert_str_eq(mc.unmodelled, "model.moe_grouped_gemm");
    spsim_model_destroy(mc.model);
}
END_TEST

/* DeepSeek-V3 H100 FP8 (v2, no layout): multi-latent attention although the dump writes
 * num_query_groups = heads (Bridge's MLA provider ignores it, so must spsim), its 129280 tokens
 * unpadded (make_vocab_size_divisible_by 1280 with a preset size), the shipped profile's
 * parameters, blockwise FP8 from mixed_precision, the 61-entry moe_layer_freq list,
 * group-limited routing, and the precision-aware optimizer with Adam's moments and the main
 * gradients in bf16 (optimizer.exp_avg_dtype: {_target_: torch.bfloat16}). */
START_TEST(deepseek_v3_dump)
{
    const char *names[] = {"bridge/deepseek_v3_pretrain_h100_fp8_sc_v2.yaml"};
    struct spsim_megatron_config mc;
    parse_ok(names, 1, NULL, &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->kv_lora_rank == 512 && s->q_lora_rank == 1536 && s->kv_heads == 128);
    ck_assert(s->vocab == 129280 && s->vocab_divisible_by == 1 && s->mtp_layers == 1);
    ck_assert(s->router_num_groups == 8 && s->router_group_topk == 4 && s->expert_bias);
    for (uint32_t i = 0; i < 61; i++)
        ck_assert(spsim_model_layer_is_moe(mc.model, i) == (i >= 3));
    struct spsim_model *shipped = testutil_model_named("deepseek-v3");
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), spsim_model_parameters(shipped, 1));
    spsim_model_destroy(shipped);
    const struct spsim_parallel *p = &mc.par;
    ck_assert(p->tp == 2 && p->pp == 8 && p->vpp == 2 && p->ep == 64 && p->sp);
    ck_assert(p->dtype == SPSIM_DTYPE_FP8 && p->fp8_recipe == SPSIM_FP8_BLOCKWISE);
    ck_assert(p->recompute == SPSIM_RECOMPUTE_SELECTIVE &&
              p->recompute_modules == (SPSIM_RMOD_MLA_UP_PROJ | SPSIM_RMOD_MLP));
    ck_assert(p->grad_reduce_in_fp32 == 0 && p->gbs == 16384);
    ck_assert(p->precision_aware_optimizer && p->exp_avg_dtype == SPSIM_OPT_BF16);
    ck_assert(p->exp_avg_sq_dtype == SPSIM_OPT_BF16 && p->main_grads_dtype == SPSIM_OPT_BF16);
    ck_assert(p->main_params_dtype == SPSIM_OPT_FP32);
    ck_assert_str_eq(mc.unmodelled, "model.moe_grouped_gemm");
    /* model.cross_entropy_loss_fusion: true, cross_entropy_fusion_impl: te (the dump's :297-298) */
    ck_assert(p->cross_entropy_loss_fusion && p->cross_entropy_fusion_impl == SPSIM_CE_TE);
    /* Its DDP: comm_overlap.overlap_grad_reduce false with overlap_param_gather null, which
     * Bridge turns on at dp > 1 (comm_overlap.py:576-579 @067f987; its ddp section says so
     * too): Megatron-LM's arguments.py:1028 refuses that pair, Megatron-Core's DDP runs it. On
     * 1024 GPUs (dp 64; ep 64 · pp 8 needs 512 at least) with the layout Bridge's recipe builds
     * for pp 8 · vp 2 (recipes/deepseek/h100/deepseek_v3.py:57 at 067f987; the dump's is null,
     * and 61 layers do not split over 16 chunks evenly): the AllGather behind the first forward,
     * the reduction after the backward whole. */
    ck_assert(p->bridge_ddp && p->overlap_param_gather && !p->overlap_grad_reduce);
    mc.par.dp = 64;
    mc.par.pipeline_layout = "Etttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|"
                             "tttt|tttt|tttt|tmL";
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(mc.model, hw, &mc.par, &r, &err) == SPSIM_OK, "%s", err.message);
    ck_assert(r.time.param_gather_exposed_s < r.time.dp_exposed_s);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(mc.model);
}
END_TEST

/* gpt-oss-120b as Bridge dumps it: learnable softmax offsets (attention sinks, the dump's
 * :488 softmax_type), the gated quick-GeLU (:245-247 activation_func quick_gelu with
 * gated_linear_unit), 128-token windows on every other layer (:529-532), biases on every
 * linear. Its parameters, worked from the dump's shape: per layer the attention h·(q + 2kv)
 * + q·h weights with q + 2kv + h biases (q = 64·64, kv = 8·64), 64 softmax offsets (TE's
 * softmax_offset, one per head), two RMSNorms of h, the router h·E + E and E experts of
 * h·2f + 2f + f·h + h (h = f = 2880, E = 128); the untied embedding and output layer v·h each
 * (v = 201088, a multiple of 128: no padding), the final norm h. */
START_TEST(gpt_oss_dump)
{
    const char *names[] = {"bridge/gpt_oss_120b_pretrain_h100_fp8_mx_v1.yaml"};
    struct spsim_megatron_config mc;
    parse_ok(names, 1, NULL, &mc);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert(s->softmax_type == SPSIM_SOFTMAX_LEARNABLE && s->mlp == SPSIM_MLP_SWIGLU);
    ck_assert(s->window == 128 && s->window_skip_freq == 2 && s->linear_bias);
    ck_assert(s->experts == 128 && s->experts_per_token == 4 && !s->tied_embeddings);
    const uint64_t h = 2880, q = 64 * 64, kv = 8 * 64, f = 2880, E = 128, v = 201088;
    uint64_t attention = h * (q + 2 * kv) + q * h + (q + 2 * kv) + h + 64;
    uint64_t experts = E * (h * 2 * f + 2 * f + f * h + h);
    uint64_t layer = attention + 2 * h + (h * E + E) + experts;
    uint64_t total = 36 * layer + 2 * v * h + h;
    ck_assert_uint_eq(total, 116829156672ull);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), total);
    struct spsim_model *shipped = testutil_model_named("gpt-oss-120b");
    ck_assert_uint_eq(spsim_model_parameters(shipped, 1), total);
    spsim_model_destroy(shipped);
    spsim_model_destroy(mc.model);
}
END_TEST

/* Override files as Bridge's recipe scripts take them (--config-file, OmegaConf.merge): on a
 * dump, the override's keys win and the dump's others stay; on a model (spsim --model), the
 * model's shape and bf16 with the override's grid and batch. */
START_TEST(overrides)
{
    const char *on_dump[] = {"bridge/llama3_8b_sft_gb200_fp8_mx_v1.yaml",
                             "bridge/llama3_8b_pretrain_override_example.yaml"};
    struct spsim_megatron_config mc;
    parse_ok(on_dump, 2, NULL, &mc);
    const struct spsim_parallel *p = &mc.par;
    /* the override's sequence (4096, the dump's 16384) and batch; the dump's grid and FP8 */
    ck_assert(p->seq == 4096 && p->gbs == 8 && p->mbs == 1 && p->tp == 1 && p->pp == 1);
    ck_assert(p->dtype == SPSIM_DTYPE_FP8 && p->fp8_recipe == SPSIM_FP8_MXFP8);
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), 8030261248ull);
    spsim_model_destroy(mc.model);

    struct spsim_model *llama = testutil_model_named("llama3-8b");
    const char *quantized[] = {"bridge/quantized_llama3_8b_pretrain_override_example.yaml"};
    parse_ok(quantized, 1, llama, &mc);
    ck_assert_str_eq(spsim_model_name(mc.model), "llama3-8b");
    ck_assert_uint_eq(spsim_model_parameters(mc.model, 1), spsim_model_parameters(llama, 1));
    ck_assert(p->tp == 1 && p->cp == 1 && p->gbs == 8 && p->mbs == 1);
    ck_assert(p->dtype == SPSIM_DTYPE_BF16 && p->seq == spsim_model_get_shape(llama)->seq_len);
    ck_assert_str_eq(mc.unmodelled, "");
    spsim_model_destroy(mc.model);

    /* Megatron-FSDP: dist.use_megatron_fsdp with the DDP's optim_grads_params is ZeRO-3. */
    const char *fsdp[] = {"bridge/llama3_8b_pretrain_override_example_megatron_fsdp.yaml"};
    parse_ok(fsdp, 1, llama, &mc);
    ck_assert(p->zero == 3 && p->gbs == 8 && p->seq == 4096 && p->grad_reduce_in_fp32 == 1);
    spsim_model_destroy(mc.model);

    /* Without a model, an override is refused naming the first field it lacks. */
    struct spsim_error err = {0};
    ck_assert_int_eq(parse_files(quantized, 1, NULL, &mc, &err), SPSIM_EFIELD);
    ck_assert_str_eq(err.message, "quantized_llama3_8b_pretrain_override_example.yaml: num_layers "
                                  "(--num-layers): missing (Megatron-LM requires it)");
    spsim_model_destroy(llama);
}
END_TEST

/* Issue 23: YAML that was read silently wrong (a list for a number read as its first item, a
 * NUL-cut value, a duplicate key, a second document), never finished (an empty key after an
 * unmodelled one; flow sequences nested 200,000 deep, quadratic in libyaml's simple keys), or
 * half resolved (values over 95 bytes cut in the interpolation table, chained ${.b}). */
static const char head[] = "model:\n  hidden_size: 64\n  num_attention_heads: 4\n"
                           "  seq_length: 32\n  vocab_size: 100\n  bf16: true\n";

START_TEST(yaml_read_right_or_refused)
{
    char text[4096];
    snprintf(text, sizeof(text), "%s  num_layers: [12, 24]\n", head);
    assert_refused(text, SPSIM_EFIELD,
                   "x.yaml:7: model.num_layers: a list (2 items) where one value is expected");
    snprintf(text, sizeof(text), "%s  num_layers: \"1\\0002\"\n", head);
    assert_refused(text, SPSIM_EFIELD,
                   "x.yaml:7: model.num_layers: a NUL character (\\0) inside a key or value");
    snprintf(text, sizeof(text), "%s  num_layers: 12\n  num_layers: 24\n", head);
    assert_refused(text, SPSIM_EFIELD,
                   "x.yaml:8: model.num_layers: a duplicate key (first at line 7): YAML would "
                   "keep the last value silently");
    snprintf(text, sizeof(text), "%s  num_layers: 12\n---\nmodel:\n  num_layers: 24\n", head);
    assert_refused(text, SPSIM_EFIELD,
                   "x.yaml:8: a second YAML document ('---'): spsim reads one document a file "
                   "(give each as a file of its own)");
    snprintf(text, sizeof(text), "%s  num_layers: 2\n  foo: 1\n  \"\": 2\n", head);
    assert_refused(text, SPSIM_EFIELD, "x.yaml:9: model: an empty key");
    /* A duplicate mapping merges nothing silently either. */
    snprintf(text, sizeof(text), "%s  num_layers: 2\nmodel:\n  num_layers: 4\n", head);
    assert_refused(text, SPSIM_EFIELD,
                   "x.yaml:8: model: a duplicate key (first at line 1): YAML would keep the "
                   "last value silently");
}
END_TEST

START_TEST(yaml_nesting_capped)
{
    size_t depth = 200000, n = 0;
    char *text = malloc(2 * depth + 64);
    n += (size_t)sprintf(text, "a: ");
    memset(text + n, '[', depth);
    memset(text + n + depth, ']', depth);
    strcpy(text + n + 2 * depth, "\n");
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_int_eq(parse_text(text, &mc, &err), SPSIM_EPARSE);
    ck_assert_str_eq(err.message,
                     "x.yaml: YAML nested deeper than 1000 levels at line 1, column 1003");
    free(text);
}
END_TEST

START_TEST(yaml_interpolations)
{
    /* A 200-byte layout through ${.layout}; a chain ${.a} -> ${.b} -> ${.c}; a forward
     * reference; ${..x} from a nested mapping; string interpolation. */
    char layout[256] = "Et";
    for (int i = 0; i < 66; i++)
        strcat(layout, "|tt");
    strcat(layout, "L");
    char text[4096];
    snprintf(text, sizeof(text),
             "%s  num_layers: ${.a}\n  a: ${.b}\n  b: ${model.c}\n  c: 134\n"
             "  pipeline_model_parallel_size: 67\n  layout: %s\n"
             "  pipeline_model_parallel_layout: ${.layout}\n"
             "  extra:\n    ffn: ${..hidden_size}\n  ffn_hidden_size: ${model.extra.ffn}0\n",
             head, layout);
    ck_assert_uint_gt(strlen(layout), 195);
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse_text(text, &mc, &err) == SPSIM_OK, "%s", err.message);
    const struct spsim_model_shape *s = spsim_model_get_shape(mc.model);
    ck_assert_uint_eq(s->layers, 134);
    ck_assert_uint_eq(s->ffn_hidden, 640);
    ck_assert_str_eq(mc.pipeline_layout, layout);
    ck_assert_str_eq(mc.par.pipeline_layout, layout);
    ck_assert_uint_eq(mc.par.pp, 67);
    ck_assert_str_eq(mc.unmodelled, "model.a, model.b, model.c, model.layout, model.extra.ffn");
    spsim_model_destroy(mc.model);
    /* A cycle and a resolver stay unresolved, named at the key spsim maps. */
    snprintf(text, sizeof(text), "%s  num_layers: ${.a}\n  a: ${.num_layers}\n", head);
    assert_refused(text, SPSIM_EFIELD,
                   "x.yaml:7: model.num_layers: '${.a}': an interpolation spsim cannot resolve "
                   "(write the value)");
    snprintf(text, sizeof(text), "%s  num_layers: ${oc.env:LAYERS}\n", head);
    assert_refused(text, SPSIM_EFIELD,
                   "x.yaml:7: model.num_layers: '${oc.env:LAYERS}': an interpolation spsim "
                   "cannot resolve (write the value)");
}
END_TEST

/* Megatron's list form of a layout (a list of stages of layer names) as its string form. */
START_TEST(yaml_layout_list)
{
    char text[4096];
    snprintf(text, sizeof(text),
             "%s  num_layers: 4\n  pipeline_model_parallel_size: 2\n"
             "  pipeline_model_parallel_layout:\n  - - embedding\n    - decoder\n"
             "  - - decoder\n    - decoder\n    - decoder\n    - loss\n",
             head);
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    ck_assert_msg(parse_text(text, &mc, &err) == SPSIM_OK, "%s", err.message);
    ck_assert_str_eq(mc.pipeline_layout, "Et|tttL");
    spsim_model_destroy(mc.model);
    snprintf(text, sizeof(text),
             "%s  num_layers: 4\n  pipeline_model_parallel_layout: [[embedding, attention]]\n",
             head);
    assert_refused(text, SPSIM_EFIELD,
                   "x.yaml:8: model.pipeline_model_parallel_layout: 'attention' is not a layer "
                   "of a layout (embedding, decoder, mtp, loss)");
}
END_TEST

static Suite *
recipes_suite(void)
{
    Suite *s = suite_create("recipes");
    TCase *tc = tcase_create("bridge");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, llama3_8b_sft_dump);
    tcase_add_test(tc, llama3_70b_sft_dump);
    tcase_add_test(tc, qwen3_235b_dump);
    tcase_add_test(tc, deepseek_v3_dump);
    tcase_add_test(tc, gpt_oss_dump);
    tcase_add_test(tc, overrides);
    tcase_add_test(tc, yaml_read_right_or_refused);
    tcase_add_test(tc, yaml_nesting_capped);
    tcase_add_test(tc, yaml_interpolations);
    tcase_add_test(tc, yaml_layout_list);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(recipes_suite());
}
