/* Kafka 4.4's StickyTaskAssignor as a coordhost plugin in C: a line-by-line
 * port of the Go algorithm package (plugins/assignor-sticky: assign.go,
 * state.go, javaorder.go) on the same dense arrays, including the Java
 * HashMap iteration order and PriorityQueue tie order it emulates, so that
 * it gives byte-for-byte the same assignment (c_test.go checks it on every
 * committed parity vector). Build (make plugins):
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor \
 *     -o assignor-sticky-c.wasm plugins/assignor-sticky/c/sticky.c
 * Memory is reused from one call to the next (grow-only buffers), so a
 * call allocates nothing once memory has grown to the group's size. An
 * allocation failure traps (the host discards the instance and counts it).
 */
#include <stdio.h>
#include "../../../testdata/plugins/c/abi1.h"

EXPORT("coordhost_abi_v1") void abi_v1(void) {}
EXPORT("coordhost_kinds") int32_t kinds(void) { return 1; }

/* ---- grow-only buffers ---- */
typedef struct { void *p; size_t cap; } buf_t;

/* grow returns b's memory with room for n elements of size bytes; the
 * contents are kept only if it need not move. cap counts bytes: one
 * buffer may serve elements of different sizes. */
static void *grow(buf_t *b, size_t n, size_t size) {
    size_t bytes = (n ? n : 1) * size;
    if (b->cap < bytes) {
        free(b->p);
        size_t c = bytes + bytes / 4;
        b->p = malloc(c);
        if (!b->p) __builtin_trap();
        b->cap = c;
    }
    return b->p;
}
static void *zgrow(buf_t *b, size_t n, size_t size) {
    void *p = grow(b, n, size);
    memset(p, 0, (n ? n : 1) * size);
    return p;
}
#define GET(b, n, T) ((T *)grow(&(b), (size_t)(n), sizeof(T)))
#define ZGET(b, n, T) ((T *)zgrow(&(b), (size_t)(n), sizeof(T)))

/* ---- the request ---- */
typedef struct { const uint8_t *s; uint32_t n; } str_t;
typedef struct { int32_t task; int64_t off; } toff_t;
typedef struct {
    str_t id;
    int32_t process;
    int32_t *active, n_active;
    int32_t *standby, n_standby;
    toff_t *offs; int32_t n_offs;
} mem_t;

static buf_t b_in, b_procs, b_subids, b_parts, b_stateful, b_members, b_tpool, b_opool;

static int32_t nproc, nsub, nmem, nt, num_standby;
static str_t *procs, *subids;
static int32_t *parts;
static uint8_t *stateful_sub;
static mem_t *members;

/* count reads a uvarint count, each element at least min bytes */
static uint32_t rd_count(rd_t *r, uint32_t min) {
    uint64_t n = rd_uvarint(r);
    if (r->err || n > (uint64_t)(r->end - r->p) / min) { r->err = 1; return 0; }
    return (uint32_t)n;
}
static int32_t rd_i32(rd_t *r) {
    uint64_t v = rd_uvarint(r);
    if (v > 0x7fffffff) { r->err = 1; return 0; }
    return (int32_t)v;
}
/* rd_entries reads a taskset (offs == NULL: min 1 byte an entry) or
 * taskoffsets (min 2) into tasks / offs (either may be NULL to skip),
 * checking every task index; returns the count */
static int32_t rd_entries(rd_t *r, int32_t *tasks, toff_t *offs, int with_offsets) {
    uint32_t n = rd_count(r, with_offsets ? 2 : 1);
    uint64_t next = 0;
    for (uint32_t i = 0; i < n && !r->err; i++) {
        uint64_t t = next + rd_uvarint(r);
        int64_t off = with_offsets ? rd_varint(r) : 0;
        if (t >= (uint64_t)nt) { r->err = 1; return 0; }
        if (tasks) tasks[i] = (int32_t)t;
        if (offs) { offs[i].task = (int32_t)t; offs[i].off = off; }
        next = t + 1;
    }
    return (int32_t)n;
}
static void rd_skip_tags_checked(rd_t *r) {
    uint32_t n = rd_count(r, 2);
    for (uint32_t i = 0; i < n && !r->err; i++) { rd_uvarint(r); rd_skip(r, rd_uvarint(r)); }
}

