/* A small balanced, sticky task assignor in C, written against
 * abi/SPEC.md alone: proof that the ABI is language-neutral.
 *
 * Algorithm: members are ranked by member id (so the result does not
 * depend on member order). Quota = ceil(tasks / members). Each task goes
 * back to its previous active owner while under quota; the rest go to the
 * member with the fewest tasks (lowest rank on ties). Standbys of stateful
 * tasks go to the least-loaded member whose process does not yet hold the
 * task.
 */
#include "abi1.h"

EXPORT("coordhost_abi_v1") void abi_v1(void) {}

static request_t *sort_req;
static int by_id(const void *a, const void *b) {
    const member_t *x = &sort_req->members[*(const uint32_t *)a], *y = &sort_req->members[*(const uint32_t *)b];
    uint32_t n = x->id_len < y->id_len ? x->id_len : y->id_len;
    int c = memcmp(x->id, y->id, n);
    return c ? c : (int)x->id_len - (int)y->id_len;
}

/* least returns the lowest-ranked member with the smallest load among those
 * allowed (allowed may be NULL), or -1. */
static int32_t least(const request_t *req, const uint32_t *order, const uint32_t *load,
                     const int32_t *holders, uint32_t nh) {
    int32_t best = -1;
    for (uint32_t k = 0; k < req->n_members; k++) {
        uint32_t m = order[k];
        int ok = 1;
        for (uint32_t h = 0; h < nh; h++)
            if (holders[h] >= 0 && req->members[holders[h]].process == req->members[m].process) ok = 0;
        if (ok && (best < 0 || load[m] < load[best])) best = (int32_t)m;
    }
    return best;
}

static void encode(const request_t *req, const int32_t *owner, const int32_t *holders, uint32_t slots, wr_t *w) {
    int32_t *list = malloc(sizeof(int32_t) * ((size_t)req->n_tasks + 1));
    wr_byte(w, 2);
    wr_uvarint(w, req->n_members);
    for (uint32_t m = 0; m < req->n_members; m++) {
        uint32_t n = 0;
        for (int32_t t = 0; t < req->n_tasks; t++) if (owner[t] == (int32_t)m) list[n++] = t;
        wr_taskset(w, list, n);
        n = 0;
        for (int32_t t = 0; t < req->n_tasks; t++)
            for (uint32_t s = 1; s < slots; s++) if (holders[(size_t)t * slots + s] == (int32_t)m) list[n++] = t;
        wr_taskset(w, list, n);
        wr_uvarint(w, 0); /* warmup */
        wr_uvarint(w, 0); /* tags */
    }
    wr_varint(w, -1); /* next_probe_ms */
    wr_uvarint(w, 0);
    free(list);
}

EXPORT("coordhost_assign") int32_t assign(int32_t n) {
    uint8_t *buf; request_t req;
    if (read_request(n, &buf, &req) != 0) { free_request(&req); free(buf); return fail(ST_DECODE_ERROR, "cannot decode AssignRequest"); }
    uint32_t M = req.n_members, T = (uint32_t)req.n_tasks, R = req.standbys, slots = R + 1;
    uint32_t *order = malloc(sizeof(uint32_t) * M), *load = calloc(M, sizeof(uint32_t));
    int32_t *owner = malloc(sizeof(int32_t) * (T + 1)), *prev = malloc(sizeof(int32_t) * (T + 1));
    int32_t *holders = malloc(sizeof(int32_t) * ((size_t)T * slots + 1));
    for (uint32_t i = 0; i < M; i++) order[i] = i;
    sort_req = &req;
    qsort(order, M, sizeof *order, by_id);
    for (uint32_t t = 0; t < T; t++) { owner[t] = -1; prev[t] = -1; }
    for (size_t i = 0; i < (size_t)T * slots; i++) holders[i] = -1;
    for (uint32_t k = 0; k < M; k++) {
        member_t *m = &req.members[order[k]];
        for (uint32_t a = 0; a < m->n_active; a++) if (prev[m->active[a]] < 0) prev[m->active[a]] = (int32_t)order[k];
    }
    uint32_t quota = (T + M - 1) / M;
    for (uint32_t t = 0; t < T; t++)
        if (prev[t] >= 0 && load[prev[t]] < quota) { owner[t] = prev[t]; load[prev[t]]++; }
    for (uint32_t t = 0; t < T; t++)
        if (owner[t] < 0) { owner[t] = least(&req, order, load, NULL, 0); load[owner[t]]++; }
    for (uint32_t t = 0; t < T; t++) {
        holders[(size_t)t * slots] = owner[t];
        if (!req.stateful[t]) continue;
        for (uint32_t s = 1; s < slots; s++) {
            int32_t m = least(&req, order, load, &holders[(size_t)t * slots], s);
            if (m < 0) break; /* fewer processes than replicas: give up, as Kafka does */
            holders[(size_t)t * slots + s] = m;
            load[m]++;
        }
    }
    wr_t w = {0};
    encode(&req, owner, holders, slots, &w);
    int32_t rc = coordhost_output_write(w.b, (int32_t)w.len) == 0 ? ST_OK : ST_PANIC;
    free(w.b); free(order); free(load); free(owner); free(prev); free(holders);
    free_request(&req); free(buf);
    return rc;
}
