/* One collective on the hardware, with nccl-tests' conventions, for comparison with its
 * output. */
#ifndef SPSIM_COLLECTIVE_H
#define SPSIM_COLLECTIVE_H

#include "spsim/hardware.h"
#include "spsim/result.h"

#ifdef __cplusplus
extern "C" {
#endif

struct spsim_collective_prediction {
    enum spsim_coll_op op;
    uint32_t gpus;
    uint32_t nodes;
    uint32_t gpus_per_domain; /**< members of the group inside one NVLink domain */
    uint64_t size_bytes;      /**< nccl-tests size: AG/RS the whole buffer, AR the buffer */
    enum spsim_tier tier;     /**< hierarchical: NVLink inside domains, NICs across */
    double time_s;
    double latency_s;  /**< the α part of time_s */
    double algbw_GBps; /**< size / time, GB = 1e9 bytes */
    double busbw_GBps; /**< algbw × 2(n−1)/n (AR), (n−1)/n (AG, RS), 1 (send/recv) */
    /** NCCL's algorithm and protocol at this size, by its names (ncclAlgoStr, ncclProtoStr:
     * "Ring", "Tree", "NVLS", "PAT"; "LL", "LL128", "Simple"): NCCL's own choice across NVLink
     * domains, the profile's NVLS rule and NCCL's ring protocol inside one; "P2P" and "" for
     * send/recv and all-to-all. Static strings. */
    const char *algorithm;
    const char *protocol;
};

/**
 * Predict one collective as nccl-tests would time it.
 * @param gpus   ranks in the communicator (send_recv: each rank sends `size` to the next)
 * @param nodes  nodes they span; 0 = as few as the hardware allows (gpus / gpus_per_node)
 * @return SPSIM_OK, or SPSIM_EINVAL when gpus does not spread evenly over nodes or NVLink
 *         domains (err says why)
 */
SPSIM_API int spsim_collective_predict(const struct spsim_hardware *hw, enum spsim_coll_op op,
                                       uint32_t gpus, uint32_t nodes, uint64_t size_bytes,
                                       struct spsim_collective_prediction *out,
                                       struct spsim_error *err);

#ifdef __cplusplus
}
#endif

#endif
