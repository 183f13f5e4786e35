/*
 * Fine-grained recomputation and CPU activation offload against closed forms worked here, from
 * Megatron-LM's code (transformer_config.py recompute_modules, transformer_layer.py, recompute.py
 * checkpointed_forward) and Transformer Engine's cpu_offload.py, independently of the engine:
 * bytes in 128-bit integers, times from the hardware profile's numbers.
 *
 * One layer's saved tensors (layer.c's table, Korthikanti et al. 2022 §4.1), s' = s/t with SP:
 *   SP region: norm 1 input, QKV input, norm 2 input, FC1 input, 2 B each of s'·b·h; with
 *     dropout two 1-byte masks of s'·b·h;
 *   TP region: Q and K 2·s·b·(q+kv)/t, V 2·s·b·kv/t, projection input 2·s·b·q/t; GeLU MLP:
 *     GeLU input and FC2 input 2·s·b·ffn/t each; SwiGLU: its input 4·s·b·ffn/t (gate and up),
 *     FC2 input 2·s·b·ffn/t;
 *   core attention: standard, softmax output 2·b·(a/t)·s², with dropout its 1-byte mask and
 *     its 2-byte output; flash, the fp32 log-sum-exp 4·b·(a/t)·s.
 * Module by module, what selective recomputation drops:
 *   core_attn: the core-attention tensors (checkpoint of Q, K, V; they stay);
 *   layernorm: each norm's output, i.e. the QKV and FC1 inputs, 4·s'·b·h (output-discarding
 *     checkpoint: the norms' inputs stay);
 *   mlp: the tensors inside the MLP, GeLU/SwiGLU input and FC2 input (checkpoint of the MLP's
 *     input, the FC1 input, which stays unless layernorm drops it).
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

typedef unsigned __int128 u128;

/* A layer shape: GPT (GeLU, dropout, standard attention) or Llama (SwiGLU, no dropout, flash,
 * GQA). */
struct lay {
    uint64_t L, h, a, kv, d, ffn, s, b, t;
    bool sp, llama;
};

static struct spsim_model *
model_of(const struct lay *x)
{
    struct spsim_model_shape m =
        testutil_gpt_shape((uint32_t)x->L, (uint32_t)x->h, (uint32_t)x->a, (uint32_t)x->s, 51200);
    m.kv_heads = (uint32_t)x->kv;
    m.head_dim = (uint32_t)x->d;
    m.ffn_hidden = (uint32_t)x->ffn;
    if (x->llama) {
        m.mlp = SPSIM_MLP_SWIGLU;
        m.norm = SPSIM_NORM_RMSNORM;
        m.dropout = false;
        m.attention = SPSIM_ATTENTION_FLASH;
        m.position = SPSIM_POSITION_ROPE;
        m.linear_bias = false;
        m.tied_embeddings = false;
    }
    return testutil_model(&m);
}

static u128
sl(const struct lay *x)
{
    return x->sp ? x->s / x->t : x->s;
}

/* The bytes each module's recomputation drops (see the table above). */
static u128
core_bytes(const struct lay *x)
{
    u128 heads = x->a / x->t;
    if (x->llama)
        return 4 * (u128)x->b * heads * x->s;
    return 5 * (u128)x->b * heads * x->s * x->s; /* softmax 2 + mask 1 + dropout output 2 */
}

static u128
norm_out_bytes(const struct lay *x)
{
    return 4 * sl(x) * x->b * x->h;
}

static u128
mlp_bytes(const struct lay *x)
{
    return (x->llama ? 6 : 4) * (u128)x->s * x->b * x->ffn / x->t;
}

/* The whole inventory of one layer, no recomputation. */
static u128
layer_bytes(const struct lay *x)
{
    u128 q = x->a * x->d, kv = x->kv * x->d, sb = (u128)x->s * x->b;
    u128 seq = 8 * sl(x) * x->b * x->h + (x->llama ? 0 : 2 * sl(x) * x->b * x->h);
    u128 tp = 2 * sb * (q + kv) / x->t + 2 * sb * kv / x->t + 2 * sb * q / x->t;
    return seq + tp + mlp_bytes(x) + core_bytes(x);
}

