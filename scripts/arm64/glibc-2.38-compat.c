// Linked into the arm64 cross-build only (scripts/cross-arm64), never into a native build.
//
// Why: the static Swift runtime of Debian unstable's swiftlang 6.2 (libswiftCore.a,
// libdispatch.a, libCoreFoundation.a, lib_FoundationICU.a) was compiled against a glibc of 2.38
// or later, whose headers redirect strtol, strtoll, strtoul and sscanf to their C23 variants
// (__isoc23_*) and which has strlcpy and strlcat. A Raspberry Pi on Debian 12 (bookworm) or
// Raspberry Pi OS has glibc 2.36, which has none of the six: without these definitions the
// link against bookworm's libc fails. They sit on top of the older functions, which differ
// from the C23 variants only on a "0b" binary prefix with base 0 or 2 (and sscanf's %b).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long __isoc23_strtol(const char *string, char **end, int base) {
    return strtol(string, end, base);
}

long long __isoc23_strtoll(const char *string, char **end, int base) {
    return strtoll(string, end, base);
}

unsigned long __isoc23_strtoul(const char *string, char **end, int base) {
    return strtoul(string, end, base);
}

int __isoc23_sscanf(const char *string, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    int assigned = vsscanf(string, format, arguments);
    va_end(arguments);
    return assigned;
}

// BSD semantics: copies at most size - 1 bytes, always terminates when size > 0, and returns
// strlen(source) so the caller can tell a truncation.
size_t strlcpy(char *destination, const char *source, size_t size) {
    size_t length = strlen(source);
    if (size > 0) {
        size_t copied = length < size - 1 ? length : size - 1;
        memcpy(destination, source, copied);
        destination[copied] = '\0';
    }
    return length;
}

// Appends to a terminated destination of capacity size; returns the length it tried to make.
size_t strlcat(char *destination, const char *source, size_t size) {
    size_t existing = strnlen(destination, size);
    if (existing == size) {
        return size + strlen(source);
    }
    return existing + strlcpy(destination + existing, source, size - existing);
}
