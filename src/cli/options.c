/*
 * The command line's option tables and the one getopt loop every command runs: the
 * configuration options of query, explain and validate (one value each), the sweep axes of
 * sweep and optimize (lists), and each command's own options.
 */
#include "config.h"

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

/*
 * The one table of the configuration options: query, explain and validate take each as a single
 * value (switches with their --no- forms), sweep and optimize take every entry that names a
 * sweep axis as a list (--tp 1,2,4, --sp on,off). An axis option's name is the axis' name with
 * '-' for '_' (spsim_sweep_axis_name). In the order of CLI_CONFIG_HELP.
 */
static const struct cli_option_spec {
    const char *name;
    int has_arg; /* as a configuration option; -1: a sweep axis only */
    int config;  /* getopt value as a configuration option */
    int axis;    /* enum spsim_sweep_axis; -1: not an axis */
} option_table[] = {
    {"model", required_argument, OPT_MODEL, SPSIM_AXIS_MODEL},
    {"hw", required_argument, OPT_HW, SPSIM_AXIS_HW},
    {"tp", required_argument, OPT_TP, SPSIM_AXIS_TP},
    {"pp", required_argument, OPT_PP, SPSIM_AXIS_PP},
    {"dp", required_argument, OPT_DP, SPSIM_AXIS_DP},
    {"gpus", required_argument, OPT_GPUS, SPSIM_AXIS_GPUS},
    {"vpp", required_argument, OPT_VPP, SPSIM_AXIS_VPP},
    {"sp", no_argument, OPT_SP, SPSIM_AXIS_SP},
    {"no-sp", no_argument, OPT_NO_SP, -1},
    {"recompute", required_argument, OPT_RECOMPUTE, SPSIM_AXIS_RECOMPUTE},
    {"mbs", required_argument, OPT_MBS, SPSIM_AXIS_MBS},
    {"gbs", required_argument, OPT_GBS, SPSIM_AXIS_GBS},
    {"seq", required_argument, OPT_SEQ, SPSIM_AXIS_SEQ},
    {"flash-attn", no_argument, OPT_FLASH, SPSIM_AXIS_FLASH_ATTN},
    {"no-flash-attn", no_argument, OPT_NO_FLASH, -1},
    {"attention-backend", required_argument, OPT_ATTN_BACKEND, -1},
    {"distributed-optimizer", no_argument, OPT_DISTOPT, SPSIM_AXIS_DISTRIBUTED_OPTIMIZER},
    {"no-distributed-optimizer", no_argument, OPT_NO_DISTOPT, -1},
    {"overlap-grad-reduce", no_argument, OPT_OVERLAP_GRAD, SPSIM_AXIS_OVERLAP_GRAD_REDUCE},
    {"no-overlap-grad-reduce", no_argument, OPT_NO_OVERLAP_GRAD, -1},
    {"dtype", required_argument, OPT_DTYPE, SPSIM_AXIS_DTYPE},
    {"fp8-recipe", required_argument, OPT_FP8_RECIPE, SPSIM_AXIS_FP8_RECIPE},
    {"fp8-param-gather", no_argument, OPT_FP8_PARAM, -1},
    {"no-fp8-param-gather", no_argument, OPT_NO_FP8_PARAM, -1},
    {"fp4-param-gather", no_argument, OPT_FP8_PARAM, -1},
    {"first-last-layers-bf16", no_argument, OPT_BF16_ENDS, -1},
    {"no-first-last-layers-bf16", no_argument, OPT_NO_BF16_ENDS, -1},
    {"num-layers-at-start-in-bf16", required_argument, OPT_BF16_START, -1},
    {"num-layers-at-end-in-bf16", required_argument, OPT_BF16_END, -1},
    {"first-stage-layers", required_argument, OPT_FIRST_STAGE, -1},
    {"last-stage-layers", required_argument, OPT_LAST_STAGE, -1},
    {"account-for-embedding-in-pipeline-split", no_argument, OPT_ACCOUNT_EMB, -1},
    {"account-for-loss-in-pipeline-split", no_argument, OPT_ACCOUNT_LOSS, -1},
    {"pipeline-layout", required_argument, OPT_LAYOUT, -1},
    {"pipeline-model-parallel-layout", required_argument, OPT_LAYOUT, -1},
    {"pp-split", -1, 0, SPSIM_AXIS_PP_SPLIT},
    {"pp-schedule", required_argument, OPT_PP_SCHEDULE, -1},
    {"max-gbs", -1, 0, SPSIM_AXIS_MAX_GBS},
    {"recompute-modules", required_argument, OPT_RECOMPUTE_MODULES, SPSIM_AXIS_RECOMPUTE_MODULES},
    {"recompute-method", required_argument, OPT_RECOMPUTE_METHOD, SPSIM_AXIS_RECOMPUTE_METHOD},
    {"recompute-layers", required_argument, OPT_RECOMPUTE_LAYERS, SPSIM_AXIS_RECOMPUTE_LAYERS},
    {"offload-layers", required_argument, OPT_OFFLOAD_LAYERS, SPSIM_AXIS_OFFLOAD_LAYERS},
    {"cp", required_argument, OPT_CP, SPSIM_AXIS_CP},
    {"cp-comm-type", required_argument, OPT_CP_COMM, SPSIM_AXIS_CP_COMM_TYPE},
    {"hierarchical-cp-sizes", required_argument, OPT_HCP_SIZES, -1},
    {"zero", required_argument, OPT_ZERO, SPSIM_AXIS_ZERO},
    {"fsdp", required_argument, OPT_FSDP, -1},
    {"num-distributed-optimizer-instances", required_argument, OPT_DIST_OPT_INSTANCES,
     SPSIM_AXIS_DIST_OPT_INSTANCES},
    {"outer-dp-sharding-strategy", required_argument, OPT_OUTER_DP_SHARDING, -1},
    {"grad-reduce-in-fp32", no_argument, OPT_GRAD_FP32, SPSIM_AXIS_GRAD_REDUCE_IN_FP32},
    {"grad-reduce-in-bf16", no_argument, OPT_GRAD_BF16, -1},
    {"overlap-param-gather", no_argument, OPT_OVERLAP_PARAM, SPSIM_AXIS_OVERLAP_PARAM_GATHER},
    {"no-overlap-param-gather", no_argument, OPT_NO_OVERLAP_PARAM, -1},
    {"overlap-p2p-communication", no_argument, OPT_OVERLAP_P2P, SPSIM_AXIS_OVERLAP_P2P},
    {"microbatch-group-size-per-virtual-pipeline-stage", required_argument, OPT_MB_GROUP, -1},
    {"no-overlap-p2p-communication", no_argument, OPT_NO_OVERLAP_P2P, -1},
    {"ddp-bucket-size", required_argument, OPT_DDP_BUCKET, -1},
    {"tp-comm-overlap", no_argument, OPT_TP_COMM_OVERLAP, SPSIM_AXIS_TP_COMM_OVERLAP},
    {"no-tp-comm-overlap", no_argument, OPT_NO_TP_COMM_OVERLAP, -1},
    {"cuda-graph-impl", required_argument, OPT_CUDA_GRAPH_IMPL, -1},
    {"cuda-graph-scope", required_argument, OPT_CUDA_GRAPH_SCOPE, -1},
    {"cuda-graph-modules", required_argument, OPT_CUDA_GRAPH_SCOPE, -1},
    {"megatron-args", required_argument, OPT_MEGATRON_ARGS, -1},
    {"env", required_argument, OPT_ENV, -1},
    {"megatron-log", required_argument, OPT_MEGATRON_LOG, -1},
    {"ep", required_argument, OPT_EP, SPSIM_AXIS_EP},
    {"etp", required_argument, OPT_ETP, SPSIM_AXIS_ETP},
    {"moe-dispatcher", required_argument, OPT_MOE_DISPATCHER, SPSIM_AXIS_MOE_DISPATCHER},
    {"moe-flex-dispatcher-backend", required_argument, OPT_MOE_FLEX_BACKEND, -1},
    {"moe-flex-dispatcher-num-sms", required_argument, OPT_MOE_FLEX_SMS, -1},
    {"moe-routing", required_argument, OPT_MOE_ROUTING, -1},
    {"overlap-moe-expert-parallel-comm", no_argument, OPT_MOE_A2A_OVERLAP, SPSIM_AXIS_A2A_OVERLAP},
    {"no-overlap-moe-expert-parallel-comm", no_argument, OPT_NO_MOE_A2A_OVERLAP, -1},
    {"delay-wgrad-compute", no_argument, OPT_DELAY_WGRAD, SPSIM_AXIS_DELAY_WGRAD},
    {"no-delay-wgrad-compute", no_argument, OPT_NO_DELAY_WGRAD, -1},
    {"use-precision-aware-optimizer", no_argument, OPT_PAO, -1},
    {"main-grads-dtype", required_argument, OPT_MAIN_GRADS_DTYPE, -1},
    {"main-params-dtype", required_argument, OPT_MAIN_PARAMS_DTYPE, -1},
    {"exp-avg-dtype", required_argument, OPT_EXP_AVG_DTYPE, -1},
    {"exp-avg-sq-dtype", required_argument, OPT_EXP_AVG_SQ_DTYPE, -1},
    {"moe-expert-capacity-factor", required_argument, OPT_MOE_CAPACITY, -1},
    {"moe-pad-expert-input-to-capacity", no_argument, OPT_MOE_PAD, -1},
    {"moe-token-drop-policy", required_argument, OPT_MOE_DROP_POLICY, -1},
    {"mtp-num-layers", required_argument, OPT_MTP_LAYERS, -1},
    {"lora-rank", required_argument, OPT_LORA_RANK, -1},
    {"lora-target-modules", required_argument, OPT_LORA_TARGETS, -1},
    {"lora-alpha", required_argument, OPT_LORA_ALPHA, -1},
    {"lora-dropout", required_argument, OPT_LORA_DROPOUT, -1},
    {"packed-subseq-len", required_argument, OPT_PACKED_LEN, -1},
    {"optimizer", required_argument, OPT_OPTIMIZER, -1},
    {"muon-num-ns-steps", required_argument, OPT_MUON_NS_STEPS, -1},
    {"muon-tp-mode", required_argument, OPT_MUON_TP_MODE, -1},
    {"muon-nesterov", no_argument, OPT_MUON_NESTEROV, -1},
    {"muon-no-split-qkv", no_argument, OPT_MUON_NO_SPLIT_QKV, -1},
    {"optimizer-cpu-offload", no_argument, OPT_OPT_CPU_OFFLOAD, -1},
    {"optimizer-offload-fraction", required_argument, OPT_OPT_OFFLOAD_FRACTION, -1},
    {"overlap-cpu-optimizer-d2h-h2d", no_argument, OPT_OPT_OFFLOAD_OVERLAP, -1},
    {"log-params-norm", no_argument, OPT_LOG_PARAMS_NORM, -1},
    {"log-num-zeros-in-grad", no_argument, OPT_LOG_ZEROS, -1},
    {"log-interval", required_argument, OPT_LOG_INTERVAL, -1},
    {"tensorboard-dir", required_argument, OPT_TENSORBOARD, -1},
    {"log-timers-to-tensorboard", no_argument, OPT_LOG_TIMERS_TB, -1},
    {"log-memory-to-tensorboard", no_argument, OPT_LOG_MEMORY_TB, -1},
    {"no-gradient-accumulation-fusion", no_argument, OPT_NO_WGRAD_FUSION, -1},
    {"defer-embedding-wgrad-compute", no_argument, OPT_DEFER_EMB_WGRAD, -1},
    {"wgrad-deferral-limit", required_argument, OPT_WGRAD_DEFERRAL_LIMIT, -1},
    {"cross-entropy-loss-fusion", no_argument, OPT_CE_FUSION, -1},
    {"cross-entropy-fusion-impl", required_argument, OPT_CE_IMPL, -1},
};

