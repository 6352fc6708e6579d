"""The fault campaign (benchmarks/fault_campaign.py) as a module, for the tests that share its
data and scenarios."""

import importlib.util
import sys
from pathlib import Path

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "fault_campaign.py"
_spec = importlib.util.spec_from_file_location("fault_campaign", _PATH)
fc = sys.modules["fault_campaign"] = importlib.util.module_from_spec(_spec)  # for dataclasses
_spec.loader.exec_module(fc)
