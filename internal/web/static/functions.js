// Running an app's functions from its functions page.
//
// A run form posts its JSON input to the API's execute call (the session
// cookie, same origin: the API's CSRF rule lets it through); a function
// runs within the request, so its answer is the whole execution: status,
// output, error, logs and duration. It shows under the form and first in
// the history, with no reload. Everything shown is set as text, never as
// HTML.
"use strict";
(function () {
  var AP = window.AP;
  if (!AP) return;
  var el = AP.el, statusEl = AP.statusEl, timeEl = AP.timeEl, duration = AP.duration, clip = AP.clip;

  function preview(e) {
    if (e.error) return clip(e.error);
    if (e.output === null || e.output === undefined) return "";
    if (typeof e.output === "object" && typeof e.output.response === "string") return clip(e.output.response);
    return clip(JSON.stringify(e.output));
  }
  function pretty(v) { return JSON.stringify(v, null, 2); }
  function logItems(logs) {
    return logs.map(function (l) {
      var li = el("li", "log log-" + l.level);
      li.append(timeEl(l.ts), " ", el("span", "level", l.level), " ", el("span", "message", l.message));
      return li;
    });
  }

  var table = document.querySelector('table[data-list="executions"]');
  var empty = document.querySelector('[data-empty="executions"]');

  // addRow puts a new execution first in the history (on its first page
  // only: an older page keeps its rows).
  function addRow(e, form) {
    if (!table || table.dataset.offset !== "0") return;
    var tr = document.createElement("tr");
    tr.dataset.executionId = e.execution_id;
    function td(label, content) {
      var c = el("td");
      c.setAttribute("data-label", label);
      c.append(content);
      return c;
    }
    var name = el("a", "", form.dataset.functionName);
    name.href = "#function-" + form.dataset.functionId;
    var details = el("details");
    var p = preview(e);
    details.append(el("summary", "", p || "no output"));
    if (e.error) details.append(el("p", "error-text", e.error));
    if (e.output !== null && e.output !== undefined) details.append(el("pre", "output", pretty(e.output)));
    if (e.logs.length) {
      var ol = el("ol", "logs");
      ol.append.apply(ol, logItems(e.logs));
      details.append(ol);
    }
    if (e.logs_truncated) details.append(el("p", "muted", "Logs truncated."));
    var out = td("Output", details);
    out.className = "preview" + (e.error ? " failed" : "");
    tr.append(td("Status", statusEl(e.status)), td("Function", name), td("Run", timeEl(e.created_at)),
      td("Duration", duration(e.duration_ms)), out);
    table.querySelector("tbody").prepend(tr);
    AP.localTimes(tr);
    table.hidden = false;
    if (empty) empty.hidden = true;
  }

  function runForm(form) {
    var text = form.querySelector("textarea");
    var box = form.parentElement.querySelector("[data-result]");
    var meta = box.querySelector("[data-result-meta]");
    var out = box.querySelector("[data-result-output]");
    var err = box.querySelector("[data-result-error]");
    var logs = box.querySelector("[data-result-logs]");
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      AP.clearErrors(form);
      var input;
      try {
        input = JSON.parse(text.value.trim() || "{}");
      } catch (e) {
        AP.showError(form, "input", "This is not valid JSON: " + e.message);
        return;
      }
      AP.busy(form, true);
      box.setAttribute("aria-busy", "true");
      var url = "/api/v1/apps/" + encodeURIComponent(form.dataset.appId) + "/functions/" + encodeURIComponent(form.dataset.functionId) + "/execute";
      AP.api("POST", url, JSON.stringify({ input: input })).then(function (r) {
        AP.busy(form, false);
        box.setAttribute("aria-busy", "false");
        if (!r.ok) {
          // A schema error names the input's field (input.customer_email):
          // it belongs beside the input.
          var field = AP.fieldOf(form, r.data) || (r.status === 400 ? "input" : "");
          AP.showError(form, field, r.data.detail);
          return;
        }
        var e = r.data;
        box.hidden = false;
        meta.replaceChildren(statusEl(e.status), " · " + duration(e.duration_ms));
        out.textContent = e.output === null || e.output === undefined ? "" : pretty(e.output);
        out.hidden = !out.textContent;
        err.textContent = e.error || "";
        var list = logs.querySelector("ol");
        list.replaceChildren.apply(list, logItems(e.logs));
        AP.localTimes(list);
        logs.hidden = !e.logs.length;
        addRow(e, form);
      });
    });
  }

  document.querySelectorAll("form[data-run-form]").forEach(runForm);
})();
