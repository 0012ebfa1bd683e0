/* coordhost plugin ABI v1 for C, written from abi/SPEC.md alone.
 * Decoding helpers for AssignRequest and encoding helpers for
 * AssignResponse. Build a reactor:
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -o plugin.wasm plugin.c
 */
#ifndef COORDHOST_ABI1_H
#define COORDHOST_ABI1_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT(name) __attribute__((export_name(name)))
#define IMPORT(name) __attribute__((import_module("coordhost_v1"), import_name(name)))

IMPORT("input_read") int32_t coordhost_input_read(void *dst, int32_t cap);
IMPORT("output_write") int32_t coordhost_output_write(const void *src, int32_t len);
IMPORT("log") void coordhost_log(int32_t level, const void *src, int32_t len);

enum { ST_OK = 0, ST_DECODE_ERROR = 1, ST_ASSIGN_ERROR = 2, ST_PANIC = 3, ST_UNSUPPORTED = 4 };

static int32_t fail(int32_t status, const char *msg) {
    coordhost_output_write(msg, (int32_t)strlen(msg));
    return status;
}

/* ---- reader (SPEC.md section 4) ---- */
typedef struct { const uint8_t *p, *end; int err; } rd_t;

static uint64_t rd_uvarint(rd_t *r) {
    uint64_t v = 0; int shift = 0;
    while (!r->err) {
        if (r->p >= r->end || shift > 63) { r->err = 1; return 0; }
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
        shift += 7;
    }
    return 0;
}
static int64_t rd_varint(rd_t *r) { uint64_t u = rd_uvarint(r); return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }
static uint8_t rd_u8(rd_t *r) { if (r->err || r->p >= r->end) { r->err = 1; return 0; } return *r->p++; }
static void rd_skip(rd_t *r, uint64_t n) { if (r->err || (uint64_t)(r->end - r->p) < n) { r->err = 1; return; } r->p += n; }
/* a string: returns pointer and length into the input buffer */
static const uint8_t *rd_string(rd_t *r, uint32_t *len) {
    uint64_t n = rd_uvarint(r); const uint8_t *s = r->p; rd_skip(r, n); *len = (uint32_t)n; return s;
}
static void rd_skip_strings(rd_t *r) { uint64_t n = rd_uvarint(r); for (uint64_t i = 0; i < n && !r->err; i++) { uint32_t l; rd_string(r, &l); } }
static void rd_skip_pairs(rd_t *r) { uint64_t n = rd_uvarint(r); for (uint64_t i = 0; i < n && !r->err; i++) { uint32_t l; rd_string(r, &l); rd_string(r, &l); } }
static void rd_skip_tags(rd_t *r) { uint64_t n = rd_uvarint(r); for (uint64_t i = 0; i < n && !r->err; i++) { rd_uvarint(r); rd_skip(r, rd_uvarint(r)); } }
/* a taskset: calls back for each task index; returns the count */
static uint32_t rd_taskset(rd_t *r, int32_t *out, uint32_t max) {
    uint64_t n = rd_uvarint(r), next = 0; uint32_t k = 0;
    for (uint64_t i = 0; i < n && !r->err; i++) {
        uint64_t t = next + rd_uvarint(r);
        if (out && k < max) out[k] = (int32_t)t;
        k++; next = t + 1;
    }
    return k;
}
static void rd_skip_taskoffsets(rd_t *r) { uint64_t n = rd_uvarint(r); for (uint64_t i = 0; i < n && !r->err; i++) { rd_uvarint(r); rd_varint(r); } }

/* ---- the decoded request (only what these plugins use) ---- */
typedef struct {
    const uint8_t *id; uint32_t id_len;
    uint32_t process;
    int32_t *active; uint32_t n_active;
    int32_t *standby; uint32_t n_standby;
} member_t;

typedef struct {
    uint32_t standbys;
    uint32_t n_processes, n_subs, n_members;
    int32_t n_tasks;
    uint8_t *stateful; /* per task */
    member_t *members;
} request_t;

/* decode_request fills req from the AssignRequest in buf; returns 0 on
 * success. Member ids point into buf. */
