/* The sweep engine's private layout, shared by src/sweep*.c. */
#ifndef SPSIM_SWEEP_INTERNAL_H
#define SPSIM_SWEEP_INTERNAL_H

#include <string.h>

#include "engine/eval.h"
#include "spsim/sweep.h"

/** The values of one axis. Integer axes hold the numbers; sp and the other switches 0 or 1;
 * flash_attn −1 (model), 0, 1; recompute and dtype the enum; model and hw index `names`. */
struct spsim_axis_values {
    bool set;
    uint32_t n;
    int64_t *v;
    char **names; /* model and hw: the arguments as given */
};

struct spsim_sweep_spec {
    struct spsim_axis_values axis[SPSIM_AXIS_COUNT];
    bool skip_inert; /* spsim_sweep_spec_optimize_defaults: skip points that repeat another */
};

struct spsim_sweep {
    uint32_t n[SPSIM_AXIS_COUNT];       /* values per axis (1 for an unset axis) */
    int64_t *v[SPSIM_AXIS_COUNT];       /* the values */
    uint64_t size;                      /* product of n; 0 when unindexed */
    double points;                      /* product of n, also beyond 2^62 */
    bool unindexed;                     /* optimize's space of 2^62 points or more */
    bool use_gpus;                      /* dp derived from the gpus axis */
    bool auto_pipeline;                 /* pp or vpp takes "auto" somewhere */
    uint8_t key_axes[SPSIM_AXIS_COUNT]; /* the layer key's multi-valued axes (sweep.c) */
    uint32_t nkey_axes;
    /* layer_inside[a]: a multi-valued axis that spsim_layer_config_from may read is a or nested
     * inside it (a change from a on can change the layer summary; sweep.c layer_inert_axes);
     * layer_inside[SPSIM_AXIS_COUNT] is false. */
    bool layer_inside[SPSIM_AXIS_COUNT + 1];
    /* The outermost axis from which on every multi-valued axis is gbs, distributed_optimizer
     * or overlap_grad_reduce (SPSIM_AXIS_COUNT: none): a point that only they moved to from
     * one that passed spsim_parallel_check is checked again for their rules alone
     * (spsim_parallel_recheck_batch). */
    int recheck_from;
    bool skip_inert;                         /* from the spec (optimize's space) */
    uint32_t nactive;                        /* axes of more than one value, */
    uint8_t active[SPSIM_AXIS_COUNT];        /* outermost first */
    uint32_t first_active[SPSIM_AXIS_COUNT]; /* index in active[] of the first at or inside a */
    struct spsim_model **models;             /* n[SPSIM_AXIS_MODEL] */
    struct spsim_hardware **hws;             /* n[SPSIM_AXIS_HW] */
    char **hw_names;                         /* the profiles' names, owned by hws */
    /* Names as the row layouts write them (CSV-quoted when needed, JSON strings). */
    char **csv_model, **csv_hw, **json_model, **json_hw;
    uint32_t cache_slots; /* layer summaries kept per thread (a power of two) */
};

/* Row formatting with a per-thread memory of each column's last value and text: consecutive
 * rows share most values, and a repeated value is copied instead of formatted again. */
/* The value "auto" of the pp and vpp axes (below their minimum, 1): derived per configuration as
 * spsim query derives an unset --pp/--vpp (sweep.c derive_pipeline). */
#define SPSIM_AXIS_AUTO 0

#define SPSIM_ROW_CELL 40 /* room for a cell's text; copied whole, so rows keep this slack */
struct spsim_row_column {
    const struct spsim_field *field; /* NULL for the model and hw columns */
    uint8_t name;                    /* 1: the model's name, 2: the hardware's; 0: a field */
    uint64_t last;                   /* the value's bytes, zero-extended */
    bool known;                      /* `last` and `text` are valid */
    uint8_t size;                    /* bytes of the value: 1, 4 or 8 */
    uint8_t len;
    char text[SPSIM_ROW_CELL];
    /* The value before `last` and its text: an inner on/off axis makes a column alternate
     * between two values (dense GPT-3 space: 17 cells formatted per row instead of 28). */
    bool known_prev;
    uint8_t prev_len;
    uint64_t prev;
    char prev_text[SPSIM_ROW_CELL];
    size_t offset; /* the field's offset in struct spsim_result */
    uint64_t mask; /* of a 64-bit load at `offset`: the value's `size` bytes, as raw_value's */
};

