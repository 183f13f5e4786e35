/*
 * The pipeline schedules beyond Megatron-Core's 1F1B and interleaved ones (README "Pipeline
 * schedules"): their rules, their fill and drain (the bubble) and the micro-batches each rank
 * holds in flight. F, B and W are a stage's forward, whole backward (input and weight gradient)
 * and weight-gradient times per micro-batch; "F&B" one forward overlapped with another
 * micro-batch's backward.
 *
 * - ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR, §3.1 and Table 1; ZB1P in
 *   sail-sg/zero-bubble-pipeline-parallelism): each backward split into B_in (the input
 *   gradient, which the previous stage waits for) and W (deferred into the drain's idle
 *   slots). Bubble (p − 1)(T_F + T_B − T_W) with T_B the input gradient alone, i.e.
 *   (p − 1)(F + B − 2W) (deepseek-ai/DualPipe README's table, ZB1P row); peak memory p·M_B, as
 *   1F1B's (Table 1). One chunk per rank.
 * - ZB-V (Qi et al., arXiv 2401.10241 §6; scheduler/zbv.py): two chunks per rank in a V (rank r
 *   holds stages r and 2p − 1 − r), every rank's memory capped at 2p chunk activations
 *   (zbv.py:23, max_mem = f_mem · n_stage · 2, f_mem one chunk's), 1F1B's p·M_B. The
 *   reference builds the schedule greedily (PipelineGraph.try_v_schedule), with no closed
 *   form; its bubble is p − 1 chunk slots of f + b − 2w (chunk times, b the input gradient):
 *   (p − 1)(T_F + T_B − 2T_W)/2 = (p − 1)(F + B − 3W)/2 of the stage's times, zero when
 *   T_F = T_B = T_W (the repository README's table: ZBV's bubble rate 0, activation 1x,
 *   pipeline communication 2x). try_v_schedule at 39f2c186 gives exactly that with f = b and
 *   w = 0 or w = f (p 4: 60 and 0 at f = b = 10; p 8: 140 and 0), 17 % less at f = b = 10,
 *   w = 5 (25 against 30), and more with b > f (p 4, f 10, b 20, w 0: 120 against 90).
 * - DualPipe (DeepSeek-V3 technical report §3.2.1; deepseek-ai/DualPipe dualpipe.py): micro-
 *   batches fed from both ends, rank r holding stages r and p − 1 − r (README: parameters 2x;
 *   examples/example_dualpipe.py:138 builds full_modules[rank], full_modules[pp − 1 − rank]),
 *   each forward overlapped with another micro-batch's backward so that the EP all-to-all of
 *   one hides under the other's computation. Bubble (p/2 − 1)(F&B + B − 3W) (an event
 *   simulation of dualpipe.py's order, a pair waiting for both inputs, idles exactly that at
 *   F : B : W = 1 : 2 : 1 with F&B = F + B, and less with a shorter W: pp 4, W = B/4, 3 against
 *   3.5; test_trace.c trace_dualpipe_bubble_by_hand), activations p + 1
 *   micro-batches per rank (README table). pp even and micro-batches even and >= 2·pp
 *   (dualpipe.py:332-333).
 * - DualPipeV (the "cut-in-half" V of DualPipe; dualpipev.py): 2p stages of half a rank's
 *   layers on p ranks, rank r holding stages r and 2p − 1 − r, one copy of the parameters; the
 *   README's row for PP = 2p stages: bubble (PP/2 − 1)(F&B + B − 3W) of half-stage chunks,
 *   activations PP + 1 chunks; micro-batches >= 2·pp (dualpipev.py:318).
 *
 * Every chunk slot of the fill and drain also carries its two whole sends (forward activation,
 * backward gradient), as 1F1B's does (pipeline_time.c).
 */
#include "config.h"

#include "compose.h"
#include "pp_schedule.h"

#define CONFIG_FAIL(err, ...) spsim_fail((err), SPSIM_ECONFIG, "parallel config: " __VA_ARGS__)

