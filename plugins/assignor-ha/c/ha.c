/* Kafka 4.4's HighAvailabilityTaskAssignor as a coordhost plugin in C: a
 * port of the Go plugin (plugins/assignor-ha: plugin.go, assign.go,
 * state.go, lag.go, bylag.go, loadtree.go, balance.go, standby.go,
 * movement.go, members.go) on the same dense arrays and in the same order
 * of operations, so that it answers every request with the same bytes as
 * the Go build (c_test.go checks it). Only the task assignor is here; the
 * probing policy stays in the Go build. Build (make plugins):
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor \
 *     -o assignor-ha-c.wasm plugins/assignor-ha/c/ha.c
 * Memory is reused from one call to the next: one arena for the call's
 * fixed-size tables (reset per call) and grow-only lists per client and
 * per member. An allocation failure traps (the host discards the instance
 * and counts it).
 */
#include <stdint.h>
#include "../../../testdata/plugins/c/abi1.h"

EXPORT("coordhost_abi_v1") void abi_v1(void) {}
EXPORT("coordhost_kinds") int32_t kinds(void) { return 1; }

#define MAX_TASKS 4194304
#define MAX_MEMBERS 65536
#define MAX_PROCESSES 65536
#define MAX_SUBS 65536
#define MAX_STRING 32767
#define END_UNKNOWN INT64_MAX       /* nobody reported the task's end offset */
#define LAG_RUNNING ((int64_t)-2)   /* the process runs the task as active */
#define RUNNING_MARK INT64_MIN      /* an offset standing for "runs it" */

/* ---- memory: a per-call arena and grow-only int lists ---- */

static uint8_t *arena; static size_t arena_cap, arena_used, arena_peak;

/* A returns zeroed memory for n elements of size bytes, valid until the
 * next call. When the arena is full, the call falls back to malloc and
 * the next call starts with an arena of the peak size. */
typedef struct spill { struct spill *next; } spill_t;
static spill_t *spills;
static void *A(size_t n, size_t size) {
    size_t bytes = ((n ? n : 1) * size + 7) & ~(size_t)7;
    arena_peak += bytes;
    if (arena_used + bytes <= arena_cap) {
        void *p = arena + arena_used;
        arena_used += bytes;
        memset(p, 0, bytes);
        return p;
    }
    spill_t *s = calloc(1, sizeof(spill_t) + bytes);
    if (!s) __builtin_trap();
    s->next = spills; spills = s;
    return s + 1;
}
static void arena_reset(void) {
    if (spills) {
        while (spills) { spill_t *n = spills->next; free(spills); spills = n; }
        free(arena);
        arena_cap = arena_peak + arena_peak / 4;
        arena = malloc(arena_cap);
        if (!arena) __builtin_trap();
    }
    arena_used = arena_peak = 0;
}

/* vec_t is an ascending task list (Kafka's TreeSet) or an output list. */
typedef struct { int32_t *v; int32_t n, cap; } vec_t;

static void vec_push(vec_t *s, int32_t t) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = realloc(s->v, sizeof(int32_t) * (size_t)s->cap);
        if (!s->v) __builtin_trap();
    }
    s->v[s->n++] = t;
}
/* search is the index of the first element >= t */
static int32_t search(const int32_t *v, int32_t n, int32_t t) {
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = (int32_t)((uint32_t)(lo + hi) >> 1);
        if (v[mid] < t) lo = mid + 1; else hi = mid;
    }
    return lo;
}
static int has(const int32_t *v, int32_t n, int32_t t) {
    int32_t i = search(v, n, t);
    return i < n && v[i] == t;
}
static void vec_insert(vec_t *s, int32_t t) {
    int32_t i = search(s->v, s->n, t);
    vec_push(s, 0);
    memmove(s->v + i + 1, s->v + i, sizeof(int32_t) * (size_t)(s->n - 1 - i));
    s->v[i] = t;
}
static void vec_remove(vec_t *s, int32_t t) {
    int32_t i = search(s->v, s->n, t);
    if (i == s->n || s->v[i] != t) __builtin_trap(); /* an internal invariant */
    memmove(s->v + i, s->v + i + 1, sizeof(int32_t) * (size_t)(s->n - 1 - i));
    s->n--;
}
/* vecs returns n grow-only lists, emptied; *pool keeps them across calls */
static vec_t *vecs(vec_t **pool, int32_t *have, int32_t n) {
    if (*have < n) {
        *pool = realloc(*pool, sizeof(vec_t) * (size_t)n);
        if (!*pool) __builtin_trap();
        memset(*pool + *have, 0, sizeof(vec_t) * (size_t)(n - *have));
        *have = n;
    }
    for (int32_t i = 0; i < n; i++) (*pool)[i].n = 0;
    return *pool;
}

/* ---- the request (SPEC.md 5.1), with every check of the Go decoder ---- */

typedef struct { const uint8_t *s; uint32_t n; } str_t;
typedef struct { str_t k, v; } kv_t;
typedef struct { int32_t task; int64_t off; } toff_t;
typedef struct {
    str_t id;
    int32_t process;
    kv_t *tags; int32_t n_tags;
    int32_t *active, n_active, *standby, n_standby, *warmup, n_warmup;
    toff_t *offs, *ends; int32_t n_offs, n_ends;
} mem_t;

static int32_t num_standby, num_warmup, nproc, nsub, nmem, nt;
static int64_t acceptable, interval;
static str_t *rack_tags; static int32_t n_rack_tags;
static kv_t *configs; static int32_t n_configs;
static str_t *subids; static int32_t *parts; static uint8_t *stateful;
static mem_t *members;
static str_t *procs;            /* process ids, in string order */
static uint8_t *task_stateful;  /* per task */
static int stateful_task(int32_t t) { return task_stateful[t]; }
static int32_t *id_order; /* member indices by ascending id */

/* strcmp of two byte strings, as Go compares strings */
static int str_cmp(str_t a, str_t b) {
    int c = memcmp(a.s, b.s, a.n < b.n ? a.n : b.n);
    return c ? c : (a.n < b.n ? -1 : a.n > b.n);
}