/* decode reads the AssignRequest in buf[0:len); 0 on success, else an
 * error text. */
static const char *decode(const uint8_t *buf, int32_t len) {
    rd_t r = { buf, buf + len, 0 };
    if (rd_u8(&r) != 1) return "not an AssignRequest (kind byte is not 1)";
    uint32_t l;
    rd_string(&r, &l);            /* group_id */
    rd_uvarint(&r);               /* group_epoch */
    rd_skip(&r, 8);               /* seed */
    num_standby = rd_i32(&r);
    rd_uvarint(&r);               /* num_warmup_replicas */
    rd_varint(&r);                /* acceptable_recovery_lag */
    rd_skip_strings(&r);          /* rack tags */
    rd_skip_pairs(&r);            /* configs */
    if (r.err) return "truncated AssignRequest header";
    nproc = (int32_t)rd_count(&r, 1);
    procs = GET(b_procs, nproc, str_t);
    for (int32_t i = 0; i < nproc && !r.err; i++) procs[i].s = rd_string(&r, &procs[i].n);
    nsub = (int32_t)rd_count(&r, 3);
    if (nsub > 65536) return "more than 65536 subtopologies";
    subids = GET(b_subids, nsub, str_t);
    parts = GET(b_parts, nsub, int32_t);
    stateful_sub = GET(b_stateful, nsub, uint8_t);
    int64_t total = 0;
    for (int32_t s = 0; s < nsub && !r.err; s++) {
        subids[s].s = rd_string(&r, &subids[s].n);
        parts[s] = rd_i32(&r);
        stateful_sub[s] = rd_u8(&r) & 1;
        total += parts[s];
    }
    if (r.err) return "truncated subtopology table";
    if (total > 4194304) return "more than 4194304 tasks";
    nt = (int32_t)total;
    nmem = (int32_t)rd_count(&r, 9);
    members = GET(b_members, nmem, mem_t);
    /* every task and offset entry takes at least one (two) bytes */
    int32_t *tpool = GET(b_tpool, len, int32_t);
    toff_t *opool = GET(b_opool, len / 2 + 1, toff_t);
    size_t tu = 0, ou = 0;
    for (int32_t i = 0; i < nmem && !r.err; i++) {
        mem_t *m = &members[i];
        m->id.s = rd_string(&r, &m->id.n);
        rd_string(&r, &l);        /* instance_id */
        m->process = rd_i32(&r);
        rd_string(&r, &l);        /* rack */
        rd_skip_pairs(&r);        /* client tags */
        m->active = tpool + tu; tu += (size_t)(m->n_active = rd_entries(&r, m->active, NULL, 0));
        m->standby = tpool + tu; tu += (size_t)(m->n_standby = rd_entries(&r, m->standby, NULL, 0));
        rd_entries(&r, NULL, NULL, 0);           /* warmup */
        m->offs = opool + ou; ou += (size_t)(m->n_offs = rd_entries(&r, NULL, m->offs, 1));
        rd_entries(&r, NULL, NULL, 1);           /* end offsets */
        rd_skip_tags_checked(&r);
        if (!r.err && (m->process >= nproc || m->id.n == 0)) return "member with an empty id or an unknown process index";
    }
    rd_skip_tags_checked(&r);
    if (r.err) return "truncated or corrupt AssignRequest";
    if (r.p != r.end) return "trailing bytes after the AssignRequest";
    return 0;
}

/* ---- Java order emulation (javaorder.go) ---- */

/* utf8_rune decodes one rune as Go does: an invalid byte is U+FFFD, width 1 */
static uint32_t utf8_rune(const uint8_t *s, uint32_t n, uint32_t *w) {
    uint8_t c = s[0];
    *w = 1;
    if (c < 0x80) return c;
    uint8_t lo = 0x80, hi = 0xBF;
    uint32_t need, cp;
    if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2; cp = c & 0x0F;
        if (c == 0xE0) lo = 0xA0; else if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3; cp = c & 0x07;
        if (c == 0xF0) lo = 0x90; else if (c == 0xF4) hi = 0x8F;
    } else return 0xFFFD;
    if (n < need + 1) return 0xFFFD;
    if (s[1] < lo || s[1] > hi) return 0xFFFD;
    for (uint32_t i = 1; i <= need; i++) {
        if (i > 1 && (s[i] < 0x80 || s[i] > 0xBF)) return 0xFFFD;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *w = need + 1;
    return cp;
}

