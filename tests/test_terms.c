/*
 * Every term of an iteration, worked by hand on a synthetic round-number profile
 * (tests/data/terms/): forward, backward, recomputation, the exposed TP and CP collectives, the
 * pipeline bubble (1F1B and interleaved), the pipeline sends, the data-parallel reduction
 * (exposed and overlapped, with and without the distributed optimizer), the optimizer step, the
 * tied-embedding AllReduce, flash attention's backward multiple, the norms' bytes, and the
 * memory terms. Each expected value is written out below from the closed forms of the model
 * (README "How it works", the comments beside each term in src/engine); none is computed by
 * the library. Halving or dropping any one term fails a test here (scripts/mutation_check.sh).
 *
 * The profile, chosen so that the arithmetic is short (extend it rather than change it):
 *   GPU terms-hw: bf16 peak and GEMM ceiling 100 TFLOP/s (no GEMM table, no busbw curves),
 *     flash attention 50 TFLOP/s, 8 SMs and 1 NCCL channel (an overlapped collective takes
 *     1/8 of the SMs), HBM 1 TB/s achieved, 100 GB, nothing reserved; 8 GPUs per node and
 *     NVLink domain, NVLink ring busbw 50 GB/s for every collective (no NVLS), NIC 25 GB/s,
 *     all latencies 0; epilogue overlapped (the default).
 *   Model terms-model: GPT layer, L = 8, h = 1024, a = 8 heads of d = 128 (MHA), ffn = 4h,
 *     v = 32768 (a multiple of 128·t up to t = 8: no padding), s = 1024, GeLU, LayerNorm,
 *     dropout, flash attention, learned positions, no biases, tied embeddings.
 *   Micro-batch b = 1 throughout, so T = s·b = 1024 tokens (s/c with context parallelism).
 * Every GEMM of the configurations below is compute-bound (2mnk/100e12 exceeds the bytes it
 * streams over 1 TB/s, the fp32 main gradient of the weight gradients included) and fills whole
 * waves of 8 SMs (128×128 tiles, m and n multiples of 128 with mn/128² a multiple of 8), so by
 * the GEMM shape model (engine/gemm_shape.c; the epilogue overlapped, i.e. persistent kernels
 * with one prologue k-block slot per SM) a GEMM of W waves and kb = K/64 k-blocks per tile takes
 * 2mnk / 100e12 · (W·kb + 1) / (W·kb) s: gemm_s() below.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define PEAK  100e12 /* GEMM FLOP/s */
#define FLASH 50e12  /* flash attention FLOP/s */
#define HBM   1e12   /* B/s */
#define NV    50e9   /* NVLink busbw, B/s, every collective */
#define SHARE 0.125  /* 1 NCCL channel of 8 SMs */

static const double L = 8, h = 1024, f = 4096, V = 32768, a = 8, d = 128, s = 1024;

/* tests/data/terms/NAME.json in the source tree. */
static const char *
terms_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/tests/data/terms/%s.json", getenv("SPSIM_DATA_DIR"), name);
    return buf;
}

static struct spsim_model *
terms_model(void)
{
    char path[4096];
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_model_load(terms_path(path, sizeof(path), "terms-model"), &m, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    return m;
}

static struct spsim_hardware *
terms_hw(void)
{
    char path[4096];
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_hardware_load(terms_path(path, sizeof(path), "terms-hw"), &hw, &err) ==
                      SPSIM_OK,
                  "%s", err.message);
    return hw;
}

/* terms-hw with `member` (a JSON member and its trailing comma) added to its gpu section. */
static struct spsim_hardware *
terms_hw_with(const char *member)
{
    char path[4096];
    FILE *fp = fopen(terms_path(path, sizeof(path), "terms-hw"), "rb");
    ck_assert_ptr_nonnull(fp);
    char *text = calloc(1, 1 << 16);
    ck_assert_ptr_nonnull(text);
    size_t len = fread(text, 1, (1 << 16) - 1, fp);
    fclose(fp);
    const char *at = strstr(text, "\"gpu\": {") + strlen("\"gpu\": {");
    size_t head = (size_t)(at - text), size = len + strlen(member) + 2;
    char *joined = malloc(size);
    ck_assert_ptr_nonnull(joined);
    snprintf(joined, size, "%.*s %s%s", (int)head, text, member, at);
    struct spsim_hardware *hw = testutil_hardware_text(joined);
    free(joined);
    free(text);
    return hw;
}

static struct spsim_parallel
config(uint32_t tp, uint32_t pp, uint32_t vpp, uint32_t dp, uint64_t micro)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = tp;
    p.pp = pp;
    p.vpp = vpp;
    p.dp = dp;
    p.mbs = 1;
    p.gbs = micro * dp;
    return p;
}

static struct spsim_result
run(const struct spsim_parallel *p)
{
    struct spsim_model *m = terms_model();
    struct spsim_hardware *hw = terms_hw();
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, p, &r, &err) == SPSIM_OK, "%s", err.message);
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
    return r;
}

#define EQ(got, want) ck_assert_double_eq_tol((got), (want), 1e-9 * fabs(want) + 1e-15)

/* ---- Hand-worked pieces, per micro-batch and TP rank, compute only (no collective). ---- */

/* One M×N×K GEMM: 128×128 tiles filling W = mn/(128²·8) whole waves of the 8 SMs (asserted),
 * kb = K/64 k-blocks each and one prologue slot per SM: W·kb + 1 slots for W·kb of work. */
static double
gemm_s(double m, double n, double k)
{
    double tiles = m * n / (128.0 * 128.0), waves = tiles / 8, kb = ceil(k / 64);
    ck_assert_msg(fmod(m, 128) == 0 && fmod(n, 128) == 0 && fmod(tiles, 8) == 0,
                  "GEMM %gx%gx%g does not fill whole waves of 128x128 tiles", m, n, k);
    return 2.0 * m * n * k / PEAK * (waves * kb + 1) / (waves * kb);
}

/* A linear of `in` → `out` features on T tokens: forward (T, out, K = in); backward its dgrad
 * (T, in, K = out) and wgrad (in, out, K = T) (engine/schedule.c). */
static double
linear_fwd(double T, double in, double out)
{
    return gemm_s(T, out, in);
}

static double
linear_bwd(double T, double in, double out)
{
    return gemm_s(T, in, out) + gemm_s(in, out, T);
}

/* The four linears of a layer on a rank: QKV h → 3h/t, projection h/t → h, FC1 h → 4h/t,
 * FC2 4h/t → h. */
static double
layer_gemms(double T, double t, double (*linear)(double, double, double))
{
    return linear(T, h, 3 * h / t) + linear(T, h / t, h) + linear(T, h, f / t) +
           linear(T, f / t, h);
}

/* Tokens of a rank and the elements of one [s', b, h] tensor of the SP region. */
struct dims {
    double t, T, E;
};

static struct dims
dims_of(double t, bool sp, double c)
{
    double T = s / c;
    return (struct dims){t, T, (sp ? T / t : T) * h};
}

/* Flash attention forward, causal: two matmuls of 2·T·s·d per head, halved, a/t heads
 * (with CP the rank's T = s/c queries see the causal half of T × s). */
static double
flash_flops(struct dims x)
{
    return 2.0 * (a / x.t) * x.T * s * d;
}

/*
 * One layer's forward: GEMMs QKV (T·h·3h/t), projection (T·h·h/t), FC1 (T·h·4h/t), FC2
 * (T·4h·h/t): 2·T·12h²/t FLOPs; flash as above; memory-bound: two LayerNorms (read x, write y:
 * 4 B per element), two dropout-adds (read x and the residual, write out and the 1-byte mask:
 * 7 B), GeLU (read and write, 4 B per ffn/t element).
 */