/* getopt values of the axis options: CLI_AXIS_OPT + axis. */
#define CLI_AXIS_OPT 3000

/* The numeric configuration options: where each goes and its range. */
static const struct {
    int opt;
    const char *name;
    uint64_t max;
    size_t offset;
    bool wide; /* uint64_t, else uint32_t */
} numeric_options[] = {
    {OPT_TP, "--tp", 65536, offsetof(struct spsim_parallel, tp), false},
    {OPT_PP, "--pp", 65536, offsetof(struct spsim_parallel, pp), false},
    {OPT_DP, "--dp", 65536, offsetof(struct spsim_parallel, dp), false},
    {OPT_VPP, "--vpp", 65536, offsetof(struct spsim_parallel, vpp), false},
    {OPT_MBS, "--mbs", 65536, offsetof(struct spsim_parallel, mbs), false},
    {OPT_GBS, "--gbs", 1ull << 32, offsetof(struct spsim_parallel, gbs), true},
    {OPT_SEQ, "--seq", 1u << 24, offsetof(struct spsim_parallel, seq), false},
    {OPT_CP, "--cp", 65536, offsetof(struct spsim_parallel, cp), false},
    {OPT_EP, "--ep", 65536, offsetof(struct spsim_parallel, ep), false},
    {OPT_ETP, "--etp", 65536, offsetof(struct spsim_parallel, etp), false},
    {OPT_MOE_FLEX_SMS, "--moe-flex-dispatcher-num-sms", 65536,
     offsetof(struct spsim_parallel, moe_flex_sms), false},
    {OPT_FIRST_STAGE, "--first-stage-layers", 65536,
     offsetof(struct spsim_parallel, first_stage_layers), false},
    {OPT_LAST_STAGE, "--last-stage-layers", 65536,
     offsetof(struct spsim_parallel, last_stage_layers), false},
    {OPT_MB_GROUP, "--microbatch-group-size-per-virtual-pipeline-stage", 1u << 24,
     offsetof(struct spsim_parallel, microbatch_group), false},
    {OPT_DDP_BUCKET, "--ddp-bucket-size", 1ull << 40,
     offsetof(struct spsim_parallel, ddp_bucket_size), true},
    {OPT_LORA_RANK, "--lora-rank", 65536, offsetof(struct spsim_parallel, lora_rank), false},
    {OPT_PACKED_LEN, "--packed-subseq-len", 1u << 24,
     offsetof(struct spsim_parallel, packed_subseq_len), false},
    {OPT_MUON_NS_STEPS, "--muon-num-ns-steps", 100, offsetof(struct spsim_parallel, muon_ns_steps),
     false},
    {OPT_DIST_OPT_INSTANCES, "--num-distributed-optimizer-instances", 65536,
     offsetof(struct spsim_parallel, dist_opt_instances), false},
};

