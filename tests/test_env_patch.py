"""EnvPatch (the runner's worker pools and the Dask forkserver start inside one): variables set in the
block, each restored after -- its old value back, or removed when it was unset -- also on an error."""
from __future__ import annotations

import os

import pytest

from densehmm_core.experiments._env import EnvPatch


def test_env_patch_sets_and_restores(monkeypatch):
    monkeypatch.setenv("DHMM_TEST_SET", "old")
    monkeypatch.delenv("DHMM_TEST_UNSET", raising=False)
    with pytest.raises(RuntimeError):
        with EnvPatch({"DHMM_TEST_SET": "new", "DHMM_TEST_UNSET": "1"}):
            assert os.environ["DHMM_TEST_SET"] == "new" and os.environ["DHMM_TEST_UNSET"] == "1"
            raise RuntimeError("inside")
    assert os.environ["DHMM_TEST_SET"] == "old"
    assert "DHMM_TEST_UNSET" not in os.environ
