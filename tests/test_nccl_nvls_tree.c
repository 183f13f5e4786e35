/*
 * NCCL's NVLSTree across nodes (src/engine/nccl_tuning.c, src/engine/collective_model.c),
 * worked by hand from NVIDIA/nccl at commit 5067397 (the NVLS paths are those of v2.29.2-1):
 * the multi-node NVLS graph of src/graph/search.cc, NVLSTree's bandwidth and latency of
 * src/graph/tuning.cc ncclTopoTuneModel, the choice of ncclTopoGetAlgoTime/topoGetAlgoInfo, and
 * the time spsim gives NVLSTree on a round-number Hopper profile.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/collective_model.h"
#include "engine/nccl_tuning.h"
#include "testutil.h"

#define TOL 1e-9

static double
choose_us(const struct spsim_nccl_comm *c, double bytes, enum spsim_nccl_algo algo,
          enum spsim_nccl_proto proto)
{
    struct spsim_nccl_choice ch;
    ck_assert(spsim_nccl_choose(c, bytes, &ch));
    ck_assert_msg(ch.algo == algo && ch.proto == proto, "%.0f B: %s/%s, expected %s/%s", bytes,
                  spsim_nccl_algo_name(ch.algo), spsim_nccl_proto_name(ch.proto),
                  spsim_nccl_algo_name(algo), spsim_nccl_proto_name(proto));
    return ch.time_us;
}

/*
 * The NVLS graph of DGX H100 nodes across nodes. NVLink 18 × SM90_NVLINK_BW 20.6 = 370.8 GB/s,
 * NIC 400 Gb/s / 8 = 50 (PCIe Gen5 x16: 16 × 240 / 80 = 48, topo.cc:545-657), one NIC per GPU;
 * sm90 inter speeds 48, 45, 42, 40, 30, ... Each channel is a head GPU at its own NIC
 * (NET -> head -> NET at bwInter) and every GPU's NVSwitch path once, the head's twice
 * (search.cc ncclTopoSearchTryNvls): k channels need (k + 1)·bwIntra on a head's NVLink.
 * Pass 1: 48 gives 6 channels (7·48 = 336 <= 370.8 < 8·48), 45 gives 7, 42 gives 7, 40 gives
 * all 8 (9·40 = 360): stop at maxChannels. Pass 2 raises bwInter with 8 channels while below
 * 2·bwIntra: 42, 45, 48 (the top). Graph: 8 channels, bwIntra 40, bwInter 48, for 2 or 4 nodes.
 */
START_TEST(nvls_graph_across_dgx_h100_nodes)
{
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    for (uint32_t nodes = 2; nodes <= 4; nodes += 2) {
        struct spsim_nccl_comm c;
        spsim_nccl_comm_from_hw(hw, 8 * nodes, nodes, &c);
        ck_assert(c.nvls);
        for (int a = SPSIM_NCCL_NVLS; a <= SPSIM_NCCL_NVLS_TREE; a++) {
            ck_assert_uint_eq(c.graph[a].nchannels, 8);
            ck_assert_double_eq_tol(c.graph[a].bw_intra, 40, TOL);
            ck_assert_double_eq_tol(c.graph[a].bw_inter, 48, TOL);
        }
    }
    /* Four GPUs a node (a DP group when TP = 2): 4 heads on the group's 4 NICs, and 48 already
     * fits 4 channels (5·48 <= 370.8): 4 × 48 / 48. One GPU a node: no NVLS (ncclNvlsInit
     * needs two GPUs of the communicator on the node). A100: none (sm80). */
    struct spsim_nccl_comm c;
    spsim_nccl_comm_from_hw(hw, 8, 2, &c);
    ck_assert_uint_eq(c.graph[SPSIM_NCCL_NVLS_TREE].nchannels, 4);
    ck_assert_double_eq_tol(c.graph[SPSIM_NCCL_NVLS_TREE].bw_intra, 48, TOL);
    ck_assert_double_eq_tol(c.graph[SPSIM_NCCL_NVLS_TREE].bw_inter, 48, TOL);
    spsim_nccl_comm_from_hw(hw, 8, 8, &c);
    ck_assert(!c.nvls);
    ck_assert_uint_eq(c.graph[SPSIM_NCCL_NVLS_TREE].nchannels, 0);
    spsim_nccl_tune(&c, SPSIM_NCCL_ALL_REDUCE);
    ck_assert_double_eq(c.bw[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_SIMPLE], 0);
    struct spsim_hardware *a100 = testutil_hardware("dgx-a100-80g");
    spsim_nccl_comm_from_hw(a100, 16, 2, &c);
    spsim_nccl_tune(&c, SPSIM_NCCL_ALL_REDUCE);
    ck_assert(!c.nvls);
    ck_assert_double_eq(c.bw[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_SIMPLE], 0);
    spsim_hardware_destroy(a100);
    spsim_hardware_destroy(hw);
}
END_TEST

