/* tp_libpath: whose code a file holds (see the header). */
#include "tp_libpath.h"

#include <stdlib.h>
#include <string.h>

/* The top-level modules whose files the PyTorch profiler's relative paths cannot tell from
 * the program's own: the standard library's that are Python files or packages (CPython 3.11's
 * sys.stdlib_module_names less its C modules) and the packages a PyTorch program calls into.
 * Sorted by strcmp (bsearch). */
/* clang-format off */
static const char *const library_modules[] = {
    "PIL", "__future__", "_aix_support", "_bootsubprocess", "_collections_abc", "_compat_pickle",
    "_compression", "_markupbase", "_osx_support", "_py_abc", "_pydecimal", "_pyio",
    "_sitebuiltins", "_strptime", "_threading_local", "_weakrefset", "abc", "accelerate", "aifc",
    "aiter", "antigravity", "apex", "argparse", "ast", "asynchat", "asyncio", "asyncore",
    "base64", "bdb", "bisect", "bz2", "cProfile", "calendar", "cgi", "cgitb", "chunk", "cmd",
    "code", "codecs", "codeop", "collections", "colorsys", "compileall", "concurrent",
    "configparser", "contextlib", "contextvars", "copy", "copyreg", "crypt", "csv", "ctypes",
    "curses", "cv2", "dataclasses", "datasets", "datetime", "dbm", "decimal", "deepspeed",
    "difflib", "diffusers", "dis", "distutils", "doctest", "einops", "email", "encodings",
    "ensurepip", "enum", "fairscale", "filecmp", "fileinput", "filelock", "flash_attn",
    "flashinfer", "fnmatch", "fractions", "fsspec", "ftplib", "functools", "functorch",
    "genericpath", "getopt", "getpass", "gettext", "glob", "graphlib", "gzip", "hashlib", "heapq",
    "hmac", "html", "http", "huggingface_hub", "idlelib", "imaplib", "imghdr", "imp", "importlib",
    "inspect", "io", "ipaddress", "jinja2", "json", "keyword", "lib2to3", "lightning",
    "lightning_fabric", "linecache", "locale", "logging", "lzma", "mailbox", "mailcap",
    "mimetypes", "modulefinder", "multiprocessing", "netrc", "networkx", "nntplib", "ntpath",
    "nturl2path", "numbers", "numpy", "nvtx", "opcode", "operator", "optparse", "os", "packaging",
    "pandas", "pathlib", "pdb", "peft", "pickle", "pickletools", "pipes", "pkgutil", "platform",
    "plistlib", "poplib", "posixpath", "pprint", "profile", "pstats", "pty", "py_compile",
    "pyclbr", "pydoc", "pydoc_data", "pytorch_lightning", "queue", "quopri", "random", "re",
    "reprlib", "rlcompleter", "runpy", "safetensors", "sched", "scipy", "secrets", "selectors",
    "shelve", "shlex", "shutil", "signal", "site", "sklearn", "smtpd", "smtplib", "sndhdr",
    "socket", "socketserver", "sqlite3", "sre_compile", "sre_constants", "sre_parse", "ssl",
    "stat", "statistics", "string", "stringprep", "struct", "subprocess", "sunau", "sympy",
    "symtable", "sysconfig", "tabnanny", "tarfile", "telnetlib", "tempfile", "tensorboard",
    "textwrap", "this", "threading", "timeit", "timm", "tkinter", "token", "tokenize",
    "tokenizers", "tomllib", "torch", "torchaudio", "torchdata", "torchmetrics", "torchtext",
    "torchvision", "tqdm", "trace", "traceback", "tracemalloc", "transformers", "triton", "tty",
    "turtle", "turtledemo", "types", "typing", "typing_extensions", "unittest", "urllib", "uu",
    "uuid", "venv", "wandb", "warnings", "wave", "weakref", "webbrowser", "wsgiref", "xdrlib",
    "xformers", "xml", "xmlrpc", "yaml", "zipapp", "zipfile", "zipimport", "zoneinfo"};
/* clang-format on */

static int cmp_name(const void *key, const void *elem) {
    return strcmp(key, *(const char *const *)elem);
}

/* 1 when `path` lies under a Python's standard library: a folder lib/pythonX.Y (or lib64/) */
static int in_stdlib(const char *path) {
    for (const char *p = path; (p = strstr(p, "/python")) != NULL; p++) {
        int lib = (p - path >= 4 && !strncmp(p - 4, "/lib", 4)) ||
                  (p - path >= 6 && !strncmp(p - 6, "/lib64", 6));
        const char *q = p + 7;
        if (!lib || *q < '0' || *q > '9')
            continue;
        while (*q >= '0' && *q <= '9')
            q++;
        if (*q++ != '.' || *q < '0' || *q > '9')
            continue;
        while (*q >= '0' && *q <= '9')
            q++;
        if (*q == '/')
            return 1;
    }
    return 0;
}

/* Installed packages, and `record --pytorch`'s start-up file (lib/trainprof-python/: its
 * frames lie between the program's loop and torch's DataLoader) */
static int in_packages(const char *path) {
    return strstr(path, "/site-packages/") || strstr(path, "/dist-packages/") ||
           strstr(path, "/trainprof-python/");
}

int tp_libpath_python(const char *file) {
    if (!file || !file[0] || !strncmp(file, "<frozen", 7))
        return 1;
    if (in_packages(file) || in_stdlib(file))
        return 1;
    if (file[0] == '/' || file[0] == '<' || file[0] == '.')
        return 0; /* the program's module, exec'd text ("<string>"), a script by a relative path */
    /* a path relative to sys.path (the PyTorch profiler's): its top-level module */
    char top[64];
    size_t n = strcspn(file, "/");
    if (!file[n] && n > 3 && !strcmp(file + n - 3, ".py"))
        n -= 3;
    if (n >= sizeof top)
        return 0;
    memcpy(top, file, n);
    top[n] = 0;
    return bsearch(top, library_modules, sizeof library_modules / sizeof *library_modules,
                   sizeof *library_modules, cmp_name) != NULL;
}

int tp_libpath_cuda(const char *base) {
    static const char *const libs[] = {"libcuda.so", "libcudart.so", "libcudnn", "libcublas",
                                       "libnccl.so"};
    for (size_t i = 0; base && i < sizeof libs / sizeof *libs; i++)
        if (!strncmp(base, libs[i], strlen(libs[i])))
            return 1;
    return 0;
}

int tp_libpath_native(const char *path) {
    static const char *const dirs[] = {"/lib/", "/lib64/", "/usr/lib", "/usr/local/cuda",
                                       "/opt/nvidia/"};
    if (!path)
        return 0;
    const char *base = strrchr(path, '/');
    if (tp_libpath_cuda(base ? base + 1 : path))
        return 1;
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
        if (!strncmp(path, dirs[i], strlen(dirs[i])))
            return 1;
    return in_packages(path);
}
