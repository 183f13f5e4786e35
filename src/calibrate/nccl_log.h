/* Reading nccl-tests logs: what the two passes over the lines share. */
#ifndef SPSIM_NCCL_LOG_H
#define SPSIM_NCCL_LOG_H

#include "internal.h"
#include "spsim/calibrate.h"

/* What ncclNvlsInit logs when the GPU has no NVSwitch multicast (transport/nvls.cc:279); the
 * value of a table's "nvls" info when the log says so. */
#define SPSIM_LOG_NO_NVLS "NVLS multicast support is not available"

/** The lines of a log, one at a time, as NUL-terminated copies without the line break. */
struct spsim_log_lines {
    const char *text;
    size_t len, pos;
    uint32_t lineno;
    char *buf; /* the current line */
    size_t cap;
    bool failed; /* out of memory */
};

/** Start reading `text` from its first line. */
void spsim_log_lines_init(struct spsim_log_lines *l, const char *text, size_t len);
/** The next line (owned by l, valid until the next call) and its 1-based number; NULL at the
 * end or when out of memory (l->failed). */
char *spsim_log_next(struct spsim_log_lines *l, uint32_t *lineno);
void spsim_log_lines_free(struct spsim_log_lines *l);

/** A set of host names, in the order first seen. */
struct spsim_log_hosts {
    char **name;
    size_t n, cap;
    struct spsim_strset index; /* name -> position: a log may name 10^5 hosts */
    size_t longest;            /* the longest name's length */
};

/** What a log says about itself (pass 1). */
struct spsim_log_facts {
    enum spsim_coll_op op; /* from "Collective test starting:"; COUNT when absent or unknown */
    uint32_t op_line;
    char op_text[64]; /* the binary name it gave */
    bool have_header, has_redop, has_root;
    uint32_t rank_lines, max_rank_plus1;
    struct spsim_log_hosts rank_hosts; /* "on HOST device" of the rank lines */
    struct spsim_log_hosts info_hosts; /* HOST of "HOST:PID:TID [D] NCCL" lines */
    uint32_t info_nranks, info_nnodes;
    bool info_nranks_mixed, info_nnodes_mixed;
    char gpu[128];
    bool gpu_mixed;
    char nccl_version[64], tests_version[32], driver[16], layout[64];
    bool nvls_unavailable; /* NCCL said its GPUs lack NVLS multicast (transport/nvls.cc) */
};

/** Split s (modified) at blanks into at most cap tokens; @return the count. */
size_t spsim_log_tokenize(char *s, char **tok, size_t cap);
/** A whole token as an unsigned decimal integer. */
bool spsim_log_parse_u64(const char *s, uint64_t *out);
/** A whole token as a finite number. */
bool spsim_log_parse_num(const char *s, double *out);
/** A number, or "N/A" (nccl-tests prints it in an unchecked #wrong/error column). */
bool spsim_log_is_numeric(const char *s);

/** The length of HOST when s starts with NCCL's debug prefix "HOST:PID:TID [DEV] NCCL "
 * (NCCL debug.cc), else 0. */
size_t spsim_log_nccl_prefix(const char *s);

/**
 * Where an NCCL debug line glued to the end of a data row starts. nccl-tests prints a row in
 * pieces and NCCL's output may land between them with no line break ("... sum -1host:12:34 [0]
 * NCCL INFO ..."); as the row's last field and the host name run together, the host must be one
 * of `known` (seen at the start of other lines). @return the offset, or -1 when there is none.
 */
long spsim_log_glued_prefix(const char *s, const struct spsim_log_hosts *known);

/** Pass 1: fill f from every line; `## KEY: VALUE` lines go to the table's info.
 * @return SPSIM_OK or SPSIM_ENOMEM */
int spsim_log_scan(struct spsim_log_facts *f, struct spsim_log_lines *lines,
                   struct spsim_bw_table *table);
void spsim_log_facts_free(struct spsim_log_facts *f);

#endif
