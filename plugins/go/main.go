// hello_go: a toolhost plugin in Go, through the plain C ABI (toolhost_plugin.h):
//
//	CGO_CFLAGS=-I../../c-abi/include go build -buildmode=c-shared -o libhello_go.so .
//
// The same tools, resource, prompt and hook as the C example (plugins/c/hello.c), with
// encoding/json doing the JSON. Go cannot unload: a replaced version stays mapped (the host
// says so in its log), so prefer running Go plugins with --isolate.
package main

/*
#include <stdlib.h>
#include "toolhost_plugin.h"

int32_t th_log(const toolhost_host *h, uint64_t handle, uint8_t level, toolhost_str target,
               toolhost_str message);
int32_t th_is_cancelled(const toolhost_host *h, uint64_t call);
int32_t th_progress(const toolhost_host *h, uint64_t call, double progress, double total,
                    toolhost_str message);
*/
import "C"

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"time"
	"unsafe"
)

var host *C.toolhost_host

// What `echo` puts before the text: set at build time with -ldflags "-X 'main.echoPrefix=v2: '"
// (a test builds a second version with another).
var echoPrefix = ""

const manifest = `{"name":"hello_go","version":"0.1.0","description":"A toolhost plugin written in Go",
"tools":[
 {"name":"add","description":"Adds two numbers",
  "inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},
  "outputSchema":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]},
  "annotations":{"readOnlyHint":true}},
 {"name":"echo","description":"Says the text back",
  "inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},
 {"name":"wait","description":"Waits until cancelled, reporting progress","inputSchema":{"type":"object","properties":{}}},
 {"name":"read_file","description":"Reads a text file",
  "inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},
 {"name":"crash","description":"Crashes the process it runs in (for --isolate)","inputSchema":{"type":"object","properties":{}}}
],
"resources":[{"uri":"hello://go","name":"greeting","mimeType":"text/plain"}],
"prompts":[{"name":"greet","description":"Greets someone","arguments":[{"name":"name","required":true}]}],
"hooks":[{"id":"no-rm","event":"PreToolUse","matcher":"Bash"}]}`

// bytes copies the host's text (it has no NUL, and stays the host's).
func bytes(s C.toolhost_str) []byte {
	if s.len == 0 {
		return nil
	}
	return C.GoBytes(unsafe.Pointer(s.ptr), C.int(s.len))
}

// str lends Go text to the host for the duration of one host function (it is copied there).
func str(s string) (C.toolhost_str, func()) {
	p := C.CString(s)
	return C.toolhost_str{ptr: (*C.uint8_t)(unsafe.Pointer(p)), len: C.size_t(len(s))}, func() { C.free(unsafe.Pointer(p)) }
}

// reply hands `b` to the host in a buffer of C's malloc, which goFree frees.
func reply(out *C.toolhost_buf, status int32, b []byte) C.int32_t {
	out.ptr = (*C.uint8_t)(C.CBytes(b))
	out.len = C.size_t(len(b))
	return C.int32_t(status)
}

func replyJSON(out *C.toolhost_buf, v any) C.int32_t {
	b, err := json.Marshal(v)
	if err != nil {
		return reply(out, -32603, []byte(err.Error()))
	}
	return reply(out, 0, b)
}

func text(t string, isError bool) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": t}}, "isError": isError}
}

//export goInit
func goInit(init *C.toolhost_init, out *C.toolhost_buf) C.int32_t {
	host = init.host
	target, f1 := str("hello_go")
	msg, f2 := str("loaded")
	C.th_log(host, init.plugin, 3, target, msg)
	f1()
	f2()
	return reply(out, 0, []byte(manifest))
}

func tool(call C.uint64_t, name string, args map[string]any) map[string]any {
	switch name {
	case "add":
		a, _ := args["a"].(float64)
		b, _ := args["b"].(float64)
		return map[string]any{
			"content":           []any{map[string]any{"type": "text", "text": formatNumber(a + b)}},
			"structuredContent": map[string]any{"sum": a + b},
		}
	case "echo":
		t, _ := args["text"].(string)
		return text(echoPrefix+t, false)
	case "wait":
		// Real cancellation: ask the host now and then, and return once it says so.
		for step := 0.0; C.th_is_cancelled(host, call) == 0; step++ {
			msg, free := str("waiting")
			C.th_progress(host, call, C.double(step), C.double(math.NaN()), msg)
			free()
			time.Sleep(10 * time.Millisecond)
		}
		return text("cancelled", true)
	case "read_file":
		p, _ := args["path"].(string)
		data, err := os.ReadFile(p)
		if err != nil {
			return text("cannot open the file", true)
		}
		return text(string(data), false)
	case "crash":
		var nowhere *int
		*nowhere = 1
	}
	return text("no tool "+name, true)
}

func formatNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

//export goCall
func goCall(call C.uint64_t, method C.toolhost_str, params C.toolhost_str, out *C.toolhost_buf) C.int32_t {
	var p map[string]any
	if err := json.Unmarshal(bytes(params), &p); err != nil {
		return reply(out, -32602, []byte(err.Error()))
	}
	switch string(bytes(method)) {
	case "tools/call":
		name, _ := p["name"].(string)
		args, _ := p["arguments"].(map[string]any)
		return replyJSON(out, tool(call, name, args))
	case "resources/read":
		return replyJSON(out, map[string]any{"contents": []any{map[string]any{
			"uri": "hello://go", "mimeType": "text/plain", "text": "Hello from Go!"}}})
	case "prompts/get":
		args, _ := p["arguments"].(map[string]any)
		who, ok := args["name"].(string)
		if !ok {
			return reply(out, -32602, []byte("the prompt needs a `name`"))
		}
		return replyJSON(out, map[string]any{"description": "A greeting", "messages": []any{
			map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": who}}}})
	case "hooks/run":
		input, _ := p["input"].(map[string]any)
		toolInput, _ := input["tool_input"].(map[string]any)
		command, _ := toolInput["command"].(string)
		if strings.Contains(command, "rm -rf") {
			return replyJSON(out, map[string]any{"hookSpecificOutput": map[string]any{
				"hookEventName": "PreToolUse", "permissionDecision": "deny",
				"permissionDecisionReason": "hello_go does not let rm -rf run"}})
		}
		return reply(out, 0, []byte("{}"))
	}
	return reply(out, -32601, []byte("hello_go does not answer this method"))
}

//export goFree
func goFree(buf C.toolhost_buf) {
	C.free(unsafe.Pointer(buf.ptr))
}

func main() {}
