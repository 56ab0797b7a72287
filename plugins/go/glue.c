// The C side of hello_go: the table toolhost reads, pointing at the functions main.go exports,
// and the calls through the host's function pointers (Go cannot call a C function pointer).
#include "toolhost_plugin.h"
#include "_cgo_export.h"

// The name the host reads from the file before loading it.
const char TOOLHOST_PLUGIN_NAME[] = "hello_go";

int32_t th_log(const toolhost_host *h, uint64_t handle, uint8_t level, toolhost_str target,
               toolhost_str message) {
    return h->log(handle, level, target, message);
}

int32_t th_is_cancelled(const toolhost_host *h, uint64_t call) { return h->is_cancelled(call); }

int32_t th_progress(const toolhost_host *h, uint64_t call, double progress, double total,
                    toolhost_str message) {
    return h->progress(call, progress, total, message);
}

static const toolhost_plugin PLUGIN = {
    .size = sizeof(toolhost_plugin),
    .abi_version = TOOLHOST_ABI_VERSION,
    .init = (int32_t(*)(const toolhost_init *, toolhost_buf *))goInit,
    .call = (int32_t(*)(uint64_t, toolhost_str, toolhost_str, toolhost_buf *))goCall,
    .free = (void (*)(toolhost_buf))goFree,
};

const toolhost_plugin *toolhost_plugin_entry(void) { return &PLUGIN; }
