/* fake_cpython: a STAND-IN for CPython, named as such: a C program that exports the C-API
 * symbols the collector looks up (built with -rdynamic, as Debian's python3 is), but whose
 * version or memory layout must turn Python frames off. It tests that contract only, never
 * the real walk (test_collector_pyframes.py runs real interpreters for that):
 *   fake_cpython old        claims CPython 3.7: unsupported, native frames only
 *   fake_cpython badlayout  claims 3.11, but its thread state points at unreadable memory:
 *                           the collector's checked first walk must notice and turn Python
 *                           frames off (an unchecked walk would crash here)
 * Each mode pushes three NVTX ranges from main and prints "pushed", or "skip" when the
 * kernel refuses process_vm_readv (the collector then cannot check, so neither can we). */
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* The C-API as the collector sees it (dlsym): names and calling conventions only. */
int Py_IsInitialized(void);
int _Py_IsFinalizing(void);
void *PyGILState_GetThisThreadState(void);
int PyCode_Addr2Line(void *code, int offset);
unsigned long Py_Version;
_Alignas(16) char PyCode_Type[512];
_Alignas(16) char PyUnicode_Type[512];

static _Alignas(16) char thread_state[512];

int Py_IsInitialized(void) {
    return 1;
}

int _Py_IsFinalizing(void) {
    return 0;
}

void *PyGILState_GetThisThreadState(void) {
    return thread_state;
}

int PyCode_Addr2Line(void *code, int offset) {
    (void)code;
    return offset;
}

static int can_check(void) {
    long probe = 42, got = 0;
    struct iovec l = {&got, sizeof got}, r = {&probe, sizeof probe};
    return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof got && got == probe;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "old")) {
        Py_Version = 0x030710f0; /* 3.7.16 */
    } else if (!strcmp(mode, "badlayout")) {
        if (!can_check()) {
            printf("skip\n");
            return 0;
        }
        Py_Version = 0x030b07f0; /* 3.11.7 */
        /* PyThreadState.cframe (offset 56 in 3.11) -> a page that cannot be read. */
        void *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED)
            return 1;
        memcpy(thread_state + 56, &page, sizeof page);
    } else {
        fprintf(stderr, "usage: fake_cpython old|badlayout\n");
        return 2;
    }
    for (int i = 0; i < 3; i++) {
        nvtxRangePushA("fake-python");
        nvtxRangePop();
    }
    printf("pushed\n");
    return 0;
}