void
cli_config_defaults(struct cli_config *cfg)
{
    *cfg = (struct cli_config){
        .model = "gpt3-175b", .mtp_layers = -1, .capacity_factor = -1, .pad_to_capacity = -1};
    cfg->hardware = "dgx-a100-80g";
    cfg->imported = NULL;
    spsim_parallel_defaults(&cfg->par);
    /* Korthikanti et al. 2022, Table 3 and §6: GPT-3 175B, t = 8, p = 8, three interleaving
     * stages, sequence parallelism with selective recomputation, micro-batch 1, batch 64. */
    cfg->par.tp = 8;
    cfg->par.pp = 8;
    cfg->par.dp = 1;
    cfg->par.vpp = 3;
    cfg->par.sp = true;
    cfg->par.recompute = SPSIM_RECOMPUTE_SELECTIVE;
    cfg->par.mbs = 1;
    cfg->par.gbs = 64;
}

/* An on/off option: 1 if consumed, 0 if not a switch. */
static int
config_switch(struct spsim_parallel *p, int opt)
{
    switch (opt) {
    case OPT_SP:
    case OPT_NO_SP:
        p->sp = opt == OPT_SP;
        return 1;
    case OPT_FLASH:
    case OPT_NO_FLASH:
        p->flash_attn = opt == OPT_FLASH;
        return 1;
    case OPT_DISTOPT:
    case OPT_NO_DISTOPT:
        p->distributed_optimizer = opt == OPT_DISTOPT;
        return 1;
    case OPT_OVERLAP_GRAD:
    case OPT_NO_OVERLAP_GRAD:
        p->overlap_grad_reduce = opt == OPT_OVERLAP_GRAD;
        return 1;
    case OPT_GRAD_FP32:
    case OPT_GRAD_BF16:
        p->grad_reduce_in_fp32 = opt == OPT_GRAD_FP32;
        return 1;
    case OPT_OVERLAP_PARAM:
    case OPT_NO_OVERLAP_PARAM:
        p->overlap_param_gather = opt == OPT_OVERLAP_PARAM;
        return 1;
    case OPT_FP8_PARAM:
    case OPT_NO_FP8_PARAM:
        p->fp8_param_gather = opt == OPT_FP8_PARAM;
        return 1;
    case OPT_BF16_ENDS:
    case OPT_NO_BF16_ENDS:
        p->first_last_layers_bf16 = opt == OPT_BF16_ENDS;
        return 1;
    case OPT_OVERLAP_P2P:
    case OPT_NO_OVERLAP_P2P:
        p->no_overlap_p2p = opt == OPT_NO_OVERLAP_P2P;
        return 1;
    case OPT_TP_COMM_OVERLAP:
    case OPT_NO_TP_COMM_OVERLAP:
        p->tp_comm_overlap = opt == OPT_TP_COMM_OVERLAP;
        return 1;
    case OPT_MOE_A2A_OVERLAP:
    case OPT_NO_MOE_A2A_OVERLAP:
        p->moe_a2a_overlap = opt == OPT_MOE_A2A_OVERLAP;
        return 1;
    case OPT_DELAY_WGRAD:
    case OPT_NO_DELAY_WGRAD:
        p->delay_wgrad_compute = opt == OPT_DELAY_WGRAD;
        return 1;
    case OPT_ACCOUNT_EMB:
        p->account_embedding = true;
        return 1;
    case OPT_ACCOUNT_LOSS:
        p->account_loss = true;
        return 1;
    default:
        return 0;
    }
}

/* A numeric option: EXIT_OK or an exit code; *taken tells whether opt was one. */
static int
config_number(struct spsim_parallel *p, int opt, const char *arg, bool *taken)
{
    for (size_t i = 0; i < CLI_ARRAY_LENGTH(numeric_options); i++) {
        if (numeric_options[i].opt != opt)
            continue;
        *taken = true;
        char *field = (char *)p + numeric_options[i].offset;
        if (numeric_options[i].wide)
            return cli_parse_u64(numeric_options[i].name, arg, 1, numeric_options[i].max,
                                 (uint64_t *)(void *)field);
        return cli_parse_u32(numeric_options[i].name, arg, 1, (uint32_t)numeric_options[i].max,
                             (uint32_t *)(void *)field);
    }
    *taken = false;
    return EXIT_OK;
}

/* --hierarchical-cp-sizes A,B: two sizes, each at least 1. */
static int
parse_hcp_sizes(const char *arg, uint32_t sizes[2])
{
    char first[32];
    const char *comma = strchr(arg, ',');
    size_t n = comma ? (size_t)(comma - arg) : 0;
    if (!comma || n == 0 || n >= sizeof(first) || strchr(comma + 1, ','))
        return cli_error(EXIT_USAGE, "--hierarchical-cp-sizes: %s is not two sizes A,B",
                         CLI_Q(arg));
    memcpy(first, arg, n);
    first[n] = '\0';
    int rc = cli_parse_u32("--hierarchical-cp-sizes", first, 1, 65536, &sizes[0]);
    if (rc == EXIT_OK)
        rc = cli_parse_u32("--hierarchical-cp-sizes", comma + 1, 1, 65536, &sizes[1]);
    return rc;
}