static const struct lay shapes[] = {
    {8, 6144, 64, 64, 96, 24576, 2048, 4, 8, true, false},    /* paper 22B, SP */
    {8, 12288, 96, 96, 128, 49152, 2048, 1, 8, false, false}, /* 175B, TP without SP */
    {8, 4096, 32, 32, 128, 16384, 1024, 2, 1, false, false},  /* t = 1 */
    {8, 12288, 96, 96, 128, 49152, 3072, 2, 3, true, false},  /* odd t */
    {8, 8192, 64, 8, 128, 28672, 4096, 1, 8, true, true},     /* Llama 70B-like, SP */
    {8, 4096, 32, 8, 128, 14336, 8192, 1, 2, false, true},    /* Llama 8B-like, t = 2 */
};

static struct spsim_parallel
par_of(const struct lay *x)
{
    struct spsim_parallel p;
    spsim_parallel_defaults(&p);
    p.tp = (uint32_t)x->t;
    p.sp = x->sp;
    p.mbs = (uint32_t)x->b;
    p.gbs = x->b;
    return p;
}

static void
eval_ok(const struct spsim_model *m, const struct spsim_hardware *hw,
        const struct spsim_parallel *p, struct spsim_result *r)
{
    struct spsim_error err = {0};
    int rc = spsim_evaluate(m, hw, p, r, &err);
    ck_assert_msg(rc == SPSIM_OK, "evaluate: %s", err.message);
}

static void
check_bytes(const char *what, uint64_t got, u128 want)
{
    ck_assert_msg((u128)got == want, "%s: got %llu, want %llu", what, (unsigned long long)got,
                  (unsigned long long)want);
}

static void
check_rel(const char *what, double got, double want, double tol)
{
    double scale = want != 0 ? (want < 0 ? -want : want) : 1;
    double diff = got > want ? got - want : want - got;
    ck_assert_msg(diff <= tol * scale, "%s: got %.17g, want %.17g", what, got, want);
}

START_TEST(each_module_drops_its_tensors)
{
    const struct lay *x = &shapes[_i];
    struct spsim_model *m = model_of(x);
    struct spsim_parallel p = par_of(x);
    struct spsim_result r;
    eval_ok(m, NULL, &p, &r);
    check_bytes("no recompute", r.memory.activation_per_layer_bytes, layer_bytes(x));
    p.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    for (uint32_t mods = 1; mods < 8; mods++) {
        u128 want = layer_bytes(x);
        if (mods & SPSIM_RMOD_CORE_ATTN)
            want -= core_bytes(x);
        if (mods & SPSIM_RMOD_LAYERNORM)
            want -= norm_out_bytes(x);
        if (mods & SPSIM_RMOD_MLP)
            want -= mlp_bytes(x);
        p.recompute_modules = mods;
        eval_ok(m, NULL, &p, &r);
        char what[64];
        snprintf(what, sizeof(what), "shape %d, modules 0x%x", _i, mods);
        check_bytes(what, r.memory.activation_per_layer_bytes, want);
        ck_assert_uint_eq(r.config.recompute_modules, mods);
    }
    /* The default list is Megatron's ["core_attn"]: today's selective recomputation. */
    p.recompute_modules = 0;
    eval_ok(m, NULL, &p, &r);
    check_bytes("default modules", r.memory.activation_per_layer_bytes,
                layer_bytes(x) - core_bytes(x));
    ck_assert_uint_eq(r.config.recompute_modules, SPSIM_RMOD_CORE_ATTN);
    spsim_model_destroy(m);
}
END_TEST

/* A query on dgx-h100 with pp = 1 and 4 micro-batches. */
static void
eval_timed(const struct lay *x, const struct spsim_model *m, const struct spsim_hardware *hw,
           uint32_t mods, struct spsim_result *r)
{
    struct spsim_parallel p = par_of(x);
    p.gbs = 4 * x->b;
    p.recompute = mods ? SPSIM_RECOMPUTE_SELECTIVE : SPSIM_RECOMPUTE_NONE;
    p.recompute_modules = mods;
    eval_ok(m, hw, &p, r);
}

