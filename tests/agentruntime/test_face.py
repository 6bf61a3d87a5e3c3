"""The runtime's face (agentruntime/services.py, selectors.py) offers every name it lists, and imports a name's
module only when the name is first asked for, so a light caller (the admin's index, a job) stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support_processes import BASE_DIR, child_env


@pytest.mark.parametrize("face", ["agentruntime.services", "agentruntime.selectors"])
def test_every_name_the_face_lists_is_there(face):
    module = __import__(face, fromlist=["__all__"])
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert missing == []
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        module.nothing_here  # noqa: B018


def test_asking_the_face_for_one_light_name_loads_no_graph_machinery():
    script = """
import sys, django
django.setup()
from agentruntime.selectors import run_list_stale
from agentruntime.services import db_run
print("pregel" if "langgraph.pregel" in sys.modules else "light")
from agentruntime.selectors import get_served_graph
print("pregel" if "langgraph.pregel" in sys.modules else "light")
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=BASE_DIR, env=child_env(), capture_output=True,
                            text=True, timeout=120)
    assert result.stdout.split() == ["light", "pregel"], result.stderr[-3000:]