/* a uvarint of at most 10 bytes that fits 64 bits (binary.Uvarint) */
static uint64_t rd_uv(rd_t *r) {
    uint64_t v = 0;
    for (int i = 0; !r->err && i < 10; i++) {
        if (r->p >= r->end) break;
        uint8_t b = *r->p++;
        if (i == 9 && b > 1) break;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) return v;
    }
    r->err = 1;
    return 0;
}
static int64_t rd_sv(rd_t *r) { uint64_t u = rd_uv(r); return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }
/* a uvarint that fits a non-negative int32 <= max */
static int32_t rd_int(rd_t *r, int64_t max) {
    uint64_t v = rd_uv(r);
    if (!r->err && v > (uint64_t)max) r->err = 1;
    return r->err ? 0 : (int32_t)v;
}
/* a count of elements of at least min bytes each */
static int32_t rd_cnt(rd_t *r, int64_t max, int64_t min) {
    int32_t n = rd_int(r, max);
    if (!r->err && (int64_t)n * min > (int64_t)(r->end - r->p)) r->err = 1;
    return r->err ? 0 : n;
}
static str_t rd_str(rd_t *r) {
    str_t s;
    s.n = (uint32_t)rd_cnt(r, MAX_STRING, 1);
    s.s = r->p;
    if (!r->err) r->p += s.n;
    return s;
}
/* strings, strictly ascending if asc */
static str_t *rd_strs(rd_t *r, int64_t max, int asc, int32_t *n) {
    *n = rd_cnt(r, max, 1);
    str_t *out = A((size_t)*n, sizeof(str_t));
    for (int32_t i = 0; i < *n && !r->err; i++) {
        out[i] = rd_str(r);
        if (asc && i > 0 && str_cmp(out[i], out[i - 1]) <= 0) r->err = 1;
    }
    return out;
}
static kv_t *rd_pairs(rd_t *r, int32_t *n) {
    *n = rd_cnt(r, MAX_STRING, 2);
    kv_t *out = A((size_t)*n, sizeof(kv_t));
    for (int32_t i = 0; i < *n && !r->err; i++) {
        out[i].k = rd_str(r);
        out[i].v = rd_str(r);
        if (i > 0 && str_cmp(out[i].k, out[i - 1].k) <= 0) r->err = 1;
    }
    return out;
}
/* a taskset (offs == NULL) or taskoffsets; task indices must be < limit */
static void rd_tasks(rd_t *r, int32_t **tasks, toff_t **offs, int32_t *n, int32_t limit) {
    *n = rd_cnt(r, MAX_TASKS, offs ? 2 : 1);
    if (offs) *offs = A((size_t)*n, sizeof(toff_t)); else *tasks = A((size_t)*n, sizeof(int32_t));
    int64_t next = 0;
    for (int32_t i = 0; i < *n && !r->err; i++) {
        uint64_t gap = rd_uv(r);
        int64_t off = offs ? rd_sv(r) : 0;
        if (r->err || gap >= MAX_TASKS || next + (int64_t)gap >= MAX_TASKS) { r->err = 1; return; }
        int32_t t = (int32_t)(next + (int64_t)gap);
        if (offs) { (*offs)[i].task = t; (*offs)[i].off = off; } else (*tasks)[i] = t;
        next = t + 1;
    }
    if (!r->err && *n > 0 && next > limit) r->err = 2; /* out of range */
}
static void rd_tags(rd_t *r) {
    int32_t n = rd_cnt(r, INT32_MAX, 2);
    int64_t last = -1;
    for (int32_t i = 0; i < n && !r->err; i++) {
        uint64_t tag = rd_uv(r);
        if (!r->err && (int64_t)tag <= last) { r->err = 1; return; }
        last = (int64_t)tag;
        int32_t size = rd_cnt(r, INT32_MAX, 1);
        if (!r->err) r->p += size;
    }
}

static int id_less(int32_t a, int32_t b) { return str_cmp(members[a].id, members[b].id) < 0; }

/* merge_sort sorts idx[0:n) by less (stable and O(n log n) whatever the
 * keys); tmp holds n */
static void merge_sort(int32_t *idx, int32_t n, int32_t *tmp, int (*less)(int32_t, int32_t)) {
    if (n < 2) return;
    int32_t h = n / 2;
    merge_sort(idx, h, tmp, less);
    merge_sort(idx + h, n - h, tmp, less);
    int32_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = less(idx[j], idx[i]) ? idx[j++] : idx[i++];
    while (i < h) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, sizeof(int32_t) * (size_t)n);
}

/* sort_ids sorts idx[0:n) by member id */
static void sort_ids(int32_t *idx, int32_t n, int32_t *tmp) { merge_sort(idx, n, tmp, id_less); }

/* uuid_halves reads a UUID in its canonical form (8-4-4-4-12 hex digits)
 * as Java holds it: its most and least significant 64 bits, signed
 * (processorder.go). */
static int uuid_halves(str_t s, int64_t h[2]) {
    uint64_t v[2] = {0, 0};
    int digits = 0;
    if (s.n != 36) return 0;
    for (int32_t i = 0; i < 36; i++) {
        uint8_t c = (uint8_t)s.s[i], d;
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c != '-') return 0;
            continue;
        }
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return 0;
        v[digits / 16] = v[digits / 16] << 4 | d;
        digits++;
    }
    h[0] = (int64_t)v[0];
    h[1] = (int64_t)v[1];
    return 1;
}

/* proc_less orders process ids as Kafka Streams orders its clients
 * (processLess): UUIDs by java.util.UUID.compareTo, other ids after them
 * in string order */
static int proc_less(int32_t a, int32_t b) {
    int64_t ha[2], hb[2];
    int ua = uuid_halves(procs[a], ha), ub = uuid_halves(procs[b], hb);
    if (ua != ub) return ua;
    if (!ua) return str_cmp(procs[a], procs[b]) < 0;
    return ha[0] != hb[0] ? ha[0] < hb[0] : ha[1] < hb[1];
}


static const char *decode_member(rd_t *r, mem_t *m) {
    m->id = rd_str(r);
    rd_str(r);                              /* instance_id */
    m->process = rd_int(r, MAX_PROCESSES);
    rd_str(r);                              /* rack */
    m->tags = rd_pairs(r, &m->n_tags);
    rd_tasks(r, &m->active, NULL, &m->n_active, nt);
    rd_tasks(r, &m->standby, NULL, &m->n_standby, nt);
    rd_tasks(r, &m->warmup, NULL, &m->n_warmup, nt);
    rd_tasks(r, NULL, &m->offs, &m->n_offs, nt);
    rd_tasks(r, NULL, &m->ends, &m->n_ends, nt);
    rd_tags(r);
    if (r->err == 2) return "member: task index out of range";
    if (r->err) return 0;
    if (m->id.n == 0) return "member: empty member id";
    if (m->process >= nproc) return "member: process index out of range";
    return 0;
}

/* decode reads the AssignRequest in buf[0:len); 0 on success, else an
 * error text. Strings point into buf. */
