"""The neighbouring relation is an enum whose values are the strings of specs and results.json."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpaudit.mechanisms.base import RELATIONS, NeighbouringPair, Relation


@pytest.mark.parametrize("relation", RELATIONS)
def test_pair_relation_is_the_enum_and_reads_as_its_string(relation):
    d = np.zeros((1, 1))
    d_prime = np.ones((2 if relation == "add_remove" else 1, 1))
    pair = NeighbouringPair(d, d_prime, relation)
    assert isinstance(pair.relation, Relation)
    assert pair.relation == relation and f"{pair.relation}" == relation == str(pair.relation)
    assert json.loads(json.dumps(pair.to_dict()))["relation"] == relation
    assert pair.swapped().relation is pair.relation


def test_unknown_relation_is_refused_naming_the_parameter():
    with pytest.raises(ValueError, match="relation must be one of"):
        NeighbouringPair(np.zeros((1, 1)), np.ones((2, 1)), "swap")
