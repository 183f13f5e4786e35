/*
 * The names of the library's enums, one table each: profiles, sweep specs, JSON and CSV output,
 * explain and the command line all spell recompute modes, dtypes and collectives from here.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "profiles.h"

const char *const spsim_dtype_names[SPSIM_DTYPE_COUNT + 1] = {"bf16", "fp16", "fp8", "nvfp4",
                                                              "tf32", "fp32", NULL};
const char *const spsim_recompute_names[SPSIM_RECOMPUTE_COUNT + 1] = {"none", "selective", "full",
                                                                      NULL};
const char *const spsim_recompute_method_names[SPSIM_RECOMPUTE_METHOD_COUNT + 1] = {
    "default", "uniform", "block", NULL};
/* Megatron's recompute_modules (transformer_config.py), in enum spsim_recompute_module bit
 * order. */
const char *const spsim_recompute_module_names[SPSIM_RMOD_COUNT_ + 1] = {
    "core_attn", "layernorm", "mlp", "moe_act", "mla_up_proj", "moe", "shared_experts", NULL};
/* The GPU's link to host memory (hardware profile host_link.link). */
const char *const spsim_host_link_names[] = {"pcie-gen4-x16", "pcie-gen5-x16", "nvlink-c2c", NULL};
/* nccl-tests' collectives, in enum spsim_coll_op order (profile keys and --op values). */
const char *const spsim_coll_op_names[SPSIM_COLL_COUNT + 1] = {
    "all_reduce", "all_gather", "reduce_scatter", "send_recv", "all_to_all", NULL};

/* nvlink.ring_measured_on, in enum spsim_ring_basis order from SPSIM_RING_BASIS_ALL_REDUCE. */
const char *const spsim_ring_basis_names[] = {"all_reduce", "all_gather", "reduce_scatter", "link",
                                              NULL};

/* Megatron-Core's softmax_type spellings (transformer_config.py, --softmax-type), in enum
 * spsim_softmax order: the model profile's key, the launch line and the exporter. */
const char *const spsim_softmax_names[] = {"vanilla", "off-by-one", "learnable", NULL};

/* Megatron's --cp-comm-type values, in enum spsim_cp_comm order. */
const char *const spsim_cp_comm_names[SPSIM_CP_COMM_COUNT + 1] = {"p2p", "all_gather", "a2a",
                                                                  "a2a+p2p", NULL};
/* Megatron's --attention-backend values spsim models (enum spsim_attention_backend order). */
const char *const spsim_attention_backend_names[SPSIM_ATTN_BACKEND_COUNT + 1] = {"auto", "flash",
                                                                                 "fused", NULL};
/* Megatron-Core's --moe-token-dispatcher-type values, in enum spsim_moe_dispatcher order. */
const char *const spsim_moe_dispatcher_names[SPSIM_MOE_DISPATCHER_COUNT + 1] = {
    "allgather", "alltoall", "flex", NULL};
/* Megatron-Core's --moe-flex-dispatcher-backend values spsim models (enum spsim_moe_flex_backend
 * order). */
const char *const spsim_moe_flex_backend_names[SPSIM_FLEX_BACKEND_COUNT + 1] = {"deepep",
                                                                                "hybridep", NULL};
/* spsim's --moe-routing values (enum spsim_moe_routing order). */
const char *const spsim_moe_routing_names[SPSIM_MOE_ROUTING_COUNT + 1] = {"random", "balanced",
                                                                          NULL};

/* Megatron's --fp8-recipe values, in enum spsim_fp8_recipe order (tensorwise = current). */
const char *const spsim_fp8_recipe_names[SPSIM_FP8_RECIPE_COUNT + 1] = {"delayed", "current",
                                                                        "mxfp8", "blockwise", NULL};

/* The precision-aware optimizer's dtypes (Megatron arguments.py dtype_map; fp8 = torch.uint8). */
const char *const spsim_opt_dtype_names[SPSIM_OPT_DTYPE_COUNT + 1] = {"fp32", "fp16", "bf16", "fp8",
                                                                      NULL};

