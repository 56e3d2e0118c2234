"""Garbage collection runs on the GUI thread only (app/gcguard.py)."""
import gc
import threading
import weakref


def test_collector_disables_automatic_gc_and_collects_on_the_gui_thread(qtbot):
    from PySide6.QtWidgets import QApplication
    from app import gcguard
    was_enabled = gc.isenabled()
    collector = None
    try:
        collector = gcguard.GuiThreadCollector(QApplication.instance(), interval_ms=50)
        assert not gc.isenabled()

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a          # a reference cycle only the cyclic collector frees
        ref = weakref.ref(a)
        del a, b
        threads = []
        orig = gc.collect

        def spy(*args):
            threads.append(threading.current_thread() is threading.main_thread())
            return orig(*args)

        gc.collect = spy
        try:
            collector.full_every = 1
            qtbot.waitUntil(lambda: ref() is None, timeout=3000)
        finally:
            gc.collect = orig
        assert threads and all(threads)
    finally:
        if collector is not None:
            collector._timer.stop()
            collector.setParent(None)
        if was_enabled:
            gc.enable()


def test_freeze_keeps_long_lived_objects_out_of_later_collections():
    """What ``freeze`` promises, observed on a reference cycle alive at "start-up": a later full collection
    leaves it alone (it is frozen), and once unfrozen the collector frees it.  (Not the freeze count: other
    threads of the test process free frozen objects at any time, which lowers it.)"""
    from app import gcguard

    class Node:
        pass

    before = gc.get_freeze_count()
    junk = [[i] for i in range(5000)]  # long-lived objects alive at "start-up"
    a, b = Node(), Node()
    a.other, b.other = b, a              # a cycle only the cyclic collector frees
    ref = weakref.ref(a)
    try:
        gcguard.freeze()
        assert gc.get_freeze_count() >= before + 5000
        del a, b                         # unreachable now, but frozen
        gc.collect()
        assert ref() is not None         # a full collection did not look at it
    finally:
        gc.unfreeze()
    gc.collect()
    assert ref() is None                 # unfrozen: collected
    del junk
