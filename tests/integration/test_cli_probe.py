"""`rl-bk probe` end to end: the probe set is made from the env, the labeller answers, and the
table names whose answers they are. The oracle is the reference, so it agrees on every item."""

from rl_bk.cli import main


def test_probe_prints_the_labellers_agreement_with_the_oracle(tmp_path, capsys):
    out = tmp_path / "probe.json"
    args = ["probe", "--kinds", "preference", "--items", "6", "--backend", "oracle"]
    assert main([*args, "--store", str(tmp_path / "s.sqlite3"), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| preference | oracle (rules-v2) | rules | 6 | 1.000 [" in table
    assert "A 3, B 3" in table  # the probe set is balanced
    assert '"preference"' in out.read_text()
