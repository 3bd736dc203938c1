"""The in-tree PEP 517 build backend of the agentmemory package.

It delegates to setuptools.build_meta when setuptools and ``wheel`` are importable. Our machines
have setuptools 65 without ``wheel``, with which setuptools cannot build a wheel (it needs the
``bdist_wheel`` command from ``wheel``); then, and when nothing is installed at all (pip's
isolated build env, with no package index), this module builds the pure-Python wheel itself
with the standard library. So ``pip install ./sdk/python`` works offline, with or without
``--no-build-isolation``. Hooks: build_wheel, build_sdist, build_editable,
prepare_metadata_for_build_wheel and the get_requires_* ones (nothing is required).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "agentmemory"


def _setuptools() -> Any:
    try:
        import setuptools.build_meta as sbm  # noqa: F401
        import wheel  # noqa: F401
    except ImportError:
        return None
    return sbm


def _project() -> Dict[str, Any]:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        raw = f.read()
    try:
        import tomllib  # Python 3.11+
        return tomllib.loads(raw.decode("utf-8"))["project"]
    except ImportError:
        text = raw.decode("utf-8").split("[project]", 1)[1].split("\n[", 1)[0]
        out: Dict[str, Any] = {}
        for key in ("name", "version", "description", "readme", "requires-python"):
            m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), text, re.M)
            if m:
                out[key] = m.group(1)
        return out


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
             "Summary: " + p.get("description", "")]
    if p.get("requires-python"):
        lines.append("Requires-Python: " + p["requires-python"])
    lines.append("Classifier: Typing :: Typed")
    readme = os.path.join(ROOT, p.get("readme", "README.md"))
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _names() -> Tuple[str, str]:
    p = _project()
    dist = re.sub(r"[-_.]+", "_", p["name"])
    return dist, p["version"]


def _package_files() -> List[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".py", ".typed")):
                out.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
    return out


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write_wheel(wheel_directory: str, files: Dict[str, bytes]) -> str:
    dist, version = _names()
    info = "%s-%s.dist-info" % (dist, version)
    files = dict(files)
    files[info + "/METADATA"] = _metadata().encode("utf-8")
    files[info + "/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: agentmemory_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[info + "/top_level.txt"] = (PACKAGE + "\n").encode()
    record = "".join("%s,%s,%d\n" % (n, _digest(d), len(d)) for n, d in files.items()) + info + "/RECORD,,\n"
    files[info + "/RECORD"] = record.encode()
    name = "%s-%s-py3-none-any.whl" % (dist, version)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            zi = zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, d)
    return name


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    sbm = _setuptools()
    if sbm is not None:
        return sbm.prepare_metadata_for_build_wheel(metadata_directory, config_settings)
    dist, version = _names()
    info = "%s-%s.dist-info" % (dist, version)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(metadata_directory, info, "WHEEL"), "w") as f:
        f.write("Wheel-Version: 1.0\nGenerator: agentmemory_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    return info


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    sbm = _setuptools()
    if sbm is not None:
        return sbm.build_wheel(wheel_directory, config_settings, metadata_directory)
    files = {}
    for rel in _package_files():
        with open(os.path.join(ROOT, rel), "rb") as f:
            files[rel.replace(os.sep, "/")] = f.read()
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """PEP 660: a wheel holding only a .pth file that puts this directory on sys.path."""
    return _write_wheel(wheel_directory, {"__editable__.%s.pth" % PACKAGE: (ROOT + "\n").encode()})


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    dist, version = _names()
    base = "%s-%s" % (dist, version)
    rels = ["pyproject.toml", "README.md", "_backend/agentmemory_build.py"] + _package_files()
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in rels:
            path = os.path.join(ROOT, rel)
            if os.path.exists(path):
                tar.add(path, arcname=base + "/" + rel.replace(os.sep, "/"))
        meta = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(meta)
        tar.addfile(ti, io.BytesIO(meta))
    return name