static const char *decode(const uint8_t *buf, int32_t len) {
    rd_t r = { buf, buf + len, 0 };
    if (len > (256 << 20)) return "request exceeds the size limit";
    if (rd_u8(&r) != 1) return "not an AssignRequest (kind byte is not 1)";
    rd_str(&r);                             /* group_id */
    rd_int(&r, INT32_MAX);                  /* group_epoch */
    rd_skip(&r, 8);                         /* seed */
    num_standby = rd_int(&r, INT32_MAX);
    num_warmup = rd_int(&r, INT32_MAX);
    acceptable = rd_sv(&r);
    rack_tags = rd_strs(&r, MAX_STRING, 0, &n_rack_tags);
    configs = rd_pairs(&r, &n_configs);
    procs = rd_strs(&r, MAX_PROCESSES, 1, &nproc);
    if (r.err) return "truncated or corrupt AssignRequest header";
    nsub = rd_cnt(&r, MAX_SUBS, 3);
    subids = A((size_t)nsub, sizeof(str_t));
    parts = A((size_t)nsub, sizeof(int32_t));
    stateful = A((size_t)nsub, 1);
    int64_t total = 0;
    for (int32_t s = 0; s < nsub && !r.err; s++) {
        subids[s] = rd_str(&r);
        parts[s] = rd_int(&r, MAX_TASKS);
        stateful[s] = rd_u8(&r) & 1;
        total += parts[s];
        if (!r.err && s > 0 && str_cmp(subids[s], subids[s - 1]) <= 0) return "subtopology ids not strictly ascending";
        if (total > MAX_TASKS) return "more tasks than the limit";
    }
    if (r.err) return "truncated or corrupt subtopology table";
    nt = (int32_t)total;
    task_stateful = A((size_t)nt, 1);
    for (int32_t s = 0, t = 0; s < nsub; s++)
        for (int32_t p = 0; p < parts[s]; p++) task_stateful[t++] = stateful[s];
    nmem = rd_cnt(&r, MAX_MEMBERS, 11);
    members = A((size_t)nmem, sizeof(mem_t));
    for (int32_t i = 0; i < nmem && !r.err; i++) {
        const char *err = decode_member(&r, &members[i]);
        if (err) return err;
    }
    rd_tags(&r);
    if (r.err) return "truncated or corrupt AssignRequest";
    if (r.p != r.end) return "trailing bytes after the AssignRequest";
    id_order = A((size_t)nmem, sizeof(int32_t));
    for (int32_t i = 0; i < nmem; i++) id_order[i] = i;
    sort_ids(id_order, nmem, A((size_t)nmem, sizeof(int32_t)));
    for (int32_t i = 1; i < nmem; i++)
        if (str_cmp(members[id_order[i]].id, members[id_order[i - 1]].id) == 0) return "member id appears twice";
    return 0;
}

/* probing_interval is ProbingInterval: the config's value parsed as
 * strconv.ParseInt(v, 10, 64) and positive, or the default (10 min). */
static const char *probing_interval(void) {
    static const char key[] = "probing.rebalance.interval.ms";
    interval = 600000;
    for (int32_t i = 0; i < n_configs; i++) {
        str_t k = configs[i].k, v = configs[i].v;
        if (k.n != sizeof key - 1 || memcmp(k.s, key, k.n) != 0) continue;
        /* a sign is allowed, but only a positive value is */
        uint32_t j = v.n > 0 && v.s[0] == '+';
        int64_t x = 0;
        for (; j < v.n; j++) {
            if (v.s[j] < '0' || v.s[j] > '9' || x > (INT64_MAX - (v.s[j] - '0')) / 10) break;
            x = x * 10 + (v.s[j] - '0');
        }
        if (j < v.n || x <= 0) return "config probing.rebalance.interval.ms: want a positive number of ms";
        interval = x;
        return 0;
    }
    return 0;
}

/* ---- lags (lag.go) ---- */

typedef struct { int32_t task; int64_t lag; } lag_t;
static int64_t *end_off;                 /* per task; END_UNKNOWN when nobody knows */
static lag_t *plags; static int32_t *plag_at, *plag_n; /* per process, ascending by task */

static int toff_by_task(const void *a, const void *b) {
    int32_t x = ((const toff_t *)a)->task, y = ((const toff_t *)b)->task;
    return (x > y) - (x < y);
}
static int64_t lag_from(int32_t t, int64_t offset) {
    int64_t end = end_off[t];
    if (end == END_UNKNOWN) return END_UNKNOWN - offset;
    return offset > end ? end : end - offset;
}

/* own_end is ownEnd: the end offset m reported for task t (binary search
 * over its ends, ascending by task), or -1 when none usable. */
static int64_t own_end(const mem_t *m, int32_t t) {
    int32_t lo = 0, hi = m->n_ends;
    while (lo < hi) {
        int32_t mid = (int32_t)((uint32_t)(lo + hi) >> 1);
        if (m->ends[mid].task < t) lo = mid + 1; else hi = mid;
    }
    if (lo < m->n_ends && m->ends[lo].task == t && m->ends[lo].off >= 0 && m->ends[lo].off != END_UNKNOWN) return m->ends[lo].off;
    return -1;
}

/* compute_lags is ComputeLags: the end offset of a task is the largest any
 * member reported; a member's offset is measured against the end offset
 * it reported itself for the task when it did (own_end: it stands as
 * end_off - its own lag, 0 at or beyond its own end); a process's entry
 * for a task is LAG_RUNNING if one of its members runs it, else the lag of
 * the largest offset its members reported (negative reports count as
 * absent). */
static void compute_lags(void) {
    end_off = A((size_t)nt, sizeof(int64_t));
    for (int32_t t = 0; t < nt; t++) end_off[t] = -1;
    for (int32_t i = 0; i < nmem; i++)
        for (int32_t k = 0; k < members[i].n_ends; k++) {
            toff_t o = members[i].ends[k];
            if (o.off >= 0 && o.off != END_UNKNOWN && o.off > end_off[o.task]) end_off[o.task] = o.off;
        }
    for (int32_t t = 0; t < nt; t++) if (end_off[t] < 0) end_off[t] = END_UNKNOWN;
    /* every process's reports, its members' in request order */
    int32_t *cnt = A((size_t)nproc + 1, sizeof(int32_t));
    for (int32_t i = 0; i < nmem; i++) cnt[members[i].process + 1] += members[i].n_offs + members[i].n_active;
    for (int32_t p = 0; p < nproc; p++) cnt[p + 1] += cnt[p];
    toff_t *all = A((size_t)cnt[nproc], sizeof(toff_t));
    int32_t *fill = A((size_t)nproc, sizeof(int32_t));
    for (int32_t i = 0; i < nmem; i++) {
        mem_t *m = &members[i];
        toff_t *dst = all + cnt[m->process] + fill[m->process];
        for (int32_t k = 0; k < m->n_offs; k++) {
            toff_t o = m->offs[k];
            int64_t e = own_end(m, o.task);
            if (e >= 0 && o.off >= 0 && o.off != END_UNKNOWN) o.off = end_off[o.task] - (e > o.off ? e - o.off : 0);
            dst[k] = o;
        }
        for (int32_t k = 0; k < m->n_active; k++) { dst[m->n_offs + k].task = m->active[k]; dst[m->n_offs + k].off = RUNNING_MARK; }
        fill[m->process] += m->n_offs + m->n_active;
    }
    plags = A((size_t)cnt[nproc], sizeof(lag_t));
    plag_at = A((size_t)nproc, sizeof(int32_t));
    plag_n = A((size_t)nproc, sizeof(int32_t));
    int32_t out = 0;
    for (int32_t p = 0; p < nproc; p++) {
        toff_t *os = all + cnt[p];
        int32_t n = cnt[p + 1] - cnt[p];
        qsort(os, (size_t)n, sizeof(toff_t), toff_by_task); /* order within a task does not matter */
        plag_at[p] = out;
        for (int32_t i = 0; i < n;) {
            int32_t t = os[i].task; int64_t best = -1; int running = 0;
            for (; i < n && os[i].task == t; i++) {
                if (os[i].off == RUNNING_MARK) running = 1;
                else if (os[i].off > best) best = os[i].off;
            }
            if (running) plags[out++] = (lag_t){ t, LAG_RUNNING };
            else if (best >= 0) plags[out++] = (lag_t){ t, lag_from(t, best) };
        }
        plag_n[p] = out - plag_at[p];
    }
}
/* proc_lag is Lags.Lag: process p's lag for task t */
static int64_t proc_lag(int32_t p, int32_t t) {
    const lag_t *es = plags + plag_at[p];
    int32_t lo = 0, hi = plag_n[p];
    while (lo < hi) {
        int32_t mid = (int32_t)((uint32_t)(lo + hi) >> 1);
        if (es[mid].task < t) lo = mid + 1; else hi = mid;
    }
    return lo < plag_n[p] && es[lo].task == t ? es[lo].lag : end_off[t];
}
/* caught_up_at is Lags.caughtUpAt for a process whose lag for t is lag */
static int caught_up_at(int32_t t, int64_t lag) {
    if (lag == LAG_RUNNING || acceptable == INT64_MAX) return 1;
    return end_off[t] != END_UNKNOWN && lag >= 0 && lag <= acceptable;
}

