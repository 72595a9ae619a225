"""With DMLCORE_CAPTURE_DEBIAS=FOLDER and this folder and the repository's root on PYTHONPATH, every
Python process (a bench and its worker processes) keeps what each debiased effect was given in FOLDER
(bench/clustered_width.py: install_capture). Nothing happens without the variable."""

import os

if os.environ.get("DMLCORE_CAPTURE_DEBIAS"):
    from bench.clustered_width import install_capture

    install_capture(os.environ["DMLCORE_CAPTURE_DEBIAS"])