/*
 * NVLSTree AllReduce on 2 × 8 H100 (tuning.cc:306-323, 425-426): per channel
 * min(bwIntra·nvlsEfficiency 0.85·(nCh − 1)/nCh·2, bwInter·2 (≤ 2 nodes), perChMaxNVLSTreeBw
 * 57.7) = min(59.5, 96, 57.7) = 57.7; busBw 8·57.7 = 461.6, algBw ×16/30 = 246.19 GB/s;
 * latency 0 + intraLat 25 + 2·log2(2)·interLat 20.9 = 66.8 µs (IB: latencyInter 0). NVLS itself
 * stays off across nodes (it needs CollNet, tuning.cc:497-500).
 * Against the others (two_dgx_h100_allreduce_by_hand in test_nccl_tuning.c): Tree/LL128
 * 48.5 µs at 146.8 GB/s × correction, Ring/LL128 75.2 µs at 156.59, Ring/Simple 131.6·1.4 µs
 * at 204.8.
 *   1 MiB:  Tree/LL128 48.5 + 2^20/(146.8e3·0.6) = 60.4 < NVLSTree 66.8 + 4.26 = 71.1
 *   64 MiB: NVLSTree 66.8 + 2^26/246.19e3 = 339.4 < Ring/LL128 75.2 + 428.6 = 503.8
 *   4 GiB:  NVLSTree 66.8 + 17446.0 = 17512.8 < Ring/Simple 184.2 + 20971.5 = 21155.8
 */
START_TEST(nvls_tree_two_dgx_h100)
{
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_nccl_comm c;
    spsim_nccl_comm_from_hw(hw, 16, 2, &c);
    spsim_nccl_tune(&c, SPSIM_NCCL_ALL_REDUCE);
    double algbw = 8 * 57.7 * 16 / 30;
    ck_assert_double_eq_tol(c.bw[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_SIMPLE], algbw, 1e-4);
    ck_assert_double_eq_tol(c.lat[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_SIMPLE], 25 + 2 * 20.9, TOL);
    ck_assert_double_eq(c.bw[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_LL], 0);
    ck_assert_double_eq(c.bw[SPSIM_NCCL_NVLS][SPSIM_NCCL_SIMPLE], 0);
    double S = 1 << 20;
    ck_assert_double_eq_tol(choose_us(&c, S, SPSIM_NCCL_TREE, SPSIM_NCCL_LL128),
                            48.5 + S / (1000 * 146.8 * 0.6), 1e-4);
    ck_assert_double_eq_tol(spsim_nccl_time_us(&c, SPSIM_NCCL_NVLS_TREE, SPSIM_NCCL_SIMPLE, S),
                            66.8 + S / (1000 * algbw), 1e-4);
    S = 1 << 26;
    ck_assert_double_eq_tol(choose_us(&c, S, SPSIM_NCCL_NVLS_TREE, SPSIM_NCCL_SIMPLE),
                            66.8 + S / (1000 * algbw), 1e-4);
    S = 4294967296.0;
    ck_assert_double_eq_tol(choose_us(&c, S, SPSIM_NCCL_NVLS_TREE, SPSIM_NCCL_SIMPLE),
                            66.8 + S / (1000 * algbw), 1e-3);
    /* NVLSTree serves AllReduce only (tuning.cc:294-298). */
    spsim_nccl_tune(&c, SPSIM_NCCL_ALL_GATHER);
    ck_assert_double_eq(c.bw[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_SIMPLE], 0);
    spsim_hardware_destroy(hw);
}
END_TEST