/* ---- the clients (state.go) ---- */

/* A client is one process with at least one member (Kafka's ClientState),
 * in process order. */
typedef struct { int32_t key, pair; } tag_t;  /* interned client tag */
typedef struct {
    int32_t capacity;        /* members */
    int32_t proc;            /* process index */
    int32_t first;           /* member with the lowest id */
    tag_t *tags; int32_t n_tags;
} client_t;

static client_t *cl; static int32_t ncl;
static vec_t *act, *sby, *warm;          /* per client: ascending */
static vec_t *act_pool, *sby_pool, *warm_pool; static int32_t act_have, sby_have, warm_have;
static double *loads, *fewer, *more;    /* load, and with one task less / more */
static int tree_on; static int32_t tree_leaves, *tree_win;
static int32_t *skip; static int32_t nskip;
static int32_t *scratch;                 /* balance_pair's copy of a list */

static int32_t count(int32_t c) { return act[c].n + sby[c].n; }
static int has_active(int32_t c, int32_t t) { return has(act[c].v, act[c].n, t); }
static int has_standby(int32_t c, int32_t t) { return has(sby[c].v, sby[c].n, t); }
static int has_task(int32_t c, int32_t t) { return has_active(c, t) || has_standby(c, t); }
static int64_t lag(int32_t c, int32_t t) { return proc_lag(cl[c].proc, t); }
static int caught_up(int32_t c, int32_t t) { return caught_up_at(t, lag(c, t)); }

/* the load tree (loadtree.go): win[1] is the client with the least
 * (load, index); -1 is no client */
static int32_t lesser(int32_t a, int32_t b) {
    if (a < 0) return b;
    if (b < 0) return a;
    return (loads[b] < loads[a] || (loads[b] == loads[a] && b < a)) ? b : a;
}
static void tree_set(int32_t c, int32_t v) {
    int32_t i = tree_leaves + c;
    tree_win[i] = v;
    for (i >>= 1; i >= 1; i >>= 1) tree_win[i] = lesser(tree_win[2 * i], tree_win[2 * i + 1]);
}
static void tree_build(void) {
    int32_t n = 1;
    while (n < ncl) n <<= 1;
    tree_leaves = n;
    tree_win = A((size_t)2 * (size_t)n, sizeof(int32_t));
    for (int32_t i = 0; i < n; i++) tree_win[n + i] = i < ncl ? i : -1;
    for (int32_t i = n - 1; i >= 1; i--) tree_win[i] = lesser(tree_win[2 * i], tree_win[2 * i + 1]);
    tree_on = 1;
}

static void set_load(int32_t c) {
    double n = (double)count(c), cap = (double)cl[c].capacity;
    loads[c] = n / cap;
    fewer[c] = (n - 1.0) / cap;
    more[c] = (n + 1.0) / cap;
    if (tree_on) tree_set(c, c);
}
static void assign_active(int32_t c, int32_t t) {
    if (has_task(c, t)) __builtin_trap(); /* ClientState.assertNotAssigned */
    vec_insert(&act[c], t);
    set_load(c);
}
static void assign_standby(int32_t c, int32_t t) {
    if (has_task(c, t)) __builtin_trap();
    vec_insert(&sby[c], t);
    set_load(c);
}
static void unassign_active(int32_t c, int32_t t) { vec_remove(&act[c], t); set_load(c); }
static void unassign_standby(int32_t c, int32_t t) { vec_remove(&sby[c], t); set_load(c); }

/* The predicates the least-loaded searches take. */
enum { OK_ANY, OK_HAS_STANDBY, OK_NOT_HOLDING, OK_FREE_TAGS };
static uint32_t *used_gen; static uint32_t gen; /* tag pairs in use: used_gen[pair] == gen */
static int on_used_tag(int32_t c) {
    for (int32_t i = 0; i < cl[c].n_tags; i++) if (used_gen[cl[c].tags[i].pair] == gen) return 1;
    return 0;
}
static int ok(int kind, int32_t c, int32_t t) {
    switch (kind) {
    case OK_HAS_STANDBY: return has_standby(c, t);
    case OK_NOT_HOLDING: return !has_task(c, t);
    case OK_FREE_TAGS: return !has_task(c, t) && !on_used_tag(c);
    }
    return 1;
}

/* least_loaded is leastLoaded: the lowest load, ties to the lower client,
 * among those ok accepts (asked only of a client that would win) */
static int32_t least_loaded(int kind, int32_t t) {
    int32_t best = -1; double bw = 0;
    for (int32_t c = 0; c < ncl; c++)
        if ((best < 0 || loads[c] < bw) && ok(kind, c, t)) { best = c; bw = loads[c]; }
    return best;
}
/* least_active_loaded is leastActiveLoaded: by active load */
static int32_t least_active_loaded(void) {
    int32_t best = -1; double bw = 0;
    for (int32_t c = 0; c < ncl; c++) {
        double w = (double)act[c].n / (double)cl[c].capacity;
        if (best < 0 || w < bw) { best = c; bw = w; }
    }
    return best;
}
/* least_loaded_without is leastLoadedWithout: the tree's least client,
 * passing over the holders of t (out of the tree for the search) */
static int32_t least_loaded_without(int32_t t) {
    if (!tree_on) tree_build();
    int32_t best;
    for (;;) {
        int32_t c = tree_win[1];
        if (c < 0 || !has_task(c, t)) { best = c; break; }
        tree_set(c, -1);
        skip[nskip++] = c;
    }
    for (int32_t i = 0; i < nskip; i++) tree_set(skip[i], skip[i]);
    nskip = 0;
    return best;
}

/* ---- client tags: interned (key, value) pairs ---- */

static int32_t npairs, nkeys;
static int32_t *key_first;   /* per key: its first pair id; key_first[nkeys] = npairs */
static uint8_t *configured;  /* per key: in rack.aware.assignment.tags */

typedef struct { kv_t kv; int32_t client, slot; } tagref_t;
static int tagref_cmp(const void *a, const void *b) {
    const tagref_t *x = a, *y = b;
    int c = str_cmp(x->kv.k, y->kv.k);
    if (!c) c = str_cmp(x->kv.v, y->kv.v);
    return c;
}
/* intern_tags numbers the distinct keys and (key, value) pairs of the
 * clients' tags in byte order, so a key's pairs are consecutive ids and
 * their count is the key's number of distinct values. */
