"""dpaudit.reports.writer: reports are written atomically and never over foreign directories."""

from __future__ import annotations

import os

import pytest

from dpaudit.reports.records import load_results
from dpaudit.reports.writer import check_output_directory, write


def test_a_foreign_directory_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a dpaudit report"):
        check_output_directory(tmp_path)


def test_a_new_or_empty_directory_is_accepted(tmp_path):
    check_output_directory(tmp_path / "new")
    check_output_directory(tmp_path)


@pytest.mark.parametrize(
    ("results", "needle"),
    [
        (None, "got NoneType"),
        ("results.json", "got str"),
        ({}, "results: audit 1 lacks name, verdict"),
        ([], "no audit to report"),
        ({"audits": []}, "no audit to report"),
    ],
)
def test_what_is_no_report_is_refused_and_nothing_is_written(tmp_path, results, needle):
    with pytest.raises(ValueError, match=needle):
        write(results, tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_a_results_file_nested_too_deeply_or_no_regular_file_is_one_error(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="deep.json: .*nested too deeply"):
        load_results(deep)
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)  # reading it would block until someone writes
    with pytest.raises(ValueError, match="results.json: the results file is not a regular file"):
        load_results(fifo)
