"""The teacher's code: what opens the Class page's pooled view.

The code comes from ``DMLCORE_TEACHER_CODE`` (scripts/run.sh sets one and prints it when the
server starts); without it the server makes one up the first time a page runs and prints it to
its console. It is never shown in the browser and never written to the run store.
"""

from __future__ import annotations

import hmac
import os
import secrets
import sys
import time

import streamlit as st

MAX_TRIES = 5          # wrong codes a session may type before the field locks


@st.cache_resource(show_spinner=False)
def _server() -> dict:
    code = os.environ.get("DMLCORE_TEACHER_CODE", "").strip()
    if not code:
        code = secrets.token_hex(3)
        print(f"dmlcore: teacher code for the Class page: {code}", file=sys.stderr, flush=True)
    return {"code": code, "round_since": time.time()}


def ensure_code() -> None:
    """Make (and, without DMLCORE_TEACHER_CODE, print) the code: called on every page run."""
    _server()


def check(typed: str) -> bool:
    """Whether ``typed`` is the teacher's code (compared in constant time)."""
    return hmac.compare_digest(typed.strip().encode(), _server()["code"].encode())


def round_since() -> float:
    """The Unix time from which the class's runs are pooled (server start, or the last new round)."""
    return _server()["round_since"]


def new_round() -> None:
    _server()["round_since"] = time.time()
