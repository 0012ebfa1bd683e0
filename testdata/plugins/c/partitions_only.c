/* A module exporting only the partition-assignor operation (no
 * coordhost_assign, no coordhost_probe), for host/plugin's loader tests: it
 * answers every call with UNSUPPORTED.
 *   clang --target=wasm32-wasi -O2 -mexec-model=reactor -o f.wasm partitions_only.c
 */
#include "abi1.h"

EXPORT("coordhost_abi_v1") void abi_v1(void) {}

EXPORT("coordhost_assign_partitions") int32_t assign_partitions(int32_t input_len) {
    (void)input_len;
    return fail(ST_UNSUPPORTED, "partitions_only: no assignor here");
}