static void intern_tags(void) {
    int32_t n = 0;
    for (int32_t c = 0; c < ncl; c++) n += cl[c].n_tags;
    tagref_t *refs = A((size_t)n, sizeof(tagref_t));
    n = 0;
    for (int32_t c = 0; c < ncl; c++)
        for (int32_t i = 0; i < cl[c].n_tags; i++) {
            refs[n].kv = members[cl[c].first].tags[i];
            refs[n].client = c; refs[n].slot = i; n++;
        }
    qsort(refs, (size_t)n, sizeof(tagref_t), tagref_cmp);
    key_first = A((size_t)n + 1, sizeof(int32_t));
    configured = A((size_t)n + 1, 1);
    npairs = nkeys = 0;
    for (int32_t i = 0; i < n; i++) {
        int new_key = i == 0 || str_cmp(refs[i].kv.k, refs[i - 1].kv.k) != 0;
        if (i > 0 && (new_key || str_cmp(refs[i].kv.v, refs[i - 1].kv.v) != 0)) npairs++;
        if (new_key) {
            key_first[nkeys] = npairs;
            for (int32_t j = 0; j < n_rack_tags; j++)
                if (str_cmp(rack_tags[j], refs[i].kv.k) == 0) configured[nkeys] = 1;
            nkeys++;
        }
        cl[refs[i].client].tags[refs[i].slot] = (tag_t){ nkeys - 1, npairs };
    }
    if (n > 0) npairs++;
    key_first[nkeys] = npairs;
    used_gen = A((size_t)npairs + 1, sizeof(uint32_t));
    gen = 1;
}
/* same_tags is isAllowedTaskMovement: every tag of src is on dst */
static int same_tags(int32_t src, int32_t dst) {
    for (int32_t i = 0; i < cl[src].n_tags; i++) {
        int found = 0;
        for (int32_t j = 0; j < cl[dst].n_tags; j++)
            if (cl[dst].tags[j].pair == cl[src].tags[i].pair) { found = 1; break; }
        if (!found) return 0;
    }
    return 1;
}

/* ---- state setup (assign.go newState) ---- */

static const char *new_state(void) {
    if (acceptable < 0) return "acceptable_recovery_lag is negative";
    compute_lags();
    int32_t *index = A((size_t)nproc, sizeof(int32_t)); /* process -> client + 1 */
    for (int32_t i = 0; i < nmem; i++) index[members[i].process] = 1;
    ncl = 0;
    int32_t *order = A((size_t)nproc + 1, sizeof(int32_t)); /* the processes with members, in Kafka's order */
    for (int32_t p = 0; p < nproc; p++) if (index[p]) order[ncl++] = p;
    merge_sort(order, ncl, A((size_t)ncl + 1, sizeof(int32_t)), proc_less);
    cl = A((size_t)ncl, sizeof(client_t));
    for (int32_t c = 0; c < ncl; c++) {
        index[order[c]] = c + 1;
        cl[c].proc = order[c];
    }
    for (int32_t k = 0; k < nmem; k++) {      /* by id: the first is the lowest */
        int32_t i = id_order[k];
        client_t *c = &cl[index[members[i].process] - 1];
        if (c->capacity++ == 0) c->first = i;
    }
    for (int32_t c = 0; c < ncl; c++) {
        cl[c].n_tags = members[cl[c].first].n_tags;
        cl[c].tags = A((size_t)cl[c].n_tags, sizeof(tag_t));
    }
    act = vecs(&act_pool, &act_have, ncl);
    sby = vecs(&sby_pool, &sby_have, ncl);
    warm = vecs(&warm_pool, &warm_have, ncl);
    loads = A((size_t)ncl, sizeof(double));
    fewer = A((size_t)ncl, sizeof(double));
    more = A((size_t)ncl, sizeof(double));
    tree_on = 0;
    for (int32_t c = 0; c < ncl; c++) set_load(c);
    if (ncl == 0 && nt > 0) return "no members to assign tasks to";
    skip = A((size_t)ncl + 1, sizeof(int32_t));
    nskip = 0;
    intern_tags();
    return 0;
}

/* ---- balance (balance.go) ---- */

/* should_move is shouldMoveATask */
static int should_move(int32_t src, int32_t dst) {
    double skew = loads[src] - loads[dst];
    if (skew <= 0) return 0;
    double proposed = fewer[src] - more[dst];
    return proposed >= 0 && proposed < skew;
}
static int balance_pair(int standby, int32_t src, int32_t dst, int tag_aware) {
    vec_t *list = standby ? &sby[src] : &act[src];
    int32_t n = list->n;
    if (n == 0) return 0;
    memcpy(scratch, list->v, sizeof(int32_t) * (size_t)n); /* the walk sees the list as it was */
    int moved = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t t = scratch[i];
        if (!should_move(src, dst)) break;
        if (has_task(dst, t) || (tag_aware && !same_tags(src, dst))) continue;
        if (standby) { unassign_standby(src, t); assign_standby(dst, t); }
        else { unassign_active(src, t); assign_active(dst, t); }
        moved = 1;
    }
    return moved;
}
/* balance is balanceTasksOverThreads: every ordered pair of clients until
 * a full pass moves nothing. A source row is skipped whole when fewer[src]
 * is below every client's more[] (should_move needs fewer[src] >=
 * more[dst]); the least more[] is recomputed at a row's start after any
 * move. */
static void balance(int standby, int tag_aware) {
    for (int again = 1; again;) {
        again = 0;
        int stale = 1;
        double least = 0;
        for (int32_t src = 0; src < ncl; src++) {
            if (stale) {
                least = more[0];
                for (int32_t c = 1; c < ncl; c++)
                    if (more[c] < least) least = more[c];
                stale = 0;
            }
            if (fewer[src] < least) continue;
            for (int32_t dst = 0; dst < ncl; dst++)
                if (should_move(src, dst) && balance_pair(standby, src, dst, tag_aware)) again = stale = 1;
        }
    }
}

/* ---- standbys (standby.go) ---- */

static int32_t fill_standbys(int32_t t, int32_t n) {
    for (; n > 0; n--) {
        int32_t c = least_loaded_without(t);
        if (c < 0) break;
        assign_standby(c, t);
    }
    return n;
}

/* standbys_on_other_tags places task t's standbys on clients on tag values
 * not used so far, starting from owner; returns how many it could not. */
static int32_t standbys_on_other_tags(int32_t t, int32_t owner, int32_t replicas) {
    gen++;
    int32_t used_clients = 1, left = replicas, last = owner;
    for (;;) {
        for (int32_t i = 0; i < cl[last].n_tags; i++) {
            tag_t tg = cl[last].tags[i];
            if (!configured[tg.key]) continue;
            if (key_first[tg.key + 1] - key_first[tg.key] <= used_clients)
                for (int32_t p = key_first[tg.key]; p < key_first[tg.key + 1]; p++) used_gen[p] = 0;
            else used_gen[tg.pair] = gen;
        }
        int32_t c = least_loaded(OK_FREE_TAGS, t);
        if (c < 0) break;
        used_clients++;
        left--;
        assign_standby(c, t);
        last = c;
        if (left <= 0) break;
    }
    return left;
}

