/* `spsim explain`: one layer's schedule, op by op, with its collectives, shapes and RNG domains. */
#include "config.h"

#include <getopt.h>
#include <string.h>

#include "cli.h"

static const char explain_help[] =
    "Usage: spsim explain [OPTIONS]\n"
    "\n"
    "Print one transformer layer's schedule on one TP rank as Megatron-LM runs it: each op in\n"
    "order (forward, recomputation, backward), the region it runs in (SP region: sharded along\n"
    "the sequence; replicated: the same on every TP rank; TP region: sharded by heads or ffn),\n"
    "the collective of each f/f̄/g/ḡ boundary and of the weight-gradient re-gather, what a\n"
    "backward collective overlaps with, the tensor shapes before and after, and the RNG domain\n"
    "each dropout must draw from. Takes the same configuration options as 'spsim query'.\n"
    "\n"
    "Configuration:\n" CLI_CONFIG_HELP "\n"
    "Output:\n"
    "  --format F             table (default) or json\n"
    "  -o, --output FILE      write to FILE atomically instead of standard output\n"
    "  -h, --help             show this help\n";

/* Context parallelism: the exchange and its groups (TE context_parallel.py). */
static void
write_cp_legend(FILE *f, const struct spsim_parallel *p)
{
    fprintf(f, "Context parallelism: cp %u, %s", p->cp, spsim_cp_comm_name(p->cp_comm_type));
    if (p->cp_comm_type == SPSIM_CP_A2A_P2P)
        fprintf(f, " (A2A over %u, p2p ring over %u)", p->hcp_sizes[0], p->hcp_sizes[1]);
    fprintf(f, "; each rank holds s/c tokens (chunks r and 2c-1-r of 2c). The p2p ring's K/V "
               "blocks travel beside the attention steps they feed; the other exchanges are on "
               "the critical path.\n");
}

/* The MoE layer's token exchanges (operator "moe"): what each moves per rank, over which group
 * and tier. Dropless routing is taken at its balanced expectation. */
static void
write_moe_steps(FILE *f, const struct spsim_schedule_step *steps, size_t n,
                const struct spsim_parallel *p)
{
    bool any = false;
    for (size_t i = 0; i < n && !any; i++)
        any = strcmp(steps[i].operator_name, "moe") == 0;
    if (!any)
        return;
    char flex[64] = "", sms[16] = "default";
    if (p->moe_flex_sms)
        snprintf(sms, sizeof(sms), "%u", p->moe_flex_sms);
    if (p->moe_dispatcher == SPSIM_MOE_FLEX)
        snprintf(flex, sizeof(flex), " (%s, %s SMs)",
                 spsim_moe_flex_backend_name(p->moe_flex_backend), sms);
    fprintf(f, "\nToken dispatch and combine (%s%s dispatcher, ep %u, etp %u; %s):\n",
            spsim_moe_dispatcher_name(p->moe_dispatcher), flex, p->ep, p->etp ? p->etp : p->tp,
            p->moe_routing == SPSIM_MOE_ROUTING_BALANCED || p->ep <= 1
                ? "dropless routing at its balanced expectation, every expert receiving "
                  "tokens·k/E"
                : "random routing: the expected most-loaded EP rank's tokens (a lower bound "
                  "on a learned router's)");
    if (p->moe_dispatcher == SPSIM_MOE_FLEX)
        fprintf(f, "flex: each token sent once per destination rank (over RDMA once per "
                   "destination domain, forwarded on NVLink); bf16\n");
    fprintf(f, "%-3s %-9s %-40s %-15s %-6s %-12s %16s %16s %s\n", "#", "phase", "op", "collective",
            "group", "tier", "message B", "wire B/rank", "time");
    for (size_t i = 0; i < n; i++) {
        const struct spsim_schedule_step *s = &steps[i];
        if (strcmp(s->operator_name, "moe") != 0)
            continue;
        char t[32];
        fprintf(f, "%-3zu %-9s ", i + 1, spsim_phase_name(s->phase));
        fput_padded(f, s->op, 40);
        fprintf(f, " %-15s %-6u %-12s %16llu %16llu %s\n", s->collective, s->group_size,
                spsim_tier_name(s->tier), (unsigned long long)s->message_bytes,
                (unsigned long long)s->wire_bytes, fmt_time(t, sizeof(t), s->time_s));
    }
}

