"""BK-Code: an LLM writes a potential function in Python, which runs in a sandbox:
:mod:`.descriptions` (what the LLM is told), :mod:`.writer` (asks the labeler for the code and
improves it over a few rounds), :mod:`.sandbox` (runs untrusted code in a locked-down worker
process) and :mod:`.potential` (the final code as a
:class:`~rl_bk.methods.bk.sources.PotentialSource`).
"""
