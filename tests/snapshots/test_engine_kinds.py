"""The pure parts: templates (JSON escaping, variables, refusals) and per-kind result paths, headers,
error bodies."""

from __future__ import annotations

import json

import pytest

from ndcg_labeling.errors import InputFileError, NdcgLabelingError
from ndcg_labeling.snapshots import engine_kinds as ek
from ndcg_labeling.snapshots.templates import check_template, fill, render, variables


@pytest.mark.parametrize("query", ['a "quoted" word', "back\\slash", "new\nline\ttab", "\u00e9t\u00e9 \U0001f600",
                                   '"}, "size": 10000, "x": {"'])
def test_a_query_is_json_escaped_and_cannot_change_the_body(query):
    body = render('{"q": "{{query}}", "size": {{ depth }}}', {"query": query, "depth": 5})
    assert body == {"q": query, "size": 5}


def test_variables_and_the_template_check():
    assert variables("{{query}} {{ depth }} {{query}} {{market}}") == ["query", "depth", "market"]
    with pytest.raises(KeyError):
        fill("{{nope}}", {})
    with pytest.raises(InputFileError, match=r"t\.json:3: the template is not JSON"):
        check_template("t.json", '{\n "q": "{{query}}",\n "size": }')
    with pytest.raises(InputFileError, match="empty"):
        check_template("t.json", "  \n")


def test_paths_split_at_the_list_and_are_checked():
    assert ek.parse_path("hits.hits[]._id", "--id-path") == ek.ResultPath(("hits", "hits"), ("_id",))
    assert ek.parse_path("ids[]", "--id-path") == ek.ResultPath(("ids",), ())
    for bad in ("hits.hits._id", "a[].b[].c", "[]._id", "a..b[].c", "a[]x"):
        with pytest.raises(NdcgLabelingError):
            ek.parse_path(bad, "--id-path")
    assert ek.resolve_paths("solr", None, None) == ("response.docs[].id", "response.docs[].score")


def test_read_hits_keeps_the_first_of_a_duplicate_cuts_at_depth_and_fills_missing_scores():
    body = {"hits": {"hits": [{"_id": "a", "_score": 3}, {"_id": "b", "_score": 2}, {"_id": "a", "_score": 1},
                              {"_score": 1}, {"_id": 7, "_score": 0.5}, {"_id": "z", "_score": 0.1}]}}
    hits = ek.read_hits(body, "hits.hits[]._id", "hits.hits[]._score", depth=3)
    assert (hits.ids, hits.scores, hits.duplicates, hits.without_id) == (["a", "b", "7"], [3.0, 2.0, 0.5], 1, 1)
    partly = ek.read_hits({"r": [{"i": "x", "s": 9}, {"i": "y"}]}, "r[].i", "r[].s", depth=10)
    assert partly.ids == ["x", "y"] and partly.scores == [2.0, 1.0] and partly.pseudo_scores
    with pytest.raises(NdcgLabelingError, match="no list at hits.hits"):
        ek.read_hits({"error": "x"}, "hits.hits[]._id", None, depth=3)


def test_headers_and_engine_error_bodies():
    assert ek.auth_header("elasticsearch", "k", "E") == {"Authorization": "ApiKey k"}
    assert ek.auth_header("vespa", "k", "E") == {"Authorization": "Bearer k"}
    with pytest.raises(NdcgLabelingError, match=r"\$E must hold user:password") as info:
        ek.auth_header("solr", "token-only", "E")
    assert "token-only" not in str(info.value)
    es = {"error": {"root_cause": [], "type": "index_not_found_exception", "reason": "no such index [x]"}, "status": 404}
    solr = {"responseHeader": {"status": 400}, "error": {"msg": "SyntaxError: Cannot parse", "code": 400}}
    vespa = {"root": {"errors": [{"code": 4, "summary": "Invalid query parameter", "message": "bad yql"}]}}
    assert ek.error_detail(json.dumps(es)) == "index_not_found_exception: no such index [x]"
    assert ek.error_detail(json.dumps(solr)) == "SyntaxError: Cannot parse"
    assert ek.error_detail(json.dumps(vespa)) == "Invalid query parameter: bad yql"
    assert ek.error_detail("<html>Bad   Gateway</html>") == "<html>Bad Gateway</html>"