static void
write_table(FILE *f, const struct spsim_schedule_step *steps, size_t n, const char *model,
            const struct spsim_parallel *p)
{
    fprintf(f, "spsim explain: %s, tp %u, SP %s, recompute %s, mbs %u, seq %u\n", model, p->tp,
            p->sp ? "on" : "off", spsim_recompute_name(p->recompute), p->mbs, p->seq);
    char mods[96];
    if (p->recompute == SPSIM_RECOMPUTE_SELECTIVE && p->recompute_modules &&
        p->recompute_modules != SPSIM_RMOD_CORE_ATTN)
        fprintf(f,
                "Recomputed modules: %s (each replayed just before its backward; layernorm "
                "from the gradient of the block output it feeds).\n",
                spsim_recompute_modules_format(p->recompute_modules, mods, sizeof(mods)));
    if (p->tp > 1 && p->sp)
        fprintf(f, "Operators: g = AllGather forward / ReduceScatter backward (SP region -> TP "
                   "region); ḡ = ReduceScatter forward / AllGather backward (TP -> SP region).\n"
                   "Backward also re-gathers each column-parallel GEMM's saved input shard for "
                   "its weight gradient (wgrad AG), beside the dgrad GEMM.\n");
    else if (p->tp > 1)
        fprintf(f, "Operators: f = identity forward / AllReduce backward (before a "
                   "column-parallel GEMM); f̄ = AllReduce forward / identity backward (after a "
                   "row-parallel GEMM).\n");
    if (p->cp > 1)
        write_cp_legend(f, p);
    if (p->cuda_graph_impl != SPSIM_CUDA_GRAPH_NONE) {
        char scope[96];
        spsim_cuda_graph_scope_format(p->cuda_graph_scope, scope, sizeof(scope));
        fprintf(f,
                "CUDA graphs (%s%s%s): steps marked * replay inside a graph, one launch for each "
                "run of them; the others are launched kernel by kernel from the host.\n",
                spsim_cuda_graph_impl_name(p->cuda_graph_impl), scope[0] ? " " : "", scope);
    }
    /* The forward pass drawn as the seed article draws it: each op under the previous one,
     * with the region it runs in and the shape it produces. */
    fprintf(f, "\nForward data flow:\n  input %s\n", n ? steps[0].shape_in : "");
    int depth = 1;
    for (size_t i = 0; i < n && steps[i].phase == SPSIM_PHASE_FORWARD; i++, depth++) {
        const struct spsim_schedule_step *s = &steps[i];
        const char *what =
            s->collective[0] ? s->collective : (s->operator_name[0] ? "identity" : "");
        fprintf(f, "%*s└─ %s%s%s%s  → %s   [%s%s%s]\n", 2 * depth, "", s->op, what[0] ? " (" : "",
                what, what[0] ? ")" : "", s->shape_out, s->region,
                s->rng[0] ? ", dropout RNG: " : "", s->rng);
    }
    fprintf(f, "\n%-3s %-9s %-46s %-8s %-10s %-24s %-8s %-34s %-34s %-19s %s\n", "#", "phase", "op",
            "pass", "region", "collective", "beside", "shape in", "shape out", "dropout RNG",
            "time");
    for (size_t i = 0; i < n; i++) {
        const struct spsim_schedule_step *s = &steps[i];
        char coll[48] = "-", t[32];
        if (s->collective[0])
            snprintf(coll, sizeof(coll), "%s%s%s", s->operator_name,
                     s->operator_name[0] ? ": " : "", s->collective);
        else if (s->operator_name[0])
            snprintf(coll, sizeof(coll), "%s: identity", s->operator_name);
        char num[24];
        snprintf(num, sizeof(num), "%zu%s", i + 1, s->graphed ? "*" : "");
        fprintf(f, "%-3s %-9s ", num, spsim_phase_name(s->phase));
        fput_padded(f, s->op, 46);
        fprintf(f, " %-8s %-10s ", s->pass[0] ? s->pass : "-", s->region);
        fput_padded(f, coll, 24);
        fprintf(f, " %-8s %-34s %-34s %-19s %s\n",
                s->overlap == SPSIM_OVERLAP_NONE ? "-" : spsim_overlap_name(s->overlap),
                s->shape_in, s->shape_out, s->rng[0] ? s->rng : "-",
                fmt_time(t, sizeof(t), s->time_s));
    }
    write_moe_steps(f, steps, n, p);
}

