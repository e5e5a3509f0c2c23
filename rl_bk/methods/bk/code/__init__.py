"""BK-Code: an LLM writes a potential function in Python; we run it in a sandbox.

- :mod:`.descriptions` is what the LLM is told: the env's description, the function's
  contract and the window it reads;
- :mod:`.sandbox` runs untrusted code in a locked-down worker process;
- :mod:`.writer` asks the labeler for the code and improves it over a few rounds;
- :mod:`.potential` turns the final code into a
  :class:`~rl_bk.methods.bk.sources.PotentialSource`.
"""