static double
layer_fwd(struct dims x)
{
    double gemm = layer_gemms(x.T, x.t, linear_fwd);
    double mem = (2 * 4 * x.E + 2 * 7 * x.E + 4 * x.T * f / x.t) / HBM;
    return gemm + flash_flops(x) / FLASH + mem;
}

/*
 * One layer's backward: every GEMM twice (dgrad and wgrad, same FLOPs); FlashAttention-2's
 * backward recomputes the scores, 5 matmuls against the forward's 2: 2.5× its FLOPs; the
 * LayerNorm backward reads dy and x twice and writes dx (10 B per element), the dropout-add's
 * reads dy and the mask, writes dx and sums the residual's gradient (11 B), GeLU's reads dy
 * and x and writes dx (6 B).
 */
static double
layer_bwd(struct dims x)
{
    double gemm = layer_gemms(x.T, x.t, linear_bwd);
    double mem = (2 * 10 * x.E + 2 * 11 * x.E + 6 * x.T * f / x.t) / HBM;
    return gemm + 2.5 * flash_flops(x) / FLASH + mem;
}

/* The embedding on rank 0: the word lookup and the learned positions (8 B per [T, b, h]
 * element forward) and its dropout (read, write and the mask: 5 B per SP-region element, both
 * ways). Backward: F.embedding's dense gradient of the V/t × h shard, zero-filled (2 B) and the
 * token rows summed into it (6 B per [T, b, h] element), then the DDP hook's main_grad.add_ into
 * the fp32 main gradient (read 2 + 4, write 4): (4 + 2·4)·(V/t)·h + 6·T·h. */
static double
emb_fwd(struct dims x)
{
    return (8 * x.T * h + 5 * x.E) / HBM;
}

static double
emb_bwd(struct dims x)
{
    return (12 * V / x.t * h + 6 * x.T * h + 5 * x.E) / HBM;
}

/* The output block on rank p − 1: final LayerNorm (4 and 10 B), the logits GEMM T·h·v/t
 * (twice backward), the vocabulary-parallel cross-entropy's eager kernels (Megatron-LM
 * d98e8a64 tensor_parallel/cross_entropy.py: .float() 2 + 4 B per logit, max 4, the
 * subtraction 4 + 4, exp 4 + 4, its sum 4, the division 4 + 4 forward: 38 B; mul_ 4 + 4 and
 * the fp32 gradient's cast to bf16 4 + 2 backward: 14 B). */
static double
out_fwd(struct dims x)
{
    return 4 * x.E / HBM + linear_fwd(x.T, h, V / x.t) + 38 * x.T * V / x.t / HBM;
}

static double
out_bwd(struct dims x)
{
    return 10 * x.E / HBM + linear_bwd(x.T, h, V / x.t) + 14 * x.T * V / x.t / HBM;
}

/* Parameters on one TP rank: a layer's four weight matrices 12h²/t and two LayerNorms (2h
 * each, replicated); the embedding's word table v·h/t and position table s·h; the final norm
 * 2h, and on the last stage of a pipeline the tied word table's copy v·h/t. */
static double
layer_params(double t)
{
    return 12 * h * h / t + 4 * h;
}

/* ---- Forward, backward, recomputation, optimizer, memory on one GPU. ---- */

/* --no-gradient-accumulation-fusion: each weight's gradient is added into the fp32 main
 * gradient by the DDP hook (main_grad.add_: read 2 + 4 B, write 4 B an element) in every
 * micro-batch's backward, the layer's 12h² weights (QKV 3h², projection h², FC1 and FC2 4h²
 * each; the output layer is the tied embedding's, whose add_ the embedding already pays): the
 * backward grows by 2 · L · 10 · 12h² / HBM over the fused run, the forward not at all, and the
 * schedule counts no launch for it (mb_host.c's). */
START_TEST(main_grad_add_without_fusion)
{
    struct spsim_parallel p = config(1, 1, 1, 1, 2);
    struct spsim_result fused = run(&p);
    p.no_gradient_accumulation_fusion = true;
    struct spsim_result r = run(&p);
    EQ(r.time.backward_s - fused.time.backward_s, 2 * L * 10 * 12 * h * h / HBM);
    EQ(r.time.layer_backward_s - fused.time.layer_backward_s, 10 * 12 * h * h / HBM);
    EQ(r.time.forward_s, fused.time.forward_s);
    ck_assert_uint_eq(r.time.layer_backward_launches - fused.time.layer_backward_launches, 4);
}
END_TEST

START_TEST(one_gpu_forward_backward_optimizer)
{
    /* tp = pp = dp = 1, 2 micro-batches: the stage runs the embedding, 8 layers, the output. */
    struct spsim_parallel p = config(1, 1, 1, 1, 2);
    struct spsim_result r = run(&p);
    struct dims x = dims_of(1, false, 1);
    double fwd = L * layer_fwd(x) + emb_fwd(x) + out_fwd(x);
    double bwd = L * layer_bwd(x) + emb_bwd(x) + out_bwd(x);
    EQ(r.time.forward_s, 2 * fwd);
    EQ(r.time.backward_s, 2 * bwd);
    EQ(r.time.layer_forward_s, layer_fwd(x));
    EQ(r.time.layer_backward_s, layer_bwd(x));
    ck_assert(r.time.recompute_s == 0 && r.time.tp_exposed_s == 0 && r.time.pp_bubble_s == 0);
    ck_assert(r.time.pp_p2p_s == 0 && r.time.dp_exposed_s == 0);
    ck_assert(r.time.tied_embedding_allreduce_s == 0);
    /* Optimizer step (optimizer.py, fused Adam), HBM-bound, per parameter: the norm for
     * clipping reads the fp32 gradient (4 B), Adam reads it (4), reads and writes the master
     * weight and both moments (24), writes the bf16 weight (2), the buffer is cleared (4):
     * 38 B. P = 8 layers + embedding + final norm. */
    double P = L * layer_params(1) + V * h + s * h + 2 * h;
    ck_assert_uint_eq(r.memory.parameters_per_gpu, (uint64_t)P);
    EQ(r.time.optimizer_s, 38 * P / HBM);
    EQ(r.time.microbatch_s, fwd + bwd);
    double iter = 2 * (fwd + bwd) + 38 * P / HBM;
    EQ(r.time.iteration_s, iter);
    /* The rates of the hand-worked iteration (issue 23: the named-formula rates were only
     * checked against the result's own iteration_s). B = 2 sequences of s tokens on 1 GPU.
     * Hardware FLOPs, what runs: per layer the four GEMMs three times (2·T·12h² each pass)
     * and flash attention 1 + 2.5 times; the logits GEMM three times (2·T·h·V a pass).
     * Narayanan et al. 2021: 96·B·s·L·h²·(1 + s/(6h) + V/(16·L·h)). */
    double B = 2, hw_flops = B * (L * (3 * 24 * s * h * h + 3.5 * flash_flops(x)) + 6 * s * h * V);
    double n21 = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h));
    EQ(r.time.hardware_flops, hw_flops);
    EQ(r.time.model_flops_narayanan2021, n21);
    EQ(r.time.tflops_per_gpu_narayanan2021, n21 / iter / 1e12);
    /* Korthikanti et al. 2022 (model_flops, MFU against the 100 TFLOP/s BF16 peak) and
     * Megatron's count today (causal attention halved): a·d = h here. */
    double k22 = 72 * B * s * L * h * h + 12 * B * s * s * L * h + 6 * B * s * h * V;
    double meg = 72 * B * s * L * h * h + 6 * B * s * s * L * h + 6 * B * s * h * V;
    EQ(r.time.model_flops, k22);
    EQ(r.time.mfu, k22 / iter / PEAK);
    EQ(r.time.tflops_per_gpu_megatron, meg / iter / 1e12);
    EQ(r.time.hardware_tflops_per_gpu, hw_flops / iter / 1e12);
    EQ(r.time.hfu, hw_flops / iter / PEAK);
    EQ(r.time.tokens_per_s_per_gpu, B * s / iter);
    ck_assert(r.flash_attention); /* the model's "attention": "flash" */
    /* Memory: bf16 weights 2 B, fp32 gradients 4 B, Adam's master weight and moments 12 B. */
    ck_assert_uint_eq(r.memory.weights_bytes, (uint64_t)(2 * P));
    ck_assert_uint_eq(r.memory.gradients_bytes, (uint64_t)(4 * P));
    ck_assert_uint_eq(r.memory.optimizer_bytes, (uint64_t)(12 * P));
}
END_TEST

