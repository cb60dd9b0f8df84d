"""The plugin's settings from pytest's options and ini file: model, precision, threshold, each with where it
came from (an option wins over the ini key, both over the default). Bad values stop the run with a usage
error naming the option and the fix. Imports nothing heavy."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from simkernel.calibration.thresholds import CALIBRATED, parse_threshold
from simkernel.scoring.settings import DEFAULT_MODEL, DEFAULT_PRECISION, PRECISIONS


@dataclass(frozen=True)
class Settings:
    """``threshold`` is a number or ``"calibrated"``; ``threshold_source`` says who set it."""

    model: str
    precision: str
    threshold: float | str
    threshold_source: str


def _setting(config: pytest.Config, name: str) -> tuple[str | None, str]:
    value = config.getoption(name)
    if value is not None:
        return value, f"--{name.replace('_', '-')}"
    value = config.getini(name)
    if value not in (None, "", []):
        return str(value).strip(), f"ini {name}"
    return None, "default"


def read_settings(config: pytest.Config) -> Settings:
    model, _ = _setting(config, "semantic_model")
    precision, precision_source = _setting(config, "semantic_precision")
    threshold, threshold_source = _setting(config, "semantic_threshold")
    if model is not None and not model.strip():
        raise pytest.UsageError("--semantic-model / semantic_model is empty; give a model id or a folder")
    if precision is not None and precision not in PRECISIONS:
        raise pytest.UsageError(
            f"{precision_source} is {precision!r}; the semantic fixture's precision must be one of {', '.join(PRECISIONS)}"
        )
    try:
        spec = parse_threshold(threshold if threshold is not None else CALIBRATED)
    except (TypeError, ValueError) as exc:
        raise pytest.UsageError(f"{threshold_source}: {exc}") from None
    return Settings(model or DEFAULT_MODEL, precision or DEFAULT_PRECISION, spec, threshold_source)
