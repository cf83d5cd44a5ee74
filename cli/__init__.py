"""The command line: parses arguments, shows progress, prints; no editing logic.

torch reads OMP_WAIT_POLICY when it is imported: with the default spin-wait, two threads on shared
cores ran 4-6x slower here, so the CLI asks for passive waiting unless the user chose otherwise
(`editor.waitpolicy`: the llama.cpp engine and llama.cpp's own programs are loaded without it).
"""

from editllm.editor.waitpolicy import prefer_passive

prefer_passive()
