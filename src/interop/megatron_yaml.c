/*
 * YAML recipes read with libyaml into a flat table of keys (megatron_yaml.h): every mapping
 * key's dotted path, its scalar or its sequence of scalars, its line. Files are merged as
 * OmegaConf.merge merges them (Megatron-Bridge composes a recipe with override files so:
 * utils/omegaconf_utils.py), and OmegaConf's interpolations are resolved on the merged table.
 * What YAML would read one way and spsim another is refused: a duplicate key (YAML keeps the
 * last, silently), a second document, a NUL character inside a value ("1\0002" is not 1).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "megatron_yaml.h"

static uint64_t
hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool
live(const struct spsim_yaml *y, int32_t i)
{
    for (; i >= 0; i = y->e[i].parent)
        if (y->e[i].dead)
            return false;
    return true;
}

bool
spsim_yaml_live(const struct spsim_yaml *y, size_t i)
{
    return i < y->n && live(y, (int32_t)i);
}

/* The slot of `path`: its newest entry's, or the empty one where it would go. */
static size_t
slot_of(const struct spsim_yaml *y, const char *path)
{
    size_t mask = y->nslot - 1, s = (size_t)hash(path) & mask;
    while (y->slot[s] >= 0 && strcmp(y->e[y->slot[s]].path, path) != 0)
        s = (s + 1) & mask;
    return s;
}

/* The newest entry at `path` (live or not), or -1. */
static int32_t
find(const struct spsim_yaml *y, const char *path)
{
    return y->nslot ? y->slot[slot_of(y, path)] : -1;
}

const struct spsim_yaml_entry *
spsim_yaml_get(const struct spsim_yaml *y, const char *path)
{
    int32_t i = find(y, path);
    return i >= 0 && live(y, i) ? &y->e[i] : NULL;
}

/* Room for one more entry and its slot (the table at most half full). */
static bool
reserve(struct spsim_yaml *y)
{
    if (y->n == y->cap) {
        size_t cap = y->cap ? 2 * y->cap : 64;
        void *p = realloc(y->e, cap * sizeof(*y->e));
        if (!p)
            return false;
        y->e = p;
        y->cap = cap;
    }
    if (2 * (y->n + 1) <= y->nslot)
        return true;
    size_t nslot = y->nslot ? 2 * y->nslot : 128;
    int32_t *slot = malloc(nslot * sizeof(*slot));
    if (!slot)
        return false;
    for (size_t i = 0; i < nslot; i++)
        slot[i] = -1;
    free(y->slot);
    y->slot = slot;
    y->nslot = nslot;
    for (size_t i = 0; i < y->n; i++)
        y->slot[slot_of(y, y->e[i].path)] = (int32_t)i; /* in order: the newest wins */
    return true;
}

