"""Marketplaces and installed plugins, kept under codeloop's config folder:

    <config>/plugins/known_marketplaces.json   name → {"source", "installLocation", "lastUpdated"}
    <config>/plugins/marketplaces/<name>/      a git marketplace's clone (a folder one is read in place)
    <config>/plugins/installed_plugins.json    "name@marketplace" → {"installPath", "version", …}
    <config>/plugins/cache/<market>/<plugin>/  an installed plugin's copy

A marketplace is a folder or git repository holding `.claude-plugin/marketplace.json`:
`{"name", "owner", "plugins": [{"name", "source", "description"?, "version"?}]}`, where a plugin's
`source` is a path inside the marketplace (`"./plugins/x"`, or a bare name under
`metadata.pluginRoot`) or `{"source": "github", "repo"}` / `{"source": "git" | "url", "url"}`.
Settings `extraKnownMarketplaces` (`{name: {"source": {"source": "directory", "path"} | {"source":
"github", "repo"} | {"source": "git", "url"}}}`) names marketplaces `install` may add on its own.

Nothing here runs a plugin: installing copies files (a link leading out of the plugin is left
behind) and turns the plugin on in `enabledPlugins` of the user's settings, as `claude plugin
install` does; a session loads it (config.plugins). Every failure is a PluginStoreError with one
line naming the file or source.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from codeloop.config.plugins import Plugin, load_plugin, read_json
from codeloop.shellpath import program

MARKETPLACE_FILE = Path(".claude-plugin") / "marketplace.json"
GIT_TIMEOUT_S = 300
_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]*"


class PluginStoreError(Exception):
    """One line for the user: what could not be done, naming the file or source."""


def plugins_dir(config_dir: Path) -> Path:
    return config_dir / "plugins"


def _registry(config_dir: Path, name: str) -> dict[str, Any]:
    path = plugins_dir(config_dir) / name
    if not path.is_file():
        return {}
    try:
        data = read_json(path)
    except ValueError as exc:
        raise PluginStoreError(str(exc)) from None
    if not isinstance(data, dict):
        raise PluginStoreError(f"{path}: expected a JSON object")
    return data


def _save(config_dir: Path, name: str, data: dict[str, Any]) -> None:
    from codeloop.fsutil import atomic_write_json

    atomic_write_json(plugins_dir(config_dir) / name, data, indent=2)


def known_marketplaces(config_dir: Path) -> dict[str, Any]:
    return _registry(config_dir, "known_marketplaces.json")


def installed(config_dir: Path) -> dict[str, dict[str, Any]]:
    """`name@marketplace` → its install record (an unreadable registry counts as empty)."""
    try:
        plugins = _registry(config_dir, "installed_plugins.json").get("plugins")
    except PluginStoreError:
        return {}
    return {k: v for k, v in plugins.items() if isinstance(v, dict)} if isinstance(plugins, dict) else {}


def marketplace_known(config_dir: Path, name: str, settings_merged: dict[str, Any]) -> bool:
    extra = settings_merged.get("extraKnownMarketplaces")
    try:
        known = known_marketplaces(config_dir)
    except PluginStoreError:
        known = {}
    return name in known or (isinstance(extra, dict) and name in extra)


# -- the session's plugins -------------------------------------------------------------------------

def enabled_ids(settings_merged: dict[str, Any]) -> list[str]:
    """The `name@marketplace` ids `enabledPlugins` turns on (true, or a list of versions)."""
    block = settings_merged.get("enabledPlugins")
    if not isinstance(block, dict):
        return []
    return [str(k) for k, v in block.items() if v is True or (isinstance(v, list) and v)]


def session_plugins(plugin_dirs: list[str], settings_merged: dict[str, Any], config_dir: Path, *,
                    from_settings: bool = True) -> tuple[tuple[Plugin, ...], list[str]]:
    """The plugins of a session: each `--plugin-dir`, then each enabled and installed one (not with
    `from_settings=False`: --bare, --safe-mode). A name loaded once is not loaded again."""
    found: list[Plugin] = []
    warnings: list[str] = []
    for d in plugin_dirs:
        plugin, more = load_plugin(Path(d))
        warnings += [f"--plugin-dir {d}: {w}" for w in more]
        if plugin is not None:
            found.append(plugin)
    if from_settings and enabled_ids(settings_merged):
        try:   # a broken registry is said once; the --plugin-dir plugins still load
            records = _plugin_records(_registry(config_dir, "installed_plugins.json"))
        except PluginStoreError as exc:
            records, warnings = {}, [*warnings, f"plugins: {exc}"]
        for pid in enabled_ids(settings_merged):
            name, _, market = pid.partition("@")
            entry = records.get(pid)
            if not isinstance(entry, dict):
                if marketplace_known(config_dir, market, settings_merged):
                    warnings.append(f"plugin {pid} is enabled but not installed (codeloop plugin install {pid})")
                continue
            plugin, more = load_plugin(Path(entry.get("installPath", "")), name=name, marketplace=market)
            warnings += more
            if plugin is not None:
                found.append(plugin)
    seen: set[str] = set()
    unique = []
    for p in found:
        if p.name in seen:
            warnings.append(f"plugin {p.id} ignored: a plugin named {p.name} is already loaded")
            continue
        seen.add(p.name)
        unique.append(p)
    return tuple(unique), warnings


# -- marketplaces ------------------------------------------------------------------------------------

def source_of(arg: str, cwd: Path) -> dict[str, str]:
    """What `marketplace add` was given: a folder (or its marketplace.json), a git URL, or owner/repo."""
    path = Path(arg).expanduser()
    path = path if path.is_absolute() else cwd / path
    if path.exists():
        if path.is_file() and path.name == "marketplace.json":
            path = path.parent.parent
        return {"source": "directory", "path": str(path.resolve())}
    if "://" in arg or arg.startswith("git@") or arg.endswith(".git"):
        return {"source": "git", "url": arg}
    if re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", arg) and not arg.startswith("."):
        return {"source": "github", "repo": arg}
    raise PluginStoreError(f"marketplace path {path} does not exist (give a folder with {MARKETPLACE_FILE}, "
                           "a git URL or owner/repo)")


def _git_url(source: dict[str, Any]) -> str | None:
    kind = source.get("source")
    if kind == "github" and isinstance(source.get("repo"), str):
        return f"https://github.com/{source['repo']}.git"
    if kind in ("git", "url") and isinstance(source.get("url"), str):
        return str(source["url"])
    return None


def _clone(url: str, dest: Path, ref: str | None = None) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        cmd = [program("git"), "-c", "protocol.ext.allow=never", "clone", "--quiet", "--depth", "1",
               *(["--branch", ref] if ref else []), "--", url, str(dest)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PluginStoreError(f"git clone {url} failed: {exc}") from None
    if out.returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        lines = out.stderr.strip().splitlines()
        raise PluginStoreError(f"git clone {url} failed: {lines[-1] if lines else f'exit {out.returncode}'}")


def read_marketplace(root: Path) -> dict[str, Any]:
    """A marketplace folder's manifest, checked: a name and a list of plugins."""
    path = root / MARKETPLACE_FILE
    if not path.is_file():
        raise PluginStoreError(f"{path} not found: {root} is not a plugin marketplace")
    try:
        data = read_json(path)
    except ValueError as exc:
        raise PluginStoreError(str(exc)) from None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) \
            or not re.fullmatch(_NAME, data["name"]):
        raise PluginStoreError(f"{path}: expected an object with a \"name\" (letters, digits, '-', '_', '.')")
    if not isinstance(data.get("plugins"), list):
        raise PluginStoreError(f"{path}: \"plugins\" must be a list")
    return data


