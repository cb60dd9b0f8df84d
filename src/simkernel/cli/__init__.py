"""The ``simkernel`` command line (console script ``simkernel``, also ``python -m simkernel``).

``main(argv)`` parses the arguments, runs the sub-command and returns the exit status: 0 success, 1 bad
data, file or model, 2 usage error. Failures are reported as one line on stderr,
``simkernel: error: <what is wrong>; <how to fix it>``; no traceback reaches the user for an expected
failure. Heavy modules (onnxruntime, the evaluators) load only when a command needs them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from simkernel.errors import EXIT_DATA, EXIT_USAGE, InputError, SimkernelError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``simkernel`` with ``argv`` (default ``sys.argv[1:]``) and return the exit status."""
    from simkernel.cli.parser import build_parser

    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2, message printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    # huggingface_hub logs every retry of an unreachable hub; the final error says it all, in one line.
    # It sets its level from HF_HUB_VERBOSITY when imported (later, if at all): a user's setting wins.
    os.environ.setdefault("HF_HUB_VERBOSITY", "error")
    try:
        if args.command == "score":
            from simkernel.cli.score import run_score

            return run_score(args)
        if args.command == "calibrate":
            from simkernel.cli.calibrate import run_calibrate

            return run_calibrate(args)
        if args.command == "compare":
            from simkernel.cli.compare import run_compare

            return run_compare(args)
        if args.command == "bertscore-baseline":
            from simkernel.cli.bertscore_baseline import run_bertscore_baseline

            return run_bertscore_baseline(args)
        if args.command == "serve":
            from simkernel.serve import run_serve

            return run_serve(args)
        from simkernel.cli.models import run_models

        return run_models(args)
    except BrokenPipeError:
        # the reader of stdout went away (e.g. `| head`): stop quietly, as other command-line tools do
        # (before OSError, which it is)
        _silence_stdout()
        return EXIT_DATA
    except InputError as exc:
        return _report(str(exc), exc.exit_code)
    except (SimkernelError, ValueError, OSError, ImportError) as exc:
        # errors of the library layers (model not found, missing extra, bad model file) carry their own fix
        return _report(_one_line(exc), EXIT_DATA)
    except KeyboardInterrupt:
        return _report("interrupted; nothing was written", 130)


def _report(message: str, code: int) -> int:
    # one line whatever the message holds (a value from the input may carry a line break)
    one_line = message.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    print(f"simkernel: error: {one_line}", file=sys.stderr)
    return code


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if isinstance(exc, SimkernelError) else f"{type(exc).__name__}: {text}"


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
