"""Your own methods, from your own modules: one mechanism for every surface.

``DMLCORE_PLUGINS`` lists modules (a ``.py`` file's path, or an importable module name), separated by
the platform's path separator (":" on Linux and macOS, ";" on Windows). Importing dmlcore imports each
once, and a module registers its :class:`~dmlcore.estimators._base.CMREstimator` subclasses with
:func:`dmlcore.register_method`. Because worker processes (a study's ``--jobs``, the dashboard's
workers, Ray workers started with the same environment) import dmlcore too, they learn the same
methods; the CLI's ``--plugin FILE`` adds FILE to the variable for the command and its workers, and
the dashboard offers the methods of the variable it was started with.

``load_plugins(spec=None) -> list[str]``: import the modules of ``spec`` (default: the variable) not yet
imported; returns their names. A module that is missing or fails to import is refused in one line
naming it. At ``import dmlcore`` (``load_at_import``) that line does not stop the import: it is kept in
``failure`` and given as a warning, and the CLI refuses to run with it (exit 2).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from dmlcore.errors import DMLCoreError

ENV = "DMLCORE_PLUGINS"
_loaded: dict[str, str] = {}        # entry as given -> module name
failure: str | None = None          # why $DMLCORE_PLUGINS could not be loaded at import, if it could not


def load_at_import() -> None:
    """:func:`load_plugins` of the variable, a failure kept in ``failure`` and warned, not raised."""
    global failure
    try:
        load_plugins()
    except DMLCoreError as exc:
        failure = str(exc)
        import warnings
        warnings.warn(failure, RuntimeWarning, stacklevel=2)


def entries(spec: str | None) -> list[str]:
    """The modules ``spec`` lists (blank parts dropped)."""
    return [part.strip() for part in (spec or "").split(os.pathsep) if part.strip()]


def load_plugins(spec: str | None = None) -> list[str]:
    """Import the plugin modules of ``spec`` (default ``$DMLCORE_PLUGINS``) once each; their names."""
    names = []
    for entry in entries(os.environ.get(ENV, "") if spec is None else spec):
        if entry not in _loaded:
            _loaded[entry] = _import(entry)
        names.append(_loaded[entry])
    return names


def _import(entry: str) -> str:
    looks_like_file = entry.endswith(".py") or os.sep in entry or "/" in entry
    try:
        if looks_like_file:
            path = Path(entry).expanduser().resolve()
            if not path.is_file():
                raise DMLCoreError(f"Plugin file {entry!r} ({ENV} or --plugin) does not exist; give the path of a "
                                   ".py file that calls dmlcore.register_method.")
            name = f"dmlcore_plugin_{path.stem}"
            module_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module          # its classes pickle by this name (worker processes load it too)
            module_spec.loader.exec_module(module)
            return name
        importlib.import_module(entry)
        return entry
    except DMLCoreError:
        raise
    except Exception as exc:
        sys.modules.pop(f"dmlcore_plugin_{Path(entry).stem}", None)
        raise DMLCoreError(f"Plugin {entry!r} ({ENV} or --plugin) failed to import: {type(exc).__name__}: "
                           f"{' '.join(str(exc).split())}. Fix the module or leave it out.") from exc


def add_to_environment(entry: str) -> None:
    """Add ``entry`` to ``$DMLCORE_PLUGINS`` (the CLI's ``--plugin``: for this command and its workers)."""
    present = entries(os.environ.get(ENV, ""))
    if entry not in present:
        os.environ[ENV] = os.pathsep.join([*present, entry])
