"""Credentials outside the project stay out of reach of sandboxed commands (issue 25 item 3): the
well-known credential locations in the home folder and codeloop's own folders (other projects'
transcripts, the trust store, the install id) are masked by default; `allowRead` opens one."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from sandbox_helpers import make_sandbox, needs_bwrap, run_bash

SECRETS = {".ssh/id_rsa": "PRIVATE-KEY", ".aws/credentials": "AWS-SECRET", ".config/gcloud/creds.json": "GCLOUD",
           ".kube/config": "KUBE", ".docker/config.json": "DOCKER-AUTH", ".netrc": "NETRC-PW", ".npmrc": "NPM-TOKEN",
           ".pypirc": "PYPI-PW", ".git-credentials": "GIT-CRED", ".claude.json": "CLAUDE-JSON",
           ".claude/.credentials.json": "CLAUDE-OAUTH", ".gnupg/private.key": "GPG"}


@pytest.fixture
def tmp_path():
    """Outside /tmp, which is private inside the sandbox (anything there would be invisible anyway)."""
    path = Path("/var/tmp") / f"codeloop-credentials-test-{uuid.uuid4().hex}"
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    for rel, value in SECRETS.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(value)
    (tmp_path / ".cfg" / "projects" / "other-project").mkdir(parents=True)
    (tmp_path / ".cfg" / "projects" / "other-project" / "s.jsonl").write_text("OTHER-TRANSCRIPT")
    (tmp_path / ".cfg" / "trusted-folders.json").write_text("TRUST-STORE")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.txt").write_text("project notes")
    return home


def read_all(home: Path, tmp_path: Path) -> str:
    files = [str(home / rel) for rel in SECRETS] + [str(tmp_path / ".cfg/projects/other-project/s.jsonl"),
                                                    str(tmp_path / ".cfg/trusted-folders.json")]
    return " ".join(f"awk 1 {f};" for f in files) + " grep -r . " + str(home) + " 2>&1; cat notes.txt"


@needs_bwrap
def test_credential_locations_and_codeloops_folders_are_masked(tmp_path, home):
    project = tmp_path / "project"
    sandbox = make_sandbox(project)
    sandbox.home, sandbox.protected_dirs = str(home), [str(tmp_path / ".cfg")]
    [res] = run_bash(sandbox, project, read_all(home, tmp_path))
    out = str(res.content)
    leaked = [v for v in [*SECRETS.values(), "OTHER-TRANSCRIPT", "TRUST-STORE"] if v in out]
    assert leaked == [] and "project notes" in out and "Permission denied" in out
    # unsandboxed, the same command reads them all: the masking is the sandbox's doing
    [plain] = run_bash(None, project, read_all(home, tmp_path))
    assert all(v in str(plain.content) for v in SECRETS.values())


@needs_bwrap
def test_allow_read_opens_one_location(tmp_path, home):
    project = tmp_path / "project"
    sandbox = make_sandbox(project, filesystem={"allowRead": [str(home / ".npmrc")]})
    sandbox.home = str(home)
    [res] = run_bash(sandbox, project, f"cat {home / '.npmrc'}; cat {home / '.ssh/id_rsa'}")
    assert "NPM-TOKEN" in str(res.content) and "PRIVATE-KEY" not in str(res.content)


@needs_bwrap
def test_a_project_inside_the_home_folder_stays_usable(tmp_path, home):
    """The project may live under a masked location's parent, never inside it: it is not masked."""
    project = home / ".config" / "work"
    project.mkdir(parents=True)
    (project / "a.txt").write_text("mine")
    sandbox = make_sandbox(project)
    sandbox.home = str(home)
    [res] = run_bash(sandbox, project, f"cat a.txt; cat {home / '.config/gcloud/creds.json'}")
    assert "mine" in str(res.content) and "GCLOUD" not in str(res.content)
