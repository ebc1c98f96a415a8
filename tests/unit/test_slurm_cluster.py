"""``standin.slurm_cluster``'s exit status: Slurm that does not start exits 1.

No Slurm runs here: the daemons are stand-ins (``false``, which exits at once)
and the node never turns idle, as when slurmctld cannot start.
"""

from __future__ import annotations

import subprocess

from standin import slurm_cluster


def test_slurm_that_does_not_start_exits_1_and_stops_what_it_started(
    tmp_path, monkeypatch, capsys
):
    started: list[subprocess.Popen] = []
    real_popen = subprocess.Popen

    def daemon(cmd, **kwargs):  # every daemon fails at start
        proc = real_popen(["false"], **kwargs)
        started.append(proc)
        return proc

    monkeypatch.setattr(slurm_cluster.shutil, "which", lambda name: f"/bin/{name}")
    monkeypatch.setattr(slurm_cluster.os, "geteuid", lambda: 0)
    monkeypatch.setattr(slurm_cluster, "munge_answers", lambda: True)
    monkeypatch.setattr(slurm_cluster, "node_state", lambda env: "down")
    monkeypatch.setattr(slurm_cluster.subprocess, "Popen", daemon)
    monkeypatch.setattr(slurm_cluster.signal, "signal", lambda *args: None)
    assert slurm_cluster.main(["--dir", str(tmp_path)]) == 1
    assert "Slurm did not start" in capsys.readouterr().out
    assert len(started) == 2  # slurmctld, slurmd
    assert all(p.returncode is not None for p in started)  # stopped, waited for