/* parse_int32 is strconv.ParseInt(s, 10, 32); 0 if it fails */
static int parse_int32(str_t s, int32_t *out) {
    uint32_t j = 0; int neg = 0;
    if (j < s.n && (s.s[j] == '+' || s.s[j] == '-')) neg = s.s[j++] == '-';
    if (j == s.n) return 0;
    int64_t x = 0;
    for (; j < s.n; j++) {
        if (s.s[j] < '0' || s.s[j] > '9') return 0;
        x = x * 10 + (s.s[j] - '0');
        if (x > (int64_t)INT32_MAX + neg) return 0;
    }
    *out = (int32_t)(neg ? -x : x);
    return 1;
}

typedef struct { uint32_t bucket; int32_t task, left; } pend_t;
static int pend_cmp(const void *a, const void *b) {
    const pend_t *x = a, *y = b;
    if (x->bucket != y->bucket) return x->bucket < y->bucket ? -1 : 1;
    return (x->task > y->task) - (x->task < y->task);
}

/* tag_aware_standbys is ClientTagAwareStandbyTaskAssignor.assign; the
 * replicas it cannot place go to the least-loaded clients afterwards in
 * the iteration order of Kafka's HashMap<TaskId, Integer> of pending
 * tasks (javaHashMapOrder in standby.go). */
static void tag_aware_standbys(int32_t replicas) {
    int32_t *owner = A((size_t)nt, sizeof(int32_t));
    for (int32_t t = 0; t < nt; t++) owner[t] = -1;
    for (int32_t c = 0; c < ncl; c++) for (int32_t i = 0; i < act[c].n; i++) owner[act[c].v[i]] = c;
    pend_t *pend = A((size_t)nt, sizeof(pend_t));
    int32_t np = 0, inserted = 0;
    for (int32_t t = 0; t < nt; t++) inserted += stateful_task(t);
    uint32_t capacity = 16;
    while ((int64_t)inserted > (int64_t)capacity * 3 / 4) capacity <<= 1;
    for (int32_t t = 0, s = 0, base = 0; t < nt; t++) {
        while (t >= base + parts[s]) base += parts[s++];
        if (!stateful_task(t) || owner[t] < 0) continue;
        int32_t left = standbys_on_other_tags(t, owner[t], replicas);
        if (left <= 0) continue;
        int32_t id = s;
        parse_int32(subids[s], &id);
        uint32_t h = ((31u + (uint32_t)id) * 31u + (uint32_t)(t - base)) * 31u;
        pend[np++] = (pend_t){ (h ^ (h >> 16)) & (capacity - 1), t, left };
    }
    qsort(pend, (size_t)np, sizeof(pend_t), pend_cmp);
    for (int32_t i = 0; i < np; i++) fill_standbys(pend[i].task, pend[i].left);
}

/* assign_standbys is assignStandbyReplicaTasks */
static void assign_standbys(void) {
    if (num_standby <= 0) return;
    int tag_aware = n_rack_tags > 0;
    if (tag_aware) tag_aware_standbys(num_standby);
    else for (int32_t t = 0; t < nt; t++) if (stateful_task(t)) fill_standbys(t, num_standby);
    tree_on = 0; /* no later search uses it */
    balance(1, tag_aware);
}

/* ---- lag index (bylag.go) ---- */

/* Per task, the clients with a lag entry for it, ordered by (lag, client)
 * as Kafka's tasksToClientByLag; every other client has the task's no-state
 * lag, end_off[t]. */
typedef struct { int32_t c; int64_t lag; } clag_t;
static clag_t *bylag; static int32_t *bylag_at; /* task t: bylag[bylag_at[t] : bylag_at[t+1]) */

static int clag_cmp(const void *a, const void *b) {
    const clag_t *x = a, *y = b;
    if (x->lag != y->lag) return x->lag < y->lag ? -1 : 1;
    return (x->c > y->c) - (x->c < y->c);
}
static void new_lag_index(void) {
    bylag_at = A((size_t)nt + 1, sizeof(int32_t));
    for (int32_t c = 0; c < ncl; c++) {
        const lag_t *es = plags + plag_at[cl[c].proc];
        for (int32_t i = 0; i < plag_n[cl[c].proc]; i++) bylag_at[es[i].task + 1]++;
    }
    for (int32_t t = 0; t < nt; t++) bylag_at[t + 1] += bylag_at[t];
    bylag = A((size_t)bylag_at[nt], sizeof(clag_t));
    int32_t *fill = A((size_t)nt, sizeof(int32_t));
    for (int32_t c = 0; c < ncl; c++) {
        const lag_t *es = plags + plag_at[cl[c].proc];
        for (int32_t i = 0; i < plag_n[cl[c].proc]; i++)
            bylag[bylag_at[es[i].task] + fill[es[i].task]++] = (clag_t){ c, es[i].lag };
    }
    for (int32_t t = 0; t < nt; t++)
        qsort(bylag + bylag_at[t], (size_t)(bylag_at[t + 1] - bylag_at[t]), sizeof(clag_t), clag_cmp);
}
static int bylag_has(int32_t t, int32_t c) {
    for (int32_t i = bylag_at[t]; i < bylag_at[t + 1]; i++) if (bylag[i].c == c) return 1;
    return 0;
}
/* min_lag is the least lag any client has for t */
static int64_t min_lag(int32_t t) {
    int32_t n = bylag_at[t + 1] - bylag_at[t];
    int64_t least = end_off[t];
    if (n == ncl) least = bylag[bylag_at[t]].lag;
    else if (n > 0 && bylag[bylag_at[t]].lag < least) least = bylag[bylag_at[t]].lag;
    return least;
}
static int int_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}
/* append_caught_up writes the clients caught up on t, ascending, to out;
 * returns how many */
static int32_t append_caught_up(int32_t *out, int32_t t) {
    int32_t n = 0;
    if (!caught_up_at(t, end_off[t])) {     /* only clients with an entry can be */
        for (int32_t i = bylag_at[t]; i < bylag_at[t + 1]; i++)
            if (caught_up_at(t, bylag[i].lag)) out[n++] = bylag[i].c;
        qsort(out, (size_t)n, sizeof(int32_t), int_cmp);
        return n;
    }
    for (int32_t c = 0; c < ncl; c++)
        if (!bylag_has(t, c) || caught_up(c, t)) out[n++] = c;
    return n;
}

/* ---- movements (movement.go) ---- */

/* A movement is Kafka's TaskMovement: key is the queue order (caught-up
 * clients in the high half, the task in the low half), dst the client
 * that is not caught up. */
typedef struct { uint64_t key; int32_t dst; } move_t;
static move_t *queue; static int32_t qlen;

/* q_add and q_poll reproduce java.util.PriorityQueue's siftUp and
 * siftDown, so equal keys leave in Kafka's order. */
static void q_add(int32_t t, int32_t dst, int32_t caught) {
    move_t m = { (uint64_t)(uint32_t)caught << 32 | (uint64_t)(uint32_t)t, dst };
    int32_t k = qlen++;
    while (k > 0) {
        int32_t parent = (k - 1) / 2;
        if (m.key >= queue[parent].key) break;
        queue[k] = queue[parent];
        k = parent;
    }
    queue[k] = m;
}
static move_t q_poll(void) {
    move_t top = queue[0];
    int32_t n = --qlen;
    move_t x = queue[n];
    if (n > 0) {
        int32_t k = 0;
        for (int32_t half = n / 2; k < half;) {
            int32_t child = 2 * k + 1, right = child + 1;
            if (right < n && queue[child].key > queue[right].key) child = right;
            if (x.key <= queue[child].key) break;
            queue[k] = queue[child];
            k = child;
        }
        queue[k] = x;
    }
    return top;
}

