"""Device specs for TensorFlow when a GPU is visible to CuPy only (tensorflow-cpu + cupy)."""
import logging
import sys

import pytest

from densehmm_core import device


@pytest.fixture
def tf_gpus():
    return [d for d in device._tf_devices() if d["type"] == "GPU"]


def test_cupy_only_gpu_is_listed_and_tensorflow_runs_on_the_cpu(monkeypatch, tf_gpus, caplog):
    if tf_gpus:
        pytest.skip("TensorFlow sees a GPU here")
    monkeypatch.setattr(device, "cupy_gpus", lambda: ["Fake H100"])
    monkeypatch.setattr(device, "_WARNED", set())
    devs = device.list_devices()
    assert devs[0]["spec"] == "/CPU:0" and devs[0]["tensorflow"] and not devs[0]["cupy"]
    gpu = [d for d in devs if d["type"] == "GPU"]
    assert gpu == [{"name": "/device:GPU:0", "type": "GPU", "spec": "/GPU:0", "tensorflow": False, "cupy": True}]
    assert device.gpu_available()
    assert device.resolve_device("auto") == "/CPU:0"          # auto: TensorFlow's own choice
    with caplog.at_level(logging.WARNING, logger="densehmm_core.device"):
        assert device.resolve_device("gpu") == "/CPU:0"
        assert device.resolve_device("/GPU:0") == "/CPU:0"
    assert len(caplog.records) == 1 and "TensorFlow sees no GPU" in caplog.records[0].getMessage()
    with pytest.raises(device.DeviceError, match="unknown device '/GPU:1'.*CuPy sees: /GPU:0"):
        device.resolve_device("/GPU:1")


def test_no_gpu_at_all_is_an_error(monkeypatch, tf_gpus):
    if tf_gpus:
        pytest.skip("TensorFlow sees a GPU here")
    monkeypatch.setattr(device, "cupy_gpus", lambda: [])
    with pytest.raises(device.DeviceError, match="TensorFlow sees no GPU"):
        device.resolve_device("gpu")


def test_cpu_never_asks_cupy(monkeypatch):
    def boom():
        raise AssertionError("CuPy asked for device='cpu'")
    monkeypatch.setattr(device, "cupy_gpus", boom)
    assert device.resolve_device("cpu") == "/CPU:0"
    assert device.resolve_device("/device:CPU:0") == "/CPU:0"


def test_cupy_gpus_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert device.cupy_gpus() == []
