"""Every failure of ``simkernel score`` is one line naming the problem and the fix, with exit status 1
(data, file, model) or 2 (usage), and nothing is written. These fail before a model loads."""

from __future__ import annotations

import pytest
from tests.cli.conftest import EXAMPLES


def assert_one_line_error(result, code, *fragments):
    assert result.code == code, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("simkernel")
    assert "error:" in lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert result.out == ""


def test_missing_column_lists_the_columns_found(cli):
    result = cli("score", EXAMPLES / "answers.csv", "--predicted", "answer")
    assert_one_line_error(
        result,
        1,
        "no column 'answer'",
        "columns found: question, ground_truth, predicted, label",
        "--predicted",
    )


def test_missing_default_column_names_the_flag(cli, write):
    path = write("pairs.csv", "answer1,answer2,label\nSeine,Epte,0\n")
    result = cli("score", path)
    assert_one_line_error(result, 1, "no column 'predicted'", "columns found: answer1, answer2, label")


def test_a_references_file_in_sas_mode_points_at_reference_mode(cli):
    result = cli("score", EXAMPLES / "references.jsonl")
    assert_one_line_error(result, 1, "no column 'ground_truth'", "--mode reference")


def test_missing_label_column(cli):
    result = cli("score", EXAMPLES / "answers.csv", "--label", "human")
    assert_one_line_error(result, 1, "no label column 'human'", "columns found: question")


def test_missing_file_is_exit_1(cli, tmp_path):
    result = cli("score", tmp_path / "missing.csv")
    assert_one_line_error(result, 1, "does not exist")


def test_unknown_mode_is_exit_2(cli):
    result = cli("score", EXAMPLES / "answers.csv", "--mode", "bleu")
    assert_one_line_error(result, 2, "invalid choice: 'bleu'", "--help")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--batch-size", "0"], "--batch-size: 0 is not a positive whole number"),
        (["--threshold", "high"], "--threshold: 'high' is not a number"),
        (["--threshold", "nan"], "not a finite number"),
        (["--precision", "fp16"], "invalid choice: 'fp16'"),
        (["--no-such-option"], "unrecognized arguments"),
        (["--references", "refs"], "--references does not apply to --mode sas"),
        (["--aggregation", "mean"], "--aggregation does not apply to --mode sas"),
        (["--mode", "exact", "--model", "m", "--precision", "int8"], "--model, --precision does not apply"),
        (
            ["--mode", "reference", "--ground-truth", "gt"],
            "--ground-truth does not apply to --mode reference",
        ),
        (["--output", "out.xlsx"], "cannot tell the format of 'out.xlsx'"),
        (["--score-column", " "], "--score-column must be a non-empty name"),
    ],
)
def test_usage_errors_are_exit_2(cli, argv, fragment):
    result = cli("score", EXAMPLES / "answers.csv", *argv)
    assert_one_line_error(result, 2, fragment)


def test_no_command_and_unknown_command_are_exit_2(cli):
    assert_one_line_error(cli(), 2, "required: COMMAND")
    assert_one_line_error(cli("grade", "x.csv"), 2, "invalid choice: 'grade'")


def test_unknown_input_extension_is_exit_2(cli, write):
    path = write("answers.txt", "predicted,ground_truth\na,b\n")
    assert_one_line_error(cli("score", path), 2, "cannot tell the format", "--input-format")


def test_empty_cell_names_its_line_and_counts_the_others(cli, write, tmp_path):
    text = 'ground_truth,predicted\nParis,Paris\nBerlin,\n,Rome\n"multi\nline",x\nMadrid,  \n'
    path = write("a.csv", text)
    out = tmp_path / "out.csv"
    result = cli("score", path, "--mode", "exact", "--output", out)
    assert_one_line_error(
        result,
        1,
        "a.csv line 3: column 'predicted' is empty",
        "--allow-empty",
        "and 2 more bad rows: lines 4, 7",
    )
    assert not out.exists()  # a failed run writes nothing


def test_bad_row_in_jsonl_names_its_line(cli, write):
    path = write(
        "a.jsonl", '{"ground_truth": "a", "predicted": "a"}\n\n{"ground_truth": "b", "predicted": null}\n'
    )
    assert_one_line_error(cli("score", path), 1, "a.jsonl line 3: column 'predicted' holds null")
    path = write("b.jsonl", '{"ground_truth": "a", "predicted": "a"}\n{"ground_truth": "b"}\n')
    assert_one_line_error(cli("score", path), 1, "b.jsonl line 2: no 'predicted' field")
    path = write("c.jsonl", '{"ground_truth": ["a", 3, {"x": 1}], "predicted": "a"}\n')
    assert_one_line_error(cli("score", path), 1, "c.jsonl line 1: item 2 of the ground truths", "not a text")
    path = write("d.jsonl", '{"ground_truth": [], "predicted": "a"}\n')
    assert_one_line_error(cli("score", path), 1, "d.jsonl line 1: ", "no ground truth")