/* Megatron's --cuda-graph-impl values and its --cuda-graph-scope (--cuda-graph-modules) names
 * (arguments.py, transformer_config.py CudaGraphModule), in enum order. */
const char *const spsim_cuda_graph_impl_names[SPSIM_CUDA_GRAPH_IMPL_COUNT + 1] = {
    "none", "local", "transformer_engine", "full_iteration", NULL};
const char *const spsim_cuda_graph_scope_names[SPSIM_CGS_COUNT_ + 1] = {
    "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba", "full_iteration", NULL};

/* Store the index of `name` among the first `count` names in *out. */
static int
find_name(const char *const *names, int count, const char *name, int *out)
{
    for (int i = 0; name && out && i < count; i++)
        if (strcmp(names[i], name) == 0) {
            *out = i;
            return SPSIM_OK;
        }
    return SPSIM_EINVAL;
}

const char *
spsim_dtype_name(enum spsim_dtype dtype)
{
    return (unsigned)dtype < SPSIM_DTYPE_COUNT ? spsim_dtype_names[dtype] : "?";
}

const char *
spsim_recompute_name(enum spsim_recompute r)
{
    return (unsigned)r < SPSIM_RECOMPUTE_COUNT ? spsim_recompute_names[r] : "?";
}

const char *
spsim_coll_op_name(enum spsim_coll_op op)
{
    return (unsigned)op < SPSIM_COLL_COUNT ? spsim_coll_op_names[op] : "?";
}

int
spsim_dtype_parse(const char *name, enum spsim_dtype *out)
{
    int i = 0, rc = find_name(spsim_dtype_names, SPSIM_DTYPE_COUNT, name, out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_dtype)i;
    return rc;
}

int
spsim_recompute_parse(const char *name, enum spsim_recompute *out)
{
    int i = 0, rc = find_name(spsim_recompute_names, SPSIM_RECOMPUTE_COUNT, name, out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_recompute)i;
    return rc;
}

int
spsim_coll_op_parse(const char *name, enum spsim_coll_op *out)
{
    int i = 0, rc = find_name(spsim_coll_op_names, SPSIM_COLL_COUNT, name, out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_coll_op)i;
    return rc;
}

const char *
spsim_fp8_recipe_name(enum spsim_fp8_recipe r)
{
    return (unsigned)r < SPSIM_FP8_RECIPE_COUNT ? spsim_fp8_recipe_names[r] : "?";
}

int
spsim_fp8_recipe_parse(const char *name, enum spsim_fp8_recipe *out)
{
    if (name && strcmp(name, "tensorwise") == 0)
        name = "current";
    int i = 0,
        rc = find_name(spsim_fp8_recipe_names, SPSIM_FP8_RECIPE_COUNT, name, out ? &i : NULL);
    if (rc == SPSIM_OK && out)
        *out = (enum spsim_fp8_recipe)i;
    return rc;
}

static const char *const ce_impl_names[SPSIM_CE_IMPL_COUNT] = {"native", "te", "te-inplace"};

const char *
spsim_ce_impl_name(enum spsim_ce_impl impl)
{
    return (unsigned)impl < SPSIM_CE_IMPL_COUNT ? ce_impl_names[impl] : "?";
}

int
spsim_ce_impl_parse(const char *name, enum spsim_ce_impl *out)
{
    int i = 0, rc = find_name(ce_impl_names, SPSIM_CE_IMPL_COUNT, name, out ? &i : NULL);
    if (rc == SPSIM_OK && out)
        *out = (enum spsim_ce_impl)i;
    return rc;
}

const char *
spsim_opt_dtype_name(enum spsim_opt_dtype d)
{
    return (unsigned)d < SPSIM_OPT_DTYPE_COUNT ? spsim_opt_dtype_names[d] : "?";
}