/*
 * 4 × 8 H100: more than 2 nodes, so the inter side is bwInter ×1 (the 2-node ×2 is gone) and
 * the caps are the ">2 nodes" column: min(59.5, 48, 45.5) = 45.5, busBw 364, algBw ×32/62 =
 * 187.87; latency 25 + 2·log2(4)·20.9 = 108.6 µs. Tree (8 × 48 on bwInter): Simple
 * min(0.92·384, 8·36) = 288 → 144 GB/s; LL128 min(288·120/128, 8·29) = 232 → 116 GB/s at
 * 14 + 2(7·1.25 + 2·8.5) = 65.5 µs. Ring: 384·32/62 = 198.19 GB/s at (8.4 + 56·3.4 + 6·14)·1.4
 * = 395.9 µs (Simple); LL128 min(0.92·384, 8·36.7)·32/62 = 151.54 at 14 + 56·1.9 + 6·4 = 144.4.
 *   1 MiB:  Tree/LL128 65.5 + 2^20/(116e3·0.6) = 80.6 < NVLSTree 108.6 + 5.6 = 114.2
 *   64 MiB: NVLSTree 108.6 + 2^26/187.87e3 = 465.8 < Ring/LL128 144.4 + 442.9 = 587.3
 *   4 GiB:  Ring/Simple 395.9 + 21670.6 = 22066.5 < NVLSTree 108.6 + 22861.3 = 22969.9
 */
START_TEST(nvls_tree_four_dgx_h100)
{
    struct spsim_hardware *hw = testutil_hardware("dgx-h100");
    struct spsim_nccl_comm c;
    spsim_nccl_comm_from_hw(hw, 32, 4, &c);
    spsim_nccl_tune(&c, SPSIM_NCCL_ALL_REDUCE);
    double algbw = 8 * 45.5 * 32 / 62;
    ck_assert_double_eq_tol(c.bw[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_SIMPLE], algbw, 1e-4);
    ck_assert_double_eq_tol(c.lat[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_SIMPLE], 25 + 4 * 20.9, TOL);
    double S = 1 << 20;
    ck_assert_double_eq_tol(choose_us(&c, S, SPSIM_NCCL_TREE, SPSIM_NCCL_LL128),
                            65.5 + S / (1000 * 116 * 0.6), 1e-4);
    S = 1 << 26;
    ck_assert_double_eq_tol(choose_us(&c, S, SPSIM_NCCL_NVLS_TREE, SPSIM_NCCL_SIMPLE),
                            108.6 + S / (1000 * algbw), 1e-4);
    ck_assert_double_eq_tol(spsim_nccl_time_us(&c, SPSIM_NCCL_RING, SPSIM_NCCL_LL128, S),
                            144.4 + S / (1000 * 293.6 * 32 / 62), 1e-4);
    S = 4294967296.0;
    ck_assert_double_eq_tol(choose_us(&c, S, SPSIM_NCCL_RING, SPSIM_NCCL_SIMPLE),
                            (8.4 + 56 * 3.4 + 6 * 14) * 1.4 + S / (1000 * 384 * 32 / 62.0), 1e-3);
    ck_assert_double_gt(spsim_nccl_time_us(&c, SPSIM_NCCL_NVLS_TREE, SPSIM_NCCL_SIMPLE, S),
                        (8.4 + 56 * 3.4 + 6 * 14) * 1.4 + S / (1000 * 384 * 32 / 62.0));
    spsim_hardware_destroy(hw);
}
END_TEST