static const char *
schedule_name(const struct spsim_parallel *p)
{
    return spsim_pp_schedule_name(p->pp_schedule, p->vpp);
}

/* The schedule's rules (the reference code's asserts) and spsim's limits; `micro` the
 * micro-batches per iteration. */
int
spsim_pp_schedule_check(const struct spsim_parallel *p, uint64_t micro, struct spsim_error *err)
{
    enum spsim_pp_schedule s = p->pp_schedule;
    if ((unsigned)s >= SPSIM_PP_SCHEDULE_COUNT)
        return CONFIG_FAIL(err, "field 'pp_schedule': unknown schedule %d", (int)s);
    if (s == SPSIM_PP_SCHEDULE_MEGATRON)
        return SPSIM_OK;
    const char *name = schedule_name(p);
    bool v_shape = s == SPSIM_PP_SCHEDULE_ZB_V || s == SPSIM_PP_SCHEDULE_DUALPIPEV;
    if (p->pp < 2)
        return CONFIG_FAIL(err, "field 'pp_schedule': %s is a pipeline schedule: it needs pp >= 2",
                           name);
    if (p->vpp != (v_shape ? 2u : 1u))
        return CONFIG_FAIL(
            err, "field 'vpp': %s runs %s model chunk%s per rank (vpp %u), not vpp %u", name,
            v_shape ? "two" : "one", v_shape ? "s in a V" : "", v_shape ? 2 : 1, p->vpp);
    if (s == SPSIM_PP_SCHEDULE_DUALPIPE && p->pp % 2 != 0) /* dualpipe.py:332 */
        return CONFIG_FAIL(err,
                           "field 'pp': dualpipe needs an even pp (num_ranks %% 2 == 0), "
                           "not %u",
                           p->pp);
    bool dual = s == SPSIM_PP_SCHEDULE_DUALPIPE || s == SPSIM_PP_SCHEDULE_DUALPIPEV;
    if (dual && (micro < 2ull * p->pp || (s == SPSIM_PP_SCHEDULE_DUALPIPE && micro % 2 != 0)))
        return CONFIG_FAIL(err,
                           "field 'gbs': %s needs %smicro-batches >= 2·pp = %u (num_chunks >= "
                           "num_ranks * 2), not %llu",
                           name, s == SPSIM_PP_SCHEDULE_DUALPIPE ? "an even count of " : "",
                           2 * p->pp, (unsigned long long)micro);
    if (p->pipeline_layout)
        return CONFIG_FAIL(err,
                           "field 'pipeline_layout': %s is modelled without a layout "
                           "(uneven stages by first/last stage layers or the embedding and "
                           "loss accounting)",
                           name);
    if (p->first_last_layers_bf16)
        return CONFIG_FAIL(err,
                           "field 'first_last_layers_bf16': %s is not modelled with BF16 "
                           "end layers",
                           name);
    if (p->moe_a2a_overlap || p->delay_wgrad_compute)
        return CONFIG_FAIL(err,
                           "field 'moe_a2a_overlap': --overlap-moe-expert-parallel-comm "
                           "and --delay-wgrad-compute are Megatron's combined 1F1B "
                           "schedule, not %s (which overlaps and splits W itself)",
                           name);
    /* DualPipe's rank holds two stages (memory.c rank_parameters); Muon's per-rank totals
     * count one (memory.c rank_muon), and the CPU-offloaded step of two stages' shards with
     * DualPipe's gradient exchange between them is not modelled */
    if (s == SPSIM_PP_SCHEDULE_DUALPIPE &&
        (p->optimizer == SPSIM_OPTIMIZER_MUON || p->optimizer_cpu_offload))
        return CONFIG_FAIL(err, "field 'optimizer': dualpipe is not modelled with %s",
                           p->optimizer_cpu_offload ? "--optimizer-cpu-offload" : "Muon");
    if (p->microbatch_group)
        return CONFIG_FAIL(err,
                           "field 'microbatch_group': the interleaved schedule's groups "
                           "do not apply to %s",
                           name);
    return SPSIM_OK;
}

