"""Issue 30 §5: the SDK's modules import one another without a cycle (lazy imports inside
functions included), and the client never imports the tool kit: agentmemory.tools depends on
agentmemory.client and registers the builder Client.tools uses."""

import os
import re
import unittest

import agentmemory
from agentmemory import client as client_module
from agentmemory import tools as tools_module

PACKAGE = os.path.dirname(agentmemory.__file__)


def graph():
    """Each module of the package (but __init__) and the package modules it imports."""
    g = {}
    for name in os.listdir(PACKAGE):
        if not name.endswith(".py") or name == "__init__.py":
            continue
        with open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
            text = f.read()
        g[name[:-3]] = sorted(set(re.findall(r"^\s*from \.(\w+) import", text, re.M)))
    return g


def cycle(g):
    """The first import cycle found, or None."""
    done = set()

    def visit(n, path):
        if n in path:
            return path[path.index(n):] + [n]
        if n in done:
            return None
        for d in g.get(n, []):
            c = visit(d, path + [n])
            if c:
                return c
        done.add(n)
        return None

    for n in g:
        c = visit(n, [])
        if c:
            return c
    return None


class LayeringTest(unittest.TestCase):
    def test_no_cycle_and_the_client_never_imports_the_tool_kit(self):
        g = graph()
        self.assertNotIn("tools", g["client"], "client.py imports tools.py")
        self.assertIn("client", g["tools"], "the tool kit depends on the client")
        self.assertIsNone(cycle(g))
        old = dict(g)
        old["client"] = g["client"] + ["tools"]  # the check bites on the old arrow back
        self.assertIsNotNone(cycle(old))

    def test_the_client_builds_its_kit_through_the_registered_builder(self):
        self.assertIs(client_module._toolkit_builder, tools_module.build_toolkit)
        c = agentmemory.Client("http://127.0.0.1:1", "am_x", agent="a")
        kit = c.tools(write_agent_memory=True, discover=False)
        self.assertIsInstance(kit, agentmemory.Toolkit)
        self.assertEqual(kit.names, ["search_agent_memory", "remember"])
        session = c.conversation("c-1").tools(discover=False)
        self.assertEqual(session.names, ["search_agent_memory"])
        self.assertIsNotNone(session.session)


if __name__ == "__main__":
    unittest.main()
