/*
 * json_mini.h: just enough JSON for a toolhost plugin in C: find a member of an object,
 * read it as a string or a number, quote a string. Not a validator: the host sends JSON it
 * produced or checked (a tool's arguments against its inputSchema).
 */
#ifndef JSON_MINI_H
#define JSON_MINI_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolhost_plugin.h"

/* `total` of a progress report whose end is unknown. */
#define NAN_TOTAL ((double)NAN)

/* A NUL-terminated copy of text the host lent (its own has no NUL). Free it. */
static inline char *json_cstr(toolhost_str s) {
    char *p = malloc(s.len + 1);
    if (!p)
        return NULL;
    if (s.len)
        memcpy(p, s.ptr, s.len);
    p[s.len] = 0;
    return p;
}

/* Whether the host's text is exactly `lit`. */
static inline int json_is(toolhost_str s, const char *lit) {
    size_t n = strlen(lit);
    return s.len == n && memcmp(s.ptr, lit, n) == 0;
}

static inline const char *json_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* Past the string starting at `p` (its opening quote), or NULL. */
static inline const char *json_skip_string(const char *p) {
    if (*p != '"')
        return NULL;
    for (p++; *p; p++) {
        if (*p == '\\') {
            if (!*++p)
                return NULL;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* Past the value starting at `p`, or NULL. */
static inline const char *json_skip(const char *p) {
    p = json_ws(p);
    if (*p == '"')
        return json_skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (*p) {
            if (*p == '"') {
                p = json_skip_string(p);
                if (!p)
                    return NULL;
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            else if (*p == '}' || *p == ']') {
                if (--depth == 0)
                    return p + 1;
            }
            p++;
        }
        return NULL;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\t' &&
           *p != '\r')
        p++;
    return p;
}

/* The value of member `key` of the object at `obj` (keys compared as written, unescaped
 * keys only), or NULL. */
static inline const char *json_find(const char *obj, const char *key) {
    const char *p = json_ws(obj);
    if (*p != '{')
        return NULL;
    p = json_ws(p + 1);
    size_t n = strlen(key);
    while (*p == '"') {
        const char *end = json_skip_string(p);
        if (!end)
            return NULL;
        int match = (size_t)(end - p - 2) == n && memcmp(p + 1, key, n) == 0;
        p = json_ws(end);
        if (*p != ':')
            return NULL;
        p = json_ws(p + 1);
        if (match)
            return p;
        p = json_skip(p);
        if (!p)
            return NULL;
        p = json_ws(p);
        if (*p != ',')
            return NULL;
        p = json_ws(p + 1);
    }
    return NULL;
}

static inline int json_hex(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

/* Member `key` of `obj` as a decoded, NUL-terminated string (free it), or NULL when it is
 * missing or not a string. */
static inline char *json_string(const char *obj, const char *key) {
    const char *p = json_find(obj, key);
    if (!p || *p != '"')
        return NULL;
    const char *end = json_skip_string(p);
    if (!end)
        return NULL;
    char *out = malloc((size_t)(end - p));
    if (!out)
        return NULL;
    char *o = out;
    for (p++; p < end - 1; p++) {
        if (*p != '\\') {
            *o++ = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'r': *o++ = '\r'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'u': {
            long c = json_hex(p + 1);
            if (c < 0)
                break;
            p += 4;
            if (c >= 0xd800 && c < 0xdc00 && p[1] == '\\' && p[2] == 'u') {
                long lo = json_hex(p + 3);
                if (lo >= 0xdc00 && lo < 0xe000) {
                    c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                    p += 6;
                }
            }
            if (c < 0x80) {
                *o++ = (char)c;
            } else if (c < 0x800) {
                *o++ = (char)(0xc0 | (c >> 6));
                *o++ = (char)(0x80 | (c & 0x3f));
            } else if (c < 0x10000) {
                *o++ = (char)(0xe0 | (c >> 12));
                *o++ = (char)(0x80 | ((c >> 6) & 0x3f));
                *o++ = (char)(0x80 | (c & 0x3f));
            } else {
                *o++ = (char)(0xf0 | (c >> 18));
                *o++ = (char)(0x80 | ((c >> 12) & 0x3f));
                *o++ = (char)(0x80 | ((c >> 6) & 0x3f));
                *o++ = (char)(0x80 | (c & 0x3f));
            }
            break;
        }
        default: *o++ = *p; break; /* \" \\ \/ */
        }
    }
    *o = 0;
    return out;
}

/* Member `key` of `obj` as a number into `*out`; 0 when it is missing or not a number. */
static inline int json_number(const char *obj, const char *key, double *out) {
    const char *p = json_find(obj, key);
    if (!p)
        return 0;
    char *end;
    double v = strtod(p, &end);
    if (end == p)
        return 0;
    *out = v;
    return 1;
}

/* `v` as the text of a JSON number, into `out` (of `cap` bytes, NUL-terminated); its length,
 * as snprintf returns it. The same text as "%.17g", written directly when `v` is a whole
 * number below 2^53 (printf's floating-point path costs more than the rest of a small
 * plugin's call; docs/benchmarks.md). */
static inline int json_write_number(char *out, size_t cap, double v) {
    if (fabs(v) < 9007199254740992.0 && v == (double)(long long)v && cap >= 18) {
        char digits[17];
        int k = 0;
        unsigned long long u = (unsigned long long)fabs(v);
        do {
            digits[k++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        int n = 0;
        if (signbit(v))
            out[n++] = '-';
        while (k)
            out[n++] = digits[--k];
        out[n] = 0;
        return n;
    }
    return snprintf(out, cap, "%.17g", v);
}

/* `s` (`len` bytes of UTF-8) as a JSON string literal, quotes included, NUL-terminated (free
 * it). */
static inline char *json_quote(const char *s, size_t len) {
    char *out = malloc(len * 6 + 3);
    if (!out)
        return NULL;
    char *o = out;
    *o++ = '"';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            memcpy(o, "\\u00", 4);
            o += 4;
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    *o = 0;
    return out;
}

#endif
