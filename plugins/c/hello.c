/*
 * hello_c: a toolhost plugin in plain C, built with the C compiler alone:
 *
 *   cc -shared -fPIC -O2 -I c-abi/include plugins/c/hello.c -o libhello_c.so
 *
 * It offers
 * - tools: `add` (structured output with an outputSchema), `echo`, `wait` (runs until it is
 *   cancelled, reporting progress), `read_file` (reads a file: what a sandbox refuses), and
 *   `crash` (dereferences NULL: what --isolate survives);
 * - a resource, hello://greeting;
 * - a prompt, `greet`, with a required argument `name`;
 * - a PreToolUse hook on Bash that denies `rm -rf`.
 *
 * JSON is read by the small scanner in json_mini.h (enough for the params the host sends,
 * which it has checked against each tool's inputSchema) and written with snprintf.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "toolhost_plugin.h"
#include "json_mini.h"

/* The name the host reads from the file before loading it (its settings are found by it). */
__attribute__((visibility("default"))) const char TOOLHOST_PLUGIN_NAME[] = "hello_c";

/* What hello://greeting says (a test builds a second version with another). */
#ifndef GREETING
#define GREETING "Hello from C!"
#endif

/* What `echo` puts before the text (a test builds a second version with another). */
#ifndef ECHO_PREFIX
#define ECHO_PREFIX ""
#endif

static const toolhost_host *host;
static uint64_t self;

static const char MANIFEST[] =
    "{\"name\":\"hello_c\",\"version\":\"0.1.0\","
    "\"description\":\"A toolhost plugin written in C\","
    "\"tools\":["
    "{\"name\":\"add\",\"description\":\"Adds two numbers\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
    "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"sum\":{\"type\":\"number\"}},"
    "\"required\":[\"sum\"]},"
    "\"annotations\":{\"readOnlyHint\":true}},"
    "{\"name\":\"echo\",\"description\":\"Says the text back\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
    "\"required\":[\"text\"]}},"
    "{\"name\":\"wait\",\"description\":\"Waits until cancelled, reporting progress\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}}},"
    "{\"name\":\"read_file\",\"description\":\"Reads a text file\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}},"
    "\"required\":[\"path\"]}},"
    "{\"name\":\"crash\",\"description\":\"Crashes the process it runs in (for --isolate)\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}"
    "],"
    "\"resources\":[{\"uri\":\"hello://greeting\",\"name\":\"greeting\","
    "\"mimeType\":\"text/plain\"}],"
    "\"prompts\":[{\"name\":\"greet\",\"description\":\"Greets someone\","
    "\"arguments\":[{\"name\":\"name\",\"required\":true}]}],"
    "\"hooks\":[{\"id\":\"no-rm\",\"event\":\"PreToolUse\",\"matcher\":\"Bash\"}]}";

/* A reply of `len` bytes copied into a buffer of ours (given back to plugin_free). */
static int reply_bytes(toolhost_buf *out, int status, const char *text, size_t len) {
    out->ptr = malloc(len ? len : 1);
    if (!out->ptr) {
        out->len = 0;
        return TOOLHOST_INTERNAL_ERROR;
    }
    memcpy(out->ptr, text, len);
    out->len = len;
    return status;
}

/* A formatted reply. */
static int replyf(toolhost_buf *out, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = malloc((size_t)n + 1);
    if (!p)
        return TOOLHOST_INTERNAL_ERROR;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    out->ptr = (uint8_t *)p;
    out->len = (size_t)n; /* the NUL is not part of the reply */
    return status;
}

static toolhost_str str(const char *s) {
    toolhost_str t = {(const uint8_t *)s, strlen(s)};
    return t;
}

static int plugin_init(const toolhost_init *init, toolhost_buf *manifest) {
    host = init->host;
    self = init->plugin;
    host->log(self, TOOLHOST_LOG_INFO, str("hello_c"), str("loaded"));
    return reply_bytes(manifest, TOOLHOST_OK, MANIFEST, sizeof MANIFEST - 1);
}

/* A text result, `text` escaped as a JSON string. */
static int text_result(toolhost_buf *out, const char *text, int is_error) {
    char *quoted = json_quote(text, strlen(text));
    if (!quoted)
        return TOOLHOST_INTERNAL_ERROR;
    int s = replyf(out, TOOLHOST_OK, "{\"content\":[{\"type\":\"text\",\"text\":%s}],\"isError\":%s}",
                   quoted, is_error ? "true" : "false");
    free(quoted);
    return s;
}