/* Fused attention measured at d = 128 for 512 and 2048 keys (60 / 40 and 90 / 60 TFLOP/s
 * forward / backward) and with a 256-key window (10 / 20 at 1024): s = 1024 lies halfway
 * between the whole rows in log(seq), 75 forward and 50 backward. */
#define FUSED_TABLE                                                                                \
    "\"attention_table\": {\"dtype\": \"bf16\", \"source\": \"t\", \"points\": [[128, 128, 512, "  \
    "0, 60, 40], [128, 128, 2048, 0, 90, 60], [128, 128, 1024, 256, 10, 20]]},"

static struct spsim_result
run_on(const struct spsim_model *m, struct spsim_hardware *hw, const struct spsim_parallel *p)
{
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, p, &r, &err) == SPSIM_OK, "%s", err.message);
    return r;
}

START_TEST(fused_attention_rates)
{
    /* One GPU, 2 micro-batches: the whole-layer forward (and backward) of the fused rows
     * replaces flash's F/50e12 (2.5F/50e12) with F/75e12 (2.5F/50e12), per layer and
     * micro-batch; auto takes the table where the profile has one, flash keeps flash's rate. */
    struct spsim_model *m = terms_model();
    struct spsim_hardware *plain = terms_hw(), *fused = terms_hw_with(FUSED_TABLE);
    struct spsim_parallel p = config(1, 1, 1, 1, 2);
    struct dims x = dims_of(1, false, 1);
    double F = flash_flops(x);
    struct spsim_result base = run_on(m, plain, &p), aut = run_on(m, fused, &p);
    EQ(aut.time.forward_s, base.time.forward_s - 2 * L * F * (1 / FLASH - 1 / 75e12));
    EQ(aut.time.backward_s, base.time.backward_s - 2 * L * 2.5 * F * (1 / FLASH - 1 / 50e12));
    p.attention_backend = SPSIM_ATTN_FUSED;
    EQ(run_on(m, fused, &p).time.forward_s, aut.time.forward_s);
    p.attention_backend = SPSIM_ATTN_FLASH;
    EQ(run_on(m, fused, &p).time.forward_s, base.time.forward_s);
    /* fused on a profile without the table is refused. */
    struct spsim_error err = {0};
    p.attention_backend = SPSIM_ATTN_FUSED;
    ck_assert_int_eq(spsim_parallel_check(m, plain, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, "gpu.attention_table"), "%s", err.message);

    /* A 256-key window on every other layer (--window-attn-skip-freq 2: layers 2, 4, 6, 8
     * attend fully): the windowed layers' queries see at most 256 keys, 256·257/2 + 768·256
     * scores per head against the whole layers' s²/2, at the windowed row's 10 / 20 TFLOP/s.
     * The op is the layers' mean, half of each. */
    struct spsim_model_shape shape = *spsim_model_get_shape(m);
    shape.window = 256;
    shape.window_skip_freq = 2;
    struct spsim_model *wm = NULL;
    ck_assert_int_eq(spsim_model_create(&shape, "windowed", &wm, &err), SPSIM_OK);
    double Fw = 2.0 * a * (256.0 * 257 / 2 + 768.0 * 256) * 2 * d;
    p.attention_backend = SPSIM_ATTN_AUTO;
    struct spsim_result win = run_on(wm, fused, &p);
    EQ(win.time.forward_s,
       aut.time.forward_s + 2 * L * (0.5 * F / 75e12 + 0.5 * Fw / 10e12 - F / 75e12));
    EQ(win.time.backward_s,
       aut.time.backward_s + 2 * L * 2.5 * (0.5 * F / 50e12 + 0.5 * Fw / 20e12 - F / 50e12));
    /* On flash's kernels the windowed half is cheaper by its FLOPs alone. */
    p.attention_backend = SPSIM_ATTN_FLASH;
    EQ(run_on(wm, fused, &p).time.forward_s, base.time.forward_s + 2 * L * 0.5 * (Fw - F) / FLASH);
    spsim_model_destroy(wm);
    spsim_model_destroy(m);
    spsim_hardware_destroy(plain);
    spsim_hardware_destroy(fused);
}
END_TEST

