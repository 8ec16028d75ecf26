// Live updates for a running run: listen to the run's event stream (server-sent events) and,
// after each burst of events, swap in the freshly server-rendered page body. All rendering
// and escaping stay on the server; this script only moves HTML the server made.
(function () {
  "use strict";
  var main = document.getElementById("run");
  if (!main || !window.EventSource) return;
  var base = main.getAttribute("data-run-url");
  var seq = main.getAttribute("data-seq") || "0";
  var pending = null, inflight = false, again = false, finished = false;

  function refresh() {
    pending = null;
    if (inflight) { again = true; return; }
    inflight = true;
    fetch(base + "?part=main", {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var open = {};
        main.querySelectorAll("details[id]").forEach(function (d) { open[d.id] = d.open; });
        main.innerHTML = html;
        main.querySelectorAll("details[id]").forEach(function (d) {
          if (d.id in open) d.open = open[d.id];
        });
        var live = main.querySelector("[data-live]");
        main.setAttribute("data-state", live ? "live" : "done");
      })
      .catch(function () {})
      .then(function () {
        inflight = false;
        if (again) { again = false; schedule(0); }
      });
  }

  function schedule(ms) {
    if (pending === null) pending = setTimeout(refresh, ms);
  }

  var source = new EventSource(base + "/events?after=" + encodeURIComponent(seq));
  source.onmessage = function (msg) {
    var kind = "";
    try { kind = JSON.parse(msg.data).kind; } catch (e) { return; }
    schedule(kind === "run_finished" ? 300 : 120);
  };
  source.addEventListener("end", function () {
    finished = true;
    source.close();
    schedule(300);
  });
  source.onerror = function () {
    if (finished) source.close();
  };
})();