/*
 * DGX B200 (NVLink 18 × 40.1 = 721.8, NIC 50; sm100 inter speeds 96, 86, 80, 48, ...): the
 * first speed not above the NIC is 48, where all 8 channels fit (9·48 <= 721.8); pass 2 cannot
 * raise bwInter to 80 (above the NIC) nor then bwIntra. Graph 8 × 48 / 48.
 * 2 nodes: min(48·0.74·7/8·2 = 62.16, 2·48, 96) = 62.16. 4 nodes: min(62.16, 48, 80) = 48:
 * here the bwInter of more than 2 nodes binds (the 2-node ×2 would give 62.16), where on
 * H100 the 45.5 cap hides it (v2.29.2-1's Blackwell cap beyond 2 nodes was 43.8, which would
 * bind instead; commit 5067397 has 80). sm100 takes the tree correction on NVLSTree
 * (tuning.cc:643-646): at 1 MiB (log2(2^20/64) = 14) Simple's 0.5.
 */
START_TEST(nvls_tree_dgx_b200_inter_rule)
{
    struct spsim_hardware *hw = testutil_hardware("dgx-b200");
    struct spsim_nccl_comm c;
    spsim_nccl_comm_from_hw(hw, 16, 2, &c);
    ck_assert_uint_eq(c.graph[SPSIM_NCCL_NVLS_TREE].nchannels, 8);
    ck_assert_double_eq_tol(c.graph[SPSIM_NCCL_NVLS_TREE].bw_intra, 48, TOL);
    ck_assert_double_eq_tol(c.graph[SPSIM_NCCL_NVLS_TREE].bw_inter, 48, TOL);
    spsim_nccl_tune(&c, SPSIM_NCCL_ALL_REDUCE);
    double intra = 48 * 0.74 * 7 / 8 * 2;
    ck_assert_double_eq_tol(c.bw[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_SIMPLE], 8 * intra * 16 / 30,
                            1e-4);
    spsim_nccl_comm_from_hw(hw, 32, 4, &c);
    spsim_nccl_tune(&c, SPSIM_NCCL_ALL_REDUCE);
    double algbw = 8 * 48 * 32 / 62.0;
    ck_assert_double_eq_tol(c.bw[SPSIM_NCCL_NVLS_TREE][SPSIM_NCCL_SIMPLE], algbw, 1e-4);
    double S = 1 << 20;
    ck_assert_double_eq_tol(spsim_nccl_time_us(&c, SPSIM_NCCL_NVLS_TREE, SPSIM_NCCL_SIMPLE, S),
                            108.6 + S / (1000 * algbw * 0.5), 1e-4);
    spsim_hardware_destroy(hw);
}
END_TEST

/* A round-number Hopper profile: NVLink 450 GB/s line (18 links, as DGX H100, so NCCL's graphs
 * are those above), NVLS AllReduce busbw 480, ring 300, NVLink α 5 + 1 µs/step; 8 NICs of
 * 400 Gb/s a node at 40 GB/s achieved, network α 10 + 3 µs/step; no curves (eff = 1). */