static int64_t budget;                   /* warm-ups left; may go negative */
static int32_t *caught_n;                /* per task: caught-up clients */
static int32_t *caught_by, *caught_at;   /* per stateful task, ascending; NULL: every client */

static void new_movements(void) {
    budget = num_warmup;
    caught_n = A((size_t)nt, sizeof(int32_t));
    new_lag_index();
    caught_by = NULL;
    if (acceptable == INT64_MAX) {
        for (int32_t t = 0; t < nt; t++) if (stateful_task(t)) caught_n[t] = ncl;
        return;
    }
    int32_t *at = A((size_t)nt + 1, sizeof(int32_t));
    int32_t cap = 0;
    for (int32_t t = 0; t < nt; t++) {
        if (!stateful_task(t)) continue;
        if (caught_up_at(t, end_off[t])) cap += ncl;
        else cap += bylag_at[t + 1] - bylag_at[t];
    }
    caught_by = A((size_t)cap, sizeof(int32_t));
    caught_at = at;
    for (int32_t t = 0, n = 0; t < nt; t++) {
        at[t] = n;
        if (stateful_task(t)) n += caught_n[t] = append_caught_up(caught_by + n, t);
        at[t + 1] = n;
    }
}
static int is_caught_up(int32_t c, int32_t t) {
    if (!caught_by) return 1;
    return has(caught_by + caught_at[t], caught_at[t + 1] - caught_at[t], c);
}
/* needs_move is taskIsNotCaughtUpOnClientAndOtherMoreCaughtUpClientsExist */
static int needs_move(int32_t t, int32_t c) {
    return !is_caught_up(c, t) && min_lag(t) < lag(c, t);
}
/* most_caught_up is mostCaughtUpEligibleClient: in (lag, client) order,
 * the first client before dst that ok accepts; -1 if none */
static int32_t most_caught_up(int32_t t, int32_t dst, int kind) {
    int64_t dlag = lag(dst, t);
#define BEFORE(l, c) ((l) < dlag || ((l) == dlag && (c) < dst))
    int32_t best = -1; int64_t blag = 0;
    for (int32_t i = bylag_at[t]; i < bylag_at[t + 1]; i++) {
        if (!BEFORE(bylag[i].lag, bylag[i].c)) break;
        if (ok(kind, bylag[i].c, t)) { best = bylag[i].c; blag = bylag[i].lag; break; }
    }
    int64_t nostate = end_off[t];
    for (int32_t c = 0; c < ncl; c++) {
        if (!BEFORE(nostate, c) || (best >= 0 && (nostate > blag || (nostate == blag && c > best)))) break;
        if (!bylag_has(t, c) && ok(kind, c, t)) return c;
    }
#undef BEFORE
    return best;
}
/* caught_up_least_loaded is the caught-up ConstrainedPrioritySet's poll */
static int32_t caught_up_least_loaded(int32_t t, int kind) {
    if (!caught_by) return least_loaded(kind, t);
    int32_t best = -1; double bw = 0;
    for (int32_t i = caught_at[t]; i < caught_at[t + 1]; i++) {
        int32_t c = caught_by[i];
        if ((best < 0 || loads[c] < bw) && ok(kind, c, t)) { best = c; bw = loads[c]; }
    }
    return best;
}
static int is_warmup(int32_t c, int32_t t) { return has(warm[c].v, warm[c].n, t); }
static void set_warmup(int32_t c, int32_t t) { if (!is_warmup(c, t)) vec_insert(&warm[c], t); }
static int take_warmup(void) { return budget-- > 0; }

/* swap is swapStandbyAndActive */
static void swap(int32_t t, int32_t src, int32_t dst) {
    unassign_standby(src, t);
    assign_active(src, t);
    unassign_active(dst, t);
    assign_standby(dst, t);
}
/* move_active is moveActiveAndTryToWarmUp */
static void move_active(int32_t t, int32_t src, int32_t dst) {
    assign_active(src, t);
    unassign_active(dst, t);
    if (take_warmup()) { assign_standby(dst, t); set_warmup(dst, t); }
}

static void queue_room(void) {
    int32_t n = 0;
    for (int32_t c = 0; c < ncl; c++) n += act[c].n > sby[c].n ? act[c].n : sby[c].n;
    queue = A((size_t)n, sizeof(move_t));   /* a bound of either phase's queue */
    qlen = 0;
}

/* active_movements is assignActiveTaskMovements; returns the movements */
static int32_t active_movements(void) {
    for (int32_t c = 0; c < ncl; c++)
        for (int32_t i = 0; i < act[c].n; i++) {
            int32_t t = act[c].v[i];
            if (needs_move(t, c)) q_add(t, c, caught_n[t]);
        }
    int32_t n = qlen;
    while (qlen > 0) {
        move_t mv = q_poll();
        int32_t t = (int32_t)(uint32_t)mv.key, dst = mv.dst, src;
        if ((src = caught_up_least_loaded(t, OK_HAS_STANDBY)) >= 0) { swap(t, src, dst); continue; }
        if ((src = caught_up_least_loaded(t, OK_ANY)) >= 0) { move_active(t, src, dst); continue; }
        src = most_caught_up(t, dst, OK_ANY);
        if (src < 0) __builtin_trap(); /* Kafka: IllegalStateException */
        if (has_standby(src, t)) swap(t, src, dst); else move_active(t, src, dst);
    }
    return n;
}
/* standby_movements is assignStandbyTaskMovements; returns the movements */
static int32_t standby_movements(void) {
    for (int32_t c = 0; c < ncl; c++)
        for (int32_t i = 0; i < sby[c].n; i++) {
            int32_t t = sby[c].v[i];
            if (!is_warmup(c, t) && needs_move(t, c)) q_add(t, c, caught_n[t]);
        }
    int32_t n = 0;
    while (qlen > 0) {
        move_t mv = q_poll();
        int32_t t = (int32_t)(uint32_t)mv.key, dst = mv.dst;
        int32_t src = caught_up_least_loaded(t, OK_NOT_HOLDING);
        if (src < 0) src = most_caught_up(t, dst, OK_NOT_HOLDING);
        if (src < 0) continue; /* every more caught-up client holds it */
        assign_standby(src, t);
        if (take_warmup()) set_warmup(dst, t); else unassign_standby(dst, t);
        n++;
    }
    return n;
}

/* ---- split over members (members.go) ---- */

static vec_t *oa, *os_, *ow;            /* per member: active, standby, warmup */
static vec_t *oa_pool, *os_pool, *ow_pool; static int32_t oa_have, os_have, ow_have;

/* held_before is heldBefore: member m ran t as active, or (stateful) as
 * standby or warm-up or with state on disk */