/* java_hash is HashMap.hash(String.hashCode()) over UTF-16 code units */
static uint32_t java_hash(str_t str) {
    uint32_t h = 0;
    const uint8_t *s = str.s;
    for (uint32_t i = 0; i < str.n;) {
        if (s[i] < 0x80) { h = 31 * h + s[i]; i++; continue; }
        uint32_t w, cp = utf8_rune(s + i, str.n - i, &w);
        i += w;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            h = 31 * h + (0xD800 + (cp >> 10));
            h = 31 * h + (0xDC00 + (cp & 0x3FF));
        } else h = 31 * h + cp;
    }
    return h ^ (h >> 16);
}

static int64_t threshold(int64_t c) { return c < 4 ? c * 3 / 4 : c / 4 * 3; }

static int64_t hashmap_capacity(int64_t init_cap, int64_t n, int cia) {
    int64_t c = 16;
    if (init_cap > 0) { c = 1; while (c < init_cap) c <<= 1; }
    if (cia) n--;
    while (n > threshold(c)) c <<= 1;
    return c;
}

static buf_t b_buckets, b_cstart, b_outk;

/* hashmap_order reorders keys (insertion order) into HashMap iteration
 * order; hashes is indexed by key */
static void hashmap_order(int32_t *keys, int32_t n, const uint32_t *hashes, int64_t init_cap, int cia) {
    if (cia)
        for (int32_t i = 0, j = n - 1; i < j; i++, j--) { int32_t k = keys[i]; keys[i] = keys[j]; keys[j] = k; }
    int64_t capacity = hashmap_capacity(init_cap, n, cia);
    uint32_t mask = (uint32_t)(capacity - 1);
    uint32_t *buckets = GET(b_buckets, n, uint32_t);
    for (int32_t i = 0; i < n; i++) buckets[i] = hashes[keys[i]] & mask;
    if (n > 64) {
        int32_t *start = ZGET(b_cstart, capacity + 1, int32_t);
        for (int32_t i = 0; i < n; i++) start[buckets[i] + 1]++;
        for (int64_t i = 1; i <= capacity; i++) start[i] += start[i - 1];
        int32_t *outk = GET(b_outk, n, int32_t);
        for (int32_t i = 0; i < n; i++) outk[start[buckets[i]]++] = keys[i];
        memcpy(keys, outk, sizeof(int32_t) * (size_t)n);
        return;
    }
    for (int32_t i = 1; i < n; i++) {
        int32_t k = keys[i]; uint32_t b = buckets[i];
        int32_t j = i - 1;
        while (j >= 0 && buckets[j] > b) { keys[j + 1] = keys[j]; buckets[j + 1] = buckets[j]; j--; }
        keys[j + 1] = k; buckets[j + 1] = b;
    }
}

/* ---- state (state.go) ---- */
static buf_t b_byrank, b_rankof, b_proc, b_count, b_pcap, b_ptasks, b_pload, b_porder, b_first,
    b_hashes, b_memstart, b_memorder, b_next, b_mhlen, b_mhbuilt, b_mheap, b_prev, b_cands, b_candstart,
    b_cand, b_keys, b_multi, b_holders, b_holdn, b_activeof, b_standbys, b_order, b_left, b_heap,
    b_remaining, b_polled, b_na, b_ns, b_actall, b_sball, b_sstart, b_bytask, b_out, b_idord;

static int32_t *by_rank, *rank_of, *proc, *count;
static int32_t *proc_cap, *proc_tasks, *proc_order, nproc_order;
static double *proc_load;
static int32_t *mem_start, *mem_order;
static int32_t *mh_len; static uint8_t *mh_built; static int32_t *mheap;
static int32_t *prev_active, *cand_start, *cand;
static int32_t slots, *holders, *hold_n, *active_of, *standbys, nstandbys;
static int32_t total_active, total_tasks, members_active_cap, members_tasks_cap, active_per_member, tasks_per_member;

typedef struct { int32_t task, rank; uint8_t prev_standby; int64_t offset; } cand_t;