static void
write_json(FILE *f, const struct spsim_schedule_step *steps, size_t n, const char *model,
           const struct spsim_parallel *p)
{
    struct jw w;
    jw_init(&w, f, true);
    jw_begin_object(&w, NULL);
    jw_string(&w, "model", model);
    jw_u64(&w, "tp", p->tp);
    jw_bool(&w, "sp", p->sp);
    jw_string(&w, "recompute", spsim_recompute_name(p->recompute));
    if (p->recompute == SPSIM_RECOMPUTE_SELECTIVE && p->recompute_modules) {
        char mods[96];
        jw_string(&w, "recompute_modules",
                  spsim_recompute_modules_format(p->recompute_modules, mods, sizeof(mods)));
    }
    jw_begin_array(&w, "steps");
    for (size_t i = 0; i < n; i++) {
        const struct spsim_schedule_step *s = &steps[i];
        jw_begin_object(&w, NULL);
        jw_string(&w, "phase", spsim_phase_name(s->phase));
        jw_string(&w, "op", s->op);
        jw_string(&w, "pass", s->pass);
        jw_string(&w, "region", s->region);
        jw_string(&w, "operator", s->operator_name);
        jw_string(&w, "collective", s->collective);
        jw_string(&w, "overlap", spsim_overlap_name(s->overlap));
        jw_string(&w, "shape_in", s->shape_in);
        jw_string(&w, "shape_out", s->shape_out);
        jw_string(&w, "rng", s->rng);
        jw_double(&w, "flops", s->flops);
        jw_double(&w, "time_s", s->time_s);
        jw_string(&w, "algorithm", s->algorithm);
        jw_string(&w, "protocol", s->protocol);
        if (p->cuda_graph_impl != SPSIM_CUDA_GRAPH_NONE)
            jw_bool(&w, "graphed", s->graphed);
        if (strcmp(s->operator_name, "moe") == 0) { /* the MoE token exchanges */
            jw_u64(&w, "message_bytes", s->message_bytes);
            jw_u64(&w, "wire_bytes_per_rank", s->wire_bytes);
            jw_u64(&w, "group_size", s->group_size);
            jw_string(&w, "tier", spsim_tier_name(s->tier));
        }
        jw_end_object(&w);
    }
    jw_end_array(&w);
    jw_end_object(&w);
    jw_finish(&w);
}

struct explain_args {
    struct cli_config cfg;
    bool json;
    const char *output;
};

static int
parse_option(void *ctx, int opt, const char *arg, const char *current)
{
    struct explain_args *a = ctx;
    (void)current;
    if (opt == 'o')
        a->output = arg;
    else if (strcmp(arg, "json") == 0)
        a->json = true;
    else if (strcmp(arg, "table") != 0)
        return cli_usage_error("explain", "--format: %s is not one of table, json", CLI_Q(arg));
    return EXIT_OK;
}

/* @return EXIT_OK, an exit code, or -1 after --help */
static int
parse(int argc, char **argv, struct explain_args *a)
{
    static const struct option own[] = {{"format", required_argument, NULL, 'f'},
                                        {"output", required_argument, NULL, 'o'}};
    cli_config_defaults(&a->cfg);
    const struct cli_command c = {.name = "explain",
                                  .help = explain_help,
                                  .config = &a->cfg,
                                  .own = own,
                                  .nown = CLI_ARRAY_LENGTH(own),
                                  .handle = parse_option,
                                  .ctx = a};
    return cli_parse_options(&c, argc, argv);
}

int
cmd_explain(int argc, char **argv)
{
    struct explain_args a = {0};
    int rc = parse(argc, argv, &a);
    if (rc != EXIT_OK)
        return rc < 0 ? EXIT_OK : rc;
    struct cli_config cfg = a.cfg;
    bool json = a.json;
    const char *output = a.output;
    struct spsim_model *model = NULL;
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    static struct spsim_schedule_step steps[SPSIM_MAX_SCHEDULE_STEPS];
    size_t n = 0;
    if ((rc = cli_config_model(&a.cfg, &model)) || (rc = cli_load_hardware(cfg.hardware, &hw)))
        goto done;
    if ((rc = cli_config_finish(&cfg, model)))
        goto done;
    if (spsim_layer_schedule(model, hw, &cfg.par, steps, SPSIM_MAX_SCHEDULE_STEPS, &n, &err)) {
        rc = cli_fail(&err);
        goto done;
    }
    struct spsim_parallel shown = cfg.par;
    if (!shown.seq)
        shown.seq = spsim_model_get_shape(model)->seq_len;
    struct cli_output out;
    if ((rc = cli_output_open(&out, output)))
        goto done;
    if (json)
        write_json(out.stream, steps, n, spsim_model_name(model), &shown);
    else
        write_table(out.stream, steps, n, spsim_model_name(model), &shown);
    rc = cli_output_close(&out);
done:
    spsim_model_destroy(model);
    spsim_hardware_destroy(hw);
    return rc;
}
