"""trainprof record --pytorch: marks a PyTorch program's training steps, its DataLoader's
fetches and its optimizer steps as NVTX ranges, with no change to the program.

`trainprof record --pytorch` puts this file's folder first on PYTHONPATH, so every Python
process of the job runs it at start-up (as site.py runs a sitecustomize); it then runs the
sitecustomize it shadows, if any, as Python would have without us. Nothing is imported here:
a finder on sys.meta_path waits for torch's own modules to be loaded and adds to them:

- `torch.utils.data.dataloader`: every `next()` of a DataLoader's iterator is a range
  "DataLoader.__next__" (the analyses' data-loading ranges: the name holds "dataloader");
- `torch.optim.optimizer`: every `Optimizer.step()` is a range "optimizer.step", through
  torch's global step hooks (register_optimizer_step_pre_hook/post_hook, torch >= 2.0);
- `torch.autograd`: every backward pass (`loss.backward()` calls torch.autograd.backward) is a
  range "backward", so a step reads as its forward (the rest), backward and update;
- steps: a range "step" for each update of the first optimizer that steps (a GAN's second
  optimizer ends no step), written whole when it ends (a START at its beginning and its END:
  only then is it known to be a step, and a step begun but never ended is never written). A
  program that fetches from a DataLoader before its first update has its steps from the end
  of the fetch that starts them (the last fetch before a backward pass: a gradient
  accumulation's first micro-batch; an evaluation loop's fetches start none) to the start of
  the first fetch after the update, as a `with` block around the loop's body would have them
  (the fetch is data loading between steps; logging or a checkpoint after the update is the
  step's); one that does not has them back to back, from the end of one update to the end of
  the next.

The ranges are the records NVTX calls make, written by the collector through its trainprof_*
exports (collector/tp_collector_pyapi.c; through ctypes, looked up at the first range, never
while torch is being imported): NVTX v3 has no library to call, and torch.cuda.nvtx is missing
from CPU-only builds of PyTorch. Whatever goes wrong here is swallowed: the program must run
exactly as without us. (docs/collector.md, "PyTorch without annotations")
"""
import functools
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_WATCH = ("torch.utils.data.dataloader", "torch.optim.optimizer", "torch.autograd")


class _State:
    api = None  # the collector's trainprof_* functions, once a range is due; False: none
    t_begin = None  # the trace clock where the step under way began (None: none yet)
    step_opt = None  # id() of the optimizer whose updates end steps
    fetched = False  # a fetch ended since the last update (or the start)
    loader_mode = None  # decided at the first update: True when a fetch came before it
    updated = False  # loader mode: the step under way had its update (the next fetch ends it)
    backward = False  # a backward pass ran since the step under way began


def _api():
    """The collector's exports (collector/tp_collector_pyapi.c), from the library the job
    already loaded (RTLD_NOLOAD: never a second copy); None when it is not there."""
    if _State.api is None:
        _State.api = False
        import ctypes

        lib = ctypes.CDLL(os.environ.get("TRAINPROF_COLLECTOR", ""), os.RTLD_NOLOAD | os.RTLD_LAZY)
        lib.trainprof_push.argtypes, lib.trainprof_push.restype = [ctypes.c_char_p], ctypes.c_int
        lib.trainprof_pop.argtypes, lib.trainprof_pop.restype = [], ctypes.c_int
        lib.trainprof_now.argtypes, lib.trainprof_now.restype = [], ctypes.c_uint64
        lib.trainprof_range_since.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
        lib.trainprof_range_since.restype = None
        _State.api = lib
    return _State.api or None


def _patch_dataloader(mod):
    cls = getattr(mod, "_BaseDataLoaderIter", None)
    orig = getattr(cls, "__next__", None)
    if orig is None or getattr(orig, "_trainprof", False):
        return

    def __next__(self):
        try:
            api = _api()
            if _State.loader_mode and _State.updated and _State.t_begin is not None:
                # the step ends where the next fetch starts
                api.trainprof_range_since(b"step", _State.t_begin)
                _State.t_begin, _State.updated, _State.backward = None, False, False
            api.trainprof_push(b"DataLoader.__next__")
        except Exception:
            return orig(self)
        try:
            batch = orig(self)
        finally:
            api.trainprof_pop()
        try:  # a batch came: the step it feeds starts here (unless steps run back to back), or
            # again here while no backward pass ran since the last start (an evaluation loop)
            _State.fetched = True
            if _State.loader_mode is not False and (_State.t_begin is None or not _State.backward):
                _State.t_begin = api.trainprof_now()
        except Exception:
            pass
        return batch

    functools.update_wrapper(__next__, orig)  # its name and doc; __wrapped__ is orig
    try:  # stacks read code objects: the wrapper's frame reads as the method it stands for
        __next__.__code__ = __next__.__code__.replace(co_qualname="_BaseDataLoaderIter.__next__")
    except Exception:  # before 3.11 the name is __next__ already
        pass
    __next__._trainprof = True
    cls.__next__ = __next__


