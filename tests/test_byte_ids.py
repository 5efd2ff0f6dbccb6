"""io/byte_ids joins ids on bytes; the reference is Python's own dictionary of strings."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_labeling.db.pairs import PairsText
from ndcg_labeling.io import byte_ids
from ndcg_labeling.labels.coded_ids import join_on_bytes

# Printable ids of 1 to 40 characters without tab or newline (the id rule), some sharing long prefixes.
IDS = st.one_of(st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=40),
                st.sampled_from(["a", "ab", "abcdefgh", "abcdefghi", "abcdefgh" * 3, "é", "漢字", "😀x"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(IDS, unique=True, max_size=30), st.lists(IDS, min_size=1, max_size=30), st.integers(0, 10**15))
def test_join_is_a_dictionary_join(stored, wanted, base):
    rids = {x: base + i for i, x in enumerate(stored)}
    got = join_on_bytes(PairsText("\n".join(rids), "\n".join(map(str, rids.values())), len(stored)), wanted)
    assert got is not None
    assert got.tolist() == [rids.get(x, -1) for x in wanted]


def test_hash_does_not_depend_on_the_width():
    a = byte_ids.lines(b"abc\nabcdefghijklmnopq")
    b = byte_ids.lines(b"abc")
    assert a is not None and b is not None and a.hash[0] == b.hash[0]


def test_a_shared_hash_is_never_a_match():
    keys = byte_ids.ByteIds(np.array([b"a", b"b"]), np.array([7, 8], dtype=np.uint64))
    probes = byte_ids.ByteIds(np.array([b"c", b"b"]), np.array([7, 8], dtype=np.uint64))  # c collides with a
    assert byte_ids.match(keys, probes).tolist() == [-1, 1]
    twins = byte_ids.ByteIds(np.array([b"a", b"b"]), np.array([7, 7], dtype=np.uint64))
    assert byte_ids.match(twins, probes) is None


def test_text_it_cannot_read_is_left_to_the_caller():
    assert join_on_bytes(PairsText("a\nb", "1", 1), ["a"]) is None      # an id holding a newline: 2 lines for 1
    assert join_on_bytes(PairsText("a", "1", 2), ["a"]) is None          # fewer lines than the database counted
    assert join_on_bytes(PairsText("a\nb", "1\n2\n3", 2), ["a"]) is None  # the two texts disagree
    assert join_on_bytes(PairsText("a", "x1", 1), ["a"]) is None         # not an integer
    assert byte_ids.numbers(b"1\n-2") is None and byte_ids.numbers(b"1\n\n2") is None
    assert byte_ids.numbers(b"0\n12\n123456789012345678\n").tolist() == [0, 12, 123456789012345678]
    assert byte_ids.numbers(b"1234567890123456789") is None  # more than 18 digits
    assert byte_ids.lines(b"x" * (byte_ids.MAX_WIDTH + 1)) is None
    assert join_on_bytes(PairsText("a", "1", 1), ["y" * (byte_ids.MAX_WIDTH + 1)]) is None
    assert join_on_bytes(PairsText("", "", 0), ["a", "b"]).tolist() == [-1, -1]  # nothing stored
    assert join_on_bytes(PairsText("a\nb", (5).to_bytes(8, "big") + (2**40).to_bytes(8, "big"), 2),
                         ["b", "c", "a"]).tolist() == [2**40, -1, 5]  # PostgreSQL's row ids: 8 bytes each
    assert join_on_bytes(PairsText("a\nb", (5).to_bytes(8, "big") + b"\x00", 2), ["a"]) is None  # cut short
    assert join_on_bytes(PairsText("a\nb", (5).to_bytes(8, "big"), 2), ["a"]) is None  # one row id for two ids
