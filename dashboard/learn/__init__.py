"""The Learn page's tabs: one module per tab, each with a ``draw()``-style function; the
experiments they draw live in :mod:`dmlcore.teaching`."""
