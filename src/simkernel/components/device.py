"""Devices of simkernel's components: Haystack's ``ComponentDevice`` or a plain string, for onnxruntime.

Accepted values of a component's ``device``:

- ``None`` (the default): the CPU. Haystack would pick cuda:0 > xpu > mps > cpu through torch; simkernel
  has no torch and is built for CPU scoring, so it never moves to a GPU unless asked.
- a string: ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (an extension: Haystack only takes ``ComponentDevice``);
- a Haystack ``ComponentDevice`` for a single device (``ComponentDevice.from_str("cpu")``).

``"cuda"`` runs the model with onnxruntime's ``CUDAExecutionProvider``; when the installed onnxruntime has
no CUDA support the model load fails with an error saying so (install ``onnxruntime-gpu``). Device maps,
``mps``, ``xpu`` and ``disk`` are refused with a ``ValueError``: onnxruntime on those is not supported.
"""

from __future__ import annotations

from typing import Any

SUPPORTED = "'cpu', 'cuda' or 'cuda:N' (a string or Haystack's ComponentDevice.from_str(...))"


def device_string(device: Any) -> str | None:
    """The validated single-device string of ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``) or ``None``.

    Raises ``ValueError`` naming the value for anything simkernel cannot run on.
    """
    if device is None:
        return None
    if isinstance(device, str):
        text = device.strip().lower()
    elif callable(getattr(device, "to_dict", None)):  # Haystack's ComponentDevice, or its serialised form
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
            f"Device maps are not supported ({original!r}): simkernel runs a model on one device; "
            f"use None, {SUPPORTED}."
        )
    raise ValueError(f"Invalid device {original!r}: use None, {SUPPORTED}.")


def device_to_dict(device: Any) -> dict[str, Any] | None:
    """Serialised ``device``, as Haystack writes a ``ComponentDevice`` (``{"type": "single", ...}``)."""
    if device is None:
        return None
    if callable(getattr(device, "to_dict", None)):
        return device.to_dict()
    return {"type": "single", "device": device_string(device)}


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
            f"device={device!r} needs onnxruntime with CUDA, but the installed onnxruntime "
            f"{onnxruntime.__version__} offers only {available}. Install onnxruntime-gpu "
            f"(pip uninstall onnxruntime && pip install onnxruntime-gpu) or use device='cpu'."
        )
    _, _, index = text.partition(":")
    return [("CUDAExecutionProvider", {"device_id": int(index or 0)}), "CPUExecutionProvider"]
