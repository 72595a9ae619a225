"""Teaching experiments: small simulations whose numbers the Learn page shows.

Each function returns an :class:`~dmlcore.teaching.result.Experiment`. No Streamlit here.
"""
