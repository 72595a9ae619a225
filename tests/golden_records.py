"""Each registered method's run record on a fixed seed, kept in tests/records/ so that a change of the code
that moves any of its fields is seen (tests/test_contract.py compares).

The record is kept without what differs from run to run on the same numbers (``seconds``, ``created``,
``machine``) and with every float written to 10 significant digits, so that one processor's last bits
are not read as a change. After a change that is meant to move the numbers, write them anew and read
the diff: ``python tests/golden_records.py``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

RECORDS = Path(__file__).parent / "records"
VOLATILE = ("seconds", "created", "machine")
DIGITS = 10


def stable(record: dict) -> str:
    """``record`` (the JSON of a run) as the text kept in tests/records: volatile fields out, floats rounded."""
    kept = {key: value for key, value in record.items() if key not in VOLATILE}
    return json.dumps(_rounded(kept), indent=1, sort_keys=True) + "\n"


def _rounded(value):
    if isinstance(value, float):
        return value if not math.isfinite(value) or value == 0 else float(f"{value:.{DIGITS}g}")
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return value


def path_of(method: str) -> Path:
    return RECORDS / f"{method}.json"


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_contract import BUILT_IN, record_of

    RECORDS.mkdir(exist_ok=True)
    for method in sorted(BUILT_IN):
        path_of(method).write_text(stable(record_of(method)))
        print(f"wrote {path_of(method)}")


if __name__ == "__main__":
    main()
