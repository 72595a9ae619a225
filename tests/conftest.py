"""Fixtures shared by the dashboard tests."""

import pytest
import streamlit as st


@pytest.fixture
def fresh_runtime(tmp_path, monkeypatch):
    """A new job registry and run store per test (DMLCORE_HOME in a temporary folder); fits run
    in the registry's threads (no worker processes to start for each test)."""
    monkeypatch.setenv("DMLCORE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DMLCORE_EXECUTOR", "inline")
    st.cache_resource.clear()
    yield
    try:
        from dashboard import state
        state.registry().close()
    finally:
        st.cache_resource.clear()
