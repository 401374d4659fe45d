/* tp_libpath: whose code a file holds, the program's or a library's: the one definition the
 * analyzer's stacks (tp_an_frames: the report, the TUI, the folded export) and the SQLite
 * export's frames table share, so "your code" means the same everywhere. Pure string tests
 * on paths as a trace records them; no file is opened.
 *
 * A Python source file (a code object's co_filename, or a PyTorch-profiler frame's file) is a
 * library's when it is "" (a C function called from Python, a module frame of the profiler's),
 * a frozen module ("<frozen importlib._bootstrap>"), under site-packages or dist-packages (or
 * trainprof-python, `record --pytorch`'s start-up file), in
 * the standard library (".../lib/python3.11/x.py", lib64 too), or a path the PyTorch profiler
 * made relative to sys.path ("torch/nn/modules/conv.py", "contextlib.py": it trims
 * site-packages and the script's folder alike) whose top-level module is the standard
 * library's or a package of the PyTorch stack (torch, transformers, numpy, nvtx, ...). Any
 * other path is the program's: its scripts ("train.py", "../run.py"), its modules (absolute
 * paths outside those folders), an editable install's source tree, exec'd text ("<string>").
 *
 * A native module is a library's when it lies in the system's library folders (/lib, /lib64,
 * /usr/lib*), CUDA's (/usr/local/cuda*, /opt/nvidia), a Python package (libtorch's), or is
 * one of NVIDIA's CUDA libraries by name (tp_libpath_cuda). In a Python program every native
 * frame is a library's (the interpreter's and its extensions'): callers decide that. */
#ifndef TP_LIBPATH_H
#define TP_LIBPATH_H

/* 1 when Python source file `file` is not the program's own code (see above); NULL: 1. */
int tp_libpath_python(const char *file);

/* 1 when native module `path` (a full path) is a library's (see above); NULL: 0 (unknown). */
int tp_libpath_native(const char *path);

/* 1 when a module's file name (no folder) is one of NVIDIA's CUDA libraries whose frames
 * open a CUDA call's stack (libcuda, libcudart, cuDNN, cuBLAS, NCCL); NULL: 0. */
int tp_libpath_cuda(const char *base);

#endif
