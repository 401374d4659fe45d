"""torch.optim.optimizer's global step hooks and an Optimizer whose step() runs them, as
torch's Optimizer.profile_hook_step wrapper does."""
from collections import OrderedDict

_global_optimizer_pre_hooks = OrderedDict()
_global_optimizer_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    _global_optimizer_pre_hooks[len(_global_optimizer_pre_hooks)] = hook


def register_optimizer_step_post_hook(hook):
    _global_optimizer_post_hooks[len(_global_optimizer_post_hooks)] = hook


class Optimizer:
    def __init__(self, params, lr=0.01):
        self.params, self.lr = list(params), lr

    def step(self, *args, **kwargs):
        for hook in _global_optimizer_pre_hooks.values():
            hook(self, args, kwargs)
        out = self._step()
        for hook in _global_optimizer_post_hooks.values():
            hook(self, args, kwargs)
        return out

    def _step(self):
        return sum(i * i for i in range(20000))


class SGD(Optimizer):
    pass
