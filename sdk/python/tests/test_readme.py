"""The README's Python quick start runs as written (twice: a rerun works too) against the real
binary, in a space set up as the README's walk-through sets it up."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unittest

import harness

FEATURES = {"agent_state": {"enabled": True},
            "agent_memory": {"enabled": True, "writes": "agents", "max_notes_per_source": 500}}
TYPES = {"types": [{"type": "shopping_assistant_state", "ownership": "agent",
                    "fields": {"step": {"type": "enum", "values": ["greet", "sizes", "checkout", "done"]}, "offer": {"type": "string"}, "cart_note": {"type": "text", "pii": True}},
                    "agent_state": {"scope": "conversation", "max_bytes": 16384, "write": "both"},
                    "retention": {"state": "30d", "cart_note": "7d"}}]}


def quickstart() -> str:
    text = (harness.REPO / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    if not blocks:
        raise AssertionError("README.md has no ```python block")
    return blocks[0]


class ReadmeTest(unittest.TestCase):
    def test_python_quickstart(self) -> None:
        server = harness.DevServer()
        server.start()
        self.addCleanup(server.close)
        server.create_space("demo")
        server.put_document("features", FEATURES)
        server.put_document("object-types", TYPES)
        key = server.mint_key({"kind": "agent", "agent": "shop-bot", "vendor": "acme-ai",
                               "scopes": ["agent_state", "agent_memory", "agent_memory:write"]})
        env = dict(os.environ, AGENTMEMORY_URL=server.url, AGENTMEMORY_KEY=key,
                   PYTHONPATH=str(harness.REPO / "sdk" / "python"))
        code = quickstart()
        for run, (version, status) in enumerate([(2, "stored"), (5, "duplicate")]):
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertEqual(lines[0], "%d {'step': 'sizes'}" % version, "run %d" % run)
            self.assertEqual(lines[1], "True False conflict")
            self.assertEqual(lines[2], status)
            self.assertEqual(lines[3], "personal_data_in_agent_memory ['phone']")
            self.assertEqual(lines[4], "['search_agent_memory', 'remember']")
            self.assertEqual(lines[5], "Gift card balance")


if __name__ == "__main__":
    unittest.main()
