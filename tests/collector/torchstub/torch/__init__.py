"""A stand-in for PyTorch in tests of `trainprof record --pytorch` (CI has no torch): the
modules and the API surface the start-up file uses, as torch >= 2.0 has them:
torch.optim.optimizer's global step hooks (register_optimizer_step_pre_hook/post_hook, called
around every Optimizer.step), torch.utils.data.dataloader._BaseDataLoaderIter.__next__ (the
iterator classes inherit it) and torch.autograd.backward. Like torch, importing the package
imports them."""
from . import autograd, optim, utils  # noqa: F401
