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
    uint64_t dispatch_nvlink[2], dispatch_rdma[2], combine_nvlink[2], combine_rdma[2];
};

/** One MoE layer's token traffic on one rank (nccl-tests sizes; see moe.c). */
struct spsim_moe_traffic {
    uint64_t tokens;                          /* T: tokens of this rank entering the layer */
    uint64_t local_experts;                   /* E / ep */
    uint64_t tokens_per_expert;               /* balanced expectation, rounded up */
    uint64_t rows;                            /* token copies this rank's experts compute */
    uint64_t dispatch, dispatch_bwd, combine; /* EP all-to-all, or the ETP×EP AG/RS */
    uint64_t etp_dispatch, etp_combine;       /* alltoall with etp > 1: the ETP AG and RS */
    struct spsim_moe_flex_traffic flex;       /* flex only */
};

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

/** Dense layers of an MoE model among chunk c of pipeline rank r, and among all of rank r. */
uint32_t spsim_moe_chunk_dense_layers(const struct spsim_model *model,
                                      const struct spsim_stage_plan *pl, uint32_t r, uint32_t c);
uint32_t spsim_moe_rank_dense_layers(const struct spsim_model *model,
                                     const struct spsim_stage_plan *pl, uint32_t r);

/** Activation bytes rank r holds at its peak, its MoE layers keeping kept[0] bytes each and its
 * dense layers kept[1] per micro-batch. */
uint64_t spsim_moe_rank_held_bytes(const struct spsim_model *model,
                                   const struct spsim_stage_plan *pl, uint32_t r, uint64_t micro,
                                   const uint64_t kept[2], bool *ok);

#endif
