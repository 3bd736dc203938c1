"""The package builds offline with the in-tree backend (no wheel, no index) and ships py.typed."""

from __future__ import annotations

import importlib.util
import tempfile
import unittest
import zipfile
from pathlib import Path

import agentmemory

ROOT = Path(__file__).resolve().parents[1]


def backend():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("agentmemory_build", ROOT / "_backend" / "agentmemory_build.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


class PackageTest(unittest.TestCase):
    def test_wheel_without_setuptools_wheel(self) -> None:
        b = backend()
        b._setuptools = lambda: None  # as on our machines: no wheel package
        with tempfile.TemporaryDirectory() as d:
            name = b.build_wheel(d)
            self.assertEqual(name, "agentmemory-%s-py3-none-any.whl" % agentmemory.__version__)
            with zipfile.ZipFile(Path(d) / name) as z:
                names = set(z.namelist())
                meta = z.read("agentmemory-%s.dist-info/METADATA" % agentmemory.__version__).decode()
                record = z.read("agentmemory-%s.dist-info/RECORD" % agentmemory.__version__).decode()
        for f in ("agentmemory/__init__.py", "agentmemory/py.typed", "agentmemory/client.py", "agentmemory/tools.py",
                  "agentmemory/integrations/__init__.py", "agentmemory/integrations/openai_agents.py",
                  "agentmemory/integrations/langchain.py"):
            self.assertIn(f, names)
            self.assertIn(f + ",sha256=", record)
        self.assertIn("Requires-Python: >=3.9", meta)
        self.assertFalse(any("__pycache__" in n or n.startswith("tests/") for n in names))
        with tempfile.TemporaryDirectory() as d:
            self.assertTrue(b.build_sdist(d).endswith(".tar.gz"))
            self.assertTrue(b.build_editable(d).endswith(".whl"))

    def test_no_dependencies(self) -> None:
        text = (ROOT / "pyproject.toml").read_text()
        self.assertIn("dependencies = []", text)
        self.assertIn('version = "%s"' % agentmemory.__version__, text)


if __name__ == "__main__":
    unittest.main()