static const char round_hopper[] =
    "{\"schema\": \"spsim-hardware/1\", \"name\": \"round-h\", \"gpu\": {\"model\": \"H100\","
    " \"peak_dense_tflops\": {\"bf16\": {\"value\": 100, \"source\": \"t\"}},"
    " \"gemm_achievable_tflops\": {\"bf16\": {\"value\": 50, \"source\": \"t\"}},"
    " \"sm_count\": {\"value\": 100, \"source\": \"t\"},"
    " \"hbm_capacity_GB\": {\"value\": 80, \"source\": \"t\"},"
    " \"hbm_bandwidth_GBps\": {\"value\": 2000, \"source\": \"t\"},"
    " \"hbm_achievable_GBps\": {\"value\": 1000, \"source\": \"t\"}},"
    " \"node\": {\"gpus_per_node\": {\"value\": 8, \"source\": \"t\"},"
    " \"nvlink_domain_gpus\": {\"value\": 8, \"source\": \"t\"},"
    " \"nics_per_node\": {\"value\": 8, \"source\": \"t\"}},"
    " \"nvlink\": {\"bandwidth_per_direction_GBps\": {\"value\": 450, \"source\": \"t\"},"
    " \"ring_busbw_GBps\": {\"value\": 300, \"source\": \"t\"},"
    " \"allreduce_busbw_GBps\": {\"value\": 480, \"source\": \"t\"},"
    " \"base_latency_us\": {\"value\": 5, \"source\": \"t\"},"
    " \"hop_latency_us\": {\"value\": 1, \"source\": \"t\"},"
    " \"nccl_channels\": {\"value\": 10, \"source\": \"t\"}},"
    " \"network\": {\"nic_line_rate_Gbit_s\": {\"value\": 400, \"source\": \"t\"},"
    " \"nic_achievable_GBps\": {\"value\": 40, \"source\": \"t\"},"
    " \"base_latency_us\": {\"value\": 10, \"source\": \"t\"},"
    " \"hop_latency_us\": {\"value\": 3, \"source\": \"t\"},"
    " \"uplink_oversubscription\": {\"value\": 1, \"source\": \"t\"}}}";

/*
 * spsim's time of NVLSTree, which NCCL picks at 64 MiB on 2 and on 4 such nodes (above).
 * α = base 10 + 2·log2(N)·3 + 2·1 µs (up to the NVSwitch and back): 18 µs on 2 nodes, 24 on 4.
 * NIC side: the double binary tree of the heads puts 2(N − 1)/N·S through a node's 8 · 40 =
 * 320 GB/s, busbw-equivalent 320·N(n − 1)/(n(N − 1)): 600 on 2 nodes, 413.3 on 4. NVLink side:
 * an NVLS AllReduce of 8 GPUs, 2·7/8·S at 480: busbw-equivalent 480·(n − 1)·8/(n·7) = 514.3
 * on 2 nodes, 531.4 on 4. NCCL's per-channel maximum perChMaxNVLSTreeBw (Hopper 57.7 on 2
 * nodes, 45.5 beyond) over the graph's 8 channels caps both: 461.6 and 364 GB/s (NCCL's bus
 * bandwidth, spsim's busbw for NVLSTree), algBw ×n/(2(n − 1)): 246.19 and 187.87 GB/s.
 * The fill (nvls_tree_fill_s): 16 NVLS CTAs (sm90) × 8 heads = 128 chunks in flight; the
 * chunk: nvlsChunkSize 128 KiB, treeMaxChunkSize the chunk size below 4 nodes and 64 KiB from 4;
 * 64 MiB is not below 4·128·128 KiB = 64 MiB nor below the smaller thresholds, so 128 KiB on 2
 * nodes, 64 KiB on 4 (S/128 = 512 KiB per op is more). Stages 1 + 2·log2(N): 3 and 5.
 * 2 nodes: 3·128 KiB·128/246.19 GB/s = 204.44 µs; 4 nodes: 5·64 KiB·128/187.87 GB/s = 223.26.
 */
