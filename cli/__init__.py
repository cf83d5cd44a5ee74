"""The command line: parses arguments, shows progress, prints; no editing logic.

torch reads OMP_WAIT_POLICY when it is imported: with the default spin-wait, two threads on shared
cores ran 4-6x slower here, so the CLI asks for passive waiting unless the user chose otherwise.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
