"""dpaudit.reports.writer: reports are written atomically and never over foreign directories."""

from __future__ import annotations

import pytest

from dpaudit.reports.writer import check_output_directory


def test_a_foreign_directory_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a dpaudit report"):
        check_output_directory(tmp_path)


def test_a_new_or_empty_directory_is_accepted(tmp_path):
    check_output_directory(tmp_path / "new")
    check_output_directory(tmp_path)
