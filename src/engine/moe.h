/* Mixture of experts: expert-parallel rules, groups and the dispatchers' traffic (moe.c). */
#ifndef SPSIM_MOE_H
#define SPSIM_MOE_H

#include "layer.h"
#include "stages.h"

/** Megatron's rules for ep, etp and the dispatcher (dense models: none may ask for experts).
 * @return SPSIM_OK or SPSIM_ECONFIG */
int spsim_moe_check(const struct spsim_model_shape *m, const struct spsim_parallel *p,
                    struct spsim_error *err);

/** The expert tensor-parallel size: etp, or tp when unset. */
uint32_t spsim_moe_etp(const struct spsim_parallel *p);

/** The expert data-parallel size tp·cp·dp / (ep·etp) (parallel_state.py). */
uint32_t spsim_moe_edp(const struct spsim_parallel *p);

/** The flex dispatcher's traffic per rank and MoE layer (moe_flex.c); [0] forward, [1]
 * backward. */
struct spsim_moe_flex_traffic {
    uint32_t ranks, per_domain, domains; /* n = etp·ep, g ranks per RDMA domain, N = n/g */
    double p_rank, p_domain;             /* chance a given rank / domain receives a token */
    uint64_t received;                   /* tokens a rank receives (n·T·p_rank, at most rows) */
    /* T·p_domain·N: the sends HybridEP's benchmark counts as RDMA (DeepEP hybrid-ep
     * tests/utils.py count_rdma_send_from_routing_map: one per destination domain, its own
     * included); 0 in one domain. */
    uint64_t domain_sends;
    uint64_t dispatch_nvlink[2], dispatch_rdma[2], combine_nvlink[2], combine_rdma[2];
};

/** One MoE layer's token traffic on one rank (nccl-tests sizes; see moe.c). */
struct spsim_moe_traffic {
    uint64_t tokens;                          /* T: tokens of this rank entering the layer */
    uint64_t local_experts;                   /* E / ep */
    uint64_t tokens_per_expert;               /* balanced expectation, rounded up */
    uint64_t rows;                            /* token copies this rank's experts compute */
    uint64_t dispatch, dispatch_bwd, combine; /* EP all-to-all, or the ETP×EP AG/RS */
    uint64_t dispatch_probs; /* alltoall: the EP all-to-all of the probabilities (both passes) */
    uint64_t etp_dispatch, etp_combine; /* alltoall with etp > 1: the ETP AG and RS */
    struct spsim_moe_flex_traffic flex; /* flex only */
    /* Routing imbalance (moe_imbalance.c): the critical rank's copies over the mean (1 when
     * balanced), and the copies of its own tokens a rank permutes before sending (alltoall;
     * not imbalanced). */
    double load_factor;
    uint64_t sent;
};

/** The load of one EP rank holding E/ep of E experts, N tokens each routed to k distinct
 * experts uniformly at random (moe_imbalance.c). */
struct spsim_moe_load {
    double q;           /* chance a token reaches the rank: 1 − C(E − E/ep, k)/C(E, k) */
    double mean, var;   /* its token copies over the N tokens (hypergeometric per token) */
    double z;           /* E[max of ep standard normals] */
    double factor;      /* the most-loaded rank's copies over the mean, capacity-capped */
    double flex_factor; /* the same for tokens counted once per rank (binomial N, q) */
};

/** The load of one rank; capacity: the capacity factor, 0 = dropless. */
void spsim_moe_load(uint32_t experts, uint32_t k, uint32_t ep, double tokens, double capacity,
                    struct spsim_moe_load *out);

/** E[max of n independent standard normals] (0 for n <= 1), by the exact integral. */
double spsim_moe_expected_max(uint32_t n);

/** The most-loaded rank's tokens over the mean for N tokens reaching a rank with probability
 * q each, z = E[max] of the ranks, capped by a capacity factor (> 0). */
double spsim_moe_rank_factor(double q, double tokens, double z, double capacity);

void spsim_moe_traffic(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                       struct spsim_moe_traffic *out, bool *ok);

/** The flex dispatcher's bytes for T tokens of a rank whose experts compute `rows` copies. */
void spsim_moe_flex_traffic(const struct spsim_model_shape *m, const struct spsim_layer_config *cfg,
                            uint64_t T, uint64_t rows, struct spsim_moe_flex_traffic *out);

/** Ranks of the flex group in one RDMA domain: the NVLink domain's (HybridEP), at most 8
 * (DeepEP); the whole group without hardware. */
uint32_t spsim_moe_flex_per_domain(const struct spsim_hardware *hw,
                                   const struct spsim_layer_config *cfg);

/** The tier the flex group's traffic crosses: NVLink inside one RDMA domain, the network with
 * one rank a domain, hierarchical otherwise. */
enum spsim_tier spsim_moe_flex_tier(const struct spsim_hardware *hw,
                                    const struct spsim_parallel *p);

struct spsim_coll_time;
/** Time of a flex dispatch or combine step (op->flex), forward or backward. */
int spsim_moe_flex_time(const struct spsim_hardware *hw, const struct spsim_op *op, bool backward,
                        struct spsim_coll_time *out);

/** Parameters of one MoE layer on one rank; *experts receives the routed experts' share. */
uint64_t spsim_moe_layer_parameters(const struct spsim_model_shape *m, uint32_t tp, uint32_t ep,
                                    uint32_t etp, uint64_t *experts, bool *ok);

/** Dense layers of an MoE model among chunk c of pipeline rank r, and among all of rank r; of
 * a dense model (first_last_layers_bf16), its BF16 layers. */
uint32_t spsim_moe_chunk_dense_layers(const struct spsim_model *model,
                                      const struct spsim_stage_plan *pl, uint32_t r, uint32_t c);
uint32_t spsim_moe_rank_dense_layers(const struct spsim_model *model,
                                     const struct spsim_stage_plan *pl, uint32_t r);

/** Activation bytes rank r holds at its peak, its MoE layers keeping kept[0] bytes each and its
 * dense layers kept[1] per micro-batch; a hybrid model's layers of kind k kept[k] (kept then has
 * SPSIM_LAYER_KIND_COUNT entries). */
uint64_t spsim_moe_rank_held_bytes(const struct spsim_model *model,
                                   const struct spsim_stage_plan *pl, uint32_t r, uint64_t micro,
                                   const uint64_t *kept, bool *ok);

/** A hybrid model's layers of `kind` among chunk c of pipeline rank r, and among all of rank r. */
uint32_t spsim_hybrid_chunk_layers(const struct spsim_model *model,
                                   const struct spsim_stage_plan *pl, uint32_t r, uint32_t c,
                                   enum spsim_layer_kind kind);
uint32_t spsim_hybrid_rank_layers(const struct spsim_model *model,
                                  const struct spsim_stage_plan *pl, uint32_t r,
                                  enum spsim_layer_kind kind);

#endif
