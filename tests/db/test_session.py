from __future__ import annotations

from ndcg_labeling.db.session import DEFAULT_URL, ENV_VAR, resolve_url


def test_url_option_wins(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "sqlite:///from-env.db")
    assert resolve_url("sqlite:///given.db") == "sqlite:///given.db"


def test_url_from_environment(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "sqlite:///from-env.db")
    assert resolve_url(None) == "sqlite:///from-env.db"


def test_default_url(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert resolve_url(None) == DEFAULT_URL == "sqlite:///ndcg_labeling.db"