/* A column's last value, mask and offset (spsim_row_column's), packed. */
struct spsim_row_probe {
    uint64_t last, mask;
    size_t offset;
};

struct spsim_row_writer {
    enum spsim_row_format format;
    size_t ncolumns;
    struct spsim_row_column *columns;
    /* Text before each column: ',' for CSV, ',"key":' for JSONL (one string per column). */
    char **prefix;
    uint8_t *prefix_len;
    /* Rows after the first copy the last row's text (`row`, each cell at `start`) but for the
     * cells whose value changed, found by masked 64-bit loads: `wide_loads` when every field
     * column has 8 bytes of struct spsim_result from its offset, `primed` once `row` holds the
     * row of the names `last_model` and `last_hw`. */
    bool wide_loads, primed;
    char *row;
    size_t row_len;
    uint32_t *start, *changed;
    struct spsim_row_probe *probe; /* per column, packed for the search of changed cells */
    const char *last_model, *last_hw;
};

/** @param columns  "a,b,..." (spsim_row_columns_check'ed) or NULL for every column */
int spsim_row_writer_init(struct spsim_row_writer *w, enum spsim_row_format format,
                          const char *columns);
/** The CSV header of the writer's columns, '\n' included. @return the length; 0 if cap is
 * too small */
size_t spsim_row_writer_header(const struct spsim_row_writer *w, char *buf, size_t cap);

void spsim_row_writer_free(struct spsim_row_writer *w);
/** Write one row ('\n' included) at `out` (room: SPSIM_ROW_MAX plus the two names).
 * model and hw are already quoted for the layout. @return the length */
size_t spsim_row_writer_row(struct spsim_row_writer *w, const char *model, const char *hw,
                            const struct spsim_result *r, char *out);

/** Quote a name for a layout (CSV: RFC 4180 when needed; JSONL: a JSON string).
 * @return a new string (the caller frees it) or NULL when out of memory */
char *spsim_row_quote(enum spsim_row_format format, const char *name);

/* A worker: what one thread needs to evaluate points. */
struct spsim_cache_slot {
    bool used;
    /* The inputs of spsim_layer_evaluate this slot holds the summary of. */
    const struct spsim_model *model;
    const struct spsim_hardware *hw;
    struct spsim_layer_config cfg;
    uint64_t vpad;
    int rc; /* spsim_layer_evaluate's status for them */
    struct spsim_layer_summary sum;
};

/*
 * The best K of a stream (sweep --top, optimize's answers): a max-heap of at most K entries of
 * `size` bytes whose root is the worst kept, ordered by `worse` (a strict order: a tie goes to
 * the entry already kept). Static inline so that each caller's comparison and copy inline:
 * the sweep pushes at every valid point. `e` must not lie inside the heap.
 */
typedef bool (*spsim_heap_worse_fn)(const void *a, const void *b);

/* Put `e` at hole i (moving worse parents down) of a heap. */
static inline void
spsim_heap_sift_up(unsigned char *h, size_t size, uint64_t i, const void *e,
                   spsim_heap_worse_fn worse)
{
    for (; i > 0 && worse(e, h + (i - 1) / 2 * size); i = (i - 1) / 2)
        memcpy(h + i * size, h + (i - 1) / 2 * size, size);
    memcpy(h + i * size, e, size);
}

/* Put `e`, no worse than what hole i held, at hole i of a heap of n entries (moving worse
 * children up). */
static inline void
spsim_heap_sift_down(unsigned char *h, size_t size, uint64_t i, uint64_t n, const void *e,
                     spsim_heap_worse_fn worse)
{
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && worse(h + (c + 1) * size, h + c * size))
            c++;
        if (!worse(h + c * size, e))
            break;
        memcpy(h + i * size, h + c * size, size);
        i = c;
    }
    memcpy(h + i * size, e, size);
}

/* Offer `e` to the best k kept in heap[0 .. *n). */
static inline void
spsim_heap_push(void *heap, size_t size, uint64_t *n, uint64_t k, const void *e,
                spsim_heap_worse_fn worse)
{
    unsigned char *h = heap;
    if (*n < k)
        spsim_heap_sift_up(h, size, (*n)++, e, worse);
    else if (worse(h, e))
        spsim_heap_sift_down(h, size, 0, k, e, worse);
}