static void
free_values(struct spsim_yaml_entry *e)
{
    for (uint32_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
    e->v = NULL;
    e->n = 0;
}

void
spsim_yaml_free(struct spsim_yaml *y)
{
    for (size_t i = 0; i < y->n; i++) {
        free_values(&y->e[i]);
        free(y->e[i].path);
    }
    free(y->e);
    free(y->slot);
    for (size_t i = 0; i < y->norigins; i++)
        free(y->origins[i]);
    memset(y, 0, sizeof(*y));
}

/* Append a value (a copy of text[0, len)) to entry e. */
static bool
push_value(struct spsim_yaml_entry *e, const char *text, size_t len)
{
    char *t = malloc(len + 1);
    void *p = t ? realloc(e->v, (e->n + 1) * sizeof(*e->v)) : NULL;
    if (!p) {
        free(t);
        return false;
    }
    e->v = p;
    memcpy(t, text, len);
    t[len] = '\0';
    e->v[e->n++] = t;
    return true;
}

/* A new entry at `path`, replacing the newest one there. @return its index, or -1 (no memory) */
static int32_t
insert(struct spsim_yaml *y, const char *path, enum spsim_yaml_kind kind, int32_t parent,
       const char *origin)
{
    int32_t old = find(y, path);
    char *copy = strdup(path);
    if (!copy || !reserve(y))
        return free(copy), -1;
    if (old >= 0)
        y->e[old].dead = true;
    struct spsim_yaml_entry *e = &y->e[y->n];
    *e = (struct spsim_yaml_entry){.path = copy, .kind = kind, .origin = origin, .parent = parent};
    const char *dot = strrchr(copy, '.');
    e->name = dot ? dot + 1 : copy;
    y->slot[slot_of(y, copy)] = (int32_t)y->n;
    return (int32_t)y->n++;
}

int
spsim_yaml_set(struct spsim_yaml *y, const char *path, const char *value, int32_t parent,
               uint32_t line)
{
    const char *origin = parent >= 0 ? y->e[parent].origin : "";
    int32_t i = insert(y, path, value ? SPSIM_YAML_SCALAR : SPSIM_YAML_NULL, parent, origin);
    if (i < 0 || (value && !push_value(&y->e[i], value, strlen(value))))
        return SPSIM_ENOMEM;
    y->e[i].line = line;
    y->e[i].plain = true;
    y->e[i].resolving = 2;
    return SPSIM_OK;
}

/*
 * OmegaConf's interpolations (omegaconf/grammar): ${a.b} from the top, ${.b} beside the key,
 * ${..b} beside its mapping, and so on; text around them is kept ("x${.b}y"). A value that is
 * one interpolation of a sequence or a null takes it whole. Resolvers (${oc.env:X},
 * ${sum:...}), nested ${a.${b}} and a target that is a mapping or unresolved stay unresolved;
 * \${ is a literal "${".
 */
#define RESOLVE_DEPTH_MAX  32
#define RESOLVED_BYTES_MAX (64u << 20)

/* The path ref[0, n) names from entry e. @return false if it leaves the document */
static bool
target_path(const struct spsim_yaml_entry *e, const char *ref, size_t n, struct spsim_text *out)
{
    size_t dots = strspn(ref, ".");
    if (dots >= n)
        return false;
    size_t base = dots ? strlen(e->path) : 0;
    for (size_t d = 0; d < dots; d++) { /* one key, then one mapping, up per dot */
        if (base == 0)
            return false;
        while (base > 0 && e->path[base - 1] != '.')
            base--;
        if (base > 0)
            base--;
    }
    spsim_text_put(out, e->path, base);
    if (base)
        spsim_text_put(out, ".", 1);
    spsim_text_put(out, ref + dots, n - dots);
    return !out->failed;
}

static void resolve_entry(struct spsim_yaml *y, int32_t i, int depth);

/* The live entry ${ref[0, n)} names from e, resolved. @return its index, or -1 */
static int32_t
target(struct spsim_yaml *y, const struct spsim_yaml_entry *e, const char *ref, size_t n, int depth)
{
    struct spsim_text path = {.max = SPSIM_YAML_VALUE_MAX};
    int32_t t = -1;
    if (n && strcspn(ref, "${}:") >= n && depth < RESOLVE_DEPTH_MAX &&
        target_path(e, ref, n, &path))
        t = find(y, path.s);
    free(path.s);
    if (t < 0 || !live(y, t) || y->e[t].resolving == 1 || y->e[t].kind == SPSIM_YAML_MAP ||
        y->e[t].kind == SPSIM_YAML_COMPLEX)
        return -1;
    resolve_entry(y, t, depth + 1);
    return y->e[t].unresolved ? -1 : t;
}

/* text with its interpolations replaced, into out. @return false if one is unresolved */
static bool
interpolate(struct spsim_yaml *y, const struct spsim_yaml_entry *e, const char *text,
            struct spsim_text *out, int depth)
{
    for (const char *p = text; *p;) {
        if (p[0] == '\\' && p[1] == '$' && p[2] == '{') {
            spsim_text_put(out, "${", 2);
            p += 3;
            continue;
        }
        if (p[0] != '$' || p[1] != '{') {
            spsim_text_put(out, p++, 1);
            continue;
        }
        const char *end = strchr(p + 2, '}');
        int32_t t = end ? target(y, e, p + 2, (size_t)(end - p - 2), depth) : -1;
        if (t < 0 || y->e[t].kind != SPSIM_YAML_SCALAR)
            return false;
        spsim_text_put(out, y->e[t].v[0], strlen(y->e[t].v[0]));
        p = end + 1;
    }
    return !out->failed;
}

/* A value that is one interpolation of a sequence or a null takes its target whole. */
static bool
whole(struct spsim_yaml *y, struct spsim_yaml_entry *e, int depth)
{
    const char *v = e->v[0];
    size_t n = strlen(v);
    if (e->kind != SPSIM_YAML_SCALAR || n < 4 || strncmp(v, "${", 2) != 0 ||
        strcspn(v + 2, "}") != n - 3)
        return false;
    int32_t t = target(y, e, v + 2, n - 3, depth);
    if (t < 0 || y->e[t].kind == SPSIM_YAML_SCALAR)
        return false;
    struct spsim_yaml_entry *src = &y->e[t], copy = {.kind = src->kind};
    for (uint32_t k = 0; k < src->n; k++)
        if (!push_value(&copy, src->v[k], strlen(src->v[k]))) {
            free_values(&copy);
            e->unresolved = true;
            return true;
        }
    free_values(e);
    e->v = copy.v;
    e->n = copy.n;
    e->kind = copy.kind;
    return true;
}

static void
resolve_entry(struct spsim_yaml *y, int32_t i, int depth)
{
    struct spsim_yaml_entry *e = &y->e[i];
    if (e->resolving)
        return;
    e->resolving = 1;
    if (e->n == 1 && whole(y, e, depth)) {
        e->resolving = 2;
        return;
    }
    for (uint32_t k = 0; k < e->n && !e->unresolved; k++) {
        if (!strstr(e->v[k], "${"))
            continue;
        struct spsim_text out = {.max = SPSIM_YAML_VALUE_MAX};
        if (interpolate(y, e, e->v[k], &out, depth) &&
            y->resolved + out.len <= RESOLVED_BYTES_MAX) {
            y->resolved += out.len;
            free(e->v[k]);
            e->v[k] = out.s ? out.s : strdup("");
            e->unresolved = !e->v[k];
        } else {
            free(out.s);
            e->unresolved = true;
        }
    }
    e->resolving = 2;
}

int
spsim_yaml_resolve(struct spsim_yaml *y, struct spsim_error *err)
{
    (void)err;
    for (size_t i = 0; i < y->n; i++)
        if (live(y, (int32_t)i))
            resolve_entry(y, (int32_t)i, 0);
    return SPSIM_OK;
}

#if HAVE_YAML
#include <yaml.h>

/* A collection being read: a mapping (its entry, -1 for the document's) or a sequence. */
struct frame {
    int32_t ent;
    size_t plen; /* the path's length inside it */
    bool map, want_key, skip;
    bool flat; /* a sequence inside a key's sequence: its scalars go to that key, then "|" */
};

struct reader {
    struct spsim_yaml *y;
    const char *origin;
    struct spsim_error *err;
    char path[1024]; /* 65536 keys of at most 1 kB: 64 MiB of paths at most */
    size_t plen;
    uint32_t key_line, key_column; /* where the current key is written */
    struct frame *f;
    size_t nf, capf;
    int docs;
};

static int
oom(const struct reader *r)
{
    return spsim_fail(r->err, SPSIM_ENOMEM, "out of memory");
}

static int
fail_at(const struct reader *r, const yaml_event_t *ev, const char *what)
{
    return spsim_fail(r->err, SPSIM_EFIELD, "%s:%zu: %s%s%s", r->origin,
                      (size_t)ev->start_mark.line + 1, r->path, r->plen ? ": " : "", what);
}

/* A fault of the current key, at the key's line. */
static int
fail_key(const struct reader *r, const char *what)
{
    return spsim_fail(r->err, SPSIM_EFIELD, "%s:%u: %s: %s", r->origin, r->key_line, r->path, what);
}

/* A new entry at the current path; an older file's entry there is replaced, or, for a mapping
 * onto a mapping, kept and merged into. @return its index, or -1 (err set) */
static int32_t
add_entry(struct reader *r, enum spsim_yaml_kind kind, const yaml_event_t *ev)
{
    struct spsim_yaml *y = r->y;
    int32_t old = find(y, r->path);
    if (old >= 0 && y->e[old].origin == r->origin && live(y, old)) {
        char what[96];
        snprintf(what, sizeof(what),
                 "a duplicate key (first at line %u): YAML would keep the last value silently",
                 y->e[old].line);
        return fail_key(r, what), -1;
    }
    uint32_t line = r->key_line;
    if (old >= 0 && live(y, old) && kind == SPSIM_YAML_MAP && y->e[old].kind == SPSIM_YAML_MAP) {
        y->e[old].origin = r->origin; /* merged into: this file's now, for its duplicates */
        y->e[old].line = line;
        return old;
    }
    if (y->n >= SPSIM_YAML_KEYS_MAX)
        return fail_at(r, ev, "more than 65536 keys (spsim's cap)"), -1;
    int32_t i = insert(y, r->path, kind, r->nf ? r->f[r->nf - 1].ent : -1, r->origin);
    if (i < 0)
        return oom(r), -1;
    y->e[i].line = line;
    y->e[i].column = r->key_column;
    return i;
}

static int
push_frame(struct reader *r, int32_t ent, bool map, bool skip)
{
    if (r->nf == r->capf) {
        size_t cap = r->capf ? 2 * r->capf : 16;
        void *p = realloc(r->f, cap * sizeof(*r->f));
        if (!p)
            return oom(r);
        r->f = p;
        r->capf = cap;
    }
    r->f[r->nf++] =
        (struct frame){.ent = ent, .plen = r->plen, .map = map, .want_key = map, .skip = skip};
    return SPSIM_OK;
}

/* The value of the current key is read: back to the mapping's next key. */
static void
value_done(struct reader *r)
{
    if (!r->nf)
        return;
    struct frame *top = &r->f[r->nf - 1];
    if (top->map && !top->skip) {
        r->plen = top->plen;
        r->path[r->plen] = '\0';
        top->want_key = true;
    }
}

static int
collection_start(struct reader *r, const yaml_event_t *ev, bool map)
{
    if (r->nf >= SPSIM_YAML_DEPTH_MAX)
        return spsim_fail(r->err, SPSIM_EPARSE,
                          "%s: YAML nested deeper than %d levels at line %zu, column %zu",
                          r->origin, SPSIM_YAML_DEPTH_MAX, (size_t)ev->start_mark.line + 1,
                          (size_t)ev->start_mark.column + 1);
    if (!r->nf)
        return map ? push_frame(r, -1, true, false)
                   : fail_at(r, ev, "not a mapping of keys (a recipe is key: value)");
    struct frame *top = &r->f[r->nf - 1];
    if (top->skip || !top->map) {
        /* A key's sequence of sequences of scalars (Megatron's list form of a pipeline
         * layout) keeps its scalars, each inner sequence closed by "|"; anything deeper or a
         * mapping leaves the key unreadable (partial). */
        struct spsim_yaml_entry *e = &r->y->e[top->ent];
        bool flat = !top->skip && !map;
        e->kind = SPSIM_YAML_COMPLEX;
        e->partial |= !flat;
        int rc = push_frame(r, top->ent, false, true);
        if (rc == SPSIM_OK)
            r->f[r->nf - 1].flat = flat;
        return rc;
    }
    if (top->want_key)
        return fail_at(r, ev, "a key that is not a scalar (spsim reads key: value)");
    int32_t ent = add_entry(r, map ? SPSIM_YAML_MAP : SPSIM_YAML_SEQ, ev);
    return ent < 0 ? SPSIM_EFIELD : push_frame(r, ent, map, false);
}

static int
collection_end(struct reader *r)
{
    if (r->nf && r->f[r->nf - 1].flat && !push_value(&r->y->e[r->f[r->nf - 1].ent], "|", 1))
        return oom(r);
    if (r->nf)
        r->nf--;
    value_done(r);
    return SPSIM_OK;
}

/* A key: the path grows by it. */
static int
key(struct reader *r, const yaml_event_t *ev, const char *k, size_t n)
{
    if (n == 0)
        return fail_at(r, ev, "an empty key");
    if (r->plen + n + 2 > sizeof(r->path))
        return fail_at(r, ev, "a key path longer than 1 kB");
    if (r->plen)
        r->path[r->plen++] = '.';
    memcpy(r->path + r->plen, k, n + 1);
    r->plen += n;
    r->f[r->nf - 1].want_key = false;
    r->key_line = (uint32_t)ev->start_mark.line + 1;
    r->key_column = (uint32_t)ev->start_mark.column + 1;
    return SPSIM_OK;
}

static int
scalar(struct reader *r, const yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    if (!r->nf)
        return fail_at(r, ev, "not a mapping of keys (a recipe is key: value)");
    struct frame *top = &r->f[r->nf - 1];
    if (strlen(v) != n)
        return fail_at(r, ev, "a NUL character (\\0) inside a key or value");
    if (top->skip && !top->flat)
        return SPSIM_OK;
    if (top->map && top->want_key)
        return key(r, ev, v, n);
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (!top->map) {
        struct spsim_yaml_entry *e = &r->y->e[top->ent];
        if (e->n >= SPSIM_YAML_ITEMS_MAX)
            return fail_at(r, ev, "a sequence of more than 65536 items (spsim's cap)");
        return push_value(e, v, n) ? SPSIM_OK : oom(r);
    }
    bool null = plain && (!n || strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0 ||
                          strcmp(v, "???") == 0); /* ???: OmegaConf's missing value */
    int32_t ent = add_entry(r, null ? SPSIM_YAML_NULL : SPSIM_YAML_SCALAR, ev);
    if (ent < 0)
        return SPSIM_EFIELD;
    r->y->e[ent].plain = plain;
    if (!null && !push_value(&r->y->e[ent], v, n))
        return oom(r);
    value_done(r);
    return SPSIM_OK;
}

static int
event(struct reader *r, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        return ++r->docs > 1 ? fail_at(r, ev,
                                       "a second YAML document ('---'): spsim reads one "
                                       "document a file (give each as a file of its own)")
                             : SPSIM_OK;
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT:
        return collection_start(r, ev, ev->type == YAML_MAPPING_START_EVENT);
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        return collection_end(r);
    case YAML_SCALAR_EVENT:
        return scalar(r, ev);
    case YAML_ALIAS_EVENT:
        return r->nf && r->f[r->nf - 1].skip
                   ? SPSIM_OK
                   : fail_at(r, ev,
                             "an alias (*name): spsim does not resolve them (write the "
                             "value)");
    default:
        return SPSIM_OK;
    }
}