static int32_t tasks_per(int32_t tasks, int32_t m) {
    if (m == 0) return 0;
    int32_t n = tasks / m;
    if (tasks % m > 0) n++;
    return n;
}

static int id_less(int32_t a, int32_t b) {
    str_t x = members[a].id, y = members[b].id;
    uint32_t n = x.n < y.n ? x.n : y.n;
    int c = memcmp(x.s, y.s, n);
    if (c) return c < 0;
    if (x.n != y.n) return x.n < y.n;
    return a < b;
}

/* rank_members sorts members by id (a stable merge sort) */
static void rank_members(void) {
    by_rank = GET(b_byrank, nmem, int32_t);
    int32_t *tmp = GET(b_idord, nmem, int32_t);
    for (int32_t i = 0; i < nmem; i++) by_rank[i] = i;
    for (int32_t w = 1; w < nmem; w *= 2) {
        for (int32_t lo = 0; lo < nmem; lo += 2 * w) {
            int32_t mid = lo + w < nmem ? lo + w : nmem, hi = lo + 2 * w < nmem ? lo + 2 * w : nmem;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = id_less(by_rank[j], by_rank[i]) ? by_rank[j++] : by_rank[i++];
            while (i < mid) tmp[k++] = by_rank[i++];
            while (j < hi) tmp[k++] = by_rank[j++];
        }
        memcpy(by_rank, tmp, sizeof(int32_t) * (size_t)nmem);
    }
    rank_of = GET(b_rankof, nmem, int32_t);
    proc = GET(b_proc, nmem, int32_t);
    for (int32_t r = 0; r < nmem; r++) { proc[r] = members[by_rank[r]].process; rank_of[by_rank[r]] = r; }
    count = ZGET(b_count, nmem, int32_t);
}

static double compute_load(int32_t tasks, int32_t capacity) {
    if (capacity <= 0) return -1;
    return (double)tasks / (double)capacity;
}

static void build_processes(void) {
    proc_cap = ZGET(b_pcap, nproc, int32_t);
    proc_tasks = ZGET(b_ptasks, nproc, int32_t);
    proc_load = GET(b_pload, nproc, double);
    uint8_t *first = ZGET(b_first, nproc, uint8_t);
    proc_order = GET(b_porder, nproc, int32_t);
    nproc_order = 0;
    for (int32_t r = 0; r < nmem; r++) {
        int32_t p = proc[r];
        if (!first[p]) { first[p] = 1; proc_order[nproc_order++] = p; }
        proc_cap[p]++;
    }
    for (int32_t p = 0; p < nproc; p++) proc_load[p] = compute_load(0, proc_cap[p]);
    uint32_t *hashes = GET(b_hashes, nproc > nmem ? nproc : nmem, uint32_t);
    for (int32_t i = 0; i < nproc_order; i++) hashes[proc_order[i]] = java_hash(procs[proc_order[i]]);
    hashmap_order(proc_order, nproc_order, hashes, nmem, 1);
    mem_start = ZGET(b_memstart, nproc + 1, int32_t);
    for (int32_t r = 0; r < nmem; r++) mem_start[proc[r] + 1]++;
    for (int32_t p = 1; p <= nproc; p++) mem_start[p] += mem_start[p - 1];
    mem_order = GET(b_memorder, nmem, int32_t);
    int32_t *next = GET(b_next, nproc, int32_t);
    memcpy(next, mem_start, sizeof(int32_t) * (size_t)nproc);
    for (int32_t r = 0; r < nmem; r++) mem_order[next[proc[r]]++] = r;
    for (int32_t p = 0; p < nproc; p++) {
        int32_t *ms = mem_order + mem_start[p], n = mem_start[p + 1] - mem_start[p];
        if (n < 2) continue;
        for (int32_t i = 0; i < n; i++) hashes[ms[i]] = java_hash(members[by_rank[ms[i]]].id);
        hashmap_order(ms, n, hashes, 0, 0);
    }
    mh_len = ZGET(b_mhlen, nproc, int32_t);
    mh_built = ZGET(b_mhbuilt, nproc, uint8_t);
    mheap = GET(b_mheap, nmem, int32_t);
}

static int ranks_before(const cand_t *x, const cand_t *y) {
    if (x->prev_standby != y->prev_standby) return x->prev_standby;
    return x->offset > y->offset;
}