START_TEST(each_module_replays_its_forward)
{
    const struct lay *x = &shapes[_i];
    struct spsim_model *m = model_of(x);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_hardware_info info;
    spsim_hardware_get_info(hw, &info);
    double passes = 4, L = (double)x->L, t = (double)x->t;
    double sb = (double)x->s * (double)x->b, h = (double)x->h, ffn = (double)x->ffn;
    struct spsim_result none, r;
    eval_timed(x, m, hw, 0, &none);

    /* layernorm: each norm reads its input and writes its output again (2 B each of s'·b·h),
     * memory-bound at the measured HBM bandwidth; no FLOPs, no collective. */
    eval_timed(x, m, hw, SPSIM_RMOD_LAYERNORM, &r);
    double norm_s = 2 * 4.0 * (double)sl(x) * (double)x->b * h / (info.hbm_achievable_GBps * 1e9);
    check_rel("layernorm recompute time", r.time.recompute_s, passes * L * norm_s, 1e-12);
    check_rel("layernorm FLOPs", r.time.hardware_flops, none.time.hardware_flops, 1e-15);
    ck_assert_uint_eq(r.comm.tp_recompute_wire_bytes_per_layer, 0);
    double norm_total = r.time.recompute_s;

    /* mlp: FC1 (gate and up for SwiGLU) and FC2 again, 2·s·b·h·ffn·(gate + 1) FLOPs over the
     * TP group; with SP the g AllGather and ḡ ReduceScatter again, without it f̄'s AllReduce:
     * 2·(t−1)/t·M either way, M = 2·s·b·h. */
    eval_timed(x, m, hw, SPSIM_RMOD_MLP, &r);
    double gate = x->llama ? 2 : 1;
    check_rel("mlp recompute FLOPs", r.time.hardware_flops - none.time.hardware_flops,
              passes * L * 2 * sb * h * ffn * (gate + 1), 1e-9);
    u128 M = 2 * (u128)x->s * x->b * x->h;
    check_bytes("mlp recompute wire", r.comm.tp_recompute_wire_bytes_per_layer,
                x->t > 1 ? 2 * (M / x->t * (x->t - 1)) : 0);
    ck_assert(r.time.recompute_s > 0);
    double mlp_total = r.time.recompute_s;

    /* core_attn: QKᵀ and attention·V, 4·b·a·s²·d FLOPs (flash: its causal half, 2·b·a·s²·d). */
    eval_timed(x, m, hw, SPSIM_RMOD_CORE_ATTN, &r);
    double core = (x->llama ? 2.0 : 4.0) * (double)x->b * (double)x->a * (double)x->s *
                  (double)x->s * (double)x->d;
    check_rel("core_attn recompute FLOPs", r.time.hardware_flops - none.time.hardware_flops,
              passes * L * core, 1e-9);
    double core_total = r.time.recompute_s;

    /* Modules replay independently: together, the sum of each alone. */
    eval_timed(x, m, hw, 7, &r);
    check_rel("all modules", r.time.recompute_s, norm_total + mlp_total + core_total, 1e-12);
    (void)t;
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/* Full recomputation by method on a 24-layer GPT (t = 2, SP): (pp, vpp, method, N). */
static const struct {
    uint32_t pp, vpp;
    enum spsim_recompute_method method;
    uint32_t n;
} methods[] = {
    {1, 1, SPSIM_RECOMPUTE_METHOD_UNIFORM, 1},  {1, 1, SPSIM_RECOMPUTE_METHOD_UNIFORM, 5},
    {2, 1, SPSIM_RECOMPUTE_METHOD_UNIFORM, 12}, {2, 3, SPSIM_RECOMPUTE_METHOD_UNIFORM, 3},
    {3, 2, SPSIM_RECOMPUTE_METHOD_UNIFORM, 6},  {1, 1, SPSIM_RECOMPUTE_METHOD_BLOCK, 10},
    {2, 1, SPSIM_RECOMPUTE_METHOD_BLOCK, 1},    {2, 3, SPSIM_RECOMPUTE_METHOD_BLOCK, 3},
    {3, 2, SPSIM_RECOMPUTE_METHOD_BLOCK, 6},    {4, 1, SPSIM_RECOMPUTE_METHOD_BLOCK, 6},
};

static const struct lay full_shape = {24, 4096, 32, 32, 128, 16384, 2048, 1, 2, true, false};

static struct spsim_parallel
full_par(uint32_t pp, uint32_t vpp, enum spsim_recompute_method method, uint32_t n)
{
    struct spsim_parallel p = par_of(&full_shape);
    p.pp = pp;
    p.vpp = vpp;
    p.gbs = 4 * pp; /* micro-batches: a multiple of pp, enough to fill the schedule */
    p.recompute = SPSIM_RECOMPUTE_FULL;
    p.recompute_method = method;
    p.recompute_layers = n;
    return p;
}

START_TEST(full_methods_memory)
{
    const struct lay *x = &full_shape;
    uint64_t pp = methods[_i].pp, v = methods[_i].vpp, n = methods[_i].n, micro = 4 * pp;
    struct spsim_model *m = model_of(x);
    struct spsim_parallel p = full_par((uint32_t)pp, (uint32_t)v, methods[_i].method, (uint32_t)n);
    struct spsim_result r;
    eval_ok(m, NULL, &p, &r);
    /* Stage 0 holds min(p, micro) chunks (1F1B) or min(2(p−1) + (v−1)p + 1, micro·v)
     * (interleaved, Megatron schedules.py); a chunk has lpc = L/(p·v) layers. */
    uint64_t lpc = x->L / (pp * v), lps = x->L / pp;
    uint64_t chunks = v == 1 ? (pp < micro ? pp : micro) : 2 * (pp - 1) + (v - 1) * pp + 1;
    uint64_t nn = n < lpc ? n : lpc;
    u128 ckpt = 2 * sl(x) * x->b * x->h, whole = layer_bytes(x), per_chunk, working;
    uint64_t replayed;
    if (methods[_i].method == SPSIM_RECOMPUTE_METHOD_UNIFORM) {
        /* Groups of N layers (the last shorter), each keeping its input; one group's N layers
         * are live while it is recomputed; every layer is replayed. */
        per_chunk = (lpc + nn - 1) / nn * ckpt;
        working = nn * whole;
        replayed = lps;
    } else {
        /* The first N layers of each chunk keep their input, the rest everything; one layer
         * is recomputed at a time; v·N layers replayed per stage. */
        per_chunk = nn * ckpt + (lpc - nn) * whole;
        working = whole;
        replayed = v * nn;
    }
    check_bytes("checkpoint", r.memory.activation_per_layer_bytes, ckpt);
    check_bytes("layers in flight", r.memory.activation_layers_bytes, chunks * per_chunk);
    check_bytes("working set", r.memory.activation_recompute_working_bytes, working);
    ck_assert_uint_eq(r.memory.recomputed_layers_per_stage, replayed);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(full_methods_time)
{
    const struct lay *x = &full_shape;
    uint32_t pp = methods[_i].pp, v = methods[_i].vpp, n = methods[_i].n;
    struct spsim_model *m = model_of(x);
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_parallel p = full_par(pp, v, methods[_i].method, n);
    struct spsim_result r, one, none;
    eval_ok(m, hw, &p, &r);
    p = full_par(pp, v, SPSIM_RECOMPUTE_METHOD_UNIFORM, 1);
    eval_ok(m, hw, &p, &one);
    p.recompute = SPSIM_RECOMPUTE_NONE;
    p.recompute_method = SPSIM_RECOMPUTE_METHOD_DEFAULT;
    p.recompute_layers = 0;
    eval_ok(m, hw, &p, &none);
    /* Every layer replays the same forward: the recompute time and the recomputed FLOPs scale
     * with the layers replayed, all lps = L/p of them for uniform, v·min(N, lpc) for block. */
    double lps = (double)x->L / pp, lpc = lps / v;
    double replayed = methods[_i].method == SPSIM_RECOMPUTE_METHOD_UNIFORM
                          ? lps
                          : v * (n < lpc ? (double)n : lpc);
    check_rel("recompute time", r.time.recompute_s, one.time.recompute_s * replayed / lps, 1e-12);
    check_rel("recomputed FLOPs", r.time.hardware_flops - none.time.hardware_flops,
              (one.time.hardware_flops - none.time.hardware_flops) * replayed / lps, 1e-9);
    check_bytes("TP wire per micro-batch", r.comm.tp_wire_bytes_per_microbatch,
                (u128)lps * (none.comm.tp_wire_bytes_per_microbatch / lps) +
                    (u128)replayed * one.comm.tp_recompute_wire_bytes_per_layer);
    if (methods[_i].method == SPSIM_RECOMPUTE_METHOD_UNIFORM) { /* the same work */
        ck_assert(r.time.forward_s == one.time.forward_s);
        ck_assert(r.time.backward_s == one.time.backward_s);
        ck_assert(r.time.recompute_s == one.time.recompute_s);
        ck_assert(r.time.microbatch_s == one.time.microbatch_s);
    }
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(plain_full_is_uniform_one)
{
    /* `--recompute full` without a method keeps today's figures: one layer per checkpoint. */
    struct spsim_model *m = model_of(&full_shape);
    struct spsim_hardware *hw = testutil_hardware("dgx-a100-80g");
    struct spsim_parallel p = full_par(2, 3, SPSIM_RECOMPUTE_METHOD_DEFAULT, 0);
    struct spsim_result a, b;
    eval_ok(m, hw, &p, &a);
    p = full_par(2, 3, SPSIM_RECOMPUTE_METHOD_UNIFORM, 1);
    eval_ok(m, hw, &p, &b);
    ck_assert(memcmp(&a.memory, &b.memory, sizeof(a.memory)) == 0);
    ck_assert(memcmp(&a.time, &b.time, sizeof(a.time)) == 0);
    ck_assert(memcmp(&a.comm, &b.comm, sizeof(a.comm)) == 0);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

/*
 * CPU offload (TE cpu_offload.py, DefaultOffloadSynchronizer; Megatron needs pp = 1 and no
 * recomputation). Layers 0 .. N−1 are offloaded: each saved tensor of at least 256·1024 elements
 * goes to pinned host memory after its layer's forward and comes back before its backward, so
 * HBM holds (L − N)·T plus the offloaded layers' small tensors, and host memory N·O.
 * Copies run one after the other on one stream; layer i's copy must be done before the forward
 * of layer L − N + i (its memory is released there), the reloads mirror it in backward. With
 * layer forward F and copy time X per layer:
 *   N = L − 1: every forward j ≥ 1 waits for the copy of layer j − 1, which starts when that
 *     layer's forward ends: N·X exposed per pass, whatever F;
 *   X ≥ F and N ≤ L − N: the copies run back to back from the end of layer 0's forward, the
 *     last is done at F + N·X, and the last layer runs after it: max(0, 2F + N·X − L·F);
 *   X ≤ F and L − N ≥ 2: each copy is done within the next layer's forward: 0.
 * The backward pass is the same with its layer time B and the reload time.
 */
static const struct {
    struct lay x;
    const char *hw;
    uint32_t n;
} offloads[] = {
    {{8, 4096, 32, 32, 128, 16384, 2048, 1, 1, false, false}, "dgx-a100-80g", 7},
    {{8, 4096, 32, 32, 128, 16384, 2048, 1, 1, false, false}, "dgx-a100-80g", 4},
    {{8, 4096, 32, 32, 128, 16384, 2048, 1, 1, false, false}, "dgx-a100-80g", 2},
    {{16, 4096, 32, 8, 128, 14336, 1024, 1, 1, false, true}, "dgx-h100", 15},
    {{16, 4096, 32, 8, 128, 14336, 1024, 1, 1, false, true}, "gb200-nvl72", 3},
    {{16, 4096, 32, 8, 128, 14336, 16384, 1, 2, true, true}, "gb200-nvl72", 8},
    {{16, 8192, 64, 8, 128, 28672, 4096, 2, 8, true, true}, "dgx-h100", 6},
    {{8, 16384, 128, 8, 128, 53248, 8192, 1, 8, true, true}, "gb200-nvl72", 4}, /* 405B-like */
};

/* One direction's exposed copy time per pass (the cases above), or -1 if none applies. */
static double
exposed_pass(double L, double N, double step, double copy)
{
    if (N == L - 1)
        return N * copy;
    if (copy >= step && N <= L - N) {
        double e = 2 * step + N * copy - L * step;
        return e > 0 ? e : 0;
    }
    if (copy <= step && L - N >= 2)
        return 0;
    return -1;
}

START_TEST(offload_memory_and_copies)
{
    const struct lay *x = &offloads[_i].x;
    uint64_t N = offloads[_i].n, micro = 4;
    struct spsim_model *m = model_of(x);
    struct spsim_hardware *hw = testutil_hardware(offloads[_i].hw);
    struct spsim_parallel p = par_of(x);
    p.gbs = micro * x->b;
    struct spsim_result none, r;
    eval_ok(m, hw, &p, &none);
    p.offload_layers = (uint32_t)N;
    eval_ok(m, hw, &p, &r);
    /* What stays: tensors under 256Ki elements; of this layer only flash attention's
     * log-sum-exp, b·(a/t)·s elements, can be (the next smallest, V, has s·b·kv·d/t). */
    uint64_t lse = x->b * (x->a / x->t) * x->s;
    ck_assert_uint_ge(x->s * x->b * x->kv * x->d / x->t, 256 * 1024);
    u128 T = layer_bytes(x), O = x->llama && lse < 256 * 1024 ? T - 4 * lse : T;
    check_bytes("offloaded per layer", r.memory.offload_bytes_per_layer, O);
    check_bytes("HBM saved", r.memory.offload_hbm_saved_bytes, N * O);
    check_bytes("host memory", r.memory.offload_host_bytes, N * O);
    check_bytes("layers in flight", r.memory.activation_layers_bytes, x->L * T - N * O);
    check_bytes("total", none.memory.total_bytes - r.memory.total_bytes, N * O);
    /* Copy times at the profile's measured host-link bandwidths (GB = 1e9 B). */
    double d2h = strcmp(offloads[_i].hw, "dgx-a100-80g") == 0 ? 25.6e9
                 : strcmp(offloads[_i].hw, "dgx-h100") == 0   ? 52e9
                                                              : 193e9;
    double h2d = strcmp(offloads[_i].hw, "dgx-a100-80g") == 0 ? 26.28e9
                 : strcmp(offloads[_i].hw, "dgx-h100") == 0   ? 51e9
                                                              : 201e9;
    check_rel("to host", r.time.offload_d2h_s_per_layer, (double)O / d2h, 1e-15);
    check_rel("back", r.time.offload_h2d_s_per_layer, (double)O / h2d, 1e-15);
    /* Exposure from the layer times the result reports (they do not depend on offload). */
    ck_assert(r.time.layer_forward_s == none.time.layer_forward_s);
    double L = (double)x->L, n = (double)N;
    double f = exposed_pass(L, n, r.time.layer_forward_s, (double)O / d2h);
    double b = exposed_pass(L, n, r.time.layer_backward_s, (double)O / h2d);
    ck_assert_msg(f >= 0 && b >= 0, "case %d: no closed form applies", _i);
    check_rel("exposed", r.time.offload_exposed_s, (double)micro * (f + b), 1e-9);
    check_rel("iteration", r.time.iteration_s, none.time.iteration_s + r.time.offload_exposed_s,
              1e-12);
    spsim_hardware_destroy(hw);
    spsim_model_destroy(m);
}
END_TEST

START_TEST(offload_cases_cover_each_regime)
{
    /* The table above exercises a stall of every form: N = L − 1, a saturated stream, and
     * copies hidden behind compute. */
    bool saturated = false, hidden = false, last = false;
    for (size_t i = 0; i < sizeof(offloads) / sizeof(offloads[0]); i++) {
        const struct lay *x = &offloads[i].x;
        struct spsim_model *m = model_of(x);
        struct spsim_hardware *hw = testutil_hardware(offloads[i].hw);
        struct spsim_parallel p = par_of(x);
        p.gbs = 4 * x->b;
        p.offload_layers = offloads[i].n;
        struct spsim_result r;
        eval_ok(m, hw, &p, &r);
        last |= offloads[i].n == x->L - 1;
        saturated |= offloads[i].n < x->L - 1 && r.time.offload_exposed_s > 0;
        hidden |= r.time.offload_d2h_s_per_layer <= r.time.layer_forward_s &&
                  r.time.offload_h2d_s_per_layer <= r.time.layer_backward_s;
        spsim_hardware_destroy(hw);
        spsim_model_destroy(m);
    }
    ck_assert(saturated && hidden && last);
}
END_TEST

/* Megatron's rules (transformer_config.py __post_init__), with its messages where it has one:
 * each case changes these fields of an 8-layer configuration. */
static const struct {
    enum spsim_recompute recompute;
    uint32_t modules;
    enum spsim_recompute_method method;
    uint32_t layers, pp, offload;
    const char *message;
} rules[] = {
    {SPSIM_RECOMPUTE_NONE, SPSIM_RMOD_MLP, 0, 0, 1, 0,
     "field 'recompute_modules': modules are recomputed with recompute selective only"},
    {SPSIM_RECOMPUTE_SELECTIVE, SPSIM_RMOD_CORE_ATTN | SPSIM_RMOD_MOE, 0, 0, 1, 0,
     "recompute mixture-of-experts layers; this model is dense"},
    {SPSIM_RECOMPUTE_SELECTIVE, SPSIM_RMOD_MLA_UP_PROJ, 0, 0, 1, 0,
     "mla_up_proj in recompute_modules is only supported with multi_latent_attention."},
    {SPSIM_RECOMPUTE_SELECTIVE, 1u << 9, 0, 0, 1, 0,
     "field 'recompute_modules': unknown module bits"},
    {SPSIM_RECOMPUTE_SELECTIVE, 0, 0, 2, 1, 0,
     "When using recompute_granularity: selective recompute_num_layers must be None."},
    {SPSIM_RECOMPUTE_FULL, 0, 0, 2, 1, 0,
     "Using recompute_granularity: full so recompute_method must be \"block\" or \"uniform\""},
    {SPSIM_RECOMPUTE_FULL, 0, SPSIM_RECOMPUTE_METHOD_BLOCK, 0, 1, 0,
     "recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: 8"},
    /* 8 layers on 2 stages: 4 per rank */
    {SPSIM_RECOMPUTE_FULL, 0, SPSIM_RECOMPUTE_METHOD_UNIFORM, 5, 2, 0,
     "num_layers_per_pipeline_rank: 4"},
    {SPSIM_RECOMPUTE_NONE, 0, SPSIM_RECOMPUTE_METHOD_UNIFORM, 1, 1, 0,
     "apply to recompute full only"},
    {SPSIM_RECOMPUTE_NONE, 0, 0, 0, 1, 8, "CPU offloading can be done only for layers less than 8"},
    {SPSIM_RECOMPUTE_NONE, 0, 0, 0, 2, 2,
     "Currently there is no support for Pipeline parallelism with CPU offloading"},
    {SPSIM_RECOMPUTE_SELECTIVE, 0, 0, 0, 1, 2,
     "CPU offloading does not work when activation recomputation is enabled"},
};

START_TEST(rules_refuse_with_megatron_messages)
{
    struct spsim_model *m = model_of(&shapes[2]);
    struct spsim_parallel p = par_of(&shapes[2]);
    p.gbs = 4;
    p.mbs = 1;
    p.recompute = rules[_i].recompute;
    p.recompute_modules = rules[_i].modules;
    p.recompute_method = rules[_i].method;
    p.recompute_layers = rules[_i].layers;
    p.pp = rules[_i].pp;
    p.offload_layers = rules[_i].offload;
    struct spsim_error err = {0};
    ck_assert_int_eq(spsim_parallel_check(m, NULL, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert_msg(strstr(err.message, rules[_i].message), "'%s' lacks '%s'", err.message,
                  rules[_i].message);
    spsim_model_destroy(m);
}
END_TEST

/* A shipped profile's text with one edit: `cut` removes the host_link member, else `from` is
 * replaced by `to`. */
static int
load_edited(const char *name, bool cut, const char *from, const char *to,
            struct spsim_hardware **hw, struct spsim_error *err)
{
    char path[4096];
    ck_assert_int_eq(spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, name, path, sizeof(path), err),
                     SPSIM_OK);
    FILE *f = fopen(path, "rb");
    ck_assert(f != NULL);
    static char text[1 << 16], out[1 << 16];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    char *at = strstr(text, cut ? ",\n  \"host_link\"" : from);
    ck_assert(at != NULL);
    if (cut)
        snprintf(out, sizeof(out), "%.*s\n}\n", (int)(at - text), text);
    else
        snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return spsim_hardware_parse(out, strlen(out), name, hw, err);
}

START_TEST(host_link_in_profiles)
{
    /* Optional in the format (older calibrated profiles), but offload needs it. */
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_int_eq(load_edited("dgx-h100", true, NULL, NULL, &hw, &err), SPSIM_OK);
    struct spsim_model *m = model_of(&shapes[2]);
    struct spsim_parallel p = par_of(&shapes[2]);
    p.offload_layers = 2;
    ck_assert_int_eq(spsim_parallel_check(m, hw, &p, NULL, &err), SPSIM_ECONFIG);
    ck_assert(strstr(err.message, "has no host_link") != NULL);
    spsim_hardware_destroy(hw);
    /* A measured copy above the link's line rate is refused, naming the field. */
    ck_assert_int_eq(load_edited("dgx-h100", false, "\"h2d_GBps\": {\"value\": 51",
                                 "\"h2d_GBps\": {\"value\": 64", &hw, &err),
                     SPSIM_EFIELD);
    ck_assert(strstr(err.message, "field 'host_link.h2d_GBps'") != NULL);
    ck_assert_int_eq(load_edited("dgx-h100", false, "\"value\": \"pcie-gen5-x16\"",
                                 "\"value\": \"pcie-gen7\"", &hw, &err),
                     SPSIM_EFIELD);
    ck_assert(strstr(err.message, "host_link.link") != NULL);
    /* Every shipped profile has one. */
    static const char *const names[] = {"dgx-a100-40g", "dgx-a100-80g", "dgx-h100",
                                        "hgx-h200",     "dgx-b200",     "gb200-nvl72"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        hw = testutil_hardware(names[i]);
        struct spsim_result r;
        eval_ok(m, hw, &p, &r);
        ck_assert_msg(r.time.offload_d2h_s_per_layer > 0, "%s", names[i]);
        spsim_hardware_destroy(hw);
    }
    spsim_model_destroy(m);
}
END_TEST

START_TEST(module_names)
{
    uint32_t mask = 0;
    char buf[96];
    ck_assert_int_eq(spsim_recompute_modules_parse("mlp,core_attn", &mask), SPSIM_OK);
    ck_assert_uint_eq(mask, SPSIM_RMOD_MLP | SPSIM_RMOD_CORE_ATTN);
    ck_assert_str_eq(spsim_recompute_modules_format(mask, buf, sizeof(buf)), "core_attn+mlp");
    ck_assert_int_eq(spsim_recompute_modules_parse("layernorm+moe", &mask), SPSIM_OK);
    ck_assert_uint_eq(mask, SPSIM_RMOD_LAYERNORM | SPSIM_RMOD_MOE);
    ck_assert_int_eq(spsim_recompute_modules_parse("", &mask), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_recompute_modules_parse("mlp,", &mask), SPSIM_EINVAL);
    ck_assert_int_eq(spsim_recompute_modules_parse("attention", &mask), SPSIM_EINVAL);
    ck_assert_str_eq(spsim_recompute_modules_format(0, buf, sizeof(buf)), "core_attn");
    enum spsim_recompute_method meth;
    ck_assert_int_eq(spsim_recompute_method_parse("block", &meth), SPSIM_OK);
    ck_assert_int_eq(meth, SPSIM_RECOMPUTE_METHOD_BLOCK);
    ck_assert_str_eq(spsim_recompute_method_name(SPSIM_RECOMPUTE_METHOD_UNIFORM), "uniform");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("recompute-offload");
    TCase *tc = tcase_create("recompute");
    tcase_set_timeout(tc, 60);
    int nshapes = (int)(sizeof(shapes) / sizeof(shapes[0]));
    int nmethods = (int)(sizeof(methods) / sizeof(methods[0]));
    tcase_add_loop_test(tc, each_module_drops_its_tensors, 0, nshapes);
    tcase_add_loop_test(tc, each_module_replays_its_forward, 0, nshapes);
    tcase_add_loop_test(tc, full_methods_memory, 0, nmethods);
    tcase_add_loop_test(tc, full_methods_time, 0, nmethods);
    tcase_add_test(tc, plain_full_is_uniform_one);
    suite_add_tcase(s, tc);
    TCase *to = tcase_create("offload");
    tcase_set_timeout(to, 60);
    tcase_add_loop_test(to, offload_memory_and_copies, 0,
                        (int)(sizeof(offloads) / sizeof(offloads[0])));
    tcase_add_test(to, offload_cases_cover_each_regime);
    suite_add_tcase(s, to);
    TCase *tr = tcase_create("rules");
    tcase_add_loop_test(tr, rules_refuse_with_megatron_messages, 0,
                        (int)(sizeof(rules) / sizeof(rules[0])));
    tcase_add_test(tr, host_link_in_profiles);
    tcase_add_test(tr, module_names);
    suite_add_tcase(s, tr);
    return testutil_run(s);
}
