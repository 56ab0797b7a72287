/* The JSON helpers of the C example (plugins/c/json_mini.h), as functions hello.zig links. */
#include "json_mini.h" /* plugins/c/ */

char *hz_cstr(toolhost_str s) { return json_cstr(s); }
const char *hz_find(const char *obj, const char *key) { return json_find(obj, key); }
char *hz_string(const char *obj, const char *key) { return json_string(obj, key); }
int hz_number(const char *obj, const char *key, double *out) { return json_number(obj, key, out); }
char *hz_quote(const char *s, size_t len) { return json_quote(s, len); }

/* What `echo` puts before the text (a test builds a second version with
 * `build.sh OUT_DIR -DECHO_PREFIX='"v2: "'`). */
#ifndef ECHO_PREFIX
#define ECHO_PREFIX ""
#endif
const char *hz_echo_prefix(void) { return ECHO_PREFIX; }