static void build_previous(void) {
    prev_active = GET(b_prev, nt, int32_t);
    for (int32_t t = 0; t < nt; t++) prev_active[t] = -1;
    size_t n = 0;
    for (int32_t i = 0; i < nmem; i++) n += (size_t)members[i].n_standby + (size_t)members[i].n_offs;
    cand_t *cs = GET(b_cands, n, cand_t);
    size_t nc = 0;
    for (int32_t r = 0; r < nmem; r++) {
        const mem_t *m = &members[by_rank[r]];
        for (int32_t i = 0; i < m->n_active; i++) prev_active[m->active[i]] = r;
        int32_t j = 0;
        for (int32_t i = 0; i < m->n_standby; i++) {
            int32_t t = m->standby[i];
            while (j < m->n_offs && m->offs[j].task < t) j++;
            int64_t off = 0;
            if (j < m->n_offs && m->offs[j].task == t) off = m->offs[j].off;
            cs[nc++] = (cand_t){ t, r, 1, off };
        }
        j = 0;
        for (int32_t i = 0; i < m->n_offs; i++) {
            int32_t t = m->offs[i].task;
            while (j < m->n_standby && m->standby[j] < t) j++;
            if (j == m->n_standby || m->standby[j] != t) cs[nc++] = (cand_t){ t, r, 0, m->offs[i].off };
        }
    }
    int32_t *start = ZGET(b_candstart, nt + 1, int32_t);
    int32_t *multi = GET(b_multi, nc, int32_t), nmulti = 0;
    for (size_t i = 0; i < nc; i++) {
        int32_t t = cs[i].task;
        if (++start[t] == 2) multi[nmulti++] = t;
    }
    for (int32_t t = 1; t < nt; t++) start[t] += start[t - 1];
    start[nt] = (int32_t)nc;
    cand = GET(b_cand, nc, int32_t);
    cand_t *keys = GET(b_keys, nc, cand_t);
    for (size_t i = nc; i-- > 0;) {
        int32_t at = --start[cs[i].task];
        cand[at] = cs[i].rank;
        keys[at] = cs[i];
    }
    for (int32_t k = 0; k < nmulti; k++) {
        int32_t t = multi[k], lo = start[t], hi = start[t + 1];
        for (int32_t i = lo + 1; i < hi; i++)
            for (int32_t j = i; j > lo && ranks_before(&keys[j], &keys[j - 1]); j--) {
                cand_t kt = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = kt;
                int32_t ct = cand[j]; cand[j] = cand[j - 1]; cand[j - 1] = ct;
            }
    }
    cand_start = start;
}

static void reset(void) {
    total_tasks = 0; total_active = 0; nstandbys = 0;
    for (int32_t s = 0; s < nsub; s++) {
        total_tasks = (int32_t)((uint32_t)total_tasks + (uint32_t)parts[s]);
        total_active += parts[s];
        if (stateful_sub[s]) total_tasks = (int32_t)((uint32_t)total_tasks + (uint32_t)parts[s] * (uint32_t)num_standby);
    }
    members_active_cap = members_tasks_cap = nmem;
    active_per_member = tasks_per(total_active, nmem);
    tasks_per_member = tasks_per(total_tasks, nmem);
    rank_members();
    build_processes();
    build_previous();
    int64_t sl = (int64_t)num_standby + 1;
    if (sl > nproc) sl = nproc;
    if (sl < 1) sl = 1;
    slots = (int32_t)sl;
    holders = ZGET(b_holders, (size_t)nt * (size_t)slots, int32_t);
    hold_n = ZGET(b_holdn, nt, int32_t);
    active_of = GET(b_activeof, nt, int32_t);
    for (int32_t t = 0; t < nt; t++) active_of[t] = -1;
    standbys = GET(b_standbys, 2 * (size_t)nt * (size_t)slots, int32_t);
}

static int proc_has(int32_t p, int32_t t) {
    const int32_t *h = holders + (size_t)t * (size_t)slots;
    for (int32_t k = 0; k < hold_n[t]; k++)
        if (h[k] == p) return 1;
    return 0;
}