/* Megatron-FSDP's --data-parallel-sharding-strategy values and their --zero levels. */
static int
parse_fsdp(const char *arg, uint32_t *zero)
{
    static const char *const names[] = {"optim", "optim_grads", "optim_grads_params"};
    for (uint32_t i = 0; i < 3; i++)
        if (strcmp(arg, names[i]) == 0) {
            *zero = i + 1;
            return EXIT_OK;
        }
    return cli_error(EXIT_USAGE, "--fsdp: %s is not one of optim, optim_grads, optim_grads_params",
                     CLI_Q(arg));
}

/* The context-parallel and sharding options that take a value: 1 if consumed, 0 if not one,
 * −exit code on a bad value. */
static int
config_sharding(struct spsim_parallel *p, int opt, const char *arg, uint32_t *level)
{
    int rc;
    switch (opt) {
    case OPT_ATTN_BACKEND:
        if (spsim_attention_backend_parse(arg, &p->attention_backend) == SPSIM_OK)
            return 1;
        rc = cli_error(EXIT_USAGE, "--attention-backend: '%s' is not one of auto, flash, fused",
                       arg);
        break;
    case OPT_CP_COMM:
        if (spsim_cp_comm_parse(arg, &p->cp_comm_type) == SPSIM_OK)
            return 1;
        rc = cli_error(EXIT_USAGE,
                       "--cp-comm-type: %s is not one of p2p, all_gather, a2a, "
                       "a2a+p2p",
                       CLI_Q(arg));
        break;
    case OPT_HCP_SIZES:
        rc = parse_hcp_sizes(arg, p->hcp_sizes);
        break;
    case OPT_ZERO:
        rc = cli_parse_u32("--zero", arg, 0, 3, &p->zero);
        *level = p->zero;
        break;
    case OPT_FSDP:
        rc = parse_fsdp(arg, &p->zero);
        *level = p->zero;
        break;
    case OPT_OUTER_DP_SHARDING: /* Megatron's choices (arguments.py --outer-dp-sharding-strategy) */
        if (strcmp(arg, "no_shard") != 0 && strcmp(arg, "optim") != 0)
            return -cli_error(EXIT_USAGE,
                              "--outer-dp-sharding-strategy: %s is not one of no_shard, optim",
                              CLI_Q(arg));
        p->outer_dp_shard = strcmp(arg, "optim") == 0;
        return 1;
    case OPT_MOE_DISPATCHER:
        if (spsim_moe_dispatcher_parse(arg, &p->moe_dispatcher) == SPSIM_OK)
            return 1;
        rc = cli_error(EXIT_USAGE, "--moe-dispatcher: %s is not one of allgather, alltoall, flex",
                       CLI_Q(arg));
        break;
    case OPT_MOE_FLEX_BACKEND:
        if (spsim_moe_flex_backend_parse(arg, &p->moe_flex_backend) == SPSIM_OK)
            return 1;
        rc =
            cli_error(EXIT_USAGE,
                      strcmp(arg, "ncclep") == 0
                          ? "--moe-flex-dispatcher-backend: 'ncclep' (TE NCCL EP) is not modelled; "
                            "use deepep or hybridep"
                          : "--moe-flex-dispatcher-backend: %s is not one of deepep, hybridep",
                      CLI_Q(arg));
        break;
    case OPT_MOE_ROUTING:
        if (spsim_moe_routing_parse(arg, &p->moe_routing) == SPSIM_OK)
            return 1;
        rc = cli_error(EXIT_USAGE, "--moe-routing: %s is not one of random, balanced", CLI_Q(arg));
        break;
    default:
        return 0;
    }
    return rc == EXIT_OK ? 1 : -rc;
}

/* --cuda-graph-impl and --cuda-graph-scope (Megatron's, its newer name --cuda-graph-modules):
 * 1 if consumed, 0 if not one, -exit code on a bad value. */
static int
config_cuda_graphs(struct spsim_parallel *p, int opt, const char *arg)
{
    if (opt == OPT_CUDA_GRAPH_IMPL) {
        if (spsim_cuda_graph_impl_parse(arg, &p->cuda_graph_impl) == SPSIM_OK)
            return 1;
        return -cli_error(EXIT_USAGE,
                          "--cuda-graph-impl: %s is not one of none, local, transformer_engine, "
                          "full_iteration",
                          CLI_Q(arg));
    }
    if (opt != OPT_CUDA_GRAPH_SCOPE)
        return 0;
    if (spsim_cuda_graph_scope_parse(arg, &p->cuda_graph_scope) == SPSIM_OK)
        return 1;
    return -cli_error(EXIT_USAGE,
                      "--cuda-graph-scope: %s is not a list of attn, mlp, moe, moe_router, "
                      "moe_preprocess, mamba, full_iteration",
                      CLI_Q(arg));
}

/* --optimizer (Megatron's adam, muon, and dist_muon, which arguments.py turns into muon with
 * the distributed optimizer), Muon's switches and the optimizer's CPU offload: 1, a negated exit
 * code, or 0 if opt is none of them. */
static int
config_muon(struct spsim_parallel *p, int opt, const char *arg)
{
    switch (opt) {
    case OPT_OPTIMIZER:
        if (strcmp(arg, "adam") != 0 && strcmp(arg, "muon") != 0 && strcmp(arg, "dist_muon") != 0)
            return -cli_error(EXIT_USAGE, "--optimizer: '%s' is not one of adam muon dist_muon",
                              arg);
        p->optimizer = strcmp(arg, "adam") == 0 ? SPSIM_OPTIMIZER_ADAM : SPSIM_OPTIMIZER_MUON;
        if (strcmp(arg, "dist_muon") == 0)
            p->distributed_optimizer = true;
        return 1;
    case OPT_MUON_TP_MODE:
        if (strcmp(arg, "duplicated") != 0 && strcmp(arg, "blockwise") != 0)
            return -cli_error(EXIT_USAGE,
                              "--muon-tp-mode: '%s' is not one of duplicated blockwise (Megatron's "
                              "distributed mode is not modelled)",
                              arg);
        p->muon_tp_mode =
            strcmp(arg, "blockwise") == 0 ? SPSIM_MUON_TP_BLOCKWISE : SPSIM_MUON_TP_DUPLICATED;
        return 1;
    case OPT_MUON_NESTEROV:
        p->muon_nesterov = true;
        return 1;
    case OPT_MUON_NO_SPLIT_QKV:
        p->muon_no_split_qkv = true;
        return 1;
    case OPT_OPT_CPU_OFFLOAD:
        p->optimizer_cpu_offload = true;
        return 1;
    case OPT_OPT_OFFLOAD_OVERLAP:
        p->overlap_cpu_optimizer_d2h_h2d = true;
        return 1;
    case OPT_LOG_PARAMS_NORM:
        p->log_params_norm = true;
        return 1;
    case OPT_LOG_ZEROS:
        p->log_num_zeros_in_grad = true;
        return 1;
    case OPT_TENSORBOARD: /* only its presence counts (engine/log_host.c) */
        p->tensorboard = true;
        return 1;
    case OPT_LOG_TIMERS_TB:
        p->log_timers_to_tensorboard = true;
        return 1;
    case OPT_LOG_MEMORY_TB:
        p->log_memory_to_tensorboard = true;
        return 1;
    case OPT_LOG_INTERVAL: {
        int rc = cli_parse_u32("--log-interval", arg, 1, UINT32_MAX, &p->log_interval);
        return rc == EXIT_OK ? 1 : -rc;
    }
    case OPT_NO_WGRAD_FUSION:
        p->no_gradient_accumulation_fusion = true;
        return 1;
    case OPT_DEFER_EMB_WGRAD:
        p->defer_embedding_wgrad_compute = true;
        return 1;
    case OPT_WGRAD_DEFERRAL_LIMIT: {
        int rc =
            cli_parse_u32("--wgrad-deferral-limit", arg, 0, UINT32_MAX, &p->wgrad_deferral_limit);
        return rc == EXIT_OK ? 1 : -rc;
    }
    case OPT_OPT_OFFLOAD_FRACTION: {
        int rc = cli_parse_double("--optimizer-offload-fraction", arg, 0, 1,
                                  &p->optimizer_offload_fraction);
        return rc == EXIT_OK ? 1 : -rc;
    }
    default:
        return 0;
    }
}

