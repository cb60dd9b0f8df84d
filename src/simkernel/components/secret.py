"""``Secret``: Haystack's ``haystack.utils.Secret`` API and serialised form, without importing haystack.

``Secret.from_env_var([...], strict=False)`` and ``Secret.from_token("...")`` behave as Haystack's and
serialise to the same dictionaries (``{"type": "env_var", "env_vars": [...], "strict": false}``; a token
secret refuses to be serialised). simkernel's components accept these and Haystack's own ``Secret``
objects alike: anything with ``resolve_value()`` and ``to_dict()``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class SecretLike(Protocol):
    """What a component needs from a secret (satisfied by this module's and by Haystack's ``Secret``)."""

    def resolve_value(self) -> Any | None: ...

    def to_dict(self) -> dict[str, Any]: ...


class Secret:
    """A secret used for authentication; build one with :meth:`from_env_var` or :meth:`from_token`."""

    @staticmethod
    def from_token(token: str) -> Secret:
        """A secret holding ``token`` itself. Cannot be serialised (that would write the token in clear)."""
        return TokenSecret(_token=token)

    @staticmethod
    def from_env_var(env_vars: str | Sequence[str], *, strict: bool = True) -> Secret:
        """A secret read from the first set environment variable of ``env_vars`` when resolved.

        With ``strict=True`` resolving raises ``ValueError`` when none is set; otherwise it gives ``None``.
        """
        if isinstance(env_vars, str):
            env_vars = [env_vars]
        return EnvVarSecret(_env_vars=tuple(env_vars), _strict=strict)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Secret:
        """Rebuild a secret serialised by :meth:`to_dict` (here or by Haystack)."""
        kind = data.get("type")
        if kind == "env_var":
            return EnvVarSecret(tuple(data["env_vars"]), _strict=data["strict"])
        if kind == "token":
            raise ValueError(
                "Cannot deserialize token-based secret. Use an alternative secret type like environment variables."
            )
        raise ValueError(f"Unknown secret type '{kind}'")

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def resolve_value(self) -> Any | None:
        raise NotImplementedError


@dataclass(frozen=True)
class TokenSecret(Secret):
    """A secret holding the token itself; never serialised, never shown in ``repr``."""

    _token: str

    def __post_init__(self) -> None:
        if not isinstance(self._token, str) or len(self._token) == 0:
            raise ValueError("Authentication token cannot be empty.")

    def __repr__(self) -> str:
        return "TokenSecret(_token=<redacted>)"

    @property
    def type(self) -> str:
        return "token"

    def to_dict(self) -> dict[str, Any]:
        raise ValueError(
            "Cannot serialize token-based secret. Use an alternative secret type like environment variables."
        )

    def resolve_value(self) -> Any | None:
        return self._token


@dataclass(frozen=True)
class EnvVarSecret(Secret):
    """A secret read from the first set environment variable of ``_env_vars`` at resolution time."""

    _env_vars: tuple[str, ...]
    _strict: bool = True

    def __post_init__(self) -> None:
        if len(self._env_vars) == 0:
            raise ValueError("One or more environment variables must be provided for the secret.")

    @property
    def type(self) -> str:
        return "env_var"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "env_var", "env_vars": list(self._env_vars), "strict": self._strict}

    def resolve_value(self) -> Any | None:
        for env_var in self._env_vars:
            value = os.getenv(env_var)
            if value is not None:
                return value
        if self._strict:
            raise ValueError(
                f"None of the following authentication environment variables are set: {self._env_vars}"
            )
        return None


def secret_from_dict(data: dict[str, Any]) -> Any:
    """A serialised secret rebuilt as Haystack's ``Secret`` when Haystack is imported (what Haystack's own
    ``from_dict`` gives a component), else as this module's :class:`Secret`; same errors either way."""
    auth = sys.modules.get("haystack.utils.auth")
    haystack_secret = getattr(auth, "Secret", None) if auth is not None else None
    return (haystack_secret or Secret).from_dict(data)
