"""The declaration of a data set's option (``n``, ``rho``, ``design``, ...), made beside its simulator.

Each simulator module declares its options as :class:`DataOption` values and lists them in the tuple
its data set's registry entry takes (dmlcore/data/registry.py, ``SIMULATORS``); the simulator's keyword of
the same name receives the value. From the declarations come ``load_dataset``'s defaults, the
command line's data flags (:func:`dmlcore.data.registry.add_data_flags`), a study's data keys with their
checks and the refusal of an option a data set does not take. A new option of a simulator is one
declaration, its place in that tuple and the keyword, all in the simulator's own file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class DataOption:
    """One option of a data set.

    ``kind``: "int", "float", "text", "bool" or "path" (a folder); ``choices``: the named values of a text
    option; ``check``: the simulator's check of a value (raises a one-line DMLCoreError), asked of every
    value of a study grid before any fit; ``label``: what a user reads for it in forms and tables; ``cli``:
    whether the command line has a flag for it (a kept table's options have none); ``grid_flag``: the flag
    of its comma list in ``bench`` and ``study`` where it differs from the option's (``n``: ``--sizes``;
    ``bench`` gives only such options as lists).
    """

    name: str
    default: Any
    help: str
    kind: str = "float"
    choices: tuple | None = None
    check: Callable | None = None
    label: str = ""
    cli: bool = True
    grid_flag: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def option_defaults(options) -> dict:
    """``{name: default}`` of the declared ``options``."""
    return {option.name: option.default for option in options}