START_TEST(one_gpu_activation_memory)
{
    struct spsim_parallel p = config(1, 1, 1, 1, 2);
    struct spsim_result r = run(&p);
    /* Per layer (layer.c's inventory, Korthikanti et al. Table 2 with flash attention): the
     * SP-region tensors, two norm inputs, the QKV and FC1 inputs (2 B each), two dropout masks
     * (1 B): 10sbh; Q, K, V and the projection input 8sbh/t, GeLU's and FC2's inputs 16sbh/t
     * (ffn = 4h): 24sbh/t; flash's fp32 log-sum-exp 4·b·(a/t)·s (no s² tensor). */
    double sbh = s * h, per_layer = sbh * (10 + 24) + 4 * a * s;
    ck_assert_uint_eq(r.memory.activation_per_layer_bytes, (uint64_t)per_layer);
    /* p = 1: the one micro-batch in flight holds all 8 layers, one embedding dropout mask
     * (sbh, 1 B) and the output layer: final-norm and logits-GEMM inputs 4sbh, fp32 logits
     * 4sbv (paper §4.3: 4sbh(1 + v/h)). */
    ck_assert_uint_eq(r.memory.activation_layers_bytes, (uint64_t)(L * per_layer));
    ck_assert_uint_eq(r.memory.activation_embedding_bytes, (uint64_t)sbh);
    ck_assert_uint_eq(r.memory.activation_output_bytes, (uint64_t)(4 * sbh * (1 + V / h)));
    /* At the loss the output layer's bf16 logits live beside their fp32 copy (Megatron-LM
     * gpt_model.py:807, tensor_parallel/cross_entropy.py:25 @d98e8a64): 2·s·b·v/t =
     * 2·1024·1·32768/1 = 67,108,864 B, on the last stage (here the first). */
    double lg = 2 * s * V;
    ck_assert_uint_eq(r.memory.activation_logits_working_bytes, 67108864);
    ck_assert_uint_eq(r.memory.activation_first_stage_bytes,
                      (uint64_t)(L * per_layer + sbh + 4 * sbh * (1 + V / h) + lg));
    ck_assert_uint_eq(r.memory.activation_last_stage_bytes, r.memory.activation_first_stage_bytes);
    double P = L * layer_params(1) + V * h + s * h + 2 * h;
    ck_assert_uint_eq(r.memory.total_bytes,
                      (uint64_t)(18 * P + L * per_layer + sbh + 4 * sbh * (1 + V / h) + lg));
    /* The six modes of Table 2 with flash attention at t = 1 (no TP, so tp and tp_sp are the
     * none row): 34sbh and the log-sum-exp 4as without selective recompute, 34sbh with it,
     * 2sbh with full recomputation; the first stage holds the 8 layers in each mode, the
     * embedding mask, the output layer and the bf16 logits at the loss, and for full also the
     * layer being recomputed (the tp row's inventory); the totals add the 18P of weights,
     * gradients and Adam state. */
    const double mode_layer[SPSIM_MODE_COUNT] = {
        [SPSIM_MODE_NONE] = 34 * sbh + 4 * a * s,  [SPSIM_MODE_TP] = 34 * sbh + 4 * a * s,
        [SPSIM_MODE_TP_SP] = 34 * sbh + 4 * a * s, [SPSIM_MODE_TP_SELECTIVE] = 34 * sbh,
        [SPSIM_MODE_TP_SP_SELECTIVE] = 34 * sbh,   [SPSIM_MODE_FULL] = 2 * sbh};
    for (int i = 0; i < SPSIM_MODE_COUNT; i++) {
        double first = L * mode_layer[i] + sbh + 4 * sbh * (1 + V / h) + lg +
                       (i == SPSIM_MODE_FULL ? 34 * sbh + 4 * a * s : 0);
        ck_assert_uint_eq(r.memory.activation_modes_bytes[i], (uint64_t)mode_layer[i]);
        ck_assert_uint_eq(r.memory.activation_modes_first_stage_bytes[i], (uint64_t)first);
        ck_assert_uint_eq(r.memory.total_modes_bytes[i], (uint64_t)(18 * P + first));
    }

    /* Full recomputation: each layer keeps its input (2sbh); the layer being recomputed holds
     * its whole inventory on top. */
    p.recompute = SPSIM_RECOMPUTE_FULL;
    r = run(&p);
    ck_assert_uint_eq(r.memory.activation_per_layer_bytes, (uint64_t)(2 * sbh));
    ck_assert_uint_eq(r.memory.activation_recompute_working_bytes, (uint64_t)per_layer);
    ck_assert_uint_eq(r.memory.activation_first_stage_bytes,
                      (uint64_t)(L * 2 * sbh + per_layer + sbh + 4 * sbh * (1 + V / h) + lg));
    /* Selective (core_attn): flash attention's log-sum-exp is dropped. */
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    r = run(&p);
    ck_assert_uint_eq(r.memory.activation_per_layer_bytes, (uint64_t)(34 * sbh));
}
END_TEST

/* --defer-embedding-wgrad-compute (Megatron-LM d98e8a64 tensor_parallel/layers.py:1228-1232,
 * 661-663): the last stage keeps, of each of the first `limit` micro-batches, the output layer's
 * input [s, b, h/1] and the logits' 16-bit gradient [s, b, v/t] until the flush; at its peak (a
 * micro-batch's loss) those of the micro-batches before it: min(limit, m - 1). */
/* The fused losses (Megatron-LM d98e8a64 language_module.py:173-205), against the unfused run of
 * one_gpu_forward_backward_optimizer and one_gpu_activation_memory (2 micro-batches of T = s
 * tokens, V logits each on the one rank). Bytes per logit worked from each implementation:
 *  - native (fusions/fused_cross_entropy.py, torch.compile'd: each function reads its inputs
 *    and writes its outputs and the inputs it mutates once): forward 2 + 4, 4 + 4 + 4, 4 + 4 =
 *    26 B, backward 4 + 4 + 2 = 10 B; kept the fp32 softmax (4 B), and at the loss the 16-bit
 *    logits and the fp32 copy beside the new exponentials (2 + 4 B);
 *  - TE 2.18 (triton/cross_entropy.py at d0067d0: online softmax reads 2, the loss kernel reads
 *    2 and writes an fp32 gradient 4): 8 B; backward element_mul in fp32 4 + 4 and the cast to
 *    bf16 4 + 2: 14 B; kept the fp32 gradient, the 16-bit logits beside it (2 B);
 *  - TE up to 2.17 (5671fd3: the gradient written into the logits): 2 + 2 + 2 = 6 B, backward
 *    2 + 2 = 4 B; kept the 16-bit logits only, nothing beside them.
 * The unfused loss is 38 B forward, 14 B backward (out_fwd, out_bwd), 4 + 2 B of memory. */
START_TEST(fused_cross_entropy)
{
    static const struct {
        bool fusion;
        enum spsim_ce_impl impl;
        double fwd, bwd, kept, beside;
    } ce[] = {
        {false, SPSIM_CE_NATIVE, 38, 14, 4, 2},
        {true, SPSIM_CE_NATIVE, 26, 10, 4, 6},
        {true, SPSIM_CE_TE, 8, 14, 4, 2},
        {true, SPSIM_CE_TE_INPLACE, 6, 4, 2, 0},
    };
    struct spsim_parallel p = config(1, 1, 1, 1, 2);
    struct spsim_result base = run(&p);
    double logits = s * V, sbh = s * h;
    for (size_t i = 0; i < sizeof(ce) / sizeof(ce[0]); i++) {
        p.cross_entropy_loss_fusion = ce[i].fusion;
        p.cross_entropy_fusion_impl = ce[i].impl;
        struct spsim_result r = run(&p);
        /* two micro-batches, each the loss's forward and backward once */
        EQ(r.time.forward_s - base.time.forward_s, 2 * (ce[i].fwd - 38) * logits / HBM);
        EQ(r.time.backward_s - base.time.backward_s, 2 * (ce[i].bwd - 14) * logits / HBM);
        ck_assert_uint_eq(r.memory.activation_output_bytes,
                          (uint64_t)(4 * sbh + ce[i].kept * logits));
        ck_assert_uint_eq(r.memory.activation_logits_working_bytes,
                          (uint64_t)(ce[i].beside * logits));
        ck_assert_uint_eq(r.memory.activation_first_stage_bytes,
                          (uint64_t)((double)base.memory.activation_first_stage_bytes +
                                     (ce[i].kept + ce[i].beside - 6) * logits));
    }
}
END_TEST

START_TEST(deferred_embedding_wgrad_memory)
{
    /* tp 2, pp 2, 6 micro-batches: per micro-batch 2·s·v/t = 2·1024·16384 = 33,554,432 B of
     * gradient and 2·s·h = 2,097,152 B of input (no SP: the whole sequence), 35,651,584 B. */
    struct spsim_parallel p = config(2, 2, 1, 1, 6);
    p.sp = false;
    struct spsim_result base = run(&p);
    ck_assert_uint_eq(base.memory.activation_deferred_wgrad_bytes, 0);
    p.defer_embedding_wgrad_compute = true;
    p.wgrad_deferral_limit = 2;
    struct spsim_result r = run(&p);
    ck_assert_uint_eq(r.memory.activation_deferred_wgrad_bytes, 2 * 35651584ull);
    ck_assert_uint_eq(r.memory.activation_last_stage_bytes,
                      base.memory.activation_last_stage_bytes + 2 * 35651584ull);
    ck_assert_uint_eq(r.memory.activation_first_stage_bytes,
                      base.memory.activation_first_stage_bytes);
    /* limit 0 (every micro-batch) or above m - 1: the 5 before the last one's loss */
    p.wgrad_deferral_limit = 0;
    ck_assert_uint_eq(run(&p).memory.activation_deferred_wgrad_bytes, 5 * 35651584ull);
    p.wgrad_deferral_limit = 9;
    ck_assert_uint_eq(run(&p).memory.activation_deferred_wgrad_bytes, 5 * 35651584ull);
    /* with SP the kept input is the rank's s/t rows: 2·512·1024 = 1,048,576 B */
    p.sp = true;
    p.wgrad_deferral_limit = 2;
    ck_assert_uint_eq(run(&p).memory.activation_deferred_wgrad_bytes,
                      2 * (33554432ull + 1048576ull));
    /* Megatron's own refusals (model_parallel_config.py:545-553) */
    struct spsim_model *m = terms_model();
    struct spsim_hardware *hw = terms_hw();
    struct spsim_error err = {0};
    p.no_gradient_accumulation_fusion = true;
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, &err), SPSIM_ECONFIG);
    ck_assert(strstr(err.message, "when gradient accumulation fusion is not used"));
    p = config(2, 1, 1, 1, 6);
    p.defer_embedding_wgrad_compute = true;
    ck_assert_int_eq(spsim_evaluate(m, hw, &p, &r, &err), SPSIM_ECONFIG);
    ck_assert(strstr(err.message, "when pipeline model parallel is not used"));
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

