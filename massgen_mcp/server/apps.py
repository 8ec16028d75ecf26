"""The run viewer as an MCP App (`io.modelcontextprotocol/ui`, the SDK's `mcp.server.apps`).

`run_consensus` and `get_run` name the app resource `ui://massgen/run.html` in their
`tools/list` entry (`_meta.ui.resourceUri`), so hosts that render Apps show the run inside
the conversation. The app is a small shell: it speaks the Apps protocol to its host (JSON-RPC
over postMessage: `ui/initialize`, then the host's `ui/notifications/tool-result`), reads the
run id from the tool's result, and while the run is live reads `massgen://runs/{id}/view`
through the host (`resources/read`) about once a second. That resource is the run page's main
part rendered by `runs/view/page.py`, so every value from the run record is escaped exactly as
in the HTML report; the shell never builds markup from run data, runs no other script and
declares no outside domain (its CSP allows none).
"""

from __future__ import annotations

from mcp.server.apps import Apps, ResourceCsp

from massgen_mcp.runs.view.assets import asset, esc

APP_URI = "ui://massgen/run.html"
POLL_MS = 1000

_SCRIPT = """
(() => {
  const main = document.getElementById("run");
  const note = document.getElementById("note");
  let next = 0, runId = null, polling = false;
  const waiting = new Map();
  function request(method, params) {
    const id = ++next;
    window.parent.postMessage({jsonrpc: "2.0", id, method, params}, "*");
    return new Promise((resolve, reject) => waiting.set(id, {resolve, reject}));
  }
  function notify(method, params) {
    window.parent.postMessage({jsonrpc: "2.0", method, params: params || {}}, "*");
  }
  async function poll() {
    if (polling || !runId) return;
    polling = true;
    try {
      for (;;) {
        const read = await request("resources/read",
                                   {uri: "massgen://runs/" + runId + "/view"});
        const html = read && read.contents && read.contents[0] && read.contents[0].text;
        if (typeof html !== "string") throw new Error("no view of run " + runId);
        main.innerHTML = html;  // rendered and escaped by the server (runs/view/page.py)
        note.textContent = "";
        const state = main.firstElementChild && main.firstElementChild.dataset.state;
        if (state !== "live") break;
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    } catch (e) {
      note.textContent = "The run view could not be read: " + (e && e.message || e);
    } finally {
      polling = false;
    }
  }
  function onResult(result) {
    const data = result && result.structuredContent;
    if (data && typeof data.run_id === "string" && /^run_[0-9TZ_a-f]+$/.test(data.run_id)) {
      runId = data.run_id;
      poll();
    }
  }
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const m = event.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.id !== undefined && waiting.has(m.id) && !m.method) {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (m.error) w.reject(new Error(m.error.message || "error")); else w.resolve(m.result);
    } else if (m.method === "ui/notifications/tool-result") {
      onResult(m.params);
    } else if (m.method === "ui/resource-teardown" && m.id !== undefined) {
      window.parent.postMessage({jsonrpc: "2.0", id: m.id, result: {}}, "*");
    }
  });
  request("ui/initialize", {protocolVersion: "2026-01-26",
                            appInfo: {name: "massgen-run", version: "1"},
                            appCapabilities: {}})
    .then(() => notify("ui/notifications/initialized"))
    .catch((e) => { note.textContent = "The host did not start the app: " + e.message; });
})();
""".replace("POLL_MS", str(POLL_MS))


def app_html() -> str:
    """The app document: the viewer's stylesheet, an empty run area and the shell script."""
    csp = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
           "img-src data:")
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
            '<meta name="referrer" content="no-referrer"><title>massgen run</title>'
            f"<style>{asset('style.css')}</style></head><body>"
            '<main id="run"><p class="muted">Waiting for the run…</p></main>'
            '<p id="note" class="muted" role="status"></p>'
            f"<script>{_SCRIPT}</script></body></html>")


def apps_extension() -> Apps:
    """The Apps extension with the run viewer's `ui://` resource (no outside domains)."""
    apps = Apps()
    apps.add_html_resource(APP_URI, app_html(), name="run-viewer", title="MassGen run",
                           description="A consensus run, live: agents, answers, votes, "
                                       "the winner.",
                           csp=ResourceCsp(), prefers_border=True)
    return apps
