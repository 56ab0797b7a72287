//! hello_zig: a toolhost plugin in Zig, through the plain C ABI (toolhost_plugin.h):
//!
//!   plugins/zig/build.sh OUT_DIR   (zig is `python3 -m ziglang`, or $ZIG)
//!
//! which translates toolhost_plugin.h into Zig (`zig translate-c`: this Zig has no
//! `@cImport`) next to a copy of this file, then runs `zig build-lib -dynamic`.
//!
//! The same tools, resource, prompt and hook as the C example (plugins/c/hello.c); JSON is
//! read by its json_mini.h (json.c) and written with snprintf.
const std = @import("std");
/// toolhost_plugin.h, translated by `zig translate-c` (build.sh).
const c = @import("toolhost_plugin.zig");

// The few C library functions used (linked with -lc).
extern fn malloc(n: usize) ?*anyopaque;
extern fn free(p: ?*anyopaque) void;
extern fn snprintf(buf: [*]u8, n: usize, fmt: [*:0]const u8, ...) c_int;
extern fn fopen(path: [*:0]const u8, mode: [*:0]const u8) ?*anyopaque;
extern fn fread(buf: [*]u8, size: usize, n: usize, f: ?*anyopaque) usize;
extern fn fclose(f: ?*anyopaque) c_int;
extern fn usleep(us: c_uint) c_int;

extern fn hz_cstr(s: c.toolhost_str) ?[*:0]u8;
extern fn hz_find(obj: [*:0]const u8, key: [*:0]const u8) ?[*:0]const u8;
extern fn hz_string(obj: [*:0]const u8, key: [*:0]const u8) ?[*:0]u8;
extern fn hz_number(obj: [*:0]const u8, key: [*:0]const u8, out: *f64) c_int;
extern fn hz_quote(s: [*]const u8, len: usize) ?[*:0]u8;
extern fn hz_echo_prefix() [*:0]const u8;

/// The name the host reads from the file before loading it.
export const TOOLHOST_PLUGIN_NAME = "hello_zig".*;

var host: ?*const c.toolhost_host = null;

const manifest =
    \\{"name":"hello_zig","version":"0.1.0","description":"A toolhost plugin written in Zig",
    \\"tools":[
    \\{"name":"add","description":"Adds two numbers",
    \\"inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},
    \\"outputSchema":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]},
    \\"annotations":{"readOnlyHint":true}},
    \\{"name":"echo","description":"Says the text back",
    \\"inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},
    \\{"name":"wait","description":"Waits until cancelled, reporting progress","inputSchema":{"type":"object","properties":{}}},
    \\{"name":"read_file","description":"Reads a text file",
    \\"inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},
    \\{"name":"crash","description":"Crashes the process it runs in (for --isolate)","inputSchema":{"type":"object","properties":{}}}
    \\],
    \\"resources":[{"uri":"hello://zig","name":"greeting","mimeType":"text/plain"}],
    \\"prompts":[{"name":"greet","description":"Greets someone","arguments":[{"name":"name","required":true}]}],
    \\"hooks":[{"id":"no-rm","event":"PreToolUse","matcher":"Bash"}]}
;

fn lend(s: []const u8) c.toolhost_str {
    return .{ .ptr = s.ptr, .len = s.len };
}

/// Hands `text` to the host in a buffer of C's malloc (plugin_free frees it).
fn reply(out: *c.toolhost_buf, status: i32, text: []const u8) i32 {
    const p: ?*anyopaque = malloc(if (text.len == 0) 1 else text.len);
    if (p == null) return c.TOOLHOST_INTERNAL_ERROR;
    const bytes: [*]u8 = @ptrCast(p.?);
    @memcpy(bytes[0..text.len], text);
    out.ptr = bytes;
    out.len = text.len;
    return status;
}

/// A text result, `text` quoted as a JSON string.
fn textResult(out: *c.toolhost_buf, text: []const u8, is_error: bool) i32 {
    const quoted = hz_quote(text.ptr, text.len) orelse return c.TOOLHOST_INTERNAL_ERROR;
    defer free(quoted);
    return replyf(out, "{\"content\":[{\"type\":\"text\",\"text\":%s}],\"isError\":%s}", .{ quoted, @as([*:0]const u8, if (is_error) "true" else "false") });
}

/// A reply formatted by C's snprintf.
fn replyf(out: *c.toolhost_buf, comptime fmt: [*:0]const u8, args: anytype) i32 {
    var buf: [8192]u8 = undefined;
    const n = @call(.auto, snprintf, .{ &buf, buf.len, fmt } ++ args);
    if (n < 0 or @as(usize, @intCast(n)) >= buf.len) return c.TOOLHOST_INTERNAL_ERROR;
    return reply(out, c.TOOLHOST_OK, buf[0..@intCast(n)]);
}

fn eql(a: [*:0]const u8, b: []const u8) bool {
    return std.mem.eql(u8, std.mem.span(a), b);
}

fn isMethod(s: c.toolhost_str, name: []const u8) bool {
    return s.len == name.len and std.mem.eql(u8, s.ptr[0..s.len], name);
}

