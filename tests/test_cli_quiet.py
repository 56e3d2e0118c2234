"""The command line keeps TensorFlow's start-up notices off stderr unless --verbose (issue 16)."""
import os
import subprocess
import sys
import textwrap

from densehmm_core.cli.quiet import is_notice

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# as TensorFlow 2.21 prints them (captured from `python -c "import tensorflow"` on this machine)
ABSL = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
ONEDNN = ("I0000 00:00:1795674530.046982   29663 port.cc:153] oneDNN custom operations are on. You may see "
          "slightly different numerical results due to floating-point round-off errors from different "
          "computation orders. To turn them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.")
CPU = ("I0000 00:00:1795674530.434252   29663 cpu_feature_guard.cc:227] This TensorFlow binary is optimized to "
       "use available CPU instructions in performance-critical operations.")


def _env():
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return env


def test_notices_are_recognised_and_nothing_else():
    assert is_notice(ABSL) and is_notice(ONEDNN) and is_notice(CPU)
    for line in ("densehmm train: error: data.fasta, line 3: bad record",
                 "WARNING: something else", "I0000 00:00:1.0 1 port.cc:153] another message",
                 "Traceback (most recent call last):"):
        assert not is_notice(line)


def test_the_filter_drops_notices_written_to_fd_2_and_passes_the_rest():
    code = textwrap.dedent(f"""
        import os, sys
        from densehmm_core.cli.quiet import filter_native_notices
        filter_native_notices()
        os.write(2, {ABSL!r}.encode() + b"\\n" + {ONEDNN!r}.encode() + b"\\nreal problem, line 1\\n")
        print("from python", file=sys.stderr)
        os.write(2, b"no newline at the end")
    """)
    p = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0
    assert p.stderr == "real problem, line 1\nfrom python\nno newline at the end"


def test_dense_training_prints_no_tensorflow_notices(tmp_path):
    """With -q a dense fit (TensorFlow loaded) writes nothing to stderr; --verbose would show the
    notices above (the filter is skipped then; checked by hand: both oneDNN lines appear)."""
    out = tmp_path / "m.h5"
    cmd = [sys.executable, "-m", "densehmm_core", "train", "demo", "--model", "dense", "--method", "em",
           "--states", "2", "--dim", "2", "--iter", "1", "--out", str(out), "-q"]
    p = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert out.exists() and p.stderr == ""


def test_restoring_does_not_wait_for_children_that_hold_the_pipe():
    """A child process that inherited fd 2 and outlives the command (multiprocessing's forkserver
    and resource tracker of a local Dask cluster do) does not hold the command at its exit: restoring
    fd 2 writes out what the pipe holds (the child's line passes, its notice is dropped) and returns
    at once, where waiting for the pipe's end held every such command 2 s."""
    code = textwrap.dedent(f"""
        import os, subprocess, sys, time
        from densehmm_core.cli.quiet import filter_native_notices
        restore = filter_native_notices()
        child = subprocess.Popen([sys.executable, "-c",
                                  "import os, time; os.write(2, {ABSL!r}.encode() + b'\\\\nfrom the child\\\\n'); "
                                  "time.sleep(60)"], stdout=subprocess.DEVNULL)
        time.sleep(1.0)      # the child has written its lines
        os.write(2, b"from the parent\\n")
        t0 = time.perf_counter()
        restore()
        print(f"{{time.perf_counter() - t0:.3f}}")
        child.kill()
        child.wait()
    """)
    p = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert sorted(p.stderr.splitlines()) == ["from the child", "from the parent"]
    assert float(p.stdout) < 1.0   # 2.0 (the join's timeout) before