def add_marketplace(config_dir: Path, source: dict[str, Any]) -> tuple[str, Path]:
    """Register a marketplace (a git one is cloned first); (its name, its folder)."""
    url = _git_url(source)
    if source.get("source") == "directory" and isinstance(source.get("path"), str):
        root = Path(source["path"])
        name = read_marketplace(root)["name"]
    elif url is not None:
        tmp = plugins_dir(config_dir) / "marketplaces" / f".adding-{os.getpid()}"
        _clone(url, tmp, source.get("ref") if isinstance(source.get("ref"), str) else None)
        try:
            name = read_marketplace(tmp)["name"]
        except PluginStoreError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        root = plugins_dir(config_dir) / "marketplaces" / name
        if root.exists():
            shutil.rmtree(root)
        tmp.rename(root)
    else:
        raise PluginStoreError(f"unsupported marketplace source {source!r} (use a folder, a git URL or owner/repo)")
    known = known_marketplaces(config_dir)
    known[name] = {"source": source, "installLocation": str(root),
                   "lastUpdated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _save(config_dir, "known_marketplaces.json", known)
    return name, root


def remove_marketplace(config_dir: Path, name: str) -> None:
    known = known_marketplaces(config_dir)
    entry = known.pop(name, None)
    if entry is None:
        raise PluginStoreError(f"no marketplace named {name!r} (codeloop plugin marketplace list)")
    clone = plugins_dir(config_dir) / "marketplaces" / name
    if clone.is_dir() and entry.get("source", {}).get("source") != "directory":
        shutil.rmtree(clone, ignore_errors=True)
    _save(config_dir, "known_marketplaces.json", known)


def marketplace_root(config_dir: Path, name: str, settings_merged: dict[str, Any]) -> Path:
    """The folder of a known marketplace; one only `extraKnownMarketplaces` names is added first."""
    entry = known_marketplaces(config_dir).get(name)
    if isinstance(entry, dict) and isinstance(entry.get("installLocation"), str):
        return Path(entry["installLocation"])
    extra = settings_merged.get("extraKnownMarketplaces")
    spec = extra.get(name) if isinstance(extra, dict) else None
    if isinstance(spec, dict) and isinstance(spec.get("source"), dict):
        added, root = add_marketplace(config_dir, spec["source"])
        if added != name:
            raise PluginStoreError(f"extraKnownMarketplaces {name!r}: that source's marketplace is named {added!r}")
        return root
    raise PluginStoreError(f"unknown marketplace {name!r} (add it with: codeloop plugin marketplace add PATH_OR_URL)")


# -- plugins -----------------------------------------------------------------------------------------

def _plugin_source(market: dict[str, Any], root: Path, entry: dict[str, Any]) -> Path | dict[str, Any]:
    source = entry.get("source")
    if isinstance(source, dict):
        return source
    if not isinstance(source, str) or not source.strip():
        raise PluginStoreError(f"{root / MARKETPLACE_FILE}: plugin {entry.get('name')!r} has no \"source\"")
    base = root
    meta = market.get("metadata")
    if not source.startswith(("./", "../")) and isinstance(meta, dict) and isinstance(meta.get("pluginRoot"), str):
        base = root / meta["pluginRoot"]
    path = (base / source).resolve()
    if not path.is_relative_to(root.resolve()):
        raise PluginStoreError(f"{root / MARKETPLACE_FILE}: plugin {entry.get('name')!r} source {source!r} "
                               "leads out of the marketplace")
    if not path.is_dir():
        raise PluginStoreError(f"{root / MARKETPLACE_FILE}: plugin {entry.get('name')!r} source {path} "
                               "is not a folder")
    return path


def _copy_plugin(src: Path, dest: Path) -> None:
    """Copy a plugin's folder, leaving out `.git` and every link that leads out of the plugin."""
    top = src.resolve()

    def ignore(folder: str, names: list[str]) -> list[str]:
        skip = [n for n in names if n == ".git"]
        for n in names:
            p = Path(folder) / n
            if p.is_symlink() and not p.resolve().is_relative_to(top):
                skip.append(n)
        return skip

    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dest, symlinks=False, ignore=ignore)