static int tool(uint64_t call, const char *name, const char *args, toolhost_buf *out) {
    if (strcmp(name, "add") == 0) {
        double a = 0, b = 0;
        json_number(args, "a", &a);
        json_number(args, "b", &b);
        return replyf(out, TOOLHOST_OK,
                      "{\"content\":[{\"type\":\"text\",\"text\":\"%.17g\"}],"
                      "\"structuredContent\":{\"sum\":%.17g}}",
                      a + b, a + b);
    }
    if (strcmp(name, "echo") == 0) {
        char *text = json_string(args, "text");
        const char *said = text ? text : "";
        char *whole = malloc(strlen(ECHO_PREFIX) + strlen(said) + 1);
        if (!whole) {
            free(text);
            return TOOLHOST_INTERNAL_ERROR;
        }
        strcpy(whole, ECHO_PREFIX);
        strcat(whole, said);
        int s = text_result(out, whole, 0);
        free(whole);
        free(text);
        return s;
    }
    if (strcmp(name, "wait") == 0) {
        /* Real cancellation: ask the host now and then, and return once it says so. */
        double step = 0;
        while (host->is_cancelled(call) == 0) {
            host->progress(call, step, NAN_TOTAL, str("waiting"));
            step += 1;
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        return text_result(out, "cancelled", 1);
    }
    if (strcmp(name, "read_file") == 0) {
        char *path = json_string(args, "path");
        FILE *f = path ? fopen(path, "rb") : NULL;
        if (!f) {
            int s = replyf(out, TOOLHOST_OK,
                           "{\"content\":[{\"type\":\"text\",\"text\":\"cannot open the file\"}],"
                           "\"isError\":true}");
            free(path);
            return s;
        }
        char data[4096];
        size_t n = fread(data, 1, sizeof data - 1, f);
        fclose(f);
        free(path);
        data[n] = 0;
        return text_result(out, data, 0);
    }
    if (strcmp(name, "crash") == 0) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
        return TOOLHOST_INTERNAL_ERROR;
    }
    return replyf(out, TOOLHOST_METHOD_NOT_FOUND, "no tool %s", name);
}

static int plugin_call(uint64_t call, toolhost_str method, toolhost_str params, toolhost_buf *out) {
    /* The host's text is not NUL-terminated: copy it into a C string to scan it. */
    char *p = json_cstr(params);
    if (!p)
        return TOOLHOST_INTERNAL_ERROR;
    int s;
    if (json_is(method, "tools/call")) {
        char *name = json_string(p, "name");
        const char *args = json_find(p, "arguments");
        s = tool(call, name ? name : "", args ? args : "{}", out);
        free(name);
    } else if (json_is(method, "resources/read")) {
        s = replyf(out, TOOLHOST_OK,
                   "{\"contents\":[{\"uri\":\"hello://greeting\",\"mimeType\":\"text/plain\","
                   "\"text\":\"" GREETING "\"}]}");
    } else if (json_is(method, "prompts/get")) {
        char *who = json_string(p, "name");
        /* `name` is the prompt's; its argument is arguments.name. */
        const char *args = json_find(p, "arguments");
        char *arg = args ? json_string(args, "name") : NULL;
        free(who);
        if (!arg) {
            s = replyf(out, TOOLHOST_INVALID_PARAMS, "the prompt needs a `name`");
        } else {
            char *q = json_quote(arg, strlen(arg));
            s = replyf(out, TOOLHOST_OK,
                       "{\"description\":\"A greeting\",\"messages\":[{\"role\":\"user\","
                       "\"content\":{\"type\":\"text\",\"text\":%s}}]}",
                       q ? q : "\"\"");
            free(q);
            free(arg);
        }
    } else if (json_is(method, "hooks/run")) {
        const char *input = json_find(p, "input");
        char *command = NULL;
        if (input) {
            const char *tool_input = json_find(input, "tool_input");
            command = tool_input ? json_string(tool_input, "command") : NULL;
        }
        if (command && strstr(command, "rm -rf")) {
            s = replyf(out, TOOLHOST_OK,
                       "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
                       "\"permissionDecision\":\"deny\","
                       "\"permissionDecisionReason\":\"hello_c does not let rm -rf run\"}}");
        } else {
            s = replyf(out, TOOLHOST_OK, "{}");
        }
        free(command);
    } else {
        s = replyf(out, TOOLHOST_METHOD_NOT_FOUND, "hello_c does not answer this method");
    }
    free(p);
    return s;
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
