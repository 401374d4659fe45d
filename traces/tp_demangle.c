/* tp_demangle: see tp_demangle.h. */
#include "tp_demangle.h"

#include <stddef.h>
#include <stdlib.h>

/* The C++ ABI's demangler (libstdc++; <cxxabi.h> is C++ only). */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

char *tp_demangle(const char *name) {
    if (!name || name[0] != '_' || name[1] != 'Z' || !name[2])
        return NULL;
    int st = -1;
    char *d = __cxa_demangle(name, NULL, NULL, &st);
    if (st != 0 || !d) {
        free(d);
        return NULL;
    }
    return d;
}
