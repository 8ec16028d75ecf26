"""A local wheelhouse made of this test environment's own installed distributions.

The install test runs the README's `pip install -e ".[test]"` in a fresh venv. To keep every
test off the package index, that install runs with `--no-index --find-links <wheelhouse>`,
and the wheelhouse is rebuilt here from what the README's install command already put in
the running environment (same names, same versions): each installed distribution is packed
back into a wheel from the files its RECORD lists. The build backend (hatchling) is one of
the test extras for this reason.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import os
import re
import sys
import sysconfig
import zipfile
from pathlib import Path

# Installed by `python3 -m venv` itself, or the package under test (built from the clone).
NOT_PACKED = {"pip", "setuptools", "massgen-mcp"}
# What an installer writes about one installation; not part of a wheel.
INSTALL_ONLY = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _tags(wheel_file: str) -> str:
    """The compressed tag of a wheel's file name, from its `WHEEL` file's `Tag:` lines."""
    parts: list[set[str]] = [set(), set(), set()]
    for line in wheel_file.splitlines():
        if line.startswith("Tag:"):
            for i, part in enumerate(line.split(":", 1)[1].strip().split("-", 2)):
                parts[i].add(part)
    if not all(parts):
        return "py3-none-any"
    return "-".join(".".join(sorted(p)) for p in parts)


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _pack(dist: md.Distribution, site: Path, prefix: Path, dest: Path) -> Path | None:
    name, version = dist.metadata["Name"], dist.version
    stem = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
    info = f"{stem}.dist-info"
    wheel_meta = dist.read_text("WHEEL")
    if wheel_meta is None or dist.files is None:
        return None  # not installed from a wheel: nothing to pack it back from
    scripts = {ep.name for ep in dist.entry_points
               if ep.group in ("console_scripts", "gui_scripts")}
    target = dest / f"{stem}-{_tags(wheel_meta)}.whl"
    record: list[str] = []
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as whl:
        for rel in dist.files:
            path = Path(os.path.normpath(site / rel))
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            if path.is_relative_to(site):
                parts = path.relative_to(site).parts
                if parts[0].endswith(".dist-info"):
                    if parts[-1] in INSTALL_ONLY:
                        continue
                    parts = (info, *parts[1:])
                arcname = "/".join(parts)
            elif path.is_relative_to(prefix / "bin"):
                if path.name in scripts:
                    continue  # the installer writes these wrappers from entry_points.txt
                arcname = f"{stem}.data/scripts/{path.name}"
            elif path.is_relative_to(prefix):
                arcname = f"{stem}.data/data/{path.relative_to(prefix).as_posix()}"
            else:
                continue
            data = path.read_bytes()
            if arcname.startswith(f"{stem}.data/scripts/") and data.startswith(b"#!") \
                    and b"python" in data.split(b"\n", 1)[0]:
                data = b"#!python\n" + data.split(b"\n", 1)[1]  # the installer fills it in
            whl.writestr(arcname, data)
            record.append(_record_line(arcname, data))
        record.append(f"{info}/RECORD,,")
        whl.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return target


def build_wheelhouse(dest: Path) -> Path:
    """Pack every distribution installed in the running environment into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    paths = sysconfig.get_paths()
    sites = {Path(paths["purelib"]), Path(paths["platlib"])}
    prefix = Path(sys.prefix)
    seen: set[str] = set()
    for site in sites:
        for dist in md.distributions(path=[str(site)]):
            key = _canonical(dist.metadata["Name"])
            if key in NOT_PACKED or key in seen:
                continue
            seen.add(key)
            _pack(dist, site, prefix, dest)
    return dest


def offline_pip_env(wheelhouse: Path) -> dict[str, str]:
    """Environment variables that make any `pip install` use only `wheelhouse`."""
    return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse),
            "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