int
spsim_yaml_read(struct spsim_yaml *y, const char *text, size_t len, const char *origin,
                struct spsim_error *err)
{
    struct reader r = {.y = y, .origin = origin, .err = err};
    if (y->norigins >= SPSIM_YAML_FILES_MAX)
        return spsim_fail(err, SPSIM_EINVAL, "%s: more than %u YAML files", origin,
                          SPSIM_YAML_FILES_MAX);
    if (!(y->origins[y->norigins] = strdup(origin)))
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    r.origin = y->origins[y->norigins++];
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return spsim_fail(err, SPSIM_ENOMEM, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = SPSIM_OK;
    for (bool done = false; rc == SPSIM_OK && !done;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = spsim_fail(err, SPSIM_EPARSE, "%s:%zu: %s", r.origin, p.problem_mark.line + 1,
                            p.problem ? p.problem : "malformed YAML");
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = event(&r, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    free(r.f);
    return rc;
}

#else

int
spsim_yaml_read(struct spsim_yaml *y, const char *text, size_t len, const char *origin,
                struct spsim_error *err)
{
    (void)y;
    (void)text;
    (void)len;
    return spsim_fail(err, SPSIM_ENOTSUP, "%s: this build reads no YAML (libyaml was not found)",
                      origin);
}

#endif