START_TEST(recomputation)
{
    struct dims x = dims_of(1, false, 1);
    /* Full: every layer's forward replayed before its backward, 2 micro-batches. */
    struct spsim_parallel p = config(1, 1, 1, 1, 2);
    p.recompute = SPSIM_RECOMPUTE_FULL;
    struct spsim_result r = run(&p);
    EQ(r.time.recompute_s, 2 * L * layer_fwd(x));
    EQ(r.time.layer_backward_s, layer_bwd(x) + layer_fwd(x));
    EQ(r.time.backward_s, 2 * (L * layer_bwd(x) + emb_bwd(x) + out_bwd(x)));
    /* Selective (core_attn): only the flash attention forward is replayed. */
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    r = run(&p);
    EQ(r.time.recompute_s, 2 * L * flash_flops(x) / FLASH);
}
END_TEST

START_TEST(rmsnorm_moves_layernorm_bytes)
{
    /* RMSNorm (apex/TE fused kernels) reads x and writes y forward, reads dy and x twice and
     * writes dx backward, as LayerNorm: the same 4 and 10 B per element; it has h weights
     * (LayerNorm 2h), so a layer holds 12h² + 2h parameters. */
    struct spsim_model *lm = terms_model();
    struct spsim_model_shape shape = *spsim_model_get_shape(lm);
    spsim_model_destroy(lm);
    shape.norm = SPSIM_NORM_RMSNORM;
    struct spsim_model *m = testutil_model(&shape);
    struct spsim_hardware *hw = terms_hw();
    struct spsim_parallel p = config(1, 1, 1, 1, 2);
    struct spsim_result r;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_evaluate(m, hw, &p, &r, &err) == SPSIM_OK, "%s", err.message);
    struct dims x = dims_of(1, false, 1);
    EQ(r.time.layer_forward_s, layer_fwd(x));
    EQ(r.time.layer_backward_s, layer_bwd(x));
    ck_assert_uint_eq(r.memory.parameters_per_gpu,
                      (uint64_t)(L * (12 * h * h + 2 * h) + V * h + s * h + h));
    spsim_model_destroy(m);
    spsim_hardware_destroy(hw);
}
END_TEST

/* ---- Exposed tensor-parallel collectives. ---- */

/* A collective beside a computation of c seconds (the dgrad or wgrad GEMM it is issued with):
 * NCCL's channel takes 1/8 of the SMs while it runs, so the GEMM runs at 7/8 meanwhile; the
 * pair takes max(comm, min(c/(7/8), c + comm/8)) and the collective shows by that less c. */
static double
beside(double c, double comm)
{
    return fmax(comm, fmin(c / (1 - SHARE), c + comm * SHARE)) - c;
}

START_TEST(tp_exposed_with_sp)
{
    /* t = 2, SP, p = 1, 2 micro-batches. M = 2·T·h bytes; an AllGather or ReduceScatter over
     * 2 moves M/2 per rank at 50 GB/s: tau. */
    struct spsim_parallel p = config(2, 1, 1, 1, 2);
    p.sp = true;
    struct spsim_result r = run(&p);
    struct dims x = dims_of(2, true, 1);
    double t = 2, tau = (t - 1) / t * 2 * x.T * h / NV;
    /* A layer: forward g (AG), ḡ (RS), g, ḡ on the critical path: 4 tau. Backward: the two ḡ
     * AllGathers of the output gradients in full; beside QKV's and FC1's dgrad the re-gather
     * of their saved input shard (AG), beside their wgrad the ReduceScatter of their input
     * gradient. QKV's dgrad and wgrad are 2·T·h·3h/t FLOPs, FC1's 2·T·h·4h/t. */
    /* dgrad (T, in, K = out) and wgrad (in, out, K = T) of QKV (h → 3h/t) and FC1 (h → 4h/t). */
    double qkv_d = gemm_s(x.T, h, 3 * h / t), qkv_w = gemm_s(h, 3 * h / t, x.T);
    double fc1_d = gemm_s(x.T, h, f / t), fc1_w = gemm_s(h, f / t, x.T);
    double layer = 4 * tau + 2 * tau + beside(qkv_d, tau) + beside(qkv_w, tau) +
                   beside(fc1_d, tau) + beside(fc1_w, tau);
    /* The embedding: ḡ (RS) forward, its AllGather backward. The output block: g (AG)
     * forward; beside the logits dgrad the re-gather, beside its wgrad the RS (2·T·h·v/t each);
     * the cross-entropy's AllReduce of 12 B per token, 2(t−1)/t of it on the wire. */
    double logits_d = gemm_s(x.T, h, V / t), logits_w = gemm_s(h, V / t, x.T);
    double ce = 2 * (t - 1) / t * 12 * x.T / NV;
    double emb = 2 * tau, out = tau + beside(logits_d, tau) + beside(logits_w, tau) + ce;
    EQ(r.time.tp_exposed_s, 2 * (L * layer + emb + out));
    /* Compute: every GEMM and flash on 1/t, the SP-region ops on s/t tokens. */
    EQ(r.time.forward_s, 2 * (L * layer_fwd(x) + emb_fwd(x) + out_fwd(x)));
    EQ(r.time.backward_s, 2 * (L * layer_bwd(x) + emb_bwd(x) + out_bwd(x)));
}
END_TEST

START_TEST(tp_exposed_without_sp)
{
    /* t = 2 without SP: f̄ AllReduces after the projection and FC2 forward (2(t−1)/t·M each,
     * 2 tau); backward the f AllReduces of the QKV and FC1 input gradients beside their wgrad. */
    struct spsim_parallel p = config(2, 1, 1, 1, 2);
    struct spsim_result r = run(&p);
    struct dims x = dims_of(2, false, 1);
    double t = 2, tau = (t - 1) / t * 2 * x.T * h / NV;
    /* The wgrad (in, out, K = T) of QKV (h → 3h/t) and FC1 (h → 4h/t). */
    double qkv_w = gemm_s(h, 3 * h / t, x.T), fc1_w = gemm_s(h, f / t, x.T);
    double layer = 2 * 2 * tau + beside(qkv_w, 2 * tau) + beside(fc1_w, 2 * tau);
    /* Embedding: f̄ AllReduce forward. Output: f's AllReduce beside the logits wgrad, the
     * cross-entropy AllReduce. */
    double logits_w = gemm_s(h, V / t, x.T);
    double ce = 2 * (t - 1) / t * 12 * x.T / NV;
    double emb = 2 * tau, out = beside(logits_w, 2 * tau) + ce;
    EQ(r.time.tp_exposed_s, 2 * (L * layer + emb + out));
    EQ(r.time.forward_s, 2 * (L * layer_fwd(x) + emb_fwd(x) + out_fwd(x)));
}
END_TEST

