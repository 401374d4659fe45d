# stacks_prog: launches kernels of known durations (through stacks_helper.so) and pushes NVTX
# ranges (the nvtx PyPI package) from known functions at known lines (one launch through the
# standard library's frames), for
# test_stacks_python.py, which finds the lines by the `# @tag` markers. Then a C thread
# without Python state launches, and a forked child launches once and ends with os._exit.
#   usage: python stacks_prog.py HELPER.so
import ctypes
import os
import sys
import unittest.mock

import nvtx

lib = ctypes.CDLL(sys.argv[1])  # releases the GIL around each call, as PyTorch's ATen does
lib.tsh_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
lib.tsh_thread.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_int]


def forward(n):
    nvtx.push_range("forward")  # @fwd_push
    for _ in range(n):
        lib.tsh_launch(b"gemm_fwd", 40000)  # @fwd_launch
    nvtx.pop_range()


def backward(n):
    nvtx.push_range("backward")  # @bwd_push
    for _ in range(n):
        lib.tsh_launch(b"gemm_bwd", 70000)  # @bwd_launch
    nvtx.pop_range()


def train_step():
    forward(3)  # @step_fwd
    backward(2)  # @step_bwd
    nvtx.mark("step-done")


def aux_forward():  # a range of the same name in another NVTX domain: never merged
    nvtx.push_range("forward", domain="aux")  # @aux_push
    nvtx.mark("step-done", domain="aux")
    nvtx.pop_range(domain="aux")


def through_library():  # a launch from inside the standard library's code (unittest.mock's)
    unittest.mock.Mock(side_effect=lib.tsh_launch)(b"lib_kernel", 20000)  # @lib_call


def child():
    lib.tsh_launch(b"child_kernel", 50000)  # @child_launch


for _ in range(4):
    train_step()  # @main_step
through_library()  # @lib_main
aux_forward()
lib.tsh_thread(b"c_thread_kernel", 30000, 5)
pid = os.fork()
if pid == 0:
    child()  # @fork_call
    os._exit(0)
os.waitpid(pid, 0)
