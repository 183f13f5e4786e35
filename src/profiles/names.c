/*
 * The names of the library's enums, one table each: profiles, sweep specs, JSON and CSV output,
 * explain and the command line all spell recompute modes, dtypes and collectives from here.
 */
#include "config.h"

#include <string.h>

#include "profiles.h"

const char *const spsim_dtype_names[SPSIM_DTYPE_COUNT + 1] = {"bf16", "fp16", "fp8",
                                                              "tf32", "fp32", NULL};
const char *const spsim_recompute_names[SPSIM_RECOMPUTE_COUNT + 1] = {"none", "selective", "full",
                                                                      NULL};
/* nccl-tests' collectives, in enum spsim_coll_op order (profile keys and --op values). */
const char *const spsim_coll_op_names[SPSIM_COLL_COUNT + 1] = {
    "all_reduce", "all_gather", "reduce_scatter", "send_recv", "all_to_all", NULL};

/* Megatron's --cp-comm-type values, in enum spsim_cp_comm order. */
const char *const spsim_cp_comm_names[SPSIM_CP_COMM_COUNT + 1] = {"p2p", "all_gather", "a2a",
                                                                  "a2a+p2p", NULL};

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
