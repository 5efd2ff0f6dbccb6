"""io/byte_ids joins ids on bytes; the reference is Python's own dictionary of strings."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ndcg_labeling.io import byte_ids
from ndcg_labeling.pipeline.import_columns import join_on_bytes

# Printable ids of 1 to 40 characters without tab or newline (the id rule), some sharing long prefixes.
IDS = st.one_of(st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=40),
                st.sampled_from(["a", "ab", "abcdefgh", "abcdefghi", "abcdefgh" * 3, "é", "漢字", "😀x"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(IDS, unique=True, max_size=30), st.lists(IDS, min_size=1, max_size=30), st.integers(0, 10**15))
def test_join_is_a_dictionary_join(stored, wanted, base):
    rids = {x: base + i for i, x in enumerate(stored)}
    text = "\n".join(f"{x}\t{r}" for x, r in rids.items())
    got = join_on_bytes(text, len(stored), wanted)
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
    assert byte_ids.pairs(b"a\tb\t1\n", 1) is None  # an id holding a tab
    assert byte_ids.pairs(b"a\t1\n", 2) is None      # fewer lines than the database counted
    assert byte_ids.pairs(b"a\tx1\n", 1) is None     # not an integer
    assert byte_ids.lines(b"x" * (byte_ids.MAX_WIDTH + 1)) is None
    assert join_on_bytes("a\t1", 1, ["y" * (byte_ids.MAX_WIDTH + 1)]) is None


@settings(max_examples=100, deadline=None)
@given(st.lists(IDS, unique=True, min_size=1, max_size=30), st.lists(IDS, unique=True, min_size=1, max_size=30))
def test_a_readers_bytes_join_alike(stored, wanted):
    """CodedIds from a plain run's reader reuse its bytes and hashes for the join (the reader's hash is
    the join's: one function), with the same answer as encoding the ids again."""
    from ndcg_labeling.pipeline.import_columns import CodedIds
    from ndcg_labeling.trec.columns import id_hashes

    raw = np.array([x.encode() for x in wanted])
    coded = CodedIds.of_bytes(raw, id_hashes(raw))
    assert coded is not None and coded.ids == wanted
    again = byte_ids.lines("\n".join(wanted).encode())
    assert again is not None and again.hash.tolist() == coded.hash.tolist()
    rids = {x: 10 + i for i, x in enumerate(stored)}
    text = "\n".join(f"{x}\t{r}" for x, r in rids.items())
    expected = [rids.get(x, -1) for x in wanted]
    assert coded.join(text, len(stored), coded.ids).tolist() == expected
    assert coded.join(text, len(stored), list(wanted)).tolist() == expected  # other ids: encoded