static int32_t add_internal(int32_t r, int32_t t, int active) {
    int32_t p = proc[r];
    proc_tasks[p]++;
    if (!proc_has(p, t)) holders[(size_t)t * (size_t)slots + (size_t)hold_n[t]++] = p;
    if (active) active_of[t] = r;
    else { standbys[nstandbys++] = t; standbys[nstandbys++] = r; }
    count[r]++;
    proc_load[p] = compute_load(proc_tasks[p], proc_cap[p]);
    return count[r];
}

static int32_t add(int32_t r, int32_t t, int active) {
    int32_t n = add_internal(r, t, active);
    mh_built[proc[r]] = 0;
    return n;
}

/* memberHeap: PriorityQueue by task count, in mheap[mem_start[p]:] */
static void mh_offer(int32_t *q, int32_t *len, int32_t x) {
    int32_t cx = count[x], k = (*len)++;
    while (k > 0) {
        int32_t parent = (k - 1) >> 1, e = q[parent];
        if (cx >= count[e]) break;
        q[k] = e; k = parent;
    }
    q[k] = x;
}
static int32_t mh_poll(int32_t *q, int32_t *len) {
    int32_t res = q[0], n = --(*len), x = q[n];
    if (n > 0) {
        int32_t cx = count[x], k = 0, half = n >> 1;
        while (k < half) {
            int32_t child = 2 * k + 1, c = q[child], right = child + 1;
            if (right < n && count[c] > count[q[right]]) { child = right; c = q[child]; }
            if (cx <= count[c]) break;
            q[k] = c; k = child;
        }
        q[k] = x;
    }
    return res;
}

static int32_t add_to_least_loaded_member(int32_t p, int32_t t, int active) {
    int32_t *ms = mem_order + mem_start[p], n = mem_start[p + 1] - mem_start[p];
    if (n == 0) return -1;
    if (n == 1) return add_internal(ms[0], t, active);
    int32_t *q = mheap + mem_start[p];
    if (!mh_built[p]) {
        mh_built[p] = 1; mh_len[p] = 0;
        for (int32_t i = 0; i < n; i++) mh_offer(q, &mh_len[p], ms[i]);
    }
    int32_t r = mh_poll(q, &mh_len[p]);
    int32_t c = add_internal(r, t, active);
    mh_offer(q, &mh_len[p], r);
    return c;
}

static int32_t find_prev_member_with_least_load(const int32_t *cs, int32_t n, int32_t standby_task) {
    int32_t best = -1;
    double best_proc = 1.7976931348623157e308, best_member = 1.7976931348623157e308;
    for (int32_t i = 0; i < n; i++) {
        int32_t r = cs[i], p = proc[r];
        if (standby_task >= 0 && proc_has(p, standby_task)) continue;
        double pl = proc_load[p], ml = (double)count[r];
        if (best >= 0 && !(pl < best_proc && ml < best_member)) continue;
        best = r; best_proc = pl; best_member = ml;
    }
    return best;
}

static void maybe_update_active_per_member(int32_t n) {
    if (n == active_per_member) {
        members_active_cap--;
        total_active -= n;
        active_per_member = tasks_per(total_active, members_active_cap);
    }
}
static void maybe_update_tasks_per_member(int32_t n) {
    if (n == tasks_per_member) {
        members_tasks_cap--;
        total_tasks -= n;
        tasks_per_member = tasks_per(total_tasks, members_tasks_cap);
    }
}

/* procHeap: PriorityQueue<ProcessState> by load */
static int32_t *ph_q, ph_len;
static void ph_offer(int32_t x) {
    int32_t *q = ph_q, k = ph_len++;
    double lx = proc_load[x];
    while (k > 0) {
        int32_t parent = (k - 1) >> 1, e = q[parent];
        if (!(lx < proc_load[e])) break;
        q[k] = e; k = parent;
    }
    q[k] = x;
}
static int32_t ph_poll(void) {
    if (ph_len == 0) return -1;
    int32_t *q = ph_q, res = q[0], n = --ph_len, x = q[n];
    if (n > 0) {
        double lx = proc_load[x];
        int32_t k = 0, half = n >> 1;
        while (k < half) {
            int32_t child = 2 * k + 1, c = q[child], right = child + 1;
            if (right < n && proc_load[c] > proc_load[q[right]]) { child = right; c = q[child]; }
            if (!(lx > proc_load[c])) break;
            q[k] = c; k = child;
        }
        q[k] = x;
    }
    return res;
}
static void process_heap(void) {
    ph_q = GET(b_heap, nproc_order, int32_t);
    ph_len = 0;
    for (int32_t i = 0; i < nproc_order; i++) ph_offer(proc_order[i]);
}