/* ---- Pipeline: bubble, sends, the tied embedding. ---- */

/* One micro-batch on rank 0 or 1 of p = 2 (t = 1: no collective inside a stage): 4 layers,
 * and the embedding (rank 0) or the output block (rank 1). */
static double
stage_wall(struct dims x, int rank)
{
    double layers = 4 * (layer_fwd(x) + layer_bwd(x));
    return layers + (rank == 0 ? emb_fwd(x) + emb_bwd(x) : out_fwd(x) + out_bwd(x));
}

START_TEST(pipeline_1f1b)
{
    /* t = 1, p = 2, 4 micro-batches: rank 0 runs 4 layers and the embedding, rank 1 4 layers
     * and the output block (the slower: the critical stage). */
    struct spsim_parallel p = config(1, 2, 1, 1, 4);
    struct spsim_result r = run(&p);
    struct dims x = dims_of(1, false, 1);
    double w0 = stage_wall(x, 0), w1 = stage_wall(x, 1);
    ck_assert_uint_eq(r.time.critical_stage, 1);
    EQ(r.time.forward_s, 4 * (4 * layer_fwd(x) + out_fwd(x)));
    EQ(r.time.backward_s, 4 * (4 * layer_bwd(x) + out_bwd(x)));
    /* Sends (p2p_communication, blocking): each micro-batch sends its activation forward and
     * its gradient backward, [s, b, h] in bf16, 2·T·h bytes over NVLink: 2 sends per
     * micro-batch on the critical path. */
    double send = 2 * x.T * h / NV;
    EQ(r.time.pp_p2p_s, 4 * 2 * send);
    EQ(r.time.microbatch_s, w1 + 2 * send);
    /* Bubble (Narayanan et al. 2021): (p − 1)/v slots of the mean stage's micro-batch time
     * and its sends. */
    EQ(r.time.pp_bubble_s, (2 - 1) / 1.0 * ((w0 + w1) / 2 + 2 * send));
    /* The tied embedding: ranks 0 and 1 all-reduce its fp32 gradient (4·v·h bytes, 2(n−1)/n
     * on the wire for n = 2), on its own line; with dp = 1 nothing is data-parallel. */
    EQ(r.time.tied_embedding_allreduce_s, 4 * V * h / NV);
    ck_assert(r.time.dp_exposed_s == 0);
    /* The optimizer step is timed on the most loaded rank's parameters (dp_time.c), here
     * rank 1: its 4 layers, final norm and tied copy, P1 = P0 − (sh − 2h), against rank 0's 4
     * layers, embedding and position table, P0. Rank 0 holds 2·4 layers in flight and 2
     * dropout masks, 8·35,684,352 + 2·1,048,576 = 287,571,968 B; rank 1 one micro-batch's 4
     * layers, the output block's 4sbh + 4sbv and the bf16 logits at the loss 2sbv (summary.c
     * logits_working_bytes), 142,737,408 + 4,194,304 + 134,217,728 + 67,108,864 = 348,258,304
     * B: more than rank 0's with its 18·(sh − 2h) = 18,837,504 B of extra parameters. */
    double P0 = 4 * layer_params(1) + V * h + s * h, P1 = P0 - (s * h - 2 * h);
    ck_assert_uint_eq(r.memory.peak_stage, 1);
    ck_assert_uint_eq(r.memory.parameters_per_gpu, (uint64_t)P1);
    ck_assert_uint_eq(r.memory.parameters_first_stage, (uint64_t)P0);
    ck_assert_uint_eq(r.memory.parameters_last_stage,
                      (uint64_t)(4 * layer_params(1) + 2 * h + V * h));
    ck_assert_uint_eq(r.memory.activation_last_stage_bytes, 348258304);
    double iteration =
        4 * w1 + 4 * 2 * send + ((w0 + w1) / 2 + 2 * send) + 4 * V * h / NV + 38 * P1 / HBM;
    EQ(r.time.iteration_s, iteration);
    /* Link-busy accounting (issue 23: no test read it): the NVLink port carries the sends of
     * the m micro-batches and of the (p − 1) fill/drain slots, 2 sends each, and the tied
     * embedding's AllReduce; nothing crosses the network. */
    double busy = (4 + 1) * 2 * send + 4 * V * h / NV;
    EQ(r.time.nvlink_busy_s, busy);
    EQ(r.time.nvlink_utilisation, busy / iteration);
    ck_assert(r.time.network_busy_s == 0 && r.time.network_utilisation == 0);
    /* Memory, rank 0: 1F1B keeps min(p, m) = 2 micro-batches of its 4 layers in flight and
     * their 2 embedding dropout masks (paper §4.3, sbhp/t). */
    double per_layer = s * h * 34 + 4 * a * s;
    ck_assert_uint_eq(r.memory.activation_layers_bytes, (uint64_t)(2 * 4 * per_layer));
    ck_assert_uint_eq(r.memory.activation_embedding_bytes, (uint64_t)(2 * s * h));
    ck_assert_uint_eq(r.memory.activation_first_stage_bytes,
                      (uint64_t)(2 * 4 * per_layer + 2 * s * h));
}
END_TEST

START_TEST(pipeline_interleaved)
{
    /* t = 1, p = 2, v = 2 (2 layers per chunk), 8 micro-batches, blocking sends
     * (--no-overlap-p2p-communication; the overlapped sends are worked in test_overlap.c). */
    struct spsim_parallel p = config(1, 2, 2, 1, 8);
    p.no_overlap_p2p = true;
    struct spsim_result r = run(&p);
    struct dims x = dims_of(1, false, 1);
    double w0 = stage_wall(x, 0), w1 = stage_wall(x, 1);
    /* Two sends per micro-batch and chunk: 2v per micro-batch. */
    double send = 2 * x.T * h / NV, p2p = 2 * 2 * send;
    EQ(r.time.pp_p2p_s, 8 * p2p);
    /* Bubble: (p − 1)/v = 1/2 slot. */
    EQ(r.time.pp_bubble_s, 0.5 * ((w0 + w1) / 2 + p2p));
    EQ(r.time.tied_embedding_allreduce_s, 4 * V * h / NV);
    /* The step on the most loaded rank's parameters: rank 1 (3 chunks of 2 layers,
     * 214,106,112 B, the output block's 138,412,032 B and the bf16 logits' 67,108,864 B,
     * against rank 0's 361,037,824 B below and 18·(sh − 2h) more parameter bytes). */
    double P1 = 4 * layer_params(1) + V * h + 2 * h;
    ck_assert_uint_eq(r.memory.peak_stage, 1);
    EQ(r.time.iteration_s,
       8 * (w1 + p2p) + 0.5 * ((w0 + w1) / 2 + p2p) + 4 * V * h / NV + 38 * P1 / HBM);
    /* Memory, rank 0 (schedules.py): 2(p − 1) + (v − 1)p = 4 warm-up chunk forwards and one
     * more in steady state, 5 chunks of 2 layers. The embedding's dropout masks (sbh, 1 B):
     * forwards run chunk by chunk in groups of p micro-batches, backwards in reverse chunk
     * order, so rank 0 runs (micro-batch, chunk) forwards (0,0) (1,0) (0,1) (1,1), then
     * F(2,0) B(0,1) F(3,0) B(1,1) F(2,1) B(0,0): chunk 0 of micro-batches 0..3 ran before the
     * first chunk-0 backward, and from then on each chunk-0 backward is matched by a chunk-0
     * forward (B(1,0) F(4,0) B(2,1) F(5,0)): 2p = 4 masks at peak. */
    double per_layer = s * h * 34 + 4 * a * s;
    ck_assert_uint_eq(r.memory.inflight_chunks_first_stage, 5);
    ck_assert_uint_eq(r.memory.activation_layers_bytes, (uint64_t)(5 * 2 * per_layer));
    ck_assert_uint_eq(r.memory.activation_embedding_bytes, (uint64_t)(4 * s * h));
    /* With only p = 2 micro-batches, both are in flight: 2 masks. */
    p = config(1, 2, 2, 1, 2);
    p.no_overlap_p2p = true;
    r = run(&p);
    ck_assert_uint_eq(r.memory.activation_embedding_bytes, (uint64_t)(2 * s * h));
}
END_TEST

