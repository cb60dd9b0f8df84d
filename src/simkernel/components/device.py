"""Devices of simkernel's components: Haystack's ``ComponentDevice`` API, with or without Haystack.

Accepted values of a component's ``device``:

- ``None`` (the default): the CPU. Haystack would pick cuda:0 > xpu > mps > cpu through torch; simkernel
  has no torch and is built for CPU scoring, so it never moves to a GPU unless asked.
- a string: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (an extension: Haystack only takes ``ComponentDevice``);
- a ``ComponentDevice`` for a single device, Haystack's or this module's
  (``ComponentDevice.from_str("cpu")``), or its serialised form ``{"type": "single", "device": "cpu"}``.

``"cuda"`` runs the model with onnxruntime's ``CUDAExecutionProvider``; when the installed onnxruntime has
no CUDA support the model load fails with an error saying so (install ``onnxruntime-gpu``). Device maps,
``mps``, ``xpu`` and ``disk`` are refused with a ``ValueError``: onnxruntime on those is not supported.

What a component's ``_device`` attribute holds (code written against Haystack's components reads it, e.g.
``evaluator._device.to_torch_str()``): ``None`` when no device was given, else a ``ComponentDevice`` built
by :func:`component_device` - Haystack's own class whenever Haystack is imported (the user's own object when
they passed one), otherwise this module's :class:`ComponentDevice`, which has the same methods for a single
device. simkernel never imports Haystack itself (importing it imports torch: seconds), so without Haystack
loaded the attribute is this module's class.
"""

from __future__ import annotations

import sys
from typing import Any

SUPPORTED = "'cpu', 'cuda' or 'cuda:N' (a string or ComponentDevice.from_str(...))"
HAYSTACK_DEVICE_MODULE = "haystack.utils.device"


def device_string(device: Any) -> str | None:
    """The validated single-device string of ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``) or ``None``.

    Raises ``ValueError`` naming the value for anything simkernel cannot run on.
    """
    if device is None:
        return None
    if isinstance(device, str):
        text = device.strip().lower()
    elif callable(getattr(device, "to_dict", None)):  # a ComponentDevice, Haystack's or ours
        text = _from_serialised(device.to_dict(), device)
    elif isinstance(device, dict):
        text = _from_serialised(device, device)
    else:
        raise ValueError(f"Invalid device {device!r} of type {type(device).__name__}: use None, {SUPPORTED}.")
    kind, _, index = text.partition(":")
    if kind == "gpu":
        kind = "cuda"
    if kind not in ("cpu", "cuda") or (index and not index.isdigit()) or (kind == "cpu" and index):
        raise ValueError(
            f"Unsupported device {device!r}: simkernel runs on onnxruntime; use None, {SUPPORTED}."
        )
    return f"{kind}:{int(index)}" if index else kind


def _from_serialised(data: Any, original: Any) -> str:
    if isinstance(data, dict) and data.get("type") == "single" and isinstance(data.get("device"), str):
        return data["device"].strip().lower()
    if isinstance(data, dict) and data.get("type") == "multiple":
        raise ValueError(
            f"Device maps are not supported ({original!r}): simkernel runs a model on one device; use None, {SUPPORTED}."
        )
    raise ValueError(f"Invalid device {original!r}: use None, {SUPPORTED}.")


def device_to_dict(device: Any) -> dict[str, Any] | None:
    """Serialised ``device``, as Haystack writes a ``ComponentDevice`` (``{"type": "single", ...}``)."""
    if device is None:
        return None
    if callable(getattr(device, "to_dict", None)):
        return device.to_dict()
    return {"type": "single", "device": device_string(device)}