int
spsim_opt_dtype_parse(const char *name, enum spsim_opt_dtype *out)
{
    int i = 0, rc = find_name(spsim_opt_dtype_names, SPSIM_OPT_DTYPE_COUNT, name, out ? &i : NULL);
    if (rc == SPSIM_OK && out)
        *out = (enum spsim_opt_dtype)i;
    return rc;
}

const char *
spsim_cp_comm_name(enum spsim_cp_comm c)
{
    return (unsigned)c < SPSIM_CP_COMM_COUNT ? spsim_cp_comm_names[c] : "?";
}

int
spsim_cp_comm_parse(const char *name, enum spsim_cp_comm *out)
{
    int i = 0, rc = find_name(spsim_cp_comm_names, SPSIM_CP_COMM_COUNT, name, out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_cp_comm)i;
    return rc;
}

const char *
spsim_attention_backend_name(enum spsim_attention_backend b)
{
    return (unsigned)b < SPSIM_ATTN_BACKEND_COUNT ? spsim_attention_backend_names[b] : "?";
}

int
spsim_attention_backend_parse(const char *name, enum spsim_attention_backend *out)
{
    int i = 0, rc = find_name(spsim_attention_backend_names, SPSIM_ATTN_BACKEND_COUNT, name,
                              out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_attention_backend)i;
    return rc;
}

const char *
spsim_moe_dispatcher_name(enum spsim_moe_dispatcher d)
{
    return (unsigned)d < SPSIM_MOE_DISPATCHER_COUNT ? spsim_moe_dispatcher_names[d] : "?";
}

int
spsim_moe_dispatcher_parse(const char *name, enum spsim_moe_dispatcher *out)
{
    int i = 0, rc = find_name(spsim_moe_dispatcher_names, SPSIM_MOE_DISPATCHER_COUNT, name,
                              out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_moe_dispatcher)i;
    return rc;
}

const char *
spsim_moe_routing_name(enum spsim_moe_routing r)
{
    return (unsigned)r < SPSIM_MOE_ROUTING_COUNT ? spsim_moe_routing_names[r] : "?";
}

int
spsim_moe_routing_parse(const char *name, enum spsim_moe_routing *out)
{
    int i = 0,
        rc = find_name(spsim_moe_routing_names, SPSIM_MOE_ROUTING_COUNT, name, out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_moe_routing)i;
    return rc;
}

const char *
spsim_moe_flex_backend_name(enum spsim_moe_flex_backend b)
{
    return (unsigned)b < SPSIM_FLEX_BACKEND_COUNT ? spsim_moe_flex_backend_names[b] : "?";
}

int
spsim_moe_flex_backend_parse(const char *name, enum spsim_moe_flex_backend *out)
{
    int i = 0, rc = find_name(spsim_moe_flex_backend_names, SPSIM_FLEX_BACKEND_COUNT, name,
                              out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_moe_flex_backend)i;
    return rc;
}

const char *
spsim_recompute_method_name(enum spsim_recompute_method m)
{
    return (unsigned)m < SPSIM_RECOMPUTE_METHOD_COUNT ? spsim_recompute_method_names[m] : "?";
}

int
spsim_recompute_method_parse(const char *name, enum spsim_recompute_method *out)
{
    int i = 0, rc = find_name(spsim_recompute_method_names, SPSIM_RECOMPUTE_METHOD_COUNT, name,
                              out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_recompute_method)i;
    return rc;
}

