// RTWO VM dashboard: live rows and figures from /live (server-sent events), sortable tables.
// Every value from the server is set with textContent, never parsed as HTML, except the
// overview's sections from /overview/sections: HTML the server rendered with every value
// escaped (html.py), put in place of the section of the same name (the page's CSP allows no
// inline script, so markup can never run code).
(function () {
  "use strict";

  function plural(n, noun) {
    return n.toLocaleString("en-US") + " " + noun + (n === 1 ? "" : "s");
  }

  function cell(row, content, className) {
    var td = document.createElement("td");
    if (content instanceof Node) {
      td.appendChild(content);
    } else if (className && content !== null && content !== undefined) {
      var span = document.createElement("span");
      span.className = "state state-" + content;
      span.textContent = content;
      td.appendChild(span);
    } else {
      td.textContent = content === null || content === undefined ? "\u2014" : String(content);
    }
    row.appendChild(td);
  }

  function addContext(table, data, keep) {
    var body = table.tBodies[0];
    if (!body || body.querySelector('tr[data-context="' + CSS.escape(data.contextId) + '"]')) {
      return false;
    }
    var empty = body.querySelector("tr.empty");
    if (empty) { empty.remove(); }
    var row = document.createElement("tr");
    row.setAttribute("data-context", data.contextId);
    row.setAttribute("data-seq", String(data.seq));
    row.className = "new";
    var a = document.createElement("a");
    a.href = "/contexts/" + encodeURIComponent(data.contextId);
    a.textContent = data.contextId;
    cell(row, a);
    cell(row, data.contractId);
    cell(row, data.depth);
    cell(row, data.ended, true);
    cell(row, data.executionStatus, true);
    cell(row, data.error);
    cell(row, data.createdAt);
    // Newest first: before the first row with a lower commit sequence.
    var rows = body.rows, i;
    for (i = 0; i < rows.length; i++) {
      if (Number(rows[i].getAttribute("data-seq")) < data.seq) { break; }
    }
    body.insertBefore(row, rows[i] || null);
    while (keep && body.rows.length > keep) { body.deleteRow(body.rows.length - 1); }
    return true;
  }

  function applySummary(data) {
    Object.keys(data.models || {}).forEach(function (name) {
      var el = document.querySelector('[data-model="' + CSS.escape(name) + '"]');
      var n = data.models[name];
      var exact = !data.modelsExact || data.modelsExact[name] !== false;
      if (!el || n === null) { return; }
      el.textContent = name === "RTWORuntimeInstruction"
        ? n.toLocaleString("en-US") + " computed from the spec table"
        : exact ? plural(n, "record") : "more than " + n.toLocaleString("en-US") + " records";
    });
    Object.keys(data.services || {}).forEach(function (name) {
      var s = data.services[name];
      var state = document.querySelector('[data-service="' + CSS.escape(name) + '"]');
      var evidence = document.querySelector('[data-evidence="' + CSS.escape(name) + '"]');
      if (state) {
        state.textContent = s.state;
        state.className = "state state-" + s.state.replace(/ /g, "_");
      }
      if (evidence) { evidence.textContent = s.evidence; }
    });
    var count = document.getElementById("context-count");
    if (count && data.models && data.models.RTWOExecutionContext !== undefined) {
      count.textContent = (data.modelsExact && data.modelsExact.RTWOExecutionContext === false
        ? "more than " : "") + data.models.RTWOExecutionContext.toLocaleString("en-US");
    }
  }

  // The overview's VM and readiness sections and figures, fetched again when /live says
  // they changed; one request at a time, and one more if asked meanwhile.
  var sections = { busy: false, again: false };

  function refreshSections() {
    if (!document.querySelector("[data-section]") || !window.fetch) { return; }
    if (sections.busy) { sections.again = true; return; }
    sections.busy = true;
    fetch("/overview/sections", { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(new Error(String(r.status))); })
      .then(function (data) {
        Object.keys(data.sections || {}).forEach(function (name) {
          var old = document.querySelector('[data-section="' + CSS.escape(name) + '"]');
          var holder = document.createElement("template");
          holder.innerHTML = data.sections[name];
          var fresh = holder.content.firstElementChild;
          if (old && fresh && fresh.getAttribute("data-section") === name) {
            old.replaceWith(fresh);
          }
        });
        if (data.summary) { applySummary(data.summary); }
        document.body.setAttribute("data-readiness-version", String(data.readinessVersion));
      })
      .catch(function () { /* the next event or reconnect asks again */ })
      .then(function () {
        sections.busy = false;
        if (sections.again) { sections.again = false; refreshSections(); }
      });
  }

  function live() {
    var holder = document.querySelector("[data-live]");
    if (!holder || !window.EventSource) { return; }
    var table = holder.querySelector("table");
    var keep = Number(holder.getAttribute("data-keep")) || 0;
    var status = document.getElementById("live-status");
    var source = new EventSource("/live");
    source.addEventListener("open", function () {
      if (status) { status.textContent = "live: connected"; }
      document.body.setAttribute("data-live-state", "open");
      refreshSections();     // what changed before the stream (re)started
    });
    source.addEventListener("error", function () {
      if (status) { status.textContent = "live: reconnecting"; }
      document.body.setAttribute("data-live-state", "reconnecting");
    });
    source.addEventListener("context", function (e) {
      addContext(table, JSON.parse(e.data), keep);
    });
    source.addEventListener("summary", function (e) {
      applySummary(JSON.parse(e.data));
    });
    // Back too far (a long disconnection): the stream resumed later than asked, so rows
    // between are missing from the table; the figures are fetched whole again.
    source.addEventListener("missed", function () {
      if (status) { status.textContent = "live: connected (older events skipped: reload for them)"; }
      refreshSections();
    });
    source.addEventListener("vm", refreshSections);
    source.addEventListener("readiness", refreshSections);
    window.addEventListener("pagehide", function () { source.close(); });
  }

  function sortable(table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, index) {
      var button = th.querySelector("button");
      if (!button) { return; }
      button.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var numeric = th.getAttribute("data-sort") === "number";
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[index], y = b.cells[index];
          var p = numeric ? Number(x.getAttribute("data-value") || -1) : x.textContent;
          var q = numeric ? Number(y.getAttribute("data-value") || -1) : y.textContent;
          var order = numeric ? p - q : String(p).localeCompare(String(q));
          return ascending ? order : -order;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  // "computed 3 min ago" (html.py age): counted on from the age the server gave, so the
  // words stay true on an open page (the browser's clock is never compared with the server's).
  function ago(seconds) {
    if (seconds < 5) { return "just now"; }
    if (seconds < 60) { return Math.floor(seconds) + " s ago"; }
    if (seconds < 3600) { return Math.floor(seconds / 60) + " min ago"; }
    return Math.floor(seconds / 3600) + " h ago";
  }

  function ages() {
    var now = Date.now();
    Array.prototype.forEach.call(document.querySelectorAll("time[data-age]"), function (el) {
      if (!el.hasAttribute("data-seen")) { el.setAttribute("data-seen", String(now)); }
      var seconds = Number(el.getAttribute("data-age")) +
        (now - Number(el.getAttribute("data-seen"))) / 1000;
      el.textContent = "computed " + ago(seconds);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    ages();
    window.setInterval(ages, 10000);
    live();
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);
  });
})();