struct spsim_top_entry {
    uint64_t key; /* ordered: smaller is better */
    uint64_t index;
};

struct spsim_sweep_worker {
    const struct spsim_sweep *sw;
    struct spsim_layer_eval *le; /* scratch for cache misses */
    struct spsim_cache_slot *cache;
    uint32_t cache_slots; /* sw->cache_slots, or 1 for a worker of one point */
    /* The summary of the last point that asked for one and the outermost axis changed since
     * (SPSIM_AXIS_COUNT: none): while no layer key axis changed, the next point's is the same. */
    const struct spsim_layer_summary *last_sum;
    int last_sum_rc;
    int changed_since;
    /* Whether the last point checked passed spsim_parallel_check and was evaluated, and the
     * outermost axis changed since (SPSIM_AXIS_COUNT: none). */
    bool check_ok;
    int check_since;
    uint64_t summaries; /* made so far: their ids */
    struct spsim_coll_memo *memo;
    struct spsim_result res;
    struct spsim_row_writer rows;
    struct spsim_top_entry *top; /* max-heap of the best top_k seen */
    uint64_t ntop;
    uint64_t layer_evaluations; /* cache misses: spsim_layer_evaluate calls */
    char pad[64];               /* workers sit side by side: no cache line shared */
};

int spsim_sweep_worker_init(struct spsim_sweep_worker *w, const struct spsim_sweep *sw,
                            const struct spsim_sweep_options *opt);
void spsim_sweep_worker_free(struct spsim_sweep_worker *w);

/** Counts and text of one block of points. */
struct spsim_block {
    uint64_t begin, end;
    uint64_t evaluated, valid, feasible, written;
    struct spsim_text out, invalid; /* internal.h */
    int rc;                         /* SPSIM_OK or a failure that stops the run (ENOMEM) */
};

/** Evaluate points [b->begin, b->end) into the block (rows or the worker's top-K). */
void spsim_sweep_run_block(struct spsim_sweep_worker *w, const struct spsim_sweep_options *opt,
                           struct spsim_block *b);

/** The configuration of the point of digits `d` (every axis' digit), as spsim_sweep_point_at
 * decodes an index. */
void spsim_sweep_point_of(const struct spsim_sweep *sw, const uint32_t *d,
                          struct spsim_sweep_point *pt);

/** The configuration of the point of digits `d` from `pt`, the configuration of digits that
 * equal `d` on every axis before `from` (0: none; the sweep's walk, spsim_sweep_eval_digits). */
void spsim_sweep_point_update(const struct spsim_sweep *sw, const uint32_t *d, int from,
                              struct spsim_sweep_point *pt);

/** Set one axis' field of a point to the axis' digit `digit`: for an axis nothing else is derived
 * from (the sharding and overlap switches). */
void spsim_sweep_point_set(const struct spsim_sweep *sw, struct spsim_sweep_point *pt, int axis,
                           uint32_t digit);

/** The layer summary of point `pt` (digits `d` choose the cache slot; a hit needs every input
 * of spsim_layer_evaluate equal), from the worker's cache. @return its evaluation's status */
int spsim_sweep_summary(struct spsim_sweep_worker *w, const uint32_t *d,
                        const struct spsim_sweep_point *pt, const struct spsim_layer_summary **out,
                        struct spsim_error *err);

/** Evaluate the point of digits `d` into w->res; `pt` holds its configuration up to axis `from`
 * (0: none). @return SPSIM_OK or the point's failure */
int spsim_sweep_eval_digits(struct spsim_sweep_worker *w, const uint32_t *d, int from,
                            bool per_layer, struct spsim_sweep_point *pt, struct spsim_error *err);

/** Evaluate one point with a worker. per_layer: fill comm.per_layer. The result is in
 * w->res. @return SPSIM_OK or the point's failure (err filled when not NULL) */
int spsim_sweep_eval_point(struct spsim_sweep_worker *w, uint64_t index, bool per_layer,
                           struct spsim_sweep_point *pt, struct spsim_error *err);

#endif
