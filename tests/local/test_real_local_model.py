"""The real embedded model on two of the benchmark's tasks, and the README's first example run
with no key (opt-in: `pytest -m local_model`).

Deselected by default (pyproject addopts): it loads a 1.1 GB model and takes minutes on a busy
CPU. The full set of tasks (a tuning and a held-out half), with timings and RSS, is
`python bench/bench_local.py`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.local_model
BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_local.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_local", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_local"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def env():
    from codeloop.providers.local_model import known_model

    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("needs pip install 'codeloop[local]'")
    model = known_model("qwen2.5-coder-1.5b")
    # the user's own config dir holds the assembled model; tests otherwise get an empty one
    real_cfg = Path(os.environ.get("CODELOOP_REAL_CONFIG_DIR") or Path.home() / ".codeloop")
    from codeloop.providers.local_model import is_installed

    if not is_installed(model, real_cfg / "models"):
        pytest.skip("needs pip install 'codeloop[local-model]'")
    return {**os.environ, "CODELOOP_CONFIG_DIR": str(real_cfg), "PYTHONPATH": str(BENCH.parents[1] / "src")}


@pytest.mark.parametrize("number", [1, 4, 12])   # read a value; run a script; delete a file
def test_real_model_task(env, number):
    bench = _bench()
    task = bench.TASKS[number - 1]
    result = bench.run_task(task, "local", env, timeout=1200)
    assert result["passed"], result


def test_readme_first_example_with_no_key(tmp_path):
    """The README's first example, as a newcomer runs it after the README's install: no key, the
    embedded model by default. The assembled model is shared with the user's config dir (assembled
    there once if need be); sessions go to a temporary one."""
    import shlex
    import subprocess

    from codeloop.session.local_profile import local_ready

    real_cfg = Path(os.environ.get("CODELOOP_REAL_CONFIG_DIR") or Path.home() / ".codeloop")
    if not local_ready(real_cfg, env={}):
        pytest.skip("needs pip install 'codeloop[local,local-model]'")
    readme = (BENCH.parents[1] / "README.md").read_text()
    line = next(x for x in readme.splitlines() if x.startswith('codeloop -p "create hello.py'))
    args = shlex.split(line.split("  #")[0])[1:]
    (real_cfg / "models").mkdir(parents=True, exist_ok=True)
    cfg = tmp_path / ".cfg"
    cfg.mkdir()
    (cfg / "models").symlink_to(real_cfg / "models")
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CODELOOP_", "OPENAI_", "OPENROUTER_", "OLLAMA_"))}
    env.update({"CODELOOP_CONFIG_DIR": str(cfg), "PYTHONPATH": str(BENCH.parents[1] / "src")})
    r = subprocess.run([sys.executable, "-m", "codeloop", *args], cwd=work, env=env, capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.splitlines()[0].startswith("codeloop: no API key: using the embedded local model "
                                               "qwen2.5-coder-1.5b"), r.stderr
    ran = subprocess.run([sys.executable, "hello.py"], cwd=work, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0 and ran.stdout.strip(), (ran.stdout, ran.stderr)
