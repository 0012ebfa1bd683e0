/* Hostile plugin fixtures for host/plugin's tests: one source, one
 * behaviour per -D flag. Each builds a real reactor module:
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -DHOSTILE_TRAP_ASSIGN -o f.wasm hostile.c
 *
 *   HOSTILE_WRONG_VERSION   exports coordhost_abi_v2 instead of v1
 *   HOSTILE_TRAP_INIT       traps in _initialize (a constructor)
 *   HOSTILE_TRAP_ASSIGN     traps (unreachable) during assign
 *   HOSTILE_LOOP            never returns from assign
 *   HOSTILE_MEMORY_BOMB     allocates until memory runs out, then traps
 *   HOSTILE_GARBAGE         writes bytes that are not an AssignResponse
 *   HOSTILE_UNKNOWN_MEMBER  answers for one member more than the request has
 *   HOSTILE_UNKNOWN_TASK    assigns a task index beyond the request's tasks
 *   HOSTILE_TASK_TWICE      makes task 0 active on two members
 *   HOSTILE_SANDBOX         fails with status 2 and a report of what it can
 *                           see: files it could open, the clock, random bytes
 *   HOSTILE_PROBE           also exports coordhost_probe: always asks for a
 *                           rebalance, next probe in 5000 ms
 * Without a flag it is a valid (unbalanced) assignor: every task active on
 * the first member.
 */
#include "abi1.h"
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#ifdef HOSTILE_WRONG_VERSION
EXPORT("coordhost_abi_v2") void abi_v2(void) {}
#else
EXPORT("coordhost_abi_v1") void abi_v1(void) {}
#endif

#ifdef HOSTILE_TRAP_INIT
__attribute__((constructor)) static void boom(void) { __builtin_trap(); }
#endif

static volatile uint32_t sink __attribute__((unused));

/* respond writes a response with every task active on member `on`, plus
 * extra member entries, plus an extra task. */
static int32_t respond(const request_t *req, uint32_t extra_members, int32_t extra_task, int twice) {
    wr_t w = {0};
    wr_byte(&w, 2);
    wr_uvarint(&w, req->n_members + extra_members);
    for (uint32_t m = 0; m < req->n_members + extra_members; m++) {
        uint32_t n = 0;
        int32_t *list = malloc(sizeof(int32_t) * ((size_t)req->n_tasks + 2));
        if (m == 0)
            for (int32_t t = 0; t < req->n_tasks; t++) list[n++] = t;
        if (m == 0 && extra_task) list[n++] = req->n_tasks + extra_task - 1;
        if (m == 1 && twice) list[n++] = 0;
        wr_taskset(&w, list, n);
        free(list);
        wr_uvarint(&w, 0);
        wr_uvarint(&w, 0);
        wr_uvarint(&w, 0);
    }
    wr_varint(&w, -1);
    wr_uvarint(&w, 0);
    int32_t rc = coordhost_output_write(w.b, (int32_t)w.len) == 0 ? ST_OK : ST_PANIC;
    free(w.b);
    return rc;
}

#ifdef HOSTILE_SANDBOX
/* sandbox_report describes what the guest can see of the outside world. */
static void sandbox_report(char *out, size_t cap) {
    int files = (fopen("/etc/passwd", "r") != NULL) + (fopen("hostile.c", "r") != NULL);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned char a[4] = {0};
    getentropy(a, sizeof a);
    snprintf(out, cap, "files=%d clock=%lld rand=%02x%02x%02x%02x", files, (long long)ts.tv_sec, a[0], a[1], a[2], a[3]);
}
#endif

EXPORT("coordhost_assign") int32_t assign(int32_t n) {
#ifdef HOSTILE_LOOP
    for (;;) sink++;
#endif
#ifdef HOSTILE_TRAP_ASSIGN
    __builtin_trap();
#endif
#ifdef HOSTILE_MEMORY_BOMB
    for (;;) {
        uint8_t *p = malloc(1 << 20);
        if (!p) __builtin_trap(); /* out of memory: the host's limit held */
        memset(p, 1, 1 << 20);
        sink += p[4095];
    }
#endif
#ifdef HOSTILE_GARBAGE
    static const uint8_t junk[] = { 2, 0xff, 0xff, 0xff, 0xff, 0x0f, 7, 7, 7 };
    return coordhost_output_write(junk, sizeof junk) == 0 ? ST_OK : ST_PANIC;
#endif
    uint8_t *buf; request_t req;
    if (read_request(n, &buf, &req) != 0) return fail(ST_DECODE_ERROR, "cannot decode");
#ifdef HOSTILE_SANDBOX
    char report[128];
    sandbox_report(report, sizeof report);
    free_request(&req);
    free(buf);
    return fail(ST_ASSIGN_ERROR, report);
#endif
    uint32_t extra_members = 0; int32_t extra_task = 0; int twice = 0;
#ifdef HOSTILE_UNKNOWN_MEMBER
    extra_members = 1;
#endif
#ifdef HOSTILE_UNKNOWN_TASK
    extra_task = 1;
#endif
#ifdef HOSTILE_TASK_TWICE
    twice = 1;
#endif
    int32_t rc = respond(&req, extra_members, extra_task, twice);
    free_request(&req);
    free(buf);
    return rc;
}

#ifdef HOSTILE_PROBE
EXPORT("coordhost_probe") int32_t probe(int32_t n) {
    uint8_t *buf = malloc((size_t)n + 1);
    int32_t got = coordhost_input_read(buf, n);
    free(buf);
    if (got != n || n < 1) return fail(ST_DECODE_ERROR, "no ProbeRequest");
    wr_t w = {0};
    wr_byte(&w, 4);        /* ProbeResponse */
    wr_byte(&w, 1);        /* rebalance */
    wr_varint(&w, 5000);   /* next_probe_ms */
    wr_uvarint(&w, 0);     /* tags */
    int32_t rc = coordhost_output_write(w.b, (int32_t)w.len) == 0 ? ST_OK : ST_PANIC;
    free(w.b);
    return rc;
}
#endif