static int held_before(const mem_t *m, int32_t t, int st) {
    if (has(m->active, m->n_active, t)) return 1;
    if (!st) return 0;
    if (has(m->standby, m->n_standby, t) || has(m->warmup, m->n_warmup, t)) return 1;
    int32_t lo = 0, hi = m->n_offs;
    while (lo < hi) {
        int32_t mid = (int32_t)((uint32_t)(lo + hi) >> 1);
        if (m->offs[mid].task < t) lo = mid + 1; else hi = mid;
    }
    return lo < m->n_offs && m->offs[lo].task == t && m->offs[lo].off >= 0;
}

/* Where pass gives a task: the member's active list, or its standby or
 * warm-up list as the client's warm-ups say. */
enum { GIVE_ACTIVE, GIVE_REPLICA };
static void give(int how, int32_t c, int32_t mi, int32_t t) {
    if (how == GIVE_ACTIVE) vec_push(&oa[mi], t);
    else if (is_warmup(c, t)) vec_push(&ow[mi], t);
    else vec_push(&os_[mi], t);
}

/* pass is splitter.pass: each member (by id) first keeps tasks it held
 * before up to an even share; the rest go to the least-loaded member. */
static void pass(const int32_t *ms, int32_t nm, int32_t *load, const int32_t *tasks, int32_t n,
                 int how, int32_t c, int st) {
    if (n == 0) return;
    int32_t share = (n + nm - 1) / nm;
    uint8_t *taken = A((size_t)n, 1);
    for (int32_t k = 0; k < nm; k++) {
        int32_t got = 0;
        for (int32_t i = 0; i < n; i++)
            if (!taken[i] && got < share && held_before(&members[ms[k]], tasks[i], st)) {
                taken[i] = 1; got++; load[k]++;
                give(how, c, ms[k], tasks[i]);
            }
    }
    for (int32_t i = 0; i < n; i++) {
        if (taken[i]) continue;
        int32_t best = 0;
        for (int32_t k = 0; k < nm; k++) if (load[k] < load[best]) best = k;
        load[best]++;
        give(how, c, ms[best], tasks[i]);
    }
}

/* split_over_members is splitOverMembers, client by client */
static void split_over_members(void) {
    oa = vecs(&oa_pool, &oa_have, nmem);
    os_ = vecs(&os_pool, &os_have, nmem);
    ow = vecs(&ow_pool, &ow_have, nmem);
    int32_t *client_of = A((size_t)nproc, sizeof(int32_t));
    for (int32_t c = 0; c < ncl; c++) client_of[cl[c].proc] = c;
    /* each client's members by id: a counting sort of the id order */
    int32_t *mat = A((size_t)ncl + 1, sizeof(int32_t));
    for (int32_t c = 0; c < ncl; c++) mat[c + 1] = mat[c] + cl[c].capacity;
    int32_t *ms = A((size_t)nmem, sizeof(int32_t)), *fill = A((size_t)ncl, sizeof(int32_t));
    for (int32_t k = 0; k < nmem; k++) {
        int32_t c = client_of[members[id_order[k]].process];
        ms[mat[c] + fill[c]++] = id_order[k];
    }
    int32_t most = 0;
    for (int32_t c = 0; c < ncl; c++) {
        int32_t n = act[c].n > sby[c].n ? act[c].n : sby[c].n;
        if (n > most) most = n;
    }
    int32_t *a = A((size_t)most, sizeof(int32_t)), *b = A((size_t)most, sizeof(int32_t));
    for (int32_t c = 0; c < ncl; c++) {
        int32_t nm = cl[c].capacity, *load = A((size_t)nm, sizeof(int32_t)), na = 0, nb = 0;
        for (int32_t i = 0; i < act[c].n; i++) {
            int32_t t = act[c].v[i];
            if (stateful_task(t)) a[na++] = t; else b[nb++] = t;
        }
        pass(ms + mat[c], nm, load, a, na, GIVE_ACTIVE, c, 1);
        /* standbys and warm-ups: the client's standby list holds both */
        pass(ms + mat[c], nm, load, sby[c].v, sby[c].n, GIVE_REPLICA, c, 1);
        pass(ms + mat[c], nm, load, b, nb, GIVE_ACTIVE, c, 0);
    }
    /* each pass gives kept tasks first, then the rest: sort every list */
    for (int32_t i = 0; i < nmem; i++) {
        if (oa[i].n > 1) qsort(oa[i].v, (size_t)oa[i].n, sizeof(int32_t), int_cmp);
        if (os_[i].n > 1) qsort(os_[i].v, (size_t)os_[i].n, sizeof(int32_t), int_cmp);
        if (ow[i].n > 1) qsort(ow[i].v, (size_t)ow[i].n, sizeof(int32_t), int_cmp);
    }
}

/* ---- the response (SPEC.md 5.2) ---- */

static wr_t out;

static void encode(int probing) {
    /* room for everything first (at most 5 bytes a task, 10 a count), so
     * that the writer never grows it: its realloc is not checked */
    size_t need = 16 + (size_t)nmem * 32;
    for (int32_t i = 0; i < nmem; i++) need += (size_t)(oa[i].n + os_[i].n + ow[i].n) * 5;
    if (out.cap < need) {
        free(out.b);
        out.b = malloc(need);
        if (!out.b) __builtin_trap();
        out.cap = need;
    }
    out.len = 0;
    wr_byte(&out, 2);
    wr_uvarint(&out, (uint64_t)nmem);
    for (int32_t i = 0; i < nmem; i++) {
        wr_taskset(&out, oa[i].v, (uint32_t)oa[i].n);
        wr_taskset(&out, os_[i].v, (uint32_t)os_[i].n);
        wr_taskset(&out, ow[i].v, (uint32_t)ow[i].n);
        wr_uvarint(&out, 0);   /* tags */
    }
    wr_varint(&out, probing ? interval : -1);
    wr_uvarint(&out, 0);       /* tags */
}

/* run is Assign: the HA assignor per client, split over the members */
static const char *run(int *probing) {
    const char *err = probing_interval();
    if (err) return err;
    if ((err = new_state())) return err;
    scratch = A((size_t)nt + 1, sizeof(int32_t));
    /* stateful actives round-robin in client order, then balanced */
    for (int32_t t = 0, c = 0; t < nt; t++)
        if (stateful_task(t)) { assign_active(c, t); c = (c + 1) % ncl; }
    balance(0, 0);
    assign_standbys();
    new_movements();
    queue_room();
    int32_t moves = active_movements();
    queue_room();
    moves += standby_movements();
    /* stateless actives to the least active-loaded clients */
    for (int32_t t = 0; t < nt; t++) if (!stateful_task(t)) assign_active(least_active_loaded(), t);
    *probing = moves > 0;
    split_over_members();
    return 0;
}

EXPORT("coordhost_assign") int32_t assign(int32_t n) {
    arena_reset();
    if (n < 0) return fail(ST_DECODE_ERROR, "negative input length");
    uint8_t *in = A((size_t)n + 1, 1);
    if (coordhost_input_read(in, n) != n) return fail(ST_DECODE_ERROR, "input_read failed");
    const char *err = decode(in, n);
    if (err) return fail(ST_DECODE_ERROR, err);
    int probing = 0;
    if ((err = run(&probing))) return fail(ST_ASSIGN_ERROR, err);
    encode(probing);
    return coordhost_output_write(out.b, (int32_t)out.len) == 0 ? ST_OK : ST_PANIC;
}