static int32_t *by_partition_then_subtopology(int stateful_only, int32_t *n_out) {
    int32_t max_p = 0, n = 0;
    for (int32_t s = 0; s < nsub; s++) if (parts[s] > max_p) max_p = parts[s];
    int32_t *out = GET(b_order, nt, int32_t);
    int32_t *base = GET(b_na, nsub, int32_t);
    for (int32_t s = 0, b = 0; s < nsub; s++) { base[s] = b; b += parts[s]; }
    for (int32_t p = 0; p < max_p; p++)
        for (int32_t s = 0; s < nsub; s++)
            if (p < parts[s] && (!stateful_only || stateful_sub[s])) out[n++] = base[s] + p;
    *n_out = n;
    return out;
}

static char errmsg[256];

static const char *no_available(const char *what, int32_t t) {
    int32_t s = 0, b = 0;
    while (s < nsub && t >= b + parts[s]) { b += parts[s]; s++; }
    int idn = subids[s].n > 100 ? 100 : (int)subids[s].n;
    snprintf(errmsg, sizeof errmsg, "No %s available to assign active task %.*s_%d.", what, idn,
             (const char *)subids[s].s, (int)(t - b));
    return errmsg;
}

static void add_active(int32_t r, int32_t t) {
    int32_t n = add(r, t, 1);
    maybe_update_active_per_member(n);
    maybe_update_tasks_per_member(n);
}

static const char *assign_active(void) {
    int32_t n, nrest = 0;
    int32_t *tasks = by_partition_then_subtopology(0, &n);
    for (int32_t i = 0; i < n; i++) {
        int32_t t = tasks[i], r = prev_active[t];
        if (r >= 0 && count[r] < active_per_member) { add_active(r, t); continue; }
        tasks[nrest++] = t;
    }
    n = nrest; nrest = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t t = tasks[i];
        int32_t r = find_prev_member_with_least_load(cand + cand_start[t], cand_start[t + 1] - cand_start[t], -1);
        if (r >= 0 && count[r] < active_per_member) { add_active(r, t); continue; }
        tasks[nrest++] = t;
    }
    uint8_t *left = ZGET(b_left, nt, uint8_t);
    for (int32_t i = 0; i < nrest; i++) left[tasks[i]] = 1;
    process_heap();
    for (int32_t t = 0; t < nt; t++) {
        if (!left[t]) continue;
        int32_t p = ph_poll();
        if (p < 0) return no_available("process", t);
        int32_t c = add_to_least_loaded_member(p, t, 1);
        if (c == -1) return no_available("member", t);
        maybe_update_active_per_member(c);
        maybe_update_tasks_per_member(c);
        ph_offer(p);
    }
    return 0;
}

static int standby_to_least_loaded(int32_t t, int32_t *polled) {
    int32_t np = 0;
    int found = 0;
    for (;;) {
        int32_t p = ph_poll();
        if (p < 0) break;
        polled[np++] = p;
        if (!proc_has(p, t)) {
            int32_t c = add_to_least_loaded_member(p, t, 0);
            if (c != -1) { found = 1; maybe_update_tasks_per_member(c); }
            break;
        }
        if (ph_len == 0) break;
    }
    for (int32_t i = np - 1; i >= 0; i--) ph_offer(polled[i]);
    return found;
}

static void assign_standby(void) {
    int32_t n;
    int32_t *tasks = by_partition_then_subtopology(1, &n);
    int32_t *remaining = ZGET(b_remaining, nt, int32_t);
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t t = tasks[i];
        for (int32_t k = 0; k < num_standby; k++) {
            int32_t r = prev_active[t];
            if (r >= 0 && !proc_has(proc[r], t) && count[r] < tasks_per_member) {
                maybe_update_tasks_per_member(add(r, t, 0));
                continue;
            }
            int32_t nc = cand_start[t + 1] - cand_start[t];
            if (nc > 0) {
                r = find_prev_member_with_least_load(cand + cand_start[t], nc, t);
                if (r >= 0 && count[r] < tasks_per_member) {
                    maybe_update_tasks_per_member(add(r, t, 0));
                    continue;
                }
            }
            remaining[t] = num_standby - k;
            break;
        }
    }
    process_heap();
    int32_t *polled = GET(b_polled, nproc_order, int32_t);
    for (int32_t t = nt - 1; t >= 0; t--)
        for (int32_t k = 0; k < remaining[t]; k++)
            if (!standby_to_least_loaded(t, polled)) break;
}

