# pyframes_prog: pushes NVTX ranges (and makes device-API calls and an allocation failure)
# from known Python functions at known lines, for test_collector_pyframes.py, which finds
# the lines by the `# @tag` markers. Works on CPython 3.7 to 3.14; the nvtx PyPI package
# is used when "nvtx" is given and importable.
#   usage: python pyframes_prog.py HELPER.so [nvtx]
import atexit
import ctypes
import os
import sys
import threading

held = ctypes.PyDLL(sys.argv[1])  # calls keep the GIL
released = ctypes.CDLL(sys.argv[1])  # calls release the GIL, as PyTorch's ATen bindings do
for lib in (held, released):
    lib.tph_push.argtypes = [ctypes.c_char_p]
    lib.tph_thread.argtypes = [ctypes.c_char_p, ctypes.c_int]


def leaf_held():
    held.tph_push(b"held-leaf")  # @held_push
    held.tph_pop()


def caller_held():
    leaf_held()  # @held_call


def leaf_released():
    released.tph_push(b"released-leaf")  # @released_push
    released.tph_pop()


class Model:
    def forward(self):
        leaf_released()  # @released_call


def gen():
    held.tph_push(b"in-generator")  # @gen_push
    held.tph_pop()
    yield 1


def consume():
    for _ in gen():  # @gen_call
        pass


def recurse(n):
    if n == 0:
        held.tph_push(b"deep")  # @deep_push
        held.tph_pop()
        return
    recurse(n - 1)  # @deep_call


def in_thread():
    held.tph_push(b"py-thread")  # @thread_push
    held.tph_pop()


def worker():
    for _ in range(300):  # concurrent captures: the GIL is released around each call
        released.tph_push(b"parallel")  # @par_push
        released.tph_pop()


def parallel():
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for w in threads:
        w.start()
    for w in threads:
        w.join()


def c_thread():
    held.tph_thread(b"c-thread", 3)  # @cthread_call


def schritt_größe():
    held.tph_push(b"latin1-name")  # @latin1_push
    held.tph_pop()


def βήμα():
    held.tph_push(b"ucs2-name")  # @ucs2_push
    held.tph_pop()


def in_callback():
    held.tph_push(b"callback")  # @cb_push
    held.tph_pop()


callback = ctypes.CFUNCTYPE(None)(in_callback)


def via_c():
    held.tph_call(callback)  # @cb_call


def api_call():
    held.tph_api()  # @api_call


def oom():
    released.tph_oom()  # @oom_call


def nvtx_leaf(nvtx):
    nvtx.push_range("nvtx-leaf")  # @nvtx_push
    nvtx.pop_range()
    rng = nvtx.start_range("nvtx-start")  # @nvtx_start
    nvtx.end_range(rng)


def at_exit():  # runs inside Py_FinalizeEx, before it marks the runtime as finalizing
    held.tph_push(b"at-exit")  # @exit_push
    held.tph_pop()


def child_work():
    held.tph_push(b"fork-child")  # @fork_push
    held.tph_pop()


def fork_and_wait():
    pid = os.fork()
    if pid == 0:
        child_work()  # @fork_call
        sys.exit(0)  # a normal exit: the child's trace is closed by its atexit handler
    os.waitpid(pid, 0)


atexit.register(at_exit)
caller_held()  # @main_held
Model().forward()  # @main_released
consume()  # @main_gen
recurse(40)  # @main_deep
t = threading.Thread(target=in_thread)
t.start()
t.join()
parallel()
c_thread()  # @main_cthread
schritt_größe()  # @main_latin1
βήμα()  # @main_ucs2
via_c()  # @main_cb
api_call()  # @main_api
oom()  # @main_oom
if "nvtx" in sys.argv[2:]:
    import nvtx

    nvtx_leaf(nvtx)  # @main_nvtx
fork_and_wait()  # @main_fork
