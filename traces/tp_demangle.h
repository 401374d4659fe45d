/* tp_demangle: kernel names as Kineto, nsys and HTA show them.
 *
 * CUPTI gives a C++ kernel's name mangled ("_ZN5cudnn21bn_bw_1C11_kernel_new..."); torch.profiler
 * writes it demangled ("void cudnn::bn_bw_1C11_kernel_new<float, ...>(...)"), and so do the
 * native loader, the exports and nsys's demangledName here, through this one function. The
 * demangler is the C++ ABI's (__cxa_demangle in libstdc++), so this module is a library of its
 * own that only trainprof's side links (the model, the exports): the collector, injected into
 * C programs too, never carries libstdc++. */
#ifndef TP_DEMANGLE_H
#define TP_DEMANGLE_H

/* The demangled form of `name` (malloc'ed: the caller frees it), or NULL when `name` is not a
 * mangled C++ name ("_Z...") or cannot be demangled: a name libstdc++ cannot read (some of
 * cuDNN's CUTLASS kernels) stays as recorded, as it does in Kineto's traces. */
char *tp_demangle(const char *name);

#endif