START_TEST(pipeline_sends_with_tp)
{
    /* t = 2, p = 2, 4 micro-batches. Megatron's scatter-gather optimisation sends 1/t of the
     * [s, b, h] activation, 2·T·h/t = T·h bytes; without SP the receiver re-gathers the whole
     * tensor over the TP group (an AllGather of 2·T·h bytes, (t−1)/t of it on the wire: T·h).
     * With SP the activation already is the s/t shard: no re-gather. */
    struct spsim_parallel p = config(2, 2, 1, 1, 4);
    struct spsim_result r = run(&p);
    double T = s;
    ck_assert_uint_eq(r.comm.pp_message_bytes, (uint64_t)(T * h));
    EQ(r.time.pp_p2p_s, 4 * 2 * (T * h / NV + T * h / NV));
    p.sp = true;
    r = run(&p);
    EQ(r.time.pp_p2p_s, 4 * 2 * (T * h / NV));
}
END_TEST

/* ---- Data parallelism and the optimizer step. ---- */

/*
 * --overlap-grad-reduce as Megatron-Core launches it (engine/buckets.c): pipeline rank 0's
 * P parameters in buckets of S = max(40M, 1M·dp) = 40M parameters, filled in reverse
 * parameter order, n = ceil(P/S), the last holding the remainder and the embedding (E
 * parameters). The lin = (P − E)/S buckets' worth of layer parameters become ready in
 * proportion over the last micro-batch's backward (`slot` long, ending at 0), the bucket
 * holding the embedding at its end; their collectives (`per` seconds per parameter) queue on
 * one communicator. A FIFO of entries ready at r_k lasting c_k ends at max_k (r_k + Σ_{i≥k}
 * c_i); with j = floor(lin) whole layer buckets that maximum is at bucket 1, bucket j, or the
 * first bucket ready at the end. @return how far past the backward's end the queue ends.
 */
static double
buckets_finish(double P, double E, double slot, double per)
{
    double S = 40e6, n = ceil(P / S), lin = (P - E) / S, j = floor(lin), c = S * per;
    double total = P * per, finish = total - j * c; /* bucket j + 1, ready at the end */
    if (j >= 1) {
        finish = fmax(finish, -slot + slot / lin + total);
        finish = fmax(finish, -slot + slot * j / lin + total - (j - 1) * c);
    }
    ck_assert(n >= 2 && j <= n - 1);
    return finish;
}

START_TEST(data_parallel)
{
    /* t = p = 1, dp = 2, 2 micro-batches per replica. Gradients: 4 B per parameter. */
    struct dims x = dims_of(1, false, 1);
    double P = L * layer_params(1) + V * h + s * h + 2 * h;
    double window = L * layer_bwd(x) + emb_bwd(x) + out_bwd(x); /* last micro-batch's backward */
    /* AllReduce over 2: 2(n−1)/n · 4P = 4P bytes per rank on the wire; exposed in full. */
    struct spsim_parallel p = config(1, 1, 1, 2, 2);
    struct spsim_result r = run(&p);
    double ar = 4 * P / NV;
    EQ(r.time.dp_exposed_s, ar);
    EQ(r.time.optimizer_s, 38 * P / HBM);
    /* --overlap-grad-reduce: the buckets' AllReduces (4 B per parameter over NVLink, alone
     * there: t = 1, no sends) queue beside the last micro-batch's backward (buckets_finish):
     * P = 135.3M, 4 buckets, 2.52 of them layer parameters before the embedding's V·h + s·h. */
    double E = V * h + s * h;
    p.overlap_grad_reduce = true;
    r = run(&p);
    ck_assert_uint_eq(r.time.dp_buckets, 4);
    double fin = buckets_finish(P, E, window, 4 / NV);
    ck_assert(fin > 0 && fin < ar);
    /* The part hidden beside the backward (ar − fin of the AllReduce's time alone) holds its
     * NCCL channel's SM, 1 of the 8: the backward lasts (ar − fin)/8 longer. */
    EQ(r.time.dp_exposed_s, fin + (ar - fin) / 8);
    /* The distributed optimizer: ReduceScatter of the fp32 gradients ((n−1)/n · 4P) and
     * AllGather of the bf16 weights ((n−1)/n · 2P); Adam on 1/2 of the parameters:
     * 4 + 28/2 + 2 + 4 B per parameter; the optimizer state sharded: 12P/2. */
    p.overlap_grad_reduce = false;
    p.distributed_optimizer = true;
    r = run(&p);
    double rsag = (2 * P + P) / NV;
    EQ(r.time.dp_exposed_s, rsag);
    EQ(r.time.optimizer_s, (4 * P + 28 * P / 2 + 2 * P + 4 * P) / HBM);
    ck_assert_uint_eq(r.memory.optimizer_bytes, (uint64_t)(12 * P / 2));
    /* Overlapped: the ReduceScatters ((n−1)/n · 4 B = 2 B per parameter) in buckets; the
     * AllGather of the updated weights after the step stays whole (P/NV). */
    p.overlap_grad_reduce = true;
    r = run(&p);
    EQ(r.time.param_gather_exposed_s, P / NV);
    double rs_fin = buckets_finish(P, E, window, 2 / NV);
    EQ(r.time.dp_exposed_s, rs_fin + P / NV + (2 * P / NV - rs_fin) / 8);
}
END_TEST