class ComponentDevice:
    """One device of a component, with the methods of Haystack's ``haystack.utils.ComponentDevice``.

    Used for a component's ``_device`` when Haystack is not imported (see the module docstring). Only single
    devices exist here (device maps are refused everywhere in simkernel), so ``has_multiple_devices`` is
    always ``False``. Build one with :meth:`from_str` (``"cpu"``, ``"cuda"``, ``"cuda:N"``),
    :meth:`from_dict` or :meth:`from_single`; equal devices compare equal and hash alike.
    """

    __slots__ = ("_device",)
    _device: str

    def __init__(self, device: str) -> None:
        """``device``: a device string; prefer :meth:`from_str`."""
        text = device_string(device) if isinstance(device, str) else None
        if text is None:
            raise ValueError(f"Invalid device {device!r}: use {SUPPORTED}.")
        object.__setattr__(self, "_device", text)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ComponentDevice is immutable")

    @classmethod
    def from_str(cls, device_str: str) -> ComponentDevice:
        """The device named by ``device_str``: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``."""
        return cls(device_str)

    @classmethod
    def from_single(cls, device: Any) -> ComponentDevice:
        """The device whose string form is ``str(device)`` (e.g. Haystack's ``Device.gpu(1)``)."""
        return cls(str(device))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ComponentDevice:
        """Rebuild from :meth:`to_dict` output (``{"type": "single", "device": "cuda:0"}``)."""
        return cls(_from_serialised(data, data))

    def to_dict(self) -> dict[str, Any]:
        """``{"type": "single", "device": "cuda:0"}``, as Haystack serialises a single device."""
        return {"type": "single", "device": self._device}

    def to_torch_str(self) -> str:
        """PyTorch's device string: ``"cpu"``, ``"cuda"``, ``"cuda:N"``."""
        return self._device

    def to_torch(self) -> Any:
        """``torch.device`` of this device; imports torch (not a dependency of simkernel)."""
        try:
            import torch
        except ImportError as exc:
            raise ImportError(
                f"ComponentDevice.to_torch() needs torch ({exc}); use to_torch_str() for the device string"
            ) from exc
        return torch.device(self._device)

    def to_hf(self) -> str:
        """Hugging Face's ``device`` argument for a single device: the device string."""
        return self._device

    def to_spacy(self) -> int:
        """spaCy's device: the GPU index (``"cuda"`` is GPU 0), ``-1`` for the CPU."""
        kind, _, index = self._device.partition(":")
        return -1 if kind == "cpu" else int(index or 0)

    def update_hf_kwargs(self, hf_kwargs: dict[str, Any], *, overwrite: bool) -> dict[str, Any]:
        """Set ``hf_kwargs["device"]`` (in place, returned) unless a device is there and not ``overwrite``."""
        if not overwrite and any(key in hf_kwargs for key in ("device", "device_map")):
            return hf_kwargs
        hf_kwargs["device"] = self.to_hf()
        return hf_kwargs

    @property
    def has_multiple_devices(self) -> bool:
        """Always ``False``: simkernel runs a model on one device."""
        return False

    @property
    def first_device(self) -> ComponentDevice:
        """This device (the first of one)."""
        return self

    @staticmethod
    def resolve_device(device: Any = None) -> Any:
        """``device``, or the CPU when ``None`` (simkernel's default; Haystack's picks a GPU first)."""
        if device is None:
            return ComponentDevice("cpu")
        if not callable(getattr(device, "to_dict", None)):
            raise ValueError(
                f"Invalid component device type '{type(device).__name__}'. Must either be None or ComponentDevice."
            )
        return device

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ComponentDevice):
            return self._device == other._device
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("ComponentDevice", self._device))

    def __repr__(self) -> str:
        return f"ComponentDevice.from_str({self._device!r})"


def haystack_component_device_class() -> Any:
    """Haystack's ``ComponentDevice`` class when Haystack's device module is imported, else ``None``."""
    module = sys.modules.get(HAYSTACK_DEVICE_MODULE)
    return getattr(module, "ComponentDevice", None) if module is not None else None


def component_device(device: Any) -> Any:
    """``device`` (any accepted value) as a component's ``_device``: ``None``, or a ``ComponentDevice``.

    Haystack's class when Haystack is imported (a Haystack ``ComponentDevice`` given by the user is returned
    as is), else :class:`ComponentDevice`. Raises ``ValueError`` as :func:`device_string`.
    """
    text = device_string(device)
    if text is None:
        return None
    haystack_class = haystack_component_device_class()
    if haystack_class is None:
        return device if isinstance(device, ComponentDevice) else ComponentDevice(text)
    if isinstance(device, haystack_class):
        return device
    return haystack_class.from_str(text)


def onnx_providers(device: Any) -> list[Any] | None:
    """onnxruntime execution providers for ``device``; ``None`` means the runtime's default (the CPU).

    ``"cuda:N"`` -> ``[("CUDAExecutionProvider", {"device_id": N}), "CPUExecutionProvider"]`` after checking
    that the installed onnxruntime has CUDA; raises ``ValueError`` otherwise.
    """
    text = device_string(device)
    if text is None or text == "cpu":
        return None
    import onnxruntime

    available = onnxruntime.get_available_providers()
    if "CUDAExecutionProvider" not in available:
        raise ValueError(
            f"device={device!r} needs onnxruntime with CUDA, but the installed onnxruntime {onnxruntime.__version__} offers only {available}. Install onnxruntime-gpu (pip uninstall onnxruntime && pip install onnxruntime-gpu) or use device='cpu'."
        )
    _, _, index = text.partition(":")
    return [("CUDAExecutionProvider", {"device_id": int(index or 0)}), "CPUExecutionProvider"]
