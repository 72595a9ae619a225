"""docs/teaching.md's Card (1995) answer key: the block between ``<!-- card-numbers:begin -->`` and
``<!-- card-numbers:end -->`` that ``python -m bench.card_exercise`` writes, rebuilt here from its
rows (bench/results/teaching/card.json) so that ``--check`` notices an edit to it."""

from __future__ import annotations

from .registry import block


@block("card-numbers")
def card_numbers(rows) -> str:
    from bench.card_exercise import table

    data = rows.json("teaching/card.json")
    return (f"{table(data['linear'], data['dml_cmr'])}\n\n*Written by `python -m bench.card_exercise` on "
            f"{data['run']['date']} (`bench/results/teaching/card.json`).*")