/* The loss's fusion (--cross-entropy-fusion-impl implies --cross-entropy-loss-fusion: alone it
 * would change nothing): 1 if consumed, 0 if not it, -exit code on a bad value. */
static int
config_loss(struct spsim_parallel *p, int opt, const char *arg)
{
    if (opt == OPT_CE_IMPL && spsim_ce_impl_parse(arg, &p->cross_entropy_fusion_impl) != SPSIM_OK)
        return -cli_error(EXIT_USAGE,
                          "--cross-entropy-fusion-impl: %s is not one of native, te, te-inplace",
                          CLI_Q(arg));
    if (opt != OPT_CE_IMPL && opt != OPT_CE_FUSION)
        return 0;
    p->cross_entropy_loss_fusion = true;
    return 1;
}

/* --pp-schedule (1f1b and interleaved checked against vpp in cli_config_finish): 1 if consumed,
 * 0 if not it, -exit code on a bad value. */
static int
config_schedule(struct cli_config *cfg, int opt, const char *arg)
{
    if (opt != OPT_PP_SCHEDULE)
        return 0;
    if (spsim_pp_schedule_parse(arg, &cfg->par.pp_schedule) != SPSIM_OK)
        return -cli_error(EXIT_USAGE,
                          "--pp-schedule: %s is not one of 1f1b, interleaved, zb-h1, zb-v, "
                          "dualpipe, dualpipev",
                          CLI_Q(arg));
    cfg->pp_schedule = arg;
    return 1;
}

/* The precision-aware optimizer's dtypes (Megatron's choices per flag, arguments.py): 1, a
 * negated exit code, or 0 if opt is none of them. */
static int
config_optimizer(struct spsim_parallel *p, int opt, const char *arg)
{
    static const struct {
        int opt;
        const char *name, *choices;
        size_t offset;
    } flags[] = {
        {OPT_MAIN_GRADS_DTYPE, "--main-grads-dtype", "fp32 bf16",
         offsetof(struct spsim_parallel, main_grads_dtype)},
        {OPT_MAIN_PARAMS_DTYPE, "--main-params-dtype", "fp32 fp16",
         offsetof(struct spsim_parallel, main_params_dtype)},
        {OPT_EXP_AVG_DTYPE, "--exp-avg-dtype", "fp32 fp16 bf16 fp8",
         offsetof(struct spsim_parallel, exp_avg_dtype)},
        {OPT_EXP_AVG_SQ_DTYPE, "--exp-avg-sq-dtype", "fp32 fp16 bf16 fp8",
         offsetof(struct spsim_parallel, exp_avg_sq_dtype)},
    };
    if (opt == OPT_PAO) {
        p->precision_aware_optimizer = true;
        return 1;
    }
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        if (flags[i].opt != opt)
            continue;
        enum spsim_opt_dtype d;
        /* The name must be one of this flag's words (space-separated in choices). */
        const char *at = strstr(flags[i].choices, arg);
        size_t n = strlen(arg);
        bool word = n > 0 && at && (at == flags[i].choices || at[-1] == ' ') &&
                    (at[n] == ' ' || at[n] == '\0');
        if (!word || spsim_opt_dtype_parse(arg, &d) != SPSIM_OK)
            return -cli_error(EXIT_USAGE, "%s: '%s' is not one of %s", flags[i].name, arg,
                              flags[i].choices);
        memcpy((char *)p + flags[i].offset, &d, sizeof(d));
        return 1;
    }
    return 0;
}

/* The recompute modules, method and layer count, and the offload: EXIT_OK, an exit code, or -1
 * if opt is none of them. */
static int
config_recompute_offload(struct spsim_parallel *p, int opt, const char *arg)
{
    switch (opt) {
    case OPT_RECOMPUTE_MODULES:
        return cli_parse_recompute_modules("--recompute-modules", arg, &p->recompute_modules);
    case OPT_RECOMPUTE_METHOD:
        return cli_parse_recompute_method("--recompute-method", arg, &p->recompute_method);
    case OPT_RECOMPUTE_LAYERS:
        return cli_parse_u32("--recompute-layers", arg, 0, 65536, &p->recompute_layers);
    case OPT_OFFLOAD_LAYERS:
        return cli_parse_u32("--offload-layers", arg, 0, 65536, &p->offload_layers);
    default:
        return -1;
    }
}

_Static_assert(OPT_CONFIG_END - OPT_MODEL <= (int)sizeof(((struct cli_config *)0)->given),
               "cli_config.given holds every configuration option");

/* Megatron's model flags (applied to the loaded model by cli_config_model), the fine-tuning
 * options and the FP8 recipe, options with a text or fractional value: 1 if consumed, 0 if not
 * ours, < 0 an exit code. */