START_TEST(spsim_times_nvls_tree)
{
    struct spsim_hardware *hw = testutil_hardware_text(round_hopper);
    struct spsim_error err = {0};
    struct spsim_collective_prediction p;
    double S = 1 << 26, K = 1024;
    double bus2 = 8 * 57.7e9, alg2 = bus2 * 16 / 30, fill2 = 3 * 128 * K * 128 / alg2;
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 16, 2, 1 << 26, &p, &err),
                     SPSIM_OK);
    ck_assert_str_eq(p.algorithm, "NVLSTree");
    ck_assert_str_eq(p.protocol, "Simple");
    ck_assert_double_eq_tol(fill2, 204.44e-6, 0.01e-6);
    ck_assert_double_eq_tol(p.latency_s, 18e-6 + fill2, 1e-15);
    ck_assert_double_eq_tol(p.time_s, 18e-6 + fill2 + 2.0 * 15 / 16 * S / bus2, 1e-15);
    double bus4 = 8 * 45.5e9, alg4 = bus4 * 32 / 62, fill4 = 5 * 64 * K * 128 / alg4;
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 32, 4, 1 << 26, &p, &err),
                     SPSIM_OK);
    ck_assert_str_eq(p.algorithm, "NVLSTree");
    ck_assert_double_eq_tol(fill4, 223.26e-6, 0.01e-6);
    ck_assert_double_eq_tol(p.latency_s, 24e-6 + fill4, 1e-15);
    ck_assert_double_eq_tol(p.time_s, 24e-6 + fill4 + 2.0 * 31 / 32 * S / bus4, 1e-15);
    /* The bytes each rank moves: 2(N − 1)/N·S/8 through its NIC share, 2·7/8·S on NVLink. */
    struct spsim_coll_time t;
    struct spsim_group g = {32, 8};
    ck_assert_int_eq(spsim_collective_time(hw, SPSIM_COLL_ALL_REDUCE, g, S, 1.0, &t), SPSIM_OK);
    ck_assert_int_eq(t.algo, SPSIM_NCCL_NVLS_TREE);
    ck_assert_double_eq_tol(t.network_bytes, 2.0 * 3 / 4 * S / 8, 1e-6);
    ck_assert_double_eq_tol(t.nvlink_bytes, 2.0 * 7 / 8 * S, 1e-6);
    spsim_hardware_destroy(hw);
}
END_TEST

/*
 * The fill below one chunk per op, and NCCL's chunk steps. 2 round-Hopper nodes, 4 MiB: 128
 * ops, and 4 MiB < 128·128 KiB = 16 MiB lowers the 128 KiB chunk to 64 KiB (below 4·16 MiB)
 * and to 32 KiB (below 16 MiB); 4 MiB/128 = 32 KiB per op, one chunk each: fill = 3·32 KiB·128 /
 * 246.19 GB/s = 3·S/algBw = 51.11 µs. At 16 MiB: 64 KiB chunks (16 MiB < 64 MiB but not below
 * 16 MiB), 128 KiB per op: 3·64 KiB·128/algBw = 102.22 µs.
 */
START_TEST(nvls_tree_fill_by_hand)
{
    struct spsim_hardware *hw = testutil_hardware_text(round_hopper);
    double alg = 8 * 57.7e9 * 16 / 30, K = 1024;
    struct spsim_coll_time t;
    struct spsim_group g = {16, 8};
    double S = 4 * K * K;
    ck_assert_int_eq(spsim_collective_time(hw, SPSIM_COLL_ALL_REDUCE, g, S, 1.0, &t), SPSIM_OK);
    ck_assert_int_eq(t.algo, SPSIM_NCCL_NVLS_TREE);
    ck_assert_double_eq_tol(t.latency_s, 18e-6 + 3 * S / alg, 1e-15);
    ck_assert_double_eq_tol(3 * S / alg, 51.11e-6, 0.01e-6);
    S = 16 * K * K;
    ck_assert_int_eq(spsim_collective_time(hw, SPSIM_COLL_ALL_REDUCE, g, S, 1.0, &t), SPSIM_OK);
    ck_assert_double_eq_tol(t.latency_s, 18e-6 + 3 * 64 * K * 128 / alg, 1e-15);
    struct spsim_nccl_comm c;
    spsim_nccl_comm_from_hw(hw, 16, 2, &c);
    uint32_t ops;
    double chunk;
    spsim_nccl_nvls_tree_split(&c, 1 << 30, &ops, &chunk);
    ck_assert_uint_eq(ops, 128);
    ck_assert_double_eq(chunk, 128 * K);
    spsim_hardware_destroy(hw);
}
END_TEST