/* ---- the response ---- */
static uint8_t *out_b; static size_t out_len;

static void put_uvarint(uint64_t v) {
    while (v >= 0x80) { out_b[out_len++] = (uint8_t)(v | 0x80); v >>= 7; }
    out_b[out_len++] = (uint8_t)v;
}
static void put_taskset(const int32_t *ts, int32_t n) {
    put_uvarint((uint64_t)n);
    int64_t next = 0;
    for (int32_t i = 0; i < n; i++) { put_uvarint((uint64_t)(ts[i] - next)); next = (int64_t)ts[i] + 1; }
}

static void encode(void) {
    int32_t *na = ZGET(b_na, nmem, int32_t), *ns = ZGET(b_ns, nmem, int32_t);
    int32_t nsb = nstandbys / 2;
    for (int32_t t = 0; t < nt; t++) if (active_of[t] >= 0) na[active_of[t]]++;
    for (int32_t i = 1; i < nstandbys; i += 2) ns[standbys[i]]++;
    int32_t *act_all = GET(b_actall, nt, int32_t), *sb_all = GET(b_sball, nsb, int32_t);
    /* cursors: members' ranges in rank order */
    int32_t *act_at = GET(b_next, nmem, int32_t), *sb_at = GET(b_polled, nmem, int32_t);
    int32_t ca = 0, cs = 0;
    for (int32_t r = 0; r < nmem; r++) { act_at[r] = ca; sb_at[r] = cs; ca += na[r]; cs += ns[r]; }
    for (int32_t t = 0; t < nt; t++) if (active_of[t] >= 0) act_all[act_at[active_of[t]]++] = t;
    /* standbys by task, then into each member's range in task order */
    int32_t *start = ZGET(b_sstart, nt + 1, int32_t);
    for (int32_t i = 0; i < nstandbys; i += 2) start[standbys[i] + 1]++;
    for (int32_t t = 1; t <= nt; t++) start[t] += start[t - 1];
    int32_t *by_task = GET(b_bytask, nsb, int32_t);
    for (int32_t i = 0; i < nstandbys; i += 2) by_task[start[standbys[i]]++] = standbys[i + 1];
    /* start[t] is now the end of task t's group */
    for (int32_t t = 0, i = 0; t < nt; t++)
        for (; i < start[t]; i++) sb_all[sb_at[by_task[i]]++] = t;
    /* sizes: at most 5 bytes a task, 10 a count, plus framing */
    size_t need = 16 + (size_t)nmem * 24 + (size_t)(nt + nsb) * 5;
    out_b = GET(b_out, need, uint8_t);
    out_len = 0;
    out_b[out_len++] = 2;
    put_uvarint((uint64_t)nmem);
    for (int32_t i = 0; i < nmem; i++) {
        int32_t r = rank_of[i];
        put_taskset(act_all + act_at[r] - na[r], na[r]);
        put_taskset(sb_all + sb_at[r] - ns[r], ns[r]);
        put_uvarint(0); /* warmup */
        put_uvarint(0); /* tags */
    }
    put_uvarint(1);     /* next_probe_ms = -1, zigzag */
    put_uvarint(0);     /* tags */
}

EXPORT("coordhost_assign") int32_t assign(int32_t n) {
    if (n < 0) return fail(ST_DECODE_ERROR, "negative input length");
    uint8_t *in = GET(b_in, (size_t)n + 1, uint8_t);
    if (coordhost_input_read(in, n) != n) return fail(ST_DECODE_ERROR, "input_read failed");
    const char *err = decode(in, n);
    if (err) return fail(ST_DECODE_ERROR, err);
    reset();
    if ((err = assign_active())) return fail(ST_ASSIGN_ERROR, err);
    if (num_standby > 0) assign_standby();
    encode();
    return coordhost_output_write(out_b, (int32_t)out_len) == 0 ? ST_OK : ST_PANIC;
}
