// The app page's MCP servers: "Show tools" posts to the page's own route
// (…/mcp-servers/{id}/tools; a POST, so the router's cross-origin check
// applies, and the session cookie, same origin) and shows the fragment it
// answers: the server's tools, or why they could not be listed. Listing
// goes over the network each time, so it happens only when asked, and
// "Hide tools" then "Show tools" lists again. The fragment is the
// server's own HTML (html/template escaped what the remote server said);
// anything else shown is set as text. Runs after app.js (both deferred)
// and uses window.AP.
"use strict";
(function () {
  var list = document.querySelector('[data-list="mcp-servers"]');
  var AP = window.AP;
  if (!list || !AP) return;

  // failure is what shows when the answer is no fragment.
  function failure(r) {
    var text;
    if (!r) text = "Could not reach the platform. Check your connection and try again.";
    else if (r.redirected) text = "Your session has ended: reload the page and log in again.";
    else text = "Could not list the tools: the platform answered " + r.status + ".";
    return AP.el("p", "error-text", text);
  }

  function label(button, expanded) {
    button.setAttribute("aria-expanded", expanded ? "true" : "false");
    button.textContent = expanded ? "Hide tools" : "Show tools";
    button.setAttribute("aria-label", (expanded ? "Hide" : "Show") + " the tools of " + button.dataset.name);
  }

  list.addEventListener("click", function (ev) {
    var button = ev.target.closest("button[data-show-tools]");
    if (!button || button.disabled) return;
    var out = document.getElementById(button.getAttribute("aria-controls"));
    if (button.getAttribute("aria-expanded") === "true") {
      out.hidden = true;
      out.replaceChildren();
      label(button, false);
      return;
    }
    button.disabled = true;
    button.textContent = "Listing tools…";
    out.setAttribute("aria-busy", "true");
    fetch(button.dataset.showTools, { method: "POST", credentials: "same-origin", headers: { Accept: "text/html" } }).then(function (res) {
      return res.text().then(function (text) { return { ok: res.ok, status: res.status, redirected: res.redirected, text: text }; });
    }, function () { return null; }).then(function (r) {
      button.disabled = false;
      out.removeAttribute("aria-busy");
      var fresh = null;
      if (r && r.ok && !r.redirected) {
        var t = document.createElement("template");
        t.innerHTML = r.text;
        fresh = t.content.querySelector("[data-mcp-tools-list]");
      }
      out.replaceChildren(fresh || failure(r));
      out.hidden = false;
      label(button, true);
    });
  });
})();