static int
config_model_finetune(struct cli_config *cfg, int opt, const char *arg)
{
    struct spsim_parallel *p = &cfg->par;
    uint32_t n = 0;
    int rc = EXIT_OK;
    switch (opt) {
    case OPT_MTP_LAYERS: /* 0 allowed: a profile's MTP layers left out */
        rc = cli_parse_u32("--mtp-num-layers", arg, 0, 65536, &n);
        cfg->mtp_layers = (int)n;
        break;
    case OPT_MOE_CAPACITY: /* 0 (or Megatron's negative None) is dropless */
        rc = cli_parse_double("--moe-expert-capacity-factor", arg, -1e9, 1000,
                              &cfg->capacity_factor);
        cfg->capacity_factor = cfg->capacity_factor < 0 ? 0 : cfg->capacity_factor;
        break;
    case OPT_MOE_PAD:
        cfg->pad_to_capacity = 1;
        break;
    case OPT_MOE_DROP_POLICY: /* which tokens, not how many: no cost (moe_utils.py) */
        if (strcmp(arg, "probs") != 0 && strcmp(arg, "position") != 0)
            rc = cli_error(EXIT_USAGE, "--moe-token-drop-policy: %s is not probs or position",
                           CLI_Q(arg));
        break;
    case OPT_LORA_TARGETS:
        if (spsim_lora_targets_parse(arg, &p->lora_targets) != SPSIM_OK)
            rc = cli_error(EXIT_USAGE,
                           "--lora-target-modules: %s is not a list of linear_qkv, linear_proj, "
                           "linear_fc1, linear_fc2",
                           CLI_Q(arg));
        break;
    case OPT_FP8_RECIPE:
        if (spsim_fp8_recipe_parse(arg, &p->fp8_recipe) != SPSIM_OK)
            rc = cli_error(EXIT_USAGE,
                           "--fp8-recipe: %s is not one of delayed, current, tensorwise, mxfp8, "
                           "blockwise",
                           CLI_Q(arg));
        break;
    case OPT_LORA_ALPHA:
        rc = cli_parse_double("--lora-alpha", arg, 0, 1e9, &p->lora_alpha);
        break;
    case OPT_LORA_DROPOUT:
        rc = cli_parse_double("--lora-dropout", arg, 0, 0.999999, &p->lora_dropout);
        break;
    default:
        return 0;
    }
    return rc == EXIT_OK ? 1 : -rc;
}

int
cli_config_option(struct cli_config *cfg, int opt, const char *arg)
{
    struct spsim_parallel *p = &cfg->par;
    bool taken = false;
    if (opt == OPT_MEGATRON_ARGS || opt == OPT_MEGATRON_LOG) /* the file replaces what the
                                                                options before it gave */
        memset(cfg->given, 0, sizeof(cfg->given));
    if (opt >= OPT_MODEL && opt < OPT_CONFIG_END)
        cfg->given[opt - OPT_MODEL] = true;
    if (opt == OPT_GPUS) {
        int rc = cli_parse_u32("--gpus", arg, 1, 1u << 24, &cfg->gpus);
        return rc == EXIT_OK ? 1 : -rc;
    }
    int rc = config_number(p, opt, arg, &taken);
    cfg->pp_set |= opt == OPT_PP;
    cfg->vpp_set |= opt == OPT_VPP;
    if (taken)
        return rc == EXIT_OK ? 1 : -rc;
    if (config_switch(p, opt))
        return 1;
    if ((rc = config_model_finetune(cfg, opt, arg)) != 0)
        return rc;
    switch (opt) {
    case OPT_MODEL:
        cfg->model = arg;
        cfg->model_given = true;
        cfg->nmegatron = 0; /* later recipes compose on this model */
        spsim_model_destroy(cfg->imported);
        cfg->imported = NULL;
        return 1;
    case OPT_ENV: {
        size_t n = strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        if (n == 0 || arg[n] != '=' || (arg[0] >= '0' && arg[0] <= '9'))
            return -cli_error(EXIT_USAGE, "--env: '%s' is not NAME=VALUE", arg);
        if (cfg->nenv == CLI_ARRAY_LENGTH(cfg->env))
            return -cli_error(EXIT_USAGE, "--env: more than %zu", CLI_ARRAY_LENGTH(cfg->env));
        cfg->env[cfg->nenv++] = arg;
        return 1;
    }
    case OPT_LAYOUT:
        p->pipeline_layout = arg;
        return 1;
    case OPT_MEGATRON_ARGS:
    case OPT_MEGATRON_LOG:
        rc = opt == OPT_MEGATRON_LOG ? cli_megatron_log_apply(cfg, arg)
                                     : cli_megatron_apply(cfg, arg);
        /* The launch line sets its pipeline (Megatron's defaults where it is silent). */
        cfg->pp_set = cfg->vpp_set = true;
        return rc == EXIT_OK ? 1 : -rc;
    case OPT_HW:
        cfg->hardware = arg;
        return 1;
    case OPT_RECOMPUTE:
        rc = cli_parse_recompute("--recompute", arg, &p->recompute);
        return rc == EXIT_OK ? 1 : -rc;
    case OPT_DTYPE:
        rc = cli_parse_dtype("--dtype", arg, &p->dtype);
        return rc == EXIT_OK ? 1 : -rc;
    case OPT_BF16_START: /* 0 allowed, as Megatron's check (0 .. layers per stage) */
    case OPT_BF16_END:
        rc = cli_parse_u32(
            opt == OPT_BF16_START ? "--num-layers-at-start-in-bf16" : "--num-layers-at-end-in-bf16",
            arg, 0, 65536, opt == OPT_BF16_START ? &p->bf16_layers_start : &p->bf16_layers_end);
        return rc == EXIT_OK ? 1 : -rc;
    default:
        if ((rc = config_schedule(cfg, opt, arg)) != 0)
            return rc;
        rc = config_recompute_offload(p, opt, arg);
        if (rc >= 0)
            return rc == EXIT_OK ? 1 : -rc;
        rc = config_cuda_graphs(p, opt, arg);
        if (rc != 0)
            return rc;
        if ((rc = config_optimizer(p, opt, arg)) != 0 || (rc = config_muon(p, opt, arg)) != 0 ||
            (rc = config_loss(p, opt, arg)) != 0)
            return rc;
        return config_sharding(p, opt, arg, opt == OPT_FSDP ? &cfg->fsdp_level : &cfg->zero_level);
    }
}

/* Switches given with their --no- form, and options that say the same thing two ways. */
static const struct {
    int a, b;
} contradicting[] = {
    {OPT_SP, OPT_NO_SP},
    {OPT_FLASH, OPT_NO_FLASH},
    {OPT_DISTOPT, OPT_NO_DISTOPT},
    {OPT_OVERLAP_GRAD, OPT_NO_OVERLAP_GRAD},
    {OPT_FP8_PARAM, OPT_NO_FP8_PARAM},
    {OPT_BF16_ENDS, OPT_NO_BF16_ENDS},
    {OPT_GRAD_FP32, OPT_GRAD_BF16},
    {OPT_OVERLAP_PARAM, OPT_NO_OVERLAP_PARAM},
    {OPT_OVERLAP_P2P, OPT_NO_OVERLAP_P2P},
    {OPT_TP_COMM_OVERLAP, OPT_NO_TP_COMM_OVERLAP},
    {OPT_MOE_A2A_OVERLAP, OPT_NO_MOE_A2A_OVERLAP},
    {OPT_DELAY_WGRAD, OPT_NO_DELAY_WGRAD},
};

