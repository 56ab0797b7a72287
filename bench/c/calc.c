/*
 * calc, in C: the bench's C-ABI twin of plugins/calc's `add` (the same name, tool and
 * schema, the same answer), so that `toolhost-bench --c-plugins` measures a C plugin's
 * tools/call against the Rust one's in the same run. scripts/bench builds it:
 *
 *   cc -shared -fPIC -O2 -I c-abi/include -I plugins/c bench/c/calc.c -o libcalc.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_mini.h"
#include "toolhost_plugin.h"

__attribute__((visibility("default"))) const char TOOLHOST_PLUGIN_NAME[] = "calc";

static const char MANIFEST[] =
    "{\"name\":\"calc\",\"version\":\"0.1.0\",\"description\":\"calc's add, in C\","
    "\"tools\":[{\"name\":\"add\",\"description\":\"Add two numbers (x + y).\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"},"
    "\"y\":{\"type\":\"number\"}},\"required\":[\"x\",\"y\"]},"
    "\"annotations\":{\"readOnlyHint\":true,\"idempotentHint\":true}}]}";

static int copy_out(toolhost_buf *out, const char *text, size_t len, int status) {
    out->ptr = malloc(len ? len : 1);
    if (!out->ptr)
        return TOOLHOST_INTERNAL_ERROR;
    memcpy(out->ptr, text, len);
    out->len = len;
    return status;
}

static int plugin_init(const toolhost_init *init, toolhost_buf *manifest) {
    (void)init;
    return copy_out(manifest, MANIFEST, sizeof MANIFEST - 1, TOOLHOST_OK);
}

static int plugin_call(uint64_t call, toolhost_str method, toolhost_str params, toolhost_buf *out) {
    (void)call;
    if (!json_is(method, "tools/call"))
        return copy_out(out, "not answered", 12, TOOLHOST_METHOD_NOT_FOUND);
    char *p = json_cstr(params);
    if (!p)
        return TOOLHOST_INTERNAL_ERROR;
    const char *args = json_find(p, "arguments");
    double x = 0, y = 0;
    if (args) {
        json_number(args, "x", &x);
        json_number(args, "y", &y);
    }
    free(p);
    static const char HEAD[] = "{\"content\":[{\"type\":\"text\",\"text\":\"";
    static const char TAIL[] = "\"}]}";
    char text[128];
    memcpy(text, HEAD, sizeof HEAD - 1);
    size_t n = sizeof HEAD - 1;
    n += (size_t)json_write_number(text + n, 32, x + y);
    memcpy(text + n, TAIL, sizeof TAIL - 1);
    return copy_out(out, text, n + sizeof TAIL - 1, TOOLHOST_OK);
}

static void plugin_free(toolhost_buf buf) { free(buf.ptr); }

static const toolhost_plugin PLUGIN = {
    .size = sizeof(toolhost_plugin),
    .abi_version = TOOLHOST_ABI_VERSION,
    .init = plugin_init,
    .call = plugin_call,
    .free = plugin_free,
};

__attribute__((visibility("default"))) const toolhost_plugin *toolhost_plugin_entry(void) {
    return &PLUGIN;
}