static int decode_request(const uint8_t *buf, int32_t len, request_t *req) {
    rd_t r = { buf, buf + len, 0 };
    memset(req, 0, sizeof *req);
    if (rd_u8(&r) != 1) return -1;
    uint32_t l;
    rd_string(&r, &l);            /* group_id */
    rd_uvarint(&r);               /* group_epoch */
    rd_skip(&r, 8);               /* seed */
    req->standbys = (uint32_t)rd_uvarint(&r);
    rd_uvarint(&r);               /* num_warmup_replicas */
    rd_varint(&r);                /* acceptable_recovery_lag */
    rd_skip_strings(&r);          /* rack tags */
    rd_skip_pairs(&r);            /* configs */
    req->n_processes = (uint32_t)rd_uvarint(&r);
    for (uint32_t i = 0; i < req->n_processes && !r.err; i++) rd_string(&r, &l);
    req->n_subs = (uint32_t)rd_uvarint(&r);
    if (r.err || req->n_subs > (uint32_t)(r.end - r.p)) return -1;
    uint32_t *parts = calloc(req->n_subs + 1, sizeof *parts);
    uint8_t *flags = calloc(req->n_subs + 1, 1);
    int64_t total = 0;
    for (uint32_t s = 0; s < req->n_subs && !r.err; s++) {
        rd_string(&r, &l);
        parts[s] = (uint32_t)rd_uvarint(&r);
        flags[s] = rd_u8(&r);
        total += parts[s];
    }
    if (r.err || total > 4194304) { free(parts); free(flags); return -1; }
    req->n_tasks = (int32_t)total;
    req->stateful = malloc((size_t)total + 1);
    for (uint32_t s = 0, t = 0; s < req->n_subs; s++)
        for (uint32_t p = 0; p < parts[s]; p++) req->stateful[t++] = flags[s] & 1;
    free(parts); free(flags);
    req->n_members = (uint32_t)rd_uvarint(&r);
    if (r.err || req->n_members == 0 || req->n_members > (uint32_t)(r.end - r.p)) return -1;
    req->members = calloc(req->n_members, sizeof *req->members);
    for (uint32_t i = 0; i < req->n_members && !r.err; i++) {
        member_t *m = &req->members[i];
        m->id = rd_string(&r, &m->id_len);
        rd_string(&r, &l);        /* instance_id */
        m->process = (uint32_t)rd_uvarint(&r);
        rd_string(&r, &l);        /* rack */
        rd_skip_pairs(&r);        /* client tags */
        const uint8_t *mark = r.p;
        m->n_active = rd_taskset(&r, NULL, 0);
        m->n_standby = rd_taskset(&r, NULL, 0);
        r.p = mark;               /* second pass: store the sets */
        m->active = malloc(sizeof(int32_t) * (m->n_active + 1));
        m->standby = malloc(sizeof(int32_t) * (m->n_standby + 1));
        rd_taskset(&r, m->active, m->n_active);
        rd_taskset(&r, m->standby, m->n_standby);
        rd_taskset(&r, NULL, 0);  /* warmup */
        rd_skip_taskoffsets(&r);
        rd_skip_taskoffsets(&r);
        rd_skip_tags(&r);
        if (m->process >= req->n_processes) r.err = 1;
        for (uint32_t k = 0; k < m->n_active; k++) if (m->active[k] >= req->n_tasks) r.err = 1;
        for (uint32_t k = 0; k < m->n_standby; k++) if (m->standby[k] >= req->n_tasks) r.err = 1;
    }
    rd_skip_tags(&r);
    return r.err || r.p != r.end ? -1 : 0;
}

static void free_request(request_t *req) {
    for (uint32_t i = 0; req->members && i < req->n_members; i++) {
        free(req->members[i].active);
        free(req->members[i].standby);
    }
    free(req->members);
    free(req->stateful);
}

/* read_request reads and decodes the call input; buf must be freed. */
static int read_request(int32_t n, uint8_t **buf, request_t *req) {
    *buf = malloc((size_t)n + 1);
    if (!*buf || coordhost_input_read(*buf, n) != n) return -1;
    return decode_request(*buf, n, req);
}

/* ---- writer ---- */
typedef struct { uint8_t *b; size_t len, cap; } wr_t;

static void wr_byte(wr_t *w, uint8_t v) {
    if (w->len == w->cap) { w->cap = w->cap ? w->cap * 2 : 1024; w->b = realloc(w->b, w->cap); }
    w->b[w->len++] = v;
}
static void wr_uvarint(wr_t *w, uint64_t v) { while (v >= 0x80) { wr_byte(w, (uint8_t)(v | 0x80)); v >>= 7; } wr_byte(w, (uint8_t)v); }
static void wr_varint(wr_t *w, int64_t v) { wr_uvarint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }
/* wr_taskset writes an ascending task set */
static void wr_taskset(wr_t *w, const int32_t *ts, uint32_t n) {
    wr_uvarint(w, n);
    int64_t next = 0;
    for (uint32_t i = 0; i < n; i++) { wr_uvarint(w, (uint64_t)(ts[i] - next)); next = ts[i] + 1; }
}

#endif
