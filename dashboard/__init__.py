"""Streamlit helpers of the dmlcore dashboard: session state, widgets, diagrams.

Pages (``pages/``) gather choices, call :mod:`dmlcore` and draw what comes back; this package
holds what several pages share. :mod:`dmlcore` itself never imports Streamlit.
"""
