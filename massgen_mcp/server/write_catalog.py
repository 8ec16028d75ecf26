"""`python -m massgen_mcp.server.write_catalog`: rewrite server/catalog.json from the real
registration of the tools (after changing a tool, its arguments or a model in its result)."""

from __future__ import annotations

import anyio

from massgen_mcp.server import generate_catalog
from massgen_mcp.server.catalog import CATALOG, render


def main() -> int:
    CATALOG.write_text(render(anyio.run(generate_catalog)), encoding="utf-8")
    print(f"wrote {CATALOG}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
