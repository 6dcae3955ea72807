"""torch CPU tensors in the numpy API: gdn.delta_rule and
gdn.delta_rule_step take them as they take numpy arrays and then return
torch tensors.

A torch tensor is read through `tensor.numpy()` (no copy; a state updated
in place is the caller's tensor itself). CUDA tensors belong to gdn.cuda,
which runs the GPU kernels on them; bfloat16 has no numpy dtype. There is
no autograd: tensors that require grad are read detached, and the results
do not require grad. torch is not imported unless a torch tensor is
passed.
"""

import functools
import inspect
import sys

__all__ = ["accepts_torch_cpu", "is_torch_tensor"]


def is_torch_tensor(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _to_numpy(name, tensor):
    torch = sys.modules["torch"]
    if tensor.device.type != "cpu":
        raise TypeError(f"{name} is a torch tensor on {tensor.device}: this "
                        f"function runs on the CPU (gdn.cuda runs the CUDA "
                        f"kernels on CUDA tensors)")
    if tensor.dtype == torch.bfloat16:
        raise TypeError(f"{name} is a bfloat16 torch tensor, which has no "
                        f"numpy dtype: pass float32 or float16 (gdn.cuda "
                        f"takes bfloat16 CUDA tensors)")
    return tensor.detach().numpy()


def accepts_torch_cpu(*names):
    """Lets the numpy function take torch CPU tensors for the arguments
    `names`; when any is one, its array results come back as torch tensors
    (an input array returned as the result, as an in-place state is,
    comes back as the caller's tensor)."""
    def decorate(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            tensors = {n: bound.arguments[n] for n in names
                       if is_torch_tensor(bound.arguments.get(n))}
            if not tensors:
                return function(*args, **kwargs)
            views = {}
            for name, tensor in tensors.items():
                view = _to_numpy(name, tensor)
                bound.arguments[name] = view
                views[id(view)] = tensor
            result = function(*bound.args, **bound.kwargs)
            torch = sys.modules["torch"]

            def back(value):
                if id(value) in views:
                    return views[id(value)]
                if type(value).__module__ == "numpy":
                    return torch.from_numpy(value)
                return value
            if isinstance(result, tuple):
                return tuple(back(v) for v in result)
            return back(result)
        return wrapper
    return decorate
