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

/* The configuration options, in the order of CLI_CONFIG_HELP. */
static const struct option config_options[] = {
    {"model", required_argument, NULL, OPT_MODEL},
    {"hw", required_argument, NULL, OPT_HW},
    {"tp", required_argument, NULL, OPT_TP},
    {"pp", required_argument, NULL, OPT_PP},
    {"dp", required_argument, NULL, OPT_DP},
    {"vpp", required_argument, NULL, OPT_VPP},
    {"sp", no_argument, NULL, OPT_SP},
    {"no-sp", no_argument, NULL, OPT_NO_SP},
    {"recompute", required_argument, NULL, OPT_RECOMPUTE},
    {"mbs", required_argument, NULL, OPT_MBS},
    {"gbs", required_argument, NULL, OPT_GBS},
    {"seq", required_argument, NULL, OPT_SEQ},
    {"flash-attn", no_argument, NULL, OPT_FLASH},
    {"no-flash-attn", no_argument, NULL, OPT_NO_FLASH},
    {"distributed-optimizer", no_argument, NULL, OPT_DISTOPT},
    {"no-distributed-optimizer", no_argument, NULL, OPT_NO_DISTOPT},
    {"overlap-grad-reduce", no_argument, NULL, OPT_OVERLAP_GRAD},
    {"no-overlap-grad-reduce", no_argument, NULL, OPT_NO_OVERLAP_GRAD},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"first-stage-layers", required_argument, NULL, OPT_FIRST_STAGE},
    {"last-stage-layers", required_argument, NULL, OPT_LAST_STAGE},
    {"account-for-embedding-in-pipeline-split", no_argument, NULL, OPT_ACCOUNT_EMB},
    {"account-for-loss-in-pipeline-split", no_argument, NULL, OPT_ACCOUNT_LOSS},
    {"pipeline-layout", required_argument, NULL, OPT_LAYOUT},
    {"pipeline-model-parallel-layout", required_argument, NULL, OPT_LAYOUT},
};

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
    {OPT_FIRST_STAGE, "--first-stage-layers", 65536,
     offsetof(struct spsim_parallel, first_stage_layers), false},
    {OPT_LAST_STAGE, "--last-stage-layers", 65536,
     offsetof(struct spsim_parallel, last_stage_layers), false},
};

void
cli_config_defaults(struct cli_config *cfg)
{
    *cfg = (struct cli_config){.model = "gpt3-175b"};
    cfg->hardware = "dgx-a100-80g";
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

int
cli_config_option(struct cli_config *cfg, int opt, const char *arg)
{
    struct spsim_parallel *p = &cfg->par;
    bool taken = false;
    int rc = config_number(p, opt, arg, &taken);
    cfg->pp_set |= opt == OPT_PP;
    cfg->vpp_set |= opt == OPT_VPP;
    if (taken)
        return rc == EXIT_OK ? 1 : -rc;
    if (config_switch(p, opt))
        return 1;
    switch (opt) {
    case OPT_MODEL:
        cfg->model = arg;
        cfg->model_set = strcmp(arg, "gpt3-175b") != 0;
        return 1;
    case OPT_LAYOUT:
        p->pipeline_layout = arg;
        return 1;
    case OPT_HW:
        cfg->hardware = arg;
        return 1;
    case OPT_RECOMPUTE:
        rc = cli_parse_recompute("--recompute", arg, &p->recompute);
        return rc == EXIT_OK ? 1 : -rc;
    case OPT_DTYPE:
        rc = cli_parse_dtype("--dtype", arg, &p->dtype);
        return rc == EXIT_OK ? 1 : -rc;
    default:
        return 0;
    }
}

void
cli_config_finish(struct cli_config *cfg, const struct spsim_model *model)
{
    struct spsim_parallel *p = &cfg->par;
    uint32_t layers = spsim_model_get_shape(model)->layers;
    /* The paper's interleaving (vpp 3) and pp 8 fit GPT-3 175B's 96 layers; another model gets
     * no interleaving unless asked, and a pp that divides its layers. */
    if ((cfg->model_set || p->pipeline_layout) && !cfg->vpp_set)
        p->vpp = 1; /* with a layout, vpp is derived from it */
    bool uneven = p->first_stage_layers || p->last_stage_layers || p->account_embedding ||
                  p->account_loss || p->pipeline_layout;
    if (cfg->model_set && !cfg->pp_set && !uneven)
        for (p->pp = 8; p->pp > 1 && layers % p->pp != 0;)
            p->pp--;
    if (p->sp && p->tp == 1) {
        /* megatron/training/arguments.py (message verbatim). */
        cli_warning("Disabling sequence parallelism because tensor model parallelism is disabled");
        p->sp = false;
    }
}

/* A group's getopt entries appended to `out` (capacity `cap` from `n`). */
static size_t
add_options(struct option *out, size_t n, size_t cap, const struct option *add, size_t nadd)
{
    if (n + nadd > cap)
        return cap + 1;
    memcpy(out + n, add, nadd * sizeof(*add));
    return n + nadd;
}

/* getopt_long's table for a command: its groups, its own options, --help. */
static int
build_options(const struct cli_command *c, struct option *out, size_t cap)
{
    size_t n = 0;
    if (c->config)
        n = add_options(out, n, cap, config_options, CLI_ARRAY_LENGTH(config_options));
    if (c->axes && n + SPSIM_AXIS_COUNT <= cap)
        n += cli_axis_options(out + n);
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
    if (c->axes && cli_axis_option(c->axes, opt, optarg))
        return EXIT_OK;
    return c->handle(c->ctx, opt, optarg, argv[optind - 1]);
}

int
cli_parse_options(const struct cli_command *c, int argc, char **argv)
{
    struct option longopts[CLI_ARRAY_LENGTH(config_options) + SPSIM_AXIS_COUNT + 40];
    int rc = build_options(c, longopts, CLI_ARRAY_LENGTH(longopts));
    if (rc != EXIT_OK)
        return rc;
    optind = 1;
    opterr = 0;
    for (int opt; (opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1;) {
        if (opt == 'h') {
            fputs(c->help, stdout);
            return -1;
        }
        if (opt == ':' || opt == '?')
            return cli_getopt_error(c->name, opt, argv);
        if ((rc = dispatch(c, opt, argv)) != EXIT_OK)
            return rc;
    }
    return c->operands ? EXIT_OK : cli_no_operands(c->name, argc, argv);
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
coll_op_name(int i)
{
    return spsim_coll_op_name((enum spsim_coll_op)i);
}

/* The usage error for a value that is none of the first `count` names of an enum. */
static int
choice_error(const char *option, const char *text, const char *(*name)(int), int count)
{
    char list[128];
    return cli_error(EXIT_USAGE, "%s: '%s' is not one of %s", option, text,
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