def _patch_autograd(mod):
    """torch.autograd.backward, which Tensor.backward() calls by that name: a range "backward"
    on the calling thread (it waits there for the whole backward pass)."""
    orig = getattr(mod, "backward", None)
    if orig is None or getattr(orig, "_trainprof", False):
        return

    def backward(*args, **kwargs):
        try:
            _State.backward = True
            api = _api()
            api.trainprof_push(b"backward")
        except Exception:
            return orig(*args, **kwargs)
        try:
            return orig(*args, **kwargs)
        finally:
            api.trainprof_pop()

    functools.update_wrapper(backward, orig)
    backward._trainprof = True
    mod.backward = backward


def _pre_step(opt, args, kwargs):
    try:
        api = _api()
        if _State.step_opt is None:
            _State.step_opt = id(opt)
            _State.loader_mode = _State.fetched
        if id(opt) == _State.step_opt and _State.t_begin is None:
            _State.t_begin = api.trainprof_now()  # no fetch before this update: from here
        api.trainprof_push(b"optimizer.step")
    except Exception:
        pass


def _post_step(opt, args, kwargs):
    try:
        api = _api()
        api.trainprof_pop()
        if id(opt) != _State.step_opt:
            return
        _State.fetched = False
        if _State.loader_mode:  # the step ends where the next fetch starts (what follows the
            _State.updated = True  # update, logging or a checkpoint, is the step's)
        else:  # back to back: written whole as it ends, the next one starts here
            if _State.t_begin is not None:
                api.trainprof_range_since(b"step", _State.t_begin)
            _State.t_begin, _State.backward = api.trainprof_now(), False
    except Exception:
        pass


def _patch_optimizer(mod):
    pre = getattr(mod, "register_optimizer_step_pre_hook", None)
    post = getattr(mod, "register_optimizer_step_post_hook", None)
    if pre is None or post is None:
        return
    pre(_pre_step)
    post(_post_step)


_PATCH = {
    "torch.utils.data.dataloader": _patch_dataloader,
    "torch.optim.optimizer": _patch_optimizer,
    "torch.autograd": _patch_autograd,
}


def _wrap(loader, name):
    """Adds our ranges to the module once its own loader has run it: the loader's exec_module
    for this one call (an attribute of the instance, deleted again), so the module's
    __loader__ stays the loader Python chose, of its own type."""
    orig = loader.exec_module

    def exec_module(module):
        try:
            orig(module)
        finally:
            try:
                del loader.exec_module
            except AttributeError:
                pass
        try:
            _PATCH[name](module)
        except Exception:
            pass

    loader.exec_module = exec_module


class _Finder:
    """On sys.meta_path: finds the watched modules through the other finders and wraps their
    loaders; every other name is left to the others (None)."""

    def find_spec(self, name, path=None, target=None):
        if name not in _WATCH:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                try:  # a loader that takes no attribute is left as it is
                    if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                        _wrap(spec.loader, name)
                except Exception:
                    pass
                return spec
        return None


def _install():
    # Python 2's meta path wants find_module (and has no PyTorch >= 2.0): it only chains
    if os.environ.get("TRAINPROF_PYTORCH") != "1" or sys.version_info < (3, 4):
        return
    for name in _WATCH:  # already imported (a sitecustomize before us imported torch)
        if name in sys.modules:
            try:
                _PATCH[name](sys.modules[name])
            except Exception:
                pass
    sys.meta_path.insert(0, _Finder())


def _chain():
    """Runs the sitecustomize this one shadows, if any, as site.py would have."""
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    mine = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401  (the next one on sys.path)
    except ImportError as e:
        if getattr(e, "name", "sitecustomize") != "sitecustomize":
            raise
        if mine is not None:
            sys.modules["sitecustomize"] = mine


try:
    _install()
except Exception:
    pass
_chain()