START_TEST(data_parallel_shares_nvlink_with_tp)
{
    /* t = 2 with SP, dp = 2 (stride 2: both groups inside the NVLink domain), 2 micro-batches,
     * --overlap-grad-reduce. The gradient AllReduce (4P bytes on the wire for n = 2) runs
     * beside the last backward, whose TP collectives use the same NVLink port: per layer the
     * two ḡ AllGathers, the two re-gathers and the two ReduceScatters, 6 × (t−1)/t · 2·T·h =
     * 6·T·h bytes, over 8 layers. Max-min fair sharing: 25 GB/s each until the TP bytes are
     * through, then the AllReduce alone at 50 GB/s; it ends at (DP + TP bytes)/50 GB/s. */
    struct spsim_parallel p = config(2, 1, 1, 2, 2);
    p.sp = true;
    p.overlap_grad_reduce = true;
    struct spsim_result r = run(&p);
    struct dims x = dims_of(2, true, 1);
    double t = 2, tau = (t - 1) / t * 2 * x.T * h / NV;
    double P = L * layer_params(2) + V * h / 2 + s * h + 2 * h;
    double dp_bytes = 4 * P, tp_bytes = L * 6 * x.T * h;
    ck_assert(tp_bytes < dp_bytes);
    double finish = (dp_bytes + tp_bytes) / NV;
    /* The window: the last micro-batch's backward on the stage, its exposed TP collectives
     * included (as in tp_exposed_with_sp: per layer the two ḡ AllGathers and the four beside
     * QKV's and FC1's GEMMs; the embedding's AllGather; the output block's two beside the
     * logits GEMMs). */
    /* dgrad (T, in, K = out) and wgrad (in, out, K = T) of QKV (h → 3h/t) and FC1 (h → 4h/t). */
    double qkv_d = gemm_s(x.T, h, 3 * h / t), qkv_w = gemm_s(h, 3 * h / t, x.T);
    double fc1_d = gemm_s(x.T, h, f / t), fc1_w = gemm_s(h, f / t, x.T);
    double logits_d = gemm_s(x.T, h, V / t), logits_w = gemm_s(h, V / t, x.T);
    double window = L * (layer_bwd(x) + 2 * tau + beside(qkv_d, tau) + beside(qkv_w, tau) +
                         beside(fc1_d, tau) + beside(fc1_w, tau)) +
                    emb_bwd(x) + tau + out_bwd(x) + beside(logits_d, tau) + beside(logits_w, tau);
    /* The buckets' AllReduces at the rate that sharing leaves them, slowed by the whole
     * reduction's finish over its time alone (dp_bytes/NV): 4·finish/dp_bytes seconds per
     * parameter; P = 68.2M per rank, 2 buckets (1.26 of layers). */
    double E = V * h / 2 + s * h;
    ck_assert_uint_eq(r.time.dp_buckets, 2);
    EQ(r.time.dp_exposed_s, buckets_finish(P, E, window, 4 * finish / dp_bytes));
}
END_TEST

/* ---- Context parallelism. ---- */

START_TEST(context_parallel_p2p)
{
    /* t = 1, cp = 2 (p2p ring), dp = 1, 2 micro-batches: each rank T = s/2 tokens. */
    struct spsim_parallel p = config(1, 1, 1, 1, 2);
    p.cp = 2;
    struct spsim_result r = run(&p);
    struct dims x = dims_of(1, false, 2);
    /* K and V of one rank, KV_blk = 2·T·(kv·d)·2 B, one ring hop at 50 GB/s. The ring has
     * r = 2 steps of attention a = flash/2 each. Forward: one block travels beside step 0,
     * showing by max(0, T_blk − a). Backward (a × 2.5): the first block beside step 0, and the
     * last dKV block after the last step in full. */
    double blk = 2 * x.T * h * 2 / NV, att = flash_flops(x) / FLASH / 2;
    double layer = fmax(0, blk - att) + fmax(0, blk - 2.5 * att) + blk;
    EQ(r.time.cp_exposed_s, 2 * L * layer);
    EQ(r.time.forward_s, 2 * (L * layer_fwd(x) + emb_fwd(x) + out_fwd(x)));
    EQ(r.time.backward_s, 2 * (L * layer_bwd(x) + emb_bwd(x) + out_bwd(x)));
    /* The gradients are reduced over dp·cp = 2 even with dp = 1: 4P on the wire. */
    double P = L * layer_params(1) + V * h + s * h + 2 * h;
    EQ(r.time.dp_exposed_s, 4 * P / NV);
    /* The links are busy for the ring's whole transfers, hidden or not: forward r − 1 = 1
     * block, backward 2 blocks (KV at step 0, dKV after the last) + (r − 2) double ones, per
     * layer and micro-batch; then the gradient AllReduce, all on NVLink (issue 23: a mutant
     * counting one backward block survived). */
    double busy = 2 * L * (blk + 2 * blk) + 4 * P / NV;
    EQ(r.time.nvlink_busy_s, busy);
    EQ(r.time.nvlink_utilisation, busy / r.time.iteration_s);
    ck_assert(r.time.network_busy_s == 0);
}
END_TEST

/* ---- Links across nodes. ---- */

START_TEST(link_busy_across_nodes)
{
    /* t = 1, p = 2, dp = 8, 4 micro-batches: the 8 data-parallel ranks fill a node, so the
     * pipeline's two stages are in two nodes. The sends, 2·T·h bytes each, cross the network
     * at the NIC's 25 GB/s (one NIC per GPU), as does the tied embedding's AllReduce between
     * the two stages (4·v·h bytes; across nodes NCCL's Ring/Simple pays the protocol's own
     * latencies beside 2(n−1)/n of it on the wire: the collective model's figure, as nccl-tests
     * would take it, spsim_collective_predict); the gradient AllReduce over the 8 ranks of a
     * node, 2·7/8 · 4·P₁ bytes at 50 GB/s, is the NVLink port's: P₁ the parameters of the
     * most loaded rank, the last (pipeline_1f1b). */
    struct spsim_parallel p = config(1, 2, 1, 8, 4);
    struct spsim_result r = run(&p);
    const double NIC = 25e9, T = s;
    struct spsim_hardware *hw = terms_hw();
    struct spsim_collective_prediction ar;
    ck_assert_int_eq(
        spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 2, 2, (uint64_t)(4 * V * h), &ar, NULL),
        SPSIM_OK);
    spsim_hardware_destroy(hw);
    double send = 2 * T * h / NIC, tied = ar.time_s;
    ck_assert(tied >= 4 * V * h / NIC); /* at least the wire time */
    double P1 = 4 * layer_params(1) + V * h + 2 * h;
    ck_assert_uint_eq(r.memory.peak_stage, 1);
    ck_assert_int_eq(r.comm.pp_tier, SPSIM_TIER_NETWORK);
    ck_assert_int_eq(r.comm.dp_tier, SPSIM_TIER_NVLINK);
    EQ(r.time.pp_p2p_s, 4 * 2 * send);
    EQ(r.time.tied_embedding_allreduce_s, tied);
    EQ(r.time.dp_exposed_s, 2 * 7.0 / 8 * 4 * P1 / NV);
    double net = (4 + 1) * 2 * send + tied, nv = 2 * 7.0 / 8 * 4 * P1 / NV;
    EQ(r.time.network_busy_s, net);
    EQ(r.time.nvlink_busy_s, nv);
    EQ(r.time.network_utilisation, net / r.time.iteration_s);
    EQ(r.time.nvlink_utilisation, nv / r.time.iteration_s);
}
END_TEST

static Suite *
terms_suite(void)
{
    Suite *suite = suite_create("terms");
    TCase *tc = tcase_create("hand");
    tcase_add_test(tc, one_gpu_forward_backward_optimizer);
    tcase_add_test(tc, main_grad_add_without_fusion);
    tcase_add_test(tc, one_gpu_activation_memory);
    tcase_add_test(tc, deferred_embedding_wgrad_memory);
    tcase_add_test(tc, fused_cross_entropy);
    tcase_add_test(tc, fused_attention_rates);
    tcase_add_test(tc, recomputation);
    tcase_add_test(tc, rmsnorm_moves_layernorm_bytes);
    tcase_add_test(tc, tp_exposed_with_sp);
    tcase_add_test(tc, tp_exposed_without_sp);
    tcase_add_test(tc, pipeline_1f1b);
    tcase_add_test(tc, pipeline_interleaved);
    tcase_add_test(tc, pipeline_sends_with_tp);
    tcase_add_test(tc, data_parallel);
    tcase_add_test(tc, data_parallel_shares_nvlink_with_tp);
    tcase_add_test(tc, context_parallel_p2p);
    tcase_add_test(tc, link_busy_across_nodes);
    suite_add_tcase(suite, tc);
    return suite;
}

int
main(void)
{
    return testutil_run(terms_suite());
}