/*
 * The fill and drain of a schedule from the mean stage's terms per micro-batch (see the
 * header): `stage` F + B, `bwd` B, `wgrad` W, `hidden` what pairing a forward with a
 * backward hides of the EP exchanges (F&B = stage − hidden), `send` one whole send.
 */
double
spsim_pp_schedule_bubble(enum spsim_pp_schedule s, uint32_t pp, double stage, double bwd,
                         double wgrad, double hidden, double send)
{
    double p = pp, slots, chunk;
    switch (s) {
    case SPSIM_PP_SCHEDULE_ZB_H1:
        /* §3.1: (p − 1)(T_F + T_B − T_W) against 1F1B's (p − 1)(T_F + T_B + T_W) = (p − 1)·stage,
         * T_B the input gradient = bwd − W: stage − 2W (the reference's get_hand_schedule
         * makespans, test_trace.c trace_zb_h1_bubble_by_hand) */
        slots = p - 1, chunk = stage - 2 * wgrad;
        break;
    case SPSIM_PP_SCHEDULE_ZB_V: /* p − 1 half-stage chunk slots */
        slots = p - 1, chunk = (stage - 3 * wgrad) / 2;
        break;
    case SPSIM_PP_SCHEDULE_DUALPIPE:
        slots = p / 2 - 1, chunk = stage - hidden + bwd - 3 * wgrad;
        break;
    case SPSIM_PP_SCHEDULE_DUALPIPEV: /* PP = 2p stages of half a rank's layers */
        slots = p - 1, chunk = (stage - hidden + bwd - 3 * wgrad) / 2;
        break;
    default:
        return 0;
    }
    return slots * (spsim_max_d(0.0, chunk) + 2 * send);
}

/* Chunk activations a rank holds at its peak (see the header), at most all of them. */
uint64_t
spsim_pp_schedule_inflight(enum spsim_pp_schedule s, uint64_t pp, uint64_t rank, uint64_t micro)
{
    switch (s) {
    case SPSIM_PP_SCHEDULE_ZB_H1:
        return spsim_min_u64(pp - rank, micro);
    case SPSIM_PP_SCHEDULE_ZB_V:
        return spsim_min_u64(2 * pp, 2 * micro);
    case SPSIM_PP_SCHEDULE_DUALPIPE:
        return spsim_min_u64(pp + 1, micro);
    case SPSIM_PP_SCHEDULE_DUALPIPEV:
        return spsim_min_u64(2 * pp + 1, 2 * micro);
    default:
        return 0;
    }
}

/*
 * Forward-backward pairs of rank r (dualpipe.py:359-400): steps 4 and 5 run
 * _forward_backward_chunk 2·step_4 + step_5 times, step_4 = m/2 − p + h + 1 and step_5 =
 * p/2 − h − 1 with h the rank's place in its half (r or p − 1 − r), less the middle rank's
 * first step, which it does not overlap: m − 3p/2 + h + 1, one fewer for h = p/2 − 1.
 * DualPipeV (dualpipev.py:330-373): step_4 = m − 2p + r + 1, step_5 = p − r − 1 of its 2m
 * chunks, the last rank's first step alone: 2m − 3p + r + 1 chunk pairs, one fewer for r = p − 1,
 * half a micro-batch each.
 */
double
spsim_pp_schedule_paired(enum spsim_pp_schedule s, uint64_t micro, uint64_t pp, uint64_t rank)
{
    double m = (double)micro, p = (double)pp;
    if (s == SPSIM_PP_SCHEDULE_DUALPIPE) {
        uint64_t h = rank < pp / 2 ? rank : pp - 1 - rank;
        return m - 1.5 * p + (double)h + 1 - (h == pp / 2 - 1 ? 1 : 0);
    }
    if (s == SPSIM_PP_SCHEDULE_DUALPIPEV)
        return (2 * m - 3 * p + (double)rank + 1 - (rank == pp - 1 ? 1 : 0)) / 2;
    return 0;
}