def install(config_dir: Path, pid: str, settings_merged: dict[str, Any]) -> dict[str, Any]:
    """Copy (or clone) `name@marketplace` under the config folder and record it; its record."""
    name, _, market_name = pid.partition("@")
    if not re.fullmatch(_NAME, name) or not re.fullmatch(_NAME, market_name):   # both become folder names
        raise PluginStoreError(f"give the plugin as name@marketplace (letters, digits, '-', '_', '.'), not {pid!r}")
    root = marketplace_root(config_dir, market_name, settings_merged)
    market = read_marketplace(root)
    entry = next((p for p in market["plugins"] if isinstance(p, dict) and p.get("name") == name), None)
    if entry is None:
        names = ", ".join(str(p.get("name")) for p in market["plugins"] if isinstance(p, dict)) or "none"
        raise PluginStoreError(f"marketplace {market_name} has no plugin {name!r} (it lists: {names})")
    source = _plugin_source(market, root, entry)
    dest = plugins_dir(config_dir) / "cache" / market_name / name
    if isinstance(source, Path):
        _copy_plugin(source, dest)
    else:
        url = _git_url(source)
        if url is None:
            raise PluginStoreError(f"{root / MARKETPLACE_FILE}: plugin {name!r}: unsupported source {source!r}")
        _clone(url, dest, source.get("ref") if isinstance(source.get("ref"), str) else None)
        shutil.rmtree(dest / ".git", ignore_errors=True)
    plugin, warnings = load_plugin(dest, name=name, marketplace=market_name)
    if plugin is None:
        shutil.rmtree(dest, ignore_errors=True)
        raise PluginStoreError("; ".join(warnings))
    record = {"installPath": str(dest), "version": plugin.version or entry.get("version"),
              "marketplace": market_name, "installedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "warnings": warnings}
    data = _registry(config_dir, "installed_plugins.json")
    plugins = _plugin_records(data)
    plugins[pid] = {k: v for k, v in record.items() if k != "warnings"}
    _save(config_dir, "installed_plugins.json", {"version": 1, "plugins": plugins})
    return record


def _plugin_records(data: dict[str, Any]) -> dict[str, Any]:
    plugins = data.get("plugins")
    return plugins if isinstance(plugins, dict) else {}


def uninstall(config_dir: Path, pid: str) -> None:
    data = _registry(config_dir, "installed_plugins.json")
    plugins = _plugin_records(data)
    entry = plugins.pop(pid, None)
    if entry is None:
        raise PluginStoreError(f"plugin {pid} is not installed (codeloop plugin list)")
    path = Path(str(entry.get("installPath", "")))
    if path.is_dir() and path.resolve().is_relative_to(plugins_dir(config_dir).resolve()):
        shutil.rmtree(path, ignore_errors=True)
    _save(config_dir, "installed_plugins.json", {"version": 1, "plugins": plugins})


def resolve_id(config_dir: Path, given: str) -> str:
    """`name@marketplace` as given, or the one installed plugin of that bare name."""
    if "@" in given:
        return given
    matches = [pid for pid in installed(config_dir) if pid.partition("@")[0] == given]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise PluginStoreError(f"no installed plugin named {given!r} (codeloop plugin list)")
    raise PluginStoreError(f"{given!r} is installed from several marketplaces: {', '.join(matches)}")


def settings_file(scope: str, config_dir: Path, cwd: Path) -> Path:
    """The settings file `enable` / `disable` write: user (default), project or local."""
    return {"user": config_dir / "settings.json", "project": cwd / ".claude" / "settings.json",
            "local": cwd / ".claude" / "settings.local.json"}[scope]


def set_enabled(path: Path, pid: str, enabled: bool | None) -> Path:
    """`enabledPlugins[pid]` = enabled in one settings file (None: the key removed)."""
    from codeloop.config.settings_write import SettingsWriteError, edit_settings_file

    def edit(data: dict[str, Any]) -> None:
        block = data.setdefault("enabledPlugins", {})
        if not isinstance(block, dict):
            raise SettingsWriteError(f"{path}: \"enabledPlugins\" is not an object; not saved")
        if enabled is None:
            block.pop(pid, None)
        else:
            block[pid] = enabled

    try:
        return edit_settings_file(path, edit, what="plugin setting")
    except SettingsWriteError as exc:
        raise PluginStoreError(str(exc)) from None