/*
 * ncclNvlsTreeSm100Tuning (transport/nvls.cc) on DGX B200 nodes (NIC 400 Gb/s: minNetBw 50):
 * 2 nodes of 8 take 32 CTAs and treeMaxChunkSize 64 KiB (ppn <= 8, the NIC on the GPU's PCIe
 * switch, below 96 GB/s); 4 nodes take 24 CTAs and 64 KiB (NIC >= 48 on PATH_PXB); a DGX B300
 * (800 Gb/s: 100) on 4 nodes of 8 takes 24 CTAs and 256 KiB chunks. Heads: the NVLS graph's
 * 8 channels. So ops = 256, 192, 192.
 */
START_TEST(nvls_tree_split_on_blackwell)
{
    static const struct {
        const char *hw;
        uint32_t n, nodes, ops;
        double chunk;
    } x[] = {{"dgx-b200", 16, 2, 256, 64 * 1024},
             {"dgx-b200", 32, 4, 192, 64 * 1024},
             {"dgx-b300", 32, 4, 192, 256 * 1024}};
    for (size_t i = 0; i < sizeof(x) / sizeof(*x); i++) {
        struct spsim_hardware *hw = testutil_hardware(x[i].hw);
        struct spsim_nccl_comm c;
        spsim_nccl_comm_from_hw(hw, x[i].n, x[i].nodes, &c);
        ck_assert_uint_eq(c.graph[SPSIM_NCCL_NVLS_TREE].nchannels, 8);
        uint32_t ops;
        double chunk;
        spsim_nccl_nvls_tree_split(&c, 1e12, &ops, &chunk);
        ck_assert_uint_eq(ops, x[i].ops);
        ck_assert_double_eq(chunk, x[i].chunk);
        spsim_hardware_destroy(hw);
    }
}
END_TEST

/* nvlink.nvls 0 (no NVSwitch multicast, as on 4-GPU HGX boards): neither NVLS inside a node
 * nor NVLSTree across nodes; the same 2 nodes then run Ring or Tree at 64 MiB. */
START_TEST(nvls_absent_turns_both_off)
{
    static char text[sizeof(round_hopper) + 64];
    const char *at = strstr(round_hopper, "\"nccl_channels\"");
    ck_assert_ptr_nonnull(at);
    snprintf(text, sizeof(text), "%.*s\"nvls\": {\"value\": 0, \"source\": \"t\"}, %s",
             (int)(at - round_hopper), round_hopper, at);
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    ck_assert_msg(spsim_hardware_parse(text, strlen(text), "no-nvls", &hw, &err) == SPSIM_OK, "%s",
                  err.message);
    struct spsim_nccl_comm c;
    spsim_nccl_comm_from_hw(hw, 16, 2, &c);
    ck_assert(!c.nvls);
    struct spsim_collective_prediction p;
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 16, 2, 1 << 26, &p, &err),
                     SPSIM_OK);
    ck_assert_str_ne(p.algorithm, "NVLSTree");
    ck_assert_int_eq(spsim_collective_predict(hw, SPSIM_COLL_ALL_REDUCE, 8, 1, 1 << 26, &p, &err),
                     SPSIM_OK);
    ck_assert_str_eq(p.algorithm, "Ring");
    spsim_hardware_destroy(hw);
}
END_TEST

static Suite *
nvls_tree_suite(void)
{
    Suite *s = suite_create("nccl_nvls_tree");
    TCase *tc = tcase_create("nvls_tree");
    tcase_add_test(tc, nvls_graph_across_dgx_h100_nodes);
    tcase_add_test(tc, nvls_tree_two_dgx_h100);
    tcase_add_test(tc, nvls_tree_four_dgx_h100);
    tcase_add_test(tc, nvls_tree_fill_by_hand);
    tcase_add_test(tc, nvls_tree_split_on_blackwell);
    tcase_add_test(tc, nvls_tree_dgx_b200_inter_rule);
    tcase_add_test(tc, spsim_times_nvls_tree);
    tcase_add_test(tc, nvls_absent_turns_both_off);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return testutil_run(nvls_tree_suite());
}