/* "--name" of a configuration option (its first spelling in the table). */
static const char *
option_name(int opt)
{
    for (size_t i = 0; i < CLI_ARRAY_LENGTH(option_table); i++)
        if (option_table[i].config == opt && option_table[i].has_arg >= 0)
            return option_table[i].name;
    return "?";
}

static bool
given(const struct cli_config *cfg, int opt)
{
    return cfg->given[opt - OPT_MODEL];
}

/* Two options that contradict each other: one line naming both (EXIT_USAGE), else EXIT_OK. */
static int
contradictions(const struct cli_config *cfg)
{
    for (size_t i = 0; i < CLI_ARRAY_LENGTH(contradicting); i++)
        if (given(cfg, contradicting[i].a) && given(cfg, contradicting[i].b))
            return cli_error(EXIT_USAGE, "--%s contradicts --%s: give one of them",
                             option_name(contradicting[i].a), option_name(contradicting[i].b));
    if (given(cfg, OPT_ZERO) && given(cfg, OPT_FSDP) && cfg->zero_level != cfg->fsdp_level)
        return cli_error(EXIT_USAGE,
                         "--zero %u contradicts --fsdp (ZeRO-%u): they choose the same sharding",
                         cfg->zero_level, cfg->fsdp_level);
    /* The distributed optimizer is ZeRO-1 (spsim_parallel.zero; Megatron's
     * --use-distributed-optimizer shards the optimizer state over dp). */
    uint32_t level = given(cfg, OPT_ZERO) ? cfg->zero_level : cfg->fsdp_level;
    bool sharding = given(cfg, OPT_ZERO) || given(cfg, OPT_FSDP);
    if (given(cfg, OPT_DISTOPT) && sharding && level == 0)
        return cli_error(EXIT_USAGE,
                         "--distributed-optimizer contradicts --zero 0: the distributed "
                         "optimizer is ZeRO-1 (give --zero 1, or drop one)");
    return EXIT_OK;
}

/* --gpus N: dp = N / (tp·cp·pp), which --dp and a launch line's world size must not contradict. */
static int
gpus_to_dp(struct cli_config *cfg)
{
    struct spsim_parallel *p = &cfg->par;
    if (!cfg->gpus)
        return EXIT_OK;
    uint64_t model = (uint64_t)p->tp * p->cp * p->pp;
    /* A new user's `--model M --gpus 8` meets the paper's tp 8 and pp 8 (query's defaults) */
    bool defaults = !cfg->file_world && !given(cfg, OPT_TP) && !given(cfg, OPT_PP);
    if (cfg->gpus % model)
        return cli_error(EXIT_USAGE, "--gpus %u is not a multiple of tp·cp·pp = %u·%u·%u = %llu%s",
                         cfg->gpus, p->tp, p->cp, p->pp, (unsigned long long)model,
                         defaults ? " (tp and pp are the defaults, the paper's GPT-3 175B "
                                    "setting: give --tp and --pp, or try 'spsim optimize')"
                                  : "");
    uint32_t dp = (uint32_t)(cfg->gpus / model);
    if (given(cfg, OPT_DP) && p->dp != dp)
        return cli_error(EXIT_USAGE,
                         "--dp %u contradicts --gpus %u (tp·cp·pp = %llu gives dp %u): give one "
                         "of them",
                         p->dp, cfg->gpus, (unsigned long long)model, dp);
    if (cfg->file_world && cfg->file_world != cfg->gpus)
        return cli_error(EXIT_USAGE,
                         "--gpus %u contradicts the world size %u of the --megatron-args or "
                         "--megatron-log file (torchrun's --nproc_per_node × --nnodes, or the "
                         "log's world_size)",
                         cfg->gpus, cfg->file_world);
    p->dp = dp;
    return EXIT_OK;
}

int
cli_config_finish(struct cli_config *cfg, const struct spsim_model *model)
{
    struct spsim_parallel *p = &cfg->par;
    uint32_t layers = spsim_model_get_shape(model)->layers;
    /* The paper's interleaving (vpp 3) and pp 8 fit GPT-3 175B's 96 layers (and any model
     * whose layers 24 divides): another model gets no interleaving unless asked, and a pp
     * that divides its layers. With a layout, vpp is derived from it. */
    bool uneven = p->first_stage_layers || p->last_stage_layers || p->account_embedding ||
                  p->account_loss || p->pipeline_layout;
    /* A hybrid model interleaves only with a layout (hybrid.c: Megatron's vp_stage rule). */
    if (!cfg->vpp_set &&
        (p->pipeline_layout || p->pp < 2 || spsim_model_get_shape(model)->hybrid_pattern ||
         layers % ((uint64_t)p->pp * p->vpp) != 0))
        p->vpp = 1;
    /* The V schedules run two chunks per rank, the others one (but interleaved). */
    bool one_f_one_b = cfg->pp_schedule && strcmp(cfg->pp_schedule, "1f1b") == 0;
    if (!cfg->vpp_set && (p->pp_schedule != SPSIM_PP_SCHEDULE_MEGATRON || one_f_one_b))
        p->vpp = p->pp_schedule == SPSIM_PP_SCHEDULE_ZB_V ||
                         p->pp_schedule == SPSIM_PP_SCHEDULE_DUALPIPEV
                     ? 2
                     : 1;
    bool interleaved = cfg->pp_schedule && strcmp(cfg->pp_schedule, "interleaved") == 0;
    if (cfg->pp_schedule && p->pp_schedule == SPSIM_PP_SCHEDULE_MEGATRON &&
        interleaved != (p->vpp > 1))
        return cli_error(EXIT_CONFIG, "--pp-schedule %s: vpp is %u (%s)", cfg->pp_schedule, p->vpp,
                         interleaved ? "interleaved needs --vpp 2 or more" : "1f1b needs vpp 1");
    if (!cfg->pp_set && !uneven)
        for (p->pp = 8; p->pp > 1 && layers % p->pp != 0;)
            p->pp--;
    if (p->sp && p->tp == 1) {
        /* megatron/training/arguments.py (message verbatim). */
        cli_warning("Disabling sequence parallelism because tensor model parallelism is disabled");
        p->sp = false;
    }
    /* A Hugging Face config gives no training sequence: say which one is used. */
    if (!p->seq && strncmp(spsim_model_source(model), "Hugging Face", 12) == 0)
        cli_warning("%s: %s", cfg->model, spsim_model_description(model));
    int rc = contradictions(cfg);
    return rc ? rc : gpus_to_dp(cfg);
}