def test_unreadable_row_names_its_line(cli, write):
    path = write("a.csv", "ground_truth,predicted\na,b\nc,d,e\n")
    assert_one_line_error(
        cli("score", path, "--mode", "exact"), 1, "a.csv line 3: 3 fields where the header has 2"
    )
    path = write(
        "b.jsonl", '{"ground_truth": "a", "predicted": "b"}\n{"ground_truth": "a" "predicted": "b"}\n'
    )
    assert_one_line_error(cli("score", path, "--mode", "exact"), 1, "b.jsonl line 2: not valid JSON")
    path = write("c.csv", b"ground_truth,predicted\na,b\n\xe9t\xe9,c\n")
    assert_one_line_error(cli("score", path, "--mode", "exact"), 1, "c.csv line 3: not valid UTF-8")


def test_bad_json_in_references_names_its_line(cli, write):
    path = write(
        "refs.csv",
        'predicted,references\nParis,"[""Paris""]"\nRome,"[""Rome"", ""the city of Rome"""\n',
    )
    result = cli("score", path, "--mode", "reference")
    assert_one_line_error(result, 1, "refs.csv line 3: column 'references' is not a JSON list", '["Paris"')


@pytest.mark.parametrize(
    ("references", "fragment"),
    [
        ('"Paris"', "holds a JSON str"),
        ('{"a": "Paris"}', "holds a JSON dict"),
        ('["Paris", null]', "item 1 of the references in 'references' is null"),
        ('["Paris", ""]', "item 1 of the references in 'references' is empty"),
    ],
)
def test_references_must_be_a_list_of_texts(cli, write, references, fragment):
    path = write("refs.jsonl", f'{{"predicted": "Paris", "references": {references}}}\n')
    assert_one_line_error(cli("score", path, "--mode", "reference"), 1, "refs.jsonl line 1: ", fragment)


def test_non_numeric_label_names_its_line(cli, write):
    path = write("a.csv", "ground_truth,predicted,label\na,a,2\nb,c,high\n")
    assert_one_line_error(
        cli("score", path, "--mode", "exact", "--label", "label"),
        1,
        "a.csv line 3: label column 'label' holds 'high'",
    )


def test_existing_score_column_is_never_overwritten(cli, write):
    path = write("a.csv", "ground_truth,predicted,score\na,a,0.3\n")
    assert_one_line_error(
        cli("score", path, "--mode", "exact"), 1, "already has a column 'score'", "--score-column"
    )
    path = write("b.csv", "ground_truth,predicted,success\na,a,yes\n")
    assert_one_line_error(
        cli("score", path, "--mode", "exact", "--threshold", "1"),
        1,
        "already has a column 'success'",
        "rename",
    )


@pytest.mark.parametrize(
    ("name", "text", "fragments", "fix"),
    [
        (
            "semi.csv",
            "predicted;ground_truth\nParis;Paris\n",
            ["its header 'predicted;ground_truth' is one column", "separated by semicolons, not commas"],
            None,
        ),
        (
            "pipes.csv",
            "predicted|ground_truth\nParis|Paris\n",
            ["separated by vertical bars, not commas"],
            None,
        ),
        (
            "tabs.csv",
            "predicted\tground_truth\nParis\tParis\n",
            ["separated by tabs, not commas", "read it with --input-format tsv"],
            ["--input-format", "tsv"],
        ),
        (
            "commas.tsv",
            "predicted,ground_truth\nParis,Paris\n",
            ["separated by commas, not tabs", "read it with --input-format csv"],
            ["--input-format", "csv"],
        ),
    ],
)
def test_a_file_with_another_separator_is_named_with_its_fix(cli, write, name, text, fragments, fix):
    """A header read as one column that holds another separator: the error says which separator the file
    seems to use (not "name the column with --predicted"), and the fix it names works."""
    path = write(name, text)
    result = cli("score", path, "--mode", "exact")
    assert_one_line_error(result, 1, f"{name} has no column 'predicted': ", *fragments)
    assert "--predicted COLUMN" not in result.err
    if fix is None:
        assert "save it with" in result.err
    else:
        result = cli("score", path, "--mode", "exact", "-q", *fix)
        assert result.code == 0, result.err
        assert result.out.splitlines()[1] in ("Paris,Paris,1", "Paris\tParis\t1")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            '{"predicted": "Paris", "ground_truth": "Paris"}\n{"predicted": "Paris", "predicted": "Lyon", "ground_truth": "Paris"}\n',
            "d.jsonl line 2: duplicate column names ['predicted']; give each column its own name",
        ),
        (
            '{"predicted": "Paris", "ground_truth": "Paris", "meta": {"k": 1, "k": 2}}\n',
            "d.jsonl line 1: a JSON object in a cell has the keys ['k'] more than once; give each key its own name",
        ),
    ],
)
def test_duplicate_keys_of_a_jsonl_row_are_refused(cli, write, tmp_path, text, fragment):
    """JSON parsers keep the last of two equal keys silently; the row would lose a value."""
    path = write("d.jsonl", text)
    out = tmp_path / "out.jsonl"
    assert_one_line_error(cli("score", path, "--mode", "exact", "-o", out), 1, fragment)
    assert not out.exists()