/* A list of names separated by ',' or '+' into the mask of their indices among `names`. */
static int
mask_parse(const char *const *names, int count, const char *text, uint32_t *mask)
{
    if (!text || !mask)
        return SPSIM_EINVAL;
    uint32_t m = 0;
    for (const char *p = text;;) {
        size_t len = strcspn(p, ",+");
        int i = 0;
        char name[32];
        if (len == 0 || len >= sizeof(name))
            return SPSIM_EINVAL;
        memcpy(name, p, len);
        name[len] = '\0';
        if (find_name(names, count, name, &i) != SPSIM_OK)
            return SPSIM_EINVAL;
        m |= 1u << i;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    *mask = m;
    return SPSIM_OK;
}

/* The mask's names joined by '+' in bit order. */
static const char *
mask_format(const char *const *names, int count, uint32_t mask, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return buf;
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < count && used < cap; i++)
        if (mask & (1u << i)) {
            int n = snprintf(buf + used, cap - used, "%s%s", used ? "+" : "", names[i]);
            used += n > 0 ? (size_t)n : 0;
        }
    return buf;
}

int
spsim_recompute_modules_parse(const char *text, uint32_t *mask)
{
    return mask_parse(spsim_recompute_module_names, SPSIM_RMOD_COUNT_, text, mask);
}

const char *
spsim_recompute_modules_format(uint32_t mask, char *buf, size_t cap)
{
    return mask_format(spsim_recompute_module_names, SPSIM_RMOD_COUNT_,
                       mask ? mask : SPSIM_RMOD_CORE_ATTN, buf, cap);
}

const char *
spsim_cuda_graph_impl_name(enum spsim_cuda_graph_impl i)
{
    return (unsigned)i < SPSIM_CUDA_GRAPH_IMPL_COUNT ? spsim_cuda_graph_impl_names[i] : "?";
}

int
spsim_cuda_graph_impl_parse(const char *name, enum spsim_cuda_graph_impl *out)
{
    int i = 0, rc = find_name(spsim_cuda_graph_impl_names, SPSIM_CUDA_GRAPH_IMPL_COUNT, name,
                              out ? &i : NULL);
    if (rc == SPSIM_OK)
        *out = (enum spsim_cuda_graph_impl)i;
    return rc;
}

int
spsim_cuda_graph_scope_parse(const char *text, uint32_t *mask)
{
    return mask_parse(spsim_cuda_graph_scope_names, SPSIM_CGS_COUNT_, text, mask);
}

const char *
spsim_cuda_graph_scope_format(uint32_t mask, char *buf, size_t cap)
{
    return mask_format(spsim_cuda_graph_scope_names, SPSIM_CGS_COUNT_, mask, buf, cap);
}

/* Megatron-Bridge's module names (peft/lora.py LoRA.target_modules default, in this order). */
static const char *const lora_target_names[] = {"linear_qkv", "linear_proj", "linear_fc1",
                                                "linear_fc2"};

int
spsim_lora_targets_parse(const char *text, uint32_t *mask)
{
    return mask_parse(lora_target_names, 4, text, mask);
}

const char *
spsim_lora_targets_format(uint32_t mask, char *buf, size_t cap)
{
    return mask_format(lora_target_names, 4, mask ? mask : SPSIM_LORA_ALL, buf, cap);
}

const char *
spsim_pp_schedule_name(enum spsim_pp_schedule s, uint32_t vpp)
{
    static const char *const names[SPSIM_PP_SCHEDULE_COUNT] = {NULL, "zb-h1", "zb-v", "dualpipe",
                                                               "dualpipev"};
    if (s == SPSIM_PP_SCHEDULE_MEGATRON)
        return vpp > 1 ? "interleaved" : "1f1b";
    return (unsigned)s < SPSIM_PP_SCHEDULE_COUNT ? names[s] : "?";
}

int
spsim_pp_schedule_parse(const char *name, enum spsim_pp_schedule *out)
{
    static const char *const names[] = {"1f1b",     "interleaved", "zb-h1", "zb-v",
                                        "dualpipe", "dualpipev",   NULL};
    int i = 0, rc = find_name(names, 6, name, &i);
    if (rc == SPSIM_OK && out)
        *out = i <= 1 ? SPSIM_PP_SCHEDULE_MEGATRON : (enum spsim_pp_schedule)(i - 1);
    return rc;
}