fn tool(call: u64, name: [*:0]const u8, args: [*:0]const u8, out: *c.toolhost_buf) i32 {
    if (eql(name, "add")) {
        var a: f64 = 0;
        var b: f64 = 0;
        _ = hz_number(args, "a", &a);
        _ = hz_number(args, "b", &b);
        return replyf(out, "{\"content\":[{\"type\":\"text\",\"text\":\"%.17g\"}],\"structuredContent\":{\"sum\":%.17g}}", .{ a + b, a + b });
    }
    if (eql(name, "echo")) {
        const text = hz_string(args, "text");
        defer free(text);
        const said = if (text) |t| std.mem.span(t) else "";
        const prefix = std.mem.span(hz_echo_prefix());
        if (prefix.len == 0) return textResult(out, said, false);
        var whole: [8192]u8 = undefined;
        if (prefix.len + said.len > whole.len) return c.TOOLHOST_INTERNAL_ERROR;
        @memcpy(whole[0..prefix.len], prefix);
        @memcpy(whole[prefix.len..][0..said.len], said);
        return textResult(out, whole[0 .. prefix.len + said.len], false);
    }
    if (eql(name, "wait")) {
        // Real cancellation: ask the host now and then, and return once it says so.
        const h = host.?;
        var step: f64 = 0;
        while (h.is_cancelled.?(call) == 0) : (step += 1) {
            _ = h.progress.?(call, step, std.math.nan(f64), lend("waiting"));
            _ = usleep(10 * 1000);
        }
        return textResult(out, "cancelled", true);
    }
    if (eql(name, "read_file")) {
        const path = hz_string(args, "path");
        defer free(path);
        const f = if (path) |p| fopen(p, "rb") else null;
        if (f == null) return textResult(out, "cannot open the file", true);
        var data: [4096]u8 = undefined;
        const n = fread(&data, 1, data.len, f);
        _ = fclose(f);
        return textResult(out, data[0..n], false);
    }
    if (eql(name, "crash")) {
        const nowhere: *allowzero volatile i32 = @ptrFromInt(0);
        nowhere.* = 1;
    }
    return reply(out, c.TOOLHOST_METHOD_NOT_FOUND, "no such tool");
}

fn pluginInit(init: [*c]const c.toolhost_init, out: [*c]c.toolhost_buf) callconv(.c) i32 {
    host = init.*.host;
    _ = host.?.log.?(init.*.plugin, c.TOOLHOST_LOG_INFO, lend("hello_zig"), lend("loaded"));
    return reply(out, c.TOOLHOST_OK, manifest);
}

fn pluginCall(call: u64, method: c.toolhost_str, params: c.toolhost_str, out: [*c]c.toolhost_buf) callconv(.c) i32 {
    // The host's text has no NUL: copy it into a C string to scan it.
    const p = hz_cstr(params) orelse return c.TOOLHOST_INTERNAL_ERROR;
    defer free(p);
    if (isMethod(method, "tools/call")) {
        const name = hz_string(p, "name");
        defer free(name);
        const args = hz_find(p, "arguments") orelse "{}";
        return tool(call, name orelse "", args, out);
    }
    if (isMethod(method, "resources/read")) {
        return reply(out, c.TOOLHOST_OK, "{\"contents\":[{\"uri\":\"hello://zig\",\"mimeType\":\"text/plain\",\"text\":\"Hello from Zig!\"}]}");
    }
    if (isMethod(method, "prompts/get")) {
        const args = hz_find(p, "arguments") orelse return reply(out, c.TOOLHOST_INVALID_PARAMS, "the prompt needs a `name`");
        const who = hz_string(args, "name") orelse return reply(out, c.TOOLHOST_INVALID_PARAMS, "the prompt needs a `name`");
        defer free(who);
        const q = hz_quote(who, std.mem.len(who)) orelse return c.TOOLHOST_INTERNAL_ERROR;
        defer free(q);
        return replyf(out, "{\"description\":\"A greeting\",\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":%s}}]}", .{q});
    }
    if (isMethod(method, "hooks/run")) {
        var command: ?[*:0]u8 = null;
        if (hz_find(p, "input")) |input| {
            if (hz_find(input, "tool_input")) |ti| command = hz_string(ti, "command");
        }
        defer free(command);
        if (command) |cmd| {
            if (std.mem.indexOf(u8, std.mem.span(cmd), "rm -rf") != null) {
                return reply(out, c.TOOLHOST_OK, "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"hello_zig does not let rm -rf run\"}}");
            }
        }
        return reply(out, c.TOOLHOST_OK, "{}");
    }
    return reply(out, c.TOOLHOST_METHOD_NOT_FOUND, "hello_zig does not answer this method");
}

fn pluginFree(buf: c.toolhost_buf) callconv(.c) void {
    free(buf.ptr);
}

const plugin = c.toolhost_plugin{
    .size = @sizeOf(c.toolhost_plugin),
    .abi_version = c.TOOLHOST_ABI_VERSION,
    .init = pluginInit,
    .call = pluginCall,
    .free = pluginFree,
    .unload = null,
    .save_state = null,
    .restore_state = null,
};

export fn toolhost_plugin_entry() *const c.toolhost_plugin {
    return &plugin;
}