/* A group's getopt entries appended to `out` (capacity `cap` from `n`). */
static size_t
add_options(struct option *out, size_t n, size_t cap, const struct option *add, size_t nadd)
{
    if (n + nadd > cap)
        return cap + 1;
    if (nadd) /* a command without options of its own passes NULL (C11 7.24.1p2) */
        memcpy(out + n, add, nadd * sizeof(*add));
    return n + nadd;
}

/* getopt_long's table for a command: its groups, its own options, --help. */
static int
build_options(const struct cli_command *c, struct option *out, size_t cap)
{
    size_t n = 0, axes = 0;
    for (size_t i = 0; i < CLI_ARRAY_LENGTH(option_table); i++) {
        const struct cli_option_spec *o = &option_table[i];
        struct option add = {o->name, o->has_arg, NULL, o->config};
        if (c->axes && o->axis >= 0)
            add = (struct option){o->name, required_argument, NULL, CLI_AXIS_OPT + o->axis};
        else if (!c->config || o->has_arg < 0)
            continue;
        axes += o->axis >= 0;
        n = add_options(out, n, cap, &add, 1);
    }
    /* Every axis of the library is an option of sweep and optimize. */
    if (c->axes && axes != SPSIM_AXIS_COUNT)
        return cli_error(EXIT_RUNTIME, "%s: the option table lacks a sweep axis", c->name);
    n = add_options(out, n, cap, c->own, c->nown);
    n = add_options(out, n, cap, &(struct option){"help", no_argument, NULL, 'h'}, 1);
    n = add_options(out, n, cap, &(struct option){NULL, 0, NULL, 0}, 1);
    if (n > cap)
        return cli_error(EXIT_RUNTIME, "%s: too many options", c->name);
    return EXIT_OK;
}

/* One option of the command: a group's, else the command's own. */
static int
dispatch(const struct cli_command *c, int opt, char **argv)
{
    if (c->config) {
        int taken = cli_config_option(c->config, opt, optarg);
        if (taken)
            return taken < 0 ? -taken : EXIT_OK;
    }
    if (c->axes && opt >= CLI_AXIS_OPT && opt < CLI_AXIS_OPT + SPSIM_AXIS_COUNT) {
        c->axes->text[opt - CLI_AXIS_OPT] = optarg;
        return EXIT_OK;
    }
    return c->handle(c->ctx, opt, optarg, argv[optind - 1]);
}

int
cli_parse_options(const struct cli_command *c, int argc, char **argv)
{
    struct option longopts[CLI_ARRAY_LENGTH(option_table) + 40];
    int rc = build_options(c, longopts, CLI_ARRAY_LENGTH(longopts));
    if (rc != EXIT_OK)
        return rc;
    optind = 1;
    opterr = 0;
    for (int opt; (opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1;) {
        if (opt == 'h') {
            fputs(c->help, stdout);
            rc = -1;
            break;
        }
        if (opt == ':' || opt == '?') {
            rc = cli_getopt_error(c->name, opt, argv, longopts);
            break;
        }
        if ((rc = dispatch(c, opt, argv)) != EXIT_OK)
            break;
    }
    if (rc == EXIT_OK && !c->operands)
        rc = cli_no_operands(c->name, argc, argv);
    if (rc != EXIT_OK && c->config) {
        spsim_model_destroy(c->config->imported);
        c->config->imported = NULL;
    }
    return rc;
}

/* "a, b, c": the first `count` names of an enum, for messages. */
static const char *
choice_list(char *buf, size_t cap, const char *(*name)(int), int count)
{
    buf[0] = '\0';
    for (int i = 0, used = 0; i < count && used >= 0 && (size_t)used < cap; i++)
        used += snprintf(buf + used, cap - (size_t)used, "%s%s", i ? ", " : "", name(i));
    return buf;
}

static const char *
recompute_name(int i)
{
    return spsim_recompute_name((enum spsim_recompute)i);
}

static const char *
dtype_name(int i)
{
    return spsim_dtype_name((enum spsim_dtype)i);
}

static const char *
method_name(int i)
{
    return spsim_recompute_method_name((enum spsim_recompute_method)i);
}

static const char *
module_name(int i)
{
    static char one[32];
    return spsim_recompute_modules_format(1u << i, one, sizeof(one));
}

static const char *
coll_op_name(int i)
{
    return spsim_coll_op_name((enum spsim_coll_op)i);
}

/* The usage error for a value that is none of the first `count` names of an enum. */
static int
choice_error(const char *option, const char *text, const char *(*name)(int), int count)
{
    char list[128];
    return cli_error(EXIT_USAGE, "%s: %s is not one of %s", option, CLI_Q(text),
                     choice_list(list, sizeof(list), name, count));
}

int
cli_parse_recompute(const char *option, const char *text, enum spsim_recompute *out)
{
    if (spsim_recompute_parse(text, out) == SPSIM_OK)
        return EXIT_OK;
    return choice_error(option, text, recompute_name, SPSIM_RECOMPUTE_COUNT);
}

int
cli_parse_recompute_method(const char *option, const char *text, enum spsim_recompute_method *out)
{
    if (spsim_recompute_method_parse(text, out) == SPSIM_OK)
        return EXIT_OK;
    return choice_error(option, text, method_name, SPSIM_RECOMPUTE_METHOD_COUNT);
}

int
cli_parse_recompute_modules(const char *option, const char *text, uint32_t *out)
{
    if (spsim_recompute_modules_parse(text, out) == SPSIM_OK)
        return EXIT_OK;
    char list[160];
    return cli_error(EXIT_USAGE, "%s: %s is not a list of %s (separated by ',' or '+')", option,
                     CLI_Q(text), choice_list(list, sizeof(list), module_name, SPSIM_RMOD_COUNT_));
}

int
cli_parse_dtype(const char *option, const char *text, enum spsim_dtype *out)
{
    enum spsim_dtype d;
    if (spsim_dtype_parse(text, &d) == SPSIM_OK && d < SPSIM_DTYPE_TRAINING_COUNT) {
        *out = d;
        return EXIT_OK;
    }
    return choice_error(option, text, dtype_name, SPSIM_DTYPE_TRAINING_COUNT);
}

int
cli_parse_coll_op(const char *option, const char *text, enum spsim_coll_op *out)
{
    if (spsim_coll_op_parse(text, out) == SPSIM_OK)
        return EXIT_OK;
    return choice_error(option, text, coll_op_name, SPSIM_COLL_COUNT);
}
