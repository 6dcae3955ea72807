import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

# Under AddressSanitizer and UndefinedBehaviorSanitizer
# (scripts/test-sanitized.sh sets GDN_SANITIZED) the parametrised sweeps of
# these modules, each case a whole model compiled by the instrumented
# compiler and run on the instrumented runtime, keep their first case: the
# further shapes run the same compiler and runtime code, at about four
# times the normal build's time each. The normal build runs every case.
SANITIZED_FIRST_CASE_ONLY = {
    "test_model_step_compiled.py", "test_model_compiled.py",
    "test_layers.py",
}


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("GDN_SANITIZED"):
        return
    kept, dropped, seen = [], [], set()
    for item in items:
        module = os.path.basename(str(item.fspath))
        if module in SANITIZED_FIRST_CASE_ONLY and \
                hasattr(item, "callspec"):
            key = (module, item.originalname)
            if key in seen:
                dropped.append(item)
                continue
            seen.add(key)
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
